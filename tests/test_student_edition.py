"""The student edition: the Jupyter edition without its solutions, still executable, still checkable.

It is built from the Jupyter edition (jupyter/NAME.ipynb), where the book's MyST is already resolved,
so a student reads the numbers, citations and exercise numbers of the book, never raw roles; what the
book hides stays folded. A chapter of it is also read in a real JupyterLab (tests/test_binder.py).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))
PRIVATE_CALL = re.compile(r"\b\w+\._[a-z]\w*\(")
"""A call of a private name (``coll._rail(``): never in a cell a student sees."""


def _load(name: str, path: str):
    loader = importlib.machinery.SourceFileLoader(name, str(ROOT / path))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


TOOL = _load("student_edition", "tools/student-edition")
EDITION_TOOL = _load("jupyter_edition", "tools/jupyter-edition")


@pytest.fixture(scope="module")
def book_numbers() -> dict[str, str]:
    return EDITION_TOOL.book_numbers()


def _student(chapter: str) -> nbformat.NotebookNode:
    return TOOL.without_solutions(nbformat.read(ROOT / "jupyter" / f"{chapter}.ipynb", as_version=4))


def test_solution_cells_are_removed_and_the_rest_kept():
    tagged = {"tags": [TOOL.SOLUTION_TAG]}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("#### Exercise 7\n\nAsk. `check(\"x\", v)`"),
        nbformat.v4.new_markdown_cell("#### Solution to Exercise 7",
                                      metadata={**tagged, "jp-MarkdownHeadingCollapsed": True}),
        nbformat.v4.new_markdown_cell("The answer is 42.", metadata=tagged),
        nbformat.v4.new_code_cell("check('x', 42)", metadata=tagged,
                                  outputs=[nbformat.v4.new_output("stream", text="✓ Correct")]),
        nbformat.v4.new_code_cell("y = 1", outputs=[nbformat.v4.new_output("stream", text="1")]),
    ])
    out = TOOL.without_solutions(nb)
    assert [c.source for c in out.cells] == [nb.cells[0].source, "y = 1"]
    assert out.cells[1].outputs == [] and out.cells[1].execution_count is None


def test_an_untagged_solution_is_an_error():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("#### Solution to Exercise 1")])
    with pytest.raises(ValueError, match="solution heading"):
        TOOL.without_solutions(nb)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_student_edition_reads_as_the_book_without_solutions(chapter, book_numbers):
    """Built from the Jupyter edition: no MyST role or directive, no unresolved citation ("⚠"), no
    solution, the book's exercise numbers, every exercise's check() line, and no visible cell that
    calls a private name."""
    nb = _student(chapter)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert not re.search(r"\{(glue|cite|numref|ref|doc|exercise|solution)[:}]", markdown), f"{chapter}: a MyST role is left"
    assert "⚠" not in markdown, f"{chapter}: an unresolved reference"
    assert "Solution to" not in markdown and not any(TOOL.SOLUTION_TAG in c.metadata.get("tags", []) for c in nb.cells)
    source = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    labels = re.findall(r"^```\{exercise-start\}[^\n]*\n:label:\s*(\S+)", source, re.M)
    assert re.findall(r"^#### (Exercise \d+)", markdown, re.M) == [book_numbers[label] for label in labels], \
        f"{chapter}: exercise numbers differ from the book's"
    exercises = re.findall(r"^```\{exercise-start\}.*?^```\{exercise-end\}", source, re.M | re.S)
    asked = {key for text in exercises for key in re.findall(r'check\("([\w.-]+)"', text)}
    assert asked <= set(re.findall(r'check\("([\w.-]+)"', markdown)), f"{chapter}: a check() line is missing"
    visible = [c.source for c in nb.cells
               if c.cell_type == "code" and not c.metadata.get("jupyter", {}).get("source_hidden")]
    private = [m for text in visible for m in PRIVATE_CALL.findall(text)]
    assert not private, f"{chapter}: a visible cell calls private names {private}"


def test_the_private_call_scan_can_fail():
    assert PRIVATE_CALL.findall("up, rail = coll._scale_up(node), coll._rail(cluster)") == \
        ["coll._scale_up(", "coll._rail("]
    assert not PRIVATE_CALL.findall("x = collectives.ring_time(n)  # __init__(")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_student_edition_executes(chapter, tmp_path):
    nb = _student(chapter)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
