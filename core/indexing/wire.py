"""A large object between the indexer and the app with its arrays out of band.

A real 20,000-file tree's repo map pickles to ~114 MB, ~100 MB of it numpy arrays. Sent
with `Connection.send` it was one pickle the app unpickled in one call holding the GIL:
69-85 ms (load ~3) with nothing else of the app's Python running, once per saved file.
Here the object's pickle (protocol 5) goes as one message and each array's bytes follow it
raw on the same socket; the app reads them with `os.readv` straight into arrays it
allocated (the GIL is released in the read; no intermediate bytes, no BytesIO copies), and
only the small pickle of what is left (lists, dicts, strings) is unpickled holding it.

Message framing stays `Connection`'s: the caller sends a small header message saying how
many bytes follow (`split`), then calls `send_buffers`; the reader calls `recv_buffers`
with those sizes before reading its next message. One thread writes each direction.
"""

from __future__ import annotations

import os
import pickle
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

_RAW = hasattr(os, "readv") and os.name == "posix"  # else Connection's own framing


def split(obj: Any) -> tuple[bytes, list[memoryview]] | None:
    """(pickle, raw buffers) of `obj`, or None when a buffer is not contiguous (then the
    caller sends the object whole)."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    try:
        return data, [b.raw() for b in buffers]
    except BufferError:
        return None


def send_buffers(conn: Any, data: bytes, raws: list[memoryview]) -> None:
    """The pickle as one message, then each buffer's bytes (raw on a Unix socket)."""
    conn.send_bytes(data)
    raw_fd = _RAW and isinstance(conn, Connection)  # (anything else with send_bytes: framed)
    for raw in raws:
        if not raw_fd:
            conn.send_bytes(raw)
            continue
        fd = conn.fileno()
        view = raw.cast("B")
        while view:
            view = view[os.write(fd, view):]


def recv_buffers(conn: Any, sizes: list[int]) -> Any:
    """The object `send_buffers` sent, given the buffers' sizes from its header."""
    data = conn.recv_bytes()
    buffers = [np.empty(n, dtype=np.uint8) for n in sizes]  # not touched: the read faults them in
    raw_fd = _RAW and isinstance(conn, Connection)
    for buf in buffers:
        if not raw_fd:
            conn.recv_bytes_into(buf)
            continue
        fd = conn.fileno()
        view = buf.data  # the array's own memory, written in place
        got = 0
        while got < len(view):
            n = os.readv(fd, [view[got:]])
            if n == 0:
                raise EOFError("the indexer closed its socket in the middle of a map")
            got += n
    return pickle.loads(data, buffers=buffers)
