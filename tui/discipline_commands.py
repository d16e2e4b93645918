"""`spark vary N "PROMPT" [PATH]` and `spark batch FILE [PATH]`: open the workstation
straight on N variations of one prompt, or on a batch of independent prompts.

Both open the full workstation (`tui.commands.open_workstation`) so the answer taken lands
in the usual accept/reject loop, and push their screen once the core connection is up,
through the app's `on_ready` hook.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path

from core.cli_support import CliError

OnReady = Callable[[object], Awaitable[None] | None]


def _project(path: Path) -> Path:
    root = path.expanduser()
    if not root.is_dir():
        raise CliError(f"{root}: no such folder")
    return root.resolve()


def _open(root: Path, args: argparse.Namespace, on_ready: OnReady) -> int:
    """Open the workstation and call ``on_ready(app)`` once it is connected to the core."""
    from tui.commands import open_workstation

    return open_workstation(root, args, on_ready=on_ready)


def _vary(args: argparse.Namespace) -> int:
    from core.variations import MAX_VARIATIONS, VariationError, check_count

    try:
        n = check_count(args.n)
    except VariationError:
        raise CliError(f"N must be 1..{MAX_VARIATIONS}, not {args.n}") from None
    prompt = args.prompt.strip()
    if not prompt:
        raise CliError('variations need a prompt, e.g. spark vary 4 "add a --verbose flag"')
    root = _project(args.path)

    async def on_ready(app) -> None:
        from tui.screens.variations import open_variations

        await open_variations(app, prompt, n)

    return _open(root, args, on_ready)


def _batch(args: argparse.Namespace) -> int:
    from core.batch import BatchError, load_queue

    if args.max_parallel is not None and args.max_parallel < 1:
        raise CliError("--max-parallel must be at least 1")
    try:
        prompts = load_queue(args.file)
    except BatchError as exc:
        raise CliError(str(exc)) from None
    root = _project(args.path)

    def on_ready(app) -> None:
        from tui.screens.batch import open_batch

        open_batch(app, prompts, max_parallel=args.max_parallel)

    return _open(root, args, on_ready)


def register(sub: argparse._SubParsersAction) -> None:
    from tui.commands import _add_app_options

    vary = sub.add_parser(
        "vary", help="N answers to one prompt side by side; keep the best",
        description="Ask for N answers to the same prompt at once on one connection; they "
        "stream side by side as compact diffs with their tokens, time, slop and duplicates. "
        "A digit takes one into the accept/reject loop, escape drops them all.")
    vary.add_argument("n", type=int, metavar="N", help="how many variations (1-16; 5-10 is "
                      "the seed's advice)")
    vary.add_argument("prompt", help="what to ask for")
    vary.add_argument("path", nargs="?", default=".", type=Path,
                      help="project folder (default: .)")
    _add_app_options(vary)
    vary.set_defaults(func=_vary)

    batch = sub.add_parser(
        "batch", help="run a queue of independent prompts, then review each",
        description="Run the prompts in FILE (one per line, # comments, a trailing \\ "
        "continues a line), each with a fresh context, several at once; then review the "
        "answers one after the other in the accept/reject loop (enter on the batch screen).")
    batch.add_argument("file", type=Path, help="the task queue")
    batch.add_argument("path", nargs="?", default=".", type=Path,
                       help="project folder (default: .)")
    batch.add_argument("--max-parallel", type=int, default=None, metavar="N",
                       help="tasks running at once (default: 4)")
    _add_app_options(batch)
    batch.set_defaults(func=_batch)
