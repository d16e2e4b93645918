"""Commands that open the workstation: `spark [PATH]` and `spark demo`."""

from __future__ import annotations

import argparse
import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.cli_support import CliError


def _add_app_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="spark", help="profile to start with (spark, base, ...)")
    parser.add_argument("--theme", default=None, help="theme name (charcoal, wafer, paper, or a Textual theme)")
    parser.add_argument("--core", default=None, metavar="URL", help="use a running core (ws://HOST:PORT)")
    parser.add_argument("--config", default=None, type=Path, metavar="FILE", help="config file for the embedded core")
    parser.add_argument("--record", default=None, type=Path, metavar="DIR", help="record live answers as cassettes")
    parser.add_argument("--add", action="append", default=[], metavar="PATH", help="put a file in the chat (repeatable)")


def app_parser() -> argparse.ArgumentParser:
    from tui.cli import SUBCOMMANDS

    parser = argparse.ArgumentParser(
        prog="spark",
        description="sparkstation: a terminal workstation for very fast coding models. "
        f"Subcommands: {', '.join(SUBCOMMANDS)} (spark SUBCOMMAND --help).",
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


async def _probe_core(url: str, profile: str) -> None:
    from core.client import CoreClient

    try:
        client = await CoreClient.connect(url, reconnect=False, timeout=3.0)
    except Exception as exc:
        raise CliError(f"the core at {url} does not answer: {exc}") from None
    names = [p["name"] for p in client.profiles]
    await client.close()
    if profile not in names:
        raise CliError(f"unknown profile {profile!r}; the core at {url} offers: {', '.join(names)}")


def prepare_launch(root: Path, args: argparse.Namespace) -> dict:
    """Validate everything the user typed before the screen takes over (clear errors, no tracebacks)."""
    from core.ui_config import load_ui_config, pick_theme
    from themes import DEFAULT_THEME

    ui = load_ui_config(root)
    from textual.app import App

    from themes import THEMES

    available = set(THEMES) | set(App().available_themes)
    theme = pick_theme(args.theme, ui, available, DEFAULT_THEME)
    if args.core is None:
        from core.profiles import load_config

        config = load_config(config_file=args.config, project_root=root)
        if not config.profiles:  # spark race/vary/batch in a folder with no model
            from tui.cli import NO_MODEL

            raise CliError(NO_MODEL.format(root=root))
        if args.profile not in config.profiles:
            raise CliError(f"unknown profile {args.profile!r}; configured: {', '.join(config.profiles)}")
    else:
        asyncio.run(_probe_core(args.core, args.profile))
    return {"theme": theme, "keymap": ui.keys, "guards": ui.guards}


@contextmanager
def reach_core(root: Path, args: argparse.Namespace, *, record: bool = True,
               serve_after: threading.Event | None = None) -> Iterator[str]:
    """The core's URL: the one given with --core, or an embedded core started for the block
    (with `serve_after`, serving once that is set: `EmbeddedCore.start`)."""
    if args.core is not None:
        yield args.core
        return
    from core.embedded import EmbeddedCore

    core = EmbeddedCore(project_root=root, config_file=args.config, record_dir=args.record if record else None)
    try:
        url = core.start(serve_after=serve_after)
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"cannot start the inference core: {exc}") from exc
    try:
        yield url
    finally:
        core.stop()


def open_workstation(root: Path, args: argparse.Namespace, *, race_prompt: str | None = None,
                     on_ready=None) -> int:
    """Start (or reach) the core, then run the app until the user quits."""
    from core.indexing.service import first_frame_event, preload

    # the cached repo map's read and the tree's check (git) begin now, beside the imports
    # and the core's start (~0.4 s), not when the app is built; the app finds them begun
    preload(root, map_after_frame=True)
    from tui.app import SparkApp

    launch = prepare_launch(root, args)
    # the embedded core's engine and server start once the app's first frame is shown
    # (their imports and warm-up: ~50 ms under the GIL the app's start needs); the app's
    # connection waits in the core's socket meanwhile, its status bar saying "connecting"
    with reach_core(root, args, serve_after=first_frame_event(root)) as url:
        app = SparkApp(root, url, profile=args.profile, theme=launch["theme"], keymap=launch["keymap"],
                       guards=launch["guards"], add=args.add, race_prompt=race_prompt, on_ready=on_ready)
        app.run()
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
