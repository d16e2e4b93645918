"""The one-widget footer (tui/widgets/stable_footer.py) draws what Textual's Footer draws.

The footer was rewritten for speed (issue 14: no widget mounts or CSS per mode change);
the property below renders random key sets with both footers, in every theme, at random
widths, and compares the bottom line cell by cell: character, colours, bold and dim.
"""

from __future__ import annotations

import asyncio
import html
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Input, Static

from themes import register_themes
from tui.widgets.stable_footer import StableFooter

CELL_PX, ROW_PX = 12.2, 24.4  # an exported screenshot's cell
HEIGHT = 5
KEYS = ["a", "r", "A", "j", "escape", "ctrl+l", "ctrl+t", "f2", "enter", "question_mark"]
WORDS = ["Accept", "Reject all", "Back / stop", "Spark/Base", "Help", "Add mentioned files", "Go"]
THEMES = ["textual-dark", "textual-light", "charcoal", "paper", "wafer"]


def _host(footer_type: type, bindings: list[BindingType], theme: str) -> App:
    class Host(App):
        BINDINGS = bindings

        def compose(self) -> ComposeResult:
            yield Static("body")
            yield Input()
            yield footer_type()

        def on_mount(self) -> None:
            register_themes(self)
            self.theme = theme

        def action_noop(self) -> None:
            pass

    return Host()


def _cells(svg: str, width: int, row: int) -> list[tuple[str, str, str]]:
    """One row of an exported screenshot: (character, text style, fill) per cell."""
    styles = dict(re.findall(r"\.(terminal-[\w-]*?r\d+) \{ ([^}]*) \}", svg))
    texts = re.findall(r'<text class="(terminal-[\w-]*?r\d+)" x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>',
                       svg)
    rects = re.findall(r'<rect fill="([^"]+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)"', svg)
    cells = [[" ", "", ""] for _ in range(width)]
    for fill, x, y, w in rects:
        if round((float(y) - 1.5) / ROW_PX) == row:
            start = round(float(x) / CELL_PX)
            for col in range(start, min(width, start + round(float(w) / CELL_PX))):
                cells[col][2] = fill
    for cls, x, y, text in texts:
        if round((float(y) - 20) / ROW_PX) != row:
            continue
        for offset, char in enumerate(html.unescape(text).replace("\xa0", " ")):
            col = round(float(x) / CELL_PX) + offset
            if col < width and char != " ":  # a blank's text style is invisible
                cells[col][0], cells[col][1] = char, styles.get(cls, cls)
    return [tuple(cell) for cell in cells]  # type: ignore[misc]


async def _bottom_line(footer_type: type, bindings: list[BindingType], theme: str, width: int):
    app = _host(footer_type, bindings, theme)
    async with app.run_test(size=(width, HEIGHT)) as pilot:
        app.query_one(Input).focus()
        await pilot.pause(0.1)  # Textual's Footer recomposes after the focus change's refresh
        await pilot.pause(0.1)
        return _cells(app.export_screenshot(), width, HEIGHT - 1)


bindings_strategy = st.lists(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(WORDS), st.booleans()),
    min_size=0, max_size=9, unique_by=lambda entry: entry[0])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=bindings_strategy, theme=st.sampled_from(THEMES), width=st.integers(30, 170))
def test_draws_what_textuals_footer_draws(entries, theme, width):
    bindings: list[BindingType] = [Binding(key, "noop", word, show=show) for key, word, show in entries]
    ours = asyncio.run(_bottom_line(StableFooter, bindings, theme, width))
    textual = asyncio.run(_bottom_line(Footer, bindings, theme, width))
    assert ours == textual


async def test_a_mode_change_repaints_without_mounting(demo_root, core_url):
    """Focus moving between the prompt and the diff changes the keys shown, and mounts nothing."""
    from tests.tui.conftest import wait_for
    from tui.app import SparkApp
    from tui.widgets.diff_view import DiffView

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 40)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="the core connection")
        await pilot.pause(0.05)
        footer = app.query_one(StableFooter)
        widgets = len(list(app.query("*")))
        assert "Accept" not in footer.render().plain and "Quit" in footer.render().plain
        app.query_one(DiffView).focus()
        await pilot.pause(0.05)
        assert "Accept" in footer.render().plain and "Quit" in footer.render().plain
        assert not footer.children and len(list(app.query("*"))) == widgets


async def test_a_click_presses_the_key():
    pressed: list[str] = []

    class Host(App):
        BINDINGS = [Binding("f2", "mark('f2')", "Mark"), Binding("f3", "mark('f3')", "Other")]  # noqa: RUF012

        def compose(self) -> ComposeResult:
            yield Input()
            yield StableFooter()

        def action_mark(self, which: str) -> None:
            pressed.append(which)

    app = Host()
    async with app.run_test(size=(80, 5)) as pilot:
        await pilot.pause(0.05)
        footer = app.query_one(StableFooter)
        text = footer.render().plain
        await pilot.click(StableFooter, offset=(text.index("Other"), 0))
        await pilot.pause(0.05)
        await pilot.click(StableFooter, offset=(text.index("Mark"), 0))
        await pilot.pause(0.05)
    assert pressed == ["f3", "f2"]
