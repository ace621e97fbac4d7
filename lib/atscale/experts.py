"""Mixtures of experts: parameters that cost memory but no FLOPs, and the all-to-all that pays for them.

The module follows the chapter. First the arithmetic of a mixture of experts (MoE): its *total* parameters
(what memory holds) against its *active* ones (what a token multiplies by), and how the publishers of the
catalog's models count them (:func:`moe_summary`, :func:`published_count`). Then the collective that expert parallelism
adds, the all-to-all, against the all-reduce of the same buffer (:func:`all_to_all_vs_all_reduce`), and how many
copies of a token cross the network with and without deduplication per node and node-limited routing
(:func:`cross_node_copies`). Then load balance: the busiest expert sets the pace, a capacity factor drops what
overflows (:func:`routing_imbalance`, :func:`dropped_fraction`). Last, the step: expert parallelism swept over
its degree (:func:`ep_sweep`), the all-to-all against the computation it must hide behind
(:func:`a2a_compute_ratio`), and the worked example, DeepSeek-V3's GPU-hours per trillion tokens
(:func:`deepseek_v3_estimate`).

Step times come from :func:`atscale.parallelism.step_time` (and its vectorised twin
:func:`~atscale.parallelism.evaluate`), collectives from :mod:`atscale.collectives`, parameter counts and FLOPs
from :mod:`atscale.models`; nothing here re-implements them. Units are SI: seconds, bytes, FLOP; GPU-time is
in GPU-seconds (a GPU-hour is 3,600 of them).

Sources: Shazeer et al. (2017), sparsely-gated MoE; Lepikhin et al. (2021), GShard; Fedus, Zoph and Shazeer
(2022), Switch Transformers, JMLR 23 (capacity factor, load-balancing loss); Gale et al. (2023), MegaBlocks
(dropless MoE, grouped GEMM); Jiang et al. (2024), Mixtral of Experts; DeepSeek-AI (2024), DeepSeek-V3
Technical Report, arXiv:2412.19437.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .tables import readable
from . import _validate as _v
from . import collectives, hardware, kernels, memory, models, parallelism, runs
from ._numeric import as_scalar
from .plan import Plan

__all__ = [
    "DEEPSEEK_V3_RUN", "MoeSummary", "moe_summary", "dense_twin", "PublishedCount", "published_count", "AllToAllComparison",
    "all_to_all_vs_all_reduce", "cross_node_copies", "in_node_copies", "DEEPEP_SETTING", "DEEPEP_STATED",
    "DEEPEP_NODE", "DEEPEP_DRAWS", "DispatchBenchmark", "deepep_comparison", "deepep_link_shares",
    "routing_imbalance", "dropped_fraction",
    "EpSweep", "ep_sweep",
    "A2ARatio", "a2a_compute_ratio", "DEEPSEEK_V3_CLUSTER", "DEEPSEEK_V3_PLAN", "DEEPSEEK_V3_GPU_HOURS_PER_TRILLION",
    "DEEPSEEK_V3_PRETRAINING", "gpu_seconds_per_trillion", "DeepSeekEstimate", "deepseek_v3_estimate",
    "DEEPSEEK_V3_OPTIMIZER", "DEEPSEEK_V3_BATCH_RAMP", "BatchRamp", "deepseek_v3_batch_ramp",
    "MCORE_MEMORY_SOURCE", "MCORE_MEMORY", "MCORE_RECOMPUTE_SAVINGS", "MCORE_FP8_SAVING", "MCORE_PERMUTATION_SAVING",
    "MoeMemoryCheck", "mcore_memory_check", "mcore_memory_table",
]

_HOUR = 3600.0


def _moe_model(name: str, value) -> models.TransformerConfig:
    m = models.model_arg(name, value)
    if not m.is_moe:
        raise ValueError(f"{name}={m.name!r} is a dense model (num_experts=0); give a mixture of experts, e.g. "
                         f"{', '.join(x.name for x in models.MOE_MODELS)}")
    return m


# --------------------------------------------------------------------------------------
# Total against active: the arithmetic of a mixture of experts
# --------------------------------------------------------------------------------------
@readable("Mixture of experts")
@dataclass(frozen=True)
class MoeSummary:
    """What a mixture of experts holds and what one token uses.

    ``total``: every parameter (memory); ``active``: the parameters one token goes through, embeddings included;
    ``matmul_active``: the weights of the matrix multiplies one token makes (the ``N`` of ``6N``);
    ``flops_per_token``: training FLOPs per token (``6N + 12 l s h``, :func:`atscale.models.training_flops_per_token`);
    ``all_experts_flops_per_token``: the same if every token went through every expert (a dense model of the same
    total size and shape); ``routed_params``: the routed experts' parameters, what expert parallelism shards.
    """

    name: str
    total: int
    active: int
    matmul_active: int
    routed_params: int
    flops_per_token: float
    all_experts_flops_per_token: float

    @property
    def active_share(self) -> float:
        """``active / total``: the fraction of the weights one token touches."""
        return self.active / self.total

    @property
    def flops_ratio(self) -> float:
        """FLOPs per token over those of the same model with every expert active (``< 1``: what sparsity saves)."""
        return self.flops_per_token / self.all_experts_flops_per_token

    def __repr__(self):
        return (f"MoeSummary({self.name}: {self.total / 1e9:.1f}B total, {self.active / 1e9:.1f}B active "
                f"({self.active_share:.1%}); {self.flops_per_token / 1e9:.0f} GFLOP per token, {self.flops_ratio:.1%} "
                f"of all experts)")


def moe_summary(model, seq_length=None) -> MoeSummary:
    """Total and active parameters of a mixture of experts and its training FLOPs per token.

    ``P_active = P - L_moe (E - k) P_expert`` (every routed expert a token skips, in each of the ``L_moe`` MoE
    layers); FLOPs per token ``6 N_active + 12 l s h`` (Fedus et al. 2022, sec. 2: a token's FLOPs follow the
    ``k`` experts it is routed to), against the model with ``k = E`` (every expert active). ``seq_length``
    (tokens; default the model's) sets the attention term. The classic misreading: "8x7B" is not 56B, and a token
    does not use ``k/E`` of the model: attention, embeddings and shared experts are used by every token.
    """
    m = _moe_model("model", model)
    every = dataclasses.replace(m, experts_per_token=m.num_experts)
    return MoeSummary(m.name, m.num_params, m.active_params, m.matmul_params, m.routed_expert_params,
                      float(models.training_flops_per_token(m, seq_length)),
                      float(models.training_flops_per_token(every, seq_length)))


def dense_twin(model) -> models.TransformerConfig:
    """The dense model with a mixture of experts' *active* shape: every MoE layer's experts replaced by one MLP of
    width ``(k + shared) f_e`` (:attr:`~atscale.models.TransformerConfig.active_ffn_size`), the router dropped.
    It does the same FLOPs per token (to within the router's ``h E``) and holds only the active weights."""
    m = _moe_model("model", model)
    return dataclasses.replace(m, name=f"{m.name} (dense twin)", num_experts=0, experts_per_token=0,
                               expert_ffn_size=None, shared_experts=0, dense_layers=0, max_routed_nodes=None,
                               node_dedup=None, fp8_dispatch=False,
                               ffn_hidden_size=int(round(m.active_ffn_size)),
                               source=f"the dense twin of {m.name}: its active shape, no experts")


@dataclass(frozen=True)
class PublishedCount:
    """A model's parameter counts against its publisher's, in the publisher's convention.

    ``active`` is counted as the publisher counts it: without the input embedding (a look-up, no FLOPs) where
    ``counts_embedding`` is False. ``total_error``, ``active_error``: counted / published - 1. ``*_rounds``: the
    count rounds to the published figure at its significant figures."""

    name: str
    total: int
    published_total: float
    active: int
    published_active: float
    counts_embedding: bool
    total_rounds: bool
    active_rounds: bool

    @property
    def total_error(self) -> float:
        """``total / published_total - 1``."""
        return self.total / self.published_total - 1

    @property
    def active_error(self) -> float:
        """``active / published_active - 1``."""
        return self.active / self.published_active - 1


def _rounds_to(value: float, published: float, figures: int) -> bool:
    step = 10.0 ** (math.floor(math.log10(published)) - figures + 1)
    return abs(value - published) <= step / 2 + 1e-9 * published


def published_count(model) -> PublishedCount:
    """``model``'s total and active parameters next to the published ones (:data:`atscale.models.PUBLISHED_COUNTS`).

    Publishers differ on what "active" counts: Mistral (Mixtral) and Qwen count every parameter a token touches,
    embedding look-up included; DeepSeek and OpenAI (gpt-oss) leave the input embedding out. Sources: as in
    :data:`~atscale.models.PUBLISHED_COUNTS`."""
    m = _moe_model("model", model)
    if m.name not in models.PUBLISHED_COUNTS:
        raise ValueError(f"model={m.name!r} has no published counts; known: {', '.join(models.PUBLISHED_COUNTS)}")
    (total, t_fig), (active, a_fig), with_embedding = models.PUBLISHED_COUNTS[m.name]
    counted = m.active_params - (0 if with_embedding else m.vocab_size * m.hidden_size)
    return PublishedCount(m.name, m.num_params, total, counted, active, with_embedding,
                          _rounds_to(m.num_params, total, t_fig), _rounds_to(counted, active, a_fig))


# --------------------------------------------------------------------------------------
# The all-to-all
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AllToAllComparison:
    """One all-to-all against one all-reduce of the same ``size`` (bytes per GPU) over ``ranks`` GPUs (arrays).

    Times in seconds; ``*_nic_bytes``: bytes each GPU sends through its network card; ``*_busbw``: nccl-tests'
    bus bandwidth, ``size / time`` times ``(n - 1)/n`` (all-to-all) or ``2(n - 1)/n`` (all-reduce), bytes/s."""

    size: object
    ranks: object
    gpus_per_node: int
    a2a_time: object
    all_reduce_time: object
    a2a_nic_bytes: object
    all_reduce_nic_bytes: object

    @property
    def a2a_busbw(self):
        """All-to-all bus bandwidth, bytes/s (nccl-tests' convention; 0 on one rank)."""
        n = np.asarray(self.ranks, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return as_scalar(np.where(n > 1, self.size / np.asarray(self.a2a_time) * (n - 1) / n, 0.0))

    @property
    def all_reduce_busbw(self):
        """All-reduce bus bandwidth, bytes/s (0 on one rank)."""
        n = np.asarray(self.ranks, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return as_scalar(np.where(n > 1, self.size / np.asarray(self.all_reduce_time) * 2 * (n - 1) / n, 0.0))

    @property
    def ratio(self):
        """All-to-all time over all-reduce time."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return as_scalar(np.asarray(self.a2a_time) / np.asarray(self.all_reduce_time))


def all_to_all_vs_all_reduce(size, ranks, cluster: hardware.Cluster) -> AllToAllComparison:
    """An all-to-all (:func:`atscale.collectives.all_to_all_time`) against an all-reduce of the same buffer over the
    same ``ranks`` GPUs of ``cluster`` (packed: whole nodes, or part of one).

    The all-reduce inside a node is a ring on NVLink; across ``N`` nodes it is hierarchical (reduce-scatter inside
    the node, all-reduce of ``size / g`` across nodes on one NIC per GPU, all-gather back; Jia et al. 2018), so each
    GPU sends ``2 (N - 1)/N x size / g`` through its NIC. An all-to-all has nothing to reduce: every byte bound for
    another node crosses it, ``(n - r)/n x size`` for ``r`` GPUs per node, nearly all of ``size``: across nodes it
    runs at the NIC's rate, ``g/2`` times the all-reduce's traffic. The classic misreading: comparing their *bus*
    bandwidths, whose factors differ by two (nccl-tests' PERFORMANCE.md). ``size`` in bytes and ``ranks`` may be
    arrays (broadcast); ``ranks`` must divide, or be a multiple of, the GPUs per node, and at most the cluster's.
    """
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster={_v.show(cluster)} must be an atscale.hardware.Cluster")
    m, n = _v.broadcast(size=_v.nonnegative("size", size, unit="bytes"),
                        ranks=_v.count("ranks", ranks, high=cluster.num_gpus, scalar=False,
                                       unit=f"GPUs of a {cluster.num_gpus:,}-GPU cluster"))
    m, n = np.asarray(m, dtype=float), np.asarray(n, dtype=float)
    g = cluster.node.gpus
    if np.any((n > g) & (n % g != 0)) or np.any((n < g) & (g % n != 0)):
        raise ValueError(f"ranks={_v.show(ranks)} must divide or be a multiple of the {g} GPUs per node "
                         "(whole nodes, or part of one)")
    a2a = np.asarray(collectives.all_to_all_time(m, n, cluster), dtype=float)
    nodes, inside = np.maximum(n / g, 1.0), np.minimum(n, g)
    up = collectives._scale_up(cluster.node)
    flat = np.asarray(collectives.collective_time("all-reduce", m, inside, up), dtype=float)
    hier = np.zeros_like(m)
    for k in np.unique(nodes[nodes > 1]):  # a few distinct node counts: one hierarchical call each
        sub = hardware.Cluster.of_gpus(cluster.node, int(k) * g, cluster.fabric)
        sel = nodes == k
        hier[sel] = np.asarray(collectives.hierarchical_time("all-reduce", m[sel], sub), dtype=float)
    ar = np.where(nodes > 1, hier, flat)
    return AllToAllComparison(as_scalar(m), as_scalar(n), g, as_scalar(a2a), as_scalar(ar),
                              as_scalar(m * (n - inside) / n), as_scalar(2 * (nodes - 1) / nodes * m / g))


def cross_node_copies(experts_per_token, nodes, *, num_experts=None, max_nodes=None, deduplicate=None):
    """Expected copies of one token's activations that cross the network in one dispatch (or combine).

    A token picks ``k`` of ``E`` experts spread evenly over ``N`` nodes, uniformly at random (the ideal a
    load-balancing loss aims at); its own node is one of them. Two independent choices decide the traffic:

    * ``deduplicate``: how the dispatch sends. Off, the plain all-to-all sends one copy per expert,
      ``k (1 - 1/N)`` (linearity of expectation: each copy lands on another node with probability ``(N - 1)/N``).
      On, it sends one copy per destination node and that node forwards it to its experts over NVLink
      (DeepSeek-AI 2024, sec. 3.2.2): the expected number of other nodes holding at least one of the ``k``
      experts, ``(N - 1)(1 - C(E - E/N, k) / C(E, k))`` (``(N - 1)(1 - (1 - 1/N)^k)`` without ``num_experts``);
    * ``max_nodes`` ``M``: how the router picks (node-limited routing, sec. 2.1.2): at most ``M`` nodes, its own
      among them with probability ``M/N`` when nodes are picked uniformly. With one copy per node that is at most
      ``M (1 - 1/N)`` copies; with one copy per expert it saves nothing: each expert is still on the token's own
      node with probability ``1/N``, so ``k (1 - 1/N)`` copies cross.

    ``deduplicate=None`` (the default) deduplicates exactly where ``max_nodes`` is given, as DeepSeek-V3 does both.
    Dimensionless; multiply by ``h`` and the bytes per value for bytes per token. Vectorised over
    ``experts_per_token`` and ``nodes``. The classic misreading: "node-limited routing caps the traffic at ``M``
    copies" (it caps the *nodes*, which only the per-node dispatch turns into fewer copies; ``M`` also counts the
    token's own node, which costs nothing).
    """
    k, n = (np.asarray(x, dtype=float) for x in _v.broadcast(
        experts_per_token=_v.count("experts_per_token", experts_per_token, scalar=False),
        nodes=_v.count("nodes", nodes, scalar=False)))
    limit = 0.0 if max_nodes is None else float(_v.count("max_nodes", max_nodes))  # 0: no limit
    dedup = limit > 0 if deduplicate is None else _v.flag("deduplicate", deduplicate)
    if not dedup:
        return as_scalar(parallelism._remote_copies(k, n, limit, np, dedup=False))
    missing = None  # (1 - 1/N)^k, the step-time model's
    if num_experts is not None:
        e = float(_v.count("num_experts", num_experts))
        if np.any(k > e) or np.any(e % n != 0):
            raise ValueError(f"num_experts={num_experts!r} must be at least experts_per_token="
                             f"{_v.show(experts_per_token)} and a multiple of nodes={_v.show(nodes)} (experts spread "
                             "evenly)")
        missing = _holds_none(k, e, n)
    return as_scalar(parallelism._remote_copies(k, n, limit, np, missing, dedup=True))  # the step-time model's count


def _holds_none(k: np.ndarray, e: float, groups: np.ndarray) -> np.ndarray:
    """The chance that one of ``groups`` equal groups of the ``e`` experts (a node, a GPU) holds none of a token's
    ``k`` experts, drawn without replacement: ``C(E - E/G, k) / C(E, k)``, as a product of ``k`` ratios. ``k`` and
    ``groups`` are float arrays of one shape (unchecked); dimensionless."""
    i = np.arange(int(k.max()))[:, None]
    terms = np.where(i < k.ravel(), (e - e / groups.ravel() - i) / (e - i), 1.0)
    return np.prod(np.clip(terms, 0.0, None), axis=0).reshape(k.shape)


def in_node_copies(experts_per_token, gpus_per_node, *, num_experts, ep=None, deduplicate=False):
    """Expected copies of one token's activations that one dispatch (or combine) sends over NVLink to the other
    GPUs of its node, the token's ``k`` experts picked uniformly among ``E`` spread evenly over the ``ep`` GPUs of its
    expert group, ``gpus_per_node`` of which share its node (``ep`` ``None``: the group is the node).

    * ``deduplicate`` off, Megatron-Core's all-to-all dispatcher: one copy per expert, ``k (g - 1) / ep`` (``g``:
      ``gpus_per_node``);
    * on, DeepEP's normal kernels: one copy per GPU that holds any of the token's experts (its dispatch layout counts
      tokens per rank, ``Buffer.get_dispatch_layout``, deepseek-ai/DeepEP v1.2.1), which hands it to its experts
      there: ``(g - 1)(1 - C(E - E/ep, k) / C(E, k))``. It tends to the plain count as ``E/ep`` falls to one
      expert per GPU and saves most when each GPU holds many experts.

    The step-time model's count (:func:`atscale.parallelism.step_time` with ``node_dedup``). Dimensionless;
    vectorised over ``experts_per_token`` and ``gpus_per_node``."""
    k, g = (np.asarray(x, dtype=float) for x in _v.broadcast(
        experts_per_token=_v.count("experts_per_token", experts_per_token, scalar=False),
        gpus_per_node=_v.count("gpus_per_node", gpus_per_node, scalar=False)))
    e = float(_v.count("num_experts", num_experts))
    group = g if ep is None else np.full_like(g, float(_v.count("ep", ep)))
    dedup = _v.flag("deduplicate", deduplicate)
    if np.any(k > e) or np.any(e % group != 0) or np.any(g > group):
        raise ValueError(f"num_experts={num_experts!r} must be at least experts_per_token={_v.show(experts_per_token)} "
                         f"and a multiple of ep={_v.show(gpus_per_node if ep is None else ep)}, and gpus_per_node="
                         f"{_v.show(gpus_per_node)} at most ep (experts spread evenly over the group)")
    missing = _holds_none(k, e, group)
    return as_scalar(parallelism._local_copies(k, e, g, group, dedup, np, missing))  # the step-time model's count


# --------------------------------------------------------------------------------------
# The dispatch against a published benchmark: DeepEP's normal kernels
# --------------------------------------------------------------------------------------
DEEPEP_SETTING = MappingProxyType({"tokens": 4096, "hidden": 7168, "num_experts": 256, "top_k": 8, "max_nodes": 4})
"""The setting of DeepEP's published normal-kernel benchmark (deepseek-ai/DeepEP README, "Normal kernels with
NVLink and RDMA forwarding", corrected 2025-04-22, commit 3b1045d; ``tests/test_intranode.py`` and
``tests/test_internode.py`` at that commit): tokens per GPU, hidden width, experts (256 for every group size it
publishes), experts per token, and the nodes a token may pick (``min(nodes, 4)`` across nodes, none inside one)."""

DEEPEP_STATED = MappingProxyType({"nvlink": 160e9, "nic": 50e9, "sms": 24})
"""What DeepEP's README states about its benchmark machine and kernels: "~160 GB/s NVLink maximum bandwidth" per H800
and "~50 GB/s maximum bandwidth" per 400 Gb/s NIC (bytes/s), and the SMs its example gives the normal kernels
(``Buffer.set_num_sms(24)``; deepseek-ai/DeepEP README at commit 3b1045d). For the book's comparisons; the model
prices the links at the catalog's rates (:data:`DEEPEP_NODE`)."""

DEEPEP_NODE = "HGX H800"
"""The catalog node of DeepEP's benchmark: H800 SXM with one ConnectX-7 400 Gb/s InfiniBand NIC per GPU (the README:
"~160 GB/s NVLink maximum bandwidth", "~50 GB/s maximum bandwidth" per NIC), on the catalog's InfiniBand NDR."""


@dataclass(frozen=True)
class DispatchBenchmark:
    """One row of DeepEP's published normal-kernel table beside the model (:func:`deepep_comparison`).

    ``exchange``: ``"dispatch"`` (FP8) or ``"combine"`` (BF16); ``ep``: GPUs in the expert group, ``nodes`` of
    ``gpus_per_node``; ``link``: where DeepEP counts the bandwidth (``"NVLink"`` inside one node, ``"RDMA"`` across
    nodes); ``published``: DeepEP's bottleneck bandwidth, bytes/s, counted as its scripts count it (every copy a GPU
    receives, its own included, inside a node; one copy per token and destination node, its own included, across
    nodes); ``model``: the same bytes over the model's time; ``own_node_only``: the same with NVLink carrying only
    the copies for the token's own node (no forwarding of what arrives over RDMA), bytes/s; ``nvlink_seconds``,
    ``rdma_seconds``: the model's time of each stage (they run concurrently, the slower sets the time), s;
    ``nvlink_rate``, ``network_rate``: the rates the model gives a GPU's NVLink and its NIC (the collectives
    chapter's link model, calibrated on all-reduces), bytes/s."""

    exchange: str
    ep: int
    nodes: int
    gpus_per_node: int
    link: str
    published: float
    model: float
    own_node_only: float
    nvlink_seconds: float
    rdma_seconds: float
    nvlink_rate: float
    network_rate: float

    @property
    def error(self) -> float:
        """The model's bandwidth over the published one, minus one (positive: the model is faster)."""
        return self.model / self.published - 1.0

    @property
    def seconds(self) -> float:
        """The model's time of the row's transfer, s: the slower of its two concurrent stages."""
        return max(self.nvlink_seconds, self.rdma_seconds)

    @property
    def bound(self) -> str:
        """The model's slower stage: ``"NVLink"`` or ``"RDMA"``."""
        return "NVLink" if self.nvlink_seconds >= self.rdma_seconds else "RDMA"

    @property
    def published_on_the_wire(self) -> float:
        """The published bandwidth without what DeepEP counts but no link carries, bytes/s: inside a node the copies a
        GPU sends itself, ``(g - 1)/g`` of what it receives; across nodes the copies for the token's own node,
        ``(N - 1)/N`` of its destination nodes (every GPU and every node equally likely)."""
        share = (self.gpus_per_node - 1) / self.gpus_per_node if self.nodes == 1 else (self.nodes - 1) / self.nodes
        return self.published * share


DEEPEP_DRAWS = 8192
"""Tokens drawn (seeded) to count the destinations of :func:`deepep_comparison`'s routing: two GPUs' batches of the
benchmark; the counts move by about 0.3 % from one seed to another."""


@functools.lru_cache(maxsize=None)
def _deepep_counts(ep: int, g: int, tokens: int = DEEPEP_DRAWS, seed: int = 0) -> tuple[float, float]:
    """``(nodes, GPUs)``: the mean destination nodes (its own included) and destination GPUs of one token in DeepEP's
    benchmark over ``ep`` GPUs, ``g`` per node, its routing drawn as the benchmark's scripts draw it (``tokens``
    tokens, seeded): random scores ``|N(0, 1)| + 1`` for each of the ``E`` experts; across ``N > 1`` nodes the
    ``min(N, 4)`` nodes whose best expert scores highest, then the ``k`` best experts among theirs (the best expert of
    a picked node is nearly always among them, so a token reaches nearly all the nodes it picked); in one node the
    ``k`` best of all. Drawn, not summed in closed form: the picked nodes are the ones with the highest maxima, not a
    uniform draw. Dimensionless."""
    s = DEEPEP_SETTING
    e, k, nodes = s["num_experts"], s["top_k"], ep // g
    scores = np.abs(np.random.default_rng(seed).standard_normal((tokens, e), dtype=np.float32)) + 1.0
    if nodes > 1:
        best = scores.reshape(tokens, nodes, e // nodes).max(axis=2)
        picked = min(nodes, s["max_nodes"])
        keep = np.zeros_like(best, dtype=bool)
        np.put_along_axis(keep, np.argpartition(-best, picked - 1, axis=1)[:, :picked], True, axis=1)
        scores = np.where(np.repeat(keep, e // nodes, axis=1), scores, -np.inf)
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]

    def distinct(owner):  # destinations per token: owners of its k experts, each counted once
        held = np.sort(top // owner, axis=1)
        return float(1.0 + np.count_nonzero(np.diff(held, axis=1), axis=1).mean())

    return distinct(e // nodes), distinct(e // ep)


def deepep_comparison() -> tuple[DispatchBenchmark, ...]:
    """DeepEP's published normal-kernel bandwidths (``atscale/data/kernels/deepep-normal-published.csv``: H800, 8 to 64
    GPUs) beside the model's all-to-all priced as its kernels move the bytes (:class:`DispatchBenchmark`).

    DeepEP sends a token over RDMA once to each destination node, to the GPU of the same local rank there, which
    forwards it over NVLink to the GPUs of that node holding its experts (DeepSeek-AI 2024, sec. 3.2.2): per GPU,
    ``T n B (N - 1)/N`` bytes through its NIC and ``T X B (g - 1)/g`` over NVLink, for ``n`` destination nodes and
    ``X`` destination GPUs per token (:func:`_deepep_counts`, the benchmark's routing drawn), ``T`` tokens, ``B``
    bytes per token (FP8 with a scale per 128 values for the dispatch, BF16 for the combine). The two stages overlap
    (the kernels pipeline chunks), so the slower sets the time, each priced by the step-time model's all-to-all
    (link rate and per-peer latency; :func:`atscale.collectives.all_to_all_time`). Assumed before any error was
    computed: the catalog's HGX H800 on InfiniBand NDR (:data:`DEEPEP_NODE`), copies to a GPU itself free, routing
    as the benchmark's scripts draw it. Rates in bytes/s, times in seconds."""
    rows = _deepep_rows()
    node = hardware.node(DEEPEP_NODE)
    g, s = node.gpus, DEEPEP_SETTING
    cluster = hardware.Cluster.of_gpus(node, max(r["ep"] for r in rows), hardware.fabric("InfiniBand NDR"))
    up = collectives._link_cost(collectives._scale_up(node), "ring")
    rail = collectives._link_cost(collectives._rail(cluster), "ring")

    def over_nvlink(nvl_bytes):  # the forwarding stage alone: to the node's other GPUs
        return float(collectives._all_to_all(nvl_bytes, 0.0, float(g), 1.0, up, rail))

    out = []
    for r in rows:
        ep, nodes = r["ep"], r["ep"] // g
        dest_nodes, dest_gpus = _deepep_counts(ep, g)
        copy = s["tokens"] * s["hidden"] * ((1 + 4 / 128) if r["exchange"] == "dispatch" else 2.0)  # every token once
        nvl_bytes = dest_gpus * (g - 1) / g * copy
        t_up = over_nvlink(nvl_bytes)
        t_out = float(collectives._all_to_all(0.0, dest_nodes * (nodes - 1) / nodes * copy, 1.0, float(nodes), up,
                                              rail))
        counted = (dest_gpus if nodes == 1 else dest_nodes) * copy
        own_only = max(over_nvlink(nvl_bytes / nodes), t_out)
        out.append(DispatchBenchmark(r["exchange"], ep, nodes, g, r["link"], r["gbps"] * 1e9,
                                     counted / max(t_up, t_out), counted / own_only, t_up, t_out, up.rate, rail.rate))
    return tuple(out)


def deepep_link_shares() -> tuple[float, float]:
    """``(nvlink, network)``: the share of the model's NVLink rate and of its NIC rate that DeepEP's published
    kernels move on the wire (:attr:`DispatchBenchmark.published_on_the_wire` over :attr:`DispatchBenchmark.
    nvlink_rate` or :attr:`~DispatchBenchmark.network_rate`), the mean over the rows where that link sets the time:
    inside one node for NVLink, the rows the model finds bound by the NIC for the network (dimensionless). For
    :attr:`atscale.calibration.Calibration.a2a_nvlink_share` and ``a2a_network_share`` as a "what if"."""
    rows = deepep_comparison()
    nvlink = [r.published_on_the_wire / r.nvlink_rate for r in rows if r.nodes == 1]
    network = [r.published_on_the_wire / r.network_rate for r in rows if r.nodes > 1 and r.bound == "RDMA"]
    return float(np.mean(nvlink)), float(np.mean(network))


def _deepep_rows() -> list[dict]:
    rows = kernels._read_csv("deepep-normal-published.csv")
    return [{"exchange": r["exchange"], "ep": int(r["ep"]), "link": r["link"], "gbps": float(r["gbps"])} for r in rows]


# --------------------------------------------------------------------------------------
# Load balance
# --------------------------------------------------------------------------------------
_POISSON_LIMIT = 1e5
"""Mean loads above this many tokens per expert use the normal approximation of the Poisson law (its error there
is far below a token in a thousand); below it the Poisson sums are computed exactly."""


def _poisson(mean: np.ndarray):
    """Support ``0..x_max`` and, for each mean (rows), the Poisson pmf and survival ``P(X > x)``, from log space
    (no overflow) and summed from the tail (no cancellation)."""
    top = int(np.max(mean) + 12 * math.sqrt(np.max(mean)) + 40)
    x = np.arange(top + 1, dtype=float)
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(x[1:]))])
    lam = mean.reshape(-1, 1)
    pmf = np.exp(x * np.log(lam) - lam - log_fact)
    tail = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]  # P(X >= x)
    survival = np.concatenate([tail[:, 1:], np.zeros((len(lam), 1))], axis=1)
    return x, pmf, np.minimum(survival, 1.0)


def _normal_cdf(z):
    return 0.5 * (1 + np.vectorize(math.erf, otypes=[float])(np.asarray(z, dtype=float) / math.sqrt(2)))


def _split(lam: np.ndarray, small, large) -> np.ndarray:
    """``small(λ)`` (exact Poisson sums) where ``λ <= _POISSON_LIMIT``, ``large(λ)`` (normal law) elsewhere."""
    out = np.empty(lam.shape)
    low = lam <= _POISSON_LIMIT
    if np.any(low):
        out[low] = small(lam[low])
    if np.any(~low):
        out[~low] = large(lam[~low])
    return out


def routing_imbalance(mean_load, num_experts):
    """Tokens at the busiest of ``num_experts`` experts over the mean when a router spreads tokens uniformly at
    random, ``E[max_i X_i] / λ`` with ``X_i`` Poisson of mean ``λ = mean_load`` (tokens per expert: the batch's
    tokens times ``k`` over ``E``), the experts' loads taken as independent (the balls-into-bins approximation;
    Raab and Steger 1998), ``E[max] = Σ_x (1 - F(x)^E)``; above 10^5 tokens per expert, ``λ + sqrt(λ) E[max of E
    standard normals]``. Even a perfectly fair router leaves the busiest expert about ``1 + z / sqrt(λ)`` times the
    mean (``z`` ≈ 1.4 for 8 experts, 2.8 for 256): the imbalance shrinks with the tokens per expert, and a learned
    router adds its own preferences on top. Dimensionless, >= 1; vectorised over ``mean_load``."""
    lam = np.asarray(_v.positive("mean_load", mean_load, unit="tokens per expert"), dtype=float)
    e = _v.count("num_experts", num_experts)

    def small(m):
        _, _, survival = _poisson(m)
        with np.errstate(divide="ignore"):  # P(X > x) = 1 exactly: that term of the sum is 1
            return np.sum(-np.expm1(e * np.log1p(-survival)), axis=1) / m

    def large(m):
        z = np.linspace(-12.0, 12.0, 4801)
        cdf = _normal_cdf(z)
        top = np.sum(np.where(z >= 0, 1 - cdf**e, -(cdf**e))) * (z[1] - z[0])  # E[max of e standard normals]
        return 1 + top / np.sqrt(m)

    ratio = _split(lam.ravel(), small, large).reshape(lam.shape)
    return as_scalar(np.maximum(ratio, 1.0))


def dropped_fraction(mean_load, capacity_factor):
    """Fraction of the routed tokens dropped when each expert takes at most ``floor(C λ)`` of them (capacity factor
    ``C``; GShard, Switch: Fedus et al. 2022, sec. 2.2) and receives a Poisson number of mean ``λ = mean_load``
    (uniform random routing, as :func:`routing_imbalance`): ``E[(X - floor(C λ))^+] / λ`` (above 10^5 tokens per
    expert, its normal approximation). A dropped token skips the expert layer through its residual connection.
    Dropless training (Gale et al. 2023, MegaBlocks; Megatron-Core, DeepSeek-V3) drops nothing and pays the busiest
    expert's time instead. Dimensionless, in [0, 1]; vectorised over both arguments."""
    lam, c = _v.broadcast(mean_load=_v.positive("mean_load", mean_load, unit="tokens per expert"),
                          capacity_factor=_v.number("capacity_factor", capacity_factor, low=1))
    shape = np.shape(lam)
    lam, c = np.asarray(lam, dtype=float).ravel(), np.asarray(c, dtype=float).ravel()
    cap = np.floor(np.minimum(c, 1e15) * lam)
    low = lam <= _POISSON_LIMIT
    out = np.empty(lam.shape)
    if np.any(low):
        _, _, survival = _poisson(lam[low])
        cols = np.arange(survival.shape[1])
        # E[(X - c)^+] = Σ_{x >= c} P(X > x)
        out[low] = np.sum(np.where(cols >= cap[low, None], survival, 0.0), axis=1) / lam[low]
    if np.any(~low):
        m, sd = lam[~low], np.sqrt(lam[~low])
        z = (cap[~low] - m) / sd
        pdf = np.exp(-z**2 / 2) / math.sqrt(2 * math.pi)
        out[~low] = sd * (pdf - z * (1 - _normal_cdf(z))) / m
    return as_scalar(np.clip(out, 0.0, 1.0).reshape(shape))


# --------------------------------------------------------------------------------------
# The step: expert parallelism
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EpSweep:
    """Step times of one layout at each expert-parallel degree ``eps``: ``steps`` is a
    :class:`~atscale.parallelism.StepTime` of arrays (one entry per degree; infeasible ones NaN with a reason)."""

    model: str
    eps: np.ndarray
    steps: parallelism.StepTime

    def parts(self) -> dict:
        """``{part: seconds array}`` in the order of :data:`atscale.parallelism.PARTS`."""
        return self.steps.parts()

    @property
    def feasible(self) -> np.ndarray:
        """Which degrees can run (with the memory check off, whatever their memory)."""
        return np.asarray(self.steps.feasible)

    @property
    def fits(self) -> np.ndarray:
        """Which degrees can run *and* fit in memory: per-GPU memory within the memory model's margin
        (:data:`atscale.parallelism.MEMORY_MARGIN`) of the usable capacity."""
        memory = np.asarray(self.steps.memory_total, dtype=float)
        with np.errstate(invalid="ignore"):
            return self.feasible & (memory <= self.steps.memory_capacity * (1 + parallelism.MEMORY_MARGIN))


def _plan_fields(plan: Plan) -> dict:
    return {f.name: getattr(plan, f.name) for f in dataclasses.fields(Plan)}


def ep_sweep(model, cluster: hardware.Cluster, plan: Plan, eps, *, seq_length=None, dtype: str = "bf16",
             memory_check: bool = True, optimizer_name=memory.RUNNING_EXAMPLE_OPTIMIZER) -> EpSweep:
    """``plan`` at each expert-parallel degree of ``eps``, everything else unchanged, in one vectorised call of
    :func:`atscale.parallelism.evaluate` (the same cost terms as :func:`~atscale.parallelism.step_time`).
    ``optimizer_name``: the optimizer layout the memory counts (a name of :data:`atscale.memory.OPTIMIZERS` or an
    :class:`atscale.memory.Optimizer`; default the step-time model's, the running example's); pass
    :data:`DEEPSEEK_V3_OPTIMIZER` for DeepSeek-V3's published run, as :func:`deepseek_v3_estimate` does.

    Raising ``ep`` divides the routed experts' weights, gradients and optimizer state per GPU by ``ep`` (each GPU
    holds ``E / ep`` experts) and shrinks the experts' data-parallel group to ``tp cp dp / (expert_tp ep)``;
    it spreads the expert group over more GPUs, first over NVLink, then across nodes, where the all-to-all runs at
    the NIC's rate. A degree that does not divide the experts or ``tp x cp x dp`` is infeasible, with its reason.
    """
    if not isinstance(plan, Plan) or plan.global_batch is None:
        raise ValueError(f"plan={_v.show(plan)} must be an atscale.plan.Plan with a global_batch")
    m = _moe_model("model", model)
    e = np.asarray(_v.count("eps", eps, scalar=False), dtype=np.int64).ravel()
    steps = parallelism.evaluate(m, cluster, **{**_plan_fields(plan), "ep": e}, seq_length=seq_length, dtype=dtype,
                                 memory_check=_v.flag("memory_check", memory_check), optimizer_name=optimizer_name)
    return EpSweep(m.name, e, steps)


@dataclass(frozen=True)
class A2ARatio:
    """The expert all-to-all of a step against the computation it must hide behind (seconds per step, per GPU):
    ``all_to_all`` with nothing overlapped, ``computation`` (compute and recomputation, all SMs computing) and
    ``step`` (the :class:`~atscale.parallelism.StepTime` they come from)."""

    all_to_all: float
    computation: float
    step: parallelism.StepTime

    @property
    def ratio(self) -> float:
        """``all_to_all / computation``: 1 is DeepSeek's "1:1"."""
        return self.all_to_all / self.computation


def _refuse_infeasible(st: parallelism.StepTime, memory_check) -> None:
    """A ``ValueError`` naming ``plan`` with the step-time model's reason when the layout ``st`` cannot run (the
    reason cut to keep the message short; ``memory_check=True`` said where the memory check refused it)."""
    if not st.feasible:
        raise ValueError(f"plan: the layout cannot run: {st.reason}"[:220] + (" (memory_check=True)" if memory_check
                                                                              else ""))


def a2a_compute_ratio(model, cluster: hardware.Cluster, plan: Plan, *, seq_length=None, dtype: str = "bf16",
                      memory_check: bool = True) -> A2ARatio:
    """How long the expert all-to-alls of a step take against its computation, with the all-to-all *not*
    overlapped (:func:`atscale.parallelism.step_time` with ``a2a_overlap=False``): the ratio DeepSeek-V3 quotes as
    "approximately 1:1" for cross-node expert parallelism (DeepSeek-AI 2024, sec. 3.2.1), which is why it overlaps
    the two. Above 1 no overlap can hide the all-to-all; below 1 it can, at the price of the SMs it lends."""
    if not isinstance(plan, Plan):
        raise ValueError(f"plan={_v.show(plan)} must be an atscale.plan.Plan")
    st = parallelism.step_time(_moe_model("model", model), cluster, dataclasses.replace(plan, a2a_overlap=False),
                               seq_length=seq_length, dtype=dtype, memory_check=memory_check)
    _refuse_infeasible(st, memory_check)
    return A2ARatio(float(st.ep_comm), float(st.compute + st.recompute), st)


# --------------------------------------------------------------------------------------
# The worked example: DeepSeek-V3 on 2,048 H800
# --------------------------------------------------------------------------------------
DEEPSEEK_V3_RUN = next(r for r in runs.MOE_RUNS if r.label == "DeepSeek-V3, 2,048 H800, FP8")
"""The step-time model's validation run of DeepSeek-V3 (:data:`atscale.runs.MOE_RUNS`): the worked example's
cluster and layout are its own, so the chapter and the accuracy appendix price the same run."""

DEEPSEEK_V3_CLUSTER = DEEPSEEK_V3_RUN.cluster
"""DeepSeek-V3's training cluster: 2,048 H800 in 256 nodes of 8, NVLink inside the node, one 400 Gb/s InfiniBand NIC
per GPU (DeepSeek-AI 2024, sec. 3.1)."""

DEEPSEEK_V3_PLAN = DEEPSEEK_V3_RUN.plan
"""DeepSeek-V3's published layout (sec. 3.1-3.2): no tensor parallelism, 16-way pipeline (DualPipe), 64-way expert
parallelism over 8 nodes, ZeRO-1 data parallelism over the other 128, the all-to-all overlapped with computation;
global batch 15,360 sequences of 4,096 tokens (its final value, sec. 4.2; it ramps up from 3,072 over the first
469B tokens); micro-batch 1 (assumed: the report does not give it, so 120 micro-batches per replica is an
assumption too). Recomputation as the report states it: every RMSNorm and the MLA up-projections (sec. 3.2.3), and
the output of the MoE's SwiGLU (sec. 3.3.3; ``recompute_modules=("layernorm", "act", "mla_up_proj")``); its FP8
activation caching as sec. 3.3.3 states it (``fp8_cache="deepseek-v3"``)."""

DEEPSEEK_V3_GPU_HOURS_PER_TRILLION = DEEPSEEK_V3_RUN.published * DEEPSEEK_V3_RUN.cluster.num_gpus / (
    DEEPSEEK_V3_RUN.plan.global_batch * DEEPSEEK_V3_RUN.seq_length) * 1e12
"""Published cost of pre-training DeepSeek-V3: 180K H800 GPU-hours per trillion tokens (sec. 1 and Table 1), in
GPU-seconds per 10^12 tokens; 2,664K GPU-hours for its 14.8T tokens, under two months on 2,048 GPUs."""

DEEPSEEK_V3_PRETRAINING = (2664e3 * _HOUR, 14.8e12)
"""``(GPU-seconds, tokens)`` of DeepSeek-V3's pre-training as published (Table 1): 2,664K H800 GPU-hours, 14.8T
tokens."""

DEEPSEEK_V3_OPTIMIZER = DEEPSEEK_V3_RUN.optimizer_name
"""DeepSeek-V3's optimizer layout (an :class:`atscale.memory.Optimizer`): AdamW's moments in BF16, the master
weights and the accumulated gradients in FP32 (DeepSeek-AI 2024, sec. 3.3.3); the worked example's."""

DEEPSEEK_V3_BATCH_RAMP = (3072, 15_360, 469e9)
"""DeepSeek-V3's batch-size schedule (sec. 4.2): ``(first batch, final batch, tokens)``: the batch grows from 3,072
to 15,360 sequences over the first 469B training tokens, then stays at 15,360."""


def gpu_seconds_per_trillion(step: parallelism.StepTime):
    """GPU-seconds one trillion tokens cost at the pace of ``step``: ``GPUs x step time / tokens per step x 10^12``
    (NaN for an infeasible layout). Divide by 3,600 for GPU-hours, the unit DeepSeek publishes."""
    if not isinstance(step, parallelism.StepTime):
        raise ValueError(f"step={_v.show(step)} must be an atscale.parallelism.StepTime")
    return as_scalar(np.asarray(step.total, dtype=float) * step.gpus / np.asarray(step.tokens_per_step, dtype=float)
                     * 1e12)


@readable("DeepSeek-V3, estimated")
@dataclass(frozen=True)
class DeepSeekEstimate:
    """The model's cost of training DeepSeek-V3 on 2,048 H800 against the published 180K GPU-hours per trillion
    tokens. ``step``: the :class:`~atscale.parallelism.StepTime`; ``gpu_seconds_per_trillion``: GPU-seconds per
    10^12 tokens; ``published``: the same, published."""

    step: parallelism.StepTime
    gpu_seconds_per_trillion: float
    published: float = DEEPSEEK_V3_GPU_HOURS_PER_TRILLION

    @property
    def gpu_hours_per_trillion(self) -> float:
        """GPU-hours per trillion tokens (the unit DeepSeek publishes)."""
        return self.gpu_seconds_per_trillion / _HOUR

    @property
    def error(self) -> float:
        """``estimate / published - 1`` (negative: the model is optimistic, it predicts a cheaper run)."""
        return self.gpu_seconds_per_trillion / self.published - 1

    @property
    def published_step(self) -> float:
        """The step time (s) the published cost implies for the same step: tokens per step x GPU-seconds per token
        over the GPUs."""
        return float(self.step.tokens_per_step) * self.published / 1e12 / self.step.gpus

    @property
    def published_mfu(self) -> float:
        """The MFU (against the BF16 dense peak, the book's convention) that the published cost implies."""
        return float(self.step.mfu) * float(self.step.total) / self.published_step

    def __repr__(self):
        return (f"DeepSeekEstimate({self.gpu_hours_per_trillion / 1e3:,.0f}K GPU-hours per trillion tokens against "
                f"{self.published / _HOUR / 1e3:,.0f}K published ({self.error:+.1%}); step "
                f"{float(self.step.total):.2f} s, MFU {float(self.step.mfu):.1%})")


def deepseek_v3_estimate(*, model=models.DEEPSEEK_V3, plan: Plan = DEEPSEEK_V3_PLAN,
                         cluster: hardware.Cluster = DEEPSEEK_V3_CLUSTER, dtype: str = "fp8",
                         memory_check: bool = False, stack=None) -> DeepSeekEstimate:
    """GPU-hours per trillion tokens of DeepSeek-V3 (or a variant: another ``model``, ``plan``, ``cluster`` or
    ``dtype``) from one :func:`atscale.parallelism.step_time`: ``GPUs x step time / tokens per step x 10^12``.

    Defaults: DeepSeek's published layout (:data:`DEEPSEEK_V3_PLAN`) on its cluster (:data:`DEEPSEEK_V3_CLUSTER`) in
    FP8, with the rest of :data:`DEEPSEEK_V3_RUN`'s settings (so the default estimate is that run's step), the memory
    check off, because the memory model, even with the FP8 activation caching and the recomputation the report
    states, puts that layout over capacity (``memory_check=True`` reports it as not fitting; the accuracy appendix
    prints by how much). An infeasible variant is a ``ValueError`` with the
    reason. Nothing is fitted to the published figure (:data:`DEEPSEEK_V3_GPU_HOURS_PER_TRILLION`). ``stack``: the operator-level compute with that stack preset
    (:data:`atscale.operators.STACKS`; the FP8 recipe the report describes, block-wise scaling), or ``None``
    for the calibrated curve."""
    run = DEEPSEEK_V3_RUN  # the accuracy appendix's run: its optimizer layout (BF16 moments), overlap, sequence, kernel
    ops = {} if stack is None else dict(stack=stack, fp8_recipe=run.fp8_recipe)
    st = parallelism.step_time(_moe_model("model", model), cluster, plan, dtype=dtype,
                               memory_check=_v.flag("memory_check", memory_check), optimizer_name=run.optimizer_name,
                               dp_overlap=run.dp_overlap, seq_length=run.seq_length,
                               flash_attention=run.flash_attention, **ops)
    _refuse_infeasible(st, memory_check)
    return DeepSeekEstimate(st, gpu_seconds_per_trillion(st))


@dataclass(frozen=True)
class BatchRamp:
    """How much DeepSeek-V3's batch ramp can add to its average cost, in the model (:func:`deepseek_v3_batch_ramp`).

    ``share``: the ramp's tokens over the pre-training's; ``start``, ``final``: the model's GPU-seconds per 10^12
    tokens at the first and the final batch; ``extra``: at most what the ramp adds to the whole run's average,
    ``share x (start - final)`` (GPU-seconds per 10^12 tokens)."""

    share: float
    start: float
    final: float
    extra: float

    @property
    def extra_gpu_hours_per_trillion(self) -> float:
        """:attr:`extra` in GPU-hours per trillion tokens."""
        return self.extra / _HOUR


def deepseek_v3_batch_ramp(plan: Plan = DEEPSEEK_V3_PLAN) -> BatchRamp:
    """The most DeepSeek-V3's batch ramp (:data:`DEEPSEEK_V3_BATCH_RAMP`: 3,072 to 15,360 sequences over 469B of its
    14.8T tokens; DeepSeek-AI 2024, sec. 4.2) can add to the run's average cost per token, in the step-time model:
    every ramp token priced at the first batch's cost, ``share x (c(m_start) - c(m_final))``.

    With the layout fixed, the model's step is ``m`` micro-batches of fixed work plus a bubble and a data-parallel
    tail that do not depend on ``m``, so its cost per token is ``a + b/m``. DualPipe's reference implementation
    asserts ``m >= 2p`` (32 micro-batches per replica here), which the first batch (24 per replica) does not meet,
    though the report asks only for an even ``m``: ``a`` and ``b`` are read from the model at ``2p`` micro-batches
    and at the final batch and the cost extended to the first batch's ``m``. GPU-seconds per 10^12 tokens."""
    if not isinstance(plan, Plan) or plan.global_batch is None:
        raise ValueError(f"plan={_v.show(plan)} must be an atscale.plan.Plan with a global_batch")
    first, final, ramp_tokens = DEEPSEEK_V3_BATCH_RAMP
    per_round = plan.micro_batch * plan.dp
    m_final, m_least = plan.global_batch // per_round, 2 * plan.pp
    c_final = deepseek_v3_estimate(plan=plan).gpu_seconds_per_trillion
    c_least = deepseek_v3_estimate(plan=dataclasses.replace(plan, global_batch=m_least * per_round)
                                   ).gpu_seconds_per_trillion
    b = (c_least - c_final) / (1 / m_least - 1 / m_final)
    c_start = c_final + b * (per_round / first - 1 / m_final)
    share = ramp_tokens / DEEPSEEK_V3_PRETRAINING[1]
    return BatchRamp(share, c_start, c_final, share * (c_start - c_final))


# --------------------------------------------------------------------------------------
# Memory: a published per-GPU breakdown of an expert layout
# --------------------------------------------------------------------------------------
MCORE_MEMORY_SOURCE = ("NVIDIA (Yan et al.), Scalable Training of Mixture-of-Experts Models with Megatron Core, "
                       "technical report, arXiv:2603.07685 (March 2026), sec. 4.1: Table 3 (per-GPU memory of "
                       "DeepSeek-V3 trained in BF16 with PP 4 x VPP 4 x EP 64 on 256 GPUs), Table 4 (what "
                       "fine-grained recomputation saves per GPU on the same configuration) and sec. 4.1.3 (FP8 "
                       "training saves 'approximately 16 GB' of its activations)")
"""Where :data:`MCORE_MEMORY`, :data:`MCORE_RECOMPUTE_SAVINGS` and :data:`MCORE_FP8_SAVING` come from."""

MCORE_MEMORY = MappingProxyType({"weights and gradients": 36.4e9, "main weights and optimizer states": 32.1e9,
                                 "activations": 131.0e9, "total": 199.5e9})
"""NVIDIA's MoE report, Table 3: per-GPU memory of DeepSeek-V3 in BF16 (PP 4 x VPP 4 x EP 64, 256 GPUs), bytes:
weights and gradients, main weights and optimizer states, activations, and their total, before any of the memory
optimizations its section 4.1 then describes (the table lists them beside each row as what could reduce it)."""

MCORE_RECOMPUTE_SAVINGS = MappingProxyType({"mla_up_proj": 30.4e9, "act": 3.8e9, "layernorm": 8.2e9})
"""NVIDIA's MoE report, Table 4: what recomputing one module saves per GPU on :data:`MCORE_MEMORY`'s configuration,
bytes, by the library's recompute module: the MLA up-projection, the activation function (SwiGLU; the library's
``act`` of a mixture of experts is its experts'), LayerNorm (42.4 GB in all)."""

MCORE_FP8_SAVING = 16e9
"""NVIDIA's MoE report, sec. 4.1.3: FP8 training keeps "approximately 16 GB" less of :data:`MCORE_MEMORY`'s
activations (the linear layers' inputs, about 32 GB, stored in FP8), bytes."""

MCORE_PERMUTATION_SAVING = 26.3e9
"""NVIDIA's MoE report, sec. 4.1.2: memory-efficient permutation (the routing weights applied before the second
expert GEMM, so that the experts' outputs need not be kept for the router's backward) saves about 26.3 GB of
:data:`MCORE_MEMORY`'s activations, bytes. The library has no switch for it: neither formulation is modelled apart."""


@dataclass(frozen=True)
class MoeMemoryCheck:
    """The memory model beside a published per-GPU breakdown of an expert layout (:func:`mcore_memory_check`):
    ``breakdown``, the model's :class:`~atscale.memory.Breakdown` of the layout (bytes); ``published``,
    :data:`MCORE_MEMORY`; ``recompute``, ``(module, published saving, model saving)`` per module of
    :data:`MCORE_RECOMPUTE_SAVINGS` (bytes); ``fp8``, ``(published, model)``, what FP8 training with
    Transformer Engine's FP8 activation cache saves (bytes); ``plan``, the layout as the library reads it;
    ``expert_outputs``, the bytes of the experts' outputs among the model's activations at the peak stage
    (:func:`atscale.memory.expert_output_bytes`: what memory-efficient permutation does not keep)."""

    breakdown: memory.Breakdown
    published: Mapping
    recompute: tuple
    fp8: tuple
    plan: Plan
    expert_outputs: float

    @property
    def components(self) -> tuple:
        """``(component, published, model)`` per row of :data:`MCORE_MEMORY` (bytes): weights and gradients, the
        optimizer's state (the main weights with it), activations, total."""
        b = self.breakdown
        model = (b.weights + b.gradients, b.optimizer, b.activations, b.total)
        return tuple((k, self.published[k], m) for k, m in zip(self.published, model))

    @property
    def error(self) -> float:
        """Model over published total, minus 1 (positive: the model counts more memory)."""
        return self.breakdown.total / self.published["total"] - 1.0

    @property
    def permuted(self) -> tuple:
        """The other reading of the table, as relative errors ``(activations, total)``: the report does not say whether
        its Table 3 already applies memory-efficient permutation (it quotes the permutation's saving "for
        DeepSeek-V3 (Table 3)"); if it does, the model's count without :attr:`expert_outputs`."""
        return ((self.breakdown.activations - self.expert_outputs) / self.published["activations"] - 1.0,
                (self.breakdown.total - self.expert_outputs) / self.published["total"] - 1.0)


@functools.lru_cache(maxsize=1)
def mcore_memory_check() -> MoeMemoryCheck:
    """The memory model on the layout of NVIDIA's MoE report's Table 3 (:data:`MCORE_MEMORY`): DeepSeek-V3, BF16,
    TP 1, PP 4 with 4 virtual stages, EP 64 on 256 GPUs (data parallelism 64), no recomputation, read as the report's
    own records of that layout run it (:data:`atscale.runs.MOE_FURTHER_RUNS`, its GB200 row in MXFP8: micro-batch
    1, sequences of 4,096 tokens, the embedding and the loss each a slot of the pipeline split, the distributed
    optimizer with FP32 main weights, moments and gradient buffers). The table states neither the micro-batch nor the
    split: those are this reading's. Each of :data:`MCORE_RECOMPUTE_SAVINGS`' modules recomputed alone, and FP8
    with Transformer Engine's activation cache, give the model's savings beside the report's."""
    (r,) = [x for x in runs.MOE_FURTHER_RUNS if x.label == "DeepSeek-V3, 256 GB200, MXFP8, Megatron-Core MoE report"]
    plan = dataclasses.replace(r.plan, recompute="none", recompute_modules=None, fp8_cache="none")

    def bd(p, dtype="bf16"):
        return memory.breakdown(r.model, r.cluster.accelerator, p, seq_length=r.seq_length,
                                optimizer_name=r.optimizer_name, flash_attention=True, dtype=dtype)

    base = bd(plan)
    # TP 1, CP 1: the breakdown's activations are one layer's terms times the peak stage's layers and micro-batches
    per_layer = memory.activation_terms(r.model, plan.micro_batch, r.seq_length, flash_attention=True)
    kept = per_layer.replicated + per_layer.parallel + per_layer.scores
    outputs = base.activations * memory.expert_output_bytes(r.model, plan.micro_batch * r.seq_length) / kept
    recompute = tuple((module, saved, base.activations - bd(dataclasses.replace(
        plan, recompute="selective", recompute_modules=(module,))).activations)
        for module, saved in MCORE_RECOMPUTE_SAVINGS.items())
    fp8 = (MCORE_FP8_SAVING,
           base.activations - bd(dataclasses.replace(plan, fp8_cache="transformer-engine"), "fp8").activations)
    return MoeMemoryCheck(base, MCORE_MEMORY, recompute, fp8, plan, outputs)


def mcore_memory_table():
    """:func:`mcore_memory_check` as a :class:`~atscale.tables.Table` (GB per GPU, published and modelled): the
    breakdown's rows, then what each recomputed module and FP8 save."""
    from .tables import Table

    c = mcore_memory_check()

    def row(what, published, model):  # GB per GPU, and the model's difference
        return what, f"{published / 1e9:.1f}", f"{model / 1e9:.1f}", f"{model / published - 1:+.0%}"

    labels = {"mla_up_proj": "recompute the MLA up-projection: saves", "act": "recompute the activation: saves",
              "layernorm": "recompute the norms: saves"}
    rows = [row(k, p, m) for k, p, m in c.components] + [row(labels[k], p, m) for k, p, m in c.recompute]
    rows += [row("FP8 training: saves", *c.fp8),
             row("memory-efficient permutation: saves (the experts' outputs)", MCORE_PERMUTATION_SAVING,
                 c.expert_outputs),
             row("activations, if the table's already omit the experts' outputs", c.published["activations"],
                 c.breakdown.activations - c.expert_outputs)]
    return Table(("Per GPU, DeepSeek-V3, PP 4 × VPP 4 × EP 64", "Published (GB)", "Model (GB)", "Difference"), rows,
                 caption="NVIDIA's MoE report's per-GPU memory of DeepSeek-V3 in BF16 on 256 GPUs (its Tables 3 and 4 "
                         "and sec. 4.1.3) beside the memory model on the layout as the report's own records run it "
                         "(micro-batch 1, 4,096 tokens; the table states neither). The last row reads the table as "
                         "already applying memory-efficient permutation, which the report does not say.")
