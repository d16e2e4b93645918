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


def test_demo_prompt_accept_in_tmux(tmp_path, tmux):
    demo = tmp_path / "demo"
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    command = " ".join(
        [*(f"{k}={v!s}" for k, v in env.items()), sys.executable, "-m", "tui.cli", "demo", "--dir", str(demo)]
    )
    tmux("new-session", "-d", "-s", tmux.name, "-x", "160", "-y", "48", command)
    tmux.wait_for("core: connected")
    target = demo / "invoicer" / "report.py"
    before = target.read_text()

    tmux("send-keys", "-t", tmux.name, "-l", "format_money should show negative amounts in parentheses")
    tmux("send-keys", "-t", tmux.name, "Enter")
    screen = tmux.wait_for("hunk(s)")
    assert "report.py" in screen and "proposed" in screen

    tmux("send-keys", "-t", tmux.name, "A")
    deadline = time.monotonic() + 15
    while target.read_text() == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "({-amount:,.2f})" in target.read_text()
    screen = tmux.wait_for("accepted")
    tmux("send-keys", "-t", tmux.name, "C-q")
