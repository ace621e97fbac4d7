"""Collective communication: what an all-reduce (and its relatives) really costs.

The module follows the chapter. First the definitions nccl-tests uses to report a collective
(algorithm bandwidth, bus bandwidth); then the bytes each rank must send under each algorithm
(ring, double binary tree, in-network reduction); then the alpha-beta (Hockney) time of one
collective on one link technology, with the link's *achievable* fraction of its line rate and
its per-hop latency calibrated on published nccl-tests measurements; then the hierarchical
all-reduce of a multi-node cluster (reduce-scatter inside the node, all-reduce across nodes on
one NIC per GPU, all-gather back); last the data-parallel gradient all-reduce of a training step
and how much of it can hide behind the backward pass.

The time model, for a collective ``op`` of ``M`` bytes on ``n`` ranks with algorithm ``a``::

    T = t0 + s_a(n) * alpha + D_a(op, n, M) / (eta * B)

``s_a(n)``: sequential communication steps (``2(n-1)`` for a ring all-reduce, ``2 log2 n`` for a
tree, 2 for in-network reduction); ``alpha``: latency per step; ``t0``: fixed cost of launching the
collective; ``D``: bytes the busiest rank sends (:func:`bytes_sent_per_rank`); ``B``: the link's
line rate per direction per GPU; ``eta``: the fraction of it a collective achieves (protocol
overhead). This is Hockney's (1994) model with the per-step accounting of Thakur, Rabenseifner
and Gropp (2005, Table 1) and the structure of NCCL's own tuning model (``src/graph/tuning.cc``:
a base latency per algorithm and protocol, plus a hardware latency per step).

All sizes are bytes, times seconds, bandwidths bytes/s per direction. ``size`` is the message
as nccl-tests counts it: for all-gather and reduce-scatter the *whole* array (``n`` shards).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import hardware
from . import units as u
from . import _validate as _v
from ._numeric import as_scalar
from . import plan as _plan
from .plan import Plan

__all__ = [
    "OPS", "ALGORITHMS", "LinkModel", "LINK_MODELS", "IN_NETWORK", "link_model", "supports_in_network", "LinkCost",
    "link_cost",
    "bus_bandwidth_factor", "algorithm_bandwidth", "bus_bandwidth", "bytes_sent_per_rank", "steps",
    "collective_time", "latency_bound_size", "best_algorithm", "Hierarchical", "hierarchical_phases",
    "hierarchical_time", "all_to_all_time", "Measurement", "CALIBRATION", "VALIDATION", "model_time", "fit_ring_latency",
    "ring_schedule", "RingStep", "ring_step", "CostCurve", "cost_curve", "COST_CURVE_SIZES", "gradient_sync",
    "GradientSync", "exposed_time", "TieredCollective", "tiered_phases", "tiered_time", "send_time",
    "PLACEMENT_ORDERS", "placement_order", "DimensionTiers", "dimension_tiers", "TierSweep", "tier_sweep",
    "NCCL_RING_LATENCY", "NCCL_TUNING_SOURCE", "nccl_ring_latency",
]

OPS = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast")
"""The collectives the module models, named as nccl-tests names them (without ``_perf``)."""

ALGORITHMS = ("ring", "tree", "in-network")
"""``ring``; ``tree`` (NCCL's double binary tree, all-reduce only); ``in-network`` (the switch
reduces: NVLink SHARP inside an NVLink domain, SHARP on InfiniBand switches; all-reduce only).
``"nvls"`` is accepted as a synonym of ``"in-network"``."""

_ALIASES = {"nvls": "in-network", "sharp": "in-network"}


# --------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------
def _op(op: str) -> str:
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"op={_v.show(op)} is not a collective this module models; valid: {OPS}")
    return op


def _algorithm(algorithm: str, name: str = "algorithm") -> str:
    if isinstance(algorithm, str):
        algorithm = _ALIASES.get(algorithm, algorithm)
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ValueError(f"{name}={_v.show(algorithm)} is unknown; valid: {ALGORITHMS} (or 'nvls', 'sharp')")
    return algorithm


def _ranks(ranks):
    return np.asarray(_v.count("ranks", ranks, scalar=False), dtype=float)


def _size(size):
    return np.asarray(_v.nonnegative("size", size, unit="bytes"), dtype=float)


# --------------------------------------------------------------------------------------
# How nccl-tests reports a collective
# --------------------------------------------------------------------------------------
def bus_bandwidth_factor(op: str, ranks):
    """The factor nccl-tests multiplies the algorithm bandwidth by to get the bus bandwidth.

    all-reduce ``2(n-1)/n``; reduce-scatter, all-gather and all-to-all ``(n-1)/n``; broadcast 1.
    It converts ``size / time`` into the bandwidth each rank's link actually carried, so the number
    is comparable with the hardware's per-direction line rate whatever ``n`` is. Source: nccl-tests,
    ``doc/PERFORMANCE.md`` ("Bus bandwidth"), and the ``getBw`` of each ``src/*.cu``. Vectorised.
    """
    n = _ranks(ranks)
    factor = {"all-reduce": 2 * (n - 1) / n, "reduce-scatter": (n - 1) / n, "all-gather": (n - 1) / n,
              "all-to-all": (n - 1) / n, "broadcast": np.ones_like(n)}[_op(op)]
    return as_scalar(factor)


def algorithm_bandwidth(size, seconds):
    """``size / seconds`` in bytes/s: nccl-tests' *algbw* (``size`` as nccl-tests counts it)."""
    m, t = _v.broadcast(size=_size(size), seconds=_v.positive("seconds", seconds))
    return as_scalar(m / t)


def bus_bandwidth(op: str, size, ranks, seconds):
    """nccl-tests' *busbw* in bytes/s: ``algorithm_bandwidth(size, seconds) * bus_bandwidth_factor(op, ranks)``."""
    algo, factor = algorithm_bandwidth(size, seconds), bus_bandwidth_factor(op, ranks)
    _v.broadcast(**{"size and seconds": algo, "ranks": factor})
    return as_scalar(algo * factor)


# --------------------------------------------------------------------------------------
# Bytes and steps of each algorithm
# --------------------------------------------------------------------------------------
def _check_pair(op: str, algorithm: str) -> tuple[str, str]:
    op, algorithm = _op(op), _algorithm(algorithm)
    if algorithm != "ring" and op != "all-reduce":
        raise ValueError(f"algorithm={algorithm!r} is modelled for op='all-reduce' only (got op={op!r}); "
                         "use algorithm='ring' for the other collectives")
    return op, algorithm


def bytes_sent_per_rank(op: str, size, ranks, algorithm: str = "ring"):
    """Bytes the busiest rank sends (and, by symmetry, receives) during one collective.

    Ring (Patarasuk & Yuan 2009; Thakur et al. 2005, sec. 4): all-reduce ``2(n-1)/n * M``
    (a reduce-scatter then an all-gather, each moving ``n-1`` chunks of ``M/n``); reduce-scatter and
    all-gather ``(n-1)/n * M``; all-to-all ``(n-1)/n * M`` (each rank keeps ``1/n`` of its data);
    broadcast ``M`` (a pipelined chain: every rank but the last forwards everything).
    Double binary tree (Sanders, Speck & Träff 2009; NCCL 2.4): ``2M`` for all-reduce (each rank
    is an inner node of one of the two trees, which carry half the data each, up and down).
    In-network (NVLink SHARP, InfiniBand SHARP): ``M`` for all-reduce: each rank sends its data to
    the switch once and receives the reduced result once.

    The classic misreading: "each rank sends ``M/n``" (one chunk of one step), or "the total grows as
    ``n``". Per rank it approaches ``2M``, whatever ``n``. Vectorised over ``size`` and ``ranks``.
    """
    op, algorithm = _check_pair(op, algorithm)
    m, n = _v.broadcast(size=_size(size), ranks=_ranks(ranks))
    if algorithm == "ring":
        factor = {"all-reduce": 2 * (n - 1) / n, "reduce-scatter": (n - 1) / n, "all-gather": (n - 1) / n,
                  "all-to-all": (n - 1) / n, "broadcast": np.where(n > 1, 1.0, 0.0)}[op]
    elif algorithm == "tree":
        factor = np.where(n > 1, 2.0, 0.0)
    else:
        factor = np.where(n > 1, 1.0, 0.0)
    return as_scalar(m * factor)


def steps(op: str, ranks, algorithm: str = "ring"):
    """Sequential communication steps, each paying the per-hop latency ``alpha`` once.

    Ring: all-reduce ``2(n-1)``, the others ``n-1`` (all-to-all: ``n-1`` pairwise exchanges;
    broadcast: ``n-1`` hops of the chain). Tree: ``2 ceil(log2 n)`` (up, then down).
    In-network: 2 (to the switch, back). Source: Thakur et al. (2005), Table 1. Vectorised.
    """
    op, algorithm = _check_pair(op, algorithm)
    n = _ranks(ranks)
    if algorithm == "ring":
        s = 2 * (n - 1) if op == "all-reduce" else n - 1
    elif algorithm == "tree":
        s = 2 * np.ceil(np.log2(n))
    else:
        s = np.where(n > 1, 2.0, 0.0)
    return as_scalar(s)


# --------------------------------------------------------------------------------------
# Link technologies: achievable fraction of line rate, latencies, calibrated
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinkModel:
    """What a collective achieves on one link technology.

    Attributes:
        technology: ``"NVLink"``, ``"InfiniBand"`` or ``"RoCE"``.
        efficiency: achievable fraction of the per-direction line rate for large messages (protocol
            overhead: headers, flow control, the copy and reduction kernels), dimensionless.
        hop_latency: ``alpha``, seconds per sequential step.
        base_latency: ``t0``, seconds to launch a collective, paid once.
        source: where each figure comes from; "calibrated" means fitted in :data:`CALIBRATION`.
    """

    technology: str
    efficiency: float
    hop_latency: float
    base_latency: float
    source: str = dataclasses.field(default="", compare=False)

    def __post_init__(self):
        if not 0 < self.efficiency <= 1:
            raise ValueError(f"{self.technology}: efficiency={self.efficiency!r} must be in (0, 1]")
        for name in ("hop_latency", "base_latency"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{self.technology}: {name}={getattr(self, name)!r} must be >= 0 seconds")


# The calibration data, as published. ----------------------------------------------------
RING_LATENCY_SERIES = MappingProxyType({2: 10.0e-6, 3: 13.76e-6, 4: 16.88e-6, 5: 20.8e-6, 6: 25.2e-6,
                                        7: 29.5e-6, 8: 33.7e-6})
"""8-byte all-reduce time (s) against GPU count on one DGX A100 (NVLink 3 through NVSwitch), with
``NCCL_ALGO=Ring NCCL_MAX_NCHANNELS=1``: nccl-tests issue #123 ("Understanding the latency of NCCL",
2022), the reporter's table, every point."""

_SRC_123 = "nccl-tests issue #123 (2022): DGX A100, 8-byte all-reduce, NCCL_ALGO=Ring, 1 channel, 2-8 GPUs"
_SRC_189 = ("nccl-tests pull request #189 (2023-24): 8 x A100 SXM, NVLink 3, all-reduce bus bandwidth "
            "'around 235 GBps' (the author also reports 'about 240') at large messages, of 300 GB/s per direction")
_SRC_212 = ("nccl-tests issue #212 (2024), NCCL maintainer: on H100 'NCCL can get an effective NVLink bandwidth of "
            "370GB/s' of 450 with NCCL_ALGO=RING; with NVLink SHARP 'a peak busBw of ~480GB/s (algbw ~275GB/s)' on 8 GPUs")
_SRC_212_A2A = ("nccl-tests issue #212 (2024), NCCL maintainer: the effective NVLink bandwidth of 370GB/s 'which you "
                "can observe as \"BusBw\" when running non-allreduce operations': an all-to-all's bus bandwidth on 8 H100")
_SRC_267 = "nccl-tests issue #267 (2024), NCCL maintainer: 'CX-7 NICs at NDR rate (400Gbps) should achieve up to 48-49GB/s per NIC'"
_SRC_149 = "nccl-tests issue #149 (2023): HPE Apollo 6500, 8 x A100 SXM 80GB over NVLink, all-reduce 'busbw of ~200 GB/s'"
_SRC_583 = "NCCL issue #583 (2021): 2 x A100 SXM4 40GB, all-reduce of 32 bytes in 10.14 us (default algorithm)"


def fit_ring_latency(series: Mapping[int, float] = RING_LATENCY_SERIES) -> tuple[float, float]:
    """Least-squares ``(t0, alpha)`` of ``T(n) = t0 + 2(n-1) alpha`` through a ring all-reduce latency series.

    ``series`` maps GPU count to seconds for a message small enough that the bandwidth term is nil.
    Returns ``(t0, alpha)`` in seconds. The fit is the calibration of the NVLink latencies.
    """
    n = np.array(list(series), dtype=float)
    t = np.array(list(series.values()), dtype=float)
    if n.size < 2 or np.any(n < 2):
        raise ValueError(f"series={dict(series)!r} needs at least two GPU counts >= 2")
    slope, intercept = np.polyfit(2 * (n - 1), t, 1)
    return float(intercept), float(slope)


_T0_NVLINK, _ALPHA_NVLINK = fit_ring_latency()
NVLINK_EFFICIENCY = 235 * u.GBps / (300 * u.GBps)
"""Achievable fraction of NVLink's per-direction line rate: 235 of 300 GB/s (calibrated, PR #189)."""
INFINIBAND_EFFICIENCY = 48.5 * u.GBps / (50 * u.GBps)
"""Achievable fraction of an InfiniBand NDR port: 48.5 of 50 GB/s (the middle of the maintainer's '48-49')."""
INFINITY_FABRIC_EFFICIENCY = 48 * u.GBps / (64 * u.GBps)
"""Achievable fraction of an MI300X Infinity Fabric link: 48 of 64 GB/s per direction, the maximum RCCL's
maintainers give after protocol and error-correction overheads (ROCm/rccl issue 1210; RCCL's topology code uses
48 GB/s per xGMI link on gfx94x). A ceiling, not a measurement of a collective."""

LINK_MODELS: Mapping[str, LinkModel] = MappingProxyType({
    "NVLink": LinkModel("NVLink", NVLINK_EFFICIENCY, _ALPHA_NVLINK, _T0_NVLINK,
                        f"efficiency calibrated on {_SRC_189}; t0 and alpha fitted on {_SRC_123} "
                        "(NCCL's own model has the same shape: base latency + steps x hardware latency)"),
    "InfiniBand": LinkModel("InfiniBand", INFINIBAND_EFFICIENCY, 5 * u.us, _T0_NVLINK,
                            f"efficiency calibrated on {_SRC_267}; alpha: the catalog's 5 us per switch hop "
                            "(not calibrated); t0: the NVLink launch cost (same kernels)"),
    "RoCE": LinkModel("RoCE", INFINIBAND_EFFICIENCY, 8 * u.us, _T0_NVLINK,
                      "not calibrated: InfiniBand's efficiency assumed; alpha: the catalog's 8 us"),
    "Infinity Fabric": LinkModel("Infinity Fabric", INFINITY_FABRIC_EFFICIENCY, _ALPHA_NVLINK, _T0_NVLINK,
                                 "not calibrated: RCCL's per-link ceiling of 48 of 64 GB/s (ROCm/rccl issue 1210); "
                                 "t0 and alpha: NVLink's, assumed; a full mesh, so a group gets its links' share "
                                 "(hardware.Fabric.mesh_share)"),
})
"""One :class:`LinkModel` per link technology. Only the NVLink latencies and the NVLink and
InfiniBand efficiencies are calibrated on measurements; the rest is stated as an assumption."""

IN_NETWORK: Mapping[str, float] = MappingProxyType({
    "NVLink 4": 275 * u.GBps / (450 * u.GBps),
    "NVLink 5": 275 * u.GBps / (450 * u.GBps),
    "InfiniBand HDR": INFINIBAND_EFFICIENCY,
    "InfiniBand NDR": INFINIBAND_EFFICIENCY,
    "InfiniBand XDR": INFINIBAND_EFFICIENCY,
})
"""Fabrics whose switches can reduce in the network, and the fraction of the line rate an
in-network all-reduce's algorithm bandwidth reaches. NVLink SHARP (NVLS) needs third-generation
NVSwitch (NVLink 4, Hopper) or later: calibrated on nccl-tests issue #212 (algbw ~275 GB/s of 450
on 8 H100s), assumed the same for NVLink 5. SHARP on Quantum InfiniBand switches (HDR: SHARPv2,
NDR/XDR: SHARPv3; NVIDIA Quantum switch product briefs): not calibrated, InfiniBand's efficiency
assumed. NVLink 3 (A100) and RoCE have none."""


def link_model(link) -> LinkModel:
    """The :class:`LinkModel` of a catalog :class:`~atscale.hardware.Fabric` (or its name)."""
    fab = hardware.fabric(link)
    for technology, model in LINK_MODELS.items():
        if fab.name.startswith(technology):
            return model
    raise ValueError(f"link={fab.name!r} has no link model; technologies modelled: {list(LINK_MODELS)}")


def supports_in_network(link) -> bool:
    """Whether the fabric's switches can reduce (NVLink SHARP or InfiniBand SHARP); see :data:`IN_NETWORK`."""
    return hardware.fabric(link).name in IN_NETWORK


# --------------------------------------------------------------------------------------
# The time of one collective
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinkCost:
    """The three numbers a collective's time on one link needs (checked once, then reused): ``base`` the
    launch cost ``t0`` (s), ``hop`` the per-step latency ``alpha`` (s), ``rate`` the achievable bandwidth
    ``eta B`` (bytes/s per rank per direction)."""

    base: float
    hop: float
    rate: float


def link_cost(link, algorithm: str = "ring") -> LinkCost:
    """The :class:`LinkCost` of a catalog :class:`~atscale.hardware.Fabric` (or its name) for ``algorithm``
    (:data:`LINK_MODELS`; :data:`IN_NETWORK` for ``"in-network"``, which needs a link whose switches reduce)."""
    return _link_cost(hardware.fabric(link), _algorithm(algorithm))


_LINK_COSTS: dict = {}


def _link_cost(fab: hardware.Fabric, algorithm: str) -> LinkCost:
    """:func:`link_cost` of a checked fabric and algorithm, computed once per (fabric, bandwidth, algorithm)."""
    key = (fab.name, fab.bandwidth, algorithm)
    cost = _LINK_COSTS.get(key)
    if cost is None:
        cost = _LINK_COSTS[key] = _new_link_cost(fab, algorithm)
    return cost


def _new_link_cost(fab: hardware.Fabric, algorithm: str) -> LinkCost:
    model = link_model(fab)
    eta = model.efficiency
    if algorithm == "in-network":
        if fab.name not in IN_NETWORK:
            raise ValueError(f"algorithm='in-network' needs a link whose switches reduce; link={fab.name!r} has "
                             f"none; links with it: {list(IN_NETWORK)}")
        eta = IN_NETWORK[fab.name]
    return LinkCost(model.base_latency, model.hop_latency, eta * fab.bandwidth)


def _time(op: str, algorithm: str, size, n, cost: LinkCost):
    """``t0 + steps alpha + bytes / (eta B)`` for ``n >= 2`` ranks, unchecked: plain arithmetic on floats or
    arrays alike (the caller checks its inputs and gives one rank its 0 s). The factors and steps are those
    of :func:`bytes_sent_per_rank` and :func:`steps`."""
    if algorithm == "ring":
        if op == "all-reduce":
            factor, hops = 2 * (n - 1) / n, 2 * (n - 1)
        elif op == "broadcast":
            factor, hops = 1.0, n - 1
        else:
            factor, hops = (n - 1) / n, n - 1
    elif algorithm == "tree":
        factor, hops = 2.0, 2 * np.ceil(np.log2(n))
    else:
        factor, hops = 1.0, 2.0
    return cost.base + hops * cost.hop + factor * size / cost.rate


def collective_time(op: str, size, ranks, link, *, algorithm: str = "ring"):
    """Seconds for one collective of ``size`` bytes on ``ranks`` GPUs over ``link``.

    ``T = t0 + steps * alpha + bytes_sent_per_rank / (eta * B)`` (see the module docstring);
    ``B`` is ``link.bandwidth``: per GPU inside an NVLink domain, per NIC for a scale-out fabric
    (one NIC per GPU, rail-optimised, so every rank has a port of its own); on a full-mesh scale-up fabric
    (``link.mesh_links``, the MI300X's Infinity Fabric) only the ``ranks - 1`` links joining the group,
    ``B * link.mesh_share(ranks)``. One rank: no
    communication, 0 s. ``link`` is a catalog :class:`~atscale.hardware.Fabric` or its name.
    Vectorised over ``size`` and ``ranks``. Sources: Hockney (1994); Thakur et al. (2005), Table 1;
    efficiencies and latencies from :data:`LINK_MODELS`.
    """
    op, algorithm = _check_pair(op, algorithm)
    fab = hardware.fabric(link)
    cost = _link_cost(fab, algorithm)
    if _v.is_scalar(size) and _v.is_scalar(ranks):  # one collective: no arrays at all
        m = _v.nonnegative("size", size, unit="bytes", scalar=True)
        n = float(_v.count("ranks", ranks))
        return float(_time(op, algorithm, m / fab.mesh_share(n), n, cost)) if n > 1 else 0.0
    m, n = _v.broadcast(size=_size(size), ranks=_ranks(ranks))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = _time(op, algorithm, m / fab.mesh_share(n), n, cost)
    return as_scalar(np.where(n > 1, t, 0.0))


def latency_bound_size(op: str, ranks, link, *, algorithm: str = "ring"):
    """The message size (bytes) at which the latency and bandwidth terms are equal.

    Below it the collective is latency-bound (time nearly independent of size, bus bandwidth far
    below the line rate); above it bandwidth-bound. ``(t0 + steps * alpha) * eta * B / (D / M)``.
    """
    one = collective_time(op, 1.0, ranks, link, algorithm=algorithm)
    zero = collective_time(op, 0.0, ranks, link, algorithm=algorithm)
    per_byte = np.asarray(one) - np.asarray(zero)
    with np.errstate(divide="ignore", invalid="ignore"):
        return as_scalar(np.where(per_byte > 0, np.asarray(zero) / per_byte, np.inf))


def best_algorithm(op: str, size: float, ranks: int, link) -> str:
    """The fastest algorithm the link supports for this collective, size and scale (ties: ring). One size and
    one scale (a name is one answer): for arrays, call it per element."""
    _op(op)
    size = _v.nonnegative("size", size, scalar=True, unit="bytes; one size, the answer is one algorithm")
    ranks = _v.count("ranks", ranks)
    candidates = ["ring"] if op != "all-reduce" else (
        ["ring", "tree"] + (["in-network"] if supports_in_network(link) else []))
    times = [float(collective_time(op, size, ranks, link, algorithm=a)) for a in candidates]
    return candidates[int(np.argmin(times))]


# --------------------------------------------------------------------------------------
# Hierarchical collectives on a cluster
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hierarchical:
    """The three phases of a hierarchical collective, seconds each (arrays if ``size`` was one)."""

    op: str
    intra_reduce_scatter: object
    inter: object
    intra_all_gather: object
    gpus_per_node: int
    num_nodes: int

    @property
    def total(self):
        """Seconds, the phases one after another."""
        return as_scalar(np.asarray(self.intra_reduce_scatter) + np.asarray(self.inter)
                         + np.asarray(self.intra_all_gather))


def _scale_up(node: hardware.Node) -> hardware.Fabric:
    acc = node.accelerator
    base = hardware.fabric(acc.scale_up_fabric) if acc.scale_up_fabric in hardware.FABRICS else hardware.fabric("NVLink 4")
    return dataclasses.replace(base, bandwidth=acc.scale_up_bandwidth)


def _rail(cluster: hardware.Cluster) -> hardware.Fabric:
    node = cluster.node
    return dataclasses.replace(cluster.fabric, bandwidth=node.scale_out_bandwidth / node.gpus)


def hierarchical_phases(op: str, size, cluster: hardware.Cluster, *, inter_algorithm: str = "ring") -> Hierarchical:
    """The phases of a collective on every GPU of ``cluster``, done hierarchically.

    all-reduce: reduce-scatter inside each node over the scale-up link (each GPU ends with ``M/g``
    reduced over its node), all-reduce of those ``M/g`` across the ``N`` nodes, GPU ``i`` of every
    node with GPU ``i`` of the others on its own NIC (one rail per GPU, ``node.scale_out_bandwidth /
    g`` each), then all-gather inside the node. reduce-scatter: the first two phases (the second a
    reduce-scatter); all-gather: the mirror image. Source: the 2D/hierarchical all-reduce of
    Jia et al. (2018, sec. 3.2) and NCCL's intra-node/inter-node split; rails: NVIDIA DGX SuperPOD
    reference architecture. ``inter_algorithm`` applies to the cross-node all-reduce.
    """
    op = _op(op)
    inter_algorithm = _algorithm(inter_algorithm, "inter_algorithm")
    if op not in ("all-reduce", "reduce-scatter", "all-gather"):
        raise ValueError(f"op={op!r} has no hierarchical form here; valid: all-reduce, reduce-scatter, all-gather")
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster={_v.show(cluster)} must be an atscale.hardware.Cluster")
    g, nodes = cluster.node.gpus, cluster.num_nodes
    up, rail = _scale_up(cluster.node), _rail(cluster)
    m = _size(size)
    zero = np.zeros_like(m)
    rs = collective_time("reduce-scatter", m, g, up) if op != "all-gather" else zero
    ag = collective_time("all-gather", m, g, up) if op != "reduce-scatter" else zero
    inter_op = op
    algo = inter_algorithm if op == "all-reduce" else "ring"
    inter = collective_time(inter_op, m / g, nodes, rail, algorithm=algo)
    return Hierarchical(op, as_scalar(rs), as_scalar(inter), as_scalar(ag), g, nodes)


def hierarchical_time(op: str, size, cluster: hardware.Cluster, *, inter_algorithm: str = "ring"):
    """Seconds for a hierarchical collective over every GPU of ``cluster``: :func:`hierarchical_phases` ``.total``."""
    return hierarchical_phases(op, size, cluster, inter_algorithm=inter_algorithm).total


def _all_to_all(on_bytes, off_bytes, inside, nodes, up: LinkCost, rail: LinkCost, xp=np):
    """Seconds of one all-to-all whose busiest rank sends ``on_bytes`` to the ``inside - 1`` peers of its node
    over NVLink and ``off_bytes`` to peers on the other ``nodes - 1`` nodes over its NIC, the two concurrently;
    unchecked arithmetic on floats or arrays (``xp``: NumPy or the step-time model's scalar operations)."""
    t_up = xp.where(inside > 1, up.base + (inside - 1) * up.hop + on_bytes / up.rate, 0.0)
    t_out = xp.where(nodes > 1, rail.base + (nodes - 1) * rail.hop + off_bytes / rail.rate, 0.0)
    return xp.maximum(t_up, t_out)


def _all_to_all_tiers(off_bytes, nodes, span, node_gpus, tiers, xp=np):
    """Seconds the tiers above the first hold an all-to-all up: the slowest tier, each carrying the share of a GPU's
    ``off_bytes`` (what leaves its node) bound for peers outside its domain of the tier below, ``(span - D)/(span -
    g)`` with destinations spread evenly over the group's ``span`` GPUs, at that tier's tapered rate, plus its latency
    per peer node; 0 without tiers (the first tier's part is the NIC's, which :func:`_all_to_all` prices). Unchecked."""
    t = 0.0
    lows = [float(node_gpus)] + [domain for domain, _ in tiers[:-1]]
    for low, (_, cost) in list(zip(lows, tiers))[1:]:
        share = xp.minimum(xp.maximum((span - low) / xp.maximum(span - node_gpus, 1.0), 0.0), 1.0)
        t = xp.maximum(t, xp.where(share > 0, cost.base + (nodes - 1) * cost.hop + off_bytes * share / cost.rate, 0.0))
    return t


def all_to_all_time(size, ranks, cluster: hardware.Cluster, *, ranks_per_node=None, span=None):
    """Seconds for one all-to-all over ``ranks`` GPUs of ``cluster``, each sending ``size`` bytes in all (nccl-tests'
    convention: ``size / ranks`` to each rank, itself included, so it sends ``(n - 1)/n`` of it).

    ``ranks_per_node`` of them share each node (default: as many as fit, ``min(ranks, gpus per node)``); the
    others are on ``ranks / ranks_per_node`` nodes. Of what a GPU sends, ``(r - 1)/n`` goes over NVLink and
    ``(n - r)/n`` over its own NIC (one per GPU, rail-optimised), concurrently; the slower sets the time. Unlike an
    all-reduce, nothing can be reduced inside the node first: a hierarchical all-reduce sends ``2 M / g`` per GPU
    over the network, an all-to-all nearly all of ``M``, so across nodes it runs at the NIC's rate, about a ninth
    of NVLink's on an H100 node. The bus bandwidth of an all-to-all is ``(n - 1)/n`` times the algorithm bandwidth
    (nccl-tests' PERFORMANCE.md; :func:`bus_bandwidth_factor`). Each part costs its link's launch latency plus one
    step per peer node or peer GPU (pairwise exchange; Thakur et al. 2005, sec. 4.4). On a multi-tier fabric the
    bytes bound outside each domain cross its tier at that tier's tapered bandwidth (:func:`_all_to_all_tiers`); the
    group spreads evenly over ``span`` GPUs of the rank order (default: its nodes side by side; one group size only).
    Vectorised over ``size``, ``ranks`` and ``ranks_per_node``.
    """
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster={_v.show(cluster)} must be an atscale.hardware.Cluster")
    m = _size(size)
    n = np.asarray(_v.count("ranks", ranks, scalar=False), dtype=float)
    if np.any(n > cluster.num_gpus):
        raise ValueError(f"ranks={_v.show(ranks)} exceeds the cluster's {cluster.num_gpus:,} GPUs; give at most "
                         f"{cluster.num_gpus:,} ranks or a larger cluster")
    g = cluster.node.gpus
    r = np.minimum(n, g) if ranks_per_node is None else np.asarray(
        _v.count("ranks_per_node", ranks_per_node, high=g, scalar=False, unit=f"GPUs of a {g}-GPU node"), dtype=float)
    m, n, r = (np.asarray(x, dtype=float) for x in _v.broadcast(size=m, ranks=n, ranks_per_node=r))
    if np.any(r > n) or np.any(n % r):
        raise ValueError(f"ranks_per_node={_v.show(ranks_per_node)} must divide ranks={_v.show(ranks)} "
                         "(as many group members on every node)")
    fab_up = _scale_up(cluster.node)
    up, rail = _link_cost(fab_up, "ring"), _link_cost(_rail(cluster), "ring")
    t = _all_to_all(m * (r - 1) / n / fab_up.mesh_share(r), m * (n - r) / n, r, n / r, up, rail)
    if cluster.fabric.tiers:
        low = n / r * g
        s = low if span is None else _v.count("span", span, low=int(np.max(low)), high=cluster.num_gpus,
                                              unit="GPUs the group spreads over: at least its nodes' GPUs")
        t = np.maximum(t, _all_to_all_tiers(m * (n - r) / n, n / r, s, float(g), _tier_costs(cluster)))
    return as_scalar(np.where(n > 1, t, 0.0))


# --------------------------------------------------------------------------------------
# Multi-tier fabrics: a collective priced by the tiers its group crosses
# --------------------------------------------------------------------------------------
def _tier_costs(cluster: hardware.Cluster) -> tuple:
    """``((domain, LinkCost), ...)`` of the tiers of ``cluster``'s scale-out fabric, bottom-up; empty when the fabric is
    untiered. The cost of a tier is that of a ring whose neighbours sit in different domains of the tier below: the
    NIC's achievable rate divided by the tier's cumulative taper (:attr:`atscale.hardware.Fabric.tapers`), the NIC's
    per-hop latency plus the latency every tier up to this one adds."""
    fab = cluster.fabric
    if not fab.tiers:
        return ()
    rail = _link_cost(_rail(cluster), "ring")
    out, extra = [], 0.0
    for tier, taper in zip(fab.tiers, fab.tapers):
        extra += tier.latency
        out.append((float(tier.domain), LinkCost(rail.base, rail.hop + extra, rail.rate / taper)))
    return tuple(out)


def _tiered_levels(op, size, ranks, inside, members, up: LinkCost, tiers, xp=np) -> list:
    """Seconds of each level of a hierarchical ``op`` over ``ranks`` GPUs, ``inside`` of them per node, on a tiered
    fabric (the node first, then each tier); unchecked arithmetic on floats or arrays (``xp``: NumPy or the
    step-time model's scalar operations).

    ``members(domain)``: how many of the group's GPUs one domain of ``domain`` GPUs holds. Level by level, bottom-up:
    inside the node on NVLink, then across the domains of each tier at that tier's cost (``tiers``, from
    :func:`_tier_costs`), each level on ``1 / (members below)`` of the data; the level where the group is whole runs
    ``op`` itself, the levels below it a reduce-scatter on the way up and an all-gather on the way down (all-reduce),
    or ``op`` alone (reduce-scatter, all-gather). Per rank the bytes telescope to the flat ring's
    (``sum_k (r_k - 1)/(r_1 ... r_k) = 1 - 1/(r_1 ... r_K)``), so without a taper only the latency terms differ."""
    def ring(o, m, r, cost):
        return xp.where(r > 1, _time(o, "ring", m, xp.maximum(r, 2.0), cost), 0.0)

    node = 0.0
    if op != "all-gather":
        node = node + ring("reduce-scatter", size, inside, up)
    if op != "reduce-scatter":
        node = node + ring("all-gather", size, inside, up)
    levels, below, chunk = [node], inside, size / inside
    for domain, cost in tiers:
        whole = xp.minimum(xp.maximum(members(domain), below), ranks)
        r = xp.ceil(whole / below - 1e-9)
        if op == "all-reduce":
            levels.append(xp.where(whole >= ranks, ring(op, chunk, r, cost),
                                   ring("reduce-scatter", chunk, r, cost) + ring("all-gather", chunk, r, cost)))
        else:
            levels.append(ring(op, chunk, r, cost))
        below, chunk = whole, chunk / r
    return levels


def _tiered(op, size, ranks, inside, members, up: LinkCost, tiers, xp=np):
    """Seconds of the whole hierarchical collective: the sum of :func:`_tiered_levels`."""
    return sum(_tiered_levels(op, size, ranks, inside, members, up, tiers, xp)[1:],
               _tiered_levels(op, size, ranks, inside, members, up, (), xp)[0])


@dataclass(frozen=True)
class TieredCollective:
    """A collective on a multi-tier fabric, level by level (what the tier figures draw).

    Attributes:
        op: the collective.
        ranks: GPUs in the group.
        span: GPUs of consecutive rank order the group spreads over (its members evenly spaced in it).
        levels: ``"node"`` (NVLink), then each tier's name, bottom-up.
        members: the group's GPUs in one domain of each level (the node, then each tier's domain).
        bandwidth: the achievable bytes/s per GPU per direction at each level (the NIC's divided by the taper).
        seconds: the time of each level's phases (reduce-scatter up and all-gather down, or the collective itself),
            seconds; arrays where ``size`` was one.
        crossed: the name of the highest level the group crosses.
    """

    op: str
    ranks: int
    span: int
    levels: tuple
    members: tuple
    bandwidth: tuple
    seconds: tuple
    crossed: str

    @property
    def total(self):
        """Seconds, the levels one after another."""
        return as_scalar(sum(np.asarray(s) for s in self.seconds))


def _cluster(cluster) -> hardware.Cluster:
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster={_v.show(cluster)} must be an atscale.hardware.Cluster (e.g. hardware.Cluster."
                         "of_gpus(hardware.DGX_H100, 16384, hardware.fabric('RoCE 400G (Llama 3 cluster)')))")
    return cluster


def _group(ranks, cluster, ranks_per_node, span) -> tuple[int, int, int]:
    """``(ranks, ranks per node, span)`` of one group, checked against ``cluster``."""
    n = _v.count("ranks", ranks, high=cluster.num_gpus, unit=f"GPUs of the cluster's {cluster.num_gpus:,}")
    g = cluster.node.gpus
    r = min(n, g) if ranks_per_node is None else _v.count("ranks_per_node", ranks_per_node, high=g,
                                                          unit=f"GPUs of a {g}-GPU node")
    if r > n or n % r:
        raise ValueError(f"ranks_per_node={_v.show(ranks_per_node)} must divide ranks={n} (as many group members on "
                         "every node)")
    low = n // r * g if r < g or n > g else n
    s = low if span is None else _v.count("span", span, low=low, high=max(cluster.num_gpus, low),
                                          unit=f"GPUs the group spreads over: at least its {n // r} nodes' GPUs, at "
                                               "most the cluster's")
    return n, r, s


def tiered_phases(op: str, size, ranks, cluster: hardware.Cluster, *, ranks_per_node=None,
                  span=None) -> TieredCollective:
    """The levels of a hierarchical ``op`` (all-reduce, reduce-scatter, all-gather) of ``size`` bytes over ``ranks``
    GPUs of ``cluster`` (:class:`TieredCollective`).

    The group has ``ranks_per_node`` GPUs in each node (default ``min(ranks, gpus per node)``) and spreads evenly over
    ``span`` consecutive GPUs of the rank order (default: its nodes side by side). Inside the node the collective runs
    on NVLink; then, tier by tier, across the domains of the tier below at the NIC's bandwidth divided by the tier's
    cumulative oversubscription, on ``1 / (members below)`` of the data, with each tier's added latency per step.
    A group inside one domain of a tier never pays that tier's taper. On an untiered fabric the one level above the
    node is the non-blocking switch, priced as :func:`hierarchical_phases` prices it. ``size``: bytes, as nccl-tests
    counts it (vectorised). Sources: Jia et al. (2018, sec. 3.2), the hierarchical all-reduce; NCCL's
    intra-node/inter-node split; Llama Team (2024, sec. 3.3.1): the parallel dimensions mapped onto the tiers.
    """
    op = _op(op)
    if op not in ("all-reduce", "reduce-scatter", "all-gather"):
        raise ValueError(f"op={op!r} has no hierarchical form here; valid: all-reduce, reduce-scatter, all-gather "
                         "(all_to_all_time and send_time price the others)")
    cluster = _cluster(cluster)
    n, r, s = _group(ranks, cluster, ranks_per_node, span)
    m = _size(size)
    fab_up = _scale_up(cluster.node)
    up, rail = _link_cost(fab_up, "ring"), _link_cost(_rail(cluster), "ring")
    tiers = _tier_costs(cluster) or ((float(cluster.num_gpus), rail),)
    names = ("node",) + (tuple(t.name for t in cluster.fabric.tiers) or ("network",))
    seconds = _tiered_levels(op, m / fab_up.mesh_share(r), float(n), float(r), lambda d: d * n / s, up, tiers)
    members = [float(r)]
    for domain, _ in tiers:
        members.append(float(min(max(domain * n / s, members[-1]), n)))
    top = next(i for i, count in enumerate(members) if count >= n)
    return TieredCollective(op, n, s, names, tuple(members), (float(up.rate),) + tuple(float(c.rate) for _, c in tiers),
                            tuple(as_scalar(np.asarray(x) + 0.0 * m) for x in seconds), names[top])


def tiered_time(op: str, size, ranks, cluster: hardware.Cluster, *, ranks_per_node=None, span=None):
    """Seconds of a hierarchical ``op`` over ``ranks`` GPUs of a (possibly multi-tier) ``cluster``:
    :func:`tiered_phases` ``.total``. Vectorised over ``size``."""
    return tiered_phases(op, size, ranks, cluster, ranks_per_node=ranks_per_node, span=span).total


def send_time(size, distance, cluster: hardware.Cluster):
    """Seconds of a point-to-point send of ``size`` bytes between two GPUs ``distance`` ranks apart in the rank order
    (a pipeline's neighbouring stages are ``tp * cp`` apart with data parallelism outermost), every GPU sending at
    once: on NVLink inside the node (``distance`` below the node's GPUs); else through the highest tier the pair
    crosses, the lowest whose domain exceeds ``distance`` (the pair sits in two domains of the tier below), at the
    NIC's rate divided by that tier's cumulative taper, with its latency; on an untiered fabric, through the one
    switch. Vectorised over ``size`` and ``distance``. Sources: Narayanan et al. (2021, sec. 4.1) for the pipeline's
    sends; the tiers' figures from the catalog (:data:`atscale.hardware.TIERED_FABRICS`)."""
    cluster = _cluster(cluster)
    m = _size(size)
    d = np.asarray(_v.count("distance", distance, high=max(cluster.num_gpus - 1, 1), scalar=False,
                            unit="ranks between the two GPUs"), dtype=float)
    m, d = _v.broadcast(size=m, distance=d)
    up, rail = _link_cost(_scale_up(cluster.node), "ring"), _link_cost(_rail(cluster), "ring")
    costs = _tier_costs(cluster) or ((float(cluster.num_gpus), rail),)
    t = _time("broadcast", "ring", m, 2.0, up)
    for low, (_, cost) in zip([float(cluster.node.gpus)] + [dom for dom, _ in costs[:-1]], costs):
        t = np.where(d >= low, _time("broadcast", "ring", m, 2.0, cost), t)
    return as_scalar(t)


PLACEMENT_ORDERS = _plan.PLACEMENT_ORDERS
"""The rank orders :func:`dimension_tiers` knows, innermost first (:data:`atscale.plan.PLACEMENT_ORDERS`)."""


def placement_order(plan: Plan, cluster: hardware.Cluster) -> str:
    """The rank order of ``plan`` on ``cluster``: ``plan.order`` when it names one, else the placement the step time
    assumes for the network: data parallelism outermost (``"tp-cp-pp-dp"``, Meta's for Llama 3) on a multi-tier
    fabric, Megatron-Core's default (``"tp-cp-dp-pp"``) on a network of one switch."""
    if not isinstance(plan, Plan):
        raise ValueError(f"plan={_v.show(plan)} must be an atscale.plan.Plan")
    cluster = _cluster(cluster)
    if plan.order is not None:
        return plan.order
    return "tp-cp-pp-dp" if cluster.fabric.tiers else "tp-cp-dp-pp"


@dataclass(frozen=True)
class DimensionTiers:
    """Where each parallel dimension's groups land on a cluster's tiers (what the fabric figure draws).

    Attributes:
        order: the rank order (:data:`PLACEMENT_ORDERS`).
        dims: the dimensions, ``"TP"``, ``"CP"``, ``"EP"`` (mixtures of experts only), ``"PP"``, ``"DP"``.
        sizes: GPUs in one group of each dimension.
        strides: GPUs between neighbouring members of a group in the rank order.
        spans: GPUs of the rank order one group spreads over (``size x stride``).
        crossed: the level each group's traffic climbs to: ``"node"`` (NVLink) or a tier's name (``"network"`` for
            an untiered fabric).
        levels: ``"node"``, then the fabric's tiers, bottom-up.
        domains: GPUs below each level (the node's GPUs, then each tier's domain).
        bandwidth: achievable bytes/s per GPU per direction at each level (NVLink; the NIC's over each tier's taper).
    """

    order: str
    dims: tuple
    sizes: tuple
    strides: tuple
    spans: tuple
    crossed: tuple
    levels: tuple
    domains: tuple
    bandwidth: tuple


def dimension_tiers(plan: Plan, cluster: hardware.Cluster, *, order: str | None = None) -> DimensionTiers:
    """Which tier each parallel dimension of ``plan`` crosses on ``cluster`` (:class:`DimensionTiers`).

    Ranks are numbered in ``order`` (innermost first) and fill nodes, racks and pods in turn, as Megatron-Core numbers
    them and Meta maps them (Llama Team 2024, sec. 3.3.2: tensor parallelism innermost, needing the most bandwidth
    and the least latency, data parallelism outermost, since it tolerates latency and overlaps with compute). A
    group of ``size`` members ``stride`` apart spans ``size x stride`` GPUs and climbs to the lowest level whose
    domain holds that span. ``order=None``: the plan's (:func:`placement_order`).
    """
    if not isinstance(plan, Plan):
        raise ValueError(f"plan={_v.show(plan)} must be an atscale.plan.Plan")
    cluster = _cluster(cluster)
    order = placement_order(plan, cluster) if order is None else _v.choice("order", order, PLACEMENT_ORDERS)
    if plan.gpus > cluster.num_gpus:
        raise ValueError(f"plan={plan.describe()} needs {plan.gpus:,} GPUs; the cluster has {cluster.num_gpus:,}")
    tp, cp, pp, dp = plan.tp, plan.cp, plan.pp, plan.dp
    stride = _plan._rank_strides(plan, order)
    rows = [("TP", tp, stride["tp"]), ("CP", cp, stride["cp"])]
    if plan.ep > 1:
        rows.append(("EP", plan.ep, plan.expert_tp or tp))
    rows += [("PP", pp, stride["pp"]), ("DP", dp, stride["dp"])]
    g = cluster.node.gpus
    fab = cluster.fabric
    levels = ("node",) + (tuple(t.name for t in fab.tiers) or ("network",))
    domains = (g,) + (tuple(t.domain for t in fab.tiers) or (cluster.num_gpus,))
    up, rail = _link_cost(_scale_up(cluster.node), "ring"), _link_cost(_rail(cluster), "ring")
    rates = (up.rate,) + (tuple(cost.rate for _, cost in _tier_costs(cluster)) or (rail.rate,))

    def crossed(span):
        return next((name for name, dom in zip(levels, domains) if span <= dom), levels[-1])

    spans = tuple(size * stride for _, size, stride in rows)
    return DimensionTiers(order, tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows),
                          spans, tuple(crossed(s) if size > 1 else "none" for s, (_, size, _) in zip(spans, rows)),
                          levels, domains, tuple(float(r) for r in rates))


@dataclass(frozen=True)
class TierSweep:
    """A collective's time against the span of its group on several fabrics (what the tier-cost figure draws).

    Attributes:
        op: the collective; size: bytes per GPU, as nccl-tests counts them; stride: GPUs between members.
        ranks: group sizes (read-only array); spans: GPUs each group spreads over, ``ranks x stride`` (read-only).
        fabrics: the fabrics' names; seconds: one read-only array of seconds per fabric, in that order.
        boundaries: ``(name, domain)`` of the first tiered fabric's tiers, the spans where a group starts crossing
            the next tier up.
    """

    op: str
    size: float
    stride: int
    ranks: np.ndarray
    spans: np.ndarray
    fabrics: tuple
    seconds: tuple
    boundaries: tuple


def tier_sweep(op: str, size, fabrics, *, node=hardware.DGX_H100, stride: int = 128,
               max_gpus: int = 24576) -> TierSweep:
    """:func:`tiered_time` of ``op`` on ``size`` bytes for groups of 2, 4, 8, ... members ``stride`` GPUs apart (a
    data-parallel group with ``stride = tp x cp x pp``), up to ``max_gpus`` GPUs of ``node`` on each of ``fabrics``
    (catalog fabrics or their names, scale-out) (:class:`TierSweep`)."""
    op = _op(op)
    m = _v.nonnegative("size", size, scalar=True, unit="bytes")
    if isinstance(fabrics, (str, hardware.Fabric)) or not isinstance(fabrics, (list, tuple)) or not fabrics:
        raise ValueError(f"fabrics={_v.show(fabrics)} must be a non-empty list of scale-out fabrics or their names")
    fabs = [hardware.fabric(f) for f in fabrics]
    if not isinstance(node, hardware.Node):
        raise ValueError(f"node={_v.show(node)} must be an atscale.hardware.Node, e.g. hardware.DGX_H100")
    g = node.gpus
    stride = _v.count("stride", stride, unit="GPUs between members")
    if stride < g and g % stride:
        raise ValueError(f"stride={stride} must divide the node's {g} GPUs or be at least {g}")
    max_gpus = _v.count("max_gpus", max_gpus, low=2 * max(stride, g), unit=f"a multiple of {node.name}'s GPUs")
    top = max_gpus // stride
    ranks = np.unique(np.append(2 ** np.arange(1, int(np.log2(top)) + 1), top))
    per_node = max(g // stride, 1)
    ranks = ranks[ranks % per_node == 0]
    clusters = [hardware.Cluster.of_gpus(node, max_gpus - max_gpus % g, f) for f in fabs]
    seconds = tuple(_frozen([tiered_time(op, m, int(n), cl, ranks_per_node=min(per_node, int(n)),
                                         span=max(int(n) * stride, int(n) // per_node * g)) for n in ranks])
                    for cl in clusters)
    tiered = next((f for f in fabs if f.tiers), None)
    bounds = tuple((t.name, t.domain) for t in tiered.tiers[:-1]) if tiered else ()
    return TierSweep(op, m, stride, _frozen(ranks), _frozen(ranks * stride), tuple(f.name for f in fabs), seconds,
                     bounds)


# --------------------------------------------------------------------------------------
# Model against measurement
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Measurement:
    """A published nccl-tests result.

    ``seconds`` is the measured time; for a bandwidth report it is derived from the reported bus
    bandwidth at a nominal large ``size`` (the bandwidth term dominates there, so the choice of size
    changes the result by well under 1%). ``role`` is ``"calibration"`` (a constant of
    :data:`LINK_MODELS` was fitted on it) or ``"validation"`` (it was not).
    """

    label: str
    op: str
    size: float
    ranks: int
    link: str
    seconds: float
    role: str
    source: str
    algorithm: str = "ring"

    def __post_init__(self):
        if self.role not in ("calibration", "validation"):
            raise ValueError(f"role={_v.show(self.role)} must be 'calibration' or 'validation'")

    @property
    def bus_bandwidth(self) -> float:
        """Measured bus bandwidth, bytes/s."""
        return bus_bandwidth(self.op, self.size, self.ranks, self.seconds)

    @property
    def model_seconds(self) -> float:
        """The model's time for the same collective."""
        return model_time(self)

    @property
    def error(self) -> float:
        """``model / measured - 1`` on the time (positive: the model is slower)."""
        return self.model_seconds / self.seconds - 1


def _from_busbw(label, busbw, ranks, link, role, source, algorithm="ring", op="all-reduce", size=4 * u.GiB):
    return Measurement(label, op, size, ranks, link, size * bus_bandwidth_factor(op, ranks) / busbw, role, source,
                       algorithm)


CALIBRATION: tuple[Measurement, ...] = (
    *(Measurement(f"8 B ring, {n} GPUs", "all-reduce", 8.0, n, "NVLink 3", t, "calibration", _SRC_123)
      for n, t in RING_LATENCY_SERIES.items()),
    _from_busbw("8 × A100 ring, large", 235 * u.GBps, 8, "NVLink 3", "calibration", _SRC_189),
    _from_busbw("8 × H100 NVLS, large", 275 * u.GBps * bus_bandwidth_factor("all-reduce", 8), 8, "NVLink 4",
                "calibration", _SRC_212, algorithm="in-network"),
    _from_busbw("2 nodes NDR, one rail", 48.5 * u.GBps, 2, "InfiniBand NDR", "calibration", _SRC_267,
                op="all-reduce"),
)
"""The measurements the constants of :data:`LINK_MODELS` and :data:`IN_NETWORK` were fitted on.
The InfiniBand point is a maintainer's statement of what one NDR NIC achieves (bus bandwidth of a
collective whose traffic crosses one NIC per GPU), entered as a 2-rank all-reduce on one rail."""

VALIDATION: tuple[Measurement, ...] = (
    _from_busbw("8 × H100 ring, large", 370 * u.GBps, 8, "NVLink 4", "validation", _SRC_212),
    _from_busbw("8 × H100 all-to-all, large", 370 * u.GBps, 8, "NVLink 4", "validation", _SRC_212_A2A,
                op="all-to-all"),
    _from_busbw("8 × A100 80GB (HPE), large", 200 * u.GBps, 8, "NVLink 3", "validation", _SRC_149),
    Measurement("32 B, 2 × A100 (default algorithm)", "all-reduce", 32.0, 2, "NVLink 3", 10.14e-6, "validation",
                _SRC_583),
)
"""Published measurements no constant was fitted on: how far the calibrated model lands."""


def model_time(m: Measurement) -> float:
    """The model's seconds for the collective of a :class:`Measurement`."""
    if not isinstance(m, Measurement):
        raise ValueError(f"m={_v.show(m)} must be an atscale.collectives.Measurement")
    return float(collective_time(m.op, m.size, m.ranks, m.link, algorithm=m.algorithm))


# --------------------------------------------------------------------------------------
# The ring step by step (for the step-through figure)
# --------------------------------------------------------------------------------------
def ring_schedule(ranks: int):
    """Which chunk each rank sends at each step of a ring all-reduce, and how many ranks each holds.

    Returns ``(sends, counts)``: ``sends[s, r]`` is the chunk rank ``r`` sends to rank ``r+1`` at step
    ``s`` (``2(n-1)`` steps); ``counts[s, r, c]`` is how many ranks' contributions rank ``r``'s copy of
    chunk ``c`` holds *after* step ``s`` (``n`` means fully reduced). Steps ``0 .. n-2`` are the
    reduce-scatter (rank ``r`` sends chunk ``r - s``), steps ``n-1 .. 2n-3`` the all-gather (rank ``r``
    sends chunk ``r + 1 - (s - n + 1)``, which it holds fully reduced). Source: Patarasuk & Yuan (2009).
    """
    ranks = _v.count("ranks", ranks, low=2, high=256, unit="the schedule is drawn, so at most 256 ranks")
    n = int(ranks)
    counts = np.ones((n, n), dtype=int)
    sends = np.zeros((2 * (n - 1), n), dtype=int)
    history = np.zeros((2 * (n - 1), n, n), dtype=int)
    r = np.arange(n)
    for s in range(2 * (n - 1)):
        chunk = (r - s) % n if s < n - 1 else (r + 1 - (s - n + 1)) % n
        sends[s] = chunk
        received = counts[r, chunk].copy()
        dst = (r + 1) % n
        if s < n - 1:
            counts[dst, chunk] += received
        else:
            counts[dst, chunk] = received
        history[s] = counts
    return sends, history


def _frozen(array) -> np.ndarray:
    array = np.array(array)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class RingStep:
    """The state of a ring all-reduce after one of its steps (what the step-through figure draws).

    Attributes:
        ranks: ``n``, ranks in the ring.
        step: the step just done, 0-based (``0 .. 2(n-1) - 1``).
        steps: ``2(n-1)``, the steps of the whole all-reduce.
        phase: ``"reduce-scatter"`` (steps ``0 .. n-2``) or ``"all-gather"`` (the rest).
        sends: ``sends[r]``, the chunk rank ``r`` sent to rank ``r+1`` in this step (read-only array, ``n``).
        counts: ``counts[r, c]``, how many ranks' contributions rank ``r``'s copy of chunk ``c`` holds after
            this step; ``n`` means fully reduced (read-only array, ``n x n``).

    Source: :func:`ring_schedule` (Patarasuk & Yuan 2009).
    """

    ranks: int
    step: int
    steps: int
    phase: str
    sends: np.ndarray
    counts: np.ndarray


def ring_step(ranks: int, step: int) -> RingStep:
    """The :class:`RingStep` of a ring all-reduce of ``ranks`` ranks (2 to 256) after ``step`` (0-based, of
    ``2(n-1)``): :func:`ring_schedule` at one step. Source: Patarasuk & Yuan (2009)."""
    n = _v.count("ranks", ranks, low=2, high=256, unit="the schedule is drawn, so at most 256 ranks")
    total = 2 * (n - 1)
    s = _v.count("step", step, low=0, high=total - 1, unit=f"0-based; {n} ranks take 2(n-1) = {total} steps")
    sends, counts = ring_schedule(n)
    return RingStep(n, s, total, "reduce-scatter" if s < n - 1 else "all-gather", _frozen(sends[s]),
                    _frozen(counts[s]))


COST_CURVE_SIZES = _frozen(np.logspace(0, 11, 45))
"""The message sizes of :func:`cost_curve`: 45 points from 1 B to 100 GB, evenly spaced in log (bytes)."""


@dataclass(frozen=True)
class CostCurve:
    """Time and bus bandwidth of one collective against message size (what the cost explorer draws).

    Attributes:
        op, ranks, algorithm: the collective (``algorithm`` with its synonyms resolved), ``ranks`` >= 2.
        link: the fabric's catalog name.
        sizes: message sizes, bytes, as nccl-tests counts them (:data:`COST_CURVE_SIZES`; read-only).
        seconds: :func:`collective_time` at each size, seconds (read-only).
        bus: :func:`bus_bandwidth` at each size, bytes/s per direction (read-only).
        line_rate: the fabric's nominal line rate, bytes/s per direction per GPU (the catalog's
            ``Fabric.bandwidth``; the achievable fraction is :data:`LINK_MODELS`' ``efficiency``).
        knee: :func:`latency_bound_size`, bytes (below it the collective is latency-bound).
    """

    op: str
    ranks: int
    algorithm: str
    link: str
    sizes: np.ndarray
    seconds: np.ndarray
    bus: np.ndarray
    line_rate: float
    knee: float


def cost_curve(op: str = "all-reduce", ranks: int = 8, link="NVLink 4", *, algorithm: str = "ring") -> CostCurve:
    """The :class:`CostCurve` of collective ``op`` on ``ranks`` GPUs (at least 2: a bus bandwidth needs
    traffic) over ``link`` (a catalog fabric or its name) with ``algorithm``, over :data:`COST_CURVE_SIZES`.
    The time is :func:`collective_time` (Hockney 1994; Thakur et al. 2005, Table 1), the bus bandwidth
    nccl-tests' definition (:func:`bus_bandwidth`, ``doc/PERFORMANCE.md``)."""
    n = _v.count("ranks", ranks, low=2, unit="a collective needs at least 2 ranks")
    op, algorithm = _check_pair(op, algorithm)
    fab = hardware.fabric(link)
    t = collective_time(op, COST_CURVE_SIZES, n, fab, algorithm=algorithm)
    bus = bus_bandwidth(op, COST_CURVE_SIZES, n, t)
    return CostCurve(op, n, algorithm, fab.name, COST_CURVE_SIZES, _frozen(t), _frozen(bus), float(fab.bandwidth),
                     float(latency_bound_size(op, n, fab, algorithm=algorithm)))


# --------------------------------------------------------------------------------------
# The gradient all-reduce of a training step
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GradientSync:
    """The data-parallel gradient synchronisation of one step, per GPU.

    Attributes: ``gradient_bytes`` (bytes each GPU's replica group reduces: its shard of the
    model under TP and PP), ``dp`` (ranks of the all-reduce), ``seconds`` (one all-reduce of them,
    hierarchical if the DP group spans nodes with several GPUs each, otherwise a flat ring over one
    rail per GPU), ``bytes_sent`` (per GPU), ``link`` (name).
    """

    gradient_bytes: float
    dp: int
    seconds: float
    bytes_sent: float
    link: str


def gradient_sync(scenario, *, grad_dtype: str = "bf16") -> GradientSync:
    """The gradient all-reduce of a :class:`~atscale.scenario.Scenario` laid out by its ``plan``.

    Each GPU holds ``N / (tp * pp)`` parameters; its gradients (``grad_dtype``) are all-reduced over the
    ``dp`` replicas: ZeRO-1 and ZeRO-2 turn it into a reduce-scatter plus an all-gather of the same
    volume (:func:`atscale.memory.zero_communication_factor`). With ``tp * pp`` a multiple of the GPUs
    per node, the ``dp`` ranks of a group sit in different nodes at the same local index, so each uses
    its own NIC: a flat ring over the scale-out fabric at one NIC per GPU.
    """
    if not all(isinstance(getattr(scenario, a, None), t) for a, t in (("plan", Plan), ("cluster", hardware.Cluster))):
        raise ValueError(f"scenario={_v.show(scenario)} must be an atscale.scenario.Scenario (a model, a cluster "
                         "and a plan), e.g. atscale.scenario.RUNNING_EXAMPLE")
    _v.choice("grad_dtype", grad_dtype, tuple(hardware.BYTES_PER_ELEMENT))
    plan, cluster = scenario.plan, scenario.cluster
    grad = scenario.model.num_params / (plan.tp * plan.pp) * hardware.bytes_per_element(grad_dtype)
    rail = _rail(cluster)
    seconds = float(collective_time("all-reduce", grad, plan.dp, rail))
    sent = float(bytes_sent_per_rank("all-reduce", grad, plan.dp))
    return GradientSync(grad, plan.dp, seconds, sent, rail.name)


def exposed_time(comm_seconds, backward_seconds, *, overlap_fraction=1.0, last_bucket_seconds=0.0):
    """Communication left on the critical path when gradient buckets overlap the backward pass.

    ``max(0, comm - overlap_fraction * backward) + last_bucket``. The all-reduce of a bucket can start
    only once the backward pass has produced it, so at best it hides behind the rest of the backward
    pass; the last bucket (the first layers' gradients) always waits. ``overlap_fraction`` is the share
    of the backward pass that communication can run beside (0: no overlap; 1: all of it). Seconds;
    vectorised. Source: Li et al. (2020), PyTorch Distributed, sec. 3.2.3 (gradient bucketing).
    """
    c = _v.nonnegative("comm_seconds", comm_seconds, unit="seconds")
    b = _v.nonnegative("backward_seconds", backward_seconds, unit="seconds")
    f = _v.number("overlap_fraction", overlap_fraction, low=0, high=1)
    last_bucket_seconds = _v.nonnegative("last_bucket_seconds", last_bucket_seconds, unit="seconds")
    c, b, f, last_bucket_seconds = _v.broadcast(comm_seconds=c, backward_seconds=b, overlap_fraction=f,
                                                last_bucket_seconds=last_bucket_seconds)
    return as_scalar(np.maximum(0.0, c - f * b) + last_bucket_seconds)


# --------------------------------------------------------------------------------------
# NCCL's own latency model of a ring, for comparison (the model above prices a collective across nodes
# hierarchically, one step per node; NCCL runs its all-gather and reduce-scatter as one ring through every GPU)
# --------------------------------------------------------------------------------------
NCCL_TUNING_SOURCE = ("NVIDIA NCCL, src/graph/tuning.cc at commit 5067397 (June 2026): ncclTunerConstantsDefaults "
                      "(baseLatencies, Ring, Simple protocol: 8.4 us; hwLatencies, Ring, Simple: NVLink 3.4 us, NET "
                      "14 us), getNetOverhead (1 us on Intel hosts, tripled for the Simple protocol) and ncclTopoTuneModel "
                      "(a ring's latency: base + (nsteps - nInterSteps) max(intra, net overhead) + nInterSteps inter, "
                      "nsteps = ranks - 1 for an all-gather or reduce-scatter and 2 (ranks - 1) for an all-reduce, "
                      "nInterSteps = nodes - 1, or 2 (nodes - 1) for an all-reduce)")
"""Where :func:`nccl_ring_latency` and :data:`NCCL_RING_LATENCY` are read."""

NCCL_RING_LATENCY = MappingProxyType({"base": 8.4 * u.us, "nvlink": 3.4 * u.us, "net": 14.0 * u.us,
                                      "net_overhead": 3 * 1.0 * u.us})
"""NCCL's latency constants for a ring with the Simple protocol (the one it picks for large messages), s:
``base`` per collective, ``nvlink`` per ring step inside a node, ``net`` per step between nodes, ``net_overhead``
the floor of every step of a ring that leaves its node (getNetOverhead on an Intel host, tripled for Simple);
:data:`NCCL_TUNING_SOURCE`. NCCL's estimates, not measurements; the topology's extra network latency
(``latencyInter`` of its search) is taken as 0."""


def nccl_ring_latency(op: str, ranks, gpus_per_node=8):
    """Seconds of latency NCCL's own cost model gives one ring ``op`` (``"all-gather"``, ``"reduce-scatter"`` or
    ``"all-reduce"``) over ``ranks`` GPUs, ``gpus_per_node`` of them to a node (fewer when ``ranks`` is smaller),
    with the Simple protocol: its base latency plus one hardware latency per ring step, the network's on the steps
    between nodes and NVLink's (at least the network overhead when the ring leaves its node) on the rest
    (:data:`NCCL_RING_LATENCY`, :data:`NCCL_TUNING_SOURCE`). The ring passes every GPU, so the latency grows with
    ``ranks``; the library's :func:`hierarchical_time` takes one step per node across nodes and so grows with the
    nodes. Latency only, no bytes: what a small collective costs at the least. Vectorised over ``ranks``."""
    op = _op(op)
    if op not in ("all-gather", "reduce-scatter", "all-reduce"):
        raise ValueError(f"op={op!r} has no ring latency here; valid: all-gather, reduce-scatter, all-reduce")
    n = np.asarray(_v.count("ranks", ranks, scalar=False), dtype=float)
    g = float(_v.count("gpus_per_node", gpus_per_node))
    return as_scalar(_nccl_ring_latency(op, n, np.minimum(n, g), np))


def _nccl_ring_latency(op: str, n, per_node, xp=np):
    """:func:`nccl_ring_latency` unchecked, with ``per_node`` of the ``n`` ranks on each node (floats or arrays, at
    least 1), for the array operations ``xp`` of the step-time model."""
    nodes = xp.ceil(n / per_node)
    twice = 2.0 if op == "all-reduce" else 1.0
    steps, inter = twice * (n - 1), twice * (nodes - 1)
    c = NCCL_RING_LATENCY
    intra = xp.where(nodes > 1, max(c["nvlink"], c["net_overhead"]), c["nvlink"])
    t = c["base"] + (steps - inter) * intra + inter * c["net"]
    return xp.where(n > 1, t, 0.0)
