"""Megatron-Bridge 26.02's two mixture-of-experts rows on H100 (issue 32: "checked on published MoE runs not named
here"), read from the release's performance scripts before comparing, and the per-layer reading of a published
step (:func:`atscale.accuracy.layer_gaps`)."""

import math

import pytest

from atscale import accuracy, runs

BY = {r.label: r for r in runs.MOE_FURTHER_RUNS}
BIG = BY["Qwen3-235B-A22B, 256 H100, FP8, Megatron-Bridge 26.02"]
SMALL = BY["Qwen3-30B-A3B, 16 H100, FP8, Megatron-Bridge 26.02"]


def test_the_records_as_the_scripts_set_them():
    """qwen3_workload_base_configs.py and qwen3_llm_pretrain.py at v0.3.0 (the H100 FP8_CS presets)."""
    for r in (BIG, SMALL):
        assert r.role == "validation" and r.dtype == "fp8" and r.fp8_recipe == "current"
        assert r.plan.recompute == "none" and r.plan.a2a_overlap and r.plan.pp_overlap
        assert r.plan.schedule == "interleaved" and r.plan.expert_tp == 1 and r.memory_check
        assert r.stack_preset == "megatron-core" and r.memory_verdict() == "fits"
    p = BIG.plan
    assert (p.tp, p.pp, p.virtual_stages, p.ep, p.dp, p.global_batch, p.micro_batch) == (2, 8, 4, 32, 16, 8192, 1)
    assert p.account_for_embedding and p.account_for_loss and not p.tp_overlap and p.sequence_parallel
    assert BIG.model.node_dedup is False  # Megatron-Core's 'alltoall' dispatcher: one copy per expert
    p = SMALL.plan
    assert (p.tp, p.pp, p.virtual_stages, p.ep, p.dp, p.global_batch, p.micro_batch) == (1, 2, 12, 8, 8, 1024, 1)
    assert not p.account_for_embedding and SMALL.model.node_dedup is True  # DeepEP inside one node


def test_published_steps_from_the_printed_rates():
    assert BIG.published_seconds == pytest.approx(8192 * 4096 / (1633 * 256))
    assert SMALL.published_seconds == pytest.approx(1024 * 4096 / (5113 * 16))
    assert "1,633" in BIG.source and "5,113" in SMALL.source


def test_the_printed_rates_are_megatrons_causal_count():
    """The table prints model TFLOP/s per GPU beside tokens per second (242 and 118): the library's causal count
    (Megatron-LM's) over the published step gives both to within 0.2 %."""
    for r, tflops in ((BIG, 242), (SMALL, 118)):
        assert r.details["published_rate"] == tflops * 1e12
        st = r.step()
        counted = float(st.model_flops_causal_per_gpu) * float(st.total) / r.published_seconds
        assert counted == pytest.approx(r.details["published_rate"], rel=0.002)
        assert r.rate_count_error == pytest.approx(counted / r.details["published_rate"] - 1, rel=1e-12)
    with pytest.raises(ValueError, match="published_rate"):
        _ = GB.rate_count_error


def test_errors_as_measured():
    """Measured when the rows were added (November 2026): both too fast. The 235B row as far off as the ModelZoo's
    BF16 row with the same all-to-all overlap; the 30B row the group's worst. Operators: -16.5 and -61.9 % before
    each local expert's GEMM and FP8 cast counted as a kernel of its own (operators.EXPERT_LAUNCHES, November
    2026); the 30B -56.5 % while those kernels' host time was a PyTorch call's each (its forward host-bound), -53.7 %
    with the dispatch's host wait on top (operators.DISPATCH_SYNC), before the kernels launched from C++ took
    kernels.HOST_SECONDS_PER_LAUNCH (the wait then costs nothing here)."""
    # -0.157, -0.297, -0.586 and -0.684 before the warm-up and cool-down chunks of Megatron-Core's expert-parallel
    # overlap left their all-to-alls exposed (parallelism.A2A_WARMUP; November 2026)
    assert BIG.step_error(operators=True) == pytest.approx(-0.151, abs=0.005)
    assert BIG.step_error() == pytest.approx(-0.289, abs=0.005)
    assert SMALL.step_error(operators=True) == pytest.approx(-0.585, abs=0.005)
    assert SMALL.step_error() == pytest.approx(-0.683, abs=0.005)
    overlapped = next(e for e in accuracy.moe_errors() if e.run.label.endswith("BF16, all-to-all overlapped"))
    # within 0.02 until the ModelZoo row took Megatron-LM's default overlapped pipeline sends (-0.161 -> -0.179)
    assert abs(BIG.step_error(operators=True) - overlapped.operators) < 0.025
    assert abs(SMALL.step_error(operators=True)) == max(abs(e.operators) for e in accuracy.moe_errors())


def test_layer_gaps_spread_the_difference_over_every_layer_of_every_micro_batch():
    gaps = accuracy.layer_gaps()
    errors = accuracy.moe_errors()
    assert [g.run for g in gaps] == [e.run.label for e in errors]
    for g, e in zip(gaps, errors):
        r = e.run
        model = float(r.step(operators=True).total)  # seconds, whatever the metric
        assert g.gap_seconds * g.micro_batches * g.layers == pytest.approx(r.published_seconds - model, rel=1e-9)
        assert math.copysign(1, g.gap_seconds) == -math.copysign(1, e.operators)
        assert 0 < g.host_seconds < g.layer_seconds and g.kernels > 0
        assert g.micro_batches * r.plan.dp * r.plan.micro_batch == r.plan.global_batch
    small = next(g for g in gaps if g.run == SMALL.label)
    # as measured (November 2026): 24 layers x 128 micro-batches; the model's layer 5.7 ms, its host 1.9 ms (275
    # kernels: 20 us per PyTorch call, 3 us per kernel launched from C++), the published step 9.8 ms more per layer.
    # Before each of the 16 local experts' GEMMs and casts counted as a kernel of its own (operators.EXPERT_LAUNCHES):
    # layer 5.2 ms, host 1.3 ms (65 kernels), 10.3 ms more; while every kernel cost the host 20 us: host 5.5 ms, layer
    # 6.1 ms (6.5 ms with the dispatch's wait)
    assert (small.layers, small.micro_batches, small.kernels) == (24, 128, 275)
    assert small.layer_seconds == pytest.approx(5.72e-3, rel=0.01)
    assert small.host_seconds == pytest.approx(1.86e-3, rel=0.01)
    assert small.gap_seconds == pytest.approx(9.78e-3, rel=0.01)
    assert small.gap_seconds > small.layer_seconds > small.host_seconds


# --------------------------------------------------------------------------------------
# gpt-oss-120b on Blackwell: the expert group inside one NVLink domain and across nodes (issue 32, item 3)
GB = BY["gpt-oss-120b, 64 GB200 (one NVL72 rack), BF16, EP 64"]
B2 = BY["gpt-oss-120b, 64 B200 (8 nodes), BF16, EP 64"]


def test_the_blackwell_records_as_the_scripts_set_them():
    """gpt_oss_workload_base_configs.py at v0.3.0: the GB200 and B200 BF16 presets (second variant), identical."""
    assert GB.plan == B2.plan and GB.model == B2.model and GB.model.name == "gpt-oss-120b"
    p = GB.plan
    assert (p.tp, p.pp, p.dp, p.ep, p.expert_tp, p.micro_batch, p.global_batch) == (1, 1, 64, 64, 1, 4, 1280)
    assert p.recompute_modules == ("layernorm", "act") and not p.a2a_overlap
    assert (GB.cluster.num_nodes, GB.cluster.node.gpus, GB.cluster.node.nics) == (1, 64, 64)
    assert GB.cluster.node.accelerator.name == "GB200" and GB.cluster.node.accelerator.scale_up_fabric == "NVLink 5"
    assert (B2.cluster.num_nodes, B2.cluster.node.name) == (8, "HGX B200")
    assert GB.published_seconds == pytest.approx(1280 * 4096 / (15784 * 64))
    assert B2.published_seconds == pytest.approx(1280 * 4096 / (8047 * 64))
    assert all(r.memory_verdict() == "fits" and r.role == "validation" for r in (GB, B2))


def test_a_record_may_take_part_of_a_catalog_node():
    node = runs._node({"catalog": "GB200 NVL72", "gpus": 64, "nics": 64, "name": "x"})
    assert (node.gpus, node.nics, node.name) == (64, 64, "x") and node.accelerator.name == "GB200"
    assert runs._node("HGX B200").gpus == 8
    with pytest.raises(ValueError, match="node"):
        runs._node({"catalog": "GB400 NVL72", "gpus": 64})
    with pytest.raises(ValueError, match="gpus"):
        runs._node({"catalog": "GB200 NVL72", "gpus": 0})


def test_blackwell_errors_as_measured():
    """Both too fast (as on H100, -28 %). (-42.4 and -24.6 % before the attention kernels took their published rate
    at gpt-oss's head dimension of 64; -40.5 and -23.5 % (the curve: -44.1, -25.3) before Blackwell's GEMM rates and
    matmul ceilings took Bekman's published best-shape rates in place of the datasheet extrapolation, November
    2026; -37.3 and -22.9 % before Blackwell took its own kernel efficiency, 0.81, fitted on NVIDIA's dense 8-GPU
    Llama 3 8B steps in FP8, which these BF16 runs of a mixture of experts validate, November 2026; -32.4 and
    -20.2 % before Blackwell's attention took cuDNN's published B200 rates and that constant was refitted, 0.89.)"""
    assert GB.step_error(operators=True) == pytest.approx(-0.332, abs=0.005)
    assert B2.step_error(operators=True) == pytest.approx(-0.210, abs=0.005)
    assert GB.step_error() == pytest.approx(-0.399, abs=0.005) and B2.step_error() == pytest.approx(-0.245, abs=0.005)


def test_what_leaving_the_nvlink_domain_costs_the_model_gets():
    """The step across 8 B200 nodes is 5.0 s longer than inside one GB200 rack as published, 4.6 s in the model
    (-8 %, measured November 2026), most of it the all-to-all crossing the network; the steps themselves are
    20-32 % too fast (23-37 % before Blackwell took its own kernel efficiency)."""
    (pair,) = accuracy.ep_placement_pairs()
    assert (pair.inside, pair.across) == (GB.label, B2.label)
    assert pair.published_saving == pytest.approx(B2.published_seconds - GB.published_seconds)
    # -0.061 before the attention kernels took their rate at head dimension 64, -0.058 before Blackwell's GEMM rates
    # took the published best-shape ones (the GB200's slower by more than the B200's: the saving shrinks; Nov. 2026)
    assert pair.model_saving / pair.published_saving - 1 == pytest.approx(-0.079, abs=0.005)
    a2a = B2.step(operators=True).ep_comm - GB.step(operators=True).ep_comm
    assert pair.model_a2a_saving == pytest.approx(a2a, rel=1e-12)
    assert 0.8 * pair.model_saving < a2a < pair.model_saving
    assert pair.model_inside < pair.published_inside and pair.model_across < pair.published_across
