"""End to end in a real terminal: `spark demo` inside tmux, driven with send-keys.

This is the check closest to a person at a keyboard: a real pty, the real `spark` command,
the real embedded core on loopback, and the file on disk afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (make test installs it)")


class Tmux:
    def __init__(self, name: str, socket: Path) -> None:
        self.name = name
        self.base = ["tmux", "-S", str(socket)]

    def __call__(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], check=True, capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.name)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared on screen:\n{screen}")


@pytest.fixture
def tmux(tmp_path):
    session = Tmux(f"spark-e2e-{os.getpid()}", tmp_path / "tmux.sock")
    yield session
    subprocess.run([*session.base, "kill-server"], capture_output=True)


def _launch(tmux: Tmux, tmp_path: Path, size: tuple[int, int] = (160, 48),
            connect_timeout: float = 30.0) -> Path:
    """The demo in a fresh project under `tmp_path`, in a tmux pane of `size`, once connected."""
    demo = tmp_path / "demo"
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    # COLUMNS/LINES can leak into the pane from the test runner; the pane's real size must win
    command = "unset COLUMNS LINES; exec env " + " ".join(
        [*(f"{k}={v!s}" for k, v in env.items()), sys.executable, "-m", "tui.cli", "demo", "--dir", str(demo)]
    )
    width, height = str(size[0]), str(size[1])
    tmux("-f", "/dev/null", "new-session", "-d", "-s", tmux.name, "-x", width, "-y", height, command)
    tmux("resize-window", "-t", tmux.name, "-x", width, "-y", height)
    tmux.wait_for("core: connected", timeout=connect_timeout)
    return demo


def _wait_file(path: Path, before: str, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    while path.read_text() == before and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.read_text()


def test_prompt_hunk_by_hunk_race_and_theme_in_tmux(tmp_path, tmux):
    demo = _launch(tmux, tmp_path)
    report = demo / "invoicer" / "report.py"
    tests = demo / "tests" / "test_report.py"
    report_before, tests_before = report.read_text(), tests.read_text()

    # 1. prompt -> streamed diff -> hunk by hunk: accept the first, reject the other two
    tmux("send-keys", "-t", tmux.name, "-l", "format_money should show negative amounts in parentheses")
    tmux("send-keys", "-t", tmux.name, "Enter")
    screen = tmux.wait_for("hunk(s)")
    assert "invoicer/report.py" in screen and "[undecided]" in screen and "REVIEW" in screen
    time.sleep(1.5)  # read the hunks: the review-dwell guard lets a reader through
    tmux("send-keys", "-t", tmux.name, "a")
    tmux.wait_for("[accept: written when all are decided]")  # chosen, not on disk yet
    tmux("send-keys", "-t", tmux.name, "r")
    tmux("send-keys", "-t", tmux.name, "r")
    after = _wait_file(report, report_before)
    assert "({-amount:,.2f})" in after
    assert tests.read_text() == tests_before, "rejected hunks never reach the disk"
    screen = tmux.wait_for("1 accepted, 2 rejected")
    assert "[accepted: on disk]" in screen and "PROMPT" in screen, "written, and the next prompt can be typed"

    # 2. race: the same prompt to spark and base side by side; take spark's answer
    time.sleep(0.3)  # people pause between keys; so does this test
    tmux("send-keys", "-t", tmux.name, "-l", "add docstrings to the report functions")
    tmux.wait_for("add docstrings to the report functions")
    time.sleep(0.3)
    tmux("send-keys", "-t", tmux.name, "C-r")
    screen = tmux.wait_for("faster than", timeout=60)
    assert "spark" in screen and "base" in screen
    tmux("send-keys", "-t", tmux.name, "1")
    screen = tmux.wait_for("taken from spark", timeout=30)
    assert "docstring" in screen.lower() or "hunk(s)" in screen

    # 3. theme switch from the command palette, remembered for the next start
    tmux("send-keys", "-t", tmux.name, "C-p")
    time.sleep(0.5)
    tmux("send-keys", "-t", tmux.name, "-l", "Theme: paper")
    time.sleep(0.5)
    tmux("send-keys", "-t", tmux.name, "Enter")
    state = tmp_path / "xdg-state" / "sparkstation" / "state.json"
    deadline = time.monotonic() + 10
    while not (state.exists() and "paper" in state.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "paper" in state.read_text()
    tmux("send-keys", "-t", tmux.name, "C-q")
