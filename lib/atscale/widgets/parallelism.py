"""Explorers of the chapter "3D parallelism"."""

from __future__ import annotations

from .. import _validate as _v
from .. import collectives, hardware, models, operators, parallelism, pipeline, plots
from ..plan import RECOMPUTE, SCHEDULE_NAMES, Plan
from ..scenario import RUNNING_EXAMPLE
from ._base import Explorer, dropdown, slider

__all__ = ["rank_map_explorer", "pipeline_explorer", "plan_explorer", "rank_map_view", "pipeline_view",
           "RANK_MAP_NETWORKS"]


RANK_MAP_NETWORKS = {"one switch (InfiniBand NDR)": "InfiniBand NDR",
                     "Meta's Llama 3 cluster (pods of 3,072; 7:1 above)": "RoCE 400G (Llama 3 cluster)",
                     "DGX SuperPOD (rail-optimised leaves)": "InfiniBand NDR (DGX SuperPOD)"}
"""The networks the rank-map explorer places a layout on (label -> catalog fabric)."""


def rank_map_view(tp: int = 8, pp: int = 4, dp: int = 32, colour_by: str = "pp", gpus_per_node: int = 8,
                  order: str = "tp-cp-dp-pp", network: str = "InfiniBand NDR"):
    """``(plan, colour_by, rank_groups(plan, gpus_per_node), gpus_per_node, placement)``: what the rank-map
    explorer draws, with ranks numbered in ``order`` (:data:`atscale.plan.PLACEMENT_ORDERS`) and the placement of
    each dimension's groups on ``network``, a scale-out fabric of the catalog joining DGX H100 nodes
    (:func:`atscale.collectives.dimension_tiers`)."""
    if colour_by not in ("tp", "pp", "dp"):
        raise ValueError(f"colour_by={colour_by!r} must be 'tp', 'pp' or 'dp'")
    plan = Plan(tp=tp, pp=pp, dp=dp, order=order)
    network = _v.choice("network", network, tuple(n for n, f in hardware.FABRICS.items() if f.kind == "scale-out"))
    node = hardware.DGX_H100
    whole_nodes = -(-plan.gpus // node.gpus) * node.gpus  # a layout smaller than a node still sits in one
    cluster = hardware.Cluster.of_gpus(node, whole_nodes, hardware.fabric(network))
    return (plan, colour_by, parallelism.rank_groups(plan, gpus_per_node), gpus_per_node,
            collectives.dimension_tiers(plan, cluster))


def rank_map_explorer(snapshot: bool = True) -> Explorer:
    """TP, PP and DP degrees, the rank order and the network: which GPU is in which group, on the node grid (the
    running example's layout), and which level of the network each group's traffic climbs to.
    ``snapshot=False``: the static page shows no copy of the default figure (the chapter prints it above)."""
    plan = RUNNING_EXAMPLE.plan
    return Explorer(
        plots.RankMapFigure, figsize=(7.0, 4.2), compute=rank_map_view, snapshot=snapshot,
        tp=dropdown([1, 2, 4, 8], plan.tp, "Tensor parallel (TP)"),
        pp=dropdown([1, 2, 4, 8, 16], plan.pp, "Pipeline parallel (PP)"),
        dp=dropdown([1, 2, 4, 8, 16, 32, 64, 128], plan.dp, "Data parallel (DP)"),
        colour_by=dropdown({"pipeline stage": "pp", "tensor-parallel rank": "tp", "data-parallel replica": "dp"},
                           "pp", "Colour by"),
        order=dropdown({"pipeline outermost (Megatron-Core)": "tp-cp-dp-pp",
                        "data parallelism outermost (Meta, Llama 3)": "tp-cp-pp-dp"}, "tp-cp-dp-pp", "Rank order"),
        network=dropdown(RANK_MAP_NETWORKS, "InfiniBand NDR", "Network"),
    )


def pipeline_view(pp: int = 4, micro_batches: int = 8, schedule: str = "1f1b", virtual_stages: int = 1,
                  weight_ratio: float = 1.0):
    """The simulated schedule the pipeline explorer draws (:func:`atscale.pipeline.pipeline_timeline`, a backward
    twice the forward; ``weight_ratio``: its weight-gradient part over the forward, where the schedule splits
    it off)."""
    return pipeline.pipeline_timeline(pp, micro_batches, schedule, virtual_stages, weight_ratio=weight_ratio)


def pipeline_explorer(snapshot: bool = True) -> Explorer:
    """Schedule, stages and micro-batches: the pipeline's timeline with its bubble measured. The zero-bubble
    schedules and DualPipe split the backward; the weight-gradient share sets how long their ``W`` passes are.
    ``snapshot=False``: the static page shows no copy of the default figure (the chapter prints it above)."""
    return Explorer(
        plots.PipelineScheduleFigure, figsize=(7.2, 3.4), compute=pipeline_view, snapshot=snapshot,
        pp=slider(2, 8, 4, "Stages (PP)", integer=True),
        micro_batches=slider(1, 32, 8, "Micro-batches (m)", integer=True),
        schedule=dropdown({SCHEDULE_NAMES[s]: s for s in ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "dualpipe",
                                              "dualpipev")},
                          "1f1b", "Schedule"),
        virtual_stages=dropdown([1, 2, 3, 4], 1, "Chunks per GPU (v, interleaved only)"),
        weight_ratio=dropdown({"0.5: W half a forward": 0.5, "1.0: W as long as F": 1.0, "1.5: W longer than F": 1.5},
                              1.0, "W pass / forward (split schedules)"),
    )


_DP_OPTIONS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
_FOLLOWERS = {"DP": "dp", "PP": "pp", "nothing (set all four)": "none"}


def follow_gpus(values: dict, changed: str) -> dict:
    """The plan explorer's link: when TP, CP, PP or DP moves, the dimension chosen in ``follows`` (DP by
    default) takes the value that keeps TP x CP x PP x DP at the cluster's GPU count, when the others
    divide it and that value is one of its options; otherwise nothing moves (and the explorer says why
    the layout cannot run)."""
    follower = values.get("follows", "dp")
    dims = ("tp", "cp", "pp", "dp")
    if follower not in dims or changed not in dims or changed == follower:
        return {}
    others = 1
    for d in dims:
        if d != follower:
            others *= values[d]
    gpus = RUNNING_EXAMPLE.cluster.num_gpus
    if gpus % others:
        return {}
    value = gpus // others
    options = _DP_OPTIONS if follower == "dp" else (1, 2, 4, 8, 16)
    return {follower: value} if value in options else {}


def _step(model, tp, cp, pp, dp, micro_batch, global_batch, zero_stage, schedule, virtual_stages, recompute,
          sequence_parallel, tp_overlap, balanced, dtype, cp_algorithm="ring", follows="dp", stack="curve"):
    plan = Plan(tp=tp, cp=cp, pp=pp, dp=dp, micro_batch=micro_batch, global_batch=global_batch,
                zero_stage=zero_stage, schedule=schedule, virtual_stages=virtual_stages, recompute=recompute,
                sequence_parallel=sequence_parallel, tp_overlap=tp_overlap, account_for_embedding=balanced,
                account_for_loss=balanced, cp_algorithm=cp_algorithm)
    return parallelism.step_time(models.model(model), RUNNING_EXAMPLE.cluster, plan,
                                 seq_length=RUNNING_EXAMPLE.seq_length, dtype=dtype,
                                 stack=None if stack == "curve" else stack)


_STACK_OPTIONS = {"calibrated curve (the chapter's default)": "curve",
                  **{operators.STACKS[name].label: name for name in operators.STACK_NAMES}}
"""The compute model of the plan explorer: the calibrated efficiency curve (``stack=None``) or a stack preset's
operator-level compute (:data:`atscale.operators.STACKS`)."""


def _summary(st: parallelism.StepTime) -> str:
    if not st.feasible:
        return f"Infeasible: {st.reason}"
    tight = " (tight: within the memory model's margin)" if st.memory_status == "tight" else ""
    fp8 = f" ({st.mfu_at_dtype_peak:.1%} of the FP8 peak)" if st.dtype == "fp8" else ""
    return (f"{st.total:.2f} s per step, {st.tokens_per_second / 1e6:.2f} M tokens/s, MFU {st.mfu:.1%}{fp8}, "
            f"HFU {st.hfu:.1%}; memory {st.memory_total / 1e9:.1f} of {st.memory_capacity / 1e9:.1f} GB per "
            f"GPU{tight}")


def plan_explorer() -> Explorer:
    """Every field of a plan on the running example's 1,024 H100s, with the precision: the step-time breakdown
    and MFU, or the reason the layout cannot run. TP x CP x PP x DP must make 1,024: when one of them moves,
    DP follows (or PP, or nothing: the "GPU count kept by" control, :func:`follow_gpus`). The model, the
    four degrees and the schedule are on top; the other fields are folded under "More settings", with the compute
    model: the calibrated curve (default) or a stack preset's operator-level compute (``step_time(..., stack=...)``)."""
    plan = RUNNING_EXAMPLE.plan
    on_off = {"on": True, "off": False}
    return Explorer(
        plots.StepBreakdownFigure, figsize=(7.0, 3.8), compute=_step, summary=_summary, links=follow_gpus,
        advanced=("follows", "cp_algorithm", "micro_batch", "global_batch", "zero_stage", "virtual_stages",
                  "recompute", "sequence_parallel", "tp_overlap", "balanced", "dtype", "stack"),
        model=dropdown(["Llama 3 8B", "Llama 3 70B", "Llama 3 405B", "GPT-3 175B", "Nemotron-4 340B"],
                       RUNNING_EXAMPLE.model.name, "Model"),
        tp=dropdown([1, 2, 4, 8, 16], plan.tp, "Tensor parallel (TP)"),
        cp=dropdown([1, 2, 4, 8, 16], plan.cp, "Context parallel (CP)"),
        cp_algorithm=dropdown({"ring": "ring", "all-gather (Llama 3)": "all-gather",
                               "all-to-all (DeepSpeed-Ulysses)": "ulysses"}, plan.cp_algorithm,
                              "Context-parallel exchange"),
        pp=dropdown([1, 2, 4, 8, 16], plan.pp, "Pipeline parallel (PP)"),
        dp=dropdown(list(_DP_OPTIONS), plan.dp, "Data parallel (DP)"),
        micro_batch=dropdown([1, 2, 4, 8], plan.micro_batch, "Micro-batch (sequences)"),
        global_batch=dropdown([256, 512, 1024, 2048, 4096], plan.global_batch, "Global batch (sequences)"),
        zero_stage=dropdown([0, 1, 2, 3], plan.zero_stage, "ZeRO stage"),
        schedule=dropdown({SCHEDULE_NAMES[s]: s for s in ("gpipe", "1f1b", "interleaved")}, plan.schedule,
                          "Schedule"),
        follows=dropdown(_FOLLOWERS, "dp", "GPU count kept at 1,024 by"),
        virtual_stages=dropdown([1, 2, 4], plan.virtual_stages, "Chunks per GPU (interleaved)"),
        recompute=dropdown(list(RECOMPUTE), plan.recompute, "Recomputation"),
        sequence_parallel=dropdown(on_off, plan.sequence_parallel, "Sequence parallel"),
        tp_overlap=dropdown(on_off, plan.tp_overlap, "TP communication overlap"),
        balanced=dropdown(on_off, plan.account_for_embedding, "Embedding and loss as layers"),
        dtype=dropdown({"BF16": "bf16", "FP8": "fp8"}, "bf16", "Precision"),
        stack=dropdown(_STACK_OPTIONS, "curve", "Compute model"),
    )
