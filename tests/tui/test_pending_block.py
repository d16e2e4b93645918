"""The block being written: every line written is on screen, and its height (so the diff's
layout) changes only when the text crosses a step of PendingBlock.HEIGHT_STEP lines."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.content import Content

from tui.widgets.diff_view import PendingBlock


class _One(App):
    def compose(self) -> ComposeResult:
        yield PendingBlock()


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=30))
async def test_lines_all_shown_and_layouts_only_at_steps(new_lines: list[int]) -> None:
    """Lines arrive 0-3 per frame: after each frame the block is tall enough for every line
    and at most HEIGHT_STEP - 1 blank lines taller; it asked for a layout exactly when its
    height changed, at most once per step crossed."""
    step = PendingBlock.HEIGHT_STEP
    app = _One()
    async with app.run_test(size=(60, 80)) as pilot:
        block = app.query_one(PendingBlock)
        layouts: list[bool] = []
        real_refresh = block.refresh

        def refresh(*args, layout: bool = False, **kwargs):
            if showing:  # what show() asks for, not Textual's own refreshes
                layouts.append(layout)
            return real_refresh(*args, layout=layout, **kwargs)

        block.refresh = refresh  # type: ignore[method-assign]
        text: list[str] = []
        heights = [0]
        showing = False
        for n in new_lines:
            text += [f"line {len(text) + i} = {i}" for i in range(n)]
            showing = True
            block.show(Content("\n".join(text)))
            showing = False
            await pilot.pause()
            shown = max(len(text), 1)
            assert shown <= block.size.height < shown + step
            heights.append(block.size.height)
            lines = [block.render_line(y).text for y in range(block.size.height)]
            assert [line.strip() for line in lines[:len(text)]] == text
            assert all(not line.strip() for line in lines[len(text):])
        changes = sum(1 for a, b in itertools.pairwise(heights) if a != b)
        assert sum(layouts) == changes
        assert changes <= -(-max(len(text), 1) // step)
