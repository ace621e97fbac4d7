"""Figures of the chapter "The memory wall"."""

from __future__ import annotations

import numpy as np

from .. import hardware, memory, models
from . import INK, MUTED, PALETTE, house_style, log_axes, new_axes

__all__ = ["bytes_per_param_chart", "zero_stages_chart", "activation_strategies_chart", "memory_breakdown_chart",
           "memory_wall_chart", "max_model_size_chart"]

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
    """Per-GPU model state against the data-parallel degree for ZeRO stages 0-3, with the HBM line."""
    dp = np.unique(np.geomspace(1, 4096, 40).astype(int)) if dp is None else np.asarray(dp)
    acc = hardware.accelerator(accelerator)
    ax = new_axes(ax)
    names = ("0: replicate everything (DDP)", "1: shard optimizer state", "2: + gradients", "3: + weights (FSDP)")
    for stage, label in enumerate(names):
        total = memory.model_state_bytes(model, optimizer_name, zero_stage=stage, dp=dp, tp=tp, pp=pp).total / 1e9
        ax.plot(dp, total, color=PALETTE[stage], label=f"ZeRO-{label}")
    ax.axhline(acc.memory_capacity / 1e9, color=INK, ls="--", lw=1.1)
    ax.text(dp.min() * 1.2, acc.memory_capacity / 1e9 * 1.12, f"{acc.name}: {acc.memory_capacity / 1e9:,.0f} GB",
            fontsize=8.5)
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
def memory_breakdown_chart(model="Llama 3 70B", accelerator="H100 SXM", *, optimizer_name="adam-mixed",
                           zero_stage: int = 1, tp: int = 8, pp: int = 4, dp: int = 32, micro_batch: int = 1,
                           seq_length=8192, recompute="selective", sequence_parallel: bool = True, ax=None):
    """One configuration's per-GPU memory as a stacked bar against the HBM capacity line."""
    cfg = models.model(model)
    b = memory.breakdown(cfg, accelerator, micro_batch=int(micro_batch), seq_length=int(seq_length),
                         optimizer_name=optimizer_name, zero_stage=int(zero_stage), dp=int(dp), tp=int(tp),
                         pp=int(pp), sequence_parallel=bool(sequence_parallel) and tp > 1, recompute=recompute)
    ax = new_axes(ax)
    bottom = 0.0
    for part, value in b.parts().items():
        ax.bar([0], [value / 1e9], bottom=bottom, width=0.5, color=_PART_COLOURS[part],
               label=f"{part}: {value / 1e9:,.1f} GB")
        bottom += value / 1e9
    cap = b.capacity / 1e9
    ax.axhline(cap, color=INK, ls="--", lw=1.2)
    ax.text(-0.45, cap, f"HBM {cap:,.0f} GB", va="bottom", fontsize=9)
    ax.set_xlim(-0.5, 1.6)
    ax.set_ylim(0, max(cap, bottom) * 1.15)
    ax.set_xticks([])
    ax.set_ylabel("Memory per GPU (GB)")
    verdict = "fits" if b.fits else f"over by {b.overflow / 1e9:,.1f} GB"
    ax.set_title(f"{cfg.name}, TP={tp} PP={pp} DP={dp} ZeRO-{zero_stage}: {verdict}",
                 color=INK if b.fits else "#b00020")
    ax.legend(loc="center right", fontsize=8.5)
    ax.grid(axis="x", visible=False)
    return ax.figure


@house_style
def memory_wall_chart(dtype: str = "bf16", *, base="A100 SXM 80GB", others=("H100 SXM", "H200 SXM", "B200"), ax=None):
    """Growth of peak FLOP/s, HBM bandwidth and HBM capacity relative to ``base``."""
    b = hardware.accelerator(base)
    accs = [hardware.accelerator(a) for a in others]
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


# Published maximum model sizes trainable with pure data parallelism on 32 GB V100s
# (Rajbhandari et al. 2020): baseline DP runs out of memory above 1.4B parameters (sec. 1);
# ZeRO-DP with optimizer and gradient sharding trains up to 13B (abstract).
PUBLISHED_MAX_MODEL = {0: 1.4e9, 2: 13e9}
V100_MEMORY = 32e9


def max_params_state_only(zero_stage: int, capacity: float = V100_MEMORY, dp: int = 400,
                          optimizer_name: str = "adam-mixed") -> float:
    """Largest parameter count whose model state alone fits ``capacity`` bytes (an upper bound)."""
    per_param = memory.model_state_bytes(1.0, optimizer_name, zero_stage=zero_stage, dp=dp).total
    return capacity / per_param


@house_style
def max_model_size_chart(*, dp: int = 400, ax=None):
    """Model (state-only bound) vs published largest trainable model, 32 GB V100, pure data parallelism."""
    stages = sorted(PUBLISHED_MAX_MODEL)
    model_vals = np.array([max_params_state_only(s, dp=dp) for s in stages]) / 1e9
    measured = np.array([PUBLISHED_MAX_MODEL[s] for s in stages]) / 1e9
    ax = new_axes(ax)
    x = np.arange(len(stages))
    ax.bar(x - 0.2, model_vals, width=0.4, color=PALETTE[5], label="model: state fits in 32 GB")
    ax.bar(x + 0.2, measured, width=0.4, color=PALETTE[0], label="published: largest trained")
    for xi, mv, pv in zip(x, model_vals, measured):
        ax.text(xi + 0.2, pv, f"{pv / mv:.0%}", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(x, ["data parallel (ZeRO-0)", "ZeRO-2 (optimizer + gradients)"])
    ax.set_ylabel("Parameters (billions)")
    ax.set_ylim(0, model_vals.max() * 1.2)
    ax.set_title("Largest model on a 32 GB V100: model vs published")
    ax.legend(loc="upper left")
    ax.grid(axis="x", visible=False)
    return ax.figure
