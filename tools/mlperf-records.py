#!/usr/bin/env python3
"""Write ``lib/atscale/data/runs/mlperf.json``: the H100 and H200 submissions on NVIDIA's NeMo to MLPerf Training's two
pretraining benchmarks as published-run records, each step time read from the submission's own result logs: GPT-3
175B (v3.1, v4.0 and v4.1) and Llama 3.1 405B (v5.0: NVIDIA's on H100 and on GB200 NVL72, Nebius's on H200; v5.1:
the University of Florida's on DGX B200).

Each benchmark trains its model from a checkpoint until it reaches a target log perplexity; each result log
(``results/<system>/<benchmark>/result_<i>.txt``, MLCommons' ``:::MLLOG`` lines) times the training in blocks
between evaluations (``block_start`` / ``block_stop``) and states the global batch (``global_batch_size``), the
sequence (``max_sequence_length``) and the gradient accumulation (``gradient_accumulation_steps``). A block's
size is in its metadata: GPT-3's logs give ``epoch_count`` tokens; Llama 3.1's give the ``samples_count`` trained
before the block, so a block holds the samples up to the next block's start (the last one up to ``run_stop``'s
count). The step time of a run is the median over its blocks, the first dropped (it carries the warm-up), of block
seconds over the block's steps (its sequences over the global batch); a submission's is the median over its result
logs. The evaluation between blocks is outside them. The logs of NeMo 25.04 (NVIDIA's GB200 submissions to v5.0)
close only the last block (one ``block_stop``, at the run's end; each later ``block_start`` is logged when the
evaluation before it ends), so their blocks cannot be timed without the evaluations; those logs carry the training
callback's own time of every step instead (``tracked_stats``, ``train_step_time``), and a log's step time is then
the median of it over the steps after the first block (:func:`read_log`). On the 21 v5.0 H100 and H200 logs, which
carry both, the callback's reading is the shorter on every log, by 0.02 to 2.4 % (median 0.2 %): it leaves out
what happens between steps. So the GB200 records' steps may be short by as much, and the model's error on them
high by as much (checked when the GB200 records were added, November 2026).

The layouts (tensor, pipeline, context and virtual pipeline sizes, micro-batch) are the submissions' configuration
files (``benchmarks/<benchmark>/implementations/<impl>/config_DGXH100_*.sh``, ``config_DGXH200_*.sh`` or
``config_GB200_*.sh``, the GPUs per node from its ``DGXNGPU`` (8 where it sets none), with the
``config_common.sh`` and ``conf/custom.yaml`` they read), written out in :data:`SUBMISSIONS` below; the global batch
and the accumulation are the logs' own, and each record checks that the two agree (``dp x micro-batch x
accumulation = global batch``). Where the system description's node count differs from the configuration's
``DGXNNODES`` (the University of Florida ran NVIDIA's 64-node configuration on 32 and 56 nodes), the system
description wins, as the run's environment overrides the file's default, and the same check must hold. v5.1's logs
name the training step at each block's start and stop (``metadata.step``): a block's steps are then the difference.
Run it with local clones of the five MLCommons repositories (nothing is fetched)::

    python3 tools/mlperf-records.py --v3.1 PATH --v4.0 PATH --v4.1 PATH --v5.0 PATH --v5.1 PATH \
        [--out lib/atscale/data/runs/mlperf.json]

It does not import ``atscale``; ``git`` reads the files at each clone's ``HEAD`` (``--rev`` to pin another)."""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPOS = {"3.1": "mlcommons/training_results_v3.1", "4.0": "mlcommons/training_results_v4.0",
         "4.1": "mlcommons/training_results_v4.1", "5.0": "mlcommons/training_results_v5.0",
         "5.1": "mlcommons/training_results_v5.1"}

# (benchmark, round, results directory, implementation directory, configuration file, NeMo release, system, node);
# the layout is read from the configuration file (:func:`layout`)
_DGX = ("DGX H100", "DGXH100")
_NEBIUS = ("HGX H200", "DGXH200")  # the configuration files keep NVIDIA's DGX prefix
_TYCHE = ("GB200 NVL72", "GB200")  # NVIDIA's Tyche: GB200 NVL72 racks, 16 of each rack's 18 compute trays used
_HIPERGATOR = ("HGX B200", "DGXB200")  # the University of Florida's HiPerGator: DGX B200 nodes
SUBMISSIONS = tuple(
    (bench, rnd, results, impl, config, release, system, node)
    for bench, rnd, impl, release, system, (node, prefix), runs in (
        ("gpt3", "3.1", "NVIDIA/benchmarks/gpt3/implementations/pytorch", "NeMo 23.09", "NVIDIA Eos", _DGX, (
            ("eos_n64_ngc23.09_nemo", "64x8x192x4x8_mbs1"), ("eos_n96_ngc23.09_nemo", "96x8x128x4x8_mbs1"),
            ("eos-dfw_n512_ngc23.09_nemo", "512x8x16x4x8_mbs1"), ("eos-dfw_n768_ngc23.09_nemo", "768x8x16x4x8_mbs1"),
            ("eos-dfw_n1024_ngc23.09_nemo", "1024x8x16x4x8_mbs1"),
            ("eos-dfw_n1280_ngc23.09_nemo", "1280x8x8x4x8_mbs1"),
            ("eos-dfw_n1344_ngc23.09_nemo", "1344x8x8x4x8_mbs1"))),
        ("gpt3", "3.1", "Azure+NVIDIA/benchmarks/gpt3/implementations/pytorch", "NeMo 23.09",
         "Microsoft Azure ND H100 v5", _DGX, (("ND_H100_v5_n1344_pytorch", "1344x8x8x4x8_mbs1"),)),
        ("gpt3", "4.0", "NVIDIA/benchmarks/gpt3/implementations/nemo", "NeMo 24.04", "NVIDIA Eos", _DGX, (
            ("eos_n64_ngc24.04_nemo", "64x8x128x4x8_mbs2"), ("eos-dfw_n1344_ngc24.04_nemo", "1344x8x6x4x6_mbs1_cg"),
            ("eos-dfw_n1452_ngc24.04_nemo", "1452x8x6x4x6_mbs1_cg"))),
        ("gpt3", "4.1", "NVIDIA/benchmarks/gpt3/implementations/eos_n32_ngc24.09_nemo", "NeMo 24.09", "NVIDIA Eos",
         _DGX, (("eos_n32_ngc24.09_nemo", "32x8x256x4x8_mbs2"),)),
        ("gpt3", "4.1", "NVIDIA/benchmarks/gpt3/implementations/eos_n64_ngc24.09_nemo", "NeMo 24.09", "NVIDIA Eos",
         _DGX, (("eos_n64_ngc24.09_nemo", "64x8x128x4x8_mbs2"),)),
    ) + tuple(
        ("llama31_405b", "5.0", f"NVIDIA/benchmarks/llama31_405b/implementations/eos-dfw_n{n}_ngc25.01_nemo",
         "NeMo 25.01", "NVIDIA Eos-dfw", _DGX, ((f"eos-dfw_n{n}_ngc25.01_nemo", f"{n}x8x{minibs}xtp8pp8cp2"),))
        for n, minibs in ((64, 288), (256, 72), (304, 64), (320, 56), (1024, 24))
    ) + tuple(
        ("llama31_405b", "5.0", f"Nebius/benchmarks/llama31_405b/implementations/nebius_soperator_8xH200_n{n}"
         "_ngc25.01_nemo", "NeMo 25.01", "Nebius", _NEBIUS,
         ((f"nebius_soperator_8xH200_n{n}_ngc25.01_nemo", f"{n}x8x{minibs}xtp4pp8cp2"),))
        for n, minibs in ((64, 144), (128, 72))
    ) + tuple(
        ("llama31_405b", "5.0", f"NVIDIA/benchmarks/llama31_405b/implementations/tyche_ngpu{g}_ngc25.04_nemo",
         "NeMo 25.04", "NVIDIA Tyche", _TYCHE, ((f"tyche_ngpu{g}_ngc25.04_nemo", config),))
        for g, config in ((256, "64x4x112xtp4pp8cp2_cg"), (512, "128x4x112xtp4pp8cp2_cg_dplast"))
    ) + (
        ("llama31_405b", "5.1", "University-of-Florida/benchmarks/llama31_405b/implementations/b200_nemo",
         "NeMo (PyTorch 25.09 container)", "University of Florida HiPerGator", _HIPERGATOR,
         tuple((f"hpg.dgxb200x8.n{n}", "64x8x144xtp4pp8cp2_cg") for n in (32, 56))),)
    for results, config in ((f"{impl.split('/')[0]}/results/{d}", f"config_{prefix}_{c}.sh") for d, c in runs))

_SETTINGS = {"nodes": "DGXNNODES", "tp": "TENSOR_MODEL_PARALLEL", "pp": "PIPELINE_MODEL_PARALLEL",
             "micro_batch": "MICRO_BATCH_SIZE", "virtual_stages": "INTERLEAVED_PIPELINE"}
# settings a configuration may leave to conf/custom.yaml's default (``${oc.env:NAME,default}``), and the value
# when neither names them (GPT-3's custom.yaml has none of them)
_OPTIONAL = {"cp": ("CONTEXT_PARALLEL", "1"), "gpus_per_node": ("DGXNGPU", "8"),
             "account_for_embedding": ("ASYM_PP_EMBED", "False"),
             "account_for_loss": ("ASYM_PP_LOSS", "False"), "tp_only_amax": ("TP_ONLY_AMAX_RED", "False"),
             "dp_last": ("TP_PP_DP_MAPPING", "False"), "fp8_recipe": ("FP8_RECIPE", "delayed")}
_COUNTS = ("cp", "gpus_per_node")
_WORDS = ("fp8_recipe",)  # settings read as they are written


def _assigned(config: str, name: str) -> str | None:
    """The last value a configuration file assigns to ``name`` (``export NAME=4`` or ``export NAME="${X:=4}"``:
    the default a run takes unless its environment overrides it), or ``None``."""
    values = [line.split("=", 1)[1].split("#")[0].strip() for line in config.splitlines()
              if re.match(rf"\s*export {name}=", line)]
    if not values:
        return None
    inner = re.search(r":=([^}]*)}", values[-1])
    return (inner.group(1) if inner else values[-1]).strip().strip('"')


def layout(config: str, custom_yaml: str) -> dict:
    """The layout a configuration file sets: the last assignment of each setting in it, the virtual pipeline size
    from ``conf/custom.yaml``'s default where the file sets none (``INTERLEAVED_PIPELINE,12``); the context-parallel
    size, the GPUs per node, the pipeline split's embedding and loss slots, the amax reduction inside the
    tensor-parallel group and Megatron-Core's rank order with data parallelism outermost likewise
    (``CONTEXT_PARALLEL``, ``DGXNGPU``, ``ASYM_PP_EMBED``, ``ASYM_PP_LOSS``, ``TP_ONLY_AMAX_RED``,
    ``TP_PP_DP_MAPPING``), 1, 8 or off where neither file names them."""
    out = {}
    for key, name in _SETTINGS.items():
        value = _assigned(config, name)
        numbers = re.findall(r"\d+", value or "")
        if numbers:
            out[key] = int(numbers[-1])
    if "virtual_stages" not in out:
        default = re.search(r"INTERLEAVED_PIPELINE,(\d+)", custom_yaml)
        out["virtual_stages"] = int(default.group(1))
    missing = set(_SETTINGS) - set(out)
    if missing:
        raise SystemExit(f"the configuration sets no {sorted(missing)}")
    flags = {"True": True, "False": False, "1": True, "0": False}
    for key, (name, fallback) in _OPTIONAL.items():
        default = re.search(rf"oc\.env:{name},(\w+)}}", custom_yaml)
        value = _assigned(config, name) or (default.group(1) if default else fallback)
        if key in _WORDS:
            out[key] = value
            continue
        if key not in _COUNTS and value not in flags:
            raise SystemExit(f"{name}={value!r}: not a flag the tool reads (True, False, 1 or 0)")
        out[key] = int(value) if key in _COUNTS else flags[value]
    return out


ASSUMED_GPT3 = (
    "the catalog's GPT-3 175B (Brown et al. 2020), the benchmark's model as conf/custom.yaml sets it (96 layers, "
    "width 12,288, 96 heads, MLP of 4h, 2,048 tokens; its LayerNorm1p modelled as a LayerNorm); FP8 as "
    "config_fp8.sh sets it (Transformer Engine's hybrid format with delayed scaling, amax history 1,024), the "
    "attention core in BF16 through Transformer Engine's default backend on H100 (cuDNN's fused attention); "
    "sequence parallelism, the pipeline's sends overlapped (overlap_p2p_comm) and tensor-parallel communication "
    "overlapped (TP_COMM_OVERLAP, Transformer Engine's userbuffers) as custom.yaml and the configuration set them; "
    "no recomputation (activations_checkpoint_granularity null); the distributed optimizer (distributed_fused_adam, "
    "ZeRO-1) with BF16 gradient reduction (grad_sync_dtype bf16) and overlapped gradient and parameter sync; "
    "DGX H100 nodes on a non-blocking InfiniBand NDR fabric, 400 Gb/s per GPU (the submission's system description: "
    "8 ConnectX-7 NDR per node), as the library's other NVIDIA H100 records. Not modelled: the FP8 weights of "
    "NeMo 24.04 and 24.09 (FP8_PARAMS: the parameter all-gather in FP8), the CUDA graphs of the 10,752- and "
    "11,616-GPU runs of v4.0 (LAYER_CUDA_GRAPH), SHARP's in-network reductions, and the other kernel and "
    "communication tuning of the configuration files (atomic GEMM and reduce-scatter overlap, SM margins); "
    "NeMo 23.09 ran NeMo's own GPT model on Transformer Engine, not Megatron-Core (mcore_gpt is not set in its "
    "custom.yaml), priced with the same preset")


AMAX_TP_ONLY = (
    "; FP8's amax statistics reduced inside each tensor-parallel group only, not across the data-parallel replicas: "
    "config_common.sh sets NVTE_DP_AMAX_REDUCE_INTERVAL=0, which the Transformer Engine revision its Dockerfile "
    "installs (09ba842 and 4ee8e8e) reads as 'AMAX is reduced only in TP domain' (transformer_engine/pytorch/fp8.py); "
    "Transformer Engine removed the switch in release 1.6, which the v4.0 submission installs (v1.6rc1)")


ASSUMED_LLAMA = (
    "the catalog's Llama 3 405B (Llama Team 2024, Table 3), whose architecture Llama 3.1 405B keeps, as the "
    "benchmark's conf/custom.yaml sets it (MODEL_SIZE 405b, 126 layers, 8,192 tokens); FP8 as config_common.sh and "
    "custom.yaml set it (FP8=True, Transformer Engine's delayed scaling, fp8_recipe delayed, amax history 1) with "
    "the attention core in BF16 through Transformer Engine's default backend on H100 (cuDNN's fused attention; "
    "the line that would turn it off, NVTE_FUSED_ATTN=0, is commented out); context parallelism 2 as Transformer "
    "Engine's ring of point-to-point sends (its default; the configuration chooses no other); sequence parallelism "
    "(custom.yaml's SEQ_PARALLEL default), tensor-parallel communication overlapped (TP_COMM_OVERLAP, "
    "MC_TP_OVERLAP_AG, MC_TP_OVERLAP_RS) and the pipeline's sends overlapped (OVERLAP_P2P_COMM's default); the "
    "embedding and the loss each one slot of the pipeline split (ASYM_PP_EMBED, ASYM_PP_LOSS: 126 + 2 = 128 slots = "
    "8 stages x 8 chunks x 2); no recomputation (ACT_CKPT_GRANULARITY unset); the distributed optimizer "
    "(USE_DIST_OPTIMIZER, ZeRO-1) with overlapped gradient reduction and parameter gather and BF16 gradients, as "
    "the GPT-3 records; {hardware}. Not modelled: the FP8 "
    "weights (FP8_PARAMS: the parameter all-gather in FP8), the deferred embedding weight gradient "
    "(DEFER_EMBEDDING_WGRAD_COMPUTE), and the kernel and communication tuning of the configuration files (SM margins "
    "for the norms, NCCL channel and chunk settings)")

HARDWARE = {
    "DGX H100": "DGX H100 nodes on a non-blocking InfiniBand NDR fabric, 400 Gb/s per GPU (the system description: 8 "
                "ConnectX-7 NDR per node), as the library's other NVIDIA H100 records",
    "HGX H200": "HGX H200 nodes (the system description: 8 H200 SXM 141 GB and 8 ConnectX-7 NDR per node, no topology "
                "named) on a non-blocking InfiniBand NDR fabric, 400 Gb/s per GPU; the H200 is the H100's die at its "
                "clocks with more and faster memory, so its kernels are priced as the H100's and its memory-bound "
                "operators at the H200's own bandwidth",
}

HARDWARE["GB200 NVL72"] = (
    "GB200 NVL72 racks (the system description: 'Tyche (4x NVIDIA GB200 NVL72)' for 64 nodes of 4 GPUs, '8x' for "
    "128; one ConnectX-7 NDR, 400 Gb/s, per GPU), taken as 16 of each rack's 18 compute trays, 64 GPUs in one NVLink "
    "domain, the racks joined by a non-blocking InfiniBand NDR fabric (the topology is not described); "
    "the GB200's GEMM rates from its published best-shape matmul rates (Bekman's table) with the tile and K-ramp "
    "terms fitted on Hopper, its attention kernels' rates from NVIDIA's published B200 benchmark "
    "(as the kernel model fits it; the H100's scaled by the peaks when this record was added), its "
    "memory-bound kernels' the H100's scaled, and the kernel efficiency of a training step Blackwell's own (fitted "
    "on NVIDIA's 8-GPU Llama 3 8B steps, atscale.runs.BLACKWELL_RUNS; the H100's when this "
    "record was added); the rank order Megatron-Core's (tensor, context, data, pipeline) unless the "
    "configuration sets TP_PP_DP_MAPPING, which puts data parallelism outermost")

HARDWARE["HGX B200"] = (
    "DGX B200 nodes (the system description: 'HiPerGator NVIDIA DGX B200 (8x B200-SXM-180GB)', InfiniBand; no "
    "adapters or topology named), taken as the catalog's HGX B200 with eight 400 Gb/s NICs, as a DGX B200 has, on a "
    "non-blocking InfiniBand NDR fabric; the B200's GEMM rates from its published best-shape matmul rates (Bekman's "
    "table) with the tile and K-ramp terms fitted on Hopper, its attention kernels' rates from NVIDIA's published "
    "B200 benchmark (as the kernel model fits it; the H100's scaled by the peaks when this record was "
    "added), its memory-bound kernels' the H100's scaled, and the kernel efficiency of a training step Blackwell's "
    "own (fitted on NVIDIA's 8-GPU Llama 3 8B steps, "
    "atscale.runs.BLACKWELL_RUNS; the H100's when this record was added); the layout of the implementation's one "
    "configuration file, written for 64 nodes, on the node counts of the system descriptions (32 and 56), which the "
    "logs' global batch and accumulation agree with; data parallelism outermost in the rank order "
    "(config_common.sh: TP_PP_DP_MAPPING)")

B200_NOT_MODELLED = (
    "; not modelled either: the whole-step CUDA graph (config_common_cg.sh: FULL_CUDA_GRAPH and MCORE_CUDA_GRAPH, "
    "which take the host out of the step; the model prices every launch as an eager stack's), cuDNN's norm kernels "
    "(NVTE_NORM_FWD_USE_CUDNN) and the NCCL settings")

BLACKWELL_NOT_MODELLED = (
    "; not modelled either: the whole-step CUDA graph (config_common_cg.sh: FULL_CUDA_GRAPH, which takes the host "
    "out of the step; the model prices every launch as an eager stack's), and whatever config_common_blackwell.sh "
    "sets: the configuration sources it, but the submission does not include it")

AMAX_TP_CP = (
    "; FP8's amax statistics reduced inside each tensor- and context-parallel group only, not across the "
    "data-parallel replicas: custom.yaml's tp_only_amax_red defaults to True (TP_ONLY_AMAX_RED, set by no "
    "configuration), which Megatron-Core reads as the amax reduction group of tensor and context parallelism "
    "(parallel_state.get_amax_reduction_group)")

# per benchmark: the catalog model, the name in the label, the sequence, the assumptions
BENCHMARKS = {
    "gpt3": ("GPT-3 175B", "GPT-3 175B", 2048, ASSUMED_GPT3),
    "llama31_405b": ("Llama 3 405B", "Llama 3.1 405B", 8192, ASSUMED_LLAMA),
}


def _git(repo: Path, rev: str, path: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{repo}: cannot read {path} at {rev}: {out.stderr.strip()}")
    return out.stdout


def _files(repo: Path, rev: str, folder: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", rev, folder + "/"],
                         capture_output=True, text=True, check=True).stdout.split()
    return sorted(f for f in out if f.rsplit("/", 1)[-1].startswith("result_") and f.endswith(".txt"))


def _sourced(repo: Path, rev: str, impl: str, config: str) -> str:
    """A configuration file with the files it sources from its own folder before it (``source
    $(dirname ${BASH_SOURCE[0]})/config_common.sh``, in order; one the submission does not include is skipped, and
    the record says so where it matters), so that its own assignments come last."""
    text = _git(repo, rev, f"{impl}/{config}")
    present = set(subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", rev, impl + "/"],
                                 capture_output=True, text=True, check=True).stdout.split())
    common = [f"{impl}/{name}" for name in re.findall(r"^\s*source \$\(dirname \$\{BASH_SOURCE\[0\]\}\)/(\S+)",
                                                       text, re.M)]
    return "\n".join([_git(repo, rev, f) for f in common if f in present] + [text])


def read_log(text: str) -> dict:
    """One result log: its global batch, sequence, accumulation and the median seconds per step over its blocks
    (the first dropped), from its ``:::MLLOG`` lines (with or without a launcher's rank prefix, ``  0: ``). A block's
    sequences are its ``epoch_count`` tokens over the sequence (GPT-3's logs), or
    the ``samples_count`` from its start to the next block's start, the last to ``run_stop``'s (Llama 3.1's). A log
    whose blocks are not closed (NeMo 25.04's: one ``block_stop``, at the end) gives instead the median of the
    training callback's ``train_step_time`` over the steps after the first block (``tracked_stats``, whose ``step``
    is the samples trained)."""
    facts, blocks, end, step_times = {}, [], None, []
    for line in text.splitlines():
        found = re.match(r"(?:\s*\d+: )?:::MLLOG(.*)", line)  # some launchers prefix each line with its rank
        if not found:
            continue
        entry = json.loads(found.group(1))
        key, meta = entry["key"], entry.get("metadata", {})
        if key in ("global_batch_size", "max_sequence_length", "gradient_accumulation_steps"):
            facts[key] = entry["value"]
        elif key == "block_start":
            first = meta.get("first_epoch_num", meta.get("samples_count"))
            blocks.append({"first": first, "start": entry["time_ms"], "tokens": meta.get("epoch_count"),
                           "step0": meta.get("step")})
        elif key == "block_stop":
            if not blocks or blocks[-1]["first"] != meta.get("first_epoch_num", meta.get("samples_count")):
                raise ValueError(f"a block_stop at {entry['time_ms']} ms has no block_start")
            blocks[-1]["stop"] = entry["time_ms"]
            blocks[-1]["step1"] = meta.get("step")
        elif key == "run_stop":
            end = meta.get("samples_count")
        elif key == "tracked_stats" and "train_step_time" in (entry.get("value") or {}):
            samples = meta.get("samples_count", meta.get("step"))  # NeMo 25.04 names the samples "step"
            if samples is not None:
                step_times.append((samples, entry["value"]["train_step_time"]))
    if len(blocks) > 1 and any("stop" not in b for b in blocks[:-1]):  # NeMo 25.04: only the last block closed
        if not step_times:
            raise ValueError("the blocks are not closed and the log has no train_step_time to read instead")
        after = [t for samples, t in step_times if samples > blocks[1]["first"]]  # the first block dropped
        return dict(facts, step=statistics.median(after), blocks=len(blocks) - 1, steps=len(after))
    steps = []
    for i, block in enumerate(blocks):
        if block["step0"] is not None and block.get("step1") is not None:  # v5.1: the steps are named
            steps.append((block["stop"] - block["start"]) / 1000.0 / (block["step1"] - block["step0"]))
            continue
        if block["tokens"] is not None:
            sequences = block["tokens"] / facts["max_sequence_length"]
        else:  # Llama 3.1: samples from this block's start to the next one's (the last: to the run's end)
            following = blocks[i + 1]["first"] if i + 1 < len(blocks) else end
            if following is None:
                raise ValueError("the log's last block has no end: no run_stop with a samples_count")
            sequences = following - block["first"]
        steps.append((block["stop"] - block["start"]) / 1000.0 / (sequences / facts["global_batch_size"]))
    if len(steps) < (2 if blocks[0]["step0"] is not None else 3):
        raise ValueError(f"{len(steps)} timed blocks: too few to drop the first")
    return dict(facts, step=statistics.median(steps[1:]), blocks=len(steps) - 1, steps=None)


def _assumed(text: str, node: str, fp8_recipe: str) -> str:
    """A benchmark's assumptions for one submission: its hardware written in; on Blackwell the attention backend not
    said to be H100's; on the B200 no deferred embedding weight gradient (config_common_cg.sh turns it off there);
    and the FP8 recipe the configuration names where it is not delayed scaling."""
    text = text.replace("{hardware}", HARDWARE[node])
    if node in ("GB200 NVL72", "HGX B200"):
        text = text.replace("default backend on H100", "default backend")
    if node == "HGX B200":
        text = text.replace(", the deferred embedding weight gradient (DEFER_EMBEDDING_WGRAD_COMPUTE)", "")
    if fp8_recipe != "delayed":
        text = text.replace("Transformer Engine's delayed scaling, fp8_recipe delayed, amax history 1",
                            f"Transformer Engine's per-tensor current scaling, FP8_RECIPE={fp8_recipe} in "
                            "config_common.sh")
    return text


def record(sub: tuple, repo: Path, rev: str, commit: str) -> dict:
    bench, rnd, results, impl, config, release, system, node = sub
    accelerator = "GB200" if node == "GB200 NVL72" else node.split()[-1]
    model, name, seq, assumed = BENCHMARKS[bench]
    lay = layout(_sourced(repo, rev, impl, config), _git(repo, rev, f"{impl}/conf/custom.yaml"))
    nodes, tp, pp, cp, vp, mbs = (lay[k] for k in ("nodes", "tp", "pp", "cp", "virtual_stages", "micro_batch"))
    org, folder = results.split("/")[0], results.rsplit("/", 1)[-1]
    described = int(json.loads(_git(repo, rev, f"{org}/systems/{folder}.json"))["number_of_nodes"])
    from_system = described != nodes  # the run's environment set DGXNNODES: the system description says how many
    nodes = described
    logs = [read_log(_git(repo, rev, f)) for f in _files(repo, rev, f"{results}/{bench}")]
    gbs = {x["global_batch_size"] for x in logs}
    acc = {x["gradient_accumulation_steps"] for x in logs}
    if len(gbs) != 1 or len(acc) != 1 or {x["max_sequence_length"] for x in logs} != {seq}:
        raise SystemExit(f"{results}: the logs disagree on the batch {gbs}, accumulation {acc} or sequence")
    gbs, acc = gbs.pop(), int(acc.pop())
    gpus = nodes * lay["gpus_per_node"]
    dp = gpus // (tp * pp * cp)
    if dp * tp * pp * cp != gpus or dp * mbs * acc != gbs:
        raise SystemExit(f"{results}: tp {tp} x pp {pp} x cp {cp} x dp {dp} x micro-batch {mbs} x accumulation "
                         f"{acc} does not make {gpus} GPUs and the global batch {gbs}")
    step = statistics.median(x["step"] for x in logs)
    per_run = ", ".join(f"{x['step']:.4f}" for x in logs)
    split = {k: True for k in ("account_for_embedding", "account_for_loss") if lay[k]}
    tp_only = rnd == "3.1" or lay["tp_only_amax"]
    rack = node == "GB200 NVL72"  # 64 of each rack's 72 GPUs, one NVLink domain (the system's racks: gpus / 64)
    node_entry = {"catalog": node, "gpus": 64, "nics": 64, "name": "GB200 NVL72 (64 of its 72 GPUs)"} if rack else node
    order = {"order": "tp-cp-pp-dp"} if lay["dp_last"] else {}
    return {
        "label": f"{name}, {gpus:,} {accelerator}, MLPerf Training v{rnd} ({system})",
        "group": "MLPerf Training",
        "benchmark": name,
        "mlperf_round": f"v{rnd}",
        "system": system,
        "stack": f"NVIDIA {release} (Transformer Engine), MLPerf Training v{rnd}, "
                 f"{results.split('/')[0].replace('+', ' and ').replace('-', ' ')}'s submission",
        "stack_preset": "megatron-core",
        "role": "validation",
        "model": model,
        "node": node_entry,
        "gpus": gpus,
        "fabric": "InfiniBand NDR",
        "plan": {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "micro_batch": mbs, "global_batch": gbs,
                 "zero_stage": 1, "schedule": "interleaved", "virtual_stages": vp, "recompute": "none",
                 "sequence_parallel": True, **split, "pp_overlap": True, **order},
        "seq_length": seq,
        "dtype": "fp8",
        "metric": "step_seconds",
        "published": round(step, 4),
        "published_as": (f"{step:.4f} s per step: the median over the submission's {len(logs)} result logs of "
                         + ("each log's median seconds per step over its timed blocks (the first dropped; per log: "
                            if logs[0]["steps"] is None else
                            "each log's median of the training callback's time of each step (train_step_time) over "
                            "the steps after its first block (its blocks are not closed but the last, so they cannot "
                            "be timed without the evaluations; per log: ")
                         + f"{per_run} s)"),
        "url": f"https://github.com/{REPOS[rnd]}/tree/{commit}/{results}/{bench}",
        "source": (f"MLCommons, MLPerf Training v{rnd} results, closed division, {system} "
                   + (f"({gpus:,} GB200 in {gpus // 64} GB200 NVL72 racks, {nodes} compute trays of "
                      f"{lay['gpus_per_node']}, {release}): " if rack else
                      f"({gpus:,} {accelerator} SXM in {nodes} {node} nodes, {release}): ")
                   + f"{results}/{bench}/result_*.txt "
                   f"(global batch {gbs} sequences of {seq:,} tokens, gradient accumulation {acc}, from the logs) "
                   f"and {impl}/{config} (TP {tp}, PP {pp}, " + (f"CP {cp}, " if cp > 1 else "")
                   + f"virtual pipeline {vp}, micro-batch {mbs})"
                   + (f"; {nodes} nodes as the system description {org}/systems/{folder}.json gives them, where the "
                      f"configuration sets {lay['nodes']}" if from_system else "")),
        "assumed": _assumed(assumed, node, lay["fp8_recipe"])
                   + (AMAX_TP_ONLY if rnd == "3.1" else AMAX_TP_CP if tp_only else "")
                   + (BLACKWELL_NOT_MODELLED if rack else B200_NOT_MODELLED if node == "HGX B200" else ""),
        "options": {"optimizer_name": "adam-mixed", "dp_overlap": 1.0, "flash_attention": True,
                    "memory_check": True, "float8_recipe": lay["fp8_recipe"],
                    **({"amax_reduction": "tensor-parallel"} if tp_only else {})},
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for rnd in REPOS:
        p.add_argument(f"--v{rnd}", type=Path, required=True, help=f"a local clone of {REPOS[rnd]}")
    p.add_argument("--rev", default="HEAD", help="the revision to read in every clone (default HEAD)")
    p.add_argument("--out", type=Path, default=Path("lib/atscale/data/runs/mlperf.json"))
    args = p.parse_args(argv)
    out = []
    for sub in SUBMISSIONS:
        repo = getattr(args, f"v{sub[1]}")
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", args.rev], capture_output=True, text=True,
                                check=True).stdout.strip()
        out.append(record(sub, repo, args.rev, commit))
        print(f"{out[-1]['label']}: {out[-1]['published']:.4f} s per step", file=sys.stderr)
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
