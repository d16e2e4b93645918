"""The formats real models write (issues 16 and 17): multi-file git diffs, <source>
fences, ORIGINAL/UPDATED, paths in headings, bold or their own fence, bare file names,
and the blocks that must never be written (placeholders, pins, pseudo-diffs, elision)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.edits.parser import Edit, HunkNumbers, StreamingParser, clean_path, parse_edits


def _parse(text: str, exists=None) -> tuple[list[Edit], list[str], StreamingParser]:
    p = StreamingParser(exists)
    edits = p.feed(text) + p.finish()
    return edits, [e.message for e in p.errors], p


def _chunked(text: str, sizes: list[int], exists=None) -> tuple[list[Edit], list]:
    p = StreamingParser(exists)
    out: list[Edit] = []
    i = k = 0
    while i < len(text):
        n = sizes[k % len(sizes)]
        out += p.feed(text[i:i + n])
        i, k = i + n, k + 1
    out += p.finish()
    return out, p.errors


def _sr(path: str, old: str, new: str, start: str = "SEARCH", end: str = "REPLACE") -> str:
    return f"{path}\n```python\n<<<<<<< {start}\n{old}=======\n{new}>>>>>>> {end}\n```\n"


# -- multi-file unified diffs ------------------------------------------------------------
GIT_DIFF = """Here is the patch:

```diff
diff --git a/pkg/a.py b/pkg/a.py
index 83db48f..bf269f4 100644
--- a/pkg/a.py
+++ b/pkg/a.py
@@ -1,3 +1,3 @@
 import os
-A = 1
+A = 2
 B = 3
diff --git a/pkg/b.py b/pkg/b.py
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/pkg/b.py
@@ -0,0 +1,2 @@
+x = 1
+y = 2
diff --git a/c.py b/c.py
index 83db48f..bf269f4 100644
--- a/c.py
+++ b/c.py
@@ -10,3 +10,3 @@ def f():
     x = 0
-    return 1
+    return 2

diff --git a/d.py b/d.py
index 83db48f..bf269f4 100755
--- a/d.py
+++ b/d.py
@@ -4,2 +4,2 @@ class D:
-    a = 1
+    a = 3
     b = 2
```
"""


def test_multi_file_git_diff_headers_are_never_hunk_content():
    edits, errors, _ = _parse(GIT_DIFF)
    assert errors == []
    assert [(e.path, e.search, e.replace) for e in edits] == [
        ("pkg/a.py", "import os\nA = 1\nB = 3\n", "import os\nA = 2\nB = 3\n"),
        ("pkg/b.py", "", "x = 1\ny = 2\n"),
        ("c.py", "    x = 0\n    return 1\n", "    x = 0\n    return 2\n"),
        ("d.py", "    a = 1\n    b = 2\n", "    a = 3\n    b = 2\n"),
    ]
    for e in edits:
        assert "diff --git" not in e.search + e.replace and "index " not in e.search


def test_hunk_numbers_are_kept_and_creation_is_marked():
    edits, _, _ = _parse(GIT_DIFF)
    assert edits[0].numbers == HunkNumbers(1, 3, 1, 3) and edits[0].line == 1
    assert edits[1].creates and edits[1].numbers == HunkNumbers(0, 0, 1, 2)
    assert edits[2].numbers == HunkNumbers(10, 3, 10, 3)
    assert not edits[0].creates


def test_hunk_without_counts_drops_unprefixed_lines_before_the_next_file():
    text = ("```diff\n--- a/x.py\n+++ b/x.py\n@@ ... @@\n ctx\n-a\n+b\n\nNow y.py:\n"
            "--- a/y.py\n+++ b/y.py\n@@ ... @@\n-c\n+d\n```\n")
    edits, errors, _ = _parse(text)
    assert errors == []
    assert [(e.path, e.search, e.replace) for e in edits] == [
        ("x.py", "ctx\na\n", "ctx\nb\n"), ("y.py", "c\n", "d\n")]


def test_wrong_counts_do_not_cut_a_hunk_short():
    # @@ says one line each, but the hunk goes on: the lines after the count are kept
    text = "```diff\n--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n-a\n+b\n\n c\n-d\n+e\n```\n"
    edits, errors, _ = _parse(text)
    assert errors == []
    assert [(e.search, e.replace) for e in edits] == [("a\n\nc\nd\n", "b\n\nc\ne\n")]


def test_rename_copy_binary_and_deletion_are_refused_clearly():
    text = ("```diff\ndiff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\n"
            "rename to new.py\n--- a/old.py\n+++ b/new.py\n@@ -1 +1 @@\n-a\n+b\n"
            "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n"
            "+++ /dev/null\n@@ -1 +0,0 @@\n-z\n"
            "diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n"
            "diff --git a/k.py b/k.py\n--- a/k.py\n+++ b/k.py\n@@ -1 +1 @@\n-k\n+K\n```\n")
    edits, errors, _ = _parse(text)
    assert [(e.path, e.search) for e in edits] == [("k.py", "k\n")]
    assert len(errors) == 3
    assert "renames" in errors[0] and "old.py" in errors[0] and "new.py" in errors[0]
    assert "deletes gone.py" in errors[1]
    assert "binary" in errors[2]


def test_differing_paths_without_rename_headers_are_a_rename():
    text = "```diff\n--- a/x.py\n+++ b/y.py\n@@ -1 +1 @@\n-a\n+b\n```\n"
    edits, errors, _ = _parse(text)
    assert edits == [] and "renames x.py to y.py" in errors[0]
    same = "```diff\n--- x.py.orig\n+++ x.py\n@@ -1 +1 @@\n-a\n+b\n```\n"
    assert [e.path for e in parse_edits(same)] == ["x.py"]


def test_dev_null_creation_alone_and_numbers_off():
    edits, errors, _ = _parse("```diff\n--- /dev/null\n+++ new.py\n@@ -0,0 +1,5 @@\n+a\n+b\n```\n")
    assert errors == [] and edits == [Edit("new.py", "", "a\nb\n", "udiff")]
    assert edits[0].creates and edits[0].line is None and edits[0].ops == (("+", "a"), ("+", "b"))


def test_unfenced_git_diff_is_read_and_ends_at_prose():
    text = ("diff --git a/x.py b/x.py\nindex 1234567..89abcde 100644\n--- a/x.py\n+++ b/x.py\n"
            "@@ -1,2 +1,2 @@\n-a\n+b\n c\nThat is all.\n\nb.py\n```python\nB = 1\n```\n")
    edits, errors, _ = _parse(text)
    assert errors == []
    assert [(e.path, e.kind) for e in edits] == [("x.py", "udiff"), ("b.py", "whole_file")]


def test_pseudo_diff_in_a_diff_path_fence_is_refused_not_a_whole_file():
    edits, errors, _ = _parse("```diff:./Dockerfile\n- FROM python:3.8\n+ FROM python:3.11\n```\n")
    assert edits == [] and "no @@ hunk header" in errors[0] and "Dockerfile" in errors[0]


def test_diff_path_fence_names_the_file_for_headerless_hunks():
    text = "```diff:src/app.py\n@@ -1 +1 @@\n-a\n+b\n```\n"
    assert [(e.path, e.search) for e in parse_edits(text)] == [("src/app.py", "a\n")]


# -- formats real models write -----------------------------------------------------------
@pytest.mark.parametrize("answer", [
    "app.py\n<source>python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n</source>\n",
    "<source>python\napp.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n</source>\n",
    "app.py\n<source>\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n</source>\n",
    ("<source lang=\"python\">\napp.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n"
     ">>>>>>> REPLACE\n</source>\n"),
    _sr("app.py", "x = 1\n", "x = 2\n", "ORIGINAL", "UPDATED"),
    "app.py\n<<<<<<< ORIGINAL\nx = 1\n=======\nx = 2\n>>>>>>> UPDATED\n",
    _sr("### app.py", "x = 1\n", "x = 2\n"),
    _sr("#### `app.py`", "x = 1\n", "x = 2\n"),
    _sr("**app.py**", "x = 1\n", "x = 2\n"),
    _sr("### 1. `app.py`", "x = 1\n", "x = 2\n"),
    "```\napp.py\n```\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n",
    "```python:app.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n",
])
def test_real_model_formats(answer):
    edits, errors, _ = _parse(answer)
    assert errors == []
    assert [(e.path, e.search, e.replace) for e in edits] == [("app.py", "x = 1\n", "x = 2\n")]


def test_source_fence_whole_file_and_inner_backticks_are_content():
    text = "README.md\n<source>markdown\n# T\n```\ncode\n```\n</source>\n"
    assert parse_edits(text) == [Edit("README.md", "", "# T\n```\ncode\n```\n", "whole_file")]


def test_html_pre_inside_a_backtick_fence_is_content():
    text = "index.html\n```html\n<pre>\nx\n</pre>\n```\n"
    assert parse_edits(text) == [Edit("index.html", "", "<pre>\nx\n</pre>\n", "whole_file")]


@pytest.mark.parametrize("name", ["LICENSE-MIT", "Makefile", "Dockerfile", "Dockerfile.dev",
                                  "GNUmakefile", "CHANGELOG", "COPYING"])
def test_bare_well_known_names_are_paths(name):
    edits, errors, _ = _parse(_sr(name, "a\n", "b\n"))
    assert errors == [] and [e.path for e in edits] == [name]


def test_bare_name_is_a_path_only_when_the_tree_has_it():
    answer = _sr("main", "a\n", "b\n")
    edits, errors, _ = _parse(answer)
    assert edits == [] and "'main'" in errors[0]
    edits, errors, _ = _parse(answer, exists=lambda p: p == "main")
    assert errors == [] and [e.path for e in edits] == ["main"]


# -- paths -------------------------------------------------------------------------------
@pytest.mark.parametrize("line, path", [
    ("__init__.py", "__init__.py"), ("**__init__.py**", "__init__.py"),
    ("`pkg/__init__.py`", "pkg/__init__.py"), ("_private.py", "_private.py"),
    ("__main__.py:", "__main__.py"), ("### __init__.py", "__init__.py"),
    ("__app.py__", "app.py"), ("_app.py_", "app.py"), ("**`src/_x.py`**:", "src/_x.py"),
    ("app/[id]/page.tsx", "app/[id]/page.tsx"),
    ("src/pages/[...slug].astro", "src/pages/[...slug].astro"),
    ("pages/blog/[[...slug]].tsx", "pages/blog/[[...slug]].tsx"),
    ("LICENSE-MIT", "LICENSE-MIT"), ("### 2. `a/b.py`", "a/b.py"),
    ("README.md：", "README.md"), ("文档/说明.md", "文档/说明.md"),
])
def test_paths_keep_underscores_and_real_routes(line, path):
    assert clean_path(line) == path


@pytest.mark.parametrize("line", [
    "pytest==7.4.3", "requests>=2.31", "numpy~=1.26.0", "black!=23.1", "pkg[extra]>=1.0",
    "https://example.com/a.py", "http://x.org/setup.py", "www.python.org",
    "messages/[locale]/index.json", "path/to/file.py", "src/<module>.py", "{name}.py",
    "your_file.py", "src/.../app.py", "main", "Here is app.py", "python",
    "为了编写README.md文件，以下是一个示例README.md的内容：",  # a sentence with no spaces
])
def test_pins_urls_placeholders_and_prose_are_never_paths(line):
    assert clean_path(line) is None


def test_placeholder_path_accepted_when_the_tree_has_it():
    assert clean_path("messages/[locale]/index.json",
                      exists=lambda p: p == "messages/[locale]/index.json") is not None
    assert clean_path("{{cookiecutter.slug}}/setup.py",
                      exists=lambda p: p.startswith("{{")) == "{{cookiecutter.slug}}/setup.py"


def test_pin_line_before_a_fence_creates_no_file():
    edits, _, _ = _parse("Pin it:\n\npytest==7.4.3\n```\npytest==7.4.3\n```\n")
    assert edits == []


# -- whole-file blocks that are not the file ---------------------------------------------
@pytest.mark.parametrize("body", [
    "[Contents of App.tsx go here]", "// Content of the file here", "# ... rest of file ...",
    "...", "<your code here>", "# (existing code unchanged)", "/* full implementation */",
    "// ... existing code ...\n// ... more code ...", "App.tsx", "`App.tsx`",
    "- import a\n+ import b", "@@ -1,2 +1,2 @@\n-a\n+b",
])
def test_placeholder_own_path_and_pseudo_diff_whole_files_are_held(body):
    text = f"Change it:\n\nApp.tsx\n```tsx\n{body}\n```\n"
    edits, errors, p = _parse(text)
    assert edits == []
    if body.strip("`") == "App.tsx":
        return  # the path in a fence of its own: nothing to hold, no edit
    assert len(errors) == 1 and "App.tsx" in errors[0] and "not applied" in errors[0]
    assert [h.path for h in p.held] == ["App.tsx"] and p.held[0].refused


@pytest.mark.parametrize("body", [
    "# package marker\n", "[tool.ruff]\nline-length = 100\n", "[]\n", "- a\n- b\n",
    '["a", "b"]\n', "...\n" * 0 + "def f():\n    ...\n", "x = 1  # the rest of the file is data\n",
])
def test_real_small_files_are_not_placeholders(body):
    name = {"[]\n": "a.json", '["a", "b"]\n': "b.json", "- a\n- b\n": "c.yaml",
            "[tool.ruff]\nline-length = 100\n": "pyproject.toml"}.get(body, "pkg/mod.py")
    edits, errors, _ = _parse(f"{name}\n```\n{body}```\n")
    assert errors == [] and edits == [Edit(name, "", body, "whole_file")]


def test_shell_fence_under_a_path_line_is_a_command_not_the_file():
    edits, errors, _ = _parse("tests/test_app.py\n```bash\npytest -q tests/test_app.py\n```\n")
    assert edits == [] and errors == []
    edits, _, _ = _parse("run.sh\n```bash\necho hi\n```\n")
    assert [e.path for e in edits] == ["run.sh"]


def test_fence_language_that_cannot_be_the_file_is_held():
    edits, errors, p = _parse("app.py\n```json\n{\"a\": 1}\n```\n")
    assert edits == [] and "```json" in errors[0] and p.held


def test_bare_ellipsis_in_replace_is_elision_but_python_body_is_code():
    lazy = _sr("a.py", "def f():\n    a()\n    b()\n", "def f():\n    ...\n    c()\n")
    lazy_top = _sr("a.py", "x = 1\ny = 2\n", "...\ny = 3\n")
    stub = _sr("a.py", "def g():\n    return 2\n", "def g():\n    ...\n")
    for text in (lazy_top,):
        edits, errors, p = _parse(text)
        assert edits == [] and "'...' line" in errors[0] and p.held
    edits, errors, _ = _parse(stub)
    assert errors == [] and len(edits) == 1
    # `...` right after a line ending in ':' is a body, as in a stub
    edits, errors, _ = _parse(lazy)
    assert errors == [] and len(edits) == 1
    edits, errors, _ = _parse("notes.md\n```\n# T\n\n...\n```\n")
    assert errors == [] and len(edits) == 1  # prose files may say '...'


def test_bare_ellipsis_added_by_a_diff_hunk_is_held():
    text = "```diff\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+...\n```\n"
    edits, errors, _ = _parse(text)
    assert edits == [] and "'...' line" in errors[0]


# -- BOM, prose --------------------------------------------------------------------------
def test_a_bom_anywhere_in_the_answer_is_never_content():
    text = _sr("a.py", "\ufeffx = 1\n", "\ufeffx = 2\n") + "b.py\n```python\n\ufeffB = 1\n```\n"
    edits, errors, _ = _parse("\ufeff" + text)
    assert errors == []
    assert all("\ufeff" not in e.search + e.replace + e.path for e in edits)
    assert [e.replace for e in edits] == ["x = 2\n", "B = 1\n"]


def test_prose_around_edits_is_never_an_edit():
    text = ("I changed `app.py` and `util.py`.\n\nRun the tests:\n```bash\npytest\n```\n"
            "Here is the current app.py for reference:\n```python\nX = 1\n```\n"
            "- app.py: updated\n- util.py: unchanged\n\n" + _sr("app.py", "X = 1\n", "X = 2\n")
            + "\nThat is all. Let me know!\n")
    edits, errors, _ = _parse(text)
    assert errors == []
    assert [(e.path, e.kind) for e in edits] == [("app.py", "search_replace")]


# -- chunking invariance over the new formats ---------------------------------------------
_FRAGMENTS = [
    GIT_DIFF,
    _sr("app.py", "x = 1\n", "x = 2\n", "ORIGINAL", "UPDATED"),
    "app.py\n<source>python\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n</source>\n",
    "App.tsx\n```tsx\n[Contents of App.tsx go here]\n```\n",
    "```diff:./Dockerfile\n- FROM a\n+ FROM b\n```\n",
    "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\nDone.\n",
    "```\nsrc/__init__.py\n```\n```python\n<<<<<<< SEARCH\ni\n=======\nj\n>>>>>>> REPLACE\n```\n",
    "pytest==7.4.3\n```\npytest==7.4.3\n```\n",
    "\ufeffnotes.txt\n```\nhello\n```\n",
    "a.py\n<<<<<<< SEARCH\nx\n=======\n...\n>>>>>>> REPLACE\n",
    "Some prose with `a.py` in it.\n",
]


@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=6),
       st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=8),
       st.booleans())
@settings(max_examples=120, deadline=None)
def test_any_chunking_of_real_formats_gives_the_same_edits_and_errors(parts, sizes, crlf):
    text = "\n".join(parts)
    if crlf:
        text = text.replace("\n", "\r\n")
    whole = StreamingParser()
    expected = whole.feed(text) + whole.finish()
    got, errors = _chunked(text, sizes)
    assert got == expected and errors == whole.errors
    one, _ = _chunked(text, [1])
    assert one == expected
    for e in expected:
        assert "\ufeff" not in e.replace and not e.path.startswith(("http", "pytest=="))
        assert "diff --git" not in e.search + e.replace


# -- property: generated multi-file git diffs parse back to their hunks ---------------------
_code = st.text(alphabet="abcdefghij =()_:", min_size=1, max_size=12).filter(
    lambda s: s.strip() and not s.startswith((" ", "-", "+", "@", "\\")))
_name = st.from_regex(r"(_{0,2}[a-z]{1,6}/)?_{0,2}[a-z]{1,6}(__)?\.(py|txt|toml)", fullmatch=True)


@st.composite
def git_diffs(draw):
    files = draw(st.lists(_name, min_size=1, max_size=4, unique=True))
    out, expected = ["```diff"], []
    for path in files:
        out += [f"diff --git a/{path} b/{path}", "index 1234567..89abcde 100644",
                f"--- a/{path}", f"+++ b/{path}"]
        for _ in range(draw(st.integers(1, 3))):
            ctx_before = draw(st.lists(_code, max_size=3))
            removed = draw(st.lists(_code, max_size=3))
            added = draw(st.lists(_code, max_size=3))
            ctx_after = draw(st.lists(_code, max_size=3))
            if removed == added:
                added = added + ["zz"]
            start = draw(st.integers(1, 500))
            # the counts may be wrong, as models write them (the start too: any number)
            old_n = max(0, len(ctx_before) + len(removed) + len(ctx_after)
                        + draw(st.sampled_from([0, 0, 0, -1, 1, -3, 4])))
            new_n = max(0, len(ctx_before) + len(added) + len(ctx_after)
                        + draw(st.sampled_from([0, 0, 0, -1, 1, -3, 4])))
            out.append(f"@@ -{start},{old_n} +{start},{new_n} @@ def f():")
            out += [" " + c for c in ctx_before] + ["-" + r for r in removed] + \
                   ["+" + a for a in added] + [" " + c for c in ctx_after]
            expected.append((path, "".join(x + "\n" for x in ctx_before + removed + ctx_after),
                             "".join(x + "\n" for x in ctx_before + added + ctx_after),
                             HunkNumbers(start, old_n, start, new_n)))
        if draw(st.booleans()):
            out.append("")  # a blank separator line between files
    out.append("```")
    return "\n".join(out) + "\n", expected


@given(git_diffs(), st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=6))
@settings(max_examples=80, deadline=None)
def test_generated_multi_file_git_diffs_round_trip(diff, sizes):
    text, expected = diff
    got, errors = _chunked(text, sizes)
    assert errors == []
    assert [(e.path, e.search, e.replace, e.numbers) for e in got] == expected
    for e in got:  # the ops say which lines are context, exactly
        assert e.ops is not None
        assert "".join(t + "\n" for op, t in e.ops if op in "=-") == e.search
        assert "".join(t + "\n" for op, t in e.ops if op in "=+") == e.replace


# -- seen in real answers (bench/real_answers) -------------------------------------------
def test_a_second_divider_right_before_replace_is_a_slip():
    text = "a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n=======\n>>>>>>> REPLACE\n```\n"
    edits, errors, _ = _parse(text)
    assert errors == [] and [(e.search, e.replace) for e in edits] == [("x = 1\n", "x = 2\n")]
    edits, errors, _ = _parse(text.replace("=======\n>>>", "=======\n\n>>>"))
    assert errors == [] and [(e.search, e.replace) for e in edits] == [("x = 1\n", "x = 2\n")]
    # anywhere else it still makes the block malformed
    text = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n=======\ny\n>>>>>>> REPLACE\n"
    edits, errors, _ = _parse(text)
    assert edits == [] and "a second =======" in errors[0]


@pytest.mark.parametrize("line, path", [
    ("app/routes/($lang).\\_home.tsx", "app/routes/($lang)._home.tsx"),
    ("`src/\\_\\_init\\_\\_.py`", "src/__init__.py"),
    ("app\\routes\\home.tsx", "app/routes/home.tsx"),
    ("pkg\\__init__.py", "pkg/__init__.py"),
])
def test_markdown_escapes_and_windows_separators(line, path):
    assert clean_path(line) == path


def test_backslash_reading_the_tree_has_wins():
    real = "app/routes/($lang).user_.login.tsx"
    assert clean_path("app\\routes\\($lang).user\\_.login.tsx",
                      exists=lambda p: p == real) == real


def test_whole_file_with_a_divider_line_is_refused_with_a_reason_unless_prose():
    # seen in the commit corpus: a test file whose string holds a setext heading was
    # silently dropped (exit 0, file left unchanged)
    text = 'tests/t.py\n````python\nMD = """\nTitle\n=======\n"""\n````\n'
    edits, errors, _ = _parse(text)
    assert edits == [] and "has a ======= line" in errors[0]
    doc = "docs/index.rst\n```rst\nTitle\n=======\n\nText.\n```\n"
    edits, errors, _ = _parse(doc)
    assert errors == [] and edits == [Edit("docs/index.rst", "", "Title\n=======\n\nText.\n",
                                           "whole_file")]


def test_an_exists_that_refuses_to_look_means_not_in_the_tree(tmp_path):
    from core.workspace.files import Workspace
    (tmp_path / "main").write_text("a\n")
    ws = Workspace(tmp_path)
    edits, _errors, _ = _parse(_sr("main", "a\n", "b\n") + _sr("../x.py", "a\n", "b\n"),
                              exists=ws.exists)
    assert [e.path for e in edits] == ["main", "../x.py"]  # the workspace refuses the 2nd


def test_stand_in_comments_are_held_comment_files_are_not():
    # real answers: "# Class definition here" inside a whole file that would cut a
    # 200-line file to 3
    text = "### shop.rb\n```ruby\nclass Shop\n  # Class definition here\nend\n```\n"
    edits, errors, p = _parse(text)
    assert edits == [] and "Class definition here" in errors[0] and p.held
    sr = _sr("a.py", "def f():\n    return 1\n", "def f():\n    # implementation unchanged\n")
    edits, errors, _ = _parse(sr)
    assert edits == [] and "implementation unchanged" in errors[0]
    # a file of comments is a file (a package's __init__.py); that it would replace a
    # file full of code is the apply side's deletion-heavy check, which knows the file
    note = "pkg/__init__.py\n<source>\n# Package initializer.\n</source>\n"
    assert len(parse_edits(note, exists=lambda p: p == "pkg/__init__.py")) == 1
    ok = _sr("a.py", "x = 1\n", "# Add your API key here\nKEY = ''\n")
    assert len(parse_edits(ok)) == 1  # an instruction comment is code, not a stand-in


@pytest.mark.parametrize("open_tag, close_tag", [
    ("<think>", "</think>"), ("<thinking>", "</thinking>"), ("<reasoning>", "</reasoning>"),
    ("<thinking-content-7bbeb8e1441453ad>", "</thinking-content-7bbeb8e1441453ad>"),
])
def test_reasoning_is_never_read_for_edits(open_tag, close_tag):
    draft = "notes.md\n```\n# Draft\n```\n" + _sr("a.py", "x\n", "y\n")
    text = f"{open_tag}\nThe file should become:\n\n{draft}{close_tag}\n\nnotes.md\n```\n# Final\n```\n"
    edits, errors, _ = _parse(text)
    assert errors == [] and [(e.path, e.replace) for e in edits] == [("notes.md", "# Final\n")]
    same_line = f"{open_tag}plan: edit a.py{close_tag}\na.py\n```\nX = 1\n```\n"
    assert [e.path for e in parse_edits(same_line)] == ["a.py"]
    # an answer cut off while still reasoning has no edits
    assert parse_edits(f"{open_tag}\n{draft}") == []


def test_pending_follows_new_formats_and_not_reasoning():
    p = StreamingParser()
    p.feed("app.py\n<source>python\n<<<<<<< ORIGINAL\nx = 1\n=======\nx = ")
    assert p.pending is not None and p.pending.path == "app.py" and p.pending.replace == "x = "
    q = StreamingParser()
    q.feed(GIT_DIFF.split("diff --git a/c.py")[0])  # mid-way through the second file
    assert q.pending is not None and q.pending.path == "pkg/b.py"
    assert q.pending.replace == "x = 1\ny = 2\n"
    r = StreamingParser()
    r.feed("<think>\na.py\n<<<<<<< SEARCH\nx\n")
    assert r.pending is None  # a draft in reasoning is not shown as an edit


def test_path_line_in_an_unclosed_fence_before_the_block_fence_is_no_error():
    # some models open a fence, write the path, and open the block's fence at once
    text = ("**web/package.json**\n```python\nweb/package.json\n```python\n<<<<<<< SEARCH\n"
            '"port": 3000\n=======\n"port": 4000\n>>>>>>> REPLACE\n```\n')
    edits, errors, _ = _parse(text)
    assert errors == [] and [e.path for e in edits] == ["web/package.json"]


def test_no_newline_at_end_of_file_is_kept_per_side():
    both = ("```diff\n--- a/t.py\n+++ b/t.py\n@@ -3,1 +3,2 @@\n-x\n\\ No newline at end of file\n"
            "+x\n+y\n\\ No newline at end of file\n```\n")
    (e,) = parse_edits(both)
    assert (e.search, e.replace, e.old_no_eol, e.new_no_eol) == ("x\n", "x\ny\n", True, True)
    adds_eol = ("```diff\n--- a/t.py\n+++ b/t.py\n@@ -1,2 +1,2 @@\n a\n-x\n"
                "\\ No newline at end of file\n+x\n```\n")
    (e,) = parse_edits(adds_eol)  # only the final newline changes: still an edit
    assert e.old_no_eol and not e.new_no_eol
    new = "```diff\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n```\n"
    (e,) = parse_edits(new)
    assert e.creates and e.new_no_eol and e.replace == "x\n"


def test_default_path_names_only_a_search_block_without_any_path():
    text = "Change it:\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n"
    assert parse_edits(text) == []
    p = StreamingParser(default_path="app.py")
    edits = p.feed(text + "```python\nprint('example')\n```\n") + p.finish()
    assert [(e.path, e.kind) for e in edits] == [("app.py", "search_replace")]  # no whole file
    p = StreamingParser(default_path="app.py")  # a named path still wins
    assert [e.path for e in p.feed(_sr("b.py", "a\n", "b\n")) + p.finish()] == ["b.py"]
    p = StreamingParser(default_path="app.py")  # and a lone word is still refused
    assert p.feed(_sr("pkg", "a\n", "b\n")) + p.finish() == [] and p.errors


def test_header_pair_of_a_bare_name_after_a_hunk_without_counts():
    text = "```diff\n--- x.py\n+++ x.py\n@@ ... @@\n-a\n+b\n--- main\n+++ main\n@@ ... @@\n-c\n+d\n```\n"
    assert [(e.path, e.search, e.replace) for e in parse_edits(text)] == [
        ("x.py", "a\n", "b\n"), ("main", "c\n", "d\n")]
    sql = "```diff\n--- q.sql\n+++ q.sql\n@@ ... @@\n a\n--- old note\n+++ new note\n```\n"
    assert [(e.search, e.replace) for e in parse_edits(sql)] == [
        ("a\n-- old note\n", "a\n++ new note\n")]


def test_a_shorter_fence_inside_a_longer_one_is_content_never_a_new_file():
    # found by the own-history commit corpus: a file whose code holds an answer
    text = 't.py\n````python\nS = """\nnew.py\n```python\nx = 1\n```\n"""\n````\n'
    edits, errors, _ = _parse(text)
    assert errors == [] and [e.path for e in edits] == ["t.py"]
    assert "new.py\n```python\nx = 1\n```\n" in edits[0].replace


def test_a_git_diff_in_a_fence_without_language_is_read_as_a_diff_not_a_whole_file():
    text = "app.py\n```\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a\n+b\n```\n"
    edits, errors, _ = _parse(text)
    assert errors == [] and [(e.path, e.kind, e.search, e.replace) for e in edits] == [
        ("app.py", "udiff", "a\n", "b\n")]
    front_matter = "notes.md\n```\n---\ntitle: x\n---\n```\n"  # YAML/markdown, not a diff
    assert [e.kind for e in parse_edits(front_matter)] == ["whole_file"]
