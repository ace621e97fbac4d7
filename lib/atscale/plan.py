"""How a training job is laid out on its GPUs: one frozen ``Plan`` that every chapter shares.

A plan says how many ways each parallel axis splits the work and how each replica runs its
share of a step:

* **tensor parallel** ``tp``: each layer's matrices split across ``tp`` GPUs (inside a node);
* **context parallel** ``cp``: each sequence's tokens split across ``cp`` GPUs, which exchange what attention
  needs so that every query still sees every earlier key (``cp_algorithm``, :data:`CP_ALGORITHMS`): keys and
  values passed around a ring (Megatron-Core's default; Liu et al. 2023, ring attention), all-gathered before
  attention (Llama 3), or queries, keys and values redistributed by attention head with all-to-alls
  (DeepSpeed-Ulysses; Jacobs et al. 2023);
* **pipeline parallel** ``pp``: the layers split into ``pp`` consecutive stages;
* **data parallel** ``dp``: ``dp`` replicas of the whole pipeline, each on its own slice of the batch,
  optionally sharding the model state among themselves (ZeRO stage 1-3);
* the **global batch** (sequences per optimizer step) is cut into micro-batches of ``micro_batch``
  sequences: each replica runs ``global_batch / (micro_batch * dp)`` of them per step and sums
  their gradients before the optimizer step (*gradient accumulation*; in a pipeline these
  micro-batches are what keeps the stages busy);
* the pipeline **schedule** (GPipe, 1F1B, interleaved 1F1B with ``virtual_stages`` chunks per GPU, the
  zero-bubble ZB-H1, ZB-H2 and ZB-V, DualPipe and DualPipeV: :mod:`atscale.pipeline`), activation **recomputation** and Megatron's **sequence parallelism**;
* the **pipeline split**: any number of layers on any ``pp x v`` chunks (as even as possible, the
  first chunks taking one more), optionally counting the embedding as a layer of the first stage and
  the output layer with its loss as a layer of the last (Megatron-Core's
  ``account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split``), which is how
  "one fewer layer on the first and last stage" is written;
* **expert parallelism** ``ep`` (mixtures of experts only): each MoE layer's routed experts are spread over
  ``ep`` GPUs, which exchange tokens with two all-to-alls per layer and pass (dispatch, combine); each expert may
  itself be split ``expert_tp`` ways (expert tensor parallelism). As in Megatron-Core, the experts *fold* onto the
  GPUs of a pipeline stage: ``expert_tp x ep`` must divide ``tp x cp x dp``, and the remaining
  ``tp cp dp / (expert_tp ep)`` GPUs holding the same experts are the experts' data-parallel group;
* the **overlap** options of current frameworks: tensor-parallel communication pipelined with the
  matmuls (``tp_overlap``), and for ZeRO-3/FSDP whether weights are freed after the forward pass
  (``reshard_after_forward``) and over how many data-parallel ranks the state is sharded
  (``shard_group``: HSDP shards inside a group and replicates across groups).

**Rank order.** Ranks are numbered with ``tp`` fastest, then ``cp``, then ``dp``, then ``pp``
(Megatron-Core's default order ``tp-cp-ep-dp-pp``): a TP group is ``tp`` consecutive GPUs, a CP
group strides by ``tp``, a DP group by ``tp * cp``, a pipeline by ``tp * cp * dp``. For the experts the same
GPUs are numbered ``expert_tp`` fastest, then ``ep``: an expert-parallel group is ``ep`` GPUs striding by
``expert_tp``, so it stays inside a node while ``expert_tp x ep`` does not exceed the node. So which links
each group uses follows from the layout (:func:`atscale.parallelism.rank_groups`).

The memory chapter asks what a plan costs in bytes (:func:`atscale.memory.breakdown`), the
parallelism chapter what it costs in seconds. Only what a plan is on its own is checked here
(positive whole degrees, known names, a batch that divides); whether it suits a model and a
cluster (``tp`` dividing the heads, ``pp`` the layers, the GPU count) is checked by the modules
that know the model and the cluster.

FSDP's sharding strategies are ZeRO stages under other names (PyTorch FSDP documentation,
``ShardingStrategy``): ``NO_SHARD`` is stage 0 (DDP), ``SHARD_GRAD_OP`` stage 2 and ``FULL_SHARD``
stage 3; ``HYBRID_SHARD`` is stage 3 inside a node and replication across nodes.

Sources: Shoeybi et al. (2019), Megatron-LM (tensor parallelism); Narayanan et al. (2021),
sec. 2 (pipeline schedules, the 1F1B and interleaved schedules, PTD-P); Rajbhandari et al. (2020),
ZeRO (stages 1-3); Korthikanti et al. (2022) (sequence parallelism, selective recomputation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import _validate as v
from . import _validate as _v
from .tables import readable

__all__ = ["Plan", "SCHEDULES", "SCHEDULE_NAMES", "RECOMPUTE", "RECOMPUTE_MODULES", "FSDP_STRATEGIES", "CP_ALGORITHMS",
           "PLACEMENT_ORDERS", "FP8_CACHES"]

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "dualpipe", "dualpipev", "zb-v")
"""Pipeline schedules: GPipe (all forwards, then all backwards; Huang et al. 2019), 1F1B
(PipeDream-Flush; Narayanan et al. 2021, sec. 2.2.1), interleaved 1F1B (sec. 2.2.2), the zero-bubble
schedules ZB-H1 and ZB-H2 (Qi et al. 2024, sec. 2), DualPipe (DeepSeek-AI 2024, sec. 3.2.1), and the two
V-shaped schedules with two half-size stages per GPU: DualPipeV (DualPipe cut in half; DeepSeek-AI's DualPipe
repository) and ZB-V (Qi et al. 2024, arXiv version; Qi et al. 2024b, "Pipeline Parallelism with Controllable
Memory"); see
:mod:`atscale.pipeline`. New names go at the end: a schedule's index is its code in vectorised arrays."""
SCHEDULE_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved 1F1B", "zb-h1": "ZB-H1",
                  "zb-h2": "ZB-H2", "dualpipe": "DualPipe", "dualpipev": "DualPipeV", "zb-v": "ZB-V"}
"""Each schedule as the book writes it (labels, descriptions, explorers): one spelling everywhere."""

RECOMPUTE = ("none", "selective", "full")
"""Activation recomputation: none; selective (attention scores only; Korthikanti et al. 2022,
sec. 5; or the operators of :attr:`Plan.recompute_modules`); full (each layer's input kept, the layer recomputed
in the backward pass)."""

RECOMPUTE_MODULES = ("core_attn", "layernorm", "act", "mlp", "mla_up_proj", "alternate_mm")
"""The parts of a layer selective recomputation can recompute instead of storing their outputs, named as
Megatron-Core's ``--recompute-modules`` names them (``TransformerConfig.recompute_modules``; PyTorch's
per-operator policies, ``torch.utils.checkpoint.create_selective_checkpoint_contexts``, express the same lists):

* ``"core_attn"``: the attention core (its ``s x s`` scores, when the kernel stores them; Korthikanti et al.
  2022, sec. 5) — the default, and the whole of the book's ``"selective"`` before lists;
* ``"layernorm"``: the two norms (their outputs, the inputs of the QKV and MLP blocks);
* ``"act"``: the MLP's activation function (SwiGLU's product or GELU's output, the input of the down
  projection; Megatron-Core's ``moe_act`` for the experts);
* ``"mlp"``: the whole MLP (all its inner tensors; its forward GEMMs run again); a mixture of experts' MLP is its
  experts (Megatron-Core's ``moe``);
* ``"mla_up_proj"``: multi-head latent attention's up-projections and the rotary embedding after them (the
  queries, keys and values the attention core reads are made again from the stored latents; Megatron-Core's
  ``mla_up_proj``; DeepSeek-V3 sec. 3.2.3); nothing to recompute in a model without MLA;
* ``"alternate_mm"``: every second matmul of the layer in the order it runs, with what lies between them and
  the stored outputs of the others (torchtitan's per-operator policy, ``selective_ac_option = "op"``: it saves the
  outputs of the matmuls, the attention kernel and the tensor-parallel reduce-scatters "except every second mm"
  and recomputes the rest; pytorch/torchtitan ``parallelize_llama.py``, ``_save_list``, at 9dec370 of
  December 2024 and 820504e of June 2025). In a Llama block (``wq``, ``wk``, ``wv``, ``wo``, ``w1``, ``w3``,
  ``w2``) the key projection, the attention output projection and the MLP's up projection (the down projection
  without a gate) run again, with the rotary embedding and the residual sum they feed, and under sequence
  parallelism the two all-gathers of the norms' outputs (the policy keeps no all-gather's output); the down
  projection's output, which nothing else keeps, is stored. torchtitan's whole policy is
  ``("layernorm", "act", "alternate_mm")``: its norms and activation are recomputed too, its attention core is
  not. Under multi-head latent attention there is no key projection of its own to count.

New names go at the end: a module's index is its bit in vectorised arrays."""

FP8_CACHES = ("none", "transformer-engine", "deepseek-v3")
"""What an FP8 step keeps for the backward pass in one byte per value instead of two (the weight-gradient GEMM of
an FP8 linear layer reads its input in FP8, so the input can be stored that way; :func:`atscale.memory.
fp8_cache_savings` has the bytes):

* ``"none"``: every stored activation in 16 bits (torchao's ``Float8Linear`` saves its high-precision input,
  ``float8_linear.py``; the memory model before November 2026);
* ``"transformer-engine"``: each FP8 linear layer keeps its own input quantised, one byte per value (Transformer
  Engine v2.8, ``module/linear.py`` and ``module/layernorm_mlp.py``: the row-wise copy is dropped and the
  column-wise FP8 copy saved for the weight gradient): both norms' outputs, the down projection's input and the
  experts' dispatched inputs; the attention kernel keeps its own 16-bit output beside the output projection's FP8
  copy, so that tensor costs a byte more, not less (unless the attention core is recomputed);
* ``"deepseek-v3"``: DeepSeek-V3's low-precision activations (DeepSeek-AI 2024, sec. 3.3.3): every linear
  layer's input in FP8, the attention output once, in a 12-bit E5M6 format shared by the attention backward and
  the output projection, and the inputs of the MoE's SwiGLU in FP8 (its output recomputed: recompute module
  ``"act"``).

New names go at the end: a policy's index is its code in vectorised arrays."""

PLACEMENT_ORDERS = ("tp-cp-pp-dp", "tp-cp-dp-pp")
"""The orders in which a job's ranks can be numbered, innermost first; ranks fill nodes, racks and pods in that
order, so the order decides which level of the network each parallel dimension's traffic crosses:

* ``"tp-cp-pp-dp"``: data parallelism outermost, Meta's order for Llama 3 (Llama Team 2024, sec. 3.3.2: tensor
  parallelism needs the most bandwidth and the least latency; data parallelism tolerates latency and overlaps
  with computation). A pipeline's neighbouring stages are ``tp cp`` ranks apart.
* ``"tp-cp-dp-pp"``: the pipeline outermost, Megatron-Core's default (``initialize_model_parallel``, order
  ``tp-cp-ep-dp-pp``); a data-parallel group's members are ``tp cp`` ranks apart, neighbouring stages
  ``tp cp dp``.

Experts' groups are ``ep x expert_tp`` consecutive GPUs in both (Megatron-Core folds them inside the
data-parallel group)."""

def _rank_strides(plan, order: str) -> dict:
    """Ranks between neighbouring members of a group of each dimension (``"tp"``, ``"cp"``, ``"pp"``, ``"dp"``) when
    ranks are numbered in ``order`` (one of :data:`PLACEMENT_ORDERS`, checked by the caller): the one statement of
    the orders that :func:`atscale.parallelism.rank_groups`, :func:`atscale.collectives.dimension_tiers` and the
    rank map read."""
    inner = plan.tp * plan.cp
    outer = {"pp": inner, "dp": inner * plan.pp} if order == "tp-cp-pp-dp" else {"dp": inner, "pp": inner * plan.dp}
    return {"tp": 1, "cp": plan.tp, **outer}


CP_ALGORITHMS = ("ring", "all-gather", "ulysses")
"""How context parallelism gives every query the keys and values it attends to (:func:`atscale.parallelism.
context_parallel_bytes` has each one's traffic):

* ``"ring"``: each rank passes its block of keys and values to the next, ``cp - 1`` times, while it computes
  attention on the block at hand, so the exchange hides behind attention (Liu et al. 2023, ring attention;
  Megatron-Core/Transformer Engine ``cp_comm_type="p2p"``);
* ``"all-gather"``: each rank all-gathers the keys and values of the whole sequence before attention and
  computes its own queries' attention; the all-gather sits on the critical path (Llama Team 2024, The Llama 3
  Herd of Models, sec. 3.3.2; Transformer Engine ``cp_comm_type="all_gather"``);
* ``"ulysses"``: an all-to-all turns each rank's queries, keys and values for ``s / cp`` tokens and all heads
  into the whole sequence for ``1 / cp`` of the heads, and one more all-to-all turns attention's output back,
  both on the critical path; the heads must divide by ``cp`` (Jacobs et al. 2023, DeepSpeed Ulysses, sec. 3;
  Transformer Engine ``cp_comm_type="a2a"``).

New names go at the end: an algorithm's index is its code in vectorised arrays."""

FSDP_STRATEGIES = {"NO_SHARD": 0, "SHARD_GRAD_OP": 2, "FULL_SHARD": 3, "HYBRID_SHARD": 3}
"""PyTorch FSDP sharding strategy -> the equivalent ZeRO stage (HYBRID_SHARD: stage 3 within a
node, replicated across nodes)."""


def _modules_arg(value, name: str = "recompute_modules") -> tuple:
    """``value`` (names of :data:`RECOMPUTE_MODULES`, a string or any iterable of them) as a tuple in that order;
    ``ValueError`` naming ``name`` for an unknown or repeated name, or none."""
    names = (value,) if isinstance(value, str) else value
    try:
        names = tuple(names)
    except TypeError:
        raise ValueError(f"{name}={v.show(value)} must be names among {RECOMPUTE_MODULES}") from None
    bad = [x for x in names if not isinstance(x, str) or x not in RECOMPUTE_MODULES]
    if bad or not names or len(set(names)) != len(names):
        raise ValueError(f"{name}={v.show(value)} must be one or more distinct names among {RECOMPUTE_MODULES}")
    return tuple(m for m in RECOMPUTE_MODULES if m in names)


@dataclass(frozen=True)
class Plan:
    """A parallel layout and the way each replica runs a step.

    Attributes:
        tp, pp, dp, cp: tensor-, pipeline-, data- and context-parallel degrees (whole numbers
            >= 1); the plan uses ``tp * cp * pp * dp`` GPUs (Megatron-Core's convention: ``dp``
            counts the replicas, apart from ``cp``). The gradients are reduced (and ZeRO shards
            the state) over the ``dp * cp`` GPUs that hold the same weights.
        micro_batch: sequences per micro-batch, per replica.
        global_batch: sequences per optimizer step across all replicas, a multiple of
            ``micro_batch * dp``; ``None`` when only the per-GPU memory matters (then a step is
            taken as one micro-batch per replica).
        zero_stage: 0 (replicate the model state), 1 (shard the optimizer state over ``dp``),
            2 (+ gradients), 3 (+ weights); see :data:`FSDP_STRATEGIES` for FSDP's names.
        schedule: one of :data:`SCHEDULES`.
        virtual_stages: model chunks per GPU of the interleaved schedule (``v``); 1 otherwise.
        recompute: one of :data:`RECOMPUTE`.
        sequence_parallel: Megatron sequence parallelism (needs ``tp > 1``).
        account_for_embedding, account_for_loss: count the embedding as one layer of the first
            pipeline stage, the output layer and loss as one layer of the last (Megatron-Core's
            ``account_for_*_in_pipeline_split``).
        cp_algorithm: how context parallelism exchanges keys and values, one of :data:`CP_ALGORITHMS`
            (``"ring"`` by default; irrelevant when ``cp`` is 1).
        tp_overlap: tensor-parallel (sequence-parallel) communication pipelined with the matmuls
            it feeds (Transformer Engine's comm-GEMM overlap, TorchTitan's async TP; Wang et al.
            2023). On by default, as current frameworks run; ``False`` is the 2021-22 Megatron-LM
            behaviour (the A100-era records set it).
        reshard_after_forward: ZeRO-3/FSDP frees the gathered weights after each layer's forward
            and gathers them again for the backward (``True``, FSDP's default) or keeps them
            (``False``: one gather fewer per micro-batch, more memory; Llama 3's choice).
        shard_group: ZeRO/FSDP shards over groups of this many of the ``dp * cp`` ranks and
            replicates across groups (HSDP); ``None`` shards over all of them.
        ep: expert-parallel degree (mixtures of experts): the routed experts of each MoE layer spread over ``ep``
            GPUs of a stage (1: every GPU holds every expert).
        expert_tp: tensor-parallel degree inside each expert; ``None`` means ``tp`` (Megatron-Core's default).
        a2a_overlap: the all-to-all of one micro-batch runs behind the computation of another (DeepSeek's
            DualPipe pairs a forward and a backward chunk for this; DeepSeek-AI 2024, sec. 3.2.1); ``False``: the
            all-to-alls are exposed.
        expert_imbalance: tokens routed to the busiest expert over the mean (>= 1): the busiest expert and its GPU
            set the pace of a MoE layer. 1.0 is perfect balance.
        capacity_factor: each expert takes at most this multiple of its mean load and drops the rest (GShard,
            Switch; Fedus et al. 2022, sec. 2.2); ``None``: no cap (dropless, as Megatron-Core and DeepSeek-V3
            train). The busiest expert then processes ``min(expert_imbalance, capacity_factor)`` times the mean.
        recompute_modules: with ``recompute="selective"``, the parts of each layer recomputed (names of
            :data:`RECOMPUTE_MODULES`, in any order; stored in that order); ``None``: ``("core_attn",)``. Priced in
            both time (their forward runs again) and memory (their outputs are not stored).
        pp_overlap: the pipeline's point-to-point sends run behind the next chunk's computation instead of
            between chunks (Megatron-Core's ``overlap_p2p_comm`` for the interleaved schedule; MegaScale's
            pipeline overlap, Jiang et al. 2024, sec. 3.2): only the sends of the pipeline's fill and drain and
            what the computation cannot cover stay exposed. ``False`` (default): every send exposed, as the
            2021-22 Megatron-LM ran them.
        fp8_cache: what an FP8 step stores in one byte per value, one of :data:`FP8_CACHES` (``"none"`` by
            default: 16-bit activations, the conservative reading). A BF16 step has no FP8 copies to keep and
            ignores it.
        order: how the ranks are numbered, one of :data:`PLACEMENT_ORDERS`, or ``None`` (default) for the
            placement each network gets when none is named: Megatron-Core's order (``"tp-cp-dp-pp"``) on a network
            of one switch, data parallelism outermost (``"tp-cp-pp-dp"``, as Meta places Llama 3 on its tiered
            cluster) on a multi-tier fabric. The step time prices where the pipeline's sends and the data-parallel
            groups land (:func:`atscale.collectives.dimension_tiers`, :func:`atscale.parallelism.rank_groups`).
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    micro_batch: int = 1
    global_batch: int | None = None
    zero_stage: int = 0
    schedule: str = "1f1b"
    virtual_stages: int = 1
    recompute: str = "none"
    sequence_parallel: bool = False
    account_for_embedding: bool = False
    account_for_loss: bool = False
    tp_overlap: bool = True
    reshard_after_forward: bool = True
    shard_group: int | None = None
    ep: int = 1
    expert_tp: int | None = None
    a2a_overlap: bool = False
    expert_imbalance: float = 1.0
    capacity_factor: float | None = None
    cp_algorithm: str = "ring"
    pp_overlap: bool = False
    recompute_modules: tuple | None = None
    order: str | None = None
    fp8_cache: str = "none"

    def __post_init__(self):
        for name in ("tp", "pp", "dp", "cp", "micro_batch", "virtual_stages", "ep"):
            object.__setattr__(self, name, v.count(name, getattr(self, name)))
        if self.global_batch is not None:
            object.__setattr__(self, "global_batch", v.count("global_batch", self.global_batch))
            per_round = self.micro_batch * self.dp
            if self.global_batch % per_round:
                raise ValueError(f"global_batch={self.global_batch} must be a multiple of micro_batch x dp = "
                                 f"{self.micro_batch} x {self.dp} = {per_round} (whole micro-batches per replica)")
        object.__setattr__(self, "zero_stage", v.count("zero_stage", self.zero_stage, low=0, high=3))
        v.choice("schedule", self.schedule, SCHEDULES)
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual_stages={self.virtual_stages} needs schedule='interleaved' "
                             f"(got schedule={self.schedule!r})")
        if self.schedule == "interleaved" and self.pp == 1:
            raise ValueError("schedule='interleaved' needs a pipeline: pp=1 given, pp >= 2 needed")
        if self.schedule == "dualpipe" and self.pp % 2:
            raise ValueError(f"schedule='dualpipe' feeds micro-batches in at both ends of the pipeline: it needs an "
                             f"even pp >= 2 (pp={self.pp} given)")
        v.choice("recompute", self.recompute, RECOMPUTE)
        if self.recompute_modules is not None:
            object.__setattr__(self, "recompute_modules", _modules_arg(self.recompute_modules))
            if self.recompute != "selective":
                raise ValueError(f"recompute_modules={self.recompute_modules} needs recompute='selective' "
                                 f"(got recompute={self.recompute!r})")
        v.choice("cp_algorithm", self.cp_algorithm, CP_ALGORITHMS)
        v.choice("fp8_cache", self.fp8_cache, FP8_CACHES)
        if self.order is not None:
            v.choice("order", self.order, PLACEMENT_ORDERS)
        for name in ("sequence_parallel", "account_for_embedding", "account_for_loss", "tp_overlap",
                     "reshard_after_forward", "a2a_overlap", "pp_overlap"):
            object.__setattr__(self, name, v.flag(name, getattr(self, name)))
        if self.shard_group is not None:
            group = v.count("shard_group", self.shard_group)
            if (self.dp * self.cp) % group:
                raise ValueError(f"shard_group={group} must divide dp x cp = {self.dp} x {self.cp} = "
                                 f"{self.dp * self.cp} (the ranks that hold the same weights)")
            object.__setattr__(self, "shard_group", group)
        self._check_experts()
        if self.sequence_parallel and self.tp == 1:
            raise ValueError("sequence_parallel=True splits activations over the tensor-parallel group: "
                             "it needs tp > 1 (tp=1 given)")

    def _check_experts(self):
        if self.expert_tp is not None:
            object.__setattr__(self, "expert_tp", v.count("expert_tp", self.expert_tp))
        folded = self.tp * self.cp * self.dp
        if folded % (self.etp * self.ep):
            raise ValueError(f"expert_tp x ep = {self.etp} x {self.ep} = {self.etp * self.ep} must divide tp x cp x "
                             f"dp = {self.tp} x {self.cp} x {self.dp} = {folded} (the experts fold onto a stage's GPUs)")
        object.__setattr__(self, "expert_imbalance", v.number("expert_imbalance", self.expert_imbalance, low=1,
                                                              scalar=True))
        if self.capacity_factor is not None:
            object.__setattr__(self, "capacity_factor", v.number("capacity_factor", self.capacity_factor, low=1,
                                                                 scalar=True))

    @property
    def etp(self) -> int:
        """Tensor-parallel degree inside each expert: ``expert_tp``, else ``tp``."""
        return self.tp if self.expert_tp is None else self.expert_tp

    @property
    def expert_load(self) -> float:
        """Tokens at the busiest expert over the mean: ``expert_imbalance``, capped by ``capacity_factor``."""
        cap = self.capacity_factor
        return self.expert_imbalance if cap is None else min(self.expert_imbalance, cap)

    @property
    def gpus(self) -> int:
        """GPUs the plan occupies: ``tp * cp * pp * dp``."""
        return self.tp * self.cp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        """Micro-batches each replica runs per optimizer step (gradient-accumulation steps, ``m``)."""
        if self.global_batch is None:
            return 1
        return self.global_batch // (self.micro_batch * self.dp)

    def with_micro_batch(self, micro_batch: int) -> Plan:
        """The same plan with another micro-batch and the global batch left open."""
        return replace(self, micro_batch=micro_batch, global_batch=None)

    def describe(self) -> str:
        """A short label, e.g. ``'TP=8 PP=4 DP=32 ZeRO-1'``."""
        cp = f" CP={self.cp}" if self.cp > 1 else ""
        if self.cp > 1 and self.cp_algorithm != "ring":
            cp += f" ({self.cp_algorithm})"
        ep = f" EP={self.ep}" if self.ep > 1 else ""
        return f"TP={self.tp}{cp} PP={self.pp} DP={self.dp}{ep} ZeRO-{self.zero_stage}"

    def __str__(self) -> str:
        extras = [f"micro-batch {self.micro_batch}"]
        if self.global_batch is not None:
            extras.append(f"global batch {self.global_batch:,} ({self.micro_batches} micro-batches per replica)")
        extras.append(SCHEDULE_NAMES[self.schedule] + (f" (v={self.virtual_stages})" if self.virtual_stages > 1 else ""))
        if self.sequence_parallel:
            extras.append("sequence parallel")
        if self.recompute != "none":
            modules = f" ({', '.join(self.recompute_modules)})" if self.recompute_modules else ""
            extras.append(f"{self.recompute} recomputation{modules}")
        if self.tp > 1 and not self.tp_overlap:
            extras.append("TP communication not overlapped")
        if self.zero_stage == 3 and not self.reshard_after_forward:
            extras.append("no reshard after forward")
        if self.shard_group is not None:
            extras.append(f"sharded over groups of {self.shard_group}")
        if self.ep > 1 and self.expert_tp is not None and self.expert_tp != self.tp:  # no experts: no expert TP
            extras.append(f"expert TP={self.expert_tp}")
        if self.a2a_overlap:
            extras.append("all-to-all overlapped")
        if self.pp > 1 and self.pp_overlap:
            extras.append("pipeline sends overlapped")
        if self.expert_load > 1:
            extras.append(f"busiest expert x{self.expert_load:g}")
        if self.order is not None:
            extras.append(f"ranks ordered {self.order}")
        if self.fp8_cache != "none":
            extras.append(f"FP8 activations cached ({self.fp8_cache})")
        return f"{self.describe()} on {self.gpus:,} GPUs; " + ", ".join(extras)


# --------------------------------------------------------------------------------------
# How a pipeline splits the layers (here, below memory, so that memory and parallelism share one split)
# --------------------------------------------------------------------------------------
@readable("Layers per stage", lambda s: f"first stage {s.first}, fullest middle stage {s.middle}, last stage {s.last}")
@dataclass(frozen=True)
class StageLayers:
    """Transformer layers held by the first stage, the fullest middle stage and the last stage (counts,
    arrays when the inputs are); :func:`stage_layers`."""

    first: object
    middle: object
    last: object

    @property
    def fullest(self):
        """Layers of the fullest stage (a count, or an array where the fields are arrays): the stage that decides a
        pipeline's memory and its pace."""
        if any(isinstance(x, np.ndarray) for x in (self.first, self.middle, self.last)):
            return np.maximum(np.maximum(self.first, self.middle), self.last)
        return max(self.first, self.middle, self.last)


def _stage_layers(l, pp, v, emb, loss, xp=np, extra_last=0.0) -> StageLayers:
    """:func:`stage_layers` on plan fields (numbers or arrays); ``extra_last`` more layers on the last stage, outside
    the split (the multi-token prediction modules' blocks, :attr:`atscale.models.TransformerConfig.mtp_layers`)."""
    slots = l + emb + loss
    chunks = pp * v
    q, r = slots // chunks, slots % chunks
    # Chunk k (0-based, k = j*pp + i for stage i) takes q + 1 slots when k < r. Stage i holds
    # #{j < v : j*pp + i < r} of those fuller chunks.
    first = v * q + xp.minimum(xp.ceil(r / pp), v) - emb
    middle = xp.where(pp > 2, v * q + xp.minimum(xp.ceil(xp.maximum(r - 1, 0.0) / pp), v), 0.0)
    last = v * q + xp.minimum(xp.floor(r / pp), v) - loss
    first = xp.where(pp > 1, first, l + extra_last)  # one stage holds every layer, whatever is accounted for
    return StageLayers(first, middle, xp.where(pp > 1, last + extra_last, first))


def stage_layers(num_layers: int, pp, virtual_stages=1, *, account_for_embedding=False,
                 account_for_loss=False) -> StageLayers:
    """How ``num_layers`` transformer layers split over ``pp`` stages of ``virtual_stages`` chunks each.

    The ``l`` layers, plus one slot for the embedding and one for the output layer and loss when they are
    accounted for (Megatron-Core's ``account_for_embedding_in_pipeline_split`` and
    ``account_for_loss_in_pipeline_split``), are cut into ``pp x v`` chunks as evenly as possible: each
    holds ``floor(slots / (pp v))`` and the first ``slots mod (pp v)`` one more. Chunk ``k`` runs on stage
    ``k mod pp`` (the interleaved placement; Narayanan et al. 2021, sec. 2.2.2), so stage 0 always holds the
    most. Llama 3 405B's "one fewer layer on the first and last stage" (126 layers, 16 stages) is
    ``stage_layers(126, 16, account_for_embedding=True, account_for_loss=True)``: 7, 8 and 7. Never refuses a
    split because it is uneven; the fullest stage sets the pipeline's pace. Vectorised over ``pp`` and
    ``virtual_stages``.
    """
    l = _v.count("num_layers", num_layers)
    p, v = (np.asarray(_v.count(n, x, scalar=False), dtype=float) for n, x in
            (("pp", pp), ("virtual_stages", virtual_stages)))
    emb, loss = (float(_v.flag(n, x)) for n, x in (("account_for_embedding", account_for_embedding),
                                                    ("account_for_loss", account_for_loss)))
    if np.any(p * v > l + emb + loss):
        raise ValueError(f"pp={_v.show(pp)} x virtual_stages={_v.show(virtual_stages)} chunks exceed the "
                         f"{l + int(emb + loss)} layer slots: some chunks would be empty")
    out = _stage_layers(float(l), p, v, emb, loss)
    conv = (lambda x: int(x)) if np.ndim(out.first) == 0 else (lambda x: np.asarray(x).astype(int))
    return StageLayers(conv(out.first), conv(out.middle), conv(out.last))
