"""An inverted index from k-gram features to function ids, built for millisecond lookups.

The bulk of the postings live in frozen numpy arrays (CSR: sorted keys, offsets,
postings), so 100,000 functions cost tens of megabytes, not a dict of Python lists.
Functions added after the last freeze sit in a small dict (the delta); removed
functions are filtered by the caller's liveness check. ``freeze`` folds the delta in
and is called from the update path, never from a lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

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

    def freeze_rows(self, feat: np.ndarray, feat_off: np.ndarray, indexed: np.ndarray, *,
                    slice_features: int = 1 << 18) -> None:
        """`freeze` from a table's CSR rows: row uid's features are feat[feat_off[uid]:
        feat_off[uid + 1]], only rows flagged `indexed` are indexed. The same arrays as
        `freeze_flat`, sorted in slices by the keys' top byte so the temporaries stay a
        fraction of the ~11 million features of a 20,000-file tree (a global argsort cost
        ~350 MB on top of the table). The slices are runs of top-byte values of about
        equal feature counts: k-gram frequencies are skewed (one 4-gram is in every
        function), and 16 fixed slices by the top 4 bits left one slice with 18 % of the
        features (~70 MB of temporaries, the peak of a 20k first launch). A slice holds
        about max(1/32 of the features, `slice_features`) unless one top byte has more."""
        n = len(indexed)
        lens = np.diff(feat_off) * indexed
        total = int(lens.sum())
        if not total:
            self._clear()
            return
        top = feat.view(np.uint8)[7::8] if feat.dtype.byteorder in "<=" else (feat >> 56).astype(np.uint8)
        counts = np.bincount(top, minlength=256)
        postings = np.empty(total, dtype=np.int32)
        uniq: list[np.ndarray] = []
        starts: list[np.ndarray] = []
        at = 0
        # (a key's top byte is its own: slices of top-byte values never share a key, so
        # the slices sorted one by one, in order, are the whole sort)
        for lo, hi in _runs(counts, max(len(feat) // 32, slice_features)):
            sel = np.flatnonzero((top - np.uint8(lo)) < hi - lo)  # lo <= top < hi (uint8 wraps)
            rows = (np.searchsorted(feat_off, sel, side="right") - 1).astype(np.int32)
            live = indexed[rows]
            if not live.all():
                sel, rows = sel[live], rows[live]
            del live
            keys = feat[sel]
            del sel
            order = np.argsort(keys, kind="stable")
            keys = keys[order]
            postings[at:at + len(keys)] = rows[order]
            del rows, order
            if len(keys):
                first = np.empty(len(keys), dtype=np.bool_)
                first[0] = True
                np.not_equal(keys[1:], keys[:-1], out=first[1:])
                uniq.append(keys[first])
                starts.append(np.flatnonzero(first) + at)
            at += len(keys)
        del top
        self._keys = np.concatenate(uniq)
        self._offsets = np.append(np.concatenate(starts), total).astype(np.int64)
        self._postings = postings
        self._sizes = np.zeros(n, dtype=np.int32)
        self._sizes[:] = lens
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


def _runs(counts: np.ndarray, target: int) -> list[tuple[int, int]]:
    """[lo, hi) runs of bucket numbers whose counts add up to about `target` each (a
    bucket larger than that is a run of its own); empty buckets join their neighbours."""
    runs: list[tuple[int, int]] = []
    lo = acc = 0
    for b, c in enumerate(counts.tolist()):
        if acc and acc + c > target:
            runs.append((lo, b))
            lo, acc = b, 0
        acc += c
    runs.append((lo, len(counts)))
    return runs
