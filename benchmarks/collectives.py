"""Speed of the collectives module and its explorers.

Run:  python benchmarks/collectives.py
Budgets: a 10^5-point sweep in well under a second; an explorer redraw under 100 ms.
"""

import numpy as np

from timing import median_ms, redraw_ms

from atscale import collectives, widgets


if __name__ == "__main__":
    sizes = np.logspace(0, 11, 100_000)
    print(f"all-reduce time over 10^5 message sizes: "
          f"{median_ms(lambda: collectives.collective_time('all-reduce', sizes, 1024, 'InfiniBand NDR')):.1f} ms")
    ring = widgets.ring_explorer()
    print(f"ring step-through redraw: {redraw_ms(ring, 'step', [1, 2, 3, 4, 5, 0]):.0f} ms (budget 100 ms)")
    cost = widgets.collective_cost_explorer()
    print(f"cost explorer redraw: {redraw_ms(cost, 'link', ['InfiniBand NDR', 'NVLink 3', 'NVLink 4', 'RoCE 400G']):.0f} ms (budget 100 ms)")
