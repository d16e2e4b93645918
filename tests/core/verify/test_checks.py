"""Quick checks: syntax and ruff's error rules on proposed texts, and what is new."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.edits.hunks import apply_hunks, make_hunks
from core.verify.checks import (
    Problem,
    new_line_ranges,
    new_problems,
    problems_by_hunk,
    quick_check,
)

OLD = "import os\n\n\ndef cwd():\n    return os.getcwd()\n"
# the answer adds an import and a use of it, in two hunks
NEW = "import os\nimport json\n\n\ndef cwd():\n    return os.getcwd()\n\n\ndef dump(x):\n    return json.dumps(x)\n"


def codes(problems):
    return sorted(p.code for p in problems)


def test_clean_python_has_no_problems():
    assert quick_check({"m.py": OLD}) == []
    assert quick_check({"m.py": NEW}) == []


def test_a_use_without_its_import_is_an_undefined_name():
    hunks = make_hunks("m.py", OLD, NEW)
    assert len(hunks) == 2
    use_only = apply_hunks(OLD, hunks, {hunks[1].id})
    found = quick_check({"m.py": use_only})
    assert codes(found) == ["F821"]
    assert "json" in found[0].message
    # and the badge sits on the hunk that uses it
    badges = problems_by_hunk(found, hunks, {hunks[1].id})
    assert list(badges) == [hunks[1].id]


def test_an_import_without_its_use_is_unused():
    hunks = make_hunks("m.py", OLD, NEW)
    import_only = apply_hunks(OLD, hunks, {hunks[0].id})
    found = quick_check({"m.py": import_only})
    assert codes(found) == ["F401"]
    assert list(problems_by_hunk(found, hunks, {hunks[0].id})) == [hunks[0].id]


def test_syntax_errors_in_python_and_other_languages():
    found = quick_check({
        "a.py": "def f(:\n    pass\n",
        "b.js": "function f() {\n  return 1;\n",
        "c.go": "package main\n\nfunc main() {\n\tx := \n}\n",
        "d.json": '{"a": 1,}',
        "e.toml": "[x]\na = \n",
        "f.rs": "fn main() { let x = 1; }\n",
        "notes.txt": "anything (at all",
    })
    by_path = {p.path for p in found}
    assert by_path == {"a.py", "b.js", "c.go", "d.json", "e.toml"}
    assert all(p.code == "syntax" for p in found)
    assert next(p for p in found if p.path == "a.py").line == 1


def test_a_file_with_a_syntax_error_is_not_also_run_through_ruff():
    assert codes(quick_check({"a.py": "import os\ndef f(:\n"})) == ["syntax"]


def test_problems_already_there_are_not_new():
    before = quick_check({"m.py": "import sys\n\nprint(x)\n"})
    after = quick_check({"m.py": "import sys\n\n\n# moved down\nprint(x)\nprint(y)\n"})
    fresh = new_problems(before, after)
    assert [(p.code, p.message) for p in fresh] == [("F821", "Undefined name `y`")]


def test_line_numbers_in_messages_do_not_make_a_problem_new():
    a = Problem("m.py", 3, "F811", "Redefinition of unused `os` from line 1")
    b = Problem("m.py", 9, "F811", "Redefinition of unused `os` from line 7")
    assert new_problems([a], [b]) == []
    assert new_problems([a], [b, b]) == [b]  # a second copy is new


problem = st.builds(Problem, st.sampled_from(["a.py", "b.py"]), st.integers(1, 50),
                    st.sampled_from(["F821", "F401", "syntax"]),
                    st.sampled_from(["x", "y", "from line 3"]))


@settings(max_examples=60)
@given(st.lists(problem, max_size=8), st.lists(problem, max_size=8))
def test_new_problems_is_a_multiset_difference(before, after):
    fresh = new_problems(before, after)
    # every fresh problem comes from after, in order, and nothing in before is counted twice
    assert all(p in after for p in fresh)
    assert len(fresh) >= len(after) - len(before)
    assert new_problems(after, after) == []
    assert new_problems([], after) == after


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n"]), max_size=12)


@settings(max_examples=80)
@given(lines, lines, st.data())
def test_new_line_ranges_point_at_the_hunks_new_lines(old, new, data):
    """For any accepted subset, each accepted hunk's range in the result holds exactly
    its new lines (or, for a deletion, is the line after it)."""
    old_text, new_text = "".join(old), "".join(new)
    hunks = make_hunks("f", old_text, new_text)
    accepted = {h.id for h in hunks if data.draw(st.booleans())}
    result = apply_hunks(old_text, hunks, accepted).splitlines(keepends=True)
    for h in hunks:
        if h.id not in accepted:
            continue
        _, first, last = new_line_ranges(hunks, accepted)[h.id]
        if h.new_lines:
            assert result[first - 1:last] == h.new_lines
        else:
            assert first == last and 1 <= first <= len(result) + 1
