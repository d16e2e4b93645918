"""Where the real-answers corpus lives, how the bench gets it, and how it is read.

Why nothing of it is in the repository: the corpus is made of other people's Aider chat
logs (their prompts, their models' answers) taken from public repositories fetched as
git mirrors.  That text is not ours to commit, so the bench builds the corpus on the
machine it runs on, from the mirrors, into a cache folder, and reads it from there.
What the repository keeps is our code (collector, measure, replay) and `manifest.txt`:
the names and commits of the repositories the measured corpus came from, so it can be
rebuilt.  CI tests the engine on hand-written answers of the same shapes instead
(tests/core/edits/data/real_shapes.py).

Locations (first that applies):
- corpus file: $SPARK_REAL_ANSWERS, else `<cache>/real_answers.jsonl.gz` with <cache>
  = $SPARK_CORPUS_CACHE or the user cache folder (platformdirs) + `corpora`;
- mirrors: $SPARK_CORPUS_MIRRORS, else $SPARK_REAL_ANSWERS_MIRRORS (older name), else
  /work/.mirror (where the workplace's fetch tool puts them): bare git mirrors named
  `owner+name`, each holding `repo/` or being the git folder itself.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

MANIFEST = Path(__file__).with_name("manifest.txt")
DEFAULT_MIRRORS = Path("/work/.mirror")
CORPUS_NAME = "real_answers.jsonl.gz"


def cache_dir() -> Path:
    env = os.environ.get("SPARK_CORPUS_CACHE", "")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("sparkstation")) / "corpora"


def corpus_path() -> Path:
    env = os.environ.get("SPARK_REAL_ANSWERS", "")
    return Path(env) if env else cache_dir() / CORPUS_NAME


def mirrors_dir() -> Path | None:
    """The folder of git mirrors, or None when there is none on this machine."""
    for name in ("SPARK_CORPUS_MIRRORS", "SPARK_REAL_ANSWERS_MIRRORS"):
        env = os.environ.get(name, "")
        if env:
            return Path(env) if Path(env).is_dir() else None
    return DEFAULT_MIRRORS if DEFAULT_MIRRORS.is_dir() else None


def manifest(path: Path = MANIFEST) -> list[tuple[str, str]]:
    """(owner/name, commit) pairs: the sources of the measured corpus."""
    pairs: list[tuple[str, str]] = []
    if not path.is_file():
        return pairs
    for row in path.read_text(encoding="utf-8").splitlines():
        parts = row.split()
        if len(parts) == 2 and not row.startswith("#"):
            pairs.append((parts[0], parts[1]))
    return pairs


def how_to_build() -> str:
    repos = sorted({repo for repo, _ in manifest()})
    return (
        "How to get it: fetch the repositories listed in bench/real_answers/manifest.txt "
        f"({len(repos)} repositories with committed Aider chat logs, e.g. {', '.join(repos[:3])}) "
        "as bare git mirrors into one folder (`owner+name/repo`, the fetch tool's layout), then\n"
        "  SPARK_CORPUS_MIRRORS=<folder> python -m bench real_answers   (builds the cache once), or\n"
        f"  python -m bench.real_answers.collect <folder> {corpus_path()}\n"
        "An already built corpus is used as is with SPARK_REAL_ANSWERS=<file.jsonl.gz>.")


def ensure_corpus() -> Path | None:
    """The corpus file, built from the mirrors into the cache when it is not there yet;
    None when there is neither a corpus nor mirrors to build one from."""
    path = corpus_path()
    if path.is_file():
        return path
    mirrors = mirrors_dir()
    if mirrors is None:
        return None
    from .collect import build

    path.parent.mkdir(parents=True, exist_ok=True)
    build(mirrors, path, hints_from_manifest())
    return path


def hints_from_manifest() -> dict[str, list[str]]:
    hints: dict[str, list[str]] = {}
    for repo, commit in manifest():
        hints.setdefault(repo, []).append(commit)
    return hints


def read(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def unique(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each answer text once (the first repository that has it wins): some projects
    commit the same log twice, or copy another project's."""
    seen: set[str] = set()
    for rec in records:
        digest = hashlib.sha1(rec["text"].encode()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            yield rec


def write(records: Iterable[dict[str, Any]], out: Path) -> int:
    """Write records as a corpus file (gzip, one JSON object a line); return how many.
    Written to a temporary name first, so an interrupted build leaves no half corpus
    that a later run would take for a whole one."""
    tmp = out.with_name(out.name + ".part")
    n = 0
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for rec in records:
            gz.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
            n += 1
    tmp.replace(out)
    return n
