"""Model-based test of the review loop: what the screen says is what is on disk.

A hypothesis `RuleBasedStateMachine` drives the REAL app (Textual pilot, the embedded core
with the replay backend, the demo project in a temp git repo) with random prompts, hunk
keys (a r A R x j k), undo, typing, edits made outside the app and core disconnects. After
every step it checks one invariant, from four independent witnesses:

- the screen: each hunk widget's drawn state and number, in the order drawn;
- the answer object the app holds (`app.answer`);
- the files on disk (a hunk drawn accepted has its new lines in the file, a hunk drawn
  anything else does not);
- the session record (the last decision recorded for each hunk, reverted ones undone) and
  the status bar's counts.

The app runs in its own thread and event loop, so hypothesis's synchronous rules can drive
it step by step (`_Driver.call`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from core.demo import write_demo

PROMPTS = [
    "format_money should show negative amounts in parentheses like accountants do",
    "Add docstrings to the functions in report.py",
    "Add an --unpaid-only flag to the command line that leaves paid invoices out of the report",
    "The loader should accept ISO timestamps like 2024-05-01T10:30:00 in the issued column",
    "Add a days_overdue(invoice, today) function to the report and show the worst overdue days per customer",
]
DEMO_FILES = ["invoicer/report.py", "invoicer/loader.py", "invoicer/__main__.py", "tests/test_report.py"]
STEP_TIMEOUT_S = 30.0


class _Driver:
    """The app under test, in a thread with its own event loop; `call` runs one step there."""

    def __init__(self, root: Path, core_url: str) -> None:
        from tui.app import SparkApp

        # dwell guard off: the loop's truth is under test here, not reading speed
        self.app = SparkApp(root, core_url, guards={"guards": {"dwell_lines_per_second": 0}})
        self.pilot = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self.thread.start()
        if not self._ready.wait(STEP_TIMEOUT_S):
            raise AssertionError("the app did not start")
        if self.failure is not None:
            raise self.failure

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            async with self.app.run_test(size=(100, 32)) as pilot:
                self.pilot = pilot
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - surfaced by the next call
            self.failure = exc
            self._ready.set()

    def call(self, step, timeout: float = STEP_TIMEOUT_S):
        if self.failure is not None:
            raise AssertionError(f"the app stopped: {self.failure!r}")
        assert self.loop is not None

        async def in_app_context():
            from textual._context import active_app

            active_app.set(self.app)  # as for code running in the app's own tasks
            return await step(self.pilot)

        future = asyncio.run_coroutine_threadsafe(in_app_context(), self.loop)
        return future.result(timeout)

    def close(self) -> None:
        if self.loop is not None and self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(timeout=15)


async def _until(pilot, condition, timeout: float = 20.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.03)


def _busy(app) -> bool:
    """An answer streaming or a write/undo/rebuild still running."""
    groups = {"answer", "apply", "rebuild", "check"}
    return (not app.settled) or any(w.group in groups and not w.is_finished for w in app.workers)


async def _settle(pilot) -> None:
    app = pilot.app
    await _until(pilot, lambda: not _busy(app), what="the app to settle")
    await pilot.pause(0.05)


def _drawn(app) -> list[tuple[str, str, str]]:
    """(hunk id, state word, 'i/n') for each hunk drawn, in the order they are drawn."""
    from tui.widgets.diff_view import DiffView

    view = app.query_one(DiffView)
    out = []
    for hunk_id in view.drawn_hunks:
        key = view._hunks[hunk_id].key
        if not key:
            continue
        out.append((hunk_id, _state_word(key[1]), f"{key[2]}/{key[3]}"))
    return out


def _state_word(state) -> str:
    return str(getattr(state, "value", state)).split(":")[0]


def _answer_state(answer, hunk_id: str) -> str:
    if hasattr(answer, "state"):
        return _state_word(answer.state(hunk_id))
    return _state_word(answer.state_of(hunk_id))


def _block(lines: list[str]) -> str:
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _in_file(text: str, lines: list[str]) -> bool:
    return _block(lines) in text if lines else True


class LoopMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        from core.embedded import EmbeddedCore

        self.tmp = Path(tempfile.mkdtemp(prefix="spark-loop-"))
        self._env = {k: os.environ.get(k) for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME",
                                                      "XDG_STATE_HOME", "HOME")}
        for key in self._env:
            os.environ[key] = str(self.tmp / key.lower())
        self.root = write_demo(self.tmp / "demo")
        self.core = EmbeddedCore(project_root=self.root)
        self.driver = _Driver(self.root, self.core.start())
        self.app = self.driver.app

        async def connected(pilot):
            await _until(pilot, lambda: pilot.app.client is not None, what="the core connection")

        self.driver.call(connected)

    def teardown(self) -> None:
        self.driver.close()
        self.core.stop()
        for key, value in self._env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers -----------------------------------------------------------------------------
    def _has_undecided(self) -> bool:
        answer = self.app.answer
        return answer is not None and any(
            _answer_state(answer, h.id) in {"undecided", "proposed"} for h in answer.hunks)

    def _has_open(self) -> bool:
        """A hunk a key can still decide (the app's `open`: undecided, stale or refused): then
        the review's letters act on hunks, not on the prompt."""
        answer = self.app.answer
        return answer is not None and any(
            _answer_state(answer, h.id) in {"undecided", "proposed", "stale", "refused"} for h in answer.hunks)

    def _review_mode(self) -> bool:
        """Where single-letter keys go to the hunks (the diff has focus)."""
        from tui.widgets.diff_view import DiffView

        return isinstance(self.app.focused, DiffView)

    # -- rules -------------------------------------------------------------------------------
    @rule(prompt=st.sampled_from(PROMPTS))
    def ask(self, prompt: str) -> None:
        async def step(pilot):
            app = pilot.app
            await _settle(pilot)
            before = app.answer
            prompt_input = app.query_one("#prompt")
            prompt_input.focus()
            prompt_input.value = ""
            await pilot.pause()
            await pilot.press(*prompt)
            await pilot.press("enter")
            await pilot.pause(0.05)
            if app.answer is before:  # the mentioned-file offer: Enter again sends as typed
                await pilot.press("enter")
            await _until(pilot, lambda: app.answer is not before, what="the answer to start")
            await _settle(pilot)

        self.driver.call(step)

    @precondition(lambda self: self.app.answer is not None)
    @rule(key=st.sampled_from(["a", "r", "A", "R", "j", "k"]))
    def hunk_key(self, key: str) -> None:
        async def step(pilot):
            await _settle(pilot)
            if not self._review_mode():
                await pilot.press("escape")  # back to the review
                await pilot.pause()
            await pilot.press(key)
            await _settle(pilot)

        self.driver.call(step)

    @precondition(lambda self: self._has_undecided())
    @rule()
    def reject_with_reason(self) -> None:
        from tui.screens.reason import ReasonScreen

        async def step(pilot):
            app = pilot.app
            await _settle(pilot)
            if not self._review_mode():
                await pilot.press("escape")
                await pilot.pause()
            await pilot.press("x")
            await pilot.pause(0.05)
            if isinstance(app.screen, ReasonScreen):
                await pilot.press(*"too long")
                await pilot.press("enter")
            await _settle(pilot)

        self.driver.call(step)

    @rule()
    def undo(self) -> None:
        async def step(pilot):
            await _settle(pilot)
            await pilot.press("ctrl+z")
            await pilot.pause(0.05)
            await _settle(pilot)

        self.driver.call(step)

    @precondition(lambda self: self.app.answer is not None)
    @rule(word=st.sampled_from(["google", "why", "more tests"]))
    def type_to_prompt(self, word: str) -> None:
        """`i` moves to the prompt from the review; what is typed lands there, nothing decided."""
        async def step(pilot):
            app = pilot.app
            await _settle(pilot)
            states = {h.id: _answer_state(app.answer, h.id) for h in app.answer.hunks}
            if self._review_mode():
                await pilot.press("i")
            prompt_input = app.query_one("#prompt")
            prompt_input.value = ""
            await pilot.press(*word)
            await pilot.pause()
            assert prompt_input.value == word, f"typed {word!r}, the prompt holds {prompt_input.value!r}"
            assert states == {h.id: _answer_state(app.answer, h.id) for h in app.answer.hunks}, \
                "typing in the prompt decided hunks"
            prompt_input.value = ""
            await pilot.press("escape")
            await _settle(pilot)

        self.driver.call(step)

    def _warned(self) -> bool:
        """The check before writing is waiting for w (write anyway) or e (reopen)."""
        answer = self.app.answer
        return answer is not None and answer.request_id in getattr(self.app, "_check_warned", {})

    @precondition(lambda self: self._warned())
    @rule(key=st.sampled_from(["w", "e"]))
    def answer_the_check(self, key: str) -> None:
        async def step(pilot):
            await _settle(pilot)
            if not self._review_mode():
                await pilot.press("escape")
                await pilot.pause()
            await pilot.press(key)
            await _settle(pilot)

        self.driver.call(step)

    @precondition(lambda self: self.app.answer is not None and not self._has_open() and not self._warned())
    @rule()
    def letter_with_nothing_to_decide(self) -> None:
        """With no undecided hunk a printable letter starts the next prompt."""
        async def step(pilot):
            app = pilot.app
            await _settle(pilot)
            prompt_input = app.query_one("#prompt")
            prompt_input.value = ""
            if not self._review_mode():
                await pilot.press("escape")
                await pilot.pause()
            await pilot.press("w")
            await pilot.pause()
            assert prompt_input.value.endswith("w"), f"'w' did not reach the prompt ({prompt_input.value!r})"
            prompt_input.value = ""
            await pilot.press("escape")
            await _settle(pilot)

        self.driver.call(step)

    @rule(path=st.sampled_from(DEMO_FILES), where=st.sampled_from(["top", "bottom"]))
    def outside_edit(self, path: str, where: str) -> None:
        """The user edits a file in another editor; the app's watcher sees it."""
        target = self.root / path
        text = target.read_text()
        line = "# edited outside\n"
        target.write_text(line + text if where == "top" else text + line)

        async def step(pilot):
            await pilot.pause(0.6)  # the watcher's debounce, then the staleness recheck
            await _settle(pilot)

        self.driver.call(step)

    @precondition(lambda self: self.app.answer is not None and any(h.old_lines for h in self.app.answer.hunks))
    @rule(data=st.data())
    def outside_edit_under_a_hunk(self, data) -> None:
        """The user edits, in another editor, a line a proposed hunk replaces: it goes stale."""
        hunks = [h for h in self.app.answer.hunks if h.old_lines]
        hunk = data.draw(st.sampled_from(hunks))
        target = self.root / hunk.path
        if not target.exists():
            return
        old = hunk.old_lines[0]
        text = target.read_text()
        if old not in text:
            return
        target.write_text(text.replace(old, old.rstrip("\n") + "  # changed outside\n", 1))

        async def step(pilot):
            await pilot.pause(0.6)
            await _settle(pilot)

        self.driver.call(step)

    @rule()
    def core_disconnect(self) -> None:
        """The connection to the core drops (the client reconnects by itself)."""
        async def step(pilot):
            app = pilot.app
            client = app.client
            if client is not None and client._ws is not None:
                await client._ws.close()
            await pilot.pause(0.2)
            await _until(pilot, lambda: app.client is None or app.client.state == "connected",
                         what="the client to reconnect")
            await _settle(pilot)

        self.driver.call(step)

    # -- the invariant ---------------------------------------------------------------------------
    @invariant()
    def screen_answer_disk_record_agree(self) -> None:
        async def snapshot(pilot):
            await _settle(pilot)
            app = pilot.app
            status = app.query_one("#status")
            from tui.widgets.diff_view import DiffView

            notes = app.query_one(DiffView).notes_text
            return _drawn(app), app.answer, str(status.render()), notes

        drawn, answer, status_text, notes = self.driver.call(snapshot)
        if answer is None:
            assert not drawn
            return
        hunks = answer.hunks
        # hunks drawn in the answer's order, numbered as drawn, in file order
        assert [d[0] for d in drawn] == [h.id for h in hunks], "hunks drawn out of the answer's order"
        assert [d[2] for d in drawn] == [f"{i}/{len(hunks)}" for i in range(1, len(hunks) + 1)], \
            f"hunks numbered {[d[2] for d in drawn]}"
        for path in {h.path for h in hunks}:
            starts = [h.old_start for h in hunks if h.path == path]
            assert starts == sorted(starts), f"{path}: hunks not in file order {starts}"
        # the screen says what the answer holds
        for hunk_id, shown, _ in drawn:
            assert shown == _answer_state(answer, hunk_id), \
                f"{hunk_id} drawn {shown!r}, the answer holds {_answer_state(answer, hunk_id)!r}"
        # ... and what the answer holds is what is on disk
        old_texts = {fp.path: fp.old_text for fp in (answer.proposal.files if answer.proposal else [])}
        for hunk in hunks:
            shown = _answer_state(answer, hunk.id)
            disk = self.root / hunk.path
            text = disk.read_text() if disk.exists() else ""
            distinct = hunk.new_lines and not _in_file(old_texts.get(hunk.path, ""), hunk.new_lines)
            if shown in {"accepted", "written"} and hunk.new_lines:
                assert _in_file(text, hunk.new_lines), f"{hunk.id} shown {shown} but its lines are not on disk"
            if shown not in {"accepted", "written"} and distinct:
                assert not _in_file(text, hunk.new_lines), f"{hunk.id} shown {shown} but its lines are on disk"
        # the status bar's counts are the answer's
        written = sum(1 for h in hunks if _answer_state(answer, h.id) in {"accepted", "written"})
        rejected = sum(1 for h in hunks if _answer_state(answer, h.id) == "rejected")
        m = re.search(r"(\d+) accepted", status_text)
        if m:
            assert int(m.group(1)) == written, f"status bar says {m.group(0)}, {written} hunk(s) are written"
        m = re.search(r"(\d+) rejected", status_text)
        if m:
            assert int(m.group(1)) == rejected, f"status bar says {m.group(0)}, {rejected} rejected"
        # the session record agrees: last recorded decision per hunk of this answer
        recorded = self._recorded_accepts(answer)
        shown_accepted = {h.id for h in hunks if _answer_state(answer, h.id) in {"accepted", "written"}}
        assert recorded == shown_accepted, f"record says accepted {sorted(recorded)}, screen {sorted(shown_accepted)}"
        # the session report is built from the same records: its row for this answer and its
        # slop figure agree with the screen and the status bar
        from core.report.recorder import load_events
        from core.report.report import build_report

        report = build_report(load_events(self.app.station.recorder.path)[0])
        rows = {a.request_id: a for a in report.answer_list}
        row = rows.get(answer.request_id)
        if row is not None:
            assert (row.accepted, row.rejected) == (written, rejected), \
                f"report row says {row.accepted} accepted / {row.rejected} rejected, the screen {written} / {rejected}"
        assert report.hunks_accepted + report.hunks_rejected <= report.hunks_shown
        m = re.search(r"slop ([\d.]+)/100 lines", status_text)
        if m and report.slop_findings:
            assert m.group(1) == f"{report.slop_score:.1f}", f"status bar slop {m.group(1)}, report {report.slop_score:.1f}"
        # a failed stream says so where the hunks would be
        if getattr(answer, "error", None):
            assert "proposes no change" not in notes, "a failed stream reads as 'no change'"
            assert "error" in notes.lower() or "failed" in notes.lower(), "the failure is not in the diff area"

    def _recorded_accepts(self, answer) -> set[str]:
        path = self.app.station.recorder.path
        ids = {h.id for h in answer.hunks}
        state: dict[str, bool] = {}
        for line in path.read_text().splitlines():
            event = json.loads(line)
            hid = event.get("hunk_id")
            if hid not in ids:
                continue
            rid = event.get("request_id")
            if rid is not None and rid != answer.request_id:
                continue
            if event.get("type") == "hunk_decided":
                state[hid] = bool(event.get("accepted"))
            elif event.get("type") == "hunk_reverted":
                state[hid] = False
        return {hid for hid, ok in state.items() if ok}


LoopMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("SPARK_LOOP_EXAMPLES", "3")),
    stateful_step_count=int(os.environ.get("SPARK_LOOP_STEPS", "10")),
    deadline=None,
    # shrinking replays whole app sessions: minutes for little gain; the steps print as run
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
TestLoopStateMachine = LoopMachine.TestCase
