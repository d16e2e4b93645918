"""Turn Python functions into clone-detection fingerprints.

Three views of each function, one per clone type:

* ``exact_key``   – hash of the AST with docstrings dropped (comments and layout are
  already gone in an AST): equal keys mean a type-1 (exact) clone.
* ``renamed_key`` – hash of the role sequence: every identifier replaced by its role
  (bound: a parameter or local; or free) and every literal by its type: equal keys mean a type-2
  (renamed identifiers / changed literals) clone.
* ``features``    – hashed k-grams of the *role* token sequence (node kinds only, no
  names, no literal values): their Jaccard similarity scores type-3 near-misses, and
  they are what the inverted index retrieves candidates with.

Token hashing uses a fixed vocabulary (not Python's randomised ``hash``) so
fingerprints are identical across processes and runs.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import itertools
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from core import pyparse

SHINGLE = 4  # k of the k-grams over role tokens
MIN_STATEMENTS = 3  # smaller functions (getters, one-line wrappers) are not indexed
MIN_TOKENS = 16  # ... nor are functions with fewer role tokens than this
# a function being checked may be a little smaller: a near-miss copy that lost a
# statement of an indexed function is still worth reporting
QUERY_MIN_STATEMENTS = 2
QUERY_MIN_TOKENS = 12

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SKIP = (ast.expr_context,)


def _vocabulary() -> dict[str, int]:
    names = sorted(
        name
        for name in dir(ast)
        if isinstance(getattr(ast, name), type) and issubclass(getattr(ast, name), ast.AST)
    )
    extra = ["C:str", "C:bytes", "C:int", "C:float", "C:complex", "C:bool", "C:NoneType"]
    extra += ["C:ellipsis", "C:other", "/", "Name:param", "Name:local", "Name:free"]
    return {name: i + 1 for i, name in enumerate(names + extra)}


_VOCAB = _vocabulary()
_OTHER = _VOCAB["C:other"]
_END = _VOCAB["/"]
_PARAM, _FREE = _VOCAB["Name:param"], _VOCAB["Name:free"]  # locals take _PARAM too (see finish)


@dataclass(frozen=True, slots=True)
class FunctionUnit:
    """One indexable function or method and its fingerprints."""

    symbol: str  # qualified name within the module, e.g. "Parser.parse"
    line: int
    end_line: int
    statements: int
    tokens: int
    exact_key: bytes
    renamed_key: bytes
    features: np.ndarray  # sorted unique uint64 k-gram hashes
    anchors: frozenset[str]  # free names, attributes, keywords: what a rename keeps
    # every identifier and literal: breaks ties between equally shaped twins (the one
    # a copy came from shares its name, its literals or the locals it did not rename)
    lexicon: frozenset[str]
    roles: str  # the role sequence, one character per token: aligned for type 3

    @property
    def indexable(self) -> bool:
        return self.statements >= MIN_STATEMENTS and self.tokens >= MIN_TOKENS

    @property
    def checkable(self) -> bool:
        return self.statements >= QUERY_MIN_STATEMENTS and self.tokens >= QUERY_MIN_TOKENS


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body


class _Walker:
    """Emits the role token sequence and the exact token sequence in one pass.

    Role tokens are node kinds; a name is replaced by its role (parameter, local,
    or free: a global, builtin or import), a literal by its type. Renaming
    identifiers or changing literals therefore leaves the role sequence unchanged.
    A name's role is known only once the whole function is seen (a local may be
    assigned after its first use), so names get a placeholder resolved by `finish`.
    """

    def __init__(self) -> None:
        self.roles: list[int] = []
        self.exact: list[str] = []
        self.statements = 0
        self.params: set[str] = set()
        self.local: set[str] = set()
        self.pending: list[tuple[int, str]] = []  # (position in roles, name)
        # names a rename leaves alone: globals, builtins, attributes, keyword arguments
        self.anchors: set[str] = set()
        self.marks: list[str] = []  # canonical rewrites applied (see _unnegate)

    def finish(self) -> None:
        local = self.local - self.params
        for pos, name in self.pending:
            if name in self.params or name in local:
                # Parameters and locals share one role: a copy often trades one for the
                # other (`value = value.strip()` for `cleaned = text.strip()`), and telling
                # them apart bought no precision on either evaluation set.
                self.roles[pos] = _PARAM
            else:
                self.roles[pos] = _FREE
                self.anchors.add(name)

    def _binds(self, node: ast.AST) -> None:
        """Record the names a node binds (for the roles of the names used)."""
        if isinstance(node, ast.arg):
            self.params.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if self.roles:  # not the function being fingerprinted itself
                self.local.add(node.name)
        elif isinstance(node, ast.alias):
            self.local.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.local.add(node.name)

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                return  # `x: int` alone binds nothing at run time: a type hint, dropped
            node = ast.Assign(targets=[node.target], value=node.value)  # hint dropped
        elif isinstance(node, ast.Assign):
            node = self._expand_comprehension(node)
        elif isinstance(node, ast.If):
            node = self._unnegate(node)
        kind = type(node).__name__
        if isinstance(node, ast.stmt):
            self.statements += 1
        if isinstance(node, ast.Constant):
            self.roles.append(_VOCAB.get("C:" + type(node.value).__name__, _OTHER))
            self.exact.append(repr(node.value))
            return
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                self.local.add(node.id)
            self.pending.append((len(self.roles), node.id))
            self.roles.append(0)
            self.exact.append("N" + node.id)
            return
        if isinstance(node, ast.Module):  # a canonical rewrite: several statements
            for stmt in node.body:
                self.visit(stmt)
            return
        self._binds(node)
        self.roles.append(_VOCAB.get(kind, _OTHER))
        own = _own_names(node)
        if own and isinstance(node, (ast.Attribute, ast.keyword)):
            self.anchors.add(own)
        self.exact.append(kind + ":" + own)
        if isinstance(node, _FUNCS + (ast.ClassDef,)):
            children: list[ast.AST] = list(node.decorator_list)
            if not isinstance(node, ast.ClassDef):
                children.append(node.args)  # the return annotation is dropped
            else:
                children += [*node.bases, *node.keywords]
            children += _strip_docstring(node.body)
        elif isinstance(node, ast.arg):
            children = []  # its annotation is dropped: adding type hints is no edit
        elif isinstance(node, ast.Call):
            children = [node.func, *node.args, *self._sorted_keywords(node.keywords)]
        else:
            children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, _SKIP)]
        for child in children:
            self.visit(child)
        if children:
            self.exact.append("/")
            if isinstance(node, ast.stmt):
                self.roles.append(_END)

    # Canonical rewrites. Reordered keyword arguments are a renamed (type 2) copy; a
    # negated test with swapped branches and a loop turned into a comprehension are
    # near misses (type 3) that align perfectly. Each rewrite leaves a mark in the
    # exact view and, for the type-3 rewrites, in the renamed view, so the original
    # and the rewritten form never share a type-1 or type-2 key.
    def _sorted_keywords(self, keywords: list[ast.keyword]) -> list[ast.keyword]:
        named = sorted(keywords, key=lambda k: (k.arg is None, k.arg or ""))
        if named != keywords:
            self.exact.append("kw-order:" + ",".join(k.arg or "**" for k in keywords))
        return named

    def _unnegate(self, node: ast.If) -> ast.If:
        """`if not c: A else: B` is walked as `if c: B else: A`."""
        if (
            isinstance(node.test, ast.UnaryOp)
            and isinstance(node.test.op, ast.Not)
            and node.orelse
            and not (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If))
        ):
            self.marks.append("if-not")
            return ast.If(test=node.test.operand, body=node.orelse, orelse=node.body)
        return node

    def _expand_comprehension(self, node: ast.Assign) -> ast.AST:
        """`x = [e for t in it if c]` is walked as `x = []` + a loop that appends."""
        value = node.value
        if not (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(value, ast.ListComp)
            and len(value.generators) == 1
            and len(value.generators[0].ifs) <= 1
        ):
            return node
        gen, name = value.generators[0], node.targets[0].id
        stmt: ast.stmt = ast.Expr(ast.Call(
            func=ast.Attribute(ast.Name(name, ast.Load()), "append", ast.Load()),
            args=[value.elt], keywords=[]))
        if gen.ifs:
            stmt = ast.If(test=gen.ifs[0], body=[stmt], orelse=[])
        self.marks.append("listcomp")  # (counted as the loop it stands for: same size)
        loop_cls = ast.AsyncFor if gen.is_async else ast.For
        loop = loop_cls(target=gen.target, iter=gen.iter, body=[stmt], orelse=[])
        return ast.Module(body=[ast.Assign(targets=node.targets, value=ast.List([], ast.Load())),
                                loop], type_ignores=[])


def _own_names(node: ast.AST) -> str:
    """The literal identifiers a node carries itself (for the exact, type-1 key)."""
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.keyword):
        return node.arg or ""
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return ",".join(node.names)
    if isinstance(node, ast.alias):
        return f"{node.name} as {node.asname}"
    if isinstance(node, _FUNCS + (ast.ClassDef,)):
        return node.name
    return ""


def _features(roles: list[int]) -> np.ndarray:
    """Sorted unique uint64 hashes of the k-grams of the role sequence."""
    seq = np.asarray(roles, dtype=np.uint64)
    if len(seq) < SHINGLE:
        seq = np.concatenate([seq, np.zeros(SHINGLE - len(seq), dtype=np.uint64)])
    n = len(seq) - SHINGLE + 1
    acc = np.full(n, 1469598103934665603, dtype=np.uint64)
    prime = np.uint64(1099511628211)
    with np.errstate(over="ignore"):
        for j in range(SHINGLE):
            acc = (acc ^ seq[j : j + n]) * prime
        acc ^= acc >> np.uint64(29)
    return np.unique(acc)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=12).digest()


def fingerprint(node: ast.FunctionDef | ast.AsyncFunctionDef, symbol: str) -> FunctionUnit:
    """Fingerprint one function node (its nested functions are part of its body)."""
    walker = _Walker()
    walker.visit(node)
    walker.finish()
    roles = "".join(map(chr, walker.roles))
    return FunctionUnit(
        symbol=symbol,
        line=node.lineno,
        end_line=getattr(node, "end_lineno", None) or node.lineno,
        statements=walker.statements - 1,  # the def itself is not a statement of the body
        tokens=len(walker.roles),
        exact_key=_digest("\x00".join(walker.exact + walker.marks)),
        renamed_key=hashlib.blake2b((roles + "|".join(walker.marks)).encode(),
                                    digest_size=12).digest(),
        features=_features(walker.roles),
        anchors=frozenset(walker.anchors),
        lexicon=frozenset(t for t in walker.exact if t != "/" and not t.endswith(":")),
        roles=roles,
    )


def iter_functions(
    tree: ast.AST, *, nested: bool = False, lines: set[int] | None = None
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Module-level functions and methods (also of nested classes), with qualified names.

    A function nested inside a function stays part of its outer function's body; with
    `nested` it is also yielded itself, as ``outer.<locals>.inner`` (Python's qualname),
    so a helper copied out of a closure is found too. Callers drop the inner pair when
    the outer functions are paired (a copied outer function would otherwise report each
    inner one too). With `lines`, a function or class that overlaps none of them is not
    entered (its nested functions cannot overlap them either) nor, for a function, yielded.
    """
    ordered = None if lines is None else sorted(lines)
    stack: list[tuple[str, ast.AST, bool]] = [("", tree, False)]
    while stack:
        prefix, parent, in_function = stack.pop()
        for child in ast.iter_child_nodes(parent):
            if ordered is not None and isinstance(child, (*_FUNCS, ast.ClassDef)):
                end = getattr(child, "end_lineno", None) or child.lineno
                if not _overlaps(ordered, child.lineno, end):
                    continue
            if isinstance(child, _FUNCS):
                yield prefix + child.name, child
                if nested:
                    stack.append((prefix + child.name + ".<locals>.", child, True))
            elif isinstance(child, ast.ClassDef):
                if not in_function:
                    stack.append((prefix + child.name + ".", child, False))
            elif isinstance(child, (ast.If, ast.Try, ast.With)) and parent is tree:
                stack.append((prefix, child, False))  # `if TYPE_CHECKING:` / try-imports
            elif in_function and isinstance(child, ast.stmt):
                stack.append((prefix, child, True))  # defs inside if/for/with/try blocks


def _overlaps(ordered: list[int], first: int, last: int) -> bool:
    """Whether a sorted list of line numbers holds one in first..last."""
    i = bisect.bisect_left(ordered, first)
    return i < len(ordered) and ordered[i] <= last


def parent_symbol(symbol: str) -> str | None:
    """The enclosing function's symbol of a nested function (None for the others)."""
    head, sep, _tail = symbol.rpartition(".<locals>.")
    return head if sep else None


def parse_tolerant(source: str, notes: list[str] | None = None) -> ast.Module | None:
    """Parse what can be parsed: code being streamed may end in an incomplete function.

    On a syntax error the source is cut before the last outermost statement that starts
    at or before the error and parsing is retried. An indented snippet (a method from a
    hunk) is dedented; when a multi-line string stops dedenting, it is parsed inside an
    ``if True:`` block instead (line numbers stay those of `source`). Returns None when
    nothing parses.
    """
    lines = textwrap.dedent(source.replace("\r\n", "\n")).split("\n")
    base = _base_indent(lines)
    header = ["if True:"] if base else []
    for _ in range(50):
        try:
            tree = pyparse.parse("\n".join(header + lines))
        except SyntaxError as exc:
            err = max(1, min((exc.lineno or len(lines)) - len(header), len(lines)))
            if notes is not None and not notes:
                notes.append(f"syntax error at line {err} ({exc.msg}): "
                             "only the functions before it are indexed")
            cut = _last_outer_start(lines, err, base)
            if cut <= 0:
                return None
            lines = lines[:cut]
        except (ValueError, RecursionError, MemoryError) as exc:
            if notes is not None:
                notes.append(f"cannot parse: {type(exc).__name__}")
            return None
        else:
            if header:
                ast.increment_lineno(tree, -1)
            return tree
    return None


def _base_indent(lines: list[str]) -> int:
    for line in lines:
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            return len(line) - len(stripped)
    return 0


def _last_outer_start(lines: list[str], err_line: int, base: int) -> int:
    """Index of the last line at or before err_line that starts an outermost statement."""
    for i in range(min(err_line, len(lines)) - 1, -1, -1):
        line = lines[i]
        body = line[base:]
        if (
            len(line) > base
            and not line[:base].strip()
            and not body[0].isspace()
            and not body.startswith(("#", ")", "]", "}"))
        ):
            while i > 0 and lines[i - 1][base:].startswith("@"):
                i -= 1  # decorators belong to the def below them
            return i
    return 0


def units_from_source(source: str, notes: list[str] | None = None, *,
                      lines: set[int] | None = None, segments: bool = True) -> list[FunctionUnit]:
    """All functions of a module's source (tolerating a broken tail), indexable or not.

    With `lines`, only the functions overlapping those lines: fingerprinting is most of a
    duplicate check's cost (~1 ms per function), and a hunk in a 3,000-line file touches a
    few of its hundreds of functions. Parsing the whole file would still cost ~20 ms per
    2,500 lines, so (with `segments`) only the top-level statements holding those lines are
    parsed (see `top_level_starts`); the whole file is parsed when a segment does not parse
    alone (a syntax error: the tolerant parse decides what is checked). A function too
    deeply nested to walk is left out (with a note), not fatal."""
    tree = None
    if lines is not None and segments:
        tree = _parse_segments(source, lines)
    if tree is None:
        tree = parse_tolerant(source, notes)
    if tree is None:
        return []
    units = []
    for symbol, node in iter_functions(tree, nested=True, lines=lines):
        # (iter_functions already left out the functions that overlap none of `lines`)
        try:
            units.append(fingerprint(node, symbol))
        except RecursionError:
            if notes is not None:
                notes.append(f"{symbol}: nested too deeply to fingerprint, skipped")
    return units


# Strings and comments as Python 3.11's tokenizer reads them (an f-string cannot hold its
# own quote): what must be skipped to find where top-level statements start.
_LEXEMES = re.compile(
    r"""\#[^\n]*"""
    r"""|'''(?:[^'\\]|\\.|'(?!''))*(?:'''|\Z)"""
    r'''|"""(?:[^"\\]|\\.|"(?!""))*(?:"""|\Z)'''
    r"""|'(?:[^'\\\n]|\\.)*(?:'|$)"""
    r'''|"(?:[^"\\\n]|\\.)*(?:"|$)''',
    re.DOTALL | re.MULTILINE,
)
_CLAUSE = re.compile(r"(?:else|elif|except|finally)\b")
_WS_ONLY = re.compile(r"^[ \t]+$", re.MULTILINE)  # the lines textwrap.dedent blanks


# a line that may start a statement, after its line end (a literal first: `^` with MULTILINE
# is tried at every character, 5x slower)
_CODE_AT_COLUMN_0 = re.compile(r"\n[^ \t\f#\n]")


def _blank_lexeme(match: re.Match[str]) -> str:
    text = match.group()
    return text[0] + "\n" * text.count("\n")


def _bracket_depth(code: str) -> int:
    return (code.count("(") + code.count("[") + code.count("{")
            - code.count(")") - code.count("]") - code.count("}"))


def top_level_starts(source: str) -> list[int] | None:
    """0-based numbers of the lines where the module's top-level statements start (a
    decorated definition at its first decorator; `else`/`except` clauses stay with their
    statement), or None when code is indented before any top-level line (a snippet).

    A line starts a statement when it starts at column 0 outside any string, bracket or
    backslash continuation; strings and comments are found with one regex. Only the lines
    with code at column 0 are visited once the first one is found (the bracket depth in
    between is counted over the slice): a line-by-line loop cost ~2.4 ms per 2,500-line
    file, and the duplicate checks cut each new text of an answer's files while it
    streams, holding the GIL the UI needs (tests/core/detectors/test_normalize_segments.py
    compares it with that loop). `pyparse.segments` cuts with a plain regex instead: it
    parses every piece in order, so a wrong cut fails its parse and is merged; here only
    the statements holding added lines are parsed, and a column-0 line inside a string
    can parse alone (code in a template string), so the cut must be right before any parse."""
    code = _LEXEMES.sub(_blank_lexeme, source)
    starts = [0]
    depth = 0
    continued = after_decorator = False
    # line by line up to the first top-level code line: indented code before it is a snippet
    pos = row = 0
    while True:
        end = code.find("\n", pos)
        line = code[pos:] if end < 0 else code[pos:end]
        found = False
        if line and depth <= 0 and not continued:
            if line[0] not in " \t\f#":
                if row and not _CLAUSE.match(line):
                    starts.append(row)
                after_decorator = line[0] == "@"
                found = True
            elif line.strip(" \t\f")[:1] not in ("", "#"):
                return None
        depth += _bracket_depth(line)
        continued = line.endswith("\\")
        if end < 0:
            return starts
        pos, row = end + 1, row + 1
        if found:
            break
    # then only the lines with code at column 0 (the others cannot start a statement)
    counted = pos  # depth and row count the code before this offset
    for match in _CODE_AT_COLUMN_0.finditer(code, pos - 1):
        at = match.start() + 1
        between = code[counted:at]
        depth += _bracket_depth(between)
        row += between.count("\n")
        counted = at
        continued = at >= 2 and code[at - 2] == "\\"
        if depth <= 0 and not continued:
            if not after_decorator and not _CLAUSE.match(code, at):
                starts.append(row)
            after_decorator = code[at] == "@"
    return starts


def _parse_segments(source: str, lines: set[int]) -> ast.Module | None:
    """A module of only the top-level statements that overlap `lines` (1-based), at their
    own line numbers; None when one of them does not parse alone (or `source` is a snippet)."""
    text = source.replace("\r\n", "\n")
    if "\r" in text:
        return None  # a lone CR ends a line for the parser, not for the row count below
    starts = top_level_starts(text)
    if starts is None:
        return None
    rows = text.split("\n")
    bounds = [*starts, len(rows)]
    body: list[ast.stmt] = []
    ordered = sorted(lines)
    for a, b in itertools.pairwise(bounds):
        if not _overlaps(ordered, a + 1, b):
            continue
        segment = _WS_ONLY.sub("", "\n".join(rows[a:b]))
        try:
            part = pyparse.parse("\n" * a + segment)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        body.extend(part.body)
    return ast.Module(body=body, type_ignores=[])
