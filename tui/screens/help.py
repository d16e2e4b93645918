"""The help screen: every key the workstation answers to, as currently bound."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.screens.modal_keys import KeyTakingScreen
from tui.widgets.prompt_input import run_binding

INTRO = (
    "The loop: type a request, watch it stream in as a diff, then decide each hunk.\n"
    "Prompt -> Reject -> Prompt -> Accept. Accepted hunks are written atomically and can be undone."
)


def _key_label(app, key: str) -> str:
    return ", ".join(app.get_key_display(Binding(k.strip(), "")) for k in key.split(","))


class HelpScreen(KeyTakingScreen[None]):
    """Lists the app's bindings with their descriptions (keymap overrides included). Its keys
    come to the screen itself (nothing here takes the focus), in order: the key that closes it
    acts in its place, and the keys typed behind it act where the focus returns
    (tui/screens/modal_keys.py: "? escape j" opens help, closes it, then steps)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 96%; max-width: 84; height: 90%; max-height: 40;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, bindings: list[tuple[str, str, str]]) -> None:
        """bindings: (key, action, description) as the app currently has them."""
        super().__init__()
        self._rows = bindings

    async def take_key(self, event: events.Key) -> None:
        """The scroll's keys (arrows, page keys) scroll, the screen's close it."""
        await run_binding(self.query_one(VerticalScroll), event.key)

    async def action_close(self) -> None:
        await self.close(None)

    def compose(self) -> ComposeResult:
        table = Table(show_header=True, header_style="bold", box=None, expand=True)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("does")
        for key, _action, description in self._rows:
            table.add_row(_key_label(self.app, key), description)
        with VerticalScroll(can_focus=False):
            yield Static(Text("sparkstation keys", style="bold"))
            yield Static(Text(INTRO, style="dim"))
            yield Static(table)
            yield Static(Text("\nSlash commands in the prompt: /add /drop /files /clear /context", style="dim"))
            yield Static(Text("escape closes this screen", style="dim italic"))
