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

import bisect
import dataclasses
from collections.abc import Callable, Mapping
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


def apply_delta(graph: MapGraph, delta: MapDelta | MapEdit) -> MapGraph:
    """`graph` with the delta's file replaced (a new map; `graph` is left as it was, its
    unchanged columns shared), numbered `delta.serial`. The caller checks the base."""
    if isinstance(delta, MapEdit):
        return apply_edit(graph, delta)
    out = _with_rows(graph, _with_row(graph.graph, delta.file, delta.dst, delta.weight), delta)
    out.serial = delta.serial
    return out


def update_graph(graph: MapGraph, rel: str, facts: FileFacts | None, vocab: RefVocab,
                 index: MapIndex | None = None) -> MapGraph | None:
    """`apply_delta(graph, make_delta(...))`: the map with `rel`'s new scan, or None where
    a delta cannot make it (see make_delta) and no `index` (every file's scan, for a
    `MapEdit`) is given."""
    delta = make_delta(graph, rel, facts, vocab)
    if delta is None and index is not None:
        made = index.update(graph, rel, facts)
        return None if made is None else made[0]
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
    """`packed` with items a:b replaced: equal to PackedStrings of the spliced list. Only
    the block holding them is copied (a column made in one block, e.g. by an old snapshot,
    is cut in blocks first, once)."""
    if len(items) == b - a and all(packed[k] == s for k, s in zip(range(a, b), items)):
        return packed  # the same strings: shared (a body edit keeps the names and kinds)
    return packed.blocked().spliced(a, b, items)


# -- saves that change the graph's nodes or owners ----------------------------------------
# A def renamed, added or removed, a file created or deleted: node ids are the sorted files
# then the sorted names, so a name or file that comes or goes renumbers every node after
# it. The edit carries the few rows whose out-edges change (recomputed by _build_graph's
# rule) and the names and file that come or go; `apply_edit` renumbers the rest with one
# gather per column (monotone: every kept row keeps its edges' order) and splices the rows
# in, so the result is `build_graph` of the new scans, array for array.


@dataclass(frozen=True)
class MapEdit:
    """What turns the map numbered `base` into the one numbered `serial` when file `rel`
    changed its defined names, came or went: node numbers are the new map's. A few kB to
    a few hundred kB (a name many files mention), where the whole map is ~114 MB."""

    base: int
    serial: int
    rel: str
    op: str  # "edit", "add" (the file is new) or "remove" (the file is gone)
    file: int  # the file's index: in the new map ("edit", "add"), in the old ("remove")
    added: tuple[str, ...]  # names now defined that no file defined before (sorted)
    removed: tuple[str, ...]  # names no file defines any more (sorted)
    rows: np.ndarray  # int64 nodes whose out-edges are replaced or new, ascending
    row_ends: np.ndarray  # int64 end of each row's edges in dst/weight
    dst: np.ndarray  # int64
    weight: np.ndarray  # normalised as Graph.from_edges does
    share: np.ndarray  # int64 name nodes whose number of defining files changed
    names: tuple[str, ...]  # the file's definition rows (none when removed)
    kinds: tuple[str, ...]
    texts: tuple[str, ...]
    lines: np.ndarray
    depths: np.ndarray
    idents: np.ndarray  # int64 name node per definition, -1 when unmapped


@dataclass
class _Layout:
    """The new map's node numbering: files, names, old node -> new node (-1: gone)."""

    files: list[str]
    fmap: np.ndarray  # old file -> new file (-1: removed), with one -1 appended
    nmap: np.ndarray  # old node -> new node (-1: removed), with one -1 appended
    names: PackedStrings  # the sorted defined names
    size: int


def _layout(graph: MapGraph, op: str, rel: str, file: int, added: tuple[str, ...],
            removed: tuple[str, ...]) -> _Layout:
    ident = graph.ident_index
    if not isinstance(ident, IdentIndex) or not 0 <= file <= len(graph.files) - (op != "add"):
        raise ValueError("a map edit that does not fit this map")
    nf = len(graph.files)
    files = list(graph.files)
    fmap = np.arange(nf + 1, dtype=np.int64)
    if op == "add":
        files.insert(file, rel)
        fmap[file:] += 1
    elif op == "remove":
        del files[file]
        fmap[file + 1:] -= 1
        fmap[file] = -1
    fmap[nf] = -1
    old = ident.names
    ni = len(old)
    rem = np.fromiter((ident._find(n) for n in removed), np.int64, len(removed))
    if (rem < 0).any():
        raise ValueError("an edit removes a name the map does not define")
    ins = np.fromiter((bisect.bisect_left(old, n) for n in added), np.int64, len(added))  # type: ignore[call-overload]
    k = np.arange(ni, dtype=np.int64)
    pos = k - np.searchsorted(rem, k, side="left") + np.searchsorted(ins, k, side="right")
    pos[rem] = -1
    new_count = ni - len(rem) + len(added)
    at = ins - np.searchsorted(rem, ins, side="left") + np.arange(len(added), dtype=np.int64)
    nf2 = len(files)
    nmap = np.empty(nf + ni + 1, dtype=np.int64)
    nmap[:nf] = fmap[:nf]
    nmap[nf:nf + ni] = np.where(pos >= 0, pos + nf2, -1)
    nmap[-1] = -1
    return _Layout(files, fmap, nmap, _edit_sorted(old, pos, at, added, new_count), nf2 + new_count)


def _edit_sorted(old: PackedStrings, pos: np.ndarray, at: np.ndarray, added: tuple[str, ...],
                 count: int) -> PackedStrings:
    """The names `old` (kept ones moved to `pos`, -1: removed) with `added` at `at`: runs
    of kept names copied as text, the new ones between them."""
    if not len(at) and not (pos < 0).any():
        return old
    gone = np.flatnonzero(pos < 0).tolist()
    if len(gone) + len(added) <= 8:
        # a few names: one block each (a real 20k tree's 144,000 names are 5 MB of UCS-2,
        # joined whole ~1.5 ms holding the GIL): the removed ones from the last, then the new
        # ones at their final places in order
        out = old.blocked()
        for k in reversed(gone):
            out = out.spliced(k, k + 1, ())
        for k, name in zip(at.tolist(), added):
            out = out.spliced(k, k, (name,))
        return out
    kept = pos >= 0
    lengths = np.zeros(count, dtype=np.int64)
    lengths[pos[kept]] = np.diff(old.offsets)[kept]
    lengths[at] = [len(n) for n in added]
    out = PackedStrings()
    out.offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lengths, out=out.offsets[1:])
    data, offsets = old.data, old.offsets
    old_ids = np.flatnonzero(kept)
    new_ones = list(zip(at.tolist(), added))
    segments: list[str] = []
    j = 0
    for lo, hi in _runs(old_ids, pos[old_ids]):
        p = int(pos[lo])
        while j < len(new_ones) and new_ones[j][0] < p:
            segments.append(new_ones[j][1])
            j += 1
        segments.append(data[int(offsets[lo]):int(offsets[hi])])
    segments.extend(n for _, n in new_ones[j:])
    out.data = "".join(segments)
    return out


def _runs(old_ids: np.ndarray, new_ids: np.ndarray) -> list[tuple[int, int]]:
    """Maximal [lo, hi) ranges of old ids that are consecutive in both numberings."""
    if not len(old_ids):
        return []
    brk = np.flatnonzero((np.diff(old_ids) != 1) | (np.diff(new_ids) != 1)) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk, [len(old_ids)]))
    return [(int(old_ids[s]), int(old_ids[e - 1]) + 1) for s, e in zip(starts.tolist(), ends.tolist())]


def apply_edit(graph: MapGraph, edit: MapEdit) -> MapGraph:
    """`graph` renumbered and with the edit's rows and file spliced in: a new map numbered
    `edit.serial` (`graph` is left as it was). Raises ValueError when the edit does not fit
    the map (an edge left pointing at a node that is gone)."""
    return apply_mapped(graph, edit)[0]


def apply_mapped(graph: MapGraph, delta: MapDelta | MapEdit) -> tuple[MapGraph, np.ndarray | None]:
    """`apply_delta`, and where the nodes moved (an edit) each old node's new number (-1:
    gone); None when they did not. The app starts the new map's ranking from the old one's
    through it (RepoMap._solver_for)."""
    if isinstance(delta, MapDelta):
        return apply_delta(graph, delta), None
    edit = delta
    lay = _layout(graph, edit.op, edit.rel, edit.file, edit.added, edit.removed)
    g = graph.graph
    nmap = lay.nmap
    degree = g.degree if g.degree is not None else np.bincount(g.src, minlength=g.size)
    offsets = np.zeros(g.size + 1, dtype=np.int64)
    np.cumsum(degree, out=offsets[1:])
    rows = edit.rows
    lens = np.diff(edit.row_ends, prepend=0)
    # old rows kept as they are (renumbered): not removed, not replaced
    inverse = np.full(lay.size, -1, dtype=np.int64)
    live = np.flatnonzero(nmap[:-1] >= 0)
    inverse[nmap[live]] = live
    keep = nmap[:-1] >= 0
    replaced_old = inverse[rows]
    keep[replaced_old[replaced_old >= 0]] = False
    kept = np.flatnonzero(keep)
    new_degree = np.zeros(lay.size, dtype=np.int64)
    new_degree[nmap[kept]] = degree[kept]
    new_degree[rows] = lens
    dangling = np.zeros(lay.size, dtype=bool)
    dangling[nmap[kept]] = g.dangling[kept]
    dangling[rows] = lens == 0
    renumber = edit.op != "edit" or bool(edit.added) or bool(edit.removed)
    # each kept run of rows and each new row written straight into the new arrays (the
    # runs' targets renumbered on the way): one pass over the 2.4 million edges of a real
    # 20k tree for each column, GIL released
    new_offsets = np.zeros(lay.size + 1, dtype=np.int64)
    np.cumsum(new_degree, out=new_offsets[1:])
    new_dst = np.empty(int(new_offsets[-1]), dtype=np.int64)
    new_weight = np.empty(int(new_offsets[-1]))
    for lo, hi in _runs(kept, nmap[kept]):
        a, b = int(offsets[lo]), int(offsets[hi])
        x = int(new_offsets[nmap[lo]])
        if renumber:
            np.take(nmap, g.dst[a:b], out=new_dst[x:x + b - a], mode="clip")
        else:
            new_dst[x:x + b - a] = g.dst[a:b]
        new_weight[x:x + b - a] = g.weight[a:b]
    ends = edit.row_ends.tolist()
    for k, node in enumerate(rows.tolist()):
        a = ends[k - 1] if k else 0
        x = int(new_offsets[node])
        new_dst[x:x + ends[k] - a] = edit.dst[a:ends[k]]
        new_weight[x:x + ends[k] - a] = edit.weight[a:ends[k]]
    if renumber and len(new_dst) and int(new_dst.min()) < 0:
        raise ValueError("a map edit left an edge to a node that is gone")
    new_graph = Graph(size=lay.size, src=np.repeat(np.arange(lay.size, dtype=np.int64), new_degree),
                      dst=new_dst, weight=new_weight, dangling=dangling, degree=new_degree)
    # the definition rows: the file's spliced (inserted, replaced or dropped), every other
    # row renumbered; a name whose number of defining files changed gets its new share
    i = edit.file
    starts = graph.file_starts
    if edit.op == "add":
        a = b = int(starts[i])
    else:
        a, b = int(starts[i]), int(starts[i + 1])
    n = len(edit.names)
    if edit.op == "add":
        new_starts = np.concatenate((starts[:i + 1], starts[i:] + n))
    elif edit.op == "remove":
        new_starts = np.concatenate((starts[:i + 1], starts[i + 2:] - (b - a)))
    else:
        new_starts = starts.copy()
        new_starts[i + 1:] += n - (b - a)

    def splice(old: np.ndarray, new: np.ndarray) -> np.ndarray:
        return np.concatenate((old[:a], new.astype(old.dtype, copy=False), old[b:]))

    idents = edit.idents
    share = np.fromiter((1.0 / int(new_degree[node]) if node >= 0 else 0.0 for node in idents.tolist()),
                        np.float64, n)
    def_ident = splice(nmap[graph.def_ident], idents)
    def_share = splice(graph.def_share, share)
    if len(edit.share):
        hit = np.flatnonzero(np.isin(def_ident, edit.share))
        def_share[hit] = 1.0 / new_degree[def_ident[hit]]
    files = lay.files
    file_index = dict(zip(files, range(len(files)))) if edit.op != "edit" else graph.file_index
    def_name = _splice_strings(graph.def_name, a, b, edit.names)
    def_kind = _splice_strings(graph.def_kind, a, b, edit.kinds)
    def_text = _splice_strings(graph.def_text, a, b, edit.texts)
    def_line = splice(graph.def_line, edit.lines)
    def_depth = splice(graph.def_depth, edit.depths)
    def_file = splice(lay.fmap[graph.def_file], np.full(n, i, dtype=np.int64))
    def_scale = splice(graph.def_scale, np.full(n, 1.0 / (n + 1)))
    def_factor = splice(graph.def_factor, np.fromiter((_definition_factor(x) for x in edit.names), np.float64, n))
    def_in_tests = splice(graph.def_in_tests, np.full(n, is_test_path(edit.rel), dtype=bool))
    return MapGraph(files, file_index, IdentIndex(lay.names, len(files)), new_graph, new_starts,
                    def_name, def_kind, def_text, def_line, def_depth, def_file, def_ident, def_share,
                    def_scale, def_factor, def_in_tests, exact=graph.exact, serial=edit.serial), nmap[:-1]


class MapIndex:
    """What the indexer keeps beside its map to make `MapEdit`s: per reference id (the
    vocab's), the name's node, weight and sole defining file as `_build_graph` has them,
    kept in step with each edit, and every file's references, searched for the files that
    mention a name that becomes defined. Valid for one vocab and the maps that share its
    node numbering (a body delta keeps it; an edit renumbers it here)."""

    def __init__(self, vocab: RefVocab, scans: Mapping[str, FileFacts],
                 mentions: Callable[[list[int]], set[str]] | None = None) -> None:
        self.vocab = vocab
        self.scans = scans  # the indexer's current scans (the new ones of rescanned files)
        # who mentions these ids, when the scans are not all held (the indexer asks its cache)
        self._find = mentions
        self._key: tuple[object, object] | None = None
        self.node_of = np.zeros(0, dtype=np.int64)
        self.weight_of = np.zeros(0)
        self.sole_of = np.zeros(0, dtype=np.int64)
        self._seen: dict[str, FileFacts] = {}  # the scans in _all_refs
        self._all_refs = np.zeros(0, dtype=np.int32)
        self._ref_owner = np.zeros(0, dtype=np.int32)
        self._ref_rels: list[str] = []

    def _sync(self, graph: MapGraph) -> None:
        """The lookups for `graph`'s numbering, made from it when they are of another."""
        if self._key == (graph.files, graph.ident_index):
            self._grow()
            return
        ident = graph.ident_index
        assert isinstance(ident, IdentIndex)
        g = graph.graph
        degree = g.degree if g.degree is not None else np.bincount(g.src, minlength=g.size)
        offsets = np.zeros(g.size + 1, dtype=np.int64)
        np.cumsum(degree, out=offsets[1:])
        ids = self.vocab.ids
        names = _cut_all(ident.names)
        vids = np.fromiter((ids.setdefault(n.encode("utf-8", "surrogatepass"), len(ids)) for n in names),
                           np.int64, len(names))
        size = len(ids)
        nf = len(graph.files)
        owners = degree[nf:]
        self.node_of = np.full(size, -1, dtype=np.int64)
        self.node_of[vids] = np.arange(nf, nf + len(names), dtype=np.int64)
        self.weight_of = np.zeros(size)
        self.weight_of[vids] = [_name_weight(n, c) for n, c in zip(names, owners.tolist())]
        self.sole_of = np.full(size, -1, dtype=np.int64)
        first = g.dst[np.minimum(offsets[nf:-1], max(len(g.dst) - 1, 0))] if len(g.dst) else np.zeros(0, np.int64)
        self.sole_of[vids] = np.where(owners == 1, first, -1)
        self._key = (graph.files, graph.ident_index)

    def _grow(self) -> None:
        extra = len(self.vocab.ids) - len(self.node_of)
        if extra > 0:
            self.node_of = np.concatenate((self.node_of, np.full(extra, -1, dtype=np.int64)))
            self.weight_of = np.concatenate((self.weight_of, np.zeros(extra)))
            self.sole_of = np.concatenate((self.sole_of, np.full(extra, -1, dtype=np.int64)))

    def _vid(self, name: str) -> int:
        ids = self.vocab.ids
        vid = ids.setdefault(name.encode("utf-8", "surrogatepass"), len(ids))
        self._grow()
        return vid

    def mentions(self, vids: list[int]) -> set[str]:
        """The files (of the current scans) whose references include any of `vids`."""
        if not vids:
            return set()
        if self._find is not None:
            return self._find(vids)
        scans = self.scans
        stale = [rel for rel, f in scans.items() if self._seen.get(rel) is not f]
        if len(stale) > 256 or not self._seen:
            self._index_refs()
            stale = []
        want = np.asarray(vids, dtype=np.int32)
        hits = np.unique(self._ref_owner[np.isin(self._all_refs, want)]).tolist()
        out = {self._ref_rels[k] for k in hits}
        out = {rel for rel in out if self._seen.get(rel) is scans.get(rel)}
        out.update(rel for rel in stale if np.isin(scans[rel].refs, want).any())
        return out

    def _index_refs(self) -> None:
        rels = list(self.scans)
        facts = [self.scans[r] for r in rels]
        self._seen = dict(zip(rels, facts))
        self._ref_rels = rels
        counts = np.fromiter((len(f.refs) for f in facts), np.int64, len(facts))
        self._all_refs = np.concatenate([f.refs for f in facts]) if facts else np.zeros(0, dtype=np.int32)
        self._ref_owner = np.repeat(np.arange(len(rels), dtype=np.int32), counts)  # (5.7 M refs: real 20k)

    def update(self, graph: MapGraph, rel: str, facts: FileFacts | None) -> tuple[MapGraph, MapEdit] | None:
        """The map with `rel`'s new scan (`facts`; None: the file is gone) and the edit that
        makes it from `graph`: equal to `build_graph` of the scans with it (numbered 0: the
        caller numbers it); None when nothing changes (a file neither mapped nor mappable)
        or a row to redo belongs to a file with no scan (gone too, later in the batch)."""
        old_i = graph.file_index.get(rel)
        if old_i is None and facts is None:
            return None
        self._sync(graph)
        g = graph.graph
        ident = graph.ident_index
        assert isinstance(ident, IdentIndex)
        nf = len(graph.files)
        degree = g.degree if g.degree is not None else np.bincount(g.src, minlength=g.size)
        offsets = np.zeros(g.size + 1, dtype=np.int64)
        np.cumsum(degree, out=offsets[1:])
        op = "remove" if facts is None else "edit" if old_i is not None else "add"
        file = old_i if old_i is not None else bisect.bisect_left(graph.files, rel)
        new_i = -1 if facts is None else file
        old_names: set[str] = set()
        if old_i is not None:
            a, b = int(graph.file_starts[old_i]), int(graph.file_starts[old_i + 1])
            nodes = graph.def_ident[a:b]
            old_names = {ident.names[int(k) - nf] for k in nodes[nodes >= 0].tolist()}
        new_defs = facts.name_list() if facts is not None else []
        new_names = {n for n in new_defs if _mappable_name(n)}
        shift = (1 if op == "add" else 0)
        # every touched name: its owners before (old file ids) and after (new file ids)
        before: dict[str, list[int]] = {}
        after: dict[str, list[int]] = {}
        for name in sorted(old_names | new_names):
            node = ident.get(name, -1)
            owners = g.dst[offsets[node]:offsets[node + 1]].tolist() if node >= 0 else []
            before[name] = owners
            moved = [o + (shift if op == "add" and o >= file else 0) - (1 if op == "remove" and o > file else 0)
                     for o in owners if o != old_i]
            if name in new_names:
                bisect.insort(moved, new_i)
            after[name] = moved
        added = tuple(n for n in after if after[n] and not before[n])
        removed = tuple(n for n in after if before[n] and not after[n])
        lay = _layout(graph, op, rel, file, added, removed)
        new_ident = IdentIndex(lay.names, len(lay.files))
        nf2 = len(lay.files)
        # the lookups in the new numbering
        node_of = lay.nmap[self.node_of]
        sole_of = lay.fmap[self.sole_of]
        weight_of = self.weight_of.copy()
        edge_sources: list[int] = []  # old name nodes whose referring rows must be redone
        redo: set[int] = set()  # new file ids whose rows are redone
        new_vids: list[int] = []
        ident_rows: dict[int, list[int]] = {}
        share: list[int] = []
        for name, o2 in after.items():
            o1 = before[name]
            vid = self._vid(name)
            if len(node_of) < len(self.node_of):
                extra = len(self.node_of) - len(node_of)
                node_of = np.concatenate((node_of, np.full(extra, -1, dtype=np.int64)))
                sole_of = np.concatenate((sole_of, np.full(extra, -1, dtype=np.int64)))
                weight_of = np.concatenate((weight_of, np.zeros(extra)))
            node2 = new_ident.get(name, -1)
            node_of[vid] = node2
            weight_of[vid] = _name_weight(name, len(o2)) if o2 else 0.0
            sole_of[vid] = o2[0] if len(o2) == 1 else -1
            if o1 and (not o2 or _name_weight(name, len(o1)) != _name_weight(name, len(o2))):
                edge_sources.append(ident[name])
            if not o1 and o2:
                new_vids.append(vid)
            s1 = int(lay.fmap[o1[0]]) if len(o1) == 1 else -1
            s2 = o2[0] if len(o2) == 1 else -1
            if s1 != s2:
                redo.update(s for s in (s1, s2) if s >= 0)
            if o2 and ([int(lay.fmap[o]) for o in o1] != o2):
                ident_rows[node2] = o2
                if o1 and len(o1) != len(o2):
                    share.append(node2)
        if new_i >= 0:
            redo.add(new_i)
        if edge_sources:
            src = g.src[np.isin(g.dst, np.asarray(edge_sources, dtype=np.int64))]
            src = lay.fmap[np.unique(src[src < nf])]
            redo.update(src[src >= 0].tolist())
        index2 = {r: k for k, r in enumerate(lay.files)} if op != "edit" else graph.file_index
        for other in self.mentions(new_vids):
            k = index2.get(other)
            if k is not None:
                redo.add(k)
        rows: list[tuple[int, np.ndarray, np.ndarray]] = []
        for j in sorted(redo):
            scan = facts if j == new_i else self.scans.get(lay.files[j])
            if scan is None:
                return None  # a file gone too, not yet taken out: the caller rebuilds
            dst, w = _row(scan.refs, j, node_of, sole_of, weight_of)
            rows.append((j, dst, w))
        for node, owners in ident_rows.items():
            ones = np.full(len(owners), 1.0 / len(owners)) if owners else np.zeros(0)
            rows.append((node, np.asarray(owners, dtype=np.int64), ones))
        rows.sort(key=lambda r: r[0])
        lens = np.fromiter((len(r[1]) for r in rows), np.int64, len(rows))
        defs = facts.defs if facts is not None else ()
        n = len(defs)
        edit = MapEdit(
            graph.serial, 0, rel, op, file, added, removed,
            np.fromiter((r[0] for r in rows), np.int64, len(rows)), np.cumsum(lens),
            np.concatenate([r[1] for r in rows]) if rows else np.zeros(0, dtype=np.int64),
            np.concatenate([r[2] for r in rows]) if rows else np.zeros(0),
            np.asarray(share, dtype=np.int64),
            tuple(d.name for d in defs), tuple(d.kind for d in defs), tuple(d.text for d in defs),
            np.fromiter((d.line for d in defs), np.int64, n), np.fromiter((d.depth for d in defs), np.int64, n),
            np.fromiter((new_ident.get(d.name, -1) if _mappable_name(d.name) else -1 for d in defs), np.int64, n))
        out = apply_edit(graph, edit)
        self.node_of, self.sole_of, self.weight_of = node_of, sole_of, weight_of
        self._key = (out.files, out.ident_index)
        del nf2
        return out, edit


def _row(refs: np.ndarray, i: int, node_of: np.ndarray, sole_of: np.ndarray,
         weight_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """File i's out-edges by `_build_graph`'s rule (its references to defined names but its
    own sole definitions, weighted by name), normalised as `Graph.from_edges` does."""
    refs = refs[refs < len(node_of)]  # ids past the lookups: names no file defines
    nodes = node_of[refs]
    hit = (nodes >= 0) & (sole_of[refs] != i)
    w = weight_of[refs][hit]
    total = float(np.bincount(np.zeros(len(w), dtype=np.int64), weights=w, minlength=1)[0]) if len(w) else 0.0
    norm = np.zeros(len(w))
    if len(w):
        np.divide(w, np.full(len(w), total), out=norm, where=np.full(len(w), total) > 0)
    return nodes[hit], norm


def _cut_all(packed: PackedStrings) -> list[str]:
    data = packed.data
    ends = packed.offsets.tolist()
    return [data[ends[k]:ends[k + 1]] for k in range(len(ends) - 1)]
