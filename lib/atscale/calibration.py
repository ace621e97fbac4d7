"""The calibrated constants of the step-time model: :class:`Calibration` (passed down, never patched), the fitted
:data:`CALIBRATION` and its read-only aliases.

Low in the import graph (it needs only :mod:`atscale.hardware` and the argument checks), so every cost-term module
can take a ``calibration``. The plan-level step time that reads these constants is :mod:`atscale.parallelism`; the
fit that produced them is :mod:`atscale.fitting` (:func:`~atscale.fitting.calibrate`), on the published runs of
:mod:`atscale.runs` (:data:`~atscale.runs.CALIBRATION_RUNS`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import _validate as _v
from . import hardware

__all__ = ["Calibration", "CALIBRATION", "H100_ERA", "BLACKWELL", "COMPUTE_EFFICIENCY_MAX", "COMPUTE_EFFICIENCY_MAX_H100",
           "COMPUTE_HALF_WIDTH", "COMPUTE_HALF_HIDDEN"]


@dataclass(frozen=True)
class Calibration:
    """The calibrated constants of :func:`~atscale.parallelism.compute_efficiency` and of FP8 (all dimensionless).

    ``efficiency_max``: fraction of the accelerator's *measured* matmul ceiling
    (``Accelerator.measured_matmul_flops``) that a layer's matmuls and attention core reach when the
    matrices are wide, on accelerators released before 2022 (fitted on A100 runs). ``efficiency_max_h100``:
    the same on accelerators of 2022 and later (fitted on H100 runs; H800, H200, B200 and MI300X, which have
    no calibration runs, take it too: an extrapolation). One constant per generation because with one shared
    constant every BF16 H100 calibration run came out optimistic (:func:`~atscale.fitting.calibrate`): an H100 layer reaches a
    smaller share of its measured ceiling in a long run than an A100 layer does. Plausible reasons, not
    measured here: a best-shape matmul benchmark runs for milliseconds, while a training step holds the GPU
    at its power limit (700 W), where the sustained clock can fall below the boost clock the peak is quoted
    at; and the fixed cost of each kernel weighs more when the matmuls between them run three times faster.
    ``half_width``: the per-GPU width ``h / tp`` at which they reach half of it
    (narrow per-GPU matrices leave tensor cores idle: wave quantisation, a smaller share of time in
    large GEMMs; Narayanan et al. 2021, sec. 5.1). ``half_hidden``: the model width at which a layer
    runs at half speed for its per-GPU width (small models spend more of a layer in short kernels).

    The memory-bound kernels (norms, RoPE, activations, residual adds, FP8 casts) are *not* in these
    constants: the step-time model charges them at the HBM bandwidth (:func:`~atscale.parallelism.elementwise_bytes_per_token`).
    :data:`CALIBRATION` is the least-squares fit of :func:`~atscale.fitting.calibrate` on :data:`~atscale.runs.CALIBRATION_RUNS`; any
    other instance is a "what if", passed down explicitly (``step_time(..., calibration=...)``).

    ``fp8_matmul_speedup``: how much faster a layer's matmuls run in an FP8 recipe than in BF16, in training
    (dimensionless). The FP8 dense peak is twice the BF16 one, but a training step's FP8 GEMMs are smaller
    than a benchmark's, carry per-tensor scaling and keep some of their inputs in BF16 (Transformer Engine's
    delayed-scaling recipe; Micikevicius et al. 2022, sec. 4), so they gain less. Fitted on one published FP8
    step (:data:`~atscale.runs.CALIBRATION_RUNS`, delayed scaling on H100); the other FP8 runs of :data:`~atscale.runs.VALIDATION_RUNS` check
    it. Other scaling recipes (per-tensor current scaling, DeepSeek-V3's block-wise 1 x 128 / 128 x 128 scales,
    MXFP8's 32-element blocks) take the same constant: for them, and for other GPUs, it is an extrapolation.

    ``kernel_efficiency`` (accelerators before 2022) and ``kernel_efficiency_h100`` (2022 and later, Blackwell
    apart): the share of
    the kernel model's benchmark rates (:mod:`atscale.kernels`: GEMMs by shape, fused attention) that a layer's
    kernels keep inside a training step, for the operator-level compute (``step_time(..., stack=...)``,
    :mod:`atscale.operators`). With :attr:`kernel_efficiency_blackwell` the only fitted constants of that model,
    one per generation, fitted on the BF16 runs of :data:`~atscale.runs.CALIBRATION_RUNS`
    (:func:`~atscale.fitting.calibrate_operators`); the five
    constants above belong to the layer-efficiency curve (``stack=None``) and are not read by it.

    ``kernel_efficiency_blackwell``: the same share for the Blackwell accelerators (:data:`BLACKWELL`); ``None``
    (the default of a hand-made calibration): :attr:`kernel_efficiency_h100`, as every calibration was before
    November 2026. In :data:`CALIBRATION` it is fitted (:func:`~atscale.fitting.calibrate_operators`) on
    :data:`~atscale.runs.BLACKWELL_RUNS`, NVIDIA's two published 8-GPU Llama 3 8B steps on B200 and GB200, which
    are FP8 (NVIDIA publishes no BF16 dense Blackwell step): so it holds what the Blackwell GEMM rates lose in a
    training step and whatever the kernel model misses of FP8 there, together; for BF16 it is an extrapolation.
    Taken apart from the H100's because the Hopper constant left every dense Blackwell run 12-20 % too fast; that
    fit gave 0.81 while Blackwell's attention ran at the H100's rates times the peak ratio, and 0.89, a point from
    the H100's, since cuDNN and FlashAttention-2 run at their own published B200 rates
    (:data:`atscale.kernels.BLACKWELL_ATTENTION_FIT`, November 2026).

    ``fp8_rate_factor``: the FP8 GEMMs' sustained rate in the operator-level compute, as a multiple of the kernel
    model's (dimensionless; 1 in :data:`CALIBRATION`). The kernel model derives that rate, unmeasured, as the
    published burst FP8 rate times the power-limit factor measured for BF16 (:data:`atscale.kernels.GEMM_FIT`): an
    assumption that FP8's tensor cores lose the same share of their clock at the 700 W limit. Not fitted; other
    values are "what ifs" (:func:`atscale.accuracy.fp8_rate_sensitivity` shows how the verdicts move with it).
    Not read by the curve, whose FP8 gain is :attr:`fp8_matmul_speedup`.

    ``rowwise_linear_only``: how the operator-level compute reads torchao's published rowwise FP8 speedups
    (:func:`atscale.kernels.rowwise_speedup`): False (:data:`CALIBRATION`), as published, the LayerNorm and sigmoid
    timed with each linear layer left in; True, removed (a "what if": :func:`atscale.accuracy.rowwise_sensitivity`).
    Not fitted.

    ``a2a_nvlink_share``, ``a2a_network_share``: the share of the link model's NVLink rate and of its NIC rate
    (:func:`atscale.collectives.link_cost`, calibrated on all-reduces) that expert parallelism's all-to-alls
    achieve, in both models (dimensionless; 1 in :data:`CALIBRATION`). Not fitted: DeepEP's published kernels reach
    less (:func:`atscale.experts.deepep_link_shares`), NCCL's all-to-all, which Megatron-Core's dispatcher runs, has
    no comparable published benchmark; other values are "what ifs" (:func:`atscale.accuracy.a2a_rate_sensitivity`).

    ``attention_rate_factor``: the fused attention kernels' rates in the operator-level compute, as a multiple of the
    kernel model's (:func:`atscale.kernels.attention_model`, from published benchmarks; dimensionless, 1 in
    :data:`CALIBRATION`). Not fitted: the book's own H100 measurement of 2026 kernels runs faster at long sequences
    than the published curves (:func:`atscale.accuracy.kernel_check`), and other values are "what ifs"
    (:func:`atscale.accuracy.attention_rate_sensitivity`). Not read by the curve, nor by the unfused path (priced by
    the GEMM model).
    """

    efficiency_max: float = 0.88
    half_width: float = 75.0
    half_hidden: float = 625.0
    fp8_matmul_speedup: float = 1.42
    efficiency_max_h100: float = 0.79
    kernel_efficiency: float = 1.0
    kernel_efficiency_h100: float = 1.0
    fp8_rate_factor: float = 1.0
    rowwise_linear_only: bool = False
    a2a_nvlink_share: float = 1.0
    a2a_network_share: float = 1.0
    attention_rate_factor: float = 1.0
    kernel_efficiency_blackwell: float | None = None

    def __post_init__(self):
        for name in ("efficiency_max", "efficiency_max_h100"):
            object.__setattr__(self, name, _v.number(name, getattr(self, name), low=0, low_open=True, high=1,
                                                     scalar=True))
        # shares of the kernel model's rates (above 1: the kernel model is too slow)
        for name in ("kernel_efficiency", "kernel_efficiency_h100", "fp8_rate_factor", "a2a_nvlink_share",
                     "a2a_network_share", "attention_rate_factor"):
            object.__setattr__(self, name, _v.number(name, getattr(self, name), low=0, low_open=True, high=1.5,
                                                     scalar=True))
        for name in ("half_width", "half_hidden"):
            object.__setattr__(self, name, _v.nonnegative(name, getattr(self, name), scalar=True))
        if self.kernel_efficiency_blackwell is not None:
            object.__setattr__(self, "kernel_efficiency_blackwell",
                               _v.number("kernel_efficiency_blackwell", self.kernel_efficiency_blackwell, low=0,
                                         low_open=True, high=1.5, scalar=True))
        _v.flag("rowwise_linear_only", self.rowwise_linear_only)
        object.__setattr__(self, "fp8_matmul_speedup",
                           _v.number("fp8_matmul_speedup", self.fp8_matmul_speedup, low=1, high=2, scalar=True))

    def scaled(self, factor: float) -> "Calibration":
        """The same calibration with both generations' :attr:`efficiency_max` multiplied by ``factor`` (each
        capped at 1)."""
        factor = _v.positive("factor", factor, scalar=True)
        return dataclasses.replace(self, efficiency_max=min(1.0, self.efficiency_max * factor),
                                   efficiency_max_h100=min(1.0, self.efficiency_max_h100 * factor))

    def kernel_efficiency_for(self, accelerator: hardware.Accelerator | str) -> float:
        """:attr:`kernel_efficiency_blackwell` for a Blackwell accelerator (:data:`BLACKWELL`; when it is ``None``,
        :attr:`kernel_efficiency_h100`), :attr:`kernel_efficiency_h100` for another one released in
        :data:`H100_ERA` or later, else :attr:`kernel_efficiency` (dimensionless)."""
        accelerator = hardware.accelerator_arg("accelerator", accelerator)
        if accelerator.name in BLACKWELL and self.kernel_efficiency_blackwell is not None:
            return self.kernel_efficiency_blackwell
        return self.kernel_efficiency_h100 if accelerator.year >= H100_ERA else self.kernel_efficiency

    def efficiency_max_for(self, accelerator: hardware.Accelerator | str) -> float:
        """:attr:`efficiency_max_h100` for an accelerator (or its catalog name) released in :data:`H100_ERA` or
        later, else :attr:`efficiency_max` (dimensionless)."""
        accelerator = hardware.accelerator_arg("accelerator", accelerator)
        return self.efficiency_max_h100 if accelerator.year >= H100_ERA else self.efficiency_max

    def for_accelerator(self, accelerator: hardware.Accelerator | str) -> "Calibration":
        """This calibration with :attr:`efficiency_max` set to ``accelerator``'s generation's
        (:meth:`efficiency_max_for`): what the cost terms read."""
        return dataclasses.replace(self, efficiency_max=self.efficiency_max_for(accelerator))


H100_ERA = 2022
"""The release year from which an accelerator takes :attr:`Calibration.efficiency_max_h100` (the H100's)."""

BLACKWELL = ("B200", "GB200", "GB300")
"""The catalog's Blackwell accelerators: they take :attr:`Calibration.kernel_efficiency_blackwell` in the
operator-level compute (the curve keeps :attr:`Calibration.efficiency_max_h100` for them)."""


CALIBRATION = Calibration(efficiency_max=0.88, half_width=75.0, half_hidden=625.0, fp8_matmul_speedup=1.42,
                          efficiency_max_h100=0.79, kernel_efficiency=0.93, kernel_efficiency_h100=0.90,
                          kernel_efficiency_blackwell=0.89)
"""The fitted constants (:func:`~atscale.fitting.calibrate` on :data:`~atscale.runs.CALIBRATION_RUNS` for the curve's five,
:func:`~atscale.fitting.calibrate_operators` on its BF16 runs and on :data:`~atscale.runs.BLACKWELL_RUNS` for the three
kernel efficiencies); the default of every function that takes a ``calibration``."""

COMPUTE_EFFICIENCY_MAX = CALIBRATION.efficiency_max
""":attr:`Calibration.efficiency_max` of :data:`CALIBRATION`, for reading (dimensionless)."""
COMPUTE_EFFICIENCY_MAX_H100 = CALIBRATION.efficiency_max_h100
""":attr:`Calibration.efficiency_max_h100` of :data:`CALIBRATION`, for reading (dimensionless)."""
COMPUTE_HALF_WIDTH = CALIBRATION.half_width
""":attr:`Calibration.half_width` of :data:`CALIBRATION`, for reading (dimensionless)."""
COMPUTE_HALF_HIDDEN = CALIBRATION.half_hidden
""":attr:`Calibration.half_hidden` of :data:`CALIBRATION`, for reading (dimensionless)."""
