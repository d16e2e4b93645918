"""Build the real-answers corpus from git mirrors of public repositories that committed
their Aider chat logs.

Usage: python -m bench.real_answers.collect MIRRORS_DIR OUT.jsonl.gz [--hints FILE]

MIRRORS_DIR holds bare git mirrors as `owner+name/repo` (the layout the search tool's
fetch gives).  For every `.aider.chat.history.md` in any commit of a mirror, the largest
version (logs only grow) is split into answers (`aider_log.parse_log`); each answer gets
the tree it was written against:
- the parent of the commit Aider made for its edits (`edit_commit`) when the mirror has it
  (exact: `tree_source = "commit"`);
- else the last commit before its session started (`"session"`: close, not exact);
- else none (`tree_known = False`).
and, for that tree, the line count of every file whose name occurs in the answer's text,
so stray-file and cut-file checks need no mirror later.  Why record names rather than
the parser's current output: the parser changes; any path it could read from an answer
has its file name in the answer.

The corpus never enters the repository (it is other people's text, fetched): the bench
builds it into a cache folder (corpus.py).  `--hints FILE` (lines `owner/name commit`)
names commits known to hold a chat log, read before the sampled history; by default
the commits of manifest.txt, the sources of the measured corpus.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from .aider_log import Answer, parse_log
from .corpus import hints_from_manifest, write

LOG_NAME = ".aider.chat.history.md"
_PERMISSIVE = [("MIT License", "MIT"), ("Permission is hereby granted, free of charge", "MIT"),
               ("Apache License", "Apache-2.0"), ("Redistribution and use in source and binary",
                                                  "BSD"),
               ("ISC License", "ISC"), ("Mozilla Public License", "MPL-2.0"),
               ("This is free and unencumbered software", "Unlicense"),
               ("CC0 1.0", "CC0-1.0")]
_WORD_RE = re.compile(r"[\w.\-\[\]@+]+")


class Git:
    """A few read-only queries on one bare mirror; blobs through one `cat-file --batch`."""

    def __init__(self, gitdir: Path) -> None:
        self.gitdir = gitdir
        self._batch: subprocess.Popen[bytes] | None = None
        self._trees: dict[str, dict[str, str]] = {}

    def run(self, *args: str) -> str:
        out = subprocess.run(["git", "--git-dir", str(self.gitdir), *args],
                             capture_output=True, check=False)
        return out.stdout.decode("utf-8", "replace")

    def blob(self, spec: str, limit: int = 4 << 20) -> bytes | None:
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", "--git-dir", str(self.gitdir), "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(spec.encode() + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            return None
        size = int(header[2])
        data = self._batch.stdout.read(size + 1)[:-1]
        return data if header[1] == b"blob" and size <= limit else None

    def tree(self, commit: str) -> dict[str, str]:
        """path -> blob id of every file at commit."""
        if commit not in self._trees:
            files: dict[str, str] = {}
            for row in self.run("ls-tree", "-r", commit).splitlines():
                meta, _, path = row.partition("\t")
                parts = meta.split()
                if len(parts) == 3 and parts[1] == "blob":
                    files[path] = parts[2]
            self._trees[commit] = files
        return self._trees[commit]

    def resolve(self, rev: str) -> str | None:
        out = self.run("rev-parse", "--verify", "--quiet", rev + "^{commit}").strip()
        return out or None

    def close(self) -> None:
        if self._batch is not None:
            assert self._batch.stdin is not None
            self._batch.stdin.close()
            self._batch.wait()


def licence(git: Git) -> str | None:
    """The permissive licence the repository's newest tree declares, else None."""
    head = git.resolve("HEAD")
    if head is None:
        return None
    for path in git.tree(head):
        if "/" in path or not path.upper().startswith(("LICENSE", "LICENCE", "COPYING")):
            continue
        data = git.blob(f"{head}:{path}") or b""
        text = data[:4000].decode("utf-8", "replace")
        for needle, name in _PERMISSIVE:
            if needle in text:
                return name
    return None


_EXAMPLES = "aider/website/examples/"


def log_versions(git: Git, hints: tuple[str, ...] = ()) -> dict[str, str]:
    """path of each chat log -> the commit holding its largest version.

    Aider's own repository has no chat log but publishes real transcripts (2023, its
    ORIGINAL/UPDATED era) as example pages: those are read as logs too."""
    head = git.resolve("HEAD")
    if head is not None:
        examples = {p: head for p in git.tree(head)
                    if p.startswith(_EXAMPLES) and p.endswith(".md")
                    and not p.endswith("README.md")}
        if examples:
            return examples
    # `git log --name-only` stops at the first object a snapshot lacks, so look at the
    # trees of (up to 200, evenly spread) commits instead.
    commits = git.run("rev-list", "--all", "--date-order").split()
    if len(commits) > 200:
        step = len(commits) / 200
        commits = [commits[int(i * step)] for i in range(200)]
    best: dict[str, str] = {}
    size: dict[str, int] = {}
    for commit in [*hints, *commits]:
        for row in git.run("ls-tree", "-r", "-l", commit).splitlines():
            meta, _, name = row.partition("\t")
            if not name.rsplit("/", 1)[-1].endswith(LOG_NAME.lstrip(".")):
                continue  # `.aider.chat.history.md`, also without the dot
            parts = meta.split()
            if len(parts) == 4 and parts[3].isdigit() and int(parts[3]) > size.get(name, -1):
                size[name], best[name] = int(parts[3]), commit
    return best


def _before_tree(git: Git, ans: Answer, cache: dict[str, str | None]) -> tuple[str | None, str]:
    for short in [ans.edit_commit] if ans.edit_commit else []:
        full = git.resolve(short)
        if full is not None:
            parent = git.resolve(full + "^")
            if parent is not None:
                return parent, "commit"
    if ans.session_start:
        if ans.session_start not in cache:
            out = git.run("rev-list", "--all", "-n", "1", f"--before={ans.session_start}")
            cache[ans.session_start] = out.strip() or None
        commit = cache[ans.session_start]
        if commit:
            return commit, "session"
    return None, "none"


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def file_facts(git: Git, commit: str, text: str, applied: list[str]) -> dict[str, int | None]:
    """Line count (None: binary or too big) of each file at commit whose name occurs in
    text or that Aider applied an edit to."""
    tree = git.tree(commit)
    words = set(_WORD_RE.findall(text))
    out: dict[str, int | None] = {}
    for path, blob in tree.items():
        base = path.rsplit("/", 1)[-1]
        if base in words or path in applied:
            data = git.blob(blob)
            out[path] = None if data is None or b"\0" in data[:8000] else _line_count(data)
    return out


def answers_of(mirror: Path, hints: tuple[str, ...] = ()) -> list[dict[str, object]]:
    """Every answer of every chat log in one mirror, as corpus records."""
    gitdir = mirror / "repo" if (mirror / "repo").exists() else mirror
    repo = mirror.name.replace("+", "/", 1)
    git = Git(gitdir)
    try:
        lic = licence(git)
        records: list[dict[str, object]] = []
        for log_path, commit in log_versions(git, hints).items():
            raw = git.blob(f"{commit}:{log_path}", limit=64 << 20)
            if not raw:
                continue
            cache: dict[str, str | None] = {}
            text = raw.decode("utf-8", "replace")
            if log_path.startswith(_EXAMPLES):  # drop the page's HTML wrapper lines
                text = "\n".join(x for x in text.split("\n")
                                 if not x.startswith(("<div", "</div")))
            for ans in parse_log(text):
                rec = record(ans, repo, log_path, commit, lic)
                tree, how = ((None, "none") if log_path.startswith(_EXAMPLES)
                             else _before_tree(git, ans, cache))
                rec["tree_source"] = how
                rec["tree_commit"] = tree
                rec["files"] = file_facts(git, tree, ans.text, ans.applied) if tree else {}
                # what Aider's commit for this answer changed: the files of the blocks
                # that did apply when others failed (Aider then names only the failures)
                rec["committed"] = (git.run("diff-tree", "--no-commit-id", "--name-only", "-r",
                                            git.resolve(ans.edit_commit or "") or "")
                                    .split() if how == "commit" else [])
                records.append(rec)
        return records
    finally:
        git.close()


def record(ans: Answer, repo: str, log_path: str, commit: str, lic: str | None
           ) -> dict[str, object]:
    rec: dict[str, object] = {"repo": repo, "log_path": log_path, "log_commit": commit,
                              "licence": lic}
    rec.update(asdict(ans))
    rec["request"] = ans.request[:500]
    return rec


def build(mirrors: Path, out: Path, hints: dict[str, list[str]] | None = None) -> int:
    """Every answer of every mirror under `mirrors` into the corpus file `out`; returns
    how many.  One broken mirror is reported and skipped, not fatal."""
    hints = hints or {}

    def records() -> Iterator[dict[str, object]]:
        for mirror in sorted(p for p in mirrors.iterdir() if p.is_dir()):
            repo = mirror.name.replace("+", "/", 1)
            try:
                recs = answers_of(mirror, tuple(hints.get(repo, [])))
            except (OSError, ValueError, UnicodeError) as exc:
                print(f"{mirror.name}: skipped ({exc!r})", file=sys.stderr)
                continue
            if recs:
                print(f"{mirror.name}: {len(recs)} answers", file=sys.stderr)
            yield from recs

    total = write(records(), out)
    print(f"{total} answers -> {out}", file=sys.stderr)
    return total


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    mirrors, out = Path(argv[0]), Path(argv[1])
    if "--hints" in argv:
        hints: dict[str, list[str]] = {}
        for row in Path(argv[argv.index("--hints") + 1]).read_text().splitlines():
            if len(row.split()) == 2 and not row.startswith("#"):
                hints.setdefault(row.split()[0], []).append(row.split()[1])
    else:
        hints = hints_from_manifest()
    build(mirrors, out, hints)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
