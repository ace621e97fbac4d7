"""A parallel transformer block in the operator-level compute: one norm instead of two, and the attention's input
projection and the MLP's first GEMM run as one ("the MLP and Attention input matrix multiplications can be fused",
PaLM, Chowdhery et al. 2022, sec. 2), beside the halved tensor-parallel collectives both models price."""

from __future__ import annotations

import dataclasses

import pytest

from atscale import kernels, models, operators, parallelism
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX

SERIAL = models.model("Llama 3 70B")
PARALLEL = dataclasses.replace(SERIAL, parallel_block=True)
KW = dict(micro_batch=1, seq_length=4096, tp=8, sequence_parallel=True)


def _rows(model, **kw):
    return {r.name: r for r in operators.layer_operators(model, **{**KW, **kw}).rows}


def test_one_norm_and_one_fused_input_gemm():
    serial, parallel = _rows(SERIAL), _rows(PARALLEL)
    assert parallel["norms (x2)"].forward == pytest.approx(serial["norms (x2)"].forward / 2, rel=1e-12)
    fused = ("QKV projection", "MLP up")
    # the two rows are one GEMM of their summed width, shared out by width: one kernel between them
    width = SERIAL.qkv_width / 8 + 2 * SERIAL.ffn_size / 8
    tokens = KW["seq_length"]
    ctx = operators._context(SERIAL, operators.hardware.accelerator("H100 SXM"), float(tokens), "bf16",
                             operators.stack("megatron-core"), "delayed", True,
                             parallelism.CALIBRATION.kernel_efficiency_h100)
    f_, b_ = operators._gemm3(float(tokens), width, float(SERIAL.hidden_size), ctx.gemm, operators._ScalarOps)
    assert sum(parallel[n].forward for n in fused) == pytest.approx(f_, rel=1e-12)
    assert sum(parallel[n].backward for n in fused) == pytest.approx(b_, rel=1e-12)
    assert sum(parallel[n].kernels_forward for n in fused) == pytest.approx(1.0)
    assert parallel["QKV projection"].forward / parallel["MLP up"].forward == pytest.approx(
        SERIAL.qkv_width / (2 * SERIAL.ffn_size), rel=1e-12)
    # one wide GEMM is no slower than the two it replaces; the rest of the layer is the serial block's
    assert sum(parallel[n].forward + parallel[n].backward for n in fused) <= \
        sum(serial[n].forward + serial[n].backward for n in fused)
    for name in ("attention output", "MLP down", "attention core", "SwiGLU product"):
        assert parallel[name] == serial[name]


def test_fp8_casts_the_fused_input_once():
    """Sequence parallelism, FP8: the serial block casts the rank's h/tp-row share of the QKV input and of the MLP
    input; the parallel block casts one input for its one fused GEMM. The gradients it casts backward are the
    same widths."""
    serial, parallel = _rows(SERIAL, dtype="fp8")["FP8 casts"], _rows(PARALLEL, dtype="fp8")["FP8 casts"]
    per_element = kernels.FP8_CAST_BYTES["delayed"] / kernels.memory_bandwidth("H100 SXM")
    assert serial.forward - parallel.forward == pytest.approx(
        KW["seq_length"] * SERIAL.hidden_size / 8 * per_element, rel=1e-9)
    assert parallel.backward == pytest.approx(serial.backward, rel=1e-12)


def test_no_fusion_for_experts_or_latent_attention():
    for name in ("DeepSeek-V3", "Qwen3-235B-A22B"):
        m = models.model(name)
        assert _rows(dataclasses.replace(m, parallel_block=True), tp=1, sequence_parallel=False).keys() == \
            _rows(m, tp=1, sequence_parallel=False).keys()
        w = operators._model_shapes(dataclasses.replace(m, parallel_block=True))
        assert operators._fused_inputs(w, operators._gemms(w, operators.stack("megatron-core"), 1.0)) == frozenset()


def test_the_curve_prices_only_the_collectives_and_the_same_vectorised():
    dp = EX.cluster.num_gpus // 8
    plan = Plan(tp=8, pp=1, dp=dp, micro_batch=1, global_batch=dp, sequence_parallel=True, tp_overlap=False)
    curve = [parallelism.step_time(m, EX.cluster, plan, seq_length=4096, memory_check=False)
             for m in (SERIAL, PARALLEL)]
    assert curve[1].compute == pytest.approx(curve[0].compute, rel=1e-12)
    assert curve[1].tp_comm == pytest.approx(curve[0].tp_comm / 2, rel=1e-12)
    ops = [parallelism.step_time(m, EX.cluster, plan, seq_length=4096, memory_check=False, stack="megatron-core")
           for m in (SERIAL, PARALLEL)]
    assert ops[1].compute < ops[0].compute
    table = parallelism.evaluate(PARALLEL, EX.cluster, tp=8, pp=1, dp=dp, micro_batch=[1, 2], global_batch=[dp, 2 * dp],
                                 sequence_parallel=True, tp_overlap=[False, True], seq_length=4096,
                                 memory_check=False, stack="megatron-core")
    scalar = [parallelism.step_time(PARALLEL, EX.cluster, Plan(tp=8, pp=1, dp=dp, micro_batch=b, global_batch=b * dp,
                                                             sequence_parallel=True, tp_overlap=o),
                                    seq_length=4096, memory_check=False, stack="megatron-core").total
              for b, o in ((1, False), (2, True))]
    assert list(table.total) == pytest.approx(scalar, rel=1e-12)


def test_activations_keep_one_norm_and_one_block_input():
    """Korthikanti et al.'s replicated terms hold both norms' inputs and both blocks' inputs (2 s b h each); a
    parallel block has one norm, whose output both blocks read: 4 s b h fewer, and "layernorm" recomputation and the
    FP8 cache of the norms' outputs save half as much."""
    from atscale import memory

    s, b, h = 4096, 2, SERIAL.hidden_size
    serial, par = memory.activation_terms(SERIAL, b, s), memory.activation_terms(PARALLEL, b, s)
    assert serial.replicated - par.replicated == pytest.approx(4 * s * b * h, rel=1e-12)
    assert (par.parallel, par.scores) == (serial.parallel, serial.scores)
    for fn in (lambda m: memory.recompute_savings(m, b, s, ("layernorm",)), lambda m: memory.fp8_cache_savings(m, b, s)):
        assert fn(PARALLEL).replicated == pytest.approx(fn(SERIAL).replicated / 2, rel=1e-12)
    per_layer = [memory.activation_bytes_per_layer(m, b, s, tp=8, sequence_parallel=True, flash_attention=True)
                 for m in (SERIAL, PARALLEL)]
    assert per_layer[0] - per_layer[1] == pytest.approx(4 * s * b * h / 8, rel=1e-12)
    dp = EX.cluster.num_gpus // 8
    plan = Plan(tp=8, pp=1, dp=dp, micro_batch=b, global_batch=b * dp, sequence_parallel=True, recompute="none")
    mem = [parallelism.step_time(m, EX.cluster, plan, seq_length=s, memory_check=False).memory_total
           for m in (SERIAL, PARALLEL)]
    assert mem[0] - mem[1] == pytest.approx(SERIAL.num_layers * 4 * s * b * h / 8, rel=1e-9)
