"""The shadow copy: a proposal materialised beside the user's tree, never in it."""

from __future__ import annotations

import os

import git
from hypothesis import given, settings
from hypothesis import strategies as st

from core.verify.shadow import ShadowTree
from core.workspace.files import Workspace


def _tree(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode())
    return root


def _snapshot(root):
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            p = os.path.join(folder, name)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (fh.read(), os.stat(p).st_ino)
    return out


def test_overlay_changes_the_copy_and_never_the_user_tree(tmp_path):
    root = _tree(tmp_path / "proj", {"a.py": "x = 1\n", "pkg/b.py": "y = 2\n", "c.txt": "c\r\nd\r\n"})
    before = _snapshot(root)
    with ShadowTree(Workspace(root)) as shadow:
        path = shadow.path
        assert path is not None and not path.is_relative_to(root)
        shadow.materialise({"a.py": "x = 10\n", "new/n.py": "z = 3\n", "c.txt": "c\ne\n"})
        assert (path / "a.py").read_text() == "x = 10\n"
        assert (path / "new" / "n.py").read_text() == "z = 3\n"
        # the bytes accept would write: the file's own newline style is kept
        assert (path / "c.txt").read_bytes() == b"c\r\ne\r\n"
        # a test run writing into a copied file cannot reach the user's file
        (path / "pkg" / "b.py").write_text("scribbled\n")
        assert os.stat(path / "a.py").st_ino != os.stat(root / "a.py").st_ino
    assert _snapshot(root) == before
    assert not path.exists()  # nothing left behind


def test_moving_to_another_subset_restores_what_is_no_longer_changed(tmp_path):
    root = _tree(tmp_path / "proj", {"a.py": "a\n", "b.py": "b\n"})
    with ShadowTree(Workspace(root)) as shadow:
        assert shadow.path is not None
        shadow.materialise({"a.py": "A\n", "b.py": "B\n", "c.py": "C\n"})
        touched = shadow.materialise({"b.py": "B\n"})
        assert sorted(touched) == ["a.py", "c.py"]  # b.py already right: not rewritten
        assert (shadow.path / "a.py").read_text() == "a\n"
        assert not (shadow.path / "c.py").exists()
        shadow.materialise({"a.py": None})  # a deletion
        assert not (shadow.path / "a.py").exists()
        assert (shadow.path / "b.py").read_text() == "b\n"


def test_git_repo_copies_tracked_and_untracked_files_but_not_ignored_ones(tmp_path):
    root = _tree(tmp_path / "proj", {"a.py": "a\n", ".gitignore": "build/\n", "build/out.o": "bin",
                                     "loose.py": "l\n"})
    repo = git.Repo.init(root)
    repo.git.add("a.py", ".gitignore")
    (root / ".venv").mkdir()
    (root / ".venv" / "marker").write_text("venv")
    with ShadowTree(Workspace(root)) as shadow:
        assert shadow.path is not None
        assert (shadow.path / "a.py").exists() and (shadow.path / "loose.py").exists()
        assert not (shadow.path / "build").exists() and not (shadow.path / ".git").exists()
        assert (shadow.path / ".venv").is_symlink()  # dependencies read through


names = st.sampled_from(["a.py", "b.py", "d/c.py", "d/e.py"])
texts = st.one_of(st.none(), st.sampled_from(["1\n", "2\n", "three\n"]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.dictionaries(names, texts, max_size=4), min_size=1, max_size=5))
def test_any_sequence_of_subsets_leaves_the_copy_equal_to_tree_plus_overlay(tmp_path_factory,
                                                                            overlays):
    root = _tree(tmp_path_factory.mktemp("p"), {"a.py": "a\n", "d/c.py": "c\n"})
    before = _snapshot(root)
    with ShadowTree(Workspace(root)) as shadow:
        assert shadow.path is not None
        for overlay in overlays:
            shadow.materialise(overlay)
            for rel in ["a.py", "b.py", "d/c.py", "d/e.py"]:
                want = overlay[rel] if rel in overlay else (
                    (root / rel).read_text() if (root / rel).exists() else None)
                got = (shadow.path / rel).read_text() if (shadow.path / rel).exists() else None
                assert got == want, rel
    assert _snapshot(root) == before
