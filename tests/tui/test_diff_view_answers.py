"""The diff view over real answers: streamed in chunks, it ends on the screen of a fresh view.

The recorded demo answers (core/cassettes/demo.jsonl) are fed to an AnswerRun over the demo
project in random chunks; after each chunk the view gets what the app gives it mid-stream (the
rebuilt hunks with their states and context, the block being written) and maybe a j/k. The
property (tests/tui/test_diff_view_screen.py's terminal grid): the terminal then shows what a
fresh view shows that drew the final state once, scrolled to the same place; every hunk's text
is its header and lines.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.answer import AnswerRun
from core.demo import write_demo
from core.workspace.files import Workspace
from tests.tui.test_diff_view_screen import Terminal
from tui.widgets.diff_view import DiffView

CASSETTE = Path(__file__).resolve().parents[2] / "core" / "cassettes" / "demo.jsonl"
ANSWERS = [json.loads(line)["answer"] for line in CASSETTE.read_text().splitlines() if line.strip()]


def _show(view: DiffView, run: AnswerRun) -> None:
    """What the app gives the view while an answer streams (_sync_diff and _paint)."""
    view.sync(run.hunks, {h: s.value for h, s in run.states().items()}, {}, run.hunk_context(), run.reasons)
    view.set_pending(run.pending)


async def _stream(root: Path, answer: str, cuts: list[int], moves: list[int]) -> None:
    run = AnswerRun(Workspace(root), "a prompt", "spark")
    app = Terminal()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DiffView)
        at = 0
        for n, cut in enumerate(sorted(set(cuts)) + [len(answer)]):
            if cut <= at:
                continue
            run.feed(answer[at:cut], 0)
            at = cut
            run.rebuild_proposal()
            _show(view, run)
            if n < len(moves):
                view.select(view.current + moves[n])
            await pilot.pause(0.02)
        run.finish("stop")
        run.rebuild_proposal()
        assert run.hunks, "each demo answer proposes hunks"
        _show(view, run)
        await pilot.pause(0.05)
        await pilot.pause(0.05)
        shown = [row[:] for row in app.cells]
        current, scrolled = view.current, view.scroll_y
        for hunk in run.hunks:  # the text drawn for each hunk is its header and lines
            text = view.hunk_text(hunk.id)
            assert hunk.path in text.splitlines()[0]
            assert all(line.rstrip("\n") in text for line in hunk.new_lines)
    fresh = Terminal()
    async with fresh.run_test(size=(80, 24)) as pilot:
        view = fresh.query_one(DiffView)
        _show(view, run)
        await pilot.pause(0.05)
        view.select(current)
        await pilot.pause(0.05)
        view.scroll_to(y=scrolled, animate=False, immediate=True)
        await pilot.pause(0.05)
        await pilot.pause(0.05)
        assert shown == fresh.cells


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                              HealthCheck.function_scoped_fixture])
@given(st.sampled_from(range(len(ANSWERS))), st.lists(st.integers(0, 2000), max_size=12),
       st.lists(st.sampled_from([1, -1, 2]), max_size=12))
def test_a_real_answer_streamed_in_chunks_ends_on_a_fresh_views_screen(tmp_path_factory, index, cuts, moves):
    root = write_demo(tmp_path_factory.mktemp("demo") / "demo")
    answer = ANSWERS[index]
    asyncio.run(_stream(root, answer, [c % (len(answer) + 1) for c in cuts], moves))
