"""Verify before accept (issue 15): how soon after the last token the user sees checks and
test results, on the demo and on a generated project with ~500 tests, and whether keys
stay responsive while a test run is going.

Baselines measured in the same run:
  * "naive": what a tool does without us: copy the tree, apply the answer, run the whole
    suite with every installed pytest plugin autoloaded (the usual `pytest` invocation);
  * key latency with no verifier running.
Printed: times in ms/s and ratios against those baselines.  Goals from the issue: checks
before the stream's end where possible (here: milliseconds after it), keys p99 < 50 ms
during a run.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from core.demo import write_demo
from core.edits.parser import parse_edits
from core.edits.proposal import build_proposal
from core.verify.baseline import BaselineCache
from core.verify.verifier import Scope, Verifier
from core.workspace.files import Workspace

ROOT = Path(__file__).resolve().parents[1]
MODULES = 50
TESTS_PER_MODULE = 10


def _recording(name: str) -> str:
    import json

    for file in ("verify.jsonl", "demo.jsonl"):
        for line in (ROOT / "core" / "cassettes" / file).read_text().splitlines():
            rec = json.loads(line)
            if rec["id"] == name:
                return rec["answer"]
    raise KeyError(name)


def generate_project(root: Path) -> Path:
    """A package of MODULES modules, each importing the previous one, and one test file of
    TESTS_PER_MODULE tests per module (MODULES x TESTS_PER_MODULE tests in all)."""
    (root / "calc").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")
    (root / "calc" / "__init__.py").write_text("")
    for m in range(MODULES):
        dep = f"from calc.mod_{m - 1} import f_{m - 1}_0\n\n\n" if m else ""
        body = "".join(
            f"def f_{m}_{k}(x):\n    \"\"\"Step {k} of module {m}.\"\"\"\n"
            f"    return x * {k + 1} + {m}{' + f_' + str(m - 1) + '_0(0)' if m and k == 0 else ''}\n\n\n"
            for k in range(TESTS_PER_MODULE))
        (root / "calc" / f"mod_{m}.py").write_text(dep + body.rstrip() + "\n")
        tests = "".join(
            f"def test_f_{m}_{k}():\n    assert f_{m}_{k}(2) == f_{m}_{k}(1) + {k + 1}\n\n\n"
            for k in range(TESTS_PER_MODULE))
        imports = ", ".join(f"f_{m}_{k}" for k in range(TESTS_PER_MODULE))
        (root / "tests" / f"test_mod_{m}.py").write_text(
            f"from calc.mod_{m} import {imports}\n\n\n" + tests.rstrip() + "\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-qm",
                    "gen"], cwd=root, check=True)
    return root


def _edit_for_project(m: int, broken: bool) -> str:
    new = f"x * 4 + {m}" if broken else f"(x + x + x) + {m}"
    return (f"calc/mod_{m}.py\n```python\n<<<<<<< SEARCH\n    return x * 3 + {m}\n=======\n"
            f"    return {new}\n>>>>>>> REPLACE\n```\n")


# a new module nothing imports yet: no test relates to it, so the whole suite runs
WHOLE_SUITE = ("calc/extra.py\n```python\n<<<<<<< SEARCH\n=======\ndef extra(x):\n"
               "    return x\n>>>>>>> REPLACE\n```\n")


def time_verify(ws: Workspace, answer: str, cache: BaselineCache, *,
                parallel: bool = False) -> dict[str, float]:
    """ms from the last token (the proposal handed over at the stream's end) to the
    first check result, to the first test verdict and to the blamed verdict."""
    t0 = time.perf_counter()
    proposal = build_proposal(ws, parse_edits(answer))  # the app does this on the last token
    v = Verifier(ws, run_tests=True, baseline=cache, parallel_baseline=parallel)
    try:
        v.propose(proposal, final=True)
        rep = v.wait_settled(Scope.ANSWER, timeout=300)
    finally:
        v.close(wait=True)
    t = rep.tests
    first = t.first_result_at or t.finished_at or t0
    return {"checks_ms": ((rep.checks_at or t0) - t0) * 1000,
            "first_result_s": first - t0,
            "verdict_s": (t.finished_at or t0) - t0,
            "state": t.state.value, "new_failures": len(t.new_failures), "ran": t.done}


def time_streamed(ws: Workspace, answer: str, cache: BaselineCache) -> float:
    """ms from the last token to the check result when the answer streamed in as the app
    sees it: the proposal rebuilt and checked as each edit block completed (at ~1,000
    tokens/s), so the originals' checks are done before the last token."""
    v = Verifier(ws, run_tests=False, baseline=cache)
    try:
        ends = [i + 4 for i in range(len(answer)) if answer.startswith("```\n", i)
                and answer[:i].count("```") % 2 == 1]
        for end in ends:
            v.propose(build_proposal(ws, parse_edits(answer[:end])), final=False)
            time.sleep(len(answer[:end]) / 3.2 / 1000 / max(len(ends), 1))
        v.wait_settled(Scope.ANSWER, timeout=30)
        t0 = time.perf_counter()  # the last token
        v.propose(build_proposal(ws, parse_edits(answer)), final=True)
        rep = v.wait_settled(Scope.ANSWER, timeout=30)
    finally:
        v.close(wait=True)
    return ((rep.checks_at or t0) - t0) * 1000


def time_naive(ws: Workspace, answer: str) -> float:
    """Copy, apply everything, run the whole suite with all plugins: seconds."""
    t0 = time.perf_counter()
    proposal = build_proposal(ws, parse_edits(answer))
    tmp = Path(tempfile.mkdtemp(prefix="spark-bench-naive-"))
    try:
        dest = tmp / "tree"
        shutil.copytree(ws.root, dest, ignore=shutil.ignore_patterns(".git"))
        for fp in proposal.files:
            (dest / fp.path).write_text(fp.new_text)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                       cwd=dest, capture_output=True, timeout=600, check=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return time.perf_counter() - t0


async def _key_latency(run_verifier: bool, ws: Workspace, answer: str) -> list[float]:
    """ms from a key press to its handler while (or without) a verifier runs tests, with
    the panel redrawn on every progress report as the app does."""
    from textual.app import App

    from tui.widgets.verify_panel import VerifyPanel

    lat: list[float] = []
    pressed = [0.0]

    class Host(App):
        BINDINGS: ClassVar = [("j", "tick", "tick")]

        def compose(self):  # Textual's ComposeResult
            yield VerifyPanel()

        def action_tick(self) -> None:
            lat.append((time.perf_counter() - pressed[0]) * 1000)

    app = Host()
    async with app.run_test() as pilot:
        panel = app.query_one(VerifyPanel)
        v = None
        if run_verifier:
            def changed() -> None:
                app.call_from_thread(lambda: panel.show(v.report(Scope.ANSWER)) if v else None)

            v = Verifier(ws, run_tests=True, baseline=BaselineCache(), on_change=changed)
            v.propose(build_proposal(ws, parse_edits(answer)), final=True)
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            pressed[0] = time.perf_counter()
            await pilot.press("j")
            await asyncio.sleep(0.02)
        if v is not None:
            v.close(wait=True)
    return lat


async def _app_key_latency(tests_on: bool, seconds: float = 12.0) -> tuple[list[float], str]:
    """The real app on the demo: the us-dates request (its tests fail, the fast profile's
    fix loop sends them back, the fix is verified) while a key is pressed every 20 ms;
    ms from the key's arrival to its action.  Returns the latencies and what happened."""
    import os

    from textual import events
    from textual.binding import Binding

    from core.embedded import EmbeddedCore
    from tui.app import SparkApp

    prompt = _prompt("us-dates")
    os.environ["SPARK_VERIFY_TESTS"] = "1" if tests_on else "0"
    tmp = Path(tempfile.mkdtemp(prefix="spark-bench-app-"))
    root = write_demo(tmp / "demo")
    core = EmbeddedCore(project_root=root)
    url = core.start()
    lat: list[float] = []
    sent = [0.0]

    class Instrumented(SparkApp):
        BINDINGS: ClassVar = [*SparkApp.BINDINGS, Binding("f12", "bench_tick", "", priority=True)]

        def action_bench_tick(self) -> None:
            lat.append((time.perf_counter() - sent[0]) * 1000)

    what = ""
    try:
        app = Instrumented(root, url)
        async with app.run_test(size=(150, 44)) as pilot:
            if not hasattr(app, "verify"):
                return [], "the app has no verifier wired in"
            while app.client is None:
                await pilot.pause(0.02)
            app.query_one("#prompt").value = prompt
            await app.query_one("#prompt").action_submit()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                sent[0] = time.perf_counter()
                app.post_message(events.Key("f12", None))
                await asyncio.sleep(0.02)
            answer, _ = app.verify.reports()
            run = app.answer
            what = (f"shown: {getattr(run, 'kind', '?')} answer, tests "
                    f"{answer.tests.state.value if answer else '-'}; {app.verify.loop_status()}")
    finally:
        core.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return lat, what


def _prompt(name: str) -> str:
    import json

    for line in (ROOT / "core" / "cassettes" / "verify.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["id"] == name:
            return rec["messages"][-1]["content"]
    raise KeyError(name)


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="spark-bench-verify-"))
    try:
        demo = Workspace(write_demo(tmp / "demo"))
        cache = BaselineCache()
        for name in ("us-dates", "overdue-days"):
            answer = _recording(name)
            r = time_verify(demo, answer, cache)
            naive = time_naive(demo, answer)
            streamed = time_streamed(demo, answer, cache)
            print(f"demo {name:13s}: checks {r['checks_ms']:.0f} ms after the last token "
                  f"({streamed:.0f} ms when streamed); "
                  f"tests {r['state']} ({r['ran']} run, {r['new_failures']} new failure(s)): "
                  f"first verdict {r['first_result_s']:.2f} s, blamed {r['verdict_s']:.2f} s; "
                  f"naive full run {naive:.2f} s -> {naive / max(r['verdict_s'], 1e-3):.1f}x faster")
        r = time_verify(demo, _recording("us-dates"), BaselineCache(), parallel=True)
        print(f"demo us-dates, unchanged tree run beside the proposal's (the default on 4+ "
              f"cores): first verdict {r['first_result_s']:.2f} s, blamed {r['verdict_s']:.2f} s")
        proj = Workspace(generate_project(tmp / "proj"))
        print(f"generated project: {MODULES * TESTS_PER_MODULE} tests in {MODULES} files")
        cache = BaselineCache()
        for label, broken in (("passing edit", False), ("breaking edit", True)):
            answer = _edit_for_project(MODULES - 5, broken)
            r = time_verify(proj, answer, cache)
            naive = time_naive(proj, answer)
            print(f"500 tests, {label:13s}: checks {r['checks_ms']:.0f} ms; tests {r['state']} "
                  f"({r['ran']} selected, {r['new_failures']} new failure(s)): first verdict "
                  f"{r['first_result_s']:.2f} s, blamed {r['verdict_s']:.2f} s; naive full run "
                  f"{naive:.2f} s -> {naive / max(r['verdict_s'], 1e-3):.1f}x faster")
        slow_answer = WHOLE_SUITE
        idle = asyncio.run(_key_latency(False, proj, slow_answer))
        busy = asyncio.run(_key_latency(True, proj, slow_answer))
        print(f"keys while idle: p50 {_p(idle, .5):.1f} ms, p99 {_p(idle, .99):.1f} ms "
              f"({len(idle)} keys)")
        print(f"keys during a test run: p50 {_p(busy, .5):.1f} ms, p99 {_p(busy, .99):.1f} ms "
              f"({len(busy)} keys) -> p99 {(_p(busy, .99) / max(_p(idle, .99), 1e-3)):.2f}x idle "
              f"(goal p99 < 50 ms: {'met' if _p(busy, .99) < 50 else 'MISSED'}); "
              f"mean {statistics.fmean(busy) if busy else 0:.1f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    off, _ = asyncio.run(_app_key_latency(False))
    on, what = asyncio.run(_app_key_latency(True))
    if on:
        print(f"real app, demo us-dates, checks only: keys p50 {_p(off, .5):.1f} ms, p99 "
              f"{_p(off, .99):.1f} ms ({len(off)} keys)")
        print(f"real app, demo us-dates, tests + fix loop ({what}): keys p50 {_p(on, .5):.1f} ms, "
              f"p99 {_p(on, .99):.1f} ms ({len(on)} keys) -> p99 "
              f"{_p(on, .99) / max(_p(off, .99), 1e-3):.2f}x checks-only "
              f"(goal p99 < 50 ms: {'met' if _p(on, .99) < 50 else 'MISSED'})")
    else:
        print(f"real app: {what}")


if __name__ == "__main__":
    main()
