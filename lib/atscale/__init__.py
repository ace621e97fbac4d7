"""atscale: the shared library of the textbook *Training at Scale*.

One module per chapter (``roofline``, ``memory``, ...) plus the catalog
(``hardware``, ``models``), the running example (``scenario``), units and
formatters (``units``), figures (``plots``), widgets (``widgets``) and exercise
feedback (``check``). Import what you need::

    from atscale import hardware, models, units
"""

__version__ = "0.1.0"

from . import hardware, models, units  # noqa: E402  (light: NumPy only)

__all__ = ["hardware", "models", "units", "__version__"]
