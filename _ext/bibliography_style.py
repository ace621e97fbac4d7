"""Author-year citations everywhere: in the text "(Shoeybi *et al.*, 2019)", and the same label in
every bibliography ("[Shoeybi *et al.*, 2019]"), instead of sphinxcontrib-bibtex's default
alphabetic labels ("[SPP+19]") that no reader can match to the citation in the text.

Two pybtex plugins, registered when Sphinx loads this extension (before any bibliography is
formatted):

* ``author_year_round`` (``bibtex_reference_style``): sphinxcontrib-bibtex's ``author_year``
  reference style with round brackets, as author-year citations are printed;
* ``author_year`` (``bibtex_default_style``): pybtex's ``alpha`` formatting and order (by author,
  year, title) whose label is :func:`author_year_label`, which the Jupyter edition
  (``tools/jupyter-edition``) also prints.

Two entries that would print the same "Jiang et al., 2024" are told apart as 2024a and 2024b (in
the order author, year, title), in the text and in every bibliography alike: the letters are
given once for the whole ``.bib`` file, so each entry keeps its letter in every chapter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pybtex.plugin
from pybtex.richtext import Text
from pybtex.style.formatting.alpha import Style as AlphaStyle
from pybtex.style.labels import BaseLabelStyle

REFERENCE_STYLE = "author_year_round"
BIBLIOGRAPHY_STYLE = "author_year"


def _plain(rich) -> str:
    return str(Text(*rich) if isinstance(rich, list) else rich).replace("{", "").replace("}", "")


def author_names(entry) -> str:
    """The names a citation prints for ``entry``: "Amdahl", "Dean and Barroso", "Shoeybi *et al.*"
    (Markdown emphasis), or the title in italics where the entry has no author or editor. The
    last names as sphinxcontrib-bibtex's ``last`` person style prints them."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [" ".join(_plain(n) for n in p.rich_last_names) if p.last_names else " ".join(p.first_names)
             for p in persons]
    if names and names[-1] == "others":  # BibTeX's "and others": shown as "et al."
        return f"{names[0]} *et al.*"
    if not names:
        return f"*{_plain(entry.fields['title'])}*"
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} *et al.*"


YEAR_SUFFIX: dict[str, str] = {}
"""Entry key -> "a", "b", ... for entries whose names and year coincide (see :func:`assign_suffixes`)."""


def assign_suffixes(entries) -> dict[str, str]:
    """Letters for the entries (pybtex ``Entry`` objects) that share names and year, in the order
    of pybtex's author-year-title sort; stored in :data:`YEAR_SUFFIX` and returned."""
    from pybtex.style.sorting.author_year_title import SortingStyle

    groups: dict[tuple[str, str], list] = {}
    for entry in SortingStyle().sort(list(entries)):
        groups.setdefault((author_names(entry), entry.fields.get("year", "n.d.")), []).append(entry)
    YEAR_SUFFIX.clear()
    for group in groups.values():
        if len(group) > 1:
            YEAR_SUFFIX.update({e.key: "abcdefghijklmnopqrstuvwxyz"[i] for i, e in enumerate(group)})
    return dict(YEAR_SUFFIX)


def year_label(entry) -> str:
    """The year a citation prints: "2019", or "2024a" where two entries would read the same."""
    return f"{entry.fields.get('year', 'n.d.')}{YEAR_SUFFIX.get(entry.key, '')}"


def author_year_label(entry) -> str:
    """The bibliography label of ``entry``, as the text cites it: "Shoeybi et al., 2019"."""
    return f"{author_names(entry).replace('*', '')}, {year_label(entry)}"


class AuthorYearLabelStyle(BaseLabelStyle):
    """Labels "Author et al., 2019" (:func:`author_year_label`)."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield author_year_label(entry)


class AuthorYearStyle(AlphaStyle):
    """pybtex's ``alpha`` entries (sorted by author, year, title) with author-year labels."""

    default_label_style = BIBLIOGRAPHY_STYLE


def _register() -> None:
    from pybtex.style.template import node
    from sphinxcontrib.bibtex.style.referencing import BracketStyle
    from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
    from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
        BasicAuthorYearParentheticalReferenceStyle,
    )
    from sphinxcontrib.bibtex.style.template import join, join2, post_text, pre_text, reference

    def round_brackets() -> BracketStyle:
        return BracketStyle(left="(", right=")")

    @node
    def year_with_letter(children, data):
        return Text(year_label(data["entry"]))

    @dataclass
    class Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
        """"(Jiang et al., 2024a)": the year as :func:`year_label` prints it."""

        def inner(self, role_name: str):
            return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
                pre_text,
                reference[join(sep=self.author_year_sep)[
                    self.person.author_or_editor_or_title(full="s" in role_name), year_with_letter]],
                post_text,
            ]

    @dataclass
    class AuthorYearRoundReferenceStyle(AuthorYearReferenceStyle):
        bracket_parenthetical: BracketStyle = field(default_factory=round_brackets)
        bracket_textual: BracketStyle = field(default_factory=round_brackets)
        bracket_author: BracketStyle = field(default_factory=round_brackets)
        bracket_label: BracketStyle = field(default_factory=round_brackets)
        bracket_year: BracketStyle = field(default_factory=round_brackets)

        def __post_init__(self):
            super().__post_init__()
            parenthetical = Parenthetical(bracket=self.bracket_parenthetical, person=self.person,
                                          author_year_sep=self.author_year_sep,
                                          pre_text_sep=self.pre_text_sep, post_text_sep=self.post_text_sep)
            self.styles[0] = parenthetical
            self.role_style.update((role, parenthetical) for role in parenthetical.role_names())

    import sphinxcontrib.bibtex.plugin

    pybtex.plugin.register_plugin("pybtex.style.labels", BIBLIOGRAPHY_STYLE, AuthorYearLabelStyle, force=True)
    pybtex.plugin.register_plugin("pybtex.style.formatting", BIBLIOGRAPHY_STYLE, AuthorYearStyle, force=True)
    sphinxcontrib.bibtex.plugin.register_plugin("sphinxcontrib.bibtex.style.referencing", REFERENCE_STYLE,
                                                AuthorYearRoundReferenceStyle, force=True)


_register()


def _letters(app, config):
    """Give the letters once, from every ``.bib`` file of the book, before anything is cited."""
    from pathlib import Path

    import pybtex.database

    entries = []
    for name in config.bibtex_bibfiles:
        entries += pybtex.database.parse_file(str(Path(app.confdir) / name)).entries.values()
    assign_suffixes(entries)


def setup(app):
    app.connect("config-inited", _letters)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
