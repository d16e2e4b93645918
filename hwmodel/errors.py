"""The one exception hwmodel raises for bad input, so callers can catch it without numpy."""

from __future__ import annotations


class HwModelError(ValueError):
    """Unknown chip or model, an impossible shape, or a model that cannot fit."""
