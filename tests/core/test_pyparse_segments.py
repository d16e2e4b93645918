"""core.pyparse.segments: a file cut into top-level segments, each parsed alone (and
remembered by its text), gives exactly the statements of one parse of the whole file.

Checked on real Python files (the installed packages and this repository), as they are and
after random line edits (a sequence of them, so later versions reuse earlier segments'
memo), and on the shapes that hold a line at column 0 inside a statement.
"""

from __future__ import annotations

import ast
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import pyparse

# the real files' own invalid escapes ("\|") warn when parsed: not what is tested here
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
from tests.core.detectors.real_code import REPO, SITE_PACKAGES, read_text, real_python_files


def _dump(module: ast.Module) -> str:
    return ast.dump(module, include_attributes=True)


def _body(module: ast.Module) -> ast.Module:
    return module


def _pieced(text: str) -> str | None:
    """The whole file's statements as the segments give them (None: no segments)."""
    segs = pyparse.segments(text, _body)
    if segs is None:
        return None
    assert [s.first for s in segs] == sorted({s.first for s in segs})  # in order, no overlap
    assert segs[0].first == 1 and "".join(s.text for s in segs) == text  # every line once
    for a, b in itertools.pairwise(segs):
        assert b.first == a.last + 1
    body = [stmt for seg in segs for stmt in seg.parse().body]
    return _dump(ast.Module(body=body, type_ignores=[]))


def _whole(text: str) -> str | None:
    try:
        return _dump(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError):
        return None


def _files() -> list:
    return real_python_files((SITE_PACKAGES, REPO / "core"), 500, 40_000)


def _check(text: str) -> None:
    """Segments, when the file cuts into them, give exactly the whole parse (a file that
    does not parse never cuts: the caller's whole parse then reports the error)."""
    pieced = _pieced(text)
    if pieced is not None:
        assert pieced == _whole(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_segments_give_the_whole_files_statements(data: st.DataObject) -> None:
    files = _files()
    if not files:
        pytest.skip("no Python files to test on")
    text = read_text(data.draw(st.sampled_from(files), label="file"))
    _check(text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_segments_after_a_sequence_of_edits(data: st.DataObject) -> None:
    """Lines replaced by lines of another real file (or deleted, or a stray quote/bracket
    put in), one edit after another: each version's segments give its whole parse."""
    files = _files()
    if not files:
        pytest.skip("no Python files to test on")
    lines = read_text(data.draw(st.sampled_from(files), label="file")).split("\n")
    donor = read_text(data.draw(st.sampled_from(files), label="donor")).split("\n")
    for _ in range(data.draw(st.integers(1, 5), label="edits")):
        at = data.draw(st.integers(0, len(lines)), label="at")
        cut = data.draw(st.integers(0, 12), label="cut")
        kind = data.draw(st.sampled_from(["donor", "delete", "break"]), label="kind")
        if kind == "donor":
            d = data.draw(st.integers(0, max(0, len(donor) - 1)), label="from")
            new = donor[d:d + data.draw(st.integers(1, 30), label="take")]
        elif kind == "break":
            new = [data.draw(st.sampled_from(['x = """', "y = (", "@decorator", "else:", "]",
                                              "    return 1", "'''", "def f(:"]), label="junk")]
        else:
            new = []
        lines[at:at + cut] = new
        _check("\n".join(lines))


@pytest.mark.parametrize("text", [
    'x = """\nnot code\n"""\ny = 1\n',
    "@decorator\n@other(1)\ndef f():\n    pass\n\n\nclass A:\n    pass\n",
    "items = [\n1,\n2,\n]\nz = 3\n",
    "if x:\n    a = 1\nelif y:\n    a = 2\nelse:\n    a = 3\ntry:\n    pass\nexcept E:\n    pass\nfinally:\n    pass\n",
    "total = 1 + \\\n2\nw = 4\n",
    "# a comment\n\nimport os\n# another\nimport sys",
    "def f():\n    return 1\n\n  # odd comment\nx = 2\n",
    "",
    "\n\n",
])
def test_column_zero_lines_inside_statements(text: str) -> None:
    assert _pieced(text) == _whole(text)


def test_this_repositorys_code_cuts_into_segments() -> None:
    """Falling back to a whole parse is for odd files; this repository's core and tui
    (docstrings, long literals, decorators) all cut."""
    files = real_python_files((REPO / "core", REPO / "tui"), 1, 400_000)
    assert files
    assert [f for f in files if pyparse.segments(read_text(f), _body) is None] == []


def test_a_syntax_error_gives_no_segments() -> None:
    assert pyparse.segments("x = 1\ndef f(:\n    pass\ny = 2\n", _body) is None
    assert pyparse.segments("x = 1\rdef f():\n    pass\n", _body) is None  # a lone CR


def test_segments_are_remembered_by_text() -> None:
    calls: list[int] = []

    def count(module: ast.Module) -> int:
        calls.append(1)
        return len(module.body)

    a = "def one():\n    return 1\n\n\ndef two():\n    return 2\n"
    assert [s.summary for s in pyparse.segments(a, count) or []] == [1, 1]
    assert len(calls) == 2
    b = a.replace("return 2", "return 3")
    segs = pyparse.segments(b, count) or []
    assert len(calls) == 3  # only the changed statement parsed again
    assert [s.first for s in segs] == [1, 5]
