"""Files in the chat: which files the model sees in full, and which it may edit.

A model can only write SEARCH/REPLACE blocks against text it has seen, so the files in
the chat are sent whole, read from disk at every request (the user's own edits are what
the model sees). Every read goes through `core.workspace.files.Workspace`, so the refusal
rules (outside the root, `.git/`, denied globs, binary, too big) are one piece of code;
this module adds the rules that only matter for context: ignored by git, missing, and too
many tokens for the window.
"""

from __future__ import annotations

import fnmatch
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.context.tokens import estimate_tokens
from core.context.tree import is_ignored
from core.errors import SparkError

if TYPE_CHECKING:
    from core.workspace.files import Workspace


class ContextError(SparkError):
    """A request about the context that cannot be done, with the reason for the user."""


@dataclass(frozen=True)
class ChatFile:
    """A file in the chat as the user sees it listed."""

    path: str
    read_only: bool
    tokens: int


@dataclass(frozen=True)
class FileContent:
    """A chat file's current text, or `missing=True` when it is gone from disk."""

    path: str
    read_only: bool
    text: str
    tokens: int
    missing: bool = False


class ChatFiles:
    """The ordered set of files in the chat, read through the workspace on demand."""

    def __init__(
        self,
        workspace: Workspace,
        max_file_tokens: int,
        tree_files: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.workspace = workspace
        self.max_file_tokens = max_file_tokens
        self._tree_files = tree_files
        # the app runs commands and assembles requests on worker threads
        self._lock = threading.RLock()
        self._files: dict[str, bool] = {}  # path -> read_only, in the order added
        self._cache: dict[str, tuple[int, int, str, int]] = {}  # path -> mtime, size, text, tokens

    @property
    def root(self) -> Path:
        return self.workspace.root

    def paths(self, read_only: bool | None = None) -> list[str]:
        """Paths in the order added; only read-only or only editable ones when asked."""
        with self._lock:
            return [p for p, ro in self._files.items() if read_only is None or ro == read_only]

    def __contains__(self, path: str) -> bool:
        return path in self._files

    def add(self, paths: Iterable[str], read_only: bool = False) -> list[str]:
        """Add files (globs expand over the tree); all or nothing, ContextError lists why not.

        A file already in the chat changes to the new read-only setting.
        """
        wanted: list[str] = []
        problems: list[str] = []
        for raw in paths:
            for rel in self._expand(raw, problems):
                try:
                    self._check(rel)
                except ContextError as exc:
                    problems.append(str(exc))
                else:
                    if rel not in wanted:
                        wanted.append(rel)
        if problems:
            raise ContextError("; ".join(problems))
        if not wanted:
            raise ContextError("no files named")
        with self._lock:
            for rel in wanted:
                self._files[rel] = read_only
        return wanted

    def drop(self, paths: Iterable[str]) -> list[str]:
        """Remove files (globs match the chat's own paths); ContextError for unknown ones."""
        with self._lock:
            return self._drop(paths)

    def _drop(self, paths: Iterable[str]) -> list[str]:
        dropping: list[str] = []
        unknown: list[str] = []
        for raw in paths:
            rel = self._relative(raw)
            if _is_glob(rel):
                hits = [p for p in self._files if fnmatch.fnmatchcase(p, rel)]
            else:
                hits = [rel] if rel in self._files else []
            if not hits:
                unknown.append(raw)
            dropping.extend(h for h in hits if h not in dropping)
        if unknown:
            raise ContextError(f"not in the chat: {', '.join(unknown)}")
        for rel in dropping:
            del self._files[rel]
            self._cache.pop(rel, None)
        return dropping

    def drop_all(self) -> list[str]:
        with self._lock:
            dropped = list(self._files)
            self._files.clear()
            self._cache.clear()
            return dropped

    def listing(self) -> list[ChatFile]:
        """The files with their current token counts (0 for a file gone from disk)."""
        return [ChatFile(c.path, c.read_only, c.tokens) for c in self.contents()]

    def contents(self) -> list[FileContent]:
        """Current text of every chat file, read from disk now (cached by mtime and size)."""
        with self._lock:
            files = list(self._files.items())
        return [self._content(rel, ro) for rel, ro in files]

    # -- internals ---------------------------------------------------------------------
    def _relative(self, raw: str) -> str:
        """A user-typed path as root-relative POSIX (absolute paths inside the root too)."""
        raw = raw.strip().strip("'\"")
        if os.path.isabs(raw):
            try:
                return Path(raw).resolve().relative_to(self.root).as_posix()
            except ValueError:
                return raw  # the workspace refuses it with its own reason
        rel = raw.replace(os.sep, "/")
        while rel.startswith("./"):
            rel = rel[2:]
        return rel

    def _expand(self, raw: str, problems: list[str]) -> list[str]:
        rel = self._relative(raw)
        if not _is_glob(rel):
            return [rel]
        files = sorted(self._tree_files()) if self._tree_files else []
        hits = [f for f in files if fnmatch.fnmatchcase(f, rel)]
        if not hits:
            problems.append(f"{raw}: no file in the tree matches")
        return hits

    def _check(self, rel: str) -> None:
        from core.workspace.files import WorkspaceError

        try:
            path = self.workspace.resolve(rel)
        except WorkspaceError as exc:
            raise ContextError(str(exc)) from None
        if not path.is_file():
            raise ContextError(f"{rel}: no such file")
        if is_ignored(self.root, rel):
            raise ContextError(f"{rel}: ignored by the project's ignore rules (.gitignore)")
        try:
            text = self.workspace.read_text(rel)
        except WorkspaceError as exc:
            raise ContextError(str(exc)) from None
        tokens = estimate_tokens(text)
        if tokens > self.max_file_tokens:
            raise ContextError(
                f"{rel}: about {tokens:,} tokens, more than the {self.max_file_tokens:,} one "
                f"file may take of this model's window; add a smaller file or use the map"
            )

    def _content(self, rel: str, read_only: bool) -> FileContent:
        from core.workspace.files import WorkspaceError

        try:
            st = self.workspace.resolve(rel).stat()
        except (OSError, WorkspaceError):
            self._cache.pop(rel, None)
            return FileContent(rel, read_only, "", 0, missing=True)
        cached = self._cache.get(rel)
        if cached is not None and cached[:2] == (st.st_mtime_ns, st.st_size):
            return FileContent(rel, read_only, cached[2], cached[3])
        try:
            text = self.workspace.read_text(rel)
        except WorkspaceError:
            self._cache.pop(rel, None)
            return FileContent(rel, read_only, "", 0, missing=True)
        tokens = estimate_tokens(text)
        self._cache[rel] = (st.st_mtime_ns, st.st_size, text, tokens)
        return FileContent(rel, read_only, text, tokens)


def _is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")
