"""The roofline: is an operation limited by arithmetic or by memory traffic?

A kernel that performs ``F`` floating-point operations while moving ``Q`` bytes
between HBM and the chip has *arithmetic intensity* ``I = F / Q`` (FLOP/byte).
On a machine with peak compute ``π`` (FLOP/s) and memory bandwidth ``β`` (bytes/s)
it cannot run faster than ``min(π, β I)`` (Williams, Waterman & Patterson 2009). The
two roofs meet at the *ridge point* ``π / β``: below it a kernel is memory-bound,
above it compute-bound.

The module reads like the chapter: roofs and ridge points first, then the
intensity of the operations a transformer runs, then time bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from . import hardware, models
from . import _validate as v
from ._numeric import as_scalar
from .tables import readable

__all__ = [
    "Roof", "roof", "ridge_point", "attainable_flops", "Op", "matmul", "elementwise",
    "SWIGLU_FLOPS_PER_ELEMENT", "ROPE_FLOPS_PER_ELEMENT", "LAYER_NORM_FLOPS_PER_ELEMENT", "layer_norm",
    "attention_scores", "ADAM_FLOPS_PER_PARAM", "ADAM_BYTES_PER_PARAM", "adam_update", "layer_ops", "GEMM_OPS",
    "critical_tokens", "TimeBound", "time_bound", "Placement", "place", "LayerTime", "layer_time",
    "MEASUREMENTS", "REPEATED", "MeasuredRoofline", "measured_roofline", "RooflineCheck", "CEILINGS", "roofline_check",
]


# --------------------------------------------------------------------------------------
# Roofs
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Roof:
    """A two-parameter machine: peak compute ``peak`` (FLOP/s) and memory bandwidth
    ``bandwidth`` (bytes/s). Use it for machines outside the GPU catalog (a CPU) or for
    what-ifs; :func:`roof` builds one from a catalog accelerator."""

    peak: float
    bandwidth: float
    name: str = ""

    def __post_init__(self):
        object.__setattr__(self, "peak", v.positive("peak", self.peak, scalar=True, unit="FLOP/s"))
        object.__setattr__(self, "bandwidth", v.positive("bandwidth", self.bandwidth, scalar=True, unit="bytes/s"))

    @property
    def ridge_point(self) -> float:
        """``peak / bandwidth`` in FLOP/byte."""
        return self.peak / self.bandwidth

    def __repr__(self):
        return (f"Roof({self.name or 'unnamed'}: peak {self.peak / 1e12:,.4g} TFLOP/s, "
                f"bandwidth {self.bandwidth / 1e12:,.4g} TB/s, ridge {self.ridge_point:,.3g} FLOP/B)")


def roof(accelerator, dtype: str = "bf16", *, measured: bool = False) -> Roof:
    """The roof of a catalog accelerator for ``dtype``.

    ``measured=True`` uses the published achievable matmul FLOP/s instead of the
    datasheet's dense peak (``ValueError`` if none is published). ``accelerator`` may be a
    name, an :class:`~atscale.hardware.Accelerator` or a :class:`Roof` (returned as is).
    """
    if isinstance(accelerator, Roof):
        return accelerator
    v.flag("measured", measured)
    acc = hardware.accelerator_arg("accelerator", accelerator)
    if measured:
        value = acc.measured(dtype)
        if value is None:
            raise ValueError(f"no measured {dtype} matmul rate is published for {acc.name}; "
                             f"measured ones: {[a.name for a in hardware.ACCELERATORS.values() if dtype in a.measured_matmul_flops]}")
        return Roof(value, acc.hbm_bandwidth, f"{acc.name} (measured matmul)")
    return Roof(acc.peak(dtype), acc.hbm_bandwidth, acc.name)


def ridge_point(accelerator, dtype: str = "bf16", *, measured: bool = False) -> float:
    """Arithmetic intensity (FLOP/byte) at which the compute and memory roofs meet: ``π / β``.

    Source: Williams, Waterman & Patterson (2009), Fig. 1. The classic misreading: using the
    sparse tensor-core peak, which doubles the ridge point. H100 SXM, dense BF16:
    989.4e12 / 3.35e12 = 295 FLOP/byte.
    """
    return roof(accelerator, dtype, measured=measured).ridge_point


def attainable_flops(accelerator, intensity, dtype: str = "bf16", *, measured: bool = False):
    """Attainable FLOP/s at ``intensity`` (FLOP/byte): ``min(π, β · I)``. Vectorised.

    Source: Williams, Waterman & Patterson (2009), eq. 1. With ``measured=True`` the flat
    roof is the measured matmul ceiling rather than the datasheet peak.
    """
    r = roof(accelerator, dtype, measured=measured)
    intensity = v.nonnegative("intensity", intensity, allow_inf=True, unit="FLOP/byte")
    result = np.minimum(r.peak, r.bandwidth * intensity)
    return as_scalar(result)


# --------------------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    """An operation's work and traffic: ``flops`` (FLOP) and ``bytes`` moved to/from HBM.

    Both may be arrays (a sweep); ``intensity`` broadcasts.
    """

    name: str
    flops: float | np.ndarray
    bytes: float | np.ndarray

    def __post_init__(self):
        flops = v.nonnegative("flops", self.flops, unit="FLOP")
        traffic = v.positive("bytes", self.bytes, unit="bytes moved; an op that moves none has no intensity")
        v.broadcast(flops=flops, bytes=traffic)
        object.__setattr__(self, "flops", flops)
        object.__setattr__(self, "bytes", traffic)

    @property
    def intensity(self):
        """FLOP per byte of HBM traffic."""
        return self.flops / self.bytes

    def __repr__(self):
        if np.ndim(self.flops) or np.ndim(self.bytes):
            return f"Op({self.name!r}, <arrays of shape {np.broadcast(self.flops, self.bytes).shape}>)"
        return f"Op({self.name!r}, flops={self.flops:.4g}, bytes={self.bytes:.4g}, intensity={self.intensity:.3g} FLOP/B)"


def _positive(**values):
    checked = [v.positive(name, value) for name, value in values.items()]
    return v.broadcast(**dict(zip(values, checked)))


def _counts(**values):
    """Whole numbers >= 1 (sequences, heads, tokens: half a head is not a head), broadcast together."""
    checked = [v.count(name, value, scalar=False) for name, value in values.items()]
    return v.broadcast(**dict(zip(values, checked)))


def matmul(m, n, k, bytes_per_element: float = 2.0, name: str = "matmul") -> Op:
    """``C[m, n] = A[m, k] @ B[k, n]``: ``2 m n k`` FLOPs over reading A and B and writing C once.

    ``bytes = (m k + k n + m n) · bytes_per_element``: the ideal traffic of a kernel that
    keeps its tiles on chip (large matmuls come close). Intensity grows with the smallest
    dimension: for ``m = n = k``, ``I = 2 m / (3 · bytes_per_element)``. Vectorised.
    """
    v.positive("bytes_per_element", bytes_per_element, high=64, unit="bytes")
    m, n, k, bytes_per_element = (np.asarray(x, dtype=float) for x in
                                  _positive(m=m, n=n, k=k, bytes_per_element=bytes_per_element))
    flops = 2 * m * n * k
    traffic = (m * k + k * n + m * n) * bytes_per_element
    return Op(name, as_scalar(flops), as_scalar(traffic))


def elementwise(elements, *, reads: int = 2, writes: int = 1, flops_per_element: float = 1.0,
                bytes_per_element: float = 2.0, name: str = "elementwise") -> Op:
    """An elementwise kernel over ``elements`` values: each reads ``reads`` operands and
    writes ``writes`` results, doing ``flops_per_element`` FLOPs.

    ``x[i] += y[i]`` in FP64 is ``reads=2, writes=1, flops_per_element=1, bytes_per_element=8``:
    1 FLOP per 24 bytes (Williams et al. 2009 use it as their example). Intensity does not
    depend on size: no amount of data makes an elementwise op compute-bound.
    """
    _positive(elements=elements, bytes_per_element=bytes_per_element)
    reads, writes = v.count("reads", reads, low=0), v.count("writes", writes, low=0)
    if reads + writes == 0:
        raise ValueError(f"reads={reads!r} and writes={writes!r} must be >= 0, not both 0")
    flops_per_element = v.nonnegative("flops_per_element", flops_per_element, unit="FLOP")
    elements = np.asarray(elements, dtype=float)
    return Op(name, as_scalar(flops_per_element * elements), as_scalar((reads + writes) * bytes_per_element * elements))


SWIGLU_FLOPS_PER_ELEMENT = 5.0
"""FLOPs per element of the SwiGLU product ``silu(gate) · up``: ``silu(x) = x · sigmoid(x)``
is about 4 (negate, exponential, add, divide, then the multiply by ``x``, counting the
exponential as one) and the product with ``up`` is 1. Shazeer (2020), eq. 6."""
ROPE_FLOPS_PER_ELEMENT = 3.0
"""FLOPs per element of rotary position embeddings: each pair ``(x₁, x₂)`` becomes
``(x₁ cos θ − x₂ sin θ, x₁ sin θ + x₂ cos θ)``, 6 FLOPs per 2 elements. Su et al. (2021), eq. 34."""

LAYER_NORM_FLOPS_PER_ELEMENT = 8.0
"""FLOPs per element of a LayerNorm forward pass: mean (1), variance (3: subtract, square,
accumulate), normalise (2), scale and shift (2). An RMSNorm does about 5."""


def layer_norm(tokens, hidden, bytes_per_element: float = 2.0) -> Op:
    """A LayerNorm over ``tokens`` vectors of width ``hidden``: read x, write y (the
    ``2 h`` parameters are negligible); :data:`LAYER_NORM_FLOPS_PER_ELEMENT` FLOPs each.
    Intensity ``8 / (2 · bytes)`` = 2 FLOP/byte in BF16, whatever the size."""
    _positive(tokens=tokens, hidden=hidden, bytes_per_element=bytes_per_element)
    op = elementwise(np.asarray(tokens, dtype=float) * np.asarray(hidden, dtype=float), reads=1, writes=1,
                     flops_per_element=LAYER_NORM_FLOPS_PER_ELEMENT, bytes_per_element=bytes_per_element)
    return Op("layer norm", op.flops, op.bytes)


def attention_scores(batch, heads, seq_length, head_dim, bytes_per_element: float = 2.0, *,
                     fused: bool = False, kv_heads=None) -> Op:
    """The attention core ``softmax(Q Kᵀ / √d) V`` for ``batch × heads`` query heads.

    FLOPs: ``4 b a s² d`` (``Q Kᵀ`` and ``P V``, 2 FLOPs per multiply-add; the softmax's
    ~5 FLOPs per score are counted too). Traffic, with ``g = kv_heads`` key/value heads
    (grouped-query attention, Ainslie et al. 2023: ``a / g`` query heads share each K and V;
    default ``g = a``, multi-head attention):

    * **naive** (three kernels): read Q, K; write the ``s × s`` scores; the softmax reads and
      writes them; ``P V`` reads them and V and writes O: ``(2 a s d + 2 g s d + 4 a s²) b``
      elements.
    * **fused** (FlashAttention; Dao et al. 2022, sec. 3.2): scores stay on chip; read Q
      (``a`` heads), K and V (``g`` heads each), write O (``a`` heads): ``2 (a + g) s d b``
      elements. Each K/V tile is read once per group of query heads that shares it, the ideal
      a GQA-aware kernel approaches.

    The classic misreading: counting K and V at all ``a`` heads for a GQA model, which
    overstates the fused kernel's traffic by ``(2a) / (a + g)`` (1.8x for Llama 3 70B).
    The naive form's intensity tends to ``d/(2·bytes)``-ish and never rises with ``s``; the
    fused form's grows like ``s``.
    """
    v.flag("fused", fused)
    if kv_heads is None:
        kv_heads = heads
    v.positive("bytes_per_element", bytes_per_element, scalar=True, high=64, unit="bytes")
    _counts(batch=batch, heads=heads, seq_length=seq_length, head_dim=head_dim, kv_heads=kv_heads)
    b, a, s, d, g = (np.asarray(x, dtype=float) for x in (batch, heads, seq_length, head_dim, kv_heads))
    if np.any(g > a):
        raise ValueError(f"kv_heads={kv_heads!r} must be <= heads={heads!r}")
    flops = b * a * (4 * s * s * d + 5 * s * s)
    elements = b * (2 * (a + g) * s * d + (0 if fused else 4 * a * s * s))
    name = "attention (fused)" if fused else "attention (naive)"
    return Op(name, as_scalar(flops), as_scalar(elements * bytes_per_element))


ADAM_FLOPS_PER_PARAM = 12.0
"""FLOPs per parameter of one Adam step: first moment (3), second moment (4), bias
corrections, square root, division and update (about 5)."""
ADAM_BYTES_PER_PARAM = 28.0
"""Bytes moved per parameter by a mixed-precision Adam step: read the FP32 master weight,
both FP32 moments and the BF16 gradient (14 bytes), write the three FP32 values and the
BF16 weight copy (14 bytes). The *state* is 16 bytes per parameter; the *traffic* is 28."""


def adam_update(params, *, flops_per_param: float = ADAM_FLOPS_PER_PARAM,
                bytes_per_param: float = ADAM_BYTES_PER_PARAM) -> Op:
    """The optimizer step over ``params`` parameters: ~12 FLOPs per ~28 bytes, 0.43 FLOP/byte.

    Source for the state layout: Rajbhandari et al. (2020), sec. 3.1 (2 + 2 + 12 bytes per
    parameter). An unfused implementation that makes several passes moves more.
    """
    v.positive("bytes_per_param", bytes_per_param, high=1e3, unit="bytes")
    flops_per_param = v.nonnegative("flops_per_param", flops_per_param, high=1e3, unit="FLOP")
    _positive(params=params, bytes_per_param=bytes_per_param, flops_per_param=np.maximum(flops_per_param, 1.0))
    p = np.asarray(params, dtype=float)
    return Op("Adam update", as_scalar(flops_per_param * p), as_scalar(bytes_per_param * p))


def layer_ops(model: models.TransformerConfig, micro_batch, seq_length=None, *,
              bytes_per_element: float = 2.0, tp: int = 1, decode: bool = False) -> dict[str, Op]:
    """The forward-pass operations of one transformer layer, by name.

    Training (``decode=False``): ``tokens = micro_batch × seq_length`` rows go through the
    QKV (multi-head latent attention: its four down- and up-projections,
    :meth:`~atscale.models.TransformerConfig.attention_projections`), output, MLP up (gate + up when gated)
    and MLP down GEMMs and the fused attention core (grouped-query: K and V at ``num_kv_heads``), plus the
    memory-bound elementwise kernels of a pre-norm block, each modelled with :func:`elementwise` as one pass over
    its operands (the traffic of a reasonably fused implementation; an unfused one moves more):

    * ``norms (x2)``: the norm before attention and the one before the MLP (:func:`layer_norm`);
    * ``RoPE``: rotary embeddings applied to Q and K, ``tokens · (a + g) d`` elements read and
      written (MLA: the rotary part only, :attr:`~atscale.models.TransformerConfig.rotary_width`; the cos/sin
      tables are small and cached); :data:`ROPE_FLOPS_PER_ELEMENT`;
    * ``SwiGLU product`` (gated MLPs only): ``silu(gate) · up`` reads two ``tokens × f``
      matrices and writes one; :data:`SWIGLU_FLOPS_PER_ELEMENT`;
    * ``residual adds (x2)``: ``x + attn(x)`` and ``x + mlp(x)``, each reading two
      ``tokens × h`` matrices and writing one, 1 FLOP per element.

    The backward pass runs GEMMs of the same shapes (transposed), so the same intensities
    apply; each elementwise kernel's backward reads its saved inputs and the incoming gradient
    and writes the outgoing one, roughly twice its forward traffic. Decode (``decode=True``):
    each sequence contributes one new token, and attention reads the KV cache of
    ``seq_length`` tokens (MLA: the latent cache, read once for all heads, its up-projections absorbed;
    DeepSeek-V2, sec. 2.1.2). The GEMM rows of decode with MLA stay those of training (the absorbed
    projections' shapes are not modelled).

    ``tp`` splits the GEMMs' weight matrices across tensor-parallel GPUs (Megatron-LM:
    Shoeybi et al. 2019), which shrinks their inner dimension and lowers intensity.
    """
    model = models.model_arg("model", model)
    v.flag("decode", decode)
    if seq_length is None:
        seq_length = model.seq_length
    micro_batch, seq_length = _counts(micro_batch=micro_batch, seq_length=seq_length)
    v.positive("bytes_per_element", bytes_per_element, scalar=True, high=64, unit="bytes")
    tp = v.count("tp", tp)
    if model.num_heads % tp or model.kv_heads % tp:
        raise ValueError(f"tp={tp!r} must be a positive integer dividing num_heads={model.num_heads} "
                         f"and num_kv_heads={model.kv_heads}")
    b = np.asarray(micro_batch, dtype=float)
    s = np.asarray(seq_length, dtype=float)
    tokens = b if decode else b * s
    h, o_dim = model.hidden_size, model.num_heads * model.v_head_dim
    f = model.active_ffn_size  # a mixture of experts: the experts a token visits, as one wider MLP
    up_width = (2 if model.gated_mlp else 1) * f
    bpe = bytes_per_element
    ops = {name: matmul(tokens, n, k, bpe, name) for name, n, k in model.attention_projections(tp)}
    ops.update({
        "attention output": matmul(tokens, h, o_dim / tp, bpe, "attention output"),
        "MLP up": matmul(tokens, up_width / tp, h, bpe, "MLP up"),
        "MLP down": matmul(tokens, h, f / tp, bpe, "MLP down"),
    })
    ops["attention (KV cache)" if decode else "attention (fused)"] = _attention_op(model, b, s, tp, bpe, decode)
    norms = layer_norm(2 * tokens, h, bpe)  # one before attention, one before the MLP
    ops["norms (x2)"] = Op("norms (x2)", norms.flops, norms.bytes)
    ops["RoPE"] = elementwise(tokens * model.rotary_width / tp, reads=1, writes=1,
                              flops_per_element=ROPE_FLOPS_PER_ELEMENT, bytes_per_element=bpe, name="RoPE")
    if model.gated_mlp:
        ops["SwiGLU product"] = elementwise(tokens * f / tp, reads=2, writes=1,
                                            flops_per_element=SWIGLU_FLOPS_PER_ELEMENT, bytes_per_element=bpe,
                                            name="SwiGLU product")
    ops["residual adds (x2)"] = elementwise(2 * tokens * h, reads=2, writes=1, flops_per_element=1.0,
                                            bytes_per_element=bpe, name="residual adds (x2)")
    return ops


def _attention_op(model: models.TransformerConfig, b, s, tp: int, bpe: float, decode: bool) -> Op:
    """:func:`layer_ops`' attention core: the fused kernel in training; in decode one query per sequence against
    the KV cache of ``s`` tokens (grouped-query: ``g`` KV heads), or MLA's latent cache, read once for all heads,
    the up-projections absorbed into the query and output projections (DeepSeek-V2, sec. 2.1.2)."""
    heads, mla, d = model.num_heads / tp, model.mla, model.head_dim
    if decode and mla is not None:  # each head scores the latent and its rotary key, and sums the latent
        width = mla.kv_lora_rank + mla.qk_rope_head_dim
        return Op("attention (KV cache)", as_scalar(b * heads * 2 * s * (width + mla.kv_lora_rank)),
                  as_scalar(b * s * width * bpe))
    if decode:
        return Op("attention (KV cache)", as_scalar(b * heads * 4 * s * d),
                  as_scalar(b * (model.kv_heads / tp) * 2 * s * d * bpe))
    # the head width of the attention's FLOPs, (d_qk + d_v) / 2: d, or MLA's (192 + 128) / 2
    return attention_scores(b, heads, s, model.attention_width / model.num_heads, bpe, fused=True,
                            kv_heads=model.kv_heads / tp)


GEMM_OPS = ("QKV projection", "attention output", "MLP up", "MLP down")
"""Names of the four weight GEMMs among :func:`layer_ops`'s operations (a model with multi-head latent attention
has its four input projections instead of the QKV projection:
:meth:`~atscale.models.TransformerConfig.attention_projections`)."""


def critical_tokens(k, n, ridge, bytes_per_element: float = 2.0):
    """Rows ``m`` at which a matmul ``[m, k] @ [k, n]`` reaches intensity ``ridge``.

    Solving ``2 m k n / (bpe (m k + k n + m n)) = ridge`` for ``m``:
    ``m* = ridge · bpe · k n / (2 k n - ridge · bpe (k + n))``. If the denominator is not
    positive, no ``m`` is enough (the weights alone are too small): returns ``inf``.
    Units: rows (tokens, for a transformer GEMM). Vectorised.
    """
    k, n, ridge, bytes_per_element = _positive(k=k, n=n, ridge=ridge, bytes_per_element=bytes_per_element)
    denominator = 2 * k * n - ridge * bytes_per_element * (k + n)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(denominator > 0, ridge * bytes_per_element * k * n / denominator, np.inf)
    return as_scalar(result)


# --------------------------------------------------------------------------------------
# Time bounds
# --------------------------------------------------------------------------------------
@readable("Time bound")
@dataclass(frozen=True)
class TimeBound:
    """Lower bounds on an operation's run time (seconds).

    ``math``: FLOPs / peak; ``memory``: bytes / bandwidth. If the two overlap perfectly the
    time is ``overlapped = max(math, memory)``; if they do not overlap at all it is
    ``serial = math + memory``. Real kernels lie between. ``bound`` names the larger term.
    """

    op: str
    math: float | np.ndarray
    memory: float | np.ndarray

    @property
    def overlapped(self):
        return np.maximum(self.math, self.memory)

    @property
    def serial(self):
        return self.math + self.memory

    @property
    def bound(self):
        if np.ndim(self.math) or np.ndim(self.memory):
            return np.where(np.asarray(self.math) >= np.asarray(self.memory), "compute", "memory")
        return "compute" if self.math >= self.memory else "memory"

    def __repr__(self):
        if np.ndim(self.math) or np.ndim(self.memory):
            return f"TimeBound({self.op!r}, <arrays>)"
        return (f"TimeBound({self.op!r}: math {self.math * 1e6:.2f} µs, memory {self.memory * 1e6:.2f} µs "
                f"-> {self.bound}-bound, {self.overlapped * 1e6:.2f}-{self.serial * 1e6:.2f} µs)")


def time_bound(op: Op, accelerator, dtype: str = "bf16", *, measured: bool = False) -> TimeBound:
    """Time bounds of ``op`` on ``accelerator``: ``max(F/π, Q/β)`` and ``F/π + Q/β``."""
    if not isinstance(op, Op):
        raise ValueError(f"op={v.show(op)} must be an atscale.roofline.Op")
    r = roof(accelerator, dtype, measured=measured)
    return TimeBound(op.name, as_scalar(np.asarray(op.flops) / r.peak), as_scalar(np.asarray(op.bytes) / r.bandwidth))


@dataclass(frozen=True)
class Placement:
    """Where one (scalar) operation lands on one accelerator's roofline, as :func:`place` computes it.

    ``op``: the :class:`Op`; ``dtype``: the data type of the compute roof; ``roof``: the datasheet
    roof (dense peak, FLOP/s; HBM bandwidth, bytes/s); ``measured``: the roof with the published
    measured matmul rate as its flat part, or ``None`` where none is published; ``time``: the
    :class:`TimeBound` on the datasheet roof (seconds).
    """

    op: Op
    dtype: str
    roof: Roof
    measured: Roof | None
    time: TimeBound

    @property
    def intensity(self) -> float:
        """The op's arithmetic intensity (FLOP/byte)."""
        return float(self.op.intensity)

    @property
    def attainable(self) -> float:
        """Attainable FLOP/s on the datasheet roof, ``min(π, β · I)`` (Williams, Waterman & Patterson
        2009, eq. 1)."""
        return float(min(self.roof.peak, self.roof.bandwidth * self.intensity))

    @property
    def bound(self) -> str:
        """``"compute"`` or ``"memory"``: the larger term of :attr:`time`."""
        return self.time.bound


def place(op: Op, accelerator, dtype: str = "bf16") -> Placement:
    """Place a scalar ``op`` on ``accelerator``'s roofline for ``dtype``: the datasheet roof, the
    measured matmul roof where one is published, the time bounds and the attainable rate
    (:class:`Placement`). ``accelerator``: a catalog name, an :class:`~atscale.hardware.Accelerator`
    or a :class:`Roof` (a what-if; it has no measured roof). Sources as :func:`attainable_flops` and
    :func:`time_bound`."""
    if not isinstance(op, Op):
        raise ValueError(f"op={v.show(op)} must be an atscale.roofline.Op")
    if np.ndim(op.flops) or np.ndim(op.bytes):
        raise ValueError(f"op {op.name!r} has array sizes; place() takes a scalar op")
    peak_roof = roof(accelerator, dtype)
    measured = None
    if not isinstance(accelerator, Roof) and hardware.accelerator_arg("accelerator", accelerator).measured(dtype):
        measured = roof(accelerator, dtype, measured=True)
    return Placement(op, dtype, peak_roof, measured, time_bound(op, peak_roof))


@readable("Layer time")
@dataclass(frozen=True)
class LayerTime:
    """Time bounds of a sequence of operations (one layer), each run as its own kernel.

    ``overlapped`` sums each op's ``max(math, memory)`` (perfect overlap inside every kernel,
    none between kernels); ``serial`` sums ``math + memory``. ``memory_bound_share`` is the
    fraction of the overlapped time spent in memory-bound ops.
    """

    ops: tuple[TimeBound, ...]

    @property
    def overlapped(self) -> float:
        return as_scalar(sum(b.overlapped for b in self.ops))

    @property
    def serial(self) -> float:
        return as_scalar(sum(b.serial for b in self.ops))

    @property
    def memory_bound_share(self) -> float:
        memory = sum(np.where(np.asarray(b.math) >= np.asarray(b.memory), 0.0, b.overlapped) for b in self.ops)
        return as_scalar(memory / self.overlapped)

    def __repr__(self):
        if np.ndim(self.overlapped):
            return f"LayerTime({len(self.ops)} ops, <arrays of shape {np.shape(self.overlapped)}>)"
        return (f"LayerTime({len(self.ops)} ops: {self.overlapped * 1e3:.3f}-{self.serial * 1e3:.3f} ms, "
                f"{self.memory_bound_share:.0%} of it memory-bound)")


def layer_time(ops: dict[str, Op], accelerator, dtype: str = "bf16", *, measured: bool = False) -> LayerTime:
    """Time bounds of the ops of :func:`layer_ops` on ``accelerator`` (each op's flops and bytes may be
    arrays of one shape, e.g. over micro-batches: the totals are then arrays)."""
    if not isinstance(ops, dict) or not ops or not all(isinstance(op, Op) for op in ops.values()):
        raise ValueError(f"ops={v.show(ops)} must be a non-empty dict of atscale.roofline.Op (as layer_ops returns)")
    try:
        np.broadcast_shapes(*(np.shape(x) for op in ops.values() for x in (op.flops, op.bytes)))
    except ValueError:
        shapes = ", ".join(f"{k!r} {np.shape(op.flops)}" for k, op in ops.items())
        raise ValueError(f"ops: the shapes of their flops ({shapes})"[:200] + " do not broadcast together; give ops "
                         "of one shape (scalars, or arrays over the same values)") from None
    return LayerTime(tuple(time_bound(op, accelerator, dtype, measured=measured) for op in ops.values()))


# --------------------------------------------------------------------------------------
# The book's own measurement (one NVIDIA H200): calibration roofs and a validation sweep
# --------------------------------------------------------------------------------------
MEASUREMENTS = MappingProxyType({"H200 SXM": "roofline-nvidia-h200", "H100 SXM": "roofline-nvidia-h100-80gb-hbm3"})
"""Catalog accelerator -> stem of its measurement files in ``atscale/data`` (``.csv.gz``: one row
per timed repetition; ``.json``: provenance). Written by the book's measurement script,
``tools/measure-roofline.py``: on an H200 (November 2026, five passes), and on a lent H100 80GB HBM3
(SXM; November 2026, three passes); a second run of the same script on the same machine, a minute
later, is stored as ``<stem>-repeat`` (:func:`measured_roofline` with ``repeat=True``; the H200 only,
:data:`REPEATED`)."""

REPEATED = ("H200 SXM",)
"""The accelerators of :data:`MEASUREMENTS` whose measurement was repeated (``<stem>-repeat``)."""


@readable("Measured roofline")
@dataclass(frozen=True, eq=False)
class MeasuredRoofline:
    """One GPU's measured roofline: calibration ceilings and a validation sweep (SI units).

    **Calibration** (sets the roofs; never compared with the model):

    * ``copy_bandwidth`` (bytes/s): device-to-device copy, bytes read + bytes written over the
      median time, best over buffers of 1-8 GiB. This is the measured memory roof.
    * ``read_bandwidth``, ``write_bandwidth`` (bytes/s): a sum over the buffer (read once;
      best of a bf16 and an fp32 view) and a fill (written once), best over buffer sizes.
    * ``matmul_flops`` (FLOP/s): ``2 s³`` over the median time of a square bf16 GEMM, best over
      ``s`` in ``square_sizes``: the measured compute roof, the same best-shape rule as
      Bekman's matmul shape search (``hardware``'s ``measured_matmul_flops``).
    * ``square_sizes`` (elements), ``square_flops_per_s`` (FLOP/s, L2 flushed before each
      repetition) and ``square_flops_per_s_back_to_back`` (FLOP/s, no flush: sustained).

    **Validation** (the GEMM sweep the roofline model is tested on): ``C[m, n] = A[m, k] @ B[k, n]``
    with ``n = k = sweep_n = sweep_k``; ``sweep_m`` (rows), ``sweep_flops`` (FLOP, ``2 m n k``),
    ``sweep_bytes`` (bytes, ``2 (m k + k n + m n)``: each bf16 operand once), ``sweep_time``
    (s, median over every repetition of every pass) and ``sweep_pass_spread`` (dimensionless:
    ``(max − min) / median`` of the per-pass medians, the run's own noise).

    ``provenance``: the script's metadata (GPU, driver, PyTorch/CUDA/cuBLAS versions, date,
    method, ``nvidia-smi`` clock/power samples per phase), read-only. Arrays are read-only.
    """

    accelerator: str
    gpu: str
    date: str
    copy_bandwidth: float
    read_bandwidth: float
    write_bandwidth: float
    matmul_flops: float
    square_sizes: np.ndarray
    square_flops_per_s: np.ndarray
    square_flops_per_s_back_to_back: np.ndarray
    sweep_m: np.ndarray
    sweep_n: int
    sweep_k: int
    sweep_flops: np.ndarray
    sweep_bytes: np.ndarray
    sweep_time: np.ndarray
    sweep_pass_spread: np.ndarray
    provenance: Mapping

    @property
    def roof(self) -> Roof:
        """The measured roof: ``matmul_flops`` over ``copy_bandwidth``."""
        return Roof(self.matmul_flops, self.copy_bandwidth, f"{self.accelerator} (measured)")

    @property
    def sweep_intensity(self) -> np.ndarray:
        """Arithmetic intensity of each sweep GEMM, FLOP/byte (``sweep_flops / sweep_bytes``)."""
        return self.sweep_flops / self.sweep_bytes

    @property
    def sweep_flops_per_s(self) -> np.ndarray:
        """Achieved FLOP/s of each sweep GEMM (``sweep_flops / sweep_time``)."""
        return self.sweep_flops / self.sweep_time

    @property
    def sweep_bytes_per_s(self) -> np.ndarray:
        """Achieved traffic rate of each sweep GEMM, bytes/s (``sweep_bytes / sweep_time``)."""
        return self.sweep_bytes / self.sweep_time

    @property
    def sweep_knee(self) -> float:
        """Where the *measured* sweep turns from flat to rising, in rows (tokens), from the sweep alone.

        The intersection of its two measured asymptotes: the fastest time any sweep GEMM took
        (the weights streamed once, the memory-bound floor) and the compute line
        ``2 m n k / P``, ``P`` the best FLOP/s any sweep GEMM achieved:
        ``m_knee = t_min · P / (2 n k)``. Compare it with the model's :func:`critical_tokens`.
        It uses no datasheet figure and no calibration ceiling.
        """
        return float(self.sweep_time.min() * self.sweep_flops_per_s.max() / (2.0 * self.sweep_n * self.sweep_k))

    def sampled(self, field: str, phase: str) -> float:
        """Median over the passes of ``phase`` ('memory', 'square' or 'sweep') of an ``nvidia-smi``
        reading sampled during the run: ``'clocks.sm'`` (MHz), ``'clocks.mem'`` (MHz),
        ``'power.draw'`` (W), ``'temperature.gpu'`` (°C). ``ValueError`` if it was not sampled."""
        phases = self.provenance.get("nvidia_smi_during_run") or {}
        values = [stats[field]["median"] for name, stats in phases.items()
                  if name.startswith(f"{phase} pass") and field in stats]
        if not values:
            raise ValueError(f"field={field!r} phase={phase!r}: not sampled; sampled phases "
                             f"{sorted({n.split(' pass')[0] for n in phases})}, fields "
                             f"{sorted({f for s in phases.values() for f in s})}")
        return float(np.median(values))

    def smi(self, field: str) -> float:
        """A static ``nvidia-smi`` reading with a unit, as a number: ``'clocks.max.sm'`` (MHz),
        ``'power.limit'`` (W), ``'clocks.max.mem'`` (MHz), ... ``ValueError`` if absent."""
        text = (self.provenance.get("nvidia_smi") or {}).get(field)
        try:
            return float(str(text).split()[0])
        except (ValueError, IndexError):
            raise ValueError(f"field={field!r}: no numeric nvidia-smi reading ({text!r})") from None

    def __repr__(self):
        return (f"MeasuredRoofline({self.gpu}, {self.date}: copy {self.copy_bandwidth / 1e12:.3f} TB/s, "
                f"matmul {self.matmul_flops / 1e12:.1f} TFLOP/s, sweep of {self.sweep_m.size} GEMMs "
                f"n = k = {self.sweep_n})")


def _read_only(values, dtype=float) -> np.ndarray:
    arr = np.array(values, dtype=dtype)
    arr.setflags(write=False)
    return arr


_MEASURED_CACHE: dict = {}


def measured_roofline(accelerator="H200 SXM", *, repeat: bool = False) -> MeasuredRoofline:
    """The book's measured roofline of ``accelerator`` (:class:`MeasuredRoofline`), read from the
    raw timings shipped in ``atscale/data`` (lazily, on first call; cached).

    Source: this book's measurement script (``tools/measure-roofline.py``), run on one NVIDIA H200 and
    on one H100 (:data:`MEASUREMENTS`; the provenance says which driver, software and date). Each point is the median over all
    timed repetitions of all passes; CUDA events, L2 flushed before each repetition.
    ``repeat=True`` returns the second run of the same script (same machine, a minute later),
    for reproducibility checks. Only the accelerators in :data:`MEASUREMENTS` have one.
    """
    v.flag("repeat", repeat)
    name = accelerator.name if isinstance(accelerator, hardware.Accelerator) else accelerator
    if not isinstance(name, str) or name not in MEASUREMENTS:
        raise ValueError(f"accelerator={v.show(accelerator)}: no measurement shipped; measured: {tuple(MEASUREMENTS)}")
    if repeat and name not in REPEATED:
        raise ValueError(f"accelerator={v.show(accelerator)} with repeat=True: no repeated measurement shipped; "
                         f"repeated: {REPEATED}")
    key = (name, repeat)
    if key not in _MEASURED_CACHE:
        _MEASURED_CACHE[key] = _load_measurement(name, MEASUREMENTS[name] + ("-repeat" if repeat else ""))
    return _MEASURED_CACHE[key]


def _load_measurement(accelerator: str, stem: str) -> MeasuredRoofline:
    import csv
    import gzip
    import json
    from importlib.resources import files

    data = files("atscale") / "data"
    meta = json.loads((data / f"{stem}.json").read_text())
    groups: dict = {}  # (experiment, size key) -> {pass: [times]}, plus the row's counts
    with (data / f"{stem}.csv.gz").open("rb") as raw, gzip.open(raw, "rt", newline="") as f:
        for row in csv.DictReader(f):
            exp = row["experiment"]
            size = int(row["buffer_bytes"] or row["m"])
            entry = groups.setdefault((exp, size), {"row": row, "passes": {}})
            entry["passes"].setdefault(int(row["pass"]), []).append(float(row["time_s"]))

    def median_time(exp, size):
        times = [t for ts in groups[(exp, size)]["passes"].values() for t in ts]
        return float(np.median(times))

    def sizes(exp):
        return sorted(s for e, s in groups if e == exp)

    def best_rate(exps, counted):
        return max(float(groups[(e, s)]["row"][counted]) / median_time(e, s) for e in exps for s in sizes(e))

    square = sizes("gemm_square")
    m = sizes("gemm_sweep")
    rows = [groups[("gemm_sweep", x)]["row"] for x in m]
    n, k = {int(r["n"]) for r in rows}, {int(r["k"]) for r in rows}
    if len(n) != 1 or len(k) != 1:
        raise ValueError(f"{stem}: the sweep must hold one n and one k, found n={sorted(n)} k={sorted(k)}")
    spread = []
    for x in m:
        per_pass = [np.median(ts) for ts in groups[("gemm_sweep", x)]["passes"].values()]
        spread.append((max(per_pass) - min(per_pass)) / median_time("gemm_sweep", x))
    return MeasuredRoofline(
        accelerator=accelerator,
        gpu=meta["gpu"],
        date=meta["date_utc"],
        copy_bandwidth=best_rate(["copy"], "bytes"),
        read_bandwidth=best_rate(["read_bf16", "read_fp32"], "bytes"),
        write_bandwidth=best_rate(["write"], "bytes"),
        matmul_flops=best_rate(["gemm_square"], "flops"),
        square_sizes=_read_only(square, int),
        square_flops_per_s=_read_only([2.0 * s**3 / median_time("gemm_square", s) for s in square]),
        square_flops_per_s_back_to_back=_read_only([2.0 * s**3 / median_time("gemm_square_b2b", s) for s in square]),
        sweep_m=_read_only(m, int),
        sweep_n=n.pop(),
        sweep_k=k.pop(),
        sweep_flops=_read_only([float(r["flops"]) for r in rows]),
        sweep_bytes=_read_only([float(r["bytes"]) for r in rows]),
        sweep_time=_read_only([median_time("gemm_sweep", x) for x in m]),
        sweep_pass_spread=_read_only(spread),
        provenance=MappingProxyType(meta),
    )


@readable("Roofline check")
@dataclass(frozen=True, eq=False)
class RooflineCheck:
    """The roofline model's prediction for each GEMM of a measured sweep, against the measurement.

    ``predicted_time`` (s): ``max(F / π, Q / β)`` with the roof ``roof`` (datasheet or measured
    ceilings); ``serial_time`` (s): ``F / π + Q / β``, the no-overlap bound of :class:`TimeBound`;
    ``measured_time`` (s); ``error`` (dimensionless): ``predicted / measured − 1``,
    negative where the model is optimistic (predicts a faster kernel than ran). ``bound`` names
    the model's limiting roof per point ('compute' or 'memory'). ``model_knee`` (rows): the
    model's :func:`critical_tokens` for ``n``, ``k`` at ``roof``'s ridge; ``measured_knee`` (rows):
    :attr:`MeasuredRoofline.sweep_knee`. ``m`` (rows) and ``intensity`` (FLOP/byte) per point.
    """

    ceilings: str
    roof: Roof
    m: np.ndarray
    intensity: np.ndarray
    measured_time: np.ndarray
    predicted_time: np.ndarray
    serial_time: np.ndarray
    bound: np.ndarray
    model_knee: float
    measured_knee: float

    @property
    def error(self) -> np.ndarray:
        return self.predicted_time / self.measured_time - 1.0

    @property
    def worst(self) -> tuple[int, float]:
        """``(m, error)`` of the point where ``|error|`` is largest."""
        i = int(np.argmax(np.abs(self.error)))
        return int(self.m[i]), float(self.error[i])

    def __repr__(self):
        m, err = self.worst
        return (f"RooflineCheck({self.ceilings} ceilings: errors {self.error.min():+.1%} to {self.error.max():+.1%}, "
                f"worst {err:+.1%} at m = {m}; knee model {self.model_knee:,.0f}, measured {self.measured_knee:,.0f})")


CEILINGS = ("datasheet", "measured")
"""The two roofs :func:`roofline_check` can test: the catalog's datasheet peak and bandwidth, or the
measured ceilings (:attr:`MeasuredRoofline.roof`)."""


def roofline_check(measurement: MeasuredRoofline | None = None, ceilings: str | Roof = "measured") -> RooflineCheck:
    """Predict every GEMM of a measured sweep with the roofline model and compare (validation).

    Each point's predicted time is ``max(2 m n k / π, 2 (m k + k n + m n) / β)``
    (Williams, Waterman & Patterson 2009, eq. 1, as a time; :func:`matmul`, :func:`time_bound`),
    with ``ceilings='datasheet'`` (the catalog's dense bf16 peak and HBM bandwidth),
    ``'measured'`` (the calibration ceilings of the same run: ``matmul_flops``, ``copy_bandwidth``)
    or any :class:`Roof` (a what-if: another bandwidth, another peak; ``RooflineCheck.ceilings``
    is then the roof's name). No parameter is fitted to the sweep. Default ``measurement``: the H200's.
    """
    if not isinstance(ceilings, Roof):
        v.choice("ceilings", ceilings, CEILINGS)
    if measurement is None:
        measurement = measured_roofline()
    if not isinstance(measurement, MeasuredRoofline):
        raise ValueError(f"measurement={v.show(measurement)} must be a MeasuredRoofline (see measured_roofline)")
    if isinstance(ceilings, Roof):
        r, ceilings = ceilings, ceilings.name or "custom"
    else:
        r = roof(measurement.accelerator, "bf16") if ceilings == "datasheet" else measurement.roof
    op = matmul(measurement.sweep_m, measurement.sweep_n, measurement.sweep_k, 2.0, "sweep")
    tb = time_bound(op, r)
    return RooflineCheck(
        ceilings=ceilings, roof=r, m=measurement.sweep_m, intensity=_read_only(op.intensity),
        measured_time=measurement.sweep_time, predicted_time=_read_only(tb.overlapped),
        serial_time=_read_only(tb.serial),
        bound=np.asarray(tb.bound), model_knee=float(critical_tokens(measurement.sweep_k, measurement.sweep_n,
                                                                     r.ridge_point)),
        measured_knee=measurement.sweep_knee)
