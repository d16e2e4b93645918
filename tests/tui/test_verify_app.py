"""Verify before accept in the real app: the demo's us-dates answer breaks a demo test, the
panel says so, and the fix loop (by itself with the fast profile, or on one key) brings a
fixed answer; nothing is written before the user accepts."""

from __future__ import annotations

from tests.tui.conftest import wait_for
from tui.app import SparkApp
from tui.widgets.verify_panel import VerifyPanel

US_DATES = ("Our US customers write dates as MM/DD/YYYY (like 03/25/2024); make to_date accept "
            "US dates too")
ORIGINAL = '("%Y-%m-%d", "%d/%m/%Y", "%d.%m.%Y", "%b %d %Y")'
FIXED = '("%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%b %d %Y")'


def _panel_text(app) -> str:
    return str(app.query_one(VerifyPanel).render())


async def _send(pilot, app, prompt: str) -> None:
    await wait_for(pilot, lambda: app.client is not None, what="core connection")
    app.query_one("#prompt").value = prompt
    await pilot.click("#prompt")
    await pilot.press("enter")


def _verified(app, state: str) -> bool:
    answer, _ = app.verify.reports()
    return answer is not None and answer.settled and not answer.tests.blaming \
        and answer.tests.state.value == state


async def test_fast_profile_loop_fixes_the_failing_answer_by_itself(demo_root, core_url, monkeypatch):
    monkeypatch.setenv("SPARK_VERIFY_TESTS", "1")
    dates = demo_root / "invoicer" / "dates.py"
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, US_DATES)
        await wait_for(pilot, lambda: app.answer is not None and app.answer.kind == "fix"
                       and app.answer.finished and _verified(app, "passed"), timeout=120,
                       what="the fix round, verified green")
        # the panel is redrawn on the next frame
        await wait_for(pilot, lambda: "fix round 1/3: green" in _panel_text(app), what="the panel")
        assert ORIGINAL in dates.read_text()  # nothing written before accept
        while app.answer.undecided:
            await pilot.press("a")
        await wait_for(pilot, lambda: app.answer.applied, what="the write")
    assert FIXED in dates.read_text()
    assert "test_to_date_accepts_us_dates" in (demo_root / "tests" / "test_dates.py").read_text()


async def test_failures_shown_and_sent_back_on_one_key(demo_root, core_url, monkeypatch):
    monkeypatch.setenv("SPARK_VERIFY_TESTS", "1")
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        app.verify.fast_profiles = ()  # no automatic loop: the key does it
        await _send(pilot, app, US_DATES)
        await wait_for(pilot, lambda: app.answer is not None and app.answer.finished
                       and _verified(app, "failed"), timeout=90, what="the failing verdict")
        await wait_for(pilot, lambda: "ctrl+e" in _panel_text(app), what="the panel")
        assert "test_to_date_accepts_customer_formats[01/03/2024]" in _panel_text(app)
        first = app.answer
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: app.answer is not first and app.answer.finished
                       and _verified(app, "passed"), timeout=90, what="the fix, verified")
        assert app.answer.kind == "fix"
