"""hwmodel benchmark: how well the model predicts this machine, and what a predict() costs.

1. Local probe: calibrate the "local" chip with numpy (bandwidth, matmul, fixed per-layer cost),
   then time a real numpy transformer decode step at shapes not used for calibration and report
   predicted/measured (goal: within 15%).
2. Calibration on real GPU data, two engines: 4 H100 points -> the other points of that run, a
   later held-out run (never fitted), and the H200 from specs alone.
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


HF_FOUR = {("llama-3.2-1b", "decode", 1, 1024), ("llama-3.1-8b", "decode", 1, 512),
           ("llama-3.2-1b", "prefill", 1, 1024), ("llama-3.1-8b", "prefill", 1, 4096)}
# (engine, training file, its four points, [(label, file, role)]). role "dev": seen while the
# model was built; "held out": measured afterwards (--plan extra) and never used to fit or tune.
GPU_SETS = (
    ("torch + CUDA graphs", "h100.jsonl", FOUR, [
        ("H100 rest of run 1", "h100.jsonl", "dev"),
        ("H100 run 2", "h100_extra.jsonl", "held out"),
        ("H200 run 1 (transfer)", "h200.jsonl", "dev"),
        ("H200 run 2 (transfer)", "h200_extra.jsonl", "held out")]),
    ("HF transformers eager", "h100_hf.jsonl", HF_FOUR, [
        ("H100 rest of run 1", "h100_hf.jsonl", "dev"),
        ("H100 run 2", "h100_hf_extra.jsonl", "held out"),
        ("H200 run 2 (transfer)", "h200_hf_extra.jsonl", "held out")]),
)


def _key(p) -> tuple:
    return (p.model, p.phase, p.batch, p.length)


def gpu_error_tables(here: Path | None = None) -> list[dict]:
    """Calibrate on four points of one engine's H100 run; |error| of every other point, split
    into host-bound points (eager launches set the pace) and device-bound ones."""
    import statistics

    from hwmodel.calibrate import calibrate, evaluate, load_points, point_work
    from hwmodel.calibration import apply_calibration
    from hwmodel.chips import resolve
    from hwmodel.work import host_bound

    here = here or Path(__file__).resolve().parents[1] / "hwmodel" / "measurements"
    rows = []
    for engine, train_file, four, sets in GPU_SETS:
        cal = calibrate([p for p in load_points(here / train_file) if _key(p) in four])
        for label, name, role in sets:
            pts = [p for p in load_points(here / name) if not (name == train_file and _key(p) in four)]
            for calibration in (cal, None):
                host, device = [], []
                for c in evaluate(pts, calibration):
                    spec, _ = apply_calibration(resolve(c.point.chip)[0], calibration)
                    (host if host_bound(point_work(c.point, spec)[1], spec) else device).append(abs(c.error_pct))
                errs = host + device
                rows.append({"engine": engine, "set": label, "role": role, "calibrated": calibration is not None,
                             "n": len(errs), "median": statistics.median(errs), "mean": statistics.mean(errs),
                             "max": max(errs), "host_n": len(host), "host_max": max(host, default=0.0),
                             "device_median": statistics.median(device) if device else 0.0,
                             "device_max": max(device, default=0.0)})
    return rows


def bench_gpu_calibration() -> None:
    print("GPU calibration: 4 H100 points (decode + prefill of a small and a mid-size model) -> the rest")
    print(f"  {'engine':22} {'set':24} {'role':9} {'terms':9} {'n':>3} {'median':>7} {'mean':>6} {'max':>6}"
          f"  {'host-bound n, max':>17}  {'device-bound median, max':>24}")
    for r in gpu_error_tables():
        print(f"  {r['engine']:22} {r['set']:24} {r['role']:9} {'4 points' if r['calibrated'] else 'defaults':9} "
              f"{r['n']:3} {r['median']:6.1f}% {r['mean']:5.1f}% {r['max']:5.1f}%  {r['host_n']:10}, {r['host_max']:4.1f}%"
              f"  {r['device_median']:16.1f}%, {r['device_max']:4.1f}%")
    print("  (host-bound points are paced by the CPU's kernel launches; that host differs from run to run and\n"
          "   between machines, so no calibration on another run can predict it closely: see docs/hwmodel.md)")


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
