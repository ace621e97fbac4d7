"""What a reader sees of the library's results (issue 35, items 5, 6, 10 and 13): styled tables with unique
headers, results rendered for readers (never a Python repr), readable plan descriptions, and explorers that
fold their advanced controls, keep the GPU count, and agree with the chapters' figures."""

from __future__ import annotations

import dataclasses
import re

import pytest

from atscale import experts, memory, models, parallelism, widgets
from atscale.plan import Plan
from atscale.scenario import RUNNING_EXAMPLE as EX
from atscale.tables import Table

_REPR = re.compile(r"\b[A-Z][A-Za-z0-9]+\(")


def test_table_html_scrolls_sideways_and_right_aligns_numbers():
    t = Table(("Model", "Total, counted", "Total, published"), (("Llama 3 70B", "70.55B", "70.6B"),
                                                                ("GPT-3 175B", "174.59B", "175B")))
    html = t._repr_html_()
    assert html.startswith('<div class="atscale-table-wrap" style="overflow-x:auto')
    assert html.count('class="num"') == 2 * 3  # two numeric columns: header and rows right-aligned
    assert "<td>Llama 3 70B</td>" in html  # text stays left
    assert t.numeric_columns() == (False, True, True)


def test_table_headers_are_unique():
    with pytest.raises(ValueError, match="unique"):
        Table(("Model", "Published", "Active", "Published"), (("a", "1", "2", "3"),))


def test_a_long_table_can_fold():
    t = Table(("a",), (("1",),) * 40, fold="Forty rows")
    html = t._repr_html_()
    assert html.startswith('<details class="atscale-fold"><summary>Forty rows</summary>') and "overflow-y:auto" in html


@pytest.mark.parametrize("result", [
    lambda: experts.moe_summary(models.DEEPSEEK_V3),
    lambda: experts.deepseek_v3_estimate(),
    lambda: memory.model_state_bytes(models.LLAMA3_70B),
    lambda: parallelism.stage_layers(126, 16, account_for_embedding=True, account_for_loss=True),
], ids=["MoeSummary", "DeepSeekEstimate", "ModelState", "StageLayers"])
def test_results_a_reader_sees_are_not_python_reprs(result):
    r = result()
    assert not _REPR.search(str(r)), str(r)  # what print() shows
    assert not _REPR.search(r._repr_html_()), r._repr_html_()  # what a notebook or the book shows


def test_parts_table_instead_of_a_dict():
    st = parallelism.step_time(EX.model, EX.cluster, EX.plan, seq_length=EX.seq_length)
    t = Table.of_times(st.parts(), parallelism.PART_LABELS)
    assert t.rows[0][0] == "compute" and t.rows[-1][0] == "total" and "{" not in str(t)


def test_plan_descriptions_read_as_prose():
    text = str(dataclasses.replace(EX.plan, expert_tp=1))
    assert "1F1B" in text and "1f1b" not in text
    assert "expert" not in text  # a dense model's plan says nothing of experts
    moe = Plan(tp=1, pp=16, dp=128, ep=64, expert_tp=1, schedule="dualpipe", global_batch=15360)
    assert "DualPipe" in str(moe)


def test_plan_explorer_keeps_the_gpu_count_and_folds_advanced_controls():
    import ipywidgets as W

    e = widgets.plan_explorer()
    main, more = e.ui.children[0], e.ui.children[1]
    assert isinstance(more, W.Accordion) and more.selected_index is None  # closed
    assert len(main.children) <= 7 and e.ui.children.index(e.image) <= 4  # the figure near the top
    for tp in (1, 2, 4, 16, 8):
        e.update(tp=tp)
        v = e.values
        assert v["tp"] * v["cp"] * v["pp"] * v["dp"] == EX.cluster.num_gpus, v
    e.update(pp=8)
    assert e.values["dp"] * e.values["tp"] * e.values["pp"] == EX.cluster.num_gpus
    e.update(follows="pp")
    e.update(dp=64)
    assert e.values["tp"] * e.values["pp"] * e.values["dp"] == EX.cluster.num_gpus
    e.update(follows="none")
    e.update(tp=4)
    assert e.error is None and e.summary_text.startswith("Infeasible")  # nothing follows: the reader sees why


def test_explorer_labels_are_whole_and_spelled_as_in_the_book():
    import ipywidgets as W

    for factory in (widgets.plan_explorer, widgets.pipeline_explorer):
        e = factory()
        for control in e.controls.values():
            if isinstance(control, W.Dropdown):
                labels = [str(o[0] if isinstance(o, tuple) else o) for o in control.options]
                assert not any(label.endswith("(W =") or label.count("(") != label.count(")") for label in labels)
                assert "1f1b" not in labels and "gpipe" not in labels


def test_moe_explorer_default_matches_the_chapters_estimate():
    e = widgets.moe_explorer()
    est = experts.deepseek_v3_estimate(plan=dataclasses.replace(experts.DEEPSEEK_V3_PLAN, recompute="full", recompute_modules=None))
    assert f"{est.gpu_hours_per_trillion / 1e3:,.0f}K GPU-hours" in e.summary_text
    assert f"MFU {est.step.mfu:.1%}" in e.summary_text


def test_an_explorer_can_leave_its_duplicate_snapshot_out_of_the_page():
    e = widgets.rank_map_explorer(snapshot=False)
    html = e._repr_mimebundle_()["text/html"]
    assert "<img" not in html and "Explorer" in html
    assert "<img" in widgets.rank_map_explorer()._repr_mimebundle_()["text/html"]


def test_table_html_keeps_a_number_with_its_unit():
    """In a numeric column a number and its first unit word never part (a narrow page wraps the rest)."""
    t = Table(("Run", "Error"), (("A", "+1.2 MFU points"), ("B", "-3.4 %")))
    html = t._repr_html_()
    assert "+1.2&nbsp;MFU points</td>" in html and "-3.4&nbsp;%</td>" in html
    assert "<th" in html and "&nbsp;" not in html.split("<tbody>")[0]  # headers wrap freely
    assert str(t).count("\u00a0") == 0  # the text view is unchanged
