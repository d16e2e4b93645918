"""Write-ahead journal of accepted changes under `.spark/journal/`.

Why: every accepted change is recorded (exact bytes before and after, file mode)
*before* any file is touched, so a crash mid-write loses nothing, and undo works the
same with or without git.  Entries are small JSON files, one per change, written
atomically; their names sort in the order the changes were made.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.workspace.files import SPARK_DIR, Workspace, WorkspaceError

STATES = ("pending", "applied", "undo-pending", "undone", "rolled-back")
KEEP = 200  # finished entries kept; older ones are pruned
_held = threading.local()


@dataclass
class FileRecord:
    """One file of a change: exact bytes before (None = did not exist) and after."""

    path: str
    before: bytes | None
    after: bytes | None  # None = the change deletes the file (undo of a new file)
    mode: int | None = None

    def to_json(self) -> dict:
        return {"path": self.path, "before": _enc(self.before), "after": _enc(self.after),
                "mode": self.mode}

    @classmethod
    def from_json(cls, d: dict) -> FileRecord:
        return cls(d["path"], _dec(d["before"]), _dec(d["after"]), d.get("mode"))


@dataclass
class JournalEntry:
    """One accepted change (or the undo of one), and how far it got."""

    id: str
    seq: int
    time: float
    message: str
    files: list[FileRecord]
    state: str = "pending"
    commit: str | None = None  # git commit made for it, if any
    undoes: str | None = None  # id of the change this entry reverts
    hunks: list[str] = field(default_factory=list)  # accepted hunk ids, for the record

    def to_json(self) -> dict:
        d = asdict(self)
        d["files"] = [f.to_json() for f in self.files]
        return d

    @classmethod
    def from_json(cls, d: dict) -> JournalEntry:
        d = dict(d)
        d["files"] = [FileRecord.from_json(f) for f in d["files"]]
        return cls(**d)


def _enc(data: bytes | None) -> dict | None:
    if data is None:
        return None
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def _dec(d: dict | None) -> bytes | None:
    if d is None:
        return None
    if "text" in d:
        return d["text"].encode("utf-8")
    return base64.b64decode(d["b64"])


class Journal:
    """The `.spark/journal/` folder of one workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir: Path = ws.root / SPARK_DIR / "journal"

    def _ensure(self) -> None:
        spark = self.ws.root / SPARK_DIR
        if spark.is_symlink() or (spark.exists() and not spark.is_dir()):
            raise WorkspaceError(f"{spark} is a symlink or not a folder; the journal is "
                                 f"not written through it (remove it to continue)")
        self.dir.mkdir(parents=True, exist_ok=True)
        ignore = spark / ".gitignore"
        if not ignore.exists():  # keep the journal out of the user's git status
            ignore.write_text("*\n")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock on the journal (the app and `spark undo` in another terminal
        must not interleave); re-entrant within one thread."""
        held = getattr(_held, "roots", None)
        if held is None:
            held = _held.roots = {}
        key = str(self.ws.root)
        if held.get(key):
            held[key] += 1
            try:
                yield
            finally:
                held[key] -= 1
            return
        self._ensure()
        fd = os.open(self.dir.parent / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            except ImportError:  # pragma: no cover - no flock on this platform
                pass
            held[key] = 1
            try:
                yield
            finally:
                held[key] = 0
        finally:
            os.close(fd)

    def prune(self, keep: int = KEEP) -> None:
        """Drop the oldest finished entries beyond `keep` (pending ones are never dropped)."""
        if not self.dir.is_dir():
            return
        names = sorted(self.dir.glob("*.json"))
        for p in names[:max(0, len(names) - keep)]:
            try:
                state = json.loads(p.read_text("utf-8")).get("state")
            except (OSError, ValueError):
                continue
            if state in ("applied", "undone", "rolled-back"):
                p.unlink(missing_ok=True)

    def _path(self, entry: JournalEntry) -> Path:
        return self.dir / f"{entry.seq:08d}-{entry.id}.json"

    def entries(self) -> list[JournalEntry]:
        """All entries, oldest first; unreadable ones are reported, never skipped."""
        if not self.dir.is_dir():
            return []
        out = []
        for p in sorted(self.dir.glob("*.json")):
            try:
                out.append(JournalEntry.from_json(json.loads(p.read_text("utf-8"))))
            except (ValueError, KeyError, TypeError) as exc:
                raise WorkspaceError(f"journal entry {p} is unreadable ({exc}); move it "
                                     f"aside to continue") from None
        return out

    def begin(self, message: str, files: list[FileRecord], *, undoes: str | None = None,
              hunks: list[str] | None = None) -> JournalEntry:
        """Durably record a change before any of its files is written."""
        self._ensure()
        last = self.entries()
        seq = (last[-1].seq + 1) if last else 1
        entry = JournalEntry(uuid.uuid4().hex[:12], seq, time.time(), message, files,
                             "undo-pending" if undoes else "pending", None, undoes,
                             list(hunks or []))
        self._save(entry)
        return entry

    def mark(self, entry: JournalEntry, state: str, *, commit: str | None = None) -> None:
        if state not in STATES:
            raise ValueError(state)
        entry.state = state
        if commit is not None:
            entry.commit = commit
        self._save(entry)

    def _save(self, entry: JournalEntry) -> None:
        data = json.dumps(entry.to_json(), ensure_ascii=False).encode("utf-8")
        Workspace.write_bytes_atomic(self._path(entry), data, 0o600)

    def last_undoable(self) -> JournalEntry | None:
        """The most recent applied change that has not been undone."""
        entries = self.entries()
        undone = {e.undoes for e in entries if e.undoes and e.state == "applied"}
        for e in reversed(entries):
            if e.undoes is None and e.state == "applied" and e.id not in undone:
                return e
        return None


def clean_temp_files(ws: Workspace, paths: list[str]) -> None:
    """Remove temp files an interrupted atomic write may have left beside these files."""
    from core.workspace.files import TEMP_SUFFIX

    for rel in paths:
        try:
            folder = ws.resolve(rel).parent
        except WorkspaceError:
            continue
        if not folder.is_dir():
            continue
        name = Path(rel).name
        for p in folder.glob(f".{name}.*{TEMP_SUFFIX}"):
            try:
                os.unlink(p)
            except OSError:
                pass
