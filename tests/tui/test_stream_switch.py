"""While an answer streams the interpreter's switch interval is short (tui/app.py
STREAM_SWITCH_S): the UI thread waits less to get the interpreter back from the rebuild's and
duplicate checks' threads at each turn of its loop. Before and after, it is what it was."""

from __future__ import annotations

import sys

from tests.tui.conftest import wait_for
from tui import app as app_module
from tui.app import SparkApp

PROMPT = "format_money should show negative amounts in parentheses like accountants do"


async def test_short_switch_interval_only_while_the_answer_streams(demo_root, core_url, monkeypatch):
    before = sys.getswitchinterval()
    assert app_module.STREAM_SWITCH_S < before
    calls: list[tuple[float, bool]] = []  # (interval set, an answer streaming then)
    original = sys.setswitchinterval
    app = SparkApp(demo_root, core_url)

    def record(interval: float) -> None:
        calls.append((interval, app._stream is not None))
        original(interval)

    monkeypatch.setattr(sys, "setswitchinterval", record)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        app.query_one("#prompt").focus()
        await pilot.press(*PROMPT)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        assert app.answer.hunks, "an answer was streamed"
        assert calls == [(app_module.STREAM_SWITCH_S, True), (before, False)]
        assert sys.getswitchinterval() == before
