"""The core's websocket server: one connection per app session, many streams on it.

Each connection has one bounded outgoing queue drained by one writer task; stream jobs
block on it when the client reads slowly (websocket `send` waits for the socket to
drain), so a slow reader slows its own streams instead of growing the core's memory.
Every bad frame gets an `error` frame; nothing a client sends closes the connection
except frames over the transport limit (8 MiB).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import time
from http import HTTPStatus

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from core import protocol as P
from core.auth import check_bearer, is_loopback, remember_secret
from core.cli_support import CliError
from core.engine import MAX_PENDING_STEERS, Engine, StreamJob

log = logging.getLogger(__name__)
TRANSPORT_MAX_BYTES = 8 * 1024 * 1024  # above this websockets closes (1009); below, we answer
OUT_QUEUE_FRAMES = 64


class InsecureBindError(CliError, ValueError):
    """Binding a non-loopback address without a token: anyone on the network could spend
    the user's API credits."""


class Connection:
    """Protocol state for one websocket: hello, running jobs, the writer."""

    def __init__(self, ws: ServerConnection, engine: Engine) -> None:
        self.ws = ws
        self.engine = engine
        self.out: asyncio.Queue[dict] = asyncio.Queue(maxsize=OUT_QUEUE_FRAMES)
        self.jobs: dict[str, StreamJob] = {}
        self.greeted = False
        self.closed = False

    async def send(self, frame: dict) -> None:
        if not self.closed:  # after the socket is gone, frames have nowhere to go
            await self.out.put(frame)

    async def _writer(self) -> None:
        try:
            while True:
                frame = await self.out.get()
                await self.ws.send(P.encode(frame))
        except ConnectionClosed:
            pass
        # The socket is gone. Stop the streams now (fast ones would otherwise keep the
        # queue full and starve the reader parked in `send`), then keep draining so that
        # nobody waits for ever on a full queue; `run` cancels this task at the end.
        self.closed = True
        for job in list(self.jobs.values()):
            if job.task is not None:
                job.task.cancel()
        while True:
            await self.out.get()

    async def run(self) -> None:
        writer = asyncio.create_task(self._writer())
        try:
            async for raw in self.ws:
                await self.handle(raw)
        except ConnectionClosed:
            pass
        finally:
            for job in list(self.jobs.values()):
                if job.task is not None:
                    job.task.cancel()
            tasks = [j.task for j in self.jobs.values() if j.task is not None]
            await asyncio.gather(*tasks, return_exceptions=True)
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)

    async def handle(self, raw: str | bytes) -> None:
        try:
            frame = P.parse_client_frame(raw)
            await self.dispatch(frame)
        except P.ProtocolError as exc:
            await self.send(self._error(exc.stream_id, exc.code, exc.message))
        except Exception as exc:  # a bug must cost one error frame, not the connection
            log.exception("frame handling failed")
            await self.send(self._error(None, P.E_INTERNAL, f"internal error: {exc!r}"))

    def _error(self, sid: str | None, code: str, message: str) -> dict:
        """An error frame about a client frame. When its id names a stream that is still
        running (a reused id, a bad steer), that stream goes on: ``stream_continues``
        tells the client not to end it."""
        frame = P.error(sid, code, message)
        if sid is not None and sid in self.jobs:
            frame["stream_continues"] = True
        return frame

    async def dispatch(self, frame: P.ClientFrame) -> None:
        if isinstance(frame, P.Hello):
            if frame.protocol != P.PROTOCOL_VERSION:
                raise P.ProtocolError(P.E_PROTOCOL_VERSION,
                                      f"protocol {frame.protocol} is not supported; "
                                      f"this core speaks {P.PROTOCOL_VERSION}")
            self.greeted = True
            await self.send(P.welcome(self.engine.profile_list(), {
                "name": "sparkstation-core", "frame_ms": self.engine.config.frame_ms,
                "max_streams": self.engine.config.max_streams_per_connection}))
            return
        if isinstance(frame, P.Ping):
            await self.send(P.pong(frame.data, time.time()))
            return
        sid = getattr(frame, "id", None)
        if not self.greeted:
            raise P.ProtocolError(P.E_HELLO_REQUIRED, "send hello before anything else", sid)
        if isinstance(frame, P.Generate):
            await self._generate(frame)
        elif isinstance(frame, P.Cancel):
            job = self.jobs.get(frame.id)
            if job is None:
                raise P.ProtocolError(P.E_UNKNOWN_ID, f"no running stream '{frame.id}'",
                                      frame.id)
            job.cancel()
        elif isinstance(frame, P.Steer):
            job = self.jobs.get(frame.id)
            if job is None:
                raise P.ProtocolError(P.E_UNKNOWN_ID, f"no running stream '{frame.id}'",
                                      frame.id)
            held = job.conversation_chars + job.answer_chars() + len(frame.text)
            if held > P.MAX_CONVERSATION_CHARS:
                raise P.ProtocolError(P.E_INVALID_FIELD,
                                      f"steering '{frame.id}' would make its conversation "
                                      f"over {P.MAX_CONVERSATION_CHARS} characters; start a "
                                      "new stream with a shorter conversation", frame.id)
            if not job.steer(frame.text):
                raise P.ProtocolError(P.E_STEER_PENDING,
                                      f"stream '{frame.id}' already has {MAX_PENDING_STEERS} "
                                      "steers waiting; wait for a 'steered' info before "
                                      "steering again", frame.id)

    async def _generate(self, frame: P.Generate) -> None:
        if frame.id in self.jobs:
            raise P.ProtocolError(P.E_DUPLICATE_ID,
                                  f"stream '{frame.id}' is still running; use a new id",
                                  frame.id)
        if frame.profile not in self.engine.config.profiles:
            known = ", ".join(self.engine.config.profiles)
            raise P.ProtocolError(P.E_UNKNOWN_PROFILE,
                                  f"unknown profile '{frame.profile}' (known: {known})", frame.id)
        limit = self.engine.config.max_streams_per_connection
        if len(self.jobs) >= limit:
            raise P.ProtocolError(P.E_BUSY, f"at most {limit} streams per connection", frame.id)
        job = self.engine.job(frame, self.send)
        self.jobs[frame.id] = job
        task = job.start()
        task.add_done_callback(functools.partial(self._forgotten, frame.id, job))

    def _forgotten(self, sid: str, job: StreamJob, _task: "asyncio.Task[None]") -> None:
        if self.jobs.get(sid) is job:
            del self.jobs[sid]


class CoreServer:
    """Binds the websocket server; checks Origin and (off loopback) the bearer token."""

    def __init__(self, engine: Engine, *, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, sock: socket.socket | None = None) -> None:
        if not is_loopback(host) and not token:
            raise InsecureBindError(
                f"refusing to bind {host}: it is not a loopback address, so anyone who can "
                "reach it could spend your API credits; a token is required (spark core "
                "serve creates one) or bind 127.0.0.1")
        remember_secret(token)
        self.engine = engine
        self.host = host
        self.port = port
        self.token = token
        self.sock = sock  # already bound and listening (the embedded core's deferred start)
        self.connections: set[Connection] = set()
        self._server: Server | None = None

    def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        if request.headers.get_all("Origin"):  # any Origin, even "null" or localhost
            # Browsers always send Origin; our clients never do. Refusing it stops a web
            # page in the user's browser from driving the core (cross-site hijacking).
            return conn.respond(HTTPStatus.FORBIDDEN,
                                "sparkstation core: browser origins are refused\n")
        auth = request.headers.get_all("Authorization")
        if self.token is not None and not (len(auth) == 1 and check_bearer(auth[0],
                                                                           self.token)):
            return conn.respond(HTTPStatus.UNAUTHORIZED,
                                "sparkstation core: missing or wrong token\n")
        return None

    async def _handler(self, ws: ServerConnection) -> None:
        conn = Connection(ws, self.engine)
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)

    async def start(self) -> str:
        self.engine.warm()
        host, port = (None, None) if self.sock is not None else (self.host, self.port)
        self._server = await serve(self._handler, host, port, sock=self.sock,
                                   process_request=self._process_request,
                                   compression=None, max_size=TRANSPORT_MAX_BYTES,
                                   ping_interval=20, ping_timeout=20,
                                   # a client whose loop is gone must not hold up shutdown
                                   close_timeout=0.25)
        sock = next(iter(self._server.sockets))
        self.port = sock.getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}"

    async def serve_forever(self) -> None:
        assert self._server is not None
        await self._server.serve_forever()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        await self.engine.aclose()
