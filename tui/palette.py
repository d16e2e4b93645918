"""Command palette entries for the workstation's actions (ctrl+p).

Textual's own provider already offers themes, keys and quit; this adds ours so every
binding is reachable by name too.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class WorkstationCommands(Provider):
    """Every bound action of the app, searchable by its description."""

    def _commands(self):
        app = self.app
        seen = set()
        for binding in getattr(app, "BINDINGS", []):
            if binding.action in seen or not binding.description:
                continue
            seen.add(binding.action)
            yield binding.description, binding.action, binding.key
        for name in sorted(app.available_themes):
            yield f"Theme: {name}", f"__theme:{name}", ""

    async def _run(self, action: str) -> None:
        if action.startswith("__theme:"):
            self.app.theme = action.split(":", 1)[1]
        else:
            await self.app.run_action(action)

    async def discover(self) -> Hits:
        for label, action, key in self._commands():
            yield DiscoveryHit(label, partial(self._run, action), help=f"key: {key}" if key else None)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for label, action, key in self._commands():
            score = matcher.match(label)
            if score > 0:
                yield Hit(score, matcher.highlight(label), partial(self._run, action),
                          help=f"key: {key}" if key else None)
