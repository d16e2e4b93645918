"""Number formats: bytes per weight or KV element, which peak the matmuls run at, and how well
real kernels stream each format.

Weight-only formats (int4) dequantize to bf16 in the kernel, so their matmuls run at the bf16
peak and their GEMVs reach a lower share of memory bandwidth (the dequantize work is not free:
llama.cpp's Q4 kernels on GeForce cards stream ~60-75% of peak versus ~85% for 16-bit).
"""

from __future__ import annotations

from dataclasses import dataclass

from hwmodel.errors import HwModelError


@dataclass(frozen=True)
class Precision:
    name: str
    bytes: float  # per weight, scales included
    compute: str  # dtype of the matmul: selects the chip's peak
    stream_eff: float = 1.0  # multiplier on the chip's mem_eff for GEMVs in this format


PRECISIONS: dict[str, Precision] = {
    "fp32": Precision("fp32", 4.0, "fp32"),
    "bf16": Precision("bf16", 2.0, "bf16"),
    "fp16": Precision("fp16", 2.0, "fp16"),
    "fp8": Precision("fp8", 1.0, "fp8"),
    "int8": Precision("int8", 1.0, "int8"),
    # 4-bit weights with one 16-bit scale per 32 weights (GGUF Q4 / GPTQ-style groups)
    "int4": Precision("int4", 0.5625, "bf16", stream_eff=0.75),
    # MXFP4 (gpt-oss): 4-bit values, one 8-bit scale per 32
    "fp4": Precision("fp4", 0.53125, "fp4", stream_eff=0.85),
}

KV_BYTES: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


def get_precision(name: str) -> Precision:
    key = name.strip().lower()
    if key not in PRECISIONS:
        raise HwModelError(f"unknown precision {name!r}; use one of {', '.join(PRECISIONS)}")
    return PRECISIONS[key]


def kv_bytes(name: str | None, weights: Precision) -> float:
    """KV element size: explicit, else 16-bit (fp32 when the weights are fp32)."""
    if name is None:
        return 4.0 if weights.name == "fp32" else 2.0
    key = name.strip().lower()
    if key not in KV_BYTES:
        raise HwModelError(f"unknown KV precision {name!r}; use one of {', '.join(KV_BYTES)}")
    return KV_BYTES[key]
