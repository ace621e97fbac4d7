import numpy as np
import pytest

from atscale import hardware as hw
from atscale import models as m
from atscale import roofline as r


def test_done_when_numbers():
    assert r.ridge_point("H100 SXM", "bf16") == pytest.approx(295, rel=0.01)
    assert r.Roof(17.6e9, 15e9, "Opteron X2").ridge_point == pytest.approx(1.17, abs=0.005)  # Williams et al. 2009
    assert r.elementwise(1000, reads=2, writes=1, bytes_per_element=8).intensity == pytest.approx(1 / 24)


def test_sparse_peak_would_double_the_ridge():
    assert r.ridge_point(r.Roof(2 * hw.H100_SXM.peak("bf16"), hw.H100_SXM.hbm_bandwidth)) == pytest.approx(
        2 * r.ridge_point("H100 SXM"))


def test_attainable_flops_is_the_minimum_of_the_roofs():
    ridge = r.ridge_point("H100 SXM")
    assert r.attainable_flops("H100 SXM", ridge / 2) == pytest.approx(hw.H100_SXM.peak("bf16") / 2)
    assert r.attainable_flops("H100 SXM", 10 * ridge) == hw.H100_SXM.peak("bf16")
    x = np.geomspace(1e-2, 1e4, 1000)
    y = r.attainable_flops("H100 SXM", x)
    assert y.shape == x.shape and np.all(np.diff(y) >= 0)
    assert r.attainable_flops("H100 SXM", 1e4, measured=True) == hw.H100_SXM.measured("bf16")


def test_measured_roof_and_its_ridge():
    assert r.ridge_point("H100 SXM", measured=True) == pytest.approx(792.1e12 / 3.35e12)
    with pytest.raises(ValueError, match="no measured bf16 matmul rate is published for H200 SXM"):
        r.roof("H200 SXM", measured=True)


def test_matmul_intensity():
    op = r.matmul(4096, 4096, 4096)
    assert op.flops == 2 * 4096**3
    assert op.intensity == pytest.approx(2 * 4096 / 6)  # 2m/(3 * 2 bytes)
    sweep = r.matmul(np.array([1, 10, 100]), 8192, 8192)
    assert np.all(np.diff(sweep.intensity) > 0)
    assert r.matmul(1, 8192, 8192).intensity == pytest.approx(1, rel=1e-3)  # matrix-vector: 1 FLOP/byte in BF16


def test_elementwise_layernorm_and_adam_are_memory_bound_at_any_size():
    ridge = r.ridge_point("H100 SXM")
    for size in (1e3, 1e6, 1e12):
        assert r.layer_norm(size, 8192).intensity == pytest.approx(2.0)
        assert r.adam_update(size).intensity == pytest.approx(12 / 28)
        assert r.layer_norm(size, 8192).intensity < ridge


def test_fused_attention_raises_intensity():
    naive = r.attention_scores(1, 64, 8192, 128)
    fused = r.attention_scores(1, 64, 8192, 128, fused=True)
    assert naive.flops == fused.flops and fused.bytes < naive.bytes / 50
    assert naive.intensity < r.ridge_point("H100 SXM") < fused.intensity


def test_llama70b_layer_training_vs_decode():
    ridge = r.ridge_point("H100 SXM")
    train = r.layer_ops(m.LLAMA3_70B, 1, 8192)
    for name in ("QKV projection", "attention output", "MLP up", "MLP down"):
        assert train[name].intensity > 5 * ridge  # compute-bound even at micro-batch 1
    assert train["norms (x2)"].intensity < ridge
    decode = r.layer_ops(m.LLAMA3_70B, 1, 8192, decode=True)
    for name in ("QKV projection", "MLP up", "MLP down"):
        assert decode[name].intensity == pytest.approx(1.0, rel=1e-3)
    # Grouped-query attention: 8 query heads share each KV head, so decode attention does 8 FLOP/byte.
    assert decode["attention (KV cache)"].intensity == pytest.approx(8.0)
    # The layer's FLOPs match the model's 6N + 12lsh accounting (forward = a third).
    layer_flops = sum(op.flops for k, op in train.items() if k != "norms (x2)")
    per_token_fwd = m.training_flops_per_token(m.LLAMA3_70B) / 3
    per_layer = (per_token_fwd - 2 * m.LLAMA3_70B.vocab_size * m.LLAMA3_70B.hidden_size) / m.LLAMA3_70B.num_layers
    assert layer_flops / 8192 == pytest.approx(per_layer, rel=0.01)  # the softmax FLOPs are the rest


def test_critical_tokens():
    ridge = r.ridge_point("H100 SXM")
    k, n = 8192, 8192
    m_star = r.critical_tokens(k, n, ridge)
    assert r.matmul(m_star, n, k).intensity == pytest.approx(ridge)
    assert r.critical_tokens(100, 100, ridge) == np.inf  # tiny weights never reach the ridge
    assert r.critical_tokens(np.array([4096, 8192]), 8192, ridge).shape == (2,)


def test_time_bounds():
    op = r.matmul(8192, 8192, 8192)
    tb = r.time_bound(op, "H100 SXM")
    assert tb.bound == "compute"
    assert tb.math == pytest.approx(op.flops / 989.4e12) and tb.memory == pytest.approx(op.bytes / 3.35e12)
    assert tb.overlapped == tb.math and tb.serial == pytest.approx(tb.math + tb.memory)
    assert r.time_bound(r.adam_update(70e9), "H100 SXM").bound == "memory"
    lt = r.layer_time(r.layer_ops(m.LLAMA3_70B, 1, 8192), "H100 SXM")
    assert lt.overlapped < lt.serial and 0 < lt.memory_bound_share < 0.05
    arr = r.time_bound(r.matmul(np.array([1, 1e5]), 8192, 8192), "H100 SXM")
    assert list(arr.bound) == ["memory", "compute"]


def test_million_points_vectorised():
    x = np.geomspace(1e-2, 1e4, 10**6)
    assert r.attainable_flops("H100 SXM", x).shape == (10**6,)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: r.Roof(0, 1), "peak=0"),
        (lambda: r.ridge_point("H100 SXM", "fp4"), "dtype='fp4'"),
        (lambda: r.ridge_point("A100 SXM 80GB", "fp8"), "not supported by A100"),
        (lambda: r.attainable_flops("H100 SXM", -1), "intensity="),
        (lambda: r.matmul(0, 1, 1), "m=0"),
        (lambda: r.elementwise(10, reads=0, writes=0), "not both 0"),
        (lambda: r.layer_ops(m.LLAMA3_70B, 1, 8192, tp=3), "tp=3 must be a positive integer dividing"),
        (lambda: r.layer_ops(m.LLAMA3_70B, 0, 8192), "micro_batch=0"),
        (lambda: r.roof("TPU v5"), "unknown accelerator 'TPU v5'"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- figures and the explorer ---------------------------------------------------------------
def test_figures_draw_with_labelled_axes():
    from atscale import plots

    ops = list(r.layer_ops(m.LLAMA3_70B, 1, 8192).values()) + [r.adam_update(70e9)]
    figs = [plots.roofline_chart(ops=ops, measured=True), plots.gemm_intensity_chart(),
            plots.ridge_history_chart(), plots.peak_vs_measured_chart(), plots.operator_chart()]
    for fig in figs:
        ax = fig.axes[0]
        assert "(" in ax.get_ylabel() and ax.get_title()
    assert "FLOP/byte" in figs[0].axes[0].get_xlabel()
    legend = [t.get_text() for t in figs[0].axes[0].get_legend().get_texts()]
    assert any(t.startswith("Adam update (0.43 FLOP/B)") for t in legend)
    with pytest.raises(ValueError, match="array sizes"):
        plots.roofline_chart(ops=[r.matmul(np.array([1, 2]), 3, 4)])
    with pytest.raises(ValueError, match="kind='fft'"):
        plots.operator_chart(kind="fft")


def test_roofline_explorer_names_the_bound_and_shows_errors():
    from atscale import widgets

    e = widgets.roofline_explorer()
    assert e.error is None and "compute-bound" in e.caption.value
    e.update(kind="Adam update", size=70e9)
    assert "memory-bound" in e.caption.value and "0.429 FLOP/byte" in e.caption.value
    e.update(accelerator="A100 SXM 80GB", dtype="fp8")
    assert e.error.startswith("dtype='fp8' is not supported by A100 SXM 80GB")
    assert e.image.layout.display == "none" and e.caption.value == ""
    e.update(dtype="bf16")
    assert e.error is None and e.image.value[:4] == b"\x89PNG"
