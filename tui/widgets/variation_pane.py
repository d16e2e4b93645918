"""One variation in the side-by-side grid: its numbers on top, its edits as a compact diff.

The pane paints only from what it is handed (a `core.variations.Variation`, the answer's
`AnswerRun` when there is a workspace to diff against, and its `Review` once the detectors
ran) and skips a repaint when nothing it shows has changed, so N panes at a frame each
stay cheap at thousands of tokens per second.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from core.answer import AnswerRun, StreamStats
from core.review import Review
from core.variations import Variation
from tui.widgets.diff_render import render_hunk, render_pending

PENDING_TAIL = 12      # lines of the block being written: enough to follow, small enough for a grid
TEXT_TAIL = 200        # lines of a raw answer shown when there is nothing to diff
MAX_FINDINGS = 3       # finding lines under the numbers; the rest are counted


def slop_per_100(review: Review | None) -> float | None:
    """Slop findings per 100 added lines: the status bar's session unit, per answer."""
    if review is None or not review.added_lines:
        return None
    return 100.0 * sum(1 for f in review.findings if f.kind == "slop") / review.added_lines


def variation_stats(v: Variation, stats: StreamStats, run: AnswerRun | None,
                    review: Review | None, *, reviewing: bool = False) -> Text:
    """Short lines for a narrow pane: state and clock, volume, what the detectors found."""
    text = Text()
    if v.error:
        state, style = v.error, "bold red"
    elif v.done:
        state, style = "done", "bold green"
    else:
        state, style = "writing", "yellow"
    text.append(f"{state:<7}", style=style)
    text.append(f" {stats.elapsed_s:,.2f} s", style="bold")
    ttft = stats.ttft_ms
    text.append("  TTFT ", style="dim")
    text.append("-" if ttft is None else f"{ttft:,.0f} ms")
    rate = stats.tokens_per_s
    text.append(f"\n{stats.tokens:,} tok  ")
    text.append("- tok/s" if rate is None else f"{rate:,.0f} tok/s", style="bold")
    if run is not None:
        added = sum(len(h.new_lines) for h in run.hunks)
        removed = sum(len(h.old_lines) for h in run.hunks)
        text.append(f"  {len(run.hunks)} hunk(s) ", style="dim")
        text.append(f"+{added}", style="green")
        text.append(f" -{removed}", style="red")
    text.append("\n")
    if review is None:
        text.append("reviewing..." if reviewing else "slop -  dups -", style="dim")
        return text
    score = slop_per_100(review)
    text.append("slop ", style="dim")
    text.append("-" if score is None else f"{score:.1f}/100 lines",
                style="yellow" if score else "")
    text.append("  dups ", style="dim")
    text.append(str(v.duplicates), style="bold magenta" if v.duplicates else "")
    worst = [f for f in review.findings if f.kind in ("duplicate", "secret", "sensitive")]
    worst += [f for f in review.findings if f.kind in ("parse", "match")]
    for finding in worst[:MAX_FINDINGS]:
        style = "red" if finding.severity == "error" else "magenta"
        text.append(f"\n! {finding.message}", style=style)
    if len(worst) > MAX_FINDINGS:
        text.append(f"\n  +{len(worst) - MAX_FINDINGS} more", style="dim")
    return text


def variation_body(v: Variation, run: AnswerRun | None, dark: bool = True, *,
                   badges: dict[str, str] | None = None,
                   cache: dict[tuple, Text] | None = None) -> RenderableType:
    """The answer's hunks as a diff (and the block being written), or the raw tail.

    ``cache`` keeps each finished hunk's highlighted text, so a frame while streaming only
    highlights the block being written."""
    if not v.text:
        why = "waiting for the first token..." if not (v.done or v.error) else "no answer"
        return Text(why, style="dim italic")
    if run is not None and (run.hunks or not run.finished):
        parts: list[RenderableType] = []
        badges = badges or {}
        cache = {} if cache is None else cache
        total = len(run.hunks)
        for index, hunk in enumerate(run.hunks, 1):
            key = (hunk.id, index, total, badges.get(hunk.id, ""), dark)
            if key not in cache:
                cache[key] = render_hunk(hunk, "proposed", index, total, key[3])
            parts.append(cache[key])
        pending = run.pending
        if pending is not None:
            parts.append(render_pending(pending, tail_lines=PENDING_TAIL))
        if parts:
            return Group(*parts)
    text = v.text
    lines = text.splitlines()
    if len(lines) > TEXT_TAIL:
        text = "\n".join(lines[-TEXT_TAIL:])
    note = Text("no change proposed: the answer as written\n", style="yellow") \
        if run is not None and run.finished else Text()
    return Group(note, Syntax(text, "markdown", theme="monokai" if dark else "default",
                              word_wrap=True, background_color="default"))


class VariationPane(Vertical, can_focus=True):
    """Variation `index` (shown 1-based, the digit that takes it)."""

    DEFAULT_CSS = """
    VariationPane { height: 1fr; width: 1fr; border: round $panel; padding: 0 1; }
    VariationPane:focus { border: round $accent; }
    VariationPane.-best { border: round $success; }
    VariationPane.-best:focus { border: double $success; }
    VariationPane > .variation-stats { height: auto; margin-bottom: 1; }
    VariationPane > VerticalScroll { height: 1fr; }
    """

    def __init__(self, index: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.index = index
        self.border_title = f"[{self.key}] variation {index + 1}"
        self._stats_key: tuple | None = None
        self._body_key: tuple | None = None
        self._hunk_cache: dict[tuple, Text] = {}

    @property
    def key(self) -> str:
        """The digit that takes this variation (`0` for the tenth; none after that)."""
        return str(self.index + 1) if self.index < 9 else "0" if self.index == 9 else "enter"

    def compose(self) -> ComposeResult:
        yield Static("", classes="variation-stats")
        with VerticalScroll(can_focus=False):
            yield Static("", classes="variation-body")

    def show(self, v: Variation, stats: StreamStats, run: AnswerRun | None,
             review: Review | None, *, best: bool = False, reviewing: bool = False) -> None:
        """Repaint what changed since the last frame."""
        self.set_class(best, "-best")
        key = (round(stats.elapsed_s, 2) if not (v.done or v.error) else None, stats.tokens,
               v.done, v.error, id(review), reviewing,
               len(run.hunks) if run is not None else None)
        if key != self._stats_key:
            self._stats_key = key
            self.query_one(".variation-stats", Static).update(
                variation_stats(v, stats, run, review, reviewing=reviewing))
        hunk_ids = tuple(h.id for h in run.hunks) if run is not None else ()
        body_key = (len(v.text), v.done, v.error, hunk_ids, id(review),
                    run.finished if run is not None else None)
        if body_key != self._body_key:
            self._body_key = body_key
            dark = getattr(self.app.current_theme, "dark", True)
            badges = review.badges() if review is not None else {}
            self.query_one(".variation-body", Static).update(
                variation_body(v, run, dark, badges=badges, cache=self._hunk_cache))
            scroll = self.query_one(VerticalScroll)
            if not (v.done or v.error):
                scroll.scroll_end(animate=False)    # follow the writing
            else:
                scroll.scroll_home(animate=False)   # finished: read it from the first hunk
