"""The `spark` command: dispatches subcommands to the package that owns them.

Each area registers its own subcommands (`register(subparsers)`), so this file stays a
table and the heavy imports (numpy, textual) happen only for the command that needs them.
`spark [PATH] [options]` with no subcommand opens the workstation on PATH.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from core.cli_support import CliError

# subcommand -> module that defines `register(subparsers)` for it
SUBCOMMANDS: dict[str, str] = {
    "init": "core.providers.cli",
    "demo": "tui.commands",
    "core": "core.cli",
    "hw": "hwmodel.cli",
    "dups": "core.detectors.cli",
    "slop": "core.detectors.cli",
    "apply": "core.edits.cli",
    "undo": "core.workspace.cli",
    "context": "core.context.cli",
    "race": "tui.race_command",
    "report": "core.report.cli",
    "vary": "tui.discipline_commands",
    "batch": "tui.discipline_commands",
}


def _subcommand_parser(name: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark", description="sparkstation")
    sub = parser.add_subparsers(dest="command", required=True)
    module = importlib.import_module(SUBCOMMANDS[name])
    module.register(sub)
    return parser


def _subcommand_help() -> str:
    """One line per subcommand, from the modules that own them (help is never stale)."""
    parser = argparse.ArgumentParser(prog="spark")
    sub = parser.add_subparsers(dest="command")
    for module in dict.fromkeys(SUBCOMMANDS.values()):
        importlib.import_module(module).register(sub)
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    width = max(map(len, SUBCOMMANDS))
    lines = [f"  {name:<{width}}  {helps.get(name, '')}".rstrip() for name in SUBCOMMANDS]
    return ("subcommands (spark COMMAND --help for each):\n" + "\n".join(lines) + "\n")


def _print_help() -> int:
    from tui import commands

    sys.stdout.write(commands.app_parser().format_help())
    sys.stdout.write("\n" + _subcommand_help())
    sys.stdout.flush()
    return 0


def _run(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        parser = _subcommand_parser(argv[0])
        args = parser.parse_args(argv)
        if not hasattr(args, "func"):
            parser.error(f"'{argv[0]}' needs a subcommand")
        return int(args.func(args) or 0)
    if argv[:1] in (["-h"], ["--help"]):
        return _print_help()
    from tui import commands

    prepared = _startup(argv)
    if isinstance(prepared, int):
        return prepared
    return int(commands.run_app_from_argv(prepared) or 0)


NO_MODEL = ("no model is configured for {root}: run `spark init` (finds API keys in the "
            "environment and servers on 127.0.0.1), add a [profiles.NAME] table to "
            "{root}/.spark.toml (docs/providers.md), or try `spark demo`")


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def _startup(argv: list[str]) -> list[str] | int:
    """Before the workstation: validate every config table (exit 2 on any problem), and
    open the first-run screen where no model is configured. Returns the argv to open the
    app with, or an exit code when the app must not open."""
    from core.config import load_settings
    from tui import commands

    args = commands.app_parser().parse_args(argv)
    root = args.path.expanduser()
    if not root.is_dir():
        return argv  # the app's own checks say what is wrong with the path
    root = root.resolve()
    settings = load_settings(config_file=args.config, project_root=root)
    if args.core is not None:
        return argv  # the profiles are the remote core's
    if not settings.profiles:
        if not _interactive():
            raise CliError(NO_MODEL.format(root=root))
        from tui.screens.first_run import run_first_run

        result = run_first_run(root)
        if result.action == "demo":
            import tempfile

            folder = tempfile.mkdtemp(prefix="spark-demo-")
            print(f"spark: demo project folder: {folder}", file=sys.stderr)
            code = _run(["demo", "--dir", folder])
            print(f"spark: the demo project is in {folder}", file=sys.stderr)
            return code
        if result.action != "configured":
            return 0
        print(f"spark: wrote profiles to {result.path}", file=sys.stderr)
        settings = load_settings(config_file=args.config, project_root=root)
    explicit = any(a == "--profile" or a.startswith("--profile=") for a in argv)
    if not explicit and args.profile not in settings.profiles and settings.profiles:
        # the user's own profiles need not be called 'spark': start on the first one
        return [*argv, "--profile", next(iter(settings.profiles))]
    return argv


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run `spark`; user errors are one line on stderr and exit 2, never a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _run(argv)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler below
    except BrokenPipeError:
        # `spark ... | head`: the reader has what it wanted; that is not an error
        _quiet_stdout()
        return 0
    except CliError as exc:
        print(f"spark: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        # an unreachable or refusing core (`spark --core URL`) is the user's to fix; the
        # client module is imported only by commands that talk to a core
        client = sys.modules.get("core.client")
        if client is not None and isinstance(exc, client.CoreConnectionError):
            print(f"spark: error: {exc.message}", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
