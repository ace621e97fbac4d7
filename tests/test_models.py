import numpy as np
import pytest

from atscale import models as m
from atscale import models as M


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
    with pytest.raises(ValueError, match="unknown model 'GPT-5'; give .* did you mean GPT-3 175B") as exc:
        m.model("GPT-5")
    assert len(str(exc.value)) < 300  # the closest names, not the whole catalog
    with pytest.raises(ValueError, match=r"unknown model 'x'; give .* \d+ known, e.g. Llama 3 8B"):
        m.model("x")
    with pytest.raises(ValueError, match="seq_length"):
        m.training_flops_per_token(m.LLAMA3_8B, 0)


# --- mixtures of experts ------------------------------------------------------------------
def _rounded(x, figures):
    from math import floor, log10
    return round(x, -int(floor(log10(abs(x)))) + figures - 1)


@pytest.mark.parametrize("model", M.MOE_MODELS, ids=lambda m: m.name)
def test_moe_total_counts_match_the_published_ones(model):
    (total, figures), _, _ = M.PUBLISHED_COUNTS[model.name]
    assert _rounded(model.num_params, figures) == pytest.approx(total)


@pytest.mark.parametrize("model", [m for m in M.MOE_MODELS if m.name != "Qwen3-30B-A3B"], ids=lambda m: m.name)
def test_moe_active_counts_match_the_published_ones_in_their_convention(model):
    _, (active, figures), with_embedding = M.PUBLISHED_COUNTS[model.name]
    ours = model.active_params - (0 if with_embedding else model.vocab_size * model.hidden_size)
    assert _rounded(ours, figures) == pytest.approx(active)


def test_qwen3_active_count_is_the_one_miss_and_its_size():
    # Qwen publishes 3.3B active; counting every matrix a token touches (both embeddings) gives 3.35B, without the
    # input embedding 3.04B: the published figure is the first one truncated, 1.6 % below it.
    m = M.QWEN3_30B_A3B
    assert m.active_params == 3_353_020_416
    assert m.active_params / 3.3e9 - 1 == pytest.approx(0.016, abs=0.001)


def test_exact_counts_where_the_released_weights_give_them():
    assert M.MIXTRAL_8X7B.num_params == 46_702_792_704  # the released checkpoint's count
    # gpt-oss: the model card's 116.83B, less the 36 x 64 attention sinks not modelled here
    assert M.GPT_OSS_120B.num_params + 36 * 64 == 116_829_156_672
    # Qwen3: the released checkpoint's 30,532,122,624 less the QK-norm scales (48 layers x 2 x 128)
    assert M.QWEN3_30B_A3B.num_params + 48 * 256 == 30_532_122_624


def test_moe_parameter_arithmetic_by_hand():
    m = M.MIXTRAL_8X7B
    h, f = 4096, 14_336
    attention = 2 * h * h + 2 * h * 1024
    expert = 3 * h * f
    layer = attention + 8 * expert + 8 * h + 2 * h
    assert m.moe_layer_params() == layer
    assert m.num_params == 32 * layer + 2 * 32_000 * h + h
    assert m.active_params == m.num_params - 32 * 6 * expert
    assert m.matmul_params == 32 * (attention + 2 * expert + 8 * h) + 32_000 * h
    assert m.routed_expert_params == 32 * 8 * expert
    assert m.active_ffn_size == 2 * f


def test_deepseek_mla_and_dense_layers():
    m = M.DEEPSEEK_V3
    h, a = 7168, 128
    q = h * 1536 + 1536 * a * 192
    kv = h * (512 + 64) + 512 * a * (128 + 128)
    out = a * 128 * h
    assert m.attention_params() == q + kv + out + 512 + 1536
    assert m.moe_layers == 58 and m.dense_layers == 3
    assert m.qk_head_dim == 192 and m.v_head_dim == 128 and m.kv_heads == 128
    assert m.attention_width == a * (192 + 128) / 2
    assert m.active_ffn_size == pytest.approx((3 * 18_432 + 58 * 9 * 2048) / 61)


def test_moe_flops_follow_the_active_weights():
    m = M.MIXTRAL_8X7B
    dense_twin = M.TransformerConfig("twin", 32, 4096, 32, 32_000, 32_768, num_kv_heads=8, ffn_hidden_size=2 * 14_336,
                                     gated_mlp=True)
    # A token of Mixtral does the matmuls of a dense model twice as wide, plus its router.
    extra = 6 * 32 * 4096 * 8
    assert M.training_flops_per_token(m) == pytest.approx(M.training_flops_per_token(dense_twin) + extra)


def test_dense_models_unchanged_by_the_moe_fields():
    m = M.LLAMA3_70B
    assert not m.is_moe and m.moe_layers == 0 and m.active_params == m.num_params
    assert m.attention_width == m.hidden_size and m.active_ffn_size == m.ffn_size
    assert m.block_params == m.num_layers * m.layer_params()


@pytest.mark.parametrize("kwargs, words", [
    (dict(experts_per_token=2), "num_experts=0"),
    (dict(num_experts=8, experts_per_token=0), "experts_per_token=0 must be between 1"),
    (dict(num_experts=8, experts_per_token=9), "experts_per_token=9"),
    (dict(num_experts=8, experts_per_token=2, dense_layers=4), "dense_layers=4"),
    (dict(num_experts=-1), "num_experts"),
    (dict(num_experts=8.5, experts_per_token=2), "num_experts"),
    (dict(mla="yes"), "mla="),
    (dict(head_size=0), "head_size"),
])
def test_moe_config_refuses_bad_input(kwargs, words):
    with pytest.raises(ValueError, match=words):
        M.TransformerConfig("x", 4, 64, 4, 100, 16, **kwargs)
