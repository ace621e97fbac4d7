"""The hardware catalog: accelerators, nodes, fabrics and clusters.

Every number here is a plain SI float (FLOP/s, bytes, bytes/s, seconds, watts)
and every number carries its provenance in the entry's ``sources`` mapping:
which document it comes from and which *variant* it is. Three variants are
confused so often that the catalog never leaves them implicit:

* **Dense vs sparse FLOP/s.** NVIDIA's headline tensor-core figures since Ampere
  assume 2:4 structured sparsity, which training does not use. The H100 SXM's
  "1,979 TFLOPS BF16" is the sparse figure; the dense peak is half, 989.4 TFLOP/s.
  ``peak_flops`` here is always **dense**.
* **Per direction vs both directions.** NVLink is marketed as the sum of both
  directions ("900 GB/s" for NVLink 4). A ring all-reduce moves data in one
  direction per link at a time, so the catalog stores **per-direction** bandwidth
  (450 GB/s for the H100 SXM) and says so.
* **SXM vs PCIe.** The same chip name ships as an SXM module (higher power, NVLink)
  and a PCIe card (lower clocks, lower power, slower memory): they are separate entries.
* **Nominal vs physical vs usable memory.** "80 GB" on an H100 is a marketing figure,
  not a count of decimal gigabytes: the DRAM is five 16 GiB HBM3 stacks (80 GiB,
  85.9e9 bytes), the driver reports 81,559 MiB (85.5e9 bytes), and CUDA, what an
  allocation hits, 79.11 GiB (84.9e9 bytes). The catalog keeps all four
  (``memory_capacity``, ``memory_physical``, ``memory_usable``, ``memory_allocatable``),
  each sourced; the memory model uses :attr:`Accelerator.usable_memory`.

The catalog is immutable. A "what if" is a new object::

    >>> import dataclasses
    >>> faster = dataclasses.replace(H100_SXM, name="H100 SXM (4 TB/s)", hbm_bandwidth=4e12)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from . import _validate
from . import units as u

__all__ = [
    "DTYPES", "BYTES_PER_ELEMENT", "bytes_per_element", "Accelerator", "FabricTier", "Fabric", "Node", "Cluster",
    "H100_SXM",
    "H100_PCIE", "H100_GRAND_TETON", "H800_SXM", "H200_SXM", "A100_SXM_80GB", "A100_SXM_40GB", "B200", "GB200", "GB300", "MI300X", "ACCELERATORS", "FABRICS",
    "TIERED_FABRICS", "DGX_H100", "DGX_A100", "GRAND_TETON_H100", "HGX_H800", "HGX_H200", "HGX_B200", "GB200_NVL72", "GB300_NVL72", "NODES", "SCALABLE_UNIT_NODES", "accelerator_arg", "accelerator", "fabric", "node",
    "accelerator_table", "node_table", "fabric_table", "fabric_tier_table", "source_table",
]

DTYPES = ("fp64", "tf32", "bf16", "fp16", "fp8")
"""Data types with a peak rate in the catalog. ``fp64`` is the FP64 tensor-core
(matrix) rate where one exists, ``tf32`` the TF32 tensor-core rate (NVIDIA's name;
AMD calls the same format XF32/TF32), all dense."""

BYTES_PER_ELEMENT = MappingProxyType({"fp64": 8.0, "fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0})
"""Bytes one element occupies in memory. TF32 is stored as a 32-bit float: its
reduced mantissa only exists inside the tensor core."""


def bytes_per_element(dtype: str) -> float:
    """Storage size of one element of ``dtype`` in bytes (``'bf16'`` -> 2.0)."""
    try:
        return BYTES_PER_ELEMENT[dtype]
    except (KeyError, TypeError):  # TypeError: an unhashable dtype, e.g. a list
        raise ValueError(f"dtype={dtype!r} is not one of {sorted(BYTES_PER_ELEMENT)}") from None


def _positive(owner: str, name: str, value: float) -> float:

    return _validate.positive(name, value, scalar=True, unit=owner)


def _frozen_mapping(obj, name: str) -> None:
    object.__setattr__(obj, name, MappingProxyType(dict(getattr(obj, name))))


@dataclass(frozen=True)
class Accelerator:
    """One accelerator (GPU) as a datasheet describes it.

    Attributes (all SI):
        name: catalog key, e.g. ``"H100 SXM"``.
        vendor, form_factor, memory_type, year: descriptive.
        peak_flops: dense peak FLOP/s per dtype (keys from :data:`DTYPES`); a dtype
            the hardware lacks is simply absent (the A100 has no FP8).
        memory_capacity: the *nominal* HBM capacity: the datasheet's marketing figure read
            as decimal bytes ("80 GB" -> 80e9). Nodes and tables quote it.
        memory_physical: bytes of DRAM the enabled HBM stacks hold (binary-sized dies, so
            "80 GB" is 80 GiB), or ``None`` where the vendor does not publish the stack layout.
        memory_usable: bytes the driver reports as the device's total memory
            (``nvidia-smi --query-gpu=memory.total``); ``None`` where no published reading was found.
        memory_allocatable: bytes CUDA reports as the device's total (``cudaMemGetInfo``, PyTorch's
            ``total_memory`` and the "total capacity" of its out-of-memory message), the ceiling an
            allocation hits: below the driver's figure by the memory the driver reserves for itself;
            ``None`` where no published reading was found.
        hbm_bandwidth: peak HBM bandwidth in bytes/s.
        scale_up_bandwidth: GPU-to-GPU bandwidth of the scale-up link (NVLink,
            Infinity Fabric) in bytes/s **per direction**, all links of one GPU together.
        scale_up_fabric: name of that link in :data:`FABRICS`.
        tdp: maximum board power in watts.
        measured_matmul_flops: the highest matmul FLOP/s actually measured per dtype
            (a published benchmark, not a datasheet), where one exists.
        sources: field name -> where the figure comes from and which variant it is.
        assumed_matmul_flops: a best-shape matmul FLOP/s per dtype taken from another part where
            none of this one's is published (its reason under ``sources``); the cost models read it
            as :meth:`matmul_rate` does, the accuracy appendix never compares it with a peak.
    """

    name: str
    vendor: str
    form_factor: str
    year: int
    peak_flops: Mapping[str, float]
    memory_capacity: float
    memory_type: str
    hbm_bandwidth: float
    scale_up_bandwidth: float
    scale_up_fabric: str
    tdp: float
    measured_matmul_flops: Mapping[str, float] = field(default_factory=dict)
    memory_physical: float | None = None
    memory_usable: float | None = None
    memory_allocatable: float | None = None
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    assumed_matmul_flops: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self):
        for name in ("peak_flops", "measured_matmul_flops", "sources", "assumed_matmul_flops"):
            _frozen_mapping(self, name)
        object.__setattr__(self, "year", _validate.count("year", self.year, unit=self.name))
        for name in ("memory_capacity", "hbm_bandwidth", "scale_up_bandwidth", "tdp"):
            _positive(self.name, name, getattr(self, name))
        for name in ("memory_physical", "memory_usable", "memory_allocatable"):
            if getattr(self, name) is not None:
                _positive(self.name, name, getattr(self, name))
        for mapping in ("peak_flops", "measured_matmul_flops", "assumed_matmul_flops"):
            for dtype, value in getattr(self, mapping).items():
                if dtype not in DTYPES:
                    raise ValueError(f"{self.name}: {mapping} has dtype={dtype!r}; valid: {DTYPES}")
                _positive(self.name, f"{mapping}[{dtype!r}]", value)

    @property
    def usable_memory(self) -> float:
        """Bytes the memory model may fill: :attr:`memory_allocatable` (CUDA's total, the ceiling an
        allocation hits) where a reading is published; else :attr:`memory_usable` (the driver's
        figure, a little above it: 0.6e9 bytes on the H100 and the H200); else the nominal
        :attr:`memory_capacity`, below both on every accelerator where all are known (H100: 84.9e9
        and 85.5e9 against 80e9). The CUDA context (0.5-1 GB) still comes out of it, and is not
        modelled."""
        for value in (self.memory_allocatable, self.memory_usable):
            if value is not None:
                return value
        return self.memory_capacity

    @property
    def fabric(self) -> "Fabric":
        """The :class:`Fabric` entry of this accelerator's scale-up link (``scale_up_fabric``)."""
        return fabric(self.scale_up_fabric)

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype``; ``ValueError`` if the accelerator lacks it."""
        if not isinstance(dtype, str) or dtype not in self.peak_flops:
            raise ValueError(
                f"dtype={_validate.show(dtype)} is not supported by {self.name}; it has {sorted(self.peak_flops)}"
            )
        return self.peak_flops[dtype]

    def measured(self, dtype: str) -> float | None:
        """Measured achievable matmul FLOP/s for ``dtype``, or ``None`` if none is published."""
        self.peak(dtype)  # validates dtype
        return self.measured_matmul_flops.get(dtype)

    def matmul_rate(self, dtype: str) -> float | None:
        """The best-shape matmul FLOP/s the cost models take for ``dtype``: :meth:`measured` where published, else
        :attr:`assumed_matmul_flops` (another part's, said in ``sources``), else ``None``."""
        measured = self.measured(dtype)
        return measured if measured is not None else self.assumed_matmul_flops.get(dtype)

    def source(self, field_name: str) -> str:
        """Where ``field_name`` comes from (its document and variant)."""
        if field_name not in self.sources:
            raise ValueError(f"{self.name} has no source for {field_name!r}; sourced fields: {sorted(self.sources)}")
        return self.sources[field_name]


@dataclass(frozen=True)
class FabricTier:
    """One tier of switches of a multi-tier scale-out fabric (a folded Clos or fat tree).

    A tier joins the domains of the tier below it (the nodes, for the first tier) into a domain of ``domain`` GPUs:
    a leaf (top-of-rack or rail) tier joins the nodes of a rack or a scalable unit, a spine tier the leaves of a pod,
    a third (core, aggregation) tier the pods. Traffic between two GPUs climbs to the lowest tier whose domain holds
    both, and comes back down.

    Attributes:
        name: what the source calls the tier (``"leaf"``, ``"spine"``, ``"aggregation"``).
        domain: GPUs below one switch group of this tier (a count, e.g. 3,072 for a Llama 3 pod).
        oversubscription: the ratio of the bandwidth the domains below can inject into this tier to what it carries
            between them, dimensionless, ``>= 1`` (1: full bisection; 7 above Meta's pods). Tapers compound: traffic
            crossing a tier gets the NIC's bandwidth divided by the product of the oversubscriptions of every tier
            up to and including it.
        latency: seconds this tier adds to a message's one-way latency when the message crosses it (the extra
            switch traversals up to it and back down, and the fibre), ``>= 0``; the first tier's is 0, its one
            switch being counted in :attr:`Fabric.latency`.
        rail_optimised: whether the tier is a rail-optimised leaf: NIC ``i`` of every node of the domain on rail
            switch ``i``, so traffic between GPUs of the same local index never leaves the leaf (NVIDIA DGX SuperPOD
            reference architecture); else one switch serves all NICs of a rack (Meta's top-of-rack switches).
        sources: field name -> provenance.
    """

    name: str
    domain: int
    oversubscription: float = 1.0
    latency: float = 0.0
    rail_optimised: bool = False
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        _frozen_mapping(self, "sources")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name={_validate.show(self.name)} must be a non-empty string (e.g. 'leaf', 'spine')")
        object.__setattr__(self, "domain", _validate.count("domain", self.domain, low=2, unit="GPUs below the tier"))
        object.__setattr__(self, "oversubscription", _validate.number(
            "oversubscription", self.oversubscription, low=1, scalar=True,
            unit="downlink to uplink bandwidth; 1 is full bisection"))
        object.__setattr__(self, "latency", _validate.nonnegative("latency", self.latency, scalar=True,
                                                                   unit="seconds"))
        object.__setattr__(self, "rail_optimised", _validate.flag("rail_optimised", self.rail_optimised))


@dataclass(frozen=True)
class Fabric:
    """An interconnect technology, described per port (scale-out) or per GPU (scale-up).

    Attributes:
        name: catalog key, e.g. ``"InfiniBand NDR"``.
        kind: ``"scale-up"`` (inside a node or NVLink domain) or ``"scale-out"`` (between nodes).
        bandwidth: bytes/s **per direction**: per port for scale-out fabrics, per GPU
            (all links together) for scale-up fabrics.
        latency: typical one-way small-message latency in seconds, end to end through one
            switch; an order-of-magnitude figure for the alpha term of alpha-beta models.
        year: first shipping year.
        sources: field name -> provenance.
        mesh_links: ``None`` for a switched fabric (NVLink through NVSwitch, InfiniBand): every GPU reaches
            any group of peers at its full ``bandwidth``. For a scale-up fabric wired as a full mesh of
            point-to-point links (AMD's Infinity Fabric on an 8-GPU MI300X platform), the number of links per
            GPU, each carrying ``bandwidth / mesh_links``: a group of ``k`` GPUs uses only the ``k - 1`` links
            joining its members (:meth:`group_bandwidth`).
        tiers: the switch tiers of a scale-out fabric, bottom-up (:class:`FabricTier`; domains increasing, each a
            multiple of the one below). Empty (the default): one non-blocking switch joins every node, the model
            every untiered entry of the catalog keeps (:mod:`atscale.collectives` prices an untiered fabric exactly
            as it always has).
    """

    name: str
    kind: str
    bandwidth: float
    latency: float
    year: int
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    mesh_links: int | None = None
    tiers: tuple = ()

    def __post_init__(self):
        _frozen_mapping(self, "sources")
        if self.kind not in ("scale-up", "scale-out"):
            raise ValueError(f"{self.name}: kind={self.kind!r} must be 'scale-up' or 'scale-out'")
        _positive(self.name, "bandwidth", self.bandwidth)
        _positive(self.name, "latency", self.latency)
        object.__setattr__(self, "year", _validate.count("year", self.year, unit=self.name))
        if self.mesh_links is not None:
            object.__setattr__(self, "mesh_links", _validate.count("mesh_links", self.mesh_links))
        object.__setattr__(self, "tiers", _checked_tiers(self.name, self.kind, self.tiers))

    @property
    def tapers(self) -> tuple:
        """The cumulative oversubscription of each tier (dimensionless, bottom-up): traffic crossing tier ``k`` gets
        ``bandwidth / tapers[k]`` per GPU. Empty for an untiered fabric."""
        out, taper = [], 1.0
        for tier in self.tiers:
            taper *= tier.oversubscription
            out.append(taper)
        return tuple(out)

    @property
    def link_bandwidth(self) -> float:
        """Bytes/s per direction of one point-to-point link of a full mesh (``bandwidth / mesh_links``); the whole
        ``bandwidth`` for a switched fabric."""
        return self.bandwidth / self.mesh_links if self.mesh_links else self.bandwidth

    def mesh_share(self, ranks):
        """Fraction of ``bandwidth`` a group of ``ranks`` GPUs can use (dimensionless, vectorised): 1 on a switched
        fabric; ``min(ranks - 1, mesh_links) / mesh_links`` on a full mesh, whose GPUs talk to the group's other
        members over one direct link each (a pair: one link, 1/7 of an MI300X's 448 GB/s). Sources: AMD Instinct
        MI300X platform data sheet (seven links per GPU, fully connected); RCCL's README on using fewer than 8
        MI300X GPUs (ROCm/rccl pull request 1270): a smaller group reaches only a fraction of the bandwidth."""
        import numpy as np

        if not self.mesh_links:
            return 1.0 if _validate.is_scalar(ranks) else np.ones(np.shape(ranks))
        n = np.asarray(ranks, dtype=float)
        share = np.clip(n - 1, 1, self.mesh_links) / self.mesh_links
        return float(share) if share.ndim == 0 else share

    def group_bandwidth(self, ranks):
        """Bytes/s per direction per GPU that a group of ``ranks`` GPUs gets: ``bandwidth * mesh_share(ranks)``."""
        return self.bandwidth * self.mesh_share(ranks)


def _checked_tiers(name: str, kind: str, tiers) -> tuple:
    """``tiers`` as a tuple of :class:`FabricTier`, checked: only a scale-out fabric has tiers, and each tier's
    domain is a multiple of the one below it."""
    if isinstance(tiers, FabricTier) or not isinstance(tiers, (tuple, list)):
        raise ValueError(f"{name}: tiers={_validate.show(tiers)} must be a tuple of atscale.hardware.FabricTier, "
                         "bottom-up (empty: one non-blocking switch)")
    tiers = tuple(tiers)
    if tiers and kind != "scale-out":
        raise ValueError(f"{name}: tiers={_validate.show(tiers)} are for a scale-out fabric; this one is {kind}")
    for i, tier in enumerate(tiers):
        if not isinstance(tier, FabricTier):
            raise ValueError(f"{name}: tiers[{i}]={_validate.show(tier)} must be an atscale.hardware.FabricTier")
        if i and (tier.domain <= tiers[i - 1].domain or tier.domain % tiers[i - 1].domain):
            raise ValueError(f"{name}: tiers[{i}].domain={tier.domain} must be a larger multiple of the tier below's "
                             f"{tiers[i - 1].domain} GPUs (tiers are listed bottom-up)")
    return tiers


@dataclass(frozen=True)
class Node:
    """A server: accelerators, their scale-up fabric, NICs and power supplies.

    Attributes:
        name: catalog key, e.g. ``"DGX H100"``.
        accelerator: the :class:`Accelerator` it holds.
        gpus: accelerators per node.
        nics: compute-fabric NICs per node (storage and management NICs excluded).
        nic_bandwidth: bytes/s per NIC, per direction.
        psus: power supplies per node.
        sources: field name -> provenance.
    """

    name: str
    accelerator: Accelerator
    gpus: int
    nics: int
    nic_bandwidth: float
    psus: int
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        _frozen_mapping(self, "sources")
        if not isinstance(self.accelerator, Accelerator):
            raise ValueError(f"accelerator={_validate.show(self.accelerator)} must be an atscale.hardware.Accelerator "
                             "(hardware.accelerator(name) gives a catalog one)")
        for name in ("gpus", "nics", "psus"):
            object.__setattr__(self, name, _validate.count(name, getattr(self, name), unit=self.name))
        _positive(self.name, "nic_bandwidth", self.nic_bandwidth)

    @property
    def memory_capacity(self) -> float:
        """Total accelerator memory of the node in bytes."""
        return self.gpus * self.accelerator.memory_capacity

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s of all the node's accelerators together."""
        return self.gpus * self.accelerator.peak(dtype)

    @property
    def scale_out_bandwidth(self) -> float:
        """Bytes/s per direction leaving the node through its compute NICs."""
        return self.nics * self.nic_bandwidth


@dataclass(frozen=True)
class Cluster:
    """``num_nodes`` identical nodes joined by a scale-out fabric: one non-blocking switch, or the tiers of
    ``fabric.tiers`` (the first tier's domain a multiple of the node's GPUs). A cluster larger than the top tier's
    domain is priced as if that tier extended over it."""

    node: Node
    num_nodes: int
    fabric: Fabric

    def __post_init__(self):

        if not isinstance(self.node, Node):
            raise ValueError(f"node={_validate.show(self.node)} must be an atscale.hardware.Node")
        if not isinstance(self.fabric, Fabric):
            raise ValueError(f"fabric={_validate.show(self.fabric)} must be an atscale.hardware.Fabric")
        object.__setattr__(self, "num_nodes", _validate.count("num_nodes", self.num_nodes))
        if self.fabric.kind != "scale-out":
            raise ValueError(f"fabric={self.fabric.name!r} is a {self.fabric.kind} fabric; a cluster needs a scale-out one")
        if self.fabric.tiers and self.fabric.tiers[0].domain % self.node.gpus:
            raise ValueError(f"fabric={self.fabric.name!r}: its first tier's domain of {self.fabric.tiers[0].domain} GPUs "
                             f"is not a whole number of {self.node.name}'s {self.node.gpus}-GPU nodes")

    @classmethod
    def of_gpus(cls, node: Node, gpus: int, fabric: Fabric) -> "Cluster":
        """A cluster of ``gpus`` accelerators; ``gpus`` must be a multiple of ``node.gpus``."""

        gpus = _validate.count("gpus", gpus, unit=f"a multiple of {node.gpus}")
        if gpus % node.gpus:
            raise ValueError(f"gpus={gpus!r} must be a positive multiple of {node.name}'s {node.gpus} GPUs per node")
        return cls(node=node, num_nodes=gpus // node.gpus, fabric=fabric)

    @property
    def num_gpus(self) -> int:
        return self.num_nodes * self.node.gpus

    @property
    def accelerator(self) -> Accelerator:
        return self.node.accelerator

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s of the whole cluster."""
        return self.num_gpus * self.accelerator.peak(dtype)

    @property
    def name(self) -> str:
        return f"{self.num_gpus:,} × {self.accelerator.name} ({self.num_nodes:,} × {self.node.name}, {self.fabric.name})"


# --------------------------------------------------------------------------------------
# Sources. Short keys, cited in full in the Hardware catalog appendix and references.bib.
# --------------------------------------------------------------------------------------
_H100_DS = "NVIDIA H100 Tensor Core GPU datasheet (2023)"
_H200_DS = "NVIDIA H200 Tensor Core GPU datasheet (2024)"
_A100_DS = "NVIDIA A100 Tensor Core GPU datasheet (2021)"
_B200_DS = "NVIDIA DGX B200 / HGX B200 datasheet (2024), HGX B200 1,000 W configuration"
_MI300X_DS = "AMD Instinct MI300X data sheet (2023)"
_MAMF = "Bekman, Machine Learning Engineering, 'Maximum Achievable Matmul FLOPS' table (BF16 matmul, best shape)"
_MAMF_2026 = ("Bekman, Machine Learning Engineering, 'Maximum Achievable Matmul FLOPS' table, revision of August 2026 "
              "(commit 744d01e; BF16 and FP8 e4m3 matmul, best shape found, mean of 100 iterations after 50 warm-up)")
_DENSE = "dense (the datasheet's headline figure with 2:4 sparsity is twice this)"
_PER_DIR = "per direction, all links of one GPU (the marketed figure sums both directions)"
_HOPPER_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022)"
_A100_WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020)"
_SMI = "nvidia-smi's memory.total (the driver's figure) as printed in public nvidia-smi logs"
_NOMINAL = "nominal: the marketing figure, read here as decimal bytes"
_NO_SMI = "no published driver reading found; the memory model falls back to the nominal figure"
_CUDA_TOTAL = "CUDA's total device memory (cudaMemGetInfo), as PyTorch reports it"

H100_SXM = Accelerator(
    name="H100 SXM",
    vendor="NVIDIA",
    form_factor="SXM5",
    year=2022,
    peak_flops={"fp64": 66.9e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12, "fp8": 1978.9e12},
    memory_capacity=80 * u.GB,
    memory_type="HBM3",
    hbm_bandwidth=3.35 * u.TBps,
    scale_up_bandwidth=450 * u.GBps,
    scale_up_fabric="NVLink 4",
    tdp=700 * u.W,
    measured_matmul_flops={"bf16": 792.1e12, "fp8": 1402.6e12},
    memory_physical=80 * u.GiB,
    memory_usable=81559 * u.MiB,
    memory_allocatable=79.11 * u.GiB,
    sources={
        "peak_flops": f"{_H100_DS}, SXM column; {_DENSE}; fp64 is FP64 Tensor Core (vector FP64: 34 TFLOP/s)",
        "memory_capacity": f"{_H100_DS}: 80 GB HBM3 ({_NOMINAL})",
        "memory_physical": f"{_HOPPER_WP}: five HBM3 stacks of 16 GiB = 80 GiB (85.9e9 bytes)",
        "memory_usable": f"{_SMI} (e.g. NVIDIA/nccl GitHub issue 1264, 'NVIDIA H100 80GB HBM3'): 81,559 MiB "
        "= 85.52e9 bytes",
        "memory_allocatable": f"{_CUDA_TOTAL} on an H100 80 GB (vllm-project/vllm GitHub issue 27508, 'GPU 0 has a "
        "total capacity of 79.11 GiB'): 84.94e9 bytes, 0.58e9 below the driver's figure; other 80 GB cards' "
        "messages print 79.1-79.35 GiB",
        "hbm_bandwidth": f"{_H100_DS}: 3.35 TB/s",
        "scale_up_bandwidth": f"{_H100_DS}: NVLink 900 GB/s, i.e. 450 GB/s {_PER_DIR}",
        "tdp": f"{_H100_DS}: up to 700 W (configurable)",
        "measured_matmul_flops": f"{_MAMF}: BF16 792.1 TFLOP/s, CUDA 12.1 (80.1% of dense peak); {_MAMF_2026}: "
        "FP8 1402.6 TFLOP/s at 1024 x 9216 x 14336, torch 2.7.0+cu126 (70.9%; the same revision's BF16 row: 794.5)",
    },
)

H800_SXM = dataclasses.replace(
    H100_SXM,
    name="H800 SXM",
    year=2023,
    scale_up_bandwidth=200 * u.GBps,
    scale_up_fabric="NVLink 4 (H800)",
    measured_matmul_flops={},
    sources={
        **{k: v for k, v in H100_SXM.sources.items() if k != "measured_matmul_flops"},
        "peak_flops": f"NVIDIA H800 Tensor Core GPU datasheet (2023), SXM column: the H100 SXM's Tensor Core rates "
        f"(BF16 1,979 TFLOP/s with sparsity); {_DENSE}",
        "scale_up_bandwidth": "NVIDIA H800 datasheet: NVLink 400 GB/s (both directions), i.e. 200 GB/s per direction "
        "per GPU; DeepSeek-AI (2024), DeepSeek-V3 Technical Report, sec. 3.2.2, quotes 160 GB/s",
        "memory_usable": "no H800 driver reading found: the H100 SXM's (the same 80 GB HBM3 part), assumed",
        "memory_allocatable": "no H800 reading found: the H100 SXM's, assumed",
    },
)

H100_PCIE = Accelerator(
    name="H100 PCIe",
    vendor="NVIDIA",
    form_factor="PCIe Gen5",
    year=2022,
    peak_flops={"fp64": 51.2e12, "tf32": 378e12, "bf16": 756.5e12, "fp16": 756.5e12, "fp8": 1513e12},
    memory_capacity=80 * u.GB,
    memory_type="HBM2e",
    hbm_bandwidth=2.0 * u.TBps,
    scale_up_bandwidth=300 * u.GBps,
    scale_up_fabric="NVLink bridge",
    tdp=350 * u.W,
    memory_physical=80 * u.GiB,
    sources={
        "peak_flops": f"{_H100_DS}, PCIe column; {_DENSE}; fp64 is FP64 Tensor Core",
        "memory_capacity": f"{_H100_DS}: 80 GB ({_NOMINAL})",
        "memory_physical": f"{_HOPPER_WP}: five HBM2e stacks of 16 GiB = 80 GiB",
        "memory_usable": _NO_SMI,
        "hbm_bandwidth": f"{_H100_DS}: 2 TB/s",
        "scale_up_bandwidth": f"{_H100_DS}: NVLink bridge 600 GB/s between a pair of cards, i.e. 300 GB/s {_PER_DIR} "
        "(without the bridge, PCIe Gen5 x16 gives 64 GB/s per direction)",
        "tdp": f"{_H100_DS}: 300-350 W",
    },
)

_TITAN = ("torchtitan team (PyTorch), Llama 3 performance benchmarks on H100, end of 2024 "
          "(pytorch/torchtitan, benchmarks/llama3_h100_202412_torchtitan.md), 'Hardware' and footnote 2")
_H100_NVL = "NVIDIA H100 NVL datasheet (2024): BF16 1,671 TFLOP/s with sparsity, i.e. 835.5 dense"
_H100_NVL_PEAKS = {"fp64": 60e12, "tf32": 417.5e12, "bf16": 835.5e12, "fp16": 835.5e12, "fp8": 1670.5e12}
"""The H100 NVL's dense Tensor Core rates, FLOP/s (its datasheet's figures with sparsity, halved; FP64 Tensor Core
as printed): the other end of the Grand Teton H100's range."""

H100_GRAND_TETON = Accelerator(
    name="H100 SXM 96 GB (500 W)",
    vendor="NVIDIA",
    form_factor="SXM5",
    year=2023,
    peak_flops={k: (H100_SXM.peak_flops[k] + nvl) / 2 for k, nvl in _H100_NVL_PEAKS.items()},
    memory_capacity=96 * u.GB,
    memory_type="HBM2e",
    hbm_bandwidth=2.4 * u.TBps,
    scale_up_bandwidth=450 * u.GBps,
    scale_up_fabric="NVLink 4",
    tdp=500 * u.W,
    sources={
        "peak_flops": f"{_TITAN}: 'HBM2e-based SXM H100 with lower TDP, the actual peak TFLOPs number is between SXM "
        f"and NVL, and we don't know its exact value'. Taken as the midpoint of the H100 SXM's dense rates "
        f"({_H100_DS}) and the H100 NVL's ({_H100_NVL}; TF32 417.5, FP8 1,670.5, FP64 Tensor Core 60): an "
        "assumption; the ends of that range move a compute-bound step by -7.8 % (SXM) and +9.2 % (NVL)",
        "memory_capacity": f"{_TITAN}: 'Each H100 GPU is equipped with 96GB HBM2e' ({_NOMINAL})",
        "memory_physical": "not published (96 GB suggests all six of the GH100 package's HBM sites populated)",
        "memory_usable": _NO_SMI,
        "hbm_bandwidth": f"{_TITAN}: '2.4 TB/sec peak memory bandwidth'",
        "scale_up_bandwidth": f"{_TITAN}: '8 NVIDIA H100 GPUs fully connected with NVLink'; an SXM H100's NVLink 4, "
        f"450 GB/s {_PER_DIR}, assumed",
        "tdp": f"{_TITAN}: 'We used the default 500W power limit'",
    },
)

H200_SXM = Accelerator(
    name="H200 SXM",
    vendor="NVIDIA",
    form_factor="SXM5",
    year=2024,
    peak_flops=dict(H100_SXM.peak_flops),
    memory_capacity=141 * u.GB,
    memory_type="HBM3e",
    hbm_bandwidth=4.8 * u.TBps,
    scale_up_bandwidth=450 * u.GBps,
    scale_up_fabric="NVLink 4",
    tdp=700 * u.W,
    measured_matmul_flops={"fp8": 1453.4e12},
    memory_usable=143771 * u.MiB,
    memory_allocatable=150_109_880_320.0,
    sources={
        "peak_flops": f"{_H200_DS}, SXM column; {_DENSE}; same chip and clocks as the H100 SXM",
        "memory_capacity": f"{_H200_DS}: 141 GB HBM3e ({_NOMINAL})",
        "memory_physical": "not published by NVIDIA (trade press reports six 24 GB HBM3e stacks, 144 GiB, "
        "of which 141 are enabled; not used here)",
        "memory_usable": f"{_SMI} ('NVIDIA H200'): 143,771 MiB = 150.75e9 bytes",
        "memory_allocatable": f"{_CUDA_TOTAL}, measured for this book on an H200 (the roofline chapter's run, "
        "torch.cuda.get_device_properties(0).total_memory): 150,109,880,320 bytes, 0.64e9 below the driver's "
        "figure of the same card",
        "hbm_bandwidth": f"{_H200_DS}: 4.8 TB/s",
        "scale_up_bandwidth": f"{_H200_DS}: NVLink 900 GB/s, i.e. 450 GB/s {_PER_DIR}",
        "tdp": f"{_H200_DS}: up to 700 W",
        "measured_matmul_flops": f"{_MAMF_2026}: FP8 1453.4 TFLOP/s at 1280 x 4096 x 12032, torch 2.7.1+cu128 "
        "(73.4% of dense peak); its BF16 row is the H100's ('H200 is the same'), and the book's own H200 "
        "measurement (the roofline chapter) gives 794.4, so no BF16 figure is entered here",
    },
)

A100_SXM_80GB = Accelerator(
    name="A100 SXM 80GB",
    vendor="NVIDIA",
    form_factor="SXM4",
    year=2020,
    peak_flops={"fp64": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
    memory_capacity=80 * u.GB,
    memory_type="HBM2e",
    hbm_bandwidth=2039 * u.GBps,
    scale_up_bandwidth=300 * u.GBps,
    scale_up_fabric="NVLink 3",
    tdp=400 * u.W,
    measured_matmul_flops={"bf16": 267.9e12},
    memory_physical=80 * u.GiB,
    memory_usable=81920 * u.MiB,
    sources={
        "peak_flops": f"{_A100_DS}, SXM column; {_DENSE}; no FP8 on Ampere; fp64 is FP64 Tensor Core",
        "memory_capacity": f"{_A100_DS}: 80 GB HBM2e ({_NOMINAL})",
        "memory_physical": f"{_A100_WP}: five HBM2e stacks enabled; 80 GiB, which the driver reports in full",
        "memory_usable": f"{_SMI} (e.g. modal-labs/modal-client pull request 2797, 'A100 80GB'): 81,920 MiB "
        "= 85.90e9 bytes",
        "hbm_bandwidth": f"{_A100_DS}: 2,039 GB/s",
        "scale_up_bandwidth": f"{_A100_DS}: NVLink 600 GB/s, i.e. 300 GB/s {_PER_DIR}",
        "tdp": f"{_A100_DS}: 400 W",
        "measured_matmul_flops": f"{_MAMF}: 267.9 TFLOP/s, CUDA 12.1 (85.9% of dense peak)",
    },
)

A100_SXM_40GB = dataclasses.replace(
    A100_SXM_80GB,
    name="A100 SXM 40GB",
    memory_capacity=40 * u.GB,
    memory_type="HBM2",
    hbm_bandwidth=1555 * u.GBps,
    measured_matmul_flops={},
    memory_physical=40 * u.GiB,
    memory_usable=40960 * u.MiB,
    sources={
        **A100_SXM_80GB.sources,
        "memory_capacity": f"{_A100_DS}: 40 GB HBM2 ({_NOMINAL})",
        "memory_physical": f"{_A100_WP}: five HBM2 stacks enabled; 40 GiB, which the driver reports in full",
        "memory_usable": f"{_SMI} (e.g. modal-labs/modal-client pull request 2797, 'A100 40GB'): 40,960 MiB "
        "= 42.95e9 bytes",
        "hbm_bandwidth": f"{_A100_DS}: 1,555 GB/s",
        "measured_matmul_flops": "none published for the 40 GB part",
    },
)

B200 = Accelerator(
    name="B200",
    vendor="NVIDIA",
    form_factor="SXM (HGX B200)",
    year=2024,
    peak_flops={"fp64": 40e12, "tf32": 1100e12, "bf16": 2250e12, "fp16": 2250e12, "fp8": 4500e12},
    memory_capacity=180 * u.GB,
    memory_type="HBM3e",
    hbm_bandwidth=8.0 * u.TBps,
    scale_up_bandwidth=900 * u.GBps,
    scale_up_fabric="NVLink 5",
    tdp=1000 * u.W,
    measured_matmul_flops={"bf16": 1745.0e12, "fp8": 3432.5e12},
    memory_usable=183359 * u.MiB,
    sources={
        "peak_flops": f"{_B200_DS}; per GPU; {_DENSE}",
        "memory_capacity": f"{_B200_DS}: 1,440 GB per 8-GPU system, i.e. 180 GB per GPU (early announcements said "
        f"192 GB) ({_NOMINAL})",
        "memory_physical": "not published per GPU by NVIDIA (the 192 GB of early announcements suggests eight "
        "24 GB stacks with part disabled; not used here)",
        "memory_usable": f"{_SMI} ('NVIDIA B200'): 183,359 MiB = 192.27e9 bytes",
        "hbm_bandwidth": f"{_B200_DS}: 64 TB/s per system, i.e. 8 TB/s per GPU. Kept as the published peak, but "
        "the driver reports a 7,680-bit memory bus at 3,996 MHz on a B200, 7.67 TB/s (pytorch/ao pull request 4002, "
        "March 2026): the datasheet's figure is about 4 % above what the bus carries",
        "scale_up_bandwidth": f"{_B200_DS}: NVLink 5 1.8 TB/s, i.e. 900 GB/s {_PER_DIR}",
        "tdp": f"{_B200_DS}: 1,000 W per GPU",
        "measured_matmul_flops": f"{_MAMF_2026}: BF16 1745.0 TFLOP/s at 1792 x 16128 x 3072 (77.6% of dense peak), "
        "FP8 3432.5 at 15360 x 4096 x 3072 (76.3%), torch 2.7.1+cu128; the board's power limit is not stated",
    },
)

_NVL72_DS = ("NVIDIA GB200 NVL72 datasheet (2024), specifications table: rack totals for 72 Blackwell GPUs, Tensor "
             "Core rates with sparsity")
_NVL72_RACK_SPARSE = {"tf32": 180e15, "bf16": 360e15, "fp16": 360e15, "fp8": 720e15}
"""The GB200 NVL72 datasheet's Tensor Core rates per rack, FLOP/s, with 2:4 sparsity (FP64 apart: 3,240 TFLOP/s, no
sparsity)."""

GB200 = Accelerator(
    name="GB200",
    vendor="NVIDIA",
    form_factor="Superchip module (GB200 NVL72)",
    year=2024,
    peak_flops={"fp64": 3240e12 / 72, **{k: rack / 72 / 2 for k, rack in _NVL72_RACK_SPARSE.items()}},
    memory_capacity=186 * u.GB,
    memory_type="HBM3e",
    hbm_bandwidth=8.0 * u.TBps,
    scale_up_bandwidth=900 * u.GBps,
    scale_up_fabric="NVLink 5",
    tdp=1200 * u.W,
    measured_matmul_flops={"bf16": 1822.0e12, "fp8": 3615.6e12},
    sources={
        "peak_flops": f"{_NVL72_DS}: FP16/BF16 360 PFLOP/s, FP8 720, TF32 180, FP64 3,240 TFLOP/s per rack, i.e. "
        f"per GPU BF16 2.5 PFLOP/s {_DENSE}; third-party per-GPU tables disagree (some print the 1,000 W HGX B200's "
        "2.25 PFLOP/s for the GB200): the datasheet's rack totals are taken",
        "memory_capacity": f"{_NVL72_DS}: up to 13.4 TB HBM3e per rack, i.e. 186 GB per GPU ({_NOMINAL}; MLCommons "
        "inference v6.1 system descriptions of GB200 NVL72 print '186 GB' per accelerator)",
        "memory_physical": "not published per GPU by NVIDIA",
        "memory_usable": _NO_SMI,
        "hbm_bandwidth": f"{_NVL72_DS}: 576 TB/s per rack, i.e. 8 TB/s per GPU",
        "scale_up_bandwidth": f"{_NVL72_DS}: NVLink 130 TB/s per rack, i.e. 1.8 TB/s per GPU, 900 GB/s {_PER_DIR}; "
        "all 72 GPUs of the rack in one NVLink domain",
        "tdp": "not in the NVL72 datasheet; 1,200 W per GPU as third-party tables give it, assumed",
        "measured_matmul_flops": f"{_MAMF_2026}: BF16 1822.0 TFLOP/s at 4096 x 9728 x 2048 (72.9% of dense peak), "
        "FP8 3615.6 at 19456 x 5120 x 1536 (72.3%), torch 2.10.0.dev20250916+cu130",
    },
)

_BW_ULTRA = ("NVIDIA Technical Blog, 'Inside NVIDIA Blackwell Ultra: The Chip Powering the AI Factory Era' (2025): "
             "the Blackwell Ultra GPU of the GB300")
_BEKMAN_TFLOPS = ("Bekman, Machine Learning Engineering, 'TFLOPS comparison table' (compute/accelerator/README.md, "
                  "revision of August 2026), row 'NVIDIA GB300 SXM', per chip without sparsity, and its note 24: the GB300 "
                  "NVL72 the same as the GB200 NVL72 but for faster FP4 and more memory (NVIDIA GB300 NVL72 "
                  "specifications)")

GB300 = Accelerator(
    name="GB300",
    vendor="NVIDIA",
    form_factor="Superchip module (GB300 NVL72)",
    year=2025,
    peak_flops={"tf32": 1250e12, "bf16": 2500e12, "fp16": 2500e12, "fp8": 5000e12},
    memory_capacity=288 * u.GB,
    memory_type="HBM3e",
    hbm_bandwidth=8.0 * u.TBps,
    scale_up_bandwidth=900 * u.GBps,
    scale_up_fabric="NVLink 5",
    tdp=1400 * u.W,
    assumed_matmul_flops={"bf16": 1822.0e12, "fp8": 3615.6e12},
    sources={
        "peak_flops": f"{_BEKMAN_TFLOPS}: TF32 1,250, BF16 and FP16 2,500, FP8 5,000 TFLOP/s, {_DENSE}; the GB200's "
        "figures for these formats. FP64, which Blackwell Ultra cuts to a sliver of the B200's, is left out: no "
        "training format here uses it",
        "memory_capacity": f"{_BW_ULTRA}: 288 GB HBM3e per GPU ({_NOMINAL})",
        "memory_physical": "not published per GPU by NVIDIA",
        "memory_usable": _NO_SMI,
        "hbm_bandwidth": f"{_BW_ULTRA}: 8 TB/s",
        "scale_up_bandwidth": f"{_BW_ULTRA}: NVLink 5, 1.8 TB/s per GPU, 900 GB/s {_PER_DIR}; all 72 GPUs of a GB300 "
        "NVL72 in one NVLink domain",
        "tdp": "not in NVIDIA's specifications; 1,400 W per GPU as third-party tables give it, assumed",
        "measured_matmul_flops": "none published for the GB300 (Bekman's table, August 2026, has the HGX B300 but no "
        "GB300)",
        "assumed_matmul_flops": "the GB200's published best-shape rates (BF16 1822.0 and FP8 3615.6 TFLOP/s, "
        f"{_MAMF_2026}), an assumption resting on the two parts' equal dense peaks in these formats",
    },
)

MI300X = Accelerator(
    name="MI300X",
    vendor="AMD",
    form_factor="OAM",
    year=2023,
    peak_flops={"fp64": 163.4e12, "tf32": 653.7e12, "bf16": 1307.4e12, "fp16": 1307.4e12, "fp8": 2614.9e12},
    memory_capacity=192 * u.GB,
    memory_type="HBM3",
    hbm_bandwidth=5.3 * u.TBps,
    scale_up_bandwidth=448 * u.GBps,
    scale_up_fabric="Infinity Fabric",
    tdp=750 * u.W,
    measured_matmul_flops={"bf16": 781.9e12},
    memory_physical=192 * u.GiB,
    sources={
        "peak_flops": f"{_MI300X_DS}; {_DENSE}; fp64 is FP64 matrix",
        "memory_capacity": f"{_MI300X_DS}: 192 GB HBM3 ({_NOMINAL})",
        "memory_physical": "AMD CDNA 3 architecture whitepaper (2023): eight HBM3 stacks of 24 GiB = 192 GiB",
        "memory_usable": "no published rocm-smi reading found; the memory model falls back to the nominal figure",
        "hbm_bandwidth": f"{_MI300X_DS}: 5.3 TB/s",
        "scale_up_bandwidth": f"{_MI300X_DS}: 7 Infinity Fabric links, 896 GB/s aggregate both directions, "
        f"i.e. 448 GB/s {_PER_DIR}",
        "tdp": f"{_MI300X_DS}: 750 W",
        "measured_matmul_flops": f"{_MAMF}: 781.9 TFLOP/s, ROCm 6.2 (59.8% of dense peak)",
    },
)

ACCELERATORS: Mapping[str, Accelerator] = MappingProxyType(
    {a.name: a for a in (A100_SXM_40GB, A100_SXM_80GB, H100_PCIE, H100_SXM, H100_GRAND_TETON, H800_SXM, H200_SXM, B200,
                         GB200, GB300, MI300X)}
)

# --- Fabrics -------------------------------------------------------------------------
_NVLINK = "NVIDIA NVLink and NVSwitch product page (per-GPU totals by generation)"
_IB = "NVIDIA ConnectX / Quantum InfiniBand product briefs"
_LAT_NOTE = ("order of magnitude for a small message through one switch (software + NIC + switch); "
             "measured values depend on the stack")

FABRICS: Mapping[str, Fabric] = MappingProxyType({f.name: f for f in (
    Fabric("NVLink 3", "scale-up", 300 * u.GBps, 2 * u.us, 2020, {
        "bandwidth": f"{_NVLINK}: 12 links x 50 GB/s (both directions; 25 GB/s each way) = 600 GB/s total, i.e. 300 GB/s {_PER_DIR}",
        "latency": f"{_LAT_NOTE}; NCCL small-message latency over NVSwitch is a few µs"}),
    Fabric("NVLink 4", "scale-up", 450 * u.GBps, 2 * u.us, 2022, {
        "bandwidth": f"{_NVLINK}: 18 links x 50 GB/s (both directions; 25 GB/s each way) = 900 GB/s total, i.e. 450 GB/s {_PER_DIR}",
        "latency": f"{_LAT_NOTE}; NCCL small-message latency over NVSwitch is a few µs"}),
    Fabric("NVLink 4 (H800)", "scale-up", 200 * u.GBps, 2 * u.us, 2023, {
        "bandwidth": "NVIDIA H800 datasheet: NVLink 400 GB/s (both directions), i.e. 200 GB/s per direction per GPU: "
        "NVLink 4 with 8 of the H100's 18 links (export-control variant)",
        "latency": f"{_LAT_NOTE}; taken equal to NVLink 4's"}),
    Fabric("NVLink 5", "scale-up", 900 * u.GBps, 2 * u.us, 2024, {
        "bandwidth": f"{_NVLINK}: 18 links x 100 GB/s (both directions; 50 GB/s each way) = 1.8 TB/s total, i.e. 900 GB/s {_PER_DIR}",
        "latency": f"{_LAT_NOTE}; NCCL small-message latency over NVSwitch is a few µs"}),
    Fabric("NVLink bridge", "scale-up", 300 * u.GBps, 2 * u.us, 2022, {
        "bandwidth": f"{_H100_DS}, PCIe column: NVLink bridge 600 GB/s (both directions) between a pair of "
        "H100 PCIe cards, i.e. 300 GB/s per direction per GPU; it joins two cards, not eight",
        "latency": f"{_LAT_NOTE}; no published figure for the bridge: taken equal to NVLink's"}),
    Fabric("Infinity Fabric", "scale-up", 448 * u.GBps, 2 * u.us, 2023, {
        "bandwidth": f"{_MI300X_DS}: seven AMD Infinity Fabric links per GPU (a fully connected 8-GPU OAM "
        "platform), 896 GB/s aggregate counting both directions, i.e. 448 GB/s per direction per GPU",
        "mesh_links": "AMD Instinct MI300X platform data sheet: seven point-to-point links of 64 GB/s per direction "
        "(128 GB/s both ways) join each GPU directly to the seven others; no switch. RCCL's maintainers: 48 GB/s "
        "per link per direction after protocol and error-correction overheads (ROCm/rccl issue 1210)",
        "latency": f"{_LAT_NOTE}; no published small-message figure: taken equal to NVLink's"}, mesh_links=7),
    Fabric("InfiniBand HDR", "scale-out", 200 * u.Gbps, 5 * u.us, 2019, {
        "bandwidth": f"{_IB}: HDR 200 Gb/s per port per direction (25 GB/s)",
        "latency": _LAT_NOTE}),
    Fabric("InfiniBand NDR", "scale-out", 400 * u.Gbps, 5 * u.us, 2022, {
        "bandwidth": f"{_IB}: NDR 400 Gb/s per port per direction (50 GB/s)",
        "latency": _LAT_NOTE}),
    Fabric("InfiniBand XDR", "scale-out", 800 * u.Gbps, 5 * u.us, 2024, {
        "bandwidth": f"{_IB}: XDR 800 Gb/s per port per direction (100 GB/s)",
        "latency": _LAT_NOTE}),
    Fabric("RoCE 400G", "scale-out", 400 * u.Gbps, 8 * u.us, 2022, {
        "bandwidth": "IEEE 802.3 400GbE: 400 Gb/s per port per direction (50 GB/s), RDMA over Converged Ethernet v2",
        "latency": f"{_LAT_NOTE}; Ethernet switches add more per hop than InfiniBand"}),
)})

# --- Multi-tier fabrics ----------------------------------------------------------------
_LLAMA3_NET = "Llama Team (2024), The Llama 3 Herd of Models, sec. 3.3.1 ('Network topology')"
_GANGIDI = ("Gangidi et al. (2024), RDMA over Ethernet for Distributed Training at Meta Scale, SIGCOMM "
            "(the backend fabric: rack training switches, cluster training switches forming an AI zone, aggregation "
            "training switches joining the zones)")
_SUPERPOD = "NVIDIA DGX SuperPOD Reference Architecture, DGX H100 systems (2023), 'Compute fabric'"
_MEGASCALE_NET = "Jiang et al. (2024), MegaScale, NSDI, the paragraphs 'Network topology' and 'Reducing ECMP hashing conflicts'"
_TIER_LAT = ("assumed, not stated by the source: the two more switch traversals (a few hundred ns each on 400G switch "
             "ASICs) and the fibre of climbing one more tier, order of magnitude")

TIERED_FABRICS = (
    Fabric("RoCE 400G (Llama 3 cluster)", "scale-out", 400 * u.Gbps, 8 * u.us, 2024, {
        "bandwidth": "IEEE 802.3 400GbE: 400 Gb/s per port per direction (50 GB/s), one RoCE NIC per GPU "
        f"({_GANGIDI}; {_LLAMA3_NET})",
        "latency": f"{_LAT_NOTE}; taken equal to the untiered RoCE 400G entry's",
        "tiers": f"{_LLAMA3_NET}: a three-layer Clos of 24K GPUs; 16 GPUs (two servers) per rack on one top-of-rack "
        "switch; 192 racks joined by cluster switches into a pod of 3,072 GPUs with full bisection bandwidth; eight pods "
        f"joined by aggregation switches with a 1:7 oversubscription; {_GANGIDI}"},
        tiers=(FabricTier("rack", 16, 1.0, 0.0, sources={
                   "domain": f"{_LLAMA3_NET}: 16 GPUs, two servers, per top-of-rack switch (Minipack2)",
                   "oversubscription": f"{_LLAMA3_NET}: the pod above has full bisection bandwidth, so the rack "
                   "switches' uplinks carry what their GPUs inject (no taper)"}),
               FabricTier("pod", 3072, 1.0, 1 * u.us, sources={
                   "domain": f"{_LLAMA3_NET}: 192 racks per pod, 3,072 GPUs, full bisection bandwidth",
                   "latency": _TIER_LAT}),
               FabricTier("aggregation", 24576, 7.0, 1 * u.us, sources={
                   "domain": f"{_LLAMA3_NET}: eight pods in one data-centre building, 24K GPUs",
                   "oversubscription": f"{_LLAMA3_NET}: the aggregation layer does not keep full bisection "
                   "bandwidth; oversubscription 1:7",
                   "latency": _TIER_LAT}))),
    Fabric("InfiniBand NDR (DGX SuperPOD)", "scale-out", 400 * u.Gbps, 5 * u.us, 2023, {
        "bandwidth": f"{_IB}: NDR 400 Gb/s per port per direction (50 GB/s); {_SUPERPOD}: one ConnectX-7 per GPU",
        "latency": _LAT_NOTE,
        "tiers": f"{_SUPERPOD}: a rail-optimised full fat tree; scalable units (SU) of 32 DGX H100 nodes, one leaf "
        "switch per rail per SU; spine switches join the leaves of up to four SUs (127 nodes and the fabric manager) "
        "with full bisection. Larger SuperPODs add a core tier, also without taper: the spine tier is taken to extend "
        "over it"},
        tiers=(FabricTier("leaf", 256, 1.0, 0.0, rail_optimised=True, sources={
                   "domain": f"{_SUPERPOD}: 32 nodes x 8 GPUs per SU; GPU i of every node on rail switch i"}),
               FabricTier("spine", 1024, 1.0, 0.5 * u.us, sources={
                   "domain": f"{_SUPERPOD}: four SUs under one spine layer",
                   "oversubscription": f"{_SUPERPOD}: full fat tree, no oversubscription",
                   "latency": _TIER_LAT}))),
    Fabric("RoCE 200G (MegaScale)", "scale-out", 200 * u.Gbps, 8 * u.us, 2023, {
        "bandwidth": f"{_MEGASCALE_NET}: eight 200 Gb/s NICs per server, one per GPU (25 GB/s per direction)",
        "latency": f"{_LAT_NOTE}; taken equal to the RoCE 400G entry's",
        "tiers": f"{_MEGASCALE_NET}: three layers of switches on Broadcom Tomahawk 4 chips (25.6 Tb/s, 64 ports of "
        "400 Gb/s) in a Clos-like topology for more than 10,000 GPUs; at every layer 32 ports down and 32 up, a 1:1 "
        "downlink to uplink ratio (no oversubscription); each top-of-rack 400G port split in two 200G downlinks; a "
        "server's eight NICs on eight different switches (multi-rail), up to 64 servers on the same set of switches. "
        "The paper gives no pod size: 32 spine-facing ports per switch imply pods of 32 top-of-rack switches (four "
        "rail groups, 2,048 GPUs), derived here"},
        tiers=(FabricTier("leaf", 512, 1.0, 0.0, rail_optimised=True, sources={
                   "domain": f"{_MEGASCALE_NET}: up to 64 servers (512 GPUs) on the same set of eight rail switches"}),
               FabricTier("spine", 2048, 1.0, 1 * u.us, sources={
                   "domain": "derived from the 64-port switches at 1:1 (32 downlinks each): not stated by the paper",
                   "oversubscription": f"{_MEGASCALE_NET}: 1:1 at every layer",
                   "latency": _TIER_LAT}),
               FabricTier("core", 12288, 1.0, 1 * u.us, sources={
                   "domain": f"{_MEGASCALE_NET}: more than 10,000 GPUs; 12,288, the largest run of its evaluation, taken",
                   "oversubscription": f"{_MEGASCALE_NET}: 1:1 at every layer",
                   "latency": _TIER_LAT}))),
)
"""Scale-out fabrics described tier by tier (:class:`FabricTier`), each also in :data:`FABRICS` under its own name;
the untiered entries of the same technology (``"RoCE 400G"``, ``"InfiniBand NDR"``) stay one non-blocking switch."""

FABRICS = MappingProxyType({**FABRICS, **{f.name: f for f in TIERED_FABRICS}})

# --- Nodes ------------------------------------------------------------------------------
DGX_H100 = Node("DGX H100", H100_SXM, gpus=8, nics=8, nic_bandwidth=400 * u.Gbps, psus=6, sources={
    "gpus": "NVIDIA DGX H100 user guide, hardware overview: 8 x H100 SXM 80 GB",
    "nics": "NVIDIA DGX H100 user guide: 8 single-port ConnectX-7 (compute), 400 Gb/s InfiniBand each; "
            "2 dual-port cards for storage are not counted",
    "psus": "NVIDIA DGX H100 user guide: 6 x 3.3 kW power supplies (the reliability tutorial's default of 2 is not a DGX)",
})
DGX_A100 = Node("DGX A100", A100_SXM_80GB, gpus=8, nics=8, nic_bandwidth=200 * u.Gbps, psus=6, sources={
    "gpus": "NVIDIA DGX A100 user guide, hardware overview: 8 x A100 SXM (640 GB variant)",
    "nics": "NVIDIA DGX A100 user guide: 8 single-port ConnectX-6, 200 Gb/s HDR InfiniBand each (compute)",
    "psus": "NVIDIA DGX A100 user guide: 6 x 3 kW power supplies",
})
HGX_B200 = Node("HGX B200", B200, gpus=8, nics=8, nic_bandwidth=400 * u.Gbps, psus=6, sources={
    "gpus": "NVIDIA DGX B200 user guide: 8 x B200, 1,440 GB total GPU memory",
    "nics": "NVIDIA DGX B200 user guide: 8 single-port ConnectX-7, up to 400 Gb/s InfiniBand each (compute)",
    "psus": "NVIDIA DGX B200 user guide: 6 x 3.3 kW power supplies",
})

HGX_H800 = Node("HGX H800", H800_SXM, gpus=8, nics=8, nic_bandwidth=400 * u.Gbps, psus=6, sources={
    "gpus": "DeepSeek-AI (2024), DeepSeek-V3 Technical Report, sec. 3.1: 8 H800 GPUs per node on NVLink and NVSwitch",
    "nics": "DeepSeek-V3 Technical Report, sec. 3.2.2: InfiniBand at 50 GB/s per GPU across nodes, i.e. one "
            "400 Gb/s NIC per GPU",
    "psus": "not published; a DGX H100's 6 supplies assumed",
})

HGX_H200 = Node("HGX H200", H200_SXM, gpus=8, nics=8, nic_bandwidth=400 * u.Gbps, psus=6, sources={
    "gpus": "Nebius, MLPerf Training v5.0 system description (its Soperator cluster of 8-GPU H200 nodes): 8 x H200 SXM "
            "141 GB per node on NVLink 4 and NVSwitch (an HGX H200 baseboard)",
    "nics": "the same system description: 8 x ConnectX-7 InfiniBand NDR 400 Gb/s per node (compute); its 200 Gb/s "
            "Ethernet NIC is not counted",
    "psus": "not published; a DGX H100's 6 supplies assumed",
})

GB200_NVL72 = Node("GB200 NVL72", GB200, gpus=72, nics=72, nic_bandwidth=400 * u.Gbps, psus=48, sources={
    "gpus": f"{_NVL72_DS}: 72 Blackwell GPUs and 36 Grace CPUs in one rack, one NVLink domain (a 'node' here is "
            "an NVLink domain: collectives inside it run on NVLink)",
    "nics": "NVIDIA DGX GB200 datasheet (2025): 72 single-port ConnectX-7 VPI at 400 Gb/s InfiniBand per rack, one "
            "per GPU (compute fabric; the BlueField-3 DPUs for storage and management are not counted)",
    "psus": "NVIDIA Base Command Manager documentation, 'BCM Power Shelf Integration': the GB200 rack's reference "
            "design has 8 power shelves of 6 supplies (5.5 kW each), 48 in all",
})
GB300_NVL72 = Node("GB300 NVL72", GB300, gpus=72, nics=72, nic_bandwidth=800 * u.Gbps, psus=48, sources={
    "gpus": "NVIDIA NVL72 AI Factory enterprise reference architecture, 'System Hardware & Components': 72 Blackwell "
            "Ultra GPUs in 18 compute trays of 4, all in one NVLink domain through 9 NVSwitch trays (a 'node' here is an "
            "NVLink domain: collectives inside it run on NVLink)",
    "nics": "the same reference architecture: each compute tray carries 4 ConnectX-8 host channel adapters, one per "
            "GPU, 800 Gb/s each (ConnectX-8 SuperNIC; compute fabric)",
    "psus": "the same reference architecture: 8 power shelves of six 5.5 kW supplies, 48 in all",
})
GRAND_TETON_H100 = Node("Grand Teton H100", H100_GRAND_TETON, gpus=8, nics=8, nic_bandwidth=400 * u.Gbps, psus=6,
                        sources={
    "gpus": f"{_TITAN}: 'Each host has 8 NVIDIA H100 GPUs fully connected with NVLink' (Meta's Grand Teton platform)",
    "nics": f"{_TITAN}: 'backend RDMA network with 400 Gb/s per GPU', i.e. one 400 Gb/s NIC per GPU",
    "psus": "not published; a DGX H100's 6 supplies assumed",
})

NODES: Mapping[str, Node] = MappingProxyType({n.name: n for n in (DGX_A100, DGX_H100, GRAND_TETON_H100, HGX_H800,
                                                                        HGX_H200, HGX_B200, GB200_NVL72, GB300_NVL72)})

SCALABLE_UNIT_NODES = 32
"""Nodes in one scalable unit (SU) of NVIDIA's DGX SuperPOD reference architecture for DGX H100: the 32 nodes
whose NIC ``i`` share rail ``i``'s leaf switch (one leaf per rail per SU); traffic between SUs crosses the spine
switches (NVIDIA DGX SuperPOD Reference Architecture, DGX H100, "Compute fabric"). A count, not a bandwidth: an
untiered fabric is priced as one non-blocking tier; the tiered entry "InfiniBand NDR (DGX SuperPOD)"
(:data:`TIERED_FABRICS`) puts a leaf tier of this many nodes under a spine."""


def _lookup(table: Mapping, kind: str, name: str):
    try:
        return table[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown {kind} {_validate.show(name)}; {_validate.known(name, table)}") from None


def accelerator_arg(name: str, value) -> Accelerator:
    """``value`` as an :class:`Accelerator`: one passes through, a catalog name is resolved; anything else is a
    ``ValueError`` naming the argument ``name``, what was given and what is valid."""
    return _validate.catalog_arg(name, value, Accelerator, ACCELERATORS, "accelerator")


def accelerator(name: str | Accelerator) -> Accelerator:
    """The catalog accelerator called ``name`` (an :class:`Accelerator` passes through)."""
    return name if isinstance(name, Accelerator) else _lookup(ACCELERATORS, "accelerator", name)


def fabric(name: str | Fabric) -> Fabric:
    """The catalog fabric called ``name`` (a :class:`Fabric` passes through)."""
    return name if isinstance(name, Fabric) else _lookup(FABRICS, "fabric", name)


def node(name: str | Node) -> Node:
    """The catalog node called ``name`` (a :class:`Node` passes through)."""
    return name if isinstance(name, Node) else _lookup(NODES, "node", name)


# --------------------------------------------------------------------------------------
# Tables for the Hardware catalog appendix (generated, so the book cannot disagree)
# --------------------------------------------------------------------------------------
def accelerator_table(part: str = "compute"):
    """Every accelerator's headline figures, in two narrow tables.

    ``part="compute"``: dense peak TFLOP/s per dtype and the measured BF16 and FP8 matmul ceilings.
    ``part="memory"``: nominal memory, the driver's and CUDA's totals, HBM bandwidth, scale-up link (per direction)
    and power.
    """
    from .tables import Table

    def tflops(values, dtype):
        return f"{values[dtype] / 1e12:,.1f}" if dtype in values else "—"

    accs = ACCELERATORS.values()
    if part == "compute":
        rows = [(a.name, str(a.year), *(tflops(a.peak_flops, d) for d in ("bf16", "fp8", "tf32", "fp64")),
                 tflops(a.measured_matmul_flops, "bf16"), tflops(a.measured_matmul_flops, "fp8")) for a in accs]
        return Table(("Accelerator", "Year", "BF16", "FP8", "TF32", "FP64", "BF16 matmul, measured",
                      "FP8 matmul, measured"), rows,
                     caption="Compute, TFLOP/s. Peaks are dense; the last two columns are measurements (the best "
                             "matmul a shape search found).")
    if part == "memory":
        def gb(value):
            return "—" if value is None else f"{value / u.GB:,.1f}"

        rows = [(a.name, a.form_factor, f"{a.memory_capacity / u.GB:,.0f} {a.memory_type}", gb(a.memory_usable),
                 gb(a.memory_allocatable), f"{a.hbm_bandwidth / u.TBps:.2f}",
                 f"{a.scale_up_bandwidth / u.GBps:,.0f}, {a.scale_up_fabric}", f"{a.tdp:,.0f}") for a in accs]
        return Table(("Accelerator", "Form factor", "Memory, nominal (GB)", "Driver (GB)", "CUDA (GB)",
                      "HBM (TB/s)", "Scale-up (GB/s per direction)", "Power (W)"), rows,
                     caption="Memory, links and power. Driver: the device total nvidia-smi reports; CUDA: the total "
                             "CUDA reports, what an allocation hits; both in 10^9 bytes.")
    raise ValueError(f"part={part!r} must be 'compute' or 'memory'")


def node_table():
    """Every node: accelerators, compute NICs, power supplies."""
    from .tables import Table

    rows = [(n.name, f"{n.gpus} × {n.accelerator.name}", f"{n.memory_capacity / u.GB:,.0f}",
             f"{n.nics} × {u.fmt_bits(n.nic_bandwidth)}", u.fmt_bandwidth(n.scale_out_bandwidth, 0), str(n.psus))
            for n in NODES.values()]
    return Table(("Node", "Accelerators", "GPU memory (GB)", "Compute NICs", "Scale-out per direction", "PSUs"),
                 rows, caption="Nodes.")


def fabric_table():
    """Every fabric: kind, per-direction bandwidth, typical latency."""
    from .tables import Table

    rows = [(f.name, f.kind, u.fmt_bandwidth(f.bandwidth, 0, prefix="G"), u.fmt_bits(f.bandwidth, prefix="G"),
             u.fmt_time(f.latency, 0),
             str(f.year)) for f in FABRICS.values()]
    return Table(("Fabric", "Kind", "Bandwidth per direction", "(in bits)", "Latency (order of magnitude)", "Year"),
                 rows, caption="Fabrics. Scale-up bandwidth is per GPU, scale-out per port.")


def fabric_tier_table():
    """Every tier of every multi-tier fabric: its domain, oversubscription, cumulative taper and added latency."""
    from .tables import Table

    rows = [(f.name, t.name + (" (rail-optimised)" if t.rail_optimised else ""), f"{t.domain:,}",
             f"{t.oversubscription:g}:1", f"{taper:g}:1", u.fmt_time(t.latency, 1))
            for f in TIERED_FABRICS for t, taper in zip(f.tiers, f.tapers)]
    return Table(("Fabric", "Tier", "GPUs below it", "Oversubscription", "Taper from the NIC", "Added latency"), rows,
                 caption="Multi-tier fabrics, bottom-up. Traffic crossing a tier gets the NIC's bandwidth divided by "
                         "the taper.")


def source_table():
    """Where every figure in the catalog comes from, entry by entry and field by field."""
    from .tables import Table

    rows = [(entry.name, field_name, text)
            for table in (ACCELERATORS, NODES, FABRICS) for entry in table.values()
            for field_name, text in entry.sources.items()]
    return Table(("Entry", "Figure", "Source and variant"), rows, caption="Provenance of every catalog figure.")
