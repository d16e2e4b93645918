"""The variations screen rebuilds each answer through the main loop's RebuildSchedule.

tui/ keeps no second copy of the rebuild loop: each variation's completed edits are
re-diffed by its own `RebuildSchedule` (requests coalescing, one pass at a time), and its
detectors run once, on its final state, through that schedule's final pass; the detector
passes of the variations never overlap (the indexes are shared).
"""

from __future__ import annotations

import threading

from core.rebuild_schedule import RebuildSchedule
from core.session import Workstation
from tests.tui.conftest import ScreenHost, wait_for
from tui.race_command import race_messages
from tui.screens.variations import VariationsScreen

PROMPT = "format_money should show negative amounts in parentheses"


async def test_each_variation_is_rebuilt_and_reviewed_by_its_own_schedule(client, demo_root, monkeypatch):
    station = Workstation(demo_root)
    finals: list[int] = []  # id of the answer each final run of a schedule was for
    reviews: list[tuple[int, int, bool]] = []  # (answer, its edits, finished) when reviewed
    overlapping: list[int] = []
    running = threading.Semaphore(1)
    run, review = RebuildSchedule.run, station.review

    async def counted_run(self, *, final: bool = False) -> None:
        if final:
            finals.append(id(self.work.current()))
        await run(self, final=final)

    def counted_review(answer, **kwargs):
        if not running.acquire(blocking=False):
            overlapping.append(id(answer))
            running.acquire()
        try:
            reviews.append((id(answer), len(answer.edits), answer.finished))
            return review(answer, **kwargs)
        finally:
            running.release()

    monkeypatch.setattr(RebuildSchedule, "run", counted_run)
    monkeypatch.setattr(station, "review", counted_review)
    app = ScreenHost(lambda: VariationsScreen(client, PROMPT, race_messages(PROMPT), 3, "spark", station))
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, VariationsScreen)
        await wait_for(pilot, lambda: screen.settled, what="three answers and their reviews")
        runs = screen.runs
        assert all(r is not None and r.finished and r.hunks for r in runs)
        ids = sorted(id(r) for r in runs)
        assert sorted(finals) == ids, "each variation's end is its schedule's final run, once"
        # the detectors ran once per variation, on its final state (every edit), one at a time
        assert sorted(a for a, _, _ in reviews) == ids
        by_id = {id(r): r for r in runs}
        assert all(finished and edits == len(by_id[a].edits) for a, edits, finished in reviews)
        assert not overlapping, "two variations' detector passes overlapped"
        assert all(review is not None for review in screen.reviews)
