"""Speed of the job-completion-time estimator and its explorer.

Run:  python benchmarks/jct.py
Budgets: an estimate with a given plan in milliseconds, with a searched plan about a search (~50-100 ms);
the JCT explorer redraws under 100 ms.

The explorer draws in two layers (atscale.plots.LiveFigure): its axes, labels and key are rasterised once per
layout, and a redraw draws only the bars, curves and changing text onto a copy. Its crossover plot needs a
sweep over nine GPU counts per configuration, which is cached; every term is proportional to the token count,
so changing the tokens or the GPU count only rescales and redraws. The searched layouts are cached apart from
the sweep: a new checkpoint strategy or failure profile costs nine estimates, a new model, accelerator or
layout nine searches (the one slow path, printed last).
"""

import time

from timing import median_ms, redraw_ms

from atscale import jct, widgets
from atscale.scenario import RUNNING_EXAMPLE as ex


if __name__ == "__main__":
    print(f"estimate, given plan: {median_ms(lambda: jct.estimate(ex.model, ex.token_budget, ex.cluster, ex.plan)):.1f} ms")
    print(f"estimate, searched plan: {median_ms(lambda: jct.estimate(ex.model, ex.token_budget, ex.cluster), 5):.0f} ms")
    start = time.perf_counter()
    explorer = widgets.jct_explorer()
    print(f"explorer construction (first configuration's sweep): {(time.perf_counter() - start) * 1e3:.0f} ms")
    print(f"JCT explorer redraw, GPU count: {redraw_ms(explorer, 'gpus', [512, 1024, 2048, 4096]):.0f} ms (budget 100 ms)")
    print(f"JCT explorer redraw, tokens: {redraw_ms(explorer, 'tokens_t', [1.0, 2.0, 5.0, 15.0]):.0f} ms (budget 100 ms)")
    start = time.perf_counter()
    explorer.update(checkpoint="async")
    print(f"JCT explorer, first view of a new checkpoint strategy (nine estimates, cached after): {(time.perf_counter() - start) * 1e3:.0f} ms")
    print(f"JCT explorer redraw, cached configurations: {redraw_ms(explorer, 'checkpoint', ['sync', 'async']):.0f} ms (budget 100 ms)")
    start = time.perf_counter()
    explorer.update(model="Llama 3 8B")
    print(f"JCT explorer, first view of a new model (nine searches, cached after): {(time.perf_counter() - start) * 1e3:.0f} ms")
