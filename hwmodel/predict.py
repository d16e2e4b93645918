"""predict(): time to first token, decode step, tokens/s and memory fit for one configuration.

The core's pacing calls this per stream (batch = concurrent streams), so it is plain
arithmetic over cached specs: well under a millisecond per call.

TTFT = request overhead + prefill + one step's fixed cost to sample and emit the first token.
`prefill_ms` stays the pure forward pass (what a harness times); `request_ms` is the serving path
before it (API gateway, tokenizer, scheduler admission, first streamed chunk): 0 for a bare chip,
an assumed 30 ms for served systems (cs-3, 8x GPU nodes), overridable per call. Queueing behind
other users' requests and the user's network distance are outside the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hwmodel.calibration import apply_calibration
from hwmodel.chips import ChipSpec, parallel_mode, request_overhead_ms, resolve
from hwmodel.errors import HwModelError
from hwmodel.models import ModelSpec, get_model
from hwmodel.precision import Precision, get_precision, kv_bytes
from hwmodel.work import build_work, time_of

MAX_CHIPS = 64
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)


@dataclass
class Prediction:
    chip: str
    model: str
    batch: int
    ctx: int
    prompt: int
    precision: str
    kv_precision: str
    chips: int
    prefill_ms: float
    ttft_ms: float
    decode_step_ms: float
    tokens_per_s_per_seq: float
    tokens_per_s_total: float
    weight_gb: float
    kv_gb: float
    fits: bool
    chips_needed: int
    bound: str
    prefill_bound: str
    calibration: str | None = None
    request_ms: float = 0.0
    breakdown_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def memory_need(model: ModelSpec, prec: Precision, kvb: float, batch: int, ctx: int) -> tuple[float, float]:
    """(weight GB, KV GB) for the whole model and `batch` sequences of `ctx` tokens."""
    weight_gb = model.total_params * prec.bytes / 1e9
    kv_gb = batch * model.kv_elems_stored(ctx) * kvb / 1e9
    return weight_gb, kv_gb


def fits_on(chip: ChipSpec, model: ModelSpec, n: int, weight_gb: float, kv_gb: float) -> bool:
    """Weights split n ways; KV split by KV head (replicated past the KV head count)."""
    per_chip = weight_gb / n + kv_gb / min(n, model.kv_heads if chip.kind != "wafer" else n)
    return per_chip <= chip.mem_gb * chip.usable_mem


def chips_needed(chip: ChipSpec, model: ModelSpec, weight_gb: float, kv_gb: float) -> int:
    """Fewest chips that hold it: GPUs in tensor-parallel sizes (powers of two), wafers any count."""
    counts = GPU_COUNTS if chip.kind != "wafer" else range(1, MAX_CHIPS + 1)
    for n in counts:
        if fits_on(chip, model, n, weight_gb, kv_gb):
            return n
    raise HwModelError(
        f"{model.name} ({weight_gb:.1f} GB weights + {kv_gb:.1f} GB KV) does not fit on "
        f"{MAX_CHIPS} x {chip.name} ({chip.mem_gb:g} GB each)"
    )


def _check_shape(model: ModelSpec, batch: int, ctx: int, prompt: int, chips: int | None) -> None:
    for label, value in (("batch", batch), ("ctx", ctx), ("prompt", prompt)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise HwModelError(f"{label} must be a positive integer, got {value!r}")
    if max(ctx, prompt) > model.max_ctx:
        raise HwModelError(
            f"context {max(ctx, prompt)} exceeds {model.name}'s maximum of {model.max_ctx} tokens"
        )
    if chips is not None and (not isinstance(chips, int) or chips < 1 or chips > MAX_CHIPS):
        raise HwModelError(f"chips must be an integer from 1 to {MAX_CHIPS}, got {chips!r}")


def predict(
    chip: str,
    model: str,
    *,
    batch: int = 1,
    ctx: int = 1024,
    prompt: int = 1024,
    precision: str = "bf16",
    kv_precision: str | None = None,
    chips: int | None = None,
    calibration: dict | str | Path | None = None,
    request_ms: float | None = None,
) -> Prediction:
    """Predict one configuration; `chips=None` uses the system's count or the fewest that fit.

    An explicit `chips` that cannot hold the model gives `fits=False` (timings then assume the
    memory were there); no count up to 64 holding it raises HwModelError. `request_ms=None`
    takes the chip's or system's serving overhead (0 for a bare chip).
    """
    spec, system_count = resolve(chip)
    mspec = get_model(model)
    _check_shape(mspec, batch, ctx, prompt, chips)
    prec = get_precision(precision)
    kvb = kv_bytes(kv_precision, prec)
    spec, calib_from = apply_calibration(spec, calibration)
    weight_gb, kv_gb = memory_need(mspec, prec, kvb, batch, max(ctx, prompt))
    needed = chips_needed(spec, mspec, weight_gb, kv_gb)
    n = chips or system_count or needed
    if spec.kind != "wafer" and parallel_mode(chip) == "tensor" and n > mspec.heads:
        raise HwModelError(f"tensor parallel over {n} chips exceeds {mspec.name}'s {mspec.heads} heads")
    fits = fits_on(spec, mspec, n, weight_gb, kv_gb)
    mode = parallel_mode(chip)

    decode = time_of(build_work(spec, mspec, prec, kvb, "decode", batch, ctx, n, mode), spec)
    prefill = time_of(build_work(spec, mspec, prec, kvb, "prefill", batch, prompt, n, mode), spec)
    request = request_overhead_ms(chip) if request_ms is None else request_ms
    if not isinstance(request, (int, float)) or isinstance(request, bool) or not 0 <= request < 1e6:
        raise HwModelError(f"request_ms must be a non-negative number of milliseconds, got {request!r}")
    request = float(request)
    step_ms = decode.total_s * 1e3
    prefill_ms = prefill.total_s * 1e3
    per_seq = 1e3 / step_ms
    return Prediction(
        chip=chip,
        model=model,
        batch=batch,
        ctx=ctx,
        prompt=prompt,
        precision=prec.name,
        kv_precision=kv_precision or ("fp32" if prec.name == "fp32" else "bf16"),
        chips=n,
        prefill_ms=prefill_ms,
        ttft_ms=request + prefill_ms + spec.step_us * 1e-3,
        decode_step_ms=step_ms,
        tokens_per_s_per_seq=per_seq,
        tokens_per_s_total=per_seq * batch,
        weight_gb=weight_gb,
        kv_gb=kv_gb,
        fits=fits,
        chips_needed=needed,
        bound=decode.bound,
        prefill_bound=prefill.bound,
        calibration=calib_from,
        request_ms=request,
        breakdown_ms={
            "memory": decode.memory_s * 1e3,
            "compute": decode.compute_s * 1e3,
            "overhead": decode.overhead_s * 1e3,
            "interconnect": decode.interconnect_s * 1e3,
        },
    )
