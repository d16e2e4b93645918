"""The diff view draws incrementally: it must draw exactly what a full render draws.

DiffView.sync inserts only new hunks' blocks and draws again only hunks whose header, state,
badges, reason or context changed; a hunk's highlighted lines come from a cache and are
converted to Textual content once, only its header again (issue 14: an answer of 47 hunks was
re-highlighted in full for every review and verify badge, 60-116 ms on the UI thread each
time). The properties: a cached render is the uncached composition, and any sequence of syncs
leaves the same blocks, in the same order, with the same text and current marker as one sync
of the last state into a fresh view (with lines highlighted and converted in a worker thread
or on the UI thread), each hunk drawing what its whole content (header and lines joined)
draws.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.text import Text
from textual.app import App, ComposeResult
from textual.content import Content
from textual.visual import RenderOptions

from tui.widgets import diff_render
from tui.widgets.diff_render import context_lines, diff_lines, hunk_header, render_hunk, warm_bodies
from tui.widgets.diff_view import DiffView, Kind

LINES = ["def f(x):\n", "    return x  # " + "a long line that wraps at narrow widths " * 3 + "\n", '    """doc"""\n', "", "    y = [1, 2]  # note\n", "import os\n",
         "x = 'a\n", "class C:\n"]
PATHS = ["pkg/a.py", "web/b.js", "notes.txt"]
STATES = ["undecided", "chosen", "written", "rejected", "stale", "refused"]
BADGES = ["", "[F821]", "dup", "slop [syntax]"]
REASONS = ["", "its file changed on disk under it"]


@dataclass
class FakeHunk:
    id: str
    path: str
    old_start: int
    old_lines: list[str]
    new_lines: list[str]


def reference_render(hunk, state: str, index: int, total: int, badges: str,
                     context: tuple[list[str], list[str]], reason: str) -> Text:
    """render_hunk as it was before the cache: every line highlighted on every call."""
    before, after = context
    text = hunk_header(hunk.path, state, index, total, hunk.old_start, badges)
    text.append("\n")
    if reason:
        text.append(f"  ! {reason}\n", style="bold red" if state == "refused" else "magenta")
    text.append_text(context_lines(hunk.path, before, hunk.old_start - len(before)))
    text.append_text(diff_lines(hunk.path, list(hunk.old_lines), list(hunk.new_lines), start=hunk.old_start))
    text.append_text(context_lines(hunk.path, after, hunk.old_start + len(hunk.old_lines)))
    return text


def same(a: Text, b: Text) -> bool:
    return (a.plain, a.spans, a.style) == (b.plain, b.spans, b.style)


lines = st.lists(st.sampled_from(LINES), max_size=4)
hunks = st.builds(FakeHunk, id=st.sampled_from([f"h{i}" for i in range(8)]), path=st.sampled_from(PATHS),
                  old_start=st.integers(1, 40), old_lines=lines, new_lines=lines)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(hunks, st.sampled_from(STATES), st.integers(1, 9), st.integers(1, 9),
                          st.sampled_from(BADGES), st.tuples(lines, lines), st.sampled_from(REASONS)),
                min_size=1, max_size=12))
def test_cached_render_is_the_uncached_render(calls):
    for call in calls:  # the same hunk again hits the cache; it must not have been altered
        assert same(render_hunk(*call), reference_render(*call))
        assert same(render_hunk(*call), reference_render(*call))


# one state of the answer as the app passes it to DiffView.sync
@dataclass
class Shown:
    hunks: list[FakeHunk]
    states: dict[str, str]
    badges: dict[str, str]
    contexts: dict[str, tuple[list[str], list[str]]]
    reasons: dict[str, str]
    select: int


POOL = {f"h{i}": FakeHunk(f"h{i}", PATHS[i % 3], 3 * i + 1, [LINES[i % 8]], [LINES[(i + 3) % 8]])
        for i in range(8)}


@st.composite
def shown_sequences(draw) -> list[Shown]:
    """States one after another, each changing a few things of the last: hunks come, go
    and move, and each hunk's state, badges, context or reason may change alone."""
    out: list[Shown] = []
    for _ in range(draw(st.integers(1, 6))):
        last = out[-1] if out else Shown([], {}, {}, {}, {}, 0)
        ids = [h.id for h in last.hunks]
        if not ids or draw(st.booleans()):
            ids = draw(st.lists(st.sampled_from(sorted(POOL)), unique=True, max_size=8))
            ids = draw(st.permutations(ids))  # a re-diff may insert a hunk above others

        def pick(field: dict, hid: str, values: st.SearchStrategy):
            if hid in field and draw(st.integers(0, 3)) != 0:
                return field[hid]  # mostly unchanged
            return draw(values)

        out.append(Shown(
            hunks=[POOL[i] for i in ids],
            states={i: pick(last.states, i, st.sampled_from(STATES)) for i in ids},
            badges={i: pick(last.badges, i, st.sampled_from(BADGES)) for i in ids},
            contexts={i: pick(last.contexts, i, st.tuples(lines, lines)) for i in ids},
            reasons={i: pick(last.reasons, i, st.sampled_from(REASONS)) for i in ids},
            select=draw(st.integers(0, 8)),
        ))
    return out


class Host(App):
    def compose(self) -> ComposeResult:
        yield DiffView(id="incremental")
        yield DiffView(id="fresh")


def drawn(view: DiffView) -> list[tuple[str, str, list, bool]]:
    """Each hunk block in the order drawn: id, text, spans, and whether it is marked current."""
    out = []
    for block in view._blocks:
        if block.kind is Kind.HUNK:
            assert block.head is not None
            content = block.head + block.body
            out.append((block.id, content.plain, list(content.spans), block.id == view._marked))
    return out


def plain_segments(strips) -> list[list[tuple]]:
    """Lines as (text, style) per segment, without the mouse offsets (a selection's meta)."""
    return [[(seg.text, seg.style.clear_meta_and_links() if seg.style else None) for seg in strip]
            for strip in strips]


def hunk_lines(view: DiffView, hunk_id: str) -> tuple[list, list]:
    """The lines the view draws for a hunk (its header and lines kept apart), and the lines its
    whole content draws in the same frame."""
    block = view._hunks[hunk_id]
    assert block.head is not None
    top = view.hunk_region(hunk_id).y
    frame = view._frame(Kind.HUNK, hunk_id == view._marked)
    got = [view._line(top + at) for at in range(block.height - frame.gap)]
    rules: object = view.styles
    whole = (block.head + block.body).render_strips(view._width, None, frame.style,
                                                     RenderOptions(view._get_style, rules, None, None))  # type: ignore[arg-type]
    return plain_segments(got), plain_segments(frame.frame(whole, view._width))


async def _compare(sequence: list[Shown]) -> None:
    app = Host()
    diff_render._CONTENT.clear()  # converted afresh: some in a worker thread, as the app does
    async with app.run_test(size=(100, 40)) as pilot:
        incremental = app.query_one("#incremental", DiffView)
        for step, shown in enumerate(sequence):
            if step % 2 == 0:
                await asyncio.to_thread(warm_bodies, shown.hunks, shown.contexts)
            incremental.sync(shown.hunks, shown.states, shown.badges, shown.contexts, shown.reasons)
            incremental.select(shown.select)
            await pilot.pause()
        last = sequence[-1]
        fresh = app.query_one("#fresh", DiffView)
        fresh.sync(last.hunks, last.states, last.badges, last.contexts, last.reasons)
        fresh.select(last.select)
        await pilot.pause()
        assert drawn(incremental) == drawn(fresh)
        assert incremental.current_id == fresh.current_id
        # each hunk takes its whole content's height (a header change that keeps the header's
        # height keeps the lines under it) plus the blank line under it, and draws what its
        # whole content draws (the view draws the head and the kept lines apart)
        for view in (incremental, fresh):
            for hunk_id in view._order:
                block = view._hunks[hunk_id]
                assert block.head is not None
                whole = block.head + block.body
                assert block.height == whole.get_height(view.styles, view._width) + 1, hunk_id
                assert view.hunk_text(hunk_id) == whole.plain
                for _ in range(2):  # the second time from the kept strips
                    got, want = hunk_lines(view, hunk_id)
                    assert got == want, hunk_id
        total = len(last.hunks)
        for index, (hunk, (hid, plain, spans, _)) in enumerate(zip(last.hunks, drawn(fresh), strict=True), 1):
            # what a Static drew from the whole Text, converted at once
            full = Content.from_rich_text(reference_render(hunk, last.states[hid], index, total,
                                                           last.badges[hid], last.contexts[hid],
                                                           last.reasons[hid]))
            assert (hid, plain, spans) == (hunk.id, full.plain, list(full.spans))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shown_sequences())
def test_any_sequence_of_syncs_draws_what_one_full_sync_draws(sequence):
    asyncio.run(_compare(sequence))


async def test_notes_prose_and_verify_panel_skip_an_update_that_changes_nothing():
    """The same content again is not drawn again (an answer's start set notes, prose and the
    verify panel again with what they already showed): each Static.update of the panel asks
    for a layout of the whole screen, and each block set anew repaints its lines."""
    from core.verify.verifier import Scope, ScopeReport
    from tui.widgets.verify_panel import VerifyPanel

    class PanelHost(App):
        def compose(self) -> ComposeResult:
            yield DiffView()
            yield VerifyPanel()

    app = PanelHost()
    async with app.run_test(size=(100, 40)) as pilot:
        diff, panel = app.query_one(DiffView), app.query_one(VerifyPanel)
        updates: list[str] = []
        real_set = diff._set_content

        def counted_set(block, content):
            updates.append(block.id.lstrip("#"))
            real_set(block, content)

        diff._set_content = counted_set  # type: ignore[method-assign]
        real_update = panel.update

        def counted(content="", *, layout=True):
            updates.append("VerifyPanel")
            real_update(content, layout=layout)

        panel.update = counted  # type: ignore[method-assign]
        report = ScopeReport(Scope.ANSWER)
        for _ in range(3):
            diff.set_notes(Text("> tidy", style="bold"))
            diff.set_prose("", False)
            diff.set_prose("I will tidy.\nThen test.", False)
            panel.show(report, None, fix_key="f")
            await pilot.pause()
        # notes and the panel once; prose alternates between two contents, so each call draws
        assert updates.count("notes") == 1 and updates.count("VerifyPanel") == 1
        assert updates.count("prose") == 6
        diff.set_notes(Text("> tidy", style="dim"))  # same words, another style: drawn
        assert updates.count("notes") == 2
        assert diff.prose_text.startswith("▸ the model says: I will tidy.")
