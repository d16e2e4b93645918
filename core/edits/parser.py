"""Streaming parser for the edit formats a model answer may use.

Why line-based: the parser only ever acts on *complete* lines and keeps the partial last
line in a buffer, so feeding a stream in chunks of any size (down to one character)
gives exactly the edits the whole text gives at once.  The partial line is still shown
in `pending`, so the app can draw the block being written live.

Formats (several per answer, several files), as real models write them:
- SEARCH/REPLACE: a path line, then `<<<<<<< SEARCH`, old lines, `=======`, new lines,
  `>>>>>>> REPLACE` (Aider's older `<<<<<<< ORIGINAL` / `>>>>>>> UPDATED` too).  The path
  may sit before the fence, inside it, in its info string (```` ```python:a.py ````), in a
  fence of its own, or be a markdown heading or bold; with no path the previous block's
  path is reused (models do that for several blocks in one file).
- unified diff in a ```diff fence (or an unfenced `diff --git` section): `--- a/x`,
  `+++ b/x`, `@@ -a,b +c,d @@` hunks; each hunk becomes one edit (context + removed
  lines -> context + added lines) that keeps its `@@` numbers.  Several files per fence,
  with git's `diff --git` / `index` / mode lines, `--- /dev/null` creations; renames,
  deletions and binary patches are refused with the reason.  A header line of the next
  file is never context of the previous hunk.
- whole file: a fenced block right after a path line (or with the path in the fence's
  info string) that holds no SEARCH/REPLACE block.  A block that only stands for the
  file (a placeholder, the path again, +/- lines) is refused, never written.
Fences are ``` / ~~~ of any length, or `<source>` / `<code>` / `<pre>` tags (Aider's
alternatives when a file holds ```).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from core.edits.paths import Exists, bare_token, clean_path, lang_mismatch, mentioned_path
from core.edits.placeholders import (
    bare_elision,
    stand_in_comment,
    whole_file_problem,
)

SEARCH_RE = re.compile(r"^\s*<{5,9} ?(?:SEARCH|ORIGINAL)\s*>?\s*$")
DIVIDER_RE = re.compile(r"^\s*={5,9}\s*$")
REPLACE_RE = re.compile(r"^\s*>{5,9} ?(?:REPLACE|UPDATED)\s*<?\s*$")
FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`]*?)\s*$")
_TAGS = "source|sourcecode|codeblock|code|pre"
_TAG_OPEN_RE = re.compile(rf"^\s*<({_TAGS})((?:\s+[\w:-]+(?:=(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?)*)"
                          rf"\s*>\s*([^<>`]*?)\s*$", re.IGNORECASE)
_TAG_CLOSE_RE = re.compile(rf"^\s*</({_TAGS})>\s*$", re.IGNORECASE)
_ATTR_VALUE_RE = re.compile(r"=(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))")
HUNK_HEADER_RE = re.compile(r"^@@.*@@")
_NUMBERS_RE = re.compile(r"^@@\s*-(\d+)(?:,(\d+))?\s+\+(\d+)(?:,(\d+))?\s*@@")
_OLD_START_RE = re.compile(r"^@@\s*-(\d+)")
# git's extended header lines: never content of a hunk
_GIT_HEADER_RE = re.compile(
    r"^(?:diff --git \S|index [0-9a-fA-F]{4,}\.\.[0-9a-fA-F]{4,}(?: \d+)?\s*$|"
    r"(?:new|deleted) file mode \d{6}\s*$|(?:old|new) mode \d{6}\s*$|"
    r"(?:dis)?similarity index \d+%\s*$|(?:rename|copy) (?:from|to) \S|"
    r"Binary files .* differ\s*$|GIT binary patch\s*$)")
DIFF_LANGS = {"diff", "patch", "udiff"}
# a model's reasoning, which may show drafts of edits that it then revises
_THINK_OPEN_RE = re.compile(
    r"^\s*<(thinking-content-[\w-]+|thinking|think|reasoning)(?=[\s>])[^>]*>", re.IGNORECASE)


@dataclass(frozen=True)
class HunkNumbers:
    """The numbers of a `@@ -old_start,old_len +new_start,new_len @@` header, as the
    model wrote them (they may be wrong; the apply side uses them only to break ties)."""

    old_start: int
    old_len: int
    new_start: int
    new_len: int


@dataclass(frozen=True)
class Edit:
    """One complete edit: replace `search` (exact old lines) by `replace` in `path`."""

    path: str
    search: str
    replace: str
    kind: str  # "search_replace" | "udiff" | "whole_file"
    line: int | None = field(default=None, compare=False)  # a diff hunk's @@ old start
    numbers: HunkNumbers | None = field(default=None, compare=False)  # a hunk's @@ numbers
    creates: bool = field(default=False, compare=False)  # a `--- /dev/null` diff
    # a diff hunk's lines in order: ("=", context), ("-", removed), ("+", added)
    ops: tuple[tuple[str, str], ...] | None = field(default=None, compare=False)
    # `\ No newline at end of file` after the hunk's last old / new line: that side of
    # the file ends there without a final newline
    old_no_eol: bool = field(default=False, compare=False)
    new_no_eol: bool = field(default=False, compare=False)
    # why this edit must not be written; set only on the edits in StreamingParser.held
    refused: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PendingEdit:
    """The block being written right now, for live display (may end mid-line)."""

    path: str | None
    search: str
    replace: str
    kind: str
    stage: str  # "path" | "search" | "replace"


@dataclass(frozen=True)
class ParseError:
    """A malformed block: where it started and what is wrong with it."""

    line: int  # 1-based line of the answer where the block started
    path: str | None
    message: str


__all__ = ["Edit", "HunkNumbers", "ParseError", "PendingEdit", "StreamingParser",
           "bare_token", "clean_path", "mentioned_path", "parse_edits"]


@dataclass(frozen=True)
class _FenceLine:
    """A fence line: its marker (```, ~~~~, <source>, </source>) and info string."""

    marker: str
    info: str

    @property
    def opens(self) -> bool:
        """Certainly an opening fence (a language/path, or an opening tag)."""
        return bool(self.info) or self.marker.startswith("<") and self.marker[1:2] != "/"


def _fence_line(line: str, family: str | None = None) -> _FenceLine | None:
    """The fence on this line, if any; `family` ('`' or '~', '<') limits it to the kind
    of fence that is open, so a `<pre>` inside a ``` block is content, and vice versa."""
    if family != "<":
        m = FENCE_RE.match(line)
        if m:
            return _FenceLine(m.group(2), m.group(3))
        if family is not None:
            return None
    if "<" not in line:
        return None
    m = _TAG_CLOSE_RE.match(line)
    if m:
        return _FenceLine(f"</{m.group(1).lower()}>", "")
    m = _TAG_OPEN_RE.match(line)
    if m:
        values = [a or b or c for a, b, c in _ATTR_VALUE_RE.findall(m.group(2))]
        info = " ".join(values + ([m.group(3)] if m.group(3) else []))
        return _FenceLine(f"<{m.group(1).lower()}>", info)
    return None


def _closes(opening: str, fl: _FenceLine) -> bool:
    if opening.startswith("<"):
        return fl.marker == "</" + opening[1:]
    return not fl.info and fl.marker[0] == opening[0] and len(fl.marker) >= len(opening)


def _shorter(marker: str, opening: str) -> bool:
    """A ``` line inside a ```` fence: it can neither close that fence nor end it as
    broken (CommonMark); it is the content's own fence (a file that holds markdown)."""
    return marker[0] == opening[0] and marker[0] in "`~" and len(marker) < len(opening)


def _nests(opening: str, fl: _FenceLine) -> bool:
    """A fence opening of the same kind as the open one (```python inside ```)."""
    if not fl.opens or fl.marker[0] != opening[0]:
        return False
    return fl.marker == opening if opening.startswith("<") else len(fl.marker) >= len(opening)


def _diff_path(rest: str) -> str:
    """The path from a `--- a/x` / `+++ b/x` header line ("/dev/null" kept as is)."""
    p = rest.strip().split("\t", 1)[0].strip()
    if len(p) > 1 and p[0] == p[-1] and p[0] in "\"'":
        p = p[1:-1]
    if p[:2] in ("a/", "b/"):
        p = p[2:]
    return p.removeprefix("./")


def _git_paths(line: str) -> tuple[str | None, str | None]:
    """old and new path of a `diff --git a/x b/y` line (None when it cannot be split)."""
    rest = line[len("diff --git "):].strip()
    m = re.match(r'^"?a/(.+?)"? "?b/(.+?)"?$', rest)
    if m:
        return m.group(1), m.group(2)
    parts = rest.split()
    if len(parts) == 2:
        return _diff_path(parts[0]), _diff_path(parts[1])
    return None, None


def _same_file(old: str, new: str) -> bool:
    """`--- x.py.orig` / `+++ x.py`, `--- old/x.py` / `+++ new/x.py`: one file."""
    if old == new:
        return True
    for suffix in (".orig", ".bak", ".old", ".new", "~"):
        if old == new + suffix or new == old + suffix:
            return True
    o, n = old.split("/"), new.split("/")
    return len(o) == len(n) > 1 and o[1:] == n[1:]


@dataclass
class _Block:
    """Mutable state of the SEARCH/REPLACE block being read."""

    path: str | None
    start_line: int
    stage: str = "search"
    search: list[str] = field(default_factory=list)
    replace: list[str] = field(default_factory=list)
    broken: str | None = None  # why the block must not be applied, once known
    fence: str | None = None  # marker of the fence the block sits in
    # lines seen after a line that would close that fence: if the block then turns
    # out to have no REPLACE marker, they are read again as ordinary answer lines
    after_close: list[tuple[int, str]] | None = None
    # a second ======= line in REPLACE: a slip if >>>>>>> REPLACE comes right after it
    extra_divider: tuple[int, str] | None = None
    extra_blank: int = 0


@dataclass
class _Fence:
    """Mutable state of an open fence outside any SEARCH/REPLACE block."""

    marker: str  # "" for an unfenced diff section
    start_line: int
    is_diff: bool
    path: str | None  # path named before the fence or in its info string
    lang: str = ""
    body: list[str] = field(default_factory=list)
    had_block: bool = False
    after_block: int = 0  # non-blank lines after the fence's last block
    stray_marker: int = 0  # line of a ======= / >>>>>>> REPLACE with no SEARCH
    stray_replace: bool = False  # ... and it was a >>>>>>> REPLACE (reported at once)
    inner_open: int = 0  # line of a fence with an info string inside this fence
    mentioned: str | None = None  # a file named in backticks on the line before
    bare: str | None = None  # an unrecognisable lone word on the line before
    # unified-diff state, per file section
    old_path: str | None = None  # from ---, "/dev/null" kept
    new_path: str | None = None  # from +++, "/dev/null" kept
    git_old: str | None = None  # from diff --git
    git_new: str | None = None
    rename: str | None = None  # "a -> b" from rename/copy header lines
    deleted: bool = False
    binary: bool = False
    reported: bool = False  # the section's refusal was recorded once
    in_hunk: bool = False
    hunk_start: int = 0
    hunk_old: list[str] = field(default_factory=list)
    hunk_new: list[str] = field(default_factory=list)
    hunk_ops: list[tuple[str, str]] = field(default_factory=list)
    no_eol: tuple[bool, bool] = (False, False)  # old, new side: `\ No newline` seen
    new_file: list[str] = field(default_factory=list)  # body of a --- /dev/null diff
    numbers: HunkNumbers | None = None
    hunk_line: int | None = None  # old start line from the @@ header
    seen_old: int = 0
    seen_new: int = 0
    tail: list[str] = field(default_factory=list)  # lines after a hunk's counted lines
    unprefixed: int = 0  # trailing hunk lines with no ' '/'+'/'-' (maybe prose)
    loose: int = 0  # line of a +/- line outside any hunk
    emitted: int = 0  # hunks (edits or refusals) this fence gave
    hunks: int = 0  # @@ headers seen in this file section
    last_raw: str = ""  # the diff's previous line, in case it was the next path line


class StreamingParser:
    """Turns a streamed model answer into `Edit`s as soon as each one is complete.

    `exists` (optional) tells whether the working tree has a file: with it, a bare name
    (`main`) or a bracketed route (`app/[id]/page.tsx`) that the tree has is a path.
    `default_path` (optional; a session whose context holds exactly one file passes it)
    names a SEARCH/REPLACE block that has no path at all, as Aider does with the one file
    in its chat; never a whole-file block, whose content could be any example.

    Edits that look like edits but must never be written (a placeholder whole file, a
    REPLACE that elides code with a bare `...`) are not returned: each is recorded in
    `errors` with the reason and kept, with `Edit.refused` set, in `held`.
    """

    def __init__(self, exists: Exists | None = None, default_path: str | None = None) -> None:
        self.errors: list[ParseError] = []
        self.held: list[Edit] = []
        self.exists = exists
        self.default_path = default_path
        self._buf = ""
        self._line_no = 0
        self._prev_line = ""  # last non-blank complete line seen outside a block
        self._prev2 = ""  # the non-blank line _remember saw before _prev_line
        # the last fence closed may have lost its own closing line: it held lines after
        # its block, or it named no file and held no block (a stray fence line opened it)
        self._lost_close = False
        self._empty_named: str | None = None
        self._last_path: str | None = None
        self._block: _Block | None = None
        self._fence: _Fence | None = None
        self._thinking: str | None = None  # the reasoning tag we are inside, if any
        self._finished = False

    # -- public API ---------------------------------------------------------------
    def feed(self, chunk: str) -> list[Edit]:
        """Consume a chunk; return the edits that this chunk completed."""
        if self._finished:
            raise RuntimeError("StreamingParser.feed() after finish()")
        self._buf += chunk
        if self._line_no == 0 and self._buf.startswith("\ufeff"):
            self._buf = self._buf[1:]  # a byte-order mark is not part of the first line
        if "\n" not in chunk:
            return []
        *lines, self._buf = self._buf.split("\n")
        out: list[Edit] = []
        for line in lines:
            self._line_no += 1
            out.extend(self._line(line.removesuffix("\r")))
        return out

    def finish(self) -> list[Edit]:
        """Flush the last partial line; record any block left open as an error."""
        if self._finished:
            return []
        out: list[Edit] = []
        if self._buf:
            self._line_no += 1
            out.extend(self._line(self._buf.removesuffix("\r")))
            self._buf = ""
        if self._block is not None:
            b = self._block
            where = "=======" if b.stage == "search" else ">>>>>>> REPLACE"
            self._block_error(b, f"SEARCH/REPLACE block for {b.path or '?'} (line "
                                 f"{b.start_line}) ended without its {where} line; the "
                                 f"answer was probably cut off")
            self._block = None
            out.extend(self._replay(b))
            return out + self.finish()
        if self._fence is not None:
            f = self._fence
            if f.is_diff:
                out.extend(self._close_diff_file(f, complete=not f.marker, end=True))
            elif f.path and not f.had_block and f.body and not f.stray_marker:
                self.errors.append(ParseError(
                    f.start_line, f.path,
                    f"whole-file block for {f.path} (line {f.start_line}) has no closing "
                    f"fence; not applied because the file may be cut off"))
            self._fence = None
        self._finished = True
        return out

    @property
    def pending(self) -> PendingEdit | None:
        """The block being written now, including the partial current line."""
        tail = self._buf
        b = self._block
        if b is not None:
            if b.stage == "search":
                return PendingEdit(b.path, _join(b.search) + tail, "", "search_replace",
                                   "search")
            return PendingEdit(b.path, _join(b.search), _join(b.replace) + tail,
                               "search_replace", "replace")
        f = self._fence
        if f is None:
            return None
        if f.is_diff:
            path = self._diff_target(f)[0]
            if f.in_hunk and f.old_path != "/dev/null":
                return PendingEdit(path, _join(f.hunk_old), _join(f.hunk_new), "udiff",
                                   "replace")
            if f.new_file:
                return PendingEdit(path, "", _join(f.new_file), "udiff", "replace")
            return PendingEdit(path, "", "", "udiff", "path")
        if f.path and not f.had_block:
            return PendingEdit(f.path, "", _join(f.body) + tail, "whole_file",
                               "replace" if f.body or tail else "path")
        return None

    # -- line state machine ---------------------------------------------------------
    def _line(self, line: str) -> list[Edit]:
        line = line.lstrip("\ufeff")  # a BOM the model copied is never content
        if self._thinking is not None:
            end = line.lower().find(f"</{self._thinking}>")
            if end < 0:
                return []  # reasoning is never read for edits, even drafts of them
            rest = line[end + len(self._thinking) + 3:]
            self._thinking = None
            return self._line(rest) if rest.strip() else []
        if self._block is None and self._fence is None:
            m = _THINK_OPEN_RE.match(line)
            if m:
                self._thinking = m.group(1).lower()
                return self._line(line[m.end():]) if f"</{self._thinking}>" in \
                    line[m.end():].lower() else []
        if self._block is not None:
            return self._block_line(line)
        f = self._fence
        if f is not None and f.is_diff:
            return self._diff_line(f, line)
        if SEARCH_RE.match(line):
            self._open_block()
            return []
        is_replace = bool(REPLACE_RE.match(line))
        if is_replace or DIVIDER_RE.match(line):
            if f is not None and not f.had_block and (
                    is_replace or not (f.path and _prose_file(f.path))):
                # a block whose SEARCH marker is missing: never a whole file (in a
                # markdown or RST file a ======= line is a heading's underline)
                f.stray_marker = f.stray_marker or self._line_no
                f.stray_replace = f.stray_replace or is_replace
            if is_replace:
                self._last_path = None  # a block lost its SEARCH line: its file is unknown
                self.errors.append(ParseError(self._line_no, f.path if f else None,
                                              f"line {self._line_no}: >>>>>>> REPLACE "
                                              f"without a <<<<<<< SEARCH before it; that "
                                              f"block was not applied"))
                return []
        fl = _fence_line(line, f.marker[0] if f is not None else None)
        if f is not None and fl is None and f.marker.startswith("<"):
            # a ``` fence after a path line inside a <source> block that never closed
            other = _fence_line(line, "`")
            if other is not None and other.opens and (
                    f.had_block or clean_path(self._prev_line, self.exists)):
                fl = other
        if f is not None and fl is not None and fl.opens and not _closes(f.marker, fl) \
                and not _shorter(fl.marker, f.marker) and (
                f.had_block or clean_path(self._prev_line, self.exists)
                or bare_token(self._prev_line, self.exists)):
            # "```python" after a block, or after a path line, in a fence that was never
            # closed: the fences are broken; a new fence starts here (a fence holding only
            # the path line is how some models name the file: no error then)
            path_only = len([ln for ln in f.body if ln.strip()]) == 1 and \
                clean_path(self._prev_line, self.exists) == f.path
            if f.path and not f.had_block and f.body and not path_only:
                self.errors.append(ParseError(
                    f.start_line, f.path,
                    f"whole-file block for {f.path} (line {f.start_line}) runs into "
                    f"another fence (line {self._line_no}); its fences look broken, so "
                    f"it was not applied"))
            self._fence = f = None
        if f is not None:
            if fl is not None and _closes(f.marker, fl):
                self._fence = None
                self._remember(line)
                # a fence line after a path line closes this fence, but may have been
                # meant to open the next block's (this fence's closing line was lost)
                self._lost_close = f.after_block > 0 if f.had_block else f.path is None
                # "a.py", a stray ``` and its closing line: a SEARCH block next is a.py's
                self._empty_named = f.path if not f.had_block and not f.body else None
                return self._close_fence(f)
            if not f.had_block and not f.body and not f.lang and (
                    line.startswith("diff --git ") or line.startswith("--- ")
                    and not _is_removed_dashes(line, self.exists)):
                # a git diff in a fence with no language: read it as the diff it is,
                # never as the whole content of the file named before the fence
                f.is_diff = True
                f.path = None
                return self._diff_line(f, line)
            if fl is not None and _nests(f.marker, fl) and not f.inner_open:
                f.inner_open = self._line_no  # ```python inside a ``` fence
            if not f.had_block:
                f.body.append(line)
            elif line.strip():
                f.after_block += 1
            self._remember(line)
            return []
        if fl is not None and not fl.marker.startswith("</"):
            self._open_fence(fl)
            return []
        if line.startswith("diff --git "):
            # an unfenced git diff: read as a diff until something else starts
            self._fence = f = _Fence("", self._line_no, True, None)
            return self._diff_line(f, line)
        self._remember(line)
        return []

    def _info_path(self, info: str) -> str | None:
        """The path a fence's info string names (```python a.py, ```diff:./Dockerfile)."""
        first = info.split()[0] if info else ""
        words = [w for word in info.split() for w in word.split(":") if w]
        info_path = next((p for p in (clean_path(w, self.exists) for w in words[1:] or words)
                          if p), None)
        if info_path is None and ":" in first:  # ```diff:./Dockerfile
            info_path = clean_path(first.split(":", 1)[1], self.exists)
        return info_path

    def _open_fence(self, fl: _FenceLine) -> None:
        info = fl.info
        first = info.split()[0] if info else ""
        lang = first.split(":", 1)[0].lower()
        info_path = self._info_path(info)
        if lang in DIFF_LANGS:
            # last_raw: a SEARCH/REPLACE block right inside a ```diff fence (models label
            # them so) takes its file from the path line before the fence or the info
            self._fence = _Fence(fl.marker, self._line_no, True, info_path, lang=lang,
                                 last_raw=info_path or self._prev_line)
        else:
            path = info_path or clean_path(self._prev_line, self.exists)
            self._fence = _Fence(fl.marker, self._line_no, False, path, lang=lang,
                                 mentioned=mentioned_path(self._prev_line, self.exists),
                                 bare=None if path else bare_token(self._prev_line,
                                                                   self.exists))
        self._prev_line = ""

    def _close_fence(self, f: _Fence) -> list[Edit]:
        """A fence closed: a whole-file edit, a fence that only names a path, or nothing."""
        body = [ln for ln in f.body if ln.strip()]
        if not f.had_block and len(body) == 1:
            named = clean_path(body[0], self.exists)
            if named and (f.path is None or named == f.path):
                self._prev_line = body[0]  # the path in a fence of its own
                return []
        if f.path and not f.had_block and f.body and f.stray_marker and not f.stray_replace:
            self.errors.append(ParseError(
                f.start_line, f.path,
                f"whole-file block for {f.path} (line {f.start_line}) has a ======= line "
                f"(line {f.stray_marker}), as if it were a SEARCH/REPLACE block missing its "
                f"markers; not applied"))
            return []
        if not (f.path and not f.had_block and f.body and not f.stray_marker):
            return []
        if len(body) > 1 and _decorated_path(body[-1]):
            self.errors.append(ParseError(
                f.start_line, f.path,
                f"whole-file block for {f.path} (line {f.start_line}) ends with a path "
                f"line ({body[-1].strip()!r}), as if its closing fence were lost and that "
                f"line named the next block's file; not applied"))
            return []
        if f.inner_open:
            self.errors.append(ParseError(
                f.start_line, f.path,
                f"whole-file block for {f.path} (line {f.start_line}) has a fence opening "
                f"inside it (line {f.inner_open}); its fences look broken, so it was not "
                f"applied"))
            return []
        edit = Edit(f.path, "", _join(f.body), "whole_file")
        mismatch = lang_mismatch(f.lang, f.path) if f.lang else None
        if mismatch == "shell":
            return []  # a command shown under a path line, not the file
        problem = whole_file_problem(f.path, f.body)
        if problem is None and mismatch:
            problem = f"is a ```{f.lang} block, which cannot be the content of {f.path}"
        dots = bare_elision(f.path, [], f.body) or stand_in_comment([], f.body) \
            if problem is None else None
        if dots:
            problem = (f"leaves code out (a {dots!r} line stands in for it); writing "
                       f"it would delete that code")
        if problem:
            self._hold(edit, f.start_line, f"whole-file block for {f.path} (line "
                                           f"{f.start_line}) {problem}; not applied")
            return []
        self._last_path = f.path
        return [edit]

    def _hold(self, edit: Edit, line: int, message: str) -> None:
        self.held.append(replace(edit, refused=message))
        self.errors.append(ParseError(line, edit.path, message))

    def _remember(self, line: str) -> None:
        if line.strip():
            self._prev2, self._prev_line = self._prev_line, line

    def _open_block(self) -> None:
        f = self._fence
        named = self._prev_line
        if f is None and self._lost_close and _fence_line(named) is not None \
                and clean_path(self._prev2, self.exists):
            named = self._prev2  # "1. `b.py`", "~~~~" (closing a ~~~ fence), SEARCH
        elif f is None and self._empty_named and _fence_line(named) is not None:
            named = self._empty_named
        inner = _fence_line(named) if f is not None else None
        if inner is not None:
            # a path line (or a lone word), then a fence line that could not open a fence
            # (```python, ~~~~~), inside a fence that a stray fence line opened (a ````
            # whose opening line was lost), before or after other blocks: the fence's info
            # or the line before it names this block's file, as outside a fence, never
            # the previous block's file
            named = self._info_path(inner.info) or self._prev2
        path = clean_path(named, self.exists)
        bare = bare_token(named, self.exists)
        if path is None and not bare and f is not None and f.path and not f.had_block and (
                not f.inner_open or [ln for ln in f.body if ln.strip()] == [self._prev_line]):
            # (after a block in this fence, a block with no path line is the previous
            # block's file, which a path line in the fence may have changed)
            # (a fence line right after the fence's opening, "a.py", "~~~", "~~~~~python":
            # a stray fence line, and the block is still the named file's)
            path = f.path
        bare = bare or (f.bare if f is not None else None)
        if path is None and bare:
            self._last_path = None  # a block after this one without a path is refused too
            self.errors.append(ParseError(self._line_no, None,
                                          f"line {self._line_no}: {bare!r} before the "
                                          f"<<<<<<< SEARCH block is not a file path (no "
                                          f"extension or folder); block not applied"))
            if f is not None:
                f.had_block, f.after_block = True, 0
                f.body.clear()
            self._block = _Block(None, self._line_no, fence=f.marker if f else None)
            return
        if path is None:
            path = mentioned_path(named, self.exists)
        if path is None and f is not None:
            path = f.mentioned
        if path is None:
            path = self._last_path or self.default_path
        if f is not None:
            f.had_block, f.after_block = True, 0
            f.body.clear()
        if path is None:
            self.errors.append(ParseError(self._line_no, None,
                                          f"line {self._line_no}: <<<<<<< SEARCH block "
                                          f"without a file path line before it"))
        self._block = _Block(path, self._line_no, fence=f.marker if f else None)

    def _block_error(self, b: _Block, message: str) -> None:
        if b.path is not None:  # a block with no path was reported when it opened
            self.errors.append(ParseError(b.start_line, b.path, message))

    def _block_line(self, line: str) -> list[Edit]:
        b = self._block
        assert b is not None
        if SEARCH_RE.match(line):
            return self._reopen(b, line)
        if REPLACE_RE.match(line):
            self._block = None
            self._prev_line = ""
            if b.stage == "search":
                b.broken = b.broken or (f"line {self._line_no}: >>>>>>> REPLACE before "
                                        f"its ======= line")
            if b.path is None:
                return []  # already recorded as an error when the block opened
            if b.broken:
                self._block_error(b, f"SEARCH/REPLACE block for {b.path} (line "
                                     f"{b.start_line}) is malformed ({b.broken}); "
                                     f"not applied")
                self._last_path = b.path  # a block after it with no path is its file's
                return []
            self._last_path = b.path
            edit = Edit(b.path, _join(b.search), _join(b.replace), "search_replace")
            dots = bare_elision(b.path, b.search, b.replace) \
                or stand_in_comment(b.search, b.replace)
            if dots:
                self._hold(edit, b.start_line, f"SEARCH/REPLACE block for {b.path} (line "
                                               f"{b.start_line}): its REPLACE part leaves "
                                               f"code out (a {dots!r} line stands in for "
                                               f"it); applying it would delete that code, "
                                               f"so it is not applied")
                return []
            return [edit]
        if b.after_close is not None:
            b.after_close.append((self._line_no, line))
        elif b.fence is not None:
            fl = _fence_line(line, b.fence[0])
            if fl is not None and _closes(b.fence, fl):
                b.after_close = []  # content, unless no REPLACE marker ever comes
        if b.stage == "search":
            if DIVIDER_RE.match(line):
                b.stage = "replace"
            else:
                b.search.append(line)
            return []
        if b.extra_divider is not None:
            if not line.strip():
                b.extra_blank += 1  # blank lines between it and >>>>>>> REPLACE: still a slip
                return []
            no, divider = b.extra_divider  # it was not right before >>>>>>> REPLACE
            b.extra_divider = None
            b.broken = b.broken or f"line {no}: a second ======= line"
            b.replace.extend([divider] + [""] * b.extra_blank)
        if DIVIDER_RE.match(line):
            if not b.replace:
                # a doubled divider is a common model slip; the replacement starts after it
                return []
            if not b.broken:
                # right before >>>>>>> REPLACE it is a slip too (Aider reads it so)
                b.extra_divider = (self._line_no, line)
                return []
            b.broken = b.broken or f"line {self._line_no}: a second ======= line"
        b.replace.append(line)
        return []

    def _reopen(self, b: _Block, line: str) -> list[Edit]:
        """A SEARCH marker inside an open block: the open block is broken (never
        applied); lines after a fence that closed it are read again as answer text."""
        if b.stage == "search" and not "".join(b.search).strip():
            # a doubled SEARCH marker is a model slip, like a doubled divider
            self._block = _Block(b.path, b.start_line, fence=b.fence)
            return []
        where = "=======" if b.stage == "search" else ">>>>>>> REPLACE"
        self._block_error(b, f"SEARCH/REPLACE block for {b.path} (line {b.start_line}) "
                             f"has no {where} line before the next <<<<<<< SEARCH; "
                             f"not applied")
        self._block = None
        out = self._replay(b)
        if self._block is not None:  # the replay opened a block of its own
            return out + self._block_line(line)
        out.extend(self._line(line))
        return out

    def _replay(self, b: _Block) -> list[Edit]:
        """Read the lines a broken block swallowed again as answer text: the next
        block's path line (and fence) are among them."""
        if b.after_close is not None:
            self._fence = None
            swallowed = b.after_close
        else:
            tail = b.replace if b.stage == "replace" else b.search
            swallowed = [(self._line_no - len(tail) + i, ln) for i, ln in enumerate(tail)]
            self._last_path = b.path or self._last_path
        self._prev_line = ""
        here, out = self._line_no, []
        for no, ln in swallowed:
            self._line_no = no
            out.extend(self._line(ln))
        self._line_no = here
        return out

    # -- unified diffs -----------------------------------------------------------
    def _diff_line(self, f: _Fence, line: str) -> list[Edit]:
        prev, f.last_raw = f.last_raw, line
        fl = _fence_line(line, f.marker[0] if f.marker else None)
        if fl is not None and line[:1] == " " and line[1:2] != " " and f.in_hunk \
                and not self._hunk_full(f):
            fl = None  # " ```": a context line holding a fence, the hunk's counts want more
        if fl is not None and f.marker and _closes(f.marker, fl):
            empty = not (f.hunks or f.emitted or f.old_path or f.new_path or f.git_old
                         or f.loose)
            out = self._close_diff_file(f, complete=True, end=True)
            self._fence = None
            self._prev_line = ""
            if empty:  # a stray ```diff: its "closing" line may open the next block's fence
                self._prev2, self._prev_line = prev, line
                self._lost_close, self._empty_named = True, None
            return out
        if f.marker and SEARCH_RE.match(line) and not (
                f.hunks or f.old_path or f.new_path or f.git_old or f.emitted or f.loose):
            # a SEARCH/REPLACE block in a fence labelled diff (models label them so) before
            # any diff line: an ordinary fence holds it, and its closing line closes it
            # (never opens a fence that swallows the rest of the answer)
            self._fence = _Fence(f.marker, f.start_line, False, f.path, lang=f.lang)
            self._prev_line = prev  # the path line before the fence, or inside it
            return self._line(line)
        if (fl is not None and (fl.opens or not f.marker)) or SEARCH_RE.match(line) \
                or REPLACE_RE.match(line):
            # a new fence or an edit block: a fenced diff was never closed, so its last
            # hunk may be cut off (an unfenced diff simply ends); read the line again
            out = self._close_diff_file(f, complete=not f.marker, end=True)
            self._fence = None
            self._prev_line = prev  # perhaps the next block's path line
            return out + self._line(line)
        full = self._hunk_full(f)
        if _GIT_HEADER_RE.match(line):
            return self._git_header(f, line)
        if line.startswith("--- ") and (not f.in_hunk or full
                                        or not _is_removed_dashes(line, self.exists)):
            # the ---/+++ pair of the section a `diff --git` line opened, or a new section
            out = self._close_diff_file(f, complete=True) if f.hunks or f.old_path else []
            f.old_path = _diff_path(line[4:]) or None
            return out
        if line.startswith("+++ ") and f.new_path is None and f.old_path is not None \
                and not f.in_hunk:
            f.new_path = _diff_path(line[4:]) or None
            return []
        if line.startswith("+++ ") and f.in_hunk and prev.startswith("--- ") and \
                f.hunk_ops and f.hunk_ops[-1] == ("-", prev[1:]) and not f.tail and \
                _header_pair(prev[4:], line[4:]):
            # `--- x` then `+++ x`: the line taken for a removed one was the next file's
            # header after all (x had no extension: `--- main`)
            f.hunk_ops.pop()
            f.hunk_old.pop()
            f.seen_old -= 1
            out = self._close_diff_file(f, complete=True)
            f.old_path = _diff_path(prev[4:]) or None
            f.new_path = _diff_path(line[4:]) or None
            return out
        if HUNK_HEADER_RE.match(line):
            out = self._close_hunk(f, trim=True)
            f.in_hunk = True
            f.hunk_start = self._line_no
            start = _OLD_START_RE.match(line)
            f.hunk_line = int(start.group(1)) if start else None
            nums = _NUMBERS_RE.match(line)
            f.numbers = None if nums is None else HunkNumbers(
                int(nums.group(1)), int(nums.group(2) or 1), int(nums.group(3)),
                int(nums.group(4) or 1))
            f.seen_old = f.seen_new = 0
            f.hunks += 1
            return out
        if not f.in_hunk:
            if not f.marker and line.strip() and not line.startswith(("+", "-", " ")):
                # prose after an unfenced diff: the diff has ended
                out = self._close_diff_file(f, complete=True, end=True)
                self._fence = None
                return out + self._line(line)
            if line[:1] in "+-" and line.strip("+- "):
                f.loose = f.loose or self._line_no
            return []  # prose between files, or the header area
        tag = line[:1]
        if tag not in (" ", "+", "-", "\\") or full and line.rstrip() == "---":
            # (a lone --- after the counted lines is a markdown rule, not a removed "--")
            if full:
                if not f.marker and line.strip():
                    out = self._close_diff_file(f, complete=True, end=True)
                    self._fence = None
                    return out + self._line(line)
                f.tail.append(line)  # a blank line or prose after the counted lines
                return []
            # models often drop the leading space of an unchanged line
            self._hunk_content(f, " ", line)
            f.unprefixed += 1
            return []
        for held in f.tail:  # the counts were wrong: those lines were context after all
            self._hunk_content(f, " ", held)
        f.tail = []
        f.unprefixed = 0
        self._hunk_content(f, tag, line[1:])
        return []

    def _hunk_content(self, f: _Fence, tag: str, body: str) -> None:
        if tag == "\\":  # "\ No newline at end of file" after the line before it
            last = "+" if f.old_path == "/dev/null" else (f.hunk_ops[-1][0] if f.hunk_ops
                                                          else "")
            old, new = f.no_eol
            f.no_eol = (old or last in "=-" and last != "", new or last in "=+" and last != "")
            return
        if f.old_path == "/dev/null":
            if tag in "+ ":
                f.new_file.append(body)
                f.seen_new += 1
            return
        if tag in " -":
            f.hunk_old.append(body)
            f.seen_old += 1
        if tag in " +":
            f.hunk_new.append(body)
            f.seen_new += 1
        f.hunk_ops.append(("=" if tag == " " else tag, body))

    def _hunk_full(self, f: _Fence) -> bool:
        n = f.numbers
        return f.in_hunk and n is not None and f.seen_old >= (
            0 if f.old_path == "/dev/null" else n.old_len) and f.seen_new >= n.new_len

    def _git_header(self, f: _Fence, line: str) -> list[Edit]:
        """`diff --git`, `index`, mode, rename and binary lines: they end the hunk before
        them and describe the next file, never its content."""
        if line.startswith("diff --git "):
            out = self._close_diff_file(f, complete=True)
            f.git_old, f.git_new = _git_paths(line)
            return out
        out = self._close_hunk(f, trim=True)
        if line.startswith(("rename ", "copy ")):
            _word, side, name = line.split(" ", 2)
            old, new = (f.rename or " -> ").split(" -> ")
            old, new = (name.strip(), new) if side == "from" else (old, name.strip())
            f.rename = f"{old} -> {new}"
        elif line.startswith("deleted file mode"):
            f.deleted = True
        elif line.startswith(("Binary files", "GIT binary patch")):
            f.binary = True
        return out

    def _diff_target(self, f: _Fence) -> tuple[str | None, str | None]:
        """(path, None) for the file a diff section edits, or (path or None, why the
        section is refused)."""
        old = f.old_path or f.git_old
        new = f.new_path or f.git_new
        if old is None and new is None:
            old = new = f.path  # ```diff:./Dockerfile names the file in its info
        name = new if new not in (None, "/dev/null") else old
        if f.binary:
            return name, f"diff for {name or '?'} is a binary patch; not applied"
        if f.rename:
            a, b = f.rename.split(" -> ")
            return name, (f"diff renames or copies {a} to {b}; renaming files is not "
                          f"supported (rename it yourself, then ask for the edit again), "
                          f"so its hunks were not applied")
        if new == "/dev/null" or f.deleted:
            return old, (f"diff deletes {old}; deleting files is not supported, delete it "
                         f"yourself")
        if old == "/dev/null":
            return new, None
        if old and new and not _same_file(old, new):
            return new, (f"diff renames {old} to {new} (its ---/+++ paths differ); "
                         f"renaming files is not supported, so its hunks were not applied")
        return name, None

    def _section_problem(self, f: _Fence, path: str | None, why: str | None) -> bool:
        """Record a refused diff section once; True when its hunks must be dropped."""
        if why is None and path is not None:
            return False
        if not f.reported:
            f.reported = True
            f.emitted += 1
            self.errors.append(ParseError(
                f.hunk_start or f.start_line, path,
                why or f"line {f.hunk_start}: diff hunk without ---/+++ file headers"))
        return True

    def _close_hunk(self, f: _Fence, *, trim: bool = False) -> list[Edit]:
        if not f.in_hunk or f.old_path == "/dev/null":
            return []
        f.in_hunk = False
        old, new, ops = f.hunk_old, f.hunk_new, f.hunk_ops
        cut = _trailing_cut([t for _, t in ops], f.unprefixed, blank_only=not trim)
        if cut and not f.tail:
            # trailing lines with no prefix: prose or a separator before the next header,
            # a blank line before the closing fence
            old, new, ops = old[:len(old) - cut], new[:len(new) - cut], ops[:len(ops) - cut]
        no_eol, f.no_eol = f.no_eol, (False, False)
        f.hunk_old, f.hunk_new, f.hunk_ops, f.tail, f.unprefixed = [], [], [], [], 0
        path, why = self._diff_target(f)
        if self._section_problem(f, path, why):
            return []
        assert path is not None
        if old == new and no_eol[0] == no_eol[1]:
            self._last_path = path  # a no-op hunk still names the file a block reuses
            return []
        f.emitted += 1
        edit = Edit(path, _join(old), _join(new), "udiff", f.hunk_line, f.numbers,
                    ops=tuple(ops), old_no_eol=no_eol[0], new_no_eol=no_eol[1])
        dots = bare_elision(path, old, new) or stand_in_comment(old, new)
        if dots:
            self._hold(edit, f.hunk_start, f"diff hunk for {path} (line {f.hunk_start}) "
                                           f"leaves code out (a {dots!r} line stands "
                                           f"in for it); not applied")
            return []
        self._last_path = path
        return [edit]

    def _close_diff_file(self, f: _Fence, *, complete: bool, end: bool = False
                         ) -> list[Edit]:
        """End the current file section of a diff (at the next file's header, or at the
        end of the diff when `end`)."""
        out: list[Edit] = []
        if not complete:
            if f.in_hunk or f.new_file:
                self.errors.append(ParseError(f.hunk_start, self._diff_target(f)[0],
                                              f"diff for {self._diff_target(f)[0] or '?'} "
                                              f"has no closing fence; its last hunk may be "
                                              f"cut off and was not applied"))
                f.emitted += 1
        elif f.old_path == "/dev/null":
            path, why = self._diff_target(f)
            cut = _trailing_cut(f.new_file, f.unprefixed, blank_only=True)
            if cut and not f.tail:  # a blank line before the closing fence or next file
                f.new_file = f.new_file[:len(f.new_file) - cut]
            if (f.new_file or f.in_hunk) and not self._section_problem(f, path, why):
                assert path is not None
                f.emitted += 1
                self._last_path = path
                out.append(Edit(path, "", _join(f.new_file), "udiff", None, f.numbers,
                                creates=True,
                                ops=tuple(("+", ln) for ln in f.new_file),
                                new_no_eol=f.no_eol[1]))
                f.no_eol = (False, False)
        else:
            out = self._close_hunk(f, trim=not end)
            if not f.reported and (f.rename or f.binary or f.deleted):
                self._section_problem(f, *self._diff_target(f))
        if f.loose and (end or complete) and f.emitted == 0:
            path = self._diff_target(f)[0]
            self.errors.append(ParseError(
                f.loose, path, f"line {f.loose}: the diff for {path or '?'} has +/- "
                               f"lines but no @@ hunk header; it was not applied (a "
                               f"diff needs ---/+++ and @@ lines)"))
        # a new file section starts
        keep_path, keep_marker, keep_start = f.path, f.marker, f.start_line
        emitted = f.emitted
        f.__init__(keep_marker, keep_start, True, keep_path, lang=f.lang)  # type: ignore[misc]
        f.emitted = emitted
        return out


def _trailing_cut(lines: list[str], unprefixed: int, *, blank_only: bool) -> int:
    """How many of a hunk's last `unprefixed` lines (written with no ' '/'+'/'-') to drop:
    all of them before the next file's header, only blank ones before the closing fence
    (a model's blank line there is not context; a dropped-space code line is)."""
    if not blank_only:
        return unprefixed
    n = 0
    while n < unprefixed and not lines[len(lines) - 1 - n].strip():
        n += 1
    return n


def _decorated_path(line: str) -> bool:
    """A line shaped as the path line before a block (`a.py:`, `**a.py**`, `` `a.py` ``,
    `# a.py`, `File: a.py`): never the last line of a file's content; a bare `a.py` may be
    (a list of files), so it is not one."""
    s = line.strip()
    if clean_path(s) is None:
        return False
    wrapped = len(s) > 4 and (s[:2] == s[-2:] == "**" or s[0] == s[-1] == "`")
    return wrapped or s.endswith(":") or s.startswith("#") \
        or s.lower().startswith(("file:", "filename:", "path:"))


def _prose_file(path: str) -> bool:
    """Markdown, RST, text: files where a line of `=` underlines a heading."""
    return path.lower().endswith((".md", ".markdown", ".rst", ".txt", ".adoc", ".mdx"))


def _header_pair(old: str, new: str) -> bool:
    """`--- main` / `+++ main`: one file's header pair, not a removed and an added line."""
    a, b = _diff_path(old), _diff_path(new)
    return bool(a) and not any(c.isspace() for c in a + b) and _same_file(a, b)


def _is_removed_dashes(line: str, exists: Exists | None = None) -> bool:
    """Inside a hunk, `--- x` is a removed line starting with '-- ' unless a +++ follows.

    We cannot look ahead in a stream, so a hunk line `--- ` is treated as a file header
    only when it looks like one (has a path-ish word and no code punctuation)."""
    rest = line[4:].strip()
    raw = rest.split("\t")[0]
    named = clean_path(raw) or clean_path(_diff_path(rest), exists)
    return not rest or named is None and rest != "/dev/null"


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def parse_edits(text: str, exists: Exists | None = None) -> list[Edit]:
    """All edits of a complete answer (errors are dropped; use StreamingParser to see them)."""
    p = StreamingParser(exists)
    edits = p.feed(text)
    edits.extend(p.finish())
    return edits
