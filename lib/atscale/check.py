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

from . import _validate as _v
from .answers import ANSWERS, Answer

__all__ = [
    "exercises", "Feedback", "check", "exercise_table",
]

SLIPS: dict[str, dict[float, str]] = {
    "time": {3600.0: "seconds vs hours", 60.0: "seconds vs minutes, or minutes vs hours", 86400.0: "seconds vs days",
             24.0: "hours vs days"},
    "bits": {8.0: "bits vs bytes"},
    "binary": {2.0**30 / 1e9: "GiB vs GB", 2.0**20 / 1e6: "MiB vs MB"},
    "si": {1e3: "the SI prefixes (k, M, G, T; ms vs s)", 1e6: "the SI prefixes", 1e9: "the SI prefixes",
           1e12: "the SI prefixes"},
    "percent": {100.0: "a percentage vs a fraction"},
    "sparse": {2.0: "dense vs sparse FLOP/s"},
    "twice": {2.0: "one direction vs both, or something counted twice"},
}
"""Each kind of slip with the factors it produces. An exercise admits only the kinds its quantity allows
(:meth:`atscale.answers.Answer.slip_kinds`): a factor-8 miss on a GPU count is not "bits vs bytes"."""

_SLIP_RTOL = 0.002
"""How close to a unit factor a ratio must be to be called a slip: 0.2% (a slip gives the factor up to
the rounding of the student's number). Tight, so that an ordinary error is not misread as one: an
answer 7% off is not a GiB/GB slip, whose factor is 1.0737."""

CLOSE = 0.25
"""An answer is "close" when it is within 25% of the key (either way); further off it is "not yet"."""

_BANDS = ((0.10, "by less than a tenth"), (CLOSE, "by between a tenth and a quarter"),
          (1.0, "by more than a quarter"), (math.inf, "by more than a quarter"))
"""Coarse bands of the relative error, in words: feedback that states a number could be applied to the
guess and walked to the answer."""

_MISSES: dict[str, int] = {}
"""Wrong answers given to each exercise in this session: the first miss gets the idea, later ones the hint."""

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


def _slip(log_ratio: float, kinds=tuple(SLIPS)) -> str:
    """The slip among ``kinds`` whose factor the ratio ``e^log_ratio`` matches within :data:`_SLIP_RTOL`, or ''."""
    found = [what for kind in kinds for factor, what in SLIPS[kind].items()
             if abs(abs(log_ratio) - math.log(factor)) < _SLIP_RTOL]
    return " or ".join(dict.fromkeys(found))


def _off(log_ratio: float) -> float:
    """The relative error of an answer ``e^log_ratio`` times the key, as a positive fraction."""
    return math.expm1(abs(log_ratio)) if log_ratio > 0 else -math.expm1(log_ratio)


def _band(log_ratio: float) -> str:
    return next(words for limit, words in _BANDS if _off(log_ratio) < limit)


def _hint(key: Answer, misses: int) -> str:
    """The help for the ``misses``-th wrong answer: the idea first, the hint (the formula) from the second on."""
    text = key.idea if misses <= 1 and key.idea else key.hint
    return f" Hint: {text}" if text else ""


def _unknown(exercise) -> str:
    ids = sorted(ANSWERS)
    shown = repr(exercise) if len(repr(exercise)) <= 60 else repr(exercise)[:57] + "..."
    close = _v.closest(exercise, ids, cutoff=0.6)
    if not close and isinstance(exercise, str):  # a prefix or a word of an id, e.g. 'ridge'
        close = [i for i in ids if exercise and exercise.lower() in i][:3]
    suggestion = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return (f"unknown exercise id {shown}.{suggestion} atscale.check.exercises() lists all {len(ids)}; "
            "the id is the first argument of the exercise's check() call.")


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

    Raises ``ValueError`` for an unknown exercise id (suggesting the closest ids). A
    non-numeric answer gets a message, not an exception.

    A wrong answer is "close" within :data:`CLOSE` of the key; a unit or factor slip is named only
    where the exercise's quantity admits it; the help comes in stages (the idea at the first miss,
    the formula from the second).
    """
    _load_answers()
    if not isinstance(exercise, str) or exercise not in ANSWERS:
        raise ValueError(_unknown(exercise))
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
        slip = _slip(log_ratio, key.slip_kinds(expected))
        direction = "high" if log_ratio > 0 else "low"
        if slip:
            message = f"✗ Not yet: your {yours} looks off by a unit or factor slip: check {slip}."
        elif _off(log_ratio) <= CLOSE:
            message = f"✗ Close: your {yours} is too {direction}, {_band(log_ratio)}."
        elif abs(log_ratio) <= math.log(2):
            message = f"✗ Not yet: your {yours} is too {direction}, {_band(log_ratio)}."
        else:
            message = f"✗ Not yet: your {yours} is off by more than a factor of two (either way)."
    elif given == 0:
        message = f"✗ Not yet: your answer is 0{_in_unit(key.unit)}, and the answer is not."
    else:
        message = f"✗ Not yet: your {yours} has the wrong sign."
    _MISSES[exercise] = _MISSES.get(exercise, 0) + 1
    return Feedback(exercise, False, message + _hint(key, _MISSES[exercise]))


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

