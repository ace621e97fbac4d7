"""Exercise feedback for students.

Each exercise in the book has an id and an answer computed by the library (the
answer keys live in :mod:`atscale.answers`, one module per chapter). A student
checks a number::

    >>> from atscale.check import check
    >>> check("catalog-h100-ridge", 295)          # doctest: +SKIP
    ✓ Correct: 295.3 FLOP/byte (your 295 is within 2%).

Feedback says whether the answer is within tolerance. If not, it is one of three kinds, none of
which states the expected value or a number that leads to it, so the exercise keeps its point and
the feedback cannot be followed mechanically to the answer:

* **a slip**: the answer is off by (almost exactly) a recognised unit or factor (hours vs seconds,
  bits vs bytes, GB vs GiB, a percentage vs a fraction, dense vs sparse, an SI prefix): the kind of
  slip is named, never the factor or its direction;
* **close** (within a factor of 2): too high or too low, and by roughly how much, in coarse bands
  given in words ("by between a tenth and a quarter");
* **not yet**: the exercise's hint.
"""

from __future__ import annotations

import html
import importlib
import math
import pkgutil
from dataclasses import dataclass

from .answers import ANSWERS, Answer

__all__ = [
    "exercises", "Feedback", "check", "exercise_table",
]

_UNIT_FACTORS = {
    3600.0: "seconds vs hours", 60.0: "seconds vs minutes, or minutes vs hours", 86400.0: "seconds vs days",
    24.0: "hours vs days", 8.0: "bits vs bytes", 1e3: "the SI prefixes (k, M, G, T; ms vs s)",
    1e6: "the SI prefixes", 1e9: "the SI prefixes", 1e12: "the SI prefixes", 100.0: "a percentage vs a fraction",
    2.0**30 / 1e9: "GiB vs GB", 2.0**20 / 1e6: "MiB vs MB",
    2.0: "dense vs sparse FLOP/s, one direction vs both, or something counted twice",
}
_SLIP_RTOL = 0.002
"""How close to a unit factor a ratio must be to be called a slip: 0.2% (a slip gives the factor up to
the rounding of the student's number). Tight, so that an ordinary error is not misread as one: an
answer 7% off is not a GiB/GB slip, whose factor is 1.0737."""

_BANDS = ((0.10, "by less than a tenth"), (0.25, "by between a tenth and a quarter"),
          (0.50, "by between a quarter and a half"), (math.inf, "by more than half (but less than double)"))
"""Coarse bands of the relative error of a close answer, in words: feedback that states a number
could be applied to the guess and walked to the answer."""

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


def _slip(log_ratio: float) -> str:
    """The kind of unit or factor slip a ratio ``e^log_ratio`` matches within :data:`_SLIP_RTOL`, or ''."""
    for factor, what in _UNIT_FACTORS.items():
        if abs(abs(log_ratio) - math.log(factor)) < _SLIP_RTOL:
            return what
    return ""


def _band(log_ratio: float) -> str:
    off = math.expm1(abs(log_ratio)) if log_ratio > 0 else -math.expm1(log_ratio)
    return next(words for limit, words in _BANDS if off < limit)


def _shown(key: Answer, value: float) -> str:
    """The student's value in the exercise's unit, never longer than a readable number."""
    text = key.format(value)
    if len(text) > 24 or not 1e-9 <= abs(value) < 1e21:
        text = f"{value:.4g} {'' if key.unit in ('', '1') else key.unit}".strip()
    return text


_EXPECTED: dict[str, float] = {}


def _expected(key: Answer) -> float:
    """The key's answer, computed once per session (keys are deterministic; some take a second)."""
    if key.id not in _EXPECTED:
        _EXPECTED[key.id] = float(key.compute())
    return _EXPECTED[key.id]


def check(exercise: str, answer) -> Feedback:
    """Compare ``answer`` (a number in the unit the exercise asks for) with the answer key.

    Raises ``ValueError`` for an unknown exercise id (listing the known ones). A
    non-numeric answer gets a message, not an exception.
    """
    _load_answers()
    if not isinstance(exercise, str) or exercise not in ANSWERS:
        raise ValueError(f"unknown exercise {exercise!r}; known: {', '.join(sorted(ANSWERS))}")
    key: Answer = ANSWERS[exercise]
    try:
        given = float(answer)
    except (TypeError, ValueError, OverflowError):
        text = repr(answer)
        text = text if len(text) <= 40 else text[:37] + "..."
        return Feedback(exercise, False, f"✗ Please answer with a single number{_in_unit(key.unit)}; got {text}.")
    expected = _expected(key)
    if not math.isfinite(given):
        return Feedback(exercise, False, f"✗ {given} is not a finite number: answer with a number{_in_unit(key.unit)}.")
    error = abs(given - expected)
    tolerance = key.rtol * abs(expected) + key.atol
    if error <= tolerance:
        return Feedback(exercise, True, f"✓ Correct: {key.format(expected)} (your {key.format(given)} is within "
                                        f"{key.tolerance_text()}).")
    yours = _shown(key, given)
    if expected != 0 and given != 0 and (given > 0) == (expected > 0):
        log_ratio = math.log(abs(given)) - math.log(abs(expected))   # safe for denormals and huge values
        slip = _slip(log_ratio)
        if slip:
            message = f"✗ Not yet: your {yours} looks off by a unit or factor slip: check {slip}."
        elif abs(log_ratio) <= math.log(2):
            direction = "high" if log_ratio > 0 else "low"
            message = f"✗ Close: your {yours} is too {direction}, {_band(log_ratio)}."
        else:
            message = f"✗ Not yet: your {yours} is not within a factor of 2 of the answer."
    elif given == 0:
        message = f"✗ Not yet: your answer is 0{_in_unit(key.unit)}, and the answer is not."
    else:
        message = f"✗ Not yet: your {yours} has the wrong sign."
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

