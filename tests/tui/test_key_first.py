"""A key before the stream's work (tui/key_first.py): a j/k on the focused diff is handled in the
app's own turn (not after Textual's hops through the diff, its container and the screen), the
stream's frames, syncs and paints wait while a key is queued, and still: keys are handled in the
order pressed, every key's effect is drawn, and what is on the terminal after any interleaving of
stream deltas, syncs and keys is what a fresh full draw of the same state shows."""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.segment import ControlType
from textual import events
from textual.screen import Screen

from tests.tui.conftest import stream_in, wait_for
from tests.tui.test_key_frame import FUNCTIONS, _answer
from tui import key_first
from tui.app import SparkApp
from tui.key_first import KeyFirstScreen, KeyQueue, passes_key
from tui.widgets.diff_view import DiffView


class _Terminal:
    """What the app wrote out, cell by cell: each screen update applied as a terminal applies it
    (Textual's update renderables: a cursor move before each run of cells)."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, int], tuple[str, str]] = {}
        self.updates = 0

    def apply(self, app: SparkApp, renderable) -> None:
        self.updates += 1
        x = y = 0
        for segment in app.console.render(renderable, app.console.options):
            if segment.control:
                for control in segment.control:
                    if control[0] == ControlType.CURSOR_MOVE_TO:
                        x, y = control[1], control[2]
                continue
            if segment.text == "\n":
                continue
            style = str(segment.style or "")
            for character in segment.text:
                self.cells[(x, y)] = (character, style)
                x += cell_len(character)

    def region(self, region) -> dict[tuple[int, int], tuple[str, str]]:
        return {(x, y): cell for (x, y), cell in self.cells.items()
                if region.x <= x < region.right and region.y <= y < region.bottom}


class _Recorded(SparkApp):
    """The app with its screen updates kept on a `_Terminal` (the test driver writes none out)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.terminal = _Terminal()

    def _display(self, screen, renderable) -> None:
        if renderable is not None and not self._batch_count:
            self.terminal.apply(self, renderable)
        super()._display(screen, renderable)


async def _drawn_fresh(app: _Recorded, pilot) -> tuple[dict, dict]:
    """(the diff's cells on the terminal now, the same after a full redraw of the screen)."""
    region = app.query_one(DiffView).region
    before = app.terminal.region(region)
    updates = app.terminal.updates
    app.screen.refresh(layout=True)
    app.refresh(repaint=True, layout=True)
    await wait_for(pilot, lambda: app.terminal.updates > updates, what="the full redraw")
    await pilot.pause(0.05)
    return before, app.terminal.region(app.query_one(DiffView).region)


def _rows_differing(before: dict, fresh: dict) -> str:
    """The rows whose cells differ: the terminal's text, then the full redraw's."""
    rows = sorted({y for (x, y) in before.keys() | fresh.keys() if before.get((x, y)) != fresh.get((x, y))})

    def text(cells: dict, y: int) -> str:
        return "".join(cells.get((x, y), ("?", ""))[0] for x in range(max(x for x, _ in cells) + 1))

    return "\n".join(f"{y}: {text(before, y)!r}\n{y}  {text(fresh, y)!r}" for y in rows[:8])


async def _idle(app: SparkApp, pilot) -> None:
    await wait_for(pilot, lambda: not app._keys.waiting() and not app._schedule.running
                   and not app._sync_held, what="the keys handled and the passes drawn")
    await pilot.pause(0.1)


# -- Textual's state this relies on ------------------------------------------------------------
async def test_textual_internals_key_first_relies_on(demo_root, core_url):
    """Fails when Textual changes what tui/key_first.py reads (it then falls back: frames at
    their tick, a stopped key counted as on its way for HOLD_S)."""
    key = events.Key("j", "j")
    assert key._stop_propagation is False
    key.stop()
    assert key_first._stopped(key), "a stopped key's flag"
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)):
        screen = app.screen
        assert isinstance(screen, KeyFirstScreen), "the default screen (App.get_default_screen)"
        timer = screen._update_timer
        assert timer._callback.__func__ is KeyFirstScreen._on_timer_update, \
            "the screen's update timer calls the method KeyFirstScreen overrides"
        assert "_on_timer_update" in vars(Screen)


async def test_passes_key_is_what_the_diffs_on_key_decides(demo_root, core_url, monkeypatch):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)):
        diff = app.query_one(DiffView)
        keys = [events.Key(c, c) for c in "jkaArRxz?pbwei /"] + \
            [events.Key(k, None) for k in ("enter", "escape", "down", "tab", "ctrl+l")]
        for typeahead in (False, True):
            for hunk_keys in (False, True):
                diff.typeahead, diff.hunk_keys = typeahead, hunk_keys
                for key in keys:
                    sent = events.Key(key.key, key.character)
                    with monkeypatch.context() as patch:
                        patch.setattr(diff, "post_message", lambda message: True)  # (its TypeAhead)
                        diff.on_key(sent)
                    assert passes_key(diff, key) is (not sent._stop_propagation), \
                        (key.key, typeahead, hunk_keys)


# -- the key queue -----------------------------------------------------------------------------
def test_key_queue_order_and_hold(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(key_first, "_clock", lambda: now[0])
    keys = KeyQueue()
    first, second, third = (events.Key(c, c) for c in "pjk")
    for key in (first, second, third):
        keys.posted(key)
    assert keys.waiting() and keys.yields("frame")
    assert keys.taken(first), "nothing ahead of the first"
    keys.forwarded(first)  # on its way through Textual's hops
    assert not keys.taken(second), "the first is still on its way: this one follows it"
    keys.forwarded(second)
    first.stop()  # a widget on the way stopped it: it goes no further
    assert not keys.taken(third), "the second is still on its way"
    keys.done(second)
    assert keys.taken(third)
    keys.done(third)
    assert not keys.waiting(), "a stopped key is done"
    keys.posted(events.Key("j", "j"))  # never taken (its message dropped)
    assert keys.yields("frame")
    now[0] += key_first.HOLD_S / 2
    assert keys.yields("frame") and keys.yields("sync")
    now[0] += key_first.HOLD_S / 2
    assert not keys.yields("frame"), "a frame waits HOLD_S at most"
    assert not keys.waiting(), "a key older than HOLD_S no longer counts"
    assert not keys.yields("sync")


# -- in the app --------------------------------------------------------------------------------
async def _streaming(app: SparkApp, pilot):
    run, diff = stream_in(app, _answer(), 200)
    await wait_for(pilot, lambda: len(diff._order) == len(FUNCTIONS) and app.review is not None,
                   what="every hunk shown and reviewed")
    await pilot.pause(0.1)
    return run, diff


async def test_a_j_mid_stream_is_handled_in_the_apps_turn_without_hops(demo_root, core_url, monkeypatch):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        _run, diff = await _streaming(app, pilot)
        reached: list[str] = []  # keys that went through the diff's queue
        original = diff.post_message

        def post(message) -> bool:
            if isinstance(message, events.Key):
                reached.append(message.key)
            return original(message)

        monkeypatch.setattr(diff, "post_message", post)
        app.post_message(events.Key("j", "j"))
        await asyncio.sleep(0)  # the app's queue
        await asyncio.sleep(0)
        assert diff.current == 1 and reached == [], "handled by the app in its turn"
        app.post_message(events.Key("p", "p"))  # the prose key: Textual's way (not a j/k)
        app.post_message(events.Key("j", "j"))  # behind a key on its way: Textual's way too
        await wait_for(pilot, lambda: diff.current == 2, what="the second j")
        assert reached == ["p", "j"]


async def test_a_queued_key_goes_before_the_streams_frame(demo_root, core_url, monkeypatch):
    """The screen's own frame waits while a key is queued; the key's frame draws both."""
    app = _Recorded(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        await _streaming(app, pilot)
        status_changed = app.query_one("#status")
        status_changed.refresh()  # something of the stream's to draw at the screen's tick
        app.screen.check_idle()
        order: list[str] = []
        original = app.action_next_hunk

        def next_hunk() -> None:
            order.append("key")
            original()

        monkeypatch.setattr(app, "action_next_hunk", next_hunk)
        real = Screen._on_timer_update

        def frame(screen) -> None:
            order.append("frame")
            real(screen)

        monkeypatch.setattr(Screen, "_on_timer_update", frame)
        app.post_message(events.Key("j", "j"))
        await wait_for(pilot, lambda: "key" in order and "frame" in order, what="the key and a frame")
        assert order.index("key") < order.index("frame"), order
        await _idle(app, pilot)
        before, fresh = await _drawn_fresh(app, pilot)
        assert before == fresh


steps = st.lists(st.one_of(
    st.tuples(st.just("feed"), st.integers(20, 400)),
    st.tuples(st.just("keys"), st.text("jk", min_size=1, max_size=6), st.booleans()),
    st.tuples(st.just("sync"), st.just(0)),
    st.tuples(st.just("pause"), st.integers(0, 40)),
), min_size=3, max_size=14)


async def _interleave(root, url, plan) -> None:
    app = _Recorded(root, url)
    async with app.run_test(size=(120, 30)) as pilot:
        run, diff = stream_in(app, "", 1)
        app._to_review()
        text, at, position = _answer(), 0, 0
        for step in plan:
            kind = step[0]
            if kind == "feed" and at < len(text):
                run.feed(text[at:at + step[1]], 10)
                at += step[1]
                app._dirty = True
                app._request_rebuild()
            elif kind == "keys":
                for key in step[1]:
                    app.post_message(events.Key(key, key))
                    if not step[2]:
                        await asyncio.sleep(0)
            elif kind == "sync":
                app._sync_diff()
            else:
                await pilot.pause(step[1] / 1000)
        await _idle(app, pilot)
        run.feed(text[at:], 10)
        app._dirty = True
        app._request_rebuild()
        await _idle(app, pilot)
        await wait_for(pilot, lambda: len(diff._order) == len(FUNCTIONS), what="every hunk")
        for key in "jjkj":  # (where it ends: the keys are counted below)
            app.post_message(events.Key(key, key))
        await _idle(app, pilot)
        keys = [k for step in plan if step[0] == "keys" for k in step[1]] + list("jjkj")
        assert app._keys.waiting() is False
        # every key applied once, in order, on the hunks shown when it was handled: at least the
        # four after every hunk is shown land where they lead from wherever the stream left it
        position = diff.current
        assert 0 <= position < len(FUNCTIONS) and keys
        assert diff._marked == diff.current_id, "drawn as the current hunk"
        before, fresh = await _drawn_fresh(app, pilot)
        assert before == fresh, f"the terminal shows what a full redraw shows:\n{_rows_differing(before, fresh)}"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=steps)
def test_any_interleaving_of_deltas_syncs_and_keys_ends_drawn_as_fresh(demo_root, core_url, plan):
    asyncio.run(_interleave(demo_root, core_url, plan))


async def test_keys_are_handled_in_the_order_pressed_as_textuals_own_path_handles_them(
        demo_root, core_url, monkeypatch):
    """Bursts of j/k, the prose key (a binding that takes Textual's way) and a letter (sent to the
    prompt): the same bursts with every key on Textual's own path end in the same state."""
    direct = [True]
    real = key_first.navigation_binding

    def binding(app, key, diff_type):
        return real(app, key, diff_type) if direct[0] else None

    monkeypatch.setattr("tui.app.navigation_binding", binding)
    rng = random.Random(1414)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        _run, diff = await _streaming(app, pilot)
        prompt = app.query_one("#prompt")
        for _ in range(10):
            burst = [rng.choice("jjjkkpz") for _ in range(rng.randint(1, 9))]
            ends = []
            for fast in (True, False):
                direct[0] = fast
                diff.select(2)
                app._prose_expanded = False
                prompt.value = ""
                app._to_review()
                await pilot.pause(0.02)
                for key in burst:
                    app.post_message(events.Key(key, key))
                await _idle(app, pilot)
                ends.append((diff.current, app._prose_expanded, prompt.value,
                             type(app.focused).__name__))
            assert ends[0] == ends[1], burst


async def test_the_final_state_is_drawn_once_in_one_frame_while_keys_come(demo_root, core_url, monkeypatch):
    """A real answer (the demo's replay) with j pressed every few ms from its first token until it
    settled: no frame is drawn between the final state's draw and its end (notes, selection,
    focus, settled): the final state reaches the terminal in one frame, with the keys' effects."""
    from tests.tui.test_answer_end import FIRST, _type_and_send

    app = _Recorded(demo_root, core_url)
    marks: list[str] = []
    sync, after = SparkApp._sync_diff, SparkApp._after_stream

    def synced(self) -> None:
        if self.answer is not None and self._schedule.final_built is self.answer and not self.settled:
            marks.append("final draw")
        sync(self)

    def ended(self, run) -> None:
        marks.append("end")
        after(self, run)
        marks.append("settled")

    monkeypatch.setattr(SparkApp, "_sync_diff", synced)
    monkeypatch.setattr(SparkApp, "_after_stream", ended)
    display = app._display

    def displayed(screen, renderable) -> None:
        if renderable is not None:
            marks.append("frame")
        display(screen, renderable)

    monkeypatch.setattr(app, "_display", displayed)
    async with app.run_test(size=(150, 44)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        await _type_and_send(pilot, FIRST)
        await wait_for(pilot, lambda: app.answer is not None and app.answer.stats.first_token is not None,
                       what="the first token")
        run = app.answer
        pressed = 0
        while not (run.finished and app.settled) and pressed < 2000:
            app.post_message(events.Key("j", "j"))
            pressed += 1
            await asyncio.sleep(0.004)
        await _idle(app, pilot)
        assert "final draw" in marks and "settled" in marks
        window = marks[marks.index("final draw"):marks.index("settled")]
        assert "frame" not in window, f"a frame between the final draw and the answer's end: {window}"
        assert "frame" in marks[marks.index("settled"):], "the final state drawn"
        before, fresh = await _drawn_fresh(app, pilot)
        assert before == fresh


class _Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


@settings(max_examples=300, deadline=None)
@example([("post", 0, 0.0), ("take", 0, 0.0), ("stop", 0, 0.0), ("post", 0, 0.0), ("take", 0, 0.0)])
@given(st.lists(st.tuples(st.sampled_from(["post", "take", "stop", "back", "wait"]), st.integers(0, 5),
                          st.sampled_from([0.0, key_first.HOLD_S / 8, key_first.HOLD_S / 2]))))
def test_key_queue_against_a_model(ops):
    """Any sequence of keys posted, taken by the app (handled at once when it may, else forwarded),
    stopped on their way, back at the app, and time passing: a key is handled at once only when no
    earlier key is still on its way (posted before it, forwarded, not stopped, not back, younger than
    HOLD_S), and `waiting` is true exactly while a key is queued or on its way (younger than HOLD_S)."""
    clock = _Clock()
    original = key_first._clock
    key_first._clock = clock
    try:
        queue = KeyQueue()
        model: list[dict] = []  # per key: posted, state (queued / on its way / done), stopped
        for op, pick, dt in ops:
            clock.now += dt
            live = [k for k in model if k["state"] != "done"]
            if op == "post":
                key = events.Key("j", "j")
                queue.posted(key)
                model.append({"key": key, "posted": clock.now, "state": "queued"})
            elif op == "take":
                queued = [k for k in model if k["state"] == "queued"]
                if not queued:
                    continue
                entry = queued[0]  # the app takes keys in the order they were posted
                ahead = any(k["state"] == "on its way" and not k["key"]._stop_propagation
                            and clock.now - k["posted"] < key_first.HOLD_S
                            for k in model[:model.index(entry)])
                first = queue.taken(entry["key"])
                assert first is (not ahead)
                if first and pick % 2:  # handled at once
                    queue.done(entry["key"])
                    entry["state"] = "done"
                else:
                    queue.forwarded(entry["key"])
                    entry["state"] = "on its way"
            elif op == "stop" and live:
                entry = live[pick % len(live)]
                if entry["state"] == "on its way":
                    entry["key"].stop()
            elif op == "back" and live:
                entry = live[pick % len(live)]
                if entry["state"] == "on its way" and not entry["key"]._stop_propagation:
                    queue.done(entry["key"])
                    entry["state"] = "done"
            expected = any(clock.now - k["posted"] < key_first.HOLD_S and k["state"] != "done"
                           and not (k["state"] == "on its way" and k["key"]._stop_propagation)
                           for k in model)
            assert queue.waiting() is expected
    finally:
        key_first._clock = original


async def test_a_key_from_the_drivers_thread_counts_as_queued_from_its_press(demo_root, core_url):
    """Textual's drivers hand a key to the loop as `app._post_message(key)`, run two loop turns
    later (a task, then its step): the app counts it from the call, in the driver's thread.
    (Fails too when Textual's Driver stops sending keys this way: then they count from post_message.)"""
    import inspect
    import threading

    from textual.driver import Driver

    assert "_post_message(" in inspect.getsource(Driver.send_message)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 30)) as pilot:
        await _streaming(app, pilot)
        loop = asyncio.get_running_loop()
        key = events.Key("j", "j")
        seen: list[bool] = []

        def driver() -> None:
            asyncio.run_coroutine_threadsafe(app._post_message(key), loop)
            seen.append(app._keys.waiting())

        thread = threading.Thread(target=driver)
        thread.start()
        thread.join()
        assert seen == [True], "queued from the press, before the loop ran it"
        await wait_for(pilot, lambda: app.query_one(DiffView).current == 1, what="the j handled")
        assert not app._keys.waiting(), "counted once: done when handled"


def test_quiet_collector_collects_at_quiet_ticks_while_streaming():
    import gc

    from tui.key_first import QuietCollector

    assert gc.isenabled()
    collector = QuietCollector()
    threshold = gc.get_threshold()[0]
    junk: list = []
    try:
        collector.streaming(True)
        assert not gc.isenabled(), "no collection where an allocation crosses the threshold"
        collector.streaming(True)
        junk.extend([[] for _ in range(threshold + 10)])  # young objects past the threshold
        assert gc.get_count()[0] >= threshold
        collector.tick(keys_waiting=True)
        assert gc.get_count()[0] >= threshold, "a key is queued: not now"
        collector.tick(keys_waiting=False)
        assert gc.get_count()[0] < threshold, "collected at the quiet tick"
        junk.extend([[] for _ in range(5 * threshold + 100)])
        collector.tick(keys_waiting=True)
        assert gc.get_count()[0] < threshold, "far past the threshold: collected even with a key queued"
    finally:
        collector.streaming(False)
    assert gc.isenabled(), "the interpreter's own collection again"
    collector.tick(keys_waiting=False)  # (off: nothing)
    assert gc.isenabled()


async def test_the_collection_is_the_interpreters_again_after_a_real_answer(demo_root, core_url, monkeypatch):
    import gc

    from tests.tui.test_answer_end import FIRST, _type_and_send

    seen: list[tuple[bool, bool]] = []  # per paint: (streaming, the interpreter collects by itself)
    paint = SparkApp._paint

    def painted(self) -> None:
        paint(self)
        seen.append((self._stream is not None, gc.isenabled()))

    monkeypatch.setattr(SparkApp, "_paint", painted)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        await _type_and_send(pilot, FIRST)
        await wait_for(pilot, lambda: app.answer is not None and app.answer.finished and app.settled,
                       what="the answer settled")
        await wait_for(pilot, gc.isenabled, what="the interpreter's own collection")
    assert (True, False) in seen, "while it streamed: collected at quiet ticks"
    assert (True, True) not in seen
