"""A one-line prompt for why a hunk was rejected (sent back to the model with the next request)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ReasonScreen(ModalScreen[str | None]):
    """Enter rejects with the typed reason (may be empty); escape cancels the rejection."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ReasonScreen { align: center middle; }
    ReasonScreen > Vertical { width: 80; height: auto; border: round $warning; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Why reject this hunk? (one line; Enter rejects, escape cancels)")
            yield Input(placeholder="e.g. use the existing to_date helper", id="reason")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
