"""Blackwell's own kernel efficiency (issue 31): fitted on NVIDIA's two 8-GPU Llama 3 8B steps on B200 and GB200
(Megatron-Bridge 25.11, FP8 with current scaling; runs.BLACKWELL_RUNS), declared before their errors were computed,
and checked on every other Blackwell run. Measured when it was introduced (November 2026): 0.81, while Blackwell's
attention ran at the H100's rates times the peak ratio; 0.89, a point from the H100's 0.90, since cuDNN and
FlashAttention-2 run at their own published B200 rates (atscale.kernels.BLACKWELL_ATTENTION_FIT): most of what the
first fit took for a lower kernel efficiency was attention slower than the extrapolation."""

import dataclasses
import statistics

import pytest

from atscale import accuracy, calibration, fitting, runs
from atscale.calibration import BLACKWELL, CALIBRATION, Calibration


def test_the_calibration_runs_are_declared_and_apart():
    bw = runs.BLACKWELL_RUNS
    assert [r.label for r in bw] == ["Llama 3 8B, 8 B200, Megatron-Bridge 25.11, FP8",
                                     "Llama 3 8B, 8 GB200, Megatron-Bridge 25.11, FP8"]
    for r in bw:
        assert r.role == "calibration" and r.dtype == "fp8" and r.details["float8_recipe"] == "tensorwise"
        assert (r.plan.tp, r.plan.pp, r.plan.cp, r.plan.dp, r.plan.micro_batch, r.plan.global_batch) == (1, 1, 1, 8, 2, 128)
        assert "before" in r.assumed and "v0.2.0" in r.details["url"]
        assert r.cluster.accelerator.name in BLACKWELL and r.cluster.num_gpus == 8
    # the published rate as a step: 128 x 8,192 tokens over 8 GPUs at the printed tokens/s per GPU
    assert [r.published_seconds for r in bw] == pytest.approx([128 * 8192 / (t * 8) for t in (30624, 31508)], rel=1e-6)
    # the curve's calibration runs do not hold them (its FP8 runs need a BF16 twin); the operator model's do
    labels = {r.label for r in bw}
    assert not labels & {r.label for r in runs.CALIBRATION_RUNS}
    assert labels <= {r.label for r in runs.OPERATOR_CALIBRATION_RUNS}
    assert not labels & {r.label for r in accuracy.issue_31_runs()}


def test_the_constant_is_the_fit_on_those_two_runs():
    b = accuracy.blackwell_calibration()
    assert b.value == CALIBRATION.kernel_efficiency_blackwell == 0.89 and b.hopper == CALIBRATION.kernel_efficiency_h100
    assert fitting.calibrate_operators(runs.BLACKWELL_RUNS)[0].kernel_efficiency_blackwell == 0.89
    assert dict(b.alone) == {"Llama 3 8B, 8 B200, Megatron-Bridge 25.11, FP8": 0.89,  # 0.82 extrapolated attention
                             "Llama 3 8B, 8 GB200, Megatron-Bridge 25.11, FP8": 0.88}  # 0.79
    # with the H100's constant both are within 2 % too (-7.7 and -10.1 % with the extrapolated attention)
    assert [v[0] for v in b.calibration.values()] == pytest.approx([-0.005, -0.015], abs=0.002)
    assert all(abs(v[1]) < 0.02 for v in b.calibration.values())


def test_every_other_blackwell_run_validates_it_and_is_still_too_fast():
    """Ten validation runs, each a little nearer its published step than with the H100's constant and each still
    too fast: NVIDIA's dense 405B ones by 8-16 % (3-12 % while attention was extrapolated and the constant 0.81),
    gpt-oss by 21-33 % (20-32 %); the H100's Megatron-Bridge 25.11 405B row is too fast as well (-11 %) beside its 8B
    row (+5 %), the same pattern on the older generation. Read after the first fit and added to the validation
    runs: Megatron-Bridge 25.11's B200 row of Llama 3.1 405B (128 GPUs), -12.5 % (-8.4 %), and the one Blackwell run
    of another stack, torchtitan's Llama 3.1 8B on 8 power-limited B200 (torchao's benchmark, cuDNN attention as
    torchtitan asks for it on Blackwell), -54 % in BF16 and -57 % in FP8 (-45 and -48 % with extrapolated
    FlashAttention-2); its FP8/BF16 ratio the model overestimates by 7 % (5 %). Then the four GB200 rows of NVIDIA's
    MoE report (Yan et al. 2026; added November 2026, after the fit): three a little too fast (-1.5 to -2.8 %, nearer
    than the H100's constant's -2.4 to -3.5 %) and DeepSeek-V3 in BF16 too slow, +9.9 % (+8.9 % with the H100's
    constant): the one GB200 run the fitted constant takes further from its step. Last the report's three GB300
    rows (added once the catalog had a GB300, November 2026), all too slow and each taken further by the fitted
    constant: DeepSeek-V3 +5.0 % (+4.0 % with the H100's), Qwen3-235B-A22B +7.0 % (+6.3 %) at 4,096 tokens and
    +21.9 % (+20.7 %) at 131,072."""
    b = accuracy.blackwell_calibration()
    assert len(b.validation) == 17
    report = {k: v for k, v in b.validation.items() if k.endswith("Megatron-Core MoE report") and "GB300" not in k}
    assert len(report) == 4
    gb300 = {k: v for k, v in b.validation.items() if "GB300" in k}
    assert [x for pair in sorted(gb300.values()) for x in pair] == pytest.approx(
        [0.040, 0.050, 0.063, 0.070, 0.207, 0.219], abs=0.002)
    assert all(before < after < 0 for k, (before, after) in b.validation.items() if k not in gb300 and (
        k not in report or "BF16" not in k or k.startswith("Qwen3")))
    (slow,) = [v for k, v in report.items() if k.startswith("DeepSeek-V3") and "BF16" in k]
    assert slow == pytest.approx((0.089, 0.099), abs=0.002)
    assert sorted(a for k, (_, a) in report.items() if a < 0) == pytest.approx([-0.028, -0.026, -0.015], abs=0.002)
    nvidia = sorted(a for k, (_, a) in b.validation.items() if k.startswith("Llama") and "torchtitan" not in k)
    assert nvidia == pytest.approx([-0.164, -0.154, -0.125, -0.116, -0.112, -0.075], abs=0.002)
    titan = sorted(a for k, (_, a) in b.validation.items() if "torchtitan" in k)
    assert titan == pytest.approx([-0.567, -0.537], abs=0.002)
    assert all(r.attention_kernel == "cudnn" for r in runs.ALL_RUNS if "B200, torchtitan" in r.label)
    (pair,) = [p for p in runs.fp8_pairs() if "B200" in p.label]
    assert (pair.published, pair.operators / pair.published - 1) == pytest.approx((1.254, 0.070), abs=0.002)
    assert min(before for before, _ in b.validation.values() if before > -0.3) < -0.10


def test_the_median_verdict_rests_on_it():
    """Issue 31's median target (6 %) with the fitted constant and with the H100's, as the validation runs were
    added in November 2026: 5.92 / 6.11 %, then 5.97 / 6.26 % with Megatron-Bridge 25.11's B200 row, 6.26 / 6.47 %
    with torchtitan's B200 runs, and 5.97 / 6.26 % with Trainy's torchtitan runs on H200; with Blackwell's attention
    at its own published rates and the constant refitted (0.89), 6.26 / 6.26 %: missed. Of the values tried it
    would hold up to 0.87 and not from 0.91; both calibration runs alone give 0.88-0.89, where it does not."""
    b = accuracy.blackwell_calibration()
    assert (b.median, b.median_hopper) == pytest.approx((0.0626, 0.0626), abs=0.0005)
    assert b.median == pytest.approx(statistics.median(abs(r.step_error(operators=True))
                                                       for r in accuracy.issue_31_runs()), rel=1e-12)
    assert [v for v, m in b.sweep.items() if m <= 0.06] == [0.81, 0.83, 0.85, 0.87]
    assert all(0.88 <= v <= 0.89 for v in b.alone.values()) and b.median > 0.06


def test_a_hand_made_calibration_keeps_the_old_behaviour():
    hand = Calibration(kernel_efficiency_h100=0.9)
    assert hand.kernel_efficiency_blackwell is None
    assert hand.kernel_efficiency_for("B200") == hand.kernel_efficiency_for("H100 SXM") == 0.9
    assert CALIBRATION.kernel_efficiency_for("GB200") == 0.89 and CALIBRATION.kernel_efficiency_for("H200 SXM") == 0.90
    assert dataclasses.replace(CALIBRATION, kernel_efficiency_blackwell=0.7).kernel_efficiency_for("B200") == 0.7
    for bad in (0, -0.5, 2.0, "high", float("nan")):
        with pytest.raises(ValueError, match="kernel_efficiency_blackwell"):
            Calibration(kernel_efficiency_blackwell=bad)
    assert calibration.BLACKWELL == ("B200", "GB200", "GB300")  # the GB300 since November 2026


def test_the_appendix_table_lists_every_blackwell_run():
    t = accuracy.blackwell_table()
    # 12 before NVIDIA's MoE report, 16 before its GB300 rows
    assert len(t.rows) == 19 and [r[1] for r in t.rows[:2]] == ["calibration"] * 2
    assert all(r[1] == "validation" for r in t.rows[2:]) and all("%" in r[2] and "%" in r[3] for r in t.rows)
    assert "0.89" in t.headers[3] and "0.90" in t.headers[2]


def test_torchtitans_switch_to_cudnn_on_b200():
    """torchtitan's pull request 1196 logged 12 % more tokens per second for Llama 3 8B on B200 when cuDNN's
    attention replaced FlashAttention-2, without stating its configuration. At torchtitan's Llama 3 8B configuration
    of that commit (eager), the operator-level model gains 30 % from the switch, 35 % compiled (November 2026): with
    both kernels at their published B200 rates the switch is worth more than twice what the log shows. The model's
    FlashAttention-2 step is 10 % faster than the log's, its cuDNN step 29 %. Which of the log's unstated settings
    (another cuDNN release, the GPU count) accounts for it the source cannot say; its sequence length it does give
    away, through its FLOPs per token."""
    s = accuracy.blackwell_attention_switch()
    assert s.tokens_per_second == accuracy.TORCHTITAN_CUDNN_SWITCH == (10_902.0, 12_211.0)
    assert (s.before, s.after) == ("flash2", "cudnn") and "torchtitan" in s.run and "B200" in s.run
    assert s.published == pytest.approx(1.120, abs=0.001)
    assert (s.model, s.model_compiled) == pytest.approx((1.303, 1.346), abs=0.005)
    assert s.published < s.model < s.model_compiled
    assert s.model == pytest.approx(s.model_tokens_per_second[1] / s.model_tokens_per_second[0], rel=1e-12)
    faster = [m / p - 1 for m, p in zip(s.model_tokens_per_second, s.tokens_per_second)]
    assert faster == pytest.approx([0.105, 0.285], abs=0.005)
    # the log's FLOPs per token: torchtitan's count of Llama 3 8B at 8,192 tokens (6 N + 12 L H d s, N without the
    # embedding), 631.39 TFLOP/s over 10,902 tokens/s
    from atscale import models

    m = models.LLAMA3_8B  # torchtitan's N leaves out the input embedding only: the matmuls' weights
    torchtitan = 6 * m.matmul_params + 12 * m.num_layers * m.num_heads * m.head_dim * 8192
    assert 631.39e12 / 10_902 == pytest.approx(torchtitan, rel=0.001)
