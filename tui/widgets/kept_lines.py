"""Scrolling containers that repaint less: their own lines kept, their scrollbar by line.

A Textual container draws its own lines (border, background under its children) and its
scrollbar in full after every layout and every scroll: the diff view's ~48 lines and its bar's
48 each time a hunk is mounted or j/k moves (1.3-2.5 ms each on the UI thread while an answer
streams), the side panel's when findings arrive. KeptLinesScroll keeps its own lines while
what they are drawn from is the same, and LineScrollBar repaints only the lines of the bar
that change. Both are property-tested against what Textual paints with nothing kept
(tests/tui/test_diff_view_own_lines.py, test_line_scrollbar.py, test_side_panel_lines.py).
"""

from __future__ import annotations

from typing import Self

from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget


class LineScrollBar(ScrollBar):
    """A vertical scrollbar repainting only the lines whose cells change.

    Every j/k scrolls the diff view and every hunk mounted changes its virtual height: Textual
    repaints all ~48 lines of the bar (~2.5 ms on the UI thread, most of it the per-line
    styling), though a move changes the few lines the thumb leaves and enters. A refresh
    of the whole bar is narrowed to the lines whose segments differ from the last
    requested state, when nothing else the bar is drawn from changed (size, its and the
    view's styles and colours, hover, grab, line filters, theme); the lines are what
    ScrollBarRender draws at that height. Property-tested against a fresh paint."""

    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self._drawn: tuple[tuple, list[Segment]] | None = None  # (what else, each line's segment)
        self.partial = 0  # refreshes narrowed to changed lines (or to none)

    def _bar_now(self) -> tuple[tuple, list[Segment]] | None:
        """What the bar is drawn from now, and its lines' segments; None if not drawable."""
        parent = self.parent
        width, height = self.size
        if not isinstance(parent, Widget) or not self.vertical or not width or not height or \
                not self.is_mounted:
            return None
        render = self.render()
        if not isinstance(render, ScrollBarRender):
            return None
        style = render.style if isinstance(render.style, RichStyle) else None
        if style is None or render.thickness != self.thickness:
            return None
        app = self.app
        key = (self.size, style, self.styles._cache_key, parent.styles._cache_key, self.background_colors,
               parent.background_colors, self.grabbed, self.mouse_over, tuple(self.get_line_filters()),
               app.ansi_theme, app.native_ansi_color)
        bar = render.render_bar(size=height, window_size=render.window_size, virtual_size=render.virtual_size,
                                position=render.position, vertical=True, thickness=width,
                                back_color=style.bgcolor or RichColor.parse("#555555"),
                                bar_color=style.color or RichColor.parse("bright_magenta"))
        return key, list(bar.segments)

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Self:
        if regions or not repaint or layout or recompose:
            return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
        drawn, now = self._drawn, self._bar_now()
        self._drawn = now
        if drawn is None or now is None or drawn[0] != now[0] or len(drawn[1]) != len(now[1]):
            return super().refresh()
        changed = [y for y, (old, new) in enumerate(zip(drawn[1], now[1], strict=True)) if old != new]
        self.partial += 1
        if not changed:
            return self
        width = self.size.width
        return super().refresh(*(Region(0, y, width, 1) for y in changed))


def line_scrollbar(widget: Widget) -> ScrollBar:
    """`widget`'s vertical scrollbar, made a LineScrollBar on first use (as
    Widget.vertical_scrollbar makes Textual's own): for the views that override that property."""
    if widget._vertical_scrollbar is None:
        bar = widget._vertical_scrollbar = LineScrollBar(vertical=True, name="vertical",
                                                         thickness=widget.scrollbar_size_vertical)
        bar.display = False
        widget.app._start_widget(widget, bar)
    return widget._vertical_scrollbar


class KeptLinesScroll(VerticalScroll):
    """A VerticalScroll whose own lines are kept while nothing they are drawn from changed,
    with a LineScrollBar."""

    def __init__(self, *children: Widget, **kwargs) -> None:
        super().__init__(*children, **kwargs)
        self._own_key: tuple | None = None  # what the container's own lines were drawn from
        self._own_lines: list[Strip] = []

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """The vertical scrollbar, a LineScrollBar."""
        return line_scrollbar(self)

    def _own_lines_key(self) -> tuple:
        """Everything the container's own lines (its border and the background under its
        children) are drawn from, as the styles cache gets it: size, styles, colours, border
        labels, opacity, line filters and the ANSI theme."""
        app = self.app
        return (self.outer_size, self.styles._cache_key, self.background_colors, self.visual_style,
                self._border_title, self._border_subtitle, self.opacity, tuple(self.get_line_filters()),
                app.ansi_theme, app.native_ansi_color)

    def render_lines(self, crop: Region) -> list[Strip]:
        """The container's own lines, kept while nothing they are drawn from changed: every
        child mounted (a layout) and every style change clears the widget's line cache, and
        the diff view's ~48 lines of border and background were drawn again (~1.3 ms of most
        refreshes while an answer streams)."""
        key = self._own_lines_key()
        if key != self._own_key:
            self._own_lines = super().render_lines(self.outer_size.region)  # border included
            self._own_key = key
        lines = self._own_lines[crop.y:crop.bottom]
        x1, x2 = crop.column_span
        if (x1, x2) != (0, self.outer_size.width):
            lines = [line.crop(x1, x2) for line in lines]
        return lines
