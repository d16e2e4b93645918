"""The physics: what one decode step or one prefill pass moves and computes, per chip.

A step is reduced to a `Work`: seconds at 100% of peak memory bandwidth for the weights (M) and
for the KV cache (K: attention kernels stream it less well than GEMVs stream weights; on our H100
runs ~55% vs ~76% of peak), seconds at 100% of peak FLOPs (C), seconds of un-fused elementwise traffic (E), the layers on the critical path,
and a fixed interconnect time. Its duration on a chip is

    device = roof(M / mem_eff + K / kv_eff, C / compute_eff) + E / mem_eff + layers * layer_us + comm
    roof(a, b) = max(a, b) + ROOFLINE_BLEND * min(a, b)
    decode:  t = device + step_us                    (CUDA-graph replay: no host in the way)
             (an engine without graphs, eager_decode = 1, is timed like prefill below)
    prefill: t = max(launch_units * prefill_layer_us + prefill_step_us, device + step_us)

Prefill runs eagerly in most engines: the host launches each layer's kernels (~0.5 ms per
layer in PyTorch, plus a few ms per pass for embedding, masks and sampling setup) while the GPU runs behind it, so a short prompt takes the host's time and a
long one the device's, never their sum (our H100 runs: 128 to 2048 tokens of a 1B model all
take ~12 ms). launch_units counts kernel launches in dense-layer units (host_layer_units): the
host's cost is per launch, not per byte, and belongs to the host, so a sibling-chip transfer
keeps it unchanged. The total is linear in (1/mem_eff, 1/compute_eff, per_layer_us, step_us) once the max() branch is
known; calibration uses exactly that (calibrate.py). Keeping the physics here, apart from the
terms, is what lets a calibration transfer from one chip to a sibling with other peaks.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from hwmodel.chips import ChipSpec
from hwmodel.models import ModelSpec
from hwmodel.precision import Precision

# Near the roofline's ridge a kernel reaches neither its bandwidth nor its FLOP peak: memory
# and compute overlap imperfectly. We add this share of the lesser of the two times. 0.2 cut
# the worst held-out error on our H100 runs from 22% to 13% (0.35-0.5 helped that engine a
# little more but hurt the HF-eager one), so we keep it small.
ROOFLINE_BLEND = 0.2


@dataclass(frozen=True)
class Work:
    phase: str  # "decode" or "prefill"
    mem_s: float
    compute_s: float
    elem_s: float
    layers: int
    comm_s: float
    kv_s: float = 0.0  # decode: seconds at peak bandwidth to read the KV cache
    host_layers: float = 0.0  # eager host cost in dense-layer equivalents (0 = `layers`)

    @property
    def host_units(self) -> float:
        return self.host_layers or float(self.layers)


@dataclass(frozen=True)
class Timing:
    total_s: float
    memory_s: float
    compute_s: float
    overhead_s: float
    interconnect_s: float

    @property
    def bound(self) -> str:
        parts = {
            "memory": self.memory_s,
            "compute": self.compute_s,
            "overhead": self.overhead_s,
            "interconnect": self.interconnect_s,
        }
        return max(parts, key=parts.__getitem__)


def host_bound(work: Work, chip: ChipSpec) -> bool:
    """Whether the host's launches, not the device, set the pace of this (eager) pass."""
    if not (work.phase == "prefill" or chip.eager_decode):
        return False
    host = (work.host_units * chip.prefill_layer_us + chip.prefill_step_us) * 1e-6
    return host > time_of(work, chip.with_terms(prefill_layer_us=0.0, prefill_step_us=0.0)).total_s


def time_of(work: Work, chip: ChipSpec) -> Timing:
    """Duration of `work` on `chip` with its (possibly calibrated) efficiency terms."""
    mem = work.mem_s / chip.mem_eff + work.kv_s / (chip.kv_eff or chip.mem_eff)
    comp = work.compute_s / chip.compute_eff
    elem = work.elem_s / chip.mem_eff
    fixed = work.layers * chip.layer_us * 1e-6
    device = max(mem, comp) + ROOFLINE_BLEND * min(mem, comp) + elem + fixed + work.comm_s
    step = chip.step_us * 1e-6
    if work.phase == "prefill" or chip.eager_decode:
        host = (work.host_units * chip.prefill_layer_us + chip.prefill_step_us) * 1e-6
        if host > device + step:
            return Timing(host, mem + elem, comp, host, work.comm_s)
    return Timing(device + step, mem + elem, comp, fixed + step, work.comm_s)


# Kernel launches per layer in an eager engine. The host pays a roughly fixed time per launch
# (Python dispatch + cudaLaunchKernel), so host time scales with launches, not with bytes.
# Dense layer: norm, QKV, RoPE, attention, O-proj, add, norm, gate-up, activation, down, add.
DENSE_LAYER_LAUNCHES = 11
# MoE layer: the attention half and norm (7), router + top-k + combine (3), and per routed or
# shared expert a gate-up, activation, down and a gather/scatter (4), plus the residual add.
MOE_ATTN_LAUNCHES, MOE_ROUTER_LAUNCHES, MOE_EXPERT_LAUNCHES = 7, 3, 4


def host_layer_units(model: ModelSpec) -> float:
    """Eager host cost of the whole stack in dense-layer equivalents (launch counts): a dense
    model's is its layer count; an MoE layer that runs k experts launches several times more."""
    if not model.is_moe:
        return float(model.layers)
    moe = (MOE_ATTN_LAUNCHES + MOE_ROUTER_LAUNCHES + 1
           + MOE_EXPERT_LAUNCHES * (model.experts_active + model.shared_experts))
    dense = model.layers - model.moe_layers
    return dense + model.moe_layers * moe / DENSE_LAYER_LAUNCHES


def _allreduce_s(chip: ChipSpec, n: int, nbytes: float) -> float:
    """Ring all-reduce of `nbytes` over n chips: a latency floor plus 2(n-1)/n of the data."""
    if n <= 1:
        return 0.0
    return chip.link_latency_us * 1e-6 + 2 * (n - 1) / n * nbytes / (chip.link_gbs * 1e9)


def _weight_bytes(model: ModelSpec, prec: Precision, tokens: int) -> float:
    return (model.layer_params_touched(tokens) + model.head_params) * prec.bytes


def _elem_bytes_per_token_layer(model: ModelSpec, act_bytes: float) -> float:
    """Activation traffic of one token through one layer outside the matmuls' operands:
    two norms (read+write d), two residual adds (3d), RoPE on q and k, SwiGLU (3 x ffn) and the
    matmuls' own activation inputs and outputs."""
    d = model.hidden
    q = model.heads * model.head_dim
    kv = model.kv_heads * model.head_dim
    f = model.expert_ffn * (model.experts_active + model.shared_experts) if model.is_moe else model.ffn
    elementwise = 4 * d + 6 * d + 2 * (q + kv) + 3 * f
    matmul_io = (d + q + 2 * kv) + (q + d) + (d + 2 * f) + (f + d)
    return (elementwise + matmul_io) * act_bytes


def gpu_decode(chip: ChipSpec, model: ModelSpec, prec: Precision, kvb: float,
               batch: int, ctx: int, n: int) -> Work:
    """Tensor parallel over n chips: weights split n ways, KV split by KV head (replicated
    once n exceeds the KV heads), two all-reduces of the activations per layer."""
    kv_shards = min(n, model.kv_heads)
    weights = _weight_bytes(model, prec, batch) / n / prec.stream_eff
    kv = batch * model.kv_elems_stored(ctx) * kvb / kv_shards
    flops = batch * (model.linear_flops_per_token() + model.attn_flops_per_token(model.attended_ctx(ctx))) / n
    peak = chip.peak_tflops(prec.compute) * 1e12
    comm = 2 * model.layers * _allreduce_s(chip, n, batch * model.hidden * 2)
    bw = chip.mem_bw_gbs * 1e9
    return Work("decode", weights / bw, flops / peak, 0.0, model.layers, comm, kv_s=kv / bw,
                host_layers=host_layer_units(model))


def _causal_pairs(model: ModelSpec, prompt: int) -> float:
    """Query-key pairs per sequence in a causal prefill (sliding layers see a window)."""
    full = prompt * (prompt + 1) / 2
    if model.sliding_window and model.sliding_layers:
        w = min(prompt, model.sliding_window)
        local = prompt * w - w * (w - 1) / 2
        return model.sliding_layers * local + (1 - model.sliding_layers) * full
    return full


def gpu_prefill(chip: ChipSpec, model: ModelSpec, prec: Precision, kvb: float,
                batch: int, prompt: int, n: int) -> Work:
    tokens = batch * prompt
    act = 2.0
    weights = _weight_bytes(model, prec, tokens) / n / prec.stream_eff
    kv_write = tokens * model.kv_elems_per_token() * kvb / min(n, model.kv_heads)
    layer_flops = 2.0 * model.layer_params_touched(1) * tokens
    head_flops = 2.0 * model.head_params * batch
    attn_flops = 4.0 * model.layers * model.heads * model.head_dim * batch * _causal_pairs(model, prompt)
    peak = chip.peak_tflops(prec.compute) * 1e12
    bw = chip.mem_bw_gbs * 1e9
    elem = tokens * model.layers * _elem_bytes_per_token_layer(model, act) / n
    comm = 2 * model.layers * _allreduce_s(chip, n, tokens * model.hidden * act)
    return Work("prefill", (weights + kv_write) / bw, (layer_flops + head_flops + attn_flops) / n / peak,
                elem / bw, model.layers, comm, host_layers=host_layer_units(model))


def _wafer_resident(model: ModelSpec, prec: Precision, kv_total: float, n: int) -> float:
    return (model.total_params * prec.bytes + kv_total) / n


def wafer_decode(chip: ChipSpec, model: ModelSpec, prec: Precision, kvb: float,
                 batch: int, ctx: int, n: int) -> Work:
    """Wafer-scale: weights and KV resident in SRAM, each layer a region of the wafer sized by
    its bytes, a token flowing through the regions as a pipeline (n wafers split by layers).

    A layer's region streams its share of the wafer's bandwidth, so streaming a layer takes
    (touched fraction of the layer) x (bytes resident per wafer) / (wafer bandwidth): dense
    layers touch all their bytes, MoE layers only the routed experts (experts sharded over the
    whole region). Up to `layers` sequences ride the pipeline at once without slowing each
    other; beyond that each stage handles ceil(batch / layers) tokens per pass.
    """
    L = model.layers
    micro = math.ceil(batch / L)
    kv_total = batch * model.kv_elems_stored(ctx) * kvb
    resident = _wafer_resident(model, prec, kv_total, n)
    kv_share = kv_total / n
    weight_share = resident - kv_share
    touched = model.layer_params_touched(micro) / model.layer_params_total
    # per-layer streaming: the touched part of the weights plus the micro-batch's KV
    mem_per_layer = (touched * weight_share + kv_share * micro / batch) / (chip.mem_bw_gbs * 1e9)
    # per-layer compute on the region's share of the wafer's FLOPs: a region holding a
    # fraction x of the resident bytes owns a fraction x of the cores, so a token's matmuls in a
    # layer take 2 * touched * resident / (bytes per weight * peak), whatever the layer's size
    peak = chip.peak_tflops(prec.compute) * 1e12
    comp_per_layer = micro * 2.0 * touched * weight_share / (prec.bytes * peak)
    comm = (n - 1) * chip.link_latency_us * 1e-6
    return Work("decode", L * mem_per_layer, L * comp_per_layer, 0.0, L, comm)


def wafer_prefill(chip: ChipSpec, model: ModelSpec, prec: Precision, kvb: float,
                  batch: int, prompt: int, n: int) -> Work:
    """Prefill fills the layer pipeline and keeps every region busy: compute-bound on all n
    wafers' FLOPs, plus one pass of streaming and the per-layer latency to fill the pipe."""
    tokens = batch * prompt
    kv_total = batch * model.kv_elems_stored(prompt) * kvb
    resident = _wafer_resident(model, prec, kv_total, n)
    flops = 2.0 * model.layer_params_touched(1) * tokens + 2.0 * model.head_params * batch
    flops += 4.0 * model.layers * model.heads * model.head_dim * batch * _causal_pairs(model, prompt)
    peak = chip.peak_tflops(prec.compute) * 1e12 * n
    comm = (n - 1) * chip.link_latency_us * 1e-6
    return Work("prefill", resident / (chip.mem_bw_gbs * 1e9), flops / peak, 0.0, model.layers, comm)


def pipeline_split(work: Work, chip: ChipSpec, n: int) -> Work:
    """Layers split over n chips (llama.cpp-style): one sequence visits the chips in turn, so
    a step costs what one chip holding everything would take, plus one activation hand-off per
    boundary. The split buys memory, not speed, for a single stream."""
    return dataclasses.replace(work, comm_s=(n - 1) * chip.link_latency_us * 1e-6)


def build_work(chip: ChipSpec, model: ModelSpec, prec: Precision, kvb: float, phase: str,
               batch: int, length: int, n: int, parallel: str = "tensor") -> Work:
    """Dispatch on the chip kind (wafer vs everything else), phase and parallel mode."""
    if parallel == "pipeline" and chip.kind != "wafer" and n > 1:
        return pipeline_split(build_work(chip, model, prec, kvb, phase, batch, length, 1), chip, n)
    if chip.kind == "wafer":
        fn = wafer_decode if phase == "decode" else wafer_prefill
    else:
        fn = gpu_decode if phase == "decode" else gpu_prefill
    return fn(chip, model, prec, kvb, batch, length, n)
