"""Every benchmark of benchmarks/README.md in one run, side by side with the closest peer, mlsysim.

Run (from the repository root; the one command that reproduces the README):

    python3 benchmarks/run_all.py

The first run creates a separate benchmark environment, ``_build/bench-env`` (a virtual environment
holding this repository's ``atscale``, editable, and ``mlsysim==0.3.0``, the Machine Learning Systems
book's library, pinned; mlsysim is never a dependency of the project), and re-runs itself inside it, so
both libraries are timed by the same interpreter and the same NumPy. The book build and the test run
use the project's own environment (``.venv``), as a contributor runs them.

Measured, in this order:

1. ``import`` time: a fresh interpreter per run, the import alone timed inside it (and the whole process
   from outside), median of ``--import-runs`` runs;
2. one reliability evaluation per call (cluster MTBF, checkpoint interval, goodput) and one distributed
   step-time evaluation per call (Llama 3 70B, 1,024 H100, TP 8, PP 4), median of many calls;
3. the sweep: every 3D layout ``parallelism.search`` enumerates for Llama 3 70B at every power-of-two GPU
   count from 8 to 16,384, atscale vectorised against a loop of ``DistributedModel.solve`` calls on a
   seeded random sample of the same layouts, as configurations per second;
4. each chapter's explorer redraw (compute + render), median and 95th percentile;
5. the full book build (``bash tools/build-book``) and the full test run (``pytest``), wall-clock.

Options: ``--skip-tests`` leaves out the full test run (it takes minutes and builds the book again);
``--json FILE`` writes every figure to FILE as well (default ``_build/benchmarks.json``).
Prints timings; the README quotes them. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = ROOT / "_build" / "bench-env"
ENV_PY = ENV / "bin" / "python"
PEER = "mlsysim==0.3.0"
TARGETS = {"import": 20.0, "sweep": 100.0, "redraw_median_ms": 100.0, "redraw_p95_ms": 150.0, "book_build_s": 300.0,
           "step_time_ms": 0.060, "step_time_ratio": 40.0, "collective_ms": 0.005, "jct_ms": 0.100}


def ensure_env():
    """Create the benchmark environment if needed and re-execute this script inside it."""
    if Path(sys.prefix).resolve() == ENV.resolve():
        return
    if not ENV_PY.exists():
        print(f"creating {ENV.relative_to(ROOT)} ({PEER} and atscale, editable) ...", flush=True)
        subprocess.check_call([sys.executable, "-m", "venv", str(ENV)])
        subprocess.check_call([str(ENV_PY), "-m", "pip", "install", "--quiet", PEER, "-e", str(ROOT)])
    os.execv(str(ENV_PY), [str(ENV_PY), *sys.argv])


def pct(samples, q):
    """The ``q``-th percentile (0-100) of ``samples``, linear interpolation."""
    s = sorted(samples)
    k = (len(s) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def per_call_ms(fn, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples), pct(samples, 95)


def paired_ms(ours, peer, repeat, warmup=3):
    """Median ms per call of ``ours`` and ``peer``, called in turn (A B A B ...), and the median of the
    pairwise ratios peer / ours: pairing keeps the ratio meaningful when the machine's load drifts."""
    for _ in range(warmup):
        ours(), peer()
    a, b = [], []
    for _ in range(repeat):
        for fn, out in ((ours, a), (peer, b)):
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1e3)
    return {"atscale_ms": statistics.median(a), "atscale_p95_ms": pct(a, 95), "mlsysim_ms": statistics.median(b),
            "mlsysim_p95_ms": pct(b, 95), "ratio": statistics.median(y / x for x, y in zip(a, b))}


def paired_blocks_ms(ours, peer, rounds, block_ours=100, block_peer=5, warmup=3):
    """Warm per-call ms: each round times ``block_ours`` consecutive calls of ``ours``, then ``block_peer`` of
    ``peer`` (rounds alternate, so a drift of the machine's load hits both alike); medians of the per-call
    times and of the per-round ratios. A call in a loop (a sweep, a JCT estimate, an exercise check) runs warm;
    :func:`paired_ms` alternates single calls, so each of ours runs right after the peer's 2 ms call has
    evicted it from the CPU's caches (cold)."""
    for _ in range(warmup):
        ours(), peer()
    a, b = [], []
    for _ in range(rounds):
        for fn, n, out in ((ours, block_ours, a), (peer, block_peer, b)):
            t = time.perf_counter()
            for _ in range(n):
                fn()
            out.append((time.perf_counter() - t) * 1e3 / n)
    return {"atscale_ms": statistics.median(a), "mlsysim_ms": statistics.median(b),
            "ratio": statistics.median(y / x for x, y in zip(a, b))}


# --------------------------------------------------------------------------------------------------
# 1. import time
# --------------------------------------------------------------------------------------------------
def _import_once(statement):
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1]), time.perf_counter() - t


def import_times(statements, runs):
    """For each of ``statements`` (name -> code), seconds in a fresh interpreter, the statements run in
    turn within each round (so that a change of the machine's load hits all of them alike); the first
    round warms the file cache and is dropped. Returns name -> per-round lists of (import alone, whole
    process)."""
    rounds = {k: [] for k in statements}
    for i in range(runs + 1):
        for name, stmt in statements.items():
            r = _import_once(stmt)
            if i:
                rounds[name].append(r)
    return rounds


# --------------------------------------------------------------------------------------------------
# 2. one evaluation per call
# --------------------------------------------------------------------------------------------------
def peer_fleet(gpus):
    from mlsysim import Systems
    from mlsysim.systems.types import Fleet

    return Fleet(name=f"{gpus}", node=Systems.Nodes.DGX_H100, count=gpus // 8, fabric=Systems.Fabrics.InfiniBand_NDR)


def reliability_calls(repeat):
    from atscale import reliability as rel
    from atscale import units as u
    from mlsysim.engine.solvers.reliability import ReliabilityModel

    def ours():  # the same quantities the peer's solve returns: MTBF, P(failure), interval, failures, goodput
        m = rel.TEXTBOOK_PROFILE.cluster_mtbf(1024)
        rel.failure_probability(30 * u.day, m)
        tau = rel.young_interval(60.0, m)
        rel.expected_failures(30 * u.day, m)
        rel.goodput_exact(tau, 60.0, m, 300.0)

    fleet, solver = peer_fleet(1024), ReliabilityModel()
    peer = lambda: solver.solve(fleet, job_duration_hours=720.0, checkpoint_time_s=60.0, avg_recovery_time_s=300.0)  # noqa: E731
    return paired_ms(ours, peer, repeat)


def step_time_calls(repeat):
    from atscale import hardware, models, parallelism
    from atscale.plan import Plan
    from mlsysim import Models
    from mlsysim.engine.solvers.distributed import DistributedModel

    cluster = hardware.Cluster.of_gpus(hardware.DGX_H100, 1024, hardware.FABRICS["InfiniBand NDR"])
    plan = Plan(tp=8, pp=4, dp=32, micro_batch=1, global_batch=1024, zero_stage=1)
    ours = lambda: parallelism.step_time(models.LLAMA3_70B, cluster, plan, seq_length=8192)  # noqa: E731
    model, fleet, solver = Models.Language.Llama3_70B, peer_fleet(1024), DistributedModel()
    peer = lambda: solver.solve(model=model, fleet=fleet, batch_size=1024, precision="fp16", tp_size=8,  # noqa: E731
                                pp_size=4, microbatch_count=32, zero_stage=1, seq_len=8192)
    return {**paired_ms(ours, peer, repeat), "warm": paired_blocks_ms(ours, peer, max(20, repeat // 4))}


def collective_calls(repeat):
    """One ``collective_time`` (a 1 GB all-reduce over 32 ranks on InfiniBand NDR), atscale alone: the peer has
    no function that prices a single collective."""
    from atscale import collectives

    fn = lambda: collectives.collective_time("all-reduce", 1e9, 32, "InfiniBand NDR")  # noqa: E731
    median, p95 = per_call_ms(fn, repeat)
    return {"atscale_ms": median, "atscale_p95_ms": p95}


def jct_calls(repeat):
    """One JCT estimate for a fixed layout (Llama 3 70B, 2T tokens, the running example's 1,024 H100s and
    layout, synchronous checkpoints, the textbook failure profile), atscale alone: the peer has no such call."""
    from atscale import jct
    from atscale.scenario import RUNNING_EXAMPLE as ex

    fn = lambda: jct.estimate(ex.model, 2e12, ex.cluster, ex.plan, seq_length=ex.seq_length)  # noqa: E731
    median, p95 = per_call_ms(fn, repeat)
    return {"atscale_ms": median, "atscale_p95_ms": p95}


def step_time_profile(calls=2000, top=8):
    """Where one scalar ``step_time`` spends its time: cProfile over ``calls`` evaluations, the functions with
    the most time of their own (the profiler slows every call; the shares are what matter)."""
    import cProfile
    import pstats

    from atscale import hardware, models, parallelism
    from atscale.plan import Plan

    cluster = hardware.Cluster.of_gpus(hardware.DGX_H100, 1024, hardware.FABRICS["InfiniBand NDR"])
    plan = Plan(tp=8, pp=4, dp=32, micro_batch=1, global_batch=1024, zero_stage=1)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        parallelism.step_time(models.LLAMA3_70B, cluster, plan, seq_length=8192)
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values())
    rows = sorted(((v[2], f"{Path(k[0]).name}:{k[2]}", v[1]) for k, v in stats.items()), reverse=True)[:top]
    return [{"function": name, "share": own / total, "calls_per_evaluation": n / calls} for own, name, n in rows]


# --------------------------------------------------------------------------------------------------
# 3. the sweep
# --------------------------------------------------------------------------------------------------
SWEEP_GPUS = [2**k for k in range(3, 15)]  # 8 ... 16,384
SWEEP_BATCH = 2048  # sequences of 8,192 tokens: 16M tokens per step, as Llama 3's pre-training


def sweep(peer_sample, seed=0):
    from atscale import hardware, models, parallelism
    from mlsysim import Models
    from mlsysim.engine.solvers.distributed import DistributedModel

    clusters = {n: hardware.Cluster.of_gpus(hardware.DGX_H100, n, hardware.FABRICS["InfiniBand NDR"])
                for n in SWEEP_GPUS}
    run = lambda: [parallelism.search(models.LLAMA3_70B, clusters[n], SWEEP_BATCH, seq_length=8192)  # noqa: E731
                   for n in SWEEP_GPUS]
    results = run()  # warm-up; also the layouts the peer is given
    times = []
    for _ in range(3):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    ours_s = statistics.median(times)
    layouts = [(n, {k: r.table[k][i] for k in ("tp", "pp", "dp", "micro_batch", "zero_stage", "schedule",
                                               "virtual_stages", "recompute")})
               for n, r in zip(SWEEP_GPUS, results) for i in range(len(r))]
    total = len(layouts)
    sample = random.Random(seed).sample(layouts, min(peer_sample, total))
    model, solver = Models.Language.Llama3_70B, DistributedModel()
    fleets = {n: peer_fleet(n) for n in SWEEP_GPUS}
    errors = 0
    warnings.simplefilter("ignore")  # the peer warns about idle ranks; printing is not part of its evaluation
    t = time.perf_counter()
    for n, c in sample:
        try:
            solver.solve(model=model, fleet=fleets[n], batch_size=SWEEP_BATCH, precision="fp16",
                         tp_size=int(c["tp"]), pp_size=int(c["pp"]),
                         v_stages=int(c["virtual_stages"]) if c["schedule"] == "interleaved" else 1,
                         microbatch_count=max(1, SWEEP_BATCH // (int(c["dp"]) * int(c["micro_batch"]))),
                         zero_stage=int(c["zero_stage"]), activation_recomputation=c["recompute"] != "none",
                         seq_len=8192)
        except Exception:  # noqa: BLE001  (the peer refuses some layouts; the refusal is its evaluation)
            errors += 1
    peer_s = time.perf_counter() - t
    return {"layouts": total, "feasible": int(sum(r.feasible_count for r in results)), "ours_s": ours_s,
            "ours_per_s": total / ours_s, "peer_sample": len(sample), "peer_refused": errors, "peer_s": peer_s,
            "peer_per_s": len(sample) / peer_s}


# --------------------------------------------------------------------------------------------------
# 4. explorer redraws
# --------------------------------------------------------------------------------------------------
EXPLORERS = [  # chapter, explorer, control, values cycled (each change is one compute + render)
    ("Hardware catalog", "catalog_explorer", "dtype", ["fp8", "bf16", "fp64", "tf32"]),
    ("Roofline", "roofline_explorer", "kind", ["matmul (square)", "layer norm", "attention (fused)", "Adam update"]),
    ("Memory", "memory_explorer", "micro_batch", [1, 2, 4, 8]),
    ("Collectives", "ring_explorer", "step", [1, 2, 3, 4, 5, 0]),
    ("Collectives", "collective_cost_explorer", "link", ["InfiniBand NDR", "NVLink 3", "NVLink 4", "RoCE 400G"]),
    ("3D parallelism", "plan_explorer", "micro_batch", [1, 2, 4, 8]),
    ("3D parallelism", "pipeline_explorer", "micro_batches", [8, 16, 32, 12]),
    ("3D parallelism", "rank_map_explorer", "colour_by", ["tp", "dp", "pp"]),
    ("3D parallelism", "rank_map_explorer", "order", ["tp-cp-pp-dp", "tp-cp-dp-pp"]),
    ("3D parallelism", "rank_map_explorer", "network", ["RoCE 400G (Llama 3 cluster)", "InfiniBand NDR (DGX SuperPOD)",
                                                         "InfiniBand NDR"]),
    ("Reliability", "u_curve_explorer", "gpus", [512, 1024, 2048, 64]),
    ("Reliability", "timeline_explorer", "interval_hours", [0.5, 1.0, 2.0, 4.0]),
    ("Mixtures of experts", "moe_explorer", "ep", [64, 32, 16, 128]),
    ("Mixtures of experts", "moe_explorer", "a2a_overlap", [False, True]),
    ("Job completion time", "jct_explorer", "gpus", [512, 1024, 2048, 256]),
]


def redraws(repeat):
    from atscale import widgets

    out = []
    for chapter, name, control, values in EXPLORERS:
        factory = getattr(widgets, name, None)
        if factory is None:  # a chapter not in this checkout
            continue
        ex = factory()
        vals = iter(values * (repeat // len(values) + 3))
        for _ in range(len(values)):  # warm-up: each value once
            ex.update(**{control: next(vals)})
        wall_ms, cpu_ms = [], []
        for _ in range(repeat):
            t, c = time.perf_counter(), time.process_time()
            ex.update(**{control: next(vals)})
            wall_ms.append((time.perf_counter() - t) * 1e3)
            cpu_ms.append((time.process_time() - c) * 1e3)
        out.append({"chapter": chapter, "explorer": name, "control": control, "median_ms": statistics.median(wall_ms),
                    "p95_ms": pct(wall_ms, 95), "cpu_median_ms": statistics.median(cpu_ms),
                    "cpu_p95_ms": pct(cpu_ms, 95), "error": ex.error})
    return out


# --------------------------------------------------------------------------------------------------
# 5. book build and test run
# --------------------------------------------------------------------------------------------------
def project_env():
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env.get('PATH', '')}"
    env.pop("PYTHONHOME", None)
    return env


def wall(cmd, log):
    """Wall-clock seconds of ``cmd`` in the project's environment; its output goes to ``_build/<log>``."""
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=project_env(), capture_output=True, text=True)
    seconds = time.perf_counter() - t
    (ROOT / "_build" / log).write_text(p.stdout + p.stderr)
    tail = (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]
    return {"seconds": seconds, "rc": p.returncode, "last_line": tail[0], "log": f"_build/{log}"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-tests", action="store_true", help="leave out the full test run")
    ap.add_argument("--import-runs", type=int, default=11)
    ap.add_argument("--calls", type=int, default=200, help="calls per one-evaluation benchmark")
    ap.add_argument("--peer-sample", type=int, default=2000, help="layouts the peer evaluates in the sweep")
    ap.add_argument("--redraws", type=int, default=40, help="redraws per explorer")
    ap.add_argument("--json", default=str(ROOT / "_build" / "benchmarks.json"))
    args = ap.parse_args()
    ensure_env()

    import matplotlib
    import mlsysim
    import numpy

    import atscale

    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_average_at_start": os.getloadavg(),
           "machine": {
        "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
                    platform.processor()),
        "cores": os.cpu_count(), "python": platform.python_version(), "numpy": numpy.__version__,
        "matplotlib": matplotlib.__version__, "atscale": atscale.__version__, "mlsysim": mlsysim.__version__}}
    print(json.dumps(res, indent=1), flush=True)

    stmts = {"python (nothing)": "pass", "atscale": "import atscale",
             "atscale + chapters": "import atscale.parallelism, atscale.reliability, atscale.collectives, "
                                   "atscale.memory, atscale.roofline",
             "atscale + plots + widgets": "import atscale.plots, atscale.widgets", "mlsysim": "import mlsysim"}
    rounds = import_times(stmts, args.import_runs)
    imp = {}
    for key, rs in rounds.items():
        if key == "python (nothing)":  # the interpreter alone: a floor, not a library
            imp[key] = {"import_s": statistics.median(r[0] for r in rs), "process_s": statistics.median(r[1] for r in rs)}
            print(f"python alone: process {imp[key]['process_s'] * 1e3:.0f} ms", flush=True)
            continue
        imp[key] = {"import_s": statistics.median(r[0] for r in rs), "process_s": statistics.median(r[1] for r in rs),
                    "peer_ratio": statistics.median(p[0] / r[0] for p, r in zip(rounds["mlsysim"], rs)),
                    "peer_process_ratio": statistics.median(p[1] / r[1] for p, r in zip(rounds["mlsysim"], rs))}
        print(f"import {key}: {imp[key]['import_s'] * 1e3:.0f} ms (process {imp[key]['process_s'] * 1e3:.0f} ms); "
              f"mlsysim / this, paired: {imp[key]['peer_ratio']:.1f}x", flush=True)
    res["import"] = imp

    res["reliability"], res["step_time"] = reliability_calls(args.calls), step_time_calls(args.calls)
    res["collective"], res["jct"] = collective_calls(args.calls * 5), jct_calls(args.calls)
    res["step_time_profile"] = step_time_profile()
    print("reliability, per call:", res["reliability"], flush=True)
    print("step time, per call:", res["step_time"], flush=True)
    print("collective time, per call:", res["collective"], flush=True)
    print("JCT estimate, per call:", res["jct"], flush=True)
    print("one step-time evaluation, by function (own time):", flush=True)
    for row in res["step_time_profile"]:
        print(f"  {row['share']:6.1%}  {row['function']}  ({row['calls_per_evaluation']:g} calls)", flush=True)

    res["sweep"] = sweep(args.peer_sample)
    print("sweep:", res["sweep"], flush=True)

    res["redraws"] = redraws(args.redraws)
    for r in res["redraws"]:
        print(f"redraw {r['explorer']}: median {r['median_ms']:.0f} ms, p95 {r['p95_ms']:.0f} ms "
              f"(CPU time {r['cpu_median_ms']:.0f} / {r['cpu_p95_ms']:.0f} ms)", flush=True)

    res["book_build"] = wall(["bash", "tools/build-book"], "benchmarks-build-book.log")
    print("book build:", res["book_build"], flush=True)
    if not args.skip_tests:
        res["tests"] = wall([str(ROOT / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-rf"],
                            "benchmarks-pytest.log")
        print("tests:", res["tests"], flush=True)

    res["load_average_at_end"] = os.getloadavg()
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(res, indent=1))
    print(summary(res))


def summary(res):
    """The README's table, from the figures of this run."""
    imp = res["import"]
    ratio_imp = imp["atscale"]["peer_ratio"]
    ratio_imp_all = imp["atscale + plots + widgets"]["peer_ratio"]
    rel, st, sw = res["reliability"], res["step_time"], res["sweep"]
    lines = [
        "| What | atscale | mlsysim 0.3.0 | ratio (peer / atscale) | target |",
        "|---|---|---|---|---|",
        f"| `import atscale` (fresh process, median) | {imp['atscale']['import_s'] * 1e3:.0f} ms | "
        f"{imp['mlsysim']['import_s'] * 1e3:.0f} ms | {ratio_imp:.1f}× | ≥ 20× "
        f"{'met' if ratio_imp >= TARGETS['import'] else 'MISSED'} |",
        f"| `import atscale` + the chapter modules | {imp['atscale + chapters']['import_s'] * 1e3:.0f} ms | "
        f"{imp['mlsysim']['import_s'] * 1e3:.0f} ms | {imp['atscale + chapters']['peer_ratio']:.1f}× | — |",
        f"| import with every chapter, plots and widgets | {imp['atscale + plots + widgets']['import_s'] * 1e3:.0f} ms "
        f"| {imp['mlsysim']['import_s'] * 1e3:.0f} ms | {ratio_imp_all:.1f}× | — |",
        f"| one reliability evaluation (median per call) | {rel['atscale_ms'] * 1e3:.0f} µs | "
        f"{rel['mlsysim_ms'] * 1e3:.0f} µs | {rel['ratio']:.1f}× | — |",
        f"| one distributed step-time evaluation, warm (calls in a loop, median per call) | "
        f"{st['warm']['atscale_ms'] * 1e3:.0f} µs | {st['warm']['mlsysim_ms'] * 1e3:,.0f} µs | "
        f"{st['warm']['ratio']:.1f}× | ≤ 60 µs and ≥ 40× "
        f"{'met' if st['warm']['atscale_ms'] <= TARGETS['step_time_ms'] and st['warm']['ratio'] >= TARGETS['step_time_ratio'] else 'MISSED'} |",
        f"| one distributed step-time evaluation, cold (single calls alternating with the peer's) | "
        f"{st['atscale_ms'] * 1e3:.0f} µs | {st['mlsysim_ms'] * 1e3:,.0f} µs | {st['ratio']:.1f}× | ≤ 60 µs and ≥ 40× "
        f"{'met' if st['atscale_ms'] <= TARGETS['step_time_ms'] and st['ratio'] >= TARGETS['step_time_ratio'] else 'MISSED'} |",
        f"| one `collective_time` (median per call) | {res['collective']['atscale_ms'] * 1e3:.1f} µs | — | — | ≤ 5 µs "
        f"{'met' if res['collective']['atscale_ms'] <= TARGETS['collective_ms'] else 'MISSED'} |",
        f"| one JCT estimate, fixed layout (median per call) | {res['jct']['atscale_ms'] * 1e3:.0f} µs | — | — | "
        f"≤ 100 µs {'met' if res['jct']['atscale_ms'] <= TARGETS['jct_ms'] else 'MISSED'} |",
        f"| sweep, every layout of Llama 3 70B, 8 to 16,384 GPUs | {sw['ours_per_s']:,.0f} /s "
        f"({sw['layouts']:,} in {sw['ours_s']:.2f} s) | {sw['peer_per_s']:,.0f} /s ({sw['peer_sample']:,}-layout sample) | "
        f"{sw['ours_per_s'] / sw['peer_per_s']:,.0f}× | ≥ 100× "
        f"{'met' if sw['ours_per_s'] / sw['peer_per_s'] >= TARGETS['sweep'] else 'MISSED'} |",
    ]
    for r in res["redraws"]:
        ok = r["median_ms"] < TARGETS["redraw_median_ms"] and r["p95_ms"] < TARGETS["redraw_p95_ms"]
        lines.append(f"| redraw: {r['chapter']}, `{r['explorer']}` (median / p95; CPU time) | {r['median_ms']:.0f} / "
                     f"{r['p95_ms']:.0f} ms; CPU {r['cpu_median_ms']:.0f} / {r['cpu_p95_ms']:.0f} ms | — | — | "
                     f"< 100 / < 150 ms {'met' if ok else 'MISSED'} |")
    b = res["book_build"]
    lines.append(f"| full book build (`bash tools/build-book`, HTML + PDF) | {b['seconds']:.0f} s (exit {b['rc']}) | — | — "
                 f"| < 5 min {'met' if b['seconds'] < TARGETS['book_build_s'] and b['rc'] == 0 else 'MISSED'} |")
    if "tests" in res:
        t = res["tests"]
        lines.append(f"| full test run (`pytest`) | {t['seconds']:.0f} s (exit {t['rc']}: {t['last_line']}) | — | — | — |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
