"""Multi-tier fabrics (issue 33, item 1): the tiers in the catalog, the collectives priced by the tiers a group
crosses, and the step time on a tiered fabric. An untiered fabric must price exactly as before."""

import dataclasses

import numpy as np
import pytest

from atscale import collectives as c
from atscale import hardware as hw
from atscale import models, parallelism
from atscale.plan import Plan

META = hw.fabric("RoCE 400G (Llama 3 cluster)")
SUPERPOD = hw.fabric("InfiniBand NDR (DGX SuperPOD)")
MEGASCALE = hw.fabric("RoCE 200G (MegaScale)")
FLAT = hw.fabric("RoCE 400G")


def _cluster(fabric, gpus=16384, node=hw.DGX_H100):
    return hw.Cluster.of_gpus(node, gpus, fabric)


def _tapered(oversubscription, fabric=META):
    """``fabric`` with its top tier's oversubscription replaced."""
    top = dataclasses.replace(fabric.tiers[-1], oversubscription=oversubscription)
    return dataclasses.replace(fabric, name=f"{fabric.name} {oversubscription}:1", tiers=fabric.tiers[:-1] + (top,))


def _one_tier(fabric=FLAT):
    """``fabric`` as one tier of full bisection over any cluster, adding no latency: the untiered model in tiers."""
    return dataclasses.replace(fabric, name=f"{fabric.name} one tier",
                               tiers=(hw.FabricTier("switch", 2**20, 1.0, 0.0),))


# --- the catalog ---------------------------------------------------------------------------------------
def test_meta_llama3_cluster_is_pods_of_3072_with_a_7_to_1_taper_above():
    assert [t.domain for t in META.tiers] == [16, 3072, 24576]
    assert [t.oversubscription for t in META.tiers] == [1.0, 1.0, 7.0]
    assert META.tapers == (1.0, 1.0, 7.0)
    assert META.bandwidth == FLAT.bandwidth and META.latency == FLAT.latency
    assert "1:7" in META.tiers[-1].sources["oversubscription"] and "3,072" in META.tiers[1].sources["domain"]
    assert not any(t.rail_optimised for t in META.tiers)  # top-of-rack switches, not rails


def test_superpod_and_megascale_are_rail_optimised_without_taper():
    assert SUPERPOD.tiers[0].domain == hw.SCALABLE_UNIT_NODES * hw.DGX_H100.gpus and SUPERPOD.tiers[0].rail_optimised
    assert set(SUPERPOD.tapers) == {1.0} and set(MEGASCALE.tapers) == {1.0}
    assert MEGASCALE.bandwidth == pytest.approx(25e9) and MEGASCALE.tiers[0].domain == 64 * 8
    assert "1:1" in MEGASCALE.tiers[1].sources["oversubscription"]
    for fabric in hw.TIERED_FABRICS:
        assert hw.FABRICS[fabric.name] is fabric
        assert fabric.sources["tiers"] and all(t.sources.get("domain") for t in fabric.tiers)


def test_untiered_catalog_entries_keep_no_tiers():
    assert all(not f.tiers for name, f in hw.FABRICS.items() if f not in hw.TIERED_FABRICS)
    assert len(hw.fabric_tier_table().rows) == sum(len(f.tiers) for f in hw.TIERED_FABRICS)


# --- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, word", [
    (dict(domain=1), "domain"), (dict(domain=2.5), "domain"), (dict(oversubscription=0.5), "oversubscription"),
    (dict(oversubscription=float("nan")), "oversubscription"), (dict(latency=-1e-6), "latency"),
    (dict(rail_optimised=1), "rail_optimised"), (dict(name=""), "name")])
def test_bad_tier_names_its_argument(kw, word):
    with pytest.raises(ValueError, match=word):
        hw.FabricTier(**{**dict(name="leaf", domain=256), **kw})


def test_bad_tiers_are_refused():
    leaf, spine = hw.FabricTier("leaf", 256), hw.FabricTier("spine", 1000)
    with pytest.raises(ValueError, match=r"tiers\[1\].domain=1000"):
        dataclasses.replace(FLAT, tiers=(leaf, spine))
    with pytest.raises(ValueError, match="larger multiple"):
        dataclasses.replace(FLAT, tiers=(leaf, leaf))
    with pytest.raises(ValueError, match="tuple of atscale.hardware.FabricTier"):
        dataclasses.replace(FLAT, tiers=leaf)
    with pytest.raises(ValueError, match="scale-out"):
        dataclasses.replace(hw.fabric("NVLink 4"), tiers=(leaf,))
    with pytest.raises(ValueError, match="whole number"):
        hw.Cluster.of_gpus(hw.DGX_H100, 64, dataclasses.replace(FLAT, tiers=(hw.FabricTier("half", 4),)))


def test_bad_group_arguments_name_themselves():
    cl = _cluster(META)
    with pytest.raises(ValueError, match="span"):
        c.tiered_time("all-reduce", 1e9, 128, cl, ranks_per_node=1, span=64)
    with pytest.raises(ValueError, match="ranks"):
        c.tiered_time("all-reduce", 1e9, 32768, cl)
    with pytest.raises(ValueError, match="op="):
        c.tiered_time("all-to-all", 1e9, 128, cl)
    with pytest.raises(ValueError, match="ranks_per_node"):
        c.tiered_time("all-reduce", 1e9, 12, cl, ranks_per_node=8)
    with pytest.raises(ValueError, match="cluster"):
        c.send_time(1e9, 8, META)


# --- collectives across tiers ---------------------------------------------------------------------------
def test_an_untiered_fabric_prices_as_the_one_switch_hierarchy():
    flat = _cluster(FLAT, 1024)
    for op in ("all-reduce", "reduce-scatter", "all-gather"):
        assert c.tiered_time(op, 1e9, 1024, flat) == c.hierarchical_time(op, 1e9, flat)
    p = c.tiered_phases("all-reduce", 1e9, 1024, flat)
    assert p.levels == ("node", "network") and p.crossed == "network"


def test_a_group_inside_one_pod_never_pays_the_taper():
    for span in (16, 256, 3072):
        ranks = span // 8
        t = [c.tiered_time("all-reduce", 2e9, ranks, _cluster(_tapered(o)), ranks_per_node=1, span=span)
             for o in (1.0, 7.0, 50.0)]
        assert t[0] == t[1] == t[2]
        assert c.tiered_phases("all-reduce", 2e9, ranks, _cluster(META), ranks_per_node=1, span=span).crossed != \
            "aggregation"


def test_cost_grows_with_oversubscription_once_the_group_crosses_pods():
    o = [1.0, 2.0, 4.0, 7.0, 16.0]
    t = [c.tiered_time("reduce-scatter", 1e9, 128, _cluster(_tapered(x)), ranks_per_node=1, span=16384) for x in o]
    assert np.all(np.diff(t) > 0)
    p = c.tiered_phases("reduce-scatter", 1e9, 128, _cluster(META), ranks_per_node=1, span=16384)
    assert p.crossed == "aggregation" and p.members == (1.0, 1.0, 24.0, 128.0)
    assert p.bandwidth[-1] == pytest.approx(p.bandwidth[1] / 7)
    assert p.total == pytest.approx(sum(p.seconds))


def test_without_taper_the_bytes_telescope_to_the_flat_ring():
    # the bandwidth term of a tiered hierarchy equals the flat ring's; only the latency terms differ
    no_taper = _cluster(_tapered(1.0))
    big, small = 64e9, 32e9
    tiered = c.tiered_time("all-reduce", big, 2048, no_taper) - c.tiered_time("all-reduce", small, 2048, no_taper)
    flat = c.tiered_time("all-reduce", big, 2048, _cluster(FLAT)) - c.tiered_time("all-reduce", small, 2048,
                                                                                  _cluster(FLAT))
    assert tiered == pytest.approx(flat, rel=1e-9)


def test_tiered_time_is_vectorised_over_size():
    sizes = np.logspace(3, 10, 8)
    cl = _cluster(META)
    t = c.tiered_time("all-gather", sizes, 512, cl, ranks_per_node=1, span=16384)
    assert t.shape == sizes.shape and np.all(np.diff(t) > 0)
    assert t[3] == pytest.approx(c.tiered_time("all-gather", sizes[3], 512, cl, ranks_per_node=1, span=16384))


def test_send_time_takes_the_highest_tier_crossed():
    cl, flat = _cluster(META), _cluster(FLAT)
    d = np.array([1, 8, 16, 3072])
    t, f = c.send_time(1e9, d, cl), c.send_time(1e9, d, flat)
    assert t[0] == f[0] and t[1] == f[1]  # NVLink; then the rack switch, as the one switch
    assert t[2] > f[2] and t[3] > 5 * f[3]  # the pod tier's latency; across pods a seventh of the bandwidth


def test_all_to_all_pays_the_taper_only_for_the_bytes_leaving_the_pod():
    meta, flat = _cluster(META), _cluster(FLAT)
    inside = c.all_to_all_time(1e9, 256, meta, ranks_per_node=8)  # 32 nodes, two racks... inside one pod
    assert inside == c.all_to_all_time(1e9, 256, flat, ranks_per_node=8)
    wide = c.all_to_all_time(1e9, 1024, meta, ranks_per_node=1, span=8192)
    assert wide > 3 * c.all_to_all_time(1e9, 1024, flat, ranks_per_node=1)
    # the same pricing for an untiered fabric whatever span says
    assert c.all_to_all_time(1e9, 1024, flat, ranks_per_node=1, span=8192) == \
        c.all_to_all_time(1e9, 1024, flat, ranks_per_node=1)


# --- the step time ------------------------------------------------------------------------------------
PLANS = [
    Plan(tp=8, pp=16, dp=128, micro_batch=1, global_batch=2048, zero_stage=1, schedule="interleaved",
         virtual_stages=4, sequence_parallel=True),
    Plan(tp=8, pp=4, dp=64, cp=2, micro_batch=1, global_batch=512, zero_stage=3, shard_group=16),
    Plan(tp=8, pp=8, dp=16, cp=16, micro_batch=1, global_batch=64, zero_stage=1, cp_algorithm="all-gather"),
    Plan(tp=8, pp=1, dp=64, micro_batch=2, global_batch=512, zero_stage=2),
]


def _step(fabric, plan, model=models.LLAMA3_405B, **kw):
    """The step time, memory aside (these tests are about the network)."""
    return parallelism.step_time(model, _cluster(fabric, plan.gpus), plan, seq_length=8192, memory_check=False, **kw)


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: p.describe())
def test_one_untapered_tier_over_everything_prices_exactly_as_untiered(plan):
    a, b = _step(FLAT, plan), _step(_one_tier(), plan)
    for part in parallelism.PARTS:
        assert getattr(b, part) == pytest.approx(getattr(a, part), rel=1e-12, abs=1e-15), part


def test_the_untiered_step_time_is_the_model_before_tiers():
    # the untiered path is the code as it was: a fabric given tiers=() explicitly is the catalog entry itself
    plan = PLANS[0]
    assert dataclasses.replace(FLAT, tiers=()) == FLAT
    assert _step(dataclasses.replace(FLAT, tiers=()), plan).total == _step(FLAT, plan).total


def test_dp_comm_grows_with_the_taper_and_step_and_evaluate_agree():
    plan = PLANS[0]
    dp = [_step(_tapered(o), plan).dp_comm for o in (1.0, 7.0, 20.0)]
    assert dp[0] < dp[1] < dp[2]
    st = _step(META, plan)
    ev = parallelism.evaluate(models.LLAMA3_405B, _cluster(META, plan.gpus), tp=[8, 8], pp=[16, 16], dp=[128, 128],
                              micro_batch=1, global_batch=2048, zero_stage=1, schedule="interleaved",
                              virtual_stages=4, sequence_parallel=True, seq_length=8192, memory_check=False)
    assert ev.dp_comm[0] == pytest.approx(st.dp_comm, rel=1e-12) and ev.total[1] == pytest.approx(st.total)


def test_a_job_inside_one_pod_is_untouched_by_the_taper():
    plan = Plan(tp=8, pp=16, dp=16, micro_batch=1, global_batch=512, zero_stage=1)  # 2,048 GPUs < 3,072
    assert _step(_tapered(1.0), plan).total == _step(_tapered(7.0), plan).total


def test_an_expert_group_inside_a_pod_is_untouched_by_the_taper():
    # the ep group is ep x expert_tp consecutive GPUs: 256 of them sit inside one 3,072-GPU pod
    plan = Plan(tp=1, pp=16, dp=512, ep=256, micro_batch=1, global_batch=4096, zero_stage=1)
    t = [parallelism.step_time(models.DEEPSEEK_V3, _cluster(_tapered(o), 8192), plan, seq_length=4096,
                               memory_check=False) for o in (1.0, 7.0)]
    assert t[0].ep_comm > 0 and t[0].ep_comm == t[1].ep_comm
    assert t[0].dp_comm <= t[1].dp_comm  # the experts' data-parallel gradients do cross pods


# --- placement and the figures' data -------------------------------------------------------------------
def test_meta_order_puts_data_parallelism_across_pods_and_megatron_order_the_pipeline():
    plan = Plan(tp=8, pp=16, dp=128, micro_batch=1, global_batch=2048)
    meta = c.dimension_tiers(plan, _cluster(META))
    assert dict(zip(meta.dims, meta.crossed)) == {"TP": "node", "CP": "none", "PP": "pod", "DP": "aggregation"}
    assert meta.spans == (8, 8, 128, 16384) and meta.levels == ("node", "rack", "pod", "aggregation")
    megatron = c.dimension_tiers(plan, _cluster(META), order="tp-cp-dp-pp")
    assert dict(zip(megatron.dims, megatron.crossed))["PP"] == "aggregation"
    assert dict(zip(megatron.dims, megatron.crossed))["DP"] == "pod"
    flat = c.dimension_tiers(plan, _cluster(FLAT))
    assert flat.levels == ("node", "network") and flat.crossed[-1] == "network"
    with pytest.raises(ValueError, match="order"):
        c.dimension_tiers(plan, _cluster(META), order="dp-tp")
    with pytest.raises(ValueError, match="needs 16,384 GPUs"):
        c.dimension_tiers(plan, _cluster(META, 8192))


def test_tier_sweep_shows_the_taper_only_past_the_pod():
    no_taper = dataclasses.replace(_tapered(1.0), name="RoCE 400G (Llama 3 cluster, no taper)")
    s = c.tier_sweep("reduce-scatter", 1e10, [no_taper, META])
    assert s.boundaries == (("rack", 16), ("pod", 3072)) and s.spans[-1] == 24576
    inside = s.spans <= 3072
    assert np.array_equal(s.seconds[0][inside], s.seconds[1][inside])
    assert np.all(s.seconds[1][~inside] > s.seconds[0][~inside])
    with pytest.raises(ValueError, match="fabrics"):
        c.tier_sweep("reduce-scatter", 1e10, "RoCE 400G")
    with pytest.raises(ValueError, match="stride"):
        c.tier_sweep("reduce-scatter", 1e10, [META], stride=3)


@pytest.mark.parametrize("plan", [
    Plan(tp=8, pp=8, dp=64, ep=64, expert_tp=1, micro_batch=1, global_batch=4096, zero_stage=1),
    Plan(tp=1, pp=1, dp=1024, ep=256, expert_tp=1, micro_batch=1, global_batch=4096, zero_stage=3,
         shard_group=64),
], ids=lambda p: p.describe())
def test_one_untapered_tier_prices_a_mixture_of_experts_as_untiered(plan):
    # the experts' all-to-all and their own data-parallel group take the tiered path too. (Where tp < 8 and pp > 1
    # the two orders put different ranks in a node, so the comparison holds only where they agree: see below.)
    a = parallelism.step_time(models.DEEPSEEK_V3, _cluster(FLAT, plan.gpus), plan, seq_length=4096,
                              memory_check=False)
    b = parallelism.step_time(models.DEEPSEEK_V3, _cluster(_one_tier(), plan.gpus), plan, seq_length=4096,
                              memory_check=False)
    assert a.ep_comm > 0 and a.dp_comm > 0
    for part in parallelism.PARTS:
        assert getattr(b, part) == pytest.approx(getattr(a, part), rel=1e-12, abs=1e-15), part


def test_on_a_tiered_fabric_data_parallelism_is_outermost_down_to_the_node():
    # tp = 1, pp = 16: Meta's order puts a pipeline's stages in a node, so a data-parallel group has one GPU per
    # node and every byte of its reduction crosses the NICs, where Megatron's order (the untiered model) puts 8 of
    # its members in each node
    plan = Plan(tp=1, pp=16, dp=64, micro_batch=1, global_batch=1024, zero_stage=1)
    place = c.dimension_tiers(plan, _cluster(_one_tier(), plan.gpus))
    assert dict(zip(place.dims, place.strides))["DP"] == 16
    flat, tiered = (_step(f, plan, model=models.LLAMA3_70B, dp_overlap=0.0) for f in (FLAT, _one_tier()))
    assert tiered.dp_comm > flat.dp_comm


# --- the rank order as part of a plan (Plan.order) ------------------------------------------------------------
_L3 = Plan(tp=8, pp=16, dp=128, micro_batch=1, global_batch=2048, zero_stage=1, schedule="interleaved",
           virtual_stages=8, sequence_parallel=True, account_for_embedding=True, account_for_loss=True)


def _l3_step(order, fabric=META):
    return parallelism.step_time(models.LLAMA3_405B, _cluster(fabric), dataclasses.replace(_L3, order=order),
                                 seq_length=8192, memory_check=False, dp_overlap=0.0)


def test_plan_order_is_checked_and_shown():
    assert Plan().order is None and "ranks ordered" not in str(Plan())
    assert "ranks ordered tp-cp-pp-dp" in str(Plan(order="tp-cp-pp-dp"))
    with pytest.raises(ValueError, match="order"):
        Plan(order="dp-tp")
    assert c.PLACEMENT_ORDERS == ("tp-cp-pp-dp", "tp-cp-dp-pp")


def test_the_default_order_follows_the_network():
    """No order named: data parallelism outermost on a tiered fabric (as Meta places Llama 3), Megatron-Core's
    order on one switch; a named order wins. The step time prices what placement_order says."""
    assert c.placement_order(_L3, _cluster(META)) == "tp-cp-pp-dp"
    assert c.placement_order(_L3, _cluster(FLAT)) == "tp-cp-dp-pp"
    assert c.placement_order(dataclasses.replace(_L3, order="tp-cp-dp-pp"), _cluster(META)) == "tp-cp-dp-pp"
    assert _l3_step(None).total == _l3_step("tp-cp-pp-dp").total
    assert _l3_step(None, FLAT).total == _l3_step("tp-cp-dp-pp", FLAT).total
    assert c.dimension_tiers(_L3, _cluster(META)) == c.dimension_tiers(_L3, _cluster(META), order="tp-cp-pp-dp")


def test_megatron_order_on_meta_cluster_sends_the_pipeline_across_the_taper():
    """Llama 3 405B on 16,384 GPUs of Meta's cluster. Megatron-Core's order keeps each data-parallel group (128
    members 8 apart, 1,024 GPUs) inside one pod, so its reduction is cheaper, but spreads every pipeline over the
    whole job: neighbouring stages are 1,024 ranks apart, a third of the pairs straddle two pods (pods of 3,072),
    and the stage boundaries that do share the 7:1 aggregation tier, 7/3 times slower than the NIC. With every send
    blocking (this plan's) the step is slower overall; with the sends asynchronous, as Llama 3's were, the order
    costs the pipeline little (the next test)."""
    meta, megatron = _l3_step("tp-cp-pp-dp"), _l3_step("tp-cp-dp-pp")
    assert megatron.dp_comm < meta.dp_comm
    assert megatron.pp_comm > 2.0 * meta.pp_comm
    assert megatron.total > meta.total
    # the straddling sends run at the NIC's rate over 7 x 1/3: the pipeline's sends as priced by hand
    size = 8192 * models.LLAMA3_405B.hidden_size * parallelism.ACTIVATION_BYTES / 8
    rail = c.link_cost(FLAT)
    one = rail.base + rail.hop + META.tiers[1].latency + META.tiers[2].latency + size / (rail.rate / (7 / 3))
    assert megatron.pp_comm == pytest.approx(2 * 8 * 16 * one, rel=1e-9)


def test_with_llama3s_asynchronous_sends_the_two_orders_come_within_a_point():
    """The published run (its record: the sends asynchronous, as the paper's sec. 3.3.2 states; gradient reduction
    overlapped): Megatron-Core's order still sends the pipeline across the taper, but what stays exposed grows by
    tens of milliseconds, not hundreds, and the cheaper data-parallel reduction inside the pods outweighs it, by
    half a point of MFU (as measured, November 2026; the collectives chapter says so)."""
    from atscale import runs

    run = next(r for r in runs.ALL_RUNS if r.label == "Llama 3 405B, 16,384 H100")
    assert run.plan.pp_overlap
    ordered = {o: dataclasses.replace(run, plan=dataclasses.replace(run.plan, order=o)) for o in c.PLACEMENT_ORDERS}
    meta, megatron = (ordered[o].step() for o in ("tp-cp-pp-dp", "tp-cp-dp-pp"))
    assert megatron.pp_comm - meta.pp_comm < 0.05 and megatron.dp_comm < meta.dp_comm
    assert ordered["tp-cp-dp-pp"].predict() - ordered["tp-cp-pp-dp"].predict() == pytest.approx(0.0045, abs=0.001)


def test_a_pipeline_inside_one_node_sends_on_nvlink_and_one_across_nodes_on_the_nics():
    """On one switch: with data parallelism outermost, TP 4 x PP 2 fills a node, so every pipeline's sends stay on
    NVLink; in Megatron-Core's order the same pipeline spans the job and its middle boundary crosses nodes."""
    plan = Plan(tp=4, pp=2, dp=16, micro_batch=1, global_batch=256, zero_stage=1)
    cl = _cluster(FLAT, 128)
    st = {o: parallelism.step_time(models.LLAMA3_8B, cl, dataclasses.replace(plan, order=o), seq_length=8192,
                                   memory_check=False, dp_overlap=0.0) for o in c.PLACEMENT_ORDERS}
    assert st["tp-cp-pp-dp"].pp_comm < st["tp-cp-dp-pp"].pp_comm / 3
    assert st["tp-cp-pp-dp"].dp_comm > st["tp-cp-dp-pp"].dp_comm  # its data-parallel groups leave the node
    # Megatron-Core's order, a pipeline inside the node only when the whole job is one node
    one_node = dataclasses.replace(plan, dp=1, global_batch=16, order="tp-cp-dp-pp")
    nvlink = parallelism.step_time(models.LLAMA3_8B, _cluster(FLAT, 8), one_node, seq_length=8192,
                                   memory_check=False).pp_comm
    assert one_node.micro_batches == plan.micro_batches
    assert nvlink == pytest.approx(st["tp-cp-pp-dp"].pp_comm, rel=1e-12)


def test_rank_groups_follow_the_order():
    plan = Plan(tp=2, pp=4, dp=8)
    tp, dp, pp, node = parallelism.rank_groups(plan, order="tp-cp-pp-dp")
    assert list(pp[:8]) == [0, 0, 1, 1, 2, 2, 3, 3] and list(dp[:8]) == [0] * 8 and dp[8] == 1
    assert np.array_equal(np.bincount(dp), [8] * 8) and np.array_equal(np.bincount(pp), [16] * 4)
    default = parallelism.rank_groups(plan)
    assert list(dp[:8]) != list(default[1][:8]) and list(default[1][:4]) == [0, 0, 1, 1]
    assert np.array_equal(parallelism.rank_groups(dataclasses.replace(plan, order="tp-cp-pp-dp"))[2], pp)
    with pytest.raises(ValueError, match="order"):
        parallelism.rank_groups(plan, order="pp-dp")


def test_rank_map_explorer_places_the_layout_on_a_network():
    from atscale import plots
    from atscale.widgets import parallelism as wp

    view = wp.rank_map_view(8, 16, 128, "pp", order="tp-cp-dp-pp", network="RoCE 400G (Llama 3 cluster)")
    plan, placement = view[0], view[4]
    assert plan.order == "tp-cp-dp-pp" and placement.order == "tp-cp-dp-pp"
    assert dict(zip(placement.dims, placement.crossed))["PP"] == "aggregation"
    fig = plots.RankMapFigure()
    fig.png(view)
    assert "PP aggregation" in fig._current.tiers_line() and "PP outermost" in fig._current.title()
    meta = wp.rank_map_view(8, 16, 128, "dp", order="tp-cp-pp-dp", network="RoCE 400G (Llama 3 cluster)")
    fig.png(meta)
    assert "DP aggregation" in fig._current.tiers_line() and "PP pod" in fig._current.tiers_line()
    assert set(wp.RANK_MAP_NETWORKS.values()) <= set(hw.FABRICS)
    with pytest.raises(ValueError, match="order"):
        wp.rank_map_view(order="dp-first")


def test_megascale_records_say_how_their_unstated_rank_order_moves_them():
    """MegaScale does not state the Megatron-LM baseline's rank order: its records take the step time's default on a
    tiered fabric and say that Megatron-LM's own order moves the MFU by at most 0.02 points, which holds."""
    from atscale import runs

    for r in runs.MEGASCALE_RUNS:
        assert "rank order is not stated" in r.assumed and r.plan.order is None
        megatron = dataclasses.replace(r, plan=dataclasses.replace(r.plan, order="tp-cp-dp-pp"))
        for ops in (False, True):
            assert abs(megatron.points(operators=ops) - r.points(operators=ops)) <= 0.0002


def test_the_experts_data_parallel_group_follows_the_rank_order():
    """DeepSeek-V3 on 8,192 GPUs of Meta's cluster, 16 stages of 512 GPUs. With data parallelism outermost, an
    expert's replicas (one per EP group of a stage) spread over the whole job and cross the 7:1 taper; in
    Megatron-Core's order they stay inside one stage's 512 consecutive GPUs, inside one pod, where the taper never
    applies."""
    plan = Plan(tp=1, pp=16, dp=512, ep=256, micro_batch=1, global_batch=4096, zero_stage=1)

    def dp_comm(fabric, order):
        return parallelism.step_time(models.DEEPSEEK_V3, _cluster(fabric, 8192), dataclasses.replace(plan, order=order),
                                     seq_length=4096, memory_check=False, dp_overlap=0.0).dp_comm

    meta = [dp_comm(_tapered(o), "tp-cp-pp-dp") for o in (1.0, 7.0)]
    megatron = [dp_comm(_tapered(o), "tp-cp-dp-pp") for o in (1.0, 7.0)]
    assert meta[1] > meta[0]  # data parallelism outermost: the taper costs
    assert megatron[1] == megatron[0]  # Megatron-Core's order: every data-parallel group inside a pod
    assert megatron[1] < meta[1]


@pytest.mark.parametrize("tp, pp, dp", [(1, 1, 1), (1, 1, 4), (2, 1, 2), (1, 16, 1), (8, 16, 128)])
def test_rank_map_explorer_places_any_layout_of_its_controls(tp, pp, dp):
    """Layouts smaller than a node, or not a whole number of nodes, sit in whole nodes of the network."""
    from atscale.widgets import parallelism as wp

    for network in wp.RANK_MAP_NETWORKS.values():
        placement = wp.rank_map_view(tp, pp, dp, "pp", network=network)[4]
        assert dict(zip(placement.dims, placement.sizes))["PP"] == pp
