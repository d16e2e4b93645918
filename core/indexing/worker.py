"""The indexer: builds the repo map and the duplicate index away from the UI's interpreter.

It runs in a child process (a large tree: its CPU never holds the GIL the UI and the
embedded core need) or, for a small tree, in a thread of the app. Either way it talks to
`core.indexing.service.IndexService` over one `multiprocessing` connection, and it
answers between two files, so a duplicate check or a file event never waits for a whole
build:

    UI -> indexer   ("open", root, cache_path, use_cache)  (a child started early: see below)
                    ("init", root, files, cache_path, use_cache, known_key)
                    ("events", [(path, kind), ...])     files changed on disk
                    ("check", id, source, path, lines)  duplicate check of new code
                    ("resend_map",)                     the stored map could not be read, or a
                                                        delta did not fit the map held
                    ("stop",)
    indexer -> UI   ("map", MapGraph | ("stored", key) | ("oob", sizes) | None, done, total, complete)
                    (after ("oob", sizes): the map's pickle and its arrays' bytes: core.indexing.wire)
                    ("map_delta", [MapDelta, ...], done, total)  saved files spliced into the
                                                        map sent last (core.context.repomap_delta)
                    ("dups", done, total, complete)
                    ("reply", id, matches | None, error | None)
                    ("note", text)                       e.g. why a cache was rebuilt

A child process may be started before the app has checked its tree ("open"): it maps the
duplicate index's snapshot, checks its checksum and lists the tree's Python files while
git checks the tree, and opens the SQLite cache in a thread meanwhile, so on an unchanged
tree "init" (the tree's state) leaves only a comparison of file tokens before the index is
ready (on 20,000 files that work took 0.5-0.6 s after the check when it began there).

Work order: the repo map first (cheap per file, what every request uses), then the
duplicate index (a full parse per file, needed only once an answer is reviewed). Every
scan goes through the on-disk cache (`core.indexing.cache`): an unchanged tree loads the
map's graph in one read and each file's fingerprints without parsing.
"""

from __future__ import annotations

import dataclasses
import os

if __name__ == "__main__":  # the child: niced before its imports (~0.15 s of CPU beside the app's start)
    try:
        os.nice(5)  # the UI wins a contended CPU
    except (AttributeError, OSError):
        pass

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.detectors.dup_store import SnapshotError
from core.detectors.duplicates import DuplicateIndex, release_free_memory
from core.detectors.normalize import FunctionUnit
from core.indexing.cache import (
    CACHE_VERSION,
    CacheError,
    IndexCache,
    Stamp,
    cache_file,
    content_hash,
    snapshot_file,
)
from core.indexing.pyfiles import python_files
from core.indexing.treestate import TreeState, tree_state

if TYPE_CHECKING:  # the map's modules (~50 ms of imports) load on first use: a second
    # launch's child has its duplicate index ready before it needs them
    from core.context import tags as tagmod
    from core.context.repomap import FileFacts, MapGraph, RefVocab
    from core.context.repomap_delta import MapDelta, MapEdit, MapIndex

PROGRESS_EVERY_S = 0.25
FIRST_MAP_AFTER_S = 0.3  # a partial map goes out this soon, then at doubling file counts
PARTIAL_MAP_GAP_S = 1.0  # at least this long between two partial maps (each costs a graph build)
SNAPSHOT_AFTER_S = 2.0  # the map snapshot is stored once file events have been quiet this long
# ... or this long when the map changed only by deltas since it was last stored: the snapshot
# is the whole map (116 MB and ~0.2-0.5 s of a core on a real 20k tree) for a few kB of change,
# and it is stored anyway when the indexer ends (the app stopping or gone: `run`'s finally).
# A stale one (the indexer killed) costs the next launch a map build from the cached scans.
SNAPSHOT_AFTER_DELTAS_S = 60.0
# a duplicate snapshot stored here is read back and vouched for this long after (it must
# have settled: core.indexing.checked.RACY_NS), while the indexer waits for events
VOUCH_AFTER_S = 2.5
# saves in one batch that change a file's defined names (or add or delete a file) made as
# edits of the held map; more (a branch switch, a generator run) and the map is built whole
MAX_EDITS_PER_BATCH = 16


class Indexer:
    """One repository's indexes, built and kept current from file events."""

    def __init__(self, root: Path, conn: Connection, files: list[str] | TreeState | None, *,
                 cache_path: Path | None = None, use_cache: bool = True) -> None:
        self.root = Path(root).resolve()
        self.conn = conn
        self.state: TreeState | None = None
        self.files: list[str] = []
        if files is not None:
            self.set_tree(files)
        # the SQLite cache opens in a thread (its integrity check reads the whole file:
        # ~0.1-0.2 s on 20,000 files, GIL released), begun once the duplicate snapshot is
        # mapped; `cache` is None until `await_cache` has joined it, which everything that
        # reads the cache does first. An unchanged tree's index is ready without it.
        self.cache: IndexCache | None = None
        self.cache_file: Path | None = (cache_path or cache_file(self.root)) if use_cache else None
        self._opened: IndexCache | str | None = None  # the cache, or why it is unavailable
        self._opener: threading.Thread | None = None
        self._opening = use_cache  # not opened (or begun) yet
        self._preloaded: dict[str, str] | SnapshotError | None = None  # see preload_dups
        self.vocab: RefVocab | None = None  # made with the first scan
        self.facts: dict[str, FileFacts] = {}
        self.stamps: dict[str, tuple[int, int]] = {}
        self.dups = DuplicateIndex(self.root)
        self.dups_files = 0
        self.dups_total = 0
        self.stopped = False
        self.facts_complete = False
        self.dups_complete = False
        self.known_key: bytes | None = None  # tree key of the map snapshot the app loaded itself
        self.snapshot_due: float | None = None  # when to store the map snapshot after file events
        self.vouch_due: float | None = None  # when to vouch for the dups snapshot stored here
        self._vouch_tries = 0
        self.rebuilt_unstored = False  # a map built whole since the snapshot was last stored
        # the held map is of the tree now, its scans not loaded (`self.facts` holds only the
        # files rescanned since): a launch from the map snapshot whose saves were all deltas
        self.scanless = False
        self._graph: MapGraph | None = None  # the map last sent to the app
        self._index: MapIndex | None = None  # the lookups map edits are made with (`_map_index`)
        self._edits_over_cap = False  # the last batch had more than MAX_EDITS_PER_BATCH edits
        self.scanned: set[str] = set()  # files rescanned from events since the last stored snapshot

    def set_tree(self, files: list[str] | TreeState) -> None:
        """The tree as the app saw it: a TreeState (listing and content key), or a bare listing."""
        self.state = files if isinstance(files, TreeState) else None
        self.files = files.files if isinstance(files, TreeState) else files

    def begin_cache_open(self) -> None:
        """Start opening the cache in a thread (once)."""
        if self._opening:
            self._opening = False
            self._opener = threading.Thread(target=self._open_cache, name="spark-cache-open", daemon=True)
            self._opener.start()

    def _open_cache(self) -> None:
        try:
            self._opened = IndexCache(self.root, self.cache_file).open()
        except CacheError as exc:
            self._opened = str(exc)
        except Exception as exc:  # noqa: BLE001 -- said by await_cache, on the indexer's thread
            self._opened = f"{type(exc).__name__}: {exc}"

    def await_cache(self) -> None:
        """Join the cache's opening (once) and say if it was unavailable or rebuilt."""
        self.begin_cache_open()
        opener, self._opener = self._opener, None
        if opener is None:
            return
        opener.join()
        opened, self._opened = self._opened, None
        if isinstance(opened, IndexCache):
            self.cache = opened
            if opened.rebuilt:
                self.send("note", f"index cache rebuilt: the old one was {opened.rebuilt}")
        else:
            self.send("note", f"index cache unavailable, indexing without it: {opened}")

    # -- messaging ---------------------------------------------------------------------
    def send(self, *msg: Any) -> None:
        try:
            self.conn.send(msg)
        except (OSError, EOFError, BrokenPipeError):
            self.stopped = True  # the app is gone

    def serve_pending(self) -> None:
        """Answer whatever arrived while a file was being scanned (never blocks)."""
        try:
            while not self.stopped and self.conn.poll(0):
                self.handle(self.conn.recv())
        except (OSError, EOFError):
            self.stopped = True

    def handle(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == "stop":
            self.stopped = True
        elif kind == "check":
            _, req, source, path, lines = msg
            try:
                matches = self.dups.check_source(source, path, lines=lines)
            except Exception as exc:  # noqa: BLE001 -- one bad check must not end the indexer
                self.send("reply", req, None, f"{type(exc).__name__}: {exc}")
            else:
                self.send("reply", req, matches, None)
        elif kind == "events":
            events = list(msg[1])
            later = self._take_queued_events(events)
            if not self.stopped:
                self.on_events(events)
            for other in later:
                self.handle(other)
        elif kind == "resend_map":  # the app could not read the stored map back
            self.resend_map()

    def _take_queued_events(self, events: list[tuple[str, str]]) -> list[tuple]:
        """Add to `events` those of every "events" message already waiting (never blocks),
        so they cost one map build and one map sent: on a real 20,000-file tree each build
        takes the child 3-5 s, and the app sends one message per saved file, so five
        files written at once were five builds (~20 s of a core) and five maps for the
        app to receive. The other messages waiting, in their order, are returned to be
        handled after (a stop at once)."""
        later: list[tuple] = []
        try:
            while not self.stopped and self.conn.poll(0):
                msg = self.conn.recv()
                if msg[0] == "events":
                    events.extend(msg[1])
                elif msg[0] == "stop":
                    self.stopped = True
                else:
                    later.append(msg)
        except (OSError, EOFError):
            self.stopped = True
        return later

    # -- the whole run -------------------------------------------------------------------
    def run(self) -> None:
        try:
            # the app installs a cached map itself (known_key): the duplicate index's
            # snapshot (~0.2 s on 20,000 files) goes first then, else right after the map
            if self.known_key is not None:
                self.load_dups_snapshot()
            self.await_cache()
            self.build_map()
            if not self.stopped and self.known_key is None:
                self.load_dups_snapshot()  # an unchanged tree: the duplicate index in < 1 s
            if not self.stopped:
                from core.detectors.growth import LINES_SNAPSHOT, count_tree_lines_stored

                # each file's count is kept beside the cache: an unchanged tree is a stat walk
                store = snapshot_file(self.cache.path, LINES_SNAPSHOT) if self.cache is not None else None
                self.send("growth", count_tree_lines_stored(self.root, store, between=self.serve_pending))
            if not self.stopped and not self.dups_complete:
                self._release_map_scans()
                self.build_dups()
            while not self.stopped:
                try:
                    due = [t for t in (self.snapshot_due, self.vouch_due) if t is not None]
                    wait = None if not due else max(0.0, min(due) - time.monotonic())
                    if not self.conn.poll(wait):
                        if self.vouch_due is not None and self.vouch_due <= time.monotonic():
                            self.vouch_dups_snapshot()
                        if self.snapshot_due is not None and self.snapshot_due <= time.monotonic():
                            self.store_map_snapshot()
                        continue
                    msg = self.conn.recv()
                except (OSError, EOFError):
                    break
                self.handle(msg)
        finally:
            self.await_cache()
            if self.cache is not None:
                self.store_map_snapshot()
                self.cache.close()

    # -- repo map ----------------------------------------------------------------------
    def build_map(self) -> None:
        # the tree's state is taken before any file is read: a file that changes meanwhile
        # makes the stored key older than the map, never a key that vouches for old scans
        if self.state is None:
            self.state = tree_state(self.root)
        key = self.state.key
        total = len(self.state.tokens)
        if self.cache is not None and key == self.known_key:
            # the app installed the stored map and found it of this very tree: nothing to
            # read here (the 50 MB graph held in this process too was never used: the first
            # file event rebuilds the graph from the per-file scans)
            self.send("map", None, total, total, True)
            self.facts_complete = False
            return
        from core.context.repomap import MapGraph, build_graph

        if self.cache is not None:
            graph = self.cache.snapshot("map", key)
            if isinstance(graph, MapGraph):
                self._send_map(graph, total, total, stored=key)
                self._graph = graph
                self.facts_complete = False  # scans load from the cache on the first event
                return
        self.stamps = map_stamps(self.root, self.files)
        total = len(self.stamps)
        self._scan_all_tags()
        graph = build_graph(self.facts, self._vocab(), exact=True)
        graph.serial = new_serial()
        self._graph = graph
        release_free_memory()  # the build's temporaries (~100 MB on a real 20k tree)
        stored = None
        if self.cache is not None:
            self.cache.forget_missing(set(self.stamps) | set(self._python_files()))
            self.cache.commit()
            stored = self._store_map(key, graph)
        self._send_map(graph, len(self.facts), total, stored=stored)

    def resend_map(self) -> None:
        """Send the whole map itself: the one held, else the stored one as read here, else
        (let go before the duplicate build) one built again from the cached scans."""
        graph = self._graph
        if graph is None and self.cache is not None and self.state is not None:
            graph = self.cache.snapshot("map", self.state.key)
        if graph is not None:
            self._send_graph(graph, len(graph.files), len(graph.files), True)
        else:
            self.on_events([])  # reloads the scans, builds the graph and sends it

    def _store_map(self, key: bytes, graph: MapGraph) -> bytes | None:
        """Store the map's snapshot under `key`; the key, or None when it could not be."""
        assert self.cache is not None
        try:
            self.cache.store_snapshot("map", key, graph)
        except OSError as exc:
            self.send("note", f"map snapshot not stored: {exc}")
            return None
        return key

    def _send_map(self, graph: MapGraph, done: int, total: int, *, stored: bytes | None) -> None:
        """A whole map to the app: as the key of the snapshot file that holds it (the app
        reads it from there), or, with none stored, the graph itself.
        Pickled into the socket, a real 20,000-file tree's map (114 MB) put that much again
        in this process (and a copy in the app), on top of the scans and the graph: a first
        launch's indexer peaked at 650 MB there."""
        if stored is not None:
            self.send("map", ("stored", stored), done, total, True)
        else:
            self._send_graph(graph, done, total, True)

    def _send_graph(self, graph: MapGraph, done: int, total: int, complete: bool) -> None:
        """A map itself to the app, its arrays out of band (`core.indexing.wire`): the app
        unpickles only the small rest holding the GIL (a real 20k-file map: the whole
        pickle held it 69-85 ms per saved file)."""
        from core.indexing import wire

        parts = wire.split(graph)
        if parts is None:
            self.send("map", graph, done, total, complete)
            return
        data, raws = parts
        self.send("map", ("oob", [r.nbytes for r in raws]), done, total, complete)
        try:
            wire.send_buffers(self.conn, data, raws)
        except (OSError, EOFError, BrokenPipeError):
            self.stopped = True  # the app is gone

    def _vocab(self) -> RefVocab:
        if self.vocab is None:
            from core.context.repomap import RefVocab

            self.vocab = RefVocab()
        return self.vocab

    def _release_map_scans(self) -> None:
        """Let the map's per-file scans go before the duplicate index is built: they are in
        the cache, and the graph is with the app and in its snapshot. On 20,000 files they
        held ~67 MB through the build, whose peak is the indexer's (a first launch peaked
        at 567 MB). The first file event loads them back from the cache, as after a launch
        from the map snapshot."""
        if self.cache is None or not self.facts_complete:
            return  # without a cache the scans would have to be parsed again
        self.facts, self.vocab, self.stamps, self._graph, self._index = {}, None, {}, None, None
        self.facts_complete = self.scanless = False

    def store_map_snapshot(self) -> None:
        """Store the map after file events, under the key of the tree as it is now, if the
        map holds every mapped file as it is now: each file whose content changed since the
        last stored state must have been rescanned at its current stamp. Otherwise (an event
        not handled yet) nothing is stored; the next quiet moment tries again."""
        self.snapshot_due = None
        if self.cache is None or self.state is None or self._graph is None or \
                not (self.facts_complete or self.scanless):
            return
        try:
            now = tree_state(self.root)
        except Exception as exc:  # noqa: BLE001 -- the snapshot is an optimisation; say why it is missing
            self.send("note", f"map snapshot not stored: {type(exc).__name__}: {exc}")
            return
        if any(rel not in now.tokens for rel in self.facts) or \
                any(rel not in now.tokens for rel in self._graph.files):
            return  # a file gone from the tree is still in the map
        for rel in sorted(set(now.changed_since(self.state)) | self.scanned):
            if rel not in now.tokens:
                continue  # gone, and (above) not in the map
            try:
                st = os.stat(self.root / rel)
            except OSError:
                return
            if rel not in self.scanned or self.stamps.get(rel) != (st.st_mtime_ns, st.st_size):
                return  # changed since it was scanned (or never rescanned): its event is coming
        self.cache.store_snapshot("map", now.key, self._graph)
        self.state = now
        self.scanned.clear()
        self.rebuilt_unstored = False

    def _scan_all_tags(self, *, partial: bool = True) -> None:
        """Every source file's facts, from the cache where it is current; with `partial`,
        partial maps go to the app while this runs (not when it already has a full one)."""
        from core.context.repomap import build_graph

        total = len(self.stamps)
        # each file's cached scan is read when its turn comes: the whole column read up front
        # (20,000 unpickled FileTags, ~55 MB more at once) left the heap fragmented under the
        # packed scans, ~75 MB of a real 20,000-file tree's resident map phase
        cache = self.cache
        started = time.perf_counter()
        next_send = started + FIRST_MAP_AFTER_S
        next_count = 0
        for done, rel in enumerate(self.stamps, 1):
            self._scan_tags(rel, cache.get(rel, "tags") if cache is not None else None)
            now = time.perf_counter()
            # (none past half the tree: the whole map follows, and the last partial ones
            # cost nearly as much as it: memory and a build here, an unpickling in the app)
            if partial and now >= next_send and done >= next_count and done * 2 <= total:
                self._send_graph(build_graph(self.facts, self._vocab(), exact=True), len(self.facts), total, False)
                next_count = max(256, done * 2)
                next_send = time.perf_counter() + PARTIAL_MAP_GAP_S
            self.serve_pending()
            if self.stopped:
                return
        self.facts_complete = True

    def _scan_tags(self, rel: str, cached: tuple[Stamp, Any] | None) -> bool:
        """Bring one file's facts up to date; True when they changed."""
        from core.context import tags as tagmod
        from core.context.repomap import FileFacts

        lang = tagmod.language_for(rel)
        stamp = self.stamps.get(rel)
        if lang is None or stamp is None:
            return self.facts.pop(rel, None) is not None
        if cached is not None and (cached[0].mtime_ns, cached[0].size) == stamp:
            tags = _tags_from_cache(cached[1], lang)
            if tags is not None:
                self.facts[rel] = FileFacts.of(tags, self._vocab())
                return True
        data = _read(self.root / rel, stamp[1])
        if data is None:
            return self.facts.pop(rel, None) is not None
        digest = content_hash(data)
        if cached is not None and cached[0].digest == digest:
            tags = _tags_from_cache(cached[1], lang)
            if tags is not None:
                self.facts[rel] = FileFacts.of(tags, self._vocab())
                if self.cache is not None:
                    self.cache.touch(rel, Stamp(stamp[0], stamp[1], digest))
                return True
        try:
            tags = _exact_tags(lang, data)
        except Exception:  # noqa: BLE001 -- a grammar that fails must not take the map down
            return self.facts.pop(rel, None) is not None
        self.facts[rel] = FileFacts.of(tags, self._vocab())
        if self.cache is not None:
            self.cache.put(rel, Stamp(stamp[0], stamp[1], digest), "tags", _tags_to_cache(tags))
        return True

    # -- duplicate index ---------------------------------------------------------------
    def _python_files(self) -> list[str]:
        """The tree's .py files at the start (walked, or the last walk's listing where no
        folder changed since: see pyfiles.py)."""
        if not hasattr(self, "_py_files"):
            record = None if self.cache_file is None else self.cache_file.with_suffix(".pyfiles")
            self._py_files = python_files(self.root, record)
        return self._py_files

    def build_dups(self) -> None:
        """Cached fingerprints first, streamed row by row (185,000 functions on 20k files:
        a dict of them all beside the index doubled the indexer's memory), then the files
        the cache does not hold or holds stale, parsed."""
        files = self._python_files()
        self.dups_total = len(files)
        pending = set(files)
        done = 0
        last = 0.0
        # files; frozen at counts growing by a quarter, so near misses are found early and the
        # rows staged between two freezes (Python objects) stay a fifth of the frozen table:
        # streaming 20,800 cached files peaked at 520 MB when doubling, 418-446 MB at 1.2-1.3
        next_freeze = 256

        def step() -> bool:
            nonlocal last, next_freeze
            self.dups_files = done
            if done >= next_freeze:
                self.dups.finish_loading()
                next_freeze = int(next_freeze * 1.25)
            now = time.perf_counter()
            if now - last >= PROGRESS_EVERY_S:
                last = now
                self.send("dups", done, self.dups_total, False)
            self.serve_pending()
            return not self.stopped

        if self.cache is not None:
            for rel, stamp, units in self.cache.iter_column("units"):
                if rel not in pending or not self._add_cached_units(rel, stamp, units):
                    continue
                pending.discard(rel)
                done += 1
                if not step():
                    return
        for rel in sorted(pending):
            self._index_dups(rel, None)
            done += 1
            if not step():
                return
        self.dups.finish_loading()
        self.dups_complete = True  # from now on (file events) additions go to the delta
        if self.cache is not None:
            self.cache.commit()
        self.send("dups", self.dups_total, self.dups_total, True)
        self._warm_up_checks()
        self.store_dups_snapshot()

    # -- duplicate index snapshot (one memory-mapped file beside the cache) ------------------
    def _dups_snapshot_path(self) -> Path | None:
        return None if self.cache_file is None else self.cache_file.with_suffix(".dups")

    def _dups_expect(self) -> dict[str, Any]:
        """What a snapshot must say about itself to be used: this tree, this cache format."""
        return {"root": str(self.root), "cache_version": CACHE_VERSION}

    def _dup_token(self, rel: str) -> str | None:
        """What the snapshot remembers of a file's content: the app's tree-state token
        (git's blob id of it) where there is one, else its mtime and size; None: gone."""
        if self.state is not None:
            token = self.state.tokens.get(rel)
            if token is not None:
                return "t:" + token.hex()
        try:
            st = os.stat(self.root / rel)
        except OSError:
            return None
        return f"s:{st.st_mtime_ns}:{st.st_size}"

    def preload_dups(self) -> None:
        """Map the duplicate snapshot, check it and list the tree's Python files, before
        the tree's state is known (a child started early does this while git checks the
        tree); `load_dups_snapshot` then only compares tokens."""
        path = self._dups_snapshot_path()
        if path is None or not path.exists():
            return
        try:
            # the tree's .py files are listed while the snapshot's checksum is computed
            self._preloaded = self.dups.load_snapshot(path, self._dups_expect(), meanwhile=self._python_files)
        except SnapshotError as exc:
            self._preloaded = exc
            self.begin_cache_open()  # the index is built from the cache: open it meanwhile
        self._python_files()

    def load_dups_snapshot(self) -> bool:
        """The duplicate index from its snapshot (memory-mapped), brought up to date: files
        whose token changed since it was stored are indexed again (from the per-file cache,
        else parsed) and files gone are dropped; a snapshot much out of date is stored anew.
        False when there is none or it is refused (then `build_dups` builds and stores one)."""
        if self._preloaded is None:
            self.preload_dups()
        saved, self._preloaded = self._preloaded, None
        if saved is None:
            self.await_cache()
            return False
        if isinstance(saved, SnapshotError):
            self.await_cache()
            self.send("note", f"duplicate index snapshot rebuilt: the old one was {saved}")
            return False
        files = self._python_files()
        current = set(files)
        stale = [rel for rel, token in saved.items() if rel not in current or self._dup_token(rel) != token]
        for rel in stale:
            self.dups.remove_file(rel)
        todo = sorted((current - saved.keys()) | (current & set(stale)))
        if todo:
            self.await_cache()  # changed files' fingerprints come from it
        self.dups_complete = True  # additions go to the delta: queried at once, no freeze
        self.dups_total = len(files)
        last = 0.0
        for done, rel in enumerate(todo):
            self.dups_files = len(files) - len(todo) + done
            if time.perf_counter() - last >= PROGRESS_EVERY_S:
                last = time.perf_counter()
                self.send("dups", self.dups_files, self.dups_total, False)
            self._index_dups(rel, self.cache.get(rel, "units") if self.cache is not None else None)
            self.serve_pending()
            if self.stopped:
                return True
        self.dups_files = len(files)
        self.send("dups", self.dups_total, self.dups_total, True)
        # an unchanged tree's index needed no cache: it opens only now (its check reads the
        # whole database, 350 MB on 20k files: 0.1 s of a core warm, ~1 s and seconds of
        # disk cold), in a thread, not beside the app's start on the way to this message
        self.begin_cache_open()
        self._warm_up_checks()
        if len(todo) + len(stale) > max(64, len(files) // 20):
            self.await_cache()
            self.store_dups_snapshot()
        return True

    def _warm_up_checks(self) -> None:
        """One check of a small snippet now, so the app's first real one finds nothing
        cold (DuplicateIndex.warm_up); a failure here is the real check's to report."""
        try:
            self.dups.warm_up()
        except Exception:  # noqa: BLE001, S110 -- an optimisation only
            pass

    def store_dups_snapshot(self) -> None:
        """Freeze the duplicate index and store it for the next launch."""
        path = self._dups_snapshot_path()
        if path is None or self.cache is None:
            return
        tokens = {rel: token for rel in self.dups.files() if (token := self._dup_token(rel)) is not None}
        try:
            self.dups.save_snapshot(path, tokens, self._dups_expect())
            # the mapped file replaces the arrays just built: same rows, pages the system
            # can drop and share instead of anonymous memory. Not checksummed: the bytes
            # were just written from these arrays, and the checksum would read all 220 MB
            # (20k files) into the resident set while the arrays are still held
            self.dups.load_snapshot(path, self._dups_expect(), verify=False)
        except (OSError, SnapshotError) as exc:
            self.send("note", f"duplicate index snapshot not stored: {exc}")
            return
        self.vouch_due = time.monotonic() + VOUCH_AFTER_S
        self._vouch_tries = 0

    def vouch_dups_snapshot(self) -> None:
        """Vouch for the duplicate snapshot stored here once it has settled (dup_store.
        vouch_settled: read back in the background here, so the next launch does not read
        it on its way to "duplicates ready"); asked again a little later while it has not."""
        path = self._dups_snapshot_path()
        self.vouch_due = None
        if path is None:
            return
        from core.detectors.dup_store import vouch_settled

        if not vouch_settled(path) and path.exists() and self._vouch_tries < 3:
            self._vouch_tries += 1
            self.vouch_due = time.monotonic() + VOUCH_AFTER_S

    def _add_cached_units(self, rel: str, stamp: Stamp, units: Any) -> bool:
        """Index a file's cached fingerprints if the file is unchanged; False otherwise."""
        try:
            st = os.stat(self.root / rel)
        except OSError:
            return False
        if (stamp.mtime_ns, stamp.size) != (st.st_mtime_ns, st.st_size):
            return False
        if not isinstance(units, list) or not all(isinstance(u, FunctionUnit) for u in units):
            return False
        self.dups.add_units(rel, units, bulk=not self.dups_complete)
        return True

    def _index_dups(self, rel: str, cached: tuple[Stamp, Any] | None) -> None:
        if cached is not None and self._add_cached_units(rel, *cached):
            return
        try:
            st = os.stat(self.root / rel)
        except OSError:
            self.dups.remove_file(rel)
            return
        units = self.dups.units_of(rel)
        self.dups.add_units(rel, units, bulk=not self.dups_complete)
        self._cache_units(rel, st, units)

    def _cache_units(self, rel: str, st: os.stat_result, units: list[FunctionUnit]) -> None:
        """Keep a file's fingerprints in the cache under its stat taken before the read."""
        if self.cache is not None:
            try:
                data = (self.root / rel).read_bytes()
            except OSError:
                return
            self.cache.put(rel, Stamp(st.st_mtime_ns, st.st_size, content_hash(data)), "units", units)

    # -- file events -----------------------------------------------------------------------
    def on_events(self, events: list[tuple[str, str]]) -> None:
        from core.context import tags as tagmod
        from core.context.repomap import build_graph

        map_changed = False
        rescanned: list[str] = []
        if not self.facts_complete and not self.scanless:
            # a launch from the map snapshot: the files changed since its tree (their events
            # maybe lost) are rescanned with these, and spliced in like them if they can be
            # (no 20k scans loaded: 4-10 s of a core on a real 20k tree)
            lost = self._changed_since_snapshot()
            if lost is not None:
                known = {path.replace(os.sep, "/").lstrip("/") for path, _ in events}
                events = events + [(rel, "modified") for rel in lost if rel not in known]
                self.scanless = True
                map_changed = bool(lost)
        spliceable = (self.facts_complete or self.scanless) and self._graph is not None
        if not self.facts_complete and not self.scanless:
            self._load_map_scans()
            # the scans are of the tree now, the snapshot's graph of the tree at launch: a
            # file deleted or changed in between (its event maybe lost) must leave the map
            map_changed = True
        dup_events = []
        for path, kind in events:
            rel = path.replace(os.sep, "/").lstrip("/")
            full = self.root / rel
            exists = kind != "deleted" and full.is_file()
            if tagmod.language_for(rel) is not None:
                if exists:
                    st = full.stat()
                    self.stamps[rel] = (st.st_mtime_ns, st.st_size)
                else:
                    self.stamps.pop(rel, None)
                    if self.cache is not None:
                        self.cache.forget(rel)
                changed = self._scan_tags(rel, None)
                if not changed and rel not in self.facts and self._graph is not None and rel in self._graph.file_index:
                    changed = True  # gone, its scan never loaded (scanless): the map still holds it
                map_changed |= changed
                self.scanned.add(rel)
                rescanned.append(rel)
            if rel.endswith(".py"):
                dup_events.append((rel, "modified" if exists else "deleted"))
        for read in self.dups.apply_events(dup_events, bulk=not self.dups_complete):
            self._cache_units(read.rel, read.stat, read.units)
        if map_changed:
            spliced = self._map_deltas(rescanned) if spliceable else None
            if spliced is None and spliceable and not self.facts_complete and not self._edits_over_cap:
                # scanless, and the cache could not make an edit (a file's scan missing there):
                # with every scan loaded it can, still not a build
                self._load_map_scans()
                spliced = self._map_deltas(rescanned)
            if spliced is not None:  # a few kB to the app, which splices them into its map
                graph, deltas = spliced
                self.send("map_delta", deltas, len(graph.files), len(self.stamps))
            else:
                if not self.facts_complete:  # scanless: a delta could not make it
                    self._load_map_scans()  # (the files just rescanned come from the cache)
                graph = build_graph(self.facts, self._vocab(), exact=True)
                graph.serial = new_serial()
                self._send_graph(graph, len(self.facts), len(self.stamps), True)
                self.rebuilt_unstored = True
            self._graph = graph
        if self.cache is not None:
            self.cache.commit()
            quiet = SNAPSHOT_AFTER_S if self.rebuilt_unstored else SNAPSHOT_AFTER_DELTAS_S
            self.snapshot_due = time.monotonic() + quiet

    def _load_map_scans(self) -> None:
        """Every mapped file's scan, from the cache where current (the whole build needs them)."""
        if not self.stamps:
            self.stamps = map_stamps(self.root, self.files)
        self._scan_all_tags(partial=False)
        self.scanless = False

    def _changed_since_snapshot(self) -> list[str] | None:
        """With the scans not loaded: hold the map of the snapshot's tree (`self.state`;
        read from the cache if the app installed it itself) and say which files changed
        since; None when the map or the tree's state cannot be had, or the map has no
        serial (the app's copy could not take deltas): then the scans are loaded."""
        from core.context.repomap import MapGraph

        if self.cache is None or self.state is None:
            return None
        if self._graph is None:
            graph = self.cache.snapshot("map", self.state.key)
            if not isinstance(graph, MapGraph):
                return None
            self._graph = graph
        if not self._graph.serial:
            return None
        try:
            now = tree_state(self.root)
        except Exception:  # noqa: BLE001 -- then the scans are loaded, as before
            return None
        if not self.stamps:
            self.stamps = map_stamps(self.root, self.files)
        return now.changed_since(self.state)

    def _map_deltas(self, rescanned: list[str]) -> tuple[MapGraph, list[MapDelta | MapEdit]] | None:
        """The held map with each rescanned file's new scan spliced in (repomap_delta:
        equal to a full build) and the deltas that make it from the map the app holds
        (the one sent last: same serial). A file that keeps its defined names is a
        MapDelta; one that changed them, came or went a MapEdit, made only with every
        file's scan loaded. None when the scans are not loaded and an edit is needed, more
        than MAX_EDITS_PER_BATCH are, an edit cannot be made (a row of a file deleted in
        the same batch), or the held map has no serial: then the whole graph is built and
        sent (real 20k tree: 2-5 s of a core and 114 MB; a delta is the file's scan, a
        few array copies and a few kB)."""
        from core.context.repomap_delta import apply_delta, make_delta

        graph = self._graph
        deltas: list[MapDelta | MapEdit] = []
        edits = 0
        # more files that change their names (or come or go) than MAX_EDITS_PER_BATCH: one
        # build, told before any edit is made (each costs the child 30-200 ms, the app ~25-50)
        vocab = self._vocab()
        self._edits_over_cap = graph is not None and sum(
            1 for rel in dict.fromkeys(rescanned)
            if (rel in self.facts or rel in graph.file_index)
            and make_delta(graph, rel, self.facts.get(rel), vocab) is None) > MAX_EDITS_PER_BATCH
        if self._edits_over_cap:
            return None
        for rel in dict.fromkeys(rescanned):
            if graph is None or not graph.serial:
                return None
            if rel not in self.facts and rel not in graph.file_index:
                continue  # not mapped before or now (too big, unreadable): nothing changes
            delta = make_delta(graph, rel, self.facts.get(rel), self._vocab())
            if delta is not None:
                delta = dataclasses.replace(delta, serial=new_serial())
                graph = apply_delta(graph, delta)
                deltas.append(delta)
                continue
            edits += 1
            index = self._map_index(graph) if edits <= MAX_EDITS_PER_BATCH else None
            if index is None:
                return None
            made = index.update(graph, rel, self.facts.get(rel))
            if made is None:
                return None
            graph, edit = made
            graph.serial = new_serial()
            deltas.append(dataclasses.replace(edit, serial=graph.serial))
        return (graph, deltas) if graph is not None else None

    def _map_index(self, graph: MapGraph) -> MapIndex | None:
        """The lookups for map edits, of the scans and vocabulary held now. Scanless (a
        launch from the map snapshot, no scans loaded) the scans an edit needs are read
        from the cache one by one and the files that mention a new name are found by one
        query over the cached scans (`_CachedScans`), instead of loading all of them first
        (4-8 s of a core on a real 20k tree); None when the cache does not hold every mapped
        file's scan as the file is now (then the caller loads them)."""
        from core.context.repomap_delta import MapIndex

        vocab = self._vocab()
        index = self._index
        if self.facts_complete:
            if index is None or index.vocab is not vocab or index.scans is not self.facts:
                index = self._index = MapIndex(vocab, self.facts)
            return index
        if not self.scanless or self.cache is None:
            return None
        scans = index.scans if index is not None and index.vocab is vocab else None
        if not isinstance(scans, _CachedScans) or scans.facts is not self.facts:
            scans = _CachedScans(self)
            if not scans.covers(graph.files):
                return None
            index = self._index = MapIndex(vocab, scans, mentions=scans.mentions)
        return index


class _CachedScans(Mapping[str, "FileFacts"]):
    """Every mapped file's scan for a scanless map edit: the indexer's own for the files
    rescanned since the launch, else read from the cache when first asked (an edit reads
    the file's, the files that mention its new names, and those whose edges change)."""

    def __init__(self, ix: Indexer) -> None:
        self.ix = ix
        self.facts = ix.facts
        self._read: dict[str, FileFacts | None] = {}

    def __getitem__(self, rel: str) -> FileFacts:
        found = self.facts.get(rel)
        if found is None:
            if rel not in self._read:
                self._read[rel] = self._load(rel)
            found = self._read[rel]
        if found is None:
            raise KeyError(rel)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.ix.stamps)

    def __len__(self) -> int:
        return len(self.ix.stamps)

    def _load(self, rel: str) -> FileFacts | None:
        from core.context import tags as tagmod
        from core.context.repomap import FileFacts

        lang = tagmod.language_for(rel)
        stamp = self.ix.stamps.get(rel)
        cached = self.ix.cache.get(rel, "tags") if self.ix.cache is not None and lang is not None else None
        if lang is None or cached is None or (cached[0].mtime_ns, cached[0].size) != stamp:
            return None
        tags = _tags_from_cache(cached[1], lang)
        return None if tags is None else FileFacts.of(tags, self.ix._vocab())

    def covers(self, files: list[str]) -> bool:
        """Whether each of `files` is rescanned here or cached as it is now."""
        assert self.ix.cache is not None
        rows = {path: (mtime, size) for path, mtime, size in self.ix.cache.db.execute(
            "SELECT path, mtime_ns, size FROM files WHERE tags IS NOT NULL")}
        stamps = self.ix.stamps
        return all(rel in self.facts or (rel in rows and rows[rel] == stamps.get(rel)) for rel in files)

    def mentions(self, vids: list[int]) -> set[str]:
        """The files whose references include any of `vids`: those whose cached scan holds
        the name's bytes (one query; the references are stored as one bytes blob, so every
        file that mentions it is among them) checked on their scan, and the rescanned ones."""
        import numpy as np

        assert self.ix.cache is not None
        vocab = self.ix._vocab()
        names = [vocab.word(v) for v in vids]
        where = " OR ".join("instr(tags, ?) > 0" for _ in names)
        found = {path for (path,) in self.ix.cache.db.execute(
            f"SELECT path FROM files WHERE tags IS NOT NULL AND ({where})", names)}
        want = np.asarray(vids, dtype=np.int32)
        out: set[str] = set()
        for rel in found | set(self.facts):
            facts = self.get(rel)
            if facts is not None and bool(np.isin(facts.refs, want).any()):
                out.add(rel)
        return out


def new_serial() -> int:
    """A map's number (`MapGraph.serial`): random, so maps of two indexer runs never share
    one; never 0 (no serial)."""
    return int.from_bytes(os.urandom(8), "little") >> 2 | 1


def map_stamps(root: Path, files: list[str]) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of each file the map reads, keyed by path: the tree key's input."""
    from core.context import tags as tagmod

    stamps: dict[str, tuple[int, int]] = {}
    for rel in files:
        if tagmod.language_for(rel) is None:
            continue
        try:
            st = os.stat(root / rel)
        except OSError:
            continue
        stamps[rel] = (st.st_mtime_ns, st.st_size)
    return stamps


def _exact_tags(lang: str, data: bytes) -> tagmod.FileTags:
    """A file's tags with exact one-line signatures (Python: parsed with `ast` here, once,
    so rendering the map never reads a file on the request path); definitions whose
    header does not parse (a `def` inside a string) are left out, as the map would."""
    from core.context import tags as tagmod

    tags = tagmod.scan_source(lang, data)
    if lang != "python":
        return tags
    sigs = tagmod.python_signatures(data.decode("utf-8", "replace"), tags.defs)
    return tagmod.FileTags(lang, tuple(sigs[d.line] for d in tags.defs if d.line in sigs), tags.refs)


def _read(path: Path, size: int) -> bytes | None:
    from core.context.repomap import MAX_SCAN_BYTES

    if size > MAX_SCAN_BYTES:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return None if b"\0" in data[:8192] else data


def _tags_to_cache(tags: tagmod.FileTags) -> tuple:
    """A compact, fast-to-load form: the references as one newline-joined bytes blob."""
    return (tags.lang, tags.defs, b"\n".join(sorted(tags.refs)))


def _tags_from_cache(obj: Any, lang: str) -> tagmod.FileTags | None:
    from core.context import tags as tagmod

    try:
        cached_lang, defs, refs = obj
        if cached_lang != lang or not isinstance(refs, bytes):
            return None
        return tagmod.FileTags(lang=lang, defs=tuple(tagmod.Definition(*d) for d in defs),
                               refs=frozenset(refs.split(b"\n")) if refs else frozenset())
    except (TypeError, ValueError):
        return None


def run_indexer(root: str, conn: Connection, files: list[str] | TreeState, cache_path: str | None,
                use_cache: bool, known_key: bytes | None = None,
                on_exit: Callable[[], None] | None = None, indexer: Indexer | None = None) -> None:
    """Entry point of the child process (or thread); `indexer`: one made by an "open"."""
    try:
        if indexer is None:
            indexer = Indexer(Path(root), conn, files, cache_path=Path(cache_path) if cache_path else None,
                              use_cache=use_cache)
        else:
            indexer.set_tree(files)
        indexer.known_key = known_key
        indexer.run()
    except Exception as exc:  # noqa: BLE001 -- tell the app instead of dying silently
        try:
            conn.send(("note", f"indexer failed: {type(exc).__name__}: {exc}"))
        except (OSError, EOFError):
            pass
    finally:
        if on_exit is not None:
            on_exit()


def _main(argv: list[str]) -> int:
    """`python -m core.indexing.worker FD`: the child process the service starts."""
    conn = Connection(int(argv[1]))
    early: Indexer | None = None
    try:
        msg = conn.recv()
        if msg[0] == "open":  # started before the app's tree check: get ready meanwhile
            _, root, cache_path, use_cache = msg
            try:
                early = Indexer(Path(root), conn, None, cache_path=Path(cache_path) if cache_path else None,
                                use_cache=use_cache)
                early.preload_dups()
            except Exception as exc:  # noqa: BLE001 -- "init" starts afresh; say why
                early = None
                conn.send(("note", f"indexer early start failed: {type(exc).__name__}: {exc}"))
            msg = conn.recv()
    except (OSError, EOFError):
        return 0
    if msg[0] != "init":
        return 2
    _, root, files, cache_path, use_cache, known_key = msg
    run_indexer(root, conn, files, cache_path, use_cache, known_key, indexer=early)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv))
