"""An answer's end, cut short by a new prompt: the answer the user saw is still recorded once.

The answer worker is exclusive: a prompt sent while an answer ends (its final rebuild, its
final review, the frame that shows it, its record) cancels that worker. Whatever it was
doing, the answer that was on screen must reach the session's record exactly once (the
report's "answers", the conversation, the session counters), and the new answer too; and
the new prompt goes out with the answer it replaced in its conversation (the cancelled
worker folds it before the new one assembles its request).

Each point of the end is held by a gate (a thread waiting on an event, or the frame's await)
while the test sends the next prompt the way a user does, so the interleaving is the one
under test, not a matter of timing.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from core.answer import AnswerRun
from core.report.recorder import load_events
from core.workstation import ReviewSuperseded
from tests.tui.conftest import wait_for
from tui.app import SparkApp

FIRST = "format_money should show negative amounts in parentheses like accountants do"
SECOND = "Add docstrings to the functions"
POINTS = ("build", "review", "frame", "record")


class _EndGate:
    """Holds the first answer at one point of its end until released."""

    def __init__(self, monkeypatch, app: SparkApp, point: str) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.final_review: list[str] = []  # how the first answer's final review ended

        def hold(run: AnswerRun) -> None:
            if run.prompt == FIRST and not self.entered.is_set():
                self.entered.set()
                assert self.release.wait(20), "the test did not release the answer's end"

        if point == "build":  # the final rebuild diffs the finished answer
            build = AnswerRun.rebuild_proposal

            def gated_build(run: AnswerRun):
                if run.finished:
                    hold(run)
                return build(run)

            monkeypatch.setattr(AnswerRun, "rebuild_proposal", gated_build)
            # no pass while it streams: one in flight at the end would be the final one
            # itself (built before `finished`), and this point would never come
            monkeypatch.setattr(app, "_request_rebuild", lambda: None)
        elif point == "review":  # the final state's review
            review = app.station.review

            def gated_review(run, **kwargs):
                if not (run.finished and run.prompt == FIRST):
                    return review(run, **kwargs)
                hold(run)
                try:
                    done = review(run, **kwargs)
                except ReviewSuperseded:
                    self.final_review.append("gave way")
                    raise
                self.final_review.append("ran to its end")
                return done

            monkeypatch.setattr(app.station, "review", gated_review)
        elif point == "frame":  # the frame that shows the final state
            frame_drawn = app._frame_drawn

            async def gated_frame(timeout: float = 0.5) -> None:
                if app.answer is not None and app.answer.prompt == FIRST:
                    await asyncio.to_thread(hold, app.answer)
                await frame_drawn(timeout)

            monkeypatch.setattr(app, "_frame_drawn", gated_frame)
        else:  # the record itself (a worker thread)
            record = app.station.record_answer

            def gated_record(run, *args, **kwargs):
                hold(run)
                return record(run, *args, **kwargs)

            monkeypatch.setattr(app.station, "record_answer", gated_record)


async def _type_and_send(pilot, prompt: str) -> None:
    pilot.app.query_one("#prompt").value = prompt
    await pilot.click("#prompt")
    await pilot.press("enter")


def _recorded(app: SparkApp, run: AnswerRun, kind: str = "answer_done") -> int:
    events, _ = load_events(app.station.recorder.path)
    return sum(1 for e in events if e.get("type") == kind and e.get("request_id") == run.request_id)


@pytest.mark.parametrize("point", POINTS)
async def test_an_answer_replaced_at_its_end_is_recorded_once(demo_root, core_url, monkeypatch, point):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        gate = _EndGate(monkeypatch, app, point)
        sent_after: list[list[str]] = []  # the earlier prompts in the conversation each request sends
        request = app.station.request

        def seen_request(run, *args, **kwargs):
            sent_after.append([turn.prompt for turn in app.station.context.history])
            return request(run, *args, **kwargs)

        monkeypatch.setattr(app.station, "request", seen_request)
        await _type_and_send(pilot, FIRST)
        await wait_for(pilot, lambda: app.answer is not None and app.answer.prompt == FIRST, what="the answer")
        first = app.answer
        assert await asyncio.to_thread(gate.entered.wait, 20), f"the answer's end did not reach {point}"
        assert first.finished and (first.hunks or point == "build"), "on screen, finished, its hunks drawn"
        await _type_and_send(pilot, SECOND)  # a new prompt while the first answer ends
        await wait_for(pilot, lambda: app.answer is not first, what="the new answer")
        gate.release.set()
        second = app.answer
        await wait_for(pilot, lambda: app.settled and _recorded(app, second) >= 1, what="the new answer's record")
        await wait_for(pilot, lambda: _recorded(app, first) >= 1, timeout=5, what="the first answer's record")
        await pilot.pause(0.3)  # (a second record of either would be written by now)
        assert _recorded(app, first) == 1, f"replaced at its {point}: recorded {_recorded(app, first)} times"
        assert _recorded(app, second) == 1
        # its review with it: the final one once that was in (after it, the frame and the record)
        reviews = _recorded(app, first, "review")
        assert (reviews == 1) if point in ("frame", "record") else (reviews <= 1), f"{reviews} reviews recorded"
        assert app.station.answers.count(first) == 1 and app.station.answers.count(second) == 1
        if point == "review":  # its findings would go nowhere: it gave way to the new answer
            assert gate.final_review == ["gave way"], gate.final_review
        turns = [turn for turn in app.station.context.history if FIRST in turn.prompt]
        assert len(turns) == 1, "the first answer is in the conversation once"
        assert len(sent_after) == 2 and any(FIRST in p for p in sent_after[1]), (
            f"the new prompt went out without the answer it replaced: {sent_after}")
