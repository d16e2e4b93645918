"""The workstation's own settings: theme and key bindings (`[ui]`), and the `[guards]` table.

Read from the user's config (`<config dir>/config.toml`) then the project's `.spark.toml`
(the same files as the profiles). The last theme picked in the app is remembered in the
user's state folder, so switching from the palette sticks without rewriting a hand-made
config. Precedence for the theme: `--theme` > remembered > config > default.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from core.cli_support import CliError

APP_NAME = "sparkstation"
UI_KEYS = {"theme", "keys"}


class UiConfigError(CliError):
    """A bad `[ui]` table: names the file and the field."""


@dataclass
class UiConfig:
    theme: str | None = None
    keys: dict[str, str] = field(default_factory=dict)  # binding id -> key(s), e.g. {"accept": "y"}
    guards: dict = field(default_factory=dict)  # the raw [guards] table, validated by core.guards
    sources: list[Path] = field(default_factory=list)


def user_config_file() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP_NAME)) / "config.toml"


def state_file() -> Path:
    from platformdirs import user_state_dir

    return Path(user_state_dir(APP_NAME)) / "state.json"


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UiConfigError(f"{path}: not valid TOML: {exc}") from exc


def _read_ui_table(path: Path, data: dict) -> dict:
    table = data.get("ui", {})
    if not isinstance(table, dict):
        raise UiConfigError(f"{path}: [ui] must be a table")
    unknown = set(table) - UI_KEYS
    if unknown:
        raise UiConfigError(f"{path}: [ui] unknown key {min(unknown)!r} (known: theme, keys)")
    if "theme" in table and not isinstance(table["theme"], str):
        raise UiConfigError(f"{path}: [ui] theme must be a string")
    keys = table.get("keys", {})
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise UiConfigError(f"{path}: [ui.keys] maps binding ids to key strings, e.g. accept = \"y\"")
    return table


def load_ui_config(project_root: Path | None = None) -> UiConfig:
    """`[ui]` and `[guards]` as the one config loader (core/config.py) read and validated
    them, with every other table of the same files (a bad table is one ConfigError)."""
    from core.config import BUILTIN_FILE, DEMO_PROFILES_FILE, load_settings

    settings = load_settings(project_root=project_root)
    return UiConfig(theme=settings.theme, keys=dict(settings.keys), guards=dict(settings.guards),
                    sources=[p for p in settings.sources
                             if p not in (BUILTIN_FILE, DEMO_PROFILES_FILE)])


def remembered_theme() -> str | None:
    try:
        return json.loads(state_file().read_text(encoding="utf-8")).get("theme")
    except (OSError, ValueError, AttributeError):
        return None


def remember_theme(name: str) -> None:
    """Persist the theme choice (atomic replace; the state file is ours, not the user's tree)."""
    path = state_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = {}
        state["theme"] = name
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home must not break the app; the choice just is not remembered


def pick_theme(cli_theme: str | None, config: UiConfig, available: set[str], default: str) -> str:
    """The theme to start with; an unknown explicit name is a clear error."""
    if cli_theme is not None:
        if cli_theme not in available:
            raise UiConfigError(f"unknown theme {cli_theme!r}; available: {', '.join(sorted(available))}")
        return cli_theme
    for candidate in (remembered_theme(), config.theme):
        if candidate in available:
            return candidate
    return default
