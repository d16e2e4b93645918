"""The background indexer and its on-disk cache (issue 14).

Real trees (bench/repo_gen.py writes small generated repositories), real indexer runs (in a
thread, and once in a child process), real SQLite caches: a cached run must give exactly
the map and duplicate answers of a fresh one, and a damaged or foreign cache must be
refused and rebuilt, never trusted.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.repo_gen import generate
from core.context.repomap import RepoMap
from core.detectors.duplicates import DuplicateIndex
from core.indexing.cache import (
    CACHE_VERSION,
    IndexCache,
    Stamp,
    cache_file,
    dumps,
    loads,
    read_latest_snapshot,
)
from core.indexing.service import IndexService
from core.indexing.treestate import tree_state

PROMPT = "render the payload of the invoice"


def _repo(tmp_path: Path, files: int = 24, seed: int = 1, name: str = "repo") -> Path:
    return generate(tmp_path / name, files, seed)


def _service(root: Path, cache_dir: Path, *, in_process: bool = True, use_cache: bool = True):
    repo_map = RepoMap(root)
    svc = IndexService(root, repo_map, cache_path=cache_file(root, cache_dir), use_cache=use_cache,
                       in_process=in_process).start()
    assert svc.wait(120), svc.snapshot()
    return svc, repo_map


def _map_text(repo_map: RepoMap) -> str:
    return repo_map.render(1500, prompt=PROMPT).text


def _reference(root: Path) -> tuple[str, list]:
    """What the in-process map and a freshly built duplicate index say."""
    fresh = RepoMap(root)
    dups = DuplicateIndex(root)
    dups.build()
    probe = (root / "src/pkg0000/mod03.py").read_text()
    return fresh.render(1500, prompt=PROMPT).text, dups.check_source(probe, "new/copy.py")


def test_indexed_map_and_checks_equal_the_in_process_ones(tmp_path):
    root = _repo(tmp_path)
    expected_map, expected_dups = _reference(root)
    svc, repo_map = _service(root, tmp_path / "cache")
    try:
        assert _map_text(repo_map) == expected_map
        probe = (root / "src/pkg0000/mod03.py").read_text()
        assert svc.check_source(probe, "new/copy.py") == expected_dups
        assert expected_dups, "the probe is a copy of indexed functions: the check must find them"
        snap = svc.snapshot()
        sources = len(list(root.rglob("*.py")))  # the modules and each package's __init__
        assert snap.complete and snap.map_done == snap.map_total == sources
        assert f"repo map: {sources} files indexed" in snap.describe()
    finally:
        svc.stop()


def test_second_run_uses_the_cache_and_gives_the_same_answers(tmp_path):
    root = _repo(tmp_path)
    cache_dir = tmp_path / "cache"
    first, map1 = _service(root, cache_dir)
    text1 = _map_text(map1)
    first.stop()
    db = sqlite3.connect(cache_file(root, cache_dir))
    rows = db.execute("SELECT COUNT(*), COUNT(tags), COUNT(units) FROM files").fetchone()
    db.close()
    sources = len(list(root.rglob("*.py")))
    assert rows[0] == rows[1] == rows[2] == sources
    second, map2 = _service(root, cache_dir)
    try:
        assert _map_text(map2) == text1
        assert not second.snapshot().notes, "an intact cache is used as it is"
    finally:
        second.stop()


def test_an_edited_file_is_rescanned_not_taken_from_the_cache(tmp_path):
    root = _repo(tmp_path)
    cache_dir = tmp_path / "cache"
    first, _ = _service(root, cache_dir)
    first.stop()
    target = root / "src/pkg0000/mod02.py"
    target.write_text(target.read_text() + "\n\ndef unmistakable_helper_name(x):\n    return x\n")
    second, repo_map = _service(root, cache_dir)
    try:
        text = repo_map.render(4000, prompt="unmistakable_helper_name").text
        assert "unmistakable_helper_name" in text
    finally:
        second.stop()


def test_a_touched_file_keeps_its_scan(tmp_path):
    """Same content, new mtime: the content hash matches, the scan is reused."""
    root = _repo(tmp_path, files=10)
    cache = IndexCache(root, tmp_path / "c.sqlite").open()
    cache.put("a.py", Stamp(1, 10, b"digest"), "tags", ("python", (), b""))
    cache.put("a.py", Stamp(1, 10, b"digest"), "units", [])
    cache.touch("a.py", Stamp(2, 10, b"digest"))
    assert cache.get("a.py", "tags") == (Stamp(2, 10, b"digest"), ("python", (), b""))
    assert cache.get("a.py", "units") == (Stamp(2, 10, b"digest"), [])
    # new content under the same path clears the other column: it was computed from old bytes
    cache.put("a.py", Stamp(3, 11, b"other"), "tags", ("python", (), b"x"))
    assert cache.get("a.py", "units") is None
    cache.close()


def _damage_page(path: Path, page: int = 3) -> None:
    """Garbage over one b-tree page's header, in place: same size, mtime put back."""
    st = path.stat()
    size = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as fh:
        fh.seek(size * (page - 1))
        fh.write(b"\xff" * 8)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "other_version", "foreign", "in_place_vouched"])
def test_a_bad_cache_is_refused_and_rebuilt(tmp_path, monkeypatch, damage):
    """"in_place_vouched": a cache that passed its integrity check (and is no longer read
    whole while unchanged: IndexCache._check), then damaged in place keeping its size and
    mtime: refused all the same (its ctime changed)."""
    from core.indexing import checked

    root = _repo(tmp_path)
    other = _repo(tmp_path, files=5, seed=9, name="other")
    cache_dir = tmp_path / "cache"
    first, map1 = _service(root, cache_dir)
    expected = _map_text(map1)
    first.stop()
    path = cache_file(root, cache_dir)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    if damage == "in_place_vouched":
        monkeypatch.setattr(checked, "RACY_NS", 50_000_000)  # (the file was written just now)
        time.sleep(0.06)
        IndexCache(root, path).open().close()
        assert checked.stamp_file(path).is_file()
        _damage_page(path)
    elif damage == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif damage == "garbage":
        path.write_bytes(os.urandom(8192))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "other_version":
        db = sqlite3.connect(path)
        db.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(CACHE_VERSION - 1),))
        db.commit()
        db.close()
    elif damage == "foreign":  # another repository's cache copied over this one's
        theirs, _ = _service(other, cache_dir)
        theirs.stop()
        shutil.copyfile(cache_file(other, cache_dir), path)
    second, map2 = _service(root, cache_dir)
    try:
        assert _map_text(map2) == expected
        if damage != "empty":  # an empty file is simply a new database
            # an unchanged tree's indexes come from their snapshots before the SQLite cache
            # is even open: its note may follow them, never fail to come
            deadline = time.monotonic() + 10
            while not any("rebuilt" in n for n in second.snapshot().notes) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert any("rebuilt" in n for n in second.snapshot().notes), second.snapshot().notes
    finally:
        second.stop()
    # the app installed the stored map of this very tree before the cache was rebuilt, so
    # nothing here builds or stores a map: the next launch must still find it stored (it
    # rebuilt the map instead, until the first file event stored one)
    stored = read_latest_snapshot(root, "map", path)
    assert stored is not None and stored[0] == tree_state(root).key


def test_a_checked_cache_is_not_read_whole_again_while_unchanged(tmp_path, monkeypatch):
    """PRAGMA quick_check reads every page (350 MB on 20k files): it runs when the file is
    new to the check, after any write, with a write-ahead log to replay, and not while the
    file keeps the identity it had when it passed; an open that finds a good cache writes
    nothing (a write made every launch check the whole file again)."""
    from core.indexing import checked

    # a file changed within RACY_NS is not vouched for (its times may not show a change in
    # the same clock tick): shortened here, and waited out before each open
    monkeypatch.setattr(checked, "RACY_NS", 50_000_000)
    root = _repo(tmp_path, files=5)
    path = tmp_path / "c.sqlite"
    checks: list[str] = []
    real_connect = IndexCache._connect

    def connect(self: IndexCache) -> sqlite3.Connection:
        db = real_connect(self)
        db.set_trace_callback(lambda sql: checks.append(sql) if "quick_check" in sql else None)
        return db

    monkeypatch.setattr(IndexCache, "_connect", connect)

    def opened(write: bool = False) -> int:
        time.sleep(0.06)
        before = len(checks)
        cache = IndexCache(root, path).open()
        assert cache.rebuilt is None
        if write:
            cache.put(f"new{before}.py", Stamp(1, 10, b"digest"), "tags", ("python", (), b""))
        cache.close()
        return len(checks) - before

    assert opened(write=True) == 0  # a new database: nothing to check
    assert opened() == 1  # checked once, then vouched for
    identity = path.stat()
    assert opened() == 0 and opened() == 0
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns, after.st_ctime_ns) == \
        (identity.st_ino, identity.st_size, identity.st_mtime_ns, identity.st_ctime_ns)
    assert opened(write=True) == 0 and opened() == 1 and opened() == 0  # a write: checked again
    # a write-ahead log that SQLite would replay: the main file's identity says nothing of it
    other = sqlite3.connect(path)
    other.execute("PRAGMA wal_autocheckpoint=0")
    other.execute("INSERT OR REPLACE INTO meta VALUES ('note', 'x')")
    other.commit()
    try:
        assert Path(str(path) + "-wal").stat().st_size > 0
        assert opened() == 1
    finally:
        other.close()
    _damage_page(path)  # in place, size and mtime kept
    cache = IndexCache(root, path).open()
    try:
        assert cache.rebuilt is not None and ("damaged" in cache.rebuilt or "unreadable" in cache.rebuilt)
    finally:
        cache.close()


def test_a_planted_pickle_is_refused():
    import pickle

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with pytest.raises(pickle.UnpicklingError):
        loads(pickle.dumps(Evil()))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["tags", "units"]), st.integers(0, 3), st.integers(0, 2)),
                max_size=20))
def test_cache_rows_follow_the_last_write(tmp_path, writes):
    """Whatever order scans are stored in, a column is served only for the content it was
    computed from."""
    cache = IndexCache(Path("/nonexistent-root"), tmp_path / f"prop-{abs(hash(tuple(writes)))}.sqlite").open()
    truth: dict[str, tuple[bytes, object]] = {}
    for column, content, value in writes:
        digest = bytes([content])
        cache.put("f.py", Stamp(content, content, digest), column, value)
        other = "units" if column == "tags" else "tags"
        if other in truth and truth[other][0] != digest:
            del truth[other]
        truth[column] = (digest, value)
    for column in ("tags", "units"):
        got = cache.get("f.py", column)
        if column in truth:
            assert got is not None and (got[0].digest, got[1]) == truth[column]
        else:
            assert got is None
    cache.close()


def _render_until(repo_map, name: str, timeout_s: float = 10.0):
    """The map for a prompt naming `name`, once it shows `name` (or when time is up)."""
    deadline = time.monotonic() + timeout_s
    result = repo_map.render(4000, prompt=name)
    while name not in result.text and time.monotonic() < deadline:
        time.sleep(0.05)
        result = repo_map.render(4000, prompt=name)
    return result


def test_file_events_reach_the_indexer(tmp_path):
    root = _repo(tmp_path, files=20)
    svc, repo_map = _service(root, tmp_path / "cache")
    try:
        new = root / "src/pkg0000/brand_new.py"
        new.write_text("def freshly_written_function(a, b):\n    return a + b\n")
        repo_map.on_file_event("src/pkg0000/brand_new.py")
        assert "freshly_written_function" in _render_until(repo_map, "freshly_written_function").text
    finally:
        svc.stop()


def test_the_child_process_indexer_gives_the_same_map(tmp_path):
    root = _repo(tmp_path, files=30)
    expected, _ = _reference(root)
    svc, repo_map = _service(root, tmp_path / "cache", in_process=False)
    try:
        assert svc.snapshot().mode == "process"
        assert _map_text(repo_map) == expected
    finally:
        svc.stop()


def test_a_request_never_waits_for_the_index(tmp_path):
    """Before the indexer sends anything the map renders empty and says so."""
    root = _repo(tmp_path, files=5)
    repo_map = RepoMap(root)
    repo_map.use_external_index()
    result = repo_map.render(1000, prompt=PROMPT)
    assert result.text == "" and not result.complete
    assert "indexing goes on in the background" in result.note


def test_roundtrip_of_cached_objects(tmp_path):
    from core.context import tags
    from core.detectors.normalize import units_from_source

    root = _repo(tmp_path, files=3)
    data = (root / "src/pkg0000/mod01.py").read_bytes()
    file_tags = tags.scan_source("python", data)
    assert loads(dumps(file_tags)) == file_tags
    units = units_from_source(data.decode())
    back = loads(dumps(units))
    assert [u.symbol for u in back] == [u.symbol for u in units]
    assert all((a.features == b.features).all() for a, b in zip(back, units))


def test_an_event_after_a_cached_launch_keeps_the_whole_map(tmp_path):
    """A launch that took its map from the cache has no scans in memory: the first file
    event must load them, not rebuild the map from the changed file alone."""

    root = _repo(tmp_path, files=20)
    cache_dir = tmp_path / "cache"
    first, map1 = _service(root, cache_dir)
    before = map1.render(4000, prompt=PROMPT)
    first.stop()
    second, map2 = _service(root, cache_dir)
    try:
        assert map2.render(4000, prompt=PROMPT).text == before.text
        new = root / "src/pkg0000/late_addition.py"
        new.write_text("def arrived_after_launch(a):\n    return a\n")
        map2.on_file_event("src/pkg0000/late_addition.py")
        after = _render_until(map2, "arrived_after_launch")
        assert "arrived_after_launch" in after.text
        assert len(map2.source_files()) == before.files_scanned + 1
    finally:
        second.stop()


def test_context_note_says_a_cached_map_is_being_checked():
    """A whole map from the cache, not yet confirmed by git, says so; a partial map says how far."""
    from core.context.repomap import RepoMapResult

    checking = RepoMapResult("", 0, files_scanned=20_800, files_total=20_800, complete=False)
    assert checking.note == "20,800 files from the cache, checking them against the disk"
    partial = RepoMapResult("", 0, files_scanned=412, files_total=1_040, complete=False)
    assert partial.note == "412/1,040 files indexed, indexing goes on in the background"
    empty = RepoMapResult("", 0, files_scanned=0, files_total=0, complete=False)
    assert "indexing goes on in the background" in empty.note
    assert RepoMapResult("", 0, files_scanned=7).note == "7 files scanned"
