"""Property: every tolerant path writes exactly what the author meant, or refuses.

Real functions (from installed packages' .py files) get a real-looking change (a line
changed, one inserted, one deleted); the answer that describes it is then made sloppy
the way model answers are: indented +-n spaces or with tabs, blank lines dropped or
added, trailing spaces, ``` lines around the parts, wrong `@@` numbers, a second
block that depends on the first.  Whatever the sloppiness, the file must end up
byte-exact or the edit must be refused; and for the sloppiness the engine claims to
undo, it must not be refused.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.edits.match import MatchError, norm
from core.edits.parser import Edit
from core.edits.proposal import FileEditor

_MODULES = ["jinja2.lexer", "jinja2.compiler", "httpx._models", "httpx._urlparse",
            "pygments.lexer", "markdown_it.renderer", "platformdirs.unix", "h11._connection",
            "difflib", "textwrap", "argparse"]


def _functions() -> list[list[str]]:
    """Top-level functions and methods, 5-40 lines, plainly space-indented."""
    out: list[list[str]] = []
    for name in _MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        text = Path(spec.origin).read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef) or node.end_lineno is None:
                continue
            body = lines[node.lineno - 1:node.end_lineno]
            if not 5 <= len(body) <= 40 or any("\t" in s or s != s.rstrip() for s in body):
                continue
            if any(len(s) - len(s.lstrip()) < len(body[0]) - len(body[0].lstrip())
                   for s in body if s.strip()):
                continue  # a string whose lines sit left of the def
            if any('"""' in s or "'''" in s for s in body[1:]):
                continue  # docstrings hold free text whose indentation is not code
            ind = len(body[0]) - len(body[0].lstrip())
            out.append([s[ind:] if s.strip() else "" for s in body])
    return out


FUNCS = _functions()
# SPARK_PROPERTY_SCALE=20 runs twenty times the examples (a soak run, not for CI)
SCALE = int(os.environ.get("SPARK_PROPERTY_SCALE", "1"))


def _indent(s: str) -> str:
    return s[: len(s) - len(s.lstrip())]


@dataclass
class Case:
    file: list[str]
    search: list[str]  # the block as the model should have copied it
    replace: list[str]
    expected: list[str]
    start: int  # 0-based line of the block in the file
    changed: set[int]  # indexes in search of lines the change touches (and neighbours)


@st.composite
def cases(draw, tabs_file: bool = False) -> Case:
    assume(FUNCS)
    picks = draw(st.lists(st.integers(0, len(FUNCS) - 1), min_size=2, max_size=3,
                          unique=True))
    target = draw(st.sampled_from(range(len(picks))))
    file: list[str] = []
    starts = []
    for k, i in enumerate(picks):
        if k:
            file += ["", ""]
        starts.append(len(file))
        file += FUNCS[i]
    func = FUNCS[picks[target]]
    lo = draw(st.integers(0, max(0, len(func) - 4)))
    hi = draw(st.integers(min(len(func), lo + 4), min(len(func), lo + 12)))
    search = func[lo:hi]
    assume(sum(1 for s in search if s.strip()) >= 3)
    p = draw(st.integers(0, len(search) - 1))
    assume(search[p].strip())
    kind = draw(st.sampled_from(["change", "insert", "delete", "insert_deeper"]))
    ind = _indent(search[p])
    if kind == "change":
        new = search[:p] + [search[p] + "  # changed"] + search[p + 1:]
    elif kind == "delete":
        new = search[:p] + search[p + 1:]
    else:
        extra = "    " if kind == "insert_deeper" else ""
        new = search[:p + 1] + [f"{ind}{extra}value_hyp = {p}"] + search[p + 1:]
    start = starts[target] + lo
    if tabs_file:
        file, search, new = (_to_tabs(x) for x in (file, search, new))
    expected = file[:start] + new + file[start + len(search):]
    # the block must name one place, even loosely, for the change to be placeable
    keys = [norm(s) for s in file if s.strip()]
    needle = [norm(s) for s in search if s.strip()]
    assume(sum(keys[i:i + len(needle)] == needle for i in range(len(keys))) == 1)
    return Case(file, search, new, expected, start, {p - 1, p, p + 1})


def _to_tabs(lines: list[str]) -> list[str]:
    out = []
    for s in lines:
        ind = _indent(s)
        out.append("\t" * (len(ind) // 4) + " " * (len(ind) % 4) + s[len(ind):])
    return out


def _run(file: list[str], *edits: Edit) -> str | None:
    ed = FileEditor("m.py", "\n".join(file) + "\n")
    try:
        for e in edits:
            ed.apply(e)
    except MatchError:
        return None
    return ed.text()


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _sr(search: list[str], replace: list[str], kind: str = "search_replace",
        line: int | None = None) -> Edit:
    return Edit("m.py", _text(search), _text(replace), kind, line)


# -- sloppiness ---------------------------------------------------------------------
def _shift(lines: list[str], how: str, n: int) -> list[str] | None:
    out = []
    for s in lines:
        if not s.strip():
            out.append(s)
        elif how == "deeper":
            out.append(" " * n + s)
        elif how == "shallower":
            if len(_indent(s)) < n or _indent(s)[:n].strip(" "):
                return None
            out.append(s[n:])
        else:  # tabs: every 4 spaces of indentation become a tab
            ind = _indent(s)
            if ind.strip(" ") or len(ind) % 4:
                return None
            out.append("\t" * (len(ind) // 4) + s[len(ind):])
    return out


def _twins(search: list[str], replace: list[str]) -> dict[int, int]:
    """REPLACE line -> the SEARCH line it keeps unchanged."""
    import difflib
    sm = difflib.SequenceMatcher(None, search, replace, autojunk=False)
    return {j: i for a, b, size in sm.get_matching_blocks()
            for i, j in zip(range(a, a + size), range(b, b + size))}


def _pair_edit(case: Case, search: list[str], replace: list[str], drop_s: set[int],
               drop_r: bool, add_at: int | None) -> tuple[list[str], list[str]]:
    """Blank lines dropped from SEARCH (and maybe from REPLACE at the same place), or a
    blank line added to both, at context lines only."""
    import difflib
    sm = difflib.SequenceMatcher(None, search, replace, autojunk=False)
    equal_pairs = {i: j for a, b, size in sm.get_matching_blocks()
                   for i, j in zip(range(a, a + size), range(b, b + size))}
    s_out = [s for i, s in enumerate(search) if i not in drop_s]
    r_drop = {equal_pairs[i] for i in drop_s if i in equal_pairs} if drop_r else set()
    r_out = [r for j, r in enumerate(replace) if j not in r_drop]
    if add_at is not None and add_at in equal_pairs:
        j = equal_pairs[add_at]
        s_out = [*search[:add_at], "", *search[add_at:]]
        r_out = [*replace[:j], "", *replace[j:]]
    return s_out, r_out


@settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases(), how=st.sampled_from(["none", "deeper", "shallower", "tabs"]),
       n=st.sampled_from([1, 2, 4, 8]), data=st.data())
def test_any_sloppiness_is_exact_or_refused(case: Case, how: str, n: int, data) -> None:
    search, replace = case.search, case.replace
    # a blank line the SEARCH lost at its very edge reads as REPLACE adding one (as a
    # real commit adding PEP 8's second blank line does): only inner ones are sloppiness
    blanks = [i for i, s in enumerate(search) if not s.strip() and 0 < i < len(search) - 1]
    drop = set(data.draw(st.lists(st.sampled_from(blanks), max_size=2))) if blanks else set()
    add_at = data.draw(st.one_of(st.none(), st.integers(0, len(search) - 1)))
    search, replace = _pair_edit(case, search, replace, drop, data.draw(st.booleans()),
                                 add_at)
    if how != "none":
        s2, r2 = _shift(search, how, n), _shift(replace, how, n)
        assume(s2 is not None and r2 is not None)
        search, replace = s2, r2
    if data.draw(st.booleans()):  # noise on SEARCH lines and their REPLACE twins
        spaces = data.draw(st.sampled_from([" ", "  ", "\t"]))
        pick = data.draw(st.lists(st.booleans(), min_size=len(search), max_size=len(search)))
        twins = _twins(search, replace)
        search = [s + spaces if pick[i] else s for i, s in enumerate(search)]
        replace = [r + spaces if j in twins and pick[twins[j]] else r
                   for j, r in enumerate(replace)]
    if data.draw(st.booleans()):
        search, replace = ["```python", *search, "```"], ["```python", *replace, "```"]
    kind = data.draw(st.sampled_from(["search_replace", "udiff"]))
    line = data.draw(st.one_of(st.none(), st.just(case.start + 1), st.integers(1, 200)))
    got = _run(case.file, _sr(search, replace, kind, line))
    assert got is None or got == _text(case.expected)


@settings(max_examples=100 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases(), how=st.sampled_from(["none", "deeper", "shallower", "tabs"]),
       n=st.sampled_from([2, 4]), fence=st.booleans(), trailing=st.booleans())
def test_what_the_engine_undoes_is_applied_exactly(case: Case, how: str, n: int,
                                                   fence: bool, trailing: bool) -> None:
    """Uniform indentation, trailing spaces and wrapped fences are always undone."""
    search, replace = case.search, case.replace
    if how != "none":
        s2, r2 = _shift(search, how, n), _shift(replace, how, n)
        assume(s2 is not None and r2 is not None)
        search, replace = s2, r2
        # a REPLACE line shallower than the shift can carry is refused by design
        assume(how != "deeper" or all(len(_indent(r)) >= n for r in replace if r.strip()))
    if trailing:
        twins = _twins(search, replace)
        search = [s + " " for s in search]
        replace = [r + " " if j in twins else r for j, r in enumerate(replace)]
    if fence:
        search, replace = ["```", *search, "```"], ["```", *replace, "```"]
    got = _run(case.file, _sr(search, replace))
    assert got == _text(case.expected)


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases(tabs_file=True), data=st.data())
def test_tab_indented_file_and_space_indented_answer(case: Case, data) -> None:
    spaced = [(" " * 4 * len(_indent(s).rstrip(" ")) + s.lstrip("\t"))
              if s.startswith("\t") else s for s in case.search]
    replaced = [(" " * 4 * len(_indent(r).rstrip(" ")) + r.lstrip("\t"))
                if r.startswith("\t") else r for r in case.replace]
    got = _run(case.file, _sr(spaced, replaced))
    assert got is None or got == _text(case.expected)


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases(), wrong=st.integers(-50, 50))
def test_blank_line_missing_from_search_only_is_written_once(case: Case, wrong: int
                                                             ) -> None:
    blanks = [i for i, s in enumerate(case.search) if not s.strip()
              and 0 < i < len(case.search) - 1 and not ({i - 1, i, i + 1} & case.changed)]
    assume(blanks)
    search = [s for i, s in enumerate(case.search) if i != blanks[0]]
    got = _run(case.file, _sr(search, case.replace, "udiff", case.start + 1 + wrong))
    assert got == _text(case.expected)


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases())
def test_a_second_block_on_what_the_first_wrote(case: Case) -> None:
    """Blocks apply in order: a second block whose SEARCH is the first one's REPLACE."""
    first = _sr(case.search, case.replace)
    extra = [*case.replace, "# second"]
    second = _sr(case.replace, extra)
    got = _run(case.file, first, second)
    if got is not None:
        s = case.start
        assert got == _text(case.file[:s] + extra + case.file[s + len(case.search):])


def test_pool_of_real_functions_is_not_empty() -> None:
    assert len(FUNCS) > 50, "too few real functions found in installed packages"


@pytest.mark.parametrize("how", ["deeper", "tabs"])
def test_a_known_case_round_trips(how: str) -> None:
    file = ["def f(x):", "    if x:", "        return 1", "    return 2"]
    search, replace = file[1:3], ["    if x:", "        return 3", "    y = 0"]
    s2, r2 = _shift(search, how, 4), _shift(replace, how, 4)
    assert s2 is not None and r2 is not None
    got = _run(file, _sr(s2, r2))
    assert got == _text(["def f(x):", "    if x:", "        return 3", "    y = 0",
                         "    return 2"])
