"""Figures of the chapter "Collective communication"."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from .. import collectives as c
from .. import _validate as _v
from .. import hardware
from .. import units as u
from ._base import INK, MARGINS, MUTED, PALETTE, STYLE, LiveFigure, house_style, new_axes

__all__ = ["ring_step_chart", "RingExplorerFigure", "CostExplorerFigure", "bus_bandwidth_chart",
           "latency_series_chart", "scaling_chart", "fabric_tiers_chart", "tier_sweep_chart"]


_RING_CMAP = "Blues"
_RING_SHADE = 1.15
"""Cells are shaded from white (0 contributions) to dark blue; the colour scale ends at this many times ``n``,
so a fully reduced cell (``n``) is dark but not the darkest blue, and its white number stays readable."""
_RING_DIGIT_SIZE = 6.5
"""Height (points) of a cell's number, drawn as a marker: that of a 9-point digit."""
_RING_XLABEL = "chunk (outlined: the chunk that rank sent to the next one in this step)"
_RING_TITLE = "Step {step} of {steps} ({phase}): contributions held per chunk"
_FIGURE_SPACE = "\u2007"  # as wide as a digit


def _ring_artists(ax, size: int):
    """The cells of a ``size`` × ``size`` ring grid: a mesh of shades, one marker line per count (the counts
    1 .. ``size`` as digits: one stamped glyph per count is far cheaper to draw than a text per cell) and one
    outline per rank. Cell (rank, chunk) is centred on (chunk, rank); cells beyond the ring shown lie outside
    the axes and are clipped."""
    from matplotlib.patches import Rectangle

    edges = np.arange(size + 1) - 0.5
    mesh = ax.pcolormesh(edges, edges, np.zeros((size, size)), cmap=_RING_CMAP, vmin=0, vmax=1)
    digits = [ax.plot([], [], ls="none", marker=f"${k}$", ms=_RING_DIGIT_SIZE, mew=0, color=INK)[0]
              for k in range(1, size + 1)]
    outlines = [ax.add_patch(Rectangle((-0.45, rank - 0.45), 0.9, 0.9, fill=False, edgecolor=PALETTE[3],
                                       linewidth=2)) for rank in range(size)]
    return mesh, digits, outlines


def _ring_show(artists, r: c.RingStep) -> None:
    """Set :func:`_ring_artists` to the state ``r`` (at most as many ranks as the artists have)."""
    mesh, digits, outlines = artists
    n, size = r.ranks, len(outlines)
    grid = np.zeros((size, size))
    grid[:n, :n] = r.counts
    mesh.set_array(grid)
    mesh.set_clim(0, n * _RING_SHADE)
    for k, line in enumerate(digits, start=1):
        rows, cols = np.nonzero(r.counts == k)
        line.set_data(cols, rows)
        line.set_color("white" if k == n else INK)
    for rank, outline in enumerate(outlines):
        outline.set_visible(rank < n)
        if rank < n:
            outline.set_xy((r.sends[rank] - 0.45, rank - 0.45))


def _ring_axes(ax, n: int) -> None:
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(n - 0.5, -0.5)  # rank 0 on top
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))


@house_style
def ring_step_chart(ranks: int = 4, step: int = 0, *, ax=None):
    """A ring all-reduce after ``step`` (0-based) of its ``2(n-1)`` steps (:func:`atscale.collectives.ring_step`):
    ranks × chunks, each cell shaded and numbered by how many ranks' contributions that copy of the chunk holds
    (``n``: fully reduced); the chunk each rank sent in this step is outlined."""
    r = c.ring_step(ranks, step)
    ax = new_axes(ax)
    _ring_show(_ring_artists(ax, r.ranks), r)
    _ring_axes(ax, r.ranks)
    # An explicit y skips matplotlib's automatic title placement (bounding-box work on every redraw).
    ax.set_title(_RING_TITLE.format(step=r.step + 1, steps=r.steps, phase=r.phase), fontsize=10, y=1.02)
    ax.set_xlabel(_RING_XLABEL)
    ax.set_ylabel("rank")
    ax.grid(False)
    return ax.figure


class RingExplorerFigure(LiveFigure):
    """The ring step-through's figure: a ring all-reduce after one step (a :class:`atscale.collectives.RingStep`),
    ranks (rows) × chunks (columns), each cell shaded and numbered by how many ranks' contributions that rank's
    copy of the chunk holds (dimensionless; ``n`` is fully reduced, white on dark blue); the chunk each rank sent
    in this step is outlined; the title gives the step and the phase. The same picture as
    :func:`ring_step_chart`, drawn in two layers: one background per ring size and phase (axes, ticks, labels,
    the title but its step number), the cells, numbers, outlines and step number redrawn on it. Up to
    ``max_ranks`` ranks.
    """

    def __init__(self, figsize=(6.4, 4.0), max_ranks: int = 8):
        super().__init__(figsize)
        self.max_ranks = _v.count("max_ranks", max_ranks, low=2, high=32, unit="ranks drawn")
        with mpl.rc_context(STYLE):
            ax = self.ax = self.fig.add_subplot()
            self.fig.subplots_adjust(**MARGINS)
            self.artists = _ring_artists(ax, self.max_ranks)
            mesh, digits, outlines = self.artists
            # In a whole drawing's order: shades, outlines, numbers, then the spines over the shades' edges.
            for artist in (mesh, *outlines, *digits, ax.spines["left"], ax.spines["bottom"]):
                self.dynamic(artist)
            # The title is static but for its step number, which is drawn right-aligned in a blank as wide as
            # the step count's digits (digits are all as wide), on the title's baseline; its x is measured once
            # per layout.
            self.title = ax.set_title("", fontsize=10, y=1.02)  # explicit y: no automatic placement
            self.step_number = self.dynamic(ax.text(0, 1.02, "", transform=self.title.get_transform(), ha="right",
                                                    va="baseline", fontproperties=self.title.get_fontproperties()))
            self._number_x: dict = {}
            ax.set_xlabel(_RING_XLABEL)
            ax.set_ylabel("rank")
            ax.grid(False)

    def _check(self, r):
        if not isinstance(r, c.RingStep):
            raise ValueError(f"RingExplorerFigure draws an atscale.collectives.RingStep, got {type(r).__name__}")
        if r.ranks > self.max_ranks:
            raise ValueError(f"ranks={r.ranks} is more than this figure draws (at most {self.max_ranks})")
        return r.ranks

    def layout(self, r):
        """The ring size ``n`` and the phase: the axes span ``n`` × ``n`` cells (rank 0 on top), one tick per
        rank and chunk; the title's text but its step number."""
        n = self._check(r)
        _ring_axes(self.ax, n)
        blank = _FIGURE_SPACE * len(str(r.steps))
        self.title.set_text(_RING_TITLE.format(step=blank, steps=r.steps, phase=r.phase))
        key = (n, r.phase)
        if key not in self._number_x:
            renderer = self.canvas.get_renderer()
            prop = self.title.get_fontproperties()

            def width(text):
                return renderer.get_text_width_height_descent(text, prop, ismath=False)[0]

            axes_width = self.ax.get_position().width * self.fig.bbox.width  # pixels
            self._number_x[key] = 0.5 + (width(f"Step {blank}") - width(self.title.get_text()) / 2) / axes_width
        self.step_number.set_x(self._number_x[key])
        return key

    def update(self, r):
        self._check(r)
        _ring_show(self.artists, r)
        self.step_number.set_text(f"{r.step + 1}")


def _nice_ticks(top: float, target: int = 6) -> np.ndarray:
    """Ticks 0, step, 2 step, ... below ``top`` with a step of 1, 2 or 5 times a power of ten."""
    raw = top / target
    power = 10.0 ** np.floor(np.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return np.arange(0, top, step)


_COST_RUNGS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
_COST_HEADROOM = 1.12
"""The cost explorer's y axis ends at the first ``_COST_RUNGS`` × 10^k GB/s at least this many times the
larger of the line rate and the peak bus bandwidth (room for the line rate's label above its line)."""


def _cost_top(peak_gbps: float) -> float:
    wanted = peak_gbps * _COST_HEADROOM
    decade = 10.0 ** np.floor(np.log10(wanted))
    return float(next((m * decade for m in _COST_RUNGS if m * decade >= wanted * (1 - 1e-12)), 10 * decade))


_KNEE_LABEL_RIGHT = 5e8
"""Bytes: a latency-bound size up to this is labelled on its right, a larger one on its left."""


class CostExplorerFigure(LiveFigure):
    """The cost explorer's figure: a collective's bus bandwidth (GB/s, nccl-tests' definition) against message
    size (bytes, log axis from 1 B to 100 GB) for one :class:`atscale.collectives.CostCurve`, with the fabric's
    nominal line rate per direction (dashed, labelled) and the latency-bound size (dotted, labelled: below it
    the latency terms dominate); the title names the collective, ranks, algorithm and fabric.

    Drawn in two layers: the size axis is fixed; the bandwidth axis starts at 0 and ends at a value from a
    fixed ladder (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k GB/s) just above the larger of the line rate and the
    peak bus bandwidth, so one background is kept per line rate and rung (the line rate's line and label are
    part of it); the curve, the latency-bound marker and its label and the title are redrawn on it.
    """

    def __init__(self, figsize=(6.4, 4.0)):
        super().__init__(figsize)
        with mpl.rc_context(STYLE):
            ax = self.ax = self.fig.add_subplot()
            self.fig.subplots_adjust(**MARGINS)
            self.curve = self.dynamic(ax.plot(c.COST_CURVE_SIZES, np.zeros_like(c.COST_CURVE_SIZES),
                                              color=PALETTE[0])[0])
            self.line_rate = ax.axhline(1, color=MUTED, ls="--", lw=1)  # static: part of the layout
            self.line_rate_text = ax.text(1.5, 1, "", fontsize=8, color=MUTED)
            self.knee = self.dynamic(ax.axvline(1, color=PALETTE[3], lw=1, ls=":"))
            self.knee_text = self.dynamic(ax.text(1, 1, "", fontsize=8, color=PALETTE[3]))
            self.title = self.dynamic(ax.set_title("", fontsize=10, y=1.02))  # explicit y: no automatic placement
            ax.set_xscale("log")
            ax.set_xlim(1, 1e11)
            ax.set_xticks([1, 1e3, 1e6, 1e9, 1e11])
            ax.set_xticklabels(["1 B", "1 kB", "1 MB", "1 GB", "100 GB"])
            ax.minorticks_off()
            ax.set_xlabel("message size (bytes, as nccl-tests counts it)")
            ax.set_ylabel("bus bandwidth (GB/s)")

    @staticmethod
    def _check(curve):
        if not isinstance(curve, c.CostCurve):
            raise ValueError(f"CostExplorerFigure draws an atscale.collectives.CostCurve, got {type(curve).__name__}")
        bus = np.asarray(curve.bus, dtype=float)
        if not (np.all(np.isfinite(bus)) and np.all(bus >= 0) and np.isfinite(curve.line_rate)
                and curve.line_rate > 0):
            raise ValueError("a cost curve needs finite bus bandwidths >= 0 and a positive line rate (bytes/s)")
        return bus / u.GBps

    def layout(self, curve):
        """The fabric's line rate (GB/s; its line and label) and the upper y limit (GB/s) from the ladder, with
        its fixed ticks; applied to the axes."""
        bus = self._check(curve)
        rate = curve.line_rate / u.GBps
        top = _cost_top(max(rate, float(np.max(bus, initial=0.0))))
        self.ax.set_ylim(0, top)
        self.ax.set_yticks(_nice_ticks(top))  # fixed ticks: no locator work
        self.line_rate.set_ydata([rate, rate])
        self.line_rate_text.set_y(rate * 1.04)
        self.line_rate_text.set_text(f"line rate {rate:,.0f} GB/s")
        return rate, top

    def update(self, curve):
        bus = self._check(curve)
        self.curve.set_data(curve.sizes, bus)
        rate = curve.line_rate / u.GBps
        finite = bool(np.isfinite(curve.knee))
        self.knee.set_visible(finite)
        self.knee_text.set_visible(finite)
        if finite:
            self.knee.set_xdata([curve.knee, curve.knee])
            right = curve.knee <= _KNEE_LABEL_RIGHT  # else its label would run past the axis: it goes to the left
            self.knee_text.set_position((curve.knee * 1.3 if right else curve.knee / 1.3, rate * 0.08))
            self.knee_text.set_horizontalalignment("left" if right else "right")
            self.knee_text.set_text(f"latency-bound below\n{u.fmt_bytes(curve.knee)}")
        self.title.set_text(f"{curve.op}, {curve.ranks} ranks, {curve.algorithm}, {curve.link}")


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
    g = _v.count("gpus", gpus, scalar=False)
    size = _v.nonnegative("size", size, scalar=True, unit="bytes")
    if g.ndim != 1 or g.size < 2:
        raise ValueError(f"gpus={_v.show(gpus)} must be a list of at least two GPU counts")
    if tutorial is not None:
        tutorial = _v.sequence("tutorial", tutorial, low=0, unit="seconds")
        if tutorial.shape != g.shape:
            raise ValueError(f"tutorial has {tutorial.size} values for {g.size} gpus; give one time per GPU count")
    ax = new_axes(ax)
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


@house_style
def fabric_tiers_chart(placement: c.DimensionTiers, *, ax=None):
    """Where each parallel dimension's traffic goes on a multi-tier fabric: one bar per dimension rising to the
    GPUs its group spans (log scale), over bands for the levels of the fabric (the node's NVLink, then each tier,
    labelled with its domain and the bandwidth per GPU it leaves); a bar is coloured by the level it climbs to.
    ``placement``: :func:`atscale.collectives.dimension_tiers`."""
    if not isinstance(placement, c.DimensionTiers):
        raise ValueError(f"placement={_v.show(placement)} must be an atscale.collectives.DimensionTiers "
                         "(collectives.dimension_tiers(plan, cluster))")
    ax = new_axes(ax, figsize=(7.2, 4.4))
    levels, domains = placement.levels, placement.domains
    top = max(max(domains), max(placement.spans)) * 2.5
    lows = (1,) + domains[:-1]
    shades = ("#f3f6fa", "#e4ecf5")
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(levels)}
    for i, (name, low, high, rate) in enumerate(zip(levels, lows, domains, placement.bandwidth)):
        high = top if i == len(levels) - 1 else high
        ax.axhspan(low, high, color=shades[i % 2], zorder=0, lw=0)
        what = "NVLink" if name == "node" else name
        ax.text(len(placement.dims) - 0.55, np.sqrt(low * min(high, top)),
                f"{what}: {placement.domains[i]:,} GPUs\n{u.fmt_bandwidth(rate, 1)} per GPU",
                ha="left", va="center", fontsize=8, color=colour[name])
    x = np.arange(len(placement.dims))
    for xi, dim, size, stride, span, level in zip(x, placement.dims, placement.sizes, placement.strides,
                                                   placement.spans, placement.crossed):
        ax.bar(xi, span - 1 if span > 1 else 0.0, bottom=1, width=0.5, color=colour.get(level, MUTED), zorder=2)
        label = f"{size} × {stride:,} apart" if size > 1 else "1 (none)"
        ax.text(xi, max(span, 1) * 1.3, label, ha="center", va="bottom", fontsize=8, color=INK, zorder=3)
    ax.set_yscale("log", base=2)
    ax.set_ylim(1, top)
    ax.set_xlim(-0.6, len(placement.dims) + 1.3)
    ax.set_xticks(x)
    ax.set_xticklabels(placement.dims)
    ticks = [d for d in domains] + [1]
    ax.set_yticks(sorted(set(ticks)))
    ax.set_yticklabels([f"{t:,}" for t in sorted(set(ticks))])
    ax.minorticks_off()
    ax.set_xlabel(f"parallel dimension (ranks ordered {placement.order}, innermost first)")
    ax.set_ylabel("GPUs one group spans (log scale)")
    return ax.figure


@house_style
def tier_sweep_chart(sweep: c.TierSweep, *, ax=None):
    """A collective's time against the GPUs its group spans, one line per fabric, with the tier boundaries of the
    tiered fabric marked: the taper shows only past a boundary. ``sweep``: :func:`atscale.collectives.tier_sweep`."""
    if not isinstance(sweep, c.TierSweep):
        raise ValueError(f"sweep={_v.show(sweep)} must be an atscale.collectives.TierSweep (collectives.tier_sweep)")
    ax = new_axes(ax)
    markers = "os^vD"
    for i, (name, t) in enumerate(zip(sweep.fabrics, sweep.seconds)):
        ax.plot(sweep.spans, np.asarray(t) * 1e3, marker=markers[i % len(markers)], ms=4,
                color=PALETTE[i % len(PALETTE)], label=name)
    top = float(max(np.max(t) for t in sweep.seconds)) * 1.7e3
    for name, domain in sweep.boundaries:
        if sweep.spans[0] < domain < sweep.spans[-1]:  # a line collection: the key may sit across it
            ax.vlines(domain, 0, top, colors=MUTED, linestyles="--", lw=1)
            ax.text(domain * 1.05, 0, f" one {name}", rotation=90, va="bottom", fontsize=8, color=MUTED)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sweep.spans)
    ax.set_xticklabels([f"{s:,}" for s in sweep.spans], rotation=45, ha="right")
    ax.minorticks_off()
    ax.set_ylim(0, top)
    ax.set_xlabel(f"GPUs the group spans (members {sweep.stride:,} GPUs apart)")
    ax.set_ylabel(f"{sweep.op} of {u.fmt_bytes(sweep.size, 1)} per GPU (ms)")
    ax.legend(loc="upper left", fontsize=8)
    return ax.figure
