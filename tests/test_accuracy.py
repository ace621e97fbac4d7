"""The appendix "How accurate is this book?": every comparison with a published measurement, asserted."""

import dataclasses

import pytest

from atscale import accuracy as A
from atscale import collectives, experts, memory, parallelism, reliability, runs

ALL = A.comparisons()

# The measured errors of the comparisons the book says the model misses (model / published - 1).
KNOWN_MISSES = {
    "8 × A100 80GB (HPE), large": -0.148,
    # NVIDIA's MoE report's per-GPU memory of DeepSeek-V3 (Table 3; added November 2026): the memory model counts 20 %
    # more than the 199.5 GB published, beyond its stated 8 % margin; activations +25 %, weights and gradients +18 %
    "DeepSeek-V3, PP 4 × VPP 4 × EP 64, 256 GPUs, BF16 (NVIDIA's MoE report)": 0.199,
    # DeepEP's published normal kernels (H800; added to the comparisons in November 2026): the model's time is shorter
    # than the published bandwidth gives on every row, beyond 10 % in one node, on two nodes (where the forwarding over
    # NVLink, not the NIC, sets the pace, as the published dip shows) and for the combine on four; within 10 % for the
    # dispatch on four nodes (-0.092) and both on eight (-0.063, -0.089)
    "DeepEP dispatch, 8 H800 (one node)": -0.127,
    "DeepEP combine, 8 H800 (one node)": -0.108,
    "DeepEP dispatch, 16 H800 (2 nodes)": -0.199,
    "DeepEP combine, 16 H800 (2 nodes)": -0.206,
    "DeepEP combine, 32 H800 (4 nodes)": -0.113,
    # The step-time model's misses of more than 3 MFU points (accuracy.STEP_TIME_MISS_POINTS), as relative errors
    # of MFU. No calibration run is left beyond 3 points since each GPU generation has its own E_max; all are
    # validation runs:
    "MegaScale 175B (Megatron-LM), 3,072 A100": 0.094,  # +4.6 points
    "MegaScale 175B (Megatron-LM), 6,144 A100": 0.077,  # +3.7 points
    "MegaScale 175B (Megatron-LM), 8,192 A100": 0.162,  # +7.0 points
    "MegaScale 175B (Megatron-LM), 12,288 A100": 0.170,  # +7.0 points
    # -4.9 points (of the FP8 peak); -0.114 (-4.8) before the H100 recipes' scripts and the refit
    "Llama 3.1 405B, 576 H100, FP8": -0.117,
    # (GPT-3 175B, 128 H100, FP8 was -3.5 points with v = 12; at the recipe's configured v = 6 it is -2.5: inside)
    # +3.4 points; 0.064 (+3.0) before the H100 recipes' scripts and the refit
    "Nemotron-4 340B, 128 H100, BF16": 0.072,
    # +3.9 points; 0.078 (+3.5) before the H100 recipes' scripts and the refit
    "Nemotron-4 340B, 2,048 H100, BF16": 0.087,
    # Llama 3 405B, Table 4, with the layout its sec. 3.3.2 describes (v = 8 one-slot chunks, all-gather context
    # parallelism): optimistic on all three rows, a known miss (it was inside 3 points only with v = 2 assumed)
    # +9.0 points (52.0 % against 43 %) with the pipeline's sends asynchronous as the paper states; 0.167 (+7.2) while
    # every send was exposed; 0.193 (51.3 %; 51.6 % before the tiered network) before the H100 recipes'
    # scripts and the refit
    "Llama 3 405B, 8,192 H100": 0.209,
    # +7.4 points (48.4 % against 41 %); 0.141 (+5.8) while every send was exposed; 0.166 (47.8 %; 48.5 % before the tiered network) before the H100 recipes'
    # scripts and the refit
    "Llama 3 405B, 16,384 H100": 0.180,
    # +9.2 points (47.2 % against 38 %); 0.218 (+8.3) while every send was exposed; 0.244 (47.3 %) before the H100 recipes' scripts and the refit
    "Llama 3 405B, 16,384 H100, CP 16, 131,072 tokens": 0.243,
    # Mixtures of experts (all validation; the expert terms are new and these runs judge them): the model is
    # optimistic on DeepSeek-V3 under NVIDIA's recipes, on gpt-oss and on Qwen3-235B with the all-to-all overlap
    # (within 3 points without it, once the records took the DeepEP dispatcher and the recomputation their source
    # prints: -0.202 and +0.176 before). DeepSeek's own run (with DualPipe) was 32 % optimistic (0.319; 0.295
    # before its recomputation took the report's list, 0.2915 before RoPE turned only MLA's rotary part, 0.299
    # before its BF16-moment optimizer layout) until its multi-token-prediction module and DualPipe's pairing of
    # the first and the last stage were priced (November 2026): inside 3 points since, with the library's even
    # layer split, which its report does not state (the accuracy appendix shows how the split moves it).
    # NVIDIA's DeepSeek-V3 recipes with Megatron-Core's default dispatcher (0.806 and 0.902 with DeepSeek's own
    # node-deduplicating one, which their source does not name). The rotary embedding's memory traffic now takes the
    # model's rotary width (MLA: the rotary part only; a head size other than h / a: its own): these moved by
    # -0.006 to +0.004 (November 2026)
    # Since November 2026 the two take the layout NVIDIA's scripts set (multi-token prediction, the uneven layer
    # split, recomputation of the MLA up-projections, TP communication not overlapped): 0.369 and 0.4435 before
    # 0.298 before the H100 recipes took their scripts' settings and the refit (Nov. 2026)
    "DeepSeek-V3, 512 H100, BF16": 0.280,
    # 0.331 before the H100 recipes took their scripts' settings and the refit (Nov. 2026)
    "DeepSeek-V3, 1,024 H100, BF16": 0.310,
    # 0.225 before the H100 recipes took their scripts' settings and the refit (Nov. 2026)
    # 0.197 before the Qwen3-235B records took their scripts' TP communication, not overlapped (Nov. 2026)
    # 0.172 before its MoE layers dropped the dense MLP's TP collectives (Megatron-Core's dispatcher gathers over the
    # expert-TP group, here of one GPU: nothing) (Nov. 2026)
    # 0.197 before the ModelZoo records took Megatron-LM's default overlapped pipeline sends (overlap_p2p_comm; Nov. 2026)
    # 0.228 before Megatron-Core's expert-parallel overlap left the warm-up and cool-down chunks' all-to-alls exposed (parallelism.A2A_WARMUP)
    "Qwen3-235B-A22B, 256 H100, BF16, all-to-all overlapped": 0.194,
    # the further Qwen3-235B runs with the expert group inside the node (runs.MOE_FURTHER_RUNS): optimistic on the
    # 32-stage pipeline and on TP 4 (whose published step is the slowest of the table; the model's is not)
    # 0.369 before the H100 recipes took their scripts' settings and the refit (Nov. 2026)
    # 0.341 before TP communication not overlapped, as the scripts run it (Nov. 2026)
    # 0.325 before the MoE layers' MLP half of the TP collectives took Megatron-Core's dispatcher (no dense MLP to
    # gather for, and no expert TP: none) (Nov. 2026)
    # 0.341 before the ModelZoo records took Megatron-LM's default overlapped pipeline sends (overlap_p2p_comm; Nov. 2026)
    "Qwen3-235B-A22B, 256 H100, BF16, EP 8, PP 32, all-to-all dispatcher": 0.428,
    # 0.915 before DeepEP sent once per GPU inside the node; 0.998 before the H100 recipes' scripts and the refit
    # 0.959 before TP communication not overlapped and the embedding and loss counted as layer slots, as the
    # scripts run it (Nov. 2026)
    # 0.791 before the MoE layers' MLP half of the TP collectives took the dispatcher's (none with expert TP 1)
    # 0.901 before the ModelZoo records took Megatron-LM's default overlapped pipeline sends (overlap_p2p_comm; Nov. 2026)
    "Qwen3-235B-A22B, 256 H100, BF16, EP 8, TP 4": 0.949,
    # the same table's long-context rows (November 2026; TP 4, PP 8, CP 1-8, the layout of the row above at 16k-131k
    # tokens, with the norms and the whole MoE layer recomputed): 16k and 32k within 3 points (+1.4, +2.3), then
    # optimistic by 4.2 and 7.5 points: the calibrated curve's error grows with attention's share of the step. Since
    # their records took Megatron-LM's default overlapped pipeline sends (November 2026) 32k is out too (+5.9 % of its
    # MFU, 0.066 and 0.105 before for the two below)
    "Qwen3-235B-A22B, 256 H100, BF16, 32k tokens, CP 2": 0.059,
    "Qwen3-235B-A22B, 256 H100, BF16, 64k tokens, CP 4": 0.077,
    "Qwen3-235B-A22B, 256 H100, BF16, 128k tokens, CP 8": 0.112,
    # 0.565 before it took its configuration's recomputation (layernorm, moe_act); 0.550 before the H100 recipes'
    # scripts and the refit
    "gpt-oss-120b, 64 H100, BF16": 0.518,
    # the same model on Blackwell in Megatron-Bridge 26.02 (added November 2026, read from the release's scripts
    # before comparing: EP 64, micro-batch 4): optimistic on both, by 15.9 points on 64 GB200 of one NVL72 rack and
    # 4.4 on 8 B200 nodes; the difference between the two, the all-to-all leaving the NVLink domain, the model gets
    # within 8 % (test_megatron_bridge_moe). 0.788 and 0.338 (18.9 and 4.6 points) while Blackwell's GEMM rates were
    # extrapolated from the datasheet peaks, before the catalog took Bekman's published best-shape rates (Nov. 2026)
    "gpt-oss-120b, 64 GB200 (one NVL72 rack), BF16, EP 64": 0.664,
    "gpt-oss-120b, 64 B200 (8 nodes), BF16, EP 64": 0.324,
    # Qwen3-30B-A3B under NeMo AutoModel: inside 3 points (+1.3 %) only while its record assumed nothing recomputed
    # (with the memory check off); the source's configuration recomputes every block (activation_checkpointing), and
    # with it the model is too slow by 29 % (-0.227), by 22 % once DeepEP's dispatch, which its configuration turns on,
    # sends a token once per GPU inside the node rather than once per expert (November 2026)
    # -0.166 before the H100 recipes took their scripts' settings and the refit (Nov. 2026)
    "Qwen3-30B-A3B, 8 H100, BF16, FSDP": -0.182,
    # Megatron-Bridge 26.02's two MoE rows on H100 (added November 2026 with the layout its performance scripts set,
    # read before comparing), both FP8 with current scaling: optimistic by 5.8 points on Qwen3-235B-A22B (the curve's
    # step 30 % short) and by 15.6 points on Qwen3-30B-A3B, whose published step is 3.2 times the curve's (2.6 times
    # the operator model's): the narrow model at micro-batch 1, whose published rate is 12 % of the BF16 peak
    # 0.423 and 2.160 before Megatron-Core's expert-parallel overlap left the warm-up and cool-down chunks' all-to-alls exposed (parallelism.A2A_WARMUP)
    "Qwen3-235B-A22B, 256 H100, FP8, Megatron-Bridge 26.02": 0.407,
    "Qwen3-30B-A3B, 16 H100, FP8, Megatron-Bridge 26.02": 2.150,
    # Further runs from other sources (added November 2026 with the layouts their sources state, read before comparing):
    # a user's Pai-Megatron-Patch measurements on H800 (issues 643 and 658) and the eager run in Megatron-Bridge's CUDA
    # graph guide. Qwen3-235B-A22B on 256 H800: two of the four within 3 points' band (full recomputation, and the
    # norms with the experts recomputed); the one with the norms and the experts' activation recomputed at TP 2 is
    # optimistic by 20 % of its MFU. Qwen3-30B-A3B: optimistic by 29 % on both H800 layouts and 21 % on the eager
    # H100 run with EP 16 (the narrow model at micro-batch 1, as on Megatron-Bridge 26.02's FP8 row)
    "Qwen3-235B-A22B, 256 H800, BF16, Pai-Megatron-Patch, TP 2, EP 8, PP 32, norms and expert activation recomputed": 0.199,
    "Qwen3-30B-A3B, 16 H800, BF16, Pai-Megatron-Patch, PP 2, EP 8": 0.285,
    "Qwen3-30B-A3B, 16 H800, BF16, Pai-Megatron-Patch, PP 4, EP 4": 0.286,
    "Qwen3-30B-A3B, 16 H100, BF16, EP 16, all-to-all dispatcher, Megatron-Bridge (eager)": 0.209,
    # Megatron-LM's MoE recipes on H100 (their README's median TFLOP/s, read through the library's causal count):
    # Qwen3-30B-A3B on 32 GPUs in BF16 and in FP8 (block-wise; the FP8 recipe also captures CUDA graphs) and
    # Qwen3-235B-A22B on 256 with EP 32 and the all-to-all overlapped, all optimistic
    "Qwen3-30B-A3B, 32 H100, BF16, Megatron-LM recipe": 0.235,
    "Qwen3-30B-A3B, 32 H100, FP8 blockwise, Megatron-LM recipe": 0.468,
    # 0.583 before Megatron-Core's expert-parallel overlap left the warm-up and cool-down chunks' all-to-alls exposed (parallelism.A2A_WARMUP)
    "Qwen3-235B-A22B, 256 H100, BF16, EP 32, Megatron-LM recipe": 0.539,
    # NVIDIA's MoE report (Yan et al. 2026, Tables 11 and 20; added November 2026, read before comparing): of its six
    # rows on H100 and GB200 the calibrated curve misses two by more than 3 points, both optimistic: DeepSeek-V3 in
    # blockwise FP8 on 1,024 H100 (+4.6 points of the FP8 peak) and Qwen3-235B-A22B in BF16 on 256 GB200 (+3.4); the
    # operator-level model is within 12 % of all six steps (-11.9 and -1.5 % on these two)
    "DeepSeek-V3, 1,024 H100, FP8 blockwise, Megatron-Core MoE report": 0.231,
    "Qwen3-235B-A22B, 256 GB200, BF16, Megatron-Core MoE report": 0.100,
    # NVIDIA's Grok-1 recipe (dgxc-benchmarking v24.11.1, the full 64 layers; added November 2026 with the layout its
    # scripts set, read before comparing) was optimistic by 3.3-3.8 points in BF16 and 3.6-4.2 in FP8 (of the FP8 peak)
    # until its MoE layers paid the expert-TP all-gather and reduce-scatter of Megatron-Core's all-to-all dispatcher
    # (k copies of every token over the expert-TP group, exposed); since, all six are within 3 points (Nov. 2026)
    # Reliability at the running example's scale (validation; no profile was fitted on these fleets): the
    # profiles' job MTBF against the research clusters' measured 1,024-GPU job MTTF of 7.9 h (Kokolis et al.
    # 2025; 4.2x and 6.3x) and OPT-175B's 105 hardware restarts in 60 days on 992 A100s (Zhang et al. 2022; 2.5x).
    "textbook profile, research-cluster jobs (1,024 A100)": 3.238,
    "fitted profile (Llama 3), research-cluster jobs (1,024 A100)": 5.264,
    "textbook profile, OPT-175B fleet (992 A100)": 1.520,
}


@pytest.mark.parametrize("c", [c for c in ALL if not c.known_miss], ids=lambda c: f"{c.group}: {c.what}")
def test_each_comparison_within_its_stated_band(c):
    assert c.within, f"{c.what}: model {c.model:.4g} vs published {c.published:.4g}, error {c.error:+.1%} " \
                     f"outside {c.band}"


@pytest.mark.parametrize("c", [c for c in ALL if c.known_miss], ids=lambda c: c.what)
def test_known_misses_are_misses_with_their_error_pinned(c):
    assert not c.within
    assert c.role == "validation" or c.group == "Step time"  # a step-time fit residual beyond 3 points is named too
    assert c.error == pytest.approx(KNOWN_MISSES[c.what], abs=0.002)


def test_the_known_misses_are_exactly_those_the_book_states():
    assert {c.what for c in ALL if c.known_miss} == set(KNOWN_MISSES)


def test_every_published_comparison_is_gathered():
    # Nothing the chapters compare is left out, and nothing is counted twice.
    assert len(ALL) == (len([a for a in __import__("atscale").hardware.ACCELERATORS.values()
                             for _ in a.measured_matmul_flops]) + len(memory.ZERO_TABLE2)
                        + len(collectives.CALIBRATION) + len(collectives.VALIDATION) + len(experts.deepep_comparison())
                        + len(parallelism.CALIBRATION_RUNS) + len(parallelism.VALIDATION_RUNS)
                        + len(parallelism.MOE_RUNS) + len(runs.MOE_FURTHER_RUNS) + 2 + 3
                        + 1)  # NVIDIA's MoE report's memory breakdown
    assert len({(c.group, c.what) for c in ALL}) == len(ALL)
    assert [c.group for c in ALL] == sorted((c.group for c in ALL), key=A.GROUPS.index)


def test_roles_follow_the_library_data():
    cal = {c.what for c in ALL if c.role == "calibration"}
    assert {m.label for m in collectives.CALIBRATION} <= cal
    assert not {m.label for m in collectives.VALIDATION} & cal
    step = {c.what: c for c in ALL if c.group == "Step time"}
    assert sum(c.role == "calibration" for c in step.values()) == len(parallelism.CALIBRATION_RUNS)
    assert all(c.role == "validation" for c in ALL if c.kind == "upper bound")


def test_every_comparison_has_a_source_and_states_what_it_leaves_out():
    for c in ALL:
        assert c.source and c.leaves_out, c.what
        assert c.model > 0 and c.published > 0


def test_the_model_values_are_the_chapters():
    # The records carry the library's own numbers, not copies.
    run = parallelism.OTHER_RUNS[2]
    rec = next(c for c in ALL if c.what.startswith(run.label))
    assert rec.model == run.predicted and rec.published == pytest.approx(run.published, rel=1e-12)
    assert rec.error == pytest.approx(run.error)
    assert rec.model - rec.published == pytest.approx(run.points())
    m = collectives.VALIDATION[0]
    rec = next(c for c in ALL if c.what == m.label)
    assert rec.error == pytest.approx(m.error)
    obs = reliability.LLAMA3_OBSERVED
    rec = next(c for c in ALL if c.what.startswith("textbook profile"))
    assert rec.published == obs.mtbf and rec.model / rec.published == pytest.approx(0.677, abs=0.001)
    assert rec.band == pytest.approx((1 / reliability.MODEL_VS_FLEET_TOLERANCE - 1,
                                      reliability.MODEL_VS_FLEET_TOLERANCE - 1))
    z = [c for c in ALL if c.group == "Memory" and c.kind == "upper bound"]
    assert len(z) == len(memory.ZERO_TABLE2)
    assert all(c.band[1] == pytest.approx(1 / memory.ZERO_TABLE2_FLOOR - 1) for c in z)
    (moe,) = [c for c in ALL if c.group == "Memory" and c.kind == "estimate"]  # NVIDIA's MoE report's Table 3
    check = experts.mcore_memory_check()
    assert (moe.model, moe.published) == (check.breakdown.total, experts.MCORE_MEMORY["total"])
    assert moe.band == pytest.approx((-parallelism.MEMORY_MARGIN, parallelism.MEMORY_MARGIN))


def test_summary_statistics_calibration_and_validation_apart():
    cal, val = A.summary("calibration"), A.summary("validation")
    # 49 before the three further MoE runs and the all-to-all, 53 before the six Grok-1 runs
    # 59 before the four long-context rows of the Qwen3-235B table, 63 before DeepEP's eight rows
    # 71 before Megatron-Bridge 26.02's two FP8 MoE rows on H100, 73 before its gpt-oss rows on GB200 and B200
    # 75 before seven further MoE runs from Pai-Megatron-Patch's issues and Megatron-Bridge's CUDA graph guide
    # 82 before the three rows of Megatron-LM's MoE recipes on H100, 85 before the six of NVIDIA's MoE report, 91
    # before its three GB300 rows, 94 before its memory breakdown of DeepSeek-V3
    assert cal.count == 22 and val.count == 95
    # 0.014 before the H100 recipes took their scripts' pipeline overlap and the curve was refit (November 2026)
    assert cal.median_abs_error == pytest.approx(0.017, abs=0.002)
    assert cal.worst_abs_error == pytest.approx(0.048, abs=0.002) and cal.worst == "8 B ring, 2 GPUs"
    # 0.051 with both errata merged: the Llama 3 rows at v = 8 (known misses) and the three reliability rows; 0.056
    # with the three further MoE runs, 0.052 with the all-to-all on eight H100; 0.061 once Qwen3-30B-A3B's record took
    # its configuration's recomputation (a known miss since)
    # its configuration's recomputation (a known miss since); 0.058 after the H100 recipes' scripts and the refit
    # 0.0645 before the Qwen3-235B records took their scripts' TP communication (not overlapped)
    # 0.061 before the MoE layers' TP collectives took Megatron-Core's dispatcher (the six Grok-1 runs within 3 points)
    # 0.058 before DeepEP's eight rows (-6 to -21 %)
    # 0.0645 before Megatron-Bridge 26.02's two FP8 MoE rows on H100, 0.066 before its gpt-oss rows on Blackwell
    # 0.0706 before seven further MoE runs (Pai-Megatron-Patch on H800, Megatron-Bridge's eager Qwen3-30B-A3B)
    # 0.0741 before Megatron-LM's three MoE recipes on H100
    # 0.0766 before the ModelZoo records took Megatron-LM's default overlapped pipeline sends (a run crossing the median)
    # 0.0865 before the three GB300 rows of NVIDIA's MoE report (the curve within 5.4 % on each: the median falls across
    # a gap in the errors)
    # 0.0807 before its memory breakdown of DeepSeek-V3 (+20 %: the median moves across the same gap)
    assert val.median_abs_error == pytest.approx(0.0846, abs=0.002)  # 0.058 before the six Grok-1 runs
    assert val.worst_abs_error == pytest.approx(5.264, abs=0.002)
    assert val.worst == "fitted profile (Llama 3), research-cluster jobs (1,024 A100)"
    dense = A.summary("validation", group="Step time")
    # 0.218 before the Llama 3 rows took the paper's asynchronous pipeline sends; 0.243 before the H100 recipes' scripts
    # and the refit
    assert dense.worst_abs_error == pytest.approx(0.243, abs=0.002)
    assert dense.worst == "Llama 3 405B, 16,384 H100, CP 16, 131,072 tokens"
    bounds = A.summary("validation", kind="upper bound")
    # 13 before the catalog took Bekman's FP8 rows and his B200 and GB200 ones (November 2026)
    assert bounds.count == 19 and bounds.worst.startswith("MI300X")
    assert len(A.summary_table().rows) == 3 and "relative error" in A.summary_table().caption


def test_records_are_frozen_and_validated():
    c = ALL[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.model = 1.0
    with pytest.raises(ValueError, match="role"):
        dataclasses.replace(c, role="fitted")
    with pytest.raises(ValueError, match="kind"):
        dataclasses.replace(c, kind="guess")
    with pytest.raises(ValueError, match="group"):
        dataclasses.replace(c, group="Chapter 9")
    with pytest.raises(ValueError, match="band"):
        dataclasses.replace(c, band=(0.1, -0.1))
    with pytest.raises(ValueError, match="role"):
        A.summary("fitted")
    with pytest.raises(ValueError, match="group"):
        A.table("Networking")


def test_tables_and_figures():
    from atscale import plots

    for g in A.GROUPS:
        t = A.table(g, detail=True)
        assert len(t.rows) == sum(c.group == g for c in ALL) and len(t.headers) == 8
    assert "(missed)" in str(A.table("Step time"))
    for fig in (plots.accuracy_error_chart(), plots.bound_headroom_chart(),
                plots.model_vs_published_chart("Collectives")):
        assert fig.axes and fig.axes[0].get_title()
    with pytest.raises(ValueError, match="group"):
        plots.model_vs_published_chart("Networking")
    # the Memory group's one estimate (NVIDIA's MoE report's breakdown, November 2026) draws; Hardware has none
    assert plots.model_vs_published_chart("Memory").axes
    with pytest.raises(ValueError, match="no estimates"):
        plots.model_vs_published_chart("Hardware")


def test_tables_state_each_error_in_its_quantitys_convention():
    """Issue 35, item 9: an MFU's error in points (the unit of its stated accuracy), every other one relative;
    the convention named in the caption; the sources table folded, three columns."""
    step = A.table("Step time")
    assert "points" in step.caption and "model / published - 1" in step.caption
    for row in step.rows:
        if row[1].endswith("%") and "MFU" in row[5]:
            assert row[3].endswith("MFU points"), row
    c = next(c for c in A.comparisons() if c.what == "DeepSeek-V3, 1,024 H100, BF16")
    assert c.error_text() == f"{(c.model - c.published) * 100:+.1f} MFU points"
    mem = A.table("Memory")
    assert all(row[3].endswith("%") for row in mem.rows)
    sources = A.sources_table()
    assert len(sources.headers) == 3 and sources.fold and "<details" in sources._repr_html_()


def test_triton_check_as_measured():
    """The FlashAttention-2 paper's text ratio (as the model prices FlashAttention in Triton) against its own A100
    figure, and the figure's Triton rate against llm-foundry's published MPT-1B step on 8 A100s at 32k tokens:
    the figure's gap is wider (2.3x against 1.8x), and at its rate the step's attention alone and its matmuls at
    peak exceed the published step (the run's kernel was faster than the benchmarked one)."""
    c = A.triton_check()
    assert c.text_ratio == pytest.approx(1.83, abs=0.02)
    assert len(c.figure_ratios) == 4 and min(c.figure_ratios) > c.text_ratio + 0.3
    assert c.impossible and c.attention_seconds < c.step_seconds  # attention alone fits; with the matmuls it cannot
    assert c.step_seconds == pytest.approx(32 * 32768 / (6275 * 8), rel=1e-3)  # 6,275 tokens/s per GPU, as printed
    # the figure's first (CUDA) FlashAttention, 69-83 TFLOP/s against the Triton bars' 68-80 (causal, 2k-16k): a few
    # per cent faster, and still too slow for the published step
    assert len(c.first_ratios) == 4 and all(1.0 < r < 1.05 for r in c.first_ratios)
    assert c.first_impossible
    assert c.attention_seconds / c.first_ratios[-1] + c.matmul_seconds == pytest.approx(21.3, abs=0.1)
