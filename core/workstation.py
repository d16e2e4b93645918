"""The workstation: everything one `spark` session knows besides the screen.

A facade the UI calls without reaching into its parts: the workspace, the detectors and
guards, the conversation, the session record, the answers of the session and their hunk
states. The screen asks it to decide, write, undo and re-check, and draws what it returns.
Heavy calls (index build, review, write, undo) run in worker threads.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable, Collection
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.answer import AnswerRun, HunkState
from core.edits.hunks import Hunk
from core.edits.proposal import ApplyResult, FileProposal
from core.errors import SparkError
from core.indexing.service import DuplicateCheckUnavailable
from core.review import AcceptCheck, AcceptPolicy, Finding, Review, Verdict
from core.statement_checks import StatementChecks
from core.workspace.files import Workspace

if TYPE_CHECKING:
    from core.check_worker import CheckWorker
    from core.context.prompt import ContextReport
    from core.detectors.growth import GrowthMeter


CHILD_CHECK_WAIT_S = 5.0  # a duplicate check the check worker has not answered by then: here
WARM_CHECKS_AFTER_S = 3.0  # the longest the check worker's start waits for the indexes (build_indexes)
_MEMO_SERIALS = itertools.count()  # names the answers' memos (the check worker keeps twins of them)


class ReviewSuperseded(SparkError):
    """A review stopped between files because a newer rebuild of the answer is waiting
    (its caller reviews again; files already reviewed stay memoized)."""


def _new_ranges(file_proposal: FileProposal) -> list[tuple[str, int, int]]:
    """(hunk id, first new line, line count) for each hunk of one file, in the new text."""
    offset = 0
    ranges = []
    for hunk in file_proposal.hunks:
        start = hunk.old_start + offset
        ranges.append((hunk.id, start, len(hunk.new_lines)))
        offset += len(hunk.new_lines) - len(hunk.old_lines)
    return ranges


def _added_lines(ranges: list[tuple[str, int, int]]) -> list[int]:
    """The new text's line numbers the hunks put there (their new lines), in order."""
    return [start + i for _, start, count in ranges for i in range(count)]


def _child_answer(worker: CheckWorker, job: Future) -> list | None:
    """A duplicate check's answer from the check worker's child; None when it failed, was
    dropped or did not come within CHILD_CHECK_WAIT_S (then it is dropped there): the
    caller checks in this process."""
    from core.check_worker import CheckWorkerError

    try:
        return list(job.result(timeout=CHILD_CHECK_WAIT_S))
    except (CheckWorkerError, CancelledError, TimeoutError) as exc:
        if isinstance(exc, TimeoutError):
            worker.drop([job])
        return None


def _dropped(future: Future) -> bool:
    """Whether a check was dropped (cancelled before it ran, or by its child job's drop)."""
    if future.cancelled():
        return True
    return future.done() and isinstance(future.exception(), CancelledError)


def _hunk_at(ranges: list[tuple[str, int, int]], line: int) -> str | None:
    for hid, start, count in ranges:
        if start <= line < start + max(count, 1):
            return hid
    return None


@dataclass
class Decision:
    """What one key did: the hunks it decided, and the one the policy held (and why)."""

    decided: list[str] = field(default_factory=list)
    held: AcceptCheck | None = None
    held_id: str | None = None


@dataclass
class UndoOutcome:
    """What an undo did, in words the screen can show exactly."""

    found: bool  # there was a change to undo
    restored: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    commit: str | None = None
    run: AnswerRun | None = None  # the answer whose hunks went back to undecided
    hunks: list[str] = field(default_factory=list)


class Workstation:
    """The session's state behind the screen: workspace, detectors, guards, counters.

    The app calls these methods from worker threads where they are heavy (index build,
    review) and renders what they return.
    """

    def __init__(self, root: Path, *, window: int = 128_000, fast_profiles: tuple[str, ...] = ("spark",),
                 guards: dict | None = None) -> None:
        from core.context.ai_comments import AICommentTracker
        from core.context.prompt import ChatContext
        from core.guards.dwell import DwellGuard
        from core.guards.sensitive import SensitivePolicy
        from core.report.recorder import SessionRecorder

        self.root = Path(root)
        self.workspace = Workspace(self.root)
        self._dups: Any = None  # see `dups`
        self._dups_lock = threading.Lock()
        self.dups_ready = False
        self.growth: GrowthMeter | None = None
        self.sensitive = SensitivePolicy.from_config(guards)
        self.dwell = DwellGuard.from_config(guards)
        self.context = ChatContext(self.root, window, workspace=self.workspace)
        from core.detectors.context_meter import ContextMeter

        self.meter = ContextMeter(window)  # one per session: each warning is given once
        self.ai_comments = AICommentTracker()
        self.recorder = SessionRecorder(self.root)
        self.last_report: ContextReport | None = None
        self._shown: set[str] = set()  # "request:hunk": a hunk id repeats across answers
        self._unread: set[str] = set()
        self._file_reviews: dict[tuple, Review] = {}
        self._reviewed_at: dict[str, int] = {}  # path -> when it was last reviewed (a counter)
        self._review_count = 0
        self._dup_pool: ThreadPoolExecutor | None = None  # duplicate checks wait on the indexer process
        # the check worker's copy of the duplicate index (worker, its child's pid when built)
        self._dups_child: tuple[CheckWorker, int | None] | None = None
        self._dups_child_loading: CheckWorker | None = None
        # per answer (request id): its duplicate checks per top-level statement, remembered
        self._dup_checks: dict[str, StatementChecks] = {}
        self._dup_queued: dict[str, list[Future]] = {}  # per answer: its last pass's checks
        # slop analyses sent to the worker process, by (path, new text, added lines): a pass
        # superseded mid-way leaves them running there, and the next pass takes them if the
        # file has not changed since
        # per answer (request id): the variations screen reviews several answers at once
        self._slop_jobs: dict[str, dict[tuple[str, str, frozenset[int]], Future]] = {}
        self._slop_lock = threading.Lock()
        # answers replaced on screen since their last pass began (request ids, the most
        # recent 8): a pass of one finding its jobs dropped gives way (see answer_replaced)
        self._replaced: dict[str, None] = {}
        # per answer: its duplicate checks sent to the check worker's child, not answered yet
        self._dup_child_jobs: dict[str, list[tuple[CheckWorker, Future]]] = {}
        self._shown_answer: AnswerRun | None = None
        self._dropper: queue.SimpleQueue | None = None  # see _start_dropper
        self.policy = AcceptPolicy(self.dwell)
        self.fast_profiles = fast_profiles
        self.answers: list[AnswerRun] = []
        self.batch_job: Any = None  # the session's batch (a tui BatchJob) while it has work to review
        self.session_findings: dict[str, int] = {}
        self.slop_findings = 0
        self.slop_added_lines = 0

    @property
    def dups(self) -> Any:
        """The duplicate index checks ask: a `DuplicateIndex` made here on first use, or what
        `attach` (core.indexing.service) put in its place (the indexer's, asked remotely).
        Made on first use: its modules import numpy, which the app's first frame does not
        need (see ChatContext.repo_map)."""
        found = self._dups
        if found is None:
            with self._dups_lock:
                found = self._dups
                if found is None:
                    from core.detectors.duplicates import DuplicateIndex

                    found = self._dups = DuplicateIndex(self.root)
        return found

    @dups.setter
    def dups(self, value: Any) -> None:
        with self._dups_lock:
            self._dups = value

    # -- indexing (worker thread) ----------------------------------------------------------
    def build_indexes(self) -> None:
        """Index in the background (core/indexing: a child process for a large tree, an
        on-disk cache per repository) and wait until done. Only this thread waits: requests
        meanwhile use the repo map indexed so far (`self.indexes.snapshot()` never blocks)."""
        from core.check_worker import shared
        from core.indexing.service import attach

        worker = shared()
        service = attach(self)
        # files changed between the tree's listing and the watcher's start: the indexer's
        # recheck finds them; the check worker's copy of the index must hear of them too
        service.on_recheck = self._to_dups_child
        if worker is not None:
            # the indexer says thread or process once it listed the tree (~0.1 s): a tree
            # indexed in this process is indexed in the check worker at the same time
            while service.snapshot().mode == "starting" and not service.wait(0.02):
                pass
            if service.snapshot().mode == "thread":
                self._dups_to_child(worker.dups)
            # started now, the first answer's review does not wait for it (~0.2 s of imports);
            # not before the indexes are ready (a second launch: within ~1 s) or
            # WARM_CHECKS_AFTER_S have passed: begun at the app's start, those imports ran
            # beside its first frame and the indexer's start (r20k: 0.06-0.08 s of CPU at
            # nice 0 by "duplicates ready", the niced indexer's own being 0.2 s)
            service.wait(WARM_CHECKS_AFTER_S)
            worker.warm()
        service.wait()

    def _dups_to_child(self, worker: CheckWorker) -> None:
        """The duplicate checks of a tree indexed in a thread of this process go to a copy
        of its index in the check worker once it is built there (the child builds it from
        the disk, as the indexer did; file events follow it there): each check is parse,
        fingerprint and ranking under the GIL (~1-2 ms a statement, ~100 ms per many-edits
        stream), and the final pass waited for the checks the stream could not keep up with.
        A tree indexed in a child process is checked there already."""
        job = worker.dups_load(str(self.root))
        self._dups_child_loading = worker

        def loaded(done: Future) -> None:
            if not done.cancelled() and done.exception() is None:
                self._dups_child = (worker, worker.pid)

        job.add_done_callback(loaded)

    def _check_dups(self, source: str, path: str | None = None, *,
                    lines: Collection[int] | None = None) -> list:
        """`self.dups.check_source`, answered by the check worker's copy of the index when
        it has one (the same index, built from the same files), else here. A child that
        died, failed or did not answer within CHILD_CHECK_WAIT_S: checked here."""
        worker = self._live_dups_child()
        if worker is not None:
            rows = None if lines is None else sorted(set(lines))
            found = _child_answer(worker, worker.dups_check(str(self.root), source, path, rows))
            if found is not None:
                return found
        return self.dups.check_source(source, path, lines=lines)

    def _live_dups_child(self) -> CheckWorker | None:
        """The check worker whose child holds this tree's index, or None (the caller checks
        here). A child started anew since it built the index has none: it builds its own."""
        child = self._dups_child
        if child is None:
            return None
        worker, pid = child
        if worker.pid == pid:
            return worker
        if worker.pid is not None:
            with self._slop_lock:
                if self._dups_child is child:
                    self._dups_child = None
                    self._dups_to_child(worker)
        return None

    def on_file_changes(self, changes: list[tuple[str, str]]) -> str | None:
        """Keep the indexes current from watcher events (path, kind).

        Returns the instruction of new `AI!`/`AI?` comments found in a changed file, if any
        (that file is then in the chat), so the app can send it as a request.
        """
        instruction = None
        for path, kind in changes:
            self.context.on_file_event(path)
            if kind != "deleted" and instruction is None:
                instruction = self._ai_instruction(path)
        self._to_dups_child(changes)
        if self.dups_ready:
            self.dups.apply_events(changes)
        return instruction

    def _to_dups_child(self, changes: list[tuple[str, str]]) -> None:
        """File events (path, kind) for the check worker's copy of the duplicate index, if
        it has one or is building it (events during its build are applied after it)."""
        child = self._dups_child_loading
        py = [(path, kind) for path, kind in changes if path.endswith(".py")]
        if child is not None and py:
            child.dups_events(str(self.root), py)

    def _ai_instruction(self, path: str) -> str | None:
        from core.context.prompt import ContextError
        from core.workspace.files import WorkspaceError

        try:
            text = self.workspace.read_text(path)
        except WorkspaceError:
            return None
        if not self.ai_comments.new_comments(path, text):
            return None
        try:
            return self.context.prompt_for_ai_comments(path)
        except ContextError:
            return None

    # -- requests and answers ------------------------------------------------------------------
    def request(self, run: AnswerRun, kind: str = "chat") -> tuple[list[dict], int]:
        """Assemble what the model sees for this prompt (worker thread) and record it.

        Returns the messages and the answer's token budget (the room the context keeps free);
        raises core.context.prompt.ContextOverflow with a message when nothing fits.
        """
        messages, report = self.context.build_request(run.prompt)
        self.last_report = report
        self.recorder.prompt(run.request_id, run.prompt, run.profile, kind=kind)
        return messages, report.reserve

    def answer_finished(self, run: AnswerRun, review: Review | None, *, chip: str | None = None,
                        model: str | None = None, timing_recorded: bool = False) -> None:
        """Fold a finished answer into the conversation, the counters and the session record.

        The one path by which every answer (typed, raced, a variation, a batch task) reaches
        the record: its own stream's timing, its kind, its review. In two halves the app
        calls apart: `fold_answer` (memory, before the answer is shown as settled) and
        `record_answer` (the disk, after: the screen is what the user waits for).
        """
        self.fold_answer(run, review)
        self.record_answer(run, review, chip=chip, model=model, timing_recorded=timing_recorded)

    def fold_answer(self, run: AnswerRun, review: Review | None) -> None:
        """The finished answer in memory: the conversation, the answers, the session's
        counters (what the status bar shows). No disk: cheap enough for the UI thread."""
        usage = run.usage or {}
        if run.text:
            self.context.record_exchange(run.prompt, run.text, usage or None)
        if run not in self.answers:
            self.answers.append(run)
        if review is not None:
            self.record_review(review)

    def record_answer(self, run: AnswerRun, review: Review | None, *, chip: str | None = None,
                      model: str | None = None, timing_recorded: bool = False) -> None:
        """The finished answer in the session record (one append; a worker thread)."""
        with self.recorder.batch():  # one append for the answer's many events
            self._answer_finished(run, review, chip=chip, model=model, timing_recorded=timing_recorded)

    def _answer_finished(self, run: AnswerRun, review: Review | None, *, chip: str | None,
                         model: str | None, timing_recorded: bool) -> None:
        usage = run.usage or {}
        if review is not None:
            self.recorder.review(run.request_id, slop_findings=review.slop_findings,
                                 added_lines=review.added_lines)
            for finding in review.findings:
                if finding.kind in {"duplicate", "slop", "secret", "sensitive"}:
                    self.recorder.finding(finding.kind, detail=finding.message)
        if timing_recorded:  # a variation or batch task recorded its own stream already
            return
        self.recorder.answer_done(
            run.request_id, profile=run.profile, tokens=run.stats.tokens, elapsed_s=run.stats.elapsed_s,
            ttft_ms=run.stats.ttft_ms, chip=chip, model=model,
            prompt_tokens=usage.get("prompt_tokens"), reason=run.reason or "stop")

    def context_tokens(self) -> tuple[int, int, bool]:
        """(tokens, window, estimated) for the context meter: the backend's reported usage of
        the last exchange when there is one, else the assembled request's estimate."""
        usage = self.context.last_usage or {}
        window = self.context.window
        if usage.get("prompt_tokens"):
            return int(usage["prompt_tokens"]) + int(usage.get("completion_tokens", 0)), window, False
        if self.last_report is not None:
            return self.last_report.total, window, True
        return 0, window, True

    def context_state(self):
        """The context meter's reading now (band, percent, a warning crossed just now)."""
        tokens, _window, estimated = self.context_tokens()
        return self.meter.update(tokens, estimated=estimated)

    def set_window(self, window: int) -> None:
        """The active profile's context window: what the request is trimmed to and the meter reads against."""
        from core.detectors.context_meter import ContextMeter

        if window and window != self.context.window:
            self.context.resize(window)
            self.meter = ContextMeter(window)

    def fresh_context(self) -> None:
        self.context.clear()
        self.meter.reset()
        self.last_report = None
        self.recorder.fresh_context()

    # -- review-dwell and decisions ------------------------------------------------------------
    def hunks_shown(self, run: AnswerRun) -> None:
        """The hunks are on screen (the UI thread): the dwell clock starts at once (while
        streaming too). Nothing is recorded here: `record_hunks_shown` does that from a
        worker thread (the record's redaction and append of 47 hunks took the UI thread
        56-107 ms when a redraw came first)."""
        for hunk in run.hunks:
            self.dwell.shown(hunk.id, len(hunk.new_lines) + len(hunk.old_lines))

    def hunks_unrecorded(self, run: AnswerRun) -> bool:
        """Whether `record_hunks_shown` has anything to record for this answer (cheap: the
        app asks on its UI thread before a hop to a worker thread for it)."""
        return run.finished and any(f"{run.request_id}:{hunk.id}" not in self._shown for hunk in run.hunks)

    def record_hunks_shown(self, run: AnswerRun) -> None:
        """Record the finished answer's hunks as shown, once each; the record counts only
        the finished answer's hunks (a hunk still growing changes its id, and the report
        must not count each version as a hunk shown). The app calls it from its rebuild's
        worker thread: right after building a finished answer, and after each rebuild."""
        if not run.finished:
            return
        with self.recorder.batch():  # one append for all of them
            for hunk in run.hunks:
                key = f"{run.request_id}:{hunk.id}"
                if key not in self._shown:
                    self._shown.add(key)
                    self.recorder.hunk_shown(hunk.id, request_id=run.request_id, path=hunk.path,
                                             lines=len(hunk.new_lines) + len(hunk.old_lines))

    def decide(self, run: AnswerRun, hunk_ids: list[str], accept: bool, review: Review | None, *,
               reason: str | None = None) -> Decision:
        """Apply one key (a, r, A, R, x) to these hunks through the accept policy.

        Stops at the first hunk the policy holds (confirm, block, too fast) so the screen
        can say why with the cursor on it; the hunks before it are decided."""
        out = Decision()
        for hunk_id in hunk_ids:
            if run.state(hunk_id) not in (HunkState.UNDECIDED, HunkState.STALE, HunkState.REFUSED):
                continue
            if accept and run.state(hunk_id) is HunkState.REFUSED:
                out.held = AcceptCheck(Verdict.BLOCK, run.reasons.get(hunk_id, "refused") + " (r rejects it)")
                out.held_id = hunk_id
                break
            unread = False
            if accept and run.state(hunk_id) is HunkState.UNDECIDED:
                check = self.policy.check(hunk_id, review)
                if check.verdict is not Verdict.ALLOW:
                    out.held, out.held_id = check, hunk_id
                    break
                unread = check.unread
            state = run.decide(hunk_id, accept)
            out.decided.append(hunk_id)
            hunk = run.hunk(hunk_id)
            if state is HunkState.REJECTED:
                self._record_rejection(run, hunk, reason)
            elif state is HunkState.CHOSEN and unread:
                self._unread.add(f"{run.request_id}:{hunk_id}")
        return out

    def _record_rejection(self, run: AnswerRun, hunk: Hunk, reason: str | None) -> None:
        """A rejection is recorded at once and goes back to the model with the next request."""
        self.recorder.hunk_decided(
            hunk.id, accepted=False, request_id=run.request_id, dwell_s=self.dwell.dwelt(hunk.id),
            reason=reason, added=len(hunk.new_lines), removed=len(hunk.old_lines))
        old = "".join(f"-{line}" if line.endswith("\n") else f"-{line}\n" for line in hunk.old_lines)
        new = "".join(f"+{line}" if line.endswith("\n") else f"+{line}\n" for line in hunk.new_lines)
        self.context.add_rejection(hunk.path, old + new, reason)

    @property
    def unread_accepts(self) -> int:
        return self.dwell.unread_accepts

    def recheck(self, run: AnswerRun) -> bool:
        """Re-read the proposal's files (after an outside edit): per-hunk staleness from
        `Proposal.hunk_status`. Returns whether any hunk's state changed."""
        if run.proposal is None or run.applied:
            return False
        return run.mark_staleness(run.proposal.hunk_status(self.workspace))

    def check_subset(self, run: AnswerRun) -> list[str]:
        """Problems the chosen subset would write that the whole answer would not (syntax;
        ruff's undefined-name / unused-import / redefinition rules on Python; tree-sitter's
        parse elsewhere). Empty when every hunk is chosen or nothing is."""
        from core.verify.checks import new_problems, quick_check

        proposal = run.proposal
        chosen = run.chosen
        if proposal is None or not chosen:
            return []
        # a whole file that would remove most of an existing one: written only with `w`
        heavy = [f"{fp.path}: {fp.deletion_heavy}" for fp in proposal.files
                 if getattr(fp, "deletion_heavy", None) and chosen & {h.id for h in fp.hunks}]
        every = {h.id for h in proposal.hunks}
        if chosen == every:
            return heavy
        whole, subset = {}, {}
        for fp in proposal.files:
            ids = {h.id for h in fp.hunks} & chosen
            if not ids:
                continue
            whole[fp.path] = fp.result_text(None)
            subset[fp.path] = fp.result_text(ids)
        try:
            found = new_problems(quick_check(whole), quick_check(subset))
        except Exception as exc:  # noqa: BLE001 - a checker that cannot run must not block writing
            return [*heavy, f"the check before writing could not run: {exc}"]
        return heavy + [p.short() for p in found]

    def write(self, run: AnswerRun, *, force: bool = False) -> ApplyResult:
        """Write the answer's one decision (every hunk decided, none refused); record what
        was written, count it toward growth, and refuse precisely what could not be."""
        stale = run.proposal.hunk_status(self.workspace) if run.proposal else {}
        run.mark_staleness(stale)
        if run.open:  # a chosen hunk went stale just now: nothing of the answer is written
            return ApplyResult([], [], None)
        result = run.apply(force=force)
        written = [h for h in run.hunks if run.state(h.id) is HunkState.WRITTEN and h.path in set(result.written)]
        for hunk in written:
            key = f"{run.request_id}:{hunk.id}"
            self.recorder.hunk_decided(
                hunk.id, accepted=True, request_id=run.request_id, dwell_s=self.dwell.dwelt(hunk.id),
                unread=key in self._unread, added=len(hunk.new_lines), removed=len(hunk.old_lines))
        if self.growth is not None and written:
            self.growth.record_lines(sum(len(h.new_lines) for h in written), sum(len(h.old_lines) for h in written))
        return result

    def undo(self) -> UndoOutcome:
        """Undo the last accepted change: restore what can be, name what cannot and why, and
        put the hunks of the answer that wrote it back to their state before the decision."""
        from core.workspace.changes import undo_last
        from core.workspace.journal import Journal

        entry = Journal(self.workspace).last_undoable()
        undone_id = entry.id if entry is not None else None
        result = undo_last(self.workspace)
        outcome = UndoOutcome(found=undone_id is not None, restored=list(result.written),
                              refused=list(result.refused), commit=result.commit)
        if not outcome.restored or undone_id is None:
            return outcome
        for run in self.answers:
            if run.change_id == undone_id:
                hunks = {h.id: h for h in run.hunks}
                back = run.undone(outcome.restored)
                outcome.run, outcome.hunks = run, back
                for hunk_id in back:
                    self.recorder.hunk_reverted(hunk_id, request_id=run.request_id)
                reverted = [hunks[h] for h in back]
                if self.growth is not None and reverted:  # the meter counts what is on disk
                    self.growth.added = max(0, self.growth.added - sum(len(h.new_lines) for h in reverted))
                    self.growth.removed = max(0, self.growth.removed - sum(len(h.old_lines) for h in reverted))
                break
        return outcome

    # -- review of an answer (worker thread) ---------------------------------------------------
    def review(self, run: AnswerRun, *, stale: Callable[[], bool] | None = None) -> Review:
        """Run every detector and guard over the answer's proposal (per file, memoized).

        `stale` is asked between files: when it says a newer rebuild waits, the review stops
        with ReviewSuperseded instead of finishing a state nobody will see (the files done so
        far stay memoized; each pass reviews one file at least). Every file's slop goes to
        the worker process and its duplicate check to the indexer at the start, per statement
        (`StatementChecks`: a statement checked in an earlier pass is not checked again), so
        they run there while this thread collects them file by file."""
        review = Review()
        proposal = run.proposal
        if proposal is None:
            return review
        for err in run.parse_errors:
            review.findings.append(Finding("error", "parse", str(getattr(err, "message", err))))
        for err in proposal.errors:
            review.findings.append(Finding("error", "match", f"{err.path}: {err.message}"))
        verdict = self.sensitive.check([f.path for f in proposal.files], run.profile in self.fast_profiles)
        if verdict.flagged_paths and verdict.action != "allow":
            flagged = set(verdict.flagged_paths)
            for fp in proposal.files:
                if fp.path in flagged:
                    severity = "error" if verdict.action == "block" else "warning"
                    for hunk in fp.hunks:
                        review.findings.append(Finding(severity, "sensitive", verdict.message, hunk.id))
        keys = [(fp.path, hash(fp.old_text), hash(fp.new_text), self.dups_ready) for fp in proposal.files]
        # files to review, the one reviewed longest ago first (a file that changes on every pass
        # must not keep the others waiting)
        todo = sorted((i for i, key in enumerate(keys) if key not in self._file_reviews),
                      key=lambda i: self._reviewed_at.get(keys[i][0], -1))
        parts = {i: self._file_reviews.get(key) for i, key in enumerate(keys)}
        # every file's slop goes to the worker process at once (it works through them while
        # this thread checks duplicates); analyses of texts no file has any more are dropped
        if self._dropper is None:
            self._start_dropper()
        with self._slop_lock:
            self._replaced.pop(run.request_id, None)  # reviewed again: shown again
            jobs = self._slop_jobs.pop(run.request_id, {})
            self._slop_jobs[run.request_id] = jobs  # the most recent answers last
            while len(self._slop_jobs) > 8:
                self._slop_jobs.pop(next(iter(self._slop_jobs)))
            slop = {i: self._slop_job(jobs, proposal.files[i], run.finished) for i in todo}
            wanted = {id(job) for job in slop.values() if job is not None}
            obsolete = [jobs.pop(key) for key in [k for k, job in jobs.items() if id(job) not in wanted]]
        self._drop_slop_jobs(obsolete)
        if run.finished:  # no newer state will come: every in-thread slop's ruff starts now (one process)
            from core.detectors.slop import prefetch_many

            prefetch_many([(fp.path, fp.new_text, set(_added_lines(_new_ranges(fp))))
                           for fp in (proposal.files[i] for i in todo if slop.get(i) is None)])
        # every file's duplicate check starts now too: a pass superseded after its first file
        # leaves them running, and what they find per statement serves the next passes (at the
        # last token most statements of every file are known: only the new ones are checked)
        memo = self._statement_checks(run.request_id)
        with self._slop_lock:  # the answer's previous pass is over: its checks not started go
            for queued in self._dup_queued.pop(run.request_id, []):
                queued.cancel()
        checks: dict[int, Future | None] = {i: self._start_dup_check(proposal.files[i], memo, run.request_id)
                                            for i in todo}
        with self._slop_lock:
            self._dup_queued[run.request_id] = [f for f in checks.values() if f is not None]
            while len(self._dup_queued) > 8:
                self._dup_queued.pop(next(iter(self._dup_queued)))
        for n, i in enumerate(todo):
            # one file per pass at least while the answer streams: progress; once it has
            # finished, the pass that supersedes is its last one, so this one gives way at
            # once (the app's final rebuild waited 150-350 ms for a first file's slop)
            first_may_go = run.finished
            if (n or first_may_go) and stale is not None and stale():
                raise ReviewSuperseded("a newer rebuild of the answer is waiting")
            if n + 1 < len(todo):
                ahead = proposal.files[todo[n + 1]]
                if slop.get(todo[n + 1]) is None:  # slop runs in this thread: its ruff starts now
                    from core.detectors.slop import prefetch

                    prefetch(ahead.path, ahead.new_text, set(_added_lines(_new_ranges(ahead))))
            job, dup = slop.get(i), checks.pop(i)
            if stale is not None:
                # the file's slop (the worker) and duplicate check (the pool) are waited for
                # here, where a newer rebuild need not wait: the first file of a pass gives
                # way too once the answer has finished (the pass the last token overtook
                # waited 0.5 s for its first file's slop, behind the worker's queue, while
                # the final rebuild waited for it)
                gives_way = stale if n else (lambda: run.finished and stale())
                for future in (job, dup):
                    if future is not None:
                        self._wait_for(future, gives_way)
                        if _dropped(future) and run.request_id in self._replaced:
                            # answer_replaced dropped it: nobody will see this pass (its
                            # check in this thread would only cost the new answer CPU)
                            raise ReviewSuperseded("the answer was replaced on screen")
            done = self._review_file(proposal.files[i], dup, job)
            parts[i] = done
            if not any(f.kind == "unchecked" and ("checked for slop" in f.message or self.dups_ready)
                       for f in done.findings):
                self._file_reviews[keys[i]] = done  # a check that failed is asked again by the next pass
            self._review_count += 1
            self._reviewed_at[keys[i][0]] = self._review_count
            while len(self._file_reviews) > 64:
                self._file_reviews.pop(next(iter(self._file_reviews)))
        for part in parts.values():
            assert part is not None
            review.findings.extend(part.findings)
            review.added_lines += part.added_lines
            if part.slop_score is not None:
                review.slop_score = (review.slop_score or 0.0) + part.slop_score
        return review

    def answer_shown(self, run: AnswerRun) -> None:
        """`run` is now the answer on screen: the one it replaced gets `answer_replaced`.
        The app calls this where it makes a new answer current (idempotent)."""
        previous, self._shown_answer = self._shown_answer, run
        if previous is not None and previous.request_id != run.request_id:
            self.answer_replaced(previous)

    def answer_replaced(self, run: AnswerRun) -> None:
        """`run` left the screen for a newer answer: its checks still queued are dropped.

        `review` keeps an answer's slop jobs (check worker) and duplicate checks (the dup
        pool) for its next pass; a replaced answer gets none (its final review gives way,
        the rebuild schedule starts no pass of it), so they would only run beside the new
        request. Jobs already running finish; nothing the user saw changes (its recorded
        review is the one it showed). A pass of it still waiting for a dropped job gives
        way (ReviewSuperseded) instead of computing the check in its own thread."""
        with self._slop_lock:
            self._replaced[run.request_id] = None
            while len(self._replaced) > 8:
                self._replaced.pop(next(iter(self._replaced)))
            jobs = list(self._slop_jobs.pop(run.request_id, {}).values())
            queued = self._dup_queued.pop(run.request_id, [])
            in_child = self._dup_child_jobs.pop(run.request_id, [])
        for check in queued:
            check.cancel()
        if not (jobs or in_child):
            return
        if self._dropper is None:  # (no review started one: nothing of it was sent)
            self._drop_jobs(jobs, in_child)
        else:
            # the drops lock the worker and write to its socket: each wait there hands the
            # GIL on, and the caller (the UI thread, right before the new request goes out)
            # waited 0.4-8 ms for it; a put here never waits
            self._dropper.put((jobs, in_child))

    def _drop_jobs(self, slop: list[Future], in_child: list[tuple[CheckWorker, Future]]) -> None:
        self._drop_slop_jobs(slop)
        for worker, job in in_child:  # a check started in the pool waits for its child's answer
            worker.drop([job])

    def _start_dropper(self) -> None:
        """The thread that drops replaced answers' jobs (started by the first review, in
        its thread: a thread's start waits for it, which the UI thread should not)."""
        with self._slop_lock:
            if self._dropper is not None:
                return
            dropper: queue.SimpleQueue = queue.SimpleQueue()
            self._dropper = dropper

        def run() -> None:
            while True:
                self._drop_jobs(*dropper.get())

        threading.Thread(target=run, name="drop-replaced", daemon=True).start()

    @staticmethod
    def _slop_job(jobs: dict[tuple[str, str, frozenset[int]], Future], fp: FileProposal,
                  final: bool = False) -> Future | None:
        """The slop analysis of one file's new text, sent to the worker process (or the one
        already sent for this text); None for a file slop does not read. `final`: the
        answer has ended (see CheckWorker.analyze)."""
        if not fp.path.endswith(".py"):
            return None
        from core.check_worker import analyze_change_off_thread

        key = (fp.path, fp.new_text, frozenset(_added_lines(_new_ranges(fp))))
        job = jobs.get(key)
        if job is None or job.cancelled():
            job = analyze_change_off_thread(fp.path, fp.new_text, set(key[2]), final=final)
            if job is not None:
                jobs[key] = job
        return job

    @staticmethod
    def _wait_for(job: Future, stale: Callable[[], bool]) -> None:
        """Wait for a slop job or a duplicate check, or raise ReviewSuperseded as soon as a
        newer rebuild waits (the job goes on; the next pass takes it if the file is
        unchanged, a duplicate check's statements are remembered for it)."""
        import time
        from concurrent.futures import wait

        from core.check_worker import SLOP_CHILD_WAIT_S

        until = time.monotonic() + SLOP_CHILD_WAIT_S  # then its reader decides (report_of: here)
        while not wait([job], timeout=0.005).done and time.monotonic() < until:
            if stale():
                raise ReviewSuperseded("a newer rebuild of the answer is waiting")

    @staticmethod
    def _drop_slop_jobs(jobs: list[Future]) -> None:
        from core.check_worker import shared

        worker = shared()
        if worker is not None and jobs:
            worker.drop(jobs)

    def _statement_checks(self, request_id: str) -> StatementChecks:
        """The answer's remembered duplicate checks (the most recent 8 answers kept)."""
        with self._slop_lock:
            memo = self._dup_checks.pop(request_id, None)
            if memo is None or memo.index is not self.dups:  # the index was replaced
                memo = StatementChecks(self._check_dups, index=self.dups,
                                       name=f"{request_id}#{next(_MEMO_SERIALS)}")
            self._dup_checks[request_id] = memo
            while len(self._dup_checks) > 8:
                self._dup_checks.pop(next(iter(self._dup_checks)))
            return memo

    def _start_dup_check(self, fp: FileProposal, memo: StatementChecks | None = None,
                         request_id: str | None = None) -> Future | None:
        """Send one file's duplicate check to the indexer now (None: nothing to check):
        with the answer's `memo`, only its statements not checked in an earlier pass.
        `request_id`: the answer's, so that answer_replaced can drop it."""
        if not (self.dups_ready and fp.path.endswith(".py")):
            return None
        if self._dup_pool is None:
            self._dup_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="dup-check")
        added = _added_lines(_new_ranges(fp))
        if memo is not None:
            return self._dup_pool.submit(self._memo_matches, memo, fp.new_text, fp.path, added, request_id)
        return self._dup_pool.submit(self._check_dups, fp.new_text, fp.path, lines=added)

    def _memo_matches(self, memo: StatementChecks, text: str, path: str, added: list[int],
                      request_id: str | None = None) -> list:
        """`memo.matches(text, path, added)`, computed by the check worker's twin of the memo
        when it has the index (the file's cut and the memo's work then hold no GIL here),
        else here. Raises CancelledError when answer_replaced dropped it (of an answer
        nobody sees any more: not computed here instead)."""
        worker = self._live_dups_child()
        if worker is not None:
            job = worker.dups_matches(str(self.root), memo.name, text, path, added)
            entry = (worker, job)
            with self._slop_lock:
                replaced = request_id is not None and request_id in self._replaced
                if request_id is not None and not replaced:
                    self._dup_child_jobs.setdefault(request_id, []).append(entry)
                    while len(self._dup_child_jobs) > 8:
                        self._dup_child_jobs.pop(next(iter(self._dup_child_jobs)))
            if replaced:
                worker.drop([job])
            try:
                found = _child_answer(worker, job)
            finally:
                with self._slop_lock:
                    pending = self._dup_child_jobs.get(request_id or "", [])
                    if entry in pending:
                        pending.remove(entry)
            if found is not None:
                return found
            if job.cancelled() and request_id in self._replaced:
                raise CancelledError("its answer was replaced on screen")
        return memo.matches(text, path, added)

    def _review_file(self, fp: FileProposal, dup_check: Future | None = None,
                     slop_job: Future | None = None) -> Review:
        """One file's findings (secrets, duplicates, slop): a function of its old and new text."""
        from core.guards.secrets import scan_added_text

        part = Review()
        ranges = _new_ranges(fp)
        for hunk in fp.hunks:
            added = "\n".join(line.rstrip("\n") for line in hunk.new_lines)
            part.added_lines += len(hunk.new_lines)
            for secret in scan_added_text(fp.path, added):
                part.findings.append(Finding(
                    "error", "secret", f"{fp.path}: possible {secret.kind} added ({secret.preview_redacted})", hunk.id))
        if fp.path.endswith(".py"):
            self._review_python(fp, ranges, part, dup_check, slop_job)
        return part

    def _review_python(self, fp, ranges, review: Review, dup_check: Future | None = None,
                       slop_job: Future | None = None) -> None:
        from core.check_worker import report_of

        if dup_check is None and self.dups_ready:
            dup_check = self._start_dup_check(fp)
        if slop_job is None:  # a file reviewed alone; without a worker process slop runs below
            from core.check_worker import analyze_change_off_thread

            slop_job = analyze_change_off_thread(fp.path, fp.new_text, set(_added_lines(ranges)))
        if dup_check is None and not self.dups_ready and any(hunk.new_lines for hunk in fp.hunks):
            review.findings.append(Finding(  # reviewed again once the index is ready
                "info", "unchecked", f"{fp.path}: not checked for duplicates yet (the duplicate index is being built)"))
        if dup_check is not None:
            try:
                try:
                    matches = dup_check.result()
                except CancelledError:  # a newer pass of the answer dropped it before it started
                    matches = self.dups.check_source(fp.new_text, fp.path, lines=_added_lines(ranges))
            except DuplicateCheckUnavailable as exc:  # not remembered: the next pass asks again
                matches = []
                review.findings.append(Finding("warning", "unchecked",
                                               f"{fp.path}: not checked for duplicates: {exc}"))
            for match in matches:
                hunk_id = _hunk_at(ranges, match.new_line)
                if hunk_id is None:
                    continue  # an existing function, not something this answer adds
                review.findings.append(Finding(
                    "warning", "duplicate",
                    f"{match.new_symbol} duplicates {match.twin_path}:{match.twin_line} {match.twin_symbol} "
                    f"({match.similarity:.0%}, type {match.clone_type})", hunk_id))
        # the hunks' lines are the added lines: no line diff of the whole file; computed in
        # the worker process meanwhile (or here, if it failed)
        report = report_of(slop_job, fp.path, fp.new_text, set(_added_lines(ranges)))
        for finding in report.findings:
            review.findings.append(Finding(
                "info", "slop", f"{fp.path}:{finding.line} {finding.rule_id} {finding.message}",
                _hunk_at(ranges, finding.line)))
        for error in report.errors:  # e.g. ruff could not run: said, not a silent clean
            review.findings.append(Finding("warning", "unchecked", f"{fp.path}: not fully checked for slop: {error}"))
        review.slop_score = report.score

    def record_review(self, review: Review) -> None:
        """Fold one answer's review into the session counters."""
        for finding in review.findings:
            self.session_findings[finding.kind] = self.session_findings.get(finding.kind, 0) + 1
        self.slop_findings += sum(1 for f in review.findings if f.kind == "slop")
        self.slop_added_lines += review.added_lines

    @property
    def session_slop_score(self) -> float | None:
        if not self.slop_added_lines:
            return None
        return 100.0 * self.slop_findings / self.slop_added_lines
