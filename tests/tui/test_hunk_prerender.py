"""Hunk lines rendered in the rebuild's thread draw what the diff view draws itself.

warm_bodies renders each new hunk's lines the way the diff view last drew a hunk that is not
current (its width, style and text rules), and a new hunk's block starts from those strips
instead of rendering them on the UI thread at its first paint. The property: for any hunks,
warmed in a thread at the view's width, each hunk draws what its whole content (head and
lines joined) draws, at its width and at others, current or not; and the warmed strips were
used, not rendered again.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult

from tests.tui.test_diff_incremental import LINES, PATHS, FakeHunk, hunk_lines
from tui.widgets import diff_render
from tui.widgets.diff_render import body_key, rendered_body, warm_bodies
from tui.widgets.diff_view import DiffView


class Host(App):
    def compose(self) -> ComposeResult:
        yield DiffView()


@st.composite
def hunk_lists(draw) -> list[FakeHunk]:
    lines = st.lists(st.sampled_from(LINES), max_size=4)
    return [FakeHunk(f"h{i}", draw(st.sampled_from(PATHS)), draw(st.integers(1, 900)), draw(lines), draw(lines))
            for i in range(draw(st.integers(2, 6)))]


async def _check(hunks: list[FakeHunk], contexts: dict, select: int) -> int:
    """Returns how many hunks were drawn from warmed strips alone."""
    app = Host()
    diff_render._STRIPS.clear()  # as in a new process: nothing warmed, no view drawn yet
    diff_render._TEMPLATE, DiffView.body_width = None, 0
    async with app.run_test(size=(90, 70)) as pilot:  # no scrollbar comes (2 columns less)
        view = app.query_one(DiffView)
        view.sync(hunks[:2], {}, {}, contexts)
        for _ in range(100):  # drawn: the view says how it draws a hunk that is not current
            await pilot.pause(0.01)
            if diff_render._TEMPLATE is not None and DiffView.body_width:
                break
        await asyncio.to_thread(warm_bodies, hunks, contexts, DiffView.body_width)
        view.sync(hunks, {}, {}, contexts)
        view.select(select)
        await pilot.pause()
        used = 0  # hunks drawn from their warmed strips alone (no render of their own)
        for hunk_id in view._order:
            got, want = hunk_lines(view, hunk_id)  # drawn: the current one too
            assert got == want, hunk_id
        for block in view._hunks.values():
            seed = rendered_body(block.body_key or ())
            kept = block.strips.strips
            used += seed is not None and list(kept) == [seed[0]] and kept[seed[0]] is seed[1]
        return used


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hunk_lists(), st.data())
def test_warmed_hunks_draw_what_their_whole_content_draws(hunks, data):
    context = st.tuples(st.lists(st.sampled_from(LINES), max_size=2), st.lists(st.sampled_from(LINES), max_size=2))
    contexts = {h.id: data.draw(context) for h in hunks}
    asyncio.run(_check(hunks, contexts, data.draw(st.integers(0, len(hunks) - 1))))


def test_the_warmed_strips_are_used():
    """Not vacuous: the hunks that arrive after the first two, not current, are drawn from
    the strips warmed in the thread, with no render of their own."""
    hunks = [FakeHunk(f"h{i}", "pkg/a.py", 10 + 30 * i, [f"    x = {i}\n"], [f"    y = {i}\n", "    z = 1\n"])
             for i in range(5)]
    contexts = {h.id: (["def f():\n"], ["    return 1\n"]) for h in hunks}
    assert asyncio.run(_check(hunks, contexts, 0)) == len(hunks) - 2


def test_only_hunks_near_the_current_one_are_rendered_ahead():
    """The thread renders the lines of the hunks that j/k bring into view next, not all of an
    answer's hunks (most never painted: its CPU is the GIL the UI thread waits for)."""
    hunks = [FakeHunk(f"h{i}", "pkg/a.py", 10 + 30 * i, [f"    x = {i}\n"], [f"    y = {i}\n"]) for i in range(20)]
    contexts = {h.id: ([], []) for h in hunks}

    async def run() -> None:
        app = Host()
        diff_render._STRIPS.clear()
        diff_render._TEMPLATE, DiffView.body_width = None, 0
        async with app.run_test(size=(90, 30)) as pilot:
            view = app.query_one(DiffView)
            view.sync(hunks, {}, {}, contexts)
            for _ in range(100):
                await pilot.pause(0.01)
                if diff_render._TEMPLATE is not None and DiffView.body_width:
                    break
            for current, near, far in ((0, [1, 9], [12, 15]), (14, [12, 15, 19], [3, 9])):
                view.select(current)
                diff_render._STRIPS.clear()
                await asyncio.to_thread(warm_bodies, hunks, contexts, DiffView.body_width)
                assert all(rendered_body(body_key(hunks[i], ([], []))) is not None for i in near), current
                assert all(rendered_body(body_key(hunks[i], ([], []))) is None for i in far), current

    asyncio.run(run())
