"""The tree's Python files, listed again only where a folder changed.

The duplicate index needs the tree's .py files (`iter_python_files`: a walk that applies
the root .gitignore to every path: ~70 ms of CPU on 20,000 files idle, 0.15-0.3 s under
load, on the path of a second launch's "duplicates ready"). A folder's mtime changes
whenever an entry is added, removed or renamed in it, so the listing of a walk is kept
beside the cache with the mtime of every folder it walked (taken before that folder was
listed) and the root .gitignore's hash; while every folder still has its mtime, the
listing is the walk's (git's untracked cache rests on the same fact). A folder changed
less than RACY_NS before the walk may change again within its clock tick unseen: such a
listing is not kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from core.detectors.duplicates import EXCLUDED_DIRS, iter_python_files

VERSION = 1  # of the walk's rules (iter_python_files, TreeFilter): a change voids the records
RACY_NS = 2_000_000_000


def _rules(root: Path) -> str:
    """What else decides the listing: the root .gitignore's bytes, the excluded folders."""
    try:
        ignore = (root / ".gitignore").read_bytes()
    except OSError:
        ignore = b"\0none"
    digest = hashlib.blake2b(ignore, digest_size=16).hexdigest()
    return f"{VERSION}:{digest}:{','.join(sorted(EXCLUDED_DIRS))}"


def python_files(root: Path, record: Path | None) -> list[str]:
    """`list(iter_python_files(root))`, from `record` when no folder changed since it was
    kept; else walked (and kept in `record` when every folder had settled)."""
    root = Path(root)
    if record is None:
        return list(iter_python_files(root))
    rules = _rules(root)
    kept = _read(record, root, rules)
    if kept is not None:
        return kept
    times: dict[str, int] = {}
    files = list(iter_python_files(root, times))
    settled = time.time_ns() - RACY_NS
    if times and all(0 <= t < settled for t in times.values()):
        _write(record, {"root": str(root), "rules": rules, "dirs": times, "files": files})
    return files


def _read(record: Path, root: Path, rules: str) -> list[str] | None:
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("root") != str(root) or data.get("rules") != rules:
        return None
    dirs, files = data.get("dirs"), data.get("files")
    if not isinstance(dirs, dict) or not isinstance(files, list):
        return None
    top = os.fspath(root)
    for rel, mtime in dirs.items():
        try:
            if os.stat(os.path.join(top, rel) if rel else top).st_mtime_ns != mtime:
                return None
        except (OSError, TypeError):
            return None
    return [f for f in files if isinstance(f, str)]


def _write(record: Path, data: dict) -> None:
    tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, record)
    except OSError:
        tmp.unlink(missing_ok=True)
