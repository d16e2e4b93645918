"""Hunks diffed only in and around the spans edits wrote (FileEditor.spans) are the hunks of
every line's origin looked at: after any sequence of splices (replacements, insertions,
deletions, at the start, the middle and the end of real files) and final-newline changes."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from core.edits.hunks import make_hunks_tracked
from core.edits.proposal import FileEditor
from tests.core.detectors.real_code import REPO, read_text, real_python_files


def _files() -> list:
    return real_python_files((REPO / "core",), 500, 20_000)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_hunks_from_the_spans_equal_hunks_from_every_origin(data: st.DataObject) -> None:
    old = read_text(data.draw(st.sampled_from(_files()), label="file"))
    if data.draw(st.booleans(), label="no final newline"):
        old = old.rstrip("\n")
    ed = FileEditor("f.py", old)
    donor = old.splitlines()
    for _ in range(data.draw(st.integers(1, 6), label="edits")):
        if data.draw(st.integers(0, 5), label="kind") == 0 and ed.lines:
            # a diff hunk's '\ No newline at end of file' flips the final newline: the
            # original last line is no longer the same line
            ed._end_of_file(SimpleNamespace(old_no_eol=False, new_no_eol=ed.final_newline), len(ed.lines))
            continue
        start = data.draw(st.integers(0, len(ed.lines)), label="start")
        end = data.draw(st.integers(start, min(len(ed.lines), start + 12)), label="end")
        at = data.draw(st.integers(0, max(0, len(donor) - 1)), label="from")
        take = data.draw(st.integers(0, 10), label="take")
        new = list(ed.lines[start:end])
        if data.draw(st.booleans(), label="keep some"):  # a block that keeps lines around its change
            new[len(new) // 2:len(new) // 2] = donor[at:at + take]
        else:
            new = donor[at:at + take]
        ed._splice(start, end, new)
        spans = ed.spans
        assert spans == sorted(spans) and all(a <= b for a, b in spans)
        assert all(b1 < a2 for (_, b1), (a2, _) in itertools.pairwise(spans))  # apart
    new_text = ed.text()
    whole = make_hunks_tracked("f.py", old, new_text, ed.origin)
    assert make_hunks_tracked("f.py", old, new_text, ed.origin, ed.spans) == whole
