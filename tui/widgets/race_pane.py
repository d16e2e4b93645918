"""One side of the race: the answer streaming in, with its clock and the model's forecast.

The pane paints only from a `core.race.Race` it is handed, and skips a repaint when nothing
it shows has changed, so two panes at a frame each cost little even at 5,000 tokens/s.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.widgets import Static

from core.race import Lane, Race

LIGHTNING = "\u26a1"
# the text re-highlights at most this often while streaming (nobody reads 30 new tails a
# second); the numbers above it still repaint every frame
TEXT_FRAME_S = 1 / 15
BRAIN = "\U0001f9e0"


def mark(profile: str) -> str:
    return LIGHTNING if profile == "spark" else BRAIN


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f} s"


def lane_stats(race: Race, lane: Lane, now: float) -> Text:
    """Three short lines (narrow panes wrap nothing): clock, volume, the model's forecast."""
    text = Text()
    state = ("racing" if not lane.finished
             else "done" if lane.completed else (lane.error or lane.reason or "ended"))
    style = "bold green" if lane.completed else "yellow" if not lane.finished else "bold red"
    text.append(f"{state:<7}", style=style)
    text.append(f" {_secs(lane.elapsed_s(now))}", style="bold")
    ttft = lane.ttft_ms()
    text.append("   TTFT ", style="dim")
    text.append("-" if ttft is None else f"{ttft:,.0f} ms")
    rate = lane.tokens_per_s(now)
    text.append(f"\n{lane.stats.tokens:,} tok   ")
    text.append("- tok/s" if rate is None else f"{rate:,.0f} tok/s", style="bold")
    text.append("\n")
    pred = lane.predicted
    if pred.tokens_per_s is None:
        text.append("model: no prediction for this profile", style="dim")
        return text
    secs, exact = race.predicted_finish_s(lane)
    tokens = race.expected_tokens(lane)
    text.append("model ", style="dim")
    text.append(f"{'' if exact else '>= '}{_secs(secs)}", style="bold")
    if lane.completed and secs:
        off = round((lane.elapsed_s(now) - secs) / secs * 100)
        text.append(f" ({'+-0' if off == 0 else f'{off:+d}'}%)", style="italic")
    count = f"{tokens:,} tok" if exact and tokens is not None else f"{lane.stats.tokens:,} tok so far"
    text.append(f"  {pred.ttft_ms or 0:,.0f} ms + {count} @ {pred.tokens_per_s:,.0f}/s",
                style="dim")
    return text


def answer_view(lane: Lane, tail_lines: int | None = None) -> Content | Text:
    """The answer as highlighted markdown (edit blocks are fenced code), in theme colours.

    Textual's own highlighter gives `Content` (no per-frame conversion from Rich styles,
    which cost 3x more in a profile), and while streaming only the last `tail_lines` are
    highlighted: what fits the pane is what is read.
    """
    text = lane.text
    if not text:
        why = "waiting for the first token..." if not lane.finished else (
            f"no answer ({lane.error or lane.reason})")
        return Text(why, style="dim italic")
    if tail_lines is not None:
        cut = len(text)
        for _ in range(tail_lines):
            cut = text.rfind("\n", 0, cut)
            if cut < 0:
                break
        text = text[cut + 1:] if cut >= 0 else text
    return highlight(text.rstrip("\n"), language="markdown")


class RacePane(Vertical, can_focus=True):
    """A profile's lane: border title with its key, live stats, the answer's tail."""

    DEFAULT_CSS = """
    RacePane { width: 1fr; height: 1fr; border: round $panel; padding: 0 1; }
    RacePane:focus { border: round $accent; }
    RacePane.-winner { border: round $success; }
    RacePane.-winner:focus { border: double $success; }
    RacePane > .race-stats { height: auto; margin-bottom: 1; }
    RacePane > VerticalScroll { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_body(-1)", "Scroll up", show=False),
        Binding("down", "scroll_body(1)", "Scroll down", show=False),
        Binding("pageup", "scroll_body(-10)", "Page up", show=False),
        Binding("pagedown", "scroll_body(10)", "Page down", show=False),
    ]

    def __init__(self, profile: str, key: str, subtitle: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.profile = profile
        self.key = key
        self.border_title = f"[{key}] {mark(profile)} {profile}"
        self.border_subtitle = subtitle
        self._stats_key: tuple | None = None
        self._text_key: tuple | None = None
        self._text_painted = float("-inf")

    def compose(self) -> ComposeResult:
        yield Static("", classes="race-stats")
        with VerticalScroll(can_focus=False):
            yield Static("", classes="race-answer")

    def action_scroll_body(self, lines: int) -> None:
        body = self.query_one(VerticalScroll)
        body.scroll_to(y=body.scroll_y + lines, animate=False)

    def show(self, race: Race, lane: Lane, now: float, winner: bool) -> None:
        """Repaint what changed since the last frame."""
        self.set_class(winner, "-winner")
        secs, _ = race.predicted_finish_s(lane)
        key = (round(lane.elapsed_s(now), 2), lane.stats.tokens, lane.reason, lane.finished,
               lane.completed, None if secs is None else round(secs, 2))
        if key != self._stats_key:
            self._stats_key = key
            self.query_one(".race-stats", Static).update(lane_stats(race, lane, now))
        text_key = (len(lane.text), lane.finished)
        throttled = not lane.finished and now - self._text_painted < TEXT_FRAME_S
        if text_key != self._text_key and not throttled:
            self._text_key = text_key
            self._text_painted = now
            body = self.query_one(VerticalScroll)
            tail = None if lane.finished else max(body.size.height, 20)
            self.query_one(".race-answer", Static).update(answer_view(lane, tail))
            if lane.finished:   # the whole answer, to read from the top before taking it
                body.scroll_home(animate=False)
            else:
                body.scroll_end(animate=False)
