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
    per = {recipe: _row(_table("multi-stream", "fp8", recipe), "FP8 casts (experts)") for recipe in ("current", "delayed")}
    grouped = _row(_table("grouped", "fp8", "current"), "FP8 casts (experts)")
    # current scaling: two kernels per cast (its amax, then the cast), two casts per expert each way
    assert per["current"].kernels_forward - grouped.kernels_forward == pytest.approx(2 * 2 * (local - 1))
    assert per["delayed"].kernels_forward == _row(_table("grouped", "fp8", "delayed"), "FP8 casts (experts)").kernels_forward
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


# --------------------------------------------------------------------------------------
# the dispatch's host wait (operators.DISPATCH_SYNC)
def test_megatron_waits_at_the_dispatch_and_the_pytorch_presets_are_not_read_so():
    assert operators.stack("megatron-core").dispatch_sync
    assert not operators.stack("fsdp2-eager").dispatch_sync and not operators.stack("fsdp2-compile").dispatch_sync
    with pytest.raises(ValueError, match="dispatch_sync"):
        dataclasses.replace(operators.stack("megatron-core"), dispatch_sync="yes")


def _sync_table(sync, model=None, host=None, **kw):
    st = operators.stack("megatron-core")
    st = dataclasses.replace(st, dispatch_sync=sync, host_seconds_per_kernel=host or st.host_seconds_per_kernel)
    return operators.layer_operators(model or _model(), seq_length=4096, stack=st, **kw)


def _host_split(table, host):
    """(host before the dispatch, host, GPU before, GPU) of a table's forward, from its rows, as the wait reads them."""
    gap, launch = operators.kernels.KERNEL_GPU_SECONDS, operators.kernels.HOST_SECONDS_PER_LAUNCH
    pre_h = pre_g = all_h = all_g = 0.0
    for r in table.rows:
        if r.kind == "fixed per kernel":
            continue
        g = r.forward + (r.kernels_forward * gap if r.kind == "memory-bound" else 0.0)
        calls = min(r.kernels_forward, operators.EXPERT_CALLS[r.name][0]) if r.name in operators.EXPERT_CALLS \
            else r.kernels_forward
        h = calls * host + (r.kernels_forward - calls) * launch
        s = operators.BEFORE_DISPATCH.get(r.name, 0.0)
        pre_h, pre_g, all_h, all_g = pre_h + s * h, pre_g + s * g, all_h + h, all_g + g
    return pre_h, all_h, pre_g, all_g


def test_the_forward_waits_on_each_side_of_the_dispatch():
    """With a slow host (100 us per PyTorch call) the experts' side of the dispatch is host-bound by more than the
    attention's side: the forward's fixed row gains exactly the host time the wait exposes, the longer of host and GPU on each
    side (BEFORE_DISPATCH) against the longer of the two over the pass; the backward is untouched."""
    kw = dict(dtype="fp8", fp8_recipe="current", ep=8, host=100e-6)
    off, on = _sync_table(False, **kw), _sync_table(True, **kw)
    pre_h, all_h, pre_g, all_g = _host_split(off, 100e-6)
    split = max(0.0, pre_h - pre_g) + max(0.0, (all_h - pre_h) - (all_g - pre_g))
    whole = max(0.0, all_h - all_g)
    fixed = {t: next(r for r in t.rows if r.kind == "fixed per kernel") for t in (off, on)}
    assert split > whole  # the wait exposes host time the pass as a whole would have hidden
    assert fixed[on].forward - fixed[off].forward == pytest.approx(split - whole, rel=1e-9)
    assert fixed[on].backward == fixed[off].backward
    assert [r for r in on.rows if r.kind != "fixed per kernel"] == [r for r in off.rows if r.kind != "fixed per kernel"]
    assert on.host == off.host == pytest.approx(all_h + sum(
        (min(r.kernels_backward, operators.EXPERT_CALLS[r.name][1]) * 100e-6
         + (r.kernels_backward - min(r.kernels_backward, operators.EXPERT_CALLS[r.name][1]))
         * operators.kernels.HOST_SECONDS_PER_LAUNCH) if r.name in operators.EXPERT_CALLS
        else r.kernels_backward * 100e-6 for r in off.rows), rel=1e-9)


def test_at_the_published_runs_host_speed_the_wait_costs_nothing_here():
    """Qwen3-30B-A3B's layer at 20 us per call and 3 us per launch: neither side of the dispatch is host-bound."""
    kw = dict(dtype="fp8", fp8_recipe="current", ep=8)
    assert _sync_table(True, **kw).rows == _sync_table(False, **kw).rows


def test_a_multi_stream_stack_launches_the_experts_kernels_from_cpp():
    """The host pays a PyTorch call per grouped call and a launch per further kernel (EXPERT_CALLS); a Python loop
    of GEMMs pays a call per kernel."""
    t = _table("multi-stream", "fp8", "current")
    loop = _table("loop", "fp8", "current")
    host, launch = operators.stack("megatron-core").host_seconds_per_kernel, operators.kernels.HOST_SECONDS_PER_LAUNCH
    assert [r.kernels_forward for r in t.rows] == [r.kernels_forward for r in loop.rows]  # same kernels
    extra = sum(r.kernels_forward + r.kernels_backward - sum(operators.EXPERT_CALLS[r.name]) for r in t.rows
                if r.name in operators.EXPERT_CALLS)
    assert loop.host - t.host == pytest.approx(extra * (host - launch), rel=1e-9)
    assert t.host < t.kernels * host and loop.host == pytest.approx(loop.kernels * host, rel=1e-12)
    assert 2e-6 <= launch <= 5e-6  # Boyer's 3 us per asynchronous launch


def test_a_dense_layer_never_waits():
    from atscale import runs

    dense = next(r.model for r in runs.ALL_RUNS if not r.model.is_moe)
    assert _sync_table(True, dense).rows == _sync_table(False, dense).rows


def test_the_experts_casts_are_a_row_of_their_own():
    t = _table("multi-stream", "fp8", "current")
    names = [r.name for r in t.rows]
    assert "FP8 casts" in names and "FP8 casts (experts)" in names
    assert operators.BEFORE_DISPATCH["FP8 casts"] == 1.0 and "FP8 casts (experts)" not in operators.BEFORE_DISPATCH
    assert "FP8 casts (experts)" not in [r.name for r in _table("multi-stream").rows]  # BF16: no casts
