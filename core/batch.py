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
from typing import Any

from core.errors import SparkError

DEFAULT_MAX_PARALLEL = 4
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
