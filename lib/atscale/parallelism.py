"""3D parallelism: what a layout (``Plan``) costs in seconds per step, and the best layout.

A step of a replica laid out as ``tp x pp x dp`` (a :class:`~atscale.plan.Plan`) is modelled as the
sum of seven parts, per GPU, on the critical path (Narayanan et al. 2021, sec. 3; Korthikanti et
al. 2022, sec. 6):

``compute``
    the model FLOPs of the GPU's share (``6N + 12lsh`` per token, :func:`atscale.models.training_flops_per_token`)
    at the achievable FLOP/s (:func:`compute_efficiency` x the accelerator's measured matmul ceiling);
``recompute``
    the extra (hardware) FLOPs of activation recomputation at the same rate;
``tp_comm``
    the tensor-parallel all-reduces (or reduce-scatter + all-gather with sequence parallelism), two per
    layer forward and two backward (two more when the forward is recomputed), over NVLink;
``pp_comm``
    the point-to-point sends of activations and gradients between pipeline stages, over the NICs;
``bubble``
    the pipeline's fill and drain, ``(p - 1) / (v m)`` of the work above (:func:`bubble_fraction`);
``dp_comm``
    the data-parallel gradient reduction over the NICs minus what hides behind the backward pass: one
    all-reduce per step (ZeRO-0/1), a reduce-scatter per micro-batch (ZeRO-2), or weight gathers and a
    reduce-scatter per micro-batch (ZeRO-3/FSDP);
``optimizer``
    the optimizer step, memory-bound: bytes of Adam's update over the HBM bandwidth.

``total`` is their sum, exactly. Communication costs come from :mod:`atscale.collectives`, memory
from :mod:`atscale.memory`, FLOPs from :mod:`atscale.models`. A layout that cannot run (wrong GPU
count, ``tp`` beyond a node or not dividing the heads, too many stages, memory overflow) is an
explicit *infeasible* result with its reason, and NaN times: never normal-looking numbers.

Everything is vectorised: :func:`evaluate` broadcasts over arrays of plan fields, and
:func:`search` evaluates every layout of a cluster at once.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import _validate as _v
from . import collectives, hardware, memory, models
from . import units as u
from .plan import RECOMPUTE, SCHEDULES, Plan

__all__ = [
    "COMPUTE_EFFICIENCY_MAX", "COMPUTE_HALF_WIDTH", "COMPUTE_HALF_HIDDEN", "PARTS", "PART_LABELS", "SELECTIVE_RECOMPUTE_FACTOR", "TP_OVERLAP", "DP_OVERLAP",
    "SEQUENCE_PARALLEL_COMM_FACTOR", "bubble_fraction", "bubble_fraction_of_total", "layers_per_stage",
    "compute_efficiency", "StepTime", "step_time", "evaluate", "SearchResult", "search", "Run", "MEGATRON_TABLE1_RUNS",
    "KORTHIKANTI_TABLE5_RUNS", "OTHER_RUNS", "CALIBRATION_RUNS", "VALIDATION_RUNS", "calibrate", "amdahl_speedup",
    "rank_groups", "Timeline", "pipeline_timeline", "MAX_SEARCH_LAYOUTS", "MAX_RANKS",
]

# --------------------------------------------------------------------------------------
# Named constants
# --------------------------------------------------------------------------------------
COMPUTE_EFFICIENCY_MAX = 0.81
"""Fraction of the accelerator's *measured* matmul ceiling (``Accelerator.measured_matmul_flops``,
Bekman's best-shape BF16 matmul) that a whole transformer layer reaches when its matrices are wide
(dimensionless). It covers what the ceiling leaves out: the layer's smaller matmuls, attention and
its softmax, norms, element-wise kernels and launches. **Calibrated** by :func:`calibrate` on :data:`CALIBRATION_RUNS` (the four MFUs of Korthikanti
et al. 2022, Table 5, and three rows of Narayanan et al. 2021, Table 1), together with
:data:`COMPUTE_HALF_WIDTH` and :data:`COMPUTE_HALF_HIDDEN`; validated on everything else
(:data:`VALIDATION_RUNS`)."""

COMPUTE_HALF_WIDTH = 50.0
"""The per-GPU width ``h / tp`` (columns of the hidden dimension each tensor-parallel rank holds) at
which the layer reaches half of :data:`COMPUTE_EFFICIENCY_MAX` (dimensionless; see
:func:`compute_efficiency`). Narrow per-GPU matrices leave tensor cores idle (wave quantisation, a
smaller share of time in large GEMMs): Narayanan et al. (2021, sec. 5.1) attribute the rise of
per-GPU throughput with model size in their Table 1 to exactly this. **Calibrated** with
:data:`COMPUTE_EFFICIENCY_MAX`."""

COMPUTE_HALF_HIDDEN = 1250.0
"""The model width ``h`` at which a layer runs at half speed for its per-GPU width (dimensionless): a
narrow model spends more of each layer in memory-bound kernels (norms, activations, softmax, whose traffic
grows as ``s h`` against the matmuls' ``s h^2``). **Calibrated** with :data:`COMPUTE_EFFICIENCY_MAX`."""

SELECTIVE_RECOMPUTE_FACTOR = 12.0
"""Selective recomputation's extra hardware FLOPs per token per layer, in units of ``s h``: the
attention-score block (``QK^T``, softmax, dropout, attention over ``V``) is recomputed, and
Korthikanti et al. (2022, sec. 6.3 and App. A) count hardware/model FLOPs ``~ 1 + s/6h`` for it,
i.e. ``12 l s h`` FLOPs per token on top of ``72 l h^2`` (their Table 5's HFU/MFU ratios, e.g.
43.7/41.5 for the 22B model, reproduce with it)."""

TP_OVERLAP = 0.0
"""Fraction of the tensor-parallel communication hidden behind computation (dimensionless). Megatron-LM's
all-reduces in the forward pass sit between dependent matmuls, so they are exposed; Korthikanti et al.
(2022, sec. 6.2) overlap only part of the backward one. 0 here: the conservative reading."""

DP_OVERLAP = 1.0
"""Default fraction of the last micro-batch's backward pass that the data-parallel gradient reduction can
run beside (dimensionless, :func:`atscale.collectives.exposed_time`): bucketed reduction as in PyTorch DDP
(Li et al. 2020) and Megatron-Core's ``overlap_grad_reduce``. The 2021-22 Megatron runs did *not* overlap
it (Korthikanti et al. 2022, sec. 6.3), so their records set ``dp_overlap=0``."""

SEQUENCE_PARALLEL_COMM_FACTOR = 1.0
"""Sequence parallelism replaces each all-reduce by a reduce-scatter plus an all-gather of the same
total volume (Korthikanti et al. 2022, sec. 4.2.2); this multiplies their time (dimensionless). The
paper found the pair "slower than an all-reduce alone" without a figure, so 1.0: not modelled."""

GRADIENT_ACCUMULATION_BYTES = 4.0
"""Bytes per element of the gradient the data-parallel group reduces when the optimizer layout keeps
an FP32 gradient buffer (Megatron's default for BF16, :data:`atscale.memory.OPTIMIZERS`); otherwise the
layout's own ``gradients`` bytes are used."""

_SCHEDULE_CODE = {name: i for i, name in enumerate(SCHEDULES)}
_RECOMPUTE_CODE = {name: i for i, name in enumerate(RECOMPUTE)}


# --------------------------------------------------------------------------------------
# Pipeline bubble
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


def layers_per_stage(num_layers: int, pp):
    """Layers on the fullest pipeline stage: ``ceil(l / p)``.

    When ``p`` does not divide ``l`` the split is as even as possible: the first ``l mod p`` stages take
    one layer more than the others. The pipeline then runs at the pace of those fuller stages, so the
    model charges every stage ``ceil(l / p)`` layers of time (the others idle for the difference), and
    checks memory on the first stage (the fullest and the one holding most micro-batches). Vectorised.
    """
    num_layers = _v.count("num_layers", num_layers)
    p = np.asarray(_v.count("pp", pp, scalar=False))
    result = -(-num_layers // p)
    return int(result) if np.ndim(result) == 0 else result


def compute_efficiency(model: models.TransformerConfig, tp):
    """Achievable fraction of the measured matmul ceiling for a layer split ``tp`` ways (dimensionless).

    ``e = E_max * w / (w + w_half) * h / (h + h_half)`` with ``w = h / tp``: saturating in the per-GPU
    width and in the model width (:data:`COMPUTE_EFFICIENCY_MAX`, :data:`COMPUTE_HALF_WIDTH`,
    :data:`COMPUTE_HALF_HIDDEN`, all three calibrated). An empirical form,
    not a derivation: it says wide per-GPU matrices run near the ceiling and narrow ones do not.
    Vectorised over ``tp``.
    """
    h = models.model(model).hidden_size
    w = h / np.asarray(_v.count("tp", tp, scalar=False), dtype=float)
    return COMPUTE_EFFICIENCY_MAX * w / (w + COMPUTE_HALF_WIDTH) * h / (h + COMPUTE_HALF_HIDDEN)


# --------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------
PARTS = ("compute", "recompute", "tp_comm", "pp_comm", "bubble", "dp_comm", "optimizer")
"""The parts of a step, in the order they are summed into ``total``."""

PART_LABELS = MappingProxyType({
    "compute": "compute", "recompute": "recomputation", "tp_comm": "tensor-parallel comm.",
    "pp_comm": "pipeline send/recv", "bubble": "pipeline bubble", "dp_comm": "data-parallel comm. (exposed)",
    "optimizer": "optimizer step"})


@dataclass(frozen=True)
class StepTime:
    """One training step of a layout, per GPU (seconds; arrays when evaluated over many plans).

    The parts are on the critical path and add up to :attr:`total` exactly. An infeasible layout has
    ``feasible`` False, its ``reason``, and NaN for every time and rate. ``memory`` is the per-GPU memory
    (a :class:`atscale.memory.Breakdown` for one plan, ``None`` for arrays; ``memory_total`` always).
    """

    compute: object
    recompute: object
    tp_comm: object
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
    memory: memory.Breakdown | None = None
    plan: Plan | None = None

    @property
    def total(self):
        """Seconds per optimizer step: the parts summed in the order of :data:`PARTS`."""
        total = self.compute
        for name in PARTS[1:]:
            total = total + getattr(self, name)
        return total

    def parts(self) -> dict:
        """``{part: seconds}`` in the order of :data:`PARTS`."""
        return {name: getattr(self, name) for name in PARTS}

    @property
    def tokens_per_second(self):
        """Training throughput of the whole cluster, tokens/s."""
        return self.tokens_per_step / self.total

    @property
    def model_flops_per_gpu(self):
        """Model FLOPs (``6N + 12lsh`` per token, no recomputation) per second per GPU, FLOP/s."""
        return self.model_flops_per_step / self.total / self.gpus

    @property
    def hardware_flops_per_gpu(self):
        """FLOPs actually executed (recomputation included) per second per GPU, FLOP/s."""
        return self.hardware_flops_per_step / self.total / self.gpus

    @property
    def mfu(self):
        """Model FLOPs utilisation: :attr:`model_flops_per_gpu` over the dense peak (Chowdhery et al. 2022)."""
        return self.model_flops_per_gpu / self.peak_flops

    @property
    def hfu(self):
        """Hardware FLOPs utilisation: :attr:`hardware_flops_per_gpu` over the dense peak."""
        return self.hardware_flops_per_gpu / self.peak_flops

    def __repr__(self):
        if np.ndim(self.compute):
            return f"StepTime(<{np.size(self.compute)} plans>)"
        if not self.feasible:
            return f"StepTime(infeasible: {self.reason})"
        parts = ", ".join(f"{k} {u.fmt_time(v)}" for k, v in self.parts().items())
        return f"StepTime({parts}; total {u.fmt_time(self.total)}, MFU {self.mfu:.1%})"


# --------------------------------------------------------------------------------------
# The vectorised core
# --------------------------------------------------------------------------------------
def _scale_up(node: hardware.Node) -> hardware.Fabric:
    return collectives._scale_up(node)  # the node's NVLink at its per-GPU bandwidth


def _rail(cluster: hardware.Cluster) -> hardware.Fabric:
    return collectives._rail(cluster)  # one NIC per GPU on the scale-out fabric


def _grad_bytes(opt: memory.Optimizer) -> float:
    return GRADIENT_ACCUMULATION_BYTES if opt.gradients >= 4 else float(opt.gradients)


def evaluate(model, cluster: hardware.Cluster, *, tp, pp, dp, micro_batch, global_batch, zero_stage=0,
             schedule="1f1b", virtual_stages=1, recompute="none", sequence_parallel=False, seq_length=None,
             dtype: str = "bf16", optimizer_name: str = memory.RUNNING_EXAMPLE_OPTIMIZER,
             dp_overlap=DP_OVERLAP, flash_attention: bool = False, memory_check: bool = True) -> StepTime:
    """Step time of every layout given by (broadcast) arrays of plan fields; see :func:`step_time`.

    ``memory_check=False`` skips the memory verdict (used only to compare with a published run whose memory
    tricks the model does not know; the memory is still computed).

    ``schedule`` and ``recompute`` may be arrays of names; the others arrays of numbers. Returns a
    :class:`StepTime` whose fields are arrays of the broadcast shape (``memory`` is ``None``), with
    ``feasible`` a boolean array and ``reason`` an array of strings ("" where feasible).
    """
    model = models.model(model)
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster={cluster!r} must be an atscale.hardware.Cluster")
    acc = cluster.accelerator
    peak = acc.peak(dtype)
    ceiling = acc.measured(dtype) or 0.8 * peak
    opt = memory.optimizer(optimizer_name)
    s = float(model.seq_length if seq_length is None else _v.count("seq_length", seq_length))
    tp, pp, dp, micro_batch, global_batch, virtual_stages = (
        _v.count(name, value, scalar=False) for name, value in
        (("tp", tp), ("pp", pp), ("dp", dp), ("micro_batch", micro_batch), ("global_batch", global_batch),
         ("virtual_stages", virtual_stages)))
    zero_stage = _v.count("zero_stage", zero_stage, low=0, high=3, scalar=False)
    dp_overlap = _v.number("dp_overlap", dp_overlap, low=0, high=1)
    sequence_parallel = _v.flags("sequence_parallel", sequence_parallel)
    flash_attention = _v.flag("flash_attention", flash_attention)
    memory_check = _v.flag("memory_check", memory_check)

    sched = np.vectorize(lambda x: _SCHEDULE_CODE.get(x, -1) if isinstance(x, str) else -1, otypes=[int])(
        np.asarray(schedule, dtype=object))
    reco = np.vectorize(lambda x: _RECOMPUTE_CODE.get(x, -1) if isinstance(x, str) else -1, otypes=[int])(
        np.asarray(recompute, dtype=object))
    if np.any(sched < 0):
        raise ValueError(f"schedule={_v.show(schedule)} must be among {SCHEDULES}")
    if np.any(reco < 0):
        raise ValueError(f"recompute={_v.show(recompute)} must be among {RECOMPUTE}")
    arrays = _v.broadcast(tp=tp, pp=pp, dp=dp, micro_batch=micro_batch, global_batch=global_batch,
                          zero_stage=zero_stage, virtual_stages=virtual_stages, schedule=sched, recompute=reco,
                          sequence_parallel=sequence_parallel, dp_overlap=dp_overlap)
    shape = arrays[0].shape
    tp, pp, dp, b, gb, zs, v, sched, reco, sp, ovl = (np.array(a).reshape(-1) for a in arrays)
    tp, pp, dp, b, gb, v = (x.astype(float) for x in (tp, pp, dp, b, gb, v))
    v = np.where(sched == _SCHEDULE_CODE["interleaved"], v, 1.0)

    l, h = model.num_layers, model.hidden_size
    g = cluster.node.gpus
    m = gb / (b * dp)
    m_whole = np.floor(m)
    tokens_mb = b * s  # tokens of one micro-batch

    # --- feasibility (first failing reason wins) --------------------------------------------
    reason = np.full(tp.shape, "", dtype=object)

    def fail(mask, text):
        mask = mask & (reason == "")
        if np.any(mask):
            reason[mask] = np.vectorize(text, otypes=[object])(*(x[mask] for x in (tp, pp, dp, b, gb, v)))

    fail(tp * pp * dp != cluster.num_gpus,
         lambda t, p, d, *_: f"TP x PP x DP = {int(t)} x {int(p)} x {int(d)} = {int(t * p * d):,} GPUs; the "
                             f"cluster has {cluster.num_gpus:,}")
    fail(tp > g, lambda t, *_: f"TP={int(t)} exceeds the {g} GPUs of a node: its all-reduces would leave NVLink")
    fail((model.num_heads % tp != 0) | (model.kv_heads % tp != 0),
         lambda t, *_: f"TP={int(t)} does not divide the {model.num_heads} heads and {model.kv_heads} KV heads")
    fail(pp > l, lambda t, p, *_: f"PP={int(p)} stages for {l} layers: some stages would be empty")
    fail(m != m_whole, lambda t, p, d, mb, B, *_: f"global batch {int(B):,} is not a whole number of "
                                                   f"micro-batches of {int(mb)} per replica x DP={int(d)}")
    inter = sched == _SCHEDULE_CODE["interleaved"]
    fail(inter & (pp < 2), lambda *_: "the interleaved schedule needs PP >= 2")
    fail(inter & (l % np.maximum(pp * v, 1) != 0),
         lambda t, p, d, mb, B, vv: f"interleaved: {l} layers do not split into PP x v = {int(p)} x {int(vv)} chunks")
    fail(inter & (np.mod(m_whole, pp) != 0),
         lambda t, p, d, mb, B, vv: f"interleaved: micro-batches per replica ({int(B // (mb * d))}) must be a "
                                    f"multiple of PP={int(p)}")
    fail(sp & (tp == 1), lambda *_: "sequence parallelism needs TP > 1")

    # --- memory (first pipeline stage, the fullest) ------------------------------------------
    lps = np.asarray(layers_per_stage(l, pp.astype(int)), dtype=float)
    psi = model.num_params / l * lps / tp  # parameters on the fullest stage's GPU
    w_bytes = opt.weights * psi / np.where(zs >= 3, dp, 1.0)
    g_bytes = opt.gradients * psi / np.where(zs >= 2, dp, 1.0)
    o_bytes = opt.state * psi / np.where(zs >= 1, dp, 1.0)
    terms = memory.activation_terms(model, b, s, flash_attention=flash_attention)
    sp_div = np.where(sp, tp, 1.0)
    act_layer = np.where(reco == _RECOMPUTE_CODE["full"], 2 * tokens_mb * h / sp_div,
                         terms.replicated / sp_div
                         + (terms.parallel + np.where(reco == _RECOMPUTE_CODE["selective"], 0.0, terms.scores)) / tp)
    gpipe = sched == _SCHEDULE_CODE["gpipe"]
    in_flight = np.where(gpipe, m_whole, np.where(inter, pp * (1 + (pp - 1) / (pp * v)), pp))
    in_flight = np.maximum(np.minimum(in_flight, np.maximum(m_whole, 1)), 1)
    acts = act_layer * lps * in_flight
    mem_total = w_bytes + g_bytes + o_bytes + acts
    capacity = acc.usable_memory
    over = (mem_total > capacity) & memory_check
    if np.any(over & (reason == "")):
        names = np.array(["weights", "gradients", "optimizer state", "activations"], dtype=object)
        mask = over & (reason == "")
        stack = np.stack(np.broadcast_arrays(w_bytes, g_bytes, o_bytes, acts))
        idx = np.argmax(stack, axis=0)
        biggest, amount = names[idx], np.take_along_axis(stack, idx[None], axis=0)[0]
        # Plain GB (decimal) formatting: thousands of reasons in a search, so no per-row library formatter.
        reason[mask] = [f"does not fit: {t / 1e9:.1f} GB per GPU > {capacity / 1e9:.1f} GB, over by "
                        f"{(t - capacity) / 1e9:.1f} GB (largest term: {n} {a / 1e9:.1f} GB)"
                        for t, n, a in zip(mem_total[mask], biggest[mask], amount[mask])]
    feasible = reason == ""

    # --- compute --------------------------------------------------------------------------------
    model_flops_tok = float(models.training_flops_per_token(model, s))
    full_flops_tok = float(models.training_flops_per_token(model, s, recompute=True))
    extra_tok = np.where(reco == _RECOMPUTE_CODE["full"], full_flops_tok - model_flops_tok,
                         np.where(reco == _RECOMPUTE_CODE["selective"], SELECTIVE_RECOMPUTE_FACTOR * l * s * h, 0.0))
    rate = compute_efficiency(model, tp) * ceiling
    stage_share = lps / l  # the fullest stage's share of the layers
    mb_tokens_gpu = tokens_mb * stage_share / tp  # model work per micro-batch per GPU, in "tokens"
    t_compute_mb = model_flops_tok * mb_tokens_gpu / rate
    t_recompute_mb = extra_tok * mb_tokens_gpu / rate

    # --- tensor parallel: 2 collectives per layer forward, 2 backward, 2 more if recomputed ------
    up = _scale_up(cluster.node)
    act_msg = tokens_mb * h * 2.0  # one layer's activations of a micro-batch, BF16 bytes
    n_tp = 4.0 + np.where(reco == _RECOMPUTE_CODE["full"], 2.0, 0.0)
    t_ar = collectives.collective_time("all-reduce", act_msg, tp, up)
    t_sp = (collectives.collective_time("reduce-scatter", act_msg, tp, up)
            + collectives.collective_time("all-gather", act_msg, tp, up)) * SEQUENCE_PARALLEL_COMM_FACTOR
    t_tp_mb = (1 - TP_OVERLAP) * n_tp * lps * np.where(sp, t_sp, t_ar)

    # --- pipeline point-to-point: activations forward, gradients back, per chunk boundary --------
    rail = _rail(cluster)
    p2p_bytes = act_msg / tp  # Megatron's scatter/gather: each TP rank sends 1/tp (Narayanan et al. sec. 4.1)
    t_p2p = collectives.collective_time("broadcast", p2p_bytes, 2, rail)  # one send over one NIC
    t_pp_mb = np.where(pp > 1, 2.0 * v * t_p2p, 0.0)

    per_mb = t_compute_mb + t_recompute_mb + t_tp_mb + t_pp_mb
    compute = m * t_compute_mb
    recomp = m * t_recompute_mb
    tp_comm = m * t_tp_mb
    pp_comm = m * t_pp_mb
    bubble = (pp - 1) / v * per_mb

    # --- data parallel ----------------------------------------------------------------------------
    grad_msg = psi * _grad_bytes(opt)
    # DP ranks sharing a node: g/(tp*pp) when tp*pp divides the node (and as many as there are); a
    # layout whose tp*pp does not divide the node (pp=3 on 8 GPUs) has its DP groups straddle nodes,
    # and all their traffic is counted on the NICs.
    per_node = np.where(g % (tp * pp) == 0, g // (tp * pp), 1)
    dp_ranks_per_node = np.maximum(np.minimum(per_node, dp), 1).astype(float)
    nodes_dp = np.ceil(dp / dp_ranks_per_node)
    intra = dp_ranks_per_node > 1
    inter_ar = collectives.collective_time("all-reduce", grad_msg / dp_ranks_per_node, np.maximum(nodes_dp, 1), rail)
    intra_rs = collectives.collective_time("reduce-scatter", grad_msg, dp_ranks_per_node, up)
    intra_ag = collectives.collective_time("all-gather", grad_msg, dp_ranks_per_node, up)
    t_allreduce = np.where(intra, intra_rs + inter_ar + intra_ag, inter_ar)
    weight_msg = psi * opt.weights
    flat_ag = collectives.collective_time("all-gather", weight_msg, dp, rail)
    flat_rs = collectives.collective_time("reduce-scatter", grad_msg, dp, rail)
    backward_mb = (t_compute_mb + t_recompute_mb) * 2.0 / 3.0  # backward: two thirds of a micro-batch's FLOPs
    # Stages 0-1: one all-reduce (ZeRO-1: reduce-scatter + all-gather, same volume) after the last
    # micro-batch, hidden behind that micro-batch's backward pass at best.
    exposed_01 = np.maximum(0.0, t_allreduce - ovl * backward_mb)
    # Stage 2: gradients are kept only as shards, so each micro-batch's gradients are reduce-scattered as
    # its backward pass produces them (DeepSpeed ZeRO-2), and the updated weights all-gathered once.
    exposed_2 = m * np.maximum(0.0, flat_rs - ovl * backward_mb) + flat_ag
    # Stage 3 / FSDP: the weights are gathered before each micro-batch's forward and again before its
    # backward (reshard after forward) and the gradients reduce-scattered: 3 Psi per micro-batch
    # (Rajbhandari et al. 2020, sec. 7), overlapped at best with that micro-batch's compute.
    exposed_3 = m * np.maximum(0.0, 2 * flat_ag + flat_rs - ovl * (t_compute_mb + t_recompute_mb))
    dp_comm = np.where(dp > 1, np.where(zs >= 3, exposed_3, np.where(zs == 2, exposed_2, exposed_01)), 0.0)

    # --- optimizer step (memory-bound) -------------------------------------------------------------
    from .roofline import ADAM_BYTES_PER_PARAM
    params_updated = psi / np.where(zs >= 1, dp, 1.0)
    optimizer_t = params_updated * ADAM_BYTES_PER_PARAM / acc.hbm_bandwidth

    nan = np.where(feasible, 1.0, np.nan)
    tokens = gb * s
    model_flops = model_flops_tok * tokens
    hw_flops = (model_flops_tok + extra_tok) * tokens
    out = [np.broadcast_to(x, tp.shape).reshape(shape) for x in (
        compute * nan, recomp * nan, tp_comm * nan, pp_comm * nan, bubble * nan, dp_comm * nan, optimizer_t * nan,
        tokens * nan, model_flops * nan, hw_flops * nan)]
    return StepTime(*out, cluster.num_gpus, peak, feasible.reshape(shape), reason.reshape(shape),
                    np.broadcast_to(mem_total, tp.shape).reshape(shape), capacity)


def _scalar(x):
    a = np.asarray(x)
    if a.ndim:
        return a
    return a.item() if a.dtype == object or a.dtype == bool else float(a)


def step_time(model, cluster: hardware.Cluster, plan: Plan, *, seq_length=None, dtype: str = "bf16",
              optimizer_name: str = memory.RUNNING_EXAMPLE_OPTIMIZER, dp_overlap: float = DP_OVERLAP,
              flash_attention: bool = False, memory_check: bool = True) -> StepTime:
    """Seconds per optimizer step of ``model`` on ``cluster`` laid out as ``plan``, part by part.

    See the module docstring for the seven parts. ``plan`` must have a ``global_batch``. Compute runs at
    :func:`compute_efficiency` x the accelerator's measured matmul ceiling; the pipeline's steady state is
    ``m`` micro-batches of (compute + recomputation + TP collectives + point-to-point), and the bubble
    adds ``(p - 1)/v`` more of them (:func:`bubble_fraction`); the data-parallel reduction of the gradients
    (``optimizer_name``'s gradient bytes; FP32 for Megatron's BF16 layout) is exposed beyond
    ``dp_overlap`` x the last micro-batch's backward pass. An infeasible layout returns ``feasible=False``
    with ``reason`` and NaN times. Sources: Narayanan et al. (2021), sec. 2-3; Korthikanti et al. (2022),
    sec. 4-6; Rajbhandari et al. (2020), sec. 7.
    """
    if not isinstance(plan, Plan):
        raise ValueError(f"plan={plan!r} must be an atscale.plan.Plan")
    if plan.global_batch is None:
        raise ValueError("plan.global_batch is None: a step time needs the global batch (sequences per step)")
    model = models.model(model)
    r = evaluate(model, cluster, tp=plan.tp, pp=plan.pp, dp=plan.dp, micro_batch=plan.micro_batch,
                 global_batch=plan.global_batch, zero_stage=plan.zero_stage, schedule=plan.schedule,
                 virtual_stages=plan.virtual_stages, recompute=plan.recompute,
                 sequence_parallel=plan.sequence_parallel, seq_length=seq_length, dtype=dtype,
                 optimizer_name=optimizer_name, dp_overlap=dp_overlap, flash_attention=flash_attention,
                 memory_check=memory_check)
    fields = {f.name: _scalar(getattr(r, f.name)) for f in dataclasses.fields(r) if f.name not in ("memory", "plan")}
    acc = cluster.accelerator
    s = model.seq_length if seq_length is None else seq_length
    if model.num_layers % plan.pp == 0 and plan.schedule != "gpipe" and plan.gpus == cluster.num_gpus:
        try:
            mem = memory.breakdown(model, acc, plan, seq_length=s, optimizer_name=optimizer_name,
                                   flash_attention=flash_attention)
        except ValueError:
            mem = None
    else:
        mem = None
    return StepTime(**fields, memory=mem, plan=plan)


# --------------------------------------------------------------------------------------
# Search
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchResult:
    """Every layout :func:`search` considered, evaluated.

    ``table`` is a dict of equal-length arrays (plan fields, the parts in seconds as ``compute_s`` ...,
    ``total_s``, ``tokens_per_second``,
    ``mfu``, ``feasible``, ``reason``), ranked: feasible layouts by throughput (best first), then the
    infeasible ones. ``result`` is the :class:`StepTime` of the arrays in that order.
    """

    table: Mapping[str, np.ndarray]
    result: StepTime
    model: str
    cluster: str

    def __len__(self):
        return len(self.table["tp"])

    @property
    def feasible_count(self) -> int:
        return int(np.sum(self.table["feasible"]))

    def plan(self, i: int = 0) -> Plan:
        """The :class:`Plan` of row ``i`` (0: the best)."""
        i = _v.count("i", i, low=0, high=len(self) - 1, unit="a row of the search")
        t = self.table
        sched = str(t["schedule"][i])
        return Plan(tp=int(t["tp"][i]), pp=int(t["pp"][i]), dp=int(t["dp"][i]), micro_batch=int(t["micro_batch"][i]),
                    global_batch=int(t["global_batch"][i]), zero_stage=int(t["zero_stage"][i]), schedule=sched,
                    virtual_stages=int(t["virtual_stages"][i]) if sched == "interleaved" else 1,
                    recompute=str(t["recompute"][i]), sequence_parallel=bool(t["sequence_parallel"][i]))

    def best(self) -> Plan:
        if not self.feasible_count:
            raise ValueError("no feasible layout: see .reasons()")
        return self.plan(0)

    def reasons(self) -> dict[str, int]:
        """How many layouts fail for each reason (reasons with numbers cut to their first words)."""
        out: dict[str, int] = {}
        for r in self.table["reason"][~self.table["feasible"]]:
            if r.startswith(("does not fit", "interleaved")):
                key = r.split(":")[0]
            elif r.startswith("global batch"):
                key = "global batch not a whole number of micro-batches per replica"
            elif r.startswith("TP x PP x DP"):
                key = "GPU count does not match the cluster"
            else:
                key = r
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


MAX_SEARCH_LAYOUTS = 500_000
"""The most layouts :func:`search` evaluates at once (about 3 s and 2 GB of arrays; the default candidate
lists give ~12,000 for any cluster); longer candidate lists are refused rather than left to run."""


def _names(name: str, value, options) -> tuple:
    """A non-empty tuple of names from ``options`` (one name alone is a tuple of one)."""
    values = (value,) if isinstance(value, str) else value
    try:
        values = tuple(values)
    except TypeError:
        raise ValueError(f"{name}={_v.show(value)} must be a sequence of names from {options}") from None
    if not values:
        raise ValueError(f"{name}={_v.show(value)} must not be empty; names from {options}")
    return tuple(_v.choice(name, x, options) for x in values)


def _divisors_pow2(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def search(model, cluster: hardware.Cluster, global_batch: int, *, seq_length=None, dtype: str = "bf16",
           optimizer_name: str = memory.RUNNING_EXAMPLE_OPTIMIZER, micro_batches=(1, 2, 4, 8),
           zero_stages=(0, 1, 2, 3), schedules=("gpipe", "1f1b", "interleaved"), virtual_stages=(2, 4),
           recomputes=RECOMPUTE, sequence_parallel=(False, True), dp_overlap: float = DP_OVERLAP,
           flash_attention: bool = False) -> SearchResult:
    """Every layout of ``model`` on ``cluster`` for ``global_batch`` sequences per step, ranked by throughput.

    The candidates: ``tp`` every divisor of the GPU count up to twice the node size (so that "TP beyond the
    node" shows among the infeasible), ``pp`` every divisor of the GPU count up to the number of layers,
    ``dp`` what is left, and every combination of the given micro-batch sizes, ZeRO stages, schedules
    (interleaved with each of ``virtual_stages``), recomputation modes and sequence parallelism. They are
    evaluated at once, vectorised (:func:`evaluate`); no Python loop over layouts.
    """
    model = models.model(model)
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster={cluster!r} must be an atscale.hardware.Cluster")
    n = cluster.num_gpus
    global_batch = _v.count("global_batch", global_batch, unit="sequences")
    micro_batches, virtual_stages = (tuple(int(x) for x in np.ravel(_v.count(name, value, scalar=False)))
                                     for name, value in (("micro_batches", micro_batches),
                                                         ("virtual_stages", virtual_stages)))
    zero_stages = tuple(int(x) for x in np.ravel(_v.count("zero_stages", zero_stages, low=0, high=3, scalar=False)))
    schedules, recomputes = (_names(name, value, options) for name, value, options in
                             (("schedules", schedules, SCHEDULES), ("recomputes", recomputes, RECOMPUTE)))
    sequence_parallel = tuple(bool(x) for x in np.ravel(_v.flags("sequence_parallel", sequence_parallel)))
    tps = _divisors_pow2(n, 2 * cluster.node.gpus)
    pps = _divisors_pow2(n, model.num_layers)
    sched_v = [(s, 1) for s in schedules if s != "interleaved"]
    if "interleaved" in schedules:
        sched_v += [("interleaved", v) for v in virtual_stages]
    combos = [(t, p, n // (t * p)) for t in tps for p in pps if n % (t * p) == 0]
    layouts = (len(combos) * len(micro_batches) * len(zero_stages) * len(sched_v) * len(recomputes)
               * len(sequence_parallel))
    if layouts > MAX_SEARCH_LAYOUTS:
        raise ValueError(f"{layouts:,} layouts to evaluate ({len(combos)} TP x PP x DP splits x {len(micro_batches)} "
                         f"micro_batches x {len(zero_stages)} zero_stages x {len(sched_v)} schedules x "
                         f"{len(recomputes)} recomputes x {len(sequence_parallel)} sequence_parallel); at most "
                         f"{MAX_SEARCH_LAYOUTS:,}: give shorter candidate lists")
    grid = np.array(list(itertools.product(range(len(combos)), micro_batches, zero_stages, range(len(sched_v)),
                                           range(len(recomputes)), sequence_parallel)), dtype=np.int64)
    combos_a = np.array(combos, dtype=np.int64)
    tp, pp, dp = combos_a[grid[:, 0]].T
    b, zs = grid[:, 1], grid[:, 2]
    sched = np.array([s for s, _ in sched_v], dtype=object)[grid[:, 3]]
    v = np.array([vv for _, vv in sched_v])[grid[:, 3]]
    reco = np.array(recomputes, dtype=object)[grid[:, 4]]
    sp = grid[:, 5].astype(bool)
    keep = ~(sp & (tp == 1))  # sequence parallelism is meaningless without TP: not a layout
    tp, pp, dp, b, zs, sched, v, reco, sp = (x[keep] for x in (tp, pp, dp, b, zs, sched, v, reco, sp))
    r = evaluate(model, cluster, tp=tp, pp=pp, dp=dp, micro_batch=b, global_batch=global_batch, zero_stage=zs,
                 schedule=sched, virtual_stages=v, recompute=reco, sequence_parallel=sp, seq_length=seq_length,
                 dtype=dtype, optimizer_name=optimizer_name, dp_overlap=dp_overlap, flash_attention=flash_attention)
    tps_ = np.where(r.feasible, r.tokens_per_second, -np.inf)
    order = np.lexsort((np.arange(len(tps_)), -tps_))
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
    ranked = StepTime(**{k: (val[order] if isinstance(val, np.ndarray) and val.shape == tps_.shape else val)
                         for k, val in fields.items()})
    table = {"tp": tp[order], "pp": pp[order], "dp": dp[order], "micro_batch": b[order],
             "global_batch": np.full(len(order), global_batch), "zero_stage": zs[order], "schedule": sched[order],
             "virtual_stages": v[order], "recompute": reco[order], "sequence_parallel": sp[order],
             **{f"{k}_s": np.asarray(val) for k, val in ranked.parts().items()}, "total_s": np.asarray(ranked.total),
             "tokens_per_second": np.asarray(ranked.tokens_per_second), "mfu": np.asarray(ranked.mfu),
             "memory": np.asarray(ranked.memory_total), "feasible": np.asarray(ranked.feasible),
             "reason": np.asarray(ranked.reason)}
    return SearchResult(MappingProxyType(table), ranked, model.name, cluster.name)


# --------------------------------------------------------------------------------------
# Published runs: calibration and validation
# --------------------------------------------------------------------------------------
def _gpt(name, heads, hidden, layers):
    return models.TransformerConfig(name, num_layers=layers, hidden_size=hidden, num_heads=heads, vocab_size=51_200,
                                    seq_length=2048, learned_position_embeddings=True, biases=True, norm="layernorm",
                                    tied_embeddings=True, source="Korthikanti et al. (2022), Table 3")


@dataclass(frozen=True)
class Run:
    """A published training run and what it measured.

    ``metric`` is ``"hardware_flops_per_gpu"`` (FLOP/s per GPU counting recomputation, as Narayanan et al.
    2021 report), ``"mfu"`` or ``"hfu"``; ``published`` its value (FLOP/s or a fraction). ``role`` is
    ``"calibration"`` (the constants were fitted on it) or ``"validation"`` (they were not). ``source``:
    paper, table, row. ``assumed``: what the paper does not print and the model had to assume.
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

    def __post_init__(self):
        _v.choice("role", self.role, ("calibration", "validation"))
        _v.choice("metric", self.metric, ("hardware_flops_per_gpu", "mfu", "hfu"))
        if not isinstance(self.model, models.TransformerConfig):
            raise ValueError(f"model={self.model!r} must be an atscale.models.TransformerConfig")
        if not isinstance(self.cluster, hardware.Cluster):
            raise ValueError(f"cluster={self.cluster!r} must be an atscale.hardware.Cluster")
        if not isinstance(self.plan, Plan) or self.plan.global_batch is None:
            raise ValueError(f"plan={self.plan!r} must be an atscale.plan.Plan with a global_batch")
        object.__setattr__(self, "published", _v.positive("published", self.published, scalar=True))
        object.__setattr__(self, "dp_overlap", _v.number("dp_overlap", self.dp_overlap, low=0, high=1, scalar=True))
        if self.seq_length is not None:
            object.__setattr__(self, "seq_length", _v.count("seq_length", self.seq_length))
        memory.optimizer(self.optimizer_name)  # a ValueError naming the known layouts
        for name in ("flash_attention", "memory_check"):
            object.__setattr__(self, name, _v.flag(name, getattr(self, name)))

    def step(self) -> StepTime:
        return step_time(self.model, self.cluster, self.plan, optimizer_name=self.optimizer_name,
                         dp_overlap=self.dp_overlap, seq_length=self.seq_length,
                         flash_attention=self.flash_attention, memory_check=self.memory_check)

    def memory_verdict(self) -> str:
        """The memory model's verdict on the published layout (even where ``memory_check`` is off)."""
        st = dataclasses.replace(self, memory_check=True).step()
        return "fits" if st.feasible else st.reason

    @property
    def predicted(self) -> float:
        """The model's value of :attr:`metric` for this run."""
        return float(getattr(self.step(), self.metric))

    @property
    def error(self) -> float:
        """``predicted / published - 1`` (positive: the model is optimistic)."""
        return self.predicted / self.published - 1


_A100 = hardware.DGX_A100
_HDR = hardware.FABRICS["InfiniBand HDR"]


def _a100(gpus: int) -> hardware.Cluster:
    return hardware.Cluster.of_gpus(_A100, gpus, _HDR)


_T1 = "Narayanan et al. (2021), Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, Table 1"
_T1_ASSUMED = ("micro-batch 1, 1F1B (non-interleaved), full recomputation (their eq. 3 counts it), FP16 optimizer "
               "layout without ZeRO, no gradient-reduction overlap (not printed in the table)")
# (params B, heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s per GPU)
_TABLE1 = ((1.7, 24, 2304, 24, 1, 1, 32, 512, 137), (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
           (7.5, 32, 4096, 36, 4, 1, 128, 512, 142), (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
           (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138), (76.1, 80, 10_240, 60, 8, 4, 1024, 1792, 140),
           (145.6, 96, 12_288, 80, 8, 8, 1536, 2304, 148), (310.1, 128, 16_384, 96, 8, 16, 1920, 2160, 155),
           (529.6, 128, 20_480, 105, 8, 35, 2520, 2520, 163), (1008.0, 160, 25_600, 128, 8, 64, 3072, 3072, 163))

MEGATRON_TABLE1_RUNS: tuple[Run, ...] = tuple(
    Run(f"GPT {p:g}B, {n:,} A100", next(mm for mm in models.MEGATRON_GPT if mm.hidden_size == hid),
        _a100(n), Plan(tp=t, pp=pp_, dp=n // (t * pp_), micro_batch=1, global_batch=B, recompute="full"),
        "hardware_flops_per_gpu", tf * 1e12, "validation", f"{_T1}, row {p:g}B: {tf} TFLOP/s per GPU", _T1_ASSUMED)
    for p, heads, hid, layers, t, pp_, n, B, tf in _TABLE1)
"""The ten weak-scaling runs of Megatron-LM's Table 1 (A100 80GB, Selene: DGX A100, HDR InfiniBand), as
published: achieved TFLOP/s per GPU *including* recomputation (their eq. 3), compared with the model's
:attr:`StepTime.hardware_flops_per_gpu` for full recomputation. Validation: no constant was fitted on them."""

_T5 = "Korthikanti et al. (2022), Reducing Activation Recomputation in Large Transformer Models, Tables 3 and 5"
_T5_PLAN = dict(zero_stage=0, recompute="selective", sequence_parallel=True)
_K22 = _gpt("GPT 22B", 64, 6144, 48)
_K175 = _gpt("GPT-3 175B", 96, 12_288, 96)
_K530 = _gpt("MT-NLG 530B", 128, 20_480, 105)
_K1T = _gpt("GPT 1T", 160, 25_600, 128)
_KROWS = ((_K22, 8, 1, 4, 4, "1f1b", 1, 0.415, 0.437), (_K175, 8, 8, 64, 1, "interleaved", 3, 0.514, 0.528),
          (_K530, 8, 35, 280, 1, "interleaved", 3, 0.560, 0.570), (_K1T, 8, 64, 512, 1, "1f1b", 1, 0.563, 0.570))

KORTHIKANTI_TABLE5_RUNS: tuple[Run, ...] = tuple(
    Run(f"{mm.name} ({metric.upper()})", mm, _a100(t * p), Plan(tp=t, pp=p, dp=1, micro_batch=mb, global_batch=B,
                                                                 schedule=sch, virtual_stages=v, **_T5_PLAN),
        metric, value, "calibration" if metric == "mfu" else "validation",
        f"{_T5}, row {mm.name.split()[-1]}: MFU {mfu:.1%}, HFU {hfu:.1%} (configuration from Table 3; interleaved "
        "with 3 stages per GPU for 175B and 530B, sec. 6)",
        "FP16 optimizer layout (not printed; no data parallelism, so it changes only the memory check)")
    for mm, t, p, B, mb, sch, v, mfu, hfu in _KROWS for metric, value in (("mfu", mfu), ("hfu", hfu)))
"""The four runs of Korthikanti et al.'s Table 5 (sequence parallelism + selective recomputation, no data
parallelism, A100 80GB), MFU and HFU each. The MFUs are in :data:`CALIBRATION_RUNS`."""

_L3 = "Llama Team (2024), The Llama 3 Herd of Models, Table 4"
_L3_ASSUMED = ("micro-batch 1, 1F1B with 126 layers on 16 stages (8 on the fullest; the paper trims the first and "
               "last stage instead and tunes its own schedule), FlashAttention, no recomputation, "
               "ZeRO-1-style sharded optimizer (Megatron BF16 layout), gradient reduction overlapped; memory not "
               "checked: the memory model puts this layout a few GB over an H100 (it does not know Meta's balancing "
               "of the first and last stages); the context-parallel row (CP=16, 131k tokens) is not modelled")


def _l3(gpus, dp, mfu, row):
    cl = hardware.Cluster.of_gpus(hardware.DGX_H100, gpus, hardware.FABRICS["RoCE 400G"])
    return Run(f"Llama 3 405B, {gpus:,} H100", models.LLAMA3_405B, cl,
               Plan(tp=8, pp=16, dp=dp, micro_batch=1, global_batch=2048, zero_stage=1, schedule="1f1b",
                    recompute="none", sequence_parallel=True),
               "mfu", mfu, "validation", f"{_L3}, row {row}: TP 8, CP 1, PP 16, DP {dp}, 16M tokens per batch, "
               f"BF16 MFU {mfu:.0%}", _L3_ASSUMED, optimizer_name="megatron-bf16", dp_overlap=DP_OVERLAP,
               flash_attention=True, memory_check=False)


OTHER_RUNS: tuple[Run, ...] = (
    Run("MT-NLG 530B, 2,240 A100 (DP 8)", _K530, _a100(2240),
        Plan(tp=8, pp=35, dp=8, micro_batch=1, global_batch=2240, schedule="interleaved", virtual_stages=3,
             **_T5_PLAN),
        "mfu", 0.542, "validation", f"{_T5}, sec. 6.3 text: the 530B run scaled to 8-way data parallelism, "
        "39.15 s per iteration, MFU 54.2% (no overlap of the gradient all-reduce)", "as the Table 5 row"),
    _l3(8192, 64, 0.43, "8,192 GPUs"),
    _l3(16_384, 128, 0.41, "16,384 GPUs (CP 1)"),
)
"""Published runs outside both tables above; no constant was fitted on them."""

_CAL_TABLE1 = (0, 3, 9)  # rows 1.7B, 18.4B and 1008B: the smallest, the narrowest per GPU, the largest
CALIBRATION_RUNS: tuple[Run, ...] = tuple(r for r in KORTHIKANTI_TABLE5_RUNS if r.metric == "mfu") + tuple(
    dataclasses.replace(MEGATRON_TABLE1_RUNS[i], role="calibration") for i in _CAL_TABLE1)
"""The runs the three constants of :func:`compute_efficiency` were fitted on (:func:`calibrate`): the four
MFUs of Korthikanti et al. (2022), Table 5, and three rows of Narayanan et al. (2021), Table 1 (the smallest
model, the narrowest per-GPU width, the largest), so that the fit spans model widths 2,304-25,600."""

VALIDATION_RUNS: tuple[Run, ...] = tuple(
    r for i, r in enumerate(MEGATRON_TABLE1_RUNS) if i not in _CAL_TABLE1) + tuple(
    r for r in KORTHIKANTI_TABLE5_RUNS if r.metric == "hfu") + OTHER_RUNS
"""Everything no constant was fitted on: seven rows of Megatron-LM's Table 1, Korthikanti et al.'s HFUs
(the same runs as the calibration MFUs, so only a check of the recomputation FLOPs, not an independent
validation), the 530B run with data parallelism, and Llama 3's Table 4."""


def calibrate(runs=CALIBRATION_RUNS, *, e_grid=np.linspace(0.60, 1.0, 41), w_grid=np.linspace(0, 600, 13),
              h_grid=np.linspace(0, 3000, 13)):
    """Least-squares ``(E_max, w_half, h_half)`` of :func:`compute_efficiency` on ``runs``.

    A grid search over the three constants (transparent, and the step time is monotonic in each) minimising
    the sum of squared ``log(predicted / published)`` over ``runs``; returns ``(E_max, w_half, h_half, loss)``.
    The module's constants are this fit on :data:`CALIBRATION_RUNS` (the default grids take about a
    minute and a half); the tests check that no neighbouring grid point fits better.
    """
    global COMPUTE_EFFICIENCY_MAX, COMPUTE_HALF_WIDTH, COMPUTE_HALF_HIDDEN
    runs = tuple(runs) if not isinstance(runs, Run) else (runs,)
    if not runs or not all(isinstance(r, Run) for r in runs):
        raise ValueError(f"runs={_v.show(runs)} must be a non-empty sequence of atscale.parallelism.Run")
    e_grid = np.ravel(_v.number("e_grid", e_grid, low=0, low_open=True, high=1))
    w_grid, h_grid = (np.ravel(_v.nonnegative(name, grid)) for name, grid in (("w_grid", w_grid), ("h_grid", h_grid)))
    saved = COMPUTE_EFFICIENCY_MAX, COMPUTE_HALF_WIDTH, COMPUTE_HALF_HIDDEN
    best = (np.inf, None, None, None)
    try:
        for h in h_grid:
            for w in w_grid:
                for e in e_grid:
                    COMPUTE_EFFICIENCY_MAX, COMPUTE_HALF_WIDTH, COMPUTE_HALF_HIDDEN = float(e), float(w), float(h)
                    loss = sum(math.log(r.predicted / r.published) ** 2 for r in runs)
                    if loss < best[0]:
                        best = (loss, float(e), float(w), float(h))
    finally:
        COMPUTE_EFFICIENCY_MAX, COMPUTE_HALF_WIDTH, COMPUTE_HALF_HIDDEN = saved
    return best[1], best[2], best[3], best[0]


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


def rank_groups(plan: Plan, gpus_per_node: int = 8):
    """Which TP, PP and DP group each global rank belongs to, in Megatron's order (TP fastest, then DP, then PP).

    Returns ``(tp_rank, dp_rank, pp_rank, node)`` arrays indexed by global rank: rank
    ``r = tp_rank + tp * (dp_rank + dp * pp_rank)``, so a TP group is ``tp`` consecutive ranks (one node when
    ``tp`` divides the node), a DP group strides by ``tp`` and a pipeline by ``tp * dp``. Source: Megatron-LM's
    ``initialize_model_parallel`` (``megatron/core/parallel_state.py``), default order ``tp-dp-pp``.
    """
    if not isinstance(plan, Plan):
        raise ValueError(f"plan={plan!r} must be an atscale.plan.Plan")
    gpus_per_node = _v.count("gpus_per_node", gpus_per_node)
    if plan.gpus > MAX_RANKS:
        raise ValueError(f"plan={plan.describe()} has {plan.gpus:,} ranks; rank_groups lists at most {MAX_RANKS:,} "
                         "(four integer arrays indexed by rank)")
    r = np.arange(plan.gpus)
    return r % plan.tp, (r // plan.tp) % plan.dp, r // (plan.tp * plan.dp), r // gpus_per_node


# --------------------------------------------------------------------------------------
# Pipeline schedules, simulated
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timeline:
    """Every forward and backward pass of one pipelined step: ``stage``, ``micro_batch``, ``chunk``,
    ``kind`` (``"F"`` or ``"B"``), ``start`` and ``end`` (arrays, in units of one micro-batch's forward
    time on a whole stage), and the step's ``makespan``. ``bubble`` is the idle share, measured:
    ``makespan / ideal - 1`` with ``ideal = m (t_f + t_b)``."""

    stage: np.ndarray
    micro_batch: np.ndarray
    chunk: np.ndarray
    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray
    pp: int
    micro_batches: int
    virtual_stages: int
    schedule: str
    backward_ratio: float

    @property
    def makespan(self) -> float:
        return float(self.end.max())

    @property
    def ideal(self) -> float:
        return self.micro_batches * (1 + self.backward_ratio)

    @property
    def bubble(self) -> float:
        """Measured bubble over useful time (compare :func:`bubble_fraction`)."""
        return self.makespan / self.ideal - 1

    def peak_in_flight(self) -> np.ndarray:
        """Per stage, the most micro-batches whose forward has run and backward has not (activation memory)."""
        out = np.zeros(self.pp, dtype=int)
        for i in range(self.pp):
            sel = self.stage == i
            order = np.argsort(self.start[sel], kind="stable")
            delta = np.where(self.kind[sel][order] == "F", 1, -1)
            out[i] = np.cumsum(delta).max()
        return out / self.virtual_stages


def _stage_order(schedule: str, p: int, m: int, v: int, i: int) -> list[tuple[str, int, int]]:
    if schedule == "gpipe":
        return [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
    if schedule == "1f1b":
        warm = min(p - i - 1, m)
        order = [("F", j, 0) for j in range(warm)]
        f, b = warm, 0
        while f < m:
            order += [("F", f, 0), ("B", b, 0)]
            f, b = f + 1, b + 1
        return order + [("B", j, 0) for j in range(b, m)]
    # interleaved (Megatron-LM): units in groups of p micro-batches, chunk by chunk
    total = m * v

    def unit(k, forward):
        j = (k // (p * v)) * p + k % p
        c = (k // p) % v
        return j, (c if forward else v - 1 - c)

    warm = min((p - i - 1) * 2 + (v - 1) * p, total)
    order = [("F", *unit(k, True)) for k in range(warm)]
    f, b = warm, 0
    while f < total:
        order += [("F", *unit(f, True)), ("B", *unit(b, False))]
        f, b = f + 1, b + 1
    return order + [("B", *unit(k, False)) for k in range(b, total)]


MAX_SIMULATED_PASSES = 100_000
"""The largest schedule :func:`pipeline_timeline` simulates (forward and backward passes of all
stages): about a second of pure-Python simulation; larger schedules are refused, not hung."""


def pipeline_timeline(pp: int, micro_batches: int, schedule: str = "1f1b", virtual_stages: int = 1, *,
                      backward_ratio: float = 2.0) -> Timeline:
    """Simulate one step of a pipeline schedule: each stage runs its passes in the schedule's order, each
    as soon as its input (the previous stage's forward, the next stage's backward) is ready.

    Orders: GPipe (all forwards, then all backwards; Huang et al. 2019), 1F1B (``p - i - 1`` warm-up
    forwards on stage ``i``, then one forward one backward; Narayanan et al. 2021, sec. 2.2.1) and Megatron's
    interleaved 1F1B (``v`` chunks per GPU, micro-batches in groups of ``p``; sec. 2.2.2). A forward of a
    whole stage takes 1 unit (``1/v`` per chunk), a backward ``backward_ratio`` units. Communication is free.
    Used to draw the schedule and to check :func:`bubble_fraction` against the simulation.
    """
    pp, micro_batches, virtual_stages = (_v.count(name, value) for name, value in
                                         (("pp", pp), ("micro_batches", micro_batches),
                                          ("virtual_stages", virtual_stages)))
    passes = 2 * pp * micro_batches * virtual_stages
    if passes > MAX_SIMULATED_PASSES:
        raise ValueError(f"pp={pp} x micro_batches={micro_batches} x virtual_stages={virtual_stages} means "
                         f"{passes:,} passes to simulate; at most {MAX_SIMULATED_PASSES:,} are drawn "
                         "(bubble_fraction gives the answer for any size)")
    _v.choice("schedule", schedule, SCHEDULES)
    if schedule != "interleaved" and virtual_stages != 1:
        raise ValueError(f"virtual_stages={virtual_stages} needs schedule='interleaved'")
    if schedule == "interleaved" and micro_batches % pp:
        raise ValueError(f"the interleaved schedule needs micro_batches ({micro_batches}) to be a multiple of "
                         f"pp ({pp})")
    backward_ratio = _v.positive("backward_ratio", backward_ratio)
    p, m, v = pp, micro_batches, virtual_stages
    tf, tb = 1.0 / v, backward_ratio / v
    orders = [_stage_order(schedule, p, m, v, i) for i in range(p)]
    done: dict[tuple, float] = {}
    pos = [0] * p
    free = [0.0] * p
    rows = []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for i in range(p):
            while pos[i] < len(orders[i]):
                kind, j, c = orders[i][pos[i]]
                if kind == "F":
                    dep = ("F", j, c, i - 1) if i > 0 else (("F", j, c - 1, p - 1) if c > 0 else None)
                else:
                    dep = ("B", j, c, i + 1) if i < p - 1 else (("B", j, c + 1, 0) if c < v - 1 else ("F", j, c, i))
                if dep is not None and dep not in done:
                    break
                start = max(free[i], done[dep] if dep is not None else 0.0)
                end = start + (tf if kind == "F" else tb)
                done[(kind, j, c, i)] = end
                free[i] = end
                rows.append((i, j, c, kind, start, end))
                pos[i] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    st, mb, ch, kd, s0, s1 = zip(*rows)
    return Timeline(np.array(st), np.array(mb), np.array(ch), np.array(kd), np.array(s0), np.array(s1), p, m, v,
                    schedule, float(backward_ratio))
