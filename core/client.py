"""The app's side of the core: one persistent websocket, many streams multiplexed on it.

`CoreClient.connect(url)` does hello/welcome once; `generate()` sends a frame and returns
a `Stream` at once (no per-request connection, which is the whole point: the seeds
credit persistent connections with an 80% cut in per-request overhead). A reader task
routes frames to streams by id. If the connection drops, in-flight streams end with
`CoreError("disconnected")` and the client reconnects with exponential backoff,
reporting its `state` through `on_state`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from core import protocol as P
from core.auth import client_token
from core.errors import SparkError
from core.protocol import Delta, Done, Info  # the stream's events are the protocol's typed frames

log = logging.getLogger(__name__)
CONNECTED, RECONNECTING, CLOSED = "connected", "reconnecting", "closed"


class CoreError(SparkError):
    """An `error` frame (or a lost connection) for a stream or request."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.extra = extra


class CoreConnectionError(CoreError):
    """Nothing answered at the URL, or it refused us (origin, token, protocol)."""

    def __init__(self, message: str) -> None:
        super().__init__("connect_failed", message)


class Stream:
    """One answer: async-iterate for `Delta`/`Info`; `.done` is set when it ends."""

    def __init__(self, client: CoreClient, sid: str, profile: str) -> None:
        self.client = client
        self.id = sid
        self.profile = profile
        self.done: Done | None = None
        self.error: CoreError | None = None
        self.text = ""               # everything received so far, for convenience
        self.tokens = 0
        self._queue: asyncio.Queue[Delta | Info | Done | CoreError] = asyncio.Queue()

    def _feed(self, event: Delta | Info | Done | CoreError) -> None:
        self._queue.put_nowait(event)

    def __aiter__(self) -> AsyncIterator[Delta | Info]:
        return self._events()

    async def _events(self) -> AsyncIterator[Delta | Info]:
        if self.done is not None:
            return
        if self.error is not None:
            raise self.error
        while True:
            event = await self._queue.get()
            if isinstance(event, Done):
                self.done = event
                return
            if isinstance(event, CoreError):
                self.error = event
                raise event
            if isinstance(event, Delta):
                self.text += event.text
                self.tokens += event.tokens
            yield event

    @property
    def finished(self) -> bool:
        return self.done is not None or self.error is not None

    async def cancel(self) -> None:
        """Ask the core to stop; iteration then ends with `done.reason == "cancelled"`."""
        if self.id in self.client._streams:
            await self.client._send({"type": "cancel", "id": self.id})

    async def steer(self, text: str) -> None:
        """Interrupt and continue under the same id with `text` as the user's redirect."""
        if self.id in self.client._streams:
            await self.client._send({"type": "steer", "id": self.id, "text": text})


class CoreClient:
    """One persistent connection to a core; create with `await CoreClient.connect(url)`."""

    def __init__(self, url: str, token: str | None,
                 on_state: Callable[[str], Any] | None, reconnect: bool) -> None:
        self.url = url
        self._token = token
        self.on_state = on_state
        self.reconnect = reconnect
        self.state = CLOSED
        self.profiles: list[dict] = []
        self.server: dict[str, Any] = {}
        self._ws: ClientConnection | None = None
        self._streams: dict[str, Stream] = {}
        self._pings: dict[int, asyncio.Future[P.Pong]] = {}
        self._ids = itertools.count(1)
        self._prefix = f"c{os.getpid()}-{id(self) & 0xFFFF:x}-"
        self._reader: asyncio.Task | None = None
        self._closing = False
        self._connected = asyncio.Event()

    @classmethod
    async def connect(cls, url: str, *, token: str | None = None,
                      on_state: Callable[[str], Any] | None = None,
                      reconnect: bool = True, timeout: float = 5.0) -> CoreClient:
        client = cls(url, client_token(token), on_state, reconnect)
        await client._open(timeout)
        return client

    # ---- connection management ----

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            if self.on_state is not None:
                try:
                    self.on_state(state)
                except Exception:  # the app's callback must not kill the reader
                    log.exception("on_state callback failed")

    async def _open(self, timeout: float) -> None:
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
        try:
            ws = await asyncio.wait_for(
                connect(self.url, additional_headers=headers, compression=None,
                        max_size=P.MAX_FRAME_BYTES * 8, open_timeout=timeout), timeout)
        except InvalidStatus as exc:
            status = exc.response.status_code
            body = exc.response.body.decode("utf-8", "replace").strip() if exc.response.body else ""
            raise CoreConnectionError(f"{self.url} refused the connection "
                                      f"(HTTP {status}{': ' + body[:200] if body else ''})") \
                from None
        except TimeoutError:
            raise CoreConnectionError(f"{self.url} did not complete the websocket handshake "
                                      f"within {timeout:g} s (nothing answered, or what "
                                      "answered is not a sparkstation core)") from None
        except (OSError, WebSocketException, ValueError) as exc:  # ValueError: a bad URL
            raise CoreConnectionError(f"no sparkstation core answers at {self.url}: "
                                      f"{exc or type(exc).__name__}") from None
        try:
            await ws.send(P.encode({"type": "hello", "protocol": P.PROTOCOL_VERSION}))
            raw = await asyncio.wait_for(ws.recv(), timeout)
        except TimeoutError:
            await ws.close()
            raise CoreConnectionError(f"{self.url} did not answer hello within {timeout:g} s"
                                      ) from None
        except ConnectionClosed as exc:
            await ws.close()
            raise CoreConnectionError(f"{self.url} did not answer hello: "
                                      f"{type(exc).__name__}: {exc}") from None
        try:
            reply = P.parse_server_frame(raw)
        except P.ProtocolError as exc:
            await ws.close()
            raise CoreConnectionError(f"{self.url} did not answer hello with a welcome: "
                                      f"{exc.message} ({raw!r:.200})") from None
        if not isinstance(reply, P.Welcome):
            await ws.close()
            if isinstance(reply, P.ErrorFrame):
                raise CoreConnectionError(f"{self.url} refused hello: {reply.code}: "
                                          f"{reply.message}")
            raise CoreConnectionError(f"{self.url} answered hello with {raw!r:.200}")
        self.profiles = list(reply.profiles)
        self.server = dict(reply.server)
        self._ws = ws
        self._connected.set()
        self._set_state(CONNECTED)
        self._reader = asyncio.create_task(self._read_loop(ws))

    async def _read_loop(self, ws: ClientConnection) -> None:
        try:
            async for raw in ws:
                try:
                    self._route(P.parse_server_frame(raw))
                except P.ProtocolError as exc:
                    log.warning("ignoring malformed frame from core (%s: %s): %.200r",
                                exc.code, exc.message, raw)
        except ConnectionClosed:
            pass
        except Exception:  # whatever went wrong, streams must end and reconnect start
            log.exception("reading from the core failed")
        self._lost()

    def _route(self, frame: P.ServerFrame) -> None:
        if isinstance(frame, P.Pong):
            fut = self._pings.pop(frame.data, None) if isinstance(frame.data, int) else None
            if fut is not None and not fut.done():
                fut.set_result(frame)
            return
        if isinstance(frame, P.Welcome):
            log.warning("ignoring a second welcome from the core")
            return
        stream = self._streams.get(frame.id) if frame.id is not None else None
        if stream is None:
            if isinstance(frame, P.ErrorFrame):
                log.warning("core error: %s: %s", frame.code, frame.message)
            return
        if isinstance(frame, (Delta, Info)):
            stream._feed(frame)
        elif isinstance(frame, Done):
            self._streams.pop(frame.id, None)
            self._learn(stream.profile, frame)
            stream._feed(frame)
        elif frame.extra.get("stream_continues"):  # about a frame we sent, not the stream
            log.warning("core error for running stream %s: %s: %s", frame.id, frame.code,
                        frame.message)
            # the stream goes on; tell its reader (e.g. a steer it was refused)
            stream._feed(Info(stream.id, "rejected", {"code": frame.code, "message": frame.message}))
        else:
            self._streams.pop(stream.id, None)
            stream._feed(CoreError(frame.code, frame.message, **frame.extra))

    def _lost(self) -> None:
        """The socket ended: fail in-flight streams, then reconnect unless closing."""
        self._ws = None
        self._connected.clear()
        for stream in list(self._streams.values()):
            stream._feed(CoreError(P.E_DISCONNECTED,
                                   "connection to the core was lost mid-answer"))
        self._streams.clear()
        for fut in self._pings.values():
            if not fut.done():
                fut.set_exception(CoreError(P.E_DISCONNECTED, "connection lost"))
        self._pings.clear()
        if self._closing or not self.reconnect:
            self._set_state(CLOSED)
            return
        self._set_state(RECONNECTING)
        self._reader = asyncio.create_task(self._reconnect_loop())

    async def _reconnect_loop(self, base: float = 0.1, cap: float = 5.0) -> None:
        delay = base
        while not self._closing:
            await asyncio.sleep(delay)
            try:
                await self._open(timeout=min(5.0, max(1.0, delay * 2)))
                return
            except CoreConnectionError as exc:
                log.info("reconnect to %s failed: %s", self.url, exc.message)
            except Exception:  # never let the loop die: the app would stay "reconnecting"
                log.exception("reconnect to %s failed", self.url)
            delay = min(cap, delay * 2)

    async def wait_connected(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def _send(self, frame: dict) -> None:
        if self._ws is None:
            raise CoreError(P.E_DISCONNECTED, f"not connected to the core ({self.state})")
        try:
            await self._ws.send(P.encode(frame))
        except ConnectionClosed:
            raise CoreError(P.E_DISCONNECTED, "connection to the core was lost") from None

    # ---- public API ----

    def _learn(self, profile: str, done: Done) -> None:
        """A live profile's online calibration moved: later forecasts (race) use it."""
        calibrated = done.timing.get("calibrated") if isinstance(done.timing, dict) else None
        entry = self.profile(profile)
        if isinstance(calibrated, dict) and entry is not None:
            entry["predicted"] = dict(calibrated)

    async def generate(self, profile: str, messages: list[dict], *,
                       max_tokens: int | None = None, stream_id: str | None = None,
                       request: str | None = None) -> Stream:
        """Start a stream; events arrive as you iterate the returned `Stream`."""
        sid = stream_id or f"{self._prefix}{next(self._ids)}"
        if sid in self._streams:
            raise CoreError(P.E_DUPLICATE_ID, f"stream '{sid}' is still running; use a new id")
        stream = Stream(self, sid, profile)
        self._streams[sid] = stream
        frame: dict[str, Any] = {"type": "generate", "id": sid, "profile": profile,
                                 "messages": messages}
        if max_tokens is not None:
            frame["max_tokens"] = max_tokens
        if request is not None:
            frame["request"] = request
        try:
            await self._send(frame)
        except CoreError:
            self._streams.pop(sid, None)
            raise
        return stream

    async def ping(self, timeout: float = 5.0) -> float:
        """Round-trip time in seconds over the persistent connection."""
        loop = asyncio.get_running_loop()
        n = next(self._ids)
        fut: asyncio.Future = loop.create_future()
        self._pings[n] = fut
        t0 = loop.time()
        await self._send({"type": "ping", "data": n})
        await asyncio.wait_for(fut, timeout)
        return loop.time() - t0

    def profile(self, name: str) -> dict | None:
        return next((p for p in self.profiles if p.get("name") == name), None)

    async def send_raw(self, text: str) -> None:
        """Send an arbitrary text frame (tests and diagnostics)."""
        if self._ws is None:
            raise CoreError(P.E_DISCONNECTED, "not connected")
        await self._ws.send(text)

    async def close(self) -> None:
        self._closing = True
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        for stream in list(self._streams.values()):
            stream._feed(CoreError(P.E_DISCONNECTED, "client closed"))
        self._streams.clear()
        self._set_state(CLOSED)
