"""Figures of the chapter "Case study: scaling to 1,000 GPUs" (job completion time)."""

from __future__ import annotations

import numpy as np

from .. import jct
from .. import stragglers as _strag
from .. import _validate as _v
from .. import units as u
import matplotlib as mpl

from ._base import INK, MUTED, PALETTE, STYLE, LiveFigure, house_style, log_axes, new_axes

__all__ = ["TERM_COLORS", "jct_breakdown_chart", "jct_crossover_chart", "jct_scaling_chart",
           "jct_sensitivity_chart", "loss_comparison_chart", "JctExplorerFigure", "straggler_chart"]

TERM_COLORS = {"minimum": "#0072B2", "compute_gap": "#56B4E9", "recompute": "#9ecae1", "communication": "#E69F00",
               "bubble": "#F0E442", "optimizer": "#bdbdbd", "checkpoint": "#009E73", "rework": "#D55E00",
               "restart": "#CC79A7", "straggler": "#7f2704"}
"""One colour per term of :data:`atscale.jct.TERMS` (Okabe-Ito; blues for compute, warm for parallelism,
green-red-purple for reliability)."""


_SHORT_LABELS = {"minimum": "minimum (at peak)", "compute_gap": "achievable vs peak", "recompute": "recomputation",
                 "communication": "communication", "bubble": "bubble", "optimizer": "optimizer",
                 "checkpoint": "checkpoints", "rework": "rework", "restart": "restarts", "straggler": "stragglers"}
"""Short names of the terms for the explorer's key (every glyph costs redraw time; the chapter's
figures use :data:`atscale.jct.TERM_LABELS`)."""


EXPLORER_TERMS = jct.FAILURE_FREE_TERMS + ("straggler",) + jct.RELIABILITY_TERMS
"""The explorer's bar, bottom to top: the terms in summation order, ``straggler`` (0 when off) after ``optimizer``."""


def _check_estimates(estimates, labels):
    estimates = list(estimates)
    if not estimates or not all(isinstance(e, jct.Estimate) for e in estimates):
        raise ValueError("estimates must be a non-empty list of atscale.jct.Estimate")
    labels = list(labels) if labels is not None else [f"{e.gpus:,} GPUs" for e in estimates]
    if len(labels) != len(estimates):
        raise ValueError(f"labels has {len(labels)} entries for {len(estimates)} estimates")
    return estimates, labels


@house_style
def jct_breakdown_chart(estimates, labels=None, *, unit: str = "days", ax=None, legend: bool = True):
    """Horizontal stacked bars: each estimate's wall-clock time split into the terms of :data:`atscale.jct.TERMS`,
    from the theoretical minimum on the left to the predicted total on the right. Infeasible estimates are
    shown as a labelled gap."""
    estimates, labels = _check_estimates(estimates, labels)
    legend = _v.flag("legend", legend)
    scale = {"days": u.day, "hours": u.hour}.get(unit)
    if scale is None:
        raise ValueError(f"unit={unit!r} must be 'days' or 'hours'")
    ax = new_axes(ax)
    y = np.arange(len(estimates))[::-1]
    seen = set()
    for yi, e in zip(y, estimates):
        if not e.feasible:
            ax.text(0, yi, "  infeasible: " + e.reason[:60], va="center", fontsize=8, color=MUTED)
            continue
        left = 0.0
        for name, value in e.parts().items():
            width = value / scale
            ax.barh(yi, width, left=left, height=0.62, color=TERM_COLORS[name], edgecolor="white", linewidth=0.4,
                    label=jct.TERM_LABELS[name] if name not in seen else None)
            seen.add(name)
            left += width
        ax.text(left, yi, f" {left:,.1f}", va="center", fontsize=8, color=INK)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel(f"Wall-clock time ({unit})")
    ax.grid(axis="y", visible=False)
    xmax = max((e.total / scale for e in estimates if e.feasible), default=1.0)
    ax.set_xlim(0, xmax * 1.15)
    if legend:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=7)
    return ax.figure


@house_style
def jct_crossover_chart(sweeps, labels=None, *, mark=None, ax=None, legend: bool = True):
    """Fraction of wall-clock time lost to parallelism (exposed communication + pipeline bubble, dashed) and to
    reliability (checkpoints + rework + restarts, solid) against GPU count, one colour per sweep; a circle
    marks each crossover (:func:`atscale.jct.crossover`), a vertical line ``mark`` GPUs."""
    sweeps = list(sweeps)
    if not sweeps or not all(isinstance(s, jct.Sweep) for s in sweeps):
        raise ValueError("sweeps must be a non-empty list of atscale.jct.Sweep")
    labels = list(labels) if labels is not None else [f"sweep {i + 1}" for i in range(len(sweeps))]
    if len(labels) != len(sweeps):
        raise ValueError(f"labels has {len(labels)} entries for {len(sweeps)} sweeps")
    mark = None if mark is None else _v.count("mark", mark, unit="GPUs")
    legend = _v.flag("legend", legend)
    ax = new_axes(ax)
    lo, hi = np.inf, 0
    for i, (s, label) in enumerate(zip(sweeps, labels)):
        c = PALETTE[i % len(PALETTE)]
        comm = (s.fraction("communication") + s.fraction("bubble")) * 100
        rel_ = s.fraction("reliability") * 100
        ok = np.isfinite(comm)
        ax.plot(s.gpus[ok], comm[ok], color=c, ls="--", lw=1.4)
        ax.plot(s.gpus[ok], rel_[ok], color=c, lw=1.8, label=label)
        x = jct.crossover(s)
        if x is not None:
            y = np.interp(np.log(x), np.log(s.gpus[ok]), rel_[ok])
            ax.scatter([x], [y], s=40, facecolor="white", edgecolor=c, zorder=4, linewidth=1.6)
        if ok.any():
            lo, hi = min(lo, s.gpus[ok].min()), max(hi, s.gpus[ok].max())
    if mark is not None:
        ax.axvline(mark, color=MUTED, lw=0.8, ls=":")
    ax.set_xlim(lo, hi)
    log_axes(ax, y=False)
    ax.set_ylim(0, None)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("Share of wall-clock time (%)")
    if legend:
        ax.plot([], [], color=INK, ls="--", lw=1.4, label="communication + bubble")
        ax.plot([], [], color=INK, lw=1.8, label="reliability")
        ax.legend(loc="upper left", fontsize=7)
    return ax.figure


@house_style
def jct_scaling_chart(sweeps, labels=None, *, ax=None):
    """Predicted wall-clock time (days) against GPU count, log-log, with perfect scaling from each sweep's
    first feasible point (dotted) and the shortest job of each sweep circled (:func:`atscale.jct.sync_wall`)."""
    sweeps = list(sweeps)
    if not sweeps or not all(isinstance(s, jct.Sweep) for s in sweeps):
        raise ValueError("sweeps must be a non-empty list of atscale.jct.Sweep")
    labels = list(labels) if labels is not None else [f"sweep {i + 1}" for i in range(len(sweeps))]
    ax = new_axes(ax)
    lo, hi, ylo, yhi = np.inf, 0, np.inf, 0
    for i, (s, label) in enumerate(zip(sweeps, labels)):
        c = PALETTE[i % len(PALETTE)]
        t = s.total / u.day
        ok = np.isfinite(t)
        g = s.gpus[ok]
        ax.plot(g, t[ok], color=c, marker="o", ms=3, label=label)
        ax.plot(g, t[ok][0] * g[0] / g, color=c, lw=0.8, ls=":")
        w = jct.sync_wall(s)
        ax.scatter([w["gpus"]], [w["total"] / u.day], s=90, facecolor="none", edgecolor=c, linewidth=1.6, zorder=4)
        lo, hi = min(lo, g.min()), max(hi, g.max())
        ylo, yhi = min(ylo, np.nanmin(t)), max(yhi, np.nanmax(t))
    ax.set_xlim(lo, hi)
    ax.set_ylim(ylo / 3, yhi * 1.5)
    log_axes(ax)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("Predicted wall-clock time (days)")
    ax.plot([], [], color=MUTED, lw=0.8, ls=":", label="perfect scaling")
    ax.legend(loc="lower left", fontsize=7)
    return ax.figure


@house_style
def jct_sensitivity_chart(result, *, ax=None):
    """Tornado chart of :func:`atscale.jct.sensitivity`: the change of the predicted wall-clock time (%) when
    each assumption moves to its low (blue) and high (orange) setting, largest swing on top."""
    if not isinstance(result, jct.Sensitivity):
        raise ValueError("result must be an atscale.jct.Sensitivity")
    ax = new_axes(ax)
    base = result.base.total
    rows = list(result.rows)[::-1]
    y = np.arange(len(rows))
    for yi, (name, lo_label, hi_label, lo, hi) in zip(y, rows):
        for value, label, c in ((lo, lo_label, PALETTE[0]), (hi, hi_label, PALETTE[1])):
            d = (value / base - 1) * 100
            ax.barh(yi, d, color=c, height=0.6)
            ax.text(d, yi, f" {label} " if d >= 0 else f" {label} ", ha="left" if d >= 0 else "right",
                    va="center", fontsize=7, color=INK)
    ax.axvline(0, color=INK, lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.grid(axis="y", visible=False)
    lim = max(abs(r[3] / base - 1) for r in rows) * 100
    lim = max(lim, max(abs(r[4] / base - 1) for r in rows) * 100)
    ax.set_xlim(-lim * 1.6, lim * 1.6)
    ax.set_xlabel(f"Change of the predicted wall-clock time (%); base {base / u.day:,.1f} days")
    ax.figure.subplots_adjust(left=0.36)
    return ax.figure


@house_style
def loss_comparison_chart(gpus, tutorial, ours, *, ax=None):
    """Grouped bars of hours lost over 30 days at each GPU count: the tutorial's communication and checkpoint
    columns (hatched) beside ours. ``tutorial`` and ``ours``: ``{"communication": [...], "reliability": [...]}``
    in hours, one value per GPU count."""
    gpus = [int(g) for g in np.atleast_1d(_v.count("gpus", gpus, scalar=False))]
    for name, d in (("tutorial", tutorial), ("ours", ours)):
        if set(d) != {"communication", "reliability"} or any(len(v) != len(gpus) for v in d.values()):
            raise ValueError(f"{name} must map 'communication' and 'reliability' to {len(gpus)} values")
    ax = new_axes(ax)
    x = np.arange(len(gpus))
    w = 0.2
    specs = ((tutorial, "communication", PALETTE[1], "//", "tutorial: communication"),
             (tutorial, "reliability", PALETTE[2], "//", "tutorial: checkpoints + rollback"),
             (ours, "communication", PALETTE[1], None, "this chapter: communication + bubble"),
             (ours, "reliability", PALETTE[2], None, "this chapter: checkpoints + rework + restarts"))
    for k, (d, key, c, hatch, label) in enumerate(specs):
        vals = np.asarray(d[key], dtype=float)
        ax.bar(x + (k - 1.5) * w, vals, w, color=c if hatch is None else "white", edgecolor=c, hatch=hatch,
               linewidth=1.0, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{g:,}" for g in gpus])
    ax.set_xlabel("GPUs")
    ax.set_ylabel("Hours lost in 30 days")
    ax.grid(axis="x", visible=False)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.05)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=7)
    return ax.figure


_Y_LADDER = (5, 10, 15, 20, 30, 40, 50, 60, 80, 100)
"""Upper limits (%) of the explorer's crossover panel: the smallest that holds the curves is used, so only a
handful of backgrounds are ever drawn (see :class:`atscale.plots.LiveFigure`)."""


class JctExplorerFigure(LiveFigure):
    """The JCT explorer's figure: one job's wall-clock time as a stacked bar of the terms of
    :data:`atscale.jct.TERMS` and ``straggler`` (:data:`EXPLORER_TERMS`; left, to scale, total above it), and the
    crossover plot of its configuration over GPU counts (right: exposed communication + bubble + stragglers dashed,
    reliability solid, crossover circled, the job's GPU count dotted). Results are ``(estimate, sweep, label)`` as computed by
    :func:`atscale.widgets.jct.explorer_view`; the sweep's GPU counts must be ``gpus`` (fixed x axis).
    Days on the left, % of wall-clock time on the right.
    """

    def __init__(self, figsize=(8.8, 3.6), gpus=(64, 128, 256, 512, 1024, 2048, 4096, 8192, 16_384)):
        super().__init__(figsize)
        from matplotlib.ticker import MaxNLocator

        self.gpus = np.atleast_1d(np.asarray(_v.count("gpus", gpus, scalar=False), dtype=float))
        names = list(EXPLORER_TERMS)
        with mpl.rc_context(STYLE):
            left = self.fig.add_axes([0.07, 0.16, 0.16, 0.66])
            right = self.fig.add_axes([0.53, 0.14, 0.44, 0.74])
            self.left, self.right = left, right
            # Left: one stacked bar; no y ticks (the total is written above it, the key names the parts).
            left.set_xlim(-0.5, 0.5)
            left.set_xticks([])
            left.set_yticks([])
            left.set_ylabel("Wall-clock time (days, to scale)")
            left.grid(False)
            bars = left.bar(np.zeros(len(names)), np.ones(len(names)), bottom=np.arange(len(names)),
                            color=[TERM_COLORS[n] for n in names], width=0.6)
            self.bars = [self.dynamic(r) for r in bars]
            self.total = self.dynamic(left.text(0.5, 1.02, "", transform=left.transAxes, ha="center",
                                                va="bottom", fontsize=10, fontweight="bold"))
            self.gpu_label = self.dynamic(left.text(0.5, -0.03, "", transform=left.transAxes, ha="center",
                                                    va="top", fontsize=8))
            self.infeasible = self.dynamic(left.text(0.5, 0.5, "infeasible", transform=left.transAxes,
                                                     ha="center", fontsize=9, color=MUTED))
            # The key is static: every term, top to bottom in stack order (a term too small to see stays listed).
            for row, name in enumerate(names[::-1]):
                left.text(1.12, 0.5 + 0.09 * (len(names) / 2 - row - 0.5), f"■ {_SHORT_LABELS[name]}",
                          color=TERM_COLORS[name] if name != "bubble" else "#b8a600", transform=left.transAxes,
                          fontsize=7, va="center")
            # Right: the crossover plot on a fixed log axis of GPU counts.
            c = PALETTE[0]
            self.comm, = right.plot(self.gpus, np.zeros_like(self.gpus), color=c, ls="--", lw=1.4)
            self.rel, = right.plot(self.gpus, np.zeros_like(self.gpus), color=c, lw=1.8)
            self.cross, = right.plot([np.nan], [np.nan], ls="none", marker="o", ms=7, mfc="white", mec=c, mew=1.6)
            self.mark = right.axvline(self.gpus[0], color=MUTED, lw=0.8, ls=":")
            for artist in (self.comm, self.rel, self.cross, self.mark):
                self.dynamic(artist)
            right.set_xlim(self.gpus[0], self.gpus[-1])
            log_axes(right, y=False)
            ticks = [x for x in self.gpus if np.log2(x) % 2 == 0] or list(self.gpus)
            right.set_xticks(ticks)
            right.set_xticklabels([f"{x:,.0f}" for x in ticks])
            right.yaxis.set_major_locator(MaxNLocator(5))
            right.set_xlabel("GPUs")
            right.set_ylabel("Share of wall-clock time (%)")
            right.text(0.0, 1.02, "- - communication + bubble (+ stragglers)   — reliability", transform=right.transAxes,
                       fontsize=8, color=INK)

    @staticmethod
    def _check(view):
        est, sw, _label = view
        if not isinstance(est, jct.Estimate) or not isinstance(sw, jct.Sweep):
            raise ValueError("view must be (atscale.jct.Estimate, atscale.jct.Sweep, label)")
        return est, sw

    def _shares(self, sw):
        if sw.gpus.shape != self.gpus.shape or not np.array_equal(sw.gpus, self.gpus):
            raise ValueError(f"the sweep's GPU counts {list(sw.gpus)} must be the figure's {list(self.gpus)}")
        return (sw.fraction("communication") + sw.fraction("bubble") + sw.fraction("straggler")) * 100, \
            sw.fraction("reliability") * 100

    def layout(self, view):
        """The crossover panel's upper limit (%), from :data:`_Y_LADDER`; applied to the axes."""
        _est, sw = self._check(view)
        comm, rel_ = self._shares(sw)
        peak = np.nanmax(np.concatenate([comm, rel_, [0.0]]))
        top = next((y for y in _Y_LADDER if peak * 1.05 <= y), _Y_LADDER[-1])
        self.right.set_ylim(0, top)
        return top

    def update(self, view):
        est, sw = self._check(view)
        comm, rel_ = self._shares(sw)
        self.comm.set_ydata(comm)
        self.rel.set_ydata(rel_)
        x = jct.crossover(sw, ("communication", "bubble", "straggler"))
        ok = np.isfinite(rel_)
        if x is not None and ok.any():
            self.cross.set_data([x], [np.interp(np.log(x), np.log(sw.gpus[ok]), rel_[ok])])
        else:
            self.cross.set_data([np.nan], [np.nan])
        self.mark.set_xdata([est.gpus, est.gpus])
        self.gpu_label.set_text(f"{est.gpus:,} GPUs")
        self.infeasible.set_visible(not est.feasible)
        self.total.set_visible(est.feasible)
        for r in self.bars:
            r.set_visible(est.feasible)
        if est.feasible:
            h = np.array([getattr(est, n) for n in EXPLORER_TERMS]) / u.day
            for r, bottom, height in zip(self.bars, np.concatenate(([0.0], np.cumsum(h)[:-1])), h):
                r.set_y(bottom)
                r.set_height(height)
            self.left.set_ylim(0, h.sum() * 1.05)  # no ticks on this axis: the background does not depend on it
            self.total.set_text(f"{h.sum():,.1f} days")


@house_style
def straggler_chart(gpus=None, *, stragglers=None, gpus_per_host: int = 8, mark=(1024,), ax=None):
    """The expected wait of a synchronous step for its slowest GPU, as a percentage of the GPUs' compute time,
    against the GPU count (log axis): the jitter of every GPU (``σ E[max of N]``), the rare slow hosts
    (``s (1 - (1 - p)^H)``) and their sum (:func:`atscale.stragglers.straggler_fraction`); dotted verticals at
    the counts of ``mark``. ``stragglers``: a :class:`atscale.stragglers.Stragglers` (default the published
    readings); ``gpus``: the counts drawn (default 8 to 131,072)."""
    model = _strag.STRAGGLERS if stragglers is None else stragglers
    if not isinstance(model, _strag.Stragglers):
        raise ValueError(f"stragglers={_v.show(stragglers)} must be an atscale.stragglers.Stragglers or None")
    g = np.unique(np.geomspace(8, 131_072, 49).round()) if gpus is None else np.unique(
        _v.count("gpus", gpus, scalar=False))
    per_host = _v.count("gpus_per_host", gpus_per_host)
    mark = () if mark is None else tuple(int(m) for m in np.ravel(_v.count("mark", mark, scalar=False)))
    jitter = model.jitter * np.atleast_1d(_strag.expected_max_normal(g))
    slow = model.slow_factor * np.atleast_1d(_strag.any_slow_probability(np.ceil(g / per_host).astype(int),
                                                                         model.slow_probability))
    total = np.atleast_1d(model.fraction(g, per_host))
    ax = new_axes(ax)
    ax.plot(g, 100 * jitter, color=PALETTE[0], ls="--", label=f"jitter of every GPU (σ = {model.jitter:.2%})")
    ax.plot(g, 100 * slow, color=PALETTE[3], ls="-.",
            label=f"slow hosts ({model.slow_factor:.0%} slower, p = {model.slow_probability:.1e} each)")
    ax.plot(g, 100 * total, color=INK, lw=2, label="expected wait (sum)")
    for m in mark:
        ax.axvline(m, color=MUTED, lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlim(g.min(), g.max())
    ticks = [t for t in 8 ** np.arange(1, 7) if g.min() <= t <= g.max()]
    ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
    ax.set_ylim(0, 100 * total.max() * 1.15)
    ax.set_xlabel("GPUs in the job")
    ax.set_ylabel("Wait for the slowest GPU (% of compute)")
    ax.legend(loc="upper left", fontsize=7)
    return ax.figure
