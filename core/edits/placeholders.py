"""Blocks that look like edits but must never be written as a file's content.

Why: replayed on thousands of real model answers, a fenced block under a path line was
often not the file at all: a placeholder (`[Contents of App.tsx go here]`, `// Content of
the file here`), just the file's own path again, a pseudo-diff (`+`/`-` lines in a
```` ```diff:./Dockerfile ```` or ```` ```python ```` fence), or a REPLACE that stands in
for code with a bare `...`.  Written as the file's whole content, each of these cuts an
existing file to a line or two.  The parser asks these questions before it hands a
whole-file block (or a REPLACE) on; an answer is refused with the reason instead.
"""

from __future__ import annotations

import re

from core.edits.paths import clean_path

_VOCAB = (r"(?:contents?|code|implementation|file|body|logic|functions?|methods?|classes?|"
          r"imports?|definitions?|components?|styles?|tests?)")
_COMMENT = r"(?:#+|//+|/\*+|<!--|--|;+|\*|%|\"\"\"|''')"
_PLACEHOLDER_PHRASE = re.compile(
    rf"(?:\b{_VOCAB}\b.*\b(?:go(?:es)?|here|unchanged|remains?|omitted|same|as before|"
    rf"stays?|as is|not shown)\b"
    rf"|\b(?:rest|remainder) of (?:the |this )?(?:{_VOCAB}|\w+ )"
    rf"|\b(?:existing|previous|original|unchanged|same|other|remaining|full|complete|"
    rf"entire|updated|new) {_VOCAB}\b"
    rf"|\b(?:insert|paste|add|put|place|write)\b.*\bhere\b"
    rf"|^\s*(?:the )?contents? of\b)", re.IGNORECASE)
_COMMENT_LINE = re.compile(rf"^\s*{_COMMENT}\s*(.*?)\s*(?:\*/|-->|\"\"\"|''')?\s*$")
_BRACKETED = re.compile(r"^\s*[\[<{(]\s*([A-Za-z][A-Za-z0-9 .,'’_/:-]*?)\s*[\]>})]\s*$")
_DOTS = {"...", "…", ". . ."}
_PROSE_EXTS = {"md", "markdown", "txt", "rst", "adoc", "org", "tex", ""}


def placeholder_line(line: str) -> bool:
    """A line that stands for content instead of being content."""
    s = line.strip()
    if s in _DOTS:
        return True
    m = _BRACKETED.match(s)
    if m and "=" not in s:
        words = m.group(1).split()
        if len(words) >= 3 or _PLACEHOLDER_PHRASE.search(m.group(1)) or \
                any(d in m.group(1) for d in _DOTS):
            return True
    m = _COMMENT_LINE.match(s)
    if m and m.group(1):
        text = m.group(1).strip("[]<>{}() ")
        return bool(_PLACEHOLDER_PHRASE.search(text)) or text.strip(" .…") == "" \
            or text.startswith(("...", "…")) or text.endswith(("...", "…"))
    return False


def _ext(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""


def whole_file_problem(path: str, lines: list[str]) -> str | None:
    """Why `lines`, fenced under `path`, cannot be the file's entire new content."""
    body = [ln for ln in lines if ln.strip()]
    if not body:
        return None
    if len(body) <= 2 and all(clean_path(ln) == path or ln.strip() == path for ln in body):
        return "holds only the file's own path, not its content"
    if len(body) <= 6 and all(placeholder_line(ln) for ln in body):
        return f"is a placeholder ({body[0].strip()[:60]!r}), not the file's content"
    if pseudo_diff(lines):
        return ("holds +/- diff lines, not the file's content (a diff needs ---/+++ and "
                "@@ lines in a ```diff fence)")
    return None


def pseudo_diff(lines: list[str]) -> bool:
    """Lines that read as a diff: a `@@` header, or `+` and `-` lines with every other
    line blank or indented (unchanged context), as models write them without headers."""
    body = [ln for ln in lines if ln.strip()]
    if any(ln.startswith("@@ ") and ln.rstrip().endswith("@@") or ln.startswith("@@ -")
           for ln in body):
        return True
    plus = sum(1 for ln in body if ln.startswith("+") and not ln.startswith("++"))
    minus = sum(1 for ln in body if ln.startswith("-") and not ln.startswith("--"))
    return plus > 0 and minus > 0 and all(ln[:1] in "+- " for ln in body)


def bare_elision(path: str, search: list[str], replace: list[str]) -> str | None:
    """A REPLACE line that is a bare `...` standing for code the model left out, when
    SEARCH has no such line.  Python's `...` as a body (after a line ending in ':') is
    code, and prose files may say '...' freely."""
    if _ext(path) in _PROSE_EXTS:
        return None
    seen = {s.strip() for s in search}
    prev = ""
    for line in replace:
        s = line.strip()
        if s in _DOTS and s not in seen and not prev.rstrip().endswith((":", "{", "(", "[")):
            return s
        if s:
            prev = line
    return None


_STAND_IN = re.compile(
    r"^\s*(?:#+|//+|/\*+|<!--|--|;+|\*)\s*[\[(<{]?\s*(?:\.\.\.\s*)?(?:the\s+|your\s+)?"
    r"(?:(?:rest|remainder)\s+of\s+(?:the\s+)?|remaining\s+|existing\s+|other\s+|previous\s+|"
    r"original\s+|same\s+)?(?:class\s+|function\s+|method\s+|component\s+|file\s+|module\s+)?"
    r"(?:definitions?|implementations?|code|contents?|logic|body|methods|functions)\s+"
    r"(?:goes\s+|go\s+|is\s+|are\s+|stays?\s+|remains?\s+)?"
    r"(?:here|unchanged|the\s+same|omitted|as\s+before|as\s+is)\b", re.IGNORECASE)


def stand_in_comment(search: list[str], replace: list[str]) -> str | None:
    """A comment that stands for code ("# Class definition here", "// implementation
    unchanged") in new text, when the old text has no such line."""
    seen = {s.strip() for s in search}
    for line in replace:
        if line.strip() not in seen and _STAND_IN.match(line):
            return line.strip()
    return None
