"""What reaches the terminal after syncs, pending-block updates and moves is what a fresh view draws.

The view repaints only the lines on screen whose block, line or look changed (a hunk that
arrives below the window, or a header that changes out of view, repaints nothing; issue 14).
The property is about the terminal, not the view's lines: every update the app sends
(Textual's partial and full compositor updates) is applied to a grid of cells, as a terminal
applies it; after any sequence of hunk arrivals, re-diffs (hunks gone, moved, back), resets,
header changes, pending-block lines and j/k moves, ending on any hunk, the grid is the grid of
a fresh app that drew the last state once; and after each move the current hunk is on screen.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.segment import ControlType
from textual._compositor import CompositorUpdate
from textual.app import App, ComposeResult

from tests.tui.test_diff_incremental import LINES, PATHS, FakeHunk
from tui.widgets.diff_view import DiffView

SIZE = (80, 24)


@dataclass
class Pending:
    path: str
    stage: str
    search: str
    replace: str


class Terminal(App):
    """One diff view; every compositor update is applied to `cells` as a terminal would."""

    def __init__(self) -> None:
        super().__init__()
        self.cells = [[(" ", None)] * SIZE[0] for _ in range(SIZE[1])]

    def compose(self) -> ComposeResult:
        yield DiffView()

    def _display(self, screen, renderable) -> None:
        if isinstance(renderable, CompositorUpdate) and not self._batch_count:
            self._apply(renderable)
        super()._display(screen, renderable)

    def _apply(self, update: CompositorUpdate) -> None:
        x = y = 0
        for segment in update.__rich_console__(self.console, self.console.options):  # type: ignore[attr-defined]
            if segment.control:
                for code in segment.control:
                    if code[0] == ControlType.CURSOR_MOVE_TO:
                        x, y = code[1], code[2]
                continue
            if segment.text == "\n":
                x, y = 0, y + 1
                continue
            for char in segment.text:
                if 0 <= y < SIZE[1] and 0 <= x < SIZE[0]:
                    self.cells[y][x] = (char, segment.style)
                x += cell_len(char)


def _hunks(count: int) -> list[FakeHunk]:
    return [FakeHunk(f"h{i}", PATHS[i % 3], 12 * i + 1, [LINES[i % 8]], [LINES[(i + 3) % 8], LINES[(i + 5) % 8]])
            for i in range(count)]


def _pending(n: int) -> Pending:
    return Pending(PATHS[n % 3], "replace", LINES[n % 8] * 2, "".join(LINES[(n + k) % 8] for k in range(n % 5 + 1)))


CONTEXTS = {f"h{i}": ([LINES[0]], [LINES[2]]) for i in range(40)}


async def _drawn(steps: list[tuple[str, int]], count: int, end: int) -> None:
    hunks = _hunks(count)
    app = Terminal()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(DiffView)
        shown = 1
        pending: Pending | None = None
        view.sync(hunks[:1], {}, {}, CONTEXTS)
        await pilot.pause(0.03)
        for step, arg in steps:
            if step == "arrive" and shown < count:  # every header's "i/total" changes
                shown += 1
                view.sync(hunks[:shown], {h.id: "undecided" for h in hunks[:shown]}, {}, CONTEXTS)
            elif step == "pending":
                pending = _pending(arg)
                view.set_pending(pending)
            elif step == "badge" and shown:  # a header changes, its height kept
                view.sync(hunks[:shown], {}, {hunks[arg % shown].id: "dup"}, CONTEXTS)
            elif step == "move":
                view.select(view.current + arg)
                if view.current_id is not None:  # the current hunk is in the window (its top,
                    # when it is taller than the window)
                    region, top = view.hunk_region(view.current_id), int(view.scroll_y)
                    window = view.scrollable_content_region.height
                    assert top <= region.y and (region.bottom - 1 <= top + window or region.height > window)
            elif step == "rediff" and shown > 1:  # a re-diff: some hunks gone, the others reordered
                kept = [h for n, h in enumerate(hunks[:shown]) if (n * 7 + arg) % 3]
                view.sync(kept[arg % 2::] + kept[:arg % 2], {}, {}, CONTEXTS)
            elif step == "reset":  # a new answer
                shown = 0
                view.reset(f"answer {arg}")
                view.sync([], {})
            await pilot.pause(0.02)
        view.set_notes("the answer")
        view.sync(hunks, {}, {}, CONTEXTS)
        view.set_pending(pending)  # the block written last stays (as at an answer's end)
        view.select(end)
        await pilot.pause(0.05)
        await pilot.pause(0.05)
        incremental = [row[:] for row in app.cells]
        selected, scrolled = view.current, view.scroll_y  # (a move scrolls only as far as it must:
        # where the view ends depends on where it was)
    fresh = Terminal()
    async with fresh.run_test(size=SIZE) as pilot:
        view = fresh.query_one(DiffView)
        view.set_notes("the answer")
        view.sync(hunks, {}, {}, CONTEXTS)
        view.set_pending(pending)
        await pilot.pause(0.05)
        view.select(selected)
        await pilot.pause(0.05)
        view.scroll_to(y=scrolled, animate=False, immediate=True)
        await pilot.pause(0.05)
        await pilot.pause(0.05)
        expected = fresh.cells
    for y, (got, want) in enumerate(zip(incremental, expected, strict=True)):
        assert "".join(c for c, _ in got) == "".join(c for c, _ in want), f"line {y} text"
        assert got == want, f"line {y} styles"


steps = st.lists(st.one_of(st.tuples(st.just("arrive"), st.just(0)),
                           st.tuples(st.just("pending"), st.integers(0, 20)),
                           st.tuples(st.just("badge"), st.integers(0, 30)),
                           st.tuples(st.just("move"), st.sampled_from([1, -1, 3, -3])),
                           st.tuples(st.just("rediff"), st.integers(0, 5)),
                           st.tuples(st.just("reset"), st.integers(0, 2))), max_size=24)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps, st.integers(4, 14), st.integers(0, 14))
def test_the_terminal_shows_what_a_fresh_view_draws(steps, count, end):
    asyncio.run(_drawn(steps, count, end))


def test_headers_and_the_block_changed_out_of_view_are_drawn_when_scrolled_to():
    """Hunks arrive while the view shows the first (the later ones, and the block being
    written under them, change out of view), then the view moves to the last."""
    arrivals = [("arrive", 0), ("pending", 3)] * 11
    asyncio.run(_drawn(arrivals, 12, 11))


def test_lines_drawn_then_changed_out_of_view_are_drawn_anew_when_scrolled_back():
    """The last hunks and the block are drawn, the view moves to the first hunk, their headers
    (a badge each) and the block's lines change out of view, and the view moves back."""
    steps = [("arrive", 0)] * 11 + [("pending", 2), ("move", 11), ("move", -11)]
    steps += [("badge", n) for n in range(6, 12)] + [("pending", 7), ("arrive", 0)]
    asyncio.run(_drawn(steps, 13, 12))
