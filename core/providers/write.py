"""Turn a provider choice into `[profiles.spark]` / `[profiles.base]` and write them into
the user's config.toml.

The file may hold the user's own settings and comments: only the tables being replaced
are cut out (from their header to the next header), everything else stays byte for byte.
The result is validated by the real loader before it replaces the file (atomically), so
`spark init` can never leave a config that stops `spark` from starting.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from core.config import ConfigError, load_settings, user_config_file
from core.providers.presets import Preset

FAST, DEEP = "spark", "base"
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def profiles_for(preset: Preset, *, fast_model: str | None = None,
                 deep_model: str | None = None, base_url: str | None = None,
                 context_window: int | None = None) -> dict[str, dict[str, Any]]:
    """The two profile tables for ``preset``; explicit arguments win over its defaults."""
    fast = fast_model or preset.fast_model
    deep = deep_model or preset.deep_model or fast
    if not fast:
        raise ConfigError(f"{preset.title}: which model? pass --model (the server lists "
                          "its models at /v1/models)")
    out: dict[str, dict[str, Any]] = {}
    for name, model, hw in ((FAST, fast, preset.fast_hw_model),
                            (DEEP, deep, preset.deep_hw_model)):
        table: dict[str, Any] = {"backend": "openai", "base_url": base_url or preset.base_url,
                                 "api_model": model,
                                 "context_window": context_window or preset.context_window}
        if preset.key_env:
            table["api_key_env"] = preset.key_env
        # the hwmodel pair only where it describes this model on this provider's hardware
        if preset.chip and hw and model == (preset.fast_model if name == FAST
                                             else preset.deep_model):
            table["chip"] = preset.chip
            table["model"] = hw
        if preset.local:
            table["read_timeout_s"] = 300.0  # a CPU server may think for minutes
        out[name] = table
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def render(profiles: dict[str, dict[str, Any]], provider: str) -> str:
    lines = [f"# written by `spark init` / the first-run screen (provider: {provider})"]
    for name, table in profiles.items():
        lines.append(f"[profiles.{name}]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in table.items())
        lines.append("")
    return "\n".join(lines)


def _without_tables(text: str, names: set[str]) -> str:
    """``text`` minus the `[profiles.NAME]` tables (and their sub-tables) being replaced."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        match = _HEADER.match(line)
        if match:
            head = match.group(1).replace('"', "").replace(" ", "")
            skipping = any(head == f"profiles.{n}" or head.startswith(f"profiles.{n}.")
                           for n in names)
        if not skipping:
            out.append(line)
    return "".join(out)


def write_profiles(profiles: dict[str, dict[str, Any]], *, provider: str,
                   path: Path | None = None, env: dict[str, str] | None = None) -> Path:
    """Write ``profiles`` into ``path`` (default: the user's config.toml); return the path."""
    path = Path(path) if path is not None else user_config_file()
    try:
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the existing config: {exc}") from None
    kept = _without_tables(old, set(profiles)).rstrip()
    new = (kept + "\n\n" if kept else "") + render(profiles, provider)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new)
        try:
            load_settings(config_file=tmp, env=dict(os.environ) if env is None else env)
        except ConfigError as exc:  # name the user's file, not our temporary one
            raise ConfigError(str(exc).replace(str(tmp), str(path))) from None
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return path
