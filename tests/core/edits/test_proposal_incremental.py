"""ProposalBuilder resumes a file's build from its earlier edits: after any sequence of
blocks added one at a time (the stream's rebuilds), the proposal equals the one built from
scratch from the same edits, on real Python files, good edits and bad ones alike."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.edits.parser import Edit
from core.edits.proposal import Proposal, ProposalBuilder, build_proposal
from core.workspace.files import Workspace
from tests.core.detectors.real_code import SITE_PACKAGES, read_text, real_python_files


def _files() -> list[Path]:
    return real_python_files((SITE_PACKAGES,), 2_000, 30_000)


def _plain(proposal: Proposal) -> tuple:
    files = [(f.path, f.old_text, f.new_text, [dataclasses.astuple(h) for h in f.hunks], f.is_new,
              f.base_fingerprint, f.deletion_heavy, f.final_newline) for f in proposal.files]
    return files, [(e.path, e.message) for e in proposal.errors]


def _edit(data: st.DataObject, path: str, lines: list[str], n: int) -> Edit:
    """A block over real lines of the file: replaced, extended, deleted, or one that does
    not match (a line changed), sometimes a whole-file block or a creation."""
    kind = data.draw(st.sampled_from(["change", "add", "delete", "miss", "dup", "whole"]), label="kind")
    if kind == "whole":
        return Edit(path, "", "".join(lines[: max(1, len(lines) // 3)]), "whole_file")
    a = data.draw(st.integers(0, max(0, len(lines) - 1)), label="a")
    b = min(len(lines), a + data.draw(st.integers(1, 6), label="span"))
    search = lines[a:b]
    if kind == "change":
        replace = [f"value_{n} = {n}  # block {n}\n", *search[1:]]
    elif kind == "add":
        replace = [*search, f"def helper_{n}(x):\n", f"    return x + {n}\n"]
    elif kind == "delete":
        replace = []
    elif kind == "miss":
        search = [*search[:-1], f"this line is not in the file {n}\n"]
        replace = ["x = 1\n"]
    else:  # the same block again: applied already, or its text moved
        replace = search
    return Edit(path, "".join(search), "".join(replace), "search_replace")


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_incremental_rebuild_equals_from_scratch(tmp_path_factory: pytest.TempPathFactory,
                                                 data: st.DataObject) -> None:
    files = _files()
    if not files:
        pytest.skip("no site-packages Python files to test on")
    root = tmp_path_factory.mktemp("ws")
    texts = {}
    for name in ("a.py", "b.py"):
        texts[name] = read_text(data.draw(st.sampled_from(files), label=name))
        (root / name).write_text(texts[name])
    ws = Workspace(root)
    builder = ProposalBuilder(ws)
    edits: list[Edit] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(data.draw(st.integers(1, 8), label="blocks")):
            path = data.draw(st.sampled_from(["a.py", "b.py", "new.py"]), label="path")
            lines = texts.get(path, "").splitlines(keepends=True)
            edits.append(_edit(data, path, lines, n) if lines else Edit(path, "", f"N = {n}\n", "search_replace"))
            assert _plain(builder.build(list(edits))) == _plain(build_proposal(ws, list(edits)))


def test_a_file_with_one_more_block_matches_only_that_block(tmp_path: Path, monkeypatch) -> None:
    src = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(40))
    (tmp_path / "m.py").write_text(src)
    ws = Workspace(tmp_path)
    builder = ProposalBuilder(ws)
    edits = [Edit("m.py", f"    return {i}\n", f"    return {i * 10}\n", "search_replace") for i in (3, 7)]
    builder.build(list(edits))
    from core.edits import proposal as mod

    applied: list[str] = []
    real = mod.FileEditor.apply

    def counting(self, edit):
        applied.append(edit.search)
        return real(self, edit)

    monkeypatch.setattr(mod.FileEditor, "apply", counting)
    edits.append(Edit("m.py", "    return 20\n", "    return 200\n", "search_replace"))
    got = builder.build(list(edits))
    assert applied == ["    return 20\n"]  # the two earlier blocks were not matched again
    assert _plain(got) == _plain(build_proposal(ws, list(edits)))
