"""Profiles from TOML: built-in, then the user's config, then the project's `.spark.toml`.

A profile is what the user picks (`spark`, `base`, ...): a backend (where tokens come
from), a chip/model pair hwmodel can predict (how fast they come) and a context window.
Later layers override earlier ones field by field. Every problem is reported as one
:class:`ConfigError` naming the file, the profile and the field, because a config typo
should cost the user seconds, not a debugging session.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from core import config as _config
from core.config import BUILTIN_FILE, PROJECT_FILE, ConfigError

__all__ = ["BUILTIN_FILE", "PROJECT_FILE", "ConfigError", "CoreConfig", "Profile",
           "load_config", "merge_profile_layers", "user_config_file"]
BACKENDS = ("replay", "openai")
PACING = ("model", "pinned")


@dataclass(frozen=True)
class Profile:
    name: str
    backend: str
    chip: str | None = None
    model: str | None = None
    precision: str | None = None
    context_window: int = 128000
    pacing: str = "model"
    tokens_per_s: float | None = None
    ttft_ms: float | None = None
    cassettes: tuple[Path, ...] = ()
    # openai backend
    base_url: str | None = None
    api_model: str | None = None
    api_key_env: str | None = None
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 60.0
    max_retries: int = 2
    max_retry_wait_s: float = 10.0

    def describe(self, predicted: dict[str, float | None]) -> dict[str, Any]:
        """The `welcome.profiles` entry."""
        return {"name": self.name, "backend": self.backend, "chip": self.chip,
                "model": self.api_model if self.backend == "openai" and self.api_model
                else self.model,
                "context_window": self.context_window, "predicted": predicted}


@dataclass(frozen=True)
class CoreConfig:
    profiles: dict[str, Profile]
    frame_ms: float = 16.0
    max_frame_tokens: int = 4096  # caps one delta's size (and the work done per wake)
    max_streams_per_connection: int = 64
    sources: tuple[Path, ...] = field(default=())


# field name -> accepted python types (TOML decodes ints and floats separately)
_PROFILE_TYPES: dict[str, tuple[type, ...]] = {
    "backend": (str,), "chip": (str,), "model": (str,), "precision": (str,),
    "context_window": (int,), "pacing": (str,), "tokens_per_s": (int, float),
    "ttft_ms": (int, float), "cassettes": (list,), "base_url": (str,), "api_model": (str,),
    "api_key_env": (str,), "connect_timeout_s": (int, float), "read_timeout_s": (int, float),
    "max_retries": (int,), "max_retry_wait_s": (int, float),
}
_CORE_TYPES: dict[str, tuple[type, ...]] = {
    "frame_ms": (int, float), "max_frame_tokens": (int,), "max_streams_per_connection": (int,),
}
assert set(_PROFILE_TYPES) == {f.name for f in fields(Profile)} - {"name"}


def user_config_file() -> Path:
    return _config.user_config_file()


def _check_type(path: Path, where: str, key: str, value: Any, kinds: tuple[type, ...]) -> None:
    problem = _config.type_problem(value, kinds)
    if problem:
        raise ConfigError(f"{path}: {where}: field '{key}' {problem}")


def _merge_layer(path: Path, doc: dict[str, Any], raw: dict[str, dict[str, Any]],
                 core: dict[str, Any]) -> None:
    section = doc.get("core", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [core] must be a table")
    for key, value in section.items():
        if key not in _CORE_TYPES:
            raise _config.unknown_field(path, "[core]", key, _CORE_TYPES)
        _check_type(path, "[core]", key, value, _CORE_TYPES[key])
        core[key] = value
        core[f"__file__{key}"] = path
    profiles = doc.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"{path}: [profiles] must be a table of [profiles.NAME] tables")
    for name, body in profiles.items():
        where = f"profile '{name}'"
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: {where}: must be a table")
        entry = raw.setdefault(name, {"__file__": path})
        if "backend" in body and entry.get("backend", body["backend"]) != body["backend"]:
            # another backend is another thing: a replay profile's cassettes and chip must
            # not survive into the endpoint that replaces it (nor the reverse)
            entry.clear()
            entry["__file__"] = path
        for key, value in body.items():
            if key not in _PROFILE_TYPES:
                raise _config.unknown_field(path, where, key, _PROFILE_TYPES)
            _check_type(path, where, key, value, _PROFILE_TYPES[key])
            if key == "cassettes":
                if not all(isinstance(v, str) for v in value):
                    raise ConfigError(f"{path}: {where}: field 'cassettes' must be a list "
                                      "of folder paths")
                value = tuple((path.parent / Path(v).expanduser()).resolve() for v in value)
            entry[key] = value
            entry[f"__file__{key}"] = path


def _finish(name: str, entry: dict[str, Any], env: dict[str, str]) -> Profile:
    def where(key: str) -> str:
        return f"{entry.get('__file__' + key, entry['__file__'])}: profile '{name}': field '{key}'"

    if "backend" not in entry:
        raise ConfigError(f"{entry['__file__']}: profile '{name}': missing field 'backend' "
                          f"(one of {', '.join(BACKENDS)})")
    values = {k: v for k, v in entry.items() if not k.startswith("__file__")}
    if values["backend"] not in BACKENDS:
        raise ConfigError(f"{where('backend')}: must be one of {', '.join(BACKENDS)}, "
                          f"got {values['backend']!r}")
    if values.get("pacing", "model") not in PACING:
        raise ConfigError(f"{where('pacing')}: must be one of {', '.join(PACING)}")
    for key in ("context_window", "tokens_per_s", "connect_timeout_s", "read_timeout_s",
                "max_retry_wait_s"):
        if key in values and values[key] <= 0:
            raise ConfigError(f"{where(key)}: must be positive, got {values[key]!r}")
    for key in ("ttft_ms", "max_retries"):
        if key in values and values[key] < 0:
            raise ConfigError(f"{where(key)}: must not be negative, got {values[key]!r}")
    for key, top in (("max_retries", 10), ("max_retry_wait_s", 300)):
        if key in values and values[key] > top:  # a stream must fail in bounded time
            raise ConfigError(f"{where(key)}: must be at most {top}, got {values[key]!r}")
    if values["backend"] == "openai":
        if not values.get("base_url"):
            raise ConfigError(f"{where('base_url')}: required for backend 'openai' "
                              "(e.g. https://api.cerebras.ai/v1)")
        if not values["base_url"].startswith(("http://", "https://")):
            raise ConfigError(f"{where('base_url')}: must start with http:// or https://, "
                              f"got {values['base_url']!r}")
        if not (values.get("api_model") or values.get("model")):
            raise ConfigError(f"{where('api_model')}: required for backend 'openai' "
                              "(the model id the endpoint serves)")
        key_env = values.get("api_key_env")
        if key_env and not env.get(key_env):
            raise ConfigError(f"{where('api_key_env')}: environment variable {key_env} "
                              "is not set (API keys come from the environment only)")
    else:
        has_rates = values.get("tokens_per_s") is not None
        has_model = values.get("chip") and values.get("model")
        if not has_rates and not has_model:
            raise ConfigError(f"{where('tokens_per_s')}: a replay profile needs chip and model "
                              "(paced by hwmodel) or tokens_per_s (pinned)")
        if values.get("pacing") == "pinned" and not has_rates:
            raise ConfigError(f"{where('tokens_per_s')}: required when pacing = 'pinned'")
    if "precision" in values and values["precision"] is None:
        del values["precision"]
    return Profile(name=name, **values)


def merge_profile_layers(docs: list[tuple[Path, dict[str, Any]]],
                         env: dict[str, str]) -> CoreConfig:
    """`[core]` and `[profiles.*]` of every layer (lowest first), merged field by field."""
    raw: dict[str, dict[str, Any]] = {}
    core: dict[str, Any] = {}
    for path, doc in docs:
        if path == _config.DEMO_PROFILES_FILE:
            # in the demo, its recorded profiles replace the user's of the same name whole:
            # a real endpoint's fields mixed into a replay profile would describe neither
            for name in doc.get("profiles", {}):
                raw.pop(name, None)
        _merge_layer(path, doc, raw, core)
    profiles = {name: _finish(name, entry, env) for name, entry in raw.items()}
    for key in ("frame_ms", "max_frame_tokens", "max_streams_per_connection"):
        if key in core and core[key] <= 0:
            raise ConfigError(f"{core['__file__' + key]}: [core]: field '{key}' must be "
                              f"positive, got {core[key]!r}")
    values = {k: v for k, v in core.items() if not k.startswith("__file__")}
    return CoreConfig(profiles=profiles, sources=tuple(p for p, _ in docs), **values)


def load_config(*, config_file: Path | None = None, project_root: Path | None = None,
                env: dict[str, str] | None = None) -> CoreConfig:
    """Load built-in settings, the demo's profiles in the demo, then ``config_file``
    (default: the user's), then the project's `.spark.toml`.

    Every table of every file is validated (see :mod:`core.config`), not only the
    profiles, so a bad `[guards]` fails here, before anything starts. An explicit
    ``config_file`` must exist; the default user file and the project file are optional.
    """
    settings = _config.load_settings(config_file=config_file, project_root=project_root,
                                     env=env)
    core: CoreConfig = settings.core
    return core
