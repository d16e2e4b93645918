"""Paths and files a hostile answer may aim at, and failures mid-write: refused or rolled
back with the reason, never written wrongly, never outside the root."""

from __future__ import annotations

import os
import stat
import unicodedata

import pytest

from core.edits.parser import parse_edits
from core.edits.proposal import apply_proposal, build_proposal
from core.workspace import files as files_mod
from core.workspace.changes import recover, undo_last
from core.workspace.files import Workspace, WorkspaceError
from core.workspace.journal import Journal


def _sr(path: str, search: str, replace: str) -> str:
    return f"{path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"


def _apply(root, answer: str, **kw):
    ws = Workspace(root, **kw)
    prop = build_proposal(ws, parse_edits(answer))
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    return res, [e.message for e in prop.errors] + [e.message for e in res.refused]


@pytest.fixture
def outside(tmp_path):
    out = tmp_path / "outside"
    (out / "od").mkdir(parents=True)
    (out / "secret.txt").write_text("secret\n")
    (out / "od" / "s.py").write_text("x = 1\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root, out


@pytest.mark.parametrize("path,why", [
    ("../x.py", "'..'"), ("sub/../../x.py", "'..'"), ("/etc/passwd", "absolute"),
    ("C:\\x.py", "absolute"), ("~/x.py", "home folder"), (".git/config", ".git"),
    (".GIT/config", ".git"), (".spark/journal/x.json", ".spark"),
    (".sparkignore", "yourself"), ("a.py/", "folder"), ("a\u200b.py", "invisible"),
])
def test_refused_paths(outside, path, why):
    root, _out = outside
    (root / ".git").mkdir()
    with pytest.raises(WorkspaceError) as exc:
        Workspace(root).resolve(path)
    assert why in str(exc.value)


def test_symlinks_leading_out_are_refused_for_files_folders_and_new_files(outside):
    root, out = outside
    os.symlink(out / "secret.txt", root / "link.txt")
    os.symlink(out / "od", root / "ld")
    os.symlink(out / "missing.py", root / "dangling.py")
    answer = (_sr("link.txt", "secret\n", "pwned\n") + _sr("ld/s.py", "x = 1\n", "x = 2\n")
              + _sr("ld/new.py", "", "x\n") + _sr("dangling.py", "", "x\n"))
    res, errors = _apply(root, answer)
    assert res.written == [] and len(errors) == 4
    assert all("symlink leads outside" in e for e in errors)
    assert (out / "secret.txt").read_text() == "secret\n"
    assert sorted(os.listdir(out / "od")) == ["s.py"] and not (out / "missing.py").exists()


def test_symlink_inside_the_root_edits_its_target_and_stays_a_link(outside):
    root, _ = outside
    os.symlink("a.py", root / "alias.py")
    _res, errors = _apply(root, _sr("alias.py", "x = 1\n", "x = 2\n"))
    assert not errors and os.path.islink(root / "alias.py")
    assert (root / "a.py").read_text() == "x = 2\n"


def test_folder_fifo_and_device_are_refused(tmp_path):
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "pipe.py")  # reading it would block forever
    os.symlink("/dev/zero", tmp_path / "zero.py")
    ws = Workspace(tmp_path)
    for rel, why in (("sub", "folder"), ("pipe.py", "not a regular file"),
                     ("zero.py", "outside")):
        with pytest.raises(WorkspaceError, match=why):
            ws.read_bytes(rel)


def test_binary_files_are_refused_even_without_nul_bytes(tmp_path):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(1, 255)) * 10
    (tmp_path / "img.png").write_bytes(png)
    (tmp_path / "b.bin").write_bytes(b"abc\0def\n")
    _res, errors = _apply(tmp_path, _sr("img.png", "", "x\n") + _sr("b.bin", "abc\n", "x\n"))
    assert (tmp_path / "img.png").read_bytes() == png and len(errors) == 2
    assert all("binary file" in e for e in errors)


def test_mixed_line_endings_are_refused_not_normalised(tmp_path):
    data = b"a = 1\r\nb = 2\nc = 3\r\n"
    (tmp_path / "m.py").write_bytes(data)
    _res, errors = _apply(tmp_path, _sr("m.py", "b = 2\n", "b = 5\n"))
    assert (tmp_path / "m.py").read_bytes() == data and "mixed line endings" in errors[0]


def test_size_limit_and_ignore_rules(tmp_path):
    (tmp_path / "big.py").write_text("x = 1\n" * 1000)
    (tmp_path / ".sparkignore").write_text("secret/\n*.lock\n")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "k.py").write_text("k\n")
    answer = (_sr("big.py", "x = 1\n", "y\n") + _sr("secret/k.py", "k\n", "z\n")
              + _sr("x.lock", "", "z\n") + _sr("gen.py", "", "g\n"))
    res, errors = _apply(tmp_path, answer, max_bytes=2000, deny_globs=["gen.py"])
    assert res.written == [] and len(errors) == 4
    assert sum("limit" in e for e in errors) == 1
    assert sum("ignore rules" in e for e in errors) == 3


def test_a_new_name_clashing_in_case_is_refused_and_nfd_finds_nfc(tmp_path):
    (tmp_path / "README.md").write_text("hi\n")
    (tmp_path / unicodedata.normalize("NFC", "café.py")).write_text("x = 1\n")
    answer = _sr("readme.md", "", "new\n") + _sr(unicodedata.normalize("NFD", "café.py"),
                                                 "x = 1\n", "x = 2\n")
    _res, errors = _apply(tmp_path, answer)
    assert "letter case" in errors[0] and len(errors) == 1
    assert sorted(os.listdir(tmp_path)) == sorted(["README.md", "café.py", ".spark"])
    assert (tmp_path / "café.py").read_text() == "x = 2\n"


def test_read_only_file_is_refused(tmp_path):
    (tmp_path / "ro.py").write_text("x = 1\n")
    os.chmod(tmp_path / "ro.py", 0o444)
    _res, errors = _apply(tmp_path, _sr("ro.py", "x = 1\n", "x = 2\n"))
    assert (tmp_path / "ro.py").read_text() == "x = 1\n" and "read-only" in errors[0]


def test_formats_kept_crlf_no_final_newline_mode_and_latin1(tmp_path):
    (tmp_path / "w.py").write_bytes(b"a = 1\r\nb = 2\r\n")
    (tmp_path / "n.py").write_bytes(b"a = 1\nb = 2")
    (tmp_path / "s.sh").write_text("echo 1\n")
    os.chmod(tmp_path / "s.sh", 0o755)
    (tmp_path / "l.py").write_bytes("# café\nx = 1\n".encode("latin-1"))
    answer = (_sr("w.py", "a = 1\n", "a = 3\nc = 4\n") + _sr("n.py", "b = 2\n", "b = 3\n")
              + _sr("s.sh", "echo 1\n", "echo 2\n") + _sr("l.py", "x = 1\n", "x = 'é'\n"))
    _res, errors = _apply(tmp_path, answer)
    assert not errors
    assert (tmp_path / "w.py").read_bytes() == b"a = 3\r\nc = 4\r\nb = 2\r\n"
    assert (tmp_path / "n.py").read_bytes() == b"a = 1\nb = 3"
    assert stat.S_IMODE(os.stat(tmp_path / "s.sh").st_mode) == 0o755
    assert (tmp_path / "l.py").read_bytes() == "# café\nx = 'é'\n".encode("latin-1")


def test_latin1_file_refuses_text_it_cannot_store(tmp_path):
    data = "# café\nx = 1\n".encode("latin-1")
    (tmp_path / "l.py").write_bytes(data)
    _res, errors = _apply(tmp_path, _sr("l.py", "x = 1\n", "x = '€'\n"))
    assert (tmp_path / "l.py").read_bytes() == data and "latin-1" in errors[0]


def test_file_deleted_or_changed_between_proposal_and_apply(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "b.py").write_text("p = 1\n")
    ws = Workspace(tmp_path)
    prop = build_proposal(ws, parse_edits(_sr("a.py", "x = 1\n", "x = 9\n")
                                          + _sr("b.py", "p = 1\n", "p = 2\n")))
    (tmp_path / "a.py").unlink()
    (tmp_path / "b.py").write_text("p = 5\n")
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    assert res.written == [] and not (tmp_path / "a.py").exists()
    assert "deleted" in res.refused[0].message and "changed on disk" in res.refused[1].message
    assert (tmp_path / "b.py").read_text() == "p = 5\n"


def test_full_disk_rolls_the_whole_change_back(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("b = 1\n")
    ws = Workspace(tmp_path)
    prop = build_proposal(ws, parse_edits(_sr("a.py", "x = 1\n", "x = 9\n")
                                          + _sr("b.py", "b = 1\n", "b = 2\n")))
    real = files_mod.Workspace.write_bytes_atomic

    def failing(path, data, mode):
        if path.name == "b.py":
            raise OSError(28, "No space left on device")
        return real(path, data, mode)

    monkeypatch.setattr(files_mod.Workspace, "write_bytes_atomic", staticmethod(failing))
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    monkeypatch.undo()
    assert res.written == [] and res.change_id is None
    assert all("No space left" in e.message and "rolled back" in e.message
               for e in res.refused)
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
    assert (tmp_path / "b.py").read_text() == "b = 1\n"
    assert [e.state for e in Journal(ws).entries()] == ["rolled-back"]
    assert recover(ws) == [] and undo_last(ws, commit=False).change_id is None
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(files_mod.TEMP_SUFFIX)]


def test_a_spark_folder_that_is_a_symlink_is_not_written_through(outside):
    root, out = outside
    os.symlink(out / "od", root / ".spark")
    ws = Workspace(root)
    prop = build_proposal(ws, parse_edits(_sr("a.py", "x = 1\n", "x = 2\n")))
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    assert res.written == [] and "symlink" in res.refused[0].message
    assert (root / "a.py").read_text() == "x = 1\n"
    assert sorted(os.listdir(out / "od")) == ["s.py"]
