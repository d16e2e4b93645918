"""Notes and prose take the diff view's whole width, as the old view's Statics did.

Found in tmux (120x34, the demo, the overdue-days prompt): the prompt echoed in the notes
wrapped one word early ("... and show the" / "worst overdue days per customer" where the old
view drew "... show the worst" / "overdue days per customer"). The line view laid every block
out at the hunks' content width (border + padding: 3 columns) and framed notes and prose with
their own padding (2 columns), so their text had one column less than before and a line that
filled the width wrapped.
"""

from __future__ import annotations

from tests.tui.test_diff_view_scroll import Host, _rows
from tui.widgets.diff_view import DiffView


async def test_a_note_as_wide_as_the_view_stays_on_one_line() -> None:
    app = Host()
    async with app.run_test(size=(84, 20)) as pilot:
        view = app.query_one(DiffView)
        await pilot.pause()
        room = view.scrollable_content_region.width - 2  # the notes' padding: one column each side
        words = ("word " * 40)[:room - 3] + "end"
        assert len(words) == room
        view.set_notes(words)
        await pilot.pause()
        assert view.notes_text == words
        rows = _rows(view)
        assert any(words in row for row in rows), "\n".join(rows)
        assert not any(row.strip(" │╭╮╰╯─") == "end" for row in rows), "the last word wrapped"


async def test_prose_as_wide_as_the_view_stays_on_one_line() -> None:
    app = Host()
    async with app.run_test(size=(84, 20)) as pilot:
        view = app.query_one(DiffView)
        await pilot.pause()
        room = view.scrollable_content_region.width - 2
        line = ("said " * 40)[:room - 4] + "done"
        view.set_prose(line, True)
        await pilot.pause()
        rows = _rows(view)
        assert any(line in row for row in rows), "\n".join(rows)
