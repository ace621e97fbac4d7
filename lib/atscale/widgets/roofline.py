"""Explorers of the chapter "The roofline"."""

from __future__ import annotations

from .. import _validate as _v
from .. import hardware, plots, roofline
from .. import units as u
from ._base import Explorer, dropdown, slider

__all__ = ["roofline_explorer", "roofline_view"]

OPERATORS = ("matmul (square)", "matmul (tokens x 8192 x 8192)", "elementwise add", "layer norm",
             "attention (naive)", "attention (fused)", "Adam update")
"""The explorer's operator menu (what ``size`` means follows from the kind: see :func:`operator`)."""


def operator(kind: str, size: float, dtype: str = "bf16") -> roofline.Op:
    """One of :data:`OPERATORS` at ``size`` (matrix side, tokens, sequence length or
    parameters, as the kind implies), in ``dtype``: the operator menu of the explorer."""
    bpe = hardware.bytes_per_element(dtype)
    size = float(size)
    if kind == "matmul (square)":
        return roofline.matmul(size, size, size, bpe, f"matmul {size:,.0f}³")
    if kind == "matmul (tokens x 8192 x 8192)":
        return roofline.matmul(size, 8192, 8192, bpe, f"matmul {size:,.0f}x8192x8192")
    if kind == "elementwise add":
        return roofline.elementwise(size, bytes_per_element=bpe, name="x + y")
    if kind == "layer norm":
        return roofline.layer_norm(size, 8192, bpe)
    if kind in ("attention (naive)", "attention (fused)"):
        return roofline.attention_scores(1, 64, size, 128, bpe, fused=kind.endswith("(fused)"))
    if kind == "Adam update":
        return roofline.adam_update(size)
    raise ValueError(f"kind={kind!r} is not one of {OPERATORS}")


def roofline_view(accelerator="H100 SXM", dtype: str = "bf16", kind: str = "matmul (square)",
                  size: float = 4096) -> roofline.Placement:
    """The explorer's result for its controls: :func:`operator` placed on the accelerator's roofline
    (:func:`atscale.roofline.place`)."""
    size = _v.positive("size", size, scalar=True, high=1e12, unit="the operator's side, tokens, sequence or parameters")
    return roofline.place(operator(kind, size, dtype), accelerator, dtype)


def _summary(p: roofline.Placement) -> str:
    op, tb = p.op, p.time
    return (f"{op.name}: {u.fmt_flop(op.flops)} over {u.fmt_bytes(op.bytes)} = {p.intensity:,.3g} FLOP/byte; "
            f"{p.bound}-bound; attainable {u.fmt_flops(p.attainable, 1)}; time at least {u.fmt_time(tb.overlapped)} "
            f"(math {u.fmt_time(tb.math)}, memory {u.fmt_time(tb.memory)}).")


def roofline_explorer() -> Explorer:
    """Accelerator, data type, operator and size: where the operator lands on the roofline."""
    return Explorer(
        plots.RooflineExplorerFigure,
        compute=roofline_view,
        summary=_summary,
        accelerator=dropdown(list(hardware.ACCELERATORS), "H100 SXM", "Accelerator"),
        dtype=dropdown(["bf16", "fp8", "tf32", "fp64"], "bf16", "Data type"),
        kind=dropdown(list(OPERATORS), "matmul (square)", "Operator"),
        size=slider(1, 1e8, 4096, "Size (side, tokens, sequence or parameters)", log=True, step=0.1),
    )
