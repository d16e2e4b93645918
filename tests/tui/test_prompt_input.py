"""PromptInput (tui/widgets/prompt_input.py) behaves and draws as Textual's Input, without
asking for a whole-screen layout on each key (issue 14)."""

from __future__ import annotations

import asyncio
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Input, Static

from tui.widgets.prompt_input import PromptInput

KEYS = st.one_of(st.sampled_from(list("abc xyz.")),
                 st.sampled_from(["home", "end", "left", "right", "backspace", "delete", "ctrl+a"]))


def _host(input_type: type[Input]) -> App:
    class Host(App):
        CSS = "#prompt { dock: bottom; }"

        def compose(self) -> ComposeResult:
            yield Static("body")
            yield input_type(placeholder="Ask for a change", id="prompt")

    return Host()


async def _type(input_type: type[Input], keys: list[str], width: int) -> tuple:
    app = _host(input_type)
    layouts = 0
    real = Screen._refresh_layout

    def counting(screen, *args, **kwargs):
        nonlocal layouts
        layouts += 1
        return real(screen, *args, **kwargs)

    async with app.run_test(size=(width, 8)) as pilot:
        prompt = app.query_one(input_type)
        prompt.focus()
        await pilot.pause()
        Screen._refresh_layout = counting  # type: ignore[method-assign,assignment]
        try:
            await pilot.press(*keys)
            await pilot.pause()
        finally:
            Screen._refresh_layout = real  # type: ignore[method-assign]
        picture = re.sub(r"terminal-\d+-", "terminal-", app.export_screenshot())  # per-export ids
        state = (prompt.value, prompt.cursor_position, prompt.scroll_x, prompt.max_scroll_x)
    return state, picture, layouts


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.lists(KEYS, min_size=1, max_size=70), width=st.integers(20, 60))
def test_types_scrolls_and_draws_as_input_does(keys, width):
    ours = asyncio.run(_type(PromptInput, keys, width))
    textual = asyncio.run(_type(Input, keys, width))
    assert ours[:2] == textual[:2]
    assert ours[2] == 0, "no layout pass for keys typed in a fixed-size prompt"
