"""The compact duplicate index (dup_store) finds exactly what the old one did, and its
snapshot is refused when it cannot be trusted.

The reference is the index as it was before the compact store (reference_duplicates.py):
on real code (site-packages and this repository), with files re-added or removed after the
freeze (the delta paths), `check_source` and `pairs()` must give the same answers.
"""

from __future__ import annotations

import os
from dataclasses import astuple
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.detectors.dup_store import SnapshotError, word_hashes
from core.detectors.duplicates import DuplicateIndex
from core.detectors.normalize import FunctionUnit, units_from_source
from tests.core.detectors import reference_duplicates as ref
from tests.core.detectors.real_code import REPO, SITE_PACKAGES, read_text, real_python_files


def _real_files() -> list[Path]:
    return real_python_files((SITE_PACKAGES, REPO / "core", REPO / "bench"), 1_000, 40_000)


@lru_cache(maxsize=512)
def _units(path: Path) -> tuple[FunctionUnit, ...]:
    return tuple(units_from_source(read_text(path)))


def _rel(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _both(files: list[Path], tmp: Path) -> tuple[DuplicateIndex, ref.DuplicateIndex]:
    new, old = DuplicateIndex(tmp), ref.DuplicateIndex(tmp)
    parsed = [(_rel(p), list(_units(p))) for p in files]
    new.load(parsed)
    old.load(parsed)
    return new, old


def _remove_some_and_refreeze(data: st.DataObject, files: list[Path], new: DuplicateIndex,
                              old: ref.DuplicateIndex) -> None:
    """File events on both indexes: a few drawn files removed, then maybe a refreeze."""
    for path in data.draw(st.lists(st.sampled_from(files), max_size=3, unique=True), label="removed"):
        for index in (new, old):
            index.remove_file(_rel(path))
    if data.draw(st.booleans(), label="refreeze"):
        new.finish_loading()
        old.finish_loading()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_compact_index_answers_like_the_old_one_on_real_code(data: st.DataObject, tmp_path: Path) -> None:
    pool = _real_files()
    if len(pool) < 10:
        pytest.skip("not enough Python files to test on")
    files = data.draw(st.lists(st.sampled_from(pool), min_size=5, max_size=40, unique=True), label="files")
    # a few copies of indexed files under other names: exact, renamed and near twins
    files_with_copies = files + data.draw(st.lists(st.sampled_from(files), max_size=3), label="copies")
    new, old = _both(files, tmp_path)
    for i, path in enumerate(files_with_copies[len(files):]):
        for index in (new, old):
            index.add_units(f"copy{i}/{path.name}", list(_units(path)))  # the delta
    _remove_some_and_refreeze(data, files, new, old)
    assert new.indexed_count == old.indexed_count and new.function_count == old.function_count
    for path in data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4), label="queries"):
        text = read_text(path)
        n = text.count("\n") + 1
        lines = data.draw(st.none() | st.sets(st.integers(1, n), max_size=60), label="lines")
        where = data.draw(st.sampled_from([None, _rel(path), "elsewhere.py"]), label="path")
        got = new.check_source(text, where, lines=lines)
        want = old.check_source(text, where, lines=lines)
        assert [astuple(m) for m in got] == [astuple(m) for m in want]  # (two classes)
    if len(files) <= 12:
        assert [astuple(p) for p in new.pairs()] == [astuple(p) for p in old.pairs()]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_kgram_ids_read_back_the_rows_hashes_through_freezes_snapshots_and_events(
        data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The indexer's way on real code: files streamed in bulk with a freeze every few files
    (each freeze joins tables of different k-gram vocabularies), maybe the snapshot stored
    and mapped, then file events (files whose k-grams the vocabulary lacks, removals) and a
    refreeze (the mapped ids copied, never written). Each frozen row's k-grams read back
    are the hashes its function was built from, and the answers are the reference's."""
    pool = _real_files()
    if len(pool) < 10:
        pytest.skip("not enough Python files to test on")
    files = data.draw(st.lists(st.sampled_from(pool), min_size=4, max_size=24, unique=True), label="files")
    every = data.draw(st.integers(1, 6), label="freeze every")
    tmp_path = tmp_path_factory.mktemp("kgram")  # (one per example)
    new: DuplicateIndex = DuplicateIndex(tmp_path)
    old = ref.DuplicateIndex(tmp_path)
    for i, path in enumerate(files, 1):
        for index in (new, old):
            index.add_units(_rel(path), list(_units(path)), bulk=True)
            if i % every == 0:
                index.finish_loading()
    new.finish_loading()
    old.finish_loading()
    snap = tmp_path / "index.dups"
    mapped = None
    if data.draw(st.booleans(), label="snapshot"):
        new.save_snapshot(snap, {}, {"root": str(tmp_path)})
        new = DuplicateIndex(tmp_path)
        new.load_snapshot(snap, {"root": str(tmp_path)})
        mapped = snap.read_bytes()
    later = data.draw(st.lists(st.sampled_from(pool), max_size=5, unique=True), label="later")
    for path in later:
        for index in (new, old):
            index.add_units(f"later/{_rel(path)}", list(_units(path)))
    _remove_some_and_refreeze(data, files, new, old)
    if mapped is not None:
        assert snap.read_bytes() == mapped
    expected = {(rel, u.symbol, u.line): u.features
                for rel, path in [(_rel(p), p) for p in files] + [(f"later/{_rel(p)}", p) for p in later]
                for u in _units(path)}
    table = new._table
    assert table.feat.dtype == np.uint32
    for uid in np.flatnonzero(new._alive).tolist():
        hashes = table.feats(uid)
        assert hashes.tolist() == expected[table.path(uid), table.symbol(uid), int(table.line[uid])].tolist()
    for path in data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3), label="queries"):
        got = new.check_source(read_text(path), "elsewhere.py")
        want = old.check_source(read_text(path), "elsewhere.py")
        assert [astuple(m) for m in got] == [astuple(m) for m in want]
    if len(files) + len(later) <= 10:
        assert [astuple(p) for p in new.pairs()] == [astuple(p) for p in old.pairs()]


def test_word_hashes_keep_the_jaccard_of_the_strings() -> None:
    a, b = {"x", "self", "append", "'a'"}, {"x", "append", "y"}
    ha, hb = word_hashes(a), word_hashes(b)
    shared = np.intersect1d(ha, hb).size
    assert (len(ha), len(hb), shared) == (4, 3, 2)


# -- snapshot ---------------------------------------------------------------------------------
SOURCE = '''
def load_rows(path, limit=10):
    rows = []
    with open(path) as handle:
        for line in handle:
            if len(rows) >= limit:
                break
            rows.append(line.strip().split(","))
    return rows


def tiny(a):
    b = a + 1
    return b


class Store:
    def save(self, items):
        out = []
        for item in items:
            if item is None:
                continue
            out.append(self.encode(item))
        return out
'''

RENAMED = SOURCE.replace("load_rows", "read_table").replace("rows", "acc").replace("Store", "Keeper")


def _tree(tmp: Path) -> Path:
    root = tmp / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text(SOURCE)
    (root / "pkg" / "b.py").write_text(RENAMED)
    (root / "pkg" / "empty.py").write_text("X = 1\n")
    return root


def _saved(tmp: Path, stamps: dict[str, str] | None = None) -> tuple[Path, DuplicateIndex, Path, dict[str, str]]:
    """A built index of `_tree` and its snapshot written: (root, index, snapshot path, the
    header a load expects)."""
    root = _tree(tmp)
    built = DuplicateIndex(root)
    built.build()
    snap = tmp / "dups.snapshot"
    expect = {"root": str(root)}
    built.save_snapshot(snap, stamps or {}, expect)
    return root, built, snap, expect


def test_snapshot_round_trip_gives_the_same_answers(tmp_path: Path) -> None:
    stamps = {"pkg/a.py": "1:2", "pkg/b.py": "t:ab12", "pkg/empty.py": "s:5:6"}
    root, built, snap, _ = _saved(tmp_path, stamps)
    loaded = DuplicateIndex(root)
    assert loaded.load_snapshot(snap, {"root": str(root)}) == stamps
    assert loaded.files() == built.files() == set(stamps)
    assert (loaded.indexed_count, loaded.function_count) == (built.indexed_count, built.function_count)
    assert loaded.pairs() == built.pairs() and loaded.pairs()
    assert loaded.check_source(RENAMED, "new.py") == built.check_source(RENAMED, "new.py")
    # a loaded index takes file events like a built one (rows of a mapped snapshot are
    # marked dead, not written)
    loaded.remove_file("pkg/b.py")
    assert loaded.check_source(RENAMED, "new.py", exclude_path="pkg/a.py") == []
    assert built.check_source(RENAMED, "new.py", exclude_path="pkg/a.py") != []
    loaded.add_units("pkg/c.py", units_from_source(SOURCE))
    assert {m.twin_path for m in loaded.check_source(SOURCE, "new.py")} == {"pkg/a.py", "pkg/c.py"}


def _v1_arrays(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A version-2 snapshot's arrays in version 1's layout: k-gram features as uint64
    hashes, no vocabulary, the inverted index keyed by the indexed k-grams only."""
    out = {k: np.array(v) for k, v in arrays.items() if k != "vocab"}
    vocab = np.array(arrays["vocab"])
    out["feat"] = vocab[arrays["feat"]]
    offsets = np.array(arrays["fi_offsets"])
    used = np.diff(offsets) > 0
    out["fi_keys"] = vocab[used]
    out["fi_offsets"] = np.append(offsets[:-1][used], offsets[-1])
    return out


def _rewrite(snap: Path, expect: dict[str, str], change: Any, version: int | None = None) -> None:
    """Write the snapshot again with its arrays changed (a valid checksum: only what the
    arrays say is wrong), as a file no load has vouched for."""
    from core.detectors import dup_store

    _header, arrays = dup_store.load(snap, expect, verify=False)
    other = snap.with_name("rewritten.dups")
    saved_version = dup_store.SNAPSHOT_VERSION
    dup_store.SNAPSHOT_VERSION = version or saved_version
    try:
        dup_store.save(other, expect, change({k: np.array(v) for k, v in arrays.items()}))
    finally:
        dup_store.SNAPSHOT_VERSION = saved_version
    snap.write_bytes(other.read_bytes())


def _with(arrays: dict[str, np.ndarray], name: str, index: int, value: int) -> dict[str, np.ndarray]:
    arrays[name][index] = value
    return arrays


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "flipped", "flipped_same_mtime",
                                    "foreign", "old", "version_1", "v1_layout", "ids_out_of_range",
                                    "postings_out_of_range"])
def test_a_bad_snapshot_is_refused(tmp_path: Path, damage: str) -> None:
    """Damaged, foreign or old files are refused, never half-loaded. "version_1" is a real
    file of the previous layout (uint64 k-grams); "v1_layout" the same arrays claiming the
    current version; the two "out of range" ones have a valid checksum over ids that point
    outside the vocabulary or postings outside the table (a query would fail on them)."""
    from core.detectors.dup_store import SNAPSHOT_VERSION

    root, _, snap, expect = _saved(tmp_path)
    data = snap.read_bytes()
    if damage == "version_1":
        _rewrite(snap, expect, _v1_arrays, version=1)
    elif damage == "v1_layout":
        _rewrite(snap, expect, _v1_arrays)
    elif damage == "ids_out_of_range":
        _rewrite(snap, expect, lambda a: _with(a, "feat", -1, len(a["vocab"])))
    elif damage == "postings_out_of_range":
        _rewrite(snap, expect, lambda a: _with(a, "fi_postings", 0, len(a["line"])))
    if damage == "truncated":
        snap.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        snap.write_bytes(b"not a snapshot at all" * 50)
    elif damage == "empty":
        snap.write_bytes(b"")
    elif damage in {"flipped", "flipped_same_mtime"}:
        before = snap.stat()
        middle = len(data) // 3
        snap.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:])
        if damage == "flipped_same_mtime":  # rewritten in place, same size, mtime set back
            os.utime(snap, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif damage == "foreign":
        expect = {"root": "/somewhere/else"}
    elif damage == "old":
        assert f'"version": {SNAPSHOT_VERSION}'.encode() in data
        snap.write_bytes(data.replace(f'"version": {SNAPSHOT_VERSION}'.encode(), b'"version": 0'))
    fresh = DuplicateIndex(root)
    with pytest.raises(SnapshotError):
        fresh.load_snapshot(snap, expect)
    assert fresh.indexed_count == 0  # nothing half-loaded
    with pytest.raises(SnapshotError):
        DuplicateIndex(root).load_snapshot(tmp_path / "absent", expect)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.sets(st.integers(0, 2**64 - 1) | st.integers(0, 40)
                                       | st.sampled_from([2**63 + 5, 2**63 + 9, 2**56 * 7 + 1]), max_size=30),
                               st.booleans()), max_size=30),
       chunk=st.sampled_from([1, 3, 7, 1 << 20]), rows_at_once=st.sampled_from([1, 2, 4096]))
def test_freezing_table_rows_of_kgram_ids_gives_the_arrays_of_a_plain_freeze(
        rows: list[tuple[set[int], bool]], chunk: int, rows_at_once: int) -> None:
    """FeatureIndex.freeze_ids (a counting sort of uint32 ids, in chunks) == freeze (one
    sort of the uint64 hashes), whatever the chunks' size; the ids are the rows' hashes
    (vocab[ids]); the keys only probes have (not indexed) have no postings and are never
    found, so any query gets the candidates of the plain freeze."""
    from core.detectors.dup_store import _feature_ids
    from core.detectors.feature_index import FeatureIndex

    feats = [np.array(sorted(keys), dtype=np.uint64) for keys, _ in rows]
    offsets, ids, vocab = _feature_ids(feats, rows_at_once=rows_at_once)
    assert ids.dtype == np.uint32 and vocab.tolist() == sorted(set().union(*(keys for keys, _ in rows)))
    assert [vocab[ids[offsets[i]:offsets[i + 1]]].tolist() for i in range(len(rows))] == [f.tolist() for f in feats]
    indexed = np.array([flag for _, flag in rows], dtype=np.bool_)
    plain, by_ids = FeatureIndex(), FeatureIndex()
    plain.freeze((uid, f) for uid, f in enumerate(feats) if indexed[uid])
    by_ids.freeze_ids(vocab, ids, offsets, indexed, chunk=chunk)
    a, b = plain.arrays(), by_ids.arrays()
    df = np.diff(b["offsets"])
    assert b["keys"][df > 0].tolist() == a["keys"].tolist()
    assert df[df > 0].tolist() == np.diff(a["offsets"]).tolist()
    assert b["postings"].tolist() == a["postings"].tolist()
    live = [uid for uid in range(len(rows)) if indexed[uid] and len(feats[uid])]
    assert [int(a["sizes"][u]) for u in live] == [int(b["sizes"][u]) for u in live]
    # (the whole vocabulary: more than MAX_QUERY_FEATURES keys, probes' among them, which
    # must not take the place of a rare indexed one)
    for query in feats + [np.array([5, 2**63 + 5], dtype=np.uint64), vocab]:
        assert by_ids.candidates(query, lambda uid: True, 10) == plain.candidates(query, lambda uid: True, 10)


@given(sizes=st.lists(st.integers(0, 50), min_size=1, max_size=4), shared=st.booleans(), width=st.sampled_from([0, 3]))
def test_a_freeze_grows_columns_in_place_only_when_nothing_else_holds_them(sizes: list[int], shared: bool,
                                                                          width: int) -> None:
    """dup_store._concat_popped == np.concatenate; an array someone else still holds (a
    query's view of the old table) is copied, never resized under them."""
    from core.detectors.dup_store import _concat_popped

    rng = np.random.default_rng(sum(sizes))
    shape = (lambda n: (n, width)) if width else (lambda n: (n,))
    arrays = [rng.integers(0, 1000, size=shape(n)).astype(np.int64) for n in sizes]
    expected = np.concatenate(arrays)
    first_copy = arrays[0].copy()
    holder = arrays[0] if shared else None
    parts = [{"c": a} for a in arrays]
    del arrays
    out = _concat_popped(parts, "c")
    assert out.tolist() == expected.tolist() and all("c" not in p for p in parts)
    if holder is not None:
        assert holder.tolist() == first_copy.tolist()  # untouched


def test_a_checked_snapshot_is_not_read_again_until_its_file_changes(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The checksum is read once per file identity (written here, or checked by a load);
    a later load of the same file skips it, a rewritten or replaced file is checked. (A
    file changed within the last RACY_NS is never vouched for: its times may not move on
    its next change; here the files are settled at once.)"""
    import zlib

    from core.detectors import dup_store
    from core.indexing import checked

    monkeypatch.setattr(checked, "RACY_NS", 0)
    calls: list[int] = []

    class CountingZlib:
        @staticmethod
        def crc32(data: Any, value: int = 0) -> int:
            calls.append(1)
            return zlib.crc32(data, value)

    monkeypatch.setattr(dup_store, "zlib", CountingZlib)
    root, built, snap, expect = _saved(tmp_path)
    calls.clear()
    DuplicateIndex(root).load_snapshot(snap, expect)
    assert calls == []  # written here: vouched for
    (tmp_path / "dups.snapshot.checked").unlink()
    DuplicateIndex(root).load_snapshot(snap, expect)
    assert len(calls) == 1  # checked, and vouched for again
    DuplicateIndex(root).load_snapshot(snap, expect)
    assert len(calls) == 1
    copy = tmp_path / "copy"
    copy.write_bytes(snap.read_bytes())
    os.replace(copy, snap)  # the same bytes, another file
    loaded = DuplicateIndex(root)
    loaded.load_snapshot(snap, expect)
    assert len(calls) == 2
    assert loaded.check_source(RENAMED, "new.py") == built.check_source(RENAMED, "new.py")


def test_a_snapshot_changed_within_its_time_tick_is_never_trusted(tmp_path: Path) -> None:
    """A file whose ctime is recent is not vouched for: a second write in the same tick of
    the file system's clock (same size, same times) would otherwise go unseen."""
    from core.indexing import checked

    root, _, snap, expect = _saved(tmp_path)
    DuplicateIndex(root).load_snapshot(snap, expect)  # checked, but too fresh to vouch for
    assert not checked.stamp_file(snap).exists()
    data = snap.read_bytes()
    middle = len(data) // 3
    snap.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:])
    with pytest.raises(SnapshotError):
        DuplicateIndex(root).load_snapshot(snap, expect)


def test_a_snapshot_written_here_is_vouched_for_once_settled(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`vouch_settled` (the indexer calls it a while after storing a snapshot): not while
    the file is fresh; once settled, its checksum is computed from the file and, matching,
    it is vouched for, so the next load does not read it whole. A file changed in place
    since it was written (same size, mtime put back) does not match: never vouched for,
    and its next load refuses it."""
    import time

    from core.detectors import dup_store
    from core.indexing import checked

    root, built, snap, expect = _saved(tmp_path)
    assert not checked.stamp_file(snap).exists()  # written just now: too fresh to vouch for
    assert not dup_store.vouch_settled(snap)
    monkeypatch.setattr(checked, "RACY_NS", 50_000_000)  # (shortened; waited out below)
    time.sleep(0.06)
    assert dup_store.vouch_settled(snap, chunk=4096)  # (small chunks: the read loop)
    calls: list[int] = []
    real = dup_store.zlib

    class CountingZlib:
        @staticmethod
        def crc32(data: Any, value: int = 0) -> int:
            calls.append(1)
            return real.crc32(data, value)

    monkeypatch.setattr(dup_store, "zlib", CountingZlib)
    loaded = DuplicateIndex(root)
    loaded.load_snapshot(snap, expect)
    assert calls == []  # vouched for: not read for its checksum
    assert loaded.check_source(RENAMED, "new.py") == built.check_source(RENAMED, "new.py")
    monkeypatch.setattr(dup_store, "zlib", real)
    # another snapshot, damaged in place before it settled
    other = tmp_path / "other.snapshot"
    built.save_snapshot(other, {}, expect)
    st = other.stat()
    data = bytearray(other.read_bytes())
    data[len(data) // 3] ^= 0xFF
    with open(other, "r+b") as fh:
        fh.write(data)
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    time.sleep(0.06)
    assert not dup_store.vouch_settled(other)
    assert not checked.stamp_file(other).exists()
    with pytest.raises(SnapshotError, match="checksum"):
        DuplicateIndex(root).load_snapshot(other, expect)
