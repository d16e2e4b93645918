"""Feel: does the app keep up with an answer streaming at 5,000 tokens/s (five times Spark)?

Runs the real app headless (Textual's pilot) against the real embedded core, replaying a
long answer pinned at 5,000 tok/s, and measures
  * paint lag: from a delta's arrival in the app to the screen update that shows it
    (the compositor's update handed to the driver; p50/p99; goal p99 < 50 ms);
  * key latency: from a key press during the stream to the end of the refresh after its
    action ran (goal < 50 ms);
against a baseline measured in the same run: the same answer at 1,000 tok/s (Spark).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from textual import events

PROMPT = "write the big generated module for the feel benchmark"


def _long_answer(functions: int) -> str:
    body = []
    for i in range(functions):
        body.append(
            f"def handler_{i}(request, retries={i % 5}):\n"
            f"    \"\"\"Handle request kind {i} with up to {{retries}} retries.\"\"\"\n"
            f"    for attempt in range(retries + 1):\n"
            f"        result = request.send(kind={i}, attempt=attempt)\n"
            f"        if result.ok:\n"
            f"            return result.value * {i + 1}\n"
            f"    raise RuntimeError('kind {i} failed')\n\n\n"
        )
    return "Here is the module.\n\ngenerated/handlers.py\n```python\n" + "".join(body) + "```\n"


def _setup(tmp: Path, rate: float) -> tuple[Path, Path]:
    from core.demo import write_demo

    root = write_demo(tmp / f"demo-{int(rate)}")
    cassettes = tmp / "cassettes"
    cassettes.mkdir(exist_ok=True)
    record = {"version": 1, "id": "feel-bench", "title": "feel benchmark module",
              "messages": [{"role": "user", "content": PROMPT}], "answer": _long_answer(150),
              "usage": {"prompt_tokens": 100, "completion_tokens": 10000}, "source": {"backend": "bench"}}
    (cassettes / "feel.jsonl").write_text(json.dumps(record) + "\n")
    config = tmp / f"config-{int(rate)}.toml"
    config.write_text(
        f"[profiles.spark]\nbackend = \"replay\"\npacing = \"pinned\"\ntokens_per_s = {rate}\n"
        f"ttft_ms = 50.0\ncassettes = [\"{cassettes}\"]\n")
    return root, config


async def _measure(rate: float, tmp: Path) -> dict:
    from core.embedded import EmbeddedCore
    from core.session import AnswerRun
    from tui.app import SparkApp

    root, config = _setup(tmp, rate)
    core = EmbeddedCore(project_root=root, config_file=config)
    url = core.start()
    arrivals: list[float] = []
    lags: list[float] = []
    original_feed = AnswerRun.feed

    def feed(self, text, tokens):  # instrument: when each delta reaches the app
        arrivals.append(time.perf_counter())
        return original_feed(self, text, tokens)

    painted: list[float] = []  # arrivals handed to a paint, waiting for the screen update
    handled: list[float] = []
    displays: list[float] = []

    class Instrumented(SparkApp):
        def _paint(self) -> None:
            painted.extend(arrivals)
            arrivals.clear()
            super()._paint()

        def action_next_hunk(self) -> None:
            super().action_next_hunk()
            handled.append(time.perf_counter())

        def _display(self, screen, renderable) -> None:
            # the compositor's update for the screen is ready: this is the paint the user sees
            super()._display(screen, renderable)
            if renderable is not None:
                displays.append(time.perf_counter())
            if renderable is not None and painted:
                now = time.perf_counter()
                lags.extend(now - t for t in painted)
                painted.clear()

    AnswerRun.feed = feed
    key_latencies: list[float] = []
    try:
        app = Instrumented(root, url)
        async with app.run_test(size=(160, 50)) as pilot:
            while app.client is None:
                await pilot.pause(0.02)
            app.query_one("#prompt").value = PROMPT
            started = time.perf_counter()
            await app.query_one("#prompt").action_submit()  # Enter, without the pilot's wait for idle
            async def press_keys() -> None:
                # keys during the stream, as the terminal driver delivers them: time until the
                # action has run and the next screen update is out
                while app.answer is None or app.answer.stats.first_token is None:
                    await asyncio.sleep(0.001)
                while not app.answer.finished:
                    sent = time.perf_counter()
                    handled.clear()
                    app.post_message(events.Key("j", "j"))
                    while not handled and time.perf_counter() - sent < 2:
                        await asyncio.sleep(0.0005)
                    displays_before = len(displays)
                    while len(displays) == displays_before and time.perf_counter() - sent < 2:
                        await asyncio.sleep(0.0005)
                    if not app.answer.finished:
                        key_latencies.append((displays[-1] if displays else time.perf_counter()) - sent)
                    await asyncio.sleep(0.01)

            keys = asyncio.create_task(press_keys())
            while app.answer is None or not app.answer.finished:
                await asyncio.sleep(0.005)
            await keys
            elapsed = time.perf_counter() - started
            while not app.settled:
                await pilot.pause(0.01)
            tokens = app.answer.stats.tokens
            rate_seen = app.answer.stats.tokens_per_s or 0.0
    finally:
        AnswerRun.feed = original_feed
        core.stop()
    lags.sort()
    key_latencies.sort()

    def pct(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")

    return {"rate": rate, "tokens": tokens, "seconds": elapsed, "tokens_per_s_seen": rate_seen,
            "deltas": len(lags), "lag_p50_ms": pct(lags, 0.5), "lag_p99_ms": pct(lags, 0.99),
            "lag_max_ms": max(lags) * 1000 if lags else float("nan"),
            "keys": len(key_latencies), "key_p50_ms": pct(key_latencies, 0.5),
            "key_p99_ms": pct(key_latencies, 0.99),
            "key_max_ms": max(key_latencies) * 1000 if key_latencies else float("nan"),
            "key_mean_ms": statistics.mean(key_latencies) * 1000 if key_latencies else float("nan")}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = asyncio.run(_measure(1000.0, Path(tmp)))
        fast = asyncio.run(_measure(5000.0, Path(tmp)))
    for r in (base, fast):
        print(f"{r['rate']:>6.0f} tok/s: {r['tokens']} tokens in {r['seconds']:.2f} s "
              f"(seen {r['tokens_per_s_seen']:.0f} tok/s), {r['deltas']} deltas: "
              f"paint lag p50 {r['lag_p50_ms']:.1f} ms, p99 {r['lag_p99_ms']:.1f} ms, max {r['lag_max_ms']:.1f} ms; "
              f"{r['keys']} keys: p50 {r['key_p50_ms']:.1f} ms, p99 {r['key_p99_ms']:.1f} ms, max {r['key_max_ms']:.1f} ms")
    print(f"paint lag p99 at 5,000 vs 1,000 tok/s: {fast['lag_p99_ms'] / base['lag_p99_ms']:.2f}x "
          f"(goal: p99 < 50 ms at 5,000: {'met' if fast['lag_p99_ms'] < 50 else 'MISSED'})")
    print(f"key latency p99 at 5,000 vs 1,000 tok/s: {fast['key_p99_ms'] / base['key_p99_ms']:.2f}x "
          f"(goal: p99 < 50 ms at 5,000: {'met' if fast['key_p99_ms'] < 50 else 'MISSED'}; "
          f"max {fast['key_max_ms']:.0f} ms)")


if __name__ == "__main__":
    main()
