"""What the user already has: API keys in the environment and OpenAI-compatible servers
on loopback. Nothing here leaves the machine: servers are asked only on 127.0.0.1, with
a short timeout, all at once, so the first-run screen shows within a second even when
nothing is listening.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import httpx

from core.providers.presets import PRESETS, Preset

PROBE_TIMEOUT_S = 0.6


@dataclass(frozen=True)
class Found:
    """One usable provider: a key in the environment, or a server that answered."""

    preset: Preset
    base_url: str
    source: str  # how it was found, in words ("CEREBRAS_API_KEY is set", "answers on :11434")
    models: tuple[str, ...] = field(default=())  # what a local server reports serving

    @property
    def fast_model(self) -> str | None:
        return self.preset.fast_model or (self.models[0] if self.models else None)

    @property
    def deep_model(self) -> str | None:
        if self.preset.deep_model:
            return self.preset.deep_model
        return self.models[1] if len(self.models) > 1 else self.fast_model


def detect_env(env: Mapping[str, str] | None = None) -> list[Found]:
    """Hosted providers whose API key variable is set (non-empty) in ``env``."""
    env = os.environ if env is None else env
    return [Found(p, p.base_url, f"{p.key_env} is set") for p in PRESETS.values()
            if p.key_env and env.get(p.key_env, "").strip()]


def _model_ids(body: object) -> tuple[str, ...]:
    """Model ids from an OpenAI `/v1/models` body (Ollama's `models` list is accepted too)."""
    if not isinstance(body, dict):
        return ()
    items = body.get("data")
    if not isinstance(items, list):
        items = body.get("models")
    if not isinstance(items, list):
        return ()
    ids = []
    for item in items:
        ident = item.get("id") or item.get("name") if isinstance(item, dict) else None
        if isinstance(ident, str) and ident.strip() and ident not in ids:
            ids.append(ident)
    return tuple(ids)


async def _probe(client: httpx.AsyncClient, preset: Preset, port: int) -> Found | None:
    base = f"http://127.0.0.1:{port}/v1"
    try:
        response = await client.get(f"{base}/models")
    except (httpx.HTTPError, OSError):
        return None
    if response.status_code != 200:
        return None
    try:
        models = _model_ids(response.json())
    except ValueError:
        return None
    return Found(preset, base, f"answers on 127.0.0.1:{port}", models)


async def detect_servers_async(ports: Iterable[tuple[Preset, int]] | None = None,
                               timeout: float = PROBE_TIMEOUT_S) -> list[Found]:
    """Loopback servers that answer `GET /v1/models`, probed concurrently."""
    targets = list(ports) if ports is not None else [
        (p, p.port) for p in PRESETS.values() if p.port is not None]
    limits = httpx.Timeout(timeout, connect=timeout)
    async with httpx.AsyncClient(timeout=limits, trust_env=False) as client:
        results = await asyncio.gather(*(_probe(client, p, port) for p, port in targets))
    return [r for r in results if r is not None]


def detect_servers(ports: Iterable[tuple[Preset, int]] | None = None,
                   timeout: float = PROBE_TIMEOUT_S) -> list[Found]:
    """Synchronous wrapper (for `spark init`); the screen awaits the async one."""
    return asyncio.run(detect_servers_async(ports, timeout))


def detect_all(env: Mapping[str, str] | None = None,
               ports: Iterable[tuple[Preset, int]] | None = None,
               timeout: float = PROBE_TIMEOUT_S) -> list[Found]:
    """Local servers first (free, private), then hosted providers with a key."""
    return detect_servers(ports, timeout) + detect_env(env)
