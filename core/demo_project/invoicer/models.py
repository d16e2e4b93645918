"""The invoice data model."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal


@dataclass(frozen=True)
class LineItem:
    description: str
    quantity: int
    unit_price: Decimal

    @property
    def total(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass
class Invoice:
    number: str
    customer: str
    issued: date
    terms_days: int = 30
    items: list[LineItem] = field(default_factory=list)
    paid: bool = False

    @property
    def total(self) -> Decimal:
        return sum((item.total for item in self.items), Decimal("0"))
