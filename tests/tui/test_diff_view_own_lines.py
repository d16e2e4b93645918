"""The diff view's lines are kept between paints: they must be the lines drawn afresh.

The view is one line-API widget: it refreshes only the lines on screen that changed (a sync,
a header, the marker) or all of them when it scrolls; each block keeps its framed lines per
width, marker and styles, and the view keeps each whole row (border edges, line filters) per
content line (DiffView.render_lines), where Textual's styles cache keeps rows by position.
The property: after any sequence of syncs, moves, scrolls, focus changes, resizes, theme
changes and border labels, the rows the view gives (whole and cropped) are what Textual's
styles cache draws for it, and what it draws itself, with every cache emptied.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.geometry import Region
from textual.widget import Widget

from tests.tui.diff_view_steps import Host, apply_step, segments
from tests.tui.test_diff_incremental import FakeHunk, plain_segments
from tui.widgets.diff_view import DiffView

HUNKS = [FakeHunk(f"h{i}", f"pkg/m{i % 3}.py", 10 + 20 * i, [f"    x = {i}\n"], [f"    y = {i}\n", "    z = 1\n"])
         for i in range(8)]

steps = st.one_of(
    st.tuples(st.just("sync"), st.integers(0, len(HUNKS))),
    st.tuples(st.just("select"), st.integers(0, len(HUNKS))),
    st.tuples(st.just("scroll"), st.integers(0, 60)),
    st.tuples(st.just("focus"), st.sampled_from(["diff", "input"])),
    st.tuples(st.just("resize"), st.sampled_from([(80, 30), (60, 24), (100, 40)])),
    st.tuples(st.just("theme"), st.sampled_from(["textual-dark", "textual-light", "nord"])),
    st.tuples(st.just("border"), st.sampled_from(["", "the answer"])),
)


async def _run(sequence: list[tuple]) -> list[tuple]:
    """Runs the steps, comparing after each; returns the steps whose paints made fewer rows
    anew than the window holds (the others kept)."""
    app = Host()
    kept = []
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one(DiffView)
        for step, arg in sequence:
            drawn = view.rows_drawn
            bar = view.show_vertical_scrollbar
            await apply_step(app, pilot, HUNKS, step, arg)
            if view.rows_drawn - drawn < view.scrollable_content_region.height or \
                    bar != view.show_vertical_scrollbar:
                kept.append((step, arg))  # (the scrollbar shown or hidden: a layout draws all)
            width, height = view.outer_size  # the border's lines too
            for crop in (Region(0, 0, width, height), Region(2, 1, max(0, width - 5), max(0, height - 3))):
                given_lines = view.render_lines(crop)
                view._styles_cache.clear()
                for block in view._blocks:
                    block.framed.clear()
                    block.strips.strips.clear()
                view._frames.clear()
                view._rows.clear()
                # what Textual's styles cache draws for the view, every cache empty (its lines carry
                # the mouse offsets of text selection: render_line; the rows drawn do not)
                assert plain_segments(given_lines) == plain_segments(Widget.render_lines(view, crop)), (step, arg)
                assert segments(given_lines) == segments(view.render_lines(crop)), (step, arg)
    return kept


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(steps, min_size=1, max_size=12))
def test_the_kept_lines_are_the_lines_drawn_afresh(sequence):
    asyncio.run(_run(sequence))


def test_the_lines_are_kept_while_hunks_arrive_and_the_view_scrolls():
    """Not vacuous: hunks arriving and moves make fewer rows anew than the window holds (each
    hunk mounted cleared the old view's lines); a move that scrolls to hunks not yet drawn
    makes their rows."""
    sequence = [("sync", n) for n in range(1, len(HUNKS) + 1)] + [("select", n) for n in range(len(HUNKS))]
    kept = asyncio.run(_run(sequence))
    assert [step for step in sequence if step[0] == "sync"] == [step for step in kept if step[0] == "sync"]
    assert len(kept) > len(HUNKS) + 2, kept  # and the moves that do not scroll
