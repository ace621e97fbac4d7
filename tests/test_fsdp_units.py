"""FSDP's data-parallel collectives, one per wrapped module (``Stack.unit_collectives``): each all-gather and
reduce-scatter a ring through the shard group that pays NCCL's own latency (``collectives.nccl_ring_latency``),
where Megatron's bucketed collectives pay the library's one latency a step."""
import dataclasses

import pytest

from atscale import collectives, hardware, operators, runs
from atscale.parallelism import step_time


def _run(label):
    return next(r for r in runs.ALL_RUNS if r.label == label)


def _dp_comm(run, unit_collectives: bool, dp_overlap=0.0):
    stack = dataclasses.replace(run._stack(), unit_collectives=unit_collectives)
    return float(step_time(run.model, run.cluster, run.plan, optimizer_name=run.optimizer_name, dp_overlap=dp_overlap,
                           seq_length=run.seq_length, dtype=run.dtype, flash_attention=run.flash_attention,
                           memory_check=run.memory_check, stack=stack, fp8_recipe=run.fp8_recipe).dp_comm)


def test_the_fsdp_presets_issue_one_collective_per_module():
    assert operators.stack("fsdp2-eager").unit_collectives and operators.stack("fsdp2-compile").unit_collectives
    assert not operators.stack("megatron-core").unit_collectives
    assert "Zhao et al. 2023" in operators.UNIT_COLLECTIVES
    for bad in (None, 1, "yes"):
        with pytest.raises(ValueError, match="unit_collectives"):
            dataclasses.replace(operators.stack("fsdp2-eager"), unit_collectives=bad)


@pytest.mark.parametrize("gpus", [128, 512])
def test_each_module_pays_nccls_ring_latency_in_place_of_one_collective_latency(gpus):
    """MPT-1B under FSDP's SHARD_GRAD_OP (ZeRO-2, one micro-batch) with nothing hidden (dp_overlap 0): the step's
    gather and reduce-scatter each pay, per module (24 blocks and the root), NCCL's ring latency over every GPU, in
    place of the one latency of the library's hierarchical collective; the bytes are the same either way."""
    run = _run(f"MPT-1B, {gpus} H100, Composer FSDP, 2,048 tokens, BF16")
    assert run.plan.zero_stage == 2 and run.plan.micro_batches == 1 and run.plan.dp == gpus
    units = run.model.num_layers + 1
    ring = collectives.nccl_ring_latency("all-gather", gpus, 8)
    one = collectives.hierarchical_time("all-gather", 0.0, hardware.Cluster.of_gpus(run.cluster.node, gpus,
                                                                                    run.cluster.fabric))
    assert ring > 3 * one  # a ring through every GPU against one step per node
    extra = _dp_comm(run, True) - _dp_comm(run, False)
    assert extra == pytest.approx(2 * (units * ring - one), rel=1e-6)


def test_hidden_behind_the_compute_the_latency_costs_the_sms_it_takes():
    """With FSDP's overlap (dp_overlap 1) the collectives still fit behind the compute at 512 GPUs: what the per-module
    latency adds is the compute it slows, the stack's share of the SMs of the time it runs."""
    run = _run("MPT-1B, 512 H100, Composer FSDP, 2,048 tokens, BF16")
    exposed = _dp_comm(run, True, 0.0) - _dp_comm(run, False, 0.0)
    hidden = _dp_comm(run, True, 1.0) - _dp_comm(run, False, 1.0)
    assert hidden == pytest.approx(operators.COMM_SM_SHARE * exposed, rel=1e-6)


def test_resharded_weights_are_gathered_again_per_module():
    """MPT-7B under FSDP's FULL_SHARD (ZeRO-3, resharded after the forward, one micro-batch), nothing hidden: three
    collectives per module (the forward's gather, the backward's gather and reduce-scatter) each pay NCCL's ring
    latency, and the first module's gather, exposed before any compute, one more (within 1 %: that gather's bytes
    are a module's share, 1/33 of the weights rather than 1/32 of them as before)."""
    run = _run("MPT-7B, 512 H100, Composer FSDP, 2,048 tokens, BF16")
    assert run.plan.zero_stage == 3 and run.plan.reshard_after_forward and run.plan.micro_batches == 1
    units = run.model.num_layers + 1
    ring = collectives.nccl_ring_latency("all-gather", 512, 8)
    one = collectives.hierarchical_time("all-gather", 0.0, hardware.Cluster.of_gpus(run.cluster.node, 512,
                                                                                    run.cluster.fabric))
    extra = _dp_comm(run, True) - _dp_comm(run, False)
    assert extra == pytest.approx(3 * (units * ring - one) + ring, rel=0.01)


PIPELINED = "Llama 3.1 405B, 512 H100, torchtitan FSDP 8 TP 8 PP 8 1F1B, FP8"


def _pipelined_step(unit_collectives: bool, global_batch=None, dp_overlap=1.0):
    run = _run(PIPELINED)
    plan = run.plan if global_batch is None else dataclasses.replace(run.plan, global_batch=global_batch)
    stack = dataclasses.replace(run._stack(), unit_collectives=unit_collectives)
    return step_time(run.model, run.cluster, plan, optimizer_name=run.optimizer_name, dp_overlap=dp_overlap,
                     seq_length=run.seq_length, dtype=run.dtype, flash_attention=run.flash_attention, stack=stack,
                     fp8_recipe=run.fp8_recipe)


def test_under_pipeline_parallelism_fsdp_gathers_and_reduces_once_a_step():
    """torchtitan's 405B layout (FSDP 8, TP 8, PP 8, 8 micro-batches, weights not resharded after the forward): as
    PyTorch's pipelining runs FSDP, the weights stay gathered and the gradients unreduced across the micro-batches,
    so the step's data-parallel time does not grow with them; priced as collectives per micro-batch it did."""
    run = _run(PIPELINED)
    assert run.plan.pp == 8 and run.plan.micro_batches == 8 and not run.plan.reshard_after_forward
    assert "reshard_after_forward=False" in operators.PIPELINED_FSDP
    gb = run.plan.global_batch
    once = [float(_pipelined_step(True, b, 0.0).dp_comm) for b in (gb, 2 * gb)]
    every = [float(_pipelined_step(False, b, 0.0).dp_comm) for b in (gb, 2 * gb)]
    assert once[1] == pytest.approx(once[0], rel=1e-9)
    assert every[1] > 1.9 * every[0]


def test_the_reduce_scatter_after_the_last_backward_is_exposed():
    """Nothing computes while the stage's gradients are reduce-scattered after its last backward: with FSDP's overlap
    on, the step still pays all of it; the gather hides behind the first micro-batch's forward."""
    exposed, overlapped = (float(_pipelined_step(True, dp_overlap=o).dp_comm) for o in (0.0, 1.0))
    assert 0.3 * exposed < overlapped < exposed  # the reduce-scatter of FP32 gradients: two thirds of the bytes


def test_pipelined_fsdp_holds_the_unsharded_gradients():
    """The gradients accumulate unsharded, in FP32 (torchtitan's reduce dtype), until the last backward: the stage's
    weights (405B / 64 GPUs, and the output layer's share on the last stage) times 4 bytes, less the shard kept
    anyway."""
    run = _run(PIPELINED)
    extra = float(_pipelined_step(True).memory_total - _pipelined_step(False).memory_total)
    stage = (run.model.num_params + run.model.vocab_size * run.model.hidden_size) / (run.plan.pp * run.plan.tp)
    assert extra == pytest.approx(4 * stage * (1 - 1 / run.plan.dp), rel=0.05)
