import dataclasses
import math

import numpy as np
import pytest

from atscale import collectives, hardware as hw, memory as M, models as m
from atscale import parallelism as P
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX

TOLERANCE = 0.10  # every published run within +-10%


def _h100(gpus):
    return hw.Cluster.of_gpus(hw.DGX_H100, gpus, hw.FABRICS["InfiniBand NDR"])


# --- bubble ------------------------------------------------------------------------------
def test_bubble_fractions_of_the_issue():
    assert P.bubble_fraction(8, 32) == pytest.approx(7 / 32, abs=0)
    assert P.bubble_fraction(8, 32, 2) == pytest.approx(7 / 64, abs=0)
    assert P.bubble_fraction(1, 5) == 0
    assert P.bubble_fraction_of_total(8, 32) == pytest.approx(7 / 39)
    with pytest.raises(ValueError, match="micro_batches"):
        P.bubble_fraction(8, 0)


def test_bubble_in_step_time_is_the_fraction_of_the_rest_of_the_pipeline():
    st = P.step_time(EX.model, EX.cluster, EX.plan)
    m_ = EX.plan.micro_batches
    work = st.compute + st.recompute + st.tp_comm + st.pp_comm
    assert st.bubble == pytest.approx(P.bubble_fraction(EX.plan.pp, m_) * work, rel=1e-12)


def test_remainder_layers_go_to_the_first_stages():
    assert P.layers_per_stage(126, 16) == 8 and P.layers_per_stage(80, 4) == 20
    assert list(P.layers_per_stage(10, np.array([1, 3, 4]))) == [10, 4, 3]


# --- parts add up, many plans -------------------------------------------------------------------
def test_parts_add_up_to_total_exactly_over_many_plans():
    r = P.search(m.LLAMA3_70B, EX.cluster, 1024, seq_length=8192)
    st = r.result
    ok = np.asarray(st.feasible)
    assert ok.sum() > 500
    summed = sum(np.asarray(v)[ok] for v in st.parts().values())
    assert np.array_equal(summed, np.asarray(st.total)[ok])
    for i in range(0, ok.sum(), 97):  # scalar path agrees with the vectorised one
        one = P.step_time(m.LLAMA3_70B, EX.cluster, r.plan(i), seq_length=8192)
        assert sum(one.parts().values()) == one.total
        assert one.total == pytest.approx(r.table["total_s"][i], rel=1e-12)


def test_step_time_fields_and_rates():
    st = P.step_time(EX.model, EX.cluster, EX.plan, seq_length=EX.seq_length)
    assert st.feasible and st.reason == ""
    assert st.tokens_per_second == pytest.approx(EX.tokens_per_step / st.total)
    assert st.mfu == pytest.approx(st.model_flops_per_gpu / hw.H100_SXM.peak("bf16"))
    assert st.hfu > st.mfu  # selective recomputation adds hardware FLOPs
    assert 0.2 < st.mfu < 0.6
    assert st.memory_status == "fits" and st.memory_total < st.memory_capacity
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.compute = 0


def test_memory_agrees_with_the_memory_module():
    """The step-time model's memory is the memory module's breakdown of the first stage, plus what the breakdown
    documents it leaves out: the embedding on the first stage (the breakdown spreads every parameter evenly)."""
    for plan in (EX.plan, dataclasses.replace(EX.plan, pp=8, dp=16, zero_stage=3),
                 dataclasses.replace(EX.plan, recompute="full", sequence_parallel=False)):
        st = P.step_time(EX.model, EX.cluster, plan, flash_attention=False)
        b = M.breakdown(EX.model, EX.cluster.accelerator, plan, optimizer_name=M.RUNNING_EXAMPLE_OPTIMIZER)
        model = EX.model
        opt = M.optimizer(M.RUNNING_EXAMPLE_OPTIMIZER)
        even = model.num_params / (plan.tp * plan.pp)
        first = (model.num_layers // plan.pp * model.layer_params() + model.vocab_size * model.hidden_size) / plan.tp
        shard = plan.dp * plan.cp
        per_param = (opt.weights / (shard if plan.zero_stage >= 3 else 1) + opt.gradients / (shard if plan.zero_stage >= 2 else 1)
                     + opt.state / (shard if plan.zero_stage >= 1 else 1))
        assert st.memory_total == pytest.approx(b.total + (first - even) * per_param, rel=1e-9)


def test_uneven_pipelines_are_never_refused_for_dividing():
    """126 layers on 16 x 2 chunks (Llama 3 405B's interleaved layout) is a layout, not an error; the fullest
    stage sets the pace, and counting the embedding and the loss as layers trims the end stages."""
    sl = P.stage_layers(126, 16, account_for_embedding=True, account_for_loss=True)
    assert (sl.first, sl.middle, sl.last) == (7, 8, 7)
    assert P.stage_layers(126, 16) == P.StageLayers(8, 8, 7)
    assert P.stage_layers(80, 4, 3) == P.StageLayers(20, 20, 20)  # 12 chunks: 8 of 7 layers, 4 of 6
    st = P.step_time(EX.model, EX.cluster, dataclasses.replace(EX.plan, schedule="interleaved", virtual_stages=3))
    assert st.feasible and "split" not in st.reason


# --- infeasible layouts: explicit, with the reason, never numbers ------------------------------
@pytest.mark.parametrize("plan, words", [
    (Plan(tp=8, pp=4, dp=16, global_batch=1024), "cluster has 1,024"),
    (Plan(tp=16, pp=4, dp=16, global_batch=1024), "exceeds the 8 GPUs of a node"),
    (Plan(tp=8, pp=1, dp=128, global_batch=1024, zero_stage=0), "does not fit"),
    (Plan(tp=8, pp=128, dp=1, global_batch=1024), "some stages would be empty"),
    (Plan(tp=8, pp=4, dp=32, global_batch=1024, schedule="interleaved", virtual_stages=32), "some stages would be empty"),
    (Plan(tp=8, cp=3, pp=4, dp=32, global_batch=1024), "cluster has 1,024"),
])
def test_infeasible_layouts_say_why_and_give_no_numbers(plan, words):
    st = P.step_time(EX.model, EX.cluster, plan)
    assert not st.feasible and words in st.reason
    assert math.isnan(st.total) and math.isnan(st.mfu) and math.isnan(st.tokens_per_second)
    assert "infeasible" in repr(st)


def test_tp_must_divide_the_heads():
    toy = m.TransformerConfig("toy", num_layers=4, hidden_size=768, num_heads=12, vocab_size=1000, seq_length=128)
    st = P.step_time(toy, _h100(8), Plan(tp=8, pp=1, dp=1, global_batch=8))
    assert not st.feasible and "does not divide the 12 heads" in st.reason
    assert P.step_time(toy, _h100(8), Plan(tp=4, pp=1, dp=2, global_batch=8)).feasible
    st = P.step_time(m.LLAMA3_70B, _h100(16), Plan(tp=16, pp=1, dp=1, global_batch=8))
    assert "exceeds" in st.reason


def test_memory_overflow_names_the_term_and_the_amount():
    st = P.step_time(EX.model, EX.cluster, Plan(tp=8, pp=1, dp=128, global_batch=1024, micro_batch=8))
    assert "over by" in st.reason and "largest term: activations" in st.reason


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="global_batch"):
        P.step_time(EX.model, EX.cluster, Plan(tp=8, pp=4, dp=32))
    with pytest.raises(ValueError, match="plan"):
        P.step_time(EX.model, EX.cluster, "TP=8")
    with pytest.raises(ValueError, match="schedule"):
        P.evaluate(EX.model, EX.cluster, tp=8, pp=4, dp=32, micro_batch=1, global_batch=1024, schedule="zigzag")
    with pytest.raises(ValueError, match="global_batch"):
        P.search(EX.model, EX.cluster, 0)


# --- properties -----------------------------------------------------------------------------------
def test_more_micro_batches_shrink_the_bubble_share():
    base = dataclasses.replace(EX.plan, global_batch=256)
    big = dataclasses.replace(EX.plan, global_batch=2048)
    a, b = (P.step_time(EX.model, EX.cluster, p) for p in (base, big))
    assert b.bubble / b.total < a.bubble / a.total and b.mfu > a.mfu


def test_interleaving_trades_bubble_for_point_to_point():
    one = P.step_time(EX.model, EX.cluster, EX.plan)
    two = P.step_time(EX.model, EX.cluster, dataclasses.replace(EX.plan, schedule="interleaved", virtual_stages=2))
    assert two.bubble < one.bubble and two.pp_comm > one.pp_comm


def test_zero3_gathers_weights_every_micro_batch():
    z1 = P.step_time(EX.model, EX.cluster, EX.plan, dp_overlap=0)
    z3 = P.step_time(EX.model, EX.cluster, dataclasses.replace(EX.plan, zero_stage=3), dp_overlap=0)
    assert z3.dp_comm > 5 * z1.dp_comm


def test_no_overlap_exposes_the_whole_reduction():
    plan = EX.plan
    st = P.step_time(EX.model, EX.cluster, plan, dp_overlap=0)
    # ZeRO-1 (Megatron's distributed optimizer): FP32 gradients reduce-scattered, BF16 weights all-gathered,
    # over the 32 replicas (one per node with TP 8: flat on the NICs), for the fuller end stage's parameters.
    psi = (20 * EX.model.layer_params() + EX.model.vocab_size * EX.model.hidden_size) / 8
    rail = collectives._rail(EX.cluster)
    t = (collectives.collective_time("reduce-scatter", psi * 4, 32, rail)
         + collectives.collective_time("all-gather", psi * 2, 32, rail))
    assert st.dp_comm == pytest.approx(t, rel=1e-9)


# --- validation against published runs ---------------------------------------------------------
def test_published_figures_recorded_as_printed():
    t1 = {round(r.model.num_params / 1e9, 1): r.published / 1e12 for r in P.MEGATRON_TABLE1_RUNS}
    assert len(P.MEGATRON_TABLE1_RUNS) == 10 and t1[1008.0] == 163 and t1[1.7] == 137
    assert [r.published for r in P.KORTHIKANTI_TABLE5_RUNS if r.metric == "mfu"] == [0.415, 0.514, 0.560, 0.563]
    assert all(r.source for r in P.CALIBRATION_RUNS + P.VALIDATION_RUNS)


@pytest.mark.parametrize("run", P.KORTHIKANTI_TABLE5_RUNS + P.MEGATRON_TABLE1_RUNS,
                         ids=lambda r: f"{r.label} {r.metric}")
def test_megatron_and_korthikanti_within_ten_percent(run):
    st = run.step()
    assert st.feasible, st.reason
    assert abs(run.error) <= TOLERANCE, f"{run.label}: model {run.predicted:.4g} vs published {run.published:.4g}"


def test_calibration_and_validation_sets_are_disjoint():
    cal = {r.label for r in P.CALIBRATION_RUNS}
    assert cal.isdisjoint(r.label for r in P.VALIDATION_RUNS)
    assert all(r.role == "calibration" for r in P.CALIBRATION_RUNS)
    assert all(r.role == "validation" for r in P.VALIDATION_RUNS)
    assert len(P.VALIDATION_RUNS) >= 8


def test_constants_are_the_calibration_fit():
    # A local check of the grid fit: no neighbour of the constants (one fine step each way) fits better.
    c = P.CALIBRATION
    e, eh, w, h, r = c.efficiency_max, c.efficiency_max_h100, c.half_width, c.half_hidden, c.fp8_matmul_speedup
    best, loss = P.calibrate(e_grid=[e - 0.01, e, e + 0.01], eh_grid=[eh - 0.01, eh, eh + 0.01],
                             w_grid=[max(w - 25, 0), w, w + 25], h_grid=[h - 125, h, h + 125],
                             r_grid=[r - 0.01, r, r + 0.01])
    assert best == c and loss > 0
    assert (P.COMPUTE_EFFICIENCY_MAX, P.COMPUTE_EFFICIENCY_MAX_H100, P.COMPUTE_HALF_WIDTH,
            P.COMPUTE_HALF_HIDDEN) == (e, eh, w, h)
    assert P.calibrate() == (best, loss)  # the default grids find the same point


def test_each_generation_has_its_own_efficiency_ceiling():
    """One E_max per GPU generation, each fitted on its own runs. With a shared one (the fit forced to a single
    value) every BF16 H100 calibration run comes out optimistic, which is why the two are apart; apart, the H100
    runs reach a smaller share of their measured matmul ceiling than the A100 runs (0.81 against 0.88)."""
    c = P.CALIBRATION
    assert c.efficiency_max_h100 < c.efficiency_max
    assert c.efficiency_max_for(hw.H100_SXM) == c.efficiency_max_h100
    assert c.efficiency_max_for(hw.A100_SXM_80GB) == c.efficiency_max
    assert all(c.efficiency_max_for(a) == c.efficiency_max_h100 for a in (hw.H800_SXM, hw.H200_SXM, hw.B200))
    assert c.for_accelerator(hw.A100_SXM_80GB).efficiency_max == c.efficiency_max
    assert P.compute_efficiency(m.LLAMA3_70B, 4) / P.compute_efficiency(m.LLAMA3_70B, 4, accelerator=hw.A100_SXM_80GB) \
        == pytest.approx(c.efficiency_max_h100 / c.efficiency_max)
    scaled = c.scaled(0.5)
    assert (scaled.efficiency_max, scaled.efficiency_max_h100) == (c.efficiency_max / 2, c.efficiency_max_h100 / 2)
    grid = np.round(np.arange(0.60, 1.0001, 0.01), 2)
    shared = min((P.calibrate(e_grid=[e], eh_grid=[e], w_grid=[c.half_width], h_grid=[c.half_hidden],
                              r_grid=[c.fp8_matmul_speedup]) for e in grid), key=lambda x: x[1])[0]
    h100 = [r for r in P.CALIBRATION_RUNS if r.cluster.accelerator is hw.H100_SXM and r.dtype == "bf16"]
    assert len(h100) == 3 and all(r.points(shared) > 0 for r in h100)
    assert sum(abs(r.points(c)) for r in h100) < sum(abs(r.points(shared)) for r in h100)
    assert c.efficiency_max_for("A100 SXM 80GB") == c.efficiency_max
    with pytest.raises(ValueError, match="accelerator"):
        c.efficiency_max_for("H100")


def test_fp8_constant_is_fitted_on_the_speedup_over_the_bf16_twin():
    fp8 = [r for r in P.CALIBRATION_RUNS if r.dtype == "fp8"]
    assert len(fp8) == 1
    with pytest.raises(ValueError, match="BF16 twin"):
        P.calibrate(fp8, e_grid=[0.84], w_grid=[25], h_grid=[750])


def _points():
    return {r.label: r.points() for r in P.VALIDATION_RUNS if r.metric != "hfu"}


def test_llama3_table4_targets():
    """Llama 3 405B, Table 4 (validation). Targets: rows 1-2 within 3 MFU points, the CP16 row within 5. Met
    (+2.6, -2.9, +1.3 points) with the published layouts and v = 2 chunks per GPU assumed. The 8,192-GPU
    layout is over capacity in the memory model (Meta balanced its stages' memory in ways the paper describes
    only in outline), so that row is compared with the memory check off, and says so."""
    pts = _points()
    assert abs(pts["Llama 3 405B, 8,192 H100"]) <= 0.03
    assert abs(pts["Llama 3 405B, 16,384 H100"]) <= 0.03
    assert abs(pts["Llama 3 405B, 16,384 H100, CP 16, 131,072 tokens"]) <= 0.05
    assert 0.020 < pts["Llama 3 405B, 8,192 H100"] < 0.030 and -0.030 < pts["Llama 3 405B, 16,384 H100"] < -0.025
    runs = {r.label: r for r in P.OTHER_RUNS}
    assert abs(runs["MT-NLG 530B, 2,240 A100 (DP 8)"].error) <= TOLERANCE
    assert runs["Llama 3 405B, 16,384 H100"].memory_verdict() == "fits"
    assert runs["Llama 3 405B, 8,192 H100"].memory_verdict().startswith("does not fit")


def test_megascale_targets():
    """MegaScale's Megatron-LM baseline, 175B on A100 at a fixed batch (validation). Target: within 3 points
    each. Missed at every size: +4.6, +3.7, +7.0 and +7.0 points at 3,072, 6,144, 8,192 and 12,288 GPUs. Two
    things the model cannot reconcile, pinned with their measured sizes: (1) at 3,072 GPUs that baseline ran the
    same 175B model 2.7 MFU points *below* NVIDIA's own Selene run of it (Korthikanti et al., Table 5, a
    calibration run), where the model, with more recomputation and bubble on Selene's side, puts it 0.7 points
    above: a 3.4-point disagreement between the two sources that no compute-efficiency constant can remove,
    since both runs share it; (2) from 3,072 to 12,288 GPUs the published MFU falls 7.5 points, the model's 5.1
    (more data-parallel and bubble time): something that grows with scale in that baseline is not modelled."""
    pts = {int(k.split(", ")[1].split()[0].replace(",", "")): v for k, v in _points().items()
           if k.startswith("MegaScale")}
    assert 0.041 < pts[3072] < 0.051 and 0.032 < pts[6144] < 0.042
    assert 0.065 < pts[8192] < 0.075 and 0.065 < pts[12_288] < 0.075
    assert all(v > 0.03 for v in pts.values())  # optimistic throughout, beyond the target
    from atscale import accuracy
    gap = accuracy.megascale_against_selene()
    assert gap.published == pytest.approx(-0.027, abs=0.0005)  # 48.7 % against 51.4 %
    assert gap.model == pytest.approx(0.007, abs=0.001)
    assert gap.model - gap.published > 0.03  # more than the target by itself
    drops = accuracy.megascale_drops()
    assert (drops.published, drops.model) == pytest.approx((0.075, 0.051), abs=0.001)


def test_megascale_target_conflicts_with_the_selene_calibration_run():
    """Why the MegaScale target is out of reach for this model without tuning to validation runs: lowering the
    A100 efficiency until the 12,288-GPU row is within 3 points puts NVIDIA's own Selene run of the same 175B
    model (a calibration run) more than 3 points pessimistic, since the two errors move together."""
    selene = next(r for r in P.CALIBRATION_RUNS if r.label == "GPT-3 175B (MFU)")
    largest = P.MEGASCALE_RUNS[-1]
    for f in np.arange(0.80, 1.0001, 0.01):
        cal = dataclasses.replace(P.CALIBRATION, efficiency_max=P.CALIBRATION.efficiency_max * f)
        if largest.points(cal) <= 0.03:
            assert selene.points(cal) < -0.03
            break
    else:
        raise AssertionError("no A100 efficiency in the range brings the 12,288-GPU row within 3 points")


def test_validation_median_and_worst():
    """Across every end-to-end validation run (the HFUs excluded: same runs as calibration MFUs). Targets:
    median |error| <= 3 MFU points, worst <= 6. The median holds (1.5); the worst is MegaScale at 8,192 and
    12,288 GPUs at 7.0 points (see test_megascale_targets), the only runs beyond 6."""
    pts = _points()
    assert len(pts) >= 12 and sum(r.cluster.accelerator.name.startswith("H100") for r in P.VALIDATION_RUNS) >= 12
    assert np.median(np.abs(list(pts.values()))) == pytest.approx(0.015, abs=0.001)
    beyond = {k for k, v in pts.items() if abs(v) > 0.06}
    assert beyond == {"MegaScale 175B (Megatron-LM), 8,192 A100", "MegaScale 175B (Megatron-LM), 12,288 A100"}
    assert max(abs(v) for v in pts.values()) < 0.075
    h100 = [v for k, v in pts.items() if "H100" in k]
    assert max(abs(v) for v in h100) < 0.05  # every H100 run within 5 points


@pytest.mark.parametrize("run", P.H100_RUNS, ids=lambda r: r.label)
def test_h100_runs_are_not_refused_and_land_within_six_points(run):
    assert run.memory_verdict() == "fits", run.memory_verdict()  # a layout that ran is never refused
    assert abs(run.points()) <= 0.06


def test_fp8_speeds_a_step_up_by_what_it_really_does():
    """FP8 matmuls at the fitted rate, the rest at its own: the model's step speedups lie in 1.2-1.5x
    (published 1.32-1.53x), not the datasheet's 2x."""
    runs = {r.label: r for r in P.H100_RUNS}
    for label, r in runs.items():
        if r.dtype == "fp8":
            bf16 = runs[label.replace("FP8", "BF16")]
            speedup = bf16.step().total / r.step().total
            assert 1.2 < speedup < 1.5, (label, speedup)
            assert 1.3 < bf16.published / r.published < 1.55


# --- search ----------------------------------------------------------------------------------------
def test_search_ranks_feasible_by_throughput_and_keeps_the_infeasible():
    r = P.search(m.LLAMA3_70B, EX.cluster, 1024, seq_length=8192)
    f = r.table["feasible"]
    n = r.feasible_count
    assert f[:n].all() and not f[n:].any()
    tps = r.table["tokens_per_second"][:n]
    assert np.all(np.diff(tps) <= 0)
    assert all(r.table["reason"][n:] != "")
    assert "does not fit" in r.reasons()
    best = P.step_time(m.LLAMA3_70B, EX.cluster, r.best(), seq_length=8192)
    assert best.tokens_per_second == pytest.approx(tps[0], rel=1e-12)
    mine = P.step_time(m.LLAMA3_70B, EX.cluster, EX.plan, seq_length=8192)
    assert best.tokens_per_second >= mine.tokens_per_second


def test_search_llama70b_16384_h100_covers_every_layout():
    r = P.search(m.LLAMA3_70B, _h100(16_384), 2048, seq_length=8192)
    assert len(r) > 10_000 and r.feasible_count > 100
    assert set(np.unique(r.table["tp"])) == {1, 2, 4, 8, 16}


# --- helpers ---------------------------------------------------------------------------------------
def test_amdahl():
    assert P.amdahl_speedup(0.05, 1024) == pytest.approx(19.6, abs=0.05)
    assert P.amdahl_speedup(0, 8) == 8


def test_rank_groups_megatron_order():
    tp, dp, pp, node = P.rank_groups(Plan(tp=8, pp=4, dp=32))
    assert list(tp[:9]) == [0, 1, 2, 3, 4, 5, 6, 7, 0] and dp[8] == 1 and pp[256] == 1
    assert np.all(node[:8] == 0)  # a TP group is one node


# --- simulated schedules ---------------------------------------------------------------------------
@pytest.mark.parametrize("p, m_, schedule, v", [(8, 32, "1f1b", 1), (8, 32, "gpipe", 1), (8, 32, "interleaved", 2),
                                                 (4, 8, "interleaved", 4), (4, 3, "1f1b", 1), (6, 12, "interleaved", 3)])
def test_simulated_schedule_measures_the_bubble_formula(p, m_, schedule, v):
    t = P.pipeline_timeline(p, m_, schedule, v)
    assert t.bubble == pytest.approx(P.bubble_fraction(p, m_, v), rel=1e-12)
    assert len(t.start) == 2 * p * m_ * v


def test_simulated_memory_gpipe_holds_all_1f1b_at_most_p():
    assert list(P.pipeline_timeline(4, 8, "gpipe").peak_in_flight()) == [8, 8, 8, 8]
    assert list(P.pipeline_timeline(4, 8, "1f1b").peak_in_flight()) == [4, 3, 2, 1]
    first = P.pipeline_timeline(8, 32, "interleaved", 2).peak_in_flight()[0]
    assert first == pytest.approx(M.in_flight_micro_batches(8, virtual_stages=2))
    with pytest.raises(ValueError, match="multiple"):
        P.pipeline_timeline(4, 6, "interleaved", 2)


# --- figures and explorers -------------------------------------------------------------------------
def test_figures_draw():
    from atscale import plots

    for fig in (plots.pipeline_schedule_chart(), plots.rank_map_chart(colour_by="dp"), plots.validation_chart(),
                plots.step_breakdown_chart(P.step_time(EX.model, EX.cluster, EX.plan))):
        assert fig.axes
    with pytest.raises(ValueError, match="colour_by"):
        plots.rank_map_chart(colour_by="xx")


def test_plan_explorer_shows_infeasible_as_such():
    from atscale import widgets

    e = widgets.plan_explorer()
    assert e.error is None and "MFU" in e.summary_text
    e.update(dp=16)
    assert e.error is None and e.summary_text.startswith("Infeasible: TP x CP x PP x DP") and e.image.value
    e.update(dp=32, zero_stage=0, pp=1)
    assert e.summary_text.startswith("Infeasible") or "MFU" in e.summary_text
    e.update(pp=4, micro_batch=8, recompute="none", sequence_parallel=False)
    assert e.summary_text.startswith("Infeasible: does not fit")
    e.update(follows="none")  # DP would follow TP (and the global batch then refuse DP=256 first)
    e.update(sequence_parallel=True, tp=1)
    assert e.error is not None and "tp > 1" in e.error  # a Plan that cannot exist: the library's ValueError


def test_pipeline_and_rank_map_explorers():
    from atscale import widgets

    e = widgets.pipeline_explorer()
    e.update(schedule="interleaved", virtual_stages=2)
    assert e.error is None
    e.update(micro_batches=7)
    assert e.error is not None and "multiple" in e.error
    r = widgets.rank_map_explorer()
    r.update(colour_by="dp", tp=4)
    assert r.error is None  # 4 x 4 x 32 = 512 GPUs: a smaller grid


def test_explorer_figures_refuse_what_they_cannot_draw():
    from atscale import plots
    from atscale.widgets import parallelism as wp

    step = plots.StepBreakdownFigure()
    with pytest.raises(ValueError, match="StepTime"):
        step.png(P.pipeline_timeline(4, 8))
    many = P.evaluate(EX.model, EX.cluster, tp=8, pp=4, dp=32, micro_batch=np.array([1, 2]), global_batch=1024)
    with pytest.raises(ValueError, match="one layout"):
        step.png(many)
    with pytest.raises(ValueError, match="Timeline"):
        plots.PipelineScheduleFigure().png(P.step_time(EX.model, EX.cluster, EX.plan))
    with pytest.raises(ValueError, match="more rows"):
        plots.PipelineScheduleFigure(max_stages=4).png(P.pipeline_timeline(8, 8))
    rank = plots.RankMapFigure()
    with pytest.raises(ValueError, match="view must be"):
        rank.png(EX.plan)
    with pytest.raises(ValueError, match="four arrays"):
        rank.png((EX.plan, "pp", P.rank_groups(Plan(tp=8, pp=4, dp=16)), 8))
    with pytest.raises(ValueError, match="colour_by"):
        rank.png((EX.plan, "xx", P.rank_groups(EX.plan), 8))
    with pytest.raises(ValueError, match="colour_by"):
        wp.rank_map_view(colour_by="xx")


def test_plan_explorer_figure_draws_an_infeasible_layout_without_axes():
    from atscale import plots

    fig = plots.StepBreakdownFigure()
    bad = P.step_time(EX.model, EX.cluster, dataclasses.replace(EX.plan, dp=16))
    assert not bad.feasible and fig.layout(bad) == ("infeasible",) and not fig.ax.axison
    good = P.step_time(EX.model, EX.cluster, EX.plan)
    kind, top = fig.layout(good)
    assert kind == "feasible" and fig.ax.axison and good.total * 1.02 <= top <= good.total * 1.02 * 1.5


def test_pipeline_figure_numbers_passes_only_when_they_fit():
    from atscale import plots

    fig = plots.PipelineScheduleFigure()
    small, large = P.pipeline_timeline(2, 4), P.pipeline_timeline(8, 32)
    fig.png(small)
    assert sum(len(m.get_xdata()) for m in fig.numbers if m.get_visible()) == small.start.size == 16
    assert [t.get_visible() for t in fig.stage_labels[:3]] == [True, True, False]
    fig.png(large)
    assert not any(t.get_visible() for t in fig.numbers) and sum(b.get_visible() for b in fig.idle) == 8
    assert fig.ax.get_xlim()[1] >= large.makespan


def test_rank_map_of_a_large_layout_draws_sixteen_readable_rows_and_says_which():
    """TP 8 x PP 16 x DP 128 is 2,048 nodes, 128 rows of 16: drawn whole, each row would be thinner than the
    lines between nodes. Coloured by stage, every 8th row is drawn, so all 16 stages appear; coloured by
    data-parallel replica, the first 16 rows (two whole stages, every replica), whose colours the rest repeat."""
    from atscale.plots.parallelism import _RankGrid

    plan = Plan(tp=8, pp=16, dp=128)
    groups = P.rank_groups(plan)
    by_stage = _RankGrid(plan, "pp", groups, 8)
    assert by_stage.rows == 128 and by_stage.shown_rows == 16 and by_stage.stride == 8
    assert sorted(set(by_stage.grid[:, 0].astype(int))) == list(range(16))  # one row per stage
    assert "every 8th row" in by_stage.grid_line() and "2,048 of 16,384 GPUs" in by_stage.grid_line()
    assert by_stage.yticks()[1][:3] == ["1", "9", "17"] and len(by_stage.outline[0]) == 16
    by_replica = _RankGrid(plan, "dp", groups, 8)
    assert by_replica.stride == 1 and by_replica.shown_rows == 16 and by_replica.repeats
    assert sorted(set(by_replica.grid.ravel().astype(int))) == list(range(128))
    assert "first 16 rows" in by_replica.grid_line() and "the rest repeat them" in by_replica.grid_line()
    assert len(by_replica.outline[0]) == 128  # GPU 0's whole DP group is drawn
    small = _RankGrid(EX.plan, "pp", P.rank_groups(EX.plan), 8)
    assert small.shown_rows == small.rows == 8 and small.yticks() == ([], []) and "Too many" not in small.grid_line()
    four = _RankGrid(Plan(tp=2, pp=2, dp=1), "tp", P.rank_groups(Plan(tp=2, pp=2, dp=1)), 8)
    assert four.idle and np.isnan(four.grid).sum() == 4 and four.slots.all()  # one node, half of it idle


def test_rank_map_figure_keeps_few_backgrounds():
    from atscale import plots
    from atscale.widgets import parallelism as wp

    fig = plots.RankMapFigure()
    for colour_by in ("tp", "pp", "dp"):
        for dp in (1, 2, 4, 8, 16, 32, 64, 128):
            fig.png(wp.rank_map_view(8, 16, dp, colour_by))
    assert len(fig._backgrounds) <= 24


def test_pipeline_simulation_refuses_what_it_cannot_finish():
    import time

    start = time.monotonic()
    with pytest.raises(ValueError, match="micro_batches=1000000000"):
        P.pipeline_timeline(4, 10**9)
    with pytest.raises(ValueError, match="backward_ratio=nan"):
        P.pipeline_timeline(4, 8, backward_ratio=float("nan"))
    with pytest.raises(ValueError, match="pp=True"):
        P.pipeline_timeline(True, 8)
    assert time.monotonic() - start < 1.0


def test_search_on_a_cluster_whose_node_a_layout_does_not_divide():
    """24 GPUs admit tp*pp = 3 or 6, which do not divide an 8-GPU node: their data-parallel groups
    straddle nodes and are costed on the NICs (this once raised a fractional-rank error)."""
    cluster = hw.Cluster.of_gpus(hw.DGX_H100, 24, hw.FABRICS["InfiniBand NDR"])
    result = P.search(m.LLAMA3_8B, cluster, 48)
    assert type(result).__name__ == "SearchResult"


# --- the H100-era sections of the chapter --------------------------------------------------------
def test_stage_loads_agree_with_stage_layers():
    for l, p, v in ((126, 16, 1), (126, 16, 2), (126, 9, 7), (80, 4, 1), (80, 4, 3), (96, 8, 12)):
        for acc in (False, True):
            loads = P.stage_loads(l, p, v, account_for_embedding=acc, account_for_loss=acc)
            sl = P.stage_layers(l, p, v, account_for_embedding=acc, account_for_loss=acc)
            assert loads.shape == (p,) and loads.sum() == l + 2 * acc
            assert (loads[0] - acc, loads[-1] - acc) == (sl.first, sl.last)
            if p > 2:
                assert loads[1:-1].max() == sl.middle
    assert list(P.stage_loads(126, 16, 2, account_for_embedding=True, account_for_loss=True)) == [8.0] * 16
    with pytest.raises(ValueError, match="chunks exceed"):
        P.stage_loads(8, 4, 3)


def test_new_figures_draw_and_refuse_bad_input():
    from atscale import plots

    st = {"BF16": P.step_time(EX.model, EX.cluster, EX.plan),
          "FP8": P.step_time(EX.model, EX.cluster, EX.plan, dtype="fp8"),
          "too big": P.step_time(EX.model, EX.cluster, dataclasses.replace(EX.plan, pp=1, dp=128, zero_stage=0))}
    assert not st["too big"].feasible
    for fig in (plots.step_comparison_chart(st, title="t"), plots.stage_loads_chart(126, 16, 2),
                plots.cp_exposure_chart([8192, 16384], {"CP 2": [0.1, 0.0]})):
        assert fig.axes
    with pytest.raises(ValueError, match="StepTime"):
        plots.step_comparison_chart({"x": 1.0})
    with pytest.raises(ValueError, match="sequence lengths"):
        plots.cp_exposure_chart([8192, 16384], {"CP 2": [0.1]})
    with pytest.raises(ValueError, match="seq_lengths"):
        plots.cp_exposure_chart([np.nan, 16384], {"CP 2": [0.1, 0.0]})
    with pytest.raises(ValueError, match="exposed"):
        plots.cp_exposure_chart([8192, 16384], {"CP 2": [0.1, np.inf]})


def test_context_parallelism_without_a_fused_kernel_is_refused_in_a_search():
    # A vectorised search with flash_attention=False used to fail inside the reasons (an integer mask).
    r = P.search(m.LLAMA3_70B, EX.cluster, 1024, seq_length=8192, flash_attention=False)
    cp = r.table["cp"] > 1
    assert cp.any() and not r.table["feasible"][cp].any()
    assert all("fused" in x for x in r.table["reason"][cp] if x.startswith("context"))


def test_plan_explorer_covers_cp_precision_overlap_and_balanced_stages():
    from atscale import widgets

    e = widgets.plan_explorer()
    bf16 = e.summary_text
    e.update(dtype="fp8")
    assert "of the FP8 peak" in e.summary_text and e.summary_text != bf16
    e.update(dtype="bf16", tp_overlap=False)
    assert e.error is None and e.summary_text != bf16
    e.update(tp_overlap=True, balanced=True)
    assert e.error is None and "MFU" in e.summary_text
    e.update(balanced=False, cp=2)  # DP follows (issue 35): 8 x 2 x 4 x 16 = 1,024 GPUs
    assert e.values["dp"] == 16 and "MFU" in e.summary_text
    e.update(dp=32)  # DP moved by hand: nothing follows it, and the reader sees why the layout cannot run
    assert e.summary_text.startswith("Infeasible: TP x CP x PP x DP")


# --- one code path for one plan and for arrays ---------------------------------------------------------
def _random_plans(n, seed=7):
    """``n`` random plans that a Plan accepts (it refuses some combinations itself, e.g. a global batch that is
    not a whole number of micro-batches)."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < n:
        try:
            plan = _random_plan(rng)
        except ValueError:
            continue
        made += 1
        yield plan


def _random_plan(rng):
    if True:
        tp, cp = int(rng.choice([1, 2, 4, 8, 16])), int(rng.choice([1, 2, 4, 8]))
        pp = int(rng.choice([1, 2, 3, 4, 8, 16]))
        dp = max(1, 1024 // (tp * cp * pp)) * int(rng.choice([1, 1, 1, 2]))  # some do not use 1,024 GPUs
        sched = str(rng.choice(["gpipe", "1f1b", "interleaved"]))
        sp = bool(rng.integers(2)) and tp > 1
        return Plan(tp=tp, cp=cp, pp=pp, dp=dp, micro_batch=int(rng.choice([1, 2, 4])),
                   global_batch=int(rng.choice([512, 1024, 2048, 1000])), zero_stage=int(rng.integers(4)),
                   schedule=sched, virtual_stages=int(rng.choice([2, 3, 5])) if sched == "interleaved" else 1,
                   recompute=str(rng.choice(["none", "selective", "full"])), sequence_parallel=sp,
                   account_for_embedding=bool(rng.integers(2)), account_for_loss=bool(rng.integers(2)),
                   tp_overlap=bool(rng.integers(2)), reshard_after_forward=bool(rng.integers(2)),
                   shard_group=int(rng.choice([8, 16])) if rng.integers(3) == 0 else None)


@pytest.mark.parametrize("dtype,flash", [("bf16", True), ("fp8", True), ("bf16", False)])
def test_one_plan_path_equals_the_vectorised_path(dtype, flash):
    """step_time runs the cost terms on Python numbers, evaluate on arrays: the same numbers, reasons and
    verdicts for 300 random plans (feasible and not) of every field."""
    plans = list(_random_plans(300, seed={"bf16": 1, "fp8": 2}[dtype] + 10 * (not flash)))
    kw = dict(seq_length=8192, dtype=dtype, flash_attention=flash, dp_overlap=0.6)
    arrays = {f: np.array([getattr(p, f) if getattr(p, f) is not None else 0 for p in plans], dtype=object)
              for f in P._FIELDS}
    arrays = {f: (a.astype(bool) if isinstance(a[0], (bool, np.bool_)) else a.astype(str)
                  if isinstance(a[0], str) else a.astype(int)) for f, a in arrays.items()}
    r = P.evaluate(m.LLAMA3_70B, EX.cluster, **arrays, **kw)
    feasible = 0
    for i, plan in enumerate(plans):
        one = P.step_time(m.LLAMA3_70B, EX.cluster, plan, **kw)
        assert one.feasible == r.feasible[i] and one.reason == r.reason[i], plan
        assert one.memory_status == r.memory_status[i]
        if one.feasible:
            feasible += 1
            for name in P.PARTS + ("hardware_flops_per_step", "model_flops_per_step", "memory_total"):
                assert getattr(one, name) == pytest.approx(getattr(r, name)[i], rel=1e-9, abs=1e-15), (plan, name)
    assert feasible >= 10  # and the rest agree on their reasons
