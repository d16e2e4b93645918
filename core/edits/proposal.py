"""From parsed edits to a reviewable proposal, and from accepted hunks to disk.

Why a proposal object: the app shows hunks while the answer still streams, the user
accepts any subset, and the files may change underneath meanwhile; the proposal keeps
the base it was computed against (text + fingerprint) so nothing unseen is overwritten.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import re
from dataclasses import dataclass, field

from core.edits.hunks import Hunk, apply_hunks, make_hunks_tracked, rebase_hunk
from core.edits.match import (
    FUZZY_THRESHOLD,
    LooseIndex,
    MatchError,
    find,
    find_exact,
    indent_shifts,
    norm,
    split_lines,
)
from core.edits.parser import Edit
from core.edits.place import PlaceError, hunk_opcodes, place, strip_fences, wrapped
from core.workspace.files import Workspace, WorkspaceError


@dataclass
class EditError:
    """An edit (or a file) that could not be used, with a reason the user can act on."""

    path: str
    message: str


@dataclass
class FileProposal:
    """All proposed changes to one file, as hunks against the text it had when read."""

    path: str
    old_text: str
    new_text: str
    hunks: list[Hunk]
    is_new: bool
    base_fingerprint: str
    # why writing this file needs a second key (apply_proposal(force=True), `spark
    # apply --force`): a whole-file block that removes most of an existing file
    deletion_heavy: str | None = None
    # the file's final newline as a diff's `\\ No newline at end of file` decided it,
    # when that differs from the file's own (None: the file keeps its own)
    final_newline: bool | None = None

    def result_text(self, accepted: set[str] | None = None) -> str:
        return apply_hunks(self.old_text, self.hunks, accepted)

    def final_newline_for(self, accepted: set[str]) -> bool | None:
        """The final newline to write for this subset: the edit's decision only when the
        hunk that reaches the end of the file is accepted, else the file's own."""
        if self.final_newline is None or not self.hunks:
            return None
        end = len(self.old_text.splitlines())
        last = max(self.hunks, key=lambda h: h.old_start + len(h.old_lines))
        reaches_end = last.old_start - 1 + len(last.old_lines) >= end
        return self.final_newline if reaches_end and last.id in accepted else None

    def check(self, ws: Workspace) -> str:
        """"fresh" (file unchanged), "rebased" (changed, every hunk still places) or
        "stale" (changed and some hunk lost its context, or the file became unreadable)."""
        try:
            text, fp, _ = ws.snapshot(self.path)
        except WorkspaceError:
            return "stale"
        if fp == self.base_fingerprint:
            return "fresh"
        _, failed = self.rebase(text)
        return "stale" if failed else "rebased"

    def hunk_status(self, ws: Workspace) -> dict[str, str]:
        """hunk id -> "fresh" | "rebased" | "stale", so the app can mark single hunks."""
        try:
            text, fp, _ = ws.snapshot(self.path)
        except WorkspaceError:
            return {h.id: "stale" for h in self.hunks}
        if fp == self.base_fingerprint:
            return {h.id: "fresh" for h in self.hunks}
        _, failed = self.rebase(text)
        bad = set(failed)
        return {h.id: "stale" if h.id in bad else "rebased" for h in self.hunks}

    def rebase(self, current_text: str, ids: set[str] | None = None
               ) -> tuple[list[Hunk], list[str]]:
        """The hunks (or those in ids) moved onto current_text, and the ids that could not be."""
        lines = current_text.splitlines(keepends=True)
        moved, failed = [], []
        for h in self.hunks:
            if ids is not None and h.id not in ids:
                continue
            r = rebase_hunk(h, lines)
            (failed.append(h.id) if r is None else moved.append(r))
        return moved, failed


@dataclass
class ApplyResult:
    written: list[str]
    refused: list[EditError]
    change_id: str | None
    commit: str | None = None
    commit_error: str | None = None
    commit_notes: list[str] = field(default_factory=list)


@dataclass
class Proposal:
    files: list[FileProposal]
    errors: list[EditError] = field(default_factory=list)

    @property
    def hunks(self) -> list[Hunk]:
        return [h for f in self.files for h in f.hunks]

    def file(self, path: str) -> FileProposal:
        for f in self.files:
            if f.path == path:
                return f
        raise KeyError(path)

    def result_text(self, path: str, accepted: set[str]) -> str:
        """The file content implied by accepting exactly these hunk ids."""
        return self.file(path).result_text(accepted)

    def status(self, ws: Workspace) -> dict[str, str]:
        """path -> "fresh" | "rebased" | "stale" for every file of the proposal."""
        return {f.path: f.check(ws) for f in self.files}

    def hunk_status(self, ws: Workspace) -> dict[str, str]:
        """hunk id -> "fresh" | "rebased" | "stale" across every file."""
        out: dict[str, str] = {}
        for f in self.files:
            out.update(f.hunk_status(ws))
        return out

    def is_stale(self, ws: Workspace) -> bool:
        return any(s == "stale" for s in self.status(ws).values())


class AlreadyApplied(MatchError):
    """The edit's REPLACE text is already where it would go: skipped, nothing lost."""


class FileEditor:
    """Applies edits one after another to one file's lines, remembering which lines are
    still the original ones, so hunks are diffed only where edits landed (fast on big
    files, and aligned with what the model meant), a diff's `@@` numbers can be mapped
    onto the edited file, and a later block that became ambiguous only because an
    earlier block wrote a copy of its SEARCH text still finds the place the model saw."""

    def __init__(self, path: str, old_text: str, *, shifted_answer: bool = True,
                 shift: int | None = None) -> None:
        self.path = path
        self.shifted_answer = shifted_answer
        self.shift = shift  # the answer's one indentation shift, when it shows one
        self.lines: list[str] = old_text.splitlines()
        self.original: list[str] = list(self.lines)
        self.origin: list[int | None] = list(range(len(self.lines)))
        # where edits wrote (half-open line ranges, ascending, apart): outside them each line
        # is the next original line after the one before it, so hunks are diffed from here
        self.spans: list[tuple[int, int]] = []
        self.final_newline = old_text.endswith("\n") if old_text else True
        self._loose: LooseIndex | None = None

    def text(self) -> str:
        if not self.lines:
            return ""
        # a file without a final newline whose edit ends in a blank line: one more "\n",
        # because the workspace drops one when it writes such a file
        blank_end = not self.final_newline and self.lines[-1] == ""
        return "\n".join(self.lines) + ("\n" if self.final_newline or blank_end else "")

    def _index(self) -> LooseIndex:
        if self._loose is None:
            self._loose = LooseIndex(self.lines)
        return self._loose

    def _splice(self, start: int, end: int, new: list[str]) -> None:
        self._loose = None
        # lines the placement kept from the file keep their origin (they are the file's)
        old, old_origin = self.lines[start:end], self.origin[start:end]
        self.lines[start:end] = new
        origin: list[int | None] = [None] * len(new)
        if old and new:
            sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
            for a, b, size in sm.get_matching_blocks():
                origin[b:b + size] = old_origin[a:a + size]
            if not self.final_newline:  # its line end may change: not the same line
                last = len(self.original) - 1
                origin = [None if o == last else o for o in origin]
        self.origin[start:end] = origin
        self._touch(start, end, start + len(new))

    def _touch(self, start: int, old_end: int, new_end: int) -> None:
        """Lines [start, old_end) became [start, new_end): one span with the spans it
        meets (a deletion leaves an empty one where the lines were), the later ones moved."""
        delta = new_end - old_end
        merged = (start, new_end)
        spans = []
        for first, end in self.spans:
            if end < start:
                spans.append((first, end))
            elif first > old_end:
                spans.append((first + delta, end + delta))
            else:
                merged = (min(merged[0], first), max(merged[1], end + delta))
        spans.append(merged)
        self.spans = sorted(spans)

    def apply(self, edit: Edit) -> None:
        """Apply one edit; MatchError when its SEARCH text cannot be placed or what to
        write there cannot be proved."""
        replace = split_lines(edit.replace)
        search = split_lines(edit.search)
        lazy = elided_line(search, replace)
        if lazy is not None:
            raise MatchError(f"{self.path}: the new text leaves code out ({lazy!r}); "
                             f"applying it would delete that code, so it is not applied")
        if edit.kind == "whole_file":
            self._splice(0, len(self.lines), replace)
            return
        if getattr(edit, "creates", False) and "".join(self.original).strip():
            if replace == self.lines:
                raise AlreadyApplied(f"{self.path}: the file already has exactly the "
                                     f"content the diff creates; skipped")
            raise MatchError(f"{self.path}: the diff creates this file (--- /dev/null), "
                             f"but it exists and is not empty; not applied")
        if not search or not "".join(search).strip():
            self._insert_without_search(edit, replace)
            return
        ops = _edit_opcodes(edit, search, replace)
        try:
            self._place(edit, search, replace, ops)
            return
        except MatchError as exc:
            first = exc
        stripped = None
        try:
            stripped = strip_fences(search, replace)
        except PlaceError as exc:
            raise MatchError(f"{self.path}: {exc}") from None
        if stripped is not None and stripped[0] and "".join(stripped[0]).strip():
            try:
                self._place(edit, stripped[0], stripped[1], None)
                return
            except MatchError:
                pass
        self._explain(search, replace, first)

    def _place(self, edit: Edit, search: list[str], replace: list[str],
               ops: list[tuple[str, int, int, int, int]] | None) -> None:
        fenced = wrapped(search)
        m = find(self.lines, search, path=self.path, tiebreak=self._tiebreak(edit, search),
                 exact_only=fenced, index=self._index() if not fenced else None,
                 shifted_answer=self.shifted_answer,
                 written=lambda a, b: any(o is None for o in self.origin[a:b]),
                 shift=self.shift, hint=self._hint(edit))
        if m.how in ("fuzzy", "hinted") and any(o is None for o in self.origin[m.start:m.end]):
            raise MatchError(f"{self.path}: SEARCH text not found exactly; the closest "
                             f"lines ({m.start + 1}-{m.end}) overlap what an earlier "
                             f"edit of this answer wrote, so it is not applied there")
        start, end = _widen_runs(self.lines, m.start, m.end, search, replace)
        try:
            weak = m.how == "hinted" or (m.how == "fuzzy" and m.score < FUZZY_THRESHOLD)
            new = place(self.lines[start:end], search, replace, ops, strict=weak)
        except PlaceError as exc:
            raise MatchError(f"{self.path}: SEARCH text matched lines {m.start + 1}-{m.end} "
                             f"only {'loosely' if m.how == 'loose' else 'approximately'}, "
                             f"and {exc}") from None
        self._splice(start, end, new)
        self._end_of_file(edit, start + len(new))

    def _end_of_file(self, edit: Edit, end: int) -> None:
        """A diff hunk's `\\ No newline at end of file` decides the file's final newline
        when the hunk reaches the end of the file (as `git apply` does)."""
        old_eol, new_eol = getattr(edit, "old_no_eol", False), getattr(edit, "new_no_eol", False)
        if not (old_eol or new_eol):
            return
        if end != len(self.lines):
            raise MatchError(f"{self.path}: the diff hunk says the file ends after it "
                             f"(\\ No newline at end of file), but it does not end there; "
                             f"not applied")
        want = not new_eol
        if want != self.final_newline:
            self.final_newline = want
            last = len(self.original) - 1  # that line's end changes: not the same line
            if last in self.origin:
                at = self.origin.index(last)
                self.origin[at] = None
                self._touch(at, at + 1, at + 1)

    def _tiebreak(self, edit: Edit, search: list[str]):
        """Chooses among several equal places: the one a diff's `@@ -a` number names
        (mapped through earlier edits), else the one place the model saw, when the
        others were written by earlier edits of this answer."""
        hint = self._hint(edit)

        def pick(hits: list[tuple[int, int]], how: str) -> tuple[int, int] | None:
            if hint is not None:
                at = [h for h in hits if h[0] == hint]
                if len(at) == 1:
                    return at[0]
            untouched = [h for h in hits
                         if all(o is not None for o in self.origin[h[0]:h[1]])]
            if len(untouched) == 1 and len(untouched) < len(hits) and how != "fuzzy":
                seen = find_exact(self.original, search) if how == "exact" else \
                    find_exact([norm(s) for s in self.original if s.strip()],
                               [norm(s) for s in search if s.strip()])
                if len(seen) == 1:
                    return untouched[0]
            return None
        return pick

    def _hint(self, edit: Edit) -> int | None:
        """Where a diff hunk's `@@ -a` number puts it in the file as earlier edits of
        this answer left it (None: no number, or that line was rewritten)."""
        if edit.kind != "udiff" or edit.line is None:
            return None
        want = edit.line - 1
        return next((j for j, o in enumerate(self.origin) if o == want), None)

    def _explain(self, search: list[str], replace: list[str], exc: MatchError) -> None:
        """Re-raise a failed match with the likeliest reason."""
        substantial = sum(1 for r in replace if r.strip()) >= 2
        if replace and (substantial or self._overlapped(search)) \
                and _contains(self.lines, replace):
            raise AlreadyApplied(f"{self.path}: SEARCH text not found, and its REPLACE "
                                 f"text is already in the file: the edit looks applied "
                                 f"already (or repeated in the answer); skipped") from None
        clash = self._overlapped(search)
        if clash:
            raise MatchError(f"{self.path}: the SEARCH text was at lines {clash} of "
                             f"the file, which an earlier edit of this answer already "
                             f"changed; the two edits overlap, this one is not "
                             f"applied") from None
        raise exc from None

    def _overlapped(self, search: list[str]) -> str | None:
        """'a-b' when search was in the original file where an earlier edit wrote."""
        n = len(search)
        kept = {o for o in self.origin if o is not None}
        for i in find_exact(self.original, search):
            if not all(j in kept for j in range(i, i + n)):
                return f"{i + 1}-{i + n}"
        return None

    def _insert_without_search(self, edit: Edit, replace: list[str]) -> None:
        """An empty SEARCH creates a file or fills an empty one (never appends to a
        file with content: a model re-creating an existing file would duplicate it);
        a diff hunk with no context lines may only add at the end."""
        if not "".join(self.lines).strip():
            self._splice(0, len(self.lines), replace)
            return
        if replace == self.lines:
            raise AlreadyApplied(f"{self.path}: the file already has exactly this "
                                 f"content; skipped")
        if edit.kind == "udiff" and edit.line is not None and edit.line >= len(self.lines):
            self._splice(len(self.lines), len(self.lines), replace)
            return
        if edit.kind == "udiff" and edit.line is None:
            raise MatchError(f"{self.path}: the diff creates this file (--- /dev/null, or "
                             f"a hunk with no context lines), but it exists and is not "
                             f"empty; not applied")
        if edit.kind == "udiff":
            raise MatchError(f"{self.path}: a diff hunk adds lines with no context lines "
                             f"around them (at line {edit.line}); it cannot be placed "
                             f"safely, not applied")
        raise MatchError(f"{self.path}: an empty SEARCH part creates a new file, but "
                         f"this file exists and is not empty; not applied (to add "
                         f"lines, SEARCH for the lines they go after)")


def _edge_run(lines: list[str], at_end: bool) -> int:
    """How many blank lines the lines begin (or end) with."""
    n = 0
    for line in reversed(lines) if at_end else lines:
        if line.strip():
            break
        n += 1
    return n


def _widen_runs(lines: list[str], start: int, end: int, search: list[str],
                replace: list[str]) -> tuple[int, int]:
    """The match widened over the whole run of the file's blank lines at an edge where
    SEARCH begins (ends) with blank lines and REPLACE with more of them: the run is one
    unit, so a run SEARCH copied short is the file's run, and a REPLACE that shows the
    file's count there changes nothing.  Elsewhere an exact match keeps its literal
    meaning (a REPLACE adding a blank line beyond SEARCH's edge adds one)."""
    if 0 < _edge_run(search, False) < _edge_run(replace, False):
        while start > 0 and not lines[start - 1].strip():
            start -= 1
    if 0 < _edge_run(search, True) < _edge_run(replace, True):
        while end < len(lines) and not lines[end].strip():
            end += 1
    return start, end


def _edit_opcodes(edit: Edit, search: list[str], replace: list[str]
                  ) -> list[tuple[str, int, int, int, int]] | None:
    """A diff hunk's exact SEARCH -> REPLACE opcodes when the parser kept its tagged
    lines (and they agree with its text); None lets difflib align the two."""
    ops = getattr(edit, "ops", None)
    if not ops:
        return None
    olds = [ln for t, ln in ops if t != "+"]
    news = [ln for t, ln in ops if t != "-"]
    if olds != search or news != replace:
        return None
    return hunk_opcodes(ops)


_COMMENT = r"(?:#|//|/\*|<!--|--|;|\*)"
_ELISION = re.compile(
    rf"^\s*(?:{_COMMENT}\s*(?:\.\.\.|…)\s*(?:\*/|-->)?\s*$"  # "# ..." alone
    rf"|(?:{_COMMENT}.*)?(?:\.\.\.|…)\s*\(?(?:existing|rest of|remaining|unchanged|omitted|"
    rf"same as before|as before|other (?:code|methods|functions))\b"
    rf"|{_COMMENT}\s*(?:rest of|remaining) (?:the )?(?:code|file|function|class|method)s?"
    rf"\b.*$)", re.IGNORECASE)


def elided_line(search: list[str], replace: list[str]) -> str | None:
    """A REPLACE line that stands for code the model left out ("# ... existing code
    ..."), when the SEARCH text has no such line: applying it would delete that code."""
    seen = {s.strip() for s in search}
    for line in replace:
        if line.strip() not in seen and _ELISION.match(line):
            return line.strip()
    return None


def _contains(lines: list[str], needle: list[str]) -> bool:
    return bool(find_exact(lines, needle))


def apply_edit_to_text(text: str, edit: Edit, path: str) -> str:
    """text with one edit applied; MatchError when its SEARCH text cannot be placed."""
    ed = FileEditor(path, text)
    ed.apply(edit)
    return ed.text()


def _missing_file_error(rel: str) -> EditError:
    return EditError(rel, f"{rel}: file does not exist, so its SEARCH text cannot be "
                          f"found (to create it, use an empty SEARCH part)")


DELETION_HEAVY_MIN_LINES = 10  # smaller files may be rewritten whole without a flag
DELETION_HEAVY_SHARE = 0.5  # a whole file that removes more than this share is flagged
_PLACEHOLDER = re.compile(
    r"^\s*(?:#|//|/\*|<!--|--|;)?\s*[\[(<{]?\s*(?:the\s+)?(?:full\s+|complete\s+|entire\s+)?"
    r"(?:contents?|code|file|source|text|rest)\s+(?:of|for|from)\s+\S.*?"
    r"(?:go(?:es)?\s+here|here|unchanged|omitted|as\s+before)\s*[\])>}]?\s*"
    r"(?:\*/|-->)?\s*$", re.IGNORECASE)


def placeholder_line(lines: list[str]) -> str | None:
    """The line of a whole-file block that only stands for content ("[Contents of
    App.tsx go here]", "// Content of the file here"), when that is all it holds."""
    body = [ln for ln in lines if ln.strip()]
    if 0 < len(body) <= 3:
        for ln in body:
            if _PLACEHOLDER.match(ln):
                return ln.strip()
    return None


def deletion_heavy(old: str, new: str, hunks: list[Hunk]) -> str | None:
    """Why a whole-file replacement of an existing file needs a second key: it removes
    most of the file (a snippet or an excerpt taken for the whole file would cut a
    1,500-line file to 2 lines)."""
    old_n = len(old.splitlines())
    if old_n < DELETION_HEAVY_MIN_LINES:
        return None
    removed = sum(h.removed for h in hunks)
    added = sum(h.added for h in hunks)
    if removed > DELETION_HEAVY_SHARE * old_n and added < removed:
        return (f"the whole-file block removes {removed} of the file's {old_n} lines "
                f"and adds {added}: it may be a snippet taken for the whole file")
    return None


def _unwrap_empty_search(e: Edit) -> Edit:
    """An edit whose SEARCH is only ``` lines (an empty SEARCH a model wrapped in a
    fence) and whose REPLACE is wrapped too: the empty SEARCH it means (a creation)."""
    search, replace = split_lines(e.search), split_lines(e.replace)
    if e.kind != "search_replace" or not wrapped(search) or "".join(search[1:-1]).strip():
        return e
    if not wrapped(replace):
        return e
    return dataclasses.replace(e, search="", replace="".join(r + "\n" for r in replace[1:-1]))


class _FileBuild:
    """One file's edits applied so far, as `_build_file` applies them, kept so a rebuild
    after more edits of the same answer resumes here (`more`) instead of re-matching
    every earlier block: the same steps from the same state, so the same result."""

    def __init__(self, rel: str, old: str, exists: bool,
                 shifts: frozenset[int] | None = None) -> None:
        self.rel, self.old, self.exists = rel, old, exists
        self.ed = FileEditor(rel, old, shifted_answer=shifts is None or bool(shifts),
                             shift=next(iter(shifts)) if shifts and len(shifts) == 1 else None)
        self.errors: list[EditError] = []
        self.skipped: list[EditError] = []
        self.whole = False
        self.applied = 0
        self.count = 0  # edits taken
        self._old_lines: list[str] | None = None  # old's lines with their ends, split once

    def copy(self) -> _FileBuild:
        """An independent copy (the editor's lines and origins copied; the rest is
        replaced, not changed in place, when edits are added)."""
        twin = copy.copy(self)
        twin.ed = copy.copy(self.ed)
        twin.ed.lines = list(self.ed.lines)
        twin.ed.origin = list(self.ed.origin)
        twin.ed.spans = list(self.ed.spans)
        twin.errors, twin.skipped = list(self.errors), list(self.skipped)
        return twin

    def more(self, edits: list[Edit]) -> None:
        rel, ed = self.rel, self.ed
        for e in edits:
            self.count += 1
            e = _unwrap_empty_search(e)
            if not self.exists and not ed.lines and e.search.strip() and e.kind != "whole_file":
                self.errors.append(_missing_file_error(rel))
                continue
            if e.kind == "whole_file":
                lazy = placeholder_line(split_lines(e.replace))
                if lazy is not None and elided_line([], split_lines(e.replace)) is None:
                    self.errors.append(EditError(rel, f"{rel}: the whole-file block only holds a "
                                                      f"placeholder ({lazy!r}), not the file's "
                                                      f"content; not applied"))
                    continue
                self.whole = self.whole or bool(self.old.strip())
            try:
                ed.apply(e)
                self.applied += 1
            except AlreadyApplied as exc:
                self.skipped.append(EditError(rel, str(exc)))
            except MatchError as exc:
                self.errors.append(EditError(rel, str(exc)))

    def result(self, fp: str) -> tuple[FileProposal | None, list[EditError]]:
        rel, old, ed = self.rel, self.old, self.ed
        if self.errors:
            errors = list(self.errors)
            if self.applied:
                errors.append(EditError(rel, f"{rel}: the other {self.applied} edit(s) to this file "
                                             f"are not applied either: a file gets all the "
                                             f"edits of an answer or none"))
            return None, errors + self.skipped
        new = ed.text()
        if new == old:
            return None, list(self.skipped)
        if self._old_lines is None:
            self._old_lines = old.splitlines(keepends=True)
        hunks = make_hunks_tracked(rel, old, new, ed.origin, ed.spans, old_lines=self._old_lines)
        heavy = deletion_heavy(old, new, hunks) if self.whole and self.exists else None
        own_final = old.endswith("\n") if old else True
        decided = ed.final_newline if ed.final_newline != own_final else None
        return FileProposal(rel, old, new, hunks, not self.exists, fp, heavy, decided), list(self.skipped)


def _build_file(rel: str, old: str, fp: str, exists: bool, edits: list[Edit],
                shifts: frozenset[int] | None = None
                ) -> tuple[FileProposal | None, list[EditError]]:
    """One file's proposal: all its edits, or none of them.

    Why all or none: the edits of one answer to one file belong together (a renamed
    function and its callers, an import and its use); writing some of them leaves a
    half-edited file the model never proposed.  An edit that looks applied already or
    is a no-op does not count as refused."""
    build = _FileBuild(rel, old, exists, shifts)
    build.more(edits)
    return build.result(fp)


class ProposalBuilder:
    """Rebuilds a proposal as edits stream in, recomputing only files whose edits (or
    content on disk) changed since the last build."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._rel: dict[str, str | WorkspaceError] = {}
        self._cache: dict[str, tuple[tuple[tuple[Edit, ...], frozenset[int]], str,
                                     FileProposal | None, list[EditError]]] = {}
        # per file: its edits so far applied (against which text, with which shifts), so a
        # file that got one more block applies only that block
        self._builds: dict[str, tuple[tuple[Edit, ...], frozenset[int], str, _FileBuild]] = {}
        self._shift_cache: dict[str, tuple[tuple[tuple[Edit, ...], str],
                                           frozenset[int]]] = {}

    def _shifted(self, rel: str, snap: tuple[str, str, bool], edits: list[Edit]
                 ) -> frozenset[int]:
        """The indentation shifts this file's edits show the answer has (cached)."""
        key = (tuple(edits), snap[1])
        got = self._shift_cache.get(rel)
        if got is None or got[0] != key:
            searches = [split_lines(e.search) for e in edits if e.kind != "whole_file"]
            got = (key, frozenset(indent_shifts(snap[0].splitlines(), searches)))
            self._shift_cache[rel] = got
        return got[1]

    def _relpath(self, path: str) -> str:
        if path not in self._rel:
            try:
                self._rel[path] = self.ws.relpath(path)
            except WorkspaceError as exc:
                self._rel[path] = exc
        got = self._rel[path]
        if isinstance(got, WorkspaceError):
            raise got
        return got

    def build(self, edits: list[Edit]) -> Proposal:
        order: list[str] = []
        by_path: dict[str, list[Edit]] = {}
        errors: list[EditError] = []
        for e in edits:
            try:
                rel = self._relpath(e.path)
            except WorkspaceError as exc:
                errors.append(EditError(e.path, str(exc)))
                continue
            if rel not in by_path:
                order.append(rel)
                by_path[rel] = []
            by_path[rel].append(e)
        files: list[FileProposal] = []
        snaps: dict[str, tuple[str, str, bool]] = {}
        for rel in order:
            try:
                snaps[rel] = self.ws.snapshot(rel)
            except WorkspaceError as exc:
                errors.append(EditError(rel, str(exc)))
        shifted = frozenset().union(*(self._shifted(rel, snaps[rel], by_path[rel])
                                      for rel in snaps))
        for rel in order:
            if rel not in snaps:
                continue
            old, fp, exists = snaps[rel]
            key = (tuple(by_path[rel]), shifted)
            hit = self._cache.get(rel)
            if hit is not None and hit[0] == key and hit[1] == fp:
                fprop, errs = hit[2], hit[3]
            else:
                fprop, errs = self._resumed(rel, old, fp, exists, by_path[rel], shifted)
                self._cache[rel] = (key, fp, fprop, errs)
            errors.extend(errs)
            if fprop is not None:
                files.append(fprop)
        return Proposal(files, errors)


    def _resumed(self, rel: str, old: str, fp: str, exists: bool, edits: list[Edit],
                 shifted: frozenset[int]) -> tuple[FileProposal | None, list[EditError]]:
        """`_build_file`, resuming from the file's earlier build when its edits then are
        the first of its edits now (same text on disk, same shifts): blocks already
        matched are not matched again."""
        done = self._builds.get(rel)
        if (done is not None and done[1] == shifted and done[2] == fp
                and len(done[0]) <= len(edits) and done[0] == tuple(edits[:len(done[0])])):
            build = done[3].copy()
            build.more(edits[len(done[0]):])
        else:
            build = _FileBuild(rel, old, exists, shifted)
            build.more(edits)
        self._builds[rel] = (tuple(edits), shifted, fp, build)
        return build.result(fp)


def build_proposal(ws: Workspace, edits: list[Edit]) -> Proposal:
    """Compose the edits per file (in order) against the files as they are now.

    A bad edit becomes an EditError; later edits to the same file and edits to other
    files still apply.  (While streaming, ProposalBuilder does the same incrementally.)
    """
    return ProposalBuilder(ws).build(edits)


def apply_proposal(ws: Workspace, proposal: Proposal, accepted: set[str], *,
                   message: str = "", commit: bool = True, force: bool = False
                   ) -> ApplyResult:
    """Write the accepted hunks through the workspace (journalled, atomic, committed).

    A file unchanged since the proposal is written as proposed; one changed underneath
    gets its accepted hunks re-based onto the new content when their context still
    matches, and is refused with the reason otherwise.  A file flagged
    `deletion_heavy` is refused unless `force` (the user's second key) is given.
    """
    from core.workspace.changes import apply_change, prepare

    records = []
    refused: list[EditError] = []
    chosen: list[str] = []
    for fp in proposal.files:
        ids = {h.id for h in fp.hunks if h.id in accepted}
        if not ids:
            continue
        if fp.deletion_heavy and not force:
            refused.append(EditError(fp.path, f"{fp.path}: {fp.deletion_heavy}; not "
                                              f"written without a second confirmation "
                                              f"(spark apply --force)"))
            continue
        try:
            current, cur_fp, exists = ws.snapshot(fp.path)
            if cur_fp == fp.base_fingerprint:
                new_text = fp.result_text(ids)
            elif fp.is_new and exists:
                raise WorkspaceError(f"{fp.path} was created by someone else after the "
                                     f"proposal; not overwritten")
            elif not exists:
                raise WorkspaceError(f"{fp.path} was deleted after the proposal; "
                                     f"refused, not re-created")
            else:
                moved, failed = fp.rebase(current, ids)
                if failed:
                    raise WorkspaceError(
                        f"{fp.path} changed on disk after the proposal and "
                        f"{len(failed)} accepted hunk(s) no longer match its content "
                        f"({', '.join(failed)}); refused, nothing written")
                try:
                    new_text = apply_hunks(current, moved)
                except ValueError as exc:
                    raise WorkspaceError(f"{fp.path}: {exc}; refused") from None
            if fp.is_new and not new_text:
                continue
            records.append(prepare(ws, fp.path, new_text,
                                   final_newline=fp.final_newline_for(ids)))
            chosen.extend(sorted(ids))
        except WorkspaceError as exc:
            refused.append(EditError(fp.path, str(exc)))
    if not records:
        return ApplyResult([], refused, None)
    try:
        res = apply_change(ws, records, message=message, commit=commit, hunks=chosen)
    except (WorkspaceError, OSError) as exc:  # the journal itself is unusable
        why = str(exc) if isinstance(exc, WorkspaceError) else (exc.strerror or str(exc))
        refused.extend(EditError(r.path, f"{r.path}: not written: {why}") for r in records)
        return ApplyResult([], refused, None)
    refused.extend(EditError(p, why) for p, why in res.refused)
    return ApplyResult(res.written, refused, res.change_id, res.commit, res.commit_error,
                       res.commit_notes)
