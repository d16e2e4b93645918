"""A project with no model opens on the first-run screen, never on a recorded answer."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from core.providers import get_preset
from tests.fakes.openai_server import FakeOpenAI
from tests.tui.conftest import ScreenHost, wait_for


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("SPARK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("SPARK_DEMO_PROFILES", raising=False)


def _port(fake: FakeOpenAI) -> int:
    return int(fake.url.rsplit(":", 1)[1].split("/")[0])


async def test_picking_a_detected_server_writes_profiles(tmp_path):
    from tui.screens.first_run import FirstRunScreen

    project = tmp_path / "proj"
    project.mkdir()
    with FakeOpenAI(model="smollm2-135m") as fake:
        app = ScreenHost(lambda: FirstRunScreen(
            project, env={"GROQ_API_KEY": "gsk"}, ports=[(get_preset("llamacpp"), _port(fake))]))
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            await wait_for(pilot, lambda: not screen.detecting, what="detection")
            labels = [str(o.prompt) for o in screen.query_one("OptionList")._options]
            assert labels[0].startswith("llama.cpp server: answers on 127.0.0.1")
            assert "smollm2-135m" in labels[0]
            assert labels[1].startswith("Groq: GROQ_API_KEY is set")
            assert "Open the demo" in labels[-2]
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.results, what="dismiss")
    result = app.results[0]
    assert result.action == "configured" and result.provider == "llamacpp"
    doc = tomllib.loads((tmp_path / "cfg" / "config.toml").read_text())
    assert doc["profiles"]["spark"]["api_model"] == "smollm2-135m"
    assert doc["profiles"]["spark"]["base_url"] == fake.url
    assert not (project / ".spark").exists()  # nothing written into the user's project


async def test_nothing_found_offers_demo_and_quit(tmp_path):
    from tui.screens.first_run import FirstRunScreen

    app = ScreenHost(lambda: FirstRunScreen(tmp_path, env={}, ports=[]))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: not screen.detecting, what="detection")
        status = str(screen.query_one("#fr-status").render())
        assert "no local server and no API key" in status
        await pilot.press("d")
        await wait_for(pilot, lambda: app.results, what="dismiss")
    assert app.results[0].action == "demo"
    assert not (tmp_path / "cfg" / "config.toml").exists()


def _spark(args, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"SPARK_CONFIG_DIR": str(tmp_path / "cfg"), "SPARK_STATE_DIR": str(tmp_path / "st")})
    env.pop("SPARK_DEMO_PROFILES", None)
    return subprocess.run([sys.executable, "-m", "tui.cli", *args], env=env, check=False,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_a_plain_folder_never_replays_the_demo(tmp_path):
    """The reported bug: `spark` in one's own folder answered from the demo's recordings."""
    project = tmp_path / "mine"
    project.mkdir()
    (project / "app.py").write_text("def hello():\n    return 1\n")
    proc = _spark([str(project)], tmp_path)
    assert proc.returncode == 2
    assert "no model is configured" in proc.stderr and "spark init" in proc.stderr
    assert sorted(p.name for p in project.iterdir()) == ["app.py"]


def test_own_profiles_need_not_be_called_spark(tmp_path, monkeypatch):
    from tui.cli import _startup

    project = tmp_path / "mine"
    project.mkdir()
    (project / ".spark.toml").write_text('[profiles.local]\nbackend = "openai"\n'
                                         'base_url = "http://127.0.0.1:9/v1"\napi_model = "m"\n')
    assert _startup([str(project)]) == [str(project), "--profile", "local"]
    assert _startup([str(project), "--profile", "local"]) == [str(project), "--profile", "local"]


@pytest.mark.parametrize("argv", [["race", "hello"], ["vary", "2", "hello"]])
def test_race_and_vary_in_a_folder_with_no_model_say_so(tmp_path, argv):
    project = tmp_path / "mine"
    project.mkdir()
    proc = _spark([*argv, str(project)], tmp_path)
    assert proc.returncode == 2 and "no model is configured" in proc.stderr, proc.stderr


async def test_a_server_with_two_models_asks_which_is_fast(tmp_path):
    """Two models of one server: the fast one picked becomes spark, the other base."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tui.screens.first_run import FirstRunScreen

    class Models(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"object": "list", "data": [{"id": "qwen2.5-coder:32b"},
                                                          {"id": "qwen2.5-coder:1.5b"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        app = ScreenHost(lambda: FirstRunScreen(
            tmp_path, env={}, ports=[(get_preset("ollama"), server.server_address[1])]))
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            await wait_for(pilot, lambda: not screen.detecting, what="detection")
            await pilot.press("enter")  # Ollama
            await pilot.pause()
            labels = [str(o.prompt) for o in screen.query_one("OptionList")._options]
            assert labels == ["qwen2.5-coder:32b", "qwen2.5-coder:1.5b"]
            await pilot.press("down", "enter")  # the small one is the fast one
            await wait_for(pilot, lambda: app.results, what="dismiss")
    finally:
        server.shutdown()
    doc = tomllib.loads((tmp_path / "cfg" / "config.toml").read_text())
    assert doc["profiles"]["spark"]["api_model"] == "qwen2.5-coder:1.5b"
    assert doc["profiles"]["base"]["api_model"] == "qwen2.5-coder:32b"
    assert doc["profiles"]["spark"]["base_url"] == doc["profiles"]["base"]["base_url"]
