"""Fingerprints: which edits keep a function the same clone, and tolerant parsing."""

from __future__ import annotations

from core.detectors.normalize import parse_tolerant, units_from_source

ORIGINAL = '''
def parse_date(text, sep="-"):
    """Parse YYYY-MM-DD."""
    parts = text.strip().split(sep)  # tolerate spaces
    if len(parts) != 3:
        raise ValueError(f"bad date: {text!r}")
    year, month, day = (int(p) for p in parts)
    return year, month, day
'''

REFORMATTED = '''
def parse_date(text,
               sep="-"):
    # a different comment, no docstring
    parts = text.strip().split(sep)
    if len(parts) != 3:
        raise ValueError(f"bad date: {text!r}")

    year, month, day = (int(p) for p in parts)
    return year, month, day
'''

RENAMED = '''
def to_date(raw, delimiter="/"):
    pieces = raw.strip().split(delimiter)
    if len(pieces) != 4:
        raise ValueError(f"not a date: {raw!r}")
    y, m, d = (int(x) for x in pieces)
    return y, m, d
'''


def only(source: str):
    units = units_from_source(source)
    assert len(units) == 1
    return units[0]


def test_layout_comments_and_docstrings_do_not_matter() -> None:
    a, b = only(ORIGINAL), only(REFORMATTED)
    assert a.exact_key == b.exact_key
    assert a.renamed_key == b.renamed_key


def test_renamed_identifiers_and_changed_literals_keep_the_renamed_key() -> None:
    a, b = only(ORIGINAL), only(RENAMED)
    assert a.exact_key != b.exact_key
    assert a.renamed_key == b.renamed_key
    assert (a.features == b.features).all()


def test_a_changed_statement_changes_the_keys_but_not_most_features() -> None:
    changed = ORIGINAL.replace(
        "    year, month, day = (int(p) for p in parts)\n",
        "    year, month, day = map(int, parts)\n",
    )
    a, b = only(ORIGINAL), only(changed)
    assert a.renamed_key != b.renamed_key
    shared = len(set(a.features.tolist()) & set(b.features.tolist()))
    assert shared / len(set(a.features.tolist()) | set(b.features.tolist())) > 0.5


def test_tiny_functions_are_not_indexable() -> None:
    getter = only("class A:\n    def name(self):\n        return self._name\n")
    assert getter.symbol == "A.name"
    assert not getter.indexable and not getter.checkable
    assert only(ORIGINAL).indexable


def test_trailing_incomplete_function_is_tolerated() -> None:
    streaming = ORIGINAL + "\n\ndef half_written(x):\n    if x >\n"
    units = units_from_source(streaming)
    assert [u.symbol for u in units] == ["parse_date"]


def test_indented_method_snippet_with_column_zero_string_parses() -> None:
    snippet = '    def usage(self):\n        text = """\nUsage: prog\n"""\n        return text\n'
    tree = parse_tolerant(snippet)
    assert tree is not None
    units = units_from_source(snippet)
    assert [(u.symbol, u.line) for u in units] == [("usage", 1)]


def test_garbage_gives_no_units() -> None:
    assert units_from_source(")))(((") == []
    assert units_from_source("") == []
