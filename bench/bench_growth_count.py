"""The growth meter's baseline count at launch: every file read (before) against the per-file
counts kept beside the index cache (core.detectors.growth.count_tree_lines_stored), in the
same run on the same tree.

A generated 3,000-file tree (and SPARK_BENCH_GROWTH_TREE when set, e.g. /tmp/perf/r20k or
/tmp/launch16/real20k): process CPU, median of 5, of
- full: count_tree_lines, every source file opened and read (what each launch paid);
- unchanged: the stored counts, the tree as stored (a stat walk, no read);
- 1% edited: the same after 1% of the files were rewritten (generated tree only).
The stored count is checked equal to the full one each time. Files written in the last
RACY_NS are counted but not kept; the bench counts as a launch that came later would
(RACY_NS = 0 after a short sleep).

    SPARK_BENCH_GROWTH_TREE=/tmp/perf/r20k python -m bench growth_count
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.repo_gen import generate
from core.detectors import growth

RUNS = 5


def _cpu(fn: Callable[[], int]) -> tuple[float, int]:
    times, result = [], 0
    for _ in range(RUNS):
        start = time.process_time()
        result = fn()
        times.append(time.process_time() - start)
    return statistics.median(times), result


def _measure(root: Path, work: Path, edit: bool) -> None:
    store = work / f"{root.name}.lines.snap"
    store.unlink(missing_ok=True)
    full, lines = _cpu(lambda: growth.count_tree_lines(root))
    growth.count_tree_lines_stored(root, store)  # the first launch: counts and stores
    kept, stored_lines = _cpu(lambda: growth.count_tree_lines_stored(root, store))
    assert stored_lines == lines, (stored_lines, lines)
    print(f"{root}: {lines:,} lines; full count {full * 1000:.0f} ms CPU, unchanged tree "
          f"{kept * 1000:.0f} ms ({full / max(kept, 1e-9):.1f}x less)", flush=True)
    if not edit:
        return
    sources = sorted(p for p in root.rglob("*.py"))
    for path in sources[::100]:
        path.write_text(path.read_text() + "\nextra = 1\n")
    time.sleep(0.02)
    full, lines = _cpu(lambda: growth.count_tree_lines(root))
    store_copy = store.read_bytes()

    def edited() -> int:
        store.write_bytes(store_copy)  # each run finds the store of before the edit
        return growth.count_tree_lines_stored(root, store)

    changed, stored_lines = _cpu(edited)
    assert stored_lines == lines, (stored_lines, lines)
    print(f"  after {len(sources[::100])} files edited: full {full * 1000:.0f} ms, stored "
          f"{changed * 1000:.0f} ms ({full / max(changed, 1e-9):.1f}x less)", flush=True)


def main() -> None:
    print(f"load {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
        work = Path(tmp)
        root = generate(work / "gen3k", 3000, 7)
        time.sleep(0.02)
        racy, growth.RACY_NS = growth.RACY_NS, 0  # as a launch RACY_NS after the writes
        try:
            _measure(root, work, edit=True)
            extra = os.environ.get("SPARK_BENCH_GROWTH_TREE")
            if extra:
                _measure(Path(extra), work, edit=False)
        finally:
            growth.RACY_NS = racy
    print(f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
