"""Variations driven as a person would, against the real embedded core and demo workspace.

The replay backend answers one prompt with one recording, so all N answers are equal here:
these tests check the mechanics (N streams on one connection, diffs, review, take, drop).
"""

from __future__ import annotations

import io
import json

from rich.console import Console

from core.session import Workstation
from tests.tui.conftest import ScreenHost, wait_for
from tui.app import SparkApp
from tui.race_command import race_messages
from tui.screens.variations import VariationChoice, VariationsScreen, grid_columns
from tui.widgets.variation_pane import VariationPane

PROMPT = "format_money should show negative amounts in parentheses"



def plain(widget) -> str:
    """What a Static shows, as plain text (its content may be a Rich Group)."""
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(widget.content)
    return console.export_text()



async def test_three_variations_stream_and_2_takes_the_second(client, demo_root):
    station = Workstation(demo_root)
    app = ScreenHost(lambda: VariationsScreen(client, PROMPT, race_messages(PROMPT), 3,
                                        "spark", station))
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, VariationsScreen)
        assert len(screen.query(VariationPane)) == 3
        await wait_for(pilot, lambda: screen.settled, what="three answers and their reviews")
        await pilot.pause(0.1)
        vs = screen.variations.variations
        assert all(v.done and v.tokens > 0 for v in vs)
        # three distinct streams on the one connection
        assert len({v.request_id for v in vs}) == 3
        # each answer was diffed against the workspace and reviewed by the detectors
        assert all(run.hunks for run in screen.runs)
        assert all(review is not None for review in screen.reviews)
        cost = str(screen.query_one("#vary-cost").render())
        assert "3 streams:" in cost and "tok/s each" in cost
        stats = str(screen.query_one("#vary-2 .variation-stats").render())
        assert "done" in stats and "tok" in stats and "slop" in stats and "dups" in stats
        body = plain(screen.query_one("#vary-2 .variation-body"))
        assert "invoicer/report.py" in body
        assert "ranking hint" in str(screen.query_one("#vary-banner").render())
        await pilot.press("2")
        await wait_for(pilot, lambda: app.results, what="the screen to dismiss")
    assert app.results == [VariationChoice("spark", PROMPT, vs[1].text, 1)]
    assert screen.variations.chosen == 1 and screen.variations.dropped == [0, 2]
    # every variation is in the session record as a prompt and an answer
    events = [json.loads(line) for line in station.recorder.path.read_text().splitlines()]
    asked = [e for e in events if e["type"] == "prompt"]
    assert [e["kind"] for e in asked] == ["variation"] * 3
    assert sum(e["type"] == "answer_done" for e in events) == 3


async def test_escape_cancels_every_stream_and_closes(client, demo_root):
    app = ScreenHost(lambda: VariationsScreen(client, PROMPT, race_messages(PROMPT), 4, "base",
                                        Workstation(demo_root)))
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(screen._streams) == 4 and any(
            v.tokens for v in screen.variations.variations), what="base to start writing")
        ids = [s.id for s in screen._streams.values()]
        await pilot.press("1")                    # still writing: refused
        await pilot.pause(0.05)
        assert app.results == [] and app.screen is screen
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.results, what="the screen to close")
        await wait_for(pilot, lambda: not any(i in client._streams for i in ids), timeout=2.0,
                       what="the core to cancel all four")
    assert app.results == [None]


async def test_without_a_station_the_panes_show_the_raw_answers(client):
    app = ScreenHost(lambda: VariationsScreen(client, PROMPT, race_messages(PROMPT), 2))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.settled, what="both answers")
        await pilot.pause(0.05)
        assert screen.runs == [None, None]
        assert "SEARCH" in plain(screen.query_one("#vary-1 .variation-body"))
        await pilot.press("enter")                # the focused pane is the first
        await wait_for(pilot, lambda: app.results, what="the screen to dismiss")
    assert app.results[0].index == 0


def test_grid_keeps_panes_readable():
    assert [grid_columns(n) for n in (1, 2, 3, 4, 5, 9, 10, 16)] == [1, 2, 2, 2, 3, 3, 4, 4]


async def test_workstation_loads_the_taken_variation_into_the_loop(demo_root, core_url):
    from tui.app import SparkApp
    from tui.screens.variations import open_variations

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        screen = await open_variations(app, PROMPT, 2)
        await wait_for(pilot, lambda: screen.settled, what="both variations")
        await pilot.press("2")
        await wait_for(pilot, lambda: app.answer is not None and app.answer.finished
                       and app.settled, what="the variation in the main loop")
        assert not isinstance(app.screen, VariationsScreen)
        assert app.answer.text == screen.variations.variations[1].text
        assert app.answer.hunks


def test_vary_command_rejects_bad_input(tmp_path, capsys):
    from tui.cli import main as spark_main

    assert spark_main(["vary", "0", "x", str(tmp_path)]) == 2
    assert "N must be 1..16" in capsys.readouterr().err
    assert spark_main(["vary", "3", "  ", str(tmp_path)]) == 2
    assert "need a prompt" in capsys.readouterr().err
    assert spark_main(["vary", "3", "x", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


async def test_spark_vary_opens_the_workstation_on_the_variations(demo_root, core_url,
                                                                   monkeypatch):
    """`spark vary 2 PROMPT PATH`: the command's hook pushes the screen once connected."""
    from tui import discipline_commands
    from tui.cli import main as spark_main

    opened = {}
    monkeypatch.setattr(discipline_commands, "_open",
                        lambda root, args, on_ready: opened.update(root=root, hook=on_ready))
    assert spark_main(["vary", "2", PROMPT, str(demo_root)]) in (0, None)
    assert opened["root"] == demo_root.resolve()
    app = SparkApp(demo_root, core_url, on_ready=opened["hook"])
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, VariationsScreen),
                       what="the variations screen")
        assert app.screen.n == 2 and app.screen.prompt == PROMPT
        await pilot.press("escape")
