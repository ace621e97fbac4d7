"""Answer keys: the mixtures-of-experts chapter."""

CHAPTER = "Mixtures of experts"
"""The chapter whose exercises these keys check (the Exercises page groups them by it)."""

import dataclasses

from .. import experts, hardware, models
from . import answer

_EPS = (1, 2, 4, 8, 16, 32, 64, 128)


@answer("experts-mixtral-total", unit="", rtol=0.01,
        idea="Only the feed-forward blocks are replicated per expert; the rest of the model is shared.",
        hint="models.MIXTRAL_8X7B.num_params: attention, embeddings and norms are shared by the 8 experts.")
def _():
    return models.MIXTRAL_8X7B.num_params


@answer("experts-deepseek-dense-flops", unit="", rtol=0.01,
        idea="Compare the work per token with every expert active against the work with only the routed ones.",
        hint="The FLOPs per token with every expert active over those with 8 routed experts: "
             "1 / experts.moe_summary(models.DEEPSEEK_V3).flops_ratio.")
def _():
    return 1 / experts.moe_summary(models.DEEPSEEK_V3).flops_ratio


@answer("experts-mla-projection-ratio", unit="", rtol=0.01,
        idea="A GEMM's FLOPs per token are twice its weights: count the weights a token passes through each way.",
        hint="One QKV GEMM: h x a (2 d_qk + d_v) weights, with d_qk = 192 and d_v = 128; multi-head latent attention: "
             "the sum of n x k over models.DEEPSEEK_V3.attention_projections().")
def _():
    m = models.DEEPSEEK_V3
    one_gemm = m.hidden_size * m.num_heads * (2 * m.qk_head_dim + m.v_head_dim)
    return one_gemm / sum(n * k for _, n, k in m.attention_projections())


@answer("experts-mtp-step-share", unit="", rtol=0.01,
        idea="Price the step with and without the module on the same layout; the ratio less one is what it adds.",
        hint="experts.deepseek_v3_estimate().step.total over experts.deepseek_v3_estimate(model=dataclasses.replace("
             "models.DEEPSEEK_V3, mtp_layers=0)).step.total, less one.")
def _():
    without = dataclasses.replace(models.DEEPSEEK_V3, mtp_layers=0)
    return experts.deepseek_v3_estimate().step.total / experts.deepseek_v3_estimate(model=without).step.total - 1


@answer("experts-cross-node-bytes", unit="B", rtol=0.01,
        idea="Count the copies of a token that leave its node, then the bytes of one copy.", slips=('twice',),
        hint="M (1 - 1/N) copies cross the network with M = 4 nodes per token and N = 8 nodes; each copy is h = 7,168 "
             "values of 2 bytes.")
def _():
    m = models.DEEPSEEK_V3
    return experts.cross_node_copies(m.experts_per_token, 8, num_experts=m.num_experts,
                                     max_nodes=m.max_routed_nodes) * m.hidden_size * 2


@answer("experts-dropless-imbalance", unit="", rtol=0.02,
        idea="Turn the two published rates into a slowdown, then ask how unbalanced the experts must be for the "
             "model's step to grow by that much.",
        hint="The dropless step is 295/237 times the balanced one; accuracy.dropless_imbalance() searches the "
             "expert_imbalance for every such row: take the reading whose tokens are 16,384.")
def _():
    from .. import accuracy

    return next(d for d in accuracy.dropless_imbalance() if d.tokens == 16_384).imbalance


@answer("experts-layer-gap", unit="s", rtol=0.02,
        idea="Turn the published rate into a step, price the same run with the model, and share the difference out "
             "over the layers each GPU runs, once per micro-batch.",
        hint="The step is 1,024 x 4,096 tokens / (5,113 tokens/s x 16 GPUs); the model's is run.step(operators=True)"
             ".total; each GPU runs 24 layers for each of 1,024 / 8 micro-batches (accuracy.layer_gaps() does it "
             "for every MoE run).")
def _():
    from .. import accuracy

    return next(g for g in accuracy.layer_gaps() if g.run == "Qwen3-30B-A3B, 16 H100, FP8, Megatron-Bridge 26.02"
                ).gap_seconds


@answer("experts-placement-saving", unit="s", rtol=0.02,
        idea="Price the same layout on both systems and subtract: what is left is what the expert group's crossing "
             "of the network costs each step (and the two GPUs' different peaks).",
        hint="accuracy.ep_placement_pairs()[0]: model_across - model_inside, in seconds (its model_saving); the "
             "published one is published_saving.")
def _():
    from .. import accuracy

    return accuracy.ep_placement_pairs()[0].model_saving


@answer("experts-launches", unit="", rtol=0, atol=0.5,
        idea="A grouped kernel launches once for all the GPU's experts; Transformer Engine's grouped linear layer "
             "launches once per expert, for every GEMM and, in FP8 with current scaling, for every cast.",
        hint="16 local experts; per expert two GEMMs forward and four backward, and two casts each way at two "
             "kernels each (operators.layer_operators(...).kernels with expert_gemms 'multi-stream' less the same "
             "with 'grouped').")
def _():
    from .. import operators, runs

    run = next(r for r in runs.ALL_RUNS if r.label == "Qwen3-30B-A3B, 16 H100, FP8, Megatron-Bridge 26.02")
    counts = [operators.layer_operators(run.model, "H100 SXM", seq_length=4096, dtype="fp8", fp8_recipe="current",
                                        ep=8, stack=dataclasses.replace(operators.stack("megatron-core"),
                                                                        expert_gemms=how)).kernels
              for how in ("multi-stream", "grouped")]
    return counts[0] - counts[1]


@answer("experts-dropped-fraction", unit="", rtol=0.02,
        idea="Tokens beyond an expert's capacity are dropped; average that over the experts' loads.",
        hint="experts.dropped_fraction(mean_load, capacity_factor), as a fraction (not a percentage).")
def _():
    return experts.dropped_fraction(16, 1.25)


@answer("experts-a2a-over-all-reduce", unit="", rtol=0.02,
        idea="Compare the time of the two collectives on the same message and ranks.",
        hint="experts.all_to_all_vs_all_reduce(256e6, 64, cluster).ratio on 1,024 H100 (DGX H100, InfiniBand NDR).")
def _():
    cluster = hardware.Cluster.of_gpus(hardware.DGX_H100, 1024, hardware.FABRICS["InfiniBand NDR"])
    return experts.all_to_all_vs_all_reduce(256e6, 64, cluster).ratio


@answer("experts-no-node-limit-hours", unit="", rtol=0.02,
        idea="Without the node limit each token's copies can reach every node, so the all-to-all grows.",
        hint="experts.deepseek_v3_estimate(model=dataclasses.replace(models.DEEPSEEK_V3, max_routed_nodes=None))"
             ".gpu_hours_per_trillion (GPU-hours, a plain number); the dispatch still sends one copy per node.")
def _():
    model = dataclasses.replace(models.DEEPSEEK_V3, max_routed_nodes=None)
    return experts.deepseek_v3_estimate(model=model).gpu_hours_per_trillion


@answer("experts-no-node-limit-a2a", unit="s", rtol=0.02,
        idea="Without the limit a token's experts can sit on more nodes, so more copies cross the network; leave "
             "the all-to-all exposed to see its full time.",
        hint="experts.a2a_compute_ratio(model, experts.DEEPSEEK_V3_CLUSTER, experts.DEEPSEEK_V3_PLAN, dtype='fp8', "
             "memory_check=False).all_to_all with the node limit removed (max_routed_nodes=None).")
def _():
    model = dataclasses.replace(models.DEEPSEEK_V3, max_routed_nodes=None)
    return experts.a2a_compute_ratio(model, experts.DEEPSEEK_V3_CLUSTER, experts.DEEPSEEK_V3_PLAN, dtype="fp8",
                                     memory_check=False).all_to_all


@answer("experts-smallest-ep", unit="", rtol=0.0, atol=0.5,
        idea="More expert parallelism spreads the experts' weights over more GPUs; find where the memory first fits.",
        hint="experts.ep_sweep(...) of the published layout with recompute='full', the memory check on and "
             "optimizer_name=experts.DEEPSEEK_V3_OPTIMIZER; the first feasible degree (sweep.eps[sweep.feasible][0]).")
def _():
    plan = dataclasses.replace(experts.DEEPSEEK_V3_PLAN, recompute="full", recompute_modules=None)
    sweep = experts.ep_sweep(models.DEEPSEEK_V3, experts.DEEPSEEK_V3_CLUSTER, plan, _EPS, dtype="fp8",
                             optimizer_name=experts.DEEPSEEK_V3_OPTIMIZER)
    return int(sweep.eps[sweep.feasible][0])
