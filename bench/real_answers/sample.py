"""The compact sample of the real-answers corpus that lives in the repository.

Why a sample: the full corpus is built from git mirrors that CI does not have and holds
text whose licence we do not know.  The sample keeps only answers from repositories whose
licence allows redistribution (the collector records it), one copy of each answer text
(some projects commit the same log twice), and per answer just what the checks need: the
text, Aider's verdict, the model and format, and the line counts of the files it names.
Each record names its source (`repo`, `log_path`, `log_commit`, `licence`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).with_name("sample.jsonl.gz")
_KEEP = ("repo", "log_path", "log_commit", "licence", "index", "session_start", "model",
         "edit_format", "request", "text", "applied", "commits", "edit_commit", "failed", "failed_paths", "declined",
         "committed", "reflection", "reformatted",
         "architect", "tree_source", "tree_commit", "files")


def read(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def load_sample(path: Path = SAMPLE) -> list[dict[str, Any]]:
    return list(read(path))


def unique(records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each answer text once (the first repository that has it wins)."""
    seen: set[str] = set()
    for rec in records:
        digest = hashlib.sha1(rec["text"].encode()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            yield rec


def write_sample(corpus: Path, out: Path) -> int:
    """Write the licence-clean, de-duplicated part of corpus to out; return its size."""
    n = 0
    # mtime=0: the same corpus gives the same bytes, so the file only changes in git
    # when its content does
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for rec in unique(read(corpus)):
            if not rec.get("licence"):
                continue
            slim = {k: rec.get(k) for k in _KEEP}
            slim["request"] = (slim["request"] or "")[:200]
            gz.write((json.dumps(slim, ensure_ascii=False, sort_keys=True) + "\n").encode())
            n += 1
    return n
