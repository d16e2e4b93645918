"""A second, independent kind of GPU measurement: Hugging Face transformers, eager.

Why: calibration must generalise across engines, not only across chips. torch_measure.py is
a lean CUDA-graph engine; this is what most people time first: `LlamaForCausalLM` built from
the published shape with random bf16 weights, SDPA attention, a DynamicCache, no CUDA graphs
(decode is then launch-bound for small models). Same JSONL format, engine "hf-eager".

Run on the GPU machine:  python3 hwmodel/measurements/hf_measure.py --chip h100-sxm > hf.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

from hwmodel.models import get_model

PLAN = {
    "llama-3.2-1b": ([(1, 1024), (1, 8192), (16, 1024), (64, 512)], [256, 1024, 4096]),
    "llama-3.2-3b": ([(1, 2048), (8, 2048)], [512, 2048]),
    "llama-3.1-8b": ([(1, 512), (1, 4096), (4, 2048), (32, 1024)], [128, 1024, 4096]),
    "qwen2.5-14b": ([(1, 1024), (8, 4096)], [256, 2048, 8192]),
}

# Held-out test points (h100_hf_extra.jsonl): never used to fit or to tune the model.
EXTRA = {
    "llama-3.2-1b": ([(4, 2048), (1, 16384)], [128, 2048]),
    "llama-3.2-3b": ([(1, 512), (32, 1024)], [128, 8192]),
    "llama-3.1-8b": ([(8, 8192), (16, 512)], [512, 2048]),
    "qwen2.5-14b": ([(1, 8192), (32, 512)], [512]),
    "qwen2.5-32b": ([(1, 1024), (4, 2048)], [256, 1024, 4096]),
}


def build(name: str) -> LlamaForCausalLM:
    m = get_model(name)
    cfg = LlamaConfig(hidden_size=m.hidden, intermediate_size=m.ffn, num_hidden_layers=m.layers,
                      num_attention_heads=m.heads, num_key_value_heads=m.kv_heads, head_dim=m.head_dim,
                      vocab_size=m.vocab, tie_word_embeddings=m.tied, attention_bias=m.qkv_bias,
                      max_position_embeddings=max(m.max_ctx, 32768))
    cfg._attn_implementation = "sdpa"
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    return model.eval()


def sync_time(fn, iters: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e3


@torch.no_grad()
def decode_ms(model, vocab: int, batch: int, ctx: int) -> float:
    cache = DynamicCache()
    prompt = torch.randint(0, vocab, (batch, ctx - 1), device="cuda")
    model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
    tok = torch.randint(0, vocab, (batch, 1), device="cuda")

    def step():
        cache.crop(ctx - 1)
        model(input_ids=tok, past_key_values=cache, use_cache=True)

    return sync_time(step, iters=10)


@torch.no_grad()
def prefill_ms(model, vocab: int, prompt: int) -> float:
    ids = torch.randint(0, vocab, (1, prompt), device="cuda")
    return sync_time(lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1), iters=5)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chip", default="h100-sxm")
    ap.add_argument("--plan", choices=("main", "extra"), default="main")
    args = ap.parse_args()
    dev = torch.cuda.get_device_name()
    for name, (decodes, prefills) in (EXTRA if args.plan == "extra" else PLAN).items():
        t0 = time.time()
        model = build(name)
        vocab = get_model(name).vocab
        for batch, ctx in decodes:
            try:
                ms = decode_ms(model, vocab, batch, ctx)
            except torch.OutOfMemoryError:
                torch.cuda.empty_cache()
                continue
            print(json.dumps({"chip": args.chip, "model": name, "phase": "decode", "batch": batch, "ctx": ctx,
                              "step_ms": round(ms, 4), "precision": "bf16", "engine": "hf-eager", "device": dev}),
                  flush=True)
            torch.cuda.empty_cache()
        for prompt in prefills:
            ms = prefill_ms(model, vocab, prompt)
            print(json.dumps({"chip": args.chip, "model": name, "phase": "prefill", "batch": 1, "prompt": prompt,
                              "ms": round(ms, 4), "precision": "bf16", "engine": "hf-eager", "device": dev}),
                  flush=True)
        del model
        torch.cuda.empty_cache()
        print(f"# {name} {time.time() - t0:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
