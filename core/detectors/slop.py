"""Slop detector: findings on the lines an edit adds, with a number per edit and session.

"My codebase grew by 20% in size today" (seed 000): a fast model pads code with loops
that should be comprehensions, comments that restate the line below, dead branches.
``analyze_change`` runs ruff (for the rules it has) and our own rules on the edited
file's new text and keeps only findings that touch added lines, so a user is never
blamed for the code that was already there. The score is findings per 100 added lines.

Given the added lines, the work follows what changed, not the file: only the top-level
statements holding added lines are parsed (the others' summaries are remembered by text,
slop_rules.partial_tree), our rules' answers per statement are remembered, and ruff reads
those statements plus the module-level code they may refer to (slop_rules.ruff_text).
"""

from __future__ import annotations

import ast
import difflib
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace

from core import pyparse
from core.detectors.ruff_rules import (
    RawFinding,
    RuffUnavailable,
    ruff_binary,
    run_ruff,
    run_ruff_many,
)
from core.detectors.slop_rules import (
    PartialModule,
    comprehension_fix,
    own_findings,
    partial_tree,
    real,
    ruff_text,
    statement_lines,
    top_statement,
)


@dataclass(frozen=True, slots=True)
class SlopFinding:
    """One piece of slop: where, what, why, and (when mechanical) the fix.

    ``fix`` replaces lines ``fix_start..fix_end`` (1-based, inclusive) of the new
    text; "" deletes them. ``fix_safe`` is False when the fix could change behaviour
    in corner cases (ruff's "unsafe" fixes): offer it, do not apply it blindly.
    """

    rule_id: str
    line: int
    message: str
    explanation: str
    fix: str | None = None
    end_line: int | None = None
    fix_start: int | None = None
    fix_end: int | None = None
    fix_safe: bool = False

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class SlopReport:
    """The slop of one edit (or one file taken as wholly added)."""

    path: str
    findings: list[SlopFinding]
    added_lines: int
    errors: list[str] = field(default_factory=list)  # e.g. ruff could not run

    @property
    def score(self) -> float:
        """Findings per 100 added lines (0 when nothing was added)."""
        return 100.0 * len(self.findings) / self.added_lines if self.added_lines else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "added_lines": self.added_lines,
            "score": round(self.score, 2),
            "findings": [f.to_dict() for f in self.findings],
            "errors": list(self.errors),
        }


def added_line_numbers(old_text: str, new_text: str) -> set[int]:
    """1-based numbers of the lines of `new_text` that `old_text` does not have there."""
    old, new = old_text.splitlines(), new_text.splitlines()
    if not old:
        return set(range(1, len(new) + 1))
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    added: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            added.update(range(j1 + 1, j2 + 1))
    return added


def line_changes(old_text: str, new_text: str) -> tuple[int, int]:
    """(lines added, lines removed) between two versions of a file."""
    old, new = old_text.splitlines(), new_text.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    added = removed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


def _with_comprehension_fix(
    f: RawFinding, text: str, tree: ast.Module | None, scoped: bool = True
) -> RawFinding:
    """Ruff finds loops that only append but offers no fix for them; we write one."""
    if f.rule_id != "PERF401" or f.fix is not None:
        return f
    top = top_statement(tree, f.line) if scoped and tree is not None else None
    if isinstance(tree, PartialModule):
        if top is None:  # a line outside every statement: no loop holds it
            return f
        # the loop's list is built in its own statement or, for a module-level loop, in
        # the statement before it: those two parsed are the tree comprehension_fix reads
        at = next(i for i, node in enumerate(tree.body) if node is top)
        top = real(top)
        tree = ast.Module(body=[*([real(tree.body[at - 1])] if at else []), top], type_ignores=[])
    fix = comprehension_fix(text, tree, f.line, top)
    if fix is None:
        return f
    replacement, start, end = fix
    # not "safe": the loop variable no longer exists after a comprehension
    return replace(f, fix=replacement, fix_start=start, fix_end=end, fix_safe=False)


def _has_comment(text: str, first: int, last: int, start: int = 1) -> bool:
    """Whether lines first..last (1-based) carry a comment (tokenized, not a '#' in a string).

    Tokenizing begins at line `start`, which must be where no bracket or string is open
    (the file's start or a top-level statement's first line).
    """
    import io
    import tokenize

    if start > 1:
        text = "\n".join(text.split("\n")[start - 1 :])
        first, last = first - start + 1, last - start + 1
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] > last:
                return False
            if tok.type == tokenize.COMMENT and tok.start[0] >= first:
                return True
    except (tokenize.TokenError, SyntaxError):
        return False
    return False


def _is_python(path: str) -> bool:
    return path.endswith((".py", ".pyi")) or not path


_RUFF_LOCK = threading.Lock()
_RUFF_CACHE: OrderedDict[tuple[str, str], list[RawFinding] | str] = OrderedDict()
_REPORTS: OrderedDict[tuple[str, str, frozenset[int]], SlopReport] = OrderedDict()
_CACHE_SIZE = 32


def _remember(cache: OrderedDict, key: object, value: object) -> None:
    with _RUFF_LOCK:
        cache[key] = value
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)


def _ruff_findings(path: str, text: str) -> list[RawFinding]:
    """run_ruff, remembered by (path, text): a rebuild that leaves a file's text as it
    was (another file changed, the duplicate index came up) costs no ruff process."""
    key = (path, text)
    with _RUFF_LOCK:
        hit = _RUFF_CACHE.get(key)
        ruff_binary()  # locate ruff once, under the lock: its first lookup is not thread-safe
    if hit is None:
        try:
            hit = run_ruff(path, text)
        except RuffUnavailable as exc:
            hit = str(exc)
        _remember(_RUFF_CACHE, key, hit)
    if isinstance(hit, str):
        raise RuffUnavailable(hit)
    return hit


# ruff is a process: it runs while this thread parses and runs our rules
_RUFF_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="slop-ruff")
_RUFF_RUNNING: dict[tuple[str, str], Future[list[RawFinding]]] = {}


def ruff_started(path: str, text: str) -> Future[list[RawFinding]]:
    """ruff over (path, text), started now in the pool or already running or done: a
    caller that knows the next file to analyse starts its ruff process while this one's
    rules run (a review of 6 files waited 6 times ~13 ms for ruff, one after the other)."""
    key = (path, text)
    with _RUFF_LOCK:
        running = _RUFF_RUNNING.get(key)
        if running is not None:
            return running
        future = _RUFF_POOL.submit(_ruff_findings, path, text)
        _RUFF_RUNNING[key] = future
    future.add_done_callback(lambda _f: _forget_running(key, future))
    return future


def _forget_running(key: tuple[str, str], future: Future[list[RawFinding]]) -> None:
    with _RUFF_LOCK:
        if _RUFF_RUNNING.get(key) is future:
            del _RUFF_RUNNING[key]


def prefetch(path: str, text: str, added: set[int]) -> None:
    """Start ruff for the analysis of these added lines of a file, which will be asked
    soon (nothing for other files)."""
    if _is_python(path) and added:
        ruff_started(path, ruff_text(text, added))


def prefetch_many(files: list[tuple[str, str, set[int]]]) -> None:
    """`prefetch` of several files' analyses, their ruff runs (those not known or running
    yet) in ONE ruff process: an answer's end asks for one analysis per edited file, and
    ruff's start is most of what a scoped run costs (ruff_rules.run_ruff_many)."""
    wanted = [(path, ruff_text(text, added)) for path, text, added in files if _is_python(path) and added]
    new: list[tuple[tuple[str, str], Future[list[RawFinding]]]] = []
    with _RUFF_LOCK:
        ruff_binary()  # located once, under the lock (see _ruff_findings)
        for key in dict.fromkeys(wanted):
            if key in _RUFF_RUNNING or key in _RUFF_CACHE:
                continue
            future: Future[list[RawFinding]] = Future()
            _RUFF_RUNNING[key] = future
            new.append((key, future))
    if len(new) == 1:  # alone: as ruff_started runs it
        (key, future), = new
        _RUFF_POOL.submit(_ruff_findings, *key).add_done_callback(lambda done: _settle(key, future, done))
    elif new:
        _RUFF_POOL.submit(_ruff_batch, new)


def _settle(key: tuple[str, str], future: Future[list[RawFinding]], done: Future[list[RawFinding]]) -> None:
    """Hand a single run's outcome to the future prefetch_many registered."""
    exc = done.exception()
    _done(key, future, done.result() if exc is None else str(exc))


def _ruff_batch(new: list[tuple[tuple[str, str], Future[list[RawFinding]]]]) -> None:
    """One ruff process for these (path, text) keys; each future gets its file's findings
    (or RuffUnavailable), remembered as _ruff_findings remembers them."""
    try:
        results: list[list[RawFinding] | str] = list(run_ruff_many([key for key, _ in new]))
    except RuffUnavailable:  # a file alone failed: each one alone, its own outcome
        results = []
        for key, _ in new:
            try:
                results.append(run_ruff(*key))
            except RuffUnavailable as exc:
                results.append(str(exc))
    except BaseException as exc:  # noqa: BLE001 - nobody may wait forever on these futures
        results = [f"ruff failed to run: {exc!r}"] * len(new)
    for (key, future), result in zip(new, results, strict=True):
        _done(key, future, result)


def _done(key: tuple[str, str], future: Future[list[RawFinding]], result: list[RawFinding] | str) -> None:
    _remember(_RUFF_CACHE, key, result)
    with _RUFF_LOCK:
        if _RUFF_RUNNING.get(key) is future:
            del _RUFF_RUNNING[key]
    if isinstance(result, str):
        future.set_exception(RuffUnavailable(result))
    else:
        future.set_result(result)


def analyze_change(
    path: str, old_text: str, new_text: str, added: set[int] | None = None
) -> SlopReport:
    """Slop that an edit of `path` from `old_text` to `new_text` adds.

    Only findings whose lines overlap an added line are kept. Non-Python files get
    no findings (their added lines still count, for the session's growth). `added`,
    the 1-based numbers of the added lines of `new_text`, spares a line diff of the
    two texts when the caller knows them (its hunks); our rules then look only at the
    statements holding those lines.
    """
    if added is None:
        added = added_line_numbers(old_text, new_text)
    key = (path, new_text, frozenset(added))
    with _RUFF_LOCK:
        done = _REPORTS.get(key)
    if done is None:
        done = _analyze(path, new_text, set(added), scoped=True)
        _remember(_REPORTS, key, done)
    return SlopReport(done.path, list(done.findings), done.added_lines, list(done.errors))


def _analyze(path: str, new_text: str, added: set[int], scoped: bool) -> SlopReport:
    """The report for lines `added` of `new_text`; `scoped=False` runs every rule over
    the whole file (the reference the scoped run must equal)."""
    report = SlopReport(path=path, findings=[], added_lines=len(added))
    if not added or not _is_python(path):
        return report
    # scoped, ruff reads the statements holding added lines and what they may refer to
    ruff = ruff_started(path, ruff_text(new_text, added) if scoped else new_text)
    # scoped, only the statements near the added lines are parsed (the others' segments
    # are remembered from earlier versions of the file)
    tree: ast.Module | None = partial_tree(new_text, added) if scoped else None
    if tree is None:
        try:
            tree = pyparse.parse(new_text)
        except (SyntaxError, ValueError, RecursionError):
            tree = None
    own = own_findings(new_text, tree, added if scoped else None)
    raw: list[RawFinding] = []
    try:
        raw += ruff.result()
    except RuffUnavailable as exc:
        report.errors.append(str(exc))
    raw += own
    seen: set[tuple[str, int]] = set()
    for f in sorted(raw, key=lambda r: (r.line, r.rule_id)):
        if (f.rule_id, f.line) in seen:
            continue
        if not any(n in added for n in range(f.line, max(f.end_line, f.line) + 1)):
            continue
        if f.rule_id == "S110" and _has_comment(new_text, f.line, f.end_line,
                                                 _tokenize_from(tree, f.line, scoped)):
            continue  # a commented `except: pass` is a deliberate, documented swallow
        f = _with_comprehension_fix(f, new_text, tree, scoped)
        seen.add((f.rule_id, f.line))
        report.findings.append(
            SlopFinding(
                rule_id=f.rule_id, line=f.line, message=f.message, explanation=f.explanation,
                fix=f.fix, end_line=f.end_line, fix_start=f.fix_start, fix_end=f.fix_end,
                fix_safe=f.fix_safe,
            )
        )
    return report


def _tokenize_from(tree: ast.Module | None, line: int, scoped: bool) -> int:
    """Where to start tokenizing to see `line`'s comments: its top-level statement."""
    top = top_statement(tree, line) if scoped and tree is not None else None
    return statement_lines(top)[0] if top is not None else 1


@dataclass
class SlopSession:
    """Slop accumulated over a session's accepted edits: the per-session score."""

    findings: int = 0
    added_lines: int = 0
    edits: int = 0
    by_rule: dict[str, int] = field(default_factory=dict)

    def add(self, report: SlopReport) -> None:
        self.edits += 1
        self.findings += len(report.findings)
        self.added_lines += report.added_lines
        for f in report.findings:
            self.by_rule[f.rule_id] = self.by_rule.get(f.rule_id, 0) + 1

    @property
    def score(self) -> float:
        return 100.0 * self.findings / self.added_lines if self.added_lines else 0.0
