"""Repo map for a NEW focus: what a request's map stage costs when the prompt names things
no earlier prompt did (nothing prefetched), per tree size.

For each tree (generated 1k and 20k files, and the real site-packages tree when present)
the map graph is taken from the index cache (SPARK_CACHE_DIR; the indexer's snapshot) or
scanned in-process, installed as the app's background indexer would, warmed once (as the
indexer's `prefetch()` does after installing a graph), then asked for requests that each
name another defined function. Timed per request (p50, ms): `build_request` whole, and
the repo map's ranking, rendering and token counting inside it.

Baseline in the same run, same prompts: the ranking this replaced (power iteration warm-
started from the previous prompt's ranks, stopping at an L1 change of 1e-6), with the
same scoring and rendering, so `x power` is the ranking's own ratio. `same map` counts
maps equal to the map of the exact ranks (PageRank run to 1e-13).

    SPARK_CACHE_DIR=... SPARK_BENCH_REPOS=/tmp/perf python -m bench rank
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REQUESTS = 12
PROMPT = "add a retry to render_payload in the invoice pipeline; also look at {}"


def _graph(root: Path) -> tuple[list[str], Any]:
    from core.context.repomap import RepoMap
    from core.context.tree import list_files
    from core.indexing.cache import read_latest_snapshot

    files = list_files(root)
    latest = read_latest_snapshot(root, "map")
    if latest is not None and type(latest[1]).__name__ == "MapGraph":
        return files, latest[1]
    # index it as the app does (exact signatures; stored in the cache for the next run)
    from core.indexing.service import IndexService

    m = RepoMap(root)
    service = IndexService(root, m).start()
    try:
        service.wait(1800, what="map")
    finally:
        service.stop()
    return files, m._graph_state()


def _context(root: Path, files: list[str], graph: Any) -> Any:
    from core.context.prompt import ChatContext

    ctx = ChatContext(root, 128_000)
    ctx.repo_map.use_external_index()
    ctx.repo_map.install(files=files, graph=graph, progress=(len(graph.files), len(graph.files), True))
    return ctx


def _power_ranks() -> Callable[[Any, list], np.ndarray]:
    """The replaced ranking: power iteration from the last prompt's ranks, tol 1e-6."""
    from core.context.rank import pagerank

    last: list[np.ndarray] = []

    def rank(solver: Any, parts: list) -> np.ndarray:
        personal = np.zeros(solver.size)
        for part in parts:
            personal += part.weight * part.make()
        start = last[0] if last and len(last[0]) == solver.size else None
        ranks = pagerank(solver.graph, personal, tol=1e-6, start=start)
        last[:] = [ranks]
        return ranks
    return rank


def _exact_ranks(solver: Any, parts: list) -> np.ndarray:
    from core.context.rank import pagerank

    personal = np.zeros(solver.size)
    for part in parts:
        personal += part.weight * part.make()
    return pagerank(solver.graph, personal, tol=1e-13, max_iter=5000)


def _run(ctx: Any, prompts: list[str], ranker: Callable | None) -> dict[str, Any]:
    from core.context import repomap

    real_rank, real_tokens = repomap.rank_focus, repomap._tokens_of
    spent = {"rank": 0.0, "tokens": 0.0}

    def timed_rank(solver: Any, parts: list) -> np.ndarray:
        t = time.perf_counter()
        try:
            return (ranker or real_rank)(solver, parts)
        finally:
            spent["rank"] += time.perf_counter() - t

    def timed_tokens(line: str) -> int:
        t = time.perf_counter()
        try:
            return real_tokens(line)
        finally:
            spent["tokens"] += time.perf_counter() - t

    out: dict[str, list] = {"request": [], "rank": [], "tokens": [], "texts": []}
    repomap.rank_focus = timed_rank
    repomap._tokens_of = timed_tokens  # type: ignore[assignment]
    try:
        for prompt in prompts:
            spent["rank"] = spent["tokens"] = 0.0
            t = time.perf_counter()
            messages, _report = ctx.build_request(prompt)
            out["request"].append((time.perf_counter() - t) * 1000)
            out["rank"].append(spent["rank"] * 1000)
            out["tokens"].append(spent["tokens"] * 1000)
            out["texts"].append(messages[1]["content"] if len(messages) > 2 else "")
    finally:
        repomap.rank_focus = real_rank
        repomap._tokens_of = real_tokens  # type: ignore[assignment]
    return out


def main() -> None:
    from bench.repo_gen import ensure_repo

    base = Path(os.environ.get("SPARK_BENCH_REPOS", tempfile.gettempdir())) / "spark-bench-repos"
    sizes = [int(s) for s in os.environ.get("SPARK_BENCH_SIZES", "1000,20000").split(",")]
    trees = [(f"{n} files", ensure_repo(base / f"repo-{n}", n)) for n in sizes if n]
    if (base / "real-site-packages").is_dir():
        trees.append(("real site-packages", base / "real-site-packages"))
    print(f"repo map for a new focus, p50 of {REQUESTS} requests (ms); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'tree':>20}{'nodes':>8}{'edges':>9}{'warm-up':>9}{'request':>9}{'rank':>8}{'tokens':>8}"
          f"{'power':>8}{'x power':>9}{'same map':>10}")
    for label, root in trees:
        files, graph = _graph(root)
        names = sorted(n for n in graph.ident_index if "_" in n.strip("_"))
        picks = random.Random(len(names)).sample(names, min(3 * REQUESTS, len(names)))
        new = _context(root, files, graph)
        t = time.perf_counter()
        new.repo_map.prefetch()  # what the indexer does after installing a graph
        warm = (time.perf_counter() - t) * 1000
        old = _context(root, files, graph)
        old.repo_map.prefetch()
        fast_prompts = [PROMPT.format(n) for n in picks[:REQUESTS]]
        power_prompts = [PROMPT.format(n) for n in picks[REQUESTS:2 * REQUESTS]]
        fast = _run(new, fast_prompts, None)
        power = _run(old, power_prompts, _power_ranks())
        exact_ctx = _context(root, files, graph)
        exact = _run(exact_ctx, fast_prompts, _exact_ranks)
        same = sum(a == b for a, b in zip(fast["texts"], exact["texts"]))
        p50 = {k: statistics.median(v) for k, v in fast.items() if k != "texts"}
        power_rank = statistics.median(power["rank"])
        print(f"{label:>20}{graph.graph.size:>8,}{len(graph.graph.src):>9,}{warm:9.1f}{p50['request']:9.1f}"
              f"{p50['rank']:8.1f}{p50['tokens']:8.1f}{power_rank:8.1f}"
              f"{power_rank / max(p50['rank'], 1e-9):9.1f}x{same:>6}/{len(fast_prompts)}")


if __name__ == "__main__":
    main()
