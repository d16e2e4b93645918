"""A duplicate check that did not run is said, never shown as clean, and never remembered.

"Not checked" (the indexer not started, not answering in time, failing) used to come back
as an empty list, the same as "no duplicates": the review showed the code clean and the
answer's statement memo kept that answer for every later pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core import check_worker
from core.answer import AnswerRun
from core.indexing.service import DuplicateCheckUnavailable, IndexService
from core.workstation import Workstation

ORIGINAL = '''"""Totals."""


def total_price(items, tax_rate):
    subtotal = 0
    for item in items:
        if item.quantity <= 0:
            continue
        subtotal += item.price * item.quantity
    taxed = subtotal * (1 + tax_rate)
    return round(taxed, 2)
'''

COPY = '''def order_total(lines, rate):
    acc = 0
    for line in lines:
        if line.quantity <= 0:
            continue
        acc += line.price * line.quantity
    taxed = acc * (1 + rate)
    return round(taxed, 2)
'''

ANSWER = ("I add an order total.\n\nshop/totals.py\n```python\n<<<<<<< SEARCH\n\"\"\"Totals.\"\"\"\n=======\n"
          f"\"\"\"Totals.\"\"\"\n\n\n{COPY}\n>>>>>>> REPLACE\n```\n")


@pytest.fixture
def station(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workstation:
    monkeypatch.setenv(check_worker.ENV, "0")
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "totals.py").write_text(ORIGINAL)
    station = Workstation(tmp_path)
    station.dups.build()
    station.dups_ready = True
    return station


def _answer(station: Workstation) -> AnswerRun:
    run = AnswerRun(station.workspace, "add an order total", "spark")
    run.feed(ANSWER, 10)
    run.finish("stop")
    run.rebuild_proposal()
    assert run.proposal is not None and run.hunks
    return run


def _kinds(station: Workstation, run: AnswerRun) -> list[tuple[str, str]]:
    return [(f.kind, f.message) for f in station.review(run).findings if f.kind in {"duplicate", "unchecked"}]


def test_the_copy_is_found_when_the_check_runs(station: Workstation) -> None:
    found = _kinds(station, _answer(station))
    assert [kind for kind, _ in found] == ["duplicate"]
    assert "order_total duplicates shop/totals.py" in found[0][1]


def test_a_check_that_did_not_run_is_said_and_asked_again(station: Workstation,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    run = _answer(station)
    real = station.dups.check_source

    def unavailable(*args: object, **kwargs: object) -> list:
        raise DuplicateCheckUnavailable("the indexer did not answer within 5 s")

    monkeypatch.setattr(station.dups, "check_source", unavailable)
    first = _kinds(station, run)
    said = "shop/totals.py: not checked for duplicates: the indexer did not answer within 5 s"
    assert first == [("unchecked", said)]
    monkeypatch.setattr(station.dups, "check_source", real)
    again = _kinds(station, run)  # the same answer, the same text: checked now, not "clean" from memory
    assert [kind for kind, _ in again] == ["duplicate"]


def test_before_the_index_is_ready_the_review_says_so(station: Workstation) -> None:
    station.dups_ready = False
    run = _answer(station)
    assert _kinds(station, run) == [
        ("unchecked", "shop/totals.py: not checked for duplicates yet (the duplicate index is being built)")]
    station.dups_ready = True  # ready: the file is reviewed again, with its check
    assert [kind for kind, _ in _kinds(station, run)] == ["duplicate"]


def test_a_service_that_is_not_running_refuses_instead_of_answering_clean(tmp_path: Path) -> None:
    service = IndexService(tmp_path, None)  # never started
    with pytest.raises(DuplicateCheckUnavailable, match="not running"):
        service.check_source(COPY, "shop/new.py")
