"""Figures of the chapter "3D parallelism"."""

from __future__ import annotations

import numpy as np

from .. import parallelism as P
from ..plan import Plan
from . import INK, MUTED, PALETTE, house_style, new_axes

__all__ = ["pipeline_schedule_chart", "rank_map_chart", "step_breakdown_chart", "validation_chart",
           "mfu_scaling_chart", "search_scatter_chart"]

_PART_COLOURS = dict(zip(P.PARTS, (PALETTE[0], PALETTE[5], PALETTE[1], PALETTE[4], "#bbbbbb", PALETTE[3], PALETTE[2])))


@house_style
def pipeline_schedule_chart(pp: int = 4, micro_batches: int = 8, schedule: str = "1f1b", virtual_stages: int = 1,
                            *, ax=None):
    """One step of a pipeline schedule (:func:`atscale.parallelism.pipeline_timeline`): a row per stage,
    forwards and backwards as labelled boxes, the idle time (the bubble) hatched and measured."""
    t = P.pipeline_timeline(pp, micro_batches, schedule, virtual_stages)
    ax = new_axes(ax, figsize=(7.2, 3.4))
    span = t.makespan
    ax.barh(np.arange(t.pp), span, left=0, height=0.8, color="#eeeeee", lw=0)  # idle unless covered
    from matplotlib.collections import PolyCollection
    lo, hi = t.stage - 0.4, t.stage + 0.4
    boxes = np.stack([np.stack([t.start, lo], 1), np.stack([t.start, hi], 1), np.stack([t.end, hi], 1),
                      np.stack([t.end, lo], 1)], axis=1)
    colours = np.where(t.kind == "F", PALETTE[0], PALETTE[1])
    ax.add_collection(PolyCollection(boxes, facecolors=colours, edgecolors="white", linewidths=0.4))
    if t.micro_batches * t.virtual_stages * t.pp * 2 <= 48:
        for st, s0, s1, j in zip(t.stage, t.start, t.end, t.micro_batch):
            ax.text((s0 + s1) / 2, st, str(j + 1), ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(t.pp), [str(i + 1) for i in range(t.pp)])
    ax.set_ylabel("Pipeline stage")
    ax.set_ylim(t.pp - 0.5, -0.5)
    ax.set_xlim(0, span)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
    ax.set_xlabel("Time (units of one stage's forward pass of a micro-batch)")
    name = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": f"interleaved 1F1B, v={t.virtual_stages}"}[schedule]
    ax.set_title(f"{name}: {t.pp} stages, {t.micro_batches} micro-batches; bubble {t.bubble:.1%} of useful time")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=PALETTE[0], label="forward"), Patch(color=PALETTE[1], label="backward"),
                       Patch(color="#eeeeee", label="idle (bubble)")],
              loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    ax.figure.subplots_adjust(bottom=0.3, left=0.12)
    ax.grid(False)
    return ax.figure


@house_style
def rank_map_chart(tp: int = 8, pp: int = 4, dp: int = 32, colour_by: str = "pp", *, gpus_per_node: int = 8,
                   ax=None):
    """Every GPU of a ``tp x pp x dp`` layout on the node grid (one row of small squares per row of nodes),
    coloured by its TP, PP or DP group (:func:`atscale.parallelism.rank_groups`, Megatron's order)."""
    if colour_by not in ("tp", "pp", "dp"):
        raise ValueError(f"colour_by={colour_by!r} must be 'tp', 'pp' or 'dp'")
    plan = Plan(tp=tp, pp=pp, dp=dp)
    tp_r, dp_r, pp_r, node = P.rank_groups(plan, gpus_per_node)
    # The group a GPU belongs to (its peers along the axis): TP group = (dp, pp); PP group = (tp, dp); DP group = (tp, pp).
    group = {"tp": dp_r + dp * pp_r, "pp": tp_r + tp * dp_r, "dp": tp_r + tp * pp_r}[colour_by]
    position = {"tp": tp_r, "pp": pp_r, "dp": dp_r}[colour_by]
    n = plan.gpus
    nodes = -(-n // gpus_per_node)
    per_row = int(max(1, min(16, round(np.sqrt(nodes * 2)))))
    rows = -(-nodes // per_row)
    grid = np.full((rows, per_row * gpus_per_node), np.nan)
    r = np.arange(n)
    nd, local = r // gpus_per_node, r % gpus_per_node
    grid[nd // per_row, (nd % per_row) * gpus_per_node + local] = position
    ax = new_axes(ax, figsize=(7.0, 3.8))
    import matplotlib as mpl
    cmap = mpl.colormaps["viridis"].with_extremes(bad="white")
    ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, aspect="auto", interpolation="nearest",
              vmin=0, vmax=max({"tp": tp, "pp": pp, "dp": dp}[colour_by] - 1, 1))
    ax.vlines(np.arange(1, per_row) * gpus_per_node - 0.5, -0.5, rows - 0.5, color="white", lw=2)
    ax.hlines(np.arange(1, rows) - 0.5, -0.5, per_row * gpus_per_node - 0.5, color="white", lw=2)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    # Outline the group of GPU 0, so the reader sees one group's footprint.
    sel = group == group[0]
    ys, xs = nd[sel] // per_row, (nd[sel] % per_row) * gpus_per_node + local[sel]
    ax.plot(xs, ys, ls="none", marker="s", ms=max(2.5, 0.6 * 450 / (per_row * gpus_per_node)), mfc="none", mec=PALETTE[3], mew=1.0)
    axis = {"tp": "tensor-parallel rank", "pp": "pipeline stage", "dp": "data-parallel replica"}[colour_by]
    ax.set_title(f"TP={tp} × PP={pp} × DP={dp}: colour = {axis}")
    ax.set_xlabel(f"{per_row} nodes per row, {gpus_per_node} GPUs each (white lines: node boundaries); "
                  f"red outline: the {colour_by.upper()} group of GPU 0 ({int(sel.sum())} GPUs)", fontsize=8.5)
    ax.set_ylabel(f"{rows} rows of nodes")
    ax.figure.subplots_adjust(bottom=0.12, left=0.06)
    return ax.figure


@house_style
def step_breakdown_chart(step: P.StepTime, *, ax=None):
    """One layout's step time as a stacked bar of its parts, with MFU; an infeasible layout is drawn as
    such: no bar, the reason in red."""
    ax = new_axes(ax, figsize=(7.0, 3.0))
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
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4, fontsize=8)
    ax.figure.subplots_adjust(bottom=0.45, left=0.04, right=0.97)
    return ax.figure


@house_style
def validation_chart(*, ax=None):
    """The model against published runs: predicted vs published MFU (or HFU; Megatron-LM's Table 1 as
    hardware FLOP/s over peak, i.e. HFU), calibration and validation runs marked apart."""
    ax = new_axes(ax, figsize=(6.0, 5.0))
    seen = set()
    styles = {"Narayanan": ("o", PALETTE[0], "Megatron-LM Table 1"),
              "Korthikanti": ("s", PALETTE[1], "Korthikanti et al. Table 5"),
              "Llama": ("^", PALETTE[3], "Llama 3 Table 4")}
    for run in P.CALIBRATION_RUNS + P.VALIDATION_RUNS:
        key = next(k for k in styles if k in run.source)
        marker, colour, name = styles[key]
        peak = run.cluster.accelerator.peak("bf16")
        scale = peak if run.metric == "hardware_flops_per_gpu" else 1.0
        x, y = run.published / scale * 100, run.predicted / scale * 100
        filled = run.role == "calibration"
        lab = f"{name} ({run.role})"
        ax.scatter(x, y, marker=marker, s=42, color=colour if filled else "white", edgecolors=colour, lw=1.4,
                   label=None if lab in seen else lab, zorder=3)
        seen.add(lab)
    ax.plot([15, 65], [15, 65], color=INK, lw=1, ls="--")
    ax.text(55, 58, "model = published", fontsize=8.5, color=MUTED, rotation=38)
    ax.set_xlim(15, 65)
    ax.set_ylim(15, 65)
    ax.set_xlabel("Published utilisation (% of dense peak)")
    ax.set_ylabel("Model's utilisation (% of dense peak)")
    ax.set_title("Step-time model against published runs")
    ax.legend(loc="upper left", fontsize=8)
    return ax.figure


@house_style
def mfu_scaling_chart(gpus, best_mfu, running_mfu=None, *, ax=None):
    """Best MFU the search finds against the GPU count at a fixed global batch (and, optionally, the MFU of
    one fixed layout family)."""
    gpus, best_mfu = np.asarray(gpus), np.asarray(best_mfu)
    if gpus.shape != best_mfu.shape or gpus.size < 2:
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
def search_scatter_chart(result: P.SearchResult, *, ax=None):
    """Every feasible layout of a search: tokens per second against per-GPU memory, coloured by TP; the
    winner circled."""
    t = result.table
    ok = t["feasible"]
    ax = new_axes(ax)
    for k, tp in enumerate(sorted(set(t["tp"][ok]))):
        sel = ok & (t["tp"] == tp)
        ax.scatter(t["memory"][sel] / 1e9, t["tokens_per_second"][sel] / 1e6, s=8, alpha=0.6, color=PALETTE[k],
                   label=f"TP={tp}")
    ax.scatter(t["memory"][0] / 1e9, t["tokens_per_second"][0] / 1e6, s=160, facecolors="none",
               edgecolors=INK, lw=1.5, label="best")
    ax.set_xlabel("Memory per GPU (GB)")
    ax.set_ylabel("Throughput (million tokens/s)")
    ax.set_title(f"{ok.sum():,} feasible layouts of {len(ok):,}")
    ax.legend(loc="lower right", markerscale=2)
    return ax.figure
