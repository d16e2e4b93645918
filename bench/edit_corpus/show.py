"""Show one corpus answer and what `spark apply` made of it, to reproduce a miss.

    python -m bench.edit_corpus.show CASE_ID FORMAT [--answer]

CASE_ID is from the bench (the fetched corpus) or the CI sample (``sparkstation@...``,
this repository's own history).

Prints the outcome, then a unified diff of the commit's after-text against what was
written, per file (and the answer itself with --answer).
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.edit_corpus.formats import FORMATS, render
from bench.edit_corpus.generate import CorpusMissing, corpus_cases, own_history
from bench.edit_corpus.runner import ANSWER_NAME, _write_tree, apply_in_process, judge


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case_id")
    ap.add_argument("format", choices=sorted(FORMATS))
    ap.add_argument("--answer", action="store_true", help="print the answer too")
    args = ap.parse_args(argv)
    if args.case_id.startswith("sparkstation@"):
        pool = own_history(Path(__file__).resolve().parents[2], 10_000)
    else:
        try:
            pool = corpus_cases()
        except CorpusMissing as exc:
            print(exc, file=sys.stderr)
            return 2
    case = next((c for c in pool if c.id == args.case_id), None)
    if case is None:
        print(f"no case {args.case_id}", file=sys.stderr)
        return 2
    ans = render(case, args.format)
    if ans is None:
        print(f"{args.format} cannot render {case.id}", file=sys.stderr)
        return 2
    if args.answer:
        print(ans.text)
    tmp = Path(tempfile.mkdtemp())
    try:
        root = tmp / "tree"
        root.mkdir()
        _write_tree(root, ans)
        (tmp / ANSWER_NAME).write_text(ans.text)
        code, doc = apply_in_process(tmp / ANSWER_NAME, root)
        res = judge(ans, root, code)
        print(f"{case.id} {case.repo} {case.commit[:12]} {case.subject!r}")
        print(f"{args.format}: {res.outcome} (exit {code}) {res.detail}")
        for r in doc.get("refused", []):
            print(f"  refused: {r.get('message', '')}")
        for path, after in ans.expected.items():
            target = root / path
            got = target.read_text() if target.exists() else ""
            if got != after:
                sys.stdout.writelines(difflib.unified_diff(
                    after.splitlines(keepends=True), got.splitlines(keepends=True),
                    f"{path} (commit)", f"{path} (written)"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
