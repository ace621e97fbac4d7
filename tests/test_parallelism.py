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
    runs reach a smaller share of their measured matmul ceiling than the A100 runs (0.79 against 0.88)."""
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


def test_llama3_table4_is_a_known_miss_with_its_error_pinned():
    """Llama 3 405B, Table 4 (validation). Targets: rows 1-2 within 3 MFU points, the CP16 row within 5. MISSED,
    and pinned as a known miss: with the layout Llama 3's sec. 3.3.2 describes (v = 8 chunks of one layer slot,
    context parallelism by an exposed all-gather of K and V, on the tiered network of its sec. 3.3.1) the model is
    optimistic by +9.0, +7.4 and +9.2 points (52.0 %, 48.4 % and 47.2 % against 43 %, 41 % and 38 %), with the
    pipeline's sends asynchronous as sec. 3.3.2 states (+7.2, +5.8 and +8.3 while every send was exposed; +8.3, +6.8
    and +9.3 before the H100 recipes' scripts and the refit, +8.6, +7.5 and +9.2 before the network's 7:1 taper above its pods was modelled). The earlier "+2.6, -2.9, +1.3" rested on v = 2 chunks,
    which the paper's text rules out. No constant is retuned here: the H100 ceiling was fitted on calibration runs
    only, and these rows no longer validate it (the step-time model's optimism is the next issue's)."""
    pts = _points()
    # +8.3, +6.8, +9.3 before the H100 recipes took their scripts' pipeline overlap and the H100 ceiling was refit on
    # them (0.81 -> 0.79; November 2026)
    # 0.072, 0.058, 0.083 before the records took the paper's asynchronous pipeline sends (pp_overlap; November 2026)
    assert pts["Llama 3 405B, 8,192 H100"] == pytest.approx(0.090, abs=0.002)
    assert pts["Llama 3 405B, 16,384 H100"] == pytest.approx(0.074, abs=0.002)
    assert pts["Llama 3 405B, 16,384 H100, CP 16, 131,072 tokens"] == pytest.approx(0.092, abs=0.002)
    assert all(pts[k] > 0.05 for k in pts if k.startswith("Llama 3 405B"))  # optimistic, beyond both targets
    runs = {r.label: r for r in P.OTHER_RUNS}
    # Between the two CP-1 rows the model loses about 3.5 points of MFU (more bubble on half the micro-batches per
    # replica, and the data-parallel traffic across the pods' taper), Meta measured 2.
    drop = runs["Llama 3 405B, 8,192 H100"].mfu_pair()[1] - runs["Llama 3 405B, 16,384 H100"].mfu_pair()[1]
    assert drop == pytest.approx(0.036, abs=0.002)  # 0.035 while every pipeline send was exposed
    assert abs(runs["MT-NLG 530B, 2,240 A100 (DP 8)"].error) <= TOLERANCE
    # At v = 8 every published layout fits, the 8,192-GPU one within the margin (tight): no memory check is off.
    for label, run in runs.items():
        if label.startswith("Llama 3 405B"):
            assert run.memory_check and run.memory_verdict() == "fits"
            assert run.plan.virtual_stages == 8
    assert runs["Llama 3 405B, 8,192 H100"].step().memory_status == "tight"


def test_llama3_chunks_are_read_from_the_paper():
    """Llama 3 sec. 3.3.2: one layer fewer on the first and the last stage, the first chunk of the first stage only
    the embedding, the last chunk of the last stage only the output layer and the loss. With equal chunks that is
    one slot per chunk: 126 + 2 = 128 = 16 x 8, the only v for which those two chunks hold nothing else."""
    slots = 126 + 2
    for v in (1, 2, 4, 8):
        per_chunk = slots / (16 * v)
        assert (per_chunk == 1) == (v == 8)  # an embedding-only first chunk needs one slot per chunk
    loads = P.stage_loads(126, 16, 8, account_for_embedding=True, account_for_loss=True)
    assert list(loads) == [8.0] * 16  # 8 slots on every stage: the embedding + 7 layers, 8 layers, 7 layers + loss
    sl = P.stage_layers(126, 16, 8, account_for_embedding=True, account_for_loss=True)
    assert (sl.first, sl.middle, sl.last) == (7, 8, 7)
    with pytest.raises(ValueError, match="chunks exceed"):  # without the two slots 128 chunks exceed 126 layers
        P.stage_layers(126, 16, 8)
    run = P.OTHER_RUNS[3]
    assert run.plan.cp_algorithm == "all-gather" and run.step().cp_comm > 0  # exposed, as the paper says


def test_megascale_targets():
    """MegaScale's Megatron-LM baseline, 175B on A100 at a fixed batch (validation). Target: within 3 points
    each. Missed at every size: +4.6, +3.7, +7.0 and +7.0 points at 3,072, 6,144, 8,192 and 12,288 GPUs. Two
    things the model cannot reconcile, pinned with their measured sizes: (1) at 3,072 GPUs that baseline ran
    2.7 MFU points *below* NVIDIA's Selene run of a 175B GPT of the same depth and width (Korthikanti et al.,
    Table 5, a calibration run) -- not the same model or job: 128 heads and a 64,000-token vocabulary with DP 48
    on 3,072 GPUs, against 96 heads and 51,200 on 64 GPUs, and the records say so -- where the model, which charges
    those differences and has more recomputation and bubble on Selene's side, puts it 0.7 points above: a
    3.4-point disagreement between the two sources that no compute-efficiency constant can remove, since both runs
    share it; (2) from 3,072 to 12,288 GPUs the published MFU falls 7.5 points, the model's 5.1 (more
    data-parallel and bubble time): something that grows with scale in that baseline is not modelled (MegaScale,
    sec. 6, names stragglers, about 0.5 % of its machines running slow)."""
    ms, selene = P.MEGASCALE_RUNS[0].model, next(r for r in P.CALIBRATION_RUNS if r.label == "GPT-3 175B (MFU)")
    assert (ms.num_heads, ms.vocab_size, P.MEGASCALE_RUNS[0].plan.dp) == (128, 64_000, 48)
    assert (selene.model.num_heads, selene.model.vocab_size, selene.plan.dp, selene.plan.gpus) == (96, 51_200, 1, 64)
    assert (ms.num_layers, ms.hidden_size) == (selene.model.num_layers, selene.model.hidden_size)
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
    A100 efficiency until the 12,288-GPU row is within 3 points puts NVIDIA's Selene run of a 175B model of the same
    depth and width (a calibration run) more than 3 points pessimistic, since the two errors move together."""
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
    median |error| <= 3 MFU points, worst <= 6. The median holds (1.6); the worst is MISSED: Llama 3's three rows
    (+9.0, +7.4 and +9.2 points, see test_llama3_table4_is_a_known_miss_with_its_error_pinned) and MegaScale at 8,192
    and 12,288 GPUs at 7.0 points (see test_megascale_targets) are the only runs beyond 6."""
    pts = _points()
    assert len(pts) >= 12 and sum(r.cluster.accelerator.name.startswith("H100") for r in P.VALIDATION_RUNS) >= 12
    assert np.median(np.abs(list(pts.values()))) == pytest.approx(0.016, abs=0.001)  # 0.015 before the refit
    beyond = {k for k, v in pts.items() if abs(v) > 0.06}
    # Llama 3's 16,384-GPU row was inside 6 (+5.8 points) from the H100 recipes' pipeline overlap and refit until its
    # own record took the paper's asynchronous pipeline sends (+7.4; November 2026)
    assert beyond == {"MegaScale 175B (Megatron-LM), 8,192 A100", "MegaScale 175B (Megatron-LM), 12,288 A100",
                      "Llama 3 405B, 8,192 H100", "Llama 3 405B, 16,384 H100",
                      "Llama 3 405B, 16,384 H100, CP 16, 131,072 tokens"}
    # Llama 3's CP16 row; 0.083 before its record took the paper's asynchronous pipeline sends, 0.092 before the H100
    # recipes took their scripts' pipeline overlap and the refit
    assert max(abs(v) for v in pts.values()) == pytest.approx(0.092, abs=0.002)
    nvidia = [v for k, v in pts.items() if "H100" in k and not k.startswith("Llama 3 405B")]
    assert max(abs(v) for v in nvidia) < 0.05  # every NVIDIA H100 run within 5 points


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


def test_context_parallel_bytes_are_each_sources_formula():
    """Bytes one GPU sends per layer per micro-batch in the forward pass, against each source's own count."""
    from atscale.plan import CP_ALGORITHMS

    s, b2 = 32_768, P.ACTIVATION_BYTES
    mdl = m.LLAMA3_70B  # 64 query heads, 8 key-value heads of 128
    g, d, h = mdl.kv_heads, mdl.head_dim, mdl.hidden_size
    for tp, cp in ((8, 4), (4, 2), (1, 16)):
        local_kv = s / cp * 2 * g * d / tp * b2
        # ring (Liu et al. 2023, sec. 3): cp - 1 blocks of keys and values, each a rank's N/cp tokens
        ring = P.context_parallel_bytes(mdl, tp, cp, seq_length=s)
        assert ring == pytest.approx((cp - 1) * local_kv, rel=1e-12)
        # all-gather (Llama 3 sec. 3.3.2): an all-gather of the whole sequence's keys and values sends (n-1)/n
        ag = P.context_parallel_bytes(mdl, tp, cp, seq_length=s, cp_algorithm="all-gather")
        assert ag == pytest.approx(collectives.bytes_sent_per_rank("all-gather", cp * local_kv, cp), rel=1e-12)
        assert ag == pytest.approx(ring, rel=1e-12)  # the same bytes; what differs is what hides
        # Ulysses with GQA: queries and output h wide, keys and values 2 g d; (cp - 1)/cp of the N/cp tokens' worth
        uly = P.context_parallel_bytes(mdl, tp, cp, seq_length=s, cp_algorithm="ulysses")
        assert uly == pytest.approx((cp - 1) / cp * s / cp * (2 * h + 2 * g * d) / tp * b2, rel=1e-12)
    # Jacobs et al. (2023), DeepSpeed Ulysses, sec. 3.2: with multi-head attention the two all-to-alls carry an
    # aggregate 3Nh + Nh = 4Nh, i.e. 4Nh/P per link; a rank keeps 1/P of its own share
    gpt = m.GPT3_175B
    assert gpt.kv_heads == gpt.num_heads and gpt.num_heads * gpt.head_dim == gpt.hidden_size  # multi-head
    n_tok, hid = 2048, gpt.hidden_size
    for p_ in (2, 4, 8):
        uly = P.context_parallel_bytes(gpt, 1, p_, seq_length=n_tok, cp_algorithm="ulysses")
        assert uly == pytest.approx((p_ - 1) / p_ * 4 * n_tok * hid / p_ * b2, rel=1e-12)
    # Ulysses' bytes fall as 1/cp, a ring's grow towards a constant: vectorised over cp
    cps = np.array([2, 4, 8, 16])
    ring, uly = (P.context_parallel_bytes(mdl, 1, cps, seq_length=s, cp_algorithm=a) for a in ("ring", "ulysses"))
    assert np.all(np.diff(ring) > 0) and np.all(np.diff(uly) < 0)
    assert set(CP_ALGORITHMS) == {"ring", "all-gather", "ulysses"}
    with pytest.raises(ValueError, match="cp_algorithm"):
        P.context_parallel_bytes(mdl, 1, 2, cp_algorithm="tree")


def _cp_plan(alg, tp=2, cp=4, **kw):
    dp = EX.cluster.num_gpus // (tp * cp * 4)
    return Plan(tp=tp, cp=cp, pp=4, dp=dp, micro_batch=1, global_batch=dp * 8, zero_stage=1,
                sequence_parallel=tp > 1, cp_algorithm=alg, **kw)


def test_all_gather_cp_is_exposed_and_priced_as_its_collectives():
    """Llama 3's context parallelism: K and V all-gathered before the forward attention and again before the
    backward, their gradients reduce-scattered, all on the critical path (sec. 3.3.2; Transformer Engine's
    AttnFuncWithCPAndKVAllGather). TP 2 x CP 4 fits in a node: flat collectives on NVLink."""
    s = 65_536
    plan = _cp_plan("all-gather")
    st = P.step_time(m.LLAMA3_70B, EX.cluster, plan, seq_length=s, memory_check=False)
    whole = s * 2 * m.LLAMA3_70B.kv_heads * m.LLAMA3_70B.head_dim / plan.tp * P.ACTIVATION_BYTES
    nvlink = collectives._scale_up(EX.cluster.node)
    per_layer = (2 * collectives.collective_time("all-gather", whole, plan.cp, nvlink)
                 + collectives.collective_time("reduce-scatter", whole, plan.cp, nvlink))
    layers = m.LLAMA3_70B.num_layers // plan.pp
    assert st.cp_comm == pytest.approx(plan.micro_batches * layers * per_layer, rel=1e-9)
    ring = P.step_time(m.LLAMA3_70B, EX.cluster, dataclasses.replace(plan, cp_algorithm="ring"), seq_length=s,
                       memory_check=False)
    assert ring.cp_comm < 1e-9 < st.cp_comm  # the ring hides behind 64k tokens' attention; the all-gather cannot
    full = P.step_time(m.LLAMA3_70B, EX.cluster, dataclasses.replace(plan, recompute="full"), seq_length=s,
                       memory_check=False)
    again = collectives.collective_time("all-gather", whole, plan.cp, nvlink)  # the recomputed forward's gather
    assert full.cp_comm == pytest.approx(st.cp_comm + plan.micro_batches * layers * again, rel=1e-9)
    # same work, so the same compute whatever the exchange
    assert st.compute == pytest.approx(ring.compute, rel=1e-12)


def test_ulysses_cp_is_priced_as_two_all_to_alls_each_way():
    s = 65_536
    mdl = m.LLAMA3_70B
    plan = _cp_plan("ulysses")
    st = P.step_time(mdl, EX.cluster, plan, seq_length=s, memory_check=False)
    assert st.feasible
    tokens = s / plan.cp
    per_token = tokens / plan.tp * P.ACTIVATION_BYTES
    qkv = (mdl.num_heads * mdl.head_dim + 2 * mdl.kv_heads * mdl.head_dim) * per_token
    out = mdl.num_heads * mdl.head_dim * per_token
    a2a = [collectives.all_to_all_time(x, plan.cp, EX.cluster, ranks_per_node=plan.cp) for x in (qkv, out)]
    layers = mdl.num_layers // plan.pp
    assert st.cp_comm == pytest.approx(plan.micro_batches * layers * 2 * sum(a2a), rel=1e-9)
    # the bytes of those all-to-alls are context_parallel_bytes'
    sent = sum(collectives.bytes_sent_per_rank("all-to-all", x, plan.cp) for x in (qkv, out))
    assert sent == pytest.approx(P.context_parallel_bytes(mdl, plan.tp, plan.cp, seq_length=s,
                                                          cp_algorithm="ulysses"), rel=1e-12)


def test_ulysses_needs_heads_that_divide_by_cp():
    """Ulysses gives each rank 1/cp of the heads (Jacobs et al. 2023, sec. 3): the query and key-value heads per
    tensor-parallel rank must divide by cp. Llama 3 405B at TP 8 has one key-value head per rank: CP 16 by
    Ulysses is refused with the reason, in the one-plan path and the vectorised one alike."""
    run = P.OTHER_RUNS[3]
    plan = dataclasses.replace(run.plan, cp_algorithm="ulysses")
    st = P.step_time(run.model, run.cluster, plan, seq_length=run.seq_length, optimizer_name=run.optimizer_name)
    assert not st.feasible and "Ulysses CP=16" in st.reason and "1 key-value heads" in st.reason
    assert math.isnan(st.total)
    fields = {f: getattr(plan, f) for f in P._FIELDS}
    r = P.evaluate(run.model, run.cluster, **fields, seq_length=run.seq_length, optimizer_name=run.optimizer_name)
    assert not r.feasible and r.reason == st.reason
    # TP 1 leaves 8 key-value heads per rank: CP 2, 4 and 8 by Ulysses are layouts, CP 16 is not
    for cp, ok in ((2, True), (4, True), (8, True), (16, False)):
        p_ = Plan(tp=1, cp=cp, pp=8, dp=1024 // (8 * cp), micro_batch=1, global_batch=1024 // (8 * cp) * 8,
                  cp_algorithm="ulysses")
        assert P.step_time(m.LLAMA3_70B, EX.cluster, p_, seq_length=65_536, memory_check=False).feasible == ok
    # Ulysses is attention-agnostic: no fused kernel needed; a ring or an all-gather needs one
    for alg, ok in (("ulysses", True), ("ring", False), ("all-gather", False)):
        st = P.step_time(m.LLAMA3_70B, EX.cluster, _cp_plan(alg), seq_length=8192, flash_attention=False,
                         memory_check=False)
        assert st.feasible == ok, st.reason
    # a sequence that does not split: 2 x CP chunks for a ring, CP parts for Ulysses
    odd = 4 * 1000 + 4  # divisible by 4, not by 8
    assert P.step_time(m.LLAMA3_70B, EX.cluster, _cp_plan("ulysses"), seq_length=odd, memory_check=False).feasible
    st = P.step_time(m.LLAMA3_70B, EX.cluster, _cp_plan("ring"), seq_length=odd, memory_check=False)
    assert not st.feasible and "2 x CP" in st.reason
    with pytest.raises(ValueError, match="cp_algorithm='tree' must be one of"):
        Plan(cp=2, cp_algorithm="tree")
    with pytest.raises(ValueError, match="cp_algorithm"):
        P.search(m.LLAMA3_70B, EX.cluster, 1024, cp_algorithm="tree")


def test_a_search_carries_its_cp_algorithm_into_its_plans():
    r = P.search(m.LLAMA3_70B, EX.cluster, 1024, seq_length=32_768, context_parallel=(1, 2, 4),
                 cp_algorithm="all-gather", schedules=("1f1b",), zero_stages=(1,), recomputes=("selective",))
    assert r.best().cp_algorithm == "all-gather"
    i = int(np.flatnonzero(r.table["feasible"] & (r.table["cp"] > 1))[0])
    one = P.step_time(m.LLAMA3_70B, EX.cluster, r.plan(i), seq_length=32_768)
    assert one.total == pytest.approx(r.table["total_s"][i], rel=1e-12) and one.cp_comm > 0


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
    e.update(dp=16)
    assert "MFU" in e.summary_text
    ring = e.summary_text
    e.update(cp_algorithm="all-gather")  # Llama 3's exchange: nothing hidden, a slower step
    assert "MFU" in e.summary_text and e.summary_text != ring
    e.update(cp_algorithm="ulysses")  # TP 8 leaves one key-value head per GPU: Ulysses cannot split it
    assert e.summary_text.startswith("Infeasible: Ulysses CP=2")


# --- one code path for one plan and for arrays ---------------------------------------------------------
def _random_plans(n, seed=7):
    """``n`` random plans that a Plan accepts (it refuses some combinations itself, e.g. a global batch that is
    not a whole number of micro-batches)."""
    rng = np.random.default_rng(seed)
    cp_rng = np.random.default_rng(seed + 1000)  # its own stream: the other fields are drawn as before it existed
    order_rng = np.random.default_rng(seed + 2000)  # likewise for the rank order
    made = 0
    while made < n:
        try:
            plan = _random_plan(rng, cp_rng)
        except ValueError:
            continue
        made += 1
        yield dataclasses.replace(plan, order=(None, "tp-cp-pp-dp", "tp-cp-dp-pp")[int(order_rng.integers(3))])


def _random_plan(rng, cp_rng):
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
                   shard_group=int(rng.choice([8, 16])) if rng.integers(3) == 0 else None,
                   cp_algorithm=str(cp_rng.choice(["ring", "all-gather", "ulysses"])))


def _evaluated(plans, cluster, kw):
    """``evaluate`` on the fields of ``plans`` as arrays (``None`` as 0, or as "" for the rank order)."""
    arrays = {f: np.array([getattr(p, f) if getattr(p, f) is not None else ("" if f == "order" else 0)
                           for p in plans], dtype=object) for f in P._FIELDS}
    arrays = {f: (a.astype(bool) if isinstance(a[0], (bool, np.bool_)) else a.astype(str)
                  if isinstance(a[0], str) else a.astype(int)) for f, a in arrays.items()}
    return P.evaluate(m.LLAMA3_70B, cluster, **arrays, **kw), arrays


def test_one_plan_path_equals_the_vectorised_path_on_a_tiered_fabric():
    """The same on Meta's tiered cluster, where the rank order decides which tier the pipeline's sends and the
    data-parallel groups cross."""
    cluster = hw.Cluster.of_gpus(hw.DGX_H100, 1024, hw.fabric("RoCE 400G (Llama 3 cluster)"))
    plans = list(_random_plans(150, seed=5))
    kw = dict(seq_length=8192, dp_overlap=0.6, memory_check=False)
    r, _ = _evaluated(plans, cluster, kw)
    checked = 0
    for i, plan in enumerate(plans):
        one = P.step_time(m.LLAMA3_70B, cluster, plan, **kw)
        assert one.feasible == r.feasible[i] and one.reason == r.reason[i], plan
        if one.feasible:
            checked += 1
            for name in P.PARTS:
                assert getattr(one, name) == pytest.approx(getattr(r, name)[i], rel=1e-9, abs=1e-15), (plan, name)
    assert checked >= 50


@pytest.mark.parametrize("dtype,flash", [("bf16", True), ("fp8", True), ("bf16", False)])
def test_one_plan_path_equals_the_vectorised_path(dtype, flash):
    """step_time runs the cost terms on Python numbers, evaluate on arrays: the same numbers, reasons and
    verdicts for 300 random plans (feasible and not) of every field."""
    plans = list(_random_plans(300, seed={"bf16": 1, "fp8": 2}[dtype] + 10 * (not flash)))
    kw = dict(seq_length=8192, dtype=dtype, flash_attention=flash, dp_overlap=0.6)
    r, arrays = _evaluated(plans, EX.cluster, kw)
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


# --------------------------------------------------------------------------------------
# FSDP gathers the 16-bit compute copy (parallelism.FSDP_GATHER_BYTES)
def _dp(optimizer_name, zero_stage):
    plan = dataclasses.replace(EX.plan, zero_stage=zero_stage)
    return P.step_time(EX.model, EX.cluster, plan, seq_length=EX.seq_length, optimizer_name=optimizer_name,
                       dp_overlap=0.0, memory_check=False).dp_comm


@pytest.mark.parametrize("zero_stage", [2, 3])
def test_fsdp_gathers_the_compute_copy_of_fp32_weights(zero_stage):
    """adam-fp32 keeps FP32 weights (4 bytes) and gradients (4); megatron-bf16 BF16 weights (2) and FP32 gradient
    buffers (4). Under ZeRO-2/3 both gather the BF16 copy and reduce FP32 gradients, so their data-parallel
    communication is the same; under ZeRO-1 the FP32 layout gathers its FP32 weights, which costs more."""
    assert P.FSDP_GATHER_BYTES == 2.0
    assert M.optimizer("adam-fp32").weights == 4 and M.optimizer("megatron-bf16").weights == 2
    assert _dp("adam-fp32", zero_stage) == pytest.approx(_dp("megatron-bf16", zero_stage), rel=1e-12)
    assert _dp("adam-fp32", 1) > _dp("megatron-bf16", 1) * 1.01


def test_infeasibility_messages_read_only_the_fields_they_are_shared_by():
    """evaluate writes each infeasibility message once per distinct combination of P._MESSAGE_FIELDS and shares it
    among the layouts that have it; a message reading any other layout field would be shared wrongly. Every layout
    field a message's code names must therefore be among them."""
    L = P._plan_layout(Plan(tp=8, pp=4, dp=32, micro_batch=1, global_batch=1024), 0.0)
    layout_fields = set(vars(L))
    for text in P._MESSAGES:
        read = set(text.__code__.co_names) & layout_fields
        assert read <= set(P._MESSAGE_FIELDS), (read - set(P._MESSAGE_FIELDS), text.__code__.co_firstlineno)
    assert set(P._MESSAGE_FIELDS) <= layout_fields
