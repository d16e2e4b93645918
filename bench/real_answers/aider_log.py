"""Split an Aider chat log (`.aider.chat.history.md`) into model answers with Aider's verdicts.

Why: the edit parser must be checked against what real models write, and Aider's committed
chat logs hold thousands of real answers together with what Aider itself did with each
one ("Applied edit to X", "Commit abc1234 ...", "did not conform to the edit format").
Aider's verdict is the reference we compare our parser with.

The log's shape (Aider writes it as markdown):
- `# aider chat started at 2024-05-01 12:00:00` opens a session;
- `> ...` lines (ending with two spaces, or a bare `>`) are Aider's own output: the model
  line (`> Model: X with diff edit format`, `> Main model: ...`, `> Editor model: ...`),
  verdicts, prompts, command output;
- `#### ...` lines are the user's message;
- every other run of lines is one assistant answer.  A reflection (Aider sends the
  failure back and the model answers again) shows as a second answer after `>` lines,
  with no `####` in between: it is kept as its own answer, with its own verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SESSION_RE = re.compile(r"^# aider chat started at (\S+ \S+)")
_MODEL_RE = re.compile(r"^(?:Main model|Model|Editor model):\s*(.*?)\s+with\s+(\S+)\s+edit format")
_APPLIED_RE = re.compile(r"^Applied edit to (.+?)\s*$")
_COMMIT_RE = re.compile(r"^Commit(?:ted)? ([0-9a-f]{7,40})\b")
_REPORT_START = re.compile(r"(SEARCH/REPLACE blocks? failed to match|UnifiedDiffNoMatch|"
                           r"UnifiedDiffNotUnique|hunks? failed to apply)")
_FAILED_IN = re.compile(r"failed to exactly match lines in (.+?)\s*$")
_NO_MATCH_IN = re.compile(r"^(\S+) does not contain lines that match the diff")
_DECLINE_RE = re.compile(r"^(Create new file|Allow edits to file|Allow creation of new file)"
                         r".*\[Yes\]: n\s*$")
_DECLINE_NAMED_RE = re.compile(r"^(?:Allow creation of new file (\S+)\? n|Skipping edits to (.+?))"
                               r"(?: that matches gitignore spec\.?)?\s*$")
_FAIL_MARKERS = ("did not conform to the edit format", "failed to match",
                 "Failed to apply edit", "UnifiedDiffNoMatch", "UnifiedDiffNotUnique",
                 "Malformed", "SearchReplaceNoExactMatch")


@dataclass
class Answer:
    """One assistant answer and what Aider did with it."""

    index: int  # position in the log (0-based, over all answers)
    session_start: str | None  # "2024-05-01 12:00:00" of the session it belongs to
    model: str  # "" when the log does not say
    edit_format: str  # Aider's edit format for this answer ("diff", "whole", ...), "" unknown
    request: str  # the user's message this answer follows (reflections: the same one)
    text: str
    applied: list[str] = field(default_factory=list)  # "Applied edit to X", in order
    commits: list[str] = field(default_factory=list)  # short hashes Aider committed
    # the commit of this answer's edits: the first one after its verdict ("Applied edit
    # to X" or a failure report).  A commit before the verdict is Aider saving the user's
    # own changes first ("Committing X before applying edits"), not the answer.
    edit_commit: str | None = None
    failed: bool = False  # Aider reported an edit it could not apply
    failed_paths: list[str] = field(default_factory=list)  # files of the blocks that failed
    declined: list[str] = field(default_factory=list)  # files the user would not let Aider
    # create or edit ("Create new file? n", "Allow edits to file ...? n")
    reflection: bool = False  # an answer to Aider's own failure report
    architect: bool = False  # an architect-mode plan, handed to the editor model (an
    # answer that gets a verdict is the editor's, whatever the mode)
    reformatted: bool = False  # a markdown formatter rewrote the log (`> > > > > > > REPLACE`)


def _kind(line: str, in_fence: bool = False) -> str:
    """"tool" for Aider's own `>` output, "user" for `####`, "session", else "text".

    A `> ` line inside an open code fence of an answer is the answer's own text (a shell
    prompt, a quoted line in a diff); outside, it is Aider's output (a markdown quote in
    an answer is rare, and Aider's lines are far more common)."""
    if line.startswith("#### ") or line == "####":
        return "user"
    if _SESSION_RE.match(line):
        return "session"
    if _REFORMATTED.match(line):
        return "text"
    if line.rstrip() == ">" or line.startswith("> "):
        return "text" if in_fence and not line.endswith("  ") else "tool"
    return "text"


_FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_BLOCK_START = re.compile(r"^\s*<{5,9} ?(SEARCH|ORIGINAL)\b")
_BLOCK_END = re.compile(r"^\s*>{5,9} ?(REPLACE|UPDATED)\b")
# `>>>>>>> REPLACE` after a markdown formatter (prettier) rewrote the committed log: the
# answer's text is no longer what the model wrote, so such answers are marked
_REFORMATTED = re.compile(r"^> > > > > > > ?(REPLACE|UPDATED)\b")


def _clean_path(p: str) -> str:
    """Aider prints paths the way the user's system writes them: on Windows every `\\`
    is a separator (`public\\.htaccess`, `blog\\[...slug].astro`)."""
    return p.strip().replace("\\", "/").removeprefix("./")


def parse_log(text: str) -> list[Answer]:
    """Every assistant answer of the log, in order, with its verdict lines attached."""
    answers: list[Answer] = []
    session: str | None = None
    main_model = editor_model = ""
    main_format = editor_format = ""
    request: list[str] = []
    body: list[str] = []
    current: Answer | None = None  # the last answer, collecting its verdict lines
    after_tool = False  # Aider printed something since the last answer
    after_user = False
    edit_prompt = False  # "Edit the files?" seen: the next answer is the editor's
    reformatted = False  # the answer being read shows a markdown formatter's rewrite
    # the editor model and format in force for each answer: in architect mode with
    # auto-accept there is no "Edit the files?" prompt, so an answer that gets a verdict
    # (edits applied or failed) is known to be the editor's only afterwards
    editors: dict[int, tuple[str, str]] = {}

    def as_editor(ans: Answer) -> None:
        if ans.architect:
            ans.architect = False
            ans.model, ans.edit_format = editors.get(ans.index, (ans.model, ans.edit_format))

    def close_body() -> None:
        nonlocal current, body, after_tool, after_user, edit_prompt, reformatted
        text_ = "\n".join(body).strip("\n")
        body = []
        was_reformatted, reformatted = reformatted, False
        if not text_.strip():
            return
        editor = edit_prompt and main_format == "architect"
        ans = Answer(
            index=len(answers), session_start=session,
            model=editor_model if editor else main_model,
            edit_format=editor_format if editor else main_format,
            request="\n".join(request).strip(), text=text_ + "\n",
            reflection=after_tool and not after_user and current is not None,
            architect=main_format == "architect" and not editor,
            reformatted=was_reformatted)
        answers.append(ans)
        editors[ans.index] = (editor_model, editor_format)
        current = ans
        after_tool = after_user = edit_prompt = False

    prev_kind = ""
    last_tool = ""  # the previous `>` line: the path a "Create new file?" prompt is about
    in_report = False  # inside Aider's failure report, which it logs as plain lines
    fence_open = False  # the answer being read has an open ``` fence
    in_block = False  # ... is inside a SEARCH/REPLACE block (its ``` lines are content)
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        kind = _kind(line, bool(body) and (fence_open or in_block))
        if line.strip():
            prev_kind, kind_before = kind, prev_kind
        else:
            kind_before = prev_kind
        if kind == "text" and in_report:
            m = _FAILED_IN.search(line) or _NO_MATCH_IN.match(line)
            if m and current is not None and _clean_path(m.group(1)) not in current.failed_paths:
                current.failed_paths.append(_clean_path(m.group(1)))
            if line.startswith(("Just reply with", "Only reply with")) or (
                    line.startswith("The SEARCH section must exactly match")
                    and line.endswith("  ")):
                in_report = False
            continue
        if kind == "text":
            if not body and not line.strip():
                continue
            if not body:
                fence_open = in_block = False
            if _BLOCK_START.match(line):
                in_block = True
            elif _BLOCK_END.match(line):
                in_block = False
            elif _FENCE_LINE.match(line) and not in_block:
                fence_open = not fence_open
            if _REFORMATTED.match(line):
                reformatted = True
            body.append(line)
            continue
        close_body()
        in_report = False
        if kind == "session":
            m = _SESSION_RE.match(line)
            session = m.group(1) if m else None
            main_model = editor_model = main_format = editor_format = ""
            current = None
            request = []
            continue
        if kind == "user":
            if kind_before != "user":
                request = []
            request.append(line[5:] if line.startswith("#### ") else "")
            after_user = True
            current = None  # verdict lines after a new request belong to no answer
            continue
        content = line[1:].strip()
        after_tool = True
        m = _MODEL_RE.match(content)
        if m:
            if content.startswith("Editor model"):
                editor_model, editor_format = m.group(1), m.group(2)
            else:
                main_model, main_format = m.group(1), m.group(2)
            continue
        if content.startswith("Edit the files?"):
            edit_prompt = True
        if current is None:
            last_tool = content
            continue
        m = _DECLINE_NAMED_RE.match(content)
        if m:
            current.declined.append(_clean_path(m.group(1) or m.group(2)))
        elif _DECLINE_RE.match(content) and last_tool and " " not in last_tool:
            current.declined.append(_clean_path(last_tool))
        last_tool = content
        m = _APPLIED_RE.match(content)
        if m:
            current.applied.append(_clean_path(m.group(1)))
            as_editor(current)
            continue
        m = _COMMIT_RE.match(content)
        if m:
            current.commits.append(m.group(1))
            if current.edit_commit is None and (current.applied or current.failed):
                current.edit_commit = m.group(1)
            continue
        if any(marker in content for marker in _FAIL_MARKERS):
            current.failed = True
            as_editor(current)
        if _REPORT_START.search(content):
            in_report = True
        m = _FAILED_IN.search(content)
        if m and _clean_path(m.group(1)) not in current.failed_paths:
            current.failed_paths.append(_clean_path(m.group(1)))
    close_body()
    return answers
