"""MLPerf Training's GPT-3 175B and Llama 3.1 405B submissions on H100 and H200 (``atscale/data/runs/mlperf.json``,
written by ``tools/mlperf-records.py`` from the submissions' result logs and configuration files): the records, the
tool's readers on inputs of the logs' and the configurations' form, the model's errors as measured when the runs
were added (November 2026, after the model: nothing was fitted on them), and issue 33's drift target on them."""

import importlib.util
import pathlib
import statistics

import pytest

from atscale import accuracy, runs

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("mlperf_records", ROOT / "tools" / "mlperf-records.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_records_are_the_submissions():
    rs = runs.MLPERF_RUNS
    assert len(rs) == 24 and {r.group for r in rs} == {"MLPerf Training"}
    assert {r.role for r in rs} == {"validation"} and {r.dtype for r in rs} == {"fp8"}
    assert {r.stack_preset for r in rs} == {"megatron-core"}
    # Transformer Engine's delayed scaling everywhere but the University of Florida's B200 runs (v5.1:
    # FP8_RECIPE=tensorwise, current scaling)
    assert {r.label: r.fp8_recipe for r in rs if r.fp8_recipe != "delayed"} == {
        r.label: "current" for r in rs if r.details["mlperf_round"] == "v5.1"}
    gpt3 = [r for r in rs if r.details["benchmark"] == "GPT-3 175B"]
    llama = [r for r in rs if r.details["benchmark"] == "Llama 3.1 405B"]
    assert (len(gpt3), len(llama)) == (13, 11)
    assert sorted({r.cluster.num_gpus for r in gpt3}) == [256, 512, 768, 4096, 6144, 8192, 10240, 10752, 11616]
    assert [r.cluster.num_gpus for r in llama] == [512, 2048, 2432, 2560, 8192, 512, 1024, 256, 512, 256, 448]
    assert [r.cluster.node.name for r in rs] == (["DGX H100"] * 18 + ["HGX H200"] * 2
                                                 + ["GB200 NVL72 (64 of its 72 GPUs)"] * 2 + ["HGX B200"] * 2)
    assert all(r.details["system"] == "Nebius" and r.label.split(", ")[1].endswith("H200")
               for r in rs if r.cluster.node.name == "HGX H200")
    for r in rs:
        p = r.plan
        assert p.tp * p.pp * p.cp * p.dp == r.cluster.num_gpus and p.global_batch % (p.dp * p.micro_batch) == 0
        assert r.metric == "step_seconds" and r.label.endswith(f"MLPerf Training {r.details['mlperf_round']} "
                                                               f"({r.details['system']})")
        slots = r.model.num_layers + p.account_for_embedding + p.account_for_loss
        assert slots % (p.pp * p.virtual_stages) == 0  # whole layers in every chunk
        assert "result_" in r.source and "/config_" in r.source and r.details["url"].startswith(
            "https://github.com/mlcommons/training_results_v")
        assert r.step(operators=True).memory_status != "over"
    assert all(r.model.name == "GPT-3 175B" and r.seq_length == 2048 and r.plan.cp == 1 for r in gpt3)
    for r in llama:  # 126 layers + the embedding and the loss = 8 stages x 8 chunks x 2
        p = r.plan
        assert r.model.name == "Llama 3 405B" and r.seq_length == 8192 and r.details["mlperf_round"] in ("v5.0",
                                                                                                         "v5.1")
        assert (p.tp, p.cp, p.pp, p.virtual_stages, p.micro_batch) == (8 if "H100" in r.label else 4, 2, 8, 8, 1)
        assert p.account_for_embedding and p.account_for_loss and p.pp_overlap and p.sequence_parallel
    # amaxes reduced inside the tensor(-and-context)-parallel group: v3.1 by Transformer Engine's switch, v4.1 and
    # v5.0 by Megatron-Core's tp_only_amax_red, which their custom.yaml sets; v4.0 sets neither
    tp_only = {r.details["mlperf_round"] for r in rs if r.details.get("amax_reduction") == "tensor-parallel"}
    assert tp_only == {"v3.1", "v4.1", "v5.0", "v5.1"}
    by = {r.label: r for r in rs}
    # the steps the tool read (median over the logs of each log's median over its blocks, the first dropped)
    assert by["GPT-3 175B, 11,616 H100, MLPerf Training v4.0 (NVIDIA Eos)"].published == pytest.approx(0.9214)
    assert by["GPT-3 175B, 512 H100, MLPerf Training v3.1 (NVIDIA Eos)"].published == pytest.approx(11.0718)
    assert by["GPT-3 175B, 10,752 H100, MLPerf Training v3.1 (Microsoft Azure ND H100 v5)"].published == \
        pytest.approx(0.9795)
    big = by["Llama 3.1 405B, 8,192 H100, MLPerf Training v5.0 (NVIDIA Eos-dfw)"]
    assert big.published == pytest.approx(5.2516) and (big.plan.dp, big.plan.global_batch) == (64, 1536)
    assert by["Llama 3.1 405B, 512 H100, MLPerf Training v5.0 (NVIDIA Eos-dfw)"].published == pytest.approx(55.2404)
    nebius = by["Llama 3.1 405B, 1,024 H200, MLPerf Training v5.0 (Nebius)"]  # the logs' lines carry a rank prefix
    assert nebius.published == pytest.approx(25.3868) and (nebius.plan.dp, nebius.plan.global_batch) == (16, 1152)
    # NVIDIA's GB200 NVL72 submissions (NeMo 25.04; added November 2026): 4 GPUs per compute tray, 64 per rack used,
    # each step the median of the training callback's train_step_time (their logs close no block but the last)
    tyche = [by[f"Llama 3.1 405B, {n} GB200, MLPerf Training v5.0 (NVIDIA Tyche)"] for n in (256, 512)]
    assert [r.published for r in tyche] == pytest.approx([19.1853, 19.4599])
    assert [(r.plan.dp, r.plan.global_batch) for r in tyche] == [(4, 448), (8, 896)]
    assert [r.cluster.num_nodes for r in tyche] == [4, 8] and {r.cluster.node.gpus for r in tyche} == {64}
    assert [r.plan.order for r in tyche] == [None, "tp-cp-pp-dp"]  # the 512-GPU run sets TP_PP_DP_MAPPING
    assert all("train_step_time" in r.details["published_as"] and "FULL_CUDA_GRAPH" in r.assumed for r in tyche)
    # the University of Florida's DGX B200 submissions to v5.1 (added November 2026): NVIDIA's 64-node configuration
    # on the 32 and 56 nodes of the system descriptions, which the logs' global batches agree with; each block's
    # steps named in the log
    uf = [by[f"Llama 3.1 405B, {n} B200, MLPerf Training v5.1 (University of Florida HiPerGator)"] for n in (256, 448)]
    assert [r.published for r in uf] == pytest.approx([27.6340, 27.9992])
    assert [(r.plan.dp, r.plan.global_batch, r.plan.order) for r in uf] == [(4, 576, "tp-cp-pp-dp"),
                                                                            (7, 1008, "tp-cp-pp-dp")]
    assert all("where the configuration sets 64" in r.source and "tensorwise" in r.assumed for r in uf)


def test_the_tool_reads_a_log_as_the_docstring_says(tool):
    def line(key, value, t, **meta):
        return (':::MLLOG {"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": "%s", '
                '"value": %s, "metadata": %s}' % (t, key, value, str(meta).replace("'", '"')))

    tokens = 3 * 8 * 2048  # three steps of 8 sequences per block
    log = [":::SYSJSON {}", line("global_batch_size", 8, 0), line("max_sequence_length", 2048, 0),
           line("gradient_accumulation_steps", 4, 0)]
    for i, seconds in enumerate((9.0, 3.0, 3.3, 3.6)):  # the first block carries the warm-up
        start = 100_000 * i
        log += [line("block_start", "null", start, first_epoch_num=i * tokens, epoch_count=tokens),
                line("block_stop", "null", start + int(seconds * 1000), first_epoch_num=i * tokens)]
    got = tool.read_log("\n".join(log))
    assert got["step"] == pytest.approx(1.1) and got["blocks"] == 3
    assert (got["global_batch_size"], got["gradient_accumulation_steps"]) == (8, 4)
    with pytest.raises(ValueError, match="too few"):
        tool.read_log("\n".join(log[:8]))


def test_the_tool_reads_a_log_that_counts_samples(tool):
    """Llama 3.1's logs: each block_start carries the samples trained before it; a block runs to the next block's
    start, the last to run_stop's count."""
    def line(key, t, **meta):
        return (':::MLLOG {"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": "%s", '
                '"value": null, "metadata": %s}' % (t, key, str(meta).replace("'", '"')))

    log = [line("global_batch_size", 0).replace("null", "16"), line("max_sequence_length", 0).replace("null", "8192"),
           line("gradient_accumulation_steps", 0).replace("null", "4.0")]
    for i, seconds in enumerate((90.0, 20.0, 22.0, 21.0)):  # 10 steps of 16 sequences per block; the first warms up
        log += [line("block_start", 100_000 * i, samples_count=160 * i),
                line("block_stop", 100_000 * i + int(seconds * 1000), samples_count=160 * i)]
    got = tool.read_log("\n".join(log + [line("run_stop", 400_000, samples_count=640)]))
    assert got["step"] == pytest.approx(2.1) and got["blocks"] == 3
    prefixed = "\n".join("  0: " + x for x in log + [line("run_stop", 400_000, samples_count=640)])
    assert tool.read_log(prefixed)["step"] == pytest.approx(2.1)  # a launcher's rank before every line (Nebius)
    with pytest.raises(ValueError, match="no end"):
        tool.read_log("\n".join(log))  # no run_stop: the last block's size is unknown
    with pytest.raises(ValueError, match="no block_start"):
        tool.read_log("\n".join(log[:3] + log[4:]))


def test_the_tool_reads_a_log_whose_blocks_are_not_closed(tool):
    """NeMo 25.04's logs (NVIDIA's GB200 submissions): one block_stop, at the end; the step time is then the median
    of the callback's train_step_time over the steps after the first block."""
    def line(key, t, value="null", **meta):
        return (':::MLLOG {"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": "%s", '
                '"value": %s, "metadata": %s}' % (t, key, value, str(meta).replace("'", '"')))

    log = [line("global_batch_size", 0, "16"), line("max_sequence_length", 0, "8192"),
           line("gradient_accumulation_steps", 0, "4.0")]
    samples = 0
    for block, seconds in enumerate((30.0, 2.0, 2.2, 2.1)):  # 3 steps of 16 sequences per block
        first = samples
        log.append(line("block_start", 100_000 * block, samples_count=samples))
        for _ in range(3):
            samples += 16
            log.append(line("tracked_stats", 100_000 * block + 1, '{"train_step_time": %s}' % seconds, step=samples))
    # as the GB200 logs close the last block: its block_stop carries that block's first sample, run_stop the total
    log += [line("block_stop", 500_000, samples_count=first), line("run_stop", 500_000, samples_count=samples)]
    got = tool.read_log("\n".join(log))
    assert got["step"] == pytest.approx(2.1) and got["steps"] == 9 and got["blocks"] == 3
    no_times = [x for x in log if "tracked_stats" not in x]
    with pytest.raises(ValueError, match="train_step_time"):
        tool.read_log("\n".join(no_times))


def test_the_tool_reads_a_configuration_as_the_run_took_it(tool):
    config = "\n".join(['export MINIBS="${MINIBS:=6}"', 'export TENSOR_MODEL_PARALLEL="${TP:=4}"   # tp',
                        'export PIPELINE_MODEL_PARALLEL="${PP:=6}" # pp', 'export DGXNNODES="${DGXNNODES:=1452}"',
                        "source config_common.sh", "export MICRO_BATCH_SIZE=2", "export MICRO_BATCH_SIZE=1",
                        "export INTERLEAVED_PIPELINE=8"])
    yaml = "virtual_pipeline_model_parallel_size: ${oc.decode:${oc.env:INTERLEAVED_PIPELINE,12}}"
    assert tool.layout(config, yaml) == dict(nodes=1452, tp=4, pp=6, micro_batch=1, virtual_stages=8, cp=1,
                                             gpus_per_node=8, account_for_embedding=False, account_for_loss=False,
                                             tp_only_amax=False, dp_last=False, fp8_recipe="delayed")
    got = tool.layout(config + "\nexport DGXNGPU=4\nexport TP_PP_DP_MAPPING=True", yaml)  # a GB200 compute tray
    assert (got["gpus_per_node"], got["dp_last"]) == (4, True)
    assert got["fp8_recipe"] == "delayed" and tool.layout(config + '\nexport FP8_RECIPE="tensorwise"', yaml)[
        "fp8_recipe"] == "tensorwise"
    no_vp = config.replace("export INTERLEAVED_PIPELINE=8", "")
    assert tool.layout(no_vp, yaml)["virtual_stages"] == 12  # the yaml's default
    with pytest.raises(SystemExit, match="DGXNNODES|nodes"):
        tool.layout(config.replace("DGXNNODES", "NODES"), yaml)
    # what a configuration leaves to custom.yaml's defaults, and what it sets itself (Llama 3.1 405B, v5.0)
    yaml += ("\ncontext_parallel_size: ${oc.decode:${oc.env:CONTEXT_PARALLEL,4}}"
             "\ntp_only_amax_red: ${oc.decode:${oc.env:TP_ONLY_AMAX_RED,True}}")
    got = tool.layout(config + "\nexport ASYM_PP_EMBED=True", yaml)
    assert (got["cp"], got["account_for_embedding"], got["account_for_loss"], got["tp_only_amax"]) == (4, True, False,
                                                                                                     True)
    got = tool.layout(config + "\nexport CONTEXT_PARALLEL=2\nexport TP_ONLY_AMAX_RED=False", yaml)
    assert (got["cp"], got["tp_only_amax"]) == (2, False)
    with pytest.raises(SystemExit, match="ASYM_PP_LOSS"):
        tool.layout(config + "\nexport ASYM_PP_LOSS=yes", yaml)


def test_errors_as_measured():
    """Both models on the twenty-two submissions, as measured when they were added (November 2026). The
    operator-level compute is within 8 % of every Hopper one: too fast on NeMo 23.09's GPT-3 and on NeMo 25.01's
    Llama 3.1 405B (by 1-6 %, H100 and H200), too slow on 24.04's and 24.09's GPT-3, whose FP8 weights, CUDA graphs
    and kernel tuning it does not price; on NeMo 25.04's GB200 NVL72 runs it is 15-16 % too fast. The curve is up to
    27 % too slow (on 24.09's 256-GPU run) and 7-20 % too slow on every Llama 3.1 one."""
    ops = {r.label: r.step_error(operators=True) for r in runs.MLPERF_RUNS}
    curve = {r.label: r.step_error() for r in runs.MLPERF_RUNS}
    gpt3 = [k for k in ops if k.startswith("GPT-3")]
    llama = [k for k in ops if k.startswith("Llama 3.1")]
    # the thirteen GPT-3 submissions (measured when they were added, before the Llama 3.1 ones)
    assert statistics.median(abs(ops[k]) for k in gpt3) == pytest.approx(0.053, abs=0.005)
    assert max(abs(ops[k]) for k in gpt3) == pytest.approx(0.080, abs=0.005)
    assert statistics.median(abs(curve[k]) for k in gpt3) == pytest.approx(0.064, abs=0.005)
    assert max(abs(curve[k]) for k in gpt3) == pytest.approx(0.271, abs=0.005)
    assert all(e < 0 for k, e in ops.items() if "v3.1" in k)
    assert all(ops[k] > 0 for k in gpt3 if "v3.1" not in k)
    # the seven Llama 3.1 405B submissions: NVIDIA's on H100, operators -3.1 % (512 GPUs) to -5.7 % (8,192), the
    # curve +12.1 to +7.0 %; Nebius's on H200 (TP 4), operators -1.1 and -1.4 %, the curve +20 %
    # NVIDIA's on GB200 NVL72 (TP 4; added later, November 2026, with Blackwell's GEMM rates from Bekman's published
    # best-shape matmuls): operators -15.3 and -15.6 %, too fast, as on gpt-oss on Blackwell; the curve +7.4 %
    # and the University of Florida's on DGX B200 (v5.1, current scaling; added last): operators -18.7 and -19.6 %,
    # the curve +0.5 and -0.6 %. Since Blackwell took its own kernel efficiency (0.81, fitted on NVIDIA's two 8-GPU
    # Llama 3 8B steps, runs.BLACKWELL_RUNS; November 2026) the four are -7.2, -7.7, -11.3 and -12.2 %: still too
    # fast, as the H100's Megatron-Bridge 405B rows are (-8 and -11 %) beside its 8B row (+5 %); -11.2, -11.6,
    # -15.4 and -16.4 % since Blackwell's attention runs at cuDNN's published B200 rates and the constant was
    # refitted on those two 8B steps (0.89; November 2026)
    assert [round(ops[k], 3) for k in llama] == pytest.approx([-0.031, -0.033, -0.045, -0.046, -0.057, -0.011, -0.014,
                                                               -0.112, -0.116, -0.154, -0.164], abs=0.002)
    assert [round(curve[k], 3) for k in llama] == pytest.approx([0.121, 0.112, 0.097, 0.096, 0.070, 0.202, 0.196,
                                                                 0.074, 0.074, 0.005, -0.006], abs=0.002)
    # all twenty-four (eighteen before Nebius's two: 0.049 and 0.083; twenty before the GB200 two: 0.049 and 0.097;
    # twenty-two before the B200 two: 0.049 and 0.085)
    assert statistics.median(abs(e) for e in ops.values()) == pytest.approx(0.050, abs=0.005)
    assert statistics.median(abs(e) for e in curve.values()) == pytest.approx(0.074, abs=0.005)


def _drifts(operators):
    return {d.series: d for d in accuracy.scale_drift(operators=operators) if "MLPerf" in d.series}


# drift in MFU points (largest count minus smallest) per round, curve and operators, as measured when the runs were
# added (November 2026)
DRIFT = {"GPT-3 175B, MLPerf v3.1 (NVIDIA Eos)": (2.33, -0.01), "GPT-3 175B, MLPerf v4.0 (NVIDIA Eos)": (5.05, -0.38),
         "GPT-3 175B, MLPerf v4.1 (NVIDIA Eos)": (1.24, 0.97),
         # 512 to 8,192 GPUs, NeMo 25.01 (added after the GPT-3 series, November 2026)
         "Llama 3.1 405B, MLPerf v5.0 (NVIDIA Eos-dfw)": (2.24, 0.89),
         "Llama 3.1 405B, MLPerf v5.0 (Nebius, H200)": (0.35, 0.10)}


@pytest.mark.parametrize("operators", [False, True], ids=["curve", "operators"])
def test_drift_pinned(operators):
    got = _drifts(operators)
    assert set(got) == set(DRIFT)
    for name, pinned in DRIFT.items():
        assert got[name].drift == pytest.approx(pinned[operators], abs=0.05)
    assert got["GPT-3 175B, MLPerf v3.1 (NVIDIA Eos)"].gpus[::6] == (512, 10752)
    assert got["GPT-3 175B, MLPerf v4.0 (NVIDIA Eos)"].gpus[-1] == 11616
    assert got["Llama 3.1 405B, MLPerf v5.0 (NVIDIA Eos-dfw)"].gpus == (512, 2048, 2432, 2560, 8192)


@pytest.mark.parametrize("series", list(DRIFT))
@pytest.mark.parametrize("operators", [False, True], ids=["curve", "operators"])
def test_issue_33_drift_target(series, operators, request):
    """Issue 33: on published runs of one stack from 256 to 11,616 GPUs the error may not drift by more than 2 MFU
    points. The operator-level compute meets it on all five series (GPT-3 in three rounds, Llama 3.1 405B from 512 to
    8,192 H100 in v5.0: 0.9 points, and on 512 and 1,024 H200: 0.1); the curve misses on v3.1 (2.3 points), v4.0
    (5.1: its 512-GPU layout, pipeline 8 with 4 chunks and micro-batch 2, and its 10,752-GPU one, pipeline 6 with 8 chunks and micro-batch 1, are far
    apart on the curve's efficiency) and v5.0's Llama 3.1 (2.2)."""
    if not operators and abs(DRIFT[series][0]) > 2:
        request.applymarker(pytest.mark.xfail(strict=True, reason="the curve drifts by more than 2 points"))
    assert abs(_drifts(operators)[series].drift) <= 2.0


def test_same_work_pairs_and_their_amax_reductions():
    """The v3.1 submissions reduced FP8's amaxes inside the tensor-parallel group only (their records say so): no
    all-reduce across replicas is counted for them; v4.0's Transformer Engine (1.6) no longer had the switch. Their
    FP8 steps grew by under 1 % with the same work per replica (as measured, November 2026), less than any FP8
    step of NVIDIA's recipe tables."""
    pairs = accuracy.mlperf_weak_scaling()
    # the University of Florida's B200 pair (v5.1, current scaling: no amax all-reduce across replicas) grew 1.3 %,
    # still less than any FP8 step of NVIDIA's recipe tables (added November 2026)
    uf = pairs[-1]
    assert uf.gpus == (256, 448) and uf.syncs == 0 and uf.published_growth == pytest.approx(0.0132, abs=0.0005)
    pairs = pairs[:-1]
    assert [w.gpus for w in pairs] == [(512, 768), (4096, 8192), (10240, 10752), (10752, 11616)]
    assert [w.syncs for w in pairs] == [0, 0, 0, 96]  # v4.0: 2 x 8 chunks x 6 micro-batches
    assert {r.details.get("amax_reduction") for r in runs.MLPERF_RUNS if "v3.1" in r.label} == {"tensor-parallel"}
    assert all(0 < w.published_growth < 0.01 for w in pairs)
    recipes = [w for w in accuracy.weak_scaling() if w.dtype == "fp8" and "NeMo" in w.label]
    assert max(w.published_growth for w in pairs + (uf,)) < min(w.published_growth for w in recipes)
    assert len(accuracy.weak_scaling()) == 12  # the both-precision table is unchanged by these FP8-only runs


def test_the_table_lists_every_submission():
    table = accuracy.mlperf_table()
    assert len(table.rows) == len(runs.MLPERF_RUNS) == 24
    assert [row[0] for row in table.rows] == (["GPT-3 175B, v3.1"] * 8 + ["GPT-3 175B, v4.0"] * 3
                                              + ["GPT-3 175B, v4.1"] * 2 + ["Llama 3.1 405B, v5.0"] * 9
                                              + ["Llama 3.1 405B, v5.1"] * 2)
    assert all("%" in row[6] and "%" in row[7] and "×" in row[3] for row in table.rows)
    assert table.rows[7][1] == "Microsoft Azure ND H100 v5"
    assert table.rows[12][2:5] == ("512", "4×1×8 (6)", "16×2")
    assert table.rows[17][1:5] == ("NVIDIA Eos-dfw", "8,192", "8×2×8 (8)", "64×1")
    assert table.rows[-5][1:5] == ("Nebius", "1,024", "4×2×8 (8)", "16×1")
    assert table.rows[-3][1:5] == ("NVIDIA Tyche", "512", "4×2×8 (8)", "8×1")
    assert table.rows[-1][1:5] == ("University of Florida HiPerGator", "448", "4×2×8 (8)", "7×1")
    assert "result logs" in table.caption and "GB200" in table.caption and "B200" in table.caption


@pytest.mark.parametrize("operators", [False, True], ids=["curve", "operators"])
def test_issue_33_drift_from_256_to_11616_gpus(operators, request):
    """The issue's range end to end: NVIDIA's smallest submission (256 GPUs, v4.1, NeMo 24.09) against its largest
    (11,616, v4.0, NeMo 24.04), two releases of one stack on one system. The operator-level model's error moves by
    1.5 MFU points (within the 2 of the target), the curve's by 7.2 (as measured, November 2026)."""
    by = {r.label: r for r in runs.MLPERF_RUNS}
    small = by["GPT-3 175B, 256 H100, MLPerf Training v4.1 (NVIDIA Eos)"]
    large = by["GPT-3 175B, 11,616 H100, MLPerf Training v4.0 (NVIDIA Eos)"]
    drift = 100 * (large.points(operators=operators) - small.points(operators=operators))  # MFU points
    assert drift == pytest.approx(1.54 if operators else 7.16, abs=0.05)
    if not operators:
        request.applymarker(pytest.mark.xfail(strict=True, reason="the curve drifts by 7 points"))
    assert abs(drift) <= 2.0


def test_amax_all_reduces_of_a_group_inside_one_node():
    """The count and seconds of the amax all-reduces for a run whose tensor x data x context group is smaller than a
    node (NeMo 24.03's 8,192-token row: TP 1, DP 4 under PP 2): priced on NVLink, where it had raised a ValueError
    (a cluster of 4 GPUs is not a whole number of nodes)."""
    run = next(r for r in runs.ALL_RUNS if r.label.startswith("Llama 2 7B, 8 H100, NeMo 24.03 CP 1, 8,192"))
    count, seconds = accuracy._amax_all_reduces(run)
    assert run.plan.tp * run.plan.dp * run.plan.cp == 4 and count > 0 and 0 < seconds < 0.01 * run.published_seconds


def test_stack_summaries_can_leave_the_submissions_out():
    """accuracy.stack_summaries(leave_out=...): the same groups without the runs given, as the appendix asks what the
    MLPerf submissions decide; bad input refused, naming the keyword."""
    full = {(x.role, x.stack): x for x in accuracy.stack_summaries()}
    rest = {(x.role, x.stack): x for x in accuracy.stack_summaries(leave_out=runs.MLPERF_RUNS)}
    key = ("validation", "megatron-core")
    assert rest[key].runs == full[key].runs - len(runs.MLPERF_RUNS)
    errors = [abs(r.step_error(operators=True)) for r in runs.ALL_RUNS if r.role == "validation"
              and r.stack_preset == "megatron-core" and not r.model.is_moe and r.group != "MLPerf Training"]
    assert rest[key].operators_median == pytest.approx(statistics.median(errors), rel=1e-12)
    assert rest[("calibration", "megatron-core")] == full[("calibration", "megatron-core")]
    assert accuracy.stack_summaries(leave_out=()) == accuracy.stack_summaries()
    for bad in (runs.MLPERF_RUNS[0], "MLPerf Training", None, [1, 2]):
        with pytest.raises(ValueError, match="leave_out"):
            accuracy.stack_summaries(leave_out=bad)
    with pytest.raises(ValueError, match="leave_out leaves no validation run"):
        accuracy.stack_summaries(leave_out=runs.ALL_RUNS)


def test_the_generation_pairs():
    """Llama 3.1 405B on H100 and on GB200 by one publisher in one release: NVIDIA's MLPerf Training v5.0 submissions at
    512 GPUs each, the GB200s 2.21 times as fast per GPU (sequences per second), and Megatron-Bridge 26.02's table
    (1,024 H100, 256 GB200, global batch 1,536), 2.55 times. The operator-level model said 2.53 and 2.65 (about the
    FP8 peak ratio, 2.53), above both, when the runs were added, 2.32 and 2.42, between them, once Blackwell took its
    own kernel efficiency (fitted on NVIDIA's 8-GPU Llama 3 8B steps, not on these; November 2026), and 2.42 and
    2.53 since Blackwell's attention runs at cuDNN's published B200 rates and that constant was refitted (0.89): above
    the first publisher, a little below the second; the curve 2.31 and 2.35, between them. The case study reads its
    B200 speedup against these pairs."""
    pairs = accuracy.generation_pairs()
    by = {r.label: r for r in runs.ALL_RUNS}
    assert [p.gpus for p in pairs] == [(512, 512), (1024, 256)]
    for p in pairs:
        old, new = by[p.older], by[p.newer]
        assert (old.cluster.accelerator.name, new.cluster.accelerator.name) == ("H100 SXM", "GB200")
        assert old.model == new.model and old.dtype == new.dtype == "fp8"
        assert p.published == pytest.approx((new.plan.global_batch / new.published_seconds / new.cluster.num_gpus)
                                            / (old.plan.global_batch / old.published_seconds / old.cluster.num_gpus))
    assert [(p.published, p.operators, p.curve) for p in pairs] == [
        pytest.approx((2.208, 2.419, 2.305), abs=0.005), pytest.approx((2.550, 2.530, 2.346), abs=0.005)]
