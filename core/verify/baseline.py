"""The same tests on the unchanged tree, run once per commit, so only NEW failures are
blamed on a proposal.

Why per test file and only for failing tests: a passing test needs no excuse, so only the
files holding tests that failed on the proposal are run on the unchanged tree; their
outcomes are cached under the tree's key (HEAD plus the state of uncommitted files), so
the next answer, or the next subset of this one, asks again for free.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from core.verify.detect import TestCommand, VerifySettings
from core.verify.runner import Outcome, TestRun
from core.verify.shadow import ShadowTree, _source_files
from core.workspace.files import Workspace

log = logging.getLogger(__name__)

SUITE = "(suite)"  # the id of a whole-suite failure for runners without per-test results


def tree_key(root: Path) -> str:
    """What identifies the tree's content: HEAD and the dirty files' sizes and times in a
    git repository, every source file's otherwise."""
    h = hashlib.blake2b(digest_size=16)
    root = Path(root)
    if (root / ".git").exists():
        head: bytes | None
        status: bytes | None
        try:
            head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                  timeout=10, check=False).stdout
            status = subprocess.run(["git", "status", "--porcelain", "-z"], cwd=root,
                                    capture_output=True, timeout=30, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            head = status = None
        if status is not None:
            h.update(head or b"no-head")
            h.update(status)
            for entry in status.split(b"\0"):
                rel = os.fsdecode(entry[3:]) if len(entry) > 3 else ""
                _stat_into(h, root, rel)
            return "git:" + h.hexdigest()
    for rel in _source_files(root):
        _stat_into(h, root, rel)
    return "tree:" + h.hexdigest()


def _stat_into(h: hashlib.blake2b, root: Path, rel: str) -> None:
    if not rel:
        return
    try:
        st = (root / rel).stat()
    except OSError:
        h.update(f"{rel}:gone".encode())
        return
    h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}\0".encode())


def test_file(test_id: str) -> str:
    return test_id.split("::", 1)[0]


class BaselineCache:
    """tree key -> test file -> {test id: outcome} on the unchanged tree."""

    _shared: BaselineCache | None = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[tuple[str, str], dict[str, str]] = {}
        self._inflight: dict[tuple[str, str], threading.Event] = {}
        self.runs = 0  # how many baseline runs happened (tests check the cache works)

    @classmethod
    def shared(cls) -> BaselineCache:
        """One cache per process: every answer of the session shares it."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = BaselineCache()
            return cls._shared

    def _file_of(self, cmd: TestCommand, test_id: str) -> str:
        return SUITE if test_id == SUITE or not cmd.selectable else test_file(test_id)

    def _run_files(self, key: str, cmd: TestCommand, files: list[str], shadow: ShadowTree,
                   settings: VerifySettings,
                   started: Callable[[TestRun], None] | None = None) -> None:
        """Run `files` (test files, or SUITE) on the unchanged tree in `shadow` and cache
        each file's outcomes; nothing is cached for a run that did not complete."""
        root = shadow.open()
        shadow.materialise({})
        runnable = [f for f in files if f == SUITE or (root / f).is_file()]
        found: dict[str, dict[str, str]] = {f: {} for f in files}
        if runnable:
            run = TestRun(cmd, root, tests=[f for f in runnable if f != SUITE],
                          timeout_s=settings.timeout_s, memory_mb=settings.memory_mb)
            if started is not None:
                started(run)
            result = run.run()
            with self._lock:
                self.runs += 1
            if result.outcome not in (Outcome.PASSED, Outcome.FAILED, Outcome.NOT_RUN):
                return  # cancelled or timed out: unknown, not "absent"
            for test in result.tests.values():
                found.setdefault(self._file_of(cmd, test.id), {})[test.id] = test.outcome
            if not cmd.selectable and result.outcome is Outcome.PASSED:
                found.setdefault(SUITE, {})[SUITE] = "passed"
        with self._lock:
            for f, tests in found.items():
                self._files[(key, f)] = tests

    def prefetch(self, key: str, cmd: TestCommand, files: Iterable[str], ws: Workspace,
                 settings: VerifySettings) -> threading.Thread | None:
        """Start running `files` on the unchanged tree now, in a thread and a shadow copy
        of its own, beside the proposal's run (machines with cores to spare): a failure
        is then told new or old as soon as it is known.  None when all are cached."""
        wanted = sorted({f if cmd.selectable else SUITE for f in files} or {SUITE})
        with self._lock:
            todo = [f for f in wanted if (key, f) not in self._files
                    and (key, f) not in self._inflight]
            event = threading.Event()
            for f in todo:
                self._inflight[(key, f)] = event
        if not todo:
            return None

        def work() -> None:
            shadow = ShadowTree(ws, prefix="spark-baseline-")
            try:
                self._run_files(key, cmd, todo, shadow, settings)
            except Exception:  # the verifier then runs them itself
                log.debug("baseline prefetch failed", exc_info=True)
            finally:
                shadow.close()
                with self._lock:
                    for f in todo:
                        self._inflight.pop((key, f), None)
                event.set()

        thread = threading.Thread(target=work, name="spark-baseline", daemon=True)
        thread.start()
        return thread

    def outcomes(self, key: str, cmd: TestCommand, failing: Iterable[str], shadow: ShadowTree,
                 settings: VerifySettings,
                 started: Callable[[TestRun], None] | None = None) -> dict[str, str]:
        """test id -> outcome on the unchanged tree, for the failing ids (absent: the test
        or its file does not exist there).  Waits for a prefetch of the same files, runs
        what is still not cached in `shadow` (left equal to the unchanged tree)."""
        failing = list(failing)
        files = sorted({self._file_of(cmd, i) for i in failing})
        with self._lock:
            waits = {self._inflight[(key, f)] for f in files if (key, f) in self._inflight}
        for event in waits:
            event.wait(settings.timeout_s + 10)
        with self._lock:
            missing = [f for f in files if (key, f) not in self._files]
        if missing:
            self._run_files(key, cmd, missing, shadow, settings, started)
        out: dict[str, str] = {}
        with self._lock:
            for i in failing:
                got = self._files.get((key, self._file_of(cmd, i)), {})
                if i in got:
                    out[i] = got[i]
                elif not cmd.selectable and got.get(SUITE) == "failed":
                    out[i] = "failed"
        return out
