"""One plan's operator-level layer times are remembered per context and plan fields (parallelism.LAYER_FIELDS):
the remembered value must be the value, whatever was evaluated before it."""

import ast
import inspect
import itertools

import numpy as np
import pytest

from atscale import models, operators, parallelism as P, runs
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX

# The functions the remembered value is computed by, and the names of the namespace they call L
_LAYER_FUNCTIONS = (P._operator_times, P._layer_activations, P._anywhere, P._selective_sum, P._selective_flops, P._recomputes)
_DERIVED = {"again"}  # set by parallelism._derived from "reco" and "rmods", both in the key


def _fields_read(source: str) -> set:
    """Every attribute read from a name ``L`` in ``source``."""
    tree = ast.parse(source)
    return {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "L"}


def test_the_key_names_every_plan_field_the_layer_times_read():
    read = set().union(*(_fields_read(inspect.getsource(f)) for f in _LAYER_FUNCTIONS))
    read |= _fields_read(inspect.getsource(operators))  # _rows, _experts, _summed, _output and their helpers
    assert read, "no field found: the check would pass vacuously"
    assert read - _DERIVED <= set(P.LAYER_FIELDS), sorted(read - _DERIVED - set(P.LAYER_FIELDS))
    if "again" in read:  # the recomputed modules, derived from these two
        assert {"reco", "rmods"} <= set(P.LAYER_FIELDS)
    assert {"b", "tp", "cp", "reco"} <= read  # the check sees the reads it should


def _plans():
    """Plans of the running example's 1,024 GPUs that differ from one another in every field of LAYER_FIELDS and in
    fields outside it (the pipeline, the data-parallel size, the global batch)."""
    out = []
    for tp, cp, mb, reco, zs, sp, pp, mods in itertools.product((1, 8), (1, 2), (1, 2),
                                                                ("none", "selective", "full"), (1, 3), (False, True),
                                                                (2, 4), (None, ("layernorm", "act"))):
        if (sp and tp == 1) or (mods and reco != "selective"):
            continue
        dp = 1024 // (tp * cp * pp)
        out.append(Plan(tp=tp, pp=pp, dp=dp, cp=cp, micro_batch=mb, global_batch=8 * dp, zero_stage=zs,
                        recompute=reco, recompute_modules=mods, sequence_parallel=sp,
                        reshard_after_forward=zs != 3 or pp == 2, tp_overlap=sp and pp == 4))
    return out


@pytest.mark.parametrize("stack", operators.STACK_NAMES)
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_a_remembered_step_is_the_step_computed_afresh(stack, dtype):
    plans = _plans()
    kw = dict(dtype=dtype, stack=stack, memory_check=False)
    warm = [P.step_time(EX.model, EX.cluster, p, **kw) for p in plans]  # each after every earlier plan
    warm_again = [P.step_time(EX.model, EX.cluster, p, **kw) for p in reversed(plans)][::-1]
    for p, a, b in zip(plans, warm, warm_again):
        P._LAYERS.clear()
        fresh = P.step_time(EX.model, EX.cluster, p, **kw)
        for part in P.PARTS:
            assert getattr(a, part) == getattr(fresh, part) == getattr(b, part), (p, part)
        assert a.memory_total == fresh.memory_total and a.hardware_flops_per_step == fresh.hardware_flops_per_step


def test_a_remembered_expert_layer_is_computed_afresh():
    """A mixture of experts reads the expert fields (ep, expert_tp, load, a2a): each in the key."""
    m = models.model("DeepSeek-V3")
    cluster = next(r for r in runs.ALL_RUNS if r.label == "DeepSeek-V3, 2,048 H800, FP8").cluster
    plans = [Plan(tp=1, pp=16, dp=128, micro_batch=1, global_batch=4096, zero_stage=1, ep=ep, expert_tp=etp,
                  expert_imbalance=load, a2a_overlap=a2a, recompute="selective")
             for ep, etp, load, a2a in itertools.product((32, 64), (1, 2), (1.0, 1.2), (False, True))]
    kw = dict(dtype="fp8", stack="megatron-core", memory_check=False, seq_length=4096)
    warm = [P.step_time(m, cluster, p, **kw) for p in plans]
    assert len({w.compute for w in warm}) > 4  # the fields move the compute: the key must hold them
    for p, a in zip(plans, warm):
        P._LAYERS.clear()
        fresh = P.step_time(m, cluster, p, **kw)
        assert all(getattr(a, part) == getattr(fresh, part) for part in P.PARTS), p


def test_the_vectorised_path_is_not_remembered_and_agrees():
    P._LAYERS.clear()
    many = P.evaluate(EX.model, EX.cluster, tp=[1, 8], pp=2, dp=[512, 64], micro_batch=1, global_batch=1024,
                      stack="megatron-core", memory_check=False)
    assert not P._LAYERS
    for i, tp in enumerate((1, 8)):
        one = P.step_time(EX.model, EX.cluster, Plan(tp=tp, pp=2, dp=512 // tp, micro_batch=1, global_batch=1024),
                          stack="megatron-core", memory_check=False)
        assert np.isclose(many.total[i], one.total, rtol=1e-12, atol=0)
