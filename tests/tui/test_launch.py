"""`spark [PATH] [--profile] [--theme] [--core]`: bad launch options are one clear line, exit 2."""

from __future__ import annotations

import pytest

from tui.cli import main


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # a configured model (the demo's recordings), so the option under test is what fails;
    # a folder with no model at all is tests/tui/test_first_run.py's
    monkeypatch.setenv("SPARK_DEMO_PROFILES", "1")


@pytest.mark.parametrize("argv, message", [
    (["/no/such/folder"], "no such folder"),
    ([".", "--theme", "neon-nightmare"], "unknown theme 'neon-nightmare'"),
    ([".", "--profile", "turbo"], "unknown profile 'turbo'"),
    ([".", "--core", "ws://127.0.0.1:1"], "does not answer"),
])
def test_bad_launch_options_are_one_line_and_exit_2(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_bad_ui_config_names_the_file_and_field(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".spark.toml").write_text('[ui]\ntheme = 3\n')
    assert main(["."]) == 2
    err = capsys.readouterr().err
    assert ".spark.toml" in err and "theme" in err


def test_demo_refuses_a_non_empty_dir(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("keep me")
    assert main(["demo", "--dir", str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "mine.txt").read_text() == "keep me"
