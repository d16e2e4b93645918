"""The side panel: the watched tree's recent changes and the detectors' findings."""

from __future__ import annotations

import time

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

MAX_CHANGES = 12
# What happened to a file, in words of the same width: "spark" is a write of ours.
CHANGE_LABELS = {"added": "new  ", "modified": "edit ", "deleted": "del  ", "spark": "spark"}


class SidePanel(VerticalScroll):
    DEFAULT_CSS = """
    SidePanel { width: 30%; max-width: 48; min-width: 24; border: round $panel; padding: 0 1; }
    SidePanel > .title { text-style: bold; color: $accent; margin-top: 1; }
    """

    def __init__(self, root_label: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self._root_label = root_label
        self._changes: list[tuple[float, str, str]] = []

    def compose(self):
        yield Static(Text(self._root_label, style="bold"), id="root")
        yield Static("Context", classes="title")
        yield Static("", id="context")
        yield Static("Findings", classes="title")
        yield Static(Text("none yet", style="dim"), id="findings")
        yield Static("Recent changes", classes="title")
        yield Static(Text("watching…", style="dim"), id="changes")

    def add_changes(self, changes: list[tuple[str, str]]) -> None:
        now = time.time()
        for path, kind in changes:
            self._changes.insert(0, (now, kind, path))
        del self._changes[MAX_CHANGES:]
        text = Text()
        for stamp, kind, path in self._changes:
            style = {"added": "green", "deleted": "red", "spark": "cyan"}.get(kind, "yellow")
            text.append(time.strftime("%H:%M:%S ", time.localtime(stamp)), style="dim")
            text.append(f"{CHANGE_LABELS.get(kind, kind)} ", style=style)
            text.append(f"{path}\n")
        self.query_one("#changes", Static).update(text)

    def set_findings(self, findings: list[tuple[str, str]]) -> None:
        """findings: (severity, message) with severity in info|warning|error."""
        if not findings:
            self.query_one("#findings", Static).update(Text("none", style="dim"))
            return
        text = Text()
        for severity, message in findings:
            style = {"error": "bold red", "warning": "yellow"}.get(severity, "cyan")
            text.append("● ", style=style)
            text.append(f"{message}\n")
        self.query_one("#findings", Static).update(text)

    def set_context(self, renderable) -> None:
        self.query_one("#context", Static).update(renderable)
