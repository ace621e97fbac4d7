"""Answer keys: the collective-communication chapter."""

import dataclasses

from .. import collectives as c
from .. import hardware
from .. import units as u
from ..scenario import RUNNING_EXAMPLE
from . import answer


@answer("coll-ring-bytes-1024", unit="B", rtol=0.02,
        idea="In a ring all-reduce every rank sends nearly twice the message: once to reduce, once to share.", slips=('twice',),
        hint="A ring all-reduce sends 2(n-1)/n of the message from every rank: c.bytes_sent_per_rank.")
def _():
    return c.bytes_sent_per_rank("all-reduce", 140e9, 1024)


@answer("coll-h100-ring-busbw", unit="B/s", rtol=0.02,
        idea="Bus bandwidth rescales the algorithm bandwidth by what each rank really moves.", slips=('twice',),
        hint="Time the 1 GiB all-reduce with c.collective_time on 'NVLink 4', then c.bus_bandwidth.")
def _():
    t = c.collective_time("all-reduce", u.GiB, 8, "NVLink 4")
    return c.bus_bandwidth("all-reduce", u.GiB, 8, t)


@answer("coll-knee-1024-ndr", unit="B", rtol=0.02,
        idea="The knee is the size where the latency term and the bandwidth term are equal.",
        hint="c.latency_bound_size('all-reduce', 1024, 'InfiniBand NDR').")
def _():
    return c.latency_bound_size("all-reduce", 1024, "InfiniBand NDR")


@answer("coll-running-sync-fp32", unit="s", rtol=0.02,
        idea="The time to synchronise gradients grows with the bytes per gradient.", slips=('twice',),
        hint="c.gradient_sync(RUNNING_EXAMPLE, grad_dtype='fp32').seconds: twice the bytes of BF16.")
def _():
    return c.gradient_sync(RUNNING_EXAMPLE, grad_dtype="fp32").seconds


@answer("coll-hier-xdr", unit="s", rtol=0.02,
        idea="A hierarchical all-reduce has three phases; only the one that crosses the network feels faster NICs, "
             "and a faster fabric alone changes nothing while each GPU's NIC is the cap.",
        hint="node = dataclasses.replace(hardware.DGX_H100, nic_bandwidth=800 * units.Gbps), then "
             "hardware.Cluster.of_gpus(node, 1024, hardware.FABRICS['InfiniBand XDR']) and "
             "c.hierarchical_time('all-reduce', 140e9, cluster). Only the middle phase changes.")
def _():
    node = dataclasses.replace(hardware.DGX_H100, name="DGX H100 (800 Gb/s NICs)", nic_bandwidth=800 * u.Gbps)
    cluster = hardware.Cluster.of_gpus(node, 1024, hardware.FABRICS["InfiniBand XDR"])
    return c.hierarchical_time("all-reduce", 140e9, cluster)


@answer("coll-moe-a2a", unit="s", rtol=0.02,
        idea="In an all-to-all each rank keeps its own share of its data and sends the rest to the others.",
        hint="c.collective_time('all-to-all', size, 64, 'InfiniBand NDR') for size = 256 MB.")
def _():
    return c.collective_time("all-to-all", 256e6, 64, "InfiniBand NDR")


@answer("coll-llama3-taper-14", unit="s", rtol=0.02,
        idea="Only the level that crosses pods feels the taper, and it carries a small share of the data.",
        hint="Replace the top tier of hardware.fabric('RoCE 400G (Llama 3 cluster)') with dataclasses.replace("
             "tier, oversubscription=14.0), build a 16,384-GPU cluster on it and call c.tiered_time('reduce-scatter', "
             "size, 128, cluster, ranks_per_node=1, span=16384).")
def _():
    import dataclasses

    from .. import models
    from ..parallelism import GRADIENT_ACCUMULATION_BYTES

    meta = hardware.fabric("RoCE 400G (Llama 3 cluster)")
    top = dataclasses.replace(meta.tiers[-1], oversubscription=14.0)
    fabric = dataclasses.replace(meta, name="RoCE 400G (Llama 3 cluster, 14:1)", tiers=meta.tiers[:-1] + (top,))
    cluster = hardware.Cluster.of_gpus(hardware.DGX_H100, 16384, fabric)
    grad = models.LLAMA3_405B.num_params / (8 * 16) * GRADIENT_ACCUMULATION_BYTES
    return c.tiered_time("reduce-scatter", grad, 128, cluster, ranks_per_node=1, span=16384)
