"""Aider's parser-level test cases (Apache-2.0, ported as data: see the `_licence` note in
data/aider_parser_cases.json).  Each case holds Aider's result and ours; where they
differ, the case says why ours is the safer choice, and docs/edits.md lists it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.edits.parser import StreamingParser

DATA = json.loads((Path(__file__).parent / "data" / "aider_parser_cases.json").read_text())
CASES = DATA["cases"]


def test_licence_is_noted():
    assert "Apache License 2.0" in DATA["_licence"] and "Aider" in DATA["_licence"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_aider_parser_case(case):
    tree = set(case.get("tree", []))
    p = StreamingParser(exists=tree.__contains__)
    edits = p.feed(case["answer"]) + p.finish()
    expected = case.get("ours", case["aider"])
    assert [[e.path, e.search, e.replace] for e in edits] == expected
    if "kind" in case:
        assert all(e.kind == case["kind"] for e in edits)
    if "error" in case:
        assert any(case["error"] in e.message for e in p.errors), p.errors
    elif expected == case["aider"]:
        assert p.errors == []
    if "ours" in case and case["ours"] != case["aider"] and not isinstance(case["aider"], str):
        assert case.get("divergence"), "every divergence from Aider needs its reason"
