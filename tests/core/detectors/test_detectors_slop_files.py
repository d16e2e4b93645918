"""`analyze_change` on a whole file of fast-model slop and on a clean idiomatic file."""

from __future__ import annotations

from pathlib import Path

from core.detectors.slop import analyze_change

DATA = Path(__file__).parent / "data"


def test_hostile_model_code_hits_every_kind_of_slop() -> None:
    text = (DATA / "slop_hostile.py.txt").read_text()
    report = analyze_change("hostile.py", "", text)
    found = {f.rule_id for f in report.findings}
    assert {"PERF401", "E712", "F841", "S110", "SLOP002", "SIM103", "RET505", "SLOP004",
            "SLOP006", "SLOP001", "SIM118", "E711", "E713", "SIM110", "SIM210",
            "SLOP005"} <= found, found
    assert not report.errors


def test_clean_idiomatic_code_has_no_findings() -> None:
    text = (DATA / "slop_clean.py.txt").read_text()
    compile(text, "clean.py", "exec")
    report = analyze_change("clean.py", "", text)
    assert [(f.rule_id, f.line) for f in report.findings] == []
    assert not report.errors
