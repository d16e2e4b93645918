"""Records live answers as cassettes, so any session can be replayed offline later.

Writes the documented cassette format (docs/cassettes.md), one JSON line per exchange,
appended to `DIR/recorded-YYYYMMDD.jsonl`. It receives only messages, answer text,
usage and a source label: never headers, never the API key, never the endpoint's
credentials (the label is scheme://host/path only).
"""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.auth import redact
from core.backends.replay import last_user_message

_SAFE_SOURCE_KEYS = ("backend", "model", "endpoint")


class Recorder:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()

    def record(self, messages: list[dict[str, str]], answer: str, usage: dict[str, int],
               source: dict[str, Any]) -> Path:
        now = datetime.now(UTC)
        digest = hashlib.sha1(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:10]
        title = " ".join(last_user_message(messages).split())[:60]
        entry = {"version": 1, "id": f"rec-{now:%Y%m%dT%H%M%S}-{digest}", "title": title,
                 "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
                 "answer": answer,
                 "usage": {"prompt_tokens": int(usage.get("prompt_tokens", 0)),
                           "completion_tokens": int(usage.get("completion_tokens", 0))},
                 "source": {**{k: source[k] for k in _SAFE_SOURCE_KEYS if k in source},
                            "recorded_at": now.isoformat(timespec="seconds")}}
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"recorded-{now:%Y%m%d}.jsonl"
        # an endpoint that echoes the key into its answer must not get it onto disk
        line = redact(json.dumps(entry, ensure_ascii=False)) + "\n"
        with self._lock, path.open("a", encoding="utf-8") as fh:
            fh.write(line)  # one write per line: a crash never leaves half an exchange + more
        return path
