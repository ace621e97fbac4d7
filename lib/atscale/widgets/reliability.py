"""Explorers of the chapter "Reliability".

Each explorer computes its state once in the library (:func:`atscale.reliability.u_curve`,
:func:`atscale.reliability.timeline_run`: frozen results) and hands it to a two-layer figure (:class:`atscale.plots.UCurveExplorerFigure`, :class:`atscale.plots.TimelineExplorerFigure`)
and to its summary line, so nothing is computed twice and a redraw draws only what changed.
"""

from __future__ import annotations

from .. import plots
from .. import _validate as _v
from .. import reliability as rel
from .. import units as u
from ..plots.reliability import TIMELINE_MAX_EVENTS
from ._base import Explorer, dropdown, slider

__all__ = ["u_curve_explorer", "timeline_explorer", "timeline_view"]

_GPUS = [8, 64, 256, 512, 1024, 2048, 4096, 8192, 16_384]
_DEFAULT_PROFILE = rel.TEXTBOOK_PROFILE.name


def _u_summary(view: rel.UCurve) -> str:
    note = " The first-order model is infeasible here (its waste reaches 100%)." if view.first_order_infeasible else ""
    return (f"MTBF {u.fmt_time(view.mtbf)}, checkpoint stall {u.fmt_time(view.checkpoint_time)}, "
            f"restart {u.fmt_time(view.restart_time)}; Young {u.fmt_time(view.young)}, Daly {u.fmt_time(view.daly)}; "
            f"goodput at Daly's interval {u.fmt_percent(view.daly_goodput)} (exact expectation).{note}")


def u_curve_explorer() -> Explorer:
    """GPU count, checkpoint time, restart time and failure profile: the wasted-time U-curve."""
    return Explorer(
        plots.UCurveExplorerFigure,
        compute=rel.u_curve,
        summary=_u_summary,
        gpus=dropdown(_GPUS, 1024, "GPUs"),
        checkpoint_time=slider(5, 1800, 60, "Checkpoint stall δ (s)", log=True),
        restart_time=slider(10, 7200, 600, "Restart time R (s)", log=True),
        profile=dropdown(list(rel.PROFILES), _DEFAULT_PROFILE, "Failure profile"),
    )


def timeline_view(gpus=1024, interval_hours=1.0, checkpoint_time=60.0, restart_time=900.0, *, work_days=3.0,
                  seed=9, profile=_DEFAULT_PROFILE) -> rel.TimelineRun:
    """The timeline explorer's state: :func:`atscale.reliability.timeline_run` with the interval in hours and the
    work in days (the controls' units), refused, with the reason, beyond the events a figure can draw
    (:data:`atscale.plots.reliability.TIMELINE_MAX_EVENTS`)."""
    gpus = _v.count("gpus", gpus)
    interval_hours, work_days = (_v.positive(n, x, scalar=True, unit=n.split("_")[1]) for n, x in
                                 (("interval_hours", interval_hours), ("work_days", work_days)))
    try:
        return rel.timeline_run(gpus, interval_hours * u.hour, checkpoint_time, restart_time, work=work_days * u.day,
                                seed=seed, profile=profile, max_events=TIMELINE_MAX_EVENTS)
    except ValueError as exc:
        if "infeasible to simulate" not in str(exc):
            raise
        raise ValueError(f"infeasible timeline, not drawn: {str(exc).removeprefix('infeasible to simulate: ')} "
                         f"(work_days={work_days:g}, interval_hours={interval_hours:g})") \
            from None


def _t_summary(view: rel.TimelineRun) -> str:
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
