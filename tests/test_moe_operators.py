"""Issue 32, item 1: a mixture-of-experts layer's own operators (router, token permutation and un-permutation,
routed experts), counted from their bytes and shapes, in the operator-level step time."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from atscale import kernels, models, operators, parallelism
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX

QWEN = models.model("Qwen3-235B-A22B")
DSV3 = models.model("DeepSeek-V3")
H100 = "H100 SXM"
TOKENS = 4096


def _rows(model, **kw):
    layer = operators.layer_operators(model, H100, micro_batch=1, seq_length=TOKENS, **kw)
    return {r.name: r for r in layer.rows}


def _share(model):
    return model.moe_layers / model.num_layers


def test_the_moe_layer_has_its_own_operators_and_a_dense_one_has_none():
    moe = _rows(QWEN)
    for name in ("router", "routed experts", "router scores and top-k", "token permutation", "token un-permutation"):
        assert moe[name].forward > 0 and moe[name].backward > 0, name
    dense = _rows(models.LLAMA3_8B)
    assert not {"router", "routed experts", "token permutation"} & set(dense)


def test_the_permutation_moves_the_bytes_it_should():
    """ep = 1, tp = 1, balanced: each pass moves every token's k copies; permute + sort = 2 passes of 4 bytes per
    copy and element (read and write, BF16) at the memory roof, on the MoE share of the layers."""
    rows = _rows(QWEN)
    hbm = kernels.memory_bandwidth(H100)
    k, h = QWEN.experts_per_token, QWEN.hidden_size
    copies = TOKENS * k
    expected = _share(QWEN) * 2 * copies * h * 4.0 / hbm
    assert rows["token permutation"].forward == pytest.approx(expected, rel=1e-12)
    assert rows["token permutation"].backward == pytest.approx(2 * expected, rel=1e-12)
    # the combine writes one token for its k copies: 4 + (2 + 2/k) bytes per copy over the two passes back
    combine = _share(QWEN) * copies * h * (4.0 + 2.0 + 2.0 / k) / hbm
    assert rows["token un-permutation"].forward == pytest.approx(combine, rel=1e-12)
    # the router's scores: one per token and expert, 10 bytes fused
    scores = _share(QWEN) * TOKENS * QWEN.num_experts * 10.0 / hbm
    assert rows["router scores and top-k"].forward == pytest.approx(scores, rel=1e-12)


def test_an_eager_stack_moves_twice_the_bytes_and_launches_more_kernels():
    fused, eager = _rows(QWEN), _rows(QWEN, stack="fsdp2-eager")
    for name in ("token permutation", "token un-permutation"):
        assert eager[name].forward == pytest.approx(2 * fused[name].forward, rel=1e-12)
        assert eager[name].kernels_forward > fused[name].kernels_forward


def test_the_busiest_gpu_sorts_more_and_the_router_does_not_care():
    even, skewed = _rows(QWEN, ep=8, expert_tp=1), _rows(QWEN, ep=8, expert_tp=1, expert_imbalance=1.5)
    assert skewed["token permutation"].forward > even["token permutation"].forward
    assert skewed["routed experts"].forward > even["routed experts"].forward
    assert skewed["router"].forward == even["router"].forward


def test_an_fp8_dispatch_halves_the_permutation_forward_only():
    fp8 = _rows(DSV3, dtype="fp8")
    bf16_dispatch = _rows(dataclasses.replace(DSV3, fp8_dispatch=False), dtype="fp8")
    assert fp8["token permutation"].forward == pytest.approx(bf16_dispatch["token permutation"].forward / 2)
    assert fp8["token permutation"].backward == bf16_dispatch["token permutation"].backward
    assert fp8["token un-permutation"].forward == bf16_dispatch["token un-permutation"].forward


def test_expert_arguments_are_checked():
    with pytest.raises(ValueError, match="ep=3"):
        operators.layer_operators(QWEN, ep=3)
    with pytest.raises(ValueError, match="ep=2"):
        operators.layer_operators(models.LLAMA3_8B, ep=2)
    with pytest.raises(ValueError, match="expert_imbalance"):
        operators.layer_operators(QWEN, expert_imbalance=0.5)


def test_recomputing_the_moe_module_runs_its_router_and_permutation_again(monkeypatch):
    """Megatron-Core's ``moe`` recompute module (the library's ``"mlp"`` for an MoE layer) re-runs the whole MoE
    layer's forward: take the permutation's bytes away and that recomputation gets shorter."""
    plan = Plan(tp=1, pp=1, dp=EX.cluster.num_gpus, micro_batch=1, global_batch=EX.cluster.num_gpus, ep=8,
                expert_tp=1, recompute="selective", recompute_modules=("mlp",))
    small = models.model("Qwen3-30B-A3B")

    def recompute():
        return parallelism.step_time(small, EX.cluster, plan, seq_length=TOKENS, stack="megatron-core",
                                     memory_check=False).recompute

    with_bytes = recompute()
    free = dataclasses.replace(operators.MOE_OPS["token permutation"], bytes_fused=0.0)
    monkeypatch.setattr(operators, "MOE_OPS", {**operators.MOE_OPS, "token permutation": free})
    # the layer's times are remembered per plan fields, not per module constant: a memory of its own for the patch
    monkeypatch.setattr(parallelism, "_LAYERS", {})
    assert 0 < recompute() < with_bytes


def test_moe_validation_errors_as_measured():
    """The operator-level compute on the published mixture-of-experts runs, as measured when the expert layer's
    operators were added (and the Qwen3-235B records took their source's dispatcher and recomputation). Pins, so
    that a change shows; the issue's targets are the strict xfail below."""
    from atscale import accuracy

    errors = {e.run.label: e.operators for e in accuracy.moe_errors()}
    # 7 before the further Qwen3-235B runs (median 15.8 % on those 7); 20.3 % on the 10 before NVIDIA's DeepSeek-V3
    # records took Megatron-Core's default dispatcher (their source names none); 13.2 % before MLA's projections
    # took their own shapes (November 2026: they had been priced as one h x (q + k + v) GEMM, 5x their FLOPs, which
    # had hidden that the model is ~20 % too fast on every DeepSeek-V3 run)
    # 16 before the four long-context rows of the Qwen3-235B table (16k-131k tokens; November 2026), 10 before NVIDIA's
    # Grok-1 recipe (six runs: 512 to 2,048 H100, BF16 and FP8)
    # 20 before Megatron-Bridge 26.02's two FP8 rows (Qwen3-235B-A22B -16.5 %, Qwen3-30B-A3B -61.9 %; November 2026),
    # 22 before its two gpt-oss-120b rows on Blackwell (64 GB200 in one NVL72 rack -42 %, 64 B200 on 8 nodes -25 %)
    # 24 before seven further runs from other sources (November 2026): a user's Pai-Megatron-Patch measurements on
    # H800 (four Qwen3-235B-A22B layouts on 256 GPUs, two Qwen3-30B-A3B ones on 16) and the eager Qwen3-30B-A3B run of
    # Megatron-Bridge's CUDA graph guide (16 H100, EP 16)
    # 31 before the three rows of Megatron-LM's MoE recipes on H100 (their README's median rates), 34 before the six
    # of NVIDIA's MoE report (Yan et al. 2026: DeepSeek-V3 and Qwen3-235B-A22B on 1,024 and 256 H100 and on 256 GB200;
    # -12 to +10 %, four of them within 3.3 %), 40 before its three GB300 rows (November 2026, once the catalog had a
    # GB300: +5.0, +7.0 and, at 131,072 tokens, +22 %)
    assert len(errors) == 43
    # 0.211 since Qwen3-30B-A3B's record took its configuration's recomputation (+31 %, -1 % before) and DeepEP sends
    # once per GPU inside the node (Qwen3-30B-A3B +31 -> +22 %, Qwen3-235B with EP 8: FSDP +17 -> +11 %, TP 4 -36 -> -38 %)
    # 0.198 with the six Grok-1 runs (-9 to -10 % in BF16, -20 to -22 % in FP8); 0.211 on the ten before them
    # 0.192 since each FP8 GEMM's casts come from its shapes (the three Grok-1 FP8 runs slower by about 2 %)
    # 0.150 since the MoE layers' MLP half of the TP collectives is the all-to-all dispatcher's: an all-gather and a
    # reduce-scatter of the k copies over the expert-TP group, exposed (Grok-1 -9/-20 % -> -5/-15 %), none with expert TP 1
    # (the Qwen3-235B runs with TP 2 or 4 faster by 1-3 %)
    # 0.147 since the H100 refit with Transformer Engine's split GEMMs three at a time (November 2026)
    # 0.152 before the experts' GEMMs ran as their stack runs them (Transformer Engine's GroupedLinear: four GEMMs at a
    # time on four streams, their waves shared) rather than one after another: every Megatron-Core run with several
    # local experts faster by 0-5 %, the wrong way for all but Qwen3-30B-A3B (+23.6 -> +20.9 %; November 2026)
    # 0.158 before the four long-context rows (+3, +9, +14, +16 %: too slow, more so as attention grows)
    # 0.151 before Megatron-Bridge 26.02's two FP8 rows (both too fast), 0.158 before its gpt-oss rows on Blackwell
    assert statistics.median(abs(e) for e in errors.values()) == pytest.approx(0.146, abs=0.005)  # 0.149 before the report's GB300 rows, 0.159 before NVIDIA's MoE report's six rows, 0.157 before Megatron-LM's three recipes, 0.159 before the seven further runs; 0.147 before Megatron's column-parallel backward collectives ran beside their GEMMs and the refit (November 2026), 0.187 before those, 0.198 before NVIDIA's two DeepSeek-V3 records took the layout their scripts set, 0.215 before DeepSeek-V3's own run took its multi-token prediction and DualPipe's paired end stages, 0.208 before it took its report's recomputation
    # -0.046 before NVIDIA's dense H100 recipes took their scripts' settings and the H100 constants were refit on them
    # -0.035 before the record took its scripts' TP communication, not overlapped (November 2026)
    # -0.025 before its MoE layers dropped the dense MLP's TP collectives (expert TP 1: the dispatcher gathers nothing)
    # -0.041 before the H100 kernel efficiency was refit (0.90 -> 0.89) with Transformer Engine's split GEMMs
    # -0.035 before Megatron's column-parallel backward collectives ran beside their GEMMs (the attention's, TP 4) and
    # the refit (H100 0.89 -> 0.90; November 2026)
    # -0.043 before the experts' GEMMs ran four at a time (November 2026)
    # -0.053 before the ModelZoo records took Megatron-LM's default overlapped pipeline sends (November 2026)
    assert errors["Qwen3-235B-A22B, 256 H100, BF16"] == pytest.approx(-0.068, abs=0.005)
    # -0.206 before its multi-token-prediction module (one MoE block, a projection and a second pass of the output
    # head on the last stage) and DualPipe's pairing of the first and the last stage on one rank (both from its
    # report; with the layer split the report does not state, the library's even one: the appendix shows how the
    # split moves it), -0.190 before its recomputation took the report's list (the attention core had stood for
    # norms and MLA up-projections), +0.018 before MLA's projections took their shapes, +0.006 before cuDNN took
    # its ratio
    # +0.000 before the record recomputed the SwiGLU output as its report states (+0.004) and each FP8 GEMM's casts
    # came from its shapes (+0.025: seven FP8 GEMMs a layer under MLA, each casting its output's gradient backward)
    # +0.025 before the H100 kernel efficiency was refit (0.90 -> 0.89) with Transformer Engine's split GEMMs three at
    # a time (November 2026)
    # +0.035 before the refit with Megatron's column-parallel backward collectives beside their GEMMs (H100 0.89 -> 0.90)
    # +0.025 before the experts' GEMMs ran four at a time, as Transformer Engine runs them (DeepSeek's own framework's
    # grouped GEMMs are not published as code: the preset's rule stands for them; November 2026)
    assert errors["DeepSeek-V3, 2,048 H800, FP8"] == pytest.approx(0.019, abs=0.005)  # -0.018 before the refit
    # -0.225 before the record took its scripts' layout (multi-token prediction, the uneven split, MLA up-projection
    # recomputation, no TP overlap), -0.062 before MLA's projections took their shapes
    # -0.194 before the experts' GEMMs ran four at a time (November 2026)
    assert errors["DeepSeek-V3, 512 H100, BF16"] == pytest.approx(-0.201, abs=0.005)  # -0.203 before the refit
    curve = [abs(e.curve) for e in accuracy.moe_errors()]
    # the operator model was ahead of the calibrated curve on the ten runs before Grok-1 (21.1 % against 22.1 %); with
    # Grok-1's six, whose FP8 steps the operator model makes 20-22 % too fast (the curve 12-14 %), the curve is ahead
    # (0.133 before the dispatcher's expert-TP collectives, which brought Grok-1 to -3/-7 % in BF16/FP8 on the curve)
    # 0.085 before the four long-context rows (-3 to -10 % on the curve); 0.076 before Megatron-Bridge 26.02's two
    # FP8 rows (-30 and -68 % on the curve); 0.085 before its gpt-oss rows on Blackwell (-44 and -25 %)
    # 0.092 before the seven further runs of Pai-Megatron-Patch and Megatron-Bridge's CUDA graph guide
    # 0.109 before the three rows of Megatron-LM's MoE recipes (the curve 19-37 % too fast on them)
    # 0.165 before the six rows of NVIDIA's MoE report (the curve -19 to +3 % on them); 0.112 before its three GB300 rows
    # (the curve +1.5 to +5.4 % on them)
    assert statistics.median(curve) == pytest.approx(0.101, abs=0.005)
    # with them the operator model was ahead again (15.9 % against 16.5 %): the curve, fitted on NVIDIA's dense runs, is
    # further off on the runs from outside NVIDIA's tables than the operators are. NVIDIA's MoE report's six rows, on
    # which the curve is 2-19 % off and the operators 2-12 %, put the curve ahead once more (11.2 % against 14.9 %: the
    # curve's errors have a gap from 11.5 to 16.2 %, where the median now falls, so either median moves by points with
    # a run or two); its three GB300 rows, within 5.4 % on the curve and 5.0-22 % on the operators, widen the gap
    # (10.1 % against 14.6 %)
    assert statistics.median(curve) < statistics.median(abs(e) for e in errors.values())


def test_further_runs_from_other_sources_as_measured():
    """Seven MoE step times from sources the model had not seen (November 2026), each record's layout read from its
    source before comparing: a user's Pai-Megatron-Patch measurements on H800 (issues 643 and 658: four Qwen3-235B-A22B
    layouts on 256 GPUs, two Qwen3-30B-A3B ones on 16) and the eager run of Megatron-Bridge's CUDA graph guide
    (Qwen3-30B-A3B on 16 H100, EP 16, the all-to-all dispatcher). Qwen3-235B-A22B straddles zero (+11 % to -16 %: the
    full-recomputation rows too slow, the selective ones too fast); every Qwen3-30B-A3B row is too fast, by 16-22 %,
    as the narrow model's other Megatron rows are. The Pai-Megatron-Patch rows take a fabric their source does not
    state (InfiniBand NDR), and the 30B at PP 2 runs with the memory check off: the memory model puts the published
    layout 7.6 GB over the H800's capacity."""
    from atscale import accuracy

    errors = {e.run.label: e.operators for e in accuracy.moe_errors()
              if e.run.label.endswith("Megatron-Bridge (eager)") or "Pai-Megatron-Patch" in e.run.label}
    assert len(errors) == 7
    pai = "Qwen3-235B-A22B, 256 H800, BF16, Pai-Megatron-Patch, "
    pinned = {pai + "TP 1, EP 8, PP 32, micro-batch 4, full recompute": 0.109,
              pai + "TP 2, EP 8, PP 32, micro-batch 4, full recompute": 0.090,
              pai + "TP 2, EP 8, PP 32, norms and expert activation recomputed": -0.161,
              pai + "TP 1, EP 8, PP 32, norms and experts recomputed": -0.043,
              "Qwen3-30B-A3B, 16 H800, BF16, Pai-Megatron-Patch, PP 2, EP 8": -0.219,
              "Qwen3-30B-A3B, 16 H800, BF16, Pai-Megatron-Patch, PP 4, EP 4": -0.223,
              "Qwen3-30B-A3B, 16 H100, BF16, EP 16, all-to-all dispatcher, Megatron-Bridge (eager)": -0.155}
    assert errors == pytest.approx(pinned, abs=0.005)
    small = [e for k, e in errors.items() if k.startswith("Qwen3-30B")]
    assert all(e < -0.15 for e in small)  # too fast, every one
    assert statistics.median(abs(e) for e in errors.values()) == pytest.approx(0.155, abs=0.005)
    by = {e.run.label: e.run for e in accuracy.moe_errors()}
    over = by["Qwen3-30B-A3B, 16 H800, BF16, Pai-Megatron-Patch, PP 2, EP 8"]
    assert not over.memory_check and over.memory_verdict().startswith("does not fit")
    assert all(by[k].memory_check and by[k].memory_verdict() != "does not fit" for k in pinned if by[k] is not over)


def test_megatron_lm_recipes_as_measured():
    """Megatron-LM's MoE recipes on H100 (examples/moe_recipes, November 2026): each recipe's ARGS read before
    comparing, its README's median model TFLOP/s per GPU read through the library's causal count. All three are too
    fast: Qwen3-30B-A3B on 32 GPUs by 14 % in BF16 and 19 % in FP8, Qwen3-235B-A22B on 256 with EP 32 and the
    all-to-all overlapped by 35 % (a re-measurement a month later, not merged, printed 41 % more for it: the
    published figure of one recipe moved more than the model's error on most runs). The two Qwen3-30B-A3B recipes
    share their layout but not their launch: the FP8 one captures CUDA graphs, which the records cannot express, so
    they are not an FP8 pair; published, FP8 is no faster (0.99), the model's FP8 step is 4 % shorter."""
    from atscale import accuracy

    recipes = {e.run.label: e for e in accuracy.moe_errors() if e.run.label.endswith("Megatron-LM recipe")}
    assert {k: e.operators for k, e in recipes.items()} == pytest.approx({
        "Qwen3-30B-A3B, 32 H100, BF16, Megatron-LM recipe": -0.144,
        "Qwen3-30B-A3B, 32 H100, FP8 blockwise, Megatron-LM recipe": -0.187,
        "Qwen3-235B-A22B, 256 H100, BF16, EP 32, Megatron-LM recipe": -0.345}, abs=0.005)  # -0.363 before A2A_WARMUP
    for e in recipes.values():
        r = e.run
        assert r.metric == "model_flops_causal_per_gpu" and r.model.node_dedup
        st = r.step(operators=True)
        # a rate: the published step is the model's FLOPs over the printed rate
        assert r.published_seconds == pytest.approx(float(st.total) * float(st.model_flops_causal_per_gpu) / r.published)
    bf16, fp8 = (recipes[f"Qwen3-30B-A3B, 32 H100, {d}, Megatron-LM recipe"].run for d in ("BF16", "FP8 blockwise"))
    assert bf16.plan == fp8.plan and fp8.details["float8_recipe"] == "blockwise"
    from atscale import runs

    assert fp8.label not in {p.label for p in runs.fp8_pairs(moe=True)}  # the labels keep them apart, as they should
    published = bf16.published_seconds / fp8.published_seconds
    model = float(bf16.step(operators=True).total / fp8.step(operators=True).total)
    assert (published, model) == pytest.approx((0.993, 1.045), abs=0.01)


@pytest.mark.xfail(strict=True, reason="issue 32's target is not met: median |step-time error| on the 43 MoE runs "
                                       "14.6 % (target 10 %; 15.6 % on the 34 before NVIDIA's MoE report's nine rows, "
                                       "within 12 % each but its 131,072-token GB300 row, +22 %), worst 58.5 % (target 20 %): Megatron-Bridge 26.02's "
                                       "Qwen3-30B-A3B in FP8 at micro-batch 1 is 59 % too fast, and its other "
                                       "Megatron rows (Pai-Megatron-Patch on H800, Bridge's eager EP 16, "
                                       "Megatron-LM's recipes) 14-22 %; Megatron-LM's "
                                       "Qwen3-235B recipe with EP 32 35 %; "
                                       "gpt-oss on H100, GB200 and B200 (25-42 %), "
                                       "Qwen3-235B with TP 4 or 32 stages and NVIDIA's DeepSeek-V3 recipes 20-44 %; "
                                       "Qwen3-30B-A3B under FSDP with its recomputation 21 % too slow")
def test_issue_32_target_on_the_moe_runs():
    from atscale import accuracy

    errors = [abs(e.operators) for e in accuracy.moe_errors()]
    assert statistics.median(errors) <= 0.10 and max(errors) <= 0.20


def test_moe_fp8_gain_as_measured():
    """The FP8/BF16 step speedup of a mixture of experts on the same layout (issue 32's target: within 5 % of a
    published pair). NVIDIA's Grok-1 recipe publishes both precisions at 512, 1,024 and 2,048 H100 (dgxc-benchmarking
    v24.11.1): 1.24-1.25. The operator model gives 1.38 (1.43 before each FP8 GEMM's casts came from its shapes, 1.40
    before the dispatcher's expert-TP collectives), the flat factor of the curve 1.30: both overestimate what FP8 gains here, the operator model most (its FP8 GEMMs at the
    kernel model's rate, while the published gain is the dense models' smallest). Measured when the runs were added
    (November 2026)."""
    from atscale import runs

    pairs = runs.fp8_pairs(moe=True)
    assert [p.model for p in pairs] == ["Grok-1 (NVIDIA recipe)"] * 3
    assert all(p.published == pytest.approx(1.245, abs=0.01) for p in pairs)
    # 0.147 before the casts, 0.128 before the dispatcher's expert-TP collectives (exposed BF16 traffic FP8 does not speed)
    assert all(p.operators / p.published - 1 == pytest.approx(0.111, abs=0.01) for p in pairs)
    assert all(p.curve / p.published - 1 == pytest.approx(0.046, abs=0.01) for p in pairs)  # 0.060 before them
    assert not set(runs.fp8_pairs()) & set(pairs)  # the dense pairs stay apart


@pytest.mark.xfail(strict=True, reason="issue 32's FP8 target is not met: on NVIDIA's Grok-1 recipe the operator "
                                       "model's FP8/BF16 speedup is 1.38 against 1.24-1.25 published (+11-12 %; "
                                       "the curve's flat factor: 1.30, +4-5 %)")
def test_issue_32_fp8_target_on_a_moe_pair():
    from atscale import runs

    assert any(abs(p.operators / p.published - 1) <= 0.05 for p in runs.fp8_pairs(moe=True))


def test_expert_tensor_parallelism_counts_the_copies_that_arrive_once():
    """tp = expert_tp = 2, ep = 1: each GPU permutes its half of the tokens' k copies, and the copies the all-to-all
    brings it are as many (each expert's tokens, split over its expert_tp ranks)."""
    rows = _rows(QWEN, tp=2, sequence_parallel=True)
    hbm = kernels.memory_bandwidth(H100)
    sent = TOKENS / 2 * QWEN.experts_per_token
    expected = _share(QWEN) * 2 * sent * QWEN.hidden_size * 4.0 / hbm
    assert rows["token permutation"].forward == pytest.approx(expected, rel=1e-12)


def _tp_comm(model, *, expert_tp, tp_overlap, tp=4):
    dp = EX.cluster.num_gpus // tp
    plan = Plan(tp=tp, pp=1, dp=dp, micro_batch=1, global_batch=dp, ep=8 if model.is_moe else 1, expert_tp=expert_tp,
                sequence_parallel=True, tp_overlap=tp_overlap)
    return parallelism.step_time(model, EX.cluster, plan, seq_length=TOKENS, memory_check=False).tp_comm


def test_a_moe_layer_gathers_no_dense_mlp_and_expert_tp_gathers_every_copy():
    """Megatron-Core's all-to-all dispatcher (core_r0.9.0 and core_r0.11.0, token_dispatcher.py): an MoE layer has no
    dense MLP whose input TP gathers, and with expert TP it all-gathers the k copies it received over the expert-TP
    group after the all-to-all (reduce-scatter on the way back), outside the linear layers' TP overlap."""
    # expert TP 1, no overlap: the attention's two pairs of the four (Qwen3-235B: every layer MoE, no shared expert)
    dense_twin = dataclasses.replace(QWEN, num_experts=0, experts_per_token=0, expert_ffn_size=None)
    one = _tp_comm(QWEN, expert_tp=1, tp_overlap=False)
    assert one == pytest.approx(0.5 * _tp_comm(dense_twin, expert_tp=1, tp_overlap=False), rel=1e-9)
    # expert TP 4: a pair of k times the bytes on top, the same whether or not the linear layers overlap theirs
    added = _tp_comm(QWEN, expert_tp=4, tp_overlap=False) - one
    # k copies of each token: k times the bytes of the attention's pairs, one latency where k bytes-for-one pay k
    assert 0.8 * QWEN.experts_per_token * one < added < QWEN.experts_per_token * one
    assert _tp_comm(QWEN, expert_tp=4, tp_overlap=True) - _tp_comm(QWEN, expert_tp=1, tp_overlap=True) == \
        pytest.approx(added, rel=1e-9)
    # a shared expert is a dense MLP: DeepSeek-V3 (one shared expert) keeps its MLP's pair with expert TP 1
    dsv3_twin = dataclasses.replace(DSV3, num_experts=0, experts_per_token=0, expert_ffn_size=None, shared_experts=0,
                                    dense_layers=0, max_routed_nodes=None, node_dedup=None, fp8_dispatch=False)
    ratio = _tp_comm(DSV3, expert_tp=1, tp_overlap=False) / _tp_comm(dsv3_twin, expert_tp=1, tp_overlap=False)
    assert ratio == pytest.approx(1.0, rel=1e-9)


def test_the_dispatcher_pair_is_the_same_vectorised():
    dp = EX.cluster.num_gpus // 4
    plans = [Plan(tp=4, pp=1, dp=dp, micro_batch=1, global_batch=dp, ep=8, expert_tp=e, sequence_parallel=True)
             for e in (1, 2, 4)]
    scalar = [parallelism.step_time(QWEN, EX.cluster, p, seq_length=TOKENS, memory_check=False).tp_comm for p in plans]
    table = parallelism.evaluate(QWEN, EX.cluster, tp=4, pp=1, dp=dp, micro_batch=1, global_batch=dp, ep=8,
                                 expert_tp=[1, 2, 4], sequence_parallel=True, seq_length=TOKENS, memory_check=False)
    assert list(table.tp_comm) == pytest.approx(scalar, rel=1e-12)
