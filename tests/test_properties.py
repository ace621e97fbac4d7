"""Property-based probes of the public functions (Hypothesis, derandomised: the same examples every run).

The rule for bad input (the "Bad input" rows of the README): each public function, given one argument from a
class of bad input, either accepts it legitimately and returns a finite, non-negative answer, reports an
*infeasible* layout with its reason, or raises a ``ValueError`` that names the argument. Never another
exception from inside (a bare NumPy or Python error), a silent NaN or a normal-looking number.
Then the invariants that must hold whatever the input: times and memory non-negative, a step's parts adding
up to its total, more data-parallel replicas never adding memory per GPU, a search's best no worse than any
layout it evaluated, and ``check()`` never revealing an answer.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atscale import check as chk
from atscale import collectives, hardware, jct, kernels, memory, models, operators, parallelism, reliability, roofline
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX

PROBE = settings(max_examples=25, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

CLUSTER = EX.cluster
PLAN = EX.plan

# --- the classes of bad input, per kind of argument ------------------------------------------------
NAN, INF = math.nan, math.inf
BAD = {
    # whole numbers >= 1 (GPUs, layers, heads, degrees, sequences)
    "count": [0, -1, 0.5, 2.5, NAN, INF, -INF, True, False, "8", None, [], np.array([]), 10**30, 1e30, [1, 2.5]],
    # sizes, times, bandwidths: numbers > 0
    "positive": [0, -1.0, -1e-9, NAN, INF, -INF, True, "1e9", None, [], np.array([]), [1.0, NAN], complex(1, 1)],
    # numbers >= 0
    "nonnegative": [-1.0, -1e-9, NAN, INF, -INF, True, "0", None, [], np.array([])],
    # names from a fixed list (ops, schedules, dtypes, optimizers), in the wrong case or with a typo
    "choice": ["", "ALL-REDUCE", "allreduce", "BF16", "1F1B", "Selective", "xx", None, 3, True, ["bf16"]],
    # a catalog model (object or name)
    "model": ["llama 3 70b", "Llama 3 7B", "", None, 70e9, True, hardware.H100_SXM, CLUSTER, PLAN],
    # a cluster object
    "cluster": [None, "1024 H100", 1024, models.LLAMA3_70B, hardware.DGX_H100, PLAN],
    # a catalog accelerator (object or name)
    "accelerator": ["h100 sxm", "H100", "", None, 3, models.LLAMA3_70B, CLUSTER],
    # a plan object
    "plan": [None, "TP=8", {"tp": 8}, models.LLAMA3_70B, CLUSTER],
}

# --- the probed functions: (label, function, valid keyword arguments, {argument: kind}) ------------
CASES = [
    ("roofline.matmul", roofline.matmul, dict(m=4096, n=4096, k=4096), {"m": "positive", "n": "positive",
                                                                        "k": "positive"}),
    ("roofline.attention_scores", roofline.attention_scores, dict(batch=1, heads=32, seq_length=2048, head_dim=128),
     {"batch": "count", "heads": "count", "seq_length": "count", "head_dim": "count"}),
    ("roofline.layer_ops", roofline.layer_ops, dict(model=models.LLAMA3_8B, micro_batch=1),
     {"model": "model", "micro_batch": "count"}),
    ("roofline.ridge_point", roofline.ridge_point, dict(accelerator="H100 SXM", dtype="bf16"),
     {"accelerator": "accelerator", "dtype": "choice"}),
    ("memory.model_state_bytes", memory.model_state_bytes,
     dict(model_or_params=models.LLAMA3_70B, optimizer_name="adam-mixed", zero_stage=1, dp=64, tp=8, pp=4),
     {"optimizer_name": "choice", "dp": "count", "tp": "count", "pp": "count"}),
    ("collectives.collective_time", collectives.collective_time,
     dict(op="all-reduce", size=1e9, ranks=32, link="InfiniBand NDR"),
     {"op": "choice", "size": "nonnegative", "ranks": "count", "link": "choice"}),
    ("collectives.bytes_sent_per_rank", collectives.bytes_sent_per_rank, dict(op="all-gather", size=1e9, ranks=8),
     {"op": "choice", "size": "nonnegative", "ranks": "count"}),
    ("parallelism.bubble_fraction", parallelism.bubble_fraction, dict(pp=8, micro_batches=32, virtual_stages=2),
     {"pp": "count", "micro_batches": "count", "virtual_stages": "count"}),
    ("parallelism.stage_layers", parallelism.stage_layers, dict(num_layers=126, pp=16, virtual_stages=1),
     {"num_layers": "count", "pp": "count", "virtual_stages": "count"}),
    ("parallelism.step_time", parallelism.step_time,
     dict(model=EX.model, cluster=CLUSTER, plan=PLAN, seq_length=8192, dtype="bf16"),
     {"model": "model", "cluster": "cluster", "plan": "plan", "seq_length": "count", "dtype": "choice",
      "optimizer_name": "choice", "dp_overlap": "nonnegative"}),
    ("reliability.young_interval", reliability.young_interval, dict(checkpoint_time=60.0, mtbf=3600.0 * 10),
     {"checkpoint_time": "positive", "mtbf": "positive"}),
    ("reliability.goodput_exact", reliability.goodput_exact,
     dict(interval=3600.0, checkpoint_time=60.0, mtbf=36_000.0, restart_time=300.0),
     {"interval": "positive", "checkpoint_time": "nonnegative", "mtbf": "positive", "restart_time": "nonnegative"}),
    ("reliability.series_mttf", reliability.series_mttf, dict(mttf=[1e6, 2e6], count=[8, 2]),
     {"count": "nonnegative"}),
    ("jct.estimate", jct.estimate, dict(model=EX.model, tokens=2e12, cluster=CLUSTER, plan=PLAN, seq_length=8192),
     {"model": "model", "tokens": "positive", "cluster": "cluster", "plan": "plan", "seq_length": "count"}),
    ("hardware.Cluster.of_gpus", hardware.Cluster.of_gpus,
     dict(node=hardware.DGX_H100, gpus=1024, fabric=hardware.FABRICS["InfiniBand NDR"]), {"gpus": "count"}),
]

from atscale import accuracy, experts, plots, widgets  # noqa: E402  (the second half of the probes)

CASES += [
    ("experts.moe_summary", experts.moe_summary, dict(model=models.DEEPSEEK_V3, seq_length=4096),
     {"model": "model", "seq_length": "count"}),
    ("experts.all_to_all_vs_all_reduce", experts.all_to_all_vs_all_reduce, dict(size=256e6, ranks=64, cluster=CLUSTER),
     {"size": "nonnegative", "ranks": "count", "cluster": "cluster"}),
    ("experts.cross_node_copies", experts.cross_node_copies,
     dict(experts_per_token=8, nodes=8, num_experts=256, max_nodes=4),
     {"experts_per_token": "count", "nodes": "count", "num_experts": "count", "max_nodes": "count"}),
    ("experts.in_node_copies", experts.in_node_copies, dict(experts_per_token=8, gpus_per_node=8, num_experts=128, ep=8),
     {"experts_per_token": "count", "gpus_per_node": "count", "num_experts": "count", "ep": "count"}),
    ("experts.routing_imbalance", experts.routing_imbalance, dict(mean_load=64.0, num_experts=256),
     {"mean_load": "positive", "num_experts": "count"}),
    ("experts.dropped_fraction", experts.dropped_fraction, dict(mean_load=64.0, capacity_factor=1.25),
     {"mean_load": "positive"}),
    ("plan.Plan", Plan, dict(tp=8, pp=4, dp=32, cp=1, micro_batch=1, global_batch=1024, zero_stage=1,
                             schedule="interleaved", virtual_stages=2, recompute="selective", sequence_parallel=True,
                             shard_group=8, ep=8, expert_tp=1, a2a_overlap=True),
     {"tp": "count", "pp": "count", "dp": "count", "cp": "count", "micro_batch": "count", "global_batch": "count",
      "zero_stage": "stage", "schedule": "choice", "virtual_stages": "count", "recompute": "choice",
      "sequence_parallel": "flag", "shard_group": "count", "ep": "count", "expert_tp": "count",
      "a2a_overlap": "flag"}),
    ("models.TransformerConfig (mixture of experts)", __import__("atscale").models.TransformerConfig,
     dict(name="tiny MoE", num_layers=4, hidden_size=64, num_heads=4, vocab_size=100, seq_length=16, num_experts=8,
          experts_per_token=2, expert_ffn_size=32, shared_experts=1, dense_layers=1, max_routed_nodes=2, head_size=32),
     {"num_layers": "count", "experts_per_token": "count", "expert_ffn_size": "count", "max_routed_nodes": "count",
      "head_size": "count", "num_heads": "count"}),
    ("accuracy.summary", accuracy.summary, dict(role="validation", kind="estimate", group="Step time"),
     {"role": "choice", "kind": "choice", "group": "choice"}),
    ("accuracy.table", accuracy.table, dict(group="Memory"), {"group": "choice"}),
    ("memory.activation_bytes_per_layer", memory.activation_bytes_per_layer,
     dict(model=EX.model, micro_batch=1, seq_length=8192, tp=8, sequence_parallel=True, recompute="selective"),
     {"model": "model", "micro_batch": "count", "seq_length": "count", "tp": "count", "recompute": "choice",
      "sequence_parallel": "flag"}),
    ("memory.breakdown", memory.breakdown, dict(model=EX.model, accelerator="H100 SXM", plan=PLAN, seq_length=8192),
     {"model": "model", "accelerator": "accelerator", "plan": "plan", "seq_length": "count", "optimizer_name": "choice"}),
    ("memory.max_params", memory.max_params, dict(capacity=80e9, zero_stage=3, dp=64),
     {"capacity": "positive", "zero_stage": "stage", "dp": "count", "optimizer_name": "choice"}),
    ("memory.checkpoint_bytes", memory.checkpoint_bytes, dict(model_or_params=EX.model), {"optimizer_name": "choice"}),
    ("collectives.hierarchical_time", collectives.hierarchical_time, dict(op="all-reduce", size=1e9, cluster=CLUSTER),
     {"op": "choice", "size": "nonnegative", "cluster": "cluster", "inter_algorithm": "choice"}),
    ("collectives.ring_step", collectives.ring_step, dict(ranks=8, step=3), {"ranks": "count"}),
    ("reliability.failure_probability", reliability.failure_probability, dict(window=86_400.0, mtbf=36_000.0),
     {"window": "nonnegative", "mtbf": "positive"}),
    ("reliability.spares_needed", reliability.spares_needed,
     dict(num_nodes=128, node_mttf=1e7, repair_time=86_400.0, coverage=0.99),
     {"num_nodes": "count", "node_mttf": "positive", "repair_time": "nonnegative"}),
    ("reliability.cluster_mtbf", reliability.TEXTBOOK_PROFILE.cluster_mtbf, dict(gpus=1024), {"gpus": "count"}),
    ("jct.cluster_of", jct.cluster_of, dict(gpus=1024), {"gpus": "count"}),
    ("plots.pipeline_schedule_chart", plots.pipeline_schedule_chart,
     dict(pp=4, micro_batches=8, schedule="interleaved", virtual_stages=2),
     {"pp": "count", "micro_batches": "count", "schedule": "choice", "virtual_stages": "count"}),
    ("plots.rank_map_chart", plots.rank_map_chart, dict(tp=8, pp=4, dp=32, colour_by="dp"),
     {"tp": "count", "pp": "count", "dp": "count", "colour_by": "choice"}),
    ("plots.stage_loads_chart", plots.stage_loads_chart, dict(num_layers=126, pp=16, virtual_stages=2),
     {"num_layers": "count", "pp": "count", "virtual_stages": "count"}),
    ("plots.zero_stages_chart", plots.zero_stages_chart, dict(model=EX.model, accelerator="H100 SXM", dp=[8, 64], tp=8, pp=4),
     {"model": "model", "accelerator": "accelerator", "tp": "count", "pp": "count", "optimizer_name": "choice"}),
    ("widgets.pipeline_view", widgets.pipeline_view, dict(pp=4, micro_batches=8, schedule="1f1b"),
     {"pp": "count", "micro_batches": "count", "schedule": "choice"}),
]
BAD["flag"] = [1, 0, "yes", None, NAN, [True], np.array([])]
BAD["stage"] = [-1, 4, 1.5, NAN, INF, True, "1", [], np.array([])]  # a ZeRO stage: 0 to 3
# a pipeline schedule: a name, or (as a NumPy integer) its index into atscale.plan.SCHEDULES
BAD["schedule"] = ["", "1F1B", "ZB-H1", "zbh1", "xx", None, True, 3, 2.0, -1, np.int64(8), np.int64(-1), ["xx"], [],
                   np.array([])]
INFINITE_OK = {  # functions whose documented answer can be +inf for a valid input
    "roofline.critical_tokens": "the weights alone are too small: no number of rows reaches the ridge",
    "reliability.series_mttf": "no component can fail (all counts 0): the MTTF is infinite",
    "collectives.latency_bound_size": "one rank moves nothing: no size makes it bandwidth-bound",
}

ALIASES = {"optimizer_name": ("optimizer",), "link": ("link", "fabric"), "model": ("model",),
           "accelerator": ("accelerator",), "mttf": ("mttf",), "plan": ("plan", "global_batch")}


def _finite_nonnegative(x) -> bool:
    """Every number reachable in a result (scalars, arrays, dataclass fields, dict values) finite and >= 0."""
    if isinstance(x, (bool, str)) or x is None:
        return True
    if isinstance(x, (int, float, np.number)):
        return math.isfinite(float(x)) and float(x) >= 0
    if isinstance(x, np.ndarray):
        return x.dtype.kind not in "fiu" or bool(np.all(np.isfinite(x)) and np.all(x >= 0))
    if isinstance(x, dict):
        return all(_finite_nonnegative(v) for v in x.values())
    if isinstance(x, (tuple, list)):
        return all(_finite_nonnegative(v) for v in x)
    if dataclasses.is_dataclass(x):  # (a job that never fails has an infinite MTBF and checkpoint interval)
        return all(_finite_nonnegative(getattr(x, f.name)) for f in dataclasses.fields(x)
                   if isinstance(getattr(x, f.name), (int, float, np.number, np.ndarray))
                   and not (f.name in ("mtbf", "interval") and getattr(x, f.name) == math.inf))
    return True


def _verdict(result, label: str = "") -> str:
    """How a call that returned must look: infeasible with its reason, or finite and non-negative (a figure or a
    table counts as an answer)."""
    import matplotlib.figure

    if isinstance(result, matplotlib.figure.Figure):
        import matplotlib.pyplot as plt

        plt.close(result)
        return "accepted"
    feasible = getattr(result, "feasible", True)
    if not bool(np.all(feasible)):
        if hasattr(result, "reason"):
            assert str(result.reason).strip(), "infeasible without a reason"
        return "infeasible"  # (a Waste says why by its own numbers: waste >= 100%)
    if label in INFINITE_OK and np.all(np.isposinf(np.asarray(result, dtype=float))):
        return "accepted"
    assert _finite_nonnegative(result), f"a normal-looking result with NaN, infinite or negative values: {result!r}"
    return "accepted"


@pytest.mark.parametrize("label,fn,valid,kinds", CASES, ids=[c[0] for c in CASES])
def test_valid_arguments_give_a_finite_answer(label, fn, valid, kinds):
    _verdict(fn(**valid))


def _must_refuse(kind: str, value) -> bool:
    """Whether ``value`` is bad for an argument of ``kind`` whatever the function: everything in :data:`BAD`
    except ``None`` (often "the default"), an enormous number (which may be legitimately large) and a number
    given for a model (``model_or_params`` takes a parameter count)."""
    if value is None:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if kind == "model" or (kind in ("count", "positive", "nonnegative") and abs(value) >= 1e29):
            return False
    return True


def _check_one(label, fn, valid, arg, bad, must_refuse):
    """The rule: a ValueError naming ``arg`` in a readable message; else, only if ``bad`` may be legitimately
    accepted, an infeasible result with its reason or a finite, non-negative answer."""
    try:
        result = fn(**{**valid, arg: bad})
    except ValueError as exc:
        names = (arg,) + ALIASES.get(arg, ())
        assert any(n.lower() in str(exc).lower() for n in names), \
            f"{label}({arg}={bad!r}): the message does not name it: {exc}"
        assert len(str(exc)) < 600, f"{label}: an unreadably long message ({len(str(exc))} characters)"
        return
    assert not must_refuse, f"{label}({arg}={bad!r}) was accepted: {result!r}"[:400]
    _verdict(result, label)


def _every_class(label, fn, valid, kinds):
    """Every class of bad input of :data:`BAD` in every argument of ``kinds``, one at a time: exhaustive."""
    for arg, kind in sorted(kinds.items()):
        for bad in BAD[kind]:
            _check_one(label, fn, valid, arg, bad, _must_refuse(kind, bad))


NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**40, 10**40))


def _random_number(label, fn, valid, kinds, data):
    """A random float or integer (NaN, infinities, negatives, fractions, huge) in one numeric argument: refused
    where it cannot be of its kind (a count that is not a whole number in [1, 2^62], a size or time that is not
    finite and > 0 (>= 0)); otherwise the rule of :func:`_check_one`."""
    numeric = sorted(a for a, k in kinds.items() if k in ("count", "positive", "nonnegative"))
    if not numeric:
        return
    arg = data.draw(st.sampled_from(numeric), label="argument")
    x = data.draw(NUMBERS, label="value")
    kind, fx = kinds[arg], float(x) if abs(x) < 1e300 else math.inf
    if kind == "count":
        bad = not (math.isfinite(fx) and fx == int(fx) and 1 <= fx <= 2**62)
    else:
        bad = not math.isfinite(fx) or (fx <= 0 if kind == "positive" else fx < 0)
    _check_one(label, fn, valid, arg, x, bad and abs(fx) < 1e29)


@pytest.mark.parametrize("label,fn,valid,kinds", CASES, ids=[c[0] for c in CASES])
def test_each_class_of_bad_input_gets_a_clear_answer(label, fn, valid, kinds):
    _every_class(label, fn, valid, kinds)


@pytest.mark.parametrize("label,fn,valid,kinds", CASES, ids=[c[0] for c in CASES])
@PROBE
@given(data=st.data())
def test_random_numbers_get_a_clear_answer(label, fn, valid, kinds, data):
    _random_number(label, fn, valid, kinds, data)


# --- invariants --------------------------------------------------------------------------------------
LAYOUT = st.fixed_dictionaries(dict(
    tp=st.sampled_from([1, 2, 4, 8]), cp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2, 4, 5, 8]),
    micro_batch=st.sampled_from([1, 2]), zero_stage=st.integers(0, 3),
    schedule=st.sampled_from(["gpipe", "1f1b", "interleaved"]), recompute=st.sampled_from(["none", "selective", "full"]),
    tp_overlap=st.booleans(), reshard_after_forward=st.booleans(), dtype=st.sampled_from(["bf16", "fp8"]),
    cp_algorithm=st.sampled_from(["ring", "all-gather", "ulysses"])))


def _plan(layout, dp, global_batch):
    sched = layout["schedule"] if layout["pp"] > 1 else "1f1b"  # a Plan refuses interleaving without a pipeline
    return Plan(tp=layout["tp"], cp=layout["cp"], pp=layout["pp"], dp=dp, micro_batch=layout["micro_batch"],
                global_batch=global_batch, zero_stage=layout["zero_stage"], schedule=sched,
                virtual_stages=2 if sched == "interleaved" else 1, recompute=layout["recompute"],
                sequence_parallel=layout["tp"] > 1, tp_overlap=layout["tp_overlap"],
                reshard_after_forward=layout["reshard_after_forward"], cp_algorithm=layout["cp_algorithm"])


@PROBE
@given(layout=LAYOUT)
def test_a_step_is_non_negative_and_its_parts_add_up(layout):
    n = layout["tp"] * layout["cp"] * layout["pp"]
    dp = 8  # so that the cluster is whole nodes of eight
    cl = hardware.Cluster.of_gpus(hardware.DGX_H100, n * dp, hardware.FABRICS["InfiniBand NDR"])
    st_ = parallelism.step_time(EX.model, cl, _plan(layout, dp, dp * layout["micro_batch"] * 8), seq_length=8192,
                                dtype=layout["dtype"], memory_check=False)
    if not st_.feasible:
        assert st_.reason and math.isnan(st_.total)
        return
    parts = st_.parts()
    assert all(v >= 0 and math.isfinite(v) for v in parts.values())
    assert sum(parts.values()) == pytest.approx(st_.total, rel=1e-12)
    assert st_.memory_total > 0 and 0 < st_.mfu < 1


@PROBE
@given(layout=LAYOUT)
def test_more_replicas_never_add_memory_per_gpu(layout):
    """The same layout with twice the data-parallel replicas (and twice the batch, so the same micro-batches per
    replica): sharded state only shrinks, activations stay."""
    n = layout["tp"] * layout["cp"] * layout["pp"]
    mem = []
    for dp in (8, 16):
        cl = hardware.Cluster.of_gpus(hardware.DGX_H100, n * dp, hardware.FABRICS["InfiniBand NDR"])
        st_ = parallelism.step_time(EX.model, cl, _plan(layout, dp, dp * layout["micro_batch"] * 8), seq_length=8192,
                                    memory_check=False)
        mem.append(st_.memory_total if st_.feasible else None)
    if None not in mem:
        assert mem[1] <= mem[0] * (1 + 1e-12)


def test_a_search_best_is_no_worse_than_any_layout_it_evaluated():
    r = parallelism.search(EX.model, CLUSTER, 1024, seq_length=8192, dtypes=("bf16", "fp8"))
    tps = r.table["tokens_per_second"]
    ok = r.table["feasible"]
    assert ok.any() and tps[0] == np.max(tps[ok])
    best = parallelism.step_time(EX.model, CLUSTER, r.best(), seq_length=8192, dtype=str(r.table["dtype"][0]))
    assert best.tokens_per_second == pytest.approx(tps[0], rel=1e-9)


ANY_ANSWER = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30),
                       st.text(max_size=12), st.none(), st.booleans(), st.lists(st.floats(), max_size=3))


@PROBE
@given(exercise=st.sampled_from(chk.exercises()), answer=ANY_ANSWER)
def test_check_never_reveals_an_answer(exercise, answer):
    from atscale.answers import ANSWERS

    key = ANSWERS[exercise]
    expected = key.compute()
    for _ in range(2):  # and asking again does not either
        fb = chk.check(exercise, answer)
        if fb.correct:
            continue
        # the student's own answer, echoed back ("your 1e+16", "got 'x16'"), is not a leak of the key's
        message = re.sub(r"(your|got) \S+", r"\1 ...", str(fb))
        assert key.format(expected) not in message
        if abs(expected) >= 10:  # small numbers may occur in any sentence; a large one would give it away
            assert f"{expected:.3g}" not in message and f"{expected:,.0f}" not in message


# --- every public function of the chapter modules, built from one table of example arguments ----------
EXAMPLES = {  # parameter name -> (a valid value, the class of bad input to try on it)
    "model": (EX.model, "model"), "op": ("all-reduce", "choice"), "mtbf": (36_000.0, "positive"),
    "pp": (4, "count"), "ranks": (8, "count"), "cluster": (CLUSTER, "cluster"),
    "checkpoint_time": (60.0, "nonnegative"), "size": (1e9, "nonnegative"), "accelerator": ("H100 SXM", "accelerator"),
    "link": ("NVLink 4", "choice"), "interval": (3600.0, "positive"), "micro_batch": (1, "count"),
    "model_or_params": (EX.model, "model"), "gpus": (1024, "count"), "micro_batches": (32, "count"),
    "num_layers": (80, "count"), "tp": (8, "count"), "work": (86_400.0, "positive"), "zero_stage": (1, None),
    "plan": (PLAN, "plan"), "global_batch": (1024, "count"), "node_mttf": (1e7, "positive"),
    "num_nodes": (128, "count"), "window": (86_400.0, "nonnegative"), "batch": (1, "count"), "heads": (32, "count"),
    "seq_length": (8192, "count"), "head_dim": (128, "count"), "params": (70e9, "positive"),
    "capacity": (80e9, "positive"), "dp": (32, "count"), "duration": (86_400.0, "nonnegative"),
    "checkpoint_bytes": (1e12, "nonnegative"), "bandwidth": (1e10, "positive"), "repair_time": (86_400.0, "nonnegative"),
    "dtype": ("bf16", "choice"), "m": (4096, "positive"), "n": (4096, "positive"), "k": (4096, "positive"),
    "step": (1, None), "seconds": (1.0, "positive"), "deadline": (30 * 86_400.0, "positive"),
    "tokens": (2e12, "positive"), "optimizer_name": ("adam-mixed", "choice"), "virtual_stages": (2, "count"),
    "schedule": ("1f1b", "schedule"), "t_f": (1e-3, "positive"), "t_b": (1e-3, "positive"),
    "t_w": (1e-3, "nonnegative"),
    "failures_per_node_day": (6.5e-3, "positive"), "cp": (2, "count"),
}
SLOW = {"sweep", "crossover", "sync_wall", "sensitivity", "gpus_for_deadline", "search", "calibrate", "simulate",
        "u_curve", "timeline_run", "timeline", "cost_curve", "best_plan", "scaled_profile", "max_micro_batch"}


def _public_functions():
    import importlib
    import inspect

    for name in ("roofline", "memory", "collectives", "parallelism", "pipeline", "reliability", "jct", "accuracy",
                 "plots.roofline", "plots.memory", "plots.collectives", "plots.parallelism", "plots.reliability",
                 "plots.catalog", "widgets.parallelism", "widgets.memory", "widgets.collectives", "widgets.roofline",
                 "experts", "plots.experts", "widgets.experts"):
        module = importlib.import_module(f"atscale.{name}")
        for fn_name in module.__all__:
            fn = getattr(module, fn_name)
            if not inspect.isfunction(fn) or fn_name in SLOW:
                continue
            params = [p for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
            required = [p.name for p in params if p.default is p.empty]
            if all(r in EXAMPLES for r in required):
                valid = {r: EXAMPLES[r][0] for r in required}
                kinds = {p.name: EXAMPLES[p.name][1] for p in params if p.name in EXAMPLES and EXAMPLES[p.name][1]}
                if kinds:
                    yield f"{name}.{fn_name}", fn, valid, kinds


NEGATIVE_OK = {"accuracy.Gap", "accuracy.comparisons", "accuracy.summary", "accuracy.megascale_against_selene",
               "accuracy.megascale_drops", "accuracy.moe_errors",
               "accuracy.attention_kernel_brackets", "accuracy.fp8_rate_sensitivity",
               "accuracy.readings", "accuracy.kernel_check", "accuracy.kernel_summaries",
               "accuracy.attention_rate_sensitivity", "accuracy.layer_gaps"}  # signed errors are legitimate


def _buildable():
    out = []
    for label, fn, valid, kinds in _public_functions():
        try:
            result = fn(**valid)
        except ValueError:
            continue  # the table's example does not suit this function (e.g. 4 stages of a 126-layer model)
        if label not in NEGATIVE_OK:
            _verdict(result, label)  # (closes a figure)
        kinds = {k: v for k, v in kinds.items() if k in valid or k in ("seq_length", "dtype", "optimizer_name")}
        if kinds:
            out.append((label, fn, valid, kinds))
    return out


BUILT = _buildable()


def test_most_public_functions_are_probed():
    assert len(BUILT) >= 60, [c[0] for c in BUILT]


@pytest.mark.parametrize("label,fn,valid,kinds", BUILT, ids=[c[0] for c in BUILT])
def test_every_public_function_answers_bad_input_clearly(label, fn, valid, kinds):
    _every_class(label, fn, valid, kinds)


@pytest.mark.parametrize("label,fn,valid,kinds", BUILT, ids=[c[0] for c in BUILT])
@settings(max_examples=15, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_public_function_answers_random_numbers_clearly(label, fn, valid, kinds, data):
    _random_number(label, fn, valid, kinds, data)


def test_an_object_of_the_wrong_kind_is_named_by_kind_and_name():
    with pytest.raises(ValueError, match=r"unknown model <Cluster '1,024 × H100 SXM") as exc:
        parallelism.step_time(CLUSTER, CLUSTER, PLAN)
    assert len(str(exc.value)) < 600


# --- every public callable of every module, discovered from ``__all__`` (issue 34) --------------------------
# Each bad-input class is tried on every argument of every public callable (functions and the input types;
# the plots; the widget views; the explorer helpers). The callables are found by walking the package, so a new
# function is probed the day it lands: the test below fails until it has a valid example call, either built from
# its defaults and the argument names of NAMED, or registered in CALLS; a result record the library builds (not an
# input) is listed in RESULTS with that reason. What counts as bad for an argument is read from its example value:
# a number, a bool (a flag), a catalog name, a catalog object or a list of numbers.
import importlib  # noqa: E402
import inspect  # noqa: E402
import numbers as _numbers  # noqa: E402
import pkgutil  # noqa: E402
import signal  # noqa: E402

import atscale  # noqa: E402
from atscale import pipeline, scenario, units  # noqa: E402
from atscale import widgets as _widgets  # noqa: E402

_STEP = parallelism.step_time(EX.model, CLUSTER, PLAN, seq_length=8192)
_SWEEP = None


def _sweep():
    global _SWEEP
    if _SWEEP is None:
        _SWEEP = jct.sweep(EX.model, 2e12, (512, 1024))
    return _SWEEP


NAMED = {  # argument name -> a valid value (beside EXAMPLES)
    **{k: v for k, (v, _) in EXAMPLES.items()}, "zero_stage": 1, "step": 1,
    "ranks_per_node": 8, "comm_seconds": 0.1, "backward_seconds": 0.2, "seconds": 0.01, "elements": 1e6,
    "tokens": 2e12, "hidden": 8192, "intensity": 100.0, "ridge": 295.0, "mean_load": 64.0, "capacity_factor": 1.25,
    "experts_per_token": 8, "nodes": 8, "num_experts": 256, "max_nodes": 4, "serial_fraction": 0.01,
    "p": 0.01, "duration": 86_400.0, "factor": 2.0, "profile": reliability.TEXTBOOK_PROFILE, "result": None,
    "value": 1.5e9, "fraction": 0.25, "unit": "B", "dtype": "bf16", "group": "Memory", "name": "Llama 3 70B",
    "exercise": "reliability-2048-mtbf", "answer": 1.0, "eps": (8, 16), "scenario": EX, "b": None, "op": "all-reduce",
    "mttf": [1e6, 2e6], "count": [8, 2], "interruptions": 100, "window": 86_400.0 * 30, "heartbeat": 10.0,
}
def _TIERED():
    """A cluster on a multi-tier fabric (Meta's Llama 3 RoCE cluster, 16,384 GPUs)."""
    return hardware.Cluster.of_gpus(hardware.DGX_H100, 16384, hardware.fabric("RoCE 400G (Llama 3 cluster)"))


CALLS = {  # label -> keyword arguments (a function of nothing: built when probed)
    "accuracy.table": lambda: dict(group="Memory"),
    "check.check": lambda: dict(exercise="reliability-2048-mtbf", answer=1.0),
    "collectives.link_model": lambda: dict(link="NVLink 4"),
    "collectives.supports_in_network": lambda: dict(link="NVLink 4"),
    "collectives.link_cost": lambda: dict(link="InfiniBand NDR"),
    "collectives.algorithm_bandwidth": lambda: dict(size=1e9, seconds=0.01),
    "collectives.bus_bandwidth": lambda: dict(op="all-reduce", size=1e9, ranks=8, seconds=0.01),
    "collectives.model_time": lambda: dict(m=collectives.CALIBRATION[0]),
    "collectives.gradient_sync": lambda: dict(scenario=EX),
    "collectives.tiered_phases": lambda: dict(op="reduce-scatter", size=1e9, ranks=128, cluster=_TIERED(),
                                              ranks_per_node=1, span=16384),
    "collectives.tiered_time": lambda: dict(op="all-reduce", size=1e9, ranks=128, cluster=_TIERED(),
                                            ranks_per_node=1, span=16384),
    "collectives.send_time": lambda: dict(size=1e9, distance=3072, cluster=_TIERED()),
    "collectives.dimension_tiers": lambda: dict(plan=PLAN, cluster=_TIERED(), order="tp-cp-pp-dp"),
    "collectives.tier_sweep": lambda: dict(op="reduce-scatter", size=1e9, fabrics=["RoCE 400G (Llama 3 cluster)"],
                                           node=hardware.DGX_H100, stride=128, max_gpus=24576),
    "plots.collectives.fabric_tiers_chart": lambda: dict(placement=collectives.dimension_tiers(PLAN, _TIERED())),
    "plots.collectives.tier_sweep_chart": lambda: dict(sweep=collectives.tier_sweep(
        "reduce-scatter", 1e9, ["RoCE 400G", "RoCE 400G (Llama 3 cluster)"], max_gpus=4096)),
    "hardware.FabricTier": lambda: dict(name="pod", domain=3072, oversubscription=7.0, latency=1e-6,
                                        rail_optimised=False),
    "experts.moe_summary": lambda: dict(model=models.DEEPSEEK_V3),
    "memory.expert_output_bytes": lambda: dict(model=models.DEEPSEEK_V3, tokens=4096),
    "parallelism.recompute_choices": lambda: dict(model=EX.model, cluster=EX.cluster, plan=EX.plan),
    "parallelism.recompute_table": lambda: dict(model=EX.model, cluster=EX.cluster, plan=EX.plan),
    "experts.dense_twin": lambda: dict(model=models.DEEPSEEK_V3),
    "experts.published_count": lambda: dict(model=models.DEEPSEEK_V3),
    "experts.in_node_copies": lambda: dict(experts_per_token=8, gpus_per_node=8, num_experts=128, ep=8),
    "experts.ep_sweep": lambda: dict(model=models.DEEPSEEK_V3, cluster=hardware.Cluster.of_gpus(
        hardware.DGX_H100, 2048, hardware.FABRICS["InfiniBand NDR"]), plan=Plan(tp=1, pp=16, dp=128, ep=64,
                                                                                global_batch=4096), eps=(32, 64)),
    "experts.a2a_compute_ratio": lambda: dict(model=models.DEEPSEEK_V3, cluster=experts.DEEPSEEK_V3_CLUSTER,
                                              plan=experts.DEEPSEEK_V3_PLAN, dtype="fp8", memory_check=False),
    "experts.gpu_seconds_per_trillion": lambda: dict(step=_STEP),
    "hardware.accelerator_arg": lambda: dict(name="accelerator", value="H100 SXM"),
    "hardware.accelerator": lambda: dict(name="H100 SXM"),
    "hardware.fabric": lambda: dict(name="InfiniBand NDR"),
    "hardware.node": lambda: dict(name="DGX H100"),
    "hardware.Accelerator": lambda: {f.name: getattr(hardware.H100_SXM, f.name)
                                     for f in dataclasses.fields(hardware.H100_SXM) if f.init},
    "hardware.Fabric": lambda: {f.name: getattr(hardware.FABRICS["InfiniBand NDR"], f.name)
                                for f in dataclasses.fields(hardware.Fabric) if f.init},
    "hardware.Node": lambda: {f.name: getattr(hardware.DGX_H100, f.name) for f in dataclasses.fields(hardware.Node)
                              if f.init},
    "hardware.Cluster": lambda: dict(node=hardware.DGX_H100, num_nodes=128, fabric=hardware.FABRICS["InfiniBand NDR"]),
    "jct.crossover": lambda: dict(result=_sweep()),
    "jct.sync_wall": lambda: dict(result=_sweep()),
    "jct.tutorial_plan": lambda: dict(gpus=1024),
    "jct.fixed_plan": lambda: dict(tp=8, pp=4),
    "jct.scaled_profile": lambda: dict(profile=reliability.TEXTBOOK_PROFILE, factor=2.0),
    "memory.optimizer": lambda: dict(name="adam-mixed"),
    "memory.zero_communication_bytes": lambda: dict(model_or_params=EX.model, zero_stage=1, tp=8, pp=4),
    "memory.in_flight_micro_batches": lambda: dict(pp=4, stage=1),
    "memory.breakdown": lambda: dict(model=EX.model, accelerator="H100 SXM", plan=PLAN, seq_length=8192),
    "memory.Optimizer": lambda: dict(name="x", weights=2.0, gradients=2.0, state=12.0, checkpoint=14.0),
    "models.model_arg": lambda: dict(name="model", value="Llama 3 70B"),
    "models.model": lambda: dict(name="Llama 3 70B"),
    "models.MLA": lambda: dict(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
    "models.TransformerConfig": lambda: dict(name="tiny", num_layers=4, hidden_size=64, num_heads=4, vocab_size=100,
                                             seq_length=16),
    "parallelism.compute_efficiency": lambda: dict(model=EX.model, tp=8),
    "parallelism.elementwise_bytes_per_token": lambda: dict(model=EX.model, seq_length=8192),
    "parallelism.evaluate": lambda: dict(model=EX.model, cluster=CLUSTER, tp=8, pp=4, dp=32, micro_batch=1,
                                         global_batch=1024, seq_length=8192),
    "parallelism.step_time": lambda: dict(model=EX.model, cluster=CLUSTER, plan=PLAN, seq_length=8192),
    "parallelism.Run": lambda: dict(label="x", model=EX.model, cluster=CLUSTER, plan=PLAN, metric="mfu",
                                    published=0.4, role="validation", source="test"),
    "parallelism.rank_groups": lambda: dict(plan=PLAN),
    "parallelism.amdahl_speedup": lambda: dict(serial_fraction=0.01, gpus=1024),
    "pipeline.bubble_time": lambda: dict(schedule="1f1b", pp=4, micro_batches=8, t_f=1e-3, t_b=2e-3, t_w=0.0),
    "pipeline.activation_in_flight": lambda: dict(schedule="1f1b", pp=4, micro_batches=8),
    "pipeline.weight_copies": lambda: dict(schedule="dualpipe"),
    "pipeline.pipeline_timeline": lambda: dict(pp=4, micro_batches=8),
    "pipeline.schedule_table": lambda: dict(pp=4, micro_batches=8),
    "reliability.series_mttf": lambda: dict(mttf=[1e6, 2e6], count=[8, 2]),
    "reliability.fleet_mtbf": lambda: dict(node_mttf=1e7, num_nodes=128),
    "reliability.Component": lambda: dict(name="GPU", mttf=1e6, per_node=8),
    "reliability.FailureProfile": lambda: dict(name="x", components=reliability.TEXTBOOK_PROFILE.components,
                                               gpus_per_node=8),
    "reliability.profile_from_counts": lambda: dict(name="x", interruptions={"GPU": 100}, gpus=16_384,
                                                    window=86_400.0 * 54),
    "reliability.FleetObservation": lambda: dict(name="x", gpus=16_384, window=86_400.0 * 54, interruptions=419),
    "reliability.any_failure_probability": lambda: dict(p=0.01, n=100),
    "reliability.checkpoint_time": lambda: dict(checkpoint_bytes=1e12, bandwidth=1e10),
    "reliability.heartbeat_detection_time": lambda: dict(interval=10.0),
    "reliability.RestartTime": lambda: dict(detect=60.0, replace=120.0, relaunch=180.0, load=60.0),
    "reliability.timeline": lambda: dict(work=86_400.0, interval=3600.0, checkpoint_time=60.0, mtbf=36_000.0),
    "roofline.roof": lambda: dict(accelerator="H100 SXM"),
    "kernels.memory_bound_seconds": lambda: dict(nbytes=1e9, accelerator="H100 SXM"),
    "kernels.fp8_cast_seconds": lambda: dict(elements=1e6, accelerator="H100 SXM"),
    "kernels.gemm_model": lambda: dict(accelerator="H100 SXM"),
    "operators.stack": lambda: dict(name="fsdp2-eager"),
    "operators.layer_operators": lambda: dict(model=EX.model, micro_batch=1, seq_length=4096, tp=2),
    "operators.linear_shapes": lambda: dict(model=EX.model, micro_batch=1, seq_length=4096, tp=2,
                                            sequence_parallel=True, tp_overlap=True, stack="fsdp2-compile"),
    "operators.llama_shaped": lambda: dict(hidden_size=4096),
    "operators.fp8_layer_speedup": lambda: dict(model=models.LLAMA3_8B, seq_length=4096),
    "plots.parallelism.operator_breakdown_chart": lambda: dict(layers=[operators.layer_operators(models.LLAMA3_8B)]),
    "plots.experts.moe_operator_chart": lambda: dict(layers=[operators.layer_operators(models.model("Qwen3-30B-A3B"),
                                                                                        ep=8, expert_tp=1)]),
    "plots.parallelism.fp8_width_chart": lambda: dict(hidden_sizes=[2048, 4096], modelled=[1.2, 1.4], pairs=[]),
    "plots.parallelism.attention_share_chart": lambda: dict(seq_lengths=[8192, 16384], layers={"8B": [
        operators.layer_operators(models.LLAMA3_8B, seq_length=s) for s in (8192, 16384)]}),
    "kernels.attention_model": lambda: dict(accelerator="H100 SXM"),
    "kernels.memory_bandwidth": lambda: dict(accelerator="H100 SXM"),
    "kernels.attention_gain": lambda: dict(kernel="cudnn", accelerator="B200", seq_length=8192),
    "roofline.attainable_flops": lambda: dict(accelerator="H100 SXM", intensity=100.0),
    "roofline.Roof": lambda: dict(peak=989e12, bandwidth=3.35e12),
    "roofline.Op": lambda: dict(name="x", flops=1e9, bytes=1e6),
    "roofline.elementwise": lambda: dict(elements=1e6),
    "roofline.layer_norm": lambda: dict(tokens=8192, hidden=8192),
    "roofline.adam_update": lambda: dict(params=1e9),
    "roofline.critical_tokens": lambda: dict(k=8192, n=8192, ridge=295.0),
    "roofline.time_bound": lambda: dict(op=roofline.matmul(4096, 4096, 4096), accelerator="H100 SXM"),
    "roofline.place": lambda: dict(op=roofline.matmul(4096, 4096, 4096), accelerator="H100 SXM"),
    "roofline.layer_time": lambda: dict(ops=roofline.layer_ops(models.LLAMA3_8B, 1), accelerator="H100 SXM"),
    "scenario.Scenario": lambda: dict(model=EX.model, cluster=CLUSTER, dtype="bf16", plan=PLAN, seq_length=8192,
                                      token_budget=2e12, reference_mfu=0.4, mfu_source="x"),
    "units.format_si": lambda: dict(value=1.5e9, unit="B"),
    "units.fmt_percent": lambda: dict(fraction=0.25),
    "plots.memory.memory_breakdown_chart": lambda: dict(b=memory.breakdown(EX.model, "H100 SXM", PLAN)),
    "plots.parallelism.step_breakdown_chart": lambda: dict(step=_STEP),
    "plots.parallelism.step_comparison_chart": lambda: dict(steps={"a": _STEP, "b": _STEP}),
    "plots.parallelism.cp_exposure_chart": lambda: dict(seq_lengths=[8192, 32768], exposed={"CP=2": [0.01, 0.05]}),
    "plots.parallelism.mfu_scaling_chart": lambda: dict(gpus=[512, 1024], best_mfu=[0.45, 0.40]),
    "plots.parallelism.stack_parts": None,  # a helper of the figures above: draws onto bars it is given
    "plots.experts.all_to_all_chart": lambda: dict(
        comparison=experts.all_to_all_vs_all_reduce(256e6, [8, 64], CLUSTER)),
    "plots.experts.deepseek_chart": lambda: dict(estimates={"DeepSeek-V3": experts.deepseek_v3_estimate()}),
    "plots.jct.jct_breakdown_chart": lambda: dict(estimates=list(_sweep().estimates)),
    "plots.jct.jct_crossover_chart": lambda: dict(sweeps=[_sweep()], mark=1024),
    "plots.jct.jct_scaling_chart": lambda: dict(sweeps=[_sweep()]),
    "plots.jct.loss_comparison_chart": lambda: dict(gpus=[512, 1024], tutorial={"communication": [1, 2],
                                                                                "reliability": [3, 4]},
                                                    ours={"communication": [0.5, 1], "reliability": [2, 3]}),
    "plots.accuracy.model_vs_published_chart": lambda: dict(group="Step time"),
    "plots.roofline.attention_rates_chart": lambda: dict(rates=kernels.attention_rates(seq_lengths=(1024, 8192))),
    "plots.accuracy.kernel_check_chart": lambda: dict(checks=accuracy.kernel_check()),
    "plots.accuracy.rowwise_chart": lambda: dict(layers=accuracy.rowwise_layers()),
    "plots.experts.ep_sweep_chart": lambda: dict(sweep=experts.ep_sweep(**CALLS["experts.ep_sweep"]())),
    "plots.jct.jct_sensitivity_chart": lambda: dict(result=jct.sensitivity(EX.model, 2e12, CLUSTER)),
    "plots.parallelism.search_scatter_chart": lambda: dict(result=parallelism.search(
        EX.model, CLUSTER, 1024, seq_length=8192, micro_batches=(1,), zero_stages=(1,), recomputes=("selective",))),
    "widgets.slider": lambda: dict(minimum=1.0, maximum=100.0, value=10.0, description="x"),
    "widgets.dropdown": lambda: dict(options=["a", "b"], value="a", description="x"),
    "widgets.Explorer": None,  # a control surface, built by every explorer above (each probed)
    "stragglers.any_slow_probability": lambda: dict(hosts=1536, probability=8.8e-5),
    "accuracy.readings": lambda: dict(group="Other runs"),
    "accuracy.readings_table": lambda: dict(group="Mixture of experts"),
    "runs.Reading": lambda: dict(name="TP communication exposed", plan={"tp_overlap": False},
                                 why="the source does not say"),
}
RESULTS = {  # public types the library builds as results or as its own data: not an input to probe
    "accuracy.Comparison", "accuracy.Summary", "accuracy.Gap", "accuracy.GenerationPair", "check.Feedback",
    "collectives.LinkModel",
    "collectives.LinkCost", "collectives.Hierarchical", "collectives.Measurement", "collectives.RingStep",
    "collectives.CostCurve", "collectives.GradientSync", "collectives.TieredCollective", "collectives.DimensionTiers", "collectives.TierSweep", "experts.MoeSummary", "experts.PublishedCount",
    "experts.AllToAllComparison", "experts.EpSweep", "experts.A2ARatio", "experts.DeepSeekEstimate", "experts.BatchRamp", "experts.MoeMemoryCheck",
    "experts.DispatchBenchmark", "accuracy.A2ARate", "accuracy.AttentionWhatIf", "accuracy.DroplessReading",
    "accuracy.LayerGap", "accuracy.PlacementPair", "accuracy.BlackwellCalibration", "accuracy.AttentionSwitch",
    "jct.Estimate",
    "jct.Sweep", "jct.NoFeasibleLayout", "jct.Sensitivity", "memory.ModelState", "memory.MaxModelMeasurement",
    "memory.ActivationTerms", "memory.Breakdown", "parallelism.StageLayers", "parallelism.StepTime",
    "parallelism.SearchResult", "pipeline.Timeline", "parallelism.Timeline", "reliability.Waste",
    "reliability.Simulation",
    "reliability.Event", "reliability.UCurve", "reliability.TimelineRun", "reliability.NodeFailureRate",
    "reliability.JobMTTF", "roofline.TimeBound", "roofline.Placement", "roofline.LayerTime",
    "roofline.MeasuredRoofline", "roofline.RooflineCheck", "tables.Table", "kernels.GemmModel", "operators.Stack", "operators.OperatorRow",
    "operators.LayerOperators", "accuracy.StackSummary", "runs.FP8Pair", "runs.AblationStep", "accuracy.Drift",
    "accuracy.MoeError", "accuracy.KernelBracket", "accuracy.TritonCheck", "accuracy.BackwardInLine", "accuracy.AsyncTPGain", "accuracy.WeakScaling", "accuracy.FsdpLatency", "accuracy.Fp8Rate",
    "parallelism.RecomputeChoice", "accuracy.ReadingError",
    "kernels.AttentionModel", "kernels.AttentionRates", "kernels.KernelMeasurement", "kernels.BestShapeCheck", "kernels.AttentionCheck",
    "accuracy.KernelCheck",
    "accuracy.KernelSummary", "accuracy.RowwiseLayer", "accuracy.RowwiseReading",
}
PROBE_SLOW = {  # seconds per call or more: probed by `pytest -m slow`
    "parallelism.search", "parallelism.calibrate", "jct.sweep", "jct.crossover", "jct.sync_wall", "jct.sensitivity",
    "jct.gpus_for_deadline", "jct.best_plan", "jct.estimate", "jct.JctExplorerFigure", "reliability.simulate",
    "reliability.u_curve", "reliability.timeline_run", "experts.ep_sweep", "experts.deepseek_v3_estimate",
    "accuracy.comparisons", "accuracy.summary", "accuracy.summary_table", "accuracy.megascale_drops",
    "accuracy.megascale_against_selene", "accuracy.fp8_rate_sensitivity", "accuracy.fp8_rate_table",
    "memory.max_micro_batch", "plots.jct.jct_breakdown_chart",
    "plots.jct.jct_crossover_chart", "plots.jct.jct_scaling_chart", "plots.jct.jct_sensitivity_chart",
    "plots.reliability.u_curve_chart", "plots.reliability.timeline_chart", "plots.reliability.mtbf_sweep_chart",
    "plots.reliability.first_order_breakdown_chart", "plots.reliability.UCurveExplorerFigure",
    "plots.accuracy.accuracy_error_chart", "plots.accuracy.bound_headroom_chart",
    "plots.accuracy.model_vs_published_chart", "plots.parallelism.validation_chart",
    "plots.parallelism.search_scatter_chart", "plots.experts.moe_validation_chart", "plots.experts.deepseek_chart",
    "plots.experts.ep_sweep_chart", "widgets.jct.explorer_view", "widgets.reliability.timeline_view",
    "widgets.experts.moe_view", "widgets.parallelism.plan_explorer", "widgets.jct.jct_explorer",
}
FREE_TEXT = {"name", "label", "title", "source", "assumed", "description", "mfu_source", "what", "quantity",
             "why", "leaves_out", "unit", "vendor", "form_factor", "memory_type", "technology", "strategy", "answer"}
SKIP_ARGS = {"ax", "figsize", "seed", "rng"}  # drawing surfaces; a seed's own rule is probed in reliability
CATALOG_OBJECTS = [models.LLAMA3_70B, CLUSTER, hardware.H100_SXM, hardware.DGX_H100, hardware.FABRICS["InfiniBand NDR"],
                   PLAN, EX]


def _all_public_callables():
    seen, out = set(), []
    for info in pkgutil.walk_packages(atscale.__path__, "atscale."):
        if any(part.startswith("_") for part in info.name.split(".")) or ".answers" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) not in seen \
                    and getattr(obj, "__module__", "").startswith("atscale"):
                seen.add(id(obj))
                out.append((info.name.removeprefix("atscale.") + "." + name, obj))
    for name in ("slider", "dropdown", "Explorer"):  # the explorer helpers the widgets package documents
        out.append((f"widgets.{name}", getattr(_widgets, name)))
    return out


PUBLIC = _all_public_callables()


def _params(fn):
    return [p for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in SKIP_ARGS]


def _example(label, fn):
    """Valid keyword arguments for ``fn`` (from CALLS, else its defaults and NAMED), or None."""
    if label in CALLS:
        return CALLS[label]() if CALLS[label] is not None else None
    args = {}
    for p in _params(fn):
        if p.default is p.empty:
            if p.name not in NAMED or NAMED[p.name] is None:
                return None
            args[p.name] = NAMED[p.name]
    return args


def test_every_public_callable_has_a_valid_example_or_is_a_result():
    missing = [label for label, fn in PUBLIC
               if label not in RESULTS and label not in CALLS and _example(label, fn) is None]
    assert not missing, f"public callables without an example call (add one to CALLS in {__file__}): {missing}"
    assert len(PUBLIC) >= 250


def _kind(value):
    if isinstance(value, (bool, np.bool_)):
        return "flag"
    if isinstance(value, _numbers.Real):
        return "number"
    if isinstance(value, str):
        return "name"
    if any(isinstance(value, type(o)) for o in CATALOG_OBJECTS) or isinstance(value, reliability.FailureProfile):
        return "object"
    if isinstance(value, (list, tuple, np.ndarray)) and len(value) and all(
            isinstance(x, _numbers.Real) and not isinstance(x, (bool, np.bool_)) for x in np.ravel(value)):
        return "numbers"
    return None


def _bad_values(name, value):
    """(bad value, whether it must be refused) for an argument whose valid value is ``value``."""
    kind = _kind(value)
    if kind == "flag":
        return [("no", True), ("yes", True), (1, True), (0, True), (NAN, True), (np.bool_(not value), False)]
    if kind == "number":
        numpy_twin = np.int64(value) if float(value).is_integer() and abs(value) < 2**62 else np.float64(value)
        return [(NAN, True), (INF, False), (-INF, False), (0, False), (-1, False), (0.5, False), (True, True),
                (False, True), (str(value), True), (None, False), (10**30, False), (1e300, False), ([], True),
                (np.array([]), True), (complex(1, 1), True), ([value, NAN], True), (numpy_twin, "accept"),
                (np.float32(value), False), ([value] * 3, False)]
    if kind == "name" and name not in FREE_TEXT:
        out = [(value + "x", True), ("", True), (True, True), (None, False), (3, False)]
        for variant in (value.upper(), value.lower(), value.title()):
            if variant != value:
                out.append((variant, True))
        return out
    if kind == "object":
        others = [o for o in CATALOG_OBJECTS if not isinstance(o, type(value))]
        return [(o, True) for o in others] + [("no such entry", True), (True, True), (None, False), (3, False)]
    if kind == "numbers":
        return [([], True), (np.array([]), True), ([NAN], True), ([True, False], True), (["x"], True),
                ([-1.0], False), ([0], False)]
    return []


class _TooSlow(Exception):
    pass


def _alarm(signum, frame):
    raise _TooSlow()


def _call(fn, kwargs, limit=30.0):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return fn(**kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


EXEMPT = {  # (callable, argument) -> why a class the probe would refuse is legitimately answered otherwise
    ("check.check", "answer"): "check() answers any answer with feedback (a wrong answer is not an error)",
    ("hardware.Accelerator", "scale_up_fabric"): "resolved when used (Accelerator.fabric names the catalog); the "
                                                 "fabrics are defined after the accelerators",
    ("parallelism.Run", "stack"): "free text: the training stack as the source names it (any string)",
    ("parallelism.Run", "group"): "free text: the set of runs a record belongs to (a data file's own name for it)",
    ("accuracy.Comparison", "stack"): "free text: a published run's training stack (empty for other comparisons)",
}
EMPTY_OK = {"ridge_lines", "mark"}  # an empty list of guide lines (or marks) draws none
ALIASES.update({"model_or_params": ("model", "params"), "b": ("breakdown", "b="), "steps": ("step",),
                "estimates": ("estimate",), "value": ("value", "model", "accelerator")})


def _probe_one(label, fn, valid, name, bad, must):
    try:
        result = _call(fn, {**valid, name: bad})
    except ValueError as exc:
        assert must != "accept", f"{label}({name}={bad!r}) refused a NumPy scalar: {exc}"
        text = str(exc)
        names = (name,) + ALIASES.get(name, ())
        assert any(n.lower() in text.lower() for n in names), f"{label}({name}={bad!r}): not named: {text}"
        assert len(text) < 300, f"{label}({name}={bad!r}): {len(text)} characters: {text}"
        return
    except _TooSlow:
        raise AssertionError(f"{label}({name}={bad!r}) ran for more than 30 s") from None
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"{label}({name}={bad!r}): {type(exc).__name__} from inside: {exc}"[:400]) from None
    assert must is not True, f"{label}({name}={bad!r}) was accepted: {result!r}"[:400]
    if label not in NEGATIVE_OK:
        try:
            _verdict(result, label)
        except AssertionError as exc:
            raise AssertionError(f"{label}({name}={bad!r}): {exc}"[:400]) from None
    else:
        import matplotlib.pyplot as plt

        plt.close("all")


def _probe(label, fn):
    valid = _example(label, fn)
    if valid is None:
        return
    result = _call(fn, valid)
    if label not in NEGATIVE_OK:
        _verdict(result, label)
    failures = []
    for p in _params(fn):
        value = valid.get(p.name, p.default)
        if value is inspect.Parameter.empty:
            continue
        if (label, p.name) in EXEMPT:
            continue
        for bad, must in _bad_values(p.name, value):
            if p.name in EMPTY_OK and np.size(bad) == 0 and not isinstance(bad, str):
                must = False
            if label.startswith("units.") and isinstance(bad, float) and math.isnan(bad):
                must = False  # a formatter prints what it is given: the NaN times of an infeasible result's repr
            try:
                _probe_one(label, fn, valid, p.name, bad, must)
            except AssertionError as exc:
                failures.append(str(exc).split("\n")[0])
    numeric = [p.name for p in _params(fn) if _kind(valid.get(p.name, p.default)) == "number"
               and not isinstance(valid.get(p.name, p.default), bool)]
    if len(numeric) >= 2:  # arrays of mismatched shapes in two numeric arguments
        a, b = numeric[:2]
        va, vb = valid.get(a, inspect.signature(fn).parameters[a].default), \
            valid.get(b, inspect.signature(fn).parameters[b].default)
        try:
            _probe_one(label, fn, {**valid, a: [va, va]}, b, [vb] * 3, True)
        except AssertionError as exc:
            if a not in str(exc):
                failures.append(str(exc).split("\n")[0])
    assert not failures, f"{len(failures)} answers break the rule:\n" + "\n".join(failures[:12])


_FAST = [(label, fn) for label, fn in PUBLIC if label not in RESULTS and CALLS.get(label, 0) is not None]


@pytest.mark.parametrize("label,fn", [pytest.param(label, fn, marks=pytest.mark.slow) if label in PROBE_SLOW
                                      else (label, fn) for label, fn in _FAST], ids=[c[0] for c in _FAST])
def test_every_argument_of_every_public_callable_answers_bad_input_clearly(label, fn):
    _probe(label, fn)
