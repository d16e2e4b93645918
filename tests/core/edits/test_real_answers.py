"""Real model answers from public Aider chat logs, replayed through our parser.

The sample (bench/real_answers/sample.jsonl.gz, licence-clean repositories only; how it
is built: docs/real-answers.md) holds each answer's text, Aider's verdict and the line
counts of the files it names in the tree it was written against.  These tests hold the
parser to what Aider did with the same answers, and to the three wrong writes that real
answers provoke: a stray new file, an existing file cut to a snippet, a placeholder.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.real_answers.aider_log import parse_log
from bench.real_answers.measure import Verdict, family, is_placeholder_text, judge, table
from bench.real_answers.sample import SAMPLE, load_sample
from core.edits.parser import StreamingParser
from core.edits.proposal import build_proposal
from core.workspace.files import Workspace

# Floors under what the sample measured when they were set (96.7% / 98.7%, 152 answers
# with Aider edits); raise them when the parser improves.  The raw share counts answers
# that never name their file on a path line (Aider writes a bare fence to the only file
# in its chat, or retries a failed SEARCH on the other chat files): no parser can match
# those, so the goal (97%) is held on the answers that name their files.
SAME_FILES_FLOOR = 0.95
SAME_FILES_NAMED_FLOOR = 0.97


@pytest.fixture(scope="module")
def verdicts() -> list[tuple[dict, Verdict]]:
    records = [r for r in load_sample() if not r.get("architect") and not r.get("reformatted")]
    return [(r, judge(r)) for r in records]


def test_sample_is_real_and_attributed() -> None:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert len(records) >= 300
    assert len({r["repo"] for r in records}) >= 6
    for r in records:
        assert r["repo"] and r["log_path"].endswith(".md") and len(r["log_commit"]) == 40
        assert r["licence"] in {"MIT", "Apache-2.0", "BSD", "ISC", "MPL-2.0", "Unlicense",
                                "CC0-1.0"}


def test_same_files_as_aider(verdicts: list[tuple[dict, Verdict]]) -> None:
    row = table((v for _, v in verdicts), lambda v: v.family)["all"]
    assert row.answers >= 120
    misses = "\n".join(f"{r['repo']}#{r['index']}: ours {sorted(v.ours)} aider "
                       f"{sorted(v.aider)} {v.why}" for r, v in verdicts if v.applied and not v.same)
    assert row.same / row.answers >= SAME_FILES_FLOOR, misses
    assert row.named_same / row.named >= SAME_FILES_NAMED_FLOOR, misses


def test_no_stray_files(verdicts: list[tuple[dict, Verdict]]) -> None:
    stray = [(r["repo"], r["index"], v.stray) for r, v in verdicts if v.stray]
    assert stray == []


def _unguarded_cuts(rec: dict, tmp: Path) -> list[str]:
    """Files a whole-file block would cut to a snippet WITHOUT the deletion-heavy second
    key: each cut file is laid out with its real line count (distinct lines, since the
    sample keeps counts, not content) and the answer goes through build_proposal."""
    v = judge(rec)
    cut = [c.split(" (")[0] for c in v.cut]
    if not cut:
        return []
    for rel in cut:
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(f"original line {i}\n" for i in range(rec["files"][rel])))
    parser = StreamingParser()
    proposal = build_proposal(Workspace(tmp), parser.feed(rec["text"]) + parser.finish())
    return [f.path for f in proposal.files if f.path in cut and not f.deletion_heavy]


def test_no_file_cut_to_a_snippet_without_the_second_key(
        verdicts: list[tuple[dict, Verdict]], tmp_path: Path) -> None:
    unguarded = []
    for i, (r, v) in enumerate(verdicts):
        if v.cut:
            unguarded += _unguarded_cuts(r, tmp_path / str(i))
    assert unguarded == []


def test_cut_guard_sees_a_real_cut(tmp_path: Path) -> None:
    """The check above can fail: a snippet for a 300-line file is a cut, and only the
    deletion-heavy flag keeps it from being written."""
    rec = {"text": "src/big.py\n```python\ndef f():\n    return 1\n```\n",
           "applied": ["src/big.py"], "model": "", "tree_commit": "f" * 40,
           "files": {"src/big.py": 300}}
    assert judge(rec).cut == ["src/big.py (300 -> 2 lines)"]
    assert _unguarded_cuts(rec, tmp_path) == []  # flagged, so not unguarded


def test_no_placeholder_written(verdicts: list[tuple[dict, Verdict]]) -> None:
    found = [(r["repo"], r["index"], v.placeholder) for r, v in verdicts if v.placeholder]
    assert found == []


_WITH_EDITS = [r["text"] for r in load_sample() if "```" in r["text"] or "<<<<<<<" in r["text"]]


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(_WITH_EDITS) - 1), cuts=st.lists(st.integers(1, 400), max_size=40))
def test_real_answers_stream_in_any_chunks(index: int, cuts: list[int]) -> None:
    """Streaming invariant on real answers: fed in chunks of any sizes (as a stream
    arrives), an answer gives exactly the edits, held blocks and errors it gives whole."""
    text = _WITH_EDITS[index]
    whole = StreamingParser()
    expected = whole.feed(text) + whole.finish()
    parser, got, pos = StreamingParser(), [], 0
    for size in cuts:
        got += parser.feed(text[pos:pos + size])
        pos += size
    got += parser.feed(text[pos:]) + parser.finish()
    assert got == expected
    assert parser.errors == whole.errors
    assert getattr(parser, "held", []) == getattr(whole, "held", [])


# -- shapes seen in the full corpus (not redistributable, so rewritten here) ---------


def _paths(text: str) -> list[str]:
    parser = StreamingParser()
    return [e.path for e in parser.feed(text) + parser.finish()]


def test_trailing_divider_before_replace_marker() -> None:
    """claude-sonnet-4-5 closes REPLACE with a second '=======' (Aider accepts it)."""
    text = ("src/canvas.py\n````python\n<<<<<<< SEARCH\n        self.points = []\n=======\n"
            "        self.vertices = []\n=======\n>>>>>>> REPLACE\n````\n")
    parser = StreamingParser()
    (edit,) = parser.feed(text) + parser.finish()
    assert edit.replace == "        self.vertices = []\n"


def test_windows_path_with_markdown_escapes() -> None:
    """A backslash before '_' or '(' is a markdown escape, not a folder separator."""
    text = ("app\\routes\\($locale).account\\_.authorize.tsx\n```tsx\n<<<<<<< SEARCH\n"
            "a\n=======\nb\n>>>>>>> REPLACE\n```\n")
    assert _paths(text) == ["app/routes/($locale).account_.authorize.tsx"]


def test_windows_path_line() -> None:
    text = ("app\\components\\SearchForm.tsx\n```tsx\n<<<<<<< SEARCH\na\n=======\nb\n"
            ">>>>>>> REPLACE\n```\n")
    assert _paths(text) in (["app/components/SearchForm.tsx"], [])  # never a '\\' name


def test_reasoning_is_never_read_as_edits() -> None:
    """13% of real answers carry the model's reasoning; drafts in it are no edits."""
    text = ("<think>\nThe file should become:\n\nnotes.md\n```\n# Draft\n```\n</think>\n\n"
            "notes.md\n```\n# Notes\n\nFinal.\n```\n")
    parser = StreamingParser()
    edits = parser.feed(text) + parser.finish()
    assert [(e.path, e.replace) for e in edits] == [("notes.md", "# Notes\n\nFinal.\n")]


def test_example_snippet_under_a_heading_is_not_the_file() -> None:
    """deepseek-coder, Aider's diff format (Aider applied nothing): an illustration under
    a `### path` heading would replace a 231-line file with these 3 lines."""
    text = ("Here is an example of how you might structure your files:\n\n"
            "### scene_craft.rb\n```ruby\nclass Scene_Craft\n  # Class definition here\nend\n```\n")
    parser = StreamingParser(exists=lambda p: p == "scene_craft.rb")
    assert parser.feed(text) + parser.finish() == []


# -- the measuring tools themselves --------------------------------------------------

_LOG = """# aider chat started at 2024-06-01 10:00:00

> aider --model claude-3-5-sonnet-20240620  
> Aider v0.40.0  
> Model: claude-3-5-sonnet-20240620 with diff edit format  

#### add a greeting  

Here is the change:

app.py
```python
<<<<<<< SEARCH
=======
print("hi")
>>>>>>> REPLACE
```

> Tokens: 1k sent, 100 received.  
> Applied edit to app.py  
> Commit abc1234 feat: greet  

#### fix it  

lib/x.py
```python
<<<<<<< SEARCH
a = 1
=======
a = 2
>>>>>>> REPLACE
```

> Tokens: 1k sent, 100 received.  
> The LLM did not conform to the edit format.  
> # 1 SEARCH/REPLACE block failed to match!

## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in lib/x.py
<<<<<<< SEARCH
a = 1
=======
a = 2
>>>>>>> REPLACE

The SEARCH section must exactly match an existing block of lines including all white space, comments, indentation, docstrings, etc  

Sorry, here is the fix:

lib/x.py
```python
<<<<<<< SEARCH
a=1
=======
a = 2
>>>>>>> REPLACE
```

> Applied edit to lib/x.py  
"""


def test_log_split_into_answers_with_verdicts() -> None:
    answers = parse_log(_LOG)
    assert [a.applied for a in answers] == [["app.py"], [], ["lib/x.py"]]
    first, failed, retry = answers
    assert first.model == "claude-3-5-sonnet-20240620" and first.edit_format == "diff"
    assert first.commits == ["abc1234"] and first.request == "add a greeting"
    assert failed.failed and failed.failed_paths == ["lib/x.py"]
    assert "SearchReplaceNoExactMatch" not in retry.text  # Aider's report is no answer
    assert retry.reflection and retry.text.startswith("Sorry")


def test_architect_mode_with_auto_accept() -> None:
    """No "Edit the files?" prompt: the plan is the architect's, the answer that gets
    Aider's verdict is the editor's (its model and format)."""
    log = ("> Main model: o3 with architect edit format  \n"
           "> Editor model: gpt-4.1 with editor-diff edit format  \n\n"
           "#### make it faster  \n\nUse a set instead of a list in a.py.\n\n"
           "> Tokens: 1k sent, 100 received.  \n\n"
           "a.py\n```python\n<<<<<<< SEARCH\nx = []\n=======\nx = set()\n>>>>>>> REPLACE\n```\n\n"
           "> Applied edit to a.py  \n")
    plan, edit = parse_log(log)
    assert plan.architect and plan.model == "o3" and not plan.applied
    assert not edit.architect and (edit.model, edit.edit_format) == ("gpt-4.1", "editor-diff")
    assert edit.applied == ["a.py"]


def test_quoted_prompt_inside_a_fence_stays_in_the_answer() -> None:
    log = "#### run it\n\nDo this:\n\n```console\n> make test\n```\n\nDone.\n"
    (answer,) = parse_log(log)
    assert "> make test" in answer.text and answer.text.rstrip().endswith("Done.")


def test_judge_counts_stray_and_cut() -> None:
    text = "src/big.py\n```python\nx = 1\n```\n\nnotes.txt\n```\nhello\n```\n"
    rec = {"text": text, "applied": ["src/big.py"], "model": "gpt-4o",
           "tree_commit": "f" * 40, "files": {"src/big.py": 400}}
    v = judge(rec)
    assert v.ours == {"src/big.py", "notes.txt"}
    assert v.stray == ["notes.txt"] and v.cut == ["src/big.py (400 -> 1 lines)"]
    assert not v.same


def test_bracket_route_files_that_exist_are_not_placeholders() -> None:
    text = "src/pages/blog/[...slug].astro\n```astro\n---\nconst x = 1;\n---\n```\n"
    rec = {"text": text, "applied": ["src/pages/blog/[...slug].astro"], "model": "",
           "tree_commit": "f" * 40, "files": {"src/pages/blog/[...slug].astro": 3}}
    assert judge(rec).placeholder == []


@pytest.mark.parametrize("text,expected", [
    ("[Contents of App.tsx go here]", True),
    ("// Content of the file here", True),
    ("# ... rest of the file unchanged ...", True),
    ("const content = here;", False),
    ("print('the file')\n", False),
])
def test_placeholder_text(text: str, expected: bool) -> None:
    assert is_placeholder_text(text) is expected


@pytest.mark.parametrize("model,fam", [
    ("openrouter/anthropic/claude-3.5-sonnet", "claude"), ("gpt-4o-2024-08-06", "openai"),
    ("gemini/gemini-2.5-pro", "gemini"), ("deepseek/deepseek-chat", "deepseek"),
    ("ollama/qwen2.5-coder:32b", "qwen"), ("xai/grok-4", "grok"), ("", "unknown"),
])
def test_family(model: str, fam: str) -> None:
    assert family(model) == fam


def test_sample_path_is_in_the_repository() -> None:
    assert SAMPLE.is_file() and SAMPLE.parent == Path(__file__).resolve().parents[3] / \
        "bench" / "real_answers"
