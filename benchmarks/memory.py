"""Speed of the memory module and its explorer.

Run:  python benchmarks/memory.py
Budgets: a 10^5-configuration sweep in about a second (far less here); an explorer redraw under 100 ms.
"""

import numpy as np

from timing import median_ms, redraw_ms

from atscale import memory, models, widgets


if __name__ == "__main__":
    dp = np.arange(1, 100_001)
    print(f"ZeRO-3 state over 10^5 data-parallel degrees: "
          f"{median_ms(lambda: memory.model_state_bytes(models.LLAMA3_70B, zero_stage=3, dp=dp)):.1f} ms")
    b = np.arange(1, 100_001)
    print(f"activations over 10^5 micro-batch sizes: "
          f"{median_ms(lambda: memory.activation_bytes_per_layer(models.LLAMA3_70B, b, tp=8)):.1f} ms")
    explorer = widgets.memory_explorer()
    print(f"memory explorer redraw: {redraw_ms(explorer, 'micro_batch', [1, 2, 4, 8]):.0f} ms (budget 100 ms)")
