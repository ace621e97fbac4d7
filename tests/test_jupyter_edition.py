"""The Jupyter edition (jupyter/NAME.ipynb): what a reader gets from the Binder and Colab buttons.

1. It is up to date: ``tools/jupyter-edition`` run now writes exactly the committed files (like
   tests/test_sources.py for book/*.ipynb), so a chapter edited and re-executed without
   regenerating its edition fails here, naming the chapter.
2. Its Markdown holds no MyST that plain Jupyter would show as text (roles, directive fences,
   targets, escaped LaTeX); the converter refuses what it cannot render.
3. As Colab runs it: the hidden first cell installs the library from ``repository.url`` of
   ``_config.yml`` only where ``atscale`` is missing (checked without a network, by running that
   cell's code with ``%pip`` recorded), and a chapter then runs top to bottom in a fresh kernel in a
   folder holding nothing but that notebook. One chapter by default, all in ``pytest -m slow``.

What the edition shows is compared with the built HTML in tests/test_book.py, and the rendered
page is scanned for raw MyST in a real JupyterLab in tests/test_binder.py.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import shutil
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
EDITION = ROOT / "jupyter"
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))


def _tool():
    loader = importlib.machinery.SourceFileLoader("jupyter_edition", str(ROOT / "tools" / "jupyter-edition"))
    spec = importlib.util.spec_from_loader("jupyter_edition", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


TOOL = _tool()
RAW_TEXT = re.compile(r"\\\$\\\\[a-zA-Z]+")
"""A formula that reaches the Markdown as escaped text (``\\$\\\\frac...``): it would show as LaTeX."""


@pytest.fixture(scope="module")
def edition():
    return TOOL.edition()


def test_every_chapter_has_a_jupyter_edition(edition):
    assert sorted(Path(n).stem for n in edition) == CHAPTERS
    assert sorted(p.stem for p in EDITION.glob("*.ipynb")) == CHAPTERS, \
        "jupyter/ must hold exactly one notebook per chapter (run: python tools/jupyter-edition)"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_edition_is_up_to_date(edition, chapter):
    committed = (EDITION / f"{chapter}.ipynb").read_text(encoding="utf-8")
    assert committed == nbformat.writes(edition[f"{chapter}.ipynb"]) + "\n", (
        f"jupyter/{chapter}.ipynb is out of date with book/{chapter}.ipynb or _config.yml; "
        "run: python tools/jupyter-edition")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_edition_markdown_is_plain(edition, chapter):
    nb = edition[f"{chapter}.ipynb"]
    book = nbformat.read(ROOT / "book" / f"{chapter}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            assert not TOOL.RAW_MYST.search(cell.source), f"{chapter}: MyST left: {cell.source[:200]!r}"
            assert not RAW_TEXT.search(cell.source), f"{chapter}: LaTeX as text: {cell.source[:200]!r}"
    # Code stays live: every code cell of the book, in order, with its source.
    assert [c.source for c in nb.cells if c.cell_type == "code"] == \
           [c.source if i else TOOL.INSTALL.sub(f"git+{TOOL.install_url()}", c.source)
            for i, c in enumerate(c for c in book.cells if c.cell_type == "code")]
    # Glued figures are in the text, with the HTML's numbers; each solution a collapsed section.
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    figures = sum(c.source.count("{glue:figure}") for c in book.cells if c.cell_type == "markdown")
    assert text.count("](data:image/png;base64,") == figures
    solutions = sum(c.source.count("{solution-start}") for c in book.cells if c.cell_type == "markdown")
    headings = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("#### Solution to Exercise ")]
    assert len(headings) == solutions
    assert all(c.metadata.get(TOOL.HEADING_COLLAPSED) is True for c in headings)
    # Inside a solution no cell is folded on its own (Run All would unfold it) and every cell is tagged.
    in_solution = False
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("#"):
            in_solution = cell in headings
        if in_solution:
            assert TOOL.SOLUTION_TAG in cell.metadata.get("tags", []) or "remove-cell" in cell.metadata.get("tags", [])
            assert "jupyter" not in cell.metadata or "remove-cell" in cell.metadata.get("tags", [])
    assert len({c.id for c in nb.cells}) == len(nb.cells)
    # Opened in JupyterLab, the notebook is not marked modified: the kernel is named as JupyterLab names it.
    assert nb.metadata["kernelspec"] == TOOL.KERNELSPEC


def _chapter(cells) -> object:
    nb = nbformat.v4.new_notebook(cells=cells)
    return TOOL.Chapter("test", nb, numbers={"fig-a": "Fig. 3", "ex-a": "Exercise 7"},
                        references=TOOL.References(), titles={"memory": ("The memory wall", "memory.ipynb")})


def test_conversion_of_each_construct():
    glue = nbformat.v4.new_code_cell("glue(...)", outputs=[nbformat.v4.new_output(
        "display_data", data={"application/papermill.record/text/plain": "0.2345"},
        metadata={"scrapbook": {"name": "share", "mime_prefix": "application/papermill.record/"}})])
    cells = [glue,
             nbformat.v4.new_markdown_cell(
                 "A {glue:text}`share:.1%` share {cite:p}`narayanan2021efficient`, {numref}`fig-a`, "
                 "{doc}`memory`.\n\n:::{admonition} Note\n:class: tip\nSee {numref}`ex-a`.\n:::"),
             nbformat.v4.new_markdown_cell("```{exercise-start}\n:label: ex-a\n```\nAsk.\n```{exercise-end}\n```"),
             nbformat.v4.new_markdown_cell("```{solution-start} ex-a\n:class: dropdown\n```\nThe answer."),
             nbformat.v4.new_code_cell("check('x', 42)"),
             nbformat.v4.new_markdown_cell("```{solution-end}\n```\n\n#### Key takeaways\n\n```{bibliography}\n```")]
    nb = _chapter(cells).convert()
    text = [c.source for c in nb.cells]
    assert text[1] == ("A 23.4% share (Narayanan *et al.*, 2021), Fig. 3, [The memory wall](memory.ipynb).\n\n"
                       "> **Note**\n>\n> See Exercise 7.")
    assert text[2] == "#### Exercise 7\n\nAsk."
    assert text[3:6] == ["#### Solution to Exercise 7", "The answer.", "check('x', 42)"]
    assert nb.cells[3].metadata == {"tags": ["solution"], "jp-MarkdownHeadingCollapsed": True}
    assert [nb.cells[i].metadata for i in (4, 5)] == [{"tags": ["solution"]}] * 2
    assert text[6].startswith("#### Key takeaways\n\n- **Narayanan *et al.*, 2021.** Deepak Narayanan")
    assert "jupyter" not in nb.cells[6].metadata
    assert nb.cells[0].outputs == []  # the invisible glue output is dropped, the code kept


@pytest.mark.parametrize("markdown, message", [
    ("{glue:text}`missing`", "glued key 'missing' has no stored value"),
    ("{cite:p}`nobody1999`", "citation key 'nobody1999' is not in book/references.bib"),
    ("{numref}`fig-nowhere`", "unknown label 'fig-nowhere'"),
    ("{term}`roofline`", "MyST role {term} has no Jupyter rendering"),
    ("```{figure} a.png\n```", "MyST directive {figure} has no Jupyter rendering"),
    ("```{solution-start} ex-a\n```\nno end", "no \\{solution-end\\}"),
    ("```{solution-start} ex-a\n```\nx\n```{solution-end}\n```\nProse that would be folded with it.",
     "after a solution must start with a heading"),
])
def test_what_cannot_be_rendered_is_an_error(markdown, message):
    with pytest.raises(ValueError, match=message):
        _chapter([nbformat.v4.new_markdown_cell(markdown)]).convert()


# --------------------------------------------------------------------------- as Colab runs it


def _install_calls(source: str, atscale_importable: bool) -> list[str]:
    """Run the first cell's code as IPython would, with ``%pip`` recorded instead of run."""
    from IPython.core.inputtransformer2 import TransformerManager

    calls: list[str] = []

    class Shell:
        def run_line_magic(self, name, line):
            calls.append(f"%{name} {line}")

    import importlib.util as util
    real = util.find_spec
    util.find_spec = lambda name, *a: (real(name, *a) if atscale_importable or name != "atscale" else None)
    try:
        exec(TransformerManager().transform_cell(source), {"get_ipython": lambda: Shell()})
    finally:
        util.find_spec = real
    return calls


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_install_cell_installs_only_where_the_library_is_missing(chapter):
    nb = nbformat.read(EDITION / f"{chapter}.ipynb", as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.metadata.get("jupyter", {}).get("source_hidden") and "remove-cell" in first.metadata["tags"]
    url = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"].rstrip("/")
    assert _install_calls(first.source, atscale_importable=True) == []
    calls = _install_calls(first.source, atscale_importable=False)
    assert len(calls) == 1 and f'"atscale[notebooks] @ git+{url}"' in calls[0], calls


def _run_as_colab(chapter: str, tmp_path: Path) -> None:
    """Execute the chapter's edition alone in a folder (Colab has no repository) in a fresh kernel."""
    shutil.copy(EDITION / f"{chapter}.ipynb", tmp_path / f"{chapter}.ipynb")
    nb = nbformat.read(tmp_path / f"{chapter}.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert not first.outputs, f"{chapter}: the install cell did something although atscale is installed"
    stored = nbformat.read(EDITION / f"{chapter}.ipynb", as_version=4)

    def verdicts(notebook):
        return [str(o.get("data", {}).get("text/plain", "")).split(":")[0]
                for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
                if "atscale-feedback" in str(o.get("data", {}).get("text/html", ""))]

    assert verdicts(nb) == verdicts(stored), f"{chapter}: check() verdicts differ from the book's"


def test_a_chapter_of_the_edition_runs_top_to_bottom_as_in_colab(tmp_path):
    _run_as_colab("roofline", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_of_the_edition_runs_as_in_colab(chapter, tmp_path):
    _run_as_colab(chapter, tmp_path)
