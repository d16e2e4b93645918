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

from tui.widgets.prompt_input import KeyState, PromptInput

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


# -- keys after Enter: held, then released or handed over in order ----------------------------
LETTERS = "jkxa"


class _Review(Static, can_focus=True):
    """Stands in for the diff: logs the keys it gets, directly or handed over."""

    def __init__(self, keys_seen: list[str]) -> None:
        super().__init__("review", id="review")
        self.keys_seen = keys_seen

    def on_key(self, event) -> None:
        self.keys_seen.append(event.character or event.key)


class _KeysHost(App):
    def __init__(self) -> None:
        super().__init__()
        self.keys_seen: list[str] = []
        self.sent: list[str] = []

    def compose(self) -> ComposeResult:
        yield _Review(self.keys_seen)
        yield PromptInput(id="prompt")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.sent.append(event.value)
        event.input.value = ""


def _key(key: str):
    from textual import events

    return events.Key(key, key if len(key) == 1 else None)


async def _verdict(before: str, held: str, behind: str, racing: str, later: str, hand_over: bool,
                   redirect: bool) -> tuple:
    app = _KeysHost()
    async with app.run_test(size=(40, 8)) as pilot:
        prompt = app.query_one(PromptInput)
        review = app.query_one(_Review)
        prompt.focus()
        await pilot.pause()
        for key in [*before, "enter", *held]:
            app.post_message(_key(key))
        while not app.sent:
            await pilot.pause()
        await pilot.pause()

        async def review_key(event) -> None:  # as the app's: a letter other than j/k starts a redirect
            if redirect and event.character not in "jk":
                prompt.stop_handing()
                prompt.insert_text_at_cursor(event.character)
            else:
                app.keys_seen.append(event.character)

        # The verdict; keys the App forwarded to the prompt (still focused) before the prompt read
        # it; keys the App has not read yet (they reach the prompt or, once the focus moved, the
        # review: j/k only, which both take alike, so the order in the log is the test).
        if hand_over:
            prompt.hand_over(review, review_key)
        else:
            prompt.release()
        for key in behind:
            prompt._forward_event(_key(key))
        for key in racing:
            app.post_message(_key(key))
        for _ in range(40):
            await pilot.pause()
            if prompt.key_state is KeyState.TYPING and app.message_queue_size == 0:
                break
        for key in later:  # after the verdict is done: whoever has the focus takes them
            app.post_message(_key(key))
        await pilot.pause(0.05)
        return app.sent, "".join(app.keys_seen), prompt.value, app.focused is review, prompt.key_state


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=st.text(LETTERS, min_size=1, max_size=5), held=st.text(LETTERS, max_size=5),
       behind=st.text(LETTERS, max_size=5), racing=st.text("jk", max_size=5),
       later=st.text(LETTERS, max_size=3), hand_over=st.booleans(), redirect=st.booleans())
def test_keys_after_enter_are_handled_in_order(before, held, behind, racing, later, hand_over, redirect):
    """Keys typed after a non-blank Enter: the value sent is exactly the keys before it; on
    `release` the keys after it are typed, in order; on `hand_over` they go to the review in
    order, and (with the app's redirect) from the first letter other than j/k on are typed, in
    order; the focus moves to the review only when no key is left at the prompt (keys queued
    behind the verdict are never typed nor passed over)."""
    sent, log, value, review_focused, state = asyncio.run(
        _verdict(before, held, behind, racing, later, hand_over, redirect))
    assert sent == [before]
    assert state is KeyState.TYPING
    if not hand_over:
        assert (log, value, review_focused) == ("", held + behind + racing + later, False)
        return
    taken = held + behind
    cut = next((i for i, key in enumerate(taken) if key not in "jk"), len(taken)) if redirect else len(taken)
    if cut < len(taken):  # a redirect: the rest, and every later key, typed in the prompt
        assert (log, value, review_focused) == (taken[:cut], taken[cut:] + racing + later, False)
    else:  # the review has the focus: it took every key (the stand-in logs what it gets)
        assert (log, value, review_focused) == (taken + racing + later, "", True)
