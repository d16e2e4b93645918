"""File events keep the duplicate index equal to a fresh build of the tree.

`DuplicateIndex.apply_events` is the one place where watcher events (path, kind) become
index work: the app's `Workstation.on_file_changes`, the indexer child's `on_events` and
the check worker's copy of the index all call it. The property: after any sequence of
events on a real tree (files added, changed, deleted, renamed, made binary or too big,
events outside the tree or for files the walk skips), given in batches as a watcher
gives them, the index holds the same functions and answers the same checks as an index
built afresh from the tree that results.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.detectors import duplicates
from core.detectors.duplicates import DuplicateIndex
from tests.core.detectors.real_code import read_text, sample_modules

# where files go: the walk indexes the first three, skips the others
PLACES = ["a.py", "pkg/b.py", "pkg/sub/c.py", ".venv/d.py", "generated/e.py", "notes.txt"]


def _rows(index: DuplicateIndex) -> list[tuple[Any, ...]]:
    """Every live function of the index, as comparable values, in a canonical order (uids
    differ: a file read again puts its functions last, a fresh build walks in path order)."""
    base = index._table.n
    uids = np.flatnonzero(index._alive).tolist() + [
        base + i for i, row in enumerate(index._rows) if row is not None]
    out = []
    for uid in uids:
        path, fp = index._path(uid), index._fingerprint(uid)
        indexed = bool(index._table.indexed[uid]) if uid < base else index._rows[uid - base][2]  # type: ignore[index]
        out.append((path, fp.symbol, fp.line, fp.tokens, fp.exact_key, fp.renamed_key,
                    fp.features.tolist(), fp.anchors.tolist(), fp.lexicon.tolist(), fp.roles, indexed))
    return sorted(out)


def _answers(index: DuplicateIndex, texts: list[tuple[str, str]]) -> list[list[tuple[Any, ...]]]:
    """What checks of `texts` find, twins named by their content (equal twins rank by uid)."""
    out = []
    for text, path in texts:
        found = []
        for m in index.check_source(text, path):
            found.append((m.new_symbol, m.new_line, m.clone_type, m.similarity))
        out.append(sorted(found))
    return out


def _assert_equal_to_fresh(index: DuplicateIndex, root: Path, texts: list[tuple[str, str]]) -> None:
    fresh = DuplicateIndex(root)
    fresh.build()
    assert index.files() == fresh.files()
    assert index.function_count == fresh.function_count
    assert index.indexed_count == fresh.indexed_count
    assert _rows(index) == _rows(fresh)
    assert {rel: index.notes.get(rel) for rel in index.files()} == {rel: fresh.notes.get(rel) for rel in fresh.files()}
    assert _answers(index, texts) == _answers(fresh, texts)


@pytest.fixture(scope="module")
def modules() -> list[Path]:
    found = sample_modules()[:10]
    if len(found) < 4:
        pytest.skip("not enough real modules to test on")
    return found


def _write(root: Path, rel: str, data: bytes) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)


def _batches(data: st.DataObject, root: Path, outside: Path, modules: list[Path]) -> Iterator[list[tuple[str, str]]]:
    """Random file changes on the tree, yielded as the watcher's batches of events."""
    batch: list[tuple[str, str]] = []
    for _ in range(data.draw(st.integers(1, 12), label="steps")):
        present = sorted(str(p.relative_to(root).as_posix()) for p in root.rglob("*") if p.is_file()
                         and p.name != ".gitignore")
        op = data.draw(st.sampled_from(["add", "change", "delete", "rename", "binary", "too big",
                                        "outside", "vanished", "flush"]), label="op")
        place = data.draw(st.sampled_from(PLACES + present), label="place")
        text = read_text(data.draw(st.sampled_from(modules), label="module")).encode()
        absolute = data.draw(st.booleans(), label="absolute path")
        name = str(root / place) if absolute else place
        if op == "add":
            _write(root, place, text)
            batch.append((name, "added"))
        elif op == "change" and present:
            target = data.draw(st.sampled_from(present), label="changed")
            _write(root, target, text[: data.draw(st.integers(0, len(text)), label="cut")])
            batch.append((target, "modified"))
        elif op in {"delete", "vanished"} and present:
            target = data.draw(st.sampled_from(present), label="deleted")
            (root / target).unlink()
            # a watcher may report a file gone as a change (an editor's save-by-rename)
            batch.append((target, "deleted" if op == "delete" else "modified"))
        elif op == "rename" and present:
            source = data.draw(st.sampled_from(present), label="renamed")
            (root / place).parent.mkdir(parents=True, exist_ok=True)
            if source != place:
                os.replace(root / source, root / place)
                batch += [(source, "deleted"), (name, "added")]
        elif op == "binary":
            _write(root, place, text[:200] + b"\x00" + text[200:])
            batch.append((name, "modified"))
        elif op == "too big":
            _write(root, place, text + b"#" * duplicates.MAX_FILE_BYTES)
            batch.append((name, "modified"))
        elif op == "outside":
            (outside / "x.py").write_bytes(text)
            batch += [(str(outside / "x.py"), "added"), ("../outside/x.py", "modified")]
        elif op == "flush":  # the watcher's batch ends
            yield batch
            batch = []
    yield batch


class _Conn:
    """The indexer child's socket to the app: what it sends is dropped."""

    def send(self, msg: Any) -> None:
        pass

    def send_bytes(self, buf: Any, *args: Any) -> None:
        pass

    def poll(self, timeout: float = 0) -> bool:
        return False


def _indexer(root: Path, cache: Path) -> Any:
    from core.indexing.worker import Indexer

    indexer = Indexer(root, _Conn(), [p.relative_to(root).as_posix() for p in root.rglob("*.py")],  # type: ignore[arg-type]
                      cache_path=cache)
    indexer.build_dups()
    indexer.await_cache()
    return indexer


def _station(root: Path) -> Any:
    from core.workstation import Workstation

    station = Workstation(root)
    station.dups.build()
    station.dups_ready = True
    return station


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.parametrize("caller", ["index", "indexer", "station"])
def test_file_events_keep_the_index_equal_to_a_fresh_build(caller: str, modules: list[Path], tmp_path_factory: Any,
                                                          data: st.DataObject) -> None:
    """Through each caller: the index itself, the indexer child (which also caches what it
    read) and the app's workstation (whose watcher events include every kind of path)."""
    base = tmp_path_factory.mktemp("events")
    root, outside = base / "tree", base / "outside"
    root.mkdir()
    outside.mkdir()
    (root / ".gitignore").write_text("generated/\n")
    for n, path in enumerate(data.draw(st.lists(st.sampled_from(modules), min_size=1, max_size=4), label="start")):
        _write(root, PLACES[n % 3].replace(".py", f"{n}.py"), path.read_bytes())
    apply: Callable[[list[tuple[str, str]]], Any]
    if caller == "indexer":
        indexer = _indexer(root, base / "cache.sqlite")
        index = indexer.dups

        def apply(batch: list[tuple[str, str]]) -> None:
            # the indexer gets the repo map's paths: the watcher's, root-relative (see
            # core.workspace.watch), never a path outside the tree
            rels = [(p[len(str(root)) + 1:] if p.startswith(f"{root}/") else p, k) for p, k in batch]
            indexer.on_events([(p, k) for p, k in rels if not p.startswith(("/", "../"))])
    elif caller == "station":
        station = _station(root)
        index, apply = station.dups, station.on_file_changes
    else:
        index = DuplicateIndex(root)
        index.build()
        apply = index.apply_events
    if data.draw(st.booleans(), label="frozen after the first changes"):
        index.finish_loading()
    for batch in _batches(data, root, outside, modules):
        apply(batch)
    texts = [(read_text(p), "query.py") for p in modules[:3]]
    texts += [(p.read_text(errors="replace"), str(p.relative_to(root).as_posix()))
              for p in sorted(root.rglob("*.py"))[:3] if p.stat().st_size < 100_000]
    _assert_equal_to_fresh(index, root, texts)
    if caller == "indexer":  # what it read is cached under the stamp of the bytes it read
        fresh = DuplicateIndex(root)
        for rel in sorted(index.files()):
            cached = indexer.cache.get(rel, "units")
            st_now = os.stat(root / rel)
            if cached is not None and (cached[0].mtime_ns, cached[0].size) == (st_now.st_mtime_ns, st_now.st_size):
                assert [u.exact_key for u in cached[1]] == [u.exact_key for u in fresh.units_of(rel)]
    shutil.rmtree(base)


def test_apply_events_returns_what_it_read_with_the_stat_before_the_read(tmp_path: Path) -> None:
    """The indexer caches a read file's units under the stat `apply_events` returns."""
    module = sample_modules()[0]
    shutil.copyfile(module, tmp_path / "m.py")
    (tmp_path / "gone.py").write_text("def f():\n    return 1\n")
    index = DuplicateIndex(tmp_path)
    index.build()
    (tmp_path / "gone.py").unlink()
    st_before = os.stat(tmp_path / "m.py")
    read = index.apply_events([("m.py", "modified"), ("gone.py", "modified"), ("notes.txt", "added"),
                               ("m.py", "deleted")])
    assert [(r.rel, r.stat.st_mtime_ns, r.stat.st_size) for r in read] == \
        [("m.py", st_before.st_mtime_ns, st_before.st_size)]
    assert read[0].units and all(u.symbol for u in read[0].units)
    assert index.files() == set()  # m.py deleted after it was read; gone.py gone
