"""hwmodel benchmark: how well the model predicts this machine, and what a predict() costs.

1. Local probe: calibrate the "local" chip with numpy (bandwidth, matmul, fixed per-layer cost),
   then time a real numpy transformer decode step at shapes not used for calibration and report
   predicted/measured (goal: within 15%).
2. Calibration on real GPU data: 4 H100 points -> the other H100 points and all H200 points.
3. Cost of predict() per call, as a ratio to a json.dumps of a small dict timed in the same run
   (the machine is shared and noisy; absolute times drift, ratios less so).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hwmodel.probe import single_thread_blas

SINGLE = single_thread_blas()

FOUR = {("llama-3.2-1b", "decode", 1, 512), ("llama-3.1-8b", "decode", 1, 1024),
        ("llama-3.2-1b", "prefill", 1, 2048), ("llama-3.1-8b", "prefill", 1, 2048)}


def bench_probe() -> list[float]:
    from hwmodel.probe import run_probe

    meas, checks = run_probe()
    print(f"local probe (numpy fp32{', one BLAS thread' if SINGLE else ''}): "
          f"{meas.mem_bw_gbs:.2f} GB/s, {meas.fp32_tflops * 1000:.1f} GFLOP/s, "
          f"{meas.layer_us:.1f} us/layer + {meas.step_us:.1f} us/step")
    print(f"  {'shape':12} {'ctx':>6} {'predicted ms':>13} {'measured ms':>12} {'pred/meas':>10}")
    errors = []
    for c in checks:
        print(f"  {c.model:12} {c.ctx:6} {c.predicted_ms:13.3f} {c.measured_ms:12.3f} "
              f"{c.predicted_ms / c.measured_ms:10.3f}")
        errors.append(abs(c.error_pct))
    print(f"  mean |error| {statistics.mean(errors):.1f}%  max {max(errors):.1f}%  (goal: within 15%)")
    return errors


def bench_gpu_calibration() -> None:
    from hwmodel.calibrate import calibrate, evaluate, load_points

    here = Path(__file__).resolve().parents[1] / "hwmodel" / "measurements"
    h100 = load_points(here / "h100.jsonl")
    h200 = load_points(here / "h200.jsonl")
    train = [p for p in h100 if (p.model, p.phase, p.batch, p.length) in FOUR]
    rest = [p for p in h100 if (p.model, p.phase, p.batch, p.length) not in FOUR]
    cal = calibrate(train)
    print("GPU calibration: 4 H100 points (decode + prefill of llama-3.2-1b and llama-3.1-8b)")
    for label, pts, c in (("H100 held out, uncalibrated", rest, None), ("H100 held out, calibrated", rest, cal),
                          ("H200 from H100 calibration", h200, cal), ("H200 uncalibrated", h200, None)):
        errs = [abs(x.error_pct) for x in evaluate(pts, c)]
        print(f"  {label:30} n={len(errs):2}  median |error| {statistics.median(errs):5.1f}%  "
              f"mean {statistics.mean(errs):5.1f}%  max {max(errs):5.1f}%")
    hf = load_points(here / "h100_hf.jsonl")
    hf_four = {("llama-3.2-1b", "decode", 1, 1024), ("llama-3.1-8b", "decode", 1, 512),
               ("llama-3.2-1b", "prefill", 1, 1024), ("llama-3.1-8b", "prefill", 1, 4096)}
    train = [p for p in hf if (p.model, p.phase, p.batch, p.length) in hf_four]
    rest = [p for p in hf if (p.model, p.phase, p.batch, p.length) not in hf_four]
    cal = calibrate(train)
    eager = cal["chips"]["h100-sxm"]["terms"]["eager_decode"]
    errs = [abs(x.error_pct) for x in evaluate(rest, cal)]
    print(f"  {'H100 HF-eager engine, 4 pts':30} n={len(errs):2}  median |error| {statistics.median(errs):5.1f}%  "
          f"mean {statistics.mean(errs):5.1f}%  max {max(errs):5.1f}%  (eager decode detected: {bool(eager)})")


def bench_predict_cost() -> None:
    from hwmodel.predict import predict

    predict("cs-3", "qwen2.5-coder-14b", precision="fp8")
    n = 3000
    payload = {"type": "delta", "id": "r1", "text": "def f(x):\n    return x", "tokens": 8}
    t0 = time.perf_counter()
    for _ in range(n):
        json.dumps(payload)
    base = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for i in range(n):
        predict("8x-h100", "llama-3.1-70b", batch=1 + i % 16, ctx=2048)
    cost = (time.perf_counter() - t0) / n
    print(f"predict(): {cost * 1e6:.1f} us per call = {cost / base:.1f}x a json.dumps of one delta frame")


def main() -> int:
    t0 = time.perf_counter()
    bench_probe()
    bench_gpu_calibration()
    bench_predict_cost()
    print(f"(bench took {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
