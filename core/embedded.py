"""The core in a background thread with its own asyncio loop: the app's default.

Pacing runs on this loop, so a busy UI loop cannot stretch the schedule; the app still
talks to it only through the websocket, exactly as to a standalone `spark core serve`.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from core.cli_support import CliError
from core.engine import Engine
from core.profiles import load_config
from core.server import CoreServer


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

    def start(self) -> str:
        """Bind 127.0.0.1 on a free port and return its ws:// URL.

        Raises `core.profiles.ConfigError` (a CliError, clear message) on a bad config,
        before any thread starts.
        """
        if self.url is not None:
            return self.url
        config = load_config(config_file=self.config_file, project_root=self.project_root)
        from hwmodel.online import CalibrationStore

        engine = Engine(config, record_dir=self.record_dir,
                        calibration=CalibrationStore.default())
        ready = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
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

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread is not None:
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=5)
        self._thread = None
        self.url = None

    def __enter__(self) -> EmbeddedCore:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
