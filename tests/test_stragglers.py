"""The straggler model (atscale.stragglers) and its opt-in hook into the step time, the search and the JCT."""

import dataclasses
import math

import numpy as np
import pytest

from atscale import jct, parallelism, runs, search
from atscale import stragglers as S
from atscale.scenario import RUNNING_EXAMPLE as EX


# --- the expected maximum of N normals --------------------------------------------------------------------
def test_expected_max_normal_known_values():
    assert S.expected_max_normal(1) == 0.0
    assert S.expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-9)
    assert S.expected_max_normal(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-9)
    # Tabulated expected values of normal order statistics (Harter 1961): n = 10, 100
    assert S.expected_max_normal(10) == pytest.approx(1.538753, abs=1e-5)
    assert S.expected_max_normal(100) == pytest.approx(2.507594, abs=1e-5)


def test_expected_max_normal_matches_a_seeded_monte_carlo():
    rng = np.random.default_rng(0)
    sample = rng.standard_normal((4000, 512)).max(axis=1)
    assert S.expected_max_normal(512) == pytest.approx(sample.mean(), abs=4 * sample.std() / math.sqrt(4000))


def test_expected_max_normal_is_vectorised_and_below_the_classic_approximation():
    n = np.array([[2, 8], [1024, 16_384]])
    out = S.expected_max_normal(n)
    assert out.shape == n.shape
    assert out[1, 1] == pytest.approx(S.expected_max_normal(16_384))
    assert np.all(out < np.sqrt(2 * np.log(n)))


def test_monotone_non_decreasing_in_n_and_zero_for_one():
    n = np.arange(1, 5000)
    e = S.expected_max_normal(n)
    assert e[0] == 0.0 and np.all(np.diff(e) >= 0)
    f = S.straggler_fraction(np.unique(np.geomspace(1, 200_000, 300).round()).astype(int))
    assert f[0] == 0.0 and np.all(np.diff(f) >= 0)


def test_slow_hosts_grow_almost_linearly_then_saturate():
    p = 1e-4
    assert S.any_slow_probability(1, p) == pytest.approx(p)
    assert S.any_slow_probability(100, p) == pytest.approx(100 * p, rel=0.01)
    assert S.any_slow_probability(10**7, p) == pytest.approx(1.0)
    assert S.any_slow_probability(5, 1.0) == 1.0 and S.any_slow_probability(5, 0.0) == 0.0


def test_the_published_readings_are_recomputed_from_their_sources():
    # sigma: Sinha et al.'s 8 % read as the range of Summit's 27,648 GPUs
    assert S.JITTER == pytest.approx(S.SINHA_VARIATION / (2 * S.expected_max_normal(S.SINHA_GPUS)), rel=0.01)
    # p: MegaScale's 0.7-point gain at 55.2 % MFU on 1,536 hosts, 10 % slower
    gain = S.MEGASCALE_MFU_GAIN / S.MEGASCALE_MFU
    assert S.SLOW_HOST_FACTOR * S.any_slow_probability(S.MEGASCALE_GPUS // 8, S.SLOW_HOST_PROBABILITY) \
        == pytest.approx(gain, rel=0.01)


def test_the_fraction_is_the_sum_of_its_two_terms():
    m = S.Stragglers(jitter=0.02, slow_probability=1e-3, slow_factor=0.2)
    n = 4096
    expected = 0.02 * S.expected_max_normal(n) + 0.2 * S.any_slow_probability(512, 1e-3)
    assert m.fraction(n) == pytest.approx(expected)
    assert S.Stragglers(jitter=0.0, slow_probability=0.0).fraction(n) == 0.0


@pytest.mark.parametrize("call, name", [
    (lambda: S.expected_max_normal(0), "n"), (lambda: S.expected_max_normal(2.5), "n"),
    (lambda: S.any_slow_probability(8, 1.5), "probability"), (lambda: S.any_slow_probability(-1, 0.1), "hosts"),
    (lambda: S.straggler_fraction(0), "gpus"), (lambda: S.straggler_fraction(8, 0), "gpus_per_host"),
    (lambda: S.straggler_fraction(8, jitter=-0.1), "jitter"),
    (lambda: S.straggler_fraction(8, slow_factor=math.nan), "slow_factor"),
    (lambda: S.Stragglers(jitter=2.0), "jitter"), (lambda: S.Stragglers(slow_probability=-1e-3), "slow_probability"),
    (lambda: S._stragglers_arg("on"), "stragglers"),
    (lambda: parallelism.step_time(EX.model, EX.cluster, EX.plan, stragglers=1), "stragglers"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- the hook: off by default, on adds one part ----------------------------------------------------------
def test_off_by_default_leaves_every_step_unchanged():
    base = parallelism.step_time(EX.model, EX.cluster, EX.plan)
    for off in (None, False):
        st = parallelism.step_time(EX.model, EX.cluster, EX.plan, stragglers=off)
        assert st.total == base.total and st.parts() == base.parts() and "straggler" not in st.parts()
    assert base.straggler == 0.0 and base.stragglers is None
    assert tuple(base.parts()) == parallelism.PARTS


def test_on_adds_the_straggler_part_and_the_total_stays_the_exact_sum():
    base = parallelism.step_time(EX.model, EX.cluster, EX.plan)
    st = parallelism.step_time(EX.model, EX.cluster, EX.plan, stragglers=True)
    assert list(st.parts()) == list(parallelism.PARTS) + ["straggler"]
    assert sum(st.parts().values()) == st.total
    f = S.straggler_fraction(EX.cluster.num_gpus, EX.cluster.node.gpus)
    assert st.straggler == pytest.approx(f * (base.compute + base.recompute))
    assert st.total == pytest.approx(base.total + st.straggler) and st.mfu < base.mfu
    for name in parallelism.PARTS:
        assert getattr(st, name) == getattr(base, name)
    assert st.stragglers is S.STRAGGLERS
    assert "straggler" in repr(st) and "straggler" in parallelism.PART_LABELS


def test_vectorised_evaluate_agrees_with_step_time():
    p = EX.plan
    kw = dict(tp=p.tp, pp=np.array([p.pp, p.pp]), dp=p.dp, micro_batch=p.micro_batch, global_batch=p.global_batch,
              zero_stage=p.zero_stage, schedule=p.schedule, virtual_stages=p.virtual_stages, recompute=p.recompute,
              sequence_parallel=p.sequence_parallel, cp=p.cp)
    arr = parallelism.evaluate(EX.model, EX.cluster, **kw, stragglers=True)
    one = parallelism.step_time(EX.model, EX.cluster, p, stragglers=True)
    assert arr.straggler.shape == (2,)
    assert arr.straggler[0] == pytest.approx(one.straggler, rel=1e-9)
    assert np.allclose(sum(arr.parts().values()), arr.total)
    off = parallelism.evaluate(EX.model, EX.cluster, **kw)
    assert "straggler" not in off.parts() and np.array_equal(off.total, np.asarray(off.total))


def test_infeasible_layout_has_a_nan_straggler():
    bad = dataclasses.replace(EX.plan, tp=16, dp=EX.plan.dp // 2)
    st = parallelism.step_time(EX.model, EX.cluster, bad, stragglers=True)
    assert not st.feasible and math.isnan(st.straggler)


def test_straggler_part_grows_with_the_cluster():
    r = next(r for r in runs.ALL_RUNS if r.group == "MegaScale")
    small, large = (dataclasses.replace(r.cluster, num_nodes=n) for n in (64, 1536))
    fr = [S.straggler_fraction(c.num_gpus, c.node.gpus) for c in (small, large)]
    assert fr[0] < fr[1]


def test_search_and_jct_take_the_knob():
    res = search.search(EX.model, EX.cluster, EX.plan.global_batch, seq_length=8192, micro_batches=(1,),
                        zero_stages=(1,), recomputes=("selective",), stragglers=True)
    assert "straggler_s" in res.table
    ok = res.table["feasible"]
    assert np.allclose(res.table["total_s"][ok], sum(res.table[f"{k}_s"][ok] for k in
                                                     list(parallelism.PARTS) + ["straggler"]))
    c = jct.cluster_of(1024)
    off = jct.estimate(EX.model, 2e12, c, EX.plan)
    on = jct.estimate(EX.model, 2e12, c, EX.plan, stragglers=True)
    assert "straggler" not in off.parts() and off.straggler == 0.0
    assert list(on.parts())[6] == "straggler" and on.total == sum(on.parts().values())
    assert on.straggler == pytest.approx(on.step.straggler * on.steps)
    assert on.failure_free == pytest.approx(on.step.total * on.steps)
    sw = jct.sweep(EX.model, 2e12, (512, 1024), plan=jct.fixed_plan(EX.plan.tp, EX.plan.pp, EX.plan),
                   stragglers=True)
    assert np.all(sw.term("straggler") > 0)
    x = jct.crossover(sw, ("communication", "bubble", "straggler"))  # the name is accepted
    assert x is None or x >= 512


def test_megascale_drop_moves_toward_the_published_one():
    """The knob's effect on MegaScale's Megatron-LM rows (3,072 -> 12,288 A100): the drop grows."""
    rows = [r for r in runs.ALL_RUNS if r.group == "MegaScale"]
    a, b = rows[0], rows[-1]

    def mfu(r, strag):
        return parallelism.step_time(r.model, r.cluster, r.plan, optimizer_name=r.optimizer_name,
                                     dp_overlap=r.dp_overlap, seq_length=r.seq_length, dtype=r.dtype,
                                     flash_attention=r.flash_attention, memory_check=r.memory_check,
                                     stragglers=strag).mfu_at_dtype_peak
    off = mfu(a, None) - mfu(b, None)
    on = mfu(a, True) - mfu(b, True)
    assert on > off


def test_the_jct_explorer_has_a_straggler_control():
    from atscale.widgets import jct as wj

    off, _, _ = wj.explorer_view()
    on, sweep, label = wj.explorer_view(stragglers="on")
    assert off.stragglers is None and on.stragglers is S.STRAGGLERS and on.straggler > 0
    assert on.total > off.total and "stragglers" in label and "stragglers" in wj._summary((on, sweep, label))
    assert np.all(sweep.term("straggler")[sweep.feasible] > 0)
    with pytest.raises(ValueError, match="stragglers"):
        wj.explorer_view(stragglers="maybe")
