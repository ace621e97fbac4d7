"""A minimal table for notebooks: HTML in the book, aligned text in a terminal.

Used to print catalog entries and sweeps without depending on pandas. Cells are
strings already formatted by the caller (see :mod:`atscale.units`), so what the
book shows is exactly what the code decided, and nbval compares it verbatim.

The HTML is styled for readers: the table sits in a wrapper that scrolls sideways on a narrow screen
(a phone) instead of cutting the last columns off; numeric columns are right-aligned; padding and rules
come from the book's ``_static/atscale-tables.css`` (and, so that a notebook outside the book reads the
same, a few inline styles on the wrapper and the numeric cells). A long table can be folded
(``fold=...``: a ``<details>`` element with a summary line, closed, with a scrollable body).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

_NUMERIC = re.compile(r"^[\s~≈<>≤≥±+\-−–]*[$€]?\d[\d,.\s]*(?:[eE×x][\-−+]?\d+)?\s*%?\s*"
                      r"(?:[a-zA-Zµμ/°·×³²⁰-⁹\-−]+\s*)*(?:\(.*\))?$")
"""A cell that reads as a number (with an optional sign, unit or parenthesised note): "140.62B", "−4.5%",
"8.28 s", "1,024", "±3 points", "300 (NVLink 3)"."""

__all__ = [
    "Table",
]


@dataclass(frozen=True)
class Table:
    """Rows of pre-formatted cells under a header row."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    fold: str = ""
    """If given, the table is folded under this summary line (closed until the reader opens it)."""

    def __post_init__(self):
        object.__setattr__(self, "headers", tuple(str(h) for h in self.headers))
        object.__setattr__(self, "rows", tuple(tuple(str(c) for c in r) for r in self.rows))
        for i, row in enumerate(self.rows):
            if len(row) != len(self.headers):
                raise ValueError(f"row {i} has {len(row)} cells; the header has {len(self.headers)}")
        repeated = sorted({h for h in self.headers if h and self.headers.count(h) > 1})
        if repeated:
            raise ValueError(f"headers must be unique (a reader cannot tell the columns apart): {repeated} repeated")

    def numeric_columns(self) -> tuple[bool, ...]:
        """Whether each column holds numbers (every non-empty, non-dash cell reads as one): right-aligned."""
        out = []
        for j in range(len(self.headers)):
            cells = [r[j].strip() for r in self.rows if r[j].strip() not in ("", "—", "-", "–", "n/a")]
            out.append(bool(cells) and all(_NUMERIC.match(c) for c in cells))
        return tuple(out)

    def __str__(self) -> str:
        widths = [max(len(x) for x in col) for col in zip(self.headers, *self.rows)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        out = [self.caption] if self.caption else []
        out += [line(self.headers), line(["-" * w for w in widths])] + [line(r) for r in self.rows]
        return "\n".join(out)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        numeric = self.numeric_columns()

        def cell(tag: str, text: str, num: bool) -> str:
            attrs = ' class="num" style="text-align:right"' if num else ""
            text = html.escape(text)
            if num and tag == "td":  # a number keeps its first unit word ("+1.2 MFU points" breaks after "MFU")
                text = text.replace(" ", "&nbsp;", 1)
            return f"<{tag}{attrs}>{text}</{tag}>"

        head = "".join(cell("th", h, n) for h, n in zip(self.headers, numeric))
        body = "".join("<tr>" + "".join(cell("td", c, n) for c, n in zip(r, numeric)) + "</tr>" for r in self.rows)
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        table = (f'<div class="atscale-table-wrap" style="overflow-x:auto;max-width:100%">'
                 f'<table class="atscale-table">{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
                 "</table></div>")
        if self.fold:
            return (f'<details class="atscale-fold"><summary>{html.escape(self.fold)}</summary>'
                    f'<div class="atscale-fold-body" style="max-height:32em;overflow-y:auto">{table}</div></details>')
        return table

    @classmethod
    def of_times(cls, parts, labels=None, *, header: str = "Part of the step") -> Table:
        """A ``{name: seconds}`` mapping (e.g. :meth:`atscale.parallelism.StepTime.parts`) as a table of the
        parts, their times and their shares of the total; ``labels`` maps a name to the words shown."""
        from .units import fmt_time

        parts = {str(k): float(v) for k, v in dict(parts).items()}
        total = sum(parts.values())
        labels = dict(labels or {})
        rows = [(labels.get(k, k), fmt_time(v), f"{v / total:.1%}" if total else "—") for k, v in parts.items()]
        rows.append(("total", fmt_time(total), "100.0%" if total else "—"))
        return cls((header, "Time", "Share"), tuple(rows))


_REPR_BODY = re.compile(r"^\w+\((.*)\)$", re.S)


def readable(title: str, text=None):
    """Class decorator for a result a reader sees: ``str()`` (what ``print`` shows) is ``text(obj)``, by default
    the body of its ``repr`` without the class name ("DeepSeek-V3: 671.0B total, ..." for
    "MoeSummary(DeepSeek-V3: 671.0B total, ...)"), and a notebook shows ``title: text`` as HTML
    (``_repr_html_``), never a Python repr. ``repr()`` stays the developer's view."""

    def body(obj) -> str:
        if text is not None:
            return text(obj)
        match = _REPR_BODY.match(repr(obj))
        return match.group(1) if match else repr(obj)

    def decorate(cls):
        def __str__(self) -> str:
            return body(self)

        def _repr_html_(self) -> str:
            return (f'<p class="atscale-result"><strong>{html.escape(title)}</strong>: '
                    f"{html.escape(body(self))}</p>")

        cls.__str__ = __str__
        cls._repr_html_ = _repr_html_
        return cls

    return decorate
