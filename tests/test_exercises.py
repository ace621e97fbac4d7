"""Every exercise of the book has an answer key, and the Exercises page lists exactly those."""

import re
from pathlib import Path

from atscale.check import exercise_table, exercises

ROOT = Path(__file__).resolve().parents[1]


def _ids_used_in_chapters() -> set[str]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "book").glob("*.md")
                     if p.name != "exercises.md")
    return set(re.findall(r'check\("([a-z0-9-]+)"', text))


def test_every_exercise_in_the_book_has_a_key_and_every_key_an_exercise():
    used, keys = _ids_used_in_chapters(), set(exercises())
    assert used - keys == set(), f"chapters call check() with ids that have no answer key: {sorted(used - keys)}"
    assert keys - used == set(), f"answer keys no chapter uses: {sorted(keys - used)}"


def test_exercise_page_lists_every_id_once_without_answers():
    table = exercise_table()
    ids = [row[1] for row in table.rows]
    assert sorted(ids) == exercises() and len(set(ids)) == len(ids)
    assert {row[0] for row in table.rows} >= {"The roofline", "The memory wall", "Reliability", "Hardware catalog"}
    assert "Correct" not in str(table)
