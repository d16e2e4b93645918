"""Locate a SEARCH text in a file: exact, then whitespace-tolerant, then fuzzy.

Why three tiers: models copy existing lines almost, not quite, exactly (lost trailing
spaces, a different indent level, a typo).  Each looser tier is tried only when the
stricter one finds nothing, and an ambiguous match is an error, never a guess.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from core.errors import SparkError

FUZZY_THRESHOLD = 0.88  # difflib ratio a window must reach to count as the match
FUZZY_MIN_LINES = 3  # fewer non-blank SEARCH lines: too little to tell places apart
FUZZY_MARGIN = 0.05  # a rival window this close to the best makes the match ambiguous
FUZZY_MAX_CHARS = 20_000  # difflib is quadratic: longer SEARCH texts must match exactly


@dataclass(frozen=True)
class Match:
    """Lines [start, end) of the file (0-based) that the search text denotes."""

    start: int
    end: int
    how: str  # "exact" | "whitespace" | "indent" | "fuzzy"
    indent_from: str = ""  # leading whitespace of the search text's first line ...
    indent_to: str = ""  # ... and of the file line it matched (for re-indenting)
    score: float = 1.0
    # (search indent, file indent) of lines that matched with the same text, so a
    # replacement written with 4 spaces lands in a tab-indented file as tabs
    indent_map: tuple[tuple[str, str], ...] = ()


class MatchError(SparkError):
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
            raise MatchError(_ambiguous(path, search, hits, lines))
    core, _ = _trim_blank_edges(search)
    if core and core != search:
        for how, key in tiers:
            hits = _find_all(lines, core, key)
            if len(hits) == 1:
                return _make(lines, core, hits[0], len(core), how)
            if len(hits) > 1:
                raise MatchError(_ambiguous(path, core, hits, lines))
    target = core or search
    if sum(1 for s in target if s.strip()) < FUZZY_MIN_LINES \
            or sum(len(s) for s in target) > FUZZY_MAX_CHARS:
        best, _ = _fuzzy(lines, target, score=False)
        raise MatchError(_not_found(path, lines, search, best))
    best, second = _fuzzy(lines, target)
    if best is not None and best[0] >= threshold and second is not None \
            and second[0] >= best[0] - FUZZY_MARGIN:
        raise MatchError(_ambiguous(path, target, [best[1], second[1]], lines,
                                    f"{best[0]:.0%} and {second[0]:.0%} similar"))
    if best is not None and best[0] >= threshold:
        score, start, length = best
        m = _make(lines, target, start, length, "fuzzy")
        return Match(m.start, m.end, "fuzzy", m.indent_from, m.indent_to, score,
                     m.indent_map)
    raise MatchError(_not_found(path, lines, search, best))


def _make(lines: list[str], search: list[str], start: int, length: int, how: str) -> Match:
    s_first = next((s for s in search if s.strip()), "")
    f_first = next((s for s in lines[start:start + length] if s.strip()), "")
    pairs: dict[str, str] = {}
    if how != "exact":
        for s, f in zip(search, lines[start:start + length]):
            if s.strip() and " ".join(s.split()) == " ".join(f.split()):
                pairs.setdefault(_indent(s), _indent(f))
    return Match(start, start + length, how, _indent(s_first), _indent(f_first),
                 indent_map=tuple(pairs.items()))


MAX_CANDIDATES = 24  # windows scored in full by the fuzzy tier


def _candidates(stripped: list[str], target: list[str]) -> set[int]:
    """Window starts worth scoring: voted for by search lines found verbatim (after
    stripping), else near the lines most similar to the first and last search lines."""
    where: dict[str, list[int]] = {}
    wanted = {t for t in target if t}
    for i, s in enumerate(stripped):
        if s in wanted:
            where.setdefault(s, []).append(i)
    votes: dict[int, int] = {}
    for j, t in enumerate(target):
        for i in where.get(t, ())[:200]:  # a line repeated everywhere votes for nothing
            votes[i - j] = votes.get(i - j, 0) + 1
    if votes:
        ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_CANDIDATES]
        return {max(0, start) for start, _ in ranked}
    starts: set[int] = set()
    probes = [(j, t) for j, t in enumerate(target) if t]
    uniq = list(dict.fromkeys(s for s in stripped if s))
    for j, t in probes[:1] + probes[-1:]:
        for close in _close_lines(t[:500], [u[:500] for u in uniq], MAX_CANDIDATES // 2):
            for i in [k for k, s in enumerate(stripped) if s == close][:4]:
                starts.add(max(0, i - j))
    return starts


def _close_lines(probe: str, uniq: list[str], k: int) -> list[str]:
    """The k lines most similar to probe: cheap upper bounds first, full ratio last."""
    sm = difflib.SequenceMatcher(autojunk=False)
    sm.set_seq2(probe)  # difflib caches what it learns about seq2
    rough = []
    for line in uniq:
        sm.set_seq1(line)
        if sm.real_quick_ratio() >= 0.6:
            q = sm.quick_ratio()
            if q >= 0.6:
                rough.append((q, line))
    rough.sort(key=lambda t: -t[0])
    exact = []
    for _, line in rough[:k * 8]:
        sm.set_seq1(line)
        exact.append((sm.ratio(), line))
    exact.sort(key=lambda t: -t[0])
    return [line for r, line in exact[:k] if r >= 0.6]


def _fuzzy(lines: list[str], search: list[str], *, score: bool = True):
    """Best and second-best (score, start, length) windows, lengths len(search)±1.

    With score=False (a SEARCH text too small or too big to match fuzzily) only a
    cheap guess at the closest place is made, from its first non-blank line, for the
    error message."""
    n = len(search)
    if n == 0 or not lines:
        return None, None
    if not score:
        probe = next((s.strip()[:500] for s in search if s.strip()), "")
        if not probe:
            return None, None
        sm = difflib.SequenceMatcher(autojunk=False)
        sm.set_seq2(probe)
        best = None
        for i, line in enumerate(lines[:20000]):
            sm.set_seq1(line.strip()[:500])
            floor = best[0] if best else 0.3
            if sm.real_quick_ratio() > floor and sm.quick_ratio() > floor:
                r = sm.ratio()
                if r > floor:
                    best = (r, i, min(n, len(lines) - i))
        return best, None
    target_lines = [s.strip() for s in search]
    target = "\n".join(target_lines)
    stripped = [s.strip() for s in lines]
    starts = _candidates(stripped, target_lines)
    scored: list[tuple[float, int, int]] = []
    sm = difflib.SequenceMatcher(autojunk=False)
    sm.set_seq2(target)
    seen: set[tuple[int, int]] = set()
    for base in starts:
        for start in (base - 1, base, base + 1):
            for length in (n - 1, n, n + 1):
                if length < 1 or start < 0 or start + length > len(lines):
                    continue
                if (start, length) in seen:
                    continue
                seen.add((start, length))
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
    return "\n".join(f"  {i + 1:>5} | {_clip(lines[i])}" for i in range(lo, hi))


def _clip(line: str, width: int = 200) -> str:
    """A line short enough for an error message (a minified file has 100 KB lines)."""
    return line if len(line) <= width else line[:width] + f"... ({len(line):,} chars)"


def _ambiguous(path: str, search: list[str], hits: list[int], lines: list[str] | None = None,
               how: str = "") -> str:
    where = ", ".join(str(h + 1) for h in hits[:8])
    msg = (f"{path}: the SEARCH text matches {len(hits)} places (lines {where})"
           f"{' ' + how if how else ''}; add more surrounding lines so it names one place")
    if lines:
        n = min(len(search), 3)
        for h in hits[:3]:
            msg += f"\n  at line {h + 1}:\n{_excerpt(lines, h, n)}"
    return msg


def _not_found(path: str, lines: list[str], search: list[str], best) -> str:
    head = f"{path}: SEARCH text not found"
    if best is None:
        first = search[0] if search else ""
        return f"{head} (nothing similar; first SEARCH line: {_clip(first)!r})"
    score, start, length = best
    return (f"{head}; closest lines ({score:.0%} similar):\n"
            f"{_excerpt(lines, start, length)}")


def reindent(replace: list[str], m: Match) -> list[str]:
    """Shift the replacement's indentation the way the match shifted the search's.

    An indent seen in the SEARCH text maps to the file's indent for that line; a deeper
    one keeps its extra depth, converted to tabs when the file indents with tabs and
    the answer with spaces."""
    mapping = dict(m.indent_map) or {m.indent_from: m.indent_to}
    if m.how not in ("indent", "fuzzy") or all(k == v for k, v in mapping.items()):
        return replace
    unit = _indent_unit(list(mapping))
    out = []
    for s in replace:
        ind = _indent(s)
        if not s.strip():
            out.append(s)
        elif ind in mapping:
            out.append(mapping[ind] + s[len(ind):])
        else:
            base = max((k for k in mapping if ind.startswith(k)), key=len, default=None)
            if base is None:
                out.append(s)
                continue
            extra = ind[len(base):]
            to = mapping[base]
            if "\t" in to and "\t" not in extra and unit:
                extra = "\t" * (len(extra) // unit) + " " * (len(extra) % unit)
            out.append(to + extra + s[len(ind):])
    return out


def _indent_unit(indents: list[str]) -> int:
    """Spaces per level in the answer's indentation (4 when it cannot tell)."""
    widths = sorted({len(i) for i in indents if i and "\t" not in i})
    steps = [b - a for a, b in zip([0] + widths, widths) if b > a]
    return min(steps) if steps else 4
