"""PyTorch's asynchronous tensor parallelism as its compiler pass fuses it (issue 31: "asynchronous TP overlap gets
~3x too much credit"): every forward collective pipelined with its matmul, and in the backward the gradient
all-gathers but not the reduce-scatters of the inputs several linear layers share (operators.ASYNC_TP_FUSION)."""

import dataclasses

import pytest

from atscale import accuracy, hardware, models, operators, runs
from atscale import parallelism as par
from atscale.plan import Plan

H100_64 = hardware.Cluster.of_gpus(hardware.NODES["DGX H100"], 64, hardware.FABRICS["InfiniBand NDR"])


def test_the_presets_say_which_stacks_pipeline_the_input_gradients():
    assert operators.stack("megatron-core").tp_overlap_input_grads  # Transformer Engine overlaps them
    assert not operators.stack("fsdp2-compile").tp_overlap_input_grads
    assert not operators.stack("fsdp2-eager").tp_overlap_input_grads
    assert "micro_pipeline_tp.py" in operators.ASYNC_TP_FUSION and "_find_producer_matmul" in operators.ASYNC_TP_FUSION
    with pytest.raises(ValueError, match="tp_overlap_input_grads"):
        dataclasses.replace(operators.stack("fsdp2-compile"), tp_overlap_input_grads="no")


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_one_pair_of_four_stays_in_line(tp):
    """A serial layer has four collective pairs (two forward, two backward); of the backward's, the reduce-scatters
    of the two shared inputs' gradients (attention's q, k, v; the MLP's gate and up), one pair's worth, run in line.
    Where the matmuls cover the rest, pipelining them would have left 1/tp of them plus the compute they slow: the
    step pays the difference on that quarter of the in-line time, exactly."""
    model = models.model("Llama 3 70B")
    plan = Plan(tp=tp, pp=1, dp=64 // tp, micro_batch=1, global_batch=64 // tp, sequence_parallel=True,
                recompute="none", zero_stage=1, tp_overlap=True)
    async_tp = operators.stack("fsdp2-compile")
    piped = dataclasses.replace(async_tp, tp_overlap_input_grads=True)
    in_line = par.step_time(model, H100_64, dataclasses.replace(plan, tp_overlap=False), stack=async_tp,
                            memory_check=False).tp_comm
    got = par.step_time(model, H100_64, plan, stack=async_tp, memory_check=False).tp_comm
    all_piped = par.step_time(model, H100_64, plan, stack=piped, memory_check=False).tp_comm
    assert all_piped < got < in_line
    assert got - all_piped == pytest.approx(in_line / 4 * (1 - 1 / tp - async_tp.comm_sm_share), rel=1e-9)


def test_a_record_can_say_otherwise():
    run = next(r for r in runs.ALL_RUNS if r.label == "Llama 3.1 8B, 64 H100, torchtitan FSDP 8 TP 8 async TP, BF16")
    piped = dataclasses.replace(run, details={**run.details, "tp_overlap_input_grads": True})
    assert piped._stack().tp_overlap_input_grads and not run._stack().tp_overlap_input_grads
    assert piped.predict(operators=True) < run.predict(operators=True)
    assert piped.predict() == run.predict()  # the efficiency curve knows no stack
    with pytest.raises(ValueError, match="tp_overlap_input_grads"):
        dataclasses.replace(run, details={**run.details, "tp_overlap_input_grads": "yes"})


def test_async_tp_gains_as_measured():
    """torchtitan's seven published pairs (2024-12 and 2025-06 tables). Measured when the in-line reduce-scatters
    were read from PyTorch's pass (November 2026): the operator model's gain fell from 1.16-1.28 to 1.13-1.21, nearer
    the published 1.04-1.16 on every pair, and still above it on every pair (the issue's miss, smaller: on the BF16
    pairs 1.13 and 1.17 against 1.09 and 1.10, where it was 1.16 and 1.22)."""
    gains = {g.run: g for g in accuracy.async_tp_gains()}
    assert len(gains) == 7
    for g in gains.values():
        assert 1.0 < g.operators < g.all_pipelined < g.curve
        assert abs(g.operators - g.published) < abs(g.all_pipelined - g.published)
        assert g.operators > g.published
    bf16 = [gains[f"Llama 3.1 {m}, torchtitan FSDP {d} TP 8 async TP, BF16"]
            for m, d in (("8B, 64 H100", 8), ("70B, 256 H100", 32))]
    assert [round(g.published, 2) for g in bf16] == [1.10, 1.09]
    assert [g.operators for g in bf16] == pytest.approx([1.168, 1.127], abs=0.005)
    # 1.224 for the 8B pair until torchtitan's preset ran the query, key and value projections apart (November 2026)
    assert [g.all_pipelined for g in bf16] == pytest.approx([1.219, 1.157], abs=0.005)
    tensorwise = gains["Llama 3.1 70B, 256 H100, torchtitan FSDP 32 TP 8 async TP, FP8 tensorwise"]
    assert tensorwise.operators / tensorwise.published - 1 == pytest.approx(0.013, abs=0.005)
    table = accuracy.async_tp_table()
    assert len(table.rows) == 7 and not any("async TP" in row[0] for row in table.rows)


def test_a_column_parallel_input_gradient_runs_whole():
    """Tensor-parallel overlap splits every forward GEMM and a row-parallel layer's input-gradient GEMM into tp
    chunks; a column-parallel layer's input-gradient GEMM runs whole (Transformer Engine's bulk overlap, Megatron's
    default; PyTorch's unfused reduce-scatter): operators.TP_OVERLAP_SPLITS."""
    from atscale import kernels
    from atscale._numeric import _ScalarOps as xp

    g = kernels.gemm_model("H100 SXM", "bf16")
    m, n, k = 8192.0, 1280.0, 8192.0
    fwd, bwd = operators._gemm3(m, n, k, g, xp, 8.0, 3.0, 1.0)
    assert bwd == pytest.approx(kernels._gemm_seconds(m, k, n, g, xp) + kernels._gemm_seconds(k, n, m, g, xp), rel=1e-12)
    split = operators._gemm3(m, n, k, g, xp, 8.0, 3.0)
    assert split[0] == fwd and split[1] > bwd  # the default splits it: chunks of m / 8 rows lose to wave quantisation
    assert "tp_comm_overlap_rs_dgrad" in operators.TP_OVERLAP_SPLITS


@pytest.mark.parametrize("stack", ["megatron-core", "fsdp2-compile"])
def test_the_layer_splits_the_row_parallel_input_gradients_only(stack, monkeypatch):
    """The same through a layer's operator table: with TP overlap on, each forward GEMM and the row-parallel
    layers' input-gradient GEMMs run in tp chunks (slower, by wave quantisation), while the column-parallel layers'
    backward is what it is without the overlap, to the bit."""
    import types

    model = models.model("Llama 3 70B")

    def table():
        layer = operators.layer_operators(model, tp=8, sequence_parallel=True, stack=stack)
        return {r.name: r for r in layer.rows if r.kind == "matmul"}

    plain = table()
    original = operators._rows
    monkeypatch.setattr(operators, "_rows", lambda L, c, xp: original(
        types.SimpleNamespace(**{**vars(L), "tp_overlap": True}), c, xp))
    overlapped = table()
    column = [n for n in plain if n in ("QKV projection", "MLP up", "MLP gate")]
    row = ["attention output", "MLP down"]
    assert column and all(overlapped[n].backward == plain[n].backward for n in column)
    assert all(overlapped[n].backward > plain[n].backward for n in row)
    assert all(overlapped[n].forward > plain[n].forward for n in plain)
