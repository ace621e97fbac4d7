"""Small NumPy helper shared by the chapter modules."""

from __future__ import annotations

import numpy as np


def as_scalar(x):
    """A 0-d result as a plain ``float``; arrays unchanged. Scalar inputs give scalar outputs."""
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x
