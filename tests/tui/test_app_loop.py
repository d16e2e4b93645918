"""The skeleton loop as a person drives it: type a prompt, watch it stream, accept or reject."""

from __future__ import annotations

from tests.tui.conftest import wait_for
from tui.app import SparkApp
from tui.widgets.diff_view import DiffView


async def _ask(pilot, app: SparkApp, prompt: str, *, send_key: str = "enter") -> None:
    await wait_for(pilot, lambda: app.client is not None, what="core connection")
    await pilot.click("#prompt")
    await pilot.press(*prompt)
    await pilot.press(send_key)
    await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer to finish streaming")


async def test_accept_writes_the_file(demo_root, core_url):
    target = demo_root / "invoicer" / "report.py"
    before = target.read_text()
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await _ask(pilot, app, "format_money should show negative amounts in parentheses")
        assert app.answer.hunks, "the replayed answer proposes hunks"
        assert app.focused is app.query_one(DiffView)
        assert len(app.query_one(DiffView).drawn_hunks) == len(app.answer.hunks)
        while app.answer.undecided:
            await pilot.press("a")
        await wait_for(pilot, lambda: app.answer.applied, what="the accepted hunks to be written")
        assert app.focused is app.query_one("#prompt")
    after = target.read_text()
    assert after != before
    assert "return f\"({-amount:,.2f})\"" in after
    assert "def test_format_money_negative" in (demo_root / "tests" / "test_report.py").read_text()


async def test_reject_leaves_the_tree_untouched(demo_root, core_url):
    files = {p: p.read_bytes() for p in demo_root.rglob("*.py")}
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        # report.py is named in the prompt: Enter adds it to the chat and sends ([ui] add_mentioned)
        await _ask(pilot, app, "add docstrings to the functions in report.py")
        assert [f.path for f in app.station.context.files] == ["invoicer/report.py"]
        assert len(app.answer.hunks) >= 2
        while app.answer.undecided:
            await pilot.press("r")
        await wait_for(pilot, lambda: app.answer.applied, what="the decisions to settle")
    assert {p: p.read_bytes() for p in demo_root.rglob("*.py")} == files


async def test_status_bar_shows_profile_speed_and_ttft(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await _ask(pilot, app, "add an --unpaid-only flag to the command line")
        await pilot.pause(0.1)
        status = app.query_one("#status")
        assert status.profile == "spark"
        assert status.tokens > 0
        assert status.ttft_ms is not None and status.ttft_ms < 1000
        assert status.tokens_per_s and status.tokens_per_s > 100
