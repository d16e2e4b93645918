"""An answer's duplicate checks, one top-level statement at a time, remembered by its text.

Why: while an answer streams, each rebuild changes one block of one file, but the review
checked every function of the file that an added line touches, in the whole file's text
(~1 ms a function, and a 2,500-line text sent to the indexer each time); at the last token
the files changed since their last review were checked whole again (20-100 ms each). Here a
file is cut into its top-level statements where the check itself cuts it
(`normalize.top_level_starts`, no parse); the statements holding added lines are checked
once per (text, added rows) and their matches
kept relative to the statement's first line, so a statement unchanged since any earlier
pass (only moved) costs nothing. The statements not yet known go to the index in one call,
one after the other.

Equal to one whole-file check: the check parses the statements holding the lines it is
given, each alone, where `top_level_starts` cuts (a whole tolerant parse only when one does
not parse alone: then the whole file is checked here too); a function, its class and its
nested functions lie in one top-level statement, so each statement's matches are those of
the whole check there (tests/core/test_statement_checks.py compares them on real files).
Where two statements define the same top-level name (a nested function's "paired outer"
could then be the other one), the whole file is checked.
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from typing import Any

from core import pyparse

Check = Callable[..., Sequence[Any]]  # DuplicateIndex.check_source(source, path, lines=...)
MEMO_SIZE = 2048  # statements remembered per answer (8 answers kept)


@dataclasses.dataclass(frozen=True, slots=True)
class Statement:
    """Lines first..last (1-based) of a file: one top-level statement as the check cuts it."""

    first: int
    last: int
    text: str  # its lines joined by "\n", with a final "\n"


@dataclasses.dataclass(frozen=True, slots=True)
class Cut:
    """A file's lines and where its top-level statements start (0-based, ascending, the
    first 0): a statement's text is joined only when a check asks for it (a file has
    ~200 statements, a pass asks for a few)."""

    rows: list[str]
    starts: list[int]

    def statement(self, n: int) -> Statement:
        a = self.starts[n]
        b = self.starts[n + 1] if n + 1 < len(self.starts) else len(self.rows)
        return Statement(a + 1, b, "\n".join(self.rows[a:b]) + "\n")

    def holding(self, rows: list[int]) -> list[tuple[Statement, tuple[int, ...]]]:
        """The statements that hold some of `rows` (1-based, ascending), in order, each
        with those rows relative to its first line."""
        out: list[tuple[Statement, tuple[int, ...]]] = []
        i = 0
        while i < len(rows):
            n = bisect.bisect_right(self.starts, rows[i] - 1) - 1
            seg = self.statement(n)
            j = bisect.bisect_right(rows, seg.last, i)
            if j > i:
                out.append((seg, tuple(r - seg.first for r in rows[i:j])))
                i = j
            else:  # past the last line
                break
        return out


_CUTS: OrderedDict[str, Cut | None] = OrderedDict()
_CUTS_LOCK = threading.Lock()


def cut(text: str) -> Cut | None:
    """The file cut at its top-level statements where the duplicate check cuts it (None: a
    lone CR or code indented before any top-level line: check the whole file). The last
    16 texts' cuts are remembered (a pass asks for a text the previous pass cut)."""
    with _CUTS_LOCK:
        if text in _CUTS:
            return _CUTS[text]
    from core.detectors.normalize import top_level_starts

    plain = text.replace("\r\n", "\n")
    starts = None if "\r" in plain else top_level_starts(plain)
    out = None if starts is None else Cut(plain.split("\n"), starts)
    with _CUTS_LOCK:
        _CUTS[text] = out
        while len(_CUTS) > 16:
            _CUTS.popitem(last=False)
    return out


def _parses_alone(statement: Statement) -> bool:
    try:
        pyparse.parse(statement.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


class StatementChecks:
    """Duplicate checks of new texts, per top-level statement, remembered (thread-safe).

    One per answer: a statement's matches depend on the index, which changes with the
    tree, and an answer's passes are seconds apart."""

    def __init__(self, check: Check, *, index: object = None, name: str = "") -> None:
        self.check = check
        self.index = index  # what `check` asks (its owner starts a new memo when it is replaced)
        self.name = name  # the answer's, where a worker process keeps a twin of this memo
        self._memo: OrderedDict[tuple[str, str, tuple[int, ...]], tuple[Any, ...]] = OrderedDict()
        # statements being checked now (a superseded pass's check still runs: the next
        # pass waits for it rather than queueing the same work behind it at the index)
        self._running: dict[tuple[str, str, tuple[int, ...]], threading.Event] = {}
        self._lock = threading.Lock()

    def matches(self, text: str, path: str, lines: Collection[int]) -> list[Any]:
        """What `check(text, path, lines=lines)` returns, from the statements' memo, in
        file order (by `new_line`; one function's twins in the check's order)."""
        rows = sorted(set(lines))
        cuts = cut(text)
        if cuts is None or not rows:
            return self._whole(text, path, rows)
        wanted = cuts.holding([r for r in rows if r >= 1])
        known: dict[int, tuple[Any, ...]] = {}
        waits: dict[int, threading.Event] = {}
        mine: list[int] = []
        with self._lock:
            unknown = [seg for seg, rel in wanted if (path, seg.text, rel) not in self._memo]
        if not all(_parses_alone(seg) for seg in unknown):  # the check parses the whole file
            return self._whole(text, path, rows)
        with self._lock:
            for n, (seg, rel) in enumerate(wanted):
                key = (path, seg.text, rel)
                hit = self._memo.get(key)
                if hit is not None:
                    known[n] = hit
                elif key in self._running:  # another pass asked already: its answer serves
                    waits[n] = self._running[key]
                else:
                    self._running[key] = threading.Event()
                    mine.append(n)
        if mine:
            try:
                for n, found in self._check_missing(path, [wanted[n] for n in mine]).items():
                    known[mine[n]] = found
            finally:
                with self._lock:
                    for n in mine:
                        self._running.pop((path, wanted[n][0].text, wanted[n][1])).set()
        for n, event in waits.items():
            event.wait()
            with self._lock:
                hit = self._memo.get((path, wanted[n][0].text, wanted[n][1]))
            if hit is None:  # that check failed: this one asks itself
                hit = self._check_missing(path, [wanted[n]])[0]
            known[n] = hit
        out: list[Any] = []
        owners: dict[str, int] = {}
        for n, (seg, _rel) in enumerate(wanted):
            for match in known[n]:
                top = match.new_symbol.split(".")[0]
                if owners.setdefault(top, n) != n:  # one name defined by two statements
                    return self._whole(text, path, rows)
                out.append(dataclasses.replace(match, new_line=match.new_line + seg.first - 1))
        return out  # in file order (the statements' order; each statement's in the check's)

    def _whole(self, text: str, path: str, rows: list[int]) -> list[Any]:
        return sorted(self.check(text, path, lines=rows), key=lambda m: m.new_line)

    def _check_missing(self, path: str, todo: list[tuple[Statement, tuple[int, ...]]]
                       ) -> dict[int, tuple[Any, ...]]:
        """One check of the statements not known yet, one after the other (each parses
        alone, so together they parse as in the file), its matches split back to them,
        relative, and remembered."""
        parts: list[str] = []
        starts: list[int] = []  # each statement's first line in the text checked
        asked: list[int] = []
        line = 1
        for seg, rel in todo:
            parts.append(seg.text)
            starts.append(line)
            asked.extend(line + r for r in rel)
            line += seg.last - seg.first + 1
        found = self.check("".join(parts), path, lines=asked)
        per: dict[int, list[Any]] = {n: [] for n in range(len(todo))}
        for match in found:
            n = max(0, bisect.bisect_right(starts, match.new_line) - 1)
            per[n].append(dataclasses.replace(match, new_line=match.new_line - starts[n] + 1))
        out = {n: tuple(ms) for n, ms in per.items()}
        with self._lock:
            for n, (seg, rel) in enumerate(todo):
                self._memo[(path, seg.text, rel)] = out[n]
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        return out
