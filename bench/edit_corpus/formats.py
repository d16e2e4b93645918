"""Render a real commit as the answer a model would write, in one of several formats.

Every renderer is deterministic (its random choices come from a seed made of the case
id and the format name) and returns ``None`` when the format cannot say the commit
(e.g. a multi-file diff of a one-file commit, or a change of the final newline, which
SEARCH/REPLACE and whole-file blocks cannot express).  The expected result is always
the commit's real after-text: a sloppy answer (indented too deep, trailing spaces,
blank lines missing, fences around the parts, wrong ``@@`` numbers) still means exactly
that change, so a tool either produces it byte for byte or refuses.

The clean formats are what a careful model writes; the sloppy ones reproduce slips seen
in real answers.  ``units`` are the independently applicable pieces (blocks, hunks) of
each file, so the runner can tell an honest partial application (some pieces applied,
the rest refused) from a wrong write.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.edit_corpus.cases import Case, FileChange

Unit = tuple[int, int, int, int]  # lines [i1, i2) of before became [j1, j2) of after


@dataclass
class Block:
    """One SEARCH/REPLACE block of one file (lines without line ends)."""

    path: str
    search: list[str]
    replace: list[str]
    unit: Unit


@dataclass
class Answer:
    """A model answer for one case, and what applying it must produce."""

    case_id: str
    format: str
    text: str
    before: dict[str, str | None]
    expected: dict[str, str]
    units: dict[str, list[Unit]] = field(default_factory=dict)


def lines_of(text: str | None) -> list[str]:
    """Lines without their ends, split on "\\n" only (a form feed is not a line end)."""
    if not text:
        return []
    parts = text.split("\n")
    return parts[:-1] if text.endswith("\n") else parts


def _final_newline_same(fc: FileChange) -> bool:
    return fc.before is None or fc.before == "" or \
        fc.before.endswith("\n") == fc.after.endswith("\n")


def _count(a: list[str], needle: list[str]) -> int:
    n = len(needle)
    if n == 0:
        return 0
    return sum(1 for i in range(len(a) - n + 1) if a[i] == needle[0] and a[i:i + n] == needle)


@functools.lru_cache(maxsize=64)
def _opcodes(before: str | None, after: str) -> tuple[tuple[str, int, int, int, int], ...]:
    """difflib's opcodes between the files' lines (cached: every format needs them)."""
    sm = difflib.SequenceMatcher(None, lines_of(before), lines_of(after), autojunk=False)
    return tuple(sm.get_opcodes())


def _changes(fc: FileChange) -> list[Unit]:
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in _opcodes(fc.before, fc.after)
            if tag != "equal"]


def _grouped(fc: FileChange, n: int) -> list[list[tuple[str, int, int, int, int]]]:
    sm: difflib.SequenceMatcher[str] = difflib.SequenceMatcher(None, [], [])
    sm.opcodes = list(_opcodes(fc.before, fc.after))  # type: ignore[attr-defined]  # cached
    return list(sm.get_grouped_opcodes(n))


def sr_blocks(fc: FileChange, context: int) -> list[Block]:
    """SEARCH/REPLACE blocks for one file: each change with `context` lines around it
    (0: minimal), grown one line at a time (below, then above) until its SEARCH text
    occurs exactly once in the file and holds a non-blank line; blocks that would touch
    merge, as a model writes one block for nearby changes."""
    a, b = lines_of(fc.before), lines_of(fc.after)
    if fc.before is None:
        return [Block(fc.path, [], b, (0, 0, 0, len(b)))]
    changes = _changes(fc)
    blocks: list[Unit] = []
    k = 0
    while k < len(changes):
        i1, i2, j1, j2 = changes[k]
        k += 1

        def below() -> bool:
            nonlocal i2, j2, k
            if k < len(changes) and changes[k][0] == i2:  # the next change: take it all
                while k < len(changes) and changes[k][0] == i2:
                    i2, j2 = changes[k][1], changes[k][3]
                    k += 1
                return True
            if i2 >= len(a):
                return False
            i2, j2 = i2 + 1, j2 + 1
            return True

        def above() -> bool:
            nonlocal i1, j1
            if i1 == 0:
                return False
            i1, j1 = i1 - 1, j1 - 1
            if blocks and i1 < blocks[-1][1]:  # ran into the previous block: one block
                p = blocks.pop()
                i1, j1 = p[0], p[2]
            return True

        for _ in range(context):
            below()
            above()
        step = 0
        while True:
            search = a[i1:i2]
            if search and any(s.strip() for s in search) and _count(a, search) == 1:
                break
            step += 1
            if not ((below() or above()) if step % 2 else (above() or below())):
                break  # the whole file
        blocks.append((i1, i2, j1, j2))
    return [Block(fc.path, a[i1:i2], b[j1:j2], (i1, i2, j1, j2)) for i1, i2, j1, j2 in blocks]


def _fence_for(lines: list[str]) -> str:
    """A fence longer than any backtick run that opens a line of the content."""
    longest = 2
    for s in lines:
        t = s.lstrip()
        if t.startswith("```"):
            longest = max(longest, len(t) - len(t.lstrip("`")))
    return "`" * (longest + 1)


def _lang(path: str) -> str:
    return "python" if path.endswith(".py") else ""


def _render_sr(block: Block, *, path_in_fence: bool = False,
               wrapped_parts: bool = False) -> str:
    body = block.search + block.replace
    fence = _fence_for(body)
    lang = _lang(block.path)
    if wrapped_parts:
        inner = "```" + lang
        return "\n".join([block.path, "<<<<<<< SEARCH", inner, *block.search, "```",
                          "=======", inner, *block.replace, "```", ">>>>>>> REPLACE"]) + "\n"
    head = [fence + lang, block.path] if path_in_fence else [block.path, fence + lang]
    return "\n".join([*head, "<<<<<<< SEARCH", *block.search, "=======",
                      *block.replace, ">>>>>>> REPLACE", fence]) + "\n"


def _answer(case: Case, fmt: str, parts: list[str], units: dict[str, list[Unit]]) -> Answer:
    text = "Here are the changes.\n\n" + "\n".join(parts) + "\nThat should do it.\n"
    return Answer(case.id, fmt, text, {f.path: f.before for f in case.files},
                  {f.path: f.after for f in case.files}, units)


def _units(blocks: list[Block]) -> dict[str, list[Unit]]:
    out: dict[str, list[Unit]] = {}
    for bl in blocks:
        out.setdefault(bl.path, []).append(bl.unit)
    return out


_MARKER = re.compile(r"^\s*(?:<{5,9}|>{5,9}|={5,9}\s*$)")


def _has_markers(blocks: list[Block]) -> bool:
    """Code that holds SEARCH/REPLACE marker lines (a test of an edit parser, an RST
    underline of 5-9 '='): a block of it cannot be told from its own markers."""
    return any(_MARKER.match(s) for b in blocks for s in b.search + b.replace)


def _all_blocks(case: Case, context: int) -> list[Block] | None:
    if not all(_final_newline_same(f) for f in case.files):
        return None
    blocks = [bl for f in case.files for bl in sr_blocks(f, context)]
    return None if _has_markers(blocks) else blocks


# --- clean SEARCH/REPLACE formats -------------------------------------------------------

def sr_minimal(case: Case, rng: random.Random) -> Answer | None:
    blocks = _all_blocks(case, 0)
    if blocks is None:
        return None
    return _answer(case, "sr_minimal", [_render_sr(b) for b in blocks], _units(blocks))


def sr_context3(case: Case, rng: random.Random) -> Answer | None:
    blocks = _all_blocks(case, 3)
    if blocks is None:
        return None
    return _answer(case, "sr_context3", [_render_sr(b) for b in blocks], _units(blocks))


def sr_path_in_fence(case: Case, rng: random.Random) -> Answer | None:
    blocks = _all_blocks(case, 0)
    if blocks is None:
        return None
    return _answer(case, "sr_path_in_fence",
                   [_render_sr(b, path_in_fence=True) for b in blocks], _units(blocks))


def sr_multi_file(case: Case, rng: random.Random) -> Answer | None:
    """Several files, their blocks interleaved (file A, file B, file A, ...); each
    file's blocks stay in order."""
    if len(case.files) < 2:
        return None
    blocks = _all_blocks(case, 0)
    if blocks is None:
        return None
    queues = [[b for b in blocks if b.path == f.path] for f in case.files]
    order: list[Block] = []
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop(0))
    return _answer(case, "sr_multi_file", [_render_sr(b) for b in order], _units(blocks))


# --- sloppy SEARCH/REPLACE formats ------------------------------------------------------

def _count_keyed(a: list[str], needle: list[str], key: Callable[[list[str]], list[str]]) -> int:
    """Places where needle matches a window of a once both are normalised by key."""
    n = len(needle)
    want = key(needle)
    k0 = next((k for k, s in enumerate(needle) if s.strip()), 0)
    first = needle[k0].strip() if needle else ""
    return sum(1 for i in range(len(a) - n + 1)
               if a[i + k0].strip() == first and key(a[i:i + n]) == want)


def _rstripped(lines: list[str]) -> list[str]:
    return [s.rstrip() for s in lines]


def _dedented(lines: list[str]) -> list[str]:
    """Lines with their common indentation removed (blank lines as empty): equal for
    two windows that differ by one uniform indentation shift."""
    body = [s for s in lines if s.strip()]
    cut = min((len(s) - len(s.lstrip()) for s in body), default=0)
    return [s[cut:].rstrip() if s.strip() else "" for s in lines]


def _context_pairs(search: list[str], replace: list[str]) -> dict[int, int]:
    """replace index -> search index for lines the block keeps unchanged."""
    sm = difflib.SequenceMatcher(None, search, replace, autojunk=False)
    out = {}
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for d in range(i2 - i1):
                out[j1 + d] = i1 + d
    return out


def _before(case: Case, path: str) -> str | None:
    return next(f.before for f in case.files if f.path == path)


def sr_trailing_ws(case: Case, rng: random.Random) -> Answer | None:
    """Trailing spaces or tabs on some SEARCH lines (and on the same lines where REPLACE
    keeps them): the model's copy of the file is noisy, its meaning is not.  None when
    the file holds a SEARCH text twice up to trailing whitespace (then ambiguous)."""
    blocks = _all_blocks(case, 0)
    if blocks is None:
        return None
    noisy = 0
    for bl in blocks:
        if not bl.search:
            continue
        pairs = _context_pairs(bl.search, bl.replace)
        noise = {}
        for i, s in enumerate(bl.search):
            if rng.random() < 0.4:
                noise[i] = rng.choice([" ", "  ", "    ", "\t", " \t"])
        if not noise:
            noise[rng.randrange(len(bl.search))] = " "
        noisy += 1
        if _count_keyed(lines_of(_before(case, bl.path)), bl.search, _rstripped) > 1:
            return None  # the file has the text twice up to trailing spaces: ambiguous
        bl.search = [s + noise.get(i, "") for i, s in enumerate(bl.search)]
        bl.replace = [r + noise.get(pairs[j], "") if j in pairs else r
                      for j, r in enumerate(bl.replace)]
    if not noisy:
        return None
    return _answer(case, "sr_trailing_ws", [_render_sr(b) for b in blocks], _units(blocks))


def _indent_deep(case: Case, fmt: str, prefix: str) -> Answer | None:
    """None when a shifted SEARCH occurs in its file as it stands (the answer would
    then name that other place exactly: ambiguous by construction, not a slip)."""
    blocks = _all_blocks(case, 0)
    if blocks is None or not any(b.search for b in blocks):
        return None
    files = {f.path: lines_of(f.before) for f in case.files}
    for bl in blocks:
        if bl.search:  # a new file's content has no SEARCH to be measured against
            bl.search = [prefix + s if s.strip() else s for s in bl.search]
            bl.replace = [prefix + r if r.strip() else r for r in bl.replace]
            if _count(files[bl.path], bl.search) or \
                    _count_keyed(files[bl.path], bl.search, _dedented) > 1:
                return None  # the shifted text names another place too: ambiguous
    return _answer(case, fmt, [_render_sr(b) for b in blocks], _units(blocks))


def sr_indent_deep(case: Case, rng: random.Random) -> Answer | None:
    """SEARCH and REPLACE both indented 4 spaces more than the file (a block copied
    from inside a class or an indented quote)."""
    return _indent_deep(case, "sr_indent_deep", "    ")


def sr_indent_deep_tab(case: Case, rng: random.Random) -> Answer | None:
    """SEARCH and REPLACE both one tab deeper than the file."""
    return _indent_deep(case, "sr_indent_deep_tab", "\t")


def sr_blank_missing(case: Case, rng: random.Random) -> Answer | None:
    """With git's 3 lines of context: one blank line the block keeps is missing from
    SEARCH (and, half the time, from REPLACE too); blocks that can begin or end with a
    blank file line do.  Only blocks with such a blank line are sloppy; a case with
    none is not rendered."""
    if not all(_final_newline_same(f) for f in case.files):
        return None
    blocks = []
    sloppy = 0
    for f in case.files:
        a = lines_of(f.before)
        file_blocks = sr_blocks(f, 3)
        for n, bl in enumerate(file_blocks):
            if bl.search:
                i1, i2, j1, j2 = bl.unit
                prev_end = file_blocks[n - 1].unit[1] if n else 0
                next_start = file_blocks[n + 1].unit[0] if n + 1 < len(file_blocks) else len(a)
                if bl.search[0].strip() and i1 > prev_end and not a[i1 - 1].strip():
                    bl.search.insert(0, a[i1 - 1])
                    bl.replace.insert(0, a[i1 - 1])
                    bl.unit = (i1 - 1, i2, j1 - 1, j2)
                elif bl.search[-1].strip() and i2 < next_start and not a[i2].strip():
                    bl.search.append(a[i2])
                    bl.replace.append(a[i2])
                    bl.unit = (i1, i2 + 1, j1, j2 + 1)
                pairs = _context_pairs(bl.search, bl.replace)
                # a lone blank line between two unchanged lines: whether the SEARCH
                # lists it or not, it stays (one beside a changed line, or one of a run
                # of blank lines, would be ambiguous: which of them did SEARCH lose?)
                kept_blank = [(j, i) for j, i in pairs.items()
                              if not bl.search[i].strip() and 0 < i < len(bl.search) - 1
                              and pairs.get(j - 1) == i - 1 and pairs.get(j + 1) == i + 1
                              and bl.search[i - 1].strip() and bl.search[i + 1].strip()]
                if kept_blank:
                    j, i = rng.choice(sorted(kept_blank))
                    rest = bl.search[:i] + bl.search[i + 1:]
                    if any(s.strip() for s in rest):
                        bl.search = rest
                        if rng.random() < 0.5:
                            bl.replace = bl.replace[:j] + bl.replace[j + 1:]
                        sloppy += 1
            blocks.append(bl)
    if not sloppy or _has_markers(blocks):
        return None
    return _answer(case, "sr_blank_missing", [_render_sr(b) for b in blocks], _units(blocks))


def sr_fenced_parts(case: Case, rng: random.Random) -> Answer | None:
    """The SEARCH and the REPLACE part each wrapped in their own ``` fence lines."""
    blocks = _all_blocks(case, 0)
    if blocks is None:
        return None
    if any(s.lstrip().startswith("```") for b in blocks for s in b.search + b.replace):
        return None  # fence lines in the code itself: the answer would be ambiguous
    return _answer(case, "sr_fenced_parts",
                   [_render_sr(b, wrapped_parts=True) for b in blocks], _units(blocks))


def _typo_able(line: str) -> bool:
    return sum(ch.isalpha() for ch in line) >= 8


def _typo(line: str, rng: random.Random) -> str:
    """line with two neighbouring letters swapped, or one letter dropped."""
    spots = [k for k in range(len(line) - 1) if line[k].isalpha() and line[k + 1].isalpha()
             and line[k] != line[k + 1]]
    if spots:
        k = rng.choice(spots)
        return line[:k] + line[k + 1] + line[k] + line[k + 2:]
    k = rng.choice([k for k, ch in enumerate(line) if ch.isalpha()])
    return line[:k] + line[k + 1:]


def sr_typo_context(case: Case, rng: random.Random) -> Answer | None:
    """With git's 3 lines of context, one unchanged line of one block copied with a typo
    (in SEARCH and where REPLACE keeps it): the file's real line must stay."""
    blocks = _all_blocks(case, 3)
    if blocks is None:
        return None
    spots = []
    for n, bl in enumerate(blocks):
        for j, i in _context_pairs(bl.search, bl.replace).items():
            if _typo_able(bl.search[i]):
                spots.append((n, i, j))
    if not spots:
        return None
    n, i, j = rng.choice(spots)
    bad = _typo(blocks[n].search[i], rng)
    blocks[n].search[i] = bad
    blocks[n].replace[j] = bad
    return _answer(case, "sr_typo_context", [_render_sr(b) for b in blocks], _units(blocks))


# --- unified diffs ------------------------------------------------------------------------

def _blob_id(text: str | None) -> str:
    if text is None:
        return "0000000"
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:7]


def _range(start: int, length: int) -> str:
    """git's form: 'start,length', 'start' alone when the length is 1, and the line
    before when it is 0."""
    if length == 0:
        return f"{start},0"
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1},{length}"


def diff_hunks(fc: FileChange) -> list[tuple[Unit, list[str]]]:
    """git diff -U3 hunks of one file: (unit, lines after the @@ header)."""
    a, b = lines_of(fc.before), lines_of(fc.after)
    a_open = bool(fc.before) and not fc.before.endswith("\n")  # type: ignore[union-attr]
    b_open = bool(fc.after) and not fc.after.endswith("\n")
    out = []
    for group in _grouped(fc, 3):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        body: list[str] = []
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                for x in range(x1, x2):
                    body.append(" " + a[x])
                    if x == len(a) - 1 and a_open:
                        body.append("\\ No newline at end of file")
                continue
            for x in range(x1, x2):
                body.append("-" + a[x])
                if x == len(a) - 1 and a_open:
                    body.append("\\ No newline at end of file")
            for y in range(y1, y2):
                body.append("+" + b[y])
                if y == len(b) - 1 and b_open:
                    body.append("\\ No newline at end of file")
        out.append(((i1, i2, j1, j2), body))
    return out


def _udiff_file(fc: FileChange, numbers: str, rng: random.Random, git_headers: bool
                ) -> tuple[list[str], list[Unit]]:
    lines: list[str] = []
    if git_headers:
        lines.append(f"diff --git a/{fc.path} b/{fc.path}")
        if fc.before is None:
            lines.append("new file mode 100644")
            lines.append(f"index 0000000..{_blob_id(fc.after)}")
        else:
            lines.append(f"index {_blob_id(fc.before)}..{_blob_id(fc.after)} 100644")
    if fc.before is None:
        lines.append("--- /dev/null")
    else:
        lines.append(f"--- a/{fc.path}" if git_headers else f"--- {fc.path}")
    lines.append(f"+++ b/{fc.path}" if git_headers else f"+++ {fc.path}")
    units = []
    for (i1, i2, j1, j2), body in diff_hunks(fc):
        units.append((i1, i2, j1, j2))
        if numbers == "none":
            lines.append("@@ ... @@")
        else:
            shift = 0
            if numbers == "wrong":
                shift = rng.choice([-1, 1]) * rng.randint(3, 40)
            old_start = max(0, i1 + shift)
            new_start = max(0, j1 + shift + rng.choice([0, 0, 1, -2]) * (numbers == "wrong"))
            lines.append(f"@@ -{_range(old_start, i2 - i1)} +{_range(new_start, j2 - j1)} @@")
        lines.extend(body)
    return lines, units


def _udiff(case: Case, fmt: str, rng: random.Random, *, numbers: str, git_headers: bool,
           one_fence: bool, typo: bool = False) -> Answer | None:
    units: dict[str, list[Unit]] = {}
    chunks: list[list[str]] = []
    for fc in case.files:
        lines, units[fc.path] = _udiff_file(fc, numbers, rng, git_headers)
        chunks.append(lines)
    if typo:  # one context line of one hunk copied with a typo
        spots = [(c, k) for c, lines in enumerate(chunks) for k, line in enumerate(lines)
                 if line.startswith(" ") and _typo_able(line[1:])]
        if not spots:
            return None
        c, k = rng.choice(spots)
        chunks[c][k] = " " + _typo(chunks[c][k][1:], rng)
    if one_fence:
        body = [s for c in chunks for s in c]
        parts = ["\n".join([_fence_for(body) + "diff", *body, _fence_for(body)]) + "\n"]
    else:
        parts = ["\n".join([_fence_for(c) + "diff", *c, _fence_for(c)]) + "\n" for c in chunks]
    return _answer(case, fmt, parts, units)


def udiff_bad_context(case: Case, rng: random.Random) -> Answer | None:
    """`git diff -U3` (one fence, right numbers) where one context line was copied with
    a typo: the file's real line must stay (a context line is never written)."""
    return _udiff(case, "udiff_bad_context", rng, numbers="right", git_headers=True,
                  one_fence=True, typo=True)


def udiff_single(case: Case, rng: random.Random) -> Answer | None:
    """`git diff -U3` of a one-file commit, in a diff fence."""
    if len(case.files) != 1:
        return None
    return _udiff(case, "udiff_single", rng, numbers="right", git_headers=True,
                  one_fence=True)


def udiff_multi(case: Case, rng: random.Random) -> Answer | None:
    """`git diff -U3` of a 2-4 file commit, all in one fence (`diff --git`, `index`)."""
    if len(case.files) < 2:
        return None
    return _udiff(case, "udiff_multi", rng, numbers="right", git_headers=True,
                  one_fence=True)


def _hunks_name_one_place(case: Case) -> bool:
    """Every hunk's old side (context and removed lines) occurs once in its file: what
    a diff without usable line numbers needs to mean one thing.  (With right numbers,
    git places a hunk whose context repeats by its number, so those stay in.)"""
    for fc in case.files:
        a = lines_of(fc.before)
        for _, body in diff_hunks(fc):
            old = [s[1:] for s in body if s[:1] in (" ", "-")]
            if old and _count(a, old) != 1:
                return False
    return True


def udiff_no_numbers(case: Case, rng: random.Random) -> Answer | None:
    """Aider's udiff: `--- path`/`+++ path` and hunks headed `@@ ... @@` (commits whose
    hunks name one place each)."""
    if not _hunks_name_one_place(case):
        return None
    return _udiff(case, "udiff_no_numbers", rng, numbers="none", git_headers=False,
                  one_fence=True)


def udiff_wrong_numbers(case: Case, rng: random.Random) -> Answer | None:
    """git-style diff whose `@@` line numbers are off by 3-40 lines, one fence per file
    (commits whose hunks name one place each: wrong numbers cannot break a tie)."""
    if not _hunks_name_one_place(case):
        return None
    return _udiff(case, "udiff_wrong_numbers", rng, numbers="wrong", git_headers=True,
                  one_fence=False)


# --- whole file ---------------------------------------------------------------------------

def whole_file(case: Case, rng: random.Random) -> Answer | None:
    """Each file in full under its path line."""
    if not all(f.after.endswith("\n") and _final_newline_same(f) for f in case.files):
        return None  # a fence cannot say "no newline at the end"
    if any(_MARKER.match(s) for f in case.files for s in lines_of(f.after)):
        return None  # code holding marker lines reads as SEARCH/REPLACE blocks
    parts = []
    for f in case.files:
        body = lines_of(f.after)
        fence = _fence_for(body)
        parts.append("\n".join([f.path, fence + _lang(f.path), *body, fence]) + "\n")
    units = {f.path: [(0, len(lines_of(f.before)), 0, len(lines_of(f.after)))]
             for f in case.files}
    return _answer(case, "whole_file", parts, units)


Renderer = Callable[[Case, random.Random], "Answer | None"]

FORMATS: dict[str, Renderer] = {
    "sr_minimal": sr_minimal,
    "sr_context3": sr_context3,
    "sr_path_in_fence": sr_path_in_fence,
    "sr_multi_file": sr_multi_file,
    "udiff_single": udiff_single,
    "udiff_multi": udiff_multi,
    "udiff_no_numbers": udiff_no_numbers,
    "whole_file": whole_file,
    "sr_trailing_ws": sr_trailing_ws,
    "sr_indent_deep": sr_indent_deep,
    "sr_indent_deep_tab": sr_indent_deep_tab,
    "sr_blank_missing": sr_blank_missing,
    "sr_fenced_parts": sr_fenced_parts,
    "udiff_wrong_numbers": udiff_wrong_numbers,
    "sr_typo_context": sr_typo_context,
    "udiff_bad_context": udiff_bad_context,
}

# exact-rate goal of issue 17: 99% on what a careful model writes, 95% on the slips
CLEAN = ("sr_minimal", "sr_context3", "sr_path_in_fence", "sr_multi_file", "udiff_single",
         "udiff_multi", "udiff_no_numbers", "whole_file")
SLOPPY = ("sr_trailing_ws", "sr_indent_deep", "sr_indent_deep_tab", "sr_blank_missing",
          "sr_fenced_parts", "udiff_wrong_numbers", "sr_typo_context", "udiff_bad_context")


def render(case: Case, fmt: str) -> Answer | None:
    """The answer for case in format fmt (None: the format cannot say this commit)."""
    return FORMATS[fmt](case, random.Random(f"{case.id}:{fmt}"))
