"""Send failures back: the next request of the same stream, and the answer -> tests -> fix
loop that runs until green or a round limit.

Why the fix answer is layered on the previous proposal: nothing was written, so the files
on disk are still the originals, but the model fixes what it proposed.  Its edits are
placed on the previous proposal's texts (an in-memory overlay, never a write) and the
result is diffed against the user's files again, so each round is one ordinary proposal
to review, and accepting it writes the whole corrected change.  When the model instead
restates the change against the original files, that placement is used.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from core.answer import AnswerRun, HunkState
from core.edits.hunks import make_hunks
from core.edits.parser import Edit
from core.edits.proposal import FileProposal, Proposal, build_proposal
from core.verify.checks import Problem
from core.verify.verifier import ScopeReport, TestState
from core.workspace.files import Workspace, WorkspaceError

MAX_LINES_PER_FAILURE = 30
MAX_REPORT_LINES = 120
MAX_FAILURES = 5


def _trim(text: str, lines: int) -> list[str]:
    """The last `lines` lines of a failure (the assertion is at the end), marked if cut."""
    parts = [ln.rstrip() for ln in text.strip("\n").splitlines()]
    if len(parts) <= lines:
        return parts
    return [f"... ({len(parts) - lines} lines cut)", *parts[-lines:]]


def failure_report(report: ScopeReport) -> str:
    """What failed, trimmed for a prompt: new check problems, then each new failing test's
    output (at most MAX_FAILURES tests, MAX_REPORT_LINES lines in all)."""
    out: list[str] = []
    problems: list[Problem] = report.problems or []
    if problems:
        out.append("Checks:")
        out.extend(f"  {p.short()}" for p in problems[:20])
    tests = report.tests
    if tests.state is TestState.TIMEOUT:
        out.append(f"The tests did not finish: {tests.note}.")
    failures = tests.new_failures[:MAX_FAILURES]
    for t in failures:
        out.append(f"FAILED {t.id}")
        out.extend(_trim(t.text, MAX_LINES_PER_FAILURE))
    if len(out) > MAX_REPORT_LINES:
        out = [*out[:MAX_REPORT_LINES], f"... ({len(out) - MAX_REPORT_LINES} lines cut)"]
    if len(tests.new_failures) > len(failures):
        out.append(f"(+{len(tests.new_failures) - len(failures)} more failing tests)")
    return "\n".join(out)


def fix_prompt(report: ScopeReport) -> str:
    """The next request of the stream: the trimmed failures and what to do about them."""
    ran = f"\nRan: {report.tests.command}" if report.tests.command else ""
    return (f"Your proposed change fails (nothing has been written to the files yet).{ran}\n\n"
            f"{failure_report(report)}\n\n"
            f"Fix the change so that these pass. Answer with edits against the files as "
            f"your proposed change leaves them; keep the parts that were right.")


class Step(Enum):
    FIX = "fix"  # send the failures back for another round
    GREEN = "green"  # nothing broken: stop
    LIMIT = "limit"  # the round limit is reached
    STUCK = "stuck"  # the same failures as last round: more rounds will not help
    WAIT = "wait"  # checks or tests still running


@dataclass
class FixLoop:
    """Rounds of answer -> tests -> fix for one request; the app asks `step` each time a
    round's report settles and sends `fix_prompt` when it says FIX."""

    max_rounds: int = 3
    rounds: int = 0  # fix requests sent so far
    history: list[tuple[str, ...]] = field(default_factory=list)

    def step(self, report: ScopeReport) -> Step:
        if not report.settled or report.tests.blaming:
            return Step.WAIT
        if not report.broken:
            return Step.GREEN
        names = tuple(sorted(report.failure_names()))
        if self.history and self.history[-1] == names:
            return Step.STUCK
        if self.rounds >= self.max_rounds:
            return Step.LIMIT
        return Step.FIX

    def sent(self, report: ScopeReport) -> str:
        """Record a fix round and return its prompt."""
        self.history.append(tuple(sorted(report.failure_names())))
        self.rounds += 1
        return fix_prompt(report)


class OverlayWorkspace(Workspace):
    """The user's workspace as a proposal would leave it, for reading only: the same
    refusal rules, with the proposed texts served instead of the files' contents."""

    def __init__(self, base: Workspace, texts: Mapping[str, str]) -> None:
        # no super().__init__: the rules are the base's, already read
        self.root = base.root
        self.max_bytes = base.max_bytes
        self.deny_globs = base.deny_globs
        self._deny = base._deny
        self._base = base
        self._texts = dict(texts)
        self._snapshots = {}  # Workspace.snapshot's memo of the last reads: its own
        self._snapshots_lock = threading.Lock()

    def read_bytes(self, rel: str) -> bytes | None:
        key = self.relpath(rel)
        if key in self._texts:
            return self._texts[key].encode("utf-8")
        return self._base.read_bytes(rel)

    def write_text(self, rel: str, text: str) -> None:
        raise WorkspaceError(f"{rel}: the overlay of a proposal is read-only")

    def delete(self, rel: str) -> None:
        raise WorkspaceError(f"{rel}: the overlay of a proposal is read-only")


def layered_proposal(ws: Workspace, previous: Proposal, edits: list[Edit]) -> Proposal:
    """The fix round's proposal against the user's files: `edits` placed on the previous
    proposal's texts (or on the originals when that places more of them)."""
    texts = {fp.path: fp.new_text for fp in previous.files}
    layered = build_proposal(OverlayWorkspace(ws, texts), edits)
    if layered.errors:
        restated = build_proposal(ws, edits)
        if len(restated.errors) < len(layered.errors):
            return restated
    final = dict(texts)
    for fp in layered.files:
        final[fp.path] = fp.new_text
    files: list[FileProposal] = []
    prev = {fp.path: fp for fp in previous.files}
    for path, new_text in final.items():
        if path in prev:
            old, base_fp, is_new = prev[path].old_text, prev[path].base_fingerprint, \
                prev[path].is_new
        else:
            old, base_fp, exists = ws.snapshot(path)
            is_new = not exists
        if new_text == old:
            continue
        files.append(FileProposal(path, old, new_text, make_hunks(path, old, new_text),
                                  is_new, base_fp))
    return Proposal(files, list(layered.errors))



class FixRun(AnswerRun):
    """A fix round's answer: its proposal is the previous round's change with the fix
    layered on (`layered_proposal`), so it is reviewed and written as one change."""

    def __init__(self, workspace: Workspace, prompt: str, profile: str,
                 previous: Proposal) -> None:
        super().__init__(workspace, prompt, profile)
        self.previous = previous
        self.kind = "fix"

    def rebuild_proposal(self) -> Proposal:
        proposal = layered_proposal(self.workspace, self.previous, list(self.edits))
        for fp in proposal.files:  # drawn in file order, then line order, like any answer
            fp.hunks.sort(key=lambda h: h.old_start)
        self.proposal = proposal
        for hunk in proposal.hunks:
            self._states.setdefault(hunk.id, HunkState.UNDECIDED)
        return proposal
