"""Who may connect, and where secrets must never appear (frames, logs, cassettes, repr)."""

import asyncio
import json
import logging
import stat

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from core.auth import check_bearer, load_or_create_token, redact, remember_secret
from tests.fakes.core import running_core
from tests.fakes.openai_server import FakeOpenAI, Reply

KEY = "sk-live-TOPSECRET-0123456789abcdef"
USER = [{"role": "user", "content": "add a docstring"}]


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:8765",
                                    "http://127.0.0.1", ""])
async def test_every_origin_is_refused(tmp_path, origin):
    async with running_core(tmp_path) as (url, _):
        with pytest.raises(InvalidStatus) as exc:
            await connect(url, additional_headers={"Origin": origin})
        assert exc.value.response.status_code == 403


async def test_two_origin_headers_are_refused_not_crashed(tmp_path):
    async with running_core(tmp_path) as (url, _):
        with pytest.raises(InvalidStatus) as exc:
            await connect(url, additional_headers=[("Origin", "a"), ("Origin", "b")])
        assert exc.value.response.status_code == 403


@pytest.mark.parametrize("header", ["Bearer wrong", "Bearer \u00ff\u00fe", "Basic abc", "",
                                    "Bearer "])
async def test_bad_tokens_get_401_not_500(tmp_path, header):
    async with running_core(tmp_path, token="the-right-token") as (url, _):
        with pytest.raises(InvalidStatus) as exc:
            await connect(url, additional_headers={"Authorization": header})
        assert exc.value.response.status_code == 401
        ws = await connect(url, additional_headers={"Authorization": "Bearer the-right-token"})
        await ws.close()


def test_check_bearer_is_bytes_safe():
    assert check_bearer("Bearer t0ken", "t0ken")
    assert not check_bearer("Bearer \udcff", "t0ken")  # surrogates from latin-1 decoding
    assert not check_bearer("Bearer é", "t0ken")
    assert not check_bearer(None, "t0ken")


def test_token_file_mode_is_fixed_and_dir_private(tmp_path):
    path = tmp_path / "cfg" / "core_token"
    token = load_or_create_token(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0
    path.chmod(0o644)  # someone loosened it: the next use tightens it again
    assert load_or_create_token(path) == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_redact_blanks_remembered_secrets():
    remember_secret(KEY)
    assert redact(f"the key {KEY} was refused") == "the key *** was refused"
    remember_secret("abc")  # too short to blank safely
    assert redact("abc") == "abc"


def test_non_loopback_bind_refused_with_clear_message(tmp_path):
    from core.engine import Engine
    from core.profiles import load_config
    from core.server import CoreServer, InsecureBindError
    from tests.fakes.core import write_config

    engine = Engine(load_config(config_file=write_config(tmp_path), env={}))
    for host in ("0.0.0.0", "192.168.1.10", "::"):
        with pytest.raises(InsecureBindError, match="not a loopback address.*token"):
            CoreServer(engine, host=host)
    CoreServer(engine, host="0.0.0.0", token="t" * 32)  # with a token it is allowed


async def test_key_never_leaks(tmp_path, monkeypatch, caplog):
    """An endpoint that echoes the key in errors and answers: the key appears nowhere we
    write: error frames, logs, cassettes, repr of the profile or the config."""
    monkeypatch.setenv("LEAKY_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    rec = tmp_path / "rec"
    with FakeOpenAI() as fake:
        fake.script += [Reply.status(401, f"Incorrect API key provided: {KEY}"),
                        Reply.status(500, f"internal: header was Bearer {KEY}"),
                        Reply.text("a fine answer")]
        extra = (f'[profiles.live]\nbackend = "openai"\nbase_url = "{fake.url}"\n'
                 'api_model = "m"\napi_key_env = "LEAKY_KEY"\nread_timeout_s = 2.0\n')
        async with running_core(tmp_path, env={"LEAKY_KEY": KEY}, extra=extra,
                                record_dir=rec) as (url, server):
            ws = await connect(url)
            await ws.send(json.dumps({"type": "hello", "protocol": 1}))
            frames = [await ws.recv()]
            for i in range(3):
                await ws.send(json.dumps({"type": "generate", "id": f"k{i}", "profile": "live",
                                          "messages": USER}))
                async with asyncio.timeout(5):
                    while True:
                        frames.append(await ws.recv())
                        if json.loads(frames[-1])["type"] in ("done", "error"):
                            break
            await ws.close()
            config = server.engine.config
            reprs = repr(config) + repr(config.profiles["live"]) + str(config.profiles)
        assert fake.requests[0].headers["Authorization"] == f"Bearer {KEY}"  # it was sent
    wire = "\n".join(frames)
    assert '"code":"auth"' in wire and "***" in wire
    cassettes = "".join(p.read_text() for p in rec.glob("*.jsonl"))
    assert "a fine answer" in cassettes
    for where, text in [("frames", wire), ("logs", caplog.text), ("cassettes", cassettes),
                        ("repr", reprs)]:
        assert KEY not in text, where
        assert "TOPSECRET" not in text, where
    assert "Authorization" not in cassettes and "Bearer" not in cassettes


def test_recorder_blanks_an_echoed_key(tmp_path):
    from core.backends.recorder import Recorder

    remember_secret(KEY)
    path = Recorder(tmp_path).record([{"role": "user", "content": "hi"}],
                                     f"your key is {KEY}", {"completion_tokens": 4},
                                     {"backend": "openai", "headers": {"Authorization": KEY}})
    text = path.read_text()
    assert KEY not in text and "your key is ***" in text and "Authorization" not in text
