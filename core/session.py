"""One user's session with the core: prompts become streamed answers, answers become hunks.

The TUI drives this module and only renders what it holds: an `AnswerRun` owns the text
streamed so far, the edits parsed from it, the proposal (hunks against the working tree)
and the user's decision on each hunk. Writing goes through `core.edits.proposal.apply_proposal`,
which goes through the workspace layer, the only writer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from core.edits.parser import Edit, PendingEdit, StreamingParser
from core.edits.proposal import Proposal, apply_proposal, build_proposal
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
        self.decisions: dict[str, str] = {}
        self.stats = StreamStats()
        self.finished = False
        self.reason: str | None = None
        self.error: str | None = None
        self.source: dict | None = None
        self.applied = False

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

    @property
    def pending(self) -> PendingEdit | None:
        return None if self.finished else self.parser.pending

    @property
    def parse_errors(self) -> list:
        return list(getattr(self.parser, "errors", []))

    def rebuild_proposal(self) -> Proposal:
        """Diff every completed edit against the working tree (heavy: call from a worker)."""
        self.proposal = build_proposal(self.workspace, list(self.edits))
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


def open_workspace(root: Path) -> Workspace:
    return Workspace(root)
