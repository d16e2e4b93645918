"""Slop in the worker process (core/check_worker.py) is slop in-process.

The review sends each file's slop analysis to a child interpreter so its CPU does not hold
the app's GIL. The properties: the child's report equals `analyze_change` run here, on
real files with random added lines; a child that dies, or never starts, costs nothing but
time (the caller's thread computes the same report); a dropped job is skipped.
"""

from __future__ import annotations

import random
from concurrent.futures import Future

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import check_worker
from core.check_worker import CheckWorker, CheckWorkerError, report_of
from core.detectors.slop import analyze_change
from tests.core.detectors.test_slop_scope import _added_lines, _real_file

SLOPPY = '''import os


def load(items):
    # loop over the items
    out = []
    for item in items:
        if len(items) == 0:
            pass
        out.append(item)
    return out
'''


def _eventually(condition, timeout: float = 20.0) -> bool:
    """Whether `condition()` holds within `timeout` s (the sender is a thread: a loaded
    box may take a while to run it)."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture(scope="module")
def worker():
    w = CheckWorker()
    yield w
    w.close()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.data())
def test_the_child_reports_what_analyze_change_reports(worker, data):
    name, text = _real_file(data)
    added = _added_lines(data, text.count("\n") + 1)
    here = analyze_change(name, text, text, added=added)
    there = worker.analyze(name, text, added).result(timeout=60)
    assert there == here


def test_findings_on_sloppy_code_and_several_jobs_in_order(worker):
    added = set(range(1, SLOPPY.count("\n") + 1))
    jobs = [worker.analyze(f"m{i}.py", SLOPPY + "\n" * i, added) for i in range(4)]
    reports = [job.result(timeout=60) for job in jobs]
    assert reports[0].findings and reports[0] == analyze_change("m0.py", SLOPPY, SLOPPY, added=added)
    assert [r.path for r in reports] == ["m0.py", "m1.py", "m2.py", "m3.py"]


def test_a_dropped_job_is_cancelled_and_the_rest_answered(worker):
    added = {5, 6, 7}
    jobs = [worker.analyze("d.py", SLOPPY + f"# {i}\n", added) for i in range(6)]
    worker.drop(jobs[1:4])
    assert all(job.cancelled() for job in jobs[1:4])
    assert all(job.result(timeout=60).path == "d.py" for job in (jobs[0], *jobs[4:]))


def test_a_dead_child_fails_pending_jobs_and_the_caller_computes_them(monkeypatch):
    import os
    import signal

    w = CheckWorker()
    try:
        w.warm()
        assert w._proc is not None
        os.kill(w._proc.pid, signal.SIGSTOP)  # the job waits in the socket, unanswered
        added = set(range(1, 12))
        job = w.analyze("x.py", SLOPPY, added)
        assert not job.done()
        w._proc.kill()
        w._proc.wait()
        with pytest.raises(CheckWorkerError):
            job.result(timeout=30)
        assert report_of(job, "x.py", SLOPPY, added) == analyze_change("x.py", SLOPPY, SLOPPY, added=added)
        # the next job starts a new child
        again = w.analyze("x.py", SLOPPY, added).result(timeout=60)
        assert again.findings and again == report_of(job, "x.py", SLOPPY, added)
    finally:
        w.close()


def test_no_worker_and_a_child_that_cannot_start(monkeypatch):
    monkeypatch.setenv(check_worker.ENV, "0")
    assert check_worker.shared() is None
    assert check_worker.analyze_change_off_thread("x.py", SLOPPY, {5}) is None
    assert report_of(None, "x.py", SLOPPY, {5}) == analyze_change("x.py", SLOPPY, SLOPPY, added={5})

    def broken() -> tuple:
        raise CheckWorkerError("cannot start: no interpreter")

    monkeypatch.setattr(check_worker, "_spawn_child", broken)
    w = CheckWorker()
    jobs = [w.analyze("x.py", SLOPPY, {5}) for _ in range(check_worker.MAX_RESTARTS + 2)]
    assert all(isinstance(job.exception(), CheckWorkerError) for job in jobs)
    assert w._starts == check_worker.MAX_RESTARTS  # then it stops trying


def test_a_closed_worker_answers_no_more():
    w = CheckWorker()
    w.close()
    job: Future = w.analyze("x.py", SLOPPY, {random.randint(1, 5)})
    assert isinstance(job.exception(), CheckWorkerError)


def test_a_cancelled_job_is_computed_by_the_caller():
    job: Future = Future()
    job.cancel()
    assert report_of(job, "x.py", SLOPPY, {5, 6}) == analyze_change("x.py", SLOPPY, SLOPPY, added={5, 6})


def test_a_review_finds_the_same_with_and_without_the_worker(tmp_path, monkeypatch):
    """Workstation.review: slop findings (and every other) are the same computed in the
    child as in the review's thread, also when two answers are reviewed at once."""
    import threading

    from core.answer import AnswerRun
    from core.workstation import Workstation

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("import os\n\n\ndef keep(x):\n    return x\n")
    answers = []
    for n in range(2):
        body = (f"def load{n}(items: list):\n    # return the items\n    result = []\n"
                "    for item in items:\n        result.append(item)\n    if len(items) == 0:\n"
                "        return []\n    return result\n")
        answers.append("pkg/mod.py\n```python\n<<<<<<< SEARCH\ndef keep(x):\n=======\n" + body
                       + "\ndef keep(x):\n>>>>>>> REPLACE\n```\n")

    def reviews() -> list[list[tuple]]:
        station = Workstation(tmp_path)
        runs = []
        for text in answers:
            run = AnswerRun(station.workspace, "tidy", "spark")
            run.feed(text, 10)
            run.finish("stop")
            run.rebuild_proposal()
            runs.append(run)
        out: list[list[tuple]] = [[], []]

        def review(i: int) -> None:
            out[i] = [(f.severity, f.kind, f.message, f.hunk_id) for f in station.review(runs[i]).findings]

        threads = [threading.Thread(target=review, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    with_worker = reviews()
    monkeypatch.setenv(check_worker.ENV, "0")
    assert with_worker == reviews()
    assert all(any(kind == "slop" for _, kind, _, _ in found) for found in with_worker)


def test_a_pool_spreads_jobs_over_its_workers_and_drops_across_them():
    pool = check_worker.CheckPool(2)
    try:
        pool.warm()
        assert len(pool.pids) == 2
        added = set(range(1, 12))
        sent = {id(w): 0 for w in pool.workers}
        for w in pool.workers:
            real = w.analyze

            def counted(*args, w=w, real=real, **kwargs):
                sent[id(w)] += 1
                return real(*args, **kwargs)

            w.analyze = counted  # type: ignore[method-assign]
        jobs = [pool.analyze(f"p{i}.py", SLOPPY + f"# {i}\n", added) for i in range(8)]
        assert sum(sent.values()) == 8 and all(sent.values())  # both children got work
        pool.drop(jobs[6:])
        assert all(job.cancelled() or job.done() for job in jobs[6:])
        for i, job in enumerate(jobs[:6]):
            text = SLOPPY + f"# {i}\n"
            assert job.result(timeout=60) == analyze_change(f"p{i}.py", text, text, added=added)
    finally:
        pool.close()


def test_a_review_waiting_for_slop_gives_way_to_a_newer_rebuild():
    from core.workstation import ReviewSuperseded, Workstation

    pending: Future = Future()
    with pytest.raises(ReviewSuperseded):
        Workstation._wait_for(pending, stale=lambda: True)
    answers = iter([False, False, True])
    with pytest.raises(ReviewSuperseded):  # asked while it waits, not only before
        Workstation._wait_for(pending, stale=lambda: next(answers))
    done: Future = Future()
    done.set_result(None)
    Workstation._wait_for(done, stale=lambda: True)  # a finished job: nothing to give way to


def test_jobs_wait_in_the_parent_and_a_submit_never_blocks_on_a_busy_child():
    """A stopped child takes MAX_IN_FLIGHT jobs; the rest wait here (a submit returns at
    once even when their texts are far more than the socket holds), dropped ones are
    never sent, and once the child goes on every job left is answered as in-process."""
    import os
    import signal
    import time

    w = CheckWorker()
    try:
        w.warm()
        assert w._proc is not None
        os.kill(w._proc.pid, signal.SIGSTOP)
        big = SLOPPY + "\n".join(f"# padding line {i} " + "x" * 60 for i in range(4000)) + "\n"  # ~300 kB
        added = set(range(1, 12))
        t0 = time.perf_counter()
        jobs = [w.analyze(f"b{i}.py", big + f"# {i}\n", added) for i in range(8)]
        assert time.perf_counter() - t0 < 5  # 2.4 MB: a blocking send would wait for the stopped child
        time.sleep(0.2)
        assert len(w._sent) <= check_worker.MAX_IN_FLIGHT and len(w._outbox) >= 8 - check_worker.MAX_IN_FLIGHT
        w.drop(jobs[2:6])
        assert all(job.cancelled() for job in jobs[2:6]) and w.pending() == 4
        assert not any(item[0] in {2, 3, 4, 5} for item in w._outbox)  # never sent
        os.kill(w._proc.pid, signal.SIGCONT)
        for i in (0, 1, 6, 7):
            text = big + f"# {i}\n"
            assert jobs[i].result(timeout=60) == analyze_change(f"b{i}.py", text, text, added=added)
        assert w.pending() == 0 and not w._sent and not w._outbox
    finally:
        if w._proc is not None:
            os.kill(w._proc.pid, signal.SIGCONT)
        w.close()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.integers(0, 5), st.sets(st.integers(0, 30), max_size=4)), max_size=25))
def test_any_sequence_of_submits_and_drops_answers_every_job_kept(worker, ops):
    """Submits (an int: which text) and drops (a set: which earlier jobs) in any order:
    every job not dropped gets exactly the in-process report; nothing stays pending."""
    jobs: list[tuple[int, Future]] = []
    dropped: set[int] = set()
    added = {5, 6, 7}
    for op in ops:
        if isinstance(op, int):
            jobs.append((op, worker.analyze(f"s{op}.py", SLOPPY + f"# {op}\n", added)))
        else:
            gone = [n for n in op if n < len(jobs)]
            worker.drop([jobs[n][1] for n in gone])
            dropped.update(gone)
    for n, (which, job) in enumerate(jobs):
        if n in dropped:
            assert job.cancelled()
            continue
        text = SLOPPY + f"# {which}\n"
        assert job.result(timeout=60) == analyze_change(f"s{which}.py", text, text, added=added)
    assert worker.pending() == 0


def test_slop_jobs_go_before_syntax_jobs_waiting_in_the_parent():
    """The verifier's syntax checks wait for every slop job submitted meanwhile, and go to
    the child only when it is idle (a review waits for its slop; the verifier's report
    comes after the answer is shown): one syntax job delays a slop job by one job at most."""
    import os
    import signal
    import time

    from core.verify.checks import check_syntax

    w = CheckWorker()
    try:
        w.warm()
        assert w._proc is not None
        os.kill(w._proc.pid, signal.SIGSTOP)
        order: list[str] = []
        jobs = {}
        for name in ("syntax0", "syntax1", "slop0", "slop1", "syntax2"):
            job = (w.syntax(f"{name}.py", SLOPPY) if name.startswith("syntax")
                   else w.analyze(f"{name}.py", SLOPPY, {5}))
            job.add_done_callback(lambda _f, name=name: order.append(name))
            jobs[name] = job
            while name == "syntax0" and len(w._sent) < 1:  # at the idle child: the rest wait here
                time.sleep(0.01)
        assert _eventually(lambda: len(w._sent) == 2)  # syntax0 and slop0 (the sender thread sends)
        assert [item[1][0] for item in w._later] == ["syntax", "syntax"]
        os.kill(w._proc.pid, signal.SIGCONT)
        for name, job in jobs.items():
            got = job.result(timeout=60)
            assert got == (check_syntax(f"{name}.py", SLOPPY) if name.startswith("syntax")
                           else analyze_change(f"{name}.py", SLOPPY, SLOPPY, added={5}))
        assert order == ["syntax0", "slop0", "slop1", "syntax1", "syntax2"]
    finally:
        if w._proc is not None:
            os.kill(w._proc.pid, signal.SIGCONT)
        w.close()


def test_the_duplicate_index_has_a_child_of_its_own_that_yields_the_cpu():
    import os

    pool = check_worker.CheckPool(1)
    try:
        pool.warm()
        assert pool.dups._proc is None  # started by its first job, not with the slop children
        pool.dups.warm()
        assert pool.dups._proc is not None and pool.dups._proc.pid not in {w._proc.pid for w in pool.workers}
        assert set(pool.pids) == {pool.workers[0]._proc.pid, pool.dups._proc.pid}
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, pool.dups._proc.pid) == min(19, mine + check_worker.DUPS_NICE)
        assert os.getpriority(os.PRIO_PROCESS, pool.workers[0]._proc.pid) == mine
    finally:
        pool.close()


def test_an_ended_answers_jobs_all_go_to_the_child_at_once():
    """Jobs of an answer that has ended are never dropped by a newer pass: they go past
    MAX_IN_FLIGHT (the child starts every one's ruff while it works) and are answered."""
    import os
    import signal
    import time

    w = CheckWorker()
    try:
        w.warm()
        assert w._proc is not None
        os.kill(w._proc.pid, signal.SIGSTOP)
        added = set(range(1, 12))
        early = [w.analyze(f"e{i}.py", SLOPPY + f"# e{i}\n", added) for i in range(3)]
        assert _eventually(lambda: len(w._sent) == check_worker.MAX_IN_FLIGHT)
        time.sleep(0.1)
        assert len(w._sent) == check_worker.MAX_IN_FLIGHT and len(w._outbox) == 1
        final = [w.analyze(f"f{i}.py", SLOPPY + f"# f{i}\n", added, final=True) for i in range(4)]
        assert _eventually(lambda: len(w._sent) == 7)
        assert not w._outbox and not w._final
        os.kill(w._proc.pid, signal.SIGCONT)
        for name, job in [*((f"e{i}", j) for i, j in enumerate(early)), *((f"f{i}", j) for i, j in enumerate(final))]:
            text = SLOPPY + f"# {name}\n"
            assert job.result(timeout=60) == analyze_change(f"{name}.py", text, text, added=added)
    finally:
        if w._proc is not None:
            os.kill(w._proc.pid, signal.SIGCONT)
        w.close()


def test_a_stuck_child_is_stopped_and_the_caller_computes_the_report():
    """A child that does not answer (stopped here) within the wait: the caller gets the
    in-process report (not a clean one, not a hang), the child is stopped, and the next
    job goes to a new child."""
    import os
    import signal

    w = CheckWorker()
    try:
        w.warm()
        stuck = w._proc
        assert stuck is not None
        os.kill(stuck.pid, signal.SIGSTOP)
        added = set(range(1, 12))
        job = w.analyze("x.py", SLOPPY, added)
        report = report_of(job, "x.py", SLOPPY, added, wait_s=0.3)
        assert report == analyze_change("x.py", SLOPPY, SLOPPY, added=added) and report.findings
        assert stuck.wait(timeout=30) is not None  # stopped (killed)
        assert _eventually(lambda: job.done())
        again = w.analyze("x.py", SLOPPY, added).result(timeout=60)
        assert again == report and w._proc is not stuck
    finally:
        w.close()


def test_a_review_says_when_ruff_could_not_run(tmp_path, monkeypatch):
    """ruff failing: the review carries an 'unchecked' warning for the file (not a clean
    slop result), and it is not remembered: the next pass asks again."""
    from core.answer import AnswerRun
    from core.detectors import slop
    from core.detectors.ruff_rules import RuffUnavailable
    from core.workstation import Workstation

    def broken(*_a, **_k):
        raise RuffUnavailable("ruff exited 2: broken for the test")

    monkeypatch.setenv(check_worker.ENV, "0")
    monkeypatch.setattr(slop, "run_ruff", broken)
    monkeypatch.setattr(slop, "run_ruff_many", broken)
    (tmp_path / "mod.py").write_text("def keep(x):\n    return x\n")
    station = Workstation(tmp_path)
    run = AnswerRun(station.workspace, "tidy", "spark")
    run.feed("mod.py\n```python\n<<<<<<< SEARCH\ndef keep(x):\n=======\ndef keep(x):\n"
             f"    # {random.random()}\n    y = 1\n>>>>>>> REPLACE\n```\n", 10)
    run.finish("stop")
    run.rebuild_proposal()
    try:
        found = station.review(run).findings
        assert any(f.kind == "unchecked" and f.severity == "warning" and "broken for the test" in f.message
                   for f in found)
        assert not station._file_reviews
    finally:
        with slop._RUFF_LOCK:
            slop._RUFF_CACHE.clear()
            slop._REPORTS.clear()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_childs_syntax_answer_is_check_syntax(data):
    """The child answers a syntax job from the slop rules' cut of the text when it has one
    (the statements then parse): the same problems as check_syntax, on real files with
    lines dropped or cut (syntax errors) and under other file names."""
    from core.verify.checks import check_syntax

    name, text = _real_file(data)
    lines = text.split("\n")
    for _ in range(data.draw(st.integers(0, 3), label="damage")):
        at = data.draw(st.integers(0, max(0, len(lines) - 1)), label="at")
        if data.draw(st.booleans(), label="drop"):
            del lines[at:at + 1]
        elif lines:
            lines[at] = lines[at][: data.draw(st.integers(0, len(lines[at])), label="cut")]
    text = "\n".join(lines)
    path = data.draw(st.sampled_from([name, "x.pyi", "notes.txt", "data.json", "pkg/mod.py"]), label="path")
    assert check_worker._answer("syntax", [path, text]) == check_syntax(path, text)
