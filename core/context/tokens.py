"""Token counts for context budgets, from the project's one estimator.

The replay backend reports `prompt_tokens` with `core.backends.tokens.count_tokens`, so the
context report, the context meter and the backend's usage agree only if all of them use
that same function. This module is the context package's single door to it.
"""

from __future__ import annotations

from core.backends.tokens import count_tokens

MESSAGE_OVERHEAD = 4  # role and framing tokens per chat message, as chat templates add


def estimate_tokens(text: str) -> int:
    """Approximate BPE token count of ``text`` (the project-wide estimator)."""
    return count_tokens(text)


def message_tokens(message: dict[str, str]) -> int:
    """Tokens one chat message costs: its content plus role framing."""
    return estimate_tokens(message.get("content", "")) + MESSAGE_OVERHEAD
