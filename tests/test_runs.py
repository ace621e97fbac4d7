"""The published runs as data (``lib/atscale/data/runs/*.json``, read by ``atscale.runs``): every record loads to
exactly the run the Python built at commit db76ecc (``tests/fixtures/parallelism_db76ecc_runs.py``, a verbatim copy of
that code), the old names still reach them, and ``import atscale.parallelism`` reads no data."""

import dataclasses
import importlib.util
import json
import math
import pathlib
import subprocess
import sys
import tomllib

import pytest

from atscale import memory, parallelism as P, runs

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "parallelism_db76ecc_runs.py"
GROUPS = ("MEGATRON_TABLE1_RUNS", "KORTHIKANTI_TABLE5_RUNS", "OTHER_RUNS", "H100_RUNS", "MEGASCALE_RUNS", "MOE_RUNS",
          "CALIBRATION_RUNS", "VALIDATION_RUNS")


@pytest.fixture(scope="module")
def old():
    spec = importlib.util.spec_from_file_location("parallelism_db76ecc_runs", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


CHANGED = {  # records changed on purpose since db76ecc, and what changed (the rest is compared as before)
    **{label: "fabric and paper" for label in ("Llama 3 405B, 8,192 H100", "Llama 3 405B, 16,384 H100",
                                               "Llama 3 405B, 16,384 H100, CP 16, 131,072 tokens")},
    **{f"MegaScale 175B (Megatron-LM), {n} A100": "fabric" for n in ("3,072", "6,144", "8,192", "12,288")},
    **{label: "dispatcher" for label in ("Qwen3-235B-A22B, 256 H100, BF16",
                                         "Qwen3-235B-A22B, 256 H100, BF16, all-to-all overlapped")},
    "DeepSeek-V3, 2,048 H800, FP8": "recipe and recomputation",
    **{f"DeepSeek-V3, {n} H100, BF16": "recipe scripts" for n in ("512", "1,024")},
    "gpt-oss-120b, 64 H100, BF16": "recomputation",
    "Qwen3-30B-A3B, 8 H100, BF16, FSDP": "configuration",
    **{r["label"]: "recipe scripts (dense)" for r in json.loads(
        (ROOT / "lib/atscale/data/runs/h100-recipes.json").read_text(encoding="utf-8"))},
}
"""Issue 33: the Llama 3 and MegaScale runs moved to the tiered networks their papers describe (Meta's RoCE cluster,
MegaScale's three-tier CLOS), their ``assumed`` text saying so; node and GPU count unchanged. Issue 32: the two
Qwen3-235B rows as their source's table prints them (the DeepEP dispatcher, which sends a token across the network
once per destination node, and the recomputation 'norm, act'), where the records had assumed a plain all-to-all and
no recomputation, and (November 2026) TP communication not overlapped, as the source's scripts at the commit that
published them run it (no --tp-comm-overlap), and (later in November 2026) the pipeline's sends overlapped, Megatron-LM's
default at the commit the table names (overlap_p2p_comm); nothing else of them changed. DeepSeek-V3's own run: the FP8 recipe its report describes
(block-wise scaling, an option only the operator-level compute reads), said at the end of its ``assumed`` text, and
the recomputation its report states (norms and MLA up-projections, ``recompute_modules``; the attention core had
stood for them before the library could express them; since November 2026 also the SwiGLU output, sec. 3.3.3), and
the FP8 activation caching the report states (``fp8_cache="deepseek-v3"``, once the memory model could express it).
NVIDIA's two DeepSeek-V3 recipes on H100: the records had inherited the catalog model's dispatcher, DeepSeek's own
node-deduplicating one, and assumed no recomputation, an even layer split and TP overlap; they now take what the
source's scripts set (dgxc-benchmarking's launch.sh and the NeMo performance script and recipe at the commit its
setup.sh pins): the 'alltoall' dispatcher (one copy per expert), multi-token prediction, the first and last stages
one and two layers lighter, recomputation of the MLA up-projections, no TP overlap, token dropping at capacity 1.0,
and with that recomputation the memory check on. gpt-oss-120b: the recomputation its release's H100 configuration
sets (layernorm and moe_act), where the record had assumed none. Qwen3-30B-A3B under NeMo AutoModel: what its
benchmark configuration and the code it runs set (every block recomputed, the gathered weights kept from the forward
to the backward, BF16 weights and Adam moments, the DeepEP dispatcher), where the record had assumed no recomputation
with the memory check off and a plain all-to-all; its source names the release and the configuration file. NVIDIA's
twenty dense H100 recipes: what the scripts of the release that prints each row set (dgxc-benchmarking v24.11.1,
v25.02 for GPT-3 175B): the pipeline's sends overlapped wherever there is a pipeline (overlap_p2p_comm), and for
Nemotron-4 340B selective recomputation and Transformer Engine's FlashAttention backend instead of cuDNN's; the
``assumed`` text keeps what it said and adds what was read. The three Llama 3 rows (November 2026), besides their
fabric: the pipeline's sends asynchronous and the data parallelism as FSDP, as the paper's sec. 3.3.2 states them
(``pp_overlap``; the FSDP reading moves the bytes of the ZeRO-1 layout already modelled), the ``assumed`` text
rewritten to say what was read and what was not, the other readings the text allows listed (``readings``), and the
CP16 row's source saying that the table prints DP 4 where its other figures need 8."""


def _same(new, old, role):
    """Every field the old run had, compared one by one (``published`` to 1e-12 relative); a record in
    :data:`CHANGED` is compared on everything but what its kind changed (a fabric: the fabric, and an ``assumed`` text
    that must begin as it did; a dispatcher: the model's ``node_dedup``, the recomputation and the ``assumed`` text)."""
    assert new.label == old.label
    if CHANGED.get(new.label) == "dispatcher":
        assert new.model == dataclasses.replace(old.model, node_dedup=True) and not old.model.node_dedup, new.label
        assert new.plan == dataclasses.replace(old.plan, recompute="selective", recompute_modules=("act", "layernorm"),
                                               tp_overlap=False, pp_overlap=True)
        assert "DeepEP" in new.assumed and "DeepEP" not in old.assumed and new.source == old.source, new.label
        assert "--tp-comm-overlap" in new.assumed and "8017e11" in new.assumed, new.label
        assert "overlap_p2p_comm" in new.assumed and "1e057005" in new.assumed, new.label  # Megatron-LM's default
        old = dataclasses.replace(old, model=new.model, plan=new.plan, assumed=new.assumed)
    if CHANGED.get(new.label) == "recipe scripts":
        assert new.model == dataclasses.replace(old.model, node_dedup=False) and old.model.node_dedup, new.label
        assert new.plan == dataclasses.replace(old.plan, recompute="selective", recompute_modules=("mla_up_proj",),
                                               account_for_embedding=True, account_for_loss=True, tp_overlap=False,
                                               capacity_factor=1.0), new.label
        assert "launch.sh" in new.assumed and "7a8f1cc7" in new.assumed and new.source == old.source, new.label
        old = dataclasses.replace(old, model=new.model, plan=new.plan, assumed=new.assumed, memory_check=True)
    if CHANGED.get(new.label) == "recomputation":
        assert new.plan == dataclasses.replace(old.plan, recompute="selective", recompute_modules=("layernorm", "act"))
        assert "moe_act" in new.assumed and "v0.3.0" in new.assumed and new.source == old.source, new.label
        old = dataclasses.replace(old, plan=new.plan, assumed=new.assumed)
    if CHANGED.get(new.label) == "recipe and recomputation":
        assert new.fp8_recipe == "blockwise" and not (getattr(old, "details", None) or {}).get("float8_recipe")
        assert new.plan == dataclasses.replace(old.plan, recompute_modules=("layernorm", "act", "mla_up_proj"),
                                               fp8_cache="deepseek-v3"), new.label
        assert "mla_up_proj" in new.assumed and "'blockwise' recipe" in new.assumed, new.label
        assert "fp8_cache deepseek-v3" in new.assumed and not new.memory_check, new.label
        old = dataclasses.replace(old, assumed=new.assumed, plan=new.plan)
    if CHANGED.get(new.label) == "recipe scripts (dense)":
        nemotron = new.label.startswith("Nemotron-4 340B")
        expect = dataclasses.replace(old.plan, pp_overlap=old.plan.pp > 1,
                                     recompute="selective" if nemotron else old.plan.recompute)
        assert new.plan == expect, new.label
        assert new.details.get("attention_kernel") == ("flash2" if nemotron else None), new.label
        assert ("overlap_p2p_comm" in new.assumed) == (old.plan.pp > 1) and "dgxc-benchmarking v2" in new.assumed
        assert new.assumed.startswith(old.assumed.replace("no recomputation; ", "") if nemotron else old.assumed)
        old = dataclasses.replace(old, plan=new.plan, assumed=new.assumed)
    if CHANGED.get(new.label) == "configuration":
        assert new.plan == dataclasses.replace(old.plan, recompute="full", reshard_after_forward=False), new.label
        assert (old.optimizer_name, new.optimizer_name, old.memory_check, new.memory_check) == (
            "adam-mixed", "adam-bf16", False, True), new.label
        assert "activation_checkpointing" in new.assumed and "qwen3_moe_30b_te_deepep.yaml" in new.source, new.label
        assert new.model == dataclasses.replace(old.model, node_dedup=True) and "enable_deepep" in new.assumed
        old = dataclasses.replace(old, model=new.model, plan=new.plan, assumed=new.assumed, source=new.source,
                                  optimizer_name=new.optimizer_name, memory_check=True)
    assert new.model == old.model, new.label
    if CHANGED.get(new.label) == "fabric and paper":
        assert new.plan == dataclasses.replace(old.plan, pp_overlap=True), new.label
        assert "asynchronous point-to-point" in new.assumed and "torchtitan 9dec370" in new.assumed, new.label
        assert [x.name for x in new.readings] == ["TP communication exposed", "gradients reduce-scattered every "
                                                  "micro-batch", "weights gathered every micro-batch"], new.label
        assert new.source.startswith(old.source.split(";")[0].split(" as printed")[0].split(", DP")[0]), new.label
        assert ("DP 4 as printed" in new.source) == ("CP 16" in new.label), new.label
        assert new.cluster.fabric.tiers and new.cluster.fabric != old.cluster.fabric, new.label
        old = dataclasses.replace(old, cluster=new.cluster, assumed=new.assumed, plan=new.plan, source=new.source)
    if CHANGED.get(new.label) == "fabric":
        assert (new.cluster.node, new.cluster.num_gpus) == (old.cluster.node, old.cluster.num_gpus), new.label
        assert new.cluster.fabric.tiers and new.cluster.fabric != old.cluster.fabric, new.label
        assert new.assumed.startswith(old.assumed) and new.source == old.source, new.label
        old = dataclasses.replace(old, cluster=new.cluster, assumed=new.assumed)
    assert new.cluster == old.cluster, new.label
    assert new.plan == old.plan, new.label
    assert new.metric == old.metric, new.label
    assert math.isclose(new.published, old.published, rel_tol=1e-12, abs_tol=0), new.label
    assert new.role == role, new.label
    assert (new.source, new.assumed) == (old.source, old.assumed), new.label
    options = ("optimizer_name", "dp_overlap", "seq_length", "flash_attention", "memory_check", "dtype")
    assert [getattr(new, k) for k in options] == [getattr(old, k) for k in options], new.label


@pytest.mark.parametrize("name", GROUPS)
def test_every_loaded_run_equals_the_python_one(old, name):
    new_runs, old_runs = getattr(runs, name), getattr(old, name)
    assert [r.label for r in new_runs] == [r.label for r in old_runs]
    calibration = {r.label for r in old.CALIBRATION_RUNS}
    for new, was in zip(new_runs, old_runs):
        # The old code held the three calibration rows of Megatron-LM's Table 1 twice: as validation in
        # MEGATRON_TABLE1_RUNS, as calibration (a replaced copy) in CALIBRATION_RUNS. A record has one role: the
        # one the fit used. Every other role is compared as it was.
        role = "calibration" if name == "MEGATRON_TABLE1_RUNS" and was.label in calibration else was.role
        _same(new, was, role)
        if CHANGED.get(new.label) is None:  # every prediction of an unchanged record as it was
            assert new.predict() == was.predict(), new.label


def test_the_fixture_is_the_old_code_verbatim():
    """The fixture's body is lines 1517-1880 of parallelism.py at db76ecc (checked where git has that commit)."""
    try:
        text = subprocess.run(["git", "show", "db76ecc:lib/atscale/parallelism.py"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("commit db76ecc not in this clone (a shallow clone); test_every_loaded_run_equals... still ran")
    body = FIXTURE.read_text(encoding="utf-8").split("lines 1517-1880 ----\n", 1)[1]
    assert body == "\n".join(text.split("\n")[1516:1880]) + "\n"


def test_records_carry_stack_group_and_published_figure():
    for r in runs.ALL_RUNS:
        assert r.stack and r.group, r.label
        assert r.details.get("published_as"), r.label
    assert {r.stack for r in runs.MEGATRON_TABLE1_RUNS} == {"Megatron-LM (2021)"}
    deepseek = next(r for r in runs.MOE_RUNS if r.label == "DeepSeek-V3, 2,048 H800, FP8")
    assert isinstance(deepseek.optimizer_name, memory.Optimizer) and deepseek.stack == "DeepSeek (HAI-LLM)"
    with pytest.raises(TypeError):
        deepseek.details["published_as"] = "x"  # read-only


def test_old_names_reach_the_new_modules_and_import_reads_no_data():
    assert P.Run is runs.Run and P.H100_RUNS is runs.H100_RUNS and P.CALIBRATION_RUNS is runs.CALIBRATION_RUNS
    from atscale import calibration, fitting, search

    assert P.search is search.search and P.SearchResult is search.SearchResult and P.calibrate is fitting.calibrate
    assert P.Calibration is calibration.Calibration and P.CALIBRATION is calibration.CALIBRATION
    assert P.MAX_SEARCH_LAYOUTS == search.MAX_SEARCH_LAYOUTS
    with pytest.raises(AttributeError, match="no_such_name"):
        P.no_such_name  # noqa: B018
    code = ("import sys, atscale.parallelism as P; assert 'atscale.runs' not in sys.modules; "
            "assert 'atscale.search' not in sys.modules and 'atscale.fitting' not in sys.modules; "
            "P.H100_RUNS; assert 'atscale.runs' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_record_keeps_what_the_model_does_not_read(tmp_path):
    rec = {"label": "x", "group": "Test", "stack": "PyTorch FSDP2 (torchtitan), eager", "stack_preset": "fsdp2-eager",
           "role": "validation", "model": "Llama 3 8B", "node": "DGX H100", "gpus": 8, "fabric": "InfiniBand NDR",
           "plan": {"tp": 1, "pp": 1, "dp": 8, "global_batch": 8, "zero_stage": 3}, "seq_length": 8192,
           "metric": "step_seconds", "published": 1.5, "published_as": "1.5 s", "source": "s", "url": "https://x",
           "options": {"flash_attention": True, "compile": False, "float8_recipe": None}}
    path = tmp_path / "x.json"
    path.write_text(json.dumps([rec]))
    (run,) = runs.load(path)
    assert dict(run.details) == {"stack_preset": "fsdp2-eager", "published_as": "1.5 s", "url": "https://x",
                                 "compile": False, "float8_recipe": None}
    assert run.plan.zero_stage == 3 and run.flash_attention and run.step().feasible
    for bad, match in ((dict(rec, node="DGX H999"), "node"), ({k: v for k, v in rec.items() if k != "fabric"},
                                                                "lacks fabric")):
        path.write_text(json.dumps([bad]))
        with pytest.raises(ValueError, match=match):
            runs.load(path)


def test_the_records_ship_with_the_package():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["atscale"]
    assert "data/runs/*.json" in data
    assert dataclasses.is_dataclass(runs.Run)


def test_other_stacks_overlap_their_data_parallel_communication():
    """Every stack of the other-stacks records overlaps its data-parallel communication (FSDP's prefetch and
    asynchronous reduce-scatter; the NVIDIA recipes' overlap_grad_reduce): each record says so, and none takes the
    Run default of no overlap (the 2021-22 Megatron convention) by leaving the option out."""
    for r in runs.OTHER_STACK_RUNS:
        assert r.dp_overlap == 1.0, r.label
        assert "overlapped with compute" in r.assumed, r.label


def test_published_seconds_is_the_published_figure_as_a_step_whatever_the_metric():
    """A step-time record's own figure; a rate's step is the model's step over one plus its error, the same with the
    curve or the operators (the model's constants cancel): Llama 3's MFU rows and MegaScale's among them."""
    rates = [r for r in runs.ALL_RUNS if r.metric != "step_seconds"]
    assert len(rates) >= 5 and {"mfu", "mfu_causal"} <= {r.metric for r in rates}
    for r in rates:
        for operators in (False, True):
            step = float(r.step(operators=operators).total)
            assert r.published_seconds == pytest.approx(step / (1 + r.step_error(operators=operators)), rel=1e-9)
    r = next(r for r in runs.ALL_RUNS if r.metric == "step_seconds")
    assert r.published_seconds == r.published


# NVIDIA NeMo's performance summary (docs/source/performance/performance_summary.md at NeMo 24.07, DGX-H100, FP8)
# prints tokens/s and model TFLOP/s per GPU for the same rows; their ratio is NeMo's FLOPs per token.
NEMO_2407_PAIRS = (  # (model, sequence length, tokens/s per GPU, model TFLOP/s per GPU)
    ("Llama 2 7B", 4096, 16847, 776), ("Llama 3 8B", 8192, 12036, 697), ("Llama 3 70B", 8192, 1533, 738))


def test_nemo_counts_attention_in_full_as_the_long_sequence_records_assume():
    """The NeMo long-sequence records publish only model TFLOP/s per GPU and convert them to steps with the library's
    FLOP count (attention in full, ``12 l s h``). NeMo's own summary of the same months prints both figures: their
    ratio matches the full count on every Llama row, and not the causal half."""
    from atscale import models
    llama2 = next(r.model for r in runs.ALL_RUNS if r.label.startswith("Llama 2 7B, 8 H100, NeMo 24.03"))
    for name, s, tokens, tflops in NEMO_2407_PAIRS:
        model = llama2 if name == "Llama 2 7B" else models.model_arg("model", name)
        published = tflops * 1e12 / tokens
        full = models.training_flops_per_token(model, s)
        causal = full - 6 * model.num_layers * s * model.attention_width
        assert published == pytest.approx(full, rel=1e-3)  # to the printed figures' rounding
        assert published / causal - 1 > 0.07
