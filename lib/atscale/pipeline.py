"""Pipeline schedules: which pass each stage runs when, and what the order costs in idle time and memory.

A pipeline of ``p`` stages runs ``m`` micro-batches per optimizer step. Every stage runs each micro-batch's
forward pass ``F`` (``t_f`` seconds) and its backward pass. The backward is two computations: the gradient
with respect to the stage's *input* ``B`` (``t_b``), which the previous stage is waiting for, and the
gradient with respect to the stage's *weights* ``W`` (``t_w``), which nobody waits for until the optimizer
step. The classic schedules run them as one pass of ``t_b + t_w``; the zero-bubble schedules split them and
move the ``W`` passes into the gaps that the pipeline's fill and drain would otherwise leave idle
(Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv:2401.10241, sec. 2).

The schedules (:data:`atscale.plan.SCHEDULES`):

``gpipe``
    all forwards, then all backwards (Huang et al. 2019);
``1f1b``
    ``p - i - 1`` warm-up forwards on stage ``i``, then one forward, one backward (PipeDream-Flush;
    Narayanan et al. 2021, sec. 2.2.1);
``interleaved``
    Megatron-LM's 1F1B over ``v`` chunks of layers per GPU (Narayanan et al. 2021, sec. 2.2.2);
``zb-h1``
    1F1B with the backward split, each stage holding back ``i`` of its ``W`` passes to fill the drain: the
    same peak activation memory as 1F1B, a third of its bubble when the three passes take equally long
    (Qi et al. 2024, sec. 2.1);
``zb-h2``
    ``2 (p - i - 1)`` warm-up forwards fill the gap before the first backward, and the ``W`` passes fill
    the drain: no bubble at about twice 1F1B's activations (Qi et al. 2024, sec. 2.2);
``dualpipe``
    DeepSeek's bidirectional pipeline: half of the micro-batches enter at the first stage, half at the last,
    every GPU holds two stages (one per direction), and in the steady state a forward of one direction is
    paired with a backward of the other (DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437,
    sec. 3.2.1, Fig. 5 and Table 2; its order as the reference implementation github.com/deepseek-ai/DualPipe
    runs it);
``dualpipev``
    DualPipe "cut in half" (DeepSeek-AI's DualPipe repository, README and ``DualPipeV``; the procedure is Sea AI
    Lab's): the model is split into ``2p`` half-size stages and GPU ``i`` holds stages ``i`` and ``2p - 1 - i``, so
    every micro-batch goes down the pipeline and back up it, a "V"; one copy of the weights, DualPipe's
    order of passes on half the GPUs;
``zb-v``
    the zero-bubble V schedule (Qi et al. 2024, arXiv version, its ZB-V section; Qi et al. 2024b, "Pipeline
    Parallelism with Controllable Memory", NeurIPS 2024, arXiv:2405.15362): the same V placement, its order found by the
    authors' greedy scheduler for the measured pass times; zero bubble at equal pass times with 1F1B's peak
    activations. The library gives its closed forms only (it does not simulate the greedy scheduler).

**Notation.** Here ``t_b`` is always the input-gradient part and ``t_w`` the weight-gradient part, as in Qi et
al. In DeepSeek-AI's Table 2, ``B`` is the *full* backward (``t_b + t_w``) and ``W`` the weight part: their
1F1B row ``(PP - 1)(F + B)`` is ``(p - 1)(t_f + t_b + t_w)``, and their ZB1P row ``(PP - 1)(F + B - 2W)`` is
``(p - 1)(t_f + t_b - t_w)``, ZB-H1's bubble in Qi et al.'s notation: the two papers agree once ``B`` is read
right.

**Bubble.** The idle time of a stage in one step, in seconds: the step's period minus the stage's work
``m (t_f + t_b + t_w)``. The period is the longest time any stage spends between its first pass and its last
(:attr:`Timeline.period`): with each stage stepping its optimizer as soon as its own passes are done, the next
step overlaps the ragged start and end of this one (Qi et al. 2024, sec. 4, "optimizer post-validation"); for
GPipe, 1F1B and the interleaved schedule the first stage starts first and finishes last, so the period is the
whole step. :func:`bubble_time` gives the closed forms, :func:`pipeline_timeline` simulates the schedules,
and the tests check one against the other.

Communication is free in both (the sends between stages, and the expert-parallel all-to-all that DualPipe was
designed to hide behind computation, are priced by :mod:`atscale.parallelism`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _validate as _v
from .plan import SCHEDULE_NAMES, SCHEDULES  # noqa: F401  (SCHEDULE_NAMES: how the book writes each name)
from .tables import Table

__all__ = ["SPLIT_BACKWARD", "SCHEDULE_NAMES", "MAX_SIMULATED_PASSES", "bubble_time", "activation_in_flight",
           "weight_copies", "Timeline", "pipeline_timeline", "schedule_table"]

SPLIT_BACKWARD = ("zb-h1", "zb-h2", "dualpipe", "dualpipev", "zb-v")
"""The schedules that split the backward into an input-gradient pass ``B`` and a weight-gradient pass ``W``."""


MAX_SIMULATED_PASSES = 100_000
"""The largest schedule :func:`pipeline_timeline` simulates (forward, backward and weight-gradient passes of all
stages): about a second of pure-Python simulation; larger schedules are refused, not hung."""

_CODE = {name: i for i, name in enumerate(SCHEDULES)}
_GPIPE, _1F1B, _INTERLEAVED, _ZB_H1, _ZB_H2, _DUALPIPE, _DUALPIPEV, _ZB_V = (_CODE[n] for n in SCHEDULES)

V_SHAPED = ("dualpipev", "zb-v")
"""The schedules that cut the model into ``2p`` half-size stages, GPU ``i`` holding stages ``i`` and ``2p - 1 - i``:
each micro-batch crosses every GPU twice, so the pipeline sends twice as many activations as 1F1B's (Qi et al.
2024, arXiv version, its ZB-V section)."""

NOT_SIMULATED = ("zb-v",)
"""Schedules :func:`pipeline_timeline` does not simulate: ZB-V's order comes from its authors' greedy scheduler,
which depends on the measured pass times; its closed forms stand alone."""


# --------------------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------------------
def _schedule_codes(schedule) -> np.ndarray:
    """``schedule`` (a name, an array of names, or their integer codes: indices into :data:`SCHEDULES`) as an
    integer array of codes; a ``ValueError`` naming what is valid otherwise."""
    valid = f"one of {SCHEDULES} (or, as a NumPy integer, its index 0-{len(SCHEDULES) - 1})"
    if isinstance(schedule, str):
        if schedule in _CODE:
            return np.asarray(_CODE[schedule])
        raise ValueError(f"schedule={schedule!r} must be {valid}")
    if schedule is None or isinstance(schedule, (bool, int, float, np.bool_)):
        raise ValueError(f"schedule={_v.show(schedule)} must be {valid}")
    try:
        arr = np.asarray(schedule)
    except Exception:  # a ragged sequence
        raise ValueError(f"schedule={_v.show(schedule)} must be {valid}") from None
    if arr.size == 0:
        raise ValueError(f"schedule={_v.show(schedule)} must be {valid}, not empty")
    if arr.dtype.kind in "iu":
        if np.any((arr < 0) | (arr >= len(SCHEDULES))):
            raise ValueError(f"schedule={_v.show(schedule)} must be {valid}")
        return arr.astype(np.int64)
    if arr.dtype.kind in "UO":
        names = arr.astype(object).ravel()
        if all(isinstance(x, str) and x in _CODE for x in names):
            return np.array([_CODE[x] for x in names], dtype=np.int64).reshape(arr.shape)
    raise ValueError(f"schedule={_v.show(schedule)} must be {valid}")


def _first_bad(mask, *arrays) -> tuple:
    """The values of ``arrays`` at the first place where ``mask`` holds (for an error message)."""
    i = int(np.flatnonzero(np.ravel(mask))[0])
    return tuple(np.ravel(np.broadcast_to(a, np.shape(mask)))[i] for a in arrays)


def _check_layouts(code, p, m, v, *, closed_form: bool) -> None:
    """The combinations no schedule runs (``ValueError``): chunks without the interleaved schedule, DualPipe
    without an even pipeline or enough micro-batches; with ``closed_form``, also the zero-bubble schedules with
    fewer micro-batches than their closed form assumes (:func:`bubble_time`)."""
    rules = [(code != _INTERLEAVED) & (v > 1),
             "virtual_stages={2} > 1 needs schedule='interleaved' (got schedule={0!r})"]
    rules += [(code == _DUALPIPE) & ((p % 2 != 0) | (m % 2 != 0) | (m < 2 * p)),
              "schedule='dualpipe' needs an even pp and an even micro_batches >= 2 pp "
              "(got pp={1}, micro_batches={3})"]
    rules += [(code == _DUALPIPEV) & (m < 2 * p),
              "schedule='dualpipev' needs micro_batches >= 2 pp (got pp={1}, micro_batches={3})"]
    if closed_form:
        rules += [(code == _ZB_H1) & (m < p), "the closed form of schedule='zb-h1' needs micro_batches >= pp "
                  "(got pp={1}, micro_batches={3}); pipeline_timeline simulates fewer"]
        rules += [(code == _ZB_H2) & (m < 2 * p - 1), "the closed form of schedule='zb-h2' needs micro_batches >= "
                  "2 pp - 1 (got pp={1}, micro_batches={3}); pipeline_timeline simulates fewer"]
        rules += [(code == _ZB_V) & (m < 2 * p), "the closed form of schedule='zb-v' needs micro_batches >= 2 pp, "
                  "one per half-size stage (got pp={1}, micro_batches={3})"]
    for mask, text in zip(rules[::2], rules[1::2]):
        if np.any(mask):
            c, pp, vv, mm = _first_bad(mask, code, p, v, m)
            raise ValueError(text.format(SCHEDULES[int(c)], int(pp), int(vv), int(mm)))


def _layout_args(schedule, pp, micro_batches, virtual_stages, *, closed_form: bool, **times):
    """The checked and broadcast ``(code, p, m, v, *times)`` (``times``: checked arrays by name)."""
    code = _schedule_codes(schedule)
    p, m, v = (_v.count(name, value, scalar=False) for name, value in
               (("pp", pp), ("micro_batches", micro_batches), ("virtual_stages", virtual_stages)))
    arrays = _v.broadcast(schedule=code, pp=p, micro_batches=m, virtual_stages=v, **times)
    _check_layouts(*arrays[:4], closed_form=closed_form)
    return arrays


def _bubble_time(code, p, m, v, t_f, t_b, t_w, xp=np):
    """:func:`bubble_time` without any checking, for callers that have checked their layouts (the step-time
    model): ``code`` the schedule's index in :data:`SCHEDULES`; ``xp`` anything with NumPy's ``where``,
    ``maximum`` and ``minimum`` (NumPy for arrays, plain ``max``/``min`` for Python numbers). Outside the
    closed forms' ranges (fewer micro-batches than :func:`bubble_time` accepts) it returns their formula, a
    lower bound on the simulated bubble."""
    full = (p - 1) * (t_f + t_b + t_w)
    zb_h1 = (p - 1) * (t_f + t_b - xp.minimum(t_w, t_f))
    zb_h2 = (p - 1) * xp.maximum(xp.maximum(t_f + t_b - 2 * t_w, t_b - t_f), 0.0)
    dualpipe = xp.maximum(p / 2 - 1, 0.0) * (t_f + 2 * t_b - xp.minimum(t_w, t_f))
    dualpipev = xp.maximum(p - 1, 0.0) / 2 * (t_f + 2 * t_b - xp.minimum(t_w, t_f))
    zb_v = xp.maximum(2 * p - 1, 0.0) / 2 * xp.maximum(xp.maximum(t_f + t_b - 2 * t_w, t_b - t_f), 0.0)
    return xp.where(code == _INTERLEAVED, full / v,
                    xp.where(code == _ZB_H1, zb_h1,
                             xp.where(code == _ZB_H2, zb_h2,
                                      xp.where(code == _DUALPIPE, dualpipe,
                                               xp.where(code == _DUALPIPEV, dualpipev,
                                                        xp.where(code == _ZB_V, zb_v, full))))))


def bubble_time(schedule, pp, micro_batches, t_f, t_b, t_w, virtual_stages=1):
    """Idle seconds of a pipeline stage per optimizer step: the step's period minus the stage's work.

    ``t_f``: one micro-batch's forward on one stage (s); ``t_b``: its input-gradient backward (s); ``t_w``: its
    weight-gradient backward (s). Schedules that do not split the backward run ``t_b + t_w`` as one pass.
    ``schedule`` is a name of :data:`atscale.plan.SCHEDULES`, an array of names or an array of their indices
    (NumPy integers); every argument broadcasts. With ``p`` stages, ``m`` micro-batches, ``v`` chunks:

    * GPipe, 1F1B: ``(p - 1)(t_f + t_b + t_w)`` (Huang et al. 2019; Narayanan et al. 2021, sec. 2.2.1);
    * interleaved: ``(p - 1)(t_f + t_b + t_w) / v`` (Narayanan et al. 2021, sec. 2.2.2);
    * ZB-H1: ``(p - 1)(t_f + t_b - t_w)`` (Qi et al. 2024, sec. 2.1 and Fig. 3; their authors' own schedule
      analysis asserts the same), valid while ``t_w <= t_f``; beyond, the ``W`` passes cannot all hide in the
      drain and the schedule measures ``(p - 1)(t_f + t_b - min(t_w, t_f))``, which is what is returned.
      Needs ``m >= p``;
    * ZB-H2: ``(p - 1)(t_f + t_b - 2 t_w)`` (Qi et al. 2024, sec. 2.2 and Fig. 3), zero when the three passes
      take equally long. A bubble cannot be negative, and with a backward slower than the forward the extra
      warm-up forwards no longer cover the first backward's wait: the schedule measures
      ``(p - 1) max(t_f + t_b - 2 t_w, t_b - t_f, 0)``, returned here. Needs ``m >= 2p - 1``;
    * DualPipe: ``(p/2 - 1)(F&B + B - 3W)`` (DeepSeek-AI 2024, Table 2, with ``B`` the *full* backward
      ``t_b + t_w`` and ``F&B`` a forward and a full backward run as one overlapped pair, taken here as their sum
      ``t_f + t_b + t_w``: the overlap hides communication, not computation): ``(p/2 - 1)(t_f + 2 t_b - t_w)``,
      with ``t_w`` capped at ``t_f`` as for ZB-H1. It does not grow with ``m``. The simulation reproduces it
      exactly when ``t_b = t_f`` (as in the report's Fig. 5); when they differ it measures a slightly different
      bubble (the tests bound the gap). Needs an even ``p``, and an even ``m >= 2p`` (the reference
      implementation's condition; the report states only the evenness).
    * DualPipeV: the repository's row, ``(PP/2 - 1)(F&B + B - 3W)`` with ``PP = 2p`` half-size stages on the ``p``
      GPUs (DeepSeek-AI, DualPipe README, "based on the same number of PP stages"), each pass of a half stage
      taking half of ``t_f``, ``t_b``, ``t_w``: ``(p - 1)(t_f + 2 t_b - t_w) / 2``, ``t_w`` capped at ``t_f`` as
      for DualPipe. The simulation reproduces it when ``t_b = t_f``. Needs ``m >= 2p`` (the reference
      implementation's assertion);
    * ZB-V: zero at equal pass times (Qi et al. 2024, arXiv version, its ZB-V section and the authors' comparison table:
      bubble rate 0 at ``T_F = T_B = T_W``). The authors give no closed form for other pass times; the library
      takes ZB-H2's over the V's ``2p`` half-size stages, ``(2p - 1)/2 max(t_f + t_b - 2 t_w, t_b - t_f, 0)``,
      which is zero wherever ZB-H2's is (an assumption, not the source's formula). Needs ``m >= 2p``.

    Returns seconds (a float for scalar inputs). ``ValueError`` for a bad name, count or time, chunks without
    the interleaved schedule, or too few micro-batches for a closed form (:func:`pipeline_timeline` simulates
    any number). Divide by ``m (t_f + t_b + t_w)`` for the bubble over useful time.
    """
    times = dict(t_f=_v.positive("t_f", t_f, unit="s"), t_b=_v.positive("t_b", t_b, unit="s"),
                 t_w=_v.nonnegative("t_w", t_w, unit="s"))
    code, p, m, v, tf, tb, tw = _layout_args(schedule, pp, micro_batches, virtual_stages, closed_form=True, **times)
    with np.errstate(over="ignore", invalid="ignore"):
        result = _bubble_time(code, p.astype(float), m, v, tf, tb, tw)
    if not np.all(np.isfinite(result)):
        raise ValueError(f"pp={_v.show(pp)}, t_f={_v.show(t_f)}, t_b={_v.show(t_b)}, t_w={_v.show(t_w)}: the "
                         "bubble overflows a float")
    return float(result) if np.ndim(result) == 0 else result


def _flat_in_flight(code, p, xp=np):
    """Micro-batches in flight on *every* stage of the schedules that hold the same on each (ZB-H2 ``2p - 1``,
    DualPipe ``p + 1``, DualPipeV ``p + 1/2``, ZB-V ``p``; :func:`activation_in_flight`), 0 for the others, whose
    count falls from the first stage to the last. Unchecked (see :func:`_bubble_time` for ``code`` and ``xp``);
    the step-time model's memory reads it too."""
    return xp.where(code == _ZB_H2, 2 * p - 1.0,
                    xp.where(code == _DUALPIPE, p + 1.0,
                             xp.where(code == _DUALPIPEV, p + 0.5, xp.where(code == _ZB_V, p + 0.0, 0.0))))


def _activation_in_flight(code, p, m, v, xp=np):
    """:func:`activation_in_flight` without any checking (see :func:`_bubble_time` for ``code`` and ``xp``)."""
    flat = _flat_in_flight(code, p, xp)
    return xp.where(code == _GPIPE, m + 0.0,
                    xp.where(code == _INTERLEAVED, xp.minimum(p + (p - 1) / v, m),
                             xp.minimum(xp.where(flat > 0, flat, p), m) + 0.0))


def activation_in_flight(schedule, pp, micro_batches, virtual_stages=1):
    """Micro-batches of a stage's activations that the first stage holds at its peak (dimensionless: multiply by
    one micro-batch's activations of one stage, ``1/p`` of the model's layers, for bytes).

    A micro-batch's activations are held from its forward until its last backward pass on the stage (its ``W``
    pass where the backward is split: the weight gradient needs the layer inputs). Never more than ``m``.

    * GPipe: ``m`` (Huang et al. 2019);
    * 1F1B: ``p`` (Narayanan et al. 2021, sec. 2.2.1);
    * interleaved: ``p + (p - 1)/v`` (Korthikanti et al. 2022, sec. 4.2.3);
    * ZB-H1: ``p``, the same as 1F1B, on every stage (Qi et al. 2024, sec. 2.1: at most 1F1B's ``p M_B``);
    * ZB-H2: ``2p - 1``, on every stage (Qi et al. 2024, sec. 2.2: ``(2p - 1) M_B``);
    * DualPipe: ``p + 1`` whatever ``m`` (DeepSeek-AI 2024, Table 2, "PP + 1"; sec. 3.2.1: "only increasing the
      peak activation memory by 1/PP times"), counting both directions' stages of a GPU;
    * DualPipeV: ``p + 1/2``: the repository's ``PP + 1`` half-size stages (``PP = 2p``) on each GPU;
    * ZB-V: ``p``, 1F1B's (Qi et al. 2024, arXiv version, its ZB-V section: the same peak activation memory as 1F1B,
      balanced over the GPUs).

    Counting to the ``W`` pass is an upper bound: the backward's ``B`` pass frees most of a micro-batch's
    activations, and its ``W`` pass needs only the layer inputs and output gradients (Qi et al. 2024, Table 1).
    Vectorised like :func:`bubble_time`; dimensionless; ``ValueError`` for bad input.
    """
    code, p, m, v = _layout_args(schedule, pp, micro_batches, virtual_stages, closed_form=False)
    result = _activation_in_flight(code, p.astype(float), m.astype(float), v.astype(float))
    return float(result) if np.ndim(result) == 0 else result


def weight_copies(schedule):
    """Copies of a stage's parameters (and gradients and optimizer state) each GPU holds (dimensionless): 2 for
    DualPipe, whose GPU ``i`` runs stage ``i`` for the micro-batches entering at the first stage and stage
    ``p - 1 - i`` for those entering at the last (DeepSeek-AI 2024, Table 2, "2x"; sec. 3.2.1: cheap for
    DeepSeek-V3 because its experts are spread over a large expert-parallel group), 1 for every other schedule.
    DualPipeV and ZB-V hold two half-size stages per GPU, ``1/p`` of the model as 1F1B does: one copy (the
    DualPipe README's "2x" for DualPipeV counts per device at the same number of stages, on half the GPUs).
    ``schedule``: a name, an array of names, or their indices (NumPy integers); an ``int`` or an array back."""
    code = _schedule_codes(schedule)
    result = np.where(code == _DUALPIPE, 2, 1)
    return int(result) if np.ndim(result) == 0 else result


# --------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timeline:
    """Every pass of one simulated pipelined step (:func:`pipeline_timeline`), as arrays: ``stage`` (the GPU's
    row), ``micro_batch``, ``chunk`` (the model chunk on that GPU: the interleaved schedule's ``0..v-1``, or
    DualPipe's direction), ``kind`` (``"F"``, ``"B"`` or ``"W"``; ``"B"`` is the whole backward where the
    schedule does not split off ``W``), ``start`` and ``end`` (in units of one micro-batch's forward time on a
    whole stage), and ``direction`` (0: the micro-batch entered at the first stage; 1: at the last, DualPipe's
    second half). ``weight_ratio`` is ``t_w / t_f`` where the backward is split, else 0."""

    stage: np.ndarray
    micro_batch: np.ndarray
    chunk: np.ndarray
    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray
    pp: int
    micro_batches: int
    virtual_stages: int
    schedule: str
    backward_ratio: float
    weight_ratio: float = 0.0
    direction: np.ndarray | None = None

    @property
    def makespan(self) -> float:
        """From the first pass's start (0) to the last pass's end (units of ``t_f``)."""
        return float(self.end.max())

    @property
    def ideal(self) -> float:
        """One stage's work: ``m (1 + backward_ratio)`` (units of ``t_f``)."""
        return self.micro_batches * (1 + self.backward_ratio)

    @property
    def period(self) -> float:
        """The longest time a stage spends from its first pass to its last (units of ``t_f``): the time from one
        step to the next when no stage waits for the others at the optimizer step (Qi et al. 2024, sec. 4).
        Equal to :attr:`makespan` for GPipe, 1F1B and the interleaved schedule; shorter for ZB-H2, whose ragged
        start and end the neighbouring steps fill."""
        order = np.argsort(self.stage, kind="stable")
        cuts = np.flatnonzero(np.diff(self.stage[order])) + 1
        first = np.minimum.reduceat(self.start[order], np.r_[0, cuts])
        last = np.maximum.reduceat(self.end[order], np.r_[0, cuts])
        return float(np.max(last - first))

    @property
    def bubble_time(self) -> float:
        """Idle time of a stage per step, :attr:`period` minus :attr:`ideal` (units of ``t_f``; compare
        :func:`bubble_time`)."""
        return self.period - self.ideal

    @property
    def bubble(self) -> float:
        """Measured bubble over useful time, ``period / ideal - 1`` (dimensionless; compare
        :func:`atscale.parallelism.bubble_fraction`)."""
        return self.period / self.ideal - 1

    def peak_in_flight(self) -> np.ndarray:
        """Per stage, the most micro-batches whose forward has run and whose last backward pass (``W`` where the
        backward is split) has not, in units of one stage's activations (dimensionless)."""
        key = (self.stage * self.micro_batches + self.micro_batch) * 2 * self.virtual_stages + self.chunk
        split = np.isin(key, key[self.kind == "W"])
        delta = np.where(self.kind == "F", 1, np.where((self.kind == "W") | ((self.kind == "B") & ~split), -1, 0))
        out = np.zeros(self.pp, dtype=int)
        for i in range(self.pp):
            sel = self.stage == i
            order = np.argsort(self.start[sel], kind="stable")
            out[i] = np.cumsum(delta[sel][order]).max()
        return out / self.virtual_stages

    def __repr__(self) -> str:
        v = f", v={self.virtual_stages}" if self.virtual_stages > 1 else ""
        return (f"Timeline({self.schedule}{v}: {self.pp} stages, {self.micro_batches} micro-batches, "
                f"{self.start.size} passes; period {self.period:g}, bubble {self.bubble:.1%} of useful time)")


def _classic_order(schedule: str, p: int, m: int, v: int, i: int) -> list:
    """Stage ``i``'s passes under GPipe, 1F1B or the interleaved schedule: ``(kind, micro-batch, chunk)``."""
    if schedule == "gpipe":
        return [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
    if schedule == "1f1b":
        warm = min(p - i - 1, m)
        order = [("F", j, 0) for j in range(warm)]
        for k in range(m - warm):
            order += [("F", warm + k, 0), ("B", k, 0)]
        return order + [("B", j, 0) for j in range(m - warm, m)]
    # interleaved (Megatron-LM): micro-batches in groups of p, chunk by chunk
    total = m * v

    def unit(k, forward):
        j = (k // (p * v)) * p + k % p
        c = (k // p) % v
        return j, (c if forward else v - 1 - c)

    warm = min((p - i - 1) * 2 + (v - 1) * p, total)
    order = [("F", *unit(k, True)) for k in range(warm)]
    for k in range(total - warm):
        order += [("F", *unit(warm + k, True)), ("B", *unit(k, False))]
    return order + [("B", *unit(k, False)) for k in range(total - warm, total)]


def _zero_bubble_order(p: int, m: int, i: int, depth: int) -> list:
    """Stage ``i``'s passes under ZB-H1 (``depth`` 1) or ZB-H2 (``depth`` 2), after Qi et al. 2024, sec. 2:
    ``depth (p - i - 1)`` warm-up forwards, then a forward (while any is left) and an input-gradient backward
    ``"I"`` per micro-batch, each followed by a weight-gradient pass ``W`` once the stage has held back
    ``depth i`` of them; the held-back ``W`` passes close the step. So every stage holds ``depth (p - 1) + 1``
    micro-batches at its peak, and the last stage's held-back ``W`` passes fill the drain."""
    warm = min(depth * (p - i - 1), m)
    order = [("F", j, 0) for j in range(warm)]
    weights = 0
    for k in range(m):
        if warm + k < m:
            order.append(("F", warm + k, 0))
        order.append(("I", k, 0))
        if k >= depth * i:
            order.append(("W", weights, 0))
            weights += 1
    return order + [("W", j, 0) for j in range(weights, m)]


class _DualPipeOrder:
    """Builds one GPU's passes under DualPipe. Phase 0 is the direction whose micro-batches enter at this GPU's
    end of the pipeline (the first stage's for GPUs in the first half), phase 1 the other; micro-batches
    ``0..m/2-1`` enter at the first stage (chunk 0), ``m/2..m-1`` at the last (chunk 1). An ``"I"`` pass keeps
    its ``W`` for later, in first-in first-out order; a tuple of two passes is an overlapped pair."""

    def __init__(self, p: int, m: int, i: int):
        self.half, self.second = m // 2, i >= p // 2
        self.forwards, self.backwards, self.held = [0, 0], [0, 0], []

    def f(self, phase: int) -> tuple:
        c = phase ^ self.second
        self.forwards[c] += 1
        return ("F", self.forwards[c] - 1 + c * self.half, c)

    def b(self, phase: int, split: bool = False) -> tuple:
        c = phase ^ self.second
        self.backwards[c] += 1
        j = self.backwards[c] - 1 + c * self.half
        if split:
            self.held.append((j, c))
        return ("I" if split else "B", j, c)

    def w(self) -> tuple:
        j, c = self.held.pop(0)
        return ("W", j, c)


def _dualpipe_order(p: int, m: int, i: int) -> list:
    """GPU ``i``'s passes under DualPipe, in the eight phases of the reference implementation (DeepSeek-AI,
    github.com/deepseek-ai/DualPipe, ``DualPipe.step``), with ``h = min(i, p - 1 - i)`` the GPU's distance from
    its end of the pipeline: warm-up forwards of phase 0, then of both phases; ``B``/``W``/``F`` of phase 1 with
    the backward split; the steady state of overlapped pairs (a phase-0 forward with a phase-1 backward and the
    reverse; the middle GPUs run their first pair unoverlapped); the drain, whose second half splits the
    backward again so that the held-back ``W`` passes fill the end."""
    o, half_p = _DualPipeOrder(p, m, i), p // 2
    h = min(i, p - 1 - i)
    rest = half_p - h - 1
    out = [o.f(0) for _ in range(2 * rest)]
    for _ in range(h + 1):
        out += [o.f(0), o.f(1)]
    for _ in range(rest):
        out += [o.b(1, split=True), o.w(), o.f(1)]
    for k in range(m // 2 - p + h + 1):
        if k == 0 and h == half_p - 1:  # the middle GPUs: not overlapped, to shorten the bubble
            out += [o.f(0), o.b(1)]
        else:
            out.append((o.f(0), o.b(1)))
        out.append((o.f(1), o.b(0)))
    for _ in range(rest):
        out += [o.b(1), (o.f(1), o.b(0))]
    split = False
    for k in range(h + 1):  # the second half of these backwards keep their W for later
        split = split or (k == (h + 1) // 2 and h % 2 == 1)
        out.append(o.b(1, split))
        split = split or (k == (h + 1) // 2 and h % 2 == 0)
        out.append(o.b(0, split))
    for _ in range(rest):
        out += [o.w(), o.b(0, split=True)]
    return out + [o.w() for _ in range(h + 1)]


def _dualpipev_order(p: int, m: int, i: int) -> list:
    """GPU ``i``'s passes under DualPipeV: the reference implementation (DeepSeek-AI, github.com/deepseek-ai/DualPipe,
    ``DualPipeV.step``) runs DualPipe's eight phases on ``p`` GPUs with ``m`` micro-batches exactly as DualPipe's
    first ``p`` GPUs run them on ``2p`` GPUs with ``2m`` (the "cut in half": phase 0 is the GPU's stage ``i`` on
    the way down, phase 1 its stage ``2p - 1 - i`` on the way back), every micro-batch now passing both chunks."""
    def unfold(slot):
        kind, j, c = slot
        return (kind, j - c * m, c)

    return [tuple(unfold(x) for x in slot) if isinstance(slot[0], tuple) else unfold(slot)
            for slot in _dualpipe_order(2 * p, 2 * m, i)]


def _stage_order(schedule: str, p: int, m: int, v: int, i: int) -> list:
    """Stage ``i``'s passes, in order: ``(kind, micro-batch, chunk)`` with kind ``"F"``, ``"B"`` (a whole
    backward), ``"I"`` (the input-gradient backward only) or ``"W"``; a tuple of two passes runs as an overlapped
    pair (DualPipe)."""
    if schedule in ("zb-h1", "zb-h2"):
        return _zero_bubble_order(p, m, i, 1 if schedule == "zb-h1" else 2)
    if schedule == "dualpipe":
        return _dualpipe_order(p, m, i)
    if schedule == "dualpipev":
        return _dualpipev_order(p, m, i)
    return _classic_order(schedule, p, m, v, i)


def _input_of(kind: str, j: int, c: int, i: int, p: int, v: int, reverse: bool, vshape: bool = False):
    """The pass whose output ``(kind, j, c)`` on stage ``i`` waits for, as a key ``(kind, j, c, stage)``, or
    ``None``. ``reverse``: the micro-batch flows from the last stage to the first (DualPipe's chunk 1).
    ``vshape``: chunk 0 runs down the GPUs and chunk 1 back up them, the turn on the last GPU (DualPipeV)."""
    if kind == "W":
        return ("B", j, c, i)
    if vshape:
        down = c == 0
        if kind == "F":
            if down:
                return ("F", j, 0, i - 1) if i > 0 else None
            return ("F", j, 1, i + 1) if i < p - 1 else ("F", j, 0, i)
        if down:
            return ("B", j, 0, i + 1) if i < p - 1 else ("B", j, 1, i)
        return ("B", j, 1, i - 1) if i > 0 else ("F", j, 1, i)
    step = -1 if reverse else 1
    if kind == "F":
        if 0 <= i - step < p:
            return ("F", j, c, i - step)
        return ("F", j, c - 1, p - 1) if v > 1 and c > 0 else None  # interleaved: the previous chunk
    if 0 <= i + step < p:
        return ("B", j, c, i + step)
    return ("B", j, c + 1, 0) if v > 1 and c < v - 1 else ("F", j, c, i)


def _simulate(orders: list, p: int, v: int, durations: dict, bidirectional: bool, vshape: bool = False) -> list:
    """Runs each stage's passes in order, each (or each overlapped pair) as soon as the stage is free and its
    inputs are ready; a pair's outputs are ready when the pair ends. Returns ``(stage, j, c, kind, start, end)``
    rows."""
    done: dict = {}
    pos, free, rows = [0] * p, [0.0] * p, []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for i in range(p):
            while pos[i] < len(orders[i]):
                slot = orders[i][pos[i]]
                slot = slot if isinstance(slot[0], tuple) else (slot,)
                needs = [_input_of(k, j, c, i, p, v, bidirectional and c == 1, vshape) for k, j, c in slot]
                if any(n is not None and n not in done for n in needs):
                    break
                t = max([free[i]] + [done[n] for n in needs if n is not None])
                for k, j, c in slot:
                    rows.append((i, j, c, "B" if k == "I" else k, t, t + durations[k]))
                    t += durations[k]
                for k, j, c in slot:
                    done[("B" if k in "BI" else k, j, c, i)] = t
                free[i] = t
                pos[i] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    return rows


def _check_simulation(p: int, m: int, v: int, schedule: str) -> None:
    _v.choice("schedule", schedule, SCHEDULES)
    if schedule in NOT_SIMULATED:
        raise ValueError(f"schedule={schedule!r} is not simulated: its order comes from its authors' greedy scheduler "
                         "for the measured pass times; bubble_time and activation_in_flight give its closed forms")
    passes = (3 if schedule in SPLIT_BACKWARD else 2) * p * m * v * (2 if schedule in V_SHAPED else 1)
    if passes > MAX_SIMULATED_PASSES:
        raise ValueError(f"pp={p} x micro_batches={m} x virtual_stages={v} means {passes:,} passes to simulate; "
                         f"at most {MAX_SIMULATED_PASSES:,} are drawn (bubble_time gives the answer for any size)")
    _check_layouts(np.asarray(_CODE[schedule]), np.asarray(p), np.asarray(m), np.asarray(v), closed_form=False)
    if schedule == "interleaved" and m % p:
        raise ValueError(f"the interleaved schedule needs micro_batches ({m}) to be a multiple of pp ({p})")


def pipeline_timeline(pp: int, micro_batches: int, schedule: str = "1f1b", virtual_stages: int = 1, *,
                      backward_ratio: float = 2.0, weight_ratio: float | None = None) -> Timeline:
    """Simulate one step of a pipeline schedule: each stage runs its passes in the schedule's order, each as soon
    as its input (the previous stage's forward, the next stage's backward, its own input-gradient pass for a
    ``W``) is ready. Orders (see the module's introduction): GPipe, 1F1B and interleaved 1F1B (Narayanan et al.
    2021, sec. 2.2), ZB-H1 and ZB-H2 (Qi et al. 2024, sec. 2.1-2.2) and DualPipe (DeepSeek-AI 2024, sec. 3.2.1, as
    its reference implementation orders the passes) and DualPipeV (its reference implementation; two half-size
    chunks per GPU in a V, each pass half as long). ZB-V is not simulated (:data:`NOT_SIMULATED`).

    A forward of a whole stage takes 1 unit (``1/v`` per chunk), a backward ``backward_ratio`` units. The
    schedules of :data:`SPLIT_BACKWARD` run it as an input-gradient pass of ``backward_ratio - weight_ratio`` and
    a weight-gradient pass of ``weight_ratio`` units (default: half the backward, so ``t_f = t_b = t_w`` at the
    default ``backward_ratio``); DualPipe's overlapped pairs take the sum of their passes. Communication is free.
    Used to draw the schedules and to check :func:`bubble_time` and :func:`activation_in_flight`.
    """
    pp, micro_batches, virtual_stages = (_v.count(name, value) for name, value in
                                         (("pp", pp), ("micro_batches", micro_batches),
                                          ("virtual_stages", virtual_stages)))
    _check_simulation(pp, micro_batches, virtual_stages, schedule)
    backward_ratio = _v.positive("backward_ratio", backward_ratio, scalar=True)
    split = schedule in SPLIT_BACKWARD
    if weight_ratio is None:
        weight_ratio = backward_ratio / 2
    weight_ratio = _v.number("weight_ratio", weight_ratio, low=0, high=backward_ratio, low_open=True,
                             high_open=True, unit="units of the forward time, below backward_ratio")
    p, m = pp, micro_batches
    v = 2 if schedule in V_SHAPED else virtual_stages  # a V: two half-size stages per GPU
    durations = {"F": 1.0 / v, "B": backward_ratio / v, "I": (backward_ratio - weight_ratio) / v,
                 "W": weight_ratio / v}
    orders = [_stage_order(schedule, p, m, v, i) for i in range(p)]
    rows = _simulate(orders, p, v, durations, schedule == "dualpipe", schedule in V_SHAPED)
    st, mb, ch, kd, s0, s1 = (np.array(x) for x in zip(*rows))
    direction = ch.copy() if schedule == "dualpipe" else np.zeros_like(ch)
    return Timeline(st, mb, ch, kd, s0, s1, p, m, v, schedule, float(backward_ratio),
                    float(weight_ratio) if split else 0.0, direction)


def schedule_table(pp: int, micro_batches: int, t_f: float = 1.0, t_b: float = 1.0, t_w: float = 1.0, *,
                   schedules=SCHEDULES, virtual_stages: int = 2) -> Table:
    """The schedules side by side at one ``pp`` and ``micro_batches``: the bubble over useful time from the closed
    form (:func:`bubble_time` over ``m (t_f + t_b + t_w)``) and from the simulation (:func:`pipeline_timeline`),
    the first stage's peak activations (:func:`activation_in_flight`, micro-batches of a stage's activations) and
    the copies of the weights per GPU (:func:`weight_copies`); ZB-V's simulated column reads "not simulated"
    (:data:`NOT_SIMULATED`). Times in seconds (only their ratios matter); the
    interleaved schedule runs ``virtual_stages`` chunks per GPU. ``ValueError`` if a schedule cannot run (DualPipe
    needs an even ``pp`` and an even ``micro_batches >= 2 pp``): leave it out of ``schedules``."""
    pp, micro_batches, virtual_stages = (_v.count(name, value) for name, value in
                                         (("pp", pp), ("micro_batches", micro_batches),
                                          ("virtual_stages", virtual_stages)))
    t_f, t_b, t_w = (_v.positive(name, value, scalar=True, unit="s") for name, value in
                     (("t_f", t_f), ("t_b", t_b), ("t_w", t_w)))
    if t_b + t_w == t_w or not math.isfinite((t_b + t_w) / t_f) or t_w / t_f == 0:
        raise ValueError(f"t_f={t_f:g} s, t_b={t_b:g} s and t_w={t_w:g} s differ beyond a float's precision; give "
                         "pass times within about 1e12 of each other")
    if isinstance(schedules, str) or not len(schedules):
        raise ValueError(f"schedules={_v.show(schedules)} must be a non-empty list of names of {SCHEDULES}")
    rows = []
    for name in schedules:
        _v.choice("schedules", name, SCHEDULES)
        v = virtual_stages if name == "interleaved" else 1
        closed = bubble_time(name, pp, micro_batches, t_f, t_b, t_w, v) / (micro_batches * (t_f + t_b + t_w))
        simulated = None if name in NOT_SIMULATED else pipeline_timeline(
            pp, micro_batches, name, v, backward_ratio=(t_b + t_w) / t_f, weight_ratio=t_w / t_f).bubble
        label = SCHEDULE_NAMES[name] + (f" (v={v})" if name == "interleaved" else "")
        held = activation_in_flight(name, pp, micro_batches, v)
        # rounded first, so that a formula and a simulation equal to within rounding print alike
        rows.append((label, f"{round(closed, 12):.1%}",
                     "not simulated" if simulated is None else f"{round(simulated, 12):.1%}", f"{held:g}",
                     str(weight_copies(name))))
    headers = ("schedule", "bubble (formula)", "bubble (simulated)", "activations held (micro-batches)",
               "weight copies")
    caption = (f"{pp} stages, {micro_batches} micro-batches; t_b/t_f = {t_b / t_f:g}, t_w/t_f = {t_w / t_f:g}; "
               "bubble over useful time, activations of the first stage")
    return Table(headers, tuple(rows), caption)
