"""Workspace: refusals with reasons, and writes that keep the file's format."""

from __future__ import annotations

import os
import stat

import pytest

from core.workspace.files import TEMP_SUFFIX, Workspace, WorkspaceError


@pytest.fixture()
def ws(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    return Workspace(tmp_path, max_bytes=1000, deny_globs=["secrets/", "*.lock"])


@pytest.mark.parametrize("rel, reason", [
    ("../x.py", "'..'"),
    ("src/../../x.py", "'..'"),
    ("/etc/passwd", "absolute"),
    (".git/config", ".git/"),
    ("sub/.git/hooks/pre-commit", ".git/"),
    (".spark/journal/x.json", ".spark/"),
    ("secrets/key.txt", "ignore rules"),
    ("deep/poetry.lock", "ignore rules"),
    ("", "empty"),
])
def test_refused_paths(ws, rel, reason):
    with pytest.raises(WorkspaceError) as exc:
        ws.resolve(rel)
    assert reason in str(exc.value)


def test_symlink_leading_out_is_refused(ws, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "t.py").write_text("secret\n")
    os.symlink(outside, ws.root / "link")
    with pytest.raises(WorkspaceError, match="symlink leads outside"):
        ws.write_text("link/t.py", "pwned\n")
    assert (outside / "t.py").read_text() == "secret\n"


def test_symlink_inside_writes_the_target_and_keeps_the_link(ws):
    os.symlink("src/a.py", ws.root / "alias.py")
    ws.write_text("alias.py", "x = 2\n")
    assert os.path.islink(ws.root / "alias.py")
    assert (ws.root / "src" / "a.py").read_text() == "x = 2\n"


def test_binary_and_huge_files_refused(ws):
    (ws.root / "img.png").write_bytes(b"\x89PNG\0\0\0")
    with pytest.raises(WorkspaceError, match="binary"):
        ws.read_text("img.png")
    (ws.root / "big.txt").write_text("y" * 2000)
    with pytest.raises(WorkspaceError, match="over the 1,000-byte limit"):
        ws.read_text("big.txt")
    with pytest.raises(WorkspaceError, match="over the 1,000-byte limit"):
        ws.write_text("new.txt", "z" * 2000)
    assert not (ws.root / "new.txt").exists()


def test_new_file_read_and_exists(ws):
    assert ws.read_text("new/thing.py") == "" and not ws.exists("new/thing.py")
    ws.write_text("new/thing.py", "print(1)\n")
    assert ws.exists("new/thing.py") and ws.read_text("new/thing.py") == "print(1)\n"


def test_write_keeps_crlf_mode_and_missing_final_newline(ws):
    p = ws.root / "run.sh"
    p.write_bytes(b"#!/bin/sh\r\necho hi")
    p.chmod(0o755)
    assert ws.read_text("run.sh") == "#!/bin/sh\necho hi"
    ws.write_text("run.sh", "#!/bin/sh\necho bye\n")
    assert p.read_bytes() == b"#!/bin/sh\r\necho bye"
    assert stat.S_IMODE(p.stat().st_mode) == 0o755


def test_write_keeps_bom_and_legacy_encoding(ws):
    (ws.root / "bom.txt").write_bytes(b"\xef\xbb\xbfcaf\xc3\xa9\n")
    ws.write_text("bom.txt", ws.read_text("bom.txt").replace("caf", "CAF"))
    assert (ws.root / "bom.txt").read_bytes() == b"\xef\xbb\xbfCAF\xc3\xa9\n"
    (ws.root / "old.txt").write_bytes(b"caf\xe9\n")
    ws.write_text("old.txt", ws.read_text("old.txt") + "more\n")
    assert (ws.root / "old.txt").read_bytes() == b"caf\xe9\nmore\n"
    with pytest.raises(WorkspaceError, match="latin-1"):
        ws.write_text("old.txt", "snow \u2603\n")
    assert (ws.root / "old.txt").read_bytes() == b"caf\xe9\nmore\n"


def test_failed_write_leaves_no_temp_and_old_content(ws, monkeypatch):
    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        ws.write_text("src/a.py", "x = 3\n")
    assert (ws.root / "src" / "a.py").read_text() == "x = 1\n"
    assert not list((ws.root / "src").glob(f"*{TEMP_SUFFIX}"))


def test_sparkignore_file_adds_deny_rules(tmp_path):
    (tmp_path / ".sparkignore").write_text("# generated code\ngen/\n*.min.js\n")
    ws = Workspace(tmp_path, deny_globs=["vendor/"])
    for rel in ("gen/api.py", "static/app.min.js", "vendor/lib.py"):
        with pytest.raises(WorkspaceError, match="ignore rules"):
            ws.resolve(rel)
    assert ws.resolve("src/ok.py") == tmp_path.resolve() / "src" / "ok.py"
