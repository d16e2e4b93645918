"""An answer's checks in separate interpreters, so their CPU never holds the app's GIL:
slop analysis, the verifier's Python syntax check, and duplicate checks against a copy of
the tree's duplicate index (core.detectors for the first and last, core.verify for the
syntax: this module serves both, so it sits above them in core/).

Why: an answer's review parses each edited file and runs our rules on it (~40-70 ms per
2,500-line file). In the app's process that work takes turns for the GIL with the UI
thread, the duplicate check and the verifier: keys waited up to ~370 ms while an answer
of 40 blocks was reviewed, and each review took 2-4x its own cost. Here it runs in one
child interpreter (`python -m core.check_worker`, like the indexer: a fresh
interpreter, not multiprocessing's spawn, which re-imports an unguarded main script), on
the other core where there is one, while the app's thread does the rest of the review.

`analyze(path, new_text, added)` returns a Future of exactly what
`slop.analyze_change(path, old, new_text, added)` returns (the same function runs in the
child). Anything wrong with the child (it cannot start, dies, answers garbage) fails the
Future with CheckWorkerError; `report_of` then runs the analysis in the caller's thread
instead, so a review never loses its slop findings. `SPARK_SLOP_PROCESS=0` keeps it all
in-process.

`syntax(path, text)` is the verifier's Python syntax check (`core.verify.checks.check_syntax`)
in the same child: while an answer streams the verifier checks the files it edits as they
were (six 2,500-line originals: ~150 ms of parsing, held the GIL as long as half of what
the UI thread drew meanwhile), then the new texts, whose unchanged statements the child
remembers (pyparse.segments), so they parse only what changed.

The duplicate jobs (`dups_load`, `dups_events`, `dups_check`, `dups_matches`) go to a child
of their own (`CheckPool.dups`, niced): it builds the index of a thread-mode tree, hears
the same file events as the app's index (`DuplicateIndex.apply_events`), and answers the
review's checks and statement memos.

Protocol over one socket (multiprocessing.connection, pickles between two processes of
the same program): parent -> child ("slop", id, path, new_text, added), ("syntax", id, path, text),
("dups-load" | "dups-events" | "dups-check" | "dups-matches", id, root, ...) or ("stop",);
("drop", [id, ...]) (nobody waits for them: skipped if not started);
child -> parent ("ok", id, answer) or ("error", id, text).
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import threading
import weakref
from collections import deque
from concurrent.futures import CancelledError, Future
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.detectors.slop import SlopReport, analyze_change, prefetch_many
from core.errors import SparkError

if TYPE_CHECKING:
    from core.detectors.duplicates import DuplicateMatch
    from core.verify.checks import Problem

log = logging.getLogger(__name__)

ENV = "SPARK_SLOP_PROCESS"
MAX_RESTARTS = 3  # a child that keeps dying is given up on: the work stays in-process
# jobs sent to a child and not answered yet (the one it works on and the next, whose ruff it
# starts meanwhile); the rest wait in the parent, where a newer pass drops them unsent
MAX_IN_FLIGHT = 2
# a slop job not answered by then: its child is stuck (or starved far past any load seen:
# jobs take 5-300 ms); the child is stopped (the next job starts a new one) and the caller
# computes the analysis itself: a review never hangs on the child, nor loses its findings
SLOP_CHILD_WAIT_S = 10.0
# the duplicate index's child yields the CPU to the app's UI thread: on two cores the app,
# the slop child and it took turns, and keys waited longer during a stream (settle better)
DUPS_NICE = 10


class CheckWorkerError(SparkError):
    """The check child process could not answer (not started, died, closed)."""


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


_OWNERS: weakref.WeakKeyDictionary[Future[Any], CheckWorker] = weakref.WeakKeyDictionary()  # job -> its worker


class CheckWorker:
    """One child interpreter answering check jobs (slop, syntax, duplicates) in order; thread-safe.

    Jobs wait in the parent (`_outbox`) and a sender thread keeps MAX_IN_FLIGHT of them
    at the child. Sent at once, every pass of a fast-streaming answer put each edited
    file's text (~60 kB) on the socket: the child reads between jobs, so the buffer
    filled and the review thread that sent the final pass's jobs blocked in `send` for
    50-150 ms after the last token (most of what was queued ahead of it was dropped
    later anyway). Now a submit never blocks, and a drop removes unsent jobs here."""

    def __init__(self, *, nice: int = 0) -> None:
        self._nice = nice  # added to the child's niceness (this process's + nice)
        self._lock = threading.Lock()  # the connection, the pending futures, the outbox
        self._ready = threading.Condition(self._lock)  # the outbox or the jobs in flight changed
        self._send_lock = threading.Lock()  # one message at a time on the socket
        self._conn: Connection | None = None
        self._proc: Any = None
        self._pending: dict[int, tuple[Future[Any], type]] = {}  # job -> (future, the answer's type)
        self._outbox: deque[tuple[int, tuple]] = deque()  # (job, message) not sent yet, in order
        self._later: deque[tuple[int, tuple]] = deque()  # the same, sent when the outbox is empty
        self._sent: set[int] = set()  # jobs at the child, not answered yet
        self._final: set[int] = set()  # jobs in the outbox sent past MAX_IN_FLIGHT
        self._ids = itertools.count()
        self._starts = 0
        self._closed = False

    def analyze(self, path: str, new_text: str, added: set[int], *, final: bool = False) -> Future[SlopReport]:
        """The report of `analyze_change(path, ..., new_text, added)`, computed in the child.
        `final`: of an answer that has ended (no newer pass will drop it): sent at once,
        past MAX_IN_FLIGHT, so the child starts the ruff of every one while it works."""
        return self._submit(SlopReport, "slop", path, new_text, sorted(added), final=final)

    def syntax(self, path: str, text: str) -> Future[list[Problem]]:
        """`core.verify.checks.check_syntax(path, text)` of a Python text, computed in the
        child after every slop job waiting then (a review waits for its slop; the verifier's
        report comes after the answer is shown)."""
        return self._submit(list, "syntax", path, text, later=True)

    def dups_load(self, root: str) -> Future[int]:
        """Build the duplicate index of the tree at `root` in the child, in a thread of its
        own (the jobs go on meanwhile); answered with its number of functions once built."""
        return self._submit(int, "dups-load", root)

    def dups_events(self, root: str, events: list[tuple[str, str]]) -> Future[Any]:
        """Files changed (path, kind) since: the child's index reads them again, in the
        order of the checks around them."""
        return self._submit(object, "dups-events", root, events)

    def dups_check(self, root: str, source: str, path: str | None,
                   lines: list[int] | None) -> Future[list[DuplicateMatch]]:
        """`DuplicateIndex.check_source(source, path, lines=lines)` against the child's
        index of `root` (fails when it has none: the caller checks here)."""
        return self._submit(list, "dups-check", root, source, path, lines)

    def dups_matches(self, root: str, memo: str, text: str, path: str,
                     lines: list[int]) -> Future[list[DuplicateMatch]]:
        """`StatementChecks.matches(text, path, lines)` of the answer's memo named `memo`
        (made on first use, the last 16 kept), against the child's index of `root`: the
        cut of the file at its statements and the memo's bookkeeping run there too."""
        return self._submit(list, "dups-matches", root, memo, text, path, lines)

    @property
    def pid(self) -> int | None:
        """The child's process id (None before it starts): a new child has no index."""
        return None if self._proc is None else self._proc.pid

    def pending(self) -> int:
        """Jobs submitted and not answered yet (waiting here or at the child)."""
        with self._lock:
            return len(self._pending)

    def _submit(self, answer: type, kind: str, *args: Any, later: bool = False,
                final: bool = False) -> Future[Any]:
        """Queue a job for the sender thread (never blocks on the socket); `later`: sent
        only when no other job waits; `final`: sent past MAX_IN_FLIGHT."""
        future: Future[Any] = Future()
        try:
            with self._lock:
                self._connection()
                job = next(self._ids)
                self._pending[job] = (future, answer)
                _OWNERS[future] = self
                (self._later if later else self._outbox).append((job, (kind, job, *args)))
                if final:
                    self._final.add(job)
                self._ready.notify_all()
        except (OSError, ValueError, CheckWorkerError) as exc:
            future.set_exception(CheckWorkerError(f"check worker unavailable: {exc}"))
        return future

    def give_up(self, future: Future[Any]) -> None:
        """`future` waited past SLOP_CHILD_WAIT_S: the child is stopped (stuck, or starved
        far past any load seen); every job pending here fails at once (their callers
        compute them) and the next job starts a new child."""
        with self._lock:
            if future.done() or not any(f is future for f, _ in self._pending.values()):
                return
            proc = self._proc
        log.warning("check worker: no answer in %.0f s: its child is stopped", SLOP_CHILD_WAIT_S)
        if proc is not None:
            try:
                proc.kill()  # the reader sees the socket close and fails what is pending
            except OSError:
                pass

    def drop(self, futures: list[Future[Any]]) -> None:
        """Nobody waits for these any more (a newer version of their file came): those not
        sent yet are never sent; the child skips the others if it has not started them."""
        with self._lock:
            jobs = {job for job, (f, _) in self._pending.items() if any(f is g for g in futures)}
            for job in jobs:
                self._pending.pop(job)[0].cancel()
            sent = sorted(jobs & self._sent)
            self._sent -= jobs
            self._final -= jobs
            if len(sent) < len(jobs):
                self._outbox = deque(item for item in self._outbox if item[0] not in jobs)
                self._later = deque(item for item in self._later if item[0] not in jobs)
            self._ready.notify_all()
            conn = self._conn
        if sent and conn is not None:
            try:
                with self._send_lock:
                    conn.send(("drop", sent))
            except (OSError, ValueError):
                pass

    def warm(self) -> None:
        """Start the child now (its imports take ~0.2 s), so the first review does not wait."""
        with self._lock:
            try:
                self._connection()
            except (OSError, CheckWorkerError) as exc:
                log.debug("check worker did not start: %s", exc)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            self._ready.notify_all()  # the sender thread ends
        if conn is not None:
            try:
                with self._send_lock:
                    conn.send(("stop",))
            except (OSError, ValueError):
                pass
            conn.close()
        if self._proc is not None:
            try:
                self._proc.wait(timeout=2)
            except Exception:  # noqa: BLE001 - a child that will not stop is killed
                self._proc.kill()

    # -- the parent's side ---------------------------------------------------------------
    def _connection(self) -> Connection:
        """The live connection, starting the child if needed (called under the lock)."""
        if self._closed:
            raise CheckWorkerError("closed")
        if self._conn is not None:
            return self._conn
        if self._starts >= MAX_RESTARTS:
            raise CheckWorkerError(f"the child failed {self._starts} times")
        self._starts += 1
        conn, self._proc = _spawn_child()
        if self._nice:
            try:
                os.setpriority(os.PRIO_PROCESS, self._proc.pid, os.getpriority(os.PRIO_PROCESS, 0) + self._nice)
            except (OSError, AttributeError):  # not permitted, or no such call here: as it is
                pass
        self._conn = conn
        threading.Thread(target=self._read, args=(conn,), name="slop-worker-reader", daemon=True).start()
        threading.Thread(target=self._send_jobs, args=(conn,), name="slop-worker-sender", daemon=True).start()
        return conn

    def _sendable(self) -> bool:
        """A job may go now (under the lock): MAX_IN_FLIGHT at the child, and a `later` one
        only to an idle child (it then delays a job that comes meanwhile by one job at most)."""
        if self._outbox:
            return len(self._sent) < MAX_IN_FLIGHT or bool(self._final)  # (those ahead go too)
        return bool(self._later) and not self._sent

    def _send_jobs(self, conn: Connection) -> None:
        """Send the outbox in order, keeping MAX_IN_FLIGHT jobs at the child; ends with
        the connection (the reader then fails whatever was still pending)."""
        while True:
            with self._lock:
                while self._conn is conn and not self._sendable():
                    self._ready.wait()
                if self._conn is not conn:
                    return
                job, message = (self._outbox or self._later).popleft()
                self._final.discard(job)
                self._sent.add(job)
            try:
                with self._send_lock:
                    conn.send(message)
            except Exception as exc:  # noqa: BLE001 - the job fails, its caller computes it
                with self._lock:
                    self._sent.discard(job)
                    future = self._pending.pop(job, (None, object))[0]
                    self._ready.notify_all()
                if future is not None and not future.done():
                    future.set_exception(CheckWorkerError(f"check worker: cannot send: {exc!r}"))
                if isinstance(exc, OSError):
                    return  # the socket is gone: the reader sees it too

    def _read(self, conn: Connection) -> None:
        """Hand each answer to its Future; on EOF fail everything still pending."""
        try:
            while True:
                kind, job, payload = conn.recv()
                with self._lock:
                    future, answer = self._pending.pop(job, (None, object))
                    self._sent.discard(job)
                    self._ready.notify_all()
                if future is None or future.cancelled():
                    continue
                if kind == "ok" and isinstance(payload, answer):
                    future.set_result(payload)
                else:
                    future.set_exception(CheckWorkerError(f"check worker: {payload}"))
        except (EOFError, OSError, ValueError, TypeError) as exc:
            why = f"check worker stopped: {type(exc).__name__}"
        with self._lock:
            if self._conn is conn:
                self._conn = None
            pending, self._pending = self._pending, {}
            self._outbox.clear()
            self._later.clear()
            self._sent.clear()
            self._final.clear()
            self._ready.notify_all()
        for future, _ in pending.values():
            if not future.done():
                future.set_exception(CheckWorkerError(why))


def _spawn_child() -> tuple[Connection, Any]:
    """Start `python -m core.check_worker FD` (see core.child_process)."""
    from core.child_process import spawn_module

    try:
        return spawn_module("core.check_worker")
    except OSError as exc:
        raise CheckWorkerError(f"cannot start: {exc}") from exc


class CheckPool:
    """A few workers, each job to the one with the fewest waiting: an answer's last
    token leaves one analysis per edited file, and one child works through them one
    after the other while the app's process mostly waits (a second core was idle)."""

    def __init__(self, size: int) -> None:
        self.workers = [CheckWorker() for _ in range(max(1, size))]
        # the duplicate index's own child (started by its first job): in the slop child
        # its checks queued behind the final pass's slop (~90 ms after the last token)
        # where they had run beside it
        self.dups = CheckWorker(nice=DUPS_NICE)
        self._turns = itertools.count()

    def analyze(self, path: str, new_text: str, added: set[int], *, final: bool = False) -> Future[SlopReport]:
        return self._least_busy().analyze(path, new_text, added, final=final)

    def syntax(self, path: str, text: str) -> Future[list[Problem]]:
        return self._least_busy().syntax(path, text)

    def _least_busy(self) -> CheckWorker:
        """The check worker with the fewest jobs pending; ties go round."""
        start = next(self._turns) % len(self.workers)
        order = self.workers[start:] + self.workers[:start]
        return min(order, key=lambda w: w.pending())

    def drop(self, futures: list[Future[Any]]) -> None:
        for worker in (*self.workers, self.dups):
            worker.drop(futures)

    def warm(self) -> None:
        for worker in self.workers:
            worker.warm()

    def close(self) -> None:
        for worker in (*self.workers, self.dups):
            worker.close()

    @property
    def pids(self) -> list[int]:
        return [w._proc.pid for w in (*self.workers, self.dups) if w._proc is not None]

    @property
    def started(self) -> bool:
        """Whether the slop children were started (`warm`, or a first job)."""
        return any(w._proc is not None for w in self.workers)


# one core is left to the app's own process (its UI thread, the duplicate checks)
POOL_SIZE = max(1, min(2, (os.cpu_count() or 1) - 1))
_SHARED: CheckPool | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> CheckPool | None:
    """The process's check workers (None when SPARK_SLOP_PROCESS=0)."""
    global _SHARED
    if not enabled():
        return None
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = CheckPool(POOL_SIZE)
            atexit.register(_SHARED.close)
        return _SHARED


def analyze_change_off_thread(path: str, new_text: str, added: set[int], *,
                              final: bool = False) -> Future[SlopReport] | None:
    """Slop of one edited file, sent to the worker process; None when there is none
    (`report_of` then computes it in the caller's thread). `final`: see CheckWorker.analyze."""
    worker = shared()
    return None if worker is None else worker.analyze(path, new_text, added, final=final)


def syntax_off_thread(path: str, text: str) -> Future[list[Problem]] | None:
    """The verifier's syntax check of one Python text, sent to the worker process; None
    when there is none or it is not running yet (the caller checks it in its own thread:
    a verifier without the app, whose indexing starts the worker, would wait ~0.4 s for
    the child's start on its first check)."""
    worker = shared()
    return None if worker is None or not worker.started else worker.syntax(path, text)


def report_of(future: Future[SlopReport] | None, path: str, new_text: str, added: set[int], *,
              wait_s: float = SLOP_CHILD_WAIT_S) -> SlopReport:
    """The worker's report, or the same analysis in this thread (no worker, it failed, or
    it did not answer within `wait_s`: its child is then stopped, see give_up).
    Identical either way: the child runs the same `analyze_change`."""
    if future is not None:
        try:
            return future.result(timeout=wait_s)
        except TimeoutError:
            owner = _OWNERS.get(future)
            if owner is not None:
                owner.give_up(future)
        except (CheckWorkerError, CancelledError) as exc:  # cancelled: dropped by a newer pass
            log.debug("slop in-process: %r", exc)
    return analyze_change(path, new_text, new_text, added=added)


# -- the child's side ----------------------------------------------------------------------
def serve(conn: Connection) -> None:
    """Answer requests in order until "stop" or the socket closes. Everything already sent
    is read before each job, so a job dropped meanwhile is skipped, not computed."""
    queue: list[tuple] = []
    dropped: set[int] = set()
    send_lock = threading.Lock()  # this loop's replies and the index builder's

    def take(msg: tuple) -> bool:
        if not msg or msg[0] == "stop":
            return False
        if msg[0] == "drop":
            dropped.update(msg[1])
        else:
            queue.append(msg)
        return True

    while True:
        try:
            if not queue and not take(conn.recv()):
                return
            while conn.poll(0):
                if not take(conn.recv()):
                    return
        except (EOFError, OSError):
            return
        if not queue:
            continue  # only drops came
        kind, job, *args = queue.pop(0)
        if job in dropped:
            dropped.discard(job)
            continue
        # the ruff of this job and of the queued slop jobs runs while this job's rules run,
        # in one ruff process (the parent keeps one job queued here while an answer
        # streams: a newer pass drops the rest there; an ended answer's jobs all come at
        # once, none of them dropped later: one process instead of one per file)
        prefetch_many([(msg[2], msg[3], set(msg[4])) for msg in [(kind, job, *args), *queue]
                       if msg[0] == "slop" and msg[1] not in dropped])
        if kind == "dups-load":  # seconds on a big tree: built beside the jobs, answered when done
            threading.Thread(target=_build_dups, args=(conn, send_lock, job, args[0]), daemon=True).start()
            continue
        try:
            reply: tuple = ("ok", job, _answer(kind, args))
        except Exception as exc:  # noqa: BLE001 - one bad file must not end the worker
            reply = ("error", job, f"{type(exc).__name__}: {exc}")
        if not _reply(conn, send_lock, reply):
            return


def _answer(kind: str, args: list[Any]) -> Any:
    """What the child computes for one job: the same functions the parent would call."""
    if kind == "slop":
        path, new_text, added = args
        return analyze_change(path, new_text, new_text, added=set(added))
    if kind == "syntax":
        from core.verify.checks import check_syntax

        path, text = args
        return [] if _cuts_for_slop(path, text) else check_syntax(path, text)
    if kind.startswith("dups-"):
        return _dups_job(kind, args)
    raise ValueError(f"unknown job {kind!r}")


def _cuts_for_slop(path: str, text: str) -> bool:
    """Whether a Python text cuts into segments with the slop rules' summary: then it
    parses (pyparse.segments: the segments' statements are the file's), so its syntax
    check has nothing to say. The check's own cut (summary: nothing) parsed every statement
    a second time here: 16 ms per cold 2,500-line text, beside the slop's 50 ms cut of the
    same statements (an answer's originals, then its new texts, whose cut for slop the
    check now finds remembered). Where this cut fails, check_syntax answers (the message)."""
    from core import pyparse
    from core.detectors.slop_rules import _summary
    from core.verify.checks import language_for

    return language_for(path) == "python" and pyparse.segments(text, _summary) is not None


_DUPS: dict[str, Any] = {}  # the child's duplicate indexes, by root
_DUPS_BUILDING: dict[str, list[tuple[str, str]]] = {}  # root -> file events while it is built
_DUPS_LOCK = threading.Lock()
_MEMOS: dict[tuple[str, str], Any] = {}  # (root, memo name) -> StatementChecks, oldest first
MEMOS_KEPT = 16


def _build_dups(conn: Connection, send_lock: threading.Lock, job: int, root: str) -> None:
    """Build `root`'s index in this thread (the jobs go on meanwhile), apply the file
    events that came during the build (it may have read a file before its event), then
    answer the load."""
    from core.detectors.duplicates import DuplicateIndex

    with _DUPS_LOCK:
        _DUPS.pop(root, None)
        _DUPS_BUILDING[root] = []
    try:
        built = DuplicateIndex(Path(root))
        built.build()
        built.warm_up()
        while True:
            with _DUPS_LOCK:
                events, _DUPS_BUILDING[root] = _DUPS_BUILDING[root], []
                if not events:
                    _DUPS[root] = built
                    del _DUPS_BUILDING[root]
                    for key in [k for k in _MEMOS if k[0] == root]:  # of the index replaced
                        del _MEMOS[key]
                    break
            built.apply_events(events)
        reply: tuple = ("ok", job, built.function_count)
    except Exception as exc:  # noqa: BLE001 - no index: the parent checks in-process
        with _DUPS_LOCK:
            _DUPS_BUILDING.pop(root, None)
        reply = ("error", job, f"{type(exc).__name__}: {exc}")
    _reply(conn, send_lock, reply)


def _reply(conn: Connection, send_lock: threading.Lock, reply: tuple) -> bool:
    """Send one reply to the parent (the job loop and the index builder share the socket);
    False when the parent is gone."""
    try:
        with send_lock:
            conn.send(reply)
    except (OSError, ValueError):
        return False
    return True


def _dups_job(kind: str, args: list[Any]) -> Any:
    root = args[0]
    with _DUPS_LOCK:
        index = _DUPS.get(root)
        if kind == "dups-events" and root in _DUPS_BUILDING:
            _DUPS_BUILDING[root].extend(args[1])
            return None
    if kind == "dups-events":
        if index is not None:
            index.apply_events(args[1])
        return None
    if index is None:
        raise LookupError(f"no duplicate index of {root} here")
    if kind == "dups-matches":
        from core.statement_checks import StatementChecks

        name, text, path, rows = args[1:]
        memo = _MEMOS.pop((root, name), None) or StatementChecks(index.check_source)
        _MEMOS[(root, name)] = memo
        while len(_MEMOS) > MEMOS_KEPT:
            del _MEMOS[next(iter(_MEMOS))]
        return memo.matches(text, path, rows)
    source, path, lines = args[1:]
    return list(index.check_source(source, path, lines=None if lines is None else set(lines)))


def _main(argv: list[str]) -> int:
    conn = Connection(int(argv[1]))
    try:
        serve(conn)
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv))
