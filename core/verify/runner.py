"""Run one test command in a shadow copy: own process group, time and memory limits,
output streamed line by line, cancellable from another thread.

Why a launcher process: the limits are set with `resource.setrlimit` in the child before
it execs the test command; doing that through `preexec_fn` is unsafe in a threaded
program (the app), so a tiny `python -I -S -c` sets them and execs instead (~15 ms).
pytest runs verbose (one line per test: live progress) and writes a JUnit XML report into
the shadow folder, from which per-test outcomes and failure texts are read.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from core.verify.detect import Runner, TestCommand

JUNIT_FILE = ".spark-verify-junit.xml"
OUTPUT_TAIL_LINES = 400
KILL_GRACE_S = 2.0
_LAUNCHER = (
    "import os,resource,sys\n"
    "lim=int(sys.argv[1]);kind=sys.argv[2]\n"
    "os.nice(5)\n"
    "if lim>0:\n"
    " r=resource.RLIMIT_AS if kind=='as' else resource.RLIMIT_DATA\n"
    " try: resource.setrlimit(r,(lim,lim))\n"
    " except (ValueError,OSError): pass\n"
    "os.execvp(sys.argv[3],sys.argv[3:])\n"
)
_VERBOSE_LINE = re.compile(r"^(?:\[gw\d+\]\s+(?:\[\s*\d+%\]\s+)?)?(?P<a>\S+::\S.*?)\s+"
                           r"(?P<o>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b"
                           r"|^(?:\[gw\d+\]\s+(?:\[\s*\d+%\]\s+)?)?"
                           r"(?P<o2>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(?P<b>\S+::\S+)")


class Outcome(Enum):
    PASSED = "passed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    NOT_RUN = "not run"  # the command could not start, or collected nothing


@dataclass(frozen=True)
class TestResult:
    """One test's outcome ("passed", "failed", "error", "skipped") and failure text."""

    __test__ = False

    id: str
    outcome: str
    text: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome in ("failed", "error")


@dataclass
class RunResult:
    """What a run of the test command found."""

    outcome: Outcome
    command: str
    returncode: int | None
    duration_s: float
    tests: dict[str, TestResult] = field(default_factory=dict)
    output: str = ""  # the tail of stdout+stderr, the shadow path replaced by "."
    note: str = ""

    @property
    def failed_ids(self) -> list[str]:
        return sorted(t.id for t in self.tests.values() if t.failed)

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tests.values():
            out[t.outcome] = out.get(t.outcome, 0) + 1
        return out


@dataclass(frozen=True)
class Progress:
    """A streamed line, with the test it finished when it names one."""

    line: str
    test_id: str | None = None
    outcome: str | None = None


class TestRun:
    """One test process; `run()` blocks (call it from a worker), `cancel()` from any thread."""

    __test__ = False

    def __init__(self, cmd: TestCommand, cwd: Path, *, tests: Sequence[str] = (),
                 timeout_s: float = 60.0, memory_mb: int = 2048,
                 on_progress: Callable[[Progress], None] | None = None) -> None:
        self.cmd = cmd
        self.cwd = Path(cwd)
        self.tests = tuple(tests)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.on_progress = on_progress
        self._proc: subprocess.Popen[bytes] | None = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self.pid: int | None = None

    def argv(self) -> list[str]:
        argv = list(self.cmd.argv)
        if self.cmd.runner is Runner.PYTEST:
            argv += ["-v", "--tb=short", "--color=no", "-p", "no:cacheprovider",
                     "-o", "console_output_style=classic", f"--junitxml={JUNIT_FILE}",
                     "-o", "junit_family=xunit1"]
            argv += list(self.tests)
        return argv

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST_", "COV_CORE_")) and k != "PYTHONPATH"}
        paths = [str(self.cwd)] + ([str(self.cwd / "src")] if (self.cwd / "src").is_dir()
                                   else [])
        # the shadow's modules first: an editable install must not import the user's tree
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.update(self.cmd.env)
        return env

    def cancel(self) -> None:
        """Stop the run (the whole process group); run() returns CANCELLED.  Never waits:
        the UI thread calls it; run() escalates to SIGKILL in its own thread."""
        self._cancelled.set()
        with self._lock:
            proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def run(self) -> RunResult:
        started = time.perf_counter()
        described = " ".join(self.argv())
        junit = self.cwd / JUNIT_FILE
        junit.unlink(missing_ok=True)
        if self.cancelled:
            return RunResult(Outcome.CANCELLED, described, None, 0.0)
        # Linux counts private anonymous mappings in RLIMIT_DATA (since 4.7): real memory
        # use, while runtimes that reserve big address spaces (Go, V8, BLAS) still start
        kind = "data" if sys.platform.startswith("linux") else "as"
        limit = self.memory_mb * 1024 * 1024 if self.memory_mb else 0
        launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(limit), kind, *self.argv()]
        try:
            with self._lock:
                self._proc = subprocess.Popen(
                    launcher, cwd=self.cwd, env=self.env(), stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
                self.pid = self._proc.pid
        except OSError as exc:
            return RunResult(Outcome.NOT_RUN, described, None, 0.0,
                             note=f"cannot start {self.cmd.argv[0]}: {exc.strerror or exc}")
        proc = self._proc
        if self.cancelled:
            _kill_group(proc)
        timer = threading.Timer(self.timeout_s, self._timeout, (proc,))
        timer.daemon = True
        self._timed_out = False
        timer.start()
        tail: list[str] = []
        streamed: dict[str, str] = {}
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                line = line.replace(str(self.cwd), ".")
                tail.append(line)
                if len(tail) > OUTPUT_TAIL_LINES:
                    del tail[: len(tail) - OUTPUT_TAIL_LINES]
                prog = _progress(line)
                if prog.test_id and prog.outcome:
                    streamed[prog.test_id] = prog.outcome
                if self.on_progress is not None:
                    self.on_progress(prog)
            returncode = proc.wait()
        finally:
            timer.cancel()
            _kill_group(proc)  # children a test left running die with the run
            if proc.stdout is not None:
                proc.stdout.close()
        duration = time.perf_counter() - started
        output = "\n".join(tail)
        tests = _read_junit(junit, self.cwd) if self.cmd.runner is Runner.PYTEST else {}
        junit.unlink(missing_ok=True)
        if not tests and streamed:
            tests = {i: TestResult(i, _word(o)) for i, o in streamed.items()}
        if self.cancelled:
            return RunResult(Outcome.CANCELLED, described, returncode, duration, tests, output)
        if self._timed_out:
            return RunResult(Outcome.TIMEOUT, described, returncode, duration, tests, output,
                             note=f"stopped after the {self.timeout_s:g} s limit")
        if self.cmd.runner is Runner.PYTEST:
            if returncode == 5:
                return RunResult(Outcome.NOT_RUN, described, returncode, duration, tests,
                                 output, note="pytest collected no tests")
            if returncode not in (0, 1) and not tests:
                return RunResult(Outcome.FAILED, described, returncode, duration, tests,
                                 output, note=f"pytest exited {returncode} (usage or "
                                              f"collection error)")
        outcome = Outcome.PASSED if returncode == 0 and not any(
            t.failed for t in tests.values()) else Outcome.FAILED
        if outcome is Outcome.FAILED and not tests:
            tests = _named_failures(output) or {
                "(suite)": TestResult("(suite)", "failed", _tail(output, 60))}
        return RunResult(outcome, described, returncode, duration, tests, output)

    def _timeout(self, proc: subprocess.Popen[bytes]) -> None:
        self._timed_out = True
        _kill_group(proc)


# failing test names in other runners' output: go, cargo, jest/vitest
_FAILURE_NAMES = (re.compile(r"^\s*--- FAIL: (\S+)"), re.compile(r"^test (\S+) \.\.\. FAILED"),
                  re.compile(r"^\s*[✕×] (.+?)(?: \(\d+ ?ms\))?$"))


def _named_failures(output: str) -> dict[str, TestResult]:
    """Per-test failures of a runner without a report file, by name, each with the whole
    output's tail as its text (their per-test output is not separable reliably)."""
    names: list[str] = []
    for line in output.splitlines():
        for pattern in _FAILURE_NAMES:
            m = pattern.match(line)
            if m and m.group(1) not in names:
                names.append(m.group(1))
    tail = _tail(output, 60)
    return {n: TestResult(n, "failed", tail) for n in names}


def _word(outcome: str) -> str:
    return {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "error",
            "SKIPPED": "skipped", "XFAIL": "skipped"}.get(outcome, outcome.lower())


def _progress(line: str) -> Progress:
    m = _VERBOSE_LINE.match(line)
    if not m:
        return Progress(line)
    test_id = m.group("a") or m.group("b")
    return Progress(line, test_id, m.group("o") or m.group("o2"))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the run's process group, SIGKILL what is left after a grace period."""
    if proc.poll() is not None:
        try:  # the leader is gone; children may live on in its group
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(text: str, lines: int) -> str:
    parts = text.splitlines()
    return "\n".join(parts[-lines:])


def _read_junit(path: Path, cwd: Path) -> dict[str, TestResult]:
    """Per-test outcomes from pytest's JUnit XML (xunit1: `file` and `name` attributes)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    out: dict[str, TestResult] = {}
    for case in root.iter("testcase"):
        file = case.get("file") or ""
        name = case.get("name") or ""
        if not file:
            classname = case.get("classname") or ""
            file = classname.replace(".", "/") + ".py"
        module = file[:-3].replace("/", ".") if file.endswith(".py") else file
        classname = case.get("classname") or ""
        inner = classname[len(module) + 1:] if classname.startswith(module + ".") else ""
        test_id = "::".join([file, *inner.split(".")] if inner else [file]) + f"::{name}"
        outcome, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                text = (child.text or child.get("message") or "").replace(str(cwd), ".")
                break
            if child.tag == "skipped":
                outcome = "skipped"
        if test_id in out and out[test_id].failed:
            continue  # a teardown error after a failure: keep the failure
        out[test_id] = TestResult(test_id, outcome, text)
    return out
