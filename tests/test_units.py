import math

import pytest

from atscale import units as u


def test_bits_and_bytes():
    assert u.Gbps == 1.25e8  # 1e9 bits/s in bytes/s
    assert 400 * u.Gbps == 50e9
    assert u.bit * 8 == u.byte


def test_decimal_vs_binary():
    assert u.GB == 1e9 and u.GiB == 2**30
    assert 80 * u.GB / u.GiB == pytest.approx(74.505806, rel=1e-6)


def test_time_and_rates():
    assert u.hour == 3600 and u.day == 86400 and u.ms == 1e-3 and u.us == 1e-6
    assert u.TFLOPS == 1e12 and u.PFLOPS == 1e15 and u.TBps == 1e12


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: u.fmt_time(33.48 * u.hour), "33.5 h"),
        (lambda: u.fmt_time(4285.714 * u.hour), "4,285.7 h"),
        (lambda: u.fmt_time(0.0123), "12.3 ms"),
        (lambda: u.fmt_time(45 * u.minute), "45.0 min"),
        (lambda: u.fmt_time(30 * u.day, 0, unit="d"), "30 d"),
        (lambda: u.fmt_bytes(988.4e9), "988.4 GB"),
        (lambda: u.fmt_bytes(999.96e9), "1.0 TB"),
        (lambda: u.fmt_bytes(16e12), "16.0 TB"),
        (lambda: u.fmt_flops(989.4e12), "989 TFLOP/s"),
        (lambda: u.fmt_flops(2.5e15, 1), "2.5 PFLOP/s"),
        (lambda: u.fmt_bandwidth(3.35e12, 2), "3.35 TB/s"),
        (lambda: u.fmt_bits(50e9), "400 Gbit/s"),
        (lambda: u.fmt_gib(80e9), "74.5 GiB"),
        (lambda: u.fmt_count(70.5537e9), "70.6B"),
        (lambda: u.fmt_count(1.008e12), "1.0T"),
        (lambda: u.fmt_percent(0.4037), "40.4%"),
        (lambda: u.fmt_flop(8.47e23), "8.47 × 10²³ FLOP"),
        (lambda: u.fmt_sci(3e-5, "s", 1), "3.0 × 10⁻⁵ s"),
        (lambda: u.format_si(2e-6, "s"), "2.0 µs"),
        (lambda: u.format_si(0, "B"), "0.0 B"),
        (lambda: u.format_si(-3e9, "B"), "-3.0 GB"),
    ],
)
def test_formatters(call, expected):
    assert call() == expected


def test_formatters_do_not_hide_non_finite_values():
    assert u.fmt_bytes(math.inf) == "inf B"
    assert u.fmt_time(math.nan) == "nan s"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: u.fmt_bytes("lots"), "value='lots' must be a number"),
        (lambda: u.format_si(1, "B", prefix="Q"), "prefix='Q'"),
        (lambda: u.fmt_time(1, unit="fortnight"), "unit='fortnight'"),
    ],
)
def test_formatter_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_prefix_choice_does_not_round_up_early():
    assert u.fmt_time(0.96 * u.hour) == "57.6 min"
    assert u.fmt_count(999e6) == "999.0M"
    assert u.fmt_bytes(0.9884e12) == "988.4 GB"


@pytest.mark.parametrize(
    "call, expected",
    [
        # beyond the largest SI prefix (1,000 E and more): scientific, in the base unit, as below 1 n
        (lambda: u.fmt_flops(1e300), "1e+300 FLOP/s"),
        (lambda: u.fmt_bytes(1e300), "1.0e+300 B"),
        (lambda: u.fmt_bytes(-1e300), "-1.0e+300 B"),
        (lambda: u.fmt_bandwidth(2.5e21, 2), "2.50e+21 B/s"),
        (lambda: u.fmt_bits(1e300), "8e+300 bit/s"),
        (lambda: u.fmt_bytes(999.96e18), "1.0e+21 B"),  # would have rounded to '1,000.0 EB'
        (lambda: u.fmt_bytes(5e-12), "5.0e-12 B"),  # the existing form below the smallest prefix
        (lambda: u.fmt_count(1e300), "1.0e+300"),
        (lambda: u.fmt_count(999.96e12), "1.0e+15"),
        # no larger unit left (hours, GiB, percent, a forced prefix or unit): scientific from 10^15
        (lambda: u.fmt_time(1e300), "2.8e+296 h"),
        (lambda: u.fmt_time(1e300, unit="ms"), "1.0e+303 ms"),
        (lambda: u.fmt_gib(1e300), "9.3e+290 GiB"),
        (lambda: u.fmt_percent(1e300), "1.0e+302%"),
        (lambda: u.format_si(1e300, "B", prefix="k"), "1.0e+297 kB"),
        # non-finite values as before, and no 'infT'
        (lambda: u.fmt_count(math.inf), "inf"),
        (lambda: u.fmt_flops(-math.inf), "-inf FLOP/s"),
        (lambda: u.fmt_sci(5e-324, "s", 1), "4.9 × 10⁻³²⁴ s"),  # was a ZeroDivisionError (10**-324 == 0.0)
    ],
)
def test_formatters_are_compact_beyond_the_prefixes(call, expected):
    assert call() == expected


def test_formatters_never_print_hundreds_of_digits():
    formatters = (u.fmt_bytes, u.fmt_flops, u.fmt_bandwidth, u.fmt_bits, u.fmt_time, u.fmt_count, u.fmt_gib,
                  u.fmt_percent, u.fmt_flop, u.fmt_sci)
    for f in formatters:
        for x in (1e300, -1e300, 1.7976931348623157e308, 1e21, 1e25, 5e-324, 1e-300):
            for digits in (0, 1, 3):
                text = f(x, digits=digits)
                assert len(text) <= 24, (f.__name__, x, digits, text)


def test_normal_magnitudes_keep_their_fixed_point_form():
    """The switch to scientific notation starts exactly where the prefixes (or a double's digits) run out:
    the chapters' stored outputs below it are unchanged."""
    assert u.fmt_bytes(999.9e18) == "999.9 EB" and u.fmt_flops(999e18) == "999 EFLOP/s"
    assert u.fmt_time(999_999_999_999_999 * u.hour, 0) == "999,999,999,999,999 h"
    assert u.fmt_time(1e6 * u.hour) == "1,000,000.0 h" and u.fmt_count(999.9e12) == "999.9T"
    assert u.fmt_gib(1e20) == "93,132,257,461.5 GiB" and u.fmt_percent(1e12) == "100000000000000.0%"
    assert u.format_si(1e30, "B", 0, prefix="E") == "1,000,000,000,000 EB"
    assert u.FIXED_POINT_LIMIT == 1e15
