"""Git for accepted changes (gitpython): commit exactly the change, nothing else.

Why plumbing instead of `git add` + `git commit`: the user may have staged work, other
uncommitted files, or uncommitted edits *in the very file* the model changed.  We build
the commit's tree from HEAD in a temporary index, putting in each file HEAD's content
with only our change applied (re-based when the user's own edits sit in the same file),
so the user's work stays uncommitted and their staging area stays as it was.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class CommitResult:
    sha: str | None
    error: str | None = None
    notes: list[str] = field(default_factory=list)  # files committed with extra content


@dataclass
class CommitFile:
    """A file of a change: its root-relative path and exact bytes before/after."""

    path: str
    before: bytes | None
    after: bytes | None


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


def _operation_in_progress(git_dir: Path) -> str | None:
    """A merge, rebase, cherry-pick or revert the user is in the middle of, if any."""
    for name, what in (("MERGE_HEAD", "merge"), ("rebase-merge", "rebase"),
                       ("rebase-apply", "rebase"), ("CHERRY_PICK_HEAD", "cherry-pick"),
                       ("REVERT_HEAD", "revert")):
        if (git_dir / name).exists():
            return what
    return None


def _head_entry(repo, rel: str) -> tuple[bytes | None, str | None]:
    """(content, mode) of rel in HEAD, or (None, None) when absent or no HEAD yet."""
    try:
        blob = repo.head.commit.tree / rel
    except (KeyError, ValueError):
        return None, None
    return blob.data_stream.read(), f"{blob.mode:o}"


def _target(rel: str, before: bytes | None, after: bytes | None, head: bytes | None,
            notes: list[str]) -> bytes | None:
    """The content to commit: HEAD with only this change applied."""
    if head == before or after is None or before is None:
        return after
    from core.edits.hunks import apply_hunks, make_hunks, rebase_hunk
    from core.workspace.files import WorkspaceError, decode, encode

    try:
        b_text, _ = decode(before, rel)
        a_text, _ = decode(after, rel)
        h_text, fmt = decode(head, rel) if head is not None else ("", None)
        if fmt is None:
            raise ValueError("new in the working tree")
        lines = h_text.splitlines(keepends=True)
        moved = [rebase_hunk(h, lines) for h in make_hunks(rel, b_text, a_text)]
        placed = [m for m in moved if m is not None]
        if len(placed) != len(moved):
            raise ValueError("the change overlaps uncommitted edits")
        return encode(apply_hunks(h_text, placed), fmt, rel)
    except (ValueError, WorkspaceError) as exc:
        notes.append(f"{rel}: committed with your uncommitted edits in it ({exc})")
        return after


def commit_change(root: Path, files: list[CommitFile], message: str) -> CommitResult:
    """Commit exactly these changes on top of HEAD; the index and other work stay put."""
    import git

    repo = open_repo(root)
    if repo is None:
        return CommitResult(None, "not a git repository")
    top = Path(repo.working_tree_dir).resolve()
    busy = _operation_in_progress(Path(repo.git_dir))
    if busy:
        return CommitResult(None, f"the repository is in the middle of a {busy}; "
                                  f"not committed (the files are written)")
    message = message.strip() or "sparkstation: accepted edit"
    notes: list[str] = []
    try:
        has_head = repo.head.is_valid()
        rels = [(root.resolve() / f.path).resolve().relative_to(top).as_posix()
                if (root / f.path).exists() else
                (root.resolve() / f.path).relative_to(top).as_posix() for f in files]
        ignored = set(repo.ignored(*rels)) if rels else set()
        updates: list[tuple[str, bytes | None, str]] = []
        for f, rel in zip(files, rels):
            if rel in ignored:
                notes.append(f"{rel}: ignored by git; not committed")
                continue
            head, mode = _head_entry(repo, rel) if has_head else (None, None)
            target = _target(rel, f.before, f.after, head, notes)
            if target == head:
                continue
            if mode is None:
                mode = "100755" if os.access(top / rel, os.X_OK) else "100644"
            updates.append((rel, target, mode))
        if not updates:
            return CommitResult(None, "nothing to commit", notes)
        with tempfile.TemporaryDirectory(prefix="spark-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            g = repo.git
            if has_head:
                g.read_tree("HEAD", env=env)
            shas = {rel: (_hash_blob(repo, data) if data is not None else None)
                    for rel, data, _ in updates}
            _index_info(repo, [(rel, mode, shas[rel]) for rel, _, mode in updates], env)
            tree = g.write_tree(env=env)
        parents = ["-p", repo.head.commit.hexsha] if has_head else []
        commit = repo.git.commit_tree(tree, *parents, "-m", message)
        old = repo.head.commit.hexsha if has_head else None
        ref = repo.head.ref.path if not repo.head.is_detached else "HEAD"
        args = [ref, commit] + ([old] if old else [])
        repo.git.update_ref("-m", f"sparkstation: {message.splitlines()[0]}", *args)
        _sync_index(repo, [(rel, mode, shas[rel]) for rel, _, mode in updates], old)
    except git.GitCommandError as exc:
        detail = (exc.stderr or exc.stdout or str(exc)).strip().splitlines()
        return CommitResult(None, f"git commit failed: {detail[-1] if detail else exc}", notes)
    return CommitResult(commit, None, notes)


def _hash_blob(repo, data: bytes) -> str:
    """Store data as a blob in the repository's object database; return its sha."""
    import io

    from gitdb import IStream

    stored = repo.odb.store(IStream("blob", len(data), io.BytesIO(data)))
    sha = stored.hexsha
    return sha.decode() if isinstance(sha, bytes) else sha


def _index_info(repo, entries: list[tuple[str, str, str | None]],
                env: dict[str, str] | None = None) -> None:
    """Set (or, with sha None, remove) index entries in one `update-index --index-info`."""
    if not entries:
        return
    zero = "0" * 40
    lines = "".join(f"{mode} {sha}\t{rel}\n" if sha else f"0 {zero}\t{rel}\n"
                    for rel, mode, sha in entries)
    with tempfile.TemporaryFile() as fh:
        fh.write(lines.encode("utf-8"))
        fh.seek(0)
        repo.git.update_index("--index-info", istream=fh, env=env or {})


def _sync_index(repo, entries: list[tuple[str, str, str | None]],
                old_head: str | None) -> None:
    """Where the user had nothing staged for a path, stage our committed content, so
    `git status` shows only their own work; staged entries of theirs are left alone."""
    rels = [rel for rel, _, _ in entries]
    staged: dict[str, str] = {}
    for line in repo.git.ls_files("-s", "-z", "--", *rels).split("\0"):
        if "\t" in line:
            meta, rel = line.split("\t", 1)
            staged[rel] = meta.split()[1]
    tree = repo.commit(old_head).tree if old_head else None
    todo = []
    for rel, mode, sha in entries:
        head_sha = None
        if tree is not None:
            try:
                head_sha = (tree / rel).hexsha
            except KeyError:
                head_sha = None
        if staged.get(rel) != head_sha:
            continue  # the user staged something of their own here
        todo.append((rel, mode, sha))
    _index_info(repo, todo)
