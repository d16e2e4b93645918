"""The side panel's findings: a list that measures each finding once per width and renders
only the findings on screen.

A Static holding all findings as one text wrapped every finding twice (for its height and
for its picture) on every change and drew all of them (~400 lines for a many-edit answer's
110-140 findings), though the panel shows ~40: 18-58 ms of the UI thread in the frame that
shows an answer's end. Here each finding's height is kept by (severity, message, width) and
the list's height is their sum; a frame asks only for its visible lines (Textual's line API:
render_line), and only the findings on those lines are rendered with their styles (and kept).
The picture is the Static's, cell for cell (tested).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import cast

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.content import Content
from textual.css.styles import RulesMap
from textual.geometry import Size
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

# severity -> the bullet's style; anything else is drawn as info
SEVERITY_STYLES = {"error": "bold red", "warning": "yellow"}
INFO_STYLE = "cyan"
BULLET = "● "

Finding = tuple[str, str]  # (severity, message)
# an item of the list: a finding, or (None, text) for the placeholder and the blank last line
Key = tuple[str | None, str]


def finding_text(severity: str, message: str) -> Text:
    """One finding as the panel writes it: a bullet in the severity's style, then the message."""
    text = Text()
    text.append(BULLET, style=SEVERITY_STYLES.get(severity, INFO_STYLE))
    text.append(message)
    return text


def placeholder_text(findings: Sequence[Finding] | None) -> Text | None:
    """What the list says when it has no finding: "none yet" before the first review,
    "none" after one that found nothing; None when there are findings to draw."""
    if findings is None:
        return Text("none yet", style="dim")
    if not findings:
        return Text("none", style="dim")
    return None


def _shift_offsets(strip: Strip, dy: int) -> Strip:
    """The line with its cells' selection offsets moved down dy text lines: a finding was
    wrapped alone, so its offsets count from its own first line."""
    if not dy:
        return strip
    segments = []
    for segment in strip:
        style = segment.style
        offset = style.meta.get("offset") if style is not None else None
        if style is not None and offset is not None:
            x, y = offset
            style = style + Style.from_meta({"offset": (x, y + dy)})
        segments.append(Segment(segment.text, style, segment.control))
    return Strip(segments, strip.cell_length)


def whole_text(findings: Sequence[Finding] | None) -> Text:
    """All findings as one text, as the Static held them (a newline after each)."""
    placeholder = placeholder_text(findings)
    if placeholder is not None:
        return placeholder
    assert findings is not None
    text = Text()
    for severity, message in findings:
        text.append_text(finding_text(severity, message))
        text.append("\n")
    return text


class FindingsList(Widget):
    """Findings drawn line by line: heights from a plain wrap kept per finding and width,
    styled lines rendered only for findings on screen and kept too."""

    DEFAULT_CSS = """
    FindingsList { height: auto; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._findings: tuple[Finding, ...] | None = None  # None: no review yet
        # kept across changes, pruned to what the last layout used; the key is
        # an item's Key, with the width for heights and lines
        self._texts: dict[Key, Text] = {}  # the placeholder's and the last line's texts
        self._visuals: dict[Key, Visual] = {}
        self._heights: dict[tuple[str | None, str, int], int] = {}
        self._wrapped: dict[tuple[str | None, str, int], list[Strip]] = {}
        # the layout at self._width: each item's key, first line and text lines before it
        # (a line's cells carry their (x, y) offset in the whole text, which Textual's text
        # selection reads; an item rendered alone counts y from its own first line)
        self._width = -1  # -1: stale
        self._keys: list[Key] = []
        self._starts: list[int] = []
        self._bases: list[int] = []
        self._height = 0
        self._placed: dict[int, Strip] = {}  # y -> the line as drawn

    @property
    def findings(self) -> tuple[Finding, ...] | None:
        return self._findings

    def update(self, findings: Sequence[Finding] | None) -> None:
        """Show these findings (None: "none yet"). Findings already measured at this width
        keep their heights and lines; only new ones are measured at the next layout."""
        self._findings = None if findings is None else tuple(findings)
        self._width = -1
        self.refresh(layout=True)

    def _items(self) -> list[tuple[Key, Text | None]]:
        """What the Static's one text held, one item a paragraph group: each finding, then
        the blank line its final newline left; or the placeholder. Text None: build lazily."""
        placeholder = placeholder_text(self._findings)
        if placeholder is not None:
            return [((None, placeholder.plain), placeholder)]
        assert self._findings is not None
        items: list[tuple[Key, Text | None]] = [(finding, None) for finding in self._findings]
        items.append(((None, ""), Text("")))
        return items

    def _visual(self, key: Key) -> Visual:
        visual = self._visuals.get(key)
        if visual is None:
            # the conversion a Static applies to its Text (visualize -> Content)
            severity, message = key
            text = self._texts[key] if severity is None else finding_text(severity, message)
            visual = self._visuals[key] = visualize(self, text)
        return visual

    def _wrap(self, key: Key, width: int) -> list[Strip]:
        """The item's styled lines (rendered as a Static renders), kept by width."""
        strips = self._wrapped.get((*key, width))
        if strips is None:
            strips = Visual.to_strips(self, self._visual(key), width, None, self.visual_style)
            self._wrapped[(*key, width)] = strips
        return strips

    def _layout(self, width: int) -> None:
        """Heights and first lines of all items at this width; a finding not measured at
        this width before costs a wrap of its plain text (a Static's height wraps the plain
        text too: Content.get_height drops the spans), no conversion or styling."""
        if width == self._width:
            return
        rules = cast("RulesMap", self.styles)  # as Widget.get_content_height passes them
        texts: dict[Key, Text] = {}
        heights: dict[tuple[str | None, str, int], int] = {}
        keys: list[Key] = []
        starts: list[int] = []
        bases: list[int] = []
        total = base = 0
        for key, text in self._items():
            if text is not None:
                texts[key] = text
            height = self._heights.get((*key, width))
            if height is None:
                plain = text.plain if text is not None else BULLET + key[1]
                height = Content(plain).get_height(rules, width)
            heights[(*key, width)] = height
            keys.append(key)
            starts.append(total)
            bases.append(base)
            total += height
            base += key[1].count("\n") + 1
        self._texts, self._heights = texts, heights
        self._visuals = {k: v for k, v in self._visuals.items() if (*k, width) in heights}
        self._wrapped = {k: v for k, v in self._wrapped.items() if k in heights}
        self._keys, self._starts, self._bases, self._height = keys, starts, bases, total
        self._width, self._placed = width, {}

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not width:
            return 0
        self._layout(width)
        return self._height

    def render(self) -> Text:
        """The whole text: what a selection is drawn on and copied from (rare: built then)."""
        return whole_text(self._findings)

    def render_line(self, y: int) -> Strip:
        if self.text_selection is not None:
            # a selection spans findings in the whole text's coordinates: draw it as a
            # Static does (from render()), and go back to the kept lines when it ends
            return super().render_line(y)
        width = self.size.width
        self._layout(width)
        placed = self._placed.get(y)
        if placed is not None:
            return placed
        if not 0 <= y < self._height:
            return Strip.blank(width, self.visual_style.rich_style)
        item = bisect_right(self._starts, y) - 1
        strips = self._wrap(self._keys[item], width)
        row = y - self._starts[item]
        line = strips[row] if row < len(strips) else Strip.blank(width, self.visual_style.rich_style)
        placed = self._placed[y] = _shift_offsets(line, self._bases[item])
        return placed

    def notify_style_update(self) -> None:
        # a theme or CSS change restyles the text: measure and render again from scratch
        super().notify_style_update()
        self._visuals, self._heights, self._wrapped = {}, {}, {}
        self._width = -1
