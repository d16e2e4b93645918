"""The findings list draws exactly what the side panel's Static drew (one Text of all
findings), cell for cell, at any width, after any sequence of changes, while reusing the
lines of findings it has already wrapped."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.geometry import Offset, Region
from textual.widgets import Static

from tui.widgets.findings_list import FindingsList


def static_text(findings: list[tuple[str, str]] | None) -> Text:
    """The side panel's findings as its Static showed them before FindingsList."""
    if findings is None:
        return Text("none yet", style="dim")
    if not findings:
        return Text("none", style="dim")
    text = Text()
    for severity, message in findings:
        style = {"error": "bold red", "warning": "yellow"}.get(severity, "cyan")
        text.append("● ", style=style)
        text.append(f"{message}\n")
    return text


class Pair(App):
    """A Static and a FindingsList side by side at the same width."""

    CSS = "Static, FindingsList { width: auto; }"

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static(id="static")
            yield FindingsList(id="findings")


def cells(widget) -> list[list]:
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return [list(strip) for strip in strips]


def drawn(widget) -> list[list[tuple]]:
    """What the terminal shows, cell by cell: each character with its style less the mouse
    offsets (meta, not drawn), a space with only what a space shows (its background, reverse,
    underline, strike). `cells` compares segments; a blank row of a line that exactly fills
    the width came out as the same blank cells from different segments (hypothesis, width 18,
    "\t漢\t__": the Static's empty line and its padding row in the other order)."""
    rows = []
    for strip in cells(widget):
        row = []
        for segment in strip:
            style = segment.style.clear_meta_and_links() if segment.style else None
            for char in segment.text:
                if char == " " and style is not None:
                    row.append((char, style.bgcolor, style.reverse, style.underline, style.strike))
                else:
                    row.append((char, style))
        rows.append(row)
    return rows


words = st.text(alphabet=st.sampled_from("abcdefgh xyz_.()é漢\t\n"), max_size=90)
finding = st.tuples(st.sampled_from(["info", "warning", "error", "other", ""]), words)
states = st.one_of(st.none(), st.lists(finding, max_size=8))


@example(sequence=[[("info", "\t漢\t__")]], width=18)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequence=st.lists(states, min_size=1, max_size=4), width=st.integers(12, 60))
def test_the_list_draws_what_the_static_drew(sequence, width):
    async def run() -> None:
        app = Pair()
        async with app.run_test(size=(2 * width + 2, 60)) as pilot:
            static = app.query_one("#static", Static)
            findings = app.query_one("#findings", FindingsList)
            static.styles.width = findings.styles.width = width
            for state in sequence:
                static.update(static_text(state))
                findings.update(state)
                await pilot.pause()
                assert findings.size == static.size
                assert drawn(findings) == drawn(static)

    asyncio.run(run())


def test_a_change_measures_only_new_findings_and_renders_only_visible_ones():
    """Adding a finding converts that one; the others' heights and lines are reused at the
    same width; findings below the screen are measured, never rendered."""

    async def run() -> None:
        app = Pair()
        async with app.run_test(size=(80, 40)) as pilot:
            findings = app.query_one("#findings", FindingsList)
            findings.styles.width = 30
            rendered: list[str] = []
            real = findings._wrap
            findings._wrap = lambda key, width: (rendered.append(key[1]), real(key, width))[1]  # type: ignore[method-assign]
            first = [("warning", f"finding {n} " * 5) for n in range(30)]
            findings.update(first)
            await pilot.pause()
            visible = {m for m in rendered if m}
            assert len(first) > len(visible) > 0  # 40 lines of 80 on screen
            measured = set(findings._heights)
            rendered.clear()
            findings.update([*first, ("error", "a new one")])
            await pilot.pause()
            assert set(findings._heights) - measured == {("error", "a new one", 30)}
            assert not {m for m in rendered if m} - visible  # nothing new on screen to render

    asyncio.run(run())


def test_a_selection_is_drawn_and_copied_as_the_static_did():
    from textual.selection import Selection

    async def run() -> None:
        app = Pair()
        async with app.run_test(size=(80, 30)) as pilot:
            static = app.query_one("#static", Static)
            findings = app.query_one("#findings", FindingsList)
            state = [("error", "first finding " * 3), ("info", "second\nthird"), ("warning", "last")]
            static.update(static_text(state))
            findings.update(state)
            static.styles.width = findings.styles.width = 30
            await pilot.pause()
            before = cells(findings)
            selection = Selection.from_offsets(Offset(3, 0), Offset(4, 2))
            app.screen.selections = {static: selection, findings: selection}
            await pilot.pause()
            assert cells(findings) == cells(static) != before
            assert findings.get_selection(selection) == static.get_selection(selection)
            app.screen.selections = {}
            await pilot.pause()
            assert cells(findings) == before

    asyncio.run(run())
