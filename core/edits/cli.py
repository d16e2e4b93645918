"""`spark apply`: apply the edit blocks of a model answer to the tree, without the app.

Exit codes: 0 every edit applied (or would, with --check), 1 some were refused (each
listed with its reason), 2 unusable input (unreadable, or no edit blocks at all).
With --json, stdout holds exactly one JSON document in every case, errors included.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cli_support import CliError, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("apply", help="apply SEARCH/REPLACE, diff or whole-file "
                                            "blocks from a model answer")
    p.add_argument("file", nargs="?", default="-", help="the answer (default: stdin)")
    p.add_argument("--check", action="store_true", help="report what would change; "
                                                        "write nothing")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--root", default=".", help="workspace root (default: .)")
    p.add_argument("--message", "-m", default="", help="commit message")
    p.add_argument("--no-commit", action="store_true", help="do not git-commit the change")
    p.add_argument("--force", action="store_true",
                   help="also write whole-file blocks that remove most of an existing "
                        "file (deletion-heavy; refused without it)")
    p.set_defaults(func=run)


MAX_ANSWER_BYTES = 64_000_000  # far beyond any model answer; stops a runaway pipe


def _read_input(name: str) -> str:
    """The answer as text: UTF-8 (a BOM is dropped) or UTF-16 with a BOM (what a
    PowerShell redirect writes); anything else is refused rather than guessed."""
    try:
        if name == "-":
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read(MAX_ANSWER_BYTES + 1) if stream is not None else \
                sys.stdin.read().encode("utf-8", "surrogateescape")
        else:
            with open(name, "rb") as fh:
                data = fh.read(MAX_ANSWER_BYTES + 1)
    except OSError as exc:
        raise CliError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > MAX_ANSWER_BYTES:
        raise CliError(f"cannot read {name}: over {MAX_ANSWER_BYTES:,} bytes; not an answer")
    encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise CliError(f"cannot read {name}: not {encoding.upper()[:6]} text "
                       f"(byte {exc.start})") from None


def run(args: argparse.Namespace) -> int:
    """Apply (or check) the answer; with --json even errors come as one JSON document."""
    try:
        return _run(args)
    except CliError as exc:
        if not args.json:
            raise
        print(f"spark: error: {exc}", file=sys.stderr)
        print_json({"check": args.check, "ok": False, "error": str(exc), "edits": 0,
                    "files": [], "written": [], "refused": [], "change_id": None,
                    "commit": None})
        return CliError.exit_code


def _run(args: argparse.Namespace) -> int:
    from core.edits.parser import StreamingParser
    from core.edits.proposal import apply_proposal, build_proposal
    from core.workspace.files import Workspace, WorkspaceError

    text = _read_input(args.file)
    try:
        ws = Workspace(Path(args.root))
    except (WorkspaceError, OSError) as exc:
        raise CliError(str(exc)) from None
    # the tree lets the parser read bare names (`main`) and route files that exist
    parser = StreamingParser(exists=ws.exists)
    edits = parser.feed(text) + parser.finish()
    if not edits:
        why = "; ".join(e.message for e in parser.errors) or "no edit blocks found"
        raise CliError(f"nothing to apply: {why}")
    try:
        proposal = build_proposal(ws, edits)
    except (WorkspaceError, OSError) as exc:
        raise CliError(str(exc)) from None
    refused = [{"path": e.path or "?", "message": e.message} for e in parser.errors]
    refused += [{"path": e.path, "message": e.message} for e in proposal.errors]
    files = [{"path": f.path, "is_new": f.is_new, "hunks": len(f.hunks),
              "added": sum(h.added for h in f.hunks),
              "removed": sum(h.removed for h in f.hunks),
              "deletion_heavy": f.deletion_heavy} for f in proposal.files]
    if args.check and not args.force:
        refused += [{"path": f.path, "message": f"{f.path}: {f.deletion_heavy}; needs "
                                                 f"--force"}
                    for f in proposal.files if f.deletion_heavy]
    doc = {"check": args.check, "edits": len(edits), "files": files, "written": [],
           "refused": refused, "change_id": None, "commit": None}
    if not args.check and proposal.files:
        message = args.message or ("spark apply: " + ", ".join(f.path for f in
                                                                 proposal.files))[:200]
        try:
            res = apply_proposal(ws, proposal, {h.id for h in proposal.hunks},
                                 message=message, commit=not args.no_commit,
                                 force=args.force)
        except (WorkspaceError, OSError) as exc:  # e.g. an unreadable journal
            raise CliError(f"nothing applied: {exc}") from None
        doc["written"] = res.written
        doc["change_id"] = res.change_id
        doc["commit"] = res.commit
        if res.commit_error:
            doc["commit_error"] = res.commit_error
        if res.commit_notes:
            doc["commit_notes"] = res.commit_notes
        refused += [{"path": e.path, "message": e.message} for e in res.refused]
    code = 1 if refused else 0
    doc["ok"] = code == 0
    if args.json:
        print_json(doc)
        return code
    verb = "would change" if args.check else "changed"
    for f in files:
        if (args.check and not (f["deletion_heavy"] and not args.force)) \
                or f["path"] in doc["written"]:
            tag = "A" if f["is_new"] else "M"
            print(f"{tag} {f['path']}  +{f['added']} -{f['removed']} "
                  f"({f['hunks']} hunk{'s' if f['hunks'] != 1 else ''})")
    for r in refused:
        print(f"refused: {r['message']}", file=sys.stderr)
    if doc["commit"]:
        print(f"committed {doc['commit'][:12]}")
    elif doc.get("commit_error") and "not a git" not in doc["commit_error"]:
        print(f"not committed: {doc['commit_error']}", file=sys.stderr)
    n = len([f for f in files if args.force or not f["deletion_heavy"]]) if args.check \
        else len(doc["written"])
    print(f"{n} file{'s' if n != 1 else ''} {verb}, {len(refused)} refused")
    return code
