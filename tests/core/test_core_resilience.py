"""The client when the core misbehaves: killed mid-stream, nothing listening, a silent
TCP peer, a core that sends garbage."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from websockets.asyncio.server import serve

from core.client import CoreClient, CoreConnectionError, CoreError
from tests.fakes.core import write_config

USER = [{"role": "user", "content": "Write a long module for the pacing tests"}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(tmp_path, port: int) -> subprocess.Popen:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "core", "serve", "--port", str(port), "--config",
         str(write_config(tmp_path, tokens_per_s=300)), "--project", str(tmp_path)],
        env=env, stderr=subprocess.PIPE, text=True)
    assert "listening" in proc.stderr.readline()
    return proc


async def test_killed_core_ends_streams_then_client_reconnects(tmp_path):
    port = _free_port()
    proc = _serve(tmp_path, port)
    states: list[str] = []
    client = await CoreClient.connect(f"ws://127.0.0.1:{port}", on_state=states.append)
    try:
        streams = [await client.generate("fast", USER) for _ in range(3)]
        await streams[0].__aiter__().__anext__()
        proc.send_signal(signal.SIGKILL)  # no close frame, no goodbye
        proc.wait(timeout=5)
        for s in streams:
            with pytest.raises(CoreError) as exc:
                async with asyncio.timeout(5):
                    async for _ in s:
                        pass
            assert exc.value.code == "disconnected" and "lost" in exc.value.message
        assert client.state == "reconnecting"
        await asyncio.sleep(0.5)  # a few failed attempts: backoff grows, nothing crashes
        assert client.state == "reconnecting"
        proc = _serve(tmp_path, port)  # the core comes back on the same port
        await client.wait_connected(timeout=10)
        again = await client.generate("fast", USER, max_tokens=4)
        async for _ in again:
            pass
        assert again.done.reason == "length"
        assert states[:3] == ["connected", "reconnecting", "connected"]
    finally:
        await client.close()
        proc.terminate()
        proc.wait(timeout=10)


async def test_reconnect_backoff_grows_and_is_capped(monkeypatch):
    client = CoreClient("ws://127.0.0.1:1", None, None, True)
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(d):
        delays.append(d)
        if len(delays) >= 9:
            client._closing = True
        await real_sleep(0)

    async def failing_open(timeout):
        raise CoreConnectionError("nothing there")

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    monkeypatch.setattr(client, "_open", failing_open)
    await client._reconnect_loop(base=0.1, cap=2.0)
    assert delays[:5] == [0.1, 0.2, 0.4, 0.8, 1.6] and max(delays) == 2.0


def test_spark_core_nothing_listening_is_one_line_exit_2(tmp_path):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    r = subprocess.run([sys.executable, "-m", "tui.cli", "--core", "ws://127.0.0.1:1",
                        str(tmp_path)], env=env, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL, check=False)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "ws://127.0.0.1:1" in lines[0]


async def test_silent_tcp_peer_times_out_with_a_clear_message():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    try:
        t0 = time.perf_counter()
        with pytest.raises(CoreConnectionError) as exc:
            await CoreClient.connect(f"ws://127.0.0.1:{port}", timeout=0.5, reconnect=False)
        assert time.perf_counter() - t0 < 3
        assert "handshake" in exc.value.message and "0.5 s" in exc.value.message
    finally:
        srv.close()


async def _fake_core(handler):
    server = await serve(handler, "127.0.0.1", 0)
    port = next(iter(server.sockets)).getsockname()[1]
    return server, f"ws://127.0.0.1:{port}"


async def test_core_that_never_welcomes_times_out():
    async def handler(ws):
        await asyncio.sleep(5)

    server, url = await _fake_core(handler)
    try:
        with pytest.raises(CoreConnectionError, match="did not answer hello within 0.3 s"):
            await CoreClient.connect(url, timeout=0.3, reconnect=False)
    finally:
        server.close()


@pytest.mark.parametrize("reply", ["[]", "not json",
                                   '{"type":"error","code":"x","message":"go away"}'])
async def test_bad_welcome_is_a_clear_connection_error(reply):
    async def handler(ws):
        await ws.recv()
        await ws.send(reply)
        await asyncio.sleep(1)

    server, url = await _fake_core(handler)
    try:
        with pytest.raises(CoreConnectionError):
            await CoreClient.connect(url, timeout=2, reconnect=False)
    finally:
        server.close()


async def test_garbage_from_the_core_does_not_kill_the_reader():
    """Frames that are JSON but not objects, or objects of the wrong shape, are skipped;
    the stream still gets its deltas and done."""
    async def handler(ws):
        await ws.recv()
        await ws.send(json.dumps({"type": "welcome", "protocol": 1, "profiles": [5]}))
        gen = json.loads(await ws.recv())
        for junk in ("[]", "7", "{bad", json.dumps({"type": "delta", "id": gen["id"]}),
                     json.dumps({"type": "error", "id": gen["id"], "code": "duplicate_id",
                                 "message": "m", "stream_continues": True})):
            await ws.send(junk)
        await ws.send(json.dumps({"type": "delta", "id": gen["id"], "text": "ok", "tokens": 1}))
        await ws.send(json.dumps({"type": "done", "id": gen["id"], "reason": "stop",
                                  "usage": {}, "timing": {}}))
        await asyncio.sleep(1)

    server, url = await _fake_core(handler)
    try:
        client = await CoreClient.connect(url, reconnect=False)
        assert client.profiles == []
        s = await client.generate("p", USER)
        async with asyncio.timeout(5):
            async for _ in s:
                pass
        assert s.text == "ok" and s.done.reason == "stop"
        await client.close()
    finally:
        server.close()
