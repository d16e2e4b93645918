"""Compact, columnar storage of the duplicate index's functions, and its on-disk snapshot.

A 20,000-file tree holds ~250,000 functions. As `FunctionUnit` objects (a numpy array,
two frozensets of strings, a role string and two keys each) they cost ~4-6 KB apiece:
1.6 GB in the indexer. Frozen here they are rows of a few numpy arrays (~0.8 KB each):

* per function: its file, line, token count, exact and renamed keys (12 bytes each), and
  CSR slices of four flat arrays: its symbol and role sequence (bytes), its k-gram
  features and its anchors and lexicon as sorted 64-bit hashes of the strings (their
  Jaccard similarities are those of the string sets unless two different strings share a
  64-bit hash: the odds of that within one comparison are below 1e-15);
* the k-gram features as uint32 ids into the table's vocabulary (every distinct k-gram
  hash of its rows, sorted uint64): ~11 million features on a 20,000-file tree are 44 MB
  instead of 88 MB, and the ids sort as the hashes do, so a row's features are
  `vocab[ids]`, exactly the hashes it was built from;
* lookups built once per freeze: the exact and renamed keys sorted (binary search, not a
  dict of sets) and the inverted k-gram index (`FeatureIndex`, keyed by the vocabulary).

The same arrays are the snapshot (`save` / `load`): one file of raw arrays behind a JSON
header, memory-mapped on load, so a second launch on an unchanged tree has its index in
a fraction of a second instead of unpickling 250,000 functions. The header is versioned
and names the tree it belongs to; a checksum of the data catches a damaged file. A file
that is not a snapshot, is truncated, damaged, of another version or of another tree is
refused with a `SnapshotError` (the caller rebuilds), never trusted.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.detectors.feature_index import FeatureIndex
from core.detectors.normalize import FunctionUnit
from core.errors import SparkError
from core.indexing import checked

SNAPSHOT_MAGIC = b"SPARKDUP"
SNAPSHOT_VERSION = 2  # 2: k-gram features as uint32 ids into a stored vocabulary (1: uint64 hashes)
_ALIGN = 64
KEY_BYTES = 12  # exact and renamed keys (normalize's blake2b digests)


class SnapshotError(SparkError):
    """A duplicate-index snapshot that cannot be used (absent, damaged, foreign, old)."""


def word_hash(word: str) -> int:
    """A stable 64-bit hash of an anchor or lexicon string (Python's `hash` is salted
    per process; the snapshot outlives the process)."""
    return int.from_bytes(
        hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def word_hashes(words: Iterable[str], memo: dict[str, int] | None = None) -> np.ndarray:
    """Sorted unique uint64 hashes of a set of strings."""
    if memo is None:
        values = [word_hash(w) for w in words]
    else:
        values = []
        for w in words:
            h = memo.get(w)
            if h is None:
                h = memo[w] = word_hash(w)
            values.append(h)
    return np.unique(np.asarray(values, dtype=np.uint64))


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What a duplicate query needs of one function, strings hashed: built from a
    `FunctionUnit` (a function being checked, or one added since the last freeze) or read
    from a `UnitTable` row."""

    symbol: str
    line: int
    tokens: int
    exact_key: bytes
    renamed_key: bytes
    features: np.ndarray  # sorted unique uint64 k-gram hashes
    anchors: np.ndarray  # sorted unique uint64 word hashes
    lexicon: np.ndarray
    roles: str

    @classmethod
    def of(cls, unit: FunctionUnit, memo: dict[str, int] | None = None) -> Fingerprint:
        return cls(unit.symbol, unit.line, unit.tokens, unit.exact_key, unit.renamed_key,
                   unit.features, word_hashes(unit.anchors, memo), word_hashes(unit.lexicon, memo),
                   unit.roles)


def _csr(parts: Sequence[np.ndarray], dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, flat) of a list of arrays."""
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    if parts:
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        flat = np.concatenate(parts).astype(dtype, copy=False) if offsets[-1] else np.empty(0, dtype)
    else:
        flat = np.empty(0, dtype)
    return offsets, flat


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted union of two sorted unique arrays."""
    if not len(b) or (len(a) == len(b) and np.array_equal(a, b)):
        return a
    if not len(a):
        return b
    return np.union1d(a, b)


def _feature_ids(parts: Sequence[np.ndarray], rows_at_once: int = 4096) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, ids, vocab) of rows' sorted unique uint64 k-gram arrays: `vocab` is every
    hash that occurs, sorted, and row i's features are vocab[ids[offsets[i]:offsets[i + 1]]].
    Made a few thousand rows at a time: the uint64 features of all rows are never held at
    once (at a 20k tree's last freeze they would be ~18 MB beside the table)."""
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    if parts:
        np.cumsum([len(p) for p in parts], out=offsets[1:])
    vocab = np.empty(0, np.uint64)
    steps = range(0, len(parts), rows_at_once)
    for lo in steps:
        block = parts[lo:lo + rows_at_once]
        if offsets[lo + len(block)] > offsets[lo]:
            vocab = _union(vocab, np.unique(np.concatenate(block).astype(np.uint64, copy=False)))
    ids = np.empty(int(offsets[-1]), dtype=np.uint32)
    for lo in steps:
        block = parts[lo:lo + rows_at_once]
        a, b = int(offsets[lo]), int(offsets[lo + len(block)])
        if b > a:
            ids[a:b] = np.searchsorted(vocab, np.concatenate(block).astype(np.uint64, copy=False))
    return offsets, ids, vocab


def _remap(ids: np.ndarray, mapping: np.ndarray, step: int = 1 << 20) -> None:
    """ids[:] = mapping[ids], in place, a slice at a time (no second array of ids)."""
    for lo in range(0, len(ids), step):
        part = ids[lo:lo + step]
        part[:] = mapping[part]


def _take_csr(offsets: np.ndarray, flat: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR slices of `rows` (in that order), as new (offsets, flat)."""
    starts, ends = offsets[rows], offsets[rows + 1]
    lens = ends - starts
    new_off = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_off[1:])
    total = int(new_off[-1])
    if not total:
        return new_off, np.empty(0, flat.dtype)
    idx = np.arange(total, dtype=np.int64) - np.repeat(new_off[:-1] - starts, lens)
    return new_off, flat[idx]


def _concat_popped(parts: list[dict[str, np.ndarray]], name: str) -> np.ndarray:
    """The parts' `name` columns end to end, each popped from its part. The first part's
    array is grown in place when it is the only reference to memory it owns (a table's
    own column, not a snapshot's mapped view): realloc moves a large block's pages
    (mremap) instead of copying them, so a freeze does not hold the old and the new
    k-gram column at once (~70 MB each at the last freeze of a 20,000-file tree)."""
    first = parts[0].pop(name)
    rest = [p.pop(name) for p in parts[1:]]
    if not rest:
        return first
    n0 = len(first)
    try:
        if not first.flags.owndata:
            raise ValueError("a view")
        first.resize((n0 + sum(len(r) for r in rest), *first.shape[1:]), refcheck=True)
    except ValueError:  # shared or not its own: an ordinary copy
        return np.concatenate([first, *rest])
    at = n0
    for r in rest:
        first[at:at + len(r)] = r
        at += len(r)
    return first


_COLUMNS = ("file_of", "line", "tokens", "indexed", "keys",
            "sym_off", "sym", "roles_off", "roles", "feat_off", "feat",
            "anch_off", "anch", "lex_off", "lex")


class UnitTable:
    """Frozen rows of functions (row number = uid), with the lookups queries use.

    Rows flagged not `indexed` are probes: functions big enough to check but too small to
    index, kept for `pairs()` (they ask, nobody finds them)."""

    def __init__(self, paths: list[str], arrays: dict[str, np.ndarray]) -> None:
        self.paths = paths
        self.file_of: np.ndarray = arrays["file_of"]
        self.line: np.ndarray = arrays["line"]
        self.tokens: np.ndarray = arrays["tokens"]
        self.indexed: np.ndarray = arrays["indexed"]
        self.keys: np.ndarray = arrays["keys"]  # (n, 24) uint8: exact key, renamed key
        self.sym_off, self.sym = arrays["sym_off"], arrays["sym"]
        self.roles_off, self.roles = arrays["roles_off"], arrays["roles"]
        self.feat_off, self.feat = arrays["feat_off"], arrays["feat"]  # uint32 ids into vocab
        self.vocab: np.ndarray = arrays["vocab"]  # sorted unique uint64 k-gram hashes
        self.anch_off, self.anch = arrays["anch_off"], arrays["anch"]
        self.lex_off, self.lex = arrays["lex_off"], arrays["lex"]
        self.n = len(self.line)  # (len() of a table is on every query's path)
        self.features = FeatureIndex()
        self._exact_k = self._exact_ord = self._renamed_k = self._renamed_ord = np.empty(0, np.int64)

    def __len__(self) -> int:
        return self.n

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def empty(cls) -> UnitTable:
        return cls.from_rows([], []).with_lookups()

    @classmethod
    def from_rows(cls, paths: list[str], rows: Sequence[tuple[int, Fingerprint, bool]]) -> UnitTable:
        """A table of (file number, fingerprint, indexed) rows."""
        n = len(rows)
        keys = np.frombuffer(b"".join(f.exact_key + f.renamed_key for _, f, _ in rows),
                             dtype=np.uint8).reshape(n, 2 * KEY_BYTES)
        sym_off, sym = _csr([np.frombuffer(f.symbol.encode("utf-8", "surrogatepass"), np.uint8)
                             for _, f, _ in rows], np.uint8)
        roles_off, roles = _csr([np.frombuffer(f.roles.encode("latin-1"), np.uint8)
                                 for _, f, _ in rows], np.uint8)
        feat_off, feat, vocab = _feature_ids([f.features for _, f, _ in rows])
        anch_off, anch = _csr([f.anchors for _, f, _ in rows], np.uint64)
        lex_off, lex = _csr([f.lexicon for _, f, _ in rows], np.uint64)
        arrays = {
            "file_of": np.fromiter((r[0] for r in rows), np.int32, n),
            "line": np.fromiter((r[1].line for r in rows), np.int32, n),
            "tokens": np.fromiter((r[1].tokens for r in rows), np.int32, n),
            "indexed": np.fromiter((r[2] for r in rows), np.bool_, n),
            "keys": keys, "sym_off": sym_off, "sym": sym, "roles_off": roles_off, "roles": roles,
            "feat_off": feat_off, "feat": feat, "vocab": vocab, "anch_off": anch_off, "anch": anch,
            "lex_off": lex_off, "lex": lex,
        }
        return cls(paths, arrays)

    def take(self, rows: np.ndarray, file_map: np.ndarray, paths: list[str]) -> dict[str, np.ndarray]:
        """The columns of `rows` (in order), files renumbered by `file_map`."""
        out = {
            "file_of": file_map[self.file_of[rows]].astype(np.int32),
            "line": self.line[rows], "tokens": self.tokens[rows], "indexed": self.indexed[rows],
            "keys": self.keys[rows], "vocab": self.vocab,
        }
        for off, flat in (("sym_off", "sym"), ("roles_off", "roles"), ("feat_off", "feat"),
                          ("anch_off", "anch"), ("lex_off", "lex")):
            out[off], out[flat] = _take_csr(getattr(self, off), getattr(self, flat), rows)
        return out

    def columns(self) -> dict[str, np.ndarray]:
        """The row columns as they are, and the vocabulary their k-gram ids index (no copy)."""
        return {name: getattr(self, name) for name in (*_COLUMNS, "vocab")}

    @classmethod
    def concat(cls, paths: list[str], parts: list[dict[str, np.ndarray]]) -> UnitTable:
        """One table of several column sets (already renumbered to `paths`). Each part's
        column is dropped from its dict once copied: with no other reference, the old
        table's memory goes column by column instead of after the whole copy.

        The parts' k-gram ids index their own vocabularies: the table's is their union, and
        each part's ids are renumbered into it in place in the joined column (a new k-gram
        shifts the ids of the keys after it; the ids keep their order)."""
        arrays: dict[str, np.ndarray] = {}
        for name in ("file_of", "line", "tokens", "indexed", "keys"):
            arrays[name] = _concat_popped(parts, name)
        vocabs = [p.pop("vocab") for p in parts]
        vocab = vocabs[0]
        for other in vocabs[1:]:
            vocab = _union(vocab, other)
        spans: list[tuple[int, int]] = []
        for off, flat in (("sym_off", "sym"), ("roles_off", "roles"), ("feat_off", "feat"),
                          ("anch_off", "anch"), ("lex_off", "lex")):
            offsets = [np.zeros(1, np.int64)]
            base = 0
            for p in parts:
                offsets.append(p[off][1:] + base)
                end = base + int(p.pop(off)[-1])
                if flat == "feat":
                    spans.append((base, end))
                base = end
            arrays[off] = np.concatenate(offsets)
            arrays[flat] = _concat_popped(parts, flat)
        feat = arrays["feat"]
        for (lo, hi), own in zip(spans, vocabs, strict=True):
            if len(own) != len(vocab) and hi > lo:  # (equal lengths: the same vocabulary)
                if not feat.flags.writeable:  # (one part, a mapped snapshot's column)
                    feat = arrays["feat"] = feat.copy()
                _remap(feat[lo:hi], np.searchsorted(vocab, own).astype(np.uint32))
        arrays["vocab"] = vocab
        return cls(paths, arrays)

    def with_lookups(self) -> UnitTable:
        """Build the sorted key lookups and the inverted k-gram index (indexed rows only)."""
        uids = np.flatnonzero(self.indexed).astype(np.int32)
        for col, attr in ((0, "_exact"), (KEY_BYTES, "_renamed")):
            k64 = self.keys[uids, col:col + 8].copy().view("<u8").ravel()
            order = np.lexsort((uids, k64))
            setattr(self, attr + "_k", k64[order])
            setattr(self, attr + "_ord", uids[order])
        self.features.freeze_ids(self.vocab, self.feat, self.feat_off, self.indexed)  # probes: not indexed
        return self

    # -- reading a row ----------------------------------------------------------------------
    def symbol(self, uid: int) -> str:
        return bytes(self.sym[self.sym_off[uid]:self.sym_off[uid + 1]]).decode("utf-8", "surrogatepass")

    def path(self, uid: int) -> str:
        return self.paths[self.file_of[uid]]

    def fingerprint(self, uid: int) -> Fingerprint:
        k = bytes(self.keys[uid])
        return Fingerprint(self.symbol(uid), int(self.line[uid]), int(self.tokens[uid]),
                           k[:KEY_BYTES], k[KEY_BYTES:], self.feats(uid), self.anchors(uid),
                           self.lexicon(uid), self.role_text(uid))

    def feats(self, uid: int) -> np.ndarray:
        """The row's k-gram hashes (sorted unique uint64)."""
        return self.vocab[self.feat[self.feat_off[uid]:self.feat_off[uid + 1]]]

    def anchors(self, uid: int) -> np.ndarray:
        return self.anch[self.anch_off[uid]:self.anch_off[uid + 1]]

    def lexicon(self, uid: int) -> np.ndarray:
        return self.lex[self.lex_off[uid]:self.lex_off[uid + 1]]

    def role_text(self, uid: int) -> str:
        return bytes(self.roles[self.roles_off[uid]:self.roles_off[uid + 1]]).decode("latin-1")

    def group(self, key: bytes, renamed: bool) -> np.ndarray:
        """Indexed uids with this exact (or renamed) key, ascending."""
        ks, order = (self._renamed_k, self._renamed_ord) if renamed else (self._exact_k, self._exact_ord)
        k64 = np.frombuffer(key[:8], dtype="<u8")[0]
        lo, hi = np.searchsorted(ks, k64, "left"), np.searchsorted(ks, k64, "right")
        if lo == hi:
            return order[0:0]
        uids = order[lo:hi]
        col = KEY_BYTES if renamed else 0
        same = (self.keys[uids, col:col + KEY_BYTES] == np.frombuffer(key, np.uint8)).all(axis=1)
        return np.sort(uids[same])

    def set_jaccards(self, which: str, query: np.ndarray, uids: np.ndarray) -> np.ndarray:
        """Jaccard of `query` (sorted unique hashes) with the anchors or lexicon of each uid."""
        offsets, flat = (self.anch_off, self.anch) if which == "anchors" else (self.lex_off, self.lex)
        new_off, vals = _take_csr(offsets, flat, uids)
        lens = np.diff(new_off)
        if len(query) and len(vals):
            pos = np.minimum(np.searchsorted(query, vals), len(query) - 1)
            hit = (query[pos] == vals).astype(np.int64)
            csum = np.concatenate([[0], np.cumsum(hit)])
            inter = csum[new_off[1:]] - csum[new_off[:-1]]
        else:
            inter = np.zeros(len(uids), np.int64)
        union = len(query) + lens - inter
        return np.where(union > 0, inter / np.maximum(union, 1), 1.0)

    # -- snapshot ---------------------------------------------------------------------------
    def arrays(self) -> dict[str, np.ndarray]:
        out = self.columns()
        out.update({"exact_k": self._exact_k, "exact_ord": self._exact_ord,
                    "renamed_k": self._renamed_k, "renamed_ord": self._renamed_ord})
        # (the inverted index's keys are the vocabulary, stored once)
        out.update({"fi_" + k: v for k, v in self.features.arrays().items() if k != "keys"})
        return out

    @classmethod
    def from_arrays(cls, paths: list[str], arrays: dict[str, np.ndarray]) -> UnitTable:
        table = cls(paths, arrays)
        table._exact_k, table._exact_ord = arrays["exact_k"], arrays["exact_ord"]
        table._renamed_k, table._renamed_ord = arrays["renamed_k"], arrays["renamed_ord"]
        fi = {k[3:]: v for k, v in arrays.items() if k.startswith("fi_")}
        table.features.load_arrays({**fi, "keys": table.vocab})
        n = len(table.line)
        if not (len(table.file_of) == len(table.tokens) == len(table.indexed) == n
                and table.keys.shape == (n, 2 * KEY_BYTES)
                and all(len(getattr(table, o)) == n + 1 for o in
                        ("sym_off", "roles_off", "feat_off", "anch_off", "lex_off"))
                and (n == 0 or int(table.file_of.max()) < len(paths))):
            raise SnapshotError("inconsistent column sizes")
        if not (table.feat.dtype == np.uint32 and table.vocab.dtype == np.uint64 and table.vocab.ndim == 1
                and len(fi["offsets"]) == len(table.vocab) + 1 and len(fi["sizes"]) == n
                and fi["postings"].dtype == np.int32):
            raise SnapshotError("inconsistent k-gram arrays")
        return table


def save(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write a snapshot atomically (a temporary file renamed over the old one: a reader
    that has the old one mapped keeps it)."""
    layout: dict[str, list[Any]] = {}
    offset = 0
    blobs = []
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        layout[name] = [arr.dtype.str, list(arr.shape), offset]
        blobs.append(arr)
        offset += -(-arr.nbytes // _ALIGN) * _ALIGN
    crc = 0
    header_meta = {**meta, "version": SNAPSHOT_VERSION, "arrays": layout, "data_bytes": offset}
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(tmp, "wb") as out:
            out.write(b"\0" * _ALIGN)  # the header's place, written last
            for arr in blobs:
                data = arr.reshape(-1).view(np.uint8).data if arr.size else memoryview(b"")
                pad = b"\0" * (-len(data) % _ALIGN)
                crc = zlib.crc32(pad, zlib.crc32(data, crc))
                out.write(data)
                out.write(pad)
            header = json.dumps({**header_meta, "crc32": crc}).encode()
            out.write(header)
            out.write(len(header).to_bytes(8, "little") + SNAPSHOT_MAGIC)
            out.seek(0)
            out.write(SNAPSHOT_MAGIC + b"\0" * (_ALIGN - len(SNAPSHOT_MAGIC)))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    checked.vouch(path, crc)


def load(path: Path, expect: dict[str, Any], *, verify: bool = True,
         meanwhile: Callable[[], object] | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A snapshot's header and arrays (read-only views of a memory map); `expect` holds
    header values that must match (the tree's root). Raises SnapshotError.

    The checksum (~60-90 ms for 220 MB) runs in a thread, zlib releasing the GIL, while
    this thread calls `meanwhile` (the indexer lists the tree's files then); it is not
    read again while the file keeps the identity recorded beside it once checked
    (core.indexing.checked).
    `verify=False` skips the checksum, for a file this process has just written: the
    checksum reads every page, which puts the whole file in the process's resident set
    beside the arrays it was written from (a 100 MB jump at the end of a 20k build)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            size = st.st_size
            if size < 2 * _ALIGN:
                raise SnapshotError("truncated")
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise SnapshotError(f"unreadable ({exc.strerror or exc})") from None
    view = memoryview(mm)
    if bytes(view[:len(SNAPSHOT_MAGIC)]) != SNAPSHOT_MAGIC or bytes(view[-8:]) != SNAPSHOT_MAGIC:
        raise SnapshotError("not a duplicate-index snapshot (or truncated)")
    hlen = int.from_bytes(view[-16:-8], "little")
    if not 0 < hlen < size - _ALIGN - 16:
        raise SnapshotError("truncated")
    try:
        header = json.loads(bytes(view[size - 16 - hlen:size - 16]))
    except ValueError:
        raise SnapshotError("damaged header") from None
    if not isinstance(header, dict) or header.get("version") != SNAPSHOT_VERSION:
        version = header.get("version") if isinstance(header, dict) else None
        raise SnapshotError(f"version {version} (this build reads {SNAPSHOT_VERSION})")
    for key, value in expect.items():
        if header.get(key) != value:
            raise SnapshotError(f"belongs to another {key} ({header.get(key)!r})")
    data_bytes = header.get("data_bytes")
    if not isinstance(data_bytes, int) or _ALIGN + data_bytes != size - 16 - hlen:
        raise SnapshotError("truncated")
    data = view[_ALIGN:_ALIGN + data_bytes]
    if verify and checked.vouched(path, st, header.get("crc32")):
        verify = False  # checked before (or written here), and not rewritten since
    if verify:
        crc: list[int] = []
        worker = threading.Thread(target=lambda: crc.append(zlib.crc32(data)), name="spark-dups-crc", daemon=True)
        worker.start()
        try:
            if meanwhile is not None:
                meanwhile()
        finally:
            worker.join()
        if crc != [header.get("crc32")]:
            raise SnapshotError("damaged (checksum mismatch)")
    elif meanwhile is not None:
        meanwhile()
    arrays: dict[str, np.ndarray] = {}
    try:
        for name, (dtype, shape, offset) in header["arrays"].items():
            dt = np.dtype(dtype)
            count = int(np.prod(shape)) if shape else 1
            arrays[name] = np.frombuffer(data, dtype=dt, count=count, offset=offset).reshape(shape)
    except (TypeError, ValueError, KeyError) as exc:
        raise SnapshotError(f"damaged layout ({exc})") from None
    if verify:  # read for the first time: its numbers must point inside it before it is vouched for
        _check_ids(arrays)
        checked.vouch(path, crc[0], st)
    return header, arrays


def vouch_settled(path: Path, chunk: int = 1 << 22) -> bool:
    """Vouch for a snapshot written here once it has settled (its ctime RACY_NS old), so
    the next launch does not read it whole for its checksum: `save` cannot vouch for the
    file it has just written (see core.indexing.checked), and the first launch after a
    snapshot was stored then checksummed all of it on its way to "duplicates ready" (r20k:
    176 MB, 0.2 s more of the indexer's CPU and, from disk, most of a second). The
    checksum is computed here from the file as it is now, read a few MB at a time (not
    mapped: none of it stays in this process's resident set), and vouched for under the
    identity the file had before and after the read only if it matches its header's.
    True when the file is vouched for now; False when it is not settled yet (ask again),
    or is not a snapshot whose data matches its checksum (its next load refuses it)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if time.time_ns() - st.st_ctime_ns < checked.RACY_NS or st.st_size < 2 * _ALIGN:
                return False
            f.seek(st.st_size - 16)
            tail = f.read(16)
            hlen = int.from_bytes(tail[:8], "little")
            if tail[8:] != SNAPSHOT_MAGIC or not 0 < hlen < st.st_size - _ALIGN - 16:
                return False
            f.seek(st.st_size - 16 - hlen)
            header = json.loads(f.read(hlen))
            want, data_bytes = header.get("crc32"), header.get("data_bytes")
            if checked.vouched(path, st, want):
                return True
            if not isinstance(data_bytes, int) or _ALIGN + data_bytes != st.st_size - 16 - hlen:
                return False
            f.seek(_ALIGN)
            crc, left = 0, data_bytes
            buf = bytearray(chunk)
            while left:
                n = f.readinto(memoryview(buf)[:min(chunk, left)])
                if not n:
                    return False
                crc = zlib.crc32(memoryview(buf)[:n], crc)
                left -= n
            same = os.fstat(f.fileno())
    except (OSError, ValueError):
        return False
    if crc != want or checked._identity(same) != checked._identity(st):
        return False
    checked.vouch(path, crc, st)
    return checked.vouched(path, st, want)


def _check_ids(arrays: dict[str, np.ndarray]) -> None:
    """Refuse a snapshot whose k-gram ids or postings point outside their arrays (a query
    would fail on them): ~10 ms on a 20k tree, so only when a file is first read (its
    checksum read all of it just before; a file vouched for is not checked again)."""
    feat, vocab, postings, line = (arrays.get(k) for k in ("feat", "vocab", "fi_postings", "line"))
    if feat is None or vocab is None or postings is None or line is None:
        return  # (from_arrays says which array is missing)
    if len(feat) and feat.dtype.kind in "ui" and int(feat.max()) >= len(vocab):
        raise SnapshotError("k-gram ids out of range")
    if len(postings) and postings.dtype.kind in "ui" and not 0 <= int(postings.min()) <= int(postings.max()) < len(line):
        raise SnapshotError("k-gram postings out of range")
