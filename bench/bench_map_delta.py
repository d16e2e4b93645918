"""A saved file's map update: the delta (core.context.repomap_delta) against the whole
rebuild it replaces, measured in the same run on the same scans.

For each tree (a generated 2,000-file tree, and SPARK_BENCH_MAP_TREE when set, e.g.
/tmp/launch16/real20k) every source file is scanned as the indexer does, the map built
whole (median of 3: the baseline, what every save cost before), then 20 files each get a
body edit (a comment line on top: every definition's line moves, names and references
stay) and are spliced in. Printed: ms per whole build and per delta (CPU), their ratio,
and the bytes a save sends the app (the delta's pickle against the whole map's arrays and
pickle). Every spliced map is checked equal to a whole build of the same scans.

    SPARK_BENCH_MAP_TREE=/tmp/launch16/real20k python -m bench map_delta
"""

from __future__ import annotations

import os
import pickle
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

EDITS = 20


def _scans(root: Path) -> tuple[Any, Any]:  # (facts, vocab) as the indexer holds them
    from core.indexing import worker
    from core.indexing.treestate import tree_state

    class Conn:
        def send(self, msg: tuple) -> None:
            pass

        def poll(self, timeout: float = 0) -> bool:
            return False

    ix = worker.Indexer(root, Conn(), tree_state(root), use_cache=False)  # type: ignore[arg-type]
    ix.await_cache()
    ix.stamps = worker.map_stamps(root, ix.files)
    ix._scan_all_tags(partial=False)
    return ix.facts, ix._vocab()


def _map_bytes(graph: object) -> int:
    from core.indexing import wire

    parts = wire.split(graph)
    if parts is None:
        return len(pickle.dumps(graph, protocol=5))
    data, raws = parts
    return len(data) + sum(r.nbytes for r in raws)


def run_tree(name: str, root: Path) -> None:
    from core.context import tags as tagmod
    from core.context.repomap import FileFacts, build_graph
    from core.context.repomap_delta import make_delta, update_graph
    from core.indexing.worker import _exact_tags

    facts, vocab = _scans(root)
    whole = []
    for _ in range(3):
        start = time.process_time()
        graph = build_graph(facts, vocab, exact=True)
        whole.append(time.process_time() - start)
    rng = random.Random(7)
    picks = rng.sample(sorted(r for r in facts if r.endswith(".py")), min(EDITS, len(facts)))
    delta_s, delta_bytes, spliced = [], [], 0
    for k, rel in enumerate(picks):
        data = b"# edited\n" + (root / rel).read_bytes()
        lang = tagmod.language_for(rel)
        assert lang is not None
        new = FileFacts.of(_exact_tags(lang, data), vocab)
        start = time.process_time()
        delta = make_delta(graph, rel, new, vocab)
        updated = update_graph(graph, rel, new, vocab)
        delta_s.append((time.process_time() - start) / 2)
        if updated is None or delta is None:
            continue
        spliced += 1
        delta_bytes.append(len(pickle.dumps([delta], protocol=5)))
        if k < 3:  # the proof: equal to a whole build of the same scans
            from tests.core.context.test_repomap_delta import _same

            facts[rel] = new
            assert _same(updated, build_graph(facts, vocab, exact=True)), rel
            graph = updated
    b, d = statistics.median(whole) * 1000, statistics.median(delta_s) * 1000
    print(f"{name}: {len(facts):,} files, {len(graph.def_line):,} rows, {len(graph.graph.src):,} edges")
    print(f"  whole build {b:.0f} ms CPU (median of 3) | delta {d:.1f} ms (median of {len(delta_s)}, "
          f"{spliced} spliced) | x{b / max(d, 1e-3):.0f}")
    print(f"  sent per save: whole map {_map_bytes(graph) / 1e6:.1f} MB | delta "
          f"{statistics.median(delta_bytes) / 1e3 if delta_bytes else 0:.1f} kB")


def main() -> None:
    from bench.repo_gen import generate

    with tempfile.TemporaryDirectory() as tmp:
        run_tree("generated 2k", generate(Path(tmp) / "repo", 2000, 3))
    extra = os.environ.get("SPARK_BENCH_MAP_TREE")
    if extra:
        run_tree(Path(extra).name, Path(extra))


if __name__ == "__main__":
    main()
