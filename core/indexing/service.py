"""The app's handle on the background indexer: start it, read its progress, ask it things.

`IndexService.start()` returns at once. A starter thread lists the tree, then runs the
indexer (`core.indexing.worker`) in a child process for a large tree (its CPU never holds
the GIL the UI and the embedded core need) or in a thread for a small one (a process
start costs more than indexing a few hundred files). The same thread then reads what the
indexer sends: repo-map graphs are installed into the session's `RepoMap` as they come
(partial ones first), so a request is always assembled from what is ready and never waits;
`snapshot()` says how far indexing got (for `/context` and benchmarks); duplicate checks
are answered by the indexer, which holds the duplicate index, so the app's process never
holds 100,000 function fingerprints.
"""

from __future__ import annotations

import itertools
import multiprocessing
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import SparkError

if TYPE_CHECKING:  # importing the map (numpy) here would delay the app's preload
    from core.context.repomap import RepoMap
    from core.indexing.treestate import TreeState

IN_PROCESS_BELOW = 300  # source files: below this the indexer runs in a thread
# a duplicate snapshot this large (~10 KB a file: 1,040 files -> 11 MB) means a tree a child
# process indexes, started before the tree is checked
EARLY_CHILD_SNAPSHOT_BYTES = 2_000_000
CHECK_TIMEOUT_S = 5.0
MAX_NOTES = 20
PRELOAD_FRESH_S = 10.0  # a preload older than this when the service starts is done again
WARM_AFTER_FRAME_S = 3.0  # the longest the ranks' warm-up and the indexer's start wait for the app's first frame
WARM_AFTER_DUPS_S = 2.0  # ... and the longest the warm-up then waits for the duplicate index


class DuplicateCheckUnavailable(SparkError):
    """A duplicate check that did not run: the review says so instead of showing clean code."""


@dataclass(frozen=True)
class IndexSnapshot:
    """How far indexing got; never waits for the indexer."""

    map_done: int = 0
    map_total: int | None = None
    map_complete: bool = False  # a whole map is installed (maybe the cached one, still being checked)
    map_checked: bool = False  # ...and it is known to be the tree's as it is now
    # wall-clock times (time.time()) the map was first shown and first checked, for benchmarks
    map_shown_at: float | None = None
    map_checked_at: float | None = None
    dups_ready_at: float | None = None  # ... and the duplicate index was first complete
    dups_done: int = 0
    dups_total: int | None = None
    dups_complete: bool = False
    baseline_lines: int | None = None
    mode: str = "starting"  # "starting" | "thread" | "process" | "stopped" | "failed"
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        return self.map_complete and self.dups_complete

    def describe(self) -> str:
        """One line for `/context`: e.g. 'repo map: 412/1,000 files indexed; ...'."""
        def part(name: str, done: int, total: int | None, complete: bool) -> str:
            if complete:
                return f"{name}: {done:,} files indexed"
            of = f"{total:,}" if total is not None else "?"
            return f"{name}: {done:,}/{of} files indexed"
        if self.map_complete and not self.map_checked:
            map_part = f"repo map: {self.map_total or 0:,} files from the cache, checking them against the disk"
        else:
            map_part = part("repo map", self.map_done, self.map_total, self.map_complete)
        return "; ".join([map_part, part("duplicates", self.dups_done, self.dups_total, self.dups_complete)])


class _Preload:
    """The cached map read and the tree's check, begun before the service exists (the app
    starts it first thing, so both overlap the app's own start-up).

    With `map_after_frame` (the app's) only the stored map's key is read here (its header:
    the indexer's "init" needs it); the service reads the map itself once the app's first
    frame is shown. On a real 20,000-file tree that read is 0.1-0.2 s of CPU under the GIL
    (unpickling), which the app's start, CPU-bound on the same interpreter lock, waited for.
    The tree's check (git, its own process) still runs before the frame. Second launches,
    alternating, own session at autogroup nice -20, load 8-10, with an early child (an idle
    machine's path): real20k first frame 0.90 -> 0.83 s, duplicates ready 0.96 -> 0.89 s;
    r20k 0.875 -> 0.77 and 0.945 -> 0.86 s (medians of 5-6; app CPU before the frame
    0.77 -> 0.70 s)."""

    def __init__(self, root: Path, cache_path: Path | None, use_cache: bool,
                 map_after_frame: bool = False) -> None:
        self.root, self.cache_path, self.use_cache = root, cache_path, use_cache
        self.map_after_frame = map_after_frame
        self.started = time.monotonic()
        self.cached: tuple[bytes, Any] | None = None
        self.cached_key: bytes | None = None  # map_after_frame: the stored map's key only
        self.tree: TreeState | None = None
        self.error: BaseException | None = None
        self.map_read = threading.Event()
        self.done = threading.Event()
        self.first_frame = threading.Event()  # set by the app: CPU-heavy warm-ups may start
        self.child: tuple[Connection, subprocess.Popen] | None = None  # the indexer, started early
        threading.Thread(target=self._run, name="spark-index-preload", daemon=True).start()

    def _run(self) -> None:
        from core.indexing.treestate import PendingState

        try:
            pending = PendingState(self.root)
            if self.use_cache and _early_start_pays(self.root, self.cache_path):
                # the child's start (~0.3 s of its CPU) overlaps the app's start too
                self.child = _start_child_early(self.root, self.cache_path, self.use_cache)
            try:
                if self.use_cache and self.map_after_frame:
                    from core.indexing.cache import read_latest_snapshot_key

                    self.cached_key = read_latest_snapshot_key(self.root, "map", self.cache_path)
                elif self.use_cache:
                    from core.indexing.cache import read_latest_snapshot

                    self.cached = read_latest_snapshot(self.root, "map", self.cache_path)
            finally:
                self.map_read.set()
            self.tree = pending.result()
        except Exception as exc:  # noqa: BLE001 -- the service says why, when it takes this
            self.error = exc
        finally:
            self.map_read.set()
            self.done.set()


_preloads: dict[tuple[Path, Path | None, bool], _Preload] = {}
_preloads_lock = threading.Lock()


def preload(root: Path, cache_path: Path | None = None, use_cache: bool = True, *,
            map_after_frame: bool = False) -> Callable[[], None]:
    """Begin reading `root`'s cached repo map and checking its tree now, in the background,
    for the `IndexService` started later (the app calls it before building its screen, so
    a second launch has its map a few hundred ms sooner). Never required. The app asks for
    `map_after_frame` (see `_Preload`): the map's read then waits for the returned callable.

    Returns what the app calls once its first frame is on screen: until then (or
    WARM_AFTER_FRAME_S) the service holds back the ranks' warm-up, whose CPU would
    otherwise compete with building that frame."""
    key = (Path(root).resolve(), cache_path, use_cache)
    stale = None
    with _preloads_lock:
        handle = _preloads.get(key)
        if handle is None or time.monotonic() - handle.started > PRELOAD_FRESH_S / 2:
            # none yet, or one that may be too old by the time the service takes it: begin
            # anew. `spark` calls this first thing (tui.commands) and the app once more:
            # the second call finds the first's work under way
            stale, handle = handle, _Preload(key[0], cache_path, use_cache, map_after_frame)
            _preloads[key] = handle
    if stale is not None:
        threading.Thread(target=_discard, args=(stale,), daemon=True).start()
    return handle.first_frame.set


def first_frame_event(root: Path, cache_path: Path | None = None, use_cache: bool = True) -> threading.Event | None:
    """The event the app sets once its first frame is shown (the one `preload` returned the
    setter of), for other work that waits for it (`spark`'s embedded core); None when no
    preload was begun for `root`."""
    with _preloads_lock:
        handle = _preloads.get((Path(root).resolve(), cache_path, use_cache))
    return handle.first_frame if handle is not None else None


def _take_preload(root: Path, cache_path: Path | None, use_cache: bool) -> _Preload | None:
    with _preloads_lock:
        found = _preloads.pop((root, cache_path, use_cache), None)
    if found is not None and time.monotonic() - found.started > PRELOAD_FRESH_S:
        _discard(found)
        found = None
    if found is None:
        return None  # none, or so old that the tree may have changed since: check it now
    return found


def _discard(handle: _Preload) -> None:
    """End a preload nobody will take: its child (if it started one) waits for a tree that
    will not come."""
    handle.map_read.wait()
    if handle.child is not None:
        handle.child[0].close()
        handle.child[1].kill()


class IndexService:
    """One repository's background indexer, seen from the app."""

    def __init__(self, root: Path, repo_map: RepoMap | Callable[[], RepoMap], *, use_cache: bool = True,
                 cache_path: Path | None = None, in_process: bool | None = None) -> None:
        """`repo_map`: the map to feed, or what makes it on first use (the app's: `attach`),
        which this service then asks for only after the app's first frame, on a second
        launch's path (the map's modules import numpy: ~70-100 ms of the app's start). A
        map made that way must be fed by whoever makes it (`attach`: ChatContext.when_repo_map)."""
        self.root = Path(root).resolve()
        self._repo_map: RepoMap | None = None if callable(repo_map) else repo_map
        self._make_repo_map: Callable[[], RepoMap] | None = repo_map if callable(repo_map) else None
        self.use_cache = use_cache
        self.cache_path = cache_path
        self.in_process = in_process
        self._state = IndexSnapshot()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._conn: Connection | None = None
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._started = False
        self._ids = itertools.count(1)
        self._replies: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._changed = threading.Condition()
        self._early_events: list[tuple[str, str]] = []
        self._tree: TreeState | None = None  # the tree as listed at start
        self._first_frame: threading.Event | None = None  # the app's, when it preloaded
        self._trusted = False  # the map installed is the cached one, not yet checked
        self._map_resent = False  # the indexer was asked for the map it thinks the app holds
        self._map_pending = False  # the cached map is being read after the first frame
        self._early: tuple[Connection, subprocess.Popen] | None = None  # a child started before the check
        self._local_dups: Any = None  # the thread indexer's DuplicateIndex
        self.on_growth: Callable[[int], None] | None = None  # the tree's line count, once known
        self.on_dups_ready: Callable[[], None] | None = None
        # files recheck() found changed since the start (the watcher never saw them)
        self.on_recheck: Callable[[list[tuple[str, str]]], None] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> IndexService:
        """Begin indexing in the background; returns at once."""
        if self._started:
            return self
        self._started = True
        # the ranking's imports and warm-up wait for the app's first frame and the duplicate
        # index (_warm_after_first_frame), not a fixed moment after this start
        if self._repo_map is not None:  # (one made later is fed by its maker: see __init__)
            self._repo_map.use_external_index(on_event=self.on_file_event, prepare=False)
        threading.Thread(target=self._run, name="spark-index", daemon=True).start()
        return self

    @property
    def repo_map(self) -> RepoMap:
        found = self._repo_map
        if found is None:
            assert self._make_repo_map is not None
            found = self._repo_map = self._make_repo_map()
        return found

    def stop(self) -> None:
        """End the indexer (the child process exits; a thread ends after its file)."""
        self._send(("stop",))
        early, self._early = self._early, None
        if early is not None:  # started, never given its tree
            early[0].close()
            early[1].kill()
        proc = self._proc
        if proc is not None:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.terminate()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._update(mode="stopped")

    def wait(self, timeout: float | None = None, *, what: str = "all") -> bool:
        """Block until a whole map is shown ("shown": maybe the cached one, being checked),
        the map is checked against the disk ("map") or everything ("all") is indexed; for
        CLIs, tests and benchmarks (the app never waits)."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def done(s: IndexSnapshot) -> bool:
            if what == "shown":
                return s.map_complete
            return s.map_checked and (what == "map" or s.complete)

        with self._changed:
            while True:
                s = self._state
                if done(s) or s.mode in {"failed", "stopped"}:
                    return done(s)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)

    def snapshot(self) -> IndexSnapshot:
        return self._state

    @property
    def dups_ready(self) -> bool:
        return self._state.dups_complete

    # -- questions and events ----------------------------------------------------------------
    def on_file_changes(self, changes: Iterable[tuple[str, str]]) -> None:
        """Forward watcher events (path, kind); the indexer rescans those files."""
        events = [(p, k) for p, k in changes]
        if not events:
            return
        if self._conn is None:
            with self._lock:
                self._early_events.extend(events)
            return
        self._send(("events", events))

    def on_file_event(self, rel: str) -> None:
        """One changed, created or deleted file (the indexer looks at the disk itself)."""
        self.on_file_changes([(rel, "modified")])

    def check_source(self, source: str, path: str | None = None, *, lines: Iterable[int] | None = None,
                     timeout: float = CHECK_TIMEOUT_S) -> list:
        """Duplicate check of new code against the index as built so far (DuplicateMatch
        list). Raises `DuplicateCheckUnavailable` when the check did not run (the indexer
        is not running, does not answer in time, or failed): "not checked" must never read
        as "no duplicates" (a review would show the code clean, and remember it so)."""
        if self._conn is None:
            raise DuplicateCheckUnavailable("the indexer is not running")
        local = self._local_dups
        if local is not None:
            # the indexer is a thread of this process: its index is asked directly (it is
            # thread-safe), not through the indexer's loop: there a check waited 30-80 ms
            # for GIL turns between three threads while the check itself took 2-15 ms
            try:
                return list(local.check_source(source, path, lines=None if lines is None else set(lines)))
            except Exception as exc:  # one bad check must not break the review: it says so
                self._note(f"duplicate check failed: {type(exc).__name__}: {exc}")
                raise DuplicateCheckUnavailable(f"the check failed: {type(exc).__name__}: {exc}") from exc
        req = next(self._ids)
        event = threading.Event()
        box: list[Any] = []
        self._replies[req] = (event, box)
        self._send(("check", req, source, path, None if lines is None else sorted(set(lines))))
        try:
            if not event.wait(timeout) or not box:
                raise DuplicateCheckUnavailable(f"the indexer did not answer within {timeout:g} s")
        finally:
            self._replies.pop(req, None)
        matches, error = box[0]
        if error is not None:
            self._note(f"duplicate check failed: {error}")
            raise DuplicateCheckUnavailable(f"the check failed: {error}")
        return list(matches or [])

    # -- internals ------------------------------------------------------------------------
    def _send(self, msg: tuple) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            with self._send_lock:
                conn.send(msg)
        except (OSError, EOFError, BrokenPipeError):
            self._update(mode="failed")

    def _update(self, **changes: Any) -> None:
        with self._changed:
            state = IndexSnapshot(**{**self._state.__dict__, **changes})
            if state.map_complete and state.map_shown_at is None:
                state = replace(state, map_shown_at=time.time())
            if state.map_checked and state.map_checked_at is None:
                state = replace(state, map_checked_at=time.time())
            if state.dups_complete and state.dups_ready_at is None:
                state = replace(state, dups_ready_at=time.time())
            self._state = state
            self._changed.notify_all()

    def _note(self, text: str) -> None:
        notes = (self._state.notes + (text,))[-MAX_NOTES:]
        self._update(notes=notes)

    def recheck(self) -> None:
        """Compare the tree with the state taken at start and send the files that differ
        to the indexer as events. The app calls it once its file watcher is up: a file
        changed after the start's check but before the watcher saw anything is caught
        here. Blocks for one tree check (~0.1 s on 20,000 files): call it off the UI."""
        start = self._tree
        if start is None or self._state.mode in {"failed", "stopped"}:
            return
        from core.indexing.treestate import tree_state

        changed = tree_state(self.root).changed_since(start)
        if changed:
            changes = [(rel, "modified") for rel in changed]
            self.on_file_changes(changes)
            if self.on_recheck is not None:  # others that follow file events (the check worker's index)
                self.on_recheck(changes)

    def _run(self) -> None:
        from core.indexing.treestate import PendingState

        # git checks the tree while the cached map loads: on an unchanged tree the map is
        # in place before the check ends, and the check only confirms it
        deferred: bytes | None = None  # the stored map's key, the map not read yet
        try:
            pre = _take_preload(self.root, self.cache_path, self.use_cache)
            if pre is not None:
                self._first_frame = pre.first_frame
                pre.map_read.wait()  # (the preload starts a child before reading the map)
                self._early = pre.child
                started = pre.child or self._spawn_early()
                trusted = self._install_cached_map(pre.cached) if pre.cached is not None else None
                if trusted is None and pre.cached_key is not None:
                    trusted = deferred = pre.cached_key  # the map itself: after the first frame
                pre.done.wait()
                if pre.error is not None or pre.tree is None:
                    raise pre.error or RuntimeError("the tree check ended without a result")
                tree = pre.tree
                pre = None  # this thread lives as long as the app: hold no cached map here
            else:
                pending = PendingState(self.root)
                started = self._spawn_early()
                trusted = self._install_cached_map() if self.use_cache else None
                tree = pending.result()
        except Exception as exc:  # noqa: BLE001 -- a tree that cannot be listed: no map
            self._note(f"cannot list the tree: {exc}")
            self._update(mode="failed")
            if self._early is not None:
                self._early[1].kill()
                self._early = None
            return
        self._tree = tree
        # the app's path (the stored map read after its first frame): the map, made on first
        # use, gets the listing then too (`_install_deferred_map`)
        listing_later = deferred is not None and self._repo_map is None
        if not listing_later:
            self.repo_map.install(files=tree.files)
        sources = len(tree.tokens)
        in_process = self.in_process if self.in_process is not None else sources < IN_PROCESS_BELOW
        if started is not None:
            in_process = False  # already started, ready (the cached map said the tree is large)
        known_key = tree.key if trusted is not None and trusted == tree.key else None
        if deferred is None:
            self._take_cached_map(trusted, tree.key, sources)
        args = (str(self.root), tree, str(self.cache_path) if self.cache_path else None,
                self.use_cache, known_key)
        if self._first_frame is not None and started is None:
            # the indexer's start (a process: interpreter and imports, ~0.5 s of CPU) waits
            # for the app's first frame: at load 8 on two cores, starting it beside the
            # app's own start delayed that frame by ~0.8 s (10 launches, same minutes)
            self._first_frame.wait(WARM_AFTER_FRAME_S)
        if in_process:
            # imported only here: a child process imports the worker module itself
            from core.indexing.worker import Indexer, run_indexer

            parent, child = multiprocessing.Pipe(duplex=True)
            try:
                indexer: Indexer | None = Indexer(self.root, child, tree, cache_path=self.cache_path,
                                                  use_cache=self.use_cache)
            except Exception:  # noqa: BLE001 -- run_indexer tries again and says why it fails
                indexer = None
            self._local_dups = indexer.dups if indexer is not None else None  # asked directly: check_source
            thread = threading.Thread(target=run_indexer, args=(args[0], child, *args[1:]),
                                      kwargs={"indexer": indexer}, name="spark-indexer", daemon=True)
            thread.start()
            self._thread = thread  # (set once started: stop() may join it from another thread)
        else:
            if started is not None and self._early is None:
                return  # stopped meanwhile (stop() ended the early child)
            parent, self._proc = started or _spawn_child()
            self._early = None
            parent.send(("init", *args))
        with self._lock:
            self._conn = parent
            early, self._early_events = self._early_events, []
        self._update(mode="thread" if in_process else "process", map_total=sources)
        if early:
            self._send(("events", early))
        if deferred is not None and known_key is not None:
            # an unchanged tree: the indexer sends no map, and its replies (the duplicate
            # index ready) need not wait for this read
            self._map_pending = True
            threading.Thread(target=self._install_deferred_map,
                             args=(deferred, known_key, tree.key, sources, tree.files if listing_later else None),
                             name="spark-index-map", daemon=True).start()
        elif deferred is not None:  # the indexer rescans: its maps wait in the socket meanwhile
            self._install_deferred_map(deferred, known_key, tree.key, sources,
                                       tree.files if listing_later else None)
        self._read(parent)

    def _take_cached_map(self, trusted: bytes | None, key: bytes, sources: int) -> None:
        """What the cached map installed, stored for the tree `trusted`, means now that the
        tree's key is known: checked at once when equal, else used until rescanned."""
        if trusted is None:
            self._warm_after_first_frame(ranks=False)  # no map yet: the ranking's imports only
        elif trusted == key:
            self._trusted = False
            self.repo_map.install(progress=(sources, sources, True))
            self._update(map_done=sources, map_total=sources, map_checked=True)
            self._warm_after_first_frame()
        else:
            self._note("the cached repo map is of an older tree: it is used, marked as being checked, "
                       "until the changed files are rescanned")
            self._warm_after_first_frame()  # a request meanwhile ranks on it

    def _install_deferred_map(self, deferred: bytes, known_key: bytes | None, key: bytes,
                              sources: int, files: list[str] | None = None) -> None:
        """The cached map whose key the indexer was told (`_Preload`), read now that the
        app's first frame is up (and the tree's listing, `files`, given to the map then).
        Unreadable by now (or another one): the indexer, told the app held it, is asked to
        send it."""
        try:
            if self._first_frame is not None:
                self._first_frame.wait(WARM_AFTER_FRAME_S)
            if files is not None:
                self.repo_map.install(files=files)
            trusted = self._install_cached_map()
            if trusted != deferred and known_key is not None:
                self._map_resent = True  # its "map unchanged" (graph None) must not count
                self._send(("resend_map",))
            self._take_cached_map(trusted, key, sources)
        finally:
            self._map_pending = False

    def _spawn_early(self) -> tuple[Connection, subprocess.Popen] | None:
        """Start the indexer's child now, before the tree's check ends, when the last
        launch's duplicate snapshot says the tree is large (a child, not a thread, will run
        it): niced from its first import, it maps and checks that snapshot and lists the
        Python files while git checks the tree, so an unchanged tree's duplicate index is
        ready ~0.5 s sooner (20,000 files: the child's own start, 0.5-0.6 s idle, came after
        the check)."""
        if self.in_process or not self.use_cache:
            return None
        if self.in_process is None and not _early_start_pays(self.root, self.cache_path):
            return None
        self._early = _start_child_early(self.root, self.cache_path, self.use_cache)
        return self._early

    def _install_cached_map(self, latest: tuple[bytes, Any] | None = None) -> bytes | None:
        """Install the map stored last, before the tree is even checked (a request sent
        meanwhile uses it, and `/context` says it is being checked); returns the key of
        the tree it was stored for."""
        from core.indexing.cache import read_latest_snapshot

        if latest is None:
            latest = read_latest_snapshot(self.root, "map", self.cache_path)
        if latest is None or type(latest[1]).__name__ != "MapGraph":
            return None
        key, graph = latest
        n = len(graph.files)
        self._trusted = True
        # warmed by _warm_after_first_frame, not at once: the warm-up (0.12-0.18 s of this
        # process's CPU on 20,000 files) ran beside the niced indexer's start, in the window
        # between the first frame and "duplicates ready" (4 launches at load 2-4)
        self.repo_map.install(graph=graph, progress=(n, n, False), warm=False)
        self._update(map_done=n, map_total=n, map_complete=True, map_checked=False)
        return key

    def _warm_after_first_frame(self, *, ranks: bool = True) -> None:
        """Warm the ranks in a thread of its own, once the app's first frame is up (at
        load 6 the warm-up running beside the app's start delayed that frame by 0.7-2.6 s)
        and the duplicate index is ready or WARM_AFTER_DUPS_S has passed: the warm-up
        (~0.5 s of this process's CPU) beside the niced indexer's start held a second
        launch's duplicates back under load, while it only speeds up a first request.
        The ranking's imports (scipy.sparse, 0.1-0.15 s of CPU) come with it: the repo map
        is told not to load them at once (`use_external_index(prepare=False)`). With
        `ranks=False` (no map to rank yet: a first launch), only those imports, once the
        first frame is up: a first launch's duplicate index takes minutes anyway."""
        gate = self._first_frame

        def later() -> None:
            if gate is not None:
                gate.wait(WARM_AFTER_FRAME_S)
            if not ranks:
                self._prepare_ranking()
                return
            with self._changed:
                self._changed.wait_for(lambda: self._state.dups_complete
                                       or self._state.mode in {"failed", "stopped"}, WARM_AFTER_DUPS_S)
            self._warm_ranks()

        threading.Thread(target=later, name="spark-index-warm", daemon=True).start()

    def _prepare_ranking(self) -> None:
        """Import what ranking needs now, so a first request does not."""
        try:
            from core.context.rank import prepare_solver

            prepare_solver()
        except Exception as exc:  # noqa: BLE001 -- an optimisation; the request imports anyway
            self._note(f"loading the repo map's ranking failed: {exc}")

    def _warm_ranks(self) -> None:
        """Rank the fresh graph once with no focus, here in the background: the first
        request then warm-starts PageRank from it instead of from scratch (~0.5 s on a
        20,000-file graph)."""
        try:
            self.repo_map.prefetch()
        except Exception as exc:  # noqa: BLE001 -- an optimisation; the request ranks anyway
            self._note(f"warming the repo map's ranks failed: {exc}")

    def _stored_map(self, key: bytes) -> Any:
        """The map the indexer stored under `key`, read from the file (its arrays copied
        once, not received through the socket: no 114 MB pickle on either side), or None
        when the file does not hold it (then the indexer is asked to send it)."""
        from core.indexing.cache import cache_file, read_snapshot_file, snapshot_file

        found = read_snapshot_file(snapshot_file(self.cache_path or cache_file(self.root), "map"),
                                   str(self.root), "map", copy=True)
        if found is None or found[0] != key or type(found[1]).__name__ != "MapGraph":
            return None
        return found[1]

    def _read(self, conn: Connection) -> None:
        while True:
            try:
                msg = conn.recv()
            except (OSError, EOFError):
                if self._state.mode != "stopped":
                    self._update(mode="failed" if not self._state.complete else "stopped")
                for event, _box in list(self._replies.values()):
                    event.set()
                return
            kind = msg[0]
            if kind == "map":  # graph None: the one installed from the cache is current
                _, graph, done, total, complete = msg
                if graph is None and (self._map_resent or self._map_pending):
                    continue  # (that read marks it checked, or the one asked for follows)
                if isinstance(graph, tuple) and graph[0] == "oob":  # its arrays follow raw
                    from core.indexing import wire

                    try:
                        graph = wire.recv_buffers(conn, graph[1])
                    except (OSError, EOFError):
                        continue  # the socket failed: the next recv says so
                elif isinstance(graph, tuple):  # ("stored", key): in the snapshot file just written
                    graph = self._stored_map(graph[1])
                    if graph is None:
                        self._send(("resend_map",))  # the indexer sends it itself, then
                        continue
                if self._trusted and not complete:
                    # a partial map of the tree now would replace a whole one that is only
                    # out of date in the files that changed: keep the whole one meanwhile
                    self._update(map_done=done, map_total=total)
                    continue
                if complete:
                    self._trusted = False
                if graph is not None:
                    self._map_resent = False
                self.repo_map.install(graph=graph, progress=(done, total, complete))
                self._update(map_done=done, map_total=total, map_complete=complete,
                             map_checked=complete)
                if complete and graph is not None:
                    self._warm_ranks()
            elif kind == "map_delta":  # saved files spliced into the map sent last (a few kB)
                _, deltas, done, total = msg
                if not self.repo_map.apply_deltas(deltas, (done, total, True)):
                    self._send(("resend_map",))  # not the map it was made for: the whole one
                    continue
                self._trusted = False  # the indexer's map of the tree now, as a whole one is
                self._update(map_done=done, map_total=total, map_complete=True, map_checked=True)
                self._warm_ranks()
            elif kind == "dups":
                _, done, total, complete = msg
                self._update(dups_done=done, dups_total=total, dups_complete=complete)
                if complete and self.on_dups_ready is not None:
                    self.on_dups_ready()
            elif kind == "growth":
                self._update(baseline_lines=msg[1])
                if self.on_growth is not None:
                    self.on_growth(msg[1])
            elif kind == "reply":
                _, req, matches, error = msg
                waiting = self._replies.get(req)
                if waiting is not None:
                    waiting[1].append((matches, error))
                    waiting[0].set()
            elif kind == "note":
                self._note(msg[1])


class RemoteDuplicates:
    """What a `Workstation` asks of its duplicate index, answered by the indexer.

    File events reach the indexer through the repo map (every path, not only `.py`), so
    `apply_events` has nothing left to do.
    """

    def __init__(self, service: IndexService) -> None:
        self.service = service

    def check_source(self, source: str, path: str | None = None, *,
                     lines: Iterable[int] | None = None, **_ignored: Any) -> list:
        return self.service.check_source(source, path, lines=lines)

    def apply_events(self, events: Iterable[tuple[str, str]]) -> list:
        """Handled by the repo map's event forwarding (the indexer's `DuplicateIndex.apply_events`)."""
        return []


def attach(station: Any, **options: Any) -> IndexService:
    """Give a `Workstation` a background indexer: its repo map is fed from it, its
    duplicate checks go to it, its growth meter starts when the tree's lines are counted.
    Returns the started service (`station.indexes`)."""
    context = station.context
    # the map is made when first needed (ChatContext.repo_map: on a second launch after
    # the app's first frame), and fed by this service from the moment it is made
    service = IndexService(station.root, lambda: context.repo_map, **options)
    context.when_repo_map(lambda made: made.use_external_index(on_event=service.on_file_event, prepare=False))

    def growth(lines: int) -> None:
        # imported when the count arrives: the meter pulls in the slop detector (~0.15 s),
        # which the app's first frame must not wait for
        from core.detectors.growth import GrowthMeter

        if station.growth is None:
            station.growth = GrowthMeter(lines)

    def dups_ready() -> None:
        station.dups_ready = True

    service.on_growth = growth
    service.on_dups_ready = dups_ready
    station.dups = RemoteDuplicates(service)
    station.indexes = service
    return service.start()


def _early_start_pays(root: Path, cache_path: Path | None) -> bool:
    """Start the child before the app's first frame for a large tree, however busy the
    machine. It was started only with a core to spare (at load 3 on two cores it took
    0.2 s from the first frame then), and on a busier machine after the frame, which put
    its whole start (~0.2 s of a core) after it: duplicates ready 1.0-1.2 s. Its start
    before "init" is now imports and a mapping (~0.15 s of a core, niced): the tree is no
    longer walked (the kept listing holds across launches) nor the SQLite cache checked on
    the way. Second launches, alternating, own session at autogroup nice -10, load 6-8 on
    two cores, medians (max) of 10 / 8: r20k busy path frame 0.673 (0.948) s, dups 1.069
    (1.343); started early frame 0.703 (1.034), dups 0.752 (1.055); real 20k tree frame
    0.662 (0.692) -> 0.688 (0.831), dups 1.062 (1.197) -> 0.722 (0.900)."""
    return _large_cached_tree(root, cache_path)


def _large_cached_tree(root: Path, cache_path: Path | None) -> bool:
    """Whether the duplicate snapshot stored last is of a tree the size of those a child
    process indexes (a stat, not a read: this runs before anything is loaded)."""
    from core.indexing.cache import cache_file

    try:
        size = (cache_path or cache_file(root)).with_suffix(".dups").stat().st_size
    except OSError:
        return False
    return size >= EARLY_CHILD_SNAPSHOT_BYTES


def _start_child_early(root: Path, cache_path: Path | None,
                       use_cache: bool) -> tuple[Connection, subprocess.Popen] | None:
    """The indexer's child, told where its caches are ("open") but not yet the tree."""
    try:
        parent, proc = _spawn_child()
    except OSError:
        return None  # started later, the usual way
    try:
        parent.send(("open", str(root), str(cache_path) if cache_path else None, use_cache))
    except OSError:
        proc.kill()
        return None
    return parent, proc


def _spawn_child() -> tuple[Connection, subprocess.Popen]:
    """Start `python -m core.indexing.worker FD` (see core.child_process)."""
    from core.child_process import spawn_module

    # the indexer never calls BLAS; OpenBLAS would start a thread per core at numpy's
    # import (~35 ms of CPU in a second launch's child, on its way to "duplicates ready")
    return spawn_module("core.indexing.worker", env_defaults={"OPENBLAS_NUM_THREADS": "1"})
