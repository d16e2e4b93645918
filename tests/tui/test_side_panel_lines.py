"""The side panel keeps its own lines and repaints its scrollbar by line (kept_lines): it must
paint what Textual paints with nothing kept.

The property: after any sequence of findings, changes and context set, scrolls, resizes and
theme changes, the panel's own lines (border, background) and its scrollbar's lines, whole
and cropped, are the lines drawn afresh.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget

from tui.widgets.side_panel import SidePanel

steps = st.one_of(
    st.tuples(st.just("findings"), st.integers(0, 40)),
    st.tuples(st.just("changes"), st.integers(1, 5)),
    st.tuples(st.just("context"), st.sampled_from(["", "3 files, 1,200 tokens"])),
    st.tuples(st.just("scroll"), st.integers(0, 80)),
    st.tuples(st.just("resize"), st.sampled_from([(100, 30), (80, 20), (120, 40)])),
    st.tuples(st.just("theme"), st.sampled_from(["textual-dark", "textual-light"])),
)


class Host(App):
    def compose(self) -> ComposeResult:
        yield SidePanel("project")


def segments(lines) -> list[list[tuple]]:
    return [[(seg.text, seg.style, seg.control) for seg in line] for line in lines]


def fresh(widget: Widget, crop: Region):
    widget._set_dirty()  # nothing kept: the line cache cleared
    return Widget.render_lines(widget, crop)


async def _run(sequence: list[tuple]) -> None:
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(SidePanel)
        for step, arg in sequence:
            if step == "findings":
                panel.set_findings([("warning", f"finding {n}: " + "words " * (n % 7)) for n in range(arg)])
            elif step == "changes":
                panel.add_changes([(f"pkg/m{n}.py", "modified") for n in range(arg)])
            elif step == "context":
                panel.set_context(arg)
            elif step == "scroll":
                panel.scroll_to(y=arg, animate=False)
            elif step == "resize":
                await pilot.resize_terminal(*arg)
            else:
                app.theme = arg
            await pilot.pause()
            for widget in (panel, panel.vertical_scrollbar):
                width, height = widget.outer_size
                if not (widget.display and width and height):
                    continue
                for crop in (Region(0, 0, width, height), Region(0, 1, width, max(0, height - 2))):
                    given_lines = widget.render_lines(crop)
                    assert segments(given_lines) == segments(fresh(widget, crop)), (step, arg, type(widget))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(steps, min_size=1, max_size=10))
def test_the_panel_paints_what_a_fresh_paint_paints(sequence):
    asyncio.run(_run(sequence))
