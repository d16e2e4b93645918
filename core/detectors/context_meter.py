"""Context meter: how full the model's window is, in the bands seed 002 describes.

"Past 60% the model drifts; past 80% compaction is guaranteed" (seed 002). Tokens come
from the backend's reported usage when it sends one (``estimated=False``); otherwise
from ``estimate_tokens``, the project-wide tokenizer approximation in
``core.backends.tokens`` (~3.2 characters of code per token, close to cl100k), so the
meter, the replay backend's usage and the context report agree.
"""

from __future__ import annotations

from dataclasses import dataclass

# upper bound (exclusive, in percent) -> band name, from seed 002's table
BANDS: tuple[tuple[float, str], ...] = (
    (30.0, "sharp"),
    (60.0, "good"),
    (80.0, "compaction likely"),
    (float("inf"), "compaction guaranteed"),
)
WARN_AT = (60.0, 80.0)
_WARNINGS = {
    60.0: "context {pct:.0f}% full: compaction likely, the model starts losing earlier "
    "context. Finish this task and start a fresh context.",
    80.0: "context {pct:.0f}% full: compaction guaranteed, high risk of losing the plot. "
    "Start a fresh context now.",
}


def band_for(percent: float) -> str:
    """The seed's band for a fill level in percent (0-30 sharp ... 80-100 guaranteed)."""
    for upper, name in BANDS:
        if percent < upper:
            return name
    return BANDS[-1][1]


def estimate_tokens(text: str) -> int:
    """Token estimate for text when the backend reports no usage (see module doc)."""
    from core.backends.tokens import count_tokens

    return count_tokens(text)


def estimate_messages_tokens(messages: list[dict[str, str]]) -> int:
    """Estimate for a chat: content tokens plus ~4 framing tokens per message."""
    from core.backends.tokens import count_message_tokens

    return count_message_tokens(messages)


@dataclass(frozen=True, slots=True)
class ContextState:
    tokens: int
    window: int
    percent: float
    band: str
    warning: str | None  # text once past 60% / 80%, else None
    estimated: bool  # True when the count is our estimate, not the backend's usage
    new_warning: bool = False  # this update crossed a warning threshold (notify once)


class ContextMeter:
    """Tokens in the conversation against the profile's window (128K for Spark)."""

    def __init__(self, window: int) -> None:
        if window <= 0:
            raise ValueError(f"context window must be positive, got {window}")
        self.window = window
        self._level = 0.0  # highest warning threshold already announced
        self.state = self._state(0, estimated=True, new_warning=False)

    def update(self, tokens: int, *, estimated: bool) -> ContextState:
        """Record the conversation's current size; returns the new state."""
        tokens = max(0, int(tokens))
        percent = 100.0 * tokens / self.window
        crossed = [t for t in WARN_AT if percent >= t > self._level]
        if crossed:
            self._level = max(crossed)
        elif percent < min(WARN_AT):
            self._level = 0.0  # dropped back (e.g. after a fresh context): warn again later
        self.state = self._state(tokens, estimated=estimated, new_warning=bool(crossed))
        return self.state

    def reset(self) -> ContextState:
        """A fresh context: back to zero."""
        return self.update(0, estimated=False)

    def _state(self, tokens: int, *, estimated: bool, new_warning: bool) -> ContextState:
        percent = 100.0 * tokens / self.window
        warning = None
        for threshold in sorted(WARN_AT, reverse=True):
            if percent >= threshold:
                warning = _WARNINGS[threshold].format(pct=percent)
                break
        return ContextState(
            tokens=tokens, window=self.window, percent=percent, band=band_for(percent),
            warning=warning, estimated=estimated, new_warning=new_warning,
        )
