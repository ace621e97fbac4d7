"""The nine rows of NVIDIA's report on Megatron-Core's expert stack (Yan et al. 2026, "Scalable Training of
Mixture-of-Experts Models with Megatron Core", arXiv:2603.07685: Table 11, with Table 20's layouts and appendix B.2's
settings), added to the MoE validation runs in November 2026 with each record read before comparing (issue 32:
"checked on published MoE runs not named here"): six on H100 and GB200, then the three on GB300 (one of them at
131,072 tokens) once the catalog had a GB300."""

import pytest

from atscale import accuracy, runs

REPORT = {r.label: r for r in runs.MOE_FURTHER_RUNS if r.label.endswith("Megatron-Core MoE report")}
# label start: (GPUs, TP, PP, virtual stages, EP, micro-batch, global batch, tokens/s per GPU, TFLOP/s per GPU)
TABLE = {"Qwen3-235B-A22B, 256 H100, BF16": (256, 2, 8, 4, 32, 1, 2048, 2132, 320),
         "DeepSeek-V3, 1,024 H100, FP8 blockwise": (1024, 2, 8, 4, 64, 1, 8192, 1412, 368),
         "DeepSeek-V3, 256 GB200, BF16": (256, 1, 8, 4, 32, 1, 4096, 3298, 857),
         "Qwen3-235B-A22B, 256 GB200, BF16": (256, 1, 4, 12, 32, 1, 8192, 5100, 750),
         "DeepSeek-V3, 256 GB200, MXFP8": (256, 1, 4, 4, 64, 1, 8192, 4020, 1048),
         "Qwen3-235B-A22B, 256 GB200, MXFP8": (256, 1, 4, 6, 64, 3, 3072, 6212, 919),
         "DeepSeek-V3, 256 GB300, MXFP8": (256, 1, 4, 4, 64, 1, 8192, 4730, 1233),
         "Qwen3-235B-A22B, 256 GB300, MXFP8": (256, 1, 4, 6, 64, 2, 3072, 6583, 974),
         "Qwen3-235B-A22B, 128 GB300, MXFP8, 131,072 tokens": (128, 4, 4, 12, 32, 1, 1024, 1556, 1150)}
CP = {"Qwen3-235B-A22B, 128 GB300, MXFP8, 131,072 tokens": 4}  # the other rows: CP 1


def _run(start):
    (r,) = [r for k, r in REPORT.items() if k.startswith(start)]
    return r


def test_the_records_as_the_report_prints_them():
    """Table 20's layouts (the H100 DeepSeek-V3 row's PP 8 from Table 17 and sec. 9.2.2's pipeline layout, where Table
    20 prints 4), the step from Table 11's tokens per second, the printed rate kept beside it."""
    assert len(REPORT) == len(TABLE) == 9
    for start, (gpus, tp, pp, v, ep, mb, gbs, tok, tf) in TABLE.items():
        r = _run(start)
        p = r.plan
        cp = CP.get(start, 1)
        seq = 131072 if cp > 1 else 4096
        assert r.role == "validation" and r.metric == "step_seconds" and r.seq_length == seq
        assert (r.cluster.num_gpus, p.tp, p.pp, p.virtual_stages, p.ep, p.micro_batch, p.global_batch) == (
            gpus, tp, pp, v, ep, mb, gbs)
        assert p.dp == gpus // (tp * pp * cp) and p.expert_tp == 1 and p.cp == cp and p.schedule == "interleaved"
        assert p.account_for_embedding and p.account_for_loss and p.sequence_parallel == (tp > 1)
        assert r.published_seconds == pytest.approx(gbs * seq / (tok * gpus), rel=1e-12)
        assert r.details["published_rate"] == tf * 1e12 and r.stack_preset == "megatron-core"
        assert r.model.node_dedup is True  # DeepEP on H100, HybridEP on GB200 and GB300
        assert r.cluster.accelerator.name == next(a for a in ("H100 SXM", "GB200", "GB300") if a.split()[0] in start)
    # appendix B.2: the all-to-all overlap off for DeepSeek-V3 on GB200 and for Qwen3-235B-A22B on GB300; FP8 recipes
    # as Table 11 names them
    assert [k for k, r in REPORT.items() if not r.plan.a2a_overlap] == [
        "DeepSeek-V3, 256 GB200, BF16, Megatron-Core MoE report", "DeepSeek-V3, 256 GB200, MXFP8, Megatron-Core MoE report",
        "Qwen3-235B-A22B, 256 GB300, MXFP8, Megatron-Core MoE report",
        "Qwen3-235B-A22B, 128 GB300, MXFP8, 131,072 tokens, CP 4, Megatron-Core MoE report"]
    assert {k.split(", ")[2]: r.fp8_recipe for k, r in REPORT.items() if r.dtype == "fp8"} == {
        "FP8 blockwise": "blockwise", "MXFP8": "mxfp8"}
    assert _run("DeepSeek-V3, 1,024 H100").plan.recompute_modules == ("layernorm", "act", "mla_up_proj")
    # B.2: no recomputation on GB300 (its 288 GB), and the GB300 rows on the catalog's GB300 NVL72 with 800 Gb/s NICs
    for k, r in REPORT.items():
        if "GB300" in k:
            assert r.plan.recompute == "none" and r.cluster.node.nic_bandwidth == 100e9
            assert r.cluster.fabric.name == "InfiniBand XDR" and r.cluster.node.gpus == 64


def test_the_printed_rates_against_the_librarys_count():
    """Table 11 prints model TFLOP/s per GPU beside tokens per second. The library's causal count (Megatron-LM's) over
    the published step gives Qwen3-235B-A22B's rates within 1.2 % (the 131,072-token row's, with its attention
    counted for the causal half, within 0.6 %: the record's reading of its layout and length holds) and DeepSeek-V3's
    3.6-3.9 % low. The difference is
    the multi-token-prediction module: the library counts its work (one more MoE block, a projection and a second
    pass of the output head) as hardware FLOPs, not model FLOPs, and with it added the report's DeepSeek-V3 rates come
    within 0.5 % (measured November 2026)."""
    import dataclasses

    errors = {k: r.rate_count_error for k, r in REPORT.items()}
    assert all(abs(e) < 0.012 for k, e in errors.items() if k.startswith("Qwen3"))
    assert sorted(e for k, e in errors.items() if k.startswith("DeepSeek")) == pytest.approx(
        [-0.039, -0.039, -0.039, -0.036], abs=0.002)
    for k, r in REPORT.items():
        if k.startswith("DeepSeek"):
            st = r.step()
            without = dataclasses.replace(r, model=dataclasses.replace(r.model, mtp_layers=0)).step()
            mtp = float(st.hardware_flops_per_step - without.hardware_flops_per_step)
            counted = (float(st.model_flops_per_step) * st.causal_flops_ratio + mtp) / r.published_seconds / st.gpus
            assert abs(counted / r.details["published_rate"] - 1) < 0.005


def test_errors_as_measured():
    """The operator-level model's step-time errors when the rows were added (November 2026): four within 3.3 %,
    DeepSeek-V3 in blockwise FP8 on 1,024 H100 too fast by 12 % and in BF16 on 256 GB200 too slow by 10 % (its
    all-to-all, not overlapped there, exposed in the model). The GB300 rows, added after the catalog's GB300 with its
    own published attention rates: DeepSeek-V3 +5.0 %, Qwen3-235B-A22B +7.0 % at 4,096 tokens and +22 % at 131,072
    (too slow, as the model is on the H100 rows of the same model from 32k tokens on, +8 to +16 %)."""
    got = {k: r.step_error(operators=True) for k, r in REPORT.items()}
    expected = {"Qwen3-235B-A22B, 256 H100, BF16": -0.033, "DeepSeek-V3, 1,024 H100, FP8 blockwise": -0.119,
                "DeepSeek-V3, 256 GB200, BF16": 0.099, "Qwen3-235B-A22B, 256 GB200, BF16": -0.015,
                "DeepSeek-V3, 256 GB200, MXFP8": -0.026, "Qwen3-235B-A22B, 256 GB200, MXFP8": -0.028,
                "DeepSeek-V3, 256 GB300, MXFP8": 0.050, "Qwen3-235B-A22B, 256 GB300, MXFP8": 0.070,
                "Qwen3-235B-A22B, 128 GB300, MXFP8, 131,072 tokens": 0.220}
    for start, e in expected.items():
        assert got[_run(start).label] == pytest.approx(e, abs=0.003)
    assert {e.run.label for e in accuracy.moe_errors()} >= set(REPORT)


def test_one_layout_two_published_figures():
    """The report's H100 row of Qwen3-235B-A22B is the layout of Megatron-LM's H100 recipe of the model, whose
    README prints 214.3 TFLOP/s per GPU against the report's 320: the model is 34 % too fast on the one and 3 % on
    the other, and the records keep both."""
    recipe = next(r for r in runs.MOE_FURTHER_RUNS if r.label.endswith("EP 32, Megatron-LM recipe"))
    report = _run("Qwen3-235B-A22B, 256 H100")
    assert recipe.plan == report.plan and recipe.model == report.model and recipe.cluster == report.cluster
    assert recipe.published_seconds / report.published_seconds == pytest.approx(1.476, abs=0.002)
    assert "320 TFLOP/s" in recipe.source
    assert (recipe.step_error(operators=True), report.step_error(operators=True)) == pytest.approx(
        (-0.345, -0.033), abs=0.003)


def test_the_layouts_the_memory_model_refuses_are_shown_not_excused():
    """Three GB200 layouts exceed the memory model's capacity; the report fits them with offloading and a
    permutation that keeps less (sec. 4.1, 8.1), which the model does not express. Their records switch the check off
    and the appendix prints the verdict."""
    over = {k for k, r in REPORT.items() if r.memory_verdict() != "fits"}
    assert over == {k for k, r in REPORT.items() if not r.memory_check}
    assert over == {"DeepSeek-V3, 256 GB200, BF16, Megatron-Core MoE report",
                    "DeepSeek-V3, 256 GB200, MXFP8, Megatron-Core MoE report",
                    "Qwen3-235B-A22B, 256 GB200, MXFP8, Megatron-Core MoE report"}
    for k in over:
        assert "memory_check" in REPORT[k].assumed
        c = next(c for c in accuracy.comparisons() if c.what == k)
        assert "does not fit" in c.leaves_out


def test_the_gb300_layouts_fit_with_the_check_on():
    """The report recomputes nothing on GB300 (B.2) where it recomputes on GB200 and H100: the GB300's 288 GB hold the
    three layouts without it, 216-223 GB each by the memory model, with the check on (no offloading needed)."""
    gb300 = {k: r for k, r in REPORT.items() if "GB300" in k}
    assert len(gb300) == 3
    for r in gb300.values():
        st = r.step()
        assert r.memory_check and r.memory_verdict() == "fits"
        assert 200 < float(st.memory_total) / 1e9 < 230 < r.cluster.accelerator.memory_capacity / 1e9


def test_the_memory_model_against_the_reports_breakdown():
    """Table 3 of the report prints DeepSeek-V3's per-GPU memory in BF16 (PP 4 x VPP 4 x EP 64, 256 GPUs: 199.5 GB),
    Table 4 what recomputing three modules saves and sec. 4.1.3 what FP8 saves. The memory model on the layout as the
    report's own records run it (micro-batch 1, 4,096 tokens) counts 20 % more (November 2026): activations +25 %,
    weights and gradients +18 %, the optimizer's state +3 %; every saving larger than published, the activation
    function's 2.8 times. A known miss of the model's 8 % margin, shown in the appendix."""
    from atscale import experts, parallelism

    c = experts.mcore_memory_check()
    assert c.plan.pp == 4 and c.plan.virtual_stages == 4 and c.plan.ep == 64 and c.plan.dp == 64
    assert c.plan.recompute == "none" and c.plan.micro_batch == 1 and c.plan.fp8_cache == "none"
    got = {k: m / p - 1 for k, p, m in c.components}
    assert got == pytest.approx({"weights and gradients": 0.181, "main weights and optimizer states": 0.028,
                                 "activations": 0.245, "total": 0.199}, abs=0.003)
    assert c.error == pytest.approx(got["total"]) and c.error > parallelism.MEMORY_MARGIN
    assert sum(p for _, p, _ in c.components[:3]) == pytest.approx(c.published["total"], abs=1e8)  # the table adds up
    saves = {k: m / p for k, p, m in c.recompute}
    assert saves == pytest.approx({"mla_up_proj": 1.26, "act": 2.84, "layernorm": 1.17}, abs=0.01)
    assert c.fp8[1] / c.fp8[0] == pytest.approx(1.33, abs=0.01)
    table = experts.mcore_memory_table()
    assert len(table.rows) == 10 and table.rows[3][:3] == ("total", "199.5", "239.2")
    assert c.plan.tp == 1 and c.plan.cp == 1  # the expert outputs' share is then one layer's


def test_the_other_reading_of_the_reports_table():
    """The report does not say whether Table 3 already applies memory-efficient permutation (it quotes the saving,
    26.3 GB, "for DeepSeek-V3 (Table 3)"). The memory model keeps each token's k expert outputs for the router's
    backward (the standard formulation), 31.8 GB at the peak stage, 21 % more than the published saving. Read the
    other way, the model's activations without them are within 0.3 % of the 131.0 GB published and its total +3.9 %,
    inside the 8 % margin (November 2026): which reading holds the report does not settle, and the appendix shows
    both."""
    from atscale import experts, memory, models, parallelism

    c = experts.mcore_memory_check()
    assert c.expert_outputs / 1e9 == pytest.approx(31.8, abs=0.1)
    assert c.expert_outputs / experts.MCORE_PERMUTATION_SAVING == pytest.approx(1.21, abs=0.01)
    assert c.permuted == pytest.approx((0.002, 0.039), abs=0.002) and c.permuted[1] < parallelism.MEMORY_MARGIN
    ds = models.model("DeepSeek-V3")
    per_token = memory.expert_output_bytes(ds, 1)
    assert per_token == pytest.approx(58 / 61 * 2 * 8 * 7168)  # 58 of 61 layers route: k = 8 outputs of width 7,168
    assert memory.expert_output_bytes(ds, [1, 2]).tolist() == pytest.approx([per_token, 2 * per_token])
    assert memory.expert_output_bytes("Llama 3 8B", 4096) == 0.0
    terms = memory.activation_terms(ds, 1, 4096, flash_attention=True)
    assert terms.parallel > memory.expert_output_bytes(ds, 4096)  # a part of the parallel term
    with pytest.raises(ValueError, match="tokens"):
        memory.expert_output_bytes(ds, -1)
    (row,) = [x for x in accuracy.comparisons() if x.what.startswith("DeepSeek-V3, PP 4")]
    assert row.group == "Memory" and row.kind == "estimate" and row.known_miss and "Table 3" in row.source
