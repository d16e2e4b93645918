"""The side panel's findings: a list that wraps each finding once per width and draws only
the lines on screen.

A Static holding all findings as one text wrapped every finding twice (for its height and
for its picture) on every change and drew all of them (~400 lines for a many-edit answer's
110-140 findings), though the panel shows ~40: 18-58 ms of the UI thread in the frame that
shows an answer's end. Here each finding's wrapped lines are kept by (severity, message,
width), the height is a sum of kept heights, and a frame asks only for its visible lines
(Textual's line API: render_line). The picture is the Static's, cell for cell (tested).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

# severity -> the bullet's style; anything else is drawn as info
SEVERITY_STYLES = {"error": "bold red", "warning": "yellow"}
INFO_STYLE = "cyan"
BULLET = "● "

Finding = tuple[str, str]  # (severity, message)


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


class FindingsList(Widget):
    """Findings drawn line by line from per-finding wrapped lines kept across changes."""

    DEFAULT_CSS = """
    FindingsList { height: auto; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._findings: tuple[Finding, ...] | None = None  # None: no review yet
        # (severity, message, width) -> wrapped lines; holds only what the last layout used
        self._wrapped: dict[tuple[str, str, int], list[Strip]] = {}
        self._lines: list[Strip] = []
        # per line: how many text lines (findings' newlines) come before its finding; a line's
        # cells carry their (x, y) offset in the whole text (Textual's text selection reads it)
        self._bases: list[int] = []
        self._placed: dict[int, Strip] = {}  # y -> line with its offsets moved to the whole text
        self._lines_width = -1  # the width self._lines was laid out at; -1: stale

    @property
    def findings(self) -> tuple[Finding, ...] | None:
        return self._findings

    def update(self, findings: Sequence[Finding] | None) -> None:
        """Show these findings (None: "none yet"). Only findings not seen at the current
        width are wrapped at the next frame; the rest reuse their lines."""
        self._findings = None if findings is None else tuple(findings)
        self._lines_width = -1
        self.refresh(layout=True)

    def _wrap(self, text: Text, width: int) -> list[Strip]:
        # the same conversion and rendering a Static applies to its Text (visualize ->
        # Content, to_strips with this widget's styles), so the cells are the same
        visual = visualize(self, text)
        return Visual.to_strips(self, visual, width, None, self.visual_style)

    def _layout(self, width: int) -> list[Strip]:
        """All lines at this width, from kept per-finding lines (a list of references)."""
        if width == self._lines_width:
            return self._lines
        placeholder = placeholder_text(self._findings)
        bases: list[int] = []
        if placeholder is not None:
            lines = self._wrap(placeholder, width)
            bases = [0] * len(lines)
            self._wrapped = {}
        else:
            assert self._findings is not None
            wrapped: dict[tuple[str, str, int], list[Strip]] = {}
            lines = []
            base = 0
            for severity, message in self._findings:
                key = (severity, message, width)
                strips = wrapped.get(key)
                if strips is None:
                    strips = self._wrapped.get(key)
                    if strips is None:
                        strips = self._wrap(finding_text(severity, message), width)
                    wrapped[key] = strips
                lines.extend(strips)
                bases.extend([base] * len(strips))
                base += message.count("\n") + 1
            # the Static's text ended each finding with a newline: its last line is blank
            tail = self._wrap(Text(""), width)
            lines.extend(tail)
            bases.extend([base] * len(tail))
            self._wrapped = wrapped
        self._lines, self._bases, self._lines_width = lines, bases, width
        self._placed = {}
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not width:
            return 0
        return len(self._layout(width))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._layout(width)
        if 0 <= y < len(lines):
            placed = self._placed.get(y)
            if placed is None:
                placed = self._placed[y] = _shift_offsets(lines[y], self._bases[y])
            return placed
        return Strip.blank(width, self.visual_style.rich_style)

    def notify_style_update(self) -> None:
        # a theme or CSS change restyles the text: wrap again from scratch
        super().notify_style_update()
        self._wrapped = {}
        self._lines_width = -1
