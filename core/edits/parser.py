"""Streaming parser for the edit formats a model answer may use.

Why line-based: the parser only ever acts on *complete* lines and keeps the partial last
line in a buffer, so feeding a stream in chunks of any size (down to one character)
gives exactly the edits the whole text gives at once.  The partial line is still shown
in `pending`, so the app can draw the block being written live.

Formats (several per answer, several files):
- SEARCH/REPLACE: a path line, then `<<<<<<< SEARCH`, old lines, `=======`, new lines,
  `>>>>>>> REPLACE`.  The path may sit before a ``` fence or inside it; with no path the
  previous block's path is reused (models do that for several blocks in one file).
- unified diff in a ```diff fence: `--- a/x`, `+++ b/x`, `@@ ... @@` hunks; each hunk
  becomes one edit (context + removed lines -> context + added lines).
- whole file: a fenced block right after a path line (or with the path in the fence's
  info string) that holds no SEARCH/REPLACE block; meant for new files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SEARCH_RE = re.compile(r"^\s*<{5,9} ?SEARCH\s*>?\s*$")
DIVIDER_RE = re.compile(r"^\s*={5,9}\s*$")
REPLACE_RE = re.compile(r"^\s*>{5,9} ?REPLACE\s*<?\s*$")
FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`]*?)\s*$")
HUNK_HEADER_RE = re.compile(r"^@@.*@@")
_OLD_START_RE = re.compile(r"^@@\s*-(\d+)")
DIFF_LANGS = {"diff", "patch", "udiff"}

# Words that appear alone before a fence but are not file names.
_NOT_PATHS = {
    "python", "py", "diff", "patch", "bash", "sh", "shell", "console", "text", "txt",
    "json", "yaml", "toml", "javascript", "js", "typescript", "ts", "rust", "go", "c",
    "cpp", "java", "html", "css", "sql", "markdown", "md", "plaintext", "udiff", "ini",
}
_BARE_NAMES = {"Makefile", "Dockerfile", "LICENSE", "README", "Procfile", "Justfile",
               "Vagrantfile", "Gemfile", "Rakefile", "Jenkinsfile", "Containerfile",
               "Pipfile", "Brewfile", "Caddyfile", "Snakefile", "CODEOWNERS"}
_DECORATION = "*`'\"_"  # characters models wrap a path line in


@dataclass(frozen=True)
class Edit:
    """One complete edit: replace `search` (exact old lines) by `replace` in `path`."""

    path: str
    search: str
    replace: str
    kind: str  # "search_replace" | "udiff" | "whole_file"
    line: int | None = field(default=None, compare=False)  # a diff hunk's @@ old start


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


def clean_path(line: str) -> str | None:
    """The file name a line names, or None when the line is not just a path.

    Tolerates the decorations models add: `**foo.py**`, `` `foo.py` ``, `# foo.py`,
    `foo.py:`, `File: foo.py`.
    """
    s = line.strip().lstrip("\ufeff")
    if not s or len(s) > 260:
        return None
    s = s.lstrip("#").strip()
    for _ in range(4):  # peel nested decorations: **`"a.py"`**:
        before = s
        s = s.strip(_DECORATION).strip().rstrip(":").strip()
        for prefix in ("file:", "filename:", "path:"):
            if s.lower().startswith(prefix):
                s = s[len(prefix):].strip()
        if s == before:
            break
    if not s or any(ch.isspace() for ch in s) or s.lower() in _NOT_PATHS:
        return None
    if s.startswith(("<", "=", ">", "-", "+", "@")) or s.endswith((".", ",", ";", "!")):
        return None
    name = s.rsplit("/", 1)[-1]
    dotfile = name.startswith(".") and name[1:2].isalnum()
    if "." in name.strip(".") or "/" in s or name in _BARE_NAMES or dotfile:
        return s.removeprefix("./")
    return None


_BARE_TOKEN = re.compile(r"^[A-Za-z0-9_][\w.-]*$")
_LEAD_INS = {"next", "then", "also", "and", "here", "now", "finally", "first", "second",
             "third", "update", "updated", "change", "changes", "fix", "edit", "edits",
             "replace", "before", "after", "example", "result", "code", "so", "again"}


def bare_token(line: str) -> str | None:
    """A lone word on a path line's spot that is not a recognisable path ("pkg",
    "utils"): the block after it is refused rather than given the previous path."""
    s = line.strip().lstrip("#").strip().strip(_DECORATION).strip()
    if s.endswith(":") and s[:-1].strip(_DECORATION).lower() in _LEAD_INS:
        return None  # "Next:" is prose leading into the block, not a file name
    s = s.rstrip(":").strip(_DECORATION)
    if not s or not _BARE_TOKEN.match(s) or s.lower() in _NOT_PATHS or clean_path(s):
        return None
    return s


_TICKED = re.compile(r"`([^`\s]+)`")


def mentioned_path(line: str) -> str | None:
    """The one file a prose line names in backticks ("In `src/a.py`:"), else None.

    Used only to name a SEARCH block that has no path line of its own, never to start a
    whole-file edit, so prose mentioning a file cannot create one."""
    found = [p for p in (clean_path(t) for t in _TICKED.findall(line)) if p]
    return found[0] if len(set(found)) == 1 else None


def _diff_path(rest: str) -> str | None:
    """The path from a `--- a/x` / `+++ b/x` header line (None for /dev/null)."""
    p = rest.strip().split("\t", 1)[0].strip()
    if p == "/dev/null" or not p:
        return None
    if p[:2] in ("a/", "b/"):
        p = p[2:]
    return p


@dataclass
class _Block:
    """Mutable state of the SEARCH/REPLACE block being read."""

    path: str | None
    start_line: int
    stage: str = "search"
    search: list[str] = field(default_factory=list)
    replace: list[str] = field(default_factory=list)
    broken: str | None = None  # why the block must not be applied, once known
    fence: str | None = None  # marker of the ``` fence the block sits in
    # lines seen after a line that would close that fence: if the block then turns
    # out to have no REPLACE marker, they are read again as ordinary answer lines
    after_close: list[tuple[int, str]] | None = None


@dataclass
class _Fence:
    """Mutable state of an open ``` fence outside any SEARCH/REPLACE block."""

    marker: str
    start_line: int
    is_diff: bool
    path: str | None  # path named before the fence or in its info string
    body: list[str] = field(default_factory=list)
    had_block: bool = False
    stray_marker: int = 0  # line of a ======= / >>>>>>> REPLACE with no SEARCH
    inner_open: int = 0  # line of a fence with an info string inside this fence
    mentioned: str | None = None  # a file named in backticks on the line before
    bare: str | None = None  # an unrecognisable lone word on the line before
    # unified-diff state
    old_path: str | None = None
    new_path: str | None = None
    in_hunk: bool = False
    hunk_start: int = 0
    hunk_old: list[str] = field(default_factory=list)
    hunk_new: list[str] = field(default_factory=list)
    new_file: list[str] = field(default_factory=list)  # body of a --- /dev/null diff
    hunk_line: int | None = None  # old start line from the @@ header
    last_raw: str = ""  # the diff's previous line, in case it was the next path line


class StreamingParser:
    """Turns a streamed model answer into `Edit`s as soon as each one is complete."""

    def __init__(self) -> None:
        self.errors: list[ParseError] = []
        self._buf = ""
        self._line_no = 0
        self._prev_line = ""  # last non-blank complete line seen outside a block
        self._last_path: str | None = None
        self._block: _Block | None = None
        self._fence: _Fence | None = None
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
                out.extend(self._close_diff_file(f, complete=False))
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
            if f.in_hunk:
                return PendingEdit(f.new_path or f.old_path, _join(f.hunk_old),
                                   _join(f.hunk_new), "udiff", "replace")
            if f.new_file:
                return PendingEdit(f.new_path, "", _join(f.new_file), "udiff", "replace")
            return PendingEdit(f.new_path or f.old_path, "", "", "udiff", "path")
        if f.path and not f.had_block:
            return PendingEdit(f.path, "", _join(f.body) + tail, "whole_file",
                               "replace" if f.body or tail else "path")
        return None

    # -- line state machine ---------------------------------------------------------
    def _line(self, line: str) -> list[Edit]:
        if self._block is not None:
            return self._block_line(line)
        f = self._fence
        if f is not None and f.is_diff:
            return self._diff_line(f, line)
        if SEARCH_RE.match(line):
            self._open_block()
            return []
        if REPLACE_RE.match(line) or DIVIDER_RE.match(line):
            if f is not None and not f.had_block:
                # a block whose SEARCH marker is missing: never a whole file
                f.stray_marker = f.stray_marker or self._line_no
            if REPLACE_RE.match(line):
                self.errors.append(ParseError(self._line_no, f.path if f else None,
                                              f"line {self._line_no}: >>>>>>> REPLACE "
                                              f"without a <<<<<<< SEARCH before it; that "
                                              f"block was not applied"))
                return []
        m = FENCE_RE.match(line)
        if f is not None and m and m.group(3) and (
                f.had_block or clean_path(self._prev_line) or bare_token(self._prev_line)):
            # "```python" after a block, or after a path line, in a fence that was never
            # closed: the fences are broken; a new fence starts here
            if f.path and not f.had_block and f.body:
                self.errors.append(ParseError(
                    f.start_line, f.path,
                    f"whole-file block for {f.path} (line {f.start_line}) runs into "
                    f"another fence (line {self._line_no}); its fences look broken, so "
                    f"it was not applied"))
            self._fence = f = None
        if f is not None:
            if m and m.group(3) == "" and _closes(f.marker, m.group(2)):
                self._fence = None
                self._remember(line)
                if f.path and not f.had_block and f.body and not f.stray_marker:
                    if f.inner_open:
                        self.errors.append(ParseError(
                            f.start_line, f.path,
                            f"whole-file block for {f.path} (line {f.start_line}) has a "
                            f"fence opening inside it (line {f.inner_open}); its fences "
                            f"look broken, so it was not applied"))
                        return []
                    self._last_path = f.path
                    return [Edit(f.path, "", _join(f.body), "whole_file")]
                return []
            if m and m.group(3) and _closes(f.marker, m.group(2)) and not f.inner_open:
                f.inner_open = self._line_no  # ```python inside a ``` fence
            if not f.had_block:
                f.body.append(line)
            self._remember(line)
            return []
        if m:
            info = m.group(3)
            lang = info.split()[0].lower() if info else ""
            words = [w for word in info.split() for w in word.split(":") if w]
            info_path = next((p for p in (clean_path(w) for w in words[1:] or words) if p),
                             None)
            if lang in DIFF_LANGS:
                self._fence = _Fence(m.group(2), self._line_no, True, None)
            else:
                path = info_path or clean_path(self._prev_line)
                self._fence = _Fence(m.group(2), self._line_no, False, path,
                                     mentioned=mentioned_path(self._prev_line),
                                     bare=None if path else bare_token(self._prev_line))
            self._prev_line = ""
            return []
        self._remember(line)
        return []

    def _remember(self, line: str) -> None:
        if line.strip():
            self._prev_line = line

    def _open_block(self) -> None:
        f = self._fence
        path = clean_path(self._prev_line)
        bare = bare_token(self._prev_line)
        if path is None and not bare and f is not None and f.path and not f.inner_open:
            path = f.path
        bare = bare or (f.bare if f is not None else None)
        if path is None and bare:
            self.errors.append(ParseError(self._line_no, None,
                                          f"line {self._line_no}: {bare!r} before the "
                                          f"<<<<<<< SEARCH block is not a file path (no "
                                          f"extension or folder); block not applied"))
            if f is not None:
                f.had_block = True
                f.body.clear()
            self._block = _Block(None, self._line_no, fence=f.marker if f else None)
            return
        if path is None:
            path = mentioned_path(self._prev_line)
        if path is None and f is not None:
            path = f.mentioned
        if path is None:
            path = self._last_path
        if f is not None:
            f.had_block = True
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
                return []
            self._last_path = b.path
            return [Edit(b.path, _join(b.search), _join(b.replace), "search_replace")]
        if b.after_close is not None:
            b.after_close.append((self._line_no, line))
        elif b.fence is not None:
            m = FENCE_RE.match(line)
            if m and m.group(3) == "" and _closes(b.fence, m.group(2)):
                b.after_close = []  # content, unless no REPLACE marker ever comes
        if b.stage == "search":
            if DIVIDER_RE.match(line):
                b.stage = "replace"
            else:
                b.search.append(line)
            return []
        if DIVIDER_RE.match(line):
            if not b.replace:
                # a doubled divider is a common model slip; the replacement starts after it
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
        m = FENCE_RE.match(line)
        if m and m.group(3) == "" and _closes(f.marker, m.group(2)):
            out = self._close_diff_file(f, complete=True)
            self._fence = None
            self._prev_line = ""
            return out
        if (m and m.group(3)) or SEARCH_RE.match(line) or REPLACE_RE.match(line):
            # a new fence or an edit block: this diff's fence was never closed, so its
            # last hunk may be cut off; read the line again outside the diff
            out = self._close_diff_file(f, complete=False)
            self._fence = None
            self._prev_line = prev  # perhaps the next block's path line
            return out + self._line(line)
        if line.startswith("--- ") and not (f.in_hunk and _is_removed_dashes(line)):
            out = self._close_diff_file(f, complete=True)
            f.old_path = _diff_path(line[4:]) or "/dev/null"
            f.new_path = None
            return out
        if line.startswith("+++ ") and f.new_path is None and f.old_path is not None \
                and not f.in_hunk:
            f.new_path = _diff_path(line[4:])
            return []
        if HUNK_HEADER_RE.match(line):
            out = self._close_hunk(f)
            f.in_hunk = True
            f.hunk_start = self._line_no
            start = _OLD_START_RE.match(line)
            f.hunk_line = int(start.group(1)) if start else None
            return out
        if not f.in_hunk:
            return []  # "diff --git", "index ..." and prose between files
        tag, body = (line[:1], line[1:]) if line else (" ", "")
        if f.old_path == "/dev/null":
            if tag == "+" or tag == " ":
                f.new_file.append(body)
            return []
        if tag == " ":
            f.hunk_old.append(body)
            f.hunk_new.append(body)
        elif tag == "-":
            f.hunk_old.append(body)
        elif tag == "+":
            f.hunk_new.append(body)
        elif tag == "\\":
            pass  # "\ No newline at end of file"
        else:
            # models often drop the leading space of an unchanged line
            f.hunk_old.append(line)
            f.hunk_new.append(line)
        return []

    def _close_hunk(self, f: _Fence) -> list[Edit]:
        if not f.in_hunk or f.old_path == "/dev/null":
            return []
        f.in_hunk = False
        old, new = f.hunk_old, f.hunk_new
        f.hunk_old, f.hunk_new = [], []
        path = f.new_path or (None if f.old_path == "/dev/null" else f.old_path)
        if path is None:
            self.errors.append(ParseError(f.hunk_start, None,
                                          f"line {f.hunk_start}: diff hunk without "
                                          f"---/+++ file headers"))
            return []
        if f.new_path is None and f.old_path not in (None, "/dev/null"):
            self.errors.append(ParseError(f.hunk_start, f.old_path,
                                          f"diff deletes {f.old_path}; deleting files "
                                          f"is not supported, delete it yourself"))
            return []
        if old == new:
            return []
        self._last_path = path
        return [Edit(path, _join(old), _join(new), "udiff", f.hunk_line)]

    def _close_diff_file(self, f: _Fence, *, complete: bool) -> list[Edit]:
        if not complete:
            if f.in_hunk or f.new_file:
                self.errors.append(ParseError(f.hunk_start, f.new_path or f.old_path,
                                              f"diff for {f.new_path or f.old_path or '?'} "
                                              f"has no closing fence; its last hunk may be "
                                              f"cut off and was not applied"))
            f.in_hunk = False
            f.new_file = []
            return []
        if f.old_path == "/dev/null":
            f.in_hunk = False
            body, f.new_file = f.new_file, []
            if f.new_path is None:
                return []
            self._last_path = f.new_path
            return [Edit(f.new_path, "", _join(body), "udiff")] if body else []
        return self._close_hunk(f)


def _is_removed_dashes(line: str) -> bool:
    """Inside a hunk, `--- x` is a removed line starting with '-- ' unless a +++ follows.

    We cannot look ahead in a stream, so a hunk line `--- ` is treated as a file header
    only when it looks like one (has a path-ish word and no code punctuation)."""
    rest = line[4:].strip()
    return not rest or clean_path(rest.split("\t")[0]) is None and rest != "/dev/null"


def _closes(opening: str, candidate: str) -> bool:
    return candidate[0] == opening[0] and len(candidate) >= len(opening)


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def parse_edits(text: str) -> list[Edit]:
    """All edits of a complete answer (errors are dropped; use StreamingParser to see them)."""
    p = StreamingParser()
    edits = p.feed(text)
    edits.extend(p.finish())
    return edits
