"""What the app does before its first frame and what waits for it (issue 14: a 20,000-file
tree's first frame in under 1 s). Before the frame: the screen, the tree's check; after it:
the cached repo map's read (unpickling under the GIL the app's start needs)."""

from __future__ import annotations

from tests.tui.conftest import wait_for
from tui.app import SparkApp


async def test_the_app_reads_its_cached_map_after_its_first_frame(demo_root, core_url, monkeypatch):
    from core.indexing import cache

    events: list[str] = []
    real_read = cache.read_latest_snapshot

    def read(*args, **kwargs):
        events.append("map read")
        return real_read(*args, **kwargs)

    real_display = SparkApp._display

    def display(self, screen, renderable) -> None:
        real_display(self, screen, renderable)
        if renderable is not None and "frame" not in events:
            events.append("frame")

    monkeypatch.setattr(cache, "read_latest_snapshot", read)
    monkeypatch.setattr(SparkApp, "_display", display)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: "map read" in events, what="the cached map's read")
        await wait_for(pilot, lambda: getattr(app.station, "indexes", None) is not None
                       and app.station.indexes.snapshot().map_checked, what="the map checked")
    assert events.index("frame") < events.index("map read")
