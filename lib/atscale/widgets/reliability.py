"""Explorers of the chapter "Reliability".

Each explorer computes its state once (:func:`u_curve_view`, :func:`timeline_view`: frozen results) and hands it
to a two-layer figure (:class:`atscale.plots.UCurveExplorerFigure`, :class:`atscale.plots.TimelineExplorerFigure`)
and to its summary line, so nothing is computed twice and a redraw draws only what changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import plots
from .. import reliability as rel
from .. import units as u
from ..plots.reliability import TIMELINE_MAX_EVENTS
from . import Explorer, dropdown, slider

__all__ = ["u_curve_explorer", "timeline_explorer", "u_curve_view", "timeline_view", "UCurveView", "TimelineView"]

_GPUS = [8, 64, 256, 512, 1024, 2048, 4096, 8192, 16_384]
_DEFAULT_PROFILE = "textbook default (8 GPUs, 8 NICs, 2 PSUs)"


def _profile(profile):
    if profile not in rel.PROFILES:
        raise ValueError(f"profile={profile!r} is not one of {list(rel.PROFILES)}")
    return rel.PROFILES[profile]


@dataclass(frozen=True)
class UCurveView:
    """What the U-curve explorer shows (seconds; fractions of wall-clock time).

    ``intervals``: the checkpoint intervals of the curves, 2.5 decades around Young's interval rounded to a
    quarter decade of hours (so the explorer's axis moves in steps); ``waste``: the first-order breakdown there
    (:func:`atscale.reliability.waste`, Young 1974 / Daly 2006 sec. 2); ``exact``: the exact expected waste,
    ``1 - goodput_exact`` (Daly 2006, eq. 13); ``sim_intervals``, ``sim_waste``: the seeded Monte Carlo's mean
    waste at up to nine intervals (:func:`atscale.reliability.simulate`, ``trials_per_point`` runs each of 40
    intervals of work); ``young``, ``daly``: the two optimal intervals; ``daly_goodput``: the exact expected
    goodput at Daly's interval; ``first_order_infeasible``: the first-order waste at Young's interval reaches 100%.
    """

    gpus: int
    profile: str
    checkpoint_time: float
    restart_time: float
    mtbf: float
    young: float
    daly: float
    intervals: np.ndarray
    waste: rel.Waste
    exact: np.ndarray
    sim_intervals: np.ndarray
    sim_waste: np.ndarray
    trials_per_point: int
    daly_goodput: float
    first_order_infeasible: bool


U_CURVE_POINTS = 101
"""Intervals per U-curve (a quarter decade per 10 points)."""


def u_curve_view(gpus=1024, checkpoint_time=60.0, restart_time=600.0, profile=_DEFAULT_PROFILE, *,
                 trials_per_point: int = 60, seed: int = 0) -> UCurveView:
    """The U-curve explorer's state: first-order and exact waste over the intervals around Young's, the seeded
    simulation, and the optimal intervals (see :class:`UCurveView`; seconds in, seconds out)."""
    mtbf = _profile(profile).cluster_mtbf(int(gpus))
    young = rel.young_interval(checkpoint_time, mtbf)
    daly = rel.daly_interval(checkpoint_time, mtbf)
    centre = np.round(4 * np.log10(young / u.hour)) / 4  # quarter decades of hours: a few axes only
    taus = 10.0 ** (centre + np.linspace(-1.25, 1.25, U_CURVE_POINTS)) * u.hour
    w = rel.waste(taus, checkpoint_time, mtbf, restart_time)
    exact = 1 - rel.goodput_exact(taus, checkpoint_time, mtbf, restart_time)
    points = np.geomspace(young / 8, young * 8, 9)
    # Simulate only where a run finishes quickly: a segment of s MTBFs is tried e^s times on average (e^2 = 7.4 at
    # the limit), each failure adding a restart; beyond, a redraw took seconds. The exact curve covers the rest.
    points = points[(points + checkpoint_time) / mtbf <= 2.0] if restart_time / mtbf <= 2.0 else points[:0]
    wasted = np.zeros(0)
    if points.size:
        per_trial = np.repeat(points, trials_per_point)
        sim = rel.simulate(40 * per_trial, per_trial, checkpoint_time, mtbf, restart_time,
                           trials=points.size * trials_per_point, seed=seed)
        wasted = 1 - sim.goodput.reshape(points.size, trials_per_point).mean(axis=1)
    return UCurveView(int(gpus), profile, float(checkpoint_time), float(restart_time), float(mtbf), float(young),
                      float(daly), taus, w, exact, points, wasted, int(trials_per_point),
                      float(rel.goodput_exact(daly, checkpoint_time, mtbf, restart_time)),
                      bool(rel.waste(young, checkpoint_time, mtbf, restart_time).total >= 1))


def _u_summary(view: UCurveView) -> str:
    note = " The first-order model is infeasible here (its waste reaches 100%)." if view.first_order_infeasible else ""
    return (f"MTBF {u.fmt_time(view.mtbf)}, checkpoint stall {u.fmt_time(view.checkpoint_time)}, "
            f"restart {u.fmt_time(view.restart_time)}; Young {u.fmt_time(view.young)}, Daly {u.fmt_time(view.daly)}; "
            f"goodput at Daly's interval {u.fmt_percent(view.daly_goodput)} (exact expectation).{note}")


def u_curve_explorer() -> Explorer:
    """GPU count, checkpoint time, restart time and failure profile: the wasted-time U-curve."""
    return Explorer(
        plots.UCurveExplorerFigure,
        compute=u_curve_view,
        summary=_u_summary,
        gpus=dropdown(_GPUS, 1024, "GPUs"),
        checkpoint_time=slider(5, 1800, 60, "Checkpoint stall δ (s)", log=True),
        restart_time=slider(10, 7200, 600, "Restart time R (s)", log=True),
        profile=dropdown(list(rel.PROFILES), _DEFAULT_PROFILE, "Failure profile"),
    )


@dataclass(frozen=True)
class TimelineView:
    """What the timeline explorer shows: one seeded simulated run (:func:`atscale.reliability.timeline`) of
    ``work`` seconds of useful work; ``mtbf`` and ``expected_goodput`` (Daly 2006, eq. 13) in seconds and as a
    fraction."""

    gpus: int
    work: float
    interval: float
    checkpoint_time: float
    restart_time: float
    mtbf: float
    events: tuple
    expected_goodput: float


def timeline_view(gpus=1024, interval_hours=1.0, checkpoint_time=60.0, restart_time=900.0, *, work_days=3.0,
                  seed=9, profile=_DEFAULT_PROFILE) -> TimelineView:
    """The timeline explorer's state (``interval_hours`` in hours, times in seconds). The run is refused, with the
    reason, when it would need more than :data:`atscale.plots.reliability.TIMELINE_MAX_EVENTS` events.
    ``seed=9`` gives, at the defaults, a run with three failures, close to the expected 2.3 (a typical picture, not
    a lucky one)."""
    mtbf = _profile(profile).cluster_mtbf(int(gpus))
    interval = interval_hours * u.hour
    try:
        events = rel.timeline(work_days * u.day, interval, checkpoint_time, mtbf, restart_time,
                              seed=seed, max_events=TIMELINE_MAX_EVENTS)
    except ValueError as exc:
        raise ValueError(f"infeasible timeline, not drawn: {str(exc).removeprefix('infeasible to simulate: ')}") \
            from None
    return TimelineView(int(gpus), float(work_days * u.day), float(interval), float(checkpoint_time),
                        float(restart_time), float(mtbf), events,
                        float(rel.goodput_exact(interval, checkpoint_time, mtbf, restart_time)))


def _t_summary(view: TimelineView) -> str:
    return f"MTBF {u.fmt_time(view.mtbf)}; expected goodput at this interval {u.fmt_percent(view.expected_goodput)}."


def timeline_explorer() -> Explorer:
    """One simulated three-day run: GPU count, checkpoint interval, stall and restart time."""
    return Explorer(
        plots.TimelineExplorerFigure,
        compute=timeline_view,
        summary=_t_summary,
        figsize=(6.4, 3.6),
        gpus=dropdown(_GPUS, 1024, "GPUs"),
        interval_hours=slider(0.1, 12, 1.0, "Checkpoint interval (h)", log=True),
        checkpoint_time=slider(5, 1800, 60, "Checkpoint stall δ (s)", log=True),
        restart_time=slider(10, 7200, 900, "Restart time R (s)", log=True),
    )
