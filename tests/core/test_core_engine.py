"""Pacing: TTFT then the per-token schedule, in frames, with batch-dependent rates."""

import asyncio
import time
from dataclasses import dataclass

import pytest

from core import protocol as P
from core.engine import Engine, RateModel
from core.profiles import load_config
from tests.fakes.core import TEST_CASSETTES, write_config

LONG = [{"role": "user", "content": "Write a long module for the pacing tests"}]


@dataclass
class FakePrediction:
    ttft_ms: float
    tokens_per_s_per_seq: float
    chips: int = 1


def fake_predict(chip, model, *, batch=1, ctx=0, prompt=0, precision="bf16", chips=None):
    """Per-sequence rate falls with batch (aggregate rises), like a real accelerator."""
    if model == "unknown":
        raise ValueError("no such model")
    return FakePrediction(ttft_ms=40.0, tokens_per_s_per_seq=2000.0 / (1 + 0.25 * (batch - 1)))


def _engine(tmp_path, **kw) -> Engine:
    extra = ('[profiles.modelled]\nbackend = "replay"\nchip = "fake-chip"\nmodel = "fake-model"\n'
             f'cassettes = ["{TEST_CASSETTES.as_posix()}"]\n')
    cfg = load_config(config_file=write_config(tmp_path, extra=extra, **kw), env={})
    return Engine(cfg, rate_model=RateModel(fake_predict), package_cassettes=False)


async def _run(engine: Engine, sid: str, profile: str, messages=LONG, max_tokens=None):
    frames: list[tuple[float, dict]] = []

    async def emit(frame: dict) -> None:
        frames.append((time.perf_counter(), frame))

    t0 = time.perf_counter()
    job = engine.job(P.Generate(sid, profile, messages, max_tokens), emit)
    await job.start()
    return t0, frames


async def test_pinned_rate_fidelity_and_frames(tmp_path):
    engine = _engine(tmp_path, tokens_per_s=1000.0, ttft_ms=30.0, frame_ms=16)
    t0, frames = await _run(engine, "a", "fast", max_tokens=600)
    deltas = [(t, f) for t, f in frames if f["type"] == "delta"]
    done = frames[-1][1]
    assert done["type"] == "done" and done["reason"] == "length"
    assert sum(f["tokens"] for _, f in deltas) == 600
    ttft = (deltas[0][0] - t0) * 1000
    assert 29.5 <= ttft <= 60  # never early; late only by scheduling noise
    rate = (600 - 1) / (deltas[-1][0] - deltas[0][0])
    assert rate == pytest.approx(1000, rel=0.04)
    assert done["timing"]["tokens_per_s"] == pytest.approx(1000, rel=0.04)
    assert done["timing"]["predicted"] == {"ttft_ms": 30.0, "tokens_per_s": 1000.0,
                                           "basis": "pinned", "batch": 1}
    # frames, not one message per token: ~16 tokens a frame at 1,000 tok/s
    assert len(deltas) < 600 / 8
    gaps = sorted(b[0] - a[0] for a, b in zip(deltas[1:-1], deltas[2:-1]))
    assert gaps[len(gaps) // 2] >= 0.0158 and gaps[len(gaps) // 10] >= 0.010  # preemption nudges a few


async def test_batch_lowers_per_stream_rate(tmp_path):
    engine = _engine(tmp_path)
    single = await _run(engine, "s", "modelled", max_tokens=400)
    one = single[1][-1][1]["timing"]
    assert one["predicted"]["basis"] == "hwmodel" and one["predicted"]["batch"] == 1
    assert one["tokens_per_s"] == pytest.approx(2000, rel=0.05)
    runs = await asyncio.gather(*(_run(engine, f"b{i}", "modelled", max_tokens=400)
                                  for i in range(4)))
    for _, frames in runs:
        timing = frames[-1][1]["timing"]
        assert timing["predicted"]["batch"] == 4
        assert timing["tokens_per_s"] == pytest.approx(2000 / 1.75, rel=0.06)
    assert engine.active["modelled"] == 0


async def test_hwmodel_failure_falls_back_to_pinned(tmp_path):
    engine = _engine(tmp_path)
    profile = engine.config.profiles["fast"]
    rates = engine.rates.rates(profile, batch=3)
    assert rates.basis == "pinned" and rates.tokens_per_s == 20000.0


async def test_cancel_mid_ttft_is_immediate(tmp_path):
    engine = _engine(tmp_path, ttft_ms=5000.0)
    frames: list[dict] = []

    async def emit(frame):
        frames.append(frame)

    job = engine.job(P.Generate("c", "fast", LONG, None), emit)
    task = job.start()
    await asyncio.sleep(0.01)
    t = time.perf_counter()
    job.cancel()
    await task
    assert time.perf_counter() - t < 0.02
    assert frames[-1]["type"] == "done" and frames[-1]["reason"] == "cancelled"


def test_builtin_profiles_are_paced_by_hwmodel(tmp_path, monkeypatch):
    """Integration with hwmodel: spark is the fast profile, base the slow one."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("SPARK_DEMO_PROFILES", "1")  # the demo's spark/base pair
    engine = Engine(load_config(env={}))
    listed = {p["name"]: p for p in engine.profile_list()}
    spark, base = listed["spark"]["predicted"], listed["base"]["predicted"]
    assert spark["basis"] == "hwmodel" and base["basis"] == "hwmodel"
    assert spark["tokens_per_s"] > 500 > base["tokens_per_s"] > 10
    profile = engine.config.profiles["base"]
    one = engine.rates.rates(profile, batch=1, prompt_tokens=1000)
    many = engine.rates.rates(profile, batch=16, prompt_tokens=1000)
    assert many.tokens_per_s <= one.tokens_per_s  # per stream down ...
    assert many.tokens_per_s * 16 > one.tokens_per_s * 4  # ... aggregate up
