"""Split a file change into independent hunks the user accepts or rejects one by one.

Why zero-context hunks: each hunk is one contiguous replaced range of the old file, so
hunks never overlap and any subset applies cleanly; the context lines kept beside each
hunk are only used to re-base it when the file changes underneath.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field

CONTEXT = 3  # lines of context remembered on each side, for re-basing


@dataclass
class Hunk:
    """Replace `old_lines` starting at 1-based line `old_start` by `new_lines`.

    For a pure insertion `old_lines` is empty and the new lines go before `old_start`.
    Lines keep their line ends ("\\n").  `id` is stable: a hash of path, position and
    content, so rebuilding the same proposal gives the same ids.
    """

    id: str
    path: str
    old_start: int
    old_lines: list[str]
    new_lines: list[str]
    before: list[str] = field(default_factory=list)  # context lines just above
    after: list[str] = field(default_factory=list)  # context lines just below

    @property
    def added(self) -> int:
        return len(self.new_lines)

    @property
    def removed(self) -> int:
        return len(self.old_lines)


def hunk_id(path: str, old_start: int, old_lines: list[str], new_lines: list[str]) -> str:
    h = hashlib.blake2b(digest_size=6)
    h.update(path.encode())
    h.update(b"\0%d\0" % old_start)
    h.update("".join(old_lines).encode("utf-8", "surrogatepass"))
    h.update(b"\0\0")
    h.update("".join(new_lines).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def make_hunks(path: str, old_text: str, new_text: str) -> list[Hunk]:
    """The hunks that turn old_text into new_text, in file order."""
    a = old_text.splitlines(keepends=True)
    b = new_text.splitlines(keepends=True)
    # trimming the common head and tail first keeps difflib fast on big files
    lo = 0
    top = min(len(a), len(b))
    while lo < top and a[lo] == b[lo]:
        lo += 1
    hi_a, hi_b = len(a), len(b)
    while hi_a > lo and hi_b > lo and a[hi_a - 1] == b[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
    sm = difflib.SequenceMatcher(None, a[lo:hi_a], b[lo:hi_b], autojunk=False)
    hunks: list[Hunk] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        i1, i2, j1, j2 = i1 + lo, i2 + lo, j1 + lo, j2 + lo
        old, new = a[i1:i2], b[j1:j2]
        hunks.append(Hunk(hunk_id(path, i1 + 1, old, new), path, i1 + 1, old, new,
                          a[max(0, i1 - CONTEXT):i1], a[i2:i2 + CONTEXT]))
    return hunks


def make_hunks_tracked(path: str, old_text: str, new_text: str, origin: list[int | None],
                       spans: list[tuple[int, int]] | None = None, *,
                       old_lines: list[str] | None = None) -> list[Hunk]:
    """Like make_hunks, but diffs only the regions edits touched.

    `origin[j]` is the old line index that new line j still is, or None for a line an
    edit wrote; lines between two consecutive surviving originals are one region.
    `spans` (half-open ranges of new lines, ascending, apart): where edits wrote; outside
    them every line is the original line after the one before it, so only the lines in
    and around the spans are looked at (all ~2,500 origins were, at every rebuild of a
    streaming answer). `old_lines`: old_text split with its line ends, if the caller has it.
    """
    a = old_text.splitlines(keepends=True) if old_lines is None else old_lines
    b = new_text.splitlines(keepends=True)
    if len(origin) != len(b):
        return make_hunks(path, old_text, new_text)
    if a and not a[-1].endswith("\n") and len(a) - 1 in origin:
        # the old last line, which had no line end, may have got one (lines written
        # after it): then it is a changed line, or applying the hunks runs it into the next
        n = origin.index(len(a) - 1)
        if b[n] != a[-1]:
            origin = origin[:n] + [None] + origin[n + 1:]
            spans = None
    hunks: list[Hunk] = []
    for first, end in [(0, len(origin))] if spans is None else spans:
        if first > 0:  # the line before the span is an original one: (i, j) after it
            before = origin[first - 1]
            if before is None:  # not as the spans say: every line is looked at
                return make_hunks_tracked(path, old_text, new_text, origin, old_lines=a)
            i, j = before + 1, first
        else:
            i = j = 0  # next old / new line not yet accounted for
        for n in range(first, min(end + 1, len(origin))):  # the span and the line after it
            o = origin[n]
            if o is None:
                continue
            if o > i or n > j:
                hunks.extend(_diff_region(path, a, b, i, o, j, n))
            i, j = o + 1, n + 1
        if end >= len(origin) and (len(a) > i or len(b) > j):  # up to the end of both
            hunks.extend(_diff_region(path, a, b, i, len(a), j, len(b)))
    return hunks


def _diff_region(path: str, a: list[str], b: list[str], i1: int, i2: int, j1: int,
                 j2: int) -> list[Hunk]:
    sm = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
    out = []
    for tag, x1, x2, y1, y2 in sm.get_opcodes():
        if tag == "equal":
            continue
        s, e = i1 + x1, i1 + x2
        old, new = a[s:e], b[j1 + y1:j1 + y2]
        out.append(Hunk(hunk_id(path, s + 1, old, new), path, s + 1, old, new,
                        a[max(0, s - CONTEXT):s], a[e:e + CONTEXT]))
    return out


def apply_hunks(old_text: str, hunks: list[Hunk], accepted: set[str] | None = None) -> str:
    """old_text with the accepted hunks applied (all of them when accepted is None)."""
    lines = old_text.splitlines(keepends=True)
    chosen = sorted((h for h in hunks if accepted is None or h.id in accepted),
                    key=lambda h: (h.old_start, len(h.old_lines)))
    out: list[str] = []
    pos = 0  # 0-based index into lines
    for h in chosen:
        start = h.old_start - 1
        if start < pos:
            raise ValueError(f"hunks overlap at line {h.old_start} of {h.path}")
        if lines[start:start + len(h.old_lines)] != h.old_lines:
            raise ValueError(f"hunk {h.id} does not match {h.path} at line {h.old_start}")
        out.extend(lines[pos:start])
        out.extend(h.new_lines)
        pos = start + len(h.old_lines)
    out.extend(lines[pos:])
    return "".join(out)


def rebase_hunk(h: Hunk, lines: list[str]) -> Hunk | None:
    """The same hunk placed in a changed file, or None when its context is gone.

    The old lines plus their remembered context must appear in the new file; the
    occurrence nearest the hunk's old position wins.  Context is shrunk step by step
    toward the hunk (a user edit two lines away should not make it stale), but a hunk
    whose own old lines and one line of context cannot be found is stale.
    """
    for k in range(max(len(h.before), len(h.after)), -1, -1):
        before = h.before[len(h.before) - min(k, len(h.before)):]
        after = h.after[:min(k, len(h.after))]
        needle = before + h.old_lines + after
        if not needle or (k == 0 and not h.old_lines):
            return None
        if k == 0 and len(h.old_lines) < 2:
            return None
        hits = [i for i in range(len(lines) - len(needle) + 1)
                if lines[i:i + len(needle)] == needle]
        if not hits:
            continue
        target = h.old_start - 1 - len(before)
        best = min(hits, key=lambda i: abs(i - target))
        if sum(1 for i in hits if abs(i - target) == abs(best - target)) > 1:
            return None
        start = best + len(before)
        return Hunk(h.id, h.path, start + 1, list(h.old_lines), list(h.new_lines),
                    lines[max(0, start - CONTEXT):start],
                    lines[start + len(h.old_lines):start + len(h.old_lines) + CONTEXT])
    return None
