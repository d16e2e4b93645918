"""What the diff view paints after any sequence of syncs and moves is what a fresh view paints.

A sync repaints only the lines on screen whose block, line or look changed (a header that
changed and kept its height repaints the header's lines: a new hunk changes every hunk's
"i/total" while an answer streams); the other lines come from Textual's per-line cache of the
last paint, and each block keeps its framed lines. The properties: the lines the view paints
(cached and repainted together, its border included) are the lines a fresh view of the last
state paints at the same scroll; every line of the whole diff (kept per block) is a fresh
view's; and the current-hunk marker is on exactly the selected hunk, on screen.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.geometry import Region

from tests.tui.test_diff_incremental import (
    LINES,
    PATHS,
    FakeHunk,
    Shown,
    plain_segments,
    shown_sequences,
)
from tui.widgets.diff_view import DiffView, Kind


class TwoViews(App):
    def compose(self) -> ComposeResult:
        yield DiffView(id="incremental")
        yield DiffView(id="fresh")


def painted(view: DiffView) -> list[list[tuple]]:
    """Every line of the whole diff as the view draws it (text and style of every segment)."""
    lines = [view._line(y) for y in range(view.virtual_size.height)]
    return plain_segments([line if line is not None else [] for line in lines])  # ([]: under no block)


def on_screen(view: DiffView) -> list[str]:
    """The view's lines as the screen gets them: Textual's kept lines and the repainted ones
    (inside its border: one of the two views has the focus)."""
    width, height = view.outer_size
    return [repr(line) for line in plain_segments(view.render_lines(Region(1, 1, width - 2, height - 2)))]


def check_marker(view: DiffView, visible: bool) -> None:
    """Exactly the selected hunk is marked (drawn with the current style) and, when asked,
    inside the scrolled window."""
    marked = [block.id for block in view._blocks if block.kind is Kind.HUNK and block.id == view._marked]
    assert marked == ([view.current_id] if view.current_id else [])
    if view.current_id:
        top = view.hunk_region(view.current_id).y
        current = view._frame(Kind.HUNK, True)
        line = view._line(top)
        assert line is not None and next(iter(line)) == current.left
        if visible:
            region = view.hunk_region(view.current_id)
            window_top, window = int(view.scroll_y), view.scrollable_content_region.height
            if region.height <= window:
                assert window_top <= region.y and region.bottom <= window_top + window, (region, window_top)
            else:  # taller than the window: its top is shown
                assert window_top <= region.y < window_top + window, (region, window_top)


async def _paint(sequence: list[Shown], moves: list[int]) -> None:
    app = TwoViews()
    async with app.run_test(size=(90, 44)) as pilot:
        incremental = app.query_one("#incremental", DiffView)
        for step, shown in enumerate(sequence):
            incremental.sync(shown.hunks, shown.states, shown.badges, shown.contexts, shown.reasons)
            incremental.select(shown.select)
            await pilot.pause(0.04)  # painted here: the next header change repaints only its lines
            mine = moves[step::len(sequence)]
            for move in mine:
                incremental.select(incremental.current + move)
            await pilot.pause()
            check_marker(incremental, visible=False)  # (a move in the tick that mounts hunks has
            # no region to scroll to yet: visibility is checked below, hunks laid out)
        last = sequence[-1]
        fresh = app.query_one("#fresh", DiffView)
        fresh.sync(last.hunks, last.states, last.badges, last.contexts, last.reasons)
        await pilot.pause()
        fresh.select(incremental.current)
        await pilot.pause()
        check_marker(fresh, visible=True)
        assert incremental.current_id == fresh.current_id
        assert painted(incremental) == painted(fresh)
        fresh.scroll_to(y=incremental.scroll_y, animate=False, immediate=True)
        await pilot.pause()
        assert on_screen(incremental) == on_screen(fresh)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shown_sequences(), st.lists(st.sampled_from([1, -1, 2]), max_size=10))
def test_any_syncs_and_moves_paint_what_a_fresh_view_paints(sequence, moves):
    asyncio.run(_paint(sequence, moves))


async def test_hunks_arriving_one_by_one_then_moves_paint_what_a_fresh_view_paints():
    """As an answer streams: each new hunk changes every header's "i/total" (repainted as the
    header's lines only); then j/k through all of them, each move showing the marked hunk."""
    pool = [FakeHunk(f"h{i}", PATHS[i % 3], 10 * i + 1, [LINES[i % 8], LINES[(i + 1) % 8]],
                     [LINES[(i + 3) % 8], LINES[(i + 5) % 8]]) for i in range(14)]
    contexts = {h.id: ([LINES[0]], [LINES[2], LINES[4]]) for h in pool}
    app = TwoViews()
    async with app.run_test(size=(90, 44)) as pilot:
        incremental = app.query_one("#incremental", DiffView)
        partial: list[int] = []  # lines repainted per sync
        for n in range(1, len(pool) + 1):
            before = incremental.repainted
            incremental.sync(pool[:n], {}, {}, contexts)
            partial.append(incremental.repainted - before)
            await pilot.pause()
            await pilot.pause(0.04)  # a frame paints it: the next change is partial
        window = incremental.scrollable_content_region.height
        assert 0 < min(partial[3:]) and max(partial[3:]) < window / 2, \
            ("header changes repainted only the header's lines", partial)
        fresh = app.query_one("#fresh", DiffView)
        fresh.sync(pool, {}, {}, contexts)
        await pilot.pause()
        assert painted(incremental) == painted(fresh)  # before any move repaints a hunk whole
        assert on_screen(incremental) == on_screen(fresh)
        for move in [1] * (len(pool) + 1) + [-1] * 5 + [3, -2]:
            incremental.select(incremental.current + move)
            await pilot.pause()
            check_marker(incremental, visible=True)
        fresh.select(incremental.current)
        await pilot.pause()
        assert painted(incremental) == painted(fresh)
        fresh.scroll_to(y=incremental.scroll_y, animate=False, immediate=True)
        await pilot.pause()
        assert on_screen(incremental) == on_screen(fresh)
