"""The published model shapes that stand in for the seeds' unpublished models.

GPT-5.3-Codex-Spark ("over 1,000 tokens/s, TTFT under 100 ms" on a Cerebras WSE-3) is a smaller
Codex that fits one wafer; its shape is unpublished. We use Qwen2.5-Coder-14B (48 layers,
d_model 5120, GQA 40/8: a published coding model) in fp8 on one CS-3: 14.8 GB of weights, well
inside the wafer's 44 GB, predicted ~1,250 tok/s. The same shape in bf16 would give ~840 tok/s.

GPT-5.3-Codex (~65-70 tokens/s on NVIDIA GPUs) is a large model served tensor-parallel on a GPU
node; we use Llama 3.1 70B (80 layers, d_model 8192) in bf16 over 8x H100 SXM: ~70 tok/s.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StandIn:
    chip: str
    model: str
    precision: str
    stands_for: str


SPARK = StandIn("cs-3", "qwen2.5-coder-14b", "fp8", "GPT-5.3-Codex-Spark on one Cerebras CS-3")
BASE = StandIn("8x-h100", "llama-3.1-70b", "bf16", "GPT-5.3-Codex on an NVIDIA GPU node")
