"""Real model answers (Aider chat logs from public repositories) through our parser.

Prints, per model family and per answer format: the share of answers where our parser
finds edits for exactly the files Aider applied edits to, and the answers that would
write a stray file, cut an existing file to a snippet, or write a placeholder
(definitions in bench/real_answers/measure.py).  Runs on the full corpus when
$SPARK_REAL_ANSWERS names one (built by `python -m bench.real_answers.collect`), else
on the sample in the repository.  With $SPARK_REAL_ANSWERS_MIRRORS (the mirrors the
corpus was built from) it also applies each answer whose Aider commit is known to the
exact tree before that commit and compares the result with Aider's (replay.py).  The
baseline timed in the same run is splitting
each answer into lines, so the parser's cost reads as a ratio.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # `make bench` runs this file as "bench"

from real_answers.measure import judge, render, render_why, table
from real_answers.sample import SAMPLE, read, unique


def main() -> None:
    corpus = Path(os.environ.get("SPARK_REAL_ANSWERS", "") or SAMPLE)
    records = [r for r in unique(read(corpus))
               if not r.get("architect") and not r.get("reformatted")]
    start = time.perf_counter()
    for r in records:
        r["text"].splitlines()
    base = time.perf_counter() - start
    start = time.perf_counter()
    verdicts = [judge(r) for r in records]
    took = time.perf_counter() - start
    print(f"corpus: {corpus} ({len(records)} answers, "
          f"{len({r['repo'] for r in records})} repositories)")
    print(render(table(verdicts, lambda v: v.family), "model family"))
    print()
    print(render(table(verdicts, lambda v: v.fmt), "answer format"))
    print()
    print(render(table(verdicts, lambda v: v.aider_format), "Aider's edit format"))
    print()
    print(render_why(table(verdicts, lambda v: v.fmt), "answer format"))
    per = took / max(1, len(records)) * 1e3
    print(f"\nparse+judge: {per:.2f} ms/answer, {took / max(base, 1e-9):.0f}x the time "
          f"to split the answers into lines")
    mirrors = os.environ.get("SPARK_REAL_ANSWERS_MIRRORS", "")
    if mirrors:
        from real_answers.replay import replay_all, summary

        replays = replay_all(records, Path(mirrors))
        print("\n" + summary(replays))
        for rp in replays:
            if rp.outcome in ("refused", "different") or rp.unflagged_cuts:
                print(f"  {rp.outcome}: {rp.repo} #{rp.index} {rp.notes[:2]} "
                      f"{rp.unflagged_cuts or ''}")
    bad = [(r, v) for r, v in zip(records, verdicts, strict=True)
           if v.stray or v.cut or v.placeholder]
    for r, v in bad[:40]:
        print(f"  {r['repo']} #{r['index']} ({v.family}, {v.fmt}): stray={v.stray} "
              f"cut={v.cut} placeholder={v.placeholder}")


if __name__ == "__main__":
    main()
