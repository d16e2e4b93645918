"""Turns hunks and the block being written into highlighted Rich text (presentation only)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from typing import Any

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound
from rich.cells import cell_len
from rich.control import strip_control_codes
from rich.style import Style as RichStyle
from rich.syntax import Syntax, SyntaxTheme
from rich.text import Text
from textual._context import active_app
from textual.content import Content, Span
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions

ADD_BG = "on #12361f"
DEL_BG = "on #3d1418"
STATE_STYLE = {
    "pending": "bold yellow",
    "proposed": "bold cyan",
    "undecided": "bold cyan",
    "chosen": "bold yellow",
    "written": "bold green",
    "accepted": "bold green",
    "rejected": "bold red",
    "stale": "bold magenta",
    "refused": "bold white on red",
}
# what each state says in the hunk's header: "accepted" only for lines that are on disk
STATE_LABEL = {
    "undecided": "undecided",
    "chosen": "accept: written when all are decided",
    "written": "accepted: on disk",
    "rejected": "rejected",
    "stale": "stale",
    "refused": "REFUSED",
}


@lru_cache(maxsize=256)
def _lexer_for(path: str) -> str:
    lexer = Syntax.guess_lexer(path, "")
    return lexer or "text"


@lru_cache(maxsize=64)
def _lexer(name: str) -> Lexer | str:
    """One lexer per language, made as Syntax makes it from a name (`Syntax.lexer`): given
    a name, each Syntax looked the lexer up and built a new one (~1 ms per hunk, and per
    line of the block being written, on the UI thread). Lexers keep no state between
    get_tokens calls, so threads may share one."""
    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=True, tabsize=4)
    except ClassNotFound:
        return name  # Syntax falls back to plain text, as before


@lru_cache(maxsize=16)
def _theme(name: str) -> SyntaxTheme:
    """One theme object per name: Syntax built one per instance, and its per-token style
    cache started empty each time."""
    return Syntax.get_theme(name)


def _syntax(code: str, lexer: str, theme: str) -> Syntax:
    return Syntax(code, _lexer(lexer), theme=_theme(theme), tab_size=4)


def highlight_lines(path: str, lines: list[str], theme: str = "monokai") -> list[Text]:
    """Syntax-highlight `lines` as the file's language; one Text per line."""
    if not lines:
        return []
    code = "\n".join(line.rstrip("\n") for line in lines)
    highlighted = _syntax(code, _lexer_for(path), theme).highlight(code)
    highlighted.rstrip()
    parts = highlighted.split("\n", allow_blank=True)
    while len(parts) < len(lines):
        parts.append(Text(""))
    return parts[: len(lines)]


@lru_cache(maxsize=8192)
def _highlight_line(lexer: str, line: str, theme: str) -> Text:
    highlighted = _syntax(line, lexer, theme).highlight(line)
    highlighted.rstrip()
    return highlighted


def highlight_lines_fast(path: str, lines: list[str], theme: str = "monokai") -> list[Text]:
    """Line-by-line highlighting with a cache: for text still being written, where each
    frame adds a few lines to many already seen. Multi-line constructs (docstrings) may
    colour differently than in the finished hunk, which is highlighted as a whole."""
    lexer = _lexer_for(path)
    return [_highlight_line(lexer, line.rstrip("\n"), theme).copy() for line in lines]


def diff_lines(path: str, old: list[str], new: list[str], *, start: int | None = None,
               fast: bool = False) -> Text:
    """A removed/added block with gutters and tinted backgrounds."""
    out = Text()
    highlight = highlight_lines_fast if fast else highlight_lines
    for prefix, bg, lines in (("-", DEL_BG, old), ("+", ADD_BG, new)):
        for index, line in enumerate(highlight(path, lines)):
            number = "" if start is None or prefix == "+" else str(start + index)
            out.append(f"{number:>5} {prefix} ", style=f"dim {bg}")
            line.stylize(bg)
            out.append_text(line)
            out.append("\n")
    return out


def hunk_header(path: str, state: str, index: int, total: int, old_start: int, extra: str = "") -> Text:
    header = Text()
    header.append(f" {index}/{total} ", style="reverse")
    header.append(f" {path}", style="bold")
    header.append(f"  @@ line {old_start}  ", style="dim")
    header.append(f"[{STATE_LABEL.get(state, state)}]", style=STATE_STYLE.get(state, "bold"))
    if extra:
        header.append(f"  {extra}")
    return header


def context_lines(path: str, lines: list[str], start: int) -> Text:
    """Unchanged lines around a hunk, dimmed, so the change reads in place."""
    out = Text()
    for index, line in enumerate(highlight_lines(path, lines)):
        out.append(f"{start + index:>5}   ", style="dim")
        line.stylize("dim")
        out.append_text(line)
        out.append("\n")
    return out


def hunk_body(path: str, old_start: int, old_lines: tuple[str, ...], new_lines: tuple[str, ...],
              before: tuple[str, ...], after: tuple[str, ...]) -> Text:
    """The highlighted lines of a hunk: context before, removed, added, context after."""
    text = context_lines(path, list(before), old_start - len(before))
    text.append_text(diff_lines(path, list(old_lines), list(new_lines), start=old_start))
    text.append_text(context_lines(path, list(after), old_start + len(old_lines)))
    return text


# Highlighting is most of a hunk's render; the header changes far more often (its state,
# its number as hunks arrive, its badges as reviews and checks land) than the lines do.
# Keyed by everything the body is drawn from; never mutated (render_hunk copies it in).
_cached_body = lru_cache(maxsize=1024)(hunk_body)


def warm_bodies(hunks: list, contexts: dict[str, tuple[list[str], list[str]]], width: int = 0) -> None:
    """Highlight and convert the hunks' lines into the cache now: the app calls it from the
    rebuild's worker thread (asyncio.to_thread: the app's context, so the same theme), so
    the UI thread's sync only assembles headers (40 new hunks took the UI thread 200-400 ms
    under load). `contexts` as DiffView.sync gets them. With the width the hunks' lines are
    drawn at (DiffView.body_width), their wrapped height is measured here too: the layout
    pass after a sync measured each new hunk by wrapping all its lines (2-4 ms each, on the
    UI thread); the content keeps the height for that width (default text rules, as the
    diff view measures with). The lines of hunks near the view's current one (or new ones while
    the view holds only a few) are rendered as the view draws them (_prerender)."""
    near, known = _WINDOW
    for hunk in hunks:
        key = body_key(hunk, contexts.get(hunk.id, ([], [])))
        content = body_content(key)
        if width > 0:
            measure_height(content, width)
            if hunk.id in near or (hunk.id not in known and len(known) < _EARLY):
                _prerender(key, content, width)


def measure_height(content: Content, width: int) -> int:
    """content.get_height({}, width) (default text rules: wrap, fold), kept in the content's
    own height cache as get_height keeps it. Where no line is wider than `width` (nearly every
    hunk: code lines in a 150-column diff) that is its line count, known without wrapping
    each line (Textual's wrap built a formatted line per line: ~0.3 ms a hunk, a third of
    warm_bodies after the token-built bodies, under the GIL the UI thread waits for).
    Property-tested against get_height (tests/tui/test_body_spans.py)."""
    plain = content.plain
    key = (width, "fold", False)  # get_height's cache key for these rules
    cache = getattr(content, "_height_cache", None)
    if cache is not None and cache[0] == key:
        return int(cache[1])
    if cache is not None and width > 0 and "\t" not in plain:  # (tabs are expanded when wrapped)
        lines = plain.split("\n")
        if max(map(cell_len, lines)) <= width:
            content._height_cache = (key, len(lines))
            return len(lines)
    return content.get_height({}, width)


# A hunk's lines as the diff view draws them, rendered beside the highlighting: the first
# paint of each hunk that scrolls into view rendered its ~15 lines on the UI thread (~1.5 ms,
# most screen updates while an answer streams and a j/k moves through it). The diff view says how
# it draws a hunk that is not current (set_strip_template: width, style, text rules) and
# starts a new hunk from what warm_bodies rendered the same way (rendered_body).
_TEMPLATE: tuple[int, Style, tuple] | None = None
# Only hunks likely to be painted next: the ones around the current hunk (j/k move through
# them) and, while the view holds fewer than _EARLY, new ones (they land on screen). Every
# hunk rendered took ~130 ms of CPU at the answer's end beside its review, for 47 hunks of
# which ~3 are on screen (the GIL the UI thread waits for: py-spy, streamgil 02:02).
_WINDOW: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())  # (near, known)
_EARLY = 8
_STRIPS: OrderedDict[tuple, tuple[tuple, list[Strip]]] = OrderedDict()
_HEAD_LINES = 1  # a hunk's header lines above its body (a reason adds one: not pre-rendered)


def set_strip_template(width: int, style: Style, rules: tuple) -> None:
    """How the diff view draws a hunk's lines now: width, base style and text rules
    (text_align, text_overflow, text_wrap, line_pad, as the diff view keys them)."""
    global _TEMPLATE
    _TEMPLATE = (width, style, rules)


def set_view_window(near: frozenset[str], known: frozenset[str]) -> None:
    """The hunks around the diff view's current one, and all it holds (by id)."""
    global _WINDOW
    _WINDOW = (near, known)


def _app_theme() -> str | None:
    """The running app's theme (the key of what is drawn in its colours), None outside one."""
    try:
        return active_app.get().theme
    except LookupError:
        return None


def _prerender(key: tuple, content: Content, width: int) -> None:
    """Render `content` as the diff view would at `width`, if it said how (its template, at
    this width) and every span is a style (a style named by a string is the widget's to
    parse)."""
    template = _TEMPLATE
    entry = (key, _app_theme())
    if template is None or template[0] != width or entry in _STRIPS or \
            not all(isinstance(span.style, Style) for span in content.spans):
        return
    _, style, rules = template
    named: Any = dict(zip(("text_align", "text_overflow", "text_wrap", "line_pad"), rules, strict=True))
    options = RenderOptions(_parse_style, named, None, None)
    strips = (Content("\n" * _HEAD_LINES) + content).render_strips(width, None, style, options)[_HEAD_LINES:]
    with _CONTENT_LOCK:
        _STRIPS[entry] = ((width, style, None, _HEAD_LINES, *rules), strips)
        while len(_STRIPS) > 256:
            _STRIPS.popitem(last=False)


def _parse_style(style: str | Style) -> Style:
    return style if isinstance(style, Style) else Style.parse(style)


def rendered_body(key: tuple) -> tuple[tuple, list[Strip]] | None:
    """The body of `key` rendered by warm_bodies (the diff view's render key, strips), if it was."""
    with _CONTENT_LOCK:
        return _STRIPS.get((key, _app_theme()))


_SAMPLE = ['"""A module."""\n', "import os\n", "\n", "@cache\n", "def f(x: int = 1) -> str:\n",
           "    return f'{x!r}' + \"s\" % (x,)  # note\n", "class C(B):\n", "    pass\n"]


def warm_highlighting(paths: tuple[str, ...] = ("x.py",)) -> None:
    """Highlight a few lines once per language, off the UI thread: the first highlight of a
    language imports its lexer and compiles its ~100 regexes (30-60 ms, held by one thread
    at a time), and without this the first answer paid it on the UI thread, in the first
    frames of its stream (the block being written is highlighted there)."""
    for path in paths:
        highlight_lines(path, _SAMPLE)
        for line in _SAMPLE:
            _highlight_line(_lexer_for(path), line.rstrip("\n"), "monokai")


def body_key(hunk, context: tuple[list[str], list[str]]) -> tuple:
    """Everything a hunk's highlighted lines are drawn from (hunk_body's arguments)."""
    before, after = context
    return (hunk.path, hunk.old_start, tuple(hunk.old_lines), tuple(hunk.new_lines), tuple(before), tuple(after))


def cached_body(key: tuple) -> Text:
    """hunk_body(*key), highlighted once per key; the Text must not be changed."""
    return _cached_body(*key)


_CONTENT: OrderedDict[tuple, Content] = OrderedDict()
_CONTENT_LOCK = threading.Lock()

# -- a hunk's body as Content, straight from the lexer's tokens --------------------------------
# hunk_body builds a Rich Text (a Syntax per run of lines, split into a Text per line, each
# stylized and appended: every span copied three times), which Content.from_rich_text then
# converts span by span (a Style made for each, "dim" parsed again for every gutter): ~2 ms
# per hunk in the rebuild's thread, under the GIL the UI thread waits for while an answer
# streams (py-spy, 3 streams: warm_bodies 191 of the thread's 241 samples, 120 of them this).
# _body_spans makes the same text and the same spans, in the same order, from the same
# tokens (tests/tui/test_body_spans.py: equal to Content.from_rich_text(hunk_body(...))).

_Spans = list[tuple[int, int, Any]]
_BASE: dict[tuple[str, str], Any] = {}


@lru_cache(maxsize=2048)
def _token_lines(lexer: Lexer, lexer_name: str, lines: tuple[str, ...], theme: str) -> list[tuple[str, _Spans, Any]]:
    """highlight_lines(path, lines, theme) as (text, spans, style) per line: what each of its
    Texts holds (Syntax.highlight's tokens, rstrip, split on newlines, padded). Kept per
    run of lines (never changed by callers): a hunk's key changes with its context while its
    removed and added lines, lexed again each time, stay."""
    if not lines:
        return []
    base = _BASE.get((lexer_name, theme))
    if base is None:
        base = _BASE[(lexer_name, theme)] = _syntax("", lexer_name, theme)._get_base_style()
    style_for = _theme(theme).get_style_for_token
    pieces: list[str] = []
    spans: _Spans = []
    offset = 0
    for token_type, token in lexer.get_tokens("\n".join(line.rstrip("\n") for line in lines)):
        token = strip_control_codes(token)  # Text.append_tokens
        pieces.append(token)
        style = style_for(token_type)
        if style:
            spans.append((offset, offset + len(token), style))
        offset += len(token)
    plain = "".join(pieces)
    stripped = plain.rstrip()  # Text.rstrip: spans from the end on dropped, the last cut
    if len(stripped) < len(plain):
        cut = len(stripped)
        spans = [span if span[1] < cut else (span[0], min(cut, span[1]), span[2]) for span in spans if span[0] < cut]
        plain = stripped
    out: list[tuple[str, _Spans, Any]]
    if "\n" not in plain:  # Text.split copies the one line whole (empty spans too)
        out = [(plain, spans, base)]
    else:  # Text.divide: each span's non-empty part on each line it covers, in span order
        texts = plain.split("\n")
        starts = []
        at = 0
        for text in texts:
            starts.append(at)
            at += len(text) + 1
        out = [(text, [], base) for text in texts]
        line = 0
        for start, end, style in spans:
            if end <= start:
                continue
            while starts[line] + len(texts[line]) <= start and line + 1 < len(texts) and \
                    starts[line + 1] <= start:
                line += 1
            at_line = line
            while at_line < len(texts) and starts[at_line] < end:
                left = starts[at_line]
                lo, hi = max(start, left) - left, min(end, left + len(texts[at_line])) - left
                if hi > lo:
                    out[at_line][1].append((lo, hi, style))
                at_line += 1
    while len(out) < len(lines):
        out.append(("", [], None))
    return out[:len(lines)]


def _body_spans(key: tuple) -> tuple[str, _Spans] | None:
    """hunk_body(*key)'s text and spans (Rich styles or style strings), or None where its
    lexer is not one pygments has (the Syntax path then decides the fallback)."""
    path, old_start, old_lines, new_lines, before, after = key
    lexer_name = _lexer_for(path)
    lexer = _lexer(lexer_name)
    if not isinstance(lexer, Lexer):
        return None
    theme = "monokai"
    pieces: list[str] = []
    spans: _Spans = []
    at = 0

    def add(lines: tuple[str, ...], first: int, prefix: str, bg: str) -> None:
        """context_lines (no prefix) or diff_lines' half for `prefix`, appended."""
        nonlocal at
        line_extra = bg or "dim"
        gutter_style = f"dim {bg}" if bg else "dim"
        for index, (text, line_spans, line_style) in enumerate(
                _token_lines(lexer, lexer_name, lines, theme)):
            number = "" if prefix == "+" else str(first + index)
            gutter = f"{number:>5} {prefix or ' '} "
            pieces.append(gutter)
            spans.append((at, at + len(gutter), gutter_style))
            at += len(gutter)
            if line_style:
                spans.append((at, at + len(text), line_style))
            spans.extend((start + at, end + at, style) for start, end, style in line_spans)
            if text:  # line.stylize(...): nothing on an empty line
                spans.append((at, at + len(text), line_extra))
            pieces.append(text)
            pieces.append("\n")
            at += len(text) + 1

    add(before, old_start - len(before), "", "")
    add(old_lines, old_start, "-", DEL_BG)
    add(new_lines, old_start, "+", ADD_BG)
    add(after, old_start + len(old_lines), "", "")
    return "".join(pieces), spans


_STYLES: dict[tuple, Style] = {}  # (Rich style or string, its parser, ANSI theme) -> Style


def _content_of(text: str, spans: _Spans) -> Content:
    """Content.from_rich_text(Text(text, spans=spans)), each distinct style converted once."""
    try:
        app = active_app.get()
    except LookupError:
        get_style: Any = RichStyle.parse
        ansi_theme = None
    else:
        get_style = app.console.get_style
        ansi_theme = app.ansi_theme if spans else None
    owner = getattr(get_style, "__self__", None)
    made = []
    for start, end, style in spans:
        entry = (style, owner, ansi_theme)
        converted = _STYLES.get(entry)
        if converted is None:
            rich_style = get_style(style) if isinstance(style, str) else style
            converted = _STYLES[entry] = Style.from_rich_style(rich_style, ansi_theme)
            if len(_STYLES) > 4096:
                _STYLES.clear()
        made.append(Span(start, end, converted))
    return Content(text, made)


def body_content(key: tuple) -> Content:
    """cached_body(key) as the Textual content a Static draws (what Static.update would
    convert it to), once per key and theme: the conversion costs more than the
    highlighting. Content is immutable, so widgets share it."""
    try:
        theme = active_app.get().theme
    except LookupError:
        theme = None
    entry = (key, theme)
    with _CONTENT_LOCK:
        hit = _CONTENT.get(entry)
    if hit is None:
        made = _body_spans(key)
        hit = Content.from_rich_text(cached_body(key)) if made is None else _content_of(*made)
        _ = hit.cell_length  # measured once here (the header + lines sum reads it)
        with _CONTENT_LOCK:
            _CONTENT[entry] = hit
            while len(_CONTENT) > 1024:
                _CONTENT.popitem(last=False)
    return hit


def head_content(head: Text) -> Content:
    """Content.from_rich_text(head) for a header made by hunk_head (no base style), each
    distinct style converted once (_content_of): every hunk's header is converted again at
    each sync while an answer streams (its "i/total"), 47 per sync on the UI thread."""
    if head.style:
        return Content.from_rich_text(head)
    return _content_of(head.plain, list(head.spans))


def hunk_head(hunk, state: str, index: int, total: int, badges: str = "", reason: str = "") -> Text:
    """A hunk's header line and why it is refused or stale (in the diff itself, until the
    user acts): the part of a hunk that changes while its lines stay."""
    text = hunk_header(hunk.path, state, index, total, hunk.old_start, badges)
    text.append("\n")
    if reason:
        text.append(f"  ! {reason}\n", style="bold red" if state == "refused" else "magenta")
    return text


def render_hunk(hunk, state: str, index: int, total: int, badges: str = "",
                context: tuple[list[str], list[str]] = ([], []), reason: str = "") -> Text:
    """A hunk with its header, why it is refused or stale, and, when given, the unchanged
    lines before and after it."""
    text = hunk_head(hunk, state, index, total, badges, reason)
    text.append_text(cached_body(body_key(hunk, context)))
    return text


PENDING_TAIL_LINES = 20


def _tail(text: str, limit: int) -> tuple[list[str], int]:
    lines = text.splitlines() if text else []
    hidden = max(0, len(lines) - limit)
    return lines[hidden:], hidden


def render_pending(pending, tail_lines: int = PENDING_TAIL_LINES) -> Text:
    """The edit block the model is writing right now, shown live as a diff.

    Only the last `tail_lines` lines are highlighted and drawn: the cost of a frame stays
    flat however long the block grows (a whole new file at 5,000 tokens/s).
    """
    text, old, new = _pending_head(pending, tail_lines)
    text.append_text(diff_lines(pending.path or "", old, new, fast=True))
    return text


def _pending_head(pending, tail_lines: int) -> tuple[Text, list[str], list[str]]:
    """The block's heading (path, stage, lines left out above) and the old and new lines
    that fit in `tail_lines`: the new lines' tail first, then the old ones' that still fit."""
    head = Text()
    head.append(" writing ", style="reverse yellow")
    head.append(f" {pending.path or '(path…)'}", style="bold")
    head.append(f"  [{pending.stage}]\n", style="yellow")
    if pending.stage == "search":
        old, hidden = _tail(pending.search, tail_lines)
        new: list[str] = []
    else:
        new, hidden = _tail(pending.replace, tail_lines)
        old, hidden_old = _tail(pending.search, max(0, tail_lines - len(new)))
        hidden += hidden_old
    if hidden:
        head.append(f"   … {hidden} line(s) above\n", style="dim")
    return head, old, new


_PENDING_LINES: OrderedDict[tuple, Content] = OrderedDict()


def _pending_line(lexer: str, prefix: str, bg: str, line: str, theme: str | None) -> Content:
    """One line of the block being written as diff_lines(fast=True) draws it, converted
    to Content once per line and theme (only the UI thread draws the pending block)."""
    entry = (lexer, prefix, bg, line, theme)
    hit = _PENDING_LINES.get(entry)
    if hit is None:
        lexer_object = _lexer(lexer)
        if isinstance(lexer_object, Lexer) and "\r" not in line and "\n" not in line:
            # from the lexer's tokens, as a hunk's body (_body_spans): the same spans as the
            # Rich Text below (the block's new lines took ~0.4 ms each on the UI thread)
            (text, spans, style), = _token_lines(lexer_object, lexer, (line,), "monokai")
            gutter = f"{'':>5} {prefix} "
            at = len(gutter)
            made: _Spans = [(0, at, f"dim {bg}")]
            if style:
                made.append((at, at + len(text), style))
            made.extend((start + at, end + at, span_style) for start, end, span_style in spans)
            if text:
                made.append((at, at + len(text), bg))
            hit = _content_of(gutter + text + "\n", made)
        else:
            hit = Content.from_rich_text(_pending_line_text(lexer, prefix, bg, line))
        _PENDING_LINES[entry] = hit
        while len(_PENDING_LINES) > 4096:
            _PENDING_LINES.popitem(last=False)
    return hit


def _pending_line_text(lexer: str, prefix: str, bg: str, line: str) -> Text:
    """One line of the block being written as diff_lines(fast=True) draws it (Rich Text)."""
    out = Text()
    out.append(f"{'':>5} {prefix} ", style=f"dim {bg}")
    highlighted = _highlight_line(lexer, line, "monokai").copy()
    highlighted.stylize(bg)
    out.append_text(highlighted)
    out.append("\n")
    return out


def pending_content(pending, tail_lines: int = PENDING_TAIL_LINES) -> Content:
    """render_pending(pending) as the Content a widget draws (Content.from_rich_text of it,
    property-tested), each line converted once: converting the whole block's Text again
    each frame cost ~2.3 ms of the UI thread per frame while an answer streams (~40 frames
    a second), most lines unchanged from the frame before."""
    try:
        theme = active_app.get().theme
    except LookupError:
        theme = None
    head, old, new = _pending_head(pending, tail_lines)
    lexer = _lexer_for(pending.path or "")
    parts = [Content.from_rich_text(head)]
    for prefix, bg, lines in (("-", DEL_BG, old), ("+", ADD_BG, new)):
        parts.extend(_pending_line(lexer, prefix, bg, line.rstrip("\n"), theme) for line in lines)
    return Content("").join(parts)
