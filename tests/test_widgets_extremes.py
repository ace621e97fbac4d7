"""Every explorer at every slider extreme and corner draws a readable figure or a clear message.

For each explorer of each widgets module (its ``__all__``): every control at its minimum and maximum
(first and last option of a drop-down) with the others at their defaults, then all at their minima
and all at their maxima. Each redraw must leave a PNG or a message, and take less than
``TIME_LIMIT`` (generous, for loaded machines; the book's target is 150 ms, and
``python tests/test_widgets_extremes.py`` prints the real timings).
"""

from __future__ import annotations

import importlib
import time

import ipywidgets as W
import pytest

MODULES = ("catalog", "roofline", "memory", "collectives", "reliability")
TIME_LIMIT = 1.0


def _explorers():
    for name in MODULES:
        module = importlib.import_module(f"atscale.widgets.{name}")
        for fn in module.__all__:
            yield f"{name}.{fn}", getattr(module, fn)


def _extremes(control: W.Widget):
    if isinstance(control, W.Dropdown):
        values = list(control._options_values)  # the values behind the labels ({label: value} options too)
        return values[0], values[-1]
    if isinstance(control, W.FloatLogSlider):  # min and max are exponents
        return control.base ** control.min, control.base ** control.max
    return control.min, control.max


def corners(explorer):
    """(label, values) pairs: each control at each extreme, then all-min and all-max."""
    defaults = dict(explorer.values)
    out = []
    for name, control in explorer.controls.items():
        low, high = _extremes(control)
        out += [(f"{name}=min", {**defaults, name: low}), (f"{name}=max", {**defaults, name: high})]
    out.append(("all-min", {n: _extremes(c)[0] for n, c in explorer.controls.items()}))
    out.append(("all-max", {n: _extremes(c)[1] for n, c in explorer.controls.items()}))
    return out


def draw_at(explorer, values) -> float:
    """Set the controls without redrawing, then time one redraw (the path a slider change takes)."""
    for name, value in values.items():
        control = explorer.controls[name]
        control.unobserve(explorer._on_change, names="value")
        try:
            control.value = value
        finally:
            control.observe(explorer._on_change, names="value")
    start = time.perf_counter()
    explorer.redraw()
    return time.perf_counter() - start


CASES = [pytest.param(label, make, id=label) for label, make in _explorers()]


@pytest.mark.parametrize("label, make", CASES)
def test_every_corner_draws_a_figure_or_a_message(label, make):
    explorer = make()
    slow = []
    for corner, values in corners(explorer):
        seconds = draw_at(explorer, values)
        if seconds > TIME_LIMIT:  # a load spike on a shared machine is not a slow redraw: best of three
            seconds = min(seconds, draw_at(explorer, values), draw_at(explorer, values))
        if explorer.error is None:
            assert explorer.image.value[:8] == b"\x89PNG\r\n\x1a\n", (label, corner)
        else:
            assert explorer.message.value and "Traceback" not in explorer.error and len(explorer.error) < 600
        if seconds > TIME_LIMIT:
            slow.append(f"{corner}: {seconds * 1e3:.0f} ms")
    assert not slow, f"{label} redraws too slowly at {slow}"


def test_reliability_extremes_say_what_is_wrong():
    from atscale.widgets import reliability as wr

    t = wr.timeline_explorer()
    draw_at(t, {n: _extremes(c)[1] for n, c in t.controls.items()})
    # 3 days of work that would take ~2 years of failures and restarts: refused with the reason, not drawn
    # as 667 overlapping day rows
    assert t.error and t.error.startswith("infeasible timeline") and "checkpoint_time" in t.error
    draw_at(t, {**t.values, "gpus": 16_384, "interval_hours": 1.0, "checkpoint_time": 600, "restart_time": 3600})
    assert t.error is None  # an 8-day run: one row per day
    draw_at(t, {**t.values, "gpus": 16_384, "interval_hours": 0.5, "checkpoint_time": 900, "restart_time": 7200})
    assert t.error is None  # a long run is drawn with rows of several days (at most 14 rows)
    u_curve = wr.u_curve_explorer()
    draw_at(u_curve, {**u_curve.values, "gpus": 16_384, "checkpoint_time": 1800, "restart_time": 7200})
    assert u_curve.error is None and "infeasible" in u_curve.summary_text


if __name__ == "__main__":  # the real timings, for the report
    for label, make in _explorers():
        explorer = make()
        rows = [(corner, draw_at(explorer, values), explorer.error) for corner, values in corners(explorer)]
        worst = max(rows, key=lambda r: r[1])
        print(f"{label}: {len(rows)} corners, worst {worst[1] * 1e3:.0f} ms at {worst[0]}; "
              f"median {sorted(r[1] for r in rows)[len(rows) // 2] * 1e3:.0f} ms; "
              f"messages at {[r[0] for r in rows if r[2]]}")
