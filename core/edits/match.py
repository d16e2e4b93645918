"""Locate a SEARCH text in a file: exact, then whitespace-tolerant, then fuzzy.

Why three tiers: models copy existing lines almost, not quite, exactly (lost trailing
spaces, a different indent level, a typo).  Each looser tier is tried only when the
stricter one finds nothing, and an ambiguous match is an error, never a guess.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

FUZZY_THRESHOLD = 0.88  # difflib ratio a window must reach to count as the match


@dataclass(frozen=True)
class Match:
    """Lines [start, end) of the file (0-based) that the search text denotes."""

    start: int
    end: int
    how: str  # "exact" | "whitespace" | "indent" | "fuzzy"
    indent_from: str = ""  # leading whitespace of the search text's first line ...
    indent_to: str = ""  # ... and of the file line it matched (for re-indenting)
    score: float = 1.0


class MatchError(Exception):
    """No match, or several: the message names the file and shows the closest lines."""


def split_lines(text: str) -> list[str]:
    """Lines without their line ends (a final newline does not make an empty line)."""
    return text.splitlines()


def _find_all(lines: list[str], needle: list[str], key) -> list[int]:
    n = len(needle)
    if n == 0 or n > len(lines):
        return []
    if key is None:  # exact: no keyed copy of the file needed
        first, hits, i = needle[0], [], 0
        last = len(lines) - n
        while True:
            try:
                i = lines.index(first, i, last + 1)
            except ValueError:
                return hits
            if lines[i:i + n] == needle:
                hits.append(i)
            i += 1
    want = [key(s) for s in needle]
    keyed = [key(s) for s in lines]
    first = want[0]
    return [i for i in range(len(lines) - n + 1)
            if keyed[i] == first and keyed[i:i + n] == want]


def _indent(s: str) -> str:
    return s[: len(s) - len(s.lstrip())]


def _trim_blank_edges(needle: list[str]) -> tuple[list[str], int]:
    """Drop blank lines at both ends (models add or lose them); return offset dropped."""
    lo, hi = 0, len(needle)
    while lo < hi and not needle[lo].strip():
        lo += 1
    while hi > lo and not needle[hi - 1].strip():
        hi -= 1
    return needle[lo:hi], lo


def find(lines: list[str], search: list[str], *, path: str = "?",
         threshold: float = FUZZY_THRESHOLD) -> Match:
    """Find `search` in `lines`; raise MatchError naming `path` when it is not unique."""
    tiers = (
        ("exact", None),
        ("whitespace", lambda s: s.rstrip()),
        ("indent", lambda s: " ".join(s.split())),
    )
    for how, key in tiers:
        hits = _find_all(lines, search, key)
        if len(hits) == 1:
            return _make(lines, search, hits[0], len(search), how)
        if len(hits) > 1:
            raise MatchError(_ambiguous(path, search, hits))
    core, _ = _trim_blank_edges(search)
    if core and core != search:
        for how, key in tiers:
            hits = _find_all(lines, core, key)
            if len(hits) == 1:
                return _make(lines, core, hits[0], len(core), how)
            if len(hits) > 1:
                raise MatchError(_ambiguous(path, core, hits))
    best, second = _fuzzy(lines, core or search)
    if best is not None and best[0] >= threshold and (second is None or second[0] < best[0]):
        score, start, length = best
        m = _make(lines, core or search, start, length, "fuzzy")
        return Match(m.start, m.end, "fuzzy", m.indent_from, m.indent_to, score)
    raise MatchError(_not_found(path, lines, search, best))


def _make(lines: list[str], search: list[str], start: int, length: int, how: str) -> Match:
    s_first = next((s for s in search if s.strip()), "")
    f_first = next((s for s in lines[start:start + length] if s.strip()), "")
    return Match(start, start + length, how, _indent(s_first), _indent(f_first))


def _fuzzy(lines: list[str], search: list[str]):
    """Best and second-best (score, start, length) windows, lengths len(search)±1."""
    n = len(search)
    if n == 0 or not lines:
        return None, None
    target = "\n".join(s.strip() for s in search)
    stripped = [s.strip() for s in lines]
    scored: list[tuple[float, int, int]] = []
    sm = difflib.SequenceMatcher(autojunk=False)
    sm.set_seq2(target)
    for length in sorted({max(1, n - 1), n, n + 1}):
        for start in range(max(1, len(lines) - length + 1)):
            sm.set_seq1("\n".join(stripped[start:start + length]))
            if sm.real_quick_ratio() < 0.5 or sm.quick_ratio() < 0.5:
                continue
            scored.append((sm.ratio(), start, length))
    if not scored:
        return None, None
    scored.sort(key=lambda t: (-t[0], abs(t[2] - n), t[1]))
    best = scored[0]
    # a rival only counts if it does not overlap the best window
    second = next((t for t in scored[1:]
                   if t[1] >= best[1] + best[2] or t[1] + t[2] <= best[1]), None)
    return best, second


def _excerpt(lines: list[str], start: int, length: int) -> str:
    lo, hi = max(0, start), min(len(lines), start + max(length, 1))
    return "\n".join(f"  {i + 1:>5} | {lines[i]}" for i in range(lo, hi))


def _ambiguous(path: str, search: list[str], hits: list[int]) -> str:
    where = ", ".join(str(h + 1) for h in hits[:8])
    return (f"{path}: the SEARCH text matches {len(hits)} places (lines {where}); "
            f"add more surrounding lines so it names one place")


def _not_found(path: str, lines: list[str], search: list[str], best) -> str:
    head = f"{path}: SEARCH text not found"
    if best is None:
        first = search[0] if search else ""
        return f"{head} (nothing similar; first SEARCH line: {first!r})"
    score, start, length = best
    return (f"{head}; closest lines ({score:.0%} similar):\n"
            f"{_excerpt(lines, start, length)}")


def reindent(replace: list[str], m: Match) -> list[str]:
    """Shift the replacement's indentation the way the match shifted the search's."""
    if m.how not in ("indent", "fuzzy") or m.indent_from == m.indent_to:
        return replace
    out = []
    for s in replace:
        if not s.strip():
            out.append(s)
        elif s.startswith(m.indent_from):
            out.append(m.indent_to + s[len(m.indent_from):])
        else:
            out.append(s)
    return out
