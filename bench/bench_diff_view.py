"""The diff view's own cost on the UI thread: CPU per stream frame, per sync, per j/k.

A diff view alone (Textual pilot, 160x50, as bench many_edits) takes an answer of 47 hunks of
real-looking Python the way the app gives them while it streams: the block being written grows
a line per frame, every third frame a sync adds a hunk (every header's "i/total" changes), then
j moves through all hunks with a frame drawn after each key. It measures the main thread's CPU
(time.thread_time: what the box's load does not change much) for each phase and per frame /
key, and the frames drawn. Against a baseline in the same run: the same with 5 hunks (the part
that grows with the hunks on screen and mounted is what issue 14 is about). The public API is
the one the app uses (sync, set_pending, select), so the same file runs against an older tree
for an A/B (copy it into that tree's bench/).
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

SIZE = (160, 50)
REPEATS = 3


@dataclass
class Hunk:
    id: str
    path: str
    old_start: int
    old_lines: list[str]
    new_lines: list[str]


@dataclass
class Pending:
    path: str
    stage: str
    search: str
    replace: str


def _function(rng: random.Random, name: str) -> list[str]:
    call = rng.choice(["render", "load", "merge", "check", "scan"])
    return [f"def {name}(items, limit={rng.randint(5, 500)}):\n",
            f'    """{call.capitalize()} the items, at most limit of them."""\n',
            "    out = []\n", "    for item in items:\n", "        if item is None:\n",
            "            continue\n", f"        value = {call}_one(item)\n",
            "        if value and len(out) < limit:\n", "            out.append(value)\n", "    return out\n"]


def _answer(count: int, seed: int = 14) -> tuple[list[Hunk], dict[str, tuple[list[str], list[str]]]]:
    rng = random.Random(seed)
    hunks, contexts = [], {}
    for i in range(count):
        old = _function(rng, f"step_{i}")[:rng.randint(2, 5)]
        new = _function(rng, f"step_{i}")[:rng.randint(3, 9)]
        hunk = Hunk(f"h{i}", f"pipeline/mod{i % 6}.py", 40 * i + 10, old, new)
        hunks.append(hunk)
        contexts[hunk.id] = (["\n", "# helpers\n", "import os\n"], ["\n", "\n", "def next_one():\n"])
    return hunks, contexts


async def _measure(count: int, follow: bool = False) -> dict[str, Any]:
    from textual.app import App, ComposeResult

    from tui.widgets.diff_render import warm_bodies
    from tui.widgets.diff_view import DiffView

    hunks, contexts = _answer(count)

    class Host(App):
        def compose(self) -> ComposeResult:
            yield DiffView()

    frames = 0

    class Counting(Host):
        def _display(self, screen: Any, renderable: Any) -> None:
            nonlocal frames
            frames += 1
            super()._display(screen, renderable)

    app = Counting()
    thresholds = gc.get_threshold()
    async with app.run_test(size=SIZE) as pilot:
        gc.freeze()  # as the app does at its mount (SparkApp.on_mount)
        gc.set_threshold(20_000, 20, 50)
        view = app.query_one(DiffView)
        view.focus()
        view.set_notes("> harden the six pipeline modules")
        await pilot.pause()
        width = getattr(view, "body_width", 0) or 150
        await asyncio.to_thread(warm_bodies, hunks, contexts, width)  # as the rebuild's thread does
        written: list[str] = []
        stream_frames = 0
        frames = 0
        start = time.thread_time()
        shown = 0
        step = 0
        while shown < count:
            written.append(f"        value = merge_one(item, {step})\n")
            view.set_pending(Pending(hunks[shown].path, "replace", "", "".join(written[-12:])))
            if step % 3 == 2:
                shown += 1
                view.sync(hunks[:shown], {}, {}, contexts)
                if follow:  # a held j at the newest hunk: the block being written is on screen
                    view.select(shown - 1)
            step += 1
            await pilot.pause()
            stream_frames += 1
        stream_cpu = time.thread_time() - start
        stream_drawn = frames
        view.set_pending(None)
        view.sync(hunks, {}, {}, contexts)
        view.select(0)
        await pilot.pause(0.05)
        frames = 0
        keys = []
        for _ in range(count - 1):
            before = time.thread_time()
            view.select(view.current + 1)
            await pilot.pause()
            keys.append(time.thread_time() - before)
        key_drawn = frames
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    return {"hunks": count, "stream_ms": stream_cpu * 1000, "stream_steps": stream_frames,
            "stream_drawn": stream_drawn, "keys_ms": [k * 1000 for k in keys], "key_drawn": key_drawn}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results: dict[int, list[dict[str, Any]]] = {5: [], 47: []}
    following: list[dict[str, Any]] = []
    for _ in range(REPEATS):
        for count in (5, 47):
            results[count].append(asyncio.run(_measure(count)))
        following.append(asyncio.run(_measure(47, follow=True)))
    summary = {}
    for count, runs in results.items():
        per_step = statistics.median(r["stream_ms"] / r["stream_steps"] for r in runs)
        keys = [k for r in runs for k in r["keys_ms"]]
        summary[count] = (per_step, statistics.median(keys), _pct(keys, 0.99))
        print(f"{count} hunks: stream {statistics.median(r['stream_ms'] for r in runs):.0f} ms CPU for "
              f"{runs[0]['stream_steps']} frames ({per_step:.2f} ms per frame, {runs[0]['stream_drawn']} drawn); "
              f"j through them: {len(keys)} keys, CPU per key p50 {summary[count][1]:.2f} ms, "
              f"p99 {summary[count][2]:.2f} ms")
    per_follow = statistics.median(r["stream_ms"] / r["stream_steps"] for r in following)
    print(f"47 hunks, the view following the newest (the block being written on screen): stream "
          f"{statistics.median(r['stream_ms'] for r in following):.0f} ms CPU ({per_follow:.2f} ms per frame)")
    big, small = summary[47], summary[5]
    print(f"47 vs 5 hunks: CPU per stream frame {big[0] / small[0]:.2f}x, per key p50 {big[1] / small[1]:.2f}x "
          f"(median of {REPEATS} runs; UI thread CPU, not wall)")


if __name__ == "__main__":
    main()
