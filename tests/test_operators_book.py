"""The book's uses of the operator-level compute (issue 31, item 7): FP8's gain by width, the published same-layout
FP8/BF16 pairs, the figures that draw them and the plan explorer's compute-model control."""

from __future__ import annotations

import re

import numpy as np
import pytest

from atscale import kernels, models, operators, parallelism, plots, runs
from atscale.scenario import RUNNING_EXAMPLE as EX


def test_llama_shaped_reproduces_llama3_at_its_own_widths():
    for real in (models.LLAMA3_8B, models.LLAMA3_70B):
        m = operators.llama_shaped(real.hidden_size)
        assert (m.hidden_size, m.num_heads, m.kv_heads, m.ffn_size, m.vocab_size, m.gated_mlp) == (
            real.hidden_size, real.num_heads, real.kv_heads, real.ffn_size, real.vocab_size, real.gated_mlp)
    assert operators.llama_shaped(1536).kv_heads == 4  # 12 heads: the largest divisor below 8


@pytest.mark.parametrize("bad", [1000, 1023, 0, -4096, 2.5, "4096", None])
def test_llama_shaped_refuses_a_width_it_cannot_build(bad):
    with pytest.raises(ValueError, match="hidden_size"):
        operators.llama_shaped(bad)


def test_fp8_layer_speedup_is_the_ratio_of_the_two_layers():
    m = models.LLAMA3_70B
    bf16 = operators.layer_operators(m, seq_length=8192, tp=8, sequence_parallel=True)
    fp8 = operators.layer_operators(m, seq_length=8192, tp=8, sequence_parallel=True, dtype="fp8")
    assert operators.fp8_layer_speedup(m, seq_length=8192, tp=8, sequence_parallel=True) == pytest.approx(
        bf16.total / fp8.total, rel=1e-12)


def test_fp8_gain_grows_with_width_and_stays_below_the_peak_ratio():
    widths = [1024, 2048, 4096, 8192, 16384, 32768]
    gain = np.array([operators.fp8_layer_speedup(operators.llama_shaped(h)) for h in widths])
    assert np.all(np.diff(gain) > 0), gain
    ceiling = kernels.GEMM_FIT["fp8_burst"] / kernels.GEMM_FIT["bf16_burst"]  # the GEMMs' own rate ratio
    assert np.all(gain > 1.0) and np.all(gain < ceiling), (gain, ceiling)


def test_current_scaling_costs_more_than_delayed():
    m = operators.llama_shaped(4096)
    assert operators.fp8_layer_speedup(m, fp8_recipe="current") < operators.fp8_layer_speedup(m)


def test_torchao_rowwise_casts_each_operand_per_gemm():
    """torchao's rowwise recipe keeps the BF16 input and casts it again for the weight-gradient GEMM, and casts the
    output's gradient once per backward GEMM, each cast with its own amax (5 bytes per element, 2 kernels), against
    current scaling's 6 bytes and 2 kernels one cast each way. (A dense layer under this recipe takes its casts
    from the published speedup instead, :func:`test_torchao_rowwise_layers_run_at_the_published_speedup`.)"""
    (f_bytes, f_k), (g_bytes, g_k), (again_bytes, again_k) = kernels.FP8_CAST_PASSES["torchao-rowwise"]
    cur = kernels.FP8_CAST_PASSES["current"]
    assert (f_bytes, f_k) == (cur[0][0] * 5 / 6, cur[0][1])
    assert (g_bytes, g_k) == (2 * cur[1][0] * 5 / 6, 2 * cur[1][1])  # the gradient twice
    assert (again_bytes, again_k) == (f_bytes, f_k)  # the input again
    for recipe in ("delayed", "current", "blockwise", "mxfp8"):  # Transformer Engine's: one cast each way, no recast
        (f_bytes, f_k), (b_bytes, b_k), again = kernels.FP8_CAST_PASSES[recipe]
        assert (f_bytes, f_k) == (b_bytes, b_k) == (kernels.FP8_CAST_BYTES[recipe], kernels.FP8_CAST_KERNELS[recipe])
        assert again == (0.0, 0)
    assert set(kernels.FP8_CAST_PASSES) == set(kernels.FP8_RECIPES)


def test_torchao_rowwise_layers_run_at_the_published_speedup():
    """Each linear layer of a dense model under torchao's rowwise recipe: its GEMMs timed in BF16 over torchao's
    published speedup at its forward shape (casts included, so no FP8 casts are added), with the forward's rows per
    chunk where async TP splits it. On Llama 3.1 8B's shapes at TP 8 the table's speedups are below 1, and the
    layer is slower in FP8 than in BF16, as torchtitan's June 2025 benchmark publishes."""
    m = operators.llama_shaped(4096)
    kw = dict(micro_batch=2, seq_length=4096, tp=8, sequence_parallel=True)
    bf16 = {r.name: r for r in operators.layer_operators(m, dtype="bf16", **kw).rows}
    rw = {r.name: r for r in operators.layer_operators(m, dtype="fp8", fp8_recipe="torchao-rowwise", **kw).rows}
    for name, n, k in (("MLP down", 4096, 14336 / 8), ("attention output", 4096, 4096 / 8)):
        speedup = kernels.rowwise_speedup(2 * 4096, k, n)
        assert speedup < 1.0
        assert rw[name].forward == pytest.approx(bf16[name].forward / speedup, rel=1e-9)
        assert rw[name].backward == pytest.approx(bf16[name].backward / speedup, rel=1e-9)
    assert rw["FP8 casts"].forward == rw["FP8 casts"].backward == 0.0
    assert operators.fp8_layer_speedup(m, fp8_recipe="torchao-rowwise", tp=8) < 1.0 < operators.fp8_layer_speedup(
        m, fp8_recipe="current", tp=8)


def test_rowwise_speedup_reads_the_published_table():
    p = kernels.published_rowwise_speedups()
    assert p["speedup"].size == 216 and set(p["m"]) == set(p["k"]) == set(p["n"]) == {2.0**i for i in range(10, 16)}
    assert np.allclose(kernels.rowwise_speedup(p["m"], p["k"], p["n"]), p["speedup"])
    # two values as printed, and the holds at the table's edges (torchtitan issue 1207 reads M past the table so)
    assert kernels.rowwise_speedup(4096, 8192, 16384) == pytest.approx(1.07)
    assert kernels.rowwise_speedup(32768, 32768, 32768) == pytest.approx(1.52)
    assert kernels.rowwise_speedup(131072, 8192, 5632) == kernels.rowwise_speedup(32768, 8192, 5632)
    assert kernels.rowwise_speedup(512, 1024, 1024) == pytest.approx(0.42)
    # between the points, linear in log2 of each dimension: halfway between M = 8,192 and 16,384 in log2
    mid = kernels.rowwise_speedup(8192 * 2**0.5, 4096, 4096)
    assert mid == pytest.approx((1.00 + 1.02) / 2)
    with pytest.raises(ValueError, match="m"):
        kernels.rowwise_speedup(0, 4096, 4096)


def test_rowwise_runs_take_torchaos_rowwise_casts():
    rowwise = [r for r in runs.ALL_RUNS if r.details.get("float8_recipe") == "rowwise"]
    assert len(rowwise) == 4 and {r.fp8_recipe for r in rowwise} == {"torchao-rowwise"}
    tensorwise = [r for r in runs.ALL_RUNS if r.details.get("float8_recipe") == "tensorwise"]
    assert tensorwise and {r.fp8_recipe for r in tensorwise} == {"current"}


def test_fp8_layer_speedup_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="stack"):
        operators.fp8_layer_speedup(models.LLAMA3_8B, stack="deepspeed")
    with pytest.raises(ValueError, match="fp8_recipe"):
        operators.fp8_layer_speedup(models.LLAMA3_8B, fp8_recipe="rowwise")


def _twin(label):
    return re.sub(r"FP8( \w+)?$", "BF16", label)


def test_fp8_pairs_are_same_layout_twins_from_the_published_records():
    pairs = runs.fp8_pairs()
    by_label = {r.label: r for r in runs.ALL_RUNS}
    assert len({p.hidden_size for p in pairs if 2048 <= p.hidden_size <= 16384}) >= 3
    assert {p.source for p in pairs} == {"NVIDIA NeMo", "torchtitan", "llm-foundry"}
    assert not any(p.recipe == "rowwise" for p in pairs)  # flagged anomalous by their source
    for p in pairs:
        fp8 = by_label[p.label]
        assert fp8.dtype == "fp8" and p.hidden_size == fp8.model.hidden_size
        assert 0.5 < p.published < 2.0 and 0.5 < p.operators < 2.0 and 0.5 < p.curve < 2.0
    # Where both runs publish a step time, the published ratio is the ratio of the printed figures
    nv = [p for p in pairs if by_label[p.label].metric == "step_seconds"]
    assert nv
    for p in nv:
        bf16 = by_label[_twin(p.label)]
        assert p.published == pytest.approx(bf16.published / by_label[p.label].published, rel=1e-9)
    # the curve's ratio is the default model's, the operators' the stack preset's
    p = nv[0]
    fp8, bf16 = by_label[p.label], by_label[_twin(p.label)]
    assert p.curve == pytest.approx(float(bf16.step().total / fp8.step().total), rel=1e-12)
    assert p.operators == pytest.approx(float(bf16.step(operators=True).total / fp8.step(operators=True).total),
                                        rel=1e-12)


def _style_ok(fig):
    for ax in fig.axes:
        assert ax.get_xlabel() and "(" in ax.get_xlabel()
        assert ax.get_ylabel() == "" or "(" in ax.get_ylabel()


def test_book_figures_draw_and_refuse_what_they_cannot_draw():
    l8 = operators.layer_operators(models.LLAMA3_8B, stack="fsdp2-eager")
    l70 = operators.layer_operators(models.LLAMA3_70B, tp=8, sequence_parallel=True)
    _style_ok(plots.operator_breakdown_chart([l8, l70]))
    hs = [2048, 4096, 8192]
    _style_ok(plots.fp8_width_chart(hs, [operators.fp8_layer_speedup(operators.llama_shaped(h)) for h in hs],
                                    runs.fp8_pairs(), flat=1.43))
    seq = [8192, 32768]
    _style_ok(plots.attention_share_chart(seq, {"8B": [operators.layer_operators(models.LLAMA3_8B, seq_length=s)
                                                       for s in seq]}))
    with pytest.raises(ValueError, match="layers"):
        plots.operator_breakdown_chart([])
    with pytest.raises(ValueError, match="modelled"):
        plots.fp8_width_chart([2048, 4096], [1.2], [])
    with pytest.raises(ValueError, match="pairs"):
        plots.fp8_width_chart([2048], [1.2], [1.3])
    with pytest.raises(ValueError, match="sequence lengths"):
        plots.attention_share_chart([8192, 16384], {"8B": [l8]})


def test_plan_explorer_compute_model_is_step_time_with_the_stack():
    from atscale import widgets

    e = widgets.plan_explorer()
    curve = e.summary_text
    for name in operators.STACK_NAMES:
        e.update(stack=name)
        st = parallelism.step_time(EX.model, EX.cluster, EX.plan, seq_length=EX.seq_length, stack=name)
        assert e.error is None and e.summary_text.startswith(f"{st.total:.2f} s per step")
    e.update(stack="curve")
    assert e.summary_text == curve


def test_torchtitan_runs_its_query_key_and_value_projections_apart():
    """torchtitan's attention holds wq, wk and wv apart (operators.QKV_APART): three GEMMs of the same FLOPs as one
    fused QKV GEMM, each reading the whole input and paying its own kernels, so never faster; at TP 8 the key and
    value GEMMs are 128 columns wide and read the input as often as the query's. llm-foundry's MPT records, which
    borrow the eager preset, keep their one Wqkv."""
    import dataclasses

    apart = operators.stack("fsdp2-compile")
    fused = dataclasses.replace(apart, qkv_apart=False)
    assert apart.qkv_apart and operators.stack("fsdp2-eager").qkv_apart and not operators.stack("megatron-core").qkv_apart
    kw = dict(micro_batch=2, seq_length=8192, tp=8, sequence_parallel=True)
    three = {r.name: r for r in operators.layer_operators(models.LLAMA3_8B, stack=apart, **kw).rows}
    one = {r.name: r for r in operators.layer_operators(models.LLAMA3_8B, stack=fused, **kw).rows}
    names = ("query projection", "key projection", "value projection")
    assert "QKV projection" not in three and set(names) <= set(three) and not set(names) & set(one)
    assert sum(three[n].forward for n in names) > one["QKV projection"].forward
    assert sum(three[n].backward for n in names) > one["QKV projection"].backward
    assert sum(three[n].kernels_forward for n in names) == 3 * one["QKV projection"].kernels_forward
    # the rest of the layer is the same
    assert three["MLP down"] == one["MLP down"] and three["attention output"] == one["attention output"]
    # multi-head latent attention keeps its own projections whatever the stack
    mla = {r.name for r in operators.layer_operators(models.DEEPSEEK_V3, stack=apart).rows}
    assert not set(names) & mla
    mpt = [r for r in runs.ALL_RUNS if r.stack.startswith("MosaicML Composer")]
    titan = [r for r in runs.ALL_RUNS if "torchtitan" in r.stack]
    assert mpt and titan and not any(r._stack().qkv_apart for r in mpt) and all(r._stack().qkv_apart for r in titan)
    with pytest.raises(ValueError, match="qkv_apart"):
        dataclasses.replace(apart, qkv_apart="yes")


def test_rowwise_layers_are_the_shapes_the_model_reads():
    """accuracy.rowwise_layers: the seven linear layers of each of torchtitan's four rowwise runs (wq, wk and wv
    apart; w1 and w3 apart), their forward GEMM per GPU after TP 8, the rows of one chunk under async TP (eight
    chunks), and torchao's speedup there; every 8B layer is slower in FP8, every 70B MLP layer faster."""
    from atscale import accuracy

    layers = accuracy.rowwise_layers()
    assert len({x.run for x in layers}) == 4 and len(layers) == 4 * 7
    by = {(x.run, x.layer): x for x in layers}
    for x in layers:
        assert x.speedup == kernels.rowwise_speedup(x.m, x.k, x.n)
        if "async TP" in x.run:
            vanilla = by[(x.run.replace("async TP", "vanilla TP"), x.layer)]
            assert vanilla.m == 8 * x.m and (vanilla.k, vanilla.n) == (x.k, x.n)
    d8 = by[("Llama 3.1 8B, 64 H100, torchtitan FSDP 8 TP 8 vanilla TP, FP8 rowwise", "MLP down")]
    assert (d8.m, d8.k, d8.n) == (12 * 8192, 14336 / 8, 4096)
    small = [x.speedup for x in layers if x.model == "Llama 3 8B"]
    mlp_70b = [x.speedup for x in layers if x.model == "Llama 3 70B" and x.layer.startswith("MLP")]
    assert len(small) == 14 and len(mlp_70b) == 6 and max(small) < 1 < min(mlp_70b)
    with pytest.raises(ValueError, match="tp_overlap"):
        operators.linear_shapes(models.LLAMA3_8B, tp_overlap="yes")
    # a head is not split: tp must divide the 32 query and 8 key-value heads, as layer_operators requires (until
    # November 2026 linear_shapes gave tp = 3 fractional widths, 4,096 / 3 = 1,365.3)
    for tp in (3, 16):
        for fn in (operators.linear_shapes, operators.layer_operators):
            with pytest.raises(ValueError, match=f"tp={tp} must divide num_heads=32 and num_kv_heads=8"):
                fn(models.LLAMA3_8B, tp=tp)
    assert operators.linear_shapes(models.LLAMA3_8B, tp=8)[0][3] == (4096 + 2 * 1024) / 8
    with pytest.raises(ValueError, match="layers"):
        plots.rowwise_chart(())


def test_rowwise_linear_only_takes_the_tables_norm_and_sigmoid_out():
    """kernels.rowwise_speedup(..., linear_only=True): at the table's shape, G / ((O + G) / s - O) with G the BF16
    GEMMs at the kernel model's short-benchmark rate and O the norm and the sigmoid at the memory roof; further
    from 1 than the table on both sides of it. Through Calibration.rowwise_linear_only it moves the rowwise runs
    (accuracy.rowwise_sensitivity, measured November 2026): every step nearer its published one (-2 to -12 %, from
    -3 to -18 %), the FP8/BF16 ratios further (up to 6 % off, from 2.9 %)."""
    import dataclasses

    from atscale import accuracy, calibration

    m, k, n = 8192.0, 4096.0, 1024.0
    s = kernels.rowwise_speedup(m, k, n)
    g = kernels.gemm_model("H100 SXM", "bf16", sustained=False)
    gemms = (kernels.gemm_seconds(m, n, k, "H100 SXM", sustained=False) + kernels.gemm_seconds(m, k, n, "H100 SXM",
             sustained=False) + kernels.gemm_seconds(k, n, m, "H100 SXM", sustained=False))
    assert g.rate > 0
    other = kernels.ROWWISE_OTHER_BYTES * m * (k + n) / kernels.memory_bandwidth("H100 SXM")
    assert kernels.rowwise_speedup(m, k, n, linear_only=True) == pytest.approx(gemms / ((other + gemms) / s - other))
    assert kernels.rowwise_speedup(m, k, n, linear_only=True) < s < 1
    assert kernels.rowwise_speedup(32768, 8192, 32768, linear_only=True) > kernels.rowwise_speedup(32768, 8192, 32768) > 1
    with pytest.raises(ValueError, match="linear_only"):
        kernels.rowwise_speedup(m, k, n, linear_only="yes")
    with pytest.raises(ValueError, match="rowwise_linear_only"):
        dataclasses.replace(calibration.CALIBRATION, rowwise_linear_only=2)
    rs = accuracy.rowwise_sensitivity()
    assert len(rs) == 4 and all(abs(x.step_linear_only) < abs(x.step_as_read) for x in rs)
    assert sorted(x.step_linear_only for x in rs) == pytest.approx([-0.117, -0.099, -0.063, -0.017], abs=0.005)
    assert max(abs(x.linear_only / x.published - 1) for x in rs) == pytest.approx(0.060, abs=0.005)
    assert max(abs(x.as_read / x.published - 1) for x in rs) == pytest.approx(0.029, abs=0.005)
