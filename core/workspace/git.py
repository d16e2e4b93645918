"""Git for accepted changes (gitpython): commit exactly the files a change wrote.

Why `git commit --only -- paths`: the user's own staged work and the rest of their
uncommitted changes stay where they were; only the files sparkstation wrote go into
the commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class CommitResult:
    sha: str | None
    error: str | None = None


def open_repo(root: Path):
    """The git.Repo whose working tree holds root, or None (no git, bare, or no git lib)."""
    try:
        import git
    except ImportError:  # pragma: no cover - gitpython is a dependency
        return None
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    if repo.bare or repo.working_tree_dir is None:
        return None
    return repo


def is_repo(root: Path) -> bool:
    return open_repo(root) is not None


def commit_paths(root: Path, paths: list[str], message: str) -> CommitResult:
    """Commit the current content of `paths` (relative to root) and nothing else."""
    import git

    repo = open_repo(root)
    if repo is None:
        return CommitResult(None, "not a git repository")
    top = Path(repo.working_tree_dir).resolve()
    rels = []
    for p in paths:
        full = (root / p)
        rel = full.resolve().relative_to(top).as_posix() if full.exists() else \
            (root.resolve() / p).relative_to(top).as_posix()
        rels.append(rel)
    try:
        ignored = set(repo.ignored(*rels)) if rels else set()
    except git.GitCommandError:
        ignored = set()
    rels = [r for r in rels if r not in ignored]
    if not rels:
        return CommitResult(None, "every changed file is ignored by git; nothing committed")
    message = message.strip() or "sparkstation: accepted edit"
    try:
        existing = [r for r in rels if (top / r).exists()]
        if existing:
            repo.git.add("--", *existing)
        tracked_or_new = [r for r in rels
                          if (top / r).exists() or _tracked(repo, r)]
        if not tracked_or_new:
            return CommitResult(None, "nothing to commit")
        repo.git.commit("--no-verify", "-m", message, "--only", "--", *tracked_or_new)
    except git.GitCommandError as exc:
        detail = (exc.stderr or exc.stdout or str(exc)).strip().splitlines()
        return CommitResult(None, f"git commit failed: {detail[-1] if detail else exc}")
    return CommitResult(repo.head.commit.hexsha)


def _tracked(repo, rel: str) -> bool:
    try:
        return bool(repo.git.ls_files("--", rel).strip())
    except Exception:  # noqa: BLE001 - treat any git failure as untracked
        return False
