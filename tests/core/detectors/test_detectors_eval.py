"""Quality on real code we did not write: a small version of the benchmark's stdlib set."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import dups_eval

N = 40


@pytest.fixture(scope="module")
def built() -> tuple[list[Path], list[dups_eval.Case]]:
    return dups_eval.build_cases(N)


def test_eval_cases_are_what_they_claim(built) -> None:
    _indexed, cases = built
    kinds = [c.kind for c in cases]
    assert {k: kinds.count(k) for k in set(kinds)} == {
        "type1": N, "type2": N, "type3": N, "negative": N}
    for case in cases:
        compile(case.source, "<case>", "exec")  # every generated module is valid Python


def test_recall_per_type_and_precision_on_stdlib_copies(built) -> None:
    scores = dups_eval.run(N, built)
    assert scores.recall["type1"] >= 0.97
    assert scores.recall["type2"] >= 0.95
    assert scores.recall["type3"] >= 0.85
    assert scores.precision >= 0.85
    assert scores.negatives_flagged <= 0.05
    assert scores.label_accuracy >= 0.95
