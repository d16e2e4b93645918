"""The sparkstation workstation: prompt, streaming diff, one-key decisions, status.

The app holds no business logic: `core.session.AnswerRun` parses and diffs, the core client
streams, the workspace writes. The app wires them to widgets and keys, paints at most once
per frame, and runs diffing off the UI loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input, Static

from core.session import AnswerRun, open_workspace
from themes import DEFAULT_THEME, register_themes
from tui.widgets.diff_view import DiffView
from tui.widgets.status import StatusBar

FRAME_S = 1 / 60


class SparkApp(App):
    """Full-screen workstation on one project folder, talking to one core."""

    TITLE = "sparkstation"
    CSS = """
    Screen { layout: vertical; }
    #main { height: 1fr; }
    #side { width: 36; border: round $panel; padding: 0 1; }
    #prompt { dock: bottom; }
    StatusBar { height: 1; background: $panel; }
    """

    BINDINGS = [
        Binding("a", "accept", "Accept hunk"),
        Binding("r", "reject", "Reject hunk"),
        Binding("A", "accept_all", "Accept all"),
        Binding("R", "reject_all", "Reject all"),
        Binding("j", "next_hunk", "Next", show=False),
        Binding("k", "prev_hunk", "Prev", show=False),
        Binding("escape", "cancel", "Stop"),
        Binding("ctrl+l", "toggle_profile", "Spark/Base"),
    ]

    def __init__(self, root: Path, core_url: str, *, profile: str = "spark", theme: str | None = None) -> None:
        super().__init__()
        self.root = Path(root)
        self.core_url = core_url
        self.profile = profile
        self.workspace = open_workspace(self.root)
        self.client = None
        self.answer: AnswerRun | None = None
        self._stream = None
        self._dirty = False
        self._rebuild_needed = False
        self._rebuilding = False
        register_themes(self)
        self.theme = theme or DEFAULT_THEME

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield DiffView(id="diff")
            with Vertical(id="side"):
                yield Static(Text(f"{self.root}", style="bold"), id="tree")
                yield Static("", id="findings")
        yield Input(placeholder="Ask for a change, Enter to send", id="prompt")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(StatusBar).profile = self.profile
        self.query_one("#prompt", Input).focus()
        self.set_interval(FRAME_S, self._paint)
        self._connect()

    @work(exclusive=True, group="connect")
    async def _connect(self) -> None:
        from core.client import CoreClient

        status = self.query_one(StatusBar)
        try:
            self.client = await CoreClient.connect(self.core_url)
        except Exception as exc:  # shown, not raised: the user can still read the tree
            status.connection = "unreachable"
            self.notify(f"core at {self.core_url} does not answer: {exc}", severity="error", timeout=10)
            return
        status.connection = "connected"
        names = [p["name"] for p in self.client.profiles]
        if self.profile not in names:
            self.notify(f"unknown profile {self.profile!r}; the core offers {', '.join(names)}", severity="error")

    # -- prompt -> stream --------------------------------------------------------------------
    @on(Input.Submitted, "#prompt")
    def _submit(self, event: Input.Submitted) -> None:
        prompt = event.value.strip()
        if not prompt:
            return
        if self.client is None:
            self.notify("not connected to the core yet", severity="warning")
            return
        if self.answer is not None and not self.answer.finished:
            self.notify("an answer is still streaming: press escape to stop it", severity="warning")
            return
        event.input.value = ""
        self._start_answer(prompt)

    def _messages_for(self, prompt: str) -> list[dict]:
        from core.edits.instructions import EDIT_FORMAT_SYSTEM_PROMPT

        return [
            {"role": "system", "content": EDIT_FORMAT_SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ]

    @work(exclusive=True, group="answer")
    async def _start_answer(self, prompt: str) -> None:
        run = AnswerRun(self.workspace, prompt, self.profile)
        self.answer = run
        diff = self.query_one(DiffView)
        diff.reset(Text(f"> {prompt}", style="bold"))
        diff.focus()
        status = self.query_one(StatusBar)
        status.streaming, status.tokens, status.note = True, 0, ""
        error = None
        try:
            self._stream = await self.client.generate(self.profile, self._messages_for(prompt))
            async for event in self._stream:
                text = getattr(event, "text", None)
                if text is None:
                    continue
                if run.feed(text, getattr(event, "tokens", 1)):
                    self._request_rebuild()
                self._dirty = True
            done = self._stream.done
            run.source = getattr(done, "source", None) if done else None
            run.finish(getattr(done, "reason", None))
        except Exception as exc:  # a stream error ends this answer only
            error = str(exc)
            run.finish("error", error)
        finally:
            self._stream = None
        await self._rebuild_now()
        self._dirty = True
        self._paint()
        status.streaming = False
        if error:
            self.notify(f"stream failed: {error}", severity="error", timeout=8)
        self._after_stream(run)

    def _after_stream(self, run: AnswerRun) -> None:
        diff = self.query_one(DiffView)
        notes = Text(f"> {run.prompt}", style="bold")
        if run.source and run.source.get("backend") == "replay":
            notes.append(f"\nreplayed recording '{run.source.get('id')}'", style="dim")
        for err in run.parse_errors:
            notes.append(f"\n! {err}", style="red")
        if run.proposal:
            for err in run.proposal.errors:
                notes.append(f"\n! {err.path}: {err.message}", style="red")
        if not run.hunks:
            notes.append("\nThe answer proposes no change.", style="yellow")
            self.query_one("#prompt", Input).focus()
        else:
            notes.append(f"\n{len(run.hunks)} hunk(s): a accept, r reject, A/R all, j/k move", style="dim")
            diff.select(0)
        diff.set_notes(notes)

    def _request_rebuild(self) -> None:
        self._rebuild_needed = True
        if not self._rebuilding:
            self._rebuild_worker()

    @work(group="rebuild")
    async def _rebuild_worker(self) -> None:
        await self._rebuild_now()

    async def _rebuild_now(self) -> None:
        """Re-diff the completed edits off the UI loop; coalesces requests made meanwhile."""
        run = self.answer
        if run is None:
            return
        while self._rebuilding:
            await asyncio.sleep(FRAME_S)
        self._rebuilding = True
        try:
            self._rebuild_needed = True
            while self._rebuild_needed:
                self._rebuild_needed = False
                await asyncio.to_thread(run.rebuild_proposal)
            self.query_one(DiffView).sync(run.hunks, run.decisions)
        finally:
            self._rebuilding = False

    def _paint(self) -> None:
        """At most once per frame: the pending block and the live numbers."""
        if not self._dirty or self.answer is None:
            return
        self._dirty = False
        run = self.answer
        self.query_one(DiffView).set_pending(run.pending)
        status = self.query_one(StatusBar)
        status.tokens = run.stats.tokens
        status.tokens_per_s = run.stats.tokens_per_s
        status.ttft_ms = run.stats.ttft_ms

    # -- decisions ---------------------------------------------------------------------------
    def _decide(self, accept: bool, everything: bool = False) -> None:
        run = self.answer
        if run is None or not run.finished or not run.hunks or run.applied:
            return
        diff = self.query_one(DiffView)
        if everything:
            run.decide_all(accept)
        elif diff.current_id is not None:
            run.decide(diff.current_id, accept)
        diff.sync(run.hunks, run.decisions)
        undecided = run.undecided
        if undecided:
            diff.select([h.id for h in run.hunks].index(undecided[0]))
            return
        self._apply(run)

    def _apply(self, run: AnswerRun) -> None:
        accepted = len(run.accepted)
        try:
            result = run.apply()
        except Exception as exc:
            self.notify(f"nothing written: {exc}", severity="error", timeout=10)
            return
        written = list(getattr(result, "written", []))
        refused = list(getattr(result, "refused", []))
        if written:
            self.notify(f"wrote {', '.join(written)}")
        for err in refused:
            self.notify(f"refused {err.path}: {err.message}", severity="error", timeout=10)
        note = f"{accepted} accepted, {len(run.hunks) - accepted} rejected"
        self.query_one(StatusBar).note = note
        self.query_one("#prompt", Input).focus()

    def action_accept(self) -> None:
        self._decide(True)

    def action_reject(self) -> None:
        self._decide(False)

    def action_accept_all(self) -> None:
        self._decide(True, everything=True)

    def action_reject_all(self) -> None:
        self._decide(False, everything=True)

    def action_next_hunk(self) -> None:
        diff = self.query_one(DiffView)
        diff.select(diff.current + 1)

    def action_prev_hunk(self) -> None:
        diff = self.query_one(DiffView)
        diff.select(diff.current - 1)

    async def action_cancel(self) -> None:
        if self._stream is not None:
            await self._stream.cancel()

    def action_toggle_profile(self) -> None:
        names = [p["name"] for p in (self.client.profiles if self.client else [])] or ["spark", "base"]
        others = [n for n in ("spark", "base") if n in names and n != self.profile]
        if others:
            self.profile = others[0]
            self.query_one(StatusBar).profile = self.profile

    async def on_unmount(self) -> None:
        if self.client is not None:
            await self.client.close()
