"""The house style of figures (issue 35, item 4): every figure the chapters show, and every explorer's figure,
is sharp, readable, and has no key or label cut off at its edges or covering the data.

The chapters' figures are collected by running each chapter's code cells in this process with ``glue`` and
``display`` replaced by a collector, so the test sees exactly the figures the book shows (and a new figure is
checked the day it is glued), as matplotlib objects whose artists can be measured.
"""

from __future__ import annotations

import ast
import importlib
import io
import pkgutil
import re
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text

from atscale import plots, widgets
from atscale.plots import _base

ROOT = Path(__file__).resolve().parents[1]
SLOW_CHAPTERS = {"case-1000-gpus"}  # about 90 s of sweeps


def chapter_figures(path: Path) -> list[tuple[str, Figure]]:
    """(name, figure) for every figure the chapter glues, displays or leaves as a cell's value."""
    import IPython.display
    import myst_nb

    figures: list[tuple[str, Figure]] = []

    def glue(name, value, display=True):
        if isinstance(value, Figure):
            figures.append((name, value))

    def display(*objs, **_kw):
        figures.extend(("display", o) for o in objs if isinstance(o, Figure))

    saved = myst_nb.glue, IPython.display.display
    myst_nb.glue, IPython.display.display = glue, display
    namespace = {"__name__": "__main__", "display": display}
    try:
        for i, cell in enumerate(nbformat.read(path, 4).cells):
            if cell.cell_type != "code" or "raises-exception" in cell.metadata.get("tags", []):
                continue
            source = "\n".join(re.sub(r"^(\s*)[%!].*", r"\1pass", line) for line in cell.source.splitlines())
            tree = ast.parse(source)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, f"{path.name}[{i}]", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), f"{path.name}[{i}]", "eval"), namespace)
                if isinstance(value, Figure):
                    figures.append((f"cell {i}", value))
    finally:
        myst_nb.glue, IPython.display.display = saved
    return figures


def _tick_labels(fig) -> set:
    return {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
            for t in axis.get_ticklabels(minor=False) + axis.get_ticklabels(minor=True)}


def _drawn_texts(fig):
    """Every visible, non-empty text and key of ``fig``, tick labels apart (only the ticks in view are drawn:
    :func:`_axis_boxes` measures those)."""
    ticks = _tick_labels(fig)
    for artist in fig.findobj(lambda a: isinstance(a, (Text, Legend))):
        if id(artist) in ticks or not artist.get_visible() or (isinstance(artist, Text) and not artist.get_text().strip()):
            continue
        if isinstance(artist, Text) and artist.get_clip_on() and artist.axes is not None:
            x, y = artist.get_transform().transform(artist.get_position())
            if not artist.axes.bbox.contains(x, y):
                continue  # outside the axes and clipped: not drawn
        yield artist


def layout_problems(fig) -> list[str]:
    """What a reader would see wrong in ``fig`` as saved: a text or key cut off at the figure's edge, a key
    inside the axes over a plotted point, a text under :data:`atscale.plots.MIN_FONT`."""
    fig.savefig(io.BytesIO(), format="png")  # the draw a reader's image comes from (no tight bbox)
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox.padded(1.0)
    problems = []
    for artist in _drawn_texts(fig):
        box = artist.get_window_extent(renderer)
        what = artist.get_text()[:40] if isinstance(artist, Text) else "the key"
        if box.x0 < frame.x0 or box.x1 > frame.x1 or box.y0 < frame.y0 or box.y1 > frame.y1:
            problems.append(f"{what!r} is cut off at the figure's edge")
        if isinstance(artist, Text) and artist.get_fontsize() < plots.MIN_FONT - 1e-9:
            problems.append(f"{what!r} is {artist.get_fontsize():g} pt")
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):  # the drawn tick labels and the axis label
            box = axis.get_tightbbox(renderer)
            if box is not None and (box.x0 < frame.x0 or box.x1 > frame.x1 or box.y0 < frame.y0 or box.y1 > frame.y1):
                problems.append(f"the {axis.axis_name}-axis of {ax.get_title()[:40]!r} is cut off at the figure's edge")
        legend = ax.get_legend()
        if legend is not None and legend.get_visible() and _base.in_axes(legend, ax, renderer):
            covered = _base.legend_covers(legend, _base.data_points(ax, renderer), renderer)
            if covered:
                problems.append(f"the key of {ax.get_title()[:40]!r} covers {covered} plotted points")
    return problems


def _chapters():
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        marks = [pytest.mark.slow] if path.stem in SLOW_CHAPTERS else []
        yield pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", list(_chapters()))
def test_chapter_figures_have_no_clipped_or_covering_keys(path):
    matplotlib.use("Agg")
    bad = {name: p for name, fig in chapter_figures(path) if (p := layout_problems(fig))}
    assert not bad, f"{path.stem}: {bad}"


def test_house_style_is_sharp_and_readable():
    assert plots.STYLE["figure.dpi"] >= 150 and plots.STYLE["savefig.dpi"] >= 150
    for key in ("font.size", "legend.fontsize", "xtick.labelsize", "ytick.labelsize", "axes.labelsize"):
        assert plots.STYLE[key] >= plots.MIN_FONT, key
    assert plots.STYLE["axes.axisbelow"] is True  # grid lines under the data and labels
    # a plot function asking for a tiny key gets MIN_FONT, and its labels on the data hide the grid
    fig = plots.cp_exposure_chart([8192, 16384], {"a": [0.5, 0.0], "b": [0.0, 0.0]})
    assert not layout_problems(fig)


def test_a_key_over_the_data_is_moved_off_it():
    import matplotlib.pyplot as plt

    @plots.house_style
    def crowded(ax=None):
        ax = plots.new_axes(ax)
        x = np.linspace(0, 1, 50)
        for k in range(4):  # lines through every corner
            ax.plot(x, (x + k / 4) % 1, label=f"line {k}")
            ax.plot(x, 1 - (x + k / 4) % 1)
        ax.legend(loc="upper right", fontsize=6)
        return ax.figure

    fig = crowded()
    assert not layout_problems(fig)
    plt.close(fig)


def _explorers():
    for info in pkgutil.iter_modules(widgets.__path__):
        module = importlib.import_module(f"atscale.widgets.{info.name}")
        for name in getattr(module, "__all__", ()):
            if name.endswith("_explorer"):
                yield pytest.param(getattr(module, name), id=name)


@pytest.mark.parametrize("factory", list(_explorers()))
def test_explorer_figures_keep_their_keys_and_labels_inside(factory):
    explorer = factory()
    assert explorer.error is None
    if explorer._live is not None:
        fig = explorer._live.fig
        fig.canvas.draw()  # the background: axes, labels, keys
        renderer = fig.canvas.get_renderer()
        frame = fig.bbox.padded(1.0)
        for artist in _drawn_texts(fig):
            if artist.get_animated():
                continue  # the dynamic layer is drawn onto the background; its texts are checked below
            box = artist.get_window_extent(renderer)
            assert frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1), (
                f"{factory.__name__}: {getattr(artist, 'get_text', lambda: 'the key')()!r} is cut off")
            if isinstance(artist, Text):
                assert artist.get_fontsize() >= plots.MIN_FONT, artist.get_text()
    from PIL import Image

    image = Image.open(io.BytesIO(explorer.image.value))
    width, height = image.size
    assert width >= 6 * plots.DPI * 0.95, f"{factory.__name__}: {width} px wide, soft on a high-density screen"
