"""The shared machinery of :mod:`atscale.plots` (its house style, helpers and base classes), in a module of its
own so that the chapter submodules import it from here and the package only re-exports: no import
circle between the package and its submodules."""


from __future__ import annotations

import functools
from collections import OrderedDict

import matplotlib as mpl
import numpy as np


# Okabe & Ito (2008), "Color Universal Design": distinguishable by all common colour-vision types.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
"""Okabe-Ito colours, yellow last: it is hard to read on white."""
INK = "#1a1a1a"
MUTED = "#6b6b6b"

STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "axes.grid": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": mpl.cycler(color=PALETTE),
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.6,
    "xtick.color": INK,
    "ytick.color": INK,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "font.size": 10,
    "text.color": INK,
    "lines.linewidth": 1.8,
    "svg.hashsalt": "atscale",  # deterministic SVG ids
}


MARGINS = {"left": 0.12, "right": 0.95, "bottom": 0.13, "top": 0.91}
"""Fixed subplot margins. Constrained layout would adapt them automatically but costs
~60 ms per redraw (it measures every label), too much for a 100 ms widget budget."""


def house_style(func):
    """Decorator: run a plot function inside the house style (``matplotlib.rc_context``)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with mpl.rc_context(STYLE):
            return func(*args, **kwargs)

    return wrapper


def new_axes(ax=None, figsize=None):
    """Return ``ax`` if given, else a new figure's axes in the house style.

    The figure is created through pyplot (which sets up Jupyter's figure display) and at once
    released from pyplot's list of open figures, so Jupyter never shows it by itself at the end
    of a cell: it appears where a chapter glues it, or as a cell's value, exactly once.
    Widgets pass their own ``ax`` (see :mod:`atscale.widgets`).
    """
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt  # deferred: pyplot is the slowest import

    with mpl.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=figsize or STYLE["figure.figsize"])
        fig.subplots_adjust(**MARGINS)  # not gridspec_kw: a plot may widen a margin later
    plt.close(fig)
    return ax


def log_axes(ax, x: bool = True, y: bool = True) -> None:
    """Log scale with plain-number labels on a 1-2-5 grid and no minor labels.

    Matplotlib's default labels every minor tick when a log axis spans less than a
    decade or so; measuring those labels dominates the redraw time of a widget.
    Call after setting the limits.
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    def fmt(value, _pos):
        return f"{value:,.0f}" if value >= 1 else f"{value:g}"

    for flag, axis, (lo, hi), set_scale, set_lim in (
        (x, ax.xaxis, ax.get_xlim(), ax.set_xscale, ax.set_xlim),
        (y, ax.yaxis, ax.get_ylim(), ax.set_yscale, ax.set_ylim),
    ):
        if not flag:
            continue
        set_scale("log")
        set_lim(lo, hi)
        decades = np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
        steps = (1, 2, 5) if np.log10(hi / lo) < 3 else (1,)
        ticks = [m * 10.0**d for d in decades for m in steps if lo <= m * 10.0**d <= hi]
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(FuncFormatter(fmt))
        axis.set_minor_locator(NullLocator())
        axis.set_minor_formatter(NullFormatter())


class LiveFigure:
    """A figure for an explorer, drawn in two layers so that a redraw costs only what changed.

    The *background* (axes, spines, tick labels, axis labels, keys) is rasterised once per *layout* and
    kept; the *dynamic* artists (bars, lines, markers, changing text) are drawn onto a copy of it on every
    update. This is matplotlib's "blitting", which its animations use; here the result is a PNG. A redraw
    then costs a few artists and a PNG encode instead of building and drawing a whole figure, which is
    what keeps a two-panel explorer well inside the 100 ms budget (see ``benchmarks/``).

    A subclass builds its figure in ``__init__`` (after ``super().__init__(figsize)``, inside
    :data:`STYLE`), registers each artist that changes with :meth:`dynamic`, and implements

    * :meth:`layout` ``(result) -> hashable``: everything the background depends on (e.g. an axis's upper
      limit taken from a fixed ladder, so that a handful of backgrounds are ever drawn); it must also
      *apply* that layout to the axes (set the limits), cheaply, since it runs on every update;
    * :meth:`update` ``(result)``: set the dynamic artists' data for ``result``.

    :meth:`png` returns the PNG bytes for a result. The figure belongs to the instance (never to pyplot).
    At most :attr:`max_backgrounds` backgrounds are kept (about 1 MB each), the least recently used
    dropped first.
    """

    max_backgrounds = 16

    def __init__(self, figsize=(6.4, 4.0)):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.fig = Figure(figsize=figsize, dpi=STYLE["figure.dpi"], facecolor=STYLE["figure.facecolor"])
        self.canvas = FigureCanvasAgg(self.fig)
        self._dynamic: list = []
        self._backgrounds: OrderedDict = OrderedDict()

    def dynamic(self, artist):
        """Register ``artist`` as changing with the result (drawn on every update, never in the background);
        returns it."""
        artist.set_animated(True)  # a full draw skips animated artists: they stay out of the background
        self._dynamic.append(artist)
        return artist

    def layout(self, result):  # pragma: no cover - abstract
        raise NotImplementedError

    def update(self, result):  # pragma: no cover - abstract
        raise NotImplementedError

    def png(self, result) -> bytes:
        """PNG bytes of the figure for ``result``."""
        import io

        from PIL import Image

        with mpl.rc_context(STYLE):
            key = self.layout(result)
            if key not in self._backgrounds:
                self.canvas.draw()
                self._backgrounds[key] = self.canvas.copy_from_bbox(self.fig.bbox)
                while len(self._backgrounds) > self.max_backgrounds:
                    self._backgrounds.popitem(last=False)
            self._backgrounds.move_to_end(key)
            self.canvas.restore_region(self._backgrounds[key])
            self.update(result)
            renderer = self.canvas.get_renderer()
            for artist in self._dynamic:
                if artist.get_visible():
                    artist.draw(renderer)
        width, height = self.canvas.get_width_height()
        image = Image.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buffer = io.BytesIO()
        image.save(buffer, format="png", compress_level=1)  # fastest zlib level: a little larger, quicker
        return buffer.getvalue()
