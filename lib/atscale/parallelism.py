"""3D parallelism and beyond: what a layout (``Plan``) costs in seconds per step, and the best layout.

A step of a replica laid out as ``tp x cp x pp x dp`` (a :class:`~atscale.plan.Plan`) is modelled as the
sum of nine parts (a tenth, ``straggler``, with ``stragglers=``), per GPU, on the critical path of the pipeline stage that sets the pace (Narayanan et
al. 2021, sec. 3; Korthikanti et al. 2022, sec. 6). Each part is a small function of the same name as the
chapter's section:

``compute``
    each layer's matmuls at :func:`compute_efficiency` x the measured matmul ceiling of the step's dtype
    (FP8 or BF16), its attention core (the causal half a fused kernel executes) in BF16, and its
    memory-bound kernels at the HBM bandwidth (:func:`_layer_times`); the output layer on the last stage;
``recompute``
    what activation recomputation runs again (:func:`_layer_times`);
``tp_comm``
    the tensor-parallel collectives, minus what pipelining them with the matmuls hides (:func:`_tp_comm`);
``cp_comm``
    context parallelism's exchange of keys and values (a ring, minus what hides behind attention; an all-gather;
    or DeepSpeed-Ulysses' all-to-alls: ``Plan.cp_algorithm``; :func:`_cp_comm`, :func:`context_parallel_bytes`);
``ep_comm``
    a mixture of experts' all-to-all dispatch and combine, what is not hidden (:func:`_ep_comm`);
``pp_comm``
    the point-to-point sends between pipeline stages (:func:`_pp_comm`; with ``Plan.pp_overlap``, only the
    pipeline's fill and drain and what the computation cannot cover: :func:`_pp_overlap`);
``bubble``
    the pipeline's fill and drain, ``(p - 1) / (v m)`` of the work above (:func:`bubble_fraction`), with the
    fullest stage setting the pace (:func:`stage_layers`: any number of layers on any ``pp x v``);
``dp_comm``
    the data-parallel gradient reduction and the ZeRO/FSDP/HSDP gathers over the ``dp x cp`` GPUs that hold
    the same weights, minus what hides behind compute (:func:`_dp_comm`);
``optimizer``
    the optimizer step, memory-bound: bytes of Adam's update over the HBM bandwidth;
``straggler`` (opt-in, ``stragglers=True``; default off: 0 and not listed by :meth:`StepTime.parts`)
    the wait for the slowest of the job's GPUs: :func:`atscale.stragglers.straggler_fraction` of the
    compute and recomputation (:mod:`atscale.stragglers`).

``total`` is their sum, exactly. Communication costs come from :mod:`atscale.collectives`, memory
from :mod:`atscale.memory`, FLOPs from :mod:`atscale.models`. A layout that cannot run (wrong GPU
count, ``tp`` beyond a node or not dividing the heads, more chunks than layers, memory overflow beyond the
stated margin) is an explicit *infeasible* result with its reason, and NaN times: never normal-looking
numbers. The calibrated constants travel as a :class:`~atscale.calibration.Calibration` argument; nothing is
patched.

Everything is vectorised: :func:`evaluate` broadcasts over arrays of plan fields, and
:func:`atscale.search.search` evaluates every layout of a cluster at once.

This module is the plan-level step time. Its neighbours:

* :mod:`atscale.calibration`: the calibrated constants (:class:`~atscale.calibration.Calibration`,
  :data:`~atscale.calibration.CALIBRATION`);
* :mod:`atscale.search`: every layout of a cluster, evaluated and ranked (:func:`~atscale.search.search`);
* :mod:`atscale.runs`: the published runs the model is compared with, read from JSON records
  (:class:`~atscale.runs.Run`, :data:`~atscale.runs.CALIBRATION_RUNS`, :data:`~atscale.runs.VALIDATION_RUNS`);
* :mod:`atscale.fitting`: the fit of the constants on the calibration runs (:func:`~atscale.fitting.calibrate`);
* :mod:`atscale._numeric`: the operation namespaces through which the cost terms run on one plan or on arrays;
* :mod:`atscale.plan` and :mod:`atscale.pipeline`: the layout and the pipeline schedules.

Every name that moved is still named here (``parallelism.search``, ``parallelism.Run``,
``parallelism.H100_RUNS``, ``parallelism.calibrate``, ...): the modules that import this one are looked up on first
use, so importing this module reads no published-run data.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
import types
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from . import _validate as _v
from . import collectives, hardware, memory, models
from ._numeric import _ArrayOps, _ScalarOps
from .calibration import (CALIBRATION, COMPUTE_EFFICIENCY_MAX, COMPUTE_EFFICIENCY_MAX_H100,  # noqa: F401 (re-exported)
                          COMPUTE_HALF_HIDDEN, COMPUTE_HALF_WIDTH, H100_ERA, Calibration)
from . import units as u
from .plan import CP_ALGORITHMS, FP8_CACHES, PLACEMENT_ORDERS, RECOMPUTE, RECOMPUTE_MODULES, SCHEDULES, Plan, _modules_arg
from .plan import _rank_strides
from .plan import StageLayers, _stage_layers, stage_layers  # re-exported: the split lives beside the Plan
from . import pipeline as _pipeline
from .pipeline import MAX_SIMULATED_PASSES, Timeline, pipeline_timeline  # re-exported: they live in pipeline
from .roofline import ADAM_BYTES_PER_PARAM
from . import operators as _operators
from . import stragglers as _stragglers

__all__ = [
    "Calibration", "CALIBRATION", "H100_ERA", "COMPUTE_EFFICIENCY_MAX", "COMPUTE_EFFICIENCY_MAX_H100",
    "COMPUTE_HALF_WIDTH", "COMPUTE_HALF_HIDDEN", "PARTS",
    "PART_LABELS", "SELECTIVE_RECOMPUTE_FACTOR", "FLASH_CAUSAL_FRACTION", "DP_OVERLAP", "SEQUENCE_PARALLEL_COMM_FACTOR",
    "GRADIENT_ACCUMULATION_BYTES", "FSDP_GATHER_BYTES", "ACTIVATION_BYTES", "FP8_CAST_BYTES", "LOGITS_BYTES", "MEMORY_MARGIN",
    "bubble_fraction", "bubble_fraction_of_total", "StageLayers", "stage_layers", "stage_loads",
    "layers_per_stage",
    "compute_efficiency", "elementwise_bytes_per_token", "context_parallel_bytes", "StepTime", "step_time", "evaluate",
    "SearchResult", "search",
    "Run", "METRICS", "MEGATRON_TABLE1_RUNS", "KORTHIKANTI_TABLE5_RUNS", "OTHER_RUNS", "H100_RUNS",
    "MEGASCALE_RUNS", "MOE_RUNS", "CALIBRATION_RUNS", "VALIDATION_RUNS", "A2A_OVERLAP_SM_SHARE", "A2A_WARMUP",
    "a2a_exposed_chunks",
    "calibrate", "amdahl_speedup", "rank_groups", "Timeline", "pipeline_timeline", "MAX_SEARCH_LAYOUTS", "MAX_RANKS",
    "RecomputeChoice", "RECOMPUTE_CHOICES", "recompute_choices", "recompute_table",
]


SELECTIVE_RECOMPUTE_FACTOR = 12.0
"""Selective recomputation's extra hardware FLOPs per token per layer without a fused attention kernel, in
units of ``s h``: the attention-score block (``QK^T``, softmax, dropout, attention over ``V``) is recomputed,
and Korthikanti et al. (2022, sec. 6.3 and App. A) count hardware/model FLOPs ``~ 1 + s/6h`` for it, i.e.
``12 l s h`` FLOPs per token on top of ``72 l h^2`` (their Table 5's HFU/MFU ratios reproduce with it). With a
fused (FlashAttention) kernel, selective recomputation re-runs the attention forward instead."""

FLASH_CAUSAL_FRACTION = 0.5
"""Share of the attention core's model FLOPs (``12 s h`` per token per layer, the full ``s x s`` matrix) that a
fused causal kernel executes (dimensionless): it skips the blocks above the diagonal (Dao 2023,
FlashAttention-2, sec. 3.1). Without a fused kernel the full matrix is computed, then masked (1.0)."""

DP_OVERLAP = 1.0
"""Default fraction of the compute that data-parallel (and FSDP) communication may hide behind
(dimensionless): bucketed gradient reduction (Li et al. 2020; Megatron-Core ``overlap_grad_reduce``), the
parameter all-gather behind the next forward (``overlap_param_gather``), FSDP's prefetch. The 2021-22
Megatron runs did *not* overlap it (Korthikanti et al. 2022, sec. 6.3), so their records set ``dp_overlap=0``."""

SEQUENCE_PARALLEL_COMM_FACTOR = 1.0
"""Sequence parallelism replaces each all-reduce by a reduce-scatter plus an all-gather of the same total volume
(Korthikanti et al. 2022, sec. 4.2.2); this multiplies their time (dimensionless; 1.0: same cost)."""

GRADIENT_ACCUMULATION_BYTES = 4.0
"""Bytes per element of the gradient the data-parallel group reduces when the optimizer layout keeps an FP32
gradient buffer (Megatron's default for BF16, :data:`atscale.memory.OPTIMIZERS`); otherwise the layout's own
``gradients`` bytes are used."""

FSDP_GATHER_BYTES = 2.0
"""Bytes per parameter that ZeRO-2 and ZeRO-3 (FSDP) all-gather when the optimizer layout keeps FP32 weights
(``adam-fp32``): the 16-bit copy the forward computes with, not the FP32 shard. PyTorch FSDP casts each shard to
``MixedPrecision.param_dtype`` before its all-gather (FSDP1; FSDP2's ``MixedPrecisionPolicy.param_dtype`` is "the
dtype for the unsharded parameter and hence ... the parameter all-gather"), and the stacks whose runs the book
validates set it to BF16: torchtitan's default ``mixed_precision_param = "bfloat16"``, Composer's ``DEFAULT`` mixed
precision (``param_dtype`` = the autocast dtype, ``reduce_dtype`` = FP32: mosaicml/composer,
``composer/distributed/mosaic_parallelism.py``, ``get_mixed_precision``). A layout whose weights are already 16-bit
gathers its own bytes. ZeRO-1 (Megatron's distributed optimizer) gathers the layout's weights as they are."""

ACTIVATION_BYTES = 2.0
"""Bytes per element of the activations (and their gradients) that tensor-, context- and pipeline-parallel
communication moves: BF16 (FP8 recipes keep communication in BF16; Transformer Engine)."""

FP8_CAST_BYTES = 3.0
"""Bytes an FP8 recipe moves per element it casts (read BF16, write FP8; Transformer Engine fuses the
transpose into the same pass), charged on every matmul input: forward activations and backward gradients."""

LOGITS_BYTES = 4.0
"""Bytes per logit the loss keeps on the last stage (FP32, :func:`atscale.memory.logits_bytes`)."""

MEMORY_MARGIN = 0.08
"""The memory model's stated margin (dimensionless, a fraction of the usable capacity). What it leaves out
cuts both ways: the CUDA context and NCCL buffers (1-2 GB), allocator fragmentation and temporary buffers
add memory; frameworks' savers (freeing the pipeline's sent activations, offloading, fused losses) remove
some. A layout within the margin of capacity is *tight*: reported as such, never refused; only one more
than the margin over capacity is infeasible."""

A2A_WARMUP = ("NVIDIA Megatron-LM at b0cc270 (the commit Megatron-Bridge v0.3.0 pins), "
              "megatron/core/pipeline_parallel/combined_1f1b.py and schedules.py: with "
              "overlap_moe_expert_parallel_comm the all-to-all of one micro-batch's forward runs behind another's "
              "backward only in the 1F1B steady phase; without pipelining the first micro-batch's forward and the "
              "last one's backward run alone ('no a2a overlapping'), and with the interleaved schedule every warm-up "
              "forward and cool-down backward does: get_pp_rank_microbatches gives the first rank "
              "2 (p - 1) + (v - 1) g + 1 warm-up chunks (g, microbatch_group_size_per_vp_stage, p by default; the "
              "extra one 'to ensure the forward and backward computations are independent in all 1f1b steps'); taken to "
              "hold for the earlier '1F1B overlap' of Megatron-LM's moe_dev branch, which Megatron-MoE-ModelZoo's "
              "Qwen3 table ran (not read)")
"""Where Megatron-Core's expert-parallel overlap leaves the all-to-all exposed: the source read for
:func:`_a2a_warmup`."""

A2A_OVERLAP_SM_SHARE = 20 / 132
"""Share of a GPU's streaming multiprocessors that overlapped all-to-all communication occupies (dimensionless):
DeepSeek-V3 dedicates 20 of an H800's 132 SMs to its dispatch and combine kernels so that they run beside the
computation (DeepSeek-AI 2024, DeepSeek-V3 Technical Report, sec. 3.2.2); the computation runs on the rest. The
step-time model slows the layer's compute by this share whenever ``a2a_overlap`` is on with ``ep > 1``. NVIDIA's
report on Megatron-Core's expert stack puts the cost of DeepEP's 20 SMs at about 20 % of the GEMMs' efficiency
(Yan et al. 2026, arXiv:2603.07685, sec. 4.2.3), a little more than this share."""

_SCHEDULE_CODE = {name: i for i, name in enumerate(SCHEDULES)}
_RECOMPUTE_CODE = {name: i for i, name in enumerate(RECOMPUTE)}
_CP_CODE = {name: i for i, name in enumerate(CP_ALGORITHMS)}
_ORDER_CODE = {name: i for i, name in enumerate(PLACEMENT_ORDERS)}
_ORDER_DEFAULT = len(PLACEMENT_ORDERS)  # Plan.order None: the network's default (collectives.placement_order)
_V_SHAPED_CODES = tuple(_SCHEDULE_CODE[name] for name in _pipeline.V_SHAPED)


# --------------------------------------------------------------------------------------
# Pipeline bubble and the pipeline split
# --------------------------------------------------------------------------------------
def bubble_fraction(pp, micro_batches, virtual_stages=1):
    """Pipeline bubble as a fraction of the ideal (bubble-free) time: ``(p - 1) / (v m)``.

    ``p`` stages, ``m`` micro-batches per replica per step, ``v`` model chunks per GPU (1 unless the
    schedule is interleaved). GPipe and 1F1B have the same bubble ``(p - 1)/m`` (they differ in memory:
    GPipe holds all ``m`` micro-batches' activations, 1F1B at most ``p``); the interleaved schedule
    divides it by ``v`` at the price of ``v`` times the point-to-point traffic. Source: Narayanan et al.
    (2021), sec. 2.2.1-2.2.2. Classic misreading: this is bubble over *useful* time; the bubble's share
    of the *total* pipeline time is :func:`bubble_fraction_of_total`. Vectorised; dimensionless.
    """
    p, m, v = (_v.count(name, value, scalar=False) for name, value in
               (("pp", pp), ("micro_batches", micro_batches), ("virtual_stages", virtual_stages)))
    p, m, v = (np.asarray(x, dtype=float) for x in _v.broadcast(pp=p, micro_batches=m, virtual_stages=v))
    result = (p - 1) / (v * m)
    return float(result) if result.ndim == 0 else result


def bubble_fraction_of_total(pp, micro_batches, virtual_stages=1):
    """The bubble's share of the whole pipeline time: ``(p - 1) / (v m + p - 1)`` (dimensionless).

    ``f / (1 + f)`` with ``f`` = :func:`bubble_fraction`: the idle share of a GPU's step, which is
    what the system-design write-up's ``(stages - 1) / (micro_batches + stages - 1)`` measures (for
    ``v = 1``). GPipe's paper (Huang et al. 2019, sec. 2.3) states the same quantity as
    ``O((K - 1)/(M + K - 1))``. Vectorised.
    """
    f = np.asarray(bubble_fraction(pp, micro_batches, virtual_stages))
    result = f / (1 + f)
    return float(result) if result.ndim == 0 else result


def stage_loads(num_layers: int, pp: int, virtual_stages: int = 1, *, account_for_embedding=False,
                account_for_loss=False) -> np.ndarray:
    """Layer slots of every pipeline stage, stage 0 first (an array of ``pp`` floats): its transformer layers,
    plus 1 on stage 0 for the embedding and 1 on the last stage for the output layer and loss where they are
    accounted for (:func:`stage_layers` gives the first, fullest middle and last of these without the slots).

    The same split as :func:`stage_layers`: ``l`` layers plus the accounted slots cut into ``pp x v`` chunks,
    the first ``slots mod (pp v)`` one slot fuller, chunk ``k`` on stage ``k mod pp``. Scalars only."""
    l = _v.count("num_layers", num_layers)
    p, v = _v.count("pp", pp), _v.count("virtual_stages", virtual_stages)
    emb, loss = (int(_v.flag(n, x)) for n, x in (("account_for_embedding", account_for_embedding),
                                                  ("account_for_loss", account_for_loss)))
    slots = l + emb + loss
    if p * v > slots:
        raise ValueError(f"pp={p} x virtual_stages={v} chunks exceed the {slots} layer slots: some chunks would "
                         "be empty")
    q, r = divmod(slots, p * v)
    chunk = q + (np.arange(p * v) < r)
    return chunk.reshape(v, p).sum(axis=0).astype(float)


def layers_per_stage(num_layers: int, pp):
    """Layers on the fullest pipeline stage: ``ceil(l / p)`` (:func:`stage_layers` with one chunk per stage
    and nothing else accounted for). Vectorised."""
    num_layers = _v.count("num_layers", num_layers)
    p = np.asarray(_v.count("pp", pp, scalar=False))
    result = -(-num_layers // p)
    return int(result) if np.ndim(result) == 0 else result


def _in_flight(pp, v, m, gpipe, inter, stage_from_end, xp=np, flat=None):
    """Micro-batches' worth of a stage's layers whose activations it holds at its peak: stage ``i`` of 1F1B
    (and ZB-H1) holds ``p - i``; interleaved stage ``i`` has ``2 (p - i - 1) + (v - 1) p + 1`` chunks in flight,
    each ``1/v`` of its layers (Megatron-LM's warm-up; Korthikanti et al. 2022, sec. 4.2.3 for stage 0); GPipe
    all ``m``; ``flat``, where given, on every stage (ZB-H2 ``2p - 1``, DualPipe ``p + 1``, DualPipeV ``p + 1/2``,
    ZB-V ``p``:
    :func:`atscale.pipeline.activation_in_flight`). Never more than ``m``. ``stage_from_end``: ``p - i - 1``."""
    one_f_one_b = stage_from_end + 1
    interleaved = (2 * stage_from_end + (v - 1) * pp + 1) / v
    held = xp.where(gpipe, m, xp.where(inter, interleaved, one_f_one_b))
    if flat is not None:
        held = xp.where(flat > 0, flat, held)
    return xp.maximum(xp.minimum(held, m), 1.0)


def compute_efficiency(model: models.TransformerConfig, tp, calibration: Calibration = CALIBRATION,
                       accelerator: hardware.Accelerator | str = "H100 SXM"):
    """Achievable fraction of the measured matmul ceiling for a layer's matmuls split ``tp`` ways (dimensionless).

    ``e = E_max * w / (w + w_half) * h / (h + h_half)`` with ``w = h / tp``: saturating in the per-GPU
    width and in the model width (:class:`Calibration`; the fitted :data:`CALIBRATION` by default), with
    ``E_max`` of ``accelerator``'s generation (:meth:`Calibration.efficiency_max_for`; the H100 by default).
    An empirical form, not a derivation: wide per-GPU matrices run near the ceiling and narrow ones do not.
    Vectorised over ``tp``.
    """
    h = models.model(model).hidden_size
    if not isinstance(calibration, Calibration):
        raise ValueError(f"calibration={_v.show(calibration)} must be an atscale.parallelism.Calibration")
    cal = calibration.for_accelerator(accelerator)
    return _efficiency(h, np.asarray(_v.count("tp", tp, scalar=False), dtype=float), cal)


def _efficiency(h, tp, cal: Calibration):
    w = h / tp
    return cal.efficiency_max * w / (w + cal.half_width) * h / (h + cal.half_hidden)


@functools.lru_cache(maxsize=64)
def elementwise_bytes_per_token(model: models.TransformerConfig, seq_length: int) -> tuple[float, float]:
    """HBM bytes per token per layer of a training step's memory-bound kernels: ``(replicated, parallel)``.

    The forward kernels of :func:`atscale.roofline.layer_ops` other than the weight GEMMs (MLA: its four input
    projections) and the attention core (norms, RoPE, the SwiGLU product, residual adds), times 3 for forward
    plus backward (each backward kernel reads its saved inputs and the incoming gradient and writes the outgoing
    one, about twice the forward's traffic). ``replicated``: outside the tensor-parallel region (norms, residual adds), split over
    TP only with sequence parallelism; ``parallel``: inside it, split over TP. Bytes.
    """
    from . import roofline

    ops = roofline.layer_ops(model, 1, seq_length)  # one sequence: seq_length tokens
    skip = set(roofline.GEMM_OPS) | {name for name, _, _ in model.attention_projections()} | {"attention (fused)"}
    replicated = sum(op.bytes for name, op in ops.items() if name.startswith(("norms", "residual")))
    parallel = sum(op.bytes for name, op in ops.items() if name not in skip) - replicated
    return 3.0 * float(replicated) / seq_length, 3.0 * float(parallel) / seq_length


# --------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------
PARTS = ("compute", "recompute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "bubble", "dp_comm", "optimizer")
"""The parts of a step, in the order they are summed into ``total``."""

PART_LABELS = MappingProxyType({
    "compute": "compute", "recompute": "recomputation", "tp_comm": "tensor-parallel comm. (exposed)",
    "cp_comm": "context-parallel comm. (exposed)", "ep_comm": "expert all-to-all (exposed)", "pp_comm": "pipeline send/recv", "bubble": "pipeline bubble",
    "dp_comm": "data-parallel comm. (exposed)", "optimizer": "optimizer step",
    "straggler": "slowest of N (stragglers)"})


@dataclass(frozen=True)
class StepTime:
    """One training step of a layout, per GPU (seconds; arrays when evaluated over many plans).

    The parts are on the critical path of the pipeline stage that sets the pace and add up to :attr:`total`
    exactly. An infeasible layout has ``feasible`` False, its ``reason``, and NaN for every time and rate.
    ``memory_total`` is the per-GPU memory of the fuller of the first and last stage, ``memory_status`` the
    verdict against the usable capacity (``"fits"``; ``"tight"`` within :data:`MEMORY_MARGIN`; ``"over"`` beyond it, only
    when the memory check was turned off); for a
    term-by-term memory breakdown of an evenly split plan, :func:`atscale.memory.breakdown`.

    MFU convention: model FLOPs (``6N + 12lsh`` per token, full attention matrix) over the **BF16** dense peak
    (:attr:`peak_flops`), as Llama 3 and NVIDIA's performance tables report it, whatever the matmuls ran in;
    :attr:`mfu_at_dtype_peak` reads the same throughput against the peak of the step's ``dtype`` (FP8: half).
    """

    compute: object
    recompute: object
    tp_comm: object
    cp_comm: object
    ep_comm: object
    pp_comm: object
    bubble: object
    dp_comm: object
    optimizer: object
    tokens_per_step: object
    model_flops_per_step: object
    hardware_flops_per_step: object
    gpus: int
    peak_flops: float
    feasible: object
    reason: object
    memory_total: object
    memory_capacity: float
    memory_status: object = ""
    dtype: str = "bf16"
    dtype_peak_flops: float | None = None
    causal_flops_ratio: float = 1.0
    plan: Plan | None = None
    straggler: object = 0.0
    stragglers: object = None

    @classmethod
    def _of(cls, **fields) -> "StepTime":
        """A StepTime of already-checked fields without the frozen dataclass's per-field ``__setattr__`` (the
        scalar path's largest fixed cost); equal to ``StepTime(**fields)``, which has no ``__post_init__``."""
        obj = object.__new__(cls)
        obj.__dict__.update(_STEP_DEFAULTS)
        obj.__dict__.update(fields)
        return obj

    @property
    def total(self):
        """Seconds per optimizer step: the parts summed in the order of :data:`PARTS`, then ``straggler`` (0
        unless the step was evaluated with ``stragglers``)."""
        total = self.compute
        for name in PARTS[1:]:
            total = total + getattr(self, name)
        return total + self.straggler

    def parts(self) -> dict:
        """``{part: seconds}`` in the order of :data:`PARTS`, and ``straggler`` last when the step was evaluated
        with a straggler model (``stragglers``, :mod:`atscale.stragglers`); they add up to :attr:`total`."""
        out = {name: getattr(self, name) for name in PARTS}
        if self.stragglers is not None:
            out["straggler"] = self.straggler
        return out

    @property
    def tokens_per_second(self):
        """Training throughput of the whole cluster, tokens/s."""
        return self.tokens_per_step / self.total

    @property
    def model_flops_per_gpu(self):
        """Model FLOPs (``6N + 12lsh`` per token, no recomputation) per second per GPU, FLOP/s."""
        return self.model_flops_per_step / self.total / self.gpus

    @property
    def model_flops_causal_per_gpu(self):
        """:attr:`model_flops_per_gpu` with the attention core counted for its causal half (``6N + 6lsh`` per token),
        FLOP/s: the count Megatron-LM's ``--log-throughput`` prints since it halved the attention matrix
        (``num_floating_point_operations`` in its ``training.py``: ``seq_length / hidden_size / 2``)."""
        return self.model_flops_per_gpu * self.causal_flops_ratio

    @property
    def hardware_flops_per_gpu(self):
        """FLOPs counted with recomputation per second per GPU, FLOP/s."""
        return self.hardware_flops_per_step / self.total / self.gpus

    @property
    def mfu(self):
        """Model FLOPs utilisation against the BF16 dense peak (Chowdhery et al. 2022; see the class docstring)."""
        return self.model_flops_per_gpu / self.peak_flops

    @property
    def mfu_causal(self):
        """MFU with the attention core counted for its causal half (``6N + 6lsh`` per token), the convention of
        reports that count only the FLOPs a causal model needs; :attr:`mfu` counts the full matrix."""
        return self.mfu * self.causal_flops_ratio

    @property
    def mfu_at_dtype_peak(self):
        """Model FLOPs utilisation against the dense peak of the step's ``dtype`` (FP8: the FP8 peak)."""
        return self.model_flops_per_gpu / (self.dtype_peak_flops or self.peak_flops)

    @property
    def hfu(self):
        """Hardware FLOPs utilisation: :attr:`hardware_flops_per_gpu` over the BF16 dense peak."""
        return self.hardware_flops_per_gpu / self.peak_flops

    def __repr__(self):
        if np.ndim(self.compute):
            return f"StepTime(<{np.size(self.compute)} plans>)"
        if not self.feasible:
            return f"StepTime(infeasible: {self.reason})"
        parts = ", ".join(f"{k} {u.fmt_time(v)}" for k, v in self.parts().items())
        tight = {"tight": "; memory tight", "over": "; memory over capacity (not checked)"}.get(self.memory_status, "")
        return f"StepTime({parts}; total {u.fmt_time(self.total)}, MFU {self.mfu:.1%}{tight})"


_STEP_DEFAULTS = {f.name: (f.default if f.default is not dataclasses.MISSING else None)
                  for f in dataclasses.fields(StepTime)}
"""What :meth:`StepTime._of` starts from: every field's default (``None`` where it has none)."""


# --------------------------------------------------------------------------------------
# The core: one small function per cost term, on plan fields as arrays (evaluate, search) or as plain
# Python numbers (step_time), through the operations namespace ``c.xp``
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Context:
    """What the model, cluster and options fix for every layout of one evaluation (floats, SI units), checked
    once; the cost terms below take it and do no checking of their own."""

    model: models.TransformerConfig
    s: float
    gemm_rate: float  # the matmul ceiling of the step's dtype, FLOP/s
    attention_rate: float  # the BF16 ceiling: attention stays in BF16 in FP8 recipes
    hbm: float
    up: collectives.LinkCost  # NVLink, per GPU
    rail: collectives.LinkCost  # one NIC per GPU
    gpus_per_node: int
    opt: memory.Optimizer
    flash: bool
    fp8: bool
    calibration: Calibration
    k: types.SimpleNamespace  # the model's constants (parameter counts, FLOPs per token, activation terms)
    xp: object = _ArrayOps
    ops: object = None  # the operator-level compute's constants (operators._context), or None: the efficiency curve
    contention: float = 0.0  # the share of compute an overlapped collective takes (the stack's comm_sm_share)
    tiers: tuple = ()  # a multi-tier fabric's ((domain, LinkCost), ...) bottom-up (collectives._tier_costs); () untiered


def _ceiling(acc: hardware.Accelerator, dtype: str, cal: Calibration) -> float:
    """The matmul ceiling of ``dtype`` in FLOP/s: the measured one where published, or the one the catalog assumes
    from another part (:meth:`~atscale.hardware.Accelerator.matmul_rate`; else 80 % of the dense peak);
    FP8 is the BF16 ceiling times :attr:`Calibration.fp8_matmul_speedup` (what FP8 gains in training, not the
    2x of the datasheet)."""
    if dtype == "fp8" and "bf16" in acc.peak_flops:
        return _ceiling(acc, "bf16", cal) * cal.fp8_matmul_speedup
    measured = acc.matmul_rate(dtype)
    return measured if measured else 0.8 * acc.peak(dtype)


def _link_time(op, size, ranks, on_node, c: _Context):
    """``op`` over ``ranks`` GPUs on NVLink where ``on_node``, else on the NICs (one per GPU); 0 for one rank."""
    xp = c.xp
    n = xp.maximum(ranks, 2.0)
    if isinstance(on_node, bool):  # one link for every layout (or one layout): price it alone
        t = collectives._time(op, "ring", size, n, c.up if on_node else c.rail)
    else:
        t = xp.where(on_node, collectives._time(op, "ring", size, n, c.up),
                     collectives._time(op, "ring", size, n, c.rail))
    return xp.where(ranks > 1, t, 0.0)


def _operator_times(L, c: _Context) -> dict:
    """:func:`_layer_times` from the layer's operators, timed (:mod:`atscale.operators`): ``gemm`` the matmuls,
    ``attention`` the fused (or unfused) attention core, ``elementwise`` the memory-bound kernels and the fixed
    per-kernel costs, each forward plus backward; full recomputation runs the forward of all of them again,
    selective recomputation the attention core's forward (Korthikanti et al. 2022, sec. 5)."""
    xp, k = c.xp, c.k
    rows = _operators._rows(L, c.ops, xp)
    r = _operators._summed(rows, c.ops, xp)
    gemm, attention = sum(r["matmul"]), sum(r["attention"])
    if k.moe:
        slowed = xp.where(L.a2a & (L.ep > 1), 1 / (1 - A2A_OVERLAP_SM_SHARE), 1.0)  # SMs lent to the all-to-all
        gemm, attention = gemm * slowed, attention * slowed
    elementwise = sum(r["memory-bound"]) + sum(r["fixed per kernel"])
    forward = sum(v[0] for v in r.values())
    full = L.reco == _RECOMPUTE_CODE["full"]

    def selective():  # the forward of the recomputed modules' operators (with their kernels' fixed time)
        gap, parts = _operators.kernels.KERNEL_GPU_SECONDS, {"core_attn": r["attention"][0]}
        for module, names in (("layernorm", _NORM_OPS), ("act", _ACT_OPS), ("mlp", _MLP_OPS),
                              ("mla_up_proj", _MLA_UP_OPS if k.mla else ())):
            if _anywhere(L, module, xp):
                parts[module] = sum(f_ + (n_f * gap if cls == "memory-bound" else 0.0)
                                    for name, cls, f_, _, n_f, _ in rows if name in names)
        if _anywhere(L, "alternate_mm", xp):  # every second matmul (a share of the QKV GEMM: its keys), what feeds them
            up = (1.0 if c.ops.stack.gate_up_apart else 0.5) if k.gated else 0.0  # a fused gate-and-up GEMM: half
            share = {**_ALTERNATE_MM_OPS, "QKV projection": k.key_share, "key projection": 1.0, "MLP up": up,
                     "MLP down": 0.0 if k.gated else 1.0}
            parts["alternate_mm"] = sum(share[name] * (f_ + (n_f * gap if cls == "memory-bound" else 0.0))
                                        for name, cls, f_, _, n_f, _ in rows if name in share)
        return _selective_sum(L, parts, xp)

    recompute = xp.where(full, forward, xp.lazy_where(L.reco == _RECOMPUTE_CODE["selective"], selective,
                                                      lambda: 0.0))
    extra = xp.where(full, 2 * k.layer_matmul + 4 * c.s * k.aw, _selective_flops(L, c, xp))
    column_bwd = (sum(b_ for name, _, _, b_, _, _ in rows if name in c.ops.columns)  # behind their collectives
                  if c.ops.stack.tp_backward_async else 0.0)
    return dict(gemm=gemm, attention=attention, elementwise=elementwise, recompute=recompute, extra_flops=extra,
                tokens=L.b * c.s / L.cp, full=full, mlp_again=_recomputes(L, "mlp"), column_bwd=column_bwd)


_NORM_OPS = ("norms (x2)", "LayerNorm (x2)")
_ACT_OPS = ("SwiGLU product", "MLP activation")
_MLP_OPS = ("MLP gate", "MLP up", "MLP down", "router", "routed experts", "router scores and top-k", "token permutation",
            "token un-permutation", *_ACT_OPS)
_MLA_UP_OPS = ("query up-projection", "key-value up-projection", "RoPE")
"""The operators (:func:`atscale.operators._rows`) each recompute module of :data:`atscale.plan.RECOMPUTE_MODULES`
runs again, beside the attention core."""
_ALTERNATE_MM_OPS = MappingProxyType({"attention output": 1.0, "RoPE": 1.0, "residual adds (x2)": 0.5})
"""``"alternate_mm"``'s operators and the share of each it runs again: the attention output projection, the rotary
embedding and one of the two residual sums; beside them the key projection's share of the QKV GEMM (the model's
``key_share``, or all of the key projection where the stack runs it apart) and the MLP's up projection (gated: all of it, or half of a fused gate-and-up GEMM) or its down
projection (not gated)."""


def _anywhere(L, module: str, xp) -> bool:
    """Whether any plan of ``L`` recomputes ``module`` (to skip pricing a module no plan recomputes)."""
    on = L.again[module]
    return bool(on) if xp is _ScalarOps else bool(np.any(on))


def _selective_sum(L, parts: dict, xp):
    """Seconds of selective recomputation: the forward of each module the plan recomputes (``parts``, by module;
    a module absent from ``parts`` is recomputed by no plan); ``"mlp"`` includes ``"act"``."""
    total = 0.0
    for m in ("core_attn", "layernorm", "mlp", "mla_up_proj", "alternate_mm"):
        if m in parts:
            total = total + xp.where(L.again[m], parts[m], 0.0)
    if "act" in parts:
        total = total + xp.where(L.again["mlp"], 0.0, xp.where(L.again["act"], parts["act"], 0.0))
    return total


def _selective_flops(L, c: _Context, xp):
    """Hardware FLOPs per token that selective recomputation adds per layer: the attention core's forward
    (Korthikanti et al. 2022, sec. 5) and, with ``"mlp"``, the MLP's forward matmuls, with ``"mla_up_proj"`` MLA's
    up-projections (``2`` FLOPs per weight)."""
    core = (4.0 if c.flash else SELECTIVE_RECOMPUTE_FACTOR) * c.s * c.k.aw
    return (xp.where(_recomputes(L, "core_attn"), core, 0.0) + xp.where(_recomputes(L, "mlp"), 2.0 * c.k.mlp_matmul, 0.0)
            + xp.where(_recomputes(L, "mla_up_proj"), 2.0 * c.k.mla_up_matmul, 0.0)
            + xp.where(_recomputes(L, "alternate_mm"), 2.0 * c.k.alt_matmul, 0.0))


LAYER_FIELDS = ("b", "tp", "cp", "sp", "ep", "etp", "load", "zs", "reshard", "tp_overlap", "a2a", "reco", "rmods",
                "fp8c")
"""The plan fields (of the namespace the cost terms read) on which one layer's operator-level times and stored
activations depend (:func:`_operator_times`, :func:`atscale.operators._rows`, :func:`atscale.operators._output`,
:func:`_layer_activations`): the key under which
:func:`_layer_times` remembers them for one plan of Python numbers. A test reads those functions' source and fails
if they read a field not listed here."""

_LAYERS: dict = {}
"""The remembered layer times of :func:`_layer_times` (at most 256 entries). Keyed on the context and the plan
fields, not on the module constants the operators read: code that changes such a constant at run time (an
experiment, a test) empties it, as it would the GEMM times remembered in ``kernels._SCALAR_GEMMS``."""


def _layer_times(L, c: _Context) -> dict:
    """Seconds per layer per micro-batch on one GPU: ``gemm``, ``attention`` (the core, executed FLOPs),
    ``elementwise`` (HBM-bound kernels), the ``recompute`` extra, and the hardware FLOPs per token that
    recomputation adds (``extra_flops``); the bytes it stores for the backward (``activations``,
    :func:`_layer_activations`); with a stack, also ``output``, the output layer and loss
    (:func:`atscale.operators._output`).

    On one plan of Python numbers (:func:`step_time`) the operator-level times are remembered per context and
    :data:`LAYER_FIELDS` (:func:`_remembered`): an explorer that moves the data-parallel size, the global batch or
    the pipeline prices the layer's operators once. The dict is only read by the cost terms."""
    if c.ops is not None:
        def times():
            return dict(_operator_times(L, c), output=_operators._output(L, c.ops, c.xp),
                        activations=_layer_activations(L, c))
        if c.xp is not _ScalarOps:
            return times()
        return _remembered(_LAYERS, (id(c), L.layer_key), (c,), times)
    xp, k = c.xp, c.k
    h, f, a, s = k.h, k.f, k.a, c.s
    tokens = L.b * s / L.cp  # tokens of one micro-batch on one context-parallel rank
    rate = _efficiency(h, L.tp, c.calibration)
    gemm = 6 * (k.layer_matmul - k.layer_expert_matmul) * tokens / L.tp / (rate * c.gemm_rate)
    causal = FLASH_CAUSAL_FRACTION if c.flash else 1.0
    attention = 12 * s * k.aw * causal * tokens / L.tp / (rate * c.attention_rate)
    if k.moe:
        gemm = gemm + _expert_gemm(L, c, tokens)
        slowed = xp.where(L.a2a & (L.ep > 1), 1 / (1 - A2A_OVERLAP_SM_SHARE), 1.0)  # SMs lent to the all-to-all
        gemm, attention = gemm * slowed, attention * slowed
    sp_div = xp.where(L.sp, L.tp, 1.0)
    elem_bytes = k.elem_rep / sp_div + k.elem_par / L.tp
    if c.fp8:  # casts of every matmul input, forward activations and backward gradients
        elem_bytes = elem_bytes + 2 * FP8_CAST_BYTES * (2 * h / sp_div + (h + f) / L.tp)
    scores = 0.0 if c.flash else 3 * 4 * a * s * ACTIVATION_BYTES / L.tp  # unfused softmax, fwd + bwd
    elementwise = (elem_bytes + scores) * tokens / c.hbm
    full = L.reco == _RECOMPUTE_CODE["full"]
    sel_time = (attention / 3 if c.flash else
                SELECTIVE_RECOMPUTE_FACTOR * s * k.aw * tokens / L.tp / (rate * c.attention_rate) + scores / 3 * tokens / c.hbm)
    # the other modules' forward: both norms (4 bytes per element fused, operators.MEMORY_OPS), the activation
    # (SwiGLU reads two and writes one, GELU one and one), the MLP's share of the layer's matmuls
    def selective():
        act = (6.0 if k.gated else 4.0) * f / L.tp * tokens / c.hbm
        mlp = gemm * k.mlp_matmul / (k.mlp_matmul + k.attn_matmul) / 3 + act
        up = (gemm * k.mla_up_matmul / (k.mlp_matmul + k.attn_matmul) / 3 + 4.0 * k.rotary / L.tp * tokens / c.hbm
              if k.mla else 0.0)  # MLA's up-projections and RoPE; nothing without MLA
        alternate = (gemm * k.alt_matmul / (k.mlp_matmul + k.attn_matmul) / 3  # its matmuls, RoPE, one residual sum
                     + (4.0 * k.rotary / L.tp + 3.0 * h / sp_div) * tokens / c.hbm)
        parts = {"core_attn": sel_time, "layernorm": 8.0 * h / sp_div * tokens / c.hbm, "act": act, "mlp": mlp,
                 "mla_up_proj": up, "alternate_mm": alternate}
        return _selective_sum(L, parts, xp)

    recompute = xp.where(full, (gemm + attention + elementwise) / 3,
                         xp.lazy_where(L.reco == _RECOMPUTE_CODE["selective"], selective, lambda: 0.0))
    extra = xp.where(full, 2 * k.layer_matmul + 4 * s * k.aw, _selective_flops(L, c, xp))
    return dict(gemm=gemm, attention=attention, elementwise=elementwise, recompute=recompute, extra_flops=extra,
                tokens=tokens, full=full, mlp_again=_recomputes(L, "mlp"), activations=_layer_activations(L, c))


def _tp_comm(L, c: _Context, layer: dict):
    """Exposed seconds per layer per micro-batch of the tensor-parallel collectives: four per layer (two
    forward, two backward; two more when the forward is recomputed, one when the MLP is; half as many for a model with a parallel
    block, :attr:`atscale.models.TransformerConfig.parallel_block`), all-reduces, or reduce-scatter +
    all-gather pairs with sequence parallelism (Korthikanti et al. 2022, sec. 4.2.2), on NVLink. With
    ``tp_overlap`` (and sequence parallelism) each collective is cut into ``tp`` chunks pipelined with the
    matmul it feeds (Wang et al. 2023; Transformer Engine, TorchTitan's async TP): only what the layer's
    matmuls cannot cover is exposed, and at least one chunk, ``1/tp`` of it.

    A mixture-of-experts layer has no dense MLP to gather for: its MLP half of the collectives is its shared
    experts' (a dense MLP, where the model has them) plus its token dispatcher's. Megatron-Core's all-to-all
    dispatcher all-gathers the tokens it received over the expert-TP group after the all-to-all and
    reduce-scatters the experts' outputs before the return (``MoEAlltoAllTokenDispatcher.token_permutation`` and
    ``token_unpermutation``, ``gather_from_sequence_parallel_region`` and
    ``reduce_scatter_to_sequence_parallel_region``: NVIDIA/Megatron-LM core_r0.9.0, where the experts take the
    plan's TP, and core_r0.11.0, over ``expert_tensor_parallel_size`` ranks): a pair over ``expert_tp`` ranks of
    the ``k`` copies of every token (the busiest expert's ``expert_load`` times the mean), none with expert TP 1.
    These are plain collectives on the compute stream, which the linear layers' TP overlap does not pipeline:
    exposed.

    A stack whose column-parallel layers run their backward collectives beside their own matmuls
    (:attr:`atscale.operators.Stack.tp_backward_async`, Megatron's; :data:`atscale.operators.TP_BACKWARD_ASYNC`)
    takes those collectives off the critical path without TP overlap: with sequence parallelism each such layer
    gathers its input again (it kept only its shard) beside the input-gradient GEMM and reduce-scatters the input
    gradient beside the weight-gradient GEMM, one pair more than the count above and half of it moved aside;
    without, its input gradient's all-reduce runs beside the weight-gradient GEMM. What they take is what their
    GEMMs (``column_bwd``) cannot cover, plus the stack's contention while they run; with TP overlap they join the
    pipelined rest. A stack whose TP overlap cannot pipeline the reduce-scatter of a shared input's gradient
    (:attr:`atscale.operators.Stack.tp_overlap_input_grads` False, PyTorch's async TP:
    :data:`atscale.operators.ASYNC_TP_FUSION`) runs those, one per column-parallel input, in line."""
    xp, k = c.xp, c.k

    def pair(msg, n):
        return xp.lazy_where(L.sp, lambda: (collectives._time("reduce-scatter", "ring", msg, n, c.up)
                                            + collectives._time("all-gather", "ring", msg, n, c.up))
                             * SEQUENCE_PARALLEL_COMM_FACTOR,
                             lambda: collectives._time("all-reduce", "ring", msg, n, c.up))

    msg = layer["tokens"] * k.h * ACTIVATION_BYTES
    one = pair(msg, xp.maximum(L.tp, 2.0))
    n_fwd = k.tp_collectives  # 2 with a parallel block: its sublayers share one gather and one reduction
    gathers_again = _recomputes(L, "alternate_mm") & L.sp  # two all-gathers: half of two pairs
    again = n_fwd / 2 * layer["full"] + xp.where(layer["full"], 0.0, n_fwd / 4 * layer["mlp_again"]  # recomputed
                                                 + n_fwd / 4 * gathers_again)
    count = n_fwd + again
    expert_mlp = k.moe and n_fwd == 4.0  # an MoE layer's MLP half (a parallel block's MoE keeps the shared pair)
    if expert_mlp:  # its pairs, forward, backward and recomputed, averaged over the layers
        mlp = (2.0 + layer["full"] + xp.where(layer["full"], 0.0, layer["mlp_again"])) * k.moe_share
        if not k.shared:  # no dense MLP to gather for
            count = count - mlp
    side = side_t = 0.0  # the column-parallel layers' backward collectives run beside their GEMMs, and what that costs
    halves = 1.0 - (k.moe_share / 2 if (expert_mlp and not k.shared) else 0.0)  # column-parallel layers present
    if c.ops is not None and c.ops.stack.tp_backward_async:
        count = count - xp.where(L.sp, n_fwd / 4, n_fwd / 2) * halves  # their reduce-scatters, or all-reduces
        side = xp.where(L.tp > 1, n_fwd / 2 * halves * one, 0.0)  # those and, with SP, the input gathered again
        side_t = xp.maximum(side - layer["column_bwd"], 0.0) + c.contention * xp.minimum(side, layer["column_bwd"])
    in_line = xp.where(L.tp > 1, count * one, 0.0)
    t = in_line + side  # with TP overlap every collective is pipelined with the layer's GEMMs, but
    rs = 0.0  # the reduce-scatters of the shared inputs' gradients where the stack cannot pipeline them
    if c.ops is not None and not c.ops.stack.tp_overlap_input_grads:
        rs = xp.where(L.tp > 1, n_fwd / 4 * halves * one, 0.0)  # one reduce-scatter per input: half a pair
    cover = layer["gemm"] * xp.where(layer["full"], 4 / 3, 1.0)
    piped = t - rs
    hidden = xp.maximum(piped - cover, piped / L.tp) + c.contention * xp.minimum(piped, cover) + rs
    t = xp.where(L.tp_overlap & L.sp, hidden, in_line + side_t)
    if expert_mlp:  # the dispatcher's pair over the expert-TP group, exposed
        gathered = pair(msg * k.top_k * L.load, xp.maximum(L.etp, 2.0))
        t = t + xp.where(L.etp > 1, mlp * gathered, 0.0)
    return t


def _cp_group(L, c: _Context):
    """Members of a context-parallel group per node and the group's nodes: the group strides by ``tp`` (rank order
    ``tp-cp-dp-pp``), so ``g / tp`` of its ``cp`` ranks share a node when ``tp`` divides the node's ``g`` GPUs."""
    xp = c.xp
    g = float(c.gpus_per_node)
    inside = xp.where(g % L.tp == 0, xp.minimum(xp.maximum(g / L.tp, 1.0), L.cp), 1.0)
    return inside, xp.maximum(L.cp / inside, 1.0)


def _cp_comm(L, c: _Context, layer: dict):
    """Exposed seconds per layer per micro-batch of context parallelism's exchange, by ``cp_algorithm``
    (:data:`atscale.plan.CP_ALGORITHMS`; the bytes are :func:`context_parallel_bytes`'s). Chunks are load-balanced
    for the ring and the all-gather (each rank holds two of ``2 cp`` chunks, one early, one late), and Ulysses
    gives each rank the whole sequence for ``1/cp`` of the heads, so each rank does ``1/cp`` of the causal work
    whichever runs.

    * ring (Megatron-Core; Liu et al. 2023): ``cp - 1`` steps forward, each passing one rank's keys and values
      (``2 g d / tp`` values per token) to the next while the attention of the block at hand runs; the backward
      passes keys, values and their gradients (twice the bytes) against the backward attention. On NVLink when
      the group's ``tp x cp`` GPUs fit in a node, else on the NICs.
    * all-gather (Llama Team 2024, sec. 3.3.2, which says the gather's latency sits on the critical path): the
      keys and values of the whole sequence all-gathered before the forward attention, again before
      the backward one (only the local block is kept), and their gradients reduce-scattered after it, as
      Transformer Engine's ``AttnFuncWithCPAndKVAllGather`` does; all exposed, hierarchical across nodes.
    * ulysses (Jacobs et al. 2023, sec. 3): one all-to-all of queries, keys and values before attention and one
      of its output after, their mirror images in the backward, all exposed; the ``g / tp`` group members in a
      node exchange over NVLink, the rest over the NICs, concurrently.

    A forward recomputed in full runs its forward exchange again."""
    xp = c.xp
    tokens = layer["tokens"]
    kv = tokens * 2 * c.k.kv_width / L.tp * ACTIVATION_BYTES  # one rank's keys and values, bytes
    full = layer["full"]

    def ring():
        g = c.gpus_per_node
        on_node = (L.tp * L.cp <= g) & (g % (L.tp * L.cp) == 0)
        send = _link_time("broadcast", kv, 2.0, on_node, c)
        fwd, bwd = layer["attention"] / 3, 2 * layer["attention"] / 3
        return (L.cp - 1) * (xp.maximum(0.0, send - fwd / L.cp) * (1 + full) + xp.maximum(0.0, 2 * send - bwd / L.cp))

    def all_gather():
        inside, _ = _cp_group(L, c)
        whole = kv * L.cp  # the gathered keys and values of the whole sequence
        return ((2.0 + full) * _group_time("all-gather", whole, L.cp, inside, c)
                + _group_time("reduce-scatter", whole, L.cp, inside, c))

    def ulysses():
        inside, nodes = _cp_group(L, c)
        per_token = tokens / L.tp * ACTIVATION_BYTES

        def a2a(size):  # one rank's ``size`` bytes spread evenly over the group, itself included
            return collectives._all_to_all(size * (inside - 1) / L.cp, size * (L.cp - inside) / L.cp, inside, nodes,
                                           c.up, c.rail, xp)
        return (2.0 + full) * (a2a(c.k.q_width * per_token + kv) + a2a(c.k.o_width * per_token))

    exposed = xp.lazy_choose(L.cpa, [ring, all_gather, ulysses])
    return xp.where(L.cp > 1, exposed, 0.0)


def context_parallel_bytes(model, tp, cp, *, seq_length=None, micro_batch=1, cp_algorithm: str = "ring"):
    """Bytes one GPU sends per layer per micro-batch in the forward pass of context parallelism (the backward
    sends the same again: the mirror image of each exchange; a recomputed forward, its forward again). BF16
    activations (:data:`ACTIVATION_BYTES`); ``N = micro_batch x seq_length`` tokens split ``cp`` ways, heads split
    ``tp`` ways. With ``g`` key-value heads of width ``d`` (``2 g d`` key and value values per token):

    * ``"ring"``: ``(cp - 1)`` blocks of ``N/cp`` tokens' keys and values, ``(cp - 1) N 2 g d / (cp tp)`` values
      (Liu et al. 2023, ring attention, sec. 3: each host sends its key-value block to the next, ``cp - 1`` times);
    * ``"all-gather"``: the same bytes, since an all-gather of the whole sequence's keys and values sends
      ``(cp - 1)/cp`` of them from each rank (Llama Team 2024, sec. 3.3.2; :func:`atscale.collectives.
      bytes_sent_per_rank`): the two differ in what hides, not in what moves;
    * ``"ulysses"``: two all-to-alls, of queries, keys and values before attention and of its output after; each
      rank sends ``(cp - 1)/cp`` of its ``N/cp`` tokens' worth. With multi-head attention (queries, keys, values
      and output each ``h`` wide) that is ``(cp - 1)/cp`` of ``4 N h / cp``: Jacobs et al. (2023, DeepSpeed Ulysses,
      sec. 3.2) give the aggregate message size of the two as ``3Nh + Nh`` and the volume per link as ``4Nh/P``.
      Grouped-query attention shrinks the keys and values, not the queries and the output.

    So a ring or an all-gather moves bytes that grow with ``(cp - 1)/cp``, nearly constant in ``cp``, while
    Ulysses' fall as ``1/cp``; Ulysses moves the queries and the output as well. Vectorised over ``tp`` and ``cp``.
    """
    model = models.model(model)
    tp, cp = (_v.count(name, x, scalar=False) for name, x in (("tp", tp), ("cp", cp)))
    s = model.seq_length if seq_length is None else _v.count("seq_length", seq_length)
    b = _v.count("micro_batch", micro_batch)
    _v.choice("cp_algorithm", cp_algorithm, CP_ALGORITHMS)
    tp, cp = (np.asarray(x, dtype=float) for x in _v.broadcast(tp=tp, cp=cp))
    tokens = b * s / cp
    kv = tokens * model.kv_heads * (model.qk_head_dim + model.v_head_dim) / tp
    if cp_algorithm == "ulysses":
        qo = tokens * model.num_heads * (model.qk_head_dim + model.v_head_dim) / tp
        result = (cp - 1) / cp * (qo + kv) * ACTIVATION_BYTES
    else:
        result = (cp - 1) * kv * ACTIVATION_BYTES
    return float(result) if result.ndim == 0 else result


def _expert_gemm(L, c: _Context, tokens):
    """Seconds per layer per micro-batch (averaged over the layers) of the routed experts' matmuls on one GPU,
    forward and backward. Each GPU holds ``E / ep`` experts (each ``1 / expert_tp`` of one) and receives from its
    ``ep`` peers the tokens routed to them: ``T_e = (tokens / tp) k ep expert_tp / E`` per expert, the busiest
    ``expert_load`` times that. The matmuls of one expert are a roofline (Williams et al. 2009): their FLOPs at
    the layer's matmul rate (:func:`compute_efficiency` at the expert's per-GPU width), or their weights read
    from HBM three times (forward, input and weight gradient), whichever is slower, so that small experts fed
    few tokens run memory-bound, as grouped GEMMs do (Gale et al. 2023, MegaBlocks, sec. 5). The efficiency is a
    dense layer's at the narrower of the model and expert widths (an expert wider than the model runs no better
    than the layer around it; a narrower one, worse)."""
    k = c.k
    flops = 6 * k.layer_expert_matmul * tokens / L.tp * L.load
    rate = _efficiency(k.expert_width, L.etp, c.calibration) * c.gemm_rate
    weight_bytes = 3 * k.layer_routed / (L.ep * L.etp) * k.weight_bytes
    return c.xp.maximum(flops / rate, weight_bytes / c.hbm)


def _remote_copies(top_k, nodes, max_nodes, xp, missing=None, dedup=None):
    """Expected copies of a token's activations that cross the network in one dispatch, its ``k`` experts spread
    uniformly over ``N`` nodes. One copy per expert (``dedup`` off): ``k (1 - 1/N)``, with or without node-limited
    routing (each expert is still on the token's own node with probability ``1/N``: a limit on the nodes alone
    saves nothing on the wire). One copy per destination node (``dedup``; DeepSeek-AI 2024, sec. 3.2.2: IB to the
    node, then NVLink): the expected ``(N - 1)(1 - missing)`` other nodes holding any of the ``k`` experts, and with
    node-limited routing (``M = max_nodes > 0`` nodes at most, sec. 2.1.2) never more than ``M (1 - 1/N)``.
    ``missing``: the chance that a given other node holds none of the ``k`` experts, ``(1 - 1/N)^k`` by default
    (:func:`atscale.experts.cross_node_copies` derives both and gives the exact count for ``E`` experts).
    ``dedup`` ``None``: deduplicate exactly where there is a limit (``max_nodes > 0``). Unchecked;
    dimensionless."""
    plain = top_k * (1 - 1 / nodes)
    missing = (1 - 1 / nodes) ** top_k if missing is None else missing
    per_node = (nodes - 1) * (1 - missing)
    limited = xp.where(max_nodes > 0, xp.minimum(per_node, max_nodes * (1 - 1 / nodes)), per_node)
    return xp.where(max_nodes > 0 if dedup is None else dedup, limited, plain)


def _local_copies(top_k, experts, inside, ep, dedup, xp, missing=None):
    """Expected copies of a token's activations that one dispatch sends over NVLink to the other ``inside - 1``
    GPUs of its expert group in its node, its ``k`` experts spread uniformly over the ``ep`` GPUs of the group
    (``E / ep`` experts on each). One copy per expert (Megatron-Core's all-to-all dispatcher permutes a token once per
    expert it picked): ``k (inside - 1) / ep``. One copy per GPU (``dedup``: DeepEP's normal kernels send a token to
    each rank that holds any of its experts once, ``Buffer.get_dispatch_layout``'s ``num_tokens_per_rank`` and
    ``is_token_in_rank``, deepseek-ai/DeepEP v1.2.1, ``deep_ep/buffer.py``; the rank spreads it to its experts):
    ``(inside - 1)(1 - C(E - E/ep, k) / C(E, k))``, the chance that another GPU holds none of the token's experts
    written as a product of ``k`` ratios (``missing``, where given: :func:`atscale.experts.in_node_copies` passes
    its vectorised count). Node-limited routing's effect on the GPUs of the token's own node is left out.
    Unchecked; dimensionless."""
    if not dedup:  # a model constant (Python bool): the plain count needs no product
        return top_k * (inside - 1) / ep
    if missing is None:  # scalar top_k: the step-time model's inner loop, on floats or arrays of ep
        missing = 1.0
        for i in range(int(top_k)):  # C(E - E/ep, k) / C(E, k)
            missing = missing * xp.maximum((experts - experts / ep - i) / (experts - i), 0.0)
    return (inside - 1) * (1 - missing)


FP8_DISPATCH_BYTES = (1 + 4 / 128 + ACTIVATION_BYTES) / 2
"""Mean bytes per activation value over an MoE layer's all-to-alls when the dispatch goes in FP8 (1 byte and one
FP32 scale per 128 values) and the combine in BF16 (DeepSeek-AI 2024, sec. 3.3.3: the activations before the
up-projections and the gradients before the down-projections in FP8, both combines in BF16): 1.52 against 2, about
a quarter less traffic (:attr:`atscale.models.TransformerConfig.fp8_dispatch`)."""


def _a2a_warmup(L, xp):
    """Model chunks per pass whose all-to-alls no other micro-batch's computation hides, under
    Megatron-Core's expert-parallel overlap (:data:`A2A_WARMUP`): the warm-up forwards (and as many cool-down
    backwards) of the pipeline's first rank, which has the most; at most every chunk of the ``m v``. One without
    pipelining (the first forward, the last backward), ``2 (p - 1) + (v - 1) p + 1`` with the interleaved schedule;
    with plain 1F1B ``p`` (its ``p - 1`` warm-up forwards, and one as for the others); none for the other schedules,
    whose overlap is their own (DualPipe pairs its chunks from the start, and the zero-bubble schedules are not
    Megatron-Core's)."""
    warm = xp.where(L.pp == 1, 1.0, xp.where(L.sched == _SCHEDULE_CODE["interleaved"],
                                              2 * (L.pp - 1) + (L.v - 1) * L.pp + 1, L.pp))
    megatron = L.sched <= _SCHEDULE_CODE["interleaved"]
    return xp.where(megatron, xp.minimum(warm, L.m * L.v), 0.0)


def a2a_exposed_chunks(plan: Plan) -> float:
    """Model chunks of one micro-batch, each way, whose all-to-alls ``plan``'s expert-parallel overlap cannot hide
    (:data:`A2A_WARMUP`): the first rank's warm-up forwards, and as many cool-down backwards, under Megatron-Core's
    1F1B and interleaved schedules; 0 without ``a2a_overlap`` or under the schedules whose overlap is their own."""
    if not isinstance(plan, Plan):
        raise ValueError(f"plan={_v.show(plan)} must be an atscale.plan.Plan")
    L = types.SimpleNamespace(pp=np.float64(plan.pp), v=np.float64(plan.virtual_stages),
                              m=np.float64(plan.micro_batches), sched=np.float64(_SCHEDULE_CODE[plan.schedule]))
    return float(_a2a_warmup(L, np)) if plan.a2a_overlap else 0.0


def _ep_comm(L, c: _Context, layer: dict) -> tuple:
    """``(exposed, whole)``: exposed seconds per layer per micro-batch (averaged over the layers) of expert parallelism's all-to-alls:
    dispatch and combine in the forward pass, their mirror images in the backward (four; six when the forward is
    recomputed, fully or with the ``"mlp"`` module, which for an MoE layer is Megatron-Core's ``moe``: it
    checkpoints the router, the dispatch, the experts and the combine together, ``MoELayer.forward``), each moving
    ``k`` copies of every token's ``h`` activations (``1 / tp`` of the tokens per GPU), the busiest GPU
    ``expert_load`` times the mean. The ``ep`` group strides by ``expert_tp``: copies for experts in the node go
    over NVLink, the rest over the GPU's NIC, concurrently (:func:`atscale.collectives.all_to_all_time`). A
    deduplicating dispatch (``node_dedup``, DeepEP's) sends a token across the network once per destination node, to
    the GPU of the same local rank there, which forwards it over NVLink once to each GPU of its node that holds any
    of the token's experts (DeepSeek-AI 2024, sec. 3.2.2; DeepEP's internode kernels): over NVLink each GPU sends
    its own node's copies (:func:`_local_copies`) and forwards those of the other nodes, ``N`` times the first on
    average (checked against DeepEP's published bandwidths: :func:`atscale.experts.deepep_comparison`); node-limited
    routing (``max_routed_nodes`` ``M``; DeepSeek-AI 2024, sec. 2.1.2) caps those nodes at ``M``
    (:func:`_remote_copies`); ``fp8_dispatch`` in FP8 training sends the dispatch in FP8
    (:data:`FP8_DISPATCH_BYTES`). Each link runs at the calibration's share of its rate
    (:attr:`Calibration.a2a_nvlink_share`, :attr:`Calibration.a2a_network_share`; 1 by default). With
    ``a2a_overlap`` the all-to-all of one micro-batch runs behind another's computation (DualPipe, sec. 3.2.1): only
    what the layer's compute cannot cover is exposed; ``whole`` is the all-to-all's time without the overlap, which
    the chunks :func:`_a2a_warmup` counts pay."""
    xp, k = c.xp, c.k
    g = float(c.gpus_per_node)
    span = L.ep * L.etp
    inside = xp.minimum(L.ep, xp.maximum(g / L.etp, 1.0))  # group members per node
    nodes = xp.maximum(span / g, 1.0)
    remote = _remote_copies(k.top_k, nodes, k.max_nodes, xp, dedup=k.dedup)
    local = _local_copies(k.top_k, k.experts, inside, L.ep, k.dedup, xp)
    if k.dedup:  # DeepEP forwards what arrives over RDMA to its node's GPUs: every node's share, not only its own
        local = local * nodes
    value_bytes = FP8_DISPATCH_BYTES if (c.fp8 and k.fp8_dispatch) else ACTIVATION_BYTES
    per_copy = layer["tokens"] / L.tp * k.h * value_bytes * L.load  # bytes of one copy of the tokens
    on, off = per_copy * local / c.calibration.a2a_nvlink_share, per_copy * remote / c.calibration.a2a_network_share
    one = collectives._all_to_all(on, off, inside, nodes, c.up, c.rail, xp)
    if c.tiers:  # the copies bound outside a pod (or rack) cross its tapered tier
        one = xp.maximum(one, collectives._all_to_all_tiers(off, nodes, span, g, c.tiers, xp))
    again = xp.where(layer["mlp_again"], 1.0, layer["full"])  # Megatron-Core's "moe" recomputes the whole MoE layer
    t = xp.where(L.ep > 1, (4.0 + 2.0 * again) * one * k.moe_share, 0.0)
    cover = layer["gemm"] + layer["attention"]
    return xp.where(L.a2a, xp.maximum(0.0, t - cover), t), t


def _pp_comm(L, c: _Context, layer: dict):
    """Seconds per micro-batch of the pipeline's point-to-point sends: an activation forward and a gradient
    back per chunk boundary, ``2 v`` per micro-batch (twice that for the V-shaped schedules, whose micro-batches
    cross every GPU twice), each ``1/tp`` of a layer's activations (Megatron's scatter/gather; Narayanan et al.
    2021, sec. 4.1), on the NICs unless the stage's neighbour is in the node."""
    xp = c.xp
    size = layer["tokens"] * c.k.h * ACTIVATION_BYTES / L.tp
    return xp.where(L.pp > 1, 2.0 * L.v * L.hops * _stage_send(size, L, c), 0.0)


def _dp_outermost(L, c: _Context):
    """Whether each plan numbers its ranks with data parallelism outermost (``"tp-cp-pp-dp"``): named so in
    :attr:`Plan.order`, or by default on a multi-tier fabric (:func:`atscale.collectives.placement_order`)."""
    return (L.order == _ORDER_CODE["tp-cp-pp-dp"]) | ((L.order == _ORDER_DEFAULT) & bool(c.tiers))


def _stage_send(size, L, c: _Context):
    """Seconds of one send of ``size`` bytes between neighbouring pipeline stages, every GPU sending at once, in the
    plan's rank order (:attr:`Plan.order`). Neighbouring stages are ``d = tp cp`` ranks apart with data parallelism
    outermost (each pipeline a block of ``P = d pp`` consecutive ranks) and ``d = tp cp dp`` apart in Megatron-Core's
    order (each pipeline spread over the whole job). A synchronous pipeline runs at the pace of its slowest stage
    boundary, so the send costs what the highest level crossed by *any* neighbouring pair costs. A level whose
    domains below (the node of ``g`` GPUs, a rack, a pod: ``D``) each hold whole pipelines (``P <= D`` and ``P``
    divides ``D``, or the whole job fits in one) is never crossed; otherwise a share ``f = min(1, d / D)`` of the GPUs send across it, and a
    tapered tier shares its uplinks among them: the rate is the NIC's over ``max(1, T f)`` (``T``: the tier's
    cumulative oversubscription, :attr:`atscale.hardware.Fabric.tapers`). On a network of one switch the level
    above the node is that switch (no taper): a pipeline that spans nodes sends on the NICs. Sources: Narayanan et
    al. (2021, sec. 4.1) for the sends; the tiers' figures from the catalog (:data:`atscale.hardware.TIERED_FABRICS`)."""
    xp = c.xp
    outer = _dp_outermost(L, c)
    d = L.tp * L.cp * xp.where(outer, 1.0, L.dp)  # ranks between neighbouring stages
    job = L.tp * L.cp * L.pp * L.dp
    block = xp.where(outer, d * L.pp, job)  # ranks one pipeline's GPUs span
    tiers = c.tiers or ((job, c.rail),)
    t = collectives._time("broadcast", "ring", size, 2.0, c.up)
    below = float(c.gpus_per_node)
    for domain, cost in tiers:  # every pipeline inside one domain of the level below: the level is not crossed
        whole = (job <= below) | ((block <= below) & (below % block == 0))
        taper = c.rail.rate / cost.rate
        share = xp.minimum(1.0, d / below)
        crossing = collectives.LinkCost(cost.base, cost.hop, c.rail.rate / xp.maximum(1.0, taper * share))
        t = xp.where(whole, t, xp.maximum(t, collectives._time("broadcast", "ring", size, 2.0, crossing)))
        below = domain
    return t


def _pp_overlap(L, c: _Context, stage: dict):
    """With ``pp_overlap``, replaces the stage's per-micro-batch sends (``stage["pp_comm"]``, in place) by what the
    micro-batch's computation on the stage cannot cover, plus the compute the overlapped sends slow (the stack's
    contention), and returns the sends that stay exposed once per step: the pipeline's fill and drain, an
    activation down and a gradient back across each of the ``p - 1`` stage boundaries, ``2 (p - 1)`` sends, which
    nothing precedes to hide behind (Megatron-Core's ``overlap_p2p_comm``; MegaScale's pipeline overlap, Jiang et
    al. 2024, sec. 3.2). Without it, 0 and the stage unchanged: every send exposed."""
    xp = c.xp
    sends = stage["pp_comm"]
    cover = stage["compute"] + stage["recompute"]
    one = sends / (2.0 * L.v * L.hops)  # one send's time
    hidden = xp.maximum(sends - cover, 0.0) + c.contention * xp.minimum(sends, cover)
    stage["pp_comm"] = xp.where(L.ppo, hidden, sends)
    return xp.where(L.ppo & (L.pp > 1), 2.0 * (L.pp - 1) * one, 0.0)


def _output_layer(L, c: _Context, layer: dict):
    """Seconds per micro-batch of the output (logit) layer's matmuls on the last stage: ``6 V h`` FLOPs per
    token, split over TP (vocabulary-parallel; Shoeybi et al. 2019, sec. 3); with a stack, the logits GEMM and
    the loss over the vocabulary as operators (:func:`atscale.operators._output`)."""
    if c.ops is not None:
        return layer["output"]
    rate = _efficiency(c.k.h, L.tp, c.calibration)
    return 6 * c.k.vh * layer["tokens"] / L.tp / (rate * c.gemm_rate)


def _mtp_extra(L, c: _Context, layer: dict, head):
    """Seconds per micro-batch of what the multi-token prediction modules add on the last stage beyond their blocks
    (:attr:`atscale.models.TransformerConfig.mtp_layers`; the blocks are priced as layers of the stage): per module
    one more pass of the shared output head and its loss (``head`` s, :func:`_output_layer`), the ``2h -> h`` projection
    (column-parallel, ``12 h^2`` FLOPs per token, in the layers' precision: DeepSeek-V3 keeps only the embedding, the
    output head, the gating, the norms and attention in BF16, its report's sec. 3.3) and its three norms (read and
    write ``2`` bytes per element forward, twice that backward). Called only with MTP."""
    k, xp = c.k, c.xp
    tokens = layer["tokens"]
    if c.ops is not None:
        f_, b_ = _operators._gemm3(tokens, k.h / L.tp, 2 * k.h, c.ops.gemm, xp)
        proj = f_ + b_
    else:
        proj = 12 * k.h * k.h * tokens / L.tp / (_efficiency(k.h, L.tp, c.calibration) * c.gemm_rate)
    norms = 3 * 12.0 * k.h / xp.where(L.sp, L.tp, 1.0) * tokens / c.hbm
    return k.mtp * (head + proj + norms)


def _pace(L, c: _Context, layer: dict, tp_t, cp_t, pp_t, ep_t=0.0) -> dict:
    """Per-micro-batch parts of the stage that sets the pipeline's pace (the slowest of the first, the fullest
    middle and the last stage: :func:`stage_layers`; the first of them on a tie), and the layer counts. The
    multi-token prediction modules' blocks count as layers of the last stage (:func:`_mtp_extra` for the rest).

    DualPipe pairs the ends: rank ``r`` runs stage ``r`` of one direction and stage ``p - 1 - r`` of the other, so the
    embedding's and the output head's stages share a rank (DeepSeek-AI 2024, DeepSeek-V3 Technical Report, sec. 2.2
    and 3.2.1; the DualPipe repository's example gives rank ``r`` modules ``r`` and ``p - 1 - r``) and each
    micro-batch costs that rank half of the two: the end ranks' pace is the mean of the first and the last stage's
    (the middle ranks' is taken as the fullest middle stage's, an upper bound of its pair's mean)."""
    xp = c.xp
    sl = _stage_layers(float(c.k.l), L.pp, L.v, L.emb, L.loss, xp, c.k.mtp)
    head = _output_layer(L, c, layer)
    out = head + _mtp_extra(L, c, layer, head) if c.k.mtp else head
    work = layer["gemm"] + layer["attention"] + layer["elementwise"]
    per_layer = work + layer["recompute"] + tp_t + cp_t + ep_t
    paired = (L.sched == _SCHEDULE_CODE["dualpipe"]) & (L.pp > 1)
    end = (sl.first + sl.last) / 2
    first, last = xp.where(paired, end, sl.first), xp.where(paired, end, sl.last)
    share_first = xp.where(paired, 0.5, xp.where(L.pp == 1, 1.0, 0.0))  # of the output layer and the MTP modules
    share_last = xp.where(paired, 0.5, xp.where(L.pp > 1, 1.0, 0.0))
    stages = ((first, share_first), (sl.middle, 0.0), (last, share_last))
    pick = xp.first_max([layers * per_layer + share * out for layers, share in stages])
    layers = xp.choose(pick, [first, sl.middle, last])
    share = xp.choose(pick, [share_first, 0.0, share_last])
    return dict(compute=layers * work + share * out, recompute=layers * layer["recompute"],
                tp_comm=layers * tp_t, cp_comm=layers * cp_t, ep_comm=layers * ep_t, pp_comm=pp_t, layers=layers,
                stages=sl)


def _group_time(op, size, ranks, per_node, c: _Context, members=None):
    """``op`` over ``ranks`` GPUs of which ``per_node`` share each node: flat on NVLink when they all do,
    else hierarchical (Jia et al. 2018; NCCL's tree/ring across nodes): reduce-scatter inside the node,
    the collective of ``1/per_node`` of the data across nodes on the NICs, all-gather inside the node. On a
    multi-tier fabric the part across nodes climbs the tiers the group spans (:func:`atscale.collectives._tiered`):
    ``members(domain)`` says how many of the group one domain of ``domain`` GPUs holds (default: the group's nodes
    side by side, ``domain * per_node / g``)."""
    xp = c.xp
    inside = xp.minimum(per_node, ranks)

    def hierarchical():
        if c.tiers:
            g = float(c.gpus_per_node)
            return collectives._tiered(op, size, ranks, xp.maximum(inside, 1.0),
                                       members or (lambda domain: domain * inside / g), c.up, c.tiers, xp)
        nodes = xp.maximum(xp.ceil(ranks / xp.maximum(inside, 1.0)), 1.0)
        t = _link_time(op, size / inside, nodes, False, c)
        if op != "all-gather":
            t = t + _link_time("reduce-scatter", size, inside, True, c)
        if op != "reduce-scatter":
            t = t + _link_time("all-gather", size, inside, True, c)
        return t

    return xp.lazy_where(ranks <= inside, lambda: _link_time(op, size, ranks, True, c), hierarchical)


def _dp_members(L, c: _Context, k):
    """How many GPUs of a data-parallel group (``dp x cp`` GPUs holding the same weights) one domain (a node, a
    rack, a pod) holds, in the plan's rank order (:attr:`Plan.order`): the ``cp`` members ``tp`` apart, and the
    ``dp`` replicas ``tp cp pp`` apart with data parallelism outermost, Meta's order ``[TP, CP, PP, DP]`` (Llama
    Team 2024, sec. 3.3.2), so that a data-parallel group spans the whole job and crosses pods at scale, or
    ``tp cp`` apart in Megatron-Core's default order. Returns three functions of the domain's GPUs: the members of
    the whole group, of a shard group (its first ``k``, HSDP) and of a replica group (every ``k``-th)."""
    xp = c.xp
    stride = L.tp * L.cp * xp.where(_dp_outermost(L, c), L.pp, 1.0)

    def group(domain):
        return (xp.minimum(xp.maximum(domain / L.tp, 1.0), L.cp)
                * xp.minimum(xp.maximum(domain / stride, 1.0), L.dp))

    return group, (lambda d: xp.minimum(group(d), k)), (lambda d: xp.maximum(group(d) / k, 1.0))


def _replicas(size, r, members, c: _Context):
    """The HSDP all-reduce of ``size`` bytes across ``r`` replicas, one GPU per node: on the NICs, or over the tiers
    the replicas span."""
    if c.tiers:
        return c.xp.where(r > 1, collectives._tiered("all-reduce", size, r, 1.0, members, c.up, c.tiers, c.xp), 0.0)
    return _link_time("all-reduce", size, r, False, c)


def _fsdp(c: _Context) -> bool:
    """Whether the stack runs its data-parallel collectives as FSDP does (:attr:`atscale.operators.Stack.
    unit_collectives`): per wrapped module (:func:`_per_unit`), and under pipeline parallelism once a step
    (:func:`_dp_schedule`, :func:`_memory`). False for the calibrated curve, which has no stack."""
    return c.ops is not None and c.ops.stack.unit_collectives


def _per_unit(c: _Context, layers, k, per_node, shard, ag, rs) -> tuple:
    """``(units, ag, rs)``: how many collectives of each kind a micro-batch issues and the step's gather and
    reduce-scatter seconds. With a stack that runs them per wrapped module (:attr:`atscale.operators.Stack.
    unit_collectives`, FSDP) each of ``layers + 1`` modules (the stage's blocks and the root) pays NCCL's ring latency
    over the ``k`` GPUs of the shard group (:func:`atscale.collectives.nccl_ring_latency`) in place of the one
    latency of the library's collective of all the weights, whose bytes stay; else ``layers`` and the times as
    given."""
    xp = c.xp
    if not _fsdp(c):
        return xp.maximum(layers, 1.0), ag, rs
    units, n, inside = xp.maximum(layers, 1.0) + 1.0, xp.maximum(k, 1.0), xp.maximum(xp.minimum(per_node, k), 1.0)

    def per_unit(op, t):
        return t - _group_time(op, 0.0, k, per_node, c, shard) + units * collectives._nccl_ring_latency(op, n, inside, xp)

    return units, per_unit("all-gather", ag), per_unit("reduce-scatter", rs)


def _dp_comm(L, c: _Context, psi, fwd_mb, bwd_mb, layers, shards, psi_experts=0.0):
    """Exposed seconds per step of the data-parallel gradient reduction (and ZeRO/FSDP gathers) over the
    ``dp x cp`` GPUs holding the same weights, sharded over groups of ``k`` (``shard_group``, HSDP) and
    replicated across ``r = dp cp / k`` of them; ``fwd_mb``/``bwd_mb``: one micro-batch's forward/backward
    compute, which ``dp_overlap`` of each collective may hide behind:

    * ZeRO-0: one all-reduce behind the last micro-batch's backward (bucketed; Li et al. 2020);
    * ZeRO-1 (Megatron's distributed optimizer): a reduce-scatter behind the last backward and the parameter
      all-gather behind the next step's first forward (``overlap_param_gather``);
    * ZeRO-2: a reduce-scatter per micro-batch behind its backward, the gather once;
    * ZeRO-3/FSDP: per micro-batch the weights gathered before the forward (prefetched behind the previous
      layer: only the first layer's gather is exposed), gathered again for the backward unless
      ``reshard_after_forward`` is off, and the gradients reduce-scattered behind the backward (Rajbhandari
      et al. 2020, sec. 7; Zhao et al. 2023, PyTorch FSDP, sec. 3.3-3.4);
    * with HSDP, the shard-sized gradient all-reduce across replicas once, behind the last backward.

    ``psi``: the dense weights per GPU; ``psi_experts``: the routed experts' (mixtures of experts), reduced the
    same way over the experts' own data-parallel group of ``n_e = tp cp dp / (expert_tp ep)`` GPUs: sharded over
    ``k_e`` of them (at most ``shard_group``, as their optimizer state is) and replicated across ``n_e / k_e``;
    ``shards``: ``(k, k_e)`` from :func:`_shard_ranks`.
    """
    xp = c.xp
    n = L.dp * L.cp
    k, k_e = shards
    r = xp.ceil(n / k)
    g = c.gpus_per_node
    per_node = xp.where(g % L.tp == 0, xp.minimum(g // L.tp, n), 1.0)
    grad_bytes = GRADIENT_ACCUMULATION_BYTES if c.opt.gradients >= 4 else float(c.opt.gradients)
    gathered = xp.where(L.zs >= 2, min(c.opt.weights, FSDP_GATHER_BYTES), c.opt.weights)
    grad, weights = psi * grad_bytes, psi * gathered
    group, shard, replica = _dp_members(L, c, k)
    # with data parallelism outermost a node holds the group's cp members (or a whole stage's replicas)
    per_node = xp.where(_dp_outermost(L, c), xp.minimum(group(float(g)), n), per_node)
    if not c.tiers:  # one switch: beyond the node, where the members sit does not matter
        shard = replica = None
    rs = _group_time("reduce-scatter", grad, k, per_node, c, shard)
    ag = _group_time("all-gather", weights, k, per_node, c, shard)
    replicas = _replicas(grad / k, r, replica, c)
    moe = c.k.moe
    if moe:  # the experts' gradients, over their own data-parallel group (sharded over k_e of it)
        n_e = L.tp * n / (L.ep * L.etp)
        per_node_e = xp.maximum(xp.minimum(g / (L.ep * L.etp), n_e), 1.0)
        e_grad, e_weights = psi_experts * grad_bytes, psi_experts * gathered
        # the experts' replicas spread evenly over the GPUs their group spans: the whole job with data parallelism
        # outermost, one pipeline stage's tp cp dp consecutive ranks in Megatron-Core's order
        span_e = L.tp * L.cp * L.dp * xp.where(_dp_outermost(L, c), L.pp, 1.0)
        e_group = (lambda d: xp.minimum(xp.maximum(d * n_e / span_e, per_node_e), n_e)) if c.tiers else None

        def experts(op, size):
            members = (lambda d: xp.minimum(e_group(d), k_e)) if c.tiers else None
            return xp.where(n_e > 1, _group_time(op, size, k_e, per_node_e, c, members), 0.0)

        rs, ag = rs + experts("reduce-scatter", e_grad), ag + experts("all-gather", e_weights)
        replicas = replicas + _replicas(e_grad / k_e, xp.ceil(n_e / k_e), (lambda d: xp.maximum(
            e_group(d) / k_e, 1.0)) if c.tiers else None, c)
        n = xp.maximum(n, n_e)
    units, ag, rs = _per_unit(c, layers, k, per_node, shard, ag, rs)

    def ar():
        t = _group_time("all-reduce", grad, k, per_node, c) + replicas
        return t + experts("all-reduce", e_grad) if moe else t

    return xp.where(n > 1, _dp_schedule(L, c, ar, rs, ag, replicas, fwd_mb, bwd_mb, units), 0.0)


def _dp_schedule(L, c: _Context, ar, rs, ag, replicas, fwd_mb, bwd_mb, units):
    """What the data-parallel collectives of :func:`_dp_comm` leave exposed per step, by ZeRO stage, each hidden
    behind the compute it may hide behind (``dp_overlap``) at the cost of the compute it slows (the stack's
    contention). ``ar``: a function giving the all-reduce (ZeRO-0); ``rs``, ``ag``: the step's reduce-scatter and
    all-gather of all the weights; ``replicas``: HSDP's all-reduce; ``units``: the gathers a micro-batch issues.

    An FSDP stack under pipeline parallelism (:attr:`atscale.operators.Stack.unit_collectives` and ``pp > 1``) runs
    them as PyTorch's pipelining does: the weights stay gathered across the step's micro-batches (not resharded
    after the forward, torchtitan's choice "to avoid per-microbatch all-gathers", nor after each backward), so
    they are gathered once, behind the first micro-batch's forward; the gradients are reduce-scattered once, after
    the stage's last backward, with nothing left to hide behind (:data:`atscale.operators.PIPELINED_FSDP`).
    """
    xp, ovl = c.xp, L.ovl

    def behind(t, cover):  # what hides costs the compute it slows (the stack's contention; 0 without a stack)
        return xp.maximum(0.0, t - ovl * cover) + c.contention * xp.minimum(t, ovl * cover)

    def z0():
        return behind(ar(), bwd_mb)

    def z1():
        return behind(rs + replicas, bwd_mb) + behind(ag, fwd_mb)

    def pipelined(t, first):  # pipelined FSDP, see above: ``first``, what the first module's gather leaves exposed
        if not _fsdp(c):
            return t
        return xp.where(L.pp > 1, behind(ag, fwd_mb) + first + rs + behind(replicas, bwd_mb), t)

    def z2():
        return pipelined(L.m * behind(rs, bwd_mb) + behind(replicas, bwd_mb) + behind(ag, fwd_mb), 0.0)

    def z3():
        per_mb = behind(ag, fwd_mb) + behind(xp.where(L.reshard, ag, 0.0) + rs, bwd_mb) + ag / units
        return pipelined(L.m * per_mb + behind(replicas, bwd_mb), ag / units)

    return xp.lazy_choose(L.zs_i, [z0, z1, z2, z3])


def _layer_activations(L, c: _Context):
    """Bytes one layer stores for the backward pass per micro-batch on one GPU: the activations the model keeps
    (:func:`atscale.memory.activation_terms`, through the model's constants) less what the plan's recomputation
    and FP8 cache do not store; with full recomputation the layer's input alone."""
    xp, K = c.xp, c.k
    tokens = L.b * c.s / L.cp
    sp_div = xp.where(L.sp, L.tp, 1.0)
    sv = K.saved  # what each recomputed module does not store (memory.recompute_savings), per sequence
    rep = K.act_rep - xp.where(_recomputes(L, "layernorm"), sv["layernorm"].replicated, 0.0)
    alt = _recomputes(L, "alternate_mm")
    rep = rep - xp.where(alt, sv["alternate_mm"].replicated, 0.0)
    par = (K.act_par - xp.where(_recomputes(L, "mlp"), sv["mlp"].parallel,
                                xp.where(_recomputes(L, "act"), sv["act"].parallel, 0.0))
           - xp.where(_recomputes(L, "mla_up_proj"), sv["mla_up_proj"].parallel, 0.0)
           - xp.where(alt, xp.where(_recomputes(L, "mlp"), K.saved_alt_beside_mlp, sv["alternate_mm"].parallel), 0.0))
    scores = xp.where(_recomputes(L, "core_attn"), 0.0, K.act_scores)
    codes = L.fp8c  # what the plan's FP8 cache keeps in one byte (memory.fp8_cache_savings), per sequence
    if c.fp8 and isinstance(codes, np.ndarray):  # many plans: each takes its own policy's bytes
        for code in np.unique(codes[codes > 0]):
            rep8, par8 = memory._fp8_cache_terms(K.fp8_cache[code], L.again, xp)
            rep, par = rep - xp.where(codes == code, rep8, 0.0), par - xp.where(codes == code, par8, 0.0)
    elif c.fp8 and codes:
        rep8, par8 = memory._fp8_cache_terms(K.fp8_cache[codes], L.again, xp)
        rep, par = rep - rep8, par - par8
    per_token = (rep / sp_div + (par + scores) / L.tp) / c.s
    return xp.where(L.reco == _RECOMPUTE_CODE["full"], 2 * K.h / sp_div, per_token) * tokens


def _memory(L, c: _Context, sl: StageLayers, shards, layer: dict):
    """Per-GPU bytes of the fuller of the first and the last pipeline stage, as ``{"model state", "activations"}``:
    weights, gradients and optimizer state sharded as the ZeRO stage says over ``shards = (k, k_e)`` ranks (dense
    weights and routed experts; :func:`_shard_ranks`), plus the unsharded weights kept between forward and backward
    when ZeRO-3 does not reshard, and the unsharded gradients an FSDP stack accumulates under pipeline parallelism
    until the stage's last backward (:func:`_dp_schedule`); each stage's in-flight activations (``layer["activations"]`` per layer,
    :func:`_layer_activations`, times :func:`_in_flight`); the embedding on the first stage, the output layer and the
    FP32 logits on the last."""
    xp, K = c.xp, c.k
    tokens = L.b * c.s / L.cp
    act_layer = layer["activations"]
    k, k_e = shards
    gpipe, inter = L.sched == _SCHEDULE_CODE["gpipe"], L.sched == _SCHEDULE_CODE["interleaved"]
    flat = _pipeline._flat_in_flight(L.sched, L.pp, xp)
    opt = c.opt
    totals = []
    pipelined_fsdp = _fsdp(c)  # the gradients kept unsharded under pipeline parallelism (_dp_schedule)
    for layers, extra, from_end, last in ((sl.first, K.emb_params, L.pp - 1, L.pp == 1),
                                          (sl.last, K.out_params, 0.0, True)):
        psi = (layers * K.layer_dense + extra + xp.where(last & (L.pp == 1), K.out_params, 0.0)) / L.tp
        state, kept = 0.0, 0.0
        shares = ((psi, k), (layers * K.layer_routed / (L.ep * L.etp), k_e)) if K.moe else ((psi, k),)
        for part, ranks in shares:
            state = state + (opt.weights * part / xp.where(L.zs >= 3, ranks, 1.0)
                             + opt.gradients * part / xp.where(L.zs >= 2, ranks, 1.0)
                             + opt.state * part / xp.where(L.zs >= 1, ranks, 1.0))
            kept = kept + xp.where((L.zs >= 3) & xp.logical_not(L.reshard), opt.weights * part * (1 - 1 / ranks), 0.0)
            if pipelined_fsdp:  # the gradients accumulate unsharded until the stage's last backward
                kept = kept + xp.where((L.pp > 1) & (L.zs >= 2), opt.gradients * part * (1 - 1 / ranks), 0.0)
        acts = act_layer * layers * _in_flight(L.pp, L.v, L.m, gpipe, inter, from_end, xp, flat)
        logits = xp.where(last, (1 + K.mtp) * tokens * K.V / L.tp * LOGITS_BYTES, 0.0)  # and each MTP head's
        totals.append({"model state": (state + kept) * L.copies, "activations": acts + logits})
    first, last = (t["model state"] + t["activations"] for t in totals)
    pick = last > first
    return {key: xp.where(pick, totals[1][key], totals[0][key]) for key in totals[0]}


_FIELDS = ("tp", "cp", "pp", "dp", "micro_batch", "global_batch", "zero_stage", "schedule", "virtual_stages",
           "recompute", "sequence_parallel", "account_for_embedding", "account_for_loss", "tp_overlap",
           "reshard_after_forward", "shard_group", "ep", "expert_tp", "a2a_overlap", "expert_imbalance",
           "capacity_factor", "cp_algorithm", "pp_overlap", "recompute_modules", "order", "fp8_cache")
"""The :class:`~atscale.plan.Plan` fields :func:`evaluate` takes as (broadcast) arrays."""


def _module_mask(modules):
    """:attr:`Plan.recompute_modules` as a bit mask (bit ``i``: ``RECOMPUTE_MODULES[i]``): ``None``, or names (one
    list for every plan), or already masks (integers, an array for many plans; 0, like ``None``, the attention
    core alone)."""
    if modules is None:
        return 1
    if isinstance(modules, str) or (not isinstance(modules, np.ndarray) and not np.isscalar(modules)
                                    and all(isinstance(x, str) for x in modules)):
        return sum(1 << RECOMPUTE_MODULES.index(m) for m in _modules_arg(modules))
    masks = _v.count("recompute_modules", modules, low=0, high=2 ** len(RECOMPUTE_MODULES) - 1, scalar=False)
    return np.where(np.asarray(masks) == 0, 1, masks)


def _recomputes(L, module: str):
    """Whether the (selective) recomputation of each plan of ``L`` recomputes ``module`` (set by :func:`_derived`)."""
    return L.again[module]


def _codes(name, value, options) -> np.ndarray:
    """The index in ``options`` of each name of ``value`` (a name or an array of names); a ``ValueError`` naming
    ``name`` for anything else."""
    names = np.asarray(value, dtype=object)
    out = np.full(names.shape, -1, dtype=int)
    for i, option in enumerate(options):  # elementwise comparison in NumPy's loop: a number never equals a name
        out[names == option] = i
    if np.any(out < 0):
        raise ValueError(f"{name}={_v.show(value)} must be among {options}")
    return out


def _order_codes(value):
    """:attr:`Plan.order` as codes: ``None`` (or ``""`` or 0 in an array) is the network's default, else a name of
    :data:`~atscale.plan.PLACEMENT_ORDERS`."""
    if value is None:
        return _ORDER_DEFAULT
    names = np.asarray(value, dtype=object)
    default = np.vectorize(lambda x: x is None or (x == "" if isinstance(x, str) else x == 0), otypes=[bool])(names)
    return np.where(default, _ORDER_DEFAULT, _codes("order", np.where(default, PLACEMENT_ORDERS[0], names),
                                                    PLACEMENT_ORDERS))


def _derived(L):
    """The fields every cost term reads, derived from the plan's (floats or arrays alike)."""
    L.b, L.gb = L.micro_batch, L.global_batch
    selective = L.reco == _RECOMPUTE_CODE["selective"]
    L.again = {m: ((L.rmods // (1 << i)) % 2 == 1) & selective for i, m in enumerate(RECOMPUTE_MODULES)}
    L.v = L.virtual_stages * (L.sched == _SCHEDULE_CODE["interleaved"]) + (L.sched != _SCHEDULE_CODE["interleaved"])
    L.m = L.gb // (L.b * L.dp)
    # DualPipe keeps two stages' weights (and their gradients and optimizer state) on each GPU (DeepSeek-AI 2024,
    # Table 2; :func:`atscale.pipeline.weight_copies`)
    L.copies = 1.0 + (L.sched == _SCHEDULE_CODE["dualpipe"])
    # DualPipeV and ZB-V hold two half-size stages in a V: each micro-batch crosses every GPU twice, so twice the
    # point-to-point sends (:data:`atscale.pipeline.V_SHAPED`)
    L.hops = 1.0 + sum(L.sched == code for code in _V_SHAPED_CODES)
    return L


def _layout(fields: dict, dp_overlap) -> tuple[tuple, types.SimpleNamespace]:
    """Checks the plan fields and broadcasts them into flat arrays (a namespace) and the broadcast shape."""
    counts = {n: _v.count(n, fields[n], scalar=False) for n in ("tp", "cp", "pp", "dp", "micro_batch",
                                                                  "global_batch", "virtual_stages", "ep")}
    etp = fields["expert_tp"]  # None (or 0 in an array): the plan's tp
    counts["etp"] = counts["tp"] if etp is None else np.where(
        np.asarray(_v.count("expert_tp", etp, low=0, scalar=False)) == 0, counts["tp"], etp)
    imbalance = _v.number("expert_imbalance", fields["expert_imbalance"], low=1)
    cap = fields["capacity_factor"]  # None (or 0 in an array): no cap
    if cap is not None:
        cap = _v.number("capacity_factor", cap, low=0)
        if np.any((cap > 0) & (cap < 1)):
            raise ValueError(f"capacity_factor={_v.show(fields['capacity_factor'])} must be >= 1 (0 or None: no cap)")
    load = imbalance if cap is None else np.where(cap == 0, imbalance, np.minimum(imbalance, cap))
    zs = _v.count("zero_stage", fields["zero_stage"], low=0, high=3, scalar=False)
    shard = fields["shard_group"]
    shard = 0 if shard is None else _v.count("shard_group", shard, low=0, scalar=False)  # 0: all dp x cp ranks
    flags = {n: _v.flags(n, fields[n]) for n in ("sequence_parallel", "account_for_embedding", "account_for_loss",
                                                 "tp_overlap", "reshard_after_forward", "a2a_overlap",
                                                 "pp_overlap")}
    rmods = _module_mask(fields["recompute_modules"])
    arrays = _v.broadcast(**counts, zs=zs, shard=shard, sched=_codes("schedule", fields["schedule"], SCHEDULES),
                          reco=_codes("recompute", fields["recompute"], RECOMPUTE),
                          cpa=_codes("cp_algorithm", fields["cp_algorithm"], CP_ALGORITHMS),
                          fp8c=_codes("fp8_cache", fields["fp8_cache"], FP8_CACHES),
                          order=_order_codes(fields["order"]), **flags,
                          ovl=_v.number("dp_overlap", dp_overlap, low=0, high=1), load=load, rmods=rmods)
    shape = arrays[0].shape
    flat = [np.array(a).reshape(-1) for a in arrays]
    names = list(counts) + ["zs", "shard", "sched", "reco", "cpa", "fp8c", "order", "sp", "emb", "loss", "tp_overlap", "reshard",
                             "a2a", "ppo", "ovl", "load", "rmods"]
    L = types.SimpleNamespace(**dict(zip(names, flat)))
    for n in ("tp", "cp", "pp", "dp", "micro_batch", "global_batch", "virtual_stages", "shard", "zs", "ep", "etp",
              "load"):
        setattr(L, n, getattr(L, n).astype(float))
    L.zs_i = L.zs.astype(int)
    L.emb, L.loss = L.emb.astype(float), L.loss.astype(float)
    return shape, _derived(L)


def _remembered(table: dict, key: tuple, owners: tuple, make):
    """``make()``, remembered in ``table`` under ``key`` (which holds the ``id`` of each of ``owners``): reused
    only while those are the very same objects, all frozen, so the value cannot go stale; each entry keeps its
    owners alive, so their ids are not reused while it is cached. At most 256 entries."""
    entry = table.get(key)
    if entry is not None and all(a is b for a, b in zip(entry[0], owners)):
        return entry[1]
    if len(table) >= 256:
        table.clear()
    value = make()
    table[key] = (owners, value)
    return value


_PLANS: dict = {}


def _plan_layout(plan: Plan, dp_overlap: float) -> types.SimpleNamespace:
    """One checked :class:`Plan` as the namespace of Python numbers the cost terms take (no arrays), remembered
    per plan object (a plan is frozen; the cost terms only read the namespace)."""
    return _remembered(_PLANS, (id(plan), dp_overlap), (plan,), lambda: _new_plan_layout(plan, dp_overlap))


def _new_plan_layout(plan: Plan, dp_overlap: float) -> types.SimpleNamespace:
    L = types.SimpleNamespace(
        tp=float(plan.tp), cp=float(plan.cp), pp=float(plan.pp), dp=float(plan.dp), micro_batch=float(plan.micro_batch),
        global_batch=float(plan.global_batch), virtual_stages=float(plan.virtual_stages), zs=float(plan.zero_stage),
        zs_i=plan.zero_stage, shard=float(plan.shard_group or 0), sched=_SCHEDULE_CODE[plan.schedule],
        reco=_RECOMPUTE_CODE[plan.recompute], cpa=_CP_CODE[plan.cp_algorithm], fp8c=FP8_CACHES.index(plan.fp8_cache),
        order=_ORDER_DEFAULT if plan.order is None else _ORDER_CODE[plan.order],
        sp=plan.sequence_parallel, emb=float(plan.account_for_embedding),
        loss=float(plan.account_for_loss), tp_overlap=plan.tp_overlap, reshard=plan.reshard_after_forward,
        ovl=dp_overlap, ep=float(plan.ep), etp=float(plan.etp), a2a=plan.a2a_overlap, ppo=plan.pp_overlap,
        load=float(plan.expert_load), rmods=_module_mask(plan.recompute_modules))
    L = _derived(L)
    L.layer_key = tuple(getattr(L, name) for name in LAYER_FIELDS)  # what _layer_times remembers its times under
    return L


def _at(x, i):
    return x if i is None else x[i]


def _conditions(L, c: _Context, num_gpus: int) -> tuple:
    """Why a layout cannot run, as one failing-condition (a bool, or a bool array) per entry of :data:`_MESSAGES`,
    in order; memory comes later."""
    m, xp, g = c.model, c.xp, c.gpus_per_node
    inter = L.sched == _SCHEDULE_CODE["interleaved"]
    ulysses = L.cpa == _CP_CODE["ulysses"]
    return ((L.tp * L.cp * L.pp * L.dp) != num_gpus, L.tp > g, (m.num_heads % L.tp != 0) | (m.kv_heads % L.tp != 0),
            (L.cp > 1) & (not c.flash) & xp.logical_not(ulysses), xp.logical_not(ulysses) & (c.s % (2 * L.cp) != 0),
            ulysses & (c.s % L.cp != 0),
            ulysses & (L.cp > 1) & (((m.num_heads // xp.maximum(L.tp, 1.0)) % L.cp != 0)
                                    | ((m.kv_heads // xp.maximum(L.tp, 1.0)) % L.cp != 0)),
            L.pp * L.v > m.num_layers + L.emb + L.loss,
            L.m * L.b * L.dp != L.gb, inter & (L.pp < 2), inter & (L.m < L.pp), L.sp & (L.tp == 1),
            (L.shard > 0) & ((L.dp * L.cp) % xp.maximum(L.shard, 1.0) != 0),
            (L.ep > 1) & (not m.is_moe), (m.num_experts % L.ep != 0) & m.is_moe,
            (L.tp * L.cp * L.dp) % (L.ep * L.etp) != 0, L.etp > g,
            (L.sched == _SCHEDULE_CODE["zb-h1"]) & (L.m < L.pp), (L.sched == _SCHEDULE_CODE["zb-h2"]) & (L.m < 2 * L.pp - 1),
            (L.sched == _SCHEDULE_CODE["dualpipe"]) & ((L.m < 2 * L.pp) | (L.m % 2 != 0)),
            (L.sched == _SCHEDULE_CODE["dualpipev"]) & (L.m < 2 * L.pp),
            (L.sched == _SCHEDULE_CODE["zb-v"]) & (L.m < 2 * L.pp))


_MESSAGES = (  # (L, c, GPUs, layout index or None) -> the reason, one per condition of _conditions
    lambda L, c, n, i: (f"TP x CP x PP x DP = {int(_at(L.tp, i))} x {int(_at(L.cp, i))} x {int(_at(L.pp, i))} x "
                        f"{int(_at(L.dp, i))} = {int(_at(L.tp * L.cp * L.pp * L.dp, i)):,} GPUs; the cluster has {n:,}"),
    lambda L, c, n, i: (f"TP={int(_at(L.tp, i))} exceeds the {c.gpus_per_node} GPUs of a node: its collectives would "
                        "leave NVLink"),
    lambda L, c, n, i: (f"TP={int(_at(L.tp, i))} does not divide the {c.model.num_heads} heads and "
                        f"{c.model.kv_heads} KV heads"),
    lambda L, c, n, i: ("context parallelism by ring or all-gather needs a fused (FlashAttention) kernel (Ulysses "
                        "does not)"),
    lambda L, c, n, i: (f"CP={int(_at(L.cp, i))}: the sequence of {int(c.s):,} tokens does not split into 2 x CP "
                        "load-balanced chunks"),
    lambda L, c, n, i: f"CP={int(_at(L.cp, i))}: the sequence of {int(c.s):,} tokens does not split into CP parts",
    lambda L, c, n, i: (f"Ulysses CP={int(_at(L.cp, i))} splits the attention heads: the "
                        f"{c.model.num_heads // int(_at(L.tp, i))} query and {c.model.kv_heads // int(_at(L.tp, i))} "
                        f"key-value heads per tensor-parallel rank (TP={int(_at(L.tp, i))}) must each divide by CP"),
    lambda L, c, n, i: (f"PP x v = {int(_at(L.pp, i))} x {int(_at(L.v, i))} chunks for {c.model.num_layers} layers: "
                        "some stages would be empty"),
    lambda L, c, n, i: (f"global batch {int(_at(L.gb, i)):,} is not a whole number of micro-batches of "
                        f"{int(_at(L.b, i))} per replica x DP={int(_at(L.dp, i))}"),
    lambda L, c, n, i: "the interleaved schedule needs PP >= 2",
    lambda L, c, n, i: (f"interleaved: {int(_at(L.m, i))} micro-batches per replica cannot fill "
                        f"PP={int(_at(L.pp, i))} stages"),
    lambda L, c, n, i: "sequence parallelism needs TP > 1",
    lambda L, c, n, i: (f"shard_group={int(_at(L.shard, i))} does not divide DP x CP = "
                        f"{int(_at(L.dp, i) * _at(L.cp, i))}"),
    lambda L, c, n, i: f"EP={int(_at(L.ep, i))}: {c.model.name} has no experts (expert parallelism needs a MoE model)",
    lambda L, c, n, i: f"EP={int(_at(L.ep, i))} does not divide the {c.model.num_experts} experts of {c.model.name}",
    lambda L, c, n, i: (f"expert TP x EP = {int(_at(L.etp, i))} x {int(_at(L.ep, i))} does not divide TP x CP x DP = "
                        f"{int(_at(L.tp * L.cp * L.dp, i))}"),
    lambda L, c, n, i: (f"expert TP={int(_at(L.etp, i))} exceeds the {c.gpus_per_node} GPUs of a node: its "
                        "collectives would leave NVLink"),
    lambda L, c, n, i: (f"ZB-H1: {int(_at(L.m, i))} micro-batches per replica cannot fill PP={int(_at(L.pp, i))} "
                        "stages (it needs m >= PP)"),
    lambda L, c, n, i: (f"ZB-H2: {int(_at(L.m, i))} micro-batches per replica, fewer than the 2 PP - 1 = "
                        f"{int(2 * _at(L.pp, i) - 1)} it needs"),
    lambda L, c, n, i: (f"DualPipe: {int(_at(L.m, i))} micro-batches per replica; it needs an even number, at least "
                        f"2 PP = {int(2 * _at(L.pp, i))}"),
    lambda L, c, n, i: (f"DualPipeV: {int(_at(L.m, i))} micro-batches per replica, fewer than the 2 PP = "
                        f"{int(2 * _at(L.pp, i))} it needs"),
    lambda L, c, n, i: (f"ZB-V: {int(_at(L.m, i))} micro-batches per replica, fewer than the 2 PP = "
                        f"{int(2 * _at(L.pp, i))} it needs"),
)


_MESSAGE_FIELDS = ("tp", "cp", "pp", "dp", "v", "gb", "b", "m", "shard", "ep", "etp")
"""Every layout field a message of :data:`_MESSAGES` reads (besides the model, the context and the GPU count)."""


def _reasons(L, c: _Context, num_gpus: int) -> np.ndarray:
    """Why each layout cannot run ("" where it can), the first failing check winning. A message is written once
    for each distinct combination of :data:`_MESSAGE_FIELDS` among the layouts it applies to, and shared by them
    (a search's infeasible layouts repeat a few reasons thousands of times)."""
    shape = L.tp.shape
    reason = np.full(shape, "", dtype=object)
    undecided = np.ones(shape, dtype=bool)
    rows = None
    for failing, text in zip(_conditions(L, c, num_gpus), _MESSAGES):
        mask = np.broadcast_to(failing, shape) & undecided
        if not np.any(mask):
            continue
        undecided &= ~mask
        if rows is None:  # each layout's fields as one opaque row of bytes, so that equal rows sort together
            fields = np.stack([np.broadcast_to(np.asarray(getattr(L, f), dtype=float), shape).ravel()
                               for f in _MESSAGE_FIELDS], axis=1)
            rows = np.ascontiguousarray(fields).view(np.dtype((np.void, fields.itemsize * len(_MESSAGE_FIELDS))))
            rows = rows.ravel()
        at = np.flatnonzero(mask)
        _, first, where = np.unique(rows[at], return_index=True, return_inverse=True)
        written = np.empty(first.size, dtype=object)
        written[:] = [text(L, c, num_gpus, int(i)) for i in at[first]]
        reason.ravel()[at] = written[where.ravel()]
    return reason


def _alternate_matmul(model: models.TransformerConfig) -> float:
    """Weights per layer of the matmuls ``"alternate_mm"`` runs again (:data:`atscale.plan.RECOMPUTE_MODULES`): the
    key projection (none under MLA), the attention output projection, and the MLP's up projection (gated) or down
    projection (not); ``2`` FLOPs per weight and token. A mixture of experts' MLP counted as its dense width (the
    policy is torchtitan's, for its dense Llama)."""
    out = model.num_heads * model.v_head_dim
    return float(model.hidden_size * (memory._key_width(model) + out + model.active_ffn_size))


@functools.lru_cache(maxsize=64)
def _model_constants(model: models.TransformerConfig, s: int, flash: bool) -> types.SimpleNamespace:
    """The numbers of ``model`` the cost terms read, computed once per (model, sequence, kernel)."""
    h, V = model.hidden_size, model.vocab_size
    terms = memory.activation_terms(model, 1, s, flash_attention=flash)  # one sequence of s tokens
    rep, par = elementwise_bytes_per_token(model, s)
    l, matrices = model.num_layers, (3 if model.gated_mlp else 2)
    routed = model.routed_expert_params
    q_width, o_width = model.num_heads * model.qk_head_dim, model.num_heads * model.v_head_dim
    kv_width = model.kv_heads * (model.qk_head_dim + model.v_head_dim) / 2
    projections = model.attention_projections()
    return types.SimpleNamespace(
        l=l, h=h, f=model.active_ffn_size, a=model.num_heads, V=V, vh=V * h, aw=model.attention_width,
        kv_width=kv_width, q_width=q_width, o_width=o_width,
        layer_matmul=(model.matmul_params - V * h) / l,
        layer_dense=(model.block_params - routed) / l, layer_routed=routed / l,
        moe=model.is_moe, moe_share=model.moe_layers / l, shared=model.shared_experts > 0, top_k=float(model.experts_per_token),
        experts=float(max(model.num_experts, 1)),
        max_nodes=float(model.max_routed_nodes or 0), dedup=model.dedup_dispatch, fp8_dispatch=model.fp8_dispatch,
        expert_width=float(min(h, model.expert_size)),
        layer_expert_matmul=model.moe_layers * model.experts_per_token * matrices * h * model.expert_size / l,
        weight_bytes=2.0,
        # what the last stage holds besides its layers: the output layer, the final norm and the MTP modules' parts
        # beyond their blocks (the blocks count as layers of the stage, _stage_layers)
        out_params=V * h + model.norm_params() + model.mtp_params - model.mtp_layers * model.mtp_block_params,
        emb_params=model.embedding_params() - (0 if model.tied_embeddings else V * h),
        elem_rep=rep, elem_par=par, act_rep=terms.replicated, act_par=terms.parallel, act_scores=terms.scores,
        model_tok=float(models.training_flops_per_token(model, s)), tp_collectives=2.0 if model.parallel_block else 4.0,
        saved={m: memory.recompute_savings(model, 1, s, (m,), flash_attention=flash) for m in RECOMPUTE_MODULES},
        saved_alt_beside_mlp=(memory.recompute_savings(model, 1, s, ("mlp", "alternate_mm"), flash_attention=flash).parallel
                              - memory.recompute_savings(model, 1, s, ("mlp",), flash_attention=flash).parallel),
        alt_matmul=_alternate_matmul(model),
        fp8_cache=[memory._fp8_cache_parts(model, float(s), p) for p in FP8_CACHES],  # per sequence
        mlp_matmul=matrices * h * model.active_ffn_size, gated=model.gated_mlp,
        attn_matmul=sum(n * k for _, n, k in projections) + o_width * h,
        mla_up_matmul=sum(n * k for name, n, k in projections if name.endswith("up-projection")),
        rotary=float(model.rotary_width), mla=model.mla is not None, mtp=float(model.mtp_layers),
        key_share=memory._key_width(model) / model.qkv_width)


_CONTEXTS: dict = {}


def _context(model, cluster, seq_length, dtype, optimizer_name, flash_attention, calibration,
             xp=_ArrayOps, stack=None, fp8_recipe="delayed") -> _Context:
    """The checked :class:`_Context` of these arguments, remembered per argument objects (:func:`_remembered`)."""
    args = (model, cluster, seq_length, dtype, optimizer_name, flash_attention, calibration, xp, stack, fp8_recipe)
    key = (id(model), id(cluster), type(seq_length), seq_length, type(dtype), dtype, type(optimizer_name),
           optimizer_name, type(flash_attention), flash_attention, id(calibration), xp,
           type(stack), stack if isinstance(stack, (str, type(None))) else id(stack), type(fp8_recipe),
           fp8_recipe)  # types: 1 is not True
    try:
        hash(key)
    except TypeError:  # an unhashable argument (a list): not cacheable, and the checks will say why
        return _new_context(*args)
    return _remembered(_CONTEXTS, key, (model, cluster, calibration), lambda: _new_context(*args))


def _new_context(model, cluster, seq_length, dtype, optimizer_name, flash_attention, calibration, xp,
                 stack=None, fp8_recipe="delayed") -> _Context:
    model = models.model(model)
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster must be an atscale.hardware.Cluster (got a {type(cluster).__name__})")
    if not isinstance(calibration, Calibration):
        raise ValueError(f"calibration={_v.show(calibration)} must be an atscale.parallelism.Calibration")
    acc = cluster.accelerator
    acc.peak(dtype)  # a ValueError naming the accelerator's dtypes
    s = model.seq_length if seq_length is None else _v.count("seq_length", seq_length)
    flash = _v.flag("flash_attention", flash_attention)
    up, rail = (collectives._link_cost(f, "ring") for f in (collectives._scale_up(cluster.node),
                                                              collectives._rail(cluster)))
    ops, contention = None, 0.0
    _v.choice("fp8_recipe", fp8_recipe, _operators.kernels.FP8_RECIPES)
    if stack is not None:
        st = _operators._stack_arg("stack", stack)
        ops = _operators._context(model, acc, float(s), dtype, st, fp8_recipe, flash,
                                  calibration.kernel_efficiency_for(acc), calibration.fp8_rate_factor,
                                  calibration.rowwise_linear_only, calibration.attention_rate_factor)
        contention = st.comm_sm_share
    return _Context(model, float(s), _ceiling(acc, dtype, calibration), _ceiling(acc, "bf16", calibration),
                    acc.hbm_bandwidth, up, rail, cluster.node.gpus, memory.optimizer(optimizer_name), flash,
                    dtype == "fp8", calibration.for_accelerator(acc), _model_constants(model, s, flash), xp,
                    ops, contention, collectives._tier_costs(cluster))


def _parts(L, c: _Context) -> dict:
    """Every part of the step (seconds), the memory of the fuller end stage and the hardware FLOPs per token."""
    layer = _layer_times(L, c)
    tp_t, cp_t, pp_t = _tp_comm(L, c, layer), _cp_comm(L, c, layer), _pp_comm(L, c, layer)
    ep_t, ep_whole = _ep_comm(L, c, layer) if c.k.moe else (0.0, 0.0)
    stage = _pace(L, c, layer, tp_t, cp_t, pp_t, ep_t)
    fill = _pp_overlap(L, c, stage)
    keys = ("compute", "recompute", "tp_comm", "cp_comm", "ep_comm", "pp_comm")
    per_mb = sum(stage[key] for key in keys)
    parts = {key: L.m * stage[key] for key in keys}
    if c.k.moe:  # the overlapped all-to-alls of the warm-up and cool-down chunks, which nothing hides
        parts["ep_comm"] = parts["ep_comm"] + c.xp.where(L.a2a, _a2a_warmup(L, c.xp) / L.v, 0.0) \
            * stage["layers"] * (ep_whole - ep_t)
    parts["pp_comm"] = parts["pp_comm"] + fill
    third = per_mb / 3  # forward, input-gradient and weight-gradient passes take a third each (Qi et al. 2024)
    parts["bubble"] = c.xp.lazy_where(  # the classic schedules' (p - 1)/v, else the split-backward closed forms
        L.sched <= _SCHEDULE_CODE["interleaved"], lambda: (L.pp - 1) / L.v * per_mb,
        lambda: _pipeline._bubble_time(L.sched, L.pp, L.m, L.v, third, third, third, c.xp))
    sl, K, xp = stage["stages"], c.k, c.xp
    shards = _shard_ranks(L, xp)
    mem = _memory(L, c, sl, shards, layer)
    layers = xp.maximum(sl.first, sl.last)  # the larger end stage
    dense = L.copies * (layers * K.layer_dense + K.vh) / L.tp
    routed = L.copies * layers * K.layer_routed / (L.ep * L.etp)
    fwd_mb = (stage["compute"] + stage["recompute"]) / 3
    parts["dp_comm"] = _dp_comm(L, c, dense, fwd_mb, 2 * fwd_mb, stage["layers"], shards, routed)
    k, k_e = shards
    sharded = L.zs >= 1  # the optimizer updates only its shard from ZeRO-1 on
    parts["optimizer"] = (dense / xp.where(sharded, k, 1.0) + routed / xp.where(sharded, k_e, 1.0)) \
        * ADAM_BYTES_PER_PARAM / c.hbm
    return dict(parts=parts, memory=mem["model state"] + mem["activations"], mem_parts=mem,
                hw_tok=K.model_tok + layer["extra_flops"] * K.l + K.mtp * (
                    (K.model_tok - 6 * K.vh) / K.l + layer["extra_flops"] + 6 * K.vh + 12 * K.h * K.h))


def _shard_ranks(L, xp) -> tuple:
    """Over how many GPUs ZeRO shards the state of the dense weights and of the routed experts: the ``dp x cp``
    ranks holding the same dense weights (or ``shard_group`` of them), and the experts' data-parallel group of
    ``tp cp dp / (expert_tp ep)`` ranks (at most ``shard_group`` of them)."""
    n = L.dp * L.cp
    n_e = L.tp * n / (L.ep * L.etp)
    return xp.where(L.shard > 0, L.shard, n), xp.where(L.shard > 0, xp.minimum(L.shard, n_e), n_e)


def _too_big(state, acts, capacity):
    """Why a layout of ``state`` and ``acts`` bytes per GPU (model state and activations; floats, or arrays for
    many layouts) does not fit in ``capacity`` bytes: a message, or a list of them formatted in one pass (a
    search refuses thousands)."""
    total = np.add(state, acts)
    fmt = (f"does not fit: {{:.1f}} GB per GPU > {capacity / 1e9:.1f} GB, over by {{:.1f}} GB, more than the "
           f"model's {MEMORY_MARGIN:.0%} margin; largest term: {{}} {{:.1f}} GB").format
    which = np.where(np.greater(acts, state), "activations", "model state")
    rows = zip(np.ravel(total / 1e9).tolist(), np.ravel((total - capacity) / 1e9).tolist(), np.ravel(which).tolist(),
               np.ravel(np.maximum(state, acts) / 1e9).tolist())
    messages = [fmt(*row) for row in rows]
    return messages if np.ndim(total) else messages[0]


def evaluate(model, cluster: hardware.Cluster, *, tp, pp, dp, micro_batch, global_batch, cp=1, zero_stage=0,
             schedule="1f1b", virtual_stages=1, recompute="none", sequence_parallel=False,
             account_for_embedding=False, account_for_loss=False, tp_overlap=True, reshard_after_forward=True,
             shard_group=None, ep=1, expert_tp=None, a2a_overlap=False, expert_imbalance=1.0, capacity_factor=None,
             cp_algorithm="ring", pp_overlap=False, recompute_modules=None, fp8_cache="none", seq_length=None,
             dtype: str = "bf16",
             optimizer_name: str = memory.RUNNING_EXAMPLE_OPTIMIZER, dp_overlap=DP_OVERLAP,
             flash_attention: bool = True, memory_check: bool = True,
             calibration: Calibration = CALIBRATION, stack=None, fp8_recipe: str = "delayed",
             stragglers=None, order=None) -> StepTime:
    """Step time of every layout given by (broadcast) arrays of plan fields; see :func:`step_time`.

    ``schedule``, ``recompute``, ``cp_algorithm``, ``fp8_cache`` and ``order`` (``None``, or ``""`` in an array: the network's
    default) may be arrays of names, the flags arrays of booleans, the
    others arrays of numbers; ``shard_group`` ``None`` (or 0 in an array) shards over all ``dp x cp`` ranks, ``expert_tp`` ``None``
    (or 0) is ``tp`` and ``capacity_factor`` ``None`` (or 0) no cap; ``recompute_modules`` one list of
    :data:`atscale.plan.RECOMPUTE_MODULES` for every plan (those with ``recompute="selective"``). Returns a
    :class:`StepTime` whose fields are arrays of the broadcast shape, with ``feasible`` a boolean array and
    ``reason`` an array of strings ("" where feasible). ``memory_check=False`` skips the memory verdict (the
    memory is still computed).
    """
    c = _context(model, cluster, seq_length, dtype, optimizer_name, flash_attention, calibration, _ArrayOps, stack,
                 fp8_recipe)
    memory_check = _v.flag("memory_check", memory_check)
    slow = _straggler_fraction(stragglers, cluster)
    fields = dict(tp=tp, cp=cp, pp=pp, dp=dp, micro_batch=micro_batch, global_batch=global_batch,
                  zero_stage=zero_stage, schedule=schedule, virtual_stages=virtual_stages, recompute=recompute,
                  sequence_parallel=sequence_parallel, account_for_embedding=account_for_embedding,
                  account_for_loss=account_for_loss, tp_overlap=tp_overlap,
                  reshard_after_forward=reshard_after_forward, shard_group=shard_group, ep=ep, expert_tp=expert_tp,
                  a2a_overlap=a2a_overlap, expert_imbalance=expert_imbalance, capacity_factor=capacity_factor,
                  cp_algorithm=cp_algorithm, pp_overlap=pp_overlap, recompute_modules=recompute_modules, order=order,
                  fp8_cache=fp8_cache)
    shape, L = _layout(fields, dp_overlap)
    reason = _reasons(L, c, cluster.num_gpus)
    ok = reason == ""
    # Impossible layouts get harmless stand-ins so the arithmetic stays finite; their times become NaN.
    L.pp, L.v, L.m = np.where(ok, L.pp, 1.0), np.where(ok, L.v, 1.0), np.maximum(L.m, 1.0)
    r = _parts(L, c)
    capacity = cluster.accelerator.usable_memory
    over = memory_check & ok & (r["memory"] > capacity * (1 + MEMORY_MARGIN))
    if np.any(over):
        reason[over] = _too_big(r["mem_parts"]["model state"][over], r["mem_parts"]["activations"][over], capacity)
    feasible = reason == ""
    status = np.where(~feasible, "", np.where(r["memory"] > capacity * (1 + MEMORY_MARGIN), "over",
                                             np.where(r["memory"] > capacity * (1 - MEMORY_MARGIN), "tight", "fits")))
    nan = np.where(feasible, 1.0, np.nan)
    tokens = L.gb * c.s

    def out(x):
        return np.broadcast_to(x * nan, L.tp.shape).reshape(shape)

    extra = {} if slow is None else dict(
        straggler=out(slow[1] * (r["parts"]["compute"] + r["parts"]["recompute"])), stragglers=slow[0])
    return StepTime(**{key: out(r["parts"][key]) for key in PARTS}, tokens_per_step=out(tokens),
                    model_flops_per_step=out(c.k.model_tok * tokens), hardware_flops_per_step=out(r["hw_tok"] * tokens),
                    **_constants(c, cluster, dtype), feasible=feasible.reshape(shape), reason=reason.reshape(shape),
                    memory_total=np.broadcast_to(r["memory"], L.tp.shape).reshape(shape),
                    memory_status=status.astype(object).reshape(shape), **extra)


def _straggler_fraction(stragglers, cluster: hardware.Cluster):
    """``(model, fraction)`` of a ``stragglers=`` keyword on ``cluster`` (:mod:`atscale.stragglers`), or ``None``
    when off: the expected wait for the slowest GPU as a fraction of the compute and recomputation."""
    model = _stragglers._stragglers_arg(stragglers)
    if model is None:
        return None
    return model, _stragglers._fraction_of(model, cluster.num_gpus, cluster.node.gpus)


def _constants(c: _Context, cluster: hardware.Cluster, dtype: str) -> dict:
    """The :class:`StepTime` fields that do not depend on the layout."""
    acc = cluster.accelerator
    return dict(gpus=cluster.num_gpus, peak_flops=acc.peak("bf16"), memory_capacity=acc.usable_memory, dtype=dtype,
                dtype_peak_flops=acc.peak(dtype),
                causal_flops_ratio=1 - 6 * c.k.l * c.s * c.k.aw / c.k.model_tok)


def _one(c: _Context, cluster: hardware.Cluster, plan: Plan, dtype: str, dp_overlap: float,
         memory_check: bool, slow=None) -> StepTime:
    """:func:`evaluate` for one checked plan, on Python numbers: the same cost terms, no arrays."""
    L = _plan_layout(plan, dp_overlap)
    n = cluster.num_gpus
    reason = next((text(L, c, n, None) for failing, text in zip(_conditions(L, c, n), _MESSAGES) if failing), "")
    fields = _constants(c, cluster, dtype)
    if reason:  # the arithmetic below would be meaningless (or divide by zero): a NaN step with its reason
        nan = math.nan
        extra = {} if slow is None else dict(straggler=nan, stragglers=slow[0])
        return StepTime(**{key: nan for key in PARTS}, tokens_per_step=nan, model_flops_per_step=nan,
                        hardware_flops_per_step=nan, **fields, feasible=False, reason=reason, memory_total=nan,
                        memory_status="", plan=plan, **extra)
    r = _parts(L, c)
    capacity = fields["memory_capacity"]
    total = r["memory"]
    if memory_check and total > capacity * (1 + MEMORY_MARGIN):
        reason = _too_big(r["mem_parts"]["model state"], r["mem_parts"]["activations"], capacity)
    feasible = not reason
    scale = 1.0 if feasible else math.nan
    tokens = L.gb * c.s
    status = "" if not feasible else ("over" if total > capacity * (1 + MEMORY_MARGIN) else
                                      "tight" if total > capacity * (1 - MEMORY_MARGIN) else "fits")
    if slow is not None:
        parts = r["parts"]
        fields.update(straggler=slow[1] * float(parts["compute"] + parts["recompute"]) * scale, stragglers=slow[0])
    return StepTime._of(**{key: float(r["parts"][key]) * scale for key in PARTS}, tokens_per_step=tokens * scale,
                    model_flops_per_step=c.k.model_tok * tokens * scale,
                    hardware_flops_per_step=float(r["hw_tok"]) * tokens * scale, **fields, feasible=feasible,
                    reason=reason, memory_total=float(total), memory_status=status, plan=plan)


def step_time(model, cluster: hardware.Cluster, plan: Plan, *, seq_length=None, dtype: str = "bf16",
              optimizer_name: str = memory.RUNNING_EXAMPLE_OPTIMIZER, dp_overlap: float = DP_OVERLAP,
              flash_attention: bool = True, memory_check: bool = True,
              calibration: Calibration = CALIBRATION, stack=None,
              fp8_recipe: str = "delayed", stragglers=None) -> StepTime:
    """Seconds per optimizer step of ``model`` on ``cluster`` laid out as ``plan``, part by part.

    Per micro-batch, each layer costs its matmuls (``6`` x its weight matrices per token at
    :func:`compute_efficiency` x the measured matmul ceiling of ``dtype``), its attention core (``12 s h`` per
    token, half of it executed by a causal fused kernel, in BF16), its memory-bound kernels at the HBM
    bandwidth (:func:`elementwise_bytes_per_token`; FP8 adds its casts) and the exposed part of its
    tensor- and context-parallel communication (:func:`_tp_comm`, :func:`_cp_comm`). The stage holding the
    most work (:func:`stage_layers`; the last adds the output layer) sets the pace: ``m`` micro-batches of it,
    plus the bubble ``(p - 1)/v`` more (:func:`bubble_fraction`), plus the exposed data-parallel
    communication (:func:`_dp_comm`) and the optimizer step. ``dp_overlap`` bounds what data-parallel
    communication may hide behind; ``flash_attention`` (default on, the H100-era practice) stores no score
    matrix; ``calibration`` the constants of :func:`compute_efficiency`. An infeasible layout returns
    ``feasible=False`` with ``reason`` and NaN times; one whose memory is within :data:`MEMORY_MARGIN` of
    capacity is feasible with ``memory_status == "tight"``. The arguments are checked here, once; the cost
    terms then run on plain Python numbers (tens of microseconds; :func:`evaluate` runs the same terms on
    arrays). Sources: Narayanan et al. (2021), sec. 2-3; Korthikanti et al. (2022), sec. 4-6; Rajbhandari
    et al. (2020), sec. 7; Dao (2023).

    ``stack`` (a name of :data:`atscale.operators.STACKS` or a :class:`~atscale.operators.Stack`; default ``None``)
    replaces the layer-efficiency curve by the operator-level compute of :mod:`atscale.operators`: every GEMM at
    its shape's rate, the attention core at its kernel's, the memory-bound kernels with the bytes and kernels
    the stack runs, per-kernel fixed costs, FP8 casts by ``fp8_recipe`` (:data:`atscale.kernels.FP8_RECIPES`), and
    overlapped communication charged for the compute it slows (the stack's ``comm_sm_share``).

    ``stragglers`` (default ``None``: off) adds the ``straggler`` part, the expected wait of a synchronous step for
    the slowest of the cluster's GPUs: ``True`` the published readings (:data:`atscale.stragglers.STRAGGLERS`), or
    a :class:`atscale.stragglers.Stragglers`; the part is its :func:`~atscale.stragglers.straggler_fraction` of
    ``compute + recompute`` (a slower GPU computes slower; the wire is not slowed).
    """
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be an atscale.plan.Plan (got a {type(plan).__name__})")
    if plan.global_batch is None:
        raise ValueError("plan.global_batch is None: a step time needs the global batch (sequences per step)")
    c = _context(model, cluster, seq_length, dtype, optimizer_name, flash_attention, calibration, _ScalarOps, stack,
                 fp8_recipe)
    overlap = _v.number("dp_overlap", dp_overlap, low=0, high=1, scalar=True)
    slow = None if stragglers is None else _straggler_fraction(stragglers, cluster)
    return _one(c, cluster, plan, dtype, overlap, _v.flag("memory_check", memory_check), slow)


# --------------------------------------------------------------------------------------
# Small helpers the chapter uses
# --------------------------------------------------------------------------------------
def amdahl_speedup(serial_fraction, gpus):
    """Amdahl's law: ``1 / (f + (1 - f)/N)``, the speedup on ``N`` GPUs when a fraction ``f`` of the
    single-GPU time cannot be parallelised (Amdahl 1967). Vectorised; dimensionless."""
    f = _v.number("serial_fraction", serial_fraction, low=0, high=1)
    n = _v.number("gpus", gpus, low=1, integer=True, allow_inf=True)  # infinitely many: the limit 1 / f
    f, n = (np.asarray(x, dtype=float) for x in _v.broadcast(serial_fraction=f, gpus=n))
    with np.errstate(divide="ignore"):  # f = 0 and n = inf: an infinite speedup, as the law says
        result = 1 / (f + (1 - f) / n)
    return float(result) if result.ndim == 0 else result


MAX_RANKS = 2**24
"""The most ranks :func:`rank_groups` lists (16.8 million: four int64 arrays of 134 MB, about a second); a
plan beyond it is refused rather than left to exhaust memory."""


def rank_groups(plan: Plan, gpus_per_node: int = 8, *, order: str | None = None):
    """Which TP, DP and PP group each global rank belongs to, in a rank order of
    :data:`~atscale.plan.PLACEMENT_ORDERS` (``order``; ``None``: the plan's :attr:`~atscale.plan.Plan.order`, else
    Megatron-Core's, TP fastest, then CP, then DP, then PP).

    Returns ``(tp_rank, dp_rank, pp_rank, node)`` arrays indexed by global rank. In Megatron-Core's order
    (``"tp-cp-dp-pp"``) rank ``r = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))``, so a TP group is
    ``tp`` consecutive ranks (one node when ``tp`` divides the node), a CP group strides by ``tp``, a DP group by
    ``tp * cp`` and a pipeline by ``tp * cp * dp`` (Megatron-Core's ``initialize_model_parallel``,
    ``megatron/core/parallel_state.py``, default order ``tp-cp-ep-dp-pp``). With data parallelism outermost
    (``"tp-cp-pp-dp"``, Meta's for Llama 3: Llama Team 2024, sec. 3.3.2) ``r = tp_rank + tp * (cp_rank + cp *
    (pp_rank + pp * dp_rank))``: a pipeline strides by ``tp * cp`` and a DP group by ``tp * cp * pp``. The CP rank
    of ``r`` is ``(r // tp) % cp`` in both.
    """
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be an atscale.plan.Plan (got a {type(plan).__name__})")
    gpus_per_node = _v.count("gpus_per_node", gpus_per_node)
    order = _v.choice("order", order, PLACEMENT_ORDERS) if order is not None else plan.order or "tp-cp-dp-pp"
    if plan.gpus > MAX_RANKS:
        raise ValueError(f"plan={plan.describe()} has {plan.gpus:,} ranks; rank_groups lists at most {MAX_RANKS:,} "
                         "(four integer arrays indexed by rank)")
    r = np.arange(plan.gpus)
    stride = _rank_strides(plan, order)
    return r % plan.tp, (r // stride["dp"]) % plan.dp, (r // stride["pp"]) % plan.pp, r // gpus_per_node


# --------------------------------------------------------------------------------------
# Names that live in their own modules now, still named here
# --------------------------------------------------------------------------------------
_MOVED = MappingProxyType({
    "search": ("SearchResult", "search", "MAX_SEARCH_LAYOUTS"),
    "runs": ("Run", "METRICS", "MEGATRON_TABLE1_RUNS", "KORTHIKANTI_TABLE5_RUNS", "OTHER_RUNS", "H100_RUNS",
             "MEGASCALE_RUNS", "MOE_RUNS", "CALIBRATION_RUNS", "VALIDATION_RUNS"),
    "fitting": ("calibrate",),
})
"""Module (of ``atscale``) -> the public names of this module that moved there. Those modules import this one, so
this one looks them up by name on first use (:func:`__getattr__`, PEP 562) rather than importing them: no import
circle, and ``import atscale.parallelism`` reads no published-run data until a run is asked for."""


def __getattr__(name: str):
    """A name of :data:`_MOVED` from the module that holds it now (imported on first use, then kept here)."""
    module = next((m for m, names in _MOVED.items() if name in names), None)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    globals()[name] = value
    return value


# --------------------------------------------------------------------------------------
# What each way of recomputing costs and saves
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecomputeChoice:
    """One way of recomputing activations for a plan: ``label``; ``recompute`` and ``modules`` (the plan's
    :attr:`~atscale.plan.Plan.recompute` and :attr:`~atscale.plan.Plan.recompute_modules`); ``memory`` the
    per-GPU memory of the fuller end stage (bytes; what changes is the activations); ``recompute_seconds`` the
    recomputation's time per step and ``step_seconds`` the whole step's (s); ``fits`` whether it fits the GPU
    within :data:`MEMORY_MARGIN`."""

    label: str
    recompute: str
    modules: tuple | None
    memory: float
    recompute_seconds: float
    step_seconds: float
    fits: bool


RECOMPUTE_CHOICES = (("none", "none", None), ("attention core", "selective", ("core_attn",)),
                     ("norms", "selective", ("layernorm",)), ("MLP activation", "selective", ("act",)),
                     ("MLP", "selective", ("mlp",)),
                     ("attention core, norms, MLP", "selective", ("core_attn", "layernorm", "mlp")),
                     ("every other matmul (torchtitan)", "selective", ("layernorm", "act", "alternate_mm")),
                     ("full", "full", None))
"""The choices :func:`recompute_choices` compares by default: ``(label, recompute, modules)``."""


def recompute_choices(model, cluster: hardware.Cluster, plan: Plan, choices=None,
                      **kwargs) -> tuple[RecomputeChoice, ...]:
    """The step time and memory of ``plan`` under each way of recomputing in ``choices`` (``(label, recompute,
    modules)`` triples; ``None``: :data:`RECOMPUTE_CHOICES`), everything else as the plan says; ``kwargs`` go to
    :func:`step_time` (the memory check is off: an overflowing choice is reported with ``fits`` False)."""
    if not isinstance(plan, Plan):
        raise ValueError(f"plan={_v.show(plan)} must be an atscale.plan.Plan")
    try:
        choices = [(str(label), rc, mods) for label, rc, mods in (RECOMPUTE_CHOICES if choices is None else choices)]
    except (TypeError, ValueError):
        raise ValueError(f"choices={_v.show(choices)} must be (label, recompute, modules) triples") from None
    out = []
    for label, rc, mods in choices:
        p = dataclasses.replace(plan, recompute=rc, recompute_modules=mods)  # a ValueError names the bad field
        st = step_time(model, cluster, p, **{**kwargs, "memory_check": False})
        out.append(RecomputeChoice(label, rc, p.recompute_modules, float(st.memory_total), float(st.recompute),
                                   float(st.total), st.memory_status != "over"))
    return tuple(out)


def recompute_table(model, cluster: hardware.Cluster, plan: Plan, choices=None, **kwargs):
    """:func:`recompute_choices` as a :class:`~atscale.tables.Table`: per choice, the memory per GPU, what it
    saves against recomputing nothing, the recomputation's time per step and the step's change."""
    from .tables import Table

    rows, base = [], None
    for c in recompute_choices(model, cluster, plan, choices, **kwargs):
        base = c if base is None else base
        saved = base.memory - c.memory
        rows.append((c.label, u.fmt_bytes(c.memory), u.fmt_bytes(saved) if saved > 0 else "—",
                     u.fmt_time(c.recompute_seconds) if c.recompute_seconds > 0 else "—",
                     f"{c.step_seconds / base.step_seconds - 1:+.1%}" + ("" if c.fits else " (does not fit)")))
    return Table(("Recomputed", "Memory", "Saved", "Recompute", "Step"), rows,
                 caption=f"{models.model(model).name}, {plan.describe()}: each way of recomputing, priced by the "
                         f"step-time model; memory per GPU of the fuller end stage, what it saves and the "
                         f"recomputation's time per step against the first row, and the step's change.")
