from __future__ import annotations

import sys
import types

import pytest

from core.variations import (
    VariationError,
    VariationSet,
    predict_parallel_cost,
    predict_parallel_costs,
)


def fake_hwmodel(monkeypatch, calls):
    """A predict() with a known batching penalty: per-stream speed falls 5% per extra stream."""
    def predict(chip, model, *, batch=1, ctx=1024, prompt=1024, precision="bf16"):
        if chip == "nope":
            raise ValueError("unknown chip 'nope'")
        calls.append((chip, model, batch, precision))
        each = 1000.0 * (1 - 0.05 * (batch - 1))
        return types.SimpleNamespace(tokens_per_s_per_seq=each, tokens_per_s_total=each * batch,
                                     ttft_ms=80.0 * batch, fits=True, bound="memory")
    monkeypatch.setitem(sys.modules, "hwmodel.predict", types.SimpleNamespace(predict=predict))


def test_parallel_cost_from_hwmodel(monkeypatch):
    calls = []
    fake_hwmodel(monkeypatch, calls)
    c = predict_parallel_cost("cs-3", "llama-3.1-8b", 4, precision="fp16")
    assert c.source == "hwmodel"
    assert c.per_stream_tokens_per_s == pytest.approx(850.0)
    assert c.single_stream_tokens_per_s == pytest.approx(1000.0)
    assert c.per_stream_ratio == pytest.approx(0.85) and c.total_tokens_per_s == pytest.approx(3400)
    assert (c.ttft_ms, c.single_ttft_ms, c.fits, c.bound) == (320.0, 80.0, True, "memory")
    assert ("cs-3", "llama-3.1-8b", 4, "fp16") in calls
    assert c.describe() == "4 streams: 850 tok/s each (85% of one)"
    assert [x.n for x in predict_parallel_costs("cs-3", "m", [1, 2, 8])] == [1, 2, 8]


def test_parallel_cost_fallbacks(monkeypatch):
    calls = []
    fake_hwmodel(monkeypatch, calls)
    c = predict_parallel_cost("nope", "m", 3, fallback_tokens_per_s=1000.0, fallback_ttft_ms=80)
    assert c.source.startswith("fallback: unknown chip")
    assert (c.per_stream_tokens_per_s, c.total_tokens_per_s, c.per_stream_ratio) == (1000, 3000, 1)
    monkeypatch.setitem(sys.modules, "hwmodel.predict", None)
    c = predict_parallel_cost("cs-3", "m", 2)
    assert c.source.startswith("fallback: hwmodel unavailable")
    assert c.per_stream_tokens_per_s is None and "unknown" in c.describe()


def test_real_hwmodel_batching_never_speeds_a_stream_up():
    costs = predict_parallel_costs("h100-sxm", "llama-3.1-8b", [1, 4, 16], precision="fp16")
    assert all(c.source == "hwmodel" for c in costs)
    assert costs[0].per_stream_ratio == pytest.approx(1.0)
    each = [c.per_stream_tokens_per_s for c in costs]
    total = [c.total_tokens_per_s for c in costs]
    assert each[0] >= each[1] >= each[2] and total[0] < total[1] < total[2]


@pytest.mark.parametrize("n", [0, 17, -1, 2.5, True])
def test_bad_counts(n):
    with pytest.raises(VariationError):
        VariationSet("p", n)
    with pytest.raises(VariationError):
        predict_parallel_cost("cs-3", "m", n)


def test_variation_set_bookkeeping():
    vs = VariationSet("write parse_date", 3)
    vs.update(0, text_delta="def parse", tokens=2)
    vs.update(0, text_delta="_date(): ...", tokens=5, done=True, elapsed_s=0.4, slop_score=2.0,
              duplicates=1)
    vs.update(1, tokens=9, done=True, elapsed_s=0.5, slop_score=0.5)
    vs.update(2, tokens=3, error="cancelled")
    assert vs.variations[0].text == "def parse_date(): ..." and vs.all_done
    assert vs.ranking() == [1, 0, 2]
    with pytest.raises(VariationError, match="unknown variation field"):
        vs.update(1, colour="red")
    with pytest.raises(VariationError, match="failed"):
        vs.choose(2)
    with pytest.raises(VariationError, match="choose 0..2"):
        vs.choose(5)
    assert vs.dropped == []
    kept = vs.choose(1)
    assert kept.tokens == 9 and vs.chosen == 1 and vs.dropped == [0, 2]
    with pytest.raises(VariationError, match="already chosen"):
        vs.choose(0)
    assert [r["tokens"] for r in vs.summary()] == [5, 9, 3]
