"""The demo's replay answers what the user typed, also after a rejection with feedback."""

from __future__ import annotations

from tests.tui.conftest import wait_for
from tui.app import SparkApp

FIRST = "format_money should show negative amounts in parentheses like accountants do"
SECOND = "Add docstrings to the functions"


async def _send(pilot, app, prompt: str) -> None:
    await wait_for(pilot, lambda: app.client is not None, what="core connection")
    app.query_one("#prompt").value = prompt
    await pilot.click("#prompt")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.answer is not None and app.answer.prompt == prompt
                   and app.settled, what=f"the answer to {prompt!r}")


async def test_after_a_rejection_the_next_prompt_replays_its_own_recording(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, FIRST)
        assert app.answer.source["id"] == "negative-money"
        await pilot.press("x")  # reject, saying why: the feedback goes in front of the next prompt
        await pilot.press(*"negative amounts keep the minus sign, no parentheses in format_money")
        await pilot.press("enter")
        if not app.answer.applied:
            await pilot.press("R")  # the answer's other hunks
        await wait_for(pilot, lambda: app.answer.applied, what="the rejection")
        await _send(pilot, app, SECOND)
        assert app.answer.source["id"] == "docstrings", app.answer.source
