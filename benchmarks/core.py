"""Speed of the foundation: `import atscale` and a catalog-explorer redraw.

Run:  python benchmarks/core.py
Budgets (DESIGN.md): import well under a second (target 0.15 s); a widget redraw under 100 ms.
Prints medians; not a test (timings depend on the machine).
"""

import statistics
import subprocess
import sys

from timing import redraw_ms


def import_time_ms(repeat=7):
    cmd = [sys.executable, "-c", "import time; t=time.perf_counter(); import atscale; print(time.perf_counter()-t)"]
    return statistics.median(float(subprocess.check_output(cmd)) * 1e3 for _ in range(repeat))


if __name__ == "__main__":
    print(f"import atscale: {import_time_ms():.0f} ms (budget 150 ms)")
    from atscale import widgets

    explorer = widgets.catalog_explorer()
    print(f"catalog explorer redraw: {redraw_ms(explorer, 'dtype', ['fp8', 'bf16', 'fp64', 'tf32']):.0f} ms (budget 100 ms)")
