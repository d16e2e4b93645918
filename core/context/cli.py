"""`spark context`: what the next request would send, section by section with token counts.

The context meter's numbers are only trustworthy if the user can see where they come
from; this prints the same assembly the app sends, without a model or a core.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cli_support import CliError, print_json

DEFAULT_WINDOW = 128_000  # Spark's window (seed 002)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "context", help="show what the next request would send to the model",
        description="Assemble the next request for PATH (system prompt, repo map, files, "
                    "prompt) and show each section with its token count.")
    p.add_argument("path", nargs="?", default=".", help="project folder (default: .)")
    p.add_argument("--add", action="extend", nargs="+", default=[], metavar="FILE",
                   help="files to put in the chat (repeatable; globs ok)")
    p.add_argument("--read", action="extend", nargs="+", default=[], metavar="FILE",
                   help="read-only reference files (repeatable)")
    p.add_argument("--prompt", default="", help="the request text (default: empty)")
    p.add_argument("--window", type=int, default=None,
                   help="the context window in tokens (default: the profile's, else "
                        f"{DEFAULT_WINDOW})")
    p.add_argument("--profile", default=None,
                   help="take the window from this profile of your config (e.g. spark, base)")
    p.add_argument("--reserve", type=int, default=None,
                   help="tokens kept free for the answer (default: window/8, at most 8192)")
    p.add_argument("--messages", action="store_true",
                   help="also print the messages themselves (always in --json)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.context.commands import format_report
    from core.context.files import ContextError
    from core.context.prompt import ChatContext, ContextOverflow
    from core.workspace.files import WorkspaceError

    root = Path(args.path)
    if not root.is_dir():
        raise CliError(f"{args.path}: not a folder")
    window = args.window if args.window is not None else _profile_window(args.profile, root)
    if window < 1024:
        raise CliError(f"--window {window}: too small (at least 1024 tokens)")
    if args.reserve is not None and not 0 <= args.reserve < window:
        raise CliError(f"--reserve {args.reserve}: must be between 0 and the window")
    try:
        ctx = ChatContext(root, window, reserve=args.reserve)
        from core.indexing.progress import progress_bar

        with progress_bar("repo map") as progress:  # a large tree takes a while: say so
            ctx.repo_map.refresh(progress)
        if args.add:
            ctx.add(args.add)
        if args.read:
            ctx.add(args.read, read_only=True)
    except (ContextError, WorkspaceError) as exc:
        raise CliError(str(exc)) from None
    error = None
    try:
        messages, report = ctx.build_request(args.prompt)
    except ContextOverflow as exc:
        messages, report, error = [], exc.report, str(exc)
    if args.json:
        document = {"root": str(ctx.root), **report.to_dict(), "messages": messages}
        if error:
            document["error"] = error
        print_json(document)
    else:
        print(format_report(report))
        if args.messages:
            for m in messages:
                print(f"\n--- {m['role']} ---\n{m['content']}")
    if error:
        print(f"spark: {error}", file=sys.stderr)
        return 1
    return 0


def _profile_window(name: str | None, root: Path) -> int:
    """The named profile's context window (user config, then the project's .spark.toml)."""
    if name is None:
        return DEFAULT_WINDOW
    from core.profiles import load_config

    profiles = load_config(project_root=root).profiles  # ConfigError is a CliError
    if name not in profiles:
        raise CliError(f"--profile {name}: no such profile (known: {', '.join(sorted(profiles))})")
    return profiles[name].context_window
