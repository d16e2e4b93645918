"""Context meter bands and warnings; growth meter arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.backends.tokens import count_tokens
from core.detectors.context_meter import ContextMeter, band_for, estimate_tokens
from core.detectors.growth import GrowthMeter, count_tree_lines


@pytest.mark.parametrize(
    ("percent", "band"),
    [(0, "sharp"), (29.9, "sharp"), (30, "good"), (59.9, "good"), (60, "compaction likely"),
     (79.9, "compaction likely"), (80, "compaction guaranteed"), (100, "compaction guaranteed"),
     (130, "compaction guaranteed")],
)
def test_bands_follow_the_seed_table(percent: float, band: str) -> None:
    assert band_for(percent) == band


def test_meter_warns_at_60_and_80_once_each() -> None:
    meter = ContextMeter(128_000)
    s = meter.update(30_000, estimated=True)
    assert (s.band, s.warning, s.new_warning, s.estimated) == ("sharp", None, False, True)
    s = meter.update(77_000, estimated=False)  # 60.2%
    assert s.band == "compaction likely" and s.new_warning and "60%" in s.warning
    s = meter.update(78_000, estimated=False)
    assert s.warning and not s.new_warning  # still warned, not announced again
    s = meter.update(103_000, estimated=False)  # 80.5%
    assert s.band == "compaction guaranteed" and s.new_warning and "guaranteed" in s.warning
    s = meter.reset()
    assert (s.tokens, s.percent, s.band, s.warning) == (0, 0.0, "sharp", None)
    assert meter.update(90_000, estimated=False).new_warning  # a fresh context warns again


def test_estimate_is_the_project_tokenizer() -> None:
    text = "def f(x):\n    return x + 1\n"
    assert estimate_tokens(text) == count_tokens(text) > 0


def test_window_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ContextMeter(0)


def test_growth_share_of_tree(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n" * 80)
    (tmp_path / "README.md").write_text("hello\n" * 20)
    (tmp_path / "data.bin").write_bytes(b"\n" * 1000)  # not source: not counted
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "lib.py").write_text("y = 2\n" * 500)
    assert count_tree_lines(tmp_path) == 100
    meter = GrowthMeter.from_tree(tmp_path)
    meter.record("", "def f():\n    return 1\n" * 5)  # new file: 10 lines
    state = meter.record("a\nb\nc\n", "a\nB\nc\nd\n")  # one changed, one added
    assert (state.added, state.removed, state.net) == (12, 1, 11)
    assert state.share == pytest.approx(0.12)
    assert "+12 / -1" in state.describe() and "12%" in state.describe()


def test_growth_with_empty_baseline() -> None:
    assert GrowthMeter(0).record_lines(5, 0).share == 0.0


def test_tree_count_gives_way_before_each_folder(tmp_path: Path) -> None:
    """The indexer answers duplicate checks between folders while it counts a big tree."""
    for d in ("a", "a/b", "c"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / "m.py").write_text("x = 1\n" * 10)
    (tmp_path / ".venv").mkdir()  # skipped folders are not visited
    calls: list[int] = []
    assert count_tree_lines(tmp_path, between=lambda: calls.append(1)) == 30
    assert len(calls) == 4  # the root, a, a/b, c
