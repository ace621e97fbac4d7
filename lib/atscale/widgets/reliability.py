"""Explorers of the chapter "Reliability"."""

from __future__ import annotations

from .. import plots
from .. import reliability as rel
from .. import units as u
from . import Explorer, dropdown, slider

__all__ = ["u_curve_explorer", "timeline_explorer"]

_GPUS = [8, 64, 256, 512, 1024, 2048, 4096, 8192, 16_384]


def _u_summary(gpus, checkpoint_time, restart_time, profile):
    mtbf = rel.PROFILES[profile].cluster_mtbf(int(gpus))
    young = rel.young_interval(checkpoint_time, mtbf)
    daly = rel.daly_interval(checkpoint_time, mtbf)
    best = rel.goodput_exact(daly, checkpoint_time, mtbf, restart_time)
    infeasible = rel.waste(young, checkpoint_time, mtbf, restart_time).total >= 1
    note = " The first-order model is infeasible here (its waste reaches 100%)." if infeasible else ""
    return (f"MTBF {u.fmt_time(mtbf)}, checkpoint stall {u.fmt_time(checkpoint_time)}, restart {u.fmt_time(restart_time)}; "
            f"Young {u.fmt_time(young)}, Daly {u.fmt_time(daly)}; "
            f"goodput at Daly's interval {u.fmt_percent(best)} (exact expectation).{note}")


def u_curve_explorer() -> Explorer:
    """GPU count, checkpoint time, restart time and failure profile: the wasted-time U-curve."""
    return Explorer(
        plots.u_curve_chart,
        summary=_u_summary,
        gpus=dropdown(_GPUS, 1024, "GPUs"),
        checkpoint_time=slider(5, 1800, 60, "Checkpoint stall δ (s)", log=True),
        restart_time=slider(10, 7200, 600, "Restart time R (s)", log=True),
        profile=dropdown(list(rel.PROFILES), "textbook default (8 GPUs, 8 NICs, 2 PSUs)", "Failure profile"),
    )


def _t_summary(gpus, interval_hours, checkpoint_time, restart_time):
    mtbf = rel.TEXTBOOK_PROFILE.cluster_mtbf(int(gpus))
    return (f"MTBF {u.fmt_time(mtbf)}; expected goodput at this interval "
            f"{u.fmt_percent(rel.goodput_exact(interval_hours * u.hour, checkpoint_time, mtbf, restart_time))}.")


def timeline_explorer() -> Explorer:
    """One simulated three-day run: GPU count, checkpoint interval, stall and restart time."""
    return Explorer(
        plots.timeline_chart,
        summary=_t_summary,
        figsize=(6.4, 3.6),
        gpus=dropdown(_GPUS, 1024, "GPUs"),
        interval_hours=slider(0.1, 12, 1.0, "Checkpoint interval (h)", log=True),
        checkpoint_time=slider(5, 1800, 60, "Checkpoint stall δ (s)", log=True),
        restart_time=slider(10, 7200, 900, "Restart time R (s)", log=True),
    )
