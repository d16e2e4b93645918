"""Date helpers shared by the loader and the report."""

from __future__ import annotations

from datetime import date, datetime

_FORMATS = ("%Y-%m-%d", "%d/%m/%Y", "%d.%m.%Y", "%b %d %Y")


def to_date(text: str) -> date:
    """Parse a date written in one of the formats our customers use."""
    cleaned = text.strip()
    for fmt in _FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).date()
        except ValueError:
            continue
    raise ValueError(f"unrecognised date: {text!r}")


def days_between(start: date, end: date) -> int:
    """Whole days from start to end (negative when end is earlier)."""
    return (end - start).days


def add_days(start: date, days: int) -> date:
    """The date `days` after `start`."""
    return date.fromordinal(start.toordinal() + days)
