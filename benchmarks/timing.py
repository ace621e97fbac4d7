"""Shared timing helper for the benchmark scripts (run them as ``python benchmarks/<name>.py``)."""

import statistics
import time


def median_ms(fn, repeat=9):
    """Median wall-clock time of ``fn()`` over ``repeat`` calls, in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def redraw_ms(explorer, control, values, repeat=9):
    """Median milliseconds of an explorer's redraw as ``control`` steps through ``values`` (cycled,
    so each redraw draws something new)."""
    cycle = iter(list(values) * repeat)
    return median_ms(lambda: explorer.update(**{control: next(cycle)}), repeat)
