"""The streaming diff as ONE line-API scroll view: blocks of kept strips, no widget per hunk.

The diff was a Textual widget per hunk (a Static) inside a VerticalScroll: every new hunk was
a mount (CSS, compose, a reflow of ~47 children), a frame after a sync that mounted hunks
cost 26-28 ms of the UI thread, and every j/k re-composed each visible widget (issue 14:
keys p99 80 ms during an answer's stream). Here the diff is drawn the way Textual's Log and
DataTable are: one ScrollView whose `render_line(y)` takes line y from a list of blocks (the
notes, each hunk, the block being written, the prose). Each block keeps its framed strips (its
left border, padding and lines, as the hunk widget drew them) per width and per current / not
current; a prefix sum of heights maps a line to its block. A sync that adds a hunk inserts a
block and repaints only the lines on screen that changed; a header change repaints that
header's lines; j/k restyles two blocks and scrolls. Nothing is mounted while an answer streams.

The look is the hunk widgets' (component classes below hold their CSS): each hunk with a wide
left border in $panel, $accent and a $boost background when current, padding 0 1, a blank line
after it; the block being written with a wide $warning border; notes and prose muted.
tests/tui/test_diff_view_screen.py and test_diff_incremental.py check that the screen after any sequence of syncs, selects and
pending blocks is the screen of a fresh view synced once to the last state.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from enum import Enum
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual import events
from textual._border import get_box
from textual._segment_tools import line_pad
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, visualize

from tui.widgets.diff_render import (
    body_content,
    body_key,
    head_content,
    hunk_head,
    measure_height,
    pending_content,
    rendered_body,
    set_strip_template,
    set_view_window,
)
from tui.widgets.kept_lines import line_scrollbar


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
        rendered (warm_bodies; it may have done so after this hunk arrived), a restyle or
        `render()`."""
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


class Kind(Enum):
    """What a block is: it decides the block's frame (component class) and where it goes."""

    NOTES = "notes"
    HUNK = "hunk"
    PENDING = "pending"
    PROSE = "prose"


class Frame:
    """How a block is framed, as Textual's styles cache frames a widget with these styles:
    its content's style (the visual style a Static of the block would draw with), the inner
    background (padding), the left border's segment, and the padding."""

    __slots__ = ("_blank", "gap", "inner", "left", "pad_left", "pad_right", "style")

    def __init__(self, style: Style, inner: RichStyle, left: Segment | None, pad_left: int,
                 pad_right: int, gap: int) -> None:
        self.style, self.inner, self.left = style, inner, left
        self.pad_left, self.pad_right, self.gap = pad_left, pad_right, gap
        self._blank: Strip | None = None

    @property
    def gutter(self) -> int:
        """Cells left and right of the content (border and padding)."""
        return (self.left is not None) + self.pad_left + self.pad_right

    def frame(self, strips: list[Strip], width: int) -> list[Strip]:
        """`strips` (content lines at `width`) with padding and the left border."""
        inner, left, total = self.inner, self.left, width + self.gutter
        out = []
        for strip in strips:
            line = line_pad(strip.adjust_cell_length(width, inner), self.pad_left, self.pad_right, inner)
            out.append(Strip([left, *line] if left is not None else line, total))
        return out

    def blank(self, width: int) -> Strip:
        """An empty content line, framed (the block being written below its last line); the same
        strip while the width is (the view keeps each row drawn by its content line)."""
        blank = self._blank
        if blank is None or blank.cell_length != width + self.gutter:
            blank = self._blank = self.frame([Strip.blank(width, self.style.rich_style)], width)[0]
        return blank


class Block:
    """One block of the diff: its contents, its framed lines (kept per width and current or
    not), and its height at the view's width."""

    __slots__ = (
        "body",
        "body_key",
        "body_version",
        "framed",
        "head",
        "head_lines",
        "head_version",
        "height",
        "id",
        "key",
        "kind",
        "shown",
        "strips",
    )

    def __init__(self, kind: Kind, block_id: str) -> None:
        self.kind, self.id = kind, block_id
        self.head: Content | None = None  # a hunk's header lines (ending in a newline)
        self.body = Content("")
        self.body_key: tuple | None = None
        self.key: tuple | None = None  # what a hunk was last shown from (sync's per-hunk key)
        self.strips: BodyStrips = BodyStrips(self.body)
        self.framed: dict[tuple, list[Strip]] = {}  # (width, current, epoch, part) -> lines
        self.height = 0  # lines at the view's width, the gap below included (0: not laid out)
        self.head_lines = 0
        self.head_version = 0  # bumped when the header's lines change
        self.body_version = 0  # ... the lines under it (or the whole of a block with no header)
        self.shown = True

    def text(self) -> str:
        """The text the block draws (a hunk: its header and lines)."""
        return (self.head.plain if self.head is not None else "") + self.body.plain


class DiffView(ScrollView, can_focus=True):
    """All hunks of the current answer, the pending block, and notes about the answer,
    drawn line by line from kept strips (see the module's docstring)."""

    DEFAULT_CSS = """
    DiffView { height: 1fr; border: round $panel; scrollbar-gutter: stable; overflow-x: hidden; }
    DiffView:focus { border: round $accent; }
    DiffView > .diff-lines--hunk { padding: 0 1; border-left: wide $panel; }
    DiffView > .diff-lines--current { padding: 0 1; border-left: wide $accent; background: $boost; }
    DiffView > .diff-lines--pending { padding: 0 1; border-left: wide $warning; }
    DiffView > .diff-lines--muted { color: $text-muted; padding: 0 1; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"diff-lines--hunk", "diff-lines--current", "diff-lines--pending",
                                             "diff-lines--muted"}

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
    HEIGHT_STEP = 8  # the block being written grows in steps of this many lines (it jumped less)

    body_width = 0  # the width hunks' lines were last laid out at (warm_bodies measures at it)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.typeahead = False  # set by the app while an answer streams
        self.hunk_keys = False  # set by the app: single letters act on hunks (something to decide)
        self._notes = Block(Kind.NOTES, "#notes")
        self._pending = Block(Kind.PENDING, "#pending")
        self._pending.shown = False
        self._prose = Block(Kind.PROSE, "#prose")
        self._hunks: dict[str, Block] = {}
        self._order: list[str] = []
        self._blocks: list[Block] = [self._notes, self._pending, self._prose]
        self._tops: list[int] = [0, 0, 0]  # each block's first line
        self._width = 0  # the content width blocks are laid out at (0: not yet)
        self._laid = -1  # the view's content region width that was laid out at
        self._blank: Strip | None = None  # a line under no block
        self._rows: dict[int, tuple[Strip, Strip]] = {}  # id(content line) -> (it, its whole row)
        self._rows_key: tuple | None = None  # what the kept rows were drawn with (see _row_parts)
        # the diff has no links: Textual's link pass copied every segment of every line drawn,
        # and a mouse moving over it repainted it (hover style)
        self.set_reactive(DiffView.auto_links, False)
        self._epoch = 0  # bumped when the styles blocks are framed with change
        self._frames: dict[tuple[Kind, bool], Frame] = {}
        self._notes_source: object = None
        self._prose_source: object = None
        self._pending_lines = 0  # lines of the block being written (its height is in steps)
        self._marked: str | None = None  # the hunk drawn as current
        self.current = 0
        self._near: frozenset[str] = frozenset()  # the hunks around the current one
        self.repainted = 0  # lines refreshed by content changes (tests, benches)
        self.rows_drawn = 0  # whole rows made (not found kept: see render_lines)
        self._notes_source = Text("Type a request below and press Enter.", style="dim")

    def on_mount(self) -> None:
        super().on_mount()
        self._set_content(self._notes, self._visual(self._notes_source))

    # -- Textual ------------------------------------------------------------------------------
    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """The vertical scrollbar, a LineScrollBar (made as Widget.vertical_scrollbar makes one):
        a scroll repaints only the bar's lines that change."""
        return line_scrollbar(self)

    def notify_style_update(self) -> None:
        """Styles or the theme changed: blocks are framed (and hunks' lines rendered) anew."""
        super().notify_style_update()
        if not hasattr(self, "_frames"):
            return  # (styles set while the view is made)
        self._frames.clear()
        self._blank = None
        self._epoch += 1
        self._laid = -1
        if self.is_mounted:
            self._set_content(self._notes, self._visual(self._notes_source))
            if self._prose_source is not None:
                self._set_content(self._prose, self._visual(self._prose_source))

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

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    def render_lines(self, crop: Region) -> list[Strip]:
        """The view's rows as Textual's styles cache draws them (tests/tui/test_diff_view_own_lines.py
        compares the two), each content row made once per content line and kept: Textual's cache
        keeps rows by position, so every scroll (each j/k that moves the window) drew every row
        again (the line adjusted to the content width, the border's edges added, the app's line
        filters run over every segment: most of a key's frame). Here a row whose content line is
        one already drawn is a lookup. The border's top and bottom rows, and views styled in a
        way this does not draw (padding, outline, tint, opacity, hatch), are Textual's."""
        parts = self._row_parts()
        if parts is None:
            return super().render_lines(crop)
        width, height = self.outer_size
        top, bottom = parts[4], parts[5]
        scrolled = self.scroll_offset.y  # (rounded, as Textual repaints and scrolls by it)
        content = self.scrollable_content_region.width  # (asked once: each ask looks the view up)
        selection = self.text_selection
        rows = []
        for y in crop.line_range:
            if y < top or y >= height - bottom:
                rows.append(super().render_lines(Region(0, y, width, 1))[0])
            else:
                row = self._row(self._content_line(y - top, content, scrolled), parts)
                if selection is not None:
                    row = self._selected(row, selection.get_span(y - top + scrolled), parts)
                rows.append(row)
        if crop.column_span != (0, width):
            x1, x2 = crop.column_span
            rows = [row.crop(x1, x2) for row in rows]
        return rows

    def _row_parts(self) -> tuple | None:
        """What a content row is drawn with (the styles cache's render_line for a row with no
        border top or bottom): the left and right edges, the inner style, the content width,
        the border's rows, the line filters and the background they run with; None where the
        view is styled in a way rows are not drawn so here."""
        styles = self.styles
        if self.opacity != 1 or styles.tint.a or styles.text_opacity != 1 or any(styles.padding) or \
                any(edge for edge, _ in styles.outline) or \
                (styles.has_rule("hatch") and styles.hatch != "none") or self.auto_links:
            return None
        base, background = self.background_colors
        inner, outer = Style(background=base + background), Style(background=base)
        (top, _), (right_edge, right_color), (bottom, _), (left_edge, left_color) = styles.border
        left = get_box(left_edge, inner, outer, Style(foreground=base + left_color))[1][0] if left_edge else None
        right = get_box(right_edge, inner, outer, Style(foreground=base + right_color))[1][2] if right_edge else None
        filters = tuple(self.get_line_filters())
        parts = (left, right, inner.rich_style, self.content_region.width, int(bool(top)), int(bool(bottom)),
                 self.outer_size.width, filters, tuple(f.enabled for f in filters), background)
        if parts != self._rows_key:
            self._rows.clear()
            self._rows_key = parts
        return parts

    def _row(self, line: Strip, parts: tuple) -> Strip:
        """A content row: `line` to the content width, the border's edges, the line filters."""
        kept = self._rows.get(id(line))
        if kept is not None and kept[0] is line:
            return kept[1]
        self.rows_drawn += 1
        left, right, inner, content_width, _, _, width, filters, _, background = parts
        segments = list(line.adjust_cell_length(content_width, inner))
        if left is not None:
            segments.insert(0, left)
        if right is not None:
            segments.append(right)
        row = Strip(segments, width)
        for line_filter in filters:
            row = row.apply_filter(line_filter, background)
        if len(self._rows) > 4096:  # (content lines no longer drawn)
            self._rows.clear()
        self._rows[id(line)] = (line, row)
        return row

    def _selected(self, row: Strip, span: tuple[int, int] | None, parts: tuple) -> Strip:
        """`row` with the selected span (content columns, -1: to the end) in the selection style."""
        if span is None:
            return row
        edge = parts[0] is not None  # (the view's left border cell)
        start, end = span
        end = parts[3] if end == -1 else min(end, parts[3])
        if end <= start:
            return row
        style = self.screen.get_component_rich_style("screen--selection")
        a, b = start + edge, end + edge
        part = row.crop(a, b)  # (the selection's colours over the text's, as Textual draws it)
        chosen = Strip([Segment(text, seg_style + style if seg_style is not None else style, control)
                        for text, seg_style, control in part], part.cell_length)
        return Strip.join([row.crop(0, a), chosen, row.crop(b, row.cell_length)])

    def selection_updated(self, selection) -> None:
        self.refresh()  # (rows are drawn with the selection's style while it lasts)

    def get_selection(self, selection) -> tuple[str, str] | None:
        """The text selected: the diff's lines as drawn (a hunk's or the block's left border as a
        space), one per line of the whole diff, as the rows' mouse offsets number them."""
        lines = []
        for y in range(self.virtual_size.height):
            line = self._line(y)
            if line is None:
                lines.append("")
                continue
            found = self._find(y)
            text = line.text
            if found is not None and text and text[0] != " " and \
                    self._frame(found[0].kind, found[0].id == self._marked).left is not None:
                text = " " + text[1:]
            lines.append(text.rstrip())
        return selection.extract("\n".join(lines)), "\n"

    def render_line(self, y: int) -> Strip:
        """Line y of the view's content region, with the mouse offsets of text selection (the
        column from the content's left, the line of the whole diff: get_selection reads the same
        lines). Textual asks for it where the mouse is (and its styles cache, drawing the view
        where render_lines leaves it to it); the rows drawn are made from _content_line, without
        the offsets: each segment's style made anew per place cost the line filters their cache
        (bench diff_view: CPU per key p50 7.3 -> 12-13 ms)."""
        line = self._content_line(y)
        return line.apply_offsets(0, y + self.scroll_offset.y)

    def _content_line(self, y: int, width: int | None = None, scrolled: int | None = None) -> Strip:
        """Line y of the view's content region: the line of the block it falls in, or blank
        (`width`: the content region's, `scrolled`: scroll_offset.y, when the caller has them)."""
        if width is None:
            width = self.scrollable_content_region.width
        if width != self._laid:
            self._relayout()
        line = self._line(y + (self.scroll_offset.y if scrolled is None else scrolled))
        if line is not None:
            return line
        blank = self._blank
        if blank is None or blank.cell_length != width:  # (the view's background, as a container's)
            blank = self._blank = Strip.blank(width, Style(background=self.background_colors[1]).rich_style)
        return blank

    # -- layout -------------------------------------------------------------------------------
    def _frame(self, kind: Kind, current: bool) -> Frame:
        """The frame of a block of `kind` at the view's styles now (kept until they change)."""
        frame = self._frames.get((kind, current))
        if frame is not None:
            return frame
        component = {Kind.NOTES: "diff-lines--muted", Kind.PROSE: "diff-lines--muted",
                     Kind.PENDING: "diff-lines--pending"}.get(kind) or \
            ("diff-lines--current" if current else "diff-lines--hunk")
        styles = self.get_component_styles(component)
        parent = self.visual_style
        # as Widget.visual_style and background_colors accumulate a child's styles
        base = self.background_colors[1]
        background = parent.background if parent.background is not None else Color(0, 0, 0, 0)
        color = parent.foreground if parent.foreground is not None else Color(255, 255, 255, 0)
        text_background = background
        own = base
        if styles.has_rule("background"):
            tinted = styles.background.tint(styles.background_tint)
            text_background = background + tinted
            background = background + tinted
            own = base + tinted
        if styles.has_rule("color"):
            color = styles.color
        if styles.has_rule("auto_color") and styles.auto_color:
            color = text_background.get_contrast_text(color.a)
        text = styles.text_style  # (a Rich style: None where the component does not say)

        def flag(name: str) -> bool | None:
            own = getattr(text, name)
            return getattr(parent, name) if own is None else own

        style = Style(background, color, bold=flag("bold"), dim=flag("dim"), italic=flag("italic"),
                      reverse=flag("reverse"), underline=flag("underline"), strike=flag("strike"))
        inner, outer = Style(background=base + own), Style(background=base)
        edge, edge_color = styles.border_left
        left = get_box(edge, inner, outer, Style(foreground=base + edge_color))[1][0] if edge else None
        _, _, _, pad_left = styles.padding
        pad_right = styles.padding.right
        frame = Frame(style, inner.rich_style, left, pad_left, pad_right, 1 if kind is Kind.HUNK else 0)
        self._frames[(kind, current)] = frame
        return frame

    def _content_width(self) -> int:
        return max(1, self.scrollable_content_region.width - self._frame(Kind.HUNK, False).gutter)

    def _width_of(self, kind: Kind) -> int:
        """The width a block of `kind` lays its text out at: the view's content width less its
        own frame (notes and prose have no border: one column more than a hunk's lines, as the
        old view's Statics had)."""
        width = self._width
        if kind is Kind.HUNK or kind is Kind.PENDING or width <= 0:
            return width
        return max(1, width + self._frame(Kind.HUNK, False).gutter - self._frame(kind, False).gutter)

    def _relayout(self) -> None:
        """Heights of every block at the width now, and the tops and virtual size from them."""
        self._laid = self.scrollable_content_region.width
        width = self._content_width()
        if width != self._width:
            self._width = width
            DiffView.body_width = width
            for block in self._blocks:
                block.height = 0
        self._place()

    def _measure(self, block: Block) -> int:
        """The block's height at the view's width, the gap below it included."""
        width = self._width
        if not block.shown or width <= 0:
            return 0
        rules: Any = self.styles
        if block.kind is Kind.HUNK:
            assert block.head is not None
            # (measured as a hunk's lines are: no line wider than the width -> its line count,
            # without wrapping it; every header changes at every sync while an answer streams)
            block.head_lines = max(measure_height(block.head, width) - 1, 0)
            return block.head_lines + measure_height(block.body, width) + 1
        if block.kind is Kind.PENDING:
            return -(-self._pending_lines // self.HEIGHT_STEP) * self.HEIGHT_STEP
        return block.body.get_height(rules, self._width_of(block.kind))

    def _place(self) -> None:
        """Tops of the blocks in order and the virtual size (a block's height measured when it
        is not known at this width)."""
        tops = []
        y = 0
        for block in self._blocks:
            if block.height == 0 and block.shown:
                block.height = self._measure(block)
            tops.append(y)
            y += block.height if block.shown else 0
        self._tops = tops
        size = Size(self.scrollable_content_region.width, y)
        if size != self.virtual_size:
            # what a layout pass does for a scroll view (ScrollView._size_updated), without the
            # pass: setting virtual_size asked for a layout of the whole screen, and every sync
            # that added a hunk changes it (a reflow and a full repaint of every widget on screen)
            self.set_reactive(DiffView.virtual_size, size)
            if self.is_mounted:
                self._scroll_update(size)

    def _find(self, y: int) -> tuple[Block, int] | None:
        """The block line y (of the whole diff) falls in, and the line within it."""
        index = bisect_right(self._tops, y) - 1
        while index >= 0:
            block = self._blocks[index]
            if block.shown and block.height:
                at = y - self._tops[index]
                return (block, at) if at < block.height else None
            index -= 1
        return None

    def _identity(self, y: int) -> tuple | None:
        """What line y of the whole diff draws, as a value that changes when its cells do."""
        found = self._find(y)
        if found is None:
            return None
        block, at = found
        current = block.kind is Kind.HUNK and block.id == self._marked
        if block.head is not None and at < block.head_lines:
            return (id(block), at, block.head_version, current)
        return (id(block), at, block.body_version, current, block.head_lines)

    def _visible(self) -> range:
        top = self.scroll_offset.y
        return range(top, top + self.scrollable_content_region.height)

    def _screen_before(self) -> list[tuple | None]:
        return [self._identity(y) for y in self._visible()]

    def _repaint_changed(self, before: list[tuple | None]) -> None:
        """Refresh the lines on screen whose identity changed since `before`."""
        self._place()
        visible = self._visible()
        width = self.scrollable_content_region.width
        start = None
        for at, y in enumerate(visible):
            changed = at >= len(before) or before[at] != self._identity(y)
            if changed and start is None:
                start = at
            elif not changed and start is not None:
                self.refresh(Region(0, start, width, at - start))
                self.repainted += at - start
                start = None
        if start is not None:
            self.refresh(Region(0, start, width, len(visible) - start))
            self.repainted += len(visible) - start

    # -- drawing ------------------------------------------------------------------------------
    def _line(self, y: int) -> Strip | None:
        found = self._find(y)
        if found is None:
            return None
        block, at = found
        width = self._width
        if block.kind is Kind.HUNK:
            current = block.id == self._marked
            frame = self._frame(Kind.HUNK, current)
            if at >= block.height - frame.gap:
                return None
            if at < block.head_lines:
                return self._framed(block, frame, current, "head")[at]
            lines = self._framed(block, frame, current, "body")
            at -= block.head_lines
            return lines[at] if at < len(lines) else frame.blank(width)
        frame = self._frame(block.kind, False)
        lines = self._framed(block, frame, False, "body")
        return lines[at] if at < len(lines) else frame.blank(self._width_of(block.kind))

    def _framed(self, block: Block, frame: Frame, current: bool, part: str) -> list[Strip]:
        width = self._width_of(block.kind)
        key = (width, current, self._epoch, part)
        lines = block.framed.get(key)
        if lines is not None:
            return lines
        style = frame.style
        rules: Any = self.styles  # (what Visual.to_strips passes: the widget's styles)
        options = RenderOptions(self._get_style, rules, None, None)
        if part == "head":
            assert block.head is not None
            strips = block.head.render_strips(width, None, style, options)[:block.head_lines]
        elif block.kind is Kind.HUNK:
            get_rule = self.styles.get_rule
            rules = (get_rule("text_align", "left"), get_rule("text_overflow", "fold"),
                     get_rule("text_wrap", "wrap"), get_rule("line_pad", 0))
            render_key = (width, style, None, 1, *rules)  # (the key warm_bodies renders by: _prerender)
            if not current:
                set_strip_template(width, style, rules)
            body = block.body
            strips = block.strips.get(render_key, style, lambda: (Content("\n") + body).render_strips(
                width, None, style, options)[1:])
        else:
            strips = block.body.render_strips(width, None, style, options)
        lines = frame.frame(strips, width)
        stale = [k for k in block.framed if k[3] == part and k[:3] != key[:3] and k[1] == current]
        for k in stale:
            del block.framed[k]
        block.framed[key] = lines
        return lines

    # -- content ------------------------------------------------------------------------------
    def _visual(self, content: object) -> Content:
        visual = visualize(self, content)  # type: ignore[arg-type]  # as Static draws it
        return visual if isinstance(visual, Content) else Content(str(content))

    def _set_content(self, block: Block, content: Content) -> None:
        """A block with no header shows `content` (notes, prose, the block being written)."""
        block.body = content
        block.body_version += 1
        block.framed.clear()
        block.height = 0

    def reset(self, note: str | Text = "") -> None:
        before = self._screen_before()
        self._hunks.clear()
        self._order = []
        self._blocks = [self._notes, self._pending, self._prose]
        self._marked = None
        self.current = 0
        self._set_notes(note)
        self._set_pending(None)
        self._set_prose("", False)
        self._repaint_changed(before)

    def set_prose(self, prose: str, expanded: bool) -> None:
        """The model's own words around its edits, under the answer: one line collapsed."""
        before = self._screen_before()
        if self._set_prose(prose, expanded):
            self._repaint_changed(before)

    def _set_prose(self, prose: str, expanded: bool) -> bool:
        if not prose:
            source: str | Text = ""
        elif expanded:
            source = Text("▾ the model says (p collapses)\n", style="bold") + Text(prose)
        else:
            lines = prose.splitlines()
            more = f"  (+{len(lines) - 1} lines, p expands)" if len(lines) > 1 else ""
            source = Text("▸ the model says: ", style="bold") + Text(lines[0][:200]) + Text(more, style="dim")
        if _same(source, self._prose_source):
            return False
        self._prose_source = source
        self._set_content(self._prose, self._visual(source))
        return True

    def set_notes(self, note: str | Text) -> None:
        before = self._screen_before()
        if self._set_notes(note):
            self._repaint_changed(before)

    def _set_notes(self, note: str | Text) -> bool:
        if _same(note, self._notes_source):
            return False
        self._notes_source = note
        self._set_content(self._notes, self._visual(note))
        return True

    def set_pending(self, pending) -> None:
        before = self._screen_before()
        self._set_pending(pending)
        self._repaint_changed(before)

    def _set_pending(self, pending) -> None:
        block = self._pending
        if pending is None:
            block.shown = False
            return
        content = pending_content(pending)
        self._pending_lines = content.plain.count("\n") + 1
        block.shown = True
        self._set_content(block, content)

    @property
    def notes_text(self) -> str:
        """The text of the notes above the hunks."""
        return self._notes.body.plain

    @property
    def prose_text(self) -> str:
        """The text of the model's prose under the hunks."""
        return self._prose.body.plain

    @property
    def pending_text(self) -> str | None:
        """The block being written as drawn, None when none is shown."""
        return self._pending.body.plain if self._pending.shown else None

    @property
    def drawn_hunks(self) -> list[str]:
        """The ids of the hunks drawn, in the order drawn."""
        return [block.id for block in self._blocks if block.kind is Kind.HUNK]

    def hunk_text(self, hunk_id: str) -> str:
        """The text drawn for a hunk: its header and lines."""
        return self._hunks[hunk_id].text()

    def hunk_region(self, hunk_id: str) -> Region:
        """Where a hunk is in the whole diff (virtual lines, its content width)."""
        index = self._blocks.index(self._hunks[hunk_id])
        self._place()
        block = self._blocks[index]
        return Region(0, self._tops[index], self.scrollable_content_region.width, block.height)

    def _show(self, block: Block, hunk, state: str, index: int, total: int, badges: str,
              context: tuple[list[str], list[str]], reason: str) -> None:
        key = (hunk.id, state, index, total, badges, reason, tuple(context[0]), tuple(context[1]))
        if key == block.key:
            return
        block.key = key
        lines = body_key(hunk, context)
        if lines != block.body_key:  # the lines: highlighted (cached) and converted once
            block.body_key = lines
            block.body = body_content(lines)
            block.strips = BodyStrips(block.body, lines)
            block.body_version += 1
            for k in [k for k in block.framed if k[3] == "body"]:
                del block.framed[k]
            block.height = 0
        head = head_content(hunk_head(hunk, state, index, total, badges, reason))
        if block.head is None or head.plain != block.head.plain or head.spans != block.head.spans:
            old_lines = block.head_lines
            block.head = head
            block.head_version += 1
            for k in [k for k in block.framed if k[3] == "head"]:
                del block.framed[k]
            if self._width and block.height and \
                    max(measure_height(head, self._width) - 1, 0) != old_lines:
                block.height = 0

    def sync(self, hunks: list, states: dict[str, str], badges: dict[str, str] | None = None,
             contexts: dict[str, tuple[list[str], list[str]]] | None = None,
             reasons: dict[str, str] | None = None) -> None:
        """Make the hunk blocks match `hunks` (by id, in that order): new ones inserted, changed
        ones drawn anew, and only the lines on screen that changed repainted."""
        badges = badges or {}
        contexts = contexts or {}
        reasons = reasons or {}
        before = self._screen_before()
        ids = [h.id for h in hunks]
        known = self._hunks
        kept = {hid: known[hid] for hid in ids if hid in known}
        for hunk in hunks:
            if hunk.id not in kept:
                kept[hunk.id] = Block(Kind.HUNK, hunk.id)
        self._hunks = kept
        if ids != self._order:
            self._blocks = [self._notes, *(kept[hid] for hid in ids), self._pending, self._prose]
        self._order = ids
        total = len(ids)
        for index, hunk in enumerate(hunks, start=1):
            self._show(kept[hunk.id], hunk, states.get(hunk.id, "undecided"), index, total,
                       badges.get(hunk.id, ""), contexts.get(hunk.id, ([], [])), reasons.get(hunk.id, ""))
        if self._order:
            self.current = min(self.current, len(self._order) - 1)
        self._mark_current()
        self._repaint_changed(before)

    # -- navigation ---------------------------------------------------------------------------
    @property
    def current_id(self) -> str | None:
        return self._order[self.current] if self._order else None

    def select(self, index: int) -> None:
        if not self._order:
            return
        before = self._screen_before()
        self.current = max(0, min(index, len(self._order) - 1))
        self._mark_current()
        self._repaint_changed(before)
        # at once, in the frame that draws the new current hunk (with the blank line under it,
        # as a hunk widget's margin was scrolled into view)
        self.scroll_to_region(self.hunk_region(self._order[self.current]), animate=False, immediate=True)

    def _mark_current(self) -> None:
        """The hunk drawn as current; the hunks that j/k bring into view next have their lines
        rendered beside the highlighting (warm_bodies), not at their first paint here."""
        self._marked = self.current_id
        self._near = frozenset(self._order[max(0, self.current - 2):self.current + 10])
        set_view_window(self._near, frozenset(self._hunks))


def _same(a: object, b: object) -> bool:
    """Whether two contents draw the same (rich Text compares text, spans and style)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return (a.plain, a.spans, a.style) == (b.plain, b.spans, b.style)
    return type(a) is type(b) and a == b
