"""Issue 17's real-commit corpus machinery (bench/edit_corpus/) on a sample, in CI.

The bench runs real commits of six public projects (fetched at bench time, never
committed); CI uses this repository's own history instead: its oldest 80 qualifying
commits (1-4 .py files, under 200 changed lines), read from the checkout's .git at test
time, rendered as model answers in 16 formats, applied with the real `spark apply` code
path to a temporary copy of the files and compared byte for byte with the commit.  Per format: no wrong write at all (exit 0 or
1), and an exact rate at the issue's goal (99% clean formats, 95% sloppy ones).
`make bench` (bench/bench_edit_corpus.py) runs the whole corpus.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.edit_corpus.cases import Case
from bench.edit_corpus.formats import (
    CLEAN,
    FORMATS,
    Answer,
    lines_of,
    render,
    sr_blocks,
)
from bench.edit_corpus.generate import own_history
from bench.edit_corpus.runner import Result, is_partial, run_answer, scratch_dir

SAMPLE = 16  # answers per format: 16 x 16 applies, ~8 s of CPU

# Gaps the engine team (edits-parse, edits-match) is fixing, per issue 17 and the
# corpus table in /work/notes/edits-corpus.md.  Remove a format when its fix lands.
WRONG_GAPS: dict[str, str] = {}
EXACT_GAPS: dict[str, str] = {}


_CASES = own_history(ROOT, 80)
pytestmark = pytest.mark.skipif(not _CASES, reason="the sample is built from this "
                                "repository's own commits: needs a checkout with its .git history")


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return _CASES


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """Trees are made in memory where possible (the engine fsyncs every write)."""
    with tempfile.TemporaryDirectory(prefix="spark-corpus-", dir=scratch_dir()) as tmp:
        yield Path(tmp)


def sample(cases: list[Case], fmt: str, n: int = SAMPLE) -> list[Answer]:
    """n answers spread evenly over the corpus (the same ones every run), rendering
    only as many cases as needed."""
    step = max(1, len(cases) // (4 * n))
    got: list[Answer] = []
    for offset in range(step):
        for case in cases[offset::step]:
            ans = render(case, fmt)
            if ans is not None:
                got.append(ans)
                if len(got) == n:
                    return got
    return got


def _run(answers: list[Answer], scratch: Path) -> list[Result]:
    return [run_answer(a, scratch) for a in answers]


def _gap(table: dict[str, str], fmt: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(reason=table[fmt], strict=False)] if fmt in table else []


@pytest.mark.parametrize("fmt", [pytest.param(f, marks=_gap(WRONG_GAPS, f)) for f in FORMATS])
def test_no_wrong_write(cases: list[Case], fmt: str, scratch: Path) -> None:
    """An answer is applied exactly or refused (fully or in part), never written wrong."""
    bad = [r for r in _run(sample(cases, fmt), scratch)
           if r.outcome in ("wrong0", "wrong1", "crash")]
    assert not bad, "\n".join(f"{r.outcome} {r.case_id}: {r.detail} (repro: python -m "
                              f"bench.edit_corpus.show {r.case_id} {fmt})" for r in bad)


@pytest.mark.parametrize("fmt", [pytest.param(f, marks=_gap(EXACT_GAPS, f)) for f in FORMATS])
def test_exact_rate_floor(cases: list[Case], fmt: str, scratch: Path) -> None:
    results = _run(sample(cases, fmt), scratch)
    # the goal; on 16 answers a sloppy format may miss one (95% of 16 is 15.2)
    goal = 0.99 if fmt in CLEAN else 0.93
    exact = sum(r.outcome == "exact" for r in results) / len(results)
    missed = [f"{r.outcome} {r.case_id}" for r in results if r.outcome != "exact"]
    assert exact >= goal, f"{fmt}: {exact:.0%} exact < {goal:.0%}: {missed}"


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_case_and_format_is_exact_or_refused(scratch: Path, data: st.DataObject) -> None:
    """Any commit in any format whose gaps are closed: never a wrong write."""
    fmt = data.draw(st.sampled_from([f for f in FORMATS if f not in WRONG_GAPS]))
    case = _CASES[data.draw(st.integers(0, len(_CASES) - 1))]  # an index: short reports
    ans = render(case, fmt)
    if ans is None:
        return
    r = run_answer(ans, scratch)
    assert r.outcome not in ("wrong0", "wrong1", "crash"), (r, fmt)


def test_command_line_agrees_with_in_process(cases: list[Case], scratch: Path) -> None:
    """The real `spark apply` in a subprocess judges the same as the in-process path."""
    for fmt in ("sr_minimal", "udiff_multi"):
        ans = sample(cases, fmt, 1)[0]
        inproc = run_answer(ans, scratch)
        cli = run_answer(ans, scratch, subprocess_cli=True)
        assert (cli.outcome, cli.exit_code) == (inproc.outcome, inproc.exit_code)


@settings(max_examples=40, deadline=None)
@given(idx=st.integers(0, 10_000), context=st.sampled_from([0, 3]))
def test_generated_blocks_are_unique_and_say_the_commit(idx: int, context: int) -> None:
    """The corpus itself is sound: every SEARCH text of a generated block occurs once in
    the file, and the blocks applied where they were cut reproduce the commit."""
    case = _CASES[idx % len(_CASES)]
    for fc in case.files:
        a = lines_of(fc.before)
        out: list[str] = []
        pos = 0
        for bl in sr_blocks(fc, context):
            i1, i2, _, _ = bl.unit
            if bl.search:
                n = len(bl.search)
                assert sum(a[i:i + n] == bl.search for i in range(len(a) - n + 1)) == 1
            out += a[pos:i1] + bl.replace
            pos = i2
        assert out + a[pos:] == lines_of(fc.after)


def test_partial_judge() -> None:
    """is_partial accepts some units applied and the rest untouched, nothing else."""
    before = "a\nb\nc\nd\ne\n"
    after = "a\nB\nc\nd\nE\n"
    units = [(1, 2, 1, 2), (4, 5, 4, 5)]
    assert is_partial(before, "a\nB\nc\nd\ne\n", units, after)
    assert is_partial(before, "a\nb\nc\nd\nE\n", units, after)
    assert not is_partial(before, "a\nB\nc\nE\n", units, after)
    assert not is_partial(before, "a\nB\nB\nc\nd\ne\n", units, after)

