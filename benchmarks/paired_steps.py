"""One warm operator-level step time of two published runs, for paired timing of two commits.

Run from a checkout of each commit in turn, alternating (the machine's speed drifts; compare minima):
``PYTHONPATH=lib .venv/bin/python benchmarks/paired_steps.py LABEL``. Prints ``LABEL``, then microseconds per
``step_time(..., stack="megatron-core")`` call (minimum over 9 repeats of 300 calls) for DeepSeek-V3's own run
(2,048 H800) and NVIDIA's Llama 3.1 70B FP8 recipe on 64 H100: first the same call repeated (from November 2026
the layer's operator times are remembered between such calls, ``parallelism._LAYERS``), then the same call with
that memory emptied before each call (what a call that changes the micro-batch, TP, CP or recomputation costs).
"""

import sys
import time

from atscale import parallelism, runs
from atscale.parallelism import step_time

RUNS = ("DeepSeek-V3, 2,048 H800, FP8", "Llama 3.1 70B, 64 H100, FP8")


def call(run, fresh=False):
    kw = dict(optimizer_name=run.optimizer_name, seq_length=run.seq_length, dtype=run.dtype, memory_check=False,
              stack="megatron-core")
    layers = getattr(parallelism, "_LAYERS", {})  # absent before the layer times were remembered
    if fresh:
        return lambda: (layers.clear(), step_time(run.model, run.cluster, run.plan, **kw))
    return lambda: step_time(run.model, run.cluster, run.plan, **kw)


def per_call_us(fn, calls=300, repeat=9):
    fn()
    best = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best.append((time.perf_counter() - start) / calls)
    return min(best) * 1e6


if __name__ == "__main__":
    by_label = {r.label: r for r in runs.ALL_RUNS}
    print(sys.argv[1] if len(sys.argv) > 1 else "", *(f"{per_call_us(call(by_label[k], fresh)):.0f}"
                                                      for fresh in (False, True) for k in RUNS))
