"""Build ``cases.jsonl.gz`` from the git histories of public Python projects.

Run once (the case file ships in the repo), with the histories fetched as bare git
directories::

    python -m bench.edit_corpus.generate /work/.mirror/pypa+packaging/repo ...

A commit qualifies when it is not a merge, touches 1-4 ``.py`` files, each modified or
added (commits that delete or rename a ``.py`` file are skipped: SEARCH/REPLACE cannot
say that), at least one modified, the files are UTF-8 with LF line ends, at most
``MAX_FILE_BYTES`` before, and the change is 1-199 changed lines over its ``.py``
files.  Other files the commit touched (changelogs, docs) are left out.  A fixed seed
picks up to ``--per-repo`` qualifying commits per project, so the file is reproducible.
"""

from __future__ import annotations

import argparse
import difflib
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.edit_corpus.cases import CASE_FILE, Case, FileChange, save_cases

MAX_FILE_BYTES = 40_000
MAX_CHANGED_LINES = 199
MAX_FILES = 4


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True, text=True).stdout


def candidates(git_dir: Path) -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
    """(commit, subject, [(status, path, old_blob, new_blob)]) for commits whose .py
    changes are only modifications and additions of 1-MAX_FILES files."""
    out = _git(git_dir, "log", "--no-merges", "--no-renames", "--raw", "--no-abbrev",
               "--format=@%H %s")
    found = []
    commit, subject, bad = "", "", False
    files: list[tuple[str, str, str, str]] = []

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


def _blob(git_dir: Path, sha: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", sha],
                          check=True, capture_output=True).stdout


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


def build_case(git_dir: Path, name: str, commit: str, subject: str,
               files: list[tuple[str, str, str, str]]) -> Case | None:
    changes = []
    total = 0
    for status, path, old_blob, new_blob in files:
        before = None
        if status == "M":
            raw = _blob(git_dir, old_blob)
            if len(raw) > MAX_FILE_BYTES:
                return None
            before = _text(raw)
            if before is None:
                return None
        raw_after = _blob(git_dir, new_blob)
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("git_dirs", nargs="+", type=Path)
    ap.add_argument("--per-repo", type=int, default=95)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--out", type=Path, default=CASE_FILE)
    args = ap.parse_args(argv)
    cases: list[Case] = []
    seen: set[tuple[tuple[str, str | None, str], ...]] = set()
    for git_dir in args.git_dirs:
        name = git_dir.parent.name.split("+")[-1] if git_dir.name == "repo" else git_dir.stem
        pool = candidates(git_dir)
        random.Random(f"{args.seed}:{name}").shuffle(pool)
        taken = 0
        for commit, subject, files in pool:
            if taken >= args.per_repo:
                break
            case = build_case(git_dir, name, commit, subject, files)
            if case is None:
                continue
            key = tuple((f.path, f.before, f.after) for f in case.files)
            if key in seen:  # a cherry-pick or revert-of-revert: the same change twice
                continue
            seen.add(key)
            cases.append(case)
            taken += 1
        print(f"{name}: {len(pool)} candidate commits, {taken} taken", file=sys.stderr)
    save_cases(cases, args.out)
    size = args.out.stat().st_size
    print(f"{len(cases)} cases, {sum(len(c.files) for c in cases)} files -> {args.out} "
          f"({size / 1e6:.2f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
