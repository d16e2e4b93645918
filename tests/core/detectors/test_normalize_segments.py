"""Fingerprinting only the top-level statements that hold some lines equals the whole parse.

`units_from_source(source, lines=...)` parses just the top-level statements overlapping
`lines` (a duplicate check of a hunk in a 2,500-line file must not parse the file): on
real Python files (the installed site-packages and this repository) with random line
sets, its units must be exactly those of the whole-file parse restricted to those lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.detectors.normalize import FunctionUnit, top_level_starts, units_from_source
from tests.core.detectors.real_code import REPO, SITE_PACKAGES, read_text, real_python_files


def _real_files() -> list[Path]:
    """Real modules: site-packages (2-60 kB) and this repository's own code."""
    return real_python_files((SITE_PACKAGES, REPO / "core", REPO / "tui", REPO / "tests"), 2_000, 60_000)


def _view(unit: FunctionUnit) -> tuple:
    return (unit.symbol, unit.line, unit.end_line, unit.statements, unit.tokens, unit.exact_key,
            unit.renamed_key, unit.features.tolist(), unit.anchors, unit.lexicon, unit.roles)


def _lines(data: st.DataObject, n_lines: int) -> set[int]:
    rows = st.integers(min_value=1, max_value=max(1, n_lines))
    wanted = set(data.draw(st.lists(rows, max_size=6), label="scattered"))
    for start, length in data.draw(
        st.lists(st.tuples(rows, st.integers(min_value=1, max_value=40)), max_size=3), label="runs"
    ):
        wanted.update(range(start, min(start + length, n_lines + 1)))
    return wanted


def _same(text: str, wanted: set[int]) -> None:
    fast = units_from_source(text, lines=set(wanted))
    whole = units_from_source(text, lines=set(wanted), segments=False)
    assert [_view(u) for u in fast] == [_view(u) for u in whole]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_segment_parse_equals_whole_parse_on_real_files(data: st.DataObject) -> None:
    files = _real_files()
    if not files:
        pytest.skip("no Python files to test on")
    text = read_text(data.draw(st.sampled_from(files), label="file"))
    _same(text, _lines(data, text.count("\n") + 1))


TRICKY = '''"""Module doc."""
import os

TEMPLATE = """
def not_a_function(x):
    return x + 1
"""

@decorator(
    arg=1,
)
def real(a, b):
    s = 'a # not a comment'
    t = """
class Fake:
    pass
"""
    return a + b + len(s) + len(t)

x = [
1, 2,
]
y = 1 + \\
2

if os.name == "nt":
    def platform(a, b):
        c = a + b
        return c * 2 + 1
else:
    def platform(a, b):
        c = a - b
        return c * 2 - 1

class K:
    @property
    def value(self):
        v = self._v
        if v is None:
            v = self._v = compute()
        return v

    def other(self, q):
        r = q * 2
        return [r for _ in range(3)]
'''


def test_strings_brackets_continuations_decorators_and_clauses_are_not_cut() -> None:
    rows = TRICKY.split("\n")
    starts = top_level_starts(TRICKY)
    assert starts is not None
    starts_text = [rows[i].split("(")[0].split(" ")[0] for i in starts]
    assert "def" not in [rows[i][:3] for i in starts if rows[i - 1].startswith(")")]
    assert rows.index("def not_a_function(x):") not in starts
    assert rows.index("class Fake:") not in starts
    assert rows.index("1, 2,") not in starts and rows.index("2") not in starts
    assert rows.index("else:") not in starts
    assert rows.index("@decorator(") in starts and "@decorator" in starts_text
    for n in range(1, len(rows) + 1):
        _same(TRICKY, {n})
    _same(TRICKY, set(range(1, len(rows) + 1)))


def test_a_snippet_or_a_broken_segment_falls_back_to_the_tolerant_parse() -> None:
    snippet = "    def method(self, a):\n        b = a + 1\n        c = b * 2\n        return c\n"
    assert top_level_starts(snippet) is None
    assert [u.symbol for u in units_from_source(snippet, lines={2})] == ["method"]
    broken = "def ok(a):\n    b = a + 1\n    c = b * 2\n    return c\n\ndef broken(:\n    pass\n"
    assert [u.symbol for u in units_from_source(broken, lines={2, 6})] == ["ok"]


def test_a_lone_carriage_return_keeps_the_line_numbers() -> None:
    source = "def a(x):\r    y = x + 1\r    z = y * 2\r    return z\r\rdef b(x):\n    y = x - 1\n    z = y * 3\n    return z\n"
    _same(source, {7})
    _same(source, {2})


def _starts_line_by_line(source: str) -> list[int] | None:
    """top_level_starts as it was first written (every line visited): the reference the
    faster one (only lines with code at column 0 visited) must equal."""
    from core.detectors.normalize import _CLAUSE, _LEXEMES

    code = _LEXEMES.sub(lambda m: m.group()[0] + "\n" * m.group().count("\n"), source)
    starts = [0]
    depth = 0
    continued = after_decorator = seen_code = False
    for i, line in enumerate(code.split("\n")):
        if line and depth <= 0 and not continued:
            if line[0] not in " \t\f#":
                if i and not after_decorator and not _CLAUSE.match(line):
                    starts.append(i)
                after_decorator = line[0] == "@"
                seen_code = True
            elif not seen_code and line.strip(" \t\f")[:1] not in ("", "#"):
                return None
        depth += (line.count("(") + line.count("[") + line.count("{")
                  - line.count(")") - line.count("]") - line.count("}"))
        continued = line.endswith("\\")
    return starts


# the characters that decide a cut: quotes, brackets, backslashes, comments, decorators,
# indentation, clause keywords, line ends (a lone CR too); plain code and line ends most
# often, so that most draws do not leave one string or bracket open to the end
_SYNTAX_PIECES = st.sampled_from([
    *["\n"] * 8, *["x"] * 6, *[" "] * 3, "    ", "\t", "\f", "\r", *["\\"] * 3, "#", "@", "'", '"',
    "'''", '"""', "(", ")", "[", "]", "{", "}", "()", "else", "elif", "except", "finally", "elsewhere",
    "def f():", "pass", ":", "=", "1"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_SYNTAX_PIECES, max_size=60).map("".join))
@example("x\\\nx")  # a line continued onto column 0
@example("x\n@d\ndef f():\n    pass\nelse\n  y\n")
@example("(\nx\n)\ny\n")
@example("    x\ny\n")  # a snippet
def test_top_level_starts_equals_the_line_by_line_cut_on_syntax_soup(source: str) -> None:
    assert top_level_starts(source) == _starts_line_by_line(source)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_top_level_starts_equals_the_line_by_line_cut_on_edited_real_files(data: st.DataObject) -> None:
    files = _real_files()
    if not files:
        pytest.skip("no Python files to test on")
    lines = read_text(data.draw(st.sampled_from(files), label="file")).split("\n")
    for _ in range(data.draw(st.integers(0, 3), label="edits")):
        at = data.draw(st.integers(0, len(lines)), label="at")
        piece = data.draw(st.lists(_SYNTAX_PIECES, max_size=8).map("".join), label="piece")
        lines[at:at + data.draw(st.integers(0, 2), label="cut")] = piece.split("\n")
    source = "\n".join(lines)
    assert top_level_starts(source) == _starts_line_by_line(source)
