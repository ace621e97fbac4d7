"""Where the solutions are in a chapter notebook (shared by tools/execute-notebooks and
tools/student-edition).

A solution runs from a Markdown cell containing a ``{solution-start}`` directive to the one
containing its ``{solution-end}`` (sphinx-exercise's gated solutions); the cells between, text
and code, belong to it.
"""

from __future__ import annotations

import re

START = re.compile(r"^```\{solution-start\}.*?^```[ \t]*$", re.M | re.S)
END = re.compile(r"^```\{solution-end\}[ \t]*\n```[ \t]*$", re.M)


def solution_cells(cells) -> list[bool]:
    """For each cell, whether it belongs to a solution: the cells between a start and its end,
    and the start (end) cell itself when nothing but the solution comes before (after) the marker."""
    mask, inside = [], False
    for cell in cells:
        start = START.search(cell.source) if cell.cell_type == "markdown" else None
        end = END.search(cell.source) if cell.cell_type == "markdown" else None
        if start:
            mask.append(not cell.source[:start.start()].strip())
            inside = True
        elif end:
            mask.append(not cell.source[end.end():].strip())
            inside = False
        else:
            mask.append(inside)
    return mask
