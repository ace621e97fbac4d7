import numpy as np
import pytest

from atscale import models as m


@pytest.mark.parametrize("published, config", list(zip((row[0] for row in m.MEGATRON_TABLE1), m.MEGATRON_GPT)))
def test_megatron_table1_parameter_counts(published, config):
    # Narayanan et al. (2021), Table 1, to the 0.1B the table prints.
    assert abs(config.num_params / 1e9 - published) <= 0.1


def test_megatron_closed_form_matches_exact_count():
    # P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)) omits only the final LayerNorm (2h).
    for c in m.MEGATRON_GPT:
        l, h, V, s = c.num_layers, c.hidden_size, c.vocab_size, c.seq_length
        closed = 12 * l * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))
        assert c.num_params - closed == pytest.approx(2 * h)


@pytest.mark.parametrize(
    "config, billions",
    [(m.LLAMA3_8B, 8.03), (m.LLAMA3_70B, 70.55), (m.LLAMA3_405B, 405.85), (m.GPT3_175B, 174.60)],
)
def test_catalog_parameter_counts(config, billions):
    assert config.num_params / 1e9 == pytest.approx(billions, abs=0.01)


def test_llama3_70b_is_70_6b():
    assert round(m.LLAMA3_70B.num_params / 1e9, 1) == 70.6


def test_gqa_shrinks_kv_projections():
    mha = m.TransformerConfig("mha", 1, 8192, 64, 1000, 128, num_kv_heads=64, gated_mlp=True, ffn_hidden_size=28672)
    gqa = m.TransformerConfig("gqa", 1, 8192, 64, 1000, 128, num_kv_heads=8, gated_mlp=True, ffn_hidden_size=28672)
    assert mha.attention_params() - gqa.attention_params() == 2 * 8192 * (8192 - 8 * 128)


def test_training_flops_reproduce_narayanan_eq3():
    # With recomputation, F_iter = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) for a GPT model (eq. 3).
    for c in m.MEGATRON_GPT:
        l, h, V, s = c.num_layers, c.hidden_size, c.vocab_size, c.seq_length
        eq3_per_token = 96 * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
        assert m.training_flops_per_token(c, recompute=True) == pytest.approx(eq3_per_token, rel=1e-12)


def test_training_flops_are_6n_plus_attention():
    c = m.LLAMA3_70B
    expected = 6 * c.matmul_params + 12 * c.num_layers * c.seq_length * c.hidden_size
    assert m.training_flops_per_token(c) == pytest.approx(expected)
    # 6N alone underestimates by the attention term: about 15% at s = 8192 for 70B.
    assert m.training_flops_per_token(c) / (6 * c.matmul_params) == pytest.approx(1.154, abs=0.002)


def test_training_flops_vectorised_over_sequence_length():
    s = np.array([1024, 2048, 4096])
    f = m.training_flops_per_token(m.LLAMA3_8B, s)
    assert f.shape == (3,) and np.all(np.diff(f) > 0)
    assert f[1] - f[0] == pytest.approx(12 * 32 * 1024 * 4096)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_layers=0), "num_layers=0 must be a positive integer"),
        (dict(num_heads=7), "num_heads=7 must divide hidden_size=4096"),
        (dict(num_kv_heads=3), "num_kv_heads=3 must be >= 1 and divide num_heads=32"),
        (dict(norm="batchnorm"), "norm='batchnorm'"),
        (dict(ffn_hidden_size=0), "ffn_hidden_size=0"),
    ],
)
def test_bad_configs(kwargs, match):
    base = dict(name="x", num_layers=2, hidden_size=4096, num_heads=32, vocab_size=1000, seq_length=128)
    with pytest.raises(ValueError, match=match):
        m.TransformerConfig(**{**base, **kwargs})


def test_unknown_model_lists_catalog():
    with pytest.raises(ValueError, match="unknown model 'GPT-5'; give .* known: Llama 3 8B"):
        m.model("GPT-5")
    with pytest.raises(ValueError, match="seq_length"):
        m.training_flops_per_token(m.LLAMA3_8B, 0)
