"""Figures of the chapter "3D parallelism"."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from .. import _validate as _v
from .. import collectives as C
from .. import parallelism as P
from .. import pipeline as PL
from .. import operators as O
from .. import runs as R
from ..search import SearchResult
from ..plan import Plan, _rank_strides
from ._base import INK, MUTED, PALETTE, STYLE, LiveFigure, house_style, new_axes

__all__ = ["pipeline_schedule_chart", "pipeline_comparison_chart", "rank_map_chart", "step_breakdown_chart", "step_comparison_chart",
           "stage_loads_chart", "cp_exposure_chart", "validation_chart", "mfu_scaling_chart", "search_scatter_chart", "StepBreakdownFigure", "PipelineScheduleFigure",
           "RankMapFigure", "stack_parts", "operator_breakdown_chart", "fp8_width_chart", "attention_share_chart"]

def stack_parts(bars, step) -> None:
    """Lay one bar per part of ``step`` (:data:`atscale.parallelism.PARTS`, in order) end to end on a time axis."""
    left = 0.0
    for bar, seconds in zip(bars, step.parts().values()):
        bar.set_x(left)
        bar.set_width(float(seconds))
        left += float(seconds)


_PART_COLOURS = dict(zip(P.PARTS, (PALETTE[0], PALETTE[5], PALETTE[1], PALETTE[7], "#999933", PALETTE[4], "#bbbbbb",
                                   PALETTE[3], PALETTE[2])), straggler="#7f2704")


_PASS_COLOURS = {"F": PALETTE[0], "B": PALETTE[1], "W": PALETTE[2]}
"""Forward, backward and weight-gradient passes of a pipeline timeline."""
_PALE_PASS_COLOURS = {k: mpl.colors.to_hex(0.5 * np.array(mpl.colors.to_rgb(c)) + 0.5)
                      for k, c in _PASS_COLOURS.items()}
"""The same, half-way to white: DualPipe's micro-batches fed in at the last stage (hatching them would cost a
redraw ~100 ms)."""
_IDLE = "#eeeeee"


def _pass_boxes(t: PL.Timeline) -> tuple[np.ndarray, np.ndarray]:
    """Each pass as a box on its stage's row (``(n, 4, 2)`` vertices) and its colour (pale where the micro-batch
    entered at the last stage)."""
    lo, hi = t.stage - 0.4, t.stage + 0.4
    boxes = np.stack([np.stack([t.start, lo], 1), np.stack([t.start, hi], 1), np.stack([t.end, hi], 1),
                      np.stack([t.end, lo], 1)], axis=1)
    colours = np.empty(t.kind.shape, dtype=object)
    for pale, table in ((False, _PASS_COLOURS), (True, _PALE_PASS_COLOURS)):
        for kind, colour in table.items():
            colours[(t.kind == kind) & (_reverse(t) == pale)] = colour
    return boxes, colours


def _reverse(t: PL.Timeline) -> np.ndarray:
    """Which passes belong to micro-batches fed in at the last stage (DualPipe's second direction)."""
    return np.zeros(t.stage.shape, bool) if t.direction is None else t.direction == 1


def _pipeline_key(split: bool, bidirectional: bool) -> list:
    """The legend's entries: forward, backward, the weight-gradient pass where the backward is split, idle time,
    and the paler colours of the micro-batches fed in at the last stage where there are any."""
    from matplotlib.patches import Patch

    handles = [Patch(color=_PASS_COLOURS["F"], label="forward"),
               Patch(color=_PASS_COLOURS["B"], label="backward")]
    if split:
        handles.append(Patch(color=_PASS_COLOURS["W"], label="weight gradient"))
    handles.append(Patch(color=_IDLE, label="idle (bubble)"))
    if bidirectional:
        handles.append(Patch(color=_PALE_PASS_COLOURS["F"], label="paler: fed at the last stage"))
    return handles


def _pipeline_title(t: PL.Timeline) -> str:
    name = PL.SCHEDULE_NAMES[t.schedule] + (f", v={t.virtual_stages}" if t.schedule == "interleaved" else "")
    return f"{name}: {t.pp} stages, {t.micro_batches} micro-batches; bubble {t.bubble:.1%} of useful time"


def _draw_timeline(ax, t: PL.Timeline, *, numbers: bool = True, legend: bool = True) -> None:
    """One timeline on ``ax``: a row per stage, the passes as boxes over a grey (idle) row, paler where the
    micro-batch entered at the last stage, numbered by micro-batch (those entering at the first stage) when few."""
    from matplotlib.collections import PolyCollection
    from matplotlib.ticker import MaxNLocator

    span = t.makespan
    ax.barh(np.arange(t.pp), span, left=0, height=0.8, color=_IDLE, lw=0)  # idle unless covered
    boxes, colours = _pass_boxes(t)
    rev = _reverse(t)
    ax.add_collection(PolyCollection(boxes, facecolors=list(colours), edgecolors="white", linewidths=0.4))
    if numbers and t.start.size <= _PIPELINE_LABELLED:
        for st, s0, s1, j in zip(t.stage[~rev], t.start[~rev], t.end[~rev], t.micro_batch[~rev]):
            ax.text((s0 + s1) / 2, st, str(j + 1), ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(t.pp), [str(i + 1) for i in range(t.pp)])
    ax.set_ylabel("Pipeline stage")
    ax.set_ylim(t.pp - 0.5, -0.5)
    ax.set_xlim(0, span)
    ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
    ax.set_title(_pipeline_title(t))
    ax.grid(False)
    if legend:
        handles = _pipeline_key(t.weight_ratio > 0, bool(rev.any()))
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=len(handles), fontsize=8,
                  columnspacing=1.2, handlelength=1.6)


@house_style
def pipeline_schedule_chart(pp: int = 4, micro_batches: int = 8, schedule: str = "1f1b", virtual_stages: int = 1,
                            *, ax=None):
    """One step of a pipeline schedule (:func:`atscale.pipeline.pipeline_timeline`): a row per stage, forwards,
    backwards and (where the backward is split) weight-gradient passes as labelled boxes, the idle time (the
    bubble) grey and measured; DualPipe's micro-batches fed in at the last stage paler."""
    t = PL.pipeline_timeline(pp, micro_batches, schedule, virtual_stages)
    ax = new_axes(ax, figsize=(7.2, 3.4))
    _draw_timeline(ax, t)
    ax.set_xlabel("Time (units of one stage's forward pass of a micro-batch)")
    ax.figure.subplots_adjust(bottom=0.3, left=0.12)
    return ax.figure


@house_style
def pipeline_comparison_chart(pp: int = 4, micro_batches: int = 8, schedules=("1f1b", "zb-h1", "zb-h2", "dualpipe")):
    """Several pipeline schedules at the same ``pp`` and ``micro_batches``, one panel each on a common time axis
    (:func:`atscale.pipeline.pipeline_timeline` at its default pass times, ``t_f = t_b = t_w``), with one key."""
    import matplotlib.pyplot as plt

    if isinstance(schedules, str) or not 1 <= len(schedules) <= 6:
        raise ValueError(f"schedules={_v.show(schedules)} must be a list of one to six names of "
                         f"atscale.plan.SCHEDULES")
    timelines = [PL.pipeline_timeline(pp, micro_batches, s) for s in schedules]
    rows = sum(t.pp for t in timelines)
    fig, axes = plt.subplots(len(timelines), 1, sharex=True, figsize=(7.2, 1.0 + 0.32 * rows + 0.45 * len(timelines)),
                             gridspec_kw={"height_ratios": [t.pp for t in timelines]}, squeeze=False)
    plt.close(fig)
    for ax, t in zip(axes[:, 0], timelines):
        _draw_timeline(ax, t, legend=False)
        ax.title.set_fontsize(9)
    axes[-1, 0].set_xlim(0, max(t.makespan for t in timelines))
    axes[-1, 0].set_xlabel("Time (units of one stage's forward pass of a micro-batch)")
    split = any(t.weight_ratio > 0 for t in timelines)
    bidirectional = any(_reverse(t).any() for t in timelines)
    handles = _pipeline_key(split, bidirectional)
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, columnspacing=1.2,
               handlelength=1.6)
    fig.subplots_adjust(left=0.1, right=0.97, top=1 - 0.3 / fig.get_figheight(),
                        bottom=0.8 / fig.get_figheight(), hspace=0.6)
    return fig


@house_style
def rank_map_chart(tp: int = 8, pp: int = 4, dp: int = 32, colour_by: str = "pp", *, gpus_per_node: int = 8,
                   order: str | None = None, ax=None):
    """Every GPU of a ``tp x pp x dp`` layout on the node grid (one row of small squares per row of nodes),
    coloured by its TP, PP or DP group (:func:`atscale.parallelism.rank_groups`; ``order``: a rank order of
    :data:`atscale.plan.PLACEMENT_ORDERS`, ``None`` Megatron-Core's, the title then silent about it). At most
    16 rows of nodes are drawn: a larger layout shows 16 of its rows (numbered) and says which."""
    if not isinstance(colour_by, str) or colour_by not in _RANK_AXES:
        raise ValueError(f"colour_by={colour_by!r} must be 'tp', 'pp' or 'dp'")
    plan = Plan(tp=tp, pp=pp, dp=dp, order=order)
    gpus_per_node = _v.count("gpus_per_node", gpus_per_node)
    grid = _RankGrid(plan, colour_by, P.rank_groups(plan, gpus_per_node), gpus_per_node)
    ax = new_axes(ax, figsize=(7.0, 4.2))
    ax.imshow(grid.rgba(), aspect="auto", interpolation="nearest")
    ax.vlines(np.arange(1, grid.per_row) * gpus_per_node - 0.5, -0.5, grid.shown_rows - 0.5, color="white", lw=2)
    ax.hlines(np.arange(1, grid.shown_rows) - 0.5, -0.5, grid.width - 0.5, color="white", lw=2)
    ax.set_xticks([])
    ax.set_yticks(*grid.yticks(), fontsize=7)
    ax.grid(False)
    ax.plot(*grid.outline, ls="none", marker="s", ms=grid.marker_size, mfc="none", mec=PALETTE[3], mew=1.0)
    ax.set_title(grid.title())
    ax.set_ylabel(grid.ylabel())
    ax.figure.text(0.5, _RANK_KEY_Y, grid.key_line(), ha="center", va="top", fontsize=8.5)
    ax.figure.text(0.5, _RANK_GRID_Y, grid.grid_line(), ha="center", va="top", fontsize=8.5, linespacing=1.5)
    ax.figure.subplots_adjust(bottom=0.2, left=0.08, right=0.97)
    return ax.figure


@house_style
def step_breakdown_chart(step: P.StepTime, *, ax=None):
    """One layout's step time as a stacked bar of its parts, with MFU; an infeasible layout is drawn as
    such: no bar, the reason in red."""
    if not isinstance(step, P.StepTime) or np.ndim(step.total):
        raise ValueError(f"step={_v.show(step)} must be one atscale.parallelism.StepTime (as step_time returns); "
                         "for a memory.Breakdown use plots.memory_breakdown_chart")
    ax = new_axes(ax, figsize=(7.0, 3.8))
    ax.grid(False)
    label = step.plan.describe() if step.plan is not None else ""
    if not bool(step.feasible):
        ax.set_axis_off()
        ax.text(0.5, 0.6, "Infeasible layout", ha="center", va="center", fontsize=13, color="#b00020",
                weight="bold", transform=ax.transAxes)
        ax.text(0.5, 0.38, str(step.reason), ha="center", va="center", fontsize=9, color="#b00020", wrap=True,
                transform=ax.transAxes)
        ax.set_title(label)
        return ax.figure
    left = 0.0
    for name, seconds in step.parts().items():
        seconds = float(seconds)
        ax.barh(0, seconds, left=left, color=_PART_COLOURS[name], label=P.PART_LABELS[name], height=0.5)
        left += seconds
    ax.set_yticks([])
    ax.set_xlim(0, left * 1.02)
    ax.set_xlabel("Seconds per optimizer step, per GPU")
    ax.set_title(f"{label}: {float(step.total):.2f} s per step, MFU {float(step.mfu):.1%}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, columnspacing=1.5, handlelength=1.2)
    ax.figure.subplots_adjust(bottom=0.55, left=0.04, right=0.97)
    return ax.figure


@house_style
def step_comparison_chart(steps, *, title: str = "", ax=None):
    """Several layouts' steps side by side: one stacked bar of parts per entry of ``steps`` (a mapping
    ``label -> StepTime``, drawn top to bottom), each labelled with its total and MFU; an infeasible one
    says why instead of a bar."""
    steps = dict(steps)
    if not steps or not all(isinstance(st, P.StepTime) for st in steps.values()):
        raise ValueError("steps must be a non-empty mapping of labels to atscale.parallelism.StepTime")
    height = 1.9 + 0.5 * len(steps)  # inches: the bars, plus room for the title above and the key below
    ax = new_axes(ax, figsize=(7.2, height))
    ax.grid(False)
    longest = max((float(st.total) for st in steps.values() if bool(st.feasible)), default=1.0)
    for row, (label, st) in enumerate(steps.items()):
        if not bool(st.feasible):
            ax.text(0.01 * longest, row, f"infeasible: {str(st.reason)[:70]}", va="center", fontsize=8,
                    color="#b00020")
            continue
        left = 0.0
        for name, seconds in st.parts().items():
            ax.barh(row, float(seconds), left=left, color=_PART_COLOURS[name], height=0.6,
                    label=P.PART_LABELS[name] if row == 0 else None)
            left += float(seconds)
        ax.text(left + 0.01 * longest, row, f"{left:.2f} s, MFU {float(st.mfu):.1%}", va="center", fontsize=8)
    ax.set_yticks(range(len(steps)), list(steps), fontsize=8.5)
    ax.set_ylim(len(steps) - 0.5, -0.5)
    ax.set_xlim(0, longest * 1.38)
    ax.set_xlabel("Seconds per optimizer step, per GPU")
    if title:
        ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    ax.figure.legend(handles, labels, loc="lower center", ncol=4, fontsize=7.5, frameon=False)
    ax.figure.subplots_adjust(left=0.3, right=0.97, top=1 - 0.4 / height, bottom=1.15 / height)
    return ax.figure


@house_style
def stage_loads_chart(num_layers: int = 126, pp: int = 16, virtual_stages: int = 1, *, ax=None):
    """Layer slots per pipeline stage (:func:`atscale.parallelism.stage_loads`), split evenly as it comes and
    with the embedding and the output layer counted as a layer of the first and last stage."""
    plain = P.stage_loads(num_layers, pp, virtual_stages)
    acc = P.stage_loads(num_layers, pp, virtual_stages, account_for_embedding=True, account_for_loss=True)
    ax = new_axes(ax, figsize=(7.2, 3.4))
    x = np.arange(1, pp + 1)
    ax.bar(x - 0.2, plain, width=0.38, color=PALETTE[5], label="split as they come")
    layers = acc.copy()
    layers[0] -= 1
    layers[-1] -= 1
    ax.bar(x + 0.2, layers, width=0.38, color=PALETTE[0], label="embedding and output counted")
    ax.bar([x[0] + 0.2, x[-1] + 0.2], [1, 1], bottom=[layers[0], layers[-1]], width=0.38, color=PALETTE[1],
           label="their slot (first, last stage)")
    ax.axhline(plain.max(), color=PALETTE[3], lw=1, ls="--")
    ax.text(pp + 0.45, plain.max(), "pace: fullest stage", fontsize=8, color=PALETTE[3], va="bottom", ha="right")
    ax.set_xticks(x)
    ax.set_ylim(0, plain.max() * 1.35)
    ax.set_xlabel("Pipeline stage")
    ax.set_ylabel("Layer slots (layers per GPU)")
    v = f", {virtual_stages} chunks per GPU" if virtual_stages > 1 else ""
    ax.set_title(f"{num_layers} layers on {pp} stages{v}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=8, frameon=False)
    ax.figure.subplots_adjust(bottom=0.3)
    return ax.figure


@house_style
def cp_exposure_chart(seq_lengths, exposed, *, ax=None):
    """Exposed context-parallel communication against the sequence length: ``exposed`` maps a label (a CP
    degree and where its group lands) to an array of the exposed share of the step (fractions), one per
    sequence length (tokens)."""
    seq = np.asarray(_v.count("seq_lengths", seq_lengths, scalar=False), dtype=float)
    ax = new_axes(ax, figsize=(6.6, 3.8))
    for i, (label, share) in enumerate(dict(exposed).items()):
        share = np.asarray(_v.number(f"exposed[{label!r}]", share, low=0, high=1), dtype=float)
        if share.shape != seq.shape:
            raise ValueError(f"exposed[{label!r}] has {share.size} values for {seq.size} sequence lengths")
        # Several series end on zero (fully hidden): each earlier one is drawn on top, dashed, with a smaller
        # marker, so where they coincide every colour still shows; the axis starts a little below zero so
        # that none hides in the spine.
        ax.plot(seq, share * 100, marker="osD^v"[i % 5], markersize=5 + 1.5 * (i % 5), color=PALETTE[i % len(PALETTE)],
                ls=("-", "--", "-.", (0, (1, 1)), "-")[i % 5], label=label, clip_on=False, zorder=12 - i)
    ax.set_xscale("log", base=2)
    ax.set_xticks(seq, [f"{int(x) // 1024}k" for x in seq])
    ax.set_xlabel("Sequence length (tokens)")
    ax.set_ylabel("Exposed CP communication (% of step)")
    ax.set_title("The ring exchange hides behind attention as sequences grow")
    top = ax.get_ylim()[1]
    ax.set_ylim(-0.04 * top, top)
    ax.axhline(0, color=MUTED, lw=0.8, zorder=1)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    return ax.figure


@house_style
def validation_chart(*, ax=None):
    """The model against published runs: predicted vs published MFU (each run in its source's convention,
    :meth:`atscale.runs.Run.mfu_pair`; FP8 runs against the FP8 peak), calibration runs filled,
    validation runs hollow."""
    ax = new_axes(ax, figsize=(6.4, 5.4))
    seen = set()
    styles = {"Narayanan": ("o", PALETTE[0], "Megatron-LM Table 1"),
              "Korthikanti": ("s", PALETTE[1], "Korthikanti et al. Table 5"),
              "Llama Team": ("^", PALETTE[3], "Llama 3 Table 4"),
              "MegaScale": ("v", PALETTE[4], "MegaScale Table 2"),
              "NVIDIA": ("D", PALETTE[2], "NVIDIA H100 tables")}
    for run in R.CALIBRATION_RUNS + R.VALIDATION_RUNS:
        if run.metric == "hfu":
            continue  # the same runs as the calibration MFUs
        key = next(k for k in styles if k in run.source)
        marker, colour, name = styles[key]
        published, predicted = run.mfu_pair()
        lab = f"{name} ({run.role})"
        ax.scatter(published * 100, predicted * 100, marker=marker, s=40,
                   color=colour if run.role == "calibration" else "white", edgecolors=colour, lw=1.4,
                   label=None if lab in seen else lab, zorder=3)
        seen.add(lab)
    ax.plot([25, 65], [25, 65], color=INK, lw=1, ls="--")
    for d in (-3, 3):
        ax.plot([25, 65], [25 + d, 65 + d], color=MUTED, lw=0.8, ls=":")
    ax.text(57, 59.5, "model = published", fontsize=8.5, color=MUTED, rotation=38)
    ax.text(60.5, 57.2, "± 3 points", fontsize=8, color=MUTED, rotation=38)
    ax.set_xlim(25, 65)
    ax.set_ylim(25, 65)
    ax.set_xlabel("Published MFU (% of dense peak of the run's precision)")
    ax.set_ylabel("Model's MFU (% of the same peak)")
    ax.set_title("Step-time model against published runs")
    ax.legend(loc="upper left", fontsize=7.5)
    return ax.figure


@house_style
def mfu_scaling_chart(gpus, best_mfu, running_mfu=None, *, ax=None):
    """Best MFU the search finds against the GPU count at a fixed global batch (and, optionally, the MFU of
    one fixed layout family)."""
    gpus = _v.count("gpus", gpus, scalar=False)
    best_mfu = _v.number("best_mfu", best_mfu, low=0, high=1, kind="a fraction (0.45 for 45 %)")
    if running_mfu is not None:
        running_mfu = _v.number("running_mfu", running_mfu, low=0, high=1, kind="a fraction (0.45 for 45 %)")
    if np.shape(gpus) != np.shape(best_mfu) or np.size(gpus) < 2:
        raise ValueError("gpus and best_mfu must be equal-length arrays of at least two points")
    ax = new_axes(ax)
    ax.plot(gpus, best_mfu * 100, marker="o", color=PALETTE[0], label="best layout the search finds")
    if running_mfu is not None:
        ax.plot(gpus, np.asarray(running_mfu) * 100, marker="s", color=PALETTE[1], ls="--",
                label="TP=8, PP=4, the rest data parallel")
    ax.set_xscale("log", base=2)
    ax.set_xticks(gpus, [f"{g:,}" for g in gpus])
    ax.set_ylim(0, max(60, float(np.nanmax(best_mfu)) * 110))
    ax.set_xlabel("GPUs (H100), global batch fixed")
    ax.set_ylabel("MFU (%)")
    ax.set_title("Adding GPUs at a fixed global batch")
    ax.legend(loc="lower left")
    return ax.figure


@house_style
def search_scatter_chart(result: SearchResult, *, capacity: float | None = None, ax=None):
    """Every feasible layout of a search: tokens per second against per-GPU memory, coloured by TP; the
    winner circled. With ``capacity`` (bytes, the accelerator's usable memory) the capacity is drawn as a
    line and the memory model's margin (:data:`atscale.parallelism.MEMORY_MARGIN`) as a band around it:
    a layout in the band is *tight* (feasible, to be confirmed on the machine), beyond it infeasible."""
    t = result.table
    ok = t["feasible"]
    ax = new_axes(ax, figsize=(6.4, 4.0))
    if capacity is not None:
        capacity = _v.number("capacity", capacity, low=0, low_open=True, scalar=True, unit="bytes") / 1e9
        ax.axvspan(capacity * (1 - P.MEMORY_MARGIN), capacity * (1 + P.MEMORY_MARGIN), color=MUTED, alpha=0.15,
                   lw=0, label=f"tight: within ±{P.MEMORY_MARGIN:.0%} of capacity")
        ax.axvline(capacity, color=INK, lw=1.2, ls="--", label=f"usable memory ({capacity:.1f} GB)")
    for k, tp in enumerate(sorted(set(t["tp"][ok]))):
        sel = ok & (t["tp"] == tp)
        ax.scatter(t["memory"][sel] / 1e9, t["tokens_per_second"][sel] / 1e6, s=8, alpha=0.6, color=PALETTE[k],
                   label=f"TP={tp}")
    ax.scatter(t["memory"][0] / 1e9, t["tokens_per_second"][0] / 1e6, s=160, facecolors="none",
               edgecolors=INK, lw=1.5, label="best")
    ax.set_xlabel("Memory per GPU (GB)")
    ax.set_ylabel("Throughput (million tokens/s)")
    ax.set_title(f"{ok.sum():,} feasible layouts of {len(ok):,}")
    legend = ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, markerscale=2)
    legend.legend_handles[-1].set_sizes([60])  # the winner's ring, not scaled with the dots
    return ax.figure


# --------------------------------------------------------------------------------------
# Explorers' figures, drawn in two layers (atscale.plots.LiveFigure)
# --------------------------------------------------------------------------------------
_STEP_LADDER = tuple(m * 10.0**k for k in range(-2, 5) for m in (1, 1.5, 2, 3, 4, 5, 6, 8))
"""Upper limits of the plan explorer's time axis (s): the smallest that holds the step (with 2% room) is used,
so a handful of backgrounds are ever drawn and the bar fills at least ~2/3 of the axis."""


def _one_step(step) -> P.StepTime:
    if not isinstance(step, P.StepTime):
        raise ValueError(f"step={type(step).__name__} must be an atscale.parallelism.StepTime")
    if np.ndim(step.compute):
        raise ValueError("step must be one layout's StepTime (scalars), not one evaluated over many plans")
    return step


class StepBreakdownFigure(LiveFigure):
    """The plan explorer's figure: one layout's step time (seconds per optimizer step, per GPU) as a stacked
    bar of the parts of :data:`atscale.parallelism.PARTS`, with the total and MFU in the title; the time axis
    upper limit comes from a fixed ladder (:data:`_STEP_LADDER`). An infeasible layout is drawn as such: no
    axis, no bar, "Infeasible layout" and its reason in red. Results are :class:`atscale.parallelism.StepTime`
    of one plan."""

    def __init__(self, figsize=(7.0, 3.8)):
        super().__init__(figsize)
        from matplotlib.patches import Patch
        from matplotlib.ticker import MaxNLocator

        with mpl.rc_context(STYLE):
            ax = self.ax = self.fig.add_subplot()
            self.fig.subplots_adjust(left=0.04, right=0.97, bottom=0.55, top=0.89)
            ax.grid(False)
            ax.set_yticks([])
            ax.set_ylim(-0.3, 0.3)
            ax.set_xlabel("Seconds per optimizer step, per GPU")
            ax.xaxis.set_major_locator(MaxNLocator(6))
            self.bars = [self.dynamic(b) for b in ax.barh(np.zeros(len(P.PARTS)), np.ones(len(P.PARTS)),
                                                           height=0.5, color=[_PART_COLOURS[n] for n in P.PARTS])]
            self.legend = ax.legend(handles=[Patch(color=_PART_COLOURS[n], label=P.PART_LABELS[n]) for n in P.PARTS],
                                    loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, columnspacing=1.5,
                                    handlelength=1.2)
            self.title = self.dynamic(ax.title)
            self.heading = self.dynamic(ax.text(0.5, 0.6, "Infeasible layout", ha="center", va="center", fontsize=13,
                                                color="#b00020", weight="bold", transform=ax.transAxes))
            self.reason = self.dynamic(ax.text(0.5, 0.38, "", ha="center", va="center", fontsize=9, color="#b00020",
                                               wrap=True, transform=ax.transAxes))
            self.spine = self.dynamic(ax.spines["left"])  # over the bar, as in a whole drawing

    def layout(self, step):
        """``("infeasible",)`` (no axis, no key) or ``("feasible", upper limit of the time axis in s)``."""
        step = _one_step(step)
        if not bool(step.feasible):
            self.ax.set_axis_off()
            self.legend.set_visible(False)
            return ("infeasible",)
        total = float(step.total)
        top = next((x for x in _STEP_LADDER if total * 1.02 <= x), None)
        if top is None:
            raise ValueError(f"a step of {total:.3g} s is beyond the figure's time axis (at most {_STEP_LADDER[-1]:g} s)")
        self.ax.set_axis_on()
        self.legend.set_visible(True)
        self.ax.set_xlim(0, top)
        return ("feasible", top)

    def update(self, step):
        feasible = bool(step.feasible)
        label = step.plan.describe() if step.plan is not None else ""
        for bar in self.bars:
            bar.set_visible(feasible)
        self.heading.set_visible(not feasible)
        self.spine.set_visible(feasible)
        self.reason.set_visible(not feasible)
        if not feasible:
            self.reason.set_text(str(step.reason))
            self.title.set_text(label)
            return
        stack_parts(self.bars, step)
        self.title.set_text(f"{label}: {float(step.total):.2f} s per step, MFU {float(step.mfu):.1%}")


_PIPELINE_LADDER = (4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300, 400, 500)
"""Upper limits of the pipeline explorer's time axis (units of one stage's forward pass of a micro-batch)."""
_PIPELINE_LABELLED = 48
"""Passes are numbered (by micro-batch) when a schedule has at most this many; beyond, the digits would not fit.
Every stage runs a forward and a backward of each micro-batch, and there are at least two stages, so at most
``_PIPELINE_LABELLED // 4`` micro-batches are ever numbered."""


def _digits_size(number: int, size: float) -> float:
    """Marker size (points) for a number drawn as a mathtext marker: markers are scaled to their widest side,
    so a two-digit number gets a larger size to keep its digits as tall as a single digit's."""
    return size * (1.0 if number < 10 else 1.7)


class PipelineScheduleFigure(LiveFigure):
    """The pipeline explorer's figure: one step of a simulated pipeline schedule
    (:class:`atscale.pipeline.Timeline`): a row per stage, forwards, backwards and weight-gradient passes as boxes
    (numbered by micro-batch when there are few; DualPipe's micro-batches fed in at the last stage paler), each
    stage's idle time (the bubble) grey, the measured bubble in the title. Time in units of one stage's forward
    pass of a micro-batch, on an axis whose upper limit comes from a fixed ladder (:data:`_PIPELINE_LADDER`): the
    grey rows end where the step ends. The key shows the weight-gradient and pale entries only when the
    schedule has them. Up to ``max_stages`` stages."""

    def __init__(self, figsize=(7.2, 3.4), max_stages: int = 16):
        max_stages = _v.count("max_stages", max_stages, high=64, unit="stages drawn")
        super().__init__(figsize)
        from matplotlib.collections import PolyCollection
        from matplotlib.ticker import MaxNLocator
        from matplotlib.transforms import blended_transform_factory

        self.max_stages = max_stages
        with mpl.rc_context(STYLE):
            ax = self.ax = self.fig.add_subplot()
            self.fig.subplots_adjust(left=0.12, right=0.95, bottom=0.3, top=0.91)
            ax.grid(False)
            ax.set_yticks([])  # the stage numbers are drawn with the data (their count changes)
            ax.set_ylabel("Pipeline stage")
            ax.yaxis.set_label_coords(-0.07, 0.5)
            ax.set_xlabel("Time (units of one stage's forward pass of a micro-batch)")
            ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
            self.keys = {}
            for split in (False, True):  # one key per kind of schedule, shown by layout()
                for bidirectional in (False, True):
                    handles = _pipeline_key(split, bidirectional)
                    key = ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2),
                                    ncol=len(handles), fontsize=8, columnspacing=1.2, handlelength=1.6)
                    self.keys[split, bidirectional] = ax.add_artist(key)
            self.idle = [self.dynamic(b) for b in ax.barh(np.arange(max_stages), np.ones(max_stages), left=0,
                                                          height=0.8, color=_IDLE, lw=0)]
            self.boxes = self.dynamic(ax.add_collection(PolyCollection(np.zeros((0, 4, 2)), edgecolors="white",
                                                                       linewidths=0.4), autolim=False))
            # Digits are drawn as markers (one path per number, drawn at many places in one call): a text artist
            # per label would cost ~1 ms each to lay out and render, most of a redraw.
            stage_axis = blended_transform_factory(ax.transAxes, ax.transData)
            self.stage_labels = [self.dynamic(ax.plot([-0.025], [i], transform=stage_axis, ls="none",
                                                      marker=f"${i + 1}$", ms=_digits_size(i + 1, 6.5), mew=0,
                                                      color=INK, clip_on=False)[0]) for i in range(max_stages)]
            self.numbers = [self.dynamic(ax.plot([], [], ls="none", marker=f"${j + 1}$", ms=_digits_size(j + 1, 5.5),
                                                 mew=0, color="white")[0]) for j in range(_PIPELINE_LABELLED // 4)]
            self.dynamic(ax.spines["left"])  # over the boxes that start at 0, as in a whole drawing
            self.title = self.dynamic(ax.title)

    def _check(self, t):
        if not isinstance(t, PL.Timeline):
            raise ValueError(f"timeline={type(t).__name__} must be an atscale.pipeline.Timeline")
        if t.pp > self.max_stages:
            raise ValueError(f"a pipeline of {t.pp} stages has more rows than the figure's {self.max_stages}")
        return t

    def layout(self, t):
        """The time axis's upper limit, from :data:`_PIPELINE_LADDER`, and which key the schedule needs (whether it
        splits the backward, whether it feeds micro-batches in at both ends); applied to the axes."""
        span = self._check(t).makespan
        top = next((x for x in _PIPELINE_LADDER if span <= x), None)
        if top is None:
            raise ValueError(f"a step of {span:g} forward passes is beyond the figure's time axis "
                             f"(at most {_PIPELINE_LADDER[-1]})")
        self.ax.set_xlim(0, top)
        kind = (t.weight_ratio > 0, bool(_reverse(t).any()))
        for key, legend in self.keys.items():
            legend.set_visible(key == kind)
        return (top, *kind)

    def update(self, t):
        span = t.makespan
        self.ax.set_ylim(t.pp - 0.5, -0.5)  # no ticks: the background does not depend on it
        for i, (bar, label) in enumerate(zip(self.idle, self.stage_labels)):
            bar.set_visible(i < t.pp)
            label.set_visible(i < t.pp)
            bar.set_width(span)
        boxes, colours = _pass_boxes(t)
        rev = _reverse(t)  # their micro-batches are not numbered (as in DeepSeek-AI's Fig. 5)
        self.boxes.set_verts(boxes)
        self.boxes.set_facecolor(list(colours))
        labelled = t.start.size <= _PIPELINE_LABELLED  # then there are at most _PIPELINE_LABELLED // 4 micro-batches
        centre = (t.start + t.end) / 2
        for j, marks in enumerate(self.numbers):
            sel = (t.micro_batch == j) & ~rev
            marks.set_visible(labelled and sel.any())
            marks.set_data(centre[sel], t.stage[sel])
        self.title.set_text(_pipeline_title(t))


_RANK_MAP_ROWS = 16
"""Rows of nodes a rank map draws at most: beyond (more than 16 rows of 16 nodes, 2,048 GPUs of 8-GPU nodes) a row
would be thinner than the white lines between nodes, so the map draws 16 rows, numbered on the axis, and says so:
the first ones when they hold GPU 0's whole group (colour by TP or DP), else evenly spaced ones from the first row to
the last (colour by pipeline stage, whose groups span the whole layout)."""
_RANK_KEY_Y, _RANK_GRID_Y = 0.145, 0.095
"""Where (figure fraction, top of the text) the colour key and the grid's lines go under the rank map."""
_RANK_LIVE_BOTTOM, _RANK_LIVE_KEY_Y, _RANK_LIVE_TIERS_Y, _RANK_LIVE_GRID_Y = 0.25, 0.195, 0.15, 0.105
"""The explorer's figure keeps one more line under the map (where each group's traffic goes on the network)."""
_ORDER_LABELS = {"tp-cp-dp-pp": "PP outermost", "tp-cp-pp-dp": "DP outermost"}
_RANK_AXES = {"tp": "tensor-parallel rank", "pp": "pipeline stage", "dp": "data-parallel replica"}
_RANK_GROUPS = {"tp": "GPU 0's TP group", "pp": "GPU 0's pipeline (one GPU per stage)", "dp": "GPU 0's DP group"}


class _RankGrid:
    """Where each rank of a layout sits on the node grid (drawing geometry, shared by :func:`rank_map_chart` and
    :class:`RankMapFigure`): ``per_row`` nodes per row, ``rows`` rows in all, the first ``shown_rows`` drawn;
    ``grid`` holds each drawn GPU's position along the coloured axis (NaN: no GPU)."""

    def __init__(self, plan: Plan, colour_by: str, groups, gpus_per_node: int, placement=None):
        if not isinstance(colour_by, str) or colour_by not in _RANK_AXES:
            raise ValueError(f"colour_by={colour_by!r} must be 'tp', 'pp' or 'dp'")
        if placement is not None and not isinstance(placement, C.DimensionTiers):
            raise ValueError(f"placement={_v.show(placement)} must be an atscale.collectives.DimensionTiers "
                             "(collectives.dimension_tiers) or None")
        self.placement = placement
        tp_r, dp_r, pp_r, node = groups
        tp, pp, dp = plan.tp, plan.pp, plan.dp
        g = self.gpus_per_node = gpus_per_node
        self.plan, self.colour_by, self.gpus = plan, colour_by, plan.gpus
        # The group a GPU belongs to (its peers along the axis): TP group = (dp, pp); PP group = (tp, dp);
        # DP group = (tp, pp). Its colour: its position along the axis.
        group = {"tp": dp_r + dp * pp_r, "pp": tp_r + tp * dp_r, "dp": tp_r + tp * pp_r}[colour_by]
        position = {"tp": tp_r, "pp": pp_r, "dp": dp_r}[colour_by]
        self.levels = {"tp": tp, "pp": pp, "dp": dp}[colour_by]
        self.nodes = -(-self.gpus // g)
        self.per_row = int(max(1, min(16, round(np.sqrt(self.nodes * 2)))))
        self.rows = -(-self.nodes // self.per_row)
        # Too many rows to draw: the first rows when they hold GPU 0's whole group (TP and DP groups, whose colours
        # then repeat), else evenly spaced rows from the first to the last (pipeline stages span the whole layout).
        # ranks from GPU 0 to its group's last, in the plan's order (rank_groups' default: Megatron-Core's)
        span = _rank_strides(plan, plan.order or "tp-cp-dp-pp")[colour_by] * self.levels
        self.stride = 1 if span <= _RANK_MAP_ROWS * self.per_row * g else -(-self.rows // _RANK_MAP_ROWS)
        self.row_numbers = np.arange(0, self.rows, self.stride)[:_RANK_MAP_ROWS]  # the rows drawn (0-based)
        self.shown_rows = self.row_numbers.size
        r = np.arange(self.gpus)
        nd = r // g
        row = nd // self.per_row
        y = np.full(self.rows, -1)
        y[self.row_numbers] = np.arange(self.shown_rows)
        y = y[row]
        drawn = y >= 0
        self.shown_gpus = int(drawn.sum())
        x = (nd % self.per_row) * g + r % g
        self.grid = np.full((self.shown_rows, self.per_row * g), np.nan)
        self.grid[y[drawn], x[drawn]] = position[drawn]
        self.idle = self.gpus % g != 0  # the last node is not full: its other GPUs are drawn grey
        self.slots = np.zeros(self.grid.shape, dtype=bool)  # the GPUs of the drawn nodes, used or not
        nodes = np.arange(self.nodes)
        node_y = y[np.minimum(nodes * g, self.gpus - 1)]
        for k in range(g):
            on = node_y >= 0
            self.slots[node_y[on], (nodes[on] % self.per_row) * g + k] = True
        sel = drawn & (group == group[0])  # GPU 0's group, as far as it is drawn
        self.outline = (x[sel], y[sel])
        # With the first rows drawn: do the others repeat their colours (checked, not assumed)?
        n = self.shown_gpus
        self.repeats = self.stride == 1 and self.gpus % n == 0 and bool(
            np.array_equal(position.reshape(-1, n), np.broadcast_to(position[:n], (self.gpus // n, n))))

    @property
    def width(self) -> int:
        """GPUs per row of the grid."""
        return self.per_row * self.gpus_per_node

    @property
    def marker_size(self) -> float:
        """Outline marker size (points): about 60% of a GPU's width, at least 2.5."""
        return max(2.5, 0.6 * 450 / self.width)

    def title(self) -> str:
        p = self.plan
        order = f", {_ORDER_LABELS[p.order]}" if p.order is not None else ""
        return f"TP={p.tp} × PP={p.pp} × DP={p.dp}: {self.gpus:,} GPU{'s' if self.gpus > 1 else ''}{order}"

    def tiers_line(self) -> str:
        """Where each dimension's groups send their traffic on the network the view names ("" without one)."""
        place = self.placement
        if place is None:
            return ""
        where = " · ".join(f"{dim} {crossed}" for dim, size, crossed in zip(place.dims, place.sizes, place.crossed)
                          if size > 1 and dim in ("TP", "PP", "DP"))
        return f"Levels {', '.join(place.levels)}; each group's traffic climbs to: {where or 'none (one GPU)'}"

    def rgba(self) -> np.ndarray:
        """The grid's colours, ``(shown_rows, width, 4)`` floats in [0, 1]: viridis from the first position along
        the axis (dark purple) to the last (yellow); grey for a node's GPUs the layout leaves idle, white where
        there is no node."""
        out = _rank_cmap()(np.ma.masked_invalid(self.grid) / max(self.levels - 1, 1))
        out[self.slots & np.isnan(self.grid)] = _IDLE_RGBA
        return out

    def key_line(self) -> str:
        """What the colours and the outline mean (depends only on the coloured axis)."""
        return (f"Colour: {_RANK_AXES[self.colour_by]} (dark purple: first, yellow: last); "
                f"red outline: {_RANK_GROUPS[self.colour_by]}")

    def grid_line(self) -> str:
        """The grid's shape and, when rows are left out, which (depends only on the shape and coloured axis)."""
        line = f"{self.per_row} node{'s' if self.per_row > 1 else ''} per row, {self.gpus_per_node} GPUs each " \
               "(white lines: node boundaries" + ("; grey: GPUs the layout leaves idle)" if self.idle else ")")
        if self.shown_rows < self.rows:
            which = (f"every {_ordinal(self.stride)} row of nodes is shown" if self.stride > 1
                     else f"the first {self.shown_rows} rows of nodes are shown")
            line += (f"\nToo many rows to draw: {which} ({self.shown_gpus:,} of {self.gpus:,} GPUs)"
                     + ("; the rest repeat them" if self.repeats else ""))
        return line

    def ylabel(self) -> str:
        if self.stride > 1:
            return f"row of nodes (every {_ordinal(self.stride)} of {self.rows})"
        if self.shown_rows < self.rows:
            return f"row of nodes (first {self.shown_rows} of {self.rows})"
        return f"{self.rows} row{'s' if self.rows > 1 else ''} of nodes"

    def yticks(self) -> tuple[list, list]:
        """Tick positions and labels: the drawn rows' numbers (1-based) when rows are left out, else none."""
        if self.shown_rows == self.rows:
            return [], []
        return list(range(self.shown_rows)), [str(n + 1) for n in self.row_numbers]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


_IDLE_RGBA = mpl.colors.to_rgba("#dddddd")


def _rank_cmap():
    return mpl.colormaps["viridis"].with_extremes(bad="white")


class RankMapFigure(LiveFigure):
    """The rank-map explorer's figure: every GPU of a ``tp x pp x dp`` layout on the node grid (one row of small
    squares per row of nodes, white lines between nodes), coloured by its position along the TP, PP or DP axis
    (Megatron's rank order, :func:`atscale.parallelism.rank_groups`), the group of GPU 0 outlined in red. At most
    :data:`_RANK_MAP_ROWS` rows of nodes are drawn; a larger layout shows 16 of its rows (numbered) and says which. Results are
    ``(plan, colour_by, rank_groups(plan, gpus_per_node), gpus_per_node)``, optionally followed by the placement on a
    network (:func:`atscale.collectives.dimension_tiers`, written under the map), as computed by
    :func:`atscale.widgets.parallelism.rank_map_view`; the rank order is the plan's (:attr:`~atscale.plan.Plan.order`).

    Nearly everything in this picture changes with the state, so the background is kept per grid shape and
    coloured axis (frame, row label, key lines) and the rest is drawn as cheaply as it can be: the GPUs as one
    mesh per grid shape, the node lines as one collection, the outline as one line of markers, a short title."""

    max_backgrounds = 24  # one per grid shape and coloured axis (~1 MB each); the least recently used goes first

    def __init__(self, figsize=(7.0, 4.2)):
        super().__init__(figsize)
        from matplotlib.collections import LineCollection

        self._meshes: dict = {}
        with mpl.rc_context(STYLE):
            ax = self.ax = self.fig.add_subplot()
            self.fig.subplots_adjust(left=0.08, right=0.97, bottom=_RANK_LIVE_BOTTOM, top=0.91)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            # Drawn in the order registered: the GPUs' meshes (one per grid shape, made when first needed, see
            # _mesh), then the node lines and the outline over them.
            self.node_lines = self.dynamic(ax.add_collection(LineCollection([], colors="white", linewidths=2,
                                                                            zorder=3), autolim=False))
            self.outline, = ax.plot([], [], ls="none", marker="s", mfc="none", mec=PALETTE[3], mew=1.0, zorder=4)
            self.dynamic(self.outline)
            self.title = self.dynamic(ax.title)
            for side in ("left", "bottom"):  # over the GPUs, as in a whole drawing
                self.dynamic(ax.spines[side])
            self.key = self.fig.text(0.5, _RANK_LIVE_KEY_Y, "", ha="center", va="top", fontsize=8.5)
            self.tiers_text = self.fig.text(0.5, _RANK_LIVE_TIERS_Y, "", ha="center", va="top", fontsize=8.5)
            self.grid_text = self.fig.text(0.5, _RANK_LIVE_GRID_Y, "", ha="center", va="top", fontsize=8.5,
                                           linespacing=1.5)

    def _mesh(self, rows: int, width: int):
        """The mesh of ``rows x width`` cells (one per GPU slot), made once per grid shape."""
        if (rows, width) not in self._meshes:
            with mpl.rc_context(STYLE):
                mesh = self.ax.pcolormesh(np.arange(width + 1) - 0.5, np.arange(rows + 1) - 0.5,
                                          np.zeros((rows, width)), zorder=1)
            mesh.set_array(None)  # coloured by set_facecolor, not through a colormap
            mesh.set_animated(True)
            self._dynamic.insert(0, mesh)  # under the node lines and the outline
            self._meshes[rows, width] = mesh
        return self._meshes[rows, width]

    @staticmethod
    def _grid(view) -> _RankGrid:
        try:
            plan, colour_by, groups, gpus_per_node, *placement = view
        except (TypeError, ValueError):
            placement = None
        if placement is None or len(placement) > 1:
            raise ValueError("view must be (plan, colour_by, rank_groups(plan, gpus_per_node), gpus_per_node) and "
                             "optionally the placement (collectives.dimension_tiers)")
        if not isinstance(plan, Plan):
            raise ValueError(f"plan={plan!r} must be an atscale.plan.Plan")
        if len(groups) != 4 or any(np.shape(a) != (plan.gpus,) for a in groups):
            raise ValueError(f"groups must be rank_groups(plan): four arrays of {plan.gpus:,} ranks")
        return _RankGrid(plan, colour_by, groups, gpus_per_node, *placement)

    def layout(self, view):
        """The grid's shape (nodes per row, rows drawn, GPUs per node) and the texts of the background (row label,
        row numbers, key lines: they depend on the coloured axis and, for a large layout, on its size); applied to
        the axes."""
        grid = self._current = self._grid(view)
        self.ax.set_xlim(-0.5, grid.width - 0.5)
        self.ax.set_ylim(grid.shown_rows - 0.5, -0.5)
        ylabel, ticks, key_line, grid_line = grid.ylabel(), grid.yticks(), grid.key_line(), grid.grid_line()
        tiers_line = grid.tiers_line()
        self.ax.set_ylabel(ylabel)
        self.ax.set_yticks(*ticks, fontsize=7)
        self.key.set_text(key_line)
        self.tiers_text.set_text(tiers_line)
        self.grid_text.set_text(grid_line)
        key = (grid.per_row, grid.shown_rows, grid.gpus_per_node, ylabel, tuple(ticks[1]), key_line, grid_line,
               tiers_line)
        return key

    def update(self, view):
        grid = self._current  # layout() has just computed it for this view
        w, h, g = grid.width, grid.shown_rows, grid.gpus_per_node
        mesh = self._mesh(h, w)
        for other in self._meshes.values():
            other.set_visible(other is mesh)
        mesh.set_facecolor(grid.rgba().reshape(-1, 4))
        self.node_lines.set_segments([[(x, -0.5), (x, h - 0.5)] for x in np.arange(1, grid.per_row) * g - 0.5]
                                     + [[(-0.5, y), (w - 0.5, y)] for y in np.arange(1, h) - 0.5])
        self.outline.set_data(*grid.outline)
        self.outline.set_markersize(grid.marker_size)
        self.title.set_text(grid.title())


# --------------------------------------------------------------------------------------
# The step from its operators (issue 31): figures of results atscale.operators computed
# --------------------------------------------------------------------------------------
_CLASS_COLOURS = dict(zip(O.OPERATOR_CLASSES, (PALETTE[0], PALETTE[1], PALETTE[2], "#bbbbbb")))


def _layer_list(name, layers):
    layers = list(layers) if not isinstance(layers, O.LayerOperators) else [layers]
    if not layers or not all(isinstance(x, O.LayerOperators) for x in layers):
        raise ValueError(f"{name} must be a non-empty sequence of atscale.operators.LayerOperators "
                         "(as operators.layer_operators returns)")
    return layers


@house_style
def operator_breakdown_chart(layers, *, ax=None):
    """Where a layer's time goes, by operator class (:data:`atscale.operators.OPERATOR_CLASSES`): one bar per
    entry of ``layers`` (:class:`~atscale.operators.LayerOperators`, drawn top to bottom), each class's share of
    the layer's forward-plus-backward time, with the layer's time per micro-batch written beside it."""
    layers = _layer_list("layers", layers)
    height = 1.9 + 0.55 * len(layers)
    ax = new_axes(ax, figsize=(7.4, height))
    ax.grid(False)
    for row, layer in enumerate(layers):
        left, total = 0.0, layer.total
        for kind, seconds in layer.by_kind().items():
            share = 100.0 * seconds / total
            ax.barh(row, share, left=left, color=_CLASS_COLOURS[kind], height=0.62, label=kind if row == 0 else None)
            left += share
        ax.text(101.5, row, f"{total * 1e3:.2f} ms", va="center", fontsize=8)
    labels = [f"{x.model}, {O.STACKS[x.stack].label.replace(' with Transformer Engine', '')}"
              f"{', FP8' if x.dtype == 'fp8' else ''}" for x in layers]
    ax.set_yticks(range(len(layers)), labels, fontsize=8.5)
    ax.set_ylim(len(layers) - 0.5, -0.5)
    ax.set_xlim(0, 116)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("Share of the layer's forward + backward time (%)")
    ax.set_title("Where one layer's time goes, by operator class")
    handles, labels = ax.get_legend_handles_labels()
    ax.figure.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    ax.figure.subplots_adjust(left=0.42, right=0.97, top=1 - 0.4 / height, bottom=1.0 / height)
    return ax.figure


_SOURCE_MARKERS = {"NVIDIA NeMo": ("o", PALETTE[0]), "torchtitan": ("s", PALETTE[1]), "llm-foundry": ("D", PALETTE[2])}


@house_style
def fp8_width_chart(hidden_sizes, modelled, pairs, *, flat=None, ax=None):
    """FP8's speedup against the model's width: ``modelled`` (one layer's BF16 time over its FP8 time, one value
    per entry of ``hidden_sizes``, elements) as a line; ``pairs`` (:class:`~atscale.runs.FP8Pair`) as points,
    the published step-time ratio filled, the operator-level model's ratio for the same layout open beside it;
    ``flat``: a constant speedup drawn as a dotted line (the calibrated curve's FP8 factor), or None."""
    h = np.asarray(_v.count("hidden_sizes", hidden_sizes, scalar=False), dtype=float)
    y = np.asarray(_v.positive("modelled", modelled), dtype=float)
    if y.shape != h.shape:
        raise ValueError(f"modelled has {y.size} values for {h.size} hidden sizes")
    pairs = list(pairs)
    if not all(isinstance(p, R.FP8Pair) for p in pairs):
        raise ValueError("pairs must be atscale.runs.FP8Pair records (as runs.fp8_pairs returns)")
    ax = new_axes(ax, figsize=(7.0, 4.4))
    ax.plot(h, y, color=INK, lw=1.6, label="model: one layer (Llama-shaped, 8,192 tokens)")
    if flat is not None:
        ax.axhline(_v.positive("flat", flat, scalar=True), color=MUTED, lw=1.2, ls=":",
                   label=f"the curve's flat FP8 factor ({flat:.2f})")
    for source, (marker, colour) in _SOURCE_MARKERS.items():
        group = [p for p in pairs if p.source == source]
        if not group:
            continue
        x = np.array([p.hidden_size for p in group], dtype=float)
        ax.scatter(x, [p.published for p in group], marker=marker, color=colour, s=34, zorder=5,
                   label=f"published: {source}")
        ax.scatter(x * 1.06, [p.operators for p in group], marker=marker, facecolors="none", edgecolors=colour,
                   s=34, zorder=4, label=f"model, same runs: {source}")
    ax.set_xscale("log", base=2)
    ticks = [2 ** k for k in range(int(np.floor(np.log2(h.min()))), int(np.ceil(np.log2(h.max()))) + 1)]
    ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
    ax.set_xlabel("Hidden size h (elements)")
    ax.set_ylabel("FP8 speedup over BF16 (×)")
    ax.set_title("FP8's gain grows with the width")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7.5)
    return ax.figure


@house_style
def attention_share_chart(seq_lengths, layers, *, ax=None):
    """The attention core's share of a layer's time against the sequence length: ``layers`` maps a label to
    :class:`~atscale.operators.LayerOperators`, one per entry of ``seq_lengths`` (tokens)."""
    seq = np.asarray(_v.count("seq_lengths", seq_lengths, scalar=False), dtype=float)
    ax = new_axes(ax, figsize=(6.6, 3.9))
    for i, (label, series) in enumerate(dict(layers).items()):
        series = _layer_list(f"layers[{label!r}]", series)
        if len(series) != seq.size:
            raise ValueError(f"layers[{label!r}] has {len(series)} layers for {seq.size} sequence lengths")
        share = [100.0 * x.by_kind()["attention"] / x.total for x in series]
        ax.plot(seq, share, marker="osD^v"[i % 5], color=PALETTE[i % len(PALETTE)], label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(seq, [f"{int(x) // 1024}k" for x in seq])
    ax.set_ylim(0, 100)
    ax.set_xlabel("Sequence length (tokens)")
    ax.set_ylabel("Attention core (% of layer time)")
    ax.set_title("Attention's share of a layer grows with the sequence")
    ax.legend(loc="upper left")
    return ax.figure
