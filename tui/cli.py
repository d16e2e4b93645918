"""The `spark` command: dispatches subcommands to the package that owns them.

Each area registers its own subcommands (`register(subparsers)`), so this file stays a
table and the heavy imports (numpy, textual) happen only for the command that needs them.
`spark [PATH] [options]` with no subcommand opens the workstation on PATH.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from core.cli_support import CliError

# subcommand -> module that defines `register(subparsers)` for it
SUBCOMMANDS: dict[str, str] = {
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            parser = _subcommand_parser(argv[0])
            args = parser.parse_args(argv)
            if not hasattr(args, "func"):
                parser.error(f"'{argv[0]}' needs a subcommand")
            code = args.func(args)
        else:
            from tui import commands

            code = commands.run_app_from_argv(argv)
    except CliError as exc:
        print(f"spark: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
