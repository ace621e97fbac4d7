"""Explorers of the chapter "Collective communication"."""

from __future__ import annotations

from .. import collectives, hardware, plots
from .. import units as u
from ._base import Explorer, dropdown, slider

__all__ = ["ring_explorer", "collective_cost_explorer"]


def _ring_summary(r: collectives.RingStep) -> str:
    sent = collectives.bytes_sent_per_rank("all-reduce", 1.0, r.ranks)
    return (f"{r.ranks} ranks, step {r.step + 1} of {r.steps} ({r.phase}); each step every rank sends one chunk "
            f"(1/{r.ranks} of the data); in all each rank sends {sent:.3f} × the data.")


def ring_explorer() -> Explorer:
    """Step through a ring all-reduce: which chunk each rank holds, and how reduced it is."""
    return Explorer(plots.RingExplorerFigure, compute=collectives.ring_step, summary=_ring_summary,
                    figsize=(6.4, 4.0),
                    ranks=slider(2, 8, 4, "Ranks (n)", integer=True),
                    step=slider(0, 13, 0, "Step (0-based; 2(n-1) steps)", integer=True))


def _cost_summary(curve: collectives.CostCurve) -> str:
    i = int(abs(curve.sizes - 1e9).argmin())
    return (f"1 GB: {u.fmt_time(float(curve.seconds[i]))}, bus bandwidth {curve.bus[i] / u.GBps:,.0f} GB/s of "
            f"{curve.line_rate / u.GBps:,.0f}; latency-bound below {u.fmt_bytes(curve.knee)}.")


def collective_cost_explorer() -> Explorer:
    """Operation, ranks, algorithm and fabric: the bus bandwidth a collective reaches against size."""
    return Explorer(plots.CostExplorerFigure, compute=collectives.cost_curve, summary=_cost_summary,
                    op=dropdown(list(collectives.OPS), "all-reduce", "Collective"),
                    ranks=dropdown([2, 4, 8, 16, 64, 128, 1024], 8, "Ranks"),
                    algorithm=dropdown(list(collectives.ALGORITHMS), "ring", "Algorithm"),
                    link=dropdown(list(hardware.FABRICS), "NVLink 4", "Fabric"))
