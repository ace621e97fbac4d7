"""Stragglers: a synchronous step waits for the slowest of its N workers.

Every training step of a synchronous job ends at a collective (the data-parallel gradient reduction; inside it,
every tensor-parallel all-reduce and every pipeline send) that no GPU leaves before the last one arrives. If the
GPUs run at slightly different speeds, the step lasts as long as the slowest GPU's work, and the expected
maximum of N samples grows with N. Two published kinds of variability, two terms:

**Jitter** (every GPU): the time a GPU takes for the same work varies around the fleet's median with a relative
standard deviation ``σ``. Sinha et al. (2022, "Not All GPUs Are Created Equal", arXiv 2208.11035v3; first at SC'22), measuring more than 90 %
of the GPUs of five large clusters, found the same kernels' performance to vary by 8 % on average between GPUs of
one model and SKU (power management and manufacturing variability). Read as the range from the slowest to the
fastest of the ~27,600 GPUs of the largest cluster studied (Summit) and modelled as a normal spread, the range
is ``2 σ E[max of 27,648]``, hence ``σ = 0.08 / (2 x 4.09) ≈ 0.98 %`` (:data:`JITTER`). The expected slowest of
N is then ``σ E[max of N standard normals]`` slower than the median (:func:`expected_max_normal`, about
``σ sqrt(2 ln N)`` for large N): it grows with N, but only as the square root of a logarithm.

**Slow hosts** (rare): a host, with a small probability ``p``, runs ``s`` slower (a throttled GPU, a faulty
cooling fan, a noisy neighbour process). Jiang et al. (2024, "MegaScale", NSDI, sec. 6.3) found hosts taking
about 10 % longer for the same forward pass (:data:`SLOW_HOST_FACTOR` ``s = 0.10``) and, after removing them,
about 0.7 points of MFU more. The section does not give the job's size; read at the paper's headline scale
(12,288 GPUs, 1,536 hosts of 8, at 55.2 % MFU) as the expected cost ``s (1 - (1 - p)^H)`` of the slow hosts,
it gives ``p ≈ 8.8e-5`` per host (:data:`SLOW_HOST_PROBABILITY`). The probability that any of ``H`` hosts is
slow, ``1 - (1 - p)^H`` (:func:`any_slow_probability`), grows almost linearly in ``H`` while ``pH`` is small:
the term that grows with the job.

The two add (:func:`straggler_fraction`; exact to first order when both are small, an upper bound otherwise):
the expected step is ``1 + σ E[max_N] + s (1 - (1 - p)^H)`` times the time a GPU spends computing. The
communication itself is not slowed (a slower clock does not slow the wire). What this leaves out: the mean
slowdown every GPU shares (Llama 3's 1-2 % diurnal throughput variation with the data centre's temperature,
Llama Team 2024, sec. 3.3.4, moves all GPUs together and so costs no waiting), fail-slows that last minutes
to hours, handled today as failures (Wu et al. 2024, "FALCON"), and stragglers that are not slow hardware
(Lin et al. 2025, "Understanding Stragglers in Large Model Training Using What-if Analysis", find several
causes); unequal work between pipeline stages the step-time model charges through its stage balance.

A model of variability is a :class:`Stragglers`; :data:`STRAGGLERS` holds the published readings above.
:func:`atscale.parallelism.step_time` charges it as the ``straggler`` part of the step when given
``stragglers=True`` (or a :class:`Stragglers`); the default is off.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import _validate as _v

__all__ = ["JITTER", "SLOW_HOST_FACTOR", "SLOW_HOST_PROBABILITY", "SINHA_VARIATION", "SINHA_GPUS",
           "MEGASCALE_MFU_GAIN", "MEGASCALE_MFU", "MEGASCALE_GPUS", "expected_max_normal", "any_slow_probability",
           "straggler_fraction", "Stragglers", "STRAGGLERS"]

SINHA_VARIATION = 0.08
"""Average performance variation between GPUs of one model and SKU in a cluster (8 %, max 22 %), Sinha et al.
(2022), abstract of the arXiv revision 2208.11035v3 (five clusters); read here as the range from the slowest to
the fastest GPU. The abstract in the SC'22 proceedings, over four of the clusters, gives 32 % (max 72 %): with
that figure ``σ`` would be four times as large. The papers do not say the figure is a range; it is our reading."""

SINHA_GPUS = 27_648
"""GPUs of Summit (4,608 nodes of 6 V100), the largest of the clusters Sinha et al. (2022) measured."""

JITTER = 0.0098
"""``σ``, the relative standard deviation of a GPU's time for the same work: ``SINHA_VARIATION / (2 E[max of
SINHA_GPUS])`` = 0.08 / (2 x 4.09) (a test recomputes it)."""

SLOW_HOST_FACTOR = 0.10
"""``s``: a slow host takes about 10 % longer for the same forward pass (Jiang et al. 2024, MegaScale, sec. 6.3)."""

MEGASCALE_MFU_GAIN = 0.007
MEGASCALE_MFU = 0.552
MEGASCALE_GPUS = 12_288
"""MegaScale (Jiang et al. 2024): removing the slow hosts gained about 0.7 points of MFU (sec. 6.3); the paper's
headline run, 55.2 % MFU on 12,288 GPUs (abstract, Table 2), is the scale assumed for that observation."""

SLOW_HOST_PROBABILITY = 8.8e-5
"""``p``, the probability that a host is slow: ``1 - (1 - g/s)^(1/H)`` with ``g = 0.007 / 0.552`` the relative
gain and ``H = 12,288 / 8`` hosts (a test recomputes it)."""

_GRID = np.linspace(-9.0, 9.0, 3601)  # x of the integral; beyond |x| = 9 the normal tail is < 1e-18


@functools.lru_cache(maxsize=1)
def _log_cdf() -> np.ndarray:
    """log Φ(x) on :data:`_GRID` (computed once)."""
    return np.log(np.array([0.5 * math.erfc(-x / math.sqrt(2.0)) for x in _GRID]))


def expected_max_normal(n):
    """Expected maximum of ``n`` independent standard normal samples (dimensionless; vectorised over ``n``).

    ``E[M_n] = ∫_0^∞ (1 - Φ(x)^n) dx - ∫_{-∞}^0 Φ(x)^n dx = 9 - ∫_{-9}^9 Φ(x)^n dx`` (to 1e-18), integrated
    numerically (trapezoid rule, step 0.005; error below 1e-6 for ``n`` up to 1e9). The order-statistics form follows from
    ``P(M_n <= x) = Φ(x)^n`` (David & Nagaraja 2003, "Order Statistics", sec. 3.1 and 4.5). ``E[M_1] = 0``,
    ``E[M_2] = 1/sqrt(π)``; for large ``n`` it approaches ``sqrt(2 ln n)`` from below (the classic
    approximation overstates it: 4.33 against 3.85 at ``n = 10,000``). ``n``: a count >= 1 or an array of
    counts. Raises ``ValueError`` naming ``n`` otherwise.
    """
    n = _v.count("n", n, scalar=False)
    arr = np.atleast_1d(np.asarray(n, dtype=float))
    values, inverse = np.unique(arr, return_inverse=True)
    out = np.empty(len(values))
    log_cdf, dx = _log_cdf(), _GRID[1] - _GRID[0]
    for start in range(0, len(values), 256):  # bounded memory for long arrays of distinct counts
        power = np.exp(values[start:start + 256, None] * log_cdf)  # Φ(x)^n, smooth: the trapezoid rule is O(dx^2)
        out[start:start + 256] = _GRID[-1] - np.trapezoid(power, dx=dx, axis=1)  # ∫_0^9 1 dx - ∫_{-9}^9 Φ^n dx
    out = np.where(values == 1, 0.0, np.maximum(out, 0.0))[inverse]
    return float(out[0]) if np.ndim(n) == 0 else out.reshape(np.shape(n))


def any_slow_probability(hosts, probability):
    """Probability that at least one of ``hosts`` hosts is slow when each is, independently, with
    ``probability``: ``1 - (1 - p)^H`` (computed as ``-expm1(H log1p(-p))``, exact for small ``p``). About ``pH``
    while ``pH`` is small: it grows almost linearly with the job. ``hosts`` a count >= 1 (or an array),
    ``probability`` in [0, 1]; dimensionless. Raises ``ValueError`` naming the argument otherwise.
    Source: the slow hosts of Jiang et al. (2024, MegaScale, sec. 6.3)."""
    h = _v.count("hosts", hosts, scalar=False)
    p = _v.number("probability", probability, low=0, high=1)
    h, p = _v.broadcast(hosts=np.asarray(h, dtype=float), probability=p)
    with np.errstate(divide="ignore"):
        out = -np.expm1(h * np.log1p(-p))
    return float(out) if np.ndim(out) == 0 else out


def straggler_fraction(gpus, gpus_per_host=8, *, jitter=JITTER, slow_probability=SLOW_HOST_PROBABILITY,
                       slow_factor=SLOW_HOST_FACTOR):
    """Expected slowdown of a synchronous step on ``gpus`` GPUs, as a fraction of a GPU's compute time.

    ``σ E[max of N] + s (1 - (1 - p)^H)`` with ``N = gpus``, ``H = ceil(gpus / gpus_per_host)`` hosts, ``σ =
    jitter`` (:func:`expected_max_normal`), ``p = slow_probability`` and ``s = slow_factor``
    (:func:`any_slow_probability`). Zero for one GPU (and for ``σ = 0`` or ``p = 0`` on its term); non-decreasing
    in ``gpus``. Vectorised over ``gpus`` (and the parameters); dimensionless. Sources and the parameters'
    readings: the module docstring (Sinha et al. 2022; Jiang et al. 2024, sec. 6.3). Raises ``ValueError``
    naming the argument for bad input.
    """
    n = _v.count("gpus", gpus, scalar=False)
    g = _v.count("gpus_per_host", gpus_per_host, scalar=False)
    sigma = _v.number("jitter", jitter, low=0, high=1)
    p = _v.number("slow_probability", slow_probability, low=0, high=1)
    s = _v.number("slow_factor", slow_factor, low=0, high=10)
    n, g, sigma, p, s = _v.broadcast(gpus=n, gpus_per_host=g, jitter=sigma, slow_probability=p, slow_factor=s)
    hosts = np.ceil(n / g).astype(np.int64)
    # One GPU waits for no one: its own host's slowness is its speed, not a straggler.
    out = np.where(n > 1, sigma * expected_max_normal(n) + s * any_slow_probability(hosts, p), 0.0)
    return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class Stragglers:
    """A model of per-GPU variability: jitter ``σ`` on every GPU, and hosts slow by ``slow_factor`` with
    ``slow_probability`` each (see the module docstring). :meth:`fraction` is the expected slowdown of a step
    over the GPUs' compute time. The defaults are the published readings (:data:`STRAGGLERS`)."""

    jitter: float = JITTER
    slow_probability: float = SLOW_HOST_PROBABILITY
    slow_factor: float = SLOW_HOST_FACTOR
    name: str = "published (Sinha et al. 2022; MegaScale 2024)"

    def __post_init__(self):
        _v.number("jitter", self.jitter, low=0, high=1, scalar=True)
        _v.number("slow_probability", self.slow_probability, low=0, high=1, scalar=True)
        _v.number("slow_factor", self.slow_factor, low=0, high=10, scalar=True)
        if not isinstance(self.name, str):
            raise ValueError(f"name={_v.show(self.name)} must be a string")

    def fraction(self, gpus, gpus_per_host=8):
        """Expected slowdown of a step on ``gpus`` GPUs over their compute time (:func:`straggler_fraction`)."""
        return straggler_fraction(gpus, gpus_per_host, jitter=self.jitter, slow_probability=self.slow_probability,
                                  slow_factor=self.slow_factor)


STRAGGLERS = Stragglers()
"""The published readings: ``σ`` = :data:`JITTER`, ``p`` = :data:`SLOW_HOST_PROBABILITY`, ``s`` =
:data:`SLOW_HOST_FACTOR`."""


@functools.lru_cache(maxsize=256)
def _fraction_of(model: Stragglers, gpus: int, gpus_per_host: int) -> float:
    """:meth:`Stragglers.fraction` of one cluster, remembered (the step time's fast path)."""
    return model.fraction(gpus, gpus_per_host)


def _stragglers_arg(stragglers):
    """The :class:`Stragglers` a ``stragglers=`` keyword means: ``None`` or ``False`` off (returns ``None``),
    ``True`` the published :data:`STRAGGLERS`, or a :class:`Stragglers`. ``ValueError`` naming ``stragglers``
    for anything else."""
    if stragglers is None or stragglers is False:
        return None
    if stragglers is True:
        return STRAGGLERS
    if isinstance(stragglers, Stragglers):
        return stragglers
    raise ValueError(f"stragglers={_v.show(stragglers)} must be None or False (off), True (the published "
                     "readings) or an atscale.stragglers.Stragglers")
