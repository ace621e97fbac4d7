"""Transformer configurations, their exact parameter counts and training FLOPs.

A decoder-only transformer is fully described, for counting purposes, by a few
integers. From them this module derives

* the exact number of parameters (weights, biases, norms, embeddings), and
* the FLOPs of one training token: the familiar ``6 N`` for the weight matrices
  plus the attention-score term ``12 l s h`` that ``6 N`` leaves out
  (Narayanan et al. 2021, eq. 3; Korthikanti et al. 2022, sec. 6).

Two styles are covered: GPT-style (learned position embeddings, biases, LayerNorm,
4h MLP with GeLU) and Llama-style (RoPE, no biases, RMSNorm, gated SwiGLU MLP,
grouped-query attention, untied output layer).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import _validate as v
from ._numeric import as_scalar

__all__ = [
    "TransformerConfig", "training_flops_per_token", "LLAMA3_8B", "LLAMA3_70B", "LLAMA3_405B", "GPT3_175B",
    "NEMOTRON4_340B", "MEGATRON_TABLE1", "MEGATRON_GPT", "MODELS", "model_arg", "model",
]


@dataclass(frozen=True)
class TransformerConfig:
    """A decoder-only transformer.

    Attributes:
        name: display name.
        num_layers: transformer blocks, ``l``.
        hidden_size: model width, ``h``.
        num_heads: query heads, ``a``.
        num_kv_heads: key/value heads (grouped-query attention); ``None`` means ``num_heads``.
        ffn_hidden_size: MLP inner width; ``None`` means ``4 h``.
        gated_mlp: SwiGLU-style MLP with three matrices (gate, up, down) instead of two.
        vocab_size: ``V`` (after any padding the implementation applies).
        seq_length: training sequence length, ``s``.
        learned_position_embeddings: a trained ``s x h`` position table (GPT) vs RoPE (Llama).
        biases: linear layers carry biases (GPT) or not (Llama).
        norm: ``"layernorm"`` (scale and bias, 2h) or ``"rmsnorm"`` (scale only, h).
        tied_embeddings: the output layer reuses the input embedding matrix.
        source: where the configuration comes from.
    """

    name: str
    num_layers: int
    hidden_size: int
    num_heads: int
    vocab_size: int
    seq_length: int
    num_kv_heads: int | None = None
    ffn_hidden_size: int | None = None
    gated_mlp: bool = False
    learned_position_embeddings: bool = False
    biases: bool = False
    norm: str = "rmsnorm"
    tied_embeddings: bool = False
    source: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise ValueError(f"name={v.show(self.name)} must be a string")
        for name in ("num_layers", "hidden_size", "num_heads", "vocab_size", "seq_length"):
            object.__setattr__(self, name, v.count(name, getattr(self, name), unit=self.name))
        for name in ("num_kv_heads", "ffn_hidden_size"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, v.count(name, getattr(self, name), unit=self.name))
        for name in ("gated_mlp", "learned_position_embeddings", "biases", "tied_embeddings"):
            object.__setattr__(self, name, v.flag(name, getattr(self, name)))
        if self.hidden_size % self.num_heads:
            raise ValueError(f"{self.name}: num_heads={self.num_heads} must divide hidden_size={self.hidden_size}")
        kv = self.kv_heads
        if kv < 1 or self.num_heads % kv:
            raise ValueError(f"{self.name}: num_kv_heads={kv} must be >= 1 and divide num_heads={self.num_heads}")
        if self.ffn_hidden_size is not None and self.ffn_hidden_size < 1:
            raise ValueError(f"{self.name}: ffn_hidden_size={self.ffn_hidden_size!r} must be a positive integer")
        if self.norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"{self.name}: norm={self.norm!r} must be 'layernorm' or 'rmsnorm'")

    # --- derived sizes ----------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def ffn_size(self) -> int:
        return 4 * self.hidden_size if self.ffn_hidden_size is None else self.ffn_hidden_size

    # --- parameters ---------------------------------------------------------------------
    def attention_params(self) -> int:
        """Weights (and biases) of one attention block: Q and O are h x h; K and V are
        h x (kv_heads * head_dim), smaller than h x h under grouped-query attention."""
        h, kv_dim = self.hidden_size, self.kv_heads * self.head_dim
        weights = 2 * h * h + 2 * h * kv_dim
        biases = (2 * h + 2 * kv_dim) if self.biases else 0
        return weights + biases

    def mlp_params(self) -> int:
        """Weights (and biases) of one MLP block: 2 (plain) or 3 (gated) h x ffn matrices."""
        h, f = self.hidden_size, self.ffn_size
        matrices = 3 if self.gated_mlp else 2
        biases = ((matrices - 1) * f + h) if self.biases else 0
        return matrices * h * f + biases

    def norm_params(self) -> int:
        """Parameters of one normalisation layer: 2h for LayerNorm, h for RMSNorm."""
        return (2 if self.norm == "layernorm" else 1) * self.hidden_size

    def layer_params(self) -> int:
        """Parameters of one transformer block: attention, MLP and two norms."""
        return self.attention_params() + self.mlp_params() + 2 * self.norm_params()

    def embedding_params(self) -> int:
        """Token embedding (V x h), position embedding (s x h) if learned, and an untied
        output layer (V x h)."""
        h = self.hidden_size
        total = self.vocab_size * h
        if self.learned_position_embeddings:
            total += self.seq_length * h
        if not self.tied_embeddings:
            total += self.vocab_size * h
        return total

    @property
    def num_params(self) -> int:
        """Exact parameter count: blocks, embeddings and the final norm.

        For GPT-style models this reproduces Narayanan et al. (2021), Table 1, whose
        closed form ``P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))`` omits only the
        final LayerNorm (2h parameters).
        """
        return self.num_layers * self.layer_params() + self.embedding_params() + self.norm_params()

    @property
    def matmul_params(self) -> int:
        """Parameters that take part in a matrix multiply per token: the weight matrices
        of every block plus the output (logit) layer. This is the ``N`` of ``6 N``:
        embedding look-ups cost no FLOPs, and biases and norms are a rounding error."""
        h, kv_dim, f = self.hidden_size, self.kv_heads * self.head_dim, self.ffn_size
        per_layer = 2 * h * h + 2 * h * kv_dim + (3 if self.gated_mlp else 2) * h * f
        return self.num_layers * per_layer + self.vocab_size * h


def training_flops_per_token(model: TransformerConfig, seq_length: int | None = None, *,
                             recompute: bool = False):
    """Training FLOPs per token (forward + backward), in FLOP.

    ``F = 6 N + 12 l s h`` where ``N`` is :attr:`TransformerConfig.matmul_params`
    (the factor 6 = 2 FLOPs per multiply-add x 3 passes: forward, and backward for
    activations and weights) and ``12 l s h`` is attention itself: ``Q K^T`` and
    ``softmax(.) V`` each cost ``2 s h`` FLOPs per token per layer in the forward pass.
    With full activation recomputation the forward pass of every block runs twice,
    giving ``8 x`` instead of ``6 x`` for the blocks (the output layer is not recomputed).

    Source: Narayanan et al. (2021), eq. 2-3 (whose ``96 B s l h^2 (1 + s/6h + V/16lh)``
    is this formula with recomputation for a GPT-style model); Korthikanti et al. (2022),
    sec. 6. Causal masking is ignored, as in both papers: the full ``s x s`` score matrix
    is counted, which is what "model FLOPs" conventionally means.

    Args:
        model: the transformer.
        seq_length: tokens per sequence, ``s`` (default: ``model.seq_length``); may be an array.
        recompute: count the extra forward pass of full activation recomputation
            (hardware FLOPs rather than model FLOPs).
    """
    model = model_arg("model", model)
    v.flag("recompute", recompute)
    s = np.asarray(v.count("seq_length", model.seq_length if seq_length is None else seq_length, scalar=False),
                   dtype=float)
    l, h = model.num_layers, model.hidden_size
    block_weights = model.matmul_params - model.vocab_size * h
    passes = 4 if recompute else 3
    flops = passes * (2 * block_weights + 4 * l * s * h) + 3 * 2 * model.vocab_size * h
    return as_scalar(flops)


# --------------------------------------------------------------------------------------
# Catalog
# --------------------------------------------------------------------------------------
_LLAMA3 = "Llama Team, The Llama 3 Herd of Models (2024), Table 3; vocabulary 128,256; sequence 8,192"


def _llama3(name: str, layers: int, hidden: int, ffn: int, heads: int) -> TransformerConfig:
    return TransformerConfig(name, num_layers=layers, hidden_size=hidden, num_heads=heads, num_kv_heads=8,
                             ffn_hidden_size=ffn, gated_mlp=True, vocab_size=128_256, seq_length=8192,
                             norm="rmsnorm", source=_LLAMA3)


def _gpt(name: str, layers: int, hidden: int, heads: int, vocab: int, seq: int, source: str) -> TransformerConfig:
    return TransformerConfig(name, num_layers=layers, hidden_size=hidden, num_heads=heads, vocab_size=vocab,
                             seq_length=seq, learned_position_embeddings=True, biases=True, norm="layernorm",
                             tied_embeddings=True, source=source)


LLAMA3_8B = _llama3("Llama 3 8B", 32, 4096, 14_336, 32)
LLAMA3_70B = _llama3("Llama 3 70B", 80, 8192, 28_672, 64)
LLAMA3_405B = _llama3("Llama 3 405B", 126, 16_384, 53_248, 128)
GPT3_175B = _gpt("GPT-3 175B", 96, 12_288, 96, 50_257, 2048,
                 "Brown et al., Language Models are Few-Shot Learners (2020), Table 2.1")

NEMOTRON4_340B = TransformerConfig(
    "Nemotron-4 340B", num_layers=96, hidden_size=18_432, num_heads=96, num_kv_heads=8, ffn_hidden_size=73_728,
    gated_mlp=False, vocab_size=256_000, seq_length=4096, norm="layernorm", tied_embeddings=False,
    source="NVIDIA, Nemotron-4 340B Technical Report (2024), Table 1: 96 layers, hidden 18,432, 96 heads, 8 KV "
           "heads, squared-ReLU MLP of 73,728 (not gated), vocabulary 256,000, sequence 4,096, no biases, untied")

_MEGATRON = "Narayanan et al. (2021), Table 1; vocabulary padded to 51,200, sequence 2,048"
# (published parameter count in billions, heads, hidden size, layers)
MEGATRON_TABLE1 = (
    (1.7, 24, 2304, 24), (3.6, 32, 3072, 30), (7.5, 32, 4096, 36), (18.4, 48, 6144, 40),
    (39.1, 64, 8192, 48), (76.1, 80, 10_240, 60), (145.6, 96, 12_288, 80), (310.1, 128, 16_384, 96),
    (529.6, 128, 20_480, 105), (1008.0, 160, 25_600, 128),
)
"""Rows of Table 1 of Narayanan et al. (2021) as published: (billions of parameters,
attention heads, hidden size, layers). The tests check :attr:`num_params` against them."""

MEGATRON_GPT = tuple(
    _gpt(f"Megatron GPT {b:g}B", layers, hidden, heads, 51_200, 2048, _MEGATRON)
    for b, heads, hidden, layers in MEGATRON_TABLE1
)

MODELS: Mapping[str, TransformerConfig] = MappingProxyType(
    {m.name: m for m in (LLAMA3_8B, LLAMA3_70B, LLAMA3_405B, GPT3_175B, NEMOTRON4_340B, *MEGATRON_GPT)}
)


def model_arg(name: str, value) -> TransformerConfig:
    """``value`` as a :class:`TransformerConfig`: one passes through, a catalog name is resolved; anything else is a
    ``ValueError`` naming the argument ``name``, what was given and what is valid."""
    return v.catalog_arg(name, value, TransformerConfig, MODELS, "model")


def model(name: str | TransformerConfig) -> TransformerConfig:
    """The catalog model called ``name`` (a :class:`TransformerConfig` passes through)."""
    return model_arg("model", name)
