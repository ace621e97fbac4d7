"""Explorers of the Hardware catalog appendix."""

from __future__ import annotations

from .. import _validate as v
from .. import hardware, plots
from ._base import Explorer, dropdown

__all__ = ["catalog_explorer", "catalog_view"]


def catalog_view(dtype: str = "bf16"):
    """``(dtype, accelerators, lacking)`` for the explorer: the catalog's accelerators that have a dense peak in
    ``dtype`` (one of :data:`atscale.hardware.DTYPES`), in catalog order, and the names of those that have none."""
    v.choice("dtype", dtype, hardware.DTYPES)
    accs = tuple(hardware.ACCELERATORS.values())
    return (dtype, tuple(a for a in accs if dtype in a.peak_flops),
            tuple(a.name for a in accs if dtype not in a.peak_flops))


def catalog_explorer() -> Explorer:
    """Peak FLOP/s vs HBM bandwidth of the catalog, with a selectable dtype (the frame stays fixed, so the
    points move when the data type changes)."""
    return Explorer(plots.CatalogExplorerFigure, compute=catalog_view,
                    dtype=dropdown(list(hardware.DTYPES), "bf16", "Data type"))
