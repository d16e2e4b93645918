"""Overdue detection and the per-customer report."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from decimal import Decimal

from .dates import add_days
from .models import Invoice


def due_date(invoice: Invoice) -> date:
    return add_days(invoice.issued, invoice.terms_days)


def is_overdue(invoice: Invoice, today: date) -> bool:
    return not invoice.paid and due_date(invoice) < today


def format_money(amount: Decimal) -> str:
    return f"{amount:,.2f}"


def totals_by_customer(invoices: list[Invoice]) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for invoice in invoices:
        totals[invoice.customer] += invoice.total
    return dict(totals)


def render_report(invoices: list[Invoice], today: date) -> str:
    lines = [f"Report for {today.isoformat()}"]
    for customer, total in sorted(totals_by_customer(invoices).items()):
        overdue = [i for i in invoices if i.customer == customer and is_overdue(i, today)]
        flag = f"  ({len(overdue)} overdue)" if overdue else ""
        lines.append(f"{customer:<20} {format_money(total):>12}{flag}")
    return "\n".join(lines)
