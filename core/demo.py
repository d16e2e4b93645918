"""The offline demo: a small invoicing project written into a folder and made a git repo.

The shipped cassettes (`core/cassettes/demo.jsonl`) hold recorded answers against exactly
these files, so `spark demo` shows real edits streaming in with no network.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from core.errors import SparkError

DEMO_SOURCE = Path(__file__).with_name("demo_project")
_SKIP = {"__pycache__", ".pytest_cache"}


class DemoError(SparkError):
    """The demo folder cannot be written (not empty, not a folder)."""


def demo_files() -> dict[str, str]:
    """Relative path -> content of every file of the demo project."""
    files: dict[str, str] = {}
    for path in sorted(DEMO_SOURCE.rglob("*")):
        rel = path.relative_to(DEMO_SOURCE)
        if path.is_file() and not _SKIP.intersection(rel.parts) and path.suffix != ".pyc":
            files[rel.as_posix()] = path.read_text(encoding="utf-8")
    return files


def write_demo(target: Path | None = None, *, git: bool = True) -> Path:
    """Write the demo project into `target` (a new temp folder when None) and commit it."""
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="spark-demo-"))
    target = target.expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise DemoError(f"{target} exists and is not a folder")
    if target.exists() and any(target.iterdir()):
        raise DemoError(f"{target} is not empty; pick a new or empty folder for the demo")
    target.mkdir(parents=True, exist_ok=True)
    for rel, content in demo_files().items():
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(content, encoding="utf-8")
    (target / ".gitignore").write_text("__pycache__/\n.spark/\n.pytest_cache/\n", encoding="utf-8")
    mark_demo(target)
    if git:
        _init_repo(target)
    return target


def is_demo(root: Path) -> bool:
    """``root`` was written by `spark demo` (its answers are recordings)."""
    from core.config import DEMO_MARKER

    return (Path(root) / DEMO_MARKER).is_file()


def recorded_prompts() -> list[tuple[str, str]]:
    """(title, prompt) of every recording the demo can replay, for its first screen: the
    demo answers these well and anything else with the closest of them."""
    from core.backends.replay import PACKAGE_CASSETTES, CassetteLibrary

    library = CassetteLibrary.load([PACKAGE_CASSETTES])
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for cassette in library.cassettes:
        if sum(m.get("role") == "user" for m in cassette.messages) != 1:
            continue  # a follow-up (e.g. a fix round after failing tests), not a first prompt
        prompt = cassette.last_user.strip()
        if prompt and prompt not in seen:
            seen.add(prompt)
            out.append((cassette.title or cassette.id, prompt))
    return out


def first_screen_text() -> str:
    """What the demo's main screen says before the first prompt: it answers from recordings,
    and which requests it has recordings for (anything else gets the closest of them)."""
    lines = [("This is the demo: answers are recordings made against these files (no model, "
              "no network). Recorded requests, type one (or something close) and press Enter:")]
    lines += [f"  - {prompt}" for _, prompt in recorded_prompts()]
    lines.append("Your own project with a real model: spark init, or just spark in its folder.")
    return "\n".join(lines)


def mark_demo(root: Path) -> None:
    """Mark ``root`` as a demo: its profiles replay the recordings (core.config reads it)."""
    from core.config import DEMO_MARKER

    marker = root / DEMO_MARKER
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("written by `spark demo`: answers here are recordings\n",
                      encoding="utf-8")


def _init_repo(root: Path) -> None:
    import git  # gitpython; imported here so `spark --help` stays fast

    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cfg:
        # A local identity so the demo commits on machines with no global git config.
        if not repo.config_reader().has_option("user", "email"):
            cfg.set_value("user", "name", "sparkstation demo")
            cfg.set_value("user", "email", "demo@sparkstation.invalid")
    repo.git.add(all=True)
    repo.index.commit("invoicer: initial import")


def remove_demo(root: Path) -> None:
    """Delete a demo folder written by write_demo (used by tests and `--cleanup`)."""
    shutil.rmtree(root, ignore_errors=True)
