"""At the answer's end the diff selects the hunk to decide first: the one the user moved to
while it streamed when that hunk is still open, else the first open one (it jumped back to
the first open hunk, undoing the user's j/k)."""

from __future__ import annotations

from core.answer import AnswerRun
from tests.tui.conftest import stream_in, wait_for
from tui.app import SparkApp
from tui.widgets.diff_view import DiffView

BLOCKS = (
    ("def due_date(invoice: Invoice) -> date:\n    return add_days(invoice.issued, invoice.terms_days)\n",
     "def due_date(invoice: Invoice) -> date:\n    return add_days(invoice.issued, invoice.terms_days + 0)\n"),
    ('def format_money(amount: Decimal) -> str:\n    return f"{amount:,.2f}"\n',
     'def format_money(amount: Decimal) -> str:\n    return f"{amount:,.2f} EUR"\n'),
)


def _answer() -> str:
    return "".join(f"invoicer/report.py\n```python\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n```\n"
                   for old, new in BLOCKS)


async def _streamed(app: SparkApp, pilot) -> tuple[AnswerRun, DiffView]:
    run, diff = stream_in(app, _answer(), 60)
    await wait_for(pilot, lambda: len(diff._order) == len(BLOCKS), what="both hunks shown")
    return run, diff


async def _end(app: SparkApp, pilot, run: AnswerRun) -> None:
    run.finish("stop")
    app._stream = None
    app._after_stream(run)
    await pilot.pause()


async def test_the_hunk_moved_to_while_streaming_stays_selected(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)) as pilot:
        run, diff = await _streamed(app, pilot)
        diff.select(1)  # j while it streamed
        moved_to = diff.current_id
        await _end(app, pilot, run)
        assert moved_to in run.open and diff.current_id == moved_to


async def test_a_hunk_no_longer_open_gives_way_to_the_first_open_one(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(120, 40)) as pilot:
        run, diff = await _streamed(app, pilot)
        diff.select(1)
        run.decide(diff.current_id, accept=False)  # no longer open
        await _end(app, pilot, run)
        assert diff.current_id == run.open[0]
