"""The session report in the app: what `spark report` prints, for the session being worked.

It reads the JSONL record under `.spark/sessions/` (the latest session unless one is named)
and shows prompts and answers, hunks accepted and rejected, unread accepts, tokens, time
waiting vs reviewing with the terminal plot, what the Base profile would have made the user
wait, and what the guards caught. The record is the single source, so the screen and the
command always agree; `r` re-reads it (the session is still being written).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from core.report.report import SessionReport

LABEL_COLUMNS = 14     # the timeline's row labels and borders


def load_report(root: Path, session: str | None = None) -> tuple[SessionReport, Path]:
    """Build the report of ``session`` (default: the latest) from its record. Raises
    `core.report.recorder.RecorderError` or OSError when there is none to read."""
    from core.report.cli import _base_for
    from core.report.recorder import find_session, load_events
    from core.report.report import build_report

    path = find_session(root, session)
    events, bad = load_events(path)
    done = [e for e in events if e.get("type") == "answer_done"]
    prompt_tokens = sum(int(e.get("prompt_tokens") or 0) for e in done)
    base = _base_for(root, prompt_tokens // len(done) if done and prompt_tokens else 1024)
    return build_report(events, base, skipped_lines=bad), path


class ReportScreen(ModalScreen[None]):
    """Push with `app.push_screen(ReportScreen(root))`; `escape` closes, `r` reloads."""

    DEFAULT_CSS = """
    ReportScreen { layout: vertical; background: $background; }
    ReportScreen > #report-title { height: 1; padding: 0 1; text-style: bold; }
    ReportScreen > VerticalScroll { height: 1fr; padding: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Reload"),
        Binding("escape", "close", "Close"),
    ]

    def __init__(self, root: Path, session: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.root = Path(root)
        self.session = session
        self.report: SessionReport | None = None
        self.path: Path | None = None
        self.error: str | None = None
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Static("session report", id="report-title")
        with VerticalScroll():
            yield Static(Text("reading the session record...", style="dim"), id="report-body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
        self.action_reload()

    def action_reload(self) -> None:
        self.run_worker(self._load(), group="report", exclusive=True)

    async def _load(self) -> None:
        from core.report.recorder import RecorderError

        try:
            self.report, self.path = await asyncio.to_thread(load_report, self.root, self.session)
            self.error = None
        except (RecorderError, OSError) as exc:
            self.report, self.error = None, str(exc)
        self._render_report()
        self.loaded = True

    def on_resize(self) -> None:
        if self.loaded:
            self._render_report()

    def _render_report(self) -> None:
        from core.report.plot import format_text

        title = self.query_one("#report-title", Static)
        body = self.query_one("#report-body", Static)
        if self.report is None:
            title.update("session report")
            body.update(Text(f"no report: {self.error}", style="yellow"))
            return
        path = self.path
        assert path is not None  # set whenever there is no error
        where = path.relative_to(self.root) if path.is_relative_to(self.root) else path
        title.update(Text.assemble(("session report  ", "bold"), (str(where), "dim")))
        width = max(20, self.size.width - LABEL_COLUMNS - 2)
        body.update(style_report(format_text(self.report, width)))

    def action_close(self) -> None:
        self.dismiss(None)


def style_report(plain: str) -> Text:
    """The plain report with a little colour: headings bold, the plot's two rows tinted."""
    text = Text()
    for line in plain.splitlines():
        style = ""
        if line.startswith("waiting"):
            style = "yellow"
        elif line.startswith("reviewing"):
            style = "cyan"
        elif line.startswith(("session ", "answers:")):
            style = "bold"
        elif line.startswith("caught"):
            style = "magenta"
        text.append(line + "\n", style=style)
    text.rstrip()
    return text
