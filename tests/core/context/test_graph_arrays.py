"""The repo map's graph built from arrays (issue 14: a first 20k launch's indexer < 500 MB).

`_build_graph` keeps its 2.4 million edges (a real 20,000-file tree) as numpy arrays and
emits them sorted by source, so `Graph.from_edges` skips its sort. These check that the
shortcut changes nothing: `from_edges` on sorted input, as lists or arrays, equals the
plain formula (a stable sort, then the weights over each source's sum), and a map's graph
does come sorted. (Checked once on a real 20,000-file tree too: the MapGraph equals the
old list-based build's, array for array.)
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.repo_gen import generate
from core.context.rank import Graph
from core.context.repomap import RepoMap


def _reference(size: int, src: list[int], dst: list[int], weight: list[float]) -> Graph:
    """from_edges as it was: a stable sort by source, weights over each source's sum."""
    s, d, w = np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(weight, np.float64)
    order = np.argsort(s, kind="stable")
    s, d, w = s[order], d[order], w[order]
    out = np.bincount(s, weights=w, minlength=size) if len(s) else np.zeros(size)
    norm = np.where(out[s] > 0, w / np.where(out[s] > 0, out[s], 1.0), 0.0) if len(s) else w
    degree = np.bincount(s, minlength=size) if len(s) else np.zeros(size, dtype=np.int64)
    return Graph(size=size, src=s, dst=d, weight=norm, dangling=out <= 0, degree=degree)


def _same(a: Graph, b: Graph) -> bool:
    return a.size == b.size and all(
        np.array_equal(getattr(a, f), getattr(b, f)) and getattr(a, f).dtype == getattr(b, f).dtype
        for f in ("src", "dst", "weight", "dangling", "degree"))


EDGES = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from([0.0, 0.5, 1.0, 2.5])),
             max_size=40)))


@settings(max_examples=200, deadline=None)
@given(EDGES, st.booleans(), st.booleans())
def test_from_edges_equals_the_sorting_formula(case, presort, arrays):
    size, edges = case
    if presort:
        edges = sorted(edges, key=lambda e: e[0])  # stable: the shortcut's input
    src, dst, weight = ([e[i] for e in edges] for i in range(3))
    given_edges = (np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(weight)) if arrays \
        else (src, dst, weight)
    assert _same(Graph.from_edges(size, *given_edges), _reference(size, src, dst, weight))


def test_a_maps_graph_comes_sorted_by_source(tmp_path):
    """The edges `_build_graph` makes come sorted by source (so from_edges's stable sort,
    skipped, would have left them as they are: the property above) and normalised."""
    root = generate(tmp_path / "repo", 60, 5)
    repo_map = RepoMap(root)
    repo_map.all_files()  # scans the tree in this process
    graph = repo_map._graph_state().graph  # then builds the graph (build_graph)
    assert len(graph.src) > 100
    assert bool((graph.src[1:] >= graph.src[:-1]).all())
    out = np.bincount(graph.src, weights=graph.weight, minlength=graph.size)
    assert np.allclose(out[graph.src], 1.0)
    assert np.array_equal(graph.degree, np.bincount(graph.src, minlength=graph.size))
