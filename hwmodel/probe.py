"""Measure this machine with numpy and check hwmodel against a real numpy transformer.

Three micro-measurements calibrate the "local" chip: streaming bandwidth (a GEMV over a matrix
far larger than the caches: what a decode step does), matmul throughput (a square SGEMM), and
the fixed per-layer cost of numpy dispatch (a decoder layer so small its arithmetic is free).
Then a real numpy decode step (RMSNorm, GQA attention over a KV cache, SwiGLU, LM head) runs
at shapes *not* used for calibration and we print predicted vs measured. numpy computes in
fp32, so the local chip's precision is fp32.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from hwmodel.chips import ChipSpec
from hwmodel.models import ModelSpec
from hwmodel.precision import get_precision
from hwmodel.work import build_work, time_of

ENV_SAVED = "SPARK_HW_LOCAL"


def single_thread_blas() -> bool:
    """Ask for one BLAS thread if numpy is not loaded yet; True when that took effect.

    On a small shared machine a multi-threaded BLAS stalls for whole scheduler slices whenever
    another process holds a core (we saw a 33 MB GEMV take 20 ms instead of 1.5 ms), which no
    model of the hardware can predict; one thread gives stable, comparable numbers.
    """
    import sys

    if "numpy" in sys.modules:
        return False
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    return True


def _median_time(fn: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    """Best of n: on a shared machine the minimum is the uncontended time (as timeit advises);
    contention only ever adds time."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


@dataclass(frozen=True)
class LocalMeasurement:
    mem_bw_gbs: float
    fp32_tflops: float
    layer_us: float
    step_us: float
    mem_gb: float


class BandwidthProbe:
    """Float32 GEMVs over a transformer layer's matrices (d = 768: QKV, output, gate+up, down;
    a width none of the check shapes uses), repeated to ~`total_mb` MB and read one after
    another as a decode step reads its layers, so the last-level cache cannot hold them."""

    def __init__(self, total_mb: int = 256, d: int = 768) -> None:
        import numpy as np

        rng = np.random.default_rng(0)
        shapes = [(d, 2 * d), (d, d), (d, 8 * d), (4 * d, d)]
        per_layer = sum(a * b for a, b in shapes) * 4
        layers = max(1, total_mb * 1024 * 1024 // per_layer)
        self.mats = [rng.standard_normal(shape, dtype=np.float32) for _ in range(layers) for shape in shapes]
        self.x = {n: np.ones((1, n), dtype=np.float32) for n in {a for a, _ in shapes}}
        self.nbytes = sum(a.nbytes for a in self.mats)

    def sweep(self) -> None:
        for a in self.mats:
            self.x[a.shape[0]] @ a

    def gbs(self, repeats: int) -> float:
        return self.nbytes / _median_time(self.sweep, repeats) / 1e9


def measure_bandwidth(total_mb: int = 256, repeats: int = 9) -> float:
    """GB/s streamed by decode-like GEMVs (see BandwidthProbe)."""
    return BandwidthProbe(total_mb).gbs(repeats)


def measure_flops(n: int = 1024, repeats: int = 5) -> float:
    """TFLOP/s of a float32 n x n matmul."""
    import numpy as np

    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    t = _median_time(lambda: a @ b, repeats)
    return 2.0 * n**3 / t / 1e12


TINY = ModelSpec(name="probe-tiny", hidden=64, layers=8, heads=4, kv_heads=2, head_dim=16,
                 ffn=128, vocab=256, max_ctx=4096)

# Shapes checked against the model (none is used to calibrate it).
CHECK_SHAPES: tuple[tuple[ModelSpec, int, int], ...] = (
    (ModelSpec(name="probe-512", hidden=512, layers=6, heads=8, kv_heads=2, head_dim=64,
               ffn=2048, vocab=8192, max_ctx=4096), 1, 256),
    (ModelSpec(name="probe-1024", hidden=1024, layers=4, heads=16, kv_heads=4, head_dim=64,
               ffn=4096, vocab=16384, max_ctx=4096), 1, 512),
    (ModelSpec(name="probe-1536", hidden=1536, layers=3, heads=12, kv_heads=4, head_dim=128,
               ffn=4096, vocab=16384, max_ctx=4096), 1, 1024),
)


class NumpyDecoder:
    """A real fp32 decoder (random weights) whose decode step we time."""

    def __init__(self, m: ModelSpec, seed: int = 0) -> None:
        import numpy as np

        rng = np.random.default_rng(seed)
        self.m = m
        q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim

        def w(i: int, o: int):
            return (rng.standard_normal((i, o), dtype=np.float32) * 0.02).astype(np.float32)

        self.layers = [
            {"wqkv": w(m.hidden, q + 2 * kv), "wo": w(q, m.hidden), "wgu": w(m.hidden, 2 * m.ffn),
             "wd": w(m.ffn, m.hidden), "n1": np.ones(m.hidden, np.float32), "n2": np.ones(m.hidden, np.float32)}
            for _ in range(m.layers)
        ]
        self.embed = w(m.vocab, m.hidden)
        self.head = w(m.hidden, m.vocab)

    def new_cache(self, batch: int, ctx: int):
        import numpy as np

        m = self.m
        shape = (batch, m.kv_heads, ctx, m.head_dim)
        rng = np.random.default_rng(2)
        return [(rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32))
                for _ in range(m.layers)]

    @staticmethod
    def _rms(x, w):
        import numpy as np

        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w

    def decode_step(self, tokens, cache):
        """One token per sequence; the new K/V go to the last cache slot."""
        import numpy as np

        m = self.m
        b = tokens.shape[0]
        g = m.heads // m.kv_heads
        q_dim, kv_dim = m.heads * m.head_dim, m.kv_heads * m.head_dim
        x = self.embed[tokens]
        for layer, (kc, vc) in zip(self.layers, cache):
            qkv = self._rms(x, layer["n1"]) @ layer["wqkv"]
            q = qkv[:, :q_dim].reshape(b, m.kv_heads, g, m.head_dim)
            kc[:, :, -1, :] = qkv[:, q_dim:q_dim + kv_dim].reshape(b, m.kv_heads, m.head_dim)
            vc[:, :, -1, :] = qkv[:, q_dim + kv_dim:].reshape(b, m.kv_heads, m.head_dim)
            s = np.matmul(q, kc.transpose(0, 1, 3, 2)) * (m.head_dim ** -0.5)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            o = np.matmul(s, vc).reshape(b, q_dim)
            x = x + o @ layer["wo"]
            gu = self._rms(x, layer["n2"]) @ layer["wgu"]
            gate, up = gu[:, :m.ffn], gu[:, m.ffn:]
            x = x + (gate / (1.0 + np.exp(-gate)) * up) @ layer["wd"]
        return self._rms(x, 1.0) @ self.head


def time_decode(m: ModelSpec, batch: int, ctx: int, repeats: int = 9) -> float:
    """Median seconds of one real numpy decode step."""
    import numpy as np

    model = NumpyDecoder(m)
    cache = model.new_cache(batch, ctx)
    tokens = np.arange(batch) % m.vocab
    return _median_time(lambda: model.decode_step(tokens, cache), repeats, warmup=2)


def _total_mem_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        return 8.0


def measure_fixed_costs() -> tuple[float, float]:
    """(us per layer, us per step): the tiny model at two depths, arithmetic negligible."""
    shallow = ModelSpec(**{**asdict(TINY), "layers": 2, "name": "probe-tiny-2"})
    t_deep = time_decode(TINY, 1, 16, repeats=21)
    t_shallow = time_decode(shallow, 1, 16, repeats=21)
    layer_s = max((t_deep - t_shallow) / (TINY.layers - shallow.layers), 0.0)
    step_s = max(t_shallow - shallow.layers * layer_s, 0.0)
    return layer_s * 1e6, step_s * 1e6


def measure() -> LocalMeasurement:
    """Calibrate the local chip: bandwidth, FLOPs, and the fixed per-layer/per-step cost."""
    bw = measure_bandwidth()
    flops = measure_flops()
    layer_us, step_us = measure_fixed_costs()
    return LocalMeasurement(bw, flops, layer_us, step_us, _total_mem_gb())


def chip_from(meas: LocalMeasurement) -> ChipSpec:
    """The measured machine as a chip: measured rates are already 'effective' (eff = 1)."""
    return ChipSpec(
        name="local", kind="cpu", family="local", mem_gb=meas.mem_gb, mem_bw_gbs=meas.mem_bw_gbs,
        bf16_tflops=meas.fp32_tflops, fp32_tflops=meas.fp32_tflops, mem_eff=1.0, compute_eff=1.0,
        layer_us=meas.layer_us, step_us=meas.step_us, prefill_layer_us=0.0, prefill_step_us=0.0,
        usable_mem=0.5, source="measured by `spark hw probe` (numpy fp32)",
    )


@lru_cache(maxsize=1)
def local_chip() -> ChipSpec:
    """This machine, from a saved probe ($SPARK_HW_LOCAL) or measured once per process."""
    saved = os.environ.get(ENV_SAVED)
    if saved and Path(saved).is_file():
        return chip_from(LocalMeasurement(**json.loads(Path(saved).read_text())))
    return chip_from(measure())


@dataclass(frozen=True)
class ProbeCheck:
    model: str
    batch: int
    ctx: int
    predicted_ms: float
    measured_ms: float

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.predicted_ms - self.measured_ms) / self.measured_ms


def predict_local(chip: ChipSpec, m: ModelSpec, batch: int, ctx: int) -> float:
    """Predicted decode step (ms) of `m` on the measured chip, fp32 weights and KV."""
    work = build_work(chip, m, get_precision("fp32"), 4.0, "decode", batch, ctx, 1)
    return time_of(work, chip).total_s * 1e3


def run_probe(rounds: int = 8) -> tuple[LocalMeasurement, list[ProbeCheck]]:
    """Calibrate, then predicted vs measured decode steps on the check shapes.

    Bandwidth and the check steps are timed in alternating rounds and each keeps its best, so
    both see the same contention from whatever else shares this machine.
    """
    import numpy as np

    flops = measure_flops()
    layer_us, step_us = measure_fixed_costs()
    bw_probe = BandwidthProbe()
    runs = []
    for m, batch, ctx in CHECK_SHAPES:
        model = NumpyDecoder(m)
        cache = model.new_cache(batch, ctx)
        tokens = np.arange(batch) % m.vocab
        model.decode_step(tokens, cache)
        runs.append((m, batch, ctx, (lambda mo=model, ca=cache, to=tokens: mo.decode_step(to, ca))))
    # Pair each round's bandwidth with that round's step times: contention from other
    # processes changes over seconds, so a prediction is only comparable with a measurement
    # taken alongside it. Report the median round.
    bws: list[float] = []
    times: list[list[float]] = [[] for _ in runs]
    preds: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        bw = bw_probe.gbs(repeats=2)
        chip = chip_from(LocalMeasurement(bw, flops, layer_us, step_us, _total_mem_gb()))
        bws.append(bw)
        for i, (m, batch, ctx, step) in enumerate(runs):
            times[i].append(_median_time(step, repeats=2, warmup=0) * 1e3)
            preds[i].append(predict_local(chip, m, batch, ctx))
    meas = LocalMeasurement(statistics.median(bws), flops, layer_us, step_us, _total_mem_gb())
    checks = []
    for (m, batch, ctx, _), t, pr in zip(runs, times, preds):
        ratio = statistics.median(a / b for a, b in zip(pr, t))
        measured = statistics.median(t)
        checks.append(ProbeCheck(m.name, batch, ctx, ratio * measured, measured))
    return meas, checks
