"""A compact map of the tree's symbols, ranked for the task at hand, within a token budget.

A model can only reuse code it knows exists (seed 000's duplicate drift). The map gives it
one signature line per class and function, chosen by a personalised PageRank over a
bipartite graph: files point at the names they mention, names point at the files that
define them. The walk restarts at the files in the chat and at names and files mentioned in
the prompt, so the map leans toward what the user is working on; names used across the
tree rank high on their own.

Per-file scans are cached (keyed by mtime and size) and updated from file events; the graph
is rebuilt from the cached scans only after a change; each prompt only reruns the ranking
and renders the top lines until the budget is spent.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import itertools
import math
import os
import pickle
import re
import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, SupportsIndex

import numpy as np

from core.context import tags as tagmod
from core.context.rank import Graph, Part, RankSolver, prepare_solver
from core.context.tokens import estimate_tokens
from core.context.tree import is_ignored, list_files

MAX_SCAN_BYTES = 512_000  # larger source files are generated or vendored; not mapped
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH_TOKEN = re.compile(r"\S*[/\\]\S*|\S+\.[A-Za-z]{1,5}\b")
_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_test\.\w+$|(^|/)conftest\.py$")


def prompt_names(prompt: str) -> set[str]:
    """Identifiers a prompt mentions, leaving out the words of file paths (`match.py` names
    a file, which the map's file mentions handle, not a function called `match`)."""
    words = _WORD.findall(_PATH_TOKEN.sub(" ", prompt)) if prompt else []
    return {w for w in words if len(w) > 2}


def is_test_path(rel: str) -> bool:
    return _TEST_PATH.search(rel) is not None


class RefVocab:
    """Identifier -> small int, shared by every file of one map.

    A file's references are kept as an int32 array of these ids instead of a frozenset of
    bytes: on a 20,000-file tree that is ~25 MB instead of ~300 MB, and the graph joins
    them with definitions by array indexing instead of set intersections.
    """

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}
        self._words: list[bytes] = []  # id -> identifier, filled on demand (`word`)

    def __len__(self) -> int:
        return len(self.ids)

    def word(self, vid: int) -> bytes:
        """The identifier of an id. Ids are handed out in insertion order and never
        removed, so the dict's keys in order are the ids' words: the list is extended
        from where it stopped, only when a map update (repomap_delta) asks."""
        words = self._words
        if vid >= len(words):
            words.extend(itertools.islice(self.ids, len(words), None))
        return words[vid]

    def encode(self, refs: Collection[bytes]) -> np.ndarray:
        ids = self.ids
        get = ids.setdefault
        return np.fromiter((get(w, len(ids)) for w in refs), dtype=np.int32, count=len(refs))


_NO_COLS = np.zeros((0, 5), dtype=np.int32)
_NO_COLS.flags.writeable = False


@dataclass(frozen=True, slots=True, eq=False)
class FileFacts:
    """What the graph needs of one file: its definitions and the ids of names it mentions.

    The definitions are packed: their names, kinds and signatures each as one string per
    file, and one int32 array of (end of name, end of kind, end of text, line, depth) per
    definition. As a tuple of `Definition`s (a tuple, three strings and two ints each) the
    353,000 definitions of a real 20,000-file tree held ~150 MB through the map's build,
    the peak of a first launch's indexer; packed they are ~45 MB, and the build joins the
    files' strings into the map's columns without a Python object per definition.
    `defs` unpacks them on demand (one file at a time: a saved file's delta, rendering).
    """

    lang: str
    names: str
    kinds: str
    texts: str
    cols: np.ndarray  # int32 (definitions, 5): name end, kind end, text end, line, depth
    refs: np.ndarray  # int32 ids in a RefVocab

    @classmethod
    def of(cls, tags: tagmod.FileTags, vocab: RefVocab) -> FileFacts:
        return cls.pack(tags.lang, tags.defs, vocab.encode(tags.refs))

    @classmethod
    def pack(cls, lang: str, defs: Sequence[tagmod.Definition], refs: np.ndarray) -> FileFacts:
        if not defs:
            return cls(lang, "", "", "", _NO_COLS, refs)
        cols = np.array([(len(d.name), len(d.kind), len(d.text), d.line, d.depth) for d in defs],
                        dtype=np.int64)
        np.cumsum(cols[:, :3], axis=0, out=cols[:, :3])
        return cls(lang, "".join(d.name for d in defs), "".join(d.kind for d in defs),
                   "".join(d.text for d in defs), cols.astype(np.int32), refs)

    def __len__(self) -> int:
        return len(self.cols)

    def name_list(self) -> list[str]:
        return _cut(self.names, self.cols[:, 0])

    @property
    def defs(self) -> tuple[tagmod.Definition, ...]:
        cols = self.cols
        return tuple(map(tagmod.Definition, _cut(self.names, cols[:, 0]), _cut(self.kinds, cols[:, 1]),
                         cols[:, 3].tolist(), cols[:, 4].tolist(), _cut(self.texts, cols[:, 2])))


def _cut(s: str, ends: np.ndarray) -> list[str]:
    """The pieces of `s` that end at `ends` (the first starts at 0)."""
    out: list[str] = []
    start = 0
    for end in ends.tolist():
        out.append(s[start:end])
        start = end
    return out


@dataclass
class _Scan:
    mtime_ns: int
    size: int
    tags: FileFacts


PACKED_BLOCK_ROWS = 4096  # items per block of a map's string columns (~90 blocks on a real 20k tree)


class PackedStrings:
    """Many strings as one str and an offsets array: a 20,000-file map has 230,000
    definition names and signatures, and unpickling them as one string each took ~350 ms
    of the app's launch (holding the GIL); one string loads in a few ms.

    The text may be held in blocks of consecutive items (`blocked`): a map edit that
    replaces a file's rows (core.context.repomap_delta) then copies one block, not the
    whole column: a real 20k tree's signatures are 14 million characters (28 MB, UCS-2),
    whose copy held the app's GIL 30-85 ms per edit. `offsets` stay global: item k is
    block b's text from offsets[k] - offsets[first item of b]."""

    __slots__ = ("_blocks", "_rows", "offsets")

    def __init__(self, items: Iterable[str] = ()) -> None:
        parts = list(items)
        self.data = "".join(parts)
        self.offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        if parts:
            np.cumsum([len(p) for p in parts], out=self.offsets[1:])

    @property
    def data(self) -> str:
        """The whole text (joined when held in blocks)."""
        blocks = self._blocks
        return blocks[0] if len(blocks) == 1 else "".join(blocks)

    @data.setter
    def data(self, text: str) -> None:
        self._blocks = [text]
        self._rows = [0]  # first item of each block

    @property
    def blocks(self) -> int:
        return len(self._blocks)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, k: int) -> str:
        blocks = self._blocks
        if len(blocks) == 1:
            return blocks[0][int(self.offsets[k]):int(self.offsets[k + 1])]
        b = bisect.bisect_right(self._rows, k) - 1
        base = int(self.offsets[self._rows[b]])
        return blocks[b][int(self.offsets[k]) - base:int(self.offsets[k + 1]) - base]

    def blocked(self, rows: int | None = None) -> PackedStrings:
        """The same items with the text in blocks of `rows` items (PACKED_BLOCK_ROWS; self
        when it is held in blocks already or is one block's worth)."""
        rows = rows or PACKED_BLOCK_ROWS
        if len(self._blocks) > 1 or len(self) <= rows:
            return self
        out = PackedStrings.__new__(PackedStrings)
        out.offsets = self.offsets
        text = self._blocks[0]
        starts = list(range(0, len(self), rows))
        ends = [*starts[1:], len(self)]
        out._blocks = [text[int(self.offsets[a]):int(self.offsets[b])] for a, b in zip(starts, ends)]
        out._rows = starts
        return out

    def spliced(self, a: int, b: int, items: Sequence[str]) -> PackedStrings:
        """Items a:b replaced by `items` (a new PackedStrings, this one left as it is): only
        the block(s) holding a:b are copied; the offsets are one array op."""
        n = len(items)
        lo, hi = int(self.offsets[a]), int(self.offsets[b])
        lengths = np.fromiter((len(x) for x in items), np.int64, n)
        mid = lo + np.cumsum(lengths)
        end = int(mid[-1]) if n else lo
        out = PackedStrings.__new__(PackedStrings)
        out.offsets = np.concatenate((self.offsets[:a + 1], mid, self.offsets[b + 1:] + (end - hi)))
        rows = self._rows
        blocks = self._blocks
        first = bisect.bisect_right(rows, a) - 1
        last = bisect.bisect_right(rows, b - 1) - 1 if b > a else first
        last = max(first, last)
        start_first = int(self.offsets[rows[first]])
        start_last = int(self.offsets[rows[last]])
        text = blocks[first][:lo - start_first] + "".join(items) + blocks[last][hi - start_last:]
        after = [r + n - (b - a) for r in rows[last + 1:]]
        if rows[first] == (after[0] if after else len(self) + n - (b - a)) and len(blocks) > last - first + 1:
            # the block is left with no items: dropped
            out._blocks = blocks[:first] + blocks[last + 1:]
            out._rows = rows[:first] + after
        else:
            out._blocks = [*blocks[:first], text, *blocks[last + 1:]]
            out._rows = [*rows[:first + 1], *after]
        return out

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        """With protocol 5 (the map's snapshot file, its socket to the app) the text goes as
        one out-of-band buffer of UTF-8 per block, written from where it lies: in band, a
        real 20,000-file map's ~30 MB of names and signatures were copied into the pickle as
        it grew, the indexer's peak at the snapshot's write. Other protocols: the str itself."""
        if int(protocol) >= 5:
            if len(self._blocks) > 1:
                data: Any = [pickle.PickleBuffer(b.encode("utf-8", "surrogatepass")) for b in self._blocks]
                return PackedStrings._unpack, (data, self.offsets, self._rows)
            data = pickle.PickleBuffer(self._blocks[0].encode("utf-8", "surrogatepass"))
        else:
            data = self.data
        return PackedStrings._unpack, (data, self.offsets)  # (a class the cache's unpickler allows)

    @classmethod
    def _unpack(cls, data: Any, offsets: np.ndarray, rows: list[int] | None = None) -> PackedStrings:
        """A PackedStrings from `__reduce_ex__`: `data` is the str, or its UTF-8 in any buffer
        (bytes in band, a view of the snapshot file's mapping, the app's socket array), or a
        list of those, one per block (`rows`: each block's first item)."""
        def text(part: Any) -> str:
            return part if isinstance(part, str) else str(memoryview(part), "utf-8", "surrogatepass")

        out = cls.__new__(cls)
        if rows is None:
            out.data = text(data)
        else:
            out._blocks = [text(part) for part in data]
            out._rows = list(rows)
        out.offsets = offsets
        return out

    def __getstate__(self) -> tuple[str, np.ndarray]:
        return self.data, self.offsets

    def __setstate__(self, state: tuple[str, np.ndarray]) -> None:
        """(snapshots written before `__reduce_ex__`)"""
        self.data, self.offsets = state


class IdentIndex(Mapping[str, int]):
    """Name -> ident node (base + the name's place among the sorted names), looked up by
    bisection in one packed string instead of a dict: a real 20,000-file tree defines
    144,000 names, and unpickling them as a dict held the app's GIL ~30-40 ms at every map
    it received (each saved file); a packed string loads in ~2 ms. A lookup is ~17 string
    comparisons, a few per request."""

    __slots__ = ("base", "names")

    def __init__(self, names: PackedStrings, base: int) -> None:
        self.names = names  # sorted
        self.base = base

    def _find(self, name: object) -> int:
        if not isinstance(name, str):
            return -1
        k = bisect.bisect_left(self.names, name)  # type: ignore[call-overload]  # a sequence of str
        return k if k < len(self.names) and self.names[k] == name else -1

    def __getitem__(self, name: str) -> int:
        k = self._find(name)
        if k < 0:
            raise KeyError(name)
        return self.base + k

    def __contains__(self, name: object) -> bool:
        return self._find(name) >= 0

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[str]:
        return (self.names[k] for k in range(len(self.names)))

    def __getstate__(self) -> tuple[PackedStrings, int]:
        return self.names, self.base

    def __setstate__(self, state: tuple[PackedStrings, int]) -> None:
        self.names, self.base = state


@dataclass
class MapGraph:
    """The reference graph plus flat arrays over every definition, for vectorised scoring.

    Plain arrays and lists only: the background indexer builds it in another process and
    sends it whole (pickle), so the process that renders the map never holds the per-file
    reference sets it was built from. Definitions of file i are rows
    file_starts[i]:file_starts[i+1] (files in `files` order).
    """

    files: list[str]
    file_index: dict[str, int]
    ident_index: Mapping[str, int]  # node id = len(files) + position (IdentIndex; a dict in old snapshots)
    graph: Graph
    file_starts: np.ndarray  # offsets into the definition rows, one per file + 1
    def_name: PackedStrings
    def_kind: PackedStrings
    def_text: PackedStrings
    def_line: np.ndarray
    def_depth: np.ndarray
    def_file: np.ndarray  # file node of each definition
    def_ident: np.ndarray  # ident node of each definition, -1 when unmapped
    def_share: np.ndarray  # 1 / number of files defining the same name
    def_scale: np.ndarray  # 1/(defs in its file + 1): a file's rank spread over its defs
    def_factor: np.ndarray  # 0.1 for private names, else 1
    def_in_tests: np.ndarray  # bool: defined in a test file
    exact: bool = False  # def_text holds exact signatures: rendering reads no file
    # the indexer's number for this map (random, 0: none): a MapDelta names the serial of
    # the map it applies to, so the app splices it only into that very map
    serial: int = 0

    def definition(self, k: int) -> tagmod.Definition:
        return tagmod.Definition(self.def_name[k], self.def_kind[k], int(self.def_line[k]),
                                 int(self.def_depth[k]), self.def_text[k])

    def defs_of(self, rel: str) -> tuple[tagmod.Definition, ...]:
        i = self.file_index.get(rel)
        if i is None:
            return ()
        return tuple(self.definition(k) for k in range(int(self.file_starts[i]),
                                                       int(self.file_starts[i + 1])))


@dataclass(frozen=True)
class MapEntry:
    """One rendered line: a definition in a file, and why it ranked where it did."""

    path: str
    definition: tagmod.Definition
    score: float


@dataclass
class RepoMapResult:
    """The rendered map text, its token count and the entries in it."""

    text: str
    tokens: int
    entries: list[MapEntry] = field(default_factory=list)
    files_scanned: int = 0
    files_total: int | None = None  # source files known so far, while indexing runs
    complete: bool = True  # False: sent with the files indexed so far

    @property
    def note(self) -> str:
        """What `/context` says about the map: how much of the tree it covers."""
        if self.complete:
            return f"{self.files_scanned:,} files scanned"
        if self.files_scanned and self.files_scanned == self.files_total:
            # a second launch: the whole map came from the cache and git has not yet
            # confirmed the tree is unchanged (partial maps always have fewer files)
            return f"{self.files_total:,} files from the cache, checking them against the disk"
        total = f"{self.files_total:,}" if self.files_total is not None else "?"
        return f"{self.files_scanned:,}/{total} files indexed, indexing goes on in the background"


class RepoMap:
    """Symbols of a tree, kept current by `on_file_event`, rendered per prompt by `render`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self._lock = threading.RLock()
        self._all_files: set[str] | None = None
        self._scans: dict[str, _Scan] = {}
        self._vocab = RefVocab()
        self._graph: MapGraph | None = None
        self._signatures: dict[str, tuple[int, dict[int, tagmod.Definition]]] = {}
        self._exact_sigs: dict[str, tuple[MapGraph, dict[int, tagmod.Definition]]] = {}
        self._solver: RankSolver | None = None  # the current graph's, with its cached pieces
        # (graph solved before, the graph deltas made of it, old node -> new node or None)
        self._seed: tuple[Graph, Graph, np.ndarray | None] | None = None
        self._coef_cache: dict[tuple[int, bool], tuple[MapGraph, Any]] = {}
        self._lines: dict[str, _FileLines] = {}  # per file: parents and token counts of its lines
        self._chat_vec: tuple[MapGraph, frozenset[int], np.ndarray] | None = None
        self._by_name: tuple[int, dict[str, list[str]]] | None = None
        # focus (chat files, mentioned files, mentioned names) -> ranks, for the current graph
        self._rank_cache: dict[tuple[frozenset, frozenset, frozenset], tuple[MapGraph, np.ndarray]] = {}
        self._by_name_stale = False
        # fed by a background indexer (core.indexing) instead of scanning in this process
        self._external = False
        self._on_event: Callable[[str], None] | None = None
        self._progress: tuple[int, int | None, bool] = (0, None, True)  # done, total, complete

    # -- fed from a background indexer --------------------------------------------------
    def use_external_index(self, on_event: Callable[[str], None] | None = None, *, prepare: bool = True) -> None:
        """From now on the map never scans in this process: `install` hands it what a
        background indexer built, and until then it renders empty (a request never waits).
        `on_event` receives each file event, for the indexer to rescan that file.
        `prepare=False`: the caller loads the ranking's modules itself, when it chooses."""
        with self._lock:
            self._external = True
            self._on_event = on_event
            self._progress = (0, None, False)
        if prepare:
            # the ranking's modules (scipy.sparse: 0.1-0.4 s of imports) are loaded in the
            # background now, a moment after launch, not by the first request or warm-up
            threading.Thread(target=_prepare_soon, name="spark-map-imports", daemon=True).start()

    def install(self, *, files: Iterable[str] | None = None, graph: MapGraph | None = None,
                progress: tuple[int, int | None, bool] | None = None, warm: bool = True) -> None:
        """Swap in the tree listing, a graph and/or the indexing progress (cheap: no scan).
        `warm=False`: the caller warms the graph itself, when it chooses (the index service
        holds a cached graph's warm-up until the app's first frame and the duplicate index)."""
        with self._lock:
            if files is not None:
                self._all_files = set(files)
                self._by_name_stale = True
            if graph is not None:
                self._graph = graph
                self._exact_sigs.clear()
                self._lines.clear()
                whole = progress is None or progress[2] or (progress[1] is not None and progress[0] >= progress[1])
                if graph.files and whole and warm:
                    # the indexer warms a graph it sends (prefetch()), but one installed
                    # from the cache waits for the tree check first (up to ~1 s on 20k
                    # files), and a request in that window paid scipy's import, the
                    # solver and the global piece itself (~150-250 ms): warm it here too
                    # (not the partial maps sent while indexing: soon replaced)
                    threading.Thread(target=self._warm_soon, args=(graph,), name="spark-map-warm",
                                     daemon=True).start()
            if progress is not None:
                self._progress = progress

    def apply_deltas(self, deltas: Iterable[Any], progress: tuple[int, int | None, bool]) -> bool:
        """Splice the indexer's deltas (`core.context.repomap_delta.MapDelta` or `MapEdit`, one
        per saved file) into the map held, and install the result as `install` would; False (nothing
        changed) when the first does not apply to the map held (another serial): the caller
        asks for the whole map then."""
        from core.context.repomap_delta import apply_mapped

        with self._lock:
            graph = self._graph
            moved: np.ndarray | None = None  # old node -> new node, through every edit
            for delta in deltas:
                if graph is None or not delta.base or graph.serial != delta.base:
                    return False
                try:
                    graph, step = apply_mapped(graph, delta)
                except (ValueError, IndexError):  # an edit that does not fit this map: the whole one is asked for
                    return False
                if step is not None:
                    moved = step if moved is None else np.where(moved >= 0, step[np.maximum(moved, 0)], -1)
            if graph is None or graph is self._graph:
                return graph is not None
            if self._graph is not None:
                self._seed = (self._graph.graph, graph.graph, moved)
            self.install(graph=graph, progress=progress)
        return True

    def _warm_soon(self, graph: MapGraph) -> None:
        time.sleep(WARM_DELAY_S)
        if self._graph is not graph:
            return  # replaced meanwhile: its successor is warmed by its own install
        with contextlib.suppress(Exception):  # an optimisation; a request ranks anyway
            self.prefetch()

    @property
    def progress(self) -> tuple[int, int | None, bool]:
        """(source files indexed, source files known or None, complete)."""
        if not self._external:
            return len(self._scans), len(self._scans), self._all_files is not None
        return self._progress

    # -- tree and cache ---------------------------------------------------------------
    def all_files(self) -> set[str]:
        """Every file in the tree (ignored ones left out), scanned or not."""
        with self._lock:
            self._ensure_built()
            return set(self._all_files or ())

    def files_by_name(self) -> dict[str, list[str]]:
        """Tree files by their file name (`match.py` -> its paths), rebuilt only when the
        listing changed: the prompt's mentions are looked up in it on every request."""
        with self._lock:
            self._ensure_built()
            files = self._all_files or set()
            if self._by_name is None or self._by_name[0] != len(files) or self._by_name_stale:
                by_name: dict[str, list[str]] = {}
                for rel in files:
                    by_name.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
                self._by_name = (len(files), by_name)
                self._by_name_stale = False
            return self._by_name[1]

    def has_file(self, rel: str) -> bool:
        with self._lock:
            self._ensure_built()
            return rel in (self._all_files or ())

    def source_files(self) -> list[str]:
        """Files the map reads symbols from."""
        with self._lock:
            self._ensure_built()
            if self._external:
                return list(self._graph.files) if self._graph is not None else []
            return sorted(self._scans)

    def on_file_event(self, rel: str) -> None:
        """Bring one file's entry up to date after it was created, changed or deleted."""
        rel = rel.replace(os.sep, "/").lstrip("/")
        if self._on_event is not None:
            self._on_event(rel)
        with self._lock:
            if self._all_files is None:
                return  # nothing cached yet; the first build reads the file as it is
            path = self.root / rel
            self._lines.pop(rel, None)
            if self._external:  # the indexer rescans it; only the listing is kept here
                self._signatures.pop(rel, None)
                if not path.is_file():
                    self._all_files.discard(rel)
                    self._by_name_stale = True
                elif rel not in self._all_files and not is_ignored(self.root, rel):
                    self._all_files.add(rel)
                    self._by_name_stale = True
                return
            if path.is_file():
                if rel not in self._all_files:
                    if is_ignored(self.root, rel):  # asked for new files only: one git call
                        return
                    self._all_files.add(rel)
                    self._by_name_stale = True
                changed = self._scan_one(rel)
            else:
                self._all_files.discard(rel)
                self._by_name_stale = True
                changed = self._scans.pop(rel, None) is not None
                self._signatures.pop(rel, None)
            if changed:
                self._graph = None

    def refresh(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Re-list the tree and rescan what changed (by mtime and size);
        `progress(done, total)` is called per file (the CLI's progress bar)."""
        with self._lock, _gc_paused():
            self._all_files = set(list_files(self.root))
            self._by_name_stale = True
            for rel in list(self._scans):
                if rel not in self._all_files:
                    del self._scans[rel]
                    self._signatures.pop(rel, None)
            total = len(self._all_files)
            for done, rel in enumerate(sorted(self._all_files), 1):
                self._scan_one(rel)
                if progress is not None:
                    progress(done, total)
            self._graph = None

    def _ensure_built(self) -> None:
        if self._all_files is None and not self._external:
            self.refresh()

    def _scan_one(self, rel: str) -> bool:
        """(Re)scan rel if it is a mappable source file that changed; True if the map changed."""
        lang = tagmod.language_for(rel)
        if lang is None:
            return False
        try:
            st = os.stat(self.root / rel)
        except OSError:
            return self._scans.pop(rel, None) is not None
        old = self._scans.get(rel)
        if old is not None and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size:
            return False
        data = self._read(rel, st.st_size)
        if data is None:
            return self._scans.pop(rel, None) is not None
        try:
            file_tags = tagmod.scan_source(lang, data)
        except Exception:  # noqa: BLE001 -- a grammar that fails must not take the map down
            return self._scans.pop(rel, None) is not None
        self._scans[rel] = _Scan(st.st_mtime_ns, st.st_size, FileFacts.of(file_tags, self._vocab))
        self._signatures.pop(rel, None)
        return True

    def _read(self, rel: str, size: int) -> bytes | None:
        if size > MAX_SCAN_BYTES:
            return None
        try:
            data = (self.root / rel).read_bytes()
        except OSError:
            return None
        return None if b"\0" in data[:8192] else data

    # -- graph and ranking -------------------------------------------------------------
    def _graph_state(self) -> MapGraph:
        if self._graph is None and self._external:
            return _EMPTY_GRAPH
        if self._graph is None:
            with _gc_paused():
                self._graph = self._build_graph()
        return self._graph

    def _build_graph(self) -> MapGraph:
        return build_graph({rel: scan.tags for rel, scan in self._scans.items()}, self._vocab)

    def rank(
        self,
        chat_files: Iterable[str] = (),
        mentioned_files: Iterable[str] = (),
        mentioned_names: Iterable[str] = (),
    ) -> Iterator[MapEntry]:
        """Definitions outside the chat files with a positive score, best first (lazily)."""
        with self._lock:
            state, score = self._scores(chat_files, mentioned_files, mentioned_names)
            order = _best_first(score)
        for k, value in order:
            if value <= 0:
                return
            yield MapEntry(state.files[state.def_file[k]], state.definition(k), value)

    def _scores(self, chat_files: Iterable[str], mentioned_files: Iterable[str],
                mentioned_names: Iterable[str]) -> tuple[MapGraph, np.ndarray]:
        """Each definition's score for this focus: its file's rank spread over the file's
        definitions plus its name's rank shared among the files defining it, damped for
        private names and (unless a test is in the chat) test files; 0 in chat files."""
        state, chat, ranks = self._focus_ranks(chat_files, mentioned_files, mentioned_names)
        if not len(state.def_file):
            return state, np.zeros(0)
        tests_in_chat = any(is_test_path(state.files[i]) for i in chat)
        score = self._score_matrix(state, tests_in_chat) @ ranks
        for i in chat:
            score[int(state.file_starts[i]):int(state.file_starts[i + 1])] = 0.0
        return state, score

    def _score_matrix(self, state: MapGraph, tests_in_chat: bool) -> Any:
        """Definitions x nodes, two entries a row: the factor of its file's rank
        (def_scale, damped) and of its name's (def_share, damped; none when unmapped), so a
        prompt's scores are one sparse product (GIL released) instead of 8 passes over
        230k definitions on a 20,000-file tree. Made once per graph and test flag."""
        key = (id(state), tests_in_chat)
        cached = self._coef_cache.get(key)
        if cached is not None and cached[0] is state:
            return cached[1]
        from scipy import sparse

        mapped = state.def_ident >= 0
        damp = state.def_factor.copy()
        if not tests_in_chat:
            damp[state.def_in_tests] *= 0.2  # test helpers matter when editing tests
        # CSR laid out directly: each row is [file node, name node] (file < name: sorted),
        # the name entry only when mapped; the row sums file term + name term, in order
        indptr = np.zeros(len(mapped) + 1, dtype=np.int64)
        np.cumsum(1 + mapped, out=indptr[1:])
        first = indptr[:-1]
        indices = np.empty(int(indptr[-1]), dtype=np.int64)
        data = np.empty(int(indptr[-1]))
        indices[first] = state.def_file
        data[first] = state.def_scale * damp
        indices[first[mapped] + 1] = state.def_ident[mapped]
        data[first[mapped] + 1] = (state.def_share * damp)[mapped]
        matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(mapped), state.graph.size))
        if len(self._coef_cache) >= 2:
            self._coef_cache = {k: v for k, v in self._coef_cache.items() if v[0] is state}
        self._coef_cache[key] = (state, matrix)
        return matrix

    def _ranks(self, state: MapGraph, chat: list[int], mentioned_files: Iterable[str],
               mentioned_names: Iterable[str]) -> np.ndarray:
        """Personalised PageRank for this focus: from the cache when a draft of the prompt
        was ranked already (`prefetch`), else combined from the solver's cached pieces
        (the chat files, each mentioned file and name, the global walk), solving only the
        new ones. Within RANK_TOLERANCE (L1, certified) of `pagerank` to convergence."""
        mentioned_files, mentioned_names = set(mentioned_files), set(mentioned_names)
        key = (frozenset(chat), frozenset(f for f in mentioned_files if f in state.file_index),
               frozenset(n for n in mentioned_names if n in state.ident_index))
        cached = self._rank_cache.get(key)
        if cached is not None and cached[0] is state:
            return cached[1]
        if state.graph.size == 0:
            return np.zeros(0)  # nothing indexed yet: no solver (nor scipy import) needed
        chat_vec = None
        if chat:  # the chat part (np.isin over every edge) is built once per chat set
            chat_set = frozenset(chat)
            if self._chat_vec is None or self._chat_vec[0] is not state or self._chat_vec[1] != chat_set:
                self._chat_vec = (state, chat_set, _chat_focus(state, chat))
            chat_vec = self._chat_vec[2]
        ranks = rank_focus(self._solver_for(state),
                           focus_parts(state, chat, mentioned_files, mentioned_names, chat_vec))
        self._rank_cache[key] = (state, ranks)
        while len(self._rank_cache) > 8:
            self._rank_cache.pop(next(iter(self._rank_cache)))
        return ranks

    def _solver_for(self, state: MapGraph) -> RankSolver:
        """The graph's solver (its sparse matrix and cached pieces), made once per graph.
        A graph the indexer's deltas made from the one solved before starts its global
        pieces from that one's (moved to the new node numbers): a save changes a few rows,
        and GMRES from there certifies the same tolerance in a product or a few instead of
        ~23 from zero (real 20k tree: ~15 ms instead of ~140 ms of the warm-up per save)."""
        if self._solver is None or self._solver.graph is not state.graph:
            old, seed = self._solver, self._seed
            self._solver = RankSolver(state.graph, split=len(state.files))
            self._seed = None
            if old is not None and seed is not None and seed[0] is old.graph and seed[1] is state.graph:
                _start_from(self._solver, old, seed[2])
        return self._solver

    def prefetch(self, chat_files: Iterable[str] = (), prompt: str = "",
                 mentioned_files: Iterable[str] = ()) -> None:
        """Rank for a prompt still being typed (call it from a worker thread): when Enter
        sends a prompt naming the same things, `render` finds its ranks ready. On a
        20,000-file tree the ranking is most of a request's assembly."""
        if prompt or chat_files or mentioned_files:
            with self._lock:
                self._focus_ranks(chat_files, mentioned_files, prompt_names(prompt))
            return
        # a fresh graph (the indexer's call): what every request needs, made now in the
        # background, one step per lock hold so that a request sent meanwhile waits for
        # one step at most: the solver and its global piece, the scores' matrix, the
        # file-name index, the no-focus ranks and map
        with self._lock:
            self._ensure_built()
            state = self._graph_state()
            if not state.files:
                return
            solver = self._solver_for(state)
            files_part = focus_parts(state, [], [state.files[0]], [])[-1]  # the uniform share
            assert files_part.key == ("files",)
            solver.piece(files_part.key, files_part.make, GLOBAL_TOLERANCE)
        with self._lock:
            if self._graph_state() is state:
                self._score_matrix(state, False)
        with self._lock:
            self.files_by_name()
        with self._lock:
            if self._graph_state() is state:
                # the no-focus map: its ranks, and the lines every map shares (the globally
                # best definitions) with their files' signatures and token counts
                self.render(WARM_MAP_TOKENS)

    def _focus_ranks(self, chat_files: Iterable[str], mentioned_files: Iterable[str],
                     mentioned_names: Iterable[str]) -> tuple[MapGraph, list[int], np.ndarray]:
        """The graph, the chat files' nodes and the ranks for this focus (lock held)."""
        self._ensure_built()
        state = self._graph_state()
        chat = [state.file_index[r] for r in set(chat_files) if r in state.file_index]
        return state, chat, self._ranks(state, chat, mentioned_files, mentioned_names)

    @staticmethod
    def _personalisation(
        state: MapGraph, chat: list[int], mentioned_files: Iterable[str],
        mentioned_names: Iterable[str],
    ) -> np.ndarray | None:
        """Where the random walk restarts: the user's focus, plus a little of everywhere.

        Focus is the chat files, the files that use what the chat files define (their
        callers must change with them), and files and names the prompt mentions. A fifth
        of the mass stays uniform over files, so a chat file that references nothing
        still leaves the rest of the tree ranked.
        """
        graph = state.graph
        n_files = len(state.files)
        focus = _chat_focus(state, chat) if chat else np.zeros(graph.size)
        for rel in set(mentioned_files):
            if rel in state.file_index:
                focus[state.file_index[rel]] += 1.0
        for name in set(mentioned_names):
            if name in state.ident_index:
                focus[state.ident_index[name]] += 1.0
        if not focus.any() or n_files == 0:
            return None
        personal = 0.8 * focus / focus.sum()
        personal[:n_files] += 0.2 / n_files
        return personal

    # -- rendering ----------------------------------------------------------------------
    def render(
        self,
        budget: int,
        chat_files: Iterable[str] = (),
        prompt: str = "",
        mentioned_files: Iterable[str] = (),
    ) -> RepoMapResult:
        """The best-ranked signature lines whose rendering fits in `budget` tokens."""
        with self._lock:
            self._ensure_built()
            done, total, complete = self.progress
            if budget <= 0:
                return RepoMapResult("", 0, [], done, total, complete)
            state, score = self._scores(chat_files, mentioned_files, prompt_names(prompt))
            files = state.files
            chosen: dict[str, dict[int, MapEntry]] = {}
            order: list[str] = []
            infos: dict[str, _FileLines] = {}
            spent = 0
            actual = 0  # tokens of the text as chosen (spent counts a shared parent twice)
            misses = 0  # consecutive lines that did not fit; bounds files parsed per render
            for _k, value, file_id, line_no in _best_first(score, state.def_file, state.def_line):
                if value <= 0:
                    break
                rel = files[file_id]
                info = infos.get(rel) or infos.setdefault(rel, self._lines_of(rel))
                row = info.row(line_no)
                if row is None:
                    continue  # e.g. a nested helper or a `def` inside a string
                exact, exact_tokens, parents = row
                lines = chosen.get(rel)
                if lines is None:
                    header = _tokens_of(rel + ":\n")
                    additions = [(exact, exact_tokens), *parents]
                else:
                    header = 0
                    additions = [(exact, exact_tokens)] + [p for p in parents if p[0].line not in lines]
                # (a line already shown as a parent is counted again: as before, kept so
                # the map stays the same)
                cost = header + sum(t for _, t in additions)
                if spent + cost > budget:
                    misses += 1
                    if spent >= budget * 0.95 or misses > 50:
                        break
                    continue  # a shorter line further down may still fit
                misses = 0
                spent += cost
                actual += header
                if lines is None:
                    lines = chosen[rel] = {}
                    order.append(rel)
                for d, t in additions:
                    if d.line not in lines:
                        lines[d.line] = MapEntry(rel, d, value)
                        actual += t
            # the text's tokens, summed per line: the estimator never joins pieces across a
            # newline (tests/core/context/test_rank.py), so this is estimate_tokens(text)
            # without tokenizing ~8k tokens of map twice per request
            tokens = actual
            while tokens > budget and order:
                last = order[-1]
                lines = chosen[last]
                lines.pop(max(lines))
                if not lines:
                    order.pop()
                    del chosen[last]
                tokens = _map_tokens(order, chosen)
            text = _render_text(order, chosen, infos)
            entries = [e for rel in order for _, e in sorted(chosen[rel].items())]
            return RepoMapResult(text, tokens, entries, done, total, complete)

    def _lines_of(self, rel: str) -> _FileLines:
        """rel's signature lines with their parents and token counts, cached as long as its
        signatures are."""
        info = self._lines.get(rel)
        if info is not None and self._external and self._graph is not None and self._graph.exact:
            return info  # the graph's own signatures: _lines is cleared with each new graph
        sigs = self._file_signatures(rel)
        if info is None or info.sigs is not sigs:
            info = self._lines[rel] = _FileLines(sigs)
        return info

    def _file_signatures(self, rel: str) -> dict[int, tagmod.Definition]:
        scan = self._scans.get(rel)
        lang: str | None
        if scan is not None and not self._external:
            mtime_ns, size, lang, defs = scan.mtime_ns, scan.size, scan.tags.lang, scan.tags.defs
        elif self._graph is not None and self._graph.exact:  # indexed with exact signatures
            exact = self._exact_sigs.get(rel)
            if exact is None or exact[0] is not self._graph:
                exact = self._exact_sigs[rel] = (self._graph, {d.line: d for d in self._graph.defs_of(rel)})
            return exact[1]
        else:  # an indexed file: its definitions come from the graph, its state from disk
            try:
                st = os.stat(self.root / rel)
            except OSError:
                return {}
            mtime_ns, size, lang = st.st_mtime_ns, st.st_size, tagmod.language_for(rel)
            defs = self._graph.defs_of(rel) if self._graph is not None else ()
        cached = self._signatures.get(rel)
        if cached is not None and cached[0] == mtime_ns:
            return cached[1]
        sigs: dict[int, tagmod.Definition] | None = None
        if lang == "python":
            data = self._read(rel, size)
            if data is not None:
                text = data.decode("utf-8", "replace")
                sigs = tagmod.python_signatures(text, defs)
        if sigs is None:
            sigs = {d.line: d for d in defs}
        self._signatures[rel] = (mtime_ns, sigs)
        return sigs


def build_graph(scans: Mapping[str, FileFacts], vocab: RefVocab, *, exact: bool = False) -> MapGraph:
    """The reference graph and definition arrays of a tree's scanned files.

    A pure function of the scans, so the background indexer (another process) and the
    in-process map build the same graph.
    """
    with _gc_paused():
        graph = _build_graph(scans, vocab)
    graph.exact = exact
    return graph


def _build_graph(scans: Mapping[str, FileFacts], vocab: RefVocab) -> MapGraph:
    from core.detectors.duplicates import release_free_memory

    files = sorted(scans)
    file_index = {rel: i for i, rel in enumerate(files)}
    definers: dict[str, list[int]] = {}
    for i, rel in enumerate(files):
        for name in scans[rel].name_list():
            if _mappable_name(name):
                owners = definers.setdefault(name, [])
                if not owners or owners[-1] != i:
                    owners.append(i)
    base = len(files)
    ident_index = {name: base + k for k, name in enumerate(sorted(definers))}
    # per vocabulary id: its ident node (-1: defined nowhere), weight, the only defining file
    ids = [vocab.ids.setdefault(name.encode("utf-8"), len(vocab.ids)) for name in definers]
    size = len(vocab)
    node_of = np.full(size, -1, dtype=np.int64)
    weight_of = np.zeros(size)
    sole_of = np.full(size, -1, dtype=np.int64)
    for vid, (name, owners) in zip(ids, definers.items()):
        node_of[vid] = ident_index[name]
        weight_of[vid] = _name_weight(name, len(owners))
        sole_of[vid] = owners[0] if len(owners) == 1 else -1
    src_parts: list[np.ndarray] = []
    dst_parts: list[np.ndarray] = []
    weight_parts: list[np.ndarray] = []
    for i, rel in enumerate(files):
        refs = scans[rel].refs
        nodes = node_of[refs]
        # a reference to a defined name, not the file's own (sole) definition
        hit = (nodes >= 0) & (sole_of[refs] != i)
        src_parts.append(np.full(int(hit.sum()), i, dtype=np.int64))
        dst_parts.append(nodes[hit])
        weight_parts.append(weight_of[refs][hit])
    del node_of, weight_of, sole_of
    # each name's node -> its defining files, after the references; kept as arrays: as
    # Python lists the 2.4 million edges of a real 20,000-file tree cost ~250 MB more (a
    # first launch's indexer peaked at 772 MB here)
    # in node order (ident_index numbers the sorted names): after the files' own edges,
    # in file order, every source comes sorted, so from_edges has nothing to sort
    owners_of = [definers[name] for name in ident_index]
    src_parts.append(np.repeat(np.fromiter(ident_index.values(), np.int64, len(ident_index)),
                               [len(owners) for owners in owners_of]))
    dst_parts.append(np.fromiter(itertools.chain.from_iterable(owners_of), np.int64))
    weight_parts.append(np.ones(len(dst_parts[-1])))
    src, dst, weight = np.concatenate(src_parts), np.concatenate(dst_parts), np.concatenate(weight_parts)
    del src_parts, dst_parts, weight_parts, owners_of
    # the edges' temporaries, freed, sit below glibc's raised mmap threshold: given back
    # here (before from_edges' own ~40 MB, the build's peak) and after it
    release_free_memory()
    graph = Graph.from_edges(base + len(ident_index), src, dst, weight)
    del src, dst, weight
    release_free_memory()
    # the definition rows as arrays made straight from the packed scans: each column is the
    # files' strings joined (offsets: each file's ends shifted by its start), with no Python
    # object per definition but the names, one file at a time, for their ident and weights
    facts = [scans[rel] for rel in files]
    counts = np.fromiter((len(f) for f in facts), np.int64, len(files))
    starts = np.zeros(len(files) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    n = int(starts[-1])
    cols = np.concatenate([f.cols for f in facts]) if n else np.zeros((0, 5), dtype=np.int32)
    name_col, kind_col, text_col = (_joined(facts, attr, cols[:, c], counts)
                                    for c, attr in enumerate(("names", "kinds", "texts")))
    # name -> (ident node, 1/number of defining files, factor), computed once per name
    meta = {name: (ident_index[name], 1.0 / len(owners), _definition_factor(name))
            for name, owners in definers.items()}
    del definers
    def_ident = np.empty(n, dtype=np.int64)
    def_share = np.empty(n, dtype=np.float64)
    def_factor = np.empty(n, dtype=np.float64)
    for i, f in enumerate(facts):
        a, b = int(starts[i]), int(starts[i + 1])
        if a == b:
            continue
        rows = [meta.get(name) or (-1, 0.0, _definition_factor(name)) for name in f.name_list()]
        def_ident[a:b], def_share[a:b], def_factor[a:b] = zip(*rows)
    del meta, facts
    file_of = np.repeat(np.arange(len(files), dtype=np.int64), counts)
    return MapGraph(
        files, file_index, IdentIndex(PackedStrings(ident_index).blocked(), base), graph, starts,
        name_col, kind_col, text_col,
        cols[:, 3].astype(np.int64), cols[:, 4].astype(np.int64), file_of,
        def_ident, def_share,
        np.repeat(1.0 / (counts + 1), counts),
        def_factor,
        np.asarray([is_test_path(rel) for rel in files], dtype=bool)[file_of],
    )


def _joined(facts: list[FileFacts], attr: str, ends: np.ndarray, counts: np.ndarray) -> PackedStrings:
    """One string column of the map: the files' packed strings `attr` joined, with offsets
    from their per-file `ends` shifted by where each file's string starts."""
    parts = [getattr(f, attr) for f in facts]
    lengths = np.fromiter((len(p) for p in parts), np.int64, len(parts))
    shift = np.zeros(len(parts), dtype=np.int64)
    np.cumsum(lengths[:-1], out=shift[1:])
    out = PackedStrings()
    out.data = "".join(parts)
    del parts
    offsets = np.zeros(len(ends) + 1, dtype=np.int64)
    offsets[1:] = ends
    offsets[1:] += np.repeat(shift, counts)
    out.offsets = offsets
    return out.blocked()  # (a map edit copies one block of a column, not all of it)


_EMPTY_GRAPH = _build_graph({}, RefVocab())


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building big acyclic structures.

    Scanning a large tree allocates ~100k tuples and sets; the collector's repeated full
    passes over them cost about a fifth of the build and can free nothing (no cycles).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _mappable_name(name: str) -> bool:
    return len(name) > 1 and not (name.startswith("__") and name.endswith("__"))


def _definition_factor(name: str) -> float:
    """Private names and test functions (run by the test runner, never called) say little
    about the code a model should reuse."""
    return 0.1 if name.startswith(("_", "test_", "Test")) else 1.0


def _name_weight(name: str, owners: int) -> float:
    """How much a reference to `name` says about the files that define it."""
    weight = 1.0
    if name.startswith("_"):
        weight *= 0.1
    if owners > 5:
        weight *= 0.1  # `run`, `get`, `main`: defined everywhere, says little
    if len(name) >= 8 and ("_" in name.strip("_") or name != name.lower()):
        weight *= 3.0  # long specific names are strong evidence
    elif name.isalpha() and name.islower():
        weight *= 0.3  # `files`, `match`, `pos`: as likely a local variable as a reference
    return weight


def _parents(sigs: dict[int, tagmod.Definition], d: tagmod.Definition) -> list[tagmod.Definition]:
    """Enclosing definitions of d (the class of a method), nearest last."""
    out: list[tagmod.Definition] = []
    depth = d.depth
    for line in sorted((ln for ln in sigs if ln < d.line), reverse=True):
        if depth == 0:
            break
        candidate = sigs[line]
        if candidate.depth < depth:
            out.append(candidate)
            depth = candidate.depth
    return out


# Certified L1 distance of a prompt's ranks from the exact PageRank. The power iteration
# this replaced stopped at an L1 change of 1e-6 (a bound of 5.7e-6, ~5e-7 seen); the map
# needs the order of its best few hundred definitions (tests/core/context/test_rank.py)
RANK_TOLERANCE = 1e-6
FOCUS_SHARE = 0.8  # of the restart mass on the focus; the rest is uniform over files
WARM_DELAY_S = 0.05  # after a graph is installed, before its background warm-up
WARM_MAP_TOKENS = 8192  # the largest default map (no files in the chat: 2 x 4096)
IMPORT_DELAY_S = 0.25  # after the map is handed to an indexer (app start), before scipy's import
GLOBAL_TOLERANCE = 1e-8  # the pieces every prompt reuses: solved once per graph, tightly
_GLOBAL_PIECES = {("files",), ("all",)}


def _prepare_soon() -> None:
    time.sleep(IMPORT_DELAY_S)
    with contextlib.suppress(Exception):  # an optimisation: the first use imports anyway
        prepare_solver()


def focus_parts(state: MapGraph, chat: list[int], mentioned_files: Iterable[str],
                mentioned_names: Iterable[str], chat_vec: np.ndarray | None = None) -> list[Part]:
    """The restart vector of `personalisation` as weighted unit-mass parts that a solver
    caches separately: the chat files with their callers (one part), each mentioned file
    and name (one node each), and the uniform share over files. No focus: uniform over
    every node (the plain PageRank). `chat_vec`: `_chat_focus(state, chat)` if known."""
    graph = state.graph
    n_files = len(state.files)
    parts: list[tuple[float, Hashable, Callable[[], np.ndarray]]] = []
    if chat:
        chat_vec = _chat_focus(state, chat) if chat_vec is None else chat_vec
        mass = float(chat_vec.sum())
        parts.append((mass, ("chat", frozenset(chat)), functools.partial(np.divide, chat_vec, mass)))
    # sorted: the pieces are summed in this order, so the same focus gives the same
    # floating-point ranks whatever order the prompt named things in
    for rel in sorted(set(mentioned_files)):
        if rel in state.file_index:
            parts.append((1.0, ("node", state.file_index[rel]), _unit(graph.size, state.file_index[rel])))
    for name in sorted(set(mentioned_names)):
        if name in state.ident_index:
            parts.append((1.0, ("node", state.ident_index[name]), _unit(graph.size, state.ident_index[name])))
    if not parts or n_files == 0:
        return [Part(1.0, ("all",), lambda: np.full(graph.size, 1.0 / graph.size))]
    total = sum(w for w, _, _ in parts)
    out = [Part(FOCUS_SHARE * w / total, key, make) for w, key, make in parts]
    out.append(Part(1.0 - FOCUS_SHARE, ("files",), functools.partial(_files_uniform, graph.size, n_files)))
    return out


def rank_focus(solver: RankSolver, parts: list[Part]) -> np.ndarray:
    """Ranks for these parts within RANK_TOLERANCE (a module function: tests count calls).
    The global piece is solved on its own, tightly: every later focus reuses it."""
    for part in parts:
        if part.key in _GLOBAL_PIECES:
            solver.piece(part.key, part.make, GLOBAL_TOLERANCE)
    hint = solver.cached(("files",))
    ranks, _bound = solver.ranks(parts, RANK_TOLERANCE, float(hint.y.sum()) if hint is not None else 1.0)
    return ranks


def _start_from(solver: RankSolver, old: RankSolver, moved: np.ndarray | None) -> None:
    """Seed `solver`'s global pieces with `old`'s solutions moved to the new node numbers
    (`moved`: old node -> new, -1 gone; None: the same nodes), their bound unknown: the
    first use refines them from there (GMRES certifies its own bound from the residual)."""
    from core.context.rank import Solution

    for key in _GLOBAL_PIECES:
        sol = old.cached(key)
        if sol is None:
            continue
        if moved is None:
            y = sol.y if len(sol.y) == solver.size else None
        else:
            y = np.zeros(solver.size)
            live = moved >= 0
            y[moved[live]] = sol.y[live]
        if y is not None:
            solver.remember(key, Solution(y, math.inf))


def _chat_focus(state: MapGraph, chat: list[int]) -> np.ndarray:
    """The chat files, and the files that use what they define (their callers must change
    with them) sharing half as much."""
    graph = state.graph
    focus = np.zeros(graph.size)
    focus[chat] += 1.0
    defined = np.unique(state.def_ident[np.isin(state.def_file, chat)])
    defined = defined[defined >= 0]
    if len(defined):
        is_ref = (graph.src < len(state.files)) & np.isin(graph.dst, defined)
        callers = np.setdiff1d(np.unique(graph.src[is_ref]), chat)
        if len(callers):
            focus[callers] += 0.5 * len(chat) / len(callers)
    return focus


def _unit(size: int, node: int) -> Callable[[], np.ndarray]:
    def make() -> np.ndarray:
        vec = np.zeros(size)
        vec[node] = 1.0
        return vec
    return make


def _files_uniform(size: int, n_files: int) -> np.ndarray:
    vec = np.zeros(size)
    vec[:n_files] = 1.0 / n_files
    return vec
TOP_K = 1500  # definitions sorted first per prompt; a map of 8k tokens reads ~300-500


def _best_first(score: np.ndarray, *columns: np.ndarray) -> Iterator[tuple[Any, ...]]:
    """(index, score, column values...) by descending score (ties in index order),
    lazily, in chunks: the definitions at or above a cut that about TOP_K pass, sorted,
    then those between that cut and one 8x lower, and so on; a render reads a few hundred.
    Each cut is a quantile of a fixed sample of the scores (a compare over 230k scores
    instead of a partial sort, ~4 ms on a loaded machine); any cuts give the same order.
    `columns` (e.g. each definition's file and line) are read for the yielded rows in bulk."""
    n = len(score)
    if n <= TOP_K:
        yield from _rows(np.argsort(-score, kind="stable"), score, columns)
        return
    sample = np.sort(score[_SAMPLE_STEP // 2::_SAMPLE_STEP])
    upper = math.inf
    want = TOP_K
    while True:
        kth = len(sample) - 1 - len(sample) * want // n
        cut = float(sample[kth]) if want < n and kth >= 0 else -math.inf
        chunk = np.flatnonzero((score >= cut) & (score < upper)) if upper < math.inf else np.flatnonzero(score >= cut)
        yield from _rows(chunk[np.argsort(-score[chunk], kind="stable")], score, columns)
        if cut == -math.inf:
            return
        upper, want = cut, want * 8


def _rows(order: np.ndarray, score: np.ndarray, columns: tuple[np.ndarray, ...]) -> Iterator[tuple[Any, ...]]:
    return zip(order.tolist(), score[order].tolist(), *(c[order].tolist() for c in columns))


_SAMPLE_STEP = 37  # every 37th score: ~6,000 of 230k, for the cut


class _FileLines:
    """One file's signature lines (line -> Definition) with, per line, its text, its
    tokens and its enclosing definitions, worked out once instead of per request."""

    __slots__ = ("_rows", "_text", "sigs")

    def __init__(self, sigs: dict[int, tagmod.Definition]) -> None:
        self.sigs = sigs
        self._rows: dict[int, tuple[tagmod.Definition, int, list[tuple[tagmod.Definition, int]]] | None] = {}
        self._text: dict[int, str] = {}

    def row(self, line: int) -> tuple[tagmod.Definition, int, list[tuple[tagmod.Definition, int]]] | None:
        """(the definition shown for a line, its tokens, [(parent, its tokens)])."""
        try:
            return self._rows[line]
        except KeyError:
            pass
        d = self.sigs.get(line)
        out = None if d is None else (d, self.tokens(d), [(p, self.tokens(p)) for p in _parents(self.sigs, d)])
        self._rows[line] = out
        return out

    def text(self, d: tagmod.Definition) -> str:
        t = self._text.get(d.line)
        if t is None:
            t = self._text[d.line] = _line(d)
        return t

    def tokens(self, d: tagmod.Definition) -> int:
        return _tokens_of(self.text(d))


@functools.lru_cache(maxsize=1 << 16)
def _tokens_of(line: str) -> int:
    """Tokens of one map line; the same lines come back request after request."""
    return estimate_tokens(line)


def _line(d: tagmod.Definition) -> str:
    return "  " * (d.depth + 1) + d.text + "\n"


def _map_tokens(order: list[str], chosen: dict[str, dict[int, MapEntry]]) -> int:
    return sum(_tokens_of(rel + ":\n") + sum(_tokens_of(_line(e.definition)) for e in chosen[rel].values())
               for rel in order)


def _render_text(order: list[str], chosen: dict[str, dict[int, MapEntry]],
                 infos: Mapping[str, _FileLines] | None = None) -> str:
    parts: list[str] = []
    for rel in order:
        parts.append(rel + ":\n")
        info = infos.get(rel) if infos is not None else None
        for _, entry in sorted(chosen[rel].items()):
            parts.append(info.text(entry.definition) if info is not None else _line(entry.definition))
    return "".join(parts)
