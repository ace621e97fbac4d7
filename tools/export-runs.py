#!/usr/bin/env python3
"""One-off (kept for the record): write the published runs that ``atscale.parallelism`` built in Python at commit
db76ecc (``tests/fixtures/parallelism_db76ecc_runs.py``, a verbatim copy) as the JSON records of
``lib/atscale/data/runs/`` (schema: :mod:`atscale.runs`), one file per group, adding what the Python did not hold:
each run's ``group``, ``stack`` (the training stack as its source names it), ``stack_preset`` and ``published_as``
(the figure as the source prints it, with the arithmetic that converts it to the SI ``published`` value).

    python tools/export-runs.py            # rewrites the six files
    python tools/export-runs.py --check    # exits 1 if they differ from what it would write

``tests/test_runs.py`` checks, independently of this script, that every loaded run equals its old one.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "lib" / "atscale" / "data" / "runs"
sys.path.insert(0, str(ROOT / "lib"))

from atscale import models  # noqa: E402


def old_module():
    """The fixture: the run records exactly as the Python built them at db76ecc."""
    path = ROOT / "tests" / "fixtures" / "parallelism_db76ecc_runs.py"
    spec = importlib.util.spec_from_file_location("parallelism_db76ecc_runs", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# (file, group, the tuple of the old module, the stack, the stack preset) -- one file per source group
FILES = (
    ("megatron-lm-table1.json", "Megatron-LM Table 1", "MEGATRON_TABLE1_RUNS"),
    ("korthikanti-table5.json", "Korthikanti et al. Table 5", "KORTHIKANTI_TABLE5_RUNS"),
    ("other-runs.json", "Other runs", "OTHER_RUNS"),
    ("h100-recipes.json", "H100 recipes", "H100_RUNS"),
    ("megascale.json", "MegaScale", "MEGASCALE_RUNS"),
    ("moe.json", "Mixture of experts", "MOE_RUNS"),
)

_K22 = "Megatron-LM with sequence parallelism and selective recomputation (2022)"


def stack(group: str, label: str) -> tuple[str, str]:
    """The training stack of a run as its source names it, and the nearest preset name of the schema."""
    if group == "Megatron-LM Table 1":
        return "Megatron-LM (2021)", "megatron-lm-2021"
    if group == "Korthikanti et al. Table 5" or label.startswith("MT-NLG"):
        return _K22, "megatron-lm-2022"
    if label.startswith("Llama 3 405B"):
        return "Meta (Llama 3)", "other"
    if group == "H100 recipes":
        return "NVIDIA NeMo 24.09/24.11 (Megatron-Core)", "megatron-core"
    if group == "MegaScale":
        return "MegaScale's Megatron-LM baseline", "megatron-lm-2022"
    return {"DeepSeek-V3, 512 H100, BF16": ("NVIDIA NeMo 25.04.01 (Megatron-Core)", "megatron-core"),
            "DeepSeek-V3, 1,024 H100, BF16": ("NVIDIA NeMo 25.04.01 (Megatron-Core)", "megatron-core"),
            "Qwen3-235B-A22B, 256 H100, BF16": ("Megatron-Core (Megatron-MoE-ModelZoo)", "megatron-core"),
            "Qwen3-235B-A22B, 256 H100, BF16, all-to-all overlapped": ("Megatron-Core (Megatron-MoE-ModelZoo)",
                                                                       "megatron-core"),
            "gpt-oss-120b, 64 H100, BF16": ("Megatron-Bridge 26.02", "megatron-core"),
            "Qwen3-30B-A3B, 8 H100, BF16, FSDP": ("NeMo AutoModel (FSDP2)", "other"),
            "DeepSeek-V3, 2,048 H800, FP8": ("DeepSeek (HAI-LLM)", "other")}[label]


def _pct(x: float) -> str:
    return f"{x * 100:.1f}".rstrip("0").rstrip(".") + "%"


def published_as(run) -> str:
    """The figure as the source prints it, and the arithmetic to the SI value of ``published``."""
    m, p = run.metric, run.published
    if m == "hardware_flops_per_gpu":
        tf = p / 1e12
        return f"{tf:g} TFLOP/s per GPU (x 10^12 FLOP/s per TFLOP/s)"
    if m in ("mfu", "hfu", "mfu_causal"):
        name = {"mfu": "MFU", "hfu": "HFU", "mfu_causal": "BF16 MFU"}[m]
        return f"{name} {_pct(p)} (= {p:g})"
    if run.label == "gpt-oss-120b, 64 H100, BF16":
        return (f"5,993 tokens/s per GPU (step = 1,280 sequences x 4,096 tokens / (5,993 tokens/s per GPU x 64 GPUs) "
                f"= {p:.6g} s)")
    if run.label == "DeepSeek-V3, 2,048 H800, FP8":
        return ("180K H800 GPU-hours per trillion tokens (step = 15,360 sequences x 4,096 tokens / (10^12 tokens / "
                f"(180,000 GPU-hours x 3,600 s per hour) x 2,048 GPUs) = {p:.6g} s)")
    return f"{p:g} s per step"


PLAN_ALWAYS = ("tp", "pp", "dp", "cp", "micro_batch", "global_batch", "zero_stage", "schedule", "virtual_stages",
               "recompute", "sequence_parallel")
"""The plan fields every record states, defaults or not (the layout a reader looks for); other fields only where
they differ from the default."""


def _nondefault(obj, always=()) -> dict:
    """The fields of a dataclass instance that differ from their defaults (all fields without one, and ``always``)."""
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        if f.name in always or default is dataclasses.MISSING or value != default:
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def model_entry(model):
    """A catalog name where the run's model is the catalog's, else the model's keyword arguments."""
    return model.name if models.MODELS.get(model.name) == model else _nondefault(model)


def optimizer_entry(optimizer):
    return optimizer if isinstance(optimizer, str) else dataclasses.asdict(optimizer)


def record(run, group: str, calibration_labels: set) -> dict:
    the_stack, preset = stack(group, run.label)
    role = "calibration" if run.label in calibration_labels else run.role
    rec = {"label": run.label, "group": group, "stack": the_stack, "stack_preset": preset, "role": role,
           "model": model_entry(run.model), "node": run.cluster.node.name, "gpus": run.cluster.num_gpus,
           "fabric": run.cluster.fabric.name, "plan": _nondefault(run.plan, PLAN_ALWAYS)}
    if run.seq_length is not None:
        rec["seq_length"] = run.seq_length
    rec |= {"dtype": run.dtype, "metric": run.metric, "published": run.published, "published_as": published_as(run),
            "source": run.source, "assumed": run.assumed,
            "options": {"optimizer_name": optimizer_entry(run.optimizer_name), "dp_overlap": run.dp_overlap,
                        "flash_attention": run.flash_attention, "memory_check": run.memory_check}}
    return rec


def files() -> dict[str, str]:
    old = old_module()
    calibration_labels = {r.label for r in old.CALIBRATION_RUNS}
    out = {}
    for name, group, attr in FILES:
        records = [record(r, group, calibration_labels) for r in getattr(old, attr)]
        out[name] = json.dumps(records, indent=1, ensure_ascii=False) + "\n"
    return out


def main(argv) -> int:
    wanted = files()
    if "--check" in argv:
        stale = [n for n, text in wanted.items() if not (OUT / n).exists() or (OUT / n).read_text("utf-8") != text]
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in wanted.items():
        (OUT / name).write_text(text, encoding="utf-8")
        print(f"wrote {OUT / name} ({len(json.loads(text))} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
