"""A one-line prompt for why a hunk was rejected (sent back to the model with the next request).

The letters typed right behind x are the reason, and the keys typed right behind its Enter (or
escape) act in the review, in order (tui/screens/modal_keys.py): "x too slow Enter j" as one
burst rejects the hunk with "too slow", then steps."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.widgets import Static

from tui.screens.modal_keys import KeyTakingScreen
from tui.widgets.prompt_input import PromptInput


class ReasonInput(PromptInput):
    """The reason's line: Enter and escape act in their place among the keys (PromptInput), and
    the keys after the one that closes the screen are kept for the review."""

    async def _on_key(self, event: events.Key) -> None:
        screen = self.screen
        if isinstance(screen, ReasonScreen) and screen.closing:
            screen.keep(event)  # (stops it: PromptInput's and Input's handlers do not run)
            await screen.settle()
            return
        event.stop()  # (its binding runs here if it has one: nothing for it at the App)

    async def _submit(self) -> None:
        screen = self.screen
        if isinstance(screen, ReasonScreen):
            await screen.close(self.value)


class ReasonScreen(KeyTakingScreen[str]):
    """Enter rejects with the typed reason (may be empty); escape cancels the rejection.
    `on_close` gets the reason (None when cancelled) as the screen goes, before the keys typed
    behind Enter act."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ReasonScreen { align: center middle; }
    ReasonScreen > Vertical { width: 80; height: auto; border: round $warning; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Why reject this hunk? (one line; Enter rejects, escape cancels)")
            yield ReasonInput(placeholder="e.g. use the existing to_date helper", id="reason",
                              select_on_focus=False)

    def key_target(self) -> ReasonInput | None:
        try:
            return self.query_one(ReasonInput)
        except NoMatches:  # (not composed yet)
            return None

    async def take_key(self, event: events.Key) -> None:
        line = self.key_target()
        if line is not None:
            await line._type(event)  # typed as the focused line would (Enter submits, escape cancels)

    async def action_cancel(self) -> None:
        await self.close(None)
