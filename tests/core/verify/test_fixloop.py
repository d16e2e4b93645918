"""Sending failures back: the demo's answer -> tests -> fix loop ends green."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.backends.replay import PACKAGE_CASSETTES, CassetteLibrary
from core.demo import write_demo
from core.edits.parser import parse_edits
from core.edits.proposal import apply_proposal, build_proposal
from core.verify.baseline import BaselineCache
from core.verify.fixloop import FixLoop, OverlayWorkspace, Step, fix_prompt, layered_proposal
from core.verify.runner import TestResult
from core.verify.verifier import Scope, ScopeReport, TestsReport, TestState, Verifier
from core.workspace.files import Workspace, WorkspaceError


def _library() -> CassetteLibrary:
    return CassetteLibrary.load([PACKAGE_CASSETTES])


def _answer(messages: list[dict]) -> str:
    cassette, _ = _library().match(messages)
    return cassette.answer


def test_the_demo_loop_fixes_the_us_dates_answer(tmp_path, scratch_tmp):
    ws = Workspace(write_demo(tmp_path / "demo"))
    request = [{"role": "user", "content": "Our US customers write dates as MM/DD/YYYY (like "
                                           "03/25/2024); make to_date accept US dates too"}]
    loop = FixLoop(max_rounds=3)
    v = Verifier(ws, run_tests=True, baseline=BaselineCache())
    try:
        answer = _answer(request)
        proposal = build_proposal(ws, parse_edits(answer))
        rounds = []
        while True:
            v.propose(proposal, final=True)
            rep = v.wait_settled(Scope.ANSWER, timeout=90)
            step = loop.step(rep)
            rounds.append((step, [t.id for t in rep.tests.new_failures]))
            if step is not Step.FIX:
                break
            prompt = loop.sent(rep)
            assert "01/03/2024" in prompt and "nothing has been written" in prompt
            request = [*request, {"role": "assistant", "content": answer},
                       {"role": "user", "content": prompt}]
            answer = _answer(request)  # the replayed model's next answer on the stream
            proposal = layered_proposal(ws, proposal, parse_edits(answer))
            assert proposal.errors == []
    finally:
        v.close(wait=True)
    assert [s for s, _ in rounds] == [Step.FIX, Step.GREEN]
    # nothing was written during the loop; accepting the last round writes the fixed change
    assert '"%d/%m/%Y", "%d.%m.%Y"' in (ws.root / "invoicer" / "dates.py").read_text()
    result = apply_proposal(ws, proposal, {h.id for h in proposal.hunks}, commit=False)
    assert not result.refused
    text = (ws.root / "invoicer" / "dates.py").read_text()
    assert '"%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y"' in text
    assert "test_to_date_accepts_us_dates" in (ws.root / "tests" / "test_dates.py").read_text()


def test_a_restated_fix_against_the_original_files_is_placed_there(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text("x = 1\ny = 2\n")
    ws = Workspace(root)
    first = build_proposal(ws, parse_edits(
        "a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 10\n>>>>>>> REPLACE\n```\n"))
    layered = layered_proposal(ws, first, parse_edits(
        "a.py\n```python\n<<<<<<< SEARCH\nx = 10\n=======\nx = 11\n>>>>>>> REPLACE\n```\n"))
    assert layered.files[0].new_text == "x = 11\ny = 2\n"
    assert layered.files[0].old_text == "x = 1\ny = 2\n"  # against the user's file
    restated = layered_proposal(ws, first, parse_edits(
        "a.py\n```python\n<<<<<<< SEARCH\nx = 1\ny = 2\n=======\nx = 12\ny = 2\n"
        ">>>>>>> REPLACE\n```\n"))
    assert restated.files[0].new_text == "x = 12\ny = 2\n"
    assert (root / "a.py").read_text() == "x = 1\ny = 2\n"


def test_the_overlay_is_read_only(tmp_path):
    (tmp_path / "a.py").write_text("a\n")
    ov = OverlayWorkspace(Workspace(tmp_path), {"a.py": "b\n"})
    assert ov.read_text("a.py") == "b\n"
    with pytest.raises(WorkspaceError):
        ov.write_text("a.py", "c\n")
    assert (tmp_path / "a.py").read_text() == "a\n"


def _report(state: TestState, failures: list[str]) -> ScopeReport:
    tests = TestsReport(state, command="pytest",
                        new_failures=[TestResult(f, "failed", "E  assert 1 == 2\n" * 50)
                                      for f in failures])
    return ScopeReport(Scope.ANSWER, problems=[], tests=tests)


def test_loop_stops_green_stuck_or_at_the_limit():
    loop = FixLoop(max_rounds=2)
    assert loop.step(_report(TestState.RUNNING, [])) is Step.WAIT
    assert loop.step(_report(TestState.PASSED, [])) is Step.GREEN
    assert loop.step(_report(TestState.FAILED, ["t::a"])) is Step.FIX
    loop.sent(_report(TestState.FAILED, ["t::a"]))
    assert loop.step(_report(TestState.FAILED, ["t::a"])) is Step.STUCK
    assert loop.step(_report(TestState.FAILED, ["t::b"])) is Step.FIX
    loop.sent(_report(TestState.FAILED, ["t::b"]))
    assert loop.step(_report(TestState.FAILED, ["t::c"])) is Step.LIMIT


def test_fix_prompt_is_trimmed():
    prompt = fix_prompt(_report(TestState.FAILED, [f"t::{i}" for i in range(9)]))
    assert "lines cut" in prompt and "+4 more failing tests" in prompt
    assert len(prompt.splitlines()) < 200


def test_recorded_fix_request_matches_what_the_loop_sends():
    """The us-dates-fix cassette answers the prompt fix_prompt builds for the demo."""
    rec = [json.loads(line) for line in
           (Path(PACKAGE_CASSETTES) / "verify.jsonl").read_text().splitlines()]
    fix = next(r for r in rec if r["id"] == "us-dates-fix")
    assert _library().match(fix["messages"])[0].id == "us-dates-fix"


def test_a_fix_run_reviews_and_writes_the_whole_corrected_change(tmp_path):
    from core.verify.fixloop import FixRun

    ws = Workspace(write_demo(tmp_path / "demo", git=False))
    recs = {r["id"]: r["answer"] for r in map(json.loads, (Path(PACKAGE_CASSETTES) / "verify.jsonl")
                                              .read_text().splitlines())}
    first = build_proposal(ws, parse_edits(recs["us-dates"]))
    run = FixRun(ws, "fix it", "spark", first)
    run.feed(recs["us-dates-fix"], 100)
    run.finish("stop")
    proposal = run.rebuild_proposal()
    assert proposal.errors == [] and run.undecided == [h.id for h in proposal.hunks]
    for hunk_id in run.undecided:
        run.decide(hunk_id, True)
    result = run.apply()
    assert not result.refused
    assert '"%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y"' in (ws.root / "invoicer" / "dates.py").read_text()
