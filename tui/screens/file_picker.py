"""Fuzzy file picker: put files in the chat without typing their paths.

Type to filter (Textual's fuzzy matcher, the one the command palette uses), arrows to move,
Enter adds the highlighted file, tab switches between editable and read-only reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.fuzzy import Matcher
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

MAX_SHOWN = 200


@dataclass(frozen=True)
class PickedFile:
    path: str
    read_only: bool


class FilePickerScreen(ModalScreen[PickedFile | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Close"),
        Binding("tab", "toggle_read_only", "Editable / read-only", priority=True),
        Binding("down", "move(1)", "Down", show=False),
        Binding("up", "move(-1)", "Up", show=False),
    ]
    DEFAULT_CSS = """
    FilePickerScreen { align: center middle; }
    FilePickerScreen > Vertical { width: 90; height: 80%; border: round $accent; background: $surface; }
    FilePickerScreen OptionList { height: 1fr; }
    """

    def __init__(self, files: list[str], in_chat: set[str]) -> None:
        super().__init__()
        self._files = files
        self._in_chat = in_chat
        self.read_only = False
        self._shown: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._mode_line(), id="mode")
            yield Input(placeholder="type to filter files", id="filter")
            yield OptionList(id="files")

    def on_mount(self) -> None:
        self._refilter("")
        self.query_one("#filter", Input).focus()

    def _mode_line(self) -> Text:
        mode = "read-only reference" if self.read_only else "editable"
        return Text.assemble(("Add to the chat as ", "dim"), (mode, "bold"), ("  (tab switches)", "dim"))

    def _refilter(self, query: str) -> None:
        if query:
            matcher = Matcher(query)
            scored = sorted(((matcher.match(f), f) for f in self._files), key=lambda sf: (-sf[0], sf[1]))
            self._shown = [f for score, f in scored if score > 0][:MAX_SHOWN]
            labels = [matcher.highlight(f) for f in self._shown]
        else:
            self._shown = self._files[:MAX_SHOWN]
            labels = [Content(f) for f in self._shown]
        options = self.query_one("#files", OptionList)
        options.clear_options()
        for path, label in zip(self._shown, labels):
            if path in self._in_chat:
                label = Content.assemble(label, ("  (in the chat)", "dim"))
            options.add_option(Option(label, id=path))
        if self._shown:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._refilter(event.value.strip())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        options = self.query_one("#files", OptionList)
        if options.highlighted is not None and self._shown:
            self.dismiss(PickedFile(self._shown[options.highlighted], self.read_only))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(PickedFile(str(event.option.id), self.read_only))

    def action_move(self, step: int) -> None:
        options = self.query_one("#files", OptionList)
        if self._shown:
            current = options.highlighted or 0
            options.highlighted = max(0, min(len(self._shown) - 1, current + step))

    def action_toggle_read_only(self) -> None:
        self.read_only = not self.read_only
        self.query_one("#mode", Static).update(self._mode_line())

    def action_cancel(self) -> None:
        self.dismiss(None)
