"""`spark hw ...`: predict, list chips and models, sweep, calibrate, probe, check.

Module-level imports stay light (no numpy): the `spark` dispatcher imports this for every
`hw` command. Library errors (HwModelError) become CliError: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.cli_support import CliError, print_json

PREDICT_FIELDS = ("prefill_ms", "ttft_ms", "decode_step_ms", "tokens_per_s_per_seq",
                  "tokens_per_s_total", "weight_gb", "kv_gb", "fits", "chips_needed", "chips", "bound")


def _friendly(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn the library's HwModelError into the CLI's exit-2 error."""

    @functools.wraps(fn)
    def wrapper(args: argparse.Namespace) -> int:
        from hwmodel.errors import HwModelError

        try:
            return fn(args)
        except HwModelError as exc:
            raise CliError(str(exc)) from exc

    return wrapper


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of milliseconds, got {text!r}") from None
    if not 0 <= value < 1e6:
        raise argparse.ArgumentTypeError(f"expected a non-negative number of milliseconds, got {text!r}")
    return value


def _shape_args(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    p.add_argument("--chip", required=True, help="chip or system (see `spark hw chips`)")
    p.add_argument("--model", required=True, help="model (see `spark hw models`)")
    if not sweep:
        p.add_argument("--batch", type=_positive, default=1, help="concurrent sequences")
        p.add_argument("--ctx", type=_positive, default=1024, help="tokens in the KV cache per sequence")
    p.add_argument("--prompt", type=_positive, default=1024, help="prompt tokens to prefill")
    p.add_argument("--precision", default="bf16", help="weights: fp32, bf16, fp16, fp8, int8, int4, fp4")
    p.add_argument("--kv-precision", default=None, help="KV cache: bf16 (default), fp8, int8, int4")
    p.add_argument("--chips", type=_positive, default=None, help="chip count (default: fewest that fit)")
    p.add_argument("--calibration", default=None, help="calibration JSON from `spark hw calibrate`")
    p.add_argument("--request-ms", type=_non_negative, default=None,
                   help="serving overhead before the first token (default: the chip's or system's; 0 = bare engine)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")


def register(subparsers: Any) -> None:
    hw = subparsers.add_parser("hw", help="hardware performance model: predict, calibrate, probe")
    sub = hw.add_subparsers(dest="hw_command", required=True)

    p = sub.add_parser("predict", help="TTFT, tokens/s and memory fit for one configuration")
    _shape_args(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("chips", help="list chips and systems")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_chips)

    p = sub.add_parser("models", help="list model shapes")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("sweep", help="batch or context sweep as a table and a terminal chart")
    _shape_args(p, sweep=True)
    p.add_argument("--over", choices=("batch", "ctx"), default="batch")
    p.add_argument("--values", default=None, help="comma-separated values (default: powers of two)")
    p.add_argument("--batch", type=_positive, default=1, help="batch when sweeping ctx")
    p.add_argument("--ctx", type=_positive, default=1024, help="ctx when sweeping batch")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("calibrate", help="fit efficiency/overhead terms to measured JSONL points")
    p.add_argument("measured", help="JSONL of measured decode/prefill points")
    p.add_argument("-o", "--output", required=True, help="calibration JSON to write")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("probe", help="measure this machine with numpy; predicted vs measured decode")
    p.add_argument("--save", default=None, help="write the measurement as JSON (use via $SPARK_HW_LOCAL)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("check", help="compare predictions with published figures")
    p.add_argument("--reference", default=None, help="hw_public.jsonl (default: shared/reference)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)


def _predict(args: argparse.Namespace, **overrides: int):
    from hwmodel.predict import predict

    values = {"batch": args.batch, "ctx": args.ctx, **overrides}
    return predict(args.chip, args.model, prompt=args.prompt, precision=args.precision,
                   kv_precision=args.kv_precision, chips=args.chips, calibration=args.calibration,
                   request_ms=args.request_ms, **values)


def _require_fit(p) -> None:
    if not p.fits:
        raise CliError(
            f"{p.model} ({p.weight_gb:.1f} GB weights + {p.kv_gb:.1f} GB KV) does not fit on "
            f"{p.chips} x {p.chip}; it needs {p.chips_needed}"
        )


@_friendly
def cmd_predict(args: argparse.Namespace) -> int:
    p = _predict(args)
    _require_fit(p)
    if args.json:
        print_json(p.to_dict())
        return 0
    print(f"{p.model} on {p.chip}, {p.chips} chip(s)  ({p.precision} weights, {p.kv_precision} KV)")
    print(f"  batch {p.batch}, context {p.ctx}, prompt {p.prompt}")
    print(f"  TTFT            {p.ttft_ms:10.2f} ms   (request {p.request_ms:.1f} ms + prefill {p.prefill_ms:.2f} ms, "
          f"{p.prefill_bound}-bound, + first-token step)")
    print(f"  decode step     {p.decode_step_ms:10.3f} ms   ({p.bound}-bound)")
    print(f"  tokens/s/seq    {p.tokens_per_s_per_seq:10.1f}")
    print(f"  tokens/s total  {p.tokens_per_s_total:10.1f}")
    print(f"  memory          {p.weight_gb:10.1f} GB weights + {p.kv_gb:.2f} GB KV; needs {p.chips_needed} chip(s)")
    parts = ", ".join(f"{k} {v:.3f}" for k, v in p.breakdown_ms.items())
    print(f"  step breakdown  {parts} (ms)")
    if p.calibration:
        print(f"  calibrated from {p.calibration}")
    return 0


@_friendly
def cmd_chips(args: argparse.Namespace) -> int:
    from hwmodel.chips import load_catalog

    cat = load_catalog()
    chips = sorted({c.name: c for c in cat.chips.values()}.values(), key=lambda c: c.name)
    systems = sorted({s.name: s for s in cat.systems.values()}.values(), key=lambda s: s.name)
    if args.json:
        print_json({
            "chips": [{"name": c.name, "kind": c.kind, "family": c.family, "mem_gb": c.mem_gb,
                       "mem_bw_gbs": c.mem_bw_gbs, "bf16_tflops": c.bf16_tflops, "fp8_tflops": c.fp8_tflops,
                       "link": c.link, "source": c.source} for c in chips]
            + [{"name": "local", "kind": "cpu", "source": "measured by `spark hw probe`"}],
            "systems": [{"name": s.name, "chip": s.chip, "count": s.count, "source": s.source} for s in systems],
        })
        return 0
    print(f"{'chip':12} {'kind':6} {'memory':>9} {'bandwidth':>12} {'bf16 TFLOPS':>12}  link")
    for c in chips:
        print(f"{c.name:12} {c.kind:6} {c.mem_gb:7.0f}GB {c.mem_bw_gbs / 1000:9.1f}TB/s {c.bf16_tflops:12,.0f}  {c.link}")
    print(f"{'local':12} {'cpu':6}  measured by `spark hw probe`")
    print()
    for s in systems:
        print(f"{s.name:12} {s.count} x {s.chip}")
    return 0


@_friendly
def cmd_models(args: argparse.Namespace) -> int:
    from hwmodel.models import load_models

    models = sorted({m.name: m for m in load_models().values()}.values(), key=lambda m: m.name)
    rows = [{"name": m.name, "params_b": round(m.total_params / 1e9, 2),
             "active_params_b": round(m.active_params / 1e9, 2), "layers": m.layers, "hidden": m.hidden,
             "heads": m.heads, "kv_heads": m.kv_heads, "moe": m.is_moe,
             "kv_kb_per_token_bf16": round(m.kv_elems_per_token() * 2 / 1024, 1),
             "aliases": list(m.aliases), "source": m.source} for m in models]
    if args.json:
        print_json({"models": rows})
        return 0
    print(f"{'model':28} {'params':>8} {'active':>8} {'layers':>6} {'hidden':>6} {'KV KB/tok':>9}")
    for r in rows:
        print(f"{r['name']:28} {r['params_b']:7.1f}B {r['active_params_b']:7.1f}B {r['layers']:6} "
              f"{r['hidden']:6} {r['kv_kb_per_token_bf16']:9.1f}")
    return 0


def _sweep_values(args: argparse.Namespace) -> list[int]:
    if args.values:
        try:
            values = [int(v) for v in args.values.split(",") if v.strip()]
        except ValueError:
            raise CliError(f"--values must be comma-separated integers, got {args.values!r}") from None
        if not values or min(values) < 1:
            raise CliError("--values must be positive integers")
        return values
    if args.over == "batch":
        return [1, 2, 4, 8, 16, 32, 64, 128]
    from hwmodel.models import get_model

    limit = get_model(args.model).max_ctx
    return [v for v in (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072) if v <= limit] or [limit]


@_friendly
def cmd_sweep(args: argparse.Namespace) -> int:
    from hwmodel.plot import bar_chart

    rows = []
    for v in _sweep_values(args):
        p = _predict(args, **{args.over: v})
        rows.append(p)
    if args.json:
        print_json({"over": args.over, "points": [p.to_dict() for p in rows]})
        return 0
    first = rows[0]
    print(f"{first.model} on {first.chip} ({first.precision}), sweeping {args.over}")
    print(f"{args.over:>8} {'chips':>5} {'fits':>5} {'step ms':>9} {'tok/s/seq':>10} {'tok/s total':>12} "
          f"{'TTFT ms':>9} {'KV GB':>8}  bound")
    for p in rows:
        v = getattr(p, args.over)
        print(f"{v:8} {p.chips:5} {p.fits!s:>5} {p.decode_step_ms:9.3f} {p.tokens_per_s_per_seq:10.1f} "
              f"{p.tokens_per_s_total:12.1f} {p.ttft_ms:9.2f} {p.kv_gb:8.2f}  {p.bound}")
    print()
    labels = [str(getattr(p, args.over)) for p in rows]
    print(bar_chart(labels, {"tokens/s per sequence": [p.tokens_per_s_per_seq for p in rows],
                             "tokens/s total": [p.tokens_per_s_total for p in rows]}))
    return 0


@_friendly
def cmd_calibrate(args: argparse.Namespace) -> int:
    from hwmodel.calibrate import calibrate, evaluate, load_points

    points = load_points(args.measured)
    doc = calibrate(points)
    out = Path(args.output)
    try:
        out.write_text(json.dumps(doc, indent=2) + "\n")
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc}") from exc
    checks = evaluate(points, doc)
    if args.json:
        print_json({**doc, "output": str(out), "checks": [
            {"chip": c.point.chip, "model": c.point.model, "phase": c.point.phase, "batch": c.point.batch,
             "length": c.point.length, "measured_ms": c.point.ms, "predicted_ms": round(c.predicted_ms, 4),
             "error_pct": round(c.error_pct, 2)} for c in checks]})
        return 0
    for chip, entry in doc["chips"].items():
        terms = ", ".join(f"{k}={v:.4g}" for k, v in entry["terms"].items())
        print(f"{chip}: {entry['points']} points, worst fit error {entry['fit_error_pct']}%\n  {terms}")
        for r in entry["residuals"]:
            print(f"  {r['model']:18} {r['phase']:7} batch {r['batch']:<3} length {r['length']:<6} "
                  f"measured {r['measured_ms']:9.3f} ms  fitted {r['fitted_ms']:9.3f} ms  "
                  f"{r['error_pct']:+6.1f}%  ({r['bound']}-bound)")
        for w in entry["warnings"]:
            print(f"  warning: {w}", file=sys.stderr)
    print(f"wrote {out}")
    return 0


@_friendly
def cmd_probe(args: argparse.Namespace) -> int:
    from hwmodel.probe import run_probe, single_thread_blas

    single = single_thread_blas()
    meas, checks = run_probe()
    if args.save:
        try:
            Path(args.save).write_text(json.dumps(meas.__dict__, indent=2) + "\n")
        except OSError as exc:
            raise CliError(f"cannot write {args.save}: {exc}") from exc
    if args.json:
        print_json({"measured": meas.__dict__, "single_thread_blas": single, "checks": [
            {"model": c.model, "batch": c.batch, "ctx": c.ctx, "predicted_ms": round(c.predicted_ms, 4),
             "measured_ms": round(c.measured_ms, 4), "error_pct": round(c.error_pct, 2)} for c in checks]})
        return 0
    print(f"this machine (numpy fp32{', one BLAS thread' if single else ''}):")
    print(f"  streaming bandwidth {meas.mem_bw_gbs:8.2f} GB/s   matmul {meas.fp32_tflops * 1000:8.1f} GFLOP/s")
    print(f"  fixed cost          {meas.layer_us:8.1f} us/layer + {meas.step_us:.1f} us/step")
    print(f"{'shape':12} {'batch':>5} {'ctx':>6} {'predicted ms':>13} {'measured ms':>12} {'error':>8}")
    for c in checks:
        print(f"{c.model:12} {c.batch:5} {c.ctx:6} {c.predicted_ms:13.3f} {c.measured_ms:12.3f} {c.error_pct:+7.1f}%")
    return 0


@_friendly
def cmd_check(args: argparse.Namespace) -> int:
    from hwmodel.reference import DEFAULT_PATH, check_all

    checks, skipped = check_all(args.reference or DEFAULT_PATH)
    if args.json:
        print_json({"checks": [{**c.row, "mapped_chip": c.chip, "mapped_model": c.model,
                                "mapped_precision": c.precision, "predicted": round(c.predicted, 3),
                                "error_pct": round(c.error_pct, 1)} for c in checks],
                    "skipped": [{**r, "reason": why} for r, why in skipped]})
        return 0
    print(f"{'system':10} {'n':>2} {'model':26} {'prec':5} {'metric':21} {'published':>10} {'predicted':>10} {'error':>8}")
    for c in checks:
        n = c.row.get("chips", "")
        print(f"{c.row['system'][:10]:10} {n!s:>2} {c.model[:26]:26} {c.precision:5} {c.row['metric'][:21]:21} "
              f"{c.value:10.2f} {c.predicted:10.2f} {c.error_pct:+7.1f}%  {c.row.get('kind', '')}")
    for row, why in skipped:
        print(f"skipped {row.get('system')} {row.get('model')}: {why}")
    return 0
