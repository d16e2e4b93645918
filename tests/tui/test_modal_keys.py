"""Keys typed right behind a key that opens a screen (x: reject, say why; ?: help) reach that
screen, in order, and the keys typed right behind the key that closes it (Enter, escape) act
where the focus returns, in order: a fast typist's "x too slow Enter j" rejects the hunk with
the reason "too slow" and then steps. Before, the letters after x reached the app's bindings
once the reason screen was already on top (no binding there: dropped) and the reason was empty.
Keys are posted as one burst, as the terminal's driver does for a fast typist."""

from __future__ import annotations

from textual import events

from tests.tui.conftest import wait_for
from tui.app import SparkApp
from tui.screens.help import HelpScreen
from tui.widgets.diff_view import DiffView

PROMPT = "add docstrings to the functions in report.py"


def _key(key: str) -> events.Key:
    name = {" ": "space", "/": "slash", "?": "question_mark"}.get(key, key)
    return events.Key(name, key if len(key) == 1 else None)


def _record(app: SparkApp) -> list[tuple]:
    """Records what the review did, in order: ("step", +-1) and ("reject", reason)."""
    done: list[tuple] = []
    step, decide = app._step_hunk, app._decide

    def stepped(direction: int) -> None:
        done.append(("step", direction))
        step(direction)

    def decided(accept: bool, everything: bool = False, reason: str | None = None) -> None:
        done.append(("accept" if accept else "reject", everything, reason))
        decide(accept, everything, reason)

    app._step_hunk = stepped  # type: ignore[method-assign,assignment]
    app._decide = decided  # type: ignore[method-assign,assignment]
    return done


async def _review(pilot, app: SparkApp) -> None:
    await wait_for(pilot, lambda: app.client is not None, what="core connection")
    await pilot.click("#prompt")
    await pilot.press(*PROMPT, "enter")
    await wait_for(pilot, lambda: app.answer is not None and app.settled
                   and isinstance(app.focused, DiffView), what="the review")
    await pilot.pause(0.1)


def _at_rest(app: SparkApp) -> bool:
    return isinstance(app.focused, DiffView) and len(app.screen_stack) == 1


async def test_reason_typed_right_after_x(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await _review(pilot, app)
        done = _record(app)
        for key in ["x", *"too slow", "enter", "j"]:
            app.post_message(_key(key))
        await wait_for(pilot, lambda: len(done) >= 2 and _at_rest(app), timeout=5, what="reject, then j")
        await pilot.pause(0.1)
        assert done == [("reject", False, "too slow"), ("step", 1)]
        assert _at_rest(app)


async def test_help_closed_by_the_key_typed_right_after_it(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await _review(pilot, app)
        done = _record(app)
        for key in ["?", "escape", "j", "j"]:
            app.post_message(_key(key))
        await wait_for(pilot, lambda: len(done) >= 2 and _at_rest(app), timeout=5, what="help closed, j j")
        await pilot.pause(0.1)
        assert done == [("step", 1), ("step", 1)]
        assert _at_rest(app) and not isinstance(app.screen, HelpScreen)
