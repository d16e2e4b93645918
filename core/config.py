"""One validated config: every table of every config file, checked before the app starts.

The same files feed several areas: `[core]` and `[profiles.*]` (the inference core),
`[ui]` (theme, keys), `[guards]` (sensitive paths, dwell floor) and `[verify]` (the test
runner). Each area used to read its own table when it first needed it, so a typo in
`[guards]` surfaced as a traceback deep inside the running app. Here every table is read
once, in layer order (built-in, the user's config, the demo's profiles when in the
demo, the project's `.spark.toml`), and checked against its schema; the first problem becomes one
:class:`ConfigError` naming the file, the table and the field (exit 2, nothing started).

The profile rules themselves live in :mod:`core.profiles` (which this module calls), the
guard rules in :mod:`core.guards` (which this module runs once on the merged table), so
each rule has one home and the loader adds the file name to their messages.
"""

from __future__ import annotations

import difflib
import math
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.cli_support import CliError

APP_NAME = "sparkstation"
BUILTIN_FILE = Path(__file__).with_name("default_profiles.toml")
DEMO_PROFILES_FILE = Path(__file__).with_name("demo_profiles.toml")
PROJECT_FILE = ".spark.toml"
DEMO_MARKER = Path(".spark") / "demo"
CONFIG_ENV = "SPARK_CONFIG_DIR"  # tests and scripts point the user's config folder here
STATE_ENV = "SPARK_STATE_DIR"  # and the state folder (online calibration, theme) here
DEMO_ENV = "SPARK_DEMO_PROFILES"  # "1": use the demo's recorded profiles anywhere (tests)


class ConfigError(CliError):
    """A bad config file; the message names the file, the table and the field."""


def user_config_dir() -> Path:
    """Where the user's `config.toml` lives (platformdirs; `$SPARK_CONFIG_DIR` overrides)."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    from platformdirs import user_config_dir as _dir

    return Path(_dir(APP_NAME))


def user_config_file() -> Path:
    return user_config_dir() / "config.toml"


def user_state_dir() -> Path:
    """Where learned state lives (platformdirs; `$SPARK_STATE_DIR` overrides)."""
    override = os.environ.get(STATE_ENV)
    if override:
        return Path(override).expanduser()
    from platformdirs import user_state_dir as _dir

    return Path(_dir(APP_NAME))


def is_demo_project(project_root: Path | None) -> bool:
    """The demo's recorded profiles apply: `spark demo` wrote this folder, or tests ask."""
    if os.environ.get(DEMO_ENV) == "1":
        return True
    return project_root is not None and (Path(project_root) / DEMO_MARKER).is_file()


def read_toml(path: Path) -> dict[str, Any]:
    """One config file as a dict; every way it can be unreadable is a ConfigError."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start})") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: cannot read: it is a folder, not a TOML file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


# ---------------------------------------------------------------------------- schemas
Check = Callable[[Any], str | None]  # returns what is wrong, or None


def _type_name(kinds: tuple[type, ...]) -> str:
    names = {"str": "a string", "int": "an integer", "float": "a number", "list": "a list",
             "bool": "true or false", "dict": "a table"}
    return " or ".join(dict.fromkeys(names[k.__name__] for k in kinds))


def type_problem(value: Any, kinds: tuple[type, ...]) -> str | None:
    """Why ``value`` is not one of ``kinds`` (TOML's bool is not a number here), or None."""
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if ok and isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if not ok:
        return f"must be {_type_name(kinds)}, got {type(value).__name__} {value!r}"
    return None


def _str_list(value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"must be a list of strings, got {value!r}"
    return None


def _not_negative(value: Any) -> str | None:
    return None if value >= 0 else f"must not be negative, got {value!r}"


def _command(value: Any) -> str | None:
    if isinstance(value, str):
        return None if value.strip() else "must not be empty"
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return None
    return f"must be a command string or a list of strings, got {value!r}"


@dataclass(frozen=True)
class FieldRule:
    kinds: tuple[type, ...]
    check: Check | None = None


# table -> field -> rule. `[ui.keys]` is checked by _check_keys (any binding id).
SCHEMAS: dict[str, dict[str, FieldRule]] = {
    "ui": {
        "theme": FieldRule((str,)),
        "keys": FieldRule((dict,)),
        "add_mentioned": FieldRule((bool,)),
    },
    "guards": {
        "sensitive_mode": FieldRule((str,)),
        "sensitive_globs": FieldRule((list,), _str_list),
        "sensitive_globs_extra": FieldRule((list,), _str_list),
        "fast_profiles": FieldRule((list,), _str_list),
        "dwell_lines_per_second": FieldRule((int, float), _not_negative),
        "dwell_min_s": FieldRule((int, float), _not_negative),
    },
    "verify": {
        "enabled": FieldRule((bool,)),
        "command": FieldRule((str, list), _command),
        "timeout_s": FieldRule((int, float), _not_negative),  # 0: the default
        "memory_mb": FieldRule((int,), _not_negative),
        "max_tests": FieldRule((int,), _not_negative),
        "max_rounds": FieldRule((int,), _not_negative),
        "fix_profile": FieldRule((str,)),
    },
}
KNOWN_TABLES = ("core", "profiles", *SCHEMAS)


def unknown_field(path: Path, where: str, key: str, known: Any) -> ConfigError:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(sorted(known))})"
    return ConfigError(f"{path}: {where}: unknown field '{key}'{hint}")


def _check_table(path: Path, name: str, table: Any) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    schema = SCHEMAS[name]
    for key, value in table.items():
        rule = schema.get(key)
        if rule is None:
            raise unknown_field(path, f"[{name}]", key, schema)
        problem = type_problem(value, rule.kinds) or (rule.check(value) if rule.check else None)
        if problem:
            raise ConfigError(f"{path}: [{name}]: field '{key}' {problem}")
    if name == "ui" and "keys" in table:
        bad = [k for k, v in table["keys"].items() if not isinstance(v, str) or not v.strip()]
        if bad:
            raise ConfigError(f"{path}: [ui.keys]: '{bad[0]}' must be a key string, "
                              'e.g. accept = "y"')
    return table


def check_tables(path: Path, doc: dict[str, Any]) -> None:
    """Reject malformed known tables and unknown ones that look like typos of them.

    Other tables are left alone: the project file may hold settings of other tools.
    """
    for top in doc:
        if top not in KNOWN_TABLES:
            close = difflib.get_close_matches(top, KNOWN_TABLES, n=1, cutoff=0.75)
            if close:
                raise ConfigError(f"{path}: unknown table [{top}]; did you mean [{close[0]}]?")
    for name in SCHEMAS:
        if name in doc:
            _check_table(path, name, doc[name])


# ---------------------------------------------------------------------------- the result
@dataclass
class Settings:
    """Every table, merged over the layers; `core` holds the profiles."""

    core: Any  # core.profiles.CoreConfig (imported lazily: profiles imports this module)
    ui: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    guards: dict[str, Any] = field(default_factory=dict)
    verify: dict[str, Any] = field(default_factory=dict)
    sources: tuple[Path, ...] = ()

    @property
    def profiles(self) -> dict[str, Any]:
        return dict(self.core.profiles)

    @property
    def theme(self) -> str | None:
        value = self.ui.get("theme")
        return value if isinstance(value, str) else None

    @property
    def add_mentioned(self) -> bool:
        return bool(self.ui.get("add_mentioned", True))


def config_layers(*, config_file: Path | None = None,
                  project_root: Path | None = None) -> list[Path]:
    """The files read, lowest precedence first. An explicit ``config_file`` must exist."""
    layers: list[Path] = [BUILTIN_FILE]
    demo = is_demo_project(project_root)
    if config_file is not None:
        config_file = Path(config_file).expanduser()
        if not config_file.exists():
            raise ConfigError(f"{config_file}: config file not found")
        if demo:  # an explicit --config is asked for: it may point the demo at a model
            layers.append(DEMO_PROFILES_FILE)
        layers.append(config_file)
    else:
        if user_config_file().is_file():
            layers.append(user_config_file())
        if demo:
            # after the user's config: in the demo, 'spark' and 'base' are the recordings
            # even for a user whose own 'spark' is a real model (their other profiles stay)
            layers.append(DEMO_PROFILES_FILE)
    if project_root is not None and (Path(project_root) / PROJECT_FILE).is_file():
        layers.append(Path(project_root) / PROJECT_FILE)
    return layers


def _check_guards(path_of: dict[str, Path], guards: dict[str, Any]) -> None:
    """Run the guards' own constructors once so their rules (modes, glob syntax) apply now."""
    from core.guards.dwell import DwellGuard
    from core.guards.sensitive import GuardConfigError, SensitivePolicy

    try:
        SensitivePolicy.from_config({"guards": guards})
        DwellGuard.from_config({"guards": guards})
    except (GuardConfigError, ValueError) as exc:
        message = str(exc)
        key = next((k for k in guards if k in message), None)
        where = path_of.get(key, next(iter(path_of.values()), Path(PROJECT_FILE))) if key \
            else next(iter(path_of.values()), Path(PROJECT_FILE))
        raise ConfigError(f"{where}: [guards]: {message}") from None


def _check_verify(path_of: dict[str, Path], table: dict[str, Any]) -> None:
    """The verifier's own reading of `[verify]` (e.g. a command shlex cannot split)."""
    from core.verify import VerifyError
    from core.verify.detect import read_settings

    try:
        read_settings(Path("."), table)
    except VerifyError as exc:
        message = str(exc)
        key = next((k for k in table if k in message), next(iter(table)))
        raise ConfigError(f"{path_of[key]}: {message}") from None


def load_settings(*, config_file: Path | None = None, project_root: Path | None = None,
                  env: dict[str, str] | None = None) -> Settings:
    """Read and validate every layer; raise ConfigError on the first problem."""
    from core.profiles import merge_profile_layers

    layers = config_layers(config_file=config_file, project_root=project_root)
    docs = [(path, read_toml(path)) for path in layers]
    settings = Settings(core=None, sources=tuple(layers))
    guard_files: dict[str, Path] = {}
    verify_files: dict[str, Path] = {}
    for path, doc in docs:
        check_tables(path, doc)
        ui = doc.get("ui", {})
        settings.keys.update(ui.get("keys", {}))
        settings.ui.update({k: v for k, v in ui.items() if k != "keys"})
        for key, value in doc.get("guards", {}).items():
            settings.guards[key] = value
            guard_files[key] = path
        for key, value in doc.get("verify", {}).items():
            settings.verify[key] = value
            verify_files[key] = path
    if settings.guards:
        _check_guards(guard_files, settings.guards)
    if settings.verify:
        _check_verify(verify_files, settings.verify)
    settings.core = merge_profile_layers(docs, env=dict(os.environ) if env is None else env)
    return settings
