"""Rank the repo map for the prompt being typed, so Enter finds it ready.

On a large tree the map's PageRank is most of a request's assembly (hundreds of ms on
20,000 files). The prompt is typed over seconds, so the app calls `prefetch` with the
draft whenever typing pauses (from a worker thread); the ranks are cached per focus (the
chat files, the files and names the prompt mentions) and `build_request` on Enter reuses
them when the sent prompt mentions the same things, or warm-starts from them when it
does not. Never required: without it a request ranks on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.context.prompt import ChatContext


def prefetch(context: ChatContext, prompt: str) -> None:
    """Compute (and cache) the repo map's ranks for a draft prompt."""
    if not prompt.strip() or prompt.lstrip().startswith("/"):
        return
    chat = [f.path for f in context.files]
    context.repo_map.prefetch(chat, prompt, context.mentioned_paths(prompt))
