"""The block being written: every line written is on screen, and its height (so the lines
under it and the diff's virtual height) changes only when the text crosses a step of
DiffView.HEIGHT_STEP lines."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult

from tui.widgets.diff_render import PENDING_TAIL_LINES
from tui.widgets.diff_view import DiffView


@dataclass
class Pending:
    path: str
    stage: str
    search: str
    replace: str


class _One(App):
    def compose(self) -> ComposeResult:
        yield DiffView()


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=30))
async def test_lines_all_shown_and_height_changes_only_at_steps(new_lines: list[int]) -> None:
    """Lines arrive 0-3 per frame: after each frame the block is tall enough for every line
    drawn and at most HEIGHT_STEP - 1 blank lines taller; the diff's height changed exactly
    when the block's did, at most once per step crossed."""
    step = DiffView.HEIGHT_STEP
    app = _One()
    async with app.run_test(size=(60, 80)) as pilot:
        view = app.query_one(DiffView)
        text: list[str] = []
        heights = [0]
        sizes = [view.virtual_size.height]
        for n in new_lines:
            text += [f"line_{len(text) + i} = {i}" for i in range(n)]
            view.set_pending(Pending("a.py", "replace", "", "".join(f"{line}\n" for line in text)))
            await pilot.pause()
            block = view._pending
            assert view.pending_text is not None
            shown = view.pending_text.count("\n") + 1  # the lines its content draws
            assert shown <= block.height < shown + step
            heights.append(block.height)
            sizes.append(view.virtual_size.height)
            top = view._tops[view._blocks.index(block)]
            lines = [view._line(top + y).text for y in range(block.height)]  # type: ignore[union-attr]
            written = [line.split(" + ", 1)[1].strip() for line in lines[1:shown] if " + " in line]
            assert written == text[-len(written):] if written else not text
            assert len(written) == min(len(text), PENDING_TAIL_LINES)
            assert all(not line[1:].strip() for line in lines[shown:])  # (after the left border)
        changes = sum(1 for a, b in itertools.pairwise(heights) if a != b)
        assert changes == sum(1 for a, b in itertools.pairwise(sizes) if a != b)
        assert changes <= -(-max(len(text) + 2, 1) // step)


async def test_a_growing_block_on_screen_shows_what_a_fresh_view_shows() -> None:
    """The block being written, on screen, a line added per frame (its lines repainted, its
    height in steps, the tail moving once it is longer than PENDING_TAIL_LINES): the terminal
    then shows what a fresh view shows."""
    from tests.tui.test_diff_view_screen import SIZE, Terminal

    def pending(n: int) -> Pending:
        return Pending("a.py", "replace", "", "".join(f"x_{i} = {i}\n" for i in range(n)))

    app = Terminal()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(DiffView)
        for n in range(1, 30):
            view.set_pending(pending(n))
            await pilot.pause(0.02)
        await pilot.pause(0.05)
        shown = [row[:] for row in app.cells]
    fresh = Terminal()
    async with fresh.run_test(size=SIZE) as pilot:
        fresh.query_one(DiffView).set_pending(pending(29))
        await pilot.pause(0.05)
        await pilot.pause(0.05)
        assert shown == fresh.cells
