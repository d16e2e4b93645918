"""A hunk is laid out on its plain lines and highlighted only when it may be painted.

warm_bodies (the rebuild's thread) highlighted and converted every hunk's lines (~2 ms each,
92 ms of CPU for a 47-hunk answer, under the GIL the UI thread needs) mostly so that each
HunkView knew its wrapped height at layout. Now a hunk is measured on its plain text
(measure_content) and highlighted near the current hunk or at its first paint. The
properties: over lines of real files (this repository's) and awkward ones (tabs, wide
characters, trailing blanks, form feeds, byte-order marks), the plain text is the highlighted
text exactly or is not used (the highlighted content measures itself), so the height is the
same at every width and text rule; and a hunk the thread did not highlight is laid out at
its eager height without being highlighted, then draws what the eagerly highlighted whole
hunk draws, once scrolled to.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.content import Content
from textual.visual import Visual

from tests.tui.test_diff_incremental import FakeHunk
from tui.widgets import diff_render
from tui.widgets.diff_render import (
    body_content,
    body_key,
    cached_body,
    measure_content,
    plain_body,
    render_hunk,
)
from tui.widgets.diff_view import DiffView, HunkView

ROOT = Path(__file__).resolve().parents[2]


def _real_lines() -> list[str]:
    """Distinct lines of this repository's own sources and docs (kept ends, as files give them)."""
    seen: dict[str, None] = {}
    files = sorted([*ROOT.glob("core/**/*.py"), *ROOT.glob("tui/**/*.py"), *ROOT.glob("*.md"), *ROOT.glob("*.toml")])
    for path in files[:80]:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            seen.setdefault(line)
    return list(seen)


REAL = _real_lines()
AWKWARD = ["\tindented = 1\n", "x = 1\t# tab\n", "名前 = '値'  # 全角\n", "emoji = '🎉🎉'\n", "trailing = 1   \n",
           "   \n", "\n", "", "form\x0cfeed\n", "\ufeffbom = 1\n", "cr = 1\r\n", "e\u0301 = 'combining'\n",
           "zwj = '👩\u200d💻'\n", "x" * 130 + "\n", "    " + "word " * 40 + "\n", "no newline at end"]
PATHS = ["pkg/a.py", "web/b.js", "notes.txt", "README.md", "Makefile", "x.rs"]
lines_of = st.lists(st.one_of(st.sampled_from(REAL), st.sampled_from(AWKWARD)), max_size=6)


@st.composite
def keys(draw) -> tuple:
    hunk = FakeHunk("h", draw(st.sampled_from(PATHS)), draw(st.integers(1, 120_000)), draw(lines_of), draw(lines_of))
    return body_key(hunk, (draw(lines_of), draw(lines_of)))


@settings(max_examples=150, deadline=None)
@given(keys(), st.lists(st.integers(1, 160), min_size=1, max_size=6),
       st.sampled_from([{}, {"text_wrap": "nowrap"}, {"text_overflow": "ellipsis"}, {"line_pad": 1}]))
def test_the_plain_lines_measure_what_the_highlighted_lines_measure(key, widths, rules):
    plain = plain_body(key)
    highlighted = body_content(key)
    if plain is not None:
        assert plain == cached_body(key).plain == highlighted.plain
    measure = measure_content(key)
    assert measure.plain == highlighted.plain
    for width in widths:
        assert measure.get_height(rules, width) == highlighted.get_height(rules, width)  # type: ignore[arg-type]


def test_plain_measuring_is_taken_for_real_lines_and_refused_where_it_could_differ():
    """Not vacuous: real code is measured on plain text; a tab, a carriage return, a form feed
    or a byte-order mark sends the hunk to its highlighted content."""
    hunk = FakeHunk("h", "pkg/a.py", 10, REAL[100:104], REAL[200:205])
    assert plain_body(body_key(hunk, (REAL[:2], REAL[5:7]))) is not None
    assert plain_body(body_key(hunk, (["名前 = 1\n"], ["🎉\n"]))) is not None
    for odd in ("\tx = 1\n", "cr\r\n", "a\x0cb\n", "\ufeffx\n"):
        key = body_key(FakeHunk("h", "pkg/a.py", 10, [odd], []), ([], []))
        assert plain_body(key) is None
        assert measure_content(key) is body_content(key)


class Host(App):
    def compose(self) -> ComposeResult:
        yield DiffView()


def _strips(view: HunkView, visual: object, width: int) -> list[str]:
    return [repr(list(strip)) for strip in Visual.to_strips(view, visual, width, None, view.visual_style)]  # type: ignore[arg-type]


async def _lazy(hunks: list[FakeHunk], contexts: dict) -> None:
    diff_render._CONTENT.clear()
    diff_render._STRIPS.clear()
    diff_render._cached_body.cache_clear()
    app = Host()
    async with app.run_test(size=(90, 30)) as pilot:
        view = app.query_one(DiffView)
        view.sync(hunks[:1], {}, {}, contexts)
        for _ in range(100):
            await pilot.pause(0.01)
            if HunkView.body_width:
                break
        near = frozenset(h.id for h in hunks[:10])
        diff_render.set_view_window(near, frozenset(h.id for h in hunks))  # as a view holding them all
        await asyncio.to_thread(diff_render.warm_bodies, hunks, contexts, HunkView.body_width)
        far = [h for h in hunks if h.id not in near]
        plain = [h for h in far if plain_body(body_key(h, contexts[h.id])) is not None]  # (a tab: highlighted
        assert plain  # to be measured)
        assert not any((body_key(h, contexts[h.id]), app.theme) in diff_render._CONTENT for h in plain)
        view.sync(hunks, {}, {}, contexts)
        await pilot.pause()
        await pilot.pause()
        views = {v.hunk_id: v for v in view.query(HunkView)}
        total = len(hunks)
        eager = {h.id: Content.from_rich_text(render_hunk(h, "undecided", i, total, "", contexts[h.id]))
                 for i, h in enumerate(hunks, 1)}
        for hunk in far:  # laid out, never painted: measured on plain text, not highlighted
            hunk_view = views[hunk.id]
            assert hunk_view._body_strips._body is None or hunk not in plain, hunk.id
            assert hunk_view.size.height == eager[hunk.id].get_height(hunk_view.styles, hunk_view.content_size.width)  # type: ignore[arg-type]
        for hunk in [hunks[0], *far]:  # each scrolled to: drawn as the eager whole draws
            view.select(hunks.index(hunk))
            await pilot.pause()
            hunk_view = views[hunk.id]
            assert hunk_view.size.height == eager[hunk.id].get_height(hunk_view.styles, hunk_view.content_size.width)  # type: ignore[arg-type]
            for width in (hunk_view.content_size.width, 23):
                assert _strips(hunk_view, hunk_view.visual, width) == _strips(hunk_view, eager[hunk.id], width)
        assert all(views[h.id]._body_strips._body is not None for h in far)  # painted now


def test_a_hunk_highlighted_at_its_first_paint_draws_what_the_eager_one_drew():
    """Twelve hunks of real lines (and awkward ones: tabs, wide characters), the view's window
    on the first ten: the last two are laid out unhighlighted, then scrolled to and drawn."""
    pool = REAL[::7] + AWKWARD
    hunks = [FakeHunk(f"h{i}", PATHS[i % 3], 1 + 40 * i, pool[5 * i:5 * i + 2] or ["x = 1\n"],
                      pool[5 * i + 2:5 * i + 4]) for i in range(len(pool) // 5 - 1)][-12:]
    assert len(hunks) == 12
    contexts = {h.id: (pool[3 * i:3 * i + 1], pool[3 * i + 1:3 * i + 3]) for i, h in enumerate(hunks)}
    hunks[-1].new_lines = AWKWARD[2:6]  # wide characters, trailing blanks far from the current hunk
    hunks[-2].new_lines = AWKWARD[:2]  # tabs: measured on the highlighted lines
    asyncio.run(_lazy(hunks, contexts))


def test_hunks_below_the_current_one_and_new_ones_are_highlighted_ahead():
    """A held j paints one hunk after another: those from just above the current hunk to the
    last, and hunks the view does not hold yet (they may land anywhere), are highlighted in
    the thread; only known hunks above the current one wait for their first paint."""
    hunks = [FakeHunk(f"h{i}", "pkg/a.py", 10 + 30 * i, [f"    x = {i}\n"], [f"    y = {i}\n"]) for i in range(20)]
    contexts = {h.id: ([], []) for h in hunks}
    diff_render._CONTENT.clear()
    diff_render.set_view_window(frozenset(h.id for h in hunks[10:15]), frozenset(h.id for h in hunks[:18]),
                                frozenset(h.id for h in hunks[10:18]))
    diff_render.warm_bodies(hunks, contexts, 0)
    highlighted = {i for i, h in enumerate(hunks) if (body_key(h, ([], [])), None) in diff_render._CONTENT}
    assert highlighted == set(range(10, 20))
