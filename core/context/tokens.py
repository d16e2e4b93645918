"""Token counts for context budgets, from the project's one estimator.

The replay backend reports `prompt_tokens` with `core.backends.tokens.count_message_tokens`,
and the context meter counts with the same module, so the context report, the meter and
the backend's usage agree only if all of them use these functions. This module is the
context package's single door to them.
"""

from __future__ import annotations

import functools

from core.backends.tokens import count_message_tokens, count_tokens


@functools.lru_cache(maxsize=512)
def estimate_tokens(text: str) -> int:
    """Approximate BPE token count of ``text`` (the project-wide estimator).

    Cached: a request counts the same system prompt, file texts and map lines as the one
    before it (a str caches its own hash, so a hit costs nothing).
    """
    return count_tokens(text)


def message_tokens(message: dict[str, str]) -> int:
    """Tokens one chat message costs: its content plus role framing."""
    return _message_tokens(message.get("role", ""), message.get("content", ""))


@functools.lru_cache(maxsize=512)
def _message_tokens(role: str, content: str) -> int:
    return count_message_tokens([{"role": role, "content": content}])
