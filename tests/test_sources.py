"""Each chapter's text source (book/NAME.md) and its executed notebook (book/NAME.ipynb) agree.

People edit and review the MyST Markdown source; ``tools/execute-notebooks`` generates the
notebook from it and stores the outputs that nbval compares, the book publishes and Binder and
Colab open. A cell edited in one and not in the other would publish (or test) something nobody
reviewed, so every cell's type, source and tags must match, in order.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from solutions import solution_cells  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def text_sources(folder: Path = BOOK) -> list[Path]:
    """Chapter sources: MyST Markdown notebooks (a jupytext header) in book/."""
    return sorted(p for p in folder.glob("*.md") if "jupytext:" in p.read_text(encoding="utf-8")[:400])


def _cell_key(cell) -> tuple[str, str, tuple[str, ...]]:
    return cell.cell_type, cell.source.strip(), tuple(cell.metadata.get("tags", ()))


def differences(source: Path) -> list[str]:
    """What differs between a text source and its notebook, one line per cell, naming both."""
    target = source.with_suffix(".ipynb")
    chapter = source.stem
    if not target.exists():
        return [f"{chapter}: {target.name} is missing (run: python tools/execute-notebooks {source.name})"]
    text = jupytext.read(source, fmt="md:myst").cells
    notebook = nbformat.read(target, as_version=4).cells
    problems = []
    for i, (a, b) in enumerate(zip(text, notebook), start=1):
        if _cell_key(a) != _cell_key(b):
            first = (a.source.strip().splitlines() or [""])[0][:70]
            what = [name for name, x, y in zip(("type", "source", "tags"), _cell_key(a), _cell_key(b)) if x != y]
            problems.append(f"{chapter}: cell {i} ({', '.join(what)} differ) starting {first!r}")
    if len(text) != len(notebook):
        problems.append(f"{chapter}: {len(text)} cells in {source.name}, {len(notebook)} in {target.name}")
    return problems


SOURCES = text_sources()


def test_every_notebook_has_a_text_source():
    notebooks = {p.stem for p in BOOK.glob("*.ipynb")}
    assert notebooks == {p.stem for p in SOURCES}, "each book/*.ipynb needs its book/*.md source and vice versa"
    assert {"intro", "roofline", "memory", "reliability", "hardware-catalog"} <= notebooks


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_text_source_and_notebook_agree(source):
    problems = differences(source)
    assert not problems, ("text source and notebook disagree; after editing the .md run "
                          f"`python tools/execute-notebooks book/{source.name}`:\n  " + "\n  ".join(problems))


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_stored_notebook_is_lean(source):
    """No widget state, no widget views, no error, no figure shown twice in a stored notebook;
    solutions collapsed in Jupyter."""
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    assert "widgets" not in nb.metadata, f"{source.stem}: widget state stored"
    assert "jupytext" not in nb.metadata, f"{source.stem}: paired by jupytext's formats (see CONTRIBUTING)"
    in_solution = solution_cells(nb.cells)
    for i, cell in enumerate(nb.cells, start=1):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            assert WIDGET_VIEW not in data, f"{source.stem}: cell {i} stores a widget view"
            assert out.get("output_type") != "error", f"{source.stem}: cell {i} stored an error"
        if cell.cell_type == "code" and in_solution[i - 1]:
            assert cell.metadata.get("jupyter") == {"source_hidden": True, "outputs_hidden": True}, (
                f"{source.stem}: cell {i} belongs to a solution but is not collapsed in Jupyter")
        glued = [o for o in cell.get("outputs", []) if "scrapbook" in o.get("metadata", {})]
        shown = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if glued and shown:
            pytest.fail(f"{source.stem}: cell {i} glues a figure and also shows one (stored twice)")


def test_a_desynced_copy_is_caught(tmp_path):
    """Edit one cell of the text only, then one of the notebook only: both are reported by name."""
    source = BOOK / "reliability.md"
    shutil.copy(source, tmp_path / source.name)
    shutil.copy(source.with_suffix(".ipynb"), tmp_path / "reliability.ipynb")
    copy = tmp_path / source.name
    assert differences(copy) == []

    nb = jupytext.read(copy, fmt="md:myst")
    index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and i > 2)
    nb.cells[index].source += "\nA sentence added to the text only."
    jupytext.write(nb, copy, fmt="md:myst")
    problems = differences(copy)
    assert len(problems) == 1 and problems[0].startswith(f"reliability: cell {index + 1} (source differ)")

    shutil.copy(source, copy)
    raw = json.loads((tmp_path / "reliability.ipynb").read_text(encoding="utf-8"))
    code = next(i for i, c in enumerate(raw["cells"]) if c["cell_type"] == "code" and i > 2)
    raw["cells"][code]["metadata"]["tags"] = ["a-tag-added-to-the-notebook-only"]
    (tmp_path / "reliability.ipynb").write_text(json.dumps(raw), encoding="utf-8")
    problems = differences(copy)
    assert len(problems) == 1 and problems[0].startswith(f"reliability: cell {code + 1} (tags differ)")


COLAB_INSTALL = 'if importlib.util.find_spec("atscale") is None:\n    %pip install --quiet "atscale[notebooks] @ git+'


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_each_chapter_installs_the_library_when_opened_alone(source):
    """Colab opens one notebook without the repository: its first code cell installs atscale
    when it is missing, and is hidden in the book."""
    first = next(c for c in jupytext.read(source, fmt="md:myst").cells if c.cell_type == "code")
    assert COLAB_INSTALL in first.source, f"{source.stem}: the first code cell must install atscale if missing"
    assert "remove-cell" in first.metadata.get("tags", ()), f"{source.stem}: the install cell must be hidden"
