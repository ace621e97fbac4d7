"""Small NumPy helpers shared by the chapter modules: :func:`as_scalar`, and the two operation namespaces
(``xp``) through which one cost-term function runs on one plan of Python numbers (:class:`_ScalarOps`, at Python's
speed: :func:`atscale.parallelism.step_time`) or on NumPy arrays of plans (:class:`_ArrayOps`:
:func:`atscale.parallelism.evaluate`, :func:`atscale.search.search`)."""

from __future__ import annotations

import bisect
import math
import operator

import numpy as np


def as_scalar(x):
    """A 0-d result as a plain ``float``; arrays unchanged. Scalar inputs give scalar outputs."""
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


class _ScalarOps:
    """The array operations the cost terms use, for one layout of Python floats and bools: with them the same
    code runs on NumPy arrays (``c.xp`` is :class:`_ArrayOps`) and, at Python's speed, on one plan
    (:func:`atscale.parallelism.step_time`)."""

    where = staticmethod(lambda cond, a, b: a if cond else b)
    maximum = staticmethod(max)
    minimum = staticmethod(min)
    ceil = staticmethod(lambda x: float(math.ceil(x)))
    floor = staticmethod(lambda x: float(math.floor(x)))
    choose = staticmethod(lambda i, options: options[int(i)])
    logical_not = staticmethod(operator.not_)
    # Where only one branch is wanted, compute only that one (the array version computes both).
    lazy_where = staticmethod(lambda cond, if_true, if_false: if_true() if cond else if_false())
    lazy_choose = staticmethod(lambda i, options: options[int(i)]())
    first_max = staticmethod(lambda values: max(range(len(values)), key=values.__getitem__))

    @staticmethod
    def interp(x, xs, ys):
        """``numpy.interp`` for one Python number: linear between the points ``xs`` (increasing), held beyond."""
        if x <= xs[0]:
            return ys[0]
        if x >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, x)
        return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - xs[i - 1]) / (xs[i] - xs[i - 1])


class _ArrayOps:
    """The same operations on NumPy arrays (:func:`atscale.parallelism.evaluate`, :func:`atscale.search.search`):
    every branch is computed."""

    where, maximum, minimum, ceil, floor, choose, logical_not = (np.where, np.maximum, np.minimum, np.ceil, np.floor,
                                                                 np.choose, np.logical_not)
    interp = staticmethod(np.interp)
    lazy_where = staticmethod(lambda cond, if_true, if_false: np.where(cond, if_true(), if_false()))
    lazy_choose = staticmethod(lambda i, options: np.choose(i, [option() for option in options]))
    first_max = staticmethod(lambda values: np.argmax(np.stack(np.broadcast_arrays(*values)), axis=0))
