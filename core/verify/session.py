"""The app's one handle on verification: which answer is verified, what the panel shows,
whether to send failures back, and what to ask before writing a subset.

Why a separate object: the app has several places where an answer starts, changes, is
decided, rejected or replaced; each calls one method here, and the rules (one verifier per
answer, the previous one closed and its shadow removed, the fix loop's rounds per request,
auto-fix only for a fast profile) live in core, not in the screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from core.edits.proposal import Proposal
from core.verify import VerifyError
from core.verify.checks import warm_up
from core.verify.detect import VerifySettings, read_settings
from core.verify.fixloop import FixLoop, Step
from core.verify.verifier import Scope, ScopeReport, Verifier
from core.workspace.files import Workspace


class RunLike(Protocol):
    """What verification reads of an answer (core.answer.AnswerRun has all of it)."""

    request_id: str
    profile: str
    finished: bool

    @property
    def proposal(self) -> Proposal | None: ...

    @property
    def chosen(self) -> set[str]: ...


class VerifySession:
    """One per app: see the module docstring.  Every method returns at once."""

    def __init__(self, ws: Workspace, *, settings: VerifySettings | None = None,
                 on_change: Callable[[], None] | None = None,
                 fast_profiles: tuple[str, ...] = ("spark",),
                 run_tests: bool | None = None) -> None:
        self.ws = ws
        warm_up()  # the app's thread, before any worker: see checks.warm_up
        try:
            self.settings = settings or read_settings(ws.root)
            self.problem = ""
        except VerifyError as exc:  # a bad [verify] table: checks only, and say why
            self.settings = VerifySettings(enabled=False)
            self.problem = str(exc)
        self.on_change = on_change
        self.fast_profiles = fast_profiles
        self.run_tests = run_tests
        self.verifier: Verifier | None = None
        self.run_id: str | None = None
        self.loop: FixLoop | None = None
        self._proposal_seen: tuple[int, bool] | None = None
        self._closed: list[Verifier] = []
        # the badges of the answer's last finished check, by hunk id (see badges)
        self._answer_badges: dict[str, list] | None = None

    # -- answer lifecycle ------------------------------------------------------------------
    def answer_started(self, run: RunLike, *, fix_round: bool = False) -> None:
        """A new answer is on screen: the previous one's verification stops and its shadow
        goes.  A fix round keeps the request's fix loop (its rounds count); any other
        answer starts a new one."""
        self._drop()
        self.verifier = Verifier(self.ws, settings=self.settings, run_tests=self.run_tests,
                                 on_change=self._changed)
        self.run_id = run.request_id
        if not fix_round or self.loop is None:
            self.loop = FixLoop(max_rounds=self.settings.max_rounds)

    def proposal_changed(self, run: RunLike) -> None:
        """The answer's proposal was rebuilt (while streaming, or at the end)."""
        if self.verifier is None or run.request_id != self.run_id or run.proposal is None:
            return
        seen = (id(run.proposal), run.finished)
        if seen == self._proposal_seen:
            return  # the same proposal again: verifying it twice would restart the tests
        self._proposal_seen = seen
        self.verifier.propose(run.proposal, final=run.finished)

    def edits_arriving(self, run: RunLike) -> None:
        """A block of the streaming answer completed: its proposal is about to change, so
        the one checked only once the stream pauses (see Verifier.edits_arriving) waits."""
        if self.verifier is not None and run.request_id == self.run_id and not run.finished:
            self.verifier.edits_arriving()

    def stream_ended(self, run: RunLike) -> None:
        """The answer's last token came; its final proposal follows (see Verifier.hold)."""
        if self.verifier is not None and run.request_id == self.run_id:
            self.verifier.hold()

    def decisions_changed(self, run: RunLike) -> None:
        if self.verifier is not None and run.request_id == self.run_id and run.finished:
            self.verifier.decisions(set(run.chosen))

    def answer_dropped(self) -> None:
        """Rejected, cancelled or written: stop the runs, keep the reports on screen."""
        if self.verifier is not None:
            self.verifier.cancel()

    def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        if self.verifier is not None:
            self.verifier.close()
            self._closed.append(self.verifier)
        self.verifier, self.run_id, self._proposal_seen = None, None, None
        self._answer_badges = None

    def wait_closed(self, timeout: float = 10.0) -> None:
        """Block until every closed verifier has removed its shadow (app exit, tests)."""
        for v in self._closed:
            v.close(wait=True, timeout=timeout)
        self._closed = []

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # -- what the screen shows ---------------------------------------------------------------
    def reports(self) -> tuple[ScopeReport | None, ScopeReport | None]:
        if self.verifier is None:
            return None, None
        return self.verifier.report(Scope.ANSWER), self.verifier.report(Scope.ACCEPTED)

    def badges(self) -> dict[str, str]:
        """hunk id -> "[F821] [syntax]" for the diff view: the whole answer's new problems,
        and those the accepted subset alone has (an accepted use whose import is not)."""
        answer, accepted = self.reports()
        codes: dict[str, list[str]] = {}
        if answer is not None and answer.problems is None and self._answer_badges is not None:
            # the proposal was just rebuilt and its check has not landed (tens of ms): its
            # hunks that the last check saw keep their badges until then, instead of every
            # badge going and coming back (each time a repaint of every hunk, twice per
            # rebuild while an answer streams)
            answer = replace(answer, problems=[], badges={
                hid: problems for hid, problems in self._answer_badges.items() if hid in answer.hunks})
        elif answer is not None and answer.problems is not None:
            self._answer_badges = answer.badges
        for rep in (answer, accepted):
            if rep is None or rep.problems is None:
                continue
            for hid, problems in rep.badges.items():
                if hid:
                    codes.setdefault(hid, []).extend(p.code for p in problems)
        return {hid: " ".join(f"[{c}]" for c in list(dict.fromkeys(cs))[:3])
                for hid, cs in codes.items() if cs}

    # -- sending failures back --------------------------------------------------------------
    def fix_request(self, *, scope: Scope = Scope.ANSWER) -> str | None:
        """The next request (trimmed failures) when the answer broke something and the
        loop allows another round; None otherwise.  Counts the round."""
        if self.verifier is None or self.loop is None:
            return None
        report = self.verifier.report(scope)
        if self.loop.step(report) is not Step.FIX:
            return None
        return self.loop.sent(report)

    def auto_fix(self, run: RunLike) -> str | None:
        """With a fast profile the loop runs by itself: the fix request once this answer's
        verification (with tests on) has settled broken and rounds remain, else None."""
        if run.profile not in self.fast_profiles or run.request_id != self.run_id:
            return None
        if self.verifier is None or not self.verifier.run_tests:
            return None  # tests off: check problems go back on the key only
        return self.fix_request()

    def loop_status(self) -> str:
        """A line for the panel: where the fix loop stands."""
        if self.verifier is None or self.loop is None:
            return ""
        step = self.loop.step(self.verifier.report(Scope.ANSWER))
        if self.loop.rounds == 0 and step is not Step.GREEN:
            return ""
        rounds = f"fix round {self.loop.rounds}/{self.loop.max_rounds}"
        words = {Step.GREEN: "green", Step.LIMIT: "round limit reached", Step.STUCK:
                 "same failures again: stopped", Step.WAIT: "verifying…", Step.FIX: "still failing"}
        return f"{rounds}: {words[step]}" if self.loop.rounds else ""

    # -- before writing ----------------------------------------------------------------------
    def subset_warning(self, run: RunLike) -> str | None:
        """The one question before writing a subset that breaks what the whole answer
        passed (checks or tests); None when nothing to ask or already asked."""
        if self.verifier is None or run.request_id != self.run_id:
            return None
        return self.verifier.accept_warning(set(run.chosen))
