"""`spark report [SESSION] [--root PATH] [--json]`: the session report from the record."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cli_support import CliError, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report", help="report on a recorded session (default: the latest)",
        description="Prompts, answers, hunks kept, time waiting vs reviewing, the Base "
                    "comparison and what the guards caught, from .spark/sessions/*.jsonl.")
    p.add_argument("session", nargs="?", help="session id or path to its .jsonl (default: latest)")
    p.add_argument("--root", default=".", help="project folder holding .spark/ (default: .)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--width", type=int, default=60, help="timeline width in columns")
    p.add_argument("--list", action="store_true", help="list recorded sessions and exit")
    p.set_defaults(func=run)


def _base_for(root: Path, prompt_tokens: int):
    """The project's Base profile chip/model (profiles config), else the built-in pair."""
    from core.report.report import base_rates

    try:
        from core.profiles import load_config

        prof = load_config(project_root=root).profiles.get("base")
    except (CliError, OSError, ValueError):  # config problems belong to `spark`, not here
        prof = None
    if prof is None:
        return base_rates(prompt_tokens=prompt_tokens)
    rates = base_rates(prof.chip, prof.model, prof.precision, prompt_tokens=prompt_tokens)
    if rates.source == "fallback" and prof.tokens_per_s:
        from core.report.report import BaseRates

        return BaseRates(float(prof.tokens_per_s), float(prof.ttft_ms or 0.0),
                         "profile 'base' rates")
    return rates


def run(args: argparse.Namespace) -> int:
    from core.report.plot import format_text
    from core.report.recorder import RecorderError, find_session, list_sessions, load_events
    from core.report.report import build_report

    root = Path(args.root)
    if not root.is_dir():
        raise CliError(f"--root {root}: not a folder")
    if args.list:
        found = [{"id": p.stem, "path": str(p), "bytes": p.stat().st_size}
                 for p in list_sessions(root)]
        if args.json:
            print_json(found)
        else:
            print("\n".join(f"{s['id']}  {s['bytes']} bytes" for s in found) or "no sessions")
        return 0
    try:
        path = find_session(root, args.session)
        events, bad = load_events(path)
    except (RecorderError, OSError) as exc:
        raise CliError(str(exc)) from exc
    answers = sum(1 for e in events if e.get("type") == "answer_done")
    ptoks = sum(int(e.get("prompt_tokens") or 0) for e in events
                if e.get("type") == "answer_done")
    base = _base_for(root, ptoks // answers if answers and ptoks else 1024)
    report = build_report(events, base, skipped_lines=bad)
    if args.json:
        doc = report.to_dict()
        doc["path"] = str(path)
        print_json(doc)
    else:
        print(format_text(report, args.width))
    return 0
