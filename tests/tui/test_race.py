"""The split-pane race driven as a person would, against the real embedded core.

Answers are capped with max_tokens so base (~65 tok/s in the built-in profiles) finishes
in about a second; spark still wins by a wide margin, which is the point of the race.
"""

from __future__ import annotations

import pytest

from core.race import Prediction, Race, RaceResult
from tests.tui.conftest import ScreenHost, wait_for
from tui.cli import main as spark_main
from tui.race_command import make_race_app, race_messages
from tui.screens.race import RaceScreen

PROMPT = "add docstrings to the functions in report.py"
CAP = 40




def _screen(client, profiles=("spark", "base"), max_tokens=CAP):
    return lambda: RaceScreen(client, PROMPT, race_messages(PROMPT), profiles,
                              max_tokens=max_tokens)


async def test_spark_wins_and_1_takes_its_answer(client):
    app = ScreenHost(_screen(client))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, RaceScreen)
        race = screen.race
        await wait_for(pilot, lambda: race.done, what="both lanes to finish")
        await pilot.pause(0.1)
        spark, base = race.lane("spark"), race.lane("base")
        assert race.winner is spark
        assert race.ratio() > 1
        assert spark.completed and base.reason == "length" and base.stats.tokens == CAP
        assert spark.ttft_ms() < base.ttft_ms()
        banner = str(screen.query_one("#race-banner").render())
        assert banner.startswith("spark finished in ") and "x faster than base" in banner
        # the base pane shows the model's forecast for a capped answer
        pred = Prediction.from_profile(client.profile("base"))
        stats = str(screen.query_one("#race-lane-2 .race-stats").render())
        assert f"model {pred.finish_s(CAP):,.2f} s" in stats
        assert "TTFT" in stats and "tok/s" in stats
        await pilot.press("1")
        await wait_for(pilot, lambda: app.results, what="the race to dismiss")
    result = app.results[0]
    assert result == RaceResult("spark", PROMPT, spark.text)
    assert "SEARCH" in result.text or "```" in result.text


async def test_taking_a_running_answer_is_refused_then_2_takes_base(client):
    # base capped at 200 tokens (~3 s at ~65 tok/s), so it is still running when "2" is
    # pressed even on a loaded machine (at CAP it could finish between the check and the key)
    app = ScreenHost(_screen(client, max_tokens=200))
    async with app.run_test(size=(140, 40)) as pilot:
        race = app.screen.race
        await wait_for(pilot, lambda: race.lane("spark").finished, what="spark to finish")
        assert not race.lane("base").finished
        await pilot.press("2")
        await pilot.pause(0.05)
        assert app.results == [] and isinstance(app.screen, RaceScreen)
        await wait_for(pilot, lambda: race.done, what="base to finish")
        await pilot.press("2")
        await wait_for(pilot, lambda: app.results, what="the race to dismiss")
    assert app.results[0].profile == "base"
    assert app.results[0].text == race.lane("base").text


async def test_arrows_and_enter_take_the_focused_pane(client):
    app = ScreenHost(_screen(client))
    async with app.run_test(size=(140, 40)) as pilot:
        race = app.screen.race
        await wait_for(pilot, lambda: race.done, what="both lanes to finish")
        await pilot.press("right")
        assert app.focused.id == "race-lane-2"
        await pilot.press("left")
        assert app.focused.id == "race-lane-1"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.results, what="the race to dismiss")
    assert app.results[0].profile == "spark"


async def test_escape_cancels_the_running_lane_and_closes(client):
    app = ScreenHost(_screen(client, max_tokens=None))      # base alone would take seconds
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        race = screen.race
        await wait_for(pilot, lambda: race.lane("spark").finished, what="spark to finish")
        base_stream = screen._streams["base"]
        assert base_stream.id in client._streams
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.results, what="the race to close")
        # the core ended base's stream promptly (its done frame removed it from the client)
        await wait_for(pilot, lambda: base_stream.id not in client._streams, timeout=2.0,
                       what="the core to cancel base")
    assert app.results == [None]


async def test_a_failing_lane_loses_and_the_other_wins(client):
    app = ScreenHost(_screen(client, profiles=("spark", "nosuch")))
    async with app.run_test(size=(140, 40)) as pilot:
        race = app.screen.race
        await wait_for(pilot, lambda: race.done, what="both lanes to end")
        await pilot.pause(0.05)
        assert race.winner is race.lane("spark")
        assert race.lane("nosuch").reason == "error" and race.lane("nosuch").error
        assert race.ratio() is None
        assert "nosuch" in str(app.screen.query_one("#race-banner").render())
        await pilot.press("2")
        await pilot.pause(0.05)
        assert app.results == []          # nothing to take from a failed lane


async def test_footer_shows_the_race_keys(client):
    app = ScreenHost(_screen(client))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause(0.05)
        shown = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"1", "2", "enter", "escape"} <= shown
        await pilot.press("escape")


async def test_race_app_from_the_command_exits_with_the_taken_answer(core_url):
    app = make_race_app(core_url, PROMPT, ("spark", "base"), max_tokens=CAP)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RaceScreen), what="the race")
        race = app.screen.race
        await wait_for(pilot, lambda: race.done, what="both lanes to finish")
        await pilot.press("1")
        await pilot.pause(0.1)
    assert app.return_value == RaceResult("spark", PROMPT, race.lane("spark").text)


async def test_race_app_reports_an_unknown_profile(core_url):
    app = make_race_app(core_url, PROMPT, ("spark", "nosuch"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
    assert app.failure and "nosuch" in app.failure and "spark" in app.failure
    assert app.return_value is None


def test_race_command_rejects_bad_input(tmp_path, capsys):
    assert spark_main(["race", "x", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        spark_main(["race", "x", "--profiles", "spark,spark"])
    assert exc.value.code == 2
    assert "two different profile names" in capsys.readouterr().err
    assert spark_main(["race", "   ", str(tmp_path)]) == 2
    assert "needs a prompt" in capsys.readouterr().err
    assert spark_main(["race", "x", str(tmp_path), "--profiles", "base,spark"]) == 2
    assert "--print" in capsys.readouterr().err
    assert spark_main(["race", "x", str(tmp_path), "--print", "--max-tokens", "0"]) == 2
    assert "--max-tokens must be positive" in capsys.readouterr().err


async def test_workstation_opens_on_the_race_and_1_loads_spark_into_the_loop(demo_root, core_url):
    """`spark race` without --print: the lead's app pushes this screen from `race_prompt`."""
    from tui.app import SparkApp

    app = SparkApp(demo_root, core_url, race_prompt=PROMPT)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RaceScreen), what="the race")
        race = app.screen.race
        await wait_for(pilot, lambda: race.lane("spark").finished, what="spark to finish")
        await pilot.press("1")                       # base is still writing: it is cancelled
        await wait_for(pilot, lambda: app.answer is not None and app.answer.profile == "spark"
                       and app.answer.finished, what="spark's answer in the main loop")
        assert not isinstance(app.screen, RaceScreen)
        assert app.answer.text == race.lane("spark").text


async def test_a_finished_answer_reads_from_the_top_and_scrolls_with_keys():
    race = _finished_race(repeat=30)                  # longer than the pane
    app = ScreenHost(lambda: RaceScreen(None, race.prompt, [], race=race))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause(0.1)
        body = app.screen.query_one("#race-lane-1 VerticalScroll")
        assert body.max_scroll_y > 0 and body.scroll_y == 0
        await pilot.press("pagedown")
        await pilot.pause(0.05)
        assert body.scroll_y == 10
        await pilot.press("up")
        await pilot.pause(0.05)
        assert body.scroll_y == 9


def _finished_race(repeat: int = 1) -> Race:
    """A race with fixed numbers on a fake clock: the snapshot has no live timer in it."""
    now = [0.0]
    race = Race("add docstrings to report.py", ("spark", "base"), clock=lambda: now[0],
                predicted={"spark": Prediction(80.0, 1000.0, "pinned"),
                           "base": Prediction(600.0, 65.0, "pinned")})
    race.start()
    answer = ('report.py\n```python\n<<<<<<< SEARCH\ndef total(rows):\n=======\n'
              'def total(rows):\n    """Sum the amounts of `rows`."""\n>>>>>>> REPLACE\n```\n') * repeat
    now[0] = 0.081
    race.feed("spark", answer[:40], 10)
    now[0] = 0.40
    race.feed("spark", answer[40:], 390)
    race.finish("spark", "stop")
    now[0] = 0.602
    race.feed("base", answer[:40], 10)
    now[0] = 6.08
    race.feed("base", answer[40:], 390)
    race.finish("base", "stop")
    return race


def test_race_screen_snapshot(snap_compare):
    race = _finished_race()
    app = ScreenHost(lambda: RaceScreen(None, race.prompt, [], race=race))
    assert snap_compare(app, terminal_size=(120, 30))
