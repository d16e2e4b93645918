"""The journal: written before any file, so killing the writer mid-write loses nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from core.workspace.changes import apply_change, prepare, recover, undo_last
from core.workspace.files import TEMP_SUFFIX, Workspace
from core.workspace.journal import Journal

REPO = Path(__file__).resolve().parents[3]

WRITER = textwrap.dedent(f"""
    import os, sys, time
    from pathlib import Path
    from core.workspace.files import Workspace
    from core.workspace.changes import apply_change, prepare

    real_fsync = os.fsync
    def fsync(fd):
        real_fsync(fd)
        try:
            name = os.readlink(f"/proc/self/fd/{{fd}}")
        except OSError:
            name = ""
        if name.endswith("{TEMP_SUFFIX}") and "/.b.txt." in name:
            print("MIDWRITE", flush=True)
            time.sleep(60)   # the test kills us here: b.txt's temp file written, not renamed
    os.fsync = fsync

    ws = Workspace(Path(sys.argv[1]))
    recs = [prepare(ws, n, n[0].upper() + " new\\n") for n in ("a.txt", "b.txt", "c.txt")]
    apply_change(ws, recs, message="three files", commit=False)
    print("FINISHED", flush=True)
""")


def _start(root: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", WRITER, str(root)], stdout=subprocess.PIPE,
                            text=True, env=env, cwd=REPO)


def test_killed_writer_loses_nothing_and_recovers(tmp_path):
    for n in ("a", "b", "c"):
        (tmp_path / f"{n}.txt").write_text(f"{n.upper()} old\n")
    proc = _start(tmp_path)
    try:
        assert proc.stdout.readline().strip() == "MIDWRITE"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    # mid-write state: a written, b's new bytes only in a temp file, c untouched
    assert (tmp_path / "a.txt").read_text() == "A new\n"
    assert (tmp_path / "b.txt").read_text() == "B old\n"
    assert (tmp_path / "c.txt").read_text() == "C old\n"
    assert list(tmp_path.glob(f".b.txt.*{TEMP_SUFFIX}"))
    ws = Workspace(tmp_path)
    (entry,) = Journal(ws).entries()
    assert entry.state == "pending"
    assert {f.path: f.before for f in entry.files} == {
        "a.txt": b"A old\n", "b.txt": b"B old\n", "c.txt": b"C old\n"}

    assert recover(ws) == [entry.id]
    for n in ("a", "b", "c"):
        assert (tmp_path / f"{n}.txt").read_text() == f"{n.upper()} new\n"
    assert not list(tmp_path.glob(f"*{TEMP_SUFFIX}"))
    assert Journal(ws).entries()[0].state == "applied"
    # and the user's old content is still one undo away
    res = undo_last(ws, commit=False)
    assert sorted(res.written) == ["a.txt", "b.txt", "c.txt"]
    for n in ("a", "b", "c"):
        assert (tmp_path / f"{n}.txt").read_text() == f"{n.upper()} old\n"


def test_journal_is_written_before_the_files(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("old\n")
    ws = Workspace(tmp_path)
    seen = []
    real = Workspace.write_bytes_atomic

    def spy(path, data, mode):
        if path.suffix != ".json":
            seen.append([e.state for e in Journal(ws).entries()])
        return real(path, data, mode)

    monkeypatch.setattr(Workspace, "write_bytes_atomic", staticmethod(spy))
    apply_change(ws, [prepare(ws, "a.txt", "new\n")], commit=False)
    assert seen == [["pending"]]
    assert (tmp_path / ".spark" / ".gitignore").read_text() == "*\n"
    entry_file = next((tmp_path / ".spark" / "journal").glob("*.json"))
    assert json.loads(entry_file.read_text())["files"][0]["before"] == {"text": "old\n"}


def test_undo_without_git_restores_new_and_binary_safe_files(tmp_path):
    (tmp_path / "keep.txt").write_text("user's uncommitted work\n")
    (tmp_path / "enc.txt").write_bytes(b"caf\xe9\n")
    ws = Workspace(tmp_path)
    res = apply_change(ws, [prepare(ws, "new.py", "N = 1\n"),
                            prepare(ws, "enc.txt", "caf\xe9\nplus\n")], commit=False)
    assert sorted(res.written) == ["enc.txt", "new.py"]
    undo = undo_last(ws, commit=False)
    assert undo.change_id and sorted(undo.written) == ["enc.txt", "new.py"]
    assert not (tmp_path / "new.py").exists()
    assert (tmp_path / "enc.txt").read_bytes() == b"caf\xe9\n"
    assert (tmp_path / "keep.txt").read_text() == "user's uncommitted work\n"
    assert undo_last(ws, commit=False).change_id is None  # nothing left to undo


def test_undo_keeps_later_user_edits_elsewhere_in_the_file(tmp_path):
    body = "".join(f"l{i}\n" for i in range(30))
    (tmp_path / "f.txt").write_text(body)
    ws = Workspace(tmp_path)
    apply_change(ws, [prepare(ws, "f.txt", body.replace("l20\n", "MODEL\n"))], commit=False)
    user = (tmp_path / "f.txt").read_text().replace("l2\n", "USER\n")
    (tmp_path / "f.txt").write_text(user)
    res = undo_last(ws, commit=False)
    assert res.written == ["f.txt"]
    assert (tmp_path / "f.txt").read_text() == body.replace("l2\n", "USER\n")


def test_undo_refuses_when_the_changed_lines_were_edited_again(tmp_path):
    body = "".join(f"l{i}\n" for i in range(30))
    (tmp_path / "f.txt").write_text(body)
    ws = Workspace(tmp_path)
    apply_change(ws, [prepare(ws, "f.txt", body.replace("l20\n", "MODEL\n"))], commit=False)
    user = body.replace("l20\n", "USER REWROTE IT\n")
    (tmp_path / "f.txt").write_text(user)
    res = undo_last(ws, commit=False)
    assert res.written == [] and "no longer there" in res.refused[0][1]
    assert (tmp_path / "f.txt").read_text() == user


def test_apply_change_refuses_a_file_changed_since_it_was_read(tmp_path):
    (tmp_path / "a.txt").write_text("old\n")
    ws = Workspace(tmp_path)
    rec = prepare(ws, "a.txt", "model\n")
    (tmp_path / "a.txt").write_text("user\n")
    res = apply_change(ws, [rec], commit=False)
    assert res.written == [] and "changed on disk" in res.refused[0][1]
    assert (tmp_path / "a.txt").read_text() == "user\n"


def test_prune_keeps_recent_and_pending_entries(tmp_path):
    ws = Workspace(tmp_path)
    for i in range(5):
        apply_change(ws, [prepare(ws, "f.txt", f"v{i}\n")], commit=False)
    journal = Journal(ws)
    journal.prune(keep=2)
    assert [e.seq for e in journal.entries()] == [4, 5]
    assert undo_last(ws, commit=False).written == ["f.txt"]
    assert (tmp_path / "f.txt").read_text() == "v3\n"
