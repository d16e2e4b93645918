"""An answer's hunk states against the disk, without the screen (core.answer + core.workstation).

The property: at every step, a hunk is WRITTEN if and only if its lines are on disk, a
hunk that cannot be written is never WRITTEN, nothing is written while a hunk is open, and
the session record's last word per hunk says accepted exactly for the WRITTEN ones.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from core.answer import AnswerRun, HunkState, prose_of
from core.workstation import Workstation

BASE = {
    "app/a.py": "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(6)),
    "app/b.py": "X = 1\nY = 2\nZ = 3\n",
}
ANSWER = """I changed three things.

app/a.py
```python
<<<<<<< SEARCH
def f1():
    return 1
=======
def f1():
    return 100
>>>>>>> REPLACE
```

app/a.py
```python
<<<<<<< SEARCH
def f4():
    return 4
=======
def f4():
    return 400
>>>>>>> REPLACE
```

app/b.py
```python
<<<<<<< SEARCH
Y = 2
=======
Y = 200
>>>>>>> REPLACE
```
Done: f1 and f4 return more.
"""


def _on_disk(root: Path, hunk) -> bool:
    text = (root / hunk.path).read_text()
    return "".join(hunk.new_lines) in text


class AnswerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="spark-answer-"))
        for rel, text in BASE.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_text(text)
        self.station = Workstation(self.root, guards={"guards": {"dwell_lines_per_second": 0}})
        self.run = AnswerRun(self.station.workspace, "bump f1, f4 and Y", "spark")
        self.run.feed(ANSWER, 100)
        self.run.finish("stop")
        self.run.rebuild_proposal()
        self.station.answers.append(self.run)
        self.writes = 0

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(index=st.integers(0, 2), accept=st.booleans())
    def key(self, index: int, accept: bool) -> None:
        hunk = self.run.hunks[index]
        self.station.decide(self.run, [hunk.id], accept, None)

    @rule(accept=st.booleans())
    def all_keys(self, accept: bool) -> None:
        targets = self.run.undecided if accept else self.run.open
        self.station.decide(self.run, targets, accept, None)

    @rule(index=st.integers(0, 2))
    def outside_edit_under(self, index: int) -> None:
        hunk = self.run.hunks[index]
        path = self.root / hunk.path
        text = path.read_text()
        old = "".join(hunk.old_lines)
        if old and old in text:
            path.write_text(text.replace(old, old.replace("return", "return -"), 1))
        self.station.recheck(self.run)

    @rule()
    def outside_restore(self) -> None:
        for rel in BASE:
            path = self.root / rel
            path.write_text(path.read_text().replace("return -", "return"))
        self.station.recheck(self.run)

    @precondition(lambda self: self.run.all_decided and not self.run.applied)
    @rule()
    def write(self) -> None:
        self.station.write(self.run)
        self.writes += 1

    @rule()
    def undo(self) -> None:
        self.station.undo()

    @invariant()
    def written_iff_on_disk(self) -> None:
        for hunk in self.run.hunks:
            state = self.run.state(hunk.id)
            if state is HunkState.WRITTEN:
                assert _on_disk(self.root, hunk), f"{hunk.id} WRITTEN but not on disk"
            else:
                assert not _on_disk(self.root, hunk), f"{hunk.id} {state.value} but on disk"
            if state in (HunkState.REFUSED, HunkState.STALE):
                assert self.run.reasons.get(hunk.id), "a refused or stale hunk says why"
        if self.run.open:
            assert not self.run.applied

    @invariant()
    def record_agrees(self) -> None:
        last: dict[str, bool] = {}
        for line in self.station.recorder.path.read_text().splitlines():
            event = json.loads(line)
            if event.get("request_id") != self.run.request_id:
                continue
            if event.get("type") == "hunk_decided":
                last[event["hunk_id"]] = bool(event["accepted"])
            elif event.get("type") == "hunk_reverted":
                last[event["hunk_id"]] = False
        assert {h for h, ok in last.items() if ok} == self.run.written


AnswerMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
TestAnswerStates = AnswerMachine.TestCase


def test_hunks_in_file_order_and_the_prose_apart_from_the_edits(tmp_path):
    for rel, text in BASE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    station = Workstation(tmp_path)
    shuffled = ANSWER.replace("def f1():\n    return 1\n=======\ndef f1():\n    return 100",
                              "def f5():\n    return 5\n=======\ndef f5():\n    return 500")
    run = AnswerRun(station.workspace, "p", "spark")
    run.feed(shuffled, 10)
    run.finish("stop")
    run.rebuild_proposal()
    starts = [(h.path, h.old_start) for h in run.hunks]
    assert starts == sorted(starts, key=lambda s: ([fp.path for fp in run.proposal.files].index(s[0]), s[1]))
    assert prose_of(ANSWER) == "I changed three things.\nDone: f1 and f4 return more."


def test_a_whole_file_that_deletes_most_of_a_file_waits_for_write_anyway(tmp_path):
    """The check before writing names it; without `force` it is refused (with the reason),
    never written; with the user's second key (`w`: force) it is written."""
    big = "".join(f"line_{i} = {i}\n" for i in range(60))
    (tmp_path / "big.py").write_text(big)
    station = Workstation(tmp_path, guards={"guards": {"dwell_lines_per_second": 0}})
    run = AnswerRun(station.workspace, "p", "spark")
    run.feed("big.py\n```python\nline_0 = 0\n```\n", 10)
    run.finish("stop")
    run.rebuild_proposal()
    assert run.proposal.files and run.proposal.files[0].deletion_heavy
    station.decide(run, run.undecided, True, None)
    assert any("removes" in p for p in station.check_subset(run))
    station.write(run)
    assert (tmp_path / "big.py").read_text() == big
    assert {run.state(h).value for h in run.states()} == {"refused"}
    assert all("removes" in run.reasons[h] for h in run.states())
    run2 = AnswerRun(station.workspace, "p", "spark")
    run2.feed("big.py\n```python\nline_0 = 0\n```\n", 10)
    run2.finish("stop")
    run2.rebuild_proposal()
    station.decide(run2, run2.undecided, True, None)
    station.write(run2, force=True)
    assert (tmp_path / "big.py").read_text() == "line_0 = 0\n"
    assert run2.written == {h.id for h in run2.hunks}
