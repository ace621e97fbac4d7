"""Answer keys: the 3D-parallelism chapter."""

CHAPTER = "3D parallelism"
"""The chapter whose exercises these keys check (the Exercises page groups them by it)."""

import dataclasses

from .. import hardware, models, operators, parallelism, pipeline
from ..scenario import RUNNING_EXAMPLE
from . import answer


@answer("parallelism-bubble-interleaved", unit="", rtol=0.01,
        idea="Interleaving gives each GPU several smaller stages, which shrinks the idle time at the ends of a step.",
        hint="(p - 1) / (v m) with p = 8 stages, m = 32 micro-batches, v = 2 chunks per GPU.")
def _():
    return parallelism.bubble_fraction(8, 32, 2)


@answer("parallelism-micro-batches-90", unit="", rtol=0.0, atol=0.5,
        idea="More micro-batches amortise the pipeline's fill and drain.",
        hint="Pipeline efficiency is 1 / (1 + (p - 1)/m); solve 1 / (1 + 3/m) >= 0.9 for the smallest whole m.")
def _():
    m = 1
    while 1 / (1 + parallelism.bubble_fraction(4, m)) < 0.9 - 1e-12:  # m = 27 gives exactly 90%
        m += 1
    return m


@answer("parallelism-deepiix-dp", unit="", rtol=0.0, atol=0.5,
        idea="Every GPU belongs to exactly one tensor-, pipeline- and data-parallel group.",
        hint="256 nodes of 8 GPUs, divided by TP x PP = 8 x 4.")
def _():
    return 256 * 8 // (8 * 4)


@answer("parallelism-running-mfu", unit="", rtol=0.01,
        idea="MFU is the model's useful FLOP/s over the GPUs' peak.",
        hint="parallelism.step_time(ex.model, ex.cluster, ex.plan, seq_length=ex.seq_length).mfu")
def _():
    ex = RUNNING_EXAMPLE
    return parallelism.step_time(ex.model, ex.cluster, ex.plan, seq_length=ex.seq_length).mfu


@answer("parallelism-zero3-exposed", unit="s", rtol=0.02,
        idea="ZeRO-3 adds weight all-gathers to the data-parallel traffic; what is not hidden behind compute is exposed.",
        hint="dataclasses.replace(ex.plan, zero_stage=3), then step_time(...).dp_comm (seconds).")
def _():
    ex = RUNNING_EXAMPLE
    plan = dataclasses.replace(ex.plan, zero_stage=3)
    return parallelism.step_time(ex.model, ex.cluster, plan, seq_length=ex.seq_length).dp_comm


@answer("parallelism-search-noflash-mfu", unit="", rtol=0.01,
        idea="Without a fused attention kernel the attention scores are written to memory, which changes the best layout.",
        hint="parallelism.search(..., flash_attention=False) for the running example; the MFU of row 0 "
             "(result.table['mfu'][0]).")
def _():
    ex = RUNNING_EXAMPLE
    r = parallelism.search(ex.model, ex.cluster, ex.plan.global_batch, seq_length=ex.seq_length,
                           flash_attention=False)
    return float(r.table["mfu"][0])


@answer("parallelism-uneven-first-stage", unit="", rtol=0.0, atol=0.5,
        idea="Count the embedding and the loss as layers, then spread all of them over the stages.",
        hint="parallelism.stage_layers(126, 16, account_for_embedding=True, account_for_loss=True).first: "
             "128 slots over 16 stages, one slot of the first stage taken by the embedding.")
def _():
    return parallelism.stage_layers(126, 16, account_for_embedding=True, account_for_loss=True).first


@answer("parallelism-tp-overlap-saved", unit="s", rtol=0.02,
        idea="Compare the exposed tensor-parallel time with and without overlap.",
        hint="step_time(...).tp_comm with dataclasses.replace(ex.plan, tp_overlap=False), minus the same with "
             "the running example's plan (seconds per step).")
def _():
    ex = RUNNING_EXAMPLE
    off = dataclasses.replace(ex.plan, tp_overlap=False)
    st = [parallelism.step_time(ex.model, ex.cluster, p, seq_length=ex.seq_length) for p in (off, ex.plan)]
    return st[0].tp_comm - st[1].tp_comm


@answer("parallelism-fp8-speedup", unit="", rtol=0.01,
        idea="FP8 speeds up the matrix multiplications only; the rest of the step stays.",
        hint="The BF16 step's total over the FP8 step's total: step_time(..., dtype='fp8') for the running example.")
def _():
    ex = RUNNING_EXAMPLE
    bf16, fp8 = (parallelism.step_time(ex.model, ex.cluster, ex.plan, seq_length=ex.seq_length, dtype=d)
                 for d in ("bf16", "fp8"))
    return bf16.total / fp8.total


@answer("parallelism-cp-kv-bytes", unit="B", rtol=0.01,
        idea="Each context-parallel rank holds keys and values for its share of the sequence and its tensor-parallel heads.", slips=('twice',),
        hint="Keys and values of the tokens one rank holds: (s / c) tokens x 2 x (KV heads x head dimension) / t "
             "values, 2 bytes each, with s = 131,072, c = 16, t = 8, 8 KV heads of dimension 128.")
def _():
    m = models.LLAMA3_405B
    return 131_072 / 16 * 2 * m.kv_heads * m.head_dim / 8 * parallelism.ACTIVATION_BYTES


@answer("parallelism-hsdp-exposed", unit="s", rtol=0.02,
        idea="HSDP shards within a group and all-reduces across groups; compare what it exposes with ZeRO-3.",
        hint="dataclasses.replace(ex.plan, zero_stage=3, shard_group=8), then step_time(...).dp_comm (seconds).")
def _():
    ex = RUNNING_EXAMPLE
    plan = dataclasses.replace(ex.plan, zero_stage=3, shard_group=8)
    return parallelism.step_time(ex.model, ex.cluster, plan, seq_length=ex.seq_length).dp_comm


@answer("parallelism-dualpipe-bubble", unit="s", rtol=0.01,
        idea="DualPipe feeds micro-batches from both ends, so its bubble depends on half the stages.",
        hint="(p/2 - 1)(t_f + 2 t_b - t_w) with p = 16, t_f = t_b = 1 ms, t_w = 0.5 ms: "
             "pipeline.bubble_time('dualpipe', 16, 64, 1e-3, 1e-3, 0.5e-3).")
def _():
    return pipeline.bubble_time("dualpipe", 16, 64, 1e-3, 1e-3, 0.5e-3)


@answer("parallelism-fp8-gain-narrow", unit="", rtol=0.01,
        idea="FP8 speeds up only the weight matmuls, and a narrow layer's matmuls are a smaller share of its time.",
        hint="operators.fp8_layer_speedup(operators.llama_shaped(2048)): the layer's BF16 time over its FP8 time, "
             "one micro-batch of 8,192 tokens on an H100, Megatron-Core's preset.")
def _():
    return operators.fp8_layer_speedup(operators.llama_shaped(2048))


@answer("parallelism-fp8-gain-wide", unit="", rtol=0.01,
        idea="A wide layer's GEMMs are large enough to run near the FP8 rate, and they dominate its time.",
        hint="operators.fp8_layer_speedup(operators.llama_shaped(16384)), as for the narrow layer.")
def _():
    return operators.fp8_layer_speedup(operators.llama_shaped(16384))
