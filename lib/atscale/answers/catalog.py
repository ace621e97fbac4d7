"""Answer keys: the Hardware catalog appendix."""

CHAPTER = "Hardware catalog"
"""The chapter whose exercises these keys check (the Exercises page groups them by it)."""

from .. import hardware as hw
from . import answer


@answer("catalog-dgx-h100-hbm", unit="B", rtol=0.01,
        idea="A node's memory is the sum over its GPUs.",
        hint="A DGX H100 holds 8 GPUs; use decimal gigabytes (10^9 bytes) as the datasheet does.")
def _():
    return hw.DGX_H100.memory_capacity


@answer("catalog-ndr-node-egress", unit="B/s", rtol=0.01,
        idea="A node talks to the network through its NICs; link speeds are quoted in bits per second.",
        hint="Each compute NIC is one 400 Gb/s port; divide bits by 8 and count the NICs.")
def _():
    return hw.DGX_H100.scale_out_bandwidth


@answer("catalog-nvlink-vs-ib", unit="1", rtol=0.02,
        idea="Compare like with like: the same direction and the same unit on both links.", slips=('twice',),
        hint="Compare per-direction figures on both sides: NVLink 4 per GPU vs one NDR port per GPU.")
def _():
    return hw.H100_SXM.scale_up_bandwidth / hw.DGX_H100.nic_bandwidth
