"""When the check worker starts (issue 14: a second launch's first frame and "duplicates
ready" < 1 s): its child's imports (~0.2 s of a core, not niced) are begun once the indexes
are ready, or at the latest WARM_CHECKS_AFTER_S after they began, never beside the app's
start; the first answer's review still finds it started."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from bench.repo_gen import generate
from core import check_worker, workstation
from core.workstation import Workstation


@pytest.mark.parametrize("ready", [True, False])
def test_the_check_worker_starts_once_the_indexes_are_ready(tmp_path: Path, monkeypatch, ready) -> None:
    root = generate(tmp_path / "repo", 12, 1)
    seen: list[tuple[bool, bool]] = []
    station = Workstation(root)

    class DupsChild:  # a thread-mode tree's index goes to it: never built here
        def dups_load(self, root: str) -> Future:
            return Future()

    class Pool:
        workers = ()
        dups = DupsChild()

        def warm(self) -> None:
            service = getattr(station, "indexes", None)
            state = service.snapshot() if service is not None else None
            seen.append((state is not None and state.complete, service is not None))

    monkeypatch.setattr(check_worker, "shared", lambda: Pool())
    if not ready:  # indexes that take longer than the cap: the worker does not wait for them
        monkeypatch.setattr(workstation, "WARM_CHECKS_AFTER_S", 0.0)
    station.build_indexes()
    try:
        assert len(seen) == 1
        complete, attached = seen[0]
        assert attached
        assert complete or not ready
    finally:
        station.indexes.stop()
