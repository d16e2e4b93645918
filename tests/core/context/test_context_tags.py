"""Per-file symbol extraction: Python by regex + ast headers, other languages by tree-sitter."""

from __future__ import annotations

import pytest

from core.context.tags import language_for, python_signatures, scan_source

PY = (
    "import os\n"
    "@decorator\n"
    "def top(a,\n"
    "        b: int = 1) -> str:\n"
    "    def inner():\n"
    "        pass\n"
    "    return ''\n"
    "class Shape(Base, metaclass=Meta):\n"
    "    async def area(self, *args, **kw):\n"
    "        pass\n"
    "    def one(self): return 1\n"
    "TEXT = '''\n"
    "def fake(\n"
    "'''\n"
)


def test_python_scan_finds_definitions_with_depth_and_skips_nested_helpers():
    tags = scan_source("python", PY.encode())
    got = [(d.name, d.kind, d.line, d.depth) for d in tags.defs]
    assert ("top", "function", 3, 0) in got
    assert ("Shape", "class", 8, 0) in got
    assert ("area", "method", 9, 1) in got
    assert ("one", "method", 11, 1) in got
    assert all(name != "inner" for name, *_ in got)
    assert b"decorator" in tags.refs and b"Meta" in tags.refs


def test_python_signatures_are_exact_one_line_headers_from_ast():
    tags = scan_source("python", PY.encode())
    sigs = python_signatures(PY, tags.defs)
    assert sigs[3].text == "def top(a, b: int=1) -> str"
    assert sigs[8].text == "class Shape(Base, metaclass=Meta)"
    assert sigs[9].text == "async def area(self, *args, **kw)"
    assert sigs[11].text == "def one(self)"
    assert 13 not in sigs  # `def fake(` inside a string never parses: left out


@pytest.mark.parametrize(("lang", "source", "expected"), [
    ("javascript", ("function foo(a) { return a }\nclass A extends B { m(x) {} }\n"
                   "const f = (x) => x\n"),
     [("foo", "function foo(a)"), ("A", "class A extends B"), ("m", "m(x)"),
      ("f", "f = (x) => x")]),
    ("typescript", "interface I { a(): void }\nfunction g<T>(x: T): T { return x }\n",
     [("I", "interface I"), ("a", "a(): void"), ("g", "function g<T>(x: T): T")]),
    ("go", "package m\nfunc Foo(a int) int { return a }\nfunc (s *S) Bar() {}\n",
     [("Foo", "func Foo(a int) int"), ("Bar", "func (s *S) Bar()")]),
    ("rust", "struct S;\nfn main() {}\ntrait T { fn t(&self); }\n",
     [("S", "struct S;"), ("main", "fn main()"), ("T", "trait T"), ("t", "fn t(&self);")]),
    ("java", "class A { void m(int x) {} }\n", [("A", "class A"), ("m", "void m(int x)")]),
    ("c", "int main(int argc, char **argv) { return 0; }\n",
     [("main", "int main(int argc, char **argv)")]),
    ("ruby", "module M\n  class C\n    def m(a)\n    end\n  end\nend\n",
     [("M", "module M"), ("C", "class C"), ("m", "def m(a)")]),
])
def test_tree_sitter_languages_map_definitions(lang, source, expected):
    tags = scan_source(lang, source.encode())
    assert [(d.name, d.text) for d in tags.defs] == expected


def test_nesting_depth_from_tree_sitter():
    tags = scan_source("javascript", b"class A {\n  m() {}\n}\nfunction f() {}\n")
    assert [(d.name, d.depth) for d in tags.defs] == [("A", 0), ("m", 1), ("f", 0)]


def test_language_by_extension():
    assert language_for("a/b.py") == "python"
    assert language_for("x.TSX") == "tsx"
    assert language_for("README.md") is None
    assert language_for("Makefile") is None


def test_functions_in_module_level_blocks_are_not_methods_of_the_class_above():
    source = (
        "class A:\n    def m(self): pass\n\n"
        "if PLATFORM == 'win32':\n    def helper(): pass\n"
        "try:\n    import fast\nexcept ImportError:\n    def fallback(): pass\n"
    )
    got = {d.name: (d.kind, d.depth) for d in scan_source("python", source.encode()).defs}
    assert got == {"A": ("class", 0), "m": ("method", 1), "helper": ("function", 0),
                   "fallback": ("function", 0)}
