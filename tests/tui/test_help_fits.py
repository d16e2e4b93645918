"""The help dialog fits the smallest terminal people use (80x24) and scrolls the rest."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.containers import VerticalScroll
from textual.geometry import Region

from tui.screens.help import HelpScreen

ROWS = [(f"ctrl+{c}", f"action_{c}", f"does the thing number {i} with a longer description")
        for i, c in enumerate("abcdefghijklmnopqrstuvwxy")]


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (200, 60)])
async def test_help_dialog_stays_inside_the_screen(size):
    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(HelpScreen(ROWS))

    app = Host()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        box = app.screen.query_one(VerticalScroll)
        assert Region(0, 0, *size).contains_region(box.region), (box.region, size)
        assert box.region.width <= 84
        if size == (80, 24):  # more rows than lines: the dialog scrolls, nothing is cut off
            assert box.max_scroll_y > 0
