"""The default profiles' stand-ins land where the seeds put Spark and Base."""

import pytest

from hwmodel.predict import predict
from hwmodel.standins import BASE, SPARK


@pytest.mark.parametrize("prompt", [256, 2048, 8192])
def test_spark_is_over_1000_tokens_per_s_with_fast_first_token(prompt):
    p = predict(SPARK.chip, SPARK.model, precision=SPARK.precision, prompt=prompt, ctx=prompt)
    assert 1000 <= p.tokens_per_s_per_seq <= 1500
    assert p.ttft_ms < 100
    assert p.chips == 1  # a smaller Codex that fits on one wafer


def test_base_is_65_to_70ish_tokens_per_s():
    p = predict(BASE.chip, BASE.model, precision=BASE.precision)
    assert 60 <= p.tokens_per_s_per_seq <= 75


def test_spark_is_an_order_of_magnitude_faster_than_base():
    s = predict(SPARK.chip, SPARK.model, precision=SPARK.precision)
    b = predict(BASE.chip, BASE.model, precision=BASE.precision)
    assert s.tokens_per_s_per_seq / b.tokens_per_s_per_seq > 10
