"""Exercise feedback for students.

Each exercise in the book has an id and an answer computed by the library (the
answer keys live in :mod:`atscale.answers`, one module per chapter). A student
checks a number::

    >>> from atscale.check import check
    >>> check("catalog-h100-ridge", 295)          # doctest: +SKIP
    ✓ Correct: 295.3 FLOP/byte (your 295 is within 2%).

Feedback says whether the answer is within tolerance, and if not whether it is too
high or too low and whether it is off by a unit factor (hours vs seconds, bits vs
bytes, GB vs GiB) — without printing the expected value, so the exercise keeps its point.
"""

from __future__ import annotations

import html
import importlib
import math
import pkgutil
from dataclasses import dataclass

from .answers import ANSWERS, Answer

_UNIT_FACTORS = {
    3600.0: "seconds vs hours", 60.0: "seconds vs minutes or minutes vs hours", 86400.0: "seconds vs days",
    24.0: "hours vs days", 8.0: "bits vs bytes", 1e3: "k, M, G, T prefixes? ms vs s?",
    1e6: "SI prefixes?", 1e9: "SI prefixes?", 1e12: "SI prefixes?", 100.0: "a percentage vs a fraction",
    2.0**30 / 1e9: "GiB vs GB", 2.0: "dense vs sparse FLOP/s? one direction vs both? something counted twice?",
}

_loaded = False


def _load_answers() -> None:
    global _loaded
    if not _loaded:
        from . import answers

        for info in pkgutil.iter_modules(answers.__path__):
            importlib.import_module(f"{answers.__name__}.{info.name}")
        _loaded = True


def exercises() -> list[str]:
    """All exercise ids, sorted."""
    _load_answers()
    return sorted(ANSWERS)


@dataclass(frozen=True)
class Feedback:
    """The result of :func:`check`: whether the answer is right and what to say about it."""

    exercise: str
    correct: bool
    message: str

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.message

    def __bool__(self) -> bool:
        return self.correct

    def _repr_html_(self) -> str:
        colour = "#1b7f3b" if self.correct else "#b00020"
        return f'<div class="atscale-feedback" style="color:{colour}">{html.escape(self.message)}</div>'


def _in_unit(unit: str) -> str:
    return "" if unit in ("", "1") else f" in {unit}"


def _unit_hint(ratio: float) -> str:
    for factor, what in _UNIT_FACTORS.items():
        for r in (ratio, 1 / ratio):
            if abs(r / factor - 1) < 0.03:
                return f" That is a factor of {factor:,.4g}: check your units ({what})."
    return ""


def check(exercise: str, answer) -> Feedback:
    """Compare ``answer`` (a number in the unit the exercise asks for) with the answer key.

    Raises ``ValueError`` for an unknown exercise id (listing the known ones). A
    non-numeric answer gets a message, not an exception.
    """
    _load_answers()
    if exercise not in ANSWERS:
        raise ValueError(f"unknown exercise {exercise!r}; known: {', '.join(sorted(ANSWERS))}")
    key: Answer = ANSWERS[exercise]
    try:
        given = float(answer)
    except (TypeError, ValueError):
        return Feedback(exercise, False, f"✗ Please answer with a single number{_in_unit(key.unit)}; got {answer!r}.")
    expected = float(key.compute())
    if not math.isfinite(given):
        return Feedback(exercise, False, f"✗ {given} is not a finite number.")
    error = abs(given - expected)
    tolerance = key.rtol * abs(expected) + key.atol
    if error <= tolerance:
        return Feedback(exercise, True, f"✓ Correct: {key.format(expected)} (your {key.format(given)} is within "
                                        f"{key.tolerance_text()}).")
    if expected != 0 and given != 0 and (given > 0) == (expected > 0):
        ratio = given / expected
        direction = "high" if ratio > 1 else "low"
        off = f"{abs(ratio - 1):.0%}" if 2 / 3 < ratio < 1.5 else f"{max(ratio, 1 / ratio):,.3g}×"
        message = f"✗ Not yet: your {key.format(given)} is {off} too {direction}.{_unit_hint(ratio)}"
    else:
        message = f"✗ Not yet: your {key.format(given)} is not within {key.tolerance_text()} of the answer."
    if key.hint:
        message += f" Hint: {key.hint}"
    return Feedback(exercise, False, message)


def exercise_table():
    """Every exercise id with its chapter, unit and tolerance (never its answer), as a
    :class:`~atscale.tables.Table`: the book's Exercises page prints it."""
    from .tables import Table

    _load_answers()
    rows = []
    for key in ANSWERS.values():
        module = importlib.import_module(key.compute.__module__)
        chapter = getattr(module, "CHAPTER", module.__name__.rsplit(".", 1)[-1])
        unit = "a plain number" if key.unit in ("", "1") else key.unit
        within = key.tolerance_text() if key.rtol else f"±{key.atol:g}"
        rows.append((chapter, key.id, unit, within))
    return Table(("Chapter", "Exercise id", "Answer in (SI)", "Counted right within"), tuple(rows))

