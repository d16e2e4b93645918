"""The verifier's Python syntax check, done a statement at a time (pyparse.segments, so no
parse holds the GIL for a whole file), says exactly what one parse of the file says: the
same problems for the project's own files and for broken versions of them (lines dropped,
repeated, cut or given stray brackets, quotes and indents)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core import pyparse
from core.verify import checks
from core.verify.checks import SYNTAX, Problem

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted(p for p in (ROOT / "core").rglob("*.py") if 2_000 < p.stat().st_size < 40_000)[:80]
JUNK = ["(", ")", "]", '"', "'''", ":", "\\", "    ", "\t", "def", "else:", "@x", "\r", "\x00", "lambda"]


def _whole_parse(path: str, text: str) -> list[Problem]:
    """The check as it was: one ast.parse of the whole file."""
    try:
        pyparse.parse(text, filename=path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        return [Problem(path, line, SYNTAX, f"invalid Python: {exc.msg}", exc.end_lineno or line)]
    except ValueError as exc:
        return [Problem(path, 1, SYNTAX, f"invalid Python: {exc}")]
    return []


@st.composite
def texts(draw) -> tuple[str, str]:
    path = draw(st.sampled_from(FILES))
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["drop", "repeat", "cut", "junk"]))
        if how == "drop":
            del lines[at]
        elif how == "repeat":
            lines.insert(at, lines[at])
        elif how == "cut":
            lines[at] = lines[at][: draw(st.integers(0, max(0, len(lines[at]) - 1)))] + "\n"
        else:
            lines.insert(at, draw(st.sampled_from(JUNK)) + "\n")
    return str(path.relative_to(ROOT)), "".join(lines)


@settings(max_examples=60, deadline=None)
@given(texts())
def test_statement_by_statement_check_equals_one_parse(case):
    path, text = case
    assert checks._python_syntax(path, text) == _whole_parse(path, text)
