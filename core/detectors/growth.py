"""Growth meter: lines added this session, and as a share of the tree at the start.

"My codebase grew by 20% in size today" (seed 000) is only alarming if someone says it
out loud. The baseline is counted once when the session starts; every accepted edit
records its added and removed lines.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.detectors.duplicates import EXCLUDED_DIRS
from core.detectors.slop import line_changes
from core.indexing.checked import RACY_NS

SOURCE_SUFFIXES = {
    ".py", ".pyi", ".js", ".jsx", ".ts", ".tsx", ".go", ".rs", ".c", ".h", ".cc", ".cpp",
    ".hpp", ".java", ".kt", ".rb", ".php", ".cs", ".swift", ".scala", ".sh", ".sql",
    ".html", ".css", ".tcss", ".scss", ".vue", ".svelte", ".toml", ".yaml", ".yml", ".md",
}  # fmt: skip
MAX_FILE_BYTES = 2_000_000


LINES_SNAPSHOT = "lines"  # the stored counts: a snapshot file beside the index cache
LINES_SCHEME = b"line-counts-1"  # what a stored table means; another one is ignored

# a file's identity as the system sees it, and its count: (size, mtime_ns, ctime_ns, inode, lines)
Entry = tuple[int, int, int, int, int]


def _count_file(full: str) -> int:
    """Lines of one file as `sum(1 for _ in open(full, "rb"))` counts them: every b"\\n"
    and a last line without one; read whole (the size is capped), counted in C."""
    with open(full, "rb") as fh:
        data = fh.read()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def count_tree_lines(root: Path | str, between: Callable[[], object] | None = None) -> int:
    """Lines of the tree's source and text files (tool and vendored dirs skipped).

    `between` is called before each folder: the indexer answers duplicate checks there,
    so a check sent while a 20,000-file tree is counted (~1 s) does not wait for the count.
    """
    return count_with_known(root, {}, between)[0]


def count_with_known(
    root: Path | str,
    known: dict[str, Entry],
    between: Callable[[], object] | None = None,
    *,
    max_bytes: int | None = None,
    now_ns: int | None = None,
) -> tuple[int, dict[str, Entry]]:
    """(the tree's line count, the table to store for the next count).

    A file whose identity (relative path, size, mtime, ctime, inode: stat data a write
    changes, even one that puts the size and mtime back, as the ctime cannot be set back)
    is in `known` counts by the stored number; any other is read. So an unchanged tree
    costs a stat walk, not 20,000 reads (~1 s of a core at each launch). As git does with
    "racily clean" entries, a file changed less than RACY_NS before the walk (its times
    may not show a second change in the same clock tick) is counted but not kept.
    """
    limit = MAX_FILE_BYTES if max_bytes is None else max_bytes
    fresh_after = (time.time_ns() if now_ns is None else now_ns) - RACY_NS
    total = 0
    table: dict[str, Entry] = {}
    base = str(root)
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        if between is not None:
            between()
        try:
            with os.scandir(os.path.join(base, rel_dir) if rel_dir else base) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name not in EXCLUDED_DIRS and not name.startswith("."):
                        stack.append(rel)
                    continue
                dot = name.rfind(".")  # Path(name).suffix, as the meter always read it
                if not 0 < dot < len(name) - 1 or name[dot:] not in SOURCE_SUFFIXES or entry.is_dir():
                    continue  # (a link to a folder is not walked, as os.walk does not)
                st = entry.stat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                continue  # not a file (a fifo would block the read), or too big to be source
            ident = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            old = known.get(rel)
            # a stored row counts only if it is what this module writes (the store is checked
            # as a whole when read, but a count is never taken on trust): else the file is read
            if type(old) is tuple and len(old) == 5 and old[:4] == ident and type(old[4]) is int and old[4] >= 0:
                lines = old[4]
            else:
                try:
                    lines = _count_file(entry.path)
                except OSError:
                    continue
            total += lines
            if max(st.st_ctime_ns, st.st_mtime_ns) < fresh_after:
                table[rel] = (*ident, lines)
    return total, table


def _valid(obj: object) -> dict[str, Entry]:
    """The stored table if it is a dict, else nothing; each row is checked where it is used."""
    return obj if isinstance(obj, dict) else {}


def count_tree_lines_stored(
    root: Path | str, store: Path | None, between: Callable[[], object] | None = None
) -> int:
    """`count_tree_lines`, with each file's count kept in `store` (a snapshot file beside the
    indexer's cache, checked as the others are: version, root, scheme, checksum; a missing,
    damaged or foreign one is ignored) and written back only when it changed."""
    if store is None:
        return count_tree_lines(root, between)
    from core.indexing.cache import read_snapshot_file, write_snapshot_file

    resolved = str(Path(root).resolve())
    found = read_snapshot_file(store, resolved, LINES_SNAPSHOT)
    known = _valid(found[1]) if found is not None and found[0] == LINES_SCHEME else {}
    total, table = count_with_known(root, known, between)
    if table != known:
        try:
            write_snapshot_file(store, resolved, LINES_SNAPSHOT, LINES_SCHEME, table)
        except OSError:
            pass  # best effort: the next launch counts again
    return total


@dataclass(frozen=True, slots=True)
class GrowthState:
    baseline_lines: int
    added: int
    removed: int

    @property
    def net(self) -> int:
        return self.added - self.removed

    @property
    def share(self) -> float:
        """Lines added as a fraction of the tree at session start (0.2 = 20%)."""
        return self.added / self.baseline_lines if self.baseline_lines else 0.0

    @property
    def net_share(self) -> float:
        return self.net / self.baseline_lines if self.baseline_lines else 0.0

    def describe(self) -> str:
        return (
            f"+{self.added} / -{self.removed} lines this session "
            f"({self.share:.0%} of the {self.baseline_lines} lines at start; "
            f"net {self.net_share:+.0%})"
        )


class GrowthMeter:
    """Lines added this session vs the tree's size when the session started."""

    def __init__(self, baseline_lines: int) -> None:
        self.baseline_lines = max(0, int(baseline_lines))
        self.added = 0
        self.removed = 0

    @classmethod
    def from_tree(cls, root: Path | str) -> GrowthMeter:
        return cls(count_tree_lines(root))

    def record(self, old_text: str, new_text: str) -> GrowthState:
        """Count an accepted edit of one file (old_text "" for a new file)."""
        added, removed = line_changes(old_text, new_text)
        return self.record_lines(added, removed)

    def record_lines(self, added: int, removed: int) -> GrowthState:
        self.added += max(0, added)
        self.removed += max(0, removed)
        return self.state

    @property
    def state(self) -> GrowthState:
        return GrowthState(self.baseline_lines, self.added, self.removed)
