"""The tree's Python files from the last walk's listing (core/indexing/pyfiles.py).

Invariant: after any history of changes to a tree (files and folders added, removed,
renamed, edited; .gitignore changed; files in excluded folders), the listing given is the
walk's. Folder times are set to distinct old values between steps, as time passing would
(a step's own changes then carry fresh times, which are never kept), so kept listings are
really used and really checked.
"""

from __future__ import annotations

import os
import time
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.detectors.duplicates import iter_python_files
from core.indexing import pyfiles

NAMES = ["a.py", "b.py", "c.txt", "pkg", "sub", "node_modules", "build", "x.py"]
OPS = st.tuples(st.sampled_from(["file", "dir", "remove", "rename", "edit", "ignore", "noop"]),
                st.integers(0, 50), st.sampled_from(NAMES), st.booleans())
_ages = count(1)


def _dirs(root: Path) -> list[Path]:
    return [Path(d) for d, _, _ in os.walk(root)]


def _age(root: Path) -> None:
    """Every folder gets a time never used before, well in the past."""
    for d in _dirs(root):
        t = (time.time_ns() - 3_600_000_000_000) - next(_ages) * 1_000_000
        os.utime(d, ns=(t, t))


def _apply(root: Path, op: str, pick: int, name: str) -> None:
    dirs = _dirs(root)
    here = dirs[pick % len(dirs)]
    entries = sorted(p for p in root.rglob("*") if p.name != ".gitignore")
    target = entries[pick % len(entries)] if entries else None
    if op == "file" and not (here / name).exists():
        (here / name).write_text("def f():\n    return 1\n")
    elif op == "dir" and not (here / name).exists():
        (here / name).mkdir()
        (here / name / "m.py").write_text("X = 1\n")
    elif op == "remove" and target is not None:
        if target.is_dir():
            for p in sorted(target.rglob("*"), reverse=True):
                p.rmdir() if p.is_dir() else p.unlink()
            target.rmdir()
        else:
            target.unlink()
    elif op == "rename" and target is not None and not (target.parent / (target.name + "_r.py")).exists():
        target.rename(target.parent / (target.name + "_r.py"))
    elif op == "edit" and target is not None and target.is_file():
        target.write_text(target.read_text() + "# edited\n")  # a file's content: folders keep their times
    elif op == "ignore":
        with open(root / ".gitignore", "a") as fh:
            fh.write(f"{name}\n")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(OPS, st.booleans()), max_size=12))
def test_the_listing_is_always_the_walks(tmp_path_factory, steps):
    root = tmp_path_factory.mktemp("tree")
    (root / "pkg").mkdir()
    (root / "pkg" / "m.py").write_text("def g():\n    return 2\n")
    (root / "top.py").write_text("Y = 2\n")
    record = root.parent / (root.name + ".pyfiles")
    _age(root)
    assert pyfiles.python_files(root, record) == list(iter_python_files(root))
    for (op, pick, name, _), age in steps:
        _apply(root, op, pick, name)
        if age:
            _age(root)
        assert pyfiles.python_files(root, record) == list(iter_python_files(root))


def test_an_unchanged_tree_is_not_walked_again(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("X = 1\n")
    record = tmp_path / "tree.pyfiles"
    _age(root)
    first = pyfiles.python_files(root, record)
    assert first == ["pkg/m.py"] and record.is_file()
    walks: list[int] = []
    real = pyfiles.iter_python_files

    def counting(*args, **kwargs):
        walks.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pyfiles, "iter_python_files", counting)
    assert pyfiles.python_files(root, record) == first and walks == []
    (root / "pkg" / "n.py").write_text("Y = 1\n")  # a fresh change: walked, not kept
    assert pyfiles.python_files(root, record) == ["pkg/m.py", "pkg/n.py"] and len(walks) == 1
    assert pyfiles.python_files(root, record) == ["pkg/m.py", "pkg/n.py"] and len(walks) == 2


@pytest.mark.parametrize("damage", ["garbage", "other_root", "gitignore"])
def test_a_record_of_something_else_is_not_used(tmp_path, damage):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.py").write_text("X = 1\n")
    (root / ".gitignore").write_text("# nothing\n")
    record = tmp_path / "tree.pyfiles"
    _age(root)
    pyfiles.python_files(root, record)
    if damage == "garbage":
        record.write_text("{not json")
    elif damage == "other_root":
        other = tmp_path / "other"
        other.mkdir()
        _age(other)
        assert pyfiles.python_files(other, record) == []
    else:  # rewritten in place: the folder keeps its time, the rules changed
        (root / ".gitignore").write_text("a.py\n")
    assert pyfiles.python_files(root, record) == list(iter_python_files(root))
    if damage == "gitignore":
        assert pyfiles.python_files(root, record) == []


def test_the_apps_own_folder_neither_counts_nor_voids_the_listing(tmp_path, monkeypatch):
    """Each launch writes a session record under `.spark/`: the app's folder is not the
    user's code (the map's listing and the watcher skip it too), and a new record there
    must not make the next launch walk the whole tree again."""
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("X = 1\n")
    (root / ".spark" / "sessions").mkdir(parents=True)
    (root / ".spark" / "journal.py").write_text("def f():\n    return 1\n")
    record = tmp_path / "tree.pyfiles"
    _age(root)
    assert pyfiles.python_files(root, record) == ["pkg/m.py"] == list(iter_python_files(root))
    walks: list[int] = []
    real = pyfiles.iter_python_files

    def counting(*args, **kwargs):
        walks.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pyfiles, "iter_python_files", counting)
    (root / ".spark" / "sessions" / "20261126-063836-b88fd8.jsonl").write_text("{}\n")  # a launch
    assert pyfiles.python_files(root, record) == ["pkg/m.py"] and walks == []
