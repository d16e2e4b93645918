"""Model shapes as data: load `specs/models.toml` and derive parameter and byte counts.

Counts are derived from the published config (widths, heads, experts) rather than typed in,
so a new model is one TOML table and the numbers stay consistent with the shape.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from hwmodel.errors import HwModelError

SPEC_DIR = Path(__file__).parent / "specs"


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer's shape; MoE when `experts` > 0."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    tied: bool = False
    mlp: str = "gated"
    qkv_bias: bool = False
    max_ctx: int = 131072
    experts: int = 0
    experts_active: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    sliding_window: int = 0
    sliding_layers: float = 0.0
    source: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)

    # --- per-layer parameter counts -------------------------------------------------------
    @property
    def attn_params(self) -> int:
        """Q, K, V and output projections of one layer."""
        q = self.hidden * self.heads * self.head_dim
        kv = 2 * self.hidden * self.kv_heads * self.head_dim
        o = self.heads * self.head_dim * self.hidden
        return q + kv + o

    @property
    def mlp_mats(self) -> int:
        return 3 if self.mlp == "gated" else 2

    def _mlp_params(self, width: int) -> int:
        return self.mlp_mats * self.hidden * width

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def expert_params(self) -> int:
        """One routed expert's MLP."""
        return self._mlp_params(self.expert_ffn)

    @property
    def shared_params(self) -> int:
        """Per-layer params every token touches in an MoE layer: shared experts and router."""
        return self.shared_experts * self.expert_params + self.hidden * self.experts

    @property
    def dense_layer_params(self) -> int:
        return self.attn_params + self._mlp_params(self.ffn)

    @property
    def embed_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def head_params(self) -> int:
        """The LM head matmul reads vocab x hidden weights every step, tied or not."""
        return self.vocab * self.hidden

    # --- totals ---------------------------------------------------------------------------
    @property
    def layer_params_total(self) -> int:
        dense = (self.layers - self.moe_layers) * self.dense_layer_params
        moe = self.moe_layers * (
            self.attn_params + self.shared_params + self.experts * self.expert_params
        )
        return dense + moe

    @property
    def total_params(self) -> int:
        head = 0 if self.tied else self.head_params
        return self.layer_params_total + self.embed_params + head

    def layer_params_touched(self, tokens: int = 1) -> float:
        """Layer params read for a step over `tokens` tokens (MoE: expected distinct experts).

        With uniform routing, each token picks k of E experts; over n tokens the expected
        number of distinct experts is E * (1 - (1 - k/E)^n).
        """
        dense = (self.layers - self.moe_layers) * self.dense_layer_params
        if not self.is_moe:
            return float(dense)
        k, e = self.experts_active, self.experts
        distinct = e * (1.0 - (1.0 - k / e) ** max(tokens, 1))
        moe = self.moe_layers * (
            self.attn_params + self.shared_params + distinct * self.expert_params
        )
        return dense + moe

    @property
    def active_params(self) -> float:
        """Params used per token (layers + LM head), the usual 'active' figure for an MoE."""
        return self.layer_params_touched(1) + self.head_params

    def linear_flops_per_token(self) -> float:
        """Matmul FLOPs per token: 2 per active weight (LM head included)."""
        return 2.0 * self.active_params

    # --- KV cache -------------------------------------------------------------------------
    def kv_elems_per_token(self) -> int:
        """K and V elements stored per token over all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim

    def attended_ctx(self, ctx: int) -> float:
        """Mean positions a token attends to per layer (sliding-window layers see fewer)."""
        if self.sliding_window and self.sliding_layers:
            local = min(ctx, self.sliding_window)
            return self.sliding_layers * local + (1 - self.sliding_layers) * ctx
        return float(ctx)

    def kv_elems_stored(self, ctx: int) -> float:
        """KV elements held for one sequence of `ctx` tokens (sliding layers keep a window)."""
        return self.kv_elems_per_token() * self.attended_ctx(ctx)

    def attn_flops_per_token(self, ctx: float) -> float:
        """Score and value matmuls for one query token attending to `ctx` positions."""
        return 4.0 * self.layers * self.heads * self.head_dim * ctx


def _build(name: str, raw: dict) -> ModelSpec:
    known = set(ModelSpec.__dataclass_fields__) - {"name"}
    unknown = set(raw) - known
    if unknown:
        raise HwModelError(f"model {name!r}: unknown keys {sorted(unknown)} in models.toml")
    data = dict(raw)
    data["aliases"] = tuple(data.get("aliases", ()))
    spec = ModelSpec(name=name, **data)
    if spec.mlp not in ("gated", "plain"):
        raise HwModelError(f"model {name!r}: mlp must be 'gated' or 'plain'")
    return spec


@cache
def load_models(path: str | None = None) -> dict[str, ModelSpec]:
    """All models by name and alias (cached: the core's pacing calls predict per stream)."""
    file = Path(path) if path else SPEC_DIR / "models.toml"
    raw = tomllib.loads(file.read_text())["models"]
    out: dict[str, ModelSpec] = {}
    for name, table in raw.items():
        spec = _build(name, table)
        out[name] = spec
        for alias in spec.aliases:
            out[alias] = spec
    return out


SUFFIXES = ("-instruct", "-chat", "-hf", "-base")


def _normalise(name: str) -> str:
    """Hub-style names to ours: 'meta-llama/Llama-3.1-8B-Instruct' -> 'llama-3.1-8b' (measured
    files often carry the checkpoint's name; the shape is the same)."""
    key = name.strip().lower().replace("_", "-").replace(" ", "-").rsplit("/", 1)[-1]
    key = key.removeprefix("meta-")
    changed = True
    while changed:
        changed = False
        for suffix in SUFFIXES:
            if key.endswith(suffix):
                key, changed = key[: -len(suffix)], True
    return key


def get_model(name: str) -> ModelSpec:
    models = load_models()
    key = name.strip().lower()
    if key not in models:
        key = _normalise(name)
    if key not in models:
        names = ", ".join(sorted({m.name for m in models.values()}))
        raise HwModelError(f"unknown model {name!r}; known models: {names}")
    return models[key]
