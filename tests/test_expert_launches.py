"""Each local expert's GEMMs and FP8 casts as kernels of their own (issue 32): Transformer Engine's grouped linear
layer issues one cuBLAS GEMM per expert and, unless the recipe is delayed scaling, quantises split by split
(operators.EXPERT_LAUNCHES); a grouped kernel launches one of each for all its experts."""

import dataclasses

import pytest

from atscale import operators



def _model():
    from atscale import runs

    return next(r.model for r in runs.ALL_RUNS if r.model.name == "Qwen3-30B-A3B")


def _table(how, dtype="bf16", recipe="delayed", ep=8):
    st = dataclasses.replace(operators.stack("megatron-core"), expert_gemms=how)
    return operators.layer_operators(_model(), seq_length=4096, dtype=dtype, fp8_recipe=recipe, ep=ep, stack=st)


def _row(table, name):
    return next(r for r in table.rows if r.name == name)


@pytest.mark.parametrize("how", ["loop", "multi-stream"])
def test_one_gemm_kernel_per_local_expert_and_matrix(how):
    m = _model()
    for ep in (8, 16):
        local = m.num_experts // ep
        row = _row(_table(how, ep=ep), "routed experts")
        assert (row.kernels_forward, row.kernels_backward) == (2 * local, 4 * local)


def test_a_grouped_kernel_launches_once_for_all_experts():
    row = _row(_table("grouped"), "routed experts")
    assert (row.kernels_forward, row.kernels_backward) == (2, 4)


def test_fp8_casts_per_expert_unless_delayed_scaling_fuses_them():
    local = _model().num_experts // 8
    per = {recipe: _row(_table("multi-stream", "fp8", recipe), "FP8 casts") for recipe in ("current", "delayed")}
    grouped = _row(_table("grouped", "fp8", "current"), "FP8 casts")
    # current scaling: two kernels per cast (its amax, then the cast), two casts per expert each way
    assert per["current"].kernels_forward - grouped.kernels_forward == pytest.approx(2 * 2 * (local - 1))
    assert per["delayed"].kernels_forward == _row(_table("grouped", "fp8", "delayed"), "FP8 casts").kernels_forward
    # the extra kernels cost the GPU its fixed time per kernel, forward and backward
    fixed = {k: _row(t, "fixed per kernel") for k, t in (("per", _table("multi-stream", "fp8", "current")),
                                                         ("grouped", _table("grouped", "fp8", "current")))}
    assert fixed["per"].forward > fixed["grouped"].forward and fixed["per"].backward > fixed["grouped"].backward


def test_the_table_counts_its_kernels():
    t = _table("multi-stream", "fp8", "current")
    assert t.kernels == sum(r.kernels_forward + r.kernels_backward for r in t.rows)
    assert t.kernels > _table("grouped", "fp8", "current").kernels


def test_te_linear_host_time_is_the_published_figure():
    """Transformer Engine pull request 1191: about 115 us per forward pass (140 before), several of the model's
    per-kernel host times."""
    assert operators.TE_LINEAR_HOST_SECONDS == pytest.approx(115e-6)
    assert operators.TE_LINEAR_HOST_SECONDS > 5 * operators.stack("megatron-core").host_seconds_per_kernel
