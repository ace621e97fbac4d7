"""Explorers of the chapter "The memory wall"."""

from __future__ import annotations

from .. import hardware, memory, models, plots
from . import Explorer, dropdown, slider

__all__ = ["memory_explorer"]


def _summary(model, accelerator, optimizer_name, zero_stage, tp, pp, dp, micro_batch, seq_length, recompute,
             sequence_parallel):
    b = memory.breakdown(models.model(model), accelerator, micro_batch=int(micro_batch), seq_length=int(seq_length),
                         optimizer_name=optimizer_name, zero_stage=int(zero_stage), dp=int(dp), tp=int(tp),
                         pp=int(pp), sequence_parallel=bool(sequence_parallel) and tp > 1, recompute=recompute)
    return f"{b.verdict()}. GPUs in this layout: TP × PP × DP = {int(tp) * int(pp) * int(dp):,}."


def memory_explorer() -> Explorer:
    """Model, optimizer, ZeRO stage, TP/PP/DP, micro-batch, sequence, recomputation: does it fit?"""
    powers = [1, 2, 4, 8]
    return Explorer(
        plots.memory_breakdown_chart,
        summary=_summary,
        model=dropdown(["Llama 3 8B", "Llama 3 70B", "Llama 3 405B", "GPT-3 175B"], "Llama 3 70B", "Model"),
        accelerator=dropdown(list(hardware.ACCELERATORS), "H100 SXM", "Accelerator"),
        optimizer_name=dropdown(list(memory.OPTIMIZERS), "adam-mixed", "Optimizer"),
        zero_stage=dropdown([0, 1, 2, 3], 1, "ZeRO stage"),
        tp=dropdown(powers, 8, "Tensor parallel (TP)"),
        pp=dropdown([1, 2, 4, 8, 16], 4, "Pipeline parallel (PP)"),
        dp=dropdown([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], 32, "Data parallel (DP)"),
        micro_batch=slider(1, 16, 1, "Micro-batch (sequences)", integer=True),
        seq_length=dropdown([2048, 4096, 8192, 16384, 32768], 8192, "Sequence length"),
        recompute=dropdown(list(memory.RECOMPUTE), "selective", "Recomputation"),
        sequence_parallel=dropdown({"on": True, "off": False}, True, "Sequence parallel"),
    )
