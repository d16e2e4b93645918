"""The sparkstation workstation: prompt, streaming diff, one-key decisions, status.

The app holds no business logic: `core.loop.stream_answer` streams and parses an answer,
`core.workstation.Workstation` decides, checks, writes, undoes and records, the answer
(`core.answer.AnswerRun`) holds each hunk's state. The app wires them to widgets and keys,
paints at most once per frame, and runs diffing, detectors and disk work off the UI loop.

Two modes, as in lazygit, tig or vim (docs/workstation.md): PROMPT (the input has focus;
keys type) and REVIEW (the diff has focus; single letters act on hunks). The mode label on
the status bar, the footer's keys and the focused area change together.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from core.answer import AnswerRun, HunkState, remedy_for
from core.loop import Finished, Progress, Started, Steered, stream_answer
from core.rebuild_schedule import QueuedDecision, RebuildSchedule, RebuildWork, Refused
from core.review import Review, Verdict
from core.verify.fixloop import FixRun
from core.verify.session import VerifySession
from core.workstation import ReviewSuperseded, Workstation
from themes import DEFAULT_THEME, register_themes
from tui.key_first import KeyFirstScreen, KeyQueue, QuietCollector, navigation_binding, passes_key
from tui.key_frame import draw_now, take_refreshes
from tui.palette import WorkstationCommands
from tui.screens.help import HelpScreen
from tui.widgets.diff_render import warm_bodies, warm_highlighting
from tui.widgets.diff_view import DiffView
from tui.widgets.prompt_input import KeyState, PromptInput, run_binding
from tui.widgets.side_panel import SidePanel
from tui.widgets.stable_footer import StableFooter
from tui.widgets.status import StatusBar, edge_note
from tui.widgets.verify_panel import VerifyPanel

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from textual.timer import Timer

    from core.client import CoreClient

FRAME_S = 1 / 120
EDGE_NOTE_S = 1.5  # how long "last hunk (n of n)" stays after a j/k that could not move
STATUS_EVERY_S = 0.25  # the status bar's live numbers (tokens, tok/s) while an answer streams
_clock = time.monotonic  # (the paint's clock: a test sets it)
log = logging.getLogger(__name__)


_WARM_SLICE = 4  # hunks highlighted between looks at whether the answer ended (~2 ms each)


def _take_sent(prompt_input: Input, sent: str) -> None:
    """Clear the prompt that is being sent. Keys typed after Enter (while the app looked up the
    files it mentions) are not part of it: they stay in the prompt as the next draft."""
    value = prompt_input.value
    if value.startswith(sent):
        prompt_input.value = value[len(sent):]


class SparkApp(App):
    """Full-screen workstation on one project folder, talking to one core."""

    TITLE = "sparkstation"
    COMMANDS = App.COMMANDS | {WorkstationCommands}
    CSS = """
    Screen { layout: vertical; }
    #main { height: 1fr; }
    #prompt { dock: bottom; }
    StatusBar { height: 1; background: $panel; }
    ToastRack { dock: top; align: right top; margin-top: 1; }
    Toast { width: auto; max-width: 46; padding: 0 1; }
    """

    # Every binding has an id so `[ui.keys]` in the config can rebind it (Textual keymaps).
    # The single-letter hunk keys live on the DiffView: they exist only in REVIEW mode.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "escape", "Back / stop", id="cancel"),
        Binding("ctrl+l", "toggle_profile", "Spark/Base", id="toggle_profile", priority=True),
        Binding("ctrl+r", "race", "Race", id="race", priority=True),
        Binding("ctrl+n", "fresh_context", "Fresh context", id="fresh_context", priority=True),
        Binding("ctrl+z", "undo", "Undo", id="undo", priority=True),
        Binding("ctrl+g", "variations", "Variations", id="variations", priority=True),
        Binding("ctrl+b", "batch", "Batch", id="batch", priority=True),
        Binding("ctrl+t", "report", "Report", id="report", priority=True),
        Binding("ctrl+f", "pick_files", "Add files", id="pick_files", priority=True),
        Binding("ctrl+o", "add_mentioned", "Add mentioned files", id="add_mentioned", priority=True),
        Binding("ctrl+e", "send_failures", "Send test failures back", id="send_failures", show=False,
                priority=True),
        Binding("f1", "help", "Help", id="help_f1", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
    ]

    def __init__(self, root: Path, core_url: str, *, profile: str = "spark", theme: str | None = None,
                 keymap: dict[str, str] | None = None, guards: dict | None = None,
                 add: list[str] | None = None, race_prompt: str | None = None, on_ready=None) -> None:
        from core.indexing.service import preload

        # the cached repo map is read while the screen is built (issue 14)
        first_frame_shown = preload(Path(root), map_after_frame=True)
        super().__init__()
        self._first_frame_shown = first_frame_shown  # tells the indexes their warm-up may start
        self.root = Path(root)
        self.core_url = core_url
        self.profile = profile
        self.station = Workstation(self.root, guards=guards)
        self._initial_files = list(add or [])
        self._add_mentioned_setting: bool | None = None  # read from [ui] on first use
        self._race_prompt = race_prompt
        self._on_ready = on_ready  # called with the app once connected (spark vary / batch open screens)
        self.workspace = self.station.workspace
        self.client: CoreClient | None = None
        self.answer: AnswerRun | None = None
        self.review: Review | None = None
        self.last_prompt = ""
        self._stream = None
        self._dirty = False
        # when the answer's diff is rebuilt, drawn and reviewed, and decisions held until its
        # final review (core/rebuild_schedule.py); the work is the app's callables below
        self._schedule: RebuildSchedule[AnswerRun, Review] = RebuildSchedule(RebuildWork(
            current=lambda: self.answer, build=lambda run: run.rebuild_proposal(), prepare=self._warm_hunks,
            record=lambda run: self.station.record_hunks_shown(run),
            unrecorded=lambda run: self.station.hunks_unrecorded(run), review=self._review_state,
            reviewed=self._reviewed, draw=self._draw_pass,
            verify=lambda run: self.verify.proposal_changed(run)))
        self._stop_watch = asyncio.Event()
        self._offered: tuple[str, list[str]] | None = None
        self._pending_redirects: list[str] = []
        self._own_writes: dict[str, float] = {}  # path -> when we wrote it (the watcher sees it too)
        self._check_warned: dict[str, list[str]] = {}  # request id -> problems the user was warned of
        # verify before accept (issue 15): checks and the project's tests on the answer shown;
        # its worker only raises a flag, the frame timer redraws the panel
        self.verify = VerifySession(self.workspace, fast_profiles=self.station.fast_profiles,
                                    on_change=self._verify_changed)
        self._verify_dirty = False
        self._paint_timer: Timer | None = None  # frames only while there is something to paint
        self._numbers_shown = 0.0  # when _paint last set the status bar's live numbers
        self._numbers_due = False  # the answer's numbers changed since
        self._key_frame_due = False  # a j/k's frame is to be drawn (see _key_frame)
        self._keys = KeyQueue()  # keys posted and not yet handled (tui/key_first.py)
        self._collector = QuietCollector()  # while streaming: the young generation at quiet ticks
        self._sync_held = False  # a mid-stream pass's draw waits for queued keys (_draw_pass)
        self._edge_shown = 0  # the status bar shows a j's (1) or k's (-1) edge note (_step_hunk)
        self._edge_timer: Timer | None = None  # takes the edge note away after EDGE_NOTE_S
        self._ui_loop: asyncio.AbstractEventLoop | None = None
        self._verify_badges: dict[str, str] = {}
        self._auto_fixed: set[str] = set()  # request ids whose failures went back by themselves
        self._prose_expanded = False
        self._undo_note: Text | None = None  # what the last undo restored / could not, kept on screen
        self._last_notes: Text | None = None
        self._theme_ready = False  # the start-up theme is not a user's choice to remember
        self.settled = True  # (the schedule's: see the property)
        register_themes(self)
        self.theme = theme or DEFAULT_THEME
        if keymap:
            self.set_keymap(keymap)

    # -- keys first (tui/key_first.py) -------------------------------------------------------
    def get_default_screen(self) -> KeyFirstScreen:
        return KeyFirstScreen(id="_default")  # its stream frames wait for a queued key

    def post_message(self, message: Message) -> bool:
        """A key (from the driver's thread or the loop) is counted as queued from here."""
        if not (isinstance(message, events.Key) and not message.is_forwarded):
            return super().post_message(message)
        self._keys.posted(message)
        if super().post_message(message):
            return True
        self._keys.dropped(message)
        return False

    def _post_message(self, message: Message) -> Coroutine[Any, Any, bool]:
        """A key from the terminal's driver thread (Driver.send_message runs this coroutine on the
        loop two turns later: a task, then its step) counts as queued from the press."""
        if isinstance(message, events.Key) and not message.is_forwarded:
            self._keys.posted(message)
        return super()._post_message(message)

    def keys_first(self, who: str) -> bool:
        """True when `who` (the screen's frame, a pass's draw, the paint) waits for the keys
        queued now: they are handled first, and a j/k's frame draws what it would have."""
        return self._keys.yields(who)

    async def on_event(self, event: events.Event) -> None:
        """A j/k on the focused diff is handled here, in the key's own turn, when no earlier key
        is still on its way: Textual would forward it to the diff, which passes it to its
        container, the screen and back to the app, whose bindings run the action, each hop a
        message queue behind whatever the loop has ready (the same binding, run the same way:
        `navigation_binding`). Every other key takes Textual's way, and the keys after it too
        until it is back at the app or stopped (keys stay in order)."""
        if not isinstance(event, events.Key):
            await super().on_event(event)
            return
        if event.is_forwarded:  # back at the app: its bindings are its last stop
            try:
                await super().on_event(event)
            finally:
                self._keys.done(event)
            return
        if self._keys.taken(event):
            active = navigation_binding(self, event, DiffView)
            if active is not None:
                self.app_focus = True  # (as Textual's on_event does for a key)
                if await self.run_action(active.binding.action, active.node):
                    self._keys.done(event)
                    return
            if self._redirects(event):  # a letter the focused diff sends to the prompt
                self.app_focus = True
                self._keys.done(event)
                return
        self._keys.forwarded(event)
        try:
            await super().on_event(event)
        finally:
            if not event.is_forwarded:  # a priority binding took it: it goes no further
                self._keys.done(event)

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield DiffView(id="diff")
            yield SidePanel(self.root.name, id="side")
        yield PromptInput(placeholder="Ask for a change, Enter to send (while streaming: Enter steers)",
                          id="prompt", select_on_focus=False)
        yield StatusBar(id="status")
        yield StableFooter()

    def on_mount(self) -> None:
        # Streaming allocates many short-lived render objects: collect the young generation
        # less often, and keep start-up objects out of full collections (which otherwise
        # stall a frame for tens of ms; bench/bench_tui.py measures it).
        gc.freeze()
        gc.set_threshold(20_000, 20, 50)
        self.query_one(StatusBar).profile = self.profile
        self.watch(self.screen, "focused", self._focus_changed)
        self.query_one("#prompt", Input).focus()
        from core.demo import first_screen_text, is_demo

        if is_demo(self.root):  # the demo says it replays, and what it has recordings for
            self.query_one(DiffView).set_notes(Text(first_screen_text(), style="dim"))
        self._ui_loop = asyncio.get_running_loop()
        self._paint_timer = self.set_interval(FRAME_S, self._paint, pause=True)  # see _wake_paint
        # the core's client (websockets' imports) after the first frame; the bar says "connecting"
        self.call_after_refresh(self._connect)
        self._build_indexes()
        if self._initial_files:
            try:
                self.station.context.add(self._initial_files)
            except Exception as exc:  # noqa: BLE001 - a file that cannot be added is said, not fatal
                self.notify(str(exc), severity="error", timeout=10)
        # the watcher walks the tree and sets up its watches (~0.1 s of this loop on 20,000
        # files, 0.4 s at load 6): before the first frame, where it delays the frame, rather
        # than after it, where it stalled the first keys typed (measured 463 ms)
        self._start_watch()
        self.query_one(SidePanel).mount(VerifyPanel(id="verify"), before=1)
        self._theme_ready = True
        self.call_after_refresh(self._first_frame_shown)  # the indexes' warm-up may start now

    def watch_theme(self, theme: str) -> None:
        from core.ui_config import remember_theme

        if self._theme_ready:  # a switch made by the user, not the start-up choice
            remember_theme(theme)

    # -- modes -------------------------------------------------------------------------------
    def _focus_changed(self, focused) -> None:
        """The mode follows the focus: the label and the footer change with it."""
        if self.screen is not self.screen_stack[0]:
            return
        self.query_one(StatusBar).mode = "review" if isinstance(focused, DiffView) else "prompt"

    @property
    def mode(self) -> str:
        """"review" while the diff has focus (single letters act on hunks), else "prompt"."""
        return "review" if isinstance(self.focused, DiffView) else "prompt"

    def _to_review(self, *, after_enter: bool = False) -> None:
        """The diff gets the focus. While the prompt holds the keys typed after its Enter, only
        the screen that Enter led to (`after_enter`: the new answer's first screen, a steer) moves
        it: the held keys go to the review first, in order (PromptInput.hand_over)."""
        prompt = self.query_one("#prompt", PromptInput)
        diff = self.query_one(DiffView)
        if prompt.key_state is KeyState.TYPING:
            if not prompt.pass_keys(diff, self._diff_key):  # (Escape in the prompt: the keys after it)
                diff.focus()
        elif after_enter and prompt.holding:
            prompt.hand_over(diff, self._review_key)

    def _to_prompt(self, text: str = "") -> None:
        """The prompt gets the focus (and `text`, a redirect's first letter). At once, not at
        Widget.focus's callback: the next key the App reads goes to the prompt, after this one."""
        prompt = self.query_one("#prompt", PromptInput)
        prompt.stop_handing()  # the keys after this one are typed, as after any redirect
        prompt.screen.set_focus(prompt)
        if text:
            prompt.insert_text_at_cursor(text)

    def _typing(self) -> bool:
        """The user is typing in the prompt: it has the focus and a draft, or keys typed after
        its Enter not yet handed on. An answer that ends then leaves the focus there: a fast
        model's answer ends 100-300 ms after Enter, in the middle of the next prompt's words, and
        the letters after that moment went to the review, where a, r, A, R, x decide hunks
        ("also readme arar" typed right after Enter accepted and wrote two hunks of the demo).
        Escape goes to the review (the footer says so)."""
        prompt = self.query_one("#prompt", PromptInput)
        return self.focused is prompt and (bool(prompt.value) or prompt.key_state is not KeyState.TYPING)

    def _redirects(self, event: events.Key) -> bool:
        """A letter the focused diff would send to the prompt (DiffView.on_key: a redirect while
        an answer streams, the next prompt when nothing is left to decide) is typed there in the
        key's own turn (on_event, when no earlier key is on its way), and the focus moves with it
        at once: every key the App reads after it goes to the prompt, in order. The diff's
        TypeAhead reached the app three hops later, after the keys behind it ("x j y" typed "xy"
        and the j stepped)."""
        focused = self.focused
        if not (isinstance(focused, DiffView) and event.is_printable and event.character):
            return False
        if passes_key(focused, event):
            return False
        self._to_prompt(event.character)
        return True

    async def _diff_key(self, event: events.Key) -> None:
        """A key typed in the prompt right after the one that took the focus to the review
        (Escape), taken as the focused diff takes it now (DiffView.on_key, then its binding)."""
        diff = self.query_one(DiffView)
        if not passes_key(diff, event):
            self._to_prompt(event.character or "")
        else:
            await run_binding(diff, event.key)

    async def _review_key(self, event: events.Key) -> None:
        """A key typed between Enter and the answer's first screen, taken as the focused diff
        takes it while the answer streams: a letter that starts a redirect goes to the prompt
        (DiffView.on_key, then `_type_ahead`), any other key runs the diff's binding (j/k move, or
        say "no hunks yet"; Enter goes back to the prompt; escape stops the answer)."""
        diff = self.query_one(DiffView)
        character = event.character
        # the stream's rule (DiffView.on_key while it streams), also when the answer has ended
        # since: a key typed before the user saw its end decides no hunk
        if event.is_printable and character and character not in diff.NAVIGATION_KEYS + diff.REVIEW_KEYS:
            self._to_prompt(character)
        else:
            await run_binding(diff, event.key)

    def action_focus_prompt(self) -> None:
        self._to_prompt()

    def action_slash_prompt(self) -> None:
        self._to_prompt("/")

    async def action_escape(self) -> None:
        """While an answer streams: stop it. Otherwise, from the prompt: back to the review."""
        if self._stream is not None:
            await self._stream.cancel()
        elif isinstance(self.focused, Input) and self.answer is not None:
            self._to_review()

    # -- worker failures: one handler --------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised ends its own job, never the app (no WorkerFailed exit)."""
        if event.state is not WorkerState.ERROR:
            return
        worker = event.worker
        error = worker.error
        log.error("worker %s failed: %r", worker.name, error)
        self.notify(f"{worker.group or worker.name} failed: {type(error).__name__}: {error}",
                    severity="error", timeout=10)
        if worker.group in ("answer", "rebuild"):
            run = self.answer
            if run is not None and not run.finished:
                run.finish("error", f"{type(error).__name__}: {error}", "internal")
            self._stream = None
            if run is not None:
                self._after_stream(run)
        self.settled = True

    @work(exclusive=True, group="connect", exit_on_error=False)
    async def _connect(self) -> None:
        from core.client import CoreClient

        status = self.query_one(StatusBar)

        def on_state(state: str) -> None:
            status.connection = state

        try:
            self.client = await CoreClient.connect(self.core_url, on_state=on_state)
        except Exception as exc:  # noqa: BLE001 - shown, not raised: the user can still read the tree
            status.connection = "unreachable"
            self.notify(f"core at {self.core_url} does not answer: {exc}", severity="error", timeout=10)
            return
        status.connection = "connected"
        self._use_profile(self.profile)
        names = [p["name"] for p in self._profiles()]
        if self.profile not in names:
            self.notify(f"unknown profile {self.profile!r}; the core offers {', '.join(names)}", severity="error")
        if self._race_prompt:
            await self.action_race(self._race_prompt)
        if self._on_ready is not None:
            result = self._on_ready(self)
            if inspect.isawaitable(result):
                await result

    @work(thread=True, group="index", exit_on_error=False)
    def _build_indexes(self) -> None:
        self.station.build_indexes()
        warm_highlighting()  # not in the first answer's first frames (see its docstring)

    def _start_watch(self) -> None:
        self._watch()
        # a file changed between the indexer's first look at the tree and the watcher's
        # start would go unseen: once the watcher runs, the tree is compared once more
        self.set_timer(2.0, self._recheck_indexes)

    @work(thread=True, group="recheck", exit_on_error=False)
    def _recheck_indexes(self) -> None:
        indexes = getattr(self.station, "indexes", None)
        if indexes is not None:
            indexes.recheck()

    @work(group="watch", exit_on_error=False)
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
        """Per-hunk staleness from the proposal: a hunk that no longer places is marked stale
        (or refused, if it was accepted) with the reason, in the diff."""
        run = self.answer
        if run is None or run.proposal is None or run.applied or not run.finished:
            return
        if await asyncio.to_thread(self.station.recheck, run) and run is self.answer:
            self._sync_diff()

    # -- prompt -> stream --------------------------------------------------------------------
    @on(Input.Changed, "#prompt")
    def _draft_changed(self, event: Input.Changed) -> None:
        """Rank the repo map for the prompt being typed, so Enter finds it ready (issue 14)."""
        if self._stream is None and len(event.value) > 8 and not event.value.startswith("/"):
            self._prefetch(event.value)

    @work(thread=True, exclusive=True, group="prefetch", exit_on_error=False)
    def _prefetch(self, draft: str) -> None:
        from textual.worker import get_current_worker

        time.sleep(0.15)  # still typing: the next draft cancels this worker before it ranks
        if get_current_worker().is_cancelled:
            return
        from core.indexing.prefetch import prefetch

        prefetch(self.station.context, draft)

    @on(Input.Submitted, "#prompt")
    async def _submit(self, event: Input.Submitted) -> None:
        """Enter. The prompt holds the keys typed after it until this says where they go: to the
        review when an answer starts or a steer is sent (`_to_review(after_enter=True)`, at the
        answer's first screen), else typed in the prompt (`release`)."""
        prompt_input = self.query_one("#prompt", PromptInput)
        hold = prompt_input.holds  # (this Enter's hold: a later Enter's is not released here)
        reviewed = False
        try:
            reviewed = await self._send_submitted(event)
        finally:
            if not reviewed:
                prompt_input.release(hold)

    async def _send_submitted(self, event: Input.Submitted) -> bool:
        """True when the Enter started an answer or steered one (its screen takes the keys after it)."""
        prompt = event.value.strip()
        if not prompt:
            return False
        if self._stream is not None:  # typing while it streams redirects it
            _take_sent(event.input, event.value)
            self._pending_redirects.append(prompt)  # the parser restarts when the core says "steered"
            await self._stream.steer(prompt)
            self.notify(f"steering: {prompt}")
            self._to_review(after_enter=True)  # the next keys act on the answer again, not in the prompt
            return True
        if prompt.startswith("/"):
            _take_sent(event.input, event.value)
            await self._slash_command(prompt)
            return False
        if self.client is None:
            self.notify("not connected to the core yet", severity="warning")
            return False
        mentioned = await asyncio.to_thread(self.station.context.mentioned_paths, prompt)
        if mentioned and self._add_mentioned():  # [ui] add_mentioned (default): add, then send
            return await self.action_add_mentioned(event.value)
        if mentioned and self._offered != (prompt, mentioned):
            self._offered = (prompt, mentioned)
            self.notify(f"mentioned but not in the chat: {', '.join(mentioned)}. "
                        "ctrl+o adds and sends; Enter sends without", timeout=8)
            return False
        _take_sent(event.input, event.value)
        self._offered = None
        self._start_answer(prompt)
        return True

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
            except Exception as exc:  # noqa: BLE001 - refused (binary, huge, ignored): say why
                self.notify(str(exc), severity="error", timeout=8)
                return
            self.notify(f"added {choice.path}" + (" (read-only)" if choice.read_only else ""))
            self._update_context_meter()

        self.push_screen(FilePickerScreen(files, in_chat), picked)

    def _add_mentioned(self) -> bool:
        """`[ui] add_mentioned`: a prompt naming files of the tree adds them and sends."""
        if self._add_mentioned_setting is None:
            from core.config import ConfigError, load_settings

            try:
                self._add_mentioned_setting = load_settings(project_root=self.root).add_mentioned
            except ConfigError:  # validated before the app started; never fatal here
                self._add_mentioned_setting = True
        return self._add_mentioned_setting

    async def action_add_mentioned(self, submitted: str | None = None) -> bool:
        """Add the files the prompt mentions (the one-key offer), then send the prompt: the one
        submitted with Enter, or (ctrl+o) the prompt as typed when the key was pressed. True
        when it was sent."""
        prompt_input = self.query_one("#prompt", Input)
        if submitted is None:
            submitted = await self._prompt_text()  # every key typed before ctrl+o
        prompt = submitted.strip()
        mentioned = await asyncio.to_thread(self.station.context.mentioned_paths, prompt) if prompt else []
        if mentioned:
            try:
                await asyncio.to_thread(self.station.context.add, mentioned)
            except Exception as exc:  # noqa: BLE001 - said, nothing sent
                self.notify(str(exc), severity="error")
                return False
            self.notify(f"added {', '.join(mentioned)}")
        self._update_context_meter()
        if prompt and self.client is not None and self._stream is None:
            _take_sent(prompt_input, submitted)
            self._offered = None
            self._start_answer(prompt)
            return True
        return False

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

    @work(exclusive=True, group="answer", exit_on_error=False)
    async def _start_answer(self, prompt: str, fix_of: AnswerRun | None = None) -> None:
        from core.context.prompt import ContextError

        self.last_prompt = prompt
        if fix_of is not None and fix_of.proposal is not None:
            run: AnswerRun = FixRun(self.workspace, prompt, self.profile, fix_of.proposal)
        else:
            run = AnswerRun(self.workspace, prompt, self.profile)
        # The request goes out before the screen changes (issue 14): drawing the new answer
        # (mode, transcript, context meter: style and layout passes) holds the interpreter
        # that the assembly thread and the embedded core share, so it is done while the
        # model thinks, not before the request is sent. Until then only the state changes.
        self.answer, self.review, self.settled = run, None, False
        self.station.answer_shown(run)  # the answer it replaced: its queued checks go
        status = self.query_one(StatusBar)
        diff = self.query_one(DiffView)
        shown = first_painted = False

        def show() -> None:
            nonlocal shown
            if not shown:
                shown = True
                self._show_new_answer(run)
                status.streaming = True
                diff.typeahead = True
                self._wake_paint()  # live numbers and the block being written, each frame

        try:
            try:
                messages, answer_budget = await asyncio.to_thread(self.station.request, run)
            except ContextError as exc:
                run.finish("error", str(exc), "context_overflow")
            else:
                async for update in stream_answer(self.client, run, messages, max_tokens=answer_budget,
                                                  next_redirect=self._next_redirect):
                    if isinstance(update, Started):
                        self._stream = update.stream
                        show()
                        self._update_context_meter()
                    elif isinstance(update, Progress):
                        if update.completed:
                            self.verify.edits_arriving(run)
                            self._request_rebuild()
                        if update.text and not first_painted:
                            first_painted = self._dirty = True  # the first token: on screen now,
                            self._paint()  # not at the next frame tick (nor after other work)
                    elif isinstance(update, Steered):
                        diff.set_notes(self._transcript(run))
                    elif isinstance(update, Finished):
                        break
                    self._dirty = True
        finally:
            if run is self.answer:  # nothing was sent (no core, context too large): say why
                show()
            self._stream = None
            diff.typeahead = False
            status.streaming = False
        await self._finish_answer(run)

    def _next_redirect(self) -> str | None:
        return self._pending_redirects.pop(0) if self._pending_redirects else None

    def _show_new_answer(self, run: AnswerRun) -> None:
        """A fresh answer: its own hunks, counts and timing from zero (nothing of the last)."""
        self.answer, self.review, self.settled = run, None, False
        self.station.answer_shown(run)
        self._prose_expanded = False
        self._undo_note = None
        self._last_notes = None
        self.verify.answer_started(run, fix_round=isinstance(run, FixRun))
        self._show_verify()
        diff = self.query_one(DiffView)
        diff.reset(self._transcript(run))
        diff.hunk_keys = False
        self._to_review(after_enter=True)  # the keys typed since the Enter that asked for it
        status = self.query_one(StatusBar)
        status.tokens, status.tokens_per_s, status.ttft_ms, status.note = 0, None, None, ""
        status.forecast = ""

    async def _finish_answer(self, run: AnswerRun, *, timing_recorded: bool = False) -> None:
        """The answer's stream ended: final diff and review, then the one record of it.

        A newer answer cancels this worker at any of its awaits (a prompt sent while this one
        ends: the answer worker is exclusive). The answer the user saw is still folded into the
        session and recorded, once, in the `finally`, with the last review it showed (its final
        one, unless it was replaced before that was in)."""
        self.verify.stream_ended(run)  # its final proposal is verified once it is shown
        review, folded = self.review, False
        try:
            await self._rebuild_now(final=True)
            self._dirty = True
            self._paint()
            if run.error:
                self.notify(f"stream failed: {run.error}", severity="error", timeout=8)
            review, folded = self.review, True
            self.station.fold_answer(run, review)  # memory only: the counters the status bar shows
            if run is self.answer:
                self._after_stream(run)
            self._update_context_meter()
            await self._frame_drawn()
        finally:
            if not folded:  # replaced in its final rebuild (or that failed)
                review = self.review if run is self.answer else review
                self.station.fold_answer(run, review)
            # once the frame that shows the answer is drawn: its checks (a parse and a ruff run
            # per file) took turns for the GIL and the CPU with the review, and the checks and
            # the record (disk, 15-100 ms) with that frame (60-125 ms of the UI thread)
            self.verify.proposal_changed(run)
            profile = self._profile_info(run.profile)
            record = functools.partial(self.station.record_answer, run, review, chip=profile.get("chip"),
                                       model=profile.get("model"), timing_recorded=timing_recorded)
            recorded = asyncio.get_running_loop().run_in_executor(None, record)
        await recorded

    async def _frame_drawn(self, timeout: float = 0.5) -> None:
        """Returns after the next screen update (or at once when none can come)."""
        drawn = asyncio.Event()
        if self.call_after_refresh(drawn.set):
            try:
                await asyncio.wait_for(drawn.wait(), timeout)
            except TimeoutError:  # another screen on top, or the app closing
                pass

    def _transcript(self, run: AnswerRun) -> Text:
        """The prompt, where the answer came from, and every steer, as the user sent them."""
        notes = Text(f"> {run.prompt}", style="bold")
        if run.origin:
            notes.append(f"  ({run.origin})", style="dim")
        for redirect in run.redirects:
            notes.append(f"\n  ↳ steered: {redirect}", style="bold cyan")
        return notes

    def _after_stream(self, run: AnswerRun) -> None:
        diff = self.query_one(DiffView)
        notes = self._transcript(run)
        if run.reason == "cancelled":
            notes.append("\nstopped: the hunks completed so far can still be decided", style="yellow")
        if run.source and run.source.get("backend") == "replay":
            notes.append(f"\nreplayed recording '{run.source.get('id')}'", style="dim")
        for err in run.parse_errors:
            notes.append(f"\n! {getattr(err, 'message', err)}", style="red")
        if run.proposal:
            for perr in run.proposal.errors:
                notes.append(f"\n! {perr.path}: {perr.message}", style="red")
        if run.error:
            notes.append(f"\nerror [{run.error_code or 'error'}]: the stream failed: {run.error}", style="bold red")
            notes.append(f"\nwhat to do: {remedy_for(run.error_code)}", style="yellow")
            if run.hunks:
                notes.append(f"\n{len(run.hunks)} hunk(s) arrived before the failure and can be decided",
                             style="dim")
        elif not run.hunks:
            notes.append("\nThe answer proposes no change.", style="yellow")
        if run.hunks:
            notes.append(f"\n{len(run.hunks)} hunk(s): a accept, r reject, A/R all, j/k move, "
                         "Enter or i to type", style="dim")
        if self._undo_note is not None:  # what the last undo did stays said, not only in a toast
            notes.append("\n")
            notes.append_text(self._undo_note)
        self._last_notes = notes
        diff.set_pending(None)  # (kept until now: see _paint)
        diff.set_notes(notes)
        diff.set_prose(run.prose, self._prose_expanded)
        self._sync_diff()
        if run.open:
            # the hunk the user moved to while it streamed stays selected while it is open
            current = diff.current_id
            keep = current if current is not None and current in run.open else run.open[0]
            diff.select(run.hunks.index(run.hunk(keep)))
            if not self._typing():  # (else the letters still coming would decide hunks)
                self._to_review()
        else:
            self._to_prompt()
        self._update_session_status()
        held = self._schedule.settle(run, run.open)  # settled: the answer is fully shown
        self._verify_dirty = True  # the answer is fully shown: the fix loop may go on
        self._wake_paint()
        self._apply_held_decision(run, held)

    def _apply_held_decision(self, run: AnswerRun, held: QueuedDecision | Refused | None) -> None:
        """The decision key pressed while the final review ran, now on its findings: on the
        hunk selected when it was pressed, if that hunk is still open (else it is dropped and
        said), or on every hunk for A/R."""
        if isinstance(held, Refused):
            self.notify(held.message, severity="warning")
            return
        if held is None:
            return
        if not held.everything and held.target is not None:
            self.query_one(DiffView).select(run.hunks.index(run.hunk(held.target)))
        self._decide(held.accept, held.everything, held.reason)

    @on(DiffView.TypeAhead)
    def _type_ahead(self, message: DiffView.TypeAhead) -> None:
        self._to_prompt(message.character)

    def _request_rebuild(self) -> None:
        if self._schedule.request():
            self._rebuild_worker()

    @work(group="rebuild", exit_on_error=False)
    async def _rebuild_worker(self) -> None:
        await self._rebuild_now()

    async def _rebuild_now(self, *, final: bool = False) -> None:
        """Re-diff, draw and review the completed edits off the UI loop (the schedule's `run`:
        requests coalesce; `final` returns once the final state is reviewed and drawn)."""
        await self._schedule.run(final=final)

    def _review_state(self, run: AnswerRun, stale: Callable[[], bool], final: bool) -> Review | None:
        """The rebuild's review (its thread): None when it gave way (the schedule's `stale`)."""
        try:
            return self.station.review(run, stale=stale)
        except ReviewSuperseded:
            return None

    def _reviewed(self, run: AnswerRun, reviewed: Review | BaseException) -> None:
        """A rebuild's review is in (a detector's error costs the review, not the app)."""
        if isinstance(reviewed, BaseException):
            self.notify(f"review failed: {type(reviewed).__name__}: {reviewed}", severity="warning")
            reviewed = Review()
        if run is self.answer:
            self.review = reviewed

    def _warm_hunks(self, run: AnswerRun, final: bool, ended: Callable[[], bool]) -> None:
        """Highlight the answer's hunks off the UI thread before the draw, a few at a time,
        stopping when `ended()` says (an earlier state's, once the answer has ended)."""
        hunks, contexts, width = run.hunks, run.hunk_context(), DiffView.body_width
        for at in range(0, len(hunks), _WARM_SLICE):
            if ended():
                return
            warm_bodies(hunks[at:at + _WARM_SLICE], contexts, width)

    # (what the schedule holds, as tests/tui/test_rebuild_schedule.py reads and sets it)
    @property
    def _rebuilding(self) -> bool:
        """A rebuild pass runs."""
        return self._schedule.running

    @property
    def _rebuild_needed(self) -> bool:
        return self._schedule.needed

    @_rebuild_needed.setter
    def _rebuild_needed(self, needed: bool) -> None:
        self._schedule.needed = needed

    @property
    def _final_rebuilt(self) -> AnswerRun | None:
        return self._schedule.final_built

    @property
    def _queued_decision(self) -> QueuedDecision | None:
        return self._schedule.queued

    @property
    def settled(self) -> bool:
        """False from a prompt until its answer is fully shown (tests wait on it)."""
        return self._schedule.settled

    @settled.setter
    def settled(self, settled: bool) -> None:
        self._schedule.settled = settled

    def _draw_pass(self, run: AnswerRun) -> None:
        """The schedule's draw of a pass. While the answer streams it waits for queued keys
        (at most HOLD_S): a sync is 5-15 ms of this loop, and a key queued behind it waited."""
        if run.finished or not self.keys_first("sync"):
            self._sync_diff()
        elif not self._sync_held:
            self._sync_held = True
            asyncio.get_running_loop().call_later(FRAME_S / 2, self._held_sync)

    def _held_sync(self) -> None:
        if self._sync_held and self.answer is not None:  # (else a sync since drew it)
            self._sync_held = False
            self._draw_pass(self.answer)

    def _sync_diff(self) -> None:
        """Draw each hunk's state as the answer holds it, and the counts on the status bar."""
        self._sync_held = False  # (a held pass's draw: this one draws the state it would)
        run = self.answer
        if run is None:
            return
        diff = self.query_one(DiffView)
        states = {hid: state.value for hid, state in run.states().items()}
        badges = self.review.badges() if self.review else {}
        for hunk_id, badge in self.verify.badges().items():
            badges[hunk_id] = f"{badges[hunk_id]} {badge}" if badges.get(hunk_id) else badge
        self.station.hunks_shown(run)
        diff.sync(run.hunks, states, badges, run.hunk_context(), run.reasons)
        diff.hunk_keys = bool(run.open) or run.request_id in self._check_warned
        self.query_one(SidePanel).set_findings(
            [(f.severity, f.message) for f in (self.review.findings if self.review else [])])
        self.query_one(StatusBar).note = self._status_note(run)
        if run.timing is not None:  # measured beside the profile's forecast, and the gap
            from hwmodel.online import gap_text

            self.query_one(StatusBar).forecast = gap_text(
                run.stats.ttft_ms, run.stats.tokens_per_s, run.timing.get("predicted"))

    @staticmethod
    def _status_note(run: AnswerRun) -> str:
        """This answer's counts: "accepted" only for hunks whose lines are on disk."""
        if not run.hunks:
            return ""
        c = run.counts()
        parts = [f"{c['written']} accepted", f"{c['rejected']} rejected"]
        if c["chosen"]:
            parts.append(f"{c['chosen']} to write")
        if c["refused"]:
            parts.append(f"{c['refused']} refused")
        undecided = c["undecided"] + c["stale"]
        if undecided:
            parts.append(f"{undecided} open")
        return ", ".join(parts)

    def _wake_paint(self) -> None:
        """Frames are painted only while there is something to paint: a stream, or a flag
        set here or by the verifier's thread. A 120 Hz timer running while idle cost ~27 ms
        of CPU a second and took the interpreter 120 times a second from the threads a
        request waits for (assembly, the embedded core, the indexer) (issue 14)."""
        if self._paint_timer is not None:
            self._paint_timer.resume()

    def _paint(self) -> None:
        """At most once per frame: the pending block and the live numbers of the answer shown."""
        self._collector.streaming(self._stream is not None)
        self._collector.tick(self._keys.waiting())
        if self._verify_dirty:
            self._verify_dirty = False
            self._show_verify()
        if not (self._dirty or self._numbers_due) or self.answer is None:
            if self._stream is None and not self._verify_dirty and self._paint_timer is not None:
                self._paint_timer.pause()  # idle until _wake_paint
            return
        if self.keys_first("paint"):
            return  # a key is queued: it goes first (this timer's next tick paints)
        try:
            self._paint_answer(self.answer)
        except NoMatches:  # the app is closing: its screen's widgets go before this timer
            pass

    def _paint_answer(self, run: AnswerRun) -> None:
        """The block being written and the live numbers (see _paint)."""
        if self._dirty:
            self._dirty = False
            if not run.finished:  # once it has ended, the block written last stays until the
                # final hunks replace it in one frame (_after_stream): hidden at once, it cost
                # a layout pass of the whole diff (10-25 ms of the UI thread) in the frame right
                # after the last token, while the final pass was being built
                self.query_one(DiffView).set_pending(run.pending)
            self._numbers_due = True
        status = self.query_one(StatusBar)
        now = _clock()
        if self._stream is not None and status.tokens and now - self._numbers_shown < STATUS_EVERY_S:
            return  # the live numbers after the first token's, at most every STATUS_EVERY_S (a
            # later tick shows them): every frame they re-rendered the status bar (1-2 ms each,
            # 15-20 frames a stream) for a count nobody reads at 60 Hz
        self._numbers_due, self._numbers_shown = False, now
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
        status = self.query_one(StatusBar)
        status.extra = "  ".join(parts)
        status.unread = self.station.unread_accepts

    # -- decisions ---------------------------------------------------------------------------
    def _decide(self, accept: bool, everything: bool = False, reason: str | None = None) -> None:
        run = self.answer
        if run is None or not run.finished or not run.hunks or run.applied:
            return
        diff = self.query_one(DiffView)
        if self._schedule.hold(run, accept, everything, reason, diff.current_id):
            # between the last token and the final review the hunks drawn carry an earlier
            # state's findings (or none for the last blocks), which the accept policy reads:
            # the key is kept and applied when that review is in (~0.1-0.3 s), not lost
            self.query_one(StatusBar).note = "checking the answer's end: your key applies when it is in"
            return
        if everything:
            targets = run.undecided if accept else run.open  # A leaves refused hunks to r
        else:
            targets = [diff.current_id] if diff.current_id else []
        outcome = self.station.decide(run, targets, accept, self.review, reason=reason)
        self.verify.decisions_changed(run)
        self._check_warned.pop(run.request_id, None)
        if outcome.held is not None and outcome.held_id is not None:
            diff.select(run.hunks.index(run.hunk(outcome.held_id)))
            severity: SeverityLevel = "error" if outcome.held.verdict is Verdict.BLOCK else "warning"
            self.notify(outcome.held.message, severity=severity, timeout=8)
        self._sync_diff()
        self._update_session_status()
        if outcome.held is not None:
            return
        if run.open:
            refused = [hid for hid in run.open if run.state(hid) is HunkState.REFUSED]
            if refused and not run.undecided:
                self.notify("nothing of this answer is written while a hunk is refused: "
                            "r rejects it (the reason is on the hunk)", severity="warning", timeout=8)
            diff.select(run.hunks.index(run.hunk(run.open[0])))
            return
        self._check_then_write(run)

    @work(exclusive=True, group="apply", exit_on_error=False)
    async def _check_then_write(self, run: AnswerRun, force: bool = False) -> None:
        """Before writing an accepted subset, check it cheaply; warn when it breaks what the
        whole answer did not, with one key (w) to write anyway."""
        if not force:
            problems = await asyncio.to_thread(self.station.check_subset, run)
            if not problems:
                warning = await asyncio.to_thread(self.verify.subset_warning, run)
                problems = [warning] if warning else []
            if problems:
                self._check_warned[run.request_id] = problems
                notes = self._transcript(run)
                notes.append("\nthe check before writing found what the whole answer did not have "
                             "(or a file the answer would mostly delete):",
                             style="bold yellow")
                for problem in problems[:6]:
                    notes.append(f"\n  {problem}", style="yellow")
                notes.append("\nw writes anyway, e reopens the decisions", style="bold")
                self.query_one(DiffView).set_notes(notes)
                self.notify("check before writing found problems: w writes anyway, e reopens",
                            severity="warning", timeout=8)
                self._sync_diff()
                self._to_review()
                return
        self._check_warned.pop(run.request_id, None)
        await self._write(run, force=force)

    async def _write(self, run: AnswerRun, force: bool = False) -> None:
        self.verify.answer_dropped()
        now = time.monotonic()  # before writing: the watcher reports our own writes quickly
        self._own_writes.update({h.path: now for h in run.hunks if h.id in run.chosen})
        try:
            result = await asyncio.to_thread(self.station.write, run, force=force)
        except Exception as exc:  # noqa: BLE001 - shown; the hunks stay as they were
            self.notify(f"nothing written: {exc}", severity="error", timeout=10)
            return
        written = [h for h in run.hunks if run.state(h.id) is HunkState.WRITTEN]
        if result.written:
            commit = f" (commit {result.commit[:8]})" if result.commit else ""
            self.notify(f"wrote {len(written)} hunk(s) to {', '.join(result.written)}{commit}")
        refused = [h for h in run.hunks if run.state(h.id) is HunkState.REFUSED]
        if refused:
            files = sorted({h.path for h in refused})
            what = f"wrote {', '.join(result.written)}; " if result.written else "nothing of this answer was written: "
            self.notify(f"{what}refused {', '.join(files)} (the reason is on the hunk; r rejects it)",
                        severity="error", timeout=10)
        if run is self.answer:
            self._sync_diff()
            self._update_session_status()
            if run.open:
                self.query_one(DiffView).select(run.hunks.index(run.hunk(run.open[0])))
                self._to_review()
            else:
                self._to_prompt()  # decided: the next request can be typed at once

    def action_write_anyway(self) -> None:
        run = self.answer
        if run is not None and run.request_id in self._check_warned:
            self._check_then_write(run, force=True)

    def action_reopen(self) -> None:
        """After the check's warning: every decision of this answer open again."""
        run = self.answer
        if run is None or run.request_id not in self._check_warned or run.applied:
            return
        self._check_warned.pop(run.request_id, None)
        for hunk_id in run.ids_in(HunkState.CHOSEN, HunkState.REJECTED):
            run.reopen(hunk_id)
        self._after_stream(run)

    # -- verify before accept (core/verify, docs/verify.md) -----------------------------------
    def _verify_changed(self) -> None:
        """From the verifier's thread: only a flag; the next frame redraws."""
        self._verify_dirty = True
        loop = self._ui_loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._wake_paint)
            except RuntimeError:  # the app's loop is closed: nothing to draw any more
                pass

    def _show_verify(self) -> None:
        panels = self.query(VerifyPanel)
        if not panels:  # the app is closing: the answer's checks may end after its screen
            return
        answer, accepted = self.verify.reports()
        panels.first().show(answer, accepted, fix_key=self._send_failures_key(),
                            fix_note=self.verify.loop_status())
        badges = self.verify.badges()
        if badges != self._verify_badges:  # a hunk's [F821] appears or goes
            self._verify_badges = badges
            self._sync_diff()
        run = self.answer
        # only once the answer is fully shown (its last rebuild verified, not a partial one)
        # and before the user decided any of it
        if run is not None and self.settled and not run.applied and run.request_id not in self._auto_fixed \
                and not run.chosen and len(run.undecided) == len(run.hunks):
            prompt = self.verify.auto_fix(run)  # fast profile only; None unless broken and rounds left
            if prompt is not None:
                self._auto_fixed.add(run.request_id)
                self.notify("tests fail on the proposal: sending the failures back (fix loop)", timeout=5)
                self._start_answer(prompt, fix_of=run)

    def _send_failures_key(self) -> str:
        """The key bound to send_failures now ([ui.keys] may rebind it)."""
        for key, bindings in self._bindings.key_to_bindings.items():
            if any(b.action == "send_failures" for b in bindings):
                return key
        return "ctrl+e"

    def action_send_failures(self) -> None:
        """One key: the failing tests' trimmed output goes to the model as the next request."""
        run = self.answer
        if run is None or not self.settled or run.applied or self._stream is not None:
            return
        prompt = self.verify.fix_request()
        if prompt is None:
            self.notify("nothing to send back: the checks and tests pass (or are still running)", timeout=5)
            return
        self._start_answer(prompt, fix_of=run)

    def action_toggle_prose(self) -> None:
        run = self.answer
        if run is not None:
            self._prose_expanded = not self._prose_expanded
            self.query_one(DiffView).set_prose(run.prose, self._prose_expanded)

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

        def done(reason: str | None) -> None:  # (as the screen goes: before the keys typed behind Enter)
            if reason is not None:
                self._decide(False, reason=reason.strip() or None)

        self.push_screen(ReasonScreen(done))

    def action_ask_base(self) -> None:
        """Re-ask the current prompt on the deep profile (the answer to a sensitive-path flag)."""
        names = [p["name"] for p in self._profiles()]
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
        self._step_hunk(+1)

    def action_prev_hunk(self) -> None:
        self._step_hunk(-1)

    def _step_hunk(self, step: int) -> None:
        """j/k. A key that cannot move (at the last or first hunk, or none shown yet) still
        answers in its own frame: the status bar says where the selection is (`edge_note`),
        as a pager says (END); before, such a key changed nothing on screen, and a held j at
        the last hunk of a streaming answer looked unanswered until the next hunk came. The
        note goes when the selection moves (a j onto a hunk that just streamed in, the new last,
        updates it), or after EDGE_NOTE_S."""
        diff = self.query_one(DiffView)
        before = diff.current_id
        diff.select(diff.current + step)
        status: StatusBar | None = None  # the status bar, when its edge note changed
        total = len(diff._order)
        at_edge = diff.current == (total - 1 if step > 0 else 0)
        if diff.current_id != before and not (self._edge_shown == step and at_edge):
            if self._edge_shown:  # (a key that moved pays only this check)
                self._edge_shown = 0
                status = self.query_one(StatusBar)
                status.edge = ""
        else:  # could not move, or moved onto the new last hunk of a stream while the note is
            # shown (a held j at the stream's end: the note updates, it does not blink off and on)
            status = self.query_one(StatusBar)
            status.edge = edge_note(step, diff.current, total)
            self._edge_shown = step
            if self._edge_timer is None:
                self._edge_timer = self.set_timer(EDGE_NOTE_S, self._clear_edge_note)
            else:
                self._edge_timer.reset()
        self._key_frame(status)

    def _clear_edge_note(self) -> None:
        self._edge_timer = None
        if self._edge_shown:
            self._edge_shown = 0
            self.query_one(StatusBar).edge = ""

    def _key_frame(self, status: StatusBar | None = None) -> None:
        """The frame that shows a j/k is drawn right after the keys queued with it are handled
        (one frame for a burst), not after Textual's idle hops and its next 1/MAX_FPS tick:
        while an answer streams those took 10-45 ms after the key was handled (tui/key_frame.py).
        `status`: the status bar too (its edge note changed): taken now, before its own idle
        hands it to Textual's path (then this frame found nothing to draw)."""
        screen = self.screen
        if status is not None and not take_refreshes(screen, status):
            return
        if take_refreshes(screen, self.query_one(DiffView)) and not self._key_frame_due:
            self._key_frame_due = True
            asyncio.get_running_loop().call_soon(self._draw_key_frame)

    def _draw_key_frame(self) -> None:
        self._key_frame_due = False
        screen = self.screen
        if take_refreshes(screen, screen):  # what else waits to be drawn goes in this frame too
            draw_now(screen)
        else:  # (widgets being mounted: Textual draws the frame once they are, at its tick)
            screen.check_idle()

    async def action_cancel(self) -> None:
        if self._stream is not None:
            await self._stream.cancel()

    def action_toggle_profile(self) -> None:
        names = [p["name"] for p in self._profiles()] or ["spark", "base"]
        pair = [n for n in ("spark", "base") if n in names]
        cycle = pair if len(pair) == 2 else names  # any two (or more) profiles of the user's
        if len(cycle) > 1:
            at = cycle.index(self.profile) if self.profile in cycle else -1
            self._use_profile(cycle[(at + 1) % len(cycle)])
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
        """Every key of both modes as currently bound (keymap overrides applied), one row per
        action: the review's letters (on the diff) and the app's keys."""
        by_action: dict[str, list[str]] = {}
        first: dict[str, object] = {}
        diff = self.query_one(DiffView)
        review = [(key, b) for key, b in diff._bindings if b.action.startswith("app.")]  # not scrolling
        for key, binding in [*review, *self._bindings]:
            if binding.description:
                action = binding.action.removeprefix("app.")
                by_action.setdefault(action, []).append(key)
                first.setdefault(action, binding)
        return [(",".join(keys), first[action]) for action, keys in by_action.items()]

    def action_fresh_context(self) -> None:
        self.station.fresh_context()
        self._update_context_meter()
        self.notify("fresh context: the conversation is cleared, files stay in the chat")

    def _profiles(self) -> list[dict]:
        return list(self.client.profiles) if self.client is not None else []

    def _profile_info(self, name: str) -> dict:
        for profile in self._profiles():
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

    @work(exclusive=True, group="apply", exit_on_error=False)
    async def action_undo(self) -> None:
        """Undo the last accepted change; say exactly which files came back and which did not
        (and why); the hunks it wrote go back to undecided, with the status bar and record."""
        try:
            outcome = await asyncio.to_thread(self.station.undo)
        except Exception as exc:  # noqa: BLE001 - shown; nothing changed
            self.notify(f"undo failed, nothing changed: {exc}", severity="error", timeout=10)
            return
        if not outcome.found:
            self.notify("nothing to undo")
            return
        not_restored = "; ".join(why for _path, why in outcome.refused)
        if outcome.restored:
            message = f"undid the last accepted change: restored {', '.join(outcome.restored)}"
            if not_restored:
                message += f"; NOT restored: {not_restored}"
            self.notify(message, severity="warning" if not_restored else "information", timeout=10)
        else:
            message = f"could not undo: {not_restored or 'nothing could be restored'}"
            self.notify(message, severity="error", timeout=10)
        self._undo_note = Text(message, style="yellow" if outcome.restored and not not_restored else "bold red")
        run = self.answer
        if run is not None and outcome.run is run:
            self._after_stream(run)
        elif run is not None and self._last_notes is not None:
            notes = self._last_notes.copy()
            notes.append("\n")
            notes.append_text(self._undo_note)
            self.query_one(DiffView).set_notes(notes)
        self._update_session_status()

    async def action_variations(self) -> None:
        """N answers to one prompt side by side; a digit takes one into the main loop."""
        from tui.screens.variations import open_variations

        prompt = await self._take_prompt()
        if prompt is not None:
            await open_variations(self, prompt)

    def action_batch(self) -> None:
        """A queue of independent prompts, each with a fresh context, reviewed one after another."""
        from tui.screens.batch import open_batch

        open_batch(self)

    def action_report(self) -> None:
        from tui.screens.report import ReportScreen

        self.push_screen(ReportScreen(self.root, self.station.recorder.session_id))

    async def _prompt_text(self) -> str:
        """The prompt's full text: the keys typed before this one are read first (a priority
        key is handled before the Input has processed the letters queued ahead of it)."""
        prompt_input = self.query_one("#prompt", Input)
        drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def mark() -> None:
            if not drained.done():
                drained.set_result(None)

        prompt_input.call_later(mark)
        try:
            await asyncio.wait_for(drained, 1.0)
        except TimeoutError:
            pass
        return prompt_input.value

    async def _take_prompt(self) -> str | None:
        """The typed prompt (or the last one) for a screen that sends it itself."""
        prompt_input = self.query_one("#prompt", Input)
        prompt = (await self._prompt_text()).strip() or self.last_prompt
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

        prompt = prompt or await self._take_prompt()
        if prompt is None or self.client is None:
            return
        names = [p["name"] for p in self.client.profiles]
        pair = ("spark", "base") if {"spark", "base"} <= set(names) else tuple(names[:2])
        if len(pair) < 2:
            self.notify("a race needs two profiles", severity="warning")
            return
        messages, _report = await asyncio.to_thread(self.station.context.build_request, prompt)
        self.push_screen(RaceScreen(self.client, prompt, messages, pair), self._race_taken)

    def _race_taken(self, result) -> None:
        if result is not None:
            self._adopt_answer(result.profile, result.prompt, result.text, result.stats, kind="race")

    @work(exclusive=True, group="answer", exit_on_error=False)
    async def _adopt_answer(self, profile: str, prompt: str, text: str, stats=None, *,
                            kind: str = "chat", request_id: str | None = None,
                            timing_recorded: bool = False) -> None:
        """Load an answer produced elsewhere (race, variations, batch) into the review loop.

        It keeps its own stream's timing (`stats`: the status bar shows that stream's tok/s
        and TTFT, never a re-parse's). A race lane is recorded here; variations and batch
        tasks recorded their stream already (`timing_recorded`, under `request_id`)."""
        from core.backends.tokens import count_tokens

        run = AnswerRun(self.workspace, prompt, profile)
        run.origin, run.kind = f"taken from {profile}" if kind == "race" else f"a {kind} answer", kind
        if request_id:
            run.request_id = request_id
        self.last_prompt = prompt
        self._show_new_answer(run)
        run.feed(text, count_tokens(text))
        run.finish("stop")
        if stats is not None:
            run.stats = stats
        else:  # no timing known: show none rather than a re-parse's impossible speed
            run.stats.first_token = None
        if not timing_recorded:
            self.station.recorder.prompt(run.request_id, prompt, profile, kind=kind)
        await self._finish_answer(run, timing_recorded=timing_recorded)

    # Actions of the main screen; while another screen (race, variations, help) is on top
    # their priority keys must not reach through it.
    MAIN_SCREEN_ACTIONS = frozenset({
        "accept", "reject", "accept_all", "reject_all", "reject_with_reason", "ask_base", "next_hunk",
        "prev_hunk", "cancel", "escape", "toggle_profile", "race", "variations", "batch", "report",
        "fresh_context", "undo", "add_mentioned", "pick_files", "help", "focus_prompt", "slash_prompt",
        "write_anyway", "reopen", "toggle_prose"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action in self.MAIN_SCREEN_ACTIONS and len(self.screen_stack) > 1)

    async def on_unmount(self) -> None:
        self._stop_watch.set()
        self._collector.streaming(False)  # (an app closed while an answer streams)
        indexes = getattr(self.station, "indexes", None)
        if indexes is not None:
            indexes.stop()  # the indexer child exits and closes its cache cleanly
        self.verify.close()
        await asyncio.to_thread(self.verify.wait_closed, 5.0)
        if self.client is not None:
            await self.client.close()
