"""Turns hunks and the block being written into highlighted Rich text (presentation only)."""

from __future__ import annotations

from functools import lru_cache

from rich.syntax import Syntax
from rich.text import Text

ADD_BG = "on #12361f"
DEL_BG = "on #3d1418"
STATE_STYLE = {
    "pending": "bold yellow",
    "proposed": "bold cyan",
    "accepted": "bold green",
    "rejected": "bold red",
    "stale": "bold magenta",
}


@lru_cache(maxsize=256)
def _lexer_for(path: str) -> str:
    lexer = Syntax.guess_lexer(path, "")
    return lexer or "text"


def highlight_lines(path: str, lines: list[str], theme: str = "monokai") -> list[Text]:
    """Syntax-highlight `lines` as the file's language; one Text per line."""
    if not lines:
        return []
    code = "\n".join(line.rstrip("\n") for line in lines)
    highlighted = Syntax(code, _lexer_for(path), theme=theme).highlight(code)
    highlighted.rstrip()
    parts = highlighted.split("\n", allow_blank=True)
    while len(parts) < len(lines):
        parts.append(Text(""))
    return parts[: len(lines)]


def diff_lines(path: str, old: list[str], new: list[str], *, start: int | None = None) -> Text:
    """A removed/added block with gutters and tinted backgrounds."""
    out = Text()
    for prefix, bg, lines in (("-", DEL_BG, old), ("+", ADD_BG, new)):
        for index, line in enumerate(highlight_lines(path, lines)):
            number = "" if start is None or prefix == "+" else str(start + index)
            out.append(f"{number:>5} {prefix} ", style=f"dim {bg}")
            line.stylize(bg)
            out.append_text(line)
            out.append("\n")
    return out


def hunk_header(path: str, state: str, index: int, total: int, old_start: int, extra: str = "") -> Text:
    header = Text()
    header.append(f" {index}/{total} ", style="reverse")
    header.append(f" {path}", style="bold")
    header.append(f"  @@ line {old_start}  ", style="dim")
    header.append(f"[{state}]", style=STATE_STYLE.get(state, "bold"))
    if extra:
        header.append(f"  {extra}")
    return header


def render_hunk(hunk, state: str, index: int, total: int, badges: str = "") -> Text:
    text = hunk_header(hunk.path, state, index, total, hunk.old_start, badges)
    text.append("\n")
    text.append_text(diff_lines(hunk.path, list(hunk.old_lines), list(hunk.new_lines), start=hunk.old_start))
    return text


def render_pending(pending) -> Text:
    """The edit block the model is writing right now, shown live as a diff."""
    text = Text()
    text.append(" writing ", style="reverse yellow")
    text.append(f" {pending.path or '(path…)'}", style="bold")
    text.append(f"  [{pending.stage}]\n", style="yellow")
    path = pending.path or ""
    old = pending.search.splitlines() if pending.search else []
    new = pending.replace.splitlines() if pending.replace else []
    if pending.stage == "search":
        text.append_text(diff_lines(path, old, []))
    else:
        text.append_text(diff_lines(path, old, new))
    return text
