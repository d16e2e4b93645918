"""The duplicate index's snapshot across launches (issue 14: a second launch on an unchanged
tree has its duplicate index in under a second).

Real generated trees, real indexer runs (in a thread, and in a child process started
before the tree is checked), real cache folders. The second
launch must not rebuild (`build_dups` is made to fail), must answer exactly like a fresh
index, must re-index the files changed between launches, and must refuse and rebuild a
damaged or foreign snapshot.
"""

from __future__ import annotations

import shutil
from dataclasses import astuple
from pathlib import Path

import pytest

from bench.repo_gen import generate
from core.context.repomap import RepoMap
from core.detectors.duplicates import DuplicateIndex
from core.indexing import worker
from core.indexing.cache import CACHE_VERSION, cache_file
from core.indexing.service import IndexService

PROBE = "src/pkg0000/mod03.py"


def _service(root: Path, cache_dir: Path, *, in_process: bool = True) -> IndexService:
    svc = IndexService(root, RepoMap(root), cache_path=cache_file(root, cache_dir), in_process=in_process).start()
    assert svc.wait(120), svc.snapshot()
    return svc


def _answers(check, root: Path) -> list[tuple]:
    """Checks of three real modules of the tree, as another file."""
    out = []
    for rel in (PROBE, "src/pkg0000/mod07.py", "src/pkg0000/mod11.py"):
        out += [astuple(m) for m in check((root / rel).read_text(), "new/copy.py")]
    return out


def _fresh(root: Path) -> list[tuple]:
    index = DuplicateIndex(root)
    index.build()
    return _answers(index.check_source, root)


def _snapshot_file(root: Path, cache_dir: Path) -> Path:
    return cache_file(root, cache_dir).with_suffix(".dups")


def _forbid_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: worker.Indexer) -> None:
        raise AssertionError("the duplicate index was rebuilt instead of loaded")

    monkeypatch.setattr(worker.Indexer, "build_dups", fail)


def _first_launch(tmp_path: Path) -> tuple[Path, Path]:
    root = generate(tmp_path / "repo", 24, 3)
    cache_dir = tmp_path / "cache"
    _service(root, cache_dir).stop()
    assert _snapshot_file(root, cache_dir).is_file()
    return root, cache_dir


def test_a_second_launch_loads_the_snapshot_and_answers_like_a_fresh_index(tmp_path, monkeypatch):
    root, cache_dir = _first_launch(tmp_path)
    _forbid_rebuild(monkeypatch)
    svc = _service(root, cache_dir)
    try:
        assert svc.snapshot().dups_complete and not svc.snapshot().notes
        answers = _answers(svc.check_source, root)
        assert answers == _fresh(root) and answers
    finally:
        svc.stop()


def test_files_changed_between_launches_are_indexed_again(tmp_path, monkeypatch):
    root, cache_dir = _first_launch(tmp_path)
    _forbid_rebuild(monkeypatch)
    probe = (root / PROBE).read_text()
    # a new file holding a copy of the probe, a module emptied, a module deleted
    (root / "src/pkg0000/copied.py").write_text(probe)
    (root / "src/pkg0000/mod11.py").write_text("VALUE = 1\n")
    (root / "src/pkg0000/mod12.py").unlink()
    svc = _service(root, cache_dir)
    try:
        answers = _answers(svc.check_source, root)
        # the same twins; equal ones listed in another order (a re-indexed file's functions
        # come after the snapshot's, as after a file event, not in path order)
        assert sorted(answers) == sorted(_fresh(root))
        assert any(a[2] == "src/pkg0000/copied.py" for a in answers)
        assert not any(a[2] in {"src/pkg0000/mod11.py", "src/pkg0000/mod12.py"} for a in answers)
    finally:
        svc.stop()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "foreign", "old", "version_1"])
def test_a_bad_snapshot_is_refused_said_and_rebuilt(tmp_path, damage):
    """"version_1": a real snapshot of the previous format (uint64 k-grams), as every
    cache holds once this build comes: refused, said, and stored anew in this one."""
    root, cache_dir = _first_launch(tmp_path)
    snap = _snapshot_file(root, cache_dir)
    data = snap.read_bytes()
    expect = {"root": str(root.resolve()), "cache_version": CACHE_VERSION}
    if damage == "truncated":
        snap.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "garbage":
        snap.write_bytes(b"\x00garbage" * 1000)
    elif damage == "foreign":  # another tree's snapshot under this tree's name
        other = generate(tmp_path / "other", 12, 9)
        _service(other, cache_dir).stop()
        shutil.copy(_snapshot_file(other, cache_dir), snap)
    elif damage == "old":
        snap.write_bytes(data.replace(f'"cache_version": {CACHE_VERSION}'.encode(),
                                      f'"cache_version": {CACHE_VERSION - 1}'.encode()))
    elif damage == "version_1":
        from tests.core.detectors.test_dup_store import _rewrite, _v1_arrays

        _rewrite(snap, expect, _v1_arrays, version=1)
    svc = _service(root, cache_dir)
    try:
        notes = svc.snapshot().notes
        assert any("duplicate index snapshot rebuilt" in n for n in notes)
        if damage == "version_1":
            assert any("version 1 (this build reads 2)" in n for n in notes), notes
        assert _answers(svc.check_source, root) == _fresh(root)
    finally:
        svc.stop()
    # the rebuilt snapshot is whole again
    loaded = DuplicateIndex(root)
    loaded.load_snapshot(snap, expect)
    assert _answers(loaded.check_source, root) == _fresh(root)


@pytest.mark.parametrize("change", ["none", "files", "garbage"])
def test_a_child_started_before_the_tree_check_loads_the_snapshot(tmp_path, change):
    """A child process is started before git has checked the tree ("open"): it maps the
    snapshot then and compares the files' tokens once the tree is known ("init"). Same
    answers as a fresh index; changed files re-indexed; a damaged snapshot refused."""
    root, cache_dir = _first_launch(tmp_path)
    snap = _snapshot_file(root, cache_dir)
    if change == "files":
        (root / "src/pkg0000/copied.py").write_text((root / PROBE).read_text())
        (root / "src/pkg0000/mod12.py").unlink()
    elif change == "garbage":
        snap.write_bytes(b"\x00garbage" * 1000)
    stored = snap.stat().st_mtime_ns
    svc = _service(root, cache_dir, in_process=False)
    try:
        assert svc.snapshot().mode == "process"
        answers = _answers(svc.check_source, root)
        assert sorted(answers) == sorted(_fresh(root)) and answers
        if change == "files":
            assert any(a[2] == "src/pkg0000/copied.py" for a in answers)
        refused = any("duplicate index snapshot rebuilt" in n for n in svc.snapshot().notes)
        assert refused == (change == "garbage"), svc.snapshot().notes
    finally:
        svc.stop()
    # loaded and brought up to date (two files of 24 do not call for a new snapshot), or
    # rebuilt and stored when it was refused
    assert (snap.stat().st_mtime_ns == stored) == (change != "garbage")


def test_the_apps_preload_starts_the_child_of_a_large_tree(tmp_path, monkeypatch):
    """The app's preload (before its screen exists) starts the indexer's child when the last
    duplicate snapshot is of a large tree, however busy the machine (`_early_start_pays`);
    the service then uses it. A smaller snapshot: no child before the tree is known."""
    from core.indexing import service

    root, cache_dir = _first_launch(tmp_path)
    path = cache_file(root, cache_dir)
    size = _snapshot_file(root, cache_dir).stat().st_size
    for large in (True, False):  # 24 files: a thread runs them, unless a child was started
        monkeypatch.setattr(service, "EARLY_CHILD_SNAPSHOT_BYTES", size if large else size + 1)
        service.preload(root, path)
        svc = IndexService(root, RepoMap(root), cache_path=path).start()
        try:
            assert svc.wait(120), svc.snapshot()
            assert svc.snapshot().mode == ("process" if large else "thread")
            assert _answers(svc.check_source, root) == _fresh(root)
        finally:
            svc.stop()


def test_a_thread_indexer_is_asked_directly_and_warmed_up(tmp_path, monkeypatch):
    """In thread mode a check runs on the asker's thread against the indexer's index (no
    round trip through the indexer's loop, which is made to refuse checks here), and the
    warm-up check the indexer ran when the index was ready left it as it was."""
    root, cache_dir = _first_launch(tmp_path)
    real_handle = worker.Indexer.handle

    def no_checks(self, msg):
        assert msg[0] != "check", "a thread indexer's check went through its loop"
        return real_handle(self, msg)

    monkeypatch.setattr(worker.Indexer, "handle", no_checks)
    svc = _service(root, cache_dir)
    try:
        assert svc.snapshot().mode == "thread"
        assert _answers(svc.check_source, root) == _fresh(root)
        assert "\0warm-up" not in svc._local_dups.files()
    finally:
        svc.stop()


@pytest.mark.parametrize("change", ["none", "files", "garbage"])
def test_the_cache_opens_after_an_unchanged_trees_index_is_ready(tmp_path, monkeypatch, change):
    """Opening the SQLite cache checks the whole database (350 MB on 20k files: 0.1 s of a
    core warm, ~1 s and seconds of disk cold): an unchanged tree's index from its snapshot
    needs none of it, so the cache opens only once "duplicates ready" is sent; a changed
    tree or a refused snapshot still gets its cache (the index stays right)."""
    root, cache_dir = _first_launch(tmp_path)
    if change == "files":
        (root / "src/pkg0000/copied.py").write_text((root / PROBE).read_text())
    elif change == "garbage":
        _snapshot_file(root, cache_dir).write_bytes(b"\x00garbage" * 1000)
    order: list[str] = []
    real_open, real_send = worker.Indexer._open_cache, worker.Indexer.send

    def opening(self: worker.Indexer) -> None:
        order.append("open")
        real_open(self)

    def sending(self: worker.Indexer, *msg) -> None:
        if msg[0] == "dups" and msg[-1] is True:
            order.append("dups ready")
        real_send(self, *msg)

    monkeypatch.setattr(worker.Indexer, "_open_cache", opening)
    monkeypatch.setattr(worker.Indexer, "send", sending)
    svc = _service(root, cache_dir)
    try:
        assert sorted(_answers(svc.check_source, root)) == sorted(_fresh(root))
    finally:
        svc.stop()  # (the indexer's end joins the cache's opening)
    assert order.count("open") == 1 and "dups ready" in order
    assert (order.index("open") > order.index("dups ready")) == (change == "none"), order


def test_the_indexer_vouches_for_the_snapshot_it_stored(tmp_path, monkeypatch):
    """A snapshot stored by the indexer is too fresh to vouch for when written; the indexer
    reads it back once it has settled (while it waits for events), so the next launch maps
    it without reading all of it for its checksum."""
    import json
    import os
    import time

    from core.indexing import checked

    monkeypatch.setattr(checked, "RACY_NS", 100_000_000)
    monkeypatch.setattr(worker, "VOUCH_AFTER_S", 0.15)
    root = generate(tmp_path / "repo", 24, 3)
    cache_dir = tmp_path / "cache"
    svc = _service(root, cache_dir)
    snap = _snapshot_file(root, cache_dir)
    try:
        deadline = time.monotonic() + 30
        while not checked.stamp_file(snap).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        svc.stop()
    stamp = json.loads(checked.stamp_file(snap).read_text())
    st = os.stat(snap)
    assert stamp["identity"] == [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    _forbid_rebuild(monkeypatch)
    second = _service(root, cache_dir)
    try:
        assert sorted(_answers(second.check_source, root)) == sorted(_fresh(root))
    finally:
        second.stop()
