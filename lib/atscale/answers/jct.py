"""Answer keys: the case study "Scaling to 1,000 GPUs" (job completion time)."""

CHAPTER = "Case study: scaling to 1,000 GPUs"
"""The chapter whose exercises these keys check (the Exercises page groups them by it)."""

from .. import hardware, jct, memory, runs
from .. import reliability as rel
from .. import units as u
from ..scenario import RUNNING_EXAMPLE as EX
from . import answer

_GPUS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16_384, 32_768, 65_536, 131_072)


@answer("jct-70b-1024-wallclock", unit="s", rtol=0.02,
        idea="The wall clock is the training time plus what checkpoints and failures add.",
        hint="jct.estimate(ex.model, ex.token_budget, ex.cluster).total: the best layout, synchronous checkpoints, "
             "textbook failures, 10-minute restarts.")
def _():
    return jct.estimate(EX.model, EX.token_budget, EX.cluster).total


@answer("jct-hot-spare-month", unit="s", rtol=0.03,
        idea="A hot spare shortens the restart: recompute the reliability loss with the shorter restart.",
        hint="restart_time=rel.RestartTime(detect=15 s, replace=30 s, relaunch=30 s, load=checkpoint at 100 GB/s); "
             "then Estimate.loss_over(30 * units.day)['reliability'].")
def _():
    load = rel.checkpoint_time(memory.checkpoint_bytes(EX.model), 100 * u.GBps)
    fast = rel.RestartTime(detect=rel.heartbeat_detection_time(5.0, missed=3), replace=30.0, relaunch=30.0, load=load)
    return jct.estimate(EX.model, EX.token_budget, EX.cluster, restart_time=fast).loss_over(30 * u.day)["reliability"]


@answer("jct-b200-speedup", unit="", rtol=0.02,
        idea="Compare the two whole jobs, each with its own best layout.",
        hint="The H100 job's total over the B200 job's total, both with plan=None (best layouts).")
def _():
    h = jct.estimate(EX.model, EX.token_budget, EX.cluster)
    b = jct.estimate(EX.model, EX.token_budget, jct.cluster_of(1024, hardware.HGX_B200))
    return h.total / b.total


@answer("jct-crossover-quarter-mttf", unit="", rtol=0.05,
        idea="Worse hardware makes failures cost more at scale: find where more GPUs stop helping.",
        hint="jct.sweep(..., plan=jct.tutorial_plan, global_batch=lambda n: max(64, n), dp_overlap=1.0, "
             "failures=jct.scaled_profile(rel.TEXTBOOK_PROFILE, 0.25)), then jct.crossover.")
def _():
    s = jct.sweep(EX.model, EX.token_budget, _GPUS, plan=jct.tutorial_plan, global_batch=lambda n: max(64, n),
                  dp_overlap=1.0, failures=jct.scaled_profile(rel.TEXTBOOK_PROFILE, 0.25))
    return jct.crossover(s)


@answer("jct-405b-gpus-200-days", unit="", rtol=0.0, atol=0.5,
        idea="Look for the smallest cluster whose job finishes within the deadline.",
        hint="jct.gpus_for_deadline('Llama 3 405B', 15.6e12, 200 * units.day, global_batch=2048)[0].")
def _():
    return jct.gpus_for_deadline("Llama 3 405B", 15.6e12, 200 * u.day, global_batch=2048)[0]


@answer("jct-hourly-2tb-share", unit="", rtol=0.01,
        idea="A synchronous checkpoint stops training while it writes: compare the write with the whole cycle.",
        hint="Checkpoint(interval=3600, size=2e12, write_bandwidth=2e12/300), failures=None: "
             "the time the checkpoints take over the total (estimate(...).checkpoint / .total).")
def _():
    ck = jct.Checkpoint(interval=u.hour, size=2e12, write_bandwidth=2e12 / 300)
    e = jct.estimate(EX.model, EX.token_budget, EX.cluster, EX.plan, checkpoint=ck, failures=None)
    return e.checkpoint / e.total


@answer("jct-opt-fleet-month", unit="s", rtol=0.03,
        idea="Swap the failure profile and the restart time for the published fleet's, then read the reliability "
             "share of a month's loss.",
        hint="jct.estimate(ex.model, ex.token_budget, ex.cluster, failures=rel.OPT175B_PROFILE, "
             "restart_time=rel.OPT175B_RESTART_TIME).loss_over(30 * units.day)['reliability'].")
def _():
    e = jct.estimate(EX.model, EX.token_budget, EX.cluster, failures=rel.OPT175B_PROFILE,
                     restart_time=rel.OPT175B_RESTART_TIME)
    return e.loss_over(30 * u.day)["reliability"]


@answer("jct-stragglers-weak-scaling", unit="", rtol=0.02,
        idea="The slowest of many GPUs is slower the more there are: a step with the same work per replica "
             "lengthens as replicas are added.",
        hint="The runs labelled 'GPT-3 175B, 128 H100, BF16' and 'GPT-3 175B, 2,048 H100, BF16' in runs.ALL_RUNS; "
             "r.step(operators=True, stragglers=True).total for each; the larger's over the smaller's, minus one.")
def _():
    by_label = {r.label: r for r in runs.ALL_RUNS}
    small, large = (by_label[f"GPT-3 175B, {n} H100, BF16"] for n in ("128", "2,048"))
    return large.step(operators=True, stragglers=True).total / small.step(operators=True, stragglers=True).total - 1
