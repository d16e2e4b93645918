"""Symbols of one source file: what it defines (one signature line each) and what it names.

Two passes, because a repo map needs cheap facts about every file but exact signatures
only for the few files it shows:
- `scan_source` runs on every file: a regex finds Python `def`/`class` lines and the set of
  identifiers the file mentions (for the reference graph); other languages go through a
  tree-sitter grammar from `tree-sitter-language-pack`.
- `python_signatures` parses one Python file with `ast` for exact one-line signatures,
  and is called only for files the map renders.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from core import pyparse

MAX_SIGNATURE_CHARS = 140

# file extension -> language name in tree-sitter-language-pack ("python" uses ast)
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".rb": "ruby",
}

_JS_DEFS = """
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(class_declaration name: (_) @name) @def.class
(method_definition name: (_) @name) @def.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function
"""
_TS_EXTRA = """
(interface_declaration name: (type_identifier) @name) @def.class
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.type
(abstract_class_declaration name: (type_identifier) @name) @def.class
(method_signature name: (_) @name) @def.method
(function_signature name: (identifier) @name) @def.function
"""
# tree-sitter queries: @name is the defined identifier, @def.<kind> the whole definition
QUERIES: dict[str, str] = {
    "javascript": _JS_DEFS,
    "typescript": _JS_DEFS + _TS_EXTRA,
    "tsx": _JS_DEFS + _TS_EXTRA,
    "go": """
(function_declaration name: (identifier) @name) @def.function
(method_declaration name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name) @def.type
""",
    "rust": """
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.class
(enum_item name: (type_identifier) @name) @def.type
(trait_item name: (type_identifier) @name) @def.class
(mod_item name: (identifier) @name) @def.module
""",
    "java": """
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.class
(enum_declaration name: (identifier) @name) @def.type
(record_declaration name: (identifier) @name) @def.class
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
""",
    "c": """
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def.function
(struct_specifier name: (type_identifier) @name body: (_)) @def.class
(type_definition declarator: (type_identifier) @name) @def.type
""",
    "cpp": """
(function_definition declarator: (function_declarator declarator: [(identifier) (field_identifier) (qualified_identifier)] @name)) @def.function
(struct_specifier name: (type_identifier) @name body: (_)) @def.class
(class_specifier name: (type_identifier) @name body: (_)) @def.class
(type_definition declarator: (type_identifier) @name) @def.type
""",
    "ruby": """
(method name: (_) @name) @def.method
(singleton_method name: (_) @name) @def.method
(class name: (_) @name) @def.class
(module name: (_) @name) @def.module
""",
}

_PY_FUNC = re.compile(r"def[ \t]+([A-Za-z_]\w*)")
_PY_CLASS = re.compile(r"class[ \t]+([A-Za-z_]\w*)")
# a line starting at column 0 with code (not a comment, a string or a closing bracket)
_PY_MODULE_LINE = re.compile(r"\n(?=[^\s#\"')\]}])")
# bytes -> bytes table keeping identifier characters and blanking the rest: splitting the
# translated text is ~2x faster than a regex over it, which matters on 30 MB trees
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_IDENT_TABLE = bytes(c if c in _WORD_BYTES else 32 for c in range(256))


class Definition(NamedTuple):
    """One symbol a file defines; `text` is its one-line signature, `depth` its nesting.

    A NamedTuple rather than a frozen dataclass: a large tree has 70k of them and a
    tuple is several times cheaper to create.
    """

    name: str
    kind: str
    line: int
    depth: int
    text: str


@dataclass(frozen=True, slots=True)
class FileTags:
    """What the repo map knows about one file without re-reading it."""

    lang: str
    defs: tuple[Definition, ...]
    refs: frozenset[bytes]  # identifiers mentioned, ASCII bytes


def language_for(path: str) -> str | None:
    """The language of a file by extension, or None when the map does not read it."""
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


def one_line(text: str) -> str:
    """Collapse a signature to one line, cut to MAX_SIGNATURE_CHARS."""
    line = " ".join(text.split())
    if len(line) > MAX_SIGNATURE_CHARS:
        line = line[: MAX_SIGNATURE_CHARS - 3] + "..."
    return line


def identifiers(data: bytes) -> frozenset[bytes]:
    """The ASCII identifiers a file mentions, as bytes (decoding 600k words costs more
    than the split itself); numbers come along and never match a definition."""
    return frozenset(data.translate(_IDENT_TABLE).split())


def scan_source(lang: str, data: bytes) -> FileTags:
    """Cheap pass over one file: definitions with a rough signature and referenced names."""
    refs = identifiers(data)
    text = data.decode("utf-8", "replace")
    if lang == "python":
        defs = _scan_python(text)
    else:
        defs = _scan_tree_sitter(lang, text)
    return FileTags(lang=lang, defs=defs, refs=refs)


def _scan_python(text: str) -> tuple[Definition, ...]:
    """`def`/`class` statements at the start of a line.

    Two regexes that start with a literal (`def`, `class`) let the regex engine skip
    ahead fast (10x faster than one anchored at line starts); a match counts when only
    blanks (or `async`) precede it on its line. An indentation stack gives each
    definition its depth; functions nested inside functions are helpers, not the file's
    interface, and are left out.
    """
    hits = [(m.start(), "def", m.group(1)) for m in _PY_FUNC.finditer(text)]
    hits += [(m.start(), "class", m.group(1)) for m in _PY_CLASS.finditer(text)]
    hits.sort()
    # starts of module-level code lines: a definition after one is not inside the class
    # or function above it (`if sys.platform == ...:` / `try:` blocks defining functions)
    module_lines = [m.start() + 1 for m in _PY_MODULE_LINE.finditer(text)]
    next_module = 0
    defs: list[Definition] = []
    line = 1
    pos = 0
    last_def = -1
    stack: list[tuple[int, str]] = []  # (indent width, kind) of open definitions
    for start, keyword, name in hits:
        line_start = text.rfind("\n", 0, start) + 1
        lead = text[line_start:start]
        indent_len = len(lead) - len(lead.lstrip(" \t"))
        rest = lead[indent_len:]
        if rest and rest.rstrip() != "async":
            continue
        line += text.count("\n", pos, start)
        pos = start
        while next_module < len(module_lines) and module_lines[next_module] < line_start:
            if module_lines[next_module] > last_def:
                stack.clear()  # back at module level since the previous definition
            next_module += 1
        last_def = line_start
        indent = lead[:indent_len]
        width = indent_len if "\t" not in indent else len(indent.expandtabs(8))
        while stack and stack[-1][0] >= width:
            stack.pop()
        parent = stack[-1][1] if stack else None
        kind = "class" if keyword == "class" else ("method" if parent == "class" else "function")
        stack.append((width, kind))
        if parent is not None and parent != "class":
            continue  # nested inside a function
        end = text.find("\n", start)
        header = text[line_start + indent_len : end if end >= 0 else len(text)]
        defs.append(Definition(name, kind, line, len(stack) - 1, header[:MAX_SIGNATURE_CHARS]))
    return tuple(defs)


@cache
def _parser_and_query(lang: str):
    import tree_sitter
    import tree_sitter_language_pack as pack

    language = pack.get_language(lang)  # type: ignore[arg-type]
    parser = pack.get_parser(lang)  # type: ignore[arg-type]
    return parser, tree_sitter.Query(language, QUERIES[lang])


def _scan_tree_sitter(lang: str, text: str) -> tuple[Definition, ...]:
    import tree_sitter

    parser, query = _parser_and_query(lang)
    source = text.encode("utf-8", "replace")
    tree = parser.parse(source)
    found: list[tuple[int, int, str, str, str]] = []  # start, end, name, kind, first line
    for _, captures in tree_sitter.QueryCursor(query).matches(tree.root_node):
        names = captures.get("name")
        def_key = next((k for k in captures if k.startswith("def.")), None)
        if not names or def_key is None:
            continue
        node = captures[def_key][0]
        name = names[0].text.decode("utf-8", "replace") if names[0].text else ""
        body = node.child_by_field_name("body")
        stop = body.start_byte if body is not None else node.end_byte
        first = source[node.start_byte : stop].split(b"\n", 1)[0]
        sig = first.decode("utf-8", "replace").rstrip().rstrip("{").rstrip()
        found.append((node.start_byte, node.end_byte, name.split("::")[-1], def_key[4:], sig))
    found.sort(key=lambda item: (item[0], -item[1]))
    defs: list[Definition] = []
    open_ends: list[int] = []
    for start, end, name, kind, sig in found:
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        line = source.count(b"\n", 0, start) + 1
        defs.append(Definition(name, kind, line, len(open_ends), one_line(sig)))
        open_ends.append(end)
    return tuple(defs)


def python_signatures(text: str, defs: tuple[Definition, ...]) -> dict[int, Definition]:
    """Exact one-line signatures for a Python file's definitions, by line.

    Each `def`/`class` header (which may span lines) is parsed on its own with `ast`
    rather than the whole file: the map renders a few dozen definitions out of files that
    can be 500 KB, and a file mid-edit that does not parse still maps. A header that does
    not parse (a `def` inside a string) is left out.
    """
    lines = text.splitlines()
    out: dict[int, Definition] = {}
    for d in defs:
        header = _python_header(lines, d.line - 1)
        if header is None:
            continue
        node = _parse_statement(header + "\n pass") or _parse_statement(header)
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            bases += [ast.unparse(k) for k in node.keywords]
            sig = f"class {node.name}" + (f"({', '.join(bases)})" if bases else "")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            sig = f"{prefix} {node.name}({ast.unparse(node.args)})"
            if node.returns is not None:
                sig += f" -> {ast.unparse(node.returns)}"
        else:
            continue  # not a definition after all (e.g. text inside a string)
        out[d.line] = Definition(d.name, d.kind, d.line, d.depth, one_line(sig))
    return out


def _python_header(lines: list[str], index: int, max_lines: int = 40) -> str | None:
    """The `def ...:` / `class ...:` header starting at lines[index], dedented."""
    if index >= len(lines):
        return None
    depth = 0
    parts: list[str] = []
    for raw in lines[index : index + max_lines]:
        line = raw.strip()
        parts.append(line)
        depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        if depth <= 0 and _ends_header(line):
            return "\n".join(parts)
    return None


def _ends_header(line: str) -> bool:
    """True when a header line (outside brackets) holds its closing ':'."""
    return ":" in line.split("#", 1)[0]


def _parse_statement(source: str) -> ast.stmt | None:
    try:
        body = pyparse.parse(source).body
    except (SyntaxError, ValueError):
        return None
    return body[0] if body else None
