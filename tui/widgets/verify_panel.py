"""The verify panel: what the checks and the project's tests say about the answer on
screen, for the whole answer and for the hunks accepted so far.

It only draws `core.verify.verifier.ScopeReport`s; the app calls `show` whenever the
verifier says something changed (throttled there), and `hunk_badge` for the diff view.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from core.verify.checks import Problem
from core.verify.verifier import ScopeReport, TestState

MAX_LISTED = 6

_STATE_WORDS: dict[TestState, tuple[str, str]] = {
    TestState.OFF: ("off", "dim"),
    TestState.WAITING: ("waiting for the answer", "dim"),
    TestState.RUNNING: ("running", "yellow"),
    TestState.PASSED: ("pass", "green"),
    TestState.FAILED: ("FAIL", "bold red"),
    TestState.TIMEOUT: ("timed out", "bold red"),
    TestState.CANCELLED: ("cancelled", "dim"),
    TestState.SKIPPED: ("nothing to run", "dim"),
    TestState.ERROR: ("could not run", "red"),
}


def hunk_badge(report: ScopeReport | None, hunk_id: str) -> str:
    """"[F821]" / "[syntax]" for a hunk with new problems, "" otherwise."""
    if report is None:
        return ""
    codes: list[str] = []
    for p in report.badges.get(hunk_id, []):
        if p.code not in codes:
            codes.append(p.code)
    return " ".join(f"[{c}]" for c in codes[:3])


def _problems(text: Text, problems: list[Problem]) -> None:
    for p in problems[:MAX_LISTED]:
        text.append("  ✗ ", style="red")
        text.append(f"{p.path}:{p.line} ", style="bold")
        text.append(f"{p.code} {p.message}\n")
    if len(problems) > MAX_LISTED:
        text.append(f"  … {len(problems) - MAX_LISTED} more\n", style="dim")


def render_scope(report: ScopeReport, title: str) -> Text:
    text = Text()
    text.append(f"{title}\n", style="bold")
    text.append("checks ", style="dim")
    if report.problems is None:
        text.append("…\n", style="dim")
    elif not report.problems:
        text.append("✓ clean", style="green")
        text.append(f"  {report.checks_ms:.0f} ms\n", style="dim")
    else:
        text.append(f"✗ {len(report.problems)} new problem(s)\n", style="bold red")
        _problems(text, report.problems)
    t = report.tests
    word, style = _STATE_WORDS[t.state]
    text.append("tests  ", style="dim")
    if t.state is TestState.PASSED:
        text.append("✓ ", style=style)
    elif t.state in (TestState.FAILED, TestState.TIMEOUT):
        text.append("✗ ", style=style)
    text.append(word, style=style)
    if t.state is TestState.RUNNING:
        text.append(f"  {t.done} done", style="dim")
        if t.failed:
            text.append(f", {t.failed} failed", style="red")
    elif t.duration_s:
        text.append(f"  {t.done} test(s), {t.duration_s:.1f} s", style="dim")
    text.append("\n")
    if t.command and t.state is not TestState.OFF:
        text.append(f"  {t.command}\n", style="dim")
    if t.selection and t.state in (TestState.RUNNING, TestState.SKIPPED):
        text.append(f"  {t.selection}\n", style="dim")
    if t.state is TestState.RUNNING and t.last_line and not t.new_failures:
        text.append(f"  {t.last_line[:60]}\n", style="dim")
    for f in t.new_failures[:MAX_LISTED]:
        text.append("  ✗ ", style="red")
        text.append(f"{f.id}\n")
    if len(t.new_failures) > MAX_LISTED:
        text.append(f"  … {len(t.new_failures) - MAX_LISTED} more\n", style="dim")
    if t.note:
        text.append(f"  {t.note}\n", style="dim")
    return text


def render_verify(answer: ScopeReport | None, accepted: ScopeReport | None = None, *,
                  fix_key: str = "f", fix_note: str = "") -> Text:
    """The whole panel as one Text (tests read it without a screen)."""
    if answer is None:
        return Text("no answer to verify yet", style="dim")
    text = render_scope(answer, "Whole answer")
    if accepted is not None and accepted.hunks and accepted.hunks != answer.hunks:
        text.append("\n")
        text.append_text(render_scope(accepted, f"Accepted ({len(accepted.hunks)} hunk(s))"))
    if answer.broken or (accepted is not None and accepted.broken):
        text.append("\n")
        text.append(f"{fix_key}", style="bold reverse")
        text.append(" send the failures back to the model\n")
    if fix_note:
        text.append(f"{fix_note}\n", style="cyan")
    return text


class VerifyPanel(Static):
    """Checks and tests of the answer on screen; see the module docstring."""

    DEFAULT_CSS = """
    VerifyPanel { height: auto; max-height: 18; padding: 0 1; border: round $panel; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(Text("no answer to verify yet", style="dim"), **kwargs)  # type: ignore[arg-type]
        self.answer: ScopeReport | None = None
        self.accepted: ScopeReport | None = None
        self.border_title = "Verify"
        self.display = False  # takes no room until there is an answer to verify

    def show(self, answer: ScopeReport | None, accepted: ScopeReport | None = None, *,
             fix_key: str = "f", fix_note: str = "") -> None:
        self.answer, self.accepted = answer, accepted
        self.display = answer is not None
        text = render_verify(answer, accepted, fix_key=fix_key, fix_note=fix_note)
        shown = self.content
        if not (isinstance(shown, Text) and (shown.plain, shown.spans, shown.style) ==
                (text.plain, text.spans, text.style)):  # the same again costs no layout pass
            self.update(text)
