"""Input validation shared by every ``atscale`` module.

One place decides what a valid number, count, array or catalog name is, so every public
function refuses bad input the same way: a ``ValueError`` whose message names the parameter,
shows the value and says what is valid. The rules:

* NaN is never valid; infinity only where a function says so (``allow_inf=True``);
* bools are not numbers (``True`` is not one layer), strings and ``None`` are not numbers;
* NumPy scalars (``np.int64``, ``np.float32``) are numbers like Python's;
* a count is a whole number (``2.0`` is accepted as 2, ``2.5`` is not);
* arrays are accepted where a function is vectorised (``scalar=False``), and their shapes must
  broadcast together (:func:`broadcast`), else the message names the parameters and shapes.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

__all__ = ["number", "positive", "nonnegative", "count", "choice", "broadcast", "catalog_arg", "is_scalar",
           "show", "seed", "known", "closest", "sequence"]


def show(value) -> str:
    """A short repr of ``value`` for an error message (arrays abbreviated)."""
    if (dataclasses.is_dataclass(value) and not isinstance(value, type)
            and isinstance(getattr(value, "name", None), str)):
        return f"<{type(value).__name__} {value.name!r}>"  # a catalog object: its kind and name
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=6, edgeitems=2, precision=4)
        return f"array({text})" if len(text) < 80 else f"array of shape {value.shape}"
    text = repr(value)
    if len(text) > 80 and isinstance(getattr(value, "name", None), str):  # a catalog object: its kind and name
        return f"<{type(value).__name__} {value.name!r}>"
    if len(text) > 80 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        return f"<a {type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def is_scalar(value) -> bool:
    """Whether ``value`` is a plain or NumPy real scalar (not a bool), the fast path's test."""
    return type(value) is float or type(value) is int or isinstance(value, (np.floating, np.integer))


def _as_array(name: str, value, what: str) -> np.ndarray:
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise ValueError(f"{name}={show(value)} must be {what}")
    try:
        arr = np.asarray(value)
    except Exception:  # ragged sequences and other odd objects
        raise ValueError(f"{name}={show(value)} must be {what}") from None
    if arr.dtype.kind not in "iuf":
        if arr.dtype.kind == "O":
            try:
                arr = arr.astype(float)
            except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any float
                raise ValueError(f"{name}={show(value)} must be {what}") from None
            if any(isinstance(x, bool) for x in np.ravel(np.asarray(value, dtype=object))):
                raise ValueError(f"{name}={show(value)} must be {what}, not a bool")
        else:
            raise ValueError(f"{name}={show(value)} must be {what}")
    return arr


def _describe(low, high, low_open, high_open, integer, allow_inf, unit, kind=None) -> str:
    if kind is None and integer and low == 1 and not low_open and high is None:
        kind, low = "a positive integer", None
    elif kind is None and low == 0 and low_open and high is None:
        kind, low = ("a positive number" if allow_inf else "a positive finite number"), None
    kind = kind or ("a whole number" if integer else ("a number" if allow_inf else "a finite number"))
    if low is not None and high is not None:
        rng = f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low is not None:
        rng = f" {'>' if low_open else '>='} {low:g}"
    elif high is not None:
        rng = f" {'<' if high_open else '<='} {high:g}"
    else:
        rng = ""
    return f"{kind}{rng}{f' ({unit})' if unit else ''}"


def number(name: str, value, *, low=None, high=None, low_open: bool = False, high_open: bool = False,
           allow_inf: bool = False, integer: bool = False, scalar: bool = False, unit: str = "", kind=None):
    """``value`` checked and converted: a ``float`` for a scalar, a float ndarray otherwise.

    Raises ``ValueError`` naming ``name`` when the value is not a real number (bool, str, None,
    complex), is NaN, infinite (unless ``allow_inf``), outside ``[low, high]`` (open ends with
    ``low_open``/``high_open``), not whole (``integer``), or an array where a scalar is needed.
    """
    # Fast path for a valid plain or NumPy scalar (most calls): a few comparisons instead of NumPy
    # reductions on a 0-d array (~1 µs instead of ~30). Anything it does not accept goes on to the
    # full path below, which decides and words the error, so both paths give the same answers.
    if type(value) is float or type(value) is int or isinstance(value, (np.floating, np.integer)):
        try:
            x = float(value)
        except OverflowError:
            x = math.nan
        if (x == x and (allow_inf or not math.isinf(x))
                and (not integer or math.isinf(x) or x.is_integer())
                and (low is None or (x > low if low_open else x >= low))
                and (high is None or (x < high if high_open else x <= high))):
            return x
    what = _describe(low, high, low_open, high_open, integer, allow_inf, unit, kind)
    arr = _as_array(name, value, what)
    if scalar and arr.ndim != 0:
        raise ValueError(f"{name}={show(value)} must be a single value, {what}; got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}={show(value)} must be {what}, not empty")
    x = arr.astype(float)
    if np.any(np.isnan(x)):
        raise ValueError(f"{name}={show(value)} must be {what}, not NaN")
    if not allow_inf and np.any(np.isinf(x)):
        raise ValueError(f"{name}={show(value)} must be {what}, not infinite")
    if integer and np.any(np.isfinite(x) & (x != np.round(x))):
        raise ValueError(f"{name}={show(value)} must be {what}, not a fraction")
    bad = np.zeros(x.shape, dtype=bool)
    if low is not None:
        bad |= (x <= low) if low_open else (x < low)
    if high is not None:
        bad |= (x >= high) if high_open else (x > high)
    if np.any(bad):
        raise ValueError(f"{name}={show(value)} must be {what}")
    return float(x) if x.ndim == 0 else x


def positive(name: str, value, **kw):
    """A number > 0 (see :func:`number`)."""
    return number(name, value, low=0, low_open=True, **kw)


def nonnegative(name: str, value, **kw):
    """A number >= 0 (see :func:`number`)."""
    return number(name, value, low=0, **kw)


def count(name: str, value, *, low: int = 1, high=None, scalar: bool = True, unit: str = ""):
    """A whole number >= ``low``: a Python ``int`` (``scalar``) or an int64 ndarray.

    The library's rule for counts (GPUs, layers, heads, sequences, degrees): a whole float is accepted and
    converted (``8.0`` is 8 GPUs, as NumPy arithmetic often produces it); a fraction (``0.5``), a bool, NaN or
    infinity is a ``ValueError`` naming the argument."""
    x = number(name, value, low=low, high=high, integer=True, scalar=scalar, unit=unit)
    if isinstance(x, float):  # a scalar: skip the NumPy calls below
        if abs(x) > 2**62:
            raise ValueError(f"{name}={show(value)} is too large for a count")
        return int(x)
    if np.any(np.abs(x) > 2**62):
        raise ValueError(f"{name}={show(value)} is too large for a count")
    return int(x) if np.ndim(x) == 0 else x.astype(np.int64)


def sequence(name: str, value, *, allow_empty: bool = False, **kw) -> np.ndarray:
    """A list of numbers (each checked as :func:`number` checks, with its keywords) as a 1-D float ndarray; empty
    only where ``allow_empty`` (e.g. no guide lines on a figure)."""
    if allow_empty and isinstance(value, (list, tuple, np.ndarray)) and np.size(value) == 0:
        return np.zeros(0)
    arr = np.atleast_1d(number(name, value, **kw))
    if arr.ndim != 1:
        raise ValueError(f"{name}={show(value)} must be a flat list of numbers; got shape {arr.shape}")
    return arr


def flag(name: str, value) -> bool:
    """A bool (``True``/``False``, NumPy's included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={show(value)} must be True or False")
    return bool(value)


def flags(name: str, value):
    """A bool or an array of bools (NumPy's included), as a bool ndarray; anything else (``1``, ``"no"``,
    ``None``) is a ``ValueError`` naming ``name`` (``np.asarray(x, dtype=bool)`` would take any of them)."""
    if isinstance(value, (bool, np.bool_)):
        return np.asarray(value)
    try:
        arr = np.asarray(value)
    except Exception:
        arr = None
    if arr is None or arr.dtype.kind != "b" or arr.size == 0:
        raise ValueError(f"{name}={show(value)} must be True or False (or an array of them)")
    return arr


def seed(name: str, value):
    """A random seed as ``numpy.random.default_rng`` takes it: ``None``, a whole number >= 0, or a NumPy
    ``Generator``, ``BitGenerator`` or ``SeedSequence`` (passed through)."""
    if value is None or isinstance(value, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)):
        return value
    return count(name, value, low=0, unit="a random seed")


def choice(name: str, value, options):
    """``value`` if it is one of ``options``, else a ``ValueError`` listing them."""
    try:
        ok = value in options
    except TypeError:
        ok = False
    if not ok or isinstance(value, (np.ndarray, list)):
        raise ValueError(f"{name}={show(value)} must be one of {tuple(options)}")
    return value


def broadcast(**arrays):
    """The arrays broadcast to one shape (a tuple, in the order given); a ``ValueError`` naming
    the parameters and their shapes when they cannot."""
    try:
        return np.broadcast_arrays(*(np.asarray(a) for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in arrays.items())
        raise ValueError(f"the shapes of {shapes} do not broadcast together; give scalars or arrays of "
                         f"matching shapes") from None


def catalog_arg(name: str, value, kind, table, what: str):
    """``value`` if it is a ``kind``, else the entry of ``table`` it names, else a ``ValueError``."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and value in table:
        return table[value]
    raise ValueError(f"{name}: unknown {what} {show(value)}; give an atscale.{kind.__module__.split('.')[-1]}."
                     f"{kind.__name__} or a catalog {what} name; {known(value, table)}")


def closest(value, names, *, n: int = 3, cutoff: float = 0.5) -> list[str]:
    """Up to ``n`` of ``names`` closest to ``value`` (a typo, a wrong case; ``difflib``'s ratio at least
    ``cutoff``), best first; none when ``value`` is not a string."""
    import difflib

    if not isinstance(value, str):
        return []
    lower = {str(name).lower(): str(name) for name in names}
    return [lower[c] for c in difflib.get_close_matches(value.lower(), list(lower), n=n, cutoff=cutoff)]


def known(value, names) -> str:
    """The valid names for an error message, short: all of them when they are few, else the closest to ``value``
    (:func:`closest`) and how many there are."""
    names = [str(n) for n in names]
    listing = ", ".join(names)
    if len(listing) <= 110:
        return f"known: {listing}"
    close = closest(value, names, cutoff=0.5)
    if close:
        return f"did you mean {', '.join(close)}? ({len(names)} known)"
    return f"{len(names)} known, e.g. {', '.join(names[:4])}"
