"""Prompt assembly: order, current content, history, feedback, trimming within the window."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.backends.tokens import count_message_tokens
from core.context.prompt import ChatContext, ContextOverflow
from core.context.tokens import message_tokens
from core.edits.instructions import EDIT_FORMAT_SYSTEM_PROMPT


def total(messages: list[dict]) -> int:
    return sum(message_tokens(m) for m in messages)


def test_sections_come_in_the_stated_order(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/report.py"])
    ctx.add(["README.md"], read_only=True)
    ctx.record_exchange("first question", "first answer", {"prompt_tokens": 10})
    messages, report = ctx.build_request("rename to_date")
    assert [s.name for s in report.sections] == [
        "system", "repo_map", "read_only_files", "history", "files", "prompt"]
    assert messages[0]["role"] == "system"
    assert messages[0]["content"].startswith(EDIT_FORMAT_SYSTEM_PROMPT.rstrip())
    contents = [m["content"] for m in messages]
    at_map = next(i for i, c in enumerate(contents) if "def to_date(text: str) -> date" in c)
    at_ro = next(i for i, c in enumerate(contents) if "# Invoicer" in c)
    at_hist = contents.index("first question")
    at_files = next(i for i, c in enumerate(contents) if "def summarize(" in c)
    assert 0 < at_map < at_ro < at_hist < at_files < len(messages) - 1
    assert messages[at_hist + 1] == {"role": "assistant", "content": "first answer"}
    assert messages[-1] == {"role": "user", "content": "rename to_date"}
    assert [m["role"] for m in messages[1:]] == ["user", "assistant"] * 4 + ["user"]
    assert report.total == total(messages) and report.fits
    assert report.total == count_message_tokens(messages)  # what the replay backend reports
    assert report.last_usage == {"prompt_tokens": 10}


def test_files_are_read_from_disk_at_each_request(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/dates.py"])
    (project / "app" / "dates.py").write_text("def user_edit():\n    return 42\n")
    messages, _ = ctx.build_request("go")
    files_msg = next(m["content"] for m in messages if "app/dates.py\n```" in m["content"])
    assert "def user_edit():" in files_msg and "to_date" not in files_msg


def test_fence_grows_when_a_file_contains_backticks(project: Path):
    (project / "doc.md").write_text("Example:\n```python\nx = 1\n```\n")
    ctx = ChatContext(project, 32000)
    ctx.add(["doc.md"])
    messages, _ = ctx.build_request("go")
    assert "doc.md\n````\nExample:" in "".join(m["content"] for m in messages)


def test_rejection_feedback_goes_with_the_next_request_only(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/dates.py"])
    ctx.add_rejection("app/dates.py", "-old\n+new", "keep the old name")
    ctx.add_rejection("app/dates.py", "-a\n+b", None)
    messages, report = ctx.build_request("try again")
    last = messages[-1]["content"]
    assert "rejected" in last and "keep the old name" in last and "no reason given" in last
    assert "-old\n+new" in last and last.endswith("try again")
    assert report.section("prompt").items == [{"rejections": 2}]
    ctx.record_exchange("try again", "second answer", None)
    messages, _ = ctx.build_request("next")
    assert messages[-1]["content"] == "next"
    assert any("keep the old name" in m["content"] for m in messages[:-1])  # in the history


def test_clear_forgets_the_conversation_and_keeps_the_files(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/dates.py"])
    ctx.record_exchange("q", "a", {"prompt_tokens": 5})
    ctx.add_rejection("app/dates.py", "-x", "no")
    ctx.clear()
    messages, report = ctx.build_request("fresh")
    assert report.section("history").tokens == 0
    assert [f.path for f in ctx.files] == ["app/dates.py"]
    assert messages[-1]["content"] == "fresh" and report.last_usage is None


def test_with_no_files_the_model_is_told_and_the_map_gets_more_room(project: Path):
    ctx = ChatContext(project, 128000, map_tokens=60)
    messages, report = ctx.build_request("where is the date parsing?")
    assert messages[-1]["content"].startswith("No files are in the chat")
    assert report.section("files").tokens == 0
    ctx.add(["app/report.py"])
    _, with_files = ctx.build_request("where is the date parsing?")
    assert report.section("repo_map").tokens > with_files.section("repo_map").tokens


def big_project(root: Path, modules: int = 60) -> Path:
    from tests.core.context.conftest import make_project

    make_project(root)
    for i in range(modules):
        funcs = "".join(
            f"def helper_{i}_{j}(value, factor={j}):\n    return value * factor\n\n"
            for j in range(12))
        (root / "app" / f"mod_{i}.py").write_text(f"from app.dates import to_date\n\n{funcs}")
    return root


@pytest.mark.parametrize("window", [8192, 16384, 32768, 65536, 131072])
def test_token_budgets_hold_for_windows_from_8k_to_128k(tmp_path: Path, window: int):
    root = big_project(tmp_path / "big")
    ctx = ChatContext(root, window)
    ctx.add(["app/invoices.py", "app/report.py"])
    ctx.add(["README.md"], read_only=True)
    for i in range(150):  # ~40k tokens of conversation
        ctx.record_exchange(f"question {i} " + "why " * 100, f"answer {i} " + "because " * 150)
    messages, report = ctx.build_request("add a due-date check")
    assert report.total == total(messages) <= window - report.reserve
    assert report.section("repo_map").tokens > 0
    assert report.section("files").tokens > 0
    if window < 65536:
        assert any("older turn(s) left out" in t for t in report.trimmed)
    # what is kept of the history is the most recent part, in order
    kept = [m["content"].split(" ")[1] for m in messages if m["content"].startswith("question")]
    assert kept == [str(i) for i in range(150 - len(kept), 150)]


def test_history_gives_way_before_the_map_and_the_map_before_read_only_files(tmp_path: Path):
    root = big_project(tmp_path / "big")
    (root / "spec.md").write_text("Requirement: dates are ISO 8601.\n" * 300)  # ~3k tokens
    ctx = ChatContext(root, 8192, reserve=1024, map_tokens=1024)
    ctx.add(["app/dates.py"])
    ctx.add(["spec.md"], read_only=True)
    for i in range(20):
        ctx.record_exchange(f"q{i} " + "word " * 200, f"a{i} " + "word " * 200)
    _, report = ctx.build_request("go")
    map_tokens = report.section("repo_map").tokens
    assert len(report.section("history").items) < 20  # older turns went first
    assert report.section("read_only_files").tokens > 0
    assert map_tokens > 900  # the map kept (about) its full budget

    (root / "spec.md").write_text("Requirement: dates are ISO 8601.\n" * 640)  # ~6.5k tokens
    messages, tight = ctx.build_request("go")
    assert len(tight.section("history").items) == 1  # older turns all gone...
    assert any(m["content"].startswith("q19 ") for m in messages)  # ...the latest one kept
    assert 0 < tight.section("repo_map").tokens < map_tokens  # the map shrank before it
    assert tight.section("read_only_files").tokens > 0  # read-only files give way last
    assert tight.fits


def test_overflow_is_refused_with_a_report(tmp_path: Path):
    from tests.core.context.conftest import make_project

    root = make_project(tmp_path / "p")
    for name in ("a.py", "b.py", "c.py"):  # ~1,300 tokens each: each fits, not all three
        (root / name).write_text("value = compute(1, 2, 3)\n" * 100)
    ctx = ChatContext(root, 4096, reserve=512)
    ctx.add(["a.py", "b.py", "c.py"])
    with pytest.raises(ContextOverflow, match="/drop") as info:
        ctx.build_request("go")
    assert not info.value.report.fits
    assert info.value.report.section("files").tokens > 3000
    assert ctx.preview("go").fits is False


def test_window_too_small_is_refused(project: Path):
    from core.context.files import ContextError

    with pytest.raises(ContextError, match="too small"):
        ChatContext(project, 500)
    with pytest.raises(ContextError, match="leaves no room"):
        ChatContext(project, 8192, reserve=8000)


def test_ai_comment_puts_the_file_in_the_chat_and_asks_to_remove_the_comment(project: Path):
    path = project / "app" / "dates.py"
    path.write_text(path.read_text() + "\n# handle dates like 2024/01/02 too AI!\n")
    ctx = ChatContext(project, 32000)
    prompt = ctx.prompt_for_ai_comments("app/dates.py")
    assert [f.path for f in ctx.files] == ["app/dates.py"]
    assert "handle dates like 2024/01/02 too" in prompt and "remove each `AI!` comment" in prompt
    messages, _ = ctx.build_request(prompt)
    assert messages[-1]["content"] == prompt
    assert ctx.prompt_for_ai_comments("app/report.py") is None


def test_rejections_made_while_reviewing_wait_for_the_next_request(project: Path):
    ctx = ChatContext(project, 32000)
    ctx.add(["app/dates.py"])
    ctx.add_rejection("app/dates.py", "-a\n+b", "first")
    ctx.build_request("second try")  # carries "first"
    ctx.add_rejection("app/dates.py", "-c\n+d", "during review")  # of the answer streaming now
    ctx.record_exchange("second try", "answer", None)
    assert "first" in ctx.history[-1].prompt and "during review" not in ctx.history[-1].prompt
    messages, _ = ctx.build_request("third try")
    assert "during review" in messages[-1]["content"] and "first" not in messages[-1]["content"]


def test_resize_keeps_files_and_history_and_follows_the_window(tmp_path):
    from core.context.prompt import ChatContext

    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    ctx = ChatContext(tmp_path, 128_000)
    ctx.add(["a.py"])
    ctx.record_exchange("hi", "hello")
    ctx.resize(8192)
    assert ctx.window == 8192 and ctx.reserve == 1024
    assert [f.path for f in ctx.files] == ["a.py"] and ctx.history
    _messages, report = ctx.build_request("next")
    assert report.total <= report.budget
