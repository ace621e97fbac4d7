import dataclasses
import math

import numpy as np
import pytest

from atscale import hardware, jct, memory, models, parallelism
from atscale import reliability as rel
from atscale import units as u
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX


@pytest.fixture(scope="module")
def base():
    return jct.estimate(EX.model, EX.token_budget, EX.cluster, EX.plan)


def test_terms_add_up_and_match_the_composed_modules(base):
    assert base.feasible
    assert base.total == sum(base.parts().values())
    assert sum(base.fractions().values()) == pytest.approx(1.0, rel=1e-12)
    step = parallelism.step_time(EX.model, EX.cluster, EX.plan)
    steps = EX.token_budget / EX.tokens_per_step
    assert base.failure_free == pytest.approx(step.total * steps, rel=1e-12)
    assert base.step_mfu == pytest.approx(step.mfu, rel=1e-12)
    assert base.minimum == pytest.approx(EX.total_flops / EX.cluster.peak("bf16"), rel=1e-12)
    # wall-clock = failure-free / Daly's exact goodput (synchronous checkpoints)
    g = rel.goodput_exact(base.interval, base.checkpoint_stall, base.mtbf, base.restart_time)
    assert base.total == pytest.approx(base.failure_free / g, rel=1e-12)
    assert base.goodput == pytest.approx(g, rel=1e-12)
    assert base.interval == pytest.approx(rel.exact_optimal_interval(base.checkpoint_stall, base.mtbf))
    assert base.checkpoint_stall == pytest.approx(memory.checkpoint_bytes(EX.model) / jct.DEFAULT_WRITE_BANDWIDTH)
    assert base.mtbf == rel.TEXTBOOK_PROFILE.cluster_mtbf(1024)
    assert base.expected_failures == pytest.approx(base.total / base.mtbf)
    assert base.communication == pytest.approx(sum(base.communication_parts.values()))


def test_restart_term_counts_failures_times_expected_restart(base):
    # every failure (Wald: wall-clock / MTBF) costs a restart; restarts hit by a failure are counted in full
    m, r = base.mtbf, base.restart_time
    failures_in_segments = base.expected_failures / math.exp(r / m)
    assert base.restart == pytest.approx(failures_in_segments * m * math.expm1(r / m), rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_property_terms_sum_exactly_over_random_inputs(seed):
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(12):
        gpus = int(8 * 2 ** rng.integers(4, 11))  # 128 .. 8,192
        tokens = float(10 ** rng.uniform(9, 13))
        ck = jct.Checkpoint(strategy=str(rng.choice(["sync", "async"])),
                            write_bandwidth=float(10 ** rng.uniform(9, 12)),
                            host_bandwidth=float(10 ** rng.uniform(9.5, 11)),
                            interval=None if rng.random() < 0.5 else float(10 ** rng.uniform(2, 5)))
        failures = [rel.TEXTBOOK_PROFILE, rel.LLAMA3_PROFILE, None][int(rng.integers(3))]
        plan = Plan(tp=8, pp=int(rng.choice([1, 2, 4])), dp=1, micro_batch=1, global_batch=gpus, zero_stage=1,
                    recompute="selective", sequence_parallel=True)
        plan = dataclasses.replace(plan, dp=gpus // (8 * plan.pp))
        e = jct.estimate(models.LLAMA3_70B, tokens, jct.cluster_of(gpus), plan, checkpoint=ck, failures=failures,
                         restart_time=float(rng.uniform(0, 3600)), dp_overlap=float(rng.random()))
        if not e.feasible:
            continue
        checked += 1
        parts = e.parts()
        assert all(v >= 0 for v in parts.values()), parts
        assert e.minimum <= e.total
        assert e.total == sum(parts.values())
        assert sum(e.hours().values()) == pytest.approx(e.total / u.hour, rel=1e-12)
        assert sum(e.fractions().values()) == pytest.approx(1.0, rel=1e-12)
        assert 0 < e.mfu <= e.step_mfu <= 1 and 0 < e.goodput <= 1
        if failures is not None and ck.strategy == "sync":
            g = rel.goodput_exact(e.interval, e.checkpoint_stall, e.mtbf, e.restart_time)
            assert e.total == pytest.approx(e.failure_free / g, rel=1e-11)
    assert checked >= 6


def test_async_stalls_less_and_rolls_back_further():
    s = jct.estimate(EX.model, EX.token_budget, EX.cluster, EX.plan, checkpoint=jct.SYNC)
    a = jct.estimate(EX.model, EX.token_budget, EX.cluster, EX.plan, checkpoint=jct.ASYNC)
    size = memory.checkpoint_bytes(EX.model)
    assert a.checkpoint_stall == pytest.approx(size / 1024 / jct.DEFAULT_HOST_BANDWIDTH)
    assert a.durable_lag == pytest.approx(s.checkpoint_stall)
    assert a.checkpoint < s.checkpoint and a.total < s.total
    assert a.interval + a.checkpoint_stall >= a.durable_lag  # background writes keep up


def test_no_failures_means_no_reliability_loss_and_no_checkpoints():
    e = jct.estimate(EX.model, EX.token_budget, EX.cluster, EX.plan, failures=None)
    assert e.reliability == 0 and e.goodput == 1 and math.isinf(e.mtbf)
    e2 = jct.estimate(EX.model, EX.token_budget, EX.cluster, EX.plan, failures=None,
                      checkpoint=jct.Checkpoint(interval=3600.0))
    assert e2.checkpoint == pytest.approx(e2.failure_free / 3600.0 * e2.checkpoint_stall)


def test_best_plan_is_searched_and_no_slower_than_the_running_example(base):
    best = jct.estimate(EX.model, EX.token_budget, EX.cluster)
    assert best.plan == parallelism.search(EX.model, EX.cluster, 1024).best()
    assert best.failure_free <= base.failure_free


def test_overlap_only_adds_communication():
    on = jct.estimate(EX.model, EX.token_budget, EX.cluster, jct.tutorial_plan(1024), dp_overlap=1.0)
    off = jct.estimate(EX.model, EX.token_budget, EX.cluster, jct.tutorial_plan(1024), dp_overlap=0.0)
    assert off.communication > on.communication
    assert off.minimum == on.minimum and off.compute_gap == pytest.approx(on.compute_gap)


def test_tutorial_plan_is_tight_on_a_few_nodes():
    e = jct.estimate(EX.model, EX.token_budget, jct.cluster_of(64), jct.tutorial_plan(64))
    assert e.feasible and e.step.memory_status == "tight"
    assert e.step.memory_capacity < e.step.memory_total < e.step.memory_capacity * 1.08
    e = jct.estimate(EX.model, EX.token_budget, jct.cluster_of(32), jct.tutorial_plan(32))
    assert not e.feasible and "does not fit" in e.reason and math.isnan(e.total)
    assert jct.tutorial_plan(1024).global_batch == 1024 and jct.tutorial_plan(8).global_batch == 64


def test_best_plan_is_what_estimate_searches():
    assert jct.best_plan(EX.model, EX.cluster, 1024) == jct.estimate(EX.model, EX.token_budget, EX.cluster).plan
    with pytest.raises(jct.NoFeasibleLayout, match="no feasible layout"):
        jct.best_plan("Llama 3 405B", jct.cluster_of(8), 1024)
    e = jct.estimate("Llama 3 405B", EX.token_budget, jct.cluster_of(8))
    assert not e.feasible and e.reason.startswith("no feasible layout (")
    assert issubclass(jct.NoFeasibleLayout, ValueError)  # a layout function of sweep may raise it


def test_fixed_plan_keeps_the_running_example_settings():
    layout = jct.fixed_plan(8, 4)
    assert layout(1024, 1024) == EX.plan  # the running example is TP 8, PP 4 on 1,024 GPUs
    p = jct.fixed_plan(4, 1)(256, 512)
    assert (p.tp, p.pp, p.dp, p.global_batch, p.zero_stage) == (4, 1, 64, 512, EX.plan.zero_stage)
    assert not jct.fixed_plan(1, 1)(8, 64).sequence_parallel  # no SP without tensor parallelism
    with pytest.raises(ValueError, match="tp\\*pp=32"):
        layout(48)
    s = jct.sweep(EX.model, EX.token_budget, (16, 1024), plan=layout)
    assert not s.estimates[0].feasible and s.estimates[1].feasible  # 16 GPUs cannot hold TP 8 x PP 4
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="tp"):
            jct.fixed_plan(bad, 1)
    with pytest.raises(ValueError, match="base"):
        jct.fixed_plan(8, 1, base="TP8")


def test_sweep_crossover_and_wall():
    s = jct.sweep(EX.model, EX.token_budget, (1024, 4096, 16_384, 32_768, 65_536), plan=jct.tutorial_plan,
                  global_batch=lambda n: max(64, n), dp_overlap=0.0)
    rel_, comm = s.fraction("reliability"), s.fraction("communication") + s.fraction("bubble")
    x = jct.crossover(s)
    assert x is not None and 16_384 < x < 32_768
    assert rel_[-3] < comm[-3] and rel_[-2] > comm[-2]
    w = jct.sync_wall(s)
    assert w["gpus"] == 65_536 and not w["wall"]
    # reliability alone never overtakes at a few hundred GPUs
    small = jct.sweep(EX.model, EX.token_budget, (256, 512), plan=jct.tutorial_plan, global_batch=lambda n: max(64, n))
    assert jct.crossover(small) is None


def test_crossover_keeps_only_the_last_crossing():
    def fake(rel_values, comm_values):
        ests = []
        for r, c in zip(rel_values, comm_values):
            e = jct.estimate(EX.model, EX.token_budget, EX.cluster, EX.plan)
            ests.append(dataclasses.replace(e, checkpoint=r, rework=0.0, restart=0.0, communication=c, bubble=0.0))
        return jct.Sweep(np.array([1, 2, 4, 8][:len(ests)]), tuple(ests))

    assert jct.crossover(fake([1, 5, 1, 5], [2, 2, 2, 2])) == pytest.approx(4 * 2 ** 0.25)
    assert jct.crossover(fake([3, 3], [1, 1])) == 1.0
    assert jct.crossover(fake([1, 1], [2, 2])) is None


def test_deadline_and_accelerators():
    n, e = jct.gpus_for_deadline(EX.model, EX.token_budget, 30 * u.day)
    assert e.total <= 30 * u.day
    smaller = [c for c in (256, 512) if c < n]
    for c in smaller:
        assert jct.estimate(EX.model, EX.token_budget, jct.cluster_of(c)).total > 30 * u.day
    b = jct.estimate(EX.model, EX.token_budget, jct.cluster_of(1024, hardware.HGX_B200))
    h = jct.estimate(EX.model, EX.token_budget, jct.cluster_of(1024))
    assert b.total < h.total and b.minimum < h.minimum
    assert jct.gpus_for_deadline(EX.model, EX.token_budget, 1 * u.hour) == (None, None)


def test_deadline_search_goes_between_powers_of_two():
    """A deadline that 768 GPUs meet and 512 do not: the second pass returns 768 (steps of 64 between 512 and
    1,024), not the power of two; every smaller count of that pass misses the deadline; steps=1 gives 1,024."""
    t768 = jct.estimate(EX.model, EX.token_budget, jct.cluster_of(768)).total
    deadline = t768 * 1.0001
    n, e = jct.gpus_for_deadline(EX.model, EX.token_budget, deadline)
    assert n == 768 and e.total == t768
    for c in range(576, 768, 64):
        assert jct.estimate(EX.model, EX.token_budget, jct.cluster_of(c)).total > deadline
    assert jct.gpus_for_deadline(EX.model, EX.token_budget, deadline, steps=1)[0] == 1024
    assert jct.gpus_for_deadline(EX.model, EX.token_budget, deadline, candidates=[1024, 896, 768])[0] == 768
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="steps"):
            jct.gpus_for_deadline(EX.model, EX.token_budget, deadline, steps=bad)


def test_sensitivity_rows():
    s = jct.sensitivity(EX.model, EX.token_budget, EX.cluster)
    names = [r[0] for r in s.rows]
    assert len(names) == 6 and set(s.swing()) == set(names)
    swings = list(s.swing().values())
    assert swings == sorted(swings, reverse=True)
    assert parallelism.CALIBRATION == parallelism.Calibration(0.88, 75.0, 625.0, 1.42, 0.79, 0.93, 0.90,
                                                                kernel_efficiency_blackwell=0.89)  # never patched
    row = dict((r[0], r) for r in s.rows)["compute efficiency (calibrated E_max)"]
    assert row[3] > s.base.total > row[4]


@pytest.mark.parametrize("kwargs, name", [
    (dict(tokens=0), "tokens"), (dict(tokens=float("nan")), "tokens"), (dict(tokens="1e12"), "tokens"),
    (dict(cluster="1024 H100"), "cluster"), (dict(plan="best"), "plan"),
    (dict(plan=Plan(tp=8, pp=4, dp=32)), "global_batch"), (dict(checkpoint="sync"), "checkpoint"),
    (dict(failures="often"), "failures"), (dict(restart_time=-1), "restart_time"),
    (dict(restart_time=True), "restart_time"), (dict(dp_overlap=2.0), "dp_overlap"),
    (dict(global_batch=0), "global_batch"), (dict(global_batch=2048), "global_batch"),
    (dict(model="GPT-5"), "model"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    args = dict(model=EX.model, tokens=EX.token_budget, cluster=EX.cluster, plan=EX.plan)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        jct.estimate(args.pop("model"), args.pop("tokens"), args.pop("cluster"), args.pop("plan"), **args)


@pytest.mark.parametrize("kwargs, name", [
    (dict(strategy="lazy"), "strategy"), (dict(write_bandwidth=0), "write_bandwidth"),
    (dict(host_bandwidth=-1.0), "host_bandwidth"), (dict(interval=0), "interval"), (dict(size=float("inf")), "size"),
])
def test_bad_checkpoint_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        jct.Checkpoint(**kwargs)


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="gpus"):
        jct.tutorial_plan(12)
    with pytest.raises(ValueError, match="deadline"):
        jct.gpus_for_deadline(EX.model, 1e12, -1)
    with pytest.raises(ValueError, match="factor"):
        jct.scaled_profile(rel.TEXTBOOK_PROFILE, 0)
    with pytest.raises(ValueError, match="against"):
        jct.crossover(jct.sweep(EX.model, 1e12, (1024,)), against="bandwidth")
    with pytest.raises(ValueError, match="window"):
        jct.estimate(EX.model, 1e12, EX.cluster, EX.plan).loss_over(0)


def test_explorer_view_scales_exactly_and_redraws():
    from atscale import widgets
    from atscale.widgets.jct import explorer_view

    est, sw, _ = explorer_view(tokens_t=2.0, gpus=1024)
    direct = jct.estimate(EX.model, 2e12, EX.cluster, checkpoint=jct.SYNC, global_batch=1024)
    for name in jct.TERMS:
        assert getattr(est, name) == pytest.approx(getattr(direct, name), rel=1e-9)
    assert jct.crossover(sw) == jct.crossover(jct.sweep(EX.model, 2e12, sw.gpus, global_batch=lambda n: max(64, n)))
    e = widgets.jct_explorer()
    e.update(model="Llama 3 405B", plan="tp8-pp1", gpus=64)
    assert e.error is None and "Infeasible" in e.summary_text
    e.update(gpus=2048, checkpoint="async")
    assert e.error is None and e.image.value[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="gpus"):
        explorer_view(gpus=100)


def test_live_explorer_figure_is_the_same_whatever_came_before():
    """The explorer redraws only the changing artists onto a kept background (blitting): the PNG of a state
    must not depend on the states shown before it, across backgrounds (crossover-panel limits) too."""
    from atscale import plots
    from atscale.widgets.jct import EXPLORER_GPUS, explorer_view

    views = [explorer_view(gpus=1024), explorer_view(model="Llama 3 405B", gpus=16_384, failures="llama3"),
             explorer_view(plan="tp8-pp1", gpus=64), explorer_view(model="Llama 3 8B", tokens_t=0.5, gpus=128)]
    fig = plots.JctExplorerFigure(gpus=EXPLORER_GPUS)
    tops = [fig.layout(v) for v in views]
    assert len(set(tops)) > 1, "the views should exercise more than one background"
    shown = [fig.png(v) for v in views] + [fig.png(views[0])]
    assert shown[-1] == shown[0]
    for view, png in zip(views, shown):
        assert plots.JctExplorerFigure(gpus=EXPLORER_GPUS).png(view) == png
    with pytest.raises(ValueError, match="GPU counts"):
        fig.png(explorer_view(gpus=1024)[:1] + (jct.sweep(EX.model, 1e12, (1024,)), "x"))
    with pytest.raises(ValueError, match="view"):
        fig.png(("estimate", "sweep", "label"))


def test_figures_draw_and_refuse_bad_input():
    from atscale import plots

    s = jct.sweep(EX.model, EX.token_budget, (512, 1024, 2048), plan=jct.tutorial_plan,
                  global_batch=lambda n: max(64, n))
    e = jct.estimate(EX.model, EX.token_budget, EX.cluster, EX.plan)
    for fig in (plots.jct_breakdown_chart([e, s.estimates[0]], ["a", "b"]), plots.jct_crossover_chart([s], ["t"]),
                plots.jct_scaling_chart([s], ["t"]),
                plots.loss_comparison_chart([1024], {"communication": [73.1], "reliability": [38.1]},
                                            {"communication": [80.0], "reliability": [10.0]})):
        assert fig.axes
    with pytest.raises(ValueError, match="estimates"):
        plots.jct_breakdown_chart([])
    with pytest.raises(ValueError, match="unit"):
        plots.jct_breakdown_chart([e], unit="weeks")
    with pytest.raises(ValueError, match="ours"):
        plots.loss_comparison_chart([1024], {"communication": [1], "reliability": [1]}, {"communication": [1]})
