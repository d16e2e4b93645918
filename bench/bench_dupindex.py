"""Duplicate index at scale (issue 14): memory per function, second launch, one hunk's check.

Each number is printed against a baseline measured in the same run (the machine is shared):
* memory: what the index holds per function (numpy columns, `dup_store.UnitTable`) against
  the parsed `FunctionUnit` objects it is built from (what the index held before: ~4 KB
  each, 1.6 GB on a 20,000-file tree), both measured with tracemalloc;
* second launch: `load_snapshot` (one memory-mapped file) against loading the same files'
  cached fingerprints (unpickled and inserted: what a launch without the snapshot does);
* one hunk's duplicate check in a 2,500-line file (what the app asks per file review
  during an answer): `check_source(lines=...)` against `ast.parse` of that file alone.

    python -m bench dupindex        # SPARK_BENCH_DUP_FILES=1000 generated files by default
"""

from __future__ import annotations

import ast
import gc
import os
import pickle
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_many_edits import _tree as many_edits_tree
from repo_gen import generate

from core.detectors.duplicates import DuplicateIndex, iter_python_files
from core.detectors.normalize import units_from_source

FILES = int(os.environ.get("SPARK_BENCH_DUP_FILES", "1000"))


def _median_ms(fn, repeat: int = 15) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _traced(fn):
    """(result, bytes it left allocated) of fn()."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    out = fn()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return out, after - before


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {FILES:,} generated files")
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp) / "repo", FILES, 7)
        many_edits_tree(root, 2500, random.Random(2500))  # pipeline/stage*.py, 2,500 lines each
        start = time.perf_counter()
        parsed = [(rel, units_from_source((root / rel).read_text())) for rel in iter_python_files(root)]
        functions = sum(len(units) for _, units in parsed)
        print(f"parsed {functions:,} functions in {time.perf_counter() - start:.1f} s")
        blob = pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL)
        del parsed

        held, units_bytes = _traced(lambda: [pickle.loads(blob)])
        index = DuplicateIndex(root)
        _, index_bytes = _traced(lambda: index.load(held.pop()))
        print(f"memory per function: index {index_bytes / functions:,.0f} B, parsed FunctionUnits "
              f"{units_bytes / functions:,.0f} B ({index_bytes / units_bytes:.2f}x)")

        snap = Path(tmp) / "repo.dups"
        index.save_snapshot(snap, {}, {"root": str(root)})

        def stream() -> None:
            DuplicateIndex(root).load(pickle.loads(blob))

        def mapped() -> None:
            DuplicateIndex(root).load_snapshot(snap, {"root": str(root)})

        slow, fast = _median_ms(stream, 3), _median_ms(mapped, 5)
        print(f"second launch: snapshot {fast:.1f} ms, cached fingerprints {slow:.1f} ms "
              f"({fast / slow:.3f}x; snapshot {snap.stat().st_size / 1e6:.1f} MB)")

        rows = (root / "pipeline/stage2.py").read_text().split("\n")
        at = next(k for k in range(len(rows) // 2, len(rows)) if rows[k].startswith("def "))
        rows[at] = rows[at].replace("limit=", "limit=1 + ")
        helper = ["def helper_x(value):", "    if value is None:", "        return []",
                  "    out = [v for v in value if v]", "    return out", "", ""]
        rows[at + 12:at + 12] = helper
        text = "\n".join(rows)
        lines = [at + 1, *range(at + 13, at + 13 + len(helper))]
        check = _median_ms(lambda: index.check_source(text, "pipeline/stage2.py", lines=lines))
        parse = _median_ms(lambda: ast.parse(text))
        print(f"hunk check in a {len(rows):,}-line file: {check:.1f} ms, ast.parse of the file "
              f"{parse:.1f} ms ({check / parse:.2f}x; goal <= 15 ms)")


if __name__ == "__main__":
    main()
