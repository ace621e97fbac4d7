"""The expert dispatch against a published all-to-all benchmark (issue 32, item 2): DeepEP's normal kernels on H800.

The published table (DeepEP README as corrected on 2025-04-22, commit 3b1045d) is shipped as data and read back
here; the model prices the same exchanges with the step-time model's all-to-all, the RDMA stage and the NVLink
forwarding stage concurrent. What it found (November 2026) is pinned: the model is faster than DeepEP's kernels on
every row, by 6-26 %, and reproduces the dip at 16 GPUs, where the NVLink forwarding, not the NIC, is the bottleneck.
"""

import dataclasses
import math

import numpy as np
import pytest

from atscale import collectives, experts as X, hardware, models, parallelism
from atscale.plan import Plan


def test_the_published_table_reads_back():
    rows = X._deepep_rows()
    assert len(rows) == 8 and {r["ep"] for r in rows} == {8, 16, 32, 64}
    got = {(r["exchange"], r["ep"]): (r["link"], r["gbps"]) for r in rows}
    # the README's table, row by row (dispatch, combine)
    assert got[("dispatch", 8)] == ("NVLink", 153.0) and got[("combine", 8)] == ("NVLink", 158.0)
    assert [got[("dispatch", e)][1] for e in (16, 32, 64)] == [43.0, 58.0, 51.0]
    assert [got[("combine", e)][1] for e in (16, 32, 64)] == [43.0, 57.0, 50.0]
    assert all(got[(x, e)][0] == "RDMA" for x in ("dispatch", "combine") for e in (16, 32, 64))


def test_destination_counts_by_hand():
    """Where the routing is a uniform draw the counts have a closed form: inside one node (top-8 of 256 experts, 32
    on each GPU) and over four nodes (each token picks all four). Over eight nodes a token picks the four whose best
    expert scores highest, and their best experts are nearly always among its eight: it reaches nearly four nodes,
    where a uniform draw of 8 among the four nodes' 128 experts would reach 3.63."""
    nodes, gpus = X._deepep_counts(8, 8)
    assert nodes == 1.0 and gpus == pytest.approx(8 * (1 - math.comb(224, 8) / math.comb(256, 8)), rel=0.01)
    nodes, gpus = X._deepep_counts(32, 8)
    assert nodes == pytest.approx(4 * (1 - math.comb(192, 8) / math.comb(256, 8)), rel=0.01)
    assert gpus == pytest.approx(32 * (1 - math.comb(248, 8) / math.comb(256, 8)), rel=0.01)
    nodes, _ = X._deepep_counts(64, 8)
    assert 3.95 < nodes <= 4.0 and nodes > 4 * (1 - math.comb(96, 8) / math.comb(128, 8)) + 0.3
    # seeded: the same counts every time, and another seed within sampling error
    assert X._deepep_counts(64, 8) == X._deepep_counts(64, 8)
    assert X._deepep_counts(64, 8, seed=1)[1] == pytest.approx(X._deepep_counts(64, 8)[1], rel=0.01)


@pytest.mark.parametrize("ep", [16, 32, 64])
def test_destination_counts_match_the_benchmarks_routing_simulated(ep):
    """The benchmark scripts' routing written out again, as they write it (a full sort, sets of owners; another seed
    and twice the tokens): random scores, the best min(nodes, 4) nodes by their best expert's score, then the best 8
    experts among those nodes'."""
    rng = np.random.default_rng(ep)
    tokens, e, g = 20_000, 256, 8
    n = ep // g
    scores = np.abs(rng.standard_normal((tokens, e))) + 1
    group = scores.reshape(tokens, n, -1).max(axis=2)
    picked = np.argsort(-group, axis=1)[:, :min(n, 4)]
    mask = np.zeros((tokens, n), bool)
    np.put_along_axis(mask, picked, True, axis=1)
    masked = np.where(np.repeat(mask, e // n, axis=1), scores, -np.inf)
    top = np.argsort(-masked, axis=1)[:, :8]
    dest_nodes = np.array([len(set(t)) for t in top // (e // n)]).mean()
    dest_gpus = np.array([len(set(t)) for t in top // (e // ep)]).mean()
    want_nodes, want_gpus = X._deepep_counts(ep, g)
    assert dest_nodes == pytest.approx(want_nodes, rel=0.01) and dest_gpus == pytest.approx(want_gpus, rel=0.01)


def test_model_against_deepeps_published_bandwidths_as_measured():
    rows = {(r.exchange, r.ep): r for r in X.deepep_comparison()}
    assert len(rows) == 8
    # measured when the comparison was added (November 2026), before anything was changed to meet it
    errors = {(16, "dispatch"): 0.249, (16, "combine"): 0.260, (32, "dispatch"): 0.102, (32, "combine"): 0.127,
              (64, "dispatch"): 0.067, (64, "combine"): 0.098, (8, "dispatch"): 0.145, (8, "combine"): 0.121}
    for (ep, x), want in errors.items():
        assert rows[(x, ep)].error == pytest.approx(want, abs=0.005), (x, ep)
    # the model is faster on every row: its links run at the ring's calibrated rates, DeepEP's kernels below them
    assert all(r.error > 0 for r in rows.values())
    # inside a node and at two nodes the NVLink stage is the slower one; from four nodes the NIC
    assert [rows[("dispatch", e)].bound for e in (8, 16, 32, 64)] == ["NVLink", "NVLink", "RDMA", "RDMA"]
    # the dip at 16 GPUs, published (43 against 58 and 51 GB/s), comes from the forwarding: the model has it too
    internode = [rows[("dispatch", e)].model for e in (16, 32, 64)]
    assert internode[0] == min(internode)
    # without forwarding the NVLink stage would carry only the token's own node's copies: at 16 GPUs the NIC would
    # bound it, at more than twice the published bandwidth
    assert rows[("dispatch", 16)].own_node_only / rows[("dispatch", 16)].published == pytest.approx(2.22, abs=0.01)
    assert rows[("dispatch", 64)].own_node_only == pytest.approx(rows[("dispatch", 64)].model)


def test_model_rows_follow_the_all_to_all_of_the_step_time_model():
    """Each stage's time is the step-time model's all-to-all of that stage's bytes (one token's FP8 dispatch: 7,168
    values, one byte each and a 4-byte scale per 128)."""
    row = next(r for r in X.deepep_comparison() if (r.exchange, r.ep) == ("dispatch", 32))
    node = hardware.node(X.DEEPEP_NODE)
    cluster = hardware.Cluster.of_gpus(node, 32, hardware.fabric("InfiniBand NDR"))
    nodes, gpus = X._deepep_counts(32, 8)
    per_token = 7168 * (1 + 4 / 128)
    # through the NIC: 3/4 of the n copies (its own node's stays), to the 3 other nodes; one group rank per node
    want = collectives.all_to_all_time(4096 * nodes * per_token, 4, cluster, ranks_per_node=1)
    assert row.rdma_seconds == pytest.approx(want, rel=1e-9)
    assert row.model == pytest.approx(4096 * nodes * per_token / max(row.rdma_seconds, row.nvlink_seconds))
    assert row.nvlink_seconds > 0 and gpus > nodes


def test_step_time_forwards_what_arrives_over_the_network():
    """A deduplicating dispatch over two nodes: over NVLink each GPU sends its own node's copies and forwards the
    other node's, twice the own node's count (``_local_copies``), beside one copy per other node through its NIC."""
    seen = []
    real = collectives._all_to_all

    def spy(on, off, inside, nodes, up, rail, xp=np):
        seen.append((float(on), float(off), float(inside), float(nodes)))
        return real(on, off, inside, nodes, up, rail, xp)

    model = models.model("DeepSeek-V3")
    assert model.dedup_dispatch
    cluster = hardware.Cluster.of_gpus(hardware.node(X.DEEPEP_NODE), 16, hardware.fabric("InfiniBand NDR"))
    plan = Plan(tp=1, pp=1, dp=16, micro_batch=1, global_batch=16, ep=16)
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(collectives, "_all_to_all", spy)
        mp.setattr(parallelism, "_LAYERS", {})
        parallelism.step_time(model, cluster, plan, seq_length=4096, memory_check=False)
    finally:
        mp.undo()
    on, off, inside, nodes = next(s for s in seen if s[3] == 2.0 and s[2] == 8.0)
    k, e = float(model.experts_per_token), float(model.num_experts)
    local = parallelism._local_copies(k, e, 8.0, 16.0, True, np)
    remote = parallelism._remote_copies(k, 2.0, float(model.max_routed_nodes), np, dedup=True)
    assert on / off == pytest.approx(2 * local / remote, rel=1e-9)


def test_the_chart_draws_every_row_and_refuses_other_input():
    from atscale import plots

    fig = plots.deepep_chart()
    dispatch, combine = fig.axes[:2]
    # per panel: four published squares, four modelled circles, and the one hollow circle where forwarding matters
    assert [len(c.get_offsets()) for c in dispatch.collections] == [4, 4, 1]
    assert [t.get_text() for t in dispatch.get_xticklabels()] == ["8\n(NVLink)", "16\n(RDMA)", "32\n(RDMA)",
                                                                  "64\n(RDMA)"]
    assert "GB/s" in dispatch.get_ylabel() and combine.get_title().startswith("combine")
    for bad in (None.__class__, [], "rows", 3.0, [object()]):
        with pytest.raises(ValueError, match="DispatchBenchmark"):
            plots.deepep_chart(bad)


def test_link_shares_are_deepeps_wire_rates_over_the_models():
    rows = X.deepep_comparison()
    nvlink, network = X.deepep_link_shares()
    inside = [r for r in rows if r.nodes == 1]
    across = [r for r in rows if r.nodes > 1 and r.bound == "RDMA"]
    assert len(inside) == 2 and len(across) == 4  # 16 GPUs is NVLink-bound in the model: not a NIC reading
    assert nvlink == pytest.approx(np.mean([r.published * 7 / 8 / r.nvlink_rate for r in inside]), rel=1e-12)
    assert network == pytest.approx(np.mean([r.published * (r.nodes - 1) / r.nodes / r.network_rate for r in across]),
                                    rel=1e-12)
    # as measured (November 2026): DeepEP moves 87 % of the model's NVLink rate and 90 % of its NIC's
    assert (round(nvlink, 3), round(network, 3)) == (0.868, 0.900)


def test_the_all_to_all_shares_slow_only_the_expert_all_to_alls():
    from atscale import calibration, runs

    base = calibration.CALIBRATION
    half = dataclasses.replace(base, a2a_nvlink_share=0.5, a2a_network_share=0.5)
    # one pipeline stage, the all-to-all inside one node and not overlapped: it doubles but for its latency
    moe = next(r for r in runs.MOE_RUNS + runs.MOE_FURTHER_RUNS if r.label == "Qwen3-30B-A3B, 8 H100, BF16, FSDP")
    assert moe.plan.pp == 1 and not moe.plan.a2a_overlap and moe.plan.ep * moe.plan.etp <= 8
    a, b = moe.step(operators=True), moe.step(half, operators=True)
    assert 1.9 * a.ep_comm < b.ep_comm <= 2.0 * a.ep_comm
    assert (b.compute, b.tp_comm, b.dp_comm, b.pp_comm) == (a.compute, a.tp_comm, a.dp_comm, a.pp_comm)
    dense = next(r for r in runs.ALL_RUNS if not r.model.is_moe and r.role == "validation")
    assert dense.step(half, operators=True) == dense.step(operators=True)
    for bad in (0.0, -0.1, 2.0, float("nan"), "1"):
        with pytest.raises(ValueError, match="a2a_nvlink_share"):
            dataclasses.replace(base, a2a_nvlink_share=bad)
        with pytest.raises(ValueError, match="a2a_network_share"):
            dataclasses.replace(base, a2a_network_share=bad)


def test_a2a_rate_sensitivity_as_measured():
    """At DeepEP's shares the experts' median moves by about a point and the worst run hardly at all: the link rates
    are not what keeps issue 32's targets out of reach (November 2026)."""
    from atscale import accuracy

    got = accuracy.a2a_rate_sensitivity()
    # 16 runs, median 0.158 (0.149 at the shares) before the four long-context rows of the Qwen3-235B table
    # (November 2026); 20 runs, median 0.151 (0.147), worst 0.431 (0.424, the Qwen3-235B TP 4 row) and largest move
    # DeepSeek-V3 on 512 H100's 0.035 before Megatron-Bridge 26.02's two FP8 rows: Qwen3-30B-A3B's -62 % is the worst
    # at either rate (its all-to-all hidden), Qwen3-235B's moves most (the all-to-all dispatcher over 32 GPUs)
    # (22 runs, median 0.158 and 0.147 at the shares, before Megatron-Bridge's gpt-oss rows on Blackwell; median
    # 0.162 and worst 0.619 before each local expert's GEMMs and FP8 casts counted as kernels, EXPERT_LAUNCHES; worst
    # 0.565 and 0.537 while those kernels cost the host a PyTorch call's time each, without and with the dispatch's
    # host wait, DISPATCH_SYNC)
    # (24 runs, median 0.159 and 0.151 at the shares, before seven further runs: Pai-Megatron-Patch on H800 and
    # Megatron-Bridge's eager Qwen3-30B-A3B)
    # (31 runs, median 0.157 and 0.149, before Megatron-LM's three MoE recipes on H100; 34 runs, median 0.159 and
    # 0.151, before the six rows of NVIDIA's MoE report; 40 runs, median 0.149 and 0.140, before its three GB300 rows)
    assert got.runs == 43 and (got.nvlink_share, got.network_share) == X.deepep_link_shares()
    assert got.median == pytest.approx(0.146, abs=0.005) and got.median_at_shares == pytest.approx(0.140, abs=0.005)
    assert got.worst == pytest.approx(0.586, abs=0.005) and got.worst_at_shares == pytest.approx(0.586, abs=0.005)
    assert got.moved == "Qwen3-235B-A22B, 256 H100, FP8, Megatron-Bridge 26.02"
    assert got.largest_move == pytest.approx(0.065, abs=0.005)
    assert got.median_at_shares > 0.10 and got.worst_at_shares > 0.20  # the targets stay missed
