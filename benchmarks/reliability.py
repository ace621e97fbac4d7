"""Speed of the reliability module and its explorers.

Run:  python benchmarks/reliability.py
Budgets: a 10^5-configuration MTBF/interval sweep in about a second (far less here); explorer
redraws under 100 ms; a 10,000-trial, 30-day simulation in well under a second.
"""

import numpy as np

from timing import median_ms, redraw_ms

from atscale import reliability as rel
from atscale import units as u
from atscale import widgets


if __name__ == "__main__":
    gpus = np.arange(8, 8 * 100_001, 8)

    def sweep():
        m = rel.TEXTBOOK_PROFILE.cluster_mtbf(gpus)
        rel.goodput_exact(rel.daly_interval(60.0, m), 60.0, m, 600.0)

    print(f"10^5-configuration MTBF + Daly + goodput sweep: {median_ms(sweep):.1f} ms")
    m = rel.TEXTBOOK_PROFILE.cluster_mtbf(1024)
    tau = rel.young_interval(60.0, m)
    print(f"simulate 10,000 trials x 30 days: {median_ms(lambda: rel.simulate(30 * u.day, tau, 60.0, m, 600.0), 3):.0f} ms")
    u_curve = widgets.u_curve_explorer()
    print(f"U-curve explorer redraw: {redraw_ms(u_curve, 'gpus', [512, 1024, 2048, 4096]):.0f} ms (budget 100 ms)")
    timeline = widgets.timeline_explorer()
    print(f"timeline explorer redraw: {redraw_ms(timeline, 'interval_hours', [0.5, 1.0, 2.0, 4.0]):.0f} ms (budget 100 ms)")
