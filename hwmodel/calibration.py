"""Calibration files: read them (cached) and apply a chip's fitted terms, or a sibling's.

Format (written by `spark hw calibrate`):
    {"version": 1, "chips": {"h100-sxm": {"family": "hopper", "terms": {"mem_eff": 0.82, ...},
                                          "points": 4, "fit_error_pct": 3.1}}}
A chip with no entry of its own reuses the entry of a chip of the same family (H100 -> H200):
the terms are kernel efficiencies and fixed overheads, the peaks come from the target's specs.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from hwmodel.chips import TERMS, ChipSpec
from hwmodel.errors import HwModelError


@lru_cache(maxsize=32)
def _read(path: str, mtime_ns: int) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise HwModelError(f"cannot read calibration {path}: {exc}") from exc
    return validate(data, path)


def validate(data: object, where: str = "calibration") -> dict:
    if not isinstance(data, dict) or not isinstance(data.get("chips"), dict):
        raise HwModelError(f"{where}: expected an object with a 'chips' table")
    for name, entry in data["chips"].items():
        terms = entry.get("terms") if isinstance(entry, dict) else None
        if not isinstance(terms, dict):
            raise HwModelError(f"{where}: chip {name!r} has no 'terms' object")
        for key, value in terms.items():
            if key not in TERMS:
                raise HwModelError(f"{where}: chip {name!r} has unknown term {key!r}")
            if not isinstance(value, (int, float)) or value < 0 or (key.endswith("eff") and value == 0):
                raise HwModelError(f"{where}: chip {name!r} term {key} = {value!r} is not valid")
    return data


def load_calibration(calibration: dict | str | Path) -> dict:
    if isinstance(calibration, dict):
        return validate(calibration)
    path = Path(calibration)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise HwModelError(f"cannot read calibration {path}: {exc}") from exc
    return _read(str(path.resolve()), mtime)


def apply_calibration(chip: ChipSpec, calibration: dict | str | Path | None) -> tuple[ChipSpec, str | None]:
    """(chip with fitted terms, name of the chip whose calibration was used or None)."""
    if calibration is None:
        return chip, None
    table = load_calibration(calibration)["chips"]
    if chip.name in table:
        return chip.with_terms(**table[chip.name]["terms"]), chip.name
    for name, entry in table.items():
        if chip.family and entry.get("family") == chip.family:
            return chip.with_terms(**entry["terms"]), name
    return chip, None
