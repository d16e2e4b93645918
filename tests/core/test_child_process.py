"""Children started by core.child_process import this checkout's `core` and get their
socket: the check worker's and the indexer's children both start here."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from core import check_worker
from core.child_process import PACKAGE_ROOT, child_env
from core.indexing import service

REPO = Path(__file__).resolve().parents[2]


def test_the_package_root_is_the_folder_holding_core() -> None:
    assert Path(PACKAGE_ROOT) == REPO and (Path(PACKAGE_ROOT) / "core" / "child_process.py").is_file()


def test_child_env_puts_the_package_root_first_and_keeps_what_is_set(monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    env = child_env({"OPENBLAS_NUM_THREADS": "1", "SPARK_TEST_NEW": "x"})
    assert env["PYTHONPATH"].split(os.pathsep) == [PACKAGE_ROOT, "/elsewhere"]
    assert env["OPENBLAS_NUM_THREADS"] == "4" and env["SPARK_TEST_NEW"] == "x"
    monkeypatch.delenv("PYTHONPATH")
    assert child_env()["PYTHONPATH"] == PACKAGE_ROOT


def _pythonpath(pid: int) -> str:
    environ = b""
    deadline = time.monotonic() + 10
    while not environ and time.monotonic() < deadline:  # Popen can return (vfork) before the
        environ = Path(f"/proc/{pid}/environ").read_bytes()  # new image's environ is readable
        time.sleep(0.01)
    for entry in environ.split(b"\0"):
        if entry.startswith(b"PYTHONPATH="):
            return entry.split(b"=", 1)[1].decode()
    return ""


@pytest.mark.parametrize("spawn", [check_worker._spawn_child, service._spawn_child], ids=["check worker", "indexer"])
def test_each_child_runs_this_checkouts_core_and_ends_with_its_socket(spawn) -> None:
    conn, proc = spawn()
    try:
        assert _pythonpath(proc.pid).split(os.pathsep)[0] == PACKAGE_ROOT
        if spawn is check_worker._spawn_child:
            conn.send(("syntax", 1, "m.py", "def f(:\n"))
            kind, job, problems = conn.recv()
            assert (kind, job) == ("ok", 1) and problems  # the syntax error, found by the child
    finally:
        conn.close()  # the child exits when its socket closes
        assert proc.wait(timeout=30) is not None
