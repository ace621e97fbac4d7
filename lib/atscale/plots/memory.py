"""Figures of the chapter "The memory wall"."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from .. import hardware, memory, models
from .. import _validate as _v
from .. import units as u
from ._base import INK, MARGINS, MUTED, PALETTE, STYLE, LiveFigure, house_style, log_axes, new_axes

__all__ = ["bytes_per_param_chart", "zero_stages_chart", "activation_strategies_chart", "memory_breakdown_chart",
           "memory_wall_chart", "max_model_size_chart", "MemoryExplorerFigure"]

_PART_COLOURS = {"weights": PALETTE[0], "gradients": PALETTE[1], "optimizer state": PALETTE[2],
                 "activations": PALETTE[4]}


@house_style
def bytes_per_param_chart(*, ax=None):
    """Bytes per parameter of each optimizer layout, stacked: weights, gradients, optimizer state."""
    opts = list(memory.OPTIMIZERS.values())
    ax = new_axes(ax, figsize=(6.4, 3.2))
    y = np.arange(len(opts))
    left = np.zeros(len(opts))
    for part, key in (("weights", "weights"), ("gradients", "gradients"), ("optimizer state", "state")):
        widths = np.array([getattr(o, key) for o in opts], dtype=float)
        ax.barh(y, widths, left=left, color=_PART_COLOURS[part], label=part, height=0.55)
        left += widths
    for yi, total in zip(y, left):
        ax.text(total + 0.2, yi, f"{total:g} B", va="center", fontsize=9)
    ax.set_yticks(y, [o.name for o in opts])
    ax.invert_yaxis()
    ax.set_xlim(0, left.max() * 1.5)
    ax.set_xlabel("Memory per parameter (bytes)")
    ax.set_title("Training state per parameter")
    ax.legend(loc="center right")
    ax.figure.subplots_adjust(left=0.25)  # room for the optimizer names
    ax.grid(axis="y", visible=False)
    return ax.figure


@house_style
def zero_stages_chart(model=models.LLAMA3_70B, accelerator="H100 SXM", *, optimizer_name="adam-mixed",
                      dp=None, tp: int = 1, pp: int = 1, ax=None):
    """Per-GPU model state against the data-parallel degree for ZeRO stages 0-3, with the line of the
    accelerator's usable memory (:attr:`~atscale.hardware.Accelerator.usable_memory`)."""
    model = models.model_arg("model", model)
    dp = np.unique(np.geomspace(1, 4096, 40).astype(int)) if dp is None else np.unique(np.ravel(dp))
    if dp.size < 2:
        raise ValueError(f"dp={dp.tolist()} must give at least two data-parallel degrees to draw a line through")
    acc = hardware.accelerator(accelerator)
    ax = new_axes(ax)
    names = ("0: replicate everything (DDP)", "1: shard optimizer state", "2: + gradients", "3: + weights (FSDP)")
    for stage, label in enumerate(names):
        total = memory.model_state_bytes(model, optimizer_name, zero_stage=stage, dp=dp, tp=tp, pp=pp).total / 1e9
        ax.plot(dp, total, color=PALETTE[stage], label=f"ZeRO-{label}")
    usable = acc.usable_memory / 1e9  # what the driver leaves, the ceiling the memory model uses
    ax.axhline(usable, color=INK, ls="--", lw=1.1)
    ax.text(dp.min() * 1.2, usable * 1.12, f"{acc.name}: {usable:,.1f} GB usable", fontsize=8.5)
    ax.set_xlim(dp.min(), dp.max())
    ax.set_ylim(0.1, 3000)
    log_axes(ax)
    ax.set_xlabel("Data-parallel degree (GPUs sharing the state)")
    ax.set_ylabel("Model state per GPU (GB)")
    extra = f", TP={tp}, PP={pp}" if tp * pp > 1 else ""
    ax.set_title(f"{model.name}: what each ZeRO stage buys{extra}")
    ax.legend(loc="lower left", fontsize=8)
    return ax.figure


STRATEGIES = (
    ("no parallelism", dict(tp=1)),
    ("TP=8", dict(tp=8)),
    ("TP=8 + sequence parallel", dict(tp=8, sequence_parallel=True)),
    ("TP=8 + selective recompute", dict(tp=8, recompute="selective")),
    ("TP=8 + SP + selective", dict(tp=8, sequence_parallel=True, recompute="selective")),
    ("full recompute", dict(tp=1, recompute="full")),
)


@house_style
def activation_strategies_chart(model=models.GPT3_175B, micro_batch: int = 1, seq_length=None, *, ax=None):
    """Activation memory of one layer under the strategies of Korthikanti et al. (2022), Table 2."""
    micro_batch = _v.count("micro_batch", micro_batch)
    seq_length = None if seq_length is None else _v.count("seq_length", seq_length)
    values = [memory.activation_bytes_per_layer(model, micro_batch, seq_length, **kw) / 1e9 for _, kw in STRATEGIES]
    ax = new_axes(ax)
    y = np.arange(len(STRATEGIES))
    ax.barh(y, values, color=PALETTE[4], height=0.6)
    for yi, v in zip(y, values):
        ax.text(v, yi, f" {v:,.2f} GB", va="center", fontsize=8.5)
    ax.set_yticks(y, [name for name, _ in STRATEGIES])
    ax.invert_yaxis()
    ax.set_xlim(0, max(values) * 1.25)
    ax.figure.subplots_adjust(left=0.36)  # room for the strategy names
    s = model.seq_length if seq_length is None else seq_length
    ax.set_xlabel("Activation memory per layer per GPU (GB)")
    ax.set_title(f"{model.name}, micro-batch {micro_batch}, sequence {s:,}")
    ax.grid(axis="y", visible=False)
    return ax.figure


@house_style
def memory_breakdown_chart(b: memory.Breakdown, *, ax=None):
    """One configuration's per-GPU memory (a :func:`atscale.memory.breakdown` result) as a
    stacked bar against the HBM capacity line."""
    if not isinstance(b, memory.Breakdown):
        raise ValueError(f"memory_breakdown_chart draws a memory.Breakdown, got {type(b).__name__}")
    ax = new_axes(ax)
    names = list(b.parts())
    heights = np.array(list(b.parts().values())) / 1e9
    bottoms = np.concatenate(([0.0], np.cumsum(heights)[:-1]))
    colours = [_PART_COLOURS[p] for p in names]
    ax.bar(np.zeros(len(names)), heights, bottom=bottoms, width=0.5, color=colours)  # one call, four segments
    total = heights.sum()
    cap = b.capacity / 1e9
    top = max(cap, total) * 1.15
    ax.axhline(cap, xmax=0.54, color=INK, ls="--", lw=1.2)  # stops short of the labels
    ax.text(-1.05, cap, f"usable HBM {cap:,.1f} GB", va="bottom", fontsize=9)
    # Direct labels in a fixed column, top to bottom in stack order: cheaper to draw than a legend
    # (which measures and packs its entries on every redraw) and never overlapping thin segments.
    for i, (name, value, colour) in enumerate(zip(names[::-1], heights[::-1], colours[::-1])):
        ax.text(0.56, 0.9 - 0.09 * i, f"■ {name}: {value:,.1f} GB", color=colour, transform=ax.transAxes,
                fontsize=9, va="center")
    ax.text(0.56, 0.9 - 0.09 * len(names), f"total: {total:,.1f} GB", color=INK, transform=ax.transAxes,
            fontsize=9, va="center", fontweight="bold")
    ax.set_xlim(-1.1, 1.6)
    ax.set_ylim(0, top)
    ax.set_xticks([])
    ax.set_ylabel("Memory per GPU (GB)")
    verdict = "fits" if b.fits else f"over by {b.overflow / 1e9:,.1f} GB"
    # An explicit y skips matplotlib's automatic title placement (~20 ms of bounding-box work per redraw).
    layout = f", {b.plan.describe()}" if b.plan is not None else ""
    ax.set_title(f"{b.model}{layout}: {verdict}",
                 color=INK if b.fits else "#b00020", y=1.01)
    ax.grid(axis="x", visible=False)
    return ax.figure


@house_style
def memory_wall_chart(dtype: str = "bf16", *, base="A100 SXM 80GB", others=("H100 SXM", "H200 SXM", "B200"), ax=None):
    """Growth of peak FLOP/s, HBM bandwidth and HBM capacity relative to ``base``."""
    b = hardware.accelerator_arg("base", base)
    accs = [hardware.accelerator_arg("others", a) for a in others]
    metrics = (("peak FLOP/s", lambda a: a.peak(dtype)), ("HBM bandwidth", lambda a: a.hbm_bandwidth),
               ("HBM capacity", lambda a: a.memory_capacity))
    ax = new_axes(ax)
    x = np.arange(len(accs))
    width = 0.26
    for i, (label, get) in enumerate(metrics):
        ratios = np.array([get(a) / get(b) for a in accs])
        ax.bar(x + (i - 1) * width, ratios, width=width, color=PALETTE[i], label=label)
        for xi, r in zip(x, ratios):
            ax.text(xi + (i - 1) * width, r, f"{r:.1f}×", ha="center", va="bottom", fontsize=8)
    ax.axhline(1, color=MUTED, lw=0.8)
    ax.set_xticks(x, [a.name for a in accs])
    ax.set_ylabel(f"Growth over the {b.name} (×)")
    ax.set_title(f"Compute outgrows memory ({dtype.upper()} dense)")
    ax.legend(loc="upper left")
    ax.grid(axis="x", visible=False)
    return ax.figure


@house_style
def max_model_size_chart(measurements=memory.ZERO_TABLE2, *, ax=None):
    """Published largest trainable model against the library's state-only bound (:func:`memory.max_params`),
    one point per configuration of Rajbhandari et al. (2020), Table 2; log-log, in billions of parameters."""
    ax = new_axes(ax)
    bound = np.array([m.bound for m in measurements]) / 1e9
    measured = np.array([m.measured_params for m in measurements]) / 1e9
    stage = np.array([m.zero_stage for m in measurements])
    lo, hi = 1.0, 200.0
    line = np.array([lo, hi])
    ax.plot(line, line, color=INK, lw=1.0, label="measured = bound")
    for s, marker, colour, label in ((0, "o", PALETTE[0], "data parallel (ZeRO-0)"),
                                     (1, "s", PALETTE[2], "ZeRO-1 (optimizer state sharded)")):
        sel = stage == s
        ax.scatter(bound[sel], measured[sel], marker=marker, color=colour, s=36, zorder=3, label=label)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    log_axes(ax)
    ax.set_xlabel("Model: state fits in 32 GB (billion parameters)")
    ax.set_ylabel("Published: largest trained (billion parameters)")
    ax.set_title("Largest model on 32 GB V100s: model vs measured")
    ax.legend(loc="upper left", fontsize=8.5)
    return ax.figure


_Y_RUNGS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
"""Mantissas of the memory explorer's upper y limits (GB): a few backgrounds per decade."""


def _rung(value: float) -> float:
    """The smallest ``m * 10**k`` (``m`` in :data:`_Y_RUNGS`) at least ``value`` (> 0)."""
    k = np.floor(np.log10(value))
    for m in (*_Y_RUNGS, 10.0):
        top = float(m * 10.0**k)
        if top >= value * (1 - 1e-12):
            return top
    return float(10.0 ** (k + 1))  # pragma: no cover - 10.0 above covers it


class MemoryExplorerFigure(LiveFigure):
    """The memory explorer's figure: one configuration's per-GPU memory (a :func:`atscale.memory.breakdown`
    result, bytes, drawn in GB) as a bar stacked from weights, gradients, optimizer state and activations, against
    the dashed line of the accelerator's usable HBM (:attr:`~atscale.hardware.Accelerator.usable_memory`), with
    each part and the total written in a column on the right. The title names the model and the layout and says
    whether it fits or by how much it is over (in red: the configuration is infeasible). The axis is labelled
    in GB, or in TB from a limit of 10,000 GB; the written values carry their own decimal prefix.

    The y axis starts at 0 GB and ends at a value from a fixed ladder (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times
    a power of ten) just above the larger of the total and the capacity, so the frame changes only when the
    bar or the line would leave it, and only a few backgrounds are ever drawn.
    """

    _PARTS = ("weights", "gradients", "optimizer state", "activations")

    def __init__(self, figsize=(6.4, 4.0)):
        super().__init__(figsize)
        from matplotlib.ticker import FuncFormatter

        with mpl.rc_context(STYLE):
            ax = self.ax = self.fig.add_subplot()
            self.fig.subplots_adjust(**MARGINS)
            ax.set_xlim(-1.1, 1.6)
            ax.set_xticks([])
            self._scale = 1.0  # GB per unit of the y axis's labels (1 GB, or 1000 GB = 1 TB for a huge bar)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y / self._scale:,.6g}"))
            ax.grid(axis="x", visible=False)
            colours = [_PART_COLOURS[p] for p in self._PARTS]
            bars = ax.bar(np.zeros(4), np.ones(4), bottom=np.arange(4), width=0.5, color=colours)
            self.bars = [self.dynamic(r) for r in bars]
            self.dynamic(ax.spines["bottom"])  # over the bars' feet, as in a whole drawing
            self.cap_line = self.dynamic(ax.axhline(1, xmax=0.54, color=INK, ls="--", lw=1.2))  # short of the labels
            self.cap_text = self.dynamic(ax.text(-1.05, 1, "", va="bottom", fontsize=9))
            # A key in a fixed column, top to bottom in stack order: the names are static, the values change.
            self.values = {}
            for i, (name, colour) in enumerate(zip(self._PARTS[::-1], colours[::-1])):
                y = 0.9 - 0.09 * i
                ax.text(0.56, y, f"■ {name}", color=colour, transform=ax.transAxes, fontsize=9, va="center")
                self.values[name] = self.dynamic(ax.text(0.99, y, "", color=colour, transform=ax.transAxes,
                                                         fontsize=9, va="center", ha="right"))
            y = 0.9 - 0.09 * len(self._PARTS)
            ax.text(0.56, y, "total", color=INK, transform=ax.transAxes, fontsize=9, va="center", fontweight="bold")
            self.total = self.dynamic(ax.text(0.99, y, "", color=INK, transform=ax.transAxes, fontsize=9,
                                              va="center", ha="right", fontweight="bold"))
            self.title = self.dynamic(ax.set_title("", y=1.01))  # explicit y: no automatic placement

    @classmethod
    def _check(cls, b):
        if not isinstance(b, memory.Breakdown):
            raise ValueError(f"MemoryExplorerFigure draws a memory.Breakdown, got {type(b).__name__}")
        parts = b.parts()
        if tuple(parts) != cls._PARTS:
            raise ValueError(f"a breakdown's parts must be {cls._PARTS}, got {tuple(parts)}")
        values = np.array(list(parts.values()) + [b.capacity], dtype=float)
        if not np.all(np.isfinite(values)) or np.any(values < 0) or not b.capacity > 0:
            raise ValueError(f"a breakdown needs finite parts >= 0 and a capacity > 0 bytes, got {b!r}")
        return np.array(list(parts.values())) / 1e9

    def layout(self, b):
        """The upper y limit (GB) from the ladder, just above the larger of the total and the capacity."""
        heights = self._check(b)
        top = _rung(max(b.capacity / 1e9, heights.sum()) * 1.1)
        self.ax.set_ylim(0, top)
        self._scale = 1000.0 if top >= 10_000 else 1.0  # the axis is drawn in GB; its labels in GB or TB
        self.ax.set_ylabel(f"Memory per GPU ({'TB' if self._scale > 1 else 'GB'})")
        return top

    def update(self, b):
        heights = self._check(b)
        for r, bottom, height in zip(self.bars, np.concatenate(([0.0], np.cumsum(heights)[:-1])), heights):
            r.set_y(bottom)
            r.set_height(height)
        cap = b.capacity / 1e9
        self.cap_line.set_ydata([cap, cap])
        self.cap_text.set_y(cap)
        self.cap_text.set_text(f"usable HBM {u.fmt_bytes(b.capacity)}")
        for name, value in b.parts().items():
            self.values[name].set_text(u.fmt_bytes(value))
        self.total.set_text(u.fmt_bytes(b.total))
        verdict = "fits" if b.fits else f"over by {u.fmt_bytes(b.overflow)}"
        layout = f", {b.plan.describe()}" if b.plan is not None else ""
        self.title.set_text(f"{b.model}{layout}: {verdict}")
        self.title.set_color(INK if b.fits else "#b00020")
