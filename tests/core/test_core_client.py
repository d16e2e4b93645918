"""Client: persistent connection, state changes, reconnect with backoff, clean errors."""

import asyncio

import pytest

from core.client import CoreClient, CoreConnectionError, CoreError
from core.embedded import EmbeddedCore
from core.engine import Engine
from core.profiles import ConfigError, load_config
from core.server import CoreServer
from tests.fakes.core import write_config

USER = [{"role": "user", "content": "Write a long module for the pacing tests"}]


async def test_nothing_listening_is_a_clear_error():
    with pytest.raises(CoreConnectionError, match="no sparkstation core answers"):
        await CoreClient.connect("ws://127.0.0.1:9", timeout=1)


async def test_drop_fails_in_flight_streams_then_reconnects(tmp_path):
    config = load_config(config_file=write_config(tmp_path, tokens_per_s=300), env={})
    server = CoreServer(Engine(config, package_cassettes=False), port=0)
    url = await server.start()
    port = server.port
    states: list[str] = []
    client = await CoreClient.connect(url, on_state=states.append)
    stream = await client.generate("fast", USER)
    await stream.__aiter__().__anext__()
    await server.stop()
    with pytest.raises(CoreError) as exc:
        async for _ in stream:
            pass
    assert exc.value.code == "disconnected"
    await asyncio.sleep(0.05)
    assert client.state == "reconnecting"
    with pytest.raises(CoreError, match="disconnected"):
        await client.generate("fast", USER)
    server2 = CoreServer(Engine(config, package_cassettes=False), port=port)
    await server2.start()
    try:
        await client.wait_connected(timeout=10)
        assert client.state == "connected"
        again = await client.generate("fast", USER, max_tokens=5)
        async for _ in again:
            pass
        assert again.done.reason == "length" and again.done.usage["completion_tokens"] == 5
    finally:
        await client.close()
        await server2.stop()
    assert states[:2] == ["connected", "reconnecting"] and states[-2:] == ["connected", "closed"]


def test_embedded_core_runs_in_its_own_thread(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    core = EmbeddedCore(project_root=tmp_path, config_file=write_config(tmp_path))
    url = core.start()
    assert url.startswith("ws://127.0.0.1:")

    async def use() -> str:
        client = await CoreClient.connect(url)
        s = await client.generate("fast", USER, max_tokens=20)
        async for _ in s:
            pass
        await client.close()
        return s.done.reason

    try:
        assert asyncio.run(use()) == "length"
    finally:
        core.stop()
    with pytest.raises(CoreConnectionError):
        asyncio.run(CoreClient.connect(url, timeout=1))


def test_embedded_core_bad_config_is_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / ".spark.toml").write_text("[profiles.spark]\nspeed = 3\n")
    with pytest.raises(ConfigError, match=r"\.spark\.toml: profile 'spark': unknown field 'speed'"):
        EmbeddedCore(project_root=tmp_path).start()


def test_embedded_stop_is_quick_when_the_app_loop_is_gone(tmp_path, monkeypatch):
    """The app may exit without closing its client; `spark` must still quit promptly."""
    import time

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    core = EmbeddedCore(config_file=write_config(tmp_path, tokens_per_s=50))
    url = core.start()
    loop = asyncio.new_event_loop()

    async def leave_open():
        client = await CoreClient.connect(url)
        stream = await client.generate("fast", USER)
        events = stream.__aiter__()
        await events.__anext__()
        return client, events

    client, events = loop.run_until_complete(leave_open())
    t = time.perf_counter()
    core.stop()
    assert time.perf_counter() - t < 2.0
    loop.run_until_complete(client.close())  # tidy up the abandoned loop for pytest
    loop.run_until_complete(events.aclose())
    loop.close()
