"""The streaming diff view: one widget per hunk plus the block being written.

Hunks are added and updated by id, never re-rendered wholesale, so a long answer streaming
at thousands of tokens per second costs one small repaint per frame; a hunk whose header
changes (its number, state or badges) reuses its highlighted lines (diff_render's cache).
tests/tui/test_diff_incremental.py checks that any sequence of syncs draws exactly what
one sync of the last state into a fresh view draws.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.content import Content
from textual.css.styles import RulesMap
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual.widget import Widget
from textual.widgets import Static

from tui.widgets.diff_render import (
    body_content,
    body_key,
    head_content,
    hunk_head,
    pending_content,
    rendered_body,
    set_strip_template,
    set_view_window,
)
from tui.widgets.kept_lines import KeptLinesScroll


def same_content(a: object, b: object) -> bool:
    """Whether two contents for a Static draw the same (rich Text compares text, spans
    and style; anything else by type and equality)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return (a.plain, a.spans, a.style) == (b.plain, b.spans, b.style)
    return type(a) is type(b) and a == b


def update_if_changed(widget: Static, content: str | Text) -> None:
    """Static.update, skipped when the widget shows exactly this already: each update asks
    for a layout pass of the whole screen (3-15 ms of the UI thread), and an answer's start
    set the notes, prose and verify panel again with what they already showed."""
    if not same_content(widget.content, content):
        widget.update(content)


def _opaque(color: Color | None) -> bool:
    """A colour that draws the same over any background (an added colour replaces it)."""
    return color is None or (color.a == 1 and not color.auto and color.ansi is None)


def _spans_opaque(content: Content) -> bool:
    """Whether every span of `content` is a Style whose colours are opaque and carries no link:
    the background under such a span shows only where no span sets one."""
    for span in content.spans:
        style = span.style
        if not isinstance(style, Style) or style.link is not None or \
                not (_opaque(style.background) and _opaque(style.foreground)):
            return False
    return True


def _off_screen(widget: Widget) -> bool:
    """Whether the screen's last arrangement left `widget` out of what is drawn (scrolled out
    of view). Read from the compositor's kept maps, never rebuilt here."""
    try:
        return widget.is_mounted and widget not in widget.screen._compositor.visible_widgets
    except Exception:  # noqa: BLE001 -- no screen (yet), or Textual changed: refresh as usual
        return False


def repaint_lines(widget: Widget, region: Region) -> None:
    """widget.refresh(region), but for a widget scrolled out of view only its own caches are
    marked (its next paint draws the region anew) and the screen is not told. A refresh of
    such a widget made the screen's next update treat it as new (Compositor.update_widgets:
    "not visible") and drop its map of every widget's place, rebuilt by a whole arrangement
    (~1-3 ms of the UI thread) at the first place looked up after: while an answer streams
    the block being written and most hunks' "i/total" headers change out of view in nearly
    every frame (issue 14). It scrolls into view only through a scroll or a layout, and both
    repaint what they move (tests/tui/test_diff_view_paint.py checks the screen)."""
    if _off_screen(widget):
        widget._set_dirty(region)  # Widget.refresh's repaint, without the Update message
    else:
        widget.refresh(region)


class BodyStrips:
    """A hunk's body and its rendered strips, kept per render key (width, style, rules): the
    hunk as current and as not current. The current hunk's style differs from the others' in
    its background only ($boost): its strips are made from the other style's by swapping the
    base background in the segments that show it (~0.2 vs ~2.7 ms for a 15-line body, the
    first time each hunk becomes current, on every j/k), when that is exact: both styles'
    colours opaque, every span's opaque and with a background other than the two bases
    (property-tested against rendering; otherwise the body is rendered)."""

    def __init__(self, body: Content, lines: tuple | None = None) -> None:
        self.body = body
        self.strips: dict[tuple, list[Strip]] = {}
        self._opaque: bool | None = None  # _spans_opaque(body), asked once
        self._lines = lines  # body_key of the body: its strips may be rendered in a thread

    def get(self, key: tuple, style: Style, render) -> list[Strip]:
        """The strips for `key` (style at key[1]), from the cache, those the rebuild's thread
        rendered (warm_bodies; it may have done so after this hunk was mounted), a restyle
        or `render()`."""
        strips = self.strips.get(key)
        if strips is not None:
            return strips
        if not self.strips and self._lines is not None:
            rendered = rendered_body(self._lines)
            if rendered is not None:
                self.strips[rendered[0]] = rendered[1]
                if rendered[0] == key:
                    return rendered[1]
        for other_key, other in self.strips.items():
            if other_key[:1] + other_key[2:] == key[:1] + key[2:]:
                strips = self.restyle(other, other_key[1], style)
                break
        if strips is None:
            strips = render()
        if len(self.strips) >= 2:  # the hunk as current and as not current
            self.strips.clear()
        self.strips[key] = strips
        return strips

    def restyle(self, strips: list[Strip], old: Style, new: Style) -> list[Strip] | None:
        """`strips` (the body rendered with `old`) as rendered with `new`, or None when the
        styles differ in more than an opaque background or a span could tell them apart."""
        if old.background is None or new.background is None or not _opaque(old.background) \
                or not _opaque(new.background) or not _opaque(old.foreground) \
                or replace(old, background=new.background) != new:
            return None
        if self._opaque is None:
            self._opaque = _spans_opaque(self.body)
        old_bg, new_bg = old.background.rich_color, new.background.rich_color
        if not self._opaque or old_bg == new_bg or any(
                span.style.background is not None  # type: ignore[union-attr]
                and span.style.background.rich_color in (old_bg, new_bg)  # type: ignore[union-attr]
                for span in self.body.spans):
            return None
        swap = RichStyle(bgcolor=new_bg)
        return [Strip([Segment(text, seg_style + swap if seg_style is not None and seg_style.bgcolor == old_bg
                               else seg_style, control) for text, seg_style, control in strip],
                      strip.cell_length) for strip in strips]


class HunkVisual(Visual):
    """A hunk drawn as its head's lines then its body's (what the joined content draws:
    lines wrap one by one, and the head ends in a newline), the body's strips kept by the
    widget per width and style (BodyStrips): a header change (its number as hunks arrive,
    its badges after the review) re-renders the header's line, not the ~15 lines under it
    (~2-3 ms per visible hunk, on the UI thread, at every sync while an answer streams)."""

    def __init__(self, head: Content, body: Content, cache: BodyStrips, current: bool = False) -> None:
        self.head, self.body, self._cache, self._current = head, body, cache, current

    def __str__(self) -> str:
        """The text drawn (as str() of the joined content)."""
        return self.head.plain + self.body.plain

    def render_strips(self, width: int, height: int | None, style: Style,
                      options: RenderOptions) -> list[Strip]:
        if options.selection is not None:  # a mouse selection's offsets are the whole's
            return (self.head + self.body).render_strips(width, height, style, options)
        head = self.head.render_strips(width, None, style, options)[:-1]  # the line after its newline
        above = self.head.plain.count("\n")  # the body's first line in the whole (mouse offsets)
        get_rule = options.rules.get
        rules = (get_rule("text_align", "left"), get_rule("text_overflow", "fold"), get_rule("text_wrap", "wrap"),
                 get_rule("line_pad", 0))
        key = (width, style, options.post_style, above, *rules)
        if not self._current and options.post_style is None:  # how hunks are drawn: new ones are
            set_strip_template(width, style, rules)  # rendered so beside their highlighting
        body = self._cache.get(key, style, lambda: (Content("\n" * above) + self.body).render_strips(
            width, None, style, options)[above:])
        strips = head + body
        return strips if height is None else strips[:height]

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return max(self.head.get_optimal_width(rules, container_width),
                   self.body.get_optimal_width(rules, container_width))

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self.head.get_height(rules, width) + self.body.get_height(rules, width) - 1


class HunkView(Static):
    """One hunk of the proposal, with its state."""

    DEFAULT_CSS = """
    HunkView { padding: 0 1; margin: 0 0 1 0; border-left: wide $panel; }
    HunkView.-current { border-left: wide $accent; background: $boost; }
    """

    body_width = 0  # the width hunks' lines were last laid out at (0: none yet)

    def __init__(self, hunk_id: str) -> None:
        super().__init__("")
        # a hunk has no links: Textual's link pass copied every segment of every line drawn
        # (~10% of a hunk's paint) and a mouse moving over it repainted it (hover style)
        self.set_reactive(HunkView.auto_links, False)
        self.hunk_id = hunk_id
        self._key: tuple | None = None
        self._body_key: tuple | None = None
        self._body = Content("")
        self._head = Content("")
        self._whole: Content | None = Content("")  # head + body, joined when first asked for
        self._body_strips = BodyStrips(self._body)  # HunkVisual's strips of the body
        self._laid_width = 0  # the width the last layout measured this hunk at

    def show(self, hunk, state: str, index: int, total: int, badges: str,
             context: tuple[list[str], list[str]] = ([], []), reason: str = "") -> None:
        # ids are content-stable; the context lines come from the file as it is now
        key = (hunk.id, state, index, total, badges, reason, tuple(context[0]), tuple(context[1]))
        if key == self._key:  # repaint only what changed
            return
        self._key = key
        old_head, old_body = self._head, self._body
        lines = body_key(hunk, context)
        if lines != self._body_key:  # the lines: highlighted (cached) and converted once
            self._body_key = lines
            self._body = body_content(lines)
            self._body_strips = BodyStrips(self._body, lines)
        # the header changes far more often (its number as hunks arrive, its state, its
        # badges): only it is converted again; the same content as render_hunk's Text
        self._head = head_content(hunk_head(hunk, state, index, total, badges, reason))
        # a header that takes as many lines as before at the width last laid out (a new
        # number, state or badge; the lines the same) repaints this hunk only: a layout
        # pass re-arranges every hunk (the review's and the checks' badges after the last
        # token changed dozens of headers at once)
        width = self._laid_width
        rules: Any = self.styles  # as get_content_height measures
        head_lines = self._head.get_height(rules, width) - 1 if width > 0 else 0  # less its newline
        same_height = self._body is old_body and width > 0 and \
            head_lines == old_head.get_height(rules, width) - 1
        self._whole = None  # joined when drawn: see `content`
        # (the width from the last layout: content_size asks the compositor for the region,
        # which arranged the whole screen again when this sync had mounted hunks before it)
        if same_height and self.is_mounted and self.outer_size.width - self.styles.gutter.width == width:
            # and only the header's lines: a new hunk changes every hunk's "i/total" while an
            # answer streams, and a whole repaint re-composed each visible hunk's ~15 lines
            # (their strips are kept: the lines under the header draw the same)
            repaint_lines(self, Region(0, 0, width, max(head_lines, 1)))
        else:
            self.refresh(layout=not same_height)

    @property
    def content(self) -> Content:
        """Head and lines as one content (what the hunk draws: HunkVisual draws them apart),
        joined when asked for: joining copies the lines' hundreds of spans, and the review's
        badges change the header of every hunk at once (~0.3 ms each, on the UI thread)."""
        if self._whole is None:
            self._whole = self._head + self._body
        return self._whole

    @content.setter
    def content(self, content: object) -> None:
        raise TypeError("a hunk is drawn from show(), not from a content set on it")

    @property
    def visual(self) -> HunkVisual:
        return HunkVisual(self._head, self._body, self._body_strips, self.has_class("-current"))

    def render(self) -> HunkVisual:
        return self.visual

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The height of head + lines, without wrapping the whole hunk again: each layout
        pass after a header change re-measured every changed hunk by wrapping all its lines
        (most of the UI thread's time after an answer's last token). The lines' height is
        remembered by their shared content; the head ends in a newline, so the whole is
        the sum less one line (property-tested against the whole content's height)."""
        if not width:
            return 0
        HunkView.body_width = width  # the rebuild's thread measures new hunks at it (warm_bodies)
        self._laid_width = width
        rules: Any = self.styles  # what Widget.get_content_height passes to a visual
        return self._head.get_height(rules, width) + self._body.get_height(rules, width) - 1


class PendingBlock(Widget):
    """The block being written. Repaints in place each frame and asks for a new layout only
    when its height changes: a layout pass costs more than the paint at 60 frames a second.
    Its height grows in steps of HEIGHT_STEP lines (blank ones below the last line written):
    grown a line at a time, nearly every frame of a stream was a layout of the whole diff
    (appflow, 02:05: stream frame CPU ~18 -> ~11 ms with steps)."""

    HEIGHT_STEP = 8

    DEFAULT_CSS = """
    PendingBlock { height: auto; padding: 0 1; border-left: wide $warning; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.set_reactive(PendingBlock.auto_links, False)  # no links (as HunkView)
        self._content = Content("")
        self._height = 0

    def show(self, content: Content) -> None:
        lines = content.plain.count("\n") + 1
        height = -(-lines // self.HEIGHT_STEP) * self.HEIGHT_STEP
        self._content = content
        if height != self._height:
            self.refresh(layout=True)
        else:  # (its lines: the whole width, every line)
            repaint_lines(self, Region(0, 0, 100_000, height))
        self._height = height

    def render(self) -> Content:
        return self._content

    def get_content_height(self, container, viewport, width: int) -> int:
        return self._height


class DiffView(KeptLinesScroll, can_focus=True):
    """All hunks of the current answer, the pending block, and notes about the answer."""

    DEFAULT_CSS = """
    DiffView { height: 1fr; border: round $panel; scrollbar-gutter: stable; }
    DiffView:focus { border: round $accent; }
    DiffView > #notes { color: $text-muted; padding: 0 1; }
    DiffView > #prose { color: $text-muted; padding: 0 1; }
    """

    class TypeAhead(Message):
        """A character typed at the diff while an answer streams: it starts a redirect."""

        def __init__(self, character: str) -> None:
            super().__init__()
            self.character = character

    # REVIEW mode's keys: they exist only while the diff has focus, so the footer shows them
    # only there. The actions are the app's; the ids let `[ui.keys]` rebind them.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "app.accept", "Accept", id="accept"),
        Binding("r", "app.reject", "Reject", id="reject"),
        Binding("A", "app.accept_all", "Accept all", id="accept_all"),
        Binding("R", "app.reject_all", "Reject all", id="reject_all"),
        Binding("x", "app.reject_with_reason", "Reject, say why", id="reject_with_reason"),
        Binding("j", "app.next_hunk", "Next", id="next_hunk"),
        Binding("k", "app.prev_hunk", "Prev", id="prev_hunk"),
        Binding("b", "app.ask_base", "Re-ask Base", id="ask_base", show=False),
        Binding("p", "app.toggle_prose", "Prose", id="toggle_prose", show=False),
        Binding("w", "app.write_anyway", "Write anyway", id="write_anyway", show=False),
        Binding("e", "app.reopen", "Reopen", id="reopen", show=False),
        Binding("enter,i", "app.focus_prompt", "Prompt", id="focus_prompt"),
        Binding("slash", "app.slash_prompt", "Command", id="slash_prompt", show=False),
        Binding("question_mark", "app.help", "Help", id="help"),
    ]
    NAVIGATION_KEYS = "jk"
    REVIEW_KEYS = "?"  # printable keys that stay in the review even with nothing to decide

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.typeahead = False  # set by the app while an answer streams
        self.hunk_keys = False  # set by the app: single letters act on hunks (something to decide)
        self._views: dict[str, HunkView] = {}
        self._order: list[str] = []
        self._marked: str | None = None  # the hunk drawn as current
        self.current = 0
        self._near: frozenset[str] = frozenset()  # the hunks around the current one

    def compose(self):
        yield Static(Text("Type a request below and press Enter.", style="dim"), id="notes")
        yield PendingBlock(id="pending")
        yield Static("", id="prose")

    def on_mount(self) -> None:
        self.query_one("#pending").display = False

    def on_key(self, event: events.Key) -> None:
        # While streaming, decisions wait for the end; letters typed here are a redirect.
        # With nothing left to decide, a letter starts the next prompt (the mode changes).
        if not (event.is_printable and event.character) or event.character in self.REVIEW_KEYS:
            return
        if (self.typeahead and event.character not in self.NAVIGATION_KEYS) or \
                (not self.typeahead and not self.hunk_keys):
            event.stop()
            event.prevent_default()
            self.post_message(self.TypeAhead(event.character))

    # -- content -----------------------------------------------------------------------------
    def reset(self, note: str | Text = "") -> None:
        for view in self._views.values():
            view.remove()
        self._views.clear()
        self._order = []
        self._marked = None
        self.current = 0
        self.set_notes(note)
        self.set_pending(None)
        self.set_prose("", False)

    def set_prose(self, prose: str, expanded: bool) -> None:
        """The model's own words around its edits, under the answer: one line collapsed."""
        widget = self.query_one("#prose", Static)
        if not prose:
            update_if_changed(widget, "")
            return
        lines = prose.splitlines()
        if expanded:
            update_if_changed(widget, Text("▾ the model says (p collapses)\n", style="bold") + Text(prose))
        else:
            more = f"  (+{len(lines) - 1} lines, p expands)" if len(lines) > 1 else ""
            update_if_changed(widget, Text("▸ the model says: ", style="bold") + Text(lines[0][:200])
                              + Text(more, style="dim"))

    def set_notes(self, note: str | Text) -> None:
        update_if_changed(self.query_one("#notes", Static), note)

    def set_pending(self, pending) -> None:
        widget = self.query_one("#pending", PendingBlock)
        if pending is None:
            widget.display = False
            return
        widget.show(pending_content(pending))
        widget.display = True

    def sync(self, hunks: list, states: dict[str, str], badges: dict[str, str] | None = None,
             contexts: dict[str, tuple[list[str], list[str]]] | None = None,
             reasons: dict[str, str] | None = None) -> None:
        """Make the hunk widgets match `hunks` (by id, in that order), mounting only new ones."""
        badges = badges or {}
        contexts = contexts or {}
        reasons = reasons or {}
        ids = [h.id for h in hunks]
        for gone in [hid for hid in self._views if hid not in ids]:
            self._views.pop(gone).remove()
        pending = self.query_one("#pending")
        # new hunks are mounted where they belong, before the next hunk already drawn (an
        # answer's blocks rotate over files: most new hunks land among the others, and
        # moving every hunk into place cost a move per hunk), consecutive ones together
        groups: list[tuple[Widget, list[HunkView]]] = []
        anchor: Widget = pending
        group: list[HunkView] = []
        for hunk in reversed(hunks):
            if hunk.id in self._views:
                if group:
                    groups.append((anchor, group[::-1]))
                    group = []
                anchor = self._views[hunk.id]
            else:
                view = HunkView(hunk.id)
                self._views[hunk.id] = view
                group.append(view)
        if group:
            groups.append((anchor, group[::-1]))
        for before, views in groups:
            self.mount(*views, before=before)
        drawn = [child.hunk_id for child in self.children if isinstance(child, HunkView)]
        if drawn != ids:  # a re-diff reordered drawn hunks: draw in the answer's order
            for hid in ids:
                self.move_child(self._views[hid], before=pending)
        self._order = ids
        total = len(ids)
        for index, hunk in enumerate(hunks, start=1):
            self._views[hunk.id].show(hunk, states.get(hunk.id, "undecided"), index, total,
                                      badges.get(hunk.id, ""), contexts.get(hunk.id, ([], [])),
                                      reasons.get(hunk.id, ""))
        if self._order:
            self.current = min(self.current, len(self._order) - 1)
        self._mark_current()

    # -- navigation --------------------------------------------------------------------------
    @property
    def current_id(self) -> str | None:
        return self._order[self.current] if self._order else None

    def select(self, index: int) -> None:
        if not self._order:
            return
        self.current = max(0, min(index, len(self._order) - 1))
        self._mark_current()
        # at once, in the frame that draws the new current hunk (deferred, it took a second
        # full-screen render a frame later: two renders per j/k press)
        self._views[self._order[self.current]].scroll_visible(animate=False, immediate=True)

    def _mark_current(self) -> None:
        """Only the hunk that was current and the one that is now change class: a loop over
        every hunk's set_class cost ~2 ms of each j/k press with 47 hunks (a held key
        repeats every 30-40 ms, while an answer streams too)."""
        want = self.current_id
        marked = self._marked
        if marked is not None and marked != want and marked in self._views:
            self._views[marked].remove_class("-current")
        if want is not None:
            self._views[want].add_class("-current")
        self._marked = want
        # the hunks that j/k bring into view next: their lines are rendered beside the
        # highlighting (warm_bodies), not at their first paint on this thread
        self._near = frozenset(self._order[max(0, self.current - 2):self.current + 10])
        set_view_window(self._near, frozenset(self._views))
