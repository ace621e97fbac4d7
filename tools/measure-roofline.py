#!/usr/bin/env python3
"""Measure the roofline of one CUDA GPU: its memory roof, its matmul ceiling, and a GEMM sweep.

This is the book's measurement script for the roofline chapter. It needs a machine with an
NVIDIA GPU, PyTorch with CUDA, and (optionally) ``nvidia-smi``; it does not import ``atscale``
and needs nothing else. Run it from the repository root:

    python3 tools/measure-roofline.py --out DIR --passes 5   # ~15 s of measurement on an H200

(the shipped H200 data were taken with ``--passes 5``; the CUDA start-up and the PyTorch import
add a few seconds). To ship a measurement with the library, compress the CSV with ``gzip -n -9``
and copy it and the JSON into ``lib/atscale/data/`` (``atscale.roofline.measured_roofline`` reads
them; ``atscale.roofline.MEASUREMENTS`` maps a catalog accelerator to the files' stem). It
writes, in ``DIR``:

* ``roofline-<gpu>.csv``: one row per timed repetition (the raw data, nothing averaged):
  ``experiment, pass, rep, m, n, k, buffer_bytes, bytes, flops, time_s``.
  ``bytes`` is the traffic the roofline model counts (bytes read + bytes written, each once),
  ``flops`` the arithmetic (``2 m n k`` for a GEMM), ``time_s`` one repetition's time in
  seconds between two CUDA events.
* ``roofline-<gpu>.json``: provenance (GPU, driver, PyTorch, CUDA and cuBLAS versions, device
  properties, the date, the method in words, ``nvidia-smi`` readings of the clocks, power and
  temperature sampled during the run, with the host time of each phase) and the summary the
  script printed.
* ``nvidia-smi-q.txt`` and ``nvidia-smi-samples.csv``: the raw ``nvidia-smi`` output.

Experiments (``experiment`` column), all on one GPU, bf16 unless named:

* ``copy``: ``dst.copy_(src)`` of a contiguous buffer (PyTorch calls the CUDA device-to-device
  memcpy), buffers of 1, 2, 4 and 8 GiB; traffic = 2 x buffer (read + write).
* ``read_bf16`` / ``read_fp32``: ``x.sum()`` over the buffer (a reduction: reads it once, writes
  one value); traffic = buffer. Same buffers, viewed as bf16 or fp32.
* ``write``: ``x.fill_(1)``; traffic = buffer.
* ``gemm_square``: ``torch.mm(A, B, out=C)``, ``m = n = k`` from 1,024 to 16,384, random normal
  bf16 operands (never zeros: they run faster), fp32 accumulation by cuBLAS.
* ``gemm_square_b2b``: the same GEMMs timed back to back, without the L2 flush (sustained).
* ``gemm_sweep``: ``C[m, n] = A[m, k] @ B[k, n]``, ``n = k = 8192``, ``m`` = 1, 2, 4, ... 16,384
  and the midpoints 3 x 2^j (24 ... 12,288); row-major operands; traffic counted as
  ``2 (m k + k n + m n)`` bytes.

Method: a one-second spin-up of large GEMMs first (the GPU idles at low clocks); then three
passes over all experiments (so that drift between passes shows); in each, per point, warm-up
repetitions, then timed ones, each timed by a pair of CUDA events around the operation alone.
Before every timed and warm-up repetition (except ``gemm_square_b2b``) the L2 cache is flushed by
summing a 512 MiB buffer: a read leaves only clean lines in L2, so the timed kernel does not pay
for writing back the flush's data. Nothing is changed on the GPU (clocks, power limit, modes):
it is measured as found. The numbers that matter are medians over repetitions.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

GiB = 1 << 30
MiB = 1 << 20

SMI_FIELDS = ["timestamp", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu", "utilization.gpu",
              "clocks_event_reasons.active"]
SMI_STATIC = ["name", "driver_version", "vbios_version", "memory.total", "clocks.max.sm", "clocks.max.mem",
              "power.limit", "power.max_limit", "pstate", "compute_mode", "persistence_mode", "ecc.mode.current",
              "clocks.applications.graphics", "clocks.applications.memory"]


def smi(args: list[str], timeout: float = 20.0) -> str | None:
    try:
        return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=timeout,
                              check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def smi_static() -> dict:
    out = {}
    for field in SMI_STATIC:  # one query per field: an unknown field fails the whole query
        text = smi([f"--query-gpu={field}", "--format=csv,noheader"])
        out[field] = text.strip().splitlines()[0] if text else None
    return out


def start_sampler(path: str):
    """Sample clocks, power and temperature every 100 ms in the background (None if unavailable)."""
    fields = list(SMI_FIELDS)
    if smi([f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]) is None:
        fields.remove("clocks_event_reasons.active")
        if smi([f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]) is None:
            return None, fields
    f = open(path, "w")
    f.write(",".join(fields) + "\n")
    f.flush()
    try:
        proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                                 "-lms", "100"], stdout=f, stderr=subprocess.DEVNULL)
    except OSError:
        return None, fields
    return proc, fields


def summarise_samples(path: str, phases: list[dict]) -> dict:
    """Median/min/max of each numeric sampled field, overall and per phase (by host time)."""
    try:
        with open(path) as f:
            rows = list(csv.reader(f))
    except OSError:
        return {}
    if len(rows) < 2:
        return {}
    header, rows = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]

    def stamp(text):
        try:
            return dt.datetime.strptime(text.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
        except ValueError:
            return None

    def stats(selected):
        result = {}
        for i, name in enumerate(header):
            if name in ("timestamp", "clocks_event_reasons.active"):
                continue
            values = []
            for r in selected:
                try:
                    values.append(float(r[i]))
                except ValueError:
                    pass
            if values:
                result[name] = {"median": statistics.median(values), "min": min(values), "max": max(values),
                                "samples": len(values)}
        if "clocks_event_reasons.active" in header:
            i = header.index("clocks_event_reasons.active")
            result["clocks_event_reasons.active"] = sorted({r[i].strip() for r in selected})
        return result

    out = {"all": stats(rows)}
    times = [stamp(r[0]) for r in rows]
    for phase in phases:
        selected = [r for r, t in zip(rows, times) if t is not None and phase["start"] <= t <= phase["end"]]
        if selected:
            out[phase["name"]] = stats(selected)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory to write the CSV, JSON and nvidia-smi logs into")
    parser.add_argument("--passes", type=int, default=3, help="passes over all experiments (default 3)")
    parser.add_argument("--budget-s", type=float, default=180.0,
                        help="start no new pass after this many seconds (default 180)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: this script measures a GPU", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    slug = re.sub(r"[^a-z0-9]+", "-", props.name.lower()).strip("-")
    t_start = time.time()

    smi_q = smi(["-q"])
    if smi_q:
        with open(os.path.join(args.out, "nvidia-smi-q.txt"), "w") as f:
            f.write(smi_q)
    static = smi_static()
    samples_path = os.path.join(args.out, "nvidia-smi-samples.csv")
    sampler, sampled_fields = start_sampler(samples_path)
    phases: list[dict] = []

    rows: list[dict] = []

    # The L2 flush: read a buffer ~10x the L2 (a sum leaves clean lines only).
    flush_buf = torch.empty(512 * MiB // 4, dtype=torch.float32, device=dev).normal_()

    def flush():
        flush_buf.sum()

    def timed(fn, reps: int, warmup: int, flushed: bool = True) -> list[float]:
        for _ in range(warmup):
            if flushed:
                flush()
            fn()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            if flushed:
                flush()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)]

    def record(experiment, p, times, *, m="", n="", k="", buffer_bytes="", traffic, flops):
        for i, t in enumerate(times):
            rows.append(dict(experiment=experiment, **{"pass": p}, rep=i, m=m, n=n, k=k, buffer_bytes=buffer_bytes,
                             bytes=traffic, flops=flops, time_s=f"{t:.9e}"))

    def phase(name, t0):
        phases.append({"name": name, "start": t0, "end": time.time()})

    # ---------------------------------------------------------------- correctness checks
    checks = {}
    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    for (m, n, k) in [(64, 8192, 8192), (1024, 1024, 1024), (1, 8192, 8192)]:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16, generator=gen)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16, generator=gen)
        c = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        torch.mm(a, b, out=c)
        ref = a.double() @ b.double()
        rel = ((c.double() - ref).norm() / ref.norm()).item()
        checks[f"gemm {m}x{n}x{k}"] = {"relative_error_vs_fp64": rel, "all_written": bool(torch.isfinite(c).all())}
        if not (rel < 1e-2 and torch.isfinite(c).all()):
            print(f"GEMM check failed for {m}x{n}x{k}: relative error {rel}", file=sys.stderr)
            return 3
    src = torch.randn(1 << 20, device=dev, dtype=torch.bfloat16, generator=gen)
    dst = torch.full_like(src, float("nan"))
    dst.copy_(src)
    checks["copy"] = {"equal": bool(torch.equal(dst, src))}
    del a, b, c, ref, src, dst

    # ---------------------------------------------------------------- operands
    mem_sizes = [1 * GiB, 2 * GiB, 4 * GiB, 8 * GiB]
    big_src = torch.empty(max(mem_sizes), dtype=torch.uint8, device=dev)
    big_src.view(torch.float32).normal_(generator=gen)
    big_dst = torch.empty_like(big_src)
    square_sizes = [1024, 2048, 4096, 6144, 8192, 12288, 16384]
    sq = {}
    for s in square_sizes:
        sq[s] = (torch.randn(s, s, device=dev, dtype=torch.bfloat16, generator=gen),
                 torch.randn(s, s, device=dev, dtype=torch.bfloat16, generator=gen),
                 torch.empty(s, s, device=dev, dtype=torch.bfloat16))
    N = K = 8192
    sweep_m = sorted([2 ** j for j in range(15)] + [3 * 2 ** j for j in range(3, 13)])
    A = torch.randn(max(sweep_m), K, device=dev, dtype=torch.bfloat16, generator=gen)
    B = torch.randn(K, N, device=dev, dtype=torch.bfloat16, generator=gen)
    C = torch.empty(max(sweep_m), N, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize()

    # ---------------------------------------------------------------- spin-up (clocks up)
    t0 = time.time()
    a, b, c = sq[8192]
    while time.time() - t0 < 1.0:
        for _ in range(20):
            torch.mm(a, b, out=c)
        torch.cuda.synchronize()
    phase("spin-up", t0)

    passes_done = 0
    for p in range(args.passes):
        if p and time.time() - t_start > args.budget_s:
            print(f"budget reached: {p} passes done")
            break
        t0 = time.time()
        for size in mem_sizes:
            src, dst = big_src[:size], big_dst[:size]
            record("copy", p, timed(lambda: dst.copy_(src), reps=20, warmup=3), buffer_bytes=size,
                   traffic=2 * size, flops=0)
            xb = src.view(torch.bfloat16)
            record("read_bf16", p, timed(lambda: xb.sum(), reps=20, warmup=3), buffer_bytes=size,
                   traffic=size, flops=size // 2)
            xf = src.view(torch.float32)
            record("read_fp32", p, timed(lambda: xf.sum(), reps=20, warmup=3), buffer_bytes=size,
                   traffic=size, flops=size // 4)
            xw = dst.view(torch.bfloat16)
            record("write", p, timed(lambda: xw.fill_(1.0), reps=20, warmup=3), buffer_bytes=size,
                   traffic=size, flops=0)
        phase(f"memory pass {p}", t0)

        t0 = time.time()
        for s in square_sizes:
            a, b, c = sq[s]
            fn = lambda: torch.mm(a, b, out=c)  # noqa: E731
            traffic, flops = 3 * s * s * 2, 2 * s ** 3
            record("gemm_square", p, timed(fn, reps=20, warmup=5), m=s, n=s, k=s, traffic=traffic, flops=flops)
            record("gemm_square_b2b", p, timed(fn, reps=20, warmup=5, flushed=False), m=s, n=s, k=s,
                   traffic=traffic, flops=flops)
        phase(f"square pass {p}", t0)

        t0 = time.time()
        for m in sweep_m:
            a, c = A[:m], C[:m]
            record("gemm_sweep", p, timed(lambda: torch.mm(a, B, out=c), reps=30, warmup=5), m=m, n=N, k=K,
                   traffic=2 * (m * K + K * N + m * N), flops=2 * m * N * K)
        phase(f"sweep pass {p}", t0)
        passes_done += 1

    if sampler is not None:
        time.sleep(0.3)
        sampler.terminate()
        sampler.wait(timeout=10)

    # ---------------------------------------------------------------- write
    base = os.path.join(args.out, f"roofline-{slug}")
    fields = ["experiment", "pass", "rep", "m", "n", "k", "buffer_bytes", "bytes", "flops", "time_s"]
    with open(base + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)

    def med(experiment, key=None):
        """Median over every repetition of every pass, per point."""
        groups: dict = {}
        for r in rows:
            if r["experiment"] == experiment:
                groups.setdefault(r[key] if key else "", []).append(r)
        return {g: (statistics.median(float(r["time_s"]) for r in rs), rs[0]) for g, rs in groups.items()}

    summary = {"memory_bytes_per_s": {}, "gemm_square_flops_per_s": {}, "gemm_sweep": {}}
    for e in ("copy", "read_bf16", "read_fp32", "write"):
        summary["memory_bytes_per_s"][e] = {str(g): r["bytes"] / t for g, (t, r) in med(e, "buffer_bytes").items()}
    for e in ("gemm_square", "gemm_square_b2b"):
        summary["gemm_square_flops_per_s"][e] = {str(g): r["flops"] / t for g, (t, r) in med(e, "m").items()}
    summary["gemm_sweep"] = {str(g): {"time_s": t, "flops_per_s": r["flops"] / t, "bytes_per_s": r["bytes"] / t}
                             for g, (t, r) in med("gemm_sweep", "m").items()}

    try:
        from importlib.metadata import version
        cublas = next((version(n) for n in ("nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cublas-cu12")
                       if _has(version, n)), None)
    except Exception:  # noqa: BLE001 - provenance only
        cublas = None
    meta = {
        "gpu": props.name,
        "file_stem": f"roofline-{slug}",
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "script": "tools/measure-roofline.py",
        "device_properties": {
            "name": props.name, "compute_capability": f"{props.major}.{props.minor}",
            "multi_processor_count": props.multi_processor_count, "total_memory_bytes": props.total_memory,
            "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        },
        "software": {
            "python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "cublas_wheel": cublas,
            "allow_bf16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "platform": platform.platform(),
        },
        "nvidia_smi": static,
        "nvidia_smi_sampled_fields": sampled_fields if sampler is not None else None,
        "nvidia_smi_during_run": summarise_samples(samples_path, phases) if sampler is not None else None,
        "phases_host_time": phases,
        "checks": checks,
        "passes": passes_done,
        "method": {
            "timing": "CUDA events (torch.cuda.Event) around the operation alone; one row per timed repetition",
            "repetitions": {"memory": "3 warm-up + 20 timed per point per pass",
                            "gemm_square": "5 warm-up + 20 timed per point per pass",
                            "gemm_sweep": "5 warm-up + 30 timed per point per pass"},
            "l2_flush": "sum of a 512 MiB fp32 buffer before every warm-up and timed repetition "
                        "(not for gemm_square_b2b)",
            "spin_up": "1 s of 8192^3 bf16 GEMMs before the first pass",
            "operands": "random normal (torch.randn), seed 0; bf16 GEMMs with cuBLAS's default fp32 accumulation",
            "layout": "row-major A[m,k], B[k,n], C[m,n]; torch.mm(A, B, out=C)",
            "traffic": "copy: 2 x buffer; read/write: buffer; GEMM: 2 (mk + kn + mn) bytes (each operand once)",
            "gpu_settings": "unchanged (clocks, power limit and modes as found)",
        },
        "elapsed_s": time.time() - t_start,
        "summary_as_printed": summary,
    }
    with open(base + ".json", "w") as f:
        json.dump(meta, f, indent=1, default=str)

    # ---------------------------------------------------------------- print
    print(f"{props.name}, torch {torch.__version__}, CUDA {torch.version.cuda}, driver {static.get('driver_version')}")
    for e, d in summary["memory_bytes_per_s"].items():
        print(f"{e:10s} " + "  ".join(f"{int(g) / GiB:.0f} GiB: {bw / 1e12:.3f} TB/s" for g, bw in d.items()))
    for e, d in summary["gemm_square_flops_per_s"].items():
        print(f"{e:16s} " + "  ".join(f"{g}: {fl / 1e12:.1f}" for g, fl in d.items()) + " TFLOP/s")
    print("sweep n = k = 8192:   m   time(us)   TFLOP/s   TB/s")
    for g, d in summary["gemm_sweep"].items():
        print(f"{int(g):>26d} {d['time_s'] * 1e6:10.2f} {d['flops_per_s'] / 1e12:9.1f} {d['bytes_per_s'] / 1e12:6.3f}")
    print(f"passes {passes_done}, elapsed {time.time() - t_start:.1f} s; wrote {base}.csv and .json")
    return 0


def _has(version, name) -> bool:
    try:
        version(name)
        return True
    except Exception:  # noqa: BLE001
        return False


if __name__ == "__main__":
    sys.exit(main())
