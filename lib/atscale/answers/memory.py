"""Answer keys: the memory-wall chapter."""

CHAPTER = "The memory wall"
"""The chapter whose exercises these keys check (the Exercises page groups them by it)."""

from dataclasses import replace

from .. import hardware, memory, models
from ..scenario import RUNNING_EXAMPLE
from . import answer

ADAM_8BIT = memory.Optimizer(
    "adam-8bit-moments", weights=2, gradients=2, state=4 + 1 + 1, checkpoint=2 + 4 + 1 + 1,
    source="Dettmers et al. (2022): Adam's two moments quantised block-wise to 8 bits (1 + 1 bytes); "
           "the FP32 master copy (4) stays.")
"""The exercise's extension of the optimizer table: 8-bit Adam moments, 10 bytes per parameter."""

@answer("memory-70b-state", unit="B", rtol=0.02,
        idea="Mixed-precision Adam keeps weights, gradients and optimizer state for every parameter.",
        hint="Mixed-precision Adam keeps 2 + 2 + 12 bytes per parameter; Llama 3 70B has models.LLAMA3_70B.num_params.")
def _():
    return memory.model_state_bytes(models.LLAMA3_70B).total


@answer("memory-1t-min-gpus", unit="", rtol=0.0, atol=0.5,
        idea="Fully sharded, the model state only has to fit in the GPUs' memory taken together.",
        hint="16 bytes per parameter, fully sharded, divided by the bytes an H100 really offers "
             "(hardware.H100_SXM.usable_memory, not 80e9); round up.")
def _():
    return memory.min_gpus_for_state(1e12, "H100 SXM")


@answer("memory-70b-zero3-64", unit="B", rtol=0.02,
        idea="ZeRO-3 shards weights, gradients and optimizer state over the data-parallel ranks.",
        hint="ZeRO-3 divides all 16 bytes per parameter by the data-parallel degree.")
def _():
    return memory.model_state_bytes(models.LLAMA3_70B, zero_stage=3, dp=64).total


@answer("memory-gpt3-layer-activations", unit="B", rtol=0.02,
        idea="Tensor and sequence parallelism split a layer's activations; selective recomputation drops the attention scores.", slips=('twice',),
        hint="Tensor + sequence parallel + selective recomputation: 34 s b h / t, already in bytes.")
def _():
    return memory.activation_bytes_per_layer(models.GPT3_175B, 1, tp=8, sequence_parallel=True, recompute="selective")


@answer("memory-h200-max-micro-batch", unit="", rtol=0.0, atol=0.5,
        idea="A larger memory leaves more room for activations, which grow with the micro-batch.",
        hint="Call memory.max_micro_batch with the running example's plan, accelerator='H200 SXM' and "
             "optimizer_name=memory.RUNNING_EXAMPLE_OPTIMIZER.")
def _():
    return memory.max_micro_batch(models.LLAMA3_70B, "H200 SXM", RUNNING_EXAMPLE.plan,
                                  optimizer_name=memory.RUNNING_EXAMPLE_OPTIMIZER)


@answer("memory-pp8-max-micro-batch", unit="", rtol=0.0, atol=0.5,
        idea="Deeper pipelines hold fewer layers per GPU but more micro-batches in flight on the first stage.",
        hint="dataclasses.replace(ex.plan, pp=8, dp=16, global_batch=None), on the H100 SXM, with "
             "optimizer_name=memory.RUNNING_EXAMPLE_OPTIMIZER.")
def _():
    plan = replace(RUNNING_EXAMPLE.plan, pp=8, dp=16, global_batch=None)
    return memory.max_micro_batch(models.LLAMA3_70B, "H100 SXM", plan, optimizer_name=memory.RUNNING_EXAMPLE_OPTIMIZER)


@answer("memory-zero3-traffic-time", unit="s", rtol=0.02,
        idea="ZeRO-3 moves the weights twice and the gradients once per step over the network.",
        hint="memory.zero_communication_bytes(model, 3) (3 Psi in BF16) over one NDR port per GPU, "
             "hardware.DGX_H100.nic_bandwidth (50 GB/s).")
def _():
    return memory.zero_communication_bytes(models.LLAMA3_70B, 3) / hardware.DGX_H100.nic_bandwidth


@answer("memory-300b-state", unit="B", rtol=0.02,
        idea="The total model state does not depend on how it is sharded.",
        hint="16 bytes per parameter for mixed-precision Adam, whatever the sharding: sharding divides, it does not shrink.")
def _():
    return memory.model_state_bytes(300e9).total


@answer("memory-8bit-adam-1t-gpus", unit="", rtol=0.0, atol=0.5,
        idea="Smaller optimizer moments shrink the bytes per parameter, and with them the GPUs needed.",
        hint="Define memory.Optimizer('adam-8bit-moments', 2, 2, 4 + 1 + 1, 8) and pass it as optimizer_name.")
def _():
    return memory.min_gpus_for_state(1e12, "H100 SXM", ADAM_8BIT)
