"""The shared machinery of :mod:`atscale.widgets` (its house style, helpers and base classes), in a module of its
own so that the chapter submodules import it from here and the package only re-exports: no import
circle between the package and its submodules."""


from __future__ import annotations

import base64
import html
import io
from typing import Callable

import ipywidgets as W
import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from .. import _validate as _v
from .. import plots

LIVE_NOTE = "Live when you run this chapter (rocket icon above: Binder or Colab); shown here at its defaults."
"""The one-line note under an explorer's static figure, so a reader never takes it for a broken widget."""


def slider(minimum: float, maximum: float, value: float, description: str, *, step: float | None = None,
           log: bool = False, integer: bool = False, readout_format: str | None = None) -> W.Widget:
    """A labelled slider. ``log=True`` gives a logarithmic slider over [minimum, maximum] (both > 0)."""
    log, integer = _v.flag("log", log), _v.flag("integer", integer)
    low = 0 if log else None
    unit = "a log slider" if log else ""
    minimum = _v.number("minimum", minimum, scalar=True, low=low, low_open=log, unit=unit)
    maximum = _v.number("maximum", maximum, scalar=True, low=minimum, low_open=True,
                        unit=f"above minimum={minimum:g}" + (", a log slider" if log else ""))
    value = _v.number("value", value, scalar=True, low=minimum, high=maximum, unit=unit)
    if step is not None:
        step = _v.positive("step", step, scalar=True)
    style = {"description_width": "initial"}
    layout = W.Layout(width="420px")
    common = dict(description=description, style=style, layout=layout, continuous_update=False)
    if log:
        import math

        return W.FloatLogSlider(value=value, base=10, min=math.log10(minimum), max=math.log10(maximum),
                                step=step or 0.05, readout_format=readout_format or ".3g", **common)
    if integer:
        return W.IntSlider(value=int(value), min=int(minimum), max=int(maximum), step=int(step or 1), **common)
    return W.FloatSlider(value=value, min=minimum, max=maximum, step=step or (maximum - minimum) / 100,
                         readout_format=readout_format or ".3g", **common)


def dropdown(options, value, description: str) -> W.Dropdown:
    """A labelled drop-down menu; ``options`` is a list or a {label: value} dict."""
    choices = list(options.values()) if isinstance(options, dict) else list(options)
    if not choices:
        raise ValueError(f"options={_v.show(options)} must list at least one choice")
    if not any(_same(value, c) for c in choices):
        raise ValueError(f"value={_v.show(value)} must be one of the options, {_v.show(choices)}")
    return W.Dropdown(options=options, value=value, description=description,
                      style={"description_width": "initial"}, layout=W.Layout(width="420px"))


def _same(value, choice) -> bool:
    """Whether ``value`` is the option ``choice`` (``1`` is not ``True``; an array is no option)."""
    if isinstance(value, (bool, np.bool_)) != isinstance(choice, (bool, np.bool_)) or isinstance(value, np.ndarray):
        return False
    try:
        return bool(value is choice or value == choice)
    except (TypeError, ValueError):
        return False


class Explorer:
    """Controls wired to a plot function.

    Args:
        plot: a function of :mod:`atscale.plots`, called as ``plot(ax=ax, **values)``, or as
            ``plot(result, ax=ax)`` when ``compute`` is given; or a :class:`atscale.plots.LiveFigure`
            subclass (with ``compute``), built once as ``plot(figsize)`` and then only updated, so a
            redraw draws only what changed.
        figsize: inches (width, height).
        compute: optional ``compute(**values) -> result``, a call into the chapter's module made
            once per redraw; the plot and the summary then both receive its result, so nothing
            is computed twice.
        summary: optional ``summary(**values) -> str`` (or ``summary(result)``), shown under the
            figure (plain text), e.g. "memory-bound: 412 TFLOP/s attainable".
        fixed: keyword arguments passed to ``plot`` or ``compute`` (and ``summary``) unchanged.
        advanced: names of controls folded into a closed "More settings" accordion under the main ones,
            so that the figure stays near the top of the page.
        snapshot: whether the static page shows the default figure (False where the chapter prints that
            same figure just before: the page then says where the live version is, without a duplicate).
        links: optional ``links(values, changed) -> {name: value}``: when the control ``changed`` is moved
            by the reader, other controls follow (e.g. DP so that the GPU count stays that of the
            cluster); the figure is redrawn once, for the settled values.
        **controls: name -> ipywidgets control; the name is the keyword argument of ``plot``.

    Attributes:
        image: the ``ipywidgets.Image`` holding the current PNG.
        message: the ``ipywidgets.HTML`` showing an error in place of the figure (empty if none).
        caption: the ``ipywidgets.HTML`` showing the summary line.
        summary_text: the current summary line (empty if none).
        error: the last ``ValueError`` message, or ``None``.
    """

    def __init__(self, plot: Callable, *, figsize=(6.4, 4.0), compute: Callable | None = None,
                 summary: Callable | None = None, fixed: dict | None = None, advanced=(),
                 links: Callable | None = None, snapshot: bool = True, **controls: W.Widget):
        if not controls:
            raise ValueError("an Explorer needs at least one control")
        self.plot, self.figsize, self.compute, self.summary = plot, figsize, compute, summary
        self._live = None
        if isinstance(plot, type) and issubclass(plot, plots.LiveFigure):
            if compute is None:
                raise ValueError(f"{plot.__name__} is a LiveFigure: it draws a computed result, so compute= is needed")
            self._live = plot(figsize)
            plots.finish_live(self._live.fig)
        self.summary_text = ""
        self.fixed = dict(fixed or {})
        self.controls = controls
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.message = W.HTML()
        self.caption = W.HTML()
        self.error: str | None = None
        unknown = set(advanced) - set(controls)
        if unknown:
            raise ValueError(f"advanced={sorted(advanced)} names no control: {sorted(unknown)}")
        self.links, self._linking = links, False
        if not isinstance(snapshot, bool):
            raise ValueError(f"snapshot={snapshot!r} must be True or False")
        self.snapshot = snapshot
        for control in controls.values():
            control.observe(self._on_change, names="value")
        main = W.VBox([c for n, c in controls.items() if n not in advanced])
        boxes = [main]
        if advanced:
            more = W.Accordion(children=[W.VBox([controls[n] for n in advanced])], selected_index=None)
            more.set_title(0, "More settings")
            boxes.append(more)
        self.ui = W.VBox([*boxes, self.message, self.image, self.caption])
        self.redraw()

    # --- behaviour -----------------------------------------------------------------------
    @property
    def values(self) -> dict:
        """Current control values, as keyword arguments for the plot function."""
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, change=None):
        if self._linking:
            return
        if self.links is not None and change is not None:
            changed = next((n for n, c in self.controls.items() if c is change.get("owner")), None)
            follow = self.links(self.values, changed) if changed else {}
            self._linking = True
            try:
                for name, value in follow.items():
                    self.controls[name].value = value
            finally:
                self._linking = False
        self.redraw()

    def _arguments(self, values: dict) -> tuple[tuple, dict]:
        """What the plot (and the summary) are called with: the computed result, or the values."""
        kwargs = {**self.fixed, **values}
        return ((self.compute(**kwargs),), {}) if self.compute else ((), kwargs)

    def render(self, **values) -> bytes:
        """PNG bytes of the plot for ``values`` (raises the library's ``ValueError``)."""
        return self._png(*self._arguments(values))

    def _png(self, args: tuple, kwargs: dict) -> bytes:
        if self._live is not None:
            return self._live.png(*args)
        with mpl.rc_context(plots.STYLE):
            fig = Figure(figsize=self.figsize)
            fig.subplots_adjust(**plots.MARGINS)
            self.plot(*args, ax=fig.add_subplot(), **kwargs)
            buffer = io.BytesIO()
            # Fast zlib level: the PNG is a little larger, the redraw ~10 ms quicker.
            fig.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        return buffer.getvalue()

    def redraw(self) -> None:
        """Draw the current values; on ``ValueError`` show its message instead."""
        try:
            args, kwargs = self._arguments(self.values)
            png = self._png(args, kwargs)
            text = self.summary(*args, **kwargs) if self.summary else ""
        except ValueError as exc:
            self.error = str(exc)
            self.message.value = (f'<div class="atscale-error" style="color:#b00020;padding:0.5em 0">'
                                  f"⚠ {html.escape(self.error)}</div>")
            self.image.layout.display = "none"
            self.caption.value = self.summary_text = ""
            return
        self.error = None
        self.message.value = ""
        self.image.value = png
        self.image.layout.display = None
        self.summary_text = text
        self.caption.value = f"<div>{html.escape(text)}</div>" if text else ""

    def update(self, **values) -> None:
        """Set controls programmatically (each change redraws), e.g. in tests."""
        for name, value in values.items():
            if name not in self.controls:
                raise ValueError(f"unknown control {name!r}; controls: {sorted(self.controls)}")
            self.controls[name].value = value

    # --- display ---------------------------------------------------------------------------
    def _static_html(self) -> str:
        if not self.snapshot and not self.error:
            names = ", ".join(getattr(c, "description", n) for n, c in self.controls.items())
            return (f'<p class="atscale-explorer atscale-live-note"><em>▶ Explorer: {html.escape(names)}. '
                    f"{html.escape(LIVE_NOTE.split(';')[0])}; its default view is the figure above.</em></p>")
        if self.error:
            body = f'<p class="atscale-error">⚠ {html.escape(self.error)}</p>'
        else:
            data = base64.b64encode(self.image.value).decode("ascii")
            body = f'<img src="data:image/png;base64,{data}" alt="{html.escape(self._alt())}" style="max-width:100%">'
        caption = html.escape(self.summary_text)
        return (f'<figure class="atscale-explorer">{body}<figcaption>'
                f"{caption + '<br>' if caption else ''}"
                f'<em class="atscale-live-note">▶ {html.escape(LIVE_NOTE)}</em></figcaption></figure>')

    def _alt(self) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in self.values.items())
        return f"{getattr(self.plot, '__name__', 'figure')} at {settings}"

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.ui._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/html"] = self._static_html()
        bundle["text/plain"] = f"Explorer({getattr(self.plot, '__name__', 'plot')}; {self._alt()})"
        return bundle
