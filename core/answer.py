"""One answer from the model: stream -> edits -> proposal -> one state per hunk.

Why a state enum and not strings set by the screen: the screen, the status bar, the session
record and the files on disk must agree at every moment (issue 13). Every state change of a
hunk happens here, by a method that says why, and the screen only draws `state(hunk_id)`.

The states, and the rule that makes "shown accepted" mean "on disk":

- UNDECIDED: nothing chosen yet.
- CHOSEN: the user accepted it; it is written when the whole answer is decided (one answer,
  one decision). It is not on disk yet and is never drawn as accepted.
- REJECTED: the user rejected it.
- STALE: its file changed on disk and the hunk no longer places (`Proposal.hunk_status`);
  it cannot be accepted until the file places it again.
- REFUSED: accepted, but it cannot be written (stale, blocked, the write refused); the
  reason is kept and drawn in the diff. While any hunk is REFUSED nothing of the answer is
  written; `r` turns it into REJECTED.
- WRITTEN: its lines are on disk (written by this answer's change, not undone).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from core.edits.hunks import Hunk
from core.edits.parser import Edit, PendingEdit, StreamingParser
from core.edits.proposal import ApplyResult, Proposal, ProposalBuilder, apply_proposal
from core.workspace.files import Workspace


class HunkState(str, Enum):
    UNDECIDED = "undecided"
    CHOSEN = "chosen"
    REJECTED = "rejected"
    STALE = "stale"
    REFUSED = "refused"
    WRITTEN = "written"


# states a key can still change before the answer is written
OPEN_STATES = frozenset({HunkState.UNDECIDED, HunkState.STALE, HunkState.REFUSED})

# kept for callers of the old string API (core.session re-exports them)
PENDING, ACCEPTED, REJECTED = "undecided", "written", "rejected"


def _remembered(exists: Callable[[str], bool]) -> Callable[[str], bool]:
    """`exists`, asked once per name for one answer's parse: the parser asks it on the UI
    thread for every block's path line (40 blocks: ~300 lstat calls, each a GIL release and
    a wait to get it back while the rebuild and review threads run: 20-80 ms of the stream's
    UI time). Nothing writes the tree while an answer streams; a refusal (raised) is not kept."""
    known: dict[str, bool] = {}

    def remembered(name: str) -> bool:
        if name not in known:
            known[name] = exists(name)
        return known[name]

    return remembered


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


# What to do about a failed stream, by error code (shown in the diff area).
_REMEDY = {
    "disconnected": "the connection to the core dropped; it reconnects by itself: press Enter "
                    "in the prompt to send again",
    "upstream_unreachable": "the model's endpoint did not answer: check the profile's base_url "
                            "and your network, then send again",
    "upstream_error": "the model's endpoint returned an error: check the API key and model "
                      "name of the profile, then send again",
    "timeout": "the model took too long: send again, or ctrl+l for the other profile",
    "context_overflow": "the request does not fit the model's window: ctrl+n starts a fresh "
                        "context, /drop removes files",
}


def remedy_for(code: str | None) -> str:
    return _REMEDY.get(code or "", "send the prompt again; if it keeps failing, check the core "
                                   "(`spark core serve`) and the profile's endpoint")


_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.DOTALL | re.MULTILINE)
_BLOCK = re.compile(r"^<{5,9} SEARCH.*?^>{5,9} REPLACE[ \t]*$", re.DOTALL | re.MULTILINE)


def prose_of(text: str) -> str:
    """The model's own words around its edits (what it did and why), edit blocks removed."""
    out = _BLOCK.sub("", _FENCE.sub("", text))
    lines = [line.rstrip() for line in out.splitlines()]
    kept = [line for line in lines if line and not re.fullmatch(r"[\w./-]+\.\w+", line.strip())]
    return "\n".join(kept).strip()


class AnswerRun:
    """One answer from the model: stream -> edits -> proposal -> per-hunk states."""

    def __init__(self, workspace: Workspace | None, prompt: str, profile: str) -> None:
        """`workspace` None: an answer only streamed and parsed (a race lane), never diffed."""
        self._workspace = workspace
        self.prompt = prompt
        self.profile = profile
        self.text = ""
        self.parser = self._new_parser()
        self.edits: list[Edit] = []
        self.proposal: Proposal | None = None
        # re-diffs only files whose edits changed
        self._builder = ProposalBuilder(workspace) if workspace is not None else None
        self._states: dict[str, HunkState] = {}
        self.reasons: dict[str, str] = {}  # hunk id -> why it is REFUSED or STALE
        self.stats = StreamStats()
        self.finished = False
        self.reason: str | None = None
        self.error: str | None = None
        self.error_code: str | None = None
        self.source: dict | None = None
        self.applied = False  # the answer's decision was written (or nothing was left to write)
        self.change_id: str | None = None  # the journal entry of what it wrote (undo matches it)
        self.commit: str | None = None
        self.redirects: list[str] = []
        self.request_id = uuid.uuid4().hex[:12]
        self.origin: str | None = None  # e.g. "taken from base" for an answer chosen in a race
        self.kind = "chat"  # chat | race | variation | batch
        self.usage: dict | None = None
        self.timing: dict | None = None  # the done frame's timing (predicted, calibrated)
        self.parse_errors_before_steer: list = []

    def _new_parser(self) -> StreamingParser:
        """A parser that knows the tree, so a bare `Makefile`, an `app/[id]/page.tsx` route or a
        doubled folder resolve to files that exist (a stream-only lane has no tree)."""
        ws = self._workspace
        return StreamingParser(exists=_remembered(ws.exists) if ws is not None else None)

    @property
    def workspace(self) -> Workspace:
        if self._workspace is None:
            raise RuntimeError("this answer has no workspace (it is only streamed)")
        return self._workspace

    # -- streaming -------------------------------------------------------------------------
    def feed(self, text: str, tokens: int) -> list[Edit]:
        """Take one delta; returns the edits it completed (so the caller rebuilds hunks)."""
        self.stats.on_tokens(tokens)
        self.text += text
        completed = self.parser.feed(text)
        self.edits.extend(completed)
        return completed

    def finish(self, reason: str | None = None, error: str | None = None,
               code: str | None = None) -> list[Edit]:
        """The stream ended (done, cancelled or failed); flush what the parser still holds."""
        self.stats.ended = time.perf_counter()
        self.reason, self.error, self.error_code = reason, error, code
        completed = self.parser.finish()
        self.edits.extend(completed)
        self.finished = True
        return completed

    def steered(self, redirect: str) -> None:
        """The user redirected the stream: keep completed edits, drop the half-written block.

        The core continues under the same id with a new assistant turn, so parsing starts
        afresh; the redirect is kept for the transcript and the record.
        """
        self.parse_errors_before_steer = self.parse_errors
        self.parser = self._new_parser()
        self.redirects.append(redirect)

    @property
    def pending(self) -> PendingEdit | None:
        return None if self.finished else self.parser.pending

    @property
    def parse_errors(self) -> list:
        return self.parse_errors_before_steer + list(getattr(self.parser, "errors", []))

    @property
    def prose(self) -> str:
        return prose_of(self.text)

    def rebuild_proposal(self) -> Proposal:
        """Diff every completed edit against the working tree (heavy: call from a worker)."""
        if self._builder is None:
            raise RuntimeError("this answer has no workspace to diff against")
        proposal = self._builder.build(list(self.edits))
        # file order, then line order within a file: hunks are numbered as drawn. A new
        # sorted list, swapped in: the builder hands the same FileProposal to every rebuild
        # that did not change its file, and `list.sort` in place shows other threads (the
        # UI drawing the previous proposal) an empty list while its key function runs
        for fp in proposal.files:
            fp.hunks = sorted(fp.hunks, key=lambda h: h.old_start)
        self.proposal = proposal
        for hunk in proposal.hunks:
            self._states.setdefault(hunk.id, HunkState.UNDECIDED)
        return proposal

    # -- states ----------------------------------------------------------------------------
    @property
    def hunks(self) -> list[Hunk]:
        return self.proposal.hunks if self.proposal else []

    def hunk(self, hunk_id: str) -> Hunk:
        for hunk in self.hunks:
            if hunk.id == hunk_id:
                return hunk
        raise KeyError(hunk_id)

    def state(self, hunk_id: str) -> HunkState:
        return self._states.get(hunk_id, HunkState.UNDECIDED)

    def states(self) -> dict[str, HunkState]:
        return {h.id: self.state(h.id) for h in self.hunks}

    def ids_in(self, *states: HunkState) -> list[str]:
        return [h.id for h in self.hunks if self.state(h.id) in states]

    def decide(self, hunk_id: str, accept: bool) -> HunkState:
        """The user's key on one open hunk. Accepting a STALE hunk refuses it with the reason
        (it cannot be written); rejecting anything open rejects it."""
        state = self.state(hunk_id)
        if state not in OPEN_STATES or self.applied:
            return state
        if not accept:
            self._set(hunk_id, HunkState.REJECTED)
        elif state is HunkState.STALE:
            self.refuse(hunk_id, self.reasons.get(hunk_id) or "its file changed on disk under it")
        elif state is HunkState.UNDECIDED:
            self._set(hunk_id, HunkState.CHOSEN)
        return self.state(hunk_id)

    def reopen(self, hunk_id: str) -> None:
        """A decision taken back before the answer is written (after the check's warning)."""
        if not self.applied and self.state(hunk_id) in (HunkState.CHOSEN, HunkState.REJECTED):
            self._set(hunk_id, HunkState.UNDECIDED)

    def refuse(self, hunk_id: str, reason: str) -> None:
        self._set(hunk_id, HunkState.REFUSED, reason)

    def _set(self, hunk_id: str, state: HunkState, reason: str | None = None) -> None:
        self._states[hunk_id] = state
        if reason is None:
            self.reasons.pop(hunk_id, None)
        else:
            self.reasons[hunk_id] = reason

    def mark_staleness(self, status: dict[str, str]) -> bool:
        """Fold `Proposal.hunk_status` in (before the answer is written): an undecided hunk
        that no longer places becomes STALE, a chosen one REFUSED; one that places again
        goes back to UNDECIDED. Returns whether any state changed."""
        if self.applied:
            return False
        changed = False
        for hunk_id, word in status.items():
            state = self.state(hunk_id)
            why = "its file changed on disk and this hunk no longer matches it"
            if word == "stale" and state is HunkState.UNDECIDED:
                self._set(hunk_id, HunkState.STALE, why)
            elif word == "stale" and state is HunkState.CHOSEN:
                self.refuse(hunk_id, why + "; r rejects it, b re-asks")
            elif word != "stale" and state in (HunkState.STALE, HunkState.REFUSED) \
                    and self.reasons.get(hunk_id, "").startswith("its file changed"):
                self._set(hunk_id, HunkState.UNDECIDED)
            else:
                continue
            changed = True
        return changed

    @property
    def undecided(self) -> list[str]:
        """Hunks a key can still decide (undecided or stale), in the order drawn."""
        return self.ids_in(HunkState.UNDECIDED, HunkState.STALE)

    @property
    def open(self) -> list[str]:
        return self.ids_in(*OPEN_STATES)

    @property
    def chosen(self) -> set[str]:
        return set(self.ids_in(HunkState.CHOSEN))

    @property
    def accepted(self) -> set[str]:
        """Hunks accepted by the user and not refused: written or to be written."""
        return set(self.ids_in(HunkState.CHOSEN, HunkState.WRITTEN))

    @property
    def written(self) -> set[str]:
        return set(self.ids_in(HunkState.WRITTEN))

    @property
    def all_decided(self) -> bool:
        """Every hunk decided and none refused: the answer's one decision can be written."""
        return self.finished and self.proposal is not None and not self.open

    def counts(self) -> dict[str, int]:
        out = {state.value: 0 for state in HunkState}
        for state in self.states().values():
            out[state.value] += 1
        return out

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

    # -- writing and undo ------------------------------------------------------------------
    def apply(self, *, force: bool = False) -> ApplyResult:
        """Write the chosen hunks through the workspace, once, when every hunk is decided.

        Files the workspace refuses get their hunks REFUSED with the reason; the hunks of
        files written become WRITTEN (the result names both)."""
        if self.proposal is None:
            raise RuntimeError("no proposal to apply")
        chosen = self.chosen
        result = apply_proposal(self.workspace, self.proposal, chosen, message=self.prompt, force=force)
        written = set(result.written)
        refused = {err.path: err.message for err in result.refused}
        for hunk in self.hunks:
            if hunk.id not in chosen:
                continue
            if hunk.path in written:
                self._set(hunk.id, HunkState.WRITTEN)
            elif hunk.path in refused:
                self.refuse(hunk.id, refused[hunk.path])
            else:  # a new empty file or a no-op: nothing to write, nothing on disk
                self._set(hunk.id, HunkState.WRITTEN)
        self.change_id, self.commit = result.change_id, result.commit
        self.applied = not self.open
        return result

    def undone(self, restored: list[str]) -> list[str]:
        """The change was undone for these files: their written hunks go back to UNDECIDED
        (as before the decision), so they can be decided again. Returns those hunk ids."""
        back = [h.id for h in self.hunks
                if h.path in set(restored) and self.state(h.id) is HunkState.WRITTEN]
        for hunk_id in back:
            self._set(hunk_id, HunkState.UNDECIDED)
        if back:
            self.applied = False
            self.change_id = None
            for hunk_id in self.ids_in(HunkState.CHOSEN):
                self._set(hunk_id, HunkState.UNDECIDED)
        return back

    # -- for the record --------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "prompt": self.prompt, "profile": self.profile,
                "kind": self.kind, "states": {k: v.value for k, v in self.states().items()}}
