"""Write an edit found by a tolerant match exactly as its author meant it, or refuse.

Why a three-way merge: a SEARCH text that matched only tolerantly (other indentation,
trailing spaces, a blank line more or less, a typo) is the file *as the model saw it*.
The model's change is SEARCH -> REPLACE; the file differs from SEARCH by the copy
mistakes.  So the file's lines at the match are "ours", SEARCH is the base and REPLACE is
"theirs": the model's change is carried over onto the file's real lines, where

- a line the model left unchanged is written as the *file* has it (byte for byte), so a
  copy mistake, a wrong diff context line or a wrapped fence never overwrites real text;
- a line the model wrote is shifted by exactly the indentation change that made SEARCH
  match (a uniform delta, or spaces <-> tabs at a proven width), with its trailing
  whitespace dropped when the answer's trailing whitespace was shown to be noise;
- where the file differs from SEARCH at a line the model changed, or right next to it,
  nobody can say what the author meant, so the edit is refused with the reason (blank
  lines are the one exception: a blank line the model's copy lacked or added is kept as
  the file has it, and the same blank line inserted by both sides is written once).

The result is either what the author meant or a `PlaceError`; property tests in
tests/core/edits/test_match_properties.py check that over real functions and random
sloppiness.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from core.errors import SparkError


class PlaceError(SparkError):
    """The edit matched, but what to write cannot be proved; the message says why."""


_Op = tuple[str, int, int, int, int]


def _indent(s: str) -> str:
    return s[: len(s) - len(s.lstrip())]


def _blank(s: str) -> bool:
    return not s.strip()


# -- indentation ----------------------------------------------------------------------
@dataclass(frozen=True)
class Shift:
    """How the answer's indentation maps to the file's, proved on the matched lines.

    kind "same": unchanged; "prefix": the answer's indent `src` + x is the file's
    `dst` + x; "spaces"/"tabs": every indent is that character and the file's depth is
    the answer's plus `delta`; "to_tabs": the answer's spaces, `unit` per level, plus
    `delta` columns, are the file's tabs; "to_spaces": the answer's tabs (+ `delta`
    levels) are `unit` spaces each in the file."""

    kind: str
    src: str = ""
    dst: str = ""
    delta: int = 0
    unit: int = 0
    seen: frozenset[str] = frozenset()  # "prefix": the x's the matched lines proved

    def apply(self, ind: str) -> str | None:
        """The file-side indent for an answer indent, or None when it has none."""
        if self.kind == "same":
            return ind
        if self.kind == "prefix":
            if not ind.startswith(self.src):
                return None
            rest = ind[len(self.src):]
            if rest not in self.seen and self.dst and rest and set(self.dst) != set(rest):
                return None  # tabs after spaces or back: a deeper level's width unproved
            return self.dst + rest
        if self.kind in ("spaces", "tabs"):
            ch = " " if self.kind == "spaces" else "\t"
            if ind.strip(ch):
                return None
            depth = len(ind) + self.delta
            return ch * depth if depth >= 0 else None
        if self.kind == "to_tabs":
            if ind.strip(" "):
                return None
            cols = len(ind) + self.delta
            if cols < 0 or cols % self.unit:
                return None
            return "\t" * (cols // self.unit)
        if self.kind == "to_spaces":
            if ind.strip("\t"):
                return None
            levels = len(ind) + self.delta
            return " " * (levels * self.unit) if levels >= 0 else None
        return None


def fit_shift(pairs: Sequence[tuple[str, str]], replace_indents: Sequence[str] = ()
              ) -> list[Shift]:
    """Every transformation that maps each answer indent in `pairs` to its file indent.

    `replace_indents` (the indents of the lines the model wrote) only help to find the
    width of one level when the matched lines show a single level."""
    pairs = list(dict.fromkeys(pairs))
    if all(a == b for a, b in pairs):
        return [Shift("same")]
    out: list[Shift] = []
    a_chars = set("".join(a for a, _ in pairs))
    b_chars = set("".join(b for _, b in pairs))
    if a_chars <= {" "} and b_chars <= {" "}:
        deltas = {len(b) - len(a) for a, b in pairs}
        if len(deltas) == 1:
            out.append(Shift("spaces", delta=deltas.pop()))
    elif a_chars <= {"\t"} and b_chars <= {"\t"}:
        deltas = {len(b) - len(a) for a, b in pairs}
        if len(deltas) == 1:
            out.append(Shift("tabs", delta=deltas.pop()))
    elif a_chars <= {" "} and b_chars <= {"\t"}:
        unit = _unit([len(a) for a, _ in pairs], [len(b) for _, b in pairs],
                     [len(r) for r in replace_indents if not r.strip(" ")])
        if unit:
            deltas = {len(b) * unit - len(a) for a, b in pairs}
            if len(deltas) == 1:
                out.append(Shift("to_tabs", delta=deltas.pop(), unit=unit))
    elif a_chars <= {"\t"} and b_chars <= {" "}:
        unit = _unit([len(b) for _, b in pairs], [len(a) for a, _ in pairs], [])
        if unit:
            ok = all(len(b) % unit == 0 for _, b in pairs)
            deltas = {len(b) // unit - len(a) for a, b in pairs}
            if ok and len(deltas) == 1:
                out.append(Shift("to_spaces", delta=deltas.pop(), unit=unit))
    prefix = _fit_prefix(pairs)
    if prefix is not None:
        out.append(prefix)
    return out


def _unit(cols: list[int], levels: list[int], extra_cols: list[int]) -> int:
    """Columns per level: from two matched levels if there are any, else from the
    steps between the indents the model wrote (0 when nothing proves a width)."""
    by_level: dict[int, set[int]] = {}
    for c, lv in zip(cols, levels):
        by_level.setdefault(lv, set()).add(c)
    if any(len(v) > 1 for v in by_level.values()):
        return 0
    known = sorted((lv, v.pop()) for lv, v in by_level.items())
    if len(known) >= 2:
        (l1, c1), (l2, c2) = known[0], known[-1]
        step, rem = divmod(c2 - c1, l2 - l1)
        return step if step > 0 and not rem else 0
    widths = sorted(set(cols) | set(extra_cols))
    steps = {b - a for a, b in itertools.pairwise(widths) if b > a}
    if not steps:
        return 4 if not extra_cols or set(extra_cols) <= set(cols) else 0
    step = min(steps)
    return step if all(s % step == 0 for s in steps) else 0


def _fit_prefix(pairs: list[tuple[str, str]]) -> Shift | None:
    a0, b0 = min(pairs, key=lambda p: len(p[0]))
    k = 0
    while k < min(len(a0), len(b0)) and a0[len(a0) - 1 - k] == b0[len(b0) - 1 - k]:
        k += 1
    src, dst = a0[: len(a0) - k], b0[: len(b0) - k]
    for a, b in pairs:
        if not (a.startswith(src) and b.startswith(dst) and a[len(src):] == b[len(dst):]):
            return None
    return Shift("prefix", src=src, dst=dst, seen=frozenset(a[len(src):] for a, _ in pairs))


# -- fences -----------------------------------------------------------------------------
FENCE_LINE = re.compile(r"^\s*`{3,}[\w.+-]*\s*$")


def wrapped(lines: Sequence[str]) -> bool:
    """Whether lines begin and end with ``` fence lines (a model wrapped the part)."""
    return len(lines) >= 2 and bool(FENCE_LINE.match(lines[0])) \
        and bool(FENCE_LINE.match(lines[-1]))


def strip_fences(search: list[str], replace: list[str]
                 ) -> tuple[list[str], list[str]] | None:
    """SEARCH and REPLACE without the ``` lines a model wrapped each of them in, or None
    when SEARCH is not wrapped.  PlaceError when SEARCH is wrapped and REPLACE is not
    (then what REPLACE means cannot be told: a fence the file should get, or not)."""
    if not wrapped(search):
        return None
    if not wrapped(replace):
        raise PlaceError("the SEARCH text is wrapped in ``` lines that the file does "
                         "not have, and the REPLACE text is not wrapped the same way; "
                         "what to write cannot be told")
    return search[1:-1], replace[1:-1]


# -- the merge ------------------------------------------------------------------------
def _key(s: str) -> str:
    return s.strip()


@dataclass
class _Span:
    """Where a piece of SEARCH is in the file window: lines [lo, hi)."""

    lo: int
    hi: int


def place(window: Sequence[str], search: Sequence[str], replace: Sequence[str],
          ops: Sequence[_Op] | None = None, *, strict: bool = False) -> list[str]:
    """The lines that replace `window` (the file's lines SEARCH matched) so that the
    model's change SEARCH -> REPLACE is made to the file's real lines.

    `ops` are SEARCH -> REPLACE opcodes when the caller knows them exactly (a diff hunk's
    context and changed lines); otherwise difflib aligns the two.  `strict` (a weak
    match, e.g. found only at a diff's `@@` number) also refuses a file line that differs
    from SEARCH right beside a line the edit changes.  Raises PlaceError."""
    window, search, replace = list(window), list(search), list(replace)
    if window == search:
        return replace
    sw_ops = align([_key(s) for s in search], [_key(w) for w in window])
    pairs: list[tuple[str, str]] = []
    noise: dict[int, str] = {}  # SEARCH line -> trailing whitespace the file lacks there
    for tag, i1, i2, j1, j2 in sw_ops:
        if tag != "equal":
            continue
        for i, (s, w) in enumerate(zip(search[i1:i2], window[j1:j2]), start=i1):
            if not _blank(s):
                pairs.append((_indent(s), _indent(w)))
                tail = s[len(s.rstrip()):]
                if tail and tail != w[len(w.rstrip()):]:
                    noise[i] = tail
    if ops is None:
        # trailing whitespace that was copy noise on a SEARCH line is no change when
        # REPLACE keeps (or drops) it; anywhere else it is (commits strip or add it)
        quiet = {search[i].rstrip() for i in noise}
        ops = align([s.rstrip() if i in noise else s for i, s in enumerate(search)],
                    [r.rstrip() if r.rstrip() in quiet else r for r in replace])
    changes = _split_blank_edges([op for op in ops if op[0] != "equal"], replace)
    written = [ln for _, _, _, j1, j2 in changes for ln in replace[j1:j2] if not _blank(ln)]
    shift = _shift(pairs, [_indent(ln) for ln in written])
    diverge = [op for op in sw_ops if op[0] != "equal"]
    span = _spans(sw_ops, len(search))
    extra = {j for _t, _i1, _i2, l1, l2 in diverge for j in range(l1, l2)}
    used: set[int] = set()  # file-side insertions the model's own insertion matched
    out: list[str] = []
    prov: list[str] = []  # per output line: "w" the file's, "x" the file's that SEARCH
    pos = 0  # lacked, "r" written by the model   (next window line not yet copied: pos)
    risky = _risky_changes(changes, diverge, search, window)
    for c, (_tag, i1, i2, j1, j2) in enumerate(changes):
        lo, hi, keep_w = _target(i1, i2, diverge, span, search, window,
                                 replace[j1:j2], used, strict)
        if lo < pos:
            raise PlaceError("two changes of this edit land on the same lines of the "
                             "file; not applied")
        out.extend(window[pos:lo])
        prov.extend("x" if j in extra else "w" for j in range(pos, lo))
        if keep_w is not None:
            out.extend(keep_w)
            prov.extend("w" * len(keep_w))
        else:
            new = [_denoise(r, noise.get(i1 + k) if i1 + k < i2 else None)
                   for k, r in enumerate(replace[j1:j2])]
            out.extend(_write(new, shift))
            prov.extend(("R" if c in risky else "r") * len(new))
        pos = hi
    out.extend(window[pos:])
    prov.extend("x" if j in extra else "w" for j in range(pos, len(window)))
    _check_blank_runs(out, prov)
    return out


def _risky_changes(changes: list[_Op], diverge: Sequence[_Op], search: list[str],
                   window: list[str]) -> set[int]:
    """Changes in a run of adjacent changes that touches a blank line the file and
    SEARCH disagree on: a blank line such a change writes may be that one."""
    out: set[int] = set()
    group: list[int] = []
    for c in range(len(changes) + 1):
        if c < len(changes) and group and changes[c][1] > changes[group[-1]][2]:
            pass
        elif c < len(changes):
            group.append(c)
            continue
        if group:
            g1, g2 = changes[group[0]][1], changes[group[-1]][2]
            if any(k1 <= g2 and g1 <= k2 and _all_blank(search[k1:k2])
                   and _all_blank(window[l1:l2]) for _t, k1, k2, l1, l2 in diverge):
                out.update(group)
        group = [c] if c < len(changes) else []
    return out


def _check_blank_runs(out: list[str], prov: list[str]) -> None:
    """Refuse a run of blank lines made of both blank lines the model wrote and blank
    lines of the file its SEARCH lacked: how many the author meant there cannot be
    told (the model's blank line may be the file's one, or one more)."""
    kinds: set[str] = set()
    for line, p in [*zip(out, prov), ("x", "w")]:
        if _blank(line):
            kinds.add(p)
            continue
        if {"x", "r"} <= kinds or {"x", "R"} <= kinds or ("R" in kinds and len(kinds) > 1):
            raise PlaceError("the edit writes blank lines next to blank lines of the "
                             "file that its SEARCH text left out; how many blank lines "
                             "it means there cannot be told, so it is not applied")
        kinds = set()


def align(a: Sequence[str], b: Sequence[str]) -> list[_Op]:
    """difflib opcodes from a to b (keys; "" is a blank line) that pair non-blank lines
    first and treat each run of blank lines between them as one unit: a run that differs
    only in length is equal up to the shorter length, and the extra blank lines are
    inserted or deleted at the run's *end*.

    Why: difflib pairs blank lines arbitrarily (it may even move a code line across a
    blank one instead), so the blank line a SEARCH lost and the one its REPLACE keeps
    would land on different sides of the run and be written twice; at one canonical
    place, both sides' blank line is the same one."""
    ia = [i for i, k in enumerate(a) if k]
    ib = [j for j, k in enumerate(b) if k]
    sm = difflib.SequenceMatcher(None, [a[i] for i in ia], [b[j] for j in ib],
                                 autojunk=False)
    out: list[_Op] = []

    def emit(tag: str, i1: int, i2: int, j1: int, j2: int) -> None:
        if i1 == i2 and j1 == j2:
            return
        if out and out[-1][0] == tag == "equal":
            out[-1] = ("equal", out[-1][1], i2, out[-1][3], j2)
        else:
            out.append((tag, i1, i2, j1, j2))

    def blanks(i1: int, i2: int, j1: int, j2: int) -> None:
        k = min(i2 - i1, j2 - j1)
        emit("equal", i1, i1 + k, j1, j1 + k)
        if i2 - i1 > k:
            emit("delete", i1 + k, i2, j1 + k, j1 + k)
        elif j2 - j1 > k:
            emit("insert", i1 + k, i1 + k, j1 + k, j2)

    def region(i1: int, i2: int, j1: int, j2: int) -> None:
        """a[i1:i2] -> b[j1:j2], with no paired non-blank line inside."""
        if not any(a[i1:i2]) and not any(b[j1:j2]):
            blanks(i1, i2, j1, j2)
            return
        la = next((k for k in range(i1, i2) if a[k]), i2)  # end of leading blank run
        lb = next((k for k in range(j1, j2) if b[k]), j2)
        ta = next((k + 1 for k in range(i2 - 1, i1 - 1, -1) if a[k]), i1)  # trailing
        tb = next((k + 1 for k in range(j2 - 1, j1 - 1, -1) if b[k]), j1)
        s1, r1 = i1, j1
        if la > i1 and lb > j1:
            blanks(i1, la, j1, lb)
            s1, r1 = la, lb
        ta, tb = max(ta, s1), max(tb, r1)
        trail = ta < i2 and tb < j2
        e1, e2 = (ta, tb) if trail else (i2, j2)
        kind = "replace" if e1 > s1 and e2 > r1 else "delete" if e1 > s1 else "insert"
        emit(kind, s1, e1, r1, e2)
        if trail:
            blanks(ta, i2, tb, j2)

    pa = pb = 0
    for x, y, size in sm.get_matching_blocks():
        for k in range(size):
            i, j = ia[x + k], ib[y + k]
            region(pa, i, pb, j)
            emit("equal", i, i + 1, j, j + 1)
            pa, pb = i + 1, j + 1
    region(pa, len(a), pb, len(b))
    return out


def _split_blank_edges(changes: list[_Op], replace: list[str]) -> list[_Op]:
    """Blank lines at the edges of a change become insertions of their own, so a blank
    line the model's REPLACE has and its SEARCH lacked meets the same blank line in the
    file (written once) instead of doubling it."""
    out: list[_Op] = []
    for tag, i1, i2, j1, j2 in changes:
        if i1 == i2:
            out.append((tag, i1, i2, j1, j2))
            continue
        lead = j1
        while lead < j2 and _blank(replace[lead]):
            lead += 1
        trail = j2
        while trail > lead and _blank(replace[trail - 1]):
            trail -= 1
        if lead > j1:
            out.append(("insert", i1, i1, j1, lead))
        out.append(("replace" if trail > lead else "delete", i1, i2, lead, trail))
        if trail < j2:
            out.append(("insert", i2, i2, trail, j2))
    return out


def _shift(pairs: list[tuple[str, str]], written: list[str]) -> Shift:
    if not pairs:
        return Shift("same")
    fits = fit_shift(pairs, written)
    if not fits:
        raise PlaceError("the SEARCH text's indentation differs from the file's unevenly "
                         "(not one shift for all lines); the new lines' indentation "
                         "cannot be told")
    for f in sorted(fits, key=lambda f: f.kind == "prefix"):
        if all(f.apply(i) is not None for i in written):
            return f
    return fits[0]


def _spans(sw_ops: Sequence[_Op], n: int) -> tuple[list[_Span], list[_Span]]:
    """For each SEARCH line its window span (the whole block for lines the file has
    otherwise), and for each gap (before line i, i = 0..n) the window lines the file has
    there that SEARCH lacks (an empty span at the right place when none)."""
    lines = [_Span(0, 0) for _ in range(n)]
    gaps: list[_Span | None] = [None] * (n + 1)
    for tag, i1, i2, j1, j2 in sw_ops:
        if tag == "insert":
            gaps[i1] = _Span(j1, j2)
            continue
        if gaps[i1] is None:
            gaps[i1] = _Span(j1, j1)
        for k in range(i1, i2):
            if tag == "equal":
                lines[k] = _Span(j1 + k - i1, j1 + k - i1 + 1)
                if k > i1:
                    gaps[k] = _Span(j1 + k - i1, j1 + k - i1)
            else:
                lines[k] = _Span(j1, j2)
                if k > i1:
                    gaps[k] = _Span(j1, j1)
        gaps[i2] = _Span(j2, j2)
    return lines, [g if g is not None else _Span(0, 0) for g in gaps]


def _all_blank(lines: Sequence[str]) -> bool:
    return all(_blank(s) for s in lines)


def _target(i1: int, i2: int, diverge: Sequence[_Op],
            span: tuple[list[_Span], list[_Span]], search: list[str], window: list[str],
            new: list[str], used: set[int], strict: bool = False
            ) -> tuple[int, int, list[str] | None]:
    """The window lines [lo, hi) that the model's change of SEARCH[i1:i2] replaces, and
    the lines to keep instead of the new ones when the file already has them."""
    lines, gaps = span
    for d, (_tag, k1, k2, l1, l2) in enumerate(diverge):
        if d in used:
            if i1 == i2 == k1 == k2 and not _all_blank(new):
                # the model splits a blank run the file has longer than SEARCH: which
                # side of its new lines gets the file's extra blank line is unknown
                raise PlaceError(_conflict(window, l1, l2, "where the edit inserts"))
            continue
        harmless = _all_blank(search[k1:k2]) and _all_blank(window[l1:l2])
        if strict and not harmless and k1 <= i2 and i1 <= k2:
            raise PlaceError(_conflict(window, l1, l2, "right beside the lines the edit "
                                                       "changes (a weak match)"))
        if i1 == i2:  # the model inserts at gap i1
            if k1 == k2 == i1:
                if [_key(s) for s in new] == [_key(w) for w in window[l1:l2]]:
                    used.add(d)
                    return l1, l2, window[l1:l2]  # both sides added the same lines
                raise PlaceError(_conflict(window, l1, l2, "where the edit inserts"))
            if k1 < i1 < k2:
                raise PlaceError(_conflict(window, l1, l2, "where the edit inserts"))
            continue
        if k1 == k2:  # the file has lines at gap k1 that SEARCH lacks
            if i1 < k1 < i2 and not harmless:
                raise PlaceError(_conflict(window, l1, l2, "inside the lines the edit "
                                                           "changes"))
            edge = None if not new else (search[i1], new[0]) if k1 == i1 else \
                (search[i2 - 1], new[-1]) if k1 == i2 else None
            if edge is not None and not _same_line(*edge):
                # the new lines at that edge are not the old edge line changed: whether
                # they go before or after the file's extra blank line cannot be told
                raise PlaceError(_conflict(window, l1, l2, "right beside the lines the "
                                                           "edit changes"))
            continue
        if k1 < i2 and i1 < k2:
            if not harmless:
                raise PlaceError(_conflict(window, l1, l2, "at a line the edit changes"))
            if k1 < i1 or i2 < k2:
                raise PlaceError(_conflict(window, l1, l2, "across the edit's edge"))
    if i1 == i2:
        at = gaps[i1].hi
        for d in used:  # the file's lines there were written already (see above)
            if diverge[d][1] == diverge[d][2] == i1:
                at = max(at, diverge[d][4])
        return at, at, None
    lo, hi = lines[i1].lo, lines[i2 - 1].hi
    if hi < lo:
        raise PlaceError("the edit's lines are in another order in the file; not applied")
    return lo, hi, None


def _same_line(old: str, new: str) -> bool:
    """Whether `new` reads as `old` edited (not a different line put in its place)."""
    if _blank(old) or _blank(new):
        return _blank(old) == _blank(new)
    return fuzz.ratio(old.strip(), new.strip()) >= 60


def _conflict(window: list[str], lo: int, hi: int, where: str) -> str:
    shown = "; ".join(repr(w.strip()[:60]) for w in window[lo:hi][:2]) or "a line"
    return (f"the file differs from the SEARCH text {where} (file has {shown}); what the "
            f"edit means there cannot be told, so it is not applied")


def _denoise(line: str, tail: str | None) -> str:
    """A changed line without the trailing whitespace its SEARCH twin had and the file
    does not (the model's copy noise carried onto the edited line)."""
    return line[: len(line) - len(tail)] if tail and line.endswith(tail) else line


def _write(new: list[str], shift: Shift) -> list[str]:
    out = []
    for s in new:
        if _blank(s):  # whitespace-only: no indentation to shift, written as is
            out.append(s)
            continue
        ind = _indent(s)
        to = shift.apply(ind)
        if to is None:
            raise PlaceError(f"a REPLACE line ({s.strip()[:60]!r}) is indented in a way "
                             f"the indentation shift that matched the SEARCH text cannot "
                             f"carry over to the file; not applied")
        out.append(to + s[len(ind):])
    return out


def hunk_opcodes(ops: Sequence[tuple[str, str]]) -> list[_Op]:
    """SEARCH -> REPLACE opcodes of a diff hunk from its tagged lines (" "/"=" context,
    "-" removed, "+" added): context lines are then known exactly, never guessed."""
    out: list[_Op] = []
    i = j = 0
    for tag, _line in ops:
        kind = "equal" if tag in (" ", "=") else "delete" if tag == "-" else "insert"
        di, dj = (1, 1) if kind == "equal" else (1, 0) if kind == "delete" else (0, 1)
        if out and (out[-1][0] == kind or (kind != "equal" and out[-1][0] != "equal")):
            t, i1, _i2, j1, _j2 = out[-1]
            merged = kind if t == kind else "replace"
            out[-1] = (merged, i1, i + di, j1, j + dj)
        else:
            out.append((kind, i, i + di, j, j + dj))
        i, j = i + di, j + dj
    return out
