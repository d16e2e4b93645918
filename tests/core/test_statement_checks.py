"""core.statement_checks: duplicate checks per top-level statement, remembered, equal the
whole file's check (the same matches, in the same order) on real files, also over a sequence
of edits that reuses the memo of earlier versions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.detectors.duplicates import DuplicateIndex
from core.statement_checks import StatementChecks
from tests.core.detectors.real_code import (
    SITE_PACKAGES,
    read_text,
    real_python_files,
    sample_modules,
    splice_donor_lines,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[DuplicateIndex, list[Path]]:
    """An index of 24 real modules: the files checked below are copies of them, so their
    functions have exact twins (and near misses once edited)."""
    files = sample_modules()
    if not files:
        pytest.skip("no site-packages Python files to test on")
    root = tmp_path_factory.mktemp("tree")
    for n, path in enumerate(files):
        shutil.copyfile(path, root / f"m{n}.py")
    index = DuplicateIndex(root)
    index.build()
    return index, files


def _edited(data: st.DataObject, lines: list[str], donor: list[str]) -> tuple[list[str], list[bool]]:
    written = [False] * len(lines)
    for _ in range(data.draw(st.integers(0, 3), label="edits")):
        splice_donor_lines(data, lines, written, donor, max_cut=8, max_take=30)
    return lines, written


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_statement_checks_equal_the_whole_file_check(indexed, data: st.DataObject) -> None:
    """(About half the versions have matches: the file checked is a copy of an indexed one.)"""
    index, files = indexed
    text = read_text(data.draw(st.sampled_from(files), label="file"))
    donor = read_text(data.draw(st.sampled_from(files), label="donor")).split("\n")
    memo = StatementChecks(index.check_source)
    lines = text.split("\n")
    for _ in range(data.draw(st.integers(1, 3), label="versions")):
        lines, written = _edited(data, lines, donor)
        version = "\n".join(lines)
        extra = data.draw(st.sets(st.integers(1, max(1, len(lines))), max_size=8), label="touched")
        run = data.draw(st.integers(1, max(1, len(lines))), label="run")  # a hunk over whole functions
        added = {i + 1 for i, w in enumerate(written) if w} | extra | set(range(run, run + 60))
        # the same matches, in file order (one function's twins in the check's order)
        whole = sorted(index.check_source(version, "new/edited.py", lines=added), key=lambda m: m.new_line)
        assert memo.matches(version, "new/edited.py", added) == whole
        assert memo.matches(version, "new/edited.py", added) == whole  # remembered: the same


def test_a_moved_statement_is_not_checked_again(indexed) -> None:
    index, files = indexed
    text = read_text(files[0])
    calls: list[str] = []

    def counting(source: str, path: str | None = None, **kw):
        calls.append(source)
        return index.check_source(source, path, **kw)

    memo = StatementChecks(counting)
    rows = set(range(1, text.count("\n") + 1))
    first = memo.matches(text, "new/a.py", rows)
    assert first == sorted(index.check_source(text, "new/a.py", lines=rows), key=lambda m: m.new_line)
    assert first, "a copy of an indexed file has exact twins"
    assert len(calls) == 1
    moved = "\n\n# a comment above moves every statement\n" + text
    again = memo.matches(moved, "new/a.py", {r + 3 for r in rows})
    assert len(calls) == 1  # nothing new to check: every statement only moved
    assert [m.new_line for m in again] == [m.new_line + 3 for m in first]


def test_a_statement_asked_twice_at_once_is_checked_once(indexed) -> None:
    """A superseded pass's check still runs when the next pass asks for the same
    statements: the second waits for the first's answer instead of asking again."""
    import threading

    index, files = indexed
    text = read_text(files[1])
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow(source: str, path: str | None = None, **kw):
        calls.append(source)
        started.set()
        release.wait(5)
        return index.check_source(source, path, **kw)

    memo = StatementChecks(slow)
    rows = set(range(1, text.count("\n") + 1))
    results: list[list] = []
    first = threading.Thread(target=lambda: results.append(memo.matches(text, "new/b.py", rows)))
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=lambda: results.append(memo.matches(text, "new/b.py", rows)))
    second.start()
    release.set()
    first.join(5)
    second.join(5)
    assert len(calls) == 1
    assert results[0] == results[1] == sorted(index.check_source(text, "new/b.py", lines=rows),
                                              key=lambda m: m.new_line)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_statements_holding_rows_are_those_a_scan_of_every_statement_finds(data: st.DataObject) -> None:
    """Cut.holding (a bisect per group of rows, texts joined only for those statements)
    == every statement of the cut tested against the rows, as the check first did."""
    import bisect

    from core.statement_checks import cut

    files = real_python_files((SITE_PACKAGES,), 500, 40_000)
    if not files:
        pytest.skip("no site-packages Python files to test on")
    text = read_text(data.draw(st.sampled_from(files), label="file"))
    whole = cut(text)
    if whole is None:
        return
    n_rows = len(whole.rows)
    rows = sorted(data.draw(st.sets(st.integers(1, n_rows + 5), max_size=40), label="rows"))
    every = [whole.statement(n) for n in range(len(whole.starts))]
    assert "".join(s.text for s in every) == "\n".join(whole.rows) + "\n"  # the cut covers the file
    expected = []
    for seg in every:
        lo, hi = bisect.bisect_left(rows, seg.first), bisect.bisect_right(rows, seg.last)
        if lo < hi:
            expected.append((seg, tuple(r - seg.first for r in rows[lo:hi])))
    assert whole.holding(rows) == expected
