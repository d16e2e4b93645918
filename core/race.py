"""Race bookkeeping: the same prompt to two profiles, timed side by side (seed 002).

No Textual here: the race screen only paints what a `Race` holds. Each lane keeps a
`StreamStats` measured on the client, as the user sees it, plus the performance model's
prediction from the core's welcome frame, so the screen can show "predicted 5.7 s" beside
the live clock and say afterwards how far off the model was. Times come from one clock
(injectable, so tests need no sleeping).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.answer import StreamStats

FINISHED_OK = ("stop", "length")


@dataclass(frozen=True)
class RaceResult:
    """The answer the user took out of the race, for the main accept/reject loop."""

    profile: str
    prompt: str
    text: str
    # the lane's timing, so the answer taken enters the session report with what it cost
    stats: StreamStats | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Prediction:
    """The performance model's numbers for one profile (welcome `profiles[].predicted`)."""

    ttft_ms: float | None = None
    tokens_per_s: float | None = None
    basis: str | None = None

    @classmethod
    def from_profile(cls, entry: dict[str, Any] | None) -> Prediction:
        pred = (entry or {}).get("predicted") or {}
        ttft, tps = pred.get("ttft_ms"), pred.get("tokens_per_s")
        return cls(float(ttft) if isinstance(ttft, (int, float)) else None,
                   float(tps) if isinstance(tps, (int, float)) and tps > 0 else None,
                   pred.get("basis"))

    def finish_s(self, tokens: int) -> float | None:
        """Predicted seconds from request to last token for an answer of `tokens` tokens."""
        if self.tokens_per_s is None:
            return None
        return (self.ttft_ms or 0.0) / 1000.0 + tokens / self.tokens_per_s


@dataclass
class Lane:
    """One side of the race: a profile's stream as it arrives."""

    profile: str
    predicted: Prediction = field(default_factory=Prediction)
    stats: StreamStats = field(default_factory=StreamStats)
    text: str = ""
    reason: str | None = None        # the core's done reason, or "error"
    error: str | None = None
    timing: dict[str, Any] = field(default_factory=dict)   # the core's done.timing

    def feed(self, text: str, tokens: int, now: float) -> None:
        if self.stats.first_token is None and (text or tokens):
            self.stats.first_token = now
        self.stats.tokens += tokens
        self.text += text

    def finish(self, reason: str, now: float, *, timing: dict[str, Any] | None = None,
               error: str | None = None) -> None:
        if self.stats.ended is None:
            self.stats.ended = now
            self.reason = reason
            self.error = error
            self.timing = dict(timing or {})

    @property
    def finished(self) -> bool:
        return self.stats.ended is not None

    @property
    def completed(self) -> bool:
        """Finished with an answer (not cancelled, not failed)."""
        return self.reason in FINISHED_OK

    def elapsed_s(self, now: float) -> float:
        return (self.stats.ended if self.stats.ended is not None else now) - self.stats.started

    def ttft_ms(self) -> float | None:
        return self.stats.ttft_ms

    def tokens_per_s(self, now: float) -> float | None:
        """Decode rate after the first token (TTFT excluded), as the user sees it."""
        if self.stats.first_token is None or self.stats.tokens < 2:
            return None
        span = (self.stats.ended if self.stats.ended is not None else now) - self.stats.first_token
        return self.stats.tokens / span if span > 0 else None


class Race:
    """Two lanes started at the same instant; winner, ratio and predictions."""

    def __init__(self, prompt: str, profiles: tuple[str, str], *,
                 predicted: dict[str, Prediction] | None = None, max_tokens: int | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if len(profiles) != 2 or profiles[0] == profiles[1]:
            raise ValueError(f"a race needs two different profiles, got {profiles!r}")
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.clock = clock
        predicted = predicted or {}
        self.lanes = tuple(Lane(name, predicted.get(name, Prediction()), StreamStats(started=0.0))
                           for name in profiles)
        self.started: float | None = None

    def start(self) -> None:
        """Start both clocks at once: call right before sending the two requests."""
        self.started = self.clock()
        for lane in self.lanes:
            lane.stats.started = self.started

    def now(self) -> float:
        return self.clock()

    def lane(self, profile: str) -> Lane:
        for lane in self.lanes:
            if lane.profile == profile:
                return lane
        raise KeyError(profile)

    def other(self, lane: Lane) -> Lane:
        return self.lanes[1] if lane is self.lanes[0] else self.lanes[0]

    def feed(self, profile: str, text: str, tokens: int) -> None:
        self.lane(profile).feed(text, tokens, self.clock())

    def finish(self, profile: str, reason: str, *, timing: dict[str, Any] | None = None,
               error: str | None = None) -> None:
        self.lane(profile).finish(reason, self.clock(), timing=timing, error=error)

    @property
    def done(self) -> bool:
        return all(lane.finished for lane in self.lanes)

    @property
    def winner(self) -> Lane | None:
        """The first lane to finish with an answer; a failed or cancelled lane never wins."""
        ok = [lane for lane in self.lanes if lane.completed]
        return min(ok, key=lambda lane: lane.stats.ended or 0.0) if ok else None

    def ratio(self) -> float | None:
        """Loser's time over the winner's, request to last token; None until both complete."""
        win = self.winner
        if win is None:
            return None
        lose = self.other(win)
        if not lose.completed:
            return None
        here = win.elapsed_s(self.clock())
        return lose.elapsed_s(self.clock()) / here if here > 0 else None

    def expected_tokens(self, lane: Lane) -> int | None:
        """Best guess of the lane's answer length, for its predicted finish time.

        Its own count once finished; else the other lane's answer to the same prompt; else
        the token cap; else unknown.
        """
        if lane.finished:
            return lane.stats.tokens
        other = self.other(lane)
        if other.reason == "stop" and other.stats.tokens:
            guess = other.stats.tokens
            return min(guess, self.max_tokens) if self.max_tokens else guess
        return self.max_tokens

    def predicted_finish_s(self, lane: Lane) -> tuple[float | None, bool]:
        """(seconds, exact): the model's finish time; `exact` False means a lower bound
        from the tokens seen so far, because the answer's length is not known yet."""
        tokens = self.expected_tokens(lane)
        if tokens is not None:
            return lane.predicted.finish_s(max(tokens, lane.stats.tokens)), True
        return lane.predicted.finish_s(lane.stats.tokens), False

    def banner(self) -> str | None:
        """One line for the top of the screen: winner, time and ratio; None while racing."""
        now = self.clock()
        win = self.winner
        if win is None:
            if self.done:
                why = "; ".join(f"{lane.profile} {lane.error or lane.reason}" for lane in self.lanes)
                return f"no winner: {why}"
            return None
        lose = self.other(win)
        head = f"{win.profile} finished in {win.elapsed_s(now):.1f} s"
        ratio = self.ratio()
        if ratio is not None:
            return (f"{head}, {ratio:.1f}x faster than {lose.profile} "
                    f"({lose.elapsed_s(now):.1f} s)")
        if not lose.finished:
            so_far = lose.elapsed_s(now) / max(win.elapsed_s(now), 1e-9)
            return f"{head}, already {so_far:.1f}x faster than {lose.profile} (still running)"
        return f"{head}; {lose.profile} {lose.error or lose.reason}"
