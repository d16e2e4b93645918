"""When an answer's diff is rebuilt, reviewed and drawn while it streams and at its end.

An answer's completed edits arrive one by one; each asks for a rebuild: diff them (build),
highlight and record the hunks off the UI thread (prepare), draw them, review them (duplicate
and slop checks, 100-600 ms, mostly waiting for other processes). Passes coalesce: one runs
at a time and a request that comes while it runs is served by its next loop. The answer's
end asks for the final pass, whose review is the one decisions read; until it is in, a
decision key is held (`hold`) and applied by `settle` to the hunk it was pressed on.

The order matters for the time from the last token to the final screen (issue 14), so the
pass in flight hands over to the final pass in its own thread call (a hop back through the
UI loop waited 20-130 ms behind a frame) when the answer's end makes its work moot:
- built before the end without the last edits: no highlighting, the final pass follows;
- reviewing an earlier state: the review gives way (its `stale` callable), the final
  pass follows;
- built before the end with every edit: it is the final state, reviewed as such.
The final state's review is never superseded by a newer state (none can come); it gives way
only when its answer leaves the screen (a new prompt): its findings would go nowhere, and its
checks ran beside the new request and held up the new answer's final pass. A loop serves
the answer it began for only while that answer is on screen: a new answer's requests start
its own passes (the loop of a replaced answer used to rebuild and review that answer for
each of them).

This object holds only that state and order; the work is the caller's (`RebuildWork`): the
app passes callables that diff, highlight, review and draw. It never touches widgets, so a
model test drives it through arbitrary interleavings (tests/core/test_rebuild_schedule_model.py).
`run` and the callables `draw`, `verify`, `reviewed` are called on the caller's event loop;
`build`, `prepare`, `record`, `review` on a worker thread (`to_thread`), and the final
state's `prepare` on a side thread beside its review.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeAlias, TypeVar

log = logging.getLogger(__name__)


class Answer(Protocol):
    """What the schedule reads of an answer: both lists only grow; `finished` is set after
    the last of them (so a build that read `finished` first has every edit)."""

    @property
    def finished(self) -> bool: ...
    @property
    def edits(self) -> Sequence[object]: ...
    @property
    def parse_errors(self) -> Sequence[object]: ...


A = TypeVar("A", bound=Answer)
R = TypeVar("R")
T = TypeVar("T")
Reviewed: TypeAlias = R | BaseException | None  # a review; a detector's error; None: superseded


class ToThread(Protocol):
    """Runs a callable on a worker thread (asyncio.to_thread; a test's gated thread)."""

    def __call__(self, fn: Callable[[], T], /) -> Awaitable[T]: ...


def coverage(answer: Answer) -> tuple[int, int]:
    """What a rebuild of the answer is a function of, as counts: its completed edits and its
    parse errors (the end of the stream may add either)."""
    return len(answer.edits), len(answer.parse_errors)


@dataclass(frozen=True)
class RebuildWork(Generic[A, R]):
    """The work a pass does, given by the caller. Threads as the module docstring says."""

    current: Callable[[], A | None]  # the answer on screen (a pass of another draws nothing)
    build: Callable[[A], object]  # diff the answer's completed edits into its hunks
    # highlight the hunks (final: the final state's); stop between slices when `ended()` says
    prepare: Callable[[A, bool, Callable[[], bool]], None]
    record: Callable[[A], None]  # record the hunks as shown (disk)
    unrecorded: Callable[[A], bool]  # hunks on screen not recorded yet
    # the review of the state built last (`final`: the final state's); `stale()` true: give
    # way (return None)
    review: Callable[[A, Callable[[], bool], bool], R | None]
    reviewed: Callable[[A, R | BaseException], None]  # a review is in (or its error)
    draw: Callable[[A], None]  # draw the hunks as the answer holds them now
    verify: Callable[[A], None]  # an earlier state, for the verifier (before it is drawn)


class QueuedDecision(NamedTuple):
    """A decision key pressed before the final review: applied when that review is in."""

    answer: object
    accept: bool
    everything: bool
    reason: str | None
    target: str | None  # the hunk selected when the key was pressed


@dataclass(frozen=True)
class Refused:
    """A held decision that cannot be applied: the user is told `message`."""

    message: str


HUNK_CHANGED = "the hunk your key was for changed at the answer's end: decide again"
_SIDE = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rebuild-side")


def _side(fn: Callable[[], None]) -> Future[None]:
    """On the side thread, in the calling thread's context (the app's: highlighting is kept
    per theme; without it the side thread filled the cache under no theme)."""
    return _SIDE.submit(contextvars.copy_context().run, fn)


class RebuildSchedule(Generic[A, R]):
    """One pass at a time over the answer on screen, with the hand-over to the final pass."""

    def __init__(self, work: RebuildWork[A, R], *,
                 to_thread: ToThread | None = None,
                 side: Callable[[Callable[[], None]], Future[None]] = _side) -> None:
        self.work = work
        self._to_thread: ToThread = to_thread or asyncio.to_thread
        self._side_submit = side
        self.needed = False  # a request no pass has served yet (written from threads too)
        self._over = asyncio.Event()  # set whenever no pass runs (waiters wake at once)
        self._over.set()
        self.running_for: A | None = None  # the answer the pass in flight is for
        self.final_built: A | None = None  # its last pass was its final state, reviewed
        self.diffed: tuple[A, tuple[int, int]] | None = None  # the last build's answer, coverage
        self.queued: QueuedDecision | None = None
        self.settled = True  # False from a prompt until its answer's final state is shown

    @property
    def running(self) -> bool:
        """A pass runs (its loop in `run`)."""
        return not self._over.is_set()

    def request(self) -> bool:
        """An edit completed: True when no pass runs and the caller must start one (`run`)."""
        self.needed = True
        return not self.running

    async def run(self, *, final: bool = False) -> None:
        """Rebuild, draw and review the answer on screen until no request is left.

        A call that waited for the pass in flight returns when that one covered it: nothing
        asked for since. The `final` call (the answer ended) returns at once when the last
        pass, in flight or not, was the final state (every edit, reviewed as such, drawn)."""
        answer = self.work.current()
        if answer is None:
            return
        waited = self.running
        # (a pass built after the end read the final coverage: `finished` is set last)
        if final and waited and self.running_for is answer and self.diffed != (answer, coverage(answer)):
            # the pass in flight diffed the answer before its end, without its last edits:
            # its review is of a state nobody will see: it gives way at its next file and
            # its loop does the final state. (A pass that diffed every edit goes on.)
            self.needed = True
        while self.running:
            await self._over.wait()
        covered = answer is self.work.current() and self.running_for is answer and not self.needed
        if covered and (self.final_built is answer if final else waited):
            return  # (a final run after the pass that was the final state: the variations
            # screen's comes when its turn for the detectors does, after that pass ended)
        self.running_for = answer
        self._over.clear()
        try:
            await self._passes(answer)
        finally:
            self._over.set()
        now = self.work.current()
        if self.needed and now is not None and now is not answer:
            await self.run()  # requests of the answer shown now, made while this loop ended

    async def _passes(self, answer: A) -> None:
        work = self.work
        self.needed = True
        while self.needed and answer is work.current():  # (another answer's requests: its own loop)
            self.needed = False
            self.final_built = None
            built_final, reviewed = await self._to_thread(functools.partial(self._pass, answer))
            if not built_final:
                if answer.finished and self.needed:
                    continue  # diffed before the end; the final state waits: neither drawn
                    # nor reviewed (a review's set-up took 100-160 ms before it gave way)
                if not answer.finished:  # (a pass diffed before the end is not the final one)
                    work.verify(answer)
                if answer is work.current():  # on screen before its review, which may be long
                    work.draw(answer)
                built_final, reviewed = await self._to_thread(functools.partial(self._review_or_final, answer))
            if reviewed is None:
                continue  # a newer state waits (`needed` is set): review that one
            work.reviewed(answer, reviewed)
            if built_final and answer is work.current():
                self.needed = False  # built after the end: it covers every request (one racing the end too)
            if built_final or (answer.finished and self.diffed == (answer, coverage(answer))):
                self.final_built = answer  # (the latter: built before the end, with every edit)
        if answer is work.current():
            if work.unrecorded(answer):  # (the pass's thread recorded the final state's)
                await self._to_thread(functools.partial(work.record, answer))
            work.draw(answer)

    # -- in the pass's thread ---------------------------------------------------------------
    def _pass(self, answer: A) -> tuple[bool, Reviewed[R]]:
        """Diff the answer: (True, its review) for the final state, else (False, None) with
        the earlier state highlighted, to be drawn and then reviewed."""
        finished = answer.finished  # read first: then every edit is in this build
        diffed = self.diffed = (answer, coverage(answer))  # read before: the build has these at least
        self.work.build(answer)
        if not finished:
            if not answer.finished:
                self._prepare(answer, final=False)  # (stops early if the answer ends meanwhile)
            if not answer.finished:
                return False, None
            # the last token came while this pass diffed or highlighted
            if diffed != (answer, coverage(answer)):  # without the last edits:
                return self._final_now(answer)  # the final pass, at once, here
            # with every edit: the final state
        # reviewed in this same thread call (hops back to the UI loop to draw first and to
        # start the review cost 50-120 ms); the record and highlighting beside the review,
        # which mostly waits for the duplicate checks and the slop worker
        side = self._side_submit(functools.partial(self._prepare, answer, True))
        reviewed = self._review(answer, final=True)
        side.result()
        return True, reviewed

    def _final_now(self, answer: A) -> tuple[bool, Reviewed[R]]:
        """The final pass, in this thread: the answer ended while this thread diffed or
        reviewed an earlier state."""
        self.needed = False  # (the final run's request: this is it)
        self.final_built = None
        return self._pass(answer)

    def _review_or_final(self, answer: A) -> tuple[bool, Reviewed[R]]:
        """The review of the state built last, or the final pass when the answer's end
        superseded it (not when a new answer did: the requests are that one's). After the
        end a review gives way only to the final state: it follows here, the final run
        asked for it or not yet."""
        reviewed = self._review(answer)
        if reviewed is None and answer.finished and answer is self.work.current():
            return self._final_now(answer)
        return False, reviewed

    def _review(self, answer: A, final: bool = False) -> Reviewed[R]:
        """None when it gave way: an earlier state's when a newer state waits for its own
        review; the final state's only once the answer is no longer on screen (a newer
        state cannot come, and a request racing the end is one it covers). A detector's
        error is returned (said on the caller's loop), not raised."""
        current = self.work.current
        if final:
            def stale() -> bool:
                return answer is not current()
        else:  # (or the answer ended without this state's last edits: before its final run asks)
            def stale() -> bool:
                return self.needed or (answer.finished and self.diffed != (answer, coverage(answer)))
        try:
            return self.work.review(answer, stale, final)
        except Exception as exc:  # see the docstring
            log.exception("review failed")
            return exc

    def _prepare(self, answer: A, final: bool) -> None:
        """Record (the final state) and highlight the hunks of the answer on screen off the
        UI thread, before the draw; an earlier state's stops at the answer's end (the final
        pass, next in this thread, highlights what it draws)."""
        if answer is not self.work.current():
            return
        if final:  # recorded here, before any draw shows them
            self.work.record(answer)
        self.work.prepare(answer, final, (lambda: False) if final else (lambda: answer.finished))

    # -- decisions and the settled answer ---------------------------------------------------
    def hold(self, answer: A, accept: bool, everything: bool, reason: str | None,
             target: str | None) -> bool:
        """A decision key: held (True) until `settle` while the answer is not settled (the
        hunks drawn carry an earlier state's findings, which the accept policy reads);
        False: apply it now."""
        if self.settled:
            return False
        self.queued = QueuedDecision(answer, accept, everything, reason, target)
        return True

    def settle(self, answer: A, open_ids: Collection[str]) -> QueuedDecision | Refused | None:
        """The answer's final state is on screen: settled; the decision held for it, to
        apply now, or Refused when its hunk is no longer open (deciding another would be
        wrong)."""
        self.settled = True
        queued, self.queued = self.queued, None
        if queued is None or queued.answer is not answer:
            return None
        if not queued.everything and (queued.target is None or queued.target not in open_ids):
            return Refused(HUNK_CHANGED)
        return queued
