"""Interactive explorers: controls wired to a plot function from :mod:`atscale.plots`.

An :class:`Explorer` is deliberately thin. It owns a set of ipywidgets controls,
calls one plot function with their values, and shows the result as a PNG. It

* redraws on every change, drawing on a fresh figure that pyplot never sees
  (no global state, no figures leaking into later cells);
* shows a library ``ValueError`` as a message in place of the figure, never a
  traceback;
* displays, in a live notebook, as the widget; and wherever no kernel runs (the HTML
  book, a stored notebook before it is run) as an ordinary figure of its default state
  with a one-line note that it is live when the chapter is run. ``tools/execute-notebooks``
  stores only that static form (``text/html``), so the book publishes it.

Example::

    from atscale import plots, widgets
    widgets.Explorer(plots.catalog_scatter,
                     dtype=widgets.dropdown(["fp64", "tf32", "bf16", "fp8"], "bf16", "dtype"))
"""

from ._base import Explorer, LIVE_NOTE, dropdown, slider  # noqa: F401

# One submodule per chapter; their explorers are re-exported here (``widgets.catalog_explorer``).
from .catalog import *  # noqa: E402,F401,F403
from .roofline import *  # noqa: E402,F401,F403
from .memory import *  # noqa: E402,F401,F403
from .reliability import *  # noqa: E402,F401,F403
from .collectives import *  # noqa: E402,F401,F403
from .parallelism import *  # noqa: E402,F401,F403
from .experts import *  # noqa: E402,F401,F403
from .jct import *  # noqa: E402,F401,F403
