"""Write a notebook from a compact list of cells (an authoring aid for chapter scripts).

    from tools.nbgen import md, code, write
    write("book/x.ipynb", [md("# Title"), code("x = 1", tags=["remove-cell"])])

Then store outputs with ``python tools/execute-notebooks book/x.ipynb``.
"""

from __future__ import annotations

import textwrap

import nbformat


def md(text: str, tags=()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(textwrap.dedent(text).strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def code(text: str, tags=()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(textwrap.dedent(text).strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


COLAB_CELL = '''# Colab opens this notebook without the repository: install the library first.
import importlib.util
if importlib.util.find_spec("atscale") is None:
    %pip install --quiet "atscale[notebooks] @ git+https://github.com/training-at-scale/book"'''


def colab() -> nbformat.NotebookNode:
    """The standard first cell (hidden in the HTML)."""
    return code(COLAB_CELL, tags=["remove-cell"])


def write(path: str, cells) -> None:
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:03d}"
    nbformat.write(nb, path)
