"""Review-dwell guard: an accept faster than anyone can read the hunk asks once, then
counts as an unread accept.

Why: "Because it appears instantly, you trust it more than you should" (seed 000). The
threshold is a *skim floor*, not a reading speed: careful code review runs at 200-400
lines per hour, and reading code for meaning at roughly 1-2 lines per second; 8 lines per
second (with 0.3 s for even a one-line hunk, about one choice-reaction time) is faster than
any of that, so a user who reads is never stopped, only one who accepts by reflex. See
docs/discipline.md for the argument.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

DEFAULT_LINES_PER_SECOND = 8.0
DEFAULT_MIN_DWELL_S = 0.3


@dataclass(frozen=True)
class DwellVerdict:
    ok: bool  # the accept may go through now
    needed_s: float  # dwell the hunk's size asks for
    dwelt_s: float  # time since the hunk was first on screen
    unread: bool = False  # went through below the floor (after the one confirmation)
    confirm: bool = False  # ask the user once: "accept without reading?"

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "needed_s": round(self.needed_s, 3),
                "dwelt_s": round(self.dwelt_s, 3), "unread": self.unread,
                "confirm": self.confirm}


@dataclass
class _Seen:
    first_at: float
    lines: int


@dataclass
class DwellGuard:
    """Tracks when each hunk was first shown and judges accepts against the skim floor.

    Times are seconds on any monotonic clock (default `time.monotonic`); pass ``at`` to
    drive it from tests or from the UI's own clock. ``lines_per_second <= 0`` turns it off.
    """

    lines_per_second: float = DEFAULT_LINES_PER_SECOND
    min_dwell_s: float = DEFAULT_MIN_DWELL_S
    unread_accepts: int = 0
    accepts: int = 0
    _seen: dict[str, _Seen] = field(default_factory=dict, repr=False)
    _warned: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        if self.min_dwell_s < 0:
            raise ValueError("min_dwell_s must be >= 0")

    @classmethod
    def from_config(cls, config: dict | None) -> DwellGuard:
        """From a config dict with a `[guards]` table (or the table itself):
        `dwell_lines_per_second`, `dwell_min_s`."""
        table = (config or {}).get("guards", config or {})
        lps = table.get("dwell_lines_per_second", DEFAULT_LINES_PER_SECOND)
        floor = table.get("dwell_min_s", DEFAULT_MIN_DWELL_S)
        if not isinstance(lps, int | float) or not isinstance(floor, int | float):
            raise ValueError("guards.dwell_lines_per_second and guards.dwell_min_s must be numbers")
        return cls(lines_per_second=float(lps), min_dwell_s=float(floor))

    @property
    def enabled(self) -> bool:
        return self.lines_per_second > 0

    def needed(self, lines: int) -> float:
        """Seconds a hunk of ``lines`` changed lines must be on screen to count as read."""
        if not self.enabled:
            return 0.0
        return max(self.min_dwell_s, max(lines, 0) / self.lines_per_second)

    def shown(self, hunk_id: str, lines: int, at: float | None = None) -> None:
        """The hunk is on screen. The first call starts its clock; later calls (the hunk
        grew while streaming, or scrolled back into view) only update its size."""
        at = time.monotonic() if at is None else at
        seen = self._seen.get(hunk_id)
        if seen is None:
            self._seen[hunk_id] = _Seen(at, lines)
        else:
            seen.lines = max(seen.lines, lines)

    def dwelt(self, hunk_id: str, at: float | None = None) -> float:
        at = time.monotonic() if at is None else at
        seen = self._seen.get(hunk_id)
        return 0.0 if seen is None else max(0.0, at - seen.first_at)

    def check_accept(self, hunk_id: str, at: float | None = None) -> DwellVerdict:
        """Judge an accept of ``hunk_id`` now. Below the floor the first time: not ok,
        ``confirm`` (ask once). The same hunk accepted again after that: ok, ``unread``
        and counted. A hunk never shown has dwelt 0 s. Every ok verdict is one accept."""
        at = time.monotonic() if at is None else at
        seen = self._seen.get(hunk_id)
        lines = seen.lines if seen else 0
        needed = self.needed(lines)
        dwelt = self.dwelt(hunk_id, at)
        if not self.enabled or (seen is not None and dwelt >= needed):
            self.accepts += 1
            return DwellVerdict(True, needed, dwelt)
        if hunk_id not in self._warned:
            self._warned.add(hunk_id)
            return DwellVerdict(False, needed, dwelt, confirm=True)
        self.accepts += 1
        self.unread_accepts += 1
        return DwellVerdict(True, needed, dwelt, unread=True)

    def forget(self, hunk_id: str) -> None:
        """Drop a hunk (rejected, or its answer discarded)."""
        self._seen.pop(hunk_id, None)
        self._warned.discard(hunk_id)
