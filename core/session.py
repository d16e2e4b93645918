"""Compatibility names for the session's parts, which now live one job per module.

`core.answer` (one answer and its hunk states), `core.review` (findings and the accept
policy), `core.workstation` (the facade the UI calls) and `core.loop` (the one answer
loop). Import from those; this module keeps older imports working.
"""

from __future__ import annotations

from core.answer import ACCEPTED, PENDING, REJECTED, AnswerRun, HunkState, StreamStats
from core.review import AcceptPolicy, Finding, Review, Verdict
from core.workstation import Workstation

__all__ = ["ACCEPTED", "PENDING", "REJECTED", "AcceptPolicy", "AnswerRun", "Finding", "HunkState",
           "Review", "StreamStats", "Verdict", "Workstation"]
