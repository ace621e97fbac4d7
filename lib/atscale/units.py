"""SI constants and formatters.

Every quantity in ``atscale`` is a plain float in SI base units: seconds, bytes,
FLOP, FLOP/s, bytes/s, watts. The constants below only make inputs readable::

    >>> from atscale import units as u
    >>> 400 * u.Gbps            # an NDR InfiniBand port, per direction, in bytes/s
    50000000000.0
    >>> u.fmt_bytes(988.4e9)
    '988.4 GB'

Two conventions that are easy to mix up, spelled out once:

* **Decimal vs binary bytes.** Datasheets quote HBM capacity and bandwidth in
  decimal units (1 GB = 10^9 bytes, 1 TB/s = 10^12 bytes/s). Operating systems and
  PyTorch report binary units (1 GiB = 2^30 bytes). Memory *capacity* is the exception:
  an "80 GB" H100 carries 80 GiB of HBM, ``nvidia-smi`` shows 81,559 MiB of it (85.5e9 bytes) and
  CUDA 79.11 GiB (84.9e9 bytes; see :mod:`atscale.hardware`), so the marketing "GB" there are really GiB.
* **Bits vs bytes.** Network links are quoted in bits per second
  (``Gbps`` = 10^9 bit/s = 1.25e8 byte/s); GPU memory and NVLink in bytes per second.
"""

from __future__ import annotations

import math

from . import _validate

__all__ = [
    "thousand", "million", "billion", "trillion", "byte", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB",
    "TiB", "bit", "Kbit", "Mbit", "Gbit", "Tbit", "s", "ms", "us", "ns", "minute", "hour", "day", "week",
    "year", "Mbps", "Gbps", "Tbps", "MBps", "GBps", "TBps", "FLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP",
    "GFLOPS", "TFLOPS", "PFLOPS", "EFLOPS", "W", "kW", "MW", "FIXED_POINT_LIMIT", "format_si", "fmt_bytes",
    "fmt_gib", "fmt_flops", "fmt_flop", "fmt_bandwidth", "fmt_bits", "fmt_time", "fmt_count", "fmt_percent",
    "fmt_sci",
]

# --- Dimensionless multipliers ------------------------------------------------
thousand = 1e3
million = 1e6
billion = 1e9
trillion = 1e12

# --- Bytes (decimal, as on datasheets) ------------------------------------------
byte = 1.0
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
PB = 1e15

# --- Bytes (binary, as reported by operating systems and frameworks) ------------
KiB = 2.0**10
MiB = 2.0**20
GiB = 2.0**30
TiB = 2.0**40

# --- Bits, expressed in bytes ------------------------------------------------------
bit = 1 / 8
Kbit = 1e3 / 8
Mbit = 1e6 / 8
Gbit = 1e9 / 8
Tbit = 1e12 / 8

# --- Time (seconds) --------------------------------------------------------------
s = 1.0
ms = 1e-3
us = 1e-6
ns = 1e-9
minute = 60.0
hour = 3600.0
day = 86400.0
week = 7 * day
year = 365 * day  # a calendar year of 365 days, as used for fleet failure rates

# --- Rates ---------------------------------------------------------------------------
# Link rates (bits per second, in bytes per second)
Mbps = Mbit / s
Gbps = Gbit / s
Tbps = Tbit / s
# Memory and bus rates (bytes per second)
MBps = MB / s
GBps = GB / s
TBps = TB / s

# --- Work and compute rate -----------------------------------------------------------
FLOP = 1.0
GFLOP = 1e9
TFLOP = 1e12
PFLOP = 1e15
EFLOP = 1e18
GFLOPS = 1e9  # FLOP/s
TFLOPS = 1e12
PFLOPS = 1e15
EFLOPS = 1e18

# --- Power ------------------------------------------------------------------------
W = 1.0
kW = 1e3
MW = 1e6

# --- Formatters ------------------------------------------------------------------
_DECIMAL_PREFIXES = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
_SMALL_PREFIXES = [(1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]

FIXED_POINT_LIMIT = 1e15
"""The largest mantissa the formatters print in fixed point (dimensionless): from 10^15 on (16 integer
digits, past the 15-17 significant digits of a double, so the further digits would be noise: ``1e300``
printed as 301 digits with commas) a mantissa prints in scientific notation, ``'2.8e+296 h'``. Applies
where no larger prefix or unit is left: hours in :func:`fmt_time`, :func:`fmt_gib`, :func:`fmt_percent`,
a forced ``prefix`` or ``unit``. Beyond the largest SI prefix (1,000 E and more) :func:`format_si` and
:func:`fmt_count` (1,000 T) switch to scientific notation already."""


def _number(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals and thousands separators: 4285.71 -> '4,285.7'; in scientific
    notation from :data:`FIXED_POINT_LIMIT` on: 1e300 -> '1.0e+300'."""
    digits = _digits(digits)
    if abs(round(value, digits)) >= FIXED_POINT_LIMIT:
        return f"{value:.{digits}e}"
    return f"{value:,.{digits}f}"


def _digits(digits) -> int:

    return _validate.count("digits", digits, low=0, high=30)


def _check_finite(value: float, what: str) -> float:
    """``value`` as a float (NaN and infinity allowed: the formatters print them as such)."""

    x = _validate.number(what, value, allow_inf=True, scalar=True) if not _is_nan(value) else float("nan")
    return x


def _is_nan(value) -> bool:
    try:
        return isinstance(value, (float, int)) and not isinstance(value, bool) and value != value
    except Exception:
        return False


def format_si(value: float, unit: str, digits: int = 1, *, prefix: str | None = None) -> str:
    """Format ``value`` (in base units of ``unit``) with a decimal SI prefix.

    The prefix is chosen so that the mantissa lies in [1, 1000), unless ``prefix``
    forces one of ``"", "k", "M", "G", "T", "P", "E"``. Beyond the prefixes, scientific
    notation in the base unit: below 1 n (``'5.0e-12 s'``) and from 1,000 E on
    (``fmt_flops(1e300) == '1e+300 FLOP/s'``, not 385 characters of digits). Non-finite values
    print as ``'inf <unit>'`` or ``'nan <unit>'``, never as a misleading number.

    >>> format_si(989.4e12, "FLOP/s", 0)
    '989 TFLOP/s'
    >>> format_si(3.35e12, "B/s", 2)
    '3.35 TB/s'
    """
    x = _check_finite(value, "value")
    digits = _digits(digits)
    if not math.isfinite(x):
        return f"{x} {unit}"
    if prefix is not None:
        table = dict((p, f) for f, p in _DECIMAL_PREFIXES)
        if prefix not in table:
            raise ValueError(f"prefix={prefix!r} is not one of {sorted(table)}")
        return f"{_number(x / table[prefix], digits)} {prefix}{unit}"
    magnitude = abs(x)
    if magnitude == 0:
        return f"{_number(0.0, digits)} {unit}"
    candidates = [(f, p) for f, p in _DECIMAL_PREFIXES + _SMALL_PREFIXES if magnitude >= f]
    if candidates:
        factor, p = candidates[0]
        # 999.96 GB with one decimal would print as '1,000.0 GB': step up to '1.0 TB'.
        bigger = [(f, q) for f, q in _DECIMAL_PREFIXES if f == factor * 1e3]
        if round(magnitude / factor, digits) >= 1000 and bigger:
            factor, p = bigger[0]
        if factor == _DECIMAL_PREFIXES[0][0] and round(magnitude / factor, digits) >= 1000:  # 1,000 E and more
            return f"{x:.{digits}e} {unit}"
        return f"{_number(x / factor, digits)} {p}{unit}"
    return f"{x:.{_digits(digits)}e} {unit}"


def fmt_bytes(value: float, digits: int = 1, *, prefix: str | None = None) -> str:
    """Bytes with a decimal prefix: ``fmt_bytes(988.4e9) == '988.4 GB'``."""
    return format_si(value, "B", digits, prefix=prefix)


def fmt_gib(value: float, digits: int = 1) -> str:
    """Bytes in binary gibibytes, as ``nvidia-smi`` and PyTorch report them: 85.5e9 bytes is '79.6 GiB'."""
    return f"{_number(_check_finite(value, 'value') / GiB, digits)} GiB"


def fmt_flops(value: float, digits: int = 0, *, prefix: str | None = None) -> str:
    """A compute rate in FLOP/s: ``fmt_flops(989.4e12) == '989 TFLOP/s'``."""
    return format_si(value, "FLOP/s", digits, prefix=prefix)


def fmt_flop(value: float, digits: int = 2) -> str:
    """An amount of work in FLOP, in scientific notation because training totals
    (~10^23 to 10^25) lie beyond the SI prefixes: ``fmt_flop(8.47e23) == '8.47 × 10²³ FLOP'``."""
    return fmt_sci(value, "FLOP", digits)


def fmt_bandwidth(value: float, digits: int = 1, *, prefix: str | None = None) -> str:
    """A data rate in bytes/s: ``fmt_bandwidth(3.35e12, 2) == '3.35 TB/s'``."""
    return format_si(value, "B/s", digits, prefix=prefix)


def fmt_bits(value: float, digits: int = 0, *, prefix: str | None = None) -> str:
    """A data rate given in bytes/s, printed in bits/s as networks quote it: '400 Gbit/s'."""
    return format_si(_check_finite(value, "value") * 8, "bit/s", digits, prefix=prefix)


_TIME_UNITS = {"ns": ns, "µs": us, "us": us, "ms": ms, "s": s, "min": minute, "h": hour, "d": day}


def fmt_time(value: float, digits: int = 1, *, unit: str | None = None) -> str:
    """A duration in seconds, in the largest unit up to hours that keeps it >= 1.

    Days are used only when asked for (``unit="d"``): failure statistics are
    conventionally quoted in hours.

    >>> fmt_time(33.48 * 3600)
    '33.5 h'
    >>> fmt_time(0.0123)
    '12.3 ms'
    >>> fmt_time(30 * 86400, 0, unit="d")
    '30 d'
    """
    x = _check_finite(value, "value")
    digits = _digits(digits)
    if unit is not None:
        if unit not in _TIME_UNITS:
            raise ValueError(f"unit={unit!r} is not one of {sorted(_TIME_UNITS)}")
        return f"{_number(x / _TIME_UNITS[unit], digits)} {unit}"
    if not math.isfinite(x):
        return f"{x} s"
    magnitude = abs(x)
    for name in ("h", "min", "s", "ms", "µs"):
        if magnitude >= _TIME_UNITS[name]:
            return f"{_number(x / _TIME_UNITS[name], digits)} {name}"
    return f"{_number(x / ns, digits)} ns"


def fmt_count(value: float, digits: int = 1) -> str:
    """A count with a word-like suffix, as parameter counts are quoted: '70.6B', '405.9B', '1.3T'; from
    1,000T on in scientific notation: ``fmt_count(2.5e15) == '2.5e+15'``."""
    x = _check_finite(value, "value")
    digits = _digits(digits)
    if not math.isfinite(x):
        return f"{x}"  # 'inf', 'nan' (not 'infT')
    if round(abs(x) / 1e12, digits) >= 1000:
        return f"{x:.{digits}e}"
    for factor, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= factor:
            return f"{_number(x / factor, digits)}{suffix}"
    return _number(x, 0 if float(x).is_integer() else digits)


def fmt_percent(fraction: float, digits: int = 1) -> str:
    """A fraction as a percentage: ``fmt_percent(0.4037) == '40.4%'`` (scientific from 10^15 %,
    :data:`FIXED_POINT_LIMIT`; no thousands separators below it)."""
    x = _check_finite(fraction, "fraction") * 100
    digits = _digits(digits)
    if abs(round(x, digits)) >= FIXED_POINT_LIMIT:
        return f"{x:.{digits}e}%"
    return f"{x:.{digits}f}%"


_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def fmt_sci(value: float, unit: str = "", digits: int = 2) -> str:
    """Scientific notation with a real superscript: ``fmt_sci(8.47e23, 'FLOP') == '8.47 × 10²³ FLOP'``."""
    x = _check_finite(value, "value")
    digits = _digits(digits)
    if x == 0 or not math.isfinite(x):
        return f"{x} {unit}".strip()
    exponent = math.floor(math.log10(abs(x)))
    mantissa = x / 10**exponent if exponent > -300 else x * 1e300 / 10 ** (exponent + 300)  # 10**-324 is 0.0
    if round(abs(mantissa), digits) >= 10:
        mantissa /= 10
        exponent += 1
    return f"{mantissa:.{digits}f} × 10{str(exponent).translate(_SUPERSCRIPTS)} {unit}".strip()
