"""Apply real answers to the real trees they were written against, and compare the
result with the commit Aider made for the same answer.

Why: "our parser finds the same files" says nothing about what lands in them.  When an
answer's Aider commit is in the mirror, the tree before it is exactly what the model saw,
and the commit is what Aider wrote (and the user kept).  For those answers the files the
answer names are copied into a temporary folder, the answer goes through our parser and
`build_proposal` (the engine `spark apply` and the app use), and each file's result is
compared byte for byte with Aider's.

Outcomes per answer: "exact" (every file as Aider wrote it), "whitespace" (the same
but for trailing spaces and the final newline, which our engine normalises on
purpose), "refused" (our engine
refused at least one file, with a reason), "different" (written without a refusal but not
as Aider wrote it: a wrong write, or Aider's own fuzzy match landing elsewhere; listed
for reading), "not comparable" (our files differ from Aider's).  Whole-file blocks that
cut an existing file must come back flagged `deletion_heavy` (the second key).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.edits.parser import StreamingParser
from core.edits.proposal import build_proposal
from core.workspace.files import Workspace

from .collect import Git
from .measure import judge, norm


@dataclass
class Replay:
    outcome: str  # "exact" | "whitespace" | "refused" | "different" | "not comparable"
    repo: str
    index: int
    notes: list[str] = field(default_factory=list)
    unflagged_cuts: list[str] = field(default_factory=list)  # cut yet not deletion_heavy


def _write(root: Path, rel: str, data: bytes) -> bool:
    target = (root / rel).resolve()
    if root.resolve() not in target.parents:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return True


def replay_one(rec: Mapping[str, Any], git: Git) -> Replay | None:
    """One answer against its exact tree; None when there is no exact tree or no verdict."""
    if rec.get("tree_source") != "commit" or rec.get("failed") or not rec.get("applied"):
        return None
    before = rec["tree_commit"]
    after = git.resolve(rec.get("edit_commit") or "")
    if after is None:
        return None
    v = judge(rec)
    out = Replay("not comparable", rec["repo"], rec["index"])
    tree = git.tree(before)
    with tempfile.TemporaryDirectory(prefix="spark-replay-") as tmp:
        root = Path(tmp)
        for rel in sorted(set(tree) & (v.ours | v.aider)):
            data = git.blob(tree[rel])
            if data is not None:
                _write(root, rel, data)
        p = StreamingParser(exists=lambda rel: norm(rel) in tree)
        edits = p.feed(rec["text"]) + p.finish()
        proposal = build_proposal(Workspace(root), edits)
        cuts = {c.split(" (")[0] for c in v.cut}
        for f in proposal.files:
            if norm(f.path) in cuts and not f.deletion_heavy:
                out.unflagged_cuts.append(f.path)
        if not v.same:
            return out
        if proposal.errors:
            out.outcome = "refused"
            out.notes = [e.message[:160] for e in proposal.errors]
            return out
        results = {norm(f.path): f.result_text() for f in proposal.files}
        wrong, spaces = [], []
        for rel in sorted(v.aider):
            want = git.blob(f"{after}:{rel}")
            if want is None:
                continue
            want = want.removeprefix(b"\xef\xbb\xbf")  # result_text has no BOM; the write adds it
            got = results.get(rel)
            if got is None:  # a no-op or "applied already": the file keeps its text
                got = (root / rel).read_text("utf-8") if (root / rel).is_file() else ""
            if got.encode("utf-8") == want or got.encode("latin-1", "replace") == want:
                continue
            if _blank_insensitive(got) == _blank_insensitive(want.decode("utf-8", "replace")):
                spaces.append(rel)
            else:
                wrong.append(rel)
        out.outcome = "different" if wrong else "whitespace" if spaces else "exact"
        out.notes = wrong or spaces
        return out


def _blank_insensitive(text: str) -> list[str]:
    """Lines without trailing whitespace, CRs or a missing final newline: what our engine
    deliberately normalises (it drops trailing-space noise on lines it writes and keeps
    the file's own final-newline style, where Aider writes the model's bytes)."""
    return [ln.rstrip() for ln in text.replace("\r\n", "\n").rstrip("\n").split("\n")]


def replay_all(records: Iterable[Mapping[str, Any]], mirrors: Path) -> list[Replay]:
    gits: dict[str, Git] = {}
    out: list[Replay] = []
    try:
        for rec in records:
            repo = rec["repo"]
            if repo not in gits:
                d = mirrors / repo.replace("/", "+", 1)
                gitdir = d / "repo" if (d / "repo").exists() else d
                if not gitdir.exists():
                    continue
                gits[repo] = Git(gitdir)
            r = replay_one(rec, gits[repo])
            if r is not None:
                out.append(r)
    finally:
        for g in gits.values():
            g.close()
    return out


def summary(replays: list[Replay]) -> str:
    c = Counter(r.outcome for r in replays)
    n = len(replays)
    parts = [f"{k}: {c[k]} ({100 * c[k] / n:.1f}%)" for k in
             ("exact", "whitespace", "refused", "different", "not comparable") if n]
    cuts = sum(len(r.unflagged_cuts) for r in replays)
    return (f"replayed on the exact tree: {n} answers; " + ", ".join(parts)
            + f"; cut files not flagged deletion-heavy: {cuts}")
