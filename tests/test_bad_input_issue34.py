"""One test per example of issue 34 (bad input, round three): each answered correctly, as infeasible, or with a
ValueError naming the argument in a short message."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atscale import collectives, jct, memory, models, parallelism, plots, roofline, widgets
from atscale.scenario import RUNNING_EXAMPLE as EX


def _refused(call, *words):
    with pytest.raises(ValueError) as exc:
        call()
    text = str(exc.value)
    assert len(text) < 300, f"{len(text)} characters: {text}"
    for w in words:
        assert w in text, text
    return text


# --- valid layouts are answered ----------------------------------------------------------------
def test_published_uneven_layouts_are_answered():
    b = memory.breakdown(models.LLAMA3_405B, "H100 SXM", tp=8, pp=16, dp=8, zero_stage=1, sequence_parallel=True,
                         recompute="full")
    assert b.fits and b.total > 0
    assert memory.model_state_bytes(models.LLAMA3_70B, pp=3).total > memory.model_state_bytes(
        models.LLAMA3_70B, pp=4).total


def test_numpy_scalars_are_numbers():
    a = memory.model_state_bytes(models.LLAMA3_70B, dp=np.int64(8), tp=np.int32(8), pp=np.int64(4))
    assert a == memory.model_state_bytes(models.LLAMA3_70B, dp=8, tp=8, pp=4)


# --- numbers that cannot be ----------------------------------------------------------------------
def test_reliability_terms_have_no_cancellation():
    ckpt, rework, restart = jct.reliability_terms(1e6, 3600, 60, 7200, restart_time=1e6)
    assert all(math.isfinite(x) and x >= 0 for x in (ckpt, rework, restart))
    s, m = 3660.0, 7200.0  # rework per segment: M (e^{S/M} - 1) - S, exactly
    assert rework == pytest.approx(1e6 / 3600 * (m * math.expm1(s / m) - s), rel=1e-12)


@settings(max_examples=200, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(work=st.floats(1.0, 1e12), interval=st.floats(1e-3, 1e9), ckpt=st.floats(0, 1e7), mtbf=st.floats(1.0, 1e12),
       restart=st.floats(0, 1e9), lag=st.floats(0, 1e6))
def test_reliability_terms_are_finite_and_non_negative_or_refused(work, interval, ckpt, mtbf, restart, lag):
    try:
        terms = jct.reliability_terms(work, interval, ckpt, mtbf, restart, durable_lag=lag)
    except ValueError as exc:
        assert "progress" in str(exc) or "durable_lag" in str(exc)
        return
    assert all(math.isfinite(x) and x >= 0 for x in terms), terms
    if lag == 0:  # they add up, with the work, to Daly's expected wall-clock time
        from atscale import reliability as rel

        wall = work / rel.goodput_exact(interval, ckpt, mtbf, restart)
        assert work + sum(terms) == pytest.approx(wall, rel=1e-9)


def test_all_to_all_cannot_use_more_ranks_than_the_cluster_has():
    _refused(lambda: collectives.all_to_all_time(1e9, 2048, jct.cluster_of(1024)), "ranks=2048", "1,024")
    assert collectives.all_to_all_time(1e9, 1024, jct.cluster_of(1024)) > 0


def test_an_mfu_is_a_fraction():
    kw = dict(label="x", model=EX.model, cluster=EX.cluster, plan=EX.plan, role="validation", source="test")
    _refused(lambda: parallelism.Run(metric="mfu", published=45, **kw), "published=45", "0.45")
    assert parallelism.Run(metric="mfu", published=0.45, **kw).published == 0.45


# --- internal errors become messages ----------------------------------------------------------
def test_search_with_no_context_parallel_degree_that_divides():
    _refused(lambda: parallelism.search(models.LLAMA3_70B, EX.cluster, 1024, context_parallel=(3,)),
             "context_parallel=(3,)")


def test_gradient_sync_needs_a_scenario():
    _refused(lambda: collectives.gradient_sync(models.LLAMA3_70B), "scenario", "Scenario")
    assert collectives.gradient_sync(EX).seconds > 0


def test_best_algorithm_takes_one_size():
    _refused(lambda: collectives.best_algorithm("all-reduce", [1e6, 1e9], 8, "NVLink 4"), "size=", "single value")
    assert collectives.best_algorithm("all-reduce", np.float32(1e9), np.int64(8), "NVLink 4") == \
        collectives.best_algorithm("all-reduce", 1e9, 8, "NVLink 4")


def test_layer_time_with_ops_of_mismatched_shapes():
    ops = {"a": roofline.matmul([1, 2], 4, 4), "b": roofline.matmul([1, 2, 3], 4, 4)}
    _refused(lambda: roofline.layer_time(ops, "H100 SXM"), "ops", "(2,)", "(3,)")


# --- plots that drew nonsense --------------------------------------------------------------------
def test_plots_refuse_impossible_values():
    _refused(lambda: plots.mfu_scaling_chart([64, 128], [0.4, 1.5]), "best_mfu")
    _refused(lambda: plots.mfu_scaling_chart([64, 128], [0.4, math.nan]), "best_mfu")
    _refused(lambda: plots.mfu_scaling_chart([0, 128], [0.4, 0.5]), "gpus")
    _refused(lambda: plots.catalog_scatter(ridge_lines=(-30, 100)), "ridge_lines")
    sweeps = [jct.sweep(EX.model, 2e12, [256, 512])]
    _refused(lambda: plots.jct_crossover_chart(sweeps, mark=-1), "mark")


def test_plots_name_the_object_they_need():
    b = memory.breakdown(EX.model, "H100 SXM", EX.plan)
    _refused(lambda: plots.step_breakdown_chart(b), "step", "StepTime")
    _refused(lambda: plots.deepseek_chart([1, 2]), "estimates")
    fig = plots.roofline_chart("H100 SXM")  # a catalog name, as everywhere in the library
    one = plots.roofline_chart(("H100 SXM",))
    assert [ln.get_label() for ln in fig.axes[0].lines] == [ln.get_label() for ln in one.axes[0].lines]
    assert "H100 SXM" in fig.axes[0].lines[0].get_label()
    _refused(lambda: plots.roofline_chart("H"), "accelerator")


def test_flags_are_bools():
    _refused(lambda: plots.u_curve_chart(simulate="no"), "simulate='no'")


# --- widget views and explorer helpers ---------------------------------------------------------
def test_roofline_view_blames_size():
    _refused(lambda: widgets.roofline_view(size=0), "size=0")
    _refused(lambda: widgets.roofline_view(size=True), "size=True")


def test_jct_view_reads_numbers_as_numbers():
    _refused(lambda: widgets.explorer_view(tokens_t=math.inf), "tokens_t=inf")
    _refused(lambda: widgets.explorer_view(tokens_t=True), "tokens_t=True")
    assert widgets.explorer_view(tokens_t=np.float32(2.0))[0].total == pytest.approx(
        widgets.explorer_view(tokens_t=2.0)[0].total)


def test_slider_refuses_what_it_cannot_draw():
    _refused(lambda: widgets.slider(0, 10, 5, "x", log=True), "minimum=0", "log")
    _refused(lambda: widgets.slider(0, math.nan, 5, "x"), "maximum=nan")
    _refused(lambda: widgets.slider(0, 10, 11, "x"), "value=11")
    assert widgets.slider(1, 100, 10, "x", log=True).value == pytest.approx(10)
