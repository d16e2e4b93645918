"""The two modes of the main screen (PROMPT and REVIEW) and what the loop shows around them."""

from __future__ import annotations

import asyncio

from core.client import CoreError
from tests.tui.conftest import wait_for
from tui.app import SparkApp
from tui.widgets.diff_view import DiffView

PROMPT = "format_money should show negative amounts in parentheses like accountants do"


async def _ask(pilot, app: SparkApp, prompt: str = PROMPT) -> None:
    await wait_for(pilot, lambda: app.client is not None, what="core connection")
    app.query_one("#prompt").focus()
    await pilot.press(*prompt)
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")


def _footer_keys(app) -> set[str]:
    """What the footer offers now (the active bindings it shows)."""
    return {active.binding.description for active in app.active_bindings.values() if active.binding.show}


async def test_review_and_prompt_are_two_visible_modes(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 36)) as pilot:
        await _ask(pilot, app)
        status = app.query_one("#status")
        assert app.answer.open, "the answer has hunks to decide"
        assert app.mode == "review" and status.mode == "review" and isinstance(app.focused, DiffView)
        assert "Accept" in _footer_keys(app) and "Quit" in _footer_keys(app)
        assert app.query_one(DiffView).current == 0, "the cursor starts at the first hunk"
        await pilot.press("i")
        assert app.mode == "prompt" and status.mode == "prompt"
        assert "Accept" not in _footer_keys(app) and "Quit" in _footer_keys(app)
        await pilot.press(*"rather google style")  # letters type, they decide nothing
        assert app.query_one("#prompt").value == "rather google style"
        assert all(s.value == "undecided" for s in app.answer.states().values())
        await pilot.press("escape")
        assert app.mode == "review"
        await pilot.press("question_mark")
        from tui.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("R")
        await wait_for(pilot, lambda: app.answer.applied, what="the decision")
        # nothing left to decide: a letter starts the next prompt
        app.query_one("#prompt").value = ""
        await pilot.press("escape")
        assert app.mode == "review"
        await pilot.press("w")
        assert app.mode == "prompt" and app.query_one("#prompt").value == "w"


async def test_a_fresh_answer_starts_from_zero_and_undo_puts_everything_back(demo_root, core_url):
    target = demo_root / "invoicer" / "report.py"
    before = target.read_text()
    app = SparkApp(demo_root, core_url, guards={"guards": {"dwell_lines_per_second": 0}})
    async with app.run_test(size=(120, 36)) as pilot:
        await _ask(pilot, app)
        await pilot.press("A")
        await wait_for(pilot, lambda: app.answer.applied, what="the write")
        status = app.query_one("#status")
        n = len(app.answer.hunks)
        assert status.note.startswith(f"{n} accepted, 0 rejected")
        assert target.read_text() != before
        await pilot.press("ctrl+z")
        await wait_for(pilot, lambda: not app.answer.applied, what="the undo")
        assert target.read_text() == before
        notes = app.query_one(DiffView).notes_text
        assert "restored invoicer/report.py" in notes, "the undo says what it restored, on screen"
        assert {s.value for s in app.answer.states().values()} == {"undecided"}
        assert status.note.startswith("0 accepted"), status.note
        drawn = [app.query_one(DiffView).hunk_text(h) for h in app.query_one(DiffView).drawn_hunks]
        assert not any("accepted" in d for d in drawn)
        # a fresh answer: nothing of the last one's counts or timing
        app.query_one("#prompt").focus()
        await pilot.press(*"Add docstrings to the functions in report.py", "enter", "enter")
        await wait_for(pilot, lambda: app.answer.prompt.startswith("Add docstrings") and app.settled,
                       what="the second answer")
        assert status.note.startswith("0 accepted, 0 rejected")


async def test_a_failed_stream_says_so_in_the_diff_with_what_to_do(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")

        async def gone(*args, **kwargs):
            raise CoreError("disconnected", "the connection to the core was lost")

        app.client.generate = gone
        await _ask(pilot, app)
        notes = app.query_one(DiffView).notes_text
        assert "error [disconnected]" in notes and "what to do" in notes
        assert "proposes no change" not in notes
        assert app.mode == "prompt", "nothing to decide: the prompt has focus to send again"


async def test_a_detector_that_raises_costs_the_review_not_the_app(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 36)) as pilot:
        def broken(run):
            raise RuntimeError("detector bug")

        app.station.review = broken
        await _ask(pilot, app)
        assert app.is_running and app.answer.hunks, "the answer is still there to decide"


async def test_prose_collapsed_expands_with_p_and_steers_are_in_the_transcript(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 36)) as pilot:
        await _ask(pilot, app)
        app.answer.text = "I changed format_money.\nIt now wraps negatives in parentheses.\n" + app.answer.text
        app.answer.redirects.append("use google style")
        app._after_stream(app.answer)
        diff = app.query_one(DiffView)
        assert "the model says: I changed format_money." in diff.prose_text
        assert "It now wraps negatives" not in diff.prose_text and "p expands" in diff.prose_text
        await pilot.press("p")
        assert "It now wraps negatives" in diff.prose_text
        assert "steered: use google style" in app.query_one(DiffView).notes_text


async def test_ctrl_g_reads_everything_typed_before_it(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    taken: list[str] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")

        async def fake_open(app_, prompt, *a, **k):
            taken.append(prompt)

        from tui.screens import variations

        original = variations.open_variations
        variations.open_variations = fake_open
        try:
            app.query_one("#prompt").focus()
            await pilot.press(*"4 variations of the format", "ctrl+g")
            await wait_for(pilot, lambda: taken, what="ctrl+g")
        finally:
            variations.open_variations = original
    assert taken == ["4 variations of the format"]


async def test_the_start_up_theme_is_not_remembered(demo_root, core_url):
    from core.ui_config import state_file

    app = SparkApp(demo_root, core_url, theme="paper" if "paper" in _themes() else None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert not state_file().exists(), "spark --theme must not overwrite the remembered theme"
        others = [t for t in _themes() if t != app.theme]
        app.theme = others[0]
        await pilot.pause()
    assert state_file().exists()


def _themes() -> list[str]:
    from themes import THEMES

    return list(THEMES)


async def test_toasts_stay_small_and_off_the_status_bar_at_80x24(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.notify("a rather long message that would otherwise cover half the screen " * 3,
                   severity="warning", timeout=10)
        await pilot.pause(0.2)
        await asyncio.sleep(0)
        from textual.widgets._toast import Toast

        toast = app.query(Toast).first()
        status = app.query_one("#status")
        assert toast.region.width <= 46
        assert toast.region.y + toast.region.height <= status.region.y, "the toast covers the status bar"
