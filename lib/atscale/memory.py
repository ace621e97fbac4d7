"""The memory wall: what training must keep in GPU memory, and how sharding makes it fit.

Training state has two parts. **Model state** (weights, gradients, optimizer state)
scales with the parameter count; ZeRO (Rajbhandari et al. 2020) and FSDP shard it
across the data-parallel replicas. **Activations** (what the forward pass saves for the
backward pass) scale with micro-batch and sequence length; tensor and sequence
parallelism split them, recomputation trades them for extra FLOPs (Korthikanti et al.
2022). Everything is in bytes, per GPU unless the name says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .tables import readable
from . import hardware, models
from . import units as u
from . import _validate as v
from ._numeric import as_scalar
from .plan import FP8_CACHES, RECOMPUTE, RECOMPUTE_MODULES, Plan, _modules_arg, stage_layers

__all__ = [
    "Optimizer", "OPTIMIZERS", "RUNNING_EXAMPLE_OPTIMIZER", "optimizer", "ModelState", "model_state_bytes",
    "zero_communication_factor", "zero_communication_bytes", "max_params", "MaxModelMeasurement", "ZERO_TABLE2",
    "ZERO_TABLE2_FLOOR", "ActivationTerms", "activation_terms", "recompute_savings", "fp8_cache_savings",
    "activation_bytes_per_layer", "expert_output_bytes",
    "in_flight_micro_batches", "Breakdown", "breakdown", "max_micro_batch", "min_gpus_for_state",
    "logits_bytes", "checkpoint_bytes",
]


# --------------------------------------------------------------------------------------
# Bytes per parameter
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Optimizer:
    """Bytes each parameter costs in training: ``weights`` (the copy the forward pass uses),
    ``gradients``, and ``state`` (everything the optimizer keeps: master weights, moments).
    ZeRO stage 1 (and Megatron's distributed optimizer) shards ``state`` across the data-parallel
    replicas, stage 2 also ``gradients``, stage 3 also ``weights``.
    ``checkpoint`` is what a checkpoint persists per parameter (no gradients): for mixed-precision
    Adam the floor is 12 (the FP32 master and both moments; the BF16 weights are a rounding of
    the master and can be rebuilt from it), and Megatron-LM and DeepSpeed write 14 (they save the
    BF16 weights as well)."""

    name: str
    weights: float
    gradients: float
    state: float
    checkpoint: float
    source: str = ""

    def __post_init__(self):
        for name in ("weights", "gradients", "state", "checkpoint"):
            value = getattr(self, name)
            checked = v.positive(name, value, scalar=True, unit="bytes per parameter") if name == "weights" else \
                v.nonnegative(name, value, scalar=True, unit="bytes per parameter")
            object.__setattr__(self, name, checked)

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.state


_MEGATRON_DO = ("Megatron-LM / Megatron-Core documentation, 'Distributed Optimizer' (bytes per parameter, "
                "non-distributed and distributed, d = data-parallel size)")

OPTIMIZERS = MappingProxyType({o.name: o for o in (
    Optimizer("adam-mixed", 2, 2, 12, 14,
              "Rajbhandari et al. (2020), sec. 3.1: BF16/FP16 weights and gradients (2 + 2 bytes) and, for Adam, "
              "an FP32 master copy, momentum and variance (K = 12 bytes): 16 bytes per parameter. A checkpoint "
              "keeps the master copy and both moments (12, the floor) and, as Megatron-LM and DeepSpeed write "
              "it, the BF16 weights too: 14."),
    Optimizer("megatron-bf16", 2, 4, 12, 14,
              f"{_MEGATRON_DO}: BF16 parameters with FP32 gradient buffers (the main gradients the reduction "
              "accumulates into), FP32 master copy and Adam moments: 18 unsharded, 6 + 12/d with the distributed "
              "optimizer (it shards the master copy and moments, not the gradient buffer)."),
    Optimizer("megatron-fp16", 2, 2, 16, 14,
              f"{_MEGATRON_DO}: FP16 parameters and gradients; the optimizer keeps an FP32 copy of the gradients "
              "beside the FP32 master copy and moments (4 + 12 = 16 bytes, sharded together): 20 unsharded, "
              "4 + 16/d distributed."),
    Optimizer("adam-fp32", 4, 4, 8, 12,
              f"{_MEGATRON_DO}: FP32 parameters and gradients, no separate master copy, Adam moments (8): 16 "
              "unsharded, 8 + 8/d distributed. A checkpoint keeps the weights and both moments: 12."),
    Optimizer("sgd-momentum-mixed", 2, 2, 8, 10,
              "Mixed-precision SGD with momentum: FP32 master copy and momentum (8 bytes) instead of Adam's 12."),
    Optimizer("adam-bf16", 2, 2, 4, 6,
              "Pure-BF16 Adam without a master copy: both moments in BF16 (4 bytes). Cheaper, and numerically riskier."),
)})


RUNNING_EXAMPLE_OPTIMIZER = "megatron-bf16"
"""The optimizer layout of the running example: Megatron-Core's distributed optimizer with BF16
parameters and FP32 gradient buffers (its default for BF16 training), i.e. ZeRO-1 at
``6 + 12/d`` bytes per parameter, not the ZeRO paper's ``4 + 12/d``."""


def optimizer(name: str | Optimizer) -> Optimizer:
    """The optimizer layout called ``name`` (an :class:`Optimizer` passes through)."""
    if isinstance(name, Optimizer):
        return name
    try:
        return OPTIMIZERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}") from None


def _params(model_or_params) -> float:
    if isinstance(model_or_params, models.TransformerConfig):
        return float(model_or_params.num_params)
    if isinstance(model_or_params, str):
        return float(models.model_arg("model_or_params", model_or_params).num_params)
    return v.positive("model_or_params", model_or_params, unit="a model, a catalog model name or a parameter count")


def _degree(name: str, value) -> int:
    return v.count(name, value)


def _model(model) -> models.TransformerConfig:
    return models.model_arg("model", model)


def _stage_share(model_or_params, pp: int) -> float:
    """The fraction of the parameters on the fullest of ``pp`` pipeline stages: its layers over the model's
    (:func:`atscale.parallelism.stage_layers`, the step-time model's split: uneven splits are legitimate, the
    fullest stage decides), ``1/pp`` for a bare parameter count."""
    if not isinstance(model_or_params, (models.TransformerConfig, str)) or pp == 1:
        return 1.0 / pp
    m = models.model_arg("model_or_params", model_or_params)
    sl = stage_layers(m.num_layers, pp)
    return sl.fullest / m.num_layers


@readable("Model state per GPU")
@dataclass(frozen=True)
class ModelState:
    """Per-GPU bytes of weights, gradients and optimizer state."""

    weights: float | np.ndarray
    gradients: float | np.ndarray
    optimizer: float | np.ndarray

    @property
    def total(self):
        return self.weights + self.gradients + self.optimizer

    def __repr__(self):
        if np.ndim(self.total):
            return f"ModelState(<arrays of shape {np.shape(self.total)}>)"
        return (f"ModelState(weights {u.fmt_bytes(self.weights)}, gradients {u.fmt_bytes(self.gradients)}, "
                f"optimizer {u.fmt_bytes(self.optimizer)}; total {u.fmt_bytes(self.total)})")


def model_state_bytes(model_or_params, optimizer_name: str = "adam-mixed", *, zero_stage: int = 0, dp=1,
                      tp: int = 1, pp: int = 1) -> ModelState:
    """Per-GPU model-state bytes under ZeRO stage 0-3 across ``dp`` replicas, after tensor
    (``tp``) and pipeline (``pp``) parallelism split the parameters.

    With ``Ψ = params / (tp · pp)`` parameters per model-parallel rank and ``K`` optimizer
    bytes per parameter (Rajbhandari et al. 2020, Fig. 1):

    ========  ==============================  ==========================================
    stage     shards across ``dp``             per-GPU bytes (mixed-precision Adam, K=12)
    ========  ==============================  ==========================================
    0 (DDP)   nothing                          ``(2 + 2 + K) Ψ``
    1         optimizer state                  ``2Ψ + 2Ψ + KΨ/N_d``
    2         + gradients                      ``2Ψ + (2 + K)Ψ/N_d``
    3 / FSDP  + weights                        ``(2 + 2 + K)Ψ/N_d``
    ========  ==============================  ==========================================

    The paper's example (7.5B parameters, N_d = 64) gives 120, 31.4, 16.6 and 1.9 "GB":
    decimal gigabytes (10^9 bytes); in GiB (2^30 bytes) the same states would be 111.8, 29.25,
    15.5 and 1.75. Its Table 1 (7.5B, 128B, 1T; N_d = 1 to 1,024) is reproduced in the tests. Temporary buffers, fragmentation and the gathered
    parameters of ZeRO-3's current layer are not counted. ``dp`` may be an array. A model whose layers do not
    divide by ``pp`` is split as the step-time model splits it (:func:`atscale.parallelism.stage_layers`), and the
    fullest stage's share of the parameters replaces ``1/pp`` (Llama 3 405B: 126 layers on 16 stages, 8 on the
    fullest).
    """
    zero_stage = v.count("zero_stage", zero_stage, low=0, high=3)
    tp, pp = _degree("tp", tp), _degree("pp", pp)
    dp_arr = v.count("dp", dp, scalar=False)
    if isinstance(model_or_params, (models.TransformerConfig, str)):
        m = models.model_arg("model_or_params", model_or_params)
        if m.num_heads % tp or m.kv_heads % tp:
            raise ValueError(f"tp={tp} must divide num_heads={m.num_heads} and num_kv_heads={m.kv_heads} of {m.name}")
    share = _stage_share(model_or_params, pp)
    opt = optimizer(optimizer_name)
    psi, n = v.broadcast(model_or_params=np.asarray(_params(model_or_params) * share / tp),
                         dp=np.asarray(dp_arr, dtype=float))
    weights = opt.weights * psi / (n if zero_stage >= 3 else 1)
    gradients = opt.gradients * psi / (n if zero_stage >= 2 else 1)
    state = opt.state * psi / (n if zero_stage >= 1 else 1)
    shape = np.broadcast(weights, gradients, state, n).shape  # dp sets the shape even at stage 0
    parts = [np.broadcast_to(x, shape) for x in (weights, gradients, state)]
    return ModelState(*(float(x) if x.ndim == 0 else np.array(x) for x in parts))


def zero_communication_factor(zero_stage: int) -> float:
    """Elements each GPU communicates per step, as a multiple of its ``Ψ`` parameters.

    Data parallelism's gradient all-reduce moves ``2Ψ`` (a reduce-scatter and an all-gather of
    ``Ψ`` each); ZeRO-1 and ZeRO-2 move the same ``2Ψ``, reorganised; ZeRO-3 must also all-gather
    the weights again for the backward pass: ``3Ψ``, 1.5 times data parallelism
    (Rajbhandari et al. 2020, sec. 7). Returns 2, 2, 2 or 3.
    """
    zero_stage = v.count("zero_stage", zero_stage, low=0, high=3)
    return 3.0 if zero_stage == 3 else 2.0


def zero_communication_bytes(model_or_params, zero_stage: int, *, tp: int = 1, pp: int = 1,
                             bytes_per_element: float = 2.0):
    """Bytes each GPU sends (and receives) over the data-parallel group per optimizer step.

    ``zero_communication_factor(zero_stage) × Ψ × bytes_per_element`` with ``Ψ = params / (tp · pp)``
    (Rajbhandari et al. 2020, sec. 7: ``2Ψ`` for data parallelism and ZeRO-1/2, ``3Ψ`` for ZeRO-3),
    in BF16 (2 bytes) by default. It does not depend on the data-parallel degree: a bandwidth-optimal
    collective moves about ``Ψ`` per GPU however many replicas share it. Returns bytes.
    """
    tp, pp = _degree("tp", tp), _degree("pp", pp)
    bytes_per_element = v.positive("bytes_per_element", bytes_per_element, scalar=True, high=64, unit="bytes")
    psi = _params(model_or_params) / (tp * pp)
    return as_scalar(zero_communication_factor(zero_stage) * psi * bytes_per_element)


def max_params(capacity, optimizer_name: str = "adam-mixed", *, zero_stage: int = 0, dp=1, tp: int = 1,
               pp: int = 1):
    """The largest parameter count whose model state alone fits in ``capacity`` bytes per GPU.

    ``capacity · tp · pp / b``, where ``b`` is the per-GPU bytes per parameter of
    :func:`model_state_bytes` at this ZeRO stage and ``dp``. It ignores activations, buffers and
    fragmentation, so it is an **upper bound** on the largest trainable model: Rajbhandari et al.
    (2020) call it the "max theoretical model size" (their Table 2, left half). ``capacity`` and
    ``dp`` may be arrays. Returns parameters (a count).
    """
    cap = v.positive("capacity", capacity, unit="bytes")
    per_param = model_state_bytes(1.0, optimizer_name, zero_stage=zero_stage, dp=dp, tp=tp, pp=pp).total
    return as_scalar(cap / per_param)


@dataclass(frozen=True)
class MaxModelMeasurement:
    """A published largest model that trained: ``measured_params`` on ``gpus`` GPUs of ``capacity``
    bytes each, with model parallelism ``mp`` and data parallelism ``gpus / mp`` at ``zero_stage``."""

    mp: int
    gpus: int
    zero_stage: int
    measured_params: float
    paper_bound: float
    capacity: float = 32 * u.GB
    capacity_usable: float = 32768 * u.MiB
    source: str = ("Rajbhandari et al. (2020), Table 2: 32 GB V100s, Megatron-LM model parallelism within a "
                   "DGX-2 node, 'Measured Model Size' (right) and 'Max Theoretical Model Size' (left). The "
                   "paper's bound divides a decimal 32e9 bytes; the V100 32GB's driver reports 32,768 MiB "
                   "(34.36e9 bytes; nvidia-smi's memory.total as printed in public nvidia-smi logs)")

    @property
    def dp(self) -> int:
        return self.gpus // self.mp

    @property
    def bound(self) -> float:
        """The library's state-only bound (:func:`max_params`) for this configuration, in parameters."""
        return max_params(self.capacity, zero_stage=self.zero_stage, dp=self.dp, tp=self.mp)

    @property
    def leftover(self) -> float:
        """Bytes per GPU the measured model leaves beside its model state: the driver's usable
        capacity (``capacity_usable``) minus :func:`model_state_bytes` of ``measured_params``.
        This is what activations, buffers and fragmentation took."""
        state = model_state_bytes(self.measured_params, zero_stage=self.zero_stage, dp=self.dp, tp=self.mp)
        return self.capacity_usable - state.total


ZERO_TABLE2 = tuple(
    MaxModelMeasurement(mp, 64 * mp, stage, measured * 1e9, bound * 1e9)
    for stage, rows in (
        (0, ((1, 1.3, 2), (2, 2.5, 4), (4, 5, 8), (8, 10, 16), (16, 20, 32))),
        (1, ((1, 6.2, 7.6), (2, 12.5, 15.2), (4, 25, 30.4), (8, 50, 60.8), (16, 100, 121.6))),
    )
    for mp, measured, bound in rows
)
"""The ZeRO paper's measured largest models (baseline data parallelism, stage 0, and ZeRO-1,
``P_os``) on 64 to 1,024 V100s, with the paper's own theoretical bound. The paper prints the
baseline measurement for MP = 8 in italics (10B) without saying why; it is kept as printed."""

ZERO_TABLE2_FLOOR = 0.6
"""The tests assert that every :data:`ZERO_TABLE2` measurement lies between this fraction of the
library's state-only bound (:func:`max_params`) and the bound itself (dimensionless): the bound
ignores activations, buffers and fragmentation, so it overestimates, but by less than 40%."""


# --------------------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActivationTerms:
    """Bytes per layer that one micro-batch leaves in memory for the backward pass, split the
    way tensor and sequence parallelism split them (Korthikanti et al. 2022, sec. 4).

    ``replicated``: outside the tensor-parallel region (norm inputs, the inputs of the QKV and
    MLP blocks, dropout masks; under multi-head latent attention also the latents and their norms' outputs, which
    Megatron-Core keeps ``s / t`` tokens long under sequence parallelism); sequence parallelism divides them by ``t``.
    ``parallel``: inside it (Q, K, V, the projection input, the MLP's inner activations);
    tensor parallelism divides them by ``t``. ``scores``: the ``s × s`` attention terms
    (``5 a s² b`` with dropout), inside the tensor-parallel region too.
    """

    replicated: float
    parallel: float
    scores: float


def _batch_and_sequence(model: models.TransformerConfig, micro_batch, seq_length):
    """``micro_batch`` (sequences) and ``seq_length`` (tokens; ``None``: the model's) checked as counts and broadcast
    together, as float arrays."""
    b = np.asarray(v.count("micro_batch", micro_batch, scalar=False), dtype=float)
    s = np.asarray(v.count("seq_length", model.seq_length if seq_length is None else seq_length, scalar=False),
                   dtype=float)
    return v.broadcast(micro_batch=b, seq_length=s)


def activation_terms(model: models.TransformerConfig, micro_batch, seq_length=None, *, dropout: bool | None = None,
                     flash_attention: bool = False) -> ActivationTerms:
    """Per-layer activation bytes of one micro-batch, by term, for 16-bit activations.

    For a GPT-style layer (4h MLP, multi-head attention, dropout) this is Korthikanti et
    al.'s ``s b h (34 + 5 a s / h)``; a mixture of experts stores the MLP tensors of the experts a token visits,
    its ``k`` dispatched and combined copies and the router's FP32 logits (averaged over the layers): ``10 s b h`` replicated, ``24 s b h`` parallel and
    ``5 a s² b`` of attention scores. The derivation is per stored tensor, so it generalises:
    grouped-query attention stores K and V at width ``g · d`` instead of ``h``; a gated (SwiGLU)
    MLP stores three ``s × f`` tensors (gate, up, their product) instead of two; no dropout
    removes the masks and the dropped-out scores; a fused (FlashAttention) kernel stores no
    ``s × s`` tensor at all; a parallel block (one norm, whose output both sublayers read) stores one norm's input
    and one block input, ``4 s b h`` fewer. Multi-head latent attention (:class:`atscale.models.MLA`) stores its query and key-value
    latents (the inputs of their RMSNorms) and the norms' outputs (the up-projections' inputs), ``4 s b (r_q + r_kv)``
    replicated (Megatron-Core ``multi_latent_attention.py``: the down-projections' outputs are ``s / t`` tokens long
    under sequence parallelism, full-length on every tensor-parallel rank without it). All values in bytes;
    ``micro_batch`` may be an array.

    Args:
        dropout: default ``True`` for GPT-style models (learned position embeddings), ``False``
            for Llama-style ones.
    """
    model = _model(model)
    b, s = _batch_and_sequence(model, micro_batch, seq_length)
    if dropout is not None:
        v.flag("dropout", dropout)
    v.flag("flash_attention", flash_attention)
    if dropout is None:
        dropout = model.learned_position_embeddings
    h, a, f = model.hidden_size, model.num_heads, model.active_ffn_size
    q, kv, o = a * model.qk_head_dim, model.kv_heads * (model.qk_head_dim + model.v_head_dim) / 2, a * model.v_head_dim
    sbh = s * b * h
    # Outside the TP region: two norm inputs (2 each), the QKV and MLP block inputs (2 each), and a 1-byte dropout
    # mask after attention and after the MLP; a parallel block has one norm, whose output both blocks read.
    norms = _norms(model)
    replicated = sbh * (2 * norms + 2 * norms + (2 if dropout else 0)) + 4 * s * b * _latent_width(model)
    # Inside: Q (2 s b a d), K and V (2 s b g d each), the output-projection input (2 s b a d), and the
    # MLP's inner tensors: GeLU input and output (2 x 2sbf) or SwiGLU's gate, up, product (3 x 2sbf), with f the
    # width a token goes through (a MoE layer: its k routed and shared experts).
    mlp = (3 if model.gated_mlp else 2) * 2 * s * b * f
    parallel = 2 * s * b * q + 4 * s * b * kv + 2 * s * b * o + mlp
    if model.is_moe:
        parallel = parallel + _routing_bytes(model, s * b)
    if flash_attention:
        scores = 0.0 * sbh
    else:  # softmax output (2 bytes), and with dropout its mask (1) and output (2): 5 a s^2 b
        scores = (5 if dropout else 2) * a * s * s * b
    return ActivationTerms(as_scalar(replicated), as_scalar(parallel), as_scalar(scores))


def _routing_bytes(model: models.TransformerConfig, sb):
    """Bytes a mixture of experts stores per layer (averaged over the layers) for ``sb`` tokens beside its experts'
    MLP tensors: each token's ``k`` dispatched copies (2 bytes each, the experts' first GEMM's input), its ``k``
    combined copies (:func:`expert_output_bytes`) and the router's FP32 logits."""
    share = model.moe_layers / model.num_layers
    return (share * sb * (2 * model.experts_per_token * model.hidden_size + 4 * model.num_experts)
            + _expert_output_bytes(model, sb))


def _expert_output_bytes(model: models.TransformerConfig, tokens):
    """:func:`expert_output_bytes` without its argument checks (the callers' are checked)."""
    share = model.moe_layers / model.num_layers if model.is_moe else 0.0
    return share * tokens * 2 * model.experts_per_token * model.hidden_size


def expert_output_bytes(model: models.TransformerConfig, tokens):
    """Bytes per layer (averaged over the layers) that a mixture of experts keeps of its experts' outputs for
    ``tokens`` tokens: each token's ``k`` outputs, 2 bytes per value, held until the backward pass gives the router
    the gradient of each routing weight (``dL/dp_i`` needs ``E_i(x)`` when the weights multiply the outputs). Part of
    :func:`activation_terms`' ``parallel`` term. Memory-efficient permutation (NVIDIA, "Scalable Training of
    Mixture-of-Experts Models with Megatron Core", 2026, sec. 4.1.2) applies each weight before the expert's second
    GEMM instead, so that its gradient needs only the activation's input, already kept: these bytes are not stored.
    The memory model keeps them (the standard formulation); 0 for a dense model. Vectorised over ``tokens``."""
    model = _model(model)
    tokens = v.positive("tokens", tokens, unit="tokens")
    return as_scalar(_expert_output_bytes(model, np.asarray(tokens, dtype=float)))


def _norms(model: models.TransformerConfig) -> int:
    """Norms per layer whose input and output the layer stores: two, one before the attention and one before the
    MLP; one in a parallel block (:attr:`~atscale.models.TransformerConfig.parallel_block`), whose attention and MLP
    read the same normalised input (PaLM, Chowdhery et al. 2022, sec. 2)."""
    return 1 if model.parallel_block else 2


def _key_width(model: models.TransformerConfig) -> int:
    """Values per token of the key projection's output, ``g d_qk``, which ``"alternate_mm"`` recomputes (0 under
    multi-head latent attention, whose keys come from a shared up-projection, not a projection of their own)."""
    return 0 if model.mla is not None else model.kv_heads * model.qk_head_dim


def _latent_width(model: models.TransformerConfig) -> int:
    """Values per token of multi-head latent attention's two latents, ``r_q + r_kv`` (0 without MLA; no query
    latent when :attr:`~atscale.models.MLA.q_lora_rank` is ``None``)."""
    mla = model.mla
    return 0 if mla is None else mla.kv_lora_rank + (mla.q_lora_rank or 0)


def recompute_savings(model: models.TransformerConfig, micro_batch, seq_length=None, modules=("core_attn",), *,
                      dropout: bool | None = None, flash_attention: bool = False) -> ActivationTerms:
    """Per-layer activation bytes of one micro-batch that selective recomputation of ``modules`` (names of
    :data:`atscale.plan.RECOMPUTE_MODULES`) does not store, split as :func:`activation_terms` splits them:

    * ``"core_attn"``: the attention scores (``scores``; none with a fused kernel, which stores none);
    * ``"layernorm"``: both norms' outputs, the QKV and MLP block inputs, ``4 s b h`` (``replicated``; a parallel
      block's one norm, ``2 s b h``); under
      multi-head latent attention also the latent norms' outputs, ``2 s b (r_q + r_kv)`` (DeepSeek-V3 recomputes
      "all RMSNorm operations", sec. 3.2.3);
    * ``"act"``: the activation function's output, the down projection's input, ``2 s b f`` (``parallel``);
    * ``"mlp"``: every inner tensor of the MLP, ``2 s b f`` per tensor, three for a gated MLP, two otherwise
      (``parallel``; it includes ``"act"``'s); its input, the checkpoint's, stays. A mixture of experts' is
      Megatron-Core's ``moe``, which checkpoints the whole MoE layer (``MoELayer.forward``: router, dispatch,
      experts, combine): its dispatched copies and router logits go too (:func:`activation_terms`' MoE terms);
    * ``"mla_up_proj"``: under multi-head latent attention, the up-projected queries, keys and values
      (``2 s b (a d_qk + g (d_qk + d_v))``, ``parallel``), made again from the latents; none without MLA;
    * ``"alternate_mm"`` (torchtitan's per-operator policy): the keys, ``2 s b g d_qk``, and a gated MLP's up
      projection, ``2 s b f`` (unless ``"mlp"`` already drops it), ``parallel``; the MLP norm's input (the
      residual sum, made again from the layer's input and the recomputed attention output projection) against the
      down projection's output the policy stores, ``2 s b h`` each, ``replicated``: net nothing for a gated MLP,
      whose down projection runs third of three and is kept; ``2 s b h`` without a gate, whose down projection is
      recomputed. Counted as without tensor parallelism: with it the policy also keeps the attention's
      reduce-scatter output, ``2 s b h / t`` more (left out). None of the keys under MLA. A parallel block's are
      counted as the serial block's (it has no residual sum between its sublayers: a known approximation).

    Each term as :func:`activation_terms` counts it (Korthikanti et al. 2022, sec. 4.1; Megatron-Core's
    ``recompute_modules``). Bytes; ``micro_batch`` may be an array."""
    model = _model(model)
    modules = _modules_arg(modules, "modules")
    terms = activation_terms(model, micro_batch, seq_length, dropout=dropout, flash_attention=flash_attention)
    b = np.asarray(micro_batch, dtype=float)
    s = np.asarray(model.seq_length if seq_length is None else seq_length, dtype=float)
    sb = s * b
    rep = 2 * sb * (_norms(model) * model.hidden_size + _latent_width(model)) if "layernorm" in modules else 0 * sb
    inner = (3 if model.gated_mlp else 2) * 2 * sb * model.active_ffn_size
    if model.is_moe:  # Megatron-Core's "moe" checkpoints the whole MoE layer: its routing and dispatch too
        inner = inner + _routing_bytes(model, sb)
    par = inner if "mlp" in modules else (2 * sb * model.active_ffn_size if "act" in modules else 0 * sb)
    if "mla_up_proj" in modules and model.mla is not None:  # Q (2 s b a d_qk), K and V (2 s b g d each)
        par = par + 2 * sb * model.qkv_width
    if "alternate_mm" in modules:
        keys = _key_width(model)
        up = model.active_ffn_size if (model.gated_mlp and "mlp" not in modules) else 0
        par = par + 2 * sb * (keys + up)
        rep = rep + (0 if model.gated_mlp else 2 * sb * model.hidden_size)
    scores = terms.scores if "core_attn" in modules else 0 * sb
    return ActivationTerms(as_scalar(rep), as_scalar(par), as_scalar(scores))


def _fp8_cache_parts(model: models.TransformerConfig, sb, policy: str) -> dict:
    """Bytes per layer that the FP8 cache ``policy`` (:data:`atscale.plan.FP8_CACHES`) stores fewer than 16-bit
    activations would (negative: more), tensor by tensor, for ``sb`` tokens (a number or an array), before any
    recomputation removes a tensor; :func:`_fp8_cache_terms` combines them. The one statement of the policies'
    bytes, read by :func:`fp8_cache_savings` and the step-time model."""
    zero = 0 * sb
    if policy == "none":
        return dict(norm_out=zero, latent_out=zero, fc2_in=zero, act_in=zero, attn_out=zero, attn_out_alone=zero,
                    dispatch=zero)
    h, f, o = model.hidden_size, model.active_ffn_size, model.num_heads * model.v_head_dim
    share = model.moe_layers / model.num_layers if model.is_moe else 0.0
    parts = dict(
        norm_out=_norms(model) * sb * h,  # the QKV and MLP blocks' inputs (the norms' outputs): 1 byte of 2 each
        latent_out=sb * _latent_width(model),  # MLA's latent norms' outputs, the up-projections' inputs
        fc2_in=sb * f,  # the down projection's input: 1 byte of 2
        act_in=zero,
        dispatch=share * sb * model.experts_per_token * h,  # the experts' up-projection inputs, k copies a token
    )
    if policy == "transformer-engine":  # an FP8 copy beside the attention kernel's own 16-bit output; alone when
        # the attention core is recomputed (it then stores nothing of its own)
        return dict(parts, attn_out=-sb * o, attn_out_alone=sb * o)
    # DeepSeek-V3: one E5M6 copy (12 bits, 1.5 bytes) of the attention output serves both backward passes; the MoE's
    # SwiGLU inputs (gate and up, or GELU's one) in FP8
    e5m6 = 0.5 * sb * o
    return dict(parts, attn_out=e5m6, attn_out_alone=e5m6,
                act_in=share * (2 if model.gated_mlp else 1) * sb * f)


def _fp8_cache_terms(parts: dict, again: dict, xp=np) -> tuple:
    """``(replicated, parallel)`` bytes not stored under :func:`_fp8_cache_parts`' ``parts`` when the modules
    ``again`` (name -> bool, or bool array) are recomputed: a recomputed tensor is not stored at all, so its FP8
    saving goes (the norms' outputs with ``"layernorm"``, the down projection's input with ``"act"`` or ``"mlp"``,
    the activation's inputs and the experts' dispatched inputs with ``"mlp"``, MLA's latent norms' outputs with
    ``"layernorm"`` or ``"mla_up_proj"``, whose checkpoint keeps its 16-bit inputs); a recomputed attention core
    leaves the output projection's copy alone."""
    rep = (xp.where(again["layernorm"], 0.0, parts["norm_out"])
           + xp.where(again["layernorm"] | again["mla_up_proj"], 0.0, parts["latent_out"]))
    par = (xp.where(again["act"] | again["mlp"], 0.0, parts["fc2_in"]) + xp.where(again["mlp"], 0.0, parts["act_in"])
           + xp.where(again["core_attn"], parts["attn_out_alone"], parts["attn_out"])
           + xp.where(again["mlp"], 0.0, parts["dispatch"]))
    return rep, par


def fp8_cache_savings(model: models.TransformerConfig, micro_batch, seq_length=None, policy: str = "transformer-engine",
                      *, recompute: str = "none", recompute_modules=None) -> ActivationTerms:
    """Per-layer activation bytes of one micro-batch that an FP8 step does not store because ``policy`` (one of
    :data:`atscale.plan.FP8_CACHES`) keeps tensors in one byte per value instead of two, split as
    :func:`activation_terms` splits them (``scores`` is always 0: the attention scores are never FP8). Negative where
    the policy stores more (Transformer Engine's second copy of the attention output).

    Per token and layer, with ``h`` the width, ``f`` the MLP width a token goes through, ``a d_v`` the attention
    output's width, ``k`` the experts a token visits and ``r`` the share of MoE layers:

    * ``"transformer-engine"`` (Transformer Engine v2.8, ``module/linear.py``, ``module/layernorm_mlp.py``): the norms'
      outputs ``2h`` (replicated; with MLA also its latent norms' outputs, ``r_q + r_kv``), the down projection's
      input ``f``, the dispatched copies ``r k h``, and
      ``-a d_v`` for the FP8 copy of the attention output beside the kernel's BF16 one (``+a d_v`` when the attention
      core is recomputed and the copy is the only one);
    * ``"deepseek-v3"`` (DeepSeek-AI 2024, sec. 3.3.3): the same, the attention output once in E5M6, ``a d_v / 2``,
      and the MoE's SwiGLU inputs in FP8, ``2 r f`` (``r f`` for a GELU MLP).

    Recomputed tensors are not stored at all and save nothing more (``recompute`` and ``recompute_modules`` as
    :class:`~atscale.plan.Plan` takes them); full recomputation stores only each layer's 16-bit input: no saving.
    Bytes; ``micro_batch`` may be an array."""
    model = _model(model)
    v.choice("policy", policy, FP8_CACHES)
    v.choice("recompute", recompute, RECOMPUTE)
    b, s = _batch_and_sequence(model, micro_batch, seq_length)
    if recompute_modules is not None and recompute != "selective":
        raise ValueError(f"recompute_modules={v.show(recompute_modules)} needs recompute='selective' "
                         f"(got recompute={recompute!r})")
    modules = _modules_arg(recompute_modules or ("core_attn",)) if recompute == "selective" else ()
    again = {m: m in modules for m in RECOMPUTE_MODULES}
    rep, par = _fp8_cache_terms(_fp8_cache_parts(model, s * b, policy), again)
    if recompute == "full":
        rep, par = 0 * rep, 0 * par
    return ActivationTerms(as_scalar(rep), as_scalar(par), as_scalar(0 * s * b))


def activation_bytes_per_layer(model: models.TransformerConfig, micro_batch, seq_length=None, *, tp: int = 1,
                               sequence_parallel: bool = False, recompute: str = "none",
                               dropout: bool | None = None, flash_attention: bool = False,
                               recompute_modules=None, fp8_cache: str = "none"):
    """Activation bytes one layer keeps per GPU for one micro-batch (Korthikanti et al. 2022, Table 2).

    For a GPT-style model, with ``t = tp``:

    =====================================  =======================================
    no parallelism                         ``s b h (34 + 5 a s / h)``
    tensor parallel                        ``s b h (10 + 24/t + 5 a s/(h t))``
    tensor + sequence parallel             ``s b h / t (34 + 5 a s / h)``
    tensor parallel + selective recompute  ``s b h (10 + 24/t)``
    tensor + sequence + selective          ``s b h (34 / t)``
    full recomputation                     ``2 s b h`` (the layer input only; ``/t`` with SP)
    =====================================  =======================================

    These are **bytes** already (2-byte activations, 1-byte masks): multiplying ``34 s b h``
    by 2 bytes per value again is a classic error. Selective recomputation recomputes the
    attention scores in the backward pass instead of storing them, or, with ``recompute_modules``, the parts of
    the layer :func:`recompute_savings` lists. ``fp8_cache`` (one of :data:`atscale.plan.FP8_CACHES`; an FP8 step's)
    stores some tensors in one byte per value: :func:`fp8_cache_savings`.
    """
    model = _model(model)
    tp = _degree("tp", tp)
    v.flag("sequence_parallel", sequence_parallel)
    v.choice("recompute", recompute, RECOMPUTE)
    v.choice("fp8_cache", fp8_cache, FP8_CACHES)
    if tp > 1 and (model.num_heads % tp or model.kv_heads % tp):
        raise ValueError(f"tp={tp} must divide num_heads={model.num_heads} and num_kv_heads={model.kv_heads}")
    if sequence_parallel and tp == 1:
        raise ValueError("sequence_parallel=True needs tp > 1 (it splits the replicated activations across TP ranks)")
    terms = activation_terms(model, micro_batch, seq_length, dropout=dropout, flash_attention=flash_attention)
    sp_div = tp if sequence_parallel else 1
    if recompute == "full":
        s = model.seq_length if seq_length is None else seq_length
        return as_scalar(2 * np.asarray(s, float) * np.asarray(micro_batch, float) * model.hidden_size / sp_div)
    if recompute_modules is not None and recompute != "selective":
        raise ValueError(f"recompute_modules={v.show(recompute_modules)} needs recompute='selective' "
                         f"(got recompute={recompute!r})")
    fp8 = fp8_cache_savings(model, micro_batch, seq_length, fp8_cache, recompute=recompute,
                            recompute_modules=recompute_modules)
    if recompute != "selective":
        return as_scalar((terms.replicated - fp8.replicated) / sp_div + (terms.parallel - fp8.parallel + terms.scores)
                         / tp)
    saved = recompute_savings(model, micro_batch, seq_length, recompute_modules or ("core_attn",), dropout=dropout,
                              flash_attention=flash_attention)
    return as_scalar((terms.replicated - saved.replicated - fp8.replicated) / sp_div
                     + (terms.parallel - saved.parallel - fp8.parallel + terms.scores - saved.scores) / tp)


def in_flight_micro_batches(pp: int, *, stage: int = 0, virtual_stages: int = 1, num_micro_batches=None) -> float:
    """Micro-batches whose activations a pipeline stage holds at its peak under 1F1B.

    Stage ``i`` (0 = first) of ``p`` stages warms up with ``p - i`` forward passes before its
    first backward, so the first stage holds ``p`` micro-batches, the last one 1
    (Narayanan et al. 2021, sec. 2.2.1). With ``v`` interleaved virtual stages per GPU, the first
    stage holds ``p (1 + (p - 1)/(p v))`` micro-batches' worth of its (smaller) layers
    (Korthikanti et al. 2022, sec. 4.2.3). Never more than the number of micro-batches.
    """
    pp = _degree("pp", pp)
    virtual_stages = _degree("virtual_stages", virtual_stages)
    stage = v.count("stage", stage, low=0, high=pp - 1, unit=f"a stage index of the pp={pp} stages")
    held = float(pp - stage)
    if virtual_stages > 1 and stage == 0:
        held = pp * (1 + (pp - 1) / (pp * virtual_stages))
    if num_micro_batches is not None:
        num_micro_batches = _degree("num_micro_batches", num_micro_batches)
        held = min(held, float(num_micro_batches))
    return held


# --------------------------------------------------------------------------------------
# The budget
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Breakdown:
    """Per-GPU memory of one training configuration against the accelerator's capacity (bytes)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    capacity: float
    label: str = ""
    model: str = ""
    plan: Plan | None = None

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    @property
    def overflow(self) -> float:
        """Bytes over capacity (0 if it fits)."""
        return max(0.0, self.total - self.capacity)

    @property
    def headroom(self) -> float:
        """Bytes left (0 if it does not fit)."""
        return max(0.0, self.capacity - self.total)

    def verdict(self) -> str:
        if self.fits:
            return f"fits: {u.fmt_bytes(self.total)} of {u.fmt_bytes(self.capacity)}, {u.fmt_bytes(self.headroom)} free"
        return f"does not fit: over by {u.fmt_bytes(self.overflow)} ({u.fmt_bytes(self.total)} > {u.fmt_bytes(self.capacity)})"

    def parts(self) -> dict[str, float]:
        return {"weights": self.weights, "gradients": self.gradients, "optimizer state": self.optimizer,
                "activations": self.activations}

    def __repr__(self):
        parts = ", ".join(f"{k} {u.fmt_bytes(v)}" for k, v in self.parts().items())
        return f"Breakdown({self.label + ': ' if self.label else ''}{parts}; {self.verdict()})"

    def _repr_html_(self):
        rows = "".join(f"<tr><td>{k}</td><td>{u.fmt_bytes(v)}</td></tr>" for k, v in self.parts().items())
        colour = "#1b7f3b" if self.fits else "#b00020"
        return (f'<table class="atscale-table"><tbody>{rows}<tr><th>total</th><th>{u.fmt_bytes(self.total)}</th></tr>'
                f'</tbody></table><p style="color:{colour}">{self.verdict()}</p>')


def breakdown(model: models.TransformerConfig, accelerator="H100 SXM", plan: Plan | None = None, *,
              seq_length=None, optimizer_name: str = "adam-mixed", flash_attention: bool = False,
              dtype: str = "bf16", **layout) -> Breakdown:
    """Per-GPU memory of training ``model`` laid out as ``plan`` (a :class:`~atscale.plan.Plan`):
    model state (:func:`model_state_bytes`) plus the activations of the first pipeline stage,
    the one holding the most micro-batches (:func:`activation_bytes_per_layer` × layers per stage
    × :func:`in_flight_micro_batches`). Layers that do not divide by ``pp`` are split as the step-time model
    splits them (:func:`atscale.parallelism.stage_layers`, with the plan's accounting of the embedding and
    the loss); where that leaves the first stage a layer short, the fuller stage 1 is counted if it holds more.

    A mixture of experts with expert parallelism (``ep > 1``, or an ``expert_tp`` other than ``tp``): the routed
    experts' state is split by ``expert_tp x ep`` and sharded over the experts' data-parallel group, as the
    step-time model counts it (:func:`_expert_parallel_state`).

    Instead of ``plan``, its fields may be given as keywords (``tp=8, pp=4, dp=32, zero_stage=1,
    ...``); they are checked as a ``Plan`` is. ``breakdown(model, acc, RUNNING_EXAMPLE.plan)``
    gives the running example.

    ``dtype``: the step's matmul precision (one of :data:`atscale.hardware.DTYPES`); an ``"fp8"`` step stores what
    the plan's :attr:`~atscale.plan.Plan.fp8_cache` keeps in FP8 (:func:`fp8_cache_savings`).

    The capacity is the accelerator's :attr:`~atscale.hardware.Accelerator.usable_memory`: the
    bytes CUDA reports (84.9e9 on an H100 "80 GB", a little below the driver's 85.5e9), because
    that, not the marketing figure, is the ceiling an allocation hits.

    Not counted: the embedding and output layers' activations, temporary buffers (the largest
    is the logits of the output layer, :func:`logits_bytes`), the CUDA context and
    fragmentation, which together typically take a few GB. ``fits`` is therefore optimistic
    at the margin. ``optimizer_name`` defaults to the ZeRO paper's 16-byte layout; the running
    example uses :data:`RUNNING_EXAMPLE_OPTIMIZER`.
    """
    model = _model(model)
    seq_length = None if seq_length is None else v.count("seq_length", seq_length, unit="tokens")
    if plan is None:
        plan = Plan(**layout)
    elif layout:
        raise ValueError(f"give either plan or its fields, not both (got plan and {sorted(layout)})")
    elif not isinstance(plan, Plan):
        raise ValueError(f"plan={v.show(plan)} must be an atscale.plan.Plan")
    acc = hardware.accelerator_arg("accelerator", accelerator)
    v.choice("dtype", dtype, hardware.DTYPES)
    if plan.tp > 1 and (model.num_heads % plan.tp or model.kv_heads % plan.tp):
        raise ValueError(f"tp={plan.tp} must divide num_heads={model.num_heads} and num_kv_heads={model.kv_heads}")
    if plan.ep > 1 or (model.is_moe and plan.etp != plan.tp):
        state = _expert_parallel_state(model, optimizer_name, plan)
    else:
        state = model_state_bytes(model, optimizer_name, zero_stage=plan.zero_stage, dp=plan.dp, tp=plan.tp,
                                  pp=plan.pp)
    per_layer = activation_bytes_per_layer(model, plan.micro_batch, seq_length, tp=plan.tp,
                                           sequence_parallel=plan.sequence_parallel, recompute=plan.recompute,
                                           flash_attention=flash_attention, recompute_modules=plan.recompute_modules,
                                           fp8_cache=plan.fp8_cache if dtype == "fp8" else "none")
    acts = per_layer * _peak_stage_layer_batches(model, plan)
    label = f"{model.name} on {acc.name}, {plan.describe()}, micro-batch {plan.micro_batch}"
    return Breakdown(state.weights, state.gradients, state.optimizer, float(acts), acc.usable_memory, label,
                     model=model.name, plan=plan)


def _expert_parallel_state(model: models.TransformerConfig, optimizer_name: str, plan: Plan) -> ModelState:
    """Model state per GPU with expert parallelism (``plan.ep > 1``), as the step-time model counts it: the dense
    weights (attention, norms, embeddings, dense and shared MLPs, routers) split by ``tp`` and ZeRO-sharded over
    ``dp``, as :func:`model_state_bytes` does; the routed experts split by ``expert_tp x ep`` (each GPU holds
    ``E / ep`` experts, ``1 / expert_tp`` of each) and ZeRO-sharded over the experts' data-parallel group of
    ``tp cp dp / (expert_tp ep)`` GPUs (Megatron-Core's expert data parallelism; :mod:`atscale.plan`). Both on the
    fullest pipeline stage."""
    if not model.is_moe:
        raise ValueError(f"ep={plan.ep}: {model.name} has no experts (expert parallelism needs a mixture of experts)")
    if model.num_experts % plan.ep:
        raise ValueError(f"ep={plan.ep} must divide the {model.num_experts} routed experts of {model.name}")
    share = _stage_share(model, plan.pp)
    routed = float(model.routed_expert_params)
    dense = float(model.num_params) - routed
    group = plan.tp * plan.cp * plan.dp // (plan.etp * plan.ep)
    d = model_state_bytes(dense * share, optimizer_name, zero_stage=plan.zero_stage, dp=plan.dp, tp=plan.tp)
    e = model_state_bytes(routed * share / (plan.etp * plan.ep), optimizer_name, zero_stage=plan.zero_stage,
                          dp=group)
    return ModelState(d.weights + e.weights, d.gradients + e.gradients, d.optimizer + e.optimizer)


def _peak_stage_layer_batches(model: models.TransformerConfig, plan: Plan) -> float:
    """Layers x micro-batches in flight of the stage holding the most activations: the first (the most in flight)
    or, where an uneven split (:func:`atscale.parallelism.stage_layers`, the plan's accounting of the embedding
    and loss) gives it fewer layers, the fullest middle stage, stage 1. Even splits: the first stage's."""
    if plan.pp == 1:
        return model.num_layers * in_flight_micro_batches(1, virtual_stages=plan.virtual_stages)
    sl = stage_layers(model.num_layers, plan.pp, plan.virtual_stages,
                      account_for_embedding=plan.account_for_embedding, account_for_loss=plan.account_for_loss)
    first = sl.first * in_flight_micro_batches(plan.pp, virtual_stages=plan.virtual_stages)
    middle = sl.middle * in_flight_micro_batches(plan.pp, stage=1, virtual_stages=plan.virtual_stages)
    return float(max(first, middle if plan.pp > 2 else 0.0))


def max_micro_batch(model: models.TransformerConfig, accelerator="H100 SXM", plan: Plan | None = None, *,
                    limit: int = 4096, **kwargs) -> int:
    """The largest micro-batch whose :func:`breakdown` fits (0 if even the model state does not fit).

    ``plan`` (or its fields as keywords) gives the rest of the layout; its micro-batch is ignored.
    """
    model = _model(model)
    limit = v.count("limit", limit)
    layout = {k: kwargs.pop(k) for k in list(kwargs) if k in Plan.__dataclass_fields__}
    if plan is not None and layout:
        raise ValueError(f"give either plan or its fields, not both (got plan and {sorted(layout)})")
    base = (plan if plan is not None else Plan(**layout)).with_micro_batch(1)

    def fits(b):
        return breakdown(model, accelerator, base.with_micro_batch(b), **kwargs).fits

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and fits(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def min_gpus_for_state(model_or_params, accelerator="H100 SXM", optimizer_name: str = "adam-mixed") -> int:
    """The fewest GPUs whose memory can hold the model state when it is fully sharded
    (ZeRO-3), before any activation: ``ceil(total bytes / usable bytes per GPU)``, with the
    accelerator's :attr:`~atscale.hardware.Accelerator.usable_memory` (for an H100, CUDA's 84.9e9
    bytes: a 1T model needs 189, not the 200 that "16 TB / 80 GB" suggests)."""
    acc = hardware.accelerator_arg("accelerator", accelerator)
    total = optimizer(optimizer_name).total * _params(model_or_params)
    gpus = np.ceil(np.asarray(total, dtype=float) / acc.usable_memory)
    return int(gpus) if gpus.ndim == 0 else gpus.astype(np.int64)


def logits_bytes(model: models.TransformerConfig, micro_batch, seq_length=None, *, tp: int = 1,
                 bytes_per_value: float = 4.0):
    """Bytes of the output layer's logits for one micro-batch on one GPU: ``s · b · V · 4 / t``.

    The output layer turns every token's hidden state into ``V`` vocabulary scores; the loss's
    softmax is computed on them in FP32 (4 bytes) for stability, so they are the largest single
    temporary of a step, on the last pipeline stage. Megatron's vocabulary-parallel output layer
    and cross-entropy split them over the ``t`` tensor-parallel ranks (Shoeybi et al. 2019,
    sec. 3). Not included in :func:`breakdown`. Returns bytes; ``micro_batch`` may be an array.
    """
    model = _model(model)
    tp = _degree("tp", tp)
    s = v.count("seq_length", model.seq_length if seq_length is None else seq_length, scalar=False)
    b = np.asarray(v.count("micro_batch", micro_batch, scalar=False), dtype=float)
    b, s = v.broadcast(micro_batch=b, seq_length=s)
    bytes_per_value = v.positive("bytes_per_value", bytes_per_value, scalar=True, high=64, unit="bytes")
    return as_scalar(np.asarray(s, dtype=float) * b * model.vocab_size * bytes_per_value / tp)


def checkpoint_bytes(model_or_params, optimizer_name: str = "adam-mixed", *, weights_only: bool = False) -> float:
    """Bytes a training checkpoint must persist.

    Full (to resume training): the optimizer layout's ``checkpoint`` bytes per parameter. For
    mixed-precision Adam that is 14, the BF16 weights, FP32 master weights and both moments, as
    Megatron-LM and DeepSpeed write it; the floor is 12, since the BF16 weights are a rounding of
    the FP32 master (gradients are recomputed, never saved).
    ``weights_only=True``: the 2-byte BF16 weights a model release needs.
    Llama 3 70B: 70.55e9 × 14 = 987.8 GB; the source tutorial's 988.4 GB is 14 bytes × a rounded 70.6B.
    """
    v.flag("weights_only", weights_only)
    per_param = optimizer(optimizer_name).weights if weights_only else optimizer(optimizer_name).checkpoint
    return as_scalar(per_param * _params(model_or_params))
