"""A j/k while an answer streams is drawn as soon as the keys queued with it are handled
(tui/key_frame.py), not after Textual's idle hops and its next 1/MAX_FPS tick; keys are applied
once each, in order, and the frame drawn is the one Textual's own path would draw."""

from __future__ import annotations

import asyncio
import re

from textual import events

from core.answer import AnswerRun
from tests.tui.conftest import stream_in, wait_for
from tui import key_frame
from tui.app import SparkApp
from tui.widgets.diff_view import DiffView

# every function of the demo's report module gets a comment line: one hunk each, enough of
# them that j/k scrolls the diff at 120x30
FUNCTIONS = ("def due_date(invoice: Invoice) -> date:\n",
             "def is_overdue(invoice: Invoice, today: date) -> bool:\n",
             "def format_money(amount: Decimal) -> str:\n",
             "def totals_by_customer(invoices: list[Invoice]) -> dict[str, Decimal]:\n",
             "def render_report(invoices: list[Invoice], today: date) -> str:\n")


def _answer() -> str:
    return "".join(f"invoicer/report.py\n```python\n<<<<<<< SEARCH\n{line}=======\n{line}"
                   f"    # checked {n}\n    # reviewed {n}\n    # kept {n}\n>>>>>>> REPLACE\n```\n"
                   for n, line in enumerate(FUNCTIONS))


def _diff_cells(svg: str, region) -> list[str]:
    """The screenshot's text and backgrounds in the diff's region (the side panel and the
    status bar show timings that differ run to run); the export's own id taken out."""
    svg = re.sub(r"terminal-\d+", "terminal", svg)
    styles = dict(re.findall(r"\.terminal-(r\d+) \{([^}]*)\}", svg))  # (numbered per export)
    svg = re.sub(r'class="terminal-(r\d+)"', lambda m: f'style="{styles.get(m.group(1), "")}"', svg)
    found = re.findall(r'(<(?:rect|text)[^>]*\bx="([\d.]+)" y="([\d.]+)"[^>]*>[^<]*)', svg)
    assert found, "the screenshot's cells (this parse of Rich's SVG export)"
    return [element for element, x, y in found
            if float(x) < region.right * 12.2 and float(y) < region.bottom * 24.4]


class _Displays:
    """Counts the screen updates the app writes out."""

    def __init__(self, app: SparkApp, monkeypatch) -> None:
        self.count = 0
        original = app._display

        def display(screen, renderable) -> None:
            original(screen, renderable)
            if renderable is not None:
                self.count += 1

        monkeypatch.setattr(app, "_display", display)


async def _streaming(app: SparkApp, pilot) -> tuple[AnswerRun, DiffView]:
    """An answer whose hunks are shown while it still streams (as mid-stream rebuilds do)."""
    run, diff = stream_in(app, _answer(), 200)
    await wait_for(pilot, lambda: len(diff._order) == len(FUNCTIONS) and app.review is not None,
                   what="every hunk shown and reviewed")
    await pilot.pause(0.1)  # (the review's findings drawn: nothing but the keys draws after this)
    return run, diff


async def test_a_key_pressed_mid_stream_is_drawn_in_the_next_loop_turn(demo_root, core_url, monkeypatch):
    """(Fails too when Textual's internals that draw_now uses change: it then leaves the frame
    to Textual's next tick.)"""
    from textual.screen import Screen

    frames: list[set[str]] = []  # per screen update: the diff's widgets it drew
    original = Screen._on_timer_update

    def update(screen: Screen) -> None:
        diff_parts = {type(w).__name__ for w in screen._dirty_widgets
                      if isinstance(w, DiffView) or any(isinstance(a, DiffView) for a in w.ancestors)}
        frames.append(diff_parts | ({"scroll"} if screen._scroll_required else set()))
        original(screen)

    monkeypatch.setattr(Screen, "_on_timer_update", update)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        _run, diff = await _streaming(app, pilot)
        displays = _Displays(app, monkeypatch)
        for expected in (1, 2, 3, 2):
            before, drawn_before = displays.count, len(frames)
            if expected > diff.current:
                app.action_next_hunk()
            else:
                app.action_prev_hunk()
            await asyncio.sleep(0)  # one turn of the loop: Textual's own path needs several and a tick
            assert diff.current == expected
            assert displays.count == before + 1, "the key's frame is drawn at once"
            turn = frames[drawn_before:]  # (the screen's own tick may come due in the same turn
            # and draw it first: then the key's frame finds nothing left)
            assert sum("DiffView" in parts for parts in turn) == 1, "with the hunks whose marker moved"
            await pilot.pause(0.05)
            assert not any(frames[drawn_before + len(turn):]), "Textual finds nothing of the key's left to draw"


async def test_draw_now_draws_what_textuals_own_path_draws(demo_root, core_url, monkeypatch):
    """The same keys with the frame left to Textual end on the same screen."""
    shots = []
    for immediate in (True, False):
        if not immediate:
            monkeypatch.setattr("tui.app.draw_now", lambda screen: False)
        app = SparkApp(demo_root, core_url)
        async with app.run_test(size=(120, 30)) as pilot:
            await _streaming(app, pilot)
            for key in "jjjkj":
                await pilot.press(key)
            await pilot.pause(0.1)
            shots.append(_diff_cells(app.export_screenshot(), app.query_one(DiffView).region))
    assert shots[0] == shots[1]


async def test_keys_in_a_burst_are_applied_once_each_in_order_and_drawn_once(demo_root, core_url, monkeypatch):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        _run, diff = await _streaming(app, pilot)
        displays = _Displays(app, monkeypatch)
        drawn = []
        original = key_frame.draw_now

        def draw(screen) -> bool:
            drawn.append(diff.current)
            return original(screen)

        monkeypatch.setattr("tui.app.draw_now", draw)
        burst = "jjjkjjjjk"  # queued together, as a held key repeats while the loop is busy
        for key in burst:
            app.post_message(events.Key(key, key))
        await wait_for(pilot, lambda: bool(drawn), what="the burst's frame")
        await pilot.pause()
        position = 0
        for key in burst:
            position = min(position + 1, len(FUNCTIONS) - 1) if key == "j" else max(position - 1, 0)
        assert diff.current == position == 3, "every key applied once, in order (none lost, none twice)"
        assert drawn == [position], "one frame for the burst, drawn after its last key"
        assert displays.count >= 1



async def test_no_key_frame_while_a_widget_is_being_mounted(demo_root, core_url):
    """Drawn before their mount was processed, new hunks showed blank for a few frames (seen in
    a real terminal: a 10-line gap in the diff while the stream's hunks were mounted)."""
    from textual.widgets import Static

    from tui.key_frame import take_refreshes

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        _run, diff = await _streaming(app, pilot)
        mounting = diff.mount(Static("a widget being mounted"))
        assert not take_refreshes(app.screen, diff), "left to Textual while a mount is under way"
        await mounting
        assert take_refreshes(app.screen, diff)


async def test_random_key_runs_end_on_the_clamped_walk_with_the_marker_drawn_there(demo_root, core_url):
    """Runs of j/k, some posted together (a held key while the loop is busy), some one at a
    time: after each run the selection is where the keys lead (none lost, none twice) and the
    marker is on that hunk and on no other."""
    import random

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        _run, diff = await _streaming(app, pilot)
        rng = random.Random(14)
        position = diff.current
        for _ in range(8):
            keys = [rng.choice("jk") for _ in range(rng.randint(1, 12))]
            together = rng.random() < 0.5
            for key in keys:
                position = min(position + 1, len(FUNCTIONS) - 1) if key == "j" else max(position - 1, 0)
                app.post_message(events.Key(key, key))
                if not together:
                    await pilot.pause()
            await pilot.pause(0.05)
            assert diff.current == position, keys
            assert diff._marked == diff.current_id, keys  # drawn as the current hunk


async def test_a_key_that_cannot_move_answers_in_its_own_frame(demo_root, core_url, monkeypatch):
    """A j at the last hunk (k at the first) moved nothing, so nothing was drawn for it: it
    looked unanswered until the stream's next frame. It now says where the selection is on the
    status bar, drawn in the next loop turn; the note goes when the selection moves."""
    from tui.widgets.status import StatusBar

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        _run, diff = await _streaming(app, pilot)
        status = app.query_one(StatusBar)
        total = len(FUNCTIONS)
        for _ in range(total - 1):
            app.action_next_hunk()
        await pilot.pause(0.05)
        assert diff.current == total - 1 and status.edge == ""
        displays = _Displays(app, monkeypatch)
        app.action_next_hunk()  # at the last hunk
        await asyncio.sleep(0)  # one turn of the loop
        assert diff.current == total - 1, "nothing to move to"
        assert status.edge == f"last hunk ({total} of {total})"
        assert displays.count == 1, "the key's feedback is drawn at once"
        await pilot.pause(0.05)
        shot = app.export_screenshot()
        assert f"last hunk ({total} of {total})" in shot.replace("&#160;", " ")
        app.action_prev_hunk()  # moves: the note goes, in the same frame
        await asyncio.sleep(0)
        assert diff.current == total - 2 and status.edge == ""
        await pilot.pause(0.05)
        assert "last hunk" not in app.export_screenshot().replace("&#160;", " ")
        for _ in range(total):
            app.action_prev_hunk()
        await asyncio.sleep(0)
        assert diff.current == 0 and status.edge == f"first hunk (1 of {total})"


async def test_a_held_j_at_the_end_of_a_stream_updates_the_note_as_hunks_come(demo_root, core_url, monkeypatch):
    """A j onto a hunk that just streamed in (the new last one) while the note is shown updates
    it, in the key's frame: the note does not blink off for one key and on again at the next."""
    from tui.widgets.status import StatusBar

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        diff = app.query_one(DiffView)
        status = app.query_one(StatusBar)
        run = AnswerRun(app.workspace, "a prompt", "spark")
        app._show_new_answer(run)
        app._stream = object()
        text = _answer()
        cuts = [m.start() for m in re.finditer("invoicer/report.py", text)][1:3]  # 1 hunk, 1 more, the rest
        notes = []
        for part, shown in zip((text[:cuts[0]], text[cuts[0]:cuts[1]], text[cuts[1]:]), (1, 2, len(FUNCTIONS))):
            run.feed(part, 100)
            app._dirty = True
            app._paint()
            app._request_rebuild()
            await wait_for(pilot, lambda shown=shown: len(diff._order) == shown, what=f"{shown} hunk(s) shown")
            await pilot.pause(0.05)
            displays = _Displays(app, monkeypatch)
            app.action_next_hunk()  # held j: a press after each part
            await asyncio.sleep(0)
            assert displays.count == 1, "drawn in the key's frame"
            notes.append((diff.current, status.edge))
        assert notes == [(0, "last hunk (1 of 1)"),  # could not move
                         (1, "last hunk (2 of 2)"),  # moved onto the hunk that came: updated
                         (2, "")]  # moved, not to the last hunk: the note goes
        app.action_prev_hunk()
        assert diff.current == 1 and status.edge == ""


async def test_the_edge_note_goes_after_a_while(demo_root, core_url, monkeypatch):
    """Left on screen it would go stale (new hunks stream in after it)."""
    from tui.widgets.status import StatusBar

    monkeypatch.setattr("tui.app.EDGE_NOTE_S", 0.1)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("escape")
        app.action_prev_hunk()  # no answer: no hunk to select
        status = app.query_one(StatusBar)
        assert status.edge == "no hunks yet"
        await wait_for(pilot, lambda: status.edge == "", what="the note taken away")


def test_edge_note_texts():
    from tui.widgets.status import edge_note

    assert edge_note(+1, 46, 47) == "last hunk (47 of 47)"
    assert edge_note(-1, 0, 47) == "first hunk (1 of 47)"
    assert edge_note(+1, 0, 0) == edge_note(-1, 0, 0) == "no hunks yet"
