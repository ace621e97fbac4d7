"""The search over layouts: every ``tp x cp x pp x dp`` split of a cluster with every micro-batch size, ZeRO stage,
schedule, recomputation mode, sequence parallelism, precision and expert-parallel degree, evaluated at once and
ranked by throughput (:func:`search`, :class:`SearchResult`).

It evaluates with :func:`atscale.parallelism.evaluate` (the plan-level step time, vectorised over the layouts);
the constants it passes down are :mod:`atscale.calibration`'s. ``atscale.parallelism.search`` still names it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import _validate as _v
from . import hardware, memory, models
from .calibration import CALIBRATION, Calibration
from .parallelism import DP_OVERLAP, StepTime, evaluate
from .plan import CP_ALGORITHMS, RECOMPUTE, SCHEDULES, Plan

__all__ = ["SearchResult", "search", "MAX_SEARCH_LAYOUTS"]


@dataclass(frozen=True)
class SearchResult:
    """Every layout :func:`search` considered, evaluated.

    ``table`` is a dict of equal-length arrays (plan fields, the parts in seconds as ``compute_s`` ...,
    ``total_s``, ``tokens_per_second``,
    ``mfu``, ``feasible``, ``reason``), ranked: feasible layouts by throughput (best first), then the
    infeasible ones. ``result`` is the :class:`StepTime` of the arrays in that order.
    """

    table: Mapping[str, np.ndarray]
    result: StepTime
    model: str
    cluster: str

    def __len__(self):
        return len(self.table["tp"])

    @property
    def feasible_count(self) -> int:
        return int(np.sum(self.table["feasible"]))

    def plan(self, i: int = 0) -> Plan:
        """The :class:`Plan` of row ``i`` (0: the best); its precision is ``table["dtype"][i]``."""
        i = _v.count("i", i, low=0, high=len(self) - 1, unit="a row of the search")
        t = self.table
        sched = str(t["schedule"][i])
        return Plan(tp=int(t["tp"][i]), cp=int(t["cp"][i]), pp=int(t["pp"][i]), dp=int(t["dp"][i]),
                    micro_batch=int(t["micro_batch"][i]), global_batch=int(t["global_batch"][i]),
                    zero_stage=int(t["zero_stage"][i]), schedule=sched,
                    virtual_stages=int(t["virtual_stages"][i]) if sched == "interleaved" else 1,
                    recompute=str(t["recompute"][i]), sequence_parallel=bool(t["sequence_parallel"][i]),
                    tp_overlap=bool(t["tp_overlap"][i]),
                    cp_algorithm=str(t["cp_algorithm"][i]) if "cp_algorithm" in t else "ring",
                    **self._expert_fields(i))

    def _expert_fields(self, i: int) -> dict:
        t = self.table
        if "ep" not in t:
            return {}
        return dict(ep=int(t["ep"][i]), expert_tp=int(t["expert_tp"][i]), a2a_overlap=bool(t["a2a_overlap"][i]))

    def best(self) -> Plan:
        if not self.feasible_count:
            raise ValueError("no feasible layout: see .reasons()")
        return self.plan(0)

    def reasons(self) -> dict[str, int]:
        """How many layouts fail for each reason (reasons with numbers cut to their first words)."""
        out: dict[str, int] = {}
        for r in self.table["reason"][~self.table["feasible"]]:
            if r.startswith("does not fit"):
                key = r.split(":")[0]
            elif r.startswith("interleaved:"):
                key = "interleaved: too few micro-batches per replica to fill the stages"
            elif r.startswith("global batch"):
                key = "global batch not a whole number of micro-batches per replica"
            elif r.startswith("TP x CP x PP x DP"):
                key = "GPU count does not match the cluster"
            else:
                key = r
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


MAX_SEARCH_LAYOUTS = 500_000
"""The most layouts :func:`search` evaluates at once (about 3 s and 2 GB of arrays; the default candidate
lists give ~12,000 for any cluster); longer candidate lists are refused rather than left to run."""


def _names(name: str, value, options) -> tuple:
    """A non-empty tuple of names from ``options`` (one name alone is a tuple of one)."""
    values = (value,) if isinstance(value, str) else value
    try:
        values = tuple(values)
    except TypeError:
        raise ValueError(f"{name}={_v.show(value)} must be a sequence of names from {options}") from None
    if not values:
        raise ValueError(f"{name}={_v.show(value)} must not be empty; names from {options}")
    return tuple(_v.choice(name, x, options) for x in values)


def _divisors_pow2(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _some_split(combos: list, context_parallel, n: int) -> None:
    """A ``ValueError`` naming ``context_parallel`` when none of its degrees leaves a split of the ``n`` GPUs."""
    if not combos:
        raise ValueError(f"context_parallel={_v.show(context_parallel)}: none of them divides the {n:,} GPUs of the "
                         "cluster; give context-parallel degrees that divide the GPU count (1, 2, 4, ...)")


def search(model, cluster: hardware.Cluster, global_batch: int, *, seq_length=None, dtypes=("bf16",),
           optimizer_name: str = memory.RUNNING_EXAMPLE_OPTIMIZER, micro_batches=(1, 2, 4, 8),
           context_parallel=(1, 2, 4, 8), zero_stages=(0, 1, 2, 3), schedules=("gpipe", "1f1b", "interleaved"),
           virtual_stages=(2, 4), recomputes=RECOMPUTE, sequence_parallel=(False, True),
           dp_overlap: float = DP_OVERLAP, tp_overlap: bool = True, flash_attention: bool = True,
           expert_parallel=(1,), a2a_overlap: bool = False, cp_algorithm: str = "ring",
           calibration: Calibration = CALIBRATION, stack=None, fp8_recipe: str = "delayed",
           stragglers=None) -> SearchResult:
    """Every layout of ``model`` on ``cluster`` for ``global_batch`` sequences per step, ranked by throughput.

    The candidates: ``tp`` every divisor of the GPU count up to twice the node size (so that "TP beyond the
    node" shows among the infeasible), ``cp`` each of ``context_parallel`` that divides what is left, ``pp``
    every divisor up to the number of layers, ``dp`` what is left, and every combination of the given
    micro-batch sizes, ZeRO stages, schedules (interleaved with each of ``virtual_stages``), recomputation
    modes, sequence parallelism and precisions (``dtypes``, e.g. ``("bf16", "fp8")``), and for a mixture of
    experts each expert-parallel degree of ``expert_parallel`` (experts not tensor-split, ``expert_tp = 1``;
    ``a2a_overlap`` for all); context parallelism by ``cp_algorithm`` (:data:`atscale.plan.CP_ALGORITHMS`) for
    all. They are evaluated at once per precision, vectorised (:func:`evaluate`); no Python
    loop over layouts.
    
    ``stack`` and ``fp8_recipe``: the operator-level compute of a training stack (:func:`atscale.parallelism.step_time`).
    ``stragglers``: the wait for the slowest GPU (default off; :func:`atscale.parallelism.step_time`).
    """
    model = models.model(model)
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster must be an atscale.hardware.Cluster (got a {type(cluster).__name__})")
    n = cluster.num_gpus
    global_batch = _v.count("global_batch", global_batch, unit="sequences")
    micro_batches, virtual_stages, cps, eps = (tuple(int(x) for x in np.ravel(_v.count(name, value, scalar=False)))
                                               for name, value in (("micro_batches", micro_batches),
                                                                   ("virtual_stages", virtual_stages),
                                                                   ("context_parallel", context_parallel),
                                                                   ("expert_parallel", expert_parallel)))
    a2a_overlap = _v.flag("a2a_overlap", a2a_overlap)
    cp_algorithm = _v.choice("cp_algorithm", cp_algorithm, CP_ALGORITHMS)
    dp_overlap = _v.number("dp_overlap", dp_overlap, low=0, high=1, scalar=True)
    zero_stages = tuple(int(x) for x in np.ravel(_v.count("zero_stages", zero_stages, low=0, high=3, scalar=False)))
    schedules, recomputes = (_names(name, value, options) for name, value, options in
                             (("schedules", schedules, SCHEDULES), ("recomputes", recomputes, RECOMPUTE)))
    dtypes = _names("dtypes", dtypes, tuple(cluster.accelerator.peak_flops))
    sequence_parallel = tuple(bool(x) for x in np.ravel(_v.flags("sequence_parallel", sequence_parallel)))
    sched_v = [(s, 1) for s in schedules if s != "interleaved"]
    if "interleaved" in schedules:
        sched_v += [("interleaved", v) for v in virtual_stages]
    combos = [(t, c, p, n // (t * c * p)) for t in _divisors_pow2(n, 2 * cluster.node.gpus) for c in cps
              for p in _divisors_pow2(n, model.num_layers) if n % (t * c * p) == 0]
    _some_split(combos, context_parallel, n)
    axes = (range(len(combos)), micro_batches, zero_stages, range(len(sched_v)), range(len(recomputes)),
            sequence_parallel, eps)  # one axis per candidate list (splits, schedules and recomputations by index)
    sizes = tuple(len(a) for a in axes)
    layouts = math.prod(sizes) * len(dtypes)
    if layouts > MAX_SEARCH_LAYOUTS:
        raise ValueError(f"{layouts:,} layouts to evaluate ({len(combos)} TP x CP x PP x DP splits x "
                         f"{len(micro_batches)} micro_batches x {len(zero_stages)} zero_stages x {len(sched_v)} "
                         f"schedules x {len(recomputes)} recomputes x {len(sequence_parallel)} sequence_parallel x "
                         f"{len(eps)} expert_parallel x {len(dtypes)} dtypes); at most {MAX_SEARCH_LAYOUTS:,}: give "
                         "shorter candidate lists")
    # every combination, in itertools.product's order (the last axis fastest), as one row per layout
    index = np.indices(sizes).reshape(len(sizes), -1)
    grid = np.stack([np.asarray(a, dtype=np.int64)[i] for a, i in zip(axes, index)], axis=1)
    tp, cp, pp, dp = np.array(combos, dtype=np.int64)[grid[:, 0]].T
    cols = dict(tp=tp, cp=cp, pp=pp, dp=dp, micro_batch=grid[:, 1], zero_stage=grid[:, 2],
                schedule=np.array([s for s, _ in sched_v], dtype=object)[grid[:, 3]],
                virtual_stages=np.array([vv for _, vv in sched_v])[grid[:, 3]],
                recompute=np.array(recomputes, dtype=object)[grid[:, 4]], sequence_parallel=grid[:, 5].astype(bool),
                ep=grid[:, 6], expert_tp=np.ones(len(grid), dtype=np.int64))
    keep = ~(cols["sequence_parallel"] & (tp == 1))  # sequence parallelism is meaningless without TP: not a layout
    cols = {k: np.concatenate([x[keep]] * len(dtypes)) for k, x in cols.items()}
    cols["dtype"] = np.repeat(np.array(dtypes, dtype=object), int(keep.sum()))
    of_dtype = {d: cols["dtype"] == d for d in dtypes}  # each precision's rows, found once
    results = [evaluate(model, cluster, **{k: cols[k][of_dtype[d]] for k in cols if k != "dtype"},
                        global_batch=global_batch, tp_overlap=tp_overlap, a2a_overlap=a2a_overlap,
                        cp_algorithm=cp_algorithm, seq_length=seq_length, dtype=d,
                        optimizer_name=optimizer_name, dp_overlap=dp_overlap, flash_attention=flash_attention,
                        calibration=calibration, stack=stack, fp8_recipe=fp8_recipe, stragglers=stragglers)
               for d in dtypes]
    ranked, table = _ranked(_concatenate(results), cols, global_batch=global_batch, tp_overlap=tp_overlap,
                            a2a_overlap=a2a_overlap, cp_algorithm=cp_algorithm)
    return SearchResult(MappingProxyType(table), ranked, model.name, cluster.name)


def _ranked(r: StepTime, cols: dict, **constant) -> tuple:
    """:func:`search`'s evaluated layouts ranked by throughput (the infeasible last, ties in grid order): the ranked
    :class:`StepTime` and the search table (the layout columns, the ``constant`` settings repeated, every part)."""
    tps_ = np.where(r.feasible, r.tokens_per_second, -np.inf)
    order = np.lexsort((np.arange(len(tps_)), -tps_))
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
    ranked = StepTime(**{k: (val[order] if isinstance(val, np.ndarray) and val.shape == tps_.shape else val)
                         for k, val in fields.items()})
    table = {**{k: x[order] for k, x in cols.items()}, "global_batch": np.full(len(order), constant["global_batch"]),
             "tp_overlap": np.full(len(order), bool(constant["tp_overlap"])),
             "a2a_overlap": np.full(len(order), constant["a2a_overlap"]),
             "cp_algorithm": np.full(len(order), constant["cp_algorithm"], dtype=object),
             **{f"{k}_s": np.asarray(val) for k, val in ranked.parts().items()}, "total_s": np.asarray(ranked.total),
             "tokens_per_second": np.asarray(ranked.tokens_per_second), "mfu": np.asarray(ranked.mfu),
             "memory": np.asarray(ranked.memory_total), "memory_status": np.asarray(ranked.memory_status),
             "feasible": np.asarray(ranked.feasible), "reason": np.asarray(ranked.reason)}
    return ranked, table


def _concatenate(results: list[StepTime]) -> StepTime:
    """One :class:`StepTime` of arrays from several (one per precision); ``dtype`` becomes the first's, the
    per-row precision is in the search table."""
    if len(results) == 1:
        return results[0]
    first = results[0]
    out = {}
    for f in dataclasses.fields(first):
        vals = [getattr(r, f.name) for r in results]
        out[f.name] = np.concatenate(vals) if isinstance(vals[0], np.ndarray) else vals[0]
    return StepTime(**out)
