"""The tree's state from git (core/indexing/treestate.py) and the stale-snapshot invariant.

A second launch shows the cached repo map before the tree is checked, and trusts it once
the tree's key equals the key it was stored under. So: the git-based listing must be
`list_files`'s, equal keys must mean equal contents of the mapped files, and after any
sequence of edits, deletes, adds and commits, a service that says its map is checked
must hold the map a fresh scan of the tree gives.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.repo_gen import generate
from core.context.repomap import RepoMap
from core.context.tags import language_for
from core.context.tree import list_files
from core.indexing.cache import cache_file
from core.indexing.service import IndexService, preload
from core.indexing.treestate import _stat_state, tree_state

PROMPTS = ("render the payload of the invoice", "fresh_name_0 and fresh_name_1", "")
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                   check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def _git_repo(base: Path, files: int = 10, seed: int = 3) -> Path:
    root = generate(base / "repo", files, seed)
    (root / ".gitignore").write_text("ignored/\n*.log\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "start")
    return root


def _mapped_files(root: Path) -> list[str]:
    return [rel for rel in list_files(root) if language_for(rel) is not None]


# one step of a random history: what it does and to which file (an index into the mapped files)
OPS = st.tuples(
    st.sampled_from(["edit", "same_size_edit", "delete", "add", "add_ignored", "commit", "stage", "touch",
                     "untracked_edit"]),
    st.integers(0, 50),
)


def _apply(root: Path, op: str, pick: int, step: int) -> None:
    files = _mapped_files(root)
    target = root / files[pick % len(files)] if files else None
    if op == "edit" and target is not None:
        target.write_text(target.read_text() + f"\n\ndef fresh_name_{step}(x):\n    return x\n")
    elif op == "same_size_edit" and target is not None:
        text = target.read_text()
        i = text.find("def ")
        if i >= 0:  # one letter of a name changes: same size, maybe within the same mtime tick
            j = i + 4
            target.write_text(text[:j] + ("q" if text[j] != "q" else "z") + text[j + 1:])
    elif op == "delete" and target is not None:
        target.unlink()
    elif op == "add":
        (root / f"src/added_{step}.py").write_text(f"def fresh_name_{step}(a, b):\n    return a\n")
    elif op == "add_ignored":
        (root / "ignored").mkdir(exist_ok=True)
        (root / f"ignored/hidden_{step}.py").write_text("def never_listed():\n    pass\n")
        (root / f"note_{step}.log").write_text("log\n")
    elif op == "commit":
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "--allow-empty", "-m", f"step {step}")
    elif op == "stage" and target is not None:
        _git(root, "add", "-A", "--", str(target.relative_to(root)))
    elif op == "touch" and target is not None:
        later = time.time() + 5 + step
        os.utime(target, (later, later))
    elif op == "untracked_edit":
        extra = root / "src/untracked_one.py"
        body = extra.read_text() if extra.exists() else ""
        extra.write_text(body + f"def fresh_name_{step}():\n    pass\n")


def _contents(root: Path) -> dict[str, bytes]:
    return {rel: (root / rel).read_bytes() for rel in _mapped_files(root)}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(OPS, min_size=1, max_size=12))
def test_git_state_lists_like_list_files_and_keys_follow_content(tmp_path_factory, ops):
    root = _git_repo(tmp_path_factory.mktemp("ts"))
    seen: dict[bytes, dict[str, bytes]] = {}
    for step, (op, pick) in enumerate(ops):
        _apply(root, op, pick, step)
        state = tree_state(root)
        assert state.via == "git"
        assert state.files == list_files(root)
        assert sorted(state.tokens) == _mapped_files(root)
        assert state.files == _stat_state(root, language_for).files
        contents = _contents(root)
        # equal keys must mean equal contents: a key that vouched for other bytes would
        # let a launch trust a map of files that have changed
        assert seen.setdefault(state.key, contents) == contents
        changed = tree_state(root).changed_since(state)
        assert changed == [], "an unchanged tree's state changed between two looks"


def test_keys_depend_on_content_not_on_commits_or_stamps(tmp_path):
    root = _git_repo(tmp_path)
    before = tree_state(root)
    rel = _mapped_files(root)[0]
    target = root / rel
    original = target.read_bytes()
    target.write_bytes(original + b"\ndef later(): pass\n")
    edited = tree_state(root)
    assert edited.key != before.key and edited.changed_since(before) == [rel]
    _git(root, "commit", "-q", "-am", "edit")
    assert tree_state(root).key == edited.key  # the same bytes, now committed
    os.utime(target, (time.time() + 9, time.time() + 9))
    assert tree_state(root).key == edited.key  # a touch is not a change
    target.write_bytes(original)
    assert tree_state(root).key == before.key  # back to the first content


def test_a_subfolder_and_a_plain_folder_list_like_list_files(tmp_path):
    root = _git_repo(tmp_path)
    sub = root / "src"
    (sub / "new_untracked.py").write_text("def x():\n    pass\n")
    state = tree_state(sub)
    assert state.via == "git" and state.files == list_files(sub)
    assert "new_untracked.py" in state.files
    plain = generate(tmp_path / "plain", 6, 2)
    state = tree_state(plain)
    assert state.via == "stat" and state.files == list_files(plain)


def _service(root: Path, cache_dir: Path) -> tuple[IndexService, RepoMap]:
    repo_map = RepoMap(root)
    svc = IndexService(root, repo_map, cache_path=cache_file(root, cache_dir), in_process=True).start()
    return svc, repo_map


def _renders(repo_map: RepoMap) -> list[str]:
    return [repo_map.render(3000, prompt=p).text for p in PROMPTS]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(OPS, max_size=8), st.lists(OPS, max_size=6), st.booleans(), st.booleans())
def test_a_checked_map_equals_a_fresh_scan_after_any_history(tmp_path_factory, offline, live, preloaded,
                                                             miss_one):
    """Launch, stop; change the tree while the app is closed (`offline`); launch again on
    the cache (its map is shown before the check); change the tree while it runs, telling
    it as the watcher would (`live`; with `miss_one`, the last change is never told, as if
    it happened just before the app quit); stop (the map snapshot is stored if it is the
    tree's); launch a third time. Whenever a launch says its map is checked, the map is
    what a fresh scan gives."""
    base = tmp_path_factory.mktemp("inv")
    root = _git_repo(base, files=8)
    cache_dir = base / "cache"
    first, _ = _service(root, cache_dir)
    assert first.wait(60)
    first.stop()
    for step, (op, pick) in enumerate(offline):
        _apply(root, op, pick, step)
    if preloaded:
        preload(root, cache_file(root, cache_dir))
    second, map2 = _service(root, cache_dir)
    try:
        assert second.wait(60, what="map")
        assert _renders(map2) == _renders(RepoMap(root))
        for step, (op, pick) in enumerate(live, start=100):
            before = _contents(root)
            _apply(root, op, pick, step)
            after = _contents(root)
            if miss_one and step == 100 + len(live) - 1:
                break
            for rel in sorted(before.keys() | after.keys()):
                if before.get(rel) != after.get(rel):
                    map2.on_file_event(rel)
        second.wait(60)
    finally:
        second.stop()
    third, map3 = _service(root, cache_dir)
    try:
        assert third.wait(60, what="map")
        assert _renders(map3) == _renders(RepoMap(root))
    finally:
        third.stop()


def _snapshot_damage(path: Path, damage: str, other_root: Path) -> None:
    import json
    import struct

    from core.indexing.cache import SNAPSHOT_MAGIC

    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "flipped":  # one byte after the header changed: the checksum refuses it
        i = len(data) - 100
        path.write_bytes(data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:])
    else:  # another version, another repository, another name in an intact file
        pos = len(SNAPSHOT_MAGIC)
        (length,) = struct.unpack_from("<I", data, pos)
        header = json.loads(data[pos + 4:pos + 4 + length])
        header.update({"other_version": {"version": header["version"] - 1},
                       "foreign": {"root": str(other_root.resolve())},
                       "renamed": {"name": "tag"}}[damage])
        raw = json.dumps(header).encode()
        raw += b" " * (length - len(raw)) if len(raw) <= length else b""
        assert len(raw) == length, "the test keeps the header's length (and so every offset)"
        path.write_bytes(data[:pos + 4] + raw + data[pos + 4 + length:])


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "flipped", "other_version", "foreign",
                                    "renamed"])
def test_a_damaged_or_foreign_map_snapshot_is_refused_and_rebuilt(tmp_path, damage):
    from core.indexing.cache import read_latest_snapshot, snapshot_file

    root = _git_repo(tmp_path, files=8)
    other = generate(tmp_path / "rep2", 4, 7)  # a root as long as "repo": the header keeps its size
    cache_dir = tmp_path / "cache"
    first, map1 = _service(root, cache_dir)
    assert first.wait(60)
    expected = _renders(map1)
    first.stop()
    cache = cache_file(root, cache_dir)
    snap = snapshot_file(cache, "map")
    assert read_latest_snapshot(root, "map", cache) is not None
    _snapshot_damage(snap, damage, other)
    assert read_latest_snapshot(root, "map", cache) is None
    second, map2 = _service(root, cache_dir)
    try:
        assert second.wait(60, what="map")
        assert _renders(map2) == expected == _renders(RepoMap(root))
    finally:
        second.stop()
    assert read_latest_snapshot(root, "map", cache) is not None, "rebuilt and stored again"
