"""Variations (seed 002: "Generate 5-10 variations. Pick the best one"): N answers to the
same request at once, side by side, one kept.

All N requests go out on the app's one core connection at the same instant. Each pane shows
its answer's edits as a compact diff against the working tree (the same `AnswerRun` parsing
and diffing as the main loop), its tokens and time, and once it finishes the detectors'
verdict (slop, duplicates, secrets, sensitive paths) so the choice is informed. The header
says what the performance model predicts N parallel streams cost in per-stream speed. A
digit takes that variation (the screen dismisses with a `VariationChoice` for the main
accept/reject loop) and cancels the rest; `escape` cancels everything and closes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from core.answer import AnswerRun, StreamStats
from core.client import CoreError
from core.rebuild_schedule import RebuildSchedule, RebuildWork
from core.review import Review
from core.variations import (
    DEFAULT_VARIATIONS,
    ParallelCost,
    VariationSet,
    check_count,
    predict_parallel_cost,
)
from tui.widgets.variation_pane import VariationPane, slop_per_100

FRAME_S = 1 / 30
OK_REASONS = ("stop", "length")


@dataclass(frozen=True)
class VariationChoice:
    """The variation the user took, for the main loop (`app._adopt_answer(profile, prompt,
    text)`); ``index`` is 0-based."""

    profile: str
    prompt: str
    text: str
    index: int
    # the variation's own stream: its timing stays with it, and it is already recorded
    stats: StreamStats | None = field(default=None, compare=False)
    request_id: str | None = field(default=None, compare=False)


def grid_columns(n: int) -> int:
    """Side by side up to two, then a grid that keeps panes wide enough to read a diff."""
    return n if n <= 2 else 2 if n <= 4 else 3 if n <= 9 else 4


class VariationsScreen(ModalScreen[VariationChoice | None]):
    """Push with `app.push_screen(VariationsScreen(client, prompt, messages, n, profile,
    station), callback)`.

    `client` is a connected `core.client.CoreClient`; `messages` what the main loop would send
    for `prompt`. `station` (a `core.session.Workstation`) gives the workspace to diff against,
    the detectors and the session recorder; without it the panes show the raw answers.
    """

    DEFAULT_CSS = """
    VariationsScreen { layout: vertical; background: $background; }
    VariationsScreen > #vary-prompt { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    VariationsScreen > #vary-cost { height: 1; padding: 0 1; }
    VariationsScreen > #vary-banner { height: 1; padding: 0 1; text-style: bold; }
    VariationsScreen > #vary-grid { height: 1fr; grid-gutter: 0 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *[Binding(str(d), f"take({d - 1})", f"Take {d}", show=d == 1) for d in range(1, 10)],
        Binding("0", "take(9)", "Take 10", show=False),
        Binding("enter", "take_focused", "Take focused"),
        Binding("left", "focus_step(-1)", "Prev", show=False),
        Binding("right", "focus_step(1)", "Next", show=False),
        Binding("escape", "close", "Drop all & close"),
    ]

    def __init__(self, client, prompt: str, messages: list[dict], n: int = DEFAULT_VARIATIONS,
                 profile: str = "spark", station=None, *, max_tokens: int | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.prompt = prompt
        self.messages = messages
        self.n = check_count(n)
        self.profile = profile
        self.station = station
        self.max_tokens = max_tokens
        self.variations = VariationSet(prompt, self.n)
        workspace = getattr(station, "workspace", None)
        self.runs: list[AnswerRun | None] = [
            AnswerRun(workspace, prompt, profile) if workspace is not None else None
            for _ in range(self.n)]
        self.stats: list[StreamStats] = [run.stats if run else StreamStats() for run in self.runs]
        self.reviews: list[Review | None] = [None] * self.n
        self.cost: ParallelCost | None = None
        self._streams: dict[int, Any] = {}
        self._reviewing: set[int] = set()
        self._reviewed: set[int] = set()   # review ran (or failed): nothing more will come
        # each variation's rebuilds as the main loop's (core/rebuild_schedule.py): its completed
        # edits re-diffed off the UI loop, one pass at a time, requests coalescing; the panes
        # paint from the runs on the frame timer, so a pass draws nothing itself
        self._schedules: list[RebuildSchedule[AnswerRun, Review] | None] = [
            None if run is None else RebuildSchedule(self._work(index, run)) for index, run in enumerate(self.runs)]
        # one detector pass at a time: the indexes are shared (the thread lock also covers a
        # final review done by a pass in flight at the answer's end: the schedule's hand-over)
        self._review_lock, self._detectors = asyncio.Lock(), threading.Lock()
        self._started = time.perf_counter()
        self._final_painted = False

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(Text.assemble((f"{self.n} variations  ", "bold"), self.prompt),
                     id="vary-prompt")
        yield Static(Text("performance model: ...", style="dim"), id="vary-cost")
        yield Static("", id="vary-banner")
        with Grid(id="vary-grid"):
            for index in range(self.n):
                yield VariationPane(index, id=f"vary-{index + 1}")
        yield Footer()

    def on_mount(self) -> None:
        grid = self.query_one("#vary-grid", Grid)
        columns = grid_columns(self.n)
        grid.styles.grid_size_columns = columns
        grid.styles.grid_size_rows = -(-self.n // columns)
        self.query_one(VariationPane).focus()
        self.run_worker(self._predict(), group="vary-cost")
        for index in range(self.n):
            self.run_worker(self._run_one(index), group="vary", name=f"vary-{index + 1}")
        self._paint()
        self.set_interval(FRAME_S, self._paint)

    def _profile_entry(self) -> dict:
        return (self.client.profile(self.profile) if self.client is not None else None) or {}

    async def _predict(self) -> None:
        entry = self._profile_entry()
        pred = entry.get("predicted") or {}
        self.cost = await asyncio.to_thread(
            predict_parallel_cost, entry.get("chip"), entry.get("model"), self.n,
            precision=entry.get("precision"),
            fallback_tokens_per_s=pred.get("tokens_per_s"), fallback_ttft_ms=pred.get("ttft_ms"))
        self.query_one("#vary-cost", Static).update(self.cost_line())

    def cost_line(self) -> Text:
        """The model's price of N at once: per-stream speed against one stream, and TTFT.

        hwmodel gives the ratio (batch N against batch 1); it is applied to the core's own
        single-stream prediction from the welcome frame, which knows the profile's precision
        and prompt size, so the header agrees with how the core paces the streams."""
        cost, entry = self.cost, self._profile_entry()
        text = Text("model ", style="dim")
        if cost is None:
            return text.append("...")
        pred = entry.get("predicted") or {}
        one_tps, one_ttft = pred.get("tokens_per_s"), pred.get("ttft_ms")
        ratio = cost.per_stream_ratio
        if isinstance(one_tps, int | float) and one_tps > 0 and ratio:
            each = one_tps * ratio
            text.append(f"{self.n} streams: {each:,.0f} tok/s each", style="bold")
            text.append(f" ({ratio:.0%} of one at {one_tps:,.0f})")
            text.append(f"  total {each * self.n:,.0f} tok/s", style="dim")
        else:
            text.append(cost.describe(), style="bold")
        if isinstance(one_ttft, int | float) and cost.ttft_ms is not None and cost.single_ttft_ms:
            text.append(f"  first token x{cost.ttft_ms / cost.single_ttft_ms:.1f}"
                        f" ({one_ttft * cost.ttft_ms / cost.single_ttft_ms:,.0f} ms)")
        where = "/".join(str(entry[k]) for k in ("chip", "model") if entry.get(k))
        source = cost.source if cost.source == "hwmodel" else "estimate"
        text.append(f"  [{source}{' ' + where if where else ''}]", style="dim")
        return text

    # -- streaming ---------------------------------------------------------------------------
    async def _run_one(self, index: int) -> None:
        """One variation through the one answer loop (`core.loop.stream_answer`); a failure
        ends this variation only, the others go on."""
        from core.loop import Finished, Progress, Started, stream_answer

        run = self.runs[index]
        streamed = run if run is not None else AnswerRun(None, self.prompt, self.profile)
        streamed.stats = stats = self.stats[index]
        stats.started = time.perf_counter()
        recorder = getattr(self.station, "recorder", None)
        reason, error = "error", None
        async for update in stream_answer(self.client, streamed, self.messages, max_tokens=self.max_tokens):
            if isinstance(update, Started):
                self._streams[index] = update.stream
                self.variations.update(index, request_id=update.stream.id)
                if recorder is not None:
                    recorder.prompt(update.stream.id, self.prompt, self.profile, kind="variation")
            elif isinstance(update, Progress):
                if run is not None and update.completed:
                    self._request_rebuild(index)
                self.variations.update(index, text_delta=update.text, tokens=stats.tokens)
            elif isinstance(update, Finished):
                reason = update.reason
                error = None if update.ok else (update.error or update.reason)
        self.variations.update(index, done=error is None, error=error,
                               elapsed_s=stats.elapsed_s, ttft_ms=stats.ttft_ms)
        if recorder is not None and index in self._streams:
            entry = self._profile_entry()
            usage = streamed.usage or {}
            recorder.answer_done(self._streams[index].id, profile=self.profile,
                                 tokens=stats.tokens, elapsed_s=stats.elapsed_s,
                                 ttft_ms=stats.ttft_ms, chip=entry.get("chip"),
                                 model=entry.get("model"),
                                 prompt_tokens=usage.get("prompt_tokens"), reason=reason)
        if run is not None:
            await self._review(index)

    def _work(self, index: int, run: AnswerRun) -> RebuildWork[AnswerRun, Review]:
        """What a pass does for one variation: diff it; the detectors on its final state only
        (nobody reads an earlier state's review here: that pass ends as one that gave way)."""
        def nothing(*_: object) -> None:
            return None

        def review(run: AnswerRun, stale: Callable[[], bool], final: bool) -> Review | None:
            if not final:
                return None
            with self._detectors:
                return self.station.review(run)

        return RebuildWork(
            current=lambda: run, build=lambda run: run.rebuild_proposal(), prepare=nothing, record=nothing,
            unrecorded=lambda run: False, review=review,
            reviewed=lambda run, review: self._reviewed_one(index, review), draw=nothing, verify=nothing)

    def _request_rebuild(self, index: int) -> None:
        schedule = self._schedules[index]
        if schedule is not None and schedule.request():
            self.run_worker(schedule.run(), group=f"vary-rebuild-{index}")

    async def _review(self, index: int) -> None:
        """Final diff, then the detectors (duplicates, slop, secrets, sensitive paths): the
        schedule's final pass, one variation at a time (waiting on the loop, not in a thread
        of the default executor that the other variations' rebuilds need)."""
        schedule = self._schedules[index]
        assert schedule is not None
        self._reviewing.add(index)
        try:
            async with self._review_lock:
                await schedule.run(final=True)
        except Exception as exc:  # noqa: BLE001 - a failed diff must not cost the other answers
            self.notify(f"variation {index + 1}: review failed: {exc}", severity="warning")
        finally:
            self._reviewing.discard(index)
            self._reviewed.add(index)

    def _reviewed_one(self, index: int, review: Review | BaseException) -> None:
        """The final review is in (or a detector's error: said, the answer kept)."""
        if isinstance(review, BaseException):
            self.notify(f"variation {index + 1}: review failed: {review}", severity="warning")
            return
        self.reviews[index] = review
        self.variations.update(
            index, slop_score=slop_per_100(review) or 0.0,
            duplicates=sum(1 for f in review.findings if f.kind == "duplicate"))

    # -- painting ----------------------------------------------------------------------------
    @property
    def settled(self) -> bool:
        """Every variation ended and every review that will run has run (tests wait on it)."""
        return self.variations.all_done and all(
            run is None or index in self._reviewed for index, run in enumerate(self.runs))

    def _best(self) -> int | None:
        if not self.variations.all_done or self.n < 2:
            return None
        best = self.variations.ranking()[0]
        v = self.variations.variations[best]
        return best if v.done and not v.error else None

    def _paint(self) -> None:
        """At most once per frame: every pane and the banner."""
        if self._final_painted:
            return
        settled = self.settled
        best = self._best() if settled else None
        for index, v in enumerate(self.variations.variations):
            self.query_one(f"#vary-{index + 1}", VariationPane).show(
                v, self.stats[index], self.runs[index], self.reviews[index],
                best=best == index, reviewing=index in self._reviewing)
        self.query_one("#vary-banner", Static).update(self.banner(settled))
        self._final_painted = settled

    def banner(self, settled: bool) -> Text:
        vs = self.variations
        finished = sum(1 for v in vs.variations if v.done or v.error)
        keys = f"1-{min(self.n, 9)}" if self.n > 1 else "1"
        if not vs.all_done:
            return Text(f"writing {self.n} answers on one connection... "
                        f"{finished}/{self.n} done", style="italic")
        elapsed = max((s.elapsed_s for s in self.stats), default=0.0)
        text = Text(f"{finished} answers in {elapsed:,.2f} s")
        failed = sum(1 for v in vs.variations if v.error)
        if failed:
            text.append(f" ({failed} failed)", style="red")
        if settled and self.n > 1:
            order = " > ".join(str(i + 1) for i in vs.ranking() if not vs.variations[i].error)
            text.append(f"   ranking hint (fewer dups, less slop, shorter): {order}",
                        style="dim")
        text.append(f"   {keys} takes one, escape drops all", style="dim")
        return text

    # -- keys --------------------------------------------------------------------------------
    async def _cancel_running(self, keep: int | None = None) -> None:
        for index, stream in self._streams.items():
            v = self.variations.variations[index]
            if index != keep and not (v.done or v.error):
                try:
                    await stream.cancel()
                except CoreError:  # the connection is gone: the stream ended with it
                    pass

    async def action_take(self, index: int) -> None:
        if index >= self.n:
            return
        v = self.variations.variations[index]
        if v.error:
            self.notify(f"variation {index + 1} has no answer ({v.error})", severity="warning")
            return
        if not v.done:
            self.notify(f"variation {index + 1} is still writing", severity="warning")
            return
        self.variations.choose(index)
        await self._cancel_running(keep=index)
        stream = self._streams.get(index)
        self.dismiss(VariationChoice(self.profile, self.prompt, v.text, index, self.stats[index],
                                     getattr(stream, "id", None)))

    async def action_take_focused(self) -> None:
        if isinstance(self.focused, VariationPane):
            await self.action_take(self.focused.index)

    def action_focus_step(self, step: int) -> None:
        current = self.focused.index if isinstance(self.focused, VariationPane) else 0
        self.query_one(f"#vary-{(current + step) % self.n + 1}", VariationPane).focus()

    async def action_close(self) -> None:
        await self._cancel_running()
        self.dismiss(None)


async def open_variations(app, prompt: str, n: int = DEFAULT_VARIATIONS, *,
                          profile: str | None = None) -> VariationsScreen | None:
    """Push the variations screen on the workstation (`SparkApp`): the request is built from
    the app's context like a normal prompt, and the variation taken goes into the main loop.
    Returns the screen, or None with a notification when it cannot start."""
    prompt = prompt.strip()
    if not prompt:
        app.notify("variations: type a prompt first", severity="warning")
        return None
    if app.client is None:
        app.notify("not connected to the core yet", severity="warning")
        return None
    messages, report = await asyncio.to_thread(app.station.context.build_request, prompt)
    screen = VariationsScreen(app.client, prompt, messages, n, profile or app.profile,
                              app.station, max_tokens=report.reserve)

    def taken(choice: VariationChoice | None) -> None:
        if choice is not None:
            app._adopt_answer(choice.profile, choice.prompt, choice.text, choice.stats, kind="variation",
                              request_id=choice.request_id, timing_recorded=choice.request_id is not None)

    app.push_screen(screen, taken)
    return screen
