"""Checksums read once per file: "checked" stamps for the caches' snapshot files.

A snapshot (the duplicate index: 220 MB on 20,000 files; the repo map: 50 MB) carries a
CRC-32 of its data, and a reader refuses a file whose data does not match. Reading every
page for it costs 60-90 ms idle for the larger one, several times that under load, and
puts the whole file in the reader's resident set. Snapshots are never rewritten in place
(a new file is renamed over the old), so once a file's checksum is known to match (it was
just written, or a load checked it), a small file beside it records the file's identity as
the system sees it (inode, size, mtime and ctime in ns; ctime cannot be set back by a
process) with that checksum. A later load of a file that still has that identity skips
the read, as git trusts an index entry whose stat data is unchanged; anything that rewrote
the file, even in place keeping its size and mtime, changed its ctime, and a replacement
its inode: those are checked again.

File times tick coarsely (a few ms on Linux, up to 2 s on some file systems): a file
changed again within the tick of its last change keeps the same times. So, as git does
with "racily clean" entries, a file whose ctime is less than RACY_NS old is not vouched
for: a snapshot just written is checked by the first load that finds it settled, and
vouched for then.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

RACY_NS = 2_000_000_000  # a file changed this recently may change again unseen


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def stamp_file(path: Path) -> Path:
    return path.with_name(path.name + ".checked")


def vouch(path: Path, crc: int, st: os.stat_result | None = None) -> None:
    """Record that `path` (as `st` says it is, else as it is now) has checksum `crc`;
    best effort: without the record the next load just reads the file again."""
    target = stamp_file(path)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        st = st or os.stat(path)
        if time.time_ns() - st.st_ctime_ns < RACY_NS:
            return  # too fresh to vouch for (see above)
        tmp.write_text(json.dumps({"identity": _identity(st), "crc32": crc}))
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def vouched(path: Path, st: os.stat_result, crc: object) -> bool:
    """Whether the file `st` describes (the one opened for reading) was vouched for with
    this checksum (the one its header claims)."""
    try:
        stamp = json.loads(stamp_file(path).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("identity") == _identity(st) and stamp.get("crc32") == crc
