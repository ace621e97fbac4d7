"""The figures the chapters draw: one function per figure.

Conventions (shared by every chapter):

* A plot function takes keyword arguments for what it shows and an optional
  ``ax``. Without ``ax`` it creates a figure in the house style; either way it
  returns the :class:`matplotlib.figure.Figure`. The same function draws the static
  figure in the book and every redraw of a widget (:mod:`atscale.widgets`).
* Axes are labelled with their unit; values are plotted in readable units
  (TFLOP/s, TB/s, GB, hours) converted from the library's SI floats at the last moment.
* Bad input raises :class:`ValueError` *before* anything is drawn, so a widget can
  show the message instead of a half-drawn figure.

The house style (:data:`STYLE`, applied by :func:`house_style` to every plot function) uses an opaque
white background, dark text and the Okabe-Ito colour-blind-safe palette, so a figure reads the same in
the book's light and dark themes; PNGs at :data:`DPI` (150) dots per inch; no text under
:data:`MIN_FONT` points; grid lines under the data and a white ground under labels drawn on it. A whole
figure is finished by :func:`finish`: a key that covers plotted points moves to a free corner or beside
the axes, and the canvas grows so that nothing is cut off (``tests/test_figure_style.py`` checks every
figure of the book and every explorer for both).
"""

from ._base import (DPI, INK, MARGINS, MIN_FONT, MUTED, PALETTE, STYLE, LiveFigure, finish, finish_live,  # noqa: F401
                    house_style, log_axes, new_axes)

# One submodule per chapter; their figures are re-exported here (``plots.catalog_scatter``).
from .catalog import *  # noqa: E402,F401,F403
from .roofline import *  # noqa: E402,F401,F403
from .memory import *  # noqa: E402,F401,F403
from .reliability import *  # noqa: E402,F401,F403
from .collectives import *  # noqa: E402,F401,F403
from .parallelism import *  # noqa: E402,F401,F403
from .experts import *  # noqa: E402,F401,F403
from .accuracy import *  # noqa: E402,F401,F403
from .jct import *  # noqa: E402,F401,F403
