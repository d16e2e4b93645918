"""`spark race "PROMPT" [PATH]`: open straight on the split-pane race.

By default the workstation opens with the race on top (`tui.commands.open_workstation`
with `race_prompt`), so the answer taken with `1`/`2` lands in the accept/reject loop.
`--print` runs a small app whose only screen is the race, for any two profiles, and
prints the taken answer on stdout to pipe into `spark apply` (Textual draws through
stderr, so stdout stays clean).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from core.cli_support import CliError


def parse_profiles(value: str) -> tuple[str, str]:
    """`spark,base` -> ("spark", "base"); exactly two different names."""
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    if len(names) != 2 or names[0] == names[1]:
        raise argparse.ArgumentTypeError(
            f"--profiles needs two different profile names separated by a comma, got {value!r}")
    return names  # type: ignore[return-value]


def race_messages(prompt: str) -> list[dict]:
    """What the main loop sends for a prompt: the edit-format instructions, then the ask."""
    from core.edits.instructions import EDIT_FORMAT_SYSTEM_PROMPT

    return [{"role": "system", "content": EDIT_FORMAT_SYSTEM_PROMPT},
            {"role": "user", "content": prompt}]


def make_race_app(core_url: str, prompt: str, profiles: tuple[str, str], *,
                  max_tokens: int | None = None, theme: str | None = None):
    """A tiny App whose only job is one race; `run()` returns the `RaceResult` or None."""
    from rich.text import Text
    from textual import work
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from themes import DEFAULT_THEME, register_themes
    from tui.screens.race import RaceScreen

    class RaceApp(App):
        TITLE = "sparkstation race"

        def __init__(self) -> None:
            super().__init__()
            self.client: Any = None
            self.failure: str | None = None
            register_themes(self)
            self.theme = theme or DEFAULT_THEME

        def compose(self) -> ComposeResult:
            yield Static(Text(f"connecting to the core at {core_url}...", style="dim"))

        def on_mount(self) -> None:
            self._connect()

        @work(exclusive=True)
        async def _connect(self) -> None:
            from core.client import CoreClient, CoreError

            try:
                self.client = await CoreClient.connect(core_url)
            except CoreError as exc:
                self.failure = exc.message
                self.exit(None)
                return
            offered = [p.get("name") for p in self.client.profiles]
            unknown = [name for name in profiles if name not in offered]
            if unknown:
                self.failure = (f"unknown profile {', '.join(map(repr, unknown))}; "
                                f"the core offers {', '.join(offered)}")
                self.exit(None)
                return
            screen = RaceScreen(self.client, prompt, race_messages(prompt), profiles,
                                max_tokens=max_tokens)
            self.push_screen(screen, self.exit)

        async def on_unmount(self) -> None:
            if self.client is not None:
                await self.client.close()

    return RaceApp()


DEFAULT_PAIR = ("spark", "base")


def _race(args: argparse.Namespace) -> int:
    prompt = args.prompt.strip()
    if not prompt:
        raise CliError("the race needs a prompt, e.g. spark race \"add a --verbose flag\"")
    root = args.path.expanduser()
    if not root.is_dir():
        raise CliError(f"{root}: no such folder")
    root = root.resolve()
    if args.max_tokens is not None and args.max_tokens <= 0:
        raise CliError("--max-tokens must be positive")
    if not args.print:
        # the workstation races spark and base, and loads the taken answer into its loop
        if tuple(args.profiles) != DEFAULT_PAIR or args.max_tokens is not None:
            raise CliError("--profiles and --max-tokens apply to --print races only "
                           "(the workstation races spark and base)")
        from tui.commands import open_workstation

        return open_workstation(root, args, race_prompt=prompt)
    return _print_race(root, prompt, args)


def _print_race(root: Path, prompt: str, args: argparse.Namespace) -> int:
    """Race without the workstation; the taken answer goes to stdout (exit 1 on escape)."""
    from tui.commands import prepare_launch, reach_core

    launch = prepare_launch(root, args)          # theme, profile and --core checked up front
    with reach_core(root, args, record=False) as url:
        app = make_race_app(url, prompt, args.profiles, max_tokens=args.max_tokens,
                            theme=launch["theme"])
        result = app.run()
    if app.failure:
        raise CliError(app.failure)
    if result is None:
        return 1
    sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    print(f"spark: took {result.profile}'s answer; pipe it into `spark apply` to write it",
          file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from tui.commands import _add_app_options

    race = sub.add_parser(
        "race", help="the same prompt to two profiles, side by side",
        description="Race two profiles on one prompt in split panes. Opens the workstation "
        "on the race; 1 or 2 takes that answer into the accept/reject loop, escape closes the "
        "race. With --print, only the race runs and the taken answer is printed on stdout "
        "(exit 1 if none is taken).")
    race.add_argument("prompt", help="what to ask both models")
    race.add_argument("path", nargs="?", default=".", type=Path,
                      help="project folder (default: .)")
    race.add_argument("--profiles", default=DEFAULT_PAIR, type=parse_profiles,
                      metavar="A,B", help="with --print: the two profiles to race "
                      "(default: spark,base)")
    race.add_argument("--max-tokens", default=None, type=int, metavar="N",
                      help="with --print: cap each answer at N tokens")
    race.add_argument("--print", action="store_true",
                      help="race only, then print the taken answer on stdout")
    _add_app_options(race)
    race.set_defaults(func=_race)
