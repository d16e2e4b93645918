"""python -m invoicer FILE [--today YYYY-MM-DD]"""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path

from .dates import to_date
from .loader import load_invoices
from .report import render_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="invoicer")
    parser.add_argument("csv", type=Path)
    parser.add_argument("--today", type=to_date, default=date.today())
    args = parser.parse_args(argv)
    print(render_report(load_invoices(args.csv), args.today))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
