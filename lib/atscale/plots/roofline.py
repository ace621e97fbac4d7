"""Figures of the chapter "The roofline"."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from .. import hardware, models, roofline
from . import INK, MUTED, PALETTE, house_style, log_axes, new_axes

__all__ = ["roofline_chart", "gemm_intensity_chart", "ridge_history_chart", "peak_vs_measured_chart",
           "operator_chart", "measured_sweep_chart", "roofline_error_chart"]

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
        tokens = np.geomspace(1, 100_000, 60)
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


@house_style
def ridge_history_chart(dtype: str = "bf16", *, accelerators=None, ax=None):
    """Ridge point (FLOP/byte) of each catalog accelerator against its year; the NVIDIA SXM
    flagships (A100 80GB, H100, B200) are joined.

    From A100 to H100 peak FLOP/s grew about three times, bandwidth about 1.6 times: the ridge
    nearly doubled. B200 grew both by about 2.3-2.4 times, so its ridge stayed near the H100's.
    """
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
    flagship = sorted((a for a in accs if a.vendor == "NVIDIA" and a.form_factor.startswith("SXM")
                       and a.name not in ("A100 SXM 40GB", "H200 SXM")), key=lambda a: a.year)
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


OPERATORS = ("matmul (square)", "matmul (tokens x 8192 x 8192)", "elementwise add", "layer norm",
             "attention (naive)", "attention (fused)", "Adam update")


def operator(kind: str, size: float, dtype: str = "bf16") -> roofline.Op:
    """One of :data:`OPERATORS` at ``size`` (matrix side, tokens, sequence length or
    parameters, as the kind implies), in ``dtype`` — the operator menu of the explorer."""
    bpe = hardware.bytes_per_element(dtype)
    size = float(size)
    if kind == "matmul (square)":
        return roofline.matmul(size, size, size, bpe, f"matmul {size:,.0f}³")
    if kind == "matmul (tokens x 8192 x 8192)":
        return roofline.matmul(size, 8192, 8192, bpe, f"matmul {size:,.0f}x8192x8192")
    if kind == "elementwise add":
        return roofline.elementwise(size, bytes_per_element=bpe, name="x + y")
    if kind == "layer norm":
        return roofline.layer_norm(size, 8192, bpe)
    if kind in ("attention (naive)", "attention (fused)"):
        return roofline.attention_scores(1, 64, size, 128, bpe, fused=kind.endswith("(fused)"))
    if kind == "Adam update":
        return roofline.adam_update(size)
    raise ValueError(f"kind={kind!r} is not one of {OPERATORS}")


@house_style
def operator_chart(accelerator="H100 SXM", dtype: str = "bf16", kind: str = "matmul (square)",
                   size: float = 4096, *, ax=None):
    """One operator on one accelerator's roofline (peak and, if published, measured roof),
    with its bound, attainable rate and time in the title."""
    op = operator(kind, size, dtype)
    acc = hardware.accelerator(accelerator)
    peak_roof = roofline.roof(acc, dtype)
    ax = new_axes(ax)
    lo, hi = _INTENSITY_RANGE
    _roof_line(ax, peak_roof, PALETTE[0], f"peak (ridge {peak_roof.ridge_point:,.0f} FLOP/B)", lo, hi)
    if acc.measured_matmul_flops.get(dtype):
        mr = roofline.roof(acc, dtype, measured=True)
        _roof_line(ax, mr, PALETTE[0], f"measured matmul (ridge {mr.ridge_point:,.0f} FLOP/B)", lo, hi, ls="--")
    x = float(np.clip(op.intensity, lo, hi))
    y = roofline.attainable_flops(peak_roof, op.intensity) / 1e12
    tb = roofline.time_bound(op, peak_roof)
    ax.scatter([x], [y], s=60, color=PALETTE[3], zorder=4, edgecolors="white", linewidths=0.8)
    right = x > 100  # keep the label inside the axes: write it to the left of points on the right
    label = f"{op.intensity:,.0f}" if op.intensity >= 10 else f"{op.intensity:.2g}"
    ax.annotate(f"{op.name}\n{label} FLOP/B", (x, y), xytext=(-6 if right else 6, -24),
                textcoords="offset points", fontsize=8.5, ha="right" if right else "left")
    ax.set_xlim(lo, hi)
    ax.set_ylim(peak_roof.peak / 1e12 / 1e4, peak_roof.peak / 1e12 * 2.5)
    log_axes(ax)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel(f"Attainable {dtype.upper()} (TFLOP/s)")
    ax.set_title(f"{acc.name}: {tb.bound}-bound, {y:,.1f} TFLOP/s attainable")
    ax.legend(loc="lower right")
    return ax.figure


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
