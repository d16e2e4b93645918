"""The side panel: the watched tree's recent changes and the detectors' findings."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from tui.widgets.findings_list import FindingsList
from tui.widgets.kept_lines import KeptLinesScroll

MAX_CHANGES = 12
# What happened to a file, in words of the same width: "spark" is a write of ours.
CHANGE_LABELS = {"added": "new  ", "modified": "edit ", "deleted": "del  ", "spark": "spark"}


class SidePanel(KeptLinesScroll):
    # its own lines are kept and its scrollbar repaints by line (kept_lines: findings
    # arriving are a layout, which drew the panel's border and bar again in full);
    # the scrollbar's columns are kept (scrollbar-gutter): when an answer's review grows the
    # findings past the panel's height, the scrollbar appearing narrowed every section by 2
    # columns, and the frame after the one that showed the findings laid the screen out and
    # drew the findings (~400 lines) again at the new width (80-90 ms of the UI thread)
    DEFAULT_CSS = """
    SidePanel { width: 30%; max-width: 48; min-width: 24; border: round $panel; padding: 0 1; scrollbar-gutter: stable; }
    SidePanel > .title { text-style: bold; color: $accent; margin-top: 1; }
    """

    def __init__(self, root_label: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self._root_label = root_label
        self._changes: list[tuple[float, str, str]] = []
        self._shown: dict[str, object] = {}  # section id -> what it shows now

    def _show(self, section: str, renderable) -> None:
        """Update a section only when its content changes: every update of a Static asks
        for a layout of the whole screen, and each request sets the findings and the
        context again (mostly to what they already show)."""
        if self._shown.get(section) != renderable:
            self._shown[section] = renderable
            self.query_one(f"#{section}", Static).update(renderable)

    def compose(self):
        yield Static(Text(self._root_label, style="bold"), id="root")
        yield Static("Context", classes="title")
        yield Static("", id="context")
        yield Static("Findings", classes="title")
        yield FindingsList(id="findings")  # "none yet" until the first review
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
        self._show("changes", text)

    def set_findings(self, findings: list[tuple[str, str]]) -> None:
        """findings: (severity, message) with severity in info|warning|error. The list
        measures only findings it has not measured at its width and draws only visible lines."""
        shown = tuple(findings)
        if self._shown.get("findings") != shown:
            self._shown["findings"] = shown
            self.query_one("#findings", FindingsList).update(shown)

    def set_context(self, renderable) -> None:
        self._show("context", renderable)
