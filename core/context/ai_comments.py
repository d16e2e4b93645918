"""AI! and AI? comments: instructions the user writes in their own editor, in the code.

As in Aider's watch mode, a comment ending with `AI!` asks for a change there and one
ending with `AI?` asks a question (a comment starting with the marker counts too). A
block of comment lines directly above the marked line belongs to the instruction, so a
request can span several lines. The request sends the file in the chat with the comments
as the instruction; for `AI!` the model is told to remove the comment in its edit, so the
accepted edit leaves no stale instruction behind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# comment markers by file extension, so `5 % 3` in Python or `a -- b` in C is no comment
_HASH, _SLASH, _DASH, _SEMI, _PCT, _HTML = r"#+", r"//+|/\*+", r"--", r";+", r"%+", r"<!--"
_BY_EXTENSION: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("py", "pyi", "rb", "sh", "bash", "zsh", "pl", "r", "yml", "yaml",
                     "toml", "cfg", "conf", "mk", "cmake", "dockerfile", "nim", "jl",
                     "ex", "exs", "tf"), (_HASH,)),
    **dict.fromkeys(("js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "rs", "java", "kt",
                     "kts", "scala", "swift", "c", "h", "cc", "cpp", "cxx", "hpp", "hh",
                     "cs", "dart", "zig", "css", "scss", "less", "proto", "groovy"),
                    (_SLASH,)),
    "php": (_SLASH, _HASH),
    **dict.fromkeys(("sql", "lua", "hs", "elm", "ada"), (_DASH,)),
    **dict.fromkeys(("lisp", "clj", "cljs", "el", "scm", "asm", "s", "ini"), (_SEMI,)),
    **dict.fromkeys(("tex", "m", "erl", "hrl"), (_PCT,)),
    **dict.fromkeys(("html", "htm", "xml", "md", "vue", "svelte"), (_HTML, _SLASH)),
}
_ALL = (_HASH, _SLASH, _DASH, _SEMI, _HTML)  # unknown extension: the common styles


def _marker_regex(path: str) -> re.Pattern[str]:
    """A comment marker at line start or after a blank (so `http://x` is no comment)."""
    name = path.rsplit("/", 1)[-1].lower()
    ext = name.rsplit(".", 1)[-1] if "." in name else name
    styles = _BY_EXTENSION.get(ext, _ALL)
    return _compiled("|".join(styles))


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(alternatives: str) -> re.Pattern[str]:
    pattern = _PATTERNS.get(alternatives)
    if pattern is None:
        pattern = _PATTERNS[alternatives] = re.compile(rf"(?:^|(?<=\s))({alternatives})")
    return pattern

_CLOSER = re.compile(r"\s*(?:\*+/|-->)\s*$")
_AI_END = re.compile(r"\bAI([!?])\s*$", re.IGNORECASE)
_AI_START = re.compile(r"^AI([!?])(?:\s+|$)", re.IGNORECASE)


@dataclass(frozen=True)
class AIComment:
    """One instruction: the file, the 1-based line of the marker, the text and its kind."""

    path: str
    line: int
    text: str
    kind: str  # "!" (make a change) or "?" (answer a question)


def _comment(line: str, marker: re.Pattern[str]) -> tuple[str, str, bool] | None:
    """(marker, body, whole_line) when the line holds a comment."""
    match = marker.search(line)
    if match is None:
        return None
    body = _CLOSER.sub("", line[match.end():]).strip()
    return match.group(1), body, not line[: match.start()].strip()


def _marked(body: str) -> tuple[str, str] | None:
    """(kind, instruction without the marker) when the comment body carries AI! or AI?."""
    end = _AI_END.search(body)
    if end is not None:
        return end.group(1), body[: end.start()].strip()
    start = _AI_START.match(body)
    if start is not None:
        return start.group(1), body[start.end():].strip()
    return None


def find_ai_comments(path: str, text: str) -> list[AIComment]:
    """Every AI! / AI? instruction in a file's text, in line order."""
    marker_re = _marker_regex(path)
    lines = text.splitlines()
    found: list[AIComment] = []
    for index, line in enumerate(lines):
        if "ai" not in line and "AI" not in line and "Ai" not in line and "aI" not in line:
            continue  # most lines: skip the regexes
        parsed = _comment(line, marker_re)
        if parsed is None:
            continue
        marker, body, whole = parsed
        mark = _marked(body)
        if mark is None:
            continue
        kind, instruction = mark
        parts = [instruction] if instruction else []
        if whole:  # gather the comment block directly above
            above: list[str] = []
            k = index - 1
            while k >= 0:
                prev = _comment(lines[k], marker_re)
                if prev is None or not prev[2] or prev[0] != marker or not prev[1]:
                    break
                if _marked(prev[1]) is not None:
                    break  # the block above is its own instruction
                above.append(prev[1])
                k -= 1
            parts = list(reversed(above)) + parts
        found.append(AIComment(path, index + 1, " ".join(parts).strip(), kind))
    return found


def ai_comment_prompt(path: str, comments: list[AIComment]) -> str:
    """The instruction sent to the model for a file's AI comments."""
    changes = [c for c in comments if c.kind == "!"]
    questions = [c for c in comments if c.kind == "?"]
    lines: list[str] = []
    if changes:
        lines.append(
            f"The file {path} contains instructions for you in comments marked `AI!`:"
        )
        lines += [f"- line {c.line}: {c.text or '(see the code around this comment)'}"
                  for c in changes]
        lines.append(
            "Make the changes they ask for with edit blocks. In the same edit, remove each "
            "`AI!` comment (the whole comment, with the comment lines that belong to it): "
            "it has been handled and must not stay in the code."
        )
    if questions:
        if lines:
            lines.append("")
        lines.append(f"The file {path} contains questions for you in comments marked `AI?`:")
        lines += [f"- line {c.line}: {c.text or '(about the code around this comment)'}"
                  for c in questions]
        lines.append("Answer them in prose." + (
            "" if changes else " Do not edit any file unless a question asks for a change."
        ))
    return "\n".join(lines)


class AICommentTracker:
    """Remembers the AI comments seen per file, so a save that adds none triggers nothing.

    `new_comments` returns a file's comments when it holds one not seen before (a new
    or changed instruction), and nothing when the same comments are saved again or
    after the edit that removed them.
    """

    def __init__(self) -> None:
        self._seen: dict[str, frozenset[tuple[str, str]]] = {}

    def new_comments(self, path: str, text: str) -> list[AIComment]:
        comments = find_ai_comments(path, text)
        keys = frozenset((c.kind, c.text) for c in comments)
        before = self._seen.get(path, frozenset())
        self._seen[path] = keys
        return comments if keys - before else []

    def forget(self, path: str) -> None:
        self._seen.pop(path, None)
