"""Figures of the chapter "Reliability"."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
from matplotlib.ticker import MaxNLocator

from .. import reliability as rel
from .. import _validate as _v
from .. import units as u
from ._base import INK, MARGINS, MUTED, PALETTE, STYLE, LiveFigure, house_style, log_axes, new_axes

__all__ = ["mtbf_sweep_chart", "u_curve_chart", "timeline_chart", "first_order_breakdown_chart",
           "profile_comparison_chart", "research_cluster_chart", "UCurveExplorerFigure", "TimelineExplorerFigure"]

_JOB_SIZES = np.unique(np.geomspace(8, 131_072, 60) // 8 * 8).astype(int)
"""Job sizes the job-MTBF charts draw: 60 whole nodes of 8 GPUs from 8 to 131,072, evenly on a log scale."""


def _job_mtbf_axes(ax, title: str, references, x: float, ha: str) -> None:
    """Log axes of job size (GPUs) against the mean time between job failures (h), with dotted reference times
    (``(hours, label)`` pairs) labelled at ``x``."""
    for hours, label in references:
        ax.axhline(hours, color=MUTED, lw=0.8, ls=":")
        ax.text(x, hours * 1.1, label, ha=ha, va="bottom", fontsize=8, color=MUTED)
    log_axes(ax)
    ax.set_xlabel("Job size (GPUs)")
    ax.set_ylabel("Mean time between job failures (h)")
    ax.set_title(title)


_OBSERVATION_MARKERS = ("*", "P", "X", "h")
"""Markers of the published fleet observations, in the order of :data:`atscale.reliability.OBSERVATIONS`."""


@house_style
def mtbf_sweep_chart(profiles=None, *, gpus=None, mark=(8, 1024, 16_384), observations=rel.OBSERVATIONS, ax=None):
    """Job MTBF (hours) against GPU count for failure profiles, log-log, with a day and a week marked.

    ``observations`` (:class:`atscale.reliability.FleetObservation`) are drawn as stars: the
    measured MTBF that the profiles are compared with, with its one-standard-error Poisson
    uncertainty (:attr:`~atscale.reliability.FleetObservation.relative_uncertainty`) as the bar.
    """
    profiles = list(profiles or rel.PROFILES.values())
    gpus = _JOB_SIZES if gpus is None else np.atleast_1d(_v.count("gpus", gpus, scalar=False))
    mark = _v.sequence("mark", mark, allow_empty=True, low=1, integer=True, unit="GPUs")
    ax = new_axes(ax)
    for i, p in enumerate(profiles):
        mtbf = p.cluster_mtbf(gpus) / u.hour
        ax.plot(gpus, mtbf, color=PALETTE[i], label=p.name)
        marks = np.array([g for g in mark if g % p.gpus_per_node == 0])
        if marks.size:
            ax.scatter(marks, p.cluster_mtbf(marks) / u.hour, color=PALETTE[i], s=24, zorder=3)
    for obs, marker in zip(observations, _OBSERVATION_MARKERS):
        m, err = obs.mtbf / u.hour, obs.relative_uncertainty * obs.mtbf / u.hour
        ax.errorbar([obs.gpus], [m], yerr=[[err], [err]], fmt="none", ecolor=INK, elinewidth=1.0,
                    capsize=4, zorder=4)
        ax.scatter([obs.gpus], [m], marker=marker, s=140 if marker == "*" else 80, color=INK, zorder=5,
                   label=f"{obs.name}, ±{obs.relative_uncertainty:.0%} (Poisson)")
    ax.set_xlim(gpus.min(), gpus.max())
    ax.set_ylim(0.1, 20_000)
    _job_mtbf_axes(ax, "Failures become routine at scale", ((24, "one day"), (168, "one week"), (1, "one hour")),
                   gpus.max() / 1.1, "right")
    ax.legend(loc="lower left", fontsize=8)
    return ax.figure


@house_style
def u_curve_chart(gpus: int = 1024, checkpoint_time: float = 60.0, restart_time: float = 600.0, *,
                  profile: str = "textbook default (8 GPUs, 8 NICs, 2 PSUs)", simulate: bool = True,
                  trials_per_point: int = 60, seed: int = 0, ax=None):
    """Wasted fraction of wall-clock time against the checkpoint interval: the U-curve.

    Lines: first-order checkpoint writes (blue), first-order rework + restarts (orange), their sum, and the exact
    expectation (Daly 2006). Points: a seeded Monte Carlo (``trials_per_point`` runs per
    interval, each of 40 checkpoint intervals of work, so the cost of a redraw depends neither on
    the MTBF nor on how short the interval is). Vertical lines: Young's (solid) and Daly's (dotted)
    intervals.
    """
    if profile not in rel.PROFILES:
        raise ValueError(f"profile={profile!r} is not one of {list(rel.PROFILES)}")
    simulate = _v.flag("simulate", simulate)
    trials_per_point = _v.count("trials_per_point", trials_per_point, high=100_000)
    checkpoint_time = _v.positive("checkpoint_time", checkpoint_time, scalar=True, unit="seconds")
    restart_time = _v.nonnegative("restart_time", restart_time, scalar=True, unit="seconds")
    mtbf = rel.PROFILES[profile].cluster_mtbf(_v.count("gpus", gpus))
    young = rel.young_interval(checkpoint_time, mtbf)
    taus = np.geomspace(young / 12, young * 12, 80)
    w = rel.waste(taus, checkpoint_time, mtbf, restart_time)
    exact = 1 - rel.goodput_exact(taus, checkpoint_time, mtbf, restart_time)
    ax = new_axes(ax)
    h = taus / u.hour
    # The two parts are labelled on the curves (a legend entry each would cost ~10 ms of redraw).
    ax.plot(h, 100 * w.checkpoint, color=PALETTE[0], lw=1.2)
    ax.plot(h, 100 * (w.rework + w.restart), color=PALETTE[1], lw=1.2)
    # A curve's label sits on the curve where that lies on the axis (at most 100% wasted): a restart of many MTBFs
    # puts the rework curve astronomically high, where a label would be off the figure (and too far to draw).
    for x, y, text, kw in ((h[6], 100 * w.checkpoint[6], " writes", dict(color=PALETTE[0], va="top")),
                           (h[-12], 100 * (w.rework + w.restart)[-12], "rework + restarts ",
                            dict(color=PALETTE[1], ha="right", va="bottom"))):
        if 0 <= y <= 100:
            ax.text(x, y, text, fontsize=8, **kw)
    feasible = w.total < 1  # the first-order model says no progress at all where the waste reaches 100%
    if feasible.any():
        ax.plot(h, 100 * np.where(feasible, w.total, np.nan), color=INK, label="total, first order")
    else:  # drawn off the axis, its legend entry would name an invisible line: the entry says why instead
        ax.plot([], [], ls="none", label=f"total, first order: infeasible (≥ 100% at every interval; "
                                         f"R/M = {restart_time / mtbf:.0%})")
    ax.plot(h, 100 * exact, color=PALETTE[3], ls="--", label="total, exact (Daly)")
    if simulate:
        points = np.geomspace(young / 8, young * 8, 9)
        # Simulate only where a run finishes quickly: a segment of s MTBFs is tried e^s times on average (e^2 =
        # 7.4 at the limit), each failure adding a restart; beyond, a redraw took seconds. The exact curve
        # covers the rest.
        points = points[(points + checkpoint_time) / mtbf <= 2.0] if restart_time / mtbf <= 2.0 else points[:0]
        if points.size:
            per_trial = np.repeat(points, trials_per_point)
            sim = rel.simulate(40 * per_trial, per_trial, checkpoint_time, mtbf,
                               restart_time, trials=points.size * trials_per_point, seed=seed)
            wasted = 1 - sim.goodput.reshape(points.size, trials_per_point).mean(axis=1)
            ax.scatter(points / u.hour, 100 * wasted, color=PALETTE[3], s=22, zorder=3,
                       label=f"simulation ({trials_per_point} runs each)")
    daly = rel.daly_interval(checkpoint_time, mtbf)
    ax.axvline(young / u.hour, color=PALETTE[2], lw=1.0)
    ax.axvline(daly / u.hour, color=PALETTE[2], lw=1.0, ls=":")
    ax.text(young / u.hour * 1.05, 0.03, f"Young {u.fmt_time(young)}", transform=ax.get_xaxis_transform(),
            fontsize=8, va="bottom", color=PALETTE[2])
    ax.set_xlim(h.min(), h.max())
    top = float(np.nanmax(100 * np.minimum(w.total, 1)))
    ax.set_ylim(0, min(100.0, max(5.0, 1.1 * float(100 * w.total.min()) * 4, 0.4 * top)))
    log_axes(ax, y=False)
    ax.yaxis.set_major_locator(MaxNLocator(5))  # every tick is ~2 ms of redraw
    ax.set_xlabel("Checkpoint interval (h)")
    ax.set_ylabel("Wall-clock time wasted (%)")
    # A short title: every character of text costs redraw time; δ and R are in the caption and controls.
    ax.set_title(f"{gpus:,} GPUs, MTBF {u.fmt_time(mtbf)}")
    # where the waste is high everywhere the curves fill the top: the legend goes to the empty middle right
    ax.legend(loc="upper center" if feasible.all() else "center right", fontsize=7.5)
    return ax.figure


TIMELINE_MAX_EVENTS = 1_500
"""Events a timeline figure draws at most: a run that would need more is refused with the reason."""
TIMELINE_MAX_ROWS = 14
"""Rows a timeline figure draws at most (one per day, or several days per row for a long run)."""

_KIND_COLOURS = {"work": PALETTE[2], "checkpoint": PALETTE[0], "lost": PALETTE[3], "restart": PALETTE[1]}


@house_style
def timeline_chart(gpus: int = 1024, interval_hours: float = 1.0, checkpoint_time: float = 60.0,
                   restart_time: float = 900.0, *, work_days: float = 3.0, seed: int = 9,
                   profile: str = "textbook default (8 GPUs, 8 NICs, 2 PSUs)", ax=None):
    """One simulated run as a timeline: useful work, checkpoint stalls, work lost to failures, restarts.

    Drawn as one row per day of wall-clock time. The default ``seed=9`` gives, at the default
    settings, a run with three failures: close to the expected number (about 2.3 in 3.15 days at
    1,024 GPUs), so the picture is typical rather than lucky (seed 3, the earlier default, had one).
    """
    if profile not in rel.PROFILES:
        raise ValueError(f"profile={profile!r} is not one of {list(rel.PROFILES)}")
    gpus = _v.count("gpus", gpus)
    interval_hours, work_days = (_v.positive(n, x, scalar=True, unit=n.split("_")[1]) for n, x in
                                 (("interval_hours", interval_hours), ("work_days", work_days)))
    checkpoint_time, restart_time = (_v.nonnegative(n, x, scalar=True, unit="seconds") for n, x in
                                     (("checkpoint_time", checkpoint_time), ("restart_time", restart_time)))
    mtbf = rel.PROFILES[profile].cluster_mtbf(gpus)
    try:
        events = rel.timeline(work_days * u.day, interval_hours * u.hour, checkpoint_time, mtbf, restart_time,
                              seed=seed, max_events=TIMELINE_MAX_EVENTS)
    except ValueError as exc:
        raise ValueError(f"infeasible timeline, not drawn: {str(exc).removeprefix('infeasible to simulate: ')} "
                         f"(work_days={work_days:g}, interval_hours={interval_hours:g})") \
            from None
    end = events[-1].end
    # One row per day; a run of more than MAX_ROWS days gets rows of several days each, so the labels stay
    # readable and the redraw fast (hundreds of day rows took seconds and overlapped).
    days_per_row = max(1, int(np.ceil(end / u.day / TIMELINE_MAX_ROWS)))
    row_len = days_per_row * u.day
    rows = int(np.ceil(end / row_len))
    ax = new_axes(ax)
    for kind, colour in _KIND_COLOURS.items():
        if kind == "checkpoint":  # a 60 s stall is under a pixel wide on a 24 h row: draw a tick instead
            starts = np.array([e.start for e in events if e.kind == kind])
            rows_ = starts // row_len
            ax.vlines((starts - rows_ * row_len) / u.hour, rows_ - 0.35, rows_ + 0.35, colors=colour, lw=0.9,
                      label=kind, zorder=3)
            continue
        spans = []
        for e in (e for e in events if e.kind == kind):
            start, stop = e.start, e.end
            while start < stop - 1e-9:  # split spans that cross midnight
                row = int(start // row_len)
                cut = min(stop, (row + 1) * row_len)
                spans.append((row, (start - row * row_len) / u.hour, (cut - start) / u.hour))
                start = cut
        for row in range(rows):
            bars = [(x, w) for r_, x, w in spans if r_ == row]
            if bars:
                ax.broken_barh(bars, (row - 0.35, 0.7), facecolors=colour, label=kind if row == 0 else None)
        if not any(r_ == 0 for r_, _, _ in spans) and spans:
            ax.broken_barh([], (0, 0), facecolors=colour, label=kind)
    failures = [e.start for e in events if e.kind == "lost"]
    fail_times = np.array([e.end for e in events if e.kind == "lost"])
    ax.scatter((fail_times % row_len) / u.hour, fail_times // row_len, marker="x", color=INK, s=30, zorder=4,
               label=f"failure ({len(failures)})")
    ax.set_xlim(0, 24 * days_per_row)
    ax.set_ylim(rows - 0.5, -0.5)
    if days_per_row == 1:
        ax.set_yticks(range(rows), [f"day {i + 1}" for i in range(rows)])
        ax.set_xlabel("Hour of the day (h)")
    else:
        ax.set_yticks(range(rows), [f"days {i * days_per_row + 1}-{(i + 1) * days_per_row}" for i in range(rows)])
        ax.set_xlabel(f"Hour within each row of {days_per_row} days (h)")
        ax.xaxis.set_major_locator(MaxNLocator(8, integer=True))
        ax.figure.subplots_adjust(left=0.17)  # room for the longer row labels
    ax.set_title(f"One simulated run: {gpus:,} GPUs, {work_days:g} days of work in {end / u.day:.2f} days")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=5, fontsize=8)
    ax.figure.subplots_adjust(bottom=0.25)  # room for the legend under the axis
    ax.grid(axis="y", visible=False)
    return ax.figure


@house_style
def first_order_breakdown_chart(checkpoint_time: float = 60.0, restart_time: float = 0.0, *,
                                seed: int = 0, trials: int = 2000, ax=None):
    """Goodput at Young's interval as the MTBF shrinks relative to δ: first order vs exact vs simulation.

    The x-axis is ``δ / M``; the first-order model holds on the left and breaks on the right.
    """
    checkpoint_time = _v.positive("checkpoint_time", checkpoint_time, scalar=True, high=1e12, unit="seconds")
    restart_time = _v.nonnegative("restart_time", restart_time, scalar=True, high=1e12, unit="seconds")
    trials = _v.count("trials", trials, high=100_000)
    ratios = np.geomspace(1e-4, 0.5, 40)
    mtbf = checkpoint_time / ratios
    tau = rel.young_interval(checkpoint_time, mtbf)
    first = rel.waste(tau, checkpoint_time, mtbf, restart_time).goodput
    exact = rel.goodput_exact(tau, checkpoint_time, mtbf, restart_time)
    ax = new_axes(ax)
    ax.plot(ratios, 100 * first, color=INK, label="first-order model")
    ax.plot(ratios, 100 * exact, color=PALETTE[3], ls="--", label="exact expectation (Daly)")
    pts = np.geomspace(1e-3, 0.5, 7)
    sims = []
    for i, r in enumerate(pts):
        m_ = checkpoint_time / r
        t_ = rel.young_interval(checkpoint_time, m_)
        sims.append(rel.simulate(200 * t_, t_, checkpoint_time, m_, restart_time, trials=trials, seed=seed + i)
                    .mean_goodput)
    ax.scatter(pts, 100 * np.array(sims), color=PALETTE[3], s=24, zorder=3, label=f"simulation ({trials:,} runs)")
    ax.set_xlim(ratios.min(), ratios.max())
    ax.set_ylim(0, 100)
    log_axes(ax, y=False)
    ax.set_xlabel("Checkpoint time over MTBF, δ / M")
    ax.set_ylabel("Goodput at Young's interval (%)")
    ax.set_title("Where the first-order formula stops holding")
    ax.legend(loc="lower left")
    return ax.figure


@house_style
def profile_comparison_chart(*, ax=None):
    """Failures per node per year, by component, for each failure profile."""
    profiles = list(rel.PROFILES.values())
    ax = new_axes(ax)
    y = np.arange(len(profiles))
    left = np.zeros(len(profiles))
    def short(component):  # "GPU (faulty GPU, HBM3, ...)" and "GPU" are the same kind of part
        return component.name.split(" (")[0]

    names = list(dict.fromkeys(short(c) for p in profiles for c in p.components))
    for i, name in enumerate(names):
        rates = np.array([sum(c.per_node / c.mttf for c in p.components if short(c) == name) * u.year
                          for p in profiles])
        ax.barh(y, rates, left=left, color=PALETTE[i % len(PALETTE)], height=0.5, label=name)
        left += rates
    for yi, total in zip(y, left):
        ax.text(total, yi, f" {total:.2f} / year", va="center", fontsize=9)
    ax.set_yticks(y, ["textbook default", "fitted to Llama 3"])
    ax.set_xlim(0, left.max() * 1.6)
    ax.set_xlabel("Failures per 8-GPU node per year (1/year)")
    ax.set_title("What fails: a textbook default vs a large fleet")
    ax.legend(loc="center right", fontsize=8)
    ax.figure.subplots_adjust(left=0.24)
    ax.grid(axis="y", visible=False)
    return ax.figure


@house_style
def research_cluster_chart(*, ax=None):
    """Job MTBF (hours) against job size (GPUs), log-log: a research fleet's published rates against one
    dedicated run, and against what was measured.

    Solid lines: the research clusters' failure rates per node-day (Kokolis et al. 2025) through
    ``1/(N·r_f)`` (:func:`atscale.reliability.mtbf_from_node_rate`), the textbook profile and the profile fitted
    to Llama 3. Dotted: the rate that the measured 1,024-GPU jobs imply
    (:meth:`atscale.reliability.JobMTTF.implied_rate`). Markers: the research clusters' measured job MTTFs
    (diamonds), the study's projections as printed (open circles, on the RSC-1 line), Llama 3's measured job MTBF
    (star). A day and an hour are marked.
    """
    gpus = _JOB_SIZES
    measured = max(rel.RSC_JOB_MTTF, key=lambda j: j.gpus)
    implied = measured.implied_rate()
    curves = (("textbook profile", rel.TEXTBOOK_PROFILE.cluster_mtbf, PALETTE[0], "-"),
              ("fitted to Llama 3 (one H100 run)", rel.LLAMA3_PROFILE.cluster_mtbf, PALETTE[1], "-"),
              *((f"{r.name.split(' research')[0].removeprefix('Meta ')} rate, "
                 f"{r.per_thousand_node_days:.2f} per 1,000 node-days", r.job_mtbf, colour, "-")
                for r, colour in zip(rel.RSC_RATES, (PALETTE[2], PALETTE[4]))),
              (f"implied by the measured {measured.gpus:,}-GPU jobs, {implied.per_thousand_node_days:.1f} per 1,000 "
               f"node-days", implied.job_mtbf, PALETTE[3], ":"))
    ax = new_axes(ax)
    for label, mtbf, colour, style in curves:
        ax.plot(gpus, mtbf(gpus) / u.hour, color=colour, ls=style, label=label)
    ax.scatter([j.gpus for j in rel.RSC_JOB_MTTF], [j.mttf / u.hour for j in rel.RSC_JOB_MTTF], marker="D", s=36,
               color=PALETTE[3], zorder=5, label="measured: research-cluster jobs")
    ax.scatter(list(rel.RSC_PROJECTED_MTTF), np.array(list(rel.RSC_PROJECTED_MTTF.values())) / u.hour, s=70,
               facecolors="none", edgecolors=INK, zorder=5, label="the study's projections, as printed")
    for obs, marker in zip(rel.OBSERVATIONS, _OBSERVATION_MARKERS):
        ax.scatter([obs.gpus], [obs.mtbf / u.hour], marker=marker, s=140 if marker == "*" else 80, color=INK, zorder=6,
                   label=f"measured: {obs.name}"
                   .replace(" (measured)", ""))
    ax.set_xlim(6, 180_000)
    ax.set_ylim(0.02, 1_000_000)
    _job_mtbf_axes(ax, "Research clusters against one dedicated run", ((24, "one day"), (1, "one hour")), 7, "left")
    ax.legend(loc="upper right", fontsize=7)
    ax.figure.subplots_adjust(left=0.15)
    return ax.figure


# --------------------------------------------------------------------------------------
# The chapter's explorers, drawn in two layers (see :class:`atscale.plots.LiveFigure`)
# --------------------------------------------------------------------------------------
_U_Y_LADDER = (5, 10, 15, 20, 25, 30, 40, 50, 60, 80, 100)
"""Upper limits (%) of the U-curve explorer's y axis: the smallest that holds the old rule's limit is used, so
only a handful of backgrounds are ever drawn."""

_TITLE_OFFSET = 6 / 72  # inches above the axes, as matplotlib's default title pad (6 points)


def _title(ax, fig):
    """A title-like text above ``ax`` whose content can change without redrawing the background."""
    from matplotlib.transforms import ScaledTranslation

    return ax.text(0.5, 1.0, "", transform=ax.transAxes + ScaledTranslation(0, _TITLE_OFFSET, fig.dpi_scale_trans),
                   ha="center", va="baseline", fontsize=mpl.rcParams["axes.titlesize"],
                   fontweight=mpl.rcParams["axes.titleweight"], color=INK)


def _require(view, cls):
    if not isinstance(view, cls):
        raise ValueError(f"view must be an atscale.reliability.{cls.__name__}, not {type(view).__name__}")


class UCurveExplorerFigure(LiveFigure):
    """The U-curve explorer's figure: wasted fraction of wall-clock time (%) against the checkpoint interval
    (hours, log axis).

    Lines: first-order checkpoint writes (blue), first-order rework + restarts (orange), their sum (black; left
    out where the first-order waste reaches 100%, and the whole curve replaced by a note saying so when it does at
    every interval), the exact expectation (dashed, Daly 2006 eq. 13). Points: the seeded Monte Carlo. Vertical
    lines: Young's (solid, labelled) and Daly's (dotted) intervals. Draws a
    :class:`atscale.reliability.UCurve`: its intervals span the x axis (they move in quarter decades,
    so the axis does too), and the y limit is taken from :data:`_U_Y_LADDER`.
    """

    def __init__(self, figsize=(6.4, 4.0)):
        super().__init__(figsize)
        from matplotlib.ticker import MaxNLocator

        with mpl.rc_context(STYLE):
            self.fig.subplots_adjust(**MARGINS)
            ax = self.ax = self.fig.add_subplot()
            d = self.dynamic
            self.writes, = ax.plot([], [], color=PALETTE[0], lw=1.2)
            self.rework, = ax.plot([], [], color=PALETTE[1], lw=1.2)
            self.total, = ax.plot([], [], color=INK, label="total, first order")
            self.exact, = ax.plot([], [], color=PALETTE[3], ls="--", label="total, exact (Daly)")
            self.sim, = ax.plot([], [], ls="none", marker="o", ms=22 ** 0.5, mew=0, color=PALETTE[3], zorder=3)
            self.young = ax.axvline(1.0, color=PALETTE[2], lw=1.0)
            self.daly = ax.axvline(1.0, color=PALETTE[2], lw=1.0, ls=":")
            for artist in (self.writes, self.rework, self.total, self.exact, self.sim, self.young, self.daly):
                d(artist)
            self.writes_label = d(ax.text(1, 0, " writes", color=PALETTE[0], fontsize=8, va="bottom"))
            self.rework_label = d(ax.text(1, 0, "rework + restarts ", color=PALETTE[1], fontsize=8, ha="right",
                                          va="bottom"))
            self.young_label = d(ax.text(1, 0.97, "", transform=ax.get_xaxis_transform(), fontsize=8,
                                         va="top", color=PALETTE[2]))
            self.infeasible = d(ax.text(0.97, 0.34, "", transform=ax.transAxes, ha="right", va="top", fontsize=7.5,
                                        color=INK))
            self.title = d(_title(ax, self.fig))
            ax.set_xlabel("Checkpoint interval (h)")
            ax.set_ylabel("Wall-clock time wasted (%)")
            self._y_locator = MaxNLocator(5)  # every tick is ~2 ms of a full draw
        self._applied = None
        self._legend = None
        self._line_top = 1.0

    def _parts(self, view):
        _require(view, rel.UCurve)
        h = np.asarray(view.intervals, dtype=float) / u.hour
        total = np.asarray(view.waste.total, dtype=float)
        return h, total

    def layout(self, view):
        """(x limits in hours, y limit in %, which key entries): applied to the axes when it changes."""
        h, total = self._parts(view)
        middle = (view.intervals >= view.young / 12 * (1 - 1e-9)) & (view.intervals <= view.young * 12 * (1 + 1e-9))
        top = float(np.nanmax(100 * np.minimum(total[middle], 1)))
        wanted = min(100.0, max(5.0, 1.1 * float(100 * total[middle].min()) * 4, 0.4 * top))
        ytop = next((y for y in _U_Y_LADDER if wanted <= y), _U_Y_LADDER[-1])
        feasible = total < 1
        # The key goes to the top centre when the curves leave it empty (the U's floor is low), else to the middle
        # right, where the waste is high everywhere and the curves fill the top.
        centre = (h >= h[0] * (h[-1] / h[0]) ** 0.28) & (h <= h[0] * (h[-1] / h[0]) ** 0.72)
        peak = max(float(np.max(np.where(feasible, total, 0)[centre])), float(np.max(view.exact[centre])))
        key = (round(float(h[0]), 12), round(float(h[-1]), 12), ytop, bool(feasible.any()),
               bool(100 * peak <= 0.72 * ytop), bool(np.size(view.sim_intervals)))
        if key != self._applied:
            with mpl.rc_context(STYLE):
                ax = self.ax
                ax.set_xscale("linear")  # log_axes reads the limits first: set them on a linear axis
                ax.set_xlim(h[0], h[-1])
                log_axes(ax, y=False)
                ax.set_ylim(0, ytop)
                ax.yaxis.set_major_locator(self._y_locator)
                if self._legend is not None:
                    self._legend.remove()
                handles = ([self.total] if key[3] else []) + [self.exact]
                labels = (["total, first order"] if key[3] else []) + ["total, exact (Daly)"]
                if key[5]:
                    handles.append(self.sim)
                    labels.append(f"simulation ({view.trials_per_point} runs each)")
                # where the waste is high everywhere the curves fill the top: the key goes to the empty middle right
                self._legend = ax.legend(handles, labels, loc="upper center" if key[4] else "center right",
                                         fontsize=7.5, frameon=True, facecolor="white", edgecolor="none",
                                         framealpha=0.85)  # the vertical lines pass behind it
            self._applied = key
            # Dynamic artists are drawn over the background, key included: the vertical lines stop below a key at
            # the top (where they would cross it; the optimum is always near the middle of the axis).
            self._line_top = 0.8 if key[4] else 1.0
        return key

    def update(self, view):
        h, total = self._parts(view)
        w = view.waste
        self.writes.set_data(h, 100 * np.asarray(w.checkpoint))
        self.rework.set_data(h, 100 * np.asarray(w.rework + w.restart))
        feasible = total < 1
        self.total.set_data(h, np.where(feasible, 100 * total, np.nan))
        self.exact.set_data(h, 100 * np.asarray(view.exact))
        self.sim.set_data(np.asarray(view.sim_intervals) / u.hour, 100 * np.asarray(view.sim_waste))
        logh = np.log(h)
        # Each part is labelled where it is the smaller one (the total runs along the larger one there).
        # (The rework label ends at its point: kept a factor 3.5 inside the window's left edge, about its width.)
        for label, at, ys in ((self.writes_label, view.young * 4, w.checkpoint),
                              (self.rework_label, max(view.young / 5, view.intervals[0] * 3.5), w.rework + w.restart)):
            x = at / u.hour
            label.set_position((x, 100 * float(np.interp(np.log(x), logh, np.asarray(ys)))))
        young, daly = view.young / u.hour, view.daly / u.hour
        self.young.set_data([young, young], [0, self._line_top])
        self.daly.set_data([daly, daly], [0, self._line_top])
        self.young_label.set_position((young * 1.05, self._line_top - 0.03))  # at the top: the curves meet below
        self.young_label.set_text(f"Young {u.fmt_time(view.young)}\nDaly {u.fmt_time(view.daly)} (dotted)")
        self.infeasible.set_visible(not feasible.any())
        self.infeasible.set_text(f"total, first order: infeasible\n(≥ 100% at every interval; "
                                 f"R/M = {view.restart_time / view.mtbf:.0%})")
        # A short title: δ and R are in the controls and the summary.
        self.title.set_text(f"{view.gpus:,} GPUs, MTBF {u.fmt_time(view.mtbf)}")


_TIMELINE_KINDS = ("work", "lost", "restart")  # drawn as bars; checkpoints as ticks, failures as crosses


def _row_spans(starts, ends, row_len):
    """Split spans (seconds) at row boundaries: arrays (row, start within the row, width), seconds."""
    rows, xs, widths = [], [], []
    s, e = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    while s.size:
        keep = s < e - 1e-9
        s, e = s[keep], e[keep]
        row = np.floor(s / row_len)
        cut = np.minimum(e, (row + 1) * row_len)
        rows.append(row)
        xs.append(s - row * row_len)
        widths.append(cut - s)
        s, e = cut, e
        more = s < e - 1e-9
        s, e = s[more], e[more]
    if not rows:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return np.concatenate(rows), np.concatenate(xs), np.concatenate(widths)


class TimelineExplorerFigure(LiveFigure):
    """The timeline explorer's figure: one simulated run as rows of wall-clock time (one day per row, or several
    days per row so that there are at most :data:`TIMELINE_MAX_ROWS`), hours on the x axis: useful work (green),
    checkpoint stalls (blue ticks: a 60 s stall is under a pixel), work lost to failures (red), restarts (orange),
    failures (crosses). The title gives the GPU count, the run's length in days and its failures. Draws a
    :class:`atscale.reliability.TimelineRun`; the layout is the number of rows and days per row.
    """

    def __init__(self, figsize=(6.4, 3.6)):
        super().__init__(figsize)
        with mpl.rc_context(STYLE):
            self.fig.subplots_adjust(**{**MARGINS, "bottom": 0.25})  # room for the key under the axis
            ax = self.ax = self.fig.add_subplot()
            self.bars = {k: self.dynamic(ax.broken_barh([], (0, 0), facecolors=_KIND_COLOURS[k], label=k))
                         for k in _TIMELINE_KINDS}
            self.ticks = self.dynamic(ax.vlines([], [], [], colors=_KIND_COLOURS["checkpoint"], lw=0.9,
                                                label="checkpoint", zorder=3))
            self.failures, = ax.plot([], [], ls="none", marker="x", ms=30 ** 0.5, mew=1.5, color=INK, zorder=4,
                                     label="failure")
            self.dynamic(self.failures)
            self.title = self.dynamic(_title(ax, self.fig))
            handles = [self.bars["work"], self.ticks, self.bars["lost"], self.bars["restart"], self.failures]
            ax.legend(handles, [h.get_label() for h in handles], loc="upper center", bbox_to_anchor=(0.5, -0.14),
                      ncols=5, fontsize=8)
            ax.grid(axis="y", visible=False)
        self._applied = None

    @staticmethod
    def _geometry(view):
        _require(view, rel.TimelineRun)
        if not view.events:
            raise ValueError("view has no events to draw")
        end = view.events[-1].end
        days_per_row = max(1, int(np.ceil(end / u.day / TIMELINE_MAX_ROWS)))
        rows = int(np.ceil(end / (days_per_row * u.day)))
        return end, days_per_row, rows

    def layout(self, view):
        """(rows, days per row): the y ticks, the x axis and the left margin; applied when it changes."""
        from matplotlib.ticker import AutoLocator, MaxNLocator

        _end, days_per_row, rows = self._geometry(view)
        key = (rows, days_per_row)
        if key != self._applied:
            with mpl.rc_context(STYLE):
                ax = self.ax
                self.fig.subplots_adjust(left=0.17 if days_per_row > 1 else MARGINS["left"])
                ax.set_xlim(0, 24 * days_per_row)
                ax.set_ylim(rows - 0.5, -0.5)
                if days_per_row == 1:
                    ax.set_yticks(range(rows), [f"day {i + 1}" for i in range(rows)])
                    ax.set_xlabel("Hour of the day (h)")
                    ax.xaxis.set_major_locator(AutoLocator())
                else:
                    ax.set_yticks(range(rows), [f"days {i * days_per_row + 1}-{(i + 1) * days_per_row}"
                                                for i in range(rows)])
                    ax.set_xlabel(f"Hour within each row of {days_per_row} days (h)")
                    ax.xaxis.set_major_locator(MaxNLocator(8, integer=True))
            self._applied = key
        return key

    def update(self, view):
        end, days_per_row, _rows = self._geometry(view)
        row_len = days_per_row * u.day
        kinds = np.array([e.kind for e in view.events])
        starts = np.array([e.start for e in view.events])
        ends = np.array([e.end for e in view.events])
        for kind, bars in self.bars.items():
            row, x, w = _row_spans(starts[kinds == kind], ends[kinds == kind], row_len)
            x, w = x / u.hour, w / u.hour
            y0, y1 = row - 0.35, row + 0.35
            bars.set_verts(np.stack([np.stack([x, y0], -1), np.stack([x, y1], -1), np.stack([x + w, y1], -1),
                                     np.stack([x + w, y0], -1)], axis=1))
        ck = starts[kinds == "checkpoint"]
        row = ck // row_len
        x = (ck - row * row_len) / u.hour
        self.ticks.set_segments(np.stack([np.stack([x, row - 0.35], -1), np.stack([x, row + 0.35], -1)], axis=1))
        fail = ends[kinds == "lost"]
        self.failures.set_data((fail % row_len) / u.hour, fail // row_len)
        n = int(fail.size)
        self.title.set_text(f"{view.gpus:,} GPUs: {view.work / u.day:g} days of work in "
                            f"{end / u.day:.2f} days, {n} failure{'s' if n != 1 else ''}")
