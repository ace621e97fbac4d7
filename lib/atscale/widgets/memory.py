"""Explorers of the chapter "The memory wall"."""

from __future__ import annotations

from .. import hardware, memory, models, plots
from ..plan import RECOMPUTE, Plan
from ..scenario import RUNNING_EXAMPLE
from ._base import Explorer, dropdown, slider

__all__ = ["memory_explorer"]


def _breakdown(model, accelerator, optimizer_name, seq_length, fp8_cache="none", **layout) -> memory.Breakdown:
    """The breakdown of the explorer's choices; ``fp8_cache`` other than ``"none"`` is an FP8 step storing what that
    policy keeps in FP8 (:attr:`atscale.plan.Plan.fp8_cache`)."""
    return memory.breakdown(models.model(model), accelerator, Plan(fp8_cache=fp8_cache, **layout),
                            seq_length=seq_length, optimizer_name=optimizer_name,
                            dtype="bf16" if fp8_cache == "none" else "fp8")


def _summary(b: memory.Breakdown) -> str:
    return f"{b.verdict()}. GPUs in this layout: TP × PP × DP = {b.plan.gpus:,}."


def memory_explorer() -> Explorer:
    """Model, optimizer, ZeRO stage, TP/PP/DP, micro-batch, sequence, recomputation, activations in FP8: does it fit?

    Starts at the running example (:data:`atscale.scenario.RUNNING_EXAMPLE`), its plan and its
    optimizer layout (:data:`atscale.memory.RUNNING_EXAMPLE_OPTIMIZER`).
    """
    ex, plan = RUNNING_EXAMPLE, RUNNING_EXAMPLE.plan
    return Explorer(
        plots.MemoryExplorerFigure,
        compute=_breakdown,
        summary=_summary,
        model=dropdown(["Llama 3 8B", "Llama 3 70B", "Llama 3 405B", "GPT-3 175B"], ex.model.name, "Model"),
        accelerator=dropdown(list(hardware.ACCELERATORS), ex.cluster.accelerator.name, "Accelerator"),
        optimizer_name=dropdown(list(memory.OPTIMIZERS), memory.RUNNING_EXAMPLE_OPTIMIZER, "Optimizer"),
        zero_stage=dropdown([0, 1, 2, 3], plan.zero_stage, "ZeRO stage"),
        tp=dropdown([1, 2, 4, 8], plan.tp, "Tensor parallel (TP)"),
        pp=dropdown([1, 2, 4, 8, 16], plan.pp, "Pipeline parallel (PP)"),
        dp=dropdown([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], plan.dp, "Data parallel (DP)"),
        micro_batch=slider(1, 16, plan.micro_batch, "Micro-batch (sequences)", integer=True),
        seq_length=dropdown([2048, 4096, 8192, 16384, 32768], ex.seq_length, "Sequence length"),
        recompute=dropdown(list(RECOMPUTE), plan.recompute, "Recomputation"),
        sequence_parallel=dropdown({"on": True, "off": False}, plan.sequence_parallel, "Sequence parallel"),
        fp8_cache=dropdown({"16-bit": "none", "FP8, as Transformer Engine": "transformer-engine",
                            "FP8, as DeepSeek-V3": "deepseek-v3"}, "none", "Activations stored"),
    )
