"""What the app does before its first frame and what waits for it (issue 14: a 20,000-file
tree's first frame in under 1 s). Before the frame: the screen, the tree's check and the
stored map's key; after it: the cached repo map itself (unpickled under the GIL the app's
start needs)."""

from __future__ import annotations

from tests.tui.conftest import wait_for
from tui.app import SparkApp


def _indexed(app: SparkApp) -> bool:
    indexes = getattr(app.station, "indexes", None)
    return indexes is not None and indexes.snapshot().map_checked and indexes.snapshot().dups_complete


async def test_a_second_launch_reads_its_cached_map_after_its_first_frame(demo_root, core_url, monkeypatch):
    from core.indexing import cache

    first = SparkApp(demo_root, core_url)  # the first launch leaves the cache
    async with first.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: _indexed(first), what="the first launch's indexes")
        first.station.indexes.stop()
    assert cache.read_latest_snapshot(demo_root, "map") is not None

    events: list[str] = []
    real_read, real_key = cache.read_latest_snapshot, cache.read_latest_snapshot_key

    def read(*args, **kwargs):
        events.append("map read")
        return real_read(*args, **kwargs)

    def read_key(*args, **kwargs):
        events.append("key read")
        return real_key(*args, **kwargs)

    real_display = SparkApp._display

    def display(self, screen, renderable) -> None:
        real_display(self, screen, renderable)
        if renderable is not None and "frame" not in events:
            events.append("frame")

    monkeypatch.setattr(cache, "read_latest_snapshot", read)
    monkeypatch.setattr(cache, "read_latest_snapshot_key", read_key)
    monkeypatch.setattr(SparkApp, "_display", display)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: _indexed(app), what="the second launch's indexes")
        app.station.indexes.stop()
    # the key is read in the preload's thread, beside the app's start (before or after the
    # frame: on a loaded box either happens); the map itself only once the frame is shown
    assert "key read" in events and events.index("frame") < events.index("map read")
    assert events.count("map read") == 1


async def test_the_app_connects_to_its_core_after_its_first_frame(demo_root, core_url, monkeypatch):
    """The core's client (websockets' imports) waits for the first frame; meanwhile the
    status bar says "connecting", then "connected"."""
    from core.client import CoreClient
    from tui.widgets.status import StatusBar

    events: list[str] = []
    real_connect = CoreClient.connect.__func__  # type: ignore[attr-defined]

    async def connect(cls, *args, **kwargs):
        events.append("connect")
        return await real_connect(cls, *args, **kwargs)

    real_display = SparkApp._display

    def display(self, screen, renderable) -> None:
        if renderable is not None and "frame" not in events:
            events.append("frame")
            events.append(f"bar: {self.query_one(StatusBar).connection}")
        real_display(self, screen, renderable)

    monkeypatch.setattr(CoreClient, "connect", classmethod(connect))
    monkeypatch.setattr(SparkApp, "_display", display)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="the connection")
        assert app.query_one(StatusBar).connection == "connected"
        indexes = getattr(app.station, "indexes", None)
        if indexes is not None:
            indexes.stop()
    assert events[:3] == ["frame", "bar: connecting", "connect"]
