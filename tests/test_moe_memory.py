"""Issue 32, item 4: the memory chapter's breakdown with expert parallelism agrees with the step-time model's."""

from __future__ import annotations

import pytest

from atscale import hardware, memory, models, parallelism
from atscale.plan import Plan

QWEN = models.model("Qwen3-235B-A22B")
CLUSTER = hardware.Cluster.of_gpus(hardware.DGX_H100, 256, hardware.fabric("InfiniBand NDR"))


def _both(ep, expert_tp, zero_stage):
    plan = Plan(tp=2, pp=8, dp=16, micro_batch=1, global_batch=2048, sequence_parallel=True, ep=ep,
                expert_tp=expert_tp, zero_stage=zero_stage, recompute="selective")
    b = memory.breakdown(QWEN, "H100 SXM", plan, seq_length=4096, flash_attention=True)
    st = parallelism.step_time(QWEN, CLUSTER, plan, seq_length=4096, flash_attention=True, memory_check=False,
                               optimizer_name="adam-mixed")
    return b.total, float(st.memory_total)


@pytest.mark.parametrize("expert_tp, zero_stage", [(1, 0), (1, 1), (2, 2), (1, 3), (None, 1)])
def test_breakdown_with_experts_moves_as_the_step_time_model_does(expert_tp, zero_stage):
    """The two memory models place the embedding differently (the breakdown spreads every parameter over the
    stages by their layers; the step-time model puts the embedding on the first stage) and the breakdown leaves
    out the logits: they differ by a constant for one layout. What expert parallelism changes, they agree on to
    the byte: the experts' state, divided by ``expert_tp x ep`` and sharded over the experts' data-parallel
    group."""
    (b2, s2), (b8, s8) = _both(2 if expert_tp else 4, expert_tp, zero_stage), _both(8, expert_tp, zero_stage)
    assert b2 - b8 == pytest.approx(s2 - s8, rel=1e-9, abs=1.0)
    # ZeRO-3 shards the experts over their data-parallel group, tp cp dp / (expert_tp ep) GPUs: whatever ep, each
    # GPU keeps 1/(tp cp dp) of them; below stage 3 the weights (and gradients) shrink with ep
    assert b2 == pytest.approx(b8) if zero_stage == 3 else b2 > b8
    assert 0 < s8 - b8 < 0.1 * s8


def test_expert_parallelism_shrinks_only_the_experts_state():
    def state(ep):
        b = memory.breakdown(QWEN, "H100 SXM", tp=2, pp=8, dp=16, micro_batch=1, global_batch=2048, ep=ep,
                             expert_tp=1, zero_stage=1, sequence_parallel=True)
        return b.weights + b.gradients + b.optimizer, b.activations

    (s1, a1), (s8, a8), (s32, a32) = state(1), state(8), state(32)
    assert s1 > s8 > s32 and a1 == a8 == a32
    # what does not shrink: the dense weights (attention, norms, embeddings, routers), split by tp only
    routed = QWEN.moe_layers * QWEN.num_experts * QWEN.expert_params()
    assert (s8 - s32) == pytest.approx((s1 - s8) * (1 / 8 - 1 / 32) / (1 - 1 / 8), rel=1e-9)
    assert routed > 0.9 * QWEN.num_params


def test_a_dense_model_takes_no_expert_parallelism():
    with pytest.raises(ValueError, match="ep=2"):
        memory.breakdown(models.LLAMA3_8B, "H100 SXM", tp=1, pp=1, dp=8, micro_batch=1, ep=2)


def test_ep_must_divide_the_experts():
    with pytest.raises(ValueError, match="ep=3 must divide the 128 routed experts"):
        memory.breakdown(QWEN, "H100 SXM", tp=1, pp=1, dp=6, micro_batch=1, ep=3, expert_tp=1)
