"""The diff view draws the lines at Textual's scroll offset: scroll_y rounded.

Found in tmux (120x34, demo, "Add an export module ... to a CSV file", Enter, End): the old view's
last row was the prose ("▸ the model says: A new module ..."); the line view stopped one line
short, and after p (3 prose lines) showed 2. End animates scroll_y; ScrollView repaints when the
ROUNDED scroll_y changes (watch_scroll_y) and Textual's scroll_offset rounds, but the view drew
from int(scroll_y): from x.5 up to the end no repaint came, and the last repaint had drawn the
lines from one above. The same at every animated scroll (PageDown, End, the mouse wheel).
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region

from tests.tui.test_diff_view_screen import CONTEXTS, _hunks
from tui.widgets.diff_view import DiffView


class Host(App):
    def compose(self) -> ComposeResult:
        yield DiffView()


def _rows(view: DiffView) -> list[str]:
    width, height = view.outer_size
    return ["".join(seg.text for seg in row) for row in view.render_lines(Region(0, 0, width, height))]


async def test_a_fractional_scroll_draws_the_lines_at_the_rounded_offset() -> None:
    app = Host()
    async with app.run_test(size=(90, 24)) as pilot:
        view = app.query_one(DiffView)
        view.sync(_hunks(6), {}, {}, CONTEXTS)
        view.set_prose("the last words\nand more", True)
        await pilot.pause()
        end = view.max_scroll_y
        assert end > 2
        view.scroll_to(y=end, animate=False, immediate=True)
        await pilot.pause()
        at_end = _rows(view)
        assert "and more" in at_end[-2], "\n".join(at_end)
        for y in (end - 0.4, end - 0.2):  # where an animation to the end passes
            view.set_reactive(DiffView.scroll_y, y)
            assert view.scroll_offset.y == end  # (Textual's offset, its scrollbar, its repaints)
            assert _rows(view) == at_end, f"scroll_y={y}"
