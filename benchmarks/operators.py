"""Speed of the operator-level step time (``step_time(..., stack=...)``) against the calibrated curve's.

Run: ``PYTHONPATH=benchmarks .venv/bin/python benchmarks/operators.py`` from the repository root. Prints, for the
running example (Llama 3 70B on 1,024 H100, TP 8, PP 4, ZeRO-1, 8,192 tokens): one warm ``step_time`` per model
(minimum over 5 repeats of the median of 2,000 calls), one ``layer_operators`` table, and a vectorised ``search``
of every layout on 1,024 GPUs against a loop of scalar calls over a seeded sample of the same layouts; then one warm
mixture-of-experts ``step_time`` (DeepSeek-V3's own run, and Qwen3-235B-A22B's cross-node layout) per model (issue
32's target: at most 200 us).
"""

import statistics
import time

import numpy as np

from atscale import operators, parallelism as P, runs as R, search as S
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX


def per_call_us(fn, calls=2000, repeat=5):
    best = []
    for _ in range(repeat):
        samples = []
        for _ in range(calls // 100):
            start = time.perf_counter()
            for _ in range(100):
                fn()
            samples.append((time.perf_counter() - start) / 100)
        best.append(statistics.median(samples))
    return min(best) * 1e6


def main():
    for stack in (None, *operators.STACK_NAMES):
        us = per_call_us(lambda: P.step_time(EX.model, EX.cluster, EX.plan, stack=stack))
        print(f"step_time, stack={stack!s:14s}: {us:6.1f} us per call (warm)")
    us = per_call_us(lambda: operators.layer_operators(EX.model, tp=8), calls=500)
    print(f"layer_operators (Llama 3 70B, TP 8): {us:6.1f} us per call")
    for stack in (None, "megatron-core"):
        start = time.perf_counter()
        r = S.search(EX.model, EX.cluster, 1024, stack=stack)
        sweep = time.perf_counter() - start
        n = len(r.table["tp"])
        rng = np.random.default_rng(0)
        idx = rng.choice(n, size=300, replace=False)
        t = r.table
        plans = []
        for i in idx:
            try:
                plans.append(Plan(tp=int(t["tp"][i]), cp=int(t["cp"][i]), pp=int(t["pp"][i]), dp=int(t["dp"][i]),
                                  micro_batch=int(t["micro_batch"][i]), global_batch=1024,
                                  zero_stage=int(t["zero_stage"][i]), schedule=str(t["schedule"][i]),
                                  virtual_stages=int(t["virtual_stages"][i]), recompute=str(t["recompute"][i]),
                                  sequence_parallel=bool(t["sequence_parallel"][i])))
            except ValueError:  # a layout the search lists as infeasible that a Plan refuses outright
                pass
        start = time.perf_counter()
        for plan in plans:
            try:
                P.step_time(EX.model, EX.cluster, plan, stack=stack)
            except ValueError:
                pass
        loop = (time.perf_counter() - start) / len(plans)
        print(f"search, stack={stack!s:14s}: {n:,} layouts in {sweep:.2f} s ({n / sweep:,.0f}/s); loop of scalar "
              f"calls {1 / loop:,.0f}/s; {loop * n / sweep:,.0f}x")


def moe():
    for label in ("DeepSeek-V3, 2,048 H800, FP8", "Qwen3-235B-A22B, 256 H100, BF16"):
        r = next(x for x in R.MOE_RUNS if x.label == label)
        for operators_ in (False, True):
            us = per_call_us(lambda: r.step(operators=operators_))
            print(f"MoE step_time, {label}, {'operators' if operators_ else 'curve'}: {us:6.1f} us per call (warm)")


if __name__ == "__main__":
    main()
    moe()
