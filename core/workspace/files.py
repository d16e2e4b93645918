"""The workspace: the only code that reads and writes the user's files for edits.

Why one gatekeeper: every refusal (outside the root, `.git/`, binary, too big, denied by
the user's globs) and every guarantee (atomic replace, mode, encoding, newline style
and final newline kept) lives in one place, so no caller can write around them.
Text handed in and out always uses "\\n"; the file's own newline style is restored on
write.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from core.errors import SparkError

TEMP_SUFFIX = ".spark-tmp"
SPARK_DIR = ".spark"
IGNORE_FILE = ".sparkignore"  # gitignore syntax: paths edits may never touch
_SNIFF = 8192
# control bytes that never occur in text files (tab, newlines, form feed, escape do)
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27)) + b"\x7f"


class WorkspaceError(SparkError):
    """A refused path or an unreadable/unwritable file, with the reason."""


@dataclass(frozen=True)
class FileFormat:
    """How a file is stored on disk, so a rewrite keeps it."""

    encoding: str = "utf-8"  # "utf-8", "utf-8-sig" or "latin-1"
    newline: str = "\n"  # "\n", "\r\n" or "\r"
    final_newline: bool = True
    mode: int | None = None  # permission bits, None for a new file


SNAPSHOTS_KEPT = 32  # files whose last read `Workspace.snapshot` keeps


def fingerprint_bytes(data: bytes | None) -> str:
    """A content hash; "absent" for a file that does not exist."""
    if data is None:
        return "absent"
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def decode(data: bytes, rel: str) -> tuple[str, FileFormat]:
    """Bytes to "\\n"-text plus the format to restore; refuses binary content."""
    if b"\0" in data[:_SNIFF]:
        raise WorkspaceError(f"{rel}: binary file (contains NUL bytes); not edited")
    head = data[:_SNIFF]
    if len(head) - len(head.translate(None, _CONTROL)) > max(1, len(head) // 100):
        raise WorkspaceError(f"{rel}: binary file (control bytes); not edited")
    if data.startswith(b"\xef\xbb\xbf"):
        encoding = "utf-8-sig"
    else:
        encoding = "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        encoding = "latin-1"  # round-trips every byte exactly
        text = data.decode(encoding)
    crlf = text.count("\r\n")
    lone_cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    newline = "\r\n" if crlf > lf and crlf >= lone_cr else "\r" if lone_cr > lf else "\n"
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    final = text.endswith("\n") if text else True
    fmt = FileFormat(encoding, newline, final)
    if encode(text, fmt, rel) != data:
        # mixed line ends (or a binary file that decoded as Latin-1): a rewrite would
        # change lines the edit never touched
        raise WorkspaceError(f"{rel}: mixed line endings (or not a text file); not "
                             f"edited, so no untouched line is rewritten")
    return text, fmt


def encode(text: str, fmt: FileFormat, rel: str) -> bytes:
    """"\\n"-text to bytes in the file's own encoding, newline style and final newline."""
    if text:
        if fmt.final_newline and not text.endswith("\n"):
            text += "\n"
        elif not fmt.final_newline and text.endswith("\n"):
            text = text[:-1]
    if fmt.newline != "\n":
        text = text.replace("\n", fmt.newline)
    try:
        return text.encode(fmt.encoding)
    except UnicodeEncodeError as exc:
        raise WorkspaceError(f"{rel}: the new text cannot be stored in the file's "
                             f"{fmt.encoding} encoding ({exc.reason})") from None


class Workspace:
    """A project folder that edits may read and write, with the user's refusal rules."""

    def __init__(self, root: Path, *, max_bytes: int = 1_000_000,
                 deny_globs: Sequence[str] = ()) -> None:
        root = Path(root)
        if not root.is_dir():
            raise WorkspaceError(f"{root}: not a folder")
        self.root: Path = root.resolve()
        self.max_bytes = max_bytes
        self._snapshots: dict[str, tuple[bytes, tuple[str, str, bool]]] = {}  # rel -> last read
        self._snapshots_lock = threading.Lock()  # the rebuild, review and UI threads read files
        own = self.root / IGNORE_FILE
        extra: list[str] = []
        if own.is_file():  # the user's project-level ignore rules for edits
            extra = [ln for ln in own.read_text("utf-8", "replace").splitlines()
                     if ln.strip() and not ln.lstrip().startswith("#")]
        self.deny_globs = tuple(deny_globs) + tuple(extra)
        self._deny = None
        if self.deny_globs:
            import pathspec

            self._deny = pathspec.GitIgnoreSpec.from_lines(self.deny_globs)

    # -- paths ---------------------------------------------------------------------
    def relpath(self, rel: str) -> str:
        """The normalised root-relative POSIX path for rel (after the same checks)."""
        return self.resolve(rel).relative_to(self.root).as_posix()

    def resolve(self, rel: str) -> Path:
        """The real path of rel inside the root; WorkspaceError when it is refused."""
        if not rel or not rel.strip():
            raise WorkspaceError("empty path")
        if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in rel):
            raise WorkspaceError(f"{rel!r}: path contains control or invisible characters; "
                                 f"refused")
        if rel != rel.strip():
            raise WorkspaceError(f"{rel!r}: path starts or ends with spaces; refused")
        if rel.startswith("~"):
            raise WorkspaceError(f"{rel}: '~' (a home folder) is outside the workspace; "
                                 f"refused")
        if rel.endswith(("/", "\\")):
            raise WorkspaceError(f"{rel}: names a folder, not a file")
        p = PurePosixPath(rel.replace("\\", "/"))
        if p.is_absolute() or (len(rel) > 1 and rel[1] == ":"):
            raise WorkspaceError(f"{rel}: absolute paths are refused; use a path "
                                 f"relative to {self.root}")
        if ".." in p.parts:
            raise WorkspaceError(f"{rel}: '..' leads outside the workspace; refused")
        real = self._existing_spelling(Path(*p.parts), rel).resolve()
        try:
            inside = real.relative_to(self.root)
        except ValueError:
            raise WorkspaceError(f"{rel}: a symlink leads outside the workspace "
                                 f"({real}); refused") from None
        parts = inside.parts
        if not parts:
            raise WorkspaceError(f"{rel}: is the workspace root itself")
        if any(part.casefold() == ".git" for part in parts):
            raise WorkspaceError(f"{rel}: inside .git/; refused")
        if inside.as_posix() == IGNORE_FILE:
            raise WorkspaceError(f"{rel}: your rules for what edits may touch; edit it "
                                 f"yourself")
        if parts[0].casefold() == SPARK_DIR:
            raise WorkspaceError(f"{rel}: inside {SPARK_DIR}/ (sparkstation's own "
                                 f"journal); refused")
        if self._deny is not None:
            for candidate in {p.as_posix(), inside.as_posix()}:
                if self._deny.match_file(candidate):
                    raise WorkspaceError(f"{rel}: excluded from edits by the ignore "
                                         f"rules ({', '.join(self.deny_globs)})")
        if real.is_dir():
            raise WorkspaceError(f"{rel}: is a folder, not a file")
        if real.exists() and not real.is_file():
            raise WorkspaceError(f"{rel}: not a regular file (a device, pipe or socket); "
                                 f"refused")
        return real

    def _existing_spelling(self, rel: Path, shown: str) -> Path:
        """root/rel, with each missing part replaced by the existing entry it names in
        another Unicode normal form (a model writes "café" as NFD, the disk has NFC); a
        new name that differs from an existing one only in case is refused, since on a
        case-insensitive disk it would overwrite that file."""
        cur = self.root
        for part in rel.parts:
            nxt = cur / part
            if not os.path.lexists(nxt) and cur.is_dir():
                try:
                    names = os.listdir(cur)
                except OSError:
                    names = []
                nfc = unicodedata.normalize("NFC", part)
                same = [n for n in names if unicodedata.normalize("NFC", n) == nfc]
                if same:
                    nxt = cur / same[0]
                else:
                    folded = nfc.casefold()
                    clash = [n for n in names
                             if unicodedata.normalize("NFC", n).casefold() == folded]
                    if clash:
                        raise WorkspaceError(
                            f"{shown}: differs only in letter case from the existing "
                            f"{(cur / clash[0]).relative_to(self.root).as_posix()}; "
                            f"refused (use the existing name)")
            cur = nxt
        return cur

    # -- reading -----------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        return self.resolve(rel).is_file()

    def read_bytes(self, rel: str) -> bytes | None:
        """Raw bytes, None for a file that does not exist; refuses oversized files."""
        path = self.resolve(rel)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None
        if size > self.max_bytes:
            raise WorkspaceError(f"{rel}: {size:,} bytes is over the {self.max_bytes:,}-byte "
                                 f"limit for edits; refused")
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise WorkspaceError(f"{rel}: cannot read ({exc.strerror})") from None

    def read_text(self, rel: str) -> str:
        """The file as "\\n"-text; "" for a file that does not exist yet."""
        data = self.read_bytes(rel)
        return "" if data is None else decode(data, rel)[0]

    def fingerprint(self, rel: str) -> str:
        """Content hash of the file as it is on disk now ("absent" when missing)."""
        return fingerprint_bytes(self.read_bytes(rel))

    def snapshot(self, rel: str) -> tuple[str, str, bool]:
        """(text, fingerprint, exists) read in one go, so they agree with each other.

        The file is read every time; bytes equal to the last read of the same file reuse
        its text and fingerprint: an answer streaming 40 blocks over 6 files rebuilds its
        proposal ~40 times, and decoding and hashing every 2,500-line file each time held
        the rebuild thread's GIL ~0.25 ms a file."""
        data = self.read_bytes(rel)
        if data is None:
            return "", "absent", False
        with self._snapshots_lock:
            last = self._snapshots.get(rel)
        if last is not None and last[0] == data:
            return last[1]
        snap = (decode(data, rel)[0], fingerprint_bytes(data), True)
        with self._snapshots_lock:
            self._snapshots[rel] = (data, snap)
            while len(self._snapshots) > SNAPSHOTS_KEPT:
                self._snapshots.pop(next(iter(self._snapshots)))
        return snap

    # -- writing -----------------------------------------------------------------------
    def file_format(self, rel: str) -> FileFormat:
        path = self.resolve(rel)
        data = self.read_bytes(rel)
        if data is None:
            return FileFormat()
        fmt = decode(data, rel)[1]
        return FileFormat(fmt.encoding, fmt.newline, fmt.final_newline,
                          stat.S_IMODE(path.stat().st_mode))

    def check_writable(self, rel: str) -> None:
        """Refuse a file the user made read-only: that is a "do not edit" sign, even
        though an atomic rename could replace it."""
        path = self.resolve(rel)
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            return
        if not mode & 0o222:
            raise WorkspaceError(f"{rel}: read-only file; not edited (make it writable "
                                 f"to let edits change it)")

    def write_text(self, rel: str, text: str) -> None:
        """Atomically replace (or create) rel with text, keeping the file's format."""
        self.check_writable(rel)
        fmt = self.file_format(rel)
        data = encode(text, fmt, rel)
        if len(data) > self.max_bytes:
            raise WorkspaceError(f"{rel}: the new content ({len(data):,} bytes) is over "
                                 f"the {self.max_bytes:,}-byte limit; refused")
        self.write_bytes_atomic(self.resolve(rel), data, fmt.mode)

    def delete(self, rel: str) -> None:
        """Remove a file sparkstation created (used by undo of a new file)."""
        path = self.resolve(rel)
        try:
            path.unlink()
        except FileNotFoundError:
            return
        _fsync_dir(path.parent)

    @staticmethod
    def write_bytes_atomic(path: Path, data: bytes, mode: int | None) -> None:
        """Temp file in the same folder, fsync, rename over the target, fsync the folder."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                   suffix=TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if mode is None:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
