"""Online calibration: each live profile learns its own endpoint from its own answers.

hwmodel predicts from specifications (FLOPs, bandwidth, a measured numpy/torch CPU), which
can be far from a particular server: llama.cpp's quantised kernels on a 2-core machine
answered SmolLM2-135M in ~400 ms where the CPU model said 5,220 ms. Every finished answer
already reports what the endpoint really did (prompt tokens, TTFT, decode rate in the
`done` frame), so the profile's prediction is re-fitted from those:

* TTFT = overhead + per-token prefill cost x (prompt tokens not served from the
  endpoint's prompt cache). Fitted by least squares of the relative error on the recent
  answers, weighted towards the newest, with both terms kept non-negative; where the prompts are too alike
  to separate the two terms, the recent median TTFT scaled by prompt size stands in.
* Decode rate: the median of the recent answers' tokens/s (a GC pause or one stalled
  answer must not drag the estimate).

State is a small JSON file per profile in the user's state folder, keyed by what the
profile talks to (endpoint + model), so pointing a profile elsewhere starts afresh. The
prediction says how many answers it rests on; below ``MIN_ANSWERS`` there is none and
callers keep hwmodel's.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import statistics
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

MIN_ANSWERS = 3  # below this the fit is noise; hwmodel's prediction stands
WINDOW = 40  # answers kept per profile (the endpoint's recent behaviour is what matters)
HALF_LIFE = 12.0  # answers: older answers weigh half as much this many answers later
VERSION = 1


@dataclass(frozen=True)
class Observation:
    """One finished answer as the endpoint served it."""

    prompt_tokens: int
    ttft_ms: float
    tokens_per_s: float | None
    completion_tokens: int = 0
    cached_tokens: int = 0
    at: float = 0.0

    @property
    def fresh_tokens(self) -> int:
        """Prompt tokens the endpoint had to prefill (its cache served the rest)."""
        return max(0, self.prompt_tokens - max(0, self.cached_tokens))

    def usable(self) -> bool:
        ok_ttft = math.isfinite(self.ttft_ms) and self.ttft_ms >= 0
        ok_rate = self.tokens_per_s is None or (math.isfinite(self.tokens_per_s)
                                                and self.tokens_per_s > 0)
        return ok_ttft and ok_rate and self.prompt_tokens >= 0


@dataclass(frozen=True)
class OnlinePrediction:
    ttft_ms: float
    tokens_per_s: float | None
    answers: int  # how many answers the fit rests on
    overhead_ms: float
    ms_per_prompt_token: float

    def to_dict(self) -> dict[str, float | int | str | None]:
        return {"ttft_ms": round(self.ttft_ms, 2),
                "tokens_per_s": None if self.tokens_per_s is None
                else round(self.tokens_per_s, 2),
                "basis": "online", "answers": self.answers}


@dataclass
class OnlineModel:
    """The recent answers of one profile and the fit they give."""

    key: str = ""
    observations: list[Observation] = field(default_factory=list)

    def observe(self, obs: Observation) -> bool:
        """Add one answer; an unusable one (no TTFT, a negative count) is ignored."""
        if not obs.usable():
            return False
        self.observations.append(obs)
        del self.observations[:-WINDOW]
        return True

    @property
    def answers(self) -> int:
        return len(self.observations)

    def _ttft_fit(self) -> tuple[float, float]:
        """(overhead ms, ms per fresh prompt token), both >= 0."""
        obs = self.observations
        n = len(obs)
        xs = [o.fresh_tokens for o in obs]
        ys = [o.ttft_ms for o in obs]
        # recency, and 1/y^2: timing noise is proportional (a busy machine is x% slower),
        # so relative error is what to minimise; otherwise long prompts swamp short ones
        weights = [0.5 ** ((n - 1 - i) / HALF_LIFE) / max(y, 1e-3) ** 2
                   for i, y in enumerate(ys)]
        sw = sum(weights)
        mx = sum(w * x for w, x in zip(weights, xs)) / sw
        my = sum(w * y for w, y in zip(weights, ys)) / sw
        sxx = sum(w * (x - mx) ** 2 for w, x in zip(weights, xs))
        sxy = sum(w * (x - mx) * (y - my) for w, x, y in zip(weights, xs, ys))
        spread = max(xs) - min(xs)
        if sxx > 0 and spread >= max(32, 0.25 * max(mx, 1.0)):
            slope = max(0.0, sxy / sxx)
            intercept = my - slope * mx
            if intercept >= 0:
                return intercept, slope
            # a negative overhead means prefill dominates: a line through the origin
            sx2 = sum(w * x * x for w, x in zip(weights, xs))
            return 0.0, max(0.0, sum(w * x * y for w, x, y in zip(weights, xs, ys)) / sx2)
        # prompts too alike to separate the terms: recent median, all of it overhead
        recent = ys[-min(n, 9):]
        return statistics.median(recent), 0.0

    def predict(self, prompt_tokens: int, cached_tokens: int = 0) -> OnlinePrediction | None:
        """The next answer's TTFT and decode rate, or None below MIN_ANSWERS."""
        if self.answers < MIN_ANSWERS:
            return None
        overhead, per_token = self._ttft_fit()
        fresh = max(0, prompt_tokens - max(0, cached_tokens))
        rates = [o.tokens_per_s for o in self.observations[-15:] if o.tokens_per_s]
        tps = statistics.median(rates) if rates else None
        return OnlinePrediction(overhead + per_token * fresh, tps, self.answers, overhead,
                                per_token)

    def to_json(self) -> dict:
        return {"version": VERSION, "key": self.key,
                "observations": [asdict(o) for o in self.observations]}

    @classmethod
    def from_json(cls, data: object, key: str) -> OnlineModel:
        """A stored model; anything unreadable or for another endpoint starts afresh."""
        model = cls(key=key)
        if not isinstance(data, dict) or data.get("version") != VERSION \
                or data.get("key") != key or not isinstance(data.get("observations"), list):
            return model
        for item in data["observations"]:
            try:
                model.observe(Observation(**item))
            except (TypeError, ValueError):
                continue
        return model


def profile_key(name: str, endpoint: str | None, model: str | None) -> str:
    """What a calibration is about: the profile and what it talks to."""
    return f"{name}|{endpoint or ''}|{model or ''}"


class CalibrationStore:
    """Per-profile online models, persisted as JSON files in ``folder``."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._models: dict[str, OnlineModel] = {}

    @classmethod
    def default(cls) -> CalibrationStore:
        from core.config import user_state_dir

        return cls(user_state_dir() / "calibration")

    def _file(self, key: str) -> Path | None:
        if self.folder is None:
            return None
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", key.split("|", 1)[0])[:40] or "profile"
        digest = hashlib.sha256(key.encode()).hexdigest()[:12]
        return self.folder / f"{name}-{digest}.json"

    def model(self, key: str) -> OnlineModel:
        model = self._models.get(key)
        if model is None:
            data: object = None
            path = self._file(key)
            if path is not None:
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    data = None
            model = OnlineModel.from_json(data, key)
            self._models[key] = model
        return model

    def observe(self, key: str, obs: Observation) -> OnlineModel:
        """Record one answer and persist (atomically; a read-only home only loses the file)."""
        model = self.model(key)
        if model.observe(obs):
            self._save(key, model)
        return model

    def _save(self, key: str, model: OnlineModel) -> None:
        path = self._file(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".cal-", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(model.to_json(), fh)
            os.replace(tmp, path)
        except OSError:
            pass


def replay_errors(series: Iterable[Observation], *, after: int = 10) -> list[float]:
    """Relative errors |predicted - measured| / measured of TTFT for each answer of
    ``series`` predicted from the answers before it, from answer ``after`` on (used by the
    tests and `bench` to check the 10%-after-10-answers goal on recorded series)."""
    model = OnlineModel()
    errors: list[float] = []
    for i, obs in enumerate(series):
        if i >= after:
            pred = model.predict(obs.prompt_tokens, obs.cached_tokens)
            if pred is not None and obs.ttft_ms > 0:
                errors.append(abs(pred.ttft_ms - obs.ttft_ms) / obs.ttft_ms)
        model.observe(obs)
    return errors


def _pct(measured: float, predicted: float) -> str:
    return f"{(measured - predicted) / predicted * 100:+.0f}%"


def gap_text(ttft_ms: float | None, tokens_per_s: float | None,
             predicted: dict | None) -> str:
    """The forecast beside the measurement and the gap, short enough for an 80-column status
    bar: "pred 430 ms -4%, 90 tok/s -2% (fit 7)"; "" with no forecast.

    ``predicted`` is a `timing.predicted` / `profiles[].predicted` dict; its `basis` says
    where it comes from (hwmodel, pinned, online); an online one names its answer count.
    """
    if not isinstance(predicted, dict):
        return ""
    parts = []
    p_ttft, p_tps = predicted.get("ttft_ms"), predicted.get("tokens_per_s")
    if isinstance(p_ttft, int | float) and p_ttft > 0:
        gap = f" {_pct(ttft_ms, p_ttft)}" if ttft_ms is not None else ""
        parts.append(f"{p_ttft:,.0f} ms{gap}")
    if isinstance(p_tps, int | float) and p_tps > 0:
        gap = f" {_pct(tokens_per_s, p_tps)}" if tokens_per_s else ""
        parts.append(f"{p_tps:,.0f} tok/s{gap}")
    if not parts:
        return ""
    basis = predicted.get("basis") or "model"
    if basis == "online":
        basis = f"fit {predicted.get('answers', '?')}"
    return f"pred {', '.join(parts)} ({basis})"


def now() -> float:
    return time.time()
