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
