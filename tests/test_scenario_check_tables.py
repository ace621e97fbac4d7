import dataclasses

import pytest

from atscale import hardware as hw
from atscale import units as u
from atscale.check import check, exercises
from atscale.scenario import RUNNING_EXAMPLE as ex
from atscale.tables import Table


def test_running_example():
    assert ex.cluster.num_gpus == 1024 and ex.cluster.num_nodes == 128
    assert ex.tokens_per_step == 1024 * 8192
    assert ex.total_flops == pytest.approx(ex.flops_per_token * 2e12)
    # About four weeks at the assumed 40% MFU.
    assert 20 * u.day < ex.run_time < 35 * u.day


def test_scenario_rejects_bad_input():
    with pytest.raises(ValueError, match="reference_mfu"):
        dataclasses.replace(ex, reference_mfu=1.5)
    with pytest.raises(ValueError, match="dtype='fp8' is not supported by A100"):
        dataclasses.replace(ex, cluster=hw.Cluster.of_gpus(hw.DGX_A100, 8, hw.fabric("InfiniBand HDR")), dtype="fp8")


def test_check_feedback():
    assert "catalog-dgx-h100-hbm" in exercises()
    right = check("catalog-dgx-h100-hbm", 640e9)
    assert right.correct and bool(right) and right.message.startswith("✓ Correct: 640.0 GB")
    gib = check("catalog-dgx-h100-hbm", 640 * 2**30)
    assert not gib.correct and "GiB vs GB" in gib.message and "too high" not in gib.message  # the kind, not the way
    bits = check("catalog-ndr-node-egress", 8 * 400e9)
    assert not bits.correct and "bits vs bytes" in bits.message
    assert "640" not in check("catalog-dgx-h100-hbm", 100e9).message  # never reveals the key
    assert not check("catalog-nvlink-vs-ib", "nine").correct
    assert "atscale-feedback" in right._repr_html_()


def test_check_unknown_exercise():
    with pytest.raises(ValueError, match="unknown exercise id 'nope'") as info:
        check("nope", 1)
    assert len(str(info.value)) < 300  # suggestions, not the list of every id (issue 34)
    with pytest.raises(ValueError, match="Did you mean 'catalog-dgx-h100-hbm'"):
        check("catalog-dgx-h100-hmb", 1)


def test_table():
    t = Table(("a", "bb"), [("1", "22"), ("333", "4")], caption="c")
    assert str(t).splitlines() == ["c", "a    bb", "---  --", "1    22", "333  4"]
    assert "<caption>c</caption>" in t._repr_html_()
    with pytest.raises(ValueError, match="row 0 has 1 cells; the header has 2"):
        Table(("a", "b"), [("x",)])
