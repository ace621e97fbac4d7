"""Figures of the Hardware catalog appendix."""

from __future__ import annotations

import numpy as np

from .. import hardware
from . import MUTED, PALETTE, house_style, log_axes, new_axes

__all__ = ["catalog_scatter"]


@house_style
def catalog_scatter(dtype: str = "bf16", *, accelerators=None, ridge_lines=(30, 100, 300, 1000), ax=None):
    """Peak dense FLOP/s against HBM bandwidth for the catalog's accelerators.

    Each point is one accelerator; dashed diagonals are lines of constant ridge
    point (peak / bandwidth, FLOP per byte): an accelerator above a diagonal needs
    more arithmetic per byte than that to be compute-bound.

    Args:
        dtype: one of :data:`atscale.hardware.DTYPES`; accelerators without it are left out
            and named in the caption line.
        accelerators: names or :class:`~atscale.hardware.Accelerator` objects (default: all).
        ridge_lines: FLOP/byte values of the diagonals.
        ax: axes to draw on (default: a new figure).

    Returns:
        The figure.
    """
    if dtype not in hardware.DTYPES:
        raise ValueError(f"dtype={dtype!r} is not one of {hardware.DTYPES}")
    accs = [hardware.accelerator(a) for a in (accelerators or hardware.ACCELERATORS)]
    have = [a for a in accs if dtype in a.peak_flops]
    lacking = [a.name for a in accs if dtype not in a.peak_flops]
    if not have:
        raise ValueError(f"none of {[a.name for a in accs]} has a {dtype} peak")

    ax = new_axes(ax)
    bw = np.array([a.hbm_bandwidth for a in have]) / 1e12
    peak = np.array([a.peak(dtype) for a in have]) / 1e12
    lo, hi = bw.min() / 1.6, bw.max() * 1.6
    bottom, top = peak.min() / 2.5, peak.max() * 2.5
    for ridge in ridge_lines:
        ax.plot([lo, hi], [lo * ridge, hi * ridge], ls="--", lw=0.8, color=MUTED, zorder=1)
        x_label = min(hi, top / ridge) / 1.12  # just inside where the diagonal leaves the axes
        if x_label * ridge > bottom:
            ax.text(x_label, x_label * ridge, f"{ridge:g} FLOP/B", fontsize=8, color=MUTED, ha="right", va="bottom")
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(have))]
    ax.scatter(bw, peak, s=46, c=colours, zorder=3, edgecolors="white", linewidths=0.6)
    placed: list[tuple[float, float]] = []
    for acc, x, y in zip(have, bw, peak):
        # Two accelerators at nearly the same height and close in bandwidth: put the second label below.
        crowded = any(abs(np.log10(x / px)) < 0.2 and abs(np.log10(y / py)) < 0.06 for px, py in placed)
        ax.annotate(acc.name, (x, y), xytext=(5, -11 if crowded else 4), textcoords="offset points", fontsize=8.5)
        placed.append((x, y))
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, top)
    log_axes(ax)
    ax.set_xlabel("HBM bandwidth (TB/s)")
    ax.set_ylabel(f"Peak dense {dtype.upper()} (TFLOP/s)")
    title = f"Compute vs memory bandwidth, {dtype.upper()} (dense)"
    ax.set_title(title)
    if lacking:
        ax.text(0.01, 0.01, f"No {dtype.upper()}: {', '.join(lacking)}", transform=ax.transAxes,
                fontsize=8, color=MUTED, va="bottom")
    return ax.figure
