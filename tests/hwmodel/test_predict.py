"""predict(): the physics behaves as it must, on fixed specs (no timing of this machine)."""

import time

import pytest

from hwmodel import HwModelError
from hwmodel.predict import Prediction, predict

FIELDS = {"prefill_ms", "ttft_ms", "decode_step_ms", "tokens_per_s_per_seq", "tokens_per_s_total",
          "weight_gb", "kv_gb", "fits", "chips_needed", "bound", "chip", "model", "batch", "ctx",
          "prompt", "precision"}


def test_interface_and_to_dict():
    p = predict("h100-sxm", "llama-3.1-8b")
    assert isinstance(p, Prediction)
    d = p.to_dict()
    assert FIELDS <= set(d)
    assert d["batch"] == 1 and d["ctx"] == 1024 and d["prompt"] == 1024 and d["precision"] == "bf16"
    assert p.tokens_per_s_per_seq == pytest.approx(1000 / p.decode_step_ms)
    assert p.ttft_ms > p.prefill_ms > 0


def test_single_gpu_decode_is_memory_bound_and_near_bandwidth_limit():
    p = predict("h100-sxm", "llama-3.1-8b", ctx=1024)
    assert p.bound == "memory"
    floor_ms = 16.06e9 / 3.35e12 * 1e3  # weights over peak bandwidth
    assert floor_ms < p.decode_step_ms < 2 * floor_ms


def test_batching_trades_per_stream_for_aggregate_speed():
    speeds = [predict("h100-sxm", "llama-3.1-8b", batch=b, ctx=2048) for b in (1, 4, 16, 64)]
    per_seq = [p.tokens_per_s_per_seq for p in speeds]
    total = [p.tokens_per_s_total for p in speeds]
    assert per_seq == sorted(per_seq, reverse=True) and per_seq[0] > per_seq[-1]
    assert total == sorted(total) and total[-1] > 10 * total[0]


def test_long_context_costs_kv_bandwidth():
    short = predict("h100-sxm", "llama-3.1-8b", batch=8, ctx=1024)
    long = predict("h100-sxm", "llama-3.1-8b", batch=8, ctx=32768)
    assert long.kv_gb == pytest.approx(32 * short.kv_gb)
    assert long.decode_step_ms > 1.5 * short.decode_step_ms


def test_prefill_is_compute_bound_for_long_prompts():
    p = predict("h100-sxm", "llama-3.1-8b", prompt=8192)
    assert p.prefill_bound == "compute"
    ideal_ms = 2 * 7.5e9 * 8192 / 989e12 * 1e3
    assert ideal_ms < p.prefill_ms < 3 * ideal_ms


def test_lower_precision_moves_fewer_bytes():
    bf16 = predict("h100-sxm", "llama-3.1-70b", chips=4)
    fp8 = predict("h100-sxm", "llama-3.1-70b", chips=4, precision="fp8")
    assert fp8.weight_gb == pytest.approx(bf16.weight_gb / 2)
    assert fp8.decode_step_ms < bf16.decode_step_ms
    kv8 = predict("h100-sxm", "llama-3.1-8b", ctx=65536, kv_precision="fp8")
    kv16 = predict("h100-sxm", "llama-3.1-8b", ctx=65536)
    assert kv8.kv_gb == pytest.approx(kv16.kv_gb / 2)


def test_h200_decodes_faster_but_prefills_alike():
    h100 = predict("h100-sxm", "qwen2.5-32b", prompt=4096)
    h200 = predict("h200", "qwen2.5-32b", prompt=4096)
    assert h200.decode_step_ms < 0.85 * h100.decode_step_ms
    assert h200.prefill_ms == pytest.approx(h100.prefill_ms, rel=0.05)


def test_tensor_parallel_helps_sublinearly_and_pcie_costs_more():
    one = predict("h100-sxm", "llama-3.1-8b", chips=1)
    eight = predict("h100-sxm", "llama-3.1-8b", chips=8)
    assert one.decode_step_ms / 8 < eight.decode_step_ms < one.decode_step_ms
    assert eight.breakdown_ms["interconnect"] > 0
    nvlink = predict("h100-sxm", "llama-3.1-8b", chips=4).breakdown_ms["interconnect"]
    pcie = predict("h100-pcie", "llama-3.1-8b", chips=4).breakdown_ms["interconnect"]
    assert pcie > 2 * nvlink


def test_memory_fit_and_chips_needed():
    p = predict("h100-sxm", "llama-3.1-405b")  # 812 GB of bf16 weights
    assert p.chips_needed == 16 and p.chips == 16 and p.fits
    small = predict("h100-sxm", "llama-3.1-405b", chips=8)
    assert not small.fits and small.chips_needed == 16
    assert predict("8x-h100", "llama-3.1-405b", precision="fp8").fits
    with pytest.raises(HwModelError, match="does not fit"):
        predict("rtx-3090", "llama-3.1-405b", batch=64, ctx=131072)


def test_wafer_holds_weights_in_sram_and_pipelines_wafers():
    p8 = predict("cs-3", "llama-3.1-8b")
    assert p8.chips == 1
    p70 = predict("cs-3", "llama-3.1-70b")
    assert p70.chips_needed == 4  # 141 GB over 44 GB wafers, as Cerebras launched it
    assert p70.breakdown_ms["interconnect"] > 0
    # one wafer is an order of magnitude faster than a GPU on the same model
    assert p8.tokens_per_s_per_seq > 10 * predict("h100-sxm", "llama-3.1-8b").tokens_per_s_per_seq


def test_wafer_pipeline_absorbs_streams_up_to_its_depth():
    one = predict("cs-3", "llama-3.1-8b", batch=1, ctx=256, prompt=256)
    full = predict("cs-3", "llama-3.1-8b", batch=32, ctx=256, prompt=256)  # 32 layers in flight
    over = predict("cs-3", "llama-3.1-8b", batch=256, ctx=256, prompt=256)
    assert one.chips == full.chips == over.chips == 1
    assert full.tokens_per_s_per_seq == pytest.approx(one.tokens_per_s_per_seq, rel=0.05)
    assert over.tokens_per_s_per_seq < full.tokens_per_s_per_seq
    assert over.tokens_per_s_total > full.tokens_per_s_total


def test_moe_reads_only_active_experts():
    moe = predict("8x-h100", "qwen3-235b-a22b")
    dense = predict("8x-h100", "llama-3.1-70b")
    assert moe.weight_gb > 3 * dense.weight_gb
    assert moe.breakdown_ms["memory"] < dense.breakdown_ms["memory"]


@pytest.mark.parametrize("kwargs,match", [
    ({"batch": 0}, "batch"),
    ({"ctx": -5}, "ctx"),
    ({"prompt": 0}, "prompt"),
    ({"ctx": 10_000_000}, "exceeds"),
    ({"precision": "fp3"}, "precision"),
    ({"kv_precision": "fp2"}, "KV precision"),
    ({"chips": 0}, "chips"),
])
def test_impossible_shapes_raise(kwargs, match):
    with pytest.raises(HwModelError, match=match):
        predict("h100-sxm", "llama-3.1-8b", **kwargs)


def test_tensor_parallel_wider_than_heads_is_rejected():
    with pytest.raises(HwModelError, match="heads"):
        predict("h100-sxm", "llama-3.2-1b", chips=64)


def test_fast_enough_for_per_stream_pacing():
    predict("cs-3", "qwen2.5-coder-14b", precision="fp8")  # load specs once
    n = 2000
    t0 = time.perf_counter()
    for i in range(n):
        predict("cs-3", "qwen2.5-coder-14b", precision="fp8", batch=1 + i % 8)
    per_call = (time.perf_counter() - t0) / n
    assert per_call < 1e-3


def test_pipeline_split_buys_memory_not_single_stream_speed():
    pipe = predict("8x-rtx-3090", "llama-3.1-70b", precision="int8")
    tp = predict("rtx-3090", "llama-3.1-70b", precision="int8", chips=8)
    assert pipe.fits and tp.fits and pipe.chips == tp.chips == 8
    # one stream visits the 8 GPUs in turn: all weights at one GPU's bandwidth
    floor_ms = 70.55e9 / 936e9 * 1e3
    assert floor_ms < pipe.decode_step_ms < 1.5 * floor_ms
    assert tp.decode_step_ms < pipe.decode_step_ms
    assert pipe.breakdown_ms["interconnect"] == pytest.approx(7 * 60e-3)


def test_ttft_adds_the_serving_overhead_and_prefill_stays_pure():
    served = predict("cs-3", "qwen2.5-coder-14b", precision="fp8", prompt=2048)
    bare = predict("cs-3", "qwen2.5-coder-14b", precision="fp8", prompt=2048, request_ms=0)
    assert served.prefill_ms == pytest.approx(bare.prefill_ms)
    assert served.request_ms > 0 and bare.request_ms == 0
    assert served.ttft_ms == pytest.approx(bare.ttft_ms + served.request_ms)
    assert 10 < served.ttft_ms < 100  # the seeds: Spark's TTFT under 100 ms, serving included
    # a bare GPU is timed as an engine: no serving overhead unless asked for
    gpu = predict("h100-sxm", "llama-3.1-8b")
    assert gpu.request_ms == 0
    assert predict("h100-sxm", "llama-3.1-8b", request_ms=25).ttft_ms == pytest.approx(gpu.ttft_ms + 25)
    assert predict("8x-h100", "llama-3.1-70b").request_ms > 0
    with pytest.raises(HwModelError, match="request_ms"):
        predict("h100-sxm", "llama-3.1-8b", request_ms=-1)


def test_eager_host_cost_counts_launches_not_bytes():
    from hwmodel.models import get_model
    from hwmodel.work import host_layer_units

    assert host_layer_units(get_model("llama-3.1-8b")) == 32  # dense: one unit per layer
    assert host_layer_units(get_model("qwen2.5-32b")) == 64
    moe = get_model("qwen3-235b-a22b")  # 8 routed experts per token: several launches each
    assert host_layer_units(moe) > 2.5 * moe.layers
    # the host term is a host property: a sibling chip with other peaks keeps it
    h100 = predict("h100-sxm", "llama-3.2-1b", prompt=128, calibration={"chips": {"h100-sxm": {
        "family": "hopper", "terms": {"prefill_layer_us": 400.0, "prefill_step_us": 5000.0}}}})
    h200 = predict("h200", "llama-3.2-1b", prompt=128, calibration={"chips": {"h100-sxm": {
        "family": "hopper", "terms": {"prefill_layer_us": 400.0, "prefill_step_us": 5000.0}}}})
    assert h100.prefill_bound == h200.prefill_bound == "overhead"
    assert h100.prefill_ms == pytest.approx(h200.prefill_ms) == pytest.approx(16 * 0.4 + 5.0)
