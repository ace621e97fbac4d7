"""Speed of the roofline module and its explorer.

Run:  python benchmarks/roofline.py
Budgets (issue 3): 10^6 attainable-FLOP/s evaluations under 50 ms; an explorer redraw under 100 ms.
"""

import numpy as np

from timing import median_ms, redraw_ms

from atscale import models, roofline, widgets


if __name__ == "__main__":
    x = np.geomspace(1e-2, 1e4, 10**6)
    print(f"attainable_flops, 10^6 points: {median_ms(lambda: roofline.attainable_flops('H100 SXM', x)):.1f} ms (budget 50 ms)")
    tokens = np.geomspace(1, 1e5, 10**5)
    print(f"layer_ops over 10^5 token counts: "
          f"{median_ms(lambda: roofline.layer_ops(models.LLAMA3_70B, tokens, 1, decode=True)):.1f} ms")
    explorer = widgets.roofline_explorer()
    print(f"roofline explorer redraw: {redraw_ms(explorer, 'kind', ['matmul (square)', 'layer norm', 'attention (fused)', 'Adam update']):.0f} ms (budget 100 ms)")
