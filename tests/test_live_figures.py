"""Explorers drawn in two layers (:class:`atscale.plots.LiveFigure`) show the same picture whatever came before.

A live figure keeps a rasterised background per layout and redraws only the changing artists onto it
(blitting). The risk of that speed-up is a stale picture: a background drawn for one state reused for
another, or an artist left over from an earlier state. So, for every explorer whose plot is a live
figure: walk one explorer through every control's extremes and all-min/all-max corners (the states of
``tests/test_widgets_extremes.py``) and back to the defaults, and compare each picture, byte for byte,
with a fresh explorer moved straight from its defaults to that state.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from atscale import plots, widgets
from test_widgets_extremes import corners, draw_at


def _live_explorers():
    for info in pkgutil.iter_modules(widgets.__path__):
        module = importlib.import_module(f"atscale.widgets.{info.name}")
        for fn in getattr(module, "__all__", ()):
            factory = getattr(module, fn)
            if fn.endswith("_explorer") and callable(factory):
                yield f"{info.name}.{fn}", factory


CASES = [pytest.param(factory, id=label) for label, factory in _live_explorers()]


@pytest.mark.parametrize("factory", CASES)
def test_live_figure_does_not_depend_on_history(factory):
    walker = factory()
    if not isinstance(walker.plot, type) or not issubclass(walker.plot, plots.LiveFigure):
        pytest.skip(f"{walker.plot.__name__} is drawn whole on every redraw (no history to depend on)")
    defaults = dict(walker.values)
    states = corners(walker) + [("defaults", defaults)]
    for label, values in states:
        draw_at(walker, values)
        fresh = factory()
        draw_at(fresh, values)
        assert walker.error == fresh.error, label
        if walker.error is None:
            assert walker.image.value == fresh.image.value, f"{label}: the picture depends on what came before"
            assert walker.summary_text == fresh.summary_text, label
