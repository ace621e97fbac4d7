"""Transformer configurations, their exact parameter counts and training FLOPs.

A decoder-only transformer is fully described, for counting purposes, by a few
integers. From them this module derives

* the exact number of parameters (weights, biases, norms, embeddings), and
* the FLOPs of one training token: the familiar ``6 N`` for the weight matrices
  plus the attention-score term ``12 l s h`` that ``6 N`` leaves out
  (Narayanan et al. 2021, eq. 3; Korthikanti et al. 2022, sec. 6).

Two styles are covered: GPT-style (learned position embeddings, biases, LayerNorm,
4h MLP with GeLU) and Llama-style (RoPE, no biases, RMSNorm, gated SwiGLU MLP,
grouped-query attention, untied output layer). Either may be a **mixture of experts**
(Shazeer et al. 2017; Fedus et al. 2022): the MLP of each MoE layer is replaced by ``E``
routed experts, of which a router picks ``k`` per token, plus optional shared experts that
every token uses; the first layers may stay dense (DeepSeek-V3). A model then has a *total*
parameter count (what memory holds) and an *active* one (what a token multiplies by, hence
its FLOPs). Attention may use wider or narrower heads than ``h / a`` (Qwen3, gpt-oss) or
DeepSeek's multi-head latent attention (:class:`MLA`).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import _validate as v
from ._numeric import as_scalar

__all__ = [
    "MLA", "TransformerConfig", "training_flops_per_token", "LLAMA3_8B", "LLAMA3_70B", "LLAMA3_405B", "GPT3_175B",
    "NEMOTRON4_340B", "MEGATRON_TABLE1", "MEGATRON_GPT", "MIXTRAL_8X7B", "MIXTRAL_8X22B", "DEEPSEEK_V3",
    "QWEN3_30B_A3B", "QWEN3_235B_A22B", "GPT_OSS_120B", "MOE_MODELS", "PUBLISHED_COUNTS", "MODELS", "model_arg", "model",
]


@dataclass(frozen=True)
class MLA:
    """DeepSeek's multi-head latent attention (DeepSeek-AI 2024, DeepSeek-V2, sec. 2.1; DeepSeek-V3, sec. 2.1.1).

    Keys and values are compressed into a latent of ``kv_lora_rank`` values per token (the only thing a KV cache
    keeps), from which each head's key (``qk_nope_head_dim`` wide, plus a shared rotary part of
    ``qk_rope_head_dim``) and value (``v_head_dim``) are expanded; queries go through a latent of
    ``q_lora_rank`` (``None``: a plain ``h x a d_qk`` projection). Each latent has an RMSNorm. Counts.
    """

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None

    def __post_init__(self):
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            object.__setattr__(self, name, v.count(name, getattr(self, name)))
        if self.q_lora_rank is not None:
            object.__setattr__(self, "q_lora_rank", v.count("q_lora_rank", self.q_lora_rank))

    def params(self, hidden_size: int, num_heads: int) -> tuple[int, int]:
        """``(matrices, norms)``: the weights of one MLA block's five (four without a query latent) projections,
        and its latent norms' scales, for model width ``hidden_size`` and ``num_heads`` heads."""
        h, a = hidden_size, num_heads
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        q = h * a * qk if self.q_lora_rank is None else h * self.q_lora_rank + self.q_lora_rank * a * qk
        kv = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank * a * (
            self.qk_nope_head_dim + self.v_head_dim)
        out = a * self.v_head_dim * h
        norms = self.kv_lora_rank + (self.q_lora_rank or 0)
        return q + kv + out, norms

    def projections(self, hidden_size: int, num_heads: int) -> tuple:
        """The block's input projections in the order they run, as ``(name, out_width, in_width,
        tensor_parallel)`` per token (elements): the down-projections into the latents (the keys' shared rotary
        part rides with the key-value latent) and the up-projections out of them. Megatron-Core builds the
        down-projections as plain linears duplicated on every tensor-parallel rank and the up-projections
        column-parallel (``tensor_parallel``; Megatron-Core's ``gpt_layer_specs``: ``linear_q_down_proj`` and
        ``linear_kv_down_proj`` ``TELinear``, the up-projections ``TELayerNormColumnParallelLinear``, the latent
        norm fused in). Without a query latent the queries take one column-parallel projection."""
        h, a = hidden_size, num_heads
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.q_lora_rank is None:
            query = (("query projection", a * qk, h, True),)
        else:
            query = (("query down-projection", self.q_lora_rank, h, False),
                     ("query up-projection", a * qk, self.q_lora_rank, True))
        return query + (("key-value down-projection", self.kv_lora_rank + self.qk_rope_head_dim, h, False),
                        ("key-value up-projection", a * (self.qk_nope_head_dim + self.v_head_dim),
                         self.kv_lora_rank, True))


@dataclass(frozen=True)
class TransformerConfig:
    """A decoder-only transformer, dense or a mixture of experts.

    Attributes:
        name: display name.
        num_layers: transformer blocks, ``l``.
        hidden_size: model width, ``h``.
        num_heads: query heads, ``a``.
        num_kv_heads: key/value heads (grouped-query attention); ``None`` means ``num_heads``.
        ffn_hidden_size: MLP inner width of a dense layer; ``None`` means ``4 h``.
        gated_mlp: SwiGLU-style MLP with three matrices (gate, up, down) instead of two (experts too).
        vocab_size: ``V`` (after any padding the implementation applies).
        seq_length: training sequence length, ``s``.
        learned_position_embeddings: a trained ``s x h`` position table (GPT) vs RoPE (Llama).
        biases: linear layers carry biases (GPT, gpt-oss) or not (Llama); the router too.
        norm: ``"layernorm"`` (scale and bias, 2h) or ``"rmsnorm"`` (scale only, h).
        tied_embeddings: the output layer reuses the input embedding matrix.
        head_size: width of one attention head, ``d``; ``None`` means ``h / a`` (Qwen3 and gpt-oss use
            heads whose total width ``a d`` differs from ``h``).
        num_experts: routed experts per MoE layer, ``E`` (0: a dense model).
        experts_per_token: experts the router picks per token, ``k`` (top-k).
        expert_ffn_size: inner width of one expert's MLP; ``None`` means ``ffn_hidden_size``.
        shared_experts: experts every token goes through besides its ``k`` routed ones (DeepSeek).
        dense_layers: the first layers keep a dense MLP of ``ffn_hidden_size`` (DeepSeek-V3: 3).
        max_routed_nodes: node-limited routing: a token's experts lie on at most this many nodes (DeepSeek-V3:
            4), which bounds its cross-node all-to-all traffic when the dispatch sends one copy per node
            (``node_dedup``); ``None``: no limit.
        node_dedup: the expert dispatch sends a token across the network once per destination node, which
            forwards it to its experts there over NVLink (DeepSeek-AI 2024, sec. 3.2.2: IB, then NVLink), and over
            NVLink once per destination GPU (DeepEP's normal kernels), instead of once per expert; ``None``: only
            with node-limited routing (``max_routed_nodes`` set). Like Megatron-Core's ``TransformerConfig``, the
            model carries its token dispatcher's settings.
        fp8_dispatch: in FP8 training (``dtype="fp8"``), the dispatch and the activation gradients sent back to the
            experts travel in FP8 with one FP32 scale per 128 values, the combine and its backward in BF16
            (DeepSeek-AI 2024, sec. 3.3.3, "low-precision communication"); no effect in BF16 training.
        mla: multi-head latent attention (:class:`MLA`) instead of (grouped-query) multi-head attention.
        source: where the configuration comes from.
        parallel_block: the attention and the MLP read the same normalised input and their outputs are added to
            the residual together, ``x + attn(norm(x)) + mlp(norm(x))`` (GPT-J; PaLM, Chowdhery et al. 2022, sec. 2;
            MegaScale, Jiang et al. 2024, sec. 3.1): with tensor parallelism the two sublayers share one gather of
            their input and one reduction of their output, half the serial block's collectives. The efficiency curve
            prices only that; the operator-level compute (``step_time(..., stack=...)``) also runs one norm instead
            of two and the attention's input projection and the MLP's first GEMM as one, "the MLP and Attention
            input matrix multiplications can be fused" (PaLM, sec. 2). Its activations keep one norm's input and
            one block input instead of two of each (:func:`atscale.memory.activation_terms`); its FLOPs are the
            serial block's.
        mtp_layers: multi-token prediction depth ``D`` used in training (DeepSeek-AI 2024, DeepSeek-V3 Technical
            Report, sec. 2.2; ``D = 1`` there, sec. 4.2): each of the ``D`` modules is one more transformer block
            (an MoE block for a mixture of experts), a projection of the concatenated ``[norm(h); norm(emb)]``
            (``2h -> h``), two norms on its inputs and one more pass of the shared output head and its loss. The
            modules run on the last pipeline stage, with the output head they share (sec. 3.2: the deepest layers and
            the output head on one rank; Megatron-Core places them likewise); they are not in the parameter count
            (:attr:`num_params`: DeepSeek-V3's 671B leaves out its 14B of MTP), they are in the step time, the
            memory of the last stage and the hardware FLOPs, not in the model FLOPs (:attr:`mtp_params`).
            Megatron-Core's ``mtp_num_layers``; 0: none.
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
    head_size: int | None = None
    num_experts: int = 0
    experts_per_token: int = 0
    expert_ffn_size: int | None = None
    shared_experts: int = 0
    dense_layers: int = 0
    max_routed_nodes: int | None = None
    mla: MLA | None = None
    node_dedup: bool | None = None
    fp8_dispatch: bool = False
    source: str = ""
    parallel_block: bool = False
    mtp_layers: int = 0

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise ValueError(f"name={v.show(self.name)} must be a string")
        for name in ("num_layers", "hidden_size", "num_heads", "vocab_size", "seq_length"):
            object.__setattr__(self, name, v.count(name, getattr(self, name), unit=self.name))
        for name in ("num_kv_heads", "ffn_hidden_size", "head_size", "expert_ffn_size", "max_routed_nodes"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, v.count(name, getattr(self, name), unit=self.name))
        for name in ("num_experts", "experts_per_token", "shared_experts", "dense_layers", "mtp_layers"):
            object.__setattr__(self, name, v.count(name, getattr(self, name), low=0, unit=self.name))
        for name in ("gated_mlp", "learned_position_embeddings", "biases", "tied_embeddings", "fp8_dispatch",
                     "parallel_block"):
            object.__setattr__(self, name, v.flag(name, getattr(self, name)))
        if self.node_dedup is not None:
            object.__setattr__(self, "node_dedup", v.flag("node_dedup", self.node_dedup))
        if self.head_size is None and self.mla is None and self.hidden_size % self.num_heads:
            raise ValueError(f"{self.name}: num_heads={self.num_heads} must divide hidden_size={self.hidden_size} "
                             "(or give head_size)")
        if self.mla is not None and not isinstance(self.mla, MLA):
            raise ValueError(f"{self.name}: mla={v.show(self.mla)} must be an atscale.models.MLA or None")
        kv = self.kv_heads
        if kv < 1 or self.num_heads % kv:
            raise ValueError(f"{self.name}: num_kv_heads={kv} must be >= 1 and divide num_heads={self.num_heads}")
        if self.norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"{self.name}: norm={self.norm!r} must be 'layernorm' or 'rmsnorm'")
        self._check_experts()

    def _check_experts(self):
        E, k = self.num_experts, self.experts_per_token
        if E == 0:
            extra = {n: getattr(self, n) for n in ("experts_per_token", "shared_experts", "dense_layers")
                     if getattr(self, n)}
            extra.update({n: getattr(self, n) for n in ("expert_ffn_size", "max_routed_nodes", "node_dedup")
                          if getattr(self, n) is not None})
            if self.fp8_dispatch:
                extra["fp8_dispatch"] = True
            if extra:
                raise ValueError(f"{self.name}: {extra} describe experts, but num_experts=0 (a dense model)")
            return
        if not 1 <= k <= E:
            raise ValueError(f"{self.name}: experts_per_token={k} must be between 1 and num_experts={E}")
        if self.dense_layers >= self.num_layers:
            raise ValueError(f"{self.name}: dense_layers={self.dense_layers} must be fewer than num_layers="
                             f"{self.num_layers} (at least one MoE layer)")

    # --- derived sizes ----------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        """Key/value heads, ``g`` (``num_heads`` under MLA, whose keys are expanded per head)."""
        return self.num_heads if self.num_kv_heads is None or self.mla is not None else self.num_kv_heads

    @property
    def head_dim(self) -> int:
        """Width of one head, ``d``: ``head_size``, else ``h / a``."""
        return self.hidden_size // self.num_heads if self.head_size is None else self.head_size

    @property
    def qk_head_dim(self) -> int:
        """Width of one head's queries and keys (MLA: the non-rotary plus the rotary part)."""
        return self.head_dim if self.mla is None else self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim

    @property
    def v_head_dim(self) -> int:
        """Width of one head's values."""
        return self.head_dim if self.mla is None else self.mla.v_head_dim

    @property
    def attention_width(self) -> float:
        """``a (d_qk + d_v) / 2``: the width that makes the attention core's forward FLOPs ``4 s`` times it per
        token (``Q K^T`` costs ``2 s a d_qk``, the weighted sum of values ``2 s a d_v``); ``h`` for the usual
        ``d = h / a``."""
        return self.num_heads * (self.qk_head_dim + self.v_head_dim) / 2

    @property
    def ffn_size(self) -> int:
        """Inner width of a dense layer's MLP (``4 h`` unless given)."""
        return 4 * self.hidden_size if self.ffn_hidden_size is None else self.ffn_hidden_size

    @property
    def is_moe(self) -> bool:
        """Whether the model is a mixture of experts."""
        return self.num_experts > 0

    @property
    def dedup_dispatch(self) -> bool:
        """Whether the dispatch sends a token across the network once per destination node and over NVLink once per
        destination GPU (``node_dedup``; by default only with node-limited routing)."""
        return (self.max_routed_nodes is not None) if self.node_dedup is None else self.node_dedup

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (0 for a dense model)."""
        return self.num_layers - self.dense_layers if self.is_moe else 0

    @property
    def expert_size(self) -> int:
        """Inner width of one expert's MLP."""
        return self.ffn_size if self.expert_ffn_size is None else self.expert_ffn_size

    @property
    def active_ffn_size(self) -> float:
        """The MLP width one token goes through, averaged over the layers: ``f`` for a dense model; for a MoE
        layer ``(k + shared) f_e``. What activation memory and the elementwise kernels scale with."""
        moe = (self.experts_per_token + self.shared_experts) * self.expert_size
        return ((self.num_layers - self.moe_layers) * self.ffn_size + self.moe_layers * moe) / self.num_layers

    def attention_projections(self, tp: int = 1) -> tuple:
        """The GEMMs that make a token's queries, keys and values, as ``(name, n, k)``: ``C[tokens, n] =
        A[tokens, k] W[k, n]`` on one GPU of ``tp``-way tensor parallelism (elements). Multi-head and
        grouped-query attention: one fused QKV projection, ``n = (a d_qk + g (d_qk + d_v)) / tp`` and ``k = h``
        (column-parallel; Shoeybi et al. 2019, sec. 3). Multi-head latent attention: its down- and up-projections
        (:meth:`MLA.projections`), the down-projections whole on every rank."""
        tp = v.count("tp", tp)
        return tuple((name, n / tp if split else float(n), float(k)) for name, n, k, split in self._projections())

    def _projections(self) -> tuple:
        """:meth:`attention_projections` before the split: ``(name, n, k, tensor_parallel)``."""
        if self.mla is not None:
            return self.mla.projections(self.hidden_size, self.num_heads)
        return (("QKV projection", self.qkv_width, self.hidden_size, True),)

    @property
    def qkv_width(self) -> int:
        """Elements per token of the queries, keys and values the attention core reads, ``a d_qk + g (d_qk + d_v)``
        (under MLA, after the up-projections): the output width of one fused QKV projection."""
        return self.num_heads * self.qk_head_dim + self.kv_heads * (self.qk_head_dim + self.v_head_dim)

    @property
    def rotary_width(self) -> int:
        """Elements per token that rotary position embeddings turn: every query and key head's ``d_qk``; under
        MLA only the rotary part, ``qk_rope_head_dim`` per query head plus the keys' one shared copy (DeepSeek-V2,
        sec. 2.1.3: decoupled RoPE)."""
        if self.mla is not None:
            return (self.num_heads + 1) * self.mla.qk_rope_head_dim
        return (self.kv_heads + self.num_heads) * self.qk_head_dim

    # --- parameters ---------------------------------------------------------------------
    def _attention_matrices(self) -> int:
        h, d, g, a = self.hidden_size, self.head_dim, self.kv_heads, self.num_heads
        if self.mla is not None:
            return self.mla.params(h, a)[0]
        return 2 * h * a * d + 2 * h * g * d

    def attention_params(self) -> int:
        """Weights (and biases) of one attention block: Q (``h x a d``) and O (``a d x h``); K and V
        (``h x g d`` each), smaller than Q under grouped-query attention. MLA: :meth:`MLA.params`."""
        if self.mla is not None:
            return sum(self.mla.params(self.hidden_size, self.num_heads))
        h, d, g, a = self.hidden_size, self.head_dim, self.kv_heads, self.num_heads
        biases = (a * d + 2 * g * d + h) if self.biases else 0
        return self._attention_matrices() + biases

    def _mlp(self, f: int) -> int:
        h = self.hidden_size
        matrices = 3 if self.gated_mlp else 2
        biases = ((matrices - 1) * f + h) if self.biases else 0
        return matrices * h * f + biases

    def mlp_params(self) -> int:
        """Weights (and biases) of one dense MLP block: 2 (plain) or 3 (gated) h x ffn matrices."""
        return self._mlp(self.ffn_size)

    def expert_params(self) -> int:
        """Weights (and biases) of one expert: an MLP of width :attr:`expert_size` (0 for a dense model)."""
        return self._mlp(self.expert_size) if self.is_moe else 0

    def router_params(self) -> int:
        """The router of one MoE layer: an ``h x E`` matrix (and ``E`` biases where linear layers carry them)."""
        return (self.hidden_size + self.biases) * self.num_experts

    def norm_params(self) -> int:
        """Parameters of one normalisation layer: 2h for LayerNorm, h for RMSNorm."""
        return (2 if self.norm == "layernorm" else 1) * self.hidden_size

    def layer_params(self) -> int:
        """Parameters of one dense transformer block: attention, MLP and two norms."""
        return self.attention_params() + self.mlp_params() + 2 * self.norm_params()

    def moe_layer_params(self) -> int:
        """Parameters of one MoE block: attention, ``E`` routed and the shared experts, the router, two norms
        (0 for a dense model)."""
        if not self.is_moe:
            return 0
        experts = (self.num_experts + self.shared_experts) * self.expert_params()
        return self.attention_params() + experts + self.router_params() + 2 * self.norm_params()

    @property
    def block_params(self) -> int:
        """Parameters of all transformer blocks, dense and MoE."""
        return (self.num_layers - self.moe_layers) * self.layer_params() + self.moe_layers * self.moe_layer_params()

    @property
    def mtp_params(self) -> int:
        """Parameters of the :attr:`mtp_layers` multi-token prediction modules, not counted in :attr:`num_params`:
        per module one block (an MoE block where the model has experts), the ``2h x h`` projection and its two input
        norms plus the module's final norm (Megatron-Core's ``enorm``, ``hnorm``, ``eh_proj`` and ``layer_norm``); the
        embedding and the output head are the main model's, shared (DeepSeek-V3 Technical Report, sec. 2.2).
        DeepSeek-V3: 11.6B, 13.5B with its embedding and head counted again, the report's "14B" (sec. 1)."""
        h = self.hidden_size
        return self.mtp_layers * (self.mtp_block_params + 2 * h * h + self.biases * h + 3 * self.norm_params())

    @property
    def mtp_block_params(self) -> int:
        """Parameters of the block of one multi-token prediction module: an MoE block for a mixture of experts, else a
        dense one (:attr:`mtp_params` adds its projection and norms)."""
        return self.moe_layer_params() if self.is_moe else self.layer_params()

    @property
    def routed_expert_params(self) -> int:
        """Parameters of every routed expert of every MoE layer: what expert parallelism shards (0 if dense)."""
        return self.moe_layers * self.num_experts * self.expert_params()

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
        """Exact total parameter count: blocks, embeddings and the final norm.

        For GPT-style models this reproduces Narayanan et al. (2021), Table 1, whose
        closed form ``P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))`` omits only the
        final LayerNorm (2h parameters). For a mixture of experts, every expert counts.
        """
        return self.block_params + self.embedding_params() + self.norm_params()

    @property
    def active_params(self) -> int:
        """Parameters one token uses: the total less the ``E - k`` routed experts per MoE layer it skips
        (embeddings included; some publishers leave the input embedding out: :data:`PUBLISHED_COUNTS`)."""
        return self.num_params - self.moe_layers * (self.num_experts - self.experts_per_token) * self.expert_params()

    @property
    def matmul_params(self) -> int:
        """Parameters that take part in a matrix multiply per token: the weight matrices
        of every block a token goes through (for a MoE layer its ``k`` routed and the shared experts, and the
        router) plus the output (logit) layer. This is the ``N`` of ``6 N``:
        embedding look-ups cost no FLOPs, and biases and norms are a rounding error."""
        h, matrices = self.hidden_size, (3 if self.gated_mlp else 2)
        dense = self._attention_matrices() + matrices * h * self.ffn_size
        moe = (self._attention_matrices() + (self.experts_per_token + self.shared_experts) * matrices * h
               * self.expert_size + h * self.num_experts)
        return (self.num_layers - self.moe_layers) * dense + self.moe_layers * moe + self.vocab_size * h


def training_flops_per_token(model: TransformerConfig, seq_length: int | None = None, *,
                             recompute: bool = False):
    """Training FLOPs per token (forward + backward), in FLOP.

    ``F = 6 N + 12 l s h`` where ``N`` is :attr:`TransformerConfig.matmul_params`
    (the factor 6 = 2 FLOPs per multiply-add x 3 passes: forward, and backward for
    activations and weights) and ``12 l s h`` is attention itself: ``Q K^T`` and
    ``softmax(.) V`` each cost ``2 s h`` FLOPs per token per layer in the forward pass
    (``h`` becomes :attr:`TransformerConfig.attention_width` where heads are not ``h / a`` wide).
    For a mixture of experts ``N`` counts the *active* weights (Fedus et al. 2022, sec. 2:
    a token's FLOPs follow the experts it is routed to, not the total count).
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
    flops = passes * (2 * block_weights + 4 * l * s * model.attention_width) + 3 * 2 * model.vocab_size * h
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

# --- mixtures of experts --------------------------------------------------------------
MIXTRAL_8X7B = TransformerConfig(
    "Mixtral 8x7B", num_layers=32, hidden_size=4096, num_heads=32, num_kv_heads=8, ffn_hidden_size=14_336,
    gated_mlp=True, vocab_size=32_000, seq_length=32_768, num_experts=8, experts_per_token=2,
    source="Jiang et al., Mixtral of Experts (2024), Table 1: 32 layers, width 4,096, 32 heads of 128, 8 KV heads, "
           "expert width 14,336, 8 experts, top-2, vocabulary 32,000, context 32,768")
MIXTRAL_8X22B = TransformerConfig(
    "Mixtral 8x22B", num_layers=56, hidden_size=6144, num_heads=48, num_kv_heads=8, ffn_hidden_size=16_384,
    gated_mlp=True, vocab_size=32_000, seq_length=65_536, num_experts=8, experts_per_token=2,
    source="Mistral AI, Cheaper, Better, Faster, Stronger (2024) and the released configuration: 56 layers, width "
           "6,144, 48 heads, 8 KV heads, expert width 16,384, 8 experts, top-2, vocabulary 32,000, context 65,536")
DEEPSEEK_V3 = TransformerConfig(
    "DeepSeek-V3", num_layers=61, hidden_size=7168, num_heads=128, ffn_hidden_size=18_432, gated_mlp=True,
    vocab_size=129_280, seq_length=4096, num_experts=256, experts_per_token=8, expert_ffn_size=2048,
    shared_experts=1, dense_layers=3, max_routed_nodes=4, node_dedup=True, fp8_dispatch=True, mtp_layers=1,
    mla=MLA(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, q_lora_rank=1536),
    source="DeepSeek-AI, DeepSeek-V3 Technical Report (2024), sec. 4.2: 61 layers, width 7,168, 128 heads of 128, "
           "KV latent 512, query latent 1,536, rotary part 64; the first 3 layers dense (width 18,432 in the "
           "released configuration), then 1 shared + 256 routed experts of width 2,048, top-8, at most 4 nodes per "
           "token, sent once per destination node (sec. 3.2.2) and dispatched in FP8 (sec. 3.3.3); vocabulary 129,280 "
           "(released configuration); pre-training sequence 4,096; multi-token prediction of depth 1 in training "
           "(sec. 2.2 and 4.2; num_nextn_predict_layers 1 in the released configuration), its module (14B more, sec. 1) "
           "not part of the 671B")
def _qwen3(name: str, layers: int, hidden: int, heads: int, ffn: int, expert_ffn: int) -> TransformerConfig:
    return TransformerConfig(
        name, num_layers=layers, hidden_size=hidden, num_heads=heads, num_kv_heads=4, head_size=128,
        ffn_hidden_size=ffn, gated_mlp=True, vocab_size=151_936, seq_length=4096, num_experts=128,
        experts_per_token=8, expert_ffn_size=expert_ffn,
        source=f"Qwen Team, Qwen3 Technical Report (2025), Table 2 ({layers} layers, {heads} query / 4 KV heads, 128 "
               f"experts, 8 active) and the released configuration (width {hidden:,}, heads of 128, expert width "
               f"{expert_ffn:,}, vocabulary 151,936, untied); pre-training stage 1 sequence 4,096. Its QK-norm scales "
               "(256 per layer) are not counted")


QWEN3_30B_A3B = _qwen3("Qwen3-30B-A3B", 48, 2048, 32, 6144, 768)
QWEN3_235B_A22B = _qwen3("Qwen3-235B-A22B", 94, 4096, 64, 12_288, 1536)
GPT_OSS_120B = TransformerConfig(
    "gpt-oss-120b", num_layers=36, hidden_size=2880, num_heads=64, num_kv_heads=8, head_size=64,
    ffn_hidden_size=2880, gated_mlp=True, biases=True, vocab_size=201_088, seq_length=4096, num_experts=128,
    experts_per_token=4,
    source="OpenAI, gpt-oss-120b & gpt-oss-20b Model Card (2025), sec. 2.1 and Table 1: 36 layers, residual width "
           "2,880, 64 query heads of 64, 8 KV heads, 128 experts of width 2,880, top-4, biases in attention, experts "
           "and router, vocabulary 201,088 (o200k_harmony); its per-head attention sinks (64 per layer) are not "
           "counted; training sequence length not published (4,096 assumed)")

MOE_MODELS = (MIXTRAL_8X7B, MIXTRAL_8X22B, DEEPSEEK_V3, QWEN3_30B_A3B, QWEN3_235B_A22B, GPT_OSS_120B)
"""The published mixtures of experts of the catalog."""

PUBLISHED_COUNTS: Mapping[str, tuple] = MappingProxyType({
    # name: ((total, its significant figures), (active, its significant figures), active counts the input embedding)
    "Mixtral 8x7B": ((46.7e9, 3), (12.9e9, 3), True),
    "Mixtral 8x22B": ((141e9, 3), (39e9, 2), True),
    "DeepSeek-V3": ((671e9, 3), (37e9, 2), False),
    "Qwen3-30B-A3B": ((30.5e9, 3), (3.3e9, 2), True),
    "Qwen3-235B-A22B": ((235e9, 3), (22e9, 2), True),
    "gpt-oss-120b": ((116.83e9, 5), (5.13e9, 3), False),
})
"""Parameter counts as their authors publish them: ``((total, significant figures), (active, significant figures),
active includes the input embedding)``. Sources: Mixtral: Mistral AI's announcements (46.7B / 12.9B; 141B / 39B);
DeepSeek-V3 technical report, abstract (671B / 37B); Qwen3 technical report, Table 2 (30.5B / 3.3B; 235B / 22B); gpt-oss model
card, Table 1 (116.83B / 5.13B, "active" counting the unembedding but not the embedding)."""

MODELS: Mapping[str, TransformerConfig] = MappingProxyType(
    {m.name: m for m in (LLAMA3_8B, LLAMA3_70B, LLAMA3_405B, GPT3_175B, NEMOTRON4_340B, *MEGATRON_GPT, *MOE_MODELS)}
)


def model_arg(name: str, value) -> TransformerConfig:
    """``value`` as a :class:`TransformerConfig`: one passes through, a catalog name is resolved; anything else is a
    ``ValueError`` naming the argument ``name``, what was given and what is valid."""
    return v.catalog_arg(name, value, TransformerConfig, MODELS, "model")


def model(name: str | TransformerConfig) -> TransformerConfig:
    """The catalog model called ``name`` (a :class:`TransformerConfig` passes through)."""
    return model_arg("model", name)
