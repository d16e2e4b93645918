"""Build the corpus of real commits from git histories (nothing fetched is committed).

What ships in the repo is ``manifest.json``: which commits of which public projects
make the corpus.  Their text is read, at bench time, from the projects' git histories
fetched as bare git directories (``$SPARK_CORPUS_MIRRORS``, default ``/work/.mirror``,
one ``owner+name/repo`` folder each) into a local cache (``$SPARK_CORPUS_CACHE``).
The CI sample uses this repository's own history instead (``own_history``).

A commit qualifies when it is not a merge, touches 1-4 ``.py`` files, each modified or
added (commits that delete or rename a ``.py`` file are skipped: SEARCH/REPLACE cannot
say that), at least one modified, the files are UTF-8 with LF line ends, at most
``MAX_FILE_BYTES``, and the change is 1-199 changed lines over its ``.py`` files.
Other files the commit touched (changelogs, docs) are left out.

    python -m bench.edit_corpus.generate select owner+name/repo ...   # new manifest
    python -m bench.edit_corpus.generate build                       # fill the cache
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.edit_corpus.cases import Case, FileChange, load_cases, save_cases

MAX_FILE_BYTES = 40_000
MAX_CHANGED_LINES = 199
MAX_FILES = 4
MANIFEST = Path(__file__).with_name("manifest.json")

Touched = list[tuple[str, str, str, str]]  # (status, path, old blob, new blob)


class CorpusMissing(Exception):  # a condition to report, not a bug
    """The fetched histories the corpus is read from are not on this machine."""


def mirrors_dir() -> Path:
    return Path(os.environ.get("SPARK_CORPUS_MIRRORS", "/work/.mirror"))


def cache_file() -> Path:
    base = os.environ.get("SPARK_CORPUS_CACHE") or str(Path(tempfile.gettempdir(),
                                                            "sparkstation-corpus"))
    return Path(base, "edit_corpus.jsonl.gz")


class Blobs:
    """`git cat-file --batch` over one git directory: one process for all blobs."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def get(self, sha: str) -> bytes:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(sha.encode() + b"\n")
        self.proc.stdin.flush()
        head = self.proc.stdout.readline().split()
        if len(head) < 3 or head[1] != b"blob":
            raise KeyError(sha)
        data = self.proc.stdout.read(int(head[2]) + 1)
        return data[:-1]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


def _log(git_dir: Path, *args: str) -> list[tuple[str, str, Touched]]:
    """(commit, subject, touched .py files) for commits whose .py changes are only
    modifications and additions of 1-MAX_FILES files, one of them a modification."""
    out = subprocess.run(["git", f"--git-dir={git_dir}", "log", "--no-merges",
                          "--no-renames", "--raw", "--no-abbrev", "--format=@%H %s", *args],
                         check=True, capture_output=True, text=True).stdout
    found: list[tuple[str, str, Touched]] = []
    commit, subject, bad = "", "", False
    files: Touched = []

    def flush() -> None:
        if commit and not bad and 1 <= len(files) <= MAX_FILES \
                and any(s == "M" for s, *_ in files):
            found.append((commit, subject, list(files)))

    for line in out.splitlines():
        if line.startswith("@"):
            flush()
            commit, _, subject = line[1:].partition(" ")
            files, bad = [], False
        elif line.startswith(":"):
            meta, _, path = line.partition("\t")
            _, _, old_blob, new_blob, status = meta.split()
            if not path.endswith(".py"):
                continue
            if status not in ("M", "A"):
                bad = True
            files.append((status, path, old_blob, new_blob))
    flush()
    return found


def _text(data: bytes) -> str | None:
    if b"\r" in data or b"\0" in data or data.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def changed_lines(before: str, after: str) -> int:
    sm = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(),
                                 autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes()
               if tag != "equal")


def build_case(blobs: Blobs, name: str, commit: str, subject: str, files: Touched
               ) -> Case | None:
    """The case for one commit, or None when it does not qualify."""
    changes = []
    total = 0
    for status, path, old_blob, new_blob in files:
        before = None
        if status == "M":
            raw = blobs.get(old_blob)
            if len(raw) > MAX_FILE_BYTES:
                return None
            before = _text(raw)
            if before is None:
                return None
        raw_after = blobs.get(new_blob)
        if len(raw_after) > MAX_FILE_BYTES:
            return None
        after = _text(raw_after)
        if after is None or after == before or not after.strip():
            return None
        total += changed_lines(before or "", after)
        changes.append(FileChange(path, before, after))
    if not 1 <= total <= MAX_CHANGED_LINES:
        return None
    return Case(f"{name}@{commit[:10]}", name, commit, subject[:120], tuple(changes))


def _name(repo: str) -> str:
    return repo.split("/")[-1]


def select(git_dirs: list[Path], per_repo: int, seed: int) -> list[Case]:
    """Up to per_repo qualifying commits per project, picked with a fixed seed."""
    cases: list[Case] = []
    seen: set[tuple[tuple[str, str | None, str], ...]] = set()
    for git_dir in git_dirs:
        repo = git_dir.parent.name.replace("+", "/", 1)
        pool = _log(git_dir)
        random.Random(f"{seed}:{_name(repo)}").shuffle(pool)
        blobs = Blobs(git_dir)
        taken = 0
        for commit, subject, files in pool:
            if taken >= per_repo:
                break
            case = build_case(blobs, _name(repo), commit, subject, files)
            if case is None:
                continue
            key = tuple((f.path, f.before, f.after) for f in case.files)
            if key in seen:  # a cherry-pick or revert-of-revert: the same change twice
                continue
            seen.add(key)
            cases.append(Case(case.id, repo, case.commit, case.subject, case.files))
            taken += 1
        blobs.close()
        print(f"{repo}: {len(pool)} candidate commits, {taken} taken", file=sys.stderr)
    return cases


def write_manifest(cases: list[Case], path: Path = MANIFEST) -> None:
    repos: dict[str, list[str]] = {}
    for c in cases:
        repos.setdefault(c.repo, []).append(c.commit)
    doc = {"about": "commits of public projects that make the edit corpus; their text is "
                    "read from fetched histories at bench time (bench/edit_corpus/generate.py)",
           "repos": [{"repo": r, "commits": ids} for r, ids in repos.items()]}
    path.write_text(json.dumps(doc, indent=1) + "\n")


def how_to_fetch(manifest: Path = MANIFEST) -> str:
    repos = [r["repo"] for r in json.loads(manifest.read_text())["repos"]]
    return (f"the edit corpus reads {len(repos)} public projects' git histories from "
            f"{mirrors_dir()} (set SPARK_CORPUS_MIRRORS): fetch "
            + ", ".join(f"github:{r}" for r in repos)
            + " (bare git dirs named owner+name/repo), then run `make bench` again")


def from_manifest(manifest: Path = MANIFEST, mirrors: Path | None = None) -> list[Case]:
    """The manifest's commits read from the fetched histories; CorpusMissing when one
    is not there."""
    mirrors = mirrors or mirrors_dir()
    cases: list[Case] = []
    for entry in json.loads(manifest.read_text())["repos"]:
        repo, commits = entry["repo"], entry["commits"]
        git_dir = mirrors / repo.replace("/", "+", 1) / "repo"
        if not git_dir.is_dir():
            raise CorpusMissing(how_to_fetch(manifest))
        blobs = Blobs(git_dir)
        try:
            for commit in commits:
                got = _log(git_dir, "-1", commit)
                case = build_case(blobs, _name(repo), *got[0]) if got else None
                if case is not None:
                    cases.append(Case(case.id, repo, case.commit, case.subject, case.files))
        finally:
            blobs.close()
    return cases


def corpus_cases() -> list[Case]:
    """The full corpus: from the cache, or built into it from the fetched histories
    (CorpusMissing when they are not on this machine)."""
    path = cache_file()
    stamp = path.with_suffix(".manifest")
    manifest_text = MANIFEST.read_text()
    if path.exists() and stamp.exists() and stamp.read_text() == manifest_text:
        return load_cases(path)
    cases = from_manifest()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_cases(cases, path)
    stamp.write_text(manifest_text)
    return cases


def own_history(repo_root: Path, limit: int) -> list[Case]:
    """The oldest `limit` qualifying commits of this checkout's own history (our own
    code, so the CI sample needs nothing fetched); [] without a usable .git."""
    git_dir = repo_root / ".git"
    if not git_dir.exists():
        return []
    try:
        pool = _log(git_dir, "--reverse")
    except (subprocess.CalledProcessError, OSError):
        return []
    blobs = Blobs(git_dir)
    cases: list[Case] = []
    try:
        for commit, subject, files in pool:
            case = build_case(blobs, "sparkstation", commit, subject, files)
            if case is not None:
                cases.append(case)
                if len(cases) >= limit:
                    break
    finally:
        blobs.close()
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sel = sub.add_parser("select", help="pick commits from fetched histories; write the manifest")
    sel.add_argument("git_dirs", nargs="+", type=Path)
    sel.add_argument("--per-repo", type=int, default=95)
    sel.add_argument("--seed", type=int, default=17)
    sub.add_parser("build", help="read the manifest's commits into the cache")
    args = ap.parse_args(argv)
    if args.cmd == "select":
        cases = select(args.git_dirs, args.per_repo, args.seed)
        write_manifest(cases)
        print(f"{len(cases)} commits -> {MANIFEST}", file=sys.stderr)
        return 0
    try:
        cases = corpus_cases()
    except CorpusMissing as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"{len(cases)} cases in {cache_file()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
