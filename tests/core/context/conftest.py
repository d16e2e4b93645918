"""A small project tree (a git repo) for the context tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

FILES = {
    "app/__init__.py": "",
    "app/dates.py": (
        "from datetime import date\n\n\n"
        "def to_date(text: str) -> date:\n"
        "    y, m, d = text.split('-')\n"
        "    return date(int(y), int(m), int(d))\n\n\n"
        "def format_date(value: date, sep: str = '-') -> str:\n"
        "    return value.isoformat().replace('-', sep)\n"
    ),
    "app/invoices.py": (
        "from decimal import Decimal\n\nfrom app.dates import to_date\n\n\n"
        "class Invoice:\n"
        "    def __init__(self, lines, due):\n"
        "        self.lines = lines\n"
        "        self.due = to_date(due)\n\n"
        "    def total_amount(self) -> Decimal:\n"
        "        return sum((line.price for line in self.lines), Decimal(0))\n\n"
        "    def _helper(self):\n"
        "        def nested():\n"
        "            return 1\n"
        "        return nested()\n"
    ),
    "app/report.py": (
        "from app.dates import format_date, to_date\n"
        "from app.invoices import Invoice\n\n\n"
        "def summarize(invoices: list[Invoice]) -> str:\n"
        "    return ', '.join(format_date(to_date('2024-01-01')) for _ in invoices)\n"
    ),
    "web/widget.js": (
        "export function renderInvoice(invoice) {\n  return `<b>${invoice.total}</b>`\n}\n"
        "export class InvoiceWidget {\n  refresh(data) { return renderInvoice(data) }\n}\n"
    ),
    "README.md": "# Invoicer\nSee app/invoices.py.\n",
    ".gitignore": "secret.log\nbuild/\n",
    "secret.log": "token=abc\n",
    "build/out.py": "def built(): pass\n",
}


def make_project(root: Path, files: dict[str, str] = FILES, git: bool = True) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "data.bin").write_bytes(b"\x00\x01\x02binary")
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")
