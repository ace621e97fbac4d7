"""Figures of the Hardware catalog appendix."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from .. import _validate as _v
from .. import hardware
from ._base import MARGINS, MUTED, PALETTE, STYLE, LiveFigure, house_style, log_axes, new_axes

__all__ = ["catalog_scatter", "CatalogExplorerFigure"]


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
    ridge_lines = _v.sequence("ridge_lines", ridge_lines, allow_empty=True, low=0, low_open=True, unit="FLOP/byte")
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


class CatalogExplorerFigure(LiveFigure):
    """The catalog explorer's figure: peak dense FLOP/s (TFLOP/s) against HBM bandwidth (TB/s) of the catalog's
    accelerators for one data type, on a frame fixed for every data type (log-log), so that changing the data type
    moves the points across the dashed lines of constant ridge point (FLOP per byte) while the bandwidth stays put.

    Results are ``(dtype, accelerators, lacking)`` as computed by :func:`atscale.widgets.catalog.catalog_view`: the
    data type, the :class:`~atscale.hardware.Accelerator` objects that have a dense peak for it (each must be one of
    the figure's ``accelerators``), and the names of those that have none (written in the top left corner). Each
    accelerator keeps its colour whatever the data type. Peaks are the datasheets' dense figures
    (:meth:`atscale.hardware.Accelerator.peak`), bandwidths the nominal HBM bandwidths.

    There are only a few data types, and drawing the labels is what costs, so the whole picture of a data type
    is its background (the layout key is the result itself): a redraw after the first visit of a data type is
    a copy and a PNG encode.
    """

    def __init__(self, figsize=(6.4, 4.0), *, accelerators=None, ridge_lines=(10, 30, 100, 300, 1000)):
        ridge_lines = _v.sequence("ridge_lines", ridge_lines, allow_empty=True, low=0, low_open=True, unit="FLOP/byte")
        super().__init__(figsize)
        accs = [hardware.accelerator(a) for a in (accelerators or hardware.ACCELERATORS)]
        self.colours = {a.name: PALETTE[i % len(PALETTE)] for i, a in enumerate(accs)}
        bw = np.array([a.hbm_bandwidth for a in accs]) / 1e12
        peaks = np.array([p for a in accs for p in a.peak_flops.values()]) / 1e12
        lo, hi = bw.min() / 1.6, bw.max() * 1.6
        bottom, top = peaks.min() / 2, peaks.max() * 2
        with mpl.rc_context(STYLE):
            ax = self.ax = self.fig.add_subplot()
            self.fig.subplots_adjust(**MARGINS)
            for ridge in ridge_lines:
                ax.plot([lo, hi], [lo * ridge, hi * ridge], ls="--", lw=0.8, color=MUTED, zorder=1)
                # At the right edge, right of every point, or well below the top where the diagonal leaves there.
                x_label = min(hi / 1.02, top / ridge / 1.6)
                if x_label * ridge > bottom:
                    ax.text(x_label, x_label * ridge, f"{ridge:g} FLOP/B", fontsize=8, color=MUTED, ha="right",
                            va="bottom")
            ax.set_xlim(lo, hi)
            ax.set_ylim(bottom, top)
            log_axes(ax)
            ax.set_xlabel("HBM bandwidth (TB/s)")
            ax.set_ylabel("Peak dense compute (TFLOP/s)")
            self.points = ax.scatter([lo], [bottom], s=46, zorder=3, edgecolors="white", linewidths=0.6)
            self.labels = {a.name: ax.annotate(a.name, (lo, bottom), xytext=(5, 4), textcoords="offset points",
                                               fontsize=8.5)
                           for a in accs}
            self.title = ax.set_title("", y=1.01)  # explicit y: no automatic placement
            self.lacking = ax.text(0.01, 0.98, "", transform=ax.transAxes, fontsize=8, color=MUTED,
                                   va="top")  # top left: no accelerator is both slow and fast

    def _check(self, view):
        try:
            dtype, have, lacking = view
        except (TypeError, ValueError):
            raise ValueError("view must be (dtype, accelerators with it, names lacking it)") from None
        if dtype not in hardware.DTYPES:
            raise ValueError(f"dtype={dtype!r} is not one of {hardware.DTYPES}")
        for acc in have:
            if not isinstance(acc, hardware.Accelerator) or acc.name not in self.labels:
                raise ValueError(f"{acc!r} is not one of the figure's accelerators {list(self.labels)}")
            if dtype not in acc.peak_flops:
                raise ValueError(f"{acc.name} has no {dtype} peak")
        if not have:
            raise ValueError(f"no accelerator has a {dtype} peak")
        return dtype, tuple(have), tuple(lacking)

    def layout(self, view):
        """Everything drawn depends on the result alone: set the points, labels, title and corner note, and
        return ``(dtype, names drawn, names lacking)`` as the key."""
        dtype, have, lacking = self._check(view)
        bw = np.array([a.hbm_bandwidth for a in have]) / 1e12
        peak = np.array([a.peak(dtype) for a in have]) / 1e12
        self.points.set_offsets(np.column_stack([bw, peak]))
        self.points.set_facecolor([self.colours[a.name] for a in have])
        for label in self.labels.values():
            label.set_visible(False)
        placed: list[tuple[float, float]] = []
        for acc, x, y in zip(have, bw, peak):
            # Two accelerators at nearly the same height and close in bandwidth: put the second label below.
            crowded = any(abs(np.log10(x / px)) < 0.2 and abs(np.log10(y / py)) < 0.06 for px, py in placed)
            label = self.labels[acc.name]
            label.xy = (x, y)
            label.xyann = (5, -11 if crowded else 4)
            label.set_visible(True)
            placed.append((x, y))
        self.title.set_text(f"Compute vs memory bandwidth, {dtype.upper()} (dense)")
        self.lacking.set_text(f"No {dtype.upper()}: {', '.join(lacking)}" if lacking else "")
        self.lacking.set_visible(bool(lacking))
        return dtype, tuple(a.name for a in have), lacking

    def update(self, view):
        """Nothing changes within a layout (see :meth:`layout`)."""
