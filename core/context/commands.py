"""Slash commands about the context (/add /read /drop /files /clear /context).

Parsed and run here, not in the TUI, so the app only routes input lines and the same
behaviour is testable without a screen. A line that is not one of these commands parses
to None, so the app can offer it to its own commands or send it as a prompt.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from core.context.files import ContextError
from core.context.prompt import ChatContext, ContextReport

COMMANDS: dict[str, str] = {
    "add": "/add PATH... (globs ok; --read for reference only): put files in the chat",
    "read": "/read PATH...: put files in the chat as read-only reference",
    "drop": "/drop [PATH...]: take files out of the chat (all of them with no path)",
    "files": "/files: list the files in the chat with their token counts",
    "clear": "/clear: fresh context; forget the conversation, keep the files",
    "context": "/context [PROMPT]: what the next request would send, section by section",
}


@dataclass(frozen=True)
class Command:
    """A parsed slash command: its name and arguments."""

    name: str
    args: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CommandResult:
    """What to show the user; `changed` is True when the context changed."""

    ok: bool
    text: str
    changed: bool = False
    report: ContextReport | None = None


def parse_command(line: str) -> Command | None:
    """The context command on this input line, or None when it is not one."""
    stripped = line.strip()
    if not stripped.startswith("/"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    name = head.lower()
    if name not in COMMANDS:
        return None
    if name == "context":
        return Command(name, [rest.strip()] if rest.strip() else [])
    try:
        args = shlex.split(rest)
    except ValueError:  # an unbalanced quote: fall back to plain words
        args = rest.split()
    return Command(name, args)


def run_command(ctx: ChatContext, command: Command) -> CommandResult:
    """Execute a context command; user errors come back as ok=False with the reason."""
    try:
        return _HANDLERS[command.name](ctx, command.args)
    except ContextError as exc:
        return CommandResult(False, str(exc))


def _add(ctx: ChatContext, args: list[str], read_only: bool = False) -> CommandResult:
    paths = [a for a in args if a not in ("--read", "-r", "--read-only")]
    read_only = read_only or len(paths) != len(args)
    if not paths:
        return CommandResult(False, "usage: " + COMMANDS["read" if read_only else "add"])
    added = ctx.add(paths, read_only=read_only)
    kind = "as read-only reference" if read_only else "to the chat"
    return CommandResult(True, f"added {kind}: {', '.join(added)}", changed=True)


def _read(ctx: ChatContext, args: list[str]) -> CommandResult:
    return _add(ctx, args, read_only=True)


def _drop(ctx: ChatContext, args: list[str]) -> CommandResult:
    dropped = ctx.drop(args) if args else ctx.drop_all()
    if not dropped:
        return CommandResult(True, "no files in the chat")
    return CommandResult(True, f"dropped: {', '.join(dropped)}", changed=True)


def _files(ctx: ChatContext, args: list[str]) -> CommandResult:
    files = ctx.files
    if not files:
        return CommandResult(True, "no files in the chat (/add PATH to add one)")
    width = max(len(f.path) for f in files)
    lines = [f"{f.path:<{width}}  {f.tokens:>7,} tokens" + ("  read-only" if f.read_only else "")
             for f in files]
    lines.append(f"{'total':<{width}}  {sum(f.tokens for f in files):>7,} tokens")
    return CommandResult(True, "\n".join(lines))


def _clear(ctx: ChatContext, args: list[str]) -> CommandResult:
    turns = len(ctx.history)
    ctx.clear()
    kept = len(ctx.files)
    return CommandResult(True, f"fresh context: {turns} turn(s) forgotten, {kept} file(s) kept",
                         changed=True)


def _context(ctx: ChatContext, args: list[str]) -> CommandResult:
    report = ctx.preview(args[0] if args else "")
    return CommandResult(True, format_report(report), report=report)


_HANDLERS = {"add": _add, "read": _read, "drop": _drop, "files": _files, "clear": _clear,
             "context": _context}


def describe_item(item: dict) -> str:
    """One section item in words: a file's path, a turn's number, else its counts as "N key"."""
    if item.get("path"):
        return str(item["path"]) + (" (missing)" if item.get("missing") else "")
    if "turn" in item:
        return f"turn {item['turn']}"
    return ", ".join(_count(key, value) if isinstance(value, int) else f"{key}: {value}"
                     for key, value in item.items())


def _count(noun: str, n: int) -> str:
    return f"{n:,} {noun[:-1] if n == 1 and noun.endswith('s') else noun}"


def format_report(report: ContextReport) -> str:
    """A plain-text table of the sections, for /context and `spark context`."""
    lines = [f"{'section':<16}{'tokens':>9}  contents"]
    for s in report.sections:
        what = ", ".join(describe_item(item) for item in s.items[:6])
        if len(s.items) > 6:
            what += f", ... ({len(s.items)} in all)"
        lines.append(f"{s.name:<16}{s.tokens:>9,}  {what or s.note}".rstrip())
    lines.append(f"{'total':<16}{report.total:>9,}  of {report.window:,} "
                 f"({report.fraction:.0%} of the window; {report.reserve:,} kept for the answer)")
    if report.trimmed:
        lines.append("gave way: " + "; ".join(report.trimmed))
    if not report.fits:
        lines.append("does not fit: drop files from the chat")
    return "\n".join(lines)
