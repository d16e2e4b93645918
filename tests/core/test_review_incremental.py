"""Workstation.review after a stream of blocks equals a review from scratch.

The answer's blocks arrive one at a time over copies of real Python files; after each
one the proposal is rebuilt and a review pass runs, superseded after a random number of
files (as the app's passes are). Whatever the passes left behind (per-file reviews, the
statements' duplicate checks, the slop memos, cancelled checks), the review of the final
proposal finds exactly what a new Workstation finds reviewing the same answer at once.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import check_worker
from core.answer import AnswerRun
from core.workstation import ReviewSuperseded, Workstation
from tests.core.detectors.real_code import SITE_PACKAGES, read_text, real_python_files

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")


def _station(root: Path) -> Workstation:
    station = Workstation(root)
    station.dups.build()
    station.dups_ready = True
    return station


def _block(path: str, lines: list[str], at: int, n: int, copy_of: list[str]) -> str:
    """A SEARCH/REPLACE block at real lines: a helper put before them (a copy of a real
    function's lines every other time: duplicate findings), the first line changed."""
    search = lines[at:at + 3]
    helper = copy_of if n % 2 else [f"def helper_{n}(items):", "    out = []", "    for item in items:",
                                    "        out.append(item)", "    if len(items) == 0:",
                                    "        return []", "    return out", ""]
    replace = [*helper, "", f"# block {n}", *search]
    return (f"{path}\n```python\n<<<<<<< SEARCH\n" + "\n".join(search) + "\n=======\n"
            + "\n".join(replace) + "\n>>>>>>> REPLACE\n```\n")


def _findings(station: Workstation, run: AnswerRun) -> list[tuple]:
    return [(f.severity, f.kind, f.message, f.hunk_id) for f in station.review(run).findings]


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_review_after_a_stream_equals_review_from_scratch(tmp_path_factory: pytest.TempPathFactory,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          data: st.DataObject) -> None:
    monkeypatch.setenv(check_worker.ENV, "0")  # slop in this thread (the worker's is the same code)
    files = real_python_files((SITE_PACKAGES,), 4_000, 20_000)
    if not files:
        pytest.skip("no site-packages Python files to test on")
    root = tmp_path_factory.mktemp("repo")
    names = []
    for k in range(3):
        source = data.draw(st.sampled_from(files), label=f"file{k}")
        names.append(f"pkg/m{k}.py")
        (root / "pkg").mkdir(exist_ok=True)
        shutil.copyfile(source, root / names[-1])
    texts = {name: read_text(root / name).split("\n") for name in names}
    defs = {name: [i for i, line in enumerate(texts[name]) if line.startswith("def ")] for name in names}
    answer = ["I will change three modules.\n"]
    used: set[tuple[str, int]] = set()
    for n in range(data.draw(st.integers(2, 7), label="blocks")):
        name = data.draw(st.sampled_from(names), label="target")
        spots = [i for i in range(len(texts[name]) - 3) if texts[name][i].strip()
                 and texts[name][i][0] not in " \t#)]}" and (name, i) not in used]
        if not spots:
            continue
        at = data.draw(st.sampled_from(spots), label="at")
        used.add((name, at))
        twin = data.draw(st.sampled_from(defs[name]), label="twin") if defs[name] else None
        copy_of = []
        if twin is not None:  # the whole function: its lines up to the next top-level line
            end = next((j for j in range(twin + 1, len(texts[name]))
                        if texts[name][j][:1] not in ("", " ", "\t", "#")), len(texts[name]))
            copy_of = texts[name][twin:end]
        answer.append(_block(name, texts[name], at, n, [line.replace("def ", "def copy_", 1) for line in copy_of]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        station = _station(root)
        run = AnswerRun(station.workspace, "change", "spark")
        for block in answer:
            if run.feed(block, 10):
                run.rebuild_proposal()
                budget = data.draw(st.integers(0, 3), label="files before superseded")
                asked = iter(range(budget, -1, -1))
                try:
                    station.review(run, stale=lambda it=asked: next(it, 0) == 0)
                except ReviewSuperseded:
                    pass
        run.finish("stop")
        run.rebuild_proposal()
        streamed = _findings(station, run)
        fresh = _station(root)
        again = AnswerRun(fresh.workspace, "change", "spark")
        again.feed("".join(answer), 10)
        again.finish("stop")
        again.rebuild_proposal()
        assert streamed == _findings(fresh, again)
