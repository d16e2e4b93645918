from datetime import date

import pytest

from invoicer.dates import add_days, days_between, to_date


@pytest.mark.parametrize("text", ["2024-03-01", "01/03/2024", "01.03.2024", "Mar 01 2024"])
def test_to_date_accepts_customer_formats(text):
    assert to_date(text) == date(2024, 3, 1)


def test_to_date_rejects_garbage():
    with pytest.raises(ValueError):
        to_date("next tuesday")


def test_day_arithmetic():
    assert days_between(date(2024, 2, 28), date(2024, 3, 1)) == 2
    assert add_days(date(2024, 2, 28), 2) == date(2024, 3, 1)
