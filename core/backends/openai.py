"""OpenAI-compatible backend: `/v1/chat/completions` with `stream: true` over httpx.

httpx rather than the `openai` package: it is already a dependency, it is far lighter,
and reading the raw byte stream lets us time the first content byte ourselves (TTFT)
instead of trusting a client library's buffering. Works with Cerebras Cloud, OpenAI,
vLLM, SGLang, llama.cpp server, Ollama and LM Studio, which all speak this dialect.

Every failure becomes a `BackendError` with a stable code, so only that stream gets an
`error` frame: 401/403 `auth`, 404 `model_not_found`, 429 `rate_limited` (retried while
Retry-After is short), 5xx `upstream_error`, `connect_failed`, `connect_timeout`,
`read_timeout`, and `stream_cut` when the answer stops before its end.
The API key is read from the environment variable the profile names; it is sent in the
Authorization header and nowhere else (never logged, never recorded).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from core import protocol as P
from core.auth import remember_secret
from core.backends.base import BackendError, BackendRequest, BackendStream
from core.profiles import Profile


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now_dt = datetime.fromtimestamp(now if now is not None else time.time(), UTC)
    return max(0.0, (when - now_dt).total_seconds())


def _upstream_message(response: httpx.Response) -> str:
    try:
        body = response.json()
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:500]
        if isinstance(err, str):
            return err[:500]
    except (ValueError, RecursionError):
        pass
    return response.text[:300].strip() or response.reason_phrase


MAX_SSE_LINE_CHARS = 4 * 1024 * 1024


def _count(value: Any) -> int:
    """A usage count as the endpoint sent it; anything odd counts as unknown (0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        return str(err.get("message") or err.get("type") or err)[:500]
    return str(err)[:500]


def _event_error_message(data: str) -> str:
    """The message of an SSE `event: error` (JSON with an error object, or plain text)."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return data[:500]
    if isinstance(obj, dict):
        return _error_text(obj.get("error") or obj.get("message") or obj)
    return str(obj)[:500]


def endpoint_label(base_url: str) -> str:
    """scheme://host[:port]/path without credentials or query, safe to show and record."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}".rstrip("/")


class _OpenAIStream(BackendStream):
    def __init__(self, response: httpx.Response, t_sent: float, **kw: Any) -> None:
        super().__init__(paced=False, **kw)
        self._response = response
        self._t_sent = t_sent
        self._garbage: str | None = None  # the first line that is not SSE

    async def _lines(self) -> AsyncIterator[str]:
        """Lines of the body, with a cap: httpx's own line reader would buffer a
        newline-free body of any size."""
        buf = ""
        async for text in self._response.aiter_text():
            buf += text
            lines = buf.splitlines(keepends=True)
            buf = lines.pop() if lines and not lines[-1].endswith(("\n", "\r")) else ""
            for line in lines:
                yield line.rstrip("\r\n")
            if len(buf) > MAX_SSE_LINE_CHARS:
                raise BackendError(P.E_BAD_UPSTREAM, "the endpoint sent a line over "
                                   f"{MAX_SSE_LINE_CHARS // 1024} KiB: not an event stream")
        if buf:
            yield buf

    async def _events(self) -> AsyncIterator[tuple[str, str]]:
        """SSE events as (event name, data): `data:` lines joined until a blank line."""
        data_lines: list[str] = []
        event = "message"
        async for line in self._lines():
            if line.startswith("data:"):
                data_lines.append(line[5:].lstrip(" "))
            elif line.startswith("event:"):
                event = line[6:].strip() or "message"
            elif not line.strip():
                if data_lines:
                    yield event, "\n".join(data_lines)
                data_lines, event = [], "message"
            elif not line.startswith((":", "id:", "retry:")) and self._garbage is None:
                self._garbage = line  # not SSE at all (an HTML page, a JSON body)
            # comments (": ping") and id:/retry: fields are ignored, as SSE says
        if data_lines:  # a last event without its blank line
            yield event, "\n".join(data_lines)

    async def pieces(self) -> AsyncIterator[str]:
        t_first: float | None = None
        t_last = self._t_sent
        seen_done = False
        n_chunks = 0
        try:
            async for event, data in self._events():
                if data.strip() == "[DONE]":
                    seen_done = True
                    break
                if event == "error":
                    raise BackendError(P.E_UPSTREAM, "the endpoint reported an error "
                                       f"mid-stream: {_event_error_message(data)}")
                for text in self._handle_event(data):
                    now = time.perf_counter()
                    if t_first is None:
                        t_first = now
                    t_last = now
                    n_chunks += 1
                    yield text
        except httpx.ReadTimeout:
            raise BackendError(P.E_READ_TIMEOUT, f"{self.source.get('endpoint')} sent nothing "
                               "for longer than the read timeout") from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise BackendError(P.E_STREAM_CUT, "the answer stream was cut before its end "
                               f"({type(exc).__name__})") from None
        except httpx.HTTPError as exc:  # e.g. a broken chunked encoding or gzip
            raise BackendError(P.E_STREAM_CUT, "the answer stream broke off "
                               f"({type(exc).__name__}: {exc})") from None
        if not seen_done and self.finish_reason is None:
            if n_chunks == 0 and self._garbage is not None:
                ctype = self._response.headers.get("content-type", "no content-type")
                raise BackendError(P.E_BAD_UPSTREAM, "the endpoint answered 200 with a body "
                                   f"that is not an event stream ({ctype}): "
                                   f"{self._garbage[:120]!r}")
            raise BackendError(P.E_STREAM_CUT, "the answer stream ended before its end "
                               "(no finish_reason, no [DONE])")
        completion = (self.usage or {}).get("completion_tokens") or n_chunks
        ttft_ms = (t_first - self._t_sent) * 1000.0 if t_first is not None else None
        # like the core's own figure: tokens after the first over the time they took
        tps = ((completion - 1) / (t_last - t_first)
               if t_first is not None and t_last > t_first and completion > 1 else None)
        self.measured = {"ttft_ms": None if ttft_ms is None else round(ttft_ms, 3),
                         "tokens_per_s": None if tps is None else round(tps, 3)}

    def _handle_event(self, data: str) -> list[str]:
        """Content pieces of one chunk; anything malformed is `bad_upstream_response`."""
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError):
            raise BackendError(P.E_BAD_UPSTREAM, "the endpoint sent a chunk that is not JSON: "
                               f"{data[:120]!r}") from None
        if not isinstance(obj, dict):
            raise BackendError(P.E_BAD_UPSTREAM, "the endpoint sent a chunk that is not an object")
        if obj.get("error"):
            raise BackendError(P.E_UPSTREAM, "the endpoint reported an error mid-stream: "
                               f"{_error_text(obj['error'])}")
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self.usage = {"prompt_tokens": _count(usage.get("prompt_tokens")),
                          "completion_tokens": _count(usage.get("completion_tokens"))}
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            timings = obj.get("timings")  # llama.cpp's server: cache_n prompt tokens reused
            if cached is None and isinstance(timings, dict):
                cached = timings.get("cache_n")
            if _count(cached):  # optional: the prompt cache's share, for online calibration
                self.usage["cached_tokens"] = _count(cached)
        choices = obj.get("choices") or []
        if not isinstance(choices, list):
            raise BackendError(P.E_BAD_UPSTREAM, "the endpoint sent a chunk whose 'choices' "
                               "is not a list")
        out: list[str] = []
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str) and content:
                out.append(content)
            reason = choice.get("finish_reason")
            if reason:
                self.finish_reason = "length" if reason == "length" else "stop"
        return out

    async def aclose(self) -> None:
        await self._response.aclose()


class OpenAIBackend:
    """One pooled httpx client per profile; the core's connections to the endpoint persist."""

    def __init__(self, profile: Profile, *, env: dict[str, str] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        env = dict(os.environ) if env is None else env
        assert profile.base_url
        self.profile = profile
        self.model = profile.api_model or profile.model or ""
        self.endpoint = endpoint_label(profile.base_url)
        headers = {"Accept": "text/event-stream"}
        if profile.api_key_env:
            key = env.get(profile.api_key_env)
            if not key:
                raise BackendError(P.E_AUTH, f"environment variable {profile.api_key_env} "
                                   "is not set")
            remember_secret(key)  # error frames blank it if an endpoint echoes it back
            headers["Authorization"] = f"Bearer {key}"
        timeout = httpx.Timeout(connect=profile.connect_timeout_s, read=profile.read_timeout_s,
                                write=profile.read_timeout_s, pool=profile.connect_timeout_s)
        self._client = httpx.AsyncClient(base_url=profile.base_url.rstrip("/") + "/",
                                         headers=headers, timeout=timeout, transport=transport)

    def _body(self, request: BackendRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": request.messages,
                                "stream": True, "stream_options": {"include_usage": True}}
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        return body

    async def open(self, request: BackendRequest) -> BackendStream:
        body = self._body(request)
        attempt = 0
        while True:
            t_sent = time.perf_counter()
            try:
                req = self._client.build_request("POST", "chat/completions", json=body)
                response = await self._client.send(req, stream=True)
            except httpx.ConnectTimeout:
                wait = self.profile.connect_timeout_s
                raise BackendError(P.E_CONNECT_TIMEOUT, f"{self.endpoint} did not accept a "
                                   f"connection within {wait:g} s") from None
            except httpx.ConnectError as exc:
                raise BackendError(P.E_CONNECT,
                                   f"cannot connect to {self.endpoint}: {exc}") from None
            except httpx.ReadTimeout:
                raise BackendError(P.E_READ_TIMEOUT, f"{self.endpoint} did not answer within "
                                   f"{self.profile.read_timeout_s:g} s") from None
            except httpx.HTTPError as exc:
                raise BackendError(P.E_UPSTREAM, f"request to {self.endpoint} failed: "
                                   f"{type(exc).__name__}: {exc}") from None
            if response.status_code == 200:
                source = {"backend": "openai", "model": self.model, "endpoint": self.endpoint}
                return _OpenAIStream(response, t_sent, source=source)
            try:
                await response.aread()
            except httpx.HTTPError:
                pass
            finally:
                await response.aclose()
            code = response.status_code
            message = _upstream_message(response)
            if code == 429:
                retry_wait = parse_retry_after(response.headers.get("Retry-After"))
                if (retry_wait is not None and retry_wait <= self.profile.max_retry_wait_s
                        and attempt < self.profile.max_retries):
                    attempt += 1
                    await asyncio.sleep(retry_wait)
                    continue
                hint = f"; retry after {retry_wait:g} s" if retry_wait is not None else ""
                raise BackendError(P.E_RATE_LIMITED, f"{self.endpoint} is rate limiting "
                                   f"(HTTP 429{hint}): {message}", retry_after_s=retry_wait)
            if code in (401, 403):
                env_hint = f" in ${self.profile.api_key_env}" if self.profile.api_key_env else ""
                raise BackendError(P.E_AUTH, f"{self.endpoint} refused the API key{env_hint} "
                                   f"(HTTP {code}): {message}")
            if code == 404:
                raise BackendError(P.E_MODEL_NOT_FOUND, f"model '{self.model}' not found at "
                                   f"{self.endpoint} (HTTP 404): {message}")
            if code >= 500:
                raise BackendError(P.E_UPSTREAM, f"{self.endpoint} failed (HTTP {code}): "
                                   f"{message}")
            raise BackendError(P.E_UPSTREAM, f"{self.endpoint} rejected the request "
                               f"(HTTP {code}): {message}")

    async def aclose(self) -> None:
        await self._client.aclose()
