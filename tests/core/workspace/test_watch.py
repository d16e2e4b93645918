"""Watching: debounced batches, .gitignore honoured, stops on the event."""

from __future__ import annotations

import asyncio

from core.workspace.watch import FileChange, IgnoreRules, watch_tree


def test_ignore_rules_root_nested_and_always(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("local.txt\n")
    rules = IgnoreRules(tmp_path, extra=["*.tmp"])
    assert rules.ignored("build/out.o")
    assert rules.ignored("x/build/out.o")
    assert rules.ignored("debug.log") and not rules.ignored("keep.log")
    assert rules.ignored("sub/local.txt") and not rules.ignored("local.txt")
    assert rules.ignored(".git/index") and rules.ignored(".spark/journal/1.json")
    assert rules.ignored("a.py.x.spark-tmp") and rules.ignored("scratch.tmp")
    assert not rules.ignored("src/app.py")


async def _collect(root, stop, out, ready):
    ready.set()
    async for batch in watch_tree(root, stop, debounce_ms=30):
        out.append(batch)


async def test_watch_reports_changes_and_skips_ignored(tmp_path):
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    stop, ready, batches = asyncio.Event(), asyncio.Event(), []
    task = asyncio.create_task(_collect(tmp_path, stop, batches, ready))
    await ready.wait()
    await asyncio.sleep(0.3)  # let the watcher start
    (tmp_path / "ignored" / "junk.bin").write_text("noise")
    (tmp_path / "a.py").write_text("x = 2\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    for _ in range(50):
        await asyncio.sleep(0.05)
        seen = {c.path for b in batches for c in b}
        if {"a.py", "b.py"} <= seen:
            break
    stop.set()
    await asyncio.wait_for(task, 5)
    changes = [c for b in batches for c in b]
    assert {c.path for c in changes} == {"a.py", "b.py"}
    assert FileChange("b.py", "added") in changes
    assert all(isinstance(b, list) and b == sorted(b) for b in batches)


def test_editor_temp_files_are_ignored(tmp_path):
    rules = IgnoreRules(tmp_path)
    for temp in ["4913", "src/.app.py.swp", "src/.app.py.swx", "app.py~", ".#app.py", "#app.py#",
                 "app.py___jb_tmp___", "app.py___jb_old___", ".goutputstream-AB12CD", "sedXy12Zq",
                 "src/.~lock.notes.odt#"]:
        assert rules.ignored(temp), temp
    for real in ["app.py", "src/swap.py", "notes~draft.md", "sed.py", "4913.py", "src/4913x"]:
        assert not rules.ignored(real), real


async def _watch_until(root, action, wanted, timeout_steps=60):
    stop, ready, batches = asyncio.Event(), asyncio.Event(), []
    task = asyncio.create_task(_collect(root, stop, batches, ready))
    await ready.wait()
    await asyncio.sleep(0.3)
    action()
    for _ in range(timeout_steps):
        await asyncio.sleep(0.05)
        if wanted <= {c.path for b in batches for c in b}:
            break
    stop.set()
    await asyncio.wait_for(task, 5)
    return [c for b in batches for c in b]


async def test_a_save_by_rename_is_reported_as_modified(tmp_path):
    """vim, JetBrains and most editors write a temp file and rename it over the original."""
    import os

    (tmp_path / "app.py").write_text("x = 1\n")

    def save_like_an_editor():
        (tmp_path / "4913").write_text("")
        (tmp_path / "4913").unlink()
        (tmp_path / ".app.py.swp").write_text("swap")
        tmp = tmp_path / "app.py___jb_tmp___"
        tmp.write_text("x = 2\n")
        os.replace(tmp, tmp_path / "app.py")
        (tmp_path / "new.py").write_text("y = 1\n")

    changes = await _watch_until(tmp_path, save_like_an_editor, {"app.py", "new.py"})
    assert {c.path for c in changes} == {"app.py", "new.py"}
    kinds = {c.path: c.kind for c in changes}
    assert kinds["app.py"] == "modified"
    assert kinds["new.py"] == "added"
