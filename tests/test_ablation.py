"""MegaScale's ablation (issue 33, item 4), the pipeline's overlapped sends and the parallel block (item 2).

Each expressible step of MegaScale's Table 3 is compared with the model's predicted gain; the issue's target is
one MFU point per step. The steps that miss are pinned with their measured error and marked as strict xfails
against the target, so that a model change that fixes (or worsens) one shows up here."""

import dataclasses

import numpy as np
import pytest

from atscale import hardware, models, parallelism, runs
from atscale.plan import Plan

TOL = runs.ABLATION_TOLERANCE_POINTS


def _steps(operators):
    return {s.step: s for s in runs.megascale_ablation(operators=operators)}


def test_ablation_rows_as_published():
    """The record holds Table 3's chain: 47.7 % to 65.3 %, eight steps, each after the one above."""
    steps = runs.megascale_ablation()
    assert [s.step for s in steps][0] == "parallel transformer block"
    assert len(steps) == 8
    assert steps[0].published_before == pytest.approx(0.477)
    assert steps[-1].published == pytest.approx(0.653)
    for a, b in zip(steps, steps[1:]):
        assert b.published_before == a.published
    assert sum(s.published_gain for s in steps) == pytest.approx(0.653 - 0.477)
    inexpressible = [s.step for s in steps if s.model_gain is None]
    assert inexpressible == ["sliding-window attention", "data pipeline and other fixes"]


# (step, curve error, operator-model error), MFU points, as measured when the ablation was added
PINNED = {
    # operators: -2.67 and -2.20 (the TP overlap) before the parallel block ran one norm and its fused input GEMM
    # (PaLM, sec. 2; November 2026): the chunked fused GEMM gives back a little more of what the overlap hides
    "parallel transformer block": (-2.21, -2.09),
    # operators: -5.59 before Transformer Engine's split GEMMs ran three at a time on its compute streams (their waves
    # counted together) and the H100 kernel efficiency was refit (0.90 -> 0.89), November 2026; -1.80 and +1.13 and -1.04
    # for the three below. -2.26, -1.54, +1.37 and -0.88 before Megatron's column-parallel layers ran their backward
    # collectives beside their own GEMMs (the input gathered again beside the input gradient's, its gradient
    # reduce-scattered beside the weight gradient's; operators.TP_BACKWARD_ASYNC) and the kernel efficiencies were
    # refit (A100 0.94 -> 0.93, H100 0.89 -> 0.90), November 2026: the baseline hides half its backward collectives
    # already, so the parallel block's halved collectives and the TP overlap gain less
    # operators: -2.46 (TP overlap) and +1.35 (efficient operators) before the column-parallel layers' input-gradient
    # GEMMs ran whole, as Transformer Engine's bulk overlap runs them beside their collectives (Megatron's
    # tp_comm_overlap_rs_dgrad off by default; operators.TP_OVERLAP_SPLITS, November 2026)
    "tensor-parallel overlap": (+0.24, -2.34),
    "pipeline-parallel overlap": (-1.55, -1.73),
    "data-parallel overlap": (-0.64, -0.78),
    "efficient operators": (+2.26, +1.38),  # +0.51 before FlashAttention-2 took its own sequence ramp (faster at 2,048 tokens), +0.84 before it took its own published rates
    "LAMB, batch tripled to 768": (-0.84, -0.90),
}


@pytest.mark.parametrize("operators", [False, True], ids=["curve", "operators"])
@pytest.mark.parametrize("step", list(PINNED))
def test_ablation_errors_pinned(step, operators):
    s = _steps(operators)[step]
    assert s.error_points == pytest.approx(PINNED[step][operators], abs=0.02)


_MISSES = {(step, ops) for step, errs in PINNED.items() for ops, e in ((False, errs[0]), (True, errs[1]))
           if abs(e) > TOL}


@pytest.mark.parametrize("operators", [False, True], ids=["curve", "operators"])
@pytest.mark.parametrize("step", list(PINNED))
def test_ablation_target(step, operators, request):
    """The issue's target: each modelled step within one MFU point. Known misses (strict xfails): the parallel
    block (only its halved TP collectives are modelled), the pipeline overlap (the model's exposed sends are
    about a third of what the step gained), the fused attention kernel (under the curve its attention rate
    gains more than MegaScale measured; under the operator model FlashAttention-2 at its own published rates on an
    A100 gains about a point more than MegaScale's whole "efficient operators" step, fused norms included) and, under the operator model, the tensor-parallel overlap (its GEMMs
    split into tp chunks, three at a time, still lose to wave quantisation part of what the overlap hides: a loss, 2.3
    points short of the published gain; 5.6 points while the chunks ran one after another)."""
    if (step, operators) in _MISSES:
        request.applymarker(pytest.mark.xfail(strict=True, reason="a known miss of the issue's 1-point target"))
    assert abs(_steps(operators)[step].error_points) <= TOL


def test_ablation_bad_input():
    with pytest.raises(ValueError, match="calibration"):
        runs.megascale_ablation(calibration="fitted")
    with pytest.raises(ValueError, match="operators"):
        runs.megascale_ablation(operators="yes")


# --------------------------------------------------------------------------------------
# the pipeline's overlapped sends
_RUN = runs.MEGASCALE_RUNS[0]
_CLUSTER = hardware.Cluster.of_gpus(_RUN.cluster.node, 256, _RUN.cluster.fabric)
_PLAN = dataclasses.replace(_RUN.plan, dp=4, global_batch=256)


def _st(plan, stack=None):
    return parallelism.step_time(_RUN.model, _CLUSTER, plan, optimizer_name=_RUN.optimizer_name, dp_overlap=0.0,
                                 flash_attention=False, stack=stack)


@pytest.mark.parametrize("stack", [None, "megatron-core"])
def test_pp_overlap_hides_sends_but_not_fill(stack):
    off, on = _st(_PLAN, stack), _st(dataclasses.replace(_PLAN, pp_overlap=True), stack)
    assert on.total < off.total
    assert on.pp_comm < off.pp_comm
    # the fill and drain stay exposed: 2 (p - 1) sends of one micro-batch's activations
    one = off.pp_comm / (_PLAN.micro_batches * 2 * _PLAN.virtual_stages)
    assert on.pp_comm >= 2 * (_PLAN.pp - 1) * one * (1 - 1e-9)
    assert on.compute == pytest.approx(off.compute)


def test_pp_overlap_off_by_default_and_vectorised():
    assert Plan().pp_overlap is False
    v = parallelism.evaluate(_RUN.model, _CLUSTER, tp=8, pp=8, dp=4, micro_batch=1, global_batch=256, zero_stage=1,
                             schedule="interleaved", virtual_stages=6, sequence_parallel=True,
                             pp_overlap=np.array([False, True]), optimizer_name=_RUN.optimizer_name, dp_overlap=0.0,
                             flash_attention=False)
    for i, flag in enumerate((False, True)):
        one = _st(dataclasses.replace(_PLAN, tp_overlap=True, pp_overlap=flag))
        assert v.total[i] == pytest.approx(one.total, rel=1e-12)
    no_pipe = parallelism.step_time(_RUN.model, _CLUSTER, dataclasses.replace(
        _PLAN, pp=1, dp=32, schedule="1f1b", virtual_stages=1, pp_overlap=True), memory_check=False)
    assert no_pipe.pp_comm == 0.0
    assert "pipeline sends overlapped" in str(dataclasses.replace(_PLAN, pp_overlap=True))
    with pytest.raises(ValueError, match="pp_overlap"):
        Plan(pp_overlap="yes")


def test_parallel_block_halves_tp_collectives():
    par = dataclasses.replace(_RUN.model, parallel_block=True)
    plan = dataclasses.replace(_PLAN, tp_overlap=False)
    serial = _st(plan)
    parallel = parallelism.step_time(par, _CLUSTER, plan, optimizer_name=_RUN.optimizer_name, dp_overlap=0.0,
                                     flash_attention=False)
    assert parallel.tp_comm == pytest.approx(serial.tp_comm / 2, rel=1e-9)
    assert parallel.compute == pytest.approx(serial.compute)
    assert models.TransformerConfig("m", 2, 64, 4, 100, 16).parallel_block is False
    with pytest.raises(ValueError, match="parallel_block"):
        models.TransformerConfig("m", 2, 64, 4, 100, 16, parallel_block="yes")


def test_jct_estimate_takes_a_stack():
    """A job's estimate can be priced with a stack's operators (``stack=``), as the step time can; the default
    stays the calibrated curve."""
    from atscale import jct, operators
    from atscale.scenario import RUNNING_EXAMPLE as ex

    curve = jct.estimate(ex.model, 1e12, ex.cluster, ex.plan)
    ops = jct.estimate(ex.model, 1e12, ex.cluster, ex.plan, stack="megatron-core")
    assert curve.step.total == pytest.approx(parallelism.step_time(ex.model, ex.cluster, ex.plan).total)
    assert ops.step.total == pytest.approx(
        parallelism.step_time(ex.model, ex.cluster, ex.plan, stack="megatron-core").total)
    quiet = dataclasses.replace(operators.STACKS["megatron-core"], comm_sm_share=0.0)
    assert jct.estimate(ex.model, 1e12, ex.cluster, ex.plan, stack=quiet).total <= ops.total
    with pytest.raises(ValueError, match="stack"):
        jct.estimate(ex.model, 1e12, ex.cluster, ex.plan, stack="jax")


# --------------------------------------------------------------------------------------
# the model's error along runs of one stack as the GPU count grows (issue 33, item 5)
def test_scale_series_are_one_model_one_stack_growing():
    from atscale import accuracy

    by_label = {r.label: r for r in runs.ALL_RUNS}
    for name, labels in accuracy.SCALE_SERIES:
        rs = [by_label[x] for x in labels]
        assert len({(r.model.name, r.stack, r.dtype, r.seq_length or r.model.seq_length) for r in rs}) == 1, name
        gpus = [r.cluster.num_gpus for r in rs]
        assert gpus == sorted(gpus) and gpus[0] < gpus[-1]
        assert all(r.role == "validation" for r in rs)


# drift in MFU points (largest minus smallest count), curve and operators, as measured when the table was added
# (Llama 3: -1.51, -1.62 before the H100 recipes took their scripts' pipeline overlap and the refit, November 2026)
# (Llama 3, operators: -1.54 before Transformer Engine's split GEMMs ran three at a time and the H100 refit, Nov. 2026)
# (MegaScale, operators: 2.58 before Megatron's column-parallel backward collectives ran beside their GEMMs, Nov. 2026)
# (Llama 3: -1.39, -1.65 before its records took the paper's asynchronous pipeline sends, November 2026)
DRIFT = {"MegaScale 175B, Megatron-LM": (2.44, 2.52), "Llama 3 405B, Meta": (-1.63, -1.89),
         "Llama 3.1 405B, NVIDIA, FP8": (3.68, 3.66)}


@pytest.mark.parametrize("operators", [False, True], ids=["curve", "operators"])
def test_scale_drift_pinned(operators):
    from atscale import accuracy

    got = {d.series: d for d in accuracy.scale_drift(operators=operators)}
    for name, pinned in DRIFT.items():
        assert got[name].drift == pytest.approx(pinned[operators], abs=0.06)
    d = got["MegaScale 175B, Megatron-LM"]
    assert d.drift == pytest.approx(d.errors[-1] - d.errors[0])
    with pytest.raises(ValueError, match="operators"):
        accuracy.scale_drift(operators=None)


def test_llm_foundry_weak_scaling_series_as_the_appendix_reads_them():
    """llm-foundry's large-scale table, six models at 128, 256 and 512 GPUs with the same work per GPU: the
    published MFU falls most for the three smallest models; the operator-level model loses a third of that or less
    over the range (its FSDP collectives' latency, per module and growing with the ring, hides behind the compute
    and costs only the SMs it takes), with stragglers not much more, so its error drifts toward optimism on all six,
    by more than 2 points on two (as measured, November 2026; on four of the six while the model charged one
    collective's latency a step)."""
    from atscale import accuracy

    ops = [d for d in accuracy.scale_drift(operators=True) if d.series.endswith("llm-foundry")]
    slow = {d.series: d for d in accuracy.scale_drift(stragglers=True)}
    assert [d.series.split(",")[0] for d in ops] == ["MPT-1B", "MPT-3B", "MPT-7B", "MPT-13B", "MPT-30B", "MPT-70B"]
    assert all(d.gpus == (128, 256, 512) and len(d.published) == 3 for d in ops)
    drops = [d.published_drop for d in ops]
    assert min(drops[:3]) > max(drops[3:]) and min(drops) > 1.0
    lost = [d.published_drop - d.drift for d in ops]  # what the model's own MFU loses over the range
    assert all(0.1 < a < 0.5 * d.published_drop for a, d in zip(lost, ops))
    assert all(0.0 < slow[d.series].published_drop - slow[d.series].drift < 0.5 for d in ops)
    assert all(d.drift > 0.8 for d in ops) and sum(d.drift > 2 for d in ops) == 2


def test_nccl_ring_latency_is_nccls_formula():
    """NCCL's cost model (src/graph/tuning.cc): base + (nsteps - nInterSteps) x intra + nInterSteps x inter, one
    step per GPU of the ring, the steps between nodes at the network's latency."""
    from atscale import collectives as C

    us = 1e-6
    assert C.nccl_ring_latency("all-gather", 1) == 0.0
    assert C.nccl_ring_latency("all-gather", 8) == pytest.approx((8.4 + 7 * 3.4) * us)  # one node: NVLink steps
    assert C.nccl_ring_latency("reduce-scatter", 512) == pytest.approx((8.4 + 448 * 3.4 + 63 * 14.0) * us)
    assert C.nccl_ring_latency("all-reduce", 16) == pytest.approx((8.4 + 28 * 3.4 + 2 * 14.0) * us)
    assert C.nccl_ring_latency("all-gather", 16, gpus_per_node=1) == pytest.approx((8.4 + 15 * 14.0) * us)
    grid = C.nccl_ring_latency("all-gather", [128, 256, 512])
    assert list(grid) == pytest.approx([C.nccl_ring_latency("all-gather", n) for n in (128, 256, 512)])
    assert "tuning.cc" in C.NCCL_TUNING_SOURCE
    for bad in (("all-to-all", 8), ("all-gather", 0), ("all-gather", 2.5), ("all-gather", 8, 0)):
        with pytest.raises(ValueError):
            C.nccl_ring_latency(*bad)


def test_fsdp_latency_as_the_appendix_reads_it():
    """llm-foundry's FSDP collectives per step (one unit per block plus the root; a second all-gather with ZeRO-3),
    and the sizes the appendix states (as measured, November 2026): NCCL's latency growth from 128 to 512 GPUs
    within 0.5-2.5x of the published step's growth on every model, the library's hierarchical latency a seventh of
    NCCL's or less. The operator-level model charges NCCL's latency per module and hides it behind the compute: its
    step grows by the share of the SMs the collectives take (COMM_SM_SHARE) of NCCL's latency growth, within 15 %,
    a tenth to a third of the published growth."""
    from atscale import accuracy, operators

    fl = accuracy.fsdp_latency()
    assert [f.series.split(",")[0] for f in fl] == ["MPT-1B", "MPT-3B", "MPT-7B", "MPT-13B", "MPT-30B", "MPT-70B"]
    assert [f.collectives for f in fl] == [25 * 2, 33 * 2, 33 * 3, 41 * 3, 49 * 3, 81 * 3]
    assert all(f.gpus == (128, 512) for f in fl)
    assert all(0.5 < f.nccl_latency / f.published_growth < 2.5 for f in fl)
    assert all(f.library_latency < 0.15 * f.nccl_latency for f in fl)
    share = operators.COMM_SM_SHARE
    assert all(f.modelled_growth == pytest.approx(share * f.nccl_latency, rel=0.15) for f in fl)
    assert all(0.09 < f.modelled_growth / f.published_growth < 0.34 for f in fl)
    assert len(accuracy.fsdp_latency_table().rows) == 6
