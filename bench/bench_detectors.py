"""Benchmark of the drift detectors: duplicate index speed and quality, slop speed.

Prints, each against a baseline measured in the same run (the machine is shared):
* indexing the standard library's top-level ``Lib/*.py`` (target < 10 s), against
  just ``ast.parse`` of the same files;
* one ``check_source`` against 100,000 indexed functions (target p95 < 10 ms), against
  ``ast.parse`` of the checked source. The 100,000 are the stdlib's indexable functions
  plus variants of them with a quarter of their k-gram features and a tenth of their
  role tokens replaced: real feature frequencies (the common k-grams grow 30-fold, the
  worst case for posting lists, and every query has ~30 near twins to verify and
  align) without parsing 100,000 functions;
* recall per clone type and precision on the stdlib evaluation set (bench/dups_eval.py)
  and on the copy-edit set (bench/dups_eval_edits.py), through ``check_source`` (what
  the app calls) and through ``pairs()`` (``dups scan``);
* ``analyze_change`` (ruff subprocess + our rules) on a stdlib module, against ast.parse.
"""

from __future__ import annotations

import ast
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import dups_eval
import dups_eval_edits

from core.detectors.duplicates import DuplicateIndex
from core.detectors.normalize import FunctionUnit, units_from_source
from core.detectors.slop import analyze_change

TARGET_FUNCTIONS = 100_000


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def bench_index_stdlib() -> tuple[float, float, DuplicateIndex]:
    mods = dups_eval.stdlib_modules()
    tmp = Path(tempfile.mkdtemp(prefix="bench-dups-"))
    for path in mods:
        shutil.copy(path, tmp / path.name)
    t0 = time.perf_counter()
    for path in mods:
        try:
            ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            pass
    parse_s = time.perf_counter() - t0
    index = DuplicateIndex(tmp)
    t0 = time.perf_counter()
    index.build()
    build_s = time.perf_counter() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    return build_s, parse_s, index


def _variant(unit: FunctionUnit, i: int, rng: np.random.Generator) -> FunctionUnit:
    feats = unit.features.copy()
    k = max(1, len(feats) // 4)
    feats[rng.choice(len(feats), size=min(k, len(feats)), replace=False)] = rng.integers(
        0, 2**63, size=min(k, len(feats)), dtype=np.int64
    ).astype(np.uint64)
    roles = list(unit.roles)
    for pos in rng.choice(len(roles), size=max(1, len(roles) // 10), replace=False).tolist():
        roles[pos] = chr(int(rng.integers(1, 200)))
    key = i.to_bytes(8, "little") + b"var!"
    return replace(unit, symbol=f"{unit.symbol}_v{i}", exact_key=key, renamed_key=key,
                   features=np.unique(feats), roles="".join(roles))


def big_index() -> tuple[DuplicateIndex, float]:
    files = []
    for path in dups_eval.stdlib_modules():
        units = [u for u in units_from_source(path.read_text(encoding="utf-8", errors="replace"))
                 if u.indexable]
        files.append((path.name, units))
    base = [u for _, units in files for u in units]
    rng = np.random.default_rng(5)
    n, i = len(base), 0
    while n < TARGET_FUNCTIONS:
        chunk = [_variant(u, i + j, rng) for j, u in enumerate(base[: TARGET_FUNCTIONS - n])]
        files.append((f"variants/v{i}.py", chunk))
        i += len(chunk)
        n += len(chunk)
    index = DuplicateIndex(Path("."))
    t0 = time.perf_counter()
    index.load(files)
    return index, time.perf_counter() - t0


def bench_checks(index: DuplicateIndex, sources: list[str]) -> tuple[list[float], list[float]]:
    check_ms, parse_ms = [], []
    for src in sources:
        t0 = time.perf_counter()
        ast.parse(src)
        parse_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        index.check_source(src)
        check_ms.append((time.perf_counter() - t0) * 1000)
    return check_ms, parse_ms


def main() -> None:
    build_s, parse_s, _ = bench_index_stdlib()
    print(f"index stdlib Lib/*.py: {build_s:.2f} s (target < 10 s); "
          f"{build_s / parse_s:.1f}x plain ast.parse ({parse_s:.2f} s)")

    _indexed, cases = dups_eval.build_cases(150)
    index, load_s = big_index()
    print(f"loaded {index.indexed_count} functions in {load_s:.1f} s")
    sources = [c.source for c in cases]
    bench_checks(index, sources[:20])  # warm up
    check_ms, parse_ms = bench_checks(index, sources)
    p50, p95, p99 = (_percentile(check_ms, q) for q in (50, 95, 99))
    base95 = _percentile(parse_ms, 95)
    print(f"check_source vs {index.indexed_count} functions over {len(sources)} sources: "
          f"p50 {p50:.2f} ms, p95 {p95:.2f} ms (target < 10 ms), p99 {p99:.2f} ms; "
          f"p95 = {p95 / base95:.1f}x ast.parse of the same source ({base95:.2f} ms)")
    hard = [ms for ms, c in zip(check_ms, cases) if c.kind in ("type3", "negative")]
    print(f"  of which near misses and functions with no twin (the full search): "
          f"p50 {_percentile(hard, 50):.2f} ms, p95 {_percentile(hard, 95):.2f} ms")

    built = dups_eval.build_cases(150)
    scores = dups_eval.run(150, built)
    for kind, value in scores.recall.items():
        print(f"dups check recall {kind}: {value:.3f}")
    print(f"dups check precision: {scores.precision:.3f}; clone-type labels right: "
          f"{scores.label_accuracy:.3f}; negatives flagged: {scores.negatives_flagged:.3f}")
    scan = dups_eval.evaluate_scan(*built)
    print("dups scan recall " + ", ".join(f"{k} {v:.3f}" for k, v in scan.recall.items())
          + f"; precision {scan.precision:.3f} (counting clones of the original: "
          f"{scan.precision_transitive:.3f}); negatives paired {scan.negatives_flagged:.3f}")

    edits = dups_eval_edits.build_cases(120)
    for label, sc in (("check", dups_eval_edits.evaluate_check(edits)),
                      ("scan", dups_eval_edits.evaluate_scan(edits))):
        print(f"copy-edit set (bench/dups_eval_edits.py), dups {label}: recall "
              + ", ".join(f"{k} {v:.3f}" for k, v in sc.recall.items())
              + f"; precision {sc.precision:.3f}; type right "
              + ", ".join(f"{k} {v:.2f}" for k, v in sc.type_right.items())
              + f"; negatives flagged {sc.negatives_flagged:.3f}")

    text = (Path(dups_eval.stdlib_modules()[0]).parent / "textwrap.py").read_text()
    t0 = time.perf_counter()
    for _ in range(5):
        ast.parse(text)
    base = (time.perf_counter() - t0) / 5
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        report = analyze_change("textwrap.py", "", text)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"slop analyze_change textwrap.py ({report.added_lines} lines, "
          f"{len(report.findings)} findings): {med * 1000:.0f} ms = {med / base:.0f}x ast.parse")


if __name__ == "__main__":
    main()
