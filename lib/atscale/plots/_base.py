"""The shared machinery of :mod:`atscale.plots` (its house style, helpers and base classes), in a module of its
own so that the chapter submodules import it from here and the package only re-exports: no import
circle between the package and its submodules."""


from __future__ import annotations

import functools
from collections import OrderedDict

import matplotlib as mpl
import matplotlib.figure  # noqa: F401  (mpl.figure.Figure in house_style)
import numpy as np


# Okabe & Ito (2008), "Color Universal Design": distinguishable by all common colour-vision types.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
"""Okabe-Ito colours, yellow last: it is hard to read on white."""
INK = "#1a1a1a"
MUTED = "#6b6b6b"

DPI = 150
"""Pixels per inch of every PNG the library draws (static figures and explorers): sharp on high-density
screens when the page scales the image down to its column."""

MIN_FONT = 9.0
"""The smallest text in a figure, in points: at :data:`DPI` and a 6.4-inch figure scaled to a phone's
width, still about 8 px high; plot functions that ask for less get this."""

STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "axes.titlesize": 11.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 10.5,
    "axes.grid": True,
    "axes.axisbelow": True,  # grid lines under the data and the labels drawn on it
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": mpl.cycler(color=PALETTE),
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.6,
    "xtick.color": INK,
    "ytick.color": INK,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "legend.fontsize": 9.5,
    "legend.frameon": False,
    "font.size": 10.5,
    "text.color": INK,
    "lines.linewidth": 1.8,
    "svg.hashsalt": "atscale",  # deterministic SVG ids
}


MARGINS = {"left": 0.12, "right": 0.95, "bottom": 0.13, "top": 0.91}
"""Fixed subplot margins. Constrained layout would adapt them automatically but costs
~60 ms per redraw (it measures every label), too much for a 100 ms widget budget."""


def house_style(func):
    """Decorator: run a plot function inside the house style (``matplotlib.rc_context``).

    When the function draws its own figure (no ``ax`` passed), the figure is then finished by
    :func:`finish`: no text under :data:`MIN_FONT`, labels on the data kept off the grid lines, every key
    placed where it covers no plotted point (inside the axes if a corner is free, else beside them), and
    the canvas grown so that nothing is cut off at its edges. A widget passes its own ``ax`` and skips
    this (it costs a draw)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with mpl.rc_context(STYLE):
            fig = func(*args, **kwargs)
            if kwargs.get("ax") is None and isinstance(fig, mpl.figure.Figure):
                finish(fig)
            return fig

    return wrapper


# --- finishing a figure: fonts, keys off the data, nothing clipped ----------------------------------------
_IN_AXES_LOCS = ("upper left", "upper right", "lower right", "lower left", "center right", "center left",
                 "upper center", "lower center")


def data_points(ax, renderer=None) -> np.ndarray:
    """Display coordinates (pixels) of what ``ax`` plots: the vertices of its lines (with points between
    them, so that a key crossed by a line counts as covering it), its scatter points, and the corners
    and centre of its bars and other patches. An ``(n, 2)`` array."""
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Rectangle

    points = [np.empty((0, 2))]
    for line in ax.get_lines():
        if not line.get_visible() or line.get_label() == "_nolegend_" and not len(line.get_xydata()):
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
        xy = xy[np.isfinite(xy).all(axis=1)]
        if len(xy) > 1 and line.get_linestyle() not in ("None", "", " ", "none"):
            t = np.linspace(0, 1, 24)[:, None, None]
            xy = (xy[:-1] * (1 - t) + xy[1:] * t).reshape(-1, 2)
        points.append(xy)
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_visible():
            offsets = np.asarray(coll.get_offsets(), dtype=float)
            if len(offsets):
                xy = coll.get_offset_transform().transform(offsets)
                points.append(xy[np.isfinite(xy).all(axis=1)])
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_width() and patch.get_height():
            box = patch.get_window_extent(renderer)
            xs, ys = np.linspace(box.x0, box.x1, 6), np.linspace(box.y0, box.y1, 6)
            points.append(np.array([(x, y) for x in xs for y in ys]))
    xy = np.concatenate(points)
    inside = ax.bbox.padded(2)
    return xy[(xy[:, 0] >= inside.x0) & (xy[:, 0] <= inside.x1) & (xy[:, 1] >= inside.y0) & (xy[:, 1] <= inside.y1)]


def legend_covers(legend, points: np.ndarray, renderer, pad: float = 2.0) -> int:
    """How many of ``points`` (pixels) lie under ``legend``'s box."""
    box = legend.get_window_extent(renderer).padded(pad)
    return int(np.count_nonzero((points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0)
                                & (points[:, 1] < box.y1)))


def in_axes(legend, ax, renderer) -> bool:
    """Whether ``legend`` is drawn inside ``ax``'s box (rather than beside or below it)."""
    box, frame = legend.get_window_extent(renderer), ax.bbox
    return box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1 and box.y1 <= frame.y1 + 1


def _place_legend(ax, renderer) -> None:
    """Keep ``ax``'s in-axes key where it covers no plotted point: its own place if free, else the first
    free one of :data:`_IN_AXES_LOCS`, else beside the axes on the right."""
    legend = ax.get_legend()
    if legend is None or not legend.get_visible() or not in_axes(legend, ax, renderer):
        return
    points = data_points(ax, renderer)
    if not legend_covers(legend, points, renderer):
        return
    legend.set_bbox_to_anchor(None)
    for loc in _IN_AXES_LOCS:
        legend.set_loc(loc)
        if in_axes(legend, ax, renderer) and not legend_covers(legend, points, renderer):
            return
    legend.set_loc("upper left")
    legend.set_bbox_to_anchor((1.02, 1.0), transform=ax.transAxes)


def renderer_of(fig):
    """A renderer for ``fig`` (a figure built without pyplot gets an Agg canvas first), after a draw."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def fit_canvas(fig, pad: float = 0.06) -> None:
    """Grow ``fig``'s canvas (inches) so that every artist lies inside it, keeping each axes' size and the
    artists' relative places: a key or label beside the axes is never cut off at the figure's edge."""
    renderer = renderer_of(fig)
    bbox = fig.get_tightbbox(renderer)  # inches
    width, height = fig.get_size_inches()
    x0, y0 = min(bbox.x0 - pad, 0.0), min(bbox.y0 - pad, 0.0)
    x1, y1 = max(bbox.x1 + pad, width), max(bbox.y1 + pad, height)
    if x0 >= 0 and y0 >= 0 and x1 <= width and y1 <= height:
        return
    new_w, new_h = x1 - x0, y1 - y0
    boxes = [(ax, ax.get_position(original=True)) for ax in fig.axes]
    fig.set_size_inches(new_w, new_h)
    for ax, box in boxes:
        ax.set_position([(box.x0 * width - x0) / new_w, (box.y0 * height - y0) / new_h,
                         box.width * width / new_w, box.height * height / new_h])


def _min_font(fig) -> None:
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        if text.get_fontsize() < MIN_FONT:
            text.set_fontsize(MIN_FONT)


def finish_live(fig) -> None:
    """The house style's last touches on a :class:`LiveFigure`'s figure, once, when its explorer is built: no
    text under :data:`MIN_FONT` and the canvas grown so that no key or label is cut off at its edges."""
    with mpl.rc_context(STYLE):
        _min_font(fig)
        fit_canvas(fig)


def finish(fig) -> None:
    """The house style's last touches on a whole figure (see :func:`house_style`)."""
    _min_font(fig)
    for ax in fig.axes:
        for text in ax.texts:  # labels on the data: the grid does not run through them
            if text.get_bbox_patch() is None and text.get_visible():
                text.set_bbox(dict(facecolor="white", edgecolor="none", alpha=0.8, pad=0.5))
    renderer = renderer_of(fig)  # legends measure themselves on a renderer
    for ax in fig.axes:
        _place_legend(ax, renderer)
    fit_canvas(fig)


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
                _min_font(self.fig)  # a layout may have built a key or label of its own
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
