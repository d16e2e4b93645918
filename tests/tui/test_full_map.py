"""A layout pass keeps the full map it built (tui.full_map.keep_full_map).

The map a reflow leaves marked valid must be the map a fresh arrangement of the tree gives at
that point (what Textual's lazy rebuild would have computed), at every frame of a diff view
taking hunks, header changes, the block being written and moves; and the terminal shows what
a fresh view draws (test_diff_view_screen's property, with the kept map).
"""

from __future__ import annotations

import asyncio

from textual._compositor import Compositor

from tests.tui import test_diff_view_screen as screen_test
from tui.full_map import keep_full_map


def test_the_kept_map_is_a_fresh_arrangement_and_the_screen_is_the_same(monkeypatch):
    assert keep_full_map() and keep_full_map()  # installed once, idempotent
    checked: list[int] = []
    reflow = Compositor.reflow

    def checked_reflow(self, *args, **kwargs):
        result = reflow(self, *args, **kwargs)
        assert not self._full_map_invalidated
        fresh, _ = self._arrange_root(self.root, self.size, visible_only=False)
        assert self._full_map == fresh
        checked.append(len(fresh))
        return result

    monkeypatch.setattr(Compositor, "reflow", checked_reflow)
    steps = [("arrive", 0)] * 11 + [("pending", 2), ("move", 11), ("move", -11)]
    steps += [("badge", n) for n in range(6, 12)] + [("pending", 7), ("arrive", 0), ("move", 3)]
    asyncio.run(screen_test._drawn(steps, 13, 12))
    assert len(checked) > 5 and max(checked) > 13  # laid out with the hunks in it
