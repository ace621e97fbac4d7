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
from atscale import collectives, hardware, jct, memory, models, parallelism, reliability, roofline
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
    if dataclasses.is_dataclass(x):
        return all(_finite_nonnegative(getattr(x, f.name)) for f in dataclasses.fields(x)
                   if isinstance(getattr(x, f.name), (int, float, np.number, np.ndarray)))
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


def _buildable():
    out = []
    for label, fn, valid, kinds in _public_functions():
        try:
            result = fn(**valid)
        except ValueError:
            continue  # the table's example does not suit this function (e.g. 4 stages of a 126-layer model)
        _verdict(result)  # (closes a figure)
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
