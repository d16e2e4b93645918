"""Random bursts of review keys, reasons and help posted from another thread (as a terminal
does): each key acts where it would had the user typed slowly (tui/screens/modal_keys.py)."""

from __future__ import annotations

import itertools
import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tui.conftest import wait_for
from tests.tui.test_modal_keys import _at_rest, _key, _record, _review
from tui.app import SparkApp

REASON_LETTERS = "arx jkq?"  # hunk keys among them: a letter that leaked to the review would act

segment = st.one_of(
    st.sampled_from([["j"], ["k"]]),
    st.tuples(st.text(REASON_LETTERS, max_size=5), st.sampled_from(["enter", "escape"])).map(
        lambda t: ["x", *t[0], t[1]]),
    st.tuples(st.lists(st.sampled_from(["j", "down", "k"]), max_size=2),
              st.sampled_from(["escape", "q", "?"])).map(lambda t: ["?", *t[0], t[1]]),
)


def _slowly(segments: list[list[str]]) -> list[tuple]:
    """What the keys do typed one at a time: j/k step; x opens the reason (its letters are the
    reason, Enter rejects with it, escape cancels); ? opens help (its keys only scroll)."""
    done: list[tuple] = []
    for keys in segments:
        if keys[0] in "jk":
            done.append(("step", 1 if keys[0] == "j" else -1))
        elif keys[0] == "x" and keys[-1] == "enter":
            done.append(("reject", False, "".join(keys[1:-1]).strip() or None))
    return done


async def _bursts_run(root, url, segments: list[list[str]], cuts: list[int], gaps: list[float]) -> None:
    app = SparkApp(root, url)
    async with app.run_test(size=(140, 45)) as pilot:
        await _review(pilot, app)
        done = _record(app)
        keys = [key for keys in segments for key in keys]
        bounds = sorted({min(cut, len(keys)) for cut in cuts} | {0, len(keys)})
        bursts = [keys[a:b] for a, b in itertools.pairwise(bounds)]

        def terminal() -> None:  # the driver's thread: each burst posted at once
            for burst, gap in zip(bursts, gaps + [0.0] * len(bursts), strict=False):
                for key in burst:
                    app.post_message(_key(key))
                threading.Event().wait(gap)

        sender = threading.Thread(target=terminal)
        sender.start()
        want = _slowly(segments)
        try:
            await wait_for(pilot, lambda: not sender.is_alive() and len(done) >= len(want) and _at_rest(app),
                           timeout=5, what="every key handled")
        except AssertionError:
            pass  # (the asserts say what differs)
        await pilot.pause(0.15)
        assert done == want
        assert _at_rest(app), app.screen_stack


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(segments=st.lists(segment, min_size=1, max_size=5).filter(
           lambda segs: sum(s[0] == "x" and s[-1] == "enter" for s in segs) <= 2),
       cuts=st.lists(st.integers(0, 20), max_size=4),
       gaps=st.lists(st.sampled_from([0.0, 0.002, 0.01, 0.04]), max_size=4))
def test_screens_keep_the_keys_of_a_burst(demo_root, core_url, segments, cuts, gaps):
    """Random bursts of review keys, reasons and help, posted from another thread in bursts (as
    a terminal does): the review does exactly what it does when the same keys are typed slowly,
    each reason recorded is exactly the letters typed between x and Enter, no key is lost, and
    the review has the focus at the end."""
    import asyncio

    asyncio.run(_bursts_run(demo_root, core_url, segments, cuts, gaps))


def test_a_burst_through_both_screens(demo_root, core_url):
    """One burst through both screens and back: help opened, scrolled and closed, a reason with
    hunk letters in it, a cancelled one, j/k between."""
    import asyncio

    segments = [["?", "j", "down", "escape"], ["x", *"a rx", "enter"], ["j"], ["x", "r", "escape"], ["k"],
                ["?", "?"], ["x", "enter"]]
    asyncio.run(_bursts_run(demo_root, core_url, segments, [], []))
