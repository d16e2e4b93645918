"""The prompt sent is the prompt the user submitted, and the keys typed after Enter act as they
would once the answer is on screen: keys typed right after Enter (a held j, the next request's
first letters) are never appended to it, never lost, and never left in the box as a draft that
was meant for the review (PromptInput's hold and hand-over)."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual import events
from textual.widgets import Input

from tests.tui.conftest import wait_for
from tui.app import SparkApp
from tui.widgets.diff_view import DiffView
from tui.widgets.prompt_input import KeyState, PromptInput
from tui.widgets.status import StatusBar

PROMPT = "add docstrings to the functions in report.py"  # names a file: Enter adds it, then sends


def _key(key: str) -> events.Key:
    name = {" ": "space", "/": "slash"}.get(key, key)
    return events.Key(name, key if len(key) == 1 else None)


def _steps(app: SparkApp) -> list[int]:
    """Records each j/k the app runs (+1 / -1)."""
    steps: list[int] = []
    real = app._step_hunk

    def step(direction: int) -> None:
        steps.append(direction)
        real(direction)

    app._step_hunk = step  # type: ignore[method-assign,assignment]
    return steps


async def _submit_then_type(pilot, app: SparkApp, monkeypatch, after: str, *, add_mentioned: bool) -> None:
    """Type PROMPT, then Enter and `after` as one burst (as a terminal delivers a fast typist's
    keys), while looking up the files the prompt names takes a while."""
    await wait_for(pilot, lambda: app.client is not None, what="core connection")
    app._add_mentioned_setting = add_mentioned
    context = app.station.context
    real = context.mentioned_paths
    looking = threading.Event()

    def slow(prompt: str) -> list[str]:
        looking.set()
        threading.Event().wait(0.3)  # a large tree: the keys below arrive meanwhile
        return real(prompt)

    monkeypatch.setattr(context, "mentioned_paths", slow)
    await pilot.click("#prompt")
    await pilot.press(*PROMPT)
    for key in ["enter", *after]:
        app.post_message(_key(key))
    await wait_for(pilot, looking.is_set, what="the mentioned files' lookup")


async def test_keys_typed_after_enter_go_to_the_review(demo_root, core_url, monkeypatch):
    """j j right after Enter: not sent, not left in the prompt: they are the review's j's (the
    answer's first screen has no hunk yet: "no hunks yet")."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        steps = _steps(app)
        await _submit_then_type(pilot, app, monkeypatch, "jj", add_mentioned=True)
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        assert app.answer.prompt == PROMPT
        assert [f.path for f in app.station.context.files] == ["invoicer/report.py"]
        assert steps == [1, 1]
        assert app.query_one("#prompt", Input).value == ""


async def test_a_letter_after_enter_starts_the_redirect(demo_root, core_url, monkeypatch):
    """x y right after Enter: the next prompt's first letters, in the prompt, in order."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        steps = _steps(app)
        await _submit_then_type(pilot, app, monkeypatch, "xjy", add_mentioned=True)
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        assert app.answer.prompt == PROMPT
        assert steps == []
        assert app.query_one("#prompt", Input).value == "xjy"  # the j after x is typed, as in a redirect


async def test_offered_files_keep_the_prompt_and_the_keys_after_it(demo_root, core_url, monkeypatch):
    """[ui] add_mentioned off: Enter only offers the files; nothing is sent, nothing typed is lost."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await _submit_then_type(pilot, app, monkeypatch, "!", add_mentioned=False)
        await wait_for(pilot, lambda: app._offered is not None, what="the offer")
        await wait_for(pilot, lambda: app.query_one(PromptInput).key_state is KeyState.TYPING,
                       what="the held keys typed")
        assert app.answer is None
        assert app.query_one("#prompt", Input).value == PROMPT + "!"


# -- any keys, any timing ----------------------------------------------------------------------
LETTERS = "jkxa "  # j/k: the review's keys while an answer streams; the others start a redirect


def _expected(after: str) -> tuple[list[int], str]:
    """What the keys after Enter do while the answer streams (DiffView.on_key): j/k step until a
    letter starts the redirect; from it on every key is typed in the prompt."""
    steps: list[int] = []
    for i, key in enumerate(after):
        if key not in "jk":
            return steps, after[i:]
        steps.append(1 if key == "j" else -1)
    return steps, ""


async def _burst_run(root, url, fake, before: str, after: str, cuts: list[int], gaps: list[float],
                     lookup_s: float, screen_after_keys: bool) -> None:
    from tests.fakes.openai_server import Reply

    fake.default = Reply.text("still thinking", ttft_s=30.0)  # open, nothing shown: no end, no hunk
    app = SparkApp(root, url)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        steps = _steps(app)
        real = app.station.context.mentioned_paths

        typed = threading.Event()

        def lookup(prompt: str) -> list[str]:  # the answer's first screen comes after the last key:
            if screen_after_keys:  # every key after Enter is typed in the window
                typed.wait(10)
            time.sleep(lookup_s)
            return real(prompt)

        app.station.context.mentioned_paths = lookup  # type: ignore[method-assign]
        keys = [*before, "enter", *after]
        bounds = sorted({min(cut, len(keys)) for cut in cuts} | {0, len(keys)})
        bursts = [keys[a:b] for a, b in itertools.pairwise(bounds)]

        def terminal() -> None:  # the driver's thread: each burst posted at once
            for burst, gap in zip(bursts, gaps + [0.0] * len(bursts), strict=False):
                for key in burst:
                    app.post_message(_key(key))
                time.sleep(gap)
            typed.set()

        sender = threading.Thread(target=terminal)
        sender.start()
        want_steps, want_typed = _expected(after)
        prompt = app.query_one(PromptInput)
        want_focus = PromptInput if want_typed else DiffView

        def done() -> bool:
            return (not sender.is_alive() and app.answer is not None and prompt.key_state is KeyState.TYPING
                    and isinstance(app.focused, want_focus) and len(steps) >= len(want_steps)
                    and len(prompt.value) >= len(want_typed))

        try:
            await wait_for(pilot, done, timeout=10, what="every key handled")
        except AssertionError:
            pass  # (the asserts below say what differs)
        await pilot.pause(0.1)
        assert not sender.is_alive()
        assert app.answer is not None and app.answer.prompt == before.strip()  # exactly the keys before Enter
        assert steps == want_steps
        assert prompt.value == want_typed
        assert isinstance(app.focused, want_focus)
        if want_steps:
            assert "no hunks yet" in app.query_one(StatusBar).edge


@settings(max_examples=16, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(before=st.text(LETTERS, min_size=1, max_size=6).filter(str.strip),
       after=st.text(LETTERS, max_size=8),
       cuts=st.lists(st.integers(0, 16), max_size=4),
       gaps=st.lists(st.sampled_from([0.0, 0.002, 0.01, 0.04]), max_size=4),
       lookup_s=st.sampled_from([0.0, 0.02, 0.15]), screen_after_keys=st.booleans())
def test_keys_around_enter_in_bursts(demo_root, fake_model, fake_core_url, before, after, cuts, gaps,
                                     lookup_s, screen_after_keys):
    """Random keys with Enter among them, posted from another thread in bursts (as a terminal
    does), the answer's first screen 0-150 ms after Enter or after the last key (keys after it
    reach the review itself: SparkApp.on_event): the prompt sent is exactly the keys before Enter; after it, j/k act on the review ("no hunks yet": nothing has streamed) and the first
    other letter starts the redirect, typed in order with every key after it."""
    fake, _ = fake_model
    asyncio.run(_burst_run(demo_root, fake_core_url, fake, before, after, cuts, gaps, lookup_s,
                           screen_after_keys))



async def test_a_redirect_typed_at_the_streaming_review_keeps_its_letters(demo_root, fake_model, fake_core_url):
    """While the answer streams (the review focused), a burst "x j y" is one redirect: "xjy" in
    the prompt, no step (the j after x is a letter of it); a j before x steps."""
    from tests.fakes.openai_server import Reply

    fake, _ = fake_model
    fake.default = Reply.text("still thinking", ttft_s=30.0)
    for burst, want_steps in (("xjy", []), ("jxjy", [1]), ("xkjy", [])):
        app = SparkApp(demo_root, fake_core_url)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.client is not None, what="core connection")  # noqa: B023
            steps = _steps(app)
            await pilot.click("#prompt")
            await pilot.press(*"hello", "enter")
            await wait_for(pilot, lambda: isinstance(app.focused, DiffView), what="the review")  # noqa: B023
            for key in burst:
                app.post_message(_key(key))
            prompt = app.query_one(PromptInput)
            await wait_for(pilot, lambda: len(prompt.value) >= len(burst) - len(want_steps),  # noqa: B023
                           timeout=3, what="the redirect typed")
            assert (prompt.value, steps) == (burst.replace("j", "", len(want_steps)), want_steps)
            assert isinstance(app.focused, PromptInput)


async def test_words_typed_while_the_answer_ends_stay_words(demo_root, core_url):
    """A fast answer ends while the next prompt is being typed right after Enter: every letter
    stays in the prompt (the focus stays there), none decides a hunk. Before, the letters after
    the answer's end went to the review: "also readme arar" accepted and wrote two hunks."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        await pilot.click("#prompt")
        await pilot.press(*PROMPT)
        words = "also readme arar ARAR"

        def typist() -> None:  # ~25 keys a second, from Enter on
            app.post_message(_key("enter"))
            for key in words:
                time.sleep(0.04)
                app.post_message(_key(key))

        sender = threading.Thread(target=typist)
        sender.start()
        await wait_for(pilot, lambda: not sender.is_alive() and app.answer is not None and app.settled,
                       what="the answer and the words")
        await pilot.pause(0.1)
        run = app.answer
        assert run.prompt == PROMPT
        assert run.hunks and set(run.open) == {h.id for h in run.hunks}  # nothing decided
        assert app.query_one(PromptInput).value == words
        assert isinstance(app.focused, PromptInput)


async def test_escape_then_j_walks_the_review(demo_root, core_url):
    """A draft in the prompt, then Escape j j as one burst: the j's step the review (Escape's
    binding runs in its place among the keys); the draft is kept. Before, the j's were typed
    into the draft and then the review got the focus."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        await pilot.click("#prompt")
        await pilot.press(*PROMPT, "enter")
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        await pilot.press("i", *"next")
        await wait_for(pilot, lambda: app.query_one(PromptInput).value == "next", what="the draft")
        steps = _steps(app)
        for key in ["escape", "j", "j"]:
            app.post_message(_key(key))
        await wait_for(pilot, lambda: isinstance(app.focused, DiffView) and len(steps) >= 2,
                       timeout=3, what="the review, two steps")
        await pilot.pause(0.1)
        assert steps == [1, 1]
        assert app.query_one(PromptInput).value == "next"


async def test_letters_after_the_key_to_the_prompt_are_typed(demo_root, core_url):
    """In the review (hunks to decide), i or Enter then letters as one burst: the letters are
    the prompt's, in order, and decide nothing. Before, they followed i to the diff, passed
    it (hunk keys) and reached the app's bindings after the focus had moved: all four lost."""
    for first in ("i", "enter"):
        app = SparkApp(demo_root, core_url)
        async with app.run_test(size=(140, 45)) as pilot:
            await wait_for(pilot, lambda: app.client is not None, what="core connection")  # noqa: B023
            await pilot.click("#prompt")
            await pilot.press(*PROMPT, "enter")
            await wait_for(pilot, lambda: app.answer is not None and app.settled  # noqa: B023
                           and isinstance(app.focused, DiffView), what="the review")  # noqa: B023
            for key in [first, *"xray"]:
                app.post_message(_key(key))
            prompt = app.query_one(PromptInput)
            await wait_for(pilot, lambda: len(prompt.value) >= 4, timeout=3, what="the letters")  # noqa: B023
            await pilot.pause(0.1)
            assert prompt.value == "xray"
            assert app.answer is not None and len(app.answer.open) == len(app.answer.hunks)
