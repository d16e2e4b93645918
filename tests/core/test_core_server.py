"""The server over a real loopback websocket: multiplexing, cancel, steer, bad input,
security checks and bounded memory under a slow reader."""

import asyncio
import json
import socket
import time

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from core.client import CoreClient, CoreConnectionError, CoreError, Delta, Info
from tests.fakes.core import running_core

USER = [{"role": "user", "content": "Write a long module for the pacing tests"}]


async def _raw(url, **kw):
    ws = await connect(url, **kw)
    await ws.send(json.dumps({"type": "hello", "protocol": 1}))
    welcome = json.loads(await ws.recv())
    assert welcome["type"] == "welcome"
    return ws


async def _until(ws, pred, timeout=5.0):
    frames = []
    async with asyncio.timeout(timeout):
        while True:
            frame = json.loads(await ws.recv())
            frames.append(frame)
            if pred(frame):
                return frames


async def test_welcome_lists_profiles(tmp_path):
    async with running_core(tmp_path) as (url, _):
        client = await CoreClient.connect(url)
        names = [p["name"] for p in client.profiles]
        assert names == ["fast"]  # exactly what the config names: no model is built in
        fast = client.profile("fast")
        assert set(fast) >= {"name", "backend", "chip", "model", "context_window", "predicted"}
        assert fast["predicted"]["tokens_per_s"] == 20000.0
        assert client.state == "connected"
        assert await client.ping() < 1.0
        await client.close()
        assert client.state == "closed"


async def test_sixteen_streams_interleave_and_complete(tmp_path):
    async with running_core(tmp_path, tokens_per_s=5000) as (url, _):
        client = await CoreClient.connect(url)
        streams = [await client.generate("fast", USER) for _ in range(16)]
        order: list[str] = []

        async def drain(s):
            async for _ in s:
                order.append(s.id)
            return s

        done = await asyncio.gather(*(drain(s) for s in streams))
        assert all(s.done.reason == "stop" for s in done)
        texts = {s.text for s in done}
        assert len(texts) == 1 and len(next(iter(texts))) > 1000
        # interleaved: the first stream's frames do not all come before the last's
        first_last = max(i for i, sid in enumerate(order) if sid == streams[0].id)
        last_first = min(i for i, sid in enumerate(order) if sid == streams[-1].id)
        assert last_first < first_last
        await client.close()


async def test_cancel_is_prompt_and_leaves_others(tmp_path):
    async with running_core(tmp_path, tokens_per_s=200) as (url, _):
        client = await CoreClient.connect(url)
        a = await client.generate("fast", USER)
        b = await client.generate("fast", USER)
        async for ev in a:  # wait until a is streaming
            if isinstance(ev, Delta):
                break
        t0 = time.perf_counter()
        await a.cancel()
        async for _ in a:
            pass
        elapsed = time.perf_counter() - t0
        assert a.done.reason == "cancelled"
        assert elapsed < 0.02 * 5  # 20 ms goal; generous for a loaded 2-core CI box
        assert a.done.usage["completion_tokens"] >= 1
        got = []
        async for ev in b:
            got.append(ev)
            if len(got) == 3:
                break
        assert b.done is None and not b.finished
        await b.cancel()
        async for _ in b:
            pass
        assert b.done.reason == "cancelled"
        await client.close()


async def test_steer_continues_under_same_id(tmp_path):
    async with running_core(tmp_path, tokens_per_s=300) as (url, _):
        client = await CoreClient.connect(url)
        s = await client.generate("fast", USER)
        events = []
        async for ev in s:
            events.append(ev)
            if len(events) == 2:
                await s.steer("Actually, export the report to a CSV file with a header row")
        infos = [e for e in events if isinstance(e, Info)]
        assert [i.event for i in infos] == ["source", "steered", "source"]
        assert infos[0].data["source"]["id"] == "t-long"
        steered = infos[1]
        assert steered.data["kept_tokens"] >= 1
        after = "".join(e.text for e in events[events.index(steered) + 1:]
                        if isinstance(e, Delta))
        assert "csv.writer" in after  # the redirect picked the CSV answer
        assert s.done.reason == "stop" and s.done.source["steers"] == 1
        assert s.done.source["id"] == "t-csv"
        await client.close()


async def test_bad_input_gets_error_frames_and_connection_survives(tmp_path):
    async with running_core(tmp_path, tokens_per_s=2000) as (url, _):
        ws = await _raw(url)
        await ws.send(json.dumps({"type": "generate", "id": "live", "profile": "fast",
                                  "messages": USER}))
        bad = [
            ("{oops", "invalid_json"),
            ('{"type": "explode"}', "unknown_type"),
            ('{"type": "generate", "id": "g", "profile": "fast"}', "invalid_field"),
            ('{"type": "generate", "id": "g", "profile": 5, "messages": []}', "invalid_field"),
            (json.dumps({"type": "ping", "data": "x" * (1024 * 1024 + 10)}), "frame_too_large"),
            (json.dumps({"type": "generate", "id": "g2", "profile": "nope", "messages": USER}),
             "unknown_profile"),
            (json.dumps({"type": "generate", "id": "live", "profile": "fast", "messages": USER}),
             "duplicate_id"),
            ('{"type": "cancel", "id": "ghost"}', "unknown_id"),
            ('{"type": "hello", "protocol": 2}', "unsupported_protocol"),
        ]
        for raw, code in bad:
            await ws.send(raw)
            frames = await _until(ws, lambda f: f["type"] == "error")
            assert frames[-1]["code"] == code, raw[:60]
            assert frames[-1]["message"]
        # the live stream was untouched and finishes normally
        frames = await _until(ws, lambda f: f["type"] == "done" and f["id"] == "live",
                              timeout=10)
        assert frames[-1]["reason"] == "stop"
        await ws.send('{"type":"ping","data":7}')
        frames = await _until(ws, lambda f: f["type"] == "pong")
        assert frames[-1]["data"] == 7
        await ws.close()


async def test_hello_required_first(tmp_path):
    async with running_core(tmp_path) as (url, _), connect(url) as ws:
        await ws.send(json.dumps({"type": "generate", "id": "a", "profile": "fast",
                                  "messages": USER}))
        frame = json.loads(await ws.recv())
        assert frame["type"] == "error" and frame["code"] == "hello_required"
        assert frame["id"] == "a"


async def test_browser_origin_is_refused(tmp_path):
    async with running_core(tmp_path) as (url, _):
        with pytest.raises(InvalidStatus) as exc:
            await connect(url, origin="https://evil.example")
        assert exc.value.response.status_code == 403
        # the same server without an Origin header (our client) is fine
        client = await CoreClient.connect(url)
        assert client.state == "connected"
        await client.close()


async def test_token_required_when_configured(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPARK_CORE_TOKEN", raising=False)
    async with running_core(tmp_path, token="s3cret") as (url, _):
        with pytest.raises(CoreConnectionError, match="401"):
            await CoreClient.connect(url, reconnect=False)
        with pytest.raises(CoreConnectionError, match="401"):
            await CoreClient.connect(url, token="wrong", reconnect=False)
        client = await CoreClient.connect(url, token="s3cret")
        assert client.state == "connected"
        await client.close()


async def test_unknown_profile_error_raises_from_iteration(tmp_path):
    async with running_core(tmp_path) as (url, _):
        client = await CoreClient.connect(url)
        s = await client.generate("nope", USER)
        with pytest.raises(CoreError) as exc:
            async for _ in s:
                pass
        assert exc.value.code == "unknown_profile"
        await client.close()


async def test_slow_reader_does_not_grow_memory(tmp_path):
    """A client that stops reading: the core's queue stays bounded and streams wait."""
    from core.server import OUT_QUEUE_FRAMES

    big = tmp_path / "big"
    big.mkdir()
    answer = "def f(x):\n    return x + 1\n" * 30_000  # ~0.8 MB per answer, 9 MB in all
    (big / "big.jsonl").write_text(json.dumps({"version": 1, "id": "big", "messages": USER,
                                               "answer": answer}) + "\n")
    async with running_core(tmp_path, tokens_per_s=1e6, frame_ms=1, cassettes=big) as (
            url, server):
        ws = await _raw(url, max_size=None)
        sock = ws.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # no autotuned megabytes
        ws.transport.pause_reading()  # stop reading: socket buffers fill, then the core waits
        for i in range(12):
            await ws.send(json.dumps({"type": "generate", "id": f"s{i}", "profile": "fast",
                                      "messages": USER}))
        conns = list(server.connections)
        assert len(conns) == 1
        conn = conns[0]

        def sent() -> int:
            return sum(j.tokens_sent for j in conn.jobs.values())

        before, stalled = sent(), False
        for _ in range(60):  # wait until the socket buffers are full and progress stops
            await asyncio.sleep(0.25)
            assert conn.out.qsize() <= OUT_QUEUE_FRAMES
            now = sent()
            if now == before and now > 0:
                stalled = True
                break
            before = now
        assert stalled, "the core kept producing for a reader that reads nothing"
        assert len(conn.jobs) == 12  # nothing finished: all wait for the reader
        assert conn.out.qsize() <= OUT_QUEUE_FRAMES
        ws.transport.resume_reading()
        done = set()
        async with asyncio.timeout(30):
            while len(done) < 12:
                frame = json.loads(await ws.recv())
                if frame["type"] == "done":
                    assert frame["reason"] == "stop"
                    done.add(frame["id"])
        await ws.close()



async def test_stream_limit_per_connection(tmp_path):
    async with running_core(tmp_path, tokens_per_s=100, max_streams=2) as (url, _):
        client = await CoreClient.connect(url)
        a = await client.generate("fast", USER)
        b = await client.generate("fast", USER)
        c = await client.generate("fast", USER)
        with pytest.raises(CoreError) as exc:
            async for _ in c:
                pass
        assert exc.value.code == "too_many_streams"
        await a.cancel()
        async for _ in a:
            pass
        d = await client.generate("fast", USER, max_tokens=3)  # a's slot is free again
        async for _ in d:
            pass
        assert d.done.reason == "length" and not b.finished
        await client.close()


async def test_an_id_may_be_reused_after_its_stream_ended(tmp_path):
    async with running_core(tmp_path) as (url, _):
        client = await CoreClient.connect(url)
        for _ in range(2):
            s = await client.generate("fast", USER, max_tokens=2, stream_id="same")
            async for _ in s:
                pass
            assert s.done.reason == "length"
        await client.close()
