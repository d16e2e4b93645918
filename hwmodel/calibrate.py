"""Fit a chip's efficiency and overhead terms to a few measured points.

Measured lines (JSONL), as in the issue:
    {"chip": "h100-sxm", "model": "llama-3.1-8b", "phase": "decode", "batch": 1, "ctx": 1024, "step_ms": 8.2}
    {"chip": "h100-sxm", "model": "llama-3.1-8b", "phase": "prefill", "batch": 1, "prompt": 4096, "ms": 113.0}
optional: precision, kv_precision, chips.

The physics (work.py) turns each point into seconds-at-peak; the duration is linear in
theta = (1/mem_eff, 1/compute_eff, layer_us, prefill_layer_us, step_us, prefill_step_us, 1/kv_eff) once each point's
branches (memory or compute; host or device for prefill) are known, so we alternate: pick branches with the current
theta, solve a weighted least-squares for theta, repeat. Residuals are relative (a 10% miss on
a 2 ms step counts as much as on a 500 ms prefill), and a weak prior pulls each term toward the
spec default so that four points (two decode, two prefill) determine seven terms sensibly (terms the points cannot
see, such as kv_eff without a long-context or large-batch point, stay at their defaults).
The least squares is bounded (efficiencies within physical ranges, overheads non-negative and
capped) so an odd set of points cannot hide host time in a 20%-of-peak bandwidth; duplicate
points are merged, impossible (faster than peak) and unfittable sets are refused with a message
that names the point, and the result carries every point's residual and any warnings.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwmodel.chips import ChipSpec, parallel_mode, resolve
from hwmodel.errors import HwModelError
from hwmodel.models import get_model
from hwmodel.precision import get_precision, kv_bytes
from hwmodel.work import ROOFLINE_BLEND, Work, build_work, host_bound, time_of

PRIOR_WEIGHT = 0.1
ITERATIONS = 12
# Bounds on theta = (1/mem_eff, 1/compute_eff, layer_us, prefill_layer_us, step_us,
# prefill_step_us, 1/kv_eff). Real kernels reach 40-100% of peak bandwidth and 20-100% of peak
# FLOPs; a fit that wants less is explaining something else (host time, a wrong chip) and must
# not hide it in an efficiency. Overheads are non-negative and below 2 ms (device, per layer),
# 5 ms (host, per layer), 50 ms (per step) and 100 ms (host, per pass).
THETA_LO = (1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
THETA_HI = (1 / 0.4, 1 / 0.2, 2000.0, 5000.0, 50000.0, 100000.0, 1 / 0.2)
THETA_NAMES = ("mem_eff", "compute_eff", "layer_us", "prefill_layer_us", "step_us", "prefill_step_us", "kv_eff")
FIT_WARN_PCT = 15.0  # a fitted point off by more than this is reported
FIT_FAIL_PCT = 50.0  # the model cannot describe these points: refuse rather than write nonsense
PEAK_SLACK = 0.9  # a point faster than 90% of the time at 100% of peak is impossible
DUPLICATE_SPREAD = 0.25  # repeated measurements of one configuration that differ more: warn


@dataclass(frozen=True)
class Point:
    """One measured step: decode (`length` = ctx) or prefill (`length` = prompt)."""

    chip: str
    model: str
    phase: str
    batch: int
    length: int
    ms: float
    precision: str = "bf16"
    kv_precision: str | None = None
    chips: int | None = None


def parse_point(obj: dict, where: str = "") -> Point:
    """Validate one measured line; errors name the line so a bad file loses nothing silently."""
    try:
        phase = obj["phase"]
        if phase == "decode":
            length, ms = int(obj["ctx"]), float(obj["step_ms"])
        elif phase == "prefill":
            length, ms = int(obj["prompt"]), float(obj["ms"])
        else:
            raise HwModelError(f"{where}phase must be 'decode' or 'prefill', got {phase!r}")
        point = Point(str(obj["chip"]), str(obj["model"]), phase, int(obj.get("batch", 1)), length, ms,
                      str(obj.get("precision", "bf16")), obj.get("kv_precision"), obj.get("chips"))
        resolve(point.chip)
        get_model(point.model)
        get_precision(point.precision)
    except KeyError as exc:
        raise HwModelError(f"{where}missing field {exc.args[0]!r}") from exc
    except HwModelError as exc:
        raise HwModelError(f"{where}{exc}") from exc
    except (TypeError, ValueError) as exc:
        raise HwModelError(f"{where}bad value: {exc}") from exc
    if point.ms <= 0 or point.batch < 1 or point.length < 1:
        raise HwModelError(f"{where}times, batch and lengths must be positive")
    return point


def load_points(path: str | Path) -> list[Point]:
    points = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise HwModelError(f"cannot read {path}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HwModelError(f"{path}:{number}: not JSON: {exc.msg}") from exc
        points.append(parse_point(obj, f"{path}:{number}: "))
    if not points:
        raise HwModelError(f"{path}: no measured points")
    return points


def point_work(point: Point, chip: ChipSpec | None = None) -> tuple[ChipSpec, Work]:
    spec, system_count = resolve(point.chip)
    spec = chip or spec
    model = get_model(point.model)
    prec = get_precision(point.precision)
    n = point.chips or system_count or 1
    work = build_work(spec, model, prec, kv_bytes(point.kv_precision, prec), point.phase,
                      point.batch, point.length, n, parallel_mode(point.chip))
    return spec, work


def _theta0(chip: ChipSpec) -> list[float]:
    return [1 / chip.mem_eff, 1 / chip.compute_eff, chip.layer_us, chip.prefill_layer_us, chip.step_us,
            chip.prefill_step_us, 1 / (chip.kv_eff or chip.mem_eff)]


def _terms(theta, eager_decode: bool) -> dict[str, float]:
    return {
        "mem_eff": float(1 / theta[0]),
        "compute_eff": float(1 / theta[1]),
        "layer_us": float(theta[2]),
        "prefill_layer_us": float(theta[3]),
        "step_us": float(theta[4]),
        "prefill_step_us": float(theta[5]),
        "kv_eff": float(1 / theta[6]),
        "eager_decode": 1.0 if eager_decode else 0.0,
    }


def _host_bound_possible(w: Work, eager_decode: bool) -> bool:
    return w.phase == "prefill" or eager_decode


def _rows(points: list[Point], works: list[Work], branches, theta0, eager_decode: bool):
    """Design matrix and targets (relative residuals) for one choice of branches per point:
    (memory-bound?, host-bound?). The duration is linear in theta once those are fixed."""
    rows, target = [], []
    for p, w, (memory, host) in zip(points, works, branches):
        g = ROOFLINE_BLEND
        device = [(w.mem_s if memory else g * w.mem_s) + w.elem_s, g * w.compute_s if memory else w.compute_s,
                  w.layers * 1e-6, 0.0, 1e-6, 0.0, w.kv_s if memory else g * w.kv_s]
        launch = [0.0, 0.0, 0.0, w.host_units * 1e-6, 0.0, 1e-6, 0.0]
        row, comm = (launch, 0.0) if host else (device, w.comm_s)
        t = p.ms * 1e-3
        rows.append([v / t for v in row])
        target.append((t - comm) / t)
    for i, v in enumerate(theta0):
        prior = [0.0] * 7
        prior[i] = PRIOR_WEIGHT / v
        rows.append(prior)
        target.append(PRIOR_WEIGHT)
    return rows, target


def bounded_lstsq(a, b, lo, hi, iterations: int = 30):
    """min |a x - b| with lo <= x <= hi: an active-set method (numpy only; no scipy here).

    Solve on the free variables, pin the worst violator at its bound, and release a pinned
    variable when the gradient says the loss falls by moving it inward. Small problems only.
    """
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    x = np.clip(np.linalg.lstsq(a, b, rcond=None)[0], lo, hi)
    pinned = np.zeros(len(x), bool)
    for _ in range(iterations):
        free = ~pinned
        if free.any():
            rhs = b - a[:, pinned] @ x[pinned]
            sol = np.linalg.lstsq(a[:, free], rhs, rcond=None)[0]
            trial = x.copy()
            trial[free] = sol
            over = np.maximum(lo - trial, trial - hi)
            over[pinned] = 0.0
            if over.max() > 1e-12 * max(1.0, np.abs(trial).max()):
                i = int(np.argmax(over))
                x[free] = np.clip(sol, lo[free], hi[free])
                x[i] = lo[i] if trial[i] < lo[i] else hi[i]
                pinned[i] = True
                continue
            x = trial
        grad = a.T @ (a @ x - b)
        release = pinned & (((x <= lo) & (grad < 0)) | ((x >= hi) & (grad > 0)))
        if not release.any():
            break
        pinned[int(np.argmax(np.where(release, np.abs(grad), -1.0)))] = False
    return np.clip(x, lo, hi)


def _solve(points, works, branches, theta0, eager_decode: bool):
    rows, target = _rows(points, works, branches, theta0, eager_decode)
    return bounded_lstsq(rows, target, THETA_LO, THETA_HI)


def _objective(points, works, base: ChipSpec, theta, theta0, eager_decode: bool) -> float:
    """The true loss: relative errors of the real max() model plus the prior."""
    chip = base.with_terms(**_terms(theta, eager_decode))
    loss = sum(((time_of(w, chip).total_s * 1e3 - p.ms) / p.ms) ** 2 for p, w in zip(points, works))
    return loss + sum((PRIOR_WEIGHT * (t / t0 - 1)) ** 2 for t, t0 in zip(theta, theta0))


def _branches_of(works, theta, eager_decode: bool, base: ChipSpec):
    """The branches the real model takes at `theta`: (memory-bound?, host-bound?) per point."""
    chip = base.with_terms(**_terms(theta, eager_decode))
    out = []
    for w in works:
        memory = w.mem_s / chip.mem_eff + w.kv_s / chip.kv_eff >= w.compute_s / chip.compute_eff
        host = _host_bound_possible(w, eager_decode) and host_bound(w, chip)
        out.append((memory, host))
    return tuple(out)


def _candidates(points, works, eager_decode: bool, theta0, base: ChipSpec):
    """Branch assignments to try: all of them for a handful of points, else those reached by
    alternating (branches -> least squares -> branches) from a few starting guesses."""
    options = [[(m, h) for m in (True, False)
                for h in ((False, True) if _host_bound_possible(w, eager_decode) else (False,))]
               for w in works]
    total = 1
    for o in options:
        total *= len(o)
    if total <= 4096:
        yield from itertools.product(*options)
        return
    for scale in (1.0, 4.0, 0.25):
        theta = list(theta0)
        theta[3] *= scale
        theta[5] *= scale
        seen = set()
        for _ in range(ITERATIONS):
            branches = _branches_of(works, theta, eager_decode, base)
            if branches in seen:
                break
            seen.add(branches)
            yield branches
            theta = _solve(points, works, branches, theta0, eager_decode)


def fit_chip(points: list[Point]) -> dict:
    """Terms for the one chip these points share, plus the fit's own error.

    Two engine shapes are tried: decode replayed from a CUDA graph (no host cost) and eager
    decode (host-launched like prefill, e.g. Hugging Face generate); the better fit wins.
    """
    names = {resolve(p.chip)[0].name for p in points}
    if len(names) != 1:
        raise HwModelError(f"fit_chip needs points of one chip, got {sorted(names)}")
    if not points:
        raise HwModelError("no measured points to fit")
    points, warnings = merge_duplicates(points)
    base, _ = resolve(points[0].chip)
    works = [point_work(p)[1] for p in points]
    _check_physical(points, works, base)
    if len(points) < 4:
        warnings.append(f"only {len(points)} distinct point(s): terms they cannot see stay at the spec defaults")
    phases = {p.phase for p in points}
    if len(phases) == 1:
        other = "prefill" if "decode" in phases else "decode"
        warnings.append(f"{next(iter(phases))} points only: the {other} terms stay at the spec defaults")
    theta0 = [min(max(t, lo), hi) for t, lo, hi in zip(_theta0(base), THETA_LO, THETA_HI)]
    best: tuple[float, list[float], bool] | None = None
    for eager in (False, True):
        for branches in _candidates(points, works, eager, theta0, base):
            theta = _solve(points, works, branches, theta0, eager)
            loss = _objective(points, works, base, theta, theta0, eager)
            if best is None or loss < best[0]:
                best = (loss, theta, eager)
    if best is None:
        raise HwModelError(f"cannot fit {base.name}: no candidate solution")
    _, theta, eager = best
    terms = _terms(theta, eager)
    chip = base.with_terms(**terms)
    residuals: list[dict[str, Any]] = []
    for p, w in zip(points, works):
        t = time_of(w, chip)
        residuals.append({"model": p.model, "phase": p.phase, "batch": p.batch, "length": p.length,
                          "measured_ms": p.ms, "fitted_ms": round(t.total_s * 1e3, 4),
                          "error_pct": round(100 * (t.total_s * 1e3 - p.ms) / p.ms, 2), "bound": t.bound})
    worst = max(residuals, key=lambda r: abs(r["error_pct"]))
    where = f"{worst['model']} {worst['phase']} batch {worst['batch']} length {worst['length']}"
    if abs(worst["error_pct"]) > FIT_FAIL_PCT:
        raise HwModelError(
            f"cannot fit {base.name}: even the best bounded terms miss {where} by {worst['error_pct']:+.0f}% "
            f"({worst['fitted_ms']:.3g} vs {worst['measured_ms']:.3g} ms). The points may mix engines, hosts "
            f"or precisions, or name the wrong chip or model; fit them separately.")
    if abs(worst["error_pct"]) > FIT_WARN_PCT:
        warnings.append(f"{where} is fitted {worst['error_pct']:+.0f}% off: the model cannot describe every point")
    if not any(host_bound(w, chip) for w in works) and "prefill" in phases:
        warnings.append("no point is host-bound: the host launch terms (prefill_layer_us, prefill_step_us) stay "
                        "near the eager-PyTorch defaults; add a short-prompt prefill to fit them")
    at_bounds = [name for name, v, lo, hi in zip(THETA_NAMES, theta, THETA_LO, THETA_HI)
                 if hi > lo and (v <= lo + 1e-9 * max(1, abs(lo)) or v >= hi * (1 - 1e-9))]
    pinned = [n for n in at_bounds if n not in ("layer_us", "prefill_layer_us", "step_us", "prefill_step_us")]
    if pinned:
        warnings.append(f"{', '.join(pinned)} pinned at the physical bound: the points ask for more than the "
                        "kernels can do (or less than they would); check chip, model and precision")
    return {
        "family": base.family,
        "terms": {k: round(v, 6) for k, v in terms.items()},
        "points": len(points),
        "fit_error_pct": round(max(abs(r["error_pct"]) for r in residuals), 2),
        "residuals": residuals,
        "at_bounds": at_bounds,
        "warnings": warnings,
    }


def _key(p: Point) -> tuple:
    return (p.model, p.phase, p.batch, p.length, p.precision, p.kv_precision, p.chips)


def merge_duplicates(points: list[Point]) -> tuple[list[Point], list[str]]:
    """Repeated measurements of one configuration become one point at their median, so a
    configuration measured five times does not outvote the others; a wide spread is reported."""
    import statistics

    groups: dict[tuple, list[Point]] = {}
    for p in points:
        groups.setdefault(_key(p), []).append(p)
    merged, warnings = [], []
    for key, group in groups.items():
        times = [p.ms for p in group]
        mid = statistics.median(times)
        if len(group) > 1 and (max(times) - min(times)) / mid > DUPLICATE_SPREAD:
            warnings.append(f"{key[0]} {key[1]} batch {key[2]} length {key[3]}: {len(group)} measurements "
                            f"from {min(times):.3g} to {max(times):.3g} ms; using the median {mid:.3g} ms")
        merged.append(group[0] if len(group) == 1 else dataclasses.replace(group[0], ms=mid))
    return merged, warnings


def _check_physical(points: list[Point], works: list[Work], chip: ChipSpec) -> None:
    """A point faster than the chip's peaks allow cannot be fitted by any efficiency <= 1:
    say so (wrong chip, precision or model) instead of returning nonsense terms."""
    for p, w in zip(points, works):
        floor_ms = (max(w.mem_s + w.kv_s, w.compute_s) + w.elem_s) * 1e3
        if p.ms < PEAK_SLACK * floor_ms:
            raise HwModelError(
                f"{p.model} {p.phase} batch {p.batch} length {p.length}: {p.ms:g} ms is faster than "
                f"{chip.name} can run it at 100% of peak ({floor_ms:.3g} ms); wrong chip, model or precision?")


def calibrate(points: list[Point]) -> dict:
    """A calibration document covering every chip that has points."""
    by_chip: dict[str, list[Point]] = {}
    for p in points:
        by_chip.setdefault(resolve(p.chip)[0].name, []).append(p)
    return {"version": 1, "chips": {name: fit_chip(pts) for name, pts in sorted(by_chip.items())}}


@dataclass(frozen=True)
class Check:
    point: Point
    predicted_ms: float

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.predicted_ms - self.point.ms) / self.point.ms


def evaluate(points: list[Point], calibration: dict | str | Path | None) -> list[Check]:
    """Predicted vs measured for each point, with the calibration applied (sibling transfer)."""
    from hwmodel.calibration import apply_calibration

    checks = []
    for p in points:
        spec, _ = resolve(p.chip)
        spec, _ = apply_calibration(spec, calibration)
        _, work = point_work(p, spec)
        checks.append(Check(p, time_of(work, spec).total_s * 1e3))
    return checks
