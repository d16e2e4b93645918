"""The status bar's live numbers while an answer streams: the first token's at once, then at
most every STATUS_EVERY_S (each change re-rendered the bar in every frame), never lost (a
later tick shows the last ones), and the final ones as soon as the stream ends."""

from __future__ import annotations

from core.answer import AnswerRun
from tui import app as app_module
from tui.app import SparkApp
from tui.widgets.status import StatusBar


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_live_numbers_first_at_once_then_at_most_every_interval_and_final_at_the_end(
        demo_root, core_url, monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(app_module, "_clock", clock.monotonic)
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)):
        status = app.query_one(StatusBar)
        run = AnswerRun(app.workspace, "a prompt", "spark")
        app._show_new_answer(run)
        app._stream = object()  # streaming

        def delta(tokens: int, after_s: float) -> None:
            clock.now += after_s
            run.feed("word " * tokens, tokens)
            app._dirty = True
            app._paint()

        delta(3, 0.0)
        assert status.tokens == 3, "the first token's numbers at once"
        delta(4, 0.03)
        delta(5, 0.03)
        assert status.tokens == 3, "not again within the interval"
        clock.now += app_module.STATUS_EVERY_S
        app._paint()  # a tick with no new text
        assert status.tokens == 12, "the last numbers, a tick later"
        app._paint()
        delta(2, 0.01)
        assert status.tokens == 12
        app._stream = None  # the stream ended
        app._dirty = True
        app._paint()
        assert status.tokens == run.stats.tokens == 14, "the final numbers at once"


async def test_the_block_written_last_stays_until_the_final_hunks_replace_it(demo_root, core_url):
    """Hidden as soon as the answer ended, the block being written cost a layout pass of the
    whole diff in the frame after the last token; it goes in the frame that draws the final
    hunks instead (never left on screen once the answer is shown)."""
    from tui.widgets.diff_view import DiffView

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)) as pilot:
        diff = app.query_one(DiffView)
        run = AnswerRun(app.workspace, "a prompt", "spark")
        app._show_new_answer(run)
        app._stream = object()
        run.feed("invoicer/report.py\n```python\n<<<<<<< SEARCH\ndef format_money(amount: Decimal) -> str:\n", 20)
        app._dirty = True
        app._paint()
        assert run.pending is not None and diff.pending_text, "the block being written is shown"
        run.feed('    return f"{amount:,.2f}"\n=======\ndef format_money(amount: Decimal) -> str:\n'
                 '    return f"{amount:,.2f} EUR"\n>>>>>>> REPLACE\n```\n', 20)
        run.finish("stop")
        app._stream = None
        app._dirty = True
        app._paint()
        await pilot.pause()
        assert run.pending is None and diff.pending_text, "kept until the final hunks are drawn"
        app._after_stream(run)
        await pilot.pause()
        assert diff.pending_text is None and app.settled
