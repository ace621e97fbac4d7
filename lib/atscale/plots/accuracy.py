"""Figures of the appendix "How accurate is this book?": the comparisons :mod:`atscale.accuracy` gathers."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from .. import accuracy as A
from ._base import INK, MUTED, PALETTE, STYLE, house_style, log_axes, new_axes

__all__ = ["accuracy_error_chart", "bound_headroom_chart", "model_vs_published_chart", "kernel_check_chart",
           "rowwise_chart"]

_GROUP_COLOUR = {g: PALETTE[i] for i, g in enumerate(A.GROUPS)}
_MISS = PALETTE[6]


def _check_group(group):
    if group not in A.GROUPS:
        raise ValueError(f"group={group!r} must be one of {A.GROUPS}")


def _row_axes(ax, rows: int, inches_per_row: float, *, top: float):
    """Axes for one labelled row per comparison: a figure tall enough for ``rows`` rows (a fixed
    1.2 in for title and axis), a wide left margin for the labels; and the rows' y, top row first."""
    height = inches_per_row * rows + 1.2
    ax = new_axes(ax, figsize=(6.8, height))
    ax.figure.subplots_adjust(left=0.43, right=0.97, bottom=0.9 / height, top=top)
    return ax, np.arange(rows)[::-1]


@house_style
def accuracy_error_chart(*, ax=None):
    """Signed relative error of every estimate (not the upper bounds), one row per comparison, grouped by
    chapter; filled markers are calibration, open ones validation; the known misses are drawn in vermilion."""
    items = [c for c in A.comparisons() if c.kind == "estimate"]
    ax, y = _row_axes(ax, len(items), 0.19, top=0.96)
    seen = set()
    for yi, c in zip(y, items):
        colour = _MISS if c.known_miss else _GROUP_COLOUR[c.group]
        filled = c.role == "calibration"
        lab = f"{c.group} ({c.role})" if not c.known_miss else "known miss (validation)"
        ax.scatter(c.error * 100, yi, s=30, marker="D" if c.known_miss else "o", color=colour if filled else "white", edgecolors=colour,
                   lw=1.3, zorder=3, label=None if lab in seen else lab)
        seen.add(lab)
    ax.axvline(0, color=INK, lw=1)
    errors = [c.error * 100 for c in items]
    if max(map(abs, errors)) > 100:  # a miss by a factor: keep ±25 % linear, compress beyond it
        ax.set_xscale("symlog", linthresh=25, linscale=2)
        ax.set_xlim(min(min(errors) * 1.5, -40), max(errors) * 1.6)
    ax.set_yticks(y, [c.what for c in items], fontsize=6.5)
    ax.set_ylim(-0.8, len(items) - 0.2)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("Model / published − 1 (%; logarithmic beyond ±25 %)"
                  if ax.get_xscale() == "symlog" else "Model / published − 1 (%)")
    ax.set_title("Every estimate against its measurement")
    ax.legend(loc="upper left", fontsize=7)
    return ax.figure


@house_style
def bound_headroom_chart(*, ax=None):
    """The upper bounds against measurements: by how much each bound (datasheet peak, ZeRO's state-only
    model size) exceeds what was measured, as a bar per comparison."""
    items = [c for c in A.comparisons() if c.kind == "upper bound"]
    ax, y = _row_axes(ax, len(items), 0.24, top=0.93)
    seen = set()
    for yi, c in zip(y, items):
        ax.barh(yi, c.error * 100, color=_GROUP_COLOUR[c.group], height=0.65,
                label=None if c.group in seen else c.group)
        seen.add(c.group)
        ax.text(c.error * 100 + 1, yi, f"{c.error:+.0%}", va="center", fontsize=7, color=MUTED)
    ax.set_yticks(y, [f"{c.what}" for c in items], fontsize=6.5)
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, max(c.error for c in items) * 100 * 1.18)
    ax.set_xlabel("Bound / measured − 1 (%)")
    ax.set_title("How far the upper bounds sit above the measurements")
    ax.legend(loc="lower right", fontsize=8)
    return ax.figure


@house_style
def model_vs_published_chart(group: str, *, ax=None):
    """Model against published value for one group's estimates, on logarithmic axes with the line
    model = published; filled markers calibration, open validation, known misses in vermilion."""
    _check_group(group)
    items = [c for c in A.comparisons() if c.group == group and c.kind == "estimate"]
    if not items:
        raise ValueError(f"group={group!r} has no estimates to plot")
    units = {c.quantity.split("(")[-1].rstrip(")") if "(" in c.quantity else "" for c in items}
    scale, unit = (1e6, "µs") if units == {"s"} else (1.0, units.pop() if len(units) == 1 else "")
    ax = new_axes(ax, figsize=(5.6, 4.6))
    ax.figure.subplots_adjust(left=0.2)
    seen = set()
    for c in items:
        colour = _MISS if c.known_miss else _GROUP_COLOUR[c.group]
        lab = "known miss" if c.known_miss else c.role
        ax.scatter(c.published * scale, c.model * scale, s=36, marker="D" if c.known_miss else "o", color=colour if c.role == "calibration" else "white",
                   edgecolors=colour, lw=1.3, zorder=3, label=None if lab in seen else lab)
        seen.add(lab)
    vals = np.array([[c.published, c.model] for c in items]) * scale
    lo, hi = vals.min() / 1.6, vals.max() * 1.6
    ax.plot([lo, hi], [lo, hi], color=INK, lw=1, ls="--")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    log_axes(ax)
    unit = f" ({unit})" if unit else ""
    ax.set_xlabel(f"Published{unit}")
    ax.set_ylabel(f"Model{unit}")
    ax.set_title(f"{group}: model against published")
    ax.legend(loc="upper left", fontsize=8)
    return ax.figure


_ATTENTION_SERIES = (("flash-forward", "FlashAttention-2, forward", 0), ("flash-backward", "FlashAttention-2, backward", 0),
                     ("cudnn-forward", "cuDNN, forward", 3), ("cudnn-backward", "cuDNN, backward", 3))


@house_style
def kernel_check_chart(checks):
    """The kernel model against the book's kernel measurement (:func:`atscale.accuracy.kernel_check`), as the
    model's error in time (model / measured − 1, %): left, attention against the sequence length (FlashAttention-2
    and cuDNN, forward solid and backward open, causal circles and non-causal squares); right, the experts' GEMMs of
    ``torch._grouped_mm`` against the tokens each expert gets, priced as one grouped kernel and one GEMM after
    another (the four models' shapes, up and down projections)."""
    import matplotlib.pyplot as plt

    if not isinstance(checks, tuple) or not checks or not all(isinstance(c, A.KernelCheck) for c in checks):
        raise ValueError("checks must be a non-empty tuple of atscale.accuracy.KernelCheck (as accuracy.kernel_check "
                         "returns)")
    with mpl.rc_context(STYLE):
        fig, (left, right) = plt.subplots(1, 2, figsize=(9.4, 4.3), gridspec_kw={"width_ratios": (1.25, 1)})
    plt.close(fig)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.32, top=0.84, wspace=0.3)
    for variant, label, colour in _ATTENTION_SERIES:
        for causal, marker in ((1.0, "o"), (0.0, "s")):
            pts = sorted((c.shape["seq"], 100 * c.error) for c in checks
                         if c.variant == variant and c.shape.get("causal") == causal)
            if not pts:
                continue
            s, e = zip(*pts)
            backward = variant.endswith("backward")
            left.plot(s, e, color=PALETTE[colour + backward], ls="--" if backward else "-", lw=1.2, marker=marker,
                      ms=4, mfc="white" if backward else PALETTE[colour + backward],
                      label=f"{label}{'' if causal else ' (non-causal)'}")
    seqs = sorted({c.shape["seq"] for c in checks if c.experiment == "attention"})
    left.set_xscale("log", base=2)
    if seqs:
        left.set_xticks(seqs, [f"{int(x) // 1024}k" if x >= 1024 else f"{int(x)}" for x in seqs], fontsize=7.5)
    left.set_xlabel("Sequence length (tokens)")
    left.set_title("Attention", fontsize=10)
    names = {"grouped": "priced as one grouped kernel", "loop": "priced one GEMM per expert, one after another"}
    for i, (key, way) in enumerate(A.EXPERT_MODELS.items()):
        pts = [(c.shape["tokens_per_expert"], 100 * c.error) for c in checks
               if c.experiment == "grouped" and c.variant == "grouped_mm" and c.model == way]
        if pts:
            t, e = zip(*pts)
            right.scatter(np.asarray(t) * (1.0 + 0.06 * (2 * i - 1)), e, s=18, color=PALETTE[(1, 6)[i]],
                          marker="o" if i == 0 else "^", label=names[key])
    right.set_xscale("log", base=2)
    ticks = sorted({c.shape["tokens_per_expert"] for c in checks if c.experiment == "grouped"})
    if ticks:
        right.set_xticks(ticks, [f"{int(x):,}" for x in ticks], fontsize=7.5)
    right.set_yscale("symlog", linthresh=50)
    right.set_yticks([-25, 0, 25, 50, 100, 200, 400], ["−25", "0", "25", "50", "100", "200", "400"])
    right.minorticks_off()
    right.set_xlabel("Tokens per expert")
    right.set_title("Experts' GEMMs (torch._grouped_mm)", fontsize=10)
    for ax in (left, right):
        ax.axhline(0, color=INK, lw=1)
        ax.set_ylabel("Model / measured − 1 (%)")
    right.set_ylabel("Model / measured − 1 (%; log beyond 50)")
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.19), ncol=2, fontsize=6.8)
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.19), ncol=1, fontsize=7)
    fig.suptitle("The kernel model against the book's kernel measurement", fontsize=11, y=0.98)
    return fig


@house_style
def rowwise_chart(layers, *, ax=None):
    """torchao's published speedup of a rowwise-scaled FP8 linear layer over BF16 at each linear layer's shape in
    each run that used it (``layers``: :class:`~atscale.accuracy.RowwiseLayer`, as :func:`atscale.accuracy.
    rowwise_layers` returns them): one row per weight matrix, one marker per run; left of the line at 1 the layer
    is slower in FP8 than in BF16."""
    if not isinstance(layers, tuple) or not layers or not all(isinstance(x, A.RowwiseLayer) for x in layers):
        raise ValueError("layers must be a non-empty tuple of atscale.accuracy.RowwiseLayer (as "
                         "accuracy.rowwise_layers returns)")
    names = list(dict.fromkeys(x.layer for x in layers))
    runs = list(dict.fromkeys(x.run for x in layers))
    ax, y = _row_axes(ax, len(names), 0.36, top=0.9)
    ax.figure.subplots_adjust(left=0.25, bottom=0.33)
    row = dict(zip(names, y))
    offsets = np.linspace(-0.24, 0.24, len(runs))
    for i, (run, dy) in enumerate(zip(runs, offsets)):
        mine = [x for x in layers if x.run == run]
        model, _, what = mine[0].run.split(", ")[:3]
        ax.scatter([x.speedup for x in mine], [row[x.layer] + dy for x in mine], s=30, marker="osD^v"[i % 5],
                   color=PALETTE[i % len(PALETTE)], zorder=3,
                   label=f"{model}: {what.replace('torchtitan ', '')}, {mine[0].m:,.0f} rows per GEMM")
    ax.axvline(1.0, color=INK, lw=1.2)
    ax.text(1.01, len(names) - 0.55, "as fast as BF16", fontsize=7.5, color=INK, va="top")
    ax.set_yticks(y, names, fontsize=8)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("Rowwise FP8 speedup over BF16, forward and backward (×)")
    ax.set_title("Rowwise FP8 at each layer's shape (torchao, H100)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.42, -0.2), ncol=1, fontsize=7.5)
    return ax.figure
