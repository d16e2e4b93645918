"""Which command runs the project's tests, and with what limits.

Order: the project's `[verify]` table in `.spark.toml` wins (the user knows best); then
pytest (pyproject.toml with `[tool.pytest...]`, setup.cfg `[tool:pytest]`, tox.ini or
pytest.ini, or a tests/ folder of test_*.py), `npm test` (package.json with a test script),
`go test ./...` (go.mod), `cargo test` (Cargo.toml).  Only pytest can run a chosen subset
of tests; the others run whole, under the same time limit.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from core.verify import VerifyError

PROJECT_FILE = ".spark.toml"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_MAX_TESTS = 200
DEFAULT_MAX_ROUNDS = 3
KNOWN_FIELDS = ("enabled", "command", "timeout_s", "memory_mb", "max_tests", "max_rounds",
                "fix_profile")


class Runner(Enum):
    PYTEST = "pytest"
    NPM = "npm"
    GO = "go"
    CARGO = "cargo"
    CUSTOM = "custom"


@dataclass(frozen=True)
class VerifySettings:
    """The `[verify]` table with defaults filled in."""

    enabled: bool = True
    command: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: int = DEFAULT_MEMORY_MB
    max_tests: int = DEFAULT_MAX_TESTS
    max_rounds: int = DEFAULT_MAX_ROUNDS
    fix_profile: str = ""


@dataclass(frozen=True)
class TestCommand:
    """How to run the tests: argv in the (shadow) project root, and whether a list of test
    ids may be appended to run only those."""

    __test__ = False  # not a pytest class, despite the name

    runner: Runner
    argv: tuple[str, ...]
    why: str  # what made us choose it, shown in the panel
    selectable: bool = False
    env: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return " ".join(shlex.quote(a) for a in self.argv)

    def short(self, tests: tuple[str, ...] = ()) -> str:
        """For people: "pytest tests/test_a.py", not the interpreter and plugin flags."""
        argv = list(self.argv)
        if self.runner is Runner.PYTEST and "pytest" in argv[:3]:
            rest = argv[argv.index("pytest") + 1:]
            kept = []
            skip = False
            for a in rest:
                if skip:
                    skip = False
                elif a == "-p":
                    skip = True
                else:
                    kept.append(a)
            argv = ["pytest", *kept]
        argv += list(tests)
        return " ".join(shlex.quote(a) for a in argv)


def read_settings(root: Path, table: dict[str, Any] | None = None) -> VerifySettings:
    """The project's `[verify]` settings (or `table` when the caller has read the config
    already); VerifyError naming the field when one is wrong."""
    if table is None:
        path = Path(root) / PROJECT_FILE
        table = {}
        if path.is_file():
            try:
                table = tomllib.loads(path.read_text("utf-8")).get("verify", {})
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise VerifyError(f"{path}: cannot read: {exc}") from None
        if not isinstance(table, dict):
            raise VerifyError(f"{path}: [verify] must be a table")
    unknown = sorted(set(table) - set(KNOWN_FIELDS))
    if unknown:
        raise VerifyError(f"[verify]: unknown field {unknown[0]!r} "
                          f"(known: {', '.join(KNOWN_FIELDS)})")
    cmd = table.get("command", ())
    if isinstance(cmd, str):
        try:
            cmd = shlex.split(cmd)
        except ValueError as exc:
            raise VerifyError(f"[verify] command: {exc}") from None
    if not isinstance(cmd, (list, tuple)) or not all(isinstance(a, str) for a in cmd):
        raise VerifyError("[verify] command must be a string or a list of strings")

    def num(name: str, default: float, kind: type) -> Any:
        value = table.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                or (kind is int and not isinstance(value, int)):
            raise VerifyError(f"[verify] {name} must be a non-negative {kind.__name__}")
        return kind(value)

    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise VerifyError("[verify] enabled must be true or false")
    return VerifySettings(enabled=enabled, command=tuple(cmd),
                          timeout_s=num("timeout_s", DEFAULT_TIMEOUT_S, float) or
                          DEFAULT_TIMEOUT_S,
                          memory_mb=num("memory_mb", DEFAULT_MEMORY_MB, int),
                          max_tests=num("max_tests", DEFAULT_MAX_TESTS, int) or
                          DEFAULT_MAX_TESTS,
                          max_rounds=num("max_rounds", DEFAULT_MAX_ROUNDS, int),
                          fix_profile=str(table.get("fix_profile", "")))


def detect(root: Path, settings: VerifySettings | None = None) -> TestCommand | None:
    """The test command for the project at root, or None when it has no tests we know."""
    root = Path(root)
    settings = settings or read_settings(root)
    if settings.command:
        argv = settings.command
        if Path(argv[0]).name in ("pytest", "py.test") or argv[1:3] == ("-m", "pytest"):
            return TestCommand(Runner.PYTEST, argv, f"[verify] command in {PROJECT_FILE}",
                               selectable=True)
        return TestCommand(Runner.CUSTOM, argv, f"[verify] command in {PROJECT_FILE}")
    why = _pytest_marker(root)
    if why:
        python = python_for(root)
        if python != sys.executable:  # the project's own environment: all its plugins
            return TestCommand(Runner.PYTEST, (python, "-m", "pytest"), why, selectable=True)
        # our interpreter: its plugins are sparkstation's (seconds of start-up), so load
        # only those the project names
        plugins = project_plugins(root)
        pytest_argv: tuple[str, ...] = (python, "-m", "pytest")
        for module in plugins:
            pytest_argv += ("-p", module)
        return TestCommand(Runner.PYTEST, pytest_argv, why, selectable=True,
                           env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    pkg = root / "package.json"
    if pkg.is_file():
        try:
            scripts = json.loads(pkg.read_text("utf-8")).get("scripts") or {}
        except (OSError, ValueError, AttributeError):
            scripts = {}
        test = scripts.get("test") if isinstance(scripts, dict) else None
        if isinstance(test, str) and "no test specified" not in test:
            return TestCommand(Runner.NPM, ("npm", "test", "--silent"),
                               "package.json has a test script")
    if (root / "go.mod").is_file():
        return TestCommand(Runner.GO, ("go", "test", "./..."), "go.mod")
    if (root / "Cargo.toml").is_file():
        return TestCommand(Runner.CARGO, ("cargo", "test", "--quiet"), "Cargo.toml")
    return None


def _pytest_marker(root: Path) -> str:
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            tool = tomllib.loads(pyproject.read_text("utf-8")).get("tool", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            tool = {}
        if isinstance(tool, dict) and "pytest" in tool:
            return "pyproject.toml [tool.pytest]"
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        parser = configparser.ConfigParser()
        try:
            parser.read(setup_cfg, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            pass
        if parser.has_section("tool:pytest"):
            return "setup.cfg [tool:pytest]"
    if (root / "pytest.ini").is_file():
        return "pytest.ini"
    tox = root / "tox.ini"
    if tox.is_file() and "pytest" in tox.read_text("utf-8", "replace"):
        return "tox.ini runs pytest"
    if (root / "conftest.py").is_file():
        return "conftest.py"
    for folder in ("tests", "test"):
        if (root / folder).is_dir() and any((root / folder).rglob("test_*.py")):
            return f"{folder}/ holds test_*.py files"
    return ""


_PLUGIN_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini",
                 "conftest.py", "tests/conftest.py", "requirements.txt",
                 "requirements-dev.txt", "requirements-test.txt", "dev-requirements.txt")


def project_plugins(root: Path) -> tuple[str, ...]:
    """The installed pytest plugins (entry-point modules) the project's config, requirement
    files or conftest name, by distribution name ("pytest-asyncio", "hypothesis")."""
    from importlib.metadata import entry_points

    text = ""
    for name in _PLUGIN_FILES:
        try:
            text += (root / name).read_text("utf-8", "replace").lower() + "\n"
        except OSError:
            continue
    text = text.replace("_", "-")
    found: list[str] = []
    for ep in entry_points(group="pytest11"):
        dist = (ep.dist.name if ep.dist is not None else "").lower().replace("_", "-")
        if dist and re.search(rf"(?<![\w-]){re.escape(dist)}(?![\w-])", text) \
                and ep.value not in found:
            found.append(ep.value.split(":")[0])
    return tuple(found)


def python_for(root: Path) -> str:
    """The project's own interpreter when it has a virtualenv with pytest, else ours."""
    for venv in (".venv", "venv", "env"):
        bindir = root / venv / ("Scripts" if os.name == "nt" else "bin")
        exe = bindir / ("python.exe" if os.name == "nt" else "python")
        if exe.is_file() and any((root / venv).glob("lib*/python*/site-packages/pytest")):
            return str(exe)
    return sys.executable


def available(cmd: TestCommand) -> bool:
    """Whether the command's program exists here (npm, go or cargo may be missing)."""
    first = cmd.argv[0]
    return Path(first).is_file() or shutil.which(first) is not None
