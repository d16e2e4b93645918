"""invoicer: read invoices, find what is overdue, report totals."""

__version__ = "0.3.0"
