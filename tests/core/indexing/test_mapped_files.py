"""Files that are memory-mapped are only ever replaced, never rewritten in place.

The app maps the cached repo map at launch (its arrays are pages of the file) and the
indexer maps the duplicate snapshot. A mapped file cut short or rewritten in place makes
reading those pages a SIGBUS, which kills the whole app. So every writer replaces a file
(a new inode; the old mapping keeps the old bytes) or deletes it: here a mapping taken
before new snapshots are stored (a changed tree) and before the cache is rebuilt (a
damaged SQLite file: discarded; the snapshots beside it check themselves and stay) still
reads every row as it did.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.repo_gen import generate
from core.context.repomap import RepoMap
from core.detectors import dup_store
from core.indexing.cache import CACHE_VERSION, cache_file, read_latest_snapshot, snapshot_file
from core.indexing.service import IndexService


def _launch(root: Path, path: Path, *, stored: tuple[Path, ...] = ()) -> None:
    """One launch until everything is ready and the `stored` files exist (the duplicate
    snapshot is written after "ready")."""
    svc = IndexService(root, RepoMap(root), cache_path=path, in_process=True).start()
    try:
        assert svc.wait(120), svc.snapshot()
        deadline = time.monotonic() + 60
        while not all(f.exists() for f in stored) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        svc.stop()


def _digest(arrays: dict[str, Any]) -> str:
    """A hash over every byte of every array: reads each page of the mapping."""
    h = hashlib.blake2b()
    for name in sorted(arrays):
        h.update(name.encode())
        h.update(np.ascontiguousarray(arrays[name]).tobytes())
    return h.hexdigest()


def _map_arrays(graph: Any) -> dict[str, Any]:
    out = {f"graph.{f}": getattr(graph.graph, f) for f in ("src", "dst", "weight", "dangling", "degree")}
    out.update({f: v for f in dir(graph) if isinstance(v := getattr(graph, f, None), np.ndarray)})
    return out


def test_old_mappings_read_the_same_after_new_snapshots_and_a_cache_rebuild(tmp_path):
    root = generate(tmp_path / "repo", 80, 1)
    path = cache_file(root, tmp_path / "cache")
    map_file, dups_file = snapshot_file(path, "map"), path.with_suffix(".dups")
    _launch(root, path, stored=(map_file, dups_file))
    found = read_latest_snapshot(root, "map", path)
    assert found is not None
    old_map = _map_arrays(found[1])  # views of the mapped map snapshot
    _header, old_dups = dup_store.load(dups_file, {"root": str(root.resolve()), "cache_version": CACHE_VERSION})
    inodes = (map_file.stat().st_ino, dups_file.stat().st_ino)
    before = (_digest(old_map), _digest(old_dups))

    # a changed tree (70 of 80 files: the duplicate snapshot is worth storing again too):
    # both snapshots are stored anew over the mapped ones (whose inodes stay alive while
    # mapped here, so their numbers cannot be reused meanwhile)
    for rel in sorted(p for p in root.rglob("*.py"))[:70]:
        rel.write_text(rel.read_text() + "\n\ndef added_later(x):\n    return x * 3\n")
    _launch(root, path)
    deadline = time.monotonic() + 60
    while dups_file.stat().st_ino == inodes[1] and time.monotonic() < deadline:
        time.sleep(0.02)  # (stored after "ready")
    assert map_file.stat().st_ino != inodes[0]
    assert dups_file.stat().st_ino != inodes[1]
    # a damaged cache: discarded and rebuilt (the snapshots beside it stay)
    path.write_bytes(b"not a database" * 64)
    _launch(root, path)

    assert (_digest(old_map), _digest(old_dups)) == before
