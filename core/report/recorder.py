"""Append-only JSONL record of one session under `<root>/.spark/sessions/<id>.jsonl`.

Why JSONL: the report can always be rebuilt from the record, a crash loses at most the
line being written, and other tools can read it. Every string goes through
`core.guards.secrets.redact` before it is written, and the one writer (`_append`) refuses
any path outside `<root>/.spark/`, so recording can never touch the user's files.
Recording is secondary to the user's work: a failed write is counted (`dropped`,
`last_error`) and never raised into the UI.
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets as _random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SparkError
from core.guards.secrets import redact

SPARK_DIR = ".spark"
SESSIONS_DIR = "sessions"
FORMAT_VERSION = 1
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class RecorderError(SparkError, ValueError):
    """A bad session id or a path outside `.spark/`."""


def sessions_dir(root: Path) -> Path:
    return Path(root) / SPARK_DIR / SESSIONS_DIR


def new_session_id() -> str:
    """Sortable by start time, unique enough for one machine."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime()) + "-" + _random.token_hex(3)


def check_session_id(session_id: str) -> str:
    if not _ID_RE.fullmatch(session_id) or ".." in session_id:
        raise RecorderError(f"bad session id {session_id!r}: use letters, digits, . _ -")
    return session_id


@functools.lru_cache(maxsize=4096)
def _redact_cached(text: str) -> str:
    return redact(text)


def _redact(text: str) -> str:
    """redact(), remembered for short strings: an answer's record repeats the same field
    names and kinds hundreds of times (its findings: 760 scans, half of answer_finished)."""
    return _redact_cached(text) if len(text) <= 256 else redact(text)


def redact_value(value: Any) -> Any:
    """``value`` with every string in it (keys too) redacted."""
    if isinstance(value, str):
        return _redact(value)
    if isinstance(value, dict):
        return {_redact(str(k)): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [redact_value(v) for v in value]
    return value


def _append(root: Path, target: Path, line: str) -> None:
    """Append one line (or several, joined by newlines) to ``target``, which must lie
    under ``root/.spark/``."""
    base = (Path(root) / SPARK_DIR).resolve()
    target = Path(target)
    if not target.resolve().is_relative_to(base) or target.is_symlink():
        raise RecorderError(f"refusing to write {target}: outside {base}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


@dataclass
class SessionRecorder:
    """Records one session's events; each `record` call writes one JSON line at once,
    except inside `batch()`, where the calling thread's lines go out with one open."""

    root: Path
    session_id: str | None = None
    clock: Callable[[], float] = time.time  # epoch seconds; tests pass their own
    dropped: int = 0
    last_error: str | None = None

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.session_id = check_session_id(new_session_id() if self.session_id is None
                                           else self.session_id)
        self.path = sessions_dir(self.root) / f"{self.session_id}.jsonl"
        self._lock = threading.Lock()
        self._local = threading.local()  # .lines: the calling thread's open batch, if any
        if not self.path.exists():
            self.record("session", version=FORMAT_VERSION, id=self.session_id,
                        root=str(self.root))

    def record(self, event_type: str, at: float | None = None, **fields: Any) -> dict[str, Any]:
        """Write one event ``{"t": epoch seconds, "type": event_type, ...fields}``, redacted."""
        event = {"t": self.clock() if at is None else at, "type": event_type}
        event.update(redact_value(fields))
        line = json.dumps(event, ensure_ascii=False, default=str)
        pending: list[str] | None = getattr(self._local, "lines", None)
        if pending is not None:
            pending.append(line)
        else:
            self._write([line])
        return event

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Events this thread records inside are written together on exit: one open,
        path check and append for many events (an answer's findings, its hunks shown),
        where one each cost 1-8 ms under load. Other threads write as usual; a crash
        loses the batch; nested batches join the outer one."""
        if getattr(self._local, "lines", None) is not None:
            yield
            return
        lines: list[str] = []
        self._local.lines = lines
        try:
            yield
        finally:
            self._local.lines = None
            if lines:
                self._write(lines)

    def _write(self, lines: list[str]) -> None:
        with self._lock:
            try:
                _append(self.root, self.path, "\n".join(lines))
            except (OSError, RecorderError) as exc:
                self.dropped += len(lines)
                self.last_error = str(exc)

    # typed helpers: the names and fields the report reads -----------------------------
    def prompt(self, request_id: str, text: str, profile: str, *, kind: str = "chat",
               at: float | None = None) -> dict[str, Any]:
        """A request sent; ``kind``: chat, variation, batch, race."""
        return self.record("prompt", at, request_id=request_id, text=text, profile=profile,
                           kind=kind)

    def answer_done(self, request_id: str, *, profile: str, tokens: int, elapsed_s: float,
                    ttft_ms: float | None = None, chip: str | None = None,
                    model: str | None = None, prompt_tokens: int | None = None,
                    reason: str = "stop", at: float | None = None) -> dict[str, Any]:
        """An answer finished streaming; ``elapsed_s`` from request sent to done."""
        return self.record("answer_done", at, request_id=request_id, profile=profile,
                           tokens=tokens, elapsed_s=elapsed_s, ttft_ms=ttft_ms, chip=chip,
                           model=model, prompt_tokens=prompt_tokens, reason=reason)

    def hunk_shown(self, hunk_id: str, *, request_id: str, path: str, lines: int,
                   at: float | None = None) -> dict[str, Any]:
        return self.record("hunk_shown", at, hunk_id=hunk_id, request_id=request_id,
                           path=path, lines=lines)

    def hunk_decided(self, hunk_id: str, *, accepted: bool, request_id: str | None = None,
                     dwell_s: float | None = None, unread: bool = False,
                     reason: str | None = None, added: int = 0, removed: int = 0,
                     at: float | None = None) -> dict[str, Any]:
        """A rejection when the key is pressed; an accept when its lines are written (so the
        record, like the screen, says accepted only for what is on disk)."""
        return self.record("hunk_decided", at, hunk_id=hunk_id, request_id=request_id,
                           accepted=accepted, dwell_s=dwell_s, unread=unread, reason=reason,
                           added=added, removed=removed)

    def hunk_reverted(self, hunk_id: str, *, request_id: str, reason: str = "undo",
                      at: float | None = None) -> dict[str, Any]:
        """An accepted hunk's lines left the disk again (undo): it no longer counts as accepted."""
        return self.record("hunk_reverted", at, hunk_id=hunk_id, request_id=request_id,
                           reason=reason)

    def review(self, request_id: str, *, slop_findings: int, added_lines: int,
               at: float | None = None) -> dict[str, Any]:
        """One answer's review: the status bar's slop figure and the report's come from these."""
        return self.record("review", at, request_id=request_id, slop_findings=slop_findings,
                           added_lines=added_lines)

    def finding(self, kind: str, *, path: str | None = None, detail: str = "",
                score: float | None = None, at: float | None = None) -> dict[str, Any]:
        """A guard or detector fired: ``kind`` is duplicate, slop, secret, sensitive or
        growth (``score``: slop points, growth percent)."""
        return self.record("finding", at, kind=kind, path=path, detail=detail, score=score)

    def fresh_context(self, reason: str = "user", at: float | None = None) -> dict[str, Any]:
        return self.record("fresh_context", at, reason=reason)


def load_events(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The events of one session file and the number of unreadable lines skipped (a crash
    mid-write leaves at most one)."""
    events, bad = [], 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(event, dict) and "type" in event:
                events.append(event)
            else:
                bad += 1
    return events, bad


def list_sessions(root: Path) -> list[Path]:
    """Session files, oldest first (by the time in their name, then mtime)."""
    folder = sessions_dir(root)
    if not folder.is_dir():
        return []
    return sorted(folder.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name))


def find_session(root: Path, session: str | None) -> Path:
    """``session``: None (latest), an id, or a path to a .jsonl file."""
    if session is None:
        found = list_sessions(root)
        if not found:
            raise RecorderError(f"no recorded sessions under {sessions_dir(root)}")
        # the latest session that sent something: a reopen that sent nothing is not "the last session"
        for path in reversed(found):
            if any(e.get("type") == "prompt" for e in load_events(path)[0]):
                return path
        return found[-1]
    as_path = Path(session)
    if as_path.suffix == ".jsonl" and as_path.is_file():
        return as_path
    path = sessions_dir(root) / f"{check_session_id(session)}.jsonl"
    if not path.is_file():
        raise RecorderError(f"no session {session!r} under {sessions_dir(root)}")
    return path

