"""Text selected with the mouse in the diff view is the text the view draws there.

The diff is one line-API widget: each row carries the mouse offsets of text selection (its
column from the content's left, the line of the whole diff), and DiffView.get_selection reads
the same lines (a hunk's left border as a space). The selected rows are drawn in the selection
style while it lasts.
"""

from __future__ import annotations

from textual.app import App, ComposeResult

from tests.tui.test_diff_view_screen import CONTEXTS, _hunks
from tui.widgets.diff_view import DiffView


class Host(App):
    def compose(self) -> ComposeResult:
        yield DiffView()


async def test_a_drag_over_a_hunk_selects_its_header_and_lines() -> None:
    app = Host()
    async with app.run_test(size=(90, 40)) as pilot:
        view = app.query_one(DiffView)
        view.sync(_hunks(6), {}, {}, CONTEXTS)
        await pilot.pause()
        view.scroll_to(y=3, animate=False, immediate=True)  # (offsets are lines of the whole diff)
        await pilot.pause()
        top = view.hunk_region("h1").y - 3 + 1  # the hunk's first row in the widget (its border above)
        await pilot.mouse_down(DiffView, offset=(3, top))
        await pilot.hover(DiffView, offset=(40, top + 2))
        await pilot.mouse_up(DiffView, offset=(40, top + 2))
        await pilot.pause()
        selected = app.screen.get_selected_text()
        assert selected is not None
        drawn = view.hunk_text("h1").splitlines()
        got = selected.splitlines()
        assert got[0] == drawn[0].rstrip()  # the whole header, from its first character
        assert got[1] == ("  " + drawn[1]).rstrip()  # the next line whole (frame columns as spaces)
        # to the mouse: column 40 of the widget is the content's 39th, the cell under it included
        assert ("  " + drawn[2]).startswith(got[2]) and len(got[2]) == 40
        # drawn in the selection style while it lasts, only there
        selection = app.screen.get_component_rich_style("screen--selection").bgcolor
        rows = view.render_lines(view.outer_size.region)

        def selected_cells(row) -> int:
            return sum(seg.cell_length for seg in row if seg.style is not None and seg.style.bgcolor == selection)

        assert selected_cells(rows[top]) > 0 and selected_cells(rows[top + 1]) > 0
        assert selected_cells(rows[top - 1]) == 0 and selected_cells(rows[top + 3]) == 0
