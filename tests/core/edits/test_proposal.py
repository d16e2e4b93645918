"""Proposals: composing edits, errors that spare other edits, staleness, applying."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.edits.parser import Edit, parse_edits
from core.edits.proposal import apply_proposal, build_proposal
from core.workspace.files import Workspace

SRC = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(12))


def _ws(tmp_path: Path) -> Workspace:
    (tmp_path / "m.py").write_text(SRC)
    (tmp_path / "other.py").write_text("A = 1\n")
    return Workspace(tmp_path)


def _sr(path, old, new):
    return Edit(path, old, new, "search_replace")


def test_edits_to_one_file_compose_and_bad_edit_spares_the_rest(tmp_path):
    ws = _ws(tmp_path)
    edits = [
        _sr("m.py", "    return 1\n", "    return 100\n"),
        _sr("m.py", "    return 100\n", "    return 101\n"),  # builds on the previous edit
        _sr("m.py", "def nothing_like_this(a, b, c):\n", "x\n"),
        _sr("other.py", "A = 1\n", "A = 2\n"),
        _sr("../escape.py", "", "boom\n"),
        Edit("new/pkg.py", "", "N = 1\n", "whole_file"),
    ]
    prop = build_proposal(ws, edits)
    # m.py had one edit that cannot be placed: it gets none of its three (no half edits)
    assert [f.path for f in prop.files] == ["other.py", "new/pkg.py"]
    assert sorted({e.path for e in prop.errors}) == ["../escape.py", "m.py"]
    msgs = [e.message for e in prop.errors if e.path == "m.py"]
    assert "m.py: SEARCH text not found" in msgs[0] and "other 2 edit(s)" in msgs[1]
    ok = build_proposal(ws, edits[:2])  # the two that compose
    assert "    return 101\n" in ok.file("m.py").new_text
    assert prop.file("new/pkg.py").is_new
    assert prop.file("new/pkg.py").base_fingerprint == "absent"


def test_search_in_missing_file_is_a_clear_error(tmp_path):
    ws = _ws(tmp_path)
    prop = build_proposal(ws, [_sr("nope.py", "x\n", "y\n")])
    assert prop.files == [] and "does not exist" in prop.errors[0].message


@st.composite
def _edit_sets(draw):
    picks = draw(st.lists(st.integers(0, 11), min_size=1, max_size=6, unique=True))
    return [_sr("m.py", f"    return {i}\n", f"    return {i} * 2\n    # changed {i}\n")
            for i in picks]


@given(_edit_sets(), st.data())
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_subsets_through_the_workspace(tmp_path, edits, data):
    ws = _ws(tmp_path)
    prop = build_proposal(ws, edits)
    hunks = prop.hunks
    subset = set(data.draw(st.lists(st.sampled_from([h.id for h in hunks]), unique=True)))
    expected = SRC
    chosen = {int(h.old_lines[0].split()[-1]) for h in hunks if h.id in subset}
    for i in chosen:
        expected = expected.replace(f"    return {i}\n",
                                    f"    return {i} * 2\n    # changed {i}\n")
    assert prop.result_text("m.py", subset) == expected
    res = apply_proposal(ws, prop, subset, commit=False)
    assert (tmp_path / "m.py").read_text() == expected
    assert res.refused == []
    assert res.written == (["m.py"] if subset else [])


def test_check_reports_fresh_rebased_stale(tmp_path):
    ws = _ws(tmp_path)
    prop = build_proposal(ws, [_sr("m.py", "    return 5\n", "    return 55\n")])
    assert prop.status(ws) == {"m.py": "fresh"}
    (tmp_path / "m.py").write_text("# user header\n" + SRC)
    assert prop.status(ws) == {"m.py": "rebased"} and not prop.is_stale(ws)
    (tmp_path / "m.py").write_text(SRC.replace("    return 5\n", "    return -5\n"))
    assert prop.status(ws) == {"m.py": "stale"} and prop.is_stale(ws)


def test_apply_rebases_onto_unseen_change_and_keeps_it(tmp_path):
    ws = _ws(tmp_path)
    prop = build_proposal(ws, [_sr("m.py", "    return 5\n", "    return 55\n")])
    (tmp_path / "m.py").write_text("# user header\n" + SRC)
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    assert res.written == ["m.py"] and res.refused == []
    text = (tmp_path / "m.py").read_text()
    assert text.startswith("# user header\n") and "    return 55\n" in text


def test_apply_refuses_a_stale_file_and_writes_the_others(tmp_path):
    ws = _ws(tmp_path)
    prop = build_proposal(ws, [_sr("m.py", "    return 5\n", "    return 55\n"),
                               _sr("other.py", "A = 1\n", "A = 2\n")])
    user = SRC.replace("    return 5\n", "    return 'mine'\n")
    (tmp_path / "m.py").write_text(user)
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    assert res.written == ["other.py"]
    assert len(res.refused) == 1 and "m.py changed on disk" in res.refused[0].message
    assert (tmp_path / "m.py").read_text() == user  # the unseen change is never overwritten
    assert (tmp_path / "other.py").read_text() == "A = 2\n"


def test_new_file_created_meanwhile_is_not_overwritten(tmp_path):
    ws = _ws(tmp_path)
    prop = build_proposal(ws, [Edit("n.py", "", "X = 1\n", "whole_file")])
    (tmp_path / "n.py").write_text("users own\n")
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    assert res.written == [] and (tmp_path / "n.py").read_text() == "users own\n"


def test_reindented_replacement(tmp_path):
    (tmp_path / "c.py").write_text("class A:\n    def m(self):\n        return 1\n")
    ws = Workspace(tmp_path)
    text = ("c.py\n<<<<<<< SEARCH\ndef m(self):\n    return 1\n=======\n"
            "def m(self):\n    return 2\n>>>>>>> REPLACE\n")
    prop = build_proposal(ws, parse_edits(text))
    assert prop.file("c.py").new_text == "class A:\n    def m(self):\n        return 2\n"


def test_hunk_status_marks_single_hunks(tmp_path):
    ws = _ws(tmp_path)
    prop = build_proposal(ws, [_sr("m.py", "    return 2\n", "    return 22\n"),
                               _sr("m.py", "    return 9\n", "    return 99\n")])
    h2, h9 = prop.hunks
    assert prop.hunk_status(ws) == {h2.id: "fresh", h9.id: "fresh"}
    (tmp_path / "m.py").write_text(SRC.replace("    return 9\n", "    return 'user'\n"))
    assert prop.hunk_status(ws) == {h2.id: "rebased", h9.id: "stale"}
    # accepting only the hunk that still places works; the stale one would be refused
    res = apply_proposal(ws, prop, {h2.id}, commit=False)
    assert res.written == ["m.py"]
    assert "    return 22\n" in (tmp_path / "m.py").read_text()
    assert "    return 'user'\n" in (tmp_path / "m.py").read_text()
