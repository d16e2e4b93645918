"""Snapshot tests (pytest-textual-snapshot): the main screen mid-stream and the help screen.

The stream is frozen at a fixed point (a recorded answer cut mid-block, fixed timings) so
the picture is the same on every run; update with `pytest --snapshot-update` after a
deliberate visual change.
"""

from __future__ import annotations

import json
from pathlib import Path

from core.session import AnswerRun, StreamStats
from tests.tui.conftest import wait_for
from tui.app import SparkApp

CASSETTE = Path(__file__).resolve().parents[2] / "core" / "cassettes" / "demo.jsonl"
SIZE = (150, 44)


def _recorded(answer_id: str) -> str:
    for line in CASSETTE.read_text().splitlines():
        record = json.loads(line)
        if record["id"] == answer_id:
            return record["answer"]
    raise KeyError(answer_id)


def test_main_screen_mid_stream(snap_compare, demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    answer = _recorded("overdue-days")
    cut = answer.index("def test_days_overdue") + 40  # inside the last block, mid-line

    async def freeze_mid_stream(pilot):
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        # the review says "not checked for duplicates yet" while the index builds: the
        # picture is of a review with its duplicate check, as nearly every answer's is
        await wait_for(pilot, lambda: app.station.dups_ready, what="the duplicate index")
        run = AnswerRun(app.workspace, "Add a days_overdue(invoice, today) function", "spark")
        app._show_new_answer(run)  # as a prompt's answer starts: REVIEW mode, its transcript
        run.feed(answer[:cut], 0)
        run.stats = StreamStats(started=100.0, first_token=100.08, tokens=cut // 4)
        run.stats.ended = 100.08 + (cut // 4) / 1000  # 1,000 tok/s, fixed for the picture
        await app._rebuild_now()
        # a streaming proposal is checked once it stays the same a moment (the verifier's
        # STREAM_QUIET_S): the picture is of the checks done, not of when they land
        await wait_for(pilot, lambda: app.verify.reports()[0] is not None
                       and app.verify.reports()[0].problems is not None, what="the checks")
        app._dirty = True
        app._verify_dirty = True
        app._paint()
        app.query_one("#status").streaming = True
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=freeze_mid_stream)


def test_help_screen(snap_compare, demo_root, core_url):
    app = SparkApp(demo_root, core_url)

    async def open_help(pilot):
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        await pilot.press("f1")  # from the prompt: `?` types there (it is help in the review)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=open_help)
