"""The operator-level compute (atscale.operators, step_time(..., stack=...)) and its calibration and validation."""

import dataclasses
import math
import statistics

import numpy as np
import pytest

from atscale import fitting, kernels, models, operators, parallelism as P, runs
from atscale.calibration import CALIBRATION
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX


def test_every_stack_is_documented_and_checked():
    for name, st in operators.STACKS.items():
        assert st.name == name and st.source and st.attention in kernels.ATTENTION_KERNELS
    with pytest.raises(ValueError, match="name"):
        operators.stack("deepspeed")
    with pytest.raises(ValueError, match="stack"):
        P.step_time(EX.model, EX.cluster, EX.plan, stack="megatron")
    with pytest.raises(ValueError, match="fp8_recipe"):
        P.step_time(EX.model, EX.cluster, EX.plan, fp8_recipe="per-block")


@pytest.mark.parametrize("stack", operators.STACK_NAMES)
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_scalar_and_array_paths_agree(stack, dtype):
    rng = np.random.default_rng(7)
    for _ in range(6):
        tp = int(rng.choice([1, 2, 4, 8]))
        pp = int(rng.choice([1, 2, 4]))
        cp = int(rng.choice([1, 2]))
        dp = 1024 // (tp * pp * cp)
        plan = Plan(tp=tp, pp=pp, dp=dp, cp=cp, micro_batch=1, global_batch=4 * dp, zero_stage=int(rng.integers(0, 4)),
                    recompute=str(rng.choice(["none", "selective", "full"])), sequence_parallel=tp > 1)
        one = P.step_time(EX.model, EX.cluster, plan, dtype=dtype, stack=stack, memory_check=False)
        many = P.evaluate(EX.model, EX.cluster, tp=[tp, tp], pp=pp, dp=dp, cp=cp, micro_batch=1,
                          global_batch=4 * dp, zero_stage=plan.zero_stage, recompute=plan.recompute,
                          sequence_parallel=plan.sequence_parallel, dtype=dtype, stack=stack, memory_check=False)
        for part in P.PARTS:
            assert np.allclose(getattr(many, part), getattr(one, part), rtol=1e-12, atol=0), part


def test_the_layer_table_is_the_step_times_compute():
    """One stage, one micro-batch, no recomputation: the step's compute is the layer table times the layers plus
    the output layer, and nothing is computed twice."""
    m = models.LLAMA3_8B
    plan = Plan(tp=1, pp=1, dp=8, micro_batch=1, global_batch=8)
    cluster = runs.H100_RUNS[0].cluster
    for stack in operators.STACK_NAMES:
        st = P.step_time(m, cluster, plan, stack=stack, memory_check=False)
        layer = operators.layer_operators(m, cluster.accelerator, stack=stack)
        kinds = layer.by_kind()
        assert st.compute == pytest.approx(m.num_layers * layer.total + layer.output, rel=1e-12)
        assert set(kinds) == set(operators.OPERATOR_CLASSES) and all(v > 0 for v in kinds.values())


def test_fused_stack_is_faster_than_eager_and_fixed_costs_weigh_on_small_batches():
    small = operators.layer_operators("Llama 3 8B", micro_batch=1, seq_length=512, stack="fsdp2-eager")
    big = operators.layer_operators("Llama 3 8B", micro_batch=1, seq_length=8192, stack="fsdp2-eager")
    fused = operators.layer_operators("Llama 3 8B", micro_batch=1, seq_length=8192, stack="megatron-core")
    assert fused.total < big.total
    share = lambda x: x.by_kind()["fixed per kernel"] / x.total  # noqa: E731
    assert share(small) > 3 * share(big)


def test_fp8_gain_grows_with_width():
    """FP8 gains more on wider layers (its fixed and memory-bound costs do not halve), as published FP8/BF16 pairs
    on the same layouts show (1.16x at hidden 2,560 to 1.45x at 8,192; issue 31)."""
    gains = []
    for name in ("Llama 3 8B", "Llama 3 70B", "Llama 3 405B"):
        bf16 = operators.layer_operators(name, stack="megatron-core")
        fp8 = operators.layer_operators(name, stack="megatron-core", dtype="fp8")
        gains.append(bf16.total / fp8.total)
    assert gains == sorted(gains) and gains[0] > 1.2 and gains[-1] < 2.0


def test_calibration_is_the_fit_and_no_neighbour_fits_better():
    names = ("kernel_efficiency", "kernel_efficiency_h100", "kernel_efficiency_blackwell")
    cal, loss = fitting.calibrate_operators()
    assert [getattr(cal, n) for n in names] == [getattr(CALIBRATION, n) for n in names]
    for name in names:
        for d in (-0.01, 0.01):
            other = fitting.calibrate_operators(grid=[getattr(cal, name) + d])[1]
            assert other >= loss - 1e-12


def _errors(group):
    return [abs(r.step_error(operators=True)) for r in group]


def test_validation_errors_as_measured():
    """The operator-level compute on every validation run and on the other stacks' runs, as measured when it was
    introduced (the constants were fitted on the calibration runs only). The issue's targets (median |step-time
    error| <= 6 %, worst <= 15 %) are NOT met: see the next test. These pins catch an accidental change."""
    validation = [r for r in runs.VALIDATION_RUNS] + list(runs.OTHER_STACK_RUNS)
    errors = _errors(validation)
    assert len(validation) >= 30 and len({r.stack_preset for r in validation}) >= 3
    # 0.078 since NVIDIA's H100 recipes took their scripts' settings (pipeline sends overlapped; Nemotron-4 340B's
    # recomputation and FlashAttention-2) and the kernel efficiency was refit on them (0.92 -> 0.90; November 2026)
    # 0.073 since torchtitan's runs took its per-operator checkpointing (0.077 before) and Transformer Engine's split
    # GEMMs run three at a time with the H100 kernel efficiency refit (0.90 -> 0.89; November 2026)
    # 0.079 since Megatron's column-parallel layers run their backward collectives beside their own GEMMs (the input
    # gathered again under sequence parallelism; operators.TP_BACKWARD_ASYNC) and the kernel efficiencies were refit
    # (A100 0.94 -> 0.93, H100 0.89 -> 0.90; November 2026): mechanism read from the code, the fit and the median worse
    # 0.080 until PyTorch's async TP reduced its shared inputs' gradients in line (operators.ASYNC_TP_FUSION; worst
    # 0.489 -> 0.460, November 2026), 0.079 until the column-parallel input-gradient GEMMs ran whole under TP overlap
    # (operators.TP_OVERLAP_SPLITS, 0.082 since)
    assert statistics.median(errors) == pytest.approx(0.079, abs=0.01)  # 0.093 before those, 0.090 before cuDNN took its published ratio to FlashAttention-3 (and the H100 kernel efficiency moved 0.91 -> 0.92), 0.099 before FlashAttention-2 took its own sequence ramp, 0.078 before llm-foundry's runs took the Triton attention kernel their scripts name, 0.109 before FlashAttention-2 took its own published rates, 0.106 before the torchtitan runs moved to their GPU, 0.086 before the other stacks overlapped their data-parallel communication
    curve = [abs(r.step_error()) for r in validation]
    assert statistics.median(errors) < statistics.median(curve)  # better than the efficiency curve, still short
    nvidia = _errors([r for r in runs.H100_RUNS if r.role == "validation"])
    assert statistics.median(nvidia) < 0.06


def _issue_31_errors():
    from atscale import accuracy

    validation = accuracy.issue_31_runs()
    # 137 before NVIDIA's two GB200 NVL72 submissions to MLPerf Training v5.0, 139 before the University of Florida's
    # two DGX B200 ones to v5.1, 141 before Megatron-Bridge 26.02's GB200 row of Llama 3.1 405B, 142 before
    # Megatron-Bridge 25.11's B200 row of it, 143 before torchao's two torchtitan steps on 8 B200, 145 before
    # Trainy's two torchtitan steps on 32 and 64 H200
    assert len(validation) == 147
    assert not any(r.role == "calibration" for r in validation)  # the Blackwell calibration runs are not among them
    return validation, _errors(validation)


def test_issue_31_median_as_measured():
    """The median |step-time error| over every validation run of the appendix, which issue 31 wants at 6 % or less.
    It met the target (5.9 %) once the Llama 3.1 405B submissions to MLPerf Training joined the runs (6.6 % before,
    8.2 % before the GPT-3 ones), and only just (5.97 %) once the four Blackwell submissions did. It has missed it
    (6.11 %) once Megatron-Bridge 26.02's GB200 row of Llama 3.1 405B joined as well, all of them added in November
    2026: with the H100's kernel efficiency the model was 12-20 % too fast on every dense Blackwell run (5.8 % in
    median without them). Since Blackwell took its own kernel efficiency (0.81, fitted on NVIDIA's two 8-GPU Llama 3
    8B steps on B200 and GB200, runs.BLACKWELL_RUNS, which are not among these runs) it meets it again, narrowly
    (5.92 %), and still (5.97 %; 6.26 % with the H100's constant) once Megatron-Bridge 25.11's B200 row of Llama 3.1
    405B joined as a validation run, read after that fit: NVIDIA's dense Blackwell runs are 3-12 % too fast. It
    missed it again (6.26 %) once the one Blackwell run of another stack joined, read after the fit as well:
    torchtitan's Llama 3.1 8B on 8 power-limited B200 (torchao's published benchmark, BF16 and FP8), 45-48 % too
    fast. It met it again (5.97 %) once Trainy's two torchtitan FP8 steps on 32 and 64 H200 joined (+3.8 and +2.4 %),
    recorded when the catalog had an H200 node to price them, before comparing. It missed it again (6.26 %) once
    Blackwell's attention ran at cuDNN's and FlashAttention-2's own published B200 rates rather than the H100's times
    the peak ratio, the constant refitted (0.81 -> 0.89, the H100's 0.90 within a point) and torchtitan's B200 runs
    on cuDNN, as torchtitan asks for it there: NVIDIA's dense Blackwell runs are 7-16 % too fast, torchtitan's 54-57 %.
    A median that crosses the target four times as runs are added is not a robust verdict, and the appendix says so. The set decides it either way:
    NVIDIA's tuned stack, on which the model does best, is 72 of the 147 runs.
    Without the 24 MLPerf submissions the median is 8.0 % (8.2 % before torchtitan's rowwise rows took torchao's
    published rowwise speedups), and on the PyTorch stacks alone it is about 12 % (12.6 % until torchtitan's presets
    ran the query, key and value projections apart); the strict xfail below holds the target."""
    validation, errors = _issue_31_errors()
    # 0.0597 before Blackwell's attention took its published rates, 0.0626 before Trainy's H200 runs, 0.0597 before
    # torchtitan's B200 runs, 0.0592 before the Bridge B200 row, 0.0611 before Blackwell's own kernel efficiency,
    # 0.0597 before the Bridge GB200 row
    assert statistics.median(errors) == pytest.approx(0.0626, abs=0.001)
    blackwell = [r for r in validation if r.cluster.accelerator.name in ("B200", "GB200")]
    nvidia = [r for r in blackwell if r.stack_preset == "megatron-core"]
    assert len(blackwell) == 8 and len(nvidia) == 6
    assert all(-0.17 < r.step_error(operators=True) < -0.07 for r in nvidia)  # -0.13 .. -0.03 extrapolated
    assert all(r.step_error(operators=True) < -0.50 for r in blackwell if r not in nvidia)  # < -0.40
    assert statistics.median(_errors([r for r in validation if r not in blackwell])) == pytest.approx(0.058, abs=0.002)
    with_hopper_constant = dataclasses.replace(CALIBRATION, kernel_efficiency_blackwell=None)
    assert all(r.step_error(with_hopper_constant, operators=True) < -0.08 for r in blackwell)  # < -0.10
    rest = _errors([r for r in validation if r.group != "MLPerf Training"])
    assert statistics.median(rest) == pytest.approx(0.080, abs=0.005) and statistics.median(rest) > 0.06
    pytorch = _errors([r for r in validation if r.stack_preset.startswith("fsdp2")])
    assert statistics.median(pytorch) == pytest.approx(0.119, abs=0.005) and statistics.median(pytorch) > 0.06


@pytest.mark.xfail(strict=True, reason="issue 31's median target is missed, narrowly: 6.26 % over the 147 runs "
                                       "since Blackwell's attention runs at its published B200 rates (5.97 % before); "
                                       "it has crossed the 6 % line four times as runs and corrections came in")
def test_issue_31_median_target_on_every_validation_run():
    """Missed narrowly: 6.26 % over the 147 runs (November 2026). It has crossed the target four times that month
    (6.11, 5.92, 5.97, 6.26, 5.97, 6.26 %); with the H100's kernel efficiency on Blackwell it is 6.26 % as well."""
    _, errors = _issue_31_errors()
    assert statistics.median(errors) <= 0.06


@pytest.mark.xfail(strict=True, reason="issue 31's worst-run target is not met: worst |step-time error| on the "
                                       "validation, other-stack and MLPerf runs 57 % (torchtitan's Llama 3.1 8B in "
                                       "FP8 on 8 power-limited B200, too fast; 48 % with Blackwell's attention "
                                       "extrapolated, 33 % before those runs, llm-foundry's MPT-7B at "
                                       "65k tokens, too slow); runs of 32k tokens and more miss by 19 % in "
                                       "median (|error|), torchtitan's and NeMo's too fast, llm-foundry's too slow")
def test_issue_31_worst_target_on_every_validation_run():
    _, errors = _issue_31_errors()
    assert max(errors) <= 0.15


def test_run_step_error_follows_the_metric():
    for r in runs.ALL_RUNS[::9]:
        e = r.step_error()
        if r.metric == "step_seconds":
            assert e == pytest.approx(r.predict() / r.published - 1)
        else:
            assert e == pytest.approx(r.published / r.predict() - 1)
        assert math.isfinite(r.step_error(operators=True))


def test_fp8_pairs_as_measured():
    """FP8/BF16 speedups on the same layout (issue 31's target: each within 5 % at three or more widths). Measured
    when the operator model was introduced: within 5 % at four widths (4,096 to 18,432) on some pairs, but not on
    every pair (NVIDIA's 70B pairs +10-12 %; see the strict xfail below)."""
    pairs = runs.fp8_pairs()
    assert len({p.hidden_size for p in pairs}) >= 4
    close = {p.hidden_size for p in pairs if abs(p.operators / p.published - 1) <= 0.05}
    assert len(close) >= 3
    errors = [abs(p.operators / p.published - 1) for p in pairs]
    # 0.052 before the H100 recipes' scripts, 0.046 before each FP8 GEMM's casts came from its own shapes
    assert statistics.median(errors) == pytest.approx(0.039, abs=0.01)
    flat = [abs(p.curve / p.published - 1) for p in pairs]
    # the operator model's gain followed the shapes better than the constant until the constant was refit on the
    # recipes as their scripts run them (1.43 -> 1.42, November 2026), when the two came level (4.6 %); with the casts
    # of each FP8 GEMM from its shapes (its input forward, its output's gradient backward) the operator model is ahead
    # again (3.9 %): within 5 % on 15 of the 21 pairs (14 before), the constant on 11
    assert statistics.median(errors) < statistics.median(flat) - 0.005
    # torchtitan's per-operator checkpointing as its policy states it (November 2026: every second matmul, the norms
    # and the activation again, the attention core kept) moved its four pairs: the two compiled 8B ones -4.7/-4.1 ->
    # -1.5/-0.9 %, the 8B async-TP one +3.9 -> +6.2 % (out of 5 %): 14 within 5 %, median 3.7 %
    # torchtitan's B200 pair (torchao's benchmark, November 2026): the operator model +5.2 %, the constant +3.9 %;
    # +7.0 % since Blackwell's attention runs at its published rates, on cuDNN as torchtitan asks for it there
    assert (sum(e <= 0.05 for e in errors), sum(e <= 0.05 for e in flat)) == (14, 12)


@pytest.mark.xfail(strict=True, reason="not every FP8/BF16 pair is within 5 %: NVIDIA's Llama 3.1 70B pairs +10-12 %, "
                                       "GPT-3 175B and Llama 3.1 405B at 2,048+ GPUs +8 %, MPT-1B at 512 tokens -8 %, "
                                       "MPT-3B at 32k tokens +6 %, torchtitan's Llama 3.1 8B on B200 +7 %")
def test_issue_31_fp8_target_on_every_pair():
    assert all(abs(p.operators / p.published - 1) <= 0.05 for p in runs.fp8_pairs())


def test_rowwise_pairs_follow_torchaos_published_table():
    """torchtitan's four rowwise-scaled FP8 pairs (kept out of the pairs above: their source flags its vanilla-TP
    rowwise baseline as anomalously slow): FP8 is slower than BF16 on three of them as published (0.81-1.00). Priced
    from torchao's published rowwise speedups (November 2026) the operator model is within 5 % of every published
    ratio (+1.5 to +4.6 %; -0.5 to +2.9 % since torchtitan's presets run the query, key and value projections
    apart) and slower in FP8 on both 8B pairs; before, it priced the rowwise GEMMs at cuBLAS's FP8 rate plus the
    recipe's casts and made FP8 1.15-1.35x faster, +29 to +45 %. The curve's flat factor: 1.20-1.32."""
    pairs = runs.fp8_pairs(rowwise=True)
    assert len(pairs) == 4 and {p.recipe for p in pairs} == {"rowwise"}
    assert sum(p.published < 1.0 for p in pairs) == 3
    errors = sorted(p.operators / p.published - 1 for p in pairs)
    assert errors == pytest.approx([-0.005, 0.009, 0.020, 0.029], abs=0.005)
    assert all(p.operators < 1.0 for p in pairs if p.hidden_size == 4096)
    assert all(p.curve / p.published - 1 > 0.2 for p in pairs)
    assert not set(pairs) & set(runs.fp8_pairs())
    with pytest.raises(ValueError, match="rowwise"):
        runs.fp8_pairs(rowwise="yes")


def test_long_context_as_measured():
    """Runs of 32k tokens and more: Meta's Llama 3 405B at 131,072 tokens (CP 16) is within the issue's 10 %. The
    misses go both ways: torchtitan's and NVIDIA's long runs are too fast (the attention kernels' published rates
    stop at 16k tokens, and the model holds them flat beyond), llm-foundry's are too slow since they take the Triton
    attention kernel their scripts name, priced from an A100 ratio (see the brackets below)."""
    long = [r for r in runs.ALL_RUNS if (r.seq_length or r.model.seq_length) >= 32_768 and r.role == "validation"
            and not r.model.is_moe]
    assert len(long) >= 15
    meta = next(r for r in long if r.label.startswith("Llama 3 405B, 16,384 H100, CP 16"))
    assert abs(meta.step_error(operators=True)) <= 0.10
    errors = {r.label: r.step_error(operators=True) for r in long}
    assert statistics.median(abs(e) for e in errors.values()) == pytest.approx(0.19, abs=0.03)  # 0.14 before the Triton kernel
    triton = {r.label for r in long if r.attention_kernel == "flash-triton"}
    assert triton and all(errors[k] > 0 for k in triton)  # the Triton price is too slow on every one of them
    faster = [e for k, e in errors.items() if k not in triton]
    # the others are too fast, 10 of 13 (11 before NVIDIA's recipes took their scripts' settings and the refit,
    # November 2026: torchtitan's 8B at 32k and 65k tokens and Meta's CP 16 row are now slower than published; 10
    # until the H100 kernel efficiency was refit with Transformer Engine's split GEMMs three at a time, which left
    # Meta's CP 16 row 0.4 % too fast)
    assert sum(e < 0 for e in faster) == 11 and len(faster) == 13


def test_flash_triton_is_flashattention2_over_the_published_ratio():
    """FlashAttention in Triton runs at FlashAttention-2's rate over 1.4 (forward) and 2.0 (backward), Dao 2023's
    "1.3-1.5x" and "around 2x", on every pass and GPU."""
    for acc in ("H100 SXM", "A100 SXM 80GB"):
        for causal in (False, True):
            for backward in (False, True):
                kw = dict(causal=causal, backward=backward, sustained=False)
                fa2 = kernels.attention_seconds(2, 16, 8192, 128, acc, kernel="flash2", **kw)
                tri = kernels.attention_seconds(2, 16, 8192, 128, acc, kernel="flash-triton", **kw)
                fixed = (3 if backward else 1) * kernels.KERNEL_GPU_SECONDS
                ratio = kernels.FA2_OVER_TRITON["backward" if backward else "forward"]
                assert tri - fixed == pytest.approx((fa2 - fixed) * ratio, rel=1e-12)
    assert "Triton" in kernels.attention_model("H100 SXM", "flash-triton").source


def test_runs_take_the_attention_kernel_their_scripts_name():
    """llm-foundry's tables of October 2023 (8 GPUs on H100, and the A100 table) ran ``attn_impl: triton``, the
    default of its yamls and benchmark script at that commit; the large-scale table of January 2024 ran
    FlashAttention-2 for the 1B, 3B, 7B and 70B models and Triton for 13B and 30B (its sweep.py)."""
    mpt = [r for r in runs.OTHER_STACK_RUNS if r.label.startswith("MPT")]
    assert len(mpt) == 41  # 29 until the large-scale table's 128- and 256-GPU rows and its MPT-1B rows (Nov. 2026)
    for r in mpt:
        big = r.cluster.num_gpus >= 128
        triton = not big or r.model.name in ("MPT-13B", "MPT-30B")
        assert r.attention_kernel == ("flash-triton" if triton else "flash2"), r.label
        assert ("attn_impl: triton" if triton else "attn_impl: flash") in r.assumed, r.label
        assert r._stack().attention == r.attention_kernel
        assert r._stack().fused == operators.stack(r.stack_preset).fused
    # NVIDIA's Nemotron-4 340B recipe sets NVTE_FUSED_ATTN=0 (dgxc-benchmarking v24.11.1's configure.sh): Transformer
    # Engine's FlashAttention-2 backend, not the preset's cuDNN
    nemotron = [r for r in runs.ALL_RUNS if r.label.startswith("Nemotron-4 340B") and "H100" in r.label]
    assert len(nemotron) == 4
    assert all(r.attention_kernel == "flash2" and "NVTE_FUSED_ATTN=0" in r.assumed for r in nemotron)
    # NVIDIA's Grok-1 recipe sets it too (its configure.sh)
    grok = [r for r in runs.ALL_RUNS if r.label.startswith("Grok-1")]
    assert len(grok) == 6 and all(r.attention_kernel == "flash2" and "NVTE_FUSED_ATTN=0" in r.assumed for r in grok)
    # torchtitan asks for cuDNN's attention first on compute capability 10.0 (models/attention.py, pull request 1196)
    titan = [r for r in runs.ALL_RUNS if "B200, torchtitan" in r.label]
    assert len(titan) == 2 and all(r.attention_kernel == "cudnn" and "1196" in r.assumed for r in titan)
    others = [r for r in runs.ALL_RUNS if not r.label.startswith("MPT") and r not in nemotron + grok + titan]
    assert all(r.attention_kernel == operators.stack(r.stack_preset).attention for r in others)
    with pytest.raises(ValueError, match="attention_kernel"):
        dataclasses.replace(mpt[0], details={**mpt[0].details, "attention_kernel": "flash4"})


def test_attention_kernel_brackets_as_measured():
    """On the Triton runs, the published step lies between the operator model priced with the Triton kernel (the
    A100 ratio) and with FlashAttention-2 on 22 of 29 (18 of 25 before the large-scale table's 128- and 256-GPU rows; 20 when the kernel was corrected, before FlashAttention-2 took
    its own sequence ramp; 17 before each FP8 GEMM's casts came from its shapes, 18 before the H100 refit of the
    split GEMMs three at a time, 19 before the refit with Megatron's asynchronous backward collectives, which made
    the A100 kernels 1 % slower; November 2026): the kernel's price on these GPUs is the least-known input, and the
    appendix shows both."""
    from atscale import accuracy

    brackets = accuracy.attention_kernel_brackets()
    # 25 and 18 until the large-scale table's MPT-13B and 30B rows at 128 and 256 GPUs were recorded (November
    # 2026): three of the four lie between the two prices
    assert len(brackets) == 29
    assert sum(b.between for b in brackets) == 22
    for b in brackets:
        assert b.as_recorded == pytest.approx(b.run.step_error(operators=True), rel=1e-12)
        assert b.as_recorded > b.as_preset  # the slower kernel never makes the step faster
    assert accuracy.attention_kernel_table().rows[0][1] == "FlashAttention in Triton"


def test_fsdp_copies_follow_their_bytes():
    """FSDP2's copy-out of each gathered weight (forward, and again in the backward after a reshard) and copy-in of
    each gradient, at the memory roof, only with ZeRO-3 on a stack that makes them."""
    m, acc = models.LLAMA3_8B, "H100 SXM"
    rows = {r.name: r for r in operators.layer_operators(m, acc, stack="fsdp2-eager", zero_stage=3).rows}
    per_param = m.block_params / m.num_layers / kernels.memory_bandwidth(acc)
    w, g = operators.FSDP_COPY_BYTES["weights"], operators.FSDP_COPY_BYTES["gradients"]
    assert rows["FSDP copies"].forward == pytest.approx(w * per_param, rel=1e-12)
    assert rows["FSDP copies"].backward == pytest.approx((w + g) * per_param, rel=1e-12)
    for kw in (dict(stack="fsdp2-eager", zero_stage=1), dict(stack="megatron-core", zero_stage=3)):
        rows = {r.name: r for r in operators.layer_operators(m, acc, **kw).rows}
        assert rows.get("FSDP copies") is None or rows["FSDP copies"].forward == 0.0


def test_mla_projections_take_their_own_shapes():
    """Multi-head latent attention's input projections are its down- and up-projections (DeepSeek-V2 sec. 2.1),
    not one h x (q + k + v) GEMM: their weights are the MLA block's matrices less the output projection, the
    down-projections are whole on every tensor-parallel rank (Megatron-Core's TELinear) and the up-projections
    split; the operator model and the roofline chapter's layer_ops price the same GEMMs. Until November 2026 the
    operator model priced DeepSeek-V3's as one GEMM of 5x their FLOPs. RoPE turns only the rotary part."""
    from atscale import models, roofline

    ds = models.model_arg("model", "DeepSeek-V3")
    h, a = ds.hidden_size, ds.num_heads
    proj = ds.attention_projections()
    assert [p[0] for p in proj] == ["query down-projection", "query up-projection", "key-value down-projection",
                                    "key-value up-projection"]
    out_proj = a * ds.v_head_dim * h
    assert sum(n * k for _, n, k in proj) == ds.mla.params(h, a)[0] - out_proj
    split = dict((name, (n, k)) for name, n, k in ds.attention_projections(8))
    whole = dict((name, (n, k)) for name, n, k in proj)
    for name in whole:
        assert split[name][0] == whole[name][0] / (8 if "up" in name else 1)
    rows = {r.name: r for r in operators.layer_operators(ds, "H100 SXM", micro_batch=1, seq_length=4096).rows}
    assert "QKV projection" not in rows and set(whole) <= set(rows)
    ops = roofline.layer_ops(ds, 1, 4096)
    assert set(whole) <= set(ops) and "QKV projection" not in ops
    assert ops["query up-projection"].flops == pytest.approx(2 * 4096 * whole["query up-projection"][0] * 1536)
    assert ds.rotary_width == (a + 1) * 64
    assert ds.qkv_width == a * (192 + 192 + 128)  # what one QKV GEMM would write, and the up-projections do
    # the curve's memory-bound bytes leave MLA's GEMMs out, as they leave the QKV projection out
    from atscale import parallelism
    parallel = parallelism.elementwise_bytes_per_token(ds, 4096)[1]
    assert parallel == pytest.approx(3 * (ops["RoPE"].bytes + ops["SwiGLU product"].bytes) / 4096)
    llama = models.model_arg("model", "Llama 3 8B")
    assert llama.attention_projections(8) == (("QKV projection", (4096 + 2 * 1024) / 8, 4096.0),)
    assert llama.rotary_width == (32 + 8) * 128
    with pytest.raises(ValueError, match="tp"):
        llama.attention_projections(0)


def test_mla_up_projection_recomputation_in_time_and_memory():
    """``recompute_modules`` takes Megatron-Core's ``mla_up_proj`` (DeepSeek-V3 sec. 3.2.3): the up-projections and
    RoPE run again in the backward pass (time, and their FLOPs in the hardware count) and the up-projected queries,
    keys and values are not stored (memory); a model without MLA has nothing to recompute. DeepSeek-V3's record
    takes the report's list."""
    from atscale import memory, models, runs
    from atscale.plan import Plan

    ds = models.DEEPSEEK_V3
    saved = memory.recompute_savings(ds, 1, 4096, ("mla_up_proj",))
    assert saved.parallel == 2 * 4096 * (128 * 192 + 128 * (192 + 128)) and saved.replicated == 0
    assert memory.recompute_savings(models.LLAMA3_8B, 1, 4096, ("mla_up_proj",)).parallel == 0
    run = next(r for r in runs.ALL_RUNS if r.label.startswith("DeepSeek-V3, 2,048"))
    assert run.plan.recompute_modules == ("layernorm", "act", "mla_up_proj")  # "act": the SwiGLU output, sec. 3.3.3
    norms_only = dataclasses.replace(run, plan=dataclasses.replace(run.plan, recompute_modules=("layernorm", "act")))
    for ops in (False, True):
        with_up, without = run.step(operators=ops), norms_only.step(operators=ops)
        assert with_up.recompute > without.recompute > 0
        assert with_up.memory_total < without.memory_total
    llama = Plan(tp=1, pp=1, dp=8, micro_batch=1, global_batch=8, recompute="selective")
    eight = runs.H100_RUNS[0].cluster.__class__.of_gpus(runs.H100_RUNS[0].cluster.node, 8,
                                                        runs.H100_RUNS[0].cluster.fabric)
    for ops in ("megatron-core", None):
        kw = dict(seq_length=4096, memory_check=False, stack=ops)
        a = P.step_time(models.LLAMA3_8B, eight, dataclasses.replace(llama, recompute_modules=("layernorm",)), **kw)
        b = P.step_time(models.LLAMA3_8B, eight, dataclasses.replace(
            llama, recompute_modules=("layernorm", "mla_up_proj")), **kw)
        assert a.recompute == b.recompute and a.memory_total == b.memory_total


def test_transformer_engines_split_gemms_run_three_at_a_time():
    """Transformer Engine issues the chunks of a GEMM split for TP overlap round-robin on three compute streams
    (NVTE_COMM_OVERLAP_MAX_STREAMS, v2.8): their waves are counted together, so the split costs less than the same
    chunks one after another (PyTorch's async TP, one stream); without the overlap nothing is split."""
    import dataclasses

    from atscale.plan import Plan
    from atscale.scenario import RUNNING_EXAMPLE as EX

    assert operators.STACKS["megatron-core"].overlap_streams == operators.OVERLAP_STREAMS == 3
    assert all(operators.STACKS[n].overlap_streams == 1 for n in ("fsdp2-eager", "fsdp2-compile"))
    one_stream = dataclasses.replace(operators.STACKS["megatron-core"], overlap_streams=1)

    def compute(stack, overlap):
        plan = Plan(tp=8, pp=4, dp=32, micro_batch=1, global_batch=1024, sequence_parallel=True, tp_overlap=overlap)
        return P.step_time(EX.model, EX.cluster, plan, stack=stack, memory_check=False).compute

    assert compute("megatron-core", True) < compute(one_stream, True)
    assert compute("megatron-core", False) == compute(one_stream, False)
    f1, b1 = operators._gemm3(2048.0, 1536.0, 12288.0, kernels.gemm_model("H100 SXM", "bf16"), kernels._ScalarOps,
                              8.0, 1.0)
    f3, b3 = operators._gemm3(2048.0, 1536.0, 12288.0, kernels.gemm_model("H100 SXM", "bf16"), kernels._ScalarOps,
                              8.0, 3.0)
    assert f3 <= f1 and b3 <= b1


@pytest.mark.parametrize("bad", [0, -1, 2.5, float("nan"), float("inf"), True, "3"])
def test_a_stack_refuses_a_bad_stream_count(bad):
    with pytest.raises(ValueError, match="overlap_streams"):
        dataclasses.replace(operators.STACKS["megatron-core"], overlap_streams=bad)
