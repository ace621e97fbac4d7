"""A minimal table for notebooks: HTML in the book, aligned text in a terminal.

Used to print catalog entries and sweeps without depending on pandas. Cells are
strings already formatted by the caller (see :mod:`atscale.units`), so what the
book shows is exactly what the code decided, and nbval compares it verbatim.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

__all__ = [
    "Table",
]


@dataclass(frozen=True)
class Table:
    """Rows of pre-formatted cells under a header row."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    def __post_init__(self):
        object.__setattr__(self, "headers", tuple(str(h) for h in self.headers))
        object.__setattr__(self, "rows", tuple(tuple(str(c) for c in r) for r in self.rows))
        for i, row in enumerate(self.rows):
            if len(row) != len(self.headers):
                raise ValueError(f"row {i} has {len(row)} cells; the header has {len(self.headers)}")

    def __str__(self) -> str:
        widths = [max(len(x) for x in col) for col in zip(self.headers, *self.rows)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        out = [self.caption] if self.caption else []
        out += [line(self.headers), line(["-" * w for w in widths])] + [line(r) for r in self.rows]
        return "\n".join(out)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return f'<table class="atscale-table">{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
