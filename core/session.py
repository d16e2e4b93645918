"""One user's session with the core: prompts become streamed answers, answers become hunks.

The TUI drives this module and only renders what it holds: an `AnswerRun` owns the text
streamed so far, the edits parsed from it, the proposal (hunks against the working tree)
and the user's decision on each hunk. Writing goes through `core.edits.proposal.apply_proposal`,
which goes through the workspace layer, the only writer.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from core.edits.parser import Edit, PendingEdit, StreamingParser
from core.edits.proposal import Proposal, ProposalBuilder, apply_proposal
from core.workspace.files import Workspace

PENDING, ACCEPTED, REJECTED = "proposed", "accepted", "rejected"


@dataclass
class StreamStats:
    """Live timing of one answer, measured on the client side as the user sees it."""

    started: float = field(default_factory=time.perf_counter)
    first_token: float | None = None
    ended: float | None = None
    tokens: int = 0

    def on_tokens(self, count: int) -> None:
        if self.first_token is None:
            self.first_token = time.perf_counter()
        self.tokens += count

    @property
    def ttft_ms(self) -> float | None:
        return None if self.first_token is None else (self.first_token - self.started) * 1000

    @property
    def elapsed_s(self) -> float:
        return (self.ended or time.perf_counter()) - self.started

    @property
    def tokens_per_s(self) -> float | None:
        if self.first_token is None:
            return None
        span = (self.ended or time.perf_counter()) - self.first_token
        return self.tokens / span if span > 0 and self.tokens > 1 else None


class AnswerRun:
    """One answer from the model: stream -> edits -> proposal -> per-hunk decisions."""

    def __init__(self, workspace: Workspace, prompt: str, profile: str) -> None:
        self.workspace = workspace
        self.prompt = prompt
        self.profile = profile
        self.text = ""
        self.parser = StreamingParser()
        self.edits: list[Edit] = []
        self.proposal: Proposal | None = None
        self._builder = ProposalBuilder(workspace)  # re-diffs only files whose edits changed
        self.decisions: dict[str, str] = {}
        self.stats = StreamStats()
        self.finished = False
        self.reason: str | None = None
        self.error: str | None = None
        self.source: dict | None = None
        self.applied = False
        self.redirects: list[str] = []
        self.request_id = uuid.uuid4().hex[:12]
        self.origin: str | None = None  # e.g. "taken from base" for an answer chosen in a race
        self.usage: dict | None = None
        self.file_status: dict[str, str] = {}
        self.parse_errors_before_steer: list = []

    # -- streaming -------------------------------------------------------------------------
    def feed(self, text: str, tokens: int) -> list[Edit]:
        """Take one delta; returns the edits it completed (so the caller rebuilds hunks)."""
        self.stats.on_tokens(tokens)
        self.text += text
        completed = self.parser.feed(text)
        self.edits.extend(completed)
        return completed

    def finish(self, reason: str | None = None, error: str | None = None) -> list[Edit]:
        """The stream ended (done, cancelled or failed); flush what the parser still holds."""
        self.stats.ended = time.perf_counter()
        self.reason, self.error = reason, error
        completed = self.parser.finish()
        self.edits.extend(completed)
        self.finished = True
        return completed

    def steered(self, redirect: str) -> None:
        """The user redirected the stream: keep completed edits, drop the half-written block.

        The core continues under the same id with a new assistant turn, so parsing starts
        afresh; the redirect is kept for the record.
        """
        self.parse_errors_before_steer = self.parse_errors
        self.parser = StreamingParser()
        self.redirects.append(redirect)

    @property
    def pending(self) -> PendingEdit | None:
        return None if self.finished else self.parser.pending

    @property
    def parse_errors(self) -> list:
        return self.parse_errors_before_steer + list(getattr(self.parser, "errors", []))

    def rebuild_proposal(self) -> Proposal:
        """Diff every completed edit against the working tree (heavy: call from a worker)."""
        self.proposal = self._builder.build(list(self.edits))
        for hunk in self.proposal.hunks:
            self.decisions.setdefault(hunk.id, PENDING)
        return self.proposal

    # -- decisions ---------------------------------------------------------------------------
    @property
    def hunks(self) -> list:
        return self.proposal.hunks if self.proposal else []

    def state_of(self, hunk_id: str) -> str:
        return self.decisions.get(hunk_id, PENDING)

    def decide(self, hunk_id: str, accept: bool) -> None:
        self.decisions[hunk_id] = ACCEPTED if accept else REJECTED

    def decide_all(self, accept: bool) -> None:
        for hunk in self.hunks:
            if self.decisions.get(hunk.id, PENDING) == PENDING:
                self.decide(hunk.id, accept)

    def hunk_context(self, lines: int = 2) -> dict[str, tuple[list[str], list[str]]]:
        """For each hunk, up to `lines` unchanged lines of the file before and after it."""
        out: dict[str, tuple[list[str], list[str]]] = {}
        for fp in (self.proposal.files if self.proposal else []):
            old = fp.old_text.splitlines()
            for hunk in fp.hunks:
                first = hunk.old_start - 1
                last = first + len(hunk.old_lines)
                out[hunk.id] = (old[max(0, first - lines):first], old[last:last + lines])
        return out

    @property
    def undecided(self) -> list[str]:
        return [h.id for h in self.hunks if self.decisions.get(h.id, PENDING) == PENDING]

    @property
    def accepted(self) -> set[str]:
        return {hid for hid, state in self.decisions.items() if state == ACCEPTED}

    @property
    def all_decided(self) -> bool:
        return self.finished and self.proposal is not None and not self.undecided

    def apply(self):
        """Write the accepted hunks through the workspace (once, when every hunk is decided)."""
        if self.proposal is None:
            raise RuntimeError("no proposal to apply")
        result = apply_proposal(self.workspace, self.proposal, self.accepted, message=self.prompt)
        self.applied = True
        return result


# -- the workstation: everything one `spark` session knows besides the screen ----------------

@dataclass
class Finding:
    """One thing a detector or guard wants the user to see before accepting."""

    severity: str  # "info" | "warning" | "error"
    kind: str  # "duplicate" | "slop" | "secret" | "sensitive" | "parse" | "match"
    message: str
    hunk_id: str | None = None


@dataclass
class Review:
    """Detector results for one answer: badges per hunk and the list for the side panel."""

    findings: list[Finding] = field(default_factory=list)
    slop_score: float | None = None
    added_lines: int = 0

    def gate(self, hunk_id: str) -> tuple[str, str] | None:
        """Why accepting this hunk needs more than one key: ("block", why) when policy forbids
        it (sensitive path, fast profile, require-base), ("confirm", why) for a secret or a
        flagged sensitive path, None when nothing stands in the way."""
        confirm = None
        for f in self.findings:
            if f.hunk_id != hunk_id:
                continue
            if f.kind == "sensitive" and f.severity == "error":
                return "block", f.message
            if f.kind in {"secret", "sensitive"} and confirm is None:
                confirm = ("confirm", f.message)
        return confirm

    def badges(self) -> dict[str, str]:
        marks = {"duplicate": "dup", "slop": "slop", "secret": "SECRET", "sensitive": "sensitive"}
        out: dict[str, list[str]] = {}
        for f in self.findings:
            if f.hunk_id and f.kind in marks:
                out.setdefault(f.hunk_id, [])
                if marks[f.kind] not in out[f.hunk_id]:
                    out[f.hunk_id].append(marks[f.kind])
        return {hid: " ".join(f"[{m}]" for m in ms) for hid, ms in out.items()}


def _new_ranges(file_proposal) -> list[tuple[str, int, int]]:
    """(hunk id, first new line, line count) for each hunk of one file, in the new text."""
    offset = 0
    ranges = []
    for hunk in file_proposal.hunks:
        start = hunk.old_start + offset
        ranges.append((hunk.id, start, len(hunk.new_lines)))
        offset += len(hunk.new_lines) - len(hunk.old_lines)
    return ranges


def _hunk_at(ranges: list[tuple[str, int, int]], line: int) -> str | None:
    for hid, start, count in ranges:
        if start <= line < start + max(count, 1):
            return hid
    return None


class Workstation:
    """The session's state behind the screen: workspace, detectors, guards, counters.

    The app calls these methods from worker threads where they are heavy (index build,
    review) and renders what they return.
    """

    def __init__(self, root: Path, *, window: int = 128_000, fast_profiles: tuple[str, ...] = ("spark",),
                 guards: dict | None = None) -> None:
        from core.context.ai_comments import AICommentTracker
        from core.context.prompt import ChatContext
        from core.detectors.duplicates import DuplicateIndex
        from core.guards.dwell import DwellGuard
        from core.guards.sensitive import SensitivePolicy
        from core.report.recorder import SessionRecorder

        self.root = Path(root)
        self.workspace = Workspace(self.root)
        self.dups = DuplicateIndex(self.root)
        self.dups_ready = False
        self.growth = None
        self.sensitive = SensitivePolicy.from_config(guards)
        self.dwell = DwellGuard.from_config(guards)
        self.context = ChatContext(self.root, window, workspace=self.workspace)
        from core.detectors.context_meter import ContextMeter

        self.meter = ContextMeter(window)  # one per session: each warning is given once
        self.ai_comments = AICommentTracker()
        self.recorder = SessionRecorder(self.root)
        self.last_report = None
        self._shown: set[str] = set()
        self.fast_profiles = fast_profiles
        self.answers: list[AnswerRun] = []
        self.session_findings: dict[str, int] = {}
        self.slop_findings = 0
        self.slop_added_lines = 0

    # -- indexing (worker thread) ----------------------------------------------------------
    def build_indexes(self) -> None:
        from core.detectors.growth import GrowthMeter

        self.growth = GrowthMeter.from_tree(self.root)
        self.context.warm()  # the first prompt must not wait for the repo map's scan
        self.dups.build()
        self.dups_ready = True

    def applied(self, run: AnswerRun, result) -> None:
        """Count what an accepted change wrote toward the session's growth meter."""
        if self.growth is None or not result.written:
            return
        written = set(result.written)
        accepted = [h for h in run.hunks if h.id in run.accepted and h.path in written]
        self.growth.record_lines(sum(len(h.new_lines) for h in accepted), sum(len(h.old_lines) for h in accepted))

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
            if not path.endswith(".py") or not self.dups_ready:
                continue
            if kind == "deleted":
                self.dups.remove_file(path)
            else:
                self.dups.update_file(path)
        return instruction

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
                        model: str | None = None, recorded: bool = True) -> None:
        """Fold a finished answer into the conversation, the counters and the session record.

        `recorded=False` for an answer streamed by another screen (race, variations) that
        recorded its own timing: it joins the conversation without being counted twice.
        """
        usage = run.usage or {}
        if run.text:
            self.context.record_exchange(run.prompt, run.text, usage or None)
        if not recorded:
            if review is not None:
                self.record_review(review)
            return
        self.recorder.answer_done(
            run.request_id, profile=run.profile, tokens=run.stats.tokens, elapsed_s=run.stats.elapsed_s,
            ttft_ms=run.stats.ttft_ms, chip=chip, model=model,
            prompt_tokens=usage.get("prompt_tokens"), reason=run.reason or "stop")
        if review is not None:
            self.record_review(review)
            for finding in review.findings:
                if finding.kind in {"duplicate", "slop", "secret", "sensitive"}:
                    self.recorder.finding(finding.kind, detail=finding.message)

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
        for hunk in run.hunks:
            if hunk.id not in self._shown:
                self._shown.add(hunk.id)
                lines = len(hunk.new_lines) + len(hunk.old_lines)
                self.dwell.shown(hunk.id, lines)
                self.recorder.hunk_shown(hunk.id, request_id=run.request_id, path=hunk.path, lines=lines)

    def check_accept(self, hunk_id: str):
        return self.dwell.check_accept(hunk_id)

    def decided(self, run: AnswerRun, hunk, accepted: bool, *, unread: bool = False,
                reason: str | None = None) -> None:
        """Record a decision; a rejection goes back to the model with the next request."""
        self.recorder.hunk_decided(
            hunk.id, accepted=accepted, dwell_s=self.dwell.dwelt(hunk.id), unread=unread, reason=reason,
            added=len(hunk.new_lines), removed=len(hunk.old_lines))
        if not accepted:
            old = "".join(f"-{line}" if line.endswith("\n") else f"-{line}\n" for line in hunk.old_lines)
            new = "".join(f"+{line}" if line.endswith("\n") else f"+{line}\n" for line in hunk.new_lines)
            self.context.add_rejection(hunk.path, old + new, reason)

    # -- review of an answer (worker thread) ---------------------------------------------------
    def review(self, run: AnswerRun) -> Review:
        """Run every detector and guard over the answer's proposal."""
        from core.guards.secrets import scan_added_text

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
        for fp in proposal.files:
            ranges = _new_ranges(fp)
            for hunk in fp.hunks:
                added = "\n".join(line.rstrip("\n") for line in hunk.new_lines)
                review.added_lines += len(hunk.new_lines)
                for secret in scan_added_text(fp.path, added):
                    review.findings.append(Finding(
                        "error", "secret", f"{fp.path}: possible {secret.kind} added ({secret.preview_redacted})", hunk.id))
            if fp.path.endswith(".py"):
                self._review_python(fp, ranges, review)
        return review

    def _review_python(self, fp, ranges, review: Review) -> None:
        if self.dups_ready:
            added = [start + i for _, start, count in ranges for i in range(count)]
            for match in self.dups.check_source(fp.new_text, fp.path, lines=added):
                hunk_id = _hunk_at(ranges, match.new_line)
                if hunk_id is None:
                    continue  # an existing function, not something this answer adds
                review.findings.append(Finding(
                    "warning", "duplicate",
                    f"{match.new_symbol} duplicates {match.twin_path}:{match.twin_line} {match.twin_symbol} "
                    f"({match.similarity:.0%}, type {match.clone_type})", hunk_id))
        try:
            from core.detectors.slop import analyze_change
        except ImportError:
            return
        report = analyze_change(fp.path, fp.old_text, fp.new_text)
        for finding in report.findings:
            review.findings.append(Finding(
                "info", "slop", f"{fp.path}:{finding.line} {finding.rule_id} {finding.message}",
                _hunk_at(ranges, finding.line)))
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
