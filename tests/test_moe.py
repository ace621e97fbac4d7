"""Mixtures of experts in the step-time model: expert parallelism, all-to-all, expert memory and load."""
import dataclasses

import numpy as np
import pytest

from atscale import collectives as C, hardware as hw, models as M, parallelism as P
from atscale.plan import Plan

H800 = hw.Cluster.of_gpus(hw.HGX_H800, 2048, hw.FABRICS["InfiniBand NDR"])
H100_64 = hw.Cluster.of_gpus(hw.DGX_H100, 64, hw.FABRICS["InfiniBand NDR"])
DSV3 = Plan(tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=15_360, zero_stage=1, recompute="full")
MIXTRAL = Plan(tp=1, pp=1, dp=64, ep=8, micro_batch=1, global_batch=256, zero_stage=1)


def _step(model, cluster, plan, **kw):
    return P.step_time(model, cluster, plan, memory_check=False, **kw)


def _as_arrays(plans) -> dict:
    """The plans' fields as the arrays :func:`atscale.parallelism.evaluate` takes (``None`` as its 0)."""
    arrays = {f: np.array([getattr(p, f) if getattr(p, f) is not None else 0 for p in plans], dtype=object)
              for f in P._FIELDS}
    return {f: (a.astype(bool) if isinstance(a[0], (bool, np.bool_)) else a.astype(str) if isinstance(a[0], str)
                else a.astype(float) if f in ("expert_imbalance", "capacity_factor") else a.astype(int))
            for f, a in arrays.items()}


def test_plan_checks_the_expert_fold():
    with pytest.raises(ValueError, match="expert_tp x ep = 1 x 3 = 3 must divide tp x cp x dp"):
        Plan(tp=1, dp=8, ep=3)
    with pytest.raises(ValueError, match="expert_tp"):
        Plan(tp=2, dp=4, ep=2, expert_tp=0)
    with pytest.raises(ValueError, match="expert_imbalance"):
        Plan(expert_imbalance=0.5)
    with pytest.raises(ValueError, match="capacity_factor"):
        Plan(capacity_factor=0.9)
    p = Plan(tp=2, dp=8, ep=8, expert_tp=1, expert_imbalance=1.5, capacity_factor=1.25)
    assert p.etp == 1 and p.expert_load == 1.25 and "EP=8" in p.describe()
    assert Plan(tp=4, dp=2).etp == 4  # Megatron-Core's default: experts split like the dense layers


def test_dense_model_refuses_expert_parallelism_and_ep_must_divide_the_experts():
    st = P.step_time(M.LLAMA3_70B, H100_64, Plan(tp=8, pp=1, dp=8, ep=8, micro_batch=1, global_batch=64))
    assert not st.feasible and "has no experts" in st.reason
    st = P.step_time(M.MIXTRAL_8X7B, H100_64, Plan(tp=1, dp=64, ep=16, micro_batch=1, global_batch=64))
    assert not st.feasible and "EP=16 does not divide the 8 experts" in st.reason


def test_dense_models_have_no_all_to_all():
    st = P.step_time(M.LLAMA3_70B, H100_64, Plan(tp=8, pp=4, dp=2, micro_batch=1, global_batch=64, zero_stage=1))
    assert st.ep_comm == 0.0


def test_all_to_all_inside_a_node_uses_nvlink_and_across_nodes_the_nic():
    size = 256e6
    one_node = C.all_to_all_time(size, 8, H100_64)
    up = C.link_cost(dataclasses.replace(hw.FABRICS["NVLink 4"], bandwidth=450e9))
    assert one_node == pytest.approx(up.base + 7 * up.hop + size * 7 / 8 / up.rate)
    two_nodes = C.all_to_all_time(size, 16, H100_64)
    rail = C.link_cost(dataclasses.replace(hw.FABRICS["InfiniBand NDR"], bandwidth=50e9))
    assert two_nodes == pytest.approx(rail.base + rail.hop + size * 8 / 16 / rail.rate)
    # Across nodes an all-to-all sends nearly all of its bytes over the NIC; a hierarchical all-reduce of the same
    # buffer sends 2 M / g of it: the all-to-all is the slower of the two on 64 GPUs.
    assert C.all_to_all_time(size, 64, H100_64) > C.hierarchical_time("all-reduce", size, H100_64)
    assert C.all_to_all_time(size, 1, H100_64) == 0.0


@pytest.mark.parametrize("bad, words", [
    (dict(size=-1.0, ranks=8), "size"), (dict(size=1e6, ranks=0), "ranks"), (dict(size=1e6, ranks=2.5), "ranks"),
    (dict(size=1e6, ranks=16, ranks_per_node=3), "ranks_per_node"),
    (dict(size=1e6, ranks=16, ranks_per_node=16), "ranks_per_node"),
])
def test_all_to_all_refuses_bad_input(bad, words):
    with pytest.raises(ValueError, match=words):
        C.all_to_all_time(cluster=H100_64, **bad)


def test_expert_parallel_all_to_all_is_exposed_unless_overlapped():
    model = dataclasses.replace(M.DEEPSEEK_V3, mtp_layers=0)  # the last stage's MTP module and second head aside
    plain = _step(model, H800, DSV3, dtype="fp8")
    overlapped = _step(model, H800, dataclasses.replace(DSV3, a2a_overlap=True), dtype="fp8")
    assert plain.ep_comm > 0.5 * plain.compute  # across 8 nodes the all-to-all rivals the compute
    # what is left is the warm-up's: under 1F1B the first rank's p - 1 warm-up forwards (and as many cool-down
    # backwards) have no other micro-batch's backward to hide behind, and one more as Megatron-Core schedules it
    # (parallelism.A2A_WARMUP): p of the m = 120 micro-batches' all-to-alls, where the compute hides the rest
    assert overlapped.ep_comm == pytest.approx(plain.ep_comm * DSV3.pp / DSV3.micro_batches, rel=0.02)
    # overlapping costs SMs: the compute runs on what the communication kernels leave
    assert overlapped.compute == pytest.approx(plain.compute / (1 - P.A2A_OVERLAP_SM_SHARE), rel=0.02)


def test_node_limited_routing_cuts_cross_node_traffic():
    free = dataclasses.replace(M.DEEPSEEK_V3, max_routed_nodes=None)  # still one copy per destination node
    plain = dataclasses.replace(free, node_dedup=False)
    only_limit = dataclasses.replace(M.DEEPSEEK_V3, node_dedup=False)
    limited, dedup, neither, limit_alone = (_step(m, H800, DSV3, dtype="fp8").ep_comm
                                            for m in (M.DEEPSEEK_V3, free, plain, only_limit))
    # 8 copies of a token across 8 nodes send 7 over the network on average; one per node, 7 (1 - (7/8)^8) = 4.56;
    # at most 4 nodes, 3.5. The limit without deduplication saves nothing
    assert limited / neither == pytest.approx(0.5, rel=0.05)
    assert limited / dedup == pytest.approx(3.5 / (7 * (1 - (7 / 8) ** 8)), rel=0.05)
    assert limit_alone == pytest.approx(neither, rel=1e-12)
    assert free.dedup_dispatch and not plain.dedup_dispatch and M.QWEN3_235B_A22B.dedup_dispatch is False


def test_an_expert_group_inside_a_node_stays_on_nvlink():
    inside = _step(M.MIXTRAL_8X7B, H100_64, MIXTRAL)
    across = _step(M.MIXTRAL_8X7B, H100_64, dataclasses.replace(MIXTRAL, ep=8, expert_tp=2, tp=2, dp=32,
                                                                sequence_parallel=True))
    assert inside.ep_comm > 0 and across.ep_comm > inside.ep_comm


def test_expert_parallelism_shards_the_expert_state():
    base = dataclasses.replace(MIXTRAL, ep=1, zero_stage=0)
    mems = [_step(M.MIXTRAL_8X7B, H100_64, dataclasses.replace(base, ep=e)).memory_total for e in (1, 2, 4, 8)]
    assert all(a > b for a, b in zip(mems, mems[1:]))
    m = M.MIXTRAL_8X7B
    routed_bytes = m.routed_expert_params * 18  # BF16 weights, FP32 gradients and Adam state (18 bytes)
    assert mems[0] - mems[3] == pytest.approx(routed_bytes * 7 / 8, rel=1e-6)


def test_the_busiest_expert_sets_the_pace_and_a_capacity_factor_caps_it():
    even = _step(M.MIXTRAL_8X7B, H100_64, MIXTRAL)
    skewed = _step(M.MIXTRAL_8X7B, H100_64, dataclasses.replace(MIXTRAL, expert_imbalance=1.5))
    capped = _step(M.MIXTRAL_8X7B, H100_64, dataclasses.replace(MIXTRAL, expert_imbalance=1.5, capacity_factor=1.1))
    assert even.compute < capped.compute < skewed.compute
    assert even.model_flops_per_step == skewed.model_flops_per_step  # MFU counts the model's FLOPs, not the wait


def test_small_experts_fed_few_tokens_are_memory_bound():
    # One micro-batch of 16 tokens on Mixtral's 8 experts: the expert weights' HBM reads, not their FLOPs, set the
    # time (a roofline per expert), so halving the tokens does not halve the expert time.
    plan = Plan(tp=1, dp=8, ep=8, micro_batch=1, global_batch=8, zero_stage=1)
    node = hw.Cluster.of_gpus(hw.DGX_H100, 8, hw.FABRICS["InfiniBand NDR"])
    t16, t8 = (_step(M.MIXTRAL_8X7B, node, plan, seq_length=s).compute for s in (16, 8))
    assert t8 > 0.9 * t16


def test_moe_flops_follow_the_active_parameters():
    st = _step(M.MIXTRAL_8X7B, H100_64, MIXTRAL)
    assert st.model_flops_per_step == pytest.approx(M.training_flops_per_token(M.MIXTRAL_8X7B) * 256 * 32_768)


def test_one_plan_path_equals_the_vectorised_path_for_experts():
    rng = np.random.default_rng(3)
    plans = []
    for _ in range(60):
        tp = int(rng.choice([1, 2]))
        ep = int(rng.choice([1, 2, 4, 8]))
        etp = int(rng.choice([1, tp]))
        dp = 64 // tp
        plans.append(Plan(tp=tp, dp=dp, ep=ep, expert_tp=etp, micro_batch=1, global_batch=dp * 4,
                          zero_stage=int(rng.integers(4)), sequence_parallel=tp > 1,
                          a2a_overlap=bool(rng.integers(2)), expert_imbalance=float(rng.choice([1.0, 1.3])),
                          recompute=str(rng.choice(["none", "selective", "full"]))))
    arrays = _as_arrays(plans)
    many = P.evaluate(M.MIXTRAL_8X7B, H100_64, **arrays, seq_length=4096, memory_check=False)
    for i, plan in enumerate(plans):
        one = P.step_time(M.MIXTRAL_8X7B, H100_64, plan, seq_length=4096, memory_check=False)
        assert one.feasible == many.feasible[i]
        for name in P.PARTS:
            assert getattr(one, name) == pytest.approx(getattr(many, name)[i], rel=1e-9, abs=1e-15), (plan, name)
        assert one.memory_total == pytest.approx(many.memory_total[i], rel=1e-9)


def test_search_covers_expert_parallelism():
    r = P.search(M.MIXTRAL_8X7B, H100_64, 256, seq_length=4096, micro_batches=(1,), context_parallel=(1,),
                 zero_stages=(1,), schedules=("1f1b",), recomputes=("none", "full"), sequence_parallel=(False, True),
                 expert_parallel=(1, 2, 4, 8))
    assert set(np.unique(r.table["ep"])) == {1, 2, 4, 8}
    best = r.best()
    assert best.ep > 1 and best.expert_tp == 1
    assert P.step_time(M.MIXTRAL_8X7B, H100_64, best, seq_length=4096).total == pytest.approx(r.table["total_s"][0])
    with pytest.raises(ValueError, match="expert_parallel"):
        P.search(M.MIXTRAL_8X7B, H100_64, 256, expert_parallel=(0,))


@pytest.mark.parametrize("field", ["expert_imbalance", "capacity_factor"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "2", True, -1.0, 0.0, [1.5]])
def test_expert_load_fields_refuse_what_is_not_a_factor(field, bad):
    with pytest.raises(ValueError, match=field):
        Plan(**{field: bad})


def test_evaluate_refuses_a_capacity_factor_below_one():
    with pytest.raises(ValueError, match="capacity_factor"):
        P.evaluate(M.MIXTRAL_8X7B, H100_64, tp=1, pp=1, dp=64, ep=8, micro_batch=1, global_batch=64,
                   capacity_factor=np.array([1.2, 0.5]))


def test_the_schedules_that_split_the_backward_in_the_step_time():
    base = Plan(tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=15_360, zero_stage=1, a2a_overlap=True,
                recompute="selective")
    steps = {s: _step(M.DEEPSEEK_V3, H800, dataclasses.replace(base, schedule=s), dtype="fp8")
             for s in ("1f1b", "zb-h1", "zb-h2", "dualpipe", "dualpipev", "zb-v")}
    one = steps["1f1b"]
    # 1F1B's warm-up and cool-down chunks run their all-to-alls alone (parallelism.A2A_WARMUP), the split-backward
    # schedules' are their own: that exposed time is not a micro-batch's
    warm = one.ep_comm - steps["zb-h2"].ep_comm
    assert warm > 0 and steps["dualpipe"].ep_comm < one.ep_comm
    per_mb = (one.total - one.bubble - one.dp_comm - one.optimizer - warm) / 120  # m = 15,360 / 128
    assert one.bubble == pytest.approx(15 * per_mb, rel=1e-9)
    assert steps["zb-h1"].bubble == pytest.approx(one.bubble / 3, rel=1e-9)  # (p - 1)(F + B - W), thirds
    assert steps["zb-h2"].bubble == 0.0
    d = steps["dualpipe"]  # its end ranks run the first and the last stage, each micro-batch half of the two
    per_mb_d = (d.total - d.bubble - d.dp_comm - d.optimizer) / 120
    assert d.bubble == pytest.approx(7 * 2 / 3 * per_mb_d, rel=1e-9)  # (p/2 - 1)(F&B + B - 3W)
    assert per_mb_d < per_mb  # the last stage (output head, MTP module) paces 1F1B; DualPipe shares it with the first
    v = steps["dualpipev"]  # its per-micro-batch work carries twice the pipeline sends
    per_mb_v = (v.total - v.bubble - v.dp_comm - v.optimizer) / 120
    assert v.bubble == pytest.approx(15 / 2 * 2 / 3 * per_mb_v, rel=1e-9)  # (p - 1)/2 (F + 2B - W)
    assert steps["zb-v"].bubble == 0.0
    # the V-shaped schedules send each micro-batch through every GPU twice, and hold one copy of the weights
    assert steps["zb-v"].pp_comm == pytest.approx(2 * one.pp_comm) and steps["dualpipev"].optimizer == one.optimizer
    assert steps["zb-v"].memory_total == pytest.approx(one.memory_total, rel=0.05)
    # memory: ZB-H2 holds 2p - 1 micro-batches on every stage, DualPipe two copies of its stage's weights
    assert steps["zb-h2"].memory_total > steps["zb-h1"].memory_total == pytest.approx(one.memory_total)
    assert steps["dualpipe"].memory_total > one.memory_total


@pytest.mark.parametrize("schedule, batch, words", [
    ("zb-h1", 128 * 8, "ZB-H1: 8 micro-batches"), ("zb-h2", 128 * 16, "ZB-H2: 16 micro-batches"),
    ("dualpipe", 128 * 31, "DualPipe: 31 micro-batches"), ("dualpipe", 128 * 33, "DualPipe: 33"),
    ("dualpipev", 128 * 31, "DualPipeV: 31 micro-batches"), ("zb-v", 128 * 24, "ZB-V: 24 micro-batches")])
def test_split_backward_schedules_need_enough_micro_batches(schedule, batch, words):
    plan = Plan(tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=batch, zero_stage=1, schedule=schedule)
    st = P.step_time(M.DEEPSEEK_V3, H800, plan)
    assert not st.feasible and words in st.reason


def test_one_plan_path_equals_the_vectorised_path_for_every_schedule():
    plans = [Plan(tp=2, pp=p, dp=64 // (2 * p), ep=e, expert_tp=1, micro_batch=1, global_batch=(64 // (2 * p)) * mb,
                  zero_stage=1, schedule=s, virtual_stages=2 if s == "interleaved" else 1, sequence_parallel=True)
             for s in ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "dualpipe", "dualpipev", "zb-v") for p in (2, 4)
             for e in (1, 8) for mb in (4, 6, 8, 12)]
    arrays = _as_arrays(plans)
    many = P.evaluate(M.MIXTRAL_8X7B, H100_64, **arrays, seq_length=4096, memory_check=False)
    assert many.feasible.any() and not many.feasible.all()
    for i, plan in enumerate(plans):
        one = P.step_time(M.MIXTRAL_8X7B, H100_64, plan, seq_length=4096, memory_check=False)
        assert one.feasible == many.feasible[i] and one.reason == many.reason[i]
        for name in P.PARTS:
            assert getattr(one, name) == pytest.approx(getattr(many, name)[i], rel=1e-9, abs=1e-15, nan_ok=True)
        if one.feasible:
            assert one.memory_total == pytest.approx(many.memory_total[i], rel=1e-9)


def test_dualpipe_keeps_two_copies_of_its_stage_weights():
    base = Plan(tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=15_360, zero_stage=1, recompute="full")
    one, dual = (_step(M.DEEPSEEK_V3, H800, dataclasses.replace(base, schedule=s), dtype="fp8")
                 for s in ("1f1b", "dualpipe"))
    assert dual.optimizer == pytest.approx(2 * one.optimizer, rel=1e-12)  # twice the weights to update
    # with full recomputation the memory is nearly all model state, and DualPipe holds it twice
    assert dual.memory_total / one.memory_total == pytest.approx(1.97, abs=0.05)  # 1.85 before the last stage held the MTP module


def test_expert_gradients_are_reduced_over_their_own_group():
    # ZeRO-2 reduce-scatters the gradients once per micro-batch, ZeRO-1 once per step: the difference is (m - 1)
    # reduce-scatters. For Mixtral nearly all of it is the experts' (96 % of the weights); a variant with tiny experts
    # keeps only the dense part.
    tiny = dataclasses.replace(M.MIXTRAL_8X7B, expert_ffn_size=16)
    plan = dataclasses.replace(MIXTRAL, global_batch=64 * 4)

    def extra(model):
        z1, z2 = (_step(model, H100_64, dataclasses.replace(plan, zero_stage=z), seq_length=4096, dp_overlap=0.0)
                  for z in (1, 2))
        return z2.dp_comm - z1.dp_comm

    assert extra(M.MIXTRAL_8X7B) - extra(tiny) > 0.9 * extra(M.MIXTRAL_8X7B) > 0


def test_hsdp_with_experts_reduces_their_gradients_where_their_state_is_sharded():
    # With shard_group=1 nothing is sharded: ZeRO-0, -1 and -2 all reduce every gradient (dense and expert) by one
    # all-reduce across the replicas, once per step. The experts' gradients used to be reduce-scattered over their
    # whole data-parallel group even where their optimizer state was sharded over shard_group ranks only.
    model = M.GPT_OSS_120B
    plans = [Plan(tp=1, pp=4, dp=16, ep=8, micro_batch=1, global_batch=256, zero_stage=z, shard_group=1)
             for z in (0, 1, 2)]
    dp = [_step(model, H100_64, p, seq_length=4096, dp_overlap=0.0).dp_comm for p in plans]
    assert dp[0] > 0 and dp == pytest.approx([dp[0]] * 3, rel=1e-12)
    # and a shard group that spans the experts' whole data-parallel group changes nothing
    whole = [_step(model, H100_64, dataclasses.replace(plans[1], shard_group=g), seq_length=4096,
                   dp_overlap=0.0).dp_comm for g in (None, 16)]
    assert whole[0] == pytest.approx(whole[1], rel=1e-12)


def test_multi_token_prediction_module_is_deepseeks_14b_on_the_last_stage():
    """DeepSeek-V3 trains with one multi-token prediction module (its report, sec. 2.2 and 4.2): 14B more weights with
    the embedding and output head it shares (sec. 1), on the last pipeline stage with that head."""
    ds = M.DEEPSEEK_V3
    assert ds.mtp_layers == 1 and ds.num_params == pytest.approx(671e9, rel=0.005)  # not in the 671B
    assert ds.mtp_params + 2 * ds.vocab_size * ds.hidden_size == pytest.approx(14e9, rel=0.05)
    none = dataclasses.replace(ds, mtp_layers=0)
    assert none.mtp_params == 0
    plan = Plan(tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=15_360, zero_stage=1, a2a_overlap=True)
    with_, without = (_step(m, H800, plan, dtype="fp8") for m in (ds, none))
    # the last stage paces 1F1B: one more block, a second head and the projection
    assert with_.compute > without.compute
    assert with_.model_flops_per_step == without.model_flops_per_step  # model FLOPs: the 671B model's
    assert with_.hardware_flops_per_step > without.hardware_flops_per_step
    # one stage holds everything: the module's share is about one block of 61 plus a head
    one = Plan(tp=1, pp=1, dp=2048, ep=64, micro_batch=1, global_batch=16_384, zero_stage=1)
    a, b = (_step(m, H800, one, dtype="fp8") for m in (ds, none))
    assert 1 + 1 / 61 < a.compute / b.compute < 1.15 and a.memory_total > b.memory_total
    many = P.evaluate(ds, H800, tp=1, pp=[1, 16], dp=[2048, 128], ep=64, micro_batch=1, global_batch=[16_384, 15_360],
                      zero_stage=1, dtype="fp8", memory_check=False)
    for i, p in enumerate((one, dataclasses.replace(plan, a2a_overlap=False))):
        s = _step(ds, H800, p, dtype="fp8")
        assert many.total[i] == pytest.approx(s.total, rel=1e-12) and many.memory_total[i] == pytest.approx(
            s.memory_total, rel=1e-12)
    with pytest.raises(ValueError, match="mtp_layers"):
        dataclasses.replace(ds, mtp_layers=-1)


@pytest.mark.parametrize("stack", [None, "megatron-core"])
def test_dualpipe_pairs_the_first_and_the_last_stage(stack):
    """DualPipe runs stage r of one direction and stage p - 1 - r of the other on rank r (DeepSeek-V3 report, sec.
    3.2.1): a heavy last stage (the output head) is shared with the first, so each micro-batch costs the end ranks
    the mean of the two, where 1F1B waits for the last."""
    model, base = M.LLAMA3_8B, Plan(tp=1, pp=4, dp=512, micro_batch=1, global_batch=4096, zero_stage=1)
    assert P.stage_layers(model.num_layers, 4) == P.StageLayers(8, 8, 8)
    whole, one, dual = (P.step_time(model, H800, p, stack=stack, memory_check=False) for p in (
        dataclasses.replace(base, pp=1, dp=2048), base, dataclasses.replace(base, schedule="dualpipe")))
    a, b = whole.compute / 2, one.compute / 8  # per micro-batch: 32 layers and the head; 8 layers and the head
    layer = (a - b) / 24
    head = b - 8 * layer
    assert head > 0.5 * layer  # a 128k vocabulary
    assert dual.compute / 8 == pytest.approx(8 * layer + head / 2, rel=1e-9)


def test_the_overlapped_all_to_all_is_exposed_in_the_warm_up_and_cool_down_chunks():
    """Megatron-Core's expert-parallel overlap pairs one micro-batch's forward with another's backward only in the
    1F1B steady phase (parallelism.A2A_WARMUP, read from Megatron-LM at b0cc270): without pipelining the first
    forward and the last backward run alone; interleaved, the first rank's 2 (p - 1) + (v - 1) p + 1 warm-up chunks
    and as many cool-down ones. Those chunks' all-to-alls are exposed whole, so the exposed time grows with the chunks
    over the m v of a step; DualPipe's overlap, its own, is left as it was."""
    from types import SimpleNamespace

    def warm(pp, v, m, schedule):
        L = SimpleNamespace(pp=np.float64(pp), v=np.float64(v), m=np.float64(m),
                            sched=np.float64(P._SCHEDULE_CODE[schedule]))
        return float(P._a2a_warmup(L, np))

    assert warm(1, 1, 64, "1f1b") == 1.0
    assert warm(8, 4, 128, "interleaved") == 2 * 7 + 3 * 8 + 1
    assert warm(2, 12, 128, "interleaved") == 2 * 1 + 11 * 2 + 1
    assert warm(16, 1, 120, "1f1b") == 16.0
    assert warm(8, 4, 2, "interleaved") == 8.0  # never more than the step's m v chunks
    assert warm(16, 1, 120, "dualpipe") == 0.0 and warm(16, 1, 120, "zb-h1") == 0.0
    # in the step: the interleaved layout pays its warm-up share of the all-to-all it would hide
    plan = Plan(tp=1, pp=8, dp=32, ep=32, micro_batch=1, global_batch=4096, zero_stage=1, schedule="interleaved",
                virtual_stages=4, recompute="none")
    cluster = hw.Cluster.of_gpus(hw.DGX_H100, 256, hw.FABRICS["InfiniBand NDR"])
    plain = _step(M.QWEN3_235B_A22B, cluster, plan)
    both = _step(M.QWEN3_235B_A22B, cluster, dataclasses.replace(plan, a2a_overlap=True))
    share = (2 * 7 + 3 * 8 + 1) / (plan.micro_batches * 4)
    assert plain.ep_comm * share * 0.99 <= both.ep_comm < plain.ep_comm * 0.5


def test_a2a_exposed_chunks_reads_a_plan():
    interleaved = Plan(tp=1, pp=8, dp=16, ep=8, micro_batch=1, global_batch=2048, schedule="interleaved",
                       virtual_stages=4, a2a_overlap=True)
    assert P.a2a_exposed_chunks(interleaved) == 2 * 7 + 3 * 8 + 1
    assert P.a2a_exposed_chunks(dataclasses.replace(interleaved, a2a_overlap=False)) == 0.0
    assert P.a2a_exposed_chunks(dataclasses.replace(interleaved, pp=1, dp=128, schedule="1f1b",
                                                    virtual_stages=1)) == 1.0
    assert P.a2a_exposed_chunks(dataclasses.replace(interleaved, schedule="dualpipe", virtual_stages=1)) == 0.0
    with pytest.raises(ValueError, match="plan"):
        P.a2a_exposed_chunks("interleaved")
