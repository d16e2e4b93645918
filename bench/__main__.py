"""`make bench`: run every bench/bench_*.py in turn; each prints its own ratios."""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    wanted = set(argv)
    failures = 0
    for script in sorted(here.glob("bench_*.py")):
        name = script.stem.removeprefix("bench_")
        if wanted and name not in wanted:
            continue
        print(f"\n=== {name} " + "=" * (60 - len(name)), flush=True)
        start = time.perf_counter()
        try:
            module = runpy.run_path(str(script), run_name=f"bench.{script.stem}")
            module["main"]()
        except Exception as exc:  # one broken bench must not hide the others
            failures += 1
            print(f"bench {name} failed: {exc!r}", flush=True)
        print(f"--- {name}: {time.perf_counter() - start:.1f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
