"""The core in a background thread with its own asyncio loop: the app's default.

Pacing runs on this loop, so a busy UI loop cannot stretch the schedule; the app still
talks to it only through the websocket, exactly as to a standalone `spark core serve`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli_support import CliError
from core.profiles import load_config

if TYPE_CHECKING:
    from core.engine import Engine
    from core.profiles import CoreConfig
    from core.server import CoreServer

log = logging.getLogger(__name__)

SERVE_AFTER_MAX_S = 3.0  # the longest a deferred start waits for its signal (the app's first frame)


class EmbeddedStartError(CliError, RuntimeError):
    """The in-process core could not bind or start: one line for the user, exit 2."""


class EmbeddedCore:
    def __init__(self, *, project_root: Path | None = None, config_file: Path | None = None,
                 record_dir: Path | None = None) -> None:
        self.project_root = project_root
        self.config_file = config_file
        self.record_dir = record_dir
        self.url: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: CoreServer | None = None
        self._stop: asyncio.Event | None = None
        self._cancelled = False  # stop() before a deferred start began: it never begins

    def start(self, *, serve_after: threading.Event | None = None) -> str:
        """Bind 127.0.0.1 on a free port and return its ws:// URL.

        Raises `core.profiles.ConfigError` (a CliError, clear message) on a bad config,
        before any thread starts. With `serve_after` (the app's first frame) the port is
        bound and listening at once but the engine and the server (their imports, the
        cassettes and first predictions: ~50 ms of CPU under the GIL the app's start needs)
        start once it is set (or SERVE_AFTER_MAX_S passed); a client connecting meanwhile
        waits in the socket's backlog. Failures then reach the client as a refused connection.
        """
        if self.url is not None:
            return self.url
        config = load_config(config_file=self.config_file, project_root=self.project_root)
        if serve_after is not None:
            return self._start_deferred(config, serve_after)
        ready = threading.Event()
        failure: list[BaseException] = []
        engine = self._engine(config)

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            from core.server import CoreServer

            self._server = CoreServer(engine, host="127.0.0.1", port=0)
            try:
                self.url = await self._server.start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                await self._stop.wait()
            finally:
                await self._server.stop()

        def thread_main() -> None:
            # asyncio.run also cancels leftover tasks and closes async generators
            asyncio.run(main())

        self._thread = threading.Thread(target=thread_main, name="spark-core", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            raise EmbeddedStartError(f"the embedded core could not start: {failure[0]}") \
                from failure[0]
        assert self.url is not None
        return self.url

    def _engine(self, config: CoreConfig) -> Engine:
        """Imported here, not at the module's import: see start(serve_after=)."""
        from core.engine import Engine
        from hwmodel.online import CalibrationStore

        return Engine(config, record_dir=self.record_dir, calibration=CalibrationStore.default())

    def _start_deferred(self, config: CoreConfig, serve_after: threading.Event) -> str:
        try:
            sock = socket.create_server(("127.0.0.1", 0))
        except OSError as exc:
            raise EmbeddedStartError(f"the embedded core could not start: {exc}") from exc
        url = f"ws://127.0.0.1:{sock.getsockname()[1]}"

        async def main() -> None:
            from core.server import CoreServer

            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            if self._cancelled:  # (stop() sets it first, then looks for this loop)
                sock.close()
                return
            try:
                self._server = CoreServer(self._engine(config), sock=sock)
                await self._server.start()
            except Exception:  # the app's connection says it failed ("unreachable")
                log.exception("the embedded core could not start")
                return
            try:
                await self._stop.wait()
            finally:
                await self._server.stop()

        def thread_main() -> None:
            deadline = time.monotonic() + SERVE_AFTER_MAX_S
            while not serve_after.wait(0.05) and not self._cancelled and time.monotonic() < deadline:
                pass
            try:
                asyncio.run(main())
            finally:
                sock.close()  # a server that failed to start: the client is refused, not left waiting

        self._thread = threading.Thread(target=thread_main, name="spark-core", daemon=True)
        self._thread.start()
        self.url = url
        return url

    def stop(self) -> None:
        self._cancelled = True
        if self._thread is not None:
            if self._loop is not None and self._stop is not None and self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=5)
        self._thread = None
        self.url = None

    def __enter__(self) -> EmbeddedCore:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
