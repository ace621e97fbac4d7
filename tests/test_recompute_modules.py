"""Selective recomputation by module (issue 31, item 4): an explicit list of what each layer recomputes, priced in
time (its forward runs again) and in memory (its outputs are not stored)."""

import dataclasses

import numpy as np
import pytest

from atscale import memory, models, parallelism
from atscale.plan import RECOMPUTE_MODULES, Plan
from atscale.scenario import RUNNING_EXAMPLE as EX

SEL = dataclasses.replace(EX.plan, recompute="selective")
TORCHTITAN_OP = ("layernorm", "act", "alternate_mm")  # torchtitan's per-operator policy (parallelize_llama.py)
STACKS = [None, "megatron-core"]


def _st(modules, stack=None, plan=SEL, model=EX.model):
    return parallelism.step_time(model, EX.cluster, dataclasses.replace(plan, recompute_modules=modules), stack=stack,
                                 memory_check=False)


@pytest.mark.parametrize("stack", STACKS)
def test_default_list_is_the_attention_core(stack):
    """``None`` and ``("core_attn",)`` are the book's selective recomputation, exactly."""
    a, b = _st(None, stack), _st(("core_attn",), stack)
    assert a.total == b.total and a.memory_total == b.memory_total and a.recompute == b.recompute


@pytest.mark.parametrize("stack", STACKS)
def test_each_module_trades_time_for_memory(stack):
    none = parallelism.step_time(EX.model, EX.cluster, dataclasses.replace(SEL, recompute="none"), stack=stack,
                                 memory_check=False)
    for m in ("layernorm", "act", "mlp"):
        st = _st((m,), stack)
        assert st.recompute > 0 and st.total > none.total
        assert st.memory_total < none.memory_total
    # the MLP recomputes more than its activation, and saves more
    mlp, act = _st(("mlp",), stack), _st(("act",), stack)
    assert mlp.recompute > act.recompute and mlp.memory_total < act.memory_total
    # modules add up: both norms and the MLP together save what each saves
    both = _st(("layernorm", "mlp"), stack)
    saved = lambda st: none.memory_total - st.memory_total
    assert saved(both) == pytest.approx(saved(_st(("layernorm",), stack)) + saved(mlp), rel=1e-9)
    assert both.recompute == pytest.approx(_st(("layernorm",), stack).recompute + mlp.recompute, rel=1e-9)


def test_mlp_recompute_costs_its_forward_matmuls():
    """Curve model: the MLP's forward is a third of its matmuls' forward-and-backward time, the MLP's share of the
    layer's matmul weights (SwiGLU: 3 h f against Q, K, V and the output projection)."""
    m = EX.model
    st, act = _st(("mlp",)), _st(("act",))
    mlp_w = 3 * m.hidden_size * m.active_ffn_size
    attn_w = m.hidden_size * (m.num_heads * m.qk_head_dim + m.kv_heads * (m.qk_head_dim + m.v_head_dim)) \
        + m.num_heads * m.v_head_dim * m.hidden_size
    plain = parallelism.step_time(m, EX.cluster, dataclasses.replace(SEL, recompute="none"), memory_check=False)
    gemm_share = plain.compute * 0 + (st.recompute - act.recompute)  # the matmul part of the MLP's recompute
    assert mlp_w / (mlp_w + attn_w) > 0.5
    assert gemm_share > 0 and gemm_share < plain.compute / 3
    # hardware FLOPs: the MLP's forward matmuls (2 per weight per token) on top of the model's
    per_token = (st.hardware_flops_per_step - st.model_flops_per_step) / st.tokens_per_step
    assert per_token == pytest.approx(2 * mlp_w * m.num_layers, rel=1e-9)


def test_memory_agrees_with_the_breakdown():
    """The step time's activations and the memory chapter's breakdown count the same savings."""
    for mods in (("layernorm",), ("act",), ("mlp",), ("core_attn", "layernorm", "act", "mlp"), TORCHTITAN_OP):
        plan = dataclasses.replace(SEL, recompute_modules=mods)
        per_layer = memory.activation_bytes_per_layer(EX.model, plan.micro_batch, tp=plan.tp,
                                                      sequence_parallel=plan.sequence_parallel, recompute="selective",
                                                      flash_attention=True, recompute_modules=mods)
        plain = memory.activation_bytes_per_layer(EX.model, plan.micro_batch, tp=plan.tp,
                                                  sequence_parallel=plan.sequence_parallel, recompute="selective",
                                                  flash_attention=True)
        b = memory.breakdown(EX.model, plan=plan, flash_attention=True)
        b0 = memory.breakdown(EX.model, plan=SEL, flash_attention=True)
        assert b.activations / b0.activations == pytest.approx(per_layer / plain, rel=1e-9)
        st, st0 = _st(mods), _st(None)
        saved = memory.recompute_savings(EX.model, plan.micro_batch, None, mods, flash_attention=True)
        sp = plan.tp if plan.sequence_parallel else 1
        assert plain - per_layer == pytest.approx(saved.replicated / sp + (saved.parallel + saved.scores) / plan.tp)
        assert st.memory_total < st0.memory_total


def test_savings_by_the_formula():
    """``4 s b h`` for the norms, ``2 s b f`` for the activation, ``3 x 2 s b f`` for a SwiGLU MLP, ``2 x`` GELU."""
    m = EX.model
    s, f, h = m.seq_length, m.active_ffn_size, m.hidden_size
    assert memory.recompute_savings(m, 1, None, ("layernorm",)).replicated == 4 * s * h
    assert memory.recompute_savings(m, 1, None, ("act",)).parallel == 2 * s * f
    assert memory.recompute_savings(m, 2, None, ("mlp", "act")).parallel == 2 * 3 * 2 * s * f
    gpt = models.model("GPT-3 175B")
    assert memory.recompute_savings(gpt, 1, None, ("mlp",)).parallel == 2 * 2 * gpt.seq_length * gpt.active_ffn_size
    # unfused attention: the scores, only with core_attn
    assert memory.recompute_savings(gpt, 1, None, ("core_attn",)).scores > 0
    assert memory.recompute_savings(gpt, 1, None, ("mlp",)).scores == 0


def test_vectorised_equals_scalar():
    p = SEL
    v = parallelism.evaluate(EX.model, EX.cluster, tp=p.tp, pp=p.pp, dp=p.dp, micro_batch=p.micro_batch,
                             global_batch=p.global_batch, zero_stage=p.zero_stage, schedule=p.schedule,
                             virtual_stages=p.virtual_stages, recompute=np.array(["selective", "none"]),
                             sequence_parallel=p.sequence_parallel, recompute_modules=("mlp", "layernorm"),
                             memory_check=False)
    one = _st(("layernorm", "mlp"))
    none = parallelism.step_time(EX.model, EX.cluster, dataclasses.replace(p, recompute="none"), memory_check=False)
    assert v.total[0] == pytest.approx(one.total, rel=1e-12)
    assert v.memory_total[0] == pytest.approx(one.memory_total, rel=1e-12)
    assert v.total[1] == pytest.approx(none.total, rel=1e-12)


def test_plan_validates_and_describes_the_list():
    p = Plan(tp=8, dp=2, recompute="selective", recompute_modules=["mlp", "core_attn"])
    assert p.recompute_modules == ("core_attn", "mlp")  # canonical order
    assert "selective recomputation (core_attn, mlp)" in str(p)
    assert Plan(recompute="selective", recompute_modules="mlp").recompute_modules == ("mlp",)
    for bad in (("attention",), (), ("mlp", "mlp"), 3):
        with pytest.raises(ValueError, match="recompute_modules"):
            Plan(recompute="selective", recompute_modules=bad)
    with pytest.raises(ValueError, match="recompute_modules"):
        Plan(recompute="full", recompute_modules=("mlp",))
    with pytest.raises(ValueError, match="recompute_modules"):
        memory.activation_bytes_per_layer(EX.model, 1, recompute="none", recompute_modules=("mlp",))
    with pytest.raises(ValueError, match="modules"):
        memory.recompute_savings(EX.model, 1, None, ("everything",))
    assert set(RECOMPUTE_MODULES) == {"core_attn", "layernorm", "act", "mlp", "mla_up_proj", "alternate_mm"}
    assert RECOMPUTE_MODULES[:4] == ("core_attn", "layernorm", "act", "mlp")  # a module's bit in vectorised plans


def test_recompute_choices_table():
    choices = parallelism.recompute_choices(EX.model, EX.cluster, EX.plan)
    by = {c.label: c for c in choices}
    assert [c.label for c in choices][0] == "none" and by["none"].recompute_seconds == 0
    assert by["full"].memory < by["MLP"].memory < by["none"].memory
    # fused attention stores no scores: recomputing the attention core saves nothing and costs time
    assert by["attention core"].memory == by["none"].memory
    assert by["attention core"].step_seconds > by["none"].step_seconds
    one = parallelism.step_time(EX.model, EX.cluster, dataclasses.replace(EX.plan, recompute="selective",
                                                                         recompute_modules=("mlp",)))
    assert by["MLP"].step_seconds == one.total and by["MLP"].memory == one.memory_total
    with pytest.raises(ValueError, match="choices"):
        parallelism.recompute_choices(EX.model, EX.cluster, EX.plan, choices=[("x",)])
    with pytest.raises(ValueError, match="recompute_modules"):
        parallelism.recompute_choices(EX.model, EX.cluster, EX.plan, choices=[("x", "selective", ("qkv",))])
    with pytest.raises(ValueError, match="plan"):
        parallelism.recompute_choices(EX.model, EX.cluster, "TP=8")


def test_recompute_table_shows_the_choices():
    t = parallelism.recompute_table(EX.model, EX.cluster, EX.plan)
    rows = {r[0]: r for r in t.rows}
    assert list(rows)[0] == "none" and rows["none"][2] == "—" and rows["none"][3] == "—"
    assert rows["attention core"][2] == "—"  # fused attention: nothing saved
    assert rows["MLP"][2].endswith("GB") and rows["full"][4].startswith("+")
    with pytest.raises(ValueError, match="plan"):
        parallelism.recompute_table(EX.model, EX.cluster, None)


def test_recomputed_mlp_runs_its_tensor_parallel_collective_again():
    """Recomputing the MLP re-runs its forward gather and reduction: five collective pairs per layer instead of
    four (exposed in full without TP overlap); the attention core alone adds none."""
    plan = dataclasses.replace(SEL, tp_overlap=False)
    core, mlp = _st(("core_attn",), plan=plan), _st(("mlp",), plan=plan)
    assert mlp.tp_comm == pytest.approx(core.tp_comm * 5 / 4, rel=1e-12)
    none = parallelism.step_time(EX.model, EX.cluster, dataclasses.replace(plan, recompute="none"),
                                 memory_check=False)
    assert core.tp_comm == pytest.approx(none.tp_comm, rel=1e-12)


def test_mla_latents_are_stored():
    """Multi-head latent attention stores its two latents and their norms' outputs, ``4 s b (r_q + r_kv)``, outside
    the tensor-parallel region (Megatron-Core's down-projections give ``s / t`` tokens under sequence parallelism);
    recomputing the norms drops the outputs; an FP8 step stores the outputs (the up-projections' inputs) in one byte
    unless a recomputation keeps or drops them."""
    ds = models.DEEPSEEK_V3
    s, h, r = 4096, ds.hidden_size, ds.mla.q_lora_rank + ds.mla.kv_lora_rank
    assert r == 1536 + 512
    terms = memory.activation_terms(ds, 1, s, flash_attention=True)
    assert terms.replicated == s * h * 8 + 4 * s * r  # two norm inputs, two block inputs (no dropout), the latents
    assert memory.recompute_savings(ds, 1, s, ("layernorm",)).replicated == 2 * s * (2 * h + r)
    kw = dict(recompute="selective", flash_attention=True, recompute_modules=("mla_up_proj",))
    sp = memory.activation_bytes_per_layer(ds, 1, s, tp=8, sequence_parallel=True, **kw)
    no_sp = memory.activation_bytes_per_layer(ds, 1, s, tp=8, **kw)
    assert no_sp - sp == pytest.approx(terms.replicated * (1 - 1 / 8), rel=1e-12)
    te = lambda mods: memory.fp8_cache_savings(ds, 1, s, "transformer-engine", recompute="selective",
                                               recompute_modules=mods).replicated
    assert te(("core_attn",)) == 2 * s * h + s * r
    assert te(("mla_up_proj",)) == 2 * s * h  # the checkpoint keeps its 16-bit inputs
    assert te(("layernorm",)) == 0
    # a model without MLA has no latents
    llama = models.LLAMA3_8B
    assert memory.activation_terms(llama, 1, s).replicated == s * llama.hidden_size * 8



def test_alternate_matmuls_save_the_keys_and_the_up_projection():
    """torchtitan's policy keeps every other matmul's output: a Llama block recomputes wk, wo and w3 (its keys and its
    up projection are not stored; the residual sum is made again, the down projection's output kept in its place);
    a GELU MLP recomputes its down projection, whose output nothing stores, and the residual sum is a saving."""
    m = EX.model
    s, f, h = m.seq_length, m.active_ffn_size, m.hidden_size
    keys = m.kv_heads * m.qk_head_dim
    alt = memory.recompute_savings(m, 1, None, ("alternate_mm",))
    assert alt.parallel == 2 * s * (keys + f) and alt.replicated == 0 and alt.scores == 0
    # with the whole MLP recomputed its up projection is dropped once
    both = memory.recompute_savings(m, 1, None, ("mlp", "alternate_mm"))
    assert both.parallel == memory.recompute_savings(m, 1, None, ("mlp",)).parallel + 2 * s * keys
    gpt = models.model("GPT-3 175B")
    g = memory.recompute_savings(gpt, 1, None, ("alternate_mm",))
    assert g.parallel == 2 * gpt.seq_length * gpt.kv_heads * gpt.qk_head_dim
    assert g.replicated == 2 * gpt.seq_length * gpt.hidden_size
    # no key projection of its own under multi-head latent attention
    ds = models.DEEPSEEK_V3
    assert memory.recompute_savings(ds, 1, None, ("alternate_mm",)).parallel == 2 * ds.seq_length * ds.active_ffn_size


@pytest.mark.parametrize("stack", STACKS)
def test_torchtitans_policy_keeps_the_attention_core(stack):
    """The policy recomputes the norms, the activation and every second matmul, not the attention kernel: it costs
    time and saves memory against storing everything (its memory agrees with the breakdown's: above)."""
    none = parallelism.step_time(EX.model, EX.cluster, dataclasses.replace(SEL, recompute="none"), stack=stack,
                                 memory_check=False)
    op = _st(TORCHTITAN_OP, stack)
    assert op.recompute > _st(("layernorm", "act"), stack).recompute > 0
    assert op.memory_total < _st(("layernorm", "act"), stack).memory_total < none.memory_total


def test_alternate_matmuls_gather_the_norms_outputs_again():
    """Under sequence parallelism the policy keeps the reduce-scatters' outputs but no all-gather's: the two
    all-gathers of the norms' outputs run again, half of two collective pairs (five pairs' worth in all)."""
    plan = dataclasses.replace(SEL, tp_overlap=False)
    core, alt = _st(("core_attn",), plan=plan), _st(("alternate_mm",), plan=plan)
    assert alt.tp_comm == pytest.approx(core.tp_comm * 5 / 4, rel=1e-12)


@pytest.mark.parametrize("stack", STACKS)
def test_alternate_matmuls_vectorised_equal_scalar(stack):
    p = SEL
    masks = np.array([sum(1 << RECOMPUTE_MODULES.index(m) for m in mods)
                      for mods in (TORCHTITAN_OP, ("alternate_mm", "mlp"), ("core_attn",))])
    v = parallelism.evaluate(EX.model, EX.cluster, tp=p.tp, pp=p.pp, dp=p.dp, micro_batch=p.micro_batch,
                             global_batch=p.global_batch, zero_stage=p.zero_stage, schedule=p.schedule,
                             virtual_stages=p.virtual_stages, recompute="selective",
                             sequence_parallel=p.sequence_parallel, recompute_modules=masks, memory_check=False,
                             stack=stack)
    for i, mods in enumerate((TORCHTITAN_OP, ("alternate_mm", "mlp"), ("core_attn",))):
        one = _st(mods, stack)
        assert v.total[i] == pytest.approx(one.total, rel=1e-12)
        assert v.memory_total[i] == pytest.approx(one.memory_total, rel=1e-12)


def test_the_step_stores_what_the_breakdown_stores_without_a_gate():
    """A GELU MLP's down projection is recomputed too, so the residual sum is a saving outside the TP region: the
    step-time model's activations fall by the same bytes, relative to another list's, as the per-layer count's."""
    gpt = models.model("GPT-3 175B")
    lists = (("layernorm",), ("layernorm", "act"), TORCHTITAN_OP)
    per_layer = [memory.activation_bytes_per_layer(gpt, SEL.micro_batch, tp=SEL.tp,
                                                   sequence_parallel=SEL.sequence_parallel, recompute="selective",
                                                   flash_attention=True, recompute_modules=mods) for mods in lists]
    step = [_st(mods, model=gpt).memory_total for mods in lists]
    assert memory.recompute_savings(gpt, 1, None, ("alternate_mm",)).replicated > 0
    assert (step[1] - step[2]) / (step[0] - step[1]) == pytest.approx(
        (per_layer[1] - per_layer[2]) / (per_layer[0] - per_layer[1]), rel=1e-9)
