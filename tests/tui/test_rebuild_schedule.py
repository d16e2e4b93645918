"""When the last token overtakes a rebuild pass: what that pass still does.

A pass begins while the answer streams; the answer ends while it diffs. Built without the
answer's last edits, its state is replaced at once by the final pass: it must not highlight
and record hunks for a screen that never shows them (80-110 ms of GIL after the last token,
measured). Built with every edit, it is the final state: its review runs in the same
thread call, with the highlighting beside it, as the final pass's does. The keys that decide
wait for the final review (the accept policy reads its findings).

The pass is held inside `rebuild_proposal` (a gate) while the test finishes the answer, so
the interleaving is the one under test, not a matter of timing.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections import OrderedDict

from core.answer import AnswerRun
from tui import app as app_module
from tui.app import SparkApp
from tui.widgets.diff_view import DiffView

BLOCK_REPORT = (
    "invoicer/report.py\n```python\n<<<<<<< SEARCH\n"
    "def format_money(amount: Decimal) -> str:\n    return f\"{amount:,.2f}\"\n=======\n"
    "def format_money(amount: Decimal) -> str:\n    return f\"{amount:,.2f} EUR\"\n"
    ">>>>>>> REPLACE\n```\n"
)
BLOCK_DATES = (
    "invoicer/dates.py\n```python\n<<<<<<< SEARCH\n"
    "def days_between(start: date, end: date) -> int:\n=======\n"
    "def days_between(start: date, end: date, /) -> int:\n"
    ">>>>>>> REPLACE\n```\n"
)


class _Gate:
    """Holds the first `rebuild_proposal`, once built, until released; counts every build, highlighting
    and review with the number of edits it saw and its thread."""

    def __init__(self, monkeypatch, app: SparkApp) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.builds: list[int] = []
        self.warmed: list[tuple[int, str]] = []  # (hunks highlighted, thread name)
        self.reviews: list[tuple[int, str]] = []  # (edits in the reviewed state, thread name)
        build, warm, review = AnswerRun.rebuild_proposal, app_module.warm_bodies, app.station.review

        def gated_build(run: AnswerRun) -> None:
            self.builds.append(len(run.edits))
            build(run)
            if len(self.builds) == 1:  # built: the answer goes on while it returns
                self.entered.set()
                assert self.release.wait(10), "the test did not release the pass"

        def counted_warm(hunks, *args, **kwargs) -> None:
            self.warmed.append((len(hunks), threading.current_thread().name))
            warm(hunks, *args, **kwargs)

        def counted_review(run, **kwargs):
            self.reviews.append((len(run.edits), threading.current_thread().name))
            return review(run, **kwargs)

        monkeypatch.setattr(AnswerRun, "rebuild_proposal", gated_build)
        monkeypatch.setattr(app_module, "warm_bodies", counted_warm)
        monkeypatch.setattr(app.station, "review", counted_review)


async def _asked_to_give_way(app: SparkApp) -> None:
    """Until the final rebuild has asked the pass in flight to give way."""
    for _ in range(400):
        if app._rebuild_needed:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the final rebuild did not ask the pass in flight to give way")


async def _overtaken(app: SparkApp, gate: _Gate, first: str, rest: str) -> AnswerRun:
    """Stream `first`, let a pass begin on it, then the rest and the answer's end arrive
    while it diffs; the final rebuild is asked for as the app asks for it."""
    run = AnswerRun(app.workspace, "two edits", "spark")
    app._show_new_answer(run)
    run.feed(first, 10)
    app._request_rebuild()
    assert await asyncio.to_thread(gate.entered.wait, 10), "the pass did not begin"
    run.feed(rest, 10)
    run.finish("stop")
    final = asyncio.create_task(app._rebuild_now(final=True))
    await asyncio.sleep(0.05)  # the final rebuild has asked the pass in flight to give way
    gate.release.set()
    await asyncio.wait_for(final, 20)
    return run


async def test_a_pass_without_the_last_edits_leaves_the_drawing_to_the_final_pass(demo_root, core_url,
                                                                                 monkeypatch):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)):
        gate = _Gate(monkeypatch, app)
        run = await _overtaken(app, gate, BLOCK_REPORT, BLOCK_DATES)
        assert gate.builds == [1, 2]  # the overtaken pass, then the final one
        assert gate.warmed == [(2, gate.warmed[0][1])], "only the final state's hunks are highlighted"
        assert gate.reviews and all(edits == 2 for edits, _ in gate.reviews), "only the final state is reviewed"
        assert len(run.hunks) == 2 and app._final_rebuilt is run and app.review is not None


async def test_a_pass_with_every_edit_is_the_final_one_and_reviewed_in_its_own_call(demo_root, core_url,
                                                                                    monkeypatch):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)):
        gate = _Gate(monkeypatch, app)
        run = await _overtaken(app, gate, BLOCK_REPORT + BLOCK_DATES, "\nDone.\n")
        assert gate.builds == [2], "no second pass: the one in flight had every edit"
        assert gate.reviews == [(2, gate.reviews[0][1])], "reviewed once"
        # the final state's highlighting and record run beside its review (the final pass's
        # way), not before it in the building thread
        assert [(n, name.startswith("rebuild-side")) for n, name in gate.warmed] == [(2, True)]
        assert len(run.hunks) == 2 and app._final_rebuilt is run and app.review is not None


async def test_the_final_hunks_are_highlighted_off_the_ui_thread_for_the_theme_drawn(demo_root, core_url,
                                                                                    monkeypatch):
    """The final pass highlights its hunks on a side thread beside its review; the cache is
    kept per theme, so that thread must convert under the app's theme, or the final sync
    converts every hunk again on the UI thread."""
    from tui.widgets import diff_render

    converted: list[str] = []
    cached_body, content_of = diff_render.cached_body, diff_render._content_of

    def counted(key):
        converted.append(threading.current_thread().name)
        return cached_body(key)

    def counted_tokens(text, spans):  # (the lexer's tokens made into content: body_content's way)
        if sys._getframe(1).f_code.co_name != "head_content":  # a header's one line is drawn's
            converted.append(threading.current_thread().name)
        return content_of(text, spans)

    monkeypatch.setattr(diff_render, "cached_body", counted)
    monkeypatch.setattr(diff_render, "_content_of", counted_tokens)
    monkeypatch.setattr(diff_render, "_CONTENT", OrderedDict())  # nothing converted yet (other tests)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)) as pilot:
        run = AnswerRun(app.workspace, "two edits", "spark")
        app._show_new_answer(run)
        run.feed(BLOCK_REPORT + BLOCK_DATES, 20)
        run.finish("stop")
        await asyncio.wait_for(app._rebuild_now(final=True), 20)
        await pilot.pause()
        assert len(app.query_one(DiffView).drawn_hunks) == len(run.hunks) == 2
    assert converted and "MainThread" not in converted, converted


async def test_decisions_wait_for_the_final_review(demo_root, core_url, monkeypatch):
    """Between the last token and the final review the screen shows hunks (those drawn while
    the answer streamed) whose findings are an earlier state's, or none: a key decides
    nothing until the answer is fully shown, and is not lost: it applies then, to the hunk
    selected when it was pressed."""
    # the dwell guard off: a key right after the draw is what is under test, not reading speed
    app = SparkApp(demo_root, core_url, guards={"guards": {"dwell_lines_per_second": 0}})
    async with app.run_test(size=(120, 40)):
        started, release = threading.Event(), threading.Event()
        review = app.station.review

        def held_review(run, **kwargs):
            if run.finished:
                started.set()
                assert release.wait(10), "the test did not release the review"
            return review(run, **kwargs)

        monkeypatch.setattr(app.station, "review", held_review)
        run = AnswerRun(app.workspace, "two edits", "spark")
        app._show_new_answer(run)
        run.feed(BLOCK_REPORT + BLOCK_DATES, 20)
        await app._rebuild_now()  # drawn while streaming: the hunks are on screen, reviewed
        assert len(app.query_one(DiffView).drawn_hunks) == 2 and app.review is not None
        run.finish("stop")
        final = asyncio.create_task(app._rebuild_now(final=True))
        assert await asyncio.to_thread(started.wait, 10), "the final review did not start"
        diff = app.query_one(DiffView)
        diff.select(1)
        pressed_on = diff.current_id
        app.action_accept()  # as the key does
        assert run.undecided == [h.id for h in run.hunks] and not app.settled
        release.set()
        await asyncio.wait_for(final, 20)
        app._after_stream(run)
        assert app.settled and app._final_rebuilt is run
        assert run.undecided == [h.id for h in run.hunks if h.id != pressed_on], "applied, to its hunk"


async def test_a_queued_decision_for_a_hunk_gone_at_the_end_is_dropped_and_said(demo_root, core_url):
    """The key pressed before the final review names a hunk the final state no longer has
    open: nothing is decided (not another hunk), and the user is told to decide again."""
    app = SparkApp(demo_root, core_url, guards={"guards": {"dwell_lines_per_second": 0}})
    async with app.run_test(size=(120, 40)):
        run = AnswerRun(app.workspace, "two edits", "spark")
        app._show_new_answer(run)
        run.feed(BLOCK_REPORT + BLOCK_DATES, 20)
        await app._rebuild_now()
        run.finish("stop")
        app.action_reject()  # before the final review: queued
        assert app._queued_decision is not None and not app.settled
        gone = app._queued_decision[4]
        run.decide(gone, accept=False)  # no longer open when the review is in
        said: list[str] = []
        app.notify = lambda message, **kwargs: said.append(message)  # type: ignore[method-assign]
        app._after_stream(run)
        assert app._queued_decision is None
        assert [h.id for h in run.hunks if h.id != gone] == run.undecided
        assert any("decide again" in message for message in said)


async def test_a_review_the_answers_end_supersedes_hands_over_to_the_final_pass_in_its_thread(
        demo_root, core_url, monkeypatch):
    """The usual case at the last token: the pass in flight is reviewing an earlier state.
    It gives way, and the final pass starts in the same thread call, not after a hop
    through the UI loop (which waited for the frame in progress there)."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)):
        builds: list[tuple[int, str]] = []
        reviews: list[tuple[int, bool, str]] = []
        started, release = threading.Event(), threading.Event()
        build, review = AnswerRun.rebuild_proposal, app.station.review

        def counted_build(run: AnswerRun) -> None:
            builds.append((len(run.edits), threading.current_thread().name))
            build(run)

        def held_review(run, **kwargs):
            reviews.append((len(run.edits), run.finished, threading.current_thread().name))
            if len(reviews) == 1:
                started.set()
                assert release.wait(10), "the test did not release the review"
            return review(run, **kwargs)

        monkeypatch.setattr(AnswerRun, "rebuild_proposal", counted_build)
        monkeypatch.setattr(app.station, "review", held_review)
        run = AnswerRun(app.workspace, "two edits", "spark")
        app._show_new_answer(run)
        run.feed(BLOCK_REPORT, 10)
        app._request_rebuild()
        assert await asyncio.to_thread(started.wait, 10), "the first review did not start"
        run.feed(BLOCK_DATES, 10)
        run.finish("stop")
        final = asyncio.create_task(app._rebuild_now(final=True))
        await _asked_to_give_way(app)
        release.set()
        await asyncio.wait_for(final, 20)
        assert [edits for edits, _ in builds] == [1, 2]
        assert [(edits, finished) for edits, finished, _ in reviews] == [(1, False), (2, True)]
        superseded_in = reviews[0][2]
        assert builds[1][1] == superseded_in, "the final pass was built where the superseded review ran"
        assert len(run.hunks) == 2 and app._final_rebuilt is run and app.review is not None


BLOCK_LOADER = (
    "invoicer/loader.py\n```python\n<<<<<<< SEARCH\n"
    "def load_invoices(path: Path) -> list[Invoice]:\n=======\n"
    "def load_invoices(path: Path, /) -> list[Invoice]:\n"
    ">>>>>>> REPLACE\n```\n"
)


async def test_a_pass_highlighting_when_the_answer_ends_stops_and_the_final_pass_follows(
        demo_root, core_url, monkeypatch):
    """A pass's highlighting of an earlier state (~2 ms a hunk, 40 hunks) stops when the
    answer ends: the final pass, next in the same thread, highlights what it draws."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)):
        monkeypatch.setattr(app_module, "_WARM_SLICE", 1, raising=False)  # one hunk between looks
        builds: list[tuple[int, str]] = []
        warmed: list[tuple[int, str]] = []
        started, release = threading.Event(), threading.Event()
        build, warm = AnswerRun.rebuild_proposal, app_module.warm_bodies

        def counted_build(run: AnswerRun) -> None:
            builds.append((len(run.edits), threading.current_thread().name))
            build(run)

        def held_warm(hunks, *args, **kwargs) -> None:
            warmed.append((len(hunks), threading.current_thread().name))
            if len(warmed) == 1:
                started.set()
                assert release.wait(10), "the test did not release the highlighting"
            warm(hunks, *args, **kwargs)

        monkeypatch.setattr(AnswerRun, "rebuild_proposal", counted_build)
        monkeypatch.setattr(app_module, "warm_bodies", held_warm)
        run = AnswerRun(app.workspace, "three edits", "spark")
        app._show_new_answer(run)
        run.feed(BLOCK_REPORT + BLOCK_DATES, 20)
        app._request_rebuild()
        assert await asyncio.to_thread(started.wait, 10), "the highlighting did not start"
        run.feed(BLOCK_LOADER, 10)
        run.finish("stop")
        final = asyncio.create_task(app._rebuild_now(final=True))
        await _asked_to_give_way(app)
        release.set()
        await asyncio.wait_for(final, 20)
        assert [edits for edits, _ in builds] == [2, 3]
        mid_thread = warmed[0][1]
        assert builds[1][1] == mid_thread, "the final pass followed in the same thread"
        # the earlier state's second hunk was never highlighted; the final pass's were, beside its review
        assert warmed[0][0] == 1 and all(name.startswith("rebuild-side") for _, name in warmed[1:])
        assert sum(n for n, _ in warmed[1:]) == 3 and len(run.hunks) == 3 and app._final_rebuilt is run


async def test_the_final_review_is_not_superseded_by_a_request_racing_the_answers_end(
        demo_root, core_url, monkeypatch):
    """A request raised while the final state is reviewed (the final rebuild's own check can
    race the pass that already took the end over) is one that state covers: the review
    goes on and no pass follows (a superseded final review waited for the UI loop's next
    turn, 130 ms behind a frame once, before the same state was built and reviewed again)."""
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)):
        builds: list[int] = []
        outcomes: list[str] = []
        build, review = AnswerRun.rebuild_proposal, app.station.review

        def counted_build(run: AnswerRun) -> None:
            builds.append(len(run.edits))
            build(run)

        def racing_review(run, **kwargs):
            if not outcomes:
                app._rebuild_needed = True  # the request that races the end
            try:
                result = review(run, **kwargs)
            except Exception as exc:
                outcomes.append(type(exc).__name__)
                raise
            outcomes.append("reviewed")
            return result

        monkeypatch.setattr(AnswerRun, "rebuild_proposal", counted_build)
        monkeypatch.setattr(app.station, "review", racing_review)
        run = AnswerRun(app.workspace, "two edits", "spark")
        app._show_new_answer(run)
        run.feed(BLOCK_REPORT + BLOCK_DATES, 20)
        run.finish("stop")
        await asyncio.wait_for(app._rebuild_now(final=True), 20)
        assert builds == [2] and outcomes == ["reviewed"], (builds, outcomes)
        assert app._final_rebuilt is run and app.review is not None and not app._rebuild_needed
