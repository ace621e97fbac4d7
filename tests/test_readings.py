"""Other readings of what a published run's source leaves open (``atscale.runs.Reading``,
``atscale.accuracy.readings``): the Llama 3 rows under the records' reading of the paper and under each other
reading its text allows, each priced as the run with its plan changed and nothing else."""

import dataclasses

import pytest

from atscale import accuracy, runs
from atscale.plan import Plan

L3 = {r.label: r for r in runs.ALL_RUNS if r.label.startswith("Llama 3 405B")}
ROW_8K = L3["Llama 3 405B, 8,192 H100"]
NAMES = ["TP communication exposed", "gradients reduce-scattered every micro-batch", "weights gathered every micro-batch"]


def test_the_llama3_records_take_what_the_paper_states():
    """Sec. 3.3.2: 'we adopt asynchronous point-to-point communication in PP' (pp_overlap), FSDP with FP32 gradients
    reduced asynchronously (read as PyTorch's pipelining runs it: the ZeRO-1 bytes and memory), the interleaved
    schedule of one-slot chunks, the all-gather context parallelism."""
    for run in L3.values():
        assert run.plan.pp_overlap and run.plan.schedule == "interleaved" and run.plan.virtual_stages == 8
        assert run.plan.zero_stage == 1 and run.optimizer_name == "megatron-bf16" and run.dp_overlap == 1.0
        assert run.plan.cp_algorithm == "all-gather"
        assert "asynchronous point-to-point" in run.assumed and "the paper does not say" in run.assumed
        assert [x.name for x in run.readings] == NAMES


def test_the_cp16_row_says_the_table_prints_dp_4():
    run = L3["Llama 3 405B, 16,384 H100, CP 16, 131,072 tokens"]
    assert "DP 4 as printed" in run.source and run.plan.dp == 8
    # the row's other figures need DP 8: its GPU count and its tokens per batch
    assert run.plan.tp * run.plan.cp * run.plan.pp * run.plan.dp == run.cluster.num_gpus == 16384
    assert run.plan.global_batch * run.seq_length == pytest.approx(16.8e6, rel=0.01)  # "16M tokens"
    assert run.plan.global_batch // run.plan.dp == 16  # "Batch size/DP 16"


def test_each_reading_is_the_run_with_its_plan_changed_and_nothing_else():
    for run in L3.values():
        for reading in run.readings:
            read = run.read_as(reading.name)
            assert read.plan == dataclasses.replace(run.plan, **reading.plan)
            assert dataclasses.replace(read, plan=run.plan) == run


def test_readings_as_measured():
    """MFU points (model minus published; curve, operators) as measured when the readings were added (November
    2026). Without the TP overlap the 8,192-GPU row moves toward the published MFU, most under the curve; FSDP once
    every micro-batch turns the model pessimistic on both rows of 8,192 tokens; on the long-context row, whose
    micro-batches of 131,072 tokens hide the data-parallel traffic, the readings move the curve little."""
    got = {(e.run, e.reading): (round(100 * e.curve, 1), round(100 * e.operators, 1)) for e in accuracy.readings()}
    # (9.0, 9.3) until the column-parallel layers' input-gradient GEMMs ran whole under TP overlap (November 2026)
    assert got[(ROW_8K.label, "as recorded")] == (9.0, 9.4)
    assert got[(ROW_8K.label, NAMES[0])] == (3.0, 6.0)
    assert got[(ROW_8K.label, NAMES[1])] == (-3.2, -6.3)
    assert got[(ROW_8K.label, NAMES[2])] == (-8.8, -12.1)
    assert got[("Llama 3 405B, 16,384 H100", NAMES[0])] == (1.9, 4.4)
    assert got[("Llama 3 405B, 16,384 H100, CP 16, 131,072 tokens", "as recorded")] == (9.2, 0.9)
    assert len(got) == 4 * len(L3) + 2  # and DeepSeek-V3's two (the next tests)


def test_as_recorded_is_the_run_itself():
    every = {r.label: r for r in runs.ALL_RUNS}
    for e in accuracy.readings():
        if e.reading == "as recorded":
            run = every[e.run]
            assert (e.curve, e.operators) == (run.points(), run.points(operators=True)) and e.why == ""
            assert e.memory == run.memory_verdict()
        else:
            assert e.why and (e.memory == "fits" or e.run not in L3)


def test_deepseek_v3_layer_split_is_a_reading():
    """DeepSeek-V3's report does not state how its 61 layers are split over 16 stages: the record takes the even
    split and lists the one that counts the embedding and the output head as layer slots (November 2026: +0.7 and
    -0.5 MFU points as recorded, +6.1 and +4.4 so split; curve, operators; +4.5 since the experts' GEMMs run four at
    a time as Transformer Engine runs them). Its layout does not fit the memory model as recorded (the appendix says
    why), and the table says so."""
    got = {e.reading: e for e in accuracy.readings("Mixture of experts")}
    assert list(got) == ["as recorded", "embedding and output head as layer slots"]
    split = got["embedding and output head as layer slots"]
    assert (round(100 * split.curve, 1), round(100 * split.operators, 1)) == (6.1, 4.5)
    assert got["as recorded"].memory != "fits"
    table = accuracy.readings_table("Mixture of experts")
    assert [row[-1] for row in table.rows] == ["does not fit", "fits"]
    assert {e.run for e in accuracy.readings("Other runs")} == set(L3)
    with pytest.raises(ValueError, match="group='Llama 3'"):
        accuracy.readings("Llama 3")


def test_the_table_names_each_run_once():
    t = accuracy.readings_table("Other runs")
    assert len(t.rows) == 4 * len(L3)
    assert [row[0] for row in t.rows if row[0]] == list(L3)
    assert len(accuracy.readings_table().rows) == len(t.rows) + 2
    assert all(row[1] == "as recorded" for row in t.rows if row[0])


def test_a_run_without_readings_has_none():
    run = next(r for r in runs.ALL_RUNS if not r.label.startswith("Llama 3 405B"))
    assert run.readings == ()
    with pytest.raises(ValueError, match="readings: none"):
        run.read_as("TP communication exposed")


@pytest.mark.parametrize("name, plan, why, words", [
    ("", {"tp_overlap": False}, "x", ["name"]),
    ("x", {"tp_overlap": False}, "", ["why"]),
    ("x", {}, "y", ["plan", "non-empty"]),
    ("x", ["tp_overlap"], "y", ["plan"]),
    ("x", {"tp_overlapp": False}, "y", ["'tp_overlapp'", "not a Plan field"]),
    (3, {"tp_overlap": False}, "y", ["name"]),
])
def test_a_bad_reading_is_refused_by_name(name, plan, why, words):
    with pytest.raises(ValueError) as exc:
        runs.Reading(name, plan, why)
    assert all(w in str(exc.value) for w in words), str(exc.value)


def test_a_record_whose_reading_gives_no_plan_is_refused():
    bad = dict(ROW_8K.details, readings=[{"reading": "two stages", "plan": {"pp": 0}, "why": "none"}])
    with pytest.raises(ValueError, match="'two stages' gives no valid plan"):
        dataclasses.replace(ROW_8K, details=bad)
    with pytest.raises(ValueError, match="keys reading, plan and why"):
        dataclasses.replace(ROW_8K, details=dict(ROW_8K.details, readings=[{"reading": "x"}]))
    with pytest.raises(ValueError, match="unique"):
        dataclasses.replace(ROW_8K, details=dict(ROW_8K.details, readings=[ROW_8K.readings[0]] * 2))
    with pytest.raises(ValueError, match="not a reading"):
        ROW_8K.read_as("TP communication hidden")
    assert isinstance(ROW_8K.read_as(NAMES[0]).plan, Plan)


def test_readings_are_parsed_once_per_run():
    run = next(r for r in runs.ALL_RUNS if r.readings)
    assert run.readings is run.readings  # the record's entries become Reading objects once, not on every access
    again = dataclasses.replace(run)
    assert again.readings == run.readings
