"""Copy-edits people make, each with the clone type we assign; scan policy; hostile files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.detectors.duplicates import DuplicateIndex

ORIGINAL = '''
import logging

log = logging.getLogger(__name__)


def collect_names(records, prefix="user", strict=False):
    """Names of the records that carry one."""
    if records is None:
        raise ValueError("no records")
    names = []
    for rec in records:
        names.append(rec.name.lower())
    if not strict:
        log.info("collected %d names", len(names))
    else:
        log.warning("strict mode for %s", prefix)
    return sorted(names, key=str.lower, reverse=True)
'''

EDITS = {
    # type 1: layout, comments, docstrings and type hints do not change code
    "hints": (1, ORIGINAL.replace('def collect_names(records, prefix="user", strict=False):',
                                  'def collect_names(records: list, prefix: str = "user",\n'
                                  '                  strict: bool = False) -> list[str]:')
              .replace('"""Names of the records that carry one."""', '"""Other words."""')),
    # type 2: names, literals and the order of keyword arguments
    "kwargs": (2, ORIGINAL.replace("key=str.lower, reverse=True", "reverse=True, key=str.lower")),
    "rename": (2, ORIGINAL.replace("collect_names", "gather").replace("names", "out")
               .replace('"user"', '"admin"')),
    # type 3: one statement changed, added, removed, or rewritten
    "swap_if": (3, ORIGINAL.replace('''    if not strict:
        log.info("collected %d names", len(names))
    else:
        log.warning("strict mode for %s", prefix)''', '''    if strict:
        log.warning("strict mode for %s", prefix)
    else:
        log.info("collected %d names", len(names))''')),
    "comprehension": (3, ORIGINAL.replace('''    names = []
    for rec in records:
        names.append(rec.name.lower())''', "    names = [rec.name.lower() for rec in records]")),
    "guard_removed": (3, ORIGINAL.replace('''    if records is None:
        raise ValueError("no records")
''', "")),
    "comparison": (3, ORIGINAL.replace("records is None", "records is not None")),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> DuplicateIndex:
    root = tmp_path_factory.mktemp("tree")
    (root / "names.py").write_text(ORIGINAL)
    idx = DuplicateIndex(root)
    idx.build()
    return idx


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_each_copy_edit_is_found_with_its_type(index: DuplicateIndex, edit: str) -> None:
    ctype, source = EDITS[edit]
    assert source != ORIGINAL
    matches = index.check_source(source)
    assert [(m.twin_symbol, m.clone_type) for m in matches] == [("collect_names", ctype)]
    assert (matches[0].similarity == 1.0) == (ctype < 3)


SIBLINGS = '''
class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


class Size:
    def __init__(self, w, h):
        self.w = w
        self.h = h


class Box:
    def __repr__(self):
        return f"Box({self.w}, {self.h})"
'''


def test_scan_gives_one_pair_per_copy_and_no_family_explosion(tmp_path: Path) -> None:
    (tmp_path / "names.py").write_text(ORIGINAL)
    (tmp_path / "shapes.py").write_text(SIBLINGS)
    for i in range(4):  # a family of five identical functions, and one near miss
        (tmp_path / f"copy{i}.py").write_text(ORIGINAL)
    (tmp_path / "near.py").write_text(EDITS["comparison"][1])
    idx = DuplicateIndex(tmp_path)
    idx.build()
    pairs = idx.pairs()
    assert len(pairs) <= 5  # each function's best twin, not the 10 + 5 of every pair
    for p in pairs:
        assert p.a != p.b and (p.a.path, p.a.line) <= (p.b.path, p.b.line)
        assert 0.0 <= p.similarity <= 1.0
        assert "shapes.py" not in (p.a.path, p.b.path)  # tiny sibling methods stay quiet
    near = [p for p in pairs if "near.py" in (p.a.path, p.b.path)]
    assert len(near) == 1 and near[0].clone_type == 3


def test_hostile_files_give_notes_not_crashes(tmp_path: Path) -> None:
    (tmp_path / "names.py").write_text(ORIGINAL)
    (tmp_path / "py2.py").write_text('print "hi"\n')
    (tmp_path / "binary.py").write_bytes(b"\x00\xff\xfe")
    (tmp_path / "latin.py").write_bytes(b"def f(a):\n    s = '\xe9'\n    return a + s\n")
    (tmp_path / "deep.py").write_text("x = " + "(" * 300 + ")" * 300 + "\n")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing.py")
    os.mkfifo(tmp_path / "fifo.py")  # reading it would block forever
    (tmp_path / "misc.py").write_text('''
import functools
class A:
    @functools.lru_cache
    def m(self, x):
        def inner(y):
            return y + 1
        w = lambda q: q * 2
        return w(inner(x))
async def co(a):
    async with a as b:
        async for x in b:
            await x
    return a
''')
    idx = DuplicateIndex(tmp_path)
    idx.build()
    notes = {path: " ".join(lines) for path, lines in idx.notes.items()}
    assert "syntax error" in notes["py2.py"]
    assert "binary" in notes["binary.py"]
    assert "Latin-1" in notes["latin.py"]
    assert "regular file" in notes["fifo.py"]
    assert "cannot read" in notes["dangling.py"]
    assert idx.function_count >= 4
    idx.pairs()  # no crash
    (tmp_path / "misc.py").unlink()  # a file that vanished before its event
    idx.update_file("misc.py")
    assert "misc.py" not in idx.notes


CLOSURE = '''
def make_parser(sep):
    def parse(text):
        parts = text.strip().split(sep)
        if len(parts) != 3:
            raise ValueError(f"bad date: {text!r}")
        return tuple(int(p) for p in parts)
    return parse
'''


def test_helper_copied_out_of_a_closure_is_found_but_a_copied_closure_pairs_once(
    tmp_path: Path,
) -> None:
    (tmp_path / "closure.py").write_text(CLOSURE)
    idx = DuplicateIndex(tmp_path)
    idx.build()
    helper = "\n".join(line[4:] for line in CLOSURE.splitlines()[2:7])
    matches = idx.check_source(helper)
    assert [(m.twin_symbol, m.clone_type) for m in matches] == [
        ("make_parser.<locals>.parse", 1)]
    whole = idx.check_source(CLOSURE)  # the outer copy is the finding, not its inner one
    assert [(m.new_symbol, m.twin_symbol) for m in whole] == [("make_parser", "make_parser")]
    (tmp_path / "copy.py").write_text(CLOSURE)
    idx.build()
    assert [(p.a.symbol, p.b.symbol) for p in idx.pairs()] == [("make_parser", "make_parser")]
