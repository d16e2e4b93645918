"""Slash commands and `spark context`."""

from __future__ import annotations

import json
from pathlib import Path

from core.context.commands import Command, parse_command, run_command
from core.context.prompt import ChatContext
from tui.cli import main


def test_parse_only_context_commands():
    assert parse_command("/add a.py 'b c.py'") == Command("add", ["a.py", "b c.py"])
    assert parse_command("  /DROP") == Command("drop", [])
    assert parse_command("/context why is it slow?") == Command("context", ["why is it slow?"])
    assert parse_command("/add 'unbalanced") == Command("add", ["'unbalanced"])
    assert parse_command("fix /add handling") is None
    assert parse_command("/race both") is None  # not ours: the app may route it


def run(ctx: ChatContext, line: str):
    command = parse_command(line)
    assert command is not None
    return run_command(ctx, command)


def test_add_files_drop_clear_context_flow(project: Path):
    ctx = ChatContext(project, 32000)
    result = run(ctx, "/add app/dates.py app/report.py")
    assert result.ok and result.changed and "app/dates.py, app/report.py" in result.text
    assert run(ctx, "/read README.md").text == "added as read-only reference: README.md"
    assert run(ctx, "/add --read web/widget.js").ok
    listing = run(ctx, "/files").text
    assert "app/dates.py" in listing and "README.md" in listing and "read-only" in listing
    assert "total" in listing.splitlines()[-1]

    refused = run(ctx, "/add data.bin")
    assert not refused.ok and "binary" in refused.text

    ctx.record_exchange("q", "a", None)
    cleared = run(ctx, "/clear")
    assert cleared.text == "fresh context: 1 turn(s) forgotten, 4 file(s) kept"

    view = run(ctx, "/context rename to_date")
    assert view.ok and view.report is not None and view.report.fits
    for name in ("system", "repo_map", "files", "prompt", "total"):
        assert name in view.text

    assert run(ctx, "/drop app/dates.py").text == "dropped: app/dates.py"
    assert not run(ctx, "/drop app/dates.py").ok
    assert run(ctx, "/drop").changed and ctx.files == []
    assert run(ctx, "/add").text.startswith("usage:")


def test_spark_context_json(project: Path, capsys):
    code = main(["context", str(project), "--add", "app/report.py", "app/dates.py",
                 "--read", "README.md", "--prompt", "rename to_date", "--window", "16000",
                 "--json"])
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert code == 0 and doc["fits"] and doc["window"] == 16000
    sections = {s["name"]: s for s in doc["sections"]}
    assert [f["path"] for f in sections["files"]["items"]] == ["app/report.py", "app/dates.py"]
    assert sections["read_only_files"]["items"][0]["path"] == "README.md"
    assert doc["total"] == sum(s["tokens"] for s in doc["sections"])
    assert doc["messages"][-1] == {"role": "user", "content": "rename to_date"}


def test_spark_context_text_and_errors(project: Path, capsys):
    assert main(["context", str(project), "--add", "app/dates.py"]) == 0
    assert "repo_map" in capsys.readouterr().out
    assert main(["context", str(project), "--add", "data.bin"]) == 2
    assert "binary" in capsys.readouterr().err
    assert main(["context", str(project / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert main(["context", str(project), "--window", "100"]) == 2


def test_spark_context_overflow_still_prints_the_report(project: Path, capsys):
    for name in ("a.py", "b.py", "c.py"):
        (project / name).write_text("value = compute(1, 2, 3)\n" * 100)
    code = main(["context", str(project), "--add", "a.py", "b.py", "c.py", "--window", "4096",
                 "--reserve", "512", "--json"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 1 and doc["fits"] is False and "/drop" in doc["error"]
    assert "/drop" in captured.err


def test_spark_context_takes_the_window_from_a_profile(project: Path, capsys, monkeypatch,
                                                       tmp_path: Path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    (project / ".spark.toml").write_text(
        '[profiles.tiny]\nbackend = "replay"\ntokens_per_s = 1000.0\ncontext_window = 8192\n')
    assert main(["context", str(project), "--profile", "tiny", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["window"] == 8192
    assert main(["context", str(project), "--profile", "tiny", "--window", "16000",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["window"] == 16000
    assert main(["context", str(project), "--profile", "nope"]) == 2
    assert "no such profile" in capsys.readouterr().err


def test_context_lists_every_item_in_words_never_a_raw_dict(project: Path):
    """/context once printed "{'rejections': 1}" for the prompt section."""
    ctx = ChatContext(project, 32000)
    ctx.add(["app/dates.py"])
    ctx.record_exchange("add docstrings", "done", None)
    ctx.add_rejection("app/dates.py", "-a\n+b\n", "too long")
    text = run(ctx, "/context").text
    assert "{" not in text and "'" not in text
    prompt_row = next(line for line in text.splitlines() if line.startswith("prompt"))
    assert "1 rejection" in prompt_row and "rejections" not in prompt_row
    assert "turn 1" in text and "app/dates.py" in text
