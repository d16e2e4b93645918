"""Which files make up the project tree, and which ones the user's ignore rules hide.

In a git repository git itself answers (`ls-files --exclude-standard`, `check-ignore`), so
`.gitignore`, `.git/info/exclude` and global excludes count exactly as they do for the
user. A plain folder is walked, skipping the folders no one wants in a model's context
(virtual environments, caches, build output, dependencies, dot-folders).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SKIP_DIRS = frozenset({
    "__pycache__", "node_modules", "site-packages", "venv", "env", "build", "dist",
    "target", ".git", ".spark", ".venv", ".tox", ".mypy_cache", ".pytest_cache",
})
MAX_FILES = 100_000


def is_git_repo(root: Path) -> bool:
    """True when git answers for root: inside a work tree, and not itself ignored there.

    A folder that an enclosing repository ignores (a Python install inside a git-managed
    `~/.pyenv`) is treated as a plain folder, or every file in it would count as ignored.
    """
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
            check=False, capture_output=True, text=True, timeout=10,
        )
        if out.returncode != 0 or out.stdout.strip() != "true":
            return False
        ignored = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-q", "--no-index", "."],
            check=False, capture_output=True, timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return ignored.returncode != 0


def list_files(root: Path) -> list[str]:
    """Root-relative POSIX paths of the tree's files, sorted, ignored files left out."""
    files = _git_files(root) if is_git_repo(root) else None
    if files is None:
        files = _walk(root)
    return sorted(files)[:MAX_FILES]


def is_ignored(root: Path, rel: str) -> bool:
    """True when the user's ignore rules (or the skipped folders) hide rel."""
    parts = rel.split("/")
    if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in parts[:-1]):
        return True
    if not is_git_repo(root):
        return False
    out = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "-q", "--no-index", "--", rel],
        check=False, capture_output=True, timeout=10,
    )
    return out.returncode == 0


def _git_files(root: Path) -> list[str] | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"],
            check=False, capture_output=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    files = []
    for raw in out.stdout.split(b"\0"):
        if not raw:
            continue
        name = raw.decode("utf-8", "surrogateescape")  # relative to root (git's cwd)
        if os.path.isfile(os.path.join(root, name)):  # skips deleted-but-tracked files
            files.append(name)
    return files


def _walk(root: Path) -> list[str]:
    files: list[str] = []
    base = str(root)
    for folder, dirs, names in os.walk(base):
        dirs[:] = sorted(
            d for d in dirs
            if d not in SKIP_DIRS and not d.startswith(".") and not d.endswith(".egg-info")
        )
        rel_folder = os.path.relpath(folder, base)
        for name in names:
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            files.append(rel.replace(os.sep, "/"))
            if len(files) >= MAX_FILES:
                return files
    return files
