"""Locate a SEARCH text in a file: exactly, then loosely, then fuzzily; never a guess.

Why tiers: models copy existing lines almost, not quite, exactly (lost trailing
spaces, another indent level, a blank line more or less, a typo).  Each looser tier is
tried only when the stricter one finds nothing, and several places is an error (unless
the caller's tie-break, a diff's `@@` line number or "the one place the model saw",
names one).  This module only says *where*; core/edits/place.py decides *what* to
write there, and refuses when a loose match cannot be carried over to the REPLACE text.

Tiers:
- "exact": the lines as written;
- "loose": the non-blank lines equal after normalising whitespace (indentation,
  trailing and inner runs), blank lines anywhere in between on either side;
- "fuzzy": rapidfuzz similarity of the non-blank lines >= FUZZY_THRESHOLD with no
  rival place within FUZZY_MARGIN, only for SEARCH texts of FUZZY_MIN_LINES to
  FUZZY_MAX_CHARS; candidate places are chosen by lines found verbatim, so the cost is
  bounded whatever the file size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from core.errors import SparkError

FUZZY_THRESHOLD = 0.88  # similarity a window must reach to count as the match
FUZZY_MIN_LINES = 3  # fewer non-blank SEARCH lines: too little to tell places apart
FUZZY_MARGIN = 0.05  # a rival window this close to the best makes the match ambiguous
FUZZY_MAX_CHARS = 20_000  # longer SEARCH texts must match exactly or loosely
MAX_CANDIDATES = 24  # windows scored in full by the fuzzy tier
_PROBE_CHARS = 500  # a line is compared by its first characters only (minified files)


@dataclass(frozen=True)
class Match:
    """Lines [start, end) of the file (0-based) that the search text denotes."""

    start: int
    end: int
    how: str  # "exact" | "loose" | "fuzzy" | "hinted" (fuzzy, at a diff's @@ number)
    score: float = 1.0


class MatchError(SparkError):
    """No match, or several: the message names the file and shows the closest lines."""


# picks one of several (start, end) hits, given the tier's name; None: still ambiguous
TieBreak = Callable[[list[tuple[int, int]], str], "tuple[int, int] | None"]


def split_lines(text: str) -> list[str]:
    """Lines without their line ends (a final newline does not make an empty line)."""
    return text.splitlines()


def norm(s: str) -> str:
    """A line with its whitespace runs collapsed and ends stripped (the loose key)."""
    t = s.strip()
    return t if "  " not in t and "\t" not in t else " ".join(t.split())


def find_exact(lines: Sequence[str], needle: Sequence[str]) -> list[int]:
    """Starts of every place `needle` occurs verbatim in `lines`."""
    n = len(needle)
    if n == 0 or n > len(lines):
        return []
    first, i = needle[0], 0
    hits: list[int] = []
    last = len(lines) - n
    lines = list(lines) if not isinstance(lines, list) else lines
    needle = list(needle)
    while True:
        try:
            i = lines.index(first, i, last + 1)
        except ValueError:
            return hits
        if lines[i:i + n] == needle:
            hits.append(i)
        i += 1


class LooseIndex:
    """The file's non-blank lines, normalised, with their line numbers (built once per
    state of the file: callers that match several edits keep it until they write).

    Built on first use: a SEARCH found exactly (most of them) never reads it, and
    building it for a 2,500-line file is ~1.5 ms of the rebuild thread's GIL per block
    while an answer streams."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._built: tuple[list[int], list[str]] | None = None

    @property
    def index(self) -> list[int]:
        """Line number of each non-blank line."""
        return self._build()[0]

    @property
    def keys(self) -> list[str]:
        """Each non-blank line stripped, its inner runs of whitespace made one space."""
        return self._build()[1]

    def _build(self) -> tuple[list[int], list[str]]:
        if self._built is None:
            index: list[int] = []
            keys: list[str] = []
            for i, s in enumerate(self.lines):
                t = s.strip()
                if t:
                    index.append(i)
                    keys.append(t if "  " not in t and "\t" not in t else " ".join(t.split()))
            self._built = (index, keys)
        return self._built

    def window(self, k: int, n: int, search: Sequence[str]) -> tuple[int, int]:
        """File lines of non-blank lines k..k+n, widened over as many blank lines as
        SEARCH has before and after its first and last non-blank lines."""
        start, end = self.index[k], self.index[k + n - 1] + 1
        lead = next((i for i, s in enumerate(search) if s.strip()), 0)
        trail = next((i for i, s in enumerate(reversed(search)) if s.strip()), 0)
        while lead and start > 0 and not self.lines[start - 1].strip():
            start, lead = start - 1, lead - 1
        while trail and end < len(self.lines) and not self.lines[end].strip():
            end, trail = end + 1, trail - 1
        return start, end


def find(lines: Sequence[str], search: Sequence[str], *, path: str = "?",
         threshold: float = FUZZY_THRESHOLD, tiebreak: TieBreak | None = None,
         exact_only: bool = False, index: LooseIndex | None = None,
         shifted_answer: bool = True,
         written: Callable[[int, int], bool] | None = None,
         shift: int | None = None, hint: int | None = None) -> Match:
    """Find `search` in `lines`; raise MatchError naming `path` when it is not unique.

    `shifted_answer`: the answer shows an indentation shift somewhere (see
    `shows_indent_shift`), so a SEARCH found exactly is not trusted where the same lines
    also stand at another indentation, if it is short or found only on lines that
    `written(start, end)` says an earlier edit of the answer wrote.  `shift`: the
    answer's one indentation shift (see `indent_shifts`), which picks the one place at
    that shift among several.  `hint`: where a diff hunk's `@@` number says the text
    starts; a SEARCH too short or too different to match fuzzily anywhere is still
    taken there when it is HINT_THRESHOLD similar (as `git apply` applies a hunk at its
    number with some context lines wrong; what is written is then checked line by line
    by core/edits/place.py)."""
    hits = [(h, h + len(search)) for h in find_exact(lines, search)]
    needle = [norm(s) for s in search if s.strip()]
    if hits:
        doubtful = len(needle) < FUZZY_MIN_LINES or (
            written is not None and any(written(a, b) for a, b in hits))
        if needle and doubtful and not exact_only and shifted_answer:
            twins = _shifted_twins(hits, lines, search, needle, index)
            if twins:
                chosen = _by_shift([*hits, *twins], lines, search, shift) or (
                    tiebreak([*hits, *twins], "loose") if tiebreak else None)
                if chosen is None:
                    where = ", ".join(str(w[0] + 1) for w in twins[:5])
                    raise MatchError(
                        f"{path}: the SEARCH text is at line {hits[0][0] + 1} exactly, but "
                        f"also at line(s) {where} with other indentation, and this answer "
                        f"is indented off elsewhere: which one is meant cannot be told "
                        f"(the exact one may be the wrong one); add more surrounding lines")
                return Match(chosen[0], chosen[1], "exact" if chosen in hits else "loose")
        return _one(hits, "exact", lines, search, path, tiebreak)
    if exact_only:
        raise MatchError(f"{path}: SEARCH text not found exactly")
    if not needle:
        raise MatchError(f"{path}: the SEARCH text is only blank lines and is not in the "
                         f"file as written; it names no place")
    loose = index if index is not None else LooseIndex(lines)
    starts = find_exact(loose.keys, needle)
    if starts:
        hits = [loose.window(k, len(needle), search) for k in starts]
        if len(hits) > 1:  # the places whose lines differ only in trailing whitespace
            bare = [s.rstrip() for s in search]
            close = [(a, b) for a, b in hits
                     if [x.rstrip() for x in lines[a:b]] == bare]
            if len(close) == 1:
                return Match(close[0][0], close[0][1], "loose")
            at = _by_shift(hits, lines, search, shift)
            if at is not None:
                return Match(at[0], at[1], "loose")
        return _one(hits, "loose", lines, search, path, tiebreak)
    at_hint = _at_hint(lines, search, needle, hint)
    if len(needle) < FUZZY_MIN_LINES or sum(map(len, needle)) > FUZZY_MAX_CHARS:
        if at_hint is not None:
            return at_hint
        raise MatchError(_not_found(path, lines, search, _closest_line(lines, search)))
    scored = _fuzzy(loose, needle)
    best = scored[0] if scored else None
    if best is None or best[0] < threshold:
        if at_hint is not None:
            return at_hint
        raise MatchError(_not_found(path, lines, search, best and (
            best[0], loose.index[best[1]], best[2])))
    rivals = [t for t in scored[1:] if t[0] >= best[0] - FUZZY_MARGIN
              and (t[1] >= best[1] + best[2] or t[1] + t[2] <= best[1])]
    places = [(sc, loose.window(k, n, search)) for sc, k, n in [best] + rivals]
    if rivals:
        chosen = tiebreak([w for _, w in places], "fuzzy") if tiebreak else None
        if chosen is None:
            raise MatchError(_ambiguous(
                path, search, [w[0] for _, w in places], lines,
                f"{best[0]:.0%} and {rivals[0][0]:.0%} similar"))
        score = next(sc for sc, w in places if w == chosen)
        return Match(chosen[0], chosen[1], "fuzzy", score)
    start, end = places[0][1]
    return Match(start, end, "fuzzy", best[0])


def _shifted_twins(hits: list[tuple[int, int]], lines: Sequence[str],
                   search: Sequence[str], needle: list[str], index: LooseIndex | None
                   ) -> list[tuple[int, int]]:
    """Places where a short SEARCH text found exactly also stands at another
    indentation: an answer indented one level off (common) matches the wrong place
    exactly there, so exactness proves nothing and the caller must not pick."""
    loose = index if index is not None else LooseIndex(lines)
    starts = find_exact(loose.keys, needle)
    if len(starts) <= len(hits):
        return []
    s_ind = [len(s) - len(s.lstrip()) for s in search if s.strip()]
    twins = []
    for k in starts:
        w = loose.window(k, len(needle), search)
        if any(h[0] <= loose.index[k] < h[1] for h in hits):
            continue
        f_ind = [len(x) - len(x.lstrip()) for x in lines[w[0]:w[1]] if x.strip()]
        if len({f - s for f, s in zip(f_ind, s_ind)}) == 1:
            twins.append(w)
    return twins


def indent_shifts(lines: Sequence[str], searches: Sequence[Sequence[str]]) -> set[int]:
    """The uniform indentation shifts (file columns minus SEARCH columns, nonzero) at
    which SEARCH texts that are not in the file as written are found: evidence that
    the answer is indented off, and by how much."""
    index: LooseIndex | None = None
    found: set[int] = set()
    for search in searches:
        needle = [norm(s) for s in search if s.strip()]
        if not needle or find_exact(lines, search):
            continue
        index = index or LooseIndex(lines)
        for k in find_exact(index.keys, needle):
            delta = _delta(lines, index.index[k:k + len(needle)], search)
            if delta:
                found.add(delta)
    return found


def shows_indent_shift(lines: Sequence[str], searches: Sequence[Sequence[str]]) -> bool:
    """Whether some SEARCH text is in the file only at a uniformly shifted indentation."""
    return bool(indent_shifts(lines, searches))


def _delta(lines: Sequence[str], at: Sequence[int], search: Sequence[str]) -> int | None:
    """File indent minus SEARCH indent, when the same for every non-blank line."""
    s_ind = [len(s) - len(s.lstrip()) for s in search if s.strip()]
    got = {len(lines[i]) - len(lines[i].lstrip()) - a for i, a in zip(at, s_ind)}
    return got.pop() if len(got) == 1 else None


def _by_shift(hits: list[tuple[int, int]], lines: Sequence[str], search: Sequence[str],
              shift: int | None) -> tuple[int, int] | None:
    """The one hit at the answer's known indentation shift, if exactly one is."""
    if shift is None:
        return None
    at = [h for h in hits
          if _delta(lines, [i for i in range(h[0], h[1]) if lines[i].strip()], search)
          == shift]
    return at[0] if len(at) == 1 else None


HINT_THRESHOLD = 0.6  # similarity a window at a diff's @@ number needs to be taken


def _at_hint(lines: Sequence[str], search: Sequence[str], needle: list[str],
             hint: int | None) -> Match | None:
    """The window a diff hunk's `@@` number names, when it is similar enough."""
    if hint is None or hint < 0 or hint + len(search) > len(lines) or len(needle) > 400:
        return None
    window = [norm(x) for x in lines[hint:hint + len(search)] if x.strip()]
    score = fuzz.ratio("\n".join(needle), "\n".join(window)) / 100
    if score < HINT_THRESHOLD:
        return None
    return Match(hint, hint + len(search), "hinted", score)


def _one(hits: list[tuple[int, int]], how: str, lines: Sequence[str],
         search: Sequence[str], path: str, tiebreak: TieBreak | None) -> Match:
    if len(hits) == 1:
        return Match(hits[0][0], hits[0][1], how)
    chosen = tiebreak(hits, how) if tiebreak else None
    if chosen is None:
        raise MatchError(_ambiguous(path, search, [h for h, _ in hits], lines))
    return Match(chosen[0], chosen[1], how)


def _fuzzy(loose: LooseIndex, needle: list[str]) -> list[tuple[float, int, int]]:
    """(score, first non-blank index, length) of the scored windows, best first."""
    keys = loose.keys
    n = len(needle)
    if not keys:
        return []
    target = "\n".join(s[:_PROBE_CHARS] for s in needle)
    scored: list[tuple[float, int, int]] = []
    seen: set[tuple[int, int]] = set()

    def score(start: int, length: int, cutoff: float) -> None:
        if length < 1 or start < 0 or start + length > len(keys) \
                or (start, length) in seen:
            return
        seen.add((start, length))
        text = "\n".join(s[:_PROBE_CHARS] for s in keys[start:start + length])
        got = fuzz.ratio(target, text, score_cutoff=cutoff * 100) / 100
        if got:
            scored.append((got, start, length))

    bases = sorted(_candidates(keys, needle))
    for base in bases:  # first pass: each candidate as voted
        score(base, n, 0.5)
    if not scored:
        return []
    floor = max(0.5, max(t[0] for t in scored) - 2 * FUZZY_MARGIN - 0.05)
    for _sc, base, _ln in [t for t in scored if t[0] >= floor]:
        for start in (base - 1, base, base + 1):  # then its neighbours and lengths
            for length in (n - 1, n, n + 1):
                score(start, length, floor)
    scored.sort(key=lambda t: (-t[0], abs(t[2] - n), t[1]))
    return scored


def _candidates(keys: list[str], needle: list[str]) -> set[int]:
    """Window starts worth scoring: voted for by SEARCH lines found verbatim (after
    normalising), else near the lines most similar to the first and last SEARCH lines."""
    wanted = set(needle)
    where: dict[str, list[int]] = {}
    for i, s in enumerate(keys):
        if s in wanted:
            where.setdefault(s, []).append(i)
    votes: dict[int, int] = {}
    for j, t in enumerate(needle):
        for i in where.get(t, ())[:200]:  # a line repeated everywhere votes for nothing
            votes[i - j] = votes.get(i - j, 0) + 1
    if votes:
        ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_CANDIDATES]
        return {max(0, start) for start, _ in ranked}
    starts: set[int] = set()
    probes = [k[:_PROBE_CHARS] for k in keys]
    for j in sorted({0, len(needle) - 1}):
        got = process.extract(needle[j][:_PROBE_CHARS], probes, scorer=fuzz.ratio,
                              limit=MAX_CANDIDATES // 2, score_cutoff=60)
        for _line, _score, i in got:
            starts.add(max(0, i - j))
    return starts


def _closest_line(lines: Sequence[str], search: Sequence[str]
                  ) -> tuple[float, int, int] | None:
    """A cheap guess at where a SEARCH text too small or too big to match fuzzily was
    meant to go, from its first non-blank line, for the error message."""
    probe = next((s.strip()[:_PROBE_CHARS] for s in search if s.strip()), "")
    if not probe or not lines:
        return None
    got = process.extractOne(probe, [s.strip()[:_PROBE_CHARS] for s in lines[:20000]],
                             scorer=fuzz.ratio, score_cutoff=30)
    if got is None:
        return None
    _line, score, i = got
    return score / 100, i, min(len(search), len(lines) - i)


def _excerpt(lines: Sequence[str], start: int, length: int) -> str:
    lo, hi = max(0, start), min(len(lines), start + max(length, 1))
    return "\n".join(f"  {i + 1:>5} | {_clip(lines[i])}" for i in range(lo, hi))


def _clip(line: str, width: int = 200) -> str:
    """A line short enough for an error message (a minified file has 100 KB lines)."""
    return line if len(line) <= width else line[:width] + f"... ({len(line):,} chars)"


def _ambiguous(path: str, search: Sequence[str], hits: list[int],
               lines: Sequence[str] | None = None, how: str = "") -> str:
    where = ", ".join(str(h + 1) for h in hits[:8])
    msg = (f"{path}: the SEARCH text matches {len(hits)} places (lines {where})"
           f"{' ' + how if how else ''}; add more surrounding lines so it names one place")
    if lines:
        n = min(len(search), 3)
        for h in hits[:3]:
            msg += f"\n  at line {h + 1}:\n{_excerpt(lines, h, n)}"
    return msg


def _not_found(path: str, lines: Sequence[str], search: Sequence[str],
               best: tuple[float, int, int] | None) -> str:
    head = f"{path}: SEARCH text not found"
    if best is None:
        first = next((s for s in search if s.strip()), "")
        return f"{head} (nothing similar; first SEARCH line: {_clip(first)!r})"
    score, start, length = best
    return (f"{head}; closest lines ({score:.0%} similar):\n"
            f"{_excerpt(lines, start, length)}")
