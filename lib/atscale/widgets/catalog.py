"""Explorers of the Hardware catalog appendix."""

from __future__ import annotations

from .. import hardware, plots
from . import Explorer, dropdown

__all__ = ["catalog_explorer"]


def catalog_explorer() -> Explorer:
    """Peak FLOP/s vs HBM bandwidth of the catalog, with a selectable dtype."""
    return Explorer(plots.catalog_scatter, dtype=dropdown(list(hardware.DTYPES), "bf16", "Data type"))
