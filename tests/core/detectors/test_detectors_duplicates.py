"""The duplicate index on a small real-looking tree: types, exclusions, incremental updates."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.detectors.duplicates import DuplicateIndex, iter_python_files

DATES = '''"""Date helpers."""
import datetime


def to_date(text, sep="-"):
    """Parse YYYY-MM-DD into a date."""
    parts = text.strip().split(sep)
    if len(parts) != 3:
        raise ValueError(f"bad date: {text!r}")
    year, month, day = (int(p) for p in parts)
    return datetime.date(year, month, day)


def week_bounds(day):
    start = day - datetime.timedelta(days=day.weekday())
    end = start + datetime.timedelta(days=6)
    label = f"{start:%d %b} - {end:%d %b}"
    return start, end, label
'''

STATS = '''
def mean_and_spread(values):
    total = 0.0
    count = 0
    for v in values:
        total += v
        count += 1
    if count == 0:
        return None
    mean = total / count
    spread = max(values) - min(values)
    return mean, spread
'''

RENAMED_COPY = '''
def parse_day(raw, delimiter="/"):
    pieces = raw.strip().split(delimiter)
    if len(pieces) != 3:
        raise ValueError(f"not a day: {raw!r}")
    y, m, d = (int(x) for x in pieces)
    return datetime.date(y, m, d)
'''

NEAR_MISS = '''
def summarize(samples):
    total = 0.0
    count = 0
    for s in samples:
        total += s
        count += 1
    if count == 0:
        return None
    mean = total / count
    print("mean", mean)
    spread = max(samples) - min(samples)
    return mean, spread
'''

UNRELATED = '''
def render_table(rows, widths):
    lines = []
    for row in rows:
        cells = [str(c).ljust(w) for c, w in zip(row, widths)]
        lines.append(" | ".join(cells))
    header = "-+-".join("-" * w for w in widths)
    return "\\n".join([lines[0], header, *lines[1:]]) if lines else ""
'''


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "dates.py").write_text(DATES)
    (tmp_path / "stats.py").write_text(STATS)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "vendored.py").write_text(STATS)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "copy.py").write_text(STATS)
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "gen.py").write_text(STATS)
    (tmp_path / ".gitignore").write_text("generated/\n")
    return tmp_path


@pytest.fixture()
def index(tree: Path) -> DuplicateIndex:
    idx = DuplicateIndex(tree)
    idx.build()
    return idx


def test_walk_skips_tool_vendored_and_gitignored_dirs(tree: Path) -> None:
    assert list(iter_python_files(tree)) == ["stats.py", "utils/dates.py"]


def test_build_reports_progress(tree: Path) -> None:
    seen: list[tuple[int, int]] = []
    DuplicateIndex(tree).build(lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]


def test_exact_copy_is_type_1(index: DuplicateIndex) -> None:
    matches = index.check_source("import datetime\n" + DATES.split("import datetime\n")[1])
    by_symbol = {m.new_symbol: m for m in matches}
    m = by_symbol["to_date"]
    assert (m.twin_path, m.twin_symbol, m.twin_line, m.clone_type) == (
        "utils/dates.py", "to_date", 5, 1)
    assert m.similarity == 1.0


def test_renamed_copy_is_type_2(index: DuplicateIndex) -> None:
    [m] = index.check_source(RENAMED_COPY)
    assert (m.new_symbol, m.twin_symbol, m.clone_type, m.similarity) == (
        "parse_day", "to_date", 2, 1.0)
    assert m.new_line == 2


def test_near_miss_is_type_3(index: DuplicateIndex) -> None:
    [m] = index.check_source(NEAR_MISS)
    assert (m.twin_path, m.twin_symbol, m.clone_type) == ("stats.py", "mean_and_spread", 3)
    assert 0.55 <= m.similarity < 1.0


def test_unrelated_function_has_no_twin(index: DuplicateIndex) -> None:
    assert index.check_source(UNRELATED) == []


def test_a_function_does_not_match_its_own_indexed_version(index: DuplicateIndex) -> None:
    assert index.check_source(STATS, "stats.py") == []
    assert index.check_source(STATS, exclude_path="stats.py") == []
    assert index.check_source(STATS, "other.py")[0].clone_type == 1


def test_streaming_source_with_broken_tail_is_checked(index: DuplicateIndex) -> None:
    partial = RENAMED_COPY + "\n\ndef next_one(a, b):\n    for x in a:\n        if x ==\n"
    assert [m.twin_symbol for m in index.check_source(partial)] == ["to_date"]


def test_update_file_adds_and_replaces_functions(tree: Path, index: DuplicateIndex) -> None:
    (tree / "render.py").write_text(UNRELATED)
    index.update_file("render.py")
    [m] = index.check_source(UNRELATED)
    assert m.twin_path == "render.py"
    (tree / "render.py").write_text("X = 1\n")
    index.update_file("render.py")
    assert index.check_source(UNRELATED) == []


def test_remove_file_and_deleted_file_events(tree: Path, index: DuplicateIndex) -> None:
    index.remove_file("stats.py")
    assert index.check_source(NEAR_MISS) == []
    (tree / "utils" / "dates.py").unlink()
    index.update_file("utils/dates.py")  # a delete event arriving as a change
    assert index.check_source(RENAMED_COPY) == []
    assert index.indexed_count == 0


def test_pairs_within_the_tree(tree: Path) -> None:
    (tree / "copy_dates.py").write_text("import datetime\n" + RENAMED_COPY)
    (tree / "summary.py").write_text(NEAR_MISS)
    idx = DuplicateIndex(tree)
    idx.build()
    got = {(p.a.path, p.a.symbol, p.b.path, p.b.symbol, p.clone_type) for p in idx.pairs()}
    assert got == {
        ("copy_dates.py", "parse_day", "utils/dates.py", "to_date", 2),
        ("stats.py", "mean_and_spread", "summary.py", "summarize", 3),
    }
    assert idx.function_count == 5


def test_unreadable_and_broken_files_do_not_stop_the_build(tree: Path) -> None:
    (tree / "latin.py").write_bytes(b"# caf\xe9\n" + STATS.encode())
    (tree / "broken.py").write_text("def f(:\n")
    idx = DuplicateIndex(tree)
    idx.build()
    assert idx.check_source(NEAR_MISS)[0].twin_symbol == "mean_and_spread"


def test_checks_run_while_a_file_event_updates_the_index(tree: Path) -> None:
    idx = DuplicateIndex(tree)
    idx.build()

    def churn() -> None:
        for i in range(30):
            (tree / "churn.py").write_text(STATS if i % 2 else UNRELATED)
            idx.update_file("churn.py")

    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(churn)
        for _ in range(60):
            assert idx.check_source(RENAMED_COPY)[0].twin_symbol == "to_date"
        done.result()  # re-raises whatever the updating thread hit


def test_many_updates_fold_into_the_frozen_index(tree: Path) -> None:
    idx = DuplicateIndex(tree)
    idx.build()
    for i in range(12):
        (tree / f"m{i}.py").write_text(UNRELATED.replace("render_table", f"render_{i}"))
        idx.update_file(f"m{i}.py")
    idx._freeze()  # what a large delta triggers; results must not change
    matches = idx.check_source(UNRELATED)
    assert len(matches) == 3 and all(m.clone_type == 2 for m in matches)


def test_events_for_files_the_walk_skips_are_ignored(tree: Path, index: DuplicateIndex) -> None:
    before = index.indexed_count
    (tree / ".venv" / "new.py").write_text(UNRELATED)
    (tree / "generated" / "new.py").write_text(UNRELATED)
    (tree / "notes.txt").write_text(UNRELATED)
    for rel in (".venv/new.py", "generated/new.py", "notes.txt", "../outside.py"):
        index.update_file(rel)
    assert index.indexed_count == before
    (tree / "render.py").write_text(UNRELATED)
    index.update_file(str(tree / "render.py"))  # absolute paths under the root work too
    assert index.check_source(UNRELATED)[0].twin_path == "render.py"


def test_scan_pairs_a_copy_that_shrank_below_the_index_size(tmp_path: Path) -> None:
    original = '''
def load(path, default):
    log.debug("loading %s", path)
    text = path.read_text(encoding="utf-8")
    return parse(text, strict=True, default=default)
'''
    shrunk = '''
def load_file(p, fallback):
    text = p.read_text(encoding="utf-8")
    return parse(text, strict=True, default=fallback)
'''
    (tmp_path / "a.py").write_text(original)
    (tmp_path / "b.py").write_text(shrunk)
    idx = DuplicateIndex(tmp_path)
    idx.build()
    assert idx.indexed_count == 1  # the copy is too small to index...
    [pair] = idx.pairs()  # ...but a scan still asks about it
    assert (pair.a.symbol, pair.b.symbol, pair.clone_type) == ("load", "load_file", 3)


def test_check_can_be_limited_to_changed_lines(index: DuplicateIndex) -> None:
    source = UNRELATED + "\n" + RENAMED_COPY  # parse_day starts on line 11
    assert [m.new_symbol for m in index.check_source(source)] == ["parse_day"]
    assert index.check_source(source, lines={3, 4}) == []
    assert [m.new_symbol for m in index.check_source(source, lines=[13])] == ["parse_day"]
