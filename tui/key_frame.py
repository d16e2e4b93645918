"""A navigation key's frame, drawn as soon as the key is handled.

Textual draws a change in steps through the event loop: each changed widget tells its screen on
its own next idle (a message per widget), the screen then resumes its update timer, and that
timer fires on its next 1/MAX_FPS tick. While an answer streams, each of those hops waits behind
the stream's callbacks and, when a background thread holds the interpreter, for the interpreter
(up to the switch interval each): a j took 10-45 ms from handled to the start of its frame
(issue 14, bench many_edits). `take_refreshes` does those steps in the key's own turn, and
`draw_now` draws the frame right after (the app calls it once the keys queued together are
handled: one frame for a burst).

It uses Textual's private refresh flags and screen state (no public API draws a frame now):
tests/tui/test_key_frame.py fails when Textual changes them, and on an attribute it does not
find it falls back to Textual's own path (the frame is then drawn as before, a tick later).
"""

from __future__ import annotations

import logging

from textual.screen import Screen
from textual.widget import Widget

log = logging.getLogger(__name__)


def _register(screen: Screen, widget: Widget) -> None:
    """What `Widget._check_refresh` and the screen's Update/UpdateScroll/Layout handlers do
    for one widget, without the messages between them."""
    if widget._refresh_styles_required:
        widget._refresh_styles_required = False
        widget.update_node_styles()
    if widget._scroll_required:
        widget._scroll_required = False
        if not widget._layout_required:
            if widget.styles.keyline[0] != "none":
                widget._set_dirty()
            screen._scroll_required = True
    if widget._repaint_required:
        widget._repaint_required = False
        if widget.display:
            screen._dirty_widgets.add(widget)
    if widget._layout_required:
        widget._layout_required = False
        for ancestor in widget.ancestors:
            if not isinstance(ancestor, Widget):
                break
            ancestor._clear_arrangement_cache()
            ancestor._layout_updates += 1
            if not ancestor.styles.auto_dimensions:
                break
        node: Widget = widget
        for ancestor in widget.ancestors:
            if not isinstance(ancestor, Widget):
                break
            screen._layout_widgets.setdefault(ancestor, set())
            if node not in screen._layout_widgets:
                screen._layout_widgets[ancestor].add(node)
                screen._layout_required = True
            if not ancestor.styles.auto_dimensions:
                break
            node = ancestor


def take_refreshes(screen: Screen, root: Widget) -> bool:
    """Hand every refresh asked for under `root` (and by `root`) to `screen` now, as the
    widgets' idle handlers and the screen's message handlers would a few loop turns later.

    Returns False (nothing taken: Textual's own path handles them) when the screen is not the
    one shown, updates are batched, a widget under `root` is still being mounted, or this
    Textual lacks what it relies on."""
    try:
        if screen.app._batch_count or not screen.is_current or root.screen is not screen:
            return False
        nodes = [root, *root.walk_children(Widget)]
        if not all(node.is_mounted for node in nodes):
            return False  # a mount in progress: drawn now, its widgets showed blank until mounted
        for node in nodes:
            for widget in (node, *node._get_virtual_dom()):  # (scrollbars are not children)
                if widget._parent is not None and not widget._closing:
                    _register(screen, widget)
    except AttributeError:  # a Textual without these internals: its own path draws them
        log.warning("key frame: this Textual's widget internals differ; frames drawn at its tick",
                    exc_info=True)
        return False
    return True


def draw_now(screen: Screen) -> bool:
    """Draw what `screen` holds to draw (see take_refreshes) now, not at its timer's next tick,
    and start the timer's period again: the next frame Textual draws by itself (the stream's)
    comes a full 1/MAX_FPS after this one, not right behind it. Returns False when it cannot
    (then its timer draws it)."""
    try:
        if screen.app._batch_count or not screen.is_current:
            return False
        screen._on_timer_update()
        screen._update_timer.reset()
    except AttributeError:
        log.warning("key frame: this Textual's screen internals differ; frames drawn at its tick",
                    exc_info=True)
        return False
    return True
