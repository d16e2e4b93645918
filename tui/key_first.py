"""A key before the stream's work: a navigation key is handled in the app's own turn, and the
stream's frames, syncs and paints wait while a key is queued.

While an answer streams the UI loop runs, besides keys, the screen's frames (10-35 ms each), the
diff's syncs (the rebuild thread's result, 5-15 ms) and the block being written. A key posted to
the app used to wait behind every one of those already queued, and then again at each hop
Textual makes with it: App -> the focused DiffView -> its container -> the screen -> back to the
App, whose bindings run `app.next_hunk` (a message queue per hop, each behind whatever the loop
has ready; issue 14, bench many_edits).

* `KeyQueue` says whether a key is queued: posted to the app (`SparkApp.post_message`) and not
  yet taken by its `on_event`, or forwarded by it and not yet back at the app (or stopped on the
  way). A key whose message was dropped counts for at most `HOLD_S`.
* `navigation_binding` is the binding Textual would run for a key at the end of those hops when
  it is j/k (or what `[ui.keys]` binds to their actions) on the focused diff: the app runs it in
  the key's own turn, only when no earlier key is still on its way (keys stay in order).
* `KeyFirstScreen` is the default screen: its update timer's frame yields to a queued key (the
  key's own frame draws everything dirty, the stream's changes too: nothing lost or drawn twice),
  at most `HOLD_S` in a row.

Textual's private state read here (`Screen._on_timer_update` and `_update_timer`,
`Message._stop_propagation`) is read with a fallback (without it the frame is drawn at its tick as
before, or at once; a stopped key then counts as on its way for `HOLD_S`);
tests/tui/test_key_first.py fails when Textual changes it.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import TYPE_CHECKING

from textual.screen import Screen

if TYPE_CHECKING:
    from textual import events
    from textual.app import App
    from textual.binding import ActiveBinding

log = logging.getLogger(__name__)

HOLD_S = 0.05  # the longest a frame, a sync or a paint waits for queued keys (a dropped key too)
# the review's keys the app runs in the key's own turn: j/k, and the keys to the prompt (i, Enter,
# /: the letters typed right after them reached the app's bindings once the focus was already on
# the prompt, and were dropped; _to_prompt moves the focus at once, so they are typed, in order)
# and the keys that open a screen (x, ?: the next key the App reads goes to that screen, which
# takes its keys in order: tui/screens/modal_keys.py)
NAVIGATION_ACTIONS = frozenset({"app.next_hunk", "app.prev_hunk", "app.focus_prompt", "app.slash_prompt",
                                "app.reject_with_reason", "app.help"})
_clock = time.monotonic


class KeyQueue:
    """The keys posted to the app and not done yet, oldest first (posted from the driver's thread
    or the loop's: a lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: list[tuple[float, events.Key, bool]] = []  # (posted at, key, forwarded)
        self._held: dict[str, float] = {}  # who waits for keys (yields), since when

    def posted(self, key: events.Key) -> None:
        """(Again for a key already counted: the driver's press, then its post on the loop.)"""
        with self._lock:
            if not any(other is key for _, other, _ in self._keys):
                self._keys.append((_clock(), key, False))

    def dropped(self, key: events.Key) -> None:
        """Posting it failed (the app closing): it never comes."""
        self.done(key)

    def taken(self, key: events.Key) -> bool:
        """The app's on_event has `key`: True when no earlier key is still on its way (it may
        then be handled now, in order)."""
        now = _clock()
        with self._lock:
            ahead = False
            for posted, other, forwarded in self._keys:
                if other is key:
                    return not ahead
                if forwarded and now - posted < HOLD_S and not _stopped(other):
                    ahead = True
            return not ahead

    def forwarded(self, key: events.Key) -> None:
        """`key` goes on through Textual's hops (the focused widget, its ancestors, the app)."""
        with self._lock:
            self._keys = [(posted, other, forwarded or other is key)
                          for posted, other, forwarded in self._keys]

    def done(self, key: events.Key) -> None:
        with self._lock:
            self._keys = [entry for entry in self._keys if entry[1] is not key]

    def waiting(self) -> bool:
        """A key is queued or on its way (one older than HOLD_S no longer counts)."""
        now = _clock()
        with self._lock:
            if self._keys and now - self._keys[0][0] >= HOLD_S:
                self._keys = [entry for entry in self._keys
                              if now - entry[0] < HOLD_S and not (entry[2] and _stopped(entry[1]))]
            return any(not (forwarded and _stopped(key)) for _, key, forwarded in self._keys)

    def yields(self, who: str) -> bool:
        """True when `who` (the frame, a sync, a paint: the loop's thread only) is to wait for
        the keys queued now: one waits and `who` has not waited HOLD_S in a row already."""
        if not self.waiting():
            self._held.pop(who, None)
            return False
        now = _clock()
        since = self._held.setdefault(who, now)
        if now - since < HOLD_S:
            return True
        del self._held[who]  # (this one goes now; the next may wait again)
        return False


def _stopped(key: events.Key) -> bool:
    """A widget on the way stopped it: it goes no further (Textual's flag; False without it)."""
    return bool(getattr(key, "_stop_propagation", False))


def navigation_binding(app: App, key: events.Key, diff_type: type) -> ActiveBinding | None:
    """The binding Textual would run for `key` after its hops, when that is a navigation action
    of the focused `diff_type` widget that nothing on the way takes first; else None.

    Textual: the app's priority bindings first, then the focused widget's on_key (the diff passes
    j/k on unless it sends letters to the prompt: `passes_key`), then the bindings from the focused
    widget up; `active_bindings` is that chain, a priority binding winning its key."""
    focused = app.focused
    if not isinstance(focused, diff_type) or not passes_key(focused, key):
        return None
    active = app.active_bindings.get(key.key)
    if active is None or active.binding.priority or not active.enabled:
        return None
    if active.node is not focused or active.binding.action not in NAVIGATION_ACTIONS:
        return None
    return active


def passes_key(diff, key: events.Key) -> bool:
    """What DiffView.on_key decides: False when it stops `key` (a letter sent to the prompt)."""
    character = key.character
    if not (key.is_printable and character) or character in diff.REVIEW_KEYS:
        return True
    return not ((diff.typeahead and character not in diff.NAVIGATION_KEYS)
                or (not diff.typeahead and not diff.hunk_keys))


class KeyFirstScreen(Screen):
    """The app's default screen: the frame its update timer draws waits while a key is queued
    (the app's `keys_first("frame")`), at most HOLD_S in a row; the key's frame draws it."""

    def _on_timer_update(self) -> None:
        first = getattr(self.app, "keys_first", None)
        if first is not None and first("frame"):
            try:  # (a key frame's call finds the timer paused: its next tick looks again)
                self._update_timer.resume()
                return
            except AttributeError:  # a Textual without it: drawn now, as Textual would
                log.warning("key first: this Textual's screen timer differs; frames not held",
                            exc_info=True)
        super()._on_timer_update()


class QuietCollector:
    """While an answer streams, the young generations are collected at a paint tick with no key
    queued, not where an allocation happens to cross the threshold: that was inside a frame (the
    work that allocates most), 4-5 collections of 3-11 ms CPU per many-edits stream, each in the
    frame of whatever key waited for it. Off: the interpreter's own collection, as before."""

    def __init__(self) -> None:
        self._off = False

    def streaming(self, on: bool) -> None:
        if on and not self._off and gc.isenabled():
            gc.disable()
            self._off = True
        elif not on and self._off:
            self._off = False
            gc.enable()

    def tick(self, keys_waiting: bool) -> None:
        """At a paint tick: what the interpreter would have collected by now, unless a key is
        queued (then at a later tick; at 4x the threshold anyway)."""
        if not self._off:
            return
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if counts[0] < thresholds[0] or (keys_waiting and counts[0] < 4 * thresholds[0]):
            return
        gc.collect(1 if counts[1] >= thresholds[1] else 0)
