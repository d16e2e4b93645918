"""Fixtures for driving the real app: a demo project and an embedded core on loopback."""

from __future__ import annotations

import asyncio
import time

import pytest

from core.demo import write_demo


@pytest.fixture
def demo_root(tmp_path, monkeypatch):
    # keep user-level config out of the tests
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return write_demo(tmp_path / "demo")


@pytest.fixture
def core_url(demo_root):
    from core.embedded import EmbeddedCore

    core = EmbeddedCore(project_root=demo_root)
    url = core.start()
    yield url
    core.stop()


async def wait_for(pilot, condition, timeout: float = 15.0, what: str = "condition") -> None:
    """Let the app run until `condition()` holds (the app, not the test, sets the pace)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)
    await asyncio.sleep(0)


@pytest.fixture
def fake_model(demo_root, tmp_path, monkeypatch):
    """A local OpenAI-compatible server behind both profiles, speaking the real SSE format."""
    from tests.fakes.openai_server import FakeOpenAI

    monkeypatch.setenv("SPARK_TEST_KEY", "test-key-not-secret")
    fake = FakeOpenAI().start()
    config = tmp_path / "fake-config.toml"
    config.write_text("".join(
        f'[profiles.{name}]\nbackend = "openai"\nbase_url = "{fake.url}"\napi_model = "fake-model"\n'
        f'api_key_env = "SPARK_TEST_KEY"\ncontext_window = 32000\n\n' for name in ("spark", "base")))
    yield fake, config
    fake.stop()


@pytest.fixture
def fake_core_url(fake_model, demo_root):
    from core.embedded import EmbeddedCore

    _, config = fake_model
    core = EmbeddedCore(project_root=demo_root, config_file=config)
    url = core.start()
    yield url
    core.stop()


class ScreenHost:
    """Builds a minimal App that stands in for the workstation: pushes one screen and keeps
    what it dismisses with (`app.results`). A factory, so Textual is imported lazily."""

    def __new__(cls, screen_factory):
        from textual.app import App

        from themes import DEFAULT_THEME, register_themes

        class Host(App):
            def __init__(self) -> None:
                super().__init__()
                register_themes(self)
                self.theme = DEFAULT_THEME
                self.results: list = []

            def on_mount(self) -> None:
                self.push_screen(screen_factory(), self.results.append)

        return Host()


@pytest.fixture
async def client(core_url):
    """A connected core client on the demo's embedded core."""
    from core.client import CoreClient

    connected = await CoreClient.connect(core_url)
    yield connected
    await connected.close()


def stream_in(app, answer: str, chunk: int):
    """Show a new answer and feed it as if it still streams (the app's stream is open): the
    completed blocks ask for a rebuild, as the stream does. Returns the run and the diff view;
    the caller waits for what it needs shown."""
    from core.answer import AnswerRun
    from tui.widgets.diff_view import DiffView

    diff = app.query_one(DiffView)
    run = AnswerRun(app.workspace, "a prompt", "spark")
    app._show_new_answer(run)
    app._stream = object()
    run.feed(answer, chunk)
    app._dirty = True
    app._paint()
    app._request_rebuild()
    return run, diff
