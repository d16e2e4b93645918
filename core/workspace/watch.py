"""Watch the working tree (watchfiles) and report debounced batches of file changes.

Why honour .gitignore here: build outputs, virtualenvs and caches change constantly and
mean nothing to a proposal; only files the user would version are reported.  `.git/`,
`.spark/` and our own temp files are always ignored.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from core.workspace.files import SPARK_DIR, TEMP_SUFFIX

_ALWAYS = (".git", SPARK_DIR)

# Files editors write beside the real one while saving (vim's 4913 probe and swap files,
# emacs locks and autosaves, JetBrains safe-write copies, GNOME's output streams, sed -i):
# they mean nothing to the user, so they are never reported as changes.
_EDITOR_TEMP = re.compile(
    r"""(^|/)(
        4913 | \.[^/]*\.sw[a-px] | [^/]*~ | \.\#[^/]* | \#[^/]*\# |
        [^/]*___jb_(tmp|old|bak)___ | \.goutputstream-[^/]* | sed[A-Za-z0-9]{6} |
        \.[^/]*\.tmp\.\d+ | [^/]*\.crswap | \.~lock\.[^/]*\#
    )$""",
    re.VERBOSE,
)


def is_editor_temp(rel: str) -> bool:
    """True for a file an editor writes while saving (not a change of the user's files)."""
    return _EDITOR_TEMP.search(rel) is not None


@dataclass(frozen=True, order=True)
class FileChange:
    """One changed file: kind is "added", "modified" or "deleted"; path is root-relative."""

    path: str
    kind: str


class IgnoreRules:
    """The tree's .gitignore files (root and nested) plus .git/info/exclude and extras."""

    def __init__(self, root: Path, extra: Sequence[str] = ()) -> None:
        self.root = Path(root).resolve()
        self.extra = tuple(extra)
        self.reload()

    def _spec(self, lines: list[str]) -> pathspec.GitIgnoreSpec:
        return pathspec.GitIgnoreSpec.from_lines(lines)

    def reload(self) -> None:
        """Re-read every .gitignore (call when one of them changes)."""
        specs: dict[str, pathspec.GitIgnoreSpec] = {}
        self.files: set[str] = set()  # files present at the last walk (to tell "modified" from "added")
        top: list[str] = list(self.extra)
        exclude = self.root / ".git" / "info" / "exclude"
        if exclude.is_file():
            top += exclude.read_text("utf-8", "replace").splitlines()
        self._specs = specs
        specs[""] = self._spec(top)
        for folder, dirs, files in os.walk(self.root):
            rel_dir = Path(folder).relative_to(self.root).as_posix()
            rel_dir = "" if rel_dir == "." else rel_dir
            if ".gitignore" in files:
                lines = (Path(folder) / ".gitignore").read_text("utf-8", "replace").splitlines()
                specs[rel_dir] = self._spec(top + lines if rel_dir == "" else lines)
            self.files.update(f"{rel_dir}/{name}".lstrip("/") for name in files)
            dirs[:] = [d for d in dirs if d not in _ALWAYS
                       and not self.ignored(f"{rel_dir}/{d}".lstrip("/"), is_dir=True)]

    def ignored(self, rel: str, *, is_dir: bool = False) -> bool:
        """True when rel (root-relative POSIX path) is ignored by the rules."""
        parts = rel.split("/")
        if parts[0] in _ALWAYS or rel.endswith(TEMP_SUFFIX) or (not is_dir and is_editor_temp(rel)):
            return True
        for i in range(len(parts)):
            base = "/".join(parts[:i])
            spec = self._specs.get(base)
            if spec is None:
                continue
            # every ancestor folder and the path itself, relative to this .gitignore
            for j in range(i + 1, len(parts) + 1):
                sub = "/".join(parts[i:j])
                if j < len(parts) or is_dir:
                    sub += "/"
                if spec.match_file(sub):
                    return True
        return False


async def watch_tree(root: Path, stop_event: asyncio.Event | None = None, *,
                     debounce_ms: int = 50, extra_ignore: Sequence[str] = (),
                     ) -> AsyncIterator[list[FileChange]]:
    """Yield sorted batches of FileChange until stop_event is set.

    Changes arriving within `debounce_ms` of each other come as one batch, one entry per
    path (the last kind wins).  A changed .gitignore reloads the rules.

    Editors save by writing a new file and renaming it over the old one, which the OS
    reports as "added": a path that existed before is reported "modified", so the user
    sees what happened to their file rather than how the editor did it.
    """
    import watchfiles

    root = Path(root).resolve()
    # the walk over the tree (every folder, every .gitignore) takes 40 ms idle and ~0.5 s on a
    # loaded box at 20,000 files: in a thread, so the loop that draws and reads keys goes on
    rules = await asyncio.to_thread(IgnoreRules, root, extra_ignore)
    kinds = {watchfiles.Change.added: "added", watchfiles.Change.modified: "modified",
             watchfiles.Change.deleted: "deleted"}

    def keep(change: watchfiles.Change, path: str) -> bool:
        try:
            rel = Path(path).relative_to(root).as_posix()
        except ValueError:
            return False
        return not rules.ignored(rel)

    async for raw in watchfiles.awatch(root, watch_filter=keep, debounce=debounce_ms,
                                       step=min(50, max(1, debounce_ms // 2)),
                                       stop_event=stop_event, recursive=True):
        latest: dict[str, str] = {}
        for change, path in sorted(raw, key=lambda item: item[0] != watchfiles.Change.deleted):
            rel = Path(path).relative_to(root).as_posix()
            if os.path.isdir(path):
                continue
            latest[rel] = kinds.get(change, "modified")
        known = rules.files
        for rel, kind in list(latest.items()):
            exists = os.path.isfile(root / rel)
            if kind == "deleted" and exists:
                kind = "modified"  # deleted and written again within one batch: a save
            elif kind == "added" and rel in known:
                kind = "modified"
            elif kind != "deleted" and not exists:
                kind = "deleted"
            latest[rel] = kind
            if kind == "deleted":
                known.discard(rel)
            else:
                known.add(rel)
        if any(r == ".gitignore" or r.endswith("/.gitignore") for r in latest):
            rules.reload()
        batch = sorted(FileChange(p, k) for p, k in latest.items())
        if batch:
            yield batch
