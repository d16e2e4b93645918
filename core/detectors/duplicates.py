"""Duplicate-function detector: an index of the tree's functions that answers in milliseconds.

"I ended up with three different utility functions doing the same thing because I was
moving too fast" (seed 000). The app asks ``check_source`` about each new function of a
pending hunk while the answer streams, so a check only looks things up: sorted keys for
type-1/2 clones, the numpy inverted index (``FeatureIndex``) plus an exact Jaccard on a
few dozen candidates for type-3. The functions are stored as numpy columns
(``dup_store.UnitTable``: ~1 KB a function, 250,000 of them on a 20,000-file tree), and
the frozen index is saved as one memory-mapped snapshot a second launch loads at once.
Building and file events are the only writers; they run in a worker thread and take the
lock only to swap results in.
"""

from __future__ import annotations

import difflib
import os
import stat
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.detectors import dup_store
from core.detectors.dup_store import Fingerprint, SnapshotError, UnitTable
from core.detectors.normalize import (
    FunctionUnit,
    parent_symbol,
    units_from_source,
)

# A near-miss (type 3) needs both: enough shared role k-grams (cheap, from the index)
# and an alignment of the role sequences (difflib ratio, the reported similarity).
# k-grams alone punish a changed statement in a short function too hard; alignment
# alone is too slow to run on every candidate. Tuned on bench/dups_eval.py.
KGRAM_FLOOR = 0.45  # Jaccard of role 4-grams a candidate needs to be aligned at all
# ... in a short function one added statement (a try/except wrapper) breaks most 4-grams
# while the alignment still sees the copy: short checked functions align from a lower
# floor (checks only: in a scan it paired 13 % more look-alikes for no recall)
SHORT_TOKENS = 60
SHORT_KGRAM_FLOOR = 0.3
TYPE3_THRESHOLD = 0.8  # alignment ratio at or above which a near-miss is reported
# ... or, for a statement added or removed (a guard clause, a try/except wrapper), a
# lower ratio when the shorter sequence lies almost all inside the longer one
CONTAINED = 0.95  # share of the shorter role sequence found, in order, in the longer
MIN_CONTAINED_SHARE = 0.6  # the shorter is at least this share of the longer
CONTAINED_THRESHOLD = 0.74  # = 2 * 0.6 / 1.6 at 0.95 containment, roughly
KGRAM_ONLY = 0.55  # Jaccard that suffices alone for sequences too long to align
MAX_ALIGN_TOKENS = 5000  # longer sequences: k-grams alone (one statement is a small part)
ALIGN_AT_MOST = 20  # candidates aligned per query, best Jaccard first
PRUNE_BELOW = 0.6  # candidates estimated below this share of the floor are not verified
NEAR_BEST = 0.05  # other near misses are reported only this close to the best one
LEXICAL_MARGIN = 0.25  # ... and sharing about as many names (see _rank)
CANDIDATES = 40  # candidates verified per query
MAX_GROUP = 200  # exact or renamed twins looked at per query
# a near miss shares some of the names a copy-edit keeps (globals, builtins, attributes,
# keywords): equally shaped code about different things (sibling `__init__`s that
# store different fields) is a pattern, not a copy. Measured: true near misses >= 0.25.
ANCHOR_FLOOR = 0.2
MAX_FILE_BYTES = 2_000_000  # larger .py files are generated data, not code anyone reads
# ".spark": the app's own folder (sessions, journal), skipped by the tree listing and the
# watcher too. Walked, it made the indexer's kept listing (core.indexing.pyfiles) stale at
# every launch (each writes a session record there), so every second launch walked the
# whole tree again on its way to "duplicates ready" (20k files: 0.05-0.3 s of a core)
EXCLUDED_DIRS = {
    ".git", ".hg", ".svn", ".venv", "venv", "env", "__pycache__", "node_modules", ".tox",
    ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", ".eggs",
    "build", "dist", ".spark",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class DuplicateMatch:
    """A new function and the indexed function it duplicates."""

    new_symbol: str
    new_line: int
    twin_path: str
    twin_symbol: str
    twin_line: int
    similarity: float  # 0..1; 1.0 for types 1 and 2
    clone_type: int  # 1 exact, 2 renamed identifiers/literals, 3 near-miss

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class FunctionRef:
    path: str
    symbol: str
    line: int


@dataclass(frozen=True, slots=True)
class ClonePair:
    """Two indexed functions that are clones of each other (``a`` sorts first)."""

    a: FunctionRef
    b: FunctionRef
    similarity: float
    clone_type: int

    def to_dict(self) -> dict[str, object]:
        return {
            "a": asdict(self.a),
            "b": asdict(self.b),
            "similarity": round(self.similarity, 4),
            "type": self.clone_type,
        }


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sorted unique feature arrays."""
    if not len(a) or not len(b):
        return 0.0
    shared = np.intersect1d(a, b, assume_unique=True).size
    return shared / (len(a) + len(b) - shared)


class _Aligner:
    """Alignment ratio of one query's role sequence against candidates' sequences.

    The ratio is 2 * LCS / (len(a) + len(b)) (rapidfuzz's normalized Indel similarity,
    difflib's ratio in C++: microseconds instead of a millisecond); difflib stands in
    if rapidfuzz is missing.
    """

    def __init__(self, roles: str) -> None:
        self.query = roles
        try:
            from rapidfuzz.distance import Indel
        except ImportError:  # pragma: no cover - rapidfuzz is a dependency
            self._indel = None
            self._matcher = difflib.SequenceMatcher(None, autojunk=False)
            self._matcher.set_seq2(roles)
        else:
            self._indel = Indel

    def ratio(self, roles: str, kgram_jaccard: float) -> float:
        if max(len(roles), len(self.query)) > MAX_ALIGN_TOKENS:
            # k-gram Jaccard mapped onto the alignment scale (0.55 -> 0.8, 1 -> 1)
            if kgram_jaccard < KGRAM_ONLY:
                return 0.0
            return 0.8 + 0.2 * (kgram_jaccard - KGRAM_ONLY) / (1 - KGRAM_ONLY)
        if self._indel is not None:
            ratio = float(self._indel.normalized_similarity(
                self.query, roles, score_cutoff=CONTAINED_THRESHOLD))
        else:
            m = self._matcher
            m.set_seq1(roles)
            if (m.real_quick_ratio() < CONTAINED_THRESHOLD
                    or m.quick_ratio() < CONTAINED_THRESHOLD):
                return 0.0
            ratio = m.ratio()
        if ratio >= TYPE3_THRESHOLD or not ratio:
            return ratio
        # below the threshold: still a near miss when one sequence is (almost) all inside
        # the other, i.e. a statement was added or removed, not code rewritten
        short, long_ = sorted((len(roles), len(self.query)))
        common = ratio * (short + long_) / 2  # the longest common subsequence
        if short >= MIN_CONTAINED_SHARE * long_ and common >= CONTAINED * short:
            return ratio
        return 0.0


def read_source(path: Path, notes: list[str] | None = None) -> str | None:
    """Source text of a Python file, or None when it is not a readable regular file.

    Only regular files are read (a FIFO named `x.py` would block a scan forever); a file
    that vanished, is too large or is binary gives None and a note. Text that is not
    UTF-8 is read as Latin-1 (Python 2 era files), with a note.
    """

    def note(text: str) -> None:
        if notes is not None:
            notes.append(text)

    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            note("not a regular file, skipped")
            return None
        if st.st_size > MAX_FILE_BYTES:
            note(f"larger than {MAX_FILE_BYTES // 1_000_000} MB, skipped")
            return None
        data = path.read_bytes()
    except OSError as exc:
        note(f"cannot read ({exc.strerror or exc}), skipped")
        return None
    if b"\x00" in data:
        note("binary (NUL bytes), skipped")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        note("not UTF-8, read as Latin-1")
        return data.decode("latin-1")


class TreeFilter:
    """Which paths of a tree hold the user's Python code: not tool or vendored dirs,
    not what the root .gitignore ignores (git's own matching rules, via pathspec)."""

    def __init__(self, root: Path) -> None:
        import pathspec

        try:
            lines = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        self._spec = pathspec.GitIgnoreSpec.from_lines(lines)

    def dir_ok(self, rel_dir: str, name: str) -> bool:
        return (
            name not in EXCLUDED_DIRS
            and not name.endswith(".egg-info")
            and not self._spec.match_file(rel_dir + "/")
        )

    def file_ok(self, rel: str) -> bool:
        """A .py file outside every excluded folder (also for paths from file events)."""
        parts = rel.split("/")
        if not parts[-1].endswith(".py") or ".." in parts:
            return False
        for k in range(1, len(parts)):
            if not self.dir_ok("/".join(parts[:k]), parts[k - 1]):
                return False
        return not self._spec.match_file(rel)


def iter_python_files(root: Path, dir_times: dict[str, int] | None = None) -> Iterator[str]:
    """Relative paths (posix, sorted) of the tree's .py files (see TreeFilter).

    Paths are joined as strings, not `Path` objects: on 20,000 files pathlib's parsing
    was two thirds of the walk (0.13 s idle), which a second launch waits for.
    `dir_times` receives the mtime (ns) of each folder walked ("" for the root), taken
    before the folder is listed: a folder whose entries change afterwards has a later
    one (core.indexing.pyfiles keeps the listing while none has changed)."""
    tree_filter = TreeFilter(root)
    top = os.fspath(root)
    cut = len(top.rstrip(os.sep)) + 1
    if dir_times is not None:
        dir_times[""] = os.stat(top).st_mtime_ns
    for dirpath, dirnames, filenames in os.walk(top):
        base = dirpath[cut:].replace(os.sep, "/") if len(dirpath) >= cut else ""
        prefix = base + "/" if base else ""
        dirnames[:] = sorted(d for d in dirnames if tree_filter.dir_ok(prefix + d, d))
        if dir_times is not None:
            for d in dirnames:  # (os.walk lists them after this yield, and skips links)
                full = os.path.join(dirpath, d)
                if not os.path.islink(full):
                    try:
                        dir_times[prefix + d] = os.stat(full).st_mtime_ns
                    except OSError:
                        dir_times[prefix + d] = -1  # gone: never matches
        for name in sorted(filenames):
            if name.endswith(".py"):
                rel = prefix + name
                if not tree_filter._spec.match_file(rel):
                    yield rel


_WARM_SOURCE = """\
def _spark_warm_up(items, factor):
    total = 0
    for item in items:
        if item is None:
            continue
        total += item * factor
    return total


class _SparkWarmUp:
    def value(self, key, default=None):
        try:
            return self.table[key]
        except KeyError:
            return default
"""


class FileRead(NamedTuple):
    """A file `DuplicateIndex.apply_events` read again: its stat (taken before the read)
    and the functions indexed from it."""

    rel: str
    stat: os.stat_result
    units: list[FunctionUnit]


def _drop_inner_of_paired_outer(matches: list[DuplicateMatch]) -> list[DuplicateMatch]:
    """A nested function whose outer function matched the twin's outer function says
    nothing new: the copy of the outer function is the finding."""
    outer = {(m.new_symbol, m.twin_path, m.twin_symbol) for m in matches}
    return [
        m for m in matches
        if (parent_symbol(m.new_symbol), m.twin_path, parent_symbol(m.twin_symbol)) not in outer
    ]


class DuplicateIndex:
    """Every function of a tree's Python files, fingerprinted and indexed.

    Functions live in a frozen columnar `UnitTable` (uids 0..n-1; see dup_store for why:
    ~0.8 KB a function instead of ~5 KB) plus the rows added since the last freeze (uids
    n.., Python objects, few). A removed file's frozen rows are only marked dead; a freeze
    (`finish_loading`, or the delta outgrowing a fifth of the table) folds everything into
    a new table, keeping the uids' order, which breaks ties between equal twins.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._lock = threading.RLock()
        self._filter = TreeFilter(self.root)
        self._memo: dict[str, int] = {}  # word hashes of the strings seen (a load's cache)
        self._reset()
        # files skipped or read only in part, with why: a scan says so instead of failing
        self.notes: dict[str, list[str]] = {}

    def _reset(self) -> None:
        self._table = UnitTable.empty()
        self._alive = np.ones(0, dtype=np.bool_)
        # rows added since the freeze: (path, fingerprint, indexed); None once removed.
        # Rows not `indexed` are probes: big enough to check, too small to index, so
        # `pairs()` still asks about them (a near-miss copy that lost a statement)
        self._rows: list[tuple[str, Fingerprint, bool] | None] = []
        self._by_file: dict[str, range | list[int]] = {}
        self._file_sizes: dict[str, int] = {}
        self._exact: dict[bytes, list[int]] = {}  # of the rows since the freeze
        self._renamed: dict[bytes, list[int]] = {}
        self._function_count = 0

    # ----------------------------------------------------------------- building
    def build(self, progress: Callable[[int, int], None] | None = None) -> None:
        """(Re)index the whole tree; `progress(done, total)` is called per file."""
        self._filter = TreeFilter(self.root)
        self.notes = {}
        files = list(iter_python_files(self.root))
        parsed: list[tuple[str, list[FunctionUnit]]] = []
        for i, rel in enumerate(files, 1):
            parsed.append((rel, self._units_of(rel)))
            if progress is not None:
                progress(i, len(files))
        self.load(parsed)

    def load(self, files: Iterable[tuple[str, list[FunctionUnit]]]) -> None:
        """Replace the index with already fingerprinted files (build's second half;
        also how the benchmark loads 100,000 functions without parsing them)."""
        with self._lock:
            self._reset()
            for rel, units in files:
                self._insert(rel, units, into_delta=False)
            self._freeze()

    def update_file(self, rel_path: str) -> None:
        """Re-index one file after a create/modify event (see `apply_events`)."""
        self.apply_events([(rel_path, "modified")])

    def apply_events(self, events: Iterable[tuple[str, str]], *, bulk: bool = False) -> list[FileRead]:
        """Bring the index up to date with file events (path, kind), in their order: the
        one place a watcher's, the indexer's and the dups child's events become index work.

        A "deleted" file is removed; on any other kind the file is read again, or removed
        when it is gone or not a regular file. Events for files the tree walk would skip
        (not .py, inside .venv, ignored by .gitignore, outside the root) are ignored, so a
        watcher can forward every event it sees. `bulk`: see `add_units`. Returns the files
        read, each with its stat taken before the read (the indexer caches their units
        under it: a write after the stat makes the cached stamp stale, never the units).
        """
        read: list[FileRead] = []
        for path, kind in events:
            if kind == "deleted":
                self.remove_file(path)
                continue
            rel = self._relative(path)
            if rel is None or not self._filter.file_ok(rel):
                continue
            try:
                st = os.stat(self.root / rel)
            except OSError:
                st = None
            if st is None or not stat.S_ISREG(st.st_mode):
                self.remove_file(rel)
                continue
            units = self._units_of(rel)
            self.add_units(rel, units, bulk=bulk)
            read.append(FileRead(rel, st, units))
        return read

    def add_units(self, rel: str, units: list[FunctionUnit], *, bulk: bool = False) -> None:
        """Index one file's already fingerprinted functions, replacing what it had.

        The background indexer's path: it feeds files one at a time (from its cache or
        parsed). New functions go to the small delta, which queries see at once; the table
        is refrozen once the delta outgrows a fifth of it. `bulk` (a whole tree being
        loaded) keeps them out of the k-gram delta (a dict of lists that cost ~0.5 GB on
        20,000 files): exact and renamed twins are found at once, near misses once
        `finish_loading` (or the loader's periodic call to it) freezes what was added.
        """
        with self._lock:
            self._drop(rel)
            self._insert(rel, units, into_delta=not bulk)
            if not bulk and self._table.features.delta_size > max(2000, self._table.n // 5):
                self._freeze()

    def units_of(self, rel: str) -> list[FunctionUnit]:
        """Parse and fingerprint one file of the tree (notes kept in `notes`)."""
        return self._units_of(rel)

    def file_ok(self, rel: str) -> bool:
        """Whether rel is one of the files a build indexes (see TreeFilter)."""
        return self._filter.file_ok(rel)

    def finish_loading(self) -> None:
        """Fold the delta into the frozen arrays after a series of `add_units`."""
        with self._lock:
            self._freeze()
            self._memo.clear()

    def remove_file(self, rel_path: str) -> None:
        rel = self._relative(rel_path)
        if rel is not None:
            with self._lock:
                self._drop(rel)

    def files(self) -> set[str]:
        """The files indexed (with or without functions)."""
        with self._lock:
            return set(self._by_file)

    def _relative(self, path: str) -> str | None:
        """A posix path relative to the root (absolute paths outside it: None)."""
        p = Path(path)
        if p.is_absolute():
            try:
                p = p.resolve().relative_to(self.root.resolve())
            except ValueError:
                return None
        return p.as_posix()

    def _units_of(self, rel: str) -> list[FunctionUnit]:
        notes: list[str] = []
        source = read_source(self.root / rel, notes)
        units = units_from_source(source, notes) if source is not None else []
        if notes:
            self.notes[rel] = notes
        else:
            self.notes.pop(rel, None)
        return units

    def _insert(self, rel: str, units: list[FunctionUnit], *, into_delta: bool) -> None:
        ids = []
        self._function_count += len(units)
        if len(self._memo) > 500_000:
            self._memo.clear()
        base = len(self._table)
        for unit in units:
            if not unit.checkable:
                continue
            indexed = unit.indexable
            uid = base + len(self._rows)
            fp = Fingerprint.of(unit, self._memo)
            self._rows.append((rel, fp, indexed))
            ids.append(uid)
            if indexed:
                self._exact.setdefault(fp.exact_key, []).append(uid)
                self._renamed.setdefault(fp.renamed_key, []).append(uid)
                if into_delta:
                    self._table.features.add(uid, fp.features)
        self._by_file[rel] = ids
        self._file_sizes[rel] = len(units)

    def _drop(self, rel: str) -> None:
        base = len(self._table)
        for uid in self._by_file.pop(rel, []):
            if uid < base:
                self._alive[uid] = False
                continue
            row = self._rows[uid - base]
            if row is None:
                continue
            self._rows[uid - base] = None
            if row[2]:
                for table, key in ((self._exact, row[1].exact_key), (self._renamed, row[1].renamed_key)):
                    group = table.get(key)
                    if group is not None and uid in group:
                        group.remove(uid)
                        if not group:
                            del table[key]
        self._function_count -= self._file_sizes.pop(rel, 0)

    def _freeze(self) -> None:
        """A new table of every live row, frozen rows first, in uid order.

        Memory is what limits a 20,000-file tree: the old table's arrays are reused when
        none of its rows died (no copy), the old table is let go before the lookups are
        built, and freed heap is handed back to the system afterwards."""
        old = self._table
        live = [row for row in self._rows if row is not None]
        if not live and self._alive.all() and not old.features.delta_size:
            return
        parts = []
        paths: list[str] = []
        if len(old):
            if self._alive.all():
                paths = list(old.paths)
                parts.append(old.columns())
            else:
                keep = np.flatnonzero(self._alive)
                files = np.unique(old.file_of[keep])
                file_map = np.full(len(old.paths), -1, dtype=np.int32)
                file_map[files] = np.arange(len(files), dtype=np.int32)
                paths = [old.paths[f] for f in files.tolist()]
                parts.append(old.take(keep, file_map, paths))
        number: dict[str, int] = {}
        rows = []
        for path, fp, indexed in live:
            f = number.get(path)
            if f is None:
                f = number[path] = len(paths) + len(number)
            rows.append((f, fp, indexed))
        paths += list(number)
        if rows or not parts:
            parts.append(UnitTable.from_rows(paths, rows).columns())
        del old, live, rows
        self._rows, self._exact, self._renamed = [], {}, {}
        self._table = UnitTable.empty()  # the old arrays go as soon as they are copied
        table = UnitTable(paths, parts[0]) if len(parts) == 1 else UnitTable.concat(paths, parts)
        parts.clear()
        self._adopt(table.with_lookups())
        release_free_memory()

    def _adopt(self, table: UnitTable) -> None:
        """Install a frozen table: its rows are the live functions, files in runs."""
        sizes = dict(self._file_sizes)
        by_file: dict[str, range | list[int]] = {rel: [] for rel in self._by_file}
        if len(table):
            f = table.file_of
            cuts = np.flatnonzero(f[1:] != f[:-1]) + 1
            starts = np.concatenate([[0], cuts]).tolist()
            stops = np.concatenate([cuts, [len(f)]]).tolist()
            for s, e in zip(starts, stops, strict=True):
                by_file[table.paths[int(f[s])]] = range(s, e)
        self._table = table
        self._alive = np.ones(len(table), dtype=np.bool_)
        self._rows, self._exact, self._renamed = [], {}, {}
        self._by_file = by_file
        self._file_sizes = sizes

    # ------------------------------------------------------------------ snapshot
    def save_snapshot(self, path: Path, stamps: dict[str, str], meta: dict[str, Any]) -> None:
        """Freeze and write the index to `path` (see dup_store.save); `stamps` holds a token
        of each indexed file's content (the caller's choice), for the next launch to check."""
        with self._lock:
            self._freeze()
            files = sorted(self._by_file)
            ranges = [self._by_file[f] for f in files]
            arrays = self._table.arrays()
            arrays["table_paths"] = _pack(self._table.paths)
            arrays["files"] = _pack(files)
            arrays["files_funcs"] = np.array([self._file_sizes.get(f, 0) for f in files], np.int64)
            arrays["files_start"] = np.array([r.start if isinstance(r, range) else 0 for r in ranges], np.int64)
            arrays["files_stop"] = np.array([r.stop if isinstance(r, range) else 0 for r in ranges], np.int64)
            arrays["files_stamp"] = _pack([stamps.get(f) or "-" for f in files])  # never empty
            dup_store.save(path, meta, arrays)

    def load_snapshot(self, path: Path, expect: dict[str, Any], *, verify: bool = True,
                      meanwhile: Callable[[], object] | None = None) -> dict[str, str]:
        """Replace the index with a snapshot (memory-mapped); returns the stamps it was
        saved with. Raises SnapshotError when it cannot be used (`verify`, `meanwhile`:
        see dup_store.load)."""
        _header, arrays = dup_store.load(path, expect, verify=verify, meanwhile=meanwhile)
        try:
            table = UnitTable.from_arrays(_unpack(arrays["table_paths"]), arrays)
            files = _unpack(arrays["files"])
            funcs, starts, stops = arrays["files_funcs"], arrays["files_start"], arrays["files_stop"]
            stamps = _unpack(arrays["files_stamp"]) if len(files) else []
            if not len(files) == len(funcs) == len(starts) == len(stops) == len(stamps):
                raise SnapshotError("inconsistent file table")
            if len(stops) and (int(stops.max()) > len(table) or bool((starts > stops).any())):
                raise SnapshotError("file rows out of range")
        except KeyError as exc:
            raise SnapshotError(f"missing array {exc}") from None
        with self._lock:
            self._reset()
            self._table = table
            self._alive = np.ones(len(table), dtype=np.bool_)
            self._by_file = {f: range(s, e) for f, s, e in
                             zip(files, starts.tolist(), stops.tolist(), strict=True)}
            self._file_sizes = dict(zip(files, funcs.tolist(), strict=True))
            self._function_count = int(funcs.sum())
        return dict(zip(files, stamps, strict=True))

    # ------------------------------------------------------------------ queries
    @property
    def function_count(self) -> int:
        """All functions and methods seen (indexable or too small to index)."""
        return self._function_count

    @property
    def indexed_count(self) -> int:
        with self._lock:
            frozen = int(np.count_nonzero(self._alive & self._table.indexed))
            return frozen + sum(1 for r in self._rows if r is not None and r[2])

    def _is_alive(self, uid: int) -> bool:
        base = self._table.n
        return bool(self._alive[uid]) if uid < base else self._rows[uid - base] is not None

    def _path(self, uid: int) -> str:
        base = self._table.n
        if uid < base:
            return self._table.path(uid)
        row = self._rows[uid - base]
        assert row is not None
        return row[0]

    def _fingerprint(self, uid: int) -> Fingerprint:
        base = self._table.n
        if uid < base:
            return self._table.fingerprint(uid)
        row = self._rows[uid - base]
        assert row is not None
        return row[1]

    def _row(self, uid: int) -> tuple[str, Fingerprint, bool]:
        row = self._rows[uid - self._table.n]
        assert row is not None
        return row

    def _symbol(self, uid: int) -> str:
        return self._table.symbol(uid) if uid < self._table.n else self._row(uid)[1].symbol

    def _line(self, uid: int) -> int:
        return int(self._table.line[uid]) if uid < self._table.n else self._row(uid)[1].line

    def _roles(self, uid: int) -> str:
        return self._table.role_text(uid) if uid < self._table.n else self._row(uid)[1].roles

    def _feats(self, uid: int) -> np.ndarray:
        base = self._table.n
        return self._table.feats(uid) if uid < base else self._fingerprint(uid).features

    def _group(self, key: bytes, renamed: bool) -> list[int]:
        """Live indexed uids with this exact (or renamed) key, ascending, at most MAX_GROUP:
        a generated file of 30,000 same-shaped functions must not make each query rank
        30,000 twins (a scan would be quadratic)."""
        frozen = self._table.group(key, renamed)
        if len(frozen):
            frozen = frozen[self._alive[frozen]]
        out = frozen[:MAX_GROUP].tolist()
        if len(out) < MAX_GROUP:
            out += (self._renamed if renamed else self._exact).get(key, [])[:MAX_GROUP - len(out)]
        return out

    def _word_jaccards(self, which: str, query: np.ndarray, uids: list[int]) -> list[float]:
        """Jaccard of the query's anchors (or lexicon) hashes with each uid's."""
        base = self._table.n
        frozen = [u for u in uids if u < base]
        scores = dict(zip(frozen, self._table.set_jaccards(which, query, np.asarray(frozen, np.int64)).tolist(),
                          strict=True)) if frozen else {}
        for u in uids:
            if u >= base:
                fp = self._fingerprint(u)
                scores[u] = _hash_jaccard(query, fp.anchors if which == "anchors" else fp.lexicon)
        return [scores[u] for u in uids]

    def _matches(self, unit: Fingerprint, skip: Callable[[int], bool],
                 limit: int, *, short_floor: bool = True) -> list[tuple[int, float, int]]:
        """(uid, similarity, clone type) of the unit's twins, best first.

        Best is the lowest clone type, then the highest structural similarity, then the
        most identifiers in common (of several equally shaped twins, the one it was
        copied from usually still shares names with it).
        """
        found: dict[int, tuple[float, int]] = {}
        for uid in self._group(unit.exact_key, False):
            found[uid] = (1.0, 1)
        for uid in self._group(unit.renamed_key, True):
            found.setdefault(uid, (1.0, 2))
        if any(not skip(uid) for uid in found):
            return self._rank(unit, found, skip, limit)  # near misses would not be shown
        near: list[tuple[float, int]] = []
        floor = SHORT_KGRAM_FLOOR if short_floor and unit.tokens < SHORT_TOKENS else KGRAM_FLOOR
        for uid, estimate in self._table.features.candidates(unit.features, self._is_alive, CANDIDATES):
            if uid in found or estimate < floor * PRUNE_BELOW:
                continue
            sim = jaccard(unit.features, self._feats(uid))
            if sim >= floor:
                near.append((sim, uid))
        near.sort(reverse=True)
        near = near[:ALIGN_AT_MOST]
        if near:
            aligner = _Aligner(unit.roles)
            anchors = self._word_jaccards("anchors", unit.anchors, [uid for _, uid in near])
            for (sim, uid), shared in zip(near, anchors, strict=True):
                if shared < ANCHOR_FLOOR:
                    continue
                ratio = aligner.ratio(self._roles(uid), sim)
                if ratio:
                    found[uid] = (min(ratio, 0.99), 3)  # not an exact or renamed copy: below 1
        return self._rank(unit, found, skip, limit)

    def _rank(self, unit: Fingerprint, found: dict[int, tuple[float, int]],
              skip: Callable[[int], bool], limit: int) -> list[tuple[int, float, int]]:
        """Best first, and only the twins worth showing beside the best."""
        uids = [uid for uid in found if not skip(uid)]
        if not uids:
            return []
        lexical = self._word_jaccards("anchors", unit.anchors, uids)
        words = self._word_jaccards("lexicon", unit.lexicon, uids)
        scored = []
        for uid, lex, word in zip(uids, lexical, words, strict=True):
            sim, ctype = found[uid]
            scored.append((ctype, -round(sim, 4), -lex, -word, uid))
        scored.sort()
        best_type, best, best_lex = scored[0][0], -scored[0][1], -scored[0][2]
        return [
            (uid, -neg_sim, ctype)
            for ctype, neg_sim, neg_lex, _neg_words, uid in scored
            # only the closest kind of twin: beside an exact copy, same-shaped renamed
            # functions are noise. Of several renamed or near twins, only those about as
            # close as the best in shape and in the names they use.
            if ctype == best_type
            and (ctype == 1 or -neg_lex >= best_lex - LEXICAL_MARGIN)
            and -neg_sim >= best - NEAR_BEST
        ][:limit]

    def check_source(
        self,
        source: str,
        path: str | None = None,
        *,
        exclude_path: str | None = None,
        limit: int = 3,
        lines: Collection[int] | None = None,
        notes: list[str] | None = None,
    ) -> list[DuplicateMatch]:
        """Twins in the index of every complete function in `source`.

        `source` may be code still being written: a trailing incomplete function or a
        syntax error is tolerated and whatever parses is checked. `path` (relative to
        the root) is where the source lives: a function never matches its own indexed
        version (same path and symbol). `exclude_path` skips every twin in that file.
        At most `limit` twins per function, exact before renamed before near-miss.
        `lines` (1-based line numbers of `source`, e.g. a hunk's added lines) limits the
        check to the functions that overlap them: a whole file costs ~1 ms per function.
        `notes` collects what could not be read (a syntax error: what parsed was checked).
        """
        norm_path = Path(path).as_posix() if path else None
        norm_excl = Path(exclude_path).as_posix() if exclude_path else None
        if lines is None:
            units = [u for u in units_from_source(source, notes) if u.checkable]
        else:
            wanted = set(lines)
            units = [u for u in units_from_source(source, notes, lines=wanted) if u.checkable
                     and any(n in wanted for n in range(u.line, u.end_line + 1))]
        results: list[DuplicateMatch] = []
        with self._lock:
            for unit in units:

                def skip(uid: int, symbol: str = unit.symbol) -> bool:
                    where = self._path(uid)
                    return where == norm_excl or (
                        where == norm_path and self._symbol(uid) == symbol)

                for uid, sim, ctype in self._matches(Fingerprint.of(unit), skip, limit):
                    twin = self._fingerprint(uid)
                    results.append(
                        DuplicateMatch(
                            new_symbol=unit.symbol,
                            new_line=unit.line,
                            twin_path=self._path(uid),
                            twin_symbol=twin.symbol,
                            twin_line=twin.line,
                            similarity=round(sim, 4),
                            clone_type=ctype,
                        )
                    )
        return _drop_inner_of_paired_outer(results)

    def warm_up(self) -> None:
        """Run one small check so the first real one finds nothing cold: the first check
        of a process imported numpy.ma (~12 ms) and the aligner's rapidfuzz, and at the
        end of an app's first answer those waited in line before its review (a first
        answer's checks took 80-156 ms, later ones 2-15 ms)."""
        _Aligner("warm").ratio("warm up", 1.0)
        self.check_source(_WARM_SOURCE, "\0warm-up")

    def pairs(self) -> list[ClonePair]:
        """Each function paired with its best twin, once per pair, sorted by path and line.

        Reporting every clone pair would square a family: four sibling copies make six
        pairs, and each near miss of one of them would pair with all four. So each
        function reports only its best twin (lowest clone type, then highest similarity,
        then most shared names); twins tied on all three are a family of copies of each
        other, of which the one sharing the most names (then the first by path) stands
        for all. A pair's ``a`` is the one that sorts first by (path, line, symbol).
        """
        out: dict[tuple[FunctionRef, FunctionRef], tuple[float, int]] = {}

        with self._lock:
            base = self._table.n
            live = np.flatnonzero(self._alive).tolist()
            live += [base + i for i, row in enumerate(self._rows) if row is not None]
            lines = self._table.line.tolist()  # (the skip test runs for every twin found)

            def line_of(uid: int) -> int:
                return lines[uid] if uid < base else self._line(uid)

            for me in live:
                unit, path = self._fingerprint(me), self._path(me)

                def skip(other: int, me: int = me, line: int = unit.line, path: str = path) -> bool:
                    return other == me or (line_of(other) == line and self._path(other) == path)

                # the lower floor for short functions is for checks (a new function the
                # user is about to accept); over a whole tree it pairs more patterns
                best = self._matches(unit, skip, CANDIDATES, short_floor=False)
                if not best:
                    continue
                uid, sim, ctype = best[0]
                twin = self._fingerprint(uid)
                a, b = sorted((FunctionRef(path, unit.symbol, unit.line),
                               FunctionRef(self._path(uid), twin.symbol, twin.line)),
                              key=lambda r: (r.path, r.line, r.symbol))
                if a != b and ((a, b) not in out or (ctype, -sim) < (out[a, b][1], -out[a, b][0])):
                    out[a, b] = (sim, ctype)
        paired = {frozenset({(a.path, a.symbol), (b.path, b.symbol)}) for a, b in out}

        def inner_of_paired_outer(a: FunctionRef, b: FunctionRef) -> bool:
            pa, pb = parent_symbol(a.symbol), parent_symbol(b.symbol)
            return (pa is not None and pb is not None
                    and frozenset({(a.path, pa), (b.path, pb)}) in paired)

        pairs = [ClonePair(a, b, sim, ctype) for (a, b), (sim, ctype) in out.items()
                 if not inner_of_paired_outer(a, b)]
        pairs.sort(key=lambda p: (p.a.path, p.a.line, p.a.symbol, p.b.path, p.b.line))
        return pairs


def release_free_memory() -> None:
    """Give freed heap back to the system (glibc keeps it otherwise: after streaming
    250,000 cached functions through Python objects, hundreds of MB stayed resident)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _hash_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two sorted unique hash arrays (1.0 when both are empty, like sets)."""
    shared = np.intersect1d(a, b, assume_unique=True).size if len(a) and len(b) else 0
    union = len(a) + len(b) - shared
    return shared / union if union else 1.0


def _pack(strings: list[str]) -> np.ndarray:
    """Paths as one NUL-separated uint8 array (a path cannot hold a NUL)."""
    return np.frombuffer("\0".join(strings).encode("utf-8", "surrogateescape"), np.uint8)


def _unpack(packed: np.ndarray) -> list[str]:
    text = bytes(packed).decode("utf-8", "surrogateescape")
    return text.split("\0") if text else []
