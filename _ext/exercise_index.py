"""The Exercises appendix's table: every exercise in book order, numbered as the book numbers it and
linked to it, with the id its ``check`` line uses, the unit of its answer and how close counts.

``{exercise-index}`` (a directive with no content) is replaced by that table. It is built from the
chapters' text sources in ``_toc.yml`` order (``book/NAME.md``: each ``{exercise-start}`` with its
label, and the ``check("id", ...)`` lines of its text) and from ``atscale.check.exercise_table()``
(unit and tolerance of each id). In the HTML and PDF the exercise and chapter cells are
cross-references (``{numref}``, ``{doc}``), so Sphinx numbers and links them; the Jupyter edition
(``tools/jupyter-edition``) writes the same table with the book's numbers and links to the
chapters' notebooks. An id of the answer keys that no exercise asks for is an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import yaml

EXERCISE = re.compile(r"^```\{exercise-start\}[^\n]*\n(?P<body>.*?)^```\{exercise-end\}", re.M | re.S)
LABEL = re.compile(r"^:label:\s*(\S+)", re.M)
CHECK = re.compile(r'check\(\s*"([\w.-]+)"')


def toc_documents(root: Path) -> list[str]:
    """The book's documents in ``_toc.yml`` order (root first), e.g. ``book/roofline``."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    docs = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                docs.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key) or [])
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(toc)
    return [re.sub(r"\.(md|ipynb)$", "", d) for d in dict.fromkeys(docs)]


def exercises(root: Path) -> list[tuple[str, str, list[str]]]:
    """(document, label, check ids) of every exercise, in book order."""
    found = []
    for doc in toc_documents(root):
        source = root / f"{doc}.md"
        if not source.is_file():
            continue
        for match in EXERCISE.finditer(source.read_text(encoding="utf-8")):
            label = LABEL.search(match["body"])
            found.append((doc, label.group(1) if label else "", list(dict.fromkeys(CHECK.findall(match["body"])))))
    return found


def answer_details() -> dict[str, tuple[str, str]]:
    """Each answer id -> (the unit its answer is given in, how close counts as right)."""
    from atscale.check import exercise_table

    table = exercise_table()
    column = {name: i for i, name in enumerate(table.headers)}
    ident = column.get("Exercise id", 1)
    unit = next((i for name, i in column.items() if name.startswith("Answer in")), 2)
    within = next((i for name, i in column.items() if name.startswith("Counted right")), 3)
    return {row[ident]: (row[unit], row[within]) for row in table.rows}


def markdown_table(root: Path, exercise: Callable[[str, str], str], chapter: Callable[[str], str]) -> str:
    """The table as Markdown; ``exercise(doc, label)`` and ``chapter(doc)`` write those two cells."""
    details = answer_details()
    lines = ["| Exercise | Chapter | Check with | Answer in | Counted right within |",
             "|---|---|---|---|---|"]
    asked = set()
    for doc, label, ids in exercises(root):
        for i, ident in enumerate(ids or [""]):
            unit, within = details.get(ident, ("", ""))
            first = i == 0
            lines.append("| " + " | ".join([
                exercise(doc, label) if first else "",
                chapter(doc) if first else "",
                f"`{ident}`" if ident else "(read from a figure; no check)",
                unit.replace("|", "\\|"),
                within.replace("|", "\\|"),
            ]) + " |")
            asked.add(ident)
    missing = sorted(set(details) - asked)
    if missing:
        raise ValueError(f"answer ids that no exercise's text asks for: {missing}")
    return "\n".join(lines)


def setup(app):
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class ExerciseIndex(SphinxDirective):
        has_content = False

        def run(self):
            root = Path(self.env.srcdir)
            for doc, _, _ in exercises(root):
                self.env.note_dependency(str(root / f"{doc}.md"))
            here = Path(self.env.docname).parent
            text = markdown_table(
                root,
                exercise=lambda doc, label: f"{{numref}}`{label}`",
                chapter=lambda doc: f"{{doc}}`{Path(doc).relative_to(here).as_posix()}`")
            container = nodes.container(classes=["atscale-exercise-index"])
            self.state.nested_parse(StringList(text.splitlines(), source=self.env.docname), self.content_offset, container)
            return [container]

    app.add_directive("exercise-index", ExerciseIndex)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
