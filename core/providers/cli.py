"""`spark init`: pick a model provider and write it to the user's config, from the shell.

Without flags it shows what it found (keys in the environment, servers on loopback) and
asks; with `--provider ... --yes` it asks nothing (scripts, CI, dotfiles). `--list`
prints the presets and what was detected as JSON.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cli_support import CliError, print_json
from core.config import user_config_file
from core.providers.detect import Found, detect_env, detect_servers
from core.providers.presets import PRESETS, get_preset
from core.providers.write import profiles_for, write_profiles


def register(subparsers: argparse._SubParsersAction) -> None:
    init = subparsers.add_parser(
        "init", help="connect a model: detect keys and local servers, write the user config")
    init.add_argument("--provider", default=None,
                      help=f"one of: {', '.join(PRESETS)} (default: what is detected)")
    init.add_argument("--model", default=None, help="model id for the fast profile 'spark'")
    init.add_argument("--deep-model", default=None,
                      help="model id for the deep profile 'base' (default: the preset's, "
                           "or --model)")
    init.add_argument("--base-url", default=None, help="endpoint, e.g. http://127.0.0.1:8080/v1")
    init.add_argument("--context-window", type=int, default=None, help="tokens")
    init.add_argument("--config", type=Path, default=None,
                      help=f"file to write (default: {user_config_file()})")
    init.add_argument("--yes", "-y", action="store_true",
                      help="do not ask; take the first detected provider or --provider")
    init.add_argument("--list", action="store_true",
                      help="print presets and detected providers as JSON and exit")
    init.add_argument("--no-probe", action="store_true",
                      help="do not ask loopback servers for their models")
    init.set_defaults(func=run_init)


def _describe(found: Found) -> str:
    models = f" models: {', '.join(found.models[:5])}" if found.models else ""
    return f"{found.preset.title} ({found.source}){models}"


def _ask(prompt: str) -> str:
    try:
        return input(prompt).strip()
    except EOFError:
        raise CliError("no answer on stdin; pass --provider and --yes") from None


def _choose(found: list[Found], args: argparse.Namespace) -> Found:
    if args.provider:
        preset = get_preset(args.provider)
        for item in found:
            if item.preset is preset:
                return item
        base = args.base_url or preset.base_url
        return Found(preset, base, "chosen with --provider")
    if not found:
        raise CliError("no provider found: no API key in the environment "
                       f"({', '.join(p.key_env for p in PRESETS.values() if p.key_env)}) and "
                       "no server on 127.0.0.1 (ports "
                       f"{', '.join(str(p.port) for p in PRESETS.values() if p.port)}); "
                       "start one or pass --provider/--base-url/--model")
    if args.yes or not sys.stdin.isatty():
        if not args.yes and len(found) > 1:
            raise CliError("several providers found ("
                           + "; ".join(_describe(f) for f in found)
                           + "); pick one with --provider")
        return found[0]
    for i, item in enumerate(found, 1):
        print(f"  {i}. {_describe(item)}")
    answer = _ask(f"use which? [1-{len(found)}, default 1] ") or "1"
    if not answer.isdigit() or not 1 <= int(answer) <= len(found):
        raise CliError(f"not a choice: {answer!r}")
    return found[int(answer) - 1]


def run_init(args: argparse.Namespace) -> int:
    servers = [] if args.no_probe else detect_servers()
    found = servers + detect_env()
    if args.list:
        print_json({"presets": {n: {"base_url": p.base_url, "fast_model": p.fast_model,
                                    "deep_model": p.deep_model, "key_env": p.key_env,
                                    "context_window": p.context_window}
                                for n, p in PRESETS.items()},
                    "detected": [{"provider": f.preset.name, "base_url": f.base_url,
                                  "source": f.source, "models": list(f.models)}
                                 for f in found]})
        return 0
    choice = _choose(found, args)
    model = args.model
    if model is None and choice.models and not args.yes and sys.stdin.isatty() \
            and len(choice.models) > 1:
        for i, name in enumerate(choice.models, 1):
            print(f"  {i}. {name}")
        answer = _ask("fast model? [default 1] ") or "1"
        model = choice.models[int(answer) - 1] if answer.isdigit() \
            and 1 <= int(answer) <= len(choice.models) else answer
    profiles = profiles_for(choice.preset, fast_model=model or choice.fast_model,
                            deep_model=args.deep_model or (None if model else choice.deep_model),
                            base_url=args.base_url or choice.base_url,
                            context_window=args.context_window)
    path = write_profiles(profiles, provider=choice.preset.name, path=args.config)
    print(f"wrote profiles spark ({profiles['spark']['api_model']}) and base "
          f"({profiles['base']['api_model']}) for {choice.preset.title} to {path}")
    print("start with: spark   (or spark --profile base)")
    return 0
