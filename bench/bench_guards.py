"""Guard costs per hunk, as ratios against `ast.parse` of the same text (which the edit
loop already pays per edit), measured in the same run.

The secret scan and the sensitive-path check run before every accept; they must cost a
small fraction of parsing the hunk so they never show up in the user's latency.
"""

from __future__ import annotations

import ast
import time
from pathlib import Path

from core.guards.dwell import DwellGuard
from core.guards.secrets import redact, scan_added_text
from core.guards.sensitive import SensitivePolicy

ROOT = Path(__file__).resolve().parents[1]


def _best(fn, repeat: int = 7, number: int = 20) -> float:
    """Best-of-``repeat`` mean seconds per call (the machine is shared and noisy)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return min(times)


def _hunks(lines: int = 60) -> list[str]:
    """Real code from the project, cut into hunk-sized chunks."""
    chunks = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        text = path.read_text(encoding="utf-8").splitlines()
        for i in range(0, len(text) - lines, lines):
            chunk = "\n".join(text[i:i + lines])
            try:
                ast.parse(chunk)
            except SyntaxError:
                continue
            chunks.append(chunk)
    return chunks[:40]


def main() -> None:
    hunks = _hunks()
    paths = [f"core/{p.relative_to(ROOT / 'core')}" for p in (ROOT / "core").rglob("*.py")]
    policy = SensitivePolicy()
    chars = sum(len(h) for h in hunks)
    parse = _best(lambda: [ast.parse(h) for h in hunks])
    scan = _best(lambda: [scan_added_text("x.py", h) for h in hunks])
    red = _best(lambda: [redact(h) for h in hunks])
    sens = _best(lambda: policy.matches(paths))

    def dwell_round():
        g = DwellGuard()
        for i in range(1000):
            g.shown(str(i), 20, at=0.0)
        for i in range(1000):
            g.check_accept(str(i), at=float(i))
    dwell = _best(dwell_round, number=5) / 1000
    per = len(hunks)
    print(f"guards bench: {per} hunks of 60 lines ({chars / per:.0f} chars each), "
          f"{len(paths)} paths")
    print(f"  ast.parse (baseline)   {parse / per * 1e3:8.3f} ms/hunk   1.00x")
    print(f"  secret scan            {scan / per * 1e3:8.3f} ms/hunk   {scan / parse:.2f}x parse")
    print(f"  redact                 {red / per * 1e3:8.3f} ms/hunk   {red / parse:.2f}x parse")
    print(f"  sensitive-path check   {sens / len(paths) * 1e6:8.2f} us/path   "
          f"{sens / len(paths) / (parse / per):.4f}x parse of a hunk")
    print(f"  dwell shown+check      {dwell * 1e6:8.2f} us/hunk   "
          f"{dwell / (parse / per):.4f}x parse of a hunk")
    print(f"  scan throughput        {chars / scan / 1e6:8.2f} MB/s")


if __name__ == "__main__":
    main()
