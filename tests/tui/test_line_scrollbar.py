"""The diff view's scrollbar repaints only the lines that change: it must paint what a fresh
paint of it paints.

LineScrollBar narrows a repaint of the whole bar (a scroll, a new virtual height as hunks
arrive) to the lines whose segments differ from the last requested state, when nothing else
it is drawn from changed. The property: after any sequence of syncs, moves, scrolls, resizes,
theme changes, hover and focus changes, the bar's lines (Textual's kept lines and the
repainted ones) are what it paints with nothing kept; and moves are narrowed, not vacuous.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.geometry import Region

from tests.tui.diff_view_steps import Host, apply_step, segments
from tests.tui.test_diff_incremental import FakeHunk
from tui.widgets.diff_view import DiffView
from tui.widgets.kept_lines import LineScrollBar

HUNKS = [FakeHunk(f"h{i}", f"pkg/m{i % 3}.py", 10 + 20 * i, [f"    x = {i}\n"] * (1 + i % 4),
                  [f"    y = {i}\n", "    z = 1\n"]) for i in range(16)]

steps = st.one_of(
    st.tuples(st.just("sync"), st.integers(0, len(HUNKS))),
    st.tuples(st.just("select"), st.integers(0, len(HUNKS))),
    st.tuples(st.just("scroll"), st.integers(0, 120)),
    st.tuples(st.just("resize"), st.sampled_from([(80, 30), (60, 20), (100, 40)])),
    st.tuples(st.just("theme"), st.sampled_from(["textual-dark", "textual-light"])),
    st.tuples(st.just("hover"), st.booleans()),
    st.tuples(st.just("focus"), st.sampled_from(["diff", "input"])),
)


async def _run(sequence: list[tuple]) -> int:
    """Runs the steps, comparing the bar after each; returns how many refreshes were narrowed."""
    app = Host()
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one(DiffView)
        bar = view.vertical_scrollbar
        assert isinstance(bar, LineScrollBar)
        for step, arg in sequence:
            await apply_step(app, pilot, HUNKS, step, arg)
            width, height = bar.outer_size
            if not (bar.display and width and height):
                continue
            whole = Region(0, 0, width, height)
            painted = bar.render_lines(whole)  # kept lines, and any still to repaint
            bar._set_dirty()  # nothing kept
            assert segments(painted) == segments(bar.render_lines(whole)), (step, arg)
        return bar.partial


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(steps, min_size=1, max_size=14))
def test_the_bar_paints_what_a_fresh_paint_paints(sequence):
    asyncio.run(_run(sequence))


def test_moves_repaint_only_changed_lines():
    """Not vacuous: moving through the hunks narrows the bar's repaints."""
    sequence = [("sync", len(HUNKS))] + [("select", n) for n in range(len(HUNKS))]
    assert asyncio.run(_run(sequence)) >= len(HUNKS) // 2
