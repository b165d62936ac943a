"""Price each operation of a step on one GPU: a roofline per kernel, wave quantisation, launch overhead.

An operation costs ``max(GPU time, host time)``, summed over its occurrences:

- GPU time = max(FLOPs / achievable rate, bytes / achievable bandwidth), and at least the
  per-kernel floor of a kernel launched back to back (CUDA graph replay, [K2]).
  GEMMs run at the GPU's measured maximum achievable matmul rate (data/rates.csv: MAMF and
  ``torch.mm`` measurements) times the share of the last wave of output tiles that is busy
  (tiles of ``gemm_tile_m x gemm_tile_n`` over the GPU's SMs; NVIDIA's "Matrix Multiplication
  Background" guide [K3]). Fused attention kernels run at FlashAttention-2's measured share of the
  peak for the GPU family [K4][R5]. Everything else is memory-bound: each kernel pays its die's
  measured fixed time t0 and its bytes stream at the large-array bandwidth, t0 + bytes / bw
  (docs/kernels.md, [K12a]-[K12e]).
- Host time = kernels x the host's dispatch cost per kernel (eager PyTorch [K1], or a CUDA graph
  replay [K2]); in eager mode it depends on the phase: forward and recompute ops run from Python and
  autograd records them, the backward's kernels are called from C++ by the autograd engine, the optimizer
  step runs under no_grad ([K13a][K13b], docs/kernels.md). Kernels are launched asynchronously, so the
  host only sets the pace when a kernel finishes faster than the next one can be dispatched. On a CPU
  (``DeviceRates.synchronous``) the dispatch runs on the same thread as the kernel and adds to it. An
  op that makes the host wait for the GPU (``Op.host_sync``, e.g. ``torch.nonzero``) drains the queue:
  its dispatch, its GPU time and the dispatch of the kernel after it follow one another.

The split ``StepPrice.by_kind`` adds each operation's GPU time to its kind and the excess of host
time over GPU time to "launch overhead". Pure: the rates come in ``Rates``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwork.estimate.gemm import gemm_time
from gpuwork.estimate.ops import Kind, MoeExperts, Op, Phase, StackKernels
from gpuwork.facts.catalog import GpuSpec
from gpuwork.facts.rates import DeviceRates, Rates, StackProfile

LAUNCH_OVERHEAD = "launch overhead"


@dataclass(frozen=True)
class StepPrice:
    """Seconds of one optimizer step on one GPU, by kind of work (communication and data come later)."""

    total_s: float
    by_kind: dict[str, float]  # matmul, attention, memory, optimizer (GPU-bound seconds), launch overhead
    by_phase: dict[str, float]  # forward, backward, recompute, optimizer
    launches: int  # kernels per step
    flops: float  # executed FLOPs per step
    bytes: float  # bytes moved per step
    assumptions: dict[str, str]  # rate used -> its source


def stack_kernels(profile: StackProfile, moe_experts: MoeExperts | str | None = None) -> StackKernels:
    """The op list's view of a stack; ``moe_experts`` overrides the stack's expert layout (a run on an older
    transformers, see ``estimate.timing.estimate_time``)."""
    return StackKernels(fused_norm=profile.fused_norm, fused_rope=profile.fused_rope,
                        fused_mlp_activation=profile.fused_mlp_activation,
                        fused_cross_entropy=profile.fused_cross_entropy, fused_lora=profile.fused_lora,
                        fuse_elementwise=profile.fuse_elementwise, adapters_fp32=profile.adapters_fp32,
                        moe_experts=MoeExperts(moe_experts or profile.moe_experts))


def attention_fraction(gpu: GpuSpec, rates: Rates, attention_pass: str) -> tuple[float, str]:
    """FlashAttention-2's share of the dense 16-bit peak on this GPU family, for "fwd" or "bwd"."""
    family = {"h100": "h100", "h200": "h200", "gb200": "gb200", "b200": "gb200", "mi300x": "mi300x",
              "mi325x": "mi300x"}
    key = next((v for k, v in family.items() if gpu.gpu_id.startswith(k)), "a100")
    fwd_key = f"flash_attn_fwd_fraction_{key}"
    fwd = rates.kernels.get(fwd_key, rates.kernel("flash_attn_fwd_fraction"))
    if attention_pass == "fwd":
        return fwd, fwd_key
    bwd_key = f"flash_attn_bwd_fraction_{key}"
    if bwd_key in rates.kernels:
        return rates.kernels[bwd_key], bwd_key
    # no backward measurement for this family: the A100 backward/forward ratio of the FA2 paper
    ratio = rates.kernel("flash_attn_bwd_fraction") / rates.kernel("flash_attn_fwd_fraction")
    return fwd * ratio, f"{fwd_key} x flash_attn_bwd_fraction / flash_attn_fwd_fraction"


def wave_efficiency(m: int, n: int, sm_count: int, tile_m: int, tile_n: int) -> float:
    """Busy share of the SMs over a GEMM's waves of output tiles (1.0 when the last wave is full).

    Worked example: m = 2048, n = 4096 on 132 SMs with 128 x 256 tiles: 16 x 16 = 256 tiles,
    2 waves of 132, 256 / 264 = 0.97.
    """
    tiles = math.ceil(m / tile_m) * math.ceil(n / tile_n)
    waves = math.ceil(tiles / sm_count)
    return tiles / (waves * sm_count)


def gemm_seconds(op: Op, gpu: GpuSpec, device: DeviceRates, rates: Rates) -> float:
    """Seconds of a MATMUL op's GEMMs by their shape (``estimate.gemm``): k = FLOPs / (2 m n) per GEMM; a backward
    op's input gradient is m x k over n and its weight gradient k x n over m."""
    gemms = max(1, op.launches)
    k = max(1, round(op.flops / (2.0 * op.m * op.n * gemms)))
    if op.phase is Phase.BACKWARD and gemms <= 2:
        shapes = ((op.m, k, op.n), (k, op.n, op.m))[:gemms]
    else:
        shapes = ((op.m, op.n, k),) * gemms
    achievable = device.matmul_flops.get(op.dtype, device.matmul_flops["bf16"])
    peak = {"fp32": gpu.fp32_flops, "fp16": gpu.fp16_dense_flops}.get(op.dtype, gpu.bf16_dense_flops)
    args = (4 if op.dtype == "fp32" else 2, max(peak, achievable), achievable, device.sm_count,
            device.mem_bw_bytes_s, rates.gemm_tiles, rates.kernel("gemm_latency_us") * 1e-6,
            rates.kernel("gemm_tile_overhead_us") * 1e-6, int(rates.kernel("gemm_max_split_k")))
    return sum(gemm_time(m, n, kk, *args) for m, n, kk in shapes)


def memory_kernel_t0_us(gpu: GpuSpec, rates: Rates) -> tuple[float, str]:
    """Fixed time of one memory-bound kernel on this GPU (start, ramp and tail; docs/kernels.md), and its key.

    Measured per die (kernels.csv ``membw_t0_us_<die>``, the die being the last word of gpus.csv
    ``architecture``: ga100, gh100, gb100, gb202); a die with no measurement takes ``membw_t0_us``.
    """
    die = gpu.architecture.split()[-1].lower() if gpu.architecture else ""
    key = f"membw_t0_us_{die}"
    if key in rates.kernels:
        return rates.kernels[key], key
    return rates.kernel("membw_t0_us"), "membw_t0_us"


def memory_kernel_s(bytes_moved: float, launches: int, bw_bytes_s: float, t0_s: float) -> float:
    """Seconds of a chain of memory-bound kernels: each pays t0, the bytes stream at the large-array bandwidth.

    Worked example (A100-SXM4-80GB, t0 8.33 us, 1610 GB/s): one kernel moving 33.5 MB takes
    8.33 + 20.84 = 29.2 us; nvbench measured 31.2-31.7 us (docs/kernels.md).
    """
    return launches * t0_s + bytes_moved / bw_bytes_s


# Host dispatch per kernel in eager PyTorch, by phase (docs/kernels.md): forward ops and the recompute of
# gradient checkpointing run from Python and autograd records them; the backward's kernels are called by the
# autograd engine from C++ with grad mode off; the optimizer step runs under torch.no_grad.
_EAGER_HOST_KEYS = {Phase.FORWARD: "launch_overhead_eager_us", Phase.RECOMPUTE: "launch_overhead_eager_us",
                    Phase.BACKWARD: "launch_overhead_eager_backward_us",
                    Phase.OPTIMIZER: "launch_overhead_eager_nograd_us"}


def host_us_per_kernel(phase: Phase, rates: Rates, profile: StackProfile, device: DeviceRates) -> float:
    """Microseconds the host spends dispatching one kernel of this phase (a CUDA graph replays them all alike)."""
    if device.host_us_per_kernel is not None:
        return device.host_us_per_kernel
    if profile.launch != "eager":
        return rates.kernel("launch_overhead_graph_us")
    return rates.kernel(_EAGER_HOST_KEYS[phase])


def price_ops(ops: tuple[Op, ...], gpu: GpuSpec, device: DeviceRates, rates: Rates, profile: StackProfile,
              efficiency: float = 1.0) -> StepPrice:
    """Seconds of the step's operations on one GPU (see the module docstring).

    ``efficiency`` divides every time, GPU and host (1.0 = the rates as measured): the one factor a
    measured step determines (``estimate.timing`` fits it from a trial). Results are cached per op
    list (``step_ops`` returns the same tuple for the same plan), GPU, stack and factor.
    """
    key = (id(ops), gpu.gpu_id, id(device), id(rates), profile.stack, efficiency)
    hit = _PRICES.get(key)
    # the entry holds the objects themselves: an id reused after one is freed must not match
    if hit is not None and hit[0] is ops and hit[1] is device and hit[2] is rates:
        return hit[3]
    price = _price_ops(ops, gpu, device, rates, profile, efficiency)
    if len(_PRICES) > 4096:
        _PRICES.clear()
    _PRICES[key] = (ops, device, rates, price)
    return price


_PRICES: dict[tuple, tuple[tuple[Op, ...], DeviceRates, Rates, StepPrice]] = {}


def _price_ops(ops: tuple[Op, ...], gpu: GpuSpec, device: DeviceRates, rates: Rates, profile: StackProfile,
               efficiency: float) -> StepPrice:
    host_s_by_phase = {ph: host_us_per_kernel(ph, rates, profile, device) * 1e-6 for ph in Phase}
    floor_s = 0.0 if device.synchronous else rates.kernel("launch_overhead_graph_us") * 1e-6
    t0_s = 0.0 if device.synchronous else memory_kernel_t0_us(gpu, rates)[0] * 1e-6
    tile_m, tile_n = int(rates.kernel("gemm_tile_m")), int(rates.kernel("gemm_tile_n"))
    bw = device.mem_bw_bytes_s
    kind_s = dict.fromkeys(Kind, 0.0)
    phase_s: dict = {}
    overhead_s = 0.0
    launches, flops_total, bytes_total = 0, 0.0, 0.0
    attn_cache: dict[tuple[str, str], float] = {}
    for op in ops:
        if op.count <= 0:
            continue
        if op.kind is Kind.ATTENTION and op.attention_pass:
            rate_key = (op.attention_pass, op.dtype)
            rate = attn_cache.get(rate_key)
            if rate is None:
                if op.dtype == "fp32":
                    rate = rates.kernel("sdpa_mem_efficient_fraction") * gpu.fp32_flops
                else:
                    peak = gpu.fp16_dense_flops if op.dtype == "fp16" else gpu.bf16_dense_flops
                    rate = attention_fraction(gpu, rates, op.attention_pass)[0] * peak
                attn_cache[rate_key] = rate
            compute = op.flops / rate
        elif op.flops > 0:
            rate = device.matmul_flops.get(op.dtype, device.matmul_flops["bf16"])
            if op.m and op.n and rates.gemm_tiles and not device.synchronous:
                compute = gemm_seconds(op, gpu, device, rates)
            else:
                if op.m and op.n:
                    rate *= wave_efficiency(op.m, op.n, device.sm_count, tile_m, tile_n)
                compute = op.flops / rate
        else:
            compute = 0.0
        if compute > 0.0:
            gpu_s = max(compute, op.bytes / bw, op.launches * floor_s) / efficiency
        else:  # memory-bound: each kernel pays its fixed time, the bytes stream at full bandwidth
            gpu_s = memory_kernel_s(op.bytes, op.launches, bw, t0_s) / efficiency
        host_s_per_launch = host_s_by_phase[op.phase]
        host_s = op.launches * host_s_per_launch / efficiency
        if device.synchronous:
            one = gpu_s + host_s
        elif op.host_sync:  # the queue is empty: nothing hides this dispatch, the wait or the next dispatch
            one = gpu_s + host_s + host_s_per_launch / efficiency
        else:
            one = max(gpu_s, host_s)
        kind_s[op.kind] += gpu_s * op.count
        overhead_s += (one - gpu_s) * op.count
        phase_s[op.phase] = phase_s.get(op.phase, 0.0) + one * op.count
        launches += op.launches * op.count
        flops_total += op.flops * op.count
        bytes_total += op.bytes * op.count
    by_kind = {k.value: v for k, v in kind_s.items()}
    by_kind[LAUNCH_OVERHEAD] = overhead_s
    by_phase = {k.value: v for k, v in phase_s.items()}
    total = sum(by_kind.values())
    assumptions = {
        "matmul": device.basis.get("matmul_bf16", ""),
        "memory bandwidth": device.basis.get("mem_bw", ""),
        "SMs": device.basis.get("sm", ""),
        "attention": rates.kernel_basis.get("flash_attn_fwd_fraction", ""),
        "launch": rates.kernel_basis.get("launch_overhead_eager_us" if profile.launch == "eager"
                                         else "launch_overhead_graph_us", ""),
        "memory kernel": rates.kernel_basis.get(memory_kernel_t0_us(gpu, rates)[1], ""),
        "stack": profile.basis,
    }
    return StepPrice(total_s=total, by_kind=by_kind, by_phase=by_phase, launches=launches, flops=flops_total,
                     bytes=bytes_total, assumptions=assumptions)


__all__ = ["LAUNCH_OVERHEAD", "StepPrice", "attention_fraction", "gemm_seconds", "host_us_per_kernel",
           "memory_kernel_s", "memory_kernel_t0_us", "price_ops", "stack_kernels", "wave_efficiency"]
