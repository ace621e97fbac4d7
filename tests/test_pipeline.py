"""Pipeline schedules (atscale.pipeline): the closed forms of the bubble and the in-flight activations against the
simulated schedules, the papers' formulas where the papers state them, and bad input."""

import itertools
import math

import numpy as np
import pytest

from atscale import parallelism as P
from atscale import pipeline as PL
from atscale.plan import SCHEDULES, Plan

SPLIT = PL.SPLIT_BACKWARD
SIMULATED = tuple(s for s in SCHEDULES if s not in PL.NOT_SIMULATED)


def simulated(schedule, p, m, t_b=1.0, t_w=1.0, v=1):
    """The simulated bubble per stage in units of t_f (= 1 s), with the backward split into t_b and t_w."""
    return PL.pipeline_timeline(p, m, schedule, v, backward_ratio=t_b + t_w, weight_ratio=t_w).bubble_time


# --- the closed forms against the simulation -------------------------------------------------------------
@pytest.mark.parametrize("schedule", SIMULATED)
@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 12), (6, 12), (8, 16), (8, 32), (16, 32)])
def test_simulated_bubble_equals_the_closed_form_at_equal_pass_times(schedule, p, m):
    v = 2 if schedule == "interleaved" else 1
    t = PL.pipeline_timeline(p, m, schedule, v)  # t_f = t_b = t_w = 1 where the backward is split
    t_b, t_w = (1.0, 1.0) if schedule in SPLIT else (2.0, 0.0)
    assert t.bubble_time == pytest.approx(PL.bubble_time(schedule, p, m, 1.0, t_b, t_w, v), abs=1e-9)


def test_zero_bubble_closed_forms_hold_for_any_pass_times():
    """ZB-H1 and ZB-H2 over a grid of t_b/t_f and t_w/t_f, at micro-batch counts from the least the closed form
    takes upwards: exact, including where the papers' formulas would promise less than the schedule gives."""
    for t_b, t_w in itertools.product([0.3, 0.6, 1.0, 1.3, 2.0], [0.2, 0.5, 1.0, 1.4, 2.5]):
        for p in (2, 3, 4, 7):
            for m in (p, p + 1, 2 * p):
                assert simulated("zb-h1", p, m, t_b, t_w) == pytest.approx(
                    PL.bubble_time("zb-h1", p, m, 1.0, t_b, t_w), abs=1e-9)
            for m in (2 * p - 1, 2 * p, 3 * p + 1):
                assert simulated("zb-h2", p, m, t_b, t_w) == pytest.approx(
                    PL.bubble_time("zb-h2", p, m, 1.0, t_b, t_w), abs=1e-9)


def test_the_papers_formulas_where_they_apply():
    """Qi et al. 2024, sec. 2 (as their authors' schedule analysis asserts): ZB-H1 (p-1)(T_F+T_B-T_W), ZB-H2
    (p-1)(T_F+T_B-2T_W), 1F1B (p-1)(T_F+T_B+T_W);
    DeepSeek-AI 2024, Table 2, with B the full backward and F&B = F + B: 1F1B (PP-1)(F+B), ZB1P (PP-1)(F+B-2W),
    DualPipe (PP/2-1)(F&B+B-3W)."""
    for p, (f, b, w) in itertools.product((2, 4, 8, 16), [(1.0, 1.0, 1.0), (1.0, 0.9, 0.5), (2.0, 1.5, 0.8)]):
        full = b + w  # DeepSeek's B
        assert PL.bubble_time("1f1b", p, 4 * p, f, b, w) == pytest.approx((p - 1) * (f + b + w))
        assert PL.bubble_time("1f1b", p, 4 * p, f, b, w) == pytest.approx((p - 1) * (f + full))
        assert PL.bubble_time("zb-h1", p, 4 * p, f, b, w) == pytest.approx((p - 1) * (f + b - w))
        assert PL.bubble_time("zb-h1", p, 4 * p, f, b, w) == pytest.approx((p - 1) * (f + full - 2 * w))
        assert PL.bubble_time("zb-h2", p, 4 * p, f, b, w) == pytest.approx((p - 1) * (f + b - 2 * w))
        assert PL.bubble_time("interleaved", p, 4 * p, f, b, w, 2) == pytest.approx((p - 1) * (f + b + w) / 2)
        if f == b:  # where the simulated DualPipe reproduces its Table 2 row
            f_and_b = f + full
            table_2 = (p / 2 - 1) * (f_and_b + full - 3 * w)
            assert PL.bubble_time("dualpipe", p, 4 * p, f, b, w) == pytest.approx(table_2)


def test_zb_h1_has_a_third_of_the_1f1b_bubble_and_zb_h2_none_at_equal_pass_times():
    for p, m in [(4, 8), (8, 24), (16, 64)]:
        one = simulated("1f1b", p, m)
        assert simulated("zb-h1", p, m) == pytest.approx(one / 3)
        assert simulated("zb-h2", p, m) == pytest.approx(0.0, abs=1e-9)
        assert PL.pipeline_timeline(p, m, "zb-h2").bubble == pytest.approx(0.0, abs=1e-12)


def test_zb_h2_pays_its_ragged_edges_only_when_stages_step_together():
    """The period (each stage steps its optimizer when its own passes are done) has no bubble; the whole step from
    the first pass to the last is (p - 1) forwards longer: what a synchronised optimizer step would cost."""
    for p, m in [(4, 8), (8, 16)]:
        t = PL.pipeline_timeline(p, m, "zb-h2")
        assert t.period == pytest.approx(t.ideal)
        assert t.makespan - t.period == pytest.approx(p - 1)
    for schedule in ("gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe"):
        t = PL.pipeline_timeline(4, 8, schedule, 2 if schedule == "interleaved" else 1)
        assert t.period == t.makespan


def test_dualpipe_bubble_does_not_grow_with_micro_batches_and_matches_table_2_when_t_b_equals_t_f():
    for p in (2, 4, 6, 8, 16):
        for t_w in (0.3, 0.5, 1.0, 1.7):
            bubbles = {round(simulated("dualpipe", p, m, 1.0, t_w), 9) for m in (2 * p, 2 * p + 2, 4 * p)}
            assert len(bubbles) == 1
            assert bubbles.pop() == pytest.approx(PL.bubble_time("dualpipe", p, 2 * p, 1.0, 1.0, t_w), abs=1e-9)


def test_dualpipe_simulation_departs_from_table_2_when_t_b_differs_from_t_f():
    """The report's formula is reproduced only at t_b = t_f (its Fig. 5); otherwise the simulated order idles a
    little more or less, by at most 2 (p/2 - 1)|t_b - t_f| on this grid."""
    departed = 0
    for t_b, t_w in itertools.product([0.3, 0.8, 1.2, 2.0, 3.0], [0.2, 0.5, 1.5]):
        for p in (4, 8, 12):
            m = 2 * p + 2
            gap = simulated("dualpipe", p, m, t_b, t_w) - PL.bubble_time("dualpipe", p, m, 1.0, t_b, t_w)
            assert abs(gap) <= 2 * (p / 2 - 1) * abs(t_b - 1.0) + 1e-9
            departed += abs(gap) > 1e-9
    assert departed > 0


def test_dualpipev_is_dualpipe_cut_in_half_as_its_repository_tabulates():
    """DeepSeek-AI's DualPipe README, "based on the same number of PP stages": DualPipeV's bubble is DualPipe's row
    (PP/2 - 1)(F&B + B - 3W) and its activations PP + 1, on PP/2 devices; here PP = 2p half-size stages on the p
    GPUs, each pass of a half stage half as long. The simulation of the reference order reproduces the row when
    t_b = t_f, holds PP + 1 half stages (p + 1/2 whole ones) on every GPU, and one copy of the weights."""
    for p, (f, b, w) in itertools.product((2, 4, 8), [(1.0, 1.0, 1.0), (1.0, 1.0, 0.5), (2.0, 2.0, 0.8)]):
        F, B, W = f / 2, (b + w) / 2, w / 2  # a half stage's passes; B the full backward, as in the README
        row = (2 * p / 2 - 1) * ((F + B) + B - 3 * W)
        assert PL.bubble_time("dualpipev", p, 4 * p, f, b, w) == pytest.approx(row)
        t = PL.pipeline_timeline(p, 4 * p, "dualpipev", backward_ratio=(b + w) / f, weight_ratio=w / f)
        assert t.bubble_time * f == pytest.approx(row, abs=1e-9)
        assert list(t.peak_in_flight()) == [(2 * p + 1) / 2] * p
    assert PL.weight_copies("dualpipev") == 1 and PL.activation_in_flight("dualpipev", 8, 32) == 8.5
    # half the weights of DualPipe for a slightly longer bubble: (p - 1)/2 against (p/2 - 1) of t_f + 2 t_b - t_w
    assert PL.bubble_time("dualpipev", 8, 32, 1, 1, 1) == pytest.approx(7.0)
    assert PL.bubble_time("dualpipe", 8, 32, 1, 1, 1) == pytest.approx(6.0)


def test_zb_v_has_no_bubble_at_1f1b_memory_as_its_authors_tabulate():
    """Qi et al. 2024 (arXiv version) and their repository's comparison, at T_F = T_B = T_W: ZB-V's bubble rate 0,
    its activation memory 1x 1F1B's, its pipeline communication 2x; one copy of the weights."""
    for p in (2, 4, 8, 16):
        for m in (2 * p, 3 * p, 8 * p):
            assert PL.bubble_time("zb-v", p, m, 1.0, 1.0, 1.0) == 0.0
            assert PL.activation_in_flight("zb-v", p, m) == PL.activation_in_flight("1f1b", p, m) == p
    assert PL.weight_copies("zb-v") == 1 and set(PL.V_SHAPED) == {"dualpipev", "zb-v"}
    # the library's stated assumption beyond equal times: ZB-H2's form over the 2p half-size stages
    assert PL.bubble_time("zb-v", 4, 8, 1.0, 1.0, 0.5) == pytest.approx(7 / 2 * 1.0)


def test_closed_forms_are_lower_bounds_below_their_micro_batch_counts():
    """With fewer micro-batches than a closed form takes, the zero-bubble schedules idle more than it says; the
    unchecked formula the step-time model may call (``_bubble_time``) is then a lower bound."""
    for p in (4, 8):
        for m in range(1, p):
            assert simulated("zb-h1", p, m) >= PL._bubble_time(3, p, m, 1, 1.0, 1.0, 1.0) - 1e-9
        for m in range(1, 2 * p - 1):
            assert simulated("zb-h2", p, m) >= PL._bubble_time(4, p, m, 1, 1.0, 1.0, 1.0) - 1e-9
        assert simulated("zb-h2", p, 2 * p - 2) > PL._bubble_time(4, p, 2 * p - 2, 1, 1.0, 1.0, 1.0)


# --- memory --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("schedule", SIMULATED)
@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 20), (8, 16), (8, 32)])
def test_simulated_first_stage_peak_equals_activation_in_flight(schedule, p, m):
    v = 2 if schedule == "interleaved" else 1
    peak = PL.pipeline_timeline(p, m, schedule, v).peak_in_flight()
    assert peak[0] == pytest.approx(PL.activation_in_flight(schedule, p, m, v))
    assert peak.max() == pytest.approx(peak[0])  # the first stage holds the most


def test_zb_h1_holds_what_1f1b_holds_and_zb_h2_about_twice():
    for p, m in [(2, 2), (4, 3), (4, 8), (8, 8), (8, 40)]:
        one = PL.pipeline_timeline(p, m, "1f1b").peak_in_flight()
        assert PL.pipeline_timeline(p, m, "zb-h1").peak_in_flight()[0] == one[0] == min(p, m)
    for p in (2, 4, 8, 16):
        assert PL.activation_in_flight("zb-h2", p, 4 * p) == 2 * p - 1
        assert PL.activation_in_flight("zb-h2", p, 4 * p) / PL.activation_in_flight("1f1b", p, 4 * p) < 2


def test_dualpipe_holds_p_plus_one_on_every_gpu_and_two_weight_copies():
    for p in (2, 4, 8):
        for m in (2 * p, 4 * p + 2):
            assert list(PL.pipeline_timeline(p, m, "dualpipe").peak_in_flight()) == [p + 1] * p
    assert PL.weight_copies("dualpipe") == 2
    assert [PL.weight_copies(s) for s in SCHEDULES if s != "dualpipe"] == [1] * (len(SCHEDULES) - 1)
    assert list(PL.weight_copies(["1f1b", "dualpipe"])) == [1, 2]


# --- the simulated passes ------------------------------------------------------------------------------
@pytest.mark.parametrize("schedule", SIMULATED)
def test_every_micro_batch_runs_its_passes_once_on_every_stage(schedule):
    p, m, v = 4, 8, (2 if schedule == "interleaved" else 1)
    t = PL.pipeline_timeline(p, m, schedule, v, backward_ratio=2.5, weight_ratio=0.75)
    v = t.virtual_stages  # a V-shaped schedule runs two half-size chunks per GPU
    for i, j, c in itertools.product(range(p), range(m), range(v)):
        if schedule == "dualpipe":
            c = int(j >= m // 2)
        sel = (t.stage == i) & (t.micro_batch == j) & (t.chunk == c)
        kinds = sorted(t.kind[sel])
        if schedule in ("dualpipe", "dualpipev"):  # its steady state runs whole backwards, its ends split them
            assert kinds in (["B", "F"], ["B", "F", "W"])
        else:
            assert kinds == (["B", "F", "W"] if schedule in SPLIT else ["B", "F"])
        backward = (t.end - t.start)[sel & (t.kind != "F")].sum()
        assert backward == pytest.approx(2.5 / v)
    for i in range(p):  # a stage runs one pass at a time
        sel = t.stage == i
        order = np.argsort(t.start[sel])
        assert np.all(t.start[sel][order][1:] >= t.end[sel][order][:-1] - 1e-12)


def test_dualpipe_feeds_half_the_micro_batches_at_each_end():
    t = PL.pipeline_timeline(4, 8, "dualpipe")
    assert np.array_equal(t.direction, t.chunk) and set(t.micro_batch[t.direction == 1]) == {4, 5, 6, 7}
    first = t.start[(t.kind == "F")].min()
    assert {int(s) for s in t.stage[(t.kind == "F") & (t.start == first)]} == {0, 3}  # both ends start at once
    assert t.weight_ratio == 1.0 and PL.pipeline_timeline(4, 8, "1f1b").weight_ratio == 0.0


def test_the_classic_schedules_are_unchanged_by_the_move():
    """parallelism re-exports the simulation; GPipe, 1F1B and interleaved give the numbers they always gave."""
    assert P.pipeline_timeline is PL.pipeline_timeline and P.Timeline is PL.Timeline
    assert P.MAX_SIMULATED_PASSES == PL.MAX_SIMULATED_PASSES
    t = P.pipeline_timeline(4, 8)
    assert (t.makespan, t.ideal, t.bubble) == (33.0, 24.0, 0.375) and list(t.peak_in_flight()) == [4, 3, 2, 1]
    assert P.pipeline_timeline(8, 32, "interleaved", 2).bubble == pytest.approx(P.bubble_fraction(8, 32, 2))
    assert "1f1b" in repr(t) and "37.5%" in repr(t)


# --- vectorised closed forms ---------------------------------------------------------------------------
def test_closed_forms_broadcast_over_names_codes_and_numbers():
    names = np.array(SCHEDULES)
    codes = np.arange(len(SCHEDULES))
    v = np.where(names == "interleaved", 2, 1)
    by_name = PL.bubble_time(names, 8, 32, 1e-3, 1e-3, 1e-3, v)
    assert by_name.shape == (len(SCHEDULES),) and np.array_equal(by_name, PL.bubble_time(codes, 8, 32, 1e-3, 1e-3, 1e-3, v))
    for s, x in zip(SCHEDULES, by_name):
        assert x == PL.bubble_time(s, 8, 32, 1e-3, 1e-3, 1e-3, 2 if s == "interleaved" else 1)
    assert isinstance(PL.bubble_time("1f1b", 8, 32, 1.0, 1.0, 1.0), float)
    grid = PL.bubble_time("zb-h1", np.array([[4], [8]]), 64, 1.0, np.array([0.5, 1.0, 2.0]), 0.5)
    assert grid.shape == (2, 3) and grid[1, 0] == pytest.approx(7 * 1.0)
    mem = PL.activation_in_flight(names, 8, 32, v)
    assert list(mem) == [32, 8, 8 + 7 / 2, 8, 15, 9, 8.5, 8]
    assert isinstance(PL.activation_in_flight("gpipe", 4, 8), float)
    assert PL.bubble_time(np.int64(5), 8, 32, 1.0, 1.0, 1.0) == PL.bubble_time("dualpipe", 8, 32, 1.0, 1.0, 1.0)


class _Scalars:
    """Plain-Python operations, as the step-time model's one-plan path passes them."""

    where = staticmethod(lambda cond, a, b: a if cond else b)
    maximum = staticmethod(max)
    minimum = staticmethod(min)


def test_unchecked_cores_run_on_python_numbers():
    for code, name in enumerate(SCHEDULES):
        v = 2 if name == "interleaved" else 1
        fast = PL._bubble_time(code, 8, 32, v, 1.0, 0.9, 0.6, _Scalars)
        assert isinstance(fast, float) and fast == pytest.approx(PL.bubble_time(name, 8, 32, 1.0, 0.9, 0.6, v))
        mem = PL._activation_in_flight(code, 8, 32, v, _Scalars)
        assert mem == pytest.approx(PL.activation_in_flight(name, 8, 32, v))
    # stand-ins for impossible layouts (one stage) stay finite and non-negative
    assert PL._bubble_time(np.array([5, 4]), np.array([1.0, 1.0]), 1, 1, 1.0, 1.0, 1.0).tolist() == [0.0, 0.0]


# --- bad input -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, match", [
    (lambda: PL.bubble_time("zb", 4, 8, 1, 1, 1), "schedule='zb' must be one of"),
    (lambda: PL.bubble_time(3, 4, 8, 1, 1, 1), "schedule=3 must be one of"),
    (lambda: PL.bubble_time(np.array([0, len(SCHEDULES)]), 4, 8, 1, 1, 1), "schedule=array"),
    (lambda: PL.bubble_time("dualpipev", 4, 7, 1, 1, 1), r"dualpipev.*micro_batches >= 2 pp"),
    (lambda: PL.bubble_time("zb-v", 4, 7, 1, 1, 1), r"zb-v.*micro_batches >= 2 pp"),
    (lambda: PL.pipeline_timeline(4, 8, "zb-v"), "not simulated"),
    (lambda: PL.bubble_time(["1f1b", "ZB-H1"], 4, 8, 1, 1, 1), "schedule="),
    (lambda: PL.bubble_time("1f1b", 4, 8, 1, 1, 1, 2), "virtual_stages=2 > 1 needs schedule='interleaved'"),
    (lambda: PL.bubble_time("dualpipe", 3, 8, 1, 1, 1), r"even pp .* \(got pp=3, micro_batches=8\)"),
    (lambda: PL.bubble_time("dualpipe", 4, 7, 1, 1, 1), "micro_batches=7"),
    (lambda: PL.bubble_time("dualpipe", 4, 6, 1, 1, 1), r"micro_batches >= 2 pp"),
    (lambda: PL.bubble_time("zb-h1", 8, 7, 1, 1, 1), r"zb-h1.*micro_batches >= pp \(got pp=8, micro_batches=7\)"),
    (lambda: PL.bubble_time("zb-h2", 8, 14, 1, 1, 1), r"zb-h2.*2 pp - 1"),
    (lambda: PL.bubble_time("1f1b", 4, 8, 0.0, 1, 1), "t_f=0.0"),
    (lambda: PL.bubble_time("1f1b", 4, 8, 1, -1, 1), "t_b=-1"),
    (lambda: PL.bubble_time("1f1b", 4, 8, 1, 1, math.nan), "t_w=nan"),
    (lambda: PL.bubble_time("1f1b", 4, 8, 1e308, 1e308, 1), "overflows"),
    (lambda: PL.bubble_time("1f1b", [4, 8], [8, 16, 32], 1, 1, 1), "do not broadcast"),
    (lambda: PL.activation_in_flight("dualpipe", 5, 10), "even pp"),
    (lambda: PL.activation_in_flight("gpipe", 0, 8), "pp=0"),
    (lambda: PL.weight_copies(True), "schedule=True"),
    (lambda: PL.weight_copies([]), "not empty"),
    (lambda: PL.pipeline_timeline(4, 8, "zb-h1", weight_ratio=2.0), "weight_ratio=2.0"),
    (lambda: PL.pipeline_timeline(4, 8, "zb-h1", weight_ratio=0), "weight_ratio=0"),
    (lambda: PL.pipeline_timeline(4, 8, "zb-h1", 2), "virtual_stages=2"),
    (lambda: PL.pipeline_timeline(3, 8, "dualpipe"), "even pp"),
    (lambda: PL.pipeline_timeline(4, 5, "dualpipe"), "micro_batches=5"),
    (lambda: PL.pipeline_timeline(200, 200, "zb-h2"), "120,000 passes"),
    (lambda: PL.pipeline_timeline(4, 8, "ZB-H2"), "schedule"),
    (lambda: Plan(pp=3, schedule="dualpipe"), "even pp >= 2 \\(pp=3 given\\)"),
    (lambda: Plan(pp=4, schedule="zb-h2", virtual_stages=2), "virtual_stages=2 needs schedule='interleaved'"),
])
def test_bad_input_is_refused_with_what_is_valid(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_plan_accepts_the_new_schedules():
    assert Plan(pp=4, schedule="dualpipe").schedule == "dualpipe"
    assert Plan(pp=3, schedule="dualpipev").pp == 3 and Plan(pp=4, schedule="zb-v").schedule == "zb-v"
    assert Plan(pp=1, schedule="zb-h1").pp == 1 and Plan(pp=8, schedule="zb-h2").schedule == "zb-h2"


# --- drawing -------------------------------------------------------------------------------------------
def test_the_explorer_figure_draws_weight_passes_and_both_directions():
    import matplotlib.colors as mc

    from atscale import plots
    from atscale.plots.parallelism import _PALE_PASS_COLOURS, _PASS_COLOURS

    fig = plots.PipelineScheduleFigure()
    t = PL.pipeline_timeline(4, 8, "dualpipe")
    assert fig.png(t)
    faces = [tuple(np.round(c, 3)) for c in fig.boxes.get_facecolor()]
    rgba = {name: tuple(np.round(mc.to_rgba(c), 3)) for name, c in _PASS_COLOURS.items()}
    pale = {name: tuple(np.round(mc.to_rgba(c), 3)) for name, c in _PALE_PASS_COLOURS.items()}
    assert set(faces) == set(rgba.values()) | set(pale.values())  # F, B, W in both directions
    assert sum(f in pale.values() for f in faces) == int((t.direction == 1).sum()) > 0
    shown = [legend for legend in fig.keys.values() if legend.get_visible()]
    assert len(shown) == 1 and [x.get_text() for x in shown[0].get_texts()][-1] == "paler: fed at the last stage"
    fig.png(PL.pipeline_timeline(4, 8, "1f1b"))
    assert not set(tuple(np.round(c, 3)) for c in fig.boxes.get_facecolor()) & set(pale.values())
    assert fig.keys[False, False].get_visible() and not fig.keys[True, True].get_visible()
    labels = [x.get_text() for x in fig.keys[True, False].get_texts()]
    assert labels == ["forward", "backward", "weight gradient", "idle (bubble)"]


def test_the_comparison_chart_and_the_explorer_offer_the_new_schedules():
    from atscale import plots, widgets

    fig = plots.pipeline_comparison_chart(4, 8)
    assert len(fig.axes) == 4 and "ZB-H2" in fig.axes[2].get_title()
    with pytest.raises(ValueError, match="schedules"):
        plots.pipeline_comparison_chart(4, 8, "zb-h1")
    e = widgets.pipeline_explorer()
    for name in ("zb-h1", "zb-h2", "dualpipe"):
        e.update(schedule=name)
        assert e.error is None, e.error
    e.update(micro_batches=7)
    assert e.error is not None and "micro_batches=7" in e.error
    e.update(micro_batches=8, schedule="zb-h1", weight_ratio=1.5)
    assert e.error is None


def test_stage_layers_fullest_is_the_largest_stage_scalar_or_array():
    import numpy as np

    from atscale.plan import _stage_layers, stage_layers

    sl = stage_layers(61, 16, account_for_embedding=True, account_for_loss=True)
    assert sl.fullest == max(sl.first, sl.middle, sl.last) and not isinstance(sl.fullest, np.ndarray)
    arr = _stage_layers(61.0, np.array([1.0, 4.0, 16.0]), np.array([1.0, 1.0, 2.0]), 1.0, 1.0)
    assert np.array_equal(arr.fullest, np.maximum(np.maximum(arr.first, arr.middle), arr.last))
    assert arr.fullest[0] == 61
