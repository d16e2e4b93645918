"""Adding and dropping files: refusals with reasons, all-or-nothing, globs, read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.context.files import ContextError
from core.context.prompt import ChatContext
from core.workspace.files import Workspace


def test_add_lists_files_with_tokens_and_read_only_flag(project: Path):
    ctx = ChatContext(project, 32000)
    assert ctx.add(["app/dates.py", "./app/invoices.py"]) == ["app/dates.py", "app/invoices.py"]
    assert ctx.add(["README.md"], read_only=True) == ["README.md"]
    listing = {f.path: f for f in ctx.files}
    assert list(listing) == ["app/dates.py", "app/invoices.py", "README.md"]
    assert listing["README.md"].read_only and not listing["app/dates.py"].read_only
    assert all(f.tokens > 0 for f in listing.values())


@pytest.mark.parametrize(("path", "reason"), [
    ("data.bin", "binary"),
    ("secret.log", "ignored"),
    ("build/out.py", "ignored"),
    ("missing.py", "no such file"),
    ("../outside.py", "outside"),
    ("/etc/passwd", "absolute"),
    (".git/config", ".git"),
    ("app", "folder"),
])
def test_refused_files_say_why_and_nothing_is_added(project: Path, path: str, reason: str):
    ctx = ChatContext(project, 32000)
    with pytest.raises(ContextError, match=reason):
        ctx.add(["app/dates.py", path])
    assert ctx.files == []  # all or nothing: the good path was not added either


def test_huge_files_are_refused(project: Path):
    (project / "big.py").write_text("x = 1\n" * 200_000)  # 1.2 MB: over the workspace limit
    ctx = ChatContext(project, 32000)
    with pytest.raises(ContextError, match="limit"):
        ctx.add(["big.py"])


def test_a_file_too_big_for_the_window_is_refused(project: Path):
    (project / "long.py").write_text("value = compute(1, 2, 3)\n" * 2000)  # ~20k tokens
    with pytest.raises(ContextError, match="tokens, more than"):
        ChatContext(project, 8192).add(["long.py"])
    assert ChatContext(project, 128000).add(["long.py"]) == ["long.py"]


def test_denied_globs_of_the_apps_workspace_apply(project: Path):
    ws = Workspace(project, deny_globs=["*.md"])
    ctx = ChatContext(project, 32000, workspace=ws)
    with pytest.raises(ContextError, match="ignore rules"):
        ctx.add(["README.md"])


def test_globs_expand_over_the_tree_and_absolute_paths_inside_the_root_work(project: Path):
    ctx = ChatContext(project, 32000)
    assert ctx.add(["app/*.py"]) == [
        "app/__init__.py", "app/dates.py", "app/invoices.py", "app/report.py"]
    assert ctx.drop(["app/__init__.py"]) == ["app/__init__.py"]
    assert ctx.add([str(project / "web" / "widget.js")]) == ["web/widget.js"]
    with pytest.raises(ContextError, match="no file in the tree matches"):
        ctx.add(["docs/*.rst"])


def test_drop_unknown_is_an_error_and_drop_glob_matches_the_chat(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/dates.py", "app/report.py", "web/widget.js"])
    with pytest.raises(ContextError, match="not in the chat: app/nope.py"):
        ctx.drop(["app/nope.py"])
    assert ctx.drop(["app/*"]) == ["app/dates.py", "app/report.py"]
    assert [f.path for f in ctx.files] == ["web/widget.js"]


def test_adding_again_changes_read_only(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/dates.py"], read_only=True)
    ctx.add(["app/dates.py"])
    assert [(f.path, f.read_only) for f in ctx.files] == [("app/dates.py", False)]


def test_token_count_follows_the_file_on_disk(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/dates.py"])
    before = ctx.files[0].tokens
    with (project / "app" / "dates.py").open("a") as fh:
        fh.write("\n\ndef more_code(a, b, c):\n    return a + b + c\n")
    assert ctx.files[0].tokens > before
    (project / "app" / "dates.py").unlink()
    assert ctx.files[0].tokens == 0  # still listed, so the user sees it went away


def test_mentioned_paths_are_offered_when_in_the_tree_and_not_in_the_chat(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/report.py"])
    prompt = ("Move to_date from app/dates.py into `invoices.py`, update report.py and "
              "README.md; ignore missing.py, secret.log and __init__.py.")
    assert ctx.mentioned_paths(prompt) == ["app/dates.py", "app/invoices.py", "README.md",
                                           "app/__init__.py"]


def test_tree_files_for_the_picker_leave_out_ignored_files(project: Path):
    files = ChatContext(project, 32000).tree_files()
    assert "app/dates.py" in files and "web/widget.js" in files
    assert "secret.log" not in files and files == sorted(files)
