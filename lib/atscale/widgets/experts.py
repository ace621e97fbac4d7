"""Explorers of the chapter "Mixtures of experts"."""

from __future__ import annotations

import dataclasses
import functools

from .. import experts, models, parallelism, plots
from .. import _validate as _v
from ..plan import RECOMPUTE
from ._base import Explorer, dropdown, slider

__all__ = ["moe_view", "moe_explorer"]


@functools.lru_cache(maxsize=64)
def _variant(num_experts: int, top_k: int, max_nodes: int) -> models.TransformerConfig:
    """DeepSeek-V3 with another number of routed experts, top-k and node limit (0: none); the same object for the
    same arguments, so the step-time model's per-model constants are computed once."""
    base = models.DEEPSEEK_V3
    name = base.name
    if (num_experts, top_k, max_nodes or None) != (base.num_experts, base.experts_per_token, base.max_routed_nodes):
        name = f"{base.name} variant ({num_experts} experts, top-{top_k})"
    return dataclasses.replace(base, name=name, num_experts=num_experts, experts_per_token=top_k,
                               max_routed_nodes=max_nodes or None)


def moe_view(experts_: int = 256, top_k: int = 8, ep: int = 64, expert_tp: int = 1, max_nodes: int = 4,
             a2a_overlap: bool = True, imbalance: float = 1.0, capacity_factor: float = 0.0,
             recompute: str = "full") -> parallelism.StepTime:
    """The step of DeepSeek-V3 (or a variant with ``experts_`` routed experts, ``top_k`` of them per token, tokens
    sent to at most ``max_nodes`` nodes, 0 for no limit) on DeepSeek's 2,048 H800 in FP8, its published layout
    (:data:`atscale.experts.DEEPSEEK_V3_PLAN`) with the expert-parallel degree ``ep``, expert tensor parallelism
    ``expert_tp``, the all-to-all overlapped or not, the busiest expert's load ``imbalance`` times the mean, a
    ``capacity_factor`` (0: dropless) and the recomputation mode; the memory check on. The run's other settings
    (optimizer layout, data-parallel overlap, sequence length, attention kernel) are those of
    :data:`atscale.experts.DEEPSEEK_V3_RUN`, as in :func:`atscale.experts.deepseek_v3_estimate`, so the explorer's
    default and the chapter's figure agree for the same layout."""
    experts_, top_k = _v.count("experts_", experts_), _v.count("top_k", top_k)
    max_nodes = _v.count("max_nodes", max_nodes, low=0, unit="0 for no limit")
    most = max(1.0, experts_ / top_k)  # every token on the busiest expert
    imbalance = _v.number("imbalance", imbalance, scalar=True, low=1, high=most,
                          unit="the busiest expert's load over the mean, at most experts/top_k")
    capacity_factor = _v.nonnegative("capacity_factor", capacity_factor, scalar=True, unit="0: dropless")
    model = _variant(experts_, top_k, max_nodes)
    plan = dataclasses.replace(experts.DEEPSEEK_V3_PLAN, ep=ep, expert_tp=expert_tp, a2a_overlap=a2a_overlap,
                               expert_imbalance=imbalance, capacity_factor=capacity_factor or None,
                               recompute=recompute,  # "selective": DeepSeek's own list (norms, MLA up-projections)
                               recompute_modules=experts.DEEPSEEK_V3_PLAN.recompute_modules
                               if recompute == "selective" else None)
    run = experts.DEEPSEEK_V3_RUN
    return parallelism.step_time(model, experts.DEEPSEEK_V3_CLUSTER, plan, dtype="fp8",
                                 optimizer_name=run.optimizer_name, dp_overlap=run.dp_overlap,
                                 seq_length=run.seq_length, flash_attention=run.flash_attention)


def _summary(st: parallelism.StepTime) -> str:
    if not st.feasible:
        return f"Infeasible: {st.reason}"
    hours = experts.gpu_seconds_per_trillion(st) / 3600
    tight = " (tight: within the memory model's margin)" if st.memory_status == "tight" else ""
    return (f"{st.total:.2f} s per step, MFU {st.mfu:.1%}; {hours / 1e3:,.0f}K GPU-hours per trillion tokens "
            f"(published: 180K); all-to-all exposed {st.ep_comm:.2f} s; memory {st.memory_total / 1e9:.0f} of "
            f"{st.memory_capacity / 1e9:.0f} GB per GPU{tight}")


def moe_explorer() -> Explorer:
    """Experts, top-k, expert parallelism and its placement, node-limited routing, all-to-all overlap, load
    imbalance, capacity factor and recomputation, on DeepSeek-V3's 2,048 H800: the step and the memory per GPU, or
    the reason the layout cannot run."""
    on_off = {"on": True, "off": False}
    return Explorer(
        plots.ExpertStepFigure, figsize=(7.0, 4.6), compute=moe_view, summary=_summary,
        experts_=dropdown([8, 16, 32, 64, 128, 256], 256, "Routed experts per layer (E)"),
        top_k=dropdown([1, 2, 4, 8], 8, "Experts per token (k)"),
        ep=dropdown([1, 2, 4, 8, 16, 32, 64, 128], 64, "Expert parallel (EP)"),
        expert_tp=dropdown([1, 2, 4, 8], 1, "Expert tensor parallel (spreads EP over more nodes)"),
        max_nodes=dropdown({"no limit": 0, "1": 1, "2": 2, "4": 4, "8": 8}, 4, "Nodes per token (M)"),
        a2a_overlap=dropdown(on_off, True, "All-to-all overlapped"),
        imbalance=slider(1.0, 2.0, 1.0, "Busiest expert / mean load", step=0.05),
        capacity_factor=dropdown({"none (dropless)": 0.0, "1.0": 1.0, "1.25": 1.25, "1.5": 1.5}, 0.0,
                                 "Capacity factor"),
        recompute=dropdown({"none": "none", "selective (norms, MLA up-projections)": "selective", "full": "full"},
                           "full", "Recomputation"),
    )
