"""Reliability: how often a large job fails, how often to checkpoint, and what failures cost.

The module follows the chapter. First, failure rates: components in series make a
node, nodes in series make a fleet (any failure stops a synchronous job). Then the
probability of a failure in a window and the expected number over a run. Then the
checkpoint interval that balances the cost of writing checkpoints against the work
lost when a failure strikes (Young 1974; Daly 2006), and the resulting goodput. Last,
a Monte Carlo simulator that checks the formulas where their assumptions hold and
shows where they break.

Assumptions, stated once: failures are independent and exponentially distributed
(constant rate, no wear-out or infant mortality); any failure stops the whole job;
after a failure the job restarts from the last *durable* checkpoint. All times are
seconds; a "rate" is per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import units as u
from . import _validate as v
from ._numeric import as_scalar
from .tables import readable

__all__ = [
    "series_mttf", "fleet_mtbf", "Component", "FailureProfile", "TEXTBOOK_PROFILE", "LLAMA3_INTERRUPTIONS",
    "LLAMA3_GPUS", "LLAMA3_WINDOW", "LLAMA3_SDC_INTERRUPTIONS", "profile_from_counts", "LLAMA3_PROFILE",
    "PROFILES", "FleetObservation", "LLAMA3_OBSERVED", "OBSERVATIONS", "OPT175B_GPUS", "OPT175B_WINDOW",
    "OPT175B_MANUAL_RESTARTS", "OPT175B_AUTOMATIC_RESTARTS", "OPT175B_RESTART_TIME", "OPT175B_OBSERVED",
    "OPT175B_PROFILE", "MODEL_VS_FLEET_TOLERANCE",
    "failure_probability", "any_failure_probability", "expected_failures", "young_interval", "daly_interval",
    "Waste", "waste", "goodput_exact", "checkpoint_time", "Simulation", "SIMULATION_BUDGET", "simulate",
    "Event", "timeline", "exact_optimal_interval", "NCCL_DEFAULT_TIMEOUT", "RestartTime",
    "heartbeat_detection_time", "spares_needed", "UCurve", "U_CURVE_POINTS", "u_curve", "TimelineRun",
    "timeline_run", "mtbf_from_node_rate", "node_rate_from_mtbf", "NodeFailureRate", "JobMTTF", "KOKOLIS2025",
    "RSC_STUDY_MONTHS", "RSC1_RATE", "RSC2_RATE", "RSC_RATES", "RSC_JOB_MTTF", "RSC_PROJECTED_MTTF",
]


# --------------------------------------------------------------------------------------
# Components, nodes, fleets
# --------------------------------------------------------------------------------------
def series_mttf(mttf, count=1):
    """Mean time to failure of components in series (any one failing fails the whole).

    ``1 / MTTF = sum_i count_i / MTTF_i``: with exponential lifetimes, failure rates add.
    ``mttf`` and ``count`` broadcast; the sum runs over the last axis.

    Args:
        mttf: mean time to failure of each component kind, in seconds.
        count: how many of each kind.

    Returns:
        Seconds. Source: standard series-system reliability (e.g. Birolini, *Reliability
        Engineering*, ch. 2). The classic misreading is to average MTTFs instead of adding rates.
    """
    mttf = v.positive("mttf", mttf, unit="seconds", allow_inf=True)
    count = v.nonnegative("count", count)
    mttf, count = v.broadcast(mttf=mttf, count=count)
    rate = np.sum(count / mttf, axis=-1)
    with np.errstate(divide="ignore"):
        result = np.where(rate > 0, 1.0 / np.where(rate > 0, rate, 1.0), np.inf)
    return as_scalar(result)


def fleet_mtbf(node_mttf, num_nodes):
    """Mean time between failures of ``num_nodes`` identical nodes in series: ``MTTF_node / n``.

    Units: seconds. A synchronous training job stops when any node fails, so the job's
    MTBF is the fleet's. Vectorised over both arguments.
    """
    node_mttf = v.positive("node_mttf", node_mttf, unit="seconds")
    num_nodes = np.asarray(v.count("num_nodes", num_nodes, scalar=False), dtype=float)
    node_mttf, num_nodes = v.broadcast(node_mttf=node_mttf, num_nodes=num_nodes)
    result = node_mttf / num_nodes
    return as_scalar(result)


@dataclass(frozen=True)
class Component:
    """One kind of part in a node: its mean time to failure (s) and how many a node has."""

    name: str
    mttf: float
    per_node: float

    def __post_init__(self):
        object.__setattr__(self, "mttf", v.positive("mttf", self.mttf, scalar=True, unit=f"seconds, {self.name}"))
        object.__setattr__(self, "per_node", v.positive("per_node", self.per_node, scalar=True))


@dataclass(frozen=True)
class FailureProfile:
    """Failure rates of the parts of one node, and where they come from.

    ``gpus_per_node`` converts a GPU count into nodes.
    """

    name: str
    components: tuple[Component, ...]
    gpus_per_node: int
    source: str = field(default="", compare=False)

    def __post_init__(self):
        object.__setattr__(self, "components", tuple(self.components))
        if not self.components:
            raise ValueError(f"{self.name}: a profile needs at least one component")
        object.__setattr__(self, "gpus_per_node", v.count("gpus_per_node", self.gpus_per_node))

    @property
    def node_mttf(self) -> float:
        """Seconds between failures of one node: its components in series (:func:`series_mttf`; the components
        were checked when they were made, so the rates are simply added)."""
        rate = sum(c.per_node / c.mttf for c in self.components)
        return 1.0 / rate if rate > 0 else math.inf

    def nodes(self, gpus):
        """Nodes needed for ``gpus`` GPUs; ``gpus`` must be a positive multiple of ``gpus_per_node``."""
        gpus = v.count("gpus", gpus, scalar=False, unit=f"a multiple of {self.gpus_per_node} GPUs per node")
        if isinstance(gpus, int):
            if gpus % self.gpus_per_node:
                raise ValueError(f"gpus={gpus!r} must be a positive multiple of {self.gpus_per_node} (GPUs per node)")
            return gpus // self.gpus_per_node
        if np.any(np.asarray(gpus) % self.gpus_per_node):
            raise ValueError(f"gpus={gpus!r} must be a positive multiple of {self.gpus_per_node} (GPUs per node)")
        return gpus // self.gpus_per_node

    def cluster_mtbf(self, gpus):
        """Seconds between failures of a cluster of ``gpus`` GPUs (vectorised)."""
        if v.is_scalar(gpus):  # one cluster: no arrays
            return self.node_mttf / self.nodes(gpus)
        return fleet_mtbf(self.node_mttf, self.nodes(gpus))

    def share(self) -> dict[str, float]:
        """Fraction of a node's failures due to each component kind."""
        rates = {c.name: c.per_node / c.mttf for c in self.components}
        total = sum(rates.values())
        return {name: rate / total for name, rate in rates.items()}


TEXTBOOK_PROFILE = FailureProfile(
    "textbook default (8 GPUs, 8 NICs, 2 PSUs)",
    (Component("GPU", 50_000 * u.hour, 8), Component("NIC", 150_000 * u.hour, 8),
     Component("PSU", 100_000 * u.hour, 2)),
    gpus_per_node=8,
    source="The defaults of the tutorial 'Scaling to 1000 GPUs' (mlsysim, Machine Learning Systems book): GPU 50,000 h, NIC 150,000 h, "
           "PSU 100,000 h; 8 GPUs, 8 NICs and 2 PSUs per node. Round numbers, not measurements; "
           "a real DGX H100 has 6 PSUs.",
)

# Llama 3 (Table 5): root causes of the 419 unexpected interruptions in a 54-day snapshot
# of pre-training on 16,384 H100 GPUs (2,048 nodes of 8).
LLAMA3_INTERRUPTIONS = {
    "GPU (faulty GPU, HBM3, SRAM, system processor, thermal, silent data corruption)": 148 + 72 + 19 + 17 + 6 + 6,
    "network (switch and cable, NIC)": 35 + 7,
    "host (unplanned maintenance, SSD, PSU, chassis, IO board, CPU, DRAM)": 32 + 3 + 3 + 2 + 2 + 2 + 2,
    "software (bugs, NCCL watchdog timeouts, dependencies)": 54 + 7 + 2,
}
LLAMA3_GPUS = 16_384
LLAMA3_WINDOW = 54 * u.day
LLAMA3_SDC_INTERRUPTIONS = 6
"""Of the GPU-related interruptions above, those Table 5 attributes to silent data corruption (detected ones)."""


def profile_from_counts(name: str, interruptions: dict[str, int], gpus: int, window: float, *,
                        gpus_per_node: int = 8, per_gpu: tuple[str, ...] = (), source: str = "") -> FailureProfile:
    """Fit a profile to an observed fleet: each cause's rate is its count over the exposure.

    A cause listed in ``per_gpu`` is attributed to each GPU (``gpus_per_node`` per node);
    the others to the node as a whole. The maximum-likelihood MTTF of a cause with ``k``
    events over ``E`` unit-seconds of exposure is ``E / k`` (exponential model).

    Args:
        interruptions: cause -> number of interruptions observed.
        gpus: GPUs in the fleet.
        window: observation window, seconds.
    """
    gpus_per_node = v.count("gpus_per_node", gpus_per_node)
    gpus = v.count("gpus", gpus, low=gpus_per_node)
    if gpus % gpus_per_node:
        raise ValueError(f"gpus={gpus!r} must be a positive multiple of gpus_per_node={gpus_per_node}")
    window = v.positive("window", window, scalar=True, unit="seconds")
    if not isinstance(interruptions, dict) or not interruptions:
        raise ValueError(f"interruptions={v.show(interruptions)} must be a non-empty dict cause -> count")
    components = []
    for cause, k in interruptions.items():
        k = v.count(f"interruptions[{cause!r}]", k)
        units_per_node = gpus_per_node if cause in per_gpu else 1
        exposure = window * (gpus // gpus_per_node) * units_per_node
        components.append(Component(cause, exposure / k, units_per_node))
    return FailureProfile(name, tuple(components), gpus_per_node, source)


LLAMA3_PROFILE = profile_from_counts(
    "fitted to Llama 3 405B pre-training (16,384 H100)", LLAMA3_INTERRUPTIONS, LLAMA3_GPUS, LLAMA3_WINDOW,
    per_gpu=tuple(k for k in LLAMA3_INTERRUPTIONS if k.startswith("GPU")),
    source="Llama Team (2024), The Llama 3 Herd of Models, sec. 3.3.4 and Table 5: 419 unexpected "
           "interruptions in 54 days on 16,384 H100 GPUs, by root cause.",
)

PROFILES = {p.name: p for p in (TEXTBOOK_PROFILE, LLAMA3_PROFILE)}


@dataclass(frozen=True)
class FleetObservation:
    """A published count of job interruptions on a fleet: what a profile's MTBF is compared with.

    ``mtbf`` is the observed mean time between interruptions, ``window / interruptions`` (seconds),
    the maximum-likelihood estimate under the exponential model.
    """

    name: str
    gpus: int
    window: float
    interruptions: int
    source: str = field(default="", compare=False)

    def __post_init__(self):
        object.__setattr__(self, "gpus", v.count("gpus", self.gpus))
        object.__setattr__(self, "window", v.positive("window", self.window, scalar=True, unit="seconds"))
        object.__setattr__(self, "interruptions", v.count("interruptions", self.interruptions))

    @property
    def mtbf(self) -> float:
        """Observed seconds between interruptions of the whole job."""
        return self.window / self.interruptions

    @property
    def relative_uncertainty(self) -> float:
        """One standard error of :attr:`mtbf`, relative to it: ``1 / sqrt(interruptions)``.

        The count of a Poisson process with mean ``k`` has standard deviation ``sqrt(k)``, so an
        estimate from ``k`` events is uncertain by about ``1/sqrt(k)`` (dimensionless; 4.9% for
        Llama 3's 419 interruptions). It measures chance only, not how representative the window is.
        """
        return 1.0 / math.sqrt(self.interruptions)


LLAMA3_OBSERVED = FleetObservation(
    "Llama 3 405B pre-training (measured)", LLAMA3_GPUS, LLAMA3_WINDOW, sum(LLAMA3_INTERRUPTIONS.values()),
    source="Llama Team (2024), sec. 3.3.4: 419 unexpected interruptions in a 54-day snapshot on 16,384 H100 GPUs.",
)
OPT175B_GPUS = 992
"""GPUs of OPT-175B's pre-training run: 992 80 GB A100s, 124 nodes of eight (Zhang et al. 2022, sec. 2.4)."""
OPT175B_WINDOW = 60 * u.day
"""The window of OPT-175B's failure count, seconds: "over the course of 2 months" (Zhang et al. 2022, sec. 2.5),
read as 60 days."""
OPT175B_MANUAL_RESTARTS = 35
"""Restarts by hand that hardware failures caused: "at least 35" (Zhang et al. 2022, sec. 2.5)."""
OPT175B_AUTOMATIC_RESTARTS = 70
"""Automatic restarts after hardware failures: the paper's own estimate, "70+", from the difference between the
over 100 hosts cycled out and the manual restarts (Zhang et al. 2022, sec. 2.5)."""
OPT175B_RESTART_TIME = 30 * u.minute
"""Seconds per restart taken for OPT-175B's fleet. The sources give no mean: a manual restart paused the run for
diagnostics, a replacement node "through the cloud interface can take hours for a single machine", and the 1.6 TB
checkpoint's download from blob storage hung at times (the OPT-175B logbook's notes, 27% update); the automatic
restarts, two thirds of the count, were faster. Half an hour is a reading of that text well below its hours, so
it leans towards fewer lost hours, not more."""

OPT175B_OBSERVED = FleetObservation(
    "OPT-175B pre-training (measured)", OPT175B_GPUS, OPT175B_WINDOW,
    OPT175B_MANUAL_RESTARTS + OPT175B_AUTOMATIC_RESTARTS,
    source="Zhang et al. (2022), OPT: Open Pre-trained Transformer Language Models, sec. 2.5: hardware failures "
           "caused at least 35 manual restarts and an estimated 70+ automatic ones, with over 100 hosts cycled, over "
           "about 2 months on 992 A100 GPUs; its public logbook counts 40+ restarts in the 16 days to its 27% "
           "update. Lower bounds on the count, so the MTBF is an upper bound; loss-spike rollbacks not counted.",
)
OBSERVATIONS = (LLAMA3_OBSERVED, OPT175B_OBSERVED)
"""Published fleet failure counts: a report must give the job size, the window and the count of job-stopping
interruptions to be comparable. Llama 3's is a count of every unexpected interruption; OPT-175B's counts only the
restarts hardware failures caused, and is a lower bound."""

OPT175B_PROFILE = profile_from_counts(
    "fitted to OPT-175B pre-training (992 A100)",
    {"hardware (manual and automatic restarts)": OPT175B_OBSERVED.interruptions}, OPT175B_GPUS, OPT175B_WINDOW,
    source=OPT175B_OBSERVED.source)
"""OPT-175B's count as a profile: one part per node, failing at the fleet's rate per node (so the job MTBF scales
as one over the nodes). Not in :data:`PROFILES`: the chapters' explorers offer the textbook and Llama 3 profiles."""

MODEL_VS_FLEET_TOLERANCE = 1.5
"""Factor within which the tests assert that the (unfitted) textbook profile's job MTBF matches a
published fleet MTBF (dimensionless; the measured ratio at Llama 3's 16,384 GPUs is 0.68). It is a
tolerance, not a claim of agreement, and much wider than the measurement's own uncertainty
(:attr:`FleetObservation.relative_uncertainty`), which is what the chapter's figure draws."""


# --------------------------------------------------------------------------------------
# Research clusters: a fleet summarised by one failure rate per node-day
# --------------------------------------------------------------------------------------
def _job_nodes(gpus, gpus_per_node):
    """Nodes of a job of ``gpus`` GPUs (an int, or an int64 array): ``gpus`` must be a positive multiple of
    ``gpus_per_node``, because a per-node rate says nothing about part of a node."""
    gpus_per_node = v.count("gpus_per_node", gpus_per_node)
    gpus = v.count("gpus", gpus, scalar=False, unit=f"a multiple of gpus_per_node={gpus_per_node}")
    if np.any(np.asarray(gpus) % gpus_per_node):
        raise ValueError(f"gpus={v.show(gpus)} must be a positive multiple of gpus_per_node={gpus_per_node}: "
                         f"a failure rate per node-day applies to whole nodes")
    return np.asarray(gpus) // gpus_per_node


def mtbf_from_node_rate(failures_per_node_day, gpus, gpus_per_node=8):
    """Seconds between failures of a synchronous job on ``gpus`` GPUs whose nodes each fail
    ``failures_per_node_day`` times a day: ``MTTF = 1 / (N_nodes · r_f)``, with ``N_nodes = gpus / gpus_per_node``.

    The series model of this module with the node as the only part (any node failing stops the job), so the
    rate is converted once, from days to seconds (86,400 s a day). Source: Kokolis et al. (2025), "Revisiting
    Reliability in Large-Scale Machine Learning Research Clusters" (HPCA 2025, arXiv:2410.21680): the failure
    model of their MTTF projection, ``MTTF ∝ 1/(N·r_f)`` for a job on N nodes. Two classic misreadings: the paper
    prints r_f per 1,000 node-days (RSC-1: 6.50), so pass 6.50e-3, not 6.50; and N counts nodes, not GPUs
    (dividing by GPUs makes every job fail eight times too often). Vectorised: the arguments broadcast.

    Args:
        failures_per_node_day: r_f, failures per node per day (> 0).
        gpus: GPUs in the job, a positive multiple of ``gpus_per_node``.
        gpus_per_node: GPUs per node (8 on DGX A100 and H100 nodes).

    Returns:
        Seconds: a float, or an array of the broadcast shape. A ``ValueError`` names the argument that is
        not valid, or the rate so small that the MTBF would overflow a float.
    """
    rate = v.positive("failures_per_node_day", failures_per_node_day, unit="failures per node per day")
    nodes = _job_nodes(gpus, gpus_per_node)
    rate, nodes = v.broadcast(failures_per_node_day=rate, gpus=nodes)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        result = u.day / (nodes.astype(float) * rate)  # nodes x rate: job failures per day
    if not np.all(np.isfinite(result) & (result > 0)):
        raise ValueError(f"failures_per_node_day={v.show(failures_per_node_day)} on gpus={v.show(gpus)} gives "
                         f"a job MTBF beyond a float's range (0 or infinite); give a rate between about 1e-290 and "
                         f"1e290 failures per node per day")
    return as_scalar(result)


def node_rate_from_mtbf(mtbf, gpus, gpus_per_node=8):
    """The failure rate per node-day that a measured job MTBF implies: ``r_f = 1 / (N_nodes · MTTF)``.

    The inverse of :func:`mtbf_from_node_rate` (same source, same model): ``mtbf`` in seconds, converted to days;
    ``N_nodes = gpus / gpus_per_node``. Returns failures per node per day (multiply by 1,000 to compare with a
    paper's "per 1,000 node-days"); vectorised. It assumes what the projection assumes: every node of the job
    fails at the same constant rate, so that a job's failures are its nodes' failures added up.

    Args:
        mtbf: seconds between failures of jobs of ``gpus`` GPUs (> 0).
        gpus: GPUs in the job, a positive multiple of ``gpus_per_node``.
        gpus_per_node: GPUs per node.
    """
    seconds = v.positive("mtbf", mtbf, unit="seconds")
    nodes = _job_nodes(gpus, gpus_per_node)
    seconds, nodes = v.broadcast(mtbf=seconds, gpus=nodes)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        result = 1.0 / (nodes.astype(float) * (seconds / u.day))  # one over the node-days per job failure
    if not np.all(np.isfinite(result) & (result > 0)):
        raise ValueError(f"mtbf={v.show(mtbf)} s on gpus={v.show(gpus)} gives a rate beyond a float's range "
                         f"(0 or infinite); give an MTBF between about 1e-290 and 1e290 seconds")
    return as_scalar(result)


@dataclass(frozen=True)
class NodeFailureRate:
    """A cluster summarised by one number: its failure rate per node-day, r_f, with its source.

    ``failures_per_node_day`` is r_f in failures per node per day (a paper's "per 1,000 node-days" figure divided
    by 1,000); ``gpus_per_node`` turns a job's GPUs into nodes. :meth:`job_mtbf` is :func:`mtbf_from_node_rate`,
    and :meth:`profile` the same rate as a :class:`FailureProfile` (one part per node), for the functions that
    take a profile.
    """

    name: str
    failures_per_node_day: float
    gpus_per_node: int = 8
    source: str = field(default="", compare=False)

    def __post_init__(self):
        object.__setattr__(self, "failures_per_node_day", v.positive(
            "failures_per_node_day", self.failures_per_node_day, scalar=True, unit="failures per node per day"))
        object.__setattr__(self, "gpus_per_node", v.count("gpus_per_node", self.gpus_per_node))

    @property
    def per_thousand_node_days(self) -> float:
        """r_f as papers print it: failures per 1,000 node-days (a count per 1,000 node-days of exposure)."""
        return 1000.0 * self.failures_per_node_day

    @property
    def node_mttf(self) -> float:
        """Seconds between failures of one node: ``1 / r_f`` days."""
        return u.day / self.failures_per_node_day

    def job_mtbf(self, gpus):
        """Seconds between failures of a job on ``gpus`` GPUs (vectorised): :func:`mtbf_from_node_rate`."""
        return mtbf_from_node_rate(self.failures_per_node_day, gpus, self.gpus_per_node)

    def profile(self) -> FailureProfile:
        """The rate as a :class:`FailureProfile` whose only part is the whole node (MTTF ``1 / r_f`` days)."""
        return FailureProfile(self.name, (Component("node (any cause)", self.node_mttf, 1),), self.gpus_per_node,
                              self.source)


@dataclass(frozen=True)
class JobMTTF:
    """A published mean time to failure measured for jobs of one size: ``gpus`` GPUs, ``mttf`` seconds."""

    name: str
    gpus: int
    mttf: float
    source: str = field(default="", compare=False)

    def __post_init__(self):
        object.__setattr__(self, "gpus", v.count("gpus", self.gpus))
        object.__setattr__(self, "mttf", v.positive("mttf", self.mttf, scalar=True, unit="seconds"))

    def implied_rate(self, gpus_per_node: int = 8) -> NodeFailureRate:
        """The per-node-day rate that reproduces this measurement through :func:`mtbf_from_node_rate`
        (:func:`node_rate_from_mtbf`; ``gpus`` must be whole nodes of ``gpus_per_node``)."""
        rate = node_rate_from_mtbf(self.mttf, self.gpus, gpus_per_node)
        return NodeFailureRate(f"implied by {self.name}", rate, gpus_per_node, self.source)


KOKOLIS2025 = ('Kokolis et al. (2025), "Revisiting Reliability in Large-Scale Machine Learning Research Clusters", '
               'IEEE HPCA 2025 (arXiv:2410.21680)')
"""The study of Meta's two research clusters, RSC-1 and RSC-2 (A100 GPUs, eight per node), cited by the data below."""

RSC_STUDY_MONTHS = 11
"""Months of operation the study covers (its abstract: 11 months, two clusters, 4 million jobs, over 150 million
A100 GPU-hours)."""

RSC1_RATE = NodeFailureRate(
    "Meta RSC-1 research cluster (A100)", 6.50 / 1000, 8,
    source=f"{KOKOLIS2025}: r_f = 6.50 failures per 1,000 node-days on RSC-1, the rate of its failure model "
           f"(MTTF ∝ 1/(N·r_f)).")
RSC2_RATE = NodeFailureRate(
    "Meta RSC-2 research cluster (A100)", 2.34 / 1000, 8,
    source=f"{KOKOLIS2025}: r_f = 2.34 failures per 1,000 node-days on RSC-2.")
RSC_RATES = (RSC1_RATE, RSC2_RATE)
"""The two clusters' published failure rates per node-day (RSC-1 is the general-purpose cluster, RSC-2 the one
that runs mostly vision work)."""

RSC_JOB_MTTF = (
    JobMTTF("8-GPU jobs on the research clusters", 8, 47.7 * u.day,
            source=f"{KOKOLIS2025}, Figure 7 and its text: the MTTF of 8-GPU jobs is 47.7 days."),
    JobMTTF("1,024-GPU jobs on the research clusters", 1024, 7.9 * u.hour,
            source=f"{KOKOLIS2025}, Figure 7 and its text: the MTTF of 1024-GPU jobs is 7.9 hours, roughly two "
                   f"orders of magnitude lower than that of 8-GPU jobs."),
)
"""Job MTTFs the study measured, by job size (seconds). They are measurements of jobs, not outputs of the
rate model: :meth:`JobMTTF.implied_rate` says which r_f would reproduce each."""

RSC_PROJECTED_MTTF = {16_384: 1.8 * u.hour, 131_072: 0.23 * u.hour}
"""The study's projected MTTF (seconds) of jobs of 16,384 and 131,072 GPUs, as printed (two significant figures).
``RSC1_RATE.job_mtbf`` reproduces both to the printed digit: they are RSC-1's rate through ``1/(N·r_f)``."""


# --------------------------------------------------------------------------------------
# Probability of failure
# --------------------------------------------------------------------------------------
def failure_probability(window, mtbf):
    """Probability of at least one failure within ``window`` seconds: ``1 - exp(-window / MTBF)``.

    Exponential (Poisson) model; vectorised. For ``n`` independent parts each failing with
    probability ``p`` in the window, see :func:`any_failure_probability`.
    """
    window = v.nonnegative("window", window, unit="seconds", allow_inf=True)
    mtbf = v.positive("mtbf", mtbf, unit="seconds", allow_inf=True)
    window, mtbf = v.broadcast(window=window, mtbf=mtbf)
    if np.any(np.isinf(window) & np.isinf(mtbf)):
        raise ValueError("window and mtbf are both infinite: their ratio is undefined")
    result = -np.expm1(-window / mtbf)
    return as_scalar(result)


def any_failure_probability(p, n):
    """Probability that at least one of ``n`` independent parts fails: ``1 - (1 - p)^n``.

    ``p`` is each part's failure probability over the same window (0 <= p <= 1). For small
    ``p`` this is close to ``1 - exp(-n p)``, the exponential form.
    """
    p = v.number("p", p, low=0, high=1, kind="a probability")
    n = np.asarray(v.count("n", n, low=0, scalar=False), dtype=float)
    p, n = v.broadcast(p=p, n=n)
    result = -np.expm1(n * np.log1p(-p)) if np.all(p < 1) else 1 - (1 - p) ** n
    return float(result) if np.ndim(result) == 0 else result


def expected_failures(duration, mtbf):
    """Expected number of failures in ``duration`` seconds of exposure: ``duration / MTBF``.

    Units: duration and mtbf in seconds; result dimensionless. Source: the mean of a Poisson process
    of rate 1/MTBF (the exponential model stated in the module docstring); by the elementary renewal
    theorem it also holds asymptotically for any lifetime distribution with that mean. Classic
    misreading: it is not the probability of a failure (that is ``failure_probability``, which stays
    below 1 while this does not)."""
    duration = v.nonnegative("duration", duration, unit="seconds")
    mtbf = v.positive("mtbf", mtbf, unit="seconds", allow_inf=True)
    duration, mtbf = v.broadcast(duration=duration, mtbf=mtbf)
    result = duration / mtbf
    return as_scalar(result)


# --------------------------------------------------------------------------------------
# Checkpoint interval
# --------------------------------------------------------------------------------------
def _check_interval_inputs(checkpoint_time, mtbf, *, feasible=True):
    checkpoint_time = v.positive("checkpoint_time", checkpoint_time, unit="seconds")
    mtbf = v.positive("mtbf", mtbf, unit="seconds")
    checkpoint_time, mtbf = v.broadcast(checkpoint_time=checkpoint_time, mtbf=mtbf)
    if feasible and np.any(checkpoint_time >= 2 * mtbf):
        bad = np.flatnonzero(np.ravel(checkpoint_time >= 2 * mtbf))[0]
        d, m = float(np.ravel(checkpoint_time)[bad]), float(np.ravel(mtbf)[bad])  # plain floats: no overflow warning
        raise ValueError(f"infeasible: checkpoint_time={d:g} s is {d / m:.3g}x mtbf={m:g} s; periodic checkpointing "
                         f"needs checkpoint_time < 2 x mtbf (a checkpoint that long is usually interrupted before it "
                         f"completes; Daly 2006 falls back to tau = M there). Shorten the checkpoint or raise the MTBF")
    return checkpoint_time, mtbf


def young_interval(checkpoint_time, mtbf):
    """Young's optimal compute time between checkpoints: ``sqrt(2 δ M)``, in seconds.

    Minimises the first-order waste ``δ/τ + τ/(2M)`` (checkpoint writes plus, per failure,
    half an interval of lost work). Source: Young (1974), "A first order approximation to the
    optimum checkpoint interval", CACM 17(9). Valid when ``δ << M``; see :func:`daly_interval`.
    ``δ >= 2M`` is reported as infeasible: a ``ValueError`` naming ``checkpoint_time`` and ``mtbf``.

    Args:
        checkpoint_time: δ, seconds the job stalls to write one checkpoint.
        mtbf: M, seconds between failures of the whole job.
    """
    checkpoint_time, mtbf = _check_interval_inputs(checkpoint_time, mtbf)
    result = np.sqrt(2 * checkpoint_time * mtbf)
    return as_scalar(result)


def daly_interval(checkpoint_time, mtbf):
    """Daly's higher-order optimal compute time between checkpoints, in seconds.

    ``τ = sqrt(2δM) [1 + (1/3) sqrt(δ/(2M)) + (1/9) (δ/(2M))] - δ`` for ``δ < 2M``. Source: Daly
    (2006), "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS
    22(3), eq. 37. The restart time does not enter the optimum (it is paid once per failure
    whatever the interval). For ``δ >= 2M`` Daly falls back to ``τ = M``; that regime is infeasible
    (a checkpoint that long is usually interrupted before it completes), and is reported as such:
    a ``ValueError`` naming ``checkpoint_time`` and ``mtbf``, not the fallback.
    """
    checkpoint_time, mtbf = _check_interval_inputs(checkpoint_time, mtbf)
    x = checkpoint_time / (2 * mtbf)
    tau = np.sqrt(2 * checkpoint_time * mtbf) * (1 + np.sqrt(x) / 3 + x / 9) - checkpoint_time
    return as_scalar(tau)


def _check_goodput_inputs(interval, checkpoint_time, mtbf, restart_time):
    interval = v.positive("interval", interval, unit="seconds")
    checkpoint_time = v.nonnegative("checkpoint_time", checkpoint_time, unit="seconds")
    mtbf = v.positive("mtbf", mtbf, unit="seconds")
    restart_time = v.nonnegative("restart_time", restart_time, unit="seconds")
    if all(type(x) is float for x in (interval, checkpoint_time, mtbf, restart_time)):
        return interval, checkpoint_time, mtbf, restart_time  # one configuration: no arrays
    interval, checkpoint_time, mtbf, restart_time = v.broadcast(interval=interval, checkpoint_time=checkpoint_time,
                                                                mtbf=mtbf, restart_time=restart_time)
    return interval, checkpoint_time, mtbf, restart_time


@readable("Waste", lambda w: repr(w)[len("Waste("):-1].replace("=", " "))
@dataclass(frozen=True)
class Waste:
    """Where the wall-clock time of a checkpointed run goes, as fractions of wall-clock time.

    ``checkpoint + rework + restart + goodput == 1`` (first-order model). A configuration
    whose waste reaches 100% makes no progress: ``feasible`` is then False and ``goodput`` 0.
    """

    checkpoint: np.ndarray | float
    rework: np.ndarray | float
    restart: np.ndarray | float

    @property
    def total(self):
        return self.checkpoint + self.rework + self.restart

    @property
    def goodput(self):
        return np.clip(1 - self.total, 0, 1) if np.ndim(self.total) else max(0.0, 1 - self.total)

    @property
    def feasible(self):
        return self.total < 1

    def __repr__(self):
        if np.ndim(self.total):
            return f"Waste(<arrays of shape {np.shape(self.total)}>)"
        return (f"Waste(checkpoint={self.checkpoint:.2%}, rework={self.rework:.2%}, restart={self.restart:.2%}, "
                f"goodput={self.goodput:.2%})")


def waste(interval, checkpoint_time, mtbf, restart_time=0.0, *, durable_lag=0.0) -> Waste:
    """First-order breakdown of wasted wall-clock time for periodic checkpointing.

    Each segment is ``τ`` of work followed by a stall of ``δ``. Failures arrive at rate
    ``1/M`` of wall-clock time; each costs the restart ``R`` plus, on average, half a segment
    of lost work, plus ``durable_lag`` (with asynchronous checkpoints, the newest checkpoint
    is durable only after its background write finishes, so a failure rolls back further).

        checkpoint = δ / (τ + δ)
        rework     = ((τ + δ) / 2 + lag) / M
        restart    = R / M

    Minimising this over ``τ`` gives ``τ + δ = sqrt(2δM)``; dropping ``δ`` against ``τ``
    (``δ/τ + τ/(2M)``) gives Young's ``τ = sqrt(2δM)``, the same to first order. Source: Young (1974);
    Daly (2006), sec. 2. First order in ``(τ + δ + R)/M``: accurate when checkpoints and
    restarts are short against the MTBF; beyond that it can be far off in either direction
    (compare :func:`goodput_exact` and :func:`simulate`).

    Args (seconds; all broadcast): interval τ, checkpoint_time δ (the stall), mtbf M,
    restart_time R (detect, re-provision, reload, re-initialise), durable_lag.
    """
    interval, checkpoint_time, mtbf, restart_time = _check_goodput_inputs(interval, checkpoint_time, mtbf,
                                                                           restart_time)
    durable_lag = v.nonnegative("durable_lag", durable_lag, unit="seconds")
    segment = interval + checkpoint_time
    parts = (checkpoint_time / segment, (segment / 2 + durable_lag) / mtbf, restart_time / mtbf * np.ones_like(segment))
    parts = tuple(float(p) if np.ndim(p) == 0 else p for p in parts)
    return Waste(*parts)


def goodput_exact(interval, checkpoint_time, mtbf, restart_time=0.0):
    """Expected goodput (useful work / wall-clock time) under exponential failures, exactly.

    ``G = τ / (M e^{R/M} (e^{(τ+δ)/M} - 1))``: every segment of ``τ + δ`` must survive
    intact, failures can also strike during restarts, and lost work includes everything since
    the last completed checkpoint. Source: Daly (2006), eq. 13 (expected wall-clock time
    ``T_w = M e^{R/M} (e^{(τ+δ)/M} - 1) T_s / τ``), which :func:`simulate` reproduces.
    """
    interval, checkpoint_time, mtbf, restart_time = _check_goodput_inputs(interval, checkpoint_time, mtbf,
                                                                           restart_time)
    if type(interval) is float:  # one configuration, in plain floats
        try:
            return interval / (mtbf * math.exp(restart_time / mtbf) * math.expm1((interval + checkpoint_time) / mtbf))
        except OverflowError:  # e^x beyond a float: goodput 0, its limit
            return 0.0
    with np.errstate(over="ignore"):  # e^x beyond a float: goodput 0, its limit, without NumPy's warning
        result = interval / (mtbf * np.exp(restart_time / mtbf) * np.expm1((interval + checkpoint_time) / mtbf))
    return as_scalar(result)


def checkpoint_time(checkpoint_bytes, bandwidth):
    """Seconds to move a checkpoint of ``checkpoint_bytes`` at ``bandwidth`` bytes/s.

    Formula: bytes / bandwidth (a definition; no latency term). Units: bytes, bytes/s, result in s.

    The write (to storage) and the read at restart (from storage) both obey this; for an
    asynchronous checkpoint, the stall is the copy to host memory, at the host-copy bandwidth.
    """
    checkpoint_bytes = v.nonnegative("checkpoint_bytes", checkpoint_bytes, unit="bytes")
    bandwidth = v.positive("bandwidth", bandwidth, unit="bytes/s")
    if type(checkpoint_bytes) is float and type(bandwidth) is float:
        return checkpoint_bytes / bandwidth
    checkpoint_bytes, bandwidth = v.broadcast(checkpoint_bytes=checkpoint_bytes, bandwidth=bandwidth)
    result = checkpoint_bytes / bandwidth
    return as_scalar(result)


# --------------------------------------------------------------------------------------
# Monte Carlo
# --------------------------------------------------------------------------------------
@readable("Simulation")
@dataclass(frozen=True)
class Simulation:
    """Results of :func:`simulate`: per-trial wall-clock time, failures and goodput.

    ``work`` is the useful work of each trial (seconds): a float, or an array of shape ``(trials,)``.
    """

    work: float | np.ndarray
    wall_time: np.ndarray
    failures: np.ndarray

    @property
    def goodput(self) -> np.ndarray:
        return self.work / self.wall_time

    @property
    def mean_goodput(self) -> float:
        return float(self.goodput.mean())

    @property
    def trials(self) -> int:
        return int(self.wall_time.size)

    def __repr__(self):
        g = self.goodput
        return (f"Simulation({self.trials:,} trials: goodput mean {g.mean():.2%}, 5-95% "
                f"[{np.percentile(g, 5):.2%}, {np.percentile(g, 95):.2%}], failures mean {self.failures.mean():.1f})")


SIMULATION_BUDGET = 5.0
"""Seconds of computation :func:`simulate` and :func:`timeline` accept to start: a run whose expected
number of events (segments retried after failures, interrupted restarts) would take longer, by the cost
model in :func:`_expected_events`, is refused up front with the parameter to change."""


def _expected_events(work, interval, checkpoint_time, mtbf, restart_time):
    """Expected events of one trial: each of ``ceil(work/interval)`` segments of length ``seg`` is tried
    ``e^{seg/M}`` times on average (a geometric number of attempts), and each failure adds a restart that
    is itself tried ``e^{R/M}`` times."""
    seg = np.minimum(interval, work) + checkpoint_time
    segments = np.ceil(work / interval)
    tries = np.exp(np.minimum(seg / mtbf, 700.0))
    restarts = np.exp(min(restart_time / mtbf, 700.0))
    return segments * (tries + (tries - 1) * restarts), segments, seg


def _check_run(work, interval, checkpoint_time, mtbf, restart_time, *, seconds_per_event, max_events):
    """Validate a run's parameters (seconds; ``work`` and ``interval`` may be arrays) and refuse, naming
    the parameter, a run that could not finish within :data:`SIMULATION_BUDGET` or ``max_events``."""
    work = v.positive("work", work, unit="seconds")
    interval = v.positive("interval", interval, unit="seconds")
    checkpoint_time = v.nonnegative("checkpoint_time", checkpoint_time, scalar=True, unit="seconds")
    mtbf = v.positive("mtbf", mtbf, scalar=True, unit="seconds")
    restart_time = v.nonnegative("restart_time", restart_time, scalar=True, unit="seconds")
    max_events = v.count("max_events", max_events)
    work_b, interval_b = v.broadcast(work=work, interval=interval)
    events, segments, seg = _expected_events(work_b, interval_b, checkpoint_time, mtbf, restart_time)
    worst = float(np.max(events))
    if worst * seconds_per_event > SIMULATION_BUDGET or worst > max_events:
        i = int(np.argmax(events))
        n_seg, s_len = float(np.ravel(segments)[i]), float(np.ravel(seg)[i])
        if s_len / mtbf >= restart_time / mtbf and s_len / mtbf > 3:
            culprit = (f"each segment (interval {float(np.ravel(interval_b)[i]):,.4g} s + checkpoint_time "
                       f"{checkpoint_time:,.4g} s) is {s_len / mtbf:.3g}x mtbf={mtbf:,.4g} s: it almost never "
                       f"completes; shorten interval or checkpoint_time, or raise mtbf")
        elif restart_time / mtbf > 3:
            culprit = (f"restart_time={restart_time:,.4g} s is {restart_time / mtbf:.3g}x mtbf={mtbf:,.4g} s: restarts "
                       f"are almost always interrupted; shorten restart_time or raise mtbf")
        else:
            culprit = (f"work/interval = {n_seg:,.4g} segments (work={float(np.ravel(work_b)[i]):,.4g} s, "
                       f"interval={float(np.ravel(interval_b)[i]):,.4g} s), each tried {math.exp(s_len / mtbf):.3g} "
                       f"times on average; lengthen interval or shorten work")
        raise ValueError(f"infeasible to simulate: about {worst:,.3g} events expected per trial (limit "
                         f"{min(max_events, SIMULATION_BUDGET / seconds_per_event):,.0f}); {culprit}")
    return work_b, interval_b, checkpoint_time, mtbf, restart_time


def simulate(work, interval, checkpoint_time, mtbf, restart_time=0.0, *, trials=10_000, seed=0,
             max_events=1_000_000) -> Simulation:
    """Monte Carlo of a checkpointed run with exponential failures, vectorised over trials.

    A run needs ``work`` seconds of computation, done in segments of ``interval`` (the last
    one shorter) each followed by a checkpoint stall of ``checkpoint_time``; a segment
    counts once its checkpoint completes. A failure (rate ``1/mtbf`` of wall-clock time,
    including during restarts) discards the segment in progress and costs ``restart_time``
    before work resumes. ``interval`` and ``work`` may be arrays of shape ``(trials,)``, one
    value per trial (a whole sweep in one call; giving each trial the same number of segments,
    ``work = k * interval``, keeps the loop short when the intervals differ widely). Seeded: the
    same arguments give the same result.

    Returns a :class:`Simulation`. Raises ``ValueError`` for a configuration that would
    (almost) never finish.
    """
    trials = v.count("trials", trials, high=10_000_000)
    for name, value in (("interval", interval), ("work", work)):
        if np.ndim(value) and np.shape(value) != (trials,):
            raise ValueError(f"{name} has shape {np.shape(value)}; give a scalar or one per trial ({trials},)")
    work_scalar = np.ndim(work) == 0
    # cost model (measured): ~20 µs per loop iteration plus ~30 ns per trial
    max_events = v.count("max_events", max_events)
    work_in, interval, checkpoint_time, mtbf, restart_time = _check_run(
        work, interval, checkpoint_time, mtbf, restart_time, seconds_per_event=2e-5 + 3e-8 * trials,
        max_events=max_events)
    interval = np.broadcast_to(interval, (trials,))
    work = np.broadcast_to(work_in, (trials,))
    rng = np.random.default_rng(v.seed("seed", seed))
    done = np.zeros(trials)
    wall = np.zeros(trials)
    failures = np.zeros(trials, dtype=np.int64)
    active = np.ones(trials, dtype=bool)
    for _ in range(max_events):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        segment = np.minimum(interval[idx], work[idx] - done[idx]) + checkpoint_time
        to_failure = rng.exponential(mtbf, idx.size)
        ok = to_failure >= segment
        good, bad = idx[ok], idx[~ok]
        done[good] += segment[ok] - checkpoint_time
        wall[good] += segment[ok]
        # A failure: lose the segment in progress, then restart (which may itself fail).
        wall[bad] += to_failure[~ok]
        failures[bad] += 1
        pending = bad
        while pending.size:
            t = rng.exponential(mtbf, pending.size)
            survived = t >= restart_time
            wall[pending[survived]] += restart_time
            wall[pending[~survived]] += t[~survived]
            failures[pending[~survived]] += 1
            pending = pending[~survived]
        active[good[done[good] >= work[good] - 1e-9]] = False
    else:
        raise ValueError(f"the run did not finish within max_events={max_events:,} events per trial")
    return Simulation(float(np.ravel(work_in)[0]) if work_scalar else np.array(work_in, dtype=float).copy(), wall,
                      failures)


@dataclass(frozen=True)
class Event:
    """One stretch of a simulated timeline: ``kind`` is 'work', 'checkpoint', 'lost' or 'restart'."""

    kind: str
    start: float
    end: float


def timeline(work, interval, checkpoint_time, mtbf, restart_time=0.0, *, seed=0,
             max_events: int = 100_000) -> tuple[Event, ...]:
    """One simulated run as a sequence of events (seconds), for drawing a failure timeline.

    Same model as :func:`simulate` with one trial; 'lost' marks work (or a checkpoint) that
    a failure discarded, 'restart' the time to recover. A run expected to need more than
    ``max_events`` events (or more than about a second) is refused up front with a ``ValueError``
    naming the parameter to change; a run that, by bad luck, exceeds ``max_events`` anyway stops
    with a ``ValueError`` too.
    """
    for name, value in (("work", work), ("interval", interval)):
        v.number(name, value, scalar=True)
    work, interval, checkpoint_time, mtbf, restart_time = _check_run(
        work, interval, checkpoint_time, mtbf, restart_time, seconds_per_event=3e-6, max_events=max_events)
    work, interval = float(work), float(interval)
    rng = np.random.default_rng(v.seed("seed", seed))
    events: list[Event] = []
    t = done = 0.0
    while done < work - 1e-9:
        if len(events) > max_events:
            raise ValueError(f"the run exceeded max_events={max_events:,} events (an unlucky draw of a run "
                             f"expected to need fewer); raise max_events or change seed")
        length = min(interval, work - done)
        to_failure = rng.exponential(mtbf)
        if to_failure >= length + checkpoint_time:
            events += [Event("work", t, t + length), Event("checkpoint", t + length, t + length + checkpoint_time)]
            t += length + checkpoint_time
            done += length
            continue
        events.append(Event("lost", t, t + to_failure))
        t += to_failure
        while True:  # restart, possibly interrupted
            r = rng.exponential(mtbf)
            if r >= restart_time:
                if restart_time > 0:
                    events.append(Event("restart", t, t + restart_time))
                t += restart_time
                break
            events.append(Event("restart", t, t + r))
            t += r
    return tuple(events)


# --------------------------------------------------------------------------------------
# The exact optimum, restart time, spares, stragglers
# --------------------------------------------------------------------------------------
def exact_optimal_interval(checkpoint_time, mtbf):
    """The interval that maximises :func:`goodput_exact`, in seconds (no approximation).

    Setting the derivative of ``τ / (e^{(τ+δ)/M} - 1)`` to zero gives ``e^{(τ+δ)/M} (1 - τ/M) = 1``;
    with ``v = 1 - τ/M`` this is ``ln v - v + 1 + δ/M = 0``, i.e. ``τ = M (1 + W₀(-e^{-1-δ/M}))``
    with ``W₀`` the principal branch of Lambert's W. The restart time does not enter: ``e^{R/M}`` is a
    constant factor of the goodput. Source: the maximisation of Daly (2006), eq. 13; Young's ``sqrt(2δM)``
    and Daly's eq. 37 are its expansions in ``sqrt(δ/M)``.

    **δ >= 2M is not refused here**, unlike :func:`young_interval` and :func:`daly_interval`. Their refusal
    is about their formulas: expansions in ``sqrt(δ/(2M))`` that Daly derives for ``δ < 2M`` only. The
    exact optimum exists for every ``δ/M > 0``: the goodput is positive for every ``τ > 0`` and tends to 0
    at both ends, and ``ln v - v + 1 + δ/M`` rises from ``-inf`` to ``δ/M > 0`` on ``(0, 1)``, so it has
    exactly one root. As ``δ/M`` grows the optimum tends to ``τ = M`` (Daly's fallback; equal to it in
    double precision beyond ``δ/M ≈ 37``) while the goodput at it collapses: about 5.2% at ``δ = 2M``,
    0.25% at ``5M``, 1.7e-5 at ``10M``. Whether such a job is worth running is the goodput's verdict
    (:func:`goodput_exact` at this interval), not the interval's; a caller that wants the infeasible
    regime refused should check ``δ < 2M`` as :func:`daly_interval` does.

    Numerics (accurate to a few ulp for every ``δ/M``, checked against Lambert's W in the tests): for
    ``δ/M < 0.5``, Newton's method on ``x = τ/M`` for ``-ln(1 - x) - x = δ/M`` from Young's ``x = sqrt(2δ/M)``
    (right of the root; the left side is convex and increasing, so the iterates fall monotonically to it),
    with the series ``sum x^k/k`` for small ``x`` (no cancellation); for ``0.5 <= δ/M <= 40``, Newton's method
    on ``v`` from ``e^{-1-δ/M}`` (left of the root; concave and increasing); beyond, ``τ = M``. Below
    ``δ/M = 1e-30`` it is Young's ``sqrt(2δ) sqrt(M)`` (the correction, ``O(sqrt(δ/M))``, is below rounding).

    Args:
        checkpoint_time: δ, seconds per checkpoint stall.
        mtbf: M, seconds between job failures.
    """
    checkpoint_time, mtbf = _check_interval_inputs(checkpoint_time, mtbf, feasible=False)
    if np.ndim(checkpoint_time) == 0:  # one value (the common case): plain floats, ~20x faster than arrays
        return _exact_optimal_scalar(float(checkpoint_time), float(mtbf))
    with np.errstate(all="ignore"):  # each branch is computed everywhere and kept only where it applies
        d = np.asarray(checkpoint_time / mtbf, dtype=float)  # may overflow to inf: then tau = M
        ds = np.clip(d, 1e-30, 0.5)
        x = np.minimum(np.sqrt(2 * ds), 1 - np.exp(-1 - ds))
        for _ in range(60):
            step = (_log_excess(x) - ds) * (1 - x) / x
            x = x - step
            if np.all(np.abs(step) <= 1e-16 * x):
                break
        dl = np.clip(d, 0.5, 40.0)
        v = np.exp(-1 - dl)
        for _ in range(60):
            step = (np.log(v) - v + 1 + dl) / (1 / v - 1)
            v = v - step
            if np.all(np.abs(step) <= 1e-16 * v):
                break
        x = np.where(d < 0.5, x, np.where(d > 40, 1.0, 1 - v))
        result = np.where(d < 1e-30, np.sqrt(2 * checkpoint_time) * np.sqrt(mtbf), mtbf * x)
    return as_scalar(result)


def _exact_optimal_scalar(delta: float, m: float) -> float:
    """:func:`exact_optimal_interval` for one ``(δ, M)``, same branches, in plain floats."""
    d = delta / m  # inf when it overflows: then τ = M, as for any δ/M > 40
    if d < 1e-30:
        return math.sqrt(2 * delta) * math.sqrt(m)
    if d > 40:
        return m
    if d < 0.5:
        x = min(math.sqrt(2 * d), 1 - math.exp(-1 - d))
        for _ in range(60):
            step = (_log_excess(x) - d) * (1 - x) / x
            x -= step
            if abs(step) <= 1e-16 * x:
                break
        return m * x
    v = math.exp(-1 - d)
    for _ in range(60):
        step = (math.log(v) - v + 1 + d) / (1 / v - 1)
        v -= step
        if abs(step) <= 1e-16 * v:
            break
    return m * (1 - v)


def _log_excess(x):
    """``-ln(1 - x) - x`` for ``0 < x < 1`` without cancellation: its series ``sum_{k>=2} x^k / k`` below 0.05."""
    if isinstance(x, float):
        xs = min(x, 0.05)
        series = 0.0
        for k in range(21, 1, -1):
            series = series * xs + 1.0 / k
        return series * xs * xs if x < 0.05 else -math.log1p(-x) - x
    x = np.asarray(x, dtype=float)
    xs = np.minimum(x, 0.05)
    series = np.zeros_like(xs)
    for k in range(21, 1, -1):  # Horner in x: x^2 (1/2 + x (1/3 + x (1/4 + ...)))
        series = series * xs + 1.0 / k
    return np.where(x < 0.05, series * xs * xs, -np.log1p(-x) - x)


NCCL_DEFAULT_TIMEOUT = 600.0
"""Seconds a collective may hang before PyTorch's NCCL watchdog aborts it: the default ``timeout`` of
``torch.distributed.init_process_group`` for the NCCL backend (10 minutes since PyTorch 2.2; 30 minutes
before, and for other backends). Source: PyTorch documentation of ``init_process_group``; pytorch/pytorch
pull request 110947 ("Change ProcessGroupNCCL default timeout to 10 min"). A job that relies on it to
notice a dead rank pays it in every restart."""


@dataclass(frozen=True)
class RestartTime:
    """The restart time ``R`` as the sequence of steps a failure costs, in seconds.

    ``detect``: from the failure to the job noticing it (a missed heartbeat, or a collective that hangs
    until the watchdog timeout); ``replace``: bring in a healthy node (seconds with a hot spare, minutes
    to provision one); ``relaunch``: start the processes and re-create the communicators; ``load``: read
    the checkpoint back and restore the data-loader state. ``total`` is their sum (``R``).
    """

    detect: float
    replace: float
    relaunch: float
    load: float

    def __post_init__(self):
        for name in ("detect", "replace", "relaunch", "load"):
            object.__setattr__(self, name, v.nonnegative(name, getattr(self, name), scalar=True, unit="seconds"))

    @property
    def total(self) -> float:
        """R, seconds."""
        return self.detect + self.replace + self.relaunch + self.load

    def parts(self) -> dict[str, float]:
        return {"detect": self.detect, "replace": self.replace, "relaunch": self.relaunch, "load": self.load}


def heartbeat_detection_time(interval, missed=3):
    """Seconds from a failure to its detection by heartbeats: ``missed × interval`` at worst.

    A health monitor declares a rank dead after ``missed`` consecutive heartbeats fail to arrive; the
    failure falls somewhere in the first missed period, so detection takes between ``(missed - 1)`` and
    ``missed`` intervals (the upper bound is returned). Source: the standard heartbeat failure detector
    (e.g. the system-design write-up's 5 s heartbeat; TorchElastic's rendezvous keep-alive)."""
    interval = v.positive("interval", interval, unit="seconds")
    missed = np.asarray(v.count("missed", missed, scalar=False), dtype=float)
    interval, missed = v.broadcast(interval=interval, missed=missed)
    return as_scalar(interval * missed)


def _poisson_cdf(k, mean):
    term = total = math.exp(-mean)
    for i in range(1, k + 1):
        term *= mean / i
        total += term
    return total


def spares_needed(num_nodes, node_mttf, repair_time, coverage=0.99):
    """Hot spares needed so that a failed node can be replaced at once with probability ``coverage``.

    Nodes fail at rate ``num_nodes / node_mttf`` and each spends ``repair_time`` in repair, so the number
    of nodes in repair at a random moment is Poisson with mean ``num_nodes × repair_time / node_mttf``
    (an M/G/∞ queue: Palm's theorem, the occupancy depends on the repair time only through its mean).
    Returns the smallest ``k`` with ``P(in repair <= k) >= coverage`` (an int). Source: Palm (1938);
    e.g. Kleinrock, *Queueing Systems* vol. 1, sec. 3.5 (M/M/∞, and its insensitivity to the service
    distribution). Units: seconds for ``node_mttf`` and ``repair_time``.
    """
    num_nodes = v.count("num_nodes", num_nodes)
    node_mttf = v.positive("node_mttf", node_mttf, scalar=True, unit="seconds")
    repair_time = v.nonnegative("repair_time", repair_time, scalar=True, unit="seconds")
    coverage = v.number("coverage", coverage, low=0, high=1, low_open=True, high_open=True, scalar=True)
    mean = num_nodes * repair_time / node_mttf
    if mean > 1e6:
        raise ValueError(f"num_nodes x repair_time / node_mttf = {mean:,.3g} nodes in repair on average: more than "
                         f"10^6; check num_nodes={num_nodes}, repair_time={repair_time:g} s, node_mttf={node_mttf:g} s")
    if mean == 0:
        return 0
    k = np.arange(int(mean + 40 * math.sqrt(mean) + 60))
    log_pmf = -mean + k * math.log(mean) - np.concatenate(([0.0], np.cumsum(np.log(k[1:]))))
    cdf = np.cumsum(np.exp(log_pmf))
    return int(np.argmax(cdf >= coverage)) if np.any(cdf >= coverage) else int(k[-1])


# --------------------------------------------------------------------------------------
# The chapter's explorers: one computed state each (drawn by atscale.plots, summarised by atscale.widgets)
# --------------------------------------------------------------------------------------
def _profile_arg(profile) -> FailureProfile:
    if isinstance(profile, FailureProfile):
        return profile
    if isinstance(profile, str) and profile in PROFILES:
        return PROFILES[profile]
    raise ValueError(f"profile={profile!r} is not one of {list(PROFILES)} (or a FailureProfile)")


@dataclass(frozen=True)
class UCurve:
    """Expected waste against the checkpoint interval for one cluster (seconds; fractions of wall-clock time).

    ``intervals``: the checkpoint intervals, 2.5 decades around Young's interval rounded to a quarter decade of
    hours (so a figure's axis moves in steps); ``waste``: the first-order breakdown there (:func:`waste`, Young
    1974 / Daly 2006 sec. 2); ``exact``: the exact expected waste, ``1 - goodput_exact`` (Daly 2006, eq. 13);
    ``sim_intervals``, ``sim_waste``: the seeded Monte Carlo's mean waste at up to nine intervals
    (:func:`simulate`, ``trials_per_point`` runs each of 40 intervals of work); ``young``, ``daly``: the two
    optimal intervals; ``daly_goodput``: the exact expected goodput at Daly's interval;
    ``first_order_infeasible``: the first-order waste at Young's interval reaches 100%.
    """

    gpus: int
    profile: str
    checkpoint_time: float
    restart_time: float
    mtbf: float
    young: float
    daly: float
    intervals: np.ndarray
    waste: Waste
    exact: np.ndarray
    sim_intervals: np.ndarray
    sim_waste: np.ndarray
    trials_per_point: int
    daly_goodput: float
    first_order_infeasible: bool


U_CURVE_POINTS = 101
"""Intervals per U-curve (a quarter decade per 10 points)."""


def u_curve(gpus=1024, checkpoint_time=60.0, restart_time=600.0, profile=TEXTBOOK_PROFILE.name, *,
            trials_per_point: int = 60, seed: int = 0) -> UCurve:
    """The wasted-time U-curve of ``gpus`` GPUs with ``profile`` (a :class:`FailureProfile` or a name in
    :data:`PROFILES`): first-order and exact waste over the intervals around Young's, the seeded simulation and
    the optimal intervals (see :class:`UCurve`; seconds in, seconds out)."""
    gpus = v.count("gpus", gpus)
    checkpoint_time = v.positive("checkpoint_time", checkpoint_time, scalar=True, unit="seconds")
    restart_time = v.nonnegative("restart_time", restart_time, scalar=True, unit="seconds")
    trials_per_point = v.count("trials_per_point", trials_per_point, high=100_000)
    prof = _profile_arg(profile)
    mtbf = prof.cluster_mtbf(gpus)
    young = young_interval(checkpoint_time, mtbf)
    daly = daly_interval(checkpoint_time, mtbf)
    trials_per_point = v.count("trials_per_point", trials_per_point)
    centre = np.round(4 * np.log10(young / u.hour)) / 4  # quarter decades of hours: a few axes only
    taus = 10.0 ** (centre + np.linspace(-1.25, 1.25, U_CURVE_POINTS)) * u.hour
    w = waste(taus, checkpoint_time, mtbf, restart_time)
    exact = 1 - goodput_exact(taus, checkpoint_time, mtbf, restart_time)
    points = np.geomspace(young / 8, young * 8, 9)
    # Simulate only where a run finishes quickly: a segment of s MTBFs is tried e^s times on average (e^2 = 7.4 at
    # the limit), each failure adding a restart; beyond, one call took seconds. The exact curve covers the rest.
    points = points[(points + checkpoint_time) / mtbf <= 2.0] if restart_time / mtbf <= 2.0 else points[:0]
    wasted = np.zeros(0)
    if points.size:
        per_trial = np.repeat(points, trials_per_point)
        sim = simulate(40 * per_trial, per_trial, checkpoint_time, mtbf, restart_time,
                       trials=points.size * trials_per_point, seed=seed)
        wasted = 1 - sim.goodput.reshape(points.size, trials_per_point).mean(axis=1)
    return UCurve(int(gpus), prof.name, float(checkpoint_time), float(restart_time), float(mtbf), float(young),
                  float(daly), taus, w, exact, points, wasted, trials_per_point,
                  float(goodput_exact(daly, checkpoint_time, mtbf, restart_time)),
                  bool(waste(young, checkpoint_time, mtbf, restart_time).total >= 1))


@dataclass(frozen=True)
class TimelineRun:
    """One seeded simulated run (:func:`timeline`) of ``work`` seconds of useful work on ``gpus`` GPUs:
    its ``events``, the cluster ``mtbf`` (seconds) and the exact ``expected_goodput`` at this interval
    (Daly 2006, eq. 13; a fraction)."""

    gpus: int
    work: float
    interval: float
    checkpoint_time: float
    restart_time: float
    mtbf: float
    events: tuple
    expected_goodput: float


def timeline_run(gpus=1024, interval=3600.0, checkpoint_time=60.0, restart_time=900.0, *, work=3 * 86400.0,
                 seed=9, profile=TEXTBOOK_PROFILE.name, max_events: int = 100_000) -> TimelineRun:
    """One simulated run for drawing (seconds): :func:`timeline` on the cluster MTBF of ``gpus`` GPUs with
    ``profile``. ``seed=9`` gives, at the defaults, a run with three failures, close to the expected 2.3 (a
    typical picture, not a lucky one). A run needing more than ``max_events`` events is refused
    (``ValueError``, naming what to change)."""
    mtbf = _profile_arg(profile).cluster_mtbf(v.count("gpus", gpus))
    events = timeline(work, interval, checkpoint_time, mtbf, restart_time, seed=seed, max_events=max_events)
    return TimelineRun(int(gpus), float(work), float(interval), float(checkpoint_time), float(restart_time),
                       float(mtbf), events, float(goodput_exact(interval, checkpoint_time, mtbf, restart_time)))
