"""The verifier on real proposals: checks, tests per answer and per subset, blame, the
one question before a breaking subset, cancellation, and nothing left behind."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from core.demo import write_demo
from core.edits.parser import parse_edits
from core.edits.proposal import build_proposal
from core.verify.baseline import BaselineCache
from core.verify.verifier import Scope, TestState, Verifier
from core.workspace.files import Workspace

CASSETTES = Path(__file__).resolve().parents[3] / "core" / "cassettes"


def recording(name: str) -> dict:
    for file in ("verify.jsonl", "demo.jsonl"):
        for line in (CASSETTES / file).read_text().splitlines():
            rec = json.loads(line)
            if rec["id"] == name:
                return rec
    raise KeyError(name)


@pytest.fixture
def demo(tmp_path, scratch_tmp):
    return Workspace(write_demo(tmp_path / "demo"))


def _verifier(ws, **kw):
    return Verifier(ws, run_tests=True, baseline=BaselineCache(), debounce_s=0.05, **kw)


def _subset(v, ids):
    v.decisions(set(ids))
    time.sleep(0.1)
    return v.wait_settled(Scope.ACCEPTED)


def test_us_dates_answer_fails_a_demo_test_and_subsets_are_told_apart(demo, scratch_tmp):
    before = {p: p.read_bytes() for p in demo.root.rglob("*.py")}
    proposal = build_proposal(demo, parse_edits(recording("us-dates")["answer"]))
    fmt, new_test = proposal.hunks
    changes: list[float] = []
    v = _verifier(demo, on_change=lambda: changes.append(time.perf_counter()))
    try:
        v.propose(proposal, final=True)
        whole = v.wait_settled(Scope.ANSWER)
        assert whole.problems == []  # it parses and lints clean: only the tests catch it
        assert whole.tests.state is TestState.FAILED
        assert [t.id for t in whole.tests.new_failures] == [
            "tests/test_dates.py::test_to_date_accepts_customer_formats[01/03/2024]"]
        assert "date(2024, 1, 3)" in whole.tests.new_failures[0].text
        assert whole.tests.command.startswith("pytest tests/test_dates.py")
        assert changes  # the UI was told
        # only the new test, without the format change: the new test fails
        alone = _subset(v, {new_test.id})
        assert [t.id for t in alone.tests.new_failures] == [
            "tests/test_dates.py::test_to_date_accepts_us_dates"]
        # nothing accepted: nothing to run
        assert _subset(v, set()).tests.state is TestState.SKIPPED
        # the whole answer accepted: the answer's report, not a second run
        assert _subset(v, {fmt.id, new_test.id}).tests.state is TestState.FAILED
    finally:
        v.close(wait=True)
    assert {p: p.read_bytes() for p in demo.root.rglob("*.py")} == before  # user's tree
    assert list(scratch_tmp.iterdir()) == []  # no shadow left behind


def test_a_subset_that_breaks_what_the_whole_answer_passed_asks_once(demo):
    proposal = build_proposal(demo, parse_edits(recording("overdue-days")["answer"]))
    by_text = {h.id: "".join(h.new_lines) for h in proposal.hunks}
    uses = [h for h, t in by_text.items() if "worst = max((days_overdue" in t]
    v = _verifier(demo)
    try:
        v.propose(proposal, final=True)
        whole = v.wait_settled(Scope.ANSWER)
        assert not whole.broken, whole.failure_names()
        # accept everything except the import of days_between: an undefined name
        imp = next(h for h, t in by_text.items() if "days_between" in t and "import" in t)
        subset = {h.id for h in proposal.hunks} - {imp}
        msg = v.accept_warning(subset)  # asked at once, before the subset run settles
        assert msg is not None and "F821" in msg and "days_between" in msg
        assert v.accept_warning(subset) is None  # once
        assert v.accept_warning({h.id for h in proposal.hunks}) is None  # the whole answer
        sub = _subset(v, subset)
        assert any(p.code == "F821" for p in sub.problems or [])
        assert sub.badges  # the badge sits on a hunk
        assert uses
    finally:
        v.close(wait=True)


def test_failures_that_were_there_before_are_not_blamed_and_the_baseline_is_cached(
        tmp_path, make_tree, scratch_tmp):
    root = make_tree(tmp_path / "p", {
        "pyproject.toml": "[tool.pytest.ini_options]\n",
        "app.py": "def double(x):\n    return 2 * x\n\n\ndef broken():\n    return 0\n",
        "tests/test_app.py": ("from app import broken, double\n\n\n"
                              "def test_double():\n    assert double(2) == 4\n\n\n"
                              "def test_broken():\n    assert broken() == 1\n"),
    })
    ws = Workspace(root)
    answer = ("app.py\n```python\n<<<<<<< SEARCH\n    return 2 * x\n=======\n"
              "    return x + x\n>>>>>>> REPLACE\n```\n")
    cache = BaselineCache()
    for parallel in (True, False):  # the unchanged tree beside the proposal, then cached
        v = Verifier(ws, run_tests=True, baseline=cache, parallel_baseline=parallel)
        try:
            v.propose(build_proposal(ws, parse_edits(answer)), final=True)
            rep = v.wait_settled(Scope.ANSWER)
        finally:
            v.close(wait=True)
        assert rep.tests.state is TestState.PASSED
        assert rep.tests.new_failures == []
        assert rep.tests.old_failures == ["tests/test_app.py::test_broken"]
        assert "already failing" in rep.tests.note
    assert cache.runs == 1  # the unchanged tree ran once for both answers
    # a prefetched baseline for a change whose tests pass, with its own shadow removed
    v = Verifier(ws, run_tests=True, baseline=BaselineCache(), parallel_baseline=True)
    try:
        v.propose(build_proposal(ws, parse_edits(answer.replace("x + x", "x * 2"))), final=True)
        assert v.wait_settled(Scope.ANSWER).tests.old_failures == [
            "tests/test_app.py::test_broken"]
    finally:
        v.close(wait=True)
    time.sleep(0.5)
    assert list(scratch_tmp.iterdir()) == []
    assert list(scratch_tmp.iterdir()) == []


SLOW = {
    "pyproject.toml": "[tool.pytest.ini_options]\n",
    "app.py": "VALUE = 1\n",
    "tests/test_slow.py": ("import time\n\nfrom app import VALUE\n\n\n"
                           "def test_slow():\n    time.sleep(30)\n    assert VALUE\n"),
}
EDIT = "app.py\n```python\n<<<<<<< SEARCH\nVALUE = 1\n=======\nVALUE = {n}\n>>>>>>> REPLACE\n```\n"


def _wait_running(v, scope=Scope.ANSWER, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if v.report(scope).tests.state is TestState.RUNNING:
            return
        time.sleep(0.02)
    raise AssertionError(f"never running: {v.report(scope).tests}")


def test_reject_cancels_the_run_and_close_leaves_nothing(tmp_path, make_tree, scratch_tmp):
    ws = Workspace(make_tree(tmp_path / "p", SLOW))
    v = _verifier(ws)
    v.propose(build_proposal(ws, parse_edits(EDIT.format(n=2))), final=True)
    _wait_running(v)
    started = time.perf_counter()
    v.cancel()  # the user rejected the answer: returns at once
    assert time.perf_counter() - started < 0.2
    assert v.report(Scope.ANSWER).tests.state is TestState.CANCELLED
    v.close(wait=True)
    assert list(scratch_tmp.iterdir()) == []


def test_a_replacing_answer_cancels_the_old_run(tmp_path, make_tree, scratch_tmp):
    ws = Workspace(make_tree(tmp_path / "p", {**SLOW, "tests/test_fast.py":
                                              "from app import VALUE\n\n\ndef test_v():\n"
                                              "    assert VALUE == 3\n"}))
    v = _verifier(ws)
    try:
        first = build_proposal(ws, parse_edits(EDIT.format(n=2)))
        v.propose(first, final=True)
        _wait_running(v)
        t0 = time.perf_counter()
        # the same tests would take 30 s; the replacement reports long before that
        v.propose(build_proposal(ws, parse_edits(EDIT.format(n=3) + "\ntests/test_slow.py\n"
                                                 "```python\n<<<<<<< SEARCH\n    time.sleep(30)"
                                                 "\n=======\n    time.sleep(0)\n>>>>>>> REPLACE"
                                                 "\n```\n")), final=True)
        rep = v.wait_settled(Scope.ANSWER, timeout=25)
        assert rep.tests.state is TestState.PASSED, rep.tests
        assert time.perf_counter() - t0 < 25
    finally:
        v.close(wait=True)
    assert list(scratch_tmp.iterdir()) == []


def test_checks_run_while_streaming_and_tests_only_at_the_end(demo, monkeypatch):
    answer = recording("overdue-days")["answer"]
    half = build_proposal(demo, parse_edits(answer[: len(answer) // 2]))
    v = _verifier(demo)
    try:
        v.propose(half, final=False)
        deadline = time.monotonic() + 10
        while v.report(Scope.ANSWER).problems is None and time.monotonic() < deadline:
            time.sleep(0.01)
        rep = v.report(Scope.ANSWER)
        assert rep.problems is not None  # checked before the last token
        assert rep.tests.state is TestState.WAITING  # but no test run yet
    finally:
        v.close(wait=True)


def test_tests_off_by_env_still_checks(demo, monkeypatch):
    monkeypatch.setenv("SPARK_VERIFY_TESTS", "0")
    proposal = build_proposal(demo, parse_edits(recording("overdue-days")["answer"]))
    v = Verifier(demo, baseline=BaselineCache())
    try:
        v.propose(proposal, final=True)
        rep = v.wait_settled(Scope.ANSWER)
    finally:
        v.close(wait=True)
    assert rep.problems == [] and rep.tests.state is TestState.OFF
