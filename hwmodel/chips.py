"""Chips and systems as data: load `specs/chips.toml` into dataclasses, resolve names.

A *system* is a chip, a count and the link between them; `resolve()` turns either name into
(chip spec, default count) so predict() treats "8x-h100" and predict("h100-sxm", chips=8) alike.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from hwmodel.errors import HwModelError

SPEC_DIR = Path(__file__).parent / "specs"

# Terms calibration may fit; everything else in a spec is a published figure.
TERMS = ("mem_eff", "compute_eff", "layer_us", "prefill_layer_us", "step_us", "prefill_step_us",
         "kv_eff", "eager_decode")


@dataclass(frozen=True)
class ChipSpec:
    """One accelerator (or this machine): peaks from the datasheet, efficiency terms fitted."""

    name: str
    kind: str  # "gpu", "wafer" or "cpu"
    mem_gb: float
    mem_bw_gbs: float
    bf16_tflops: float
    family: str = ""
    fp16_tflops: float = 0.0
    fp8_tflops: float = 0.0
    int8_tflops: float = 0.0
    fp4_tflops: float = 0.0
    fp32_tflops: float = 0.0
    link: str = "none"
    link_gbs: float = 0.0
    link_latency_us: float = 0.0
    mem_eff: float = 0.83
    kv_eff: float = 0.0  # decode KV streaming; 0 = same as mem_eff
    compute_eff: float = 0.55
    layer_us: float = 60.0
    prefill_layer_us: float = 250.0
    step_us: float = 150.0
    prefill_step_us: float = 5000.0
    eager_decode: float = 0.0  # 1: decode is host-launched like prefill (no CUDA graphs)
    usable_mem: float = 0.90
    # Per-request serving time before the first token beyond the forward pass (API gateway,
    # tokenization, scheduler admission, first streamed chunk). 0 = a bare engine timed directly.
    request_ms: float = 0.0
    source: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)

    def peak_tflops(self, compute_dtype: str) -> float:
        """Dense peak for the dtype the matmuls run in (falls back to bf16 when unlisted)."""
        value = getattr(self, f"{compute_dtype}_tflops", 0.0)
        return value or self.bf16_tflops

    def with_terms(self, **terms: float) -> ChipSpec:
        """A copy with calibrated efficiency/overhead terms (unknown keys rejected)."""
        bad = set(terms) - set(TERMS)
        if bad:
            raise HwModelError(f"calibration has unknown terms {sorted(bad)}")
        values: dict[str, Any] = {k: float(v) for k, v in terms.items()}
        return dataclasses.replace(self, **values)


@dataclass(frozen=True)
class SystemSpec:
    name: str
    chip: str
    count: int
    parallel: str = "tensor"  # or "pipeline": layers split across chips (llama.cpp-style rigs)
    request_ms: float | None = None  # served system's per-request overhead; None = the chip's
    source: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Catalog:
    chips: dict[str, ChipSpec]
    systems: dict[str, SystemSpec]


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


@cache
def load_catalog(path: str | None = None) -> Catalog:
    """Parse chips.toml once per process (predict() is called per stream by the core)."""
    file = Path(path) if path else SPEC_DIR / "chips.toml"
    raw = tomllib.loads(file.read_text())
    defaults = raw.get("defaults", {})
    chips: dict[str, ChipSpec] = {}
    for name, table in raw.get("chips", {}).items():
        data = {**defaults.get(table.get("kind", "gpu"), {}), **table}
        unknown = set(data) - _fields(ChipSpec)
        if unknown:
            raise HwModelError(f"chip {name!r}: unknown keys {sorted(unknown)} in chips.toml")
        data["aliases"] = tuple(data.get("aliases", ()))
        spec = ChipSpec(name=name, **data)
        chips[name] = spec
        for alias in spec.aliases:
            chips[alias] = spec
    systems: dict[str, SystemSpec] = {}
    for name, table in raw.get("systems", {}).items():
        data = dict(table)
        data["aliases"] = tuple(data.get("aliases", ()))
        sys_spec = SystemSpec(name=name, **data)
        if sys_spec.chip not in chips:
            raise HwModelError(f"system {name!r} names unknown chip {sys_spec.chip!r}")
        if sys_spec.parallel not in ("tensor", "pipeline"):
            raise HwModelError(f"system {name!r}: parallel must be 'tensor' or 'pipeline'")
        systems[name] = sys_spec
        for alias in sys_spec.aliases:
            systems[alias] = sys_spec
    return Catalog(chips=chips, systems=systems)


def chip_names() -> list[str]:
    cat = load_catalog()
    return sorted({c.name for c in cat.chips.values()}) + ["local"]


def system_names() -> list[str]:
    return sorted({s.name for s in load_catalog().systems.values()})


def resolve(name: str) -> tuple[ChipSpec, int | None]:
    """Chip or system name -> (chip spec, the system's count or None for a bare chip)."""
    key = name.strip().lower().replace("_", "-").replace(" ", "-").removeprefix("nvidia-")
    if key == "local":
        from hwmodel.probe import local_chip

        return local_chip(), 1
    cat = load_catalog()
    if key in cat.chips:
        return cat.chips[key], None
    if key in cat.systems:
        system = cat.systems[key]
        return cat.chips[system.chip], system.count
    known = ", ".join(chip_names() + system_names())
    raise HwModelError(f"unknown chip or system {name!r}; known: {known}")


def parallel_mode(name: str) -> str:
    """How a system splits a model: "tensor" (default, and for bare chips) or "pipeline"."""
    system = load_catalog().systems.get(name.strip().lower())
    return system.parallel if system else "tensor"


def request_overhead_ms(name: str) -> float:
    """Per-request serving overhead before the first token for a chip or system name."""
    system = load_catalog().systems.get(name.strip().lower())
    if system is not None and system.request_ms is not None:
        return system.request_ms
    return resolve(name)[0].request_ms


def system_for(chip: str, count: int) -> str | None:
    """The named system made of `count` x `chip`, if the catalog has one."""
    spec, _ = resolve(chip)
    for system in load_catalog().systems.values():
        if system.chip == spec.name and system.count == count:
            return system.name
    return None
