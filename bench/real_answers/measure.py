"""Replay real model answers through our edit parser and compare with Aider's verdicts.

Per answer (`judge`):
- same files: the files our parser finds edits for equal the files Aider found edits for:
  those it applied an edit to, those whose block it could not match (it names them in
  its failure report), those the user would not let it create or edit ("Create new
  file? n") and, when it reports a failure, the files of its commit for the
  answer (it does not list the blocks that did apply then).  Only answers where Aider
  found edits count; paths are compared after `./` and `\\` are normalised; Aider's own
  misreads (a "file" named `export default App;`) are dropped;
- stray: in an answer Aider applied edits from, a file our parser would create (absent
  from the tree the answer was written against) that Aider did not touch: a wrong new
  file in the user's project.  (Answers Aider applied nothing from, or reported a
  failure for, are left out: there the user often declined, or chatted in ask mode, or
  Aider's verdict does not list every file, so a new file is no evidence.);
- cut: a whole-file block for an existing file of at least 20 lines that keeps at most a
  quarter of them: the file would be cut to a snippet;
- placeholder: a whole-file block whose content is a placeholder ("[Contents of App.tsx
  go here]", "// Content of the file here") or a path that is a template placeholder
  (`<name>.py`, `{slug}.md`, `[locale]/x.json`) not present in the tree.  Route files
  with brackets that exist (`[...slug].astro`, `[id].tsx`) are real paths, not
  placeholders.

`table` groups the verdicts per model family and per answer format.
"""

from __future__ import annotations

import inspect
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.edits.parser import Edit, StreamingParser

CUT_MIN_LINES = 20
CUT_KEEP = 0.25
_PLACEHOLDER_TEXT = re.compile(
    r"(?i)^\s*(?://|#|<!--|/\*|--)?\s*[\[(<{]?\s*(\.\.\.\s*)?"
    r"((the\s+)?(full|entire|complete|rest of( the)?|existing|original|same|unchanged|"
    r"previous)\s+)?(content|contents|code|file|implementation)s?\b.*"
    r"(go(es)? here|here|unchanged|remains? the same|as before|omitted|\.\.\.)")
_PATH_PLACEHOLDER = re.compile(r"<[^>/]+>|\{[^}/]+\}|\[[^\]/]+\]")


def family(model: str) -> str:
    """A coarse model family from the model name Aider logged."""
    m = model.lower()
    table = [("claude", "claude"), ("sonnet", "claude"), ("opus", "claude"),
             ("haiku", "claude"), ("anthropic", "claude"), ("gemini", "gemini"),
             ("deepseek", "deepseek"), ("qwen", "qwen"), ("qwq", "qwen"), ("glm", "glm"),
             ("zhipu", "glm"), ("grok", "grok"), ("kimi", "kimi"), ("moonshot", "kimi"),
             ("gpt", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"),
             ("codex", "openai"), ("mistral", "mistral"), ("codestral", "mistral"),
             ("devstral", "mistral"), ("llama", "llama"), ("minimax", "minimax")]
    if not m:
        return "unknown"
    for needle, fam in table:
        if needle in m:
            return fam
    return "other"


def answer_format(text: str) -> str:
    """The edit syntax an answer uses, as a reader would name it."""
    if re.search(r"^\s*<{5,9} ?SEARCH", text, re.MULTILINE):
        return "search/replace"
    if re.search(r"^\s*<{5,9} ?ORIGINAL", text, re.MULTILINE):
        return "original/updated"
    if re.search(r"^\s*<source", text, re.MULTILINE):
        return "<source> fence"
    if re.search(r"^```\s*(diff|patch|udiff)\s*$", text, re.MULTILINE) and "\n@@" in text:
        return "unified diff"
    if "```" in text or "~~~" in text:
        return "fenced (whole file or prose)"
    return "no fence"


def norm(path: str) -> str:
    """`./a`, `a\\b` (Windows, as Aider prints it there) -> `a/b`; a markdown escape
    (`\\_index.tsx`) is left alone: it is not a separator."""
    p = path.strip()
    p = re.sub(r"\\(?=[A-Za-z0-9])", "/", p)
    return p.removeprefix("./")


def plausible(path: str) -> bool:
    """Aider itself sometimes 'applies' to a line of code it took for a file name."""
    return bool(path) and not any(c.isspace() for c in path) and not path.endswith(";")


def _named_on_own_line(text: str, base: str) -> bool:
    """Whether some line is just a path ending in base (decorations aside), as a path
    line before a block is; a name in a sentence does not count."""
    for line in text.splitlines():
        s = line.strip().strip("#*`'\":").strip()
        if s.lower().startswith(("file:", "filename:", "path:")):
            s = s.split(":", 1)[1].strip().strip("*`'\"")
        if s and " " not in s and re.sub(r"[\\/]", "/", s).rsplit("/", 1)[-1] == base:
            return True
    return False


def is_placeholder_text(content: str) -> bool:
    lines = [ln for ln in content.splitlines() if ln.strip()]
    return 0 < len(lines) <= 2 and all(_PLACEHOLDER_TEXT.match(ln) for ln in lines)


@dataclass
class Verdict:
    """What our parser made of one answer, next to Aider's verdict."""

    family: str
    fmt: str
    aider_format: str
    ours: set[str]
    aider: set[str]
    applied: bool  # Aider applied at least one edit
    tree_known: bool
    stray: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)
    placeholder: list[str] = field(default_factory=list)
    errors: int = 0
    held: int = 0
    # why a file Aider found is not among ours: "refused" (our parser names it in an
    # error: a cut-off block, a broken fence), "no path" (the answer never names it:
    # Aider used the only file in its chat), "missed" (named, yet not found)
    why: dict[str, str] = field(default_factory=dict)

    @property
    def same(self) -> bool:
        return self.ours == self.aider


def _parse(text: str, exists: Callable[[str], bool] | None
           ) -> tuple[list[Edit], list[str], int]:
    """Edits the parser would hand on, the paths its errors name, how many blocks it held."""
    kwargs: dict[str, Any] = {}
    if exists is not None and "exists" in inspect.signature(StreamingParser).parameters:
        kwargs["exists"] = exists
    p = StreamingParser(**kwargs)
    edits = p.feed(text) + p.finish()
    held = getattr(p, "held", []) or []
    named = [norm(e.path) for e in p.errors if e.path] + [norm(h.path) for h in held]
    return edits, named, len(held)


def judge(rec: Mapping[str, Any]) -> Verdict:
    files: dict[str, int | None] = dict(rec.get("files") or {})
    tree_known = bool(rec.get("tree_commit"))
    exists = (lambda p: norm(p) in files) if tree_known else None
    edits, refused, n_held = _parse(rec["text"], exists)
    found = [*(rec.get("applied") or []), *(rec.get("failed_paths") or []),
             *(rec.get("declined") or [])]
    if rec.get("failed"):
        found += rec.get("committed") or []
    aider = {norm(p) for p in found if plausible(norm(p))}
    v = Verdict(family=family(rec.get("model", "")), fmt=answer_format(rec["text"]),
                aider_format=rec.get("edit_format") or "?", ours={norm(e.path) for e in edits},
                aider=aider, applied=bool(aider), tree_known=tree_known,
                errors=len(refused), held=n_held)
    for p in sorted(aider - v.ours):
        base = p.rsplit("/", 1)[-1]
        if any(r == p or r.rsplit("/", 1)[-1] == base for r in refused):
            v.why[p] = "refused"
        elif not _named_on_own_line(rec["text"], base):
            v.why[p] = "no path"
        else:
            v.why[p] = "missed"
    for e in edits:
        p = norm(e.path)
        present = p in files
        if (v.applied and not rec.get("failed") and tree_known and not present
                and p not in aider and p not in v.stray):
            v.stray.append(p)
        if e.kind == "whole_file":
            if is_placeholder_text(e.replace):
                v.placeholder.append(p)
            n_old = files.get(p)
            if present and n_old is not None and n_old >= CUT_MIN_LINES:
                n_new = len(e.replace.splitlines())
                if n_new <= n_old * CUT_KEEP:
                    v.cut.append(f"{p} ({n_old} -> {n_new} lines)")
        if tree_known and not present and _PATH_PLACEHOLDER.search(p) and p not in aider:
            v.placeholder.append(p)
    return v


@dataclass
class Row:
    answers: int = 0  # answers Aider applied edits from
    same: int = 0
    stray: int = 0  # answers (any) with a stray file
    cut: int = 0
    placeholder: int = 0
    prose_edits: int = 0  # answers Aider applied nothing from, where we find edits
    named: int = 0  # answers that name every file Aider found (on a path line)
    named_same: int = 0
    refused: int = 0  # answers not the same where we refused a file Aider wrote
    no_path: int = 0  # ... where the answer never names a file Aider wrote
    missed: int = 0  # ... where we missed a file the answer names
    extra: int = 0  # ... where we find a file Aider did not

    def share(self) -> str:
        return f"{100 * self.same / self.answers:5.1f}%" if self.answers else "    -"

    def named_share(self) -> str:
        return f"{100 * self.named_same / self.named:.1f}%" if self.named else "-"


def table(verdicts: Iterable[Verdict], key: Callable[[Verdict], str]) -> dict[str, Row]:
    rows: dict[str, Row] = defaultdict(Row)
    for v in verdicts:
        for k in (key(v), "all"):
            r = rows[k]
            if v.applied:
                r.answers += 1
                r.same += v.same
                if "no path" not in v.why.values():
                    r.named += 1
                    r.named_same += v.same
                if not v.same:
                    kinds = set(v.why.values())
                    r.refused += "refused" in kinds
                    r.no_path += "no path" in kinds
                    r.missed += "missed" in kinds
                    r.extra += bool(v.ours - v.aider)
            elif v.ours:
                r.prose_edits += 1
            r.stray += bool(v.stray)
            r.cut += bool(v.cut)
            r.placeholder += bool(v.placeholder)
    return dict(rows)


def render(rows: Mapping[str, Row], title: str) -> str:
    out = [(f"| {title} | answers Aider found edits in | same files | same, where the answer "
            "names its files | stray | cut | placeholder | edits where Aider applied none |"),
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    order = sorted((k for k in rows if k != "all"), key=lambda k: -rows[k].answers)
    for k in [*order, "all"]:
        r = rows[k]
        out.append(f"| {k} | {r.answers} | {r.share().strip()} | {r.named_share()} | "
                   f"{r.stray} | {r.cut} | {r.placeholder} | {r.prose_edits} |")
    return "\n".join(out)


def render_why(rows: Mapping[str, Row], title: str) -> str:
    """Why answers were not the same: an answer may count under several reasons."""
    out = [(f"| {title} | not the same | we refused a file Aider wrote | answer never names "
           "the file | missed a named file | found a file Aider did not |"),
           "|---|---:|---:|---:|---:|---:|"]
    order = sorted((k for k in rows if k != "all"), key=lambda k: -rows[k].answers)
    for k in [*order, "all"]:
        r = rows[k]
        out.append(f"| {k} | {r.answers - r.same} | {r.refused} | {r.no_path} | {r.missed} "
                   f"| {r.extra} |")
    return "\n".join(out)


def unguarded_cuts(rec: Mapping[str, Any], verdict: Verdict, root: Path) -> list[str]:
    """Files of rec that its whole-file blocks would cut to a snippet WITHOUT the
    deletion-heavy second key.  Needs no mirror: each cut file is laid out under root
    (an empty folder) at its recorded line count (distinct lines: the corpus keeps
    counts, not content) and the answer goes through `build_proposal`, the engine the
    app and `spark apply` use."""
    from core.edits.proposal import build_proposal
    from core.workspace.files import Workspace

    cut = [c.split(" (")[0] for c in verdict.cut]
    if not cut:
        return []
    for rel in cut:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(f"original line {i}\n" for i in range(rec["files"][rel])))
    parser = StreamingParser()
    proposal = build_proposal(Workspace(root), parser.feed(rec["text"]) + parser.finish())
    return [f.path for f in proposal.files if f.path in cut and not f.deletion_heavy]
