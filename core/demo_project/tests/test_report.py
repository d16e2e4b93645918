from datetime import date
from decimal import Decimal

from invoicer.models import Invoice, LineItem
from invoicer.report import is_overdue, render_report, totals_by_customer


def _invoice(number, customer, paid=False):
    return Invoice(
        number=number,
        customer=customer,
        issued=date(2024, 5, 1),
        items=[LineItem("hours", 3, Decimal("100.00"))],
        paid=paid,
    )


def test_overdue_after_terms():
    assert is_overdue(_invoice("1", "acme"), date(2024, 6, 15))
    assert not is_overdue(_invoice("2", "acme", paid=True), date(2024, 6, 15))


def test_totals_and_report():
    invoices = [_invoice("1", "acme"), _invoice("2", "acme"), _invoice("3", "globex")]
    assert totals_by_customer(invoices) == {"acme": Decimal("600.00"), "globex": Decimal("300.00")}
    report = render_report(invoices, date(2024, 6, 15))
    assert "acme" in report and "(2 overdue)" in report
