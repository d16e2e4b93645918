"""The first-run screen: a project with no model configured opens here, never on a fake answer.

It shows what the machine already has (OpenAI-compatible servers answering on loopback,
API keys in the environment), the presets that need a key, and the demo. Picking one
writes `[profiles.spark]` and `[profiles.base]` into the user's config through
`core.providers` (the same code as `spark init`) and closes with what was chosen; the
workstation then starts on it. Detection and writing live in core; this screen only
draws the choices and maps keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from core.config import ConfigError
from core.providers import PRESETS, Found, detect_env, profiles_for, write_profiles
from core.providers.detect import detect_servers_async


@dataclass(frozen=True)
class FirstRunResult:
    """What the user chose: `configured` (profiles written to ``path``), `demo` or `quit`."""

    action: str
    path: Path | None = None
    provider: str | None = None
    fast_model: str | None = None


class FirstRunScreen(Screen[FirstRunResult]):
    """Lists detected providers; Enter picks one (then a model when a server has several)."""

    BINDINGS: ClassVar = [Binding("escape,q", "quit_first_run", "Quit"),
                Binding("d", "demo", "Open the demo"),
                Binding("r", "rescan", "Look again")]
    DEFAULT_CSS = """
    FirstRunScreen { align: center middle; }
    FirstRunScreen > Vertical { width: 96%; max-width: 100; height: auto; max-height: 95%;
                                 border: round $accent; padding: 0 1; }
    FirstRunScreen OptionList { height: auto; max-height: 14; }
    FirstRunScreen #fr-status { color: $text-muted; }
    """

    def __init__(self, root: Path, *, env: dict[str, str] | None = None,
                 ports: list | None = None, config_path: Path | None = None) -> None:
        super().__init__()
        self.root = root
        self._env = env
        self._ports = ports
        self._config_path = config_path
        self.found: list[Found] = []
        self._picked: Found | None = None
        self.detecting = True

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("No model is connected", style="bold"), id="fr-title")
            yield Static(Text(f"{self.root} has no model configured, so nothing would answer "
                              "your requests. Pick one of what this machine has; it is written "
                              "to your config as profiles 'spark' (fast) and 'base' (deep).",
                              style=""), id="fr-intro")
            yield Static("Looking for local servers and API keys...", id="fr-status")
            yield OptionList(id="fr-options")
            yield Static(Text(self._hosted_hint(), style="dim"), id="fr-hint")
        yield Footer()

    @staticmethod
    def _hosted_hint() -> str:
        keys = ", ".join(p.key_env for p in PRESETS.values() if p.key_env)
        ports = ", ".join(f"{p.title} :{p.port}" for p in PRESETS.values() if p.port)
        return (f"Hosted: set one of {keys} and press r. Local: start a server ({ports}) and "
                "press r. Or from a shell: spark init --provider NAME --model ID --yes. "
                "Your own endpoint: a [profiles.NAME] table (docs/providers.md).")

    async def on_mount(self) -> None:
        await self.action_rescan()

    async def action_rescan(self) -> None:
        self.detecting = True
        self.query_one("#fr-status", Static).update("Looking for local servers and API keys...")
        servers = await detect_servers_async(self._ports)
        self.found = servers + detect_env(self._env)
        self._picked = None
        self._show_providers()
        self.detecting = False

    def _show_providers(self) -> None:
        options = self.query_one("#fr-options", OptionList)
        options.clear_options()
        for i, item in enumerate(self.found):
            models = f"  models: {', '.join(item.models[:4])}" if item.models else ""
            more = f" (+{len(item.models) - 4})" if len(item.models) > 4 else ""
            options.add_option(Option(f"{item.preset.title}: {item.source}{models}{more}",
                                      id=f"found-{i}"))
        options.add_option(Option("Open the demo (recorded answers, offline)", id="demo"))
        options.add_option(Option("Quit", id="quit"))
        status = (f"Found {len(self.found)}: Enter picks one." if self.found else
                  "Found no local server and no API key.")
        self.query_one("#fr-status", Static).update(status)
        options.highlighted = 0
        options.focus()

    def _show_models(self, item: Found) -> None:
        options = self.query_one("#fr-options", OptionList)
        options.clear_options()
        for i, model in enumerate(item.models):
            options.add_option(Option(model, id=f"model-{i}"))
        self.query_one("#fr-status", Static).update(
            f"{item.preset.title} serves {len(item.models)} models: which is the fast one "
            "('spark')? The next one becomes 'base'; escape goes back.")
        options.highlighted = 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        ident = event.option.id or ""
        if ident == "demo":
            self.action_demo()
        elif ident == "quit":
            self.action_quit_first_run()
        elif ident.startswith("found-"):
            item = self.found[int(ident.removeprefix("found-"))]
            if len(item.models) > 1:
                self._picked = item
                self._show_models(item)
            else:
                self._configure(item, item.fast_model, item.deep_model)
        elif ident.startswith("model-") and self._picked is not None:
            models = self._picked.models
            index = int(ident.removeprefix("model-"))
            deep = models[(index + 1) % len(models)]
            self._configure(self._picked, models[index], deep)

    def _configure(self, item: Found, fast: str | None, deep: str | None) -> None:
        try:
            profiles = profiles_for(item.preset, fast_model=fast, deep_model=deep,
                                    base_url=item.base_url)
            path = write_profiles(profiles, provider=item.preset.name, path=self._config_path,
                                  env=self._env)
        except ConfigError as exc:
            self.query_one("#fr-status", Static).update(Text(str(exc), style="bold red"))
            return
        self.dismiss(FirstRunResult("configured", path, item.preset.name,
                                    profiles["spark"]["api_model"]))

    def action_demo(self) -> None:
        self.dismiss(FirstRunResult("demo"))

    def action_quit_first_run(self) -> None:
        if self._picked is not None:  # back from the model list
            self._picked = None
            self._show_providers()
            return
        self.dismiss(FirstRunResult("quit"))


class FirstRunApp(App[FirstRunResult]):
    """Hosts the screen before the workstation starts (tui/cli.py runs it)."""

    def __init__(self, root: Path, **screen_kw: object) -> None:
        super().__init__()
        self._root = root
        self._screen_kw = screen_kw

    def on_mount(self) -> None:
        from themes import DEFAULT_THEME, register_themes

        register_themes(self)
        self.theme = DEFAULT_THEME
        self.push_screen(FirstRunScreen(self._root, **self._screen_kw),  # type: ignore[arg-type]
                         self.exit)


def run_first_run(root: Path) -> FirstRunResult:
    """Show the screen in the terminal; quitting it any other way counts as `quit`."""
    result = FirstRunApp(root).run()
    return result if isinstance(result, FirstRunResult) else FirstRunResult("quit")
