import numpy as np
import pytest

from atscale import collectives as c
from atscale import hardware
from atscale import units as u
from atscale.scenario import RUNNING_EXAMPLE

CALIBRATION_TOLERANCE = 0.10
"""The calibration measurements are reproduced within 10% (the chapter states this figure)."""


@pytest.mark.parametrize("op, factor", [("all-reduce", 2 * 7 / 8), ("reduce-scatter", 7 / 8), ("all-gather", 7 / 8),
                                        ("all-to-all", 7 / 8), ("broadcast", 1.0)])
def test_bus_bandwidth_factors_are_nccl_tests(op, factor):
    assert c.bus_bandwidth_factor(op, 8) == pytest.approx(factor)
    assert c.bus_bandwidth(op, 8e9, 8, 0.1) == pytest.approx(80e9 * factor)
    assert c.algorithm_bandwidth(8e9, 0.1) == pytest.approx(80e9)


@pytest.mark.parametrize("n", [2, 3, 8, 64, 1024])
def test_ring_all_reduce_sends_2_n_minus_1_over_n(n):
    m = 1e9
    assert c.bytes_sent_per_rank("all-reduce", m, n) == pytest.approx(2 * (n - 1) / n * m)
    assert c.bytes_sent_per_rank("reduce-scatter", m, n) == pytest.approx((n - 1) / n * m)
    assert c.bytes_sent_per_rank("all-gather", m, n) + c.bytes_sent_per_rank("reduce-scatter", m, n) == \
        pytest.approx(c.bytes_sent_per_rank("all-reduce", m, n))
    assert c.steps("all-reduce", n) == 2 * (n - 1)


def test_vectorised_over_size_and_ranks():
    sizes = np.logspace(0, 10, 50)
    t = c.collective_time("all-reduce", sizes, 8, "NVLink 4")
    assert t.shape == sizes.shape and np.all(np.diff(t) > 0)
    n = np.array([2, 4, 8, 16])
    assert c.collective_time("all-reduce", 1e6, n, "InfiniBand NDR").shape == (4,)
    assert c.collective_time("all-reduce", 1e9, 1, "NVLink 4") == 0.0


@pytest.mark.parametrize("m", c.CALIBRATION, ids=lambda m: m.label)
def test_calibration_reproduced_within_10_percent(m):
    assert m.role == "calibration"
    assert abs(m.error) <= CALIBRATION_TOLERANCE


def test_calibrated_constants():
    nv = c.LINK_MODELS["NVLink"]
    assert nv.efficiency == pytest.approx(235 / 300)
    assert nv.hop_latency == pytest.approx(1.98e-6, rel=0.01)
    assert nv.base_latency == pytest.approx(5.56e-6, rel=0.01)
    bus = c.bus_bandwidth("all-reduce", 8 * u.GiB, 8, c.collective_time("all-reduce", 8 * u.GiB, 8, "NVLink 3"))
    assert 230e9 <= bus <= 240e9  # PR #189: 230-240 GB/s


def test_validation_points_are_kept_apart_and_reported():
    assert {m.role for m in c.VALIDATION} == {"validation"}
    assert not set(m.label for m in c.VALIDATION) & set(m.label for m in c.CALIBRATION)
    errors = {m.label: m.error for m in c.VALIDATION}
    assert abs(errors["8 × H100 ring, large"]) < 0.10
    assert -0.20 < errors["8 × A100 80GB (HPE), large"] < -0.10  # a slower system than the calibration one


def test_in_network_and_tree():
    assert c.supports_in_network("NVLink 4") and not c.supports_in_network("NVLink 3")
    assert c.bytes_sent_per_rank("all-reduce", 1e9, 8, "in-network") == 1e9
    assert c.steps("all-reduce", 1024, "tree") == 20
    assert c.best_algorithm("all-reduce", 1e3, 1024, "RoCE 400G") == "tree"
    assert c.best_algorithm("all-reduce", 1e10, 8, "NVLink 3") == "ring"


def test_latency_bound_size_balances_the_terms():
    m = c.latency_bound_size("all-reduce", 8, "NVLink 3")
    nv = c.LINK_MODELS["NVLink"]
    latency = nv.base_latency + 14 * nv.hop_latency
    assert c.collective_time("all-reduce", m, 8, "NVLink 3") == pytest.approx(2 * latency)


def test_hierarchical_all_reduce_of_the_running_example():
    h = c.hierarchical_phases("all-reduce", 140e9, RUNNING_EXAMPLE.cluster)
    assert h.num_nodes == 128 and h.gpus_per_node == 8
    assert h.total == pytest.approx(h.intra_reduce_scatter + h.inter + h.intra_all_gather)
    flat = c.collective_time("all-reduce", 140e9, 1024, "InfiniBand NDR")
    assert 2 < flat / h.total < 5
    one = hardware.Cluster(hardware.DGX_H100, 1, hardware.FABRICS["InfiniBand NDR"])
    assert c.hierarchical_phases("all-reduce", 1e9, one).inter == 0.0


def test_ring_schedule_reduces_every_chunk():
    sends, counts = c.ring_schedule(5)
    assert sends.shape == (8, 5) and counts.shape == (8, 5, 5)
    assert np.all(counts[3].max(axis=1) == 5)  # after the reduce-scatter each rank holds one full chunk
    assert np.all(counts[-1] == 5)


def test_gradient_sync_and_overlap():
    g = c.gradient_sync(RUNNING_EXAMPLE)
    assert g.dp == 32 and g.bytes_sent == pytest.approx(2 * 31 / 32 * g.gradient_bytes)
    assert c.exposed_time(1.0, 3.0) == 0.0
    assert c.exposed_time(1.0, 0.5, overlap_fraction=1.0, last_bucket_seconds=0.1) == pytest.approx(0.6)


@pytest.mark.parametrize("call, name", [
    (lambda: c.collective_time("all-reduce", 1e6, 0, "NVLink 4"), "ranks=0"),
    (lambda: c.collective_time("all-reduce", -1, 8, "NVLink 4"), "size=-1"),
    (lambda: c.collective_time("allreduce", 1e6, 8, "NVLink 4"), "op='allreduce'"),
    (lambda: c.collective_time("all-reduce", 1e6, 8, "NVLink 4", algorithm="butterfly"), "algorithm='butterfly'"),
    (lambda: c.collective_time("all-reduce", 1e6, 8, "NVLink 3", algorithm="nvls"), "link='NVLink 3'"),
    (lambda: c.collective_time("all-gather", 1e6, 8, "NVLink 4", algorithm="tree"), "algorithm='tree'"),
    (lambda: c.collective_time("all-reduce", 1e6, 8, "Carrier pigeon"), "Carrier pigeon"),
    (lambda: c.ring_schedule(1), "ranks=1"),
    (lambda: c.exposed_time(1, 1, overlap_fraction=2), "overlap_fraction=2"),
])
def test_bad_input_names_the_value(call, name):
    with pytest.raises(ValueError, match=name.replace("(", r"\(")):
        call()


def test_ring_explorer_steps_and_rejects_a_step_past_the_end():
    from atscale import widgets
    e = widgets.ring_explorer()
    assert e.error is None and "step 1 of 6" in e.summary_text
    png = e.image.value
    e.update(step=3)
    assert e.error is None and "all-gather" in e.summary_text and e.image.value != png
    e.update(step=13)
    assert e.error is not None and "step=13" in e.error
    e.update(ranks=8)
    assert e.error is None and "step 14 of 14" in e.summary_text


def test_cost_explorer_reports_and_refuses_in_network_without_switch_support():
    from atscale import widgets
    e = widgets.collective_cost_explorer()
    assert e.error is None and "GB/s of 450" in e.summary_text
    e.update(link="InfiniBand NDR", ranks=1024)
    assert e.error is None and "of 50" in e.summary_text
    e.update(link="RoCE 400G", algorithm="in-network")
    assert e.error is not None and "RoCE 400G" in e.error
    e.update(algorithm="tree")
    assert e.error is None


def test_answer_keys_compute():
    from atscale.answers import ANSWERS, collectives  # noqa: F401
    keys = [k for k in ANSWERS if k.startswith("coll-")]
    assert len(keys) >= 5
    for k in keys:
        assert ANSWERS[k].compute() > 0


def test_ring_step_is_one_step_of_the_schedule():
    sends, counts = c.ring_schedule(5)
    for s in (0, 3, 4, 7):
        r = c.ring_step(5, s)
        assert (r.ranks, r.step, r.steps) == (5, s, 8)
        assert r.phase == ("reduce-scatter" if s < 4 else "all-gather")
        assert np.array_equal(r.sends, sends[s]) and np.array_equal(r.counts, counts[s])
        with pytest.raises(ValueError):
            r.counts[0, 0] = 0  # a frozen result: its arrays are read-only too


@pytest.mark.parametrize("call, name", [
    (lambda: c.ring_step(4, 6), "step=6"),
    (lambda: c.ring_step(4, -1), "step=-1"),
    (lambda: c.ring_step(4, 1.5), "step=1.5"),
    (lambda: c.ring_step(4, True), "step=True"),
    (lambda: c.ring_step(1, 0), "ranks=1"),
    (lambda: c.ring_step(257, 0), "ranks=257"),
    (lambda: c.cost_curve(ranks=1), "ranks=1"),
    (lambda: c.cost_curve(ranks=8.5), "ranks=8.5"),
    (lambda: c.cost_curve(op="allreduce"), "op='allreduce'"),
    (lambda: c.cost_curve(op="all-gather", algorithm="tree"), "algorithm='tree'"),
    (lambda: c.cost_curve(link="RoCE 400G", algorithm="in-network"), "RoCE 400G"),
    (lambda: c.cost_curve(link="Carrier pigeon"), "Carrier pigeon"),
])
def test_explorer_computations_refuse_bad_input(call, name):
    with pytest.raises(ValueError, match=name.replace("(", r"\(")):
        call()


def test_cost_curve_is_the_model_over_sizes():
    cc = c.cost_curve("all-reduce", 8, "NVLink 4", algorithm="nvls")
    assert cc.algorithm == "in-network" and cc.link == "NVLink 4" and cc.line_rate == 450e9
    assert cc.sizes[0] == 1 and cc.sizes[-1] == pytest.approx(1e11)
    i = 30
    t = c.collective_time("all-reduce", cc.sizes[i], 8, "NVLink 4", algorithm="in-network")
    assert cc.seconds[i] == pytest.approx(t)
    assert cc.bus[i] == pytest.approx(cc.sizes[i] * 2 * 7 / 8 / t)
    assert cc.knee == pytest.approx(c.latency_bound_size("all-reduce", 8, "NVLink 4", algorithm="in-network"))
    with pytest.raises(ValueError):
        cc.bus[0] = 1.0


def _pixels(png: bytes):
    import io

    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


@pytest.mark.parametrize("ranks, step", [(2, 0), (4, 2), (8, 9), (8, 13)])
def test_ring_explorer_draws_the_chapter_figure(ranks, step):
    """The two-layer figure and the whole-figure chart are the same picture (pixel for pixel; the step numbers
    chosen have as many digits as the step count, so the explorer's blank for a shorter number does not show)."""
    import io

    from atscale import plots
    buffer = io.BytesIO()
    plots.ring_step_chart(ranks, step).savefig(buffer, format="png")
    live = plots.RingExplorerFigure()
    live.png(c.ring_step(8, 3))  # another state first: nothing of it may remain
    assert np.array_equal(_pixels(live.png(c.ring_step(ranks, step))), _pixels(buffer.getvalue()))


def test_live_figures_refuse_what_they_cannot_draw():
    from atscale import plots
    ring, cost = plots.RingExplorerFigure(max_ranks=8), plots.CostExplorerFigure()
    with pytest.raises(ValueError, match="RingStep"):
        ring.png(c.cost_curve())
    with pytest.raises(ValueError, match="at most 8"):
        ring.png(c.ring_step(9, 0))
    with pytest.raises(ValueError, match="CostCurve"):
        cost.png(c.ring_step(4, 0))


def test_cost_explorer_keeps_the_latency_bound_label_inside_the_figure():
    from atscale import plots
    fig = plots.CostExplorerFigure()
    renderer = fig.canvas.get_renderer()
    for link, ranks in (("NVLink 5", 1024), ("InfiniBand NDR", 2), ("NVLink 4", 8)):
        fig.png(c.cost_curve("all-reduce", ranks, link))
        box = fig.knee_text.get_window_extent(renderer)
        assert fig.knee_text.get_visible() and 0 <= box.x0 and box.x1 <= fig.fig.bbox.x1, link


def test_full_mesh_scale_up_gives_a_group_only_its_links():
    # MI300X: seven point-to-point Infinity Fabric links of 64 GB/s per direction (448 GB/s in all), no switch;
    # a group of k GPUs uses only its k - 1 links (ROCm/rccl PR 1270), each at most 48 GB/s (issue 1210).
    import dataclasses

    hw = hardware
    f = hw.fabric("Infinity Fabric")
    assert f.mesh_links == 7 and f.link_bandwidth == pytest.approx(64e9)
    assert f.mesh_share(2) == pytest.approx(1 / 7) and f.mesh_share(8) == 1.0
    assert np.allclose(f.group_bandwidth(np.array([2, 4, 8])), np.array([1, 3, 7]) * 64e9)
    assert hw.fabric("NVLink 4").mesh_links is None and hw.fabric("NVLink 4").mesh_share(2) == 1.0
    # A pair's large all-reduce takes the bandwidth term of the whole platform's times 7 (one link of seven).
    size = 4 * 2**30
    pair, eight = c.collective_time("all-reduce", size, 2, f), c.collective_time("all-reduce", size, 8, f)
    cost = c.link_cost(f)
    assert pair == pytest.approx(cost.base + 2 * cost.hop + 2 * (1 / 2) * size / (cost.rate / 7))
    assert eight == pytest.approx(cost.base + 14 * cost.hop + 2 * (7 / 8) * size / cost.rate)
    assert cost.rate == pytest.approx(7 * 48e9)  # RCCL's 48 GB/s per link, seven links
    # A switched fabric gives a pair the full bandwidth: NVLink 4's pair is faster than its 8-GPU ring per byte.
    assert c.collective_time("all-reduce", size, [2, 8], f) == pytest.approx([pair, eight])
    with pytest.raises(ValueError, match="mesh_links"):
        dataclasses.replace(f, mesh_links=0)
