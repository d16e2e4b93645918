"""The scoped slop run (rules on the edited statements only) equals the whole-file run.

`analyze_change(..., added=...)` runs our rules only on the top-level statements (or a
class's statements) that hold an added line. Its findings must be exactly those of the
whole-file run restricted to the added lines: checked on real Python files of the
installed site-packages with random added-line sets.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.detectors import slop, slop_rules
from tests.core.detectors.real_code import (
    SITE_PACKAGES,
    read_text,
    real_python_files,
    splice_donor_lines,
)


def _site_files() -> list[Path]:
    """Real Python modules of the installed packages, 2-60 kB (test time)."""
    return real_python_files((SITE_PACKAGES,), 2_000, 60_000)


def _real_file(data: st.DataObject) -> tuple[str, str]:
    files = _site_files()
    if not files:
        pytest.skip("no site-packages Python files to test on")
    path = data.draw(st.sampled_from(files), label="file")
    return path.name, read_text(path)


def _added_lines(data: st.DataObject, n_lines: int) -> set[int]:
    """Scattered lines, a few contiguous runs (hunks), or both."""
    rows = st.integers(min_value=1, max_value=max(1, n_lines))
    added = set(data.draw(st.lists(rows, max_size=6), label="scattered"))
    for start, length in data.draw(
        st.lists(st.tuples(rows, st.integers(min_value=1, max_value=40)), max_size=4), label="runs"
    ):
        added.update(range(start, min(start + length, n_lines + 1)))
    return added


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_scoped_run_equals_whole_file_run_on_real_files(data: st.DataObject) -> None:
    name, text = _real_file(data)
    added = _added_lines(data, text.count("\n") + 1)
    scoped = slop._analyze(name, text, set(added), scoped=True)
    whole = slop._analyze(name, text, set(added), scoped=False)
    assert scoped.findings == whole.findings
    assert scoped.errors == whole.errors and scoped.added_lines == whole.added_lines


def _string_lines_naive(tree: ast.Module) -> set[int]:
    """The walk `_string_lines` replaced: every node visited."""
    rows: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.end_lineno and node.end_lineno > node.lineno:
            rows.update(range(node.lineno, node.end_lineno + 1))
    return rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_pruned_string_walk_finds_every_multiline_string(data: st.DataObject) -> None:
    _, text = _real_file(data)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    naive = _string_lines_naive(tree)
    assert slop_rules._string_lines(tree) == naive
    lines = text.split("\n")
    if text.count("\r") == text.count("\r\n"):
        assert slop_rules._string_lines(tree, lines) == naive  # statements' rows remembered
        assert slop_rules._string_lines(tree, lines) == naive  # ... and reused


CLASSY = '''\
import os


class Store:
    """Keeps things."""

    # the cache of names
    names = ("alpha", "beta", "gamma", "delta")

    def load(self, items: list) -> list:
        out = []
        for item in items:
            out.append(item.strip())
        if len(items) == 0:
            return []
        return out

    def save(self, items: list) -> None:
        try:
            os.remove("x")
        except Exception:
            pass  # gone already
        try:
            os.remove("y")
        except Exception:
            pass
        for a in items:
            for b in a:
                for c in b:
                    for d in c:
                        if d:
                            print(d)
        kinds = ("alpha", "beta", "gamma", "delta")
        print(kinds)

    # the end of the class


# define the store tags
def tags(store: Store) -> tuple:
    # return the store names
    return store.names


def kinds() -> tuple:
    return ("alpha", "beta", "gamma", "delta")
'''
N = CLASSY.count("\n")


def row(text: str, nth: int = 0) -> int:
    """The line number of the nth line of CLASSY holding `text`."""
    return [i for i, line in enumerate(CLASSY.split("\n"), 1) if text in line][nth]


@pytest.mark.parametrize("added", [
    lambda: {row("out.append")}, lambda: {row("len(items)")}, lambda: set(range(row("for a in"), row("print(d)") + 1)),
    lambda: {row("kinds = (")}, lambda: {row("return (")}, lambda: {row("# return the")},
    lambda: {row("# the end")}, lambda: {row("# define the")}, lambda: {row("# the cache")}, lambda: {row("names = (")},
    lambda: {row("class Store")}, lambda: {row("def save")}, lambda: {row("pass", 1)}, lambda: {row("pass", 0)},
    lambda: set(range(1, N + 1)),
])
def test_scoped_run_equals_whole_file_run_on_a_class(added) -> None:
    lines = added()
    scoped = slop._analyze("store.py", CLASSY, set(lines), scoped=True)
    whole = slop._analyze("store.py", CLASSY, set(lines), scoped=False)
    assert scoped.findings == whole.findings


def test_the_class_fixture_has_findings_to_compare() -> None:
    rules = {f.rule_id for f in slop._analyze("store.py", CLASSY, set(range(1, N + 1)), scoped=False).findings}
    assert {"PERF401", "SLOP002", "SLOP004", "SLOP006", "SLOP001", "S110"} <= rules, rules


def test_scope_keeps_only_the_edited_method() -> None:
    tree = ast.parse(CLASSY)
    scope = slop_rules.Scope.of(tree, {row("out.append"), row("# the end")})
    assert [getattr(s, "name", None) for s in scope.statements] == ["load"]
    assert scope.regions == [(row("def load"), row("return out")), (row("# the end"), row("# the end"))]
    header = slop_rules.Scope.of(tree, {row("class Store"), row("out.append")})  # the class line: all of it
    assert [getattr(s, "name", None) for s in header.statements] == ["Store"]


def test_known_added_lines_skip_the_line_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_diff(old: str, new: str) -> set[int]:
        raise AssertionError("the caller gave the added lines: no diff needed")

    monkeypatch.setattr(slop, "added_line_numbers", no_diff)
    report = slop.analyze_change("store.py", "", CLASSY, added={row("out.append"), row("return out")})
    assert [f.rule_id for f in report.findings] == ["PERF401"]
    assert report.added_lines == 2


def test_ruff_runs_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = slop.run_ruff

    def counting(path: str, text: str, timeout: float = 30.0) -> list:
        calls.append(path)
        return real(path, text, timeout)

    monkeypatch.setattr(slop, "run_ruff", counting)
    text = CLASSY + "\n\nUNIQUE_TO_THIS_TEST = 1\n"
    first = slop.analyze_change("once.py", "", text, added={row("out.append")})
    again = slop.analyze_change("once.py", "", text, added={row("out.append"), row("len(items)")})
    assert len(calls) == 1
    assert {f.rule_id for f in first.findings} <= {f.rule_id for f in again.findings}
    slop.analyze_change("once.py", "", text + "X = 2\n", added={row("out.append")})
    assert len(calls) == 2  # new text: ruff again


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_partial_parse_after_a_sequence_of_edits_equals_whole_file_run(data: st.DataObject) -> None:
    """Edits one after another (lines of another real file put in, lines deleted), the
    added lines being every line an edit wrote so far: at each version the scoped run,
    which parses only the segments near the added lines and takes the others' summaries
    from earlier versions, finds exactly what the whole-file run finds there."""
    name, text = _real_file(data)
    _, donor_text = _real_file(data)
    lines, donor = text.split("\n"), donor_text.split("\n")
    written = [False] * len(lines)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        splice_donor_lines(data, lines, written, donor, max_cut=10, max_take=25)
        version = "\n".join(lines)
        added = {i + 1 for i, w in enumerate(written) if w}
        scoped = slop._analyze(name, version, set(added), scoped=True)
        whole = slop._analyze(name, version, set(added), scoped=False)
        assert scoped.findings == whole.findings


def test_partial_tree_parses_only_the_statements_near_added_lines() -> None:
    tree = slop_rules.partial_tree(CLASSY, {row("return store.names")})
    assert tree is not None
    assert all(isinstance(node, slop_rules.Elided) for node in tree.body)  # nothing parsed yet
    near = [node for node in tree.body if node.segment is not None]
    assert [getattr(slop_rules.real(node), "name", None) for node in near] == ["tags"]
    assert len(tree.body) == len(ast.parse(CLASSY).body)
    assert ast.dump(tree.complete()) == ast.dump(ast.parse(CLASSY))
    edited_class = slop_rules.partial_tree(CLASSY, {row("out.append")})
    assert edited_class is not None  # an edited class is parsed at once: the scope enters it
    assert [type(node).__name__ for node in edited_class.body if not isinstance(node, slop_rules.Elided)] == ["ClassDef"]
    loop = "import os\n\nnames = []\nfor n in os.listdir():\n    names.append(n)\n\n\ndef f():\n    pass\n"
    report = slop._analyze("loop.py", loop, {4, 5}, scoped=True)
    assert report.findings == slop._analyze("loop.py", loop, {4, 5}, scoped=False).findings


RUFF_CASES = '''\
"""Module."""
import os
from typing import Any

RESULTS = []
TABLE: dict[str, Any] = {}


def setup():
    global CACHE
    CACHE = []


def fill(items):
    for item in items:
        RESULTS.append(item)


def fill_cache(items):
    for item in items:
        CACHE.append(item)


def walk(root):
    names = []
    for name in os.listdir(root):
        names.append(name)
    return names
'''


def _rows(text: str, needle: str) -> set[int]:
    return {i for i, line in enumerate(text.split("\n"), 1) if needle in line}


@pytest.mark.parametrize("needle", ["RESULTS.append", "CACHE.append", "names.append", "import os", "global CACHE"])
def test_ruff_text_gives_the_whole_files_findings_on_added_lines(needle: str) -> None:
    added = _rows(RUFF_CASES, needle)
    scoped = slop._analyze("cases.py", RUFF_CASES, set(added), scoped=True)
    whole = slop._analyze("cases.py", RUFF_CASES, set(added), scoped=False)
    assert scoped.findings == whole.findings


def test_ruff_text_keeps_what_the_edited_statements_may_refer_to() -> None:
    plain = RUFF_CASES.replace("    global CACHE\n", "")  # (a left-out def's global: the whole text)
    text = slop_rules.ruff_text(plain, _rows(plain, "names.append"))
    lines = text.split("\n")
    assert len(lines) == len(plain.split("\n"))
    assert "RESULTS = []" in lines and "import os" in lines  # module-level code kept
    assert "def fill(): ..." in lines  # another def: its binding line only
    assert "    for item in items:" not in lines
    # an added import (F401 reads the whole file) or a left-out global: the whole text
    assert slop_rules.ruff_text(RUFF_CASES, _rows(RUFF_CASES, "import os")) == RUFF_CASES
    assert slop_rules.ruff_text(RUFF_CASES, _rows(RUFF_CASES, "names.append")) == RUFF_CASES
    noqa = "# ruff: noqa: F401\n" + RUFF_CASES
    assert slop_rules.ruff_text(noqa, {30}) == noqa


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_repeated_literals_from_summaries_equal_the_whole_trees(data: st.DataObject) -> None:
    """SLOP006 over the whole file, read from the segments' summaries (no tree of the
    file), gives the findings of the rule over one parse, in the same order."""
    _, text = _real_file(data)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    partial = slop_rules.partial_tree(text, {1})
    if partial is None:
        return
    assert list(slop_rules._repeated_literals_of(partial)) == list(slop_rules.repeated_literals(text, tree))


def test_repeated_literals_from_summaries_on_a_class() -> None:
    partial = slop_rules.partial_tree(CLASSY, {row("kinds = (")})
    assert partial is not None
    found = list(slop_rules._repeated_literals_of(partial))
    assert found == list(slop_rules.repeated_literals(CLASSY, ast.parse(CLASSY)))
    assert [f.rule_id for f in found] == ["SLOP006"]  # kinds() repeats save()'s tuple (the class-level one is data)


def _displays_by_ast_walk(func: ast.AST) -> list[tuple[str, int, int]]:
    """The reference: SLOP006's literals of one function as ast.walk meets them."""
    import hashlib

    nested: set[int] = set()
    out = []
    for node in ast.walk(func):
        if isinstance(node, (ast.List, ast.Set, ast.Tuple, ast.Dict)):
            nested.update(id(c) for c in ast.iter_child_nodes(node))
        if id(node) in nested or not isinstance(node, ast.expr) or not slop_rules._constant_display(node):
            continue
        key = hashlib.blake2b(ast.dump(node).encode(), digest_size=16).hexdigest()
        out.append((key, node.lineno, node.end_lineno or node.lineno))  # type: ignore[attr-defined]
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_functions_literals_are_those_ast_walk_meets_in_its_order(data: st.DataObject) -> None:
    """slop_rules._function_displays walks the tree itself (for speed): the same literals,
    in the same order, as ast.walk's walk, on every function of real files."""
    _name, text = _real_file(data)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert slop_rules._function_displays(func) == _displays_by_ast_walk(func)


def test_literals_at_several_depths_come_in_ast_walks_order() -> None:
    """Constant literals at different depths and branches: an order other than
    ast.walk's (depth first, last child first) differs here."""
    text = ("def f(x):\n    a = [1, 2, 3, 4]\n    if x:\n        b = {1: 2, 3: 4, 5: 6, 7: 8}\n"
            "        def g():\n            return {9, 8, 7, 6}\n    c = (5, 6, 7, 8)\n"
            "    return [[1, 2, 3, 4], (9, 9, 9, 9)], a, b, c\n")
    func = ast.parse(text).body[0]
    found = slop_rules._function_displays(func)
    assert len(found) == 4 and found == _displays_by_ast_walk(func)  # the table inside a list: not compared


def test_literals_of_statements_no_edit_touches_are_read_only_when_an_edit_holds_one() -> None:
    """SLOP006's literals are read per segment on demand: an edit holding none reads those
    of the edited statements only; one holding a literal reads the file's (and finds the
    repeat of an earlier one)."""
    table = "    codes = [1, 2, 3, 4]\n"
    funcs = [f"def f{i}(x):\n{table}    return x in codes\n\n\n" for i in range(30)]
    text = "".join(funcs) + "def g(x):\n    return x + 1\n"
    g_line = text.count("\n")  # `return x + 1`
    with slop_rules._RULE_LOCK:
        slop_rules._SEG_DISPLAYS.clear()
    plain = slop._analyze("m.py", text, {g_line}, scoped=True)
    assert not [f for f in plain.findings if f.rule_id == "SLOP006"]
    assert len(slop_rules._SEG_DISPLAYS) <= 2  # g's segment (and no other)
    again = text + f"\n\ndef h(x):\n{table}    return x\n"
    h_line = again.count("\n") - 1  # the table in h
    found = slop._analyze("m.py", again, {h_line}, scoped=True)
    assert [f.line for f in found.findings if f.rule_id == "SLOP006"] == [h_line]
    assert found.findings == slop._analyze("m.py", again, {h_line}, scoped=False).findings
