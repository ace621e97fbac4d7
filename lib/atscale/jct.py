"""Job completion time: how long a training job takes, and where every hour goes.

An estimate starts from the **theoretical minimum**, the model FLOPs of the whole job at the cluster's
dense peak, and adds each reason the real run is slower, until it reaches the **predicted wall-clock
time**. The terms, in order (:data:`TERMS`):

``minimum``
    model FLOPs (``6N + 12lsh`` per token, :func:`atscale.models.training_flops_per_token`) x tokens over
    the GPUs' dense peak;
``compute_gap``
    achievable vs peak: the same FLOPs at the rate a layer really reaches
    (:func:`atscale.parallelism.compute_efficiency` x the measured matmul ceiling), plus the imbalance of
    pipeline stages holding unequal numbers of layers, minus the minimum;
``recompute``
    activation recomputation;
``communication``
    exposed communication: tensor- and context-parallel exchanges, pipeline sends and the part of the data-parallel
    gradient reduction that does not hide behind the backward pass;
``bubble``
    the pipeline's fill and drain;
``optimizer``
    the optimizer step;
``straggler`` (only with ``stragglers=True`` or a :class:`atscale.stragglers.Stragglers`; off by default)
    the wait of every synchronous step for the slowest of the job's GPUs (:mod:`atscale.stragglers`);
``checkpoint``
    the stalls of the checkpoints that complete;
``rework``
    work (and partly written checkpoints) lost to failures and redone, plus, with asynchronous checkpoints,
    the extra roll-back while the newest checkpoint is not yet durable;
``restart``
    restarts after failures (including restarts interrupted by another failure).

The first six (and ``straggler`` when on) are the failure-free training time, ``steps x`` :attr:`atscale.parallelism.StepTime.total`
(from :func:`atscale.parallelism.step_time`; :func:`atscale.search.search` chooses the plan when none
is given). The last three come from Daly's exact expectation (:func:`atscale.reliability.goodput_exact`),
with the failure rate of :mod:`atscale.reliability`'s profiles and the checkpoint size of
:func:`atscale.memory.checkpoint_bytes`. The terms add up to :attr:`Estimate.total` exactly (it is their
sum) and that sum equals ``failure-free time / goodput`` to rounding; every term is >= 0, so the minimum
never exceeds the prediction.

Assumptions: those of the two modules it composes (a synchronous job that any failure stops,
exponential failures, restart from the last durable checkpoint, the step-time model's calibration); the
checkpoint interval is the exact optimum (:func:`atscale.reliability.exact_optimal_interval`) unless
given; an asynchronous checkpoint's background write must finish before the next one starts.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from . import _validate as _v
from . import hardware, memory, models, parallelism
from . import stragglers as _stragglers
from .calibration import CALIBRATION, Calibration
from .search import search as _search
from . import reliability as rel
from . import units as u
from .plan import Plan
from .scenario import RUNNING_EXAMPLE

__all__ = [
    "TERMS", "TERM_LABELS", "FAILURE_FREE_TERMS", "RELIABILITY_TERMS", "DEFAULT_WRITE_BANDWIDTH",
    "DEFAULT_HOST_BANDWIDTH", "DEFAULT_RESTART_TIME", "DEFAULT_GLOBAL_BATCH", "DEFAULT_FABRIC", "Checkpoint",
    "SYNC", "ASYNC", "Estimate", "estimate", "cluster_of", "tutorial_plan", "Sweep", "sweep", "crossover",
    "sync_wall", "reliability_terms", "gpus_for_deadline", "fixed_plan", "best_plan",
    "NoFeasibleLayout", "Sensitivity", "sensitivity", "scaled_profile", "SWEEP_GPUS",
]

TERMS = ("minimum", "compute_gap", "recompute", "communication", "bubble", "optimizer", "checkpoint", "rework",
         "restart")
"""The terms of an :class:`Estimate`, in the order they are summed into :attr:`Estimate.total`."""

FAILURE_FREE_TERMS = TERMS[:6]
RELIABILITY_TERMS = TERMS[6:]

TERM_LABELS = MappingProxyType({
    "minimum": "theoretical minimum (peak FLOP/s)", "compute_gap": "achievable vs peak compute",
    "recompute": "recomputation", "communication": "exposed communication", "bubble": "pipeline bubble",
    "optimizer": "optimizer step", "checkpoint": "checkpoint stalls", "rework": "rework after failures",
    "restart": "restarts", "straggler": "slowest of N (stragglers)"})

DEFAULT_WRITE_BANDWIDTH = 100 * u.GBps
"""Aggregate bandwidth of the writes of a checkpoint to durable storage, bytes/s. Sources: the JCT article
("Scaling Distributed Training: The Physics of Large-Scale AI Workloads") takes a parallel file system of
100 GB/s aggregate; Meta's Tectonic, which served Llama 3's 16,384 GPUs, sustains 2 TB/s (Llama Team 2024,
sec. 3.3.1), 125 GB/s per 1,024 GPUs. The reliability chapter uses the same 100 GB/s."""

DEFAULT_HOST_BANDWIDTH = 25 * u.GBps
"""Per-GPU bandwidth of an asynchronous checkpoint's copy from GPU to host memory, bytes/s: a PCIe Gen5 x16
link carries 64 GB/s per direction nominally (PCI-SIG, PCIe 5.0 specification); 25 GB/s is the achieved
figure the reliability chapter assumes for a pinned-memory copy shared with other traffic."""

DEFAULT_RESTART_TIME = 600.0
"""Seconds per restart when none is given: the reliability chapter's 10-minute restart (the JCT article
quotes 120-600 s to provision a replacement node and 30-60 s to drain; PyTorch's NCCL watchdog alone
waits 600 s, :data:`atscale.reliability.NCCL_DEFAULT_TIMEOUT`)."""

DEFAULT_GLOBAL_BATCH = RUNNING_EXAMPLE.plan.global_batch
"""Sequences per optimizer step when ``plan`` is None and no ``global_batch`` is given: the running
example's 1,024 (8.4M tokens of 8,192)."""

DEFAULT_FABRIC = hardware.FABRICS["InfiniBand NDR"]
"""Scale-out fabric of :func:`cluster_of`: 400 Gb/s InfiniBand NDR, one NIC per GPU (DGX H100)."""

SWEEP_GPUS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16_384)
"""The GPU counts of the chapter's sweeps (powers of two, one node to 2,048 nodes)."""

_STRATEGIES = ("sync", "async")


def _positive(name, value, *, allow_inf=False, unit=""):
    return _v.number(name, value, low=0, low_open=True, allow_inf=allow_inf, scalar=True, unit=unit)


def _nonnegative(name, value, *, unit=""):
    return _v.nonnegative(name, value, scalar=True, unit=unit)


def _count(name, value):
    """A whole number >= 1 (a whole float is accepted, as everywhere in the library; 2^62 at most)."""
    return _v.count(name, value)


def _counts(name, values) -> list[int]:
    """A non-empty sequence of whole numbers >= 1 (GPU counts), each checked (no silent ``int()``)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, range, np.ndarray)):
        raise ValueError(f"{name}={values!r} must be a sequence of GPU counts, e.g. (512, 1024)")
    if len(values) == 0:
        raise ValueError(f"{name} must not be empty")
    return [_count(f"{name}[{i}]", v) for i, v in enumerate(values)]


def _factor_pair(name, value) -> tuple[float, float]:
    """A (low, high) pair of positive finite multipliers for :func:`sensitivity`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray)) or len(value) != 2:
        raise ValueError(f"{name}={value!r} must be a pair (low, high) of positive factors, e.g. (0.5, 2.0)")
    return _positive(f"{name}[0]", value[0]), _positive(f"{name}[1]", value[1])


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Checkpoint:
    """How the job checkpoints.

    Attributes:
        strategy: ``"sync"`` (training stalls while the whole checkpoint is written to storage) or ``"async"``
            (training stalls only while each GPU copies its share to host memory; the write to storage runs in
            the background, and the checkpoint is durable only when it ends: CheckFreq's snapshot and persist,
            Mohan et al. 2021).
        write_bandwidth: aggregate bytes/s to durable storage (:data:`DEFAULT_WRITE_BANDWIDTH`).
        host_bandwidth: per-GPU bytes/s of the copy to host memory (:data:`DEFAULT_HOST_BANDWIDTH`).
        interval: seconds of training between checkpoints; ``None``: the exact optimum for the stall and the
            MTBF (:func:`atscale.reliability.exact_optimal_interval`).
        size: bytes of one checkpoint; ``None``: :func:`atscale.memory.checkpoint_bytes` of the model.
    """

    strategy: str = "sync"
    write_bandwidth: float = DEFAULT_WRITE_BANDWIDTH
    host_bandwidth: float = DEFAULT_HOST_BANDWIDTH
    interval: float | None = None
    size: float | None = None

    def __post_init__(self):
        if self.strategy not in _STRATEGIES:
            raise ValueError(f"strategy={_v.show(self.strategy)} must be one of {_STRATEGIES}")
        object.__setattr__(self, "write_bandwidth", _positive("write_bandwidth", self.write_bandwidth, unit="bytes/s"))
        object.__setattr__(self, "host_bandwidth", _positive("host_bandwidth", self.host_bandwidth, unit="bytes/s"))
        if self.interval is not None:
            object.__setattr__(self, "interval", _positive("interval", self.interval, unit="seconds"))
        if self.size is not None:
            object.__setattr__(self, "size", _positive("size", self.size, unit="bytes"))

    def stall(self, size: float, gpus: int) -> float:
        """Seconds training stalls per checkpoint: the whole write (sync) or one GPU's share of the copy (async)."""
        if self.strategy == "sync":
            return rel.checkpoint_time(size, self.write_bandwidth)
        return rel.checkpoint_time(size / gpus, self.host_bandwidth)

    def durable_lag(self, size: float) -> float:
        """Seconds after a checkpoint's stall until it is durable: 0 (sync) or the background write (async)."""
        return 0.0 if self.strategy == "sync" else rel.checkpoint_time(size, self.write_bandwidth)


SYNC = Checkpoint("sync")
ASYNC = Checkpoint("async")


def cluster_of(gpus: int, node: hardware.Node | str = hardware.DGX_H100,
               fabric: hardware.Fabric | str = DEFAULT_FABRIC) -> hardware.Cluster:
    """A cluster of ``gpus`` GPUs on ``node`` machines (by object or catalog name) joined by ``fabric``."""
    node = hardware.node(node) if isinstance(node, str) else node
    if not isinstance(node, hardware.Node):
        raise ValueError(f"node={_v.show(node)} must be an atscale.hardware.Node or a node name in the catalog")
    fabric = hardware.fabric(fabric) if isinstance(fabric, str) else fabric
    return hardware.Cluster.of_gpus(node, gpus, fabric)


def tutorial_plan(gpus: int, global_batch: int | None = None) -> Plan:
    """The mlsysim tutorial's fixed layout: tensor parallel 8 inside the node, no pipeline, data parallel over
    the nodes (its ``tp_size=8, pp_size=1``), global batch ``max(64, gpus)`` sequences as in its sweep.

    The tutorial does not say how the 70B model's state fits; the lightest settings under which it fits are
    used: ZeRO-1 (optimizer state sharded over the replicas), sequence parallelism and selective
    recomputation, micro-batches of one sequence. On one node (no replica to shard over) it does not fit.
    """
    gpus = _count("gpus", gpus)
    return fixed_plan(8, 1)(gpus, max(64, gpus) if global_batch is None else global_batch)


class NoFeasibleLayout(ValueError):
    """No layout :func:`atscale.search.search` enumerates fits the job (a ``ValueError``, so a layout
    function of :func:`sweep` that raises it is reported as infeasible at that count)."""


def best_plan(model, cluster: hardware.Cluster, global_batch: int = DEFAULT_GLOBAL_BATCH, *,
              seq_length: int | None = None, dtype: str = "bf16",
              dp_overlap: float = parallelism.DP_OVERLAP,
              calibration: Calibration = CALIBRATION, stack=None, stragglers=None) -> Plan:
    """The layout with the shortest step of :func:`atscale.search.search` for ``global_batch`` sequences
    on ``cluster`` (``stack``: the training stack whose operators are timed, as in
    :func:`atscale.parallelism.step_time`; ``None``: the calibrated curve): what :func:`estimate` uses when no plan
    is given. Raises :class:`NoFeasibleLayout`, naming
    the commonest reason, when none fits. ``stragglers``: see :func:`estimate`."""
    res = _search(model, cluster, global_batch, seq_length=seq_length, dtypes=(dtype,),
                  dp_overlap=dp_overlap, calibration=calibration, stack=stack, stragglers=stragglers)
    if not res.feasible_count:
        raise NoFeasibleLayout(f"no feasible layout ({next(iter(res.reasons()), 'no layout')})")
    return res.best()


def fixed_plan(tp: int, pp: int, base: Plan | None = None):
    """A layout function for :func:`sweep`: tensor parallel ``tp``, pipeline parallel ``pp``, data parallel
    over the remaining GPUs, and every other setting (micro-batch, ZeRO stage, schedule, recomputation,
    sequence parallelism) from ``base`` (default the running example's plan, TP 8 PP 4 with ZeRO-1). Returns
    ``(gpus, global_batch) -> Plan``; a GPU count that ``tp * pp`` does not divide, or a batch that does not
    split over the replicas, raises ``ValueError`` (which :func:`sweep` reports as infeasible)."""
    tp, pp = _count("tp", tp), _count("pp", pp)
    base = RUNNING_EXAMPLE.plan if base is None else base
    if not isinstance(base, Plan):
        raise ValueError(f"base={_v.show(base)} must be an atscale.plan.Plan")

    def layout(gpus: int, global_batch: int | None = None) -> Plan:
        gpus = _count("gpus", gpus)
        if gpus % (tp * pp):
            raise ValueError(f"gpus={_v.show(gpus)} must be a multiple of tp*pp={tp * pp}")
        gb = base.global_batch if global_batch is None else _count("global_batch", global_batch)
        return dataclasses.replace(base, tp=tp, pp=pp, dp=gpus // (tp * pp), global_batch=gb,
                                   sequence_parallel=base.sequence_parallel and tp > 1,
                                   virtual_stages=base.virtual_stages if pp > 1 else 1,
                                   schedule=base.schedule if pp > 1 else "1f1b")

    layout.__name__ = layout.__qualname__ = f"fixed_plan(tp={tp}, pp={pp})"
    return layout


# --------------------------------------------------------------------------------------
# The estimate
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """Where the wall-clock time of a training job goes, in seconds (see the module docstring).

    The nine terms of :data:`TERMS` add up to :attr:`total` exactly. An infeasible job (no layout fits, or
    the given plan cannot run) has ``feasible`` False, its ``reason``, and NaN terms.
    """

    minimum: float
    compute_gap: float
    recompute: float
    communication: float
    bubble: float
    optimizer: float
    checkpoint: float
    rework: float
    restart: float
    model: str
    gpus: int
    accelerator: str
    tokens: float
    plan: Plan | None
    step: parallelism.StepTime | None
    steps: float
    mtbf: float
    interval: float
    checkpoint_stall: float
    durable_lag: float
    restart_time: float
    strategy: str
    failures: str
    feasible: bool = True
    reason: str = ""
    communication_parts: dict = field(default_factory=dict, compare=False)
    straggler: float = 0.0
    stragglers: object = None

    def _names(self) -> tuple:
        """The terms of this estimate in summation order: :data:`TERMS`, with ``straggler`` after ``optimizer``
        when the estimate was made with a straggler model."""
        return TERMS if self.stragglers is None else FAILURE_FREE_TERMS + ("straggler",) + RELIABILITY_TERMS

    @property
    def total(self) -> float:
        """Predicted wall-clock seconds: the terms summed in the order of :data:`TERMS` (``straggler`` after
        ``optimizer`` when on)."""
        names = self._names()
        total = self.minimum
        for name in names[1:]:
            total = total + getattr(self, name)
        return total

    def parts(self) -> dict[str, float]:
        """``{term: seconds}`` in the order of :data:`TERMS` (with ``straggler`` after ``optimizer`` when the
        estimate was made with ``stragglers``)."""
        return {name: getattr(self, name) for name in self._names()}

    def hours(self) -> dict[str, float]:
        """``{term: hours}``."""
        return {k: v / u.hour for k, v in self.parts().items()}

    def fractions(self) -> dict[str, float]:
        """``{term: fraction of the wall-clock time}`` (they sum to 1)."""
        t = self.total
        return {k: v / t for k, v in self.parts().items()}

    @property
    def failure_free(self) -> float:
        """Seconds of training without failures or checkpoints: ``steps x`` step time (the first six terms, and
        ``straggler``)."""
        return sum(getattr(self, name) for name in FAILURE_FREE_TERMS) + self.straggler

    @property
    def reliability(self) -> float:
        """Seconds lost to checkpoints, rework and restarts."""
        return self.checkpoint + self.rework + self.restart

    @property
    def goodput(self) -> float:
        """Failure-free training time over wall-clock time (the reliability chapter's goodput)."""
        return self.failure_free / self.total

    @property
    def step_mfu(self) -> float:
        """MFU of one failure-free step (:attr:`atscale.parallelism.StepTime.mfu`)."""
        return self.minimum / self.failure_free

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation over the whole job, failures included: minimum over wall-clock time."""
        return self.minimum / self.total

    @property
    def expected_failures(self) -> float:
        """Failures expected during the job: wall-clock time over the MTBF (Wald's identity)."""
        return self.total / self.mtbf

    def loss_over(self, window: float) -> dict[str, float]:
        """Seconds of a ``window`` of wall-clock time (e.g. 30 days) lost to communication (with the bubble
        reported apart) and to reliability, at this job's fractions."""
        window = _positive("window", window, unit="seconds")
        return {"communication": self.communication / self.total * window,
                "bubble": self.bubble / self.total * window,
                "reliability": self.reliability / self.total * window}

    def __repr__(self):
        if not self.feasible:
            return f"Estimate({self.model} on {self.gpus:,} {self.accelerator}: infeasible: {self.reason})"
        parts = ", ".join(f"{k} {u.fmt_time(v)}" for k, v in self.parts().items())
        return (f"Estimate({self.model}, {u.fmt_count(self.tokens)} tokens on {self.gpus:,} {self.accelerator}: "
                f"{parts}; total {u.fmt_time(self.total)}, goodput {self.goodput:.1%}, MFU {self.mfu:.1%})")


def _profile(failures):
    if failures is None or isinstance(failures, rel.FailureProfile):
        return failures
    if isinstance(failures, str) and failures in rel.PROFILES:
        return rel.PROFILES[failures]
    if isinstance(failures, str) and failures in ("textbook", "llama3"):
        return rel.TEXTBOOK_PROFILE if failures == "textbook" else rel.LLAMA3_PROFILE
    raise ValueError(f"failures={_v.show(failures)} must be an atscale.reliability.FailureProfile, 'textbook', 'llama3', "
                     f"a name in atscale.reliability.PROFILES, or None (no failures)")


def _restart(restart_time):
    if isinstance(restart_time, rel.RestartTime):
        return restart_time.total
    return _nonnegative("restart_time", restart_time, unit="seconds")


def _infeasible(model, cluster, tokens, plan, reason, strategy, failures):
    nan = float("nan")
    return Estimate(*([nan] * len(TERMS)), model=model.name, gpus=cluster.num_gpus,
                    accelerator=cluster.accelerator.name, tokens=tokens, plan=plan, step=None, steps=nan, mtbf=nan,
                    interval=nan, checkpoint_stall=nan, durable_lag=nan, restart_time=nan, strategy=strategy,
                    failures=failures, feasible=False, reason=reason)


def reliability_terms(work, interval, checkpoint_time, mtbf, restart_time=0.0, *, durable_lag=0.0):
    """Expected seconds of checkpoint stalls, rework and restarts for ``work`` seconds of failure-free training.

    Exact under exponential failures (Daly 2006, eq. 13). With segments of ``S = τ + δ`` (interval plus
    stall), each of the ``work / τ`` segments is attempted ``e^{S/M}`` times on average; per segment:

        checkpoint = δ                                  (the stall of the attempt that succeeds)
        rework     = M (e^{S/M} - 1) - S  + (e^{S/M} - 1) L
        restart    = (e^{S/M} - 1) M (e^{R/M} - 1)

    (rework: the time of the failed attempts, whose expected length is ``M - S/(e^{S/M} - 1)``; restart: each
    failure's restart, repeated when a failure strikes during it). The three add up, with ``work``, to Daly's
    expected wall-clock time ``M e^{R/M} (e^{S/M} - 1) work / τ`` = ``work / goodput_exact(...)``. The durable
    lag ``L`` of an asynchronous checkpoint adds ``L`` of lost work per failure (first order in ``L/M``).
    Returns ``(checkpoint, rework, restart)`` in seconds (scalars). Units: seconds throughout.
    """
    work = _positive("work", work, unit="seconds")
    interval = _positive("interval", interval, unit="seconds")
    delta = _nonnegative("checkpoint_time", checkpoint_time, unit="seconds")
    mtbf = _positive("mtbf", mtbf, unit="seconds")
    r = _nonnegative("restart_time", restart_time, unit="seconds")
    lag = _nonnegative("durable_lag", durable_lag, unit="seconds")
    segments = work / interval
    goodput = float(rel.goodput_exact(interval, delta, mtbf, r))
    x = (interval + delta) / mtbf
    if goodput <= 0 or not math.isfinite(work / goodput):  # e^((τ+δ)/M) beyond a float: no progress
        raise ValueError(f"interval + checkpoint_time = {interval + delta:.4g} s and restart_time={r:.4g} s "
                         f"against mtbf={mtbf:.4g} s: a segment almost never completes, so the job makes no "
                         "progress (goodput 0)")
    fails = segments * math.expm1(x)  # failed attempts at a segment
    ckpt = segments * delta
    restart = fails * mtbf * math.expm1(r / mtbf)
    # M (e^x - 1) - S = M (e^x - 1 - x) per segment, computed without cancellation (not as the wall-clock time
    # less the other terms, which loses everything when the restarts dwarf the work)
    rework = segments * mtbf * _expm1_minus_x(x) + fails * lag
    if not math.isfinite(rework):
        raise ValueError(f"durable_lag={lag:.4g} s lost on each of {fails:.4g} failures exceeds any float; give a "
                         "lag (seconds) far below the MTBF")
    return ckpt, rework, restart


def _expm1_minus_x(x: float) -> float:
    """``e^x - 1 - x`` for ``x >= 0`` without cancellation: its series ``sum_{k>=2} x^k / k!`` below 0.1."""
    if x >= 0.1:
        return math.expm1(x) - x
    term, total = x * x / 2, 0.0
    for k in range(3, 12):
        total += term
        term *= x / k
    return total


def estimate(model, tokens, cluster: hardware.Cluster, plan: Plan | None = None, *,
             checkpoint: Checkpoint = SYNC, failures=rel.TEXTBOOK_PROFILE, restart_time=DEFAULT_RESTART_TIME,
             global_batch: int | None = None, dp_overlap: float = parallelism.DP_OVERLAP,
             seq_length: int | None = None, dtype: str = "bf16",
             calibration: Calibration = CALIBRATION, stack=None, stragglers=None) -> Estimate:
    """Predicted wall-clock time of training ``model`` on ``tokens`` tokens on ``cluster``, term by term.

    Args:
        model: a :class:`atscale.models.TransformerConfig` or catalog name.
        tokens: training tokens (> 0).
        cluster: an :class:`atscale.hardware.Cluster`.
        plan: the layout (:class:`atscale.plan.Plan` with a ``global_batch``); ``None``: the best layout of
            :func:`atscale.search.search` for ``global_batch`` sequences (:data:`DEFAULT_GLOBAL_BATCH`).
        checkpoint: a :class:`Checkpoint` (sync or async, bandwidths, interval, size).
        failures: a :class:`atscale.reliability.FailureProfile` (or ``"textbook"``, ``"llama3"``), or ``None``
            for a job that never fails (then no checkpoints unless ``checkpoint.interval`` is given).
        restart_time: seconds per restart, or a :class:`atscale.reliability.RestartTime`.
        dp_overlap: fraction of the last micro-batch's backward pass the gradient reduction may hide behind
            (1: overlapped, 0: not), passed to the step-time model.
        calibration: the step-time model's constants (:class:`atscale.calibration.Calibration`; default the
            fitted :data:`atscale.calibration.CALIBRATION`).
        stack: the step time from the operators of a training stack, a name of :data:`atscale.operators.STACKS` or
            an :class:`atscale.operators.Stack`; ``None`` (default): the calibrated efficiency curve.
        stragglers: ``None`` (default, off), ``True`` (the published readings of :mod:`atscale.stragglers`) or an
            :class:`atscale.stragglers.Stragglers`: adds the ``straggler`` term, the steps' wait for the slowest
            GPU (:func:`atscale.parallelism.step_time`), and lets the layout search see it.

    Failure-free time: ``steps x step_time(...).total`` with ``steps = tokens / (global_batch x seq_length)``
    (Narayanan et al. 2021; see :mod:`atscale.parallelism`). Wall-clock time: ``failure-free / G`` with ``G``
    Daly's (2006, eq. 13) exact goodput for the checkpoint stall ``δ``, interval ``τ``, MTBF ``M`` and
    restart ``R`` (:func:`atscale.reliability.goodput_exact`). Per segment of ``S = τ + δ`` it splits as
    ``δ`` (checkpoint), ``M (e^{S/M} - 1) - S`` (work lost in failed attempts: rework) and
    ``(e^{S/M} - 1) M (e^{R/M} - 1)`` (restarts, interrupted ones included); asynchronous checkpoints add
    the durable lag ``L`` to the rework of each failure (first order in ``L/M``). Raises ``ValueError``
    naming the parameter for bad input.
    """
    model = models.model(model)
    tokens = _positive("tokens", tokens, unit="tokens")
    _check_estimate_objects(cluster, plan, checkpoint)
    profile = _profile(failures)
    r = _restart(restart_time)
    global_batch, seq_length = _estimate_counts(dp_overlap, global_batch, plan, seq_length)
    s = model.seq_length if seq_length is None else seq_length
    fname, gpus, slow = "none" if profile is None else profile.name, cluster.num_gpus, \
        _stragglers._stragglers_arg(stragglers)
    if plan is None:
        try:
            plan = best_plan(model, cluster, global_batch or DEFAULT_GLOBAL_BATCH, seq_length=seq_length, dtype=dtype,
                             dp_overlap=float(dp_overlap), calibration=calibration, stack=stack,
                             stragglers=slow)
        except NoFeasibleLayout as exc:
            return _infeasible(model, cluster, tokens, None, str(exc), checkpoint.strategy, fname)
    step = parallelism.step_time(model, cluster, plan, seq_length=seq_length, dtype=dtype,
                                 dp_overlap=float(dp_overlap), calibration=calibration, stack=stack,
                                 stragglers=slow)
    if not step.feasible:
        return _infeasible(model, cluster, tokens, plan, step.reason, checkpoint.strategy, fname)

    steps = tokens / (plan.global_batch * s)
    flops_per_token = step.model_flops_per_step / step.tokens_per_step  # the model's 6N + 12lsh, as step_time counts
    minimum = flops_per_token * tokens / (gpus * cluster.accelerator.peak(dtype))
    if not math.isfinite(minimum * steps) or not math.isfinite(step.total * steps):
        raise ValueError(f"tokens={tokens!r} is too large: the job's FLOPs or step count overflow a float")
    compute = step.compute * steps
    comm = {k: getattr(step, k) * steps for k in ("tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm")}
    failure_free = step.total * steps

    size = memory.checkpoint_bytes(model) if checkpoint.size is None else checkpoint.size
    delta, lag = checkpoint.stall(size, gpus), checkpoint.durable_lag(size)
    mtbf, tau, (ckpt, rework, restart) = _failure_terms(failure_free, checkpoint, profile, gpus, delta, lag, r)
    return Estimate(minimum=minimum, compute_gap=compute - minimum, recompute=step.recompute * steps,
                    communication=sum(comm.values()), bubble=step.bubble * steps, optimizer=step.optimizer * steps,
                    checkpoint=ckpt, rework=rework, restart=restart, model=model.name, gpus=gpus,
                    accelerator=cluster.accelerator.name, tokens=tokens, plan=plan, step=step, steps=steps,
                    mtbf=mtbf, interval=tau, checkpoint_stall=delta, durable_lag=lag, restart_time=r,
                    strategy=checkpoint.strategy, failures=fname, communication_parts=comm,
                    **({} if slow is None else dict(straggler=step.straggler * steps, stragglers=slow)))


def _estimate_counts(dp_overlap, global_batch, plan, seq_length) -> tuple:
    """:func:`estimate`'s ``dp_overlap`` checked, and its ``global_batch`` (agreeing with the plan's) and
    ``seq_length`` as counts or ``None``; a ``ValueError`` naming the argument otherwise."""
    if isinstance(dp_overlap, bool) or not isinstance(dp_overlap, numbers.Real) or not 0 <= dp_overlap <= 1:
        raise ValueError(f"dp_overlap={_v.show(dp_overlap)} must be a number in [0, 1]")
    if global_batch is not None:
        global_batch = _count("global_batch", global_batch)
        if plan is not None and plan.global_batch != global_batch:
            raise ValueError(f"global_batch={global_batch} disagrees with plan.global_batch={plan.global_batch}")
    return global_batch, None if seq_length is None else _count("seq_length", seq_length)


def _check_estimate_objects(cluster, plan, checkpoint) -> None:
    """The object arguments of :func:`estimate`, each a ``ValueError`` naming it when of the wrong kind."""
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster={_v.show(cluster)} must be an atscale.hardware.Cluster (see atscale.jct.cluster_of)")
    if plan is not None and not isinstance(plan, Plan):
        raise ValueError(f"plan={_v.show(plan)} must be an atscale.plan.Plan or None (best layout)")
    if plan is not None and plan.global_batch is None:
        raise ValueError("plan.global_batch is None: an estimate needs the global batch (sequences per step)")
    if not isinstance(checkpoint, Checkpoint):
        raise ValueError(f"checkpoint={_v.show(checkpoint)} must be an atscale.jct.Checkpoint")


def _failure_terms(failure_free, checkpoint, profile, gpus, delta, lag, restart_time):
    """``(mtbf, interval, (checkpoint, rework, restart))`` for :func:`estimate`: no failures (``profile`` None:
    only the stalls of checkpoints at ``checkpoint.interval``, if any), else the cluster's MTBF, the given or
    the exact optimal interval (an async write must end before the next checkpoint) and
    :func:`reliability_terms`. Seconds."""
    if profile is None:
        tau = checkpoint.interval if checkpoint.interval is not None else math.inf
        return math.inf, tau, (failure_free / tau * delta, 0.0, 0.0)
    mtbf = float(profile.cluster_mtbf(gpus))
    tau = checkpoint.interval if checkpoint.interval is not None else float(rel.exact_optimal_interval(delta, mtbf))
    if checkpoint.strategy == "async":
        tau = max(tau, lag - delta)  # the background write must end before the next checkpoint starts
    return mtbf, tau, reliability_terms(failure_free, tau, delta, mtbf, restart_time, durable_lag=lag)


# --------------------------------------------------------------------------------------
# Sweeps over GPU count
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sweep:
    """Estimates over GPU counts: ``gpus`` and, per term and for ``total``, an array of seconds (NaN where
    infeasible); ``estimates`` keeps each :class:`Estimate`."""

    gpus: np.ndarray
    estimates: tuple

    def term(self, name: str) -> np.ndarray:
        names = TERMS + ("straggler", "total", "reliability", "failure_free")
        if name not in names:
            raise ValueError(f"name={_v.show(name)} must be one of {names}")
        return np.array([getattr(e, name) for e in self.estimates], dtype=float)

    @property
    def total(self) -> np.ndarray:
        return self.term("total")

    def fraction(self, name: str) -> np.ndarray:
        return self.term(name) / self.total

    @property
    def feasible(self) -> np.ndarray:
        return np.array([e.feasible for e in self.estimates])


def sweep(model, tokens, gpu_counts=SWEEP_GPUS, *, node=hardware.DGX_H100, fabric=DEFAULT_FABRIC,
          plan=None, global_batch=DEFAULT_GLOBAL_BATCH, **kwargs) -> Sweep:
    """:func:`estimate` at each GPU count.

    ``global_batch``: sequences per step, a whole number (fixed) or a function ``gpus -> sequences`` (growing,
    e.g. ``lambda n: n``). ``plan``: ``None`` (the best layout at each count), or a function
    ``(gpus, global_batch) -> Plan`` such as :func:`tutorial_plan`. Other keywords go to :func:`estimate`.
    """
    counts = _counts("gpu_counts", gpu_counts)
    if plan is not None and not callable(plan):
        raise ValueError(f"plan={_v.show(plan)} must be None or a function (gpus, global_batch) -> Plan")
    out = []
    for n in counts:
        gb = global_batch(n) if callable(global_batch) else global_batch
        c = cluster_of(n, node, fabric)
        try:
            p = plan(n, gb) if plan is not None else None
        except ValueError as exc:  # e.g. a batch that does not divide over the replicas
            out.append(_infeasible(models.model(model), c, float(tokens), None, str(exc),
                                   kwargs.get("checkpoint", SYNC).strategy, "-"))
            continue
        out.append(estimate(model, tokens, c, p, global_batch=None if p is not None else gb, **kwargs))
    return Sweep(np.array(counts), tuple(out))


def crossover(result: Sweep, against=("communication", "bubble")) -> float | None:
    """The GPU count beyond which reliability loss (checkpoints + rework + restarts) exceeds the parallelism
    loss ``against`` (default: exposed communication plus the pipeline bubble, what the mlsysim tutorial
    counts as communication overhead; add ``"straggler"`` to count the wait for the slowest GPU as a loss of
    parallelism too) at every larger feasible count of the sweep.

    Interpolated log-linearly in the GPU count between the two sweep points around the last crossing (a
    layout change can make the loss dip below reliability at one count and rise above it again; only the
    last crossing is kept). ``None`` if reliability does not exceed it at the largest feasible count; the
    first feasible count if reliability exceeds it everywhere.
    """
    if not isinstance(result, Sweep):
        raise ValueError(f"result={_v.show(result)} must be an atscale.jct.Sweep")
    if isinstance(against, str):
        against = (against,)
    if not isinstance(against, (list, tuple)) or not against:
        raise ValueError(f"against={_v.show(against)} must be a term name or a non-empty sequence of names of {TERMS}")
    against = tuple(against)
    for name in against:
        if name not in TERMS + ("straggler",):
            raise ValueError(f"against={against!r}: {name!r} is not one of {TERMS + ('straggler',)}")
    loss = sum(result.term(name) for name in against)
    diff = result.term("reliability") - loss
    ok = np.isfinite(diff)
    g, d = result.gpus[ok].astype(float), diff[ok]
    if not len(d) or d[-1] < 0:
        return None
    below = np.flatnonzero(d < 0)
    if not len(below):
        return float(g[0])
    i = below[-1] + 1
    x0, x1 = math.log(g[i - 1]), math.log(g[i])
    return float(math.exp(x0 + (x1 - x0) * (-d[i - 1]) / (d[i] - d[i - 1])))


def sync_wall(result: Sweep) -> dict:
    """The GPU count with the shortest predicted job in a sweep, and whether it is a wall.

    Returns ``{"gpus", "total", "wall"}``: ``wall`` is True when the shortest job is at an interior count
    (adding GPUs beyond it lengthens the job: the "sync wall"), False when the job still gets shorter at
    the sweep's largest feasible count.
    """
    if not isinstance(result, Sweep):
        raise ValueError(f"result={_v.show(result)} must be an atscale.jct.Sweep")
    t = result.total
    ok = np.flatnonzero(np.isfinite(t))
    if not len(ok):
        raise ValueError("no feasible point in the sweep")
    i = ok[np.argmin(t[ok])]
    return {"gpus": int(result.gpus[i]), "total": float(t[i]), "wall": bool(i != ok[-1])}


# --------------------------------------------------------------------------------------
# Practical questions
# --------------------------------------------------------------------------------------
def gpus_for_deadline(model, tokens, deadline, *, node=hardware.DGX_H100, fabric=DEFAULT_FABRIC,
                      candidates=None, steps: int = 8, **kwargs):
    """The fewest GPUs whose predicted wall-clock time meets ``deadline`` seconds; returns ``(gpus, Estimate)``,
    or ``(None, None)`` if no count up to 16,384 does. Keywords go to :func:`estimate` (``plan`` is chosen by
    search).

    Without ``candidates`` the search is in two passes: a node times a power of two (8, 16, ..., 16,384 GPUs on
    DGX H100) finds the first power that meets the deadline; then the counts between the previous power and
    that one, in ``steps`` equal parts rounded to whole nodes (1,152, 1,280, ..., 1,920 between 1,024 and
    2,048 for ``steps=8``), are tried from the smallest. The answer is thus within one ``steps``-th of the
    power-of-two bracket; the second pass assumes no count below a failing power of two meets the deadline,
    which holds below the sync wall (:func:`sync_wall`), where more GPUs never lengthen the job. ``steps=1``
    gives the powers of two alone. With ``candidates`` (GPU counts), the smallest that meets the deadline is
    returned.
    """
    deadline = _positive("deadline", deadline, unit="seconds")
    steps = _count("steps", steps)
    if "plan" in kwargs:
        raise ValueError("plan: gpus_for_deadline searches the best layout at each GPU count; for a fixed layout "
                         "call estimate() at the counts it fits")
    g = node.gpus if isinstance(node, hardware.Node) else hardware.node(node).gpus

    def meets(n):
        e = estimate(model, tokens, cluster_of(n, node, fabric), **kwargs)
        return e if e.feasible and e.total <= deadline else None

    if candidates is not None:
        for n in sorted(set(_counts("candidates", candidates))):
            if (e := meets(n)) is not None:
                return n, e
        return None, None
    powers = [g * 2 ** k for k in range(15) if g * 2 ** k <= 16_384]
    for i, hi in enumerate(powers):
        if (e_hi := meets(hi)) is None:
            continue
        if i == 0:
            return hi, e_hi
        lo = powers[i - 1]
        between = sorted({g * round((lo + (hi - lo) * k / steps) / g) for k in range(1, steps)} - {lo, hi})
        for n in between:
            if (e := meets(n)) is not None:
                return n, e
        return hi, e_hi
    return None, None


def scaled_profile(profile: rel.FailureProfile, factor: float) -> rel.FailureProfile:
    """``profile`` with every component's MTTF multiplied by ``factor`` (so the MTBF too)."""
    if not isinstance(profile, rel.FailureProfile):
        raise ValueError(f"profile={_v.show(profile)} must be an atscale.reliability.FailureProfile "
                         f"(e.g. atscale.reliability.TEXTBOOK_PROFILE)")
    factor = _positive("factor", factor)
    if not all(math.isfinite(c.mttf * factor) for c in profile.components):
        raise ValueError(f"factor={factor:g} makes a component's MTTF overflow a float; give a smaller factor")
    return rel.FailureProfile(f"{profile.name} x{factor:g} MTTF",
                              tuple(dataclasses.replace(c, mttf=c.mttf * factor) for c in profile.components),
                              profile.gpus_per_node, profile.source)


@dataclass(frozen=True)
class Sensitivity:
    """Predicted wall-clock seconds with each assumption moved down and up: ``rows`` of
    ``(assumption, low setting, high setting, total at low, total at high)``, largest swing first."""

    base: Estimate
    rows: tuple

    def swing(self) -> dict[str, float]:
        """``{assumption: (max - min) / base total}``, largest first."""
        return {r[0]: (max(r[3], r[4]) - min(r[3], r[4])) / self.base.total for r in self.rows}


def sensitivity(model, tokens, cluster: hardware.Cluster, *, checkpoint: Checkpoint = SYNC,
                failures=rel.TEXTBOOK_PROFILE, restart_time=DEFAULT_RESTART_TIME,
                global_batch: int = DEFAULT_GLOBAL_BATCH, efficiency=(0.9, 1.1), mtbf=(0.5, 2.0),
                restart=(0.5, 2.0), bandwidth=(0.5, 2.0), batch=(0.5, 2.0)) -> Sensitivity:
    """How much each assumption moves the estimate (a one-at-a-time "tornado" analysis).

    The base case takes the best layout for ``global_batch``; every perturbation keeps that layout except
    the global batch's, which is searched again. The factors multiply: the calibrated
    :attr:`atscale.calibration.Calibration.efficiency_max` (capped at 1; passed down as a new
    :class:`atscale.calibration.Calibration`, nothing patched), the
    failure profile's MTTFs, the restart time, the checkpoint write bandwidth and the global batch; the
    data-parallel overlap is moved between 0 and 1. Each factor argument is a pair ``(low, high)`` of
    positive numbers.
    """
    efficiency, mtbf, restart, bandwidth, batch = (_factor_pair(n, v) for n, v in (
        ("efficiency", efficiency), ("mtbf", mtbf), ("restart", restart), ("bandwidth", bandwidth), ("batch", batch)))
    profile = _profile(failures)
    global_batch = _v.count("global_batch", global_batch, unit="sequences")
    base = estimate(model, tokens, cluster, checkpoint=checkpoint, failures=profile, restart_time=restart_time,
                    global_batch=global_batch)
    if not base.feasible:
        raise ValueError(f"the base case is infeasible: {base.reason}")
    plan = base.plan
    r0 = _restart(restart_time)

    def run(**kw):
        args = dict(checkpoint=checkpoint, failures=profile, restart_time=r0)
        args.update(kw)
        p = args.pop("plan", plan)
        return estimate(model, tokens, cluster, p, **args).total

    rows = []
    lo_hi = []
    for f in efficiency:
        lo_hi.append(run(calibration=CALIBRATION.scaled(f)))
    rows.append(("compute efficiency (calibrated E_max)", f"x{efficiency[0]:g}", f"x{efficiency[1]:g}", *lo_hi))
    if profile is not None:
        rows.append(("MTBF (failure profile)", f"x{mtbf[0]:g}", f"x{mtbf[1]:g}",
                     *(run(failures=scaled_profile(profile, f)) for f in mtbf)))
        rows.append(("restart time", f"x{restart[0]:g}", f"x{restart[1]:g}", *(run(restart_time=r0 * f) for f in restart)))
    rows.append(("checkpoint write bandwidth", f"x{bandwidth[0]:g}", f"x{bandwidth[1]:g}",
                 *(run(checkpoint=dataclasses.replace(checkpoint, write_bandwidth=checkpoint.write_bandwidth * f))
                   for f in bandwidth)))
    batches = [max(1, int(round(global_batch * f))) for f in batch]
    rows.append(("global batch", f"{batches[0]:,} seq.", f"{batches[1]:,} seq.",
                 *(run(plan=None, global_batch=b) for b in batches)))
    rows.append(("data-parallel overlap", "none (0)", "full (1)",
                 run(plan=dataclasses.replace(plan), dp_overlap=0.0), run(dp_overlap=1.0)))
    rows.sort(key=lambda r: -abs(r[4] - r[3]) if np.isfinite(r[3]) and np.isfinite(r[4]) else 0)
    return Sensitivity(base, tuple(rows))
