"""Files changed between the tree's listing and the watcher's start are found by the
indexer's recheck; the check worker's copy of a thread-mode tree's duplicate index must hear
of them too (`IndexService.on_recheck` -> `Workstation._to_dups_child`), or its duplicate
checks miss what those files hold."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.workstation import Workstation

MERGE = '''def merge_ranges(ranges, gap=0):
    """Merge overlapping (start, end) ranges, closer than gap apart."""
    merged = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + gap:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged
'''


def _wait(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_file_the_recheck_finds_reaches_the_workers_index(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.py").write_text('def first():\n    return 1\n')
    station = Workstation(root)
    station.build_indexes()
    _wait(lambda: station._dups_child is not None, "the worker's copy of the index")
    if station.indexes.snapshot().mode != "thread":
        pytest.skip("the tree was not indexed in a thread")
    (root / "b.py").write_text(MERGE)  # written before the watcher ran: only recheck sees it
    station.indexes.on_recheck([("b.py", "modified"), ("notes.txt", "modified")])
    copy = MERGE.replace("merge_ranges", "join_spans")

    def found() -> bool:
        return any("b.py" in str(f) for f in station._check_dups(copy, "c.py"))

    _wait(found, "the copy in b.py found by the worker's index", timeout=30)
    station.indexes.stop()
