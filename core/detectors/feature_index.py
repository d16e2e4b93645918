"""An inverted index from k-gram features to function ids, built for millisecond lookups.

The bulk of the postings live in frozen numpy arrays (CSR: sorted keys, offsets,
postings), so 100,000 functions cost tens of megabytes, not a dict of Python lists.
Functions added after the last freeze sit in a small dict (the delta); removed
functions are filtered by the caller's liveness check. ``freeze`` folds the delta in
and is called from the update path, never from a lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

MAX_POSTINGS = 4000  # a feature shared by more functions than this says nothing
MAX_QUERY_FEATURES = 64  # the rarest features of a query are the ones that discriminate


class FeatureIndex:
    """Feature hash -> function ids, frozen CSR arrays plus a small mutable delta."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._keys = np.empty(0, dtype=np.uint64)
        self._offsets = np.zeros(1, dtype=np.int64)
        self._postings = np.empty(0, dtype=np.int32)
        self._delta: dict[int, list[int]] = {}
        self._delta_count = 0
        self._sizes = np.zeros(0, dtype=np.int32)  # feature count per uid
        self._delta_sizes: dict[int, int] = {}

    @property
    def delta_size(self) -> int:
        return self._delta_count

    def add(self, uid: int, features: np.ndarray) -> None:
        for key in features.tolist():
            self._delta.setdefault(key, []).append(uid)
        self._delta_count += 1
        self._delta_sizes[uid] = len(features)

    def freeze(self, live: Iterable[tuple[int, np.ndarray]]) -> None:
        """Rebuild the CSR arrays from every live function (drops removed ones)."""
        pairs = [(uid, feats) for uid, feats in live if len(feats)]
        if not pairs:
            self._clear()
            return
        sizes = np.zeros(max(uid for uid, _ in pairs) + 1, dtype=np.int32)
        for uid, feats in pairs:
            sizes[uid] = len(feats)
        self.freeze_flat(np.concatenate([f for _, f in pairs]),
                         np.concatenate([np.full(len(f), uid, dtype=np.int32) for uid, f in pairs]),
                         sizes, len(sizes))

    def freeze_flat(self, keys: np.ndarray, uids: np.ndarray, sizes: np.ndarray, n: int) -> None:
        """`freeze` from flat arrays: every live function's features concatenated in uid
        order (`keys`), the uid of each (`uids`), and the feature count per uid (`sizes`,
        0 for the functions not indexed). Same arrays as `freeze`, without a Python loop."""
        if not len(keys):
            self._clear()
            return
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        self._postings = uids[order].astype(np.int32, copy=False)
        del order, uids
        first = np.empty(len(keys), dtype=np.bool_)  # (np.unique would sort them again)
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        del first
        self._keys = keys[starts]
        self._offsets = np.append(starts, len(keys)).astype(np.int64)
        self._sizes = np.zeros(n, dtype=np.int32)
        self._sizes[:len(sizes)] = sizes
        self._delta = {}
        self._delta_count = 0
        self._delta_sizes = {}

    def freeze_ids(self, vocab: np.ndarray, ids: np.ndarray, row_off: np.ndarray, indexed: np.ndarray,
                   *, chunk: int = 1 << 18) -> None:
        """`freeze` from a table's CSR rows of k-gram ids: row uid's features are
        vocab[ids[row_off[uid]:row_off[uid + 1]]] (`vocab`: sorted unique uint64 hashes,
        `ids`: uint32), only rows flagged `indexed` are indexed. The keys are then the
        vocabulary itself, k-grams only probes have included: those have no postings, and
        `candidates` treats them as absent, so lookups are those of `freeze`'s arrays.

        A counting sort in chunks of `chunk` features: a key's postings are the indexed
        rows holding it in row order (a stable sort's), and the temporaries stay a chunk's
        (a global argsort of the ~11 million features of a 20,000-file tree cost ~350 MB on
        top of the table)."""
        size = len(vocab)
        lens = np.diff(row_off) * indexed
        counts = np.zeros(size, dtype=np.int64)
        for rows, cids in _chunks(ids, row_off, indexed, chunk):
            counts += np.bincount(cids, minlength=size)
        self._offsets = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(counts, out=self._offsets[1:])
        self._postings = np.empty(int(self._offsets[-1]), dtype=np.int32)
        cursor = self._offsets[:-1].copy()  # where each key's next posting goes
        for rows, cids in _chunks(ids, row_off, indexed, chunk):
            order = np.argsort(cids, kind="stable")
            keys, rows = cids[order], rows[order]
            del order
            first = np.empty(len(keys), dtype=np.bool_)
            first[0] = True
            np.not_equal(keys[1:], keys[:-1], out=first[1:])
            starts = np.flatnonzero(first)
            run = np.diff(np.append(starts, len(keys)))
            # a feature's place: its key's cursor plus its rank among the chunk's same keys
            rank = np.arange(len(keys), dtype=np.int64) - np.repeat(starts, run)
            self._postings[cursor[keys] + rank] = rows
            cursor[keys[starts]] += run
        self._keys = vocab
        self._sizes = lens.astype(np.int32)
        self._delta = {}
        self._delta_count = 0
        self._delta_sizes = {}

    def arrays(self) -> dict[str, np.ndarray]:
        """The frozen arrays (a snapshot holds them; the delta must be empty)."""
        return {"keys": self._keys, "offsets": self._offsets, "postings": self._postings,
                "sizes": self._sizes}

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Adopt frozen arrays from a snapshot (read-only views are fine: never written)."""
        self._clear()
        self._keys, self._offsets = arrays["keys"], arrays["offsets"]
        self._postings, self._sizes = arrays["postings"], arrays["sizes"]

    def candidates(
        self, features: np.ndarray, alive: Callable[[int], bool], limit: int
    ) -> list[tuple[int, float]]:
        """Up to `limit` (uid, estimated Jaccard) ranked by that estimate.

        Only the query's rarest features are looked up (at most MAX_QUERY_FEATURES, none
        shared by more than MAX_POSTINGS functions); the shared count is scaled back to
        the whole query before estimating, so small twins are not outranked by big
        functions that merely share many common k-grams.
        """
        if not len(features):
            return []
        pos = np.searchsorted(self._keys, features)
        pos = np.minimum(pos, max(len(self._keys) - 1, 0))
        found = self._keys[pos] == features if len(self._keys) else np.zeros(0, bool)
        if len(self._keys):  # a key without postings (only probes have it) is shared by nobody
            found &= self._offsets[pos + 1] > self._offsets[pos]
        chunks: list[np.ndarray] = []
        used = 0
        if len(self._keys):
            idx = pos[found]
            starts, ends = self._offsets[idx], self._offsets[idx + 1]
            df = ends - starts
            keep = np.argsort(df, kind="stable")[:MAX_QUERY_FEATURES]
            keep = keep[df[keep] <= MAX_POSTINGS]
            chunks = [self._postings[s:e] for s, e in zip(starts[keep], ends[keep])]
            used = len(keep) + int((~found).sum())  # missing keys are shared by nobody
        if not chunks and not self._delta:
            return []
        scale = len(features) / max(used, 1)
        out: dict[int, float] = {}
        if chunks:
            # bincount + argpartition: linear in the postings read, no sort of them
            counts = np.bincount(np.concatenate(chunks))
            uids = np.flatnonzero(counts)
            shared = np.minimum(counts[uids] * scale, len(features))
            est = shared / np.maximum(len(features) + self._sizes[uids] - shared, 1)
            k = limit * 2
            top = np.argpartition(-est, k)[:k] if len(est) > k else np.arange(len(est))
            for i in top.tolist():
                out[int(uids[i])] = float(est[i])
        if self._delta:
            counts_d: dict[int, int] = {}
            for key in features.tolist():
                for uid in self._delta.get(key, ()):
                    counts_d[uid] = counts_d.get(uid, 0) + 1
            for uid, c in counts_d.items():
                size = self._delta_sizes.get(uid, 0)
                out[uid] = c / max(len(features) + size - c, 1)
        ranked = sorted(out.items(), key=lambda kv: -kv[1])
        return [(uid, est) for uid, est in ranked if alive(uid)][:limit]


def _chunks(ids: np.ndarray, row_off: np.ndarray, indexed: np.ndarray,
            chunk: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(rows, ids) of the indexed rows' features, `chunk` features at a time, in order."""
    for lo in range(0, len(ids), chunk):
        hi = min(lo + chunk, len(ids))
        rows = (np.searchsorted(row_off, np.arange(lo, hi), side="right") - 1).astype(np.int32)
        live = indexed[rows]
        cids = ids[lo:hi]
        if not live.all():
            rows, cids = rows[live], cids[live]
        if len(cids):
            yield rows, cids
