"""The diff view's own lines (border and background under the hunks) are kept between paints:
they must be the lines drawn afresh.

DiffView.render_lines keeps its lines while the size, styles, colours, border labels, opacity,
line filters and ANSI theme they are drawn from stay the same (each hunk mounted cleared the
widget's line cache and its ~48 lines were drawn again). The property: after any sequence of
syncs, moves, scrolls, focus changes, resizes and theme changes, the lines the view gives
(whole and cropped) are what Textual draws for it with an empty cache.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.geometry import Region
from textual.widget import Widget

from tests.tui.diff_view_steps import Host, apply_step, segments
from tests.tui.test_diff_incremental import FakeHunk
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


async def _run(sequence: list[tuple]) -> int:
    """Runs the steps, comparing after each; returns how many paints reused the kept lines."""
    app = Host()
    kept = 0
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one(DiffView)
        for step, arg in sequence:
            await apply_step(app, pilot, HUNKS, step, arg)
            kept += view._own_key == view._own_lines_key()
            width, height = view.outer_size  # the border's lines too
            for crop in (Region(0, 0, width, height), Region(2, 1, max(0, width - 5), max(0, height - 3))):
                given_lines = view.render_lines(crop)
                view._styles_cache.clear()
                assert segments(given_lines) == segments(Widget.render_lines(view, crop)), (step, arg)
    return kept


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(steps, min_size=1, max_size=12))
def test_the_kept_lines_are_the_lines_drawn_afresh(sequence):
    asyncio.run(_run(sequence))


def test_the_lines_are_kept_while_hunks_arrive_and_the_view_scrolls():
    """Not vacuous: hunks arriving and moves reuse the kept lines (each mount cleared them)."""
    sequence = [("sync", n) for n in range(1, len(HUNKS) + 1)] + [("select", n) for n in range(len(HUNKS))]
    assert asyncio.run(_run(sequence)) >= len(sequence) - 2
