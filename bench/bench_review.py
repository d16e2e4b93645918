"""The core's cost of an answer's end: the final rebuild of the proposal and its review.

The answer of bench_many_edits (40 SEARCH/REPLACE blocks over 6 files) is streamed into an
AnswerRun block by block, as the app does: a rebuild after each completed block and a review
pass that a newer rebuild supersedes after its first file (the app's reviews mostly never
finish during a fast stream). Then, after the last block, what the app waits for is timed:
the final `rebuild_proposal` and a full `Workstation.review` (duplicates and slop of every
file). Baseline in the same run: the same final answer rebuilt and reviewed from scratch
(a fresh AnswerRun, a fresh Workstation, every memo cleared). Slop runs in this process
(SPARK_SLOP_PROCESS=0) so its whole cost is counted here. Goal: <= ~60 ms at 2,500 lines.
"""

from __future__ import annotations

import os
import random
import resource
import runpy
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = 5
TOKENS_PER_S = 5000.0


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the ruff processes): a
    loaded box inflates wall time, this much less."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _memos_cleared() -> None:
    from core import pyparse
    from core.detectors import slop, slop_rules

    slop._REPORTS.clear()
    slop._RUFF_CACHE.clear()
    slop_rules._STRING_ROWS.clear()
    if hasattr(pyparse, "_MEMO"):  # a base without segment parses
        with pyparse._MEMO_LOCK:
            pyparse._MEMO.clear()


def _station(root: Path) -> Any:
    from core.workstation import Workstation

    station = Workstation(root)
    station.dups.build()
    station.dups_ready = True
    return station


def _project(tmp: Path, lines: int) -> tuple[Path, str]:
    many = runpy.run_path(str(Path(__file__).with_name("bench_many_edits.py")), run_name="bench.many")
    rng = random.Random(lines)
    root = tmp / f"proj-{lines}"
    root.mkdir(parents=True)
    files = many["_tree"](root, lines, rng)
    answer = many["_answer"](files, rng)
    git = ["git", "-c", "user.email=bench@spark", "-c", "user.name=bench"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "tree"], cwd=root, check=True)
    return root, answer


def _streamed(root: Path, answer: str) -> dict[str, float]:
    """The answer streamed at TOKENS_PER_S (4 characters a token) against the clock, as
    the app takes it: after each rebuild one review pass, which a newer rebuild supersedes
    after its first file; the text that arrived meanwhile is fed before the next rebuild.
    The end timed (ms)."""
    from core.answer import AnswerRun
    from core.workstation import ReviewSuperseded

    _memos_cleared()
    station = _station(root)
    run = AnswerRun(station.workspace, "bench", "spark")
    fed = 0
    start = time.perf_counter()
    while fed < len(answer):
        due = min(len(answer), max(fed + 1, int((time.perf_counter() - start) * TOKENS_PER_S * 4)))
        completed = run.feed(answer[fed:due], (due - fed) // 4)
        fed = due
        if completed:
            run.rebuild_proposal()
            try:
                station.review(run, stale=lambda: True)  # one file, then a newer rebuild waits
            except ReviewSuperseded:
                pass
    run.finish("stop")
    time.sleep(0.05)  # the stream's last ruff processes end (their CPU is not the end's)
    return _end(station, run)


def _scratch(root: Path, answer: str) -> dict[str, float]:
    from core.answer import AnswerRun

    _memos_cleared()
    station = _station(root)
    run = AnswerRun(station.workspace, "bench", "spark")
    run.feed(answer, 1)
    run.finish("stop")
    time.sleep(0.05)  # the stream's last ruff processes end (their CPU is not the end's)
    return _end(station, run)


def _end(station: Any, run: Any) -> dict[str, float]:
    """Time the final rebuild and the review (wall ms, and CPU ms of the two together)."""
    cpu = _cpu()
    start = time.perf_counter()
    run.rebuild_proposal()
    built = time.perf_counter()
    review = station.review(run)
    done = time.perf_counter()
    return {"rebuild": (built - start) * 1000, "review": (done - built) * 1000,
            "total": (done - start) * 1000, "cpu": (_cpu() - cpu) * 1000,
            "findings": len(review.findings), "hunks": len(run.hunks)}


def main() -> None:
    os.environ["SPARK_SLOP_PROCESS"] = "0"
    runs = int(os.environ.get("SPARK_BENCH_RUNS", RUNS))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        for lines in (250, 2500):
            root, answer = _project(Path(tmp), lines)
            new: list[dict[str, float]] = []
            base: list[dict[str, float]] = []
            for _ in range(runs):  # alternately, so both see the same load
                new.append(_streamed(root, answer))
                base.append(_scratch(root, answer))
            if {r["findings"] for r in new} != {r["findings"] for r in base}:
                print(f"  MISMATCH: findings streamed {[r['findings'] for r in new]} vs scratch "
                      f"{[r['findings'] for r in base]}")
            med = {k: statistics.median(r[k] for r in new) for k in ("rebuild", "review", "total", "cpu")}
            ref = {k: statistics.median(r[k] for r in base) for k in ("rebuild", "review", "total", "cpu")}
            print(f"6 files x {lines:,} lines, {new[0]['hunks']} hunks, {new[0]['findings']} findings "
                  f"(median of {runs}):")
            for k in ("rebuild", "review", "total", "cpu"):
                print(f"  {k:8s} after the last block {med[k]:7.1f} ms   from scratch {ref[k]:7.1f} ms   "
                      f"ratio {med[k] / ref[k]:.2f}x")
            verdict = "met" if med["total"] <= 60 else "MISSED"
            if lines == 2500:
                print(f"  goal: final rebuild + review <= ~60 ms at 2,500 lines: {verdict} ({med['total']:.0f} ms)")


if __name__ == "__main__":
    main()
