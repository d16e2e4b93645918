"""Real commits as (path, before, after) triples, and their compact cache file.

Each line of a case file (a local cache, never committed: the text is other projects'
code) is one commit: its project, id and subject, and per touched ``.py`` file the text
before the commit (``None`` for a new file) and the commit's change as line splices
``[start, end, new_lines]`` against that text.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

Splice = tuple[int, int, list[str]]


@dataclass(frozen=True)
class FileChange:
    """One file of a commit: its text before (``None``: created) and after."""

    path: str
    before: str | None
    after: str


@dataclass(frozen=True)
class Case:
    """One real commit, reduced to its ``.py`` files."""

    id: str
    repo: str
    commit: str
    subject: str
    files: tuple[FileChange, ...]


def make_splices(before: str, after: str) -> list[Splice]:
    """The line splices (against before) that turn before into after."""
    import difflib

    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i1, i2, b[j1:j2]) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


def apply_splices(before: str, splices: list[Splice]) -> str:
    """before with the splices applied (they are sorted and do not overlap)."""
    lines = before.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    for start, end, new in splices:
        out.extend(lines[pos:start])
        out.extend(new)
        pos = end
    out.extend(lines[pos:])
    return "".join(out)


def encode_case(case: Case) -> dict[str, object]:
    return {"id": case.id, "repo": case.repo, "commit": case.commit,
            "subject": case.subject,
            "files": [{"path": f.path, "before": f.before,
                       "splices": make_splices(f.before or "", f.after)}
                      for f in case.files]}


def decode_case(doc: dict) -> Case:
    files = []
    for f in doc["files"]:
        splices = [(int(s), int(e), list(new)) for s, e, new in f["splices"]]
        files.append(FileChange(f["path"], f["before"],
                                apply_splices(f["before"] or "", splices)))
    return Case(doc["id"], doc["repo"], doc["commit"], doc["subject"], tuple(files))


def load_cases(path: Path) -> list[Case]:
    """Every case of a case file, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [decode_case(json.loads(line)) for line in fh if line.strip()]


def save_cases(cases: list[Case], path: Path) -> None:
    # mtime=0: the same cases give the same bytes, so regenerating changes nothing
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0,
                                                compresslevel=9) as gz:
        for case in cases:
            gz.write((json.dumps(encode_case(case), ensure_ascii=False,
                                 separators=(",", ":")) + "\n").encode("utf-8"))
