"""Figures of the chapter "Mixtures of experts"."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from .. import _validate as _v
from .. import experts as X
from .. import models
from .. import operators as O
from .. import parallelism as P
from .. import runs as R
from ._base import INK, MUTED, PALETTE, STYLE, LiveFigure, house_style, log_axes, new_axes
from .parallelism import _PART_COLOURS, stack_parts

__all__ = ["moe_params_chart", "all_to_all_chart", "cross_node_chart", "deepep_chart", "routing_chart",
           "ep_sweep_chart",
           "deepseek_chart", "moe_validation_chart", "moe_operator_chart", "ExpertStepFigure"]

_RED = "#b00020"
_MEMORY = "#6c6c99"


@house_style
def moe_params_chart(moe_models=models.MOE_MODELS, *, ax=None):
    """Total and active parameters of each mixture of experts (billions, log scale), active counted as its publisher
    counts it (:func:`atscale.experts.published_count`), with the published figures as black ticks."""
    counts = [X.published_count(m) for m in moe_models]
    ax = new_axes(ax, figsize=(7.0, 0.9 + 0.55 * len(counts)))
    y = np.arange(len(counts))
    ax.barh(y - 0.19, [c.total / 1e9 for c in counts], height=0.36, color=PALETTE[5], label="total (memory)")
    ax.barh(y + 0.19, [c.active / 1e9 for c in counts], height=0.36, color=PALETTE[0], label="active (one token)")
    ax.scatter([c.published_total / 1e9 for c in counts], y - 0.19, marker="|", s=260, color=INK, lw=2,
               label="published", zorder=3)
    ax.scatter([c.published_active / 1e9 for c in counts], y + 0.19, marker="|", s=260, color=INK, lw=2, zorder=3)
    for i, c in enumerate(counts):
        ax.text(c.total / 1e9 * 1.08, i - 0.19, f"{c.active / c.total:.0%} active", va="center", fontsize=8,
                color=MUTED)
    ax.set_yticks(y, [c.name + ("" if c.counts_embedding else "*") for c in counts], fontsize=9)
    ax.set_ylim(len(counts) - 0.5, -0.6)
    ax.set_xlim(1, 3000)
    log_axes(ax, y=False)
    ax.set_xlabel("Parameters (billions, log scale)")
    ax.set_title("A token uses a small share of a mixture of experts")
    ax.text(1.0, -0.25, "* active without the input embedding, as published", transform=ax.transAxes, ha="right",
            fontsize=7.5, color=MUTED)
    ax.legend(loc="upper right", fontsize=8)
    ax.figure.subplots_adjust(left=0.22, bottom=0.8 / (0.9 + 0.55 * len(counts)) + 0.05)
    return ax.figure


@house_style
def all_to_all_chart(comparison: X.AllToAllComparison):
    """An all-to-all against an all-reduce of the same buffer (:func:`atscale.experts.all_to_all_vs_all_reduce`,
    one ``size``, several ``ranks``): seconds (left) and bytes each GPU sends through its NIC (right)."""
    import matplotlib.pyplot as plt

    if (not isinstance(comparison, X.AllToAllComparison) or np.ndim(comparison.ranks) != 1
            or np.unique(comparison.size).size != 1):
        raise ValueError("comparison must be an AllToAllComparison of one size over an array of ranks")
    n, size = np.asarray(comparison.ranks), float(np.ravel(comparison.size)[0])
    with mpl.rc_context(STYLE):
        fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.6))
    plt.close(fig)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.86, wspace=0.28)
    left.plot(n, np.asarray(comparison.a2a_time) * 1e3, marker="o", color=PALETTE[3], label="all-to-all")
    left.plot(n, np.asarray(comparison.all_reduce_time) * 1e3, marker="s", color=PALETTE[0],
              label="all-reduce (hierarchical)")
    right.plot(n, np.asarray(comparison.a2a_nic_bytes) / 1e6, marker="o", color=PALETTE[3], label="all-to-all")
    right.plot(n, np.asarray(comparison.all_reduce_nic_bytes) / 1e6, marker="s", color=PALETTE[0], label="all-reduce")
    for ax, label in ((left, "Time of one collective (ms)"), (right, "Bytes through each GPU's NIC (MB)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(n, [f"{int(x):,}" for x in n], fontsize=8)
        ax.axvline(comparison.gpus_per_node, color=MUTED, lw=1, ls=":")
        ax.text(comparison.gpus_per_node * 1.08, 0.97, "one node", transform=ax.get_xaxis_transform(), fontsize=8,
                color=MUTED, va="top")
        ax.set_xlabel("GPUs in the group")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    left.legend(loc="upper left", bbox_to_anchor=(0.0, 0.9), fontsize=8)
    fig.suptitle(f"One all-to-all and one all-reduce of {size / 1e6:,.0f} MB per GPU", fontsize=11,
                 weight="bold")
    return fig


@house_style
def deepep_chart(rows=None):
    """DeepEP's published dispatch and combine bandwidths on H800 against the model's, by group size
    (:func:`atscale.experts.deepep_comparison`; ``rows`` its result, computed when ``None``), each counted as DeepEP
    counts it (GB/s): the model with the NVLink stage forwarding what arrives over the network, and without it."""
    import matplotlib.pyplot as plt

    rows = X.deepep_comparison() if rows is None else rows
    if (not isinstance(rows, (tuple, list)) or not rows
            or not all(isinstance(r, X.DispatchBenchmark) for r in rows)):
        raise ValueError("rows must be the DispatchBenchmark rows of atscale.experts.deepep_comparison()")
    with mpl.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.8), sharey=True)
    plt.close(fig)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.76, wspace=0.08)
    for ax, exchange in zip(axes, ("dispatch", "combine")):
        mine = sorted((r for r in rows if r.exchange == exchange), key=lambda r: r.ep)
        x = np.arange(len(mine))
        ax.scatter(x, [r.published / 1e9 for r in mine], marker="s", s=46, color=INK, label="published", zorder=3)
        ax.scatter(x, [r.model / 1e9 for r in mine], marker="o", s=46, color=PALETTE[3], zorder=3,
                   label="model (RDMA, then NVLink forwarding)")
        apart = [i for i, r in enumerate(mine) if abs(r.own_node_only / r.model - 1) > 0.01]
        ax.scatter(x[apart], [mine[i].own_node_only / 1e9 for i in apart], marker="o", s=46, facecolors="none",
                   edgecolors=PALETTE[3], zorder=3, label="model, NVLink without forwarding")
        for i, r in enumerate(mine):
            ax.annotate(f"{r.error:+.0%}", (i, r.model / 1e9), textcoords="offset points", xytext=(9, -3),
                        fontsize=8, color=PALETTE[3])
        ax.set_xticks(x, [f"{r.ep}\n({r.link})" for r in mine], fontsize=8)
        ax.set_xlim(-0.5, len(mine) - 0.5)
        ax.set_xlabel("GPUs in the expert group (where DeepEP counts it)")
        ax.set_title(f"{exchange} ({'FP8' if exchange == 'dispatch' else 'BF16'})", fontsize=10)
        ax.set_ylim(0, 200)
    axes[0].set_ylabel("Bandwidth as DeepEP counts it (GB/s)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.93), ncol=3,
               fontsize=8, frameon=False)
    fig.suptitle("DeepEP's all-to-all kernels on H800: published and modelled", fontsize=11, weight="bold")
    return fig


@house_style
def cross_node_chart(experts_per_token: int = 8, num_experts: int = 256, max_nodes: int = 4,
                     nodes=(1, 2, 4, 8, 16, 32), *, ax=None):
    """Expected copies of a token that cross the network in one dispatch (:func:`atscale.experts.cross_node_copies`)
    against the nodes an expert group spans: one copy per expert, one per destination node, and node-limited
    routing."""
    n = np.asarray(_v.count("nodes", nodes, scalar=False), dtype=float)
    ax = new_axes(ax, figsize=(6.4, 3.8))
    k = experts_per_token
    lines = ((f"one copy per expert, k (1 - 1/N)", X.cross_node_copies(k, n), "o", PALETTE[3]),
             ("one copy per node", X.cross_node_copies(k, n, num_experts=num_experts, deduplicate=True), "s",
              PALETTE[1]),
             (f"at most M = {max_nodes} nodes", X.cross_node_copies(k, n, num_experts=num_experts, max_nodes=max_nodes),
              "D", PALETTE[0]))
    for label, y, marker, colour in lines:
        ax.plot(n, np.atleast_1d(y), marker=marker, color=colour, label=label)
    ax.axhline(k, color=MUTED, lw=1, ls=":")
    ax.text(n[0], k, f"k = {k} experts per token", fontsize=8, color=MUTED, va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_xticks(n, [f"{int(x)}" for x in n])
    ax.set_ylim(0, k * 1.15)
    ax.set_xlabel("Nodes the expert group spans (N)")
    ax.set_ylabel("Copies of a token sent across nodes")
    ax.set_title(f"Top-{k} of {num_experts} experts: what crosses the network")
    ax.legend(loc="lower right", fontsize=8)
    return ax.figure


@house_style
def routing_chart(num_experts=(8, 64, 256), capacity_factors=np.round(np.arange(1.0, 2.001, 0.05), 2),
                  mean_loads=(4, 16, 64, 256)):
    """Load balance under a uniformly random router: the busiest expert's load over the mean against the tokens
    each expert receives (left, :func:`atscale.experts.routing_imbalance`), and the share of tokens a capacity
    factor drops (right, :func:`atscale.experts.dropped_fraction`)."""
    import matplotlib.pyplot as plt

    num_experts = _v.count("num_experts", num_experts, scalar=False)
    mean_loads = _v.number("mean_loads", mean_loads, low=0, low_open=True, unit="tokens per expert")
    loads = np.geomspace(1, 16384, 29)
    c = np.asarray(_v.number("capacity_factors", capacity_factors, low=1), dtype=float)
    with mpl.rc_context(STYLE):
        fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.6))
    plt.close(fig)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.88, wspace=0.26)
    for i, e in enumerate(num_experts):
        left.plot(loads, X.routing_imbalance(loads, e), color=PALETTE[i], label=f"{e} experts")
    left.set_xlim(loads[0], loads[-1])
    left.set_ylim(1, 5)
    log_axes(left, y=False)
    left.set_xlabel("Tokens per expert in one dispatch (mean)")
    left.set_ylabel("Busiest expert's load / mean")
    left.set_title("Chance alone unbalances small batches", fontsize=10)
    left.legend(fontsize=8)
    for i, lam in enumerate(mean_loads):
        right.plot(c, np.asarray(X.dropped_fraction(lam, c)) * 100, color=PALETTE[i], label=f"{lam} tokens per expert")
    right.set_xlabel("Capacity factor C")
    right.set_ylabel("Tokens dropped (%)")
    right.set_ylim(bottom=0)
    right.set_title("What a capacity factor drops", fontsize=10)
    right.legend(fontsize=8)
    return fig


@house_style
def ep_sweep_chart(sweep: X.EpSweep, overlapped: X.EpSweep | None = None, *, ax=None):
    """Step time per GPU (stacked parts, left axis) and memory per GPU (line, right axis, with the usable capacity
    dashed) against the expert-parallel degree (:func:`atscale.experts.ep_sweep`); ``overlapped``: the same sweep
    with the all-to-all overlapped, its totals as diamonds. A degree that cannot run is marked "infeasible"; one
    that runs but does not fit in memory (a sweep with the memory check off) has pale bars marked "does not fit"."""
    if not isinstance(sweep, X.EpSweep):
        raise ValueError(f"sweep={_v.show(sweep)} must be an atscale.experts.EpSweep")
    ax = new_axes(ax, figsize=(7.2, 4.0))
    x = np.arange(len(sweep.eps))
    ok, fits = sweep.feasible, sweep.fits
    bottom = np.zeros(len(x))
    for name, seconds in sweep.parts().items():
        s = np.where(ok, np.nan_to_num(np.asarray(seconds, dtype=float)), 0.0)
        if np.any(s > 0):
            ax.bar(x[fits], s[fits], bottom=bottom[fits], width=0.6, color=_PART_COLOURS[name],
                   label=P.PART_LABELS[name])
            ax.bar(x[~fits], s[~fits], bottom=bottom[~fits], width=0.6, color=_PART_COLOURS[name], alpha=0.3)
        bottom += s
    if overlapped is not None:
        totals, fit = np.asarray(overlapped.steps.total, dtype=float), overlapped.fits
        ax.scatter(x[fit], totals[fit], marker="D", color=INK, zorder=3, label="total, all-to-all overlapped")
        ax.scatter(x[~fit], totals[~fit], marker="D", facecolors="white", edgecolors=INK, zorder=3)
    top = max(float(np.nanmax(bottom)) if np.any(ok) else 1.0, 1e-9) * 1.3
    for i in np.flatnonzero(~fits):
        ax.text(x[i], top * 0.03, "does not fit" if ok[i] else "infeasible", rotation=90, fontsize=8, color=_RED,
                ha="center", va="bottom")
    ax.set_ylim(0, top)
    ax.set_xticks(x, [str(int(e)) for e in sweep.eps])
    ax.set_xlabel("Expert-parallel degree (ep)")
    ax.set_ylabel("Seconds per optimizer step, per GPU")
    mem = ax.twinx()
    mem.grid(False)
    mem.spines["right"].set_visible(True)
    mem.plot(x, np.asarray(sweep.steps.memory_total, dtype=float) / 1e9, marker="o", color=_MEMORY,
             label="memory per GPU")
    mem.axhline(sweep.steps.memory_capacity / 1e9, color=_MEMORY, lw=1, ls="--")
    mem.set_ylim(0, max(np.nanmax(np.asarray(sweep.steps.memory_total, dtype=float)) / 1e9,
                        sweep.steps.memory_capacity / 1e9) * 1.1)
    mem.set_ylabel("Memory per GPU (GB; dashed: usable)", color=_MEMORY)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = mem.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=7.5)
    ax.set_title(f"{sweep.model}: expert parallelism from 1 to {int(sweep.eps[-1])} GPUs")
    ax.figure.subplots_adjust(left=0.1, right=0.88, bottom=0.3)
    return ax.figure


@house_style
def deepseek_chart(estimates, *, ax=None):
    """GPU-hours per trillion tokens of DeepSeek-V3 variants (a mapping ``label -> DeepSeekEstimate``, drawn top to
    bottom) against the published 180K (the vertical line)."""
    from collections.abc import Mapping

    if not isinstance(estimates, Mapping):
        raise ValueError(f"estimates={_v.show(estimates)} must be a mapping of labels to "
                         "atscale.experts.DeepSeekEstimate (e.g. {'DeepSeek-V3': experts.deepseek_v3_estimate()})")
    estimates = dict(estimates)
    if not estimates or not all(isinstance(e, X.DeepSeekEstimate) for e in estimates.values()):
        raise ValueError("estimates must be a non-empty mapping of labels to atscale.experts.DeepSeekEstimate")
    ax = new_axes(ax, figsize=(7.2, 1.2 + 0.45 * len(estimates)))
    y = np.arange(len(estimates))
    values = np.array([e.gpu_hours_per_trillion / 1e3 for e in estimates.values()])
    ax.barh(y, values, height=0.6, color=[PALETTE[0] if i == 0 else PALETTE[5] for i in y])
    published = next(iter(estimates.values())).published / 3600 / 1e3
    for i, (v, e) in enumerate(zip(values, estimates.values())):
        ax.text(v - published * 0.02, i, f"{v:,.0f}K ({e.error:+.0%})", va="center", ha="right", fontsize=8,
                color="white", weight="bold")
    ax.axvline(published, color=INK, lw=1.5, ls="--")
    ax.text(published * 1.01, -0.6, f"published: {published:,.0f}K", fontsize=8, ha="left", va="center")
    ax.set_yticks(y, list(estimates), fontsize=8.5)
    ax.set_ylim(len(estimates) - 0.5, -0.9)
    ax.set_xlim(0, max(values.max(), published) * 1.25)
    ax.set_xlabel("H800 GPU-hours per trillion tokens (thousands)")
    ax.figure.subplots_adjust(left=0.34, right=0.97, bottom=0.55 / (1.2 + 0.45 * len(estimates)) + 0.05, top=0.97)
    return ax.figure


@house_style
def moe_validation_chart(runs=None, *, ax=None):
    """The step-time model against published mixture-of-experts runs (:data:`atscale.runs.MOE_RUNS`): the
    published step time and the model's, seconds, log scales; points above the diagonal are runs the model finds
    slower than they were."""
    runs = R.MOE_RUNS if runs is None else tuple(runs)
    if not runs or not all(isinstance(r, R.Run) and r.metric == "step_seconds" for r in runs):
        raise ValueError("runs must be atscale.parallelism.Run objects that publish a step time "
                         "(metric 'step_seconds')")
    ax = new_axes(ax, figsize=(6.6, 4.6))
    published = np.array([r.published for r in runs])
    predicted = np.array([r.predicted for r in runs])
    for i, r in enumerate(runs):
        ax.scatter(published[i], predicted[i], s=42, color=PALETTE[i % 7], zorder=3, label=r.label)
    lo, hi = min(published.min(), predicted.min()) / 1.6, max(published.max(), predicted.max()) * 1.6
    ax.plot([lo, hi], [lo, hi], color=INK, lw=1, ls="--")
    for f in (0.8, 1.25):
        ax.plot([lo, hi], [lo * f, hi * f], color=MUTED, lw=0.8, ls=":")
    ax.text(hi / 1.5, hi / 1.5 * 0.8 / 1.12, "-20%", fontsize=8, color=MUTED)
    ax.text(hi / 2.2, hi / 2.2 * 1.25 * 1.05, "+25%", fontsize=8, color=MUTED)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    log_axes(ax)
    ax.set_xlabel("Published step time (s)")
    ax.set_ylabel("Model's step time (s)")
    ax.set_title("Mixture-of-experts runs: the model against the record")
    ax.legend(loc="upper left", fontsize=7)
    return ax.figure


_MOE_OPERATORS = ("router", "router scores and top-k", "token permutation", "routed experts", "token un-permutation")


@house_style
def moe_operator_chart(layers, *, ax=None):
    """One mixture-of-experts layer's time by operator, forward plus backward, ms per micro-batch: one bar per
    operator and per entry of ``layers`` (:class:`~atscale.operators.LayerOperators` of the same model, e.g. in
    BF16 and in FP8), the expert layer's own operators first and highlighted, the rest of the layer after."""
    layers = list(layers) if not isinstance(layers, O.LayerOperators) else [layers]
    if not layers or not all(isinstance(x, O.LayerOperators) for x in layers):
        raise ValueError("layers must be a non-empty sequence of atscale.operators.LayerOperators "
                         "(as operators.layer_operators returns)")
    names = list(dict.fromkeys(r.name for x in layers for r in x.rows))  # FP8 adds its casts
    if any(x.model != layers[0].model or not set(_MOE_OPERATORS) <= {r.name for r in x.rows} for x in layers):
        raise ValueError("layers must all be the same mixture-of-experts layer's operators (one model, e.g. in "
                         "two dtypes)")
    order = [*_MOE_OPERATORS, *(n for n in names if n not in _MOE_OPERATORS)]
    ax = new_axes(ax, figsize=(7.2, 0.34 * len(order) * max(len(layers), 2) / 2 + 1.6))
    height = 0.8 / len(layers)
    for j, layer in enumerate(layers):
        t = {r.name: (r.forward + r.backward) * 1e3 for r in layer.rows}
        y = np.arange(len(order)) + (j - (len(layers) - 1) / 2) * height
        label = f"{layer.dtype.upper()}: {layer.total * 1e3:.1f} ms per layer"
        ax.barh(y, [t.get(n, 0.0) for n in order], height=height * 0.92, color=PALETTE[j % 7], label=label)
    ax.set_yticks(range(len(order)), order, fontsize=8.5)
    for i, n in enumerate(order):
        if n in _MOE_OPERATORS:
            ax.get_yticklabels()[i].set_fontweight("bold")
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.axhline(len(_MOE_OPERATORS) - 0.5, color=MUTED, lw=0.8, ls=":")
    ax.set_xlabel("Forward + backward time per micro-batch (ms)")
    ax.set_title(f"One expert layer of {layers[0].model}, operator by operator")
    ax.legend(loc="lower right", fontsize=8)
    return ax.figure


# --------------------------------------------------------------------------------------
# The explorer's figure, drawn in two layers (atscale.plots.LiveFigure)
# --------------------------------------------------------------------------------------
_TIME_LADDER = tuple(m * 10.0**k for k in range(-1, 4) for m in (1, 1.5, 2, 3, 4, 5, 6, 8))
_MEMORY_LADDER = (40, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120)
"""Upper limits of the explorer's axes (s and GB): the smallest that holds the value is used, so a handful of
backgrounds are ever drawn."""


def _top(value: float, ladder, what: str) -> float:
    top = next((x for x in ladder if value * 1.02 <= x), None)
    if top is None:
        raise ValueError(f"{what} of {value:.3g} is beyond the figure's axis (at most {ladder[-1]:g})")
    return top


class ExpertStepFigure(LiveFigure):
    """The experts explorer's figure: one layout's step (seconds per optimizer step, per GPU) as a stacked bar of
    :data:`atscale.parallelism.PARTS`, and below it the memory per GPU against the usable capacity (dashed; the bar
    red when over it). An infeasible layout shows its reason in red in place of the step, and its memory where the
    model computed one. Results are :class:`atscale.parallelism.StepTime` of one plan."""

    def __init__(self, figsize=(7.0, 4.6)):
        super().__init__(figsize)
        from matplotlib.patches import Patch

        with mpl.rc_context(STYLE):
            self.time_ax = t = self.fig.add_axes((0.05, 0.7, 0.9, 0.17))
            self.mem_ax = m = self.fig.add_axes((0.05, 0.12, 0.9, 0.1))
            for ax in (t, m):
                ax.grid(False)
                ax.set_yticks([])
                ax.set_ylim(-0.4, 0.4)
            t.set_xlabel("Seconds per optimizer step, per GPU", fontsize=9)
            m.set_xlabel("Memory per GPU (GB)", fontsize=9)
            self.bars = [self.dynamic(b) for b in t.barh(np.zeros(len(P.PARTS)), np.ones(len(P.PARTS)), height=0.6,
                                                          color=[_PART_COLOURS[n] for n in P.PARTS])]
            self.legend = t.legend(handles=[Patch(color=_PART_COLOURS[n], label=P.PART_LABELS[n]) for n in P.PARTS],
                                   loc="upper center", bbox_to_anchor=(0.5, -0.75), ncol=2, columnspacing=1.5,
                                   handlelength=1.2)
            self.memory = self.dynamic(m.barh([0], [1.0], height=0.6, color=_MEMORY)[0])
            self.capacity = self.dynamic(m.axvline(1.0, color=INK, lw=1.2, ls="--"))
            self.title = self.dynamic(t.text(0.0, 1.12, "", transform=t.transAxes, fontsize=10, weight="bold"))
            self.reason = self.dynamic(t.text(0.5, 0.5, "", ha="center", va="center", fontsize=8.5, color=_RED,
                                              wrap=True, transform=t.transAxes))
            self.mem_text = self.dynamic(m.text(1.0, 1.15, "", ha="right", transform=m.transAxes, fontsize=8))

    def layout(self, step):
        """``(feasible, time axis limit or None, memory axis limit or None)``."""
        step = _one(step)
        feasible = bool(step.feasible)
        t_top = _top(float(step.total), _TIME_LADDER, "a step") if feasible else None
        mem = float(step.memory_total)
        m_top = _top(max(mem, step.memory_capacity) / 1e9, _MEMORY_LADDER, "memory (GB)") if np.isfinite(mem) else None
        self.time_ax.set_axis_on() if feasible else self.time_ax.set_axis_off()
        self.legend.set_visible(feasible)
        if t_top:
            self.time_ax.set_xlim(0, t_top)
        self.mem_ax.set_axis_on() if m_top else self.mem_ax.set_axis_off()
        if m_top:
            self.mem_ax.set_xlim(0, m_top)
        return feasible, t_top, m_top

    def update(self, step):
        feasible, mem = bool(step.feasible), float(step.memory_total)
        for bar in self.bars:
            bar.set_visible(feasible)
        self.reason.set_visible(not feasible)
        label = step.plan.describe() if step.plan is not None else ""
        if feasible:
            stack_parts(self.bars, step)
            self.title.set_text(f"{label}: {float(step.total):.2f} s per step, MFU {float(step.mfu):.1%}")
        else:
            self.title.set_text(f"{label}: infeasible")
            self.reason.set_text(str(step.reason))
        known = np.isfinite(mem)
        for artist in (self.memory, self.capacity, self.mem_text):
            artist.set_visible(known)
        if known:
            cap = step.memory_capacity
            self.memory.set_width(mem / 1e9)
            self.memory.set_color(_RED if mem > cap * (1 + P.MEMORY_MARGIN) else _MEMORY)
            self.capacity.set_xdata([cap / 1e9, cap / 1e9])
            self.mem_text.set_text(f"{mem / 1e9:,.0f} GB of {cap / 1e9:,.0f} GB usable")


def _one(step) -> P.StepTime:
    if not isinstance(step, P.StepTime) or np.ndim(step.compute):
        raise ValueError(f"step={type(step).__name__} must be one layout's atscale.parallelism.StepTime")
    return step
