"""The request path's order (issue 14): the request leaves before the screen changes.

Drawing a new answer (its transcript, the mode and the footer moving to REVIEW, the
context meter) holds the interpreter the assembly thread and the embedded core share, so
the app sends first and draws while the model thinks. These tests pin the order, and that
the mode, the footer's keys and the focus still change together once it has been sent.
"""

from __future__ import annotations

from textual.widgets import Input

from tests.tui.conftest import wait_for
from tui.app import SparkApp
from tui.widgets.diff_view import DiffView
from tui.widgets.stable_footer import StableFooter
from tui.widgets.status import StatusBar

PROMPT = "format_money should show negative amounts in parentheses like accountants do"


def _notes(app: SparkApp) -> str:
    return app.query_one(DiffView).notes_text


async def test_the_request_leaves_before_the_screen_changes(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    seen: dict[str, object] = {}
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        assert app.client is not None
        before = _notes(app)
        real_generate = app.client.generate

        async def generate(*args, **kwargs):
            seen.update(notes=_notes(app), focused=app.focused, mode=app.query_one(StatusBar).mode,
                        footer=app.query_one(StableFooter).render().plain, settled=app.settled)
            return await real_generate(*args, **kwargs)

        app.client.generate = generate  # type: ignore[method-assign]
        app.query_one("#prompt").focus()
        await pilot.press(*PROMPT, "enter")
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        # at the send: the answer has started (not settled) but nothing of it is drawn yet
        assert seen["notes"] == before and f"> {PROMPT}" not in str(seen["notes"])
        assert isinstance(seen["focused"], Input) and seen["mode"] == "prompt"
        assert "Accept" not in str(seen["footer"]) and seen["settled"] is False
        # once sent and answered: transcript, focus, mode and footer keys moved together
        assert f"> {PROMPT}" in _notes(app)
        assert app.answer is not None and app.answer.open
        assert isinstance(app.focused, DiffView) and app.query_one(StatusBar).mode == "review"
        assert "Accept" in app.query_one(StableFooter).render().plain


async def test_a_request_that_is_never_sent_still_shows_its_answer_and_why(demo_root, core_url):
    """Nothing leaves when the context does not fit: the new answer is drawn with the reason."""
    from core.context.prompt import ContextError

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")

        def too_big(run):
            raise ContextError("the chat's files are over the context window")

        app.station.request = too_big  # type: ignore[method-assign]
        app.query_one("#prompt").focus()
        await pilot.press(*PROMPT, "enter")
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        notes = _notes(app)
        assert f"> {PROMPT}" in notes and "context_overflow" in notes and "over the context window" in notes
        assert app.mode == "prompt"


async def test_the_side_panel_redraws_a_section_only_when_it_changes():
    """Each request sets the findings and the context again; an unchanged section costs
    no update (a Static's update asks for a layout of the whole screen)."""
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from tui.widgets.findings_list import FindingsList
    from tui.widgets.side_panel import SidePanel

    class Host(App):
        def compose(self) -> ComposeResult:
            yield SidePanel("demo")

    app = Host()
    async with app.run_test(size=(80, 30)) as pilot:
        panel = app.query_one(SidePanel)
        findings = panel.query_one("#findings", FindingsList)
        updates: list[object] = []
        real_update = findings.update
        findings.update = lambda content: (updates.append(content), real_update(content))  # type: ignore[method-assign]
        panel.set_findings([("warning", "a duplicate of util.fmt")])
        panel.set_findings([("warning", "a duplicate of util.fmt")])
        panel.set_findings([])
        panel.set_findings([])
        await pilot.pause()
        assert len(updates) == 2
        assert findings.findings == ()  # drawn as "none"
        assert "none" in findings.render_line(0).text
        panel.set_context(Text("12 / 32,000 tokens"))
        panel.set_context(Text("12 / 32,000 tokens"))
        panel.set_context(Text("13 / 32,000 tokens"))
        await pilot.pause()
        assert "13 / 32,000" in str(panel.query_one("#context", Static).render())


async def test_frames_are_painted_only_while_there_is_something_to_paint(demo_root, core_url):
    """Idle, the 120 Hz paint timer stops (it took the interpreter from the request's
    threads 120 times a second); a stream or a verifier's change starts it again."""
    import asyncio
    import threading

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        painted: list[bool] = []
        real_paint = app._paint

        def counting_paint() -> None:
            painted.append(app._verify_dirty)
            real_paint()

        app._paint = counting_paint  # type: ignore[method-assign]
        assert app._paint_timer is not None
        app._paint_timer._callback = counting_paint  # the timer holds the bound method
        await pilot.pause(0.3)
        painted.clear()
        await asyncio.sleep(0.3)
        assert len(painted) <= 1, "idle: no frames"
        # a change from the verifier's thread wakes the frames, and it is drawn
        thread = threading.Thread(target=app._verify_changed)
        thread.start()
        thread.join()
        await wait_for(pilot, lambda: any(painted), what="a frame for the verifier's change")
        app.query_one("#prompt").focus()
        await pilot.press(*PROMPT, "enter")
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        assert app.answer is not None and app.answer.stats.tokens > 0
        assert app.query_one(StatusBar).tokens == app.answer.stats.tokens, "the last numbers are drawn"
        await pilot.pause(0.2)
        painted.clear()
        await asyncio.sleep(0.3)
        assert len(painted) <= 1, "idle again once the answer is shown"
