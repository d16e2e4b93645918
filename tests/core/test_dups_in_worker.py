"""Duplicate checks answered by the check worker's copy of the index equal the checks of the
index in this process.

A tree indexed in a thread of the app is indexed in the check worker too, so the review's
duplicate checks (parse, fingerprint, ranking: ~1-2 ms a statement) hold no GIL the UI
needs. The properties: on real files, with random edits and line sets, the child's answer
is `DuplicateIndex.check_source` here; after files change (events sent to the child) it is
a fresh index's answer; a child that is stopped, killed or has no index costs time, never
a finding: the check then runs in this process (and a check that cannot run there says
"not checked", tests/core/test_review_unchecked.py).
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import check_worker
from core.check_worker import CheckWorker, CheckWorkerError
from core.detectors.duplicates import DuplicateIndex
from tests.core.detectors.real_code import (
    read_text,
    sample_modules,
    splice_donor_lines,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """24 real modules copied into a tree (the files checked below are copies of them)."""
    files = sample_modules()
    if not files:
        pytest.skip("no site-packages Python files to test on")
    root = tmp_path_factory.mktemp("tree")
    for n, path in enumerate(files):
        shutil.copyfile(path, root / f"m{n}.py")
    return root, files


@pytest.fixture(scope="module")
def here(tree) -> DuplicateIndex:
    """The same tree's index in this process."""
    index = DuplicateIndex(tree[0])
    index.build()
    return index


@pytest.fixture(scope="module")
def child(tree):
    worker = CheckWorker()
    assert worker.dups_load(str(tree[0])).result(timeout=120) > 0
    yield worker
    worker.close()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_the_child_checks_as_the_index_here(tree, here, child, data: st.DataObject) -> None:
    root, files = tree
    lines = read_text(data.draw(st.sampled_from(files), label="file")).split("\n")
    donor = read_text(data.draw(st.sampled_from(files), label="donor")).split("\n")
    written = [False] * len(lines)
    for _ in range(data.draw(st.integers(0, 3), label="edits")):
        splice_donor_lines(data, lines, written, donor, max_cut=8, max_take=30)
    source = "\n".join(lines)
    rows = sorted({i + 1 for i, w in enumerate(written) if w}
                  | data.draw(st.sets(st.integers(1, len(lines)), max_size=40), label="rows"))
    path = data.draw(st.sampled_from(["new/edited.py", "m0.py", "m3.py"]), label="path")
    there = child.dups_check(str(root), source, path, rows).result(timeout=60)
    assert there == here.check_source(source, path, lines=set(rows))
    assert child.dups_check(str(root), source, path, None).result(timeout=60) == here.check_source(source, path)


def test_after_file_events_the_child_checks_as_the_index_here_given_them(tmp_path, tree) -> None:
    """(Equal twins rank by index order, and an updated file's functions are added last:
    the same events must reach both indexes, as the watcher's reach the app's.)"""
    _, files = tree
    root = tmp_path / "live"
    root.mkdir()
    for n, path in enumerate(files[:8]):
        shutil.copyfile(path, root / f"m{n}.py")
    worker = CheckWorker()
    try:
        here = DuplicateIndex(root)
        here.build()
        assert worker.dups_load(str(root)).result(timeout=120) > 0
        copy = read_text(files[9])
        (root / "m1.py").unlink()  # a file gone
        (root / "m2.py").write_text(read_text(files[3]))  # one rewritten: now a twin of m3
        (root / "added.py").write_text(copy)  # one new
        events = [("m1.py", "deleted"), ("m2.py", "modified"), ("added.py", "created")]
        worker.dups_events(str(root), events)
        here.remove_file("m1.py")
        here.update_file("m2.py")
        here.update_file("added.py")
        for source, path in ((copy, "new/a.py"), (read_text(files[3]), "new/b.py"), (read_text(files[1]), "m1.py")):
            assert worker.dups_check(str(root), source, path, None).result(timeout=60) == \
                here.check_source(source, path)
        assert worker.dups_check(str(root), copy, "new/a.py", None).result(timeout=60)  # found in added.py
    finally:
        worker.close()


def test_no_index_there_fails_the_check_for_the_caller() -> None:
    worker = CheckWorker()
    try:
        with pytest.raises(CheckWorkerError, match="no duplicate index"):
            worker.dups_check("/nonexistent/root", "def f():\n    return 1\n", "x.py", None).result(timeout=60)
    finally:
        worker.close()


def _station(root: Path, monkeypatch) -> tuple:
    """A Workstation whose duplicate index is built here and in a worker of its own."""
    from core.workstation import Workstation

    pool = check_worker.CheckPool(1)
    monkeypatch.setattr(check_worker, "_SHARED", pool)
    station = Workstation(root)
    station.dups.build()
    station.dups_ready = True
    station._dups_to_child(pool.dups)
    for _ in range(600):
        if station._dups_child is not None:
            break
        import time

        time.sleep(0.05)
    assert station._dups_child is not None
    return station, pool


def test_a_stopped_or_killed_child_costs_time_not_findings(tmp_path, tree, monkeypatch) -> None:
    import core.workstation as ws

    _, files = tree
    for n, path in enumerate(files[:6]):
        shutil.copyfile(path, tmp_path / f"m{n}.py")
    station, pool = _station(tmp_path, monkeypatch)
    try:
        source = read_text(files[2])
        here = station.dups.check_source(source, "new/c.py")
        assert here and station._check_dups(source, "new/c.py") == here  # from the child
        proc = pool.dups._proc
        monkeypatch.setattr(ws, "CHILD_CHECK_WAIT_S", 0.3)
        os.kill(proc.pid, signal.SIGSTOP)  # alive, silent: checked here after the wait
        try:
            assert station._check_dups(source, "new/c.py") == here
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait()
        assert station._check_dups(source, "new/c.py") == here  # dead: checked here
        assert station._check_dups(source, "new/c.py") == here  # a new child (no index yet): here
    finally:
        pool.close()


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_the_childs_statement_memo_answers_as_one_here(tree, here, child, data: st.DataObject) -> None:
    """The answer's statement memo kept in the child (its cut, its memo, its index) ==
    the same memo here over the versions of a file an answer streams."""
    from core.statement_checks import StatementChecks

    root, files = tree
    memo = StatementChecks(here.check_source)
    name = f"test#{data.draw(st.integers(0, 10**9), label='memo')}"
    lines = read_text(data.draw(st.sampled_from(files), label="file")).split("\n")
    donor = read_text(data.draw(st.sampled_from(files), label="donor")).split("\n")
    for _ in range(data.draw(st.integers(1, 3), label="versions")):
        written = [False] * len(lines)
        splice_donor_lines(data, lines, written, donor, max_cut=8, max_take=30)
        text = "\n".join(lines)
        added = sorted({i + 1 for i, w in enumerate(written) if w}
                       | data.draw(st.sets(st.integers(1, len(lines)), max_size=20), label="rows"))
        assert child.dups_matches(str(root), name, text, "new/edited.py", added).result(timeout=60) == \
            memo.matches(text, "new/edited.py", added)


def test_the_memo_is_asked_here_when_the_child_cannot_answer(tmp_path, tree, monkeypatch) -> None:
    import core.workstation as ws

    _, files = tree
    for n, path in enumerate(files[:6]):
        shutil.copyfile(path, tmp_path / f"m{n}.py")
    station, pool = _station(tmp_path, monkeypatch)
    try:
        text = read_text(files[2])
        rows = list(range(1, text.count("\n") + 1))
        memo = station._statement_checks("answer-1")
        expected = sorted(station.dups.check_source(text, "new/c.py", lines=rows), key=lambda m: m.new_line)
        assert expected and station._memo_matches(memo, text, "new/c.py", rows) == expected  # the child's
        assert not memo._memo  # the memo here was not needed
        monkeypatch.setattr(ws, "CHILD_CHECK_WAIT_S", 0.3)
        os.kill(pool.dups._proc.pid, signal.SIGSTOP)
        try:
            assert station._memo_matches(memo, text, "new/c.py", rows) == expected  # here, after the wait
            assert memo._memo
        finally:
            os.kill(pool.dups._proc.pid, signal.SIGCONT)
    finally:
        pool.close()
