"""What a second launch does when (issue 14: everything ready < 1 s on an unchanged tree).

* `spark` begins the preload (cached map read, tree check, maybe the indexer's child) before
  its heavy imports; the app's own `preload` call must find that work, not start it again;
* the ranks' warm-up and the ranking's imports (this process's CPU) wait for the app's first
  frame and the duplicate index, instead of running beside the indexer child's start;
* the app's preload reads only the stored map's key before its first frame (the tree's check
  runs at once); the map itself is read after it: that read holds the GIL the app's start needs;

Real generated trees, real indexer runs and caches, as in test_dups_snapshot.
"""

from __future__ import annotations

import pickle
import subprocess
import threading
import time
from pathlib import Path

from bench.repo_gen import generate
from core.context import rank
from core.context.repomap import RepoMap
from core.indexing import service
from core.indexing.cache import cache_file
from core.indexing.service import IndexService


def _first_launch(tmp_path: Path) -> tuple[Path, Path]:
    root = generate(tmp_path / "repo", 24, 3)
    cache_dir = tmp_path / "cache"
    svc = IndexService(root, RepoMap(root), cache_path=cache_file(root, cache_dir), in_process=True).start()
    assert svc.wait(120), svc.snapshot()
    svc.stop()
    return root, cache_dir


def test_a_second_preload_finds_the_first(tmp_path, monkeypatch):
    """`spark`'s early call and the app's later one share one preload (one tree check, one
    early child): the second returns the first's first-frame signal."""
    made: list[service._Preload] = []

    class Counted(service._Preload):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(service, "_Preload", Counted)
    root = generate(tmp_path / "repo", 3, 1)
    first = service.preload(root)
    second = service.preload(root)
    try:
        assert len(made) == 1
        assert first == second  # the same bound Event.set
    finally:
        made[0].done.wait(30)
        service._take_preload(root.resolve(), None, True)


def test_an_old_preload_is_replaced_and_its_child_ended(tmp_path, monkeypatch):
    """A preload too old to trust is begun again; the child the old one started (it waits
    for a tree that will never come) is ended, not left behind."""
    root, cache_dir = _first_launch(tmp_path)
    path = cache_file(root, cache_dir)
    monkeypatch.setattr(service, "EARLY_CHILD_SNAPSHOT_BYTES", 1)
    key = (root.resolve(), path, True)
    service.preload(root, path)
    old = service._preloads[key]
    old.map_read.wait(30)
    assert old.child is not None
    old.started -= service.PRELOAD_FRESH_S  # as if launched long ago
    service.preload(root, path)
    new = service._preloads[key]
    try:
        assert new is not old
        old.child[1].wait(30)  # raises TimeoutExpired if it was left running
    finally:
        new.done.wait(30)
        taken = service._take_preload(*key)
        if taken is not None and taken.child is not None:
            taken.child[1].kill()
            taken.child[1].wait(30)


def test_the_apps_preload_checks_the_tree_before_its_first_frame_and_reads_the_map_after(tmp_path, monkeypatch):
    """The app's preload (`map_after_frame`): git's check of the tree and the stored map's
    key (its header) before the first frame; the map itself (unpickled under the GIL the
    app's start needs) is read by the service only once the app says its frame is shown.
    The indexer, told the key, does not send the map again: the one read is checked."""
    from core.indexing import cache

    root, cache_dir = _first_launch(tmp_path)
    path = cache_file(root, cache_dir)
    stored = cache.read_latest_snapshot(root, "map", path)
    assert stored is not None
    reads: list[float] = []
    real_read = cache.read_latest_snapshot

    def read(*args, **kwargs):
        reads.append(time.time())
        return real_read(*args, **kwargs)

    monkeypatch.setattr(cache, "read_latest_snapshot", read)
    monkeypatch.setattr(service, "WARM_AFTER_FRAME_S", 60.0)
    # a tree a child indexes: the child is started by the preload (it maps the duplicate
    # snapshot while the app starts), the map waits for the frame
    monkeypatch.setattr(service, "EARLY_CHILD_SNAPSHOT_BYTES", 1)
    key = (root.resolve(), path, True)
    first_frame = service.preload(root, path, map_after_frame=True)
    pre = service._preloads[key]
    assert pre.done.wait(30)
    assert pre.error is None and pre.tree is not None
    assert pre.cached is None and pre.cached_key == stored[0] == pre.tree.key
    svc = IndexService(root, RepoMap(root), cache_path=path).start()
    try:
        time.sleep(0.3)
        assert reads == [] and not svc.snapshot().map_complete and pre.child is not None
        shown = time.time()
        first_frame()
        assert svc.wait(120), svc.snapshot()
        assert len(reads) == 1 and reads[0] >= shown
        snap = svc.snapshot()
        assert snap.map_checked and snap.map_total == len(pre.tree.tokens)
        assert _renders(svc.repo_map) == _renders(RepoMap(root))
    finally:
        svc.stop()


def test_a_stored_map_unreadable_after_its_key_is_sent_by_the_indexer(tmp_path, monkeypatch):
    """The key was read before the frame, but the map cannot be read after it (damaged or
    replaced meanwhile): the indexer, told the app held that map, is asked for it and the
    app still gets the whole map."""
    from core.indexing import cache

    root, cache_dir = _first_launch(tmp_path)
    path = cache_file(root, cache_dir)
    monkeypatch.setattr(cache, "read_latest_snapshot", lambda *args, **kwargs: None)
    first_frame = service.preload(root, path, map_after_frame=True)
    first_frame()
    svc = IndexService(root, RepoMap(root), cache_path=path, in_process=True).start()
    try:
        assert svc.wait(120), svc.snapshot()
        assert svc.snapshot().map_checked
        assert _renders(svc.repo_map) == _renders(RepoMap(root))
    finally:
        svc.stop()


def _renders(repo_map: RepoMap) -> str:
    return repo_map.render(1500, prompt="render the payload of the invoice").text


def test_a_plain_preload_reads_the_map_at_once(tmp_path, monkeypatch):
    """Without `map_after_frame` (a caller with no frame to wait for) the map is read while
    git checks the tree, as before: nothing waits for a frame that never comes."""
    root, cache_dir = _first_launch(tmp_path)
    path = cache_file(root, cache_dir)
    monkeypatch.setattr(service, "WARM_AFTER_FRAME_S", 60.0)
    key = (root.resolve(), path, True)
    service.preload(root, path)
    pre = service._preloads[key]
    try:
        assert pre.done.wait(30)
        assert pre.cached is not None and pre.tree is not None
    finally:
        service._take_preload(*key)


def test_the_ranks_wait_for_the_first_frame_and_the_duplicates(tmp_path, monkeypatch):
    """On a second launch the cached map is installed at once, but neither its warm-up nor
    the ranking's imports run before the app's first frame; after it they run once the
    duplicate index is ready."""
    root, cache_dir = _first_launch(tmp_path)
    path = cache_file(root, cache_dir)
    calls: list[tuple[str, float]] = []
    real_prefetch = RepoMap.prefetch

    def prefetch(self, *args, **kwargs):
        calls.append(("prefetch", time.time()))
        return real_prefetch(self, *args, **kwargs)

    monkeypatch.setattr(RepoMap, "prefetch", prefetch)
    monkeypatch.setattr(rank, "prepare_solver", lambda: calls.append(("imports", time.time())))
    # the child started early (a large tree's), so the index needs no first frame;
    # the frame comes only when this test says so
    monkeypatch.setattr(service, "EARLY_CHILD_SNAPSHOT_BYTES", 1)
    monkeypatch.setattr(service, "WARM_AFTER_FRAME_S", 60.0)
    first_frame = service.preload(root, path)
    svc = IndexService(root, RepoMap(root), cache_path=path).start()
    try:
        assert svc.wait(120), svc.snapshot()
        snap = svc.snapshot()
        assert snap.map_checked and snap.dups_complete
        time.sleep(0.3)  # the repo map's own warm-up would have begun 0.05 s after the install
        assert calls == []
        first_frame()
        deadline = time.time() + 30
        while not calls and time.time() < deadline:
            time.sleep(0.01)
        assert [name for name, _ in calls] == ["prefetch"]
        assert snap.dups_ready_at is not None and calls[0][1] >= snap.dups_ready_at
    finally:
        svc.stop()


def test_a_first_launch_loads_the_ranking_after_the_first_frame(tmp_path, monkeypatch):
    """No cached map: the ranking's imports (not a warm-up: there is nothing to rank yet)
    wait for the first frame only, not for a duplicate index that takes minutes."""
    root = generate(tmp_path / "repo", 5, 2)
    path = cache_file(root, tmp_path / "cache")
    loaded = threading.Event()
    monkeypatch.setattr(rank, "prepare_solver", loaded.set)
    monkeypatch.setattr(service, "WARM_AFTER_FRAME_S", 60.0)
    first_frame = service.preload(root, path)
    svc = IndexService(root, RepoMap(root), cache_path=path).start()
    try:
        assert not loaded.wait(0.5)
        first_frame()
        assert loaded.wait(30)
    finally:
        svc.wait(120)
        svc.stop()


def test_the_child_runs_without_blas_threads():
    """The indexer child never calls BLAS: OpenBLAS's per-core threads (started at numpy's
    import) are not started in it."""
    conn, proc = service._spawn_child()
    try:
        environ = Path(f"/proc/{proc.pid}/environ")
        deadline = time.time() + 30
        while time.time() < deadline and b"PYTHONPATH" not in environ.read_bytes():
            time.sleep(0.01)  # until exec has replaced the forked image
        assert b"OPENBLAS_NUM_THREADS=1\0" in environ.read_bytes()
    finally:
        conn.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


PROMPT = "render the payload of the invoice"


def _map_text(repo_map: RepoMap) -> str:
    return repo_map.render(1500, prompt=PROMPT).text


def test_a_whole_map_comes_through_its_snapshot_file(tmp_path, monkeypatch):
    """A first launch's whole map reaches the app as the key of the snapshot the indexer
    stored (read back here, memory-mapped), not pickled through the socket; it renders as
    the in-process map does."""
    root = generate(tmp_path / "repo", 30, 1)
    expected = _map_text(RepoMap(root))
    read: list[bytes] = []
    real = IndexService._stored_map

    def stored_map(self, key):
        read.append(key)
        return real(self, key)

    monkeypatch.setattr(IndexService, "_stored_map", stored_map)
    repo_map = RepoMap(root)
    svc = IndexService(root, repo_map, cache_path=cache_file(root, tmp_path / "cache"), in_process=False).start()
    try:
        assert svc.wait(120), svc.snapshot()
        assert svc.snapshot().mode == "process"
        assert len(read) == 1
        assert _map_text(repo_map) == expected
    finally:
        svc.stop()


def test_a_stored_map_that_cannot_be_read_back_is_sent(tmp_path, monkeypatch):
    """When the app cannot read the stored map (here: never), it asks the indexer, which
    sends the graph itself: the app still gets the whole map."""
    root = generate(tmp_path / "repo", 30, 1)
    expected = _map_text(RepoMap(root))
    monkeypatch.setattr(IndexService, "_stored_map", lambda self, key: None)
    repo_map = RepoMap(root)
    svc = IndexService(root, repo_map, cache_path=cache_file(root, tmp_path / "cache"), in_process=True).start()
    try:
        assert svc.wait(120), svc.snapshot()
        assert svc.snapshot().map_checked
        assert _map_text(repo_map) == expected
    finally:
        svc.stop()


def test_the_indexer_resends_a_map_it_has_let_go(tmp_path):
    """Asked again after it let the map and its scans go (before the duplicate build), the
    indexer sends the stored map as read back, or without one, a map built again from the
    cached scans: the same graph either way."""
    from core.indexing import worker
    from core.indexing.cache import snapshot_file
    from core.indexing.treestate import tree_state

    root = generate(tmp_path / "repo", 30, 1)
    sent: list[tuple] = []

    raw: list[bytes] = []

    class Conn:
        def send(self, msg: tuple) -> None:
            if msg[0] == "map" and isinstance(msg[1], tuple) and msg[1][0] == "oob":
                sent.append(("oob-pending", msg))
            else:
                sent.append(msg)

        def send_bytes(self, data: bytes) -> None:  # a map's pickle, then its arrays (wire)
            raw.append(bytes(data))
            kind, msg = sent[-1]
            if kind == "oob-pending" and len(raw) == 1 + len(msg[1][1]):
                graph = pickle.loads(raw[0], buffers=[bytearray(b) for b in raw[1:]])
                sent[-1] = (msg[0], graph, *msg[2:])
                raw.clear()

        def poll(self, timeout: float = 0) -> bool:
            return False

    path = cache_file(root, tmp_path / "cache")
    ix = worker.Indexer(root, Conn(), tree_state(root), cache_path=path)  # type: ignore[arg-type]
    ix.await_cache()
    ix.build_map()
    assert sent[-1][0] == "map" and sent[-1][1] == ("stored", ix.state.key)
    files = list(ix._graph.files)
    for stored in (True, False):
        ix._release_map_scans()
        assert ix._graph is None
        if not stored:
            snapshot_file(path, "map").unlink()
        ix.resend_map()
        graph = sent[-1][1]
        assert sent[-1][0] == "map" and sent[-1][-1] is True
        assert list(graph.files) == files and len(graph.graph.src) > 0
    assert ix.cache is not None
    ix.cache.close()


def test_recheck_tells_on_recheck_what_changed(tmp_path):
    """Files changed between the start's tree check and the watcher's start reach the
    indexer and whoever else follows file events (`on_recheck`)."""
    root = generate(tmp_path / "repo", 12, 1)
    svc = IndexService(root, RepoMap(root), cache_path=cache_file(root, tmp_path / "cache"), in_process=True)
    told: list[list[tuple[str, str]]] = []
    svc.on_recheck = told.append
    svc.start()
    try:
        assert svc.wait(120), svc.snapshot()
        rel = "src/pkg0000/mod03.py"
        (root / rel).write_text((root / rel).read_text() + "\nLATE = 1\n")
        svc.recheck()
        assert told == [[(rel, "modified")]]
    finally:
        svc.stop()


def test_events_waiting_together_cost_one_map(tmp_path):
    """"events" messages already waiting when one is handled go into the same rescan: one
    map built and sent, equal to a fresh build of the tree; a duplicate check waiting among
    them is answered after it, in order."""
    from core.context.repomap import build_graph
    from core.indexing import worker
    from core.indexing.treestate import tree_state

    root = generate(tmp_path / "repo", 20, 1)
    sent: list[tuple] = []
    queue: list[tuple] = []

    class Conn:
        def send(self, msg: tuple) -> None:
            sent.append(msg)

        def send_bytes(self, data: bytes) -> None:
            sent.append(("bytes", bytes(data)))

        def poll(self, timeout: float = 0) -> bool:
            return bool(queue)

        def recv(self) -> tuple:
            return queue.pop(0)

    ix = worker.Indexer(root, Conn(), tree_state(root), use_cache=False)  # type: ignore[arg-type]
    ix.await_cache()
    ix.build_map()
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    changed = files[:3]
    for n, rel in enumerate(changed):
        (root / rel).write_text((root / rel).read_text() + f"\n\ndef added_{n}(x):\n    return x\n")
    (root / files[3]).unlink()
    queue += [("events", [(changed[1], "modified")]), ("check", 7, "def f():\n    return 1\n", None, None),
              ("events", [(changed[2], "modified"), (files[3], "deleted")])]
    sent.clear()
    ix.handle(("events", [(changed[0], "modified")]))
    assert not queue
    maps = [m for m in sent if m[0] in ("map", "map_delta")]  # (new names, a deleted file: map edits)
    assert len(maps) == 1
    kinds = [m[0] for m in sent if m[0] != "bytes"]
    assert kinds.index(maps[0][0]) < kinds.index("reply")
    assert ix._graph is not None
    fresh = worker.Indexer(root, Conn(), tree_state(root), use_cache=False)  # type: ignore[arg-type]
    fresh.await_cache()
    fresh.stamps = worker.map_stamps(root, fresh.files)
    fresh._scan_all_tags(partial=False)
    want = build_graph(fresh.facts, fresh._vocab(), exact=True)
    assert list(ix._graph.files) == list(want.files)
    assert dict(ix._graph.ident_index.items()) == dict(want.ident_index.items())
    assert {f"added_{n}" for n in range(3)} <= set(ix._graph.ident_index)
    assert (ix._graph.graph.src == want.graph.src).all() and (ix._graph.graph.dst == want.graph.dst).all()


def test_the_apps_map_is_made_after_its_first_frame_and_fed_by_the_indexer(tmp_path, monkeypatch):
    """The app's map (ChatContext.repo_map) is made on first use: its modules import numpy
    (~70-100 ms of the app's start). `attach` hands the service a maker, not the map: on a
    second launch the service sends the indexer its "init" and has the duplicate index
    ready without it, makes the map only after the app's first frame, and the map is fed
    by the indexer from the moment it is made (never scanned here)."""
    from core.workstation import Workstation

    root, cache_dir = _first_launch(tmp_path)
    path = cache_file(root, cache_dir)
    monkeypatch.setattr(service, "WARM_AFTER_FRAME_S", 60.0)
    monkeypatch.setattr(service, "EARLY_CHILD_SNAPSHOT_BYTES", 1)  # a tree a child indexes
    first_frame = service.preload(root, path, map_after_frame=True)
    station = Workstation(root)
    svc = service.attach(station, cache_path=path)
    try:
        deadline = time.monotonic() + 60
        while not svc.snapshot().dups_complete and time.monotonic() < deadline:
            time.sleep(0.02)
        assert svc.snapshot().dups_complete and station.dups_ready
        assert station.context._repo_map is None and svc._repo_map is None  # not made before the frame
        first_frame()
        assert svc.wait(120), svc.snapshot()
        made = station.context.repo_map
        assert svc.repo_map is made and made._external  # fed by the indexer, not scanning here
        assert svc.snapshot().map_checked
        assert _renders(made) == _renders(RepoMap(root))
    finally:
        svc.stop()
