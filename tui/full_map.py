"""A layout pass keeps the map of every widget it has just built.

Textual's compositor keeps two maps of where widgets are: the visible ones, and all of them
(`full_map`, rebuilt lazily when `_full_map_invalidated` says it is out of date). A full
layout pass (`Compositor.reflow`) arranges every widget and stores that map as the full map,
but leaves the flag as it was. The flag is set at the start of most layout frames (the
screen's `update_widgets` sets it when a refreshed widget is off screen: while an answer
streams, every hunk's "i/total" header changes as hunks arrive, 47 refreshes per sync), and
after a scroll (`reflow_visible`). So the first widget asking for its region in that same
frame (the size update right after the layout, the paint's first widget) arranged the whole
screen a second time: bench many_edits, 11-23 such rebuilds per ~1 s stream, 17-25 ms of
the UI thread's CPU, in the frames that are already the longest (issue 14: keys wait for
them).

`keep_full_map()` clears the flag after `reflow` has built the map: the map it just stored
is the full map of the tree as it is (the same `_arrange_root(root, size,
visible_only=False)` the lazy rebuild calls). Anything that changes the tree later sets the
flag again as before. It uses Textual's private compositor state: tests/tui/test_full_map.py
checks that the kept map is a fresh arrangement's, and that the screen drawn is the same;
where Textual no longer has these names nothing is changed.
"""

from __future__ import annotations

import functools
import logging

from textual._compositor import Compositor

log = logging.getLogger(__name__)

_INSTALLED = "_spark_keeps_full_map"


def keep_full_map() -> bool:
    """Make Compositor.reflow leave its full map valid (once per process); whether it does."""
    reflow = Compositor.reflow
    if getattr(reflow, _INSTALLED, False):
        return True
    if not all(hasattr(Compositor, name) for name in ("full_map", "_arrange_root")) or \
            "_full_map_invalidated" not in Compositor().__dict__:
        log.warning("Textual's compositor changed: its full map is rebuilt as before")
        return False

    @functools.wraps(reflow)
    def reflow_keeping_map(self: Compositor, *args, **kwargs):
        result = reflow(self, *args, **kwargs)
        self._full_map_invalidated = False  # `reflow` stored the full map it just arranged
        return result

    setattr(reflow_keeping_map, _INSTALLED, True)
    Compositor.reflow = reflow_keeping_map  # type: ignore[method-assign]
    return True
