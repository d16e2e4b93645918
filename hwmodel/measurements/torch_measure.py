"""Measure real decode and prefill step times on a GPU with PyTorch, random weights.

Why: hwmodel's calibration needs real points of the issue's JSONL kind. No weights can be
downloaded on the GPU machine, and timings of a dense transformer do not depend on the
weight values, so each model is built from its published shape (hwmodel/specs/models.toml)
with random bf16 weights, a preallocated KV cache, and the same kernels a simple serving
engine runs: cuBLAS GEMMs, GQA attention over the cache (decode: batched matmuls reading K
and V once; prefill: scaled_dot_product_attention, causal), RMSNorm, SwiGLU, and the LM head
(on every decode token, on the last prompt token in prefill). Decode steps are captured in
a CUDA graph and replayed, as vLLM and TensorRT-LLM do; prefill runs eagerly.

Run on the GPU machine:  python3 hwmodel/measurements/torch_measure.py --chip h100-sxm > out.jsonl
Dense models only (MoE routing kernels vary too much by engine to stand for 'the' GPU time).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
import torch.nn.functional as F

from hwmodel.models import ModelSpec, get_model

DT = torch.bfloat16


class Layer:
    """One decoder layer's weights (random; timing does not depend on values)."""

    def __init__(self, m: ModelSpec, dev: str) -> None:
        d, hd = m.hidden, m.head_dim
        qkv_out = (m.heads + 2 * m.kv_heads) * hd

        def w(o: int, i: int) -> torch.Tensor:
            return torch.randn(o, i, device=dev, dtype=DT) * 0.02

        self.wqkv = w(qkv_out, d)
        self.bqkv = torch.zeros(qkv_out, device=dev, dtype=DT) if m.qkv_bias else None
        self.wo = w(d, m.heads * hd)
        self.w_gate_up = w(2 * m.ffn, d)
        self.w_down = w(d, m.ffn)
        self.n1 = torch.ones(d, device=dev, dtype=DT)
        self.n2 = torch.ones(d, device=dev, dtype=DT)


def rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(DT) * w


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Model:
    def __init__(self, m: ModelSpec, dev: str = "cuda") -> None:
        self.m = m
        self.layers = [Layer(m, dev) for _ in range(m.layers)]
        self.embed = torch.randn(m.vocab, m.hidden, device=dev, dtype=DT) * 0.02
        self.head = self.embed if m.tied else torch.randn(m.vocab, m.hidden, device=dev, dtype=DT) * 0.02
        self.norm = torch.ones(m.hidden, device=dev, dtype=DT)
        self.dev = dev

    def _qkv(self, L: Layer, h: torch.Tensor):
        m = self.m
        qkv = F.linear(h, L.wqkv, L.bqkv)
        q, k, v = qkv.split([m.heads * m.head_dim, m.kv_heads * m.head_dim, m.kv_heads * m.head_dim], -1)
        return q, k, v

    def _mlp(self, L: Layer, x: torch.Tensor) -> torch.Tensor:
        h = rms(x, L.n2)
        gu = F.linear(h, L.w_gate_up)
        g, u = gu.chunk(2, dim=-1)
        return x + F.linear(F.silu(g) * u, L.w_down)

    def decode(self, tok: torch.Tensor, kc: list, vc: list, cos, sin) -> torch.Tensor:
        """One token per sequence; K/V caches [B, Hkv, ctx, D]; the new token goes last."""
        m = self.m
        b = tok.shape[0]
        g = m.heads // m.kv_heads
        x = self.embed[tok]  # [B, d]
        for i, L in enumerate(self.layers):
            q, k, v = self._qkv(L, rms(x, L.n1))
            q = rope(q.view(b, m.heads, m.head_dim), cos, sin)
            k = rope(k.view(b, m.kv_heads, m.head_dim), cos, sin)
            kc[i][:, :, -1, :] = k
            vc[i][:, :, -1, :] = v.view(b, m.kv_heads, m.head_dim)
            qg = q.view(b, m.kv_heads, g, m.head_dim)
            s = torch.matmul(qg, kc[i].transpose(-1, -2)) * (m.head_dim ** -0.5)
            p = torch.softmax(s.float(), dim=-1).to(DT)
            o = torch.matmul(p, vc[i]).reshape(b, m.heads * m.head_dim)
            x = x + F.linear(o, L.wo)
            x = self._mlp(L, x)
        return F.linear(rms(x, self.norm), self.head)

    def prefill(self, toks: torch.Tensor, cos, sin) -> torch.Tensor:
        m = self.m
        b, p = toks.shape
        x = self.embed[toks]  # [B, P, d]
        for L in self.layers:
            q, k, v = self._qkv(L, rms(x, L.n1))
            q = rope(q.view(b, p, m.heads, m.head_dim), cos, sin).transpose(1, 2)
            k = rope(k.view(b, p, m.kv_heads, m.head_dim), cos, sin).transpose(1, 2)
            v = v.view(b, p, m.kv_heads, m.head_dim).transpose(1, 2)
            g = m.heads // m.kv_heads
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + F.linear(o.transpose(1, 2).reshape(b, p, -1), L.wo)
            x = self._mlp(L, x)
        return F.linear(rms(x[:, -1], self.norm), self.head)


def time_cuda(fn, iters: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def measure_decode(model: Model, batch: int, ctx: int) -> float:
    m = model.m
    kc = [torch.randn(batch, m.kv_heads, ctx, m.head_dim, device="cuda", dtype=DT) for _ in range(m.layers)]
    vc = [torch.randn(batch, m.kv_heads, ctx, m.head_dim, device="cuda", dtype=DT) for _ in range(m.layers)]
    tok = torch.randint(0, m.vocab, (batch,), device="cuda")
    cos = torch.randn(1, 1, m.head_dim // 2, device="cuda", dtype=DT)
    sin = torch.randn(1, 1, m.head_dim // 2, device="cuda", dtype=DT)
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                model.decode(tok, kc, vc, cos, sin)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model.decode(tok, kc, vc, cos, sin)
        ms = time_cuda(graph.replay, iters=30)
    del graph, kc, vc
    return ms


def measure_prefill(model: Model, batch: int, prompt: int) -> float:
    m = model.m
    toks = torch.randint(0, m.vocab, (batch, prompt), device="cuda")
    cos = torch.randn(prompt, 1, m.head_dim // 2, device="cuda", dtype=DT)
    sin = torch.randn(prompt, 1, m.head_dim // 2, device="cuda", dtype=DT)
    with torch.no_grad():
        iters = 3 if prompt >= 4096 else 8
        return time_cuda(lambda: model.prefill(toks, cos, sin), iters=iters, warmup=2)


PLAN = {
    # model: (decode (batch, ctx) points, prefill prompt lengths)
    "llama-3.2-1b": ([(1, 512), (1, 4096), (8, 1024), (32, 2048), (64, 1024)], [128, 512, 2048, 8192]),
    "llama-3.2-3b": ([(1, 1024), (1, 8192), (16, 2048), (64, 512)], [256, 1024, 4096]),
    "llama-3.1-8b": ([(1, 1024), (1, 4096), (1, 16384), (8, 2048), (32, 1024), (64, 2048)], [128, 512, 2048, 8192]),
    "qwen2.5-14b": ([(1, 1024), (4, 4096), (16, 2048)], [512, 2048, 8192]),
    "qwen2.5-32b": ([(1, 1024), (1, 8192), (8, 1024)], [256, 1024, 4096]),
}

# Held-out test points (h100_extra.jsonl): never used to fit or to tune the model.
EXTRA = {
    "llama-3.2-1b": ([(1, 2048), (16, 4096)], [256, 1024, 4096]),
    "llama-3.2-3b": ([(4, 4096), (32, 1024)], [128, 512, 2048]),
    "llama-3.1-8b": ([(4, 512), (16, 4096)], [256, 1024, 4096]),
    "qwen2.5-14b": ([(1, 4096), (32, 1024)], [128, 1024, 4096]),
    "qwen2.5-32b": ([(4, 4096), (16, 1024)], [512, 2048]),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chip", default="h100-sxm")
    ap.add_argument("--models", nargs="*", default=list(PLAN))
    ap.add_argument("--plan", choices=("main", "extra"), default="main")
    args = ap.parse_args()
    plan = EXTRA if args.plan == "extra" else PLAN
    name = torch.cuda.get_device_name()
    print(f"# device {name} torch {torch.__version__}", file=sys.stderr)
    torch.backends.cuda.matmul.allow_tf32 = True
    for mname in args.models:
        t0 = time.time()
        spec = get_model(mname)
        model = Model(spec)
        decode_pts, prefill_pts = plan[mname]
        for batch, ctx in decode_pts:
            try:
                ms = measure_decode(model, batch, ctx)
            except torch.OutOfMemoryError:
                print(f"# OOM decode {mname} b{batch} ctx{ctx}", file=sys.stderr)
                torch.cuda.empty_cache()
                continue
            print(json.dumps({"chip": args.chip, "model": mname, "phase": "decode", "batch": batch,
                              "ctx": ctx, "step_ms": round(ms, 4), "precision": "bf16",
                              "engine": "torch-cudagraph", "device": name}), flush=True)
            torch.cuda.empty_cache()
        for prompt in prefill_pts:
            try:
                ms = measure_prefill(model, 1, prompt)
            except torch.OutOfMemoryError:
                print(f"# OOM prefill {mname} p{prompt}", file=sys.stderr)
                torch.cuda.empty_cache()
                continue
            print(json.dumps({"chip": args.chip, "model": mname, "phase": "prefill", "batch": 1,
                              "prompt": prompt, "ms": round(ms, 4), "precision": "bf16",
                              "engine": "torch-eager-sdpa", "device": name}), flush=True)
            torch.cuda.empty_cache()
        del model
        torch.cuda.empty_cache()
        print(f"# {mname} done in {time.time() - t0:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
