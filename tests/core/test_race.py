"""Race bookkeeping on a fake clock: winner, ratio, predictions, failures."""

from __future__ import annotations

import pytest

from core.race import Prediction, Race


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _race(clock: Clock, **kw) -> Race:
    predicted = {"spark": Prediction(80.0, 1000.0), "base": Prediction(600.0, 65.0)}
    race = Race("add docstrings", ("spark", "base"), predicted=predicted, clock=clock, **kw)
    race.start()
    return race


def test_winner_ratio_and_banner():
    clock = Clock()
    race = _race(clock)
    assert race.winner is None and race.banner() is None
    clock.t += 0.08
    race.feed("spark", "def f", 2)
    clock.t += 0.32
    race.feed("spark", "():\n", 398)
    race.finish("spark", "stop")
    assert race.winner.profile == "spark"
    assert race.ratio() is None                      # base is still running
    clock.t += 0.4                                   # base at 0.8 s
    assert "already 2.0x faster than base (still running)" in race.banner()
    race.feed("base", "def f", 2)
    clock.t = 100.0 + 6.08
    race.feed("base", "():\n", 398)
    race.finish("base", "stop")
    assert race.done
    assert race.ratio() == pytest.approx(6.08 / 0.4)
    assert race.banner() == "spark finished in 0.4 s, 15.2x faster than base (6.1 s)"
    spark = race.lane("spark")
    assert spark.ttft_ms() == pytest.approx(80.0)
    assert spark.tokens_per_s(clock()) == pytest.approx(400 / 0.32)
    assert spark.text == "def f():\n"


def test_predicted_finish_uses_the_other_answer_once_known():
    clock = Clock()
    race = _race(clock)
    base = race.lane("base")
    race.feed("base", "x", 10)
    secs, exact = race.predicted_finish_s(base)
    assert not exact and secs == pytest.approx(0.6 + 10 / 65)   # lower bound so far
    race.feed("spark", "y" * 3, 650)
    race.finish("spark", "stop")
    secs, exact = race.predicted_finish_s(base)
    assert exact and secs == pytest.approx(0.6 + 650 / 65)      # same prompt, same length
    secs, exact = race.predicted_finish_s(race.lane("spark"))
    assert exact and secs == pytest.approx(0.08 + 650 / 1000)


def test_max_tokens_bounds_the_expected_length():
    clock = Clock()
    race = _race(clock, max_tokens=40)
    secs, exact = race.predicted_finish_s(race.lane("base"))
    assert exact and secs == pytest.approx(0.6 + 40 / 65)


def test_failed_or_cancelled_lane_never_wins():
    clock = Clock()
    race = _race(clock)
    clock.t += 0.1
    race.finish("spark", "error", error="core_error: boom")
    assert race.winner is None
    clock.t += 1.0
    race.feed("base", "ok", 5)
    race.finish("base", "stop")
    assert race.winner.profile == "base"
    assert race.ratio() is None
    assert race.banner() == "base finished in 1.1 s; spark core_error: boom"


def test_no_winner_when_both_cancelled():
    clock = Clock()
    race = _race(clock)
    race.finish("spark", "cancelled")
    race.finish("base", "cancelled")
    assert race.winner is None
    assert race.banner() == "no winner: spark cancelled; base cancelled"


def test_prediction_from_welcome_entry_tolerates_gaps():
    assert Prediction.from_profile({"predicted": {"ttft_ms": 80, "tokens_per_s": 1000.0,
                                                  "basis": "pinned"}}) == Prediction(80.0, 1000.0, "pinned")
    empty = Prediction.from_profile({"predicted": {"ttft_ms": None, "tokens_per_s": None}})
    assert empty.finish_s(100) is None
    assert Prediction.from_profile(None) == Prediction()


def test_a_race_needs_two_different_profiles():
    with pytest.raises(ValueError):
        Race("p", ("spark", "spark"))
