"""A hunk's lines as current are made from its lines as not current: they must draw the same.

The current hunk differs from the others by its background ($boost). BodyStrips makes the
current style's strips from the other style's by swapping the base background in the
segments that show it (the body was rendered again the first time each hunk became current:
~2.7 ms per j/k). The property: whatever the body (highlighted hunk lines, or any spans with
opaque, translucent or base-coloured backgrounds and foregrounds) and whatever two styles,
the strips BodyStrips gives for the second style are the strips rendering gives, segment for
segment (text, style with its mouse offset, control); and for the diff's own bodies and
styles the swap is taken, not the render.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.color import Color
from textual.content import Content, Span
from textual.style import Style
from textual.visual import RenderOptions

from tests.tui.test_diff_incremental import LINES, PATHS, FakeHunk
from tui.widgets.diff_render import body_content, body_key
from tui.widgets.diff_view import BodyStrips

# the diff view's backgrounds (not current, current), monokai's, the added/removed tints,
# translucent and auto colours
PALETTE = [Color(18, 18, 18), Color(27, 27, 27), Color(39, 40, 34), Color(18, 54, 31), Color(61, 20, 24),
           Color(224, 224, 224), Color(200, 10, 10, 0.5), Color(0, 0, 0, 0), Color(255, 255, 255, 0.87, auto=True)]
OPAQUE = PALETTE[:6]


def options() -> RenderOptions:
    return RenderOptions(lambda style: Style.parse(style) if isinstance(style, str) else style, {}, None, None)


def segments(strips) -> list[list[tuple]]:
    return [[(seg.text, seg.style, seg.control) for seg in strip] for strip in strips]


@st.composite
def hunk_bodies(draw) -> Content:
    lines = st.lists(st.sampled_from(LINES), max_size=4)
    hunk = FakeHunk("h", draw(st.sampled_from(PATHS)), draw(st.integers(1, 500)), draw(lines), draw(lines))
    return body_content(body_key(hunk, (draw(lines), draw(lines))))


@st.composite
def spanned(draw, bases: list[Color]) -> Content:
    """Text with spans whose colours are opaque, translucent, auto or one of `bases`."""
    colors = st.one_of(st.none(), st.sampled_from(OPAQUE), st.none(), st.sampled_from(OPAQUE),
                       st.sampled_from(PALETTE[6:]), st.sampled_from(bases))
    text = draw(st.text(st.sampled_from("ab \n"), min_size=1, max_size=40))
    spans = []
    for _ in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        spans.append(Span(start, end, Style(background=draw(colors), foreground=draw(colors),
                                            dim=draw(st.sampled_from([None, True])))))
    return Content(text, spans)


@st.composite
def styles(draw) -> Style:
    return Style(background=draw(st.sampled_from(PALETTE[:3] * 3 + PALETTE[6:])),
                 foreground=draw(st.one_of(st.none(), st.sampled_from(PALETTE))),
                 bold=draw(st.sampled_from([None, True])))


@settings(max_examples=150, deadline=None)
@given(styles(), st.data(), st.sampled_from([9, 37, 90]))
def test_the_second_style_draws_what_rendering_draws(first, data, width):
    # the second style: any, or the first on another background (as the current hunk's)
    other_background = st.sampled_from(PALETTE).map(lambda color: replace(first, background=color))
    second = data.draw(st.one_of(styles(), other_background, other_background))
    bases = [color for color in (first.background, second.background) if color is not None]
    body = data.draw(st.one_of(hunk_bodies(), spanned(bases)))
    cache = BodyStrips(body)
    opts = options()

    def render(style: Style):
        return body.render_strips(width, None, style, opts)

    assert segments(cache.get((width, first), first, lambda: render(first))) == segments(render(first))
    assert segments(cache.get((width, second), second, lambda: render(second))) == segments(render(second))
    # and back: the first style again, from the kept strips or swapped back
    assert segments(cache.get((width, first), first, lambda: render(first))) == segments(render(first))


@settings(max_examples=30, deadline=None)
@given(hunk_bodies(), st.sampled_from([9, 37, 90]))
def test_the_current_hunk_is_a_swap_of_the_others(body, width):
    """The diff view's two styles (text on the panel's background, on $boost's): taken by
    the swap, which draws what rendering draws."""
    text = Color(224, 224, 224)
    plain, current = Style(Color(18, 18, 18), text), Style(Color(27, 27, 27), text)
    opts = options()
    rendered = body.render_strips(width, None, plain, opts)
    swapped = BodyStrips(body).restyle(rendered, plain, current)
    assert swapped is not None
    assert segments(swapped) == segments(body.render_strips(width, None, current, opts))


def test_a_span_on_either_base_background_is_rendered_not_swapped():
    """A span whose background is the old or the new base background would be swapped with
    the base (or not be): the body is rendered instead."""
    text = Color(224, 224, 224)
    plain, current = Style(Color(18, 18, 18), text), Style(Color(27, 27, 27), text)
    opts = options()
    for color in (plain.background, current.background):
        body = Content("ab cd\nef", [Span(0, 2, Style(background=color)), Span(3, 8, Style(background=Color(1, 2, 3)))])
        cache = BodyStrips(body)
        as_plain, as_current = (body.render_strips(20, None, style, opts) for style in (plain, current))
        cache.get((20, plain), plain, lambda: as_plain)  # noqa: B023 (called here)
        assert cache.restyle(as_plain, plain, current) is None
        got = cache.get((20, current), current, lambda: body.render_strips(20, None, current, opts))  # noqa: B023
        assert segments(got) == segments(as_current)
