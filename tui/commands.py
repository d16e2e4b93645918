"""Commands that open the workstation: `spark [PATH]` and `spark demo`."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cli_support import CliError


def _add_app_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="spark", help="profile to start with (spark, base, ...)")
    parser.add_argument("--theme", default=None, help="theme name")
    parser.add_argument("--core", default=None, metavar="URL", help="use a running core (ws://HOST:PORT)")
    parser.add_argument("--record", default=None, type=Path, metavar="DIR", help="record live answers as cassettes")


def app_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spark",
        description="sparkstation: a terminal workstation for very fast coding models. "
        "Subcommands: demo, core, hw, dups, slop, apply, undo, context.",
    )
    parser.add_argument("path", nargs="?", default=".", type=Path, help="project folder (default: .)")
    _add_app_options(parser)
    return parser


def run_app_from_argv(argv: list[str]) -> int:
    args = app_parser().parse_args(argv)
    root = args.path.expanduser()
    if not root.exists():
        raise CliError(f"{root}: no such folder")
    if not root.is_dir():
        raise CliError(f"{root}: not a folder")
    return open_workstation(root.resolve(), args)


def open_workstation(root: Path, args: argparse.Namespace) -> int:
    """Start (or reach) the core, then run the app until the user quits."""
    from tui.app import SparkApp

    core = None
    url = args.core
    if url is None:
        from core.embedded import EmbeddedCore

        core = EmbeddedCore(project_root=root, record_dir=args.record)
        try:
            url = core.start()
        except Exception as exc:
            raise CliError(f"cannot start the inference core: {exc}") from exc
    try:
        SparkApp(root, url, profile=args.profile, theme=args.theme).run()
    finally:
        if core is not None:
            core.stop()
    return 0


def _demo(args: argparse.Namespace) -> int:
    from core.demo import DemoError, write_demo

    try:
        root = write_demo(args.dir)
    except DemoError as exc:
        raise CliError(str(exc)) from exc
    return open_workstation(root, args)


def register(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="open the workstation on a fresh offline demo project")
    demo.add_argument("--dir", type=Path, default=None, help="where to write the demo (default: a new temp folder)")
    _add_app_options(demo)
    demo.set_defaults(func=_demo)
