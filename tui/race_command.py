"""`spark race "PROMPT" [PATH]`: open straight on the split-pane race.

Starts (or reaches) the core like `spark` does, runs a small app whose only screen is the
race, and prints the answer the user takes (`1`/`2`) on stdout, so it can be piped into
`spark apply`. Textual draws on the terminal through stderr, so stdout stays clean.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
            self.client = None
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


def _race(args: argparse.Namespace) -> int:
    prompt = args.prompt.strip()
    if not prompt:
        raise CliError("the race needs a prompt, e.g. spark race \"add a --verbose flag\"")
    root = args.path.expanduser()
    if not root.is_dir():
        raise CliError(f"{root}: no such folder")
    if args.max_tokens is not None and args.max_tokens <= 0:
        raise CliError("--max-tokens must be positive")
    from themes import THEMES

    if args.theme is not None and args.theme not in THEMES:
        raise CliError(f"unknown theme {args.theme!r}; choose from {', '.join(THEMES)}")
    core = None
    url = args.core
    if url is None:
        from core.embedded import EmbeddedCore

        core = EmbeddedCore(project_root=root.resolve())
        try:
            url = core.start()
        except Exception as exc:
            raise CliError(f"cannot start the inference core: {exc}") from exc
    try:
        app = make_race_app(url, prompt, args.profiles, max_tokens=args.max_tokens,
                            theme=args.theme)
        result = app.run()
    finally:
        if core is not None:
            core.stop()
    if app.failure:
        raise CliError(app.failure)
    if result is None:
        return 1
    sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    print(f"spark: took {result.profile}'s answer; pipe it into `spark apply` to write it",
          file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    race = sub.add_parser("race", help="the same prompt to two profiles, side by side",
                          description="Race two profiles on one prompt. Press 1 or 2 to take "
                          "an answer (printed on stdout), escape to cancel (exit 1).")
    race.add_argument("prompt", help="what to ask both models")
    race.add_argument("path", nargs="?", default=".", type=Path,
                      help="project folder (default: .)")
    race.add_argument("--profiles", default=("spark", "base"), type=parse_profiles,
                      metavar="A,B", help="the two profiles to race (default: spark,base)")
    race.add_argument("--core", default=None, metavar="URL",
                      help="use a running core (ws://HOST:PORT)")
    race.add_argument("--max-tokens", default=None, type=int, metavar="N",
                      help="cap each answer at N tokens")
    race.add_argument("--theme", default=None, help="theme name")
    race.set_defaults(func=_race)
