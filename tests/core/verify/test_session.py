"""The app's handle: one verifier per answer, the fix loop per request, badges, warnings."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.demo import write_demo
from core.edits.parser import parse_edits
from core.edits.proposal import Proposal, build_proposal
from core.verify.fixloop import layered_proposal
from core.verify.session import VerifySession
from core.verify.verifier import Scope, TestState
from core.workspace.files import Workspace

CASSETTE = Path(__file__).resolve().parents[3] / "core" / "cassettes" / "verify.jsonl"


@dataclass
class Run:
    request_id: str
    profile: str = "spark"
    finished: bool = False
    proposal: Proposal | None = None
    chosen: set[str] = field(default_factory=set)


def _answers() -> dict[str, str]:
    return {r["id"]: r["answer"] for r in map(json.loads, CASSETTE.read_text().splitlines())}


def _settle(session, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer, _ = session.reports()
        if answer is not None and answer.settled and not answer.tests.blaming:
            return answer
        time.sleep(0.05)
    raise AssertionError(session.reports())


def test_fast_profile_loop_runs_to_green_and_each_answer_gets_its_own_verifier(tmp_path,
                                                                            scratch_tmp):
    ws = Workspace(write_demo(tmp_path / "demo"))
    answers = _answers()
    changes = []
    session = VerifySession(ws, run_tests=True, on_change=lambda: changes.append(1))
    try:
        first = Run("r1")
        session.answer_started(first)
        first.proposal = build_proposal(ws, parse_edits(answers["us-dates"][:200]))
        session.proposal_changed(first)  # while streaming: checks only
        first.proposal, first.finished = build_proposal(ws, parse_edits(answers["us-dates"])), True
        session.proposal_changed(first)
        session.proposal_changed(first)  # the same proposal again does not restart the run
        rep = _settle(session)
        assert rep.tests.state is TestState.FAILED
        prompt = session.auto_fix(first)
        assert prompt is not None and "01/03/2024" in prompt
        assert session.auto_fix(Run("r1", profile="base")) is None  # not a fast profile
        verifier_one = session.verifier
        fix = Run("r2", finished=True)
        session.answer_started(fix, fix_round=True)
        assert session.verifier is not verifier_one
        fix.proposal = layered_proposal(ws, first.proposal, parse_edits(answers["us-dates-fix"]))
        session.proposal_changed(fix)
        assert _settle(session).tests.state is TestState.PASSED
        assert session.auto_fix(fix) is None  # green: the loop stops
        assert session.loop is not None and session.loop.rounds == 1
        assert "fix round 1/3: green" in session.loop_status()
        assert changes
    finally:
        session.close()
        session.wait_closed()
    assert list(scratch_tmp.iterdir()) == []


def test_subset_warning_and_badges(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "m.py").write_text("import os\n\n\ndef cwd():\n    return os.getcwd()\n")
    ws = Workspace(root)
    session = VerifySession(ws, run_tests=False)
    try:
        run = Run("r1", finished=True)
        session.answer_started(run)
        run.proposal = build_proposal(ws, parse_edits(
            "m.py\n```python\n<<<<<<< SEARCH\nimport os\n=======\nimport json\nimport os\n"
            ">>>>>>> REPLACE\n```\n\nm.py\n```python\n<<<<<<< SEARCH\n    return os.getcwd()\n"
            "=======\n    return json.dumps(os.getcwd())\n>>>>>>> REPLACE\n```\n"))
        session.proposal_changed(run)
        rep = _settle(session)
        assert rep.problems == [] and session.badges() == {}
        use = next(h.id for h in run.proposal.hunks if "json.dumps" in "".join(h.new_lines))
        run.chosen = {use}
        session.decisions_changed(run)
        warning = session.subset_warning(run)
        assert warning is not None and "F821" in warning
        assert session.subset_warning(run) is None  # asked once
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            _, sub = session.reports()
            if sub is not None and sub.settled and sub.hunks == {use}:
                break
            time.sleep(0.02)
        assert sub is not None and [p.code for p in sub.problems or []] == ["F821"]
        assert session.verifier is not None
        assert session.verifier.report(Scope.ACCEPTED).badges
        assert session.badges() == {use: "[F821]"}  # on the accepted use, as it is decided
    finally:
        session.close()
        session.wait_closed()


def test_a_bad_verify_table_turns_tests_off_and_says_why(tmp_path):
    (tmp_path / ".spark.toml").write_text("[verify]\ntimeout = 3\n")
    session = VerifySession(Workspace(tmp_path))
    assert "unknown field 'timeout'" in session.problem
    assert session.settings.enabled is False
