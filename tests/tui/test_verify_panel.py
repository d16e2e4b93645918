"""The verify panel draws the verifier's reports: states, failures, subset, the fix key."""

from __future__ import annotations

from textual.app import App

from core.verify.checks import Problem
from core.verify.runner import TestResult
from core.verify.verifier import Scope, ScopeReport, TestsReport, TestState
from tui.widgets.verify_panel import VerifyPanel, hunk_badge, render_verify

F821 = Problem("invoicer/report.py", 12, "F821", "Undefined name `days_between`")
FAIL = TestResult("tests/test_dates.py::test_to_date_accepts_customer_formats[01/03/2024]",
                  "failed", "E assert ...")


def _scope(scope=Scope.ANSWER, problems=(), state=TestState.PASSED, failures=(), **kw):
    return ScopeReport(scope, frozenset({"a", "b"} if scope is Scope.ANSWER else {"a"}),
                       problems=list(problems), badges={"a": list(problems)} if problems else {},
                       checks_ms=12.0, tests=TestsReport(state, command="pytest tests/test_dates.py",
                                                         new_failures=list(failures), **kw))


def test_clean_answer_shows_pass_and_no_fix_key():
    text = render_verify(_scope(duration_s=1.2, done=8)).plain
    assert "✓ clean" in text and "✓ pass" in text and "8 test(s), 1.2 s" in text
    assert "send the failures back" not in text


def test_failures_and_problems_are_named_with_the_fix_key():
    rep = _scope(problems=[F821], state=TestState.FAILED, failures=[FAIL],
                 note="1 test(s) already failing before the change")
    text = render_verify(rep, fix_key="ctrl+f").plain
    assert "invoicer/report.py:12 F821" in text
    assert "test_to_date_accepts_customer_formats[01/03/2024]" in text
    assert "already failing" in text
    assert "ctrl+f send the failures back" in text
    assert hunk_badge(rep, "a") == "[F821]" and hunk_badge(rep, "b") == ""


def test_running_progress_and_the_accepted_subset():
    whole = _scope(state=TestState.RUNNING, done=3, failed=1, last_line="tests/x.py::t PASSED")
    sub = _scope(Scope.ACCEPTED, problems=[F821], state=TestState.WAITING)
    text = render_verify(whole, sub).plain
    assert "running  3 done, 1 failed" in text
    assert "Accepted (1 hunk(s))" in text and "F821" in text


def test_no_answer_and_tests_off():
    assert "no answer" in render_verify(None).plain
    assert "tests  off" in render_verify(_scope(state=TestState.OFF)).plain


async def test_panel_mounts_and_updates():
    class Host(App):
        def compose(self):
            yield VerifyPanel(id="verify")

    app = Host()
    async with app.run_test() as pilot:
        panel = app.query_one(VerifyPanel)
        panel.show(_scope(state=TestState.FAILED, failures=[FAIL]))
        await pilot.pause()
        assert panel.answer is not None
        assert "FAIL" in str(panel.render())
