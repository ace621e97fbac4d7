"""A layer's operators, timed: the compute of a training step from the roofline chapter's operators.

The roofline chapter lists what one transformer layer runs (:func:`atscale.roofline.layer_ops`): four weight
GEMMs (seven under multi-head latent attention, whose queries, keys and values come from down- and
up-projections), the attention core, and a handful of memory-bound kernels. Here each of them is *timed*, for the
forward pass, the backward pass and what recomputation runs again, with its shape after tensor-, context- and
sequence-parallel sharding and micro-batching (Shoeybi et al. 2019; Korthikanti et al. 2022):

* **GEMMs** at the shape-dependent rate of :mod:`atscale.kernels` (tile and wave quantisation, a per-kernel
  fixed cost, the memory roof; BF16 or FP8). The backward pass of ``C[m, n] = A[m, k] B[k, n]`` runs two GEMMs
  of the same FLOPs at their own shapes: the input gradient ``(m, k, n)`` and the weight gradient ``(k, n, m)``.
* **The attention core** at a fused kernel's own forward and backward rates (FlashAttention-2/3, cuDNN; the
  unfused path for comparison), as a function of sequence length, head dimension and causal masking.
* **Memory-bound operators** (norms, rotary embeddings, the SwiGLU product, residual adds, FP8 casts and their
  scaling, the loss over the vocabulary with its FP32 logits) at the measured HBM bandwidth, with the bytes and
  the number of kernels that the training *stack* runs for each (:class:`Stack`: a fused kernel makes one pass;
  PyTorch's eager composite operators make several).
* **Per-kernel fixed costs**: every kernel pays a few microseconds on the GPU, and an eager stack's host has to
  issue it (:data:`atscale.kernels.HOST_SECONDS_PER_OP`): a layer takes the longer of the GPU's work and the
  host's, so small models and small micro-batches cost what they do.

What a stack fuses and overlaps is a fact of that stack, so it is a named preset (:data:`STACKS`), each entry
citing the framework's code or documentation. :func:`layer_operators` returns the table of one layer's
operators (the parallelism chapter's breakdown by operator class); the step-time model
(:func:`atscale.parallelism.step_time` with ``stack=...``) runs the same arithmetic through ``_layer`` on
plan fields that may be arrays.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import _validate as _v
from . import hardware, kernels, memory, models
from .calibration import CALIBRATION, Calibration
from ._numeric import _ArrayOps, _ScalarOps

__all__ = ["Stack", "STACKS", "STACK_NAMES", "OPERATOR_CLASSES", "MEMORY_OPS", "COMM_SM_SHARE", "ASYNC_TP_FUSION",
           "TP_OVERLAP_SPLITS", "OperatorRow", "LayerOperators", "layer_operators", "stack", "FSDP_COPY_BYTES",
           "LOSS_BYTES", "EXPERT_GEMMS", "EXPERT_STREAMS", "EXPERT_GEMM_SOURCE", "QKV_APART", "linear_shapes",
           "EXPERT_LAUNCHES", "EXPERT_CALLS", "TE_LINEAR_HOST_SECONDS", "DISPATCH_SYNC",
           "BEFORE_DISPATCH"]

OPERATOR_CLASSES = ("matmul", "attention", "memory-bound", "fixed per kernel")
"""How :func:`layer_operators` groups a layer's time (the chapter's figure of where a step's time goes)."""


@dataclass(frozen=True)
class MemoryOp:
    """One memory-bound operator as a stack runs it: forward ``kernels`` and forward bytes per element
    (``bytes_fused`` for one fused pass, ``bytes_eager`` and ``kernels_eager`` for PyTorch's composite
    operators, counted from the reference implementation named in ``source``). The backward pass reads the saved
    input and the incoming gradient and writes the outgoing one: twice the forward's bytes and kernels."""

    name: str
    region: str  # "replicated" (outside the tensor-parallel region: split only by sequence parallelism), "parallel",
    # or "routed" (an expert layer's routed copies, counted by _experts)
    kernels_fused: float
    bytes_fused: float
    kernels_eager: float
    bytes_eager: float
    source: str

    def cost(self, fused: bool) -> tuple[float, float]:
        """``(bytes per element, kernels)`` of the forward pass, fused or eager."""
        return (self.bytes_fused, self.kernels_fused) if fused else (self.bytes_eager, self.kernels_eager)


MEMORY_OPS: Mapping[str, MemoryOp] = MappingProxyType({op.name: op for op in (
    MemoryOp("norms (x2)", "replicated", 1, 4.0, 7, 36.0,
             "RMSNorm (the pre-norm of both sublayers) as one fused kernel reads and writes each BF16 element once (Transformer Engine's "
             "LayerNormLinear; Inductor's generated kernel); the eager composite of the Llama reference code "
             "(x.float(), pow, mean, rsqrt, mul, type_as, mul by the weight) makes 7 kernels moving 36 bytes"),
    MemoryOp("RoPE", "parallel", 2, 4.0, 6, 20.0,
             "one fused kernel per query and key tensor (Megatron-Core's apply_rope_fusion); the complex-number "
             "composite of the Llama and torchtitan code (float, view_as_complex, mul, view_as_real, type_as) "
             "3 kernels per tensor, 20 bytes per element"),
    MemoryOp("SwiGLU product", "parallel", 1, 6.0, 2, 10.0,
             "silu(gate) x up fused (Megatron-Core's bias_swiglu_fusion): read two, write one; eager: silu, "
             "then the product, 2 kernels, 10 bytes"),
    MemoryOp("residual adds (x2)", "replicated", 1, 6.0, 1, 6.0,
             "x + f(x): read two, write one, one kernel fused or not"),
    MemoryOp("MLP activation", "parallel", 1, 4.0, 1, 4.0,
             "GELU of an ungated MLP: read one, write one, one kernel fused or not (PyTorch's native gelu)"),
    MemoryOp("LayerNorm (x2)", "replicated", 1, 4.0, 1, 4.0,
             "LayerNorm: one kernel in eager PyTorch too (the native layer_norm kernel that torch.nn.LayerNorm "
             "calls), reads and writes each element once"),
)})
"""A pre-norm layer's memory-bound operators per element (forward), fused and eager. Elements per token:
``2h`` (two norms), ``(h_q + h_kv)/tp`` (RoPE on queries and keys), ``f/tp`` (SwiGLU), ``2h`` (two residual adds);
the replicated ones are split by ``tp`` only with sequence parallelism."""

COMM_SM_SHARE = 0.15
"""Share of a GPU's compute that an overlapped collective takes while it runs (dimensionless): NCCL runs each
collective as CUDA blocks on the SMs (one block per channel; on H100 NVLink, 16-32 channels of 132 SMs) and
streams its data through the same HBM; the computation it hides behind slows by about this share for as long as
they run together. An assumption, not a fit: 20 of 132 SMs (15 %) is what DeepSeek-V3 dedicates to its overlapped
all-to-all (DeepSeek-AI 2024, sec. 3.2.2), NCCL's ring kernels on NVLink occupy a similar share."""


@dataclass(frozen=True)
class Stack:
    """A training stack: what it fuses, which attention kernel it runs, and what it overlaps (a preset).

    ``attention``: a kernel of :data:`atscale.kernels.ATTENTION_KERNELS`. ``fused``: memory-bound operators as one
    fused kernel each (:data:`MEMORY_OPS`), else PyTorch's eager composites. ``host_seconds_per_kernel``: CPU time
    to issue one kernel (an eager framework's dispatch; a captured CUDA graph replays with none). ``gate_up_apart``:
    SwiGLU's gate and up projections as two GEMMs (torchtitan, Hugging Face) rather than one of twice the width
    (Megatron's ``linear_fc1``). ``fused_loss``: a fused cross-entropy over the vocabulary (one pass over the
    logits) rather than FP32 logits, a log-softmax and its gradient as separate kernels. ``fsdp_copies``: FSDP2's
    copy-in/copy-out of the flat all-gather and reduce-scatter buffers, memory-bound, per micro-batch.
    ``comm_sm_share``: what an overlapped collective takes from the computation it hides behind
    (:data:`COMM_SM_SHARE`). ``source``: the framework's code or documentation. ``overlap_streams``: how many of the
    chunks of a GEMM split for TP overlap run at once (:data:`OVERLAP_STREAMS` for Transformer Engine; 1, one after
    another, for PyTorch's async TP). ``tp_backward_async``: the column-parallel linear layers' backward collectives
    run beside their own matmuls even without TP overlap, as Megatron does (:data:`TP_BACKWARD_ASYNC`); False:
    PyTorch's tensor parallelism, which keeps the gathered input for the weight gradient and reduces the input
    gradient after both matmuls. ``unit_collectives``: the data-parallel all-gathers and reduce-scatters run one
    per wrapped module (each Transformer block, and the root), as FSDP issues them (Zhao et al. 2023, PyTorch FSDP,
    sec. 3.2-3.4; ``fully_shard`` per block in torchtitan, ``fsdp_wrap_fn`` per block in llm-foundry), each a ring
    through the shard group that pays NCCL's latency (:data:`UNIT_COLLECTIVES`); False: the library's bucketed
    collectives, one latency per collective of all the weights (Megatron's distributed optimizer).
    ``tp_overlap_input_grads``: with TP overlap, the backward reduce-scatter of each column-parallel input's gradient
    is overlapped too (Transformer Engine, the default); False: PyTorch's async TP, which fuses a reduce-scatter only
    with the one matmul that produced its input, so the input gradient of an input that several linear layers share
    (their gradients summed) is reduced in line (:data:`ASYNC_TP_FUSION`). ``expert_gemms``: how a GPU's local
    experts' GEMMs run (:data:`EXPERT_GEMMS`): ``"loop"`` one after another, ``"multi-stream"`` one GEMM per expert
    :data:`EXPERT_STREAMS` at a time (Transformer Engine's ``GroupedLinear``), ``"grouped"`` all in one kernel
    (``torch._grouped_mm``). ``qkv_apart``: the attention's query, key and value projections as three GEMMs
    reading the same input (torchtitan's ``wq``, ``wk``, ``wv``: :data:`QKV_APART`) rather than one of their summed
    width (Megatron's ``linear_qkv``, llm-foundry's ``Wqkv``). ``dispatch_sync``: a mixture of experts' forward pass
    waits on the host once per layer for the token counts that size its dispatch, so that the host cannot run ahead
    of the GPU across it (:data:`DISPATCH_SYNC`)."""

    name: str
    label: str
    attention: str
    fused: bool
    host_seconds_per_kernel: float
    gate_up_apart: bool
    fused_loss: bool
    fsdp_copies: bool
    comm_sm_share: float
    source: str
    overlap_streams: int = 1
    tp_backward_async: bool = False
    unit_collectives: bool = False
    tp_overlap_input_grads: bool = True
    expert_gemms: str = "loop"
    qkv_apart: bool = False
    dispatch_sync: bool = False

    def __post_init__(self):
        _v.choice("attention", self.attention, kernels.ATTENTION_KERNELS)
        _v.nonnegative("host_seconds_per_kernel", self.host_seconds_per_kernel, scalar=True)
        _v.number("comm_sm_share", self.comm_sm_share, low=0, high=1, high_open=True, scalar=True)
        _v.count("overlap_streams", self.overlap_streams, low=1, scalar=True)
        _v.flag("tp_backward_async", self.tp_backward_async)
        _v.flag("unit_collectives", self.unit_collectives)
        _v.flag("tp_overlap_input_grads", self.tp_overlap_input_grads)
        _v.choice("expert_gemms", self.expert_gemms, EXPERT_GEMMS)
        _v.flag("qkv_apart", self.qkv_apart)
        _v.flag("dispatch_sync", self.dispatch_sync)


_HOST = kernels.HOST_SECONDS_PER_OP
UNIT_COLLECTIVES = ("PyTorch FSDP (Zhao et al. 2023, sec. 3.2-3.4): one FlatParameter per wrapped module, all-gathered "
                    "before its forward (and, resharded after it, again before its backward) and its gradient "
                    "reduce-scattered after its backward, each a separate NCCL call; NCCL runs an all-gather or "
                    "reduce-scatter of large messages as a ring through every rank (the algorithm NCCL's tuner "
                    "prices for them besides NVLink SHARP and CollNet, which need switch support), whose latency "
                    "grows with the ranks (collectives.NCCL_TUNING_SOURCE)")
"""Where :attr:`Stack.unit_collectives` is read: FSDP's collectives one per wrapped module, each a ring paying
:func:`atscale.collectives.nccl_ring_latency`. The bytes are the library's (hierarchical across nodes: NCCL's
rings use every NIC of a node, so a ring through every GPU moves the same bytes per NIC); only the latency is
NCCL's, once per module and collective. NCCL's latencies are its tuner's estimates, not measurements, and ignore
a multi-tier fabric's extra latency."""
PIPELINED_FSDP = ("pytorch/torchtitan 9dec370 (December 2024), torchtitan/parallelisms/parallelize_llama.py, apply_fsdp: "
                  "with pipeline parallelism every block is wrapped with reshard_after_forward=False, 'to avoid "
                  "per-microbatch all-gathers, which can be expensive and non-overlapped'; PyTorch's pipelining, "
                  "torch/distributed/pipelining/stage.py, _PipelineStageBase.backward_maybe_with_nosync (read as "
                  "NVIDIA's Automodel copies it verbatim, 2025): every backward of an FSDP stage with set_reshard_after_backward"
                  "(False) and set_requires_gradient_sync(False), then after the last one the post-backward of "
                  "every FSDP state (the reduce-scatters) and the root's final callback, which waits for them")
"""Where an FSDP stack's collectives under pipeline parallelism are read (:func:`atscale.parallelism.step_time`):
the weights gathered once a step, the gradients reduce-scattered once, after the stage's last backward, exposed.
The PyTorch commit torchtitan's benchmark names (1963fc8, December 2024) was not read, only a 2025 copy of the
function; torchtitan's own comment at its benchmark's commit states the intent for the gathers."""

OVERLAP_STREAMS = 3
"""Compute streams on which Transformer Engine's userbuffers overlap runs the chunks of a split GEMM, round-robin
(``NVTE_COMM_OVERLAP_MAX_STREAMS``, Transformer Engine v2.8, ``comm_gemm_overlap.h``; ``CommOverlapP2PBase::
split_overlap_ag`` issues chunk ``i`` on ``_stream_compute[i % 3]``). PyTorch's async tensor parallelism runs its
chunks' matmuls on the current stream, one after another (one stream)."""
TP_BACKWARD_ASYNC = ("Megatron-LM core_r0.9.0, megatron/core/tensor_parallel/layers.py, "
                     "LinearWithGradAccumulationAndAsyncCommunication.backward; Transformer Engine v1.11, "
                     "pytorch/module/layernorm_linear.py, _LayerNormLinear.backward ('Overlap input AG with dgrad', "
                     "'Overlap dgrad-RS/AR with wgrad')")
"""Where a column-parallel linear layer's backward collectives are read (:attr:`Stack.tp_backward_async`). With
sequence parallelism the layer saved only its rank's ``1/tp`` of the input, so the backward all-gathers it again,
asynchronously, while the input-gradient GEMM runs (the weight gradient needs the whole input), then
reduce-scatters the input gradient, asynchronously, while the weight-gradient GEMM runs; without sequence
parallelism it all-reduces the input gradient beside the weight-gradient GEMM. Both need
``CUDA_DEVICE_MAX_CONNECTIONS=1`` so that the collective is queued before the GEMM, as Megatron's launch scripts
set. Megatron-LM has done so since September 2021 (the all-reduce; the sequence-parallel path since it arrived in
2022); the row-parallel layers' collectives and every forward one stay on the critical path unless TP overlap
pipelines them."""
TP_OVERLAP_SPLITS = ("Megatron-LM, megatron/core/model_parallel_config.py: tp_comm_overlap_ag and tp_comm_overlap_rs "
                     "True, tp_comm_bulk_dgrad and tp_comm_bulk_wgrad True, tp_comm_overlap_rs_dgrad False by "
                     "default; megatron/core/extensions/transformer_engine.py passes them to Transformer Engine's "
                     "column-parallel layers as ub_overlap_ag, ub_bulk_dgrad, ub_bulk_wgrad and ub_overlap_rs_dgrad, "
                     "and to its row-parallel ones as ub_overlap_rs (forward) and ub_overlap_ag (input gradient)")
"""Which GEMMs tensor-parallel overlap splits into chunks (:func:`layer_operators`, ``tp_overlap``). Every forward
GEMM and a row-parallel layer's input-gradient GEMM are pipelined with the collective they feed or drain, chunk by
chunk. A column-parallel layer's input-gradient GEMM runs whole: Transformer Engine overlaps its collectives in
bulk (the input gathered again beside it, its output reduce-scattered beside the weight-gradient GEMM) unless
``tp_comm_overlap_rs_dgrad`` is set; PyTorch's async TP leaves that reduce-scatter unfused
(:data:`ASYNC_TP_FUSION`). Weight-gradient GEMMs run whole on every stack."""
ASYNC_TP_FUSION = ("pytorch/pytorch, torch/_inductor/fx_passes/micro_pipeline_tp.py (read at 5f65158, 2025): "
                   "fuse_all_gather_matmul pipelines an all-gather with every matmul that takes the gathered tensor as "
                   "its left operand; fuse_matmul_reduce_scatter pipelines a reduce-scatter only where "
                   "_find_producer_matmul finds a matmul producing its input, and skips it otherwise; torchtitan "
                   "(models/llama3: separate wq, wk, wv and w1, w3 linear layers, each pair or triple reading one "
                   "sequence-parallel input that PrepareModuleInput gathers once)")
"""Where PyTorch's async tensor parallelism is read (:attr:`Stack.tp_overlap_input_grads` False). Forward, each
all-gather feeds the matmuls that read its output and each reduce-scatter takes one matmul's output: all are
pipelined. Backward, the gradient of a row-parallel layer's output is all-gathered into its input-gradient matmul
(pipelined); the gradient of an input that several column-parallel layers read is the sum of their input-gradient
matmuls, and the reduce-scatter of a sum has no producer matmul to fuse with, so it runs in line: one of the
backward's two collective pairs per layer (half of it with a parallel block's single input). Consistent with the
published account of the feature: "up to ~29 % forward pass speedup and ~8 % E2E speedup in Llama3 7B" (PyTorch
team, Introducing Async Tensor Parallelism in PyTorch, 2024). An eager PyTorch stack has no TP overlap at all (the
pass runs under ``torch.compile``); its preset carries the same value for a user who switches the overlap on."""
EXPERT_GEMMS = ("loop", "multi-stream", "grouped")
"""How a GPU's local experts' GEMMs run (:attr:`Stack.expert_gemms`; each expert's ``C[T_e, n] = A[T_e, k] W_e[k, n]``
for ``T_e`` routed tokens, forward, input and weight gradient):

* ``"loop"``: one GEMM per expert, one after another (a Python loop of ``torch.mm``), each quantised into waves on
  its own and paying its own fixed time;
* ``"multi-stream"``: one cuBLAS GEMM per expert, issued round-robin on :data:`EXPERT_STREAMS` compute streams, so
  that many run at once and share their waves (Transformer Engine's ``GroupedLinear``, :data:`EXPERT_GEMM_SOURCE`);
* ``"grouped"``: every local expert in one grouped-GEMM kernel whose tiles share the waves, one fixed time, plus the
  kernel that prepares its per-group arguments (``torch._grouped_mm``: the profile of the book's own measurement
  names both kernels, ``prepare_grouped_gemm_data`` and a CUTLASS sm90 grouped GEMM;
  ``atscale/data/kernels-nvidia-h100-80gb-hbm3.json``).

Tested against the book's measurement of ``torch._grouped_mm`` on an H100 (:func:`atscale.kernels.kernel_check`)."""

QKV_APART = ("pytorch/torchtitan, models/llama3/model.py (torchtitan/models/llama/model.py before 2025): Attention "
             "holds wq, wk and wv, three nn.Linear layers applied to the same input, and FeedForward w1 and w3 "
             "apart (Stack.gate_up_apart); Megatron-Core's SelfAttention one linear_qkv; llm-foundry's MPT "
             "attention one Wqkv (llmfoundry/models/layers/attention.py)")
"""Where :attr:`Stack.qkv_apart` is read for the presets: torchtitan's two presets run the three projections apart,
each a GEMM of its own width that reads the whole input (after sequence parallelism's all-gather) and pays its
own kernels; the records of other stacks that borrow those presets say otherwise (``details["qkv_apart"]``)."""

EXPERT_STREAMS = 4
"""Compute streams on which Transformer Engine runs a grouped linear layer's per-expert GEMMs, round-robin."""

EXPERT_GEMM_SOURCE = ("NVIDIA TransformerEngine, transformer_engine/common/gemm/cublaslt_gemm.cpp, "
                      "nvte_multi_stream_cublas_gemm: GEMM i on compute stream i % num_streams after an event on the "
                      "caller's stream, the caller waiting on all of them after; common/include/transformer_engine/"
                      "gemm.h: num_streams = 4; pytorch/module/grouped_linear.py reaches it through "
                      "general_grouped_gemm. pytorch/torchtitan, models/moe: GroupedExperts with use_grouped_mm, "
                      "torch._grouped_mm over the tokens sorted by expert, offsets per expert")
"""Where :data:`EXPERT_GEMMS` is read for the presets."""

DISPATCH_SYNC = ("NVIDIA Megatron-LM at b0cc270 (the commit Megatron-Bridge v0.3.0, NeMo 26.02, pins), "
                 "megatron/core/transformer/moe/token_dispatcher.py: MoEAlltoAllTokenDispatcher copies the token "
                 "counts to the host on a side stream after the routing (cuda_dtoh_point 'before_permutation_1') "
                 "and waits for the copy (d2h_event.synchronize) before the expert-parallel all-to-all, or before "
                 "returning where there is no all-to-all ('before_ep_alltoall', 'before_finish': dropless routing "
                 "needs the split sizes on the host); its DeepEP path (fused_a2a.py) returns the received counts "
                 "per expert as a Python list; moe_layer.py runs the shared experts, the router and the "
                 "dispatcher's preprocessing before the dispatch, the routed experts and the combine after it")
"""Where :attr:`Stack.dispatch_sync` is read. In the forward pass of a mixture-of-experts layer the host waits for
the GPU once, at the dispatch: everything issued before it must have run, and the GPU then idles until the host
issues what follows. A pass that would take the longer of its host and GPU times takes, with the wait, the longer of
the two before the dispatch plus the longer of the two after it (:data:`BEFORE_DISPATCH`); the backward pass,
whose split sizes are known, does not wait. The rows of a model with dense layers are averaged over the layers, and
so is the wait (a share ``moe_layers / layers`` of the layers wait)."""

BEFORE_DISPATCH = MappingProxyType({
    **dict.fromkeys(("QKV projection", "query projection", "key projection", "value projection",
                     "query down-projection", "query up-projection", "key-value down-projection",
                     "key-value up-projection", "attention core", "attention output", "RoPE", "norms (x2)",
                     "LayerNorm (x2)", "MLP gate", "MLP up", "MLP down", "router", "router scores and top-k",
                     "FP8 casts", "FSDP copies"), 1.0),
    "token permutation": 0.5, "residual adds (x2)": 0.5,
})
"""The share of each operator's forward pass that runs before the dispatch's host wait (:data:`DISPATCH_SYNC`):
the attention block, both norms, the shared experts (the dense MLP rows of a mixture of experts), the router, the
casts of the dense GEMMs and FSDP's gathered weights all before it; the permutation half before (the gather into
expert order; the sort by local expert follows the all-to-all: DeepEP's path, which permutes only after its
dispatch, is read the same way), one of the two residual sums; the routed experts, their casts, their activation
and the un-permutation after it (absent: 0)."""

STACKS: Mapping[str, Stack] = MappingProxyType({s.name: s for s in (
    Stack("megatron-core", "Megatron-Core with Transformer Engine", "cudnn", True, _HOST, False, True, False,
          COMM_SM_SHARE,
          "NVIDIA Megatron-LM (megatron/training/arguments.py: --apply-rope-fusion, --bias-swiglu-fusion, "
          "--cross-entropy-loss-fusion; Transformer Engine's LayerNormLinear fuses the norm into the next GEMM's "
          "input; DotProductAttention runs cuDNN's fused attention; GroupedLinear runs the experts' GEMMs on "
          "multiple streams, EXPERT_GEMM_SOURCE), eager PyTorch host; the dispatcher waits for the token counts "
          "(DISPATCH_SYNC)", OVERLAP_STREAMS, True, expert_gemms="multi-stream", dispatch_sync=True),
    Stack("fsdp2-eager", "PyTorch FSDP2, eager (torchtitan)", "flash2", False, _HOST, True, False, True,
          COMM_SM_SHARE,
          "pytorch/torchtitan (models/llama: nn.RMSNorm, complex-number RoPE, F.silu(w1(x)) * w3(x), "
          "F.scaled_dot_product_attention with the flash backend (FlashAttention-2), cross-entropy on FP32 "
          "logits; the experts' GEMMs grouped, EXPERT_GEMM_SOURCE); torch.distributed.fsdp.fully_shard's "
          "copy-in/copy-out buffers; wq, wk and wv apart, QKV_APART", unit_collectives=True,
          tp_overlap_input_grads=False, expert_gemms="grouped", qkv_apart=True),
    Stack("fsdp2-compile", "PyTorch FSDP2 with torch.compile (torchtitan)", "flash2", True, _HOST / 2, True, False,
          True, COMM_SM_SHARE,
          "pytorch/torchtitan with --compile: TorchInductor fuses each chain of pointwise and reduction operators "
          "into one generated kernel (PyTorch 2, Ansel et al. 2024, sec. 5); its wrapper code issues kernels with "
          "less Python per kernel (an assumption: half of eager's); async TP as PyTorch's micro-pipeline pass "
          "fuses it (ASYNC_TP_FUSION)", unit_collectives=True, tp_overlap_input_grads=False,
          expert_gemms="grouped", qkv_apart=True),
)})
"""The stack presets (:class:`Stack`), by name; ``step_time(..., stack=name)``."""

STACK_NAMES = tuple(STACKS)
"""The names of :data:`STACKS`, in order."""


def stack(name) -> Stack:
    """The :class:`Stack` of a name in :data:`STACKS` (or a :class:`Stack`, returned as is)."""
    return _stack_arg("name", name)


def _stack_arg(arg: str, value) -> Stack:
    """``value`` (a name of :data:`STACKS` or a :class:`Stack`) as a :class:`Stack`; a ``ValueError`` naming ``arg``."""
    if isinstance(value, Stack):
        return value
    return STACKS[_v.choice(arg, value, STACK_NAMES)]


# --------------------------------------------------------------------------------------
# The operators of one layer, on plan fields that are Python numbers or arrays (``xp``)
# --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def _model_shapes(model: models.TransformerConfig) -> dict:
    """The widths a layer's operators take from the model (elements per token). ``f``: the MLP width a token goes
    through (:attr:`~atscale.models.TransformerConfig.active_ffn_size`, what the memory-bound kernels scale
    with); ``f_gemm``: the width of the MLP GEMMs every token runs (a dense layer's, or a mixture of experts' shared
    experts, averaged over the layers); ``fe``: one routed expert's width."""
    l = model.num_layers
    h, f = float(model.hidden_size), float(model.active_ffn_size)
    rotary = float(model.rotary_width)  # RoPE turns the queries and the keys (MLA: their rotary part)
    norms = memory._norms(model) * h  # a parallel block's sublayers read one norm's output
    elements = {"norms (x2)": norms, "LayerNorm (x2)": norms, "RoPE": rotary, "SwiGLU product": f,
                "MLP activation": f, "residual adds (x2)": 2 * h}
    ops = ("LayerNorm (x2)" if model.norm == "layernorm" else "norms (x2)",)
    ops += () if model.learned_position_embeddings else ("RoPE",)
    ops += ("SwiGLU product" if model.gated_mlp else "MLP activation", "residual adds (x2)")
    dense = ((l - model.moe_layers) * model.ffn_size + model.moe_layers * model.shared_experts * model.expert_size) / l
    return dict(h=h, o=float(model.num_heads * model.v_head_dim), f=f, f_gemm=float(dense),
                gated=bool(model.gated_mlp), heads=float(model.num_heads),
                d=float(model.qk_head_dim + model.v_head_dim) / 2, vocab=float(model.vocab_size),
                fe=float(model.expert_size), top_k=float(model.experts_per_token),
                experts=float(max(model.num_experts, 1)), moe_share=model.moe_layers / l, memory_ops=ops,
                fp8_dispatch=bool(model.fp8_dispatch), parallel=bool(model.parallel_block) and not model.is_moe,
                elements=elements, layer_params=float(model.block_params) / l,
                projections=tuple((name, float(n), float(k), split) for name, n, k, split in model._projections()),
                qkv_apart=(float(model.num_heads * model.qk_head_dim), float(model.kv_heads * model.qk_head_dim),
                           float(model.kv_heads * model.v_head_dim)))


def _context(model: models.TransformerConfig, accelerator: hardware.Accelerator, seq_length: float, dtype: str,
             stack_: Stack, fp8_recipe: str, flash: bool, efficiency: float, fp8_factor: float = 1.0,
             rowwise_linear_only: bool = False, attention_factor: float = 1.0):
    """What the operator terms read for one model, accelerator, dtype and stack (checked by the caller):
    the GEMM and attention kernel models with their rates times ``efficiency`` (the calibrated share of a
    benchmark's rate that kernels keep in a training step, :attr:`atscale.calibration.Calibration.kernel_efficiency`);
    in FP8, the FP8 GEMMs' rate also times ``fp8_factor``
    (:attr:`atscale.calibration.Calibration.fp8_rate_factor`); ``rowwise_linear_only``: how torchao's rowwise
    speedups are read (:attr:`atscale.calibration.Calibration.rowwise_linear_only`); the fused attention kernels'
    rates also times ``attention_factor`` (:attr:`atscale.calibration.Calibration.attention_rate_factor`)."""
    gemm = kernels.gemm_model(accelerator, dtype)
    gemm16 = kernels.gemm_model(accelerator, "bf16")
    attn = kernels.attention_model(accelerator, stack_.attention if flash else "unfused")
    gemm = dataclasses.replace(gemm, rate=gemm.rate * efficiency * (fp8_factor if dtype == "fp8" else 1.0))
    gemm16 = dataclasses.replace(gemm16, rate=gemm16.rate * efficiency)
    attn = dataclasses.replace(attn, gemm=gemm16,
                               rates=tuple((r * efficiency * attention_factor, h, cap) for r, h, cap in attn.rates))
    w = _model_shapes(model)
    columns = frozenset(name for name, _, _, mode in _gemms(w, stack_, 1.0) if mode == "column")
    return types.SimpleNamespace(w=w, s=float(seq_length), stack=stack_, gemm=gemm, gemm16=gemm16, attn=attn,
                                 hbm=kernels.memory_bandwidth(accelerator), fp8=dtype == "fp8", recipe=fp8_recipe,
                                 causal=True, moe=model.is_moe, columns=columns, rowwise_linear=rowwise_linear_only)


def _tp_chunks(tp_overlap, sequence_parallel, tp, xp):
    """How many chunks tensor-parallel overlap splits a forward GEMM into (:data:`TP_OVERLAP_SPLITS`): ``tp`` where
    the overlap runs with sequence parallelism on more than one GPU, else 1."""
    return xp.where(tp_overlap & sequence_parallel & (tp > 1), tp, 1.0)


def _layer_args(model, micro_batch, seq_length, tp, cp, sequence_parallel) -> tuple:
    """``(model, seq_length, micro_batch, tp, cp, sequence_parallel)`` checked as :func:`layer_operators` and
    :func:`linear_shapes` take them: ``seq_length`` ``None`` is the model's; ``tp`` must divide the query and the
    key-value heads (Megatron's rule: a head is not split), else the widths after sharding are not whole."""
    model = models.model_arg("model", model)
    s = model.seq_length if seq_length is None else _v.count("seq_length", seq_length, scalar=True)
    b, tp, cp = (_v.count(n, x, scalar=True) for n, x in (("micro_batch", micro_batch), ("tp", tp), ("cp", cp)))
    if model.num_heads % tp or model.kv_heads % tp:
        raise ValueError(f"tp={tp} must divide num_heads={model.num_heads} and num_kv_heads={model.kv_heads}")
    return model, s, b, tp, cp, _v.flag("sequence_parallel", sequence_parallel)


def linear_shapes(model, *, micro_batch=1, seq_length=None, tp=1, cp=1, sequence_parallel: bool = False,
                  tp_overlap: bool = False, stack: str | Stack = "megatron-core") -> tuple:
    """The forward GEMM of each weight matrix of one dense layer of ``model`` on one GPU, as :func:`layer_operators`
    runs it: ``(name, m, k, n)`` for ``C[m, n] = A[m, k] W[k, n]`` (elements), ``m`` the micro-batch's tokens on
    a context-parallel rank (``micro_batch`` sequences of ``seq_length`` tokens over ``cp``; gathered by sequence
    parallelism), divided into the ``tp`` chunks that overlapped tensor parallelism (``tp_overlap``, with
    ``sequence_parallel``) runs one at a time (:data:`TP_OVERLAP_SPLITS`); ``k`` and ``n`` after tensor
    parallelism (Shoeybi et al. 2019, sec. 3); the projections as ``stack`` runs them (:attr:`Stack.qkv_apart`,
    :attr:`Stack.gate_up_apart`). A mixture of experts' routed experts are not among them."""
    model, s, b, tp, cp, sp = _layer_args(model, micro_batch, seq_length, tp, cp, sequence_parallel)
    st = _stack_arg("stack", stack)
    overlap = _v.flag("tp_overlap", tp_overlap)
    m = b * float(s) / cp / _tp_chunks(overlap, sp, tp, _ScalarOps)
    return tuple((name, m, k, n) for name, n, k, _ in _gemms(_model_shapes(model), st, float(tp)))


def _gemm3(m, n, k, g, xp, chunks=1.0, together=1.0, dgrad_chunks=None):
    """Forward, input-gradient and weight-gradient seconds of ``C[m, n] = A[m, k] B[k, n]``; ``chunks``: the forward
    GEMM runs as that many GEMMs of ``m / chunks`` rows each (tensor-parallel communication overlapped by
    decomposition: each chunk's GEMM runs while the next chunk is exchanged; Wang et al. 2023, sec. 3; Transformer
    Engine's userbuffers and PyTorch's async tensor parallelism work this way), ``together`` (at most ``chunks``) of
    them at a time (Transformer Engine issues the chunks round-robin on its compute streams, so one chunk's last wave
    shares the GPU with the next chunk's first: their waves are counted together; ``together`` 1: one after
    another); ``dgrad_chunks``: the same for the input-gradient GEMM (default ``chunks``; 1 where it runs whole,
    :data:`TP_OVERLAP_SPLITS`)."""
    d_chunks = chunks if dgrad_chunks is None else dgrad_chunks
    d_together = xp.minimum(together, d_chunks)
    return (chunks / together * kernels._gemm_seconds(m / chunks, n, k, g, xp, together),
            d_chunks / d_together * kernels._gemm_seconds(m / d_chunks, k, n, g, xp, d_together)
            + kernels._gemm_seconds(k, n, m, g, xp))


def _rowwise(times, rowwise: bool, m, k, n, linear_only: bool = False):
    """``times``, the ``(forward, backward)`` of :func:`_gemm3` timed in BF16, as torchao's rowwise-scaled FP8
    linear layer runs them (``rowwise``): both over the published speedup of the whole layer, forward and backward,
    its casts included (:func:`atscale.kernels.rowwise_speedup`, for a forward GEMM ``[m, k] x [k, n]``; ``m`` the
    rows of one chunk where the forward is split; ``linear_only``: the table's norm and sigmoid taken out);
    otherwise as given."""
    if not rowwise:
        return times
    speedup = kernels._rowwise_speedup(m, k, n, linear_only)
    return times[0] / speedup, times[1] / speedup


def _expert_gemm3(m, n, k, experts, g, xp, how: str):
    """Forward and backward (input plus weight gradient) seconds of ``experts`` GEMMs ``C[m, n] = A[m, k] W[k, n]``
    of one shape on the :class:`~atscale.kernels.GemmModel` ``g``, run as :data:`EXPERT_GEMMS` ``how`` says: ``j`` of
    them at a time, their tiles quantised into waves together, with one fixed time (:func:`atscale.kernels.
    _gemm_seconds` with ``batch = j``), ``experts / j`` such runs one after another; ``j`` is 1 (a loop),
    :data:`EXPERT_STREAMS` (at most ``experts``: several streams) or ``experts`` (one grouped kernel, which pays a
    second fixed time for its argument-preparation kernel)."""
    if how == "grouped":
        together, extra = experts, g.fixed_seconds
    elif how == "multi-stream":
        together, extra = xp.minimum(float(EXPERT_STREAMS), experts), 0.0
    else:
        together, extra = 1.0, 0.0
    runs = experts / together
    forward = runs * kernels._gemm_seconds(m, n, k, g, xp, together) + extra
    backward = runs * (kernels._gemm_seconds(m, k, n, g, xp, together) + kernels._gemm_seconds(k, n, m, g, xp, together))
    return forward, backward + 2.0 * extra


def _gemms(w, st, tp):
    """The layer's weight GEMMs as ``(name, n, k, mode)`` per GPU (``C[tokens, n] = A[tokens, k] W[k, n]``): the
    column-parallel ones (``mode`` ``"column"``) split their output ``n`` over ``tp``, the row-parallel ones
    (``"row"``) their inner ``k`` (Shoeybi et al. 2019, sec. 3); the attention's input projections as the model
    defines them (:meth:`atscale.models.TransformerConfig.attention_projections`: one QKV GEMM, or MLA's four, whose
    down-projections are whole on every rank, ``"duplicated"``), or the QKV projection as three where the stack
    runs them apart (:attr:`Stack.qkv_apart`)."""
    f = w["f_gemm"]
    up = [("MLP gate", f / tp, w["h"], "column"), ("MLP up", f / tp, w["h"], "column")] \
        if (w["gated"] and st.gate_up_apart) else [("MLP up", f * (2.0 if w["gated"] else 1.0) / tp, w["h"], "column")]
    mlp = [*up, ("MLP down", w["h"], f / tp, "row")] if f > 0 else []
    projections = w["projections"]
    if st.qkv_apart and [name for name, *_ in projections] == ["QKV projection"]:
        projections = tuple((name, n, w["h"], True) for name, n in zip(
            ("query projection", "key projection", "value projection"), w["qkv_apart"]))
    qkv = [(name, n / tp if split else n, k, "column" if split else "duplicated")
           for name, n, k, split in projections]
    return [*qkv, ("attention output", w["h"], w["o"] / tp, "row"), *mlp]


def _fused_inputs(w, gemms) -> frozenset:
    """The names of the GEMMs a parallel block (:attr:`~atscale.models.TransformerConfig.parallel_block`) runs as
    one: the column-parallel ones that read the block's one normalised input (the QKV projection and the MLP's
    first, gate and up), "the MLP and Attention input matrix multiplications can be fused" (PaLM, Chowdhery et al.
    2022, sec. 2, "Parallel Layers"); none for a serial block, a mixture of experts or multi-head latent attention
    (whose down-projections are whole on every rank)."""
    if not w["parallel"]:
        return frozenset()
    names = frozenset(name for name, _, k, mode in gemms if mode == "column" and k == w["h"])
    return names if len(names) > 1 and all(mode != "duplicated" for _, _, _, mode in gemms) else frozenset()


def _cast_elements(n, k, mode, sp_div):
    """Elements per token that one FP8 GEMM ``C[tokens, n] = A[tokens, k] W[k, n]`` (per-GPU ``n`` and ``k``,
    :func:`_gemms`) casts to FP8 on one GPU: ``(forward, backward)``, its input forward and its output's gradient
    backward (the input of the two backward GEMMs; Transformer Engine's ``Linear``: ``input_quantizer`` and
    ``grad_output_quantizer``, each one fused cast-and-transpose). Under sequence parallelism a column-parallel
    GEMM's input, and a row-parallel GEMM's output gradient, are cast on the ``tokens / tp`` rows of the rank before
    the all-gather that completes them (Transformer Engine gathers them in FP8); a duplicated GEMM (MLA's
    down-projections) runs on the rank's rows alone."""
    return (k if mode == "row" else k / sp_div), (n if mode == "column" else n / sp_div)


def _rows(L, c, xp) -> list:
    """One layer's operators on one GPU for one micro-batch: ``(name, class, forward s, backward s, forward
    kernels, backward kernels)``; a GEMM's or attention kernel's time includes its own fixed GPU time, a
    memory-bound operator's is its bytes over the bandwidth alone (:func:`_summed` charges its kernels' fixed time).

    ``c`` carries the model's widths (``c.w``), the GEMM model of the step's dtype (``c.gemm``), the attention
    kernel's model (``c.attn``), the HBM bandwidth (``c.hbm``), the stack and the FP8 recipe (:func:`_context`)."""
    w, st = c.w, c.stack
    b, s, tp, cp, sp = L.b, c.s, L.tp, L.cp, L.sp
    tokens = b * s / cp  # the micro-batch's tokens on one context-parallel rank (all of them after SP's gather)
    rows = []
    # overlapped TP: the GEMMs split in tp chunks, but a column-parallel input gradient runs whole (TP_OVERLAP_SPLITS)
    chunks = _tp_chunks(L.tp_overlap, sp, tp, xp)
    together = xp.minimum(st.overlap_streams, chunks)  # as many at once as the stack has streams for them
    sp_div = xp.where(sp, tp, 1.0)
    cast_f = cast_b = cast_n = 0.0  # FP8: elements cast forward and backward, and the number of FP8 GEMMs
    gemms = _gemms(w, st, tp)
    fused = _fused_inputs(w, gemms)
    rowwise = c.fp8 and c.recipe == "torchao-rowwise"  # BF16 GEMMs over the published speedup, casts included
    g = c.gemm16 if rowwise else c.gemm
    if fused:  # one GEMM of their summed width, its time and its kernels shared out by width
        width = sum(n for name, n, _, _ in gemms if name in fused)
        fused_f, fused_b = _rowwise(_gemm3(tokens, width, w["h"], g, xp, chunks, together, 1.0), rowwise,
                                    tokens / chunks, w["h"], width, c.rowwise_linear)
    for name, n, k, mode in gemms:  # the MLP GEMMs at f_gemm (a mixture of experts' routed ones apart)
        share = n / width if name in fused else 1.0
        f_, b_ = (fused_f * share, fused_b * share) if name in fused else _rowwise(_gemm3(
            tokens, n, k, g, xp, chunks, together, chunks if mode == "row" else 1.0), rowwise, tokens / chunks, k, n,
            c.rowwise_linear)
        rows.append((name, "matmul", f_, b_, share, 2.0 * share))
        if c.fp8 and not rowwise:  # a fused GEMM casts its one input once
            e_f, e_b = _cast_elements(n, k, mode, sp_div)
            cast_f, cast_b, cast_n = cast_f + e_f * share, cast_b + e_b, cast_n + share
    x_f = x_b = x_n = 0.0  # the routed experts' casts, a row of their own
    if c.moe:
        rows += _experts(L, c, xp)
        if c.fp8:
            x_f, x_b, x_n = _expert_cast_elements(L, c)
    heads = w["heads"] / tp
    # Context parallelism: each rank runs 1/cp of the causal work, its s/cp queries against the keys before them
    fwd = kernels._attention_seconds(b, heads, s / cp, s, w["d"], c.attn, c.causal, False, xp)
    bwd = kernels._attention_seconds(b, heads, s / cp, s, w["d"], c.attn, c.causal, True, xp)
    rows.append(("attention core", "attention", fwd, bwd, 1.0, 3.0))
    for name in w["memory_ops"]:
        op = MEMORY_OPS[name]
        e = w["elements"][name] * tokens / ((sp_div if op.region == "replicated" else 1.0) * (
            1.0 if op.region == "replicated" else tp))
        nbytes, n_k = op.cost(st.fused)
        t = e * nbytes / c.hbm
        rows.append((name, "memory-bound", t, 2 * t, n_k, 2 * n_k))
    if st.fsdp_copies:  # FSDP2 with ZeRO-3: copy-out of each gathered weight, copy-in of each gradient
        gathers = 1.0 + xp.where(L.reshard, 1.0, 0.0)
        t_w = FSDP_COPY_BYTES["weights"] * w["layer_params"] / tp / c.hbm
        t_g = FSDP_COPY_BYTES["gradients"] * w["layer_params"] / tp / c.hbm
        sharded = L.zs >= 3
        rows.append(("FSDP copies", "memory-bound", xp.where(sharded, t_w, 0.0),
                     xp.where(sharded, (gathers - 1.0) * t_w + t_g, 0.0), xp.where(sharded, 1.0, 0.0),
                     xp.where(sharded, 2.0, 0.0)))
    if c.fp8:  # every FP8 GEMM's input cast forward, its output's gradient (and, per recipe, its input) backward
        (b_in, k_in), (b_grad, k_grad), (b_again, k_again) = kernels.FP8_CAST_PASSES[c.recipe]
        per = tokens / c.hbm  # cast_f, cast_b: elements per token
        for name, e_f, e_b, n in (("FP8 casts", cast_f, cast_b, cast_n), ("FP8 casts (experts)", x_f, x_b, x_n)):
            if c.moe or name == "FP8 casts":
                rows.append((name, "memory-bound", e_f * b_in * per, (e_b * b_grad + e_f * b_again) * per,
                             n * k_in, n * (k_grad + k_again)))
    return rows


MOE_OPS: Mapping[str, MemoryOp] = MappingProxyType({op.name: op for op in (
    MemoryOp("router scores and top-k", "replicated", 1, 10.0, 4, 18.0,
             "per (token, expert) score: the router's logits read (2 bytes), its probabilities written and read by "
             "the top-k in FP32 (8); Megatron-Core's fused router (moe_router_fusion: Transformer Engine's "
             "fused_topk_with_score_function) is one kernel; the eager path (softmax or sigmoid, topk, the "
             "gather of the chosen probabilities, the load-balancing loss's sum) 4 kernels that write and read the "
             "probabilities once more (18)"),
    MemoryOp("token permutation", "routed", 2, 4.0, 4, 8.0,
             "per routed copy, element and pass: the token gathered into expert order before the dispatch, and the "
             "received tokens sorted by local expert after it (Megatron-Core's MoEAlltoAllTokenDispatcher: permute, "
             "then sort_chunks_by_idxs), each pass reading and writing the value once (2 + 2 bytes in BF16); fused: "
             "Transformer Engine's moe_permute and moe_sort_chunks_by_index, one kernel each; eager: an argsort and "
             "an index_select per pass, the values written twice"),
    MemoryOp("token un-permutation", "routed", 2, 4.0, 4, 8.0,
             "the reverse after the experts: the outputs sorted back (read and write each copy, 4 bytes) and the "
             "combine (Megatron-Core's unpermute; Transformer Engine's moe_unpermute), which reads each token's k "
             "copies (2 bytes each), weights them by their router probabilities and writes the token once (2 bytes "
             "per token, 2/k per copy: the combine's bytes per copy are 2 + 2/k, not 4); eager: index and "
             "scatter-add kernels, the values written twice"),
)})
"""A mixture-of-experts layer's memory-bound operators beyond the dense layer's (:data:`MEMORY_OPS`), forward:
bytes per score (router) or per routed copy, element and pass (permutation). The backward moves the same bytes
the other way (the combine's backward also reads the expert outputs for the probabilities' gradient), doubled as
every :class:`MemoryOp`'s backward is. Values in BF16; the dispatched copies in FP8 where the model says so
(:attr:`~atscale.models.TransformerConfig.fp8_dispatch`, in FP8 training): the permutation's forward bytes
halve."""


def _experts(L, c, xp) -> list:
    """A mixture-of-experts layer's own operators, averaged over the layers (``moe_share`` of them are MoE):

    * the **router**: a BF16 GEMM ``[tokens / tp, h] x [h, E]`` (Transformer Engine's FP8 covers the experts,
      not the router) and its scores' softmax or sigmoid and top-k (:data:`MOE_OPS`);
    * the **routed experts**: each GPU holds ``E / ep`` experts (each ``1/expert_tp`` of one) and each receives
      ``T_e = (tokens / tp) k ep expert_tp / E`` tokens, the busiest ``expert_load`` times that; one GEMM per
      expert and matrix of small ``M = T_e``, run as the stack runs them (:func:`_expert_gemm3`,
      :data:`EXPERT_GEMMS`: one after another, on several streams, or as one grouped kernel; Gale et al. 2023,
      MegaBlocks);
    * the **permutation** around the all-to-all, memory-bound: the ``k`` copies of each local token gathered into
      expert order, then on the receiving GPU sorted by local expert (the busiest GPU's copies), and the reverse
      after the experts with the weighted combine (:data:`MOE_OPS`).

    The all-to-all itself is a communication term (:func:`atscale.parallelism._ep_comm`)."""
    w, st = c.w, c.stack
    tokens = L.b * c.s / L.cp
    local_tokens = tokens / L.tp
    t_e = local_tokens * w["top_k"] * L.ep * L.etp / w["experts"] * L.load
    local = w["experts"] / L.ep
    n_up = w["fe"] * (2.0 if w["gated"] else 1.0) / L.etp
    up_f, up_b = _expert_gemm3(t_e, n_up, w["h"], local, c.gemm, xp, st.expert_gemms)
    dn_f, dn_b = _expert_gemm3(t_e, w["h"], w["fe"] / L.etp, local, c.gemm, xp, st.expert_gemms)
    share = w["moe_share"]
    r_f, r_b = _gemm3(local_tokens, w["experts"], w["h"], c.gemm16, xp)
    launches = share * _expert_launches(local, st)  # kernels per expert GEMM of the layer, averaged over the layers
    rows = [("router", "matmul", share * r_f, share * r_b, share, 2.0 * share),
            ("routed experts", "matmul", share * (up_f + dn_f), share * (up_b + dn_b), 2.0 * launches,
             4.0 * launches)]
    # copies each pass moves: the local tokens' k copies (the permutation before the dispatch, the combine after
    # the return) and the busiest GPU's received copies (the sort by local expert, and back)
    sent, received = local_tokens * w["top_k"], t_e * local / L.etp
    fp8_half = 0.5 if (c.fp8 and w["fp8_dispatch"]) else 1.0
    combine = (2.0 + 2.0 / w["top_k"]) / 4.0  # the combine's bytes per copy over a full read-and-write pass
    for name, elements, forward_scale in (("router scores and top-k", local_tokens * w["experts"], 1.0),
                                          ("token permutation", (sent + received) * w["h"], fp8_half),
                                          ("token un-permutation", (received + combine * sent) * w["h"], 1.0)):
        op = MOE_OPS[name]
        nbytes, n_k = op.cost(st.fused)
        t = share * elements * nbytes / c.hbm
        rows.append((name, "memory-bound", t * forward_scale, 2.0 * t, share * n_k, 2.0 * share * n_k))
    return rows


EXPERT_LAUNCHES = ("NVIDIA TransformerEngine v2.11 (December 2025; NeMo 26.02's generation), "
                   "transformer_engine/pytorch/module/grouped_linear.py, _GroupedLinear.forward and backward: "
                   "general_grouped_gemm issues one cuBLAS GEMM per expert (EXPERT_GEMM_SOURCE); in FP8 the input, "
                   "split by expert, and backward the output's gradient, are quantised by tex.split_quantize, which "
                   "(pytorch/csrc/extensions/cast.cpp, multi_tensor_quantize_impl) runs one fused cast-transpose "
                   "kernel for all splits when every quantiser is delayed scaling's (nvte_multi_cast_transpose) "
                   "and otherwise quantises split by split (current scaling: the amax, the scale and the cast of "
                   "each; block-wise and MXFP8 likewise, their outputs allocated in bulk). Host time: the "
                   "maintainers put GroupedLinear's in per-expert PyTorch calls (torch.split, and torch.empty twice "
                   "per GEMM: TransformerEngine issue 1499, 2025) and measured a fused grouped MLP of 64 experts "
                   "at about 1.2 ms of host time forward and 2.1 ms backward on a GB200 (issue 2897, 2026): about "
                   "19 and 33 us per expert")
"""Where :func:`_expert_launches` is read. A stack that runs its local experts' GEMMs one per expert (``"loop"``,
``"multi-stream"``) launches one GEMM kernel per expert and matrix in each pass, and in FP8, unless the recipe is
delayed scaling, one cast per expert and operand; each kernel pays the GPU's fixed time. The host pays a PyTorch
call's time (:attr:`Stack.host_seconds_per_kernel`) per kernel of a Python loop (``"loop"``), but a multi-stream
stack makes one call per matrix and launches the experts' kernels from C++, each at
:data:`atscale.kernels.HOST_SECONDS_PER_LAUNCH` (:data:`EXPERT_CALLS`). A grouped kernel launches one GEMM, and one
cast, for all its experts."""

EXPERT_CALLS = MappingProxyType({"routed experts": (2.0, 4.0), "FP8 casts (experts)": (2.0, 2.0)})
"""PyTorch calls per mixture-of-experts layer, ``(forward, backward)``, of the two operators a multi-stream stack
runs expert by expert inside one call (:data:`EXPERT_LAUNCHES`): one grouped GEMM call per expert matrix forward
and two backward (input and weight gradient); one split quantisation per matrix's input forward and per matrix's
output gradient backward. The rest of their kernels the host launches from C++."""


TE_LINEAR_HOST_SECONDS = 115e-6
"""Host time of one forward pass of Megatron-Core's column-parallel linear layer on Transformer Engine
(``TEColumnParallelLinear``), s: about 115 us in BF16 with TP 1 after, 140 us before, the changes of Transformer
Engine's pull request 1191 (Tim Moon, September 2024), against 74 us for Megatron-Core's own ``ColumnParallelLinear``.
A published measurement the step time does not use: it charges such a layer one kernel's host time
(:attr:`Stack.host_seconds_per_kernel`); the accuracy appendix sets the two side by side."""


def _expert_launches(local, st, recipe=None):
    """Kernels per expert GEMM a layer launches in one pass (``recipe`` ``None``), or per expert cast (``recipe``
    the FP8 recipe): ``local`` (the GPU's local experts) for a stack that runs them one per expert, 1 for a
    grouped kernel or delayed scaling's fused multi-tensor cast (:data:`EXPERT_LAUNCHES`)."""
    return 1.0 if (st.expert_gemms == "grouped" or recipe == "delayed") else local


def _expert_cast_elements(L, c):
    """``(forward, backward, GEMMs)`` of the routed experts' FP8 casts on the busiest GPU: elements per token of the
    micro-batch, and GEMMs per layer, averaged over the layers as :func:`_experts` averages their GEMMs. Each local
    expert's up-projection casts its ``T_e`` received copies (none when the dispatch already sent them in FP8,
    :attr:`~atscale.models.TransformerConfig.fp8_dispatch`) and its down-projection its input; backward, the
    gradients of both outputs (:func:`_cast_elements` for one GEMM). A grouped GEMM casts each matrix of all its
    experts in one kernel: two GEMMs a layer; a stack that runs one GEMM per expert casts each expert's operands
    apart unless the recipe is delayed scaling (:data:`EXPERT_LAUNCHES`): two per local expert."""
    w = c.w
    t_e = w["top_k"] * L.ep * L.etp / (w["experts"] * L.tp) * L.load  # copies per expert, per token of the batch
    local = w["experts"] / L.ep * w["moe_share"]
    n_up, fe = w["fe"] * (2.0 if w["gated"] else 1.0) / L.etp, w["fe"] / L.etp
    up_in = 0.0 if w["fp8_dispatch"] else t_e * w["h"]
    return (local * (up_in + t_e * fe), local * t_e * (n_up + w["h"]),
            2.0 * w["moe_share"] * _expert_launches(w["experts"] / L.ep, c.stack, c.recipe))


def _layer(L, c, xp) -> dict:
    """Seconds per layer per micro-batch on one GPU by operator class, ``[forward, backward]`` each (:func:`_summed`)."""
    return _summed(_rows(L, c, xp), c, xp)


FSDP_COPY_BYTES = MappingProxyType({"weights": 4.0, "gradients": 8.0})
"""HBM bytes per parameter of FSDP2's copies around its collectives, per micro-batch (``fsdp_copies`` stacks with
ZeRO-3): after each all-gather the flat output buffer is copied out into the parameters (read and write the BF16
weight, 4 bytes), and before each reduce-scatter the gradients are copied into the flat input buffer (read and
write, in the FP32 reduce dtype torchtitan sets, 8 bytes). PyTorch, ``torch.distributed.fsdp.fully_shard``
documentation and FSDP2's design notes (copy-in/copy-out of the all-gather and reduce-scatter buffers)."""

LOSS_BYTES = {True: 6.0, False: 40.0}
"""HBM bytes per logit of the loss, forward and backward (fused: Megatron-Core's vocabulary-parallel cross-entropy
reads the BF16 logits, and writes their gradient, in two passes; eager: the logits cast to FP32, a log-softmax,
the negative log-likelihood and their gradients, each its own kernel over FP32 values, as torchtitan's
``cross_entropy(pred.float(), labels)``). Kernels: 3 fused, 8 eager."""


def _output(L, c, xp):
    """Seconds per micro-batch of the output layer (the logits GEMM, vocabulary-parallel, in BF16 even in FP8
    recipes: Transformer Engine's FP8 covers the transformer layers' linear layers) and the loss over the
    vocabulary, forward plus backward, on the last stage."""
    w = c.w
    tokens = L.b * c.s / L.cp
    f_, b_ = _gemm3(tokens, w["vocab"] / L.tp, w["h"], c.gemm16, xp)
    loss = tokens * w["vocab"] / L.tp * LOSS_BYTES[c.stack.fused_loss] / c.hbm
    return f_ + b_ + loss + (3.0 if c.stack.fused_loss else 8.0) * kernels.KERNEL_GPU_SECONDS


def _host(rows, c, xp) -> tuple:
    """``(forward, backward, forward before the dispatch)`` seconds an eager host needs to issue a layer's kernels
    (:func:`_rows`): :attr:`Stack.host_seconds_per_kernel` per kernel, except the experts' kernels a multi-stream
    stack launches from C++ inside one call (:data:`EXPERT_CALLS`), each at
    :data:`atscale.kernels.HOST_SECONDS_PER_LAUNCH`; the third, the share before a mixture of experts' dispatch
    (:data:`BEFORE_DISPATCH`) where the stack waits there (:attr:`Stack.dispatch_sync`), else 0."""
    host, launch = c.stack.host_seconds_per_kernel, kernels.HOST_SECONDS_PER_LAUNCH
    looped = c.moe and c.stack.expert_gemms == "multi-stream"
    sync = c.moe and c.stack.dispatch_sync
    moe = c.w["moe_share"]
    h_f = h_b = pre = 0.0
    for name, _, _, _, n_f, n_b in rows:
        if looped and name in EXPERT_CALLS:
            calls_f, calls_b = EXPERT_CALLS[name]
            calls_f, calls_b = xp.minimum(n_f, calls_f * moe), xp.minimum(n_b, calls_b * moe)
            t_f = calls_f * host + (n_f - calls_f) * launch
            t_b = calls_b * host + (n_b - calls_b) * launch
        else:
            t_f, t_b = n_f * host, n_b * host
        h_f, h_b = h_f + t_f, h_b + t_b
        if sync:
            pre = pre + BEFORE_DISPATCH.get(name, 0.0) * t_f
    return h_f, h_b, pre


def _summed(rows, c, xp, host=None) -> dict:
    """Per class ``[forward, backward]`` seconds; the memory-bound kernels' fixed GPU time is charged to the class
    ``"fixed per kernel"``, which also takes what the host needs beyond the GPU (:func:`_host`'s, or ``host`` where
    the caller has it already): an eager host
    issues the kernels and runs ahead of the GPU, so a pass takes the longer of the two (Horace He 2022, "Making
    Deep Learning Go Brrrr From First Principles", on overhead); where a mixture of experts' dispatch makes the host
    wait (:data:`DISPATCH_SYNC`), the forward pass takes the longer of the two on each side of it."""
    out = {cls: [0.0, 0.0] for cls in OPERATOR_CLASSES}
    pre_g = 0.0
    gap = kernels.KERNEL_GPU_SECONDS
    sync = c.moe and c.stack.dispatch_sync
    for name, cls, f_, b_, n_f, n_b in rows:
        fixed_f = n_f * gap if cls == "memory-bound" else 0.0
        if cls == "memory-bound":
            out["fixed per kernel"][0] += fixed_f
            out["fixed per kernel"][1] += n_b * gap
        out[cls][0] = out[cls][0] + f_
        out[cls][1] = out[cls][1] + b_
        if sync:
            pre_g = pre_g + BEFORE_DISPATCH.get(name, 0.0) * (f_ + fixed_f)
    h_f, h_b, pre_h = _host(rows, c, xp) if host is None else host
    for i, h in ((0, h_f), (1, h_b)):
        gpu = sum(v[i] for v in out.values())
        wait = xp.maximum(0.0, h - gpu)
        if i == 0 and sync:
            split = xp.maximum(0.0, pre_h - pre_g) + xp.maximum(0.0, (h - pre_h) - (gpu - pre_g))
            moe = c.w["moe_share"]
            wait = moe * split + (1.0 - moe) * wait
        out["fixed per kernel"][i] = out["fixed per kernel"][i] + wait
    return out


# --------------------------------------------------------------------------------------
# The public table of one layer's operators
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OperatorRow:
    """One operator of a layer: ``name``, its ``kind`` (one of :data:`OPERATOR_CLASSES`), seconds ``forward`` and
    ``backward`` for one micro-batch on one GPU, and the kernels it launches in each pass."""

    name: str
    kind: str
    forward: float
    backward: float
    kernels_forward: float
    kernels_backward: float


@dataclass(frozen=True)
class LayerOperators:
    """One transformer layer's operators, timed (:func:`layer_operators`): seconds per micro-batch on one GPU.

    ``rows``: the operators (a GEMM's or an attention kernel's time includes its own fixed GPU time; a
    memory-bound kernel's is in the ``"fixed per kernel"`` row, with what an eager host needs beyond the GPU);
    ``output``: the output layer and the loss over the vocabulary (last pipeline stage only), forward plus
    backward; ``host``: what an eager host needs to issue the layer's kernels, forward plus backward (s; charged
    where it exceeds the GPU's time, in the ``"fixed per kernel"`` row)."""

    model: str
    accelerator: str
    stack: str
    dtype: str
    tokens: float
    rows: tuple
    output: float
    host: float = 0.0

    def by_kind(self) -> dict:
        """Seconds (forward plus backward) per class of :data:`OPERATOR_CLASSES`."""
        out = dict.fromkeys(OPERATOR_CLASSES, 0.0)
        for r in self.rows:
            out[r.kind] += r.forward + r.backward
        return out

    @property
    def total(self) -> float:
        """Seconds of the layer, forward plus backward (the output layer not included)."""
        return sum(r.forward + r.backward for r in self.rows)

    @property
    def kernels(self) -> float:
        """Kernels the layer launches, forward plus backward (what issuing them costs an eager host is
        :attr:`host`: a PyTorch call's time each, or a launch's for those a stack issues from C++)."""
        return sum(r.kernels_forward + r.kernels_backward for r in self.rows)

    def __repr__(self):
        parts = ", ".join(f"{k} {v * 1e3:.3g} ms" for k, v in self.by_kind().items())
        return f"LayerOperators({self.model} on {self.accelerator}, {self.stack}, {self.dtype}: {parts})"


def _expert_args(model: models.TransformerConfig, ep, expert_tp, expert_imbalance) -> tuple:
    """``(ep, expert_tp, expert_imbalance)`` of :func:`layer_operators` as floats, checked: ``ep`` must divide the
    routed experts (1 for a dense model)."""
    ep, etp = _v.count("ep", ep, scalar=True), _v.count("expert_tp", expert_tp, scalar=True)
    load = _v.number("expert_imbalance", expert_imbalance, low=1, scalar=True)
    if ep > 1 and (not model.is_moe or model.num_experts % ep):
        raise ValueError(f"ep={ep} must divide the routed experts of {model.name} "
                         f"({model.num_experts if model.is_moe else 'none: a dense model takes ep=1'})")
    return float(ep), float(etp), float(load)


def layer_operators(model, accelerator="H100 SXM", *, micro_batch=1, seq_length=None, tp=1, cp=1,
                    sequence_parallel: bool = False, dtype: str = "bf16", stack: str | Stack = "megatron-core",
                    fp8_recipe: str = "delayed", flash_attention: bool = True, calibration=None,
                    zero_stage: int = 0, ep: int = 1, expert_tp: int | None = None,
                    expert_imbalance: float = 1.0) -> LayerOperators:
    """The operators of one layer of ``model`` on ``accelerator`` for one micro-batch of ``micro_batch`` sequences
    of ``seq_length`` tokens, sharded ``tp`` and ``cp`` ways, as ``stack`` runs them (:class:`LayerOperators`;
    seconds); ``zero_stage`` 3 adds an FSDP stack's copies around its collectives (:data:`FSDP_COPY_BYTES`). The same arithmetic the step-time model runs with ``stack=...``; ``calibration`` (default
    :data:`atscale.calibration.CALIBRATION`) supplies the kernel efficiency of the accelerator's generation.
    A mixture of experts' layer (averaged over the layers, as :func:`_experts` says) takes ``ep``, ``expert_tp``
    (``None``: ``tp``) and ``expert_imbalance`` (the busiest expert's load over the mean) as
    :class:`~atscale.plan.Plan` does; the all-to-all is communication, not an operator, and is not here."""
    model, s, b, tp, cp, sp = _layer_args(model, micro_batch, seq_length, tp, cp, sequence_parallel)
    acc = hardware.accelerator_arg("accelerator", accelerator)
    acc.peak(dtype)
    st = _stack_arg("stack", stack)
    _v.choice("fp8_recipe", fp8_recipe, kernels.FP8_RECIPES)
    cal = CALIBRATION if calibration is None else calibration
    if not isinstance(cal, Calibration):
        raise ValueError(f"calibration={_v.show(calibration)} must be an atscale.calibration.Calibration")
    zero_stage = _v.count("zero_stage", zero_stage, low=0, high=3, scalar=True)
    c = _context(model, acc, float(s), dtype, st, fp8_recipe, _v.flag("flash_attention", flash_attention),
                 cal.kernel_efficiency_for(acc), cal.fp8_rate_factor, cal.rowwise_linear_only,
                 cal.attention_rate_factor)
    ep, etp, load = _expert_args(model, ep, tp if expert_tp is None else expert_tp, expert_imbalance)
    L = types.SimpleNamespace(b=float(b), tp=float(tp), cp=float(cp), sp=sp, ep=ep, etp=etp, load=load,
                              zs=float(zero_stage), reshard=True, tp_overlap=False)
    rows = _rows(L, c, _ScalarOps)
    host = _host(rows, c, _ScalarOps)
    summed = _summed(rows, c, _ScalarOps, host)
    out = [OperatorRow(name, kind, float(f_), float(b_), n_f, n_b) for name, kind, f_, b_, n_f, n_b in rows]
    fixed = summed["fixed per kernel"]
    out.append(OperatorRow("fixed per kernel", "fixed per kernel", float(fixed[0]), float(fixed[1]), 0.0, 0.0))
    h_f, h_b, _ = host
    return LayerOperators(model.name, acc.name, st.name, dtype, float(b * s / cp), tuple(out),
                          float(_output(L, c, _ScalarOps)), float(h_f + h_b))


# ======================================================================================
# For the book (issue 31, item 7): FP8's gain by width (the published same-layout pairs: atscale.runs.fp8_pairs).
# Appended as one section; it reads the functions above and the published runs, and changes nothing.
# ======================================================================================
__all__ += ["llama_shaped", "fp8_layer_speedup"]


def llama_shaped(hidden_size: int) -> models.TransformerConfig:
    """A Llama 3-shaped model of width ``hidden_size`` (elements; a multiple of 128, at least 1,024): heads of 128
    elements (``h / 128`` query heads, 8 key-value heads, or the largest divisor of the heads below 8), a SwiGLU MLP of ``3.5 h`` (rounded to 256; Llama 3 8B
    and 70B have exactly 3.5 h), vocabulary 128,256, sequences of 8,192 tokens, 32 layers (one layer's operators
    do not depend on the depth). Llama Team (2024), *The Llama 3 Herd of Models*, Table 3. For sweeping one
    layer's cost against the width with everything else held to one family's shape."""
    h = _v.count("hidden_size", hidden_size, scalar=True, low=1024)
    if h % 128:
        raise ValueError(f"hidden_size={_v.show(hidden_size)} must be a multiple of 128 (heads of 128 elements)")
    ffn = int(round(3.5 * h / 256)) * 256
    return models.TransformerConfig(f"Llama-shaped, h = {h:,}", num_layers=32, hidden_size=h, num_heads=h // 128,
                                    num_kv_heads=math.gcd(h // 128, 8), ffn_hidden_size=ffn, gated_mlp=True, vocab_size=128_256,
                                    seq_length=8192, norm="rmsnorm",
                                    source="Llama 3's shape (Llama Team 2024, Table 3) at another width")


def fp8_layer_speedup(model, accelerator="H100 SXM", *, micro_batch=1, seq_length=None, tp=1,
                      sequence_parallel: bool = False, stack: str | Stack = "megatron-core",
                      fp8_recipe: str = "delayed", ep: int = 1, expert_tp: int | None = None) -> float:
    """FP8's speedup of one layer (dimensionless): :attr:`LayerOperators.total` in BF16 over the same in FP8,
    both from :func:`layer_operators` with the same arguments (the output layer, which stays in BF16, left out).

    Nothing here is an FP8 constant: the gain follows from the GEMMs' shapes (a GEMM with a short K or few tiles
    gains less than the FP8/BF16 rate ratio of :data:`atscale.kernels.GEMM_FIT`), from what stays in BF16 (the
    attention core, the memory-bound operators) and from the casts the recipe adds
    (:data:`atscale.kernels.FP8_CAST_BYTES`). The classic misreading: the datasheet's 2x, which is the ratio of
    the peaks of one large GEMM. ``ep`` and ``expert_tp``: a mixture of experts' layout (:func:`layer_operators`)."""
    kw = dict(micro_batch=micro_batch, seq_length=seq_length, tp=tp, sequence_parallel=sequence_parallel,
              stack=stack, ep=ep, expert_tp=expert_tp)
    bf16 = layer_operators(model, accelerator, dtype="bf16", **kw)
    fp8 = layer_operators(model, accelerator, dtype="fp8", fp8_recipe=fp8_recipe, **kw)
    return bf16.total / fp8.total
