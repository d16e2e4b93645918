from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.guards.dwell import DEFAULT_LINES_PER_SECOND, DwellGuard


def test_fast_accept_asks_once_then_counts_unread():
    g = DwellGuard()
    g.shown("h1", lines=40, at=100.0)  # 40 lines need 5 s at 8 lines/s
    v = g.check_accept("h1", at=101.0)
    assert (v.ok, v.confirm, v.unread) == (False, True, False)
    assert v.needed_s == pytest.approx(5.0) and v.dwelt_s == pytest.approx(1.0)
    assert g.unread_accepts == 0 and g.accepts == 0
    v2 = g.check_accept("h1", at=101.5)
    assert (v2.ok, v2.confirm, v2.unread) == (True, False, True)
    assert g.unread_accepts == 1 and g.accepts == 1


def test_read_after_warning_is_not_unread():
    g = DwellGuard()
    g.shown("h", 16, at=0.0)
    assert not g.check_accept("h", at=0.5).ok
    v = g.check_accept("h", at=2.5)  # the user went back and read it
    assert v.ok and not v.unread and g.unread_accepts == 0


def test_min_dwell_for_tiny_hunks():
    g = DwellGuard()
    g.shown("h", 1, at=0.0)
    assert not g.check_accept("h", at=0.1).ok
    g.shown("k", 1, at=0.0)
    assert g.check_accept("k", at=0.31).ok


def test_clock_starts_at_first_show_and_size_grows():
    g = DwellGuard()
    g.shown("h", 4, at=0.0)
    g.shown("h", 24, at=2.0)  # grew while streaming: clock still from 0.0, needs 3 s
    assert g.check_accept("h", at=3.0).ok


def test_never_shown_hunk_is_unread():
    g = DwellGuard()
    assert g.check_accept("ghost", at=10.0).confirm
    v = g.check_accept("ghost", at=60.0)
    assert v.ok and v.unread and g.unread_accepts == 1


def test_disabled_guard_never_asks():
    g = DwellGuard(lines_per_second=0)
    assert g.check_accept("ghost", at=0.0).ok
    g.shown("h", 500, at=0.0)
    assert g.check_accept("h", at=0.0).ok and g.unread_accepts == 0


def test_forget_resets_warning():
    g = DwellGuard()
    g.shown("h", 80, at=0.0)
    g.check_accept("h", at=0.1)
    g.forget("h")
    assert g.check_accept("h", at=0.2).confirm


def test_from_config():
    g = DwellGuard.from_config({"guards": {"dwell_lines_per_second": 4, "dwell_min_s": 1}})
    assert g.needed(2) == 1.0 and g.needed(8) == 2.0
    assert DwellGuard.from_config(None).lines_per_second == DEFAULT_LINES_PER_SECOND
    with pytest.raises(ValueError):
        DwellGuard.from_config({"guards": {"dwell_lines_per_second": "fast"}})


READER_PACES = st.floats(min_value=0.05, max_value=DEFAULT_LINES_PER_SECOND)


@settings(max_examples=300, deadline=None)
@given(hunks=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=12),
       pace=READER_PACES, think_s=st.floats(min_value=0.3, max_value=3.0))
def test_never_slows_a_reader(hunks, pace, think_s):
    """Someone who reads each hunk at any pace up to the floor (and takes a reaction time
    to press the key) is never asked to confirm, even when hunks arrive together."""
    g = DwellGuard()
    for i, n in enumerate(hunks):
        g.shown(f"h{i}", n, at=0.0)  # the whole answer lands at once
    t = 0.0
    for i, n in enumerate(hunks):
        t += n / pace + think_s
        v = g.check_accept(f"h{i}", at=t)
        assert v.ok and not v.confirm and not v.unread
    assert g.unread_accepts == 0 and g.accepts == len(hunks)
