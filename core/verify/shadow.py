"""A scratch copy of the project where a proposal is materialised and tested.

Why a copy and not the user's tree: nothing is written to the user's files before they
accept, and a test run (which may write caches, pyc files, junit reports) must not touch
them either.  Why copies and not hard links: a test that opens a file for writing would
truncate the user's file through a shared inode; source trees are small, so copying the
files git knows about takes tens of milliseconds.  Big dependency folders at the root
(`node_modules`, `.venv`, ...) are symlinked read-through instead: they are not the user's
code and are far too big to copy.

The overlay is exactly the files a proposal (or an accepted subset of it) changes; moving
from one subset to another rewrites only the files whose text differs and puts back the
original of files no longer changed.  The folder is removed on close (and by `with`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Self

from core.verify import VerifyError
from core.workspace.files import SPARK_DIR, Workspace, WorkspaceError, encode

# folders never copied: VCS data, our journal, caches a test run recreates
SKIP_DIRS = frozenset({".git", SPARK_DIR, "__pycache__", ".pytest_cache", ".mypy_cache",
                       ".ruff_cache", ".hypothesis", ".tox", ".nox"})
# folders at the root linked, not copied: installed dependencies
LINK_DIRS = ("node_modules", ".venv", "venv", "env", ".env")
MAX_COPY_BYTES = 200_000_000  # a tree bigger than this is not a source tree: refuse


class ShadowTree:
    """A temp folder holding a copy of `ws.root` plus an overlay of proposed texts."""

    def __init__(self, ws: Workspace, *, prefix: str = "spark-shadow-") -> None:
        self.ws = ws
        self.prefix = prefix
        self.path: Path | None = None
        self.overlay: dict[str, str | None] = {}  # rel -> text written (None: deleted)
        self.copied_files = 0

    # -- lifetime ------------------------------------------------------------------------
    def open(self) -> Path:
        """Create the copy (once); VerifyError when the tree cannot be copied."""
        if self.path is not None:
            return self.path
        tmp = Path(tempfile.mkdtemp(prefix=self.prefix))
        try:
            self._copy_tree(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.path = tmp
        return tmp

    def close(self) -> None:
        """Remove the folder and everything a test run left in it."""
        path, self.path = self.path, None
        self.overlay = {}
        if path is not None:
            _rmtree(path)

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- overlay -------------------------------------------------------------------------
    def materialise(self, texts: Mapping[str, str | None]) -> list[str]:
        """Make the copy equal to the user's tree with exactly `texts` replaced (None:
        the file is deleted).  Returns the paths rewritten or restored this time."""
        root = self.open()
        touched: list[str] = []
        for rel in sorted(set(self.overlay) - set(texts)):
            self._restore(root, rel)
            touched.append(rel)
            del self.overlay[rel]
        for rel in sorted(texts):
            text = texts[rel]
            if rel in self.overlay and self.overlay[rel] == text:
                continue
            self._write(root, rel, text)
            self.overlay[rel] = text
            touched.append(rel)
        return touched

    def _write(self, root: Path, rel: str, text: str | None) -> None:
        target = _inside(root, rel)
        if text is None:
            target.unlink(missing_ok=True)
            return
        try:  # the bytes accept would write: the user's encoding, newlines, mode
            fmt = self.ws.file_format(rel)
            data = encode(text, fmt, rel)
        except WorkspaceError as exc:
            raise VerifyError(f"cannot materialise {rel}: {exc}") from None
        _unlink_if_link(target)
        Workspace.write_bytes_atomic(target, data, fmt.mode)

    def _restore(self, root: Path, rel: str) -> None:
        target = _inside(root, rel)
        _unlink_if_link(target)
        source = self.ws.root / rel
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        else:
            target.unlink(missing_ok=True)

    # -- the base copy -------------------------------------------------------------------
    def _copy_tree(self, dest: Path) -> None:
        src = self.ws.root
        total = 0
        made: set[Path] = set()
        for rel in _source_files(src):
            source = src / rel
            try:
                size = source.stat().st_size
            except OSError:
                continue  # vanished or unreadable: the tests will say if it mattered
            total += size
            if total > MAX_COPY_BYTES:
                raise VerifyError(f"{src}: over {MAX_COPY_BYTES // 1_000_000} MB of files "
                                  f"to copy; tests are not run on a shadow copy of it")
            target = dest / rel
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            try:
                shutil.copy2(source, target, follow_symlinks=False)
            except OSError:
                continue
            self.copied_files += 1
        for name in LINK_DIRS:
            if (src / name).is_dir() and not os.path.lexists(dest / name):
                os.symlink(src / name, dest / name, target_is_directory=True)


def _source_files(root: Path) -> Iterator[str]:
    """The files of the project: git's tracked and untracked-not-ignored files when it is
    a repository (fast, and skips build output), else a walk that skips SKIP_DIRS."""
    if (root / ".git").exists() and shutil.which("git"):
        try:
            out = subprocess.run(
                ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                cwd=root, capture_output=True, timeout=30, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            out = None
        if out is not None:
            seen: set[str] = set()
            for raw in out.split(b"\0"):
                rel = os.fsdecode(raw)
                parts = Path(rel).parts
                if rel and rel not in seen and not SKIP_DIRS.intersection(parts) \
                        and parts[0] not in LINK_DIRS and (root / rel).is_file():
                    seen.add(rel)
                    yield rel
            return
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS
                         and not (here == root and d in LINK_DIRS))
        for name in sorted(files):
            yield (here / name).relative_to(root).as_posix()


def _inside(root: Path, rel: str) -> Path:
    """root/rel, refusing any path that would leave the shadow folder."""
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        raise VerifyError(f"{rel}: outside the shadow copy; refused")
    return target


def _unlink_if_link(target: Path) -> None:
    if target.is_symlink():
        target.unlink()


def _rmtree(path: Path) -> None:
    """Remove a shadow even where a test run left read-only folders behind."""

    def retry(func: Callable[[str], object], p: str, _exc: object) -> None:
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)
