"""A review pass superseded by a newer rebuild: while the answer streams it reviews one file
at least (progress); once the answer has finished, the pass that supersedes it is the last,
so it gives way before its first file (the app's final rebuild waited for that file)."""

from __future__ import annotations

import pytest

from core import check_worker
from core.answer import AnswerRun
from core.workstation import ReviewSuperseded, Workstation

SOURCE = "def {name}(items):\n    out = []\n    for item in items:\n        out.append(item)\n    return out\n"


def _answer(names: list[str]) -> str:
    blocks = []
    for name in names:
        search = SOURCE.format(name=name).splitlines()[:2]
        replace = [search[0], "    out = list()"]
        blocks.append(f"pkg/{name}.py\n```python\n<<<<<<< SEARCH\n" + "\n".join(search) + "\n=======\n"
                      + "\n".join(replace) + "\n>>>>>>> REPLACE\n```\n")
    return "I will change two modules.\n\n" + "\n".join(blocks)


def _streaming(tmp_path) -> tuple[Workstation, AnswerRun]:
    """Two modules and an answer editing both, fed but not finished."""
    names = ["alpha", "beta"]
    (tmp_path / "pkg").mkdir()
    for name in names:
        (tmp_path / "pkg" / f"{name}.py").write_text(SOURCE.format(name=name))
    station = Workstation(tmp_path)
    run = AnswerRun(station.workspace, "change", "spark")
    run.feed(_answer(names), 60)
    return station, run


@pytest.mark.parametrize("finished, reviewed", [(False, 1), (True, 0)])
def test_a_superseded_pass_gives_way_before_its_first_file_only_once_the_answer_finished(
        tmp_path, monkeypatch, finished, reviewed):
    monkeypatch.setenv(check_worker.ENV, "0")
    station, run = _streaming(tmp_path)
    if finished:
        run.finish("stop")
    run.rebuild_proposal()
    assert len(run.proposal.files) == 2
    with pytest.raises(ReviewSuperseded):
        station.review(run, stale=lambda: True)
    assert station._review_count == reviewed
    assert station.review(run).findings is not None  # nothing newer: the pass completes


def test_a_pass_waiting_for_its_first_file_gives_way_when_the_answer_ends_meanwhile(tmp_path, monkeypatch):
    """While the answer streams the first file's slop is waited for (progress); when the
    answer finishes during that wait and a newer rebuild waits, the pass gives way at once
    (it waited for the worker's queue while the final rebuild waited for it)."""
    import threading
    from concurrent.futures import Future

    from core import workstation

    never: Future = Future()  # the worker never answers
    monkeypatch.setattr(check_worker, "analyze_change_off_thread", lambda *a, **k: never)
    monkeypatch.setattr(workstation.Workstation, "_drop_slop_jobs", staticmethod(lambda jobs: None))
    station, run = _streaming(tmp_path)
    run.rebuild_proposal()
    newer = threading.Event()
    outcome: list[BaseException | None] = []

    def review() -> None:
        try:
            station.review(run, stale=newer.is_set)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test reads what it was
            outcome.append(exc)

    thread = threading.Thread(target=review, daemon=True)
    thread.start()
    newer.set()  # a newer rebuild waits, but the answer streams: the first file is waited for
    thread.join(0.3)
    assert thread.is_alive() and not outcome
    run.finish("stop")
    thread.join(5)
    assert not thread.is_alive() and isinstance(outcome[0], ReviewSuperseded)
    assert station._review_count == 0
