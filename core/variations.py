"""Variations: N answers to one prompt at once, compared side by side, one kept.

Why: "Generate 5-10 variations. Pick the best one. The cost of exploration is almost zero"
(seed 002). The cost is not zero: N streams share the chip, so each runs slower and the
batched prefill delays the first token. `predict_parallel_cost` asks hwmodel what N
parallel streams cost per stream, so the app can show it before the user asks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from core.errors import SparkError

DEFAULT_VARIATIONS = 4
MAX_VARIATIONS = 16


class VariationError(SparkError, ValueError):
    """A bad count or index."""


@dataclass(frozen=True)
class ParallelCost:
    n: int
    per_stream_tokens_per_s: float | None
    single_stream_tokens_per_s: float | None
    total_tokens_per_s: float | None
    per_stream_ratio: float | None  # per-stream speed at batch n / at batch 1 (<= 1)
    ttft_ms: float | None
    single_ttft_ms: float | None
    fits: bool | None
    bound: str | None
    source: str  # "hwmodel" or "fallback: <why>"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One status-line sentence, e.g. `4 streams: 1,650 tok/s each (92% of one)`."""
        if self.per_stream_tokens_per_s is None:
            return f"{self.n} streams: speed unknown ({self.source})"
        ratio = f" ({self.per_stream_ratio:.0%} of one)" if self.per_stream_ratio else ""
        return f"{self.n} streams: {self.per_stream_tokens_per_s:,.0f} tok/s each{ratio}"


def check_count(n: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_VARIATIONS:
        raise VariationError(f"variations: N must be 1..{MAX_VARIATIONS}, not {n!r}")
    return n


def predict_parallel_cost(chip: str | None, model: str | None, n: int, *,
                          precision: str | None = None, prompt: int = 1024, ctx: int = 2048,
                          fallback_tokens_per_s: float | None = None,
                          fallback_ttft_ms: float | None = None) -> ParallelCost:
    """Per-stream and total tokens/s for ``n`` parallel streams of one prompt, against one.

    Without hwmodel (or for a chip/model it does not know) the fallback assumes decode stays
    memory-bound at small batch, so per-stream speed is the profile's own rate unchanged;
    the `source` says so, and the app should show it as an estimate.
    """
    check_count(n)
    try:
        from hwmodel.predict import predict

        kw: dict[str, Any] = {"ctx": ctx, "prompt": prompt}
        if precision:
            kw["precision"] = precision
        if chip is None or model is None:
            raise ValueError("the profile names no chip/model")
        one = predict(chip, model, batch=1, **kw)
        many = predict(chip, model, batch=n, **kw)
        single, each = float(one.tokens_per_s_per_seq), float(many.tokens_per_s_per_seq)
        return ParallelCost(n, each, single, float(many.tokens_per_s_total),
                            each / single if single > 0 else None, float(many.ttft_ms),
                            float(one.ttft_ms), bool(many.fits), str(many.bound), "hwmodel")
    except (ImportError, ValueError, KeyError, ArithmeticError, AttributeError, TypeError) as exc:
        # hwmodel missing, or a chip/model it does not know (HwModelError is a ValueError)
        why = "hwmodel unavailable" if isinstance(exc, ImportError) else str(exc)[:80]
        rate = fallback_tokens_per_s
        return ParallelCost(n, rate, rate, rate * n if rate else None, 1.0 if rate else None,
                            fallback_ttft_ms, fallback_ttft_ms, None, None,
                            f"fallback: {why}; assumed memory-bound decode")


def predict_parallel_costs(chip: str | None, model: str | None, ns: list[int],
                           **kw: Any) -> list[ParallelCost]:
    """`predict_parallel_cost` for each count in ``ns`` (for a 1..N picker)."""
    return [predict_parallel_cost(chip, model, n, **kw) for n in ns]


@dataclass
class Variation:
    index: int
    request_id: str | None = None
    text: str = ""
    tokens: int = 0
    elapsed_s: float | None = None
    ttft_ms: float | None = None
    slop_score: float = 0.0
    duplicates: int = 0
    done: bool = False
    error: str | None = None


@dataclass
class VariationSet:
    """N answers to one prompt; the user keeps one (`choose`) and the rest are dropped."""

    prompt: str
    n: int = DEFAULT_VARIATIONS
    variations: list[Variation] = field(init=False)
    chosen: int | None = None

    def __post_init__(self) -> None:
        check_count(self.n)
        self.variations = [Variation(i) for i in range(self.n)]

    def _get(self, index: int) -> Variation:
        if not isinstance(index, int) or not 0 <= index < self.n:
            raise VariationError(f"no variation {index!r}: choose 0..{self.n - 1}")
        return self.variations[index]

    def update(self, index: int, *, text_delta: str = "", tokens: int | None = None,
               **fields: Any) -> Variation:
        """Stream progress or final numbers for one variation (any `Variation` field)."""
        v = self._get(index)
        v.text += text_delta
        if tokens is not None:
            v.tokens = tokens
        for key, value in fields.items():
            if key not in Variation.__dataclass_fields__ or key in ("index", "text"):
                raise VariationError(f"unknown variation field {key!r}")
            setattr(v, key, value)
        return v

    @property
    def all_done(self) -> bool:
        return all(v.done or v.error for v in self.variations)

    def ranking(self) -> list[int]:
        """Indices best first: finished before unfinished, then fewer duplicates, lower slop,
        fewer tokens (the smaller answer that does the job). A hint, never a choice."""
        return sorted(range(self.n), key=lambda i: (
            not self.variations[i].done or self.variations[i].error is not None,
            self.variations[i].duplicates, self.variations[i].slop_score,
            self.variations[i].tokens, i))

    def choose(self, index: int) -> Variation:
        """Keep variation ``index`` (a digit key); the others are dropped."""
        v = self._get(index)
        if self.chosen is not None:
            raise VariationError(f"variation {self.chosen} was already chosen")
        if v.error:
            raise VariationError(f"variation {index} failed: {v.error}")
        self.chosen = index
        return v

    @property
    def dropped(self) -> list[int]:
        return [] if self.chosen is None else [i for i in range(self.n) if i != self.chosen]

    def summary(self) -> list[dict[str, Any]]:
        """One row per variation for the side-by-side header."""
        return [{"index": v.index, "tokens": v.tokens, "elapsed_s": v.elapsed_s,
                 "ttft_ms": v.ttft_ms, "slop_score": v.slop_score, "duplicates": v.duplicates,
                 "done": v.done, "error": v.error} for v in self.variations]
