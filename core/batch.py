"""Task batches: a queue of independent prompts, each with a fresh context, run in parallel
up to a limit, reviewed one after the other in queue order.

Why: "Batch. Do not chain" and "Clear context after every task" (seed 002). This module is
pure bookkeeping plus an asyncio runner that takes the `generate` coroutine function, so
it runs the same against the real core, a fake in tests, or the CLI.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import SparkError

if TYPE_CHECKING:
    from core.answer import AnswerRun

DEFAULT_MAX_PARALLEL = 4
_OK_REASONS = ("stop", "length")
QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
FINISHED = (DONE, FAILED, CANCELLED)


class BatchError(SparkError, ValueError):
    """A bad queue (empty, unreadable file) or a bad limit."""


def parse_queue(text: str) -> list[str]:
    """One prompt per line; blank lines and lines starting with `#` are skipped. A line
    ending in a backslash continues on the next line (for a long prompt)."""
    prompts: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        prompt = (pending + line.strip()).strip()
        pending = ""
        if prompt:
            prompts.append(prompt)
    if pending.strip():
        prompts.append(pending.strip())
    return prompts


def load_queue(path: str | Path) -> list[str]:
    """The prompts in a queue file; an unreadable or empty file is a clear error."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchError(f"{path}: cannot read the task queue ({exc})") from exc
    prompts = parse_queue(text)
    if not prompts:
        raise BatchError(f"{path}: no prompts (one per line; # starts a comment)")
    return prompts


def max_parallel_for(profile: Any = None, default: int = DEFAULT_MAX_PARALLEL) -> int:
    """The profile's `max_parallel` when it has one, else ``default``."""
    value = getattr(profile, "max_parallel", None)
    if isinstance(profile, dict):
        value = profile.get("max_parallel")
    return value if isinstance(value, int) and value >= 1 else default


@dataclass
class BatchTask:
    index: int
    prompt: str
    context: Any = None  # this task's own conversation context, never shared
    status: str = QUEUED
    result: Any = None
    error: str | None = None
    started: float | None = None
    ended: float | None = None
    reviewed: bool = False

    @property
    def elapsed_s(self) -> float | None:
        if self.started is None:
            return None
        return (self.ended or time.monotonic()) - self.started


Generate = Callable[[BatchTask], Awaitable[Any]]


@dataclass
class BatchRun:
    """The tasks of one batch and their states. ``context_factory`` makes each task's fresh
    context (e.g. a new `ChatContext`); `generate(task)` runs one task against it."""

    prompts: list[str]
    max_parallel: int = DEFAULT_MAX_PARALLEL
    context_factory: Callable[[], Any] | None = None
    tasks: list[BatchTask] = field(init=False)

    def __post_init__(self) -> None:
        if not self.prompts:
            raise BatchError("a batch needs at least one prompt")
        if not isinstance(self.max_parallel, int) or self.max_parallel < 1:
            raise BatchError(f"max_parallel must be a positive integer, not {self.max_parallel!r}")
        self.tasks = [BatchTask(i, p) for i, p in enumerate(self.prompts)]
        self._running: dict[int, asyncio.Task] = {}
        self._cancelled = False

    async def run(self, generate: Generate,
                  on_update: Callable[[BatchTask], None] | None = None) -> list[BatchTask]:
        """Run every queued task, at most ``max_parallel`` at once, in queue order. A task
        that raises is marked failed and the others go on. Returns the tasks in order."""
        sem = asyncio.Semaphore(self.max_parallel)

        def notify(task: BatchTask) -> None:
            if on_update is not None:
                on_update(task)

        async def one(task: BatchTask) -> None:
            async with sem:
                if self._cancelled or task.status != QUEUED:
                    if task.status == QUEUED:
                        task.status = CANCELLED
                        notify(task)
                    return
                task.context = self.context_factory() if self.context_factory else None
                task.status, task.started = RUNNING, time.monotonic()
                notify(task)
                try:
                    task.result = await generate(task)
                    task.status = DONE
                except asyncio.CancelledError:
                    task.status = CANCELLED
                except Exception as exc:  # noqa: BLE001 - one bad task must not sink the batch
                    task.status, task.error = FAILED, f"{type(exc).__name__}: {exc}"
                finally:
                    task.ended = time.monotonic()
                    notify(task)

        for task in self.tasks:
            if task.status == QUEUED:
                self._running[task.index] = asyncio.ensure_future(one(task))
        try:
            await asyncio.gather(*self._running.values(), return_exceptions=True)
        finally:
            self._running.clear()
        return self.tasks

    def cancel(self) -> None:
        """Stop the batch: running tasks are cancelled, queued ones never start."""
        self._cancelled = True
        for fut in self._running.values():
            fut.cancel()
        for task in self.tasks:
            if task.status == QUEUED:
                task.status = CANCELLED

    # review, one after the other --------------------------------------------------------
    def next_for_review(self) -> BatchTask | None:
        """The first finished (done or failed) task not yet reviewed, in queue order. A
        slow task does not hold up the review of the ones after it."""
        for task in self.tasks:
            if task.status in (DONE, FAILED) and not task.reviewed:
                return task
        return None

    def mark_reviewed(self, index: int) -> None:
        self.tasks[index].reviewed = True

    @property
    def finished(self) -> bool:
        return all(t.status in FINISHED for t in self.tasks)

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in (QUEUED, RUNNING, DONE, FAILED, CANCELLED)}
        for t in self.tasks:
            out[t.status] += 1
        out["reviewed"] = sum(t.reviewed for t in self.tasks)
        return out


# -- a batch of the workstation's session (the app runs it; screens only show it) -------------

@dataclass(frozen=True)
class BatchResult:
    """One finished task's answer for the main loop (same fields as a race or variation
    result: `app._adopt_answer(profile, prompt, text)`); ``remaining``: tasks not yet
    reviewed after this one, running ones included."""

    profile: str
    prompt: str
    text: str
    index: int
    remaining: int


class BatchJob:
    """A batch's tasks, their answers and the worker running them (on the app)."""

    def __init__(self, client, prompts: list[str], station, profile: str = "spark",
                 max_parallel: int = 4, *, max_tokens: int | None = None) -> None:
        self.client = client
        self.station = station
        self.profile = profile
        self.max_tokens = max_tokens
        self.run = BatchRun(list(prompts), max_parallel, context_factory=self._fresh_context)
        self.answers: dict[int, AnswerRun] = {}
        self.streams: dict[int, Any] = {}
        self.worker: Any = None
        self.version = 0       # bumped on every change: screens repaint when it moves

    @property
    def prompts(self) -> list[str]:
        return self.run.prompts

    def _fresh_context(self):
        """A new conversation for each task; the files the user put in the chat stay in it
        (the workstation's meaning of a fresh context)."""
        from core.context.prompt import ChatContext

        main = self.station.context
        context = ChatContext(self.station.root, main.window, workspace=self.station.workspace)
        for read_only in (False, True):
            paths = [f.path for f in main.files if f.read_only == read_only]
            if paths:
                context.add(paths, read_only=read_only)
        return context

    # -- running -----------------------------------------------------------------------------
    def start(self, app) -> None:
        """Run the batch as a worker of ``app``, so it outlives any one screen."""
        if self.worker is None:
            self.worker = app.run_worker(self.run.run(self._generate, self._changed),
                                         group="batch", exit_on_error=False)

    def _changed(self, _task: BatchTask | None = None) -> None:
        self.version += 1

    async def _generate(self, task: BatchTask) -> Any:
        """One task: its own request from its own context, streamed (`core.loop`), parsed and
        diffed; recorded in the session with its own timing."""
        from core.answer import AnswerRun
        from core.loop import Finished, Started, stream_answer

        run = AnswerRun(self.station.workspace, task.prompt, self.profile)
        run.kind = "batch"
        self.answers[task.index] = run
        messages, report = await asyncio.to_thread(task.context.build_request, task.prompt)
        budget = self.max_tokens if self.max_tokens is not None else report.reserve
        recorder = self.station.recorder
        recorder.prompt(run.request_id, task.prompt, self.profile, kind="batch")
        run.stats.started = time.perf_counter()
        async for update in stream_answer(self.client, run, messages, max_tokens=budget):
            if isinstance(update, Started):
                self.streams[task.index] = update.stream
            elif isinstance(update, Finished) and update.reason == "error":
                raise BatchError(run.error or "the stream failed")
            self._changed()
        reason = run.reason or "error"
        entry = self.client.profile(self.profile) or {}
        recorder.answer_done(run.request_id, profile=self.profile, tokens=run.stats.tokens,
                             elapsed_s=run.stats.elapsed_s, ttft_ms=run.stats.ttft_ms,
                             chip=entry.get("chip"), model=entry.get("model"),
                             prompt_tokens=(run.usage or {}).get("prompt_tokens"), reason=reason)
        if reason not in _OK_REASONS:
            raise BatchError(f"the answer ended: {reason}")
        await asyncio.to_thread(run.rebuild_proposal)
        return run

    async def cancel(self) -> None:
        """Stop what is still streaming; queued tasks never start. Finished ones stay."""
        running = [i for i, t in enumerate(self.run.tasks) if t.status == RUNNING]
        self.run.cancel()
        for index in running:
            stream = self.streams.get(index)
            if stream is not None:
                try:
                    await stream.cancel()
                except Exception:  # noqa: BLE001,S110 - the connection is gone: the stream ended with it
                    pass
        self._changed()

    # -- review ------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.run.finished

    @property
    def to_review(self) -> int:
        """Tasks that have or will have an answer the user has not reviewed yet."""
        return sum(1 for t in self.run.tasks
                   if not t.reviewed and t.status in (QUEUED, RUNNING, DONE))

    def next_result(self) -> BatchResult | None:
        """The next finished task in queue order, marked reviewed; failed tasks are skipped
        (their error stays in the table). None when nothing is ready yet."""
        while True:
            task = self.run.next_for_review()
            if task is None:
                return None
            self.run.mark_reviewed(task.index)
            self._changed()
            if task.status == DONE:
                run = task.result
                return BatchResult(self.profile, task.prompt, run.text, task.index,
                                   self.to_review)
