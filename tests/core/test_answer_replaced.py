"""An answer replaced on screen: its checks still queued are dropped, the shown one's never.

`Workstation.review` leaves an answer's slop jobs (check worker) and duplicate checks (the
dup pool, answered by the check worker's copy of the index) running for its next pass. A
replaced answer gets no next pass (its final review gives way, 83dd966), so
`answer_shown(new)` drops what the replaced one still has queued. With real check worker
children, stopped so that every job is still queued: the replaced answer's slop jobs are
cancelled and its duplicate checks cancelled (queued in the pool) or dropped in the child
(sent there); the shown answer's jobs are all answered, as computed here; a pass of the
replaced answer waiting for a dropped job gives way instead of checking in its own thread.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import CancelledError
from contextlib import contextmanager
from pathlib import Path

import pytest

from core import check_worker
from core.answer import AnswerRun
from core.check_worker import CheckWorker
from core.detectors.slop import analyze_change
from core.workstation import ReviewSuperseded, Workstation, _added_lines, _dropped, _new_ranges

SOURCE = ("import os\n\n\ndef keep_{n}(x):\n    return x\n\n\n"
          "def gather_{n}(rows):\n    found = []\n    for row in rows:\n        if row:\n"
          "            found.append(row)\n    return found\n")
BODY = ("def load_{n}(items: list):\n    # return the items\n    result = []\n"
        "    for item in items:\n        if item:\n            result.append(item)\n"
        "    if len(items) == 0:\n        return []\n    return result\n")


def _answer(station: Workstation, files: range) -> AnswerRun:
    blocks = [f"pkg/m{n}.py\n```python\n<<<<<<< SEARCH\ndef keep_{n}(x):\n=======\n" + BODY.format(n=n)
              + f"\ndef keep_{n}(x):\n>>>>>>> REPLACE\n```\n" for n in files]
    run = AnswerRun(station.workspace, "tidy", "spark")
    run.feed("\n".join(blocks), 40)
    run.finish("stop")
    run.rebuild_proposal()
    assert run.proposal is not None and len(run.proposal.files) == len(files)
    return run


def _eventually(condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


@contextmanager
def _stopped(pids: list[int]):
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


@pytest.fixture
def station(tmp_path: Path, monkeypatch):
    """Nine modules, their duplicate index here and in a check worker's child of its own."""
    monkeypatch.delenv(check_worker.ENV, raising=False)
    (tmp_path / "pkg").mkdir()
    for n in range(9):
        (tmp_path / "pkg" / f"m{n}.py").write_text(SOURCE.format(n=n))
    station = Workstation(tmp_path)
    station.dups.build()
    dups = CheckWorker()
    assert dups.dups_load(str(tmp_path)).result(timeout=120) > 0
    station._dups_child = (dups, dups.pid)
    station.dups_ready = True
    pool = check_worker.shared()
    if pool is None:
        pytest.skip("no check worker here")
    pool.warm()
    yield station, dups, pool
    dups.close()


def _queued(station: Workstation, run: AnswerRun) -> tuple[list, list]:
    """The pass of `run` gives way before its first file (the answer ended and a newer
    rebuild waits): its slop jobs and duplicate checks are left queued, as in the app."""
    with pytest.raises(ReviewSuperseded):
        station.review(run, stale=lambda: True)
    return list(station._slop_jobs[run.request_id].values()), list(station._dup_queued[run.request_id])


def test_the_replaced_answers_queued_checks_go_and_the_shown_ones_are_answered(station, monkeypatch):
    station, dups, pool = station
    from core import workstation

    # a check the child has not answered in 5 s is dropped there anyway: here only the
    # answer's replacement may drop it
    monkeypatch.setattr(workstation, "CHILD_CHECK_WAIT_S", 120.0)
    workers = [w._proc.pid for w in pool.workers]
    with _stopped([*workers, dups.pid]):
        replaced = _answer(station, range(6))
        station.answer_shown(replaced)
        gone_slop, gone_dups = _queued(station, replaced)  # 6 checks: the pool runs 4, 2 wait
        assert len(gone_slop) == len(gone_dups) == 6
        assert _eventually(lambda: sum(f.running() for f in gone_dups) == 4)
        station.answer_shown(replaced)  # shown again: idempotent, nothing dropped
        assert not any(f.done() for f in [*gone_slop, *gone_dups])
        shown = _answer(station, range(6, 9))
        station.answer_shown(shown)  # `replaced` leaves the screen
        assert sum(f.cancelled() for f in gone_dups) == 2  # at once
        assert _eventually(lambda: all(job.cancelled() for job in gone_slop))  # (a thread drops them)  # still in the pool's queue
        for check in gone_dups:  # the others dropped at the child: not checked here instead
            if not check.cancelled():
                assert isinstance(check.exception(timeout=30), CancelledError)
            assert _dropped(check)
        assert replaced.request_id not in station._slop_jobs and replaced.request_id not in station._dup_queued
        kept_slop, kept_dups = _queued(station, shown)
        assert len(kept_slop) == len(kept_dups) == 3
        assert not any(f.done() for f in [*kept_slop, *kept_dups])
    assert shown.proposal is not None
    for fp, job, check in zip(shown.proposal.files, kept_slop, kept_dups, strict=True):
        added = _added_lines(_new_ranges(fp))
        assert job.result(timeout=60) == analyze_change(fp.path, fp.new_text, fp.new_text, added=set(added))
        here = station.dups.check_source(fp.new_text, fp.path, lines=added)
        assert check.result(timeout=60) == here and here  # each file's new function has twins
    assert all(not f.cancelled() for f in kept_slop)


def test_a_pass_of_the_replaced_answer_waiting_for_a_dropped_job_gives_way(station, monkeypatch):
    station, _dups, pool = station
    from core.detectors import slop

    in_thread: list[str] = []  # slop computed in the review's thread instead of the child
    monkeypatch.setattr(check_worker, "analyze_change",
                        lambda path, *a, **k: in_thread.append(path) or slop.analyze_change(path, *a, **k))
    outcome: list[object] = []
    with _stopped([w._proc.pid for w in pool.workers]):
        run = _answer(station, range(2))
        station.answer_shown(run)

        def review() -> None:
            try:
                outcome.append(station.review(run, stale=lambda: False))
            except ReviewSuperseded as exc:
                outcome.append(exc)

        thread = threading.Thread(target=review)
        thread.start()
        thread.join(0.3)
        assert thread.is_alive() and not outcome  # waiting for its first file's slop
        station.answer_shown(_answer(station, range(4, 5)))
        thread.join(30)
    assert len(outcome) == 1 and isinstance(outcome[0], ReviewSuperseded)
    assert in_thread == []
    # shown again, it is reviewed in full: nothing of it stays dropped
    station.answer_shown(run)
    assert station.review(run).findings is not None
