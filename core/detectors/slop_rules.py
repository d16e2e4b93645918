"""Slop rules ruff does not have: restating comments, `len(x) == 0`, long functions,
deep nesting, repeated blocks.

Each rule is precise before it is thorough: it must stay silent on ordinary code (the
project's own tree is the test), because a detector that cries wolf gets ignored.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import functools
import hashlib
import io
import itertools
import re
import threading
import tokenize
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from core import pyparse
from core.detectors.ruff_rules import RawFinding

LONG_FUNCTION_LINES = 100  # a function longer than this is reported once
DEEP_NESTING = 5  # block statements nested this deep inside a function
REPEATED_BLOCK_LINES = 4  # identical runs of this many substantial lines, seen twice
REPEATED_BLOCK_CHARS = 120  # ... holding at least this much code
REPEATED_LITERAL_ITEMS = 4  # container literals of constants this big, written twice

EXPLAIN = {
    "SLOP001": "A comment that says what the next line already says is noise to read "
    "and goes stale; comments should say why.",
    "SLOP002": "`len(x) == 0` on a list, dict, set, tuple or str is `not x` (and "
    "`len(x) > 0` is `x`).",
    "SLOP003": f"A function over {LONG_FUNCTION_LINES} lines does several jobs: split it.",
    "SLOP004": f"Blocks nested {DEEP_NESTING} deep are hard to follow: return early, "
    "extract a function.",
    "SLOP005": f"The same {REPEATED_BLOCK_LINES}+ lines appear more than once: a copy to "
    "keep in sync, make it a function or a loop.",
    "SLOP006": "The same literal list/dict/set/tuple is written out twice: name it once "
    "as a module constant.",
}

_STOP = frozenset({
    "a", "an", "the", "to", "of", "and", "or", "in", "on", "for", "from", "with", "this",
    "that", "it", "its", "is", "are", "be", "we", "our", "then", "now", "here", "there", "new",
    "value", "values", "variable", "var", "given", "each", "all", "into", "by", "as", "at",
    "up", "out", "just", "do", "does", "some",
})
# what a comment word may say for the syntax of the line below it
_SYNONYMS = {
    "for": {"loop", "iterate", "iterating", "looping", "go", "through", "over", "every"},
    "return": {"return", "returns", "returning", "give", "result"},
    "+=": {"increment", "increase", "add", "adds", "increments"},
    "-=": {"decrement", "decrease", "subtract"},
    "=": {"set", "sets", "assign", "assigns", "store", "create", "creates", "initialize",
          "init", "initialise", "define", "save", "get", "gets"},
    "if": {"check", "checks", "if", "whether", "when"},
    "import": {"import", "imports"},
    "append": {"add", "adds", "append", "appends", "push"},
    "print": {"print", "prints", "output", "show", "display"},
    "while": {"loop", "while", "until", "repeat"},
    "def": {"define", "function", "method"},
    "class": {"define", "class"},
    "raise": {"raise", "throw", "error"},
}  # fmt: skip


def _words(text: str) -> list[str]:
    """Lower-case words of identifiers too: `max_retries`/`maxRetries` -> max, retries."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return [w.lower() for w in re.findall(r"[A-Za-z]+", text)]


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _comment_rows(text: str, first_row: int = 1) -> list[tuple[int, str]]:
    """(row, comment) of each comment outside brackets, rows counted from `first_row`.

    `text` must begin where the tokenizer's bracket depth is 0 (a file, or the first line
    of a statement or of a comment line): then its comments are those of the whole file.
    Raises tokenize.TokenError / SyntaxError when the text does not tokenize.
    """
    out: list[tuple[int, str]] = []
    depth = 0
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth = max(0, depth - 1)
        if tok.type == tokenize.COMMENT and not depth:
            out.append((tok.start[0] + first_row - 1, tok.string))
    return out


def restating_comments(text: str, tree: ast.Module | None) -> Iterator[RawFinding]:
    """SLOP001: a whole-line comment whose every content word is in the next code line."""
    try:
        comments = _comment_rows(text)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return
    yield from _restating(text.split("\n"), comments)


def _restating(lines: list[str], comments: list[tuple[int, str]]) -> Iterator[RawFinding]:
    """SLOP001 for the given comments, `lines` being the whole file's.

    Comments inside brackets are never given: they label data, they do not narrate code.
    """
    for row, comment in comments:
        if lines[row - 1].strip() != comment.strip():
            continue  # inline comments explain the line they sit on; leave them
        if row > 1 and lines[row - 2].strip().startswith("#"):
            continue  # part of a comment paragraph: prose, not a paraphrase
        body = comment.lstrip("#").strip()
        if not body or body.startswith(("!", "type:", "noqa", "fmt:", "pragma", "TODO", "-")):
            continue
        if any(c in body for c in "`'\"()[]:=<>/%") or len(body.split()) > 8:
            continue  # quotes code or explains: not a paraphrase
        code = _next_code_line(lines, row)
        if code is None or code.startswith("#"):
            continue
        content = [_stem(w) for w in _words(body) if w not in _STOP]
        if len(content) < 2:
            continue
        if len(body.split()) < 2:
            continue  # a one-word label ("# PyPy", "# non-blocking") names a case
        names = {_stem(w) for w in _words(code)}
        actions: set[str] = set()
        for key, syn in _SYNONYMS.items():
            if re.search(rf"(^|\W){re.escape(key)}(\W|$)", code):
                actions |= {_stem(s) for s in syn}
        narrates = len(content) >= 3 or any(w in actions for w in content)
        if narrates and all(w in names or w in actions for w in content):
            yield RawFinding(
                "SLOP001", row, row, f"comment restates the code: {comment.strip()!r}",
                EXPLAIN["SLOP001"], fix="", fix_start=row, fix_end=row, fix_safe=True,
            )


def _next_code_line(lines: list[str], row: int) -> str | None:
    for line in lines[row:]:
        stripped = line.strip()
        if stripped:
            return stripped
        if not stripped:
            return None  # a comment followed by a blank line heads a section
    return None


_SEQ_CALLS = {"list", "dict", "set", "tuple", "str", "sorted", "frozenset"}
_SEQ_ANNOT = re.compile(r"^(list|dict|set|tuple|str|frozenset|Sequence|Mapping|List|Dict|Set|Tuple)\b")


def _known_sequences(func: ast.AST) -> set[str]:
    """Names a function binds to a builtin container or str: safe to test for truth."""
    names: set[str] = set()
    if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for arg in func.args.args + func.args.kwonlyargs + func.args.posonlyargs:
            if arg.annotation is not None and _SEQ_ANNOT.match(ast.unparse(arg.annotation)):
                names.add(arg.arg)
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and _is_container(value):
            names.add(target.id)
    return names


def _is_container(value: ast.expr) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp,
                          ast.SetComp, ast.JoinedStr)):
        return True
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in _SEQ_CALLS
    )


def _len_test(test: ast.expr, known: set[str]) -> tuple[str, bool] | None:
    """(name, is_empty_test) for `len(name) == 0`-like comparisons on a known container."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if not (isinstance(right, ast.Constant) and type(right.value) is int):
        return None
    if not (
        isinstance(left, ast.Call)
        and isinstance(left.func, ast.Name)
        and left.func.id == "len"
        and len(left.args) == 1
        and not left.keywords
        and isinstance(left.args[0], ast.Name)
        and left.args[0].id in known
    ):
        return None
    name, n = left.args[0].id, right.value
    if (isinstance(op, ast.Eq) and n == 0) or (isinstance(op, ast.Lt) and n == 1):
        return name, True
    if (isinstance(op, (ast.NotEq, ast.Gt)) and n == 0) or (isinstance(op, ast.GtE) and n == 1):
        return name, False
    return None


def len_comparisons(text: str, tree: ast.Module | None) -> Iterator[RawFinding]:
    """SLOP002: `if len(x) == 0:` where x is known to be a builtin container or str."""
    if tree is None:
        return
    lines = text.split("\n")
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        known = _known_sequences(func)
        if not known:
            continue
        for node in ast.walk(func):
            if not isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                continue
            hit = _len_test(node.test, known)
            if hit is None:
                continue
            name, empty = hit
            row, test = node.test.lineno, node.test
            fix = None
            if row == test.end_lineno:
                line = lines[row - 1]
                new = f"not {name}" if empty else name
                fix = line[: test.col_offset] + new + line[test.end_col_offset :] + "\n"
            yield RawFinding(
                "SLOP002", row, row, f"`{ast.unparse(test)}` is `{'not ' if empty else ''}{name}`",
                EXPLAIN["SLOP002"], fix=fix, fix_start=row if fix else None,
                fix_end=row if fix else None, fix_safe=fix is not None,
            )


_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
           ast.Match)  # fmt: skip


def long_functions(text: str, tree: ast.Module | None) -> Iterator[RawFinding]:
    """SLOP003: functions longer than LONG_FUNCTION_LINES (docstring included)."""
    if tree is None:
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > LONG_FUNCTION_LINES:
                yield RawFinding(
                    "SLOP003", node.lineno, node.end_lineno or node.lineno,
                    f"`{node.name}` is {length} lines long", EXPLAIN["SLOP003"],
                )


def deep_nesting(text: str, tree: ast.Module | None) -> Iterator[RawFinding]:
    """SLOP004: a block statement DEEP_NESTING levels deep inside a function (once each)."""
    if tree is None:
        return

    def walk(node: ast.AST, depth: int) -> Iterator[RawFinding]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue  # nested functions are reported on their own
            if isinstance(child, _BLOCKS):
                d = depth + 1
                is_elif = (
                    isinstance(node, ast.If) and isinstance(child, ast.If)
                    and node.orelse == [child]
                )  # fmt: skip
                if is_elif:
                    d = depth  # `elif` is not deeper than its `if`
                if d == DEEP_NESTING and not is_elif:
                    yield RawFinding(
                        "SLOP004", child.lineno, child.end_lineno or child.lineno,
                        f"block nested {d} levels deep", EXPLAIN["SLOP004"],
                    )
                    continue
                yield from walk(child, d)
            else:
                yield from walk(child, depth)

    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from walk(func, 0)


def _string_lines(tree: ast.Module | None, lines: list[str] | None = None) -> set[int]:
    """Lines inside multi-line string literals (docstrings repeat by design).

    With the file's `lines`, each top-level statement's rows are remembered by its text
    (and column): a file rebuilt after an edit walks only the statements that changed.
    """
    rows: set[int] = set()
    if tree is None:
        return rows
    if lines is None:
        return _string_rows(tree)
    for node in tree.body:
        first, last = statement_lines(node)
        if first == last:
            continue  # one line holds no multi-line string
        if isinstance(node, Elided):
            rows.update(first + r for r in node.string_rows)
            continue
        key = ("\n".join(lines[first - 1 : last]), node.col_offset)
        relative = _STRING_ROWS.get(key)
        if relative is None:
            relative = tuple(row - first for row in _string_rows(node))
            if len(_STRING_ROWS) > 50_000:
                _STRING_ROWS.clear()
            _STRING_ROWS[key] = relative
        rows.update(first + r for r in relative)
    return rows


_STRING_ROWS: dict[tuple[str, int], tuple[int, ...]] = {}
_RULE_LOCK = threading.Lock()  # the memos below (the check worker's threads share them)


class Elided(ast.Pass):
    """A top-level statement of a `PartialModule` not parsed: only its lines (decorators
    included) and the rows of its multi-line strings, relative to its first line, are
    known. One near the added lines can be parsed when a rule needs its inside
    (`real`): most rules' answers for an unchanged statement are remembered by its text,
    so an edited file's statements are mostly never parsed."""

    string_rows: tuple[int, ...] = ()
    segment: pyparse.Segment | None = None  # where to parse it from (a statement near added lines)
    index: int = 0  # its place among the segment's statements
    parsed: dict[int, list[ast.stmt]] | None = None  # the tree's segments parsed so far, by first line


def real(node: ast.stmt) -> ast.stmt:
    """The statement itself: an `Elided` one near the added lines is parsed (once per
    tree and segment); any other node as it is."""
    if not isinstance(node, Elided) or node.segment is None or node.parsed is None:
        return node
    seg = node.segment
    body = node.parsed.get(seg.first)
    if body is None:
        body = node.parsed[seg.first] = seg.parse().body
    return body[node.index]


class PartialModule(ast.Module):
    """A file's tree whose statements near the added lines are parsed and the others are
    `Elided` (built from their segments' remembered summaries, `partial_tree`). A rule
    that needs every statement's inside asks `complete()`: one parse of the whole file."""

    source: str = ""
    segments: tuple[pyparse.Segment, ...] = ()  # the file's, in order (their summaries)
    _complete: ast.Module | None = None

    def complete(self) -> ast.Module:
        if self._complete is None:
            self._complete = parse_file(self.source)
        return self._complete


def parse_file(text: str) -> ast.Module:
    return pyparse.parse(text)


class _Stmt(NamedTuple):
    """What a segment's summary keeps of one top-level statement (lines relative to the
    segment, 1-based)."""

    first: int  # decorators included
    last: int
    rows: tuple[int, ...]  # its multi-line strings' rows, relative to `first`
    stub: str | None  # for a def or class, the one line that binds its name the same way


_Summary = tuple[_Stmt, ...]


def _summary(module: ast.Module) -> _Summary:
    """Per top-level statement of a segment parsed alone: see `_Stmt`."""
    out = []
    for node in module.body:
        first, last = statement_lines(node)
        rows = () if first == last else tuple(sorted(r - first for r in _string_rows(node)))
        stub = None
        if isinstance(node, ast.ClassDef):
            stub = f"class {node.name}: ..."
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stub = f"{'async ' if isinstance(node, ast.AsyncFunctionDef) else ''}def {node.name}(): ..."
        out.append(_Stmt(first, last, rows, stub))
    return tuple(out)


_SEG_DISPLAYS: OrderedDict[str, tuple[tuple[tuple[str, int, int], ...], ...]] = OrderedDict()
_SEG_DISPLAYS_SIZE = 16_384


def _segment_displays(seg: pyparse.Segment) -> tuple[tuple[tuple[str, int, int], ...], ...]:
    """Per top-level statement of a segment, the literals SLOP006 reads in its function
    code, in the rule's order: (digest of the dump, line, end), lines relative to the
    segment (its text parsed alone, as its summary was). Asked only when an added line
    holds such a literal (most edits hold none), so a file's first cut for slop does not
    walk every function for them (2/3 of the summary's cost); remembered by the text."""
    with _RULE_LOCK:
        known = _SEG_DISPLAYS.get(seg.text)
    if known is None:
        known = tuple(_statement_displays(node) for node in pyparse.parse(seg.text).body)
        with _RULE_LOCK:
            _SEG_DISPLAYS[seg.text] = known
            while len(_SEG_DISPLAYS) > _SEG_DISPLAYS_SIZE:
                _SEG_DISPLAYS.popitem(last=False)
    return known


def _statement_displays(statement: ast.stmt) -> tuple[tuple[str, int, int], ...]:
    """The literals `repeated_literals` compares in one top-level statement, in the order
    it meets them: each outermost function in breadth-first order (as `ast.walk` meets
    them), and within one, its nodes in walk order, skipping literals inside literals.
    A whole file's SLOP006 findings follow from these lists, statement after statement
    (`_repeated_literals_of`), without a tree of the file."""
    out: list[tuple[str, int, int]] = []
    todo: deque[ast.AST] = deque([statement])
    while todo:
        node = todo.popleft()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.extend(_function_displays(node))  # its nested functions walked with it
            continue
        todo.extend(ast.iter_child_nodes(node))
    return tuple(out)


_DISPLAY_TYPES = (ast.List, ast.Set, ast.Tuple, ast.Dict)


def _function_displays(func: ast.AST) -> list[tuple[str, int, int]]:
    """The function's literals in `ast.walk` order. The walk is ast.walk's (breadth
    first, children in field order) written out: every statement of a file is summarized
    once when a file is first cut for slop (the answer's first version of each file), and
    ast.walk's generators made this ~80 % of the summary (12 of 15 ms per 2,500 lines)."""
    nested: set[int] = set()  # a literal's items: rows of a data table, not compared
    out = []
    todo: deque[ast.AST] = deque([func])
    ast_type, display_types = ast.AST, _DISPLAY_TYPES
    while todo:
        node = todo.popleft()
        kids: list[ast.AST] = []
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast_type):
                kids.append(value)
            elif isinstance(value, list):
                kids.extend(item for item in value if isinstance(item, ast_type))
        todo.extend(kids)
        if not isinstance(node, display_types):
            continue  # (only a display can be a constant display)
        nested.update(id(c) for c in kids)
        if id(node) in nested or not _constant_display(node):
            continue
        # the dump's digest: what the rule compares, without keeping a big table's text
        key = hashlib.blake2b(ast.dump(node).encode(), digest_size=16).hexdigest()
        out.append((key, node.lineno, node.end_lineno or node.lineno))
    return out


def _repeated_literals_of(tree: PartialModule) -> Iterator[RawFinding]:
    """`repeated_literals` of the whole file, from its segments' summaries."""
    first_seen: dict[str, int] = {}
    for seg in tree.segments:
        for displays in _segment_displays(seg):
            for key, line, end in displays:
                row, end_row = seg.first + line - 1, seg.first + end - 1
                if key not in first_seen:
                    first_seen[key] = row
                    continue
                yield RawFinding("SLOP006", row, end_row, f"this literal repeats the one on line {first_seen[key]}",
                                 EXPLAIN["SLOP006"])


_FILE_DIRECTIVE = re.compile(r"#\s*(?:ruff|flake8)\s*:\s*noqa", re.IGNORECASE)
_IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s", re.MULTILINE)
_SCOPE_LINE = re.compile(r"^\s*(?:global|nonlocal)\s", re.MULTILINE)


_RUFF_TEXTS: OrderedDict[tuple[str, frozenset[int]], str] = OrderedDict()


def ruff_text(text: str, added: set[int]) -> str:
    """`_ruff_text`, remembered for the last few (the review starts ruff for a file
    before its analysis, which asks again)."""
    key = (text, frozenset(added))
    with _RULE_LOCK:
        hit = _RUFF_TEXTS.get(key)
    if hit is None:
        hit = _ruff_text(text, added)
        with _RULE_LOCK:
            _RUFF_TEXTS[key] = hit
            while len(_RUFF_TEXTS) > 16:
                _RUFF_TEXTS.popitem(last=False)
    return hit


def _ruff_text(text: str, added: set[int]) -> str:
    """What ruff needs to see of the file for its findings on the added lines: the
    top-level statements holding added lines and all module-level code that is not a def
    or class, at their own lines; every other def or class is one line that binds its
    name the same way (`def name(): ...`), the rest of its lines blank. ruff then reads
    ~a tenth of a big file for the same findings there (tests/core/detectors/
    test_slop_scope.py compares them on real files).

    The selected rules (RUFF_RULES) look inside one function, except F401 (an import is
    unused in the whole file: a statement holding added lines that imports gets the whole
    file) and the bindings a rule may resolve (kept: module-level code and each name's
    kind; a `global`/`nonlocal` in a left-out def, or a file-level noqa, gets the whole file).
    """
    segs = pyparse.segments(text, _summary)
    if segs is None or _FILE_DIRECTIVE.search(text):
        return text
    rows = sorted(added)
    scoping = sorted(text.count("\n", 0, m.start()) + 1 for m in _SCOPE_LINE.finditer(text))
    out: list[str] = []  # the segments' texts, or their stubs: as many lines, same line ends
    for seg in segs:
        i = bisect.bisect_left(rows, seg.first)
        hot = i < len(rows) and rows[i] <= seg.last
        if hot and _IMPORT_LINE.search(seg.text):
            return text
        if hot or any(stmt.stub is None for stmt in seg.summary):
            out.append(seg.text)
            continue
        j = bisect.bisect_left(scoping, seg.first)
        if j < len(scoping) and scoping[j] <= seg.last:  # a left-out def binds a global
            return text
        out.append(_stubbed(seg))
    return "".join(out)


_STUBS: OrderedDict[str, str] = OrderedDict()


def _stubbed(seg: pyparse.Segment) -> str:
    """A segment of defs and classes as `ruff_text` gives it: each one's binding line
    where it starts, its other lines blank (as many lines, the same last line end),
    remembered by the segment's text."""
    with _RULE_LOCK:
        known = _STUBS.get(seg.text)
    if known is None:
        kept = [""] * (seg.last - seg.first + 1)
        for stmt in seg.summary:
            kept[stmt.first - 1] = stmt.stub or ""
        known = "\n".join(kept) + ("\n" if seg.text.endswith("\n") else "")
        with _RULE_LOCK:
            _STUBS[seg.text] = known
            while len(_STUBS) > _RULE_MEMO_SIZE:
                _STUBS.popitem(last=False)
    return known


def partial_tree(text: str, added: set[int]) -> PartialModule | None:
    """The file's tree for a scoped run over `added`: its top-level statements `Elided`,
    from their segments' remembered summaries (`pyparse.segments`); those of a segment
    holding an added line parse when a rule asks (`real`), a class among them at once
    (the scope enters an edited class's members); the others come from their
    remembered summaries as `Elided`. None when the file does not cut into segments
    (parse it whole: same findings, tests/core/detectors/test_slop_scope.py)."""
    segs = pyparse.segments(text, _summary)
    if segs is None:
        return None
    rows = sorted(added)

    def touched(seg: pyparse.Segment) -> bool:
        i = bisect.bisect_left(rows, seg.first)
        return i < len(rows) and rows[i] <= seg.last

    parsed: dict[int, list[ast.stmt]] = {}
    body: list[ast.stmt] = []
    for seg in segs:
        hot = touched(seg)
        if hot and any(stmt.stub is not None and stmt.stub.startswith("class ") for stmt in seg.summary):
            body.extend(parsed.setdefault(seg.first, seg.parse().body))  # Scope.of enters classes
            continue
        for index, stmt in enumerate(seg.summary):
            node = Elided(lineno=seg.first + stmt.first - 1, end_lineno=seg.first + stmt.last - 1,
                          col_offset=0, end_col_offset=0)
            node.string_rows = stmt.rows
            if hot:
                node.segment, node.index, node.parsed = seg, index, parsed
            body.append(node)
    tree = PartialModule(body=body, type_ignores=[])
    tree.source = text
    tree.segments = tuple(segs)
    return tree


_RULE_MEMO: OrderedDict[tuple[str, str], tuple[RawFinding, ...]] = OrderedDict()
_RULE_MEMO_SIZE = 8192


def _moved(f: RawFinding, by: int) -> RawFinding:
    return dataclasses.replace(
        f, line=f.line + by, end_line=f.end_line + by,
        fix_start=None if f.fix_start is None else f.fix_start + by,
        fix_end=None if f.fix_end is None else f.fix_end + by)


def _per_statement(rule: Rule, text: str, scope: Scope) -> list[RawFinding]:
    """A rule that looks at one function at a time, over the scope's statements (the
    edited top-level statements, or the edited members of a class), each statement's
    findings remembered by its text, relative to its first line: a statement unchanged
    since an earlier version of the file (only moved) is not walked again."""
    lines = scope.lines(text)
    out: list[RawFinding] = []
    for node in scope.statements:
        first, last = statement_lines(node)
        key = (rule.__name__, "\n".join(lines[first - 1:last]))
        with _RULE_LOCK:
            known = _RULE_MEMO.get(key)
        if known is None:
            found = rule(text, ast.Module(body=[real(node)], type_ignores=[]))
            known = tuple(_moved(f, 1 - first) for f in found)
            with _RULE_LOCK:
                _RULE_MEMO[key] = known
                while len(_RULE_MEMO) > _RULE_MEMO_SIZE:
                    _RULE_MEMO.popitem(last=False)
        out.extend(_moved(f, first - 1) for f in known)
    return out


def _string_rows(tree: ast.AST) -> set[int]:
    """Rows of the multi-line strings under `tree`.

    A node on one line holds no multi-line string, so the walk skips one-line nodes
    (most statements): the same rows as visiting every node, at a fraction of the cost.
    Decorators sit above their def's first line and f-string parts may carry odd
    positions, so those parents are always entered.
    """
    rows: set[int] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            if end and start is not None and end > start:
                rows.update(range(start, end + 1))
            if isinstance(node, ast.Constant):
                continue
        elif start is not None and end == start and not getattr(node, "decorator_list", None):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return rows


@functools.lru_cache(maxsize=1 << 16)
def _substantial(line: str) -> bool:
    s = line.strip()
    return len(re.sub(r"\W", "", s)) >= 8 and not s.startswith(("#", "@", "def ", "class "))


def repeated_blocks(text: str, tree: ast.Module | None, until: int | None = None) -> Iterator[RawFinding]:
    """SLOP005: the same run of REPEATED_BLOCK_LINES substantial code lines seen earlier.

    With `until` (a line number), the scan stops at the first run that starts after it:
    the findings up to there are the whole scan's (a run is reported from what lies
    before it), and none after can touch a line up to `until`."""
    lines = text.split("\n")
    # the statements' rows are remembered by their lines, which a lone '\r' makes differ
    # from the parser's
    strings = _string_lines(tree, lines if text.count("\r") == text.count("\r\n") else None)
    rows = [i for i, line in enumerate(lines) if _substantial(line) and i + 1 not in strings]
    keys = [lines[i].strip() for i in rows]
    sizes = [len(k) for k in keys]
    seen: dict[tuple[str, ...], int] = {}
    reported_until = -1
    n = REPEATED_BLOCK_LINES
    last = len(lines) if until is None else until
    for j in range(len(rows) - n + 1):
        if rows[j] >= last:  # starts after line `until`
            break
        # only contiguous blocks with real content (tested before the window is built)
        if rows[j + n - 1] - rows[j] != n - 1 or sum(sizes[j : j + n]) < REPEATED_BLOCK_CHARS:
            continue
        window = tuple(keys[j : j + n])
        first = seen.get(window)
        if first is None:
            seen[window] = j
            continue
        if first + n > j or rows[j] <= reported_until:
            continue  # overlapping itself, or inside a block already reported
        start, end = rows[j] + 1, rows[j + n - 1] + 1
        reported_until = rows[j + n - 1]
        yield RawFinding(
            "SLOP005", start, end,
            f"lines {start}-{end} repeat lines {rows[first] + 1}-{rows[first + n - 1] + 1}",
            EXPLAIN["SLOP005"],
        )


def _constant_display(node: ast.AST) -> bool:
    if isinstance(node, (ast.List, ast.Set, ast.Tuple)):
        items = node.elts
    elif isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            return False
        if len(node.keys) < REPEATED_LITERAL_ITEMS:
            return False  # entries, not keys and values, count
        items = [*node.keys, *node.values]  # type: ignore[list-item]
    else:
        return False
    return len(items) >= REPEATED_LITERAL_ITEMS and all(
        isinstance(i, ast.Constant) or (isinstance(i, ast.UnaryOp) and isinstance(i.operand, ast.Constant))
        for i in items
    )


def repeated_literals(text: str, tree: ast.Module | None) -> Iterator[RawFinding]:
    """SLOP006: the same list/dict/set/tuple of constants written twice in function code."""
    if tree is None:
        return
    first_seen: dict[str, int] = {}
    nested: set[int] = set()  # literals inside literals are rows of a data table: fine
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Set, ast.Tuple, ast.Dict)):
            nested.update(id(c) for c in ast.iter_child_nodes(node))
    for func in tree.body if isinstance(tree, ast.Module) else []:
        for node in ast.walk(func):  # top-level functions and methods, each node once
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from _repeats_in(node, first_seen, nested)
                nested.update(id(n) for n in ast.walk(node))


def _repeats_in(
    func: ast.AST, first_seen: dict[str, int], nested: set[int]
) -> Iterator[RawFinding]:
    for node in ast.walk(func):
        if id(node) in nested or not isinstance(node, ast.expr) or not _constant_display(node):
            continue
        nested.add(id(node))
        key = ast.dump(node)
        if key not in first_seen:
            first_seen[key] = node.lineno
            continue
        yield RawFinding(
            "SLOP006", node.lineno, node.end_lineno or node.lineno,
            f"this literal repeats the one on line {first_seen[key]}", EXPLAIN["SLOP006"],
        )


OWN_RULES = (
    restating_comments, len_comparisons, long_functions, deep_nesting, repeated_blocks,
    repeated_literals,
)

Rule = Callable[[str, "ast.Module | None"], Iterable[RawFinding]]


def statement_lines(node: ast.stmt) -> tuple[int, int]:
    """First and last line of a statement, its decorators included."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return first, node.end_lineno or node.lineno


@dataclass
class Scope:
    """The part of a parsed file that can hold findings on the added lines.

    `statements` are the top-level statements (or, inside a class whose header is not
    edited, the class's own statements, recursively) that overlap an added line;
    `regions` their merged line spans plus each added line outside all of them (a
    blank or comment line between statements). Every region starts where the
    tokenizer has no open bracket or string, so tokenizing a region alone gives the
    whole file's tokens there.
    """

    added: set[int]
    statements: list[ast.stmt] = field(default_factory=list)
    regions: list[tuple[int, int]] = field(default_factory=list)
    _lines: list[str] | None = None

    @classmethod
    def of(cls, tree: ast.Module, added: set[int]) -> Scope:
        scope = cls(added=added)
        rows = sorted(added)
        spans: list[tuple[int, int]] = []

        def touches(first: int, last: int) -> bool:
            i = bisect.bisect_left(rows, first)
            return i < len(rows) and rows[i] <= last

        def select(body: list[ast.stmt]) -> None:
            for node in body:
                first, last = statement_lines(node)
                if not touches(first, last):
                    continue
                if isinstance(node, ast.ClassDef) and node.body:
                    body_first = statement_lines(node.body[0])[0]
                    if body_first > node.lineno and not touches(first, body_first - 1):
                        select(node.body)  # only the class's statements are edited
                        continue
                scope.statements.append(node)
                spans.append((first, last))

        select(tree.body)
        inside = {row for first, last in spans for row in rows[bisect.bisect_left(rows, first):
                                                                 bisect.bisect_right(rows, last)]}
        spans += [(row, row) for row in rows if row not in inside]
        for first, last in sorted(spans):
            if scope.regions and first <= scope.regions[-1][1] + 1:
                scope.regions[-1] = (scope.regions[-1][0], max(last, scope.regions[-1][1]))
            else:
                scope.regions.append((first, last))
        return scope

    def touches(self, first: int, last: int) -> bool:
        return any(row in self.added for row in range(first, last + 1))

    def lines(self, text: str) -> list[str]:
        """text.split("\n"), once for the rules that ask."""
        if self._lines is None:
            self._lines = text.split("\n")
        return self._lines

    def module(self) -> ast.Module:
        """The scope's statements as a module: a rule walking it sees them in file order."""
        return ast.Module(body=self.statements, type_ignores=[])


_COMMENTS: OrderedDict[str, tuple[tuple[int, str], ...] | None] = OrderedDict()


def _region_comments(chunk: str, first: int) -> list[tuple[int, str]]:
    """`_comment_rows(chunk, first)`, remembered by the chunk's text (a statement
    unchanged since an earlier version of the file is not tokenized again)."""
    with _RULE_LOCK:
        seen = chunk in _COMMENTS
        known = _COMMENTS.get(chunk)
    if not seen:
        try:
            known = tuple(_comment_rows(chunk))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            known = None
        with _RULE_LOCK:
            _COMMENTS[chunk] = known
            while len(_COMMENTS) > _RULE_MEMO_SIZE:
                _COMMENTS.popitem(last=False)
    if known is None:
        raise tokenize.TokenError("the region does not tokenize alone")
    return [(row + first - 1, comment) for row, comment in known]


def _restating_in(text: str, tree: ast.Module, scope: Scope) -> Iterable[RawFinding]:
    lines = text.split("\n")
    comments: list[tuple[int, str]] = []
    try:
        for first, last in scope.regions:
            chunk = "\n".join(lines[first - 1 : last]) + "\n"
            comments += _region_comments(chunk, first)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return list(restating_comments(text, tree))  # a region that does not stand alone
    return _restating(lines, comments)


def _literals_in(text: str, tree: ast.Module, scope: Scope) -> Iterable[RawFinding]:
    """SLOP006 compares each literal with every one before it in the file: run it over
    the whole file, but only when an added line holds a literal it could report."""
    if isinstance(tree, PartialModule):  # the file's literals are in its segments' summaries
        rows = sorted(scope.added)
        for seg in tree.segments:
            i = bisect.bisect_left(rows, seg.first)
            if i < len(rows) and rows[i] <= seg.last and any(
                    scope.touches(seg.first + a - 1, seg.first + b - 1)
                    for displays in _segment_displays(seg) for _key, a, b in displays):
                return list(_repeated_literals_of(tree))
        return []
    lines = scope.lines(text)
    spans = []
    for node in scope.statements:
        first, last = statement_lines(node)
        spans += [(first + a - 1, first + b - 1) for a, b in _displays("\n".join(lines[first - 1:last]), first, node)]
    if any(scope.touches(a, b) for a, b in spans):
        whole = tree.complete() if isinstance(tree, PartialModule) else tree
        return list(repeated_literals(text, whole))
    return []


def _displays(statement_text: str, first: int, statement: ast.stmt) -> tuple[tuple[int, int], ...]:
    """The lines (relative to the statement's first) of the literals SLOP006 could report
    in one statement, remembered by its text."""
    with _RULE_LOCK:
        known = _DISPLAYS.get(statement_text)
    if known is None:
        known = tuple((node.lineno - first + 1, (node.end_lineno or node.lineno) - first + 1)
                      for node in ast.walk(real(statement))
                      if isinstance(node, ast.expr) and _constant_display(node))
        with _RULE_LOCK:
            _DISPLAYS[statement_text] = known
            while len(_DISPLAYS) > _RULE_MEMO_SIZE:
                _DISPLAYS.popitem(last=False)
    return known


_DISPLAYS: OrderedDict[str, tuple[tuple[int, int], ...]] = OrderedDict()


def _on_statements(rule: Rule) -> Callable[[str, ast.Module, Scope], Iterable[RawFinding]]:
    """A rule that looks at one function at a time: run it on the scope's statements."""
    return lambda text, tree, scope: rule(text, scope.module())


# rules whose findings in a function depend only on that function
_PER_FUNCTION = frozenset({len_comparisons, long_functions, deep_nesting})

# How each rule runs on a scope; a rule not listed here runs on the whole file.
# repeated_blocks scans the file up to the last added line: a block repeats one anywhere
# before it (a cheap line scan).
_SCOPED: dict[Rule, Callable[[str, ast.Module, Scope], Iterable[RawFinding]]] = {
    repeated_blocks: lambda text, tree, scope: repeated_blocks(text, tree, max(scope.added, default=0)),
    restating_comments: _restating_in,
    len_comparisons: _on_statements(len_comparisons),
    long_functions: _on_statements(long_functions),
    deep_nesting: _on_statements(deep_nesting),
    repeated_literals: _literals_in,
}


def own_findings(
    text: str, tree: ast.Module | None, added: set[int] | None = None
) -> list[RawFinding]:
    """OWN_RULES' findings; with `added`, only on the statements touching those lines.

    Scoped, the result holds every finding of the whole-file run that touches an added
    line, identical and in the same relative order (tests/core/detectors/
    test_slop_scope.py checks it on real files), at the cost of the edited statements
    instead of the file. A file that does not parse, or whose line ends ast and
    str.split disagree on (a lone '\r'), gets the whole-file run.
    """
    if added is None or tree is None or text.count("\r") != text.count("\r\n"):
        if isinstance(tree, PartialModule):
            tree = tree.complete()
        return [f for rule in OWN_RULES for f in rule(text, tree)]
    scope = Scope.of(tree, added)
    out: list[RawFinding] = []
    for rule in OWN_RULES:
        scoped = _SCOPED.get(rule)
        if rule in _PER_FUNCTION:
            out += _per_statement(rule, text, scope)
        else:
            out += rule(text, tree) if scoped is None else scoped(text, tree, scope)
    return out


def top_statement(tree: ast.Module, line: int) -> ast.stmt | None:
    """The top-level statement holding `line` (decorators included), if any."""
    for node in tree.body:
        first, last = statement_lines(node)
        if first <= line <= last:
            return node
    return None


def _append_target(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """(list name, appended value) when `stmt` is `name.append(value)`."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    if (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "append"
        and isinstance(call.func.value, ast.Name)
        and len(call.args) == 1
        and not call.keywords
        and not isinstance(call.args[0], ast.Starred)
    ):
        return call.func.value.id, call.args[0]
    return None


def comprehension_fix(
    text: str, tree: ast.Module | None, line: int, top: ast.stmt | None = None
) -> tuple[str, int, int] | None:
    """A list comprehension replacing `x = []` + a loop that only appends to x.

    Handles the common shape: the empty list assigned right before the loop, a loop
    body that is one `x.append(v)`, optionally inside one `if` without `else`. Returns
    (replacement text, first line, last line) or None when the shape is anything else.
    `top`, the top-level statement holding `line`, spares walking the rest of the file.
    """
    if tree is None:
        return None
    lines = text.split("\n")
    parents: Iterable[ast.AST] = ast.walk(tree)
    if top is not None:  # the loop's parent is the module or inside its top statement
        parents = itertools.chain([tree], ast.walk(top))
    for parent in parents:
        for name in ("body", "orelse", "finalbody"):
            body = getattr(parent, name, None)
            if not isinstance(body, list):
                continue
            for i, loop in enumerate(body):
                if not (isinstance(loop, ast.For) and i > 0 and not loop.orelse):
                    continue
                if not (loop.lineno <= line <= (loop.end_lineno or loop.lineno)):
                    continue
                fix = _loop_to_comprehension(body[i - 1], loop, lines)
                if fix is not None:
                    return fix
    return None


def _loop_to_comprehension(
    init: ast.stmt, loop: ast.For, lines: list[str]
) -> tuple[str, int, int] | None:
    if not (
        isinstance(init, ast.Assign)
        and len(init.targets) == 1
        and isinstance(init.targets[0], ast.Name)
        and isinstance(init.value, ast.List)
        and not init.value.elts
        and init.end_lineno == init.lineno
    ):
        return None
    name = init.targets[0].id
    [stmt] = loop.body if len(loop.body) == 1 else [None]
    condition = None
    if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1:
        condition, stmt = stmt.test, stmt.body[0]
    appended = _append_target(stmt) if stmt is not None else None
    if appended is None or appended[0] != name:
        return None
    if any(isinstance(n, ast.Name) and n.id == name
           for part in (loop.iter, appended[1], condition) if part is not None
           for n in ast.walk(part)):
        return None  # the loop reads the list it builds
    indent = lines[init.lineno - 1][: init.col_offset]
    clause = f" if {ast.unparse(condition)}" if condition is not None else ""
    comp = (f"{indent}{name} = [{ast.unparse(appended[1])} for {ast.unparse(loop.target)} "
            f"in {ast.unparse(loop.iter)}{clause}]\n")
    return comp, init.lineno, loop.end_lineno or loop.lineno
