"""Scale: the app on 1k/5k/20k-file repositories and a real large tree, while it indexes.

For each tree the real app (Textual pilot, headless) with the embedded core is launched
twice, the second time on the cache the first one left:
  * first frame: launch -> the first screen update, against a bare Textual app's first
    frame measured in the same run (the baseline);
  * keys while indexing: a key typed into the prompt -> the screen update showing it,
    p50/p99 over the first seconds, while the indexer works (goal p99 < 50 ms);
  * memory: peak RSS of the app's process and of the indexer's child process (goal
    < 500 MB together);
  * readiness: launch -> repo map shown (on a second launch: the cached one, before the
    tree is checked), -> map checked against the tree, and -> duplicate index complete;
  * a second launch in a fresh process: process start -> first frame / map shown / map
    checked / duplicate index ready, the embedded core's and the app's imports included
    (goal: everything ready in under 1 s on an unchanged 20k tree). The in-process launches above share one
    interpreter, so their imports are already done.

    python -m bench scale                          # 1k and 5k generated, the real tree
    SPARK_BENCH_SIZES=1000,5000,20000 python -m bench scale
    SPARK_BENCH_KEEP_CACHE=1 SPARK_CACHE_DIR=/tmp/me/cache ...   # warm caches: both launches are 2nd ones
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Self

from textual import events

KEY_SECONDS = 4.0
FRESH_LAUNCHES = int(os.environ.get("SPARK_BENCH_FRESH", "3"))  # fresh-process launches per tree (median)
INDEX_TIMEOUT_S = float(os.environ.get("SPARK_BENCH_INDEX_TIMEOUT", "900"))
REAL_PACKAGES = ("numpy", "hypothesis", "textual", "rich", "pygments", "websockets", "httpx",
                 "git", "pathspec", "platformdirs")


def _status_mb(pid: int, field: str) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _rss_mb(pid: int) -> float:
    mb = _status_mb(pid, "VmRSS:")
    return 0.0 if math.isnan(mb) else mb


class _MemoryWatch:
    """Samples the app's and the indexer child's RSS every 50 ms; keeps the peaks."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.ui_peak = 0.0
        self.child_peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.ui_peak = max(self.ui_peak, _rss_mb(os.getpid()))
            indexes = getattr(self.app.station, "indexes", None)
            proc = getattr(indexes, "_proc", None) if indexes is not None else None
            if proc is not None:
                self.child_peak = max(self.child_peak, _rss_mb(proc.pid))

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _snapshot(app: Any) -> Any:
    indexes = getattr(app.station, "indexes", None)
    return indexes.snapshot() if indexes is not None else None


async def _bare_first_frame() -> float:
    from textual.app import App, ComposeResult
    from textual.widgets import Footer, Input, Static

    shown: list[float] = []

    class Bare(App):
        def compose(self) -> ComposeResult:
            yield Static("bare")
            yield Input()
            yield Footer()

        def _display(self, screen: Any, renderable: Any) -> None:
            super()._display(screen, renderable)
            if renderable is not None and not shown:
                shown.append(time.perf_counter())

    start = time.perf_counter()
    app = Bare()
    async with app.run_test(size=(160, 50)) as pilot:
        while not shown:
            await pilot.pause(0.005)
    return (shown[0] - start) * 1000


async def _launch(root: Path, url: str) -> dict[str, Any]:
    from tui.app import SparkApp

    shown: list[float] = []

    class Instrumented(SparkApp):
        def _display(self, screen: Any, renderable: Any) -> None:
            super()._display(screen, renderable)
            if renderable is not None:
                shown.append(time.perf_counter())

    out: dict[str, Any] = {}
    start = time.perf_counter()
    app = Instrumented(root, url)
    async with app.run_test(size=(160, 50)) as pilot:
        with _MemoryWatch(app) as memory:
            while not shown:
                await pilot.pause(0.002)
            out["first_frame_ms"] = (shown[0] - start) * 1000
            from textual.widgets import Input

            prompt = app.query_one("#prompt", Input)
            latencies: list[float] = []
            ready: dict[str, float] = {}

            def check_ready() -> bool:
                """Record when the map and everything became ready; True once all are."""
                snap = _snapshot(app)
                now = time.perf_counter()
                if snap is None:  # an app without the background indexer
                    if getattr(app.station, "dups_ready", False):
                        ready.setdefault("map", now)
                        ready.setdefault("all", now)
                else:
                    if snap.map_complete:
                        ready.setdefault("map", now)
                    if getattr(snap, "map_checked", snap.map_complete):
                        ready.setdefault("checked", now)
                    if snap.dups_complete:
                        ready.setdefault("all", now)
                return "all" in ready and "checked" in ready

            until = time.perf_counter() + KEY_SECONDS
            while time.perf_counter() < until:
                check_ready()
                before = len(shown)
                sent = time.perf_counter()
                app.post_message(events.Key("x", "x"))
                while len(shown) == before and time.perf_counter() - sent < 2:
                    await asyncio.sleep(0.0005)
                latencies.append((time.perf_counter() - sent) * 1000)
                if len(prompt.value) > 60:
                    prompt.value = ""
                    await pilot.pause(0.01)
                await asyncio.sleep(0.02)
            latencies.sort()
            out["keys"] = len(latencies)
            out["key_p50_ms"] = statistics.median(latencies)
            out["key_p99_ms"] = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
            out["key_during_index"] = not bool(getattr(_snapshot(app), "complete", True))
            while not check_ready() and time.perf_counter() - start < INDEX_TIMEOUT_S:
                await asyncio.sleep(0.02)
            out["map_ready_s"] = (ready["map"] - start) if "map" in ready else float("nan")
            out["checked_s"] = (ready["checked"] - start) if "checked" in ready else float("nan")
            out["all_ready_s"] = (ready["all"] - start) if "all" in ready else float("nan")
        out["ui_rss_mb"] = memory.ui_peak
        out["child_rss_mb"] = memory.child_peak
        snap = _snapshot(app)
        out["mode"] = getattr(snap, "mode", "in-app")
        indexes = getattr(app.station, "indexes", None)
        if indexes is not None:
            indexes.stop()  # the next launch in this process must find the cache closed
    return out


def _real_tree(base: Path) -> Path:
    """Several installed packages copied into one folder: real code, thousands of files."""
    root = base / "real-site-packages"
    marker = root / ".bench-tree"
    if marker.is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    site = Path(sysconfig.get_paths()["purelib"])
    root.mkdir(parents=True)
    for name in REAL_PACKAGES:
        src = site / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    marker.write_text("\n".join(REAL_PACKAGES) + "\n")
    return root


def _measure(root: Path, config: Path | None) -> tuple[dict, dict]:
    from core.embedded import EmbeddedCore

    core = EmbeddedCore(project_root=root, config_file=config)
    url = core.start()
    try:
        cold = asyncio.run(_launch(root, url))
        warm = asyncio.run(_launch(root, url))
    finally:
        core.stop()
    return cold, warm


def _fresh_launch_child(root: Path) -> None:
    """`python bench/bench_scale.py --launch ROOT`: one launch timed from this process's
    start ($SPARK_BENCH_T0, wall clock): the embedded core and the app, as `spark` starts
    them. Prints one JSON line."""
    import json

    t0 = float(os.environ["SPARK_BENCH_T0"])
    from core.indexing.service import preload

    preload(root.resolve())  # as tui.commands.open_workstation does first
    from core.embedded import EmbeddedCore

    core = EmbeddedCore(project_root=root, config_file=None)
    url = core.start()
    from tui.app import SparkApp

    marks: dict[str, float] = {}

    class Timed(SparkApp):
        def _display(self, screen: Any, renderable: Any) -> None:
            super()._display(screen, renderable)
            if renderable is not None:
                marks.setdefault("frame_s", time.time() - t0)

    def watch(app: Any) -> None:  # a thread, woken by the index service (no busy polling)
        deadline = time.time() + 120
        while getattr(app.station, "indexes", None) is None and time.time() < deadline:
            time.sleep(0.01)
        indexes = getattr(app.station, "indexes", None)
        if indexes is None:
            return
        indexes.wait(120, what="all")
        snap = indexes.snapshot()  # the service notes when it showed and checked the map
        for key, at in (("map_s", getattr(snap, "map_shown_at", None)),
                        ("checked_s", getattr(snap, "map_checked_at", None)),
                        ("all_s", getattr(snap, "dups_ready_at", None))):
            if at is not None:
                marks[key] = at - t0
        while "frame_s" not in marks and time.time() < deadline:
            time.sleep(0.01)

    async def run() -> None:
        app = Timed(root, url)
        poller = threading.Thread(target=watch, args=(app,), daemon=True)
        async with app.run_test(size=(160, 50)):
            poller.start()
            while poller.is_alive():
                await asyncio.sleep(0.01)
            indexes = getattr(app.station, "indexes", None)
            if indexes is not None:
                indexes.stop()

    try:
        asyncio.run(run())
    finally:
        core.stop()
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a large bench
    # process would report the parent's peak
    marks["ui_peak_mb"] = _status_mb(os.getpid(), "VmHWM:")
    print(json.dumps(marks), flush=True)


def _fresh_launches(root: Path, n: int) -> dict[str, float]:
    """Median over n fresh-process launches of process start -> frame / map / checked /
    everything (the duplicate index too)."""
    import json
    import subprocess

    runs: list[dict[str, float]] = []
    for _ in range(n):
        env = dict(os.environ, SPARK_BENCH_T0=f"{time.time():.6f}")
        out = subprocess.run([sys.executable, __file__, "--launch", str(root)], check=False, env=env,
                             capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[1])
        lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
        if lines:
            runs.append(json.loads(lines[-1]))
    keys = ("frame_s", "map_s", "checked_s", "all_s", "ui_peak_mb")
    return {k: statistics.median(r.get(k, float("nan")) for r in runs) if runs else float("nan") for k in keys}


def main() -> None:
    from bench.repo_gen import ensure_repo

    sizes = [int(s) for s in os.environ.get("SPARK_BENCH_SIZES", "1000,5000").split(",")]
    base = Path(os.environ.get("SPARK_BENCH_REPOS", tempfile.gettempdir())) / "spark-bench-repos"
    with tempfile.TemporaryDirectory() as tmp:
        if not (os.environ.get("SPARK_BENCH_KEEP_CACHE") and os.environ.get("SPARK_CACHE_DIR")):
            os.environ["SPARK_CACHE_DIR"] = str(Path(tmp) / "cache")  # cold first launch
        bare = asyncio.run(_bare_first_frame())
        trees = [(f"{n:,} generated", ensure_repo(base / f"repo-{n}", n)) for n in sizes]
        if os.environ.get("SPARK_BENCH_REAL", "1") != "0":
            real = _real_tree(base)
            count = sum(1 for p in real.rglob("*") if p.is_file())
            trees.append((f"{count:,} real", real))
        print(f"bare Textual app first frame: {bare:.0f} ms (baseline); load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"{'tree':>18} {'launch':>6} {'frame ms':>9} {'x bare':>7} {'key p50':>8} {'key p99':>8} "
              f"{'map s':>7} {'checked':>7} {'all s':>7} {'UI MB':>7} {'child MB':>8} mode")
        fresh: list[tuple[str, dict[str, float]]] = []
        for label, root in trees:
            cold, warm = _measure(root, None)
            for which, r in (("1st", cold), ("2nd", warm)):
                print(f"{label:>18} {which:>6} {r['first_frame_ms']:9.0f} {r['first_frame_ms'] / bare:7.2f} "
                      f"{r['key_p50_ms']:8.1f} {r['key_p99_ms']:8.1f} {r['map_ready_s']:7.2f} "
                      f"{r.get('checked_s', float('nan')):7.2f} "
                      f"{r['all_ready_s']:7.2f} {r['ui_rss_mb']:7.0f} {r['child_rss_mb']:8.0f} {r['mode']}",
                      flush=True)
            if FRESH_LAUNCHES > 0:
                fresh.append((label, _fresh_launches(root, FRESH_LAUNCHES)))
        if fresh:
            print(f"2nd launch in a fresh process (median of {FRESH_LAUNCHES}), seconds from process start; "
                  f"load {os.getloadavg()[0]:.1f}")
            print(f"{'tree':>18} {'frame':>7} {'map':>7} {'checked':>7} {'all':>7} {'UI MB':>7}")
            for label, f in fresh:
                print(f"{label:>18} {f['frame_s']:7.2f} {f['map_s']:7.2f} {f['checked_s']:7.2f} "
                      f"{f['all_s']:7.2f} {f['ui_peak_mb']:7.0f}", flush=True)
        print("goals: first frame < 1 s; keys p99 < 50 ms while indexing; UI + child < 500 MB; "
              "2nd launch on an unchanged 20k tree: map and duplicates ready < 1 s from process start")
    sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--launch"]:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        _fresh_launch_child(Path(sys.argv[2]))
    else:
        main()
