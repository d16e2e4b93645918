"""The split-pane race (seed 002): the same prompt to two profiles, side by side.

Both requests go out on the app's one core connection at the same instant; each pane
shows its answer streaming with elapsed time, TTFT, tokens, tokens/s and the performance
model's predicted finish, repainted at most once per frame. The screen dismisses with a
`RaceResult` when the user takes an answer (`1`/`2`, or arrows + enter), or with None on
`escape`, which cancels whatever is still streaming.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from core.client import CoreError
from core.race import Prediction, Race, RaceResult
from tui.widgets.race_pane import RacePane

FRAME_S = 1 / 30
log = logging.getLogger(__name__)


class RaceScreen(ModalScreen[RaceResult | None]):
    """Push with `app.push_screen(RaceScreen(client, prompt, messages), callback)`.

    Modal (and opaque) so the workstation's own keys (a/r/j/k...) neither fire nor crowd
    the footer while racing; the app's priority bindings still reach the app.

    `client` is a connected `core.client.CoreClient`; `messages` is what the main loop
    would send for `prompt`. With `client=None` and a finished `race`, the screen only
    shows that race (no streaming): used for snapshots and reviewing a past race.
    """

    DEFAULT_CSS = """
    RaceScreen { layout: vertical; background: $background; align: left top; }
    RaceScreen > #race-prompt { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    RaceScreen > #race-banner { height: 1; padding: 0 1; text-style: bold; }
    RaceScreen > #race-banner.-won { background: $success 30%; }
    RaceScreen > #race-lanes { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "take(0)", "Take left"),
        Binding("2", "take(1)", "Take right"),
        Binding("left", "focus_pane(0)", "Left", show=False),
        Binding("right", "focus_pane(1)", "Right", show=False),
        Binding("enter", "take_focused", "Take focused"),
        Binding("escape", "close", "Cancel & close"),
    ]

    def __init__(self, client, prompt: str, messages: list[dict],
                 profiles: tuple[str, str] = ("spark", "base"), *,
                 max_tokens: int | None = None, race: Race | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        if client is None and race is None:
            raise ValueError("RaceScreen needs a client to race, or a finished race to show")
        self.client = client
        self.prompt = prompt
        self.messages = messages
        self.profiles: tuple[str, str] = (profiles[0], profiles[1])
        self.max_tokens = max_tokens
        if race is None:
            predicted = {name: Prediction.from_profile(client.profile(name)) for name in profiles}
            race = Race(prompt, self.profiles, predicted=predicted, max_tokens=max_tokens)
        self.race = race
        self._streams: dict[str, Any] = {}
        self._final_painted = False

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("race  ", "bold"), self.prompt), id="race-prompt")
        yield Static("", id="race-banner")
        with Horizontal(id="race-lanes"):
            for index, lane in enumerate(self.race.lanes):
                yield RacePane(lane.profile, str(index + 1), self._subtitle(lane.profile),
                               id=f"race-lane-{index + 1}")
        yield Footer()

    def _subtitle(self, profile: str) -> str:
        entry = self.client.profile(profile) if self.client is not None else None
        if not entry:
            return ""
        return " \u00b7 ".join(str(entry[k]) for k in ("chip", "model") if entry.get(k))

    def on_mount(self) -> None:
        self.query_one(RacePane).focus()
        if self.client is not None:
            self.race.start()
        self._paint()
        if self.client is not None:
            for lane in self.race.lanes:
                self.run_worker(self._run_lane(lane.profile), group="race",
                                name=f"race-{lane.profile}")
            self.set_interval(FRAME_S, self._paint)

    # -- streaming ---------------------------------------------------------------------------
    async def _run_lane(self, profile: str) -> None:
        """One lane through the one answer loop (`core.loop.stream_answer`); a failure ends
        this lane only, the other keeps racing."""
        from core.answer import AnswerRun
        from core.loop import Finished, Progress, Started, stream_answer

        run = AnswerRun(None, self.prompt, profile)
        async for update in stream_answer(self.client, run, self.messages, max_tokens=self.max_tokens):
            if isinstance(update, Started):
                self._streams[profile] = update.stream
            elif isinstance(update, Progress):
                self.race.feed(profile, update.text, update.tokens)
            elif isinstance(update, Finished):
                self.race.finish(profile, update.reason, timing=run.timing,
                                 error=update.error if update.reason == "error" else None)

    def _paint(self) -> None:
        """At most once per frame: both panes and the banner from the race's numbers."""
        if self._final_painted:
            return
        race = self.race
        now = race.now()
        winner = race.winner
        for index, lane in enumerate(race.lanes):
            self.query_one(f"#race-lane-{index + 1}", RacePane).show(
                race, lane, now, winner is lane)
        banner = self.query_one("#race-banner", Static)
        line = race.banner()
        if line is None:
            names = " and ".join(lane.profile for lane in race.lanes)
            banner.update(Text(f"racing: the same prompt to {names}...", style="italic"))
        else:
            banner.update(Text(line))
        banner.set_class(winner is not None, "-won")
        self._final_painted = race.done

    # -- keys --------------------------------------------------------------------------------
    async def _cancel_running(self) -> None:
        for profile, stream in self._streams.items():
            if not self.race.lane(profile).finished:
                try:
                    await stream.cancel()
                except CoreError as exc:  # the connection may be gone; closing must still work
                    log.info("could not cancel %s's stream: %s", profile, exc)

    async def action_take(self, index: int) -> None:
        lane = self.race.lanes[index]
        if not lane.completed:
            why = "is still streaming" if not lane.finished else f"has no answer ({lane.error or lane.reason})"
            self.notify(f"{lane.profile} {why}", severity="warning")
            return
        await self._cancel_running()
        self.dismiss(RaceResult(lane.profile, self.prompt, lane.text, lane.stats))

    async def action_take_focused(self) -> None:
        focused = self.focused
        if isinstance(focused, RacePane):
            await self.action_take(int(focused.key) - 1)

    def action_focus_pane(self, index: int) -> None:
        self.query_one(f"#race-lane-{index + 1}", RacePane).focus()

    async def action_close(self) -> None:
        await self._cancel_running()
        self.dismiss(None)
