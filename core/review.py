"""The review of one answer: what the detectors and guards found, and the one accept policy.

Why one policy object: whether a key may accept a hunk depends on the guards (a sensitive
path blocked on a fast profile, a secret that needs a second press) and on the review-dwell
guard (an accept faster than reading asks once). The screen used to mix these in its key
handler; here they answer one question, `AcceptPolicy.check`, with one of four verdicts,
and the policy owns the "asked once already" state so a second press goes through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


@dataclass
class Finding:
    """One thing a detector or guard wants the user to see before accepting."""

    severity: str  # "info" | "warning" | "error"
    kind: str  # "duplicate" | "slop" | "secret" | "sensitive" | "parse" | "match" | "unchecked" (a check that did not run)
    message: str
    hunk_id: str | None = None


@dataclass
class Review:
    """Detector results for one answer: badges per hunk and the list for the side panel."""

    findings: list[Finding] = field(default_factory=list)
    slop_score: float | None = None
    added_lines: int = 0

    def gate(self, hunk_id: str) -> tuple[str, str] | None:
        """("block", why) when policy forbids accepting this hunk, ("confirm", why) for a
        secret or a flagged sensitive path, None when nothing stands in the way."""
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

    @property
    def slop_findings(self) -> int:
        return sum(1 for f in self.findings if f.kind == "slop")


class Verdict(str, Enum):
    ALLOW = "allow"
    CONFIRM = "confirm"  # asked once; the same key again accepts
    BLOCK = "block"  # cannot be accepted on this profile
    TOO_FAST = "too-fast"  # on screen shorter than reading takes; the same key again accepts


@dataclass(frozen=True)
class AcceptCheck:
    verdict: Verdict
    message: str = ""
    unread: bool = False  # allowed, but counted as an unread accept


class AcceptPolicy:
    """May this hunk be accepted now? Guards first, then the review-dwell guard."""

    def __init__(self, dwell) -> None:
        self.dwell = dwell
        self._confirmed: set[str] = set()

    def check(self, hunk_id: str, review: Review | None) -> AcceptCheck:
        gate = review.gate(hunk_id) if review else None
        if gate is not None and gate[0] == "block":
            return AcceptCheck(Verdict.BLOCK, f"{gate[1]} (b re-asks the deep profile)")
        if gate is not None and hunk_id not in self._confirmed:
            self._confirmed.add(hunk_id)
            return AcceptCheck(Verdict.CONFIRM,
                               f"{gate[1]}: press again to accept anyway, b re-asks the deep profile")
        verdict = self.dwell.check_accept(hunk_id)
        if not verdict.ok:
            return AcceptCheck(Verdict.TOO_FAST,
                               f"on screen {verdict.dwelt_s:.1f} s, reading takes ~{verdict.needed_s:.1f} s: "
                               "press again to accept unread")
        return AcceptCheck(Verdict.ALLOW, unread=bool(verdict.unread))
