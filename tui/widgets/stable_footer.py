"""Textual's Footer, recomposed only when the keys it shows change.

Textual's Footer rebuilds all its key widgets (one per binding) on every bindings update,
and focus moving between the prompt and the diff is one: measured on an empty project,
each request remounted ~70 footer keys (4 recomposes, CSS for each new widget), the
largest part of the 40-90 ms the app added between Enter and the first token (issue 14).
The keys shown (key, description, enabled) rarely change across those updates, so this
footer compares them first and keeps its widgets when nothing visible changed.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class StableFooter(Footer):
    """A drop-in Footer that skips recomposing when the shown bindings are unchanged."""

    _shown: tuple | None = None

    def _visible(self) -> tuple:
        try:
            bindings = self.screen.active_bindings
        except Exception:  # noqa: BLE001 -- not mounted on a screen yet
            return ()
        return tuple(
            (key, binding.description, binding.key_display, enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in bindings.items()
            if binding.show
        )

    def compose(self):  # type: ignore[override]
        self._shown = self._visible()
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        if self._visible() != self._shown:
            await self.recompose()
