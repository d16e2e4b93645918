"""Git: an accepted change is committed alone; undo reverts it and nothing else."""

from __future__ import annotations

import git
import pytest

from core.edits.parser import Edit
from core.edits.proposal import apply_proposal, build_proposal
from core.workspace.changes import undo_last
from core.workspace.files import Workspace


@pytest.fixture()
def repo(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for k in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{k}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{k}_EMAIL", "test@example.invalid")
    root = tmp_path / "proj"
    root.mkdir()
    r = git.Repo.init(root)
    (root / "app.py").write_text("def f():\n    return 1\n")
    (root / "notes.txt").write_text("notes\n")
    (root / "staged.txt").write_text("v1\n")
    r.index.add(["app.py", "notes.txt", "staged.txt"])
    r.index.commit("initial")
    return root, r


def test_accepted_change_is_committed_alone_and_undo_reverts_it(repo):
    root, r = repo
    # the user's own uncommitted and staged work, which must stay as it is
    (root / "notes.txt").write_text("notes\nmy unsaved thoughts\n")
    (root / "staged.txt").write_text("v2\n")
    r.git.add("staged.txt")
    ws = Workspace(root)
    prop = build_proposal(ws, [Edit("app.py", "    return 1\n", "    return 2\n",
                                    "search_replace"),
                               Edit("pkg/new.py", "", "N = 1\n", "whole_file")])
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, message="make f return 2")
    assert res.commit and res.commit == r.head.commit.hexsha
    head = r.head.commit
    assert head.message.strip() == "make f return 2"
    assert sorted(head.stats.files) == ["app.py", "pkg/new.py"]
    assert r.git.diff("--cached", "--name-only").split() == ["staged.txt"]
    assert "notes.txt" in r.git.diff("--name-only").split()

    undo = undo_last(ws)
    assert sorted(undo.written) == ["app.py", "pkg/new.py"] and undo.commit
    assert r.head.commit.message.startswith("Undo: make f return 2")
    assert (root / "app.py").read_text() == "def f():\n    return 1\n"
    assert not (root / "pkg" / "new.py").exists()
    assert (root / "notes.txt").read_text() == "notes\nmy unsaved thoughts\n"
    assert r.git.diff("--cached", "--name-only").split() == ["staged.txt"]
    assert r.git.show("HEAD:app.py") == "def f():\n    return 1"
    assert ".spark" not in r.git.status("--porcelain")


def test_commit_can_be_turned_off(repo):
    root, r = repo
    before = r.head.commit.hexsha
    ws = Workspace(root)
    prop = build_proposal(ws, [Edit("app.py", "    return 1\n", "    return 3\n",
                                    "search_replace")])
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    assert res.commit is None and r.head.commit.hexsha == before
    assert undo_last(ws).commit is None  # an uncommitted change is undone uncommitted
    assert (root / "app.py").read_text() == "def f():\n    return 1\n"


def test_users_uncommitted_edit_in_the_same_file_stays_uncommitted(repo):
    root, r = repo
    body = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(10))
    (root / "big.py").write_text(body)
    r.index.add(["big.py"])
    r.index.commit("big")
    user = "# user's note, not committed yet\n" + body
    (root / "big.py").write_text(user)
    ws = Workspace(root)
    prop = build_proposal(ws, [Edit("big.py", "    return 7\n", "    return 70\n",
                                    "search_replace")])
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, message="seventy")
    assert res.commit
    committed = r.git.show("HEAD:big.py") + "\n"
    assert committed == body.replace("    return 7\n", "    return 70\n")
    assert (root / "big.py").read_text() == user.replace("    return 7\n", "    return 70\n")
    # what is left uncommitted is exactly the user's own line
    diff = r.git.diff("HEAD", "--", "big.py")
    assert "+# user's note" in diff and "return 70" not in diff
    assert r.git.diff("--cached", "--name-only").split() == []

    undo = undo_last(ws)
    assert undo.commit and r.git.show("HEAD:big.py") + "\n" == body
    assert (root / "big.py").read_text() == user


def test_commit_in_a_repo_without_commits(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for k in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{k}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{k}_EMAIL", "test@example.invalid")
    r = git.Repo.init(tmp_path / "p")
    ws = Workspace(tmp_path / "p")
    prop = build_proposal(ws, [Edit("a.py", "", "A = 1\n", "whole_file")])
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, message="first")
    assert res.commit and r.head.commit.message.strip() == "first"
    assert r.git.show("HEAD:a.py") == "A = 1"


def test_no_commit_in_the_middle_of_a_merge(repo):
    root, r = repo
    (root / ".git" / "MERGE_HEAD").write_text(r.head.commit.hexsha + "\n")
    before = r.head.commit.hexsha
    ws = Workspace(root)
    prop = build_proposal(ws, [Edit("app.py", "    return 1\n", "    return 4\n",
                                    "search_replace")])
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, message="x")
    assert res.written == ["app.py"] and res.commit is None
    assert "middle of a merge" in res.commit_error and r.head.commit.hexsha == before
