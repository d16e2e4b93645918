"""The one loop that runs an answer: send, stream, parse, and say what happened.

Why one: the main screen, the race, the variations and the batch each used to stream and
parse on their own, and their answers reached the session record by four paths with four
sets of bugs (timings of one answer shown for another, errors read as "no change"). Each
now calls `stream_answer`, which feeds an `AnswerRun` and yields typed updates; a screen
only draws them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from core.answer import AnswerRun
from core.edits.parser import Edit


@dataclass(frozen=True)
class Started:
    """The request is on its way (the stream object can steer or cancel it)."""

    stream: Any


@dataclass(frozen=True)
class Progress:
    """New text arrived; `completed` are the edits it finished (the caller re-diffs)."""

    text: str
    tokens: int
    completed: list[Edit] = field(default_factory=list)


@dataclass(frozen=True)
class Steered:
    redirect: str


@dataclass(frozen=True)
class Finished:
    """The stream ended: reason "stop" | "length" | "cancelled" | "error" (then `code`)."""

    reason: str
    error: str | None = None
    code: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason in ("stop", "length")


Update = Started | Progress | Steered | Finished


async def stream_answer(client, run: AnswerRun, messages: list[dict], *,
                        max_tokens: int | None = None,
                        next_redirect: Callable[[], str | None] | None = None,
                        ) -> AsyncIterator[Update]:
    """Stream one answer into `run`, yielding what changed; never raises for a stream error.

    `next_redirect` gives the text of the steer the core just confirmed (the app keeps the
    steers it sent); the run keeps it for the transcript. The last update is always a
    `Finished`, and `run.finish` has been called by then.
    """
    from core.client import CoreError, Info

    try:
        kwargs: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
        # the typed request, apart from context and rejection feedback: replay matches on it
        kwargs["request"] = run.prompt
        stream = await client.generate(run.profile, messages, **kwargs)
    except CoreError as exc:
        run.finish("error", exc.message or str(exc), exc.code)
        yield Finished("error", run.error, run.error_code)
        return
    except Exception as exc:  # noqa: BLE001 - any failure ends this answer only
        run.finish("error", str(exc) or type(exc).__name__, "client_error")
        yield Finished("error", run.error, run.error_code)
        return
    yield Started(stream)
    try:
        async with aclosing(stream.__aiter__()) as events:
            async for event in events:
                if isinstance(event, Info):
                    if event.event == "steered":
                        redirect = next_redirect() if next_redirect else None
                        run.steered(redirect or str(event.data.get("text", "")))
                        yield Steered(run.redirects[-1])
                    continue
                completed = run.feed(event.text, event.tokens)
                yield Progress(event.text, event.tokens, completed)
    except CoreError as exc:
        run.finish("error", exc.message or str(exc), exc.code)
        yield Finished("error", run.error, run.error_code)
        return
    except Exception as exc:  # noqa: BLE001
        run.finish("error", str(exc) or type(exc).__name__, "client_error")
        yield Finished("error", run.error, run.error_code)
        return
    done = stream.done
    run.source = done.source if done else None
    run.usage = done.usage if done else None
    run.timing = done.timing if done else None
    reason = done.reason if done else "error"
    if done is None:
        run.finish("error", "the stream ended without a done frame", "protocol")
    else:
        run.finish(reason)
    yield Finished(reason, run.error, run.error_code)
