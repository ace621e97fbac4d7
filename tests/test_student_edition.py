"""The student edition: the chapters without their solutions, still executable, still checkable."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


def _tool():
    loader = importlib.machinery.SourceFileLoader("student_edition", str(ROOT / "tools" / "student-edition"))
    spec = importlib.util.spec_from_loader("student_edition", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


TOOL = _tool()


def test_solutions_are_removed_and_prose_around_them_kept():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("```{exercise-start}\n:label: ex-a\n```\nAsk. `check(\"x\", v)`\n"
                                      "```{exercise-end}\n```"),
        nbformat.v4.new_markdown_cell("Before.\n\n```{solution-start} ex-a\n:class: dropdown\n```\nThe answer is 42."),
        nbformat.v4.new_code_cell("check('x', 42)"),
        nbformat.v4.new_markdown_cell("```{solution-end}\n```\n\nAfter."),
        nbformat.v4.new_code_cell("y = 1"),
    ])
    out = TOOL.without_solutions(nb)
    text = [c.source for c in out.cells]
    assert text == [nb.cells[0].source, "Before.", "After.", "y = 1"]


def test_an_unclosed_solution_is_an_error():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("```{solution-start} ex-a\n```\nx")])
    with pytest.raises(ValueError, match="no \\{solution-end\\}"):
        TOOL.without_solutions(nb)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_executes_without_solutions(path):
    full = nbformat.read(path, as_version=4)
    nb = TOOL.without_solutions(full)
    text = "\n".join(c.source for c in nb.cells)
    assert "solution-start" not in text and "solution-end" not in text
    exercises = sum("{exercise-start}" in c.source for c in full.cells if c.cell_type == "markdown")
    assert sum("{exercise-start}" in c.source for c in nb.cells) == exercises
    assert text.count("check(") >= exercises  # every exercise still tells the student how to check
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "book")}}).execute()
