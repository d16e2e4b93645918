"""`spark dups scan|check` and `spark slop`: the detectors from the command line.

Imports of the detectors happen inside the commands so `spark --help` stays fast.
Findings are results, not errors: both commands exit 0 when they ran (2 on bad input).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from core.cli_support import CliError, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    dups = subparsers.add_parser("dups", help="find duplicated functions (clone types 1-3)")
    dsub = dups.add_subparsers(dest="dups_command")
    scan = dsub.add_parser("scan", help="every clone pair within a tree")
    scan.add_argument("path", help="folder to scan")
    scan.add_argument("--json", action="store_true", help="print one JSON document")
    scan.set_defaults(func=_scan)
    check = dsub.add_parser("check", help="check one file's functions against a tree")
    check.add_argument("file", help="Python file to check")
    check.add_argument("--root", help="tree to index (default: the current folder)")
    check.add_argument("--json", action="store_true", help="print one JSON document")
    check.set_defaults(func=_check)

    slop = subparsers.add_parser("slop", help="slop findings in a file or a tree")
    slop.add_argument("path", help="Python file or folder (every file counts as added)")
    slop.add_argument("--json", action="store_true", help="print one JSON document")
    slop.set_defaults(func=_slop)


@contextlib.contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on stderr while files are indexed (only on a terminal)."""
    from core.indexing.progress import progress_bar

    with progress_bar(label) as update:
        yield update


def _print_notes(notes: dict[str, list[str]]) -> None:
    """Files skipped or read in part: one line each on stderr, never fatal."""
    for path, lines in sorted(notes.items()):
        for line in lines:
            print(f"spark: note: {path}: {line}", file=sys.stderr)


def _folder(path: str) -> Path:
    root = Path(path)
    if not root.exists():
        raise CliError(f"no such folder: {path}")
    if not root.is_dir():
        raise CliError(f"not a folder: {path}")
    return root


def _scan(args: argparse.Namespace) -> int:
    from core.detectors.duplicates import DuplicateIndex

    index = DuplicateIndex(_folder(args.path))
    with _progress("indexing") as progress:
        index.build(progress)
    _print_notes(index.notes)
    pairs = index.pairs()
    if args.json:
        print_json({"functions": index.function_count, "pairs": [p.to_dict() for p in pairs]})
        return 0
    print(f"{index.function_count} functions ({index.indexed_count} indexed), "
          f"{len(pairs)} clone pairs")
    for p in pairs:
        print(f"type {p.clone_type}  {p.similarity:.2f}  {p.a.path}:{p.a.line} {p.a.symbol}"
              f"  <->  {p.b.path}:{p.b.line} {p.b.symbol}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from core.detectors.duplicates import DuplicateIndex, read_source

    file = Path(args.file)
    if not file.is_file():
        raise CliError(f"no such file: {args.file}")
    why: list[str] = []
    source = read_source(file, why)
    if source is None:
        raise CliError(f"cannot read {args.file}: {'; '.join(why) or 'unknown reason'}")
    root = _folder(args.root) if args.root else Path.cwd()
    try:
        rel: str | None = file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = None  # outside the tree: nothing to skip
    index = DuplicateIndex(root)
    with _progress("indexing") as progress:
        index.build(progress)
    _print_notes(index.notes)
    notes: list[str] = []
    matches = index.check_source(source, rel, notes=notes)
    _print_notes({args.file: notes})
    if args.json:
        print_json({"file": args.file, "matches": [m.to_dict() for m in matches]})
        return 0
    if not matches:
        print(f"{args.file}: no duplicates in {root}")
    for m in matches:
        print(f"{args.file}:{m.new_line} {m.new_symbol} duplicates {m.twin_path}:{m.twin_line} "
              f"{m.twin_symbol} (type {m.clone_type}, similarity {m.similarity:.2f})")
    return 0


def _slop(args: argparse.Namespace) -> int:
    from core.detectors.duplicates import iter_python_files, read_source
    from core.detectors.slop import SlopSession, analyze_change

    target = Path(args.path)
    if target.is_file():
        files = [(target.as_posix(), target)]
    elif target.is_dir():
        files = [(rel, target / rel) for rel in iter_python_files(target)]
    else:
        raise CliError(f"no such file or folder: {args.path}")
    session = SlopSession()
    reports = []
    for rel, path in files:
        text = read_source(path)
        if text is None:
            continue
        report = analyze_change(rel, "", text)
        session.add(report)
        reports.append(report)
    for error in sorted({e for r in reports for e in r.errors}):
        print(f"spark: warning: {error} (only our own rules ran)", file=sys.stderr)
    if args.json:
        print_json({
            "files": len(reports),
            "added_lines": session.added_lines,
            "findings": session.findings,
            "score": round(session.score, 2),
            "by_rule": dict(sorted(session.by_rule.items())),
            "reports": [r.to_dict() for r in reports if r.findings or r.errors],
        })
        return 0
    for r in reports:
        for f in r.findings:
            print(f"{r.path}:{f.line}: {f.rule_id} {f.message}")
    print(f"{session.findings} findings in {len(reports)} files, {session.added_lines} lines "
          f"({session.score:.2f} per 100 lines)")
    return 0
