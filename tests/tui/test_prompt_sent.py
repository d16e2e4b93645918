"""The prompt sent is the prompt the user submitted: keys typed right after Enter (a held j,
the next request's first letters) are never appended to it, and never lost."""

from __future__ import annotations

import threading

import pytest
from textual import events
from textual.widgets import Input

from tests.tui.conftest import wait_for
from tui.app import SparkApp

PROMPT = "add docstrings to the functions in report.py"  # names a file: Enter adds it, then sends


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
        app.post_message(events.Key(key, key if len(key) == 1 else None))
    await wait_for(pilot, looking.is_set, what="the mentioned files' lookup")


@pytest.mark.parametrize("after", ["jj", "xy"])
async def test_keys_typed_after_enter_are_not_sent(demo_root, core_url, monkeypatch, after):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await _submit_then_type(pilot, app, monkeypatch, after, add_mentioned=True)
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        assert app.answer.prompt == PROMPT
        assert [f.path for f in app.station.context.files] == ["invoicer/report.py"]
        assert app.query_one("#prompt", Input).value == after  # kept as the next draft


async def test_offered_files_keep_the_prompt_and_the_keys_after_it(demo_root, core_url, monkeypatch):
    """[ui] add_mentioned off: Enter only offers the files; nothing is sent, nothing typed is lost."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await _submit_then_type(pilot, app, monkeypatch, "!", add_mentioned=False)
        await wait_for(pilot, lambda: app._offered is not None, what="the offer")
        assert app.answer is None
        assert app.query_one("#prompt", Input).value == PROMPT + "!"
