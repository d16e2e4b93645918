"""What every backend gives the engine: a request in, an async stream of text pieces out.

The engine owns timing (pacing, frames, measurement); a backend only says where tokens
come from and whether they arrive on their own schedule (`paced = False`, e.g. a live
endpoint) or all at once and need pacing (`paced = True`, e.g. a cassette).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.errors import SparkError


class BackendError(SparkError):
    """Ends one stream with an `error` frame; the connection and other streams stay up."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra


@dataclass(frozen=True)
class BackendRequest:
    stream_id: str
    messages: list[dict[str, str]]
    max_tokens: int | None = None
    request: str | None = None  # the user's typed request (replay matches on it)


@dataclass
class BackendStream:
    """One answer in progress. Iterate `pieces()`; read the rest after it ends."""

    paced: bool
    source: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, int] | None = None      # final counts when the backend knows them
    finish_reason: str | None = None         # "stop" | "length" as the backend reported
    measured: dict[str, float | None] | None = None  # upstream timing measured by the backend

    def pieces(self) -> AsyncIterator[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release upstream resources (HTTP connection) when cancelled or steered."""


class Backend(Protocol):
    async def open(self, request: BackendRequest) -> BackendStream: ...

    async def aclose(self) -> None: ...
