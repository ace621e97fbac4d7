import numpy as np
import pytest

from atscale import memory as M
from atscale import models as m


def test_sixteen_bytes_per_parameter():
    assert M.optimizer("adam-mixed").total == 16
    assert M.optimizer("sgd-momentum-mixed").total == 12
    assert M.optimizer("adam-bf16").total == 8


@pytest.mark.parametrize("stage, published_gb", [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure1_example(stage, published_gb):
    # Rajbhandari et al. (2020), Fig. 1: 7.5B parameters, N_d = 64, K = 12, in decimal GB.
    per_gpu = M.model_state_bytes(7.5e9, zero_stage=stage, dp=64).total / 1e9
    assert round(per_gpu, 1) == published_gb


def test_zero_state_vectorised_and_monotone():
    dp = np.array([1, 8, 64, 1024])
    for stage in range(4):
        total = M.model_state_bytes(m.LLAMA3_70B, zero_stage=stage, dp=dp).total
        assert total.shape == (4,) and np.all(np.diff(total) <= 0)
    assert M.model_state_bytes(1e9, zero_stage=3, dp=8, tp=2, pp=2).total == pytest.approx(16e9 / 32)


def test_zero3_moves_one_and_a_half_times_dp():
    assert M.zero_communication_factor(3) / M.zero_communication_factor(0) == 1.5
    assert M.zero_communication_factor(1) == M.zero_communication_factor(2) == 2


def test_korthikanti_table2_for_gpt3():
    g = m.GPT3_175B
    s, h, a = g.seq_length, g.hidden_size, g.num_heads
    assert 5 * a * s / h == 80  # the 5as/h = 80
    sbh = s * h
    assert M.activation_bytes_per_layer(g, 1) == pytest.approx(sbh * (34 + 80))
    for t in (2, 8):
        assert M.activation_bytes_per_layer(g, 1, tp=t) == pytest.approx(sbh * (10 + 24 / t + 80 / t))
        assert M.activation_bytes_per_layer(g, 1, tp=t, sequence_parallel=True) == pytest.approx(sbh / t * (34 + 80))
        assert M.activation_bytes_per_layer(g, 1, tp=t, recompute="selective") == pytest.approx(sbh * (10 + 24 / t))
        assert M.activation_bytes_per_layer(g, 1, tp=t, sequence_parallel=True, recompute="selective") == pytest.approx(
            sbh * 34 / t)
    assert M.activation_bytes_per_layer(g, 1, recompute="full") == pytest.approx(2 * sbh)


def test_activations_are_already_bytes():
    # 34 s b h counts bytes (2-byte values, 1-byte masks); multiplying by 2 again doubles it.
    g = m.GPT3_175B
    terms = M.activation_terms(g, 1)
    assert terms.replicated + terms.parallel == pytest.approx(34 * g.seq_length * g.hidden_size)


def test_llama_generalisation():
    ll = m.LLAMA3_70B
    t = M.activation_terms(ll, 1)
    sbh = ll.seq_length * ll.hidden_size
    # No dropout: 8 sbh outside TP; Q, K, V (GQA: K and V at 1/8 width), projection input, SwiGLU's 3 x 2 s b f.
    assert t.replicated == pytest.approx(8 * sbh)
    kv = ll.kv_heads * ll.head_dim
    assert t.parallel == pytest.approx(4 * sbh + 4 * ll.seq_length * kv + 6 * ll.seq_length * ll.ffn_size)
    assert M.activation_terms(ll, 1, flash_attention=True).scores == 0
    assert np.all(np.diff(M.activation_bytes_per_layer(ll, np.array([1, 2, 4]))) > 0)


def test_pipeline_in_flight():
    assert M.in_flight_micro_batches(4) == 4 and M.in_flight_micro_batches(4, stage=3) == 1
    assert M.in_flight_micro_batches(4, virtual_stages=2) == pytest.approx(4 * (1 + 3 / 8))
    assert M.in_flight_micro_batches(8, num_micro_batches=3) == 3


def test_breakdown_fits_and_overflow():
    alone = M.breakdown(m.LLAMA3_70B, "H100 SXM")
    assert not alone.fits and alone.overflow > 1e12 and alone.headroom == 0
    assert "does not fit: over by" in alone.verdict()
    sharded = M.breakdown(m.LLAMA3_70B, "H100 SXM", tp=8, pp=4, dp=32, zero_stage=1, sequence_parallel=True,
                          recompute="selective")
    assert sharded.fits and sharded.overflow == 0 and sharded.total < 80e9
    assert "fits:" in sharded.verdict() and "<table" in sharded._repr_html_()


def test_max_micro_batch_and_min_gpus():
    kw = dict(tp=8, pp=4, dp=32, zero_stage=1, sequence_parallel=True, recompute="selective")
    b = M.max_micro_batch(m.LLAMA3_70B, "H100 SXM", **kw)
    assert b >= 1
    assert M.breakdown(m.LLAMA3_70B, "H100 SXM", micro_batch=b, **kw).fits
    assert not M.breakdown(m.LLAMA3_70B, "H100 SXM", micro_batch=b + 1, **kw).fits
    assert M.max_micro_batch(m.LLAMA3_70B, "H100 SXM") == 0  # infeasible, reported as such
    assert M.min_gpus_for_state(1e12, "H100 SXM") == 200  # 16 TB / 80 GB
    assert M.min_gpus_for_state(m.LLAMA3_70B, "H100 SXM") == 15


def test_checkpoint_size():
    assert M.checkpoint_bytes(m.LLAMA3_70B) == pytest.approx(14 * m.LLAMA3_70B.num_params)
    assert M.checkpoint_bytes(70.6e9) / 1e9 == pytest.approx(988.4, abs=0.05)  # the source tutorial's figure
    assert M.checkpoint_bytes(m.LLAMA3_70B, weights_only=True) == 2 * m.LLAMA3_70B.num_params


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: M.optimizer("lion"), "unknown optimizer 'lion'; known: adam-mixed"),
        (lambda: M.model_state_bytes(1e9, zero_stage=4), "zero_stage=4"),
        (lambda: M.model_state_bytes(1e9, dp=0), "dp=0"),
        (lambda: M.model_state_bytes(-1), "params=-1"),
        (lambda: M.activation_bytes_per_layer(m.LLAMA3_70B, 1, recompute="some"), "recompute='some'"),
        (lambda: M.activation_bytes_per_layer(m.LLAMA3_70B, 1, tp=3), "tp=3 must divide"),
        (lambda: M.activation_bytes_per_layer(m.LLAMA3_70B, 1, sequence_parallel=True), "needs tp > 1"),
        (lambda: M.activation_terms(m.LLAMA3_70B, 0), "micro_batch=0"),
        (lambda: M.in_flight_micro_batches(4, stage=4), "stage=4"),
        (lambda: M.breakdown(m.LLAMA3_70B, pp=3), "pp=3 must divide num_layers=80"),
        (lambda: M.breakdown(m.LLAMA3_70B, "H300"), "unknown accelerator"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- figures and the explorer ------------------------------------------------------------------
def test_memory_figures_and_published_comparison():
    from atscale import plots

    for fig in (plots.bytes_per_param_chart(), plots.zero_stages_chart(), plots.activation_strategies_chart(),
                plots.memory_breakdown_chart(), plots.memory_wall_chart(), plots.max_model_size_chart()):
        ax = fig.axes[0]
        assert ax.get_title() and ("(" in ax.get_ylabel() or "(" in ax.get_xlabel())
    # Model vs published (Rajbhandari et al. 2020, 32 GB V100): the state-only bound is an upper
    # bound, and the published maxima lie within 35% below it (70% and 83% of the bound).
    from atscale.plots.memory import PUBLISHED_MAX_MODEL, max_params_state_only

    for stage, published in PUBLISHED_MAX_MODEL.items():
        bound = max_params_state_only(stage)
        assert 0.65 * bound <= published <= bound
    assert max_params_state_only(0) == pytest.approx(2e9)


def test_memory_explorer_reports_fit_overflow_and_errors():
    from atscale import widgets

    e = widgets.memory_explorer()
    assert e.error is None and e.caption.value.startswith("<div>fits:")
    e.update(zero_stage=0, pp=1)
    assert "does not fit: over by" in e.caption.value and e.error is None
    e.update(model="Llama 3 405B", pp=4)
    assert e.error == "pp=4 must divide num_layers=126" and e.image.layout.display == "none"
    e.update(pp=2)
    assert e.error is None
