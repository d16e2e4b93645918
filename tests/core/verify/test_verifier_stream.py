"""While an answer streams, the verifier checks a proposal only once it stays the same.

Issue 14 (many edits): each rebuild of a streaming proposal was checked (a parse and a
ruff run per edited file), hundreds of ms of GIL and CPU for reports replaced before
anyone read them. Now the files' original texts are checked as soon as they appear, a
streaming proposal only after `stream_quiet_s` without a newer one, the final one at once.
No timing is asserted: which texts were checked is.
"""

from __future__ import annotations

import threading
import time

import pytest

from core.demo import write_demo
from core.edits.parser import parse_edits
from core.edits.proposal import build_proposal
from core.verify import verifier as verifier_module
from core.verify.baseline import BaselineCache
from core.verify.verifier import Scope, Verifier
from core.workspace.files import Workspace
from tests.core.verify.test_verifier import recording


@pytest.fixture
def demo(tmp_path, scratch_tmp):
    return Workspace(write_demo(tmp_path / "demo"))


@pytest.fixture
def checked(monkeypatch):
    """Every (path, text) the verifier sends to check_texts, in order."""
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()
    real = verifier_module.check_texts

    def spy(items):
        with lock:
            seen.extend(items)
        return real(items)

    monkeypatch.setattr(verifier_module, "check_texts", spy)
    return seen


def _prefixes(answer: str, n: int):
    """Proposals of the answer streamed so far, at n points (the last: all of it)."""
    return [answer[: len(answer) * (i + 1) // n] for i in range(n)]


def test_a_stream_of_proposals_checks_the_originals_and_the_final_text_only(demo, checked):
    answer = recording("overdue-days")["answer"]
    proposals = [build_proposal(demo, parse_edits(text)) for text in _prefixes(answer, 6)]
    proposals = [p for p in proposals if p.files]
    assert len(proposals) >= 2
    v = Verifier(demo, run_tests=False, baseline=BaselineCache(), stream_quiet_s=60.0)
    try:
        for p in proposals[:-1]:
            v.propose(p, final=False)
            time.sleep(0.05)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
                text == fp.old_text for fp in proposals[-2].files for _, text in checked):
            time.sleep(0.01)
        streamed = list(checked)
        final = proposals[-1]
        v.propose(final, final=True)
        rep = v.wait_settled(Scope.ANSWER, timeout=30)
    finally:
        v.close(wait=True)
    originals = {(fp.path, fp.old_text) for p in proposals for fp in p.files if not fp.is_new}
    # while streaming (quiet period never reached): the original texts, nothing proposed
    assert set(streamed) <= originals and streamed
    new_texts = {(fp.path, fp.new_text) for p in proposals[:-1] for fp in p.files}
    assert not (set(checked) & (new_texts - {(fp.path, fp.new_text) for fp in final.files}))
    # the final proposal is checked, its originals once in all
    assert {(fp.path, fp.new_text) for fp in final.files} <= set(checked)
    assert sorted(checked.count(o) for o in originals) == [1] * len(originals)
    assert rep.problems is not None


def _first_half(demo):
    """The proposal of the first half of a recorded answer (some of its edits)."""
    answer = recording("overdue-days")["answer"]
    half = build_proposal(demo, parse_edits(answer[: len(answer) // 2]))
    assert half.files
    return half


def _checked_within(v: Verifier, seconds: float = 10) -> bool:
    """Whether the answer's checks report within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while v.report(Scope.ANSWER).problems is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return v.report(Scope.ANSWER).problems is not None


def test_a_proposal_left_alone_while_streaming_is_checked(demo, checked):
    half = _first_half(demo)
    v = Verifier(demo, run_tests=False, baseline=BaselineCache(), stream_quiet_s=0.1)
    try:
        v.propose(half, final=False)
        assert _checked_within(v)
    finally:
        v.close(wait=True)
    assert {(fp.path, fp.new_text) for fp in half.files} <= set(checked)


def test_after_the_stream_ends_only_the_final_proposal_is_checked(demo, checked):
    answer = recording("overdue-days")["answer"]
    half = build_proposal(demo, parse_edits(answer[: len(answer) // 2]))
    whole = build_proposal(demo, parse_edits(answer))
    v = Verifier(demo, run_tests=False, baseline=BaselineCache(), stream_quiet_s=0.05)
    try:
        v.propose(half, final=False)
        v.hold()  # the last token came: the final proposal follows its review
        time.sleep(0.4)  # the quiet period passes: still nothing of `half` is checked
        assert v.report(Scope.ANSWER).problems is None
        v.propose(whole, final=True)
        v.hold()  # too late to hold: the final proposal is in
        rep = v.wait_settled(Scope.ANSWER, timeout=30)
    finally:
        v.close(wait=True)
    assert rep.problems is not None
    assert not {(fp.path, fp.new_text) for fp in half.files} & set(checked)
    assert {(fp.path, fp.new_text) for fp in whole.files} <= set(checked)


def test_blocks_still_arriving_keep_a_streaming_proposal_unchecked(demo, checked):
    """A fast stream completes blocks faster than its proposal is rebuilt: while blocks
    arrive (edits_arriving), the proposal in hand is not checked, however long ago it came;
    once they stop, it is."""
    half = _first_half(demo)
    v = Verifier(demo, run_tests=False, baseline=BaselineCache(), stream_quiet_s=0.3)
    try:
        v.propose(half, final=False)
        for _ in range(16):  # 0.8 s of blocks arriving, one every 50 ms: ~3x the quiet period
            time.sleep(0.05)
            v.edits_arriving()
        during = list(checked)
        assert _checked_within(v)  # the stream paused: checked
    finally:
        v.close(wait=True)
    new_texts = {(fp.path, fp.new_text) for fp in half.files}
    assert not set(during) & new_texts
    assert new_texts <= set(checked)
