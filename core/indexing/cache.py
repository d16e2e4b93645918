"""On-disk cache of one repository's indexes: per-file scans and whole-tree snapshots.

A second launch on an unchanged 20,000-file tree must be ready in under a second, and
parsing every file again takes minutes. So each file's scan (repo-map tags, duplicate
fingerprints) is stored with the file's stamp (mtime, size) and a hash of its content: an
unchanged stamp is trusted (the fast path), a changed stamp with the same content hash
(a `touch`, a checkout that rewrote the file) reuses the scan, anything else is scanned
again. The built repo-map graph is stored too, keyed by a digest of every stamp, so an
unchanged tree loads one blob instead of 20,000 scans.

One SQLite file per repository, in the user's cache folder (platformdirs; `SPARK_CACHE_DIR`
overrides it, as the tests do): never inside the user's tree. It is versioned and records
the root it belongs to; a file that is not SQLite, is truncated, has another version or
belongs to another root is refused, deleted and rebuilt, never trusted (the snapshot files
beside it check themselves and are kept). Stored objects are
unpickled with an allow-list of the classes a scan is made of, so a planted cache cannot
run code. Only the indexer (one process per repository) writes it.
"""

from __future__ import annotations

import hashlib
import io
import json
import mmap
import os
import pickle
import sqlite3
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SparkError
from core.indexing import checked

CACHE_VERSION = 6
APP_NAME = "sparkstation"
_INTEGRITY_STAMP = 0x5117E  # what a database's "checked" stamp records: it passed PRAGMA quick_check


class CacheError(SparkError):
    """The cache folder cannot be used at all (not writable); indexing goes on without it."""


def cache_root() -> Path:
    """Where the caches live: $SPARK_CACHE_DIR, else the user's cache folder."""
    override = os.environ.get("SPARK_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


def cache_file(root: Path, base: Path | None = None) -> Path:
    """The cache file of one repository: named by a hash of its resolved path."""
    resolved = str(Path(root).resolve())
    digest = hashlib.blake2b(resolved.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()
    return (base or cache_root()) / "index" / f"{Path(resolved).name[:40]}-{digest}.sqlite"


def content_hash(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


# -- safe unpickling ----------------------------------------------------------------------
_ALLOWED = {
    ("core.context.tags", "Definition"),
    ("core.context.tags", "FileTags"),
    ("core.context.repomap", "MapGraph"),
    ("core.context.repomap", "PackedStrings"),
    ("core.context.repomap", "IdentIndex"),
    ("core.context.rank", "Graph"),
    ("core.detectors.normalize", "FunctionUnit"),
    ("builtins", "frozenset"),
    ("builtins", "set"),
    ("builtins", "tuple"),
    ("builtins", "list"),
    ("builtins", "dict"),
    ("builtins", "bytes"),
    ("builtins", "getattr"),
    ("copyreg", "_reconstructor"),
    ("builtins", "object"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in an index cache")
        return super().find_class(module, name)


def loads(blob: bytes) -> Any:
    """Unpickle a cached object, refusing anything but the classes scans are made of."""
    return _SafeUnpickler(io.BytesIO(blob)).load()


def dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


@dataclass(frozen=True, slots=True)
class Stamp:
    """What the cache knows about one file without reading it."""

    mtime_ns: int
    size: int
    digest: bytes


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    digest BLOB NOT NULL, tags BLOB, units BLOB);
CREATE TABLE IF NOT EXISTS snapshots (name TEXT PRIMARY KEY, key BLOB NOT NULL, blob BLOB NOT NULL);
"""


class IndexCache:
    """The cache of one repository. Not thread-safe: one owner (the indexer) uses it."""

    def __init__(self, root: Path, path: Path | None = None) -> None:
        self.root = str(Path(root).resolve())
        self.path = path or cache_file(Path(root))
        self.rebuilt: str | None = None  # why an existing cache was thrown away, if it was
        self._db: sqlite3.Connection | None = None
        self._pending = 0

    # -- opening and validation ------------------------------------------------------
    def open(self) -> IndexCache:
        """Open (or create) the cache; a bad or foreign one is deleted and started afresh."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"cannot create the cache folder {self.path.parent}: {exc}") from None
        reason = None
        if self.path.exists():
            try:
                reason = self._check(self._connect())
            except sqlite3.DatabaseError as exc:
                reason = f"unreadable ({exc})"
            if reason is None:
                # this root's cache at this version, as checked: nothing to write (a write
                # here changed the file at every launch, so no launch could find it as the
                # last one checked it: see _check)
                return self
            self._discard()
        if reason is not None:
            self.rebuilt = reason
        try:
            db = self._db or self._connect()
            db.executescript(_SCHEMA)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (str(CACHE_VERSION),))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('root', ?)", (self.root,))
            db.commit()
        except sqlite3.DatabaseError as exc:
            self._discard()
            raise CacheError(f"cannot write the cache {self.path}: {exc}") from None
        return self

    def _connect(self) -> sqlite3.Connection:
        self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        return self._db

    def _check(self, db: sqlite3.Connection) -> str | None:
        """Why this database is not a cache of this root at this version (None: it is).

        Its integrity check (PRAGMA quick_check) reads every page: on a 20,000-file tree
        350 MB, 0.1 s of a core with the file in the page cache and ~1 s of CPU and seconds
        of disk without, at every launch. So, as for the snapshot files (core.indexing.
        checked), a database that passed it is vouched for under its identity (inode, size,
        mtime, ctime), and while the file keeps that identity and has no write-ahead log
        to replay, it holds the bytes that passed and is not read again. Any write to it,
        SQLite's or anything else's (even one that puts the mtime back: the ctime cannot
        be), and any replacement changes the identity: that file is checked again; a file
        written within the last RACY_NS is not vouched for (its times may not show a
        change in the same clock tick). The cheap checks below (size, tables, version,
        root) run every time."""
        # pages newer than the last checkpoint live in the write-ahead log: the main file is
        # only expected to hold them all when there is no log (the owner closed it cleanly)
        wal = Path(str(self.path) + "-wal")
        whole = not wal.exists() or wal.stat().st_size == 0
        st = os.stat(self.path)
        if whole:
            pages = db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
            if st.st_size < pages:
                return "truncated"
        if not (whole and checked.vouched(self.path, st, _INTEGRITY_STAMP)):
            if db.execute("PRAGMA quick_check").fetchone() != ("ok",):
                return "damaged (integrity check failed)"
            if whole:
                checked.vouch(self.path, _INTEGRITY_STAMP, st)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"meta", "files", "snapshots"} <= tables:
            return "not an index cache"
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("version") != str(CACHE_VERSION):
            return f"version {meta.get('version')} (this build reads {CACHE_VERSION})"
        if meta.get("root") != self.root:
            return f"belongs to another repository ({meta.get('root')})"
        return None

    def _discard(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(str(self.path) + suffix)
            except FileNotFoundError:
                pass
        checked.stamp_file(self.path).unlink(missing_ok=True)
        # The snapshot files stay: each checks itself (version, root, name, tree key,
        # checksum), as the duplicate index's does. The app installs the stored map before
        # the indexer opens this database, and for the tree it was stored for the indexer
        # then builds no map, so none would be stored again (deleted with the database, the
        # next launch had to build the map anew, until a file event stored one).

    def close(self) -> None:
        if self._db is not None:
            try:
                self._db.commit()
                # fold the write-ahead log into the database file: one self-contained file
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.DatabaseError:
                pass
            finally:
                self._db.close()
                self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise CacheError("the index cache is not open")
        return self._db

    # -- per-file scans ------------------------------------------------------------------
    def stamps(self) -> dict[str, Stamp]:
        """Every cached file's stamp, in one query."""
        return {path: Stamp(m, s, d) for path, m, s, d in
                self.db.execute("SELECT path, mtime_ns, size, digest FROM files")}

    def iter_column(self, column: str) -> Iterator[tuple[str, Stamp, Any]]:
        """(path, stamp, object) for every file whose `column` ("tags" or "units") is cached;
        a row that does not unpickle is skipped (the file is scanned again)."""
        if column not in {"tags", "units"}:
            raise ValueError(column)
        query = f"SELECT path, mtime_ns, size, digest, {column} FROM files WHERE {column} IS NOT NULL"
        for path, m, s, d, blob in self.db.execute(query):
            try:
                obj = loads(blob)
            except Exception:  # noqa: BLE001, S112 -- a bad row costs one rescan, nothing more
                continue
            yield path, Stamp(m, s, d), obj

    def get(self, path: str, column: str) -> tuple[Stamp, Any] | None:
        if column not in {"tags", "units"}:
            raise ValueError(column)
        row = self.db.execute(f"SELECT mtime_ns, size, digest, {column} FROM files WHERE path = ?",
                              (path,)).fetchone()
        if row is None or row[3] is None:
            return None
        try:
            return Stamp(row[0], row[1], row[2]), loads(row[3])
        except Exception:  # noqa: BLE001
            return None

    def put(self, path: str, stamp: Stamp, column: str, obj: Any) -> None:
        """Store one scan; a stamp that changed since the other column was stored clears it."""
        if column not in {"tags", "units"}:
            raise ValueError(column)
        other = "units" if column == "tags" else "tags"
        blob = dumps(obj)
        db = self.db
        row = db.execute("SELECT mtime_ns, size, digest FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None and row[2] == stamp.digest:
            db.execute(f"UPDATE files SET mtime_ns = ?, size = ?, {column} = ? WHERE path = ?",
                       (stamp.mtime_ns, stamp.size, blob, path))
        else:
            db.execute(f"INSERT OR REPLACE INTO files (path, mtime_ns, size, digest, {column}, {other}) "
                       "VALUES (?, ?, ?, ?, ?, NULL)", (path, stamp.mtime_ns, stamp.size, stamp.digest, blob))
        self._tick()

    def touch(self, path: str, stamp: Stamp) -> None:
        """Same content under a new stamp (a `touch`): keep the scans, record the stamp."""
        self.db.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                        (stamp.mtime_ns, stamp.size, path))
        self._tick()

    def forget(self, path: str) -> None:
        self.db.execute("DELETE FROM files WHERE path = ?", (path,))
        self._tick()

    def forget_missing(self, present: set[str]) -> int:
        """Drop rows of files no longer in the tree; returns how many."""
        gone = [p for (p,) in self.db.execute("SELECT path FROM files") if p not in present]
        self.db.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in gone])
        self._tick(len(gone))
        return len(gone)

    def _tick(self, n: int = 1) -> None:
        self._pending += n
        if self._pending >= 500:
            self.commit()

    def commit(self) -> None:
        if self._db is not None:
            self._db.commit()
        self._pending = 0

    # -- whole-tree snapshots ----------------------------------------------------------
    def snapshot(self, name: str, key: bytes) -> Any | None:
        """The object stored under `name` if it was stored with this key, else None."""
        found = read_snapshot_file(snapshot_file(self.path, name), self.root, name)
        return found[1] if found is not None and found[0] == key else None

    def store_snapshot(self, name: str, key: bytes, obj: Any) -> None:
        write_snapshot_file(snapshot_file(self.path, name), self.root, name, key, obj)
        self.db.execute("DELETE FROM snapshots WHERE name = ?", (name,))  # the old, in-database form
        self.commit()


# -- snapshot files -------------------------------------------------------------------------
# A whole-tree snapshot (the repo map's graph: ~50 MB on 20,000 files) lives in a file of
# its own beside the database: read back from SQLite it cost 120-240 ms, memory-mapped
# 40-80 ms with its checksum. The pickle's large arrays are stored out of band (pickle
# protocol 5), aligned, and unpickled as views of the mapping (copy-on-write). The header
# says which cache version, repository, name and tree key it is for, and holds a CRC-32 of
# everything after it (zlib, which releases the GIL: ~20-50 ms for 50 MB); a file whose
# header, sizes, checksum or pickle do not check out is refused (None), never trusted.
# Files are written whole under a temporary name and renamed: a reader sees old or new.
SNAPSHOT_MAGIC = b"sparkstation index snapshot\n"
SNAPSHOT_SUFFIX = ".snap"
_ALIGN = 64
_MAX_HEADER = 1 << 20


def snapshot_file(cache_path: Path, name: str) -> Path:
    return cache_path.with_name(f"{cache_path.name}.{name}{SNAPSHOT_SUFFIX}")


def write_snapshot_file(file: Path, root: str, name: str, key: bytes, obj: Any) -> None:
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    try:
        raws = [b.raw() for b in buffers]
    except BufferError:  # a buffer that is not contiguous: everything in band
        data, raws = pickle.dumps(obj, protocol=5), []
    body: list[bytes | memoryview] = []
    at = 0
    pieces: list[bytes | memoryview] = [data, *raws]
    for part in pieces:  # offsets count from the first aligned byte after the header
        pad = -at % _ALIGN
        body += [b"\0" * pad, part]
        at += pad + memoryview(part).nbytes
    crc = 0
    for part in body:
        crc = zlib.crc32(part, crc)
    header = json.dumps({"version": CACHE_VERSION, "root": root, "name": name, "key": key.hex(),
                         "pickle": len(data), "buffers": [r.nbytes for r in raws], "crc32": crc}).encode()
    head = SNAPSHOT_MAGIC + struct.pack("<I", len(header)) + header
    head += b"\0" * (-len(head) % _ALIGN)
    tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(head)
            for part in body:
                fh.write(part)
        os.replace(tmp, file)
    finally:
        tmp.unlink(missing_ok=True)
    checked.vouch(file, crc)


def read_snapshot_file(file: Path, root: str, name: str, *, copy: bool = False) -> tuple[bytes, Any] | None:
    """(key, object) from a snapshot file of this cache version, root and name; None for
    a missing, damaged or foreign one. The object's large arrays are views of the mapped
    file, or with `copy` arrays of their own (a file cut short in place under a mapping
    makes reading those pages a SIGBUS: the app copies a map it reads while running)."""
    try:
        with open(file, "rb") as fh:
            st = os.fstat(fh.fileno())
            size = st.st_size
            if size < len(SNAPSHOT_MAGIC) + 4:
                return None
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    except (OSError, ValueError):
        return None
    view = memoryview(mapped)
    try:
        pos = len(SNAPSHOT_MAGIC)
        if view[:pos] != SNAPSHOT_MAGIC:
            return None
        (length,) = struct.unpack_from("<I", mapped, pos)
        pos += 4
        if length > _MAX_HEADER or pos + length > size:
            return None
        header = json.loads(bytes(view[pos:pos + length]))
        pos += length
        if not isinstance(header, dict) or header.get("version") != CACHE_VERSION \
                or header.get("root") != root or header.get("name") != name:
            return None
        key = bytes.fromhex(header["key"])
        start = pos = pos + -pos % _ALIGN
        parts = []
        for n in [header["pickle"], *header["buffers"]]:
            pos += -(pos - start) % _ALIGN
            if not isinstance(n, int) or n < 0 or pos + n > size:
                return None
            parts.append(view[pos:pos + n])
            pos += n
        if pos != size:
            return None
        if not checked.vouched(file, st, header.get("crc32")):  # (read once per file: see checked.py)
            if zlib.crc32(view[start:]) != header.get("crc32"):
                return None
            checked.vouch(file, header["crc32"], st)
        # copies by numpy, which lets the GIL go while it copies (and faults the pages in):
        # bytearray held it ~100 ms for a real 20k tree's 88 MB of arrays (the app's UI
        # stalled that long at each stored map it read)
        buffers: list[Any] = parts[1:]
        if copy:
            import numpy as np  # (loaded by then: the snapshot's arrays are numpy's)

            buffers = [np.frombuffer(p, dtype=np.uint8).copy() for p in buffers]
        return key, _SafeUnpickler(io.BytesIO(parts[0]), buffers=buffers).load()
    except Exception:  # noqa: BLE001 -- any damage: refused, the indexer rebuilds it
        return None


def read_latest_snapshot_key(root: Path, name: str, path: Path | None = None) -> bytes | None:
    """The key of the snapshot `read_latest_snapshot` would return, from its header alone
    (no unpickling: the app learns it before its first frame and reads the object after);
    None as there. The whole read may still refuse the file (damage past the header)."""
    file = snapshot_file(path or cache_file(root), name)
    try:
        with open(file, "rb") as fh:
            head = fh.read(len(SNAPSHOT_MAGIC) + 4)
            if len(head) < len(SNAPSHOT_MAGIC) + 4 or not head.startswith(SNAPSHOT_MAGIC):
                return None
            (length,) = struct.unpack_from("<I", head, len(SNAPSHOT_MAGIC))
            if length > _MAX_HEADER:
                return None
            header = json.loads(fh.read(length))
        if not isinstance(header, dict) or header.get("version") != CACHE_VERSION \
                or header.get("root") != str(Path(root).resolve()) or header.get("name") != name:
            return None
        return bytes.fromhex(header["key"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_latest_snapshot(root: Path, name: str, path: Path | None = None) -> tuple[bytes, Any] | None:
    """(key, object) of the snapshot last stored under `name`, whatever tree it was stored
    for: the app shows it at once and checks its key against the tree meanwhile. Read-only
    (the indexer owns the cache) but for the file's small "checked" stamp (checked.py);
    None when absent, unreadable or not this repository's cache at this version."""
    return read_snapshot_file(snapshot_file(path or cache_file(root), name), str(Path(root).resolve()), name)
