"""Replay backend: answers any prompt with the closest recorded exchange (a cassette).

Cassettes are JSONL, one exchange per line (format in docs/cassettes.md). Matching is
TF-IDF cosine similarity between the prompt's last user message and each recording's
last user message plus its title: cheap, deterministic, and good enough to pick "the
docstring one" for a docstring request. The chosen cassette, file and score travel
in `source` so the app can say what it is showing.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from core.backends.base import BackendError, BackendRequest, BackendStream
from core.backends.tokens import count_message_tokens, count_tokens, iter_tokens
from core.protocol import E_NO_CASSETTES

log = logging.getLogger(__name__)
PACKAGE_CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Cassette:
    file: Path
    id: str
    title: str
    messages: list[dict[str, str]]
    answer: str
    usage: dict[str, int] | None = None
    source: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def last_user(self) -> str:
        return last_user_message(self.messages)

    @cached_property
    def answer_tokens(self) -> int:
        """Counted once: a long answer would otherwise cost milliseconds of TTFT per request."""
        return count_tokens(self.answer)


def last_user_message(messages: list[dict[str, str]]) -> str:
    for msg in reversed(messages):
        if msg.get("role") == "user":
            return msg.get("content", "")
    return ""


def _stem(word: str) -> str:
    """Crude plural folding ("docstrings" -> "docstring"): enough for request wording."""
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _terms(text: str) -> Counter[str]:
    """Lower-case words; identifiers split at underscores (`parse_date` -> parse, date)."""
    return Counter(_stem(w) for w in _WORD.findall(text.lower()))


def parse_cassette_line(line: str, file: Path, lineno: int) -> Cassette:
    """Validate one JSONL line; raise ValueError with a readable reason."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("line is not a JSON object")
    if obj.get("version", 1) != 1:
        raise ValueError(f"unsupported cassette version {obj.get('version')!r}")
    messages = obj.get("messages")
    if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str) for m in messages):
        raise ValueError("'messages' must be a list of {role, content} objects")
    answer = obj.get("answer")
    if not isinstance(answer, str):
        raise ValueError("'answer' must be a string")
    usage = obj.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise ValueError("'usage' must be an object")
    return Cassette(file=file, id=str(obj.get("id") or f"{file.stem}:{lineno}"),
                    title=str(obj.get("title") or ""), messages=messages, answer=answer,
                    usage=usage, source=obj.get("source") or {})


class CassetteLibrary:
    """All cassettes from some folders, indexed for TF-IDF matching."""

    def __init__(self, cassettes: list[Cassette], problems: list[str] | None = None) -> None:
        self.cassettes = cassettes
        self.problems = problems or []
        docs = [_terms(c.last_user + " " + c.title) for c in cassettes]
        df: Counter[str] = Counter()
        for doc in docs:
            df.update(doc.keys())
        n = len(docs)
        self._idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in df.items()}
        self._vectors = [self._vector(doc) for doc in docs]

    @classmethod
    def load(cls, folders: Iterable[Path]) -> CassetteLibrary:
        cassettes: list[Cassette] = []
        problems: list[str] = []
        seen: set[Path] = set()
        for folder in folders:
            folder = Path(folder)
            files = [folder] if folder.is_file() else sorted(folder.glob("*.jsonl"))
            for file in files:
                if file in seen:
                    continue
                seen.add(file)
                try:
                    text = file.read_text(encoding="utf-8")
                except OSError as exc:
                    problems.append(f"{file}: cannot read: {exc}")
                    continue
                for lineno, line in enumerate(text.splitlines(), 1):
                    if not line.strip():
                        continue
                    try:
                        cassettes.append(parse_cassette_line(line, file, lineno))
                    except ValueError as exc:  # json errors are ValueErrors too
                        problems.append(f"{file}:{lineno}: skipped: {exc}")
        for problem in problems:
            log.warning("cassette %s", problem)
        return cls(cassettes, problems)

    def _vector(self, terms: Counter[str]) -> dict[str, float]:
        vec = {t: c * self._idf.get(t, 0.0) for t, c in terms.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {t: v / norm for t, v in vec.items()}

    def match(self, messages: list[dict[str, str]],
              request: str | None = None) -> tuple[Cassette, float]:
        """The closest cassette and its cosine score in [0, 1]; ties go to the first.

        ``request`` is the user's request as typed: the app's last user message also holds
        the assembled context and, after a rejection, the feedback put in front of it, which
        would otherwise pull the match towards the wrong recording.
        """
        if not self.cassettes:
            raise BackendError(E_NO_CASSETTES, "no cassettes to replay: add *.jsonl files to "
                               "a replay profile's 'cassettes' folders")
        query_text = request if request and request.strip() else last_user_message(messages)
        for cassette in self.cassettes:  # an exact replay is always the answer
            if cassette.last_user.strip() == query_text.strip():
                return cassette, 1.0
        query = self._vector(_terms(query_text))
        best, best_score = self.cassettes[0], -1.0
        for cassette, vec in zip(self.cassettes, self._vectors):
            score = sum(w * vec.get(t, 0.0) for t, w in query.items())
            if score > best_score + 1e-12:
                best, best_score = cassette, score
        return best, round(max(best_score, 0.0), 4)


class _ReplayStream(BackendStream):
    """Tokens are cut lazily from the answer, so a long answer costs no extra memory."""

    def __init__(self, answer: str, limit: int, **kw: Any) -> None:
        super().__init__(paced=True, **kw)
        self._answer = answer
        self._limit = limit

    async def pieces(self) -> AsyncIterator[str]:
        for i, token in enumerate(iter_tokens(self._answer)):
            if i >= self._limit:
                return
            yield token


class ReplayBackend:
    """Serves cassettes; the engine paces them on hwmodel's schedule."""

    def __init__(self, folders: Iterable[Path]) -> None:
        self.folders = tuple(folders)
        self.library = CassetteLibrary.load(self.folders)

    async def open(self, request: BackendRequest) -> BackendStream:
        cassette, score = self.library.match(request.messages, request.request)
        total = cassette.answer_tokens
        limit, reason = total, "stop"
        if request.max_tokens is not None and total > request.max_tokens:
            limit, reason = request.max_tokens, "length"
        usage = {"prompt_tokens": count_message_tokens(request.messages),
                 "completion_tokens": limit}
        source = {"backend": "replay", "cassette": cassette.file.name, "id": cassette.id,
                  "title": cassette.title, "score": score}
        if cassette.source.get("model"):
            source["recorded_model"] = cassette.source["model"]
        return _ReplayStream(cassette.answer, limit, source=source, usage=usage,
                             finish_reason=reason)

    async def aclose(self) -> None:
        return None
