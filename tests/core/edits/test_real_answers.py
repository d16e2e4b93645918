"""What real models write, through our parser and engine, without the corpus.

The real-answers corpus (bench/real_answers: 1,697 answers from public Aider chat logs,
measured in `make bench`) is other people's text and is never committed.  Its lessons
are: every shape it showed, rewritten by hand in tests/core/edits/data/real_shapes.py
with what the engine must do (files edited, held, refused, needing the second key).
These tests hold the parser and `build_proposal` to those shapes, hold the streaming
invariant over them (any chunking gives the same edits), and test the corpus tools
(log splitting, the verdict per answer, the bench's skip and its run on a tiny corpus
made of these shapes).  The floors on the real corpus are printed by the bench.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.real_answers.aider_log import parse_log
from bench.real_answers.corpus import read, unique, write
from bench.real_answers.measure import family, is_placeholder_text, judge, unguarded_cuts
from core.edits.parser import StreamingParser
from core.edits.proposal import Proposal, build_proposal
from core.workspace.files import Workspace
from tests.core.edits.data.real_shapes import SHAPES, Shape


def _lay_out(shape: Shape, root: Path) -> Workspace:
    for rel, text in shape.tree.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return Workspace(root)


def _run(shape: Shape, root: Path) -> tuple[StreamingParser, Proposal]:
    ws = _lay_out(shape, root)
    parser = StreamingParser(exists=ws.exists)
    edits = parser.feed(shape.answer) + parser.finish()
    return parser, build_proposal(ws, edits)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_real_shape(shape: Shape, tmp_path: Path) -> None:
    parser, proposal = _run(shape, tmp_path)
    held = {h.path for h in parser.held}
    edited = {f.path for f in proposal.files if not f.deletion_heavy}
    heavy = {f.path for f in proposal.files if f.deletion_heavy}
    refused = {e.path for e in proposal.errors} | \
        {e.path for e in parser.errors if e.path and e.path not in held}
    report = (f"{shape.seen}\nparser errors: {[e.message for e in parser.errors]}\n"
              f"engine errors: {[e.message for e in proposal.errors]}")
    assert (edited, heavy, refused, held) == \
        (shape.edited, shape.heavy, shape.refused, shape.held), report
    for rel, text in shape.results.items():
        assert proposal.file(rel).new_text == text
    for e in parser.errors + [*proposal.errors]:
        assert e.message.strip()  # every refusal says why


def test_shapes_cover_every_outcome() -> None:
    """The cases exercise each outcome, so a parser that edits everything (or nothing)
    fails them."""
    assert all(any(getattr(s, k) for s in SHAPES) for k in ("edited", "heavy", "refused", "held"))
    assert any(not (s.edited or s.heavy or s.refused or s.held) for s in SHAPES)
    assert len({s.name for s in SHAPES}) == len(SHAPES)


@settings(max_examples=80, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(SHAPES) - 1), cuts=st.lists(st.integers(1, 120), max_size=40))
def test_real_shapes_stream_in_any_chunks(index: int, cuts: list[int]) -> None:
    """Streaming invariant: fed in chunks of any sizes (as a stream arrives), an answer
    gives exactly the edits, held blocks and errors it gives whole."""
    shape = SHAPES[index]
    exists = shape.tree.__contains__
    whole = StreamingParser(exists=exists)
    expected = whole.feed(shape.answer) + whole.finish()
    parser, got, pos = StreamingParser(exists=exists), [], 0
    for size in cuts:
        got += parser.feed(shape.answer[pos:pos + size])
        pos += size
    got += parser.feed(shape.answer[pos:]) + parser.finish()
    assert got == expected
    assert parser.errors == whole.errors
    assert parser.held == whole.held


# -- the shapes as corpus records: the verdict the bench would give ------------------


def _record(shape: Shape, index: int) -> dict[str, Any]:
    """A shape as the collector would record it, with Aider's verdict set to what our
    engine should do (it applied the files we edit, with or without the second key)."""
    return {"repo": "sparkstation/real-shapes", "log_path": ".aider.chat.history.md",
            "log_commit": "0" * 40, "index": index, "model": "claude-sonnet-4-5",
            "edit_format": "diff", "text": shape.answer,
            "applied": sorted(shape.edited | shape.heavy), "failed": False,
            "failed_paths": [], "declined": [], "committed": [], "tree_source": "commit",
            "tree_commit": "f" * 40,
            "files": {rel: len(text.splitlines()) for rel, text in shape.tree.items()}}


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_verdict_on_a_real_shape(shape: Shape, tmp_path: Path) -> None:
    v = judge(_record(shape, 0))
    assert v.ours >= shape.edited | shape.heavy  # no file we propose is lost by the judge
    assert v.placeholder == [] and v.stray == []
    cut = {c.split(" (")[0] for c in v.cut}
    assert cut <= shape.heavy
    assert unguarded_cuts(_record(shape, 0), v, tmp_path) == []


def test_cut_guard_sees_a_real_cut(tmp_path: Path) -> None:
    """The guard can fail: a 2-line snippet for a 300-line file is a cut, and only the
    deletion-heavy flag keeps it from being written."""
    rec = {"text": "src/big.py\n```python\ndef f():\n    return 1\n```\n",
           "applied": ["src/big.py"], "model": "", "tree_commit": "f" * 40,
           "files": {"src/big.py": 300}}
    v = judge(rec)
    assert v.cut == ["src/big.py (300 -> 2 lines)"]
    assert unguarded_cuts(rec, v, tmp_path) == []  # flagged, so not unguarded


# -- the bench: skipped without a corpus, runs on a tiny one ------------------------


def _bench(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
           corpus: Path, mirrors: Path) -> str:
    import runpy

    monkeypatch.setenv("SPARK_REAL_ANSWERS", str(corpus))
    monkeypatch.setenv("SPARK_CORPUS_MIRRORS", str(mirrors))
    root = Path(__file__).resolve().parents[3]
    module = runpy.run_path(str(root / "bench" / "bench_real_answers.py"), run_name="bench")
    module["main"]()
    return capsys.readouterr().out


def test_bench_skips_without_corpus_or_mirrors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _bench(monkeypatch, capsys, tmp_path / "none.jsonl.gz", tmp_path / "no-mirrors")
    assert "skipped: real_answers" in out and "manifest.txt" in out
    assert not (tmp_path / "none.jsonl.gz").exists()


def test_bench_on_a_tiny_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "tiny.jsonl.gz"
    records = [_record(s, i) for i, s in enumerate(SHAPES)]
    assert write(iter(records + records[:2]), corpus) == len(SHAPES) + 2
    assert [r["index"] for r in unique(read(corpus))] == list(range(len(SHAPES)))
    out = _bench(monkeypatch, capsys, corpus, tmp_path / "no-mirrors")
    assert f"({len(SHAPES)} answers, 1 repositories)" in out
    assert "| claude |" in out and "floors (" in out and "too small to judge" in out
    assert "ok     answers writing a placeholder: 0" in out
    assert "ok     cut files without the second key: 0" in out
    with gzip.open(corpus, "rt", encoding="utf-8") as fh:
        assert all(json.loads(line)["repo"] for line in fh)


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
