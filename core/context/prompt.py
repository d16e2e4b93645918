"""Prompt assembly in one place: what the model sees, trimmed to the profile's window.

Message order (stable prefix first, the parts that change every turn last):
  1. system       the edit-format rules plus the context rules
  2. repo_map     signatures from the rest of the tree, ranked for this prompt
  3. read_only    reference files, whole
  4. history      the conversation so far (prompt/answer pairs)
  5. files        the files in the chat, whole, read from disk now
  6. prompt       rejection feedback (if any) and the user's request

When it does not fit in `window - reserve` (the reserve is room for the answer), parts
give way in GIVE_WAY_ORDER: older turns first (oldest first), then the repo map shrinks,
then the latest exchange, then read-only files (last added first). The system prompt, the
editable files, rejection feedback and the prompt never give way: without them the model
cannot write a correct edit, so a request that needs more than the window is refused with
ContextOverflow and a report saying what to drop.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.context.ai_comments import ai_comment_prompt, find_ai_comments
from core.context.files import ChatFile, ChatFiles, ContextError, FileContent
from core.context.tokens import message_tokens

if TYPE_CHECKING:  # (the map's module pulls in numpy: made on first use, see ChatContext.repo_map)
    from core.context.repomap import RepoMap
    from core.workspace.files import Workspace

__all__ = [
    "GIVE_WAY_ORDER",
    "ChatContext",
    "ChatFile",
    "ContextError",
    "ContextOverflow",
    "ContextReport",
    "Section",
]

GIVE_WAY_ORDER: tuple[str, ...] = (
    "older history (oldest turn first)",
    "repo map (shrinks, then goes)",
    "latest exchange",
    "read-only files (last added first)",
)
NEVER_TRIMMED: tuple[str, ...] = ("system", "files", "prompt")

CONTEXT_RULES = """\
The user works in a project with the files listed below. Files in the chat are shown whole,
with their current content on disk; only edit those (or create new files when asked).
Files shown "for reference" are read-only: never edit them. The repository map lists
signatures from other files so you can reuse existing code instead of writing a copy;
if you need to change a file that is only in the map, ask the user to add it to the chat.
"""
MAP_INTRO = ("Here is a map of other files in the repository: classes and functions with "
             "their signatures, the most relevant first. Reuse what exists.\n\n")
READ_ONLY_INTRO = "Here are files for reference only. Do not edit them.\n\n"
FILES_INTRO = ("Here are the files in the chat, as they are on disk now. Edits must match "
               "this exact content.\n\n")
NO_FILES = ("No files are in the chat yet. If the request needs changes to existing files, "
            "name the files the user should add and wait; do not guess their content.")
ACK = "Ok."
_PATHLIKE = re.compile(r"[\w./\\-]+")


class ContextOverflow(ContextError):
    """The parts that never give way need more than the window; `report` shows them."""

    def __init__(self, message: str, report: ContextReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class Section:
    """One part of the request: its name, tokens (with message framing) and what is in it."""

    name: str
    tokens: int
    items: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""


@dataclass
class ContextReport:
    """What the next request sends, section by section, and what gave way to fit."""

    window: int
    reserve: int
    sections: list[Section]
    trimmed: list[str]
    give_way_order: tuple[str, ...] = GIVE_WAY_ORDER
    last_usage: dict[str, Any] | None = None

    @property
    def budget(self) -> int:
        """Tokens the request may use: the window less the room kept for the answer."""
        return self.window - self.reserve

    @property
    def total(self) -> int:
        return sum(s.tokens for s in self.sections)

    @property
    def fits(self) -> bool:
        return self.total <= self.budget

    @property
    def fraction(self) -> float:
        """Share of the window the request uses (the context meter's number)."""
        return self.total / self.window if self.window else 0.0

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "reserve": self.reserve,
            "budget": self.budget,
            "total": self.total,
            "fraction": round(self.fraction, 4),
            "fits": self.fits,
            "sections": [asdict(s) for s in self.sections],
            "trimmed": list(self.trimmed),
            "give_way_order": list(self.give_way_order),
            "last_usage": self.last_usage,
        }


@dataclass(frozen=True)
class Turn:
    """One finished exchange: what the user sent (with any feedback) and the answer."""

    prompt: str
    answer: str
    usage: dict[str, Any] | None = None


@dataclass(frozen=True)
class Rejection:
    path: str
    hunk_text: str
    reason: str | None


class ChatContext:
    """Files in the chat, the conversation, rejection feedback and the repo map, for one session."""

    def __init__(
        self,
        root: Path,
        window: int,
        *,
        reserve: int | None = None,
        map_tokens: int | None = None,
        workspace: Workspace | None = None,
    ) -> None:
        if window < 1024:
            raise ContextError(f"a context window of {window} tokens is too small (min 1024)")
        if workspace is None:
            from core.workspace.files import Workspace

            workspace = Workspace(Path(root))
        self.root = workspace.root
        self.window = window
        self.reserve = reserve if reserve is not None else min(8192, window // 8)
        if not 0 <= self.reserve <= window - 512:
            raise ContextError(f"a reserve of {self.reserve} tokens for the answer leaves no "
                               f"room for the request in a {window}-token window")
        self.map_tokens = map_tokens if map_tokens is not None else _default_map_tokens(window)
        self._repo_map: RepoMap | None = None
        self._repo_map_lock = threading.Lock()
        self._repo_map_hooks: list[Callable[[RepoMap], None]] = []
        self._files = ChatFiles(workspace, max(256, (window - self.reserve) // 2),
                                tree_files=lambda: self.repo_map.all_files())
        self.history: list[Turn] = []
        self.rejections: list[Rejection] = []
        self._sent: list[Rejection] | None = None  # rejections the last request carried
        self.last_usage: dict[str, Any] | None = None

    @property
    def repo_map(self) -> RepoMap:
        """The repository's map, made on first use (thread-safe). Its module imports numpy
        (with the map's other modules ~70-100 ms of CPU): made with the context, that was
        on the app's way to its first frame, which needs no map (the indexes install it
        after that frame). `when_repo_map` hooks run on the map as it is made."""
        found = self._repo_map
        if found is None:
            with self._repo_map_lock:
                found = self._repo_map
                if found is None:
                    from core.context.repomap import RepoMap

                    found = RepoMap(self.root)
                    for hook in self._repo_map_hooks:
                        hook(found)
                    self._repo_map = found
        return found

    @repo_map.setter
    def repo_map(self, value: RepoMap) -> None:
        with self._repo_map_lock:
            self._repo_map = value

    def when_repo_map(self, hook: Callable[[RepoMap], None]) -> None:
        """Run `hook` on the map as soon as it is made (at once when it is), before anyone
        else can use it (e.g. a background indexer's feeding: no map renders scanning the
        tree itself in between)."""
        with self._repo_map_lock:
            found = self._repo_map
            if found is None:
                self._repo_map_hooks.append(hook)
                return
        hook(found)

    def resize(self, window: int) -> None:
        """Switch to another profile's window, keeping files and conversation: the answer's
        reserve, the map budget and the per-file limit follow the window as at creation."""
        if window < 1024:
            raise ContextError(f"a context window of {window} tokens is too small (min 1024)")
        self.window = window
        self.reserve = min(8192, window // 8)
        self.map_tokens = _default_map_tokens(window)
        self._files.max_file_tokens = max(256, (window - self.reserve) // 2)

    # -- files ---------------------------------------------------------------------------
    def add(self, paths: list[str], read_only: bool = False) -> list[str]:
        """Add files to the chat; ContextError (nothing added) names each refused path."""
        return self._files.add(paths, read_only=read_only)

    def drop(self, paths: Iterable[str]) -> list[str]:
        return self._files.drop(paths)

    def drop_all(self) -> list[str]:
        return self._files.drop_all()

    @property
    def files(self) -> list[ChatFile]:
        return self._files.listing()

    def mentioned_paths(self, prompt: str) -> list[str]:
        """Tree files the prompt names (by path, or by a file name unique in the tree)
        that are not in the chat yet, in the order mentioned."""
        by_name = self.repo_map.files_by_name()  # cached: 20k files cost ~100 ms to group
        found: list[str] = []
        for word in _PATHLIKE.findall(prompt):
            word = word.replace("\\", "/").strip(".").lstrip("/")
            while word.startswith("./"):
                word = word[2:]
            if not word or "." not in word and "/" not in word:
                continue
            if self.repo_map.has_file(word):
                hit = word
            elif "/" not in word and len(by_name.get(word, ())) == 1:
                hit = by_name[word][0]
            else:
                continue
            if hit not in self._files and hit not in found:
                found.append(hit)
        return found

    def tree_files(self) -> list[str]:
        """Every file of the tree (ignored ones left out), for the app's fuzzy file picker."""
        return sorted(self.repo_map.all_files())

    def warm(self) -> None:
        """Build the repo map now (call it from a worker thread at startup) so the first
        prompt does not wait for the tree to be scanned."""
        self.repo_map.all_files()

    def on_file_event(self, rel_path: str) -> None:
        """Keep the repo map current after a file was created, changed or deleted."""
        self.repo_map.on_file_event(rel_path)

    # -- conversation ------------------------------------------------------------------
    def record_exchange(self, prompt: str, answer: str, usage: dict | None = None) -> None:
        """Append a finished exchange with the feedback that was sent with it.

        Only rejections that the last `build_request` sent are consumed: ones added while
        the user reviews this answer stay pending for the next request, whichever order
        the app records and reviews in.
        """
        sent = list(self.rejections) if self._sent is None else [
            r for r in self._sent if r in self.rejections]
        self.history.append(Turn(_with_feedback(sent, prompt), answer, usage))
        for r in sent:
            self.rejections.remove(r)
        self._sent = None
        if usage:
            self.last_usage = dict(usage)

    def add_rejection(self, path: str, hunk_text: str, reason: str | None = None) -> None:
        """Tell the model, with the next request, that the user rejected this hunk."""
        self.rejections.append(Rejection(path, hunk_text, reason))

    def clear(self) -> None:
        """Fresh context: forget the conversation and pending feedback, keep the files."""
        self.history.clear()
        self.rejections.clear()
        self._sent = None
        self.last_usage = None

    def prompt_for_ai_comments(self, rel_path: str) -> str | None:
        """For a watched file holding AI!/AI? comments: put it in the chat and return the
        instruction to send (None when the file has none)."""
        from core.workspace.files import WorkspaceError

        try:
            text = self._files.workspace.read_text(rel_path)
        except WorkspaceError as exc:
            raise ContextError(str(exc)) from None
        comments = find_ai_comments(rel_path, text)
        if not comments:
            return None
        if rel_path not in self._files or rel_path in self._files.paths(read_only=True):
            self.add([rel_path], read_only=False)
        return ai_comment_prompt(rel_path, comments)

    # -- assembly ------------------------------------------------------------------------
    def build_request(self, prompt: str) -> tuple[list[dict], ContextReport]:
        """Messages for the next `generate` frame and the report of what they hold.

        Raises ContextOverflow when the parts that never give way exceed the budget.
        """
        from core.edits.instructions import EDIT_FORMAT_SYSTEM_PROMPT

        budget = self.window - self.reserve
        trimmed: list[str] = []
        contents = self._files.contents()
        editable = [c for c in contents if not c.read_only]
        read_only = [c for c in contents if c.read_only]

        system_msg = {"role": "system",
                      "content": EDIT_FORMAT_SYSTEM_PROMPT.rstrip() + "\n\n" + CONTEXT_RULES}
        final_msg = {"role": "user", "content": _with_feedback(self.rejections, prompt)}
        files_msgs = _pair(FILES_INTRO + _render_files(editable)) if editable else []
        fixed = {
            "system": _tokens([system_msg]),
            "files": _tokens(files_msgs),
            "prompt": _tokens([final_msg]),
        }
        if not editable:
            final_msg["content"] = NO_FILES + "\n\n" + final_msg["content"]
            fixed["prompt"] = _tokens([final_msg])
        left = budget - sum(fixed.values())

        # read-only files give way last: keep them in order while they fit
        kept_ro: list[FileContent] = []
        for c in read_only:
            cost = _tokens(_pair(READ_ONLY_INTRO + _render_files(kept_ro + [c])))
            if cost <= left:
                kept_ro.append(c)
            else:
                trimmed.append(f"read-only file {c.path} ({c.tokens} tokens) left out")
        ro_msgs = _pair(READ_ONLY_INTRO + _render_files(kept_ro)) if kept_ro else []
        left -= _tokens(ro_msgs)

        # then the latest exchange, then the map, then older turns
        turns = list(self.history)
        latest = turns[-1:]
        latest_msgs = _turn_messages(latest)
        if latest and _tokens(latest_msgs) > left:
            trimmed.append("latest exchange left out")
            latest, latest_msgs = [], []
        left -= _tokens(latest_msgs)

        map_target = self.map_tokens * (1 if editable else 2)  # no files: the map leads
        map_budget = min(map_target, left - _tokens(_pair(MAP_INTRO)))
        map_msgs: list[dict] = []
        map_result = None
        if map_budget > 0:
            map_result = self.repo_map.render(
                map_budget, chat_files=[c.path for c in contents], prompt=prompt,
                mentioned_files=self.mentioned_paths(prompt),
            )
            if map_result.text:
                map_msgs = _pair(MAP_INTRO + map_result.text)
        if map_budget < map_target:
            trimmed.append(f"repo map cut to {max(map_budget, 0)} of {map_target} tokens")
        # = _tokens(map_msgs): MAP_INTRO ends with a newline and the estimator never joins
        # pieces across one, so the map's own count adds up (no second pass over ~8k tokens)
        map_tokens = _tokens(_pair(MAP_INTRO)) + map_result.tokens if map_msgs and map_result else 0
        left -= map_tokens

        older = turns[:-1]
        kept_older: list[Turn] = []
        for turn in reversed(older):
            cost = _tokens(_turn_messages([turn]))
            if cost > left:
                break
            kept_older.insert(0, turn)
            left -= cost
        if len(kept_older) < len(older):
            trimmed.append(f"{len(older) - len(kept_older)} older turn(s) left out, oldest first")
        history_msgs = _turn_messages(kept_older + latest)

        messages = ([system_msg] + map_msgs + ro_msgs + history_msgs + files_msgs + [final_msg])
        sections = [
            Section("system", fixed["system"]),
            Section("repo_map", map_tokens,
                    [{"path": p, "lines": n} for p, n in _map_files(map_result)],
                    note=(map_result.note if map_result else "")),
            Section("read_only_files", _tokens(ro_msgs),
                    [{"path": c.path, "tokens": c.tokens} for c in kept_ro]),
            Section("history", _tokens(history_msgs),
                    [{"turn": i + 1, "tokens": _tokens(_turn_messages([t]))}
                     for i, t in enumerate(kept_older + latest)]),
            Section("files", fixed["files"],
                    [{"path": c.path, "tokens": c.tokens, "missing": c.missing}
                     for c in editable]),
            Section("prompt", _tokens([final_msg]),
                    [{"rejections": len(self.rejections)}] if self.rejections else []),
        ]
        report = ContextReport(self.window, self.reserve, sections, trimmed,
                               last_usage=self.last_usage)
        self._sent = list(self.rejections)
        if not report.fits:
            raise ContextOverflow(
                f"the request needs {report.total:,} tokens but {budget:,} fit "
                f"(window {self.window:,} less {self.reserve:,} kept for the answer); the "
                f"files in the chat take {fixed['files']:,}: drop some with /drop",
                report,
            )
        return messages, report

    def preview(self, prompt: str = "") -> ContextReport:
        """The report for the next request without raising when it does not fit."""
        try:
            return self.build_request(prompt)[1]
        except ContextOverflow as exc:
            return exc.report


def _with_feedback(rejections: list[Rejection], prompt: str) -> str:
    """The prompt, preceded by what the user rejected from the last answer and why."""
    if not rejections:
        return prompt
    parts = ["The user rejected these changes from your last answer:"]
    for r in rejections:
        reason = r.reason.strip() if r.reason and r.reason.strip() else "no reason given"
        fence = _fence(r.hunk_text)
        parts.append(f"\n{r.path} (reason: {reason})\n{fence}\n{r.hunk_text.rstrip()}\n{fence}")
    parts.append("\nDo not propose them again; take the reasons into account.\n")
    return "\n".join(parts) + "\n" + prompt


def _default_map_tokens(window: int) -> int:
    """Map budget: 1/32 of the window, between 512 and 4096 tokens (doubled with no files)."""
    return max(512, min(4096, window // 32))


def _tokens(messages: list[dict]) -> int:
    return sum(message_tokens(m) for m in messages)


def _pair(user_text: str) -> list[dict]:
    return [{"role": "user", "content": user_text}, {"role": "assistant", "content": ACK}]


def _turn_messages(turns: list[Turn]) -> list[dict]:
    out: list[dict] = []
    for t in turns:
        out.append({"role": "user", "content": t.prompt})
        out.append({"role": "assistant", "content": t.answer})
    return out


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _render_files(contents: list[FileContent]) -> str:
    blocks: list[str] = []
    for c in contents:
        if c.missing:
            blocks.append(f"{c.path}\n(this file no longer exists or cannot be read)\n")
            continue
        fence = _fence(c.text)
        body = c.text if c.text.endswith("\n") or not c.text else c.text + "\n"
        blocks.append(f"{c.path}\n{fence}\n{body}{fence}\n")
    return "\n".join(blocks)


def _map_files(result: Any) -> list[tuple[str, int]]:
    if result is None:
        return []
    counts: dict[str, int] = {}
    for e in result.entries:
        counts[e.path] = counts.get(e.path, 0) + 1
    return list(counts.items())

