"""Fuzz: random valid and corrupted answers against a small random tree.

Invariants, whatever the answer: the parser never raises and streams like the whole
text; building and applying never raise; every parsed edit is one the answer really
held (a corrupted block never turns into some other edit); every edit is applied or
refused with a message naming its file; what is written is exactly what was proposed;
files not written are byte-identical; nothing outside the root (or in .git/) changes.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.edits.parser import Edit, StreamingParser
from core.edits.proposal import apply_proposal, build_proposal
from core.workspace.files import FileFormat, Workspace, WorkspaceError, decode, encode

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
    elif corrupt == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif corrupt == "crlf":
        text = text.replace("\n", "\r\n")
    elif corrupt == "dup":
        text += bs[0].text
    chunks = draw(st.lists(st.integers(1, 40), min_size=1, max_size=8))
    return files, bs, text, corrupt, chunks


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


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(answers())
def test_random_answers_keep_every_invariant(case):
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

        # the parser never raises, and chunking does not change what it finds
        whole = StreamingParser()
        edits = whole.feed(text) + whole.finish()
        streamed, pos, k = StreamingParser(), 0, 0
        got: list[Edit] = []
        while pos < len(text):
            step = chunks[k % len(chunks)]
            got += streamed.feed(text[pos:pos + step])
            _ = streamed.pending  # the live view never raises either
            pos, k = pos + step, k + 1
        got += streamed.finish()
        assert got == edits and streamed.errors == whole.errors

        # a parsed edit is always one the answer meant, never a corrupted hybrid
        meant = {(_norm(b.intended[0]), b.intended[1], b.intended[2])
                 for b in bs if b.intended}
        for e in edits:
            assert (_norm(e.path), e.search, e.replace) in meant, e

        ws = Workspace(root)
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
            assert e.replace.strip("\n") in final, (e, errors)

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
