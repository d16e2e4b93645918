"""The prompt line: Textual's Input without a whole-screen layout per value change.

Input sets its virtual size to the text's width on every change of its value (each key
typed, and the clear when a prompt is sent), and `virtual_size` is a layout reactive: each
change asked for a layout of the whole screen and a re-render of every widget whose
region it touched, 2-5 ms of the UI thread per key on the main screen, and on Enter one
more while the request was being assembled (issue 14: the thread hop back to send it
waited for that layout). For an Input of fixed size nothing else's position depends on
that width: it only bounds the horizontal scroll inside the box, which reads
`virtual_size` directly. So this Input stores the new virtual size without the layout.
An Input sized `auto` keeps the layout (its own size does depend on its text).
"""

from __future__ import annotations

from textual.geometry import Size
from textual.widgets import Input


class PromptInput(Input):
    """An Input whose value changes repaint it (and scroll it) without a layout pass."""

    def _watch_value(self, value: str) -> None:
        if not self.styles.auto_dimensions:
            self.set_reactive(Input.virtual_size, Size(self.content_width, 1))
        super()._watch_value(value)  # sets the same size again: no refresh, no layout
