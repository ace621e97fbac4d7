"""The shared layout type: what a plan is on its own, and the running example's plan."""

from dataclasses import replace

import numpy as np
import pytest

from atscale import memory, models
from atscale.plan import FSDP_STRATEGIES, Plan
from atscale.scenario import RUNNING_EXAMPLE


def test_running_example_plan():
    plan = RUNNING_EXAMPLE.plan
    assert (plan.tp, plan.pp, plan.dp, plan.zero_stage) == (8, 4, 32, 1)
    assert plan.gpus == RUNNING_EXAMPLE.cluster.num_gpus == 1024
    assert plan.global_batch == RUNNING_EXAMPLE.global_batch_sequences == 1024
    assert plan.micro_batches == 32  # gradient accumulation: 1,024 / (1 x 32) micro-batches per replica
    assert plan.sequence_parallel and plan.recompute == "selective" and plan.schedule == "1f1b"
    assert str(plan).startswith("TP=8 PP=4 DP=32 ZeRO-1 on 1,024 GPUs; micro-batch 1, global batch 1,024")


def test_plan_is_frozen_and_a_what_if_is_a_new_plan():
    plan = RUNNING_EXAMPLE.plan
    with pytest.raises(AttributeError):
        plan.tp = 4
    alt = replace(plan, pp=8, dp=16)
    assert alt.gpus == plan.gpus and alt.micro_batches == 64 and plan.pp == 4
    assert plan.with_micro_batch(4).global_batch is None and plan.with_micro_batch(4).micro_batches == 1


def test_numpy_integers_are_whole_numbers():
    plan = Plan(tp=np.int64(8), pp=np.int32(2), dp=np.int64(4), global_batch=np.int64(64))
    assert plan.gpus == 64 and type(plan.tp) is int and plan.micro_batches == 16


@pytest.mark.parametrize("kwargs, message", [
    (dict(tp=0), "tp=0 must be a positive integer"),
    (dict(pp=2.5), "pp=2.5 must be a positive integer"),
    (dict(dp=True), "dp=True must be a positive integer"),
    (dict(micro_batch=-1), "micro_batch=-1"),
    (dict(dp=4, micro_batch=2, global_batch=12), "global_batch=12 must be a multiple of micro_batch x dp = 2 x 4 = 8"),
    (dict(zero_stage=4), "zero_stage=4 must be a whole number in .0, 3."),
    (dict(schedule="zigzag"), "schedule='zigzag' must be one of"),
    (dict(pp=4, virtual_stages=2), "virtual_stages=2 needs schedule='interleaved'"),
    (dict(schedule="interleaved", virtual_stages=2), "needs a pipeline: pp=1"),
    (dict(recompute="some"), "recompute='some' must be one of"),
    (dict(cp=2, cp_algorithm="tree"), "cp_algorithm='tree' must be one of ('ring', 'all-gather', 'ulysses')"),
    (dict(sequence_parallel=True), "needs tp > 1"),
    (dict(tp=2, sequence_parallel="yes"), "sequence_parallel='yes' must be True or False"),
])
def test_bad_plans_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Plan(**kwargs)


def test_cp_algorithm_defaults_to_the_ring_and_shows_when_it_is_not():
    from atscale.plan import CP_ALGORITHMS

    assert Plan().cp_algorithm == "ring" == CP_ALGORITHMS[0]
    ring = Plan(tp=8, cp=16, pp=16, dp=8)
    assert ring.describe() == "TP=8 CP=16 PP=16 DP=8 ZeRO-0"  # unchanged for the default
    assert replace(ring, cp_algorithm="all-gather").describe() == "TP=8 CP=16 (all-gather) PP=16 DP=8 ZeRO-0"


def test_fsdp_strategies_are_zero_stages():
    assert FSDP_STRATEGIES["FULL_SHARD"] == 3 and FSDP_STRATEGIES["SHARD_GRAD_OP"] == 2
    assert FSDP_STRATEGIES["NO_SHARD"] == 0


def test_breakdown_takes_a_plan_or_its_fields_not_both():
    plan = RUNNING_EXAMPLE.plan
    by_plan = memory.breakdown(models.LLAMA3_70B, "H100 SXM", plan)
    by_fields = memory.breakdown(models.LLAMA3_70B, "H100 SXM", tp=8, pp=4, dp=32, zero_stage=1,
                                 sequence_parallel=True, recompute="selective")
    assert by_plan.total == by_fields.total and by_plan.plan == plan
    with pytest.raises(ValueError, match="either plan or its fields"):
        memory.breakdown(models.LLAMA3_70B, "H100 SXM", plan, tp=8)
    with pytest.raises(ValueError, match="must be an atscale.plan.Plan"):
        memory.breakdown(models.LLAMA3_70B, "H100 SXM", {"tp": 8})


def test_scenario_plan_must_match_the_cluster():
    with pytest.raises(ValueError, match="plan uses tp x pp x dp = 512 GPUs; the cluster has 1,024"):
        replace(RUNNING_EXAMPLE, plan=replace(RUNNING_EXAMPLE.plan, dp=16))
