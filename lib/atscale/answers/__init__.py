"""Answer keys for the book's exercises, one module per chapter.

Each key is a zero-argument function that computes the answer with the library, so
the key can never drift from the code the chapter teaches. Register one with::

    @answer("reliability-2048-mtbf", unit="s", rtol=0.02, hint="1/MTBF is a sum of rates.")
    def _():
        return fleet_mtbf(...)

:func:`atscale.check.check` imports every module of this package on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import units as u


@dataclass(frozen=True)
class Answer:
    """One exercise's key: how to compute it, its SI unit, and how close counts as right."""

    id: str
    compute: Callable[[], float]
    unit: str
    rtol: float = 0.02
    atol: float = 0.0
    hint: str = ""

    def format(self, value: float) -> str:
        """``value`` with a readable prefix, e.g. '16.7 h' for unit 's'."""
        if self.unit == "s":
            return u.fmt_time(value)
        if self.unit in ("", "1"):
            return f"{value:,.4g}"
        if self.unit == "%":
            return f"{value:.3g}%"
        return u.format_si(value, self.unit, 3 if abs(value) < 1 else 1)

    def tolerance_text(self) -> str:
        parts = [f"{self.rtol:.0%}"] if self.rtol else []
        if self.atol:
            parts.append(f"{self.atol:g} {self.unit}".strip())
        return " + ".join(parts) or "exactly"


ANSWERS: dict[str, Answer] = {}


def answer(id: str, *, unit: str, rtol: float = 0.02, atol: float = 0.0, hint: str = ""):
    """Decorator registering a zero-argument function as the key of exercise ``id``."""
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol={rtol!r} and atol={atol!r} must be >= 0")

    def register(compute: Callable[[], float]) -> Callable[[], float]:
        if id in ANSWERS:
            raise ValueError(f"exercise id {id!r} is registered twice")
        ANSWERS[id] = Answer(id, compute, unit, rtol, atol, hint)
        return compute

    return register
