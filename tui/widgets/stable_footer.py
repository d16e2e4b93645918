"""The main screen's footer as ONE widget that repaints its text when the keys change.

Textual's Footer is a container with one FooterKey widget per binding, and it remounts
all of them on every bindings update; focus moving between the prompt and the diff is
one, and each request moves it twice (REVIEW while the answer streams, PROMPT after).
Measured on an empty project (issue 14), each recompose mounted ~35 widgets and ran the
stylesheet over each (`stylesheet.apply`, `set_class`): tens of ms of the UI thread
between Enter and the first token, and the layout pass that followed delayed the first
token's paint. This footer draws the same picture (key, description and the command
palette key on the right, with the Footer's own CSS variables) into a single line of
text, so a mode change costs one repaint and no mount, no CSS and no layout.

A click on a key presses it (as FooterKey does); hover highlighting and per-key
tooltips are the two things of Textual's Footer it does not do.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget


@dataclass(frozen=True)
class _Key:
    """One key as shown: which key it presses and the columns it covers."""

    key: str
    start: int
    end: int
    enabled: bool


class StableFooter(Widget, can_focus=False):
    """A drop-in for Footer on the main screen: one line, repainted, never recomposed."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {"footer-key--key", "footer-key--description",
                                             "footer--item", "footer--palette-border"}
    # The values are Textual's Footer/FooterKey CSS, so themes style both alike.
    DEFAULT_CSS = """
    StableFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        .footer--item { background: $footer-item-background; }
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .footer--palette-border { color: $foreground 20%; }
    }
    """

    compact = reactive(False)
    show_command_palette = reactive(True)

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None, compact: bool = False,
                 show_command_palette: bool = True) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.set_reactive(StableFooter.compact, compact)
        self.set_reactive(StableFooter.show_command_palette, show_command_palette)
        self._shown: tuple | None = None  # the visible bindings the text was made from
        self._stale = True
        self._keys: list[_Key] = []
        self._width = -1
        self._text = Text()

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        # Read lazily at the next paint: one focus change publishes several updates.
        if screen is self.screen:
            self._stale = True
            self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._shown = None  # a theme change: same keys, new colours

    def _visible(self) -> tuple:
        """(key, binding, enabled, tooltip) of each shown binding, in the screen's order, and
        last the command palette's binding (shown on the right) or None."""
        try:
            bindings = self.screen.active_bindings
        except Exception:  # noqa: BLE001 -- not on a screen (yet)
            return (None,)
        palette = bindings.get(self.app.COMMAND_PALETTE_BINDING)
        return (*((key, binding, enabled, tooltip)
                  for key, (_node, binding, enabled, tooltip) in bindings.items() if binding.show),
                None if palette is None else (palette.binding, palette.enabled))

    def render(self) -> Text:
        visible = self._visible() if self._stale or self._shown is None else self._shown
        self._stale = False
        width = self.size.width
        if visible != self._shown or self._width != width:
            self._shown = visible
            self._width = width
            self._text = self._build(visible, width)
        return self._text

    # -- drawing -----------------------------------------------------------------------------
    def _styles(self) -> tuple[Style, Style, Style, Style]:
        item = self.get_component_rich_style("footer--item")
        key = self.get_component_rich_style("footer-key--key")
        description = self.get_component_rich_style("footer-key--description")
        border = self.get_component_rich_style("footer--palette-border")
        return item, key, description, border

    def _key_text(self, key_display: str, description: str, enabled: bool, compact: bool) -> Text:
        """One FooterKey's picture: padding as in its CSS (compact or not)."""
        item, key_style, description_style, _border = self._styles()
        if description:
            key_part = key_display if compact else f" {key_display} "
            description_part = f" {description}" if compact else f"{description} "
            text = Text.assemble((key_part, key_style), (description_part, description_style))
        else:
            text = Text.assemble((key_display, key_style))
        text.stylize_before(item + Style(dim=True) if not enabled else item)
        return text

    def _build(self, visible: tuple, width: int) -> Text:
        """The whole line: the keys from the left, the palette key docked right."""
        self._keys = []
        *shown, palette_entry = visible
        by_action: dict[str, list[tuple[str, Binding, bool, str]]] = {}
        for entry in shown:
            by_action.setdefault(entry[1].action, []).append(entry)
        line = Text(no_wrap=True, overflow="crop")
        for group, members_iter in groupby(by_action.values(), lambda entries: entries[0][1].group):
            members = list(members_iter)
            if group is not None and len(members) > 1:
                for entries in members:
                    key, binding, enabled, _tooltip = entries[0]
                    self._append(line, key, self._key_text(self.app.get_key_display(binding), "",
                                                           enabled, self.compact), enabled)
                    line.append(" ")
                line.append(f"{group.description} ", style=self._styles()[2])
                continue
            for entries in members:
                key, binding, enabled, _tooltip = entries[0]
                self._append(line, key, self._key_text(self.app.get_key_display(binding),
                                                       binding.description, enabled, self.compact),
                             enabled)
                if self.compact:
                    line.append(" ")
        palette = self._palette(palette_entry)
        if palette is None:
            line.truncate(width)
            return line
        key, text = palette
        room = max(0, width - text.cell_len)
        line.truncate(room)
        if line.cell_len < room:  # the gap is bare footer, as between Footer's widgets
            line.append(" " * (room - line.cell_len), style=Style(bgcolor=self.rich_style.bgcolor))
        self._keys = [k for k in self._keys if k.start < room]
        self._keys.append(_Key(key, room, width, True))
        line.append_text(text)
        return line

    def _append(self, line: Text, key: str, text: Text, enabled: bool) -> None:
        start = line.cell_len
        line.append_text(text)
        self._keys.append(_Key(key, start, line.cell_len, enabled))

    def _palette(self, entry: tuple[Binding, bool] | None) -> tuple[str, Text] | None:
        """The command palette key, as Footer docks it right (a compact FooterKey)."""
        if entry is None or not (self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE):
            return None
        binding, enabled = entry
        item, *_rest, border = self._styles()
        text = Text("▏", style=border)
        text.append_text(self._key_text(self.app.get_key_display(binding), binding.description,
                                        enabled, compact=True))
        if not self.compact:
            text.append(" ", style=item)
        return binding.key, text

    # -- mouse -------------------------------------------------------------------------------
    def on_mouse_down(self, event: events.MouseDown) -> None:
        """A click presses the key under the pointer, as FooterKey does."""
        for shown in self._keys:
            if shown.start <= event.x < shown.end:
                if shown.enabled:
                    self.app.simulate_key(shown.key)
                else:
                    self.app.bell()
                return
