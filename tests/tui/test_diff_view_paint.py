"""What the diff view paints after any sequence of syncs and moves is what a fresh view paints.

HunkView.show repaints only a hunk's header lines when the header changed and kept its height
(a new hunk changes every hunk's "i/total" while an answer streams): the lines under it come
from Textual's per-line cache of the last paint. The property: the lines each hunk paints (cache
and repainted lines together, border and marker included) are the lines a fresh view of the
last state paints, and the current-hunk marker is on exactly the selected hunk, on screen.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.geometry import Region

from tests.tui.test_diff_incremental import LINES, PATHS, FakeHunk, Shown, shown_sequences
from tui.widgets.diff_view import DiffView, HunkView


class TwoViews(App):
    def compose(self) -> ComposeResult:
        yield DiffView(id="incremental")
        yield DiffView(id="fresh")


def painted(view: DiffView) -> list[tuple[str, list[list[tuple[str, object]]]]]:
    """Each hunk's painted lines (text and style of every segment), as the screen gets them."""
    out = []
    for hunk in view.query(HunkView):
        width, height = hunk.size
        lines = hunk.render_lines(Region(0, 0, width, height))
        out.append((hunk.hunk_id, [[(seg.text, seg.style) for seg in strip] for strip in lines]))
    return out


def check_marker(view: DiffView, visible: bool) -> None:
    """Exactly the selected hunk is marked and, when asked, inside the scrolled window."""
    marked = [h.hunk_id for h in view.query(HunkView) if h.has_class("-current")]
    assert marked == ([view.current_id] if view.current_id else [])
    if visible and view.current_id:
        hunk = next(h for h in view.query(HunkView) if h.hunk_id == view.current_id)
        window = view.scrollable_content_region
        region = hunk.region
        if region.height <= window.height:
            assert window.contains_region(region), (region, window)
        else:  # taller than the window: its top is shown
            assert window.contains(region.x, region.y), (region, window)


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
        partial: list[int] = []
        real = HunkView.refresh

        def counted(self, *regions, **kwargs):
            if regions:
                partial.append(1)
            return real(self, *regions, **kwargs)

        HunkView.refresh = counted  # type: ignore[method-assign]
        try:
            for n in range(1, len(pool) + 1):
                incremental.sync(pool[:n], {}, {}, contexts)
                await pilot.pause()
                await pilot.pause(0.04)  # a frame paints it: the next change is partial
        finally:
            HunkView.refresh = real  # type: ignore[method-assign]
        assert partial, "header changes repainted only the header's lines"
        fresh = app.query_one("#fresh", DiffView)
        fresh.sync(pool, {}, {}, contexts)
        await pilot.pause()
        assert painted(incremental) == painted(fresh)  # before any move repaints a hunk whole
        for move in [1] * (len(pool) + 1) + [-1] * 5 + [3, -2]:
            incremental.select(incremental.current + move)
            await pilot.pause()
            check_marker(incremental, visible=True)
        fresh.select(incremental.current)
        await pilot.pause()
        assert painted(incremental) == painted(fresh)
