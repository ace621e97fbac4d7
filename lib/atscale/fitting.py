"""The fit of the step-time model's constants: :func:`calibrate` searches a grid of
:class:`~atscale.calibration.Calibration` values for the least-squares fit of the step-time model
(:mod:`atscale.parallelism`) to published runs (by default :data:`atscale.runs.CALIBRATION_RUNS`);
:data:`atscale.calibration.CALIBRATION` is its result.
``atscale.parallelism.calibrate`` still names it.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from . import _validate as _v
from .calibration import BLACKWELL, CALIBRATION, H100_ERA, Calibration
from .runs import CALIBRATION_RUNS, OPERATOR_CALIBRATION_RUNS, Run

__all__ = ["calibrate", "calibrate_operators", "fit_fp8_rate_factor"]


def _fit(runs, grids: dict, base: Calibration) -> tuple[Calibration, float]:
    """The point of the grid (one array per field of :class:`Calibration` in ``grids``) minimising the sum of
    squared ``log(predicted / published)`` over ``runs``. The two generations' ``E_max`` are separable: for
    each ``(half_width, half_hidden)`` the older accelerators' runs pick ``efficiency_max`` and the newer
    ones' ``efficiency_max_h100`` independently (a generation without runs keeps ``base``'s)."""
    new = [r for r in runs if r.cluster.accelerator.year >= H100_ERA]
    old = [r for r in runs if r.cluster.accelerator.year < H100_ERA]

    def loss(group, cal):
        return sum(math.log(r.predict(cal) / r.published) ** 2 for r in group)

    best = (np.inf, base)
    for w, h in itertools.product(grids["half_width"], grids["half_hidden"]):
        cal, total = dataclasses.replace(base, half_width=float(w), half_hidden=float(h)), 0.0
        for group, name in ((old, "efficiency_max"), (new, "efficiency_max_h100")):
            if group:
                e_loss, e = min((loss(group, dataclasses.replace(cal, **{name: float(e)})), float(e))
                                for e in grids[name])
                cal, total = dataclasses.replace(cal, **{name: e}), total + e_loss
        if total < best[0]:
            best = (total, cal)
    return best[1], best[0]


_COARSE = dict(efficiency_max=(0.60, 1.0, 0.05), efficiency_max_h100=(0.60, 1.0, 0.05),
               half_width=(0.0, 600.0, 100.0), half_hidden=(0.0, 3000.0, 500.0))
_FINE = dict(efficiency_max=0.01, efficiency_max_h100=0.01, half_width=25.0, half_hidden=125.0)
_R_GRID = np.round(np.arange(1.0, 2.0001, 0.01), 2)


def calibrate(runs=None, *, e_grid=None, eh_grid=None, w_grid=None, h_grid=None,
              r_grid=None) -> tuple[Calibration, float]:
    """Least-squares :class:`Calibration` on ``runs`` (default :data:`CALIBRATION_RUNS`): ``(calibration, loss)``.

    Two fits, each a transparent grid search (the step time is monotonic in every constant), each candidate
    passed down as a :class:`Calibration` (nothing is patched): first the four constants of
    :func:`~atscale.parallelism.compute_efficiency` (``E_max`` of each generation, on its own runs, and the two half-widths
    shared), minimising the sum of squared ``log(predicted / published)`` over the BF16 runs; then
    :attr:`Calibration.fp8_matmul_speedup` with those fixed, minimising the squared log error
    of each FP8 run's *speedup over its BF16 twin* (the same layout, which must be among ``runs``), so that
    the FP8 constant measures what FP8 gains and does not absorb the BF16 error (the loss returned is the
    sum of both). Given grids (``e_grid``, ``eh_grid`` for :attr:`Calibration.efficiency_max_h100`,
    ``w_grid``, ``h_grid``, ``r_grid``) are searched exhaustively; by default the four are searched
    coarsely, then within two fine steps (0.01, 0.01, 25, 125) of the coarse best, and the FP8 speedup over
    1.00-2.00 in steps of 0.01. :data:`CALIBRATION` is this fit on :data:`CALIBRATION_RUNS` (seconds); the
    tests check that no neighbouring grid point fits better.
    """
    runs = CALIBRATION_RUNS if runs is None else (tuple(runs) if not isinstance(runs, Run) else (runs,))
    if not runs or not all(isinstance(r, Run) for r in runs):
        raise ValueError(f"runs={_v.show(runs)} must be a non-empty sequence of atscale.parallelism.Run")
    short = dict(efficiency_max="e_grid", efficiency_max_h100="eh_grid", half_width="w_grid", half_hidden="h_grid")
    given = dict(zip(short, (e_grid, eh_grid, w_grid, h_grid)))
    fraction = lambda n, g: _v.number(n, g, low=0, low_open=True, high=1)  # noqa: E731
    checks = dict(efficiency_max=fraction, efficiency_max_h100=fraction, half_width=_v.nonnegative,
                  half_hidden=_v.nonnegative)
    grids = {n: None if g is None else np.ravel(checks[n](short[n], g)) for n, g in given.items()}
    r_grid = _R_GRID if r_grid is None else np.ravel(_v.number("r_grid", r_grid, low=1, high=2))
    bf16 = [r for r in runs if r.dtype != "fp8"]
    fp8 = [r for r in runs if r.dtype == "fp8"]
    cal, loss = CALIBRATION, 0.0
    if bf16:
        coarse = {n: grids[n] if grids[n] is not None else np.round(np.arange(lo, hi + step / 2, step), 6)
                  for n, (lo, hi, step) in _COARSE.items()}
        cal, loss = _fit(bf16, coarse, cal)
        if any(g is None for g in grids.values()):
            fine = {n: grids[n] if grids[n] is not None else
                    np.unique(np.clip(np.round(getattr(cal, n) + _FINE[n] * np.arange(-2, 3), 6), 0.0, None))
                    for n in short}
            for n in ("efficiency_max", "efficiency_max_h100"):
                fine[n] = fine[n][(fine[n] > 0) & (fine[n] <= 1.0)]
            cal, loss = _fit(bf16, fine, cal)
    if fp8:
        twins = [_bf16_twin(r, bf16) for r in fp8]
        best = (np.inf, cal)
        for x in r_grid:
            c8 = dataclasses.replace(cal, fp8_matmul_speedup=float(x))
            l8 = sum(math.log((r.predict(c8) / r.published) / (t.predict(c8) / t.published)) ** 2
                     for r, t in zip(fp8, twins))
            if l8 < best[0]:
                best = (l8, c8)
        cal, loss = best[1], loss + best[0]
    return cal, loss


def _bf16_twin(run: Run, runs) -> Run:
    """The BF16 run of ``runs`` with ``run``'s model, cluster, layout and sequence (an FP8 run's reference)."""
    for r in runs:
        if (r.model, r.cluster, r.plan, r.seq_length, r.metric) == (run.model, run.cluster, run.plan,
                                                                      run.seq_length, run.metric):
            return r
    raise ValueError(f"the FP8 run {run.label!r} needs its BF16 twin (same model, cluster and layout) among the "
                     "calibration runs: the FP8 speedup is fitted on the ratio of the two")


_K_GRID = np.round(np.arange(0.50, 1.2001, 0.01), 2)


def calibrate_operators(runs=None, *, grid=None) -> tuple[Calibration, float]:
    """Least-squares :attr:`Calibration.kernel_efficiency`, :attr:`Calibration.kernel_efficiency_h100` and
    :attr:`Calibration.kernel_efficiency_blackwell` on ``runs`` (default
    :data:`~atscale.runs.OPERATOR_CALIBRATION_RUNS`), each priced by the operator-level compute with its own stack
    preset (:meth:`~atscale.runs.Run.step` with ``operators=True``): ``(calibration, loss)``. Each generation's
    constant is a transparent grid search (``grid``, default 0.50-1.20 in steps of 0.01) minimising the sum of
    squared ``log(predicted / published)`` over that generation's runs; a generation without runs keeps
    :data:`CALIBRATION`'s. The A100 and H100 generations take their BF16 runs only: what FP8 gains follows from
    the kernel model's FP8 rates and casts, and the FP8 runs validate it. Blackwell (:data:`BLACKWELL`) takes its
    runs in any precision, since NVIDIA publishes no BF16 dense Blackwell step: its constant holds FP8 too."""
    runs = _runs_arg(runs, OPERATOR_CALIBRATION_RUNS)
    grid = _K_GRID if grid is None else np.ravel(_v.number("grid", grid, low=0, low_open=True, high=2))
    cal, total = CALIBRATION, 0.0
    blackwell = [r for r in runs if r.cluster.accelerator.name in BLACKWELL]
    bf16 = [r for r in runs if r.dtype != "fp8" and r.cluster.accelerator.name not in BLACKWELL]
    for name, group in (("kernel_efficiency", [r for r in bf16 if r.cluster.accelerator.year < H100_ERA]),
                        ("kernel_efficiency_h100", [r for r in bf16 if r.cluster.accelerator.year >= H100_ERA]),
                        ("kernel_efficiency_blackwell", blackwell)):
        if not group:
            continue
        best, loss = _grid_fit(group, cal, name, grid)
        cal, total = dataclasses.replace(cal, **{name: best}), total + loss
    return cal, total


def _runs_arg(runs, default=None) -> tuple:
    """``runs`` as a non-empty tuple of :class:`~atscale.runs.Run` (``None``: ``default``, else
    :data:`~atscale.runs.CALIBRATION_RUNS`; one run alone is a tuple of one)."""
    if runs is None:
        runs = CALIBRATION_RUNS if default is None else default
    runs = tuple(runs) if not isinstance(runs, Run) else (runs,)
    if not runs or not all(isinstance(r, Run) for r in runs):
        raise ValueError(f"runs={_v.show(runs)} must be a non-empty sequence of atscale.runs.Run")
    return runs


def _grid_fit(runs, base: Calibration, name: str, grid) -> tuple[float, float]:
    """``(value, loss)``: the value of ``base``'s field ``name`` on ``grid`` minimising the sum of squared
    ``log(predicted / published)`` of ``runs``, each priced by the operator-level compute (one field at a time, a
    transparent grid search)."""
    loss, best = min((sum(math.log(r.predict(c, operators=True) / r.published) ** 2 for r in runs), float(v))
                     for v in grid for c in (dataclasses.replace(base, **{name: float(v)}),))
    return best, float(loss)


def fit_fp8_rate_factor(runs=None, *, grid=None, calibration: Calibration | None = None) -> tuple[float, float]:
    """The :attr:`~atscale.calibration.Calibration.fp8_rate_factor` that best fits the FP8 runs of ``runs`` (default
    :data:`~atscale.runs.CALIBRATION_RUNS`: NVIDIA's Llama 3.1 70B recipe on 64 H100, whose BF16 twin is a
    calibration run too), each priced by the operator-level compute on ``calibration`` (default :data:`CALIBRATION`)
    with only the factor changed: ``(factor, loss)``, a grid search (``grid``, default 0.50-1.20 in steps of 0.01)
    minimising the sum of squared ``log(predicted / published)``. A "what if", not the book's constant: the factor
    stands for the FP8 GEMMs' unmeasured sustained rate, and a fit on one stack's runs describes that stack
    (:func:`atscale.accuracy.fp8_rate_sensitivity` shows what it does to the others)."""
    runs = _runs_arg(runs)
    fp8 = [r for r in runs if r.dtype == "fp8"]
    if not fp8:
        raise ValueError(f"runs={_v.show(runs)} has no FP8 run to fit the FP8 rate on")
    base = CALIBRATION if calibration is None else calibration
    if not isinstance(base, Calibration):
        raise ValueError(f"calibration={_v.show(calibration)} must be an atscale.calibration.Calibration")
    grid = _K_GRID if grid is None else np.ravel(_v.number("grid", grid, low=0, low_open=True, high=1.5))
    return _grid_fit(fp8, base, "fp8_rate_factor", grid)
