"""Replay real model answers through our edit parser and compare with Aider's verdicts.

Per answer (`judge`):
- same files: the files our parser finds edits for equal the files Aider found edits for:
  those it applied an edit to, those whose block it could not match (it names them in
  its failure report) and, when it reports a failure, the files of its commit for the
  answer (it does not list the blocks that did apply then).  Only answers where Aider
  found edits count; paths are compared after `./` and `\\` are normalised; Aider's own
  misreads (a "file" named `export default App;`) are dropped;
- stray: in an answer Aider applied edits from, a file our parser would create (absent
  from the tree the answer was written against) that Aider did not touch: a wrong new
  file in the user's project.  (Answers Aider applied nothing from are left out: there
  the user often declined, or chatted in ask mode, so a new file is no evidence.);
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
    return path.strip().replace("\\", "/").removeprefix("./")


def plausible(path: str) -> bool:
    """Aider itself sometimes 'applies' to a line of code it took for a file name."""
    return bool(path) and not any(c.isspace() for c in path) and not path.endswith(";")


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

    @property
    def same(self) -> bool:
        return self.ours == self.aider


def _parse(text: str, exists: Callable[[str], bool] | None
           ) -> tuple[list[Edit], int, int]:
    """Edits the parser would hand on, its error count and how many blocks it held back."""
    kwargs: dict[str, Any] = {}
    if exists is not None and "exists" in inspect.signature(StreamingParser).parameters:
        kwargs["exists"] = exists
    p = StreamingParser(**kwargs)
    edits = p.feed(text) + p.finish()
    held = len(getattr(p, "held", []) or [])
    return edits, len(p.errors), held


def judge(rec: Mapping[str, Any]) -> Verdict:
    files: dict[str, int | None] = dict(rec.get("files") or {})
    tree_known = bool(rec.get("tree_commit"))
    exists = (lambda p: norm(p) in files) if tree_known else None
    edits, n_err, n_held = _parse(rec["text"], exists)
    found = list(rec.get("applied") or []) + list(rec.get("failed_paths") or [])
    if rec.get("failed"):
        found += rec.get("committed") or []
    aider = {norm(p) for p in found if plausible(norm(p))}
    v = Verdict(family=family(rec.get("model", "")), fmt=answer_format(rec["text"]),
                aider_format=rec.get("edit_format") or "?", ours={norm(e.path) for e in edits},
                aider=aider, applied=bool(aider), tree_known=tree_known, errors=n_err,
                held=n_held)
    for e in edits:
        p = norm(e.path)
        present = p in files
        if v.applied and tree_known and not present and p not in aider and p not in v.stray:
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

    def share(self) -> str:
        return f"{100 * self.same / self.answers:5.1f}%" if self.answers else "    -"


def table(verdicts: Iterable[Verdict], key: Callable[[Verdict], str]) -> dict[str, Row]:
    rows: dict[str, Row] = defaultdict(Row)
    for v in verdicts:
        for k in (key(v), "all"):
            r = rows[k]
            if v.applied:
                r.answers += 1
                r.same += v.same
            elif v.ours:
                r.prose_edits += 1
            r.stray += bool(v.stray)
            r.cut += bool(v.cut)
            r.placeholder += bool(v.placeholder)
    return dict(rows)


def render(rows: Mapping[str, Row], title: str) -> str:
    out = [(f"| {title} | answers Aider found edits in | same files | stray | cut | "
            "placeholder | edits where Aider applied none |"),
           "|---|---:|---:|---:|---:|---:|---:|"]
    order = sorted((k for k in rows if k != "all"), key=lambda k: -rows[k].answers)
    for k in [*order, "all"]:
        r = rows[k]
        out.append(f"| {k} | {r.answers} | {r.share().strip()} | {r.stray} | {r.cut} | "
                   f"{r.placeholder} | {r.prose_edits} |")
    return "\n".join(out)
