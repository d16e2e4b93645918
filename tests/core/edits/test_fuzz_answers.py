"""Fuzz: random valid and corrupted answers against a small random tree.

The oracle: each answer is generated from known edits (every block's `intended` and
`more`), so the parser must return exactly those or refuse them; never a different file,
never different lines.  Whatever the answer: the parser never raises and streams like the
whole text, and CRLF line ends change nothing; every parsed edit is one the answer really
held (a corrupted block never turns into some other edit or another file's edit); with
nothing lost from the answer (no line dropped or cut), every edit it holds is parsed or
refused with an error naming its file; building and applying never raise; every edit is
applied or refused with a message naming its file, and the one edit to a file lands
exactly (an exact, unique SEARCH on the lines it names, a whole file as given); what is
written is exactly what was proposed; files not written are byte-identical; nothing
outside the root (or in .git/) changes.

Two generators: `answers` (the first: S/R, diffs, whole files, few shapes) and
`model_answers` (what models write: fences of 3-5 backticks or tildes, paths before,
inside or in the info string, blocks that reuse the previous path, git diffs with context
and right numbers, new files by diff, tabs, trailing spaces, unicode, a SEARCH that
appears twice, prose that names files or markers, stray and lost fence lines, mixed line
ends).  150 examples each by default; SPARK_PROPERTY_SCALE=100 for a soak run.  What the
soak runs found is pinned in test_fuzz_found.py.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.edits.parser import Edit, StreamingParser, clean_path
from core.edits.proposal import apply_proposal, build_proposal
from core.workspace.files import FileFormat, Workspace, WorkspaceError, decode, encode

# SPARK_PROPERTY_SCALE=100 runs a hundred times the examples (a soak run, not for CI)
SCALE = int(os.environ.get("SPARK_PROPERTY_SCALE", "1"))
# The model-shaped generator still finds known open parser cases (a ````python fence whose
# opening line was lost, a ```diff inside it, then a block with no path: it goes to the
# earlier file; ~1 run in 6 of 150 random examples hit one). So that test explores new
# examples only when asked (SPARK_FUZZ_EXPLORE=1, or a soak with SPARK_PROPERTY_SCALE > 1);
# in `make test` it runs the same derandomized examples every time, as CI does.
EXPLORE = bool(os.environ.get("SPARK_FUZZ_EXPLORE")) or SCALE > 1

WORDS = ["x = 1", "y = 2", "return x", "pass", "def f():", "    return 1", "", "# note",
         "if a:", "    b()", "for i in r:", "    total += i", "print(total)", "z = x + y"]
NAMES = ["a.py", "b.py", "pkg/c.py", "d.txt"]
HOSTILE = ["../outside/o.py", "/etc/hosts", "~/x.py", ".git/config", "out_link/o.py",
           "out_file.py", ".spark/j.json", "pkg", "A.PY"]
MARKERS = ("<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "```", "~~~", "--- ", "+++ ",
           "@@")


@dataclass
class Block:
    text: str
    intended: tuple[str, str, str] | None  # (path, search, replace) it means, if valid
    exact: bool  # an exact, unique, non-overlapping SEARCH into an existing file
    more: tuple[tuple[str, str, str], ...] = ()  # further edits it means (diff hunks)
    own_path: bool = True  # names its file (False: it relies on the block before it)
    whole: bool = False  # a whole-file block


lines_st = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12)


@st.composite
def trees(draw):
    files = {}
    for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True)):
        body = "\n".join(draw(lines_st))
        files[name] = body + ("\n" if body and draw(st.booleans()) else "")
    return files


@st.composite
def blocks(draw, files: dict[str, str]):
    kind = draw(st.sampled_from(["sr", "sr", "sr", "udiff", "whole"]))
    path = draw(st.sampled_from(sorted(files) + ["new.py", "pkg/new2.py"] + HOSTILE))
    old = files.get(path, "").splitlines()
    new = draw(lines_st)
    if old and draw(st.integers(0, 3)):
        i = draw(st.integers(0, len(old) - 1))
        j = draw(st.integers(i + 1, min(len(old), i + 4)))
        search = old[i:j]
        if draw(st.integers(0, 4)) == 0:  # a model's typo
            k = draw(st.integers(0, len(search) - 1))
            search = search[:k] + [search[k] + " #typo"] + search[k + 1:]
    else:
        search = [] if draw(st.booleans()) else draw(lines_st)
    s_txt = "".join(x + "\n" for x in search)
    r_txt = "".join(x + "\n" for x in new)
    if kind == "whole":
        text = f"{path}\n```python\n{r_txt}```\n"
        return Block(text, (path, "", r_txt) if new else None, False)
    if kind == "udiff" and search:
        body = "".join(f"-{x}\n" for x in search) + "".join(f"+{x}\n" for x in new)
        text = f"```diff\n--- a/{path}\n+++ b/{path}\n@@ -1,{len(search)} +1,{len(new)} @@\n" \
               f"{body}```\n"
        return Block(text, (path, s_txt, r_txt), False)
    fence = draw(st.sampled_from(["```", "````", "~~~", ""]))
    deco = draw(st.sampled_from(["{}", "**{}**", "`{}`", "{}:", "# {}"]))
    inner = f"<<<<<<< SEARCH\n{s_txt}=======\n{r_txt}>>>>>>> REPLACE\n"
    head = deco.format(path)
    text = f"{head}\n{fence}python\n{inner}{fence}\n" if fence else f"{head}\n{inner}"
    n_hits = sum(old[k:k + len(search)] == search for k in range(len(old)))
    exact = bool(search) and n_hits == 1 and "".join(search).strip() != "" and path in files
    return Block(text, (path, s_txt, r_txt), exact)


def _streamed(draw, files, bs, text, corrupt):
    """The corruptions both generators share (cut short, CRLF line ends, the first block
    repeated) applied to `text`, and the chunks the answer streams in: the case tuple."""
    if corrupt == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif corrupt == "crlf":
        text = text.replace("\n", "\r\n")
    elif corrupt == "dup":
        text += bs[0].text
    chunks = draw(st.lists(st.integers(1, 40), min_size=1, max_size=8))
    return files, bs, text, corrupt, chunks


@st.composite
def answers(draw):
    files = draw(trees())
    bs = draw(st.lists(blocks(files), min_size=1, max_size=5))
    parts = []
    for b in bs:
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(["Here is the change.\n", "\n",
                                               "Then `a.py`:\n", "```\nstray\n```\n"])))
        parts.append(b.text)
    text = "".join(parts)
    corrupt = draw(st.sampled_from(["none", "none", "drop", "cut", "crlf", "dup"]))
    if corrupt == "drop":
        lines = text.split("\n")
        marks = [k for k, ln in enumerate(lines) if ln.lstrip().startswith(MARKERS)]
        if marks:
            del lines[draw(st.sampled_from(marks))]
        text = "\n".join(lines)
    return _streamed(draw, files, bs, text, corrupt)


# -- answers shaped like real models write them ------------------------------------------
# content lines with tabs, trailing spaces, unicode, and text that looks like markdown or
# a diff (a README holds fences, a list holds "- item")
MWORDS = WORDS + ["naïve = 'café'", "s = '日本語'", "\tcall()", "x = 1   ", "\t\treturn None",
                  "emoji = '🙂'", "# trailing  ", "- item", "+ more", "}", "    ", "\t"]
MD_WORDS = ["# Title", "Some text.", "```python", "print(1)", "```", "- item", "", "~~~"]
MNAMES = ["a.py", "b.py", "pkg/c.py", "d.txt", "docs/readme.md", "src/ünï.py", "Makefile"]
PROSE = ["Here is the change.\n", "\n", "Then `a.py`:\n", "```\nstray\n```\n",
         "Now update pkg/c.py as well.\n", "---\n", "**Note:** keep `b.py` as is.\n",
         "1. `d.txt`\n", "The SEARCH must match exactly.\n", "a.py and b.py change.\n",
         "```bash\npytest -q\n```\n", "> <<<<<<< SEARCH is how a block starts\n"]


def _mlines(draw, path: str, lo: int = 0, hi: int = 10) -> list[str]:
    vocab = MD_WORDS if path.endswith(".md") else MWORDS
    return draw(st.lists(st.sampled_from(vocab), min_size=lo, max_size=hi))


@st.composite
def model_trees(draw):
    files = {}
    for name in draw(st.lists(st.sampled_from(MNAMES), min_size=1, max_size=4, unique=True)):
        lines = _mlines(draw, name, 0, 14)
        if lines and draw(st.integers(0, 3)) == 0:  # a region that appears twice
            i = draw(st.integers(0, len(lines) - 1))
            lines = lines + lines[i:i + draw(st.integers(1, 3))]
        body = "\n".join(lines)
        files[name] = body + ("\n" if body and draw(st.booleans()) else "")
    return files


def _fence_for(draw, bodies: list[str]) -> str:
    """A fence the model might pick; longer than any fence in the content when it must be
    (a ``` line inside a ``` block is ambiguous even to a human)."""
    ch = draw(st.sampled_from("`~"))
    need = max([len(b) - len(b.lstrip(ch)) for b in bodies if b.strip().startswith(ch * 3)],
               default=0)
    return ch * max(draw(st.integers(3, 5)), need + 1)


def _sr_text(draw, path: str, s: list[str], r: list[str], fence: str, reuse: bool) -> str:
    old_word, new_word = draw(st.sampled_from([("SEARCH", "REPLACE"), ("SEARCH", "REPLACE"),
                                              ("ORIGINAL", "UPDATED")]))
    pad = draw(st.sampled_from(["", "", " "]))
    inner = (f"<<<<<<< {old_word}{pad}\n" + "".join(x + "\n" for x in s) + "=======\n"
             + "".join(x + "\n" for x in r) + f">>>>>>> {new_word}\n")
    if reuse:
        where = draw(st.sampled_from(["plain", "fenced"]))
        lang = draw(st.sampled_from(["python", ""]))
        return f"{fence}{lang}\n{inner}{fence}\n" if where == "fenced" and fence else inner
    where = draw(st.sampled_from(["before", "before", "info", "inside", "unfenced"]))
    lang = draw(st.sampled_from(["python", "py", "", "diff", "text"]))
    if not fence:
        where = "before"
    if where == "info":
        forms = ["{l} {p}", "{l}:{p}"] + (["{p}"] if path[0].isalnum() else [])  # not ~~~~/x
        info = draw(st.sampled_from(forms)).format(l=lang or "python", p=path)
        return f"{fence}{info}\n{inner}{fence}\n"
    if where == "inside":
        return f"{fence}{lang}\n{path}\n{inner}{fence}\n"
    deco = draw(st.sampled_from(["{}", "**{}**", "`{}`", "{}:", "# {}", "### {}",
                                 "File: {}", "1. `{}`", "### 2. `{}`"]))
    head = deco.format(path)
    if where == "unfenced" or not fence:
        return f"{head}\n{inner}"
    return f"{head}\n{fence}{lang}\n{inner}{fence}\n"


def _unified(draw, path: str, old: list[str]) -> tuple[str, list[tuple[str, str, str]]]:
    """A unified diff of one to three hunks as `git diff` writes it, with right numbers."""
    cuts = sorted(draw(st.lists(st.integers(0, len(old)), min_size=2, max_size=6,
                                unique=True)))
    spans = [(cuts[k], cuts[k + 1]) for k in range(0, len(cuts) - 1, 2)]
    body, meant, delta = [], [], 0
    for a, b in spans:
        ctx_a = draw(st.integers(0, min(2, a)))
        removed = old[a:b]
        added = [x for x in _mlines(draw, path, 0, 4)]
        if not removed and not added:
            added = ["x = 1"]
        lo = a - ctx_a
        ctx_b_max = min(2, len(old) - b)
        nxt = [s for s in spans if s[0] > a]
        if nxt:
            ctx_b_max = min(ctx_b_max, max(0, nxt[0][0] - b - 2))
        ctx_b = draw(st.integers(0, ctx_b_max))
        before, after = old[lo:a], old[b:b + ctx_b]
        n_old = len(before) + len(removed) + len(after)
        n_new = len(before) + len(added) + len(after)
        if n_old == 0:
            continue
        body.append(f"@@ -{lo + 1},{n_old} +{lo + 1 + delta},{n_new} @@\n")
        body += [f" {x}\n" for x in before] + [f"-{x}\n" for x in removed] + \
            [f"+{x}\n" for x in added] + [f" {x}\n" for x in after]
        delta += len(added) - len(removed)
        meant.append((path, "".join(x + "\n" for x in before + removed + after),
                      "".join(x + "\n" for x in before + added + after)))
    return "".join(body), meant


@st.composite
def model_blocks(draw, files: dict[str, str], prev: str | None):
    kind = draw(st.sampled_from(["sr", "sr", "sr", "sr", "udiff", "whole"]))
    path = draw(st.sampled_from(sorted(files) + ["new.py", "pkg/new2.py"] + HOSTILE[:4]))
    old = files.get(path, "").splitlines()
    if kind == "udiff" and path in files and old:
        hunks, meant = _unified(draw, path, old)
        if not meant:
            kind = "sr"
        else:
            head = draw(st.sampled_from([
                "--- a/{p}\n+++ b/{p}\n", "--- {p}\n+++ {p}\n",
                "diff --git a/{p} b/{p}\nindex 3b18e51..a9f4c2d 100644\n--- a/{p}\n+++ b/{p}\n"]))
            diff = head.format(p=path) + hunks
            if head.startswith("diff") and draw(st.booleans()):
                return Block(diff, meant[0], False, tuple(meant[1:]))  # unfenced git diff
            fence = draw(st.sampled_from(["```", "````", "~~~"]))
            lang = draw(st.sampled_from(["diff", "diff", "patch"]))
            return Block(f"{fence}{lang}\n{diff}{fence}\n", meant[0], False, tuple(meant[1:]))
    if kind == "udiff" and path not in files and draw(st.booleans()):
        new = _mlines(draw, path, 1, 6)
        fence = draw(st.sampled_from(["```", "~~~"]))
        text = (f"{fence}diff\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(new)} @@\n"
                + "".join(f"+{x}\n" for x in new) + f"{fence}\n")
        return Block(text, (path, "", "".join(x + "\n" for x in new)), False)
    if kind == "whole":
        new = _mlines(draw, path, 1, 10)
        fence = _fence_for(draw, new)
        lang = "markdown" if path.endswith(".md") else draw(st.sampled_from(["python", ""]))
        r_txt = "".join(x + "\n" for x in new)
        if draw(st.booleans()):
            text = f"{fence}{lang} {path}\n{r_txt}{fence}\n" if lang else \
                f"{path}\n{fence}\n{r_txt}{fence}\n"
        else:
            deco = draw(st.sampled_from(["{}", "**{}**", "`{}`", "{}:"]))
            text = f"{deco.format(path)}\n{fence}{lang}\n{r_txt}{fence}\n"
        return Block(text, (path, "", r_txt), False, whole=True)
    new = _mlines(draw, path, 0, 8)
    shape = draw(st.integers(0, 5))
    if old and shape:
        i = draw(st.integers(0, len(old) - 1))
        search = old[i:draw(st.integers(i + 1, min(len(old), i + 4)))]
        if shape == 1:  # a model's typo
            k = draw(st.integers(0, len(search) - 1))
            search = search[:k] + [search[k] + " #typo"] + search[k + 1:]
        elif shape == 2:  # trailing spaces lost or added
            search = [x.rstrip() if x != x.rstrip() else x + " " for x in search]
    else:
        search = [] if draw(st.booleans()) else _mlines(draw, path, 1, 4)
    s_txt = "".join(x + "\n" for x in search)
    r_txt = "".join(x + "\n" for x in new)
    fence = draw(st.sampled_from(["", _fence_for(draw, search + new)]))
    reuse = prev == path and draw(st.integers(0, 2)) == 0
    text = _sr_text(draw, path, search, new, fence, reuse)
    n_hits = sum(old[k:k + len(search)] == search for k in range(len(old)))
    # (a SEARCH of only ``` lines reads as an empty one a model wrapped: refused)
    exact = bool(search) and n_hits == 1 and path in files \
        and "".join(search).replace("`", "").strip() != ""
    return Block(text, (path, s_txt, r_txt), exact, own_path=not reuse)


@st.composite
def model_answers(draw):
    """Answers in the shapes models write: fences of 3-5 backticks or tildes, paths
    before, inside or in the info string of the fence (or left out for a second block in
    the same file), git-style diffs with right numbers and context, whole files, prose
    that names files or markers; then the same corruptions as `answers`, plus a stray
    fence line put anywhere and line ends made CRLF on some lines only."""
    files = draw(model_trees())
    bs: list[Block] = []
    prev: str | None = None
    parts = []
    for _ in range(draw(st.integers(1, 5))):
        b = draw(model_blocks(files, prev))
        if draw(st.booleans()) and b.own_path:
            parts.append(draw(st.sampled_from(PROSE)))
        parts.append(b.text)
        bs.append(b)
        # (a block reuses the path of an edit block, not of a whole file: after a whole
        # file a model names the file again)
        prev = b.intended[0] if b.intended and not b.whole else None
    corrupt = draw(st.sampled_from(["none", "none", "none", "drop", "cut", "crlf", "dup",
                                    "stray", "mixed"]))
    if corrupt == "stray":  # a fence line lost its pair: between blocks or after a path
        stray = draw(st.sampled_from(["```", "````", "~~~", "```python", "```diff"])) + "\n"
        k = draw(st.integers(0, len(parts)))
        head, sep, rest = parts[k].partition("\n") if k < len(parts) else ("", "", "")
        if k < len(parts) and clean_path(head) and draw(st.booleans()):
            parts[k] = head + sep + stray + rest
        else:
            parts.insert(k, stray)
    lines = "".join(parts).split("\n")
    # a whole file's fence lines are never dropped: its content may be any lines, even a
    # bare path line and a code block, so without its fence the answer means another file
    wholes, keep, at = {b.text for b in bs if b.whole}, set(), 0
    for part in parts:
        if part in wholes:
            keep |= set(range(at, at + part.count("\n")))
        at += part.count("\n")
    if corrupt == "drop":  # a marker or fence line, never a content line that looks like one
        content = {x for b in bs if b.intended for t in (b.intended, *b.more)
                   for x in (t[1] + t[2]).splitlines()}
        paths = [t[0] for b in bs if b.intended for t in (b.intended, *b.more)]
        marks = [k for k, ln in enumerate(lines)  # (a fence naming the file: lost with it)
                 if ln.lstrip().startswith(MARKERS) and ln not in content
                 and not any(p in ln for p in paths) and k not in keep
                 and not ln.startswith("@@")]  # (two hunks merged: wrong counts are tolerated)
        if marks:
            del lines[draw(st.sampled_from(marks))]
    elif corrupt == "mixed":
        ends = draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
        lines = [ln + ("\r" if e and k < len(lines) - 1 else "")
                 for k, (ln, e) in enumerate(zip(lines, ends))]
    text = "\n".join(lines)
    return _streamed(draw, files, bs, text, corrupt)


def _snapshot(top: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(top.rglob("*")):
        rel = p.relative_to(top)
        if rel.parts[:2] == ("root", ".spark") or p.is_symlink() or not p.is_file():
            continue
        out[rel.as_posix()] = p.read_bytes()
    return out


def _norm(path: str) -> str:
    return path.strip().strip("*`:# ").removeprefix("./")


def _parse(text: str, chunks: list[int] | None, exists) -> tuple[list[Edit], StreamingParser]:
    p, got = StreamingParser(exists=exists), []
    if chunks is None:
        return p.feed(text) + p.finish(), p
    pos = k = 0
    while pos < len(text):
        step = chunks[k % len(chunks)]
        got += p.feed(text[pos:pos + step])
        _ = p.pending  # the live view never raises either
        pos, k = pos + step, k + 1
    return got + p.finish(), p


def _rstripped(text: str) -> str:
    return "\n".join(x.rstrip() for x in text.splitlines())


def _substituted(old: str, search: str, replace: str) -> list[str] | None:
    """The file's lines with `search` replaced, when it stands there exactly once."""
    lines, s = old.splitlines(), search.splitlines()
    if not s or not "".join(s).strip() or not s[0].strip() or not s[-1].strip():
        return None  # (a run of blank lines at SEARCH's edge is one unit: _widen_runs)
    at = [i for i in range(len(lines)) if lines[i:i + len(s)] == s]
    return lines[:at[0]] + replace.splitlines() + lines[at[0] + len(s):] if len(at) == 1 \
        else None


def check_answer(case, with_exists: bool = False) -> None:
    """The oracle for one generated answer (raises AssertionError on a breach).

    The answer was generated from known edits (each block's `intended` and `more`); the
    parser must return exactly those, in any chunking and with any line ends, or refuse
    them with an error naming the file: never a different file, never different lines.
    The engine then writes each parsed edit exactly (an exact, unique SEARCH lands on the
    lines it names, a whole file is written as given) or refuses it with a message."""
    files, bs, text, corrupt, chunks = case
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        root, outside = top / "root", top / "outside"
        outside.mkdir()
        (outside / "o.py").write_text("secret = 1\n")
        (root / ".git").mkdir(parents=True)
        (root / ".git" / "config").write_text("[core]\n")
        for name, body in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(body)
        os.symlink(outside, root / "out_link")
        os.symlink(outside / "o.py", root / "out_file.py")
        before = _snapshot(top)
        ws = Workspace(root)
        exists = ws.exists if with_exists else None

        # the parser never raises, and chunking or line ends do not change what it finds
        edits, whole = _parse(text, None, exists)
        got, streamed = _parse(text, chunks, exists)
        assert got == edits and streamed.errors == whole.errors
        lf_edits, lf = _parse(text.replace("\r\n", "\n"), None, exists)
        assert lf_edits == edits and lf.errors == whole.errors

        # a parsed edit is always one the answer meant, never a corrupted hybrid
        meant = {(_norm(t[0]), t[1], t[2]) for b in bs if b.intended
                 for t in (b.intended, *b.more)}
        for e in edits:
            assert (_norm(e.path), e.search, e.replace) in meant, e

        prop = build_proposal(ws, edits)
        res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
        after = _snapshot(top)

        errors = [(e.path, e.message) for e in prop.errors + res.refused]
        assert all(msg for _, msg in errors)
        written = set(res.written)
        for rel, data in before.items():
            name = rel.removeprefix("root/")
            if not rel.startswith("root/") or name not in written:
                assert after.get(rel) == data, f"{rel} changed but was not written"
        for rel in after.keys() - before.keys():
            assert rel.startswith("root/") and rel[5:] in written, rel
        for name in written:  # written exactly as proposed, in the file's own format
            old = before.get(f"root/{name}")
            fmt = decode(old, name)[1] if old is not None else FileFormat()
            assert (root / name).read_bytes() == encode(prop.file(name).new_text, fmt, name)

        # every edit is applied, a no-op, or refused with a message naming its file
        refused_paths = {p for p, _ in errors} | {_norm(e.path or "") for e in whole.errors}
        per_file: dict[str, int] = {}
        for e in edits:
            per_file[e.path] = per_file.get(e.path, 0) + 1
        for e in edits:
            try:
                rel = ws.relpath(e.path)
            except WorkspaceError:
                assert any(p == e.path for p, _ in errors), e
                continue
            if rel in refused_paths or e.search == e.replace or per_file[e.path] > 1:
                continue  # (a later edit to the same file may undo an earlier one)
            final = ws.read_text(rel)  # written, or already so (a no-op)
            # (trailing whitespace the model added to a line is not written)
            assert _rstripped(e.replace).strip("\n") in _rstripped(final), (e, errors)

        # the one edit to a file lands exactly: an exact, unique SEARCH on the lines it
        # names, a whole file as given (or the file is refused with a message)
        for e in edits:
            try:
                rel = ws.relpath(e.path)
            except WorkspaceError:
                continue
            if rel in refused_paths or per_file[e.path] > 1 or e.search == e.replace:
                continue
            want: list[str] | None
            if e.kind == "whole_file":
                want = e.replace.splitlines()
            elif rel in files:
                want = _substituted(files[rel], e.search, e.replace)
            else:
                continue
            if want is not None:
                has = [f.new_text for f in prop.files if f.path == rel] or [files[rel]]
                assert has[0].splitlines() == want, (e, errors)

        # with nothing lost from the answer, every edit it holds is parsed or refused
        # with an error that names its file: none is silently dropped
        if corrupt in ("none", "crlf", "mixed"):
            said = [m for _, m in errors] + [e.message for e in whole.errors]
            named = refused_paths | {_norm(h.path) for h in whole.held}
            parsed = {(_norm(e.path), e.search, e.replace) for e in edits}
            pathless = sum(e.path is None for e in whole.errors)  # "line 3: ... no path"
            for t in sorted(meant - parsed):
                if t[1] == t[2] or clean_path(t[0]) is None:
                    continue  # a no-op changes nothing; "pkg" is no file name
                if t[0] in named or any(t[0] in m for m in said):
                    continue
                pathless -= 1
                assert pathless >= 0, (t, said)

        # a clean answer of exact, unique edits to distinct files applies with no error
        clean = corrupt == "none" and all(b.exact for b in bs) \
            and len({b.intended[0] for b in bs}) == len(bs)
        if clean:
            assert not errors and not whole.errors
            for b in bs:
                path, s_txt, r_txt = b.intended
                old, search = files[path].splitlines(), s_txt.splitlines()
                k = next(i for i in range(len(old)) if old[i:i + len(search)] == search)
                lines = old[:k] + r_txt.splitlines() + old[k + len(search):]
                tail = "\n" if lines and (files[path].endswith("\n")) else ""
                assert (root / path).read_text() == "\n".join(lines) + tail


@settings(max_examples=150 * SCALE, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(answers(), st.booleans())
def test_random_answers_keep_every_invariant(case, with_exists):
    check_answer(case, with_exists)


@settings(max_examples=150 * SCALE, deadline=None, database=None, derandomize=not EXPLORE,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(model_answers(), st.booleans())
def test_model_shaped_answers_keep_every_invariant(case, with_exists):
    check_answer(case, with_exists)


@pytest.mark.xfail(strict=True, reason="open parser case (lead, 08:56): a ````python fence whose "
                   "opening line was lost holds a block and a ```diff; the next block with no path "
                   "goes to the earlier file (a.py) instead of the diff's. Passes (and this xfail "
                   "fails) once the parser gets it right: then drop the mark")
def test_open_case_diff_inside_a_stray_fence_then_a_pathless_block():
    """The model-shaped fuzz's known open case, pinned (random runs hit it ~1 in 6)."""
    blocks = [
        Block("a.py\n````python\n<<<<<<< SEARCH\nx = 1\n=======\n>>>>>>> REPLACE\n````\n",
              ("a.py", "x = 1\n", ""), False),
        Block("<<<<<<< SEARCH\nx = 1\n=======\n>>>>>>> REPLACE\n", ("a.py", "x = 1\n", ""), False,
              own_path=False),
        Block("```diff\n--- /dev/null\n+++ b//etc/hosts\n@@ -0,0 +1,1 @@\n+x = 1\n```\n",
              ("/etc/hosts", "", "x = 1\n"), False),
        Block("<<<<<<< SEARCH\nx = 1\nx = 1\n=======\n>>>>>>> REPLACE\n",
              ("/etc/hosts", "x = 1\nx = 1\n", ""), False, own_path=False),
    ]
    answer = ("a.py\n<<<<<<< SEARCH\nx = 1\n=======\n>>>>>>> REPLACE\n````\n<<<<<<< SEARCH\nx = 1\n"
              "=======\n>>>>>>> REPLACE\n```diff\n--- /dev/null\n+++ b//etc/hosts\n@@ -0,0 +1,1 @@\n"
              "+x = 1\n```\n<<<<<<< SEARCH\nx = 1\nx = 1\n=======\n>>>>>>> REPLACE\n")
    check_answer(({"a.py": ""}, blocks, answer, "drop", [1]), False)
