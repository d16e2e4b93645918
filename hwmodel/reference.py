"""Compare predictions with published figures (shared/reference/hw_public.jsonl).

Each row names a system, model, precision and one metric; we map the names onto our specs,
predict, and report the relative error. Rows whose system or model has no published shape
(the seeds' GPT-5.3 models) are compared through the stand-ins in standins.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hwmodel.chips import system_for
from hwmodel.errors import HwModelError
from hwmodel.predict import predict
from hwmodel.standins import BASE, SPARK

# The team's shared/reference copy when the checkout sits beside it (CI does), else the copy
# shipped in the package (same public figures, each with its source), so a plain clone works.
SHARED_PATH = Path(__file__).resolve().parents[2] / "shared" / "reference" / "hw_public.jsonl"
PACKAGED_PATH = Path(__file__).resolve().parent / "specs" / "public_figures.jsonl"
DEFAULT_PATH = SHARED_PATH if SHARED_PATH.is_file() else PACKAGED_PATH

MODEL_NAMES = {"13b (40 layers, d_model 5120)": "gpt-13b"}
STANDIN_MODELS = {"gpt-5.3-codex-spark": SPARK, "gpt-5.3-codex": BASE}


@dataclass(frozen=True)
class RefCheck:
    row: dict
    chip: str
    model: str
    precision: str
    predicted: float
    note: str = ""

    @property
    def value(self) -> float:
        return float(self.row["value"])

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.predicted - self.value) / self.value


def _precision(text: str) -> str:
    t = text.lower()
    for key in ("int4", "int8", "fp8", "fp16", "bf16"):
        if key in t:
            # "bf16/fp8 weights": the smaller format is what is served
            return "fp8" if "fp8" in t else key
    return "bf16"


def map_row(row: dict) -> tuple[str, str, str, int | None, str]:
    """(chip, model, precision, chips, note) for a reference row; HwModelError if unmappable."""
    model_text = str(row.get("model", ""))
    base_name = model_text.split(" (")[0].strip()
    if base_name in STANDIN_MODELS:
        s = STANDIN_MODELS[base_name]
        return s.chip, s.model, s.precision, None, f"stand-in: {s.model} {s.precision} on {s.chip}"
    model = MODEL_NAMES.get(model_text, base_name)
    chips = row.get("chips")
    system = str(row["system"])
    note = ""
    if chips and chips > 1 and "parallel" not in row:
        # a rig of several chips with no parallelism stated: use the named system, which
        # says how such rigs split the model (the 8x RTX 3090 home rig: llama.cpp layer split)
        named = system_for(system, int(chips))
        if named:
            system, chips, note = named, None, f"as system {named}"
    return system, model, _precision(str(row.get("precision", "bf16"))), chips, note


def check_row(row: dict) -> RefCheck:
    chip, model, precision, chips, note = map_row(row)
    batch = int(row.get("batch", 1))
    ctx = int(row.get("ctx", row.get("prompt", 1024)))
    prompt = int(row.get("prompt", row.get("ctx", 1024)))
    p = predict(chip, model, batch=batch, ctx=ctx, prompt=prompt, precision=precision, chips=chips)
    metric = row["metric"]
    values = {
        "tokens_per_s_per_seq": p.tokens_per_s_per_seq,
        "decode_step_ms": p.decode_step_ms,
        "prefill_ms": p.prefill_ms,
        "prefill_tokens_per_s": batch * prompt / p.prefill_ms * 1e3,
        "ttft_ms": p.ttft_ms,
    }
    if metric not in values:
        raise HwModelError(f"unknown metric {metric!r}")
    return RefCheck(row, chip, p.model, precision, values[metric], note)


def load_rows(path: str | Path = DEFAULT_PATH) -> list[dict]:
    try:
        return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise HwModelError(f"cannot read reference figures {path}: {exc}") from exc


def check_all(path: str | Path = DEFAULT_PATH) -> tuple[list[RefCheck], list[tuple[dict, str]]]:
    """(checks, skipped rows with the reason)."""
    checks, skipped = [], []
    for row in load_rows(path):
        try:
            checks.append(check_row(row))
        except HwModelError as exc:
            skipped.append((row, str(exc)))
    return checks, skipped
