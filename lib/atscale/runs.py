"""Published training runs, as data: :class:`Run` (one run, what it measured, and the model's prediction of it) and
the runs the book compares the step-time model with, read from the JSON records of ``atscale/data/runs/`` (one
file per source group, one record per run; :func:`load`).

A record names its model (a catalog name of :data:`atscale.models.MODELS`, or the keyword arguments of a
:class:`~atscale.models.TransformerConfig`), its cluster (a node of :data:`atscale.hardware.NODES`, a GPU count and
a fabric of :data:`atscale.hardware.FABRICS`), its layout (the keywords of an :class:`~atscale.plan.Plan`), the
published figure in SI units (``published``, with ``published_as``: the figure as the source prints it and the
arithmetic that converts it), the metric, its role (``"calibration"``: a constant of
:class:`~atscale.calibration.Calibration` was fitted on it; ``"validation"``: none was), the source, the training
stack, and what the source leaves unstated and the record assumes. The step time the runs are compared with is
:mod:`atscale.parallelism`'s; the fit on the calibration runs is :mod:`atscale.fitting`'s. The old names
(``atscale.parallelism.Run``, ``atscale.parallelism.H100_RUNS``, ...) still work.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from dataclasses import dataclass
from importlib.resources import files
from types import MappingProxyType
from typing import Mapping

from . import _validate as _v
from . import hardware, memory, models
from . import operators as _operators
from .kernels import ATTENTION_KERNELS
from .calibration import CALIBRATION, Calibration
from .parallelism import StepTime, _remembered, step_time
from .plan import Plan

__all__ = ["Run", "METRICS", "load", "ALL_RUNS", "MEGATRON_TABLE1_RUNS", "KORTHIKANTI_TABLE5_RUNS", "OTHER_RUNS",
           "H100_RUNS", "MEGASCALE_RUNS", "MOE_RUNS", "MOE_FURTHER_RUNS", "OTHER_STACK_RUNS", "MLPERF_RUNS", "BLACKWELL_RUNS", "CALIBRATION_RUNS",
           "OPERATOR_CALIBRATION_RUNS",
           "VALIDATION_RUNS",
           "FP8Pair", "fp8_pairs", "AblationStep", "ABLATION_TOLERANCE_POINTS", "megascale_ablation",
           "megascale_ablation_baseline", "Reading"]

_STACK_FACTS = ("tp_overlap_input_grads", "expert_gemms", "qkv_apart")
"""The :class:`~atscale.operators.Stack` fields a record's ``details`` may set outright for its run (:meth:`Run._stack`;
``tp_backward_async`` too, read with the Megatron-LM release it depends on)."""


@dataclass(frozen=True)
class Reading:
    """Another reading of what a run's source leaves open or states ambiguously: ``name`` (a few words),
    ``plan`` (the :class:`~atscale.plan.Plan` fields it changes, a mapping) and ``why`` (what in the source allows
    it). A record lists its readings under ``"readings"``; :meth:`Run.read_as` prices the run under one, and
    :func:`atscale.accuracy.readings` shows how far each moves the model's error, beside the record's own reading."""

    name: str
    plan: Mapping
    why: str

    def __post_init__(self):
        for field in ("name", "why"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field):
                raise ValueError(f"Reading {field}={_v.show(getattr(self, field))} must be a non-empty string")
        if not isinstance(self.plan, Mapping) or not self.plan:
            raise ValueError(f"Reading {self.name!r}: plan={_v.show(self.plan)} must be a non-empty mapping of "
                             "Plan fields to change")
        unknown = sorted(set(self.plan) - {f.name for f in dataclasses.fields(Plan)})
        if unknown:
            raise ValueError(f"Reading {self.name!r}: {', '.join(map(repr, unknown))} not a Plan field")
        object.__setattr__(self, "plan", MappingProxyType(dict(self.plan)))


METRICS = ("hardware_flops_per_gpu", "model_flops_per_gpu", "model_flops_causal_per_gpu", "mfu", "mfu_causal", "hfu",
           "step_seconds")
"""What a :class:`Run` may have published (see :attr:`Run.metric`)."""


@dataclass(frozen=True)
class Run:
    """A published training run and what it measured.

    ``metric`` is ``"hardware_flops_per_gpu"`` (FLOP/s per GPU counting recomputation, as Narayanan et al.
    2021 report), ``"mfu"``, ``"mfu_causal"`` (MFU with attention counted for its causal half, for sources
    that count FLOPs that way), ``"model_flops_per_gpu"``, ``"model_flops_causal_per_gpu"`` (model FLOP/s per GPU
    with the attention counted causal, as Megatron-LM's throughput log prints it), ``"hfu"`` or ``"step_seconds"``
    (seconds per optimizer step, where the source prints the step time itself); ``published`` its value (FLOP/s, a
    fraction or seconds). ``role`` is
    ``"calibration"`` (the constants were fitted on it) or ``"validation"`` (they were not). ``source``:
    paper, table, row. ``assumed``: what the paper does not print and the model had to assume.
    ``optimizer_name``: a layout of :data:`atscale.memory.OPTIMIZERS` by name, or an
    :class:`~atscale.memory.Optimizer` where the source states one of its own (DeepSeek-V3's BF16 moments).
    ``stack``: the training stack as the source names it (e.g. ``"Megatron-LM (2021)"``); ``group``: the set of
    runs it belongs to (one data file, one table of the accuracy appendix); ``details``: what its record holds that
    the model does not read yet (``published_as``, the figure as printed with its conversion; ``stack_preset``;
    ``url``; ``published_dropless``, a second figure of the same run without forced load balancing;
    ``published_rate``, the FLOP/s per GPU a source prints beside a step time (Megatron-LM's count); stack options
    such as ``compile`` or ``float8_recipe``; ``readings``, the other readings of the source
    its text allows, :attr:`readings`), read-only.
    """

    label: str
    model: models.TransformerConfig
    cluster: hardware.Cluster
    plan: Plan
    metric: str
    published: float
    role: str
    source: str
    assumed: str = ""
    optimizer_name: str = "megatron-fp16"
    dp_overlap: float = 0.0
    seq_length: int | None = None
    flash_attention: bool = False
    memory_check: bool = True
    dtype: str = "bf16"
    stack: str = ""
    group: str = ""
    details: Mapping = dataclasses.field(default_factory=lambda: MappingProxyType({}), hash=False)

    def __post_init__(self):
        _v.choice("role", self.role, ("calibration", "validation"))
        _v.choice("metric", self.metric, METRICS)
        self.cluster.accelerator.peak(self.dtype) if isinstance(self.cluster, hardware.Cluster) else None
        if not isinstance(self.model, models.TransformerConfig):
            raise ValueError(f"model={_v.show(self.model)} must be an atscale.models.TransformerConfig")
        if not isinstance(self.cluster, hardware.Cluster):
            raise ValueError(f"cluster={_v.show(self.cluster)} must be an atscale.hardware.Cluster")
        if not isinstance(self.plan, Plan) or self.plan.global_batch is None:
            raise ValueError(f"plan={_v.show(self.plan)} must be an atscale.plan.Plan with a global_batch")
        object.__setattr__(self, "published", _v.positive("published", self.published, scalar=True))
        if self.metric in ("mfu", "mfu_causal", "hfu") and self.published > 1:
            raise ValueError(f"published={_v.show(self.published)} must be a fraction in (0, 1] for metric="
                             f"{self.metric!r} (an MFU of {self.published:g} % is {self.published / 100:g})")
        object.__setattr__(self, "dp_overlap", _v.number("dp_overlap", self.dp_overlap, low=0, high=1, scalar=True))
        if self.seq_length is not None:
            object.__setattr__(self, "seq_length", _v.count("seq_length", self.seq_length))
        memory.optimizer(self.optimizer_name)  # a ValueError naming the known layouts
        for name in ("flash_attention", "memory_check"):
            object.__setattr__(self, name, _v.flag(name, getattr(self, name)))
        for name in ("stack", "group"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name}={_v.show(getattr(self, name))} must be a string")
        if not isinstance(self.details, Mapping):
            raise ValueError(f"details={_v.show(self.details)} must be a mapping")
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if "attention_kernel" in self.details:
            _v.choice("attention_kernel", self.details["attention_kernel"], ATTENTION_KERNELS)
        for flag in ("tp_backward_async", "tp_overlap_input_grads", "qkv_apart"):
            if flag in self.details:
                _v.flag(flag, self.details[flag])
        if "expert_gemms" in self.details:
            _v.choice("expert_gemms", self.details["expert_gemms"], _operators.EXPERT_GEMMS)
        for reading in self.readings:  # each builds a plan (a ValueError naming the reading otherwise)
            self._read_plan(reading.name)

    @functools.cached_property
    def readings(self) -> tuple[Reading, ...]:
        """The other readings of this run's source that its record lists (``details["readings"]``; :class:`Reading`),
        in the record's order; empty where the record lists none. Parsed once per run (the first access, which
        ``__post_init__`` makes)."""
        raw = self.details.get("readings", ())
        if not isinstance(raw, (list, tuple)):
            raise ValueError(f"{self.label}: readings={_v.show(raw)} must be a list of readings")
        out = []
        for entry in raw:
            if isinstance(entry, Reading):
                out.append(entry)
            elif isinstance(entry, Mapping) and set(entry) == {"reading", "plan", "why"}:
                out.append(Reading(entry["reading"], entry["plan"], entry["why"]))
            else:
                raise ValueError(f"{self.label}: a reading must be a Reading or an object with the keys reading, "
                                 f"plan and why (got {_v.show(entry)})")
        names = [r.name for r in out]
        if len(set(names)) < len(names):
            raise ValueError(f"{self.label}: reading names must be unique (got {names})")
        return tuple(out)

    def read_as(self, name: str) -> "Run":
        """This run under its reading called ``name`` (one of :attr:`readings`): its plan with the reading's fields
        changed, everything else as recorded."""
        return dataclasses.replace(self, plan=self._read_plan(name))

    def _read_plan(self, name: str) -> Plan:
        found = {r.name: r for r in self.readings}
        if not isinstance(name, str) or name not in found:
            raise ValueError(f"reading={_v.show(name)} is not a reading of {self.label!r}; its readings: "
                             f"{', '.join(map(repr, found)) or 'none'}")
        try:
            return dataclasses.replace(self.plan, **found[name].plan)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{self.label}: the reading {name!r} gives no valid plan: {exc}") from None

    @property
    def stack_preset(self) -> str:
        """The :data:`atscale.operators.STACKS` preset this run is priced with by the operator-level compute: the
        record's ``stack_preset`` (torchtitan's async-TP runs are its compiled preset with ``tp_overlap`` on; the
        Megatron-LM runs of 2021-22 and the stacks whose sources do not say what they fuse, ``"other"``, take
        Megatron-Core's fused preset, an assumption; those of 2021, ``"megatron-lm-2021"``, without the
        asynchronous backward collectives Megatron-LM gained in September 2021: :meth:`_stack`)."""
        preset = self.details.get("stack_preset", "megatron-core")
        return {"fsdp2-compile-async-tp": "fsdp2-compile", "megatron-lm-2021": "megatron-core",
                "megatron-lm-2022": "megatron-core", "other": "megatron-core"}.get(preset, preset)

    @property
    def attention_kernel(self) -> str:
        """The attention kernel (:data:`atscale.kernels.ATTENTION_KERNELS`) the operator-level compute prices this
        run with: the record's ``attention_kernel`` where its source names one the preset does not run (llm-foundry's
        ``attn_impl: triton``, ``"flash-triton"``; NVIDIA's Nemotron-4 340B recipe, whose scripts set
        ``NVTE_FUSED_ATTN=0`` and so run Transformer Engine's FlashAttention-2 backend, ``"flash2"``; torchtitan on a
        B200, which asks PyTorch for cuDNN's attention first on Blackwell, ``"cudnn"``), else the
        :attr:`stack_preset`'s."""
        return self.details.get("attention_kernel") or _operators.stack(self.stack_preset).attention

    @property
    def fp8_recipe(self) -> str:
        """The FP8 scaling recipe of :data:`atscale.kernels.FP8_RECIPES` the run used: torchao's and Transformer
        Engine's tensorwise scaling from the current amax (``"current"``), torchao's rowwise scaling
        (``"torchao-rowwise"``: a dense layer's linear layers at torchao's published speedup over BF16,
        :func:`atscale.kernels.rowwise_speedup`; a routed expert's casts per GEMM, :data:`atscale.kernels.
        FP8_CAST_PASSES`); otherwise Transformer
        Engine's ``"delayed"`` unless the record names another. (Until November 2026 rowwise was priced as
        ``"current"``.)"""
        recipe = self.details.get("float8_recipe") or "delayed"
        return {"tensorwise": "current", "rowwise": "torchao-rowwise"}.get(recipe, recipe)

    def step(self, calibration: Calibration = CALIBRATION, *, operators: bool = False, stragglers=None) -> StepTime:
        """The model's step for this run (with ``calibration``'s constants); ``operators=True``: the operator-level
        compute with the run's :attr:`stack_preset` and :attr:`fp8_recipe` (``step_time(..., stack=...)``);
        ``stragglers``: the wait for the slowest GPU (``step_time(..., stragglers=...)``; default off)."""
        extra = dict(stack=self._stack(), fp8_recipe=self.fp8_recipe) if operators else {}
        return step_time(self.model, self.cluster, self.plan, optimizer_name=self.optimizer_name,
                         dp_overlap=self.dp_overlap, seq_length=self.seq_length, dtype=self.dtype,
                         flash_attention=self.flash_attention, memory_check=self.memory_check,
                         calibration=calibration, stragglers=stragglers, **extra)

    def _stack(self) -> _operators.Stack:
        """The :attr:`stack_preset` running the run's :attr:`attention_kernel`, and with its column-parallel layers'
        backward collectives in line where the record says so (``details["tp_backward_async"]``) or where it ran
        Megatron-LM of 2021 (Narayanan et al. 2021, code of April 2021), before those layers ran their backward
        all-reduce beside the weight-gradient GEMM (``async_tensor_model_parallel_allreduce``, Megatron-LM, September
        2021; :data:`atscale.operators.TP_BACKWARD_ASYNC`); with its TP overlap pipelining its shared inputs'
        gradient reduce-scatters or not where the record says so (``details["tp_overlap_input_grads"]``, else the
        preset's :attr:`~atscale.operators.Stack.tp_overlap_input_grads`); with its experts' GEMMs run as the record
        says (``details["expert_gemms"]``, one of :data:`atscale.operators.EXPERT_GEMMS`), else as the preset runs
        them; with its query, key and value projections apart or as one GEMM where the record says so
        (``details["qkv_apart"]``, :data:`atscale.operators.QKV_APART`), else as the preset runs them."""
        preset = _operators.stack(self.stack_preset)
        aside = self.details.get("tp_backward_async", self.details.get("stack_preset") != "megatron-lm-2021")
        wanted = {name: self.details[name] for name in _STACK_FACTS if name in self.details}
        wanted["attention"] = self.attention_kernel
        if preset.tp_backward_async and not aside:
            wanted["tp_backward_async"] = False
        changes = {name: value for name, value in wanted.items() if getattr(preset, name) != value}
        return dataclasses.replace(preset, **changes) if changes else preset

    def predict(self, calibration: Calibration = CALIBRATION, *, operators: bool = False) -> float:
        """The model's value of :attr:`metric` with ``calibration``'s constants (``operators``: see :meth:`step`)."""
        st = self.step(calibration, operators=operators)
        return float(st.total if self.metric == "step_seconds" else getattr(st, self.metric))

    def step_error(self, calibration: Calibration = CALIBRATION, *, operators: bool = False) -> float:
        """The model's error in step time, ``predicted / published - 1`` in seconds per step (positive: the model
        is *slower*), whatever the metric (a rate is converted: the step time is inversely proportional to it)."""
        predicted = self.predict(calibration, operators=operators)
        if self.metric == "step_seconds":
            return predicted / self.published - 1
        return self.published / predicted - 1

    @property
    def published_seconds(self) -> float:
        """The published figure as seconds per step, whatever :attr:`metric`: as published for ``"step_seconds"``;
        for a rate, the model's step times the model's rate over the published one (the step time is inversely
        proportional to the rate, so the model's constants cancel)."""
        if self.metric == "step_seconds":
            return float(self.published)
        st = self.step()
        return float(st.total) * float(getattr(st, self.metric)) / self.published

    @property
    def rate_count_error(self) -> float:
        """For a run whose source prints a rate of model FLOP/s per GPU beside its step (``details["published_rate"]``):
        the library's count of that rate (model FLOPs with the attention counted causal, Megatron-LM's, over the
        published step, :attr:`published_seconds`) over the printed one, less one (dimensionless). A check that the
        library counts the FLOPs as the source does; a ``ValueError`` for a run without a printed rate."""
        if "published_rate" not in self.details:
            raise ValueError(f"{self.label}: the source prints no rate beside the step (no details['published_rate'])")
        st = self.step()
        counted = float(st.model_flops_causal_per_gpu) * float(st.total) / self.published_seconds
        return counted / self.details["published_rate"] - 1

    def mfu_pair(self, calibration: Calibration = CALIBRATION, *, operators: bool = False,
                 stragglers=None) -> tuple[float, float]:
        """``(published, predicted)`` as MFU (fractions) in one convention for this run: the MFU the published
        value implies for the model's FLOPs, and the model's own (see :meth:`points` for the convention;
        ``operators`` and ``stragglers``: see :meth:`step`)."""
        st = self.step(calibration, operators=operators, stragglers=stragglers)
        mfu = float(st.mfu_causal if self.metric == "mfu_causal" else st.mfu_at_dtype_peak)
        if self.metric == "step_seconds":
            return mfu * float(st.total) / self.published, mfu
        return mfu * self.published / float(getattr(st, self.metric)), mfu

    def points(self, calibration: Calibration = CALIBRATION, *, operators: bool = False, stragglers=None) -> float:
        """The model's error in MFU points (0.01 = one point; positive: optimistic), whatever the metric: the
        predicted MFU (:attr:`StepTime.mfu_causal` for an ``"mfu_causal"`` run, else
        :attr:`StepTime.mfu_at_dtype_peak`: against the FP8 peak for an FP8 run, as NVIDIA's tables report
        it, so an FP8 point is worth twice a BF16 one in throughput) minus the MFU the published value implies for the same FLOPs (a rate scales MFU, a step time divides
        it). A relative error of 10 % is 5 points at 50 % MFU."""
        published, predicted = self.mfu_pair(calibration, operators=operators, stragglers=stragglers)
        return predicted - published

    def memory_verdict(self) -> str:
        """The memory model's verdict on the published layout (even where ``memory_check`` is off)."""
        st = dataclasses.replace(self, memory_check=True).step()
        return "fits" if st.feasible else st.reason

    @property
    def predicted(self) -> float:
        """The model's value of :attr:`metric` for this run (:data:`CALIBRATION`)."""
        return self.predict()

    @property
    def error(self) -> float:
        """``predicted / published - 1`` (positive: the model is optimistic)."""
        return self.predicted / self.published - 1


# --------------------------------------------------------------------------------------
# The records (atscale/data/runs/*.json)
# --------------------------------------------------------------------------------------
_REQUIRED = ("label", "group", "role", "model", "node", "gpus", "fabric", "plan", "metric", "published", "source")
_USED = (*_REQUIRED, "stack", "seq_length", "dtype", "assumed", "options")
_OPTIONS = ("optimizer_name", "dp_overlap", "flash_attention", "memory_check")
"""The keys of a record (and of its ``options``) that :func:`load` builds the :class:`Run` from; every other key
is kept in :attr:`Run.details`."""


def _model(entry) -> models.TransformerConfig:
    """A catalog name; a catalog name under ``"catalog"`` with fields to change (a run's token dispatcher, which
    the model carries as Megatron-Core's ``TransformerConfig`` does); or the keyword arguments of a
    :class:`~atscale.models.TransformerConfig`."""
    if isinstance(entry, Mapping) and "catalog" in entry:
        changes = {k: v for k, v in entry.items() if k != "catalog"}
        return dataclasses.replace(models.model(entry["catalog"]), **changes)
    if isinstance(entry, Mapping):
        return models.TransformerConfig(**entry)
    return models.model(entry)


def _node(entry) -> hardware.Node:
    """A catalog node's name, or a catalog name under ``"catalog"`` with fields to change: a job on part of a
    rack-scale NVLink domain (64 GPUs of a GB200 NVL72: ``{"catalog": "GB200 NVL72", "gpus": 64, "nics": 64,
    "name": ...}``), one node of that many GPUs sharing the domain."""
    if isinstance(entry, Mapping) and "catalog" in entry:
        base = hardware.NODES[_v.choice("node", entry["catalog"], tuple(hardware.NODES))]
        return dataclasses.replace(base, **{k: v for k, v in entry.items() if k != "catalog"})
    return hardware.NODES[_v.choice("node", entry, tuple(hardware.NODES))]


def _run(rec: Mapping, where: str) -> Run:
    """One record as a :class:`Run` (``where``: the file, for the message of a bad record)."""
    if not isinstance(rec, Mapping):
        raise ValueError(f"{where}: a record must be a JSON object (got {_v.show(rec)})")
    missing = [k for k in _REQUIRED if k not in rec]
    if missing:
        raise ValueError(f"{where}: the record {rec.get('label', '(no label)')!r} lacks {', '.join(missing)}")
    node = _node(rec["node"])
    fabric = hardware.FABRICS[_v.choice("fabric", rec["fabric"], tuple(hardware.FABRICS))]  # a node has no default
    options = dict(rec.get("options", {}))
    optimizer = options.get("optimizer_name", "megatron-fp16")
    if isinstance(optimizer, Mapping):  # a layout the source states itself (DeepSeek-V3's BF16 moments)
        optimizer = memory.Optimizer(**optimizer)
    details = {k: v for k, v in rec.items() if k not in _USED}
    details |= {k: v for k, v in options.items() if k not in _OPTIONS}
    return Run(rec["label"], _model(rec["model"]), hardware.Cluster.of_gpus(node, rec["gpus"], fabric),
               Plan(**rec["plan"]), rec["metric"], rec["published"], rec["role"], rec["source"],
               rec.get("assumed", ""), optimizer_name=optimizer, dp_overlap=options.get("dp_overlap", 0.0),
               seq_length=rec.get("seq_length"), flash_attention=options.get("flash_attention", False),
               memory_check=options.get("memory_check", True), dtype=rec.get("dtype", "bf16"),
               stack=rec.get("stack", ""), group=rec["group"], details=details)


def load(path=None) -> tuple[Run, ...]:
    """The runs of one JSON file of records (``path``), or of every file of ``atscale/data/runs/`` (``None``, in
    the order of their names), as :class:`Run` objects in the order of the records."""
    if path is not None:
        with open(path, encoding="utf-8") as f:
            records = json.load(f)
        return tuple(_run(rec, str(path)) for rec in records)
    return _all()


@functools.cache
def _all() -> tuple[Run, ...]:
    folder = files("atscale") / "data" / "runs"
    out = []
    for entry in sorted((e for e in folder.iterdir() if e.name.endswith(".json")), key=lambda e: e.name):
        out += [_run(rec, f"atscale/data/runs/{entry.name}") for rec in json.loads(entry.read_text("utf-8"))]
    labels = [r.label for r in out]
    twice = sorted({x for x in labels if labels.count(x) > 1})
    if twice:
        raise ValueError(f"atscale/data/runs: labels must be unique; {twice} appear more than once")
    return tuple(out)


def _group(name: str) -> tuple[Run, ...]:
    return tuple(r for r in _all() if r.group == name)


ALL_RUNS: tuple[Run, ...] = _all()
"""Every published run of ``atscale/data/runs/``, the groups below and any other (files in the order of their
names)."""

MEGATRON_TABLE1_RUNS: tuple[Run, ...] = _group("Megatron-LM Table 1")
"""The ten weak-scaling runs of Megatron-LM's Table 1 (A100 80GB, Selene: DGX A100, HDR InfiniBand), as
published: achieved TFLOP/s per GPU *including* recomputation (their eq. 3), compared with the model's
:attr:`StepTime.hardware_flops_per_gpu` for full recomputation. Three (the smallest model, the narrowest per-GPU width, the largest) are calibration runs, the other seven
validation."""

KORTHIKANTI_TABLE5_RUNS: tuple[Run, ...] = _group("Korthikanti et al. Table 5")
"""The four runs of Korthikanti et al.'s Table 5 (sequence parallelism + selective recomputation, no data
parallelism, A100 80GB), MFU and HFU each. The MFUs are in :data:`CALIBRATION_RUNS`."""

OTHER_RUNS: tuple[Run, ...] = _group("Other runs")
"""Published runs outside both tables above; no constant was fitted on them."""

H100_RUNS: tuple[Run, ...] = _group("H100 recipes")
"""Twenty H100 runs of five models in BF16 and FP8, each at the smallest and the largest scale NVIDIA's
performance tables print, with the published layouts (context parallelism, interleaved pipelines: 405B's 126
layers in 9 x 7 = 63 chunks of exactly two layers each). Four are calibration runs (:data:`CALIBRATION_RUNS`), sixteen
validation."""

MEGASCALE_RUNS: tuple[Run, ...] = _group("MegaScale")
"""The Megatron-LM baseline of MegaScale's Table 2 (175B on 3,072-12,288 A100, fixed batch): validation."""

OTHER_STACK_RUNS: tuple[Run, ...] = _group("Other stacks")
"""Published runs of training stacks the model was not fitted on (validation only): torchtitan (PyTorch FSDP2,
eager, compiled, with async tensor parallelism, Float8, context parallelism to 262,144 tokens), MosaicML's
llm-foundry (Composer with FSDP, MPT models, A100 and H100, BF16 and FP8, sequences to 65,536), and NVIDIA's
Megatron-Bridge and NeMo releases not in :data:`H100_RUNS` (FP8, long sequences). Each record states its source
and what it had to assume (``atscale/data/runs/other-stacks.md`` lists them by source)."""

MLPERF_RUNS: tuple[Run, ...] = _group("MLPerf Training")
"""Submissions to MLPerf Training's pretraining benchmarks on NVIDIA's tuned NeMo releases, all FP8, all
validation: NVIDIA's GPT-3 175B on H100 in v3.1, v4.0 and v4.1 (and Microsoft Azure's of v3.1 with the same
software; 256 to 11,616 GPUs, NeMo 23.09, 24.04, 24.09) and Llama 3.1 405B in v5.0 (NeMo 25.01, context
parallelism 2): NVIDIA's on 512 to 8,192 H100, Nebius's on 512 and 1,024 H200.
Each step time is read from the submission's own result logs and each layout from its configuration files by
``tools/mlperf-records.py`` (``atscale/data/runs/mlperf.md`` says how). Added in November 2026, after the model
they judge: no constant was fitted on them. Five series of one release each at growing GPU counts, the scale drift
of issue 33 among them (:data:`atscale.accuracy.SCALE_SERIES`)."""

MOE_RUNS: tuple[Run, ...] = _group("Mixture of experts")
"""Published mixture-of-experts training runs with their layouts, all validation (no constant was fitted on them):
DeepSeek-V3 on H100 (NVIDIA's DGX Cloud recipes) and on DeepSeek's own 2,048 H800, Qwen3-235B-A22B with and without
the all-to-all overlapped, gpt-oss-120b, and Qwen3-30B-A3B under FSDP. Shown apart in the accuracy appendix: the
expert terms of the step-time model are new, and these runs judge them."""

MOE_FURTHER_RUNS: tuple[Run, ...] = _group("Mixture of experts, further runs")
"""Further published mixture-of-experts runs, all validation: Qwen3-235B-A22B on 256 H100 with its expert group
inside the node, as NVIDIA's Megatron-MoE-ModelZoo tabulates them (Megatron FSDP; a 32-stage pipeline with the
plain all-to-all dispatcher; tensor parallelism 4) and the same table's four long-context rows (the tensor-parallel-4
layout at 16k-131k tokens with context parallelism 1-8; each publishes Megatron-LM's rate per GPU,
``"model_flops_causal_per_gpu"``), and NVIDIA's Grok-1 recipe at its full 64 layers on 512, 1,024
and 2,048 H100 in BF16 and FP8 (dgxc-benchmarking v24.11.1, with the layout its scripts set; the one published
mixture of experts in both precisions on the same layouts: :func:`fp8_pairs` with ``moe=True``). Added after the
expert layer's operators were (November 2026), with each layout as printed, so that the expert terms are judged on
runs they were not written against."""

CALIBRATION_RUNS: tuple[Run, ...] = tuple(r for group in (KORTHIKANTI_TABLE5_RUNS, MEGATRON_TABLE1_RUNS, H100_RUNS)
                                          for r in group if r.role == "calibration")
"""The runs the constants of :class:`Calibration` were fitted on (:func:`calibrate`): the four MFUs of
Korthikanti et al. (2022), Table 5, and three rows of Narayanan et al. (2021), Table 1 (the smallest model, the
narrowest per-GPU width, the largest), so that the fit spans model widths 2,304-25,600 on A100 (and fixes
:attr:`Calibration.efficiency_max`, with the half-widths shared); three BF16 H100
runs of NVIDIA's tables (Llama 3.1 8B on 8 GPUs, 70B on 64, GPT-3 175B on 128: GQA, SwiGLU, 128k vocabularies,
context parallelism, 8k sequences; :attr:`Calibration.efficiency_max_h100`); and one FP8 run (Llama 3.1 70B on
64) for :attr:`Calibration.fp8_matmul_speedup`."""

BLACKWELL_RUNS: tuple[Run, ...] = _group("Blackwell recipes")
"""NVIDIA's published dense Blackwell steps that calibrate the operator-level compute on Blackwell
(:attr:`~atscale.calibration.Calibration.kernel_efficiency_blackwell`): Llama 3 8B on 8 B200 and on 8 GB200,
Megatron-Bridge 25.11, FP8 with current scaling (NVIDIA publishes no BF16 dense Blackwell step). Declared, with
the layouts the source's scripts set, before any Blackwell error was computed from them (November 2026). Not read
by the curve (:func:`~atscale.fitting.calibrate`), whose FP8 runs need a BF16 twin; the other Blackwell runs
(:data:`MLPERF_RUNS`, :data:`OTHER_STACK_RUNS`, :data:`MOE_RUNS`) validate the constant."""

OPERATOR_CALIBRATION_RUNS: tuple[Run, ...] = CALIBRATION_RUNS + tuple(r for r in BLACKWELL_RUNS
                                                                      if r.role == "calibration")
"""The runs the operator-level compute's kernel efficiencies are fitted on
(:func:`~atscale.fitting.calibrate_operators`): the BF16 runs of :data:`CALIBRATION_RUNS` for the A100 and H100
generations, and :data:`BLACKWELL_RUNS` for Blackwell."""

VALIDATION_RUNS: tuple[Run, ...] = tuple(r for group in (MEGATRON_TABLE1_RUNS, KORTHIKANTI_TABLE5_RUNS, OTHER_RUNS,
                                                         MEGASCALE_RUNS, H100_RUNS)
                                         for r in group if r.role == "validation")
"""Everything no constant was fitted on: seven rows of Megatron-LM's Table 1, Korthikanti et al.'s HFUs
(the same runs as the calibration MFUs, so only a check of the recomputation FLOPs, not an independent
validation), the 530B run with data parallelism, Llama 3's Table 4, MegaScale's Megatron-LM baseline and
sixteen of NVIDIA's H100 runs (:data:`H100_RUNS`)."""


@dataclass(frozen=True)
class FP8Pair:
    """A published FP8 run and its BF16 twin (same model, cluster, layout, sequence length and stack).

    ``label``: the FP8 run's label; ``model``: the model's name; ``hidden_size``: its width, elements;
    ``stack``: the training stack as the source names it; ``source``: the publisher in a few words (``"NVIDIA
    NeMo"``, ``"torchtitan"``, ``"llm-foundry"``); ``recipe``: the FP8 recipe as the record names it;
    ``seq_length``: tokens; ``published``: the BF16 step time over the FP8 one, as published (a rate's ratio
    inverted); ``operators``: the same ratio from the operator-level step time (``step_time(..., stack=...)``
    with each run's preset and recipe); ``curve``: from the calibrated curve with its flat FP8 factor
    (``stack=None``)."""

    label: str
    model: str
    hidden_size: int
    stack: str
    source: str
    recipe: str
    seq_length: int
    published: float
    operators: float
    curve: float


def _publisher(stack_name: str) -> str:
    for key, short in (("torchtitan", "torchtitan"), ("llm-foundry", "llm-foundry")):
        if key in stack_name:
            return short
    return "NVIDIA NeMo"


@functools.cache
def fp8_pairs(*, moe: bool = False, calibration: Calibration | None = None, rowwise: bool = False) -> tuple:
    """Every published FP8 run of :data:`atscale.runs.ALL_RUNS` whose BF16 twin is published too, as
    :class:`FP8Pair` records, narrowest model first: the dense models' (``moe`` False, the default), or the mixtures
    of experts' (``moe`` True: NVIDIA's Grok-1 recipe, BF16 and FP8 on the same layouts); ``rowwise`` True: the
    rowwise-scaled pairs left out below, alone.

    The twin is the run whose label is the FP8 run's with its closing "FP8" (and the recipe after it) replaced
    by "BF16", from the same published table, with the same model, cluster, layout, sequence length and stack
    preset. Left out unless ``rowwise``: torchtitan's rowwise-scaled FP8 rows, whose source says its vanilla
    tensor-parallel rowwise baseline is anomalously slow (torchtitan's async-TP benchmark, issue 1207); the model
    prices them from torchao's published rowwise speedups (:func:`atscale.kernels.rowwise_speedup`). The published
    ratio of
    step times is read from each run's published figure whatever its metric (:attr:`Run.published_seconds`).
    ``calibration`` (default :data:`CALIBRATION`): the constants both models take."""
    moe, rowwise = _v.flag("moe", moe), _v.flag("rowwise", rowwise)
    cal = CALIBRATION if calibration is None else calibration
    if not isinstance(cal, Calibration):
        raise ValueError(f"calibration={_v.show(calibration)} must be an atscale.calibration.Calibration")
    by_label = {r.label: r for r in ALL_RUNS}
    out = []
    for r in ALL_RUNS:
        if r.dtype != "fp8" or (r.details.get("float8_recipe") == "rowwise") != rowwise or r.model.is_moe != moe:
            continue
        twin = by_label.get(re.sub(r"FP8( \w+)?$", "BF16", r.label))
        if twin is None or twin.dtype != "bf16" or (twin.model, twin.cluster, twin.plan, twin.seq_length,
                                                    twin.stack_preset, twin.details.get("url")) != (
                r.model, r.cluster, r.plan, r.seq_length, r.stack_preset, r.details.get("url")):
            continue
        out.append(FP8Pair(
            label=r.label, model=r.model.name, hidden_size=r.model.hidden_size, stack=r.stack,
            source=_publisher(r.stack), recipe=str(r.details.get("float8_recipe") or "delayed"),
            seq_length=int(r.seq_length or r.model.seq_length), published=twin.published_seconds / r.published_seconds,
            operators=float(twin.step(cal, operators=True).total / r.step(cal, operators=True).total),
            curve=float(twin.step(cal, operators=False).total / r.step(cal, operators=False).total)))
    return tuple(sorted(out, key=lambda p: (p.hidden_size, p.label)))


# --------------------------------------------------------------------------------------
# An ablation: one published optimisation at a time (atscale/data/ablations/*.json)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AblationStep:
    """One row of a published ablation, where each row adds one optimisation to the row above.

    ``published_before`` and ``published``: the source's MFU before and after the step (fractions);
    ``published_gain``: their difference (fraction of MFU; 0.01 is one point). ``model_gain``: what the model
    predicts the step gains, as the relative speed-up of the modelled step applied to the published MFU before it
    (``published_before * (after / before - 1)``, so the steps the model cannot express, carried as published,
    do not shift the ones it can); ``None`` where the step is not expressible. ``model_before`` and ``model_after``:
    the model's MFUs of the two configurations (``None`` when not expressible). ``note``: how the step is
    expressed, or why it is not."""

    step: str
    published_before: float
    published: float
    model_before: float | None
    model_after: float | None
    note: str = ""

    @property
    def published_gain(self) -> float:
        return self.published - self.published_before

    @property
    def model_gain(self) -> float | None:
        if self.model_before is None:
            return None
        return self.published_before * (self.model_after / self.model_before - 1.0)

    @property
    def error_points(self) -> float | None:
        """``model_gain - published_gain`` in MFU points (1.0 = one point); ``None`` where not expressible."""
        return None if self.model_gain is None else 100.0 * (self.model_gain - self.published_gain)


ABLATION_TOLERANCE_POINTS = 1.0
"""The issue's target for each expressible step of MegaScale's ablation: the modelled gain within one MFU point of
the published one."""


def _ablation_record(name: str) -> dict:
    return json.loads((files("atscale") / "data" / "ablations" / f"{name}.json").read_text("utf-8"))


def _ablation_mfu(base: Run, settings: dict, calibration: Calibration, operators: bool) -> float:
    model = dataclasses.replace(base.model, **settings["model"])
    run = dataclasses.replace(base, model=model, plan=dataclasses.replace(base.plan, **settings["plan"]),
                              **settings["options"])
    return float(run.step(calibration, operators=operators).mfu)


def megascale_ablation(calibration: Calibration = CALIBRATION, *, operators: bool = False) -> tuple[AblationStep, ...]:
    """MegaScale's ablation (Jiang et al. 2024, Table 3: the 175B model on 256 A100, batch 256, each row one
    optimisation more), step by step, published against modelled (:class:`AblationStep`).

    The model starts from the Megatron-LM baseline's run record (:data:`MEGASCALE_RUNS`, 3,072 GPUs) on 256 GPUs
    with batch 256, and switches on each expressible step's setting in turn (the record
    ``atscale/data/ablations/megascale-table3.json`` says how each is expressed); ``operators``: the operator-level
    compute (:meth:`Run.step`) rather than the calibrated curve."""
    if not isinstance(calibration, Calibration):
        raise ValueError(f"calibration={_v.show(calibration)} must be an atscale.calibration.Calibration")
    _v.flag("operators", operators)
    return _remembered(_ABLATIONS, (id(calibration), operators), (calibration,),
                       lambda: _megascale_ablation(calibration, operators))


_ABLATIONS: dict = {}


def _megascale_ablation(calibration: Calibration, operators: bool) -> tuple[AblationStep, ...]:
    rec = _ablation_record("megascale-table3")
    base = next(r for r in ALL_RUNS if r.label == rec["base_run"])
    cluster = hardware.Cluster.of_gpus(base.cluster.node, rec["gpus"], base.cluster.fabric)
    dp = rec["gpus"] // (base.plan.tp * base.plan.pp * base.plan.cp)
    base = dataclasses.replace(base, cluster=cluster,
                               plan=dataclasses.replace(base.plan, dp=dp, global_batch=rec["global_batch"]))
    settings = {"model": {}, "plan": {}, "options": {}}
    before = _ablation_mfu(base, settings, calibration, operators)
    out, published_before = [], None
    for row in rec["steps"]:
        if published_before is None:  # the baseline itself
            published_before = row["mfu"]
            continue
        expressible = row.get("expressible", True)
        if expressible:
            for key in settings:
                settings[key] = {**settings[key], **row.get(key, {})}
            after = _ablation_mfu(base, settings, calibration, operators)
            out.append(AblationStep(row["step"], published_before, row["mfu"], before, after, row.get("note", "")))
            before = after
        else:
            out.append(AblationStep(row["step"], published_before, row["mfu"], None, None, row.get("note", "")))
        published_before = row["mfu"]
    return tuple(out)


def megascale_ablation_baseline(calibration: Calibration = CALIBRATION, *, operators: bool = False) -> tuple:
    """``(published, modelled)`` MFU of the ablation's baseline row (fractions): MegaScale's Megatron-LM on 256
    A100 with batch 256 (Jiang et al. 2024, Table 3, first row), the model from the same record as
    :func:`megascale_ablation`."""
    steps = megascale_ablation(calibration, operators=operators)
    return steps[0].published_before, steps[0].model_before
