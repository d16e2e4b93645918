"""Aider's own edit tests (Apache-2.0), ported as data: tests/core/edits/data/aider_cases.json.

Each case holds the files, the edit (a SEARCH/REPLACE pair for Aider's
`replace_most_similar_chunk`, or a whole answer), Aider's expected files and what we do:
"same" (our files equal Aider's) or "refused" (nothing written, with a reason: each such
divergence is listed in docs/edits.md as a chosen, safer refusal).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.edits.match import MatchError
from core.edits.parser import Edit, parse_edits
from core.edits.proposal import FileEditor, apply_proposal, build_proposal
from core.workspace.files import Workspace

DATA = json.loads((Path(__file__).parent / "data" / "aider_cases.json").read_text())
CASES = DATA["cases"]


def test_licence_and_source_are_recorded() -> None:
    assert "Apache-2.0" in DATA["license"] and "Aider-AI/aider" in DATA["source"]
    assert {c["ours"] for c in CASES} <= {"same", "refused"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_aider_case(case: dict, tmp_path: Path) -> None:
    if case["kind"] == "replace":
        (path, text), = case["files"].items()
        ed = FileEditor(path, text)
        try:
            ed.apply(Edit(path, case["search"], case["replace"], "search_replace"))
            got: dict[str, str] | None = {path: ed.text()}
        except MatchError as exc:
            got = None
            assert path in str(exc)  # refused with a reason naming the file
        refused = got is None
    else:
        for path, text in case["files"].items():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
        ws = Workspace(tmp_path)
        prop = build_proposal(ws, parse_edits(case["answer"]))
        res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
        refused = bool(prop.errors or res.refused) and not res.written
        got = {p: (tmp_path / p).read_text() for p in case["aider_expected"]
               if (tmp_path / p).exists()}
    if case["ours"] == "same":
        assert not refused and got == case["aider_expected"]
    else:
        assert refused, case["note"]
        if case["kind"] == "answer":  # nothing written: the files are as they were
            assert got == {p: t for p, t in case["files"].items()
                           if p in case["aider_expected"]}
