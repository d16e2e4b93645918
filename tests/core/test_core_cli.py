"""`spark core serve`: serves the protocol, refuses a bad config, and a non-loopback token."""

import asyncio
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
                       env=env, capture_output=True, text=True, timeout=30)
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
