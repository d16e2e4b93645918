"""The growth meter's baseline from stored per-file counts equals a full recount.

Each launch's indexer counts the tree's lines; a file whose identity (path, size, mtime,
ctime, inode) is unchanged counts by the number stored at the last launch. These tests
edit random trees between "launches" (add, change, delete, rename, binary, too big, moved
out of sight) and compare with the plain algorithm (every file read, as the meter always
counted); a damaged, foreign or ill-formed stored table is ignored, never trusted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.detectors import growth
from core.detectors.growth import (
    LINES_SCHEME,
    LINES_SNAPSHOT,
    SOURCE_SUFFIXES,
    count_tree_lines,
    count_tree_lines_stored,
    count_with_known,
)
from core.indexing.cache import read_snapshot_file, write_snapshot_file
from core.indexing.checked import RACY_NS

LATER = 10 * RACY_NS  # the next launch comes long after the files were written


def reference_count(root: Path, max_bytes: int) -> int:
    """The meter's count as it always was: os.walk, every source file read line by line."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in growth.EXCLUDED_DIRS and not d.startswith(".")]
        for name in filenames:
            path = Path(dirpath) / name
            if path.suffix not in SOURCE_SUFFIXES or path.stat().st_size > max_bytes:
                continue
            with path.open("rb") as fh:
                total += sum(1 for _ in fh)
    return total


NAMES = ["a.py", "b.md", "c.txt", "d.rs", "sub/e.py", "sub/f.yaml", "sub/deep/g.go", "node_modules/h.js",
         ".hidden/i.py", "build/j.py", "k.bin", "sub/l.toml", "..py", "m.", "sub/.n.md"]
CONTENT = st.one_of(
    st.lists(st.sampled_from([b"x = 1", b"", b"def f():", b"  return 2", b"\r"]), max_size=12)
    .map(lambda lines: b"\n".join(lines)),  # with or without a last newline
    st.binary(max_size=80),  # binary: NULs, lone \r, anything
    st.just(b"y\n" * 60),  # too big for the test's cap
)
EDIT = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), CONTENT),  # add or change
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.just(b"")),
    st.tuples(st.just("rename"), st.sampled_from(NAMES), st.sampled_from(NAMES).map(str.encode)),
    st.tuples(st.just("same-size"), st.sampled_from(NAMES), st.just(b"")),  # flip a byte in place
)


class Clock:
    """mtimes that move forward between edits as real time does between launches."""

    def __init__(self) -> None:
        self.now = time.time_ns() - 100 * RACY_NS

    def stamp(self, path: Path) -> None:
        self.now += 1_000_003
        os.utime(path, ns=(self.now, self.now))


def apply(root: Path, edit: tuple[str, str, bytes], clock: Clock) -> None:
    kind, name, arg = edit
    path = root / name
    if kind == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(arg)
        clock.stamp(path)
    elif kind == "delete":
        path.unlink(missing_ok=True)
    elif kind == "rename" and path.exists():
        target = root / arg.decode()
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)  # same inode, size and times: only the path differs
    elif kind == "same-size" and path.exists() and path.stat().st_size:
        data = bytearray(path.read_bytes())
        data[0] = ord("\n") if data[0] != ord("\n") else ord("z")  # adds or drops a line
        before = path.stat().st_mtime_ns
        time.sleep(0.011)  # past the coarse clock's tick (jiffies): the ctime the last count saw moves on
        path.write_bytes(bytes(data))
        os.utime(path, ns=(before, before))  # size and mtime as before: only the ctime tells


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(EDIT, max_size=6), min_size=1, max_size=4))
def test_stored_counts_equal_a_full_recount(launches: list[list[tuple[str, str, bytes]]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="growth-"))
    try:
        clock = Clock()
        known: dict = {}
        for edits in launches:
            for edit in edits:
                apply(root, edit, clock)
            total, table = count_with_known(root, known, max_bytes=100, now_ns=time.time_ns() + LATER)
            assert total == reference_count(root, 100)
            assert count_with_known(root, {}, max_bytes=100, now_ns=time.time_ns() + LATER) == (total, table)
            known = table
    finally:
        shutil.rmtree(root)


def test_an_unchanged_tree_reads_no_file(tmp_path: Path, monkeypatch) -> None:
    for i in range(30):
        (tmp_path / f"m{i}.py").write_text("a\nb\n" * i)
    total, table = count_with_known(tmp_path, {}, now_ns=time.time_ns() + LATER)
    assert total == sum(2 * i for i in range(30)) and len(table) == 30
    reads: list[str] = []
    real = growth._count_file
    monkeypatch.setattr(growth, "_count_file", lambda full: reads.append(full) or real(full))
    assert count_with_known(tmp_path, table, now_ns=time.time_ns() + LATER) == (total, table)
    assert reads == []
    (tmp_path / "m3.py").write_text("changed\n")
    assert count_with_known(tmp_path, table, now_ns=time.time_ns() + LATER)[0] == total - 6 + 1
    assert reads == [os.path.join(tmp_path, "m3.py")]


def test_a_file_changed_within_the_clock_tick_is_not_kept(tmp_path: Path) -> None:
    (tmp_path / "new.py").write_text("x\n")
    total, table = count_with_known(tmp_path, {})  # written just now: its times may not show a change
    assert (total, table) == (1, {})


def test_the_store_is_written_when_counts_change_and_read_back(tmp_path: Path, monkeypatch) -> None:
    tree, store = tmp_path / "tree", tmp_path / "x.sqlite.lines.snap"
    tree.mkdir()
    for i in range(5):
        (tree / f"f{i}.py").write_text("line\n" * (i + 1))
    assert count_tree_lines_stored(tree, store) == 15
    assert not store.exists()  # every ctime is fresh: counted, not kept, nothing to store
    monkeypatch.setattr(growth, "RACY_NS", 0)  # (as if the launch came RACY_NS later)
    time.sleep(0.02)
    assert count_tree_lines_stored(tree, store) == 15
    found = read_snapshot_file(store, str(tree.resolve()), LINES_SNAPSHOT)
    assert found is not None and found[0] == LINES_SCHEME and sorted(found[1]) == [f"f{i}.py" for i in range(5)]
    writes: list[object] = []
    monkeypatch.setattr("core.indexing.cache.write_snapshot_file", lambda *a: writes.append(a))
    assert count_tree_lines_stored(tree, store) == 15
    assert writes == []  # unchanged: not written again
    (tree / "f0.py").unlink()
    assert count_tree_lines_stored(tree, store) == 14
    assert len(writes) == 1 and sorted(writes[0][-1]) == [f"f{i}.py" for i in range(1, 5)]


def test_a_damaged_foreign_or_ill_formed_store_is_ignored(tmp_path: Path) -> None:
    tree, store = tmp_path / "tree", tmp_path / "lines.snap"
    tree.mkdir()
    (tree / "a.py").write_text("1\n2\n3\n")
    st_ = (tree / "a.py").stat()
    ident = (st_.st_size, st_.st_mtime_ns, st_.st_ctime_ns, st_.st_ino)
    resolved = str(tree.resolve())
    lying = {"a.py": (*ident, 999)}  # a stored count that does not match the file
    # another repository's, another scheme's, another name's: refused as a whole
    for root, name, key in [("/elsewhere", LINES_SNAPSHOT, LINES_SCHEME), (resolved, "map", LINES_SCHEME),
                            (resolved, LINES_SNAPSHOT, b"line-counts-0")]:
        write_snapshot_file(store, root, name, key, lying)
        assert count_tree_lines_stored(tree, store) == 3
    # ill-formed rows or tables: ignored
    for table in [{"a.py": (*ident, -1)}, {"a.py": ident}, {"a.py": (*ident, "9")}, ["a.py"], {1: (*ident, 9)},
                  {"a.py": [*ident, 9]}, {"a.py": (*ident, 9, 9)}, {"a.py": (*ident, True)}, {"a.py": {}}]:
        write_snapshot_file(store, resolved, LINES_SNAPSHOT, LINES_SCHEME, table)
        assert count_tree_lines_stored(tree, store) == 3
    # damaged bytes: the checksum refuses it
    write_snapshot_file(store, resolved, LINES_SNAPSHOT, LINES_SCHEME, {"a.py": (*ident, 3)})
    data = bytearray(store.read_bytes())
    data[-3] ^= 0xFF
    store.write_bytes(bytes(data))
    assert read_snapshot_file(store, resolved, LINES_SNAPSHOT) is None
    assert count_tree_lines_stored(tree, store) == 3
    # the well-formed store of this tree is used (it is what lets a launch skip the reads)
    write_snapshot_file(store, resolved, LINES_SNAPSHOT, LINES_SCHEME, lying)
    assert count_tree_lines_stored(tree, store) == 999


def test_plain_count_is_the_stored_count_without_a_store(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"1\n2")
    (tmp_path / "link.py").symlink_to(tmp_path / "missing.py")  # a dangling link: skipped
    os.mkfifo(tmp_path / "pipe.py")  # not a file: skipped (reading it would block)
    assert count_tree_lines(tmp_path) == count_tree_lines_stored(tmp_path, None) == 2


def test_the_indexer_keeps_the_counts_and_a_second_launch_reads_no_file(tmp_path: Path, monkeypatch) -> None:
    """The real indexer (thread mode, its own cache): the growth count it sends is the tree's,
    the counts are stored beside its cache, and the next launch on the unchanged tree sends
    the same count without reading a file."""
    import threading

    from bench.repo_gen import generate
    from core.context.repomap import RepoMap
    from core.indexing.cache import cache_file, snapshot_file
    from core.indexing.service import IndexService

    root = generate(tmp_path / "repo", 12, 3)
    cache = cache_file(root, tmp_path / "cache")
    monkeypatch.setattr(growth, "RACY_NS", 0)  # (as if the launch came RACY_NS after the writes)
    time.sleep(0.02)

    def launch() -> int:
        got: list[int] = []
        heard = threading.Event()
        svc = IndexService(root, RepoMap(root), cache_path=cache, in_process=True)
        svc.on_growth = lambda n: (got.append(n), heard.set())
        svc.start()
        try:
            assert heard.wait(60)
        finally:
            svc.stop()
        return got[0]

    expected = reference_count(root, growth.MAX_FILE_BYTES)
    assert launch() == expected
    store = snapshot_file(cache, LINES_SNAPSHOT)
    found = read_snapshot_file(store, str(root.resolve()), LINES_SNAPSHOT)
    assert found is not None and len(found[1]) == len([p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES])
    reads: list[str] = []
    real = growth._count_file
    monkeypatch.setattr(growth, "_count_file", lambda full: reads.append(full) or real(full))
    assert launch() == expected
    assert reads == []
