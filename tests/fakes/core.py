"""Helpers to run a real core on loopback in tests: a config in tmp, a server, a client.

    async with running_core(tmp_path, tokens_per_s=20000) as (url, server):
        client = await CoreClient.connect(url)

The test cassettes (tests/fakes/cassettes/test.jsonl) are used instead of the demo ones,
so answers are deterministic whatever the lead ships in core/cassettes/.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from core.engine import Engine
from core.profiles import load_config
from core.server import CoreServer

TEST_CASSETTES = Path(__file__).resolve().parent / "cassettes"


def write_config(tmp_path: Path, *, tokens_per_s: float = 20000.0, ttft_ms: float = 5.0,
                 frame_ms: float = 16, extra: str = "",
                 cassettes: Path = TEST_CASSETTES, max_streams: int = 64) -> Path:
    """A config with a pinned-rate replay profile `fast` (no model is built in)."""
    path = tmp_path / "core-config.toml"
    path.write_text(
        f"[core]\nframe_ms = {frame_ms}\nmax_streams_per_connection = {max_streams}\n\n"
        f"[profiles.fast]\nbackend = \"replay\"\npacing = \"pinned\"\n"
        f"tokens_per_s = {float(tokens_per_s)}\nttft_ms = {float(ttft_ms)}\n"
        f"cassettes = [\"{Path(cassettes).as_posix()}\"]\n\n{extra}\n",
        encoding="utf-8")
    return path


@contextlib.asynccontextmanager
async def running_core(tmp_path: Path, *, record_dir: Path | None = None,
                       token: str | None = None, host: str = "127.0.0.1",
                       env: dict[str, str] | None = None,
                       **config_kw: Any) -> AsyncIterator[tuple[str, CoreServer]]:
    config = load_config(config_file=write_config(tmp_path, **config_kw), env=env or {})
    engine = Engine(config, record_dir=record_dir, package_cassettes=False)
    server = CoreServer(engine, host=host, port=0, token=token)
    url = await server.start()
    try:
        yield url, server
    finally:
        await server.stop()
