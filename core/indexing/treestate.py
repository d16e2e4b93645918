"""What the tree holds now, and a key that changes whenever a mapped file's content does.

A second launch must tell within a fraction of a second whether the cached repo map is
still the tree's. Stat-ing 20,000 files from Python costs 0.3 s on an idle machine and
1.4 s on a loaded one. Git already keeps every tracked file's stat data and content id in
its index, and `git status` checks the work tree against it in C (entries whose mtime is
too close to the index's own are compared by content: git's racy-clean rule). So in a
git work tree three git commands, run side by side, give both the listing and the key:

* `git ls-files -s -v`: every tracked path with its blob id (and whether git was told to
  stop looking at it: assume-unchanged, skip-worktree);
* `git status --porcelain=v2 --untracked-files=all`: which tracked files differ from the
  index, and which untracked files exist (the user's ignore rules applied);
* `git rev-parse`/`check-ignore`: that git answers for this folder at all.

A clean tracked file counts in the key by the blob id git holds for it, a changed or
untracked one by the blob id of its bytes, computed here: the key depends on the mapped
files' contents only (committing an edit does not change it, nor does `touch`). Outside
git, or when git fails, the tree is listed as `core.context.tree.list_files` does and
each mapped file counts by (mtime, size). Both ways give the same listing as `list_files`
(tests compare them after random edits).
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.context.tags import language_for
from core.context.tree import MAX_FILES, list_files

KEY_SCHEME = b"tree-state-1"
GIT_TIMEOUT_S = 60
MAX_HASHED = 2_000  # changed or untracked mapped files read and hashed; beyond, (mtime, size)


@dataclass(frozen=True)
class TreeState:
    """The tree's files (sorted, as `list_files` gives them) and the mapped files' key."""

    files: list[str]
    key: bytes
    via: str  # "git" or "stat": how the files were checked
    tokens: dict[str, bytes] = field(default_factory=dict, repr=False)  # mapped file -> its part of the key

    def changed_since(self, other: TreeState) -> list[str]:
        """Mapped files whose content (or presence) differs between two states."""
        a, b = self.tokens, other.tokens
        return sorted({p for p in a.keys() | b.keys() if a.get(p) != b.get(p)})


def tree_state(root: Path, is_mapped: Callable[[str], object] = language_for) -> TreeState:
    """The tree's state now: from git where git answers, else by listing and stat."""
    root = Path(root)
    state = _git_state(root, is_mapped)
    return state if state is not None else _stat_state(root, is_mapped)


class PendingState:
    """`tree_state` started in the background: the git commands run while the caller does
    something else (the app reads the cached map meanwhile); `result()` collects them."""

    def __init__(self, root: Path, is_mapped: Callable[[str], object] = language_for) -> None:
        self.root = Path(root)
        self.is_mapped = is_mapped
        self._procs = _start_git(self.root)

    def result(self) -> TreeState:
        state = _git_finish(self.root, self._procs, self.is_mapped) if self._procs else None
        return state if state is not None else _stat_state(self.root, self.is_mapped)


def _key(tokens: dict[str, bytes]) -> bytes:
    parts = [KEY_SCHEME]
    for path in sorted(tokens):
        parts.append(path.encode("utf-8", "surrogateescape") + b"\0" + tokens[path])
    return hashlib.blake2b(b"\n".join(parts), digest_size=16).digest()


def _blob_token(full: str) -> bytes | None:
    """The git blob id of a regular file's bytes (symlinks followed), None when it is not
    one: a changed or untracked file counts by its content, exactly as it will once it is
    committed, so committing edits does not change the key."""
    try:
        with open(full, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            data = fh.read()
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest().encode()


def _stat_token(full: str) -> bytes | None:
    """(mtime, size) of a regular file (symlinks followed), None when it is not one."""
    try:
        st = os.stat(full)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return b"S%d:%d" % (st.st_mtime_ns, st.st_size)


def _stat_state(root: Path, is_mapped: Callable[[str], object]) -> TreeState:
    files = list_files(root)
    base = str(root)
    tokens: dict[str, bytes] = {}
    for rel in files:
        if is_mapped(rel):
            token = _stat_token(os.path.join(base, rel))
            if token is not None:
                tokens[rel] = token
    return TreeState(files, _key(tokens), "stat", tokens)


_GitProcs = dict[str, subprocess.Popen]


def _start_git(root: Path) -> _GitProcs | None:
    commands = {
        "where": ["rev-parse", "--is-inside-work-tree", "--show-prefix"],
        "ignored": ["check-ignore", "-q", "--no-index", "."],
        "index": ["ls-files", "-z", "-s", "-v"],
        "status": ["--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all",
                   "--ignore-submodules=all", "--", "."],
    }
    procs: _GitProcs = {}
    try:
        for name, args in commands.items():
            procs[name] = subprocess.Popen(["git", "-C", str(root), *args], stdin=subprocess.DEVNULL,
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:  # no git: the caller lists and stats
        for proc in procs.values():
            proc.kill()
            proc.wait()
        return None
    return procs


def _git_state(root: Path, is_mapped: Callable[[str], object]) -> TreeState | None:
    procs = _start_git(root)
    return _git_finish(root, procs, is_mapped) if procs else None


def _git_finish(root: Path, procs: _GitProcs, is_mapped: Callable[[str], object]) -> TreeState | None:
    outputs: dict[str, bytes] = {}
    codes: dict[str, int] = {}
    for name, proc in procs.items():
        try:
            out, _ = proc.communicate(timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            for other in procs.values():
                other.kill()
                other.communicate()
            return None
        outputs[name], codes[name] = out, proc.returncode
    where = outputs["where"].decode("utf-8", "surrogateescape").split("\n")
    # not a work tree, or a folder the enclosing repository ignores: list it as a plain folder
    if codes["where"] != 0 or where[0].strip() != "true" or codes["ignored"] == 0:
        return None
    if codes["index"] != 0 or codes["status"] != 0:
        return None
    prefix = where[1].strip() if len(where) > 1 else ""
    return _from_git(str(root), prefix, outputs["index"], outputs["status"], is_mapped)


def _from_git(base: str, prefix: str, index: bytes, status: bytes,
              is_mapped: Callable[[str], object]) -> TreeState:
    """The state from `ls-files -z -s -v` (paths relative to root) and `status
    --porcelain=v2 -z` (paths relative to the repository's top: `prefix` is root's)."""
    dirty: set[str] = set()
    untracked: list[str] = []
    records = status.split(b"\0")
    cut = len(prefix)
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if not rec:
            continue
        kind = rec[:1]
        if kind == b"?":
            path = rec[2:]
        elif kind in (b"1", b"2", b"u"):
            fields = rec.split(b" ", {b"1": 8, b"2": 9, b"u": 10}[kind])
            path = fields[-1]
            if kind == b"2":
                i += 1  # the rename's original path follows
            if kind != b"u" and fields[1][1:2] == b".":
                continue  # the work tree matches the index: the index's blob id holds
        else:
            continue
        rel = path.decode("utf-8", "surrogateescape")
        if cut and rel.startswith(prefix):
            rel = rel[cut:]
        if kind == b"?":
            untracked.append(rel)
        else:
            dirty.add(rel)

    records = [r for r in index.split(b"\0") if r]
    if all(r[50:51] == b"\t" for r in records):  # a SHA-1 repository: fixed widths
        names = b"\0".join([r[51:] for r in records]).decode("utf-8", "surrogateescape").split("\0")
        blobs = [r[9:49] for r in records]
    else:
        parted = [r.partition(b"\t") for r in records]
        names = [raw.decode("utf-8", "surrogateescape") for _, _, raw in parted]
        blobs = [meta.split(b" ")[2] for meta, _, _ in parted]
    # "H 100644 <blob id> 0": a regular file git checks by its stat data
    plain = [r[:8] in (b"H 100644", b"H 100755") for r in records]
    files: list[str] = []
    tokens: dict[str, bytes] = {}
    hashed = 0

    def look(rel: str) -> None:
        """A file git does not vouch for: in the tree if it is a regular file; a mapped one
        counts by its content (the first MAX_HASHED of them; then by stat)."""
        nonlocal hashed
        full = os.path.join(base, rel)
        if not is_mapped(rel):
            if _stat_token(full) is not None:
                files.append(rel)
            return
        hashed += 1
        token = _blob_token(full) if hashed <= MAX_HASHED else _stat_token(full)
        if token is not None:
            files.append(rel)
            tokens[rel] = token

    last = ""
    for rel, blob, ok, rec in zip(names, blobs, plain, records):
        if ok and rel not in dirty:
            files.append(rel)
            if is_mapped(rel):
                tokens[rel] = blob
            continue
        if rel == last or rec[2:8] == b"160000":
            continue  # another stage of an unmerged path; a submodule (a folder, not a file)
        last = rel
        look(rel)  # changed, a symlink, or a file git was told not to look at
    for rel in untracked:
        if not rel.endswith("/"):  # a trailing slash: a nested repository git does not look into
            look(rel)
    files.sort()
    if len(files) > MAX_FILES:  # as list_files cuts the listing
        files = files[:MAX_FILES]
        kept = set(files)
        tokens = {p: t for p, t in tokens.items() if p in kept}
    return TreeState(files, _key(tokens), "git", tokens)
