"""Hostile model answers: malformed blocks are refused with a reason, never half-applied.

Each test is a regression for a way the edit loop once wrote the wrong thing (or hung).
"""

from __future__ import annotations

import pytest

from core.edits.match import MatchError, find
from core.edits.parser import StreamingParser
from core.edits.proposal import apply_proposal, build_proposal
from core.workspace.files import Workspace

BASE = "def f():\n    return 1\n\ndef g():\n    return 2\n"


def _parse(answer: str):
    p = StreamingParser()
    edits = p.feed(answer) + p.finish()
    return edits, [e.message for e in p.errors]


def _apply(tmp_path, files: dict[str, str | bytes], answer: str):
    for name, body in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
    edits, perrs = _parse(answer)
    ws = Workspace(tmp_path)
    prop = build_proposal(ws, edits)
    res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    errors = perrs + [e.message for e in prop.errors] + [e.message for e in res.refused]
    return res, errors


def _sr(path: str, search: str, replace: str, fence: str = "```") -> str:
    return (f"{path}\n{fence}python\n<<<<<<< SEARCH\n{search}=======\n{replace}"
            f">>>>>>> REPLACE\n{fence}\n")


def _read(tmp_path, name="a.py") -> str:
    return (tmp_path / name).read_bytes().decode()


# -- malformed blocks -------------------------------------------------------------
def test_block_missing_replace_does_not_swallow_the_next_block(tmp_path):
    answer = ("a.py\n```\n<<<<<<< SEARCH\n    return 1\n=======\n    return 3\n```\n\n"
              + _sr("a.py", "    return 2\n", "    return 4\n"))
    _res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path) == BASE.replace("return 2", "return 4")
    assert any("no >>>>>>> REPLACE" in e for e in errors)


def test_block_missing_replace_in_the_same_fence_keeps_the_path(tmp_path):
    answer = ("a.py\n```\n<<<<<<< SEARCH\n    return 1\n=======\n    return 3\n"
              "<<<<<<< SEARCH\n    return 2\n=======\n    return 4\n>>>>>>> REPLACE\n```\n")
    _res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path) == BASE.replace("return 2", "return 4")
    assert len(errors) == 1 and "not applied" in errors[0]


@pytest.mark.parametrize("answer", [
    "a.py\n```\n<<<<<<< SEARCH\n    return 1\n>>>>>>> REPLACE\n```\n",
    "a.py\n```\n    return 1\n=======\n    return 3\n>>>>>>> REPLACE\n```\n",
    ("a.py\n```\n<<<<<<< SEARCH\n    return 1\n=======\n    return 3\n=======\n    x\n"
    ">>>>>>> REPLACE\n```\n"),
    "a.py\n```\n<<<<<<< SEARCH\n    return 1\n=======\n    return 3\n",
    "a.py\n```\n<<<<<<< SEARCH\n    return 1\n=======\n    ret",
], ids=["no-divider", "no-search", "two-dividers", "no-replace-at-end", "cut-mid-line"])
def test_malformed_block_is_refused_and_file_untouched(tmp_path, answer):
    res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path) == BASE and res.written == []
    assert errors and all("line" in e for e in errors)


def test_doubled_search_marker_is_a_tolerated_slip(tmp_path):
    answer = "a.py\n```\n<<<<<<< SEARCH\n<<<<<<< SEARCH\n    return 1\n=======\n    return 3\n" \
             ">>>>>>> REPLACE\n```\n"
    _res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path) == BASE.replace("return 1", "return 3") and not errors


@pytest.mark.parametrize("fence", ["````", "`````", "~~~", "~~~~"])
def test_long_and_tilde_fences(tmp_path, fence):
    _res, errors = _apply(tmp_path, {"a.py": BASE}, _sr("a.py", "    return 1\n",
                                                       "    return 3\n", fence))
    assert _read(tmp_path) == BASE.replace("return 1", "return 3") and not errors


def test_inner_fence_in_replace_is_content(tmp_path):
    answer = _sr("README.md", "old\n", "```\ncode\n```\n")
    _res, errors = _apply(tmp_path, {"README.md": "# T\n\nold\n"}, answer)
    assert _read(tmp_path, "README.md") == "# T\n\n```\ncode\n```\n" and not errors


@pytest.mark.parametrize("line", ['"a.py"', "'a.py'", "**a.py**", "`a.py`", "a.py:",
                                  "**`a.py`**:", "### `a.py`", "File: `a.py`",
                                  "```python a.py", "```python:a.py"])
def test_decorated_path_lines(tmp_path, line):
    if line.startswith("```"):
        answer = f"{line}\n<<<<<<< SEARCH\n    return 1\n=======\n    return 3\n" \
                 ">>>>>>> REPLACE\n```\n"
    else:
        answer = _sr(line, "    return 1\n", "    return 3\n")
    res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert res.written == ["a.py"] and not errors


def test_dotfile_path_is_not_mistaken_for_the_previous_block(tmp_path):
    answer = _sr("a.py", "    return 1\n", "    return 3\n") + _sr(".env", "", "X=1\n")
    edits, _ = _parse(answer)
    assert [e.path for e in edits] == ["a.py", ".env"]


def test_crlf_and_bom_answers(tmp_path):
    answer = "\ufeff" + _sr("a.py", "    return 1\n", "    return 3\n").replace("\n", "\r\n")
    _res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path) == BASE.replace("return 1", "return 3") and not errors


def test_bom_split_across_chunks_streams_the_same():
    answer = "\ufeff" + _sr("a.py", "x\n", "y\n")
    p = StreamingParser()
    edits = [e for ch in answer for e in p.feed(ch)] + p.finish()
    assert [e.path for e in edits] == ["a.py"]


# -- empty SEARCH, no-ops, duplicates, overlaps --------------------------------------
def test_empty_search_creates_a_file_and_fills_an_empty_one(tmp_path):
    _res, errors = _apply(tmp_path, {"empty.py": ""},
                         _sr("new/n.py", "", "N = 1\n") + _sr("empty.py", "", "E = 1\n"))
    assert _read(tmp_path, "new/n.py") == "N = 1\n"
    assert _read(tmp_path, "empty.py") == "E = 1\n" and not errors


def test_empty_search_on_a_file_with_content_is_refused(tmp_path):
    _res, errors = _apply(tmp_path, {"a.py": BASE}, _sr("a.py", "", "def f():\n    pass\n"))
    assert _read(tmp_path) == BASE and "exists and is not empty" in errors[0]


def test_search_equal_to_replace_is_a_quiet_no_op(tmp_path):
    res, errors = _apply(tmp_path, {"a.py": BASE}, _sr("a.py", "    return 1\n",
                                                       "    return 1\n"))
    assert _read(tmp_path) == BASE and res.written == [] and not errors


def test_the_same_edit_twice_applies_once_and_says_so(tmp_path):
    block = _sr("a.py", "def f():\n    return 1\n", "def f():\n    return 10\n")
    _res, errors = _apply(tmp_path, {"a.py": BASE}, block + block)
    assert _read(tmp_path) == BASE.replace("return 1\n", "return 10\n")
    assert len(errors) == 1 and "already" in errors[0]


def test_overlapping_edits_second_is_refused(tmp_path):
    answer = _sr("o.py", "a\nb\n", "A\nB\n") + _sr("o.py", "b\nc\n", "X\nY\n")
    _res, errors = _apply(tmp_path, {"o.py": "a\nb\nc\nd\n"}, answer)
    assert _read(tmp_path, "o.py") == "a\nb\nc\nd\n"  # all of a file's edits or none
    assert len(errors) == 2 and "overlap" in errors[0] and "or none" in errors[1]


def test_fuzzy_never_lands_on_what_an_earlier_edit_wrote(tmp_path):
    body = "def f():\n    value = compute(1)\n    return value\n\nx = 1\n"
    answer = (_sr("a.py", "    value = compute(1)\n", "    value = compute(9)\n")
              + _sr("a.py", "def f():\n    value = compute(1)\n    return value\n",
                    "def f():\n    return 7\n"))
    _res, errors = _apply(tmp_path, {"a.py": body}, answer)
    assert _read(tmp_path) == body and len(errors) == 2


# -- ambiguity and fuzzy matching ----------------------------------------------------
TWINS = ("def add_one(values):\n    result = []\n    for v in values:\n"
         "        result.append(v + 1)\n    return result\n\n\n"
         "def add_two(values):\n    result = []\n    for v in values:\n"
         "        result.append(v + 2)\n    return result\n")


def test_ambiguous_search_shows_both_places(tmp_path):
    _res, errors = _apply(tmp_path, {"a.py": "x = 1\ny = 2\nx = 1\n"},
                         _sr("a.py", "x = 1\n", "x = 5\n"))
    assert _read(tmp_path) == "x = 1\ny = 2\nx = 1\n"
    assert "2 places" in errors[0] and "at line 1:" in errors[0] and "at line 3:" in errors[0]


def test_longer_context_disambiguates(tmp_path):
    _res, errors = _apply(tmp_path, {"a.py": "x = 1\ny = 2\nx = 1\n"},
                         _sr("a.py", "y = 2\nx = 1\n", "y = 2\nx = 5\n"))
    assert _read(tmp_path) == "x = 1\ny = 2\nx = 5\n" and not errors


def test_fuzzy_between_two_near_identical_functions_is_refused():
    lines = TWINS.splitlines()
    search = TWINS.replace("add_one", "add_three").replace("v + 1", "v + 3").splitlines()[:5]
    with pytest.raises(MatchError) as exc:
        find(lines, search, path="m.py")
    assert "2 places" in str(exc.value) and "line 1" in str(exc.value)


def test_fuzzy_just_above_threshold_picks_the_one_place():
    lines = TWINS.splitlines() + ["", "", "def other(items):", "    return sorted(items)"]
    search = ["def other(itemz):", "    return sorted(itemz)", ""]
    lines2 = lines[:7] + ["def render(page, width):", "    head = page.title.upper()",
                          "    body = wrap(page.text, width)", "    return head + body"]
    search2 = ["def render(page, width):", "    head = page.title.upper()",
               "    body = wrap(page.txt, width)", "    return head + body"]
    m = find(lines2, search2, path="m.py")
    assert (m.start, m.how) == (7, "fuzzy") and m.score >= 0.88
    with pytest.raises(MatchError):  # two lines: too little to fuzzy-match at all
        find(lines, search, path="m.py")


def test_fuzzy_just_below_threshold_is_refused_with_closest_lines():
    lines = ["def render(page, width):", "    head = page.title.upper()",
             "    body = wrap(page.text, width)", "    return head + body"]
    search = ["def render(pg, w):", "    hd = pg.title.lower()",
              "    bd = wrap(pg.txt, w)", "    return hd + bd"]
    with pytest.raises(MatchError) as exc:
        find(lines, search, path="r.py")
    assert "not found" in str(exc.value) and "1 | def render" in str(exc.value)


def test_indentation_normalised_and_replacement_reindented_for_tabs(tmp_path):
    _res, _errors = _apply(tmp_path, {"t.py": "def f():\n\tif x:\n\t\treturn 1\n"},
                         _sr("t.py", "    if x:\n        return 1\n",
                             "    if x:\n        return 2\n    return 0\n"))
    assert _read(tmp_path, "t.py") == "def f():\n\tif x:\n\t\treturn 2\n\treturn 0\n"


@pytest.mark.timeout(30)
def test_extremely_long_lines_do_not_hang():
    lines = [f"line_{i} = {i}" for i in range(2000)]
    lines[1000] = "x = '" + "ab" * 100_000 + "'"
    with pytest.raises(MatchError) as exc:
        find(lines, [lines[1000][:-3] + "zz'", "more", "lines"], path="big.py")
    assert len(str(exc.value)) < 2000


# -- unified diffs ---------------------------------------------------------------------
def _diff(body: str) -> str:
    return "```diff\n" + body + "```\n"


def test_diff_with_wrong_line_numbers_and_no_prefixes_is_placed_by_context(tmp_path):
    answer = _diff("--- a.py\n+++ a.py\n@@ -40,2 +40,2 @@\n def g():\n-    return 2\n"
                   "+    return 5\n")
    _res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path) == BASE.replace("return 2", "return 5") and not errors


def test_diff_hunks_out_of_order_and_several_files(tmp_path):
    answer = _diff("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -4,2 +4,2 @@\n"
                   " def g():\n-    return 2\n+    return 6\n@@ -1,2 +1,2 @@\n def f():\n"
                   "-    return 1\n+    return 5\n--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n"
                   "-x = 1\n+x = 9\n")
    _res, errors = _apply(tmp_path, {"a.py": BASE, "b.py": "x = 1\n"}, answer)
    assert _read(tmp_path) == BASE.replace("return 1", "return 5").replace("return 2",
                                                                           "return 6")
    assert _read(tmp_path, "b.py") == "x = 9\n" and not errors


def test_diff_new_file_and_deletion(tmp_path):
    answer = _diff("--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
                   "--- a/a.py\n+++ /dev/null\n@@ -1,5 +0,0 @@\n-def f():\n-    return 1\n"
                   "-\n-def g():\n-    return 2\n")
    _res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path, "n.py") == "x = 1\ny = 2\n" and _read(tmp_path) == BASE
    assert any("deleting files is not supported" in e for e in errors)


def test_diff_no_newline_marker_keeps_the_file_without_final_newline(tmp_path):
    answer = _diff("--- a/b.py\n+++ b/b.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n"
                   "\\ No newline at end of file\n+y = 3\n\\ No newline at end of file\n")
    _res, errors = _apply(tmp_path, {"b.py": "x = 1\ny = 2"}, answer)
    assert _read(tmp_path, "b.py") == "x = 1\ny = 3" and not errors


def test_diff_hunk_without_context_only_appends(tmp_path):
    body = "a\nb\nc\n"
    _res, errors = _apply(tmp_path, {"c.py": body},
                          _diff("--- a/c.py\n+++ b/c.py\n@@ -1,0 +2,1 @@\n+inserted\n"))
    assert _read(tmp_path, "c.py") == body and "no context" in errors[0]
    _res, errors = _apply(tmp_path, {"c.py": body},
                          _diff("--- a/c.py\n+++ b/c.py\n@@ -3,0 +4,1 @@\n+d\n"))
    assert _read(tmp_path, "c.py") == body + "d\n" and not errors


def test_cut_diff_is_not_applied(tmp_path):
    _res, errors = _apply(tmp_path, {"a.py": BASE},
                         "```diff\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n def f():\n"
                         "-    return 1\n")
    assert _read(tmp_path) == BASE and "no closing fence" in errors[0]


# -- found by the fuzz test --------------------------------------------------------------
def test_a_lone_word_path_line_is_refused_not_given_the_previous_path(tmp_path):
    answer = _sr("a.py", "    return 1\n", "    return 3\n") + _sr("pkg", "", "x\n")
    edits, errors = _parse(answer)
    assert [e.path for e in edits] == ["a.py"] and "'pkg'" in errors[0]
    edits, errors = _parse(_sr("a.py", "    return 1\n", "    return 3\n")
                           + "Next:\n```python\n<<<<<<< SEARCH\nx\n=======\ny\n"
                             ">>>>>>> REPLACE\n```\n")
    assert [e.path for e in edits] == ["a.py", "a.py"] and not errors


def test_unfenced_block_missing_replace_hands_the_next_path_on(tmp_path):
    answer = ("new.py\n<<<<<<< SEARCH\n=======\nx = 1\n"
              + _sr("a.py", "    return 1\n", "    return 3\n"))
    edits, errors = _parse(answer)
    assert [(e.path, e.replace) for e in edits] == [("a.py", "    return 3\n")]
    assert "new.py" in errors[0]


def test_unclosed_fence_then_a_new_fence_after_a_path_line():
    answer = ("a.py\n```\nb.py\n```python\n<<<<<<< SEARCH\nx\n=======\ny\n"
              ">>>>>>> REPLACE\n```\n")
    edits, errors = _parse(answer)
    assert [e.path for e in edits] == ["b.py"] and "fences look broken" in errors[0]
    answer = "a.py\n```\npkg\n```python\n<<<<<<< SEARCH\n=======\n>>>>>>> REPLACE\n```\n"
    edits, errors = _parse(answer)
    assert edits == [] and any("'pkg'" in e for e in errors)


def test_whole_file_with_a_fence_opening_inside_is_refused():
    edits, errors = _parse("a.py\n```\nimport x\n```python\nmore\n```\n")
    assert edits == [] and "fence opening inside" in errors[0]


def test_trailing_blank_line_in_a_file_without_final_newline(tmp_path):
    _apply(tmp_path, {"a.py": "x = 1"}, _sr("a.py", "x = 1\n", "x = 1\n\n"))
    assert _read(tmp_path) == "x = 1\n"


def test_a_lone_word_with_a_colon_is_still_not_a_path():
    edits, errors = _parse(_sr("a.py", "x\n", "y\n") + _sr("pkg:", "x = 1\n", ""))
    assert [e.path for e in edits] == ["a.py"] and "'pkg'" in errors[0]


def test_unclosed_diff_fence_does_not_swallow_the_next_block():
    answer = ("```diff\n--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,0 @@\n-x = 1\n"
              + _sr("b.py", "y\n", "z\n"))
    edits, errors = _parse(answer)
    assert [(e.path, e.search) for e in edits] == [("b.py", "y\n")]
    assert "no closing fence" in errors[0]


@pytest.mark.parametrize("lazy", ["    # ... existing code ...", "    // ... rest of the function",
                                  "    # rest of the code unchanged", "    # ..."])
def test_replace_that_elides_code_is_refused(tmp_path, lazy):
    answer = _sr("a.py", "def f():\n    return 1\n", f"def f():\n{lazy}\n    return 3\n")
    answer += f"a.py\n```python\ndef f():\n{lazy}\n```\n"  # the whole-file form too
    _res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path) == BASE and len(errors) == 2
    assert all("leaves code out" in e or "would delete that code" in e for e in errors)


def test_ellipsis_as_python_code_is_not_elision(tmp_path):
    _apply(tmp_path, {"a.py": BASE}, _sr("a.py", "def g():\n    return 2\n",
                                         "def g():\n    ...\n"))
    assert _read(tmp_path) == BASE.replace("    return 2\n", "    ...\n")


# -- issue 17: creations, placeholders, deletion-heavy whole files -------------------
def test_dev_null_diff_creates_and_is_refused_over_an_existing_file(tmp_path):
    answer = _diff("--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+A = 1\n+B = 2\n")
    _res, errors = _apply(tmp_path, {"a.py": BASE}, answer)
    assert _read(tmp_path, "new.py") == "A = 1\nB = 2\n" and not errors
    _res, errors = _apply(tmp_path, {"new.py": "other = 1\n"}, answer)
    assert _read(tmp_path, "new.py") == "other = 1\n"
    assert len(errors) == 1 and "exists" in errors[0] and "None" not in errors[0]


@pytest.mark.parametrize("body", ["[Contents of a.py go here]",
                                  "// Content of the file here"])
def test_whole_file_placeholder_is_refused(tmp_path, body):
    _res, errors = _apply(tmp_path, {"a.py": BASE}, f"a.py\n```python\n{body}\n```\n")
    assert _read(tmp_path) == BASE and errors
