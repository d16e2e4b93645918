"""Verify a proposal while the user reads it: quick checks, then the project's tests, for
the whole answer and then for the subset the user has accepted so far.

Why one worker thread per answer: checks and tests must never block the UI; a newer
proposal (the stream went on, or a new answer replaced it) or a newer subset supersedes
the work in flight, which is cancelled, and only the latest state is verified.  The UI
calls `propose`, `decisions`, `cancel` and `close` from its own thread (none of them
waits) and reads `report(scope)` when told something changed (`on_change`, called from
the worker: the app hops to its own thread with `call_from_thread`).

Only NEW problems are blamed: quick checks compare with the original texts; failing tests
are run once more on the unchanged tree (cached per commit, see `baseline`) and a test
that fails there too is listed as "already failing", not as the proposal's fault.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

from core.edits.proposal import Proposal
from core.verify import VerifyError
from core.verify.baseline import BaselineCache, tree_key
from core.verify.checks import (
    Problem,
    check_texts,
    new_problems,
    problems_by_hunk,
    warm_up,
)
from core.verify.detect import TestCommand, VerifySettings, available, detect, read_settings
from core.verify.runner import Outcome, Progress, RunResult, TestResult, TestRun
from core.verify.select import Selection, changed_names, select_tests
from core.verify.shadow import ShadowTree
from core.workspace.files import Workspace

log = logging.getLogger(__name__)
TESTS_ENV = "SPARK_VERIFY_TESTS"  # "0": quick checks only (the app's own UI tests set it)
DEBOUNCE_S = 0.3  # decisions come in bursts; verify the subset once they pause
# While an answer streams its proposal is rebuilt every few hundred ms, each rebuild
# changing most files of a long answer: checking each one (a parse and a ruff run per
# file) took the GIL and CPU the stream, the review and the keys need, for reports
# replaced before anyone read them. A streaming proposal is checked once it stayed the
# same this long and no block completed meanwhile (`edits_arriving`: at 5,000 tok/s the
# rebuilds lag the stream by hundreds of ms, so a proposal "stayed the same" 0.4 s in the
# middle of a 1 s stream, and its parses held the GIL ~30 ms each while keys waited); the
# final one at once.
STREAM_QUIET_S = 0.4
PROGRESS_EVERY_S = 0.1  # at most this often a progress line reaches the UI


class Scope(Enum):
    ANSWER = "answer"  # every hunk of the answer
    ACCEPTED = "accepted"  # the hunks accepted so far


class TestState(Enum):
    __test__ = False
    OFF = "off"  # tests disabled (setting, env) or no test command
    WAITING = "waiting"  # the answer is still streaming, or a newer subset is debouncing
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"  # nothing relevant to run (prose only, empty subset)
    ERROR = "error"  # the command could not run


@dataclass
class TestsReport:
    """The project's tests on one scope."""

    __test__ = False

    state: TestState = TestState.WAITING
    command: str = ""
    selection: str = ""
    done: int = 0
    failed: int = 0
    last_line: str = ""
    new_failures: list[TestResult] = field(default_factory=list)
    old_failures: list[str] = field(default_factory=list)  # failing before the change too
    duration_s: float = 0.0
    note: str = ""
    blaming: bool = False  # failures shown, the run on the unchanged tree still going
    first_result_at: float | None = None  # perf_counter: pass/fail first known
    finished_at: float | None = None  # perf_counter: new failures told from old ones

    @property
    def broken(self) -> bool:
        return self.state in (TestState.FAILED, TestState.TIMEOUT) and (
            bool(self.new_failures) or self.state is TestState.TIMEOUT)


@dataclass
class ScopeReport:
    """Checks and tests of one scope (the whole answer, or the accepted subset)."""

    scope: Scope
    hunks: frozenset[str] = frozenset()
    problems: list[Problem] | None = None  # None: not checked yet
    badges: dict[str, list[Problem]] = field(default_factory=dict)
    checks_ms: float = 0.0
    checks_at: float | None = None  # perf_counter when the checks finished
    tests: TestsReport = field(default_factory=TestsReport)

    @property
    def broken(self) -> bool:
        return bool(self.problems) or self.tests.broken

    @property
    def settled(self) -> bool:
        """Checks done and tests finished (or not run at all)."""
        return self.problems is not None and self.tests.state not in (
            TestState.WAITING, TestState.RUNNING)

    def failure_names(self) -> list[str]:
        names = [p.short() for p in self.problems or []]
        names += [t.id for t in self.tests.new_failures]
        if self.tests.state is TestState.TIMEOUT:
            names.append(f"tests timed out ({self.tests.note})")
        return names


def tests_enabled_by_env() -> bool:
    return os.environ.get(TESTS_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class Verifier:
    """Checks and tests for one answer's proposal; see the module docstring."""

    def __init__(self, ws: Workspace, *, settings: VerifySettings | None = None,
                 run_tests: bool | None = None, on_change: Callable[[], None] | None = None,
                 baseline: BaselineCache | None = None, debounce_s: float = DEBOUNCE_S,
                 parallel_baseline: bool | None = None, stream_quiet_s: float = STREAM_QUIET_S) -> None:
        self.ws = ws
        self.settings = settings or read_settings(ws.root)
        self.run_tests = (self.settings.enabled and tests_enabled_by_env()
                          if run_tests is None else run_tests)
        self.on_change = on_change
        self.baseline = baseline if baseline is not None else BaselineCache.shared()
        self.debounce_s = debounce_s
        self.stream_quiet_s = stream_quiet_s
        # the unchanged tree's run beside the proposal's, where cores are to spare
        self.parallel_baseline = ((os.cpu_count() or 1) >= 4 if parallel_baseline is None
                                  else parallel_baseline)
        self._lock = threading.Condition()
        self._reports = {Scope.ANSWER: ScopeReport(Scope.ANSWER),
                         Scope.ACCEPTED: ScopeReport(Scope.ACCEPTED)}
        self._proposal: Proposal | None = None
        self._final = False
        self._answer_gen = 0  # bumped by every propose
        self._proposed_at = 0.0  # perf_counter of the last propose
        self._held = False  # the stream ended: check nothing until the final proposal
        self._answer_done_gen = -1  # the gen whose answer-scope work has completed
        self._accepted: frozenset[str] | None = None
        self._accepted_at = 0.0
        self._subset_done: tuple[int, frozenset[str]] | None = None
        self._run: TestRun | None = None
        self._run_scope: Scope | None = None
        self._closed = False
        self._shadow: ShadowTree | None = None
        self._cmd: TestCommand | None | bool = False  # False: not detected yet
        self._before: dict[tuple[str, str], list[Problem]] = {}
        self._warned: set[frozenset[str]] = set()
        self.final_at: float | None = None  # perf_counter of the last token (propose final)
        warm_up()  # before the worker exists: see checks.warm_up
        self._thread = threading.Thread(target=self._work, name="spark-verify", daemon=True)
        self._thread.start()

    # -- the UI thread's side ----------------------------------------------------------------
    def propose(self, proposal: Proposal, *, final: bool) -> None:
        """A (re)built proposal; `final` once the answer has ended.  Supersedes all work."""
        with self._lock:
            self._proposal = proposal
            self._final = final
            self._answer_gen += 1
            self._proposed_at = time.perf_counter()
            self._held = False
            if final:
                self.final_at = time.perf_counter()
            self._reports[Scope.ANSWER] = ScopeReport(
                Scope.ANSWER, frozenset(h.id for h in proposal.hunks),
                tests=TestsReport(TestState.WAITING if self.run_tests else TestState.OFF))
            self._subset_done = None
            run = self._run
            self._lock.notify_all()
        if run is not None:
            run.cancel()

    def edits_arriving(self) -> None:
        """A block of the answer completed (it is not in the proposal yet): the proposal
        now is about to be replaced, so the quiet period before checking it starts again.
        Cheap (a lock and a clock read): called once per completed block."""
        with self._lock:
            if not self._final:
                self._proposed_at = time.perf_counter()

    def hold(self) -> None:
        """The answer's stream ended and its final proposal follows (the app proposes it once
        it is reviewed): the last streaming proposal is not checked meanwhile (its quiet
        period would elapse just then, for a report replaced a moment later). No effect
        once the final proposal is in."""
        with self._lock:
            if not self._final:
                self._held = True

    def decisions(self, accepted: set[str]) -> None:
        """The accepted hunk ids changed; the subset is verified once decisions pause."""
        key = frozenset(accepted)
        with self._lock:
            if key == self._accepted:
                return
            self._accepted = key
            self._accepted_at = time.perf_counter()
            rep = self._reports[Scope.ACCEPTED]
            if rep.hunks != key:
                self._reports[Scope.ACCEPTED] = ScopeReport(
                    Scope.ACCEPTED, key,
                    tests=TestsReport(TestState.WAITING if self.run_tests else TestState.OFF))
            run = self._run if self._run_scope is Scope.ACCEPTED else None
            self._lock.notify_all()
        if run is not None:
            run.cancel()

    def cancel(self) -> None:
        """The answer was rejected: stop everything in flight, verify nothing more."""
        with self._lock:
            self._proposal = None
            self._accepted = None
            run = self._run
            for rep in self._reports.values():
                if rep.tests.state in (TestState.WAITING, TestState.RUNNING):
                    rep.tests.state = TestState.CANCELLED
            self._lock.notify_all()
        if run is not None:
            run.cancel()

    def close(self, *, wait: bool = False, timeout: float = 10.0) -> None:
        """Stop and remove the shadow copy (in the worker; `wait` to block until gone)."""
        self.cancel()
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        if wait:
            self._thread.join(timeout)

    def report(self, scope: Scope) -> ScopeReport:
        """A copy of the current report for a scope, safe to read in the UI thread."""
        with self._lock:
            rep = self._reports[scope]
            return replace(rep, badges=dict(rep.badges),
                           problems=None if rep.problems is None else list(rep.problems),
                           tests=replace(rep.tests, new_failures=list(rep.tests.new_failures),
                                         old_failures=list(rep.tests.old_failures)))

    def wait_settled(self, scope: Scope, timeout: float = 60.0) -> ScopeReport:
        """Block until the scope's checks and tests are done (tests and the bench)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self._reports[scope].settled and time.monotonic() < deadline:
                self._lock.wait(0.05)
        return self.report(scope)

    def accept_warning(self, accepted: set[str]) -> str | None:
        """The one question before writing a subset that breaks what the whole answer
        passed: a message naming the failure, once per subset; None when nothing to ask."""
        key = frozenset(accepted)
        with self._lock:
            whole = self._reports[Scope.ANSWER]
            sub = self._reports[Scope.ACCEPTED]
            proposal = self._proposal
        if proposal is None or not key or key == whole.hunks or key in self._warned:
            return None
        if whole.problems is None or whole.broken:
            return None  # the whole answer did not pass: nothing it passed to break
        if sub.hunks == key and sub.problems is not None:
            names = sub.failure_names()
        else:  # not verified yet (accept came within the debounce): checks take ms
            names = [p.short() for p in self._check(proposal, key)[0]]
        if not names:
            return None
        self._warned.add(key)
        more = f" (+{len(names) - 1} more)" if len(names) > 1 else ""
        return (f"The whole answer passed, but the accepted hunks alone fail: {names[0]}{more}. "
                f"Write them anyway?")

    # -- the worker ------------------------------------------------------------------------
    def _changed(self) -> None:
        with self._lock:
            self._lock.notify_all()
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # a closed app must not kill the worker
                log.debug("verify: on_change failed", exc_info=True)

    def _work(self) -> None:
        try:
            while True:
                job = self._next_job()
                if job is None:
                    return
                try:
                    job()
                except VerifyError as exc:
                    self._fail_tests(str(exc))
                except Exception as exc:  # a bug here must not end verification for good
                    log.exception("verify: job failed")
                    self._fail_tests(f"verification failed: {exc!r}")
                    with self._lock:
                        for rep in self._reports.values():
                            if rep.problems is None:
                                rep.problems = []  # settled: the note says what went wrong
                        self._answer_done_gen = self._answer_gen
                        self._subset_done = (self._answer_gen, self._accepted or frozenset())
        finally:
            if self._shadow is not None:
                self._shadow.close()
                atexit.unregister(self._shadow.close)
                self._shadow = None

    def _next_job(self) -> Callable[[], None] | None:
        with self._lock:
            while True:
                if self._closed:
                    return None
                gen, proposal = self._answer_gen, self._proposal
                if proposal is not None and self._answer_done_gen != gen and not self._held:
                    final = self._final
                    quiet = self._proposed_at + self.stream_quiet_s - time.perf_counter()
                    if not final and quiet > 0:  # still streaming: see STREAM_QUIET_S
                        if self._unchecked_originals(proposal):  # these do not change: now
                            return lambda: self._check_originals(proposal)
                        self._lock.wait(quiet)
                        continue
                    return lambda: self._verify_answer(gen, proposal, final)
                acc = self._accepted
                if proposal is not None and acc is not None and self._final and \
                        self._subset_done != (gen, acc):
                    wait = self._accepted_at + self.debounce_s - time.perf_counter()
                    if wait <= 0:
                        return lambda: self._verify_subset(gen, proposal, acc)
                    self._lock.wait(wait)
                    continue
                self._lock.wait(1.0)

    def _current(self, gen: int) -> bool:
        return self._answer_gen == gen and not self._closed and self._proposal is not None

    def _unchecked_originals(self, proposal: Proposal) -> bool:
        return any(not fp.is_new and (fp.path, fp.base_fingerprint) not in self._before
                   for fp in proposal.files)

    def _check_originals(self, proposal: Proposal) -> None:
        """The problems the edited files had before the answer, checked as soon as a file
        appears in the proposal (while the answer streams): the last token is then
        followed by the check of the new texts only."""
        todo = [fp for fp in proposal.files
                if not fp.is_new and (fp.path, fp.base_fingerprint) not in self._before]
        found = check_texts([(fp.path, fp.old_text) for fp in todo])
        for fp, problems in zip(todo, found, strict=True):
            self._before[(fp.path, fp.base_fingerprint)] = problems

    def _check(self, proposal: Proposal, accepted: frozenset[str] | None
               ) -> tuple[list[Problem], dict[str, list[Problem]], dict[str, str]]:
        """New problems, badges and the texts of the files the scope changes."""
        texts: dict[str, str] = {}
        need_before: list[tuple[str, str]] = []
        keys: list[tuple[str, str]] = []
        for fp in proposal.files:
            if accepted is not None and not any(h.id in accepted for h in fp.hunks):
                continue
            texts[fp.path] = fp.result_text(None if accepted is None else set(accepted))
            key = (fp.path, fp.base_fingerprint)
            keys.append(key)
            if key not in self._before:
                if fp.is_new:
                    self._before[key] = []
                else:
                    need_before.append((fp.path, fp.old_text))
        after_items = sorted(texts.items())
        # the original texts (first time only) and the proposed ones in one concurrent batch
        found = check_texts(need_before + after_items)
        for (path, _), problems in zip(need_before, found, strict=False):
            fp_key = next(k for k in keys if k[0] == path)
            self._before[fp_key] = problems
        befores = [p for key in keys for p in self._before[key]]
        after = [p for problems in found[len(need_before):] for p in problems]
        fresh = new_problems(befores, after)
        hunks = proposal.hunks
        badges = problems_by_hunk(fresh, hunks, None if accepted is None else set(accepted))
        return fresh, badges, texts

    def _verify_answer(self, gen: int, proposal: Proposal, final: bool) -> None:
        t0 = time.perf_counter()
        fresh, badges, texts = self._check(proposal, None)
        with self._lock:
            if not self._current(gen):
                return
            rep = self._reports[Scope.ANSWER]
            rep.problems, rep.badges = fresh, badges
            rep.checks_ms = (time.perf_counter() - t0) * 1000
            rep.checks_at = time.perf_counter()
            if not final:
                self._answer_done_gen = gen
        self._changed()
        if not final:
            self._prepare()
            return
        self._run_tests(gen, Scope.ANSWER, proposal, texts)
        with self._lock:
            if self._answer_gen == gen:
                self._answer_done_gen = gen
        self._changed()

    def _verify_subset(self, gen: int, proposal: Proposal, accepted: frozenset[str]) -> None:
        with self._lock:
            whole = self._reports[Scope.ANSWER]
            same = accepted == whole.hunks and whole.settled
            if same:  # the whole answer is accepted: its report is this subset's
                self._reports[Scope.ACCEPTED] = replace(whole, scope=Scope.ACCEPTED)
                self._subset_done = (gen, accepted)
        if same:
            self._changed()
            return
        t0 = time.perf_counter()
        fresh, badges, texts = self._check(proposal, accepted)
        with self._lock:
            if not self._current(gen) or self._accepted != accepted:
                return
            rep = self._reports[Scope.ACCEPTED]
            rep.problems, rep.badges = fresh, badges
            rep.checks_ms = (time.perf_counter() - t0) * 1000
            rep.checks_at = time.perf_counter()
        self._changed()
        if not accepted:
            self._set_tests(gen, Scope.ACCEPTED, state=TestState.SKIPPED,
                            note="nothing accepted")
        else:
            self._run_tests(gen, Scope.ACCEPTED, proposal, texts)
        with self._lock:
            if self._accepted == accepted:
                self._subset_done = (gen, accepted)
        self._changed()

    def _set_tests(self, gen: int, scope: Scope, **changes: object) -> None:
        with self._lock:
            if self._answer_gen != gen:
                return
            tests = self._reports[scope].tests
            for name, value in changes.items():
                setattr(tests, name, value)
        self._changed()

    def _fail_tests(self, why: str) -> None:
        with self._lock:
            for rep in self._reports.values():
                if rep.tests.state in (TestState.WAITING, TestState.RUNNING):
                    rep.tests.state, rep.tests.note = TestState.ERROR, why
        self._changed()

    def _prepare(self) -> None:
        """While the answer streams: find the test command and copy the tree now, so the
        last token is followed by the test run itself, not by set-up."""
        if not self.run_tests or self._command() is None:
            return
        self._shadow_root()

    def _shadow_root(self) -> Path:
        if self._shadow is None:
            self._shadow = ShadowTree(self.ws)
            atexit.register(self._shadow.close)
        return self._shadow.open()

    def _command(self) -> TestCommand | None:
        if self._cmd is False:
            cmd = detect(self.ws.root, self.settings)
            self._cmd = cmd if cmd is not None and available(cmd) else None
        return self._cmd if isinstance(self._cmd, TestCommand) else None

    def _run_tests(self, gen: int, scope: Scope, proposal: Proposal,
                   texts: dict[str, str]) -> None:
        if not self.run_tests:
            self._set_tests(gen, scope, state=TestState.OFF)
            return
        cmd = self._command()
        if cmd is None:
            self._set_tests(gen, scope, state=TestState.OFF, note="no test command found")
            return
        names: set[str] = set()
        for fp in proposal.files:
            if fp.path in texts and fp.path.endswith(".py"):
                names |= changed_names(fp.old_text, texts[fp.path])
        shadow_root = self._shadow_root()
        assert self._shadow is not None
        self._shadow.materialise(texts)
        selection = select_tests(shadow_root, texts, names=names, cap=self.settings.max_tests) \
            if cmd.selectable else Selection((), True, "the whole suite")
        if selection.nothing:
            self._set_tests(gen, scope, state=TestState.SKIPPED, selection=selection.reason)
            return
        if self.parallel_baseline and (selection.paths or not cmd.selectable):
            self.baseline.prefetch(tree_key(self.ws.root), cmd, selection.paths, self.ws,
                                   self.settings)
        result = self._run_once(gen, scope, cmd, shadow_root, selection)
        if result is None:
            return
        if result.outcome is Outcome.CANCELLED:
            self._set_tests(gen, scope, state=TestState.CANCELLED)
            return
        failing = [t for t in result.tests.values() if t.failed]
        if failing:  # show the failures now; which of them are new takes one more run
            self._set_tests(gen, scope, state=TestState.RUNNING, new_failures=failing,
                            blaming=True, first_result_at=time.perf_counter(),
                            note="checking which failures are new (same tests, unchanged "
                                 "tree)")
        new, old = self._blame(cmd, result)
        state = {Outcome.PASSED: TestState.PASSED, Outcome.TIMEOUT: TestState.TIMEOUT,
                 Outcome.NOT_RUN: TestState.SKIPPED}.get(result.outcome, TestState.FAILED)
        if state is TestState.FAILED and not new:
            state = TestState.PASSED  # only tests that failed before the change too
        self._set_tests(gen, scope, state=state, new_failures=new, old_failures=old,
                        duration_s=result.duration_s, note=result.note or
                        (f"{len(old)} test(s) already failing before the change" if old else ""),
                        finished_at=time.perf_counter(), blaming=False,
                        done=len(result.tests) or self._reports[scope].tests.done)
        with self._lock:
            t = self._reports[scope].tests
            if self._answer_gen == gen and t.first_result_at is None:
                t.first_result_at = t.finished_at

    def _run_once(self, gen: int, scope: Scope, cmd: TestCommand, cwd: Path,
                  selection: Selection) -> RunResult | None:
        last = [0.0]

        def progress(p: Progress) -> None:
            with self._lock:
                if self._answer_gen != gen:
                    return
                t = self._reports[scope].tests
                if p.test_id and p.outcome:
                    t.done += 1
                    t.failed += p.outcome in ("FAILED", "ERROR")
                if p.line.strip():
                    t.last_line = p.line[:200]
            now = time.perf_counter()
            if now - last[0] >= PROGRESS_EVERY_S:
                last[0] = now
                self._changed()

        run = TestRun(cmd, cwd, tests=selection.paths, timeout_s=self.settings.timeout_s,
                      memory_mb=self.settings.memory_mb, on_progress=progress)
        with self._lock:
            if not self._current(gen) or (scope is Scope.ACCEPTED and self._accepted is None):
                return None
            self._run, self._run_scope = run, scope
            t = self._reports[scope].tests
            t.state, t.command = TestState.RUNNING, cmd.short(selection.paths)
            t.selection = selection.reason + (f" ({selection.left_out} over the cap left "
                                              f"out)" if selection.left_out else "")
            t.done = t.failed = 0
        self._changed()
        try:
            return run.run()
        finally:
            with self._lock:
                if self._run is run:
                    self._run, self._run_scope = None, None

    def _blame(self, cmd: TestCommand, result: RunResult
               ) -> tuple[list[TestResult], list[str]]:
        """(failures the proposal caused, ids that fail on the unchanged tree too)."""
        failing = [t for t in result.tests.values() if t.failed]
        if not failing:
            return [], []
        assert self._shadow is not None and self._shadow.path is not None
        key = tree_key(self.ws.root)

        def started(run: TestRun) -> None:  # so that cancel() reaches the baseline run too
            with self._lock:
                self._run = run

        base = self.baseline.outcomes(key, cmd, [t.id for t in failing], self._shadow,
                                      self.settings, started)
        with self._lock:
            self._run = None
        new = [t for t in failing if base.get(t.id) != "failed"]
        old = [t.id for t in failing if base.get(t.id) == "failed"]
        return new, old
