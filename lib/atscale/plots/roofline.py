"""Figures of the chapter "The roofline"."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
from matplotlib.ticker import MaxNLocator

from .. import _validate as _v
from .. import hardware, kernels, models, roofline
from ._base import INK, MARGINS, MUTED, PALETTE, STYLE, LiveFigure, house_style, log_axes, new_axes

__all__ = ["roofline_chart", "gemm_intensity_chart", "ridge_history_chart", "peak_vs_measured_chart",
           "RooflineExplorerFigure", "measured_sweep_chart", "roofline_error_chart", "attention_rates_chart"]

_INTENSITY_RANGE = (0.1, 10_000.0)


def _roof_line(ax, r: roofline.Roof, colour, label, lo, hi, ls="-"):
    """Draw one roof as three points: it is straight on log-log axes."""
    ridge = r.ridge_point
    xs = [lo, ridge, hi] if lo < ridge < hi else [lo, hi]
    ys = np.minimum(r.peak, r.bandwidth * np.array(xs)) / 1e12
    ax.plot(xs, ys, color=colour, ls=ls, label=label)


@house_style
def roofline_chart(accelerators=("H100 SXM", "A100 SXM 80GB", "B200"), dtype: str = "bf16", *, ops=(),
                   measured: bool = False, ax=None):
    """Rooflines of several accelerators (attainable TFLOP/s vs FLOP/byte), with operations placed.

    Args:
        accelerators: catalog names (or :class:`~atscale.roofline.Roof` objects).
        dtype: data type of the compute roof.
        ops: :class:`~atscale.roofline.Op` objects (scalar) drawn at their intensity on the
            first accelerator's roof.
        measured: also draw the first accelerator's measured matmul roof (dashed).
    """
    if isinstance(accelerators, (str, hardware.Accelerator, roofline.Roof)):
        accelerators = (accelerators,)  # one accelerator (a catalog name is one name, not its letters)
    measured = _v.flag("measured", measured)
    roofs = [roofline.roof(a, dtype) for a in accelerators]
    if not roofs:
        raise ValueError("accelerators must name at least one accelerator")
    extra = roofline.roof(accelerators[0], dtype, measured=True) if measured else None
    ops = list(ops)
    for op in ops:
        if np.ndim(op.flops) or np.ndim(op.bytes):
            raise ValueError(f"op {op.name!r} has array sizes; pass scalar ops to roofline_chart")
    ax = new_axes(ax)
    lo, hi = _INTENSITY_RANGE
    for i, r in enumerate(roofs):
        _roof_line(ax, r, PALETTE[i % len(PALETTE)], f"{r.name} (ridge {r.ridge_point:,.0f} FLOP/B)", lo, hi)
    if extra is not None:
        _roof_line(ax, extra, PALETTE[0], f"{extra.name}", lo, hi, ls="--")
    markers = "o^sDvP*Xph<>"
    for j, op in enumerate(ops):  # one legend entry per op: their labels would overlap on the roof
        x = float(op.intensity)
        y = roofline.attainable_flops(roofs[0], x) / 1e12
        ax.scatter([x], [y], s=42, marker=markers[j % len(markers)], color=PALETTE[(j + 3) % len(PALETTE)],
                   zorder=4, edgecolors=INK, linewidths=0.5, label=f"{op.name} ({x:,.0f} FLOP/B)" if x >= 10 else f"{op.name} ({x:.2g} FLOP/B)")
    top = max(r.peak for r in roofs) / 1e12
    ax.set_xlim(lo, hi)
    ax.set_ylim(top / 1e4, top * 2.5)
    log_axes(ax)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel(f"Attainable {dtype.upper()} (TFLOP/s)")
    ax.set_title(f"The roofline, dense {dtype.upper()}")
    ax.legend(loc="lower right", fontsize=7.5 if ops else 9)
    return ax.figure


@house_style
def gemm_intensity_chart(model=models.LLAMA3_70B, accelerator="H100 SXM", dtype: str = "bf16", *,
                         tokens=None, tp: int = 1, ax=None):
    """Intensity of one layer's four GEMMs as the number of tokens (rows) grows.

    Horizontal lines mark the ridge points of the peak and (if published) measured roofs;
    a GEMM is compute-bound above them. Dotted verticals mark the common token counts of
    decode (1 per sequence) and of training at micro-batch 1 (``model.seq_length``).
    """
    if tokens is None:
        tokens = np.unique(np.round(np.geomspace(1, 100_000, 60)))  # whole token counts
    tokens = np.asarray(tokens, dtype=float)
    ops = roofline.layer_ops(model, tokens, 1, tp=tp, decode=True)  # decode=True: rows = micro_batch
    acc = hardware.accelerator(accelerator)
    ridge = roofline.ridge_point(acc, dtype)
    ax = new_axes(ax)
    for i, name in enumerate(("QKV projection", "attention output", "MLP up", "MLP down")):
        ax.plot(tokens, ops[name].intensity, color=PALETTE[i], label=name)
    ax.axhline(ridge, color=INK, lw=1.2, ls="--")
    ax.text(tokens[0] * 1.3, ridge * 1.08, f"{acc.name} ridge, peak: {ridge:,.0f} FLOP/B", fontsize=8)
    measured = acc.measured(dtype)
    if measured:
        mridge = measured / acc.hbm_bandwidth
        ax.axhline(mridge, color=MUTED, lw=1.0, ls=":")
        ax.text(tokens[0] * 1.3, mridge / 1.35, f"ridge, measured matmul: {mridge:,.0f} FLOP/B", fontsize=8,
                color=MUTED)
    ax.axvline(model.seq_length, color=MUTED, lw=0.8, ls=":")
    ax.text(model.seq_length * 1.1, 1.3, f"training, micro-batch 1\n({model.seq_length:,} tokens)", fontsize=8,
            color=MUTED)
    ax.set_xlim(tokens.min(), tokens.max())
    ax.set_ylim(0.5, 10_000)
    log_axes(ax)
    ax.set_xlabel("Tokens per GEMM, rows of the activation matrix")
    ax.set_ylabel("Arithmetic intensity (FLOP/byte)")
    tp_note = f", TP={tp}" if tp > 1 else ""
    ax.set_title(f"{model.name}: GEMM intensity vs tokens{tp_note}")
    ax.legend(loc="upper left")
    return ax.figure


_FLAGSHIPS = ("A100 SXM 80GB", "H100 SXM", "B200")
"""The NVIDIA SXM flagship of each generation, joined by a line in :func:`ridge_history_chart` (variants such as
the H800, the H200 or a power-limited H100 are drawn as points only)."""


@house_style
def ridge_history_chart(dtype: str = "bf16", *, accelerators=None, ax=None):
    """Ridge point (FLOP/byte) of each catalog accelerator against its year; the NVIDIA SXM
    flagships (A100 80GB, H100, B200) are joined.

    From A100 to H100 peak FLOP/s grew about three times, bandwidth about 1.6 times: the ridge
    nearly doubled. B200 grew both by about 2.3-2.4 times, so its ridge stayed near the H100's.
    """
    _v.choice("dtype", dtype, hardware.DTYPES)
    accs = [hardware.accelerator(a) for a in (accelerators or hardware.ACCELERATORS)]
    accs = [a for a in accs if dtype in a.peak_flops]
    if not accs:
        raise ValueError(f"no accelerator in the selection has a {dtype} peak")
    ax = new_axes(ax)
    years = np.array([a.year for a in accs], dtype=float)
    ridges = np.array([roofline.ridge_point(a, dtype) for a in accs])
    ax.scatter(years, ridges, s=40, color=PALETTE[0], zorder=3)
    for a, x, y in zip(accs, years, ridges):
        ax.annotate(a.name, (x, y), xytext=(5, 3), textcoords="offset points", fontsize=8)
    flagship = sorted((a for a in accs if a.name in _FLAGSHIPS), key=lambda a: a.year)
    if len(flagship) > 1:
        ax.plot([a.year for a in flagship], [roofline.ridge_point(a, dtype) for a in flagship], color=PALETTE[0],
                lw=1.0, alpha=0.6)
    ax.set_xlim(years.min() - 0.7, years.max() + 1.3)
    ax.set_ylim(0, ridges.max() * 1.25)
    ax.set_xlabel("Year of introduction")
    ax.set_ylabel(f"Ridge point, dense {dtype.upper()} (FLOP/byte)")
    ax.set_title(f"Ridge point by year, dense {dtype.upper()}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return ax.figure


@house_style
def peak_vs_measured_chart(dtype: str = "bf16", *, ax=None):
    """Datasheet dense peak vs the best measured matmul rate, for accelerators with a measurement."""
    _v.choice("dtype", dtype, hardware.DTYPES)
    accs = [a for a in hardware.ACCELERATORS.values() if dtype in a.measured_matmul_flops]
    if not accs:
        raise ValueError(f"no measured {dtype} matmul rate in the catalog")
    ax = new_axes(ax)
    x = np.arange(len(accs))
    peak = np.array([a.peak(dtype) for a in accs]) / 1e12
    meas = np.array([a.measured(dtype) for a in accs]) / 1e12
    ax.bar(x - 0.2, peak, width=0.4, color=PALETTE[5], label="datasheet, dense peak")
    ax.bar(x + 0.2, meas, width=0.4, color=PALETTE[0], label="measured, best matmul")
    for xi, p, mv in zip(x, peak, meas):
        ax.text(xi + 0.2, mv, f"{mv / p:.0%}", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(x, [a.name for a in accs])
    ax.set_ylabel(f"{dtype.upper()} (TFLOP/s)")
    ax.set_ylim(0, peak.max() * 1.2)
    ax.set_title("Peak vs achievable: the measured roof is lower")
    ax.legend(loc="upper left")
    ax.grid(axis="x", visible=False)
    return ax.figure


_LADDER_STEPS = (1.0, 2.0, 5.0)
_HEADROOM = 2.0
"""The explorer's upper y limit is the first 1-2-5 value at least this many times the peak."""
_Y_SPAN = 2e4
"""The explorer's y axis spans this factor (a little over four decades, as :func:`roofline_chart`)."""


def _ladder_top(value: float) -> float:
    """The smallest 1-2-5 x 10^k value that is at least ``value`` (> 0)."""
    decade = 10.0 ** np.floor(np.log10(value))
    return float(next((m * decade for m in _LADDER_STEPS if m * decade >= value * (1 - 1e-12)), 10 * decade))


class RooflineExplorerFigure(LiveFigure):
    """The roofline explorer's figure: one operation on one accelerator's roofline, attainable
    TFLOP/s against arithmetic intensity (FLOP/byte), both log scales. The datasheet roof (dense
    peak) is solid, the measured matmul roof dashed where one is published; the key gives their
    ridge points; the operation is a dot on the datasheet roof at its intensity, labelled with its
    name and intensity, and the title names the bound and the attainable rate.

    Results are :class:`atscale.roofline.Placement` (:func:`atscale.roofline.place`). The x axis is
    fixed (0.1-10,000 FLOP/byte); an operation outside it is drawn on the edge as an arrowhead
    pointing the way it lies, at its true attainable rate, and labelled "off scale". The y axis
    runs from its top, the first 1-2-5 value at least twice the peak, down by a factor of 20,000,
    so one background serves every accelerator and data type with the same top.
    """

    def __init__(self, figsize=(6.4, 4.0)):
        super().__init__(figsize)
        from matplotlib.legend import Legend

        lo, hi = _INTENSITY_RANGE
        with mpl.rc_context(STYLE):
            ax = self.ax = self.fig.add_subplot()
            self.fig.subplots_adjust(**MARGINS)
            ax.set_xlim(lo, hi)
            ax.set_ylim(0.1, 1000.0)
            log_axes(ax)
            ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
            self.peak_line, = ax.plot([lo, hi], [1.0, 1.0], color=PALETTE[0])
            self.measured_line, = ax.plot([lo, hi], [1.0, 1.0], color=PALETTE[0], ls="--")
            self.point, = ax.plot([np.nan], [np.nan], ls="none", marker="o", ms=np.sqrt(60), color=PALETTE[3],
                                  mec="white", mew=0.8, zorder=4, clip_on=False)
            self.label = ax.annotate("", (1.0, 1.0), xytext=(6, -24), textcoords="offset points", fontsize=8.5,
                                     annotation_clip=False)
            # Two keys, one shown: with the measured roof and without (an entry that comes and goes).
            self.key_both = Legend(ax, [self.peak_line, self.measured_line], ["peak", "measured"], loc="lower right")
            self.key_peak = Legend(ax, [self.peak_line], ["peak"], loc="lower right")
            for artist in (self.peak_line, self.measured_line, self.point, self.label, ax.title, self.key_both,
                           self.key_peak):
                self.dynamic(artist)

    @staticmethod
    def _check(result) -> roofline.Placement:
        if not isinstance(result, roofline.Placement):
            raise ValueError(f"result={result!r} must be an atscale.roofline.Placement (see roofline.place)")
        return result

    def layout(self, result):
        """``(top, dtype)``: the y axis's upper limit (TFLOP/s, from the 1-2-5 ladder) and the data type
        in its label; applied to the axes."""
        p = self._check(result)
        top = _ladder_top(_HEADROOM * p.roof.peak / 1e12)
        if self.ax.get_ylim() != (top / _Y_SPAN, top):
            self.ax.set_ylim(top / _Y_SPAN, top)
            log_axes(self.ax, x=False)
        self.ax.set_ylabel(f"Attainable {p.dtype.upper()} (TFLOP/s)")
        return top, p.dtype

    @staticmethod
    def _roof_xy(r: roofline.Roof):
        lo, hi = _INTENSITY_RANGE
        ridge = r.ridge_point
        xs = np.array([lo, ridge, hi] if lo < ridge < hi else [lo, hi])
        return xs, np.minimum(r.peak, r.bandwidth * xs) / 1e12

    def update(self, result):
        p = self._check(result)
        lo, hi = _INTENSITY_RANGE
        self.peak_line.set_data(*self._roof_xy(p.roof))
        has_measured = p.measured is not None
        self.measured_line.set_visible(has_measured)
        self.key_both.set_visible(has_measured)
        self.key_peak.set_visible(not has_measured)
        key = self.key_both if has_measured else self.key_peak
        key.get_texts()[0].set_text(f"peak (ridge {p.roof.ridge_point:,.0f} FLOP/B)")
        if has_measured:
            self.measured_line.set_data(*self._roof_xy(p.measured))
            key.get_texts()[1].set_text(f"measured matmul (ridge {p.measured.ridge_point:,.0f} FLOP/B)")
        i = p.intensity
        x = float(np.clip(i, lo, hi))
        y = p.attainable / 1e12
        self.point.set_data([x], [y])
        inside = lo <= i <= hi
        self.point.set_marker("o" if inside else "<" if i < lo else ">")
        self.point.set_markersize(np.sqrt(60) if inside else 11)  # an arrowhead needs more ink than a dot
        right = x > 100  # keep the label inside the axes: write it to the left of points on the right
        value = f"{i:,.0f}" if i >= 10 else f"{i:.2g}"
        self.label.xy = (x, y)
        self.label.xyann = (-6 if right else 6, -24)
        self.label.set_horizontalalignment("right" if right else "left")
        self.label.set_text(f"{p.op.name}\n{value} FLOP/B{'' if inside else ', off scale'}")
        self.ax.title.set_text(f"{p.roof.name}: {p.bound}-bound, {y:,.1f} TFLOP/s attainable")


_SWEEP_LABELS = {1: (5, -11), 16: (5, -11), 128: (-44, 3), 192: (5, -11), 1024: (5, -11),
                 16384: (5, -11)}
"""Which sweep points are labelled with their ``m``, and the label's offset (points)."""


def _measurement(measurement):
    if measurement is None:
        return roofline.measured_roofline()
    if not isinstance(measurement, roofline.MeasuredRoofline):
        raise ValueError(f"measurement={measurement!r} must be an atscale.roofline.MeasuredRoofline "
                         "(see roofline.measured_roofline)")
    return measurement


@house_style
def measured_sweep_chart(measurement=None, *, ax=None):
    """The measured GEMM sweep on the roofline: achieved TFLOP/s against FLOP/byte, with the
    datasheet roof (solid) and the roof of the measured ceilings (dashed).

    ``measurement``: a :class:`~atscale.roofline.MeasuredRoofline` (default: the book's H200).
    Each point is one GEMM ``[m, k] @ [k, n]`` of the sweep, labelled with its ``m`` for a few.
    """
    meas = _measurement(measurement)
    datasheet = roofline.roof(meas.accelerator, "bf16")
    measured = meas.roof
    ax = new_axes(ax)
    lo, hi = 0.5, 10_000.0
    _roof_line(ax, datasheet, PALETTE[5], f"datasheet roof ({datasheet.peak / 1e12:,.0f} TFLOP/s, "
               f"{datasheet.bandwidth / 1e12:.2f} TB/s)", lo, hi)
    _roof_line(ax, measured, PALETTE[0], f"measured ceilings ({measured.peak / 1e12:,.0f} TFLOP/s, "
               f"{measured.bandwidth / 1e12:.2f} TB/s)", lo, hi, ls="--")
    x, y = meas.sweep_intensity, meas.sweep_flops_per_s / 1e12
    ax.scatter(x, y, s=26, color=PALETTE[3], edgecolors=INK, linewidths=0.5, zorder=4,
               label=f"measured GEMMs, n = k = {meas.sweep_n:,}")
    for m, xi, yi in zip(meas.sweep_m, x, y):
        if m in _SWEEP_LABELS:
            ax.annotate(f"m={m:,}", (xi, yi), textcoords="offset points", xytext=_SWEEP_LABELS[m], fontsize=7.5,
                        color=MUTED)
    ax.set_xlim(lo, hi)
    ax.set_ylim(1, 3000)
    log_axes(ax)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("BF16 throughput (TFLOP/s)")
    ax.set_title(f"A measured roofline: {meas.gpu}")
    ax.legend(loc="upper left", fontsize=8)
    return ax.figure


@house_style
def roofline_error_chart(measurement=None, *, ax=None):
    """The roofline model's error on each GEMM of the measured sweep, against the rows ``m``:
    ``predicted / measured − 1`` (%, negative = the model predicts a faster kernel than ran), with
    the datasheet roof and with the measured ceilings; dotted verticals mark the knees (the model's
    ``m*`` with measured ceilings and the knee of the measured sweep)."""
    meas = _measurement(measurement)
    ax = new_axes(ax)
    for ceilings, colour, marker in (("datasheet", PALETTE[5], "o"), ("measured", PALETTE[0], "s")):
        check = roofline.roofline_check(meas, ceilings)
        ax.plot(check.m, 100 * check.error, marker=marker, ms=4, color=colour, label=f"{ceilings} ceilings")
    knee_model = roofline.roofline_check(meas, "measured").model_knee
    ax.axvline(knee_model, color=PALETTE[0], ls=":", lw=1.2)
    ax.axvline(meas.sweep_knee, color=PALETTE[3], ls=":", lw=1.2)
    ax.text(knee_model, 7, "model m* ", ha="right", va="bottom", fontsize=8, color=PALETTE[0])
    ax.text(meas.sweep_knee, 7, " measured knee", ha="left", va="bottom", fontsize=8, color=PALETTE[3])
    ax.axhline(0, color=INK, lw=0.8)
    ax.set_xlim(0.7, 25_000)
    ax.set_ylim(-60, 15)
    log_axes(ax, y=False)
    ax.set_xlabel(f"Rows m of the GEMM [m, {meas.sweep_k:,}] @ [{meas.sweep_k:,}, {meas.sweep_n:,}] (tokens)")
    ax.set_ylabel("Model error, predicted / measured − 1 (%)")
    ax.set_title("Where the roofline model is wrong")
    ax.legend(loc="lower left", fontsize=8.5)
    return ax.figure


_SOURCE_NAMES = {"tritonbench-1267": "tritonbench #1267", "flash-attention-1791": "flash-attention #1791",
                 "flashattention3-figure-fwd": "FlashAttention-3 paper",
                 "flashattention3-figure-bwd": "FlashAttention-3 paper",
                 "flashattention2-figure-h100": "FlashAttention-2 paper",
                 "flashattention2-figure-a100": "FlashAttention-2 paper",
                 "pytorch-benchmark-2391": "pytorch/benchmark #2391"}


@house_style
def attention_rates_chart(rates, *, ax=None):
    """Attention kernels' forward (solid) and backward (dashed) rates against the sequence length, the model's
    lines beside the published points (markers by source), with a large GEMM's rate for scale: an
    :class:`~atscale.kernels.AttentionRates` (:func:`atscale.kernels.attention_rates`)."""
    if not isinstance(rates, kernels.AttentionRates):
        raise ValueError(f"rates={_v.show(rates)} must be an atscale.kernels.AttentionRates "
                         "(as kernels.attention_rates returns)")
    ax = new_axes(ax, figsize=(6.6, 4.2))
    seq = np.asarray(rates.seq_lengths, dtype=float)
    names = list(dict.fromkeys(k for k, _ in rates.curves))
    colour = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(names)}
    for (kernel, pass_), r in rates.curves.items():
        ax.plot(seq, np.asarray(r) / 1e12, color=colour[kernel], linestyle="-" if pass_ == "forward" else "--",
                label=f"{kernels.ATTENTION_KERNEL_LABELS[kernel]}, {pass_} (model)")
    markers, labelled = {}, set()
    for kernel, pass_, s, published, _, source in rates.points:
        m = markers.setdefault(source, "osD^v<>"[len(markers) % 7])
        label = f"published: {_SOURCE_NAMES.get(source, source)}"
        ax.scatter([s], [published / 1e12], marker=m, s=30, zorder=3, facecolor="white" if pass_ == "backward"
                   else colour[kernel], edgecolor=colour[kernel], label="_" + label if label in labelled else label)
        labelled.add(label)
    ax.axhline(rates.gemm / 1e12, color=MUTED, linestyle=":", linewidth=1.2,
               label="a large BF16 GEMM (8,192 cubed, model)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(seq, [f"{int(x) // 1024}k" if x >= 1024 else f"{int(x)}" for x in seq])
    ax.set_ylim(0, None)
    ax.set_xlabel("Sequence length (tokens)")
    ax.set_ylabel("Achieved rate (TFLOP/s)")
    mask = "causal" if rates.causal else "non-causal"
    ax.set_title(f"Attention kernels on the {rates.accelerator}, {mask}, head dim {rates.head_dim}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7.5)
    return ax.figure
