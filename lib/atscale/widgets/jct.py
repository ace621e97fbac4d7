"""Explorer of the chapter "Case study: scaling to 1,000 GPUs": the JCT explorer."""

from __future__ import annotations

import dataclasses
import functools
import math

from .. import _validate as _v
from .. import hardware, jct, models, plots
from .. import reliability as rel
from .. import units as u
from ..plan import Plan
from ._base import Explorer, dropdown, slider

__all__ = ["jct_explorer", "explorer_view"]

EXPLORER_GPUS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16_384)
"""GPU counts the explorer offers (and over which its crossover plot is drawn)."""

_NODES = {"H100 (DGX H100)": "DGX H100", "B200 (HGX B200)": "HGX B200"}
_PLANS = {"best (searched at each count)": "best", "tutorial's: TP 8, PP 1": "tp8-pp1",
          "running example's: TP 8, PP 4": "tp8-pp4", "TP 4, PP 4": "tp4-pp4", "TP 8, PP 8": "tp8-pp8"}
"""Layouts the explorer offers: the best one at each GPU count, or a fixed TP x PP (data parallel over the rest;
the running example's other settings, see :func:`atscale.jct.fixed_plan`)."""
_PROFILES = {"textbook": "textbook", "Llama 3 fleet": "llama3"}
_STRAGGLERS = {"off": "off", "on (published variability)": "on"}
"""The straggler knob: off, or the published readings of :data:`atscale.stragglers.STRAGGLERS`."""
_REFERENCE_TOKENS = 1e12  # every term is proportional to the token count: computed once, then scaled


@functools.lru_cache(maxsize=256)
def _best_plan(model: str, node: str, gpus: int, global_batch: int, stragglers: bool = False) -> Plan | str:
    """:func:`atscale.jct.best_plan` for one GPU count, or the reason there is none (cached, both: a search takes
    ~50-100 ms). It does not depend on the checkpoint strategy or the failure profile, so changing those reuses
    it."""
    try:
        return jct.best_plan(model, jct.cluster_of(gpus, node), global_batch, stragglers=stragglers or None)
    except jct.NoFeasibleLayout as exc:
        return str(exc)


def _searched(model: str, node: str, stragglers: bool = False):
    def layout(gpus: int, global_batch: int) -> Plan:
        best = _best_plan(model, node, gpus, global_batch, stragglers)
        if isinstance(best, str):
            raise jct.NoFeasibleLayout(best)  # sweep reports it as infeasible at that count
        return best

    return layout


@functools.lru_cache(maxsize=64)
def _sweep(model: str, node: str, plan: str, strategy: str, failures: str, stragglers: bool = False) -> jct.Sweep:
    """The configuration's sweep over :data:`EXPLORER_GPUS` at the reference token count (cached). With the best
    layout, the searches are cached apart (:func:`_best_plan`): a new checkpoint strategy or failure profile
    costs nine estimates (~50 ms), a new model, accelerator or layout nine searches (~0.5-1 s)."""
    layout = _searched(model, node, stragglers) if plan == "best" else \
        jct.fixed_plan(*(int(p[2:]) for p in plan.split("-")))
    return jct.sweep(model, _REFERENCE_TOKENS, EXPLORER_GPUS, node=hardware.node(node), plan=layout,
                     checkpoint=jct.Checkpoint(strategy), failures=failures, global_batch=lambda n: max(64, n),
                     stragglers=stragglers or None)


def _scaled(e: jct.Estimate, k: float) -> jct.Estimate:
    if not e.feasible:
        return dataclasses.replace(e, tokens=e.tokens * k)
    return dataclasses.replace(e, **{t: getattr(e, t) * k for t in jct.TERMS + ("straggler",)}, tokens=e.tokens * k, steps=e.steps * k,
                               communication_parts={n: v * k for n, v in e.communication_parts.items()})


def explorer_view(model="Llama 3 70B", tokens_t=2.0, gpus=1024, accelerator="H100 (DGX H100)",
                  plan="best", checkpoint="sync", failures="textbook", stragglers="off"):
    """``(estimate, sweep, label)`` for the explorer's controls (``tokens_t``: trillions of tokens; ``stragglers``
    ``"off"`` or ``"on"``: the steps' wait for the slowest GPU, :mod:`atscale.stragglers`).

    Every term of an estimate is proportional to the token count (steps, stalls per segment and failures all
    scale with the failure-free time), so the sweep is computed once per configuration at 10^12 tokens and
    scaled: a redraw after the first view of a configuration only rescales and draws (see benchmarks/jct.py)."""
    if not isinstance(model, str) or model not in models.MODELS:
        raise ValueError(f"model={_v.show(model)} must be a catalog model name; {_v.known(model, models.MODELS)}")
    tokens_t = _v.positive("tokens_t", tokens_t, scalar=True, unit="trillions of tokens")
    gpus = _v.choice("gpus", _v.count("gpus", gpus), EXPLORER_GPUS)
    _v.choice("checkpoint", checkpoint, ("sync", "async"))
    for name, value, options in (("accelerator", accelerator, _NODES), ("plan", plan, _PLANS),
                                 ("failures", failures, _PROFILES), ("stragglers", stragglers, _STRAGGLERS)):
        if value not in options and value not in options.values():
            raise ValueError(f"{name}={value!r} must be one of {list(options)}")
    node = _NODES.get(accelerator, accelerator)
    plan_key = _PLANS.get(plan, plan)
    prof = _PROFILES.get(failures, failures)
    slow = _STRAGGLERS.get(stragglers, stragglers) == "on"
    sw = _sweep(model, node, plan_key, checkpoint, prof, slow)
    k = tokens_t * 1e12 / _REFERENCE_TOKENS
    est = sw.estimates[EXPLORER_GPUS.index(gpus)]
    scaled = jct.Sweep(sw.gpus, tuple(_scaled(e, k) for e in sw.estimates))
    label = f"{model}, {node}, {plan_key} plan, {checkpoint}, {failures}" + (", stragglers" if slow else "")
    if est.feasible and not math.isfinite(_scaled(est, k).total):
        raise ValueError(f"tokens_t={tokens_t:g} trillion tokens: the job's time overflows a float; give fewer tokens")
    return _scaled(est, k), scaled, label


def _summary(view) -> str:
    e, sw, _ = view
    x = jct.crossover(sw, ("communication", "bubble", "straggler"))
    cross = f"reliability overtakes at ~{x:,.0f} GPUs" if x else "reliability does not overtake within 16,384 GPUs"
    if not e.feasible:
        return f"Infeasible at {e.gpus:,} GPUs: {e.reason}. {cross}."
    return (f"{e.total / u.day:,.1f} days ({e.minimum / u.day:,.1f} at peak); MFU over the job {e.mfu:.1%}, goodput "
            f"{e.goodput:.1%}; communication + bubble {(e.communication + e.bubble) / e.total:.1%}"
            + (f", stragglers {e.straggler / e.total:.1%}" if e.stragglers is not None else "") + ", reliability "
            f"{e.reliability / e.total:.1%}; {cross}. Plan: {e.plan.tp}x{e.plan.pp}x{e.plan.dp} (TP x PP x DP).")


def jct_explorer() -> Explorer:
    """Model, tokens, GPU count, accelerator, plan (the best, the tutorial's or another fixed TP x PP),
    checkpoint strategy, failure profile and stragglers (off or on): the job's breakdown as a stacked bar and the
    crossover plot of that configuration (stragglers counted with the parallelism loss)."""
    return Explorer(
        plots.JctExplorerFigure, figsize=(8.8, 3.6), compute=explorer_view, summary=_summary,
        model=dropdown(["Llama 3 8B", "Llama 3 70B", "Llama 3 405B"], "Llama 3 70B", "Model"),
        tokens_t=slider(0.1, 20, 2.0, "Tokens (trillions)", log=True),
        gpus=dropdown(list(EXPLORER_GPUS), 1024, "GPUs"),
        accelerator=dropdown(list(_NODES), "H100 (DGX H100)", "Accelerator"),
        plan=dropdown(_PLANS, "best", "Plan"),
        checkpoint=dropdown({"synchronous": "sync", "asynchronous": "async"}, "sync", "Checkpoints"),
        failures=dropdown(list(_PROFILES), "textbook", "Failure profile"),
        stragglers=dropdown(_STRAGGLERS, "off", "Stragglers"),
    )
