"""A diff's `\\ No newline at end of file` decides the file's final newline, as `git apply`
writes it; every other edit keeps the file's own (commit corpus: rich@0138b18950)."""

from __future__ import annotations

from pathlib import Path

from core.edits.parser import StreamingParser
from core.edits.proposal import apply_proposal, build_proposal
from core.workspace.files import Workspace


def _apply(root: Path, answer: str, accept_all: bool = True) -> None:
    ws = Workspace(root)
    parser = StreamingParser(exists=ws.exists)
    edits = parser.feed(answer) + parser.finish()
    proposal = build_proposal(ws, edits)
    ids = {h.id for f in proposal.files for h in f.hunks}
    if not accept_all:
        ids = {min(proposal.files[0].hunks, key=lambda h: h.old_start).id}
    apply_proposal(ws, proposal, ids, commit=False)


def _diff(old_eol: bool, new_eol: bool) -> str:
    minus = "-y = 2\n" + ("" if old_eol else "\\ No newline at end of file\n")
    plus = "+y = 3\n" + ("" if new_eol else "\\ No newline at end of file\n")
    return f"a.py\n```diff\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1\n{minus}{plus}```\n"


def test_a_diff_that_drops_the_final_newline_drops_it(tmp_path):
    (tmp_path / "a.py").write_bytes(b"x = 1\ny = 2\n")
    _apply(tmp_path, _diff(old_eol=True, new_eol=False))
    assert (tmp_path / "a.py").read_bytes() == b"x = 1\ny = 3"


def test_a_diff_that_adds_the_final_newline_adds_it(tmp_path):
    (tmp_path / "a.py").write_bytes(b"x = 1\ny = 2")
    _apply(tmp_path, _diff(old_eol=False, new_eol=True))
    assert (tmp_path / "a.py").read_bytes() == b"x = 1\ny = 3\n"


def test_without_the_marker_the_file_keeps_its_own(tmp_path):
    (tmp_path / "a.py").write_bytes(b"x = 1\ny = 2")
    _apply(tmp_path, _diff(old_eol=False, new_eol=False))
    assert (tmp_path / "a.py").read_bytes() == b"x = 1\ny = 3"


def test_a_subset_without_the_end_hunk_keeps_the_files_final_newline(tmp_path):
    body = "".join(f"v{i} = {i}\n" for i in range(12))
    (tmp_path / "a.py").write_bytes(body.encode())
    answer = ("a.py\n```diff\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-v0 = 0\n+v0 = 100\n v1 = 1\n"
              "@@ -11,2 +11,2 @@\n v10 = 10\n-v11 = 11\n+v11 = 111\n\\ No newline at end of file\n```\n")
    _apply(tmp_path, answer, accept_all=False)
    assert (tmp_path / "a.py").read_bytes() == body.replace("v0 = 0", "v0 = 100").encode()
