"""Hunks: stable ids, any accepted subset gives exactly the implied file, re-basing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.edits.hunks import apply_hunks, make_hunks, rebase_hunk

_lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "def f():\n", "    x\n", "\n", "z\n"]),
                  max_size=30)


def _splice_oracle(old: str, hunks, accepted: set[str]) -> str:
    """Independent oracle: splice accepted hunks from the bottom up."""
    lines = old.splitlines(keepends=True)
    for h in sorted(hunks, key=lambda h: h.old_start, reverse=True):
        if h.id in accepted:
            s = h.old_start - 1
            lines[s:s + len(h.old_lines)] = h.new_lines
    return "".join(lines)


@given(_lines, _lines, st.data())
@settings(max_examples=300, deadline=None)
def test_any_subset_gives_the_implied_file(a, b, data):
    old, new = "".join(a), "".join(b)
    hunks = make_hunks("f.py", old, new)
    ids = [h.id for h in hunks]
    assert len(set(ids)) == len(ids)
    assert apply_hunks(old, hunks, set()) == old
    assert apply_hunks(old, hunks, set(ids)) == new
    subset = set(data.draw(st.lists(st.sampled_from(ids), unique=True)) if ids else [])
    got = apply_hunks(old, hunks, subset)
    assert got == _splice_oracle(old, hunks, subset)
    # line accounting: each accepted hunk changes the length by exactly its delta
    delta = sum(len(h.new_lines) - len(h.old_lines) for h in hunks if h.id in subset)
    assert len(got.splitlines(keepends=True)) == len(a) + delta


def test_ids_are_stable_and_depend_on_content():
    old = "a\nb\nc\n"
    h1 = make_hunks("x.py", old, "a\nB\nc\n")
    h2 = make_hunks("x.py", old, "a\nB\nc\n")
    assert [h.id for h in h1] == [h.id for h in h2]
    assert h1[0].id != make_hunks("y.py", old, "a\nB\nc\n")[0].id
    assert h1[0].id != make_hunks("x.py", old, "a\nC\nc\n")[0].id


def test_insertion_hunk_position():
    (h,) = make_hunks("x.py", "a\nb\n", "a\nNEW\nb\n")
    assert (h.old_start, h.old_lines, h.new_lines) == (2, [], ["NEW\n"])


def test_rebase_after_lines_inserted_above():
    old = "".join(f"line{i}\n" for i in range(20))
    new = old.replace("line10\n", "LINE10\n")
    (h,) = make_hunks("x.py", old, new)
    changed = "header\nmore\n" + old
    moved = rebase_hunk(h, changed.splitlines(keepends=True))
    assert moved is not None and moved.old_start == h.old_start + 2
    assert apply_hunks(changed, [moved]) == "header\nmore\n" + new


def test_rebase_refuses_when_target_lines_changed():
    old = "".join(f"line{i}\n" for i in range(20))
    (h,) = make_hunks("x.py", old, old.replace("line10\n", "LINE10\n"))
    changed = old.replace("line10\n", "user edit\n")
    assert rebase_hunk(h, changed.splitlines(keepends=True)) is None


def test_rebase_tolerates_edit_next_to_context():
    old = "".join(f"line{i}\n" for i in range(20))
    (h,) = make_hunks("x.py", old, old.replace("line10\n", "LINE10\n"))
    changed = old.replace("line8\n", "user8\n")
    moved = rebase_hunk(h, changed.splitlines(keepends=True))
    assert moved is not None and moved.old_start == 11


@given(_lines, st.lists(st.tuples(st.integers(0, 40), st.integers(0, 4), _lines), max_size=5),
       st.data())
@settings(max_examples=300, deadline=None)
def test_tracked_hunks_match_the_edits_for_any_subset(a, splices, data):
    from core.edits.hunks import make_hunks_tracked

    old = "".join(a)
    lines = [s.rstrip("\n") for s in a]
    origin: list[int | None] = list(range(len(lines)))
    for pos, span, new in splices:
        s = min(pos, len(lines))
        e = min(s + span, len(lines))
        block = [x.rstrip("\n") for x in new]
        lines[s:e] = block
        origin[s:e] = [None] * len(block)
    new_text = "".join(x + "\n" for x in lines)
    hunks = make_hunks_tracked("f.py", old, new_text, origin)
    ids = [h.id for h in hunks]
    assert apply_hunks(old, hunks, set(ids)) == new_text
    assert apply_hunks(old, hunks, set()) == old
    subset = set(data.draw(st.lists(st.sampled_from(ids), unique=True)) if ids else [])
    assert apply_hunks(old, hunks, subset) == _splice_oracle(old, hunks, subset)
