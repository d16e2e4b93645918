"""A saved file's map update: the delta (core.context.repomap_delta) against the whole
rebuild it replaces, measured in the same run on the same scans.

For each tree (a generated 2,000-file tree, and SPARK_BENCH_MAP_TREE when set, e.g.
/tmp/launch16/real20k; with SPARK_CACHE_DIR set the scans come from that cache, as the
indexer's do) every source file is scanned as the indexer does and the map built whole
(median of 3: the baseline, what such a save cost before). Then, one kind of save at a
time, 5 files each:

- body: a comment line on top (every definition's line moves; names and references stay):
  a MapDelta;
- new def: a top-level def with a fresh name appended;
- renamed def: the file's first def renamed (a name gone, a new one);
- new file: a module defining a fresh name and calling a common one;
- deleted file.

The last four are MapEdits (before this change: a whole build and the whole map each).
Printed per kind: the indexer's CPU per save (make + apply), the bytes sent to the app,
and the app's CPU to take it (unpickle + splice into its map), each against the whole
build / the whole map's bytes / the whole map's unpickling in the same run, as ratios.
The first edit after the scans load also builds the edit lookups (MapIndex): printed on
its own. Every kind's first map is checked equal to a whole build of the same scans.

    SPARK_CACHE_DIR=/tmp/x SPARK_BENCH_MAP_TREE=/tmp/launch16/real20k python -m bench map_delta
"""

from __future__ import annotations

import os
import pickle
import random
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

EDITS = 20  # body edits timed (the first 3 also checked)
PER_KIND = 5
_DEF = re.compile(rb"^(?:async\s+)?def\s+([A-Za-z_]\w*)", re.MULTILINE)


def _scans(root: Path) -> tuple[Any, Any]:  # (facts, vocab) as the indexer holds them
    from core.indexing import worker
    from core.indexing.treestate import tree_state

    class Conn:
        def send(self, msg: tuple) -> None:
            pass

        def poll(self, timeout: float = 0) -> bool:
            return False

    cached = bool(os.environ.get("SPARK_CACHE_DIR"))
    ix = worker.Indexer(root, Conn(), tree_state(root), use_cache=cached)  # type: ignore[arg-type]
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


def _map_load_s(graph: object) -> float:
    """CPU the app's receiving thread spends taking a whole map off its socket (as
    wire.recv_buffers): its arrays' bytes copied into fresh arrays (what the raw reads do,
    GIL released) and the pickle loaded around them (GIL held)."""
    import numpy as np

    from core.indexing import wire

    parts = wire.split(graph)
    assert parts is not None
    data, raws = parts
    start = time.process_time()
    buffers = [np.empty(r.nbytes, dtype=np.uint8) for r in raws]
    for buf, raw in zip(buffers, raws):
        buf[:] = np.frombuffer(raw, dtype=np.uint8)
    pickle.loads(data, buffers=buffers)
    return time.process_time() - start


def _new_text(kind: str, root: Path, rel: str, k: int) -> bytes | None:
    data = (root / rel).read_bytes()
    if kind == "body":
        return b"# edited\n" + data
    if kind == "new def":
        return data + f"\n\ndef zz_bench_new_{k}(x):\n    return x\n".encode()
    if kind == "renamed def":
        m = _DEF.search(data)
        return None if m is None else data[:m.end(1)] + b"_zz_renamed" + data[m.end(1):]
    if kind == "new file":
        return f"def zz_bench_module_{k}(x):\n    return get(x)\n\n\nclass Config:\n    pass\n".encode()
    return None  # deleted


def run_tree(name: str, root: Path) -> None:
    from core.context import tags as tagmod
    from core.context.repomap import FileFacts, build_graph
    from core.context.repomap_delta import apply_delta, make_delta
    from core.indexing.worker import _exact_tags
    from tests.core.context.test_repomap_delta import _same

    try:
        from core.context.repomap_delta import MapIndex

        index_class: Any = MapIndex
    except ImportError:  # a code base without map edits (the A/B base)
        index_class = None

    facts, vocab = _scans(root)
    whole = []
    for _ in range(3):
        start = time.process_time()
        graph = build_graph(facts, vocab, exact=True)
        whole.append(time.process_time() - start)
    graph.serial = 1
    b = statistics.median(whole) * 1000
    whole_bytes = _map_bytes(graph)
    load = statistics.median(_map_load_s(graph) for _ in range(3)) * 1000
    print(f"{name}: {len(facts):,} files, {len(graph.def_line):,} rows, {len(graph.graph.src):,} edges")
    print(f"  whole build {b:.0f} ms CPU (median of 3) | whole map {whole_bytes / 1e6:.1f} MB | "
          f"app unpickles it in {load:.0f} ms CPU")
    rng = random.Random(7)
    pool = sorted(r for r in facts if r.endswith(".py"))
    index = index_class(vocab, facts) if index_class is not None else None
    serial = 1
    for kind in ("body", "new def", "renamed def", "new file", "deleted file"):
        count = EDITS if kind == "body" else PER_KIND
        picks = rng.sample(pool, count)
        made_s, sent, took_s, edits = [], [], [], 0
        for k, rel in enumerate(picks):
            target = f"zz_bench/new_{k}.py" if kind == "new file" else rel
            data = _new_text(kind, root, rel, k)
            if data is None and kind != "deleted file":
                continue
            lang = tagmod.language_for(target)
            assert lang is not None
            new = FileFacts.of(_exact_tags(lang, data), vocab) if data is not None else None
            first = False
            start = time.process_time()
            delta: Any = make_delta(graph, target, new, vocab)
            if delta is not None:
                updated = apply_delta(graph, delta)
            elif index is not None:
                if new is None:
                    facts.pop(target)
                else:
                    facts[target] = new
                first = index._key is None
                made = index.update(graph, target, new)
                assert made is not None
                updated, delta = made
                edits += 1
                if first:  # (not in the medians)
                    print(f"  (the first edit: {(time.process_time() - start) * 1000:.0f} ms CPU, its lookups made)")
            else:
                print(f"  {kind}: a whole build and the whole map in this code")
                break
            if not first:
                made_s.append(time.process_time() - start)
            serial += 1
            updated.serial = serial
            blob = pickle.dumps([delta], protocol=5)
            sent.append(len(blob))
            start = time.process_time()
            for d in pickle.loads(blob):
                apply_delta(graph, d)
            took_s.append(time.process_time() - start)
            if new is None:
                facts.pop(target, None)
            else:
                facts[target] = new
            if not k:  # the proof: equal to a whole build of the same scans
                assert _same(updated, build_graph(facts, vocab, exact=True)), (kind, target)
            graph = updated
        if not made_s:
            continue
        m, s, t = statistics.median(made_s) * 1000, statistics.median(sent), statistics.median(took_s) * 1000
        print(f"  {kind:12s} indexer {m:7.1f} ms CPU (x{b / max(m, 1e-3):.0f} less than a build) | "
              f"sent {s / 1e3:7.1f} kB (x{whole_bytes / s:.0f} less) | app {t:6.1f} ms CPU "
              f"(x{load / max(t, 1e-3):.1f} less than the whole map's unpickling) | median of {len(made_s)}"
              + (f", {edits} edits" if edits else ""))


def main() -> None:
    from bench.repo_gen import generate

    with tempfile.TemporaryDirectory() as tmp:
        run_tree("generated 2k", generate(Path(tmp) / "repo", 2000, 3))
    extra = os.environ.get("SPARK_BENCH_MAP_TREE")
    if extra:
        run_tree(Path(extra).name, Path(extra))


if __name__ == "__main__":
    main()
