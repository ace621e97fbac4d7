"""Explorers of the chapter "The roofline"."""

from __future__ import annotations

from .. import hardware, plots, roofline
from .. import units as u
from . import Explorer, dropdown, slider

__all__ = ["roofline_explorer"]


def _summary(accelerator, dtype, kind, size):
    op = plots.roofline.operator(kind, size, dtype)
    tb = roofline.time_bound(op, hardware.accelerator(accelerator), dtype)
    rate = roofline.attainable_flops(accelerator, op.intensity, dtype)
    return (f"{op.name}: {u.fmt_flop(op.flops)} over {u.fmt_bytes(op.bytes)} = {op.intensity:,.3g} FLOP/byte; "
            f"{tb.bound}-bound; attainable {u.fmt_flops(rate, 1)}; time at least {u.fmt_time(tb.overlapped)} "
            f"(math {u.fmt_time(tb.math)}, memory {u.fmt_time(tb.memory)}).")


def roofline_explorer() -> Explorer:
    """Accelerator, data type, operator and size: where the operator lands on the roofline."""
    return Explorer(
        plots.operator_chart,
        summary=_summary,
        accelerator=dropdown(list(hardware.ACCELERATORS), "H100 SXM", "Accelerator"),
        dtype=dropdown(["bf16", "fp8", "tf32", "fp64"], "bf16", "Data type"),
        kind=dropdown(list(plots.roofline.OPERATORS), "matmul (square)", "Operator"),
        size=slider(1, 1e8, 4096, "Size (side, tokens, sequence or parameters)", log=True, step=0.1),
    )
