"""Speed of the parallelism module and its explorers.

Run:  python benchmarks/parallelism.py
Budgets: every layout of Llama 3 70B on 16,384 H100s searched in under 2 s on a 2-core machine; an
explorer redraw under 100 ms. The closest peer, mlsysim's ``DistributedModel.solve`` (about 2 ms per
configuration, one configuration per call), is timed beside it when it is installed
(``pip install mlsysim``): the ratio is configurations per second, ours over theirs.
"""

from timing import median_ms, redraw_ms

from atscale import hardware, models, parallelism, widgets


def _peer_ms_per_call():
    """Median ms of one ``DistributedModel.solve`` of mlsysim 0.3 (Llama 3 70B, 1,024 H100s, TP 8, PP 4), or None."""
    try:
        from mlsysim import Models, Systems
        from mlsysim.engine.solvers.distributed import DistributedModel
        from mlsysim.systems.types import Fleet
    except Exception:
        return None
    model = Models.Language.Llama3_70B
    fleet = Fleet(name="1024", node=Systems.Nodes.DGX_H100, count=128, fabric=Systems.Fabrics.InfiniBand_NDR)
    solver = DistributedModel()
    return median_ms(lambda: solver.solve(model=model, fleet=fleet, batch_size=1024, precision="fp16", tp_size=8,
                                          pp_size=4), repeat=50)


if __name__ == "__main__":
    cluster = hardware.Cluster.of_gpus(hardware.DGX_H100, 16_384, hardware.FABRICS["InfiniBand NDR"])
    # Every axis the search covers: TP, CP (1, 2, 4, 8), PP, v (2, 4), DP, micro-batch, ZeRO stage, schedule,
    # recomputation, sequence parallelism, and both precisions.
    kw = dict(seq_length=8192, dtypes=("bf16", "fp8"))
    result = parallelism.search(models.LLAMA3_70B, cluster, 2048, **kw)
    ms = median_ms(lambda: parallelism.search(models.LLAMA3_70B, cluster, 2048, **kw), repeat=5)
    rate = len(result) / (ms / 1e3)
    print(f"search, Llama 3 70B on 16,384 H100s, BF16 and FP8: {len(result):,} layouts "
          f"({result.feasible_count:,} feasible) in {ms:.0f} ms (budget 2,000 ms): {rate:,.0f} layouts/s")
    print(f"  best: {result.best()} in {result.table['dtype'][0]}, MFU {result.table['mfu'][0]:.1%}")
    peer = _peer_ms_per_call()
    if peer is None:
        print("peer (mlsysim DistributedModel.solve): not installed (pip install --target DIR mlsysim, then "
              "PYTHONPATH=DIR); at ~2 ms per configuration the ratio would be "
              f"{rate / 500:,.0f}x")
    else:
        print(f"peer (mlsysim DistributedModel.solve): {peer:.2f} ms per configuration, {1e3 / peer:,.0f}/s; "
              f"ratio {rate / (1e3 / peer):,.0f}x")
    ex = widgets.plan_explorer()
    print(f"plan explorer redraw: {redraw_ms(ex, 'micro_batch', [1, 2, 4, 8]):.0f} ms (budget 100 ms)")
    ex = widgets.pipeline_explorer()
    print(f"pipeline explorer redraw: {redraw_ms(ex, 'micro_batches', [8, 16, 32, 12]):.0f} ms (budget 100 ms)")
    schedules = ["1f1b", "zb-h1", "zb-h2", "dualpipe", "gpipe"]
    print(f"pipeline explorer redraw, switching schedules: {redraw_ms(ex, 'schedule', schedules):.0f} ms "
          "(budget 100 ms)")
    ex.update(schedule="dualpipe", pp=8)
    print(f"pipeline explorer redraw, DualPipe on 8 stages: {redraw_ms(ex, 'micro_batches', [16, 32, 24, 18]):.0f} ms "
          "(budget 100 ms)")
    ex = widgets.rank_map_explorer()
    print(f"rank map explorer redraw: {redraw_ms(ex, 'colour_by', ['tp', 'dp', 'pp']):.0f} ms (budget 100 ms)")
    print(f"rank map explorer redraw, switching rank order: "
          f"{redraw_ms(ex, 'order', ['tp-cp-pp-dp', 'tp-cp-dp-pp']):.0f} ms (budget 100 ms)")
    networks = list(widgets.parallelism.RANK_MAP_NETWORKS.values())
    print(f"rank map explorer redraw, switching network: {redraw_ms(ex, 'network', networks):.0f} ms (budget 100 ms)")
