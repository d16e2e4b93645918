"""`spark slop` on this project's own tree: the heuristic rules must not cry wolf.

Our own rules (restating comments, len tests, repeated blocks and literals) are
heuristics, so they are the ones that can be wrong: on the project's code they must
report nothing. Ruff's rules are exact syntactic checks, and the size rules (long
functions, deep nesting, too many statements) are measurements: what they report on
code other engineers are still writing is true, so this test does not pin them.
"""

from __future__ import annotations

from pathlib import Path

from core.detectors.duplicates import iter_python_files
from core.detectors.slop import analyze_change

ROOT = Path(__file__).resolve().parents[3]
HEURISTIC_RULES = {"SLOP001", "SLOP002", "SLOP005", "SLOP006"}


def test_heuristic_rules_report_nothing_on_the_project_tree() -> None:
    wrong = []
    files = 0
    for package in ("core", "hwmodel", "tui", "themes"):
        for rel in iter_python_files(ROOT / package):
            text = (ROOT / package / rel).read_text(encoding="utf-8")
            report = analyze_change(f"{package}/{rel}", "", text)
            assert report.errors == []
            files += 1
            wrong += [
                f"{package}/{rel}:{f.line} {f.rule_id} {f.message}"
                for f in report.findings
                if f.rule_id in HEURISTIC_RULES
            ]
    assert files > 10
    assert wrong == []
