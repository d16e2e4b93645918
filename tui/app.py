"""The sparkstation workstation: prompt, streaming diff, one-key decisions, status.

The app holds no business logic: `core.session` parses, diffs and reviews, the core client
streams, the workspace writes. The app wires them to widgets and keys, paints at most once
per frame, and runs diffing, detectors and disk work off the UI loop.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import time
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Input

from core.session import AnswerRun, Review, Workstation
from themes import DEFAULT_THEME, register_themes
from tui.palette import WorkstationCommands
from tui.screens.help import HelpScreen
from tui.widgets.diff_view import DiffView
from tui.widgets.side_panel import SidePanel
from tui.widgets.status import StatusBar

FRAME_S = 1 / 120


class SparkApp(App):
    """Full-screen workstation on one project folder, talking to one core."""

    TITLE = "sparkstation"
    COMMANDS = App.COMMANDS | {WorkstationCommands}
    CSS = """
    Screen { layout: vertical; }
    #main { height: 1fr; }
    #prompt { dock: bottom; }
    StatusBar { height: 1; background: $panel; }
    """

    # Every binding has an id so `[ui.keys]` in the config can rebind it (Textual keymaps).
    BINDINGS = [
        Binding("a", "accept", "Accept", id="accept"),
        Binding("r", "reject", "Reject", id="reject"),
        Binding("A", "accept_all", "Accept all", id="accept_all"),
        Binding("R", "reject_all", "Reject all", id="reject_all"),
        Binding("x", "reject_with_reason", "Reject, say why", id="reject_with_reason"),
        Binding("b", "ask_base", "Re-ask Base", id="ask_base"),
        Binding("j", "next_hunk", "Next hunk", id="next_hunk"),
        Binding("k", "prev_hunk", "Prev hunk", id="prev_hunk"),
        Binding("escape", "cancel", "Stop stream", id="cancel"),
        Binding("ctrl+l", "toggle_profile", "Spark/Base", id="toggle_profile", priority=True),
        Binding("ctrl+r", "race", "Race", id="race", priority=True),
        Binding("ctrl+n", "fresh_context", "Fresh context", id="fresh_context", priority=True),
        Binding("ctrl+z", "undo", "Undo", id="undo", priority=True),
        Binding("ctrl+g", "variations", "Variations", id="variations", priority=True),
        Binding("ctrl+b", "batch", "Batch", id="batch", priority=True),
        Binding("ctrl+t", "report", "Report", id="report", priority=True),
        Binding("ctrl+f", "pick_files", "Add files", id="pick_files", priority=True),
        Binding("ctrl+o", "add_mentioned", "Add mentioned files", id="add_mentioned", priority=True),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("f1", "help", "Help", id="help_f1", show=False, priority=True),
    ]

    def __init__(self, root: Path, core_url: str, *, profile: str = "spark", theme: str | None = None,
                 keymap: dict[str, str] | None = None, guards: dict | None = None,
                 add: list[str] | None = None, race_prompt: str | None = None, on_ready=None) -> None:
        super().__init__()
        self.root = Path(root)
        self.core_url = core_url
        self.profile = profile
        self.station = Workstation(self.root, guards=guards)
        self._initial_files = list(add or [])
        self._race_prompt = race_prompt
        self._on_ready = on_ready  # called with the app once connected (spark vary / batch open screens)
        self.workspace = self.station.workspace
        self.client = None
        self.answer: AnswerRun | None = None
        self.review: Review | None = None
        self.last_prompt = ""
        self._stream = None
        self._dirty = False
        self._rebuild_needed = False
        self._rebuilding = False
        self._stop_watch = asyncio.Event()
        self._offered: tuple[str, list[str]] | None = None
        self._pending_redirects: list[str] = []
        self._confirmed: set[str] = set()  # hunks whose secret/sensitive warning was seen once
        self._own_writes: dict[str, float] = {}  # path -> when we wrote it (the watcher sees it too)
        self.settled = True  # False from a prompt until its answer is fully shown (tests wait on it)
        register_themes(self)
        self.theme = theme or DEFAULT_THEME
        if keymap:
            self.set_keymap(keymap)

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield DiffView(id="diff")
            yield SidePanel(self.root.name, id="side")
        yield Input(placeholder="Ask for a change, Enter to send (while streaming: Enter steers)", id="prompt",
                    select_on_focus=False)
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        # Streaming allocates many short-lived render objects: collect the young generation
        # less often, and keep start-up objects out of full collections (which otherwise
        # stall a frame for tens of ms; bench/bench_tui.py measures it).
        gc.freeze()
        gc.set_threshold(20_000, 20, 50)
        self.query_one(StatusBar).profile = self.profile
        self.query_one("#prompt", Input).focus()
        self.set_interval(FRAME_S, self._paint)
        self._connect()
        self._build_indexes()
        if self._initial_files:
            try:
                self.station.context.add(self._initial_files)
            except Exception as exc:
                self.notify(str(exc), severity="error", timeout=10)
        self._watch()

    def watch_theme(self, theme: str) -> None:
        from core.ui_config import remember_theme

        if self.is_mounted:  # a switch made by the user, not the start-up choice
            remember_theme(theme)

    @work(exclusive=True, group="connect")
    async def _connect(self) -> None:
        from core.client import CoreClient

        status = self.query_one(StatusBar)

        def on_state(state: str) -> None:
            status.connection = state

        try:
            self.client = await CoreClient.connect(self.core_url, on_state=on_state)
        except Exception as exc:  # shown, not raised: the user can still read the tree
            status.connection = "unreachable"
            self.notify(f"core at {self.core_url} does not answer: {exc}", severity="error", timeout=10)
            return
        status.connection = "connected"
        self._use_profile(self.profile)
        names = [p["name"] for p in self.client.profiles]
        if self.profile not in names:
            self.notify(f"unknown profile {self.profile!r}; the core offers {', '.join(names)}", severity="error")
        if self._race_prompt:
            await self.action_race(self._race_prompt)
        if self._on_ready is not None:
            result = self._on_ready(self)
            if inspect.isawaitable(result):
                await result

    @work(thread=True, group="index")
    def _build_indexes(self) -> None:
        self.station.build_indexes()

    @work(group="watch")
    async def _watch(self) -> None:
        """Changes made in another editor show up at once; proposals they touch are re-checked."""
        from core.workspace.watch import watch_tree

        panel = self.query_one(SidePanel)
        async for batch in watch_tree(self.root, self._stop_watch, extra_ignore=[".spark/"]):
            changes = [(c.path, c.kind) for c in batch]
            now = time.monotonic()
            panel.add_changes([(p, "spark" if now - self._own_writes.get(p, -99) < 3 else k) for p, k in changes])
            instruction = await asyncio.to_thread(self.station.on_file_changes, changes)
            await self._recheck_staleness()
            if instruction and self._stream is None and self.client is not None:
                self.notify("AI! comment found: sending it")
                self._start_answer(instruction)

    async def _recheck_staleness(self) -> None:
        run = self.answer
        if run is None or run.proposal is None or run.applied:
            return
        status = await asyncio.to_thread(run.proposal.status, self.workspace)
        run.file_status = status
        self._sync_diff()

    # -- prompt -> stream --------------------------------------------------------------------
    @on(Input.Submitted, "#prompt")
    async def _submit(self, event: Input.Submitted) -> None:
        prompt = event.value.strip()
        if not prompt:
            return
        if self._stream is not None:  # typing while it streams redirects it
            event.input.value = ""
            self._pending_redirects.append(prompt)  # the parser restarts when the core says "steered"
            await self._stream.steer(prompt)
            self.notify(f"steering: {prompt}")
            return
        if prompt.startswith("/"):
            event.input.value = ""
            await self._slash_command(prompt)
            return
        if self.client is None:
            self.notify("not connected to the core yet", severity="warning")
            return
        mentioned = await asyncio.to_thread(self.station.context.mentioned_paths, prompt)
        if mentioned and self._offered != (prompt, mentioned):
            self._offered = (prompt, mentioned)
            self.notify(f"mentioned but not in the chat: {', '.join(mentioned)}. "
                        "ctrl+o adds and sends; Enter sends without", timeout=8)
            return
        event.input.value = ""
        self._offered = None
        self._start_answer(prompt)

    async def action_pick_files(self) -> None:
        """The fuzzy file picker: the chosen file goes into the chat."""
        from tui.screens.file_picker import FilePickerScreen

        files = await asyncio.to_thread(self.station.context.tree_files)
        in_chat = {f.path for f in self.station.context.files}

        async def picked(choice) -> None:
            if choice is None:
                return
            try:
                await asyncio.to_thread(self.station.context.add, [choice.path], choice.read_only)
            except Exception as exc:  # refused (binary, huge, ignored): say why
                self.notify(str(exc), severity="error", timeout=8)
                return
            self.notify(f"added {choice.path}" + (" (read-only)" if choice.read_only else ""))
            self._update_context_meter()

        self.push_screen(FilePickerScreen(files, in_chat), picked)

    async def action_add_mentioned(self) -> None:
        """Add the files the prompt mentions (the one-key offer), then send the prompt."""
        prompt_input = self.query_one("#prompt", Input)
        prompt = prompt_input.value.strip()
        mentioned = await asyncio.to_thread(self.station.context.mentioned_paths, prompt) if prompt else []
        if mentioned:
            try:
                await asyncio.to_thread(self.station.context.add, mentioned)
            except Exception as exc:
                self.notify(str(exc), severity="error")
                return
            self.notify(f"added {', '.join(mentioned)}")
        self._update_context_meter()
        if prompt and self.client is not None and self._stream is None:
            prompt_input.value = ""
            self._offered = None
            self._start_answer(prompt)

    async def _slash_command(self, line: str) -> None:
        from core.context.commands import COMMANDS, parse_command, run_command

        command = parse_command(line)
        if command is None:
            self.notify(f"unknown command {line.split()[0]}; known: "
                        + " ".join(f"/{name}" for name in COMMANDS), severity="warning")
            return
        result = await asyncio.to_thread(run_command, self.station.context, command)
        if command.name == "clear":
            self.station.fresh_context()
        diff = self.query_one(DiffView)
        diff.set_notes(Text(result.text, style="" if result.ok else "red"))
        self._update_context_meter()

    @work(exclusive=True, group="answer")
    async def _start_answer(self, prompt: str) -> None:
        from core.client import Info

        self.last_prompt = prompt
        run = AnswerRun(self.workspace, prompt, self.profile)
        self.answer, self.review, self.settled = run, None, False
        diff = self.query_one(DiffView)
        diff.reset(Text(f"> {prompt}", style="bold"))
        diff.focus()
        diff.typeahead = True
        status = self.query_one(StatusBar)
        status.streaming, status.tokens, status.note = True, 0, ""
        error = None
        try:
            messages, answer_budget = await asyncio.to_thread(self.station.request, run)
            self._update_context_meter()
            self._stream = await self.client.generate(self.profile, messages, max_tokens=answer_budget)
            async for event in self._stream:
                if isinstance(event, Info):
                    if event.event == "steered" and self._pending_redirects:
                        run.steered(self._pending_redirects.pop(0))
                    continue
                if run.feed(event.text, event.tokens):
                    self._request_rebuild()
                self._dirty = True
            done = self._stream.done
            run.source = done.source if done else None
            run.usage = done.usage if done else None
            run.finish(done.reason if done else None)
        except Exception as exc:  # a stream error ends this answer only
            error = str(exc)
            run.finish("error", error)
        finally:
            self._stream = None
            self.query_one(DiffView).typeahead = False
        await self._rebuild_now()
        self._dirty = True
        self._paint()
        status.streaming = False
        if error:
            self.notify(f"stream failed: {error}", severity="error", timeout=8)
        profile = self._profile_info(run.profile)
        await asyncio.to_thread(self.station.answer_finished, run, self.review,
                                chip=profile.get("chip"), model=profile.get("model"))
        self._update_context_meter()
        self._after_stream(run)

    def _after_stream(self, run: AnswerRun) -> None:
        diff = self.query_one(DiffView)
        notes = Text(f"> {run.prompt}", style="bold")
        if run.origin:
            notes.append(f"  ({run.origin})", style="dim")
        if run.reason == "cancelled":
            notes.append("\nstopped: the hunks completed so far can still be decided", style="yellow")
        if run.source and run.source.get("backend") == "replay":
            notes.append(f"\nreplayed recording '{run.source.get('id')}'", style="dim")
        for err in run.parse_errors:
            notes.append(f"\n! {getattr(err, 'message', err)}", style="red")
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
        self._update_session_status()
        self.settled = True

    @on(DiffView.TypeAhead)
    def _type_ahead(self, message: DiffView.TypeAhead) -> None:
        prompt = self.query_one("#prompt", Input)
        prompt.focus()
        prompt.insert_text_at_cursor(message.character)

    def _request_rebuild(self) -> None:
        self._rebuild_needed = True
        if not self._rebuilding:
            self._rebuild_worker()

    @work(group="rebuild")
    async def _rebuild_worker(self) -> None:
        await self._rebuild_now()

    async def _rebuild_now(self) -> None:
        """Re-diff and review the completed edits off the UI loop; coalesces requests."""
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
                review = await asyncio.to_thread(self.station.review, run)
                if run is self.answer:
                    self.review = review
            self._sync_diff()
        finally:
            self._rebuilding = False

    def _sync_diff(self) -> None:
        run = self.answer
        if run is None:
            return
        states = dict(run.decisions)
        stale_files = {p for p, s in getattr(run, "file_status", {}).items() if s == "stale"}
        if stale_files and not run.applied:
            for hunk in run.hunks:
                if hunk.path in stale_files and states.get(hunk.id) == "proposed":
                    states[hunk.id] = "stale"
        badges = self.review.badges() if self.review else {}
        self.station.hunks_shown(run)
        self.query_one(DiffView).sync(run.hunks, states, badges, run.hunk_context())
        self.query_one(SidePanel).set_findings(
            [(f.severity, f.message) for f in (self.review.findings if self.review else [])])

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

    def _update_session_status(self) -> None:
        score = self.station.session_slop_score
        parts = []
        if score is not None:
            parts.append(f"slop {score:.1f}/100 lines")
        growth = self.station.growth
        if growth is not None and growth.added:
            parts.append(f"growth +{growth.added} ({growth.state.share:.1%})")
        self.query_one(StatusBar).extra = "  ".join(parts)

    # -- decisions ---------------------------------------------------------------------------
    def _decide(self, accept: bool, everything: bool = False, reason: str | None = None) -> None:
        run = self.answer
        if run is None or not run.finished or not run.hunks or run.applied:
            return
        diff = self.query_one(DiffView)
        targets = run.undecided if everything else [diff.current_id] if diff.current_id else []
        by_id = {h.id: h for h in run.hunks}
        too_fast = []
        for hunk_id in targets:
            if run.state_of(hunk_id) != "proposed":
                continue
            unread = False
            if accept:
                gate = self.review.gate(hunk_id) if self.review else None
                if gate is not None and gate[0] == "block":
                    self.notify(f"{gate[1]} (b re-asks the deep profile)", severity="error", timeout=8)
                    self._sync_diff()
                    return
                if gate is not None and hunk_id not in self._confirmed:
                    self._confirmed.add(hunk_id)
                    self.notify(f"{gate[1]}: press again to accept anyway, b re-asks the deep profile",
                                severity="warning", timeout=8)
                    self._sync_diff()
                    return
                # Review-dwell guard: an accept faster than reading asks once, then counts unread.
                verdict = self.station.check_accept(hunk_id)
                if not verdict.ok:
                    too_fast.append((hunk_id, verdict))
                    continue
                unread = verdict.unread
            run.decide(hunk_id, accept)
            self.station.decided(run, by_id[hunk_id], accept, unread=unread, reason=reason)
        if too_fast:
            hunk_id, verdict = too_fast[0]
            diff.select([h.id for h in run.hunks].index(hunk_id))
            self.notify(f"{len(too_fast)} hunk(s) on screen {verdict.dwelt_s:.1f} s, reading takes "
                        f"~{verdict.needed_s:.1f} s: press again to accept unread", severity="warning")
        self._sync_diff()
        self.query_one(StatusBar).unread = self.station.dwell.unread_accepts
        undecided = run.undecided
        if undecided:
            diff.select([h.id for h in run.hunks].index(undecided[0]))
            return
        self.query_one("#prompt", Input).focus()  # decided: the next request can be typed at once
        self._apply(run)

    @work(exclusive=True, group="apply")
    async def _apply(self, run: AnswerRun) -> None:
        accepted = len(run.accepted)
        now = time.monotonic()  # before writing: the watcher reports our own writes quickly
        self._own_writes.update({h.path: now for h in run.hunks if h.id in run.accepted})
        try:
            result = await asyncio.to_thread(run.apply)
        except Exception as exc:
            self.notify(f"nothing written: {exc}", severity="error", timeout=10)
            return
        self.station.applied(run, result)
        self._update_session_status()
        if result.written:
            self.notify(f"wrote {', '.join(result.written)}")
        for err in result.refused:
            self.notify(f"refused {err.path}: {err.message}", severity="error", timeout=10)
        note = f"{accepted} accepted, {len(run.hunks) - accepted} rejected"
        self.query_one(StatusBar).note = note
        self._sync_diff()
        self.query_one("#prompt", Input).focus()

    def action_accept(self) -> None:
        self._decide(True)

    def action_reject(self) -> None:
        self._decide(False)

    def action_reject_with_reason(self) -> None:
        """Reject the current hunk and say why in one line; the model hears it next time."""
        from tui.screens.reason import ReasonScreen

        run = self.answer
        if run is None or not run.finished or not run.hunks or run.applied:
            return

        def done(reason: str | None) -> None:
            if reason is not None:
                self._decide(False, reason=reason.strip() or None)

        self.push_screen(ReasonScreen(), done)

    def action_ask_base(self) -> None:
        """Re-ask the current prompt on the deep profile (the answer to a sensitive-path flag)."""
        names = [p["name"] for p in (self.client.profiles if self.client else [])]
        if "base" not in names or not self.last_prompt or self._stream is not None:
            self.notify("nothing to re-ask, or no base profile", severity="warning")
            return
        self._use_profile("base")
        self._start_answer(self.last_prompt)

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
            self._use_profile(others[0])
            self.notify(f"profile: {self.profile}")

    def _use_profile(self, name: str) -> None:
        self.profile = name
        self.query_one(StatusBar).profile = name
        window = self._profile_info(name).get("context_window")
        if isinstance(window, int) and window >= 1024:
            self.station.set_window(window)
            self._update_context_meter()

    def action_help(self) -> None:
        rows = [(keys, b.action, b.description) for keys, b in self._active_bindings()]
        self.push_screen(HelpScreen(rows))

    def _active_bindings(self):
        """The app's bindings as currently bound (keymap overrides applied), one per action."""
        by_action: dict[str, list[str]] = {}
        first: dict[str, object] = {}
        for key, binding in self._bindings:
            if binding.description:
                by_action.setdefault(binding.action, []).append(key)
                first.setdefault(binding.action, binding)
        return [(",".join(keys), first[action]) for action, keys in by_action.items()]

    def action_fresh_context(self) -> None:
        self.station.fresh_context()
        self._update_context_meter()
        self.notify("fresh context: the conversation is cleared, files stay in the chat")

    def _profile_info(self, name: str) -> dict:
        for profile in (self.client.profiles if self.client else []):
            if profile.get("name") == name:
                return profile
        return {}

    def _update_context_meter(self) -> None:
        state = self.station.context_state()
        tokens, window, estimated = state.tokens, state.window, state.estimated
        self.query_one(StatusBar).context = state
        lines = Text(f"{tokens:,} / {window:,} tokens ({state.percent:.0f}%) {state.band}")
        if estimated:
            lines.append(" est.", style="dim")
        for chat_file in self.station.context.files:
            lines.append(f"\n  {chat_file.path}" + (" (read-only)" if chat_file.read_only else ""))
        self.query_one(SidePanel).set_context(lines)
        if state.new_warning:
            self.notify(f"{state.warning} (ctrl+n: fresh context)", severity="warning", timeout=10)

    @work(exclusive=True, group="apply")
    async def action_undo(self) -> None:
        from core.workspace.changes import undo_last

        try:
            result = await asyncio.to_thread(undo_last, self.workspace)
        except Exception as exc:
            self.notify(f"undo failed, nothing changed: {exc}", severity="error", timeout=10)
            return
        if getattr(result, "change_id", None) is None:
            self.notify("nothing to undo")
            return
        self.notify(f"undid the last accepted change ({', '.join(getattr(result, 'written', []) or [])})")

    async def action_variations(self) -> None:
        """N answers to one prompt side by side; a digit takes one into the main loop."""
        from tui.screens.variations import open_variations

        prompt = self._take_prompt()
        if prompt is not None:
            await open_variations(self, prompt)

    def action_batch(self) -> None:
        """A queue of independent prompts, each with a fresh context, reviewed one after another."""
        from tui.screens.batch import open_batch

        open_batch(self)

    def action_report(self) -> None:
        from tui.screens.report import ReportScreen

        self.push_screen(ReportScreen(self.root, self.station.recorder.session_id))

    def _take_prompt(self) -> str | None:
        """The typed prompt (or the last one) for a screen that sends it itself."""
        prompt_input = self.query_one("#prompt", Input)
        prompt = prompt_input.value.strip() or self.last_prompt
        if not prompt or self.client is None:
            self.notify("type a prompt first", severity="warning")
            return None
        if self._stream is not None:
            self.notify("an answer is streaming: escape stops it first", severity="warning")
            return None
        prompt_input.value = ""
        return prompt

    async def action_race(self, prompt: str | None = None) -> None:
        """Same prompt to Spark and Base side by side; the answer taken lands in the main loop."""
        from tui.screens.race import RaceScreen

        prompt = prompt or self._take_prompt()
        if prompt is None:
            return
        names = [p["name"] for p in self.client.profiles]
        pair = ("spark", "base") if {"spark", "base"} <= set(names) else tuple(names[:2])
        if len(pair) < 2:
            self.notify("a race needs two profiles", severity="warning")
            return
        messages, report = await asyncio.to_thread(self.station.context.build_request, prompt)
        self.push_screen(RaceScreen(self.client, prompt, messages, pair), self._race_taken)

    def _race_taken(self, result) -> None:
        if result is not None:
            self._adopt_answer(result.profile, result.prompt, result.text, result.stats, kind="race")

    @work(exclusive=True, group="answer")
    async def _adopt_answer(self, profile: str, prompt: str, text: str, stats=None, *,
                            kind: str | None = None) -> None:
        """Load an answer produced elsewhere (race, variations) into the accept/reject loop.

        With the stream's `stats` (a race lane) the answer is recorded in the session with
        its timing; without them (variations record their own streams) it is not counted twice.
        """
        run = AnswerRun(self.workspace, prompt, profile)
        run.origin = f"taken from {profile}"
        self.answer, self.review, self.settled = run, None, False
        self.last_prompt = prompt
        self.query_one(DiffView).reset(Text(f"> {prompt}  (taken from {profile})", style="bold"))
        from core.backends.tokens import count_tokens

        run.feed(text, count_tokens(text))
        run.finish("stop")
        if stats is not None:
            run.stats = stats
        await self._rebuild_now()
        if stats is not None and kind is not None:
            self.station.recorder.prompt(run.request_id, prompt, profile, kind=kind)
        info = self._profile_info(profile)
        await asyncio.to_thread(self.station.answer_finished, run, self.review, recorded=stats is not None,
                                chip=info.get("chip"), model=info.get("model"))
        self._dirty = True
        self._paint()  # the status bar shows the taken answer's own tokens, TTFT and speed
        self.query_one(DiffView).focus()
        self._after_stream(run)

    # Actions of the main screen; while another screen (race, variations, help) is on top
    # their priority keys must not reach through it.
    MAIN_SCREEN_ACTIONS = frozenset({
        "accept", "reject", "accept_all", "reject_all", "reject_with_reason", "ask_base", "next_hunk",
        "prev_hunk", "cancel", "toggle_profile", "race", "variations", "batch", "report", "fresh_context",
        "undo", "add_mentioned", "pick_files", "help"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.MAIN_SCREEN_ACTIONS and len(self.screen_stack) > 1:
            return False
        return True

    async def on_unmount(self) -> None:
        self._stop_watch.set()
        if self.client is not None:
            await self.client.close()
