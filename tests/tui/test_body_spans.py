"""A hunk's body made straight from the lexer's tokens is the content the Rich path makes.

body_content used to convert hunk_body's Rich Text (a Syntax per run of lines, split into a
Text per line, each stylized and appended) with Content.from_rich_text: ~2 ms per hunk in
the rebuild's thread, under the GIL the UI thread waits for while an answer streams.
diff_render._body_spans makes the text and spans from the same tokens. The property: for
any hunk of real lines of this project (Python, Markdown, TOML, JSON) or awkward ones (tabs,
carriage returns, form feeds, control characters, wide and combining characters, trailing
blanks, empty lines), any line numbers, outside an app and in a running app's theme, the
content is Content.from_rich_text(hunk_body(...)): the same text and the same spans, in the
same order (so it draws the same, and the restyle and pre-render tests see no change).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App
from textual.content import Content

from tui.widgets import diff_render

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [p for p in (ROOT / "core").rglob("*.py") if p.stat().st_size < 60_000][:40]
    + [p for p in (ROOT / "tui" / "widgets").glob("*.py")][:6]
    + list((ROOT / "docs").glob("*.md"))[:3]
    + [p for p in (ROOT / "pyproject.toml", ROOT / "Makefile") if p.exists()]
    + list((ROOT / "core").rglob("*.json"))[:2])
AWKWARD = ["\tindented = 1\n", "x = 1   \n", "   \n", "\n", "", "a\rb = 2\n", "page\x0cbreak\n",
           "bell\x07 = 'ring'\n", "s = '漢字 wide'  # 😀\n", "e\u0301 = 'combining'\n", '"""open docstring\n',
           "still in it\n", '"""\n', "# trailing blanks    \n", "x = b'\\x00'\n", "\ufeffbom = 1\n"]
PATHS = ["pkg/a.py", "docs/b.md", "conf.toml", "data.json", "Makefile", "notes.unknown-ext", "web/c.js"]


@st.composite
def runs(draw, most: int) -> tuple[str, ...]:
    """A run of consecutive lines of one of the project's files, or awkward lines."""
    if draw(st.booleans()):
        path = draw(st.sampled_from(FILES))
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True) or [""]
        start = draw(st.integers(0, len(lines) - 1))
        return tuple(lines[start:start + draw(st.integers(0, most))])
    return tuple(draw(st.lists(st.sampled_from(AWKWARD), max_size=most)))


@st.composite
def keys(draw) -> tuple:
    """A body_key: path, first old line, removed, added, context before and after."""
    return (draw(st.sampled_from(PATHS)), draw(st.integers(1, 120_000)), draw(runs(8)), draw(runs(14)),
            draw(runs(3)), draw(runs(3)))


def _made(key: tuple) -> Content:
    made = diff_render._body_spans(key)
    assert made is not None or not isinstance(diff_render._lexer(diff_render._lexer_for(key[0])),
                                              diff_render.Lexer)
    return Content.from_rich_text(diff_render.cached_body(key)) if made is None else diff_render._content_of(*made)


def _same(key: tuple) -> None:
    expected = Content.from_rich_text(diff_render.hunk_body(*key))
    got = _made(key)
    assert got.plain == expected.plain
    assert got.spans == expected.spans


@settings(max_examples=200, deadline=None)
@given(keys())
def test_tokens_make_what_the_rich_path_makes(key):
    _same(key)


async def test_in_an_apps_theme_too():
    """Inside an app, styles are parsed by its console and colours read with its ANSI theme."""
    app = App()
    async with app.run_test():
        @settings(max_examples=60, deadline=None)
        @given(keys())
        def check(key):
            _same(key)

        check()
        key = ("pkg/a.py", 10, ("x = 1\n",), ("x = 2\n",), ("def f():\n",), ("    return x\n",))
        assert diff_render.body_content(key).spans == Content.from_rich_text(diff_render.hunk_body(*key)).spans


def test_a_language_pygments_lacks_takes_the_rich_path():
    key = ("notes.unknown-ext", 3, ("old words\n",), ("new words\n",), (), ())
    lexer = diff_render._lexer(diff_render._lexer_for(key[0]))
    if not isinstance(lexer, diff_render.Lexer):
        assert diff_render._body_spans(key) is None
    _same(key)


@settings(max_examples=200, deadline=None)
@given(keys(), st.integers(1, 160), st.sampled_from(["", "\t", "x" * 200, "漢字" * 40]))
def test_a_hunks_height_measured_without_wrapping_is_get_heights(key, width, extra):
    """measure_height == Content.get_height at default rules, any width (lines wider than it,
    tabs and wide characters take Textual's own wrap)."""
    key = (*key[:3], (*key[3], extra + "\n"), *key[4:])
    made = diff_render._body_spans(key)
    content = Content.from_rich_text(diff_render.hunk_body(*key)) if made is None else diff_render._content_of(*made)
    expected = Content(content.plain, list(content.spans)).get_height({}, width)
    assert diff_render.measure_height(content, width) == expected
    assert content.get_height({}, width) == expected  # the cache it leaves is get_height's


def test_heights_at_the_edge_of_the_width():
    """Lines one cell shorter than, as wide as and one cell wider than the width; words, blanks
    at the end, wide characters, one long word."""
    for width in (8, 20, 33):
        for text in ("a" * (width - 1), "a" * width, "a" * (width + 1), "ab " * (width // 3 + 1),
                     "x = 1" + " " * width, "漢" * (width // 2) + "z", "word " * width):
            content = Content(f"{text}\n{text[:3]}\n")
            expected = Content(content.plain).get_height({}, width)
            assert diff_render.measure_height(content, width) == expected, (width, text)


@st.composite
def written_lines(draw) -> str:
    """A line of the block being written: a real line of this project or an awkward one."""
    if draw(st.booleans()):
        path = draw(st.sampled_from(FILES))
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines() or [""]
        return draw(st.sampled_from(lines))
    return draw(st.sampled_from(AWKWARD)).rstrip("\n")


def _pending_same(path: str, prefix: str, line: str) -> None:
    lexer = diff_render._lexer_for(path)
    bg = diff_render.ADD_BG if prefix == "+" else diff_render.DEL_BG
    diff_render._PENDING_LINES.clear()
    got = diff_render._pending_line(lexer, prefix, bg, line, None)
    expected = Content.from_rich_text(diff_render._pending_line_text(lexer, prefix, bg, line))
    assert (got.plain, got.spans) == (expected.plain, expected.spans)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(PATHS), st.sampled_from(["+", "-"]), written_lines())
def test_a_written_line_from_tokens_is_the_rich_paths(path, prefix, line):
    """The block being written, line by line (DiffView.set_pending on the UI thread)."""
    _pending_same(path, prefix, line)


async def test_a_written_line_in_an_apps_theme_too():
    app = App()
    async with app.run_test():
        for line in ["def f(x):  # note", "", "    return 'a'   ", "a\rb", "漢字 = 1", "\tx = 2"]:
            for path in ("pkg/a.py", "docs/b.md", "Makefile"):
                _pending_same(path, "+", line)


def test_hunk_headers_convert_as_from_rich_text():
    """Every state, badge and reason (and a refused hunk's red line): the header's content is
    Content.from_rich_text of its Rich Text."""
    from tests.tui.test_diff_incremental import BADGES, REASONS, STATES, FakeHunk

    for path in PATHS:
        hunk = FakeHunk("h", path, 120, ["a\n"], ["b\n"])
        for state in [*STATES, "pending", "accepted"]:
            for badges in [*BADGES, "[F821] dup slop [syntax]"]:
                for reason in REASONS:
                    head = diff_render.hunk_head(hunk, state, 3, 47, badges, reason)
                    got, expected = diff_render.head_content(head), Content.from_rich_text(head)
                    assert (got.plain, got.spans) == (expected.plain, expected.spans)
