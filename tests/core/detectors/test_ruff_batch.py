"""One ruff process for several files' texts gives each file exactly its own run's findings.

`ruff_rules.run_ruff_many` (used when an answer's end asks for several files' slop at
once) must equal `run_ruff` per file: same findings, same fixes, assigned to the right
file, whatever the file names and line ends; and `slop.prefetch_many` must leave the
analyses equal to fresh ones, never a silent clean when ruff cannot run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.detectors import ruff_rules, slop
from core.detectors.ruff_rules import RuffUnavailable, run_ruff, run_ruff_many
from core.detectors.slop_rules import ruff_text
from tests.core.detectors.real_code import SITE_PACKAGES, read_text, real_python_files

HOSTILE = (Path(__file__).parent / "data" / "slop_hostile.py.txt").read_text(encoding="utf-8")
NAMES = ["mod.py", "__init__.py", "stub.pyi", "a b.py", "pkg/deep/x.py", "", "ünï.py", "/abs/path/y.py"]


def _texts() -> list[str]:
    files = real_python_files((SITE_PACKAGES,), 2_000, 30_000)
    return [HOSTILE, *[read_text(p) for p in files[:: max(1, len(files) // 40)]]]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_one_process_for_many_files_equals_one_run_each(data: st.DataObject) -> None:
    texts = _texts()
    files = []
    for _ in range(data.draw(st.integers(2, 4), label="files")):
        text = data.draw(st.sampled_from(texts), label="text")
        if data.draw(st.booleans(), label="crlf"):
            text = text.replace("\n", "\r\n")
        elif data.draw(st.booleans(), label="scoped"):  # what a review sends: the scoped text
            rows = text.count("\n") + 1
            text = ruff_text(text, set(data.draw(st.lists(st.integers(1, rows), max_size=5), label="added")))
        files.append((data.draw(st.sampled_from(NAMES), label="name"), text))
    assert run_ruff_many(files) == [run_ruff(path, text) for path, text in files]


def test_the_hostile_file_has_findings_with_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above compares something: the hostile sample gives ruff findings and fixes;
    a batch gives each file its own (not a neighbour's, not none), from one process."""
    found = run_ruff("mod.py", HOSTILE)
    assert found and any(f.fix is not None for f in found)
    runs = []
    real_run = ruff_rules.subprocess.run

    def counted(*args: object, **kwargs: object) -> object:
        runs.append(args)
        return real_run(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(ruff_rules.subprocess, "run", counted)
    assert run_ruff_many([("a.py", "x = 1\n"), ("b.py", HOSTILE), ("c.py", HOSTILE)]) == [[], found, found]
    assert len(runs) == 1


def _fresh(path: str, text: str, added: set[int]) -> slop.SlopReport:
    with slop._RUFF_LOCK:
        slop._RUFF_CACHE.clear()
        slop._REPORTS.clear()
    return slop._analyze(path, text, set(added), scoped=True)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_analyses_after_a_batch_prefetch_equal_fresh_ones(data: st.DataObject) -> None:
    texts = _texts()
    jobs = []
    for n in range(data.draw(st.integers(1, 4), label="files")):
        text = data.draw(st.sampled_from(texts), label="text")
        rows = text.count("\n") + 1
        added = set(data.draw(st.lists(st.integers(1, rows), min_size=1, max_size=6), label="added"))
        jobs.append((f"f{n}.py", text, added))
    expected = [_fresh(*job) for job in jobs]
    with slop._RUFF_LOCK:
        slop._RUFF_CACHE.clear()
        slop._REPORTS.clear()
    slop.prefetch_many(jobs)
    assert [slop.analyze_change(p, t, t, added=a) for p, t, a in jobs] == expected


def test_a_batch_that_cannot_run_reports_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """ruff failing in a batch prefetch: each analysis says ruff did not run (an error in
    the report), it is not a clean report, and nobody waits forever."""
    def broken(*_a: object, **_k: object) -> list:
        raise RuffUnavailable("ruff exited 2: broken for the test")

    monkeypatch.setattr(slop, "run_ruff_many", broken)
    monkeypatch.setattr(slop, "run_ruff", broken)
    with slop._RUFF_LOCK:
        slop._RUFF_CACHE.clear()
        slop._REPORTS.clear()
    jobs = [("a.py", HOSTILE + "\n# a\n", {1, 2, 3}), ("b.py", HOSTILE + "\n# b\n", {4, 5})]
    slop.prefetch_many(jobs)
    for path, text, added in jobs:
        report = slop.analyze_change(path, text, text, added=added)
        assert report.errors and "broken for the test" in report.errors[0]
    with slop._RUFF_LOCK:  # the failure is not remembered past the test's own texts
        slop._RUFF_CACHE.clear()
        slop._REPORTS.clear()
