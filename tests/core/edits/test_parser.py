"""The streaming parser: every format, the errors, pending, and chunking invariance."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.edits.parser import Edit, StreamingParser, _decorated_path, clean_path, parse_edits
from core.edits.placeholders import bare_elision, stand_in_comment

SR = """Sure, two changes.

src/app.py
```python
<<<<<<< SEARCH
def f():
    return 1
=======
def f():
    return 2
>>>>>>> REPLACE
```

```python
src/util.py
<<<<<<< SEARCH
x = 1
=======
>>>>>>> REPLACE
```
"""

UDIFF = """```diff
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,3 +1,3 @@
 import os
-A = 1
+A = 2
 B = 3
@@ -10,2 +10,3 @@
 def g():
+    pass
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1,2 @@
+print("new")
+print("file")
```
"""

WHOLE = """Create it:

**tools/new_tool.py**
```python
def main():
    print("hi")
```
That's all.
"""


def _chunked(text: str, sizes: list[int]) -> tuple[list[Edit], list]:
    p = StreamingParser()
    out: list[Edit] = []
    i = 0
    k = 0
    while i < len(text):
        n = sizes[k % len(sizes)] if sizes else 1
        out += p.feed(text[i:i + n])
        i += n
        k += 1
    out += p.finish()
    return out, p.errors


def test_search_replace_path_before_and_inside_fence():
    edits = parse_edits(SR)
    assert edits == [
        Edit("src/app.py", "def f():\n    return 1\n", "def f():\n    return 2\n",
             "search_replace"),
        Edit("src/util.py", "x = 1\n", "", "search_replace"),
    ]


def test_unfenced_blocks_reuse_previous_path():
    text = ("a.py\n<<<<<<< SEARCH\n1\n=======\n2\n>>>>>>> REPLACE\n"
            "<<<<<<< SEARCH\n3\n=======\n4\n>>>>>>> REPLACE\n")
    assert [(e.path, e.search, e.replace) for e in parse_edits(text)] == [
        ("a.py", "1\n", "2\n"), ("a.py", "3\n", "4\n")]


def test_unified_diff_hunks_and_new_file():
    edits = parse_edits(UDIFF)
    assert edits == [
        Edit("pkg/mod.py", "import os\nA = 1\nB = 3\n", "import os\nA = 2\nB = 3\n", "udiff"),
        Edit("pkg/mod.py", "def g():\n", "def g():\n    pass\n", "udiff"),
        Edit("pkg/new.py", "", 'print("new")\nprint("file")\n', "udiff"),
    ]


def test_whole_file_block_after_decorated_path():
    assert parse_edits(WHOLE) == [
        Edit("tools/new_tool.py", "", 'def main():\n    print("hi")\n', "whole_file")]


def test_plain_code_fence_without_path_is_not_an_edit():
    assert parse_edits("Example:\n```python\nprint(1)\n```\n") == []


def test_path_in_fence_info_string():
    edits = parse_edits("```python lib/x.py\nX = 1\n```\n")
    assert edits == [Edit("lib/x.py", "", "X = 1\n", "whole_file")]


def test_crlf_answer_same_as_lf():
    assert parse_edits(SR.replace("\n", "\r\n")) == parse_edits(SR)


def test_clean_path():
    assert clean_path("**src/a.py**") == "src/a.py"
    assert clean_path("`a.py`:") == "a.py"
    assert clean_path("# File: ./pkg/b.toml") == "pkg/b.toml"
    assert clean_path("Makefile") == "Makefile"
    assert clean_path("python") is None
    assert clean_path("Here is the change.") is None
    assert clean_path("x = 1") is None


def test_unterminated_block_is_an_error_not_an_edit():
    p = StreamingParser()
    assert p.feed("a.py\n<<<<<<< SEARCH\nold\n=======\nnew\n") == []
    assert p.finish() == []
    assert len(p.errors) == 1
    assert "a.py" in p.errors[0].message and "REPLACE" in p.errors[0].message


def test_search_without_path_and_stray_replace_are_errors():
    p = StreamingParser()
    p.feed("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n>>>>>>> REPLACE\n")
    assert p.finish() == []
    messages = " ".join(e.message for e in p.errors)
    assert "without a file path" in messages
    assert "without a <<<<<<< SEARCH" in messages


def test_unclosed_whole_file_fence_is_refused():
    p = StreamingParser()
    p.feed("new.py\n```python\nprint(1)\n")
    assert p.finish() == []
    assert "no closing fence" in p.errors[0].message


def test_pending_follows_the_block_being_written():
    p = StreamingParser()
    p.feed("a.py\n```python\n<<<<<<< SEARCH\nold li")
    pend = p.pending
    assert pend is not None and pend.path == "a.py" and pend.stage == "search"
    assert pend.search == "old li"
    p.feed("ne\n=======\nne")
    pend = p.pending
    assert pend.stage == "replace" and pend.search == "old line\n" and pend.replace == "ne"
    done = p.feed("w\n>>>>>>> REPLACE\n")
    assert done == [Edit("a.py", "old line\n", "new\n", "search_replace")]
    p.feed("```\n")
    assert p.pending is None


def test_pending_whole_file_and_diff():
    p = StreamingParser()
    p.feed("b.py\n```python\n")
    assert p.pending.stage == "path" and p.pending.kind == "whole_file"
    p.feed("print(1)\n")
    assert p.pending.replace == "print(1)\n"
    q = StreamingParser()
    q.feed("```diff\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert q.pending.kind == "udiff" and q.pending.search == "a\n" and q.pending.replace == "b\n"


@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=20))
@settings(max_examples=150, deadline=None)
def test_any_chunking_gives_the_same_edits(sizes):
    for text in (SR, UDIFF, WHOLE, SR + UDIFF + WHOLE):
        whole = StreamingParser()
        expected = whole.feed(text) + whole.finish()
        got, errors = _chunked(text, sizes)
        assert got == expected
        assert errors == whole.errors


# -- generated answers: what we write is what we parse back, however it is chunked ------
# (no U+FEFF: a byte-order mark at the start of a line is dropped by design)
_line = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc"),
                                       blacklist_characters="\n\r`<>=\x85\u2028\u2029\ufeff"),
                max_size=30)
# a line that stands in for code ("...", "# code here") is refused by design, not content
# and a path line (`a.py:`, `**a.py**`) ending a whole file reads as the next block's
_line = _line.filter(lambda s: bare_elision("x.py", [], [s]) is None
                     and stand_in_comment([], [s]) is None and not _decorated_path(s))
_lines = st.lists(_line, max_size=6)
_path = st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8})?\.(py|txt|md)", fullmatch=True)


@st.composite
def answers(draw):
    blocks = draw(st.lists(st.tuples(_path, _lines, _lines, st.sampled_from(
        ["fenced", "bare", "inside", "whole"])), min_size=1, max_size=5))
    parts, expected = [], []
    for path, old, new, style in blocks:
        body_old = "".join(s + "\n" for s in old)
        body_new = "".join(s + "\n" for s in new)
        prose = draw(st.sampled_from(["", "Some words here.\n\n", "Next:\n"]))
        if style == "whole":
            if not new or not body_new.strip():
                continue
            parts.append(f"{prose}{path}\n```\n{body_new}```\n")
            expected.append(Edit(path, "", body_new, "whole_file"))
            continue
        block = f"<<<<<<< SEARCH\n{body_old}=======\n{body_new}>>>>>>> REPLACE\n"
        if style == "fenced":
            parts.append(f"{prose}{path}\n```python\n{block}```\n")
        elif style == "inside":
            parts.append(f"{prose}```python\n{path}\n{block}```\n")
        else:
            parts.append(f"{prose}{path}\n{block}")
        expected.append(Edit(path, body_old, body_new, "search_replace"))
    return "".join(parts), expected


@given(answers(), st.lists(st.integers(min_value=1, max_value=25), min_size=1, max_size=10))
@settings(max_examples=120, deadline=None)
def test_generated_answers_round_trip_under_any_chunking(answer, sizes):
    text, expected = answer
    got, errors = _chunked(text, sizes)
    assert errors == []
    assert got == expected
    one_char, _ = _chunked(text, [1])
    assert one_char == expected


def test_path_after_language_and_colon_in_fence_info():
    assert parse_edits("```python:lib/y.py\nY = 1\n```\n") == [
        Edit("lib/y.py", "", "Y = 1\n", "whole_file")]


_soup = st.lists(st.sampled_from([
    "a.py", "**b/c.py**", "```", "```python", "```diff", "<<<<<<< SEARCH", "=======",
    ">>>>>>> REPLACE", "--- a/x.py", "+++ b/x.py", "--- /dev/null", "@@ -1 +1 @@", "-old",
    "+new", " ctx", "", "text", "x = 1", "\r",
    # formats real models write (issue 16/17)
    "<source>python", "</source>", "<<<<<<< ORIGINAL", ">>>>>>> UPDATED",
    "diff --git a/x.py b/y.py", "index 1234567..89abcde 100644", "@@ -1,2 +1,2 @@",
    "new file mode 100644", "deleted file mode 100644", "rename from x.py", "\ufeffz.py",
    "```diff:x.py", "[Contents of x.py go here]", "...", "__init__.py", "pytest==7.4.3",
]), max_size=40)


@given(_soup, st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_marker_soup_never_crashes_and_is_chunking_invariant(lines, sizes):
    text = "\n".join(lines)
    whole = StreamingParser()
    expected = whole.feed(text) + whole.finish()
    got, errors = _chunked(text, sizes)
    assert got == expected and errors == whole.errors
    for e in expected:
        assert e.path and e.kind in ("search_replace", "udiff", "whole_file")


def test_path_named_in_backticks_in_prose_names_a_search_block_only():
    text = ("In `src/app.py`, change the constant:\n```python\n<<<<<<< SEARCH\nX = 1\n"
            "=======\nX = 2\n>>>>>>> REPLACE\n```\n"
            "And `src/app.py` looks like this now:\n```python\nX = 2\n```\n")
    assert parse_edits(text) == [Edit("src/app.py", "X = 1\n", "X = 2\n", "search_replace")]


def test_a_path_line_and_fence_after_a_stray_fence_line_name_the_next_block():
    """A ```` line whose opening fence was lost (found by test_fuzz_answers): the next file's
    path line and ```python fence sit inside that stray fence. The block is that file's; it
    was taken as the previous block's file (b.py's new lines written into pkg/c.py)."""
    text = ("pkg/c.py\n<<<<<<< SEARCH\n=======\nx = 1\n>>>>>>> REPLACE\n````\n"
            "b.py\n```python\n<<<<<<< SEARCH\n=======\nB = 2\n>>>>>>> REPLACE\n```\n")
    parser = StreamingParser()
    edits = parser.feed(text) + parser.finish()
    assert [(e.path, e.search, e.replace) for e in edits] == [
        ("pkg/c.py", "", "x = 1\n"), ("b.py", "", "B = 2\n")]
