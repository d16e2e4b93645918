"""Growth meter: lines added this session, and as a share of the tree at the start.

"My codebase grew by 20% in size today" (seed 000) is only alarming if someone says it
out loud. The baseline is counted once when the session starts; every accepted edit
records its added and removed lines.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.detectors.duplicates import EXCLUDED_DIRS
from core.detectors.slop import line_changes

SOURCE_SUFFIXES = {
    ".py", ".pyi", ".js", ".jsx", ".ts", ".tsx", ".go", ".rs", ".c", ".h", ".cc", ".cpp",
    ".hpp", ".java", ".kt", ".rb", ".php", ".cs", ".swift", ".scala", ".sh", ".sql",
    ".html", ".css", ".tcss", ".scss", ".vue", ".svelte", ".toml", ".yaml", ".yml", ".md",
}  # fmt: skip
MAX_FILE_BYTES = 2_000_000


def count_tree_lines(root: Path | str, between: Callable[[], object] | None = None) -> int:
    """Lines of the tree's source and text files (tool and vendored dirs skipped).

    `between` is called before each folder: the indexer answers duplicate checks there,
    so a check sent while a 20,000-file tree is counted (~1 s) does not wait for the count.
    """
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        if between is not None:
            between()
        dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS and not d.startswith(".")]
        for name in filenames:
            path = Path(dirpath) / name
            if path.suffix not in SOURCE_SUFFIXES:
                continue
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    continue
                with path.open("rb") as fh:
                    total += sum(1 for _ in fh)
            except OSError:
                continue
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
