"""`spark core serve`: serves the protocol, refuses a bad config, and a non-loopback token."""

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys

import pytest

from core.auth import is_loopback, load_or_create_token
from core.client import CoreClient
from tests.fakes.core import write_config


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_and_stops(tmp_path):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tui.cli", "core", "serve", "--port", str(port),
                             "--config", str(write_config(tmp_path)), "--project", str(tmp_path)],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert f"ws://127.0.0.1:{port}" in line

        async def use() -> str:
            client = await CoreClient.connect(f"ws://127.0.0.1:{port}")
            s = await client.generate("fast", [{"role": "user", "content": "csv"}])
            async for _ in s:
                pass
            await client.close()
            return s.text

        assert "csv.writer" in asyncio.run(use())
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_serve_bad_config_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.spark]\ncontext_window = 'x'\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    r = subprocess.run([sys.executable, "-m", "tui.cli", "core", "serve", "--config", str(bad)],
                       env=env, capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 2
    assert "bad.toml" in r.stderr and "'context_window'" in r.stderr and r.stdout == ""


def test_token_file_is_private_and_stable(tmp_path):
    path = tmp_path / "cfg" / "core_token"
    token = load_or_create_token(path)
    assert len(token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_token(path) == token


def test_loopback_detection():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")


def test_non_loopback_bind_requires_token(tmp_path):
    from core.engine import Engine
    from core.profiles import load_config
    from core.server import CoreServer

    engine = Engine(load_config(config_file=write_config(tmp_path), env={}))
    with pytest.raises(ValueError, match="a token is required"):
        CoreServer(engine, host="0.0.0.0")


# ---- the `spark` command's contracts: JSON on stdout, errors on stderr with exit 2 ----

JSON_ERRORS = [
    ["hw", "predict", "--chip", "no-such-chip", "--model", "llama-3.1-8b", "--json"],
    ["hw", "predict", "--chip", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "x",
     "--json"],
    ["dups", "scan", "{tmp}/missing", "--json"],
    ["slop", "{tmp}/missing", "--json"],
    ["apply", "{tmp}/missing.md", "--json"],
    ["apply", "--json", "--no-such-flag"],
    ["context", "{tmp}/missing", "--json"],
    ["context", "--window", "-5", "--json"],
    ["report", "no-such-session", "--json"],
    ["report", "--json", "--no-such-flag"],
]


def _spark(argv, tmp_path, monkeypatch, capsys):
    from tui.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    try:
        code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", JSON_ERRORS, ids=[" ".join(a) for a in JSON_ERRORS])
def test_json_commands_error_on_stderr_exit_2(argv, tmp_path, monkeypatch, capsys):
    code, out, err = _spark(argv, tmp_path, monkeypatch, capsys)
    assert code == 2 and "error" in err and "Traceback" not in err
    if out:  # a command may describe the failure as its one JSON document (apply does)
        json.loads(out)


@pytest.mark.parametrize("argv", [
    ["hw", "predict", "--chip", "h100-sxm", "--model", "llama-3.1-8b", "--json"],
    ["dups", "scan", "{tmp}", "--json"],
    ["slop", "{tmp}", "--json"],
])
def test_json_commands_print_exactly_one_document(argv, tmp_path, monkeypatch, capsys):
    (tmp_path / "m.py").write_text("def f(x):\n    return x + 1\n")
    code, out, err = _spark(argv, tmp_path, monkeypatch, capsys)
    assert code == 0, err
    json.loads(out)  # one document: extra text would make this fail


def test_help_lists_every_subcommand(tmp_path, monkeypatch, capsys):
    from tui.cli import SUBCOMMANDS

    code, out, _ = _spark(["--help"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "--core" in out
    listed = out.split("subcommands")[1]
    for name in SUBCOMMANDS:
        assert f"\n  {name} " in listed, name


@pytest.mark.parametrize("name", ["demo", "core", "hw", "dups", "slop", "apply", "undo",
                                  "context", "race", "report", "vary", "batch"])
def test_each_subcommand_has_help(name, tmp_path, monkeypatch, capsys):
    code, out, _ = _spark([name, "--help"], tmp_path, monkeypatch, capsys)
    assert code == 0 and out.startswith("usage: spark") and name in out


def test_broken_pipe_is_quiet(tmp_path):
    """`spark hw predict ... | head -c1`: no BrokenPipeError traceback."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    for argv in (["hw", "chips"], ["hw", "predict", "--chip", "h100-sxm", "--model",
                                   "llama-3.1-8b", "--json"], ["--help"]):
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader has already left, as `head` does: every write fails
        try:
            r = subprocess.run([sys.executable, "-m", "tui.cli", *argv], env=env,
                               stdout=write_end, stderr=subprocess.PIPE, timeout=30,
                               check=False)
        finally:
            os.close(write_end)
        err = r.stderr.decode()
        assert r.returncode == 0, err
        assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_serve_record_into_a_file_is_refused(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    r = subprocess.run([sys.executable, "-m", "tui.cli", "core", "serve", "--port", "0",
                        "--config", str(write_config(tmp_path)), "--record", str(afile)],
                       env=env, capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 2 and "--record" in r.stderr and "Traceback" not in r.stderr
