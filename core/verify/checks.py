"""Fast checks on proposed file texts: syntax and ruff's error rules, in milliseconds.

Why these and only these: they catch what accepting part of an answer breaks (an import
hunk rejected -> undefined name; the use rejected -> unused import; a half-applied block
-> syntax error) and they run on text, before anything is written anywhere.  Python syntax
goes through `ast`, other languages through tree-sitter, JSON/TOML through their parsers;
ruff runs on each changed Python file through stdin (``--isolated``: the user's config must
not switch these rules off).

`new_problems(before, after)` is what a caller shows: problems the change introduced, not
the ones the file already had.  Lines shift under an edit, so problems are compared by
(path, rule, message with line numbers blanked), counted as a multiset.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import threading
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache

from core import pyparse
from core.context.tags import language_for
from core.detectors.ruff_rules import RuffUnavailable, ruff_binary
from core.edits.hunks import Hunk

# ruff's rules for code that fails when it runs (or is left over from a partial accept)
ERROR_RULES: dict[str, str] = {
    "F821": "undefined name",
    "F822": "undefined name in __all__",
    "F823": "local variable used before assignment",
    "F811": "redefinition of an unused name",
    "F401": "unused import",
    "F632": "`is` comparison with a literal",
    "F706": "`return` outside a function",
    "F704": "`yield` outside a function",
    "PLE0101": "`return` in `__init__`",
}
SYNTAX = "syntax"
MAX_SYNTAX_ERRORS = 3  # per file: the first error explains the rest
_LINE_NUMBERS = re.compile(r"\bline \d+")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a proposed file: where, which rule, and in words."""

    path: str
    line: int  # 1-based, in the proposed text
    code: str  # "syntax" or a ruff rule id
    message: str
    end_line: int = 0  # 0: same as line

    @property
    def key(self) -> tuple[str, str, str]:
        """What stays the same when an edit moves the problem up or down the file."""
        return self.path, self.code, _LINE_NUMBERS.sub("line N", self.message)

    def short(self) -> str:
        return f"{self.path}:{self.line}: {self.code} {self.message}"


def quick_check(files: Mapping[str, str]) -> list[Problem]:
    """Problems of each file text (path -> text, as it would be written), in path order.

    A file with a syntax error gets only its syntax problems (ruff would say the same);
    ruff runs concurrently for several Python files.  Raises nothing for bad input: a
    file ruff cannot read simply has no ruff problems.
    """
    paths = sorted(files)
    found = check_texts([(p, files[p]) for p in paths])
    return [p for problems in found for p in problems]


def check_texts(items: Sequence[tuple[str, str]]) -> list[list[Problem]]:
    """Problems of each (path, text) pair, in order; the same path may come twice (the
    text before and after an edit), and every ruff run of the batch goes concurrently.
    Python syntax is checked in the check worker process (`_syntax_jobs`)."""
    out: list[list[Problem]] = []
    ruff_todo: list[tuple[int, str, str]] = []
    keys = [_cache_key(path, text) for path, text in items]
    fresh = [i for i in range(len(items)) if keys[i] not in _CACHE]
    jobs = _syntax_jobs([items[i] for i in fresh])
    for i, (path, text) in enumerate(items):
        hit = _CACHE.get(keys[i])
        if hit is not None:  # the same text again (a rebuild while streaming): no ruff run
            out.append(list(hit))
            continue
        syntax = _syntax_of(jobs.get((path, text)), path, text)
        out.append(syntax)
        if not syntax and language_for(path) == "python" and text.strip():
            ruff_todo.append((i, path, text))
    if len(ruff_todo) == 1:
        i, path, text = ruff_todo[0]
        out[i] = check_ruff(path, text)
    elif ruff_todo:
        _ruff()  # located once, here: sysconfig's lazy set-up is not thread-safe
        with ThreadPoolExecutor(max_workers=min(4, len(ruff_todo))) as pool:
            results = pool.map(lambda job: check_ruff(job[1], job[2]), ruff_todo)
            for (i, _, _), problems in zip(ruff_todo, results, strict=True):
                out[i] = problems
    with _CACHE_LOCK:
        if len(_CACHE) > CACHE_SIZE:
            _CACHE.clear()
        for key, problems in zip(keys, out, strict=True):
            _CACHE[key] = tuple(problems)
    return out


CACHE_SIZE = 2048
_CACHE: dict[bytes, tuple[Problem, ...]] = {}
_CACHE_LOCK = threading.Lock()


def _cache_key(path: str, text: str) -> bytes:
    h = hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=16)
    h.update(b"\0")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.digest()


def new_problems(before: Iterable[Problem], after: Iterable[Problem]) -> list[Problem]:
    """The problems in `after` that `before` did not have (by key, counting repeats)."""
    seen = Counter(p.key for p in before)
    fresh: list[Problem] = []
    for p in after:
        if seen[p.key] > 0:
            seen[p.key] -= 1
        else:
            fresh.append(p)
    return fresh


# -- syntax ------------------------------------------------------------------------------

SYNTAX_WAIT_S = 10.0  # a worker that has not answered by then: the check runs here


def _syntax_jobs(items: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Future[list[Problem]]]:
    """Each Python text's syntax check, sent to the check worker process at once (they run
    there while this thread waits; none when there is no worker).

    Why: the parse is CPU under the GIL. While an answer streams the verifier checks the
    six 2,500-line files it edits as they were: ~150 ms of parsing that the UI thread's
    frames and keys waited behind (py-spy --gil: as long as half of what the UI thread ran
    meanwhile). The child runs the same `check_syntax` and remembers each statement's
    parse, so a file's new text parses there only what changed."""
    from core.check_worker import syntax_off_thread

    jobs: dict[tuple[str, str], Future[list[Problem]]] = {}
    for path, text in items:
        if language_for(path) == "python" and (path, text) not in jobs:
            job = syntax_off_thread(path, text)
            if job is None:
                break
            jobs[(path, text)] = job
    return jobs


def _syntax_of(job: Future[list[Problem]] | None, path: str, text: str) -> list[Problem]:
    """The worker's answer, or the same check in this thread (no worker, it failed, it
    was dropped or it did not answer within SYNTAX_WAIT_S): never a silent "no problem"."""
    if job is not None:
        from core.check_worker import CheckWorkerError, shared

        try:
            return list(job.result(timeout=SYNTAX_WAIT_S))
        except (CheckWorkerError, CancelledError, TimeoutError) as exc:
            if isinstance(exc, TimeoutError) and (worker := shared()) is not None:
                worker.drop([job])
    return check_syntax(path, text)


def check_syntax(path: str, text: str) -> list[Problem]:
    """Syntax problems of one file, by its extension; [] for kinds we cannot parse."""
    lang = language_for(path)
    if lang == "python":
        return _python_syntax(path, text)
    if lang is not None:
        return _tree_sitter_syntax(path, lang, text)
    lower = path.lower()
    if lower.endswith(".json"):
        try:
            json.loads(text or "null")
        except json.JSONDecodeError as exc:
            return [Problem(path, exc.lineno, SYNTAX, f"invalid JSON: {exc.msg}")]
    elif lower.endswith(".toml"):
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            why = re.sub(r"\s*\(at [^)]*\)", "", str(exc))
            return [Problem(path, int(m.group(1)) if m else 1, SYNTAX, f"invalid TOML: {why}")]
    return []


def _parses(tree: object) -> None:
    """The summary `pyparse.segments` keeps per statement for the syntax check: nothing
    (that it parsed is all this check asks; module-level: it is part of the memo key)."""


def _python_syntax(path: str, text: str) -> list[Problem]:
    """A whole-file parse held the GIL ~30 ms per 2,500-line file (the UI's keys waited
    that long per file, six originals while an answer streamed, six new texts after it):
    the file is parsed one top-level statement at a time (pyparse.segments, which equals
    one parse of the file and remembers each statement by its text, so a file's edited
    version re-parses only what changed), and whole only when that fails: for the message."""
    if pyparse.segments(text, _parses) is not None:
        return []
    try:
        pyparse.parse(text, filename=path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        return [Problem(path, line, SYNTAX, f"invalid Python: {exc.msg}",
                        exc.end_lineno or line)]
    except ValueError as exc:  # NUL bytes in source
        return [Problem(path, 1, SYNTAX, f"invalid Python: {exc}")]
    return []


@cache
def _parser(lang: str):  # a tree_sitter.Parser; imported lazily
    import tree_sitter_language_pack as pack

    return pack.get_parser(lang)  # type: ignore[arg-type]


def _tree_sitter_syntax(path: str, lang: str, text: str) -> list[Problem]:
    try:
        parser = _parser(lang)
    except Exception:  # noqa: BLE001 - a grammar missing from the pack: no check, not a crash
        return []
    tree = parser.parse(text.encode("utf-8", "replace"))
    if not tree.root_node.has_error:
        return []
    problems: list[Problem] = []
    stack = [tree.root_node]
    while stack and len(problems) < MAX_SYNTAX_ERRORS:
        node = stack.pop()
        if node.is_error or node.is_missing:
            what = f"missing {node.type}" if node.is_missing else "unexpected text"
            problems.append(Problem(path, node.start_point[0] + 1, SYNTAX,
                                    f"invalid {lang}: {what}", node.end_point[0] + 1))
            continue
        if node.has_error:
            stack.extend(reversed(node.children))
    return problems or [Problem(path, 1, SYNTAX, f"invalid {lang}")]


# -- ruff --------------------------------------------------------------------------------


_RUFF_LOCK = threading.Lock()


def _ruff() -> str:
    with _RUFF_LOCK:
        return ruff_binary()


def warm_up() -> None:
    """Locate ruff now, in the calling (UI) thread, before any worker needs it: the first
    lookup goes through sysconfig's lazy set-up, which is not thread-safe (two threads
    doing it at once made one fail with a TypeError; the detectors' ruff runs share it)."""
    try:
        _ruff()
    except (RuffUnavailable, TypeError, OSError):
        pass


def check_ruff(path: str, text: str, timeout: float = 20.0) -> list[Problem]:
    """Ruff's error rules on one Python text, as if it were the file `path`."""
    try:
        binary = _ruff()
    except (RuffUnavailable, TypeError, OSError):
        return []
    cmd = [
        binary, "check", "--isolated", "--no-cache", "--output-format", "json",
        "--target-version", "py311", "--select", ",".join(ERROR_RULES),
        "--stdin-filename", path or "edit.py", "--exit-zero", "-",
    ]  # fmt: skip
    try:
        proc = subprocess.run(cmd, input=text, capture_output=True, text=True,
                              timeout=timeout, check=False)
        items = json.loads(proc.stdout or "[]") if proc.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return []
    out = []
    for item in items:
        code = item.get("code")
        if code not in ERROR_RULES:
            continue  # syntax errors come as code None; ast already reported them
        out.append(Problem(path, item["location"]["row"], code, item.get("message", ""),
                           item["end_location"]["row"]))
    return sorted(out, key=lambda p: (p.line, p.code))


# -- badges ------------------------------------------------------------------------------


def new_line_ranges(hunks: Sequence[Hunk], accepted: set[str] | None = None
                    ) -> dict[str, tuple[str, int, int]]:
    """hunk id -> (path, first, last) 1-based lines the hunk occupies in the result text
    of its file with the accepted hunks (all when None); a pure deletion occupies the
    line just after it (first == last)."""
    by_path: dict[str, list[Hunk]] = {}
    for h in hunks:
        if accepted is None or h.id in accepted:
            by_path.setdefault(h.path, []).append(h)
    out: dict[str, tuple[str, int, int]] = {}
    for path, hs in by_path.items():
        shift = 0
        for h in sorted(hs, key=lambda h: (h.old_start, len(h.old_lines))):
            first = h.old_start + shift
            last = first + max(h.added, 1) - 1
            out[h.id] = (path, first, last)
            shift += h.added - h.removed
    return out


def problems_by_hunk(problems: Iterable[Problem], hunks: Sequence[Hunk],
                     accepted: set[str] | None = None) -> dict[str, list[Problem]]:
    """Badges: each problem on the accepted hunk whose new lines hold it, else on the
    nearest accepted hunk of its file (a deletion can break a line it never touched).
    Problems in files with no accepted hunk are under the key ""."""
    ranges = new_line_ranges(hunks, accepted)
    out: dict[str, list[Problem]] = {}
    for p in problems:
        mine = [(hid, a, b) for hid, (path, a, b) in ranges.items() if path == p.path]
        if not mine:
            out.setdefault("", []).append(p)
            continue
        hid = min(mine, key=lambda r: 0 if r[1] <= p.line <= r[2]
                  else min(abs(p.line - r[1]), abs(p.line - r[2])))[0]
        out.setdefault(hid, []).append(p)
    return out
