"""The verifier's Python syntax check in the check worker process says what it says here.

While an answer streams, the verifier parses the files it edits (as they were, then their
new texts): that parse runs in the worker process so it holds no GIL the UI needs. The
properties: the child's answer equals `check_syntax` in this process on real files and
broken versions of them; `check_texts` finds the same problems with and without a worker;
a worker that is stopped, dead or dropped the job costs time, never a problem: the check
then runs in the caller's thread (a syntax error is never reported as clean).
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from hypothesis import HealthCheck, given, settings

from core import check_worker
from core.check_worker import CheckPool, CheckWorker
from core.verify import checks
from core.verify.checks import SYNTAX, check_syntax, check_texts
from tests.core.verify.test_syntax_segments import texts

BROKEN = "def ok(a):\n    return a\n\n\ndef broken(a:\n    return a\n"
FINE = "import os\n\n\ndef ok(a):\n    return os.path.join(a, 'b')\n"


@pytest.fixture(scope="module")
def worker():
    w = CheckWorker()
    yield w
    w.close()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts())
def test_the_child_checks_syntax_as_this_process_does(worker, case):
    path, text = case
    assert worker.syntax(path, text).result(timeout=60) == check_syntax(path, text)


@pytest.fixture
def own_pool(monkeypatch):
    """check_texts' worker is the process's shared pool: a pool of the test's own."""
    pool = CheckPool(1)
    monkeypatch.setattr(check_worker, "_SHARED", pool)
    monkeypatch.setattr(checks, "_CACHE", {})
    pool.warm()  # the app starts it while it indexes
    yield pool
    pool.close()


def test_a_worker_not_started_is_not_started_for_a_check(monkeypatch):
    """A verifier without the app (a CLI, a benchmark) checks here rather than wait for a
    child to start (~0.4 s on its first check)."""
    pool = CheckPool(1)
    monkeypatch.setattr(check_worker, "_SHARED", pool)
    monkeypatch.setattr(checks, "_CACHE", {})
    try:
        assert check_texts([("b.py", BROKEN)]) == [check_syntax("b.py", BROKEN)]
        assert not pool.started and pool.workers[0]._proc is None
    finally:
        pool.close()


def test_check_texts_finds_the_same_with_and_without_the_worker(own_pool, monkeypatch):
    items = [("a.py", FINE), ("b.py", BROKEN), ("c.json", "{"), ("a.py", FINE.replace("os.path", "path"))]
    with_worker = check_texts(items)
    assert own_pool.workers[0]._proc is not None  # the syntax went to the child
    monkeypatch.setattr(checks, "_CACHE", {})
    monkeypatch.setenv(check_worker.ENV, "0")
    monkeypatch.setattr(check_worker, "_SHARED", None)
    assert check_texts(items) == with_worker
    assert [p.code for p in with_worker[1]] == [SYNTAX] and with_worker[0] == []
    assert [p.code for p in with_worker[3]] == ["F401", "F821"]  # ruff still runs on texts that parse


def test_a_stopped_worker_is_waited_for_a_while_then_the_check_runs_here(own_pool, monkeypatch):
    own_pool.warm()
    child = own_pool.workers[0]._proc
    monkeypatch.setattr(checks, "SYNTAX_WAIT_S", 0.3)
    os.kill(child.pid, signal.SIGSTOP)  # alive, never answering
    try:
        t0 = time.perf_counter()
        found = check_texts([("b.py", BROKEN)])
        assert time.perf_counter() - t0 >= 0.3
        assert found == [check_syntax("b.py", BROKEN)] and found[0][0].code == SYNTAX
        assert own_pool.workers[0].pending() == 0  # the job was dropped, not left waiting
    finally:
        os.kill(child.pid, signal.SIGCONT)


def test_a_dead_worker_fails_the_job_and_the_check_runs_here(own_pool, monkeypatch):
    own_pool.warm()
    child = own_pool.workers[0]._proc
    os.kill(child.pid, signal.SIGSTOP)
    job = own_pool.syntax("b.py", BROKEN)
    child.kill()
    child.wait()
    assert checks._syntax_of(job, "b.py", BROKEN) == check_syntax("b.py", BROKEN) != []
    assert isinstance(job.exception(timeout=30), check_worker.CheckWorkerError)
    # the next check starts a new child and gets its answer from there
    assert own_pool.syntax("b.py", BROKEN).result(timeout=60) == check_syntax("b.py", BROKEN)
