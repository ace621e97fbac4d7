"""Kernel-level time model: a GEMM by shape, a FlashAttention call, a memory-bound kernel, a kernel's fixed cost.

The roofline (:mod:`atscale.roofline`) bounds an operation by its FLOPs and bytes; this module says what a real
kernel achieves below that bound, from measurements and published benchmarks:

* **GEMM** (:func:`gemm_seconds`): ``t = max(F / (R · E_wave · E_K), Q / B) + t_0``. ``R`` is the sustained
  large-GEMM rate, ``E_wave`` the tile- and wave-quantisation efficiency (the output is cut into tiles that run
  one per SM in waves; the last wave is partly idle: NVIDIA, *Matrix Multiplication Background User's Guide*,
  "Tile Quantization" and "Wave Quantization"), ``E_K = K / (K + K_half)`` the pipeline ramp of a tile's
  K loop (its prologue and epilogue cost as much as ``K_half`` more elements of K), ``Q / B`` the memory roof
  (Williams, Waterman & Patterson 2009) and ``t_0`` the per-kernel fixed GPU time. The BF16 constants are fitted
  on the book's own H200 measurement, the FP8 ones on a published H800 FP8 sweep (:func:`fit_gemm`).
* **Attention** (:func:`attention_seconds`): FlashAttention-2/3 at their published achieved rates as a function
  of sequence length, ``R(s) = R_max · s / (s + s_half)`` (fitted on published H100 points, :func:`fit_attention`
  and :func:`fit_attention_ramp`), cuDNN at its published ratio to FlashAttention-3 (:data:`CUDNN_OVER_FA3`),
  FlashAttention in Triton from its published ratio to FlashAttention-2, or the unfused path (two batched GEMMs
  and a softmax at the memory roof); :func:`attention_rates` sets the curves beside the published points.
* **Memory-bound kernels** (:func:`memory_bound_seconds`) at the measured memory roof, and the FP8 cast kernels
  per scaling recipe (:data:`FP8_RECIPES`, :func:`fp8_cast_bytes`); torchao's rowwise-scaled FP8 linear layer at
  torchao's published speedup over BF16 by shape (:func:`rowwise_speedup`).
* **Fixed costs**: :data:`KERNEL_GPU_SECONDS` per kernel on the GPU, :data:`HOST_SECONDS_PER_OP` per operator
  on the host for an eager framework.

The public functions validate and broadcast; the internal ``_gemm_seconds``, ``_attention_seconds`` and
``_memory_seconds`` are plain arithmetic on floats or arrays, with an ``xp`` namespace providing ``maximum``,
``minimum``, ``where``, ``ceil`` and ``floor`` (NumPy, or scalar ops), for the step-time model's inner loop.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from importlib.resources import files
from types import MappingProxyType

import numpy as np

from . import _validate as v
from . import hardware
from ._numeric import _ScalarOps, as_scalar
from .calibration import BLACKWELL

__all__ = [
    "KERNEL_GPU_SECONDS", "HOST_SECONDS_PER_OP", "HOST_SECONDS_PER_LAUNCH", "SM_COUNT", "TILES", "GemmModel", "gemm_model", "gemm_seconds",
    "gemm_flops_per_s", "GEMM_FIT", "GH100_FP8_BEST", "BestShapeCheck", "best_shape_check",
    "best_shape_table", "fit_gemm", "published_gemms", "FP8_RECIPES", "FP8_CAST_BYTES",
    "FP8_CAST_KERNELS", "FP8_CAST_PASSES", "fp8_cast_bytes", "fp8_cast_seconds", "published_rowwise_speedups",
    "rowwise_speedup", "ROWWISE_OTHER_BYTES", "ATTENTION_KERNELS", "ATTENTION_KERNEL_LABELS",
    "FA2_OVER_TRITON", "AttentionModel", "attention_model", "attention_flops", "attention_seconds", "ATTENTION_FIT",
    "ATTENTION_LONGEST", "fit_attention", "FA2_RAMP", "FA2_LONGEST", "fit_attention_ramp", "CUDNN_SEQ",
    "CUDNN_OVER_FA3", "fit_cudnn_ratio",
    "published_attention", "AttentionCheck", "BLACKWELL_ATTENTION_KV_HEADS", "blackwell_attention_check",
    "BLACKWELL_ATTENTION_ACCELERATORS", "BLACKWELL_ATTENTION_FIT", "GB300_ATTENTION_FIT", "BLACKWELL_ATTENTION_FITS",
    "BLACKWELL_ATTENTION_SHORTEST",
    "BLACKWELL_ATTENTION_LONGEST", "fit_blackwell_attention", "attention_gain",
    "AttentionRates", "attention_rates", "memory_bandwidth", "memory_bound_seconds",
    "MEASURED_KERNELS", "KernelMeasurement", "measured_kernels",
]

# --------------------------------------------------------------------------------------
# Fitted and sourced constants (each pinned by tests/test_kernels.py, which re-runs its fit)
# --------------------------------------------------------------------------------------
KERNEL_GPU_SECONDS = 4.53e-6
"""Per-kernel fixed GPU time, s: launch, prologue and epilogue of one kernel beyond its memory or math time.

Fitted (:func:`fit_gemm`) on the book's H200 measurement: the median over the memory-bound rows of the GEMM
sweep (``m`` = 1 ... 64 rows, ``n = k = 8192``) of ``t − Q / B`` with ``B`` the measured copy bandwidth. Of the
order of the asynchronous launch rate of empty kernels measured by Boyer (University of Virginia, "CUDA Kernel
Overhead": about 334,000 launches per second, 3 µs each). Paid once per kernel by every stack; CUDA graphs remove
the host's launch cost (:data:`HOST_SECONDS_PER_OP`), not this."""

HOST_SECONDS_PER_OP = 20e-6
"""Host (CPU) time per operator of an eager framework, s: Python, dispatcher and launch call of one PyTorch op.

Source: NVIDIA's Nsight Systems documentation's PyTorch example, which puts the round trip of one element-wise
PyTorch operator at about 20 µs on a V100 system (as quoted in "Every CUDA Kernel Pays a Launch Tax", groundy,
a secondary source); the same order as Horace He's "Making Deep Learning Go Brrrr From First Principles"
(overhead section: an eager operator costs microseconds of host time whatever its size). An eager stack pays it
per operator and hides it behind the GPU only when each kernel runs longer; CUDA graphs and ``torch.compile``
with CUDA graphs remove it (CUDA Programming Guide, "CUDA Graphs"). An older-CPU figure: read it as an upper
estimate."""

HOST_SECONDS_PER_LAUNCH = 3e-6
"""Host time to launch one kernel from compiled code, s: the CUDA launch call alone, with no Python or PyTorch
dispatcher around it (a C++ loop over experts, as Transformer Engine's grouped linear layer runs one). Boyer
(University of Virginia, "CUDA Kernel Overhead"): about 334,000 asynchronous launches per second, 3 µs each.
Cross-check: Transformer Engine's maintainers measured a fused grouped MLP of 64 experts at about 1.2 ms of host
time forward and 2.1 ms backward on a GB200 (TransformerEngine issue 2897, 2026), about 19 and 33 µs per expert,
where a multi-stream stack's launches per expert in FP8 with current scaling (two GEMMs and four cast kernels
forward, four GEMMs and four cast kernels backward) come to 18 and 24 µs at this cost."""

SM_COUNT = MappingProxyType({
    "H100 SXM": 132, "H800 SXM": 132, "H200 SXM": 132, "H100 PCIe": 114, "A100 SXM 40GB": 108,
    "A100 SXM 80GB": 108, "B200": 148, "GB300": 148, "MI300X": 304,
})
"""Streaming multiprocessors (AMD: compute units) per accelerator, the number of output tiles one wave runs.

Sources: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022: 132 SMs on the SXM5 board, 114 on PCIe; the
H800 and H200 are the same GH100 SXM part); NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020: 108 SMs);
NVIDIA Blackwell architecture technical brief (B200: 148 SMs); the GB300 takes the B200's count, an assumption (NVIDIA
Technical Blog, "Inside NVIDIA Blackwell Ultra", 2025, gives 160 SMs for the full implementation of its GPU, not how
many the shipping part enables); AMD CDNA 3 architecture whitepaper (MI300X: 304 CUs). The book's own H200
measurement reads 132 (``multi_processor_count``). An accelerator missing here (the GB200) takes the GH100's 132."""

TILES = ((128, 256), (128, 128), (64, 128))
"""Output tile shapes (rows, columns) the GEMM model may pick, largest first: the best wave efficiency among
them is used, as cuBLAS's heuristics choose a kernel per shape. The 128x256 tile is the Hopper BF16/FP8 default
of CUTLASS's warp-specialised kernels; 128x128 and 64x128 are among cuBLASLt's tile configurations
(``cublasLtMatmulTile_t``: ``TILE_128x256``, ``TILE_128x128``, ``TILE_64x128``). Assumption (stated, not
measured): a smaller tile runs at the same per-SM rate; split-K and stream-K schedules are not modelled."""

GEMM_FIT = MappingProxyType({
    "bf16_sustained": 738.9e12, "bf16_burst": 859.6e12, "fp8_burst": 1643.4e12, "fp8_k_half": 571.0,
    "fixed_seconds": KERNEL_GPU_SECONDS,
})
"""The fitted GEMM constants (:func:`fit_gemm` reproduces them; FLOP/s, elements, s):

* ``bf16_sustained``: BF16 rate of the H200 sweep's large rows (``m`` >= 4096 at ``n = k = 8192``, 0.55-2.2 TFLOP
  each), which run at the 700 W power limit (the sweep's median SM clock 1,545 MHz of 1,980): what a training
  step, a long run of large GEMMs, sees.
* ``bf16_burst``: the same fit on the sweep's mid rows (``m`` = 512 ... 2048, 69-275 GFLOP), before the clock
  falls; the rate short benchmarks report. ``bf16_sustained / bf16_burst`` is the power-limit factor.
* ``fp8_burst``, ``fp8_k_half``: least squares in log time on TileLang's published H800 FP8 sweep
  (``m = n = 8192``, ``k`` = 256 ... 16384, both tables), the rate and the K ramp. The source gives no clocks;
  read as a short benchmark, like the BF16 burst rate.
* ``fixed_seconds``: :data:`KERNEL_GPU_SECONDS`.

Derived, not fitted: the FP8 sustained rate is ``fp8_burst`` times the BF16 power-limit factor (an assumption: the
same clock drop at the same power limit); the BF16 K ramp is ``fp8_k_half / 2`` (one K step of a tile's pipeline
holds the same bytes, twice as many FP8 elements, so the same fixed time per tile is half as many BF16 elements;
Hopper's FP8 ``wgmma`` takes K = 32 per instruction against 16 for BF16, PTX ISA "wgmma.mma_async")."""


def _bf16_k_half() -> float:
    return GEMM_FIT["fp8_k_half"] / 2.0


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------
def _read_csv(name: str) -> list[dict]:
    text = (files("atscale") / "data" / "kernels" / name).read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines))


_PUBLISHED: dict = {}


def published_gemms() -> dict:
    """The published GEMM points shipped with the book (``atscale/data/kernels/gemm-published.csv``), as read-only
    arrays keyed by column: ``accelerator``, ``dtype``, ``library``, ``source``, ``note`` (strings), ``m``,
    ``n``, ``k``, ``batch`` (elements), ``tflops`` (1e12 FLOP/s achieved). Sources, in the file's header: TileLang's
    FP8 benchmark on an H800 SXM, OpenXLA's default matmul table for sm_90 (BF16), FBGEMM's FP8/BF16 pairs on an
    H100 at 500 W, and Bekman's best-shape table (BF16 and FP8; :func:`best_shape_check`)."""
    if "gemm" not in _PUBLISHED:
        rows = _read_csv("gemm-published.csv")
        out = {c: np.array([r[c] for r in rows]) for c in ("accelerator", "dtype", "library", "source", "note")}
        for c in ("m", "n", "k", "tflops"):
            out[c] = np.array([float(r[c]) for r in rows])
        out["batch"] = np.array([float(r["note"].split()[1]) if r["note"].startswith("batch") else 1.0
                                 for r in rows])
        for a in out.values():
            a.setflags(write=False)
        _PUBLISHED["gemm"] = MappingProxyType(out)
    return _PUBLISHED["gemm"]


def fit_attention_ramp() -> dict:
    """Re-run the fits behind :data:`FA2_RAMP`: per (pass, causal), the ``s_half`` minimising the squared log error of
    ``R(s) = R_max s / (s + s_half)`` on FlashAttention-2's published H100 rates against the sequence (the forward
    figure's points for the forward, the forward-plus-backward figure's for the backward; grid over ``s_half`` in
    1-token steps, ``R_max`` solved per step). Returns ``{(pass, causal): s_half}``."""
    pub = published_attention()
    out = {}
    for pass_, causal in _RATE_KEYS:
        source = "flashattention3-figure-fwd" if pass_ == "forward" else "flashattention2-figure-h100"
        sel = (pub["kernel"] == "flash2") & (pub["source"] == source) & (pub["causal"] == causal)
        out[pass_, causal] = _fit_saturating(pub["seqlen"][sel], pub["tflops"][sel] * 1e12)[1]
    return out


_ATTENTION_FILES = MappingProxyType({"H100 SXM": "attention-published.csv",
                                      "A100 SXM 80GB": "attention-a100-published.csv",
                                      "B200": "attention-b200-published.csv",
                                      "GB300": "attention-gb300-published.csv"})


def published_attention(accelerator: str = "H100 SXM") -> dict:
    """The published attention points on ``accelerator`` ("H100 SXM", the default, "A100 SXM 80GB", "B200" or "GB300";
    the files ``atscale/data/kernels/attention-published.csv``, ``attention-a100-published.csv``,
    ``attention-b200-published.csv`` and ``attention-gb300-published.csv``, the last two NVIDIA's cuDNN benchmark of
    one release on both GPUs, :func:`blackwell_attention_check`) as read-only arrays:
    ``kernel``, ``pass``, ``source``, ``figure`` (strings), ``causal`` (bool), ``head_dim``, ``seqlen``, ``batch``,
    ``heads`` (counts), ``tflops`` (1e12 FLOP/s, the papers' FLOP count). BF16/FP16."""
    name = v.choice("accelerator", accelerator, tuple(_ATTENTION_FILES))
    key = f"attention {name}"
    if key not in _PUBLISHED:
        rows = _read_csv(_ATTENTION_FILES[name])
        out = {c: np.array([r[c] for r in rows]) for c in ("kernel", "pass", "source", "figure")}
        out["causal"] = np.array([r["causal"] == "1" for r in rows])
        for c in ("head_dim", "seqlen", "batch", "heads", "tflops"):
            out[c] = np.array([float(r[c]) for r in rows])
        for a in out.values():
            a.setflags(write=False)
        _PUBLISHED[key] = MappingProxyType(out)
    return _PUBLISHED[key]


@dataclass(frozen=True)
class AttentionCheck:
    """One published attention point beside the kernel model (:func:`blackwell_attention_check`): ``kernel``,
    ``passes`` ("forward" or "backward"), ``seq_length`` (tokens), ``published`` and ``model`` (s, the model's
    short-benchmark time at the source's shape); ``error`` = model / published - 1 (negative: the model is fast)."""

    kernel: str
    passes: str
    seq_length: int
    published: float
    model: float

    @property
    def error(self) -> float:
        return self.model / self.published - 1.0


BLACKWELL_ATTENTION_KV_HEADS = 8
"""Key/value heads of the B200 and GB300 attention benchmark (:func:`blackwell_attention_check`): Llama 3.1 405B's
grouped-query attention, as the source's README and file name the layer (128 query heads, 8 key/value heads, head
dimension 128)."""

def blackwell_attention_check(accelerator: str = "B200") -> tuple[AttentionCheck, ...]:
    """The kernel model's attention on a B200 (the default) or a GB300 beside NVIDIA's published cuDNN benchmark of it
    (:func:`published_attention`): cuDNN's fused attention and FlashAttention-2, causal, BF16, forward and backward,
    512 to 131,072 tokens at batch 1. The model's rates on each GPU are fitted on its rows from
    :data:`BLACKWELL_ATTENTION_SHORTEST` tokens on (:data:`BLACKWELL_ATTENTION_FITS`), so those rows show the fit's
    residuals and the shorter ones how far the curve reaches below its range. (Until November 2026 the B200's rates
    were the H100's times the peak ratio and every row was held out: FlashAttention-2 33-51 % short in time from 8k
    tokens on, cuDNN 19-34 % at 4k-8k.)"""
    name = v.choice("accelerator", accelerator, tuple(BLACKWELL_ATTENTION_FITS))
    key = f"blackwell attention {name}"
    if key not in _PUBLISHED:
        p = published_attention(name)
        rows = []
        for i in range(len(p["kernel"])):
            kernel, backward = str(p["kernel"][i]), p["pass"][i] == "backward"
            b, h, s, d = (float(p[c][i]) for c in ("batch", "heads", "seqlen", "head_dim"))
            flops = attention_flops(b, h, s, d, causal=bool(p["causal"][i]), backward=backward)
            model = attention_seconds(b, h, s, d, name, kv_heads=BLACKWELL_ATTENTION_KV_HEADS, kernel=kernel,
                                      causal=bool(p["causal"][i]), backward=backward, sustained=False)
            rows.append(AttentionCheck(kernel, str(p["pass"][i]), int(s), flops / (float(p["tflops"][i]) * 1e12),
                                       float(model)))
        _PUBLISHED[key] = tuple(rows)
    return _PUBLISHED[key]


@dataclass(frozen=True)
class AttentionRates:
    """Attention kernels' achieved rates against the sequence length on one accelerator, the model beside the
    published points (:func:`attention_rates`). ``seq_lengths``: tokens; ``curves``: ``{(kernel, pass): rate}``,
    the model's FLOP/s at each sequence length (the papers' FLOP count: causal halves the forward, the backward is
    2.5x it); ``points``: ``(kernel, pass, seqlen, published FLOP/s, model FLOP/s, source)`` for every published
    point of those kernels and passes at the same masking and head dimension (the model at the point's own batch
    and heads); ``gemm``: the rate of a large BF16 GEMM (8,192 cubed) on the same model, FLOP/s, for scale;
    ``causal``, ``head_dim``: the setting."""

    accelerator: str
    causal: bool
    head_dim: int
    seq_lengths: np.ndarray
    curves: dict
    points: tuple
    gemm: float

    def median_point_error(self, sources=None) -> float:
        """Median of ``|model / published - 1|`` over :attr:`points` (a fraction), or over those whose source is
        among ``sources`` (names as in ``attention-published.csv``)."""
        if sources is not None:
            sources = (sources,) if isinstance(sources, str) else tuple(sources)
            if not all(isinstance(x, str) for x in sources):
                raise ValueError(f"sources={v.show(sources)} must be source names (strings)")
        errors = [abs(m / p - 1) for _, _, _, p, m, src in self.points if sources is None or src in sources]
        if not errors:
            raise ValueError(f"sources={v.show(sources)} matches none of the points' sources: "
                             + ", ".join(sorted({pt[5] for pt in self.points})))
        return float(np.median(errors))

    def point(self, kernel: str, pass_: str, seq_length: float, source: str) -> tuple:
        """The point of ``kernel``, pass ``pass_`` ("forward" or "backward"), sequence ``seq_length`` (tokens) and
        ``source``: ``(published FLOP/s, model FLOP/s)``."""
        for k, p, s, published, model, src in self.points:
            if (k, p, s, src) == (kernel, pass_, float(seq_length), source):
                return published, model
        raise ValueError(f"no published point of kernel={kernel!r}, pass_={pass_!r}, seq_length={seq_length!r}, "
                         f"source={source!r} among the {len(self.points)} points")


def attention_rates(accelerator="H100 SXM", kernels=("flash3", "flash2"), *, causal: bool = True,
                    head_dim: int = 128, seq_lengths=(512, 1024, 2048, 4096, 8192, 16384, 32768),
                    sustained: bool = False) -> AttentionRates:
    """The forward and backward rates of each attention kernel in ``kernels`` (:data:`ATTENTION_KERNELS`, fused
    ones) against the sequence length, with the published points of :func:`published_attention` for the same
    setting (the FlashAttention papers' benchmark sizes: batch x sequence = 16,384 tokens, one sequence beyond,
    2,048 / ``head_dim`` heads), as an :class:`AttentionRates`. ``sustained=False`` (default) compares with the
    published short benchmarks as they were run."""
    acc = hardware.accelerator_arg("accelerator", accelerator)
    names = tuple(kernels) if isinstance(kernels, (tuple, list)) else (kernels,)
    if not names:
        raise ValueError("kernels=() must name at least one kernel of " + ", ".join(ATTENTION_KERNELS[:-1]))
    for k in names:
        v.choice("kernels", k, ATTENTION_KERNELS[:-1])
    v.flag("causal", causal)
    v.flag("sustained", sustained)
    d = v.count("head_dim", head_dim, high=1024, unit="elements")
    seq = np.asarray(v.count("seq_lengths", seq_lengths, scalar=False, high=2**24, unit="tokens"),
                     dtype=float).reshape(-1)

    def rate(kernel, pass_, s, b=None, h=None):
        b = np.maximum(1.0, np.floor(16384.0 / s)) if b is None else b
        h = max(1.0, float(2048 // d)) if h is None else h
        back = pass_ == "backward"
        flops = attention_flops(b, h, s, d, causal=causal, backward=back)
        return flops / attention_seconds(b, h, s, d, acc, causal=causal, kernel=kernel, backward=back,
                                         sustained=sustained)

    curves = {(k, p): np.asarray(rate(k, p, seq), dtype=float) for k in names for p in ("forward", "backward")}
    points = []
    if acc.name in _ATTENTION_FILES:
        pub = published_attention(acc.name)
        for i in range(pub["tflops"].size):
            key = (str(pub["kernel"][i]), str(pub["pass"][i]))
            if key in curves and bool(pub["causal"][i]) == causal and pub["head_dim"][i] == d:
                s = float(pub["seqlen"][i])
                model = float(rate(*key, s, float(pub["batch"][i]), float(pub["heads"][i])))  # at its own sizes
                points.append((*key, s, float(pub["tflops"][i]) * 1e12, model, str(pub["source"][i])))
    big = 8192.0
    gemm = 2 * big**3 / gemm_seconds(big, big, big, acc, sustained=sustained)
    for a in curves.values():
        a.setflags(write=False)
    seq.setflags(write=False)
    return AttentionRates(acc.name, causal, d, seq, MappingProxyType(curves), tuple(points), float(gemm))


# --------------------------------------------------------------------------------------
# Memory roof
# --------------------------------------------------------------------------------------
_H200_COPY_BANDWIDTH = 4.2925e12
"""The book's H200 measurement: device-to-device copy, bytes read + written per second (best over 1-8 GiB);
``roofline.measured_roofline().copy_bandwidth`` (pinned by a test)."""


def memory_bandwidth(accelerator) -> float:
    """Achievable HBM bandwidth of ``accelerator``, bytes/s.

    The H200: the book's measured copy bandwidth (4.29e12 of a 4.8e12 datasheet figure, 89 %). Every other
    accelerator: its datasheet bandwidth times that same measured fraction, an extrapolation (no measurement
    shipped for it)."""
    acc = hardware.accelerator_arg("accelerator", accelerator)
    h200 = hardware.accelerator("H200 SXM")
    return acc.hbm_bandwidth * (_H200_COPY_BANDWIDTH / h200.hbm_bandwidth)


def _memory_seconds(nbytes, bandwidth, kernels, fixed):
    return nbytes / bandwidth + kernels * fixed


def memory_bound_seconds(nbytes, accelerator, *, kernels=1):
    """Time of a memory-bound kernel moving ``nbytes`` bytes (read + written), s: ``nbytes / B + kernels · t_0``.

    ``B`` is :func:`memory_bandwidth` (measured on the H200, extrapolated elsewhere), ``t_0``
    :data:`KERNEL_GPU_SECONDS` per kernel. Williams, Waterman & Patterson (2009): below the ridge point the
    memory roof binds. Vectorised over ``nbytes`` and ``kernels``."""
    nbytes, kernels = v.broadcast(nbytes=v.nonnegative("nbytes", nbytes, unit="bytes"),
                                  kernels=v.nonnegative("kernels", kernels, integer=True))
    return as_scalar(_memory_seconds(nbytes, memory_bandwidth(accelerator), kernels, KERNEL_GPU_SECONDS))


# --------------------------------------------------------------------------------------
# GEMM
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GemmModel:
    """The constants of the GEMM time model for one accelerator and dtype (SI units).

    ``rate``: sustained large-GEMM FLOP/s; ``tiles``: candidate output tiles (rows, columns); ``sms``: SMs (tiles
    per wave); ``k_half``: K ramp, elements; ``fixed_seconds``: per-kernel GPU time, s; ``bandwidth``: memory
    roof, bytes/s; ``bytes_in``/``bytes_out``: bytes per element of the operands and of the output;
    ``source``: where the constants come from, and whether they are fitted or extrapolated."""

    accelerator: str
    dtype: str
    rate: float
    tiles: tuple
    sms: int
    k_half: float
    fixed_seconds: float
    bandwidth: float
    bytes_in: float
    bytes_out: float
    source: str


_GH100 = ("H100 SXM", "H800 SXM", "H200 SXM")

GH100_FP8_BEST = hardware.H200_SXM.measured_matmul_flops["fp8"]
"""The H200's best-shape FP8 matmul rate, FLOP/s (1453.4e12): Bekman's table (revision of August 2026; torch
2.7.1+cu128, as its B200 row), read from the catalog's ``H200 SXM`` ``measured_matmul_flops["fp8"]``. The
reference that turns another accelerator's published best FP8 rate into the model's FP8 rate
(:func:`gemm_model`). The FP8 model's own rate at that shape is within 1 % of it (:func:`gemm_flops_per_s`,
burst), although the model is fitted on TileLang's sweep: a check, from another source, of the FP8 fit."""


def gemm_model(accelerator, dtype: str = "bf16", *, sustained: bool = True) -> GemmModel:
    """The :class:`GemmModel` of ``accelerator`` (name or :class:`~atscale.hardware.Accelerator`) for ``dtype``
    (``"bf16"``, ``"fp16"`` or ``"fp8"``).

    ``sustained=True`` (default) gives the power-limited rate a training step sees; ``False`` the short-benchmark
    ("burst") rate, for comparison with published microbenchmarks. Rules, in order:

    * H100 SXM, H800 SXM, H200 SXM (one GH100 die at 700 W): the fitted rates of :data:`GEMM_FIT`.
    * Another accelerator with a published best-shape BF16 matmul rate in the catalog (A100, B200, GB200: Bekman's
      table), or one the catalog assumes from another part (the GB300 the GB200's:
      :meth:`~atscale.hardware.Accelerator.matmul_rate`): that rate times the H200's ``bf16_sustained`` (or
      ``bf16_burst``) over its own best measured rate.
    * FP8 on another accelerator with a published best-shape FP8 rate (B200, GB200: the same table): that rate
      times the GH100 FP8 rate over the H200's published best FP8 rate (:data:`GH100_FP8_BEST`), the BF16 rule with
      the FP8 figures.
    * Otherwise: its datasheet peak times the GH100 ratio of the fitted rate to the datasheet peak: an
      **extrapolation**, said in ``source``.

    Tile shapes, the K ramp and the fixed time are the GH100 ones everywhere (an extrapolation off Hopper)."""
    acc = hardware.accelerator_arg("accelerator", accelerator)
    v.choice("dtype", dtype, ("bf16", "fp16", "fp8"))
    v.flag("sustained", sustained)
    acc.peak(dtype)  # ValueError if the accelerator lacks the dtype (A100: no FP8)
    h100 = hardware.accelerator("H100 SXM")
    power = GEMM_FIT["bf16_sustained"] / GEMM_FIT["bf16_burst"]
    if dtype == "fp8":
        gh100_rate = GEMM_FIT["fp8_burst"] * (power if sustained else 1.0)
        k_half = GEMM_FIT["fp8_k_half"]
        fitted = ("FP8 rate and K ramp fitted on TileLang's H800 FP8 sweep"
                  + (", times the BF16 power-limit factor measured on the H200 (assumed the same for FP8)"
                     if sustained else ""))
    else:
        gh100_rate = GEMM_FIT["bf16_sustained" if sustained else "bf16_burst"]
        k_half = _bf16_k_half()
        fitted = (f"BF16 {'sustained' if sustained else 'burst'} rate fitted on the book's H200 GEMM sweep; "
                  "K ramp half the FP8 one")
    if acc.name in _GH100:
        rate, source = gh100_rate, fitted + f" ({acc.name}: the same GH100 die and power limit)"
    elif acc.matmul_rate(dtype) is not None:
        # the GH100's best-shape rate of the same dtype: the book's own H200 measurement (BF16), Bekman's (FP8)
        best = GH100_FP8_BEST if dtype == "fp8" else 794.4e12  # roofline.measured_roofline().matmul_flops, pinned
        rate = acc.matmul_rate(dtype) * gh100_rate / best
        mine = acc.measured(dtype) is not None
        source = (fitted + f"; {acc.name}: {'its published' if mine else 'an assumed'} best-shape {dtype.upper()} "
                  f"rate ({acc.source('measured_matmul_flops' if mine else 'assumed_matmul_flops')}) times the "
                  "H200's fitted-over-best ratio")
    else:
        rate = acc.peak(dtype) * gh100_rate / h100.peak(dtype)
        source = (fitted + f"; {acc.name}: EXTRAPOLATED from its datasheet {dtype} peak with the GH100 "
                  "fitted-over-peak ratio (no published GEMM benchmark used)")
    return GemmModel(
        accelerator=acc.name, dtype=dtype, rate=rate, tiles=TILES, sms=SM_COUNT.get(acc.name, 132),
        k_half=k_half, fixed_seconds=KERNEL_GPU_SECONDS, bandwidth=memory_bandwidth(acc),
        bytes_in=hardware.bytes_per_element(dtype), bytes_out=2.0, source=source)


def _wave_efficiency(m, n, batch, g: GemmModel, xp):
    """Useful fraction of the tile-slots a GEMM occupies: ``b m n / (waves · SMs · T_m · T_n)``, best over the
    candidate tiles (NVIDIA, Matrix Multiplication Background User's Guide: tile and wave quantisation)."""
    if xp is _ScalarOps:  # one GEMM of Python floats: the same arithmetic without the namespace's calls
        ceil, sms, best = math.ceil, g.sms, 0.0
        for tm, tn in g.tiles:
            waves = ceil(batch * ceil(m / tm) * ceil(n / tn) / sms)
            best = max(best, batch * m * n / (waves * (sms * tm * tn)))
        return best
    best = 0.0
    for tm, tn in g.tiles:
        tiles = batch * xp.ceil(m / tm) * xp.ceil(n / tn)
        waves = xp.ceil(tiles / g.sms)
        best = xp.maximum(best, batch * m * n / (waves * (g.sms * tm * tn)))
    return best


_SCALAR_GEMMS: dict = {}


def _gemm_seconds(m, n, k, g: GemmModel, xp, batch=1.0):
    """Time of ``batch`` GEMMs ``C[m, n] = A[m, k] B[k, n]``, s (floats or arrays; no validation).

    ``max(2 b m n k / (R · E_wave · K / (K + K_half)), b (m k + k n) bytes_in + b m n bytes_out) / B) + t_0``.
    One GEMM of Python floats is remembered per shape and model object (the entry keeps the model, so its id is
    not reused while cached; at most 4,096 entries): a plan's step time asks for the same shapes again. The same
    rule as ``parallelism._remembered``, written out inline: through that helper (a closure per call) one step
    time took 13 µs more, 100 against 87 µs warm."""
    if xp is _ScalarOps:
        key = (m, n, k, batch, id(g))
        entry = _SCALAR_GEMMS.get(key)
        if entry is not None and entry[0] is g:
            return entry[1]
        if len(_SCALAR_GEMMS) >= 4096:
            _SCALAR_GEMMS.clear()
        value = _gemm_time(m, n, k, g, xp, batch)
        _SCALAR_GEMMS[key] = (g, value)
        return value
    return _gemm_time(m, n, k, g, xp, batch)


def _gemm_time(m, n, k, g: GemmModel, xp, batch=1.0):
    """:func:`_gemm_seconds`, computed."""
    flops = 2.0 * batch * m * n * k
    compute = flops * (k + g.k_half) / (k * g.rate * _wave_efficiency(m, n, batch, g, xp))
    memory = batch * ((m * k + k * n) * g.bytes_in + m * n * g.bytes_out) / g.bandwidth
    if xp is _ScalarOps:
        return (compute if compute > memory else memory) + g.fixed_seconds
    return xp.maximum(compute, memory) + g.fixed_seconds


def _gemm_args(m, n, k, batch):
    m, n, k, batch = (np.asarray(v.count(name, value, scalar=False, high=2**40, unit=unit), dtype=float) for name, value, unit in
                      (("m", m, "rows"), ("n", n, "columns"), ("k", k, "elements"), ("batch", batch, "GEMMs")))
    return v.broadcast(m=m, n=n, k=k, batch=batch)


def gemm_seconds(m, n, k, accelerator, dtype: str = "bf16", *, batch=1, sustained: bool = True):
    """Time of ``batch`` GEMMs ``C[m, n] = A[m, k] · B[k, n]`` on ``accelerator``, s. Vectorised (broadcasts).

    ``t = max(2 m n k / (R · E_wave · E_K), Q / B) + t_0`` with the constants of :func:`gemm_model` (see the
    module docstring for the physics and sources). ``Q`` counts each operand once in ``dtype`` and the output in
    BF16. FP8 inputs must already be cast: add :func:`fp8_cast_seconds` for the casts."""
    g = gemm_model(accelerator, dtype, sustained=sustained)
    m, n, k, batch = _gemm_args(m, n, k, batch)
    return as_scalar(_gemm_seconds(m, n, k, g, np, batch.astype(float)))


def gemm_flops_per_s(m, n, k, accelerator, dtype: str = "bf16", *, batch=1, sustained: bool = True):
    """Achieved FLOP/s of the GEMMs of :func:`gemm_seconds`: ``2 b m n k / t``. Vectorised."""
    g = gemm_model(accelerator, dtype, sustained=sustained)
    m, n, k, batch = _gemm_args(m, n, k, batch)
    b = batch.astype(float)
    return as_scalar(2.0 * b * m * n * k / _gemm_seconds(m, n, k, g, np, b))


@dataclass(frozen=True)
class BestShapeCheck:
    """The GEMM model at one accelerator's published best matmul shape (:func:`best_shape_check`).

    ``published`` and ``model`` in FLOP/s (the model's burst rate, :func:`gemm_flops_per_s` with
    ``sustained=False``: the table's figures are short benchmarks); ``error`` = model / published - 1;
    ``anchored``: whether the model's rate for this accelerator and dtype is scaled from this same published figure
    (then the check tests only the shape terms, tiles and K ramp, carried over from the GH100)."""

    accelerator: str
    dtype: str
    m: int
    n: int
    k: int
    published: float
    model: float
    anchored: bool
    note: str

    @property
    def error(self) -> float:
        return self.model / self.published - 1.0


def best_shape_check() -> tuple[BestShapeCheck, ...]:
    """The GEMM model against Bekman's best-shape table (revision of August 2026; :func:`published_gemms`, source
    ``"bekman-mamf"``), one row per accelerator and dtype, at the shape the table names.

    On the GH100 (H100, H200) the model's rates are fitted on other data (the book's H200 sweep, TileLang's H800
    FP8 sweep): a validation. Elsewhere each rate is the accelerator's published best times the GH100's
    fitted-over-best ratio (:func:`gemm_model`), so the row checks only the shape terms."""
    if "best shape" not in _PUBLISHED:
        p = published_gemms()
        rows = []
        for i in np.flatnonzero(p["source"] == "bekman-mamf"):
            acc, dtype = str(p["accelerator"][i]), str(p["dtype"][i])
            m, n, k = (int(p[c][i]) for c in ("m", "n", "k"))
            model = float(gemm_flops_per_s(m, n, k, acc, dtype, sustained=False))
            rows.append(BestShapeCheck(acc, dtype, m, n, k, float(p["tflops"][i]) * 1e12, model,
                                       acc not in _GH100, str(p["note"][i])))
        _PUBLISHED["best shape"] = tuple(rows)
    return _PUBLISHED["best shape"]


def best_shape_table():
    """:func:`best_shape_check` as a table for the book."""
    from .tables import Table

    rows = [(c.accelerator, c.dtype.upper(), f"{c.m:,} × {c.n:,} × {c.k:,}", f"{c.published / 1e12:,.1f}",
             f"{c.model / 1e12:,.1f}", f"{c.error:+.1%}", "scaled from the table" if c.anchored else "held out")
            for c in best_shape_check()]
    return Table(("Accelerator", "Type", "Best shape (m × n × k)", "Published (TFLOP/s)", "Model (TFLOP/s)",
                  "Error", "The model's rate"), rows,
                 caption="The GEMM model at each accelerator's best matmul shape from Bekman's table (revision of "
                         "August 2026), short-benchmark rates. Held out: the model's constants come from other "
                         "measurements. Scaled from the table: the rate is the table's figure (the A100's from its "
                         f"earlier revision, {hardware.A100_SXM_80GB.measured('bf16') / 1e12:.1f}) times the H200's "
                         "fitted-over-best ratio, so only the tile and K-ramp terms, taken from Hopper, are tested.")


def fit_gemm() -> dict:
    """Re-run the fits behind :data:`GEMM_FIT` from the shipped data; returns the fitted values (same keys).

    1. ``fixed_seconds``: median of ``t − Q / B`` over the H200 sweep's rows ``m`` <= 64 (memory-bound; ``B`` the
       measured copy bandwidth).
    2. ``fp8_burst``, ``fp8_k_half``: least squares of ``log t`` over TileLang's H800 FP8 sweep (both tables),
       with the model above (its memory roof from the H800's datasheet bandwidth times the H200's measured
       fraction), on a grid of ``K_half`` (1 element steps) with the rate solved per ``K_half``.
    3. ``bf16_sustained`` / ``bf16_burst``: median over the H200 sweep's rows ``m`` >= 4096 / ``512 <= m <= 2048``
       of ``F / ((t − t_0) · E_wave · E_K)`` (compute-bound rows)."""
    from . import roofline

    meas = roofline.measured_roofline("H200 SXM")
    bw = meas.copy_bandwidth
    m = meas.sweep_m.astype(float)
    mem_rows = m <= 64
    fixed = float(np.median(meas.sweep_time[mem_rows] - meas.sweep_bytes[mem_rows] / bw))

    pub = published_gemms()
    sel = (pub["dtype"] == "fp8") & (pub["source"] == "tilelang-fp8")
    pm, pn, pk = pub["m"][sel], pub["n"][sel], pub["k"][sel]
    t_pub = 2.0 * pm * pn * pk / (pub["tflops"][sel] * 1e12)
    base = GemmModel("H800 SXM", "fp8", 1.0, TILES, 132, 0.0, fixed, memory_bandwidth("H800 SXM"), 1.0, 2.0, "fit")
    best = None
    for k_half in np.arange(0.0, 2001.0, 1.0):
        g = _replace(base, k_half=float(k_half))
        eff = _wave_efficiency(pm, pn, 1.0, g, np) * pk / (pk + k_half)
        flops = 2.0 * pm * pn * pk
        # rate minimising the log error of the compute-bound model, then the full model's error
        rate = float(np.exp(np.mean(np.log(flops / (eff * np.maximum(t_pub - fixed, 1e-9))))))
        err = np.log(_gemm_seconds(pm, pn, pk, _replace(g, rate=rate), np) / t_pub)
        sse = float(np.sum(err**2))
        if best is None or sse < best[0]:
            best = (sse, rate, float(k_half))
    _, fp8_rate, fp8_k_half = best

    g = GemmModel("H200 SXM", "bf16", 1.0, TILES, 132, fp8_k_half / 2.0, fixed, bw, 2.0, 2.0, "fit")
    n, k = float(meas.sweep_n), float(meas.sweep_k)
    eff = _wave_efficiency(m, n, 1.0, g, np) * k / (k + g.k_half)
    implied = meas.sweep_flops / ((meas.sweep_time - fixed) * eff)
    return {"bf16_sustained": float(np.median(implied[m >= 4096])),
            "bf16_burst": float(np.median(implied[(m >= 512) & (m <= 2048)])),
            "fp8_burst": fp8_rate, "fp8_k_half": fp8_k_half, "fixed_seconds": fixed}


def _replace(g: GemmModel, **kw) -> GemmModel:
    from dataclasses import replace
    return replace(g, **kw)


# --------------------------------------------------------------------------------------
# FP8 casts
# --------------------------------------------------------------------------------------
FP8_RECIPES = ("delayed", "current", "blockwise", "mxfp8", "torchao-rowwise")
"""FP8 scaling recipes: Transformer Engine's delayed scaling (the scale from an amax history of earlier steps)
and current (per-tensor, this step's amax), DeepSeek-V3's block-wise scaling (1x128 activation tiles, 128x128
weight blocks; DeepSeek-V3 Technical Report, sec. 3.3.2), MXFP8 (OCP Microscaling: 32-element blocks with an
E8M0 scale; Blackwell tensor cores; Transformer Engine's ``MXFP8BlockScaling``), and torchao's Float8 training
with one scale per row (``Float8LinearConfig`` recipe ``"rowwise"``: each GEMM operand cast along the axis its GEMM
contracts, :data:`FP8_CAST_PASSES`). torchao's per-tensor recipe (``"tensorwise"``) casts as ``"current"`` does.
Under ``"torchao-rowwise"`` the step-time model times a dense layer's linear layers from torchao's published
speedups, their casts included (:func:`rowwise_speedup`); the casts priced here then count only for routed
experts, which that table does not cover."""

FP8_CAST_BYTES = MappingProxyType({"delayed": 4.0, "current": 6.0, "blockwise": 4.0 + 8.0 / 128.0,
                                   "mxfp8": 4.0 + 2.0 / 32.0, "torchao-rowwise": 5.0})
"""HBM bytes per element of a BF16 tensor cast to FP8 for a GEMM, per recipe (Transformer Engine's cast writes the
tensor and its transpose, both needed by the backward GEMMs; its fused ``cast_transpose``):

* delayed: read BF16 (2) + write FP8 (1) + write FP8 transpose (1) = 4; the amax is reduced inside the cast and
  goes to the history (Transformer Engine docs, "Using FP8 with Transformer Engine": delayed scaling).
* current: an amax pass first (read BF16, 2) before the cast can scale: 6 (Transformer Engine's
  ``Float8CurrentScaling``).
* blockwise: 4 plus one FP32 scale per 128 elements for each of the two copies (8/128): 4.06 (DeepSeek-V3 sec.
  3.3.2: the scale of each 1x128 tile is computed online in the cast).
* mxfp8: 4 plus one E8M0 byte per 32 elements for each copy (2/32): 4.06.
* torchao-rowwise: an amax pass along the contracting axis (read BF16, 2), then the scaled cast (read 2, write FP8
  1), no transpose: 5 (torchao's ``hp_tensor_to_float8_dynamic``: the scales from ``tensor_to_scale``, then the
  cast). Each operand is cast again for each GEMM that contracts it along another axis (:data:`FP8_CAST_PASSES`). A
  compiler that keeps a row in cache between its amax and its cast reads it once (3 bytes): not assumed.
"""

FP8_CAST_KERNELS = MappingProxyType({"delayed": 1, "current": 2, "blockwise": 1, "mxfp8": 1, "torchao-rowwise": 2})
"""Kernels per cast (each pays :data:`KERNEL_GPU_SECONDS`): a separate amax pass is the second."""



def _cast_passes(recipe: str, gradient_casts: int, input_recasts: int) -> tuple:
    """One linear layer's casts under ``recipe`` (:data:`FP8_CAST_PASSES`): its input once forward, its output's
    gradient ``gradient_casts`` times and its input ``input_recasts`` more times backward, each cast costing
    :data:`FP8_CAST_BYTES` and :data:`FP8_CAST_KERNELS`."""
    nbytes, n_kernels = FP8_CAST_BYTES[recipe], FP8_CAST_KERNELS[recipe]
    return ((nbytes, n_kernels), (gradient_casts * nbytes, gradient_casts * n_kernels),
            (input_recasts * nbytes, input_recasts * n_kernels))


FP8_CAST_PASSES = MappingProxyType({
    **{r: _cast_passes(r, 1, 0) for r in ("delayed", "current", "blockwise", "mxfp8")},
    "torchao-rowwise": _cast_passes("torchao-rowwise", 2, 1),
})
"""What one FP8 linear layer casts, per recipe: ``((bytes, kernels) per element of its input, forward; (bytes,
kernels) per element of its output's gradient, backward; (bytes, kernels) per element of its input, backward)``.
Transformer Engine's recipes cast the input once forward and the output's gradient once backward, each with its
transpose, and keep the FP8 input for the weight-gradient GEMM (:data:`FP8_CAST_BYTES`). torchao's rowwise recipe
(``matmul_with_hp_or_float8_args`` in ``torchao/float8/float8_linear.py``, read at torchao 6243040, the commit
torchtitan's June 2025 benchmarks name) keeps the BF16 input for the backward, and casts each operand along the
axis its GEMM contracts, each cast with its own amax: the input along its features forward; the output's gradient
along its features for the input-gradient GEMM and along the tokens for the weight-gradient GEMM; the input again,
along the tokens, for the weight-gradient GEMM. The weights' casts (once per GEMM call, independent of the tokens)
are left out under every recipe."""


def fp8_cast_bytes(elements, recipe: str = "delayed"):
    """HBM bytes of one cast of ``elements`` BF16 values to FP8 under ``recipe`` (with its transpose where the recipe
    writes one: :data:`FP8_CAST_BYTES`). Vectorised."""
    v.choice("recipe", recipe, FP8_RECIPES)
    elements = v.nonnegative("elements", elements, unit="elements")
    return as_scalar(np.asarray(elements) * FP8_CAST_BYTES[recipe])


def fp8_cast_seconds(elements, accelerator, recipe: str = "delayed"):
    """Time of the FP8 cast of ``elements`` BF16 values under ``recipe`` at the memory roof, s (bytes of
    :func:`fp8_cast_bytes` over :func:`memory_bandwidth`, plus :data:`KERNEL_GPU_SECONDS` per kernel of
    :data:`FP8_CAST_KERNELS`). Vectorised."""
    nbytes = fp8_cast_bytes(elements, recipe)
    return as_scalar(_memory_seconds(np.asarray(nbytes), memory_bandwidth(accelerator), FP8_CAST_KERNELS[recipe],
                                     KERNEL_GPU_SECONDS))


def published_rowwise_speedups() -> dict:
    """torchao's published speedup of Float8 training with rowwise scaling over BF16 on an H100, by the forward
    GEMM's shape (``atscale/data/kernels/torchao-rowwise-published.csv``; source in the file's header: the
    ``torchao.float8`` README's rowwise table of June 2025), as read-only arrays: ``m``, ``k``, ``n`` (elements:
    the linear layer's input ``[m, k]`` and weight ``[k, n]``), ``speedup`` (BF16 time over float8 time, forward
    and backward, the casts included)."""
    if "rowwise" not in _PUBLISHED:
        rows = _read_csv("torchao-rowwise-published.csv")
        out = {c: np.array([float(r[c]) for r in rows]) for c in ("m", "k", "n", "speedup")}
        for a in out.values():
            a.setflags(write=False)
        _PUBLISHED["rowwise"] = MappingProxyType(out)
    return _PUBLISHED["rowwise"]


def _rowwise_grid() -> tuple:
    """The published rowwise speedups as a ``(log2 axis, cube[m, k, n])`` grid (every axis 1,024 ... 32,768)."""
    if "rowwise grid" not in _PUBLISHED:
        p = published_rowwise_speedups()
        axis = np.unique(np.log2(p["m"]))
        cube = np.empty((axis.size,) * 3)
        cube[tuple(np.searchsorted(axis, np.log2(p[c])) for c in ("m", "k", "n"))] = p["speedup"]
        if not (np.array_equal(np.unique(np.log2(p["k"])), axis) and p["speedup"].size == axis.size**3):
            raise ValueError("torchao-rowwise-published.csv is not a full grid of one axis in m, k and n")
        _PUBLISHED["rowwise grid"] = (axis, cube)
    return _PUBLISHED["rowwise grid"]


ROWWISE_OTHER_BYTES = 10.0
"""HBM bytes per element of the LayerNorm's input and of the sigmoid's output that torchao's rowwise benchmark times
beside each linear layer (:func:`rowwise_speedup` with ``linear_only``), forward and backward, compiled: forward,
each reads its input and writes its output in BF16 (4); backward, each reads its saved tensor and the output's
gradient and writes the input's gradient (6). The norm's statistics and the float8 cast that a compiler fuses into
the norm are not counted."""


def _rowwise_speedup(m, k, n, linear_only: bool = False):
    """:func:`rowwise_speedup` without validation: trilinear interpolation in ``log2`` of each dimension, each held
    at the table's edge beyond it. Arrays or floats."""
    axis, cube = _rowwise_grid()
    pos = np.broadcast_arrays(*(np.clip(np.log2(np.asarray(x, dtype=float)), axis[0], axis[-1]) for x in (m, k, n)))
    speedup = _interpolated(axis, cube, pos)
    if linear_only:  # the table's norm and sigmoid, at its own shape, priced at the memory roof and taken out
        tm, tk, tn = (2.0 ** p for p in pos)
        g = gemm_model("H100 SXM", "bf16", sustained=False)
        gemms = (_gemm_seconds(tm, tn, tk, g, np) + _gemm_seconds(tm, tk, tn, g, np) + _gemm_seconds(tk, tn, tm, g, np))
        other = ROWWISE_OTHER_BYTES * tm * (tk + tn) / memory_bandwidth("H100 SXM")
        speedup = gemms / np.maximum((other + gemms) / speedup - other, 1e-3 * gemms)
    return as_scalar(speedup)


def _interpolated(axis, cube, pos):
    """Trilinear interpolation of ``cube`` (on ``axis`` in each dimension) at the points ``pos`` (three arrays)."""
    lo = [np.minimum(np.searchsorted(axis, p, side="right") - 1, axis.size - 2) for p in pos]
    fr = [(p - axis[i]) / (axis[i + 1] - axis[i]) for p, i in zip(pos, lo)]
    out = 0.0
    for corner in range(8):
        bits = [(corner >> d) & 1 for d in range(3)]
        weight = np.prod(np.stack([f if b else 1.0 - f for f, b in zip(fr, bits)]), axis=0)
        out = out + weight * cube[lo[0] + bits[0], lo[1] + bits[1], lo[2] + bits[2]]
    return out


def rowwise_speedup(m, k, n, *, linear_only: bool = False):
    """The speedup of a linear layer under torchao's Float8 training with rowwise scaling over the same layer in
    BF16, forward and backward (its casts included), on an H100, for a forward GEMM of input ``[m, k]`` and weight
    ``[k, n]`` (elements): torchao's published table (:func:`published_rowwise_speedups`), interpolated linearly in
    ``log2`` of each dimension and held at the table's edge (1,024 and 32,768) beyond it, as torchtitan issue 1207
    reads it for an ``m`` past the table. Below 1 the layer is slower in FP8. The table times a LayerNorm, the
    linear and a sigmoid together; the norm and the sigmoid, the same in both precisions, pull the ratio toward 1,
    and are not removed (an assumption: the linear alone departs further from 1). ``linear_only`` True removes them:
    at the table's shape, the norm and the sigmoid priced at the memory roof (:data:`ROWWISE_OTHER_BYTES` per element
    of ``[m, k]`` and ``[m, n]``) and the BF16 GEMMs at the kernel model's short-benchmark rate, the speedup of the
    rest, ``G / ((O + G) / s - O)``. Vectorised."""
    m, k, n = (v.positive(name, x, unit="elements") for name, x in (("m", m), ("k", k), ("n", n)))
    return _rowwise_speedup(m, k, n, v.flag("linear_only", linear_only))


# --------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------
ATTENTION_KERNELS = ("flash2", "flash3", "cudnn", "flash-triton", "unfused")
"""Attention implementations: FlashAttention-2 (Dao 2023), FlashAttention-3 (Shah et al. 2024; Hopper only),
cuDNN's fused attention (as Transformer Engine calls it), FlashAttention in Triton (Dao's experimental Triton
kernel of 2022-23, which llm-foundry shipped as ``attn_impl: triton``), and the unfused path (two batched GEMMs
and a softmax over the materialised score matrix)."""

ATTENTION_KERNEL_LABELS = MappingProxyType({
    "flash2": "FlashAttention-2", "flash3": "FlashAttention-3", "cudnn": "cuDNN fused attention",
    "flash-triton": "FlashAttention in Triton", "unfused": "unfused attention"})
"""A reader's name for each kernel of :data:`ATTENTION_KERNELS`."""

ATTENTION_FIT = MappingProxyType({
    ("forward", False): (629.6e12, 234.0),
    ("forward", True): (830.7e12, 1203.0),
    ("backward", False): (591.2e12, 427.0),
    ("backward", True): (767.1e12, 3144.0),
})
"""FlashAttention-3 on an H100 SXM, head dimension 128, BF16: ``(R_max FLOP/s, s_half tokens)`` of
``R(s) = R_max · s / (s + s_half)`` per (pass, causal), least squares in log rate on the published points
(:func:`fit_attention`, data in ``attention-published.csv``): non-causal forward from pytorch/benchmark #2391 (the
FlashAttention-3 paper's sizes), causal forward and backward from tritonbench #1267, non-causal backward from the
FlashAttention-3 paper's backward figure (Shah et al. 2024, Fig. 6, head dimension 128). The sources are different
FlashAttention-3 releases (2024 and 2026), which is why the causal forward's asymptote lies above the non-causal
one. Until November 2026 the non-causal backward took the causal one's constants, which made it 3x too slow at 512
tokens against that figure (training runs are causal: no step time moved).

Beyond the longest published sequence of its group (:data:`ATTENTION_LONGEST`) the rate is held at its value
there: the curve's asymptote is an extrapolation no point supports (at 8,192 tokens the causal forward fit already
overshoots its published point by 6 %)."""

ATTENTION_LONGEST = MappingProxyType({("forward", False): 16384.0, ("forward", True): 8192.0,
                                      ("backward", False): 16384.0, ("backward", True): 8192.0})
"""Longest published sequence (tokens) behind each :data:`ATTENTION_FIT` curve; the rate is held beyond it."""

BLACKWELL_ATTENTION_ACCELERATORS = BLACKWELL
"""The Blackwell accelerators (the catalog's, :data:`atscale.calibration.BLACKWELL`) on which cuDNN's fused attention
and FlashAttention-2 run at their own published rates (:data:`BLACKWELL_ATTENTION_FIT`) rather than at the H100's
scaled by the peak ratio."""

BLACKWELL_ATTENTION_FIT = MappingProxyType({
    ("cudnn", "forward"): (1472.5e12, 2616.0),
    ("cudnn", "backward"): (1142.5e12, 2234.0),
    ("flash2", "forward"): (452.4e12, 1240.0),
    ("flash2", "backward"): (356.8e12, 1176.0),
})
"""cuDNN's fused attention and FlashAttention-2 on one B200, head dimension 128, BF16, causal: ``(R_max FLOP/s,
s_half tokens)`` of ``R(s) = R_max · s / (s + s_half)`` per (kernel, pass), least squares in log rate
(:func:`fit_blackwell_attention`) on NVIDIA's published B200 benchmark (``attention-b200-published.csv``: the
cudnn-frontend repository's training SDPA benchmark, NGC PyTorch 25.09, cuDNN 9.13.1, FlashAttention 2.7.4; this
docstring named the older release's 25.06 and 9.10.2 until November 2026) from
:data:`BLACKWELL_ATTENTION_SHORTEST` tokens on. FlashAttention-2 gains little over its H100 rate (1.38 times at 8k
tokens, where the BF16 peaks differ by 2.27): it is written for the warp-level matrix instructions of Ampere and
Hopper, which Blackwell's new tensor-core path leaves behind; cuDNN runs about three times as fast as it on a
B200. Until November 2026 both were the H100's curves times the B200's peak over the H100's, which made
FlashAttention-2 1.5-2 times too fast (33-51 % short in time from 8k tokens on) and cuDNN 19-34 % too fast at
4k-8k tokens. The benchmark is causal only: the non-causal mask takes the causal curve (an assumption; training
is causal)."""

GB300_ATTENTION_FIT = MappingProxyType({
    ("cudnn", "forward"): (1858.6e12, 2315.0),
    ("cudnn", "backward"): (1362.6e12, 1965.0),
    ("flash2", "forward"): (489.2e12, 985.0),
    ("flash2", "backward"): (387.0e12, 906.0),
})
"""The same fit as :data:`BLACKWELL_ATTENTION_FIT` on one GB300 (Blackwell Ultra): NVIDIA's published benchmark of the
same release on that GPU (``attention-gb300-published.csv``: the same commit, software and shapes as the B200's).
cuDNN runs 1.28 times as fast as on the B200 in the forward pass at 8k tokens and 1.20 times in the backward, where
the two parts' BF16 peaks differ by 1.11: NVIDIA credits Blackwell Ultra with twice the B200's rate of the
exponentials that attention's softmax computes (NVIDIA Technical Blog, "Inside NVIDIA Blackwell Ultra", 2025).
Until November 2026 the catalog had no GB300."""

BLACKWELL_ATTENTION_FITS = MappingProxyType({"B200": BLACKWELL_ATTENTION_FIT, "GB300": GB300_ATTENTION_FIT})
"""The attention fits of the Blackwell accelerators with published rates of their own, by name; another Blackwell part
(the GB200) takes the B200's times the two parts' measured best-shape GEMM rates (:func:`attention_model`)."""

BLACKWELL_ATTENTION_SHORTEST = 4096.0
"""Shortest sequence (tokens) of the points :data:`BLACKWELL_ATTENTION_FIT` is fitted on: every Blackwell training
run in the records is at 4k tokens or more. The benchmark's shorter points (512-2,048 tokens at batch 1) rise
faster than one saturating curve can follow through the longer ones: the fit's rate is 11-187 % above them there,
and within 7 % of every point from 4k to 128k tokens."""

BLACKWELL_ATTENTION_LONGEST = 131072.0
"""Longest published sequence (tokens) behind :data:`BLACKWELL_ATTENTION_FIT`; the rate is held beyond it."""


def fit_blackwell_attention(accelerator: str = "B200") -> dict:
    """Re-run the fits behind :data:`BLACKWELL_ATTENTION_FIT` (``accelerator="B200"``, the default) or
    :data:`GB300_ATTENTION_FIT` (``"GB300"``): per (kernel, pass) the published points of that GPU
    (:func:`published_attention`) from :data:`BLACKWELL_ATTENTION_SHORTEST` tokens on, ``R_max`` (FLOP/s, rounded to
    0.1 TFLOP/s) and ``s_half`` (tokens) as :func:`fit_attention` fits them."""
    name = v.choice("accelerator", accelerator, tuple(BLACKWELL_ATTENTION_FITS))
    pub = published_attention(name)
    out = {}
    for key in BLACKWELL_ATTENTION_FITS[name]:
        sel = (pub["kernel"] == key[0]) & (pub["pass"] == key[1]) & (pub["seqlen"] >= BLACKWELL_ATTENTION_SHORTEST)
        rate, half = _fit_saturating(pub["seqlen"][sel], pub["tflops"][sel] * 1e12)
        out[key] = (round(rate / 1e11) * 1e11, half)
    return out


def attention_gain(kernel: str, accelerator="B200", reference="H100 SXM", seq_length=8192):
    """How many times faster ``kernel`` (a fused kernel of :data:`ATTENTION_KERNELS`) runs on ``accelerator`` than
    on ``reference`` (names or :class:`~atscale.hardware.Accelerator`): the ratio of its causal forward rates at
    ``seq_length`` tokens (a count), head dimension 128, Llama 3.1 405B's 128 query heads at batch 1, at the
    published short-benchmark rates (:func:`attention_seconds` with ``sustained=False``); dimensionless."""
    v.choice("kernel", kernel, ATTENTION_KERNELS[:-1])
    acc = hardware.accelerator_arg("accelerator", accelerator)
    ref = hardware.accelerator_arg("reference", reference)
    s = v.count("seq_length", seq_length, high=2**24, unit="tokens")
    return float(attention_seconds(1, 128, s, 128, ref, kernel=kernel, sustained=False)
                 / attention_seconds(1, 128, s, 128, acc, kernel=kernel, sustained=False))


_FA_BACKWARD_KERNELS = 3
"""FlashAttention's backward launches three kernels: a preprocessing pass (``dot(dO, O)``), the main kernel and a
dQ conversion (the FlashAttention repository's ``flash_bwd_preprocess``, ``flash_bwd``, ``flash_bwd_convert_dq``)."""

_FA2_A100_UTILISATION = 0.73
"""FlashAttention-2 forward reaches up to 73 % of the A100's peak (Dao 2023, abstract: "50-73 %")."""

FA2_RAMP = MappingProxyType({("forward", False): 104.0, ("forward", True): 403.0, ("backward", False): 191.0,
                             ("backward", True): 532.0})
"""FlashAttention-2's own sequence ramp on an H100 SXM, head dimension 128: ``s_half`` (tokens) of
``R(s) = R_max · s / (s + s_half)`` per (pass, causal), least squares in log rate on its published rates from 512
to 16k tokens (:func:`fit_attention_ramp`; the ``flash2`` rows of ``attention-published.csv``): the forward on the
FlashAttention-3 paper's figure (Shah et al. 2024, Fig. 5c-d), the backward on the FlashAttention-2 paper's
forward-plus-backward figure (Dao 2023, Fig. 7b, d; the backward carries 5/7 of those FLOPs, and its ramp is taken
as theirs, an approximation). The level comes from pull request 1791 (:func:`attention_model`). Until November 2026
FlashAttention-2 took FlashAttention-3's ramp, far steeper (``s_half`` 1,203 and 3,144 tokens causal): at 512
tokens it ran 2.5x slower than FlashAttention-2's own figure on the A100 (Fig. 4d)."""

FA2_LONGEST = 16384.0
"""Longest published sequence (tokens) behind :data:`FA2_RAMP`; the rate is held beyond it."""

FA2_OVER_TRITON = MappingProxyType({"forward": 1.4, "backward": 2.0})
"""How much faster FlashAttention-2 runs than FlashAttention in Triton, per pass: "around 1.3-1.5x faster than
FlashAttention in Triton in the forward pass and around 2x faster in the backward pass" (Dao 2023, sec. 4.1: A100
80GB SXM4, head dimensions 64 and 128, with and without a causal mask, 512 to 16k tokens); the forward takes the
middle of the stated range. The ``flash-triton`` kernel runs at FlashAttention-2's rates over these.

The same paper's figure of forward plus backward on the A100 (Fig. 4, ``attention-a100-published.csv``) has the
Triton kernel slower still, 2.0-2.4x below FlashAttention-2 at head dimension 128 from 2k tokens on (with these
ratios the model's is about 1.8x). Which Triton kernel the figure and the text measured the repository does not
settle: the figure's script (``benchmarks/benchmark_causal.py`` at the FlashAttention-2 release) stores the kernel it
sweeps as "Triton" from OpenAI Triton's ``triton.ops.flash_attention`` (Tillet's tutorial kernel), and gives the
name "FlashAttention Triton" to a one-off printout of Dao's own port (``flash_attn_triton.py``, which llm-foundry
copied). Dao's port's docstring puts its forward plus backward "slightly slower" than the first, CUDA,
FlashAttention's, and in the same figure that kernel's bars (``flash1`` rows) stand within 10 % of the Triton bars
with the causal mask: either way the A100 rate of the kernel llm-foundry ran is about the figure's, at most the
text's. No H100 measurement of it was found: on the H100 the ratios are an assumption."""

CUDNN_SEQ = (512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0)
"""The sequence lengths (tokens) at which :data:`CUDNN_OVER_FA3` was measured."""

_CUDNN_BACKWARD_OVER_FA3 = (0.965, 0.962, 0.928, 0.921, 0.927, 0.920)  # the figure's non-causal panel, both masks
CUDNN_OVER_FA3 = MappingProxyType({
    ("forward", False): (1.064, 1.016, 0.987, 0.955, 0.929, 0.918),
    ("forward", True): (1.079, 0.969, 0.929, 0.895, 0.879, 0.875),
    ("backward", False): _CUDNN_BACKWARD_OVER_FA3,
    ("backward", True): _CUDNN_BACKWARD_OVER_FA3,
})
"""cuDNN's fused attention over FlashAttention-3 on an H100 SXM, head dimension 128, BF16, at each length of
:data:`CUDNN_SEQ` (dimensionless, rounded to 3 places): the two kernels' bars side by side in the FlashAttention-3
paper's figures (Shah et al. 2024, Fig. 5c-d forward, Fig. 6 backward; the same machine, sizes and day; the
``flashattention3-figure-*`` rows of ``attention-published.csv``; :func:`fit_cudnn_ratio`). cuDNN is the faster on
short sequences and 8-13 % the slower from 4k tokens on. The figure has no causal backward panel: the causal
backward takes the non-causal one's ratios (an assumption). Until November 2026 the library took cuDNN equal to
FlashAttention-3."""


def fit_cudnn_ratio() -> dict:
    """Re-read :data:`CUDNN_OVER_FA3` from the published bars: per (pass, causal), cuDNN's rate over
    FlashAttention-3's in the same FlashAttention-3 paper figure at each length of :data:`CUDNN_SEQ`, rounded to
    3 places; the causal backward, which the figure lacks, takes the non-causal backward's."""
    pub = published_attention()
    figure = np.char.startswith(pub["source"].astype(str), "flashattention3-figure-")
    out = {}
    for pass_, causal in _RATE_KEYS:
        c = causal and pass_ == "forward"
        rates = []
        for kernel in ("cudnn", "flash3"):
            sel = figure & (pub["kernel"] == kernel) & (pub["pass"] == pass_) & (pub["causal"] == c)
            rates.append(dict(zip(pub["seqlen"][sel], pub["tflops"][sel])))
        out[pass_, causal] = tuple(round(float(rates[0][q] / rates[1][q]), 3) for q in CUDNN_SEQ)
    return out

_RATE_KEYS = (("forward", False), ("forward", True), ("backward", False), ("backward", True))
"""The (pass, causal) order of :attr:`AttentionModel.rates`."""

_HEAD_DIM_BACKWARD = {"flash2": (0.925, 0.915, 0.907, 0.9, 0.903, 0.904),
                      "cudnn": (0.872, 0.853, 0.849, 0.836, 0.834, 0.839),
                      "flash3": (0.861, 0.856, 0.842, 0.836, 0.844, 0.845)}
HEAD_DIM_64_OVER_128 = MappingProxyType({
    ("flash2", "forward", False): (0.913, 0.874, 0.878, 0.872, 0.87, 0.876),
    ("flash2", "forward", True): (0.942, 0.881, 0.879, 0.89, 0.886, 0.893),
    ("cudnn", "forward", False): (0.674, 0.65, 0.64, 0.67, 0.687, 0.694),
    ("cudnn", "forward", True): (0.714, 0.702, 0.69, 0.701, 0.716, 0.72),
    ("flash3", "forward", False): (0.713, 0.694, 0.736, 0.746, 0.768, 0.767),
    ("flash3", "forward", True): (0.675, 0.626, 0.712, 0.725, 0.764, 0.768),
    **{(k, "backward", c): r for k, r in _HEAD_DIM_BACKWARD.items() for c in (False, True)},
})
"""A fused attention kernel's rate at head dimension 64 over its rate at 128, per (kernel, pass, causal), at each
length of :data:`CUDNN_SEQ` (dimensionless, rounded to 3 places): the FlashAttention-3 paper's bars on one H100 SXM
(Shah et al. 2024, Fig. 5a-d forward, Fig. 6 backward; ``attention-head-dim-published.csv``;
:func:`fit_head_dim_ratio`). FlashAttention-2 keeps 87-94 % of its rate at the smaller head, FlashAttention-3 and
cuDNN, which the model prices from head dimension 128, 63-87 %: a head of 64 gives each tile half the arithmetic per
byte of K and V it loads. The figure has no causal backward panel: the causal backward takes the non-causal one's
ratios (an assumption). The attention model scales the rate linearly in the head dimension from these ratios at 64
to 1 at 128, holds the ratio below 64 and 1 above 128 (the paper's head dimension 256 is not used: the runs'
heads are at most 192), and applies them where its curves are the H100's (Hopper, and other accelerators scaled
from it), not on the A100 (FlashAttention-2's own figures there are not transcribed). Until November 2026 every
head dimension ran at head dimension 128's rate."""


def fit_head_dim_ratio() -> dict:
    """Re-read :data:`HEAD_DIM_64_OVER_128` from ``attention-head-dim-published.csv``: per (kernel, pass, causal), the
    rate at head dimension 64 over the rate at 128 at each length of :data:`CUDNN_SEQ`, rounded to 3 places; the
    causal backward, which the figure lacks, takes the non-causal backward's."""
    rows = _read_csv("attention-head-dim-published.csv")
    rate = {(r["kernel"], r["pass"], r["causal"] == "1", int(r["head_dim"]), float(r["seqlen"])): float(r["tflops"])
            for r in rows}
    out = {}
    for kernel in ("flash2", "cudnn", "flash3"):
        for pass_, causal in _RATE_KEYS:
            c = causal and pass_ == "forward"
            out[kernel, pass_, causal] = tuple(round(rate[kernel, pass_, c, 64, q] / rate[kernel, pass_, c, 128, q], 3)
                                               for q in CUDNN_SEQ)
    return out


def _fa2_points() -> tuple:
    """FlashAttention-2's published H100 rates, one ``(seqlen, FLOP/s)`` per :data:`_RATE_KEYS` entry: the
    ``flash2`` rows of ``attention-published.csv`` (flash-attention pull request 1791, head dimension 128)."""
    pub = published_attention()
    out = []
    for pass_, causal in _RATE_KEYS:
        sel = ((pub["kernel"] == "flash2") & (pub["pass"] == pass_) & (pub["causal"] == causal)
               & (pub["head_dim"] == 128.0) & (pub["source"] == "flash-attention-1791"))
        out.append((float(pub["seqlen"][sel][-1]), float(pub["tflops"][sel][-1]) * 1e12))
    return tuple(out)


@dataclass(frozen=True)
class AttentionModel:
    """Constants of the attention time model for one accelerator and kernel (SI units).

    ``rates``: ``((R_max, s_half, s_longest), ...)`` for (forward non-causal, forward causal, backward
    non-causal, backward causal), FLOP/s and tokens (the rate is held beyond ``s_longest``); ``fixed_seconds``: per
    kernel, s; ``gemm``: the :class:`GemmModel` for the unfused path; ``bandwidth``: bytes/s; ``source``: where the
    constants come from (fitted or extrapolated); ``ratios``: ``None``, or per (pass, causal) the factors at
    :data:`CUDNN_SEQ` that multiply the rate (interpolated linearly in the sequence length, held beyond the ends):
    cuDNN's measured ratio to FlashAttention-3 (:data:`CUDNN_OVER_FA3`); ``head_ratios``: ``None``, or per (pass,
    causal) the rate at head dimension 64 over the rate at 128 at :data:`CUDNN_SEQ` (:data:`HEAD_DIM_64_OVER_128`),
    scaled linearly in the head dimension to 1 at 128."""

    accelerator: str
    kernel: str
    rates: tuple
    fixed_seconds: float
    gemm: GemmModel
    bandwidth: float
    source: str
    ratios: tuple | None = None
    head_ratios: tuple | None = None


def attention_model(accelerator, kernel: str = "flash3", *, sustained: bool = True) -> AttentionModel:
    """The :class:`AttentionModel` of ``kernel`` on ``accelerator``.

    * ``flash3``: :data:`ATTENTION_FIT` on GH100 (H100/H800/H200; the H200 runs the H100's rates, same die).
      Off Hopper it does not exist: the A100 falls back to ``flash2`` (said in ``source``).
    * ``flash2``: on GH100 each (pass, causal) curve of FlashAttention-3 scaled to pass through FlashAttention-2's
      published H100 point of the same pass at 8,192 tokens (flash-attention pull request 1791: forward 370 and
      284 TFLOP/s non-causal and causal, backward 291 and 287); on the A100 the non-causal forward at 73 % of
      its peak (Dao 2023) and the other passes in the proportions measured on the H100 (an assumption: the same
      kernel's passes keep their ratios). The sequence ramp is FlashAttention-2's own (:data:`FA2_RAMP`).
    * ``flash-triton``: ``flash2``'s rates over :data:`FA2_OVER_TRITON` on every accelerator (the ratios were
      measured on the A100; on the H100 they are an assumption: neither kernel uses Hopper's new instructions).
    * ``cudnn``: ``flash3``'s curves times cuDNN's ratio to FlashAttention-3 as the FlashAttention-3 paper
      measured the two side by side, at each sequence length (:data:`CUDNN_OVER_FA3`: faster than FlashAttention-3
      on short sequences, 8-13 % slower from 4k tokens on).
    * ``unfused``: priced by the GEMM model and the memory roof (:func:`attention_seconds`).
    * ``cudnn`` and ``flash2`` (and so ``flash-triton``) on Blackwell (:data:`BLACKWELL_ATTENTION_ACCELERATORS`):
      each kernel's own published B200 rates (:data:`BLACKWELL_ATTENTION_FIT`) and GB300 rates
      (:data:`GB300_ATTENTION_FIT`); the GB200 at the B200's times its measured best-shape GEMM rate over the
      B200's. Until November 2026 they were extrapolated as below.
    * Other accelerators and kernels: the GH100 constants times their BF16 datasheet peak over the H100's: an
      **extrapolation** (on Blackwell, FlashAttention-3 itself does not run: read it as "a Hopper-class kernel").

    ``sustained=True`` (default) multiplies the published (short-benchmark) rates by the BF16 GEMM power-limit
    factor measured on the H200 (``GEMM_FIT``: sustained over burst), an assumption: attention's tensor-core
    loops draw the power a GEMM does. ``False`` gives the published rates, for comparison with them."""
    acc = hardware.accelerator_arg("accelerator", accelerator)
    v.choice("kernel", kernel, ATTENTION_KERNELS)
    v.flag("sustained", sustained)
    h100 = hardware.accelerator("H100 SXM")
    curves = tuple((*ATTENTION_FIT[key], ATTENTION_LONGEST[key]) for key in _RATE_KEYS)  # FlashAttention-3's
    hopper = acc.name in _GH100
    ampere = acc.name.startswith("A100")
    note = ""
    effective = "flash2" if kernel == "flash-triton" else kernel  # FlashAttention-2's curves, slowed below
    if kernel in ("flash3", "cudnn") and ampere:
        effective, note = "flash2", f"{kernel} needs Hopper: falls back to FlashAttention-2 rates on the A100; "
    scales = (acc.peak("bf16") / h100.peak("bf16"),) * 4
    blackwell = acc.name in BLACKWELL_ATTENTION_ACCELERATORS and effective in ("cudnn", "flash2")
    if blackwell:
        curves, scales, src = _blackwell_curves(acc, effective)
    elif effective == "flash2":  # each pass through its published FlashAttention-2 point, on FlashAttention-2's ramp
        points = _fa2_points()
        level = ((_FA2_A100_UTILISATION * acc.peak("bf16") / points[0][1],) * 4 if ampere else scales)
        ramps = tuple(FA2_RAMP[key] for key in _RATE_KEYS)
        curves = tuple((rate * (s + h) / s, h, FA2_LONGEST) for (s, rate), h in zip(points, ramps))
        scales = level
        src = ("FlashAttention-2 on the A100: its non-causal forward at 73 % of peak (Dao 2023), the other passes in "
               "the proportions measured on an H100 (flash-attention #1791)" if ampere else
               "FlashAttention-2, each pass through its published H100 point (flash-attention #1791)")
        src += ", on its own published sequence ramp (Dao 2023, Shah et al. 2024)"
    else:
        src = ("FlashAttention-3, fitted on published H100 points" + ("" if kernel != "cudnn" else
               "; cuDNN at its measured ratio to FlashAttention-3 at each sequence length (Shah et al. 2024, "
               "Figs. 5-6)"))
    if kernel == "flash-triton":
        scales = tuple(k / FA2_OVER_TRITON[p] for k, (p, _) in zip(scales, _RATE_KEYS))
        src = (f"FlashAttention in Triton: FlashAttention-2's rates over {FA2_OVER_TRITON['forward']:.1f} "
               f"(forward) and {FA2_OVER_TRITON['backward']:.1f} (backward), as Dao 2023 measured the two on the "
               "A100; " + src)
    if kernel == "unfused":
        src = "unfused: batched GEMMs at the GEMM model, softmax at the memory roof"
    if not (hopper or ampere or blackwell):
        src += f"; {acc.name}: EXTRAPOLATED by its BF16 peak over the H100's"
    if sustained and kernel != "unfused":
        scales = tuple(k * GEMM_FIT["bf16_sustained"] / GEMM_FIT["bf16_burst"] for k in scales)
        src += "; times the power-limit factor (sustained)"
    rates = tuple((r * k, s, cap) for (r, s, cap), k in zip(curves, scales))
    ratios = tuple(CUDNN_OVER_FA3[key] for key in _RATE_KEYS) \
        if (kernel == "cudnn" and effective == "cudnn" and not blackwell) else None
    head = None
    if kernel != "unfused" and not ampere:  # the H100's curves: their measured head-dimension ratios
        head = tuple(HEAD_DIM_64_OVER_128[effective, p, c] for p, c in _RATE_KEYS)
        src += "; head dimensions below 128 at their ratio to 128 measured on an H100 (Shah et al. 2024, Figs. 5-6)"
    return AttentionModel(accelerator=acc.name, kernel=kernel, rates=rates, fixed_seconds=KERNEL_GPU_SECONDS,
                          gemm=gemm_model(acc, "bf16", sustained=sustained), bandwidth=memory_bandwidth(acc),
                          source=note + src, ratios=ratios, head_ratios=head)


def _blackwell_curves(acc, kernel: str) -> tuple:
    """``(curves, scales, source)`` of ``kernel`` ("cudnn" or "flash2") on the Blackwell accelerator ``acc``: its own
    published rates where it has them (:data:`BLACKWELL_ATTENTION_FITS`: the B200, the GB300; the causal curve for
    both masks), on another Blackwell part the B200's times the two parts' measured best-shape BF16 GEMM rates (an
    assumption: the same die, its clock and power limit showing in both)."""
    own = acc.name if acc.name in BLACKWELL_ATTENTION_FITS else "B200"
    b200 = hardware.accelerator("B200")
    level = 1.0 if own == acc.name else acc.matmul_rate("bf16") / b200.measured("bf16")
    fit = BLACKWELL_ATTENTION_FITS[own]
    curves = tuple((*fit[kernel, p], BLACKWELL_ATTENTION_LONGEST) for p, _ in _RATE_KEYS)
    src = (f"{ATTENTION_KERNEL_LABELS[kernel]} fitted on its published {own} points from "
           f"{BLACKWELL_ATTENTION_SHORTEST:,.0f} tokens on (NVIDIA cudnn-frontend's {own} benchmark, causal; the "
           "non-causal mask takes the causal curve)")
    if acc.name != own:
        src += f"; {acc.name}: the B200's rates times the two's measured best-shape BF16 GEMM rates ({level:.3f})"
    return curves, (level,) * 4, src


def _attention_flops(batch, heads, seq_q, seq_kv, head_dim, causal, backward):
    """FLOPs as FlashAttention's papers count them: forward ``4 b h s_q s_kv d`` (two matmuls), halved when causal;
    backward 2.5x the forward (five matmuls against two). Query heads count (GQA shares K/V, not the math)."""
    flops = 4.0 * batch * heads * seq_q * seq_kv * head_dim
    if causal:
        flops = flops * 0.5
    return flops * 2.5 if backward else flops


def _attention_seconds(batch, heads, seq_q, seq_kv, head_dim, a: AttentionModel, causal: bool, backward: bool, xp):
    """Time of one attention call (forward, or backward), s; floats or arrays, no validation. ``causal`` and
    ``backward`` are Python bools."""
    if a.kernel == "unfused":
        g, bh = a.gemm, batch * heads
        scores = bh * seq_q * seq_kv
        if not backward:  # S = Q K^T, P = softmax(mask(S)) (reads S, writes P), O = P V
            return (_gemm_seconds(seq_q, seq_kv, head_dim, g, xp, bh) + _gemm_seconds(seq_q, head_dim, seq_kv, g, xp, bh)
                    + _memory_seconds(scores * 4.0, a.bandwidth, 1.0, a.fixed_seconds))
        # dV = P^T dO, dP = dO V^T, dS = softmax'(P, dP) (reads P, dP, writes dS), dQ = dS K, dK = dS^T Q
        return (_gemm_seconds(seq_kv, head_dim, seq_q, g, xp, bh) + _gemm_seconds(seq_q, seq_kv, head_dim, g, xp, bh)
                + _memory_seconds(scores * 6.0, a.bandwidth, 1.0, a.fixed_seconds)
                + _gemm_seconds(seq_q, head_dim, seq_kv, g, xp, bh) + _gemm_seconds(seq_kv, head_dim, seq_q, g, xp, bh))
    key = 2 * int(backward) + int(causal)
    r_max, s_half, s_longest = a.rates[key]
    s = xp.minimum(seq_kv, s_longest)
    rate = r_max * s / (s + s_half)
    if a.ratios is not None:
        rate = rate * xp.interp(seq_kv, CUDNN_SEQ, a.ratios[key])
    if a.head_ratios is not None:  # 1 at head dimension 128 and above, the ratio at 64 and below, linear between
        at_64 = xp.interp(seq_kv, CUDNN_SEQ, a.head_ratios[key])
        rate = rate * (at_64 + (1.0 - at_64) * xp.minimum(1.0, xp.maximum(0.0, (head_dim - 64.0) / 64.0)))
    kernels = _FA_BACKWARD_KERNELS if backward else 1
    return _attention_flops(batch, heads, seq_q, seq_kv, head_dim, causal, backward) / rate + kernels * a.fixed_seconds


def _attention_args(batch, heads, seq_length, head_dim, kv_heads, seq_kv):
    def c(name, value, unit):
        return np.asarray(v.count(name, value, scalar=False, high=2**31, unit=unit), dtype=float)

    batch, heads = c("batch", batch, "sequences"), c("heads", heads, "query heads")
    seq_length, head_dim = c("seq_length", seq_length, "tokens"), c("head_dim", head_dim, "elements")
    if kv_heads is not None:
        kv = c("kv_heads", kv_heads, "heads")
        if np.any(kv > heads):
            raise ValueError(f"kv_heads={v.show(kv_heads)} must not exceed heads={v.show(heads)}")
    seq_kv = seq_length if seq_kv is None else c("seq_kv", seq_kv, "tokens")
    return v.broadcast(batch=batch, heads=heads, seq_length=seq_length, head_dim=head_dim, seq_kv=seq_kv)


def attention_flops(batch, heads, seq_length, head_dim, *, causal: bool = True, backward: bool = False, seq_kv=None):
    """FLOPs of attention's core as FlashAttention's papers count them (Dao 2023, sec. 4.1; Shah et al. 2024,
    sec. 4.1): forward ``4 b h s s_kv d``, halved when causal, backward 2.5x the forward. Vectorised."""
    v.flag("causal", causal)
    v.flag("backward", backward)
    b, h, s, d, skv = _attention_args(batch, heads, seq_length, head_dim, None, seq_kv)
    return as_scalar(_attention_flops(b, h, s, skv, d, causal, backward))


def attention_seconds(batch, heads, seq_length, head_dim, accelerator, *, kv_heads=None, causal: bool = True,
                      kernel: str = "flash3", backward: bool = False, dtype: str = "bf16", seq_kv=None,
                      sustained: bool = True):
    """Time of attention's core (softmax(Q K^T) V, or its backward) on ``accelerator``, s. Vectorised.

    Fused kernels: :func:`attention_flops` over the kernel's achieved rate ``R_max · s_kv / (s_kv + s_half)``
    (:func:`attention_model`), plus :data:`KERNEL_GPU_SECONDS` per kernel (three for the backward). Unfused:
    the two (forward) or four (backward) batched GEMMs at the GEMM model, plus the softmax reading and writing the
    ``b h s s_kv`` BF16 scores at the memory roof (4 bytes per score forward, 6 backward); causal masking saves
    no work there. ``kv_heads`` (GQA) is accepted and changes nothing in the time (fewer K/V bytes; no published
    rate change read). Only ``dtype="bf16"`` (or ``"fp16"``) is modelled: FP8 attention is not. ``sustained``:
    see :func:`attention_model`."""
    v.flag("causal", causal)
    v.flag("backward", backward)
    v.choice("dtype", dtype, ("bf16", "fp16"))
    a = attention_model(accelerator, kernel, sustained=sustained)
    b, h, s, d, skv = _attention_args(batch, heads, seq_length, head_dim, kv_heads, seq_kv)
    return as_scalar(_attention_seconds(b, h, s, skv, d, a, causal, backward, np))


def _fit_saturating(s, r) -> tuple[float, float]:
    """``(R_max, s_half)`` of ``R(s) = R_max s / (s + s_half)`` minimising the squared log error over the points
    ``(s, r)``: a grid over ``s_half`` in 1-token steps from 0 to 8,000, ``R_max`` solved for each (the geometric
    mean of ``r`` over the curve's shape); the first best ``s_half`` on a tie."""
    halves = np.arange(0.0, 8001.0, 1.0)[:, None]
    log_err = np.log(r / (s / (s + halves)))
    mean = log_err.mean(axis=1, keepdims=True)
    best = int(np.argmin(np.sum((log_err - mean) ** 2, axis=1)))
    return float(np.exp(mean[best, 0])), float(halves[best, 0])


_FA3_FIT_SOURCES = MappingProxyType({("forward", False): "pytorch-benchmark-2391", ("forward", True): "tritonbench-1267",
                                     ("backward", False): "flashattention3-figure-bwd",
                                     ("backward", True): "tritonbench-1267"})
"""The benchmark each :data:`ATTENTION_FIT` curve is fitted on (the FlashAttention-3 paper's forward bars give only
cuDNN's ratio to it: :data:`CUDNN_OVER_FA3`)."""


def fit_attention() -> dict:
    """Re-run the fits behind :data:`ATTENTION_FIT`: per (pass, causal) group of the published FlashAttention-3
    points, ``R_max`` and ``s_half`` minimising the squared log error of ``R(s) = R_max s / (s + s_half)`` (grid
    over ``s_half`` in 1-token steps, ``R_max`` solved per step). Returns ``{(pass, causal): (R_max, s_half)}``."""
    pub = published_attention()
    out = {}
    for key in ATTENTION_FIT:
        sel = ((pub["kernel"] == "flash3") & (pub["pass"] == key[0]) & (pub["causal"] == key[1])
               & (pub["source"] == _FA3_FIT_SOURCES[key]))
        out[key] = _fit_saturating(pub["seqlen"][sel], pub["tflops"][sel] * 1e12)
    return out



# --------------------------------------------------------------------------------------
# The book's own kernel measurement
# --------------------------------------------------------------------------------------
MEASURED_KERNELS = MappingProxyType({"H100 SXM": "kernels-nvidia-h100-80gb-hbm3"})
"""Catalog accelerator -> stem of the book's kernel measurement in ``atscale/data`` (``.csv.gz``: one row per timed
repetition; ``.json``: provenance, clocks and power per phase, the kernels each variant launched). Written by
``tools/measure-kernels.py`` on a lent NVIDIA H100 80GB HBM3 (SXM, 700 W) with PyTorch 2.11, CUDA 13.0, cuBLAS 13.1
and cuDNN 9.19 in November 2026. Two runs of the same script on an H200 are shipped beside it as raw data
(``kernels-nvidia-h200``, ``kernels-nvidia-h200-repeat``)."""


@dataclass(frozen=True, eq=False)
class KernelMeasurement:
    """The book's kernel measurement on one GPU (:data:`MEASURED_KERNELS`). ``points``: one
    ``(experiment, variant, shape, seconds, repetitions)`` per measured point, ``shape`` a read-only mapping of the
    point's sizes (elements, tokens, GEMMs), ``seconds`` the median over its timed repetitions (for ``sustained``, over
    the second half of the run, once the clock has settled); ``gpu``, ``date`` and ``software`` from the provenance
    file, ``kernels`` the kernels each variant launched as the profiler named them, ``sm_clock`` the median SM clock
    (Hz) ``nvidia-smi`` sampled during each phase of the run (by the script's phase names: ``"sustained 0 bf16"``,
    ``"sustained 1 fp8-tensorwise-fast"``, ...)."""

    accelerator: str
    gpu: str
    date: str
    software: Mapping
    kernels: Mapping
    points: tuple
    sm_clock: Mapping


_MEASURED_KERNELS: dict = {}


def measured_kernels(accelerator: str = "H100 SXM") -> KernelMeasurement:
    """The :class:`KernelMeasurement` shipped for ``accelerator`` (a key of :data:`MEASURED_KERNELS`)."""
    v.choice("accelerator", accelerator, tuple(MEASURED_KERNELS))
    if accelerator not in _MEASURED_KERNELS:
        import gzip
        import json

        data = files("atscale") / "data"
        stem = MEASURED_KERNELS[accelerator]
        meta = json.loads((data / f"{stem}.json").read_text())
        groups: dict = {}
        with (data / f"{stem}.csv.gz").open("rb") as raw, gzip.open(raw, "rt", newline="") as f:
            for row in csv.DictReader(f):
                groups.setdefault((row["experiment"], row["variant"], row["shape"]), []).append(float(row["time_s"]))
        points = []
        for (experiment, variant, shape), times in groups.items():
            if experiment == "sustained":
                times = times[len(times) // 2:]
            sizes = MappingProxyType({k: (val if k == "model" or k == "matrix" else float(val))
                                      for k, val in (kv.split("=") for kv in shape.split(";"))})
            points.append((experiment, variant, sizes, float(np.median(times)), len(times)))
        _MEASURED_KERNELS[accelerator] = KernelMeasurement(
            accelerator, meta["gpu"], meta["date_utc"][:10], MappingProxyType(dict(meta["software"])),
            MappingProxyType({k: tuple(names) for k, names in meta["kernels"].items()}), tuple(points),
            MappingProxyType({phase: 1e6 * float(d["clocks.sm"]["median"])
                              for phase, d in meta["nvidia_smi_during_run"].items() if "clocks.sm" in d}))
    return _MEASURED_KERNELS[accelerator]
