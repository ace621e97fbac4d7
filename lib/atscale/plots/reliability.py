"""Figures of the chapter "Reliability"."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from .. import reliability as rel
from .. import units as u
from . import INK, MUTED, PALETTE, house_style, log_axes, new_axes

__all__ = ["mtbf_sweep_chart", "u_curve_chart", "timeline_chart", "first_order_breakdown_chart",
           "profile_comparison_chart"]


@house_style
def mtbf_sweep_chart(profiles=None, *, gpus=None, mark=(8, 1024, 16_384), observations=rel.OBSERVATIONS, ax=None):
    """Job MTBF (hours) against GPU count for failure profiles, log-log, with a day and a week marked.

    ``observations`` (:class:`atscale.reliability.FleetObservation`) are drawn as stars: the
    measured MTBF that the profiles are compared with, with its one-standard-error Poisson
    uncertainty (:attr:`~atscale.reliability.FleetObservation.relative_uncertainty`) as the bar.
    """
    profiles = list(profiles or rel.PROFILES.values())
    gpus = np.unique(np.geomspace(8, 131_072, 60) // 8 * 8).astype(int) if gpus is None else np.asarray(gpus)
    ax = new_axes(ax)
    for i, p in enumerate(profiles):
        mtbf = p.cluster_mtbf(gpus) / u.hour
        ax.plot(gpus, mtbf, color=PALETTE[i], label=p.name)
        marks = np.array([g for g in mark if g % p.gpus_per_node == 0])
        ax.scatter(marks, p.cluster_mtbf(marks) / u.hour, color=PALETTE[i], s=24, zorder=3)
    for obs in observations:
        m, err = obs.mtbf / u.hour, obs.relative_uncertainty * obs.mtbf / u.hour
        ax.errorbar([obs.gpus], [m], yerr=[[err], [err]], fmt="none", ecolor=INK, elinewidth=1.0,
                    capsize=4, zorder=4)
        ax.scatter([obs.gpus], [m], marker="*", s=140, color=INK, zorder=5,
                   label=f"{obs.name}, ±{obs.relative_uncertainty:.0%} (Poisson)")
    for hours, label in ((24, "one day"), (168, "one week"), (1, "one hour")):
        ax.axhline(hours, color=MUTED, lw=0.8, ls=":")
        ax.text(gpus.max() / 1.1, hours * 1.1, label, ha="right", va="bottom", fontsize=8, color=MUTED)
    ax.set_xlim(gpus.min(), gpus.max())
    ax.set_ylim(0.1, 20_000)
    log_axes(ax)
    ax.set_xlabel("Job size (GPUs)")
    ax.set_ylabel("Mean time between job failures (h)")
    ax.set_title("Failures become routine at scale")
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
    mtbf = rel.PROFILES[profile].cluster_mtbf(int(gpus))
    young = rel.young_interval(checkpoint_time, mtbf)
    taus = np.geomspace(young / 12, young * 12, 80)
    w = rel.waste(taus, checkpoint_time, mtbf, restart_time)
    exact = 1 - rel.goodput_exact(taus, checkpoint_time, mtbf, restart_time)
    ax = new_axes(ax)
    h = taus / u.hour
    # The two parts are labelled on the curves (a legend entry each would cost ~10 ms of redraw).
    ax.plot(h, 100 * w.checkpoint, color=PALETTE[0], lw=1.2)
    ax.plot(h, 100 * (w.rework + w.restart), color=PALETTE[1], lw=1.2)
    ax.text(h[6], 100 * w.checkpoint[6], " writes", color=PALETTE[0], fontsize=8, va="top")
    ax.text(h[-12], 100 * (w.rework + w.restart)[-12], "rework + restarts ", color=PALETTE[1], fontsize=8,
            ha="right", va="bottom")
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
    mtbf = rel.PROFILES[profile].cluster_mtbf(int(gpus))
    try:
        events = rel.timeline(work_days * u.day, interval_hours * u.hour, checkpoint_time, mtbf, restart_time,
                              seed=seed, max_events=TIMELINE_MAX_EVENTS)
    except ValueError as exc:
        raise ValueError(f"infeasible timeline, not drawn: {str(exc).removeprefix('infeasible to simulate: ')}") \
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
