"""Figures of the chapter "Collective communication"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import collectives as c
from .. import hardware
from .. import units as u
from . import INK, MUTED, PALETTE, house_style, log_axes, new_axes

__all__ = ["ring_step_chart", "CostCurve", "cost_curve", "collective_cost_chart", "bus_bandwidth_chart",
           "latency_series_chart", "scaling_chart"]


@house_style
def ring_step_chart(ranks: int = 4, step: int = 0, *, ax=None):
    """A ring all-reduce after ``step`` (0-based) of its ``2(n-1)`` steps: ranks × chunks, shaded by
    how many ranks' contributions each copy of a chunk holds; the chunk each rank sent is outlined."""
    sends, counts = c.ring_schedule(ranks)
    total = len(sends)
    if isinstance(step, bool) or not 0 <= int(step) < total:
        raise ValueError(f"step={step!r} must be between 0 and {total - 1} for {ranks} ranks (2(n-1) = {total} steps)")
    step = int(step)
    ax = new_axes(ax)
    grid = counts[step]
    ax.imshow(grid, cmap="Blues", vmin=0, vmax=ranks * 1.15, aspect="auto")
    for r in range(ranks):
        for ch in range(ranks):
            ax.text(ch, r, f"{grid[r, ch]}", ha="center", va="center", fontsize=9,
                    color="white" if grid[r, ch] == ranks else INK)
    ax.scatter(sends[step], np.arange(ranks), s=900 if ranks <= 4 else 300, marker="s", facecolors="none",
               edgecolors=PALETTE[3], linewidths=2)
    phase = "reduce-scatter" if step < ranks - 1 else "all-gather"
    # An explicit y skips matplotlib's automatic title placement (bounding-box work on every redraw).
    ax.set_title(f"Step {step + 1} of {total} ({phase}): contributions held per chunk", fontsize=10, y=1.02)
    ax.set_xticks(range(ranks))
    ax.set_yticks(range(ranks))
    ax.set_xlabel("chunk (outlined: the chunk that rank sent to the next one in this step)")
    ax.set_ylabel("rank")
    ax.grid(False)
    return ax.figure


def _nice_ticks(top: float, target: int = 6) -> np.ndarray:
    """Ticks 0, step, 2 step, ... below ``top`` with a step of 1, 2 or 5 times a power of ten."""
    raw = top / target
    power = 10.0 ** np.floor(np.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return np.arange(0, top, step)


@dataclass(frozen=True)
class CostCurve:
    """Time and bus bandwidth of one collective against message size (SI units)."""

    op: str
    ranks: int
    link: str
    algorithm: str
    sizes: np.ndarray
    seconds: np.ndarray
    bus: np.ndarray
    line_rate: float
    knee: float


def cost_curve(op="all-reduce", ranks=8, algorithm="ring", link="NVLink 4", size=None) -> CostCurve:
    """Compute the curve the cost explorer draws (``size``, if given, is the marked message)."""
    sizes = np.logspace(0, 11, 45)
    t = c.collective_time(op, sizes, ranks, link, algorithm=algorithm)
    bus = c.bus_bandwidth(op, sizes, ranks, t) if ranks > 1 else np.zeros_like(sizes)
    return CostCurve(op, int(ranks), hardware.fabric(link).name, algorithm, sizes, t, bus,
                     hardware.fabric(link).bandwidth, float(c.latency_bound_size(op, ranks, link, algorithm=algorithm)))


@house_style
def collective_cost_chart(curve: CostCurve, *, ax=None):
    """Bus bandwidth (left axis) against message size, with the line rate and the latency-bound knee."""
    ax = new_axes(ax)
    ax.plot(curve.sizes, curve.bus / u.GBps, color=PALETTE[0], label="bus bandwidth (model)")
    ax.axhline(curve.line_rate / u.GBps, color=MUTED, ls="--", lw=1)
    ax.text(1.5, curve.line_rate / u.GBps * 1.04, f"line rate {curve.line_rate / u.GBps:,.0f} GB/s", fontsize=8,
            color=MUTED)
    if np.isfinite(curve.knee):
        ax.axvline(curve.knee, color=PALETTE[3], lw=1, ls=":")
        ax.text(curve.knee * 1.3, curve.line_rate / u.GBps * 0.08, f"latency-bound below\n{u.fmt_bytes(curve.knee)}",
                fontsize=8, color=PALETTE[3])
    ax.set_xscale("log")
    ax.set_xlim(1, 1e11)
    top = max(curve.line_rate, float(np.max(curve.bus))) / u.GBps * 1.15
    ax.set_ylim(0, top)
    ax.set_yticks(_nice_ticks(top))  # fixed ticks: no locator work on each redraw
    ax.set_xticks([1, 1e3, 1e6, 1e9, 1e11])
    ax.set_xticklabels(["1 B", "1 kB", "1 MB", "1 GB", "100 GB"])
    ax.minorticks_off()
    ax.set_xlabel("message size (bytes, as nccl-tests counts it)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"{curve.op}, {curve.ranks} ranks, {curve.algorithm}, {curve.link}", fontsize=10, y=1.02)
    return ax.figure


@house_style
def bus_bandwidth_chart(*, ax=None):
    """Model vs measured: all-reduce bus bandwidth against size, 8 GPUs on NVLink 3 and NVLink 4,
    with every published point (filled: calibration; open: validation)."""
    ax = new_axes(ax)
    sizes = np.logspace(0, 10.5, 60)
    points = c.CALIBRATION + c.VALIDATION
    for colour, link, algo, label in ((PALETTE[0], "NVLink 3", "ring", "8 × A100, NVLink 3, ring"),
                                      (PALETTE[2], "NVLink 4", "ring", "8 × H100, NVLink 4, ring"),
                                      (PALETTE[1], "NVLink 4", "in-network", "8 × H100, NVLink SHARP")):
        t = c.collective_time("all-reduce", sizes, 8, link, algorithm=algo)
        ax.plot(sizes, c.bus_bandwidth("all-reduce", sizes, 8, t) / u.GBps, color=colour, label=label)
        for m in points:
            if m.link == link and m.algorithm == algo and m.ranks == 8:
                filled = m.role == "calibration"
                ax.plot([m.size], [m.bus_bandwidth / u.GBps], "o", ms=7, color=colour,
                        mfc=colour if filled else "white", mew=1.5)
    ax.plot([], [], "o", color=INK, label="measured, calibration")
    ax.plot([], [], "o", color=INK, mfc="white", label="measured, validation")
    ax.set_xscale("log")
    ax.set_xlim(1, 10**10.5)
    ax.set_ylim(0, 520)
    ax.set_xticks([1, 1e3, 1e6, 1e9])
    ax.set_xticklabels(["1 B", "1 kB", "1 MB", "1 GB"])
    ax.minorticks_off()
    ax.set_xlabel("message size")
    ax.set_ylabel("all-reduce bus bandwidth (GB/s)")
    ax.legend(loc="upper left", fontsize=8)
    return ax.figure


@house_style
def latency_series_chart(*, ax=None):
    """Model vs measured: 8-byte ring all-reduce time against GPU count (the calibration series),
    with the naive ``2(n-1) alpha`` without a launch cost for contrast."""
    ax = new_axes(ax)
    n = np.array(list(c.RING_LATENCY_SERIES))
    measured = np.array(list(c.RING_LATENCY_SERIES.values()))
    ax.plot(n, measured / u.us, "o", color=PALETTE[0], label="measured (calibration)")
    ax.plot(n, c.collective_time("all-reduce", 8, n, "NVLink 3") / u.us, color=PALETTE[0], label="model: t0 + 2(n-1)·α")
    ax.plot(n, 2 * (n - 1) * 3e-6 / u.us, ls="--", color=MUTED, label="2(n-1) × 3 µs (point-to-point latency)")
    ax.set_xlabel("GPUs in the ring")
    ax.set_ylabel("8-byte all-reduce time (µs)")
    ax.set_ylim(0, 45)
    ax.legend(loc="upper left", fontsize=8)
    return ax.figure


@house_style
def scaling_chart(size: float = 140e9, *, gpus=(8, 32, 64, 128, 256, 512, 1024), tutorial=None, ax=None):
    """All-reduce time of ``size`` bytes against GPU count on DGX H100 nodes with InfiniBand NDR:
    flat ring (one NIC per GPU), hierarchical, and, if given, a published column ``tutorial`` (seconds)."""
    ax = new_axes(ax)
    g = np.array(gpus)
    ndr = hardware.FABRICS["InfiniBand NDR"]
    flat = c.collective_time("all-reduce", size, g, ndr)
    hier = np.array([c.hierarchical_time("all-reduce", size, hardware.Cluster.of_gpus(hardware.DGX_H100, int(x), ndr))
                     for x in g])
    ax.plot(g, flat, "o-", color=PALETTE[3], label="flat ring, every hop on a NIC")
    ax.plot(g, hier, "s-", color=PALETTE[0], label="hierarchical (NVLink, rails, NVLink)")
    if tutorial is not None:
        ax.plot(g, np.asarray(tutorial), "^--", color=PALETTE[1], label="the tutorial's communication column")
    ax.set_xscale("log", base=2)
    ax.set_xticks(g)
    ax.set_xticklabels([f"{x:,}" for x in g])
    ax.minorticks_off()
    ax.set_xlabel("GPUs")
    ax.set_ylabel(f"all-reduce of {u.fmt_bytes(size, 0)} (s)")
    ax.set_ylim(0, float(np.max(flat)) * 1.1)
    ax.legend(loc="center right", fontsize=8)
    return ax.figure
