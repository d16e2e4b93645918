"""Load invoices from a CSV export (one line item per row)."""

from __future__ import annotations

import csv
from decimal import Decimal, InvalidOperation
from pathlib import Path

from .dates import to_date
from .models import Invoice, LineItem


class LoadError(ValueError):
    """A row of the CSV file could not be read."""


def load_invoices(path: Path) -> list[Invoice]:
    """Group the CSV rows into invoices, in the order they first appear."""
    invoices: dict[str, Invoice] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for lineno, row in enumerate(csv.DictReader(handle), start=2):
            try:
                number = row["number"]
                invoice = invoices.get(number)
                if invoice is None:
                    invoice = Invoice(
                        number=number,
                        customer=row["customer"],
                        issued=to_date(row["issued"]),
                        terms_days=int(row.get("terms_days") or 30),
                        paid=row.get("paid", "").lower() in {"yes", "true", "1"},
                    )
                    invoices[number] = invoice
                invoice.items.append(
                    LineItem(row["description"], int(row["quantity"]), Decimal(row["unit_price"]))
                )
            except (KeyError, ValueError, InvalidOperation) as exc:
                raise LoadError(f"{path}:{lineno}: {exc}") from exc
    return list(invoices.values())
