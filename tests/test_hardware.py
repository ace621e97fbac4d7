import dataclasses

import pytest

from atscale import hardware as hw
from atscale import units as u


def test_h100_sxm_headline_figures():
    h = hw.H100_SXM
    assert h.peak("bf16") == pytest.approx(989.4e12)  # dense; the datasheet's 1,979 is with sparsity
    assert h.peak("fp8") == pytest.approx(1978.9e12)
    assert h.hbm_bandwidth == pytest.approx(3.35e12)
    assert h.memory_capacity == 80e9
    assert h.scale_up_bandwidth == pytest.approx(450e9)  # per direction; 900 GB/s is both directions
    assert "sparsity" in h.source("peak_flops") and "per direction" in h.source("scale_up_bandwidth")


def test_every_sparse_headline_is_twice_the_dense_peak():
    # The catalog stores dense peaks; the marketed sparse figures are exactly 2x.
    sparse_bf16 = {"H100 SXM": 1979e12, "H100 PCIe": 1513e12, "A100 SXM 80GB": 624e12, "B200": 4500e12,
                   "MI300X": 2614.9e12}
    for name, sparse in sparse_bf16.items():
        assert hw.accelerator(name).peak("bf16") == pytest.approx(sparse / 2, rel=1e-3)


@pytest.mark.parametrize(
    "name, capacity, bandwidth",
    [("A100 SXM 40GB", 40e9, 1555e9), ("A100 SXM 80GB", 80e9, 2039e9), ("H100 PCIe", 80e9, 2.0e12),
     ("H200 SXM", 141e9, 4.8e12), ("B200", 180e9, 8e12), ("MI300X", 192e9, 5.3e12)],
)
def test_memory_figures(name, capacity, bandwidth):
    acc = hw.accelerator(name)
    assert acc.memory_capacity == capacity
    assert acc.hbm_bandwidth == pytest.approx(bandwidth)


def test_required_catalog_entries_exist_and_are_sourced():
    for name in ("H100 SXM", "H100 PCIe", "H200 SXM", "A100 SXM 80GB", "A100 SXM 40GB", "B200", "MI300X"):
        acc = hw.accelerator(name)
        for field in ("peak_flops", "memory_capacity", "hbm_bandwidth", "scale_up_bandwidth", "tdp"):
            assert acc.source(field), (name, field)
        if acc.measured_matmul_flops:
            assert acc.source("measured_matmul_flops")
    for name in ("DGX H100", "DGX A100", "HGX B200"):
        node = hw.node(name)
        assert node.gpus == 8 and node.nics == 8 and node.psus >= 1
        assert {"gpus", "nics", "psus"} <= set(node.sources)
    for name in ("NVLink 3", "NVLink 4", "NVLink 5", "InfiniBand HDR", "InfiniBand NDR", "InfiniBand XDR", "RoCE 400G"):
        fab = hw.fabric(name)
        assert "per direction" in fab.sources["bandwidth"] and fab.sources["latency"]


def test_fabric_bandwidths_are_per_direction():
    assert hw.fabric("InfiniBand NDR").bandwidth == 400 * u.Gbps == 50e9
    assert hw.fabric("InfiniBand HDR").bandwidth == 25e9
    assert hw.fabric("InfiniBand XDR").bandwidth == 100e9
    assert hw.fabric("NVLink 3").bandwidth == 300e9
    assert hw.fabric("NVLink 4").bandwidth == 450e9
    assert hw.fabric("NVLink 5").bandwidth == 900e9
    assert hw.fabric("NVLink bridge").bandwidth == 300e9
    assert hw.fabric("Infinity Fabric").bandwidth == 448e9
    # Every accelerator's scale-up link is a catalog fabric, and its per-GPU figure agrees with it.
    for acc in hw.ACCELERATORS.values():
        assert acc.fabric is hw.FABRICS[acc.scale_up_fabric] and acc.fabric.kind == "scale-up"
        assert acc.scale_up_bandwidth == acc.fabric.bandwidth


def test_nvlink_provenance_arithmetic():
    # Per link, NVLink 3 and 4 carry 50 GB/s and NVLink 5 100 GB/s counting both directions: the link
    # counts times those give the marketed totals, and half of each is the stored per-direction figure.
    for name, links, per_link_both in (("NVLink 3", 12, 50e9), ("NVLink 4", 18, 50e9), ("NVLink 5", 18, 100e9)):
        fab = hw.fabric(name)
        assert links * per_link_both / 2 == fab.bandwidth
        assert f"{links} links x {per_link_both / 1e9:.0f} GB/s (both directions" in fab.sources["bandwidth"]


def test_memory_nominal_physical_usable():
    # "80 GB" is 80 GiB of DRAM; the driver reports 81,559 MiB on an H100 and 143,771 MiB on an H200.
    h100, h200 = hw.H100_SXM, hw.H200_SXM
    assert (h100.memory_capacity, h100.memory_physical) == (80e9, 80 * 2**30)
    assert h100.memory_usable == 81559 * 2**20 == 85_520_809_984
    # CUDA's total is below the driver's: 79.11 GiB in PyTorch's out-of-memory message on an H100, 150,109,880,320
    # bytes measured on the book's H200 (lib/atscale/data); the memory model fills CUDA's figure where published.
    assert h100.memory_allocatable == pytest.approx(79.11 * 2**30) and h100.usable_memory == h100.memory_allocatable
    assert h200.memory_allocatable == 150_109_880_320 == h200.usable_memory
    assert hw.H800_SXM.usable_memory == h100.usable_memory
    assert hw.B200.memory_allocatable is None and hw.B200.usable_memory == hw.B200.memory_usable
    assert h200.memory_usable == 143771 * 2**20 and h200.memory_physical is None
    assert "not published" in h200.source("memory_physical")
    assert hw.A100_SXM_80GB.memory_usable == 81920 * 2**20 == hw.A100_SXM_80GB.memory_physical
    assert hw.A100_SXM_40GB.memory_usable == 40960 * 2**20
    assert hw.B200.memory_usable == 183359 * 2**20
    # Unknown driver figure: the model falls back to the nominal one, and the source says so.
    assert hw.MI300X.memory_usable is None and hw.MI300X.usable_memory == 192e9
    assert hw.H100_PCIE.usable_memory == 80e9 and "no published" in hw.H100_PCIE.source("memory_usable")
    for acc in hw.ACCELERATORS.values():
        for name in ("memory_capacity", "memory_physical", "memory_usable"):
            assert acc.source(name), (acc.name, name)
        if acc.memory_usable is not None:  # the fallback is conservative wherever both are known
            assert acc.memory_usable > acc.memory_capacity
        if acc.memory_physical is not None and acc.memory_usable is not None:
            assert acc.memory_usable <= acc.memory_physical
        if acc.memory_allocatable is not None:  # CUDA's total: below the driver's, above the nominal figure
            assert acc.memory_capacity < acc.memory_allocatable < acc.memory_usable
            assert acc.source("memory_allocatable")


def test_measured_ceilings_are_below_peak():
    for acc in hw.ACCELERATORS.values():
        for dtype, measured in acc.measured_matmul_flops.items():
            assert 0.5 * acc.peak(dtype) < measured < acc.peak(dtype)
    assert hw.H100_SXM.measured("bf16") / hw.H100_SXM.peak("bf16") == pytest.approx(0.801, abs=0.001)
    assert hw.H100_PCIE.measured("bf16") is None


def test_node_and_cluster():
    assert hw.DGX_H100.memory_capacity == 640e9
    assert hw.DGX_H100.peak("bf16") == pytest.approx(8 * 989.4e12)
    assert hw.DGX_H100.scale_out_bandwidth == 400e9
    c = hw.Cluster.of_gpus(hw.DGX_H100, 1024, hw.fabric("InfiniBand NDR"))
    assert (c.num_nodes, c.num_gpus) == (128, 1024)
    assert c.peak("bf16") == pytest.approx(1024 * 989.4e12)
    assert "1,024 × H100 SXM" in c.name


def test_what_if_is_a_new_object():
    faster = dataclasses.replace(hw.H100_SXM, name="H100 (what if)", hbm_bandwidth=4e12)
    assert faster.hbm_bandwidth == 4e12 and hw.H100_SXM.hbm_bandwidth == 3.35e12
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.H100_SXM.hbm_bandwidth = 1.0
    with pytest.raises(TypeError):
        hw.H100_SXM.peak_flops["bf16"] = 1.0  # read-only mapping


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: hw.accelerator("H300"), r"unknown accelerator 'H300'; did you mean .*GB300.* \(11 known\)"),
        (lambda: hw.node("DGX-1"), r"unknown node 'DGX-1'; known: DGX A100"),
        (lambda: hw.fabric("Myrinet"), r"unknown fabric 'Myrinet'"),
        (lambda: hw.A100_SXM_80GB.peak("fp8"), r"dtype='fp8' is not supported by A100 SXM 80GB; it has"),
        (lambda: hw.H100_SXM.peak("int4"), r"dtype='int4'"),
        (lambda: dataclasses.replace(hw.H100_SXM, hbm_bandwidth=-1.0), r"hbm_bandwidth=-1.0 must be a positive"),
        (lambda: dataclasses.replace(hw.H100_SXM, memory_usable=0.0), r"memory_usable=0.0 must be a positive"),
        (lambda: dataclasses.replace(hw.H100_SXM, scale_up_fabric="Myrinet").fabric, r"unknown fabric 'Myrinet'"),
        (lambda: dataclasses.replace(hw.H100_SXM, peak_flops={"fp4": 1e15}), r"dtype='fp4'"),
        (lambda: dataclasses.replace(hw.DGX_H100, gpus=0), r"gpus=0 must be a positive integer"),
        (lambda: hw.Cluster.of_gpus(hw.DGX_H100, 1001, hw.fabric("InfiniBand NDR")), r"gpus=1001 must be a positive multiple"),
        (lambda: hw.Cluster(hw.DGX_H100, 4, hw.fabric("NVLink 4")), r"needs a scale-out"),
        (lambda: hw.bytes_per_element("int3"), r"dtype='int3'"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_catalog_tables_cover_every_entry():
    assert len(hw.accelerator_table().rows) == len(hw.accelerator_table("memory").rows) == len(hw.ACCELERATORS)
    with pytest.raises(ValueError, match="part='power'"):
        hw.accelerator_table("power")
    assert len(hw.node_table().rows) == len(hw.NODES)
    assert len(hw.fabric_table().rows) == len(hw.FABRICS)
    sources = hw.source_table()
    assert {r[0] for r in sources.rows} == set(hw.ACCELERATORS) | set(hw.NODES) | set(hw.FABRICS)
    html = hw.accelerator_table()._repr_html_()
    assert "<table" in html and "989.4" in html
