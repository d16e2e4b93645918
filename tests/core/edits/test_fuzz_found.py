"""Answers the fuzz tests (test_fuzz_answers, soak runs with SPARK_PROPERTY_SCALE) found
written wrong, minimised, each with the outcome it must have: exactly the edits it holds,
or a refusal whose error names the block's file.  Each failed before its fix."""

from __future__ import annotations

import pytest

from core.edits.parser import StreamingParser

F = "```"

CASES = [
    pytest.param(
        # a SEARCH/REPLACE block in a ```diff fence (models label them so) after a path
        # line: it was taken as the previous block's file (b.py's lines into a.py)
        f"a.py\n{F}python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n{F}\n\n"
        f"b.py\n{F}diff\n<<<<<<< SEARCH\ny = 1\n=======\ny = 2\n>>>>>>> REPLACE\n{F}\n",
        [("a.py", "x = 1\n", "x = 2\n"), ("b.py", "y = 1\n", "y = 2\n")], set(),
        id="sr-block-in-a-diff-fence-after-a-path-line"),
    pytest.param(
        f"a.py\n{F}python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n{F}\n\n"
        f"{F}diff b.py\n<<<<<<< SEARCH\ny = 1\n=======\ny = 2\n>>>>>>> REPLACE\n{F}\n",
        [("a.py", "x = 1\n", "x = 2\n"), ("b.py", "y = 1\n", "y = 2\n")], set(),
        id="sr-block-in-a-diff-fence-with-the-path-in-its-info"),
    pytest.param(
        # a path line, then ```python, inside a fence a stray ```` opened, after a block
        # in that fence (eeabc3f fixed it only before the fence's first block): b.py's
        # lines were taken as a.py's
        f"````\na.py\n<<<<<<< SEARCH\n=======\npass\n>>>>>>> REPLACE\n"
        f"b.py\n{F}python\n<<<<<<< SEARCH\n=======\nz = 1\n>>>>>>> REPLACE\n{F}\n",
        [("a.py", "", "pass\n"), ("b.py", "", "z = 1\n")], set(),
        id="path-and-fence-after-a-block-inside-a-stray-fence"),
    pytest.param(
        f"````\na.py\n<<<<<<< SEARCH\n=======\npass\n>>>>>>> REPLACE\n"
        f"Then `b.py`:\n{F}python\n<<<<<<< SEARCH\n=======\nz = 1\n>>>>>>> REPLACE\n{F}\n",
        [("a.py", "", "pass\n"), ("b.py", "", "z = 1\n")], set(),
        id="prose-naming-a-file-then-fence-inside-a-stray-fence"),
    pytest.param(
        # ... and a lone word there is refused, as outside a fence (seed 11 of the soak:
        # the block went into out_link/o.py)
        f"````\na.py\n<<<<<<< SEARCH\n=======\npass\n>>>>>>> REPLACE\n"
        f"pkg:\n{F}python\n<<<<<<< SEARCH\n=======\nz = 1\n>>>>>>> REPLACE\n{F}\n",
        [("a.py", "", "pass\n")], {None},
        id="lone-word-then-fence-after-a-block-inside-a-stray-fence"),
    pytest.param(
        # the ```` closing a SEARCH/REPLACE block's ````diff fence opened a fence that
        # swallowed the rest of the answer: the diff creating new.py was dropped silently
        "a.py\n````diff\n<<<<<<< SEARCH\nx = 1\n=======\n>>>>>>> REPLACE\n````\n"
        "~~~diff\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,1 @@\n+print(total)\n~~~\n",
        [("a.py", "x = 1\n", ""), ("new.py", "", "print(total)\n")], set(),
        id="diff-after-a-sr-block-in-a-diff-fence"),
    pytest.param(
        f"{F}diff\nb.py\n<<<<<<< SEARCH\ny\n=======\nz\n>>>>>>> REPLACE\n{F}\n"
        f"c.py\n{F}\nwhole\n{F}\n",
        [("b.py", "y\n", "z\n"), ("c.py", "", "whole\n")], set(),
        id="whole-file-after-a-sr-block-in-a-diff-fence"),
    pytest.param(
        # inside a stray fence, a longer fence line naming the file in its info string
        # could not open a fence: the block went to the previous block's file
        "new.py\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n"
        f"{F}python\n`````diff:b.py\n<<<<<<< SEARCH\n=======\ny\n>>>>>>> REPLACE\n`````\n",
        [("new.py", "", "x\n"), ("b.py", "", "y\n")], set(),
        id="path-in-the-info-of-a-fence-inside-a-stray-fence"),
    pytest.param(
        # ... and a ~~~~~ line (the other family: content there) after a path line
        "new.py\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n"
        f"{F}\n1. `pkg/new2.py`\n~~~~~\n<<<<<<< SEARCH\n=======\ny\n>>>>>>> REPLACE\n~~~~~\n",
        [("new.py", "", "x\n"), ("pkg/new2.py", "", "y\n")], set(),
        id="path-then-tilde-fence-inside-a-stray-backtick-fence"),
    pytest.param(
        # a block after one refused for its lone word, with no path of its own: it went
        # to the file of the block before that (a.py), not the lone word's file
        "a.py\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\npkg:\n<<<<<<< SEARCH\n"
        "=======\ny\n>>>>>>> REPLACE\n<<<<<<< SEARCH\n=======\nz\n>>>>>>> REPLACE\n",
        [("a.py", "", "x\n")], {None},
        id="pathless-block-after-a-lone-word-block"),
    pytest.param(
        # ... and after a block that lost its SEARCH line (b.py's)
        f"a.py\n{F}\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n{F}\nb.py\n{F}\n=======\n"
        f"y\n>>>>>>> REPLACE\n{F}\n{F}\n<<<<<<< SEARCH\n=======\nz\n>>>>>>> REPLACE\n{F}\n",
        [("a.py", "", "x\n")], {"b.py", None},
        id="pathless-block-after-a-block-that-lost-its-search-line"),
    pytest.param(
        # a markdown rule after a diff's counted lines was read as a removed "--" line
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,1 @@\n-}\n+x\n---\n"
        "Then b.py\n",
        [("a.py", "}\n", "x\n")], set(), id="rule-after-an-unfenced-diff"),
    pytest.param(
        f"{F}diff\n--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,1 @@\n-}}\n+x\n---\n{F}\n",
        [("a.py", "}\n", "x\n")], set(), id="rule-after-a-fenced-diff"),
    pytest.param(
        # a diff's context line holding a fence (" ```", a README) closed the diff's
        # fence while its counts wanted more: a hunk cut short, a different edit
        f"{F}patch\n--- a/r.md\n+++ b/r.md\n@@ -1,2 +1,1 @@\n-\n {F}\n{F}\n",
        [("r.md", "\n```\n", "```\n")], set(), id="context-fence-line-in-a-fenced-diff"),
    pytest.param(
        # a stray ~~~ after the path line, then the block's own ~~~~~python fence (which
        # cannot open inside it): the block went to the previous block's file
        "a.py\n<<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE\n### b.py\n~~~\n~~~~~python\n"
        "<<<<<<< SEARCH\ny\n=======\nz\n>>>>>>> REPLACE\n~~~~~\n",
        [("a.py", "x\n", ""), ("b.py", "y\n", "z\n")], set(),
        id="stray-fence-between-a-path-line-and-its-longer-fence"),
    pytest.param(
        # a block's closing ~~~ lost; the next block's longer ~~~~ closes its fence after
        # the path line: that block went to the previous block's file (a.py)
        "~~~text a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"
        "Now update b.py as well.\n1. `b.py`\n~~~~\n<<<<<<< SEARCH\n=======\nz\n"
        ">>>>>>> REPLACE\n~~~~\n",
        [("a.py", "x\n", "y\n"), ("b.py", "", "z\n")], set(),
        id="longer-fence-closing-a-block-whose-closing-line-was-lost"),
    pytest.param(
        # a stray ``` opened a fence; after a block in it, `r.md` and a ``` line (meant to
        # open r.md's fence, it closed the stray one): r.md's block went to c.py
        f"{F}\n~~~py c.py\n<<<<<<< SEARCH\ny\n=======\n>>>>>>> REPLACE\n~~~\n`r.md`\n{F}\n"
        f"<<<<<<< SEARCH\nSome\n=======\n>>>>>>> REPLACE\n{F}\n",
        [("c.py", "y\n", ""), ("r.md", "Some\n", "")], set(),
        id="path-then-fence-closing-a-stray-fence-after-its-block"),
    pytest.param(
        # ... and a stray fence with no block and no file of its own
        f"````\n{F}\nstray\n{F}\n### b.py\n`````\n<<<<<<< SEARCH\n=======\ns\n"
        ">>>>>>> REPLACE\n`````\n",
        [("b.py", "", "s\n")], set(), id="path-then-fence-closing-a-stray-fence"),
    pytest.param(
        # a diff hunk that changes nothing still names the file a pathless block reuses;
        # the block went to the file before it (a.py)
        f"a.py\n{F}\n<<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE\n{F}\n{F}diff\n--- a/M.py\n"
        f"+++ b/M.py\n@@ -1,1 +1,1 @@\n-- i\n+- i\n{F}\n<<<<<<< SEARCH\ny\n=======\nz\n"
        ">>>>>>> REPLACE\n",
        [("a.py", "x\n", ""), ("M.py", "y\n", "z\n")], set(),
        id="pathless-block-after-a-no-op-diff-hunk"),
    pytest.param(
        # a whole file's closing fence lost: a path line in that fence, a block, then a
        # block with no path: it went to the fence's file (a.py), not new.py
        f"a.py\n{F}python\nx = 1\n<<<<<<< SEARCH\nx = 1\n=======\n>>>>>>> REPLACE\n"
        "new.py\n<<<<<<< SEARCH\ny\n=======\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nz\n=======\n"
        ">>>>>>> REPLACE\n",
        [("a.py", "x = 1\n", ""), ("new.py", "y\n", ""), ("new.py", "z\n", "")], set(),
        id="pathless-block-after-a-path-line-inside-a-named-fence"),
    pytest.param(
        # a whole file's closing fence lost: the next block's path line and fence end
        # it; the file was written with "pkg/new2.py:" as its last line
        f"a.py\n{F}python a.py\nfor i in r:\npass\npkg/new2.py:\n`````\nx\n`````\n",
        [], {"a.py"}, id="whole-file-ending-in-the-next-blocks-path-line"),
    pytest.param(
        # a stray ``` after a path line, closed by the block's own longer fence line: the
        # path still names the block (it went to the previous block's file)
        f"x.py\n{F}\n<<<<<<< SEARCH\n=======\nq\n>>>>>>> REPLACE\n{F}\n**b.py**\n{F}\n````\n"
        "<<<<<<< SEARCH\nx = 1\n=======\nreturn x\n>>>>>>> REPLACE\n````\n",
        [("x.py", "", "q\n"), ("b.py", "x = 1\n", "return x\n")], set(),
        id="empty-stray-fence-after-a-path-line"),
    pytest.param(
        # (a guard, not a bug of the base: the first form of the fix above made this
        # code block a whole file for a.py) an empty block after a path line, then prose
        f"a.py\n{F}python\n{F}\n{F}\nstray\n{F}\n", [], set(),
        id="empty-fence-after-a-path-line-then-a-code-block"),
    pytest.param(
        # (a guard: the first form of the path-line rule refused this real shape, three
        # answers of the real-answers corpus) a .gitignore ending in a glob
        f".gitignore\n{F}\n__pycache__/\n*.swp\n*.swo\n{F}\n",
        [(".gitignore", "", "__pycache__/\n*.swp\n*.swo\n")], set(),
        id="whole-gitignore-ending-in-a-glob"),
    pytest.param(
        # a block that lost its ======= line is refused; the block after it with no path
        # line is its file's (b.py), not the file of the block before (a.py)
        "a.py\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n1. `b.py`\n<<<<<<< ORIGINAL\n"
        "if a:\n>>>>>>> UPDATED\n<<<<<<< SEARCH\n    b()\n=======\n>>>>>>> REPLACE\n",
        [("a.py", "", "x\n"), ("b.py", "    b()\n", "")], {"b.py"},
        id="pathless-block-after-a-malformed-block"),
    pytest.param(
        # a stray ```diff holding no diff, "closed" by the next block's ```` after its
        # path line: the block went to the previous block's file (b.py)
        f"# b.py\n<<<<<<< SEARCH\n=======\nq\n>>>>>>> REPLACE\n{F}diff\n1. `c.py`\n````\n"
        "<<<<<<< SEARCH\ndef f():\n=======\n>>>>>>> REPLACE\n````\n",
        [("b.py", "", "q\n"), ("c.py", "def f():\n", "")], set(),
        id="path-then-fence-closing-a-stray-diff-fence"),
]


@pytest.mark.parametrize("answer, edits, refused", CASES)
def test_fuzz_found_answer(answer: str, edits: list[tuple[str, str, str]],
                           refused: set[str]) -> None:
    for text in (answer, answer.replace("\n", "\r\n")):
        parser = StreamingParser()
        got = parser.feed(text) + parser.finish()
        assert [(e.path, e.search, e.replace) for e in got] == edits
        assert {e.path for e in parser.errors} == refused


def test_lines_written_after_a_last_line_without_a_line_end_stay_lines(tmp_path) -> None:
    """A diff adding lines after a file's last line, which has no line end (the hunk's
    removed line is whitespace-only, so the engine keeps the file's line and inserts): the
    proposal showed the lines apart, but its hunk joined the new lines onto that last line
    ('z# note') and that is what was written (model-shaped soak, seed 51)."""
    from core.edits.proposal import apply_proposal, build_proposal
    from core.workspace.files import Workspace

    answer = "~~~diff\n--- a/M\n+++ b/M\n@@ -3,1 +3,2 @@\n-\t\n+# note\n+return x\n~~~\n"
    for k, old in enumerate(("y = 2\nfor i in r:\n\t", "y = 2\nfor i in r:\nz")):
        root = tmp_path / str(k)
        root.mkdir()
        (root / "M").write_text(old)
        ws = Workspace(root)
        parser = StreamingParser(exists=ws.exists)
        prop = build_proposal(ws, parser.feed(answer) + parser.finish())
        res = apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
        assert res.written == ["M"]
        assert (root / "M").read_text() == prop.file("M").new_text == \
            old + "\n# note\nreturn x"
