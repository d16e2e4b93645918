"""The openai backend against FakeOpenAI (real SSE bytes over loopback), through the core."""

import asyncio
import json

import pytest

from core.backends.openai import parse_retry_after
from core.client import CoreClient, CoreError
from tests.fakes.core import running_core
from tests.fakes.openai_server import FakeOpenAI, Reply

USER = [{"role": "user", "content": "add a docstring"}]


def _extra(fake: FakeOpenAI, **kw) -> str:
    lines = ["[profiles.live]", 'backend = "openai"', f'base_url = "{fake.url}"',
             'api_model = "fake-model"', 'api_key_env = "FAKE_KEY"', "read_timeout_s = 2.0",
             "connect_timeout_s = 1.0"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in kw.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-test-SECRET-123")
    with FakeOpenAI() as server:
        yield server


async def _collect(url, messages=USER, **kw):
    client = await CoreClient.connect(url)
    try:
        s = await client.generate("live", messages, **kw)
        async for _ in s:
            pass
        return s
    finally:
        await client.close()


async def test_streams_answer_with_usage_and_timing(tmp_path, fake):
    fake.script.append(Reply.text("def f():\n    return 1\n", ttft_s=0.05, delay_s=0.002,
                                  usage={"prompt_tokens": 11, "completion_tokens": 7}))
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake)) as (url, _):
        s = await _collect(url, max_tokens=50)
    assert s.text == "def f():\n    return 1\n"
    assert s.done.reason == "stop"
    assert s.done.usage == {"prompt_tokens": 11, "completion_tokens": 7}  # the server's usage
    assert s.done.timing["ttft_ms"] >= 45  # measured, not predicted
    assert s.done.timing["upstream"]["ttft_ms"] >= 45
    assert s.done.source["backend"] == "openai" and s.done.source["model"] == "fake-model"
    req = fake.requests[-1]
    body = req.json
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "fake-model" and body["max_tokens"] == 50
    assert body["messages"] == USER
    assert req.headers["Authorization"] == "Bearer sk-test-SECRET-123"


@pytest.mark.parametrize("reply, code, words", [
    (Reply.status(401, "Incorrect API key"), "auth", ["FAKE_KEY", "401"]),
    (Reply.status(404, "model nope does not exist"), "model_not_found", ["fake-model", "404"]),
    (Reply.status(503, "overloaded"), "upstream_error", ["503", "overloaded"]),
    (Reply.status(429, "slow down", headers={"Retry-After": "120"}), "rate_limited", ["120"]),
    (Reply.cut("one two three four five", after=2), "stream_cut", ["cut"]),
    (Reply.hang(3.0), "read_timeout", ["read timeout"]),
    (Reply.stall(3.0), "read_timeout", ["did not answer within"]),
    (Reply.status(401, "Incorrect API key provided: sk-test-SECRET-123"), "auth", ["***"]),
    (Reply.raw_body(b"<html><body>Bad gateway</body></html>", "text/html"),
     "bad_upstream_response", ["not an event stream", "text/html"]),
    (Reply.raw_body(b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
                    b"data: {not json\n\n"), "bad_upstream_response", ["not JSON"]),
    (Reply.raw_body(b'data: {"choices": 5}\n\n'), "bad_upstream_response", ["choices"]),
    (Reply.raw_body(b'data: {"choices":[],"usage":{"completion_tokens":"many"}}\n\n'
                    b"data: [DONE]\n\n"), None, []),
    (Reply.raw_body(b'event: error\ndata: {"error":{"message":"quota exceeded"}}\n\n'),
     "upstream_error", ["quota exceeded"]),
    (Reply.raw_body(b"event: error\ndata: plain text failure\n\n"), "upstream_error",
     ["plain text failure"]),
])
async def test_failures_are_clear_errors_for_that_stream_only(tmp_path, fake, reply, code, words):
    fake.default = Reply.text("fine answer")
    fake.script.append(reply)
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake)) as (url, _):
        client = await CoreClient.connect(url)
        bad = await client.generate("live", USER)
        if code is None:  # odd but harmless: ends normally, counts estimated
            async for _ in bad:
                pass
            assert bad.done.source["usage"] == "estimated"
            await client.close()
            return
        with pytest.raises(CoreError) as exc:
            async for _ in bad:
                pass
        assert exc.value.code == code
        for word in words:
            assert word in exc.value.message
        assert "SECRET" not in exc.value.message
        # same connection, next stream is fine
        ok = await client.generate("live", USER)
        async for _ in ok:
            pass
        assert ok.text == "fine answer" and client.state == "connected"
        await client.close()


async def test_429_with_short_retry_after_is_retried(tmp_path, fake):
    fake.script += [Reply.status(429, "busy", headers={"Retry-After": "0.05"}),
                    Reply.text("after the wait")]
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake)) as (url, _):
        s = await _collect(url)
    assert s.text == "after the wait"
    assert len([r for r in fake.requests if r.method == "POST"]) == 2


async def test_connect_refused(tmp_path, fake):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    extra = _extra(fake).replace(fake.url, f"http://127.0.0.1:{port}/v1")
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=extra) as (url, _):
        with pytest.raises(CoreError) as exc:
            await _collect(url)
    assert exc.value.code == "connect_failed"


async def test_cancel_closes_the_upstream_request(tmp_path, fake):
    """Cancel ends the stream at once and hangs up on the endpoint (which stops writing).

    The answer would take 40 s, so a cancel that did not reach the upstream request (or a
    teardown that waited for the body) shows as a timeout, not as a slow pass.
    """
    fake.script.append(Reply.text(" ".join(["word"] * 4000), delay_s=0.01))
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake)) as (url, _):
        client = await CoreClient.connect(url)
        s = await client.generate("live", USER)
        async with asyncio.timeout(5):
            async for _ in s:
                await s.cancel()  # on every event: repeated cancels must still end in one done
        assert s.done.reason == "cancelled"
        async with asyncio.timeout(5):
            while fake.disconnects == 0:  # the fake notices at its next write
                await asyncio.sleep(0.01)
        assert client.state == "connected"
        await client.close()


async def test_429_retries_are_bounded(tmp_path, fake):
    fake.script += [Reply.status(429, "busy", headers={"Retry-After": "0.01"})] * 3
    async with running_core(tmp_path, env={"FAKE_KEY": "x"},
                            extra=_extra(fake, max_retries=2)) as (url, _):
        with pytest.raises(CoreError) as exc:
            await _collect(url)
    assert exc.value.code == "rate_limited" and exc.value.extra["retry_after_s"] == 0.01
    assert len([r for r in fake.requests if r.method == "POST"]) == 3


async def test_missing_usage_is_counted_and_flagged(tmp_path, fake):
    fake.script.append(Reply.text("def f():\n    return 1\n", send_usage=False))
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake)) as (url, _):
        s = await _collect(url)
    assert s.text == "def f():\n    return 1\n"
    assert s.done.usage["completion_tokens"] > 0 and s.done.usage["prompt_tokens"] > 0
    assert s.done.source["usage"] == "estimated"
    fake.script.append(Reply.text("x y"))  # with usage: no flag
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake)) as (url, _):
        s = await _collect(url)
    assert "usage" not in s.done.source and s.done.usage["completion_tokens"] == 2


async def test_recording_never_writes_the_key(tmp_path, fake):
    fake.script.append(Reply.text("recorded answer"))
    rec = tmp_path / "rec"
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake),
                            record_dir=rec) as (url, _):
        await _collect(url)
    files = list(rec.glob("*.jsonl"))
    assert len(files) == 1
    text = files[0].read_text()
    assert "SECRET" not in text and "Authorization" not in text and "Bearer" not in text
    entry = json.loads(text)
    assert entry["answer"] == "recorded answer" and entry["messages"] == USER
    assert entry["version"] == 1 and entry["source"]["backend"] == "openai"
    # and it replays: a replay profile over the record dir gives the same answer back
    from core.backends.base import BackendRequest
    from core.backends.replay import ReplayBackend

    stream = await ReplayBackend([rec]).open(BackendRequest("r", USER))
    assert "".join([p async for p in stream.pieces()]) == "recorded answer"


def test_retry_after_forms():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("garbage") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


async def test_fake_speaks_openai_sse_bytes(fake):
    """The fake's wire format: what real clients parse (chunks, usage chunk, [DONE])."""
    import httpx

    fake.script.append(Reply.text("a b"))
    async with httpx.AsyncClient() as http:
        r = await http.post(fake.url + "/chat/completions", json={
            "model": "m", "messages": USER, "stream": True,
            "stream_options": {"include_usage": True}})
    assert r.headers["content-type"].startswith("text/event-stream")
    events = [e for e in r.text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "a b"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 2
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    await asyncio.sleep(0)


async def test_steer_sends_partial_and_redirect_upstream(tmp_path, fake):
    fake.script += [Reply.text(" ".join(f"w{i}" for i in range(300)), delay_s=0.01),
                    Reply.text("redirected answer")]
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake)) as (url, _):
        client = await CoreClient.connect(url)
        s = await client.generate("live", USER)
        seen = ""
        async for ev in s:
            if hasattr(ev, "text"):
                seen += ev.text
                if len(seen) > 10 and len(fake.requests) == 1:
                    await s.steer("use pathlib")
        await client.close()
    assert s.text.endswith("redirected answer") and s.done.reason == "stop"
    second = fake.requests[1].json["messages"]
    assert second[:-2] == USER
    assert second[-2]["role"] == "assistant" and second[-2]["content"].startswith("w0 w1")
    assert second[-1] == {"role": "user", "content": "use pathlib"}


@pytest.mark.parametrize("exc, code", [
    ("ConnectTimeout", "connect_timeout"),
    ("ReadTimeout", "read_timeout"),
])
async def test_transport_timeouts(exc, code):
    import httpx

    from core.backends.base import BackendError, BackendRequest
    from core.backends.openai import OpenAIBackend
    from core.profiles import Profile

    def boom(request):
        raise getattr(httpx, exc)("simulated", request=request)

    profile = Profile(name="p", backend="openai", base_url="http://127.0.0.1:1/v1",
                      api_model="m")
    backend = OpenAIBackend(profile, env={}, transport=httpx.MockTransport(boom))
    with pytest.raises(BackendError) as err:
        await backend.open(BackendRequest("a", USER))
    assert err.value.code == code
    await backend.aclose()


async def test_error_object_mid_stream_is_upstream_error():
    import httpx

    from core.backends.base import BackendError, BackendRequest
    from core.backends.openai import OpenAIBackend
    from core.profiles import Profile

    body = (b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
            b'data: {"error":{"message":"model overloaded","type":"server_error"}}\n\n')

    def reply(request):
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    profile = Profile(name="p", backend="openai", base_url="http://x/v1", api_model="m")
    backend = OpenAIBackend(profile, env={}, transport=httpx.MockTransport(reply))
    stream = await backend.open(BackendRequest("a", USER))
    got = []
    with pytest.raises(BackendError) as err:
        async for piece in stream.pieces():
            got.append(piece)
    assert got == ["hi"] and err.value.code == "upstream_error"
    assert "overloaded" in err.value.message
    await backend.aclose()


async def test_live_pieces_are_grouped_into_frames(tmp_path, fake):
    words = [f" w{i}" for i in range(600)]
    fake.script.append(Reply.text("", pieces=words, delay_s=0.0005))
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake)) as (url, _):
        client = await CoreClient.connect(url)
        s = await client.generate("live", USER)
        arrivals = []
        async for ev in s:
            if hasattr(ev, "tokens"):
                arrivals.append(asyncio.get_running_loop().time())
        await client.close()
    assert s.text == "".join(words)
    assert len(arrivals) < len(words) / 4  # frames, not one message per piece
    # ~16 ms apart, except the first (sent at once, for TTFT) and the final flush
    gaps = [b - a for a, b in zip(arrivals[1:-1], arrivals[2:-1])]
    assert gaps and sorted(gaps)[len(gaps) // 2] >= 0.014  # median: robust to CI jitter


async def test_sse_dialects_comments_crlf_and_no_final_blank_line():
    """llama.cpp/Ollama-style quirks: `data:` without a space, comments, CRLF, no last blank."""
    import httpx

    from core.backends.base import BackendRequest
    from core.backends.openai import OpenAIBackend
    from core.profiles import Profile

    body = (b": keep-alive\r\n\r\n"
            b'data:{"choices":[{"index":0,"delta":{"content":"he"},"finish_reason":null}]}\r\n\r\n'
            b'data: {"choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"length"}]}'
            b"\r\n\r\n"
            b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}')

    def reply(request):
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    profile = Profile(name="p", backend="openai", base_url="http://x/v1", api_model="m")
    backend = OpenAIBackend(profile, env={}, transport=httpx.MockTransport(reply))
    stream = await backend.open(BackendRequest("a", USER))
    assert [p async for p in stream.pieces()] == ["he", "llo"]
    assert stream.finish_reason == "length"
    assert stream.usage == {"prompt_tokens": 3, "completion_tokens": 2}
    await backend.aclose()


async def test_a_recording_failure_does_not_lose_the_answer(tmp_path, fake):
    fake.script.append(Reply.text("kept answer"))
    blocker = tmp_path / "rec"
    async with running_core(tmp_path, env={"FAKE_KEY": "x"}, extra=_extra(fake),
                            record_dir=blocker) as (url, _):
        blocker.write_text("a file where the folder should be")  # mkdir will fail
        s = await _collect(url)
    assert s.text == "kept answer" and s.done.reason == "stop"
    assert s.done.source["recorded"] is False
