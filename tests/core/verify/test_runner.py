"""One test process: limits, cancellation, results, and nothing left running."""

from __future__ import annotations

import os
import sys
import threading
import time

from core.verify.detect import Runner, TestCommand, detect
from core.verify.runner import Outcome, TestRun


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): read its state
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def _python(code: str) -> TestCommand:
    return TestCommand(Runner.CUSTOM, (sys.executable, "-c", code), "test")


SPAWNS_CHILD = ("import subprocess, sys, time\n"
                "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                "print('child', p.pid, flush=True)\n"
                "time.sleep(60)\n")


def _child_pid(result_output: str) -> int:
    return int(next(ln for ln in result_output.splitlines() if ln.startswith("child")).split()[1])


def test_timeout_kills_the_whole_process_group(tmp_path):
    result = TestRun(_python(SPAWNS_CHILD), tmp_path, timeout_s=1.5).run()
    assert result.outcome is Outcome.TIMEOUT
    assert "1.5 s" in result.note
    time.sleep(0.2)
    assert not _alive(_child_pid(result.output))


def test_cancel_from_another_thread_stops_the_run(tmp_path):
    lines: list[str] = []
    run = TestRun(_python(SPAWNS_CHILD), tmp_path, timeout_s=60,
                  on_progress=lambda p: lines.append(p.line))
    t = threading.Thread(target=lambda: (time.sleep(1.0), run.cancel()))
    t.start()
    started = time.perf_counter()
    result = run.run()
    t.join()
    assert result.outcome is Outcome.CANCELLED
    assert time.perf_counter() - started < 10
    time.sleep(0.2)
    assert not _alive(_child_pid(result.output))


def test_memory_limit_stops_a_runaway_test(tmp_path):
    hog = _python("x = bytearray(250 * 1024 * 1024)\nprint('allocated')\n")
    result = TestRun(hog, tmp_path, memory_mb=120).run()
    assert result.outcome is Outcome.FAILED
    assert "MemoryError" in result.output
    assert TestRun(hog, tmp_path, memory_mb=0).run().outcome is Outcome.PASSED


def test_a_missing_program_is_not_run(tmp_path):
    cmd = TestCommand(Runner.CUSTOM, ("no-such-test-program-xyz",), "test")
    result = TestRun(cmd, tmp_path).run()
    assert result.outcome in (Outcome.NOT_RUN, Outcome.FAILED)


def test_pytest_results_per_test_with_streamed_progress(tmp_path, make_tree):
    root = make_tree(tmp_path, {
        "pyproject.toml": "[tool.pytest.ini_options]\n",
        "tests/test_a.py": (
            "import pytest\n\n"
            "def test_ok():\n    assert True\n\n"
            "def test_bad():\n    assert 1 == 2, 'one is not two'\n\n"
            "@pytest.mark.skip\ndef test_skip():\n    pass\n\n"
            "class TestGroup:\n    def test_inner(self):\n        assert False\n"),
    })
    cmd = detect(root)
    assert cmd is not None
    seen = []
    result = TestRun(cmd, root, on_progress=lambda p: p.test_id and seen.append(p.test_id)).run()
    assert result.outcome is Outcome.FAILED
    assert result.failed_ids == ["tests/test_a.py::TestGroup::test_inner",
                                 "tests/test_a.py::test_bad"]
    assert result.counts == {"passed": 1, "failed": 2, "skipped": 1}
    assert "one is not two" in result.tests["tests/test_a.py::test_bad"].text
    assert "tests/test_a.py::test_ok" in seen  # progress streamed per test
    assert str(root) not in result.output  # the shadow's path never reaches a prompt
    assert not (root / ".spark-verify-junit.xml").exists()


def test_failing_test_names_of_other_runners(tmp_path):
    out = ("=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n"
           "test parser::tests::empty ... FAILED\n"
           "  ✕ adds numbers (3 ms)\n")
    cmd = _python(f"import sys\nprint({out!r})\nsys.exit(1)\n")
    result = TestRun(cmd, tmp_path).run()
    assert result.outcome is Outcome.FAILED
    assert result.failed_ids == ["TestAdd", "adds numbers", "parser::tests::empty"]
