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

Enter submits in its place among the keys typed. Input's Enter is a binding, and Textual
runs a widget's bindings only once the key has bubbled up to the App, by which time the
Input has already inserted the keys queued after it: a fast typist's (or a held j's)
letters after Enter were part of the prompt sent.
"""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.widgets import Input


class PromptInput(Input):
    """An Input whose value changes repaint it (and scroll it) without a layout pass."""

    def _watch_value(self, value: str) -> None:
        if not self.styles.auto_dimensions:
            self.set_reactive(Input.virtual_size, Size(self.content_width, 1))
        super()._watch_value(value)  # sets the same size again: no refresh, no layout

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()  # neither Input's key handler nor its enter binding runs
            await self.action_submit()
