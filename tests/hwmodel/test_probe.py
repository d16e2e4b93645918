"""The local probe's model logic on fixed measurements (no timing assertions)."""

import json

import numpy as np
import pytest

from hwmodel import probe
from hwmodel.models import ModelSpec
from hwmodel.predict import predict
from hwmodel.probe import LocalMeasurement, NumpyDecoder, chip_from, predict_local
from hwmodel.work import ROOFLINE_BLEND

MEAS = LocalMeasurement(mem_bw_gbs=10.0, fp32_tflops=0.1, layer_us=30.0, step_us=10.0, mem_gb=16.0)
SHAPE = ModelSpec(name="t", hidden=256, layers=2, heads=4, kv_heads=2, head_dim=64, ffn=512,
                  vocab=1000, max_ctx=4096)


def test_numpy_decoder_runs_a_real_step():
    model = NumpyDecoder(SHAPE)
    cache = model.new_cache(batch=3, ctx=16)
    logits = model.decode_step(np.array([1, 2, 3]), cache)
    assert logits.shape == (3, SHAPE.vocab)
    assert np.isfinite(logits).all()
    # the new token's K landed in the last cache slot
    assert not np.allclose(cache[0][0][:, :, -1, :], cache[0][0][:, :, 0, :])


def test_prediction_is_bytes_over_bandwidth_plus_fixed_costs():
    chip = chip_from(MEAS)
    weights = (SHAPE.layer_params_total + SHAPE.head_params) * 4
    kv = SHAPE.kv_elems_stored(128) * 4
    flops = SHAPE.linear_flops_per_token() + SHAPE.attn_flops_per_token(128)
    memory_ms, compute_ms = (weights + kv) / 10e9 * 1e3, flops / 0.1e12 * 1e3
    assert compute_ms < memory_ms
    expected_ms = memory_ms + ROOFLINE_BLEND * compute_ms + (2 * 30 + 10) / 1e3
    assert predict_local(chip, SHAPE, 1, 128) == pytest.approx(expected_ms, rel=1e-6)


def test_saved_probe_makes_local_a_chip(tmp_path, monkeypatch):
    saved = tmp_path / "local.json"
    saved.write_text(json.dumps(MEAS.__dict__))
    monkeypatch.setenv(probe.ENV_SAVED, str(saved))
    probe.local_chip.cache_clear()
    try:
        p = predict("local", "llama-3.2-1b", precision="fp32", ctx=512)
        assert p.chips == 1 and p.bound == "memory"
        assert p.decode_step_ms == pytest.approx(p.weight_gb / 10.0 * 1e3, rel=0.1)
    finally:
        probe.local_chip.cache_clear()


def test_bandwidth_and_flops_probes_return_positive_rates():
    assert probe.measure_bandwidth(total_mb=8, repeats=2) > 0
    assert probe.measure_flops(n=64, repeats=2) > 0
