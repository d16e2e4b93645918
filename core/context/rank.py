"""Personalised PageRank over a weighted edge list, vectorised with numpy.

The repo map ranks symbols by how much the rest of the code leans on them, biased toward
what the user is working on (the files in the chat, names in the prompt). A power
iteration with `np.bincount` handles the standard library's graph (~100k edges) in
milliseconds, so ranking can run per prompt while the graph itself stays cached.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Graph:
    """A directed graph as arrays; `weight` is normalised so each source's out-edges sum to 1."""

    size: int
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    dangling: np.ndarray  # bool per node: no out-edges
    degree: np.ndarray | None = None  # out-edges per node; edges are sorted by src when set

    @classmethod
    def from_edges(cls, size: int, src: list[int], dst: list[int], weight: list[float]) -> Graph:
        s = np.asarray(src, dtype=np.int64)
        d = np.asarray(dst, dtype=np.int64)
        w = np.asarray(weight, dtype=np.float64)
        # edges sorted by source: a walk step repeats each node's mass over its out-edges
        # (np.repeat) instead of gathering it edge by edge, ~1.5x faster on 500k edges
        order = np.argsort(s, kind="stable")
        s, d, w = s[order], d[order], w[order]
        out = np.bincount(s, weights=w, minlength=size) if len(s) else np.zeros(size)
        norm = np.where(out[s] > 0, w / np.where(out[s] > 0, out[s], 1.0), 0.0) if len(s) else w
        degree = np.bincount(s, minlength=size) if len(s) else np.zeros(size, dtype=np.int64)
        return cls(size=size, src=s, dst=d, weight=norm, dangling=out <= 0, degree=degree)


def pagerank(
    graph: Graph,
    personal: np.ndarray | None = None,
    damping: float = 0.85,
    max_iter: int = 100,
    tol: float = 1e-9,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """Stationary distribution of a random walk that restarts at `personal` (uniform if None).

    Mass at nodes without out-edges restarts at `personal` too, so the result sums to 1.
    `start` (e.g. the previous prompt's ranks on the same graph) is where the iteration
    begins: the same answer, in fewer iterations when the focus barely moved.
    """
    n = graph.size
    if n == 0:
        return np.zeros(0)
    if personal is None or not np.any(personal > 0):
        p = np.full(n, 1.0 / n)
    else:
        p = np.asarray(personal, dtype=np.float64)
        p = p / p.sum()
    x = p.copy() if start is None or len(start) != n else np.asarray(start, dtype=np.float64)
    for _ in range(max_iter):
        spread = np.repeat(x, graph.degree) if graph.degree is not None else x[graph.src]
        flow = np.bincount(graph.dst, weights=graph.weight * spread, minlength=n)
        restart = (1.0 - damping) + damping * x[graph.dangling].sum()
        new = damping * flow + restart * p
        if np.abs(new - x).sum() < tol:
            return new
        x = new
    return x
