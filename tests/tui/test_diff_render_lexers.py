"""Highlighting with one shared lexer and theme per name draws exactly what a Syntax built
from the names draws (diff_render._syntax; Rich looked the lexer up and built a theme per
Syntax, ~1 ms per hunk and per line of the block being written, on the UI thread).

Over the project's own files (Python, Markdown, TOML, a Makefile, JSON): any run of lines,
whole and line by line, in a dark and an ANSI theme.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.syntax import Syntax
from rich.text import Text
from textual.content import Content

from tui.widgets import diff_render

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [p for p in (ROOT / "core").rglob("*.py") if p.stat().st_size < 60_000][:60]
    + list((ROOT / "docs").glob("*.md"))[:5]
    + [p for p in (ROOT / "pyproject.toml", ROOT / "Makefile") if p.exists()]
    + list((ROOT / "core").rglob("*.json"))[:3])
THEMES = ["monokai", "ansi_dark"]


def _reference(path: str, lines: list[str], theme: str) -> list[Text]:
    """highlight_lines as it was: a Syntax from the lexer's and the theme's names."""
    code = "\n".join(line.rstrip("\n") for line in lines)
    highlighted = Syntax(code, diff_render._lexer_for(path), theme=theme).highlight(code)
    highlighted.rstrip()
    parts = highlighted.split("\n", allow_blank=True)
    while len(parts) < len(lines):
        parts.append(Text(""))
    return parts[: len(lines)]


def _drawn(texts: list[Text]) -> list[tuple]:
    return [(t.plain, t.spans, t.style) for t in texts]


@st.composite
def runs_of_lines(draw) -> tuple[str, list[str]]:
    path = draw(st.sampled_from(FILES))
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True) or [""]
    start = draw(st.integers(0, len(lines) - 1))
    size = draw(st.integers(1, 40))
    return str(path.relative_to(ROOT)), lines[start:start + size]


@settings(max_examples=40, deadline=None)
@given(runs_of_lines(), st.sampled_from(THEMES))
def test_shared_lexer_and_theme_draw_what_named_ones_draw(run, theme):
    path, lines = run
    assert _drawn(diff_render.highlight_lines(path, lines, theme)) == _drawn(_reference(path, lines, theme))
    lexer = diff_render._lexer_for(path)
    for line in lines[:8]:  # the block being written: one line at a time
        expected = Syntax(line.rstrip("\n"), lexer, theme=theme).highlight(line.rstrip("\n"))
        expected.rstrip()
        assert _drawn([diff_render._highlight_line(lexer, line.rstrip("\n"), theme)]) == _drawn([expected])


def test_an_unknown_language_falls_back_to_plain_text():
    lines = ["some words\n", "and more\n"]
    assert _drawn(diff_render.highlight_lines("notes.unknown-ext", lines)) == \
        _drawn(_reference("notes.unknown-ext", lines, "monokai"))


@st.composite
def pendings(draw):
    """A block being written over real lines: its stage, path (known, unknown or none yet)
    and how far it got (enough lines to hide some above the tail)."""
    path, lines = draw(runs_of_lines())
    text = "".join(lines)
    cut = draw(st.integers(0, len(text)))
    stage = draw(st.sampled_from(["search", "replace"]))
    search, replace = (text[:cut], "") if stage == "search" else (text, text[:cut])
    path = draw(st.sampled_from([path, "notes.unknown-ext", ""]))

    class Pending:
        pass

    pending = Pending()
    pending.path, pending.stage, pending.search, pending.replace = path, stage, search, replace
    return pending


@settings(max_examples=60, deadline=None)
@given(pendings(), st.integers(1, 25))
def test_pending_content_is_the_pending_text_converted(pending, tail):
    """pending_content converts each line once; it is exactly Content.from_rich_text of
    render_pending's Text (what the widget drew before)."""
    expected = Content.from_rich_text(diff_render.render_pending(pending, tail))
    got = diff_render.pending_content(pending, tail)
    assert (got.plain, list(got.spans)) == (expected.plain, list(expected.spans))
