"""The in-app session report renders a recorded session (written with `SessionRecorder`)."""

from __future__ import annotations

from textual.app import App

from core.report.recorder import SessionRecorder
from tests.tui.conftest import wait_for
from themes import DEFAULT_THEME, register_themes
from tui.screens.report import ReportScreen


class Host(App):
    def __init__(self, screen) -> None:
        super().__init__()
        register_themes(self)
        self.theme = DEFAULT_THEME
        self.screen_to_push = screen
        self.results: list = []

    def on_mount(self) -> None:
        self.push_screen(self.screen_to_push, self.results.append)


def _record(root, session_id: str) -> SessionRecorder:
    """Two answers 20 s apart, hunks kept and dropped, one unread accept, guards firing."""
    clock = [1000.0]
    rec = SessionRecorder(root, session_id, clock=lambda: clock[0])
    rec.prompt("r1", "format_money should show negatives in parentheses", "spark")
    rec.answer_done("r1", profile="spark", tokens=300, elapsed_s=0.5, ttft_ms=80,
                    prompt_tokens=1800, at=1000.5)
    rec.hunk_shown("h1", request_id="r1", path="invoicer/report.py", lines=4, at=1000.6)
    rec.hunk_shown("h2", request_id="r1", path="tests/test_report.py", lines=6, at=1000.6)
    rec.hunk_decided("h1", accepted=True, dwell_s=4.0, added=3, removed=1, at=1005.0)
    rec.hunk_decided("h2", accepted=True, dwell_s=0.2, unread=True, added=6, at=1005.2)
    rec.finding("secret", path="config.py", detail="possible AWS key added", at=1005.3)
    rec.finding("duplicate", path="invoicer/x.py", detail="to_date twin", at=1005.3)
    rec.finding("slop", path="invoicer/x.py", detail="verbose loop", score=2.0, at=1005.3)
    rec.prompt("r2", "add an --unpaid-only flag", "spark", at=1020.0)
    rec.answer_done("r2", profile="spark", tokens=150, elapsed_s=0.3, at=1020.3)
    rec.hunk_shown("h3", request_id="r2", path="invoicer/__main__.py", lines=3, at=1020.4)
    rec.hunk_decided("h3", accepted=False, dwell_s=3.0, reason="not now", at=1023.0)
    return rec


async def test_report_screen_shows_the_latest_session(tmp_path):
    _record(tmp_path, "20260101-100000-aaaaaa")
    _record(tmp_path, "20260101-110000-bbbbbb")
    app = Host(ReportScreen(tmp_path))
    async with app.run_test(size=(110, 40)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.loaded, what="the report")
        body = str(screen.query_one("#report-body").render())
        title = str(screen.query_one("#report-title").render())
        assert "20260101-110000-bbbbbb" in title
        assert "prompts 2" in body and "answers 2" in body and "tokens 450" in body
        assert "accepted 2" in body and "rejected 1" in body and "unread accepts 1" in body
        assert "duplicates 1" in body and "secrets 1" in body and "slop 1" in body
        assert "on Base the same answers would have waited" in body
        assert "waiting   |" in body and "reviewing |" in body   # the terminal plot
        assert "+9 -1" in body
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.results, what="the screen to close")
    assert app.results == [None]


async def test_r_reloads_a_session_still_being_written(tmp_path):
    rec = _record(tmp_path, "live")
    app = Host(ReportScreen(tmp_path, "live"))
    async with app.run_test(size=(110, 40)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.loaded, what="the report")
        assert screen.report.prompts == 2
        rec.prompt("r3", "one more", "base", at=1030.0)
        await pilot.press("r")
        await wait_for(pilot, lambda: screen.report.prompts == 3, what="the reload")
        assert "prompts 3" in str(screen.query_one("#report-body").render())


async def test_no_session_yet_says_so(tmp_path):
    app = Host(ReportScreen(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.loaded, what="the attempt")
        assert screen.report is None
        assert "no recorded sessions" in str(screen.query_one("#report-body").render())
