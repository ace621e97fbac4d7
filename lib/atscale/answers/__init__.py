"""Answer keys for the book's exercises, one module per chapter.

Each key is a zero-argument function that computes the answer with the library, so
the key can never drift from the code the chapter teaches. Register one with::

    @answer("reliability-2048-mtbf", unit="s", rtol=0.02,
        idea="A job stops when any one node fails: a fleet fails as often as all its nodes together.",
            idea="A fleet fails as often as all its nodes together.",
            hint="1/MTBF is a sum of rates: 1/MTBF = N / MTTF_node.")
    def _():
        return fleet_mtbf(...)

Feedback comes in stages (see :func:`atscale.check.check`): the first miss shows the ``idea`` (what to
think about), later misses the ``hint`` (the formula or the library call). Neither may contain a number
that gives the answer away. A unit or factor slip is diagnosed only where the exercise's quantity admits
it: the kinds follow from ``unit`` (:data:`SLIPS_BY_UNIT`), and ``slips`` adds others ("sparse" where a
dense and a sparse peak exist, "twice" where one direction vs both or double counting is a likely slip,
"bits" for link speeds quoted in bits).

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
    idea: str = ""
    slips: tuple[str, ...] = ()

    def slip_kinds(self, expected: float) -> tuple[str, ...]:
        """The kinds of unit or factor slip this exercise's answer admits (keys of ``atscale.check.SLIPS``)."""
        kinds = list(SLIPS_BY_UNIT.get(self.unit, ("si",)))
        if self.unit in ("", "1", "%") and abs(expected) <= 1 or self.unit == "%":
            kinds.append("percent")  # a fraction may be answered as a percentage (and vice versa)
        return tuple(dict.fromkeys(kinds + list(self.slips)))

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
        parts = [f"{self.rtol:.0%}" if self.rtol >= 0.01 else f"{self.rtol:.1%}"] if self.rtol else []
        if self.atol:
            parts.append(f"{self.atol:g} {self.unit}".strip())
        return " + ".join(parts) or "exactly"


SLIPS_BY_UNIT: dict[str, tuple[str, ...]] = {
    "s": ("time", "si"), "B": ("bits", "binary", "si"), "B/s": ("bits", "binary", "si"),
    "FLOP": ("si",), "FLOP/s": ("si",), "FLOP/B": ("si",), "": (), "1": (), "%": (),
}
"""The slips an answer's unit admits: a time can be in the wrong unit of time or SI prefix; bytes can be
bits, GiB or the wrong prefix; a plain number (a count, a ratio) has none of those."""

ANSWERS: dict[str, Answer] = {}


def answer(id: str, *, unit: str, rtol: float = 0.02, atol: float = 0.0, hint: str = "", idea: str = "",
           slips: tuple[str, ...] = ()):
    """Decorator registering a zero-argument function as the key of exercise ``id``."""
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol={rtol!r} and atol={atol!r} must be >= 0")
    unknown = set(slips) - {"time", "bits", "binary", "si", "percent", "sparse", "twice"}
    if unknown:
        raise ValueError(f"slips={slips!r}: unknown kinds {sorted(unknown)}")

    def register(compute: Callable[[], float]) -> Callable[[], float]:
        if id in ANSWERS:
            raise ValueError(f"exercise id {id!r} is registered twice")
        ANSWERS[id] = Answer(id, compute, unit, rtol, atol, hint, idea, tuple(slips))
        return compute

    return register
