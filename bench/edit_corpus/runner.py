"""Apply corpus answers with the real `spark apply` and judge the result byte for byte.

Each answer is applied to a fresh temporary folder holding the commit's before-files,
through ``core.edits.cli.run`` in-process (argument namespace, JSON output, exit code:
the very function `spark apply` calls) or through the installed `spark` command in a
subprocess.  The outcome is one of:

- ``exact``: exit 0 and every file is the commit's after-text, nothing else written;
- ``refused``: exit 1 or 2 and nothing written;
- ``partial``: exit 1, and each file is its before-text with some of its blocks or
  hunks applied exactly and the others left out (honest: the refusals are listed);
- ``wrong0``: exit 0 but a file differs from the commit (a silent wrong write);
- ``wrong1``: exit 1 and a file holds something no subset of the answer's edits makes;
- ``crash``: the code path raised (a bug even when nothing was written).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.edit_corpus.cases import Case
from bench.edit_corpus.formats import CLEAN, FORMATS, SLOPPY, Answer, Unit, lines_of, render

OUTCOMES = ("exact", "refused", "partial", "wrong0", "wrong1", "crash")
ANSWER_NAME = "answer.md"  # written next to (not inside) the tree it applies to


@dataclass
class Result:
    """How one answer went, with enough to reproduce it."""

    case_id: str
    format: str
    outcome: str
    exit_code: int | None
    detail: str = ""  # the first wrong file, or the crash
    reason: str = ""  # the first refusal's message, paths and numbers blanked
    apply_ms: float = 0.0  # the `spark apply` call alone (parse, match, journal, write)
    answer_bytes: int = 0


def refusal_kind(doc: dict) -> str:
    """The first refusal of a `spark apply --json` document as a kind of refusal:
    paths, line numbers and quoted text blanked, so equal causes count together."""
    refused = doc.get("refused") or []
    if not refused and doc.get("error"):
        refused = [{"message": doc["error"]}]
    if not refused:
        return ""
    msg = str(refused[0].get("message", "")).split("\n")[0]
    msg = re.sub(r"\S+\.py\b:?", "F", msg)
    msg = re.sub(r"\(\'.*?\'\)|'.*?'|\".*?\"", "'…'", msg)
    msg = re.sub(r"\d+", "N", msg)
    return msg[:140]


@dataclass
class Table:
    """Outcome counts per format."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, r: Result) -> None:
        self.counts.setdefault(r.format, Counter())[r.outcome] += 1

    def total(self, fmt: str) -> int:
        return sum(self.counts.get(fmt, Counter()).values())

    def rate(self, fmt: str, outcome: str) -> float:
        n = self.total(fmt)
        return self.counts[fmt][outcome] / n if n else 0.0

    def wrong(self, fmt: str) -> int:
        c = self.counts.get(fmt, Counter())
        return c["wrong0"] + c["wrong1"]

    def render(self) -> str:
        head = f"{'format':<22}{'n':>6}" + "".join(f"{o:>9}" for o in OUTCOMES) + \
            f"{'exact%':>9}{'goal':>7}"
        rows = [head, "-" * len(head)]
        for fmt in [*CLEAN, *SLOPPY]:
            if fmt not in self.counts:
                continue
            c = self.counts[fmt]
            goal = 0.99 if fmt in CLEAN else 0.95
            ok = self.rate(fmt, "exact") >= goal and not self.wrong(fmt) and not c["crash"]
            rows.append(f"{fmt:<22}{self.total(fmt):>6}" + "".join(f"{c[o]:>9}" for o in OUTCOMES)
                        + f"{100 * self.rate(fmt, 'exact'):>8.1f}%"
                        + f"{'met' if ok else 'NOT':>7}")
        allc: Counter[str] = Counter()
        for c in self.counts.values():
            allc.update(c)
        n = sum(allc.values())
        rows.append("-" * len(head))
        rows.append(f"{'all':<22}{n:>6}" + "".join(f"{allc[o]:>9}" for o in OUTCOMES)
                    + f"{100 * allc['exact'] / max(n, 1):>8.1f}%")
        return "\n".join(rows)


def _write_tree(root: Path, answer: Answer) -> None:
    for path, text in answer.before.items():
        if text is None:
            continue
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


def _tree_files(root: Path) -> set[str]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".spark", ".git")]
        for name in filenames:
            out.add(Path(dirpath, name).relative_to(root).as_posix())
    return out


def is_partial(before: str | None, got: str, units: list[Unit], after: str) -> bool:
    """got is before with some of the units applied exactly and the rest not (a
    dynamic program over the pieces: unchanged runs, then each unit's old or new lines)."""
    a, b, g = lines_of(before), lines_of(after), lines_of(got)
    if got.endswith("\n") != (before or after).endswith("\n") and got.endswith("\n") != \
            after.endswith("\n"):
        return False
    pieces: list[list[list[str]]] = []
    pos = 0
    for i1, i2, j1, j2 in sorted(units):
        if i1 < pos:
            return False  # overlapping units: cannot judge, call it wrong
        pieces.append([a[pos:i1]])
        pieces.append([a[i1:i2], b[j1:j2]])
        pos = i2
    pieces.append([a[pos:]])
    reach = {0}
    for alts in pieces:
        reach = {p + len(alt) for p in reach for alt in alts if g[p:p + len(alt)] == alt}
        if not reach:
            return False
    return len(g) in reach


def judge(answer: Answer, root: Path, code: int | None) -> Result:
    """Compare the tree after applying answer with the commit's after-files."""
    wrong_file = ""
    changed = False
    partial_ok = True
    for path, after in answer.expected.items():
        target = root / path
        got = target.read_bytes().decode("utf-8", "replace") if target.exists() else None
        before = answer.before[path]
        if got != before:
            changed = True
        if got == after:
            continue
        if got == before:
            if not wrong_file and code == 0:
                wrong_file = f"{path}: left unchanged"
            continue
        if got is None:
            partial_ok = False
            wrong_file = wrong_file or f"{path}: deleted"
            continue
        if not is_partial(before, got, answer.units.get(path, []), after):
            partial_ok = False
        wrong_file = wrong_file or f"{path}: differs from the commit"
    stray = _tree_files(root) - set(answer.expected)
    if stray:
        changed = True
        partial_ok = False
        wrong_file = wrong_file or f"stray file written: {min(stray)}"
    if code == 0:
        outcome = "wrong0" if wrong_file else "exact"
    elif not changed:
        outcome = "refused"
    else:
        outcome = "partial" if partial_ok else "wrong1"
    return Result(answer.case_id, answer.format, outcome, code, wrong_file)


def apply_in_process(answer_file: Path, root: Path) -> tuple[int, dict]:
    """The `spark apply --json --no-commit` code path, in this process: exit code and
    the JSON document it printed."""
    from core.edits.cli import register

    # parsed by the command's own argparse definition, so its defaults (and any option
    # added later) are exactly what the command line gets
    top = argparse.ArgumentParser(prog="spark")
    register(top.add_subparsers())
    ns = top.parse_args(["apply", "--json", "--no-commit", "--root", str(root),
                         str(answer_file)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = int(ns.func(ns))
    return code, json.loads(out.getvalue())


def spark_command() -> list[str]:
    """The installed `spark` console script of this interpreter's environment."""
    exe = Path(sys.executable).with_name("spark")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "tui.cli"]


def apply_subprocess(answer_file: Path, root: Path) -> tuple[int, dict]:
    """The real `spark apply` command line in a child process."""
    proc = subprocess.run([*spark_command(), "apply", "--json", "--no-commit", "--root",
                           str(root), str(answer_file)], check=False, capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, json.loads(proc.stdout)  # --json: exactly one JSON document


def run_answer(answer: Answer, workdir: Path, *, subprocess_cli: bool = False) -> Result:
    """Apply one answer to a fresh copy of its before-files under workdir."""
    case_dir = Path(tempfile.mkdtemp(dir=workdir))
    try:
        root = case_dir / "tree"
        root.mkdir()
        _write_tree(root, answer)
        answer_file = case_dir / ANSWER_NAME
        answer_file.write_bytes(answer.text.encode("utf-8"))
        start = time.perf_counter()
        try:
            code, doc = (apply_subprocess if subprocess_cli else apply_in_process)(
                answer_file, root)
        except Exception as exc:  # noqa: BLE001  # a crash is a finding, not the end
            return Result(answer.case_id, answer.format, "crash", None, repr(exc)[:300])
        took = 1000 * (time.perf_counter() - start)
        res = judge(answer, root, code)
        res.reason = refusal_kind(doc)
        res.apply_ms = took
        res.answer_bytes = len(answer.text.encode("utf-8"))
        return res
    finally:
        shutil.rmtree(case_dir, ignore_errors=True)


def answers(cases: Iterable[Case], formats: Iterable[str] = FORMATS) -> Iterable[Answer]:
    """Every (case, format) answer the formats can render, format by format."""
    cases = list(cases)
    for fmt in formats:
        for case in cases:
            ans = render(case, fmt)
            if ans is not None:
                yield ans


def scratch_dir() -> str | None:
    """A memory-backed folder when there is one: the engine fsyncs every write, and
    on a disk that cost, not the engine, would dominate 7,000 applies."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def run_all(items: Iterable[Answer], *, subprocess_every: int = 0,
            timings: list[Result] | None = None) -> tuple[Table, list[Result]]:
    """Apply every answer (every subprocess_every-th one through the real command line
    too, which must agree); the table and the results that were not exact (and every
    in-process result appended to timings, when given)."""
    table = Table()
    misses: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="spark-corpus-", dir=scratch_dir()) as tmp:
        for n, ans in enumerate(items):
            r = run_answer(ans, Path(tmp))
            if timings is not None:
                timings.append(r)
            if subprocess_every and n % subprocess_every == 0:
                r2 = run_answer(ans, Path(tmp), subprocess_cli=True)
                if r2.outcome != r.outcome:
                    r = Result(r.case_id, r.format, "crash", r.exit_code,
                               f"in-process {r.outcome} but command line {r2.outcome}")
            table.add(r)
            if r.outcome != "exact":
                misses.append(r)
    return table, misses
