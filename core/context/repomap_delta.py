"""One file's new scan applied to a built map, without rebuilding the rest of it.

On a real 20,000-file tree a full `build_graph` takes the indexer 3-5 s of a core (2.4
million edges, 350,000 definition rows), and every saved file used to pay it. Most saves
edit a body: the file still defines the same names, so the graph's nodes and every other
file's edges stay as they are. Then only the file's own out-edges (the defined names it
mentions) and its definition rows change, and both are spliced into copies of the arrays:
time in the file's size plus a few memory copies, instead of a rebuild.

`update_graph` returns exactly what `build_graph` would return for the new scans (array for
array: tests/core/context/test_repomap_delta.py), or None when the change alters the
graph's nodes (a file added or removed, a name defined or no longer defined by the file):
the caller rebuilds then.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from core.context.rank import Graph
from core.context.repomap import (
    FileFacts,
    IdentIndex,
    MapGraph,
    PackedStrings,
    RefVocab,
    _definition_factor,
    _mappable_name,
    _name_weight,
    is_test_path,
)


@dataclass(frozen=True)
class MapDelta:
    """One file's new rows and out-edges: what turns the map whose `serial` is `base` into
    the one whose serial is `serial`. A few kB where the whole map is ~114 MB (real 20k
    tree): the indexer sends this to the app, which splices it into the map it holds."""

    base: int  # serial of the map it applies to (0: none; then the whole map is sent)
    serial: int
    file: int  # the file's index in the map
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    texts: tuple[str, ...]
    lines: np.ndarray  # int64, one per definition
    depths: np.ndarray
    idents: np.ndarray  # int64 ident node per definition, -1 when unmapped
    dst: np.ndarray  # the file's out-edges (ident nodes), in the order of its references
    weight: np.ndarray  # their unnormalised weights


def make_delta(graph: MapGraph, rel: str, facts: FileFacts | None, vocab: RefVocab) -> MapDelta | None:
    """The delta that replaces file `rel`'s scan in `graph` (built from scans S) by `facts`,
    so that `apply_delta(graph, delta)` equals `build_graph(S | {rel: facts}, vocab,
    exact=graph.exact)`; None when the file is new or gone, or defines a different set of
    mapped names (the nodes or owners change). `vocab` is the one S's and `facts`'s
    reference ids come from. Its serials are the graph's and 0 (the caller numbers it)."""
    i = graph.file_index.get(rel)
    if facts is None or i is None or not isinstance(graph.ident_index, IdentIndex):
        return None
    ident = graph.ident_index
    a, b = int(graph.file_starts[i]), int(graph.file_starts[i + 1])
    nodes: list[int] = []
    for d in facts.defs:
        node = ident.get(d.name, -1) if _mappable_name(d.name) else -1
        if node < 0 and _mappable_name(d.name):
            return None  # a name no file defined before: a new node
        nodes.append(node)
    old_nodes = graph.def_ident[a:b]
    if set(nodes) - {-1} != {int(n) for n in old_nodes[old_nodes >= 0]}:
        return None  # the file defines other names: owners (and weights) change
    defs = facts.defs
    n = len(defs)
    dst, weight = _out_edges(graph, i, facts, vocab)
    return MapDelta(graph.serial, 0, i, tuple(d.name for d in defs), tuple(d.kind for d in defs),
                    tuple(d.text for d in defs), np.fromiter((d.line for d in defs), np.int64, n),
                    np.fromiter((d.depth for d in defs), np.int64, n), np.asarray(nodes, dtype=np.int64),
                    dst, weight)


def apply_delta(graph: MapGraph, delta: MapDelta) -> MapGraph:
    """`graph` with the delta's file replaced (a new map; `graph` is left as it was, its
    unchanged columns shared), numbered `delta.serial`. The caller checks the base."""
    out = _with_rows(graph, _with_row(graph.graph, delta.file, delta.dst, delta.weight), delta)
    out.serial = delta.serial
    return out


def update_graph(graph: MapGraph, rel: str, facts: FileFacts | None, vocab: RefVocab) -> MapGraph | None:
    """`apply_delta(graph, make_delta(...))`: the map with `rel`'s new scan, or None where
    a delta cannot make it (see make_delta)."""
    delta = make_delta(graph, rel, facts, vocab)
    return None if delta is None else apply_delta(graph, delta)


def _out_edges(graph: MapGraph, i: int, facts: FileFacts, vocab: RefVocab) -> tuple[np.ndarray, np.ndarray]:
    """File i's out-edges as `_build_graph` makes them, in the order of its references:
    each reference to a mapped name whose only defining file is not i, weighted by the
    name and its number of owners (an ident node's out-degree: one edge per owner)."""
    g = graph.graph
    ident = graph.ident_index
    degree = g.degree if g.degree is not None else np.bincount(g.src, minlength=g.size)
    offsets = np.zeros(g.size + 1, dtype=np.int64)
    np.cumsum(degree, out=offsets[1:])
    dst: list[int] = []
    weight: list[float] = []
    for vid in facts.refs.tolist():
        try:
            name = vocab.word(vid).decode("utf-8")
        except UnicodeDecodeError:
            continue  # not an encoded str: no definition has this name
        node = ident.get(name, -1)
        if node < 0:
            continue
        owners = int(degree[node])
        if owners == 1 and int(g.dst[offsets[node]]) == i:
            continue  # the file's own (sole) definition
        dst.append(node)
        weight.append(_name_weight(name, owners))
    return np.asarray(dst, dtype=np.int64), np.asarray(weight, dtype=np.float64)


def _with_row(g: Graph, i: int, dst: np.ndarray, w: np.ndarray) -> Graph:
    """`g` with source i's out-edges replaced, normalised as `Graph.from_edges` does (the
    row's sum accumulated in edge order, as its bincount does); `g` itself when equal."""
    total = float(np.bincount(np.zeros(len(w), dtype=np.int64), weights=w, minlength=1)[0]) if len(w) else 0.0
    norm = np.zeros(len(w))
    if len(w):
        np.divide(w, np.full(len(w), total), out=norm, where=np.full(len(w), total) > 0)
    degree = g.degree if g.degree is not None else np.bincount(g.src, minlength=g.size)
    start = int(degree[:i].sum())
    end = start + int(degree[i])
    if end - start == len(dst) and np.array_equal(g.dst[start:end], dst) and \
            np.array_equal(g.weight[start:end], norm) and bool(g.dangling[i]) == (total <= 0):
        return g
    new_degree = degree.copy()
    new_degree[i] = len(dst)
    dangling = g.dangling.copy()
    dangling[i] = total <= 0
    return Graph(size=g.size,
                 src=np.concatenate((g.src[:start], np.full(len(dst), i, dtype=np.int64), g.src[end:])),
                 dst=np.concatenate((g.dst[:start], dst, g.dst[end:])),
                 weight=np.concatenate((g.weight[:start], norm, g.weight[end:])),
                 dangling=dangling, degree=new_degree)


def _with_rows(graph: MapGraph, g: Graph, delta: MapDelta) -> MapGraph:
    """`graph` with graph `g` and the delta file's definition rows replaced, valued as
    `_build_graph` values them (share: 1 / owners; scale: 1 / (rows in the file + 1))."""
    i, names, nodes = delta.file, delta.names, delta.idents
    n = len(names)
    a, b = int(graph.file_starts[i]), int(graph.file_starts[i + 1])
    degree = g.degree if g.degree is not None else np.bincount(g.src, minlength=g.size)
    if n == b - a:
        starts = graph.file_starts
    else:
        starts = graph.file_starts.copy()
        starts[i + 1:] += n - (b - a)

    def splice(old: np.ndarray, new: np.ndarray) -> np.ndarray:
        # a column whose rows come out the same is shared, not copied (the maps are never
        # written to): on 350,000 rows each copy is a few ms of fresh pages
        new = new.astype(old.dtype, copy=False)
        if n == b - a and np.array_equal(old[a:b], new):
            return old
        return np.concatenate((old[:a], new, old[b:]))

    share = np.fromiter((1.0 / int(degree[node]) if node >= 0 else 0.0 for node in nodes.tolist()), np.float64, n)
    return dataclasses.replace(
        graph, graph=g, file_starts=starts,
        def_name=_splice_strings(graph.def_name, a, b, names),
        def_kind=_splice_strings(graph.def_kind, a, b, delta.kinds),
        def_text=_splice_strings(graph.def_text, a, b, delta.texts),
        def_line=splice(graph.def_line, delta.lines),
        def_depth=splice(graph.def_depth, delta.depths),
        def_file=splice(graph.def_file, np.full(n, i, dtype=np.int64)),
        def_ident=splice(graph.def_ident, nodes),
        def_share=splice(graph.def_share, share),
        def_scale=splice(graph.def_scale, np.full(n, 1.0 / (n + 1))),
        def_factor=splice(graph.def_factor, np.fromiter((_definition_factor(x) for x in names), np.float64, n)),
        def_in_tests=splice(graph.def_in_tests, np.full(n, is_test_path(graph.files[i]), dtype=bool)),
    )


def _splice_strings(packed: PackedStrings, a: int, b: int, items: tuple[str, ...]) -> PackedStrings:
    """`packed` with items a:b replaced: equal to PackedStrings of the spliced list."""
    lo, hi = int(packed.offsets[a]), int(packed.offsets[b])
    if len(items) == b - a and all(packed[k] == s for k, s in zip(range(a, b), items)):
        return packed  # the same strings: shared (a body edit keeps the names and kinds)
    out = PackedStrings()
    out.data = packed.data[:lo] + "".join(items) + packed.data[hi:]
    lengths = np.fromiter((len(s) for s in items), np.int64, len(items))
    mid = lo + np.cumsum(lengths)
    out.offsets = np.concatenate((packed.offsets[:a + 1], mid, packed.offsets[b + 1:] + (int(mid[-1]) if len(items) else lo) - hi))
    return out
