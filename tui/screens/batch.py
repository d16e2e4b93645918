"""Task batches (seed 002: "Batch. Do not chain" and "Clear context after every task"): a
queue of independent prompts, each with a fresh context, run in parallel up to a limit,
then reviewed one after the other in the main accept/reject loop.

The batch is a `BatchJob` that runs on the *app*, not on the screen: reviewing a task
closes the screen (it dismisses with a `BatchResult` the app loads like any answer), and the
tasks still streaming must go on meanwhile. `BatchScreen.resume(job)` opens a new view on
the same job for the next review; `open_batch` wires both into the workstation.
"""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static, TextArea

from core.batch import (
    CANCELLED,
    DONE,
    FAILED,
    QUEUED,
    RUNNING,
    BatchJob,
    BatchResult,
    BatchTask,
    parse_queue,
)

FRAME_S = 1 / 30
STATE_STYLE = {QUEUED: "dim", RUNNING: "yellow", DONE: "green", FAILED: "bold red",
               CANCELLED: "dim red"}
COLUMNS = ("#", "state", "tokens", "time", "hunks", "prompt")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f} s"


class BatchScreen(ModalScreen[BatchResult | None]):
    """Push with `app.push_screen(BatchScreen(client, prompts, station), callback)`.

    Starts the batch on mount (unless resuming a job already running), shows a table of the
    tasks, and `enter` dismisses with the next finished task's answer (`BatchResult`) for the
    main loop. `escape` closes the view and leaves the batch running; `x` cancels what is
    still running or queued. With no prompts the screen opens on a queue editor: one prompt
    per line, `ctrl+s` runs them.
    """

    DEFAULT_CSS = """
    BatchScreen { layout: vertical; background: $background; }
    BatchScreen > #batch-title { height: 1; padding: 0 1; text-style: bold; }
    BatchScreen > #batch-banner { height: auto; padding: 0 1; }
    BatchScreen > DataTable { height: 1fr; }
    BatchScreen > TextArea { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "review_next", "Review next"),
        Binding("x", "cancel_batch", "Cancel rest"),
        Binding("ctrl+s", "start_queue", "Run queue", show=False),
        Binding("escape", "close", "Close (batch goes on)"),
    ]

    def __init__(self, client, prompts: list[str], station, profile: str = "spark",
                 max_parallel: int = 4, *, max_tokens: int | None = None,
                 job: BatchJob | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.station = station
        self.profile = profile
        self.max_parallel = max_parallel
        self.max_tokens = max_tokens
        if job is None and prompts:
            job = BatchJob(client, prompts, station, profile, max_parallel, max_tokens=max_tokens)
        self.job = job
        self._painted: tuple | None = None

    @classmethod
    def resume(cls, job: BatchJob, **kwargs) -> BatchScreen:
        """A new view on a job that is already running or waiting for review."""
        return cls(job.client, job.prompts, job.station, job.profile, job.run.max_parallel,
                   max_tokens=job.max_tokens, job=job, **kwargs)

    def next_result(self) -> BatchResult | None:
        return self._live.next_result() if self.job is not None else None

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("", id="batch-title")
        yield Static("", id="batch-banner")
        if self.job is None:
            yield TextArea(id="batch-queue")
        else:
            yield self._table()
        yield Footer()

    @property
    def _live(self) -> BatchJob:
        """The job once it exists (the queue editor has none until ctrl+s)."""
        if self.job is None:
            raise RuntimeError("the batch has not started")
        return self.job

    def _table(self) -> DataTable:
        table: DataTable = DataTable(id="batch-table", cursor_type="none", zebra_stripes=True)
        table.can_focus = False   # enter belongs to the screen: review next
        return table

    def on_mount(self) -> None:
        if self.job is None:
            self.query_one("#batch-title", Static).update(
                Text(f"batch queue ({self.profile})", style="bold"))
            self.query_one("#batch-banner", Static).update(Text(
                "one prompt per line (# comments, \\ continues a line); ctrl+s runs them, "
                "each with a fresh context, in parallel", style="dim"))
            self.query_one(TextArea).focus()
            return
        self._start()

    def _start(self) -> None:
        table = self.query_one(DataTable)
        for key in COLUMNS:
            table.add_column(key, key=key)
        for task in self._live.run.tasks:
            table.add_row(*self._cells(task), key=str(task.index))
        self._live.start(self.app)
        self._paint()
        self.set_interval(FRAME_S, self._paint)

    def _cells(self, task: BatchTask) -> tuple:
        run = self._live.answers.get(task.index)
        state = task.status + (" ✓" if task.reviewed else "")
        hunks = "-" if run is None or not run.finished else str(len(run.hunks))
        prompt = task.prompt if len(task.prompt) <= 70 else task.prompt[:69] + "…"
        if task.error:
            prompt = f"{prompt}  ({task.error})"
        return (str(task.index + 1), Text(state, style=STATE_STYLE.get(task.status, "")),
                f"{run.stats.tokens:,}" if run is not None else "-",
                _seconds(task.elapsed_s), hunks, prompt)

    def _paint(self) -> None:
        """At most once per frame, and only when the job changed or a clock is running."""
        job = self._live
        counts = job.run.counts()
        key = (job.version, counts[RUNNING] and round(time.monotonic(), 1))
        if key == self._painted:
            return
        self._painted = key
        table = self.query_one(DataTable)
        for task in job.run.tasks:
            for column, value in zip(COLUMNS, self._cells(task)):
                table.update_cell(str(task.index), column, value, update_width=True)
        title = Text(f"batch of {len(job.run.tasks)} ({job.profile}, "
                     f"{job.run.max_parallel} at once, fresh context each)", style="bold")
        self.query_one("#batch-title", Static).update(title)
        self.query_one("#batch-banner", Static).update(self.banner())

    def banner(self) -> Text:
        counts = self._live.run.counts()
        text = Text()
        for state in (RUNNING, QUEUED, DONE, FAILED, CANCELLED):
            if counts[state]:
                text.append(f"{counts[state]} {state}  ", style=STATE_STYLE[state])
        text.append(f"{counts['reviewed']} reviewed  ", style="dim")
        ready = self._live.run.next_for_review()
        if ready is not None:
            text.append("enter reviews the next answer in the main loop", style="bold")
        elif self._live.finished:
            text.append("nothing left to review: escape closes", style="dim")
        else:
            text.append("the first answer to finish can be reviewed at once", style="dim")
        return text

    # -- keys --------------------------------------------------------------------------------
    def action_review_next(self) -> None:
        if self.job is None:
            return
        result = self.next_result()
        if result is None:
            why = "no task left to review" if self._live.finished else "no answer finished yet"
            self.notify(why, severity="warning")
            return
        self.dismiss(result)

    async def action_cancel_batch(self) -> None:
        if self.job is not None and not self._live.finished:
            await self._live.cancel()
            self.notify("batch cancelled: finished answers can still be reviewed")

    def action_start_queue(self) -> None:
        if self.job is not None:
            return
        area = self.query_one(TextArea)
        prompts = parse_queue(area.text)
        if not prompts:
            self.notify("the queue is empty: one prompt per line", severity="warning")
            return
        self.job = BatchJob(self.client, prompts, self.station, self.profile,
                            self.max_parallel, max_tokens=self.max_tokens)
        area.remove()
        self.mount(self._table(), before=self.query_one(Footer))
        self.call_after_refresh(self._start)

    def action_close(self) -> None:
        self.dismiss(None)


# -- the workstation's side ---------------------------------------------------------------------



def current_job(app) -> BatchJob | None:
    """The app's batch while it has something left to review (else None)."""
    job = app.station.batch_job  # the batch lives in core, with the session, not in a screen
    return job if job is not None and job.to_review else None


def open_batch(app, prompts: list[str] | None = None, *, max_parallel: int | None = None,
               profile: str | None = None) -> BatchScreen | None:
    """Open the batch on the workstation (`SparkApp`). With ``prompts``: a new batch. Without:
    the batch still under review if there is one, else the queue editor.

    Each answer taken with `enter` goes into the main loop; once the user has decided every
    hunk of it (or it proposed nothing), the batch screen comes back for the next one.
    """
    if app.client is None:
        app.notify("not connected to the core yet", severity="warning")
        return None
    job = current_job(app) if not prompts else None
    if job is not None:
        screen = BatchScreen.resume(job)
    else:
        from core.batch import max_parallel_for

        profile = profile or app.profile
        limit = max_parallel or max_parallel_for(app.client.profile(profile))
        screen = BatchScreen(app.client, list(prompts or []), app.station, profile, limit)
    _push(app, screen)
    return screen


def _push(app, screen: BatchScreen) -> None:
    def taken(result: BatchResult | None) -> None:
        if screen.job is not None:
            app.station.batch_job = screen.job
        if result is None:
            return
        before = app.answer
        job = screen.job
        run = job.answers.get(result.index) if job is not None else None
        app._adopt_answer(result.profile, result.prompt, result.text, run.stats if run else None, kind="batch",
                          request_id=run.request_id if run else None, timing_recorded=run is not None)
        if job is not None and job.to_review:
            app.run_worker(_back_after_review(app, job, before), group="batch-review",
                           exclusive=True, exit_on_error=False)

    app.push_screen(screen, taken)


def _review_done(app, before) -> bool:
    run = app.answer
    return (run is not None and run is not before and app.settled and run.finished
            and (run.applied or not run.hunks))


async def _back_after_review(app, job: BatchJob, before) -> None:
    """Wait until the loaded answer is decided (and no other screen is up), then show the
    batch again for the next one."""
    while not (_review_done(app, before) and app.screen is app.screen_stack[0]):
        await asyncio.sleep(0.1)
    if job.to_review and app.station.batch_job is job:
        _push(app, BatchScreen.resume(job))

