"""The diff view in a real terminal: what the screen shows is what a fresh paint shows, and
what is on disk.

The diff is one line-API view that repaints only the lines it thinks changed (issue 14); a
line it forgets stays on screen stale. tmux holds the real terminal's cells: after the keys
of a demanding user (j/k while the answer streams, resizes mid-stream, decisions), the pane
must equal the pane after a forced full repaint (a resize away and back: Textual lays out and
draws every line anew), and the hunks the screen says are accepted must be the ones on disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.tui.test_real_terminal import Tmux
from tests.tui.test_real_terminal import _launch as launch_demo

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (make test installs it)")

WIDTH, HEIGHT = 120, 34
PROMPT = "Add a days_overdue(invoice, today) function to the report and show the worst overdue days per customer"


@pytest.fixture
def tmux(tmp_path):
    session = Tmux(f"spark-diff-{os.getpid()}", tmp_path / "tmux.sock")
    yield session
    subprocess.run([*session.base, "kill-server"], check=False, capture_output=True)


def _launch(tmux: Tmux, tmp_path: Path) -> Path:
    return launch_demo(tmux, tmp_path, (WIDTH, HEIGHT), connect_timeout=90)


def _keys(tmux: Tmux, *keys: str) -> None:
    tmux("send-keys", "-t", tmux.name, *keys)


def _diff_pane(screen: str) -> list[str]:
    """The diff view's box (its columns, down to its bottom border): the side panel and the
    status line change on their own (tests running, rates)."""
    lines = screen.splitlines()
    bottom = next((i for i, line in enumerate(lines) if line.startswith("╰")), None)
    if not lines or "╮" not in lines[0] or bottom is None:
        return lines  # (mid-resize: the terminal holds part of a frame)
    right = lines[0].index("╮") + 1
    return [line[:right] for line in lines[:bottom + 1]]


def _settled(tmux: Tmux, timeout: float = 20.0) -> list[str]:
    """The diff pane once two captures 0.4 s apart agree (a paint under load takes a while)."""
    deadline = time.monotonic() + timeout
    last = _diff_pane(tmux.screen())
    while time.monotonic() < deadline:
        time.sleep(0.4)
        now = _diff_pane(tmux.screen())
        if now == last:
            return now
        last = now
    return last


def _repainted(tmux: Tmux) -> list[str]:
    """The diff pane after a forced full repaint: a resize away and back."""
    tmux("resize-window", "-t", tmux.name, "-x", str(WIDTH + 3), "-y", str(HEIGHT))
    _settled(tmux)
    tmux("resize-window", "-t", tmux.name, "-x", str(WIDTH), "-y", str(HEIGHT))
    return _settled(tmux)


def _assert_fresh(tmux: Tmux, what: str) -> None:
    shown = _settled(tmux)
    fresh = _repainted(tmux)
    stale = [f"shown: {a}\nfresh: {b}" for a, b in zip(shown, fresh, strict=False) if a != b]
    assert shown == fresh, f"{what}: lines on screen differ from a fresh paint:\n" + "\n".join(stale)


def test_the_diff_on_screen_is_a_fresh_paint_and_the_disk(tmp_path, tmux):
    demo = _launch(tmux, tmp_path)
    report = demo / "invoicer" / "report.py"
    before = report.read_text()
    # the notes take the view's whole width (52ec6f0: they wrapped one word early, "press" / "Enter:")
    first = "\n".join(_settled(tmux))
    assert "(or something close) and press Enter:" in first, first
    tmux("send-keys", "-t", tmux.name, "-l", PROMPT)
    _keys(tmux, "Enter")
    tmux.wait_for("@@ line", timeout=60)
    # walk it while it streams, and resize under it (each size painted before the next: a
    # resize back before the app drew the last one can leave the terminal scrolled, with the
    # old view as well as the new diff view: Textual and tmux, not the view)
    _keys(tmux, "j", "j", "k")
    tmux("resize-window", "-t", tmux.name, "-x", "90", "-y", "28")
    _settled(tmux)
    _keys(tmux, "j")
    tmux("resize-window", "-t", tmux.name, "-x", str(WIDTH), "-y", str(HEIGHT))
    tmux.wait_for("585 tok", timeout=60)  # the whole recorded answer
    time.sleep(1.6)  # the review-dwell guard lets a reader through
    _keys(tmux, "k", "k", "k", "k", "k")
    _assert_fresh(tmux, "settled, at the first hunk")
    _keys(tmux, "End")  # an animated scroll to the very end (f378f0a: it stopped one line short)
    time.sleep(1.5)
    assert "▸ the model says: I'll add" in "\n".join(_settled(tmux)), tmux.screen()
    # (no repaint check here: a resize changes how far the end is, the lines wrap otherwise)
    _keys(tmux, "k")  # (at the first hunk: it is scrolled back into view)
    for key in ["j", "j", "k", "k", "a", "a"]:  # hunks 1 and 2 accepted (the import, the function)
        _keys(tmux, key)
        _assert_fresh(tmux, f"after {key}")
    _keys(tmux, "k")  # back to hunk 2, its header in view
    screen = "\n".join(_settled(tmux))
    assert "2/5  invoicer/report.py  @@ line 19  [accept: written when all are decided]" in screen, screen
    assert report.read_text() == before, "nothing is written before every hunk is decided"
    _keys(tmux, "R")  # the other three rejected
    tmux.wait_for("[accepted: on disk]", timeout=30)
    after = report.read_text()
    assert "from .dates import add_days, days_between" in after and "def days_overdue" in after
    assert "worst" not in after, "a rejected hunk never reaches the disk"
    _assert_fresh(tmux, "written")
    shown = "\n".join(_settled(tmux))
    assert shown.count("[accepted: on disk]") + shown.count("[rejected]") >= 2, shown
