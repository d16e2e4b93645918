"""`spark undo`: revert the last accepted change, leaving the user's other work alone."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cli_support import CliError, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("undo", help="revert the last change sparkstation wrote")
    p.add_argument("--root", default=".", help="workspace root (default: .)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--no-commit", action="store_true",
                   help="do not commit the revert even when the change was committed")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.workspace.changes import undo_last
    from core.workspace.files import Workspace, WorkspaceError

    try:
        ws = Workspace(Path(args.root))
        res = undo_last(ws, commit=not args.no_commit)
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    nothing = res.change_id is None and not res.refused
    code = 1 if nothing or res.refused else 0
    if args.json:
        print_json({"undone": res.change_id is not None, "change_id": res.change_id,
                    "restored": res.written,
                    "refused": [{"path": p, "message": m} for p, m in res.refused],
                    "commit": res.commit, "recovered": res.recovered})
        return code
    for cid in res.recovered:
        print(f"finished interrupted change {cid}")
    if nothing:
        print("nothing to undo")
        return code
    for p in res.written:
        print(f"restored {p}")
    for _, m in res.refused:
        print(f"refused: {m}", file=sys.stderr)
    if res.commit:
        print(f"committed {res.commit[:12]}")
    return code
