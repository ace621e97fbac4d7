"""Answer keys: the 3D-parallelism chapter."""

CHAPTER = "3D parallelism"
"""The chapter whose exercises these keys check (the Exercises page groups them by it)."""

import dataclasses

from .. import hardware, models, parallelism
from ..scenario import RUNNING_EXAMPLE
from . import answer


@answer("parallelism-bubble-interleaved", unit="", rtol=0.0, atol=1e-9,
        hint="(p - 1) / (v m) with p = 8 stages, m = 32 micro-batches, v = 2 chunks per GPU.")
def _():
    return parallelism.bubble_fraction(8, 32, 2)


@answer("parallelism-micro-batches-90", unit="", rtol=0.0, atol=0.5,
        hint="Pipeline efficiency is 1 / (1 + (p - 1)/m); solve 1 / (1 + 3/m) >= 0.9 for the smallest whole m.")
def _():
    m = 1
    while 1 / (1 + parallelism.bubble_fraction(4, m)) < 0.9 - 1e-12:  # m = 27 gives exactly 90%
        m += 1
    return m


@answer("parallelism-deepiix-dp", unit="", rtol=0.0, atol=0.5,
        hint="256 nodes of 8 GPUs, divided by TP x PP = 8 x 4.")
def _():
    return 256 * 8 // (8 * 4)


@answer("parallelism-running-mfu", unit="", rtol=0.01,
        hint="parallelism.step_time(ex.model, ex.cluster, ex.plan, seq_length=ex.seq_length).mfu")
def _():
    ex = RUNNING_EXAMPLE
    return parallelism.step_time(ex.model, ex.cluster, ex.plan, seq_length=ex.seq_length).mfu


@answer("parallelism-zero3-exposed", unit="s", rtol=0.02,
        hint="dataclasses.replace(ex.plan, zero_stage=3), then step_time(...).dp_comm (seconds).")
def _():
    ex = RUNNING_EXAMPLE
    plan = dataclasses.replace(ex.plan, zero_stage=3)
    return parallelism.step_time(ex.model, ex.cluster, plan, seq_length=ex.seq_length).dp_comm


@answer("parallelism-search-flash-mfu", unit="", rtol=0.01,
        hint="parallelism.search(..., flash_attention=True) for the running example; the MFU of row 0 "
             "(result.table['mfu'][0]).")
def _():
    ex = RUNNING_EXAMPLE
    r = parallelism.search(ex.model, ex.cluster, ex.plan.global_batch, seq_length=ex.seq_length, flash_attention=True)
    return float(r.table["mfu"][0])
