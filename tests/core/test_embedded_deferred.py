"""`spark`'s embedded core started after the app's first frame (issue 14): the port is
bound at once (the app has its URL), the engine and server come once the frame is shown;
a client that connects meanwhile is served then; a bad config still fails at once."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time

import pytest

from core.client import CoreClient, CoreConnectionError
from core.embedded import EmbeddedCore
from core.profiles import ConfigError
from tests.fakes.core import write_config

USER = [{"role": "user", "content": "write a function"}]


def test_a_deferred_core_serves_once_signalled_and_a_client_waiting_meanwhile_is_served(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    frame = threading.Event()
    core = EmbeddedCore(project_root=tmp_path, config_file=write_config(tmp_path))
    url = core.start(serve_after=frame)
    assert url.startswith("ws://127.0.0.1:")

    async def use() -> tuple[float, str]:
        client = await CoreClient.connect(url, timeout=10)
        connected = time.monotonic()
        s = await client.generate("fast", USER, max_tokens=20)
        async for _ in s:
            pass
        await client.close()
        assert s.done is not None
        return connected, s.done.reason

    try:
        time.sleep(0.3)
        assert core._server is None  # nothing of the engine or the server yet
        threading.Timer(0.3, frame.set).start()
        shown = time.monotonic()
        connected, reason = asyncio.run(use())
        assert reason == "length" and connected >= shown + 0.25
    finally:
        core.stop()
    with pytest.raises(CoreConnectionError):
        asyncio.run(CoreClient.connect(url, timeout=1))


def test_a_deferred_core_stopped_before_its_signal_ends_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    core = EmbeddedCore(project_root=tmp_path, config_file=write_config(tmp_path))
    core.start(serve_after=threading.Event())
    thread = core._thread
    began = time.monotonic()
    core.stop()
    assert thread is not None and not thread.is_alive()
    assert time.monotonic() - began < 1.0 and core._server is None


def test_a_deferred_core_with_a_bad_config_fails_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / ".spark.toml").write_text("[profiles.spark]\nspeed = 3\n")
    with pytest.raises(ConfigError, match=r"unknown field 'speed'"):
        EmbeddedCore(project_root=tmp_path).start(serve_after=threading.Event())


def test_spark_does_not_import_the_core_server_before_the_apps_first_frame(tmp_path):
    """In a fresh interpreter, `spark`'s path up to the app (preload, tui.app, the embedded
    core's start) leaves core.server and core.engine unimported until the frame's signal."""
    code = (
        "import sys, threading\n"
        "from pathlib import Path\n"
        "from core.embedded import EmbeddedCore\n"
        "import tui.app\n"
        "ev = threading.Event()\n"
        f"core = EmbeddedCore(project_root=Path({str(tmp_path)!r}))\n"
        "core.start(serve_after=ev)\n"
        "print(sorted(m for m in ('core.server', 'core.engine', 'websockets') if m in sys.modules))\n"
        "core.stop()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
