"""`ast.parse` that is safe when several threads parse at once.

Building AST objects in two threads at once (the verifier's syntax check beside the
indexer's or the review's parse) can raise ``SystemError: AST constructor recursion depth
mismatch`` in CPython 3.11 (gh-106905): the depth counter belongs to the interpreter, not
the thread. Every parse in core goes through `parse`, which holds one lock while the tree
is built (a parse holds the GIL throughout, so the lock costs no parallelism) and tries
again if a parse outside it still trips the check. A real syntax error is still a
``SyntaxError``.

`segments` parses a file one top-level statement at a time and remembers each one's
summary by its text: the review of an answer re-parses only the statements its last
blocks changed, not the 2,500-line file around them.
"""

from __future__ import annotations

import ast
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

ATTEMPTS = 4
_LOCK = threading.Lock()


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse(text), one thread at a time, retried on CPython's spurious SystemError."""
    for attempt in range(ATTEMPTS):
        try:
            with _LOCK:
                return ast.parse(text, filename=filename)
        except SystemError:
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


# -- a file parsed one top-level statement at a time, each remembered by its text ---------

_START = re.compile(r"^(?![\s#)\]}]|(?:else|elif|except|finally)\b)", re.MULTILINE)
# what a segment that does not parse alone may be missing: the rest of a string, a bracket,
# a block or a decorated definition that goes on in the next segment
_GOES_ON = ("never closed", "unterminated", "EOF", "expected an indented block")
_PARSER_FUTURE = re.compile(r"__future__\s+import\s+\(?[\w\s,\\]*barry_as_FLUFL")  # `<>` for `!=`
MAX_MERGE = 48  # segments joined to make one parse before giving up (a whole-file parse then)
MEMO_SIZE = 16_384  # segments remembered (a 2,500-line file has ~200)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Segment(Generic[T]):
    """A run of the file's lines that parses alone: one top-level statement (or a few,
    where a string or bracket held a line at column 0) with the comments after it."""

    first: int  # 1-based line of its first line in the file
    last: int  # 1-based line of its last line
    text: str
    summary: T  # what `summarize` made of its parse, positions relative to `first`

    def parse(self) -> ast.Module:
        """Its statements at their line numbers in the file (a fresh parse, not shared)."""
        return parse("\n" * (self.first - 1) + self.text)


_MEMO: OrderedDict[tuple[Callable[[ast.Module], Any], str], Any] = OrderedDict()
_MISSING = object()
_REFUSED = object()  # a text the parser refuses otherwise (NUL bytes, nested too deep)
_MEMO_LOCK = threading.Lock()


def _summary_of(summarize: Callable[[ast.Module], T], text: str) -> Any:
    """summarize(parse(text)) remembered by text; the SyntaxError when it does not parse
    alone; _REFUSED when the parser refuses it otherwise."""
    key = (summarize, text)
    with _MEMO_LOCK:
        hit = _MEMO.get(key, _MISSING)
        if hit is not _MISSING:
            _MEMO.move_to_end(key)
            return hit
    try:
        got: Any = summarize(parse(text))
    except SyntaxError as exc:
        got = exc
    except (ValueError, RecursionError, MemoryError):
        got = _REFUSED
    with _MEMO_LOCK:
        _MEMO[key] = got
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    return got


def _goes_on(exc: SyntaxError, text: str) -> bool:
    """Whether a segment's syntax error may be its statement going on past its end."""
    if any(word in exc.msg for word in _GOES_ON):
        return True
    return (exc.lineno or 0) >= len(text.rstrip().split("\n"))


def segments(text: str, summarize: Callable[[ast.Module], T]) -> list[Segment[T]] | None:
    """The file as segments that each parse alone, in order, covering every line; None
    when it cannot be cut so (a syntax error, a lone CR, a parser-changing future import):
    parse the whole file then.

    Why this equals one parse of the file: a segment starts on a line at column 0 and its
    parse leaves no string, bracket or continuation open, so the tokenizer enters the next
    segment in the state a fresh parse starts in, and the next segment's first statement
    cannot be a clause of the last one (it parses alone). So the file's statements are
    the segments' statements, each the same tree shifted by the segment's first line
    (tests/core/test_pyparse_segments.py checks it on real files). A segment's summary is
    remembered by its text: an edited file re-parses only the statements that changed.

    Why not `normalize.top_level_starts` for the cut (the duplicate checks' cutter): this
    parses every piece in order, so any column-0 line may be a candidate (`_START`, one
    regex) and a wrong one is merged away by the parse; that one must find the true starts
    without parsing what comes before, so it lexes strings and brackets. Cut at its lines,
    the segments are the same on 4,096 of 4,123 real files (the other 27 cut where this
    gives up after MAX_MERGE), but a cut with every piece remembered, what each streaming
    pass pays per file, took 0.88 -> 2.3 ms of CPU per 60-120 kB file.
    """
    key = (summarize, text)
    with _MEMO_LOCK:
        if key in _CUTS:
            return _CUTS[key]
    cut = _cut(text, summarize)
    with _MEMO_LOCK:
        _CUTS[key] = cut
        while len(_CUTS) > CUTS_SIZE:
            _CUTS.popitem(last=False)
    return cut


# the last texts cut (a review cuts a file's text for its slop, its ruff and its
# duplicate check): the same list again
_CUTS: OrderedDict[tuple[Callable[[ast.Module], Any], str], Any] = OrderedDict()
CUTS_SIZE = 24


def _cut(text: str, summarize: Callable[[ast.Module], T]) -> list[Segment[T]] | None:
    if text.count("\r") != text.count("\r\n") or _PARSER_FUTURE.search(text):
        return None
    starts = [m.start() for m in _START.finditer(text) if m.start() < len(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    starts.append(len(text))
    out: list[Segment[T]] = []
    line = 1
    i = 0
    while i < len(starts) - 1:
        j = i + 1
        while True:
            piece = text[starts[i]:starts[j]]
            got = _summary_of(summarize, piece)
            if got is _REFUSED:
                return None
            if not isinstance(got, SyntaxError):
                break
            if j - i >= MAX_MERGE or j == len(starts) - 1 or not _goes_on(got, piece):
                return None
            j += 1
        rows = piece.count("\n")
        last = line + rows - (1 if piece.endswith("\n") else 0)
        out.append(Segment(line, max(line, last), piece, got))
        line += rows
        i = j
    return out
