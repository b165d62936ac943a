"""Price each operation of a step on one GPU: a roofline per kernel, wave quantisation, launch overhead.

Each operation has a GPU time and a host time (below); the host issues the kernels into the stream's queue and runs
ahead of the GPU, so a phase of the step (forward; recompute with backward; optimizer) costs what the GPU's finish
advances over it, max(GPU finish before it + its GPU time, host clock after it), not the sum of per-op maxima
(``_queued``):

- GPU time = max(FLOPs / achievable rate, bytes / achievable bandwidth), and at least the
  per-kernel floor of a kernel launched back to back (CUDA graph replay, [K2]).
  GEMMs run at the GPU's measured maximum achievable matmul rate (data/rates.csv: MAMF and
  ``torch.mm`` measurements) times the share of the last wave of output tiles that is busy
  (tiles of ``gemm_tile_m x gemm_tile_n`` over the GPU's SMs; NVIDIA's "Matrix Multiplication
  Background" guide [K3]). Fused attention kernels run at FlashAttention-2's measured share of the
  peak for the GPU family [K4][R5], by sequence length, head dim and mask where the family has measured curves
  (data/attention_curves.csv, ``curve_fraction``; [K4c][K4d]); under SDPA the kernel torch runs (TrainPlan.sdpa_backend,
  ``estimate.sdpa_backend``: FlashAttention-2 as torch ships it, or cuDNN's, [K22]). Everything else is memory-bound: each kernel pays its die's
  measured fixed time t0 and its bytes stream at the large-array bandwidth, t0 + bytes / bw
  (docs/kernels.md, [K12a]-[K12f]); a foreach or fused optimizer pass split into 320-block launches
  (``Op.mta_split``) streams at kernels.csv ``mta_split_bandwidth_share`` of it ([K18a]); the passes of a per-tensor
  chain that stay in L2 (``Op.l2_reads``: a hand-written or for-loop AdamW, a softmax or SiLU written op by op, an eager RMSNorm or rotary) move
  at the GPU's measured L2 copy rate for their working set where it has one (``estimate.l2_reuse``,
  data/l2_measurements.csv, [K21a]); t0 of kernels launched
  back to back, as the host queues a step's kernels
  ahead of the GPU (where the host sets the pace, max(GPU, host) below charges it).
- Host time = kernels x the host's dispatch cost per kernel (eager PyTorch, measured on a lent H200's hosts
  [K22], or a CUDA graph replay [K2]); in eager mode it depends on the phase: forward and recompute kernels run
  inside modules' Python and autograd records them, the backward's are run node by node by the autograd engine
  (the dearest per kernel), the optimizer's are bare ops under no_grad (docs/kernels.md). Kernels are launched
  asynchronously, so the host only sets the pace where it falls behind the GPU (``_queued``). On a CPU
  (``DeviceRates.synchronous``) the dispatch runs on the same thread as the kernel and adds to it. An
  op that makes the host wait for the GPU (``Op.host_sync``, e.g. ``torch.nonzero``) drains the queue:
  its dispatch, its GPU time and the dispatch of the kernel after it follow one another, and that kernel
  starts on an idle GPU (the single-launch t0 instead of the back-to-back one, charged to the sync).
  Under ``CUDA_LAUNCH_BLOCKING=1`` (``blocking``, TrainPlan.launch_blocking) every launch returns only once its
  kernel has run ([K19a][K19b], docs/kernels.md): each kernel costs its dispatch plus its GPU time, and each starts
  on an idle GPU (a memory-bound kernel pays the single-launch t0).
  With TF32 on (``tf32``, TrainPlan.tf32: ``allow_tf32`` / ``set_float32_matmul_precision("high")``) every fp32
  GEMM and bmm (an op of dtype "fp32" that is not a fused attention kernel) runs on the tensor cores: the same tile
  model at the GPU's dense TF32 peak, capped by the measured BF16 large-GEMM rate x (TF32 peak / BF16 peak)
  (``tf32_rates``, docs/gemm_tf32.md). A GPU without a TF32 figure keeps the FP32 rate.

The split ``StepPrice.by_kind`` adds each operation's GPU time to its kind and the time the GPU waits for the host
to "launch overhead". Pure: the rates come in ``Rates``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from gpuwork.errors import CatalogError
from gpuwork.estimate.gemm import GemmKernels, Tiles, gemm_choice, tiles_peak
from gpuwork.estimate.l2_reuse import l2_saving_s
from gpuwork.estimate.ops import Kind, MoeExperts, Op, Phase, StackKernels
from gpuwork.estimate.sdpa_backend import cudnn_first, sdpa_kernels
from gpuwork.facts.catalog import GpuSpec
from gpuwork.facts.hashed import HashedTuple, IdentityMemo
from gpuwork.facts.rates import FA2_KERNEL, KERNELS_CSV, AttentionPoint, DeviceRates, Rates, StackProfile
from gpuwork.message import msg

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


@functools.lru_cache(maxsize=64)
def stack_kernels(profile: StackProfile, moe_experts: MoeExperts | str | None = None) -> StackKernels:
    """The op list's view of a stack; ``moe_experts`` overrides the stack's expert layout (a run on an older
    transformers, see ``estimate.timing.estimate_time``)."""
    return StackKernels(fused_norm=profile.fused_norm, fused_rope=profile.fused_rope,
                        fused_mlp_activation=profile.fused_mlp_activation,
                        fused_cross_entropy=profile.fused_cross_entropy, fused_lora=profile.fused_lora,
                        fuse_elementwise=profile.fuse_elementwise, adapters_fp32=profile.adapters_fp32,
                        model_16bit=profile.model_16bit, sdpa_padding_mask=profile.sdpa_padding_mask,
                        torch_gelu=profile.torch_gelu, loss_logits_dtype=profile.loss_kernel == "native",
                        moe_experts=MoeExperts(moe_experts or profile.moe_experts),
                        embeddings_hooked=profile.embeddings_hooked)


_FAMILY_KEY = "flash_attn_fwd_fraction_"


def kernel_families(rates: Rates) -> tuple[str, ...]:
    """The kernel families the rates measure: kernels.csv ``flash_attn_fwd_fraction_<family>`` rows and
    attention_curves.csv families (gpus.csv ``kernel_family`` names one of them)."""
    keyed = (k.removeprefix(_FAMILY_KEY) for k in rates.kernels if k.startswith(_FAMILY_KEY))
    return tuple(sorted({*keyed, *rates.attention_families}))


def attention_family(gpu: GpuSpec, rates: Rates) -> str:
    """The GPU's kernel family (gpus.csv ``kernel_family``), refused when absent or not measured: a card is never
    priced with another family's rates by default."""
    family = gpu.kernel_family
    if family and (_FAMILY_KEY + family in rates.kernels or family in rates.attention_families):
        return family
    families = ", ".join(kernel_families(rates))
    if not family:
        raise CatalogError(msg("error.rates.no_kernel_family", gpu_id=gpu.gpu_id, families=families))
    raise CatalogError(msg("error.rates.kernel_family", gpu_id=gpu.gpu_id, family=family, families=families))


def attention_fraction(gpu: GpuSpec, rates: Rates, attention_pass: str) -> tuple[float, str]:
    """FlashAttention-2's share of the dense 16-bit peak on this GPU family, for "fwd" or "bwd"."""
    key = attention_family(gpu, rates)
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


def curve_fraction(points: tuple[AttentionPoint, ...], attention_pass: str, causal: bool, head_dim: int,
                   seq_len: int, bwd_over_fwd: float | None = None, kernel: str = FA2_KERNEL) -> float | None:
    """A fused attention kernel's measured share of the dense peak at this sequence length (attention_curves.csv).

    The curve of the pass and mask at the nearest measured head dim, linear in log2(sequence length) between the
    measured lengths and flat beyond them; a causal backward with no curve of its own takes the full-matrix one
    (docs/kernels.md). A family measured forward only prices its backward as the full-matrix forward curve x
    ``bwd_over_fwd`` (None: no backward). Only ``kernel``'s rows count (FlashAttention-2 by default). None when
    the family has no curve for the pass.

    Worked example (H100, causal forward, head dim 128): 3,072 tokens lie between the curve's 2k (275.5 TF) and
    4k (294.9 TF) points: 275.5 + (294.9 - 275.5) x log2(1.5) = 286.9 TF, 0.290 of 989.
    """
    points = tuple(p for p in points if p.kernel == kernel)
    rows = [p for p in points if p.attention_pass == attention_pass and p.causal == causal]
    scale = 1.0
    if not rows and causal and attention_pass == "bwd":
        rows = [p for p in points if p.attention_pass == "bwd" and not p.causal]
    if not rows and attention_pass == "bwd" and bwd_over_fwd is not None:
        rows = [p for p in points if p.attention_pass == "fwd" and not p.causal]
        scale = bwd_over_fwd
    if not rows or seq_len <= 0 or head_dim <= 0:
        return None
    dim = min({p.head_dim for p in rows}, key=lambda d: (abs(math.log2(d / head_dim)), d))
    curve = sorted((p.seq_len, p.fraction) for p in rows if p.head_dim == dim)
    if seq_len <= curve[0][0]:
        return curve[0][1] * scale
    for (s0, f0), (s1, f1) in zip(curve, curve[1:], strict=False):
        if seq_len <= s1:
            return (f0 + (f1 - f0) * math.log2(seq_len / s0) / math.log2(s1 / s0)) * scale
    return curve[-1][1] * scale


def wave_efficiency(m: int, n: int, sm_count: int, tile_m: int, tile_n: int) -> float:
    """Busy share of the SMs over a GEMM's waves of output tiles (1.0 when the last wave is full).

    Worked example: m = 2048, n = 4096 on 132 SMs with 128 x 256 tiles: 16 x 16 = 256 tiles,
    2 waves of 132, 256 / 264 = 0.97.
    """
    tiles = math.ceil(m / tile_m) * math.ceil(n / tile_n)
    waves = math.ceil(tiles / sm_count)
    return tiles / (waves * sm_count)


def tf32_rates(gpu: GpuSpec, device: DeviceRates) -> tuple[float, float] | None:
    """(dense TF32 peak, achievable large-GEMM rate) in FLOP/s, or None for a GPU without a TF32 figure (gpus.csv
    tf32_dense_tflops empty). No GPU in the catalog has a measured TF32 ``torch.mm`` rate, so the achievable one is
    the measured BF16 rate at the same share of its peak: a TF32 MMA instruction does half the k-depth of a BF16 one
    (m16n8k8 against m16n8k16) through the same tensor cores, every NVIDIA datasheet in the catalog rates TF32 at
    half the BF16 dense peak, and the CTA tiles are the same (docs/gemm_tf32.md)."""
    peak = gpu.tf32_dense_flops
    if peak is None:
        return None
    # the large-GEMM rate, not the sustained one: nothing measured says whether half-rate MMAs reach the power limit
    return peak, device.matmul_flops["bf16"] * peak / gpu.bf16_dense_flops


def fp8_rates(gpu: GpuSpec, device: DeviceRates) -> tuple[float, float] | None:
    """(dense FP8 peak, the rate its GEMMs run at back to back) in FLOP/s, or None for a GPU without FP8 tensor cores
    (gpus.csv fp8_dense_tflops empty). Where rates.csv has an fp8 row its rate; otherwise the 16-bit rate a step's
    GEMMs hold (``DeviceRates.gemm_flops``) at the same share of the FP8 peak: an FP8 MMA runs twice the k-depth
    of a BF16 one through the same tensor cores and CTA tiles (docs/fp8.md)."""
    peak = gpu.fp8_dense_flops
    if peak is None:
        return None
    flops = device.gemm_flops
    return peak, flops.get("fp8", flops["bf16"] * peak / gpu.bf16_dense_flops)


def gemm_seconds(op: Op, gpu: GpuSpec, device: DeviceRates, rates: Rates) -> float:
    """Seconds of a MATMUL op's GEMMs by their shape (``estimate.gemm``): k = FLOPs / (2 m n) per GEMM; a backward
    op's input gradient is m x k over n and its weight gradient k x n over m. Dtype "tf32": an fp32 GEMM on the
    tensor cores (``tf32_rates``)."""
    kernels = _device_gemm_kernels(gpu, device, rates, op.dtype)
    return _gemm_pricer(kernels)(op.m, op.n, op.flops, op.launches, op.phase is Phase.BACKWARD)


def _device_gemm_kernels(gpu: GpuSpec, device: DeviceRates, rates: Rates, dtype: str) -> GemmKernels:
    """What ``gemm_choice`` reads for one dtype on one GPU: its datasheet peak and the most its GEMMs run at (the
    rate held back to back where measured, ``DeviceRates.gemm_flops``; TF32 by ``tf32_rates``)."""
    special = tf32_rates(gpu, device) if dtype == "tf32" else fp8_rates(gpu, device) if dtype == "fp8" else None
    if dtype == "fp8" and special is None:  # no FP8 tensor cores: the 16-bit kernels, as _facts_gemm_kernels does
        dtype = "bf16"
    if special is not None:
        peak, achievable = special
    else:
        plain = "fp32" if dtype == "tf32" else dtype
        gemm_flops = device.gemm_flops
        achievable = gemm_flops.get(plain, gemm_flops["bf16"])
        peak = {"fp32": gpu.fp32_flops, "fp16": gpu.fp16_dense_flops}.get(plain, gpu.bf16_dense_flops)
    return _gemm_kernels(dtype, peak, achievable, device.sm_count, device.mem_bw_bytes_s, _gemm_facts(rates))


class _GemmFacts(NamedTuple):
    """gemm_tiles.csv and the kernels.csv GEMM constants (None: absent from the file)."""

    tiles: Tiles
    latency_us: float | None
    tile_overhead_us: float | None
    max_split_k: float | None


def _gemm_facts(rates: Rates) -> _GemmFacts:
    kernels = rates.kernels
    return _GemmFacts(rates.gemm_tiles, kernels.get("gemm_latency_us"), kernels.get("gemm_tile_overhead_us"),
                      kernels.get("gemm_max_split_k"))


def _gemm_kernels(dtype: str, peak: float, achievable: float, sm_count: int, bw: float,
                  gemm: _GemmFacts) -> GemmKernels:
    """What ``gemm_choice`` reads besides the shape, for one dtype (its datasheet peak and measured rate, FLOP/s)
    on one GPU. A TF32 kernel is the 16-bit tensor-core kernel with 4-byte elements: its fixed costs, per kernel
    (pipeline fill, epilogue) and per wave (prologue loads, epilogue store), move twice the bytes and take twice the
    16-bit ones (docs/gemm_tf32.md)."""
    fixed = TF32_FIXED_COST_FACTOR if dtype == "tf32" else 1.0
    simt = dtype == "fp32"  # SGEMM on the FP32 units: its largest tile reaches the measured rate (tiles_peak)
    return GemmKernels(4 if dtype in ("fp32", "tf32") else 1 if dtype == "fp8" else 2, tiles_peak(peak, achievable, gemm.tiles, simt=simt),
                       achievable, sm_count, bw, gemm.tiles,
                       _kernel_fact(gemm.latency_us, "gemm_latency_us") * 1e-6 * fixed,
                       _kernel_fact(gemm.tile_overhead_us, "gemm_tile_overhead_us") * 1e-6 * fixed,
                       int(_kernel_fact(gemm.max_split_k, "gemm_max_split_k")))


# 4-byte TF32 operands and fp32 outputs against the 2-byte ones the GEMM constants were measured with
TF32_FIXED_COST_FACTOR = 2.0


@functools.lru_cache(maxsize=16)
def _gemm_pricer(kernels: GemmKernels) -> Callable[[int, int, float, int, bool], float]:
    """Seconds of a MATMUL op from (m, n, FLOPs, GEMMs, backward) on one GPU and dtype (``kernels``), cached by
    those five numbers alone (at most 16 x 8,192 entries, a few tens of MB)."""
    return functools.lru_cache(maxsize=8192)(functools.partial(_gemm_op_seconds, kernels=kernels))


def _gemm_op_seconds(m: int, n: int, flops: float, launches: int, backward: bool, kernels: GemmKernels) -> float:
    gemms = max(1, launches)
    k = max(1, round(flops / (2.0 * m * n * gemms)))
    if backward and gemms <= 2:  # the input gradient, then the weight gradient
        seconds = gemm_choice(m, k, n, kernels).time_s
        return seconds + gemm_choice(k, n, m, kernels).time_s if gemms == 2 else seconds
    one = seconds = gemm_choice(m, n, k, kernels).time_s
    for _ in range(gemms - 1):
        seconds += one
    return seconds


def memory_kernel_t0_us(gpu: GpuSpec, rates: Rates, timing: str = "batch") -> tuple[float, str]:
    """Fixed time of one memory-bound kernel on this GPU (start, ramp and tail; docs/kernels.md), and its key.

    ``timing`` "batch": launched back to back from a queue the host keeps ahead (a step's kernels), kernels.csv
    ``membw_t0_batch_us_<die>``; "cold": a single launch into an idle GPU (the kernel after a host sync),
    ``membw_t0_us_<die>``. Measured per die (the last word of gpus.csv ``architecture``); a die with no
    measurement of that timing takes the median of the measured dies (``membw_t0_batch_us`` / ``membw_t0_us``).
    """
    return _per_die(gpu, rates, "membw_t0_batch_us" if timing == "batch" else "membw_t0_us")


def memory_strided_fraction(gpu: GpuSpec, rates: Rates) -> tuple[float, str]:
    """Share of the large-array bandwidth that an eager element-wise kernel TensorIterator cannot vectorise moves
    (transposed inputs, a broadcast operand: ``Op.strided_share``), and its key: kernels.csv
    ``membw_strided_fraction_<die>``, measured per die from Liger-Kernel's eager rotary rows; another die takes
    ``membw_strided_fraction`` (docs/kernels.md "Liger-Kernel's eager rows")."""
    return _per_die(gpu, rates, "membw_strided_fraction")


def _per_die(gpu: GpuSpec, rates: Rates, base: str) -> tuple[float, str]:
    """kernels.csv ``<base>_<die>`` (the die: the last word of gpus.csv ``architecture``) and its key, else ``base``."""
    die = gpu.architecture.split()[-1].lower() if gpu.architecture else ""
    key = f"{base}_{die}"
    if key in rates.kernels:
        return rates.kernels[key], key
    return rates.kernel(base), base


def memory_kernel_s(bytes_moved: float, launches: int, bw_bytes_s: float, t0_s: float) -> float:
    """Seconds of a chain of memory-bound kernels: each pays t0, the bytes stream at the large-array bandwidth.

    Worked example (A100-SXM4-80GB, single-launch t0 8.33 us, 1610 GB/s): one kernel moving 33.5 MB takes
    8.33 + 20.84 = 29.2 us; nvbench measured 31.2-31.7 us (docs/kernels.md).
    """
    return launches * t0_s + bytes_moved / bw_bytes_s


# Host dispatch per kernel in eager PyTorch, by phase (docs/kernels.md, [K22]): forward ops and the recompute of
# gradient checkpointing run inside modules' Python and autograd records them; the backward's kernels are run
# node by node by the autograd engine; the optimizer step's are bare ops under torch.no_grad.
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
              efficiency: float = 1.0, blocking: bool = False, tf32: bool = False) -> StepPrice:
    """Seconds of the step's operations on one GPU (see the module docstring).

    ``efficiency`` divides every time, GPU and host (1.0 = the rates as measured): the one factor a
    measured step determines (``estimate.timing`` fits it from a trial). Prices are cached by the op list
    (``step_ops`` returns one ``OpList`` per plan, its hash computed once) and by every number and source
    text the pricing reads (``_PriceFacts``). ``blocking``: every launch waits for its kernel
    (CUDA_LAUNCH_BLOCKING=1, TrainPlan.launch_blocking; the module docstring). ``tf32``: fp32 GEMMs and bmm on the
    tensor cores (TrainPlan.tf32; the module docstring).
    """
    return _price(ops, _facts_of(gpu, device, rates, profile, efficiency, blocking, tf32))


def _facts_of(gpu: GpuSpec, device: DeviceRates, rates: Rates, profile: StackProfile,
              efficiency: float, blocking: bool = False, tf32: bool = False) -> _PriceFacts:
    """``_price_facts``, built once per set of fact objects: an estimate asks for them once per shape it prices,
    and the same object keys the price cache by identity."""
    return _FACTS.get((gpu, device, rates, profile), (efficiency, blocking, tf32),
                      lambda: _price_facts(gpu, device, rates, profile, efficiency, blocking, tf32))


_FACTS: IdentityMemo[_PriceFacts] = IdentityMemo(256)


class _PriceFacts(NamedTuple):
    """Everything ``_price`` reads, as hashable values: the key of the price cache. Pricing sees only these,
    so a price cannot outlive a change of any fact it used."""

    host_s: tuple[float, ...]  # host dispatch per kernel, per Phase in declaration order
    floor_s: float  # per-kernel floor of back-to-back launches (0 on a synchronous device)
    t0_s: float  # fixed time of a memory-bound kernel launched back to back (0 on a synchronous device)
    t0_cold_s: float  # the same after a host sync: the next kernel starts on an idle GPU
    strided_fraction: float  # share of bw a strided memory-bound kernel moves (Op.strided_share; 1 on a synchronous device)
    bw: float  # achievable memory bandwidth, bytes/s
    synchronous: bool
    matmul: tuple[tuple[str, float], ...]  # dtype -> achievable matmul FLOP/s
    sm_count: int
    peaks: tuple[float, float, float]  # dense bf16, fp16, fp32 FLOP/s (datasheet)
    wave_tiles: tuple[int, int]  # kernels.csv gemm_tile_m / gemm_tile_n (wave quantisation without gemm_tiles)
    gemm: _GemmFacts
    # flash_attn fwd / bwd fractions of the GPU's family and generic, sdpa fraction (None: absent)
    attention: tuple[float | None, float | None, float | None, float | None, float | None]
    attention_curves: tuple[AttentionPoint, ...]  # the family's measured rates by sequence length (may be empty)
    efficiency: float
    assumptions: tuple[str, ...]  # StepPrice.assumptions, in the order of _ASSUMPTIONS
    mta_split_share: float = 1.0  # kernels.csv mta_split_bandwidth_share (1 on a synchronous device)
    blocking: bool = False  # every launch waits for its kernel (CUDA_LAUNCH_BLOCKING=1)
    tf32_peak: float = 0.0  # dense TF32 peak FLOP/s when fp32 GEMMs run as TF32 (TrainPlan.tf32); 0: they do not
    # (working set in bytes, bytes/s) of the GPU's measured L2 copy rows (DeviceRates.l2_copy; () on a synchronous
    # device or a GPU without one): the price of Op.l2_reads (estimate.l2_reuse)
    l2_steps: tuple[tuple[float, float], ...] = ()
    # torch's SDPA tries cuDNN's attention first on this GPU (estimate.sdpa_backend.cudnn_first)
    cudnn_first: bool = False
    fp8_peak: float = 0.0  # dense FP8 peak FLOP/s (TrainPlan.fp8_linear's GEMMs); 0: no FP8 tensor cores


_PHASES = tuple(Phase)
_VALUES = {member: member.value for member in (*Kind, *Phase)}  # an enum's .value is a Python-level property
_ASSUMPTIONS = ("matmul", "memory bandwidth", "SMs", "attention", "launch", "memory kernel", "stack")


def _price_facts(gpu: GpuSpec, device: DeviceRates, rates: Rates, profile: StackProfile,
                 efficiency: float, blocking: bool = False, tf32: bool = False) -> _PriceFacts:
    kernels, synchronous, eager = rates.kernels, device.synchronous, profile.launch == "eager"
    if device.host_us_per_kernel is not None or not eager:
        host_s = (host_us_per_kernel(Phase.FORWARD, rates, profile, device) * 1e-6,) * len(_PHASES)
    else:
        host_s = tuple(rates.kernel(_EAGER_HOST_KEYS[phase]) * 1e-6 for phase in _PHASES)
    t0_us, t0_key = memory_kernel_t0_us(gpu, rates)
    t0_cold_us = memory_kernel_t0_us(gpu, rates, "cold")[0]
    family = attention_family(gpu, rates)
    fwd_key, bwd_key = f"flash_attn_fwd_fraction_{family}", f"flash_attn_bwd_fraction_{family}"
    basis, kernel_basis = device.basis, rates.kernel_basis
    tf32_rate = tf32_rates(gpu, device) if tf32 else None
    fp8_rate = fp8_rates(gpu, device)
    matmul = device.gemm_flops  # a step's GEMMs run back to back: the sustained rate where measured
    if tf32_rate is not None:
        matmul["tf32"] = tf32_rate[1]
    if fp8_rate is not None:
        matmul["fp8"] = fp8_rate[1]
    return _PriceFacts(
        host_s,
        0.0 if synchronous else rates.kernel("launch_overhead_graph_us") * 1e-6,
        0.0 if synchronous else t0_us * 1e-6,
        0.0 if synchronous else t0_cold_us * 1e-6,
        1.0 if synchronous else memory_strided_fraction(gpu, rates)[0],
        device.mem_bw_bytes_s,
        synchronous,
        tuple(matmul.items()),
        device.sm_count,
        (gpu.bf16_dense_flops, gpu.fp16_dense_flops, gpu.fp32_flops),
        (int(rates.kernel("gemm_tile_m")), int(rates.kernel("gemm_tile_n"))),
        _gemm_facts(rates),
        (kernels.get(fwd_key), kernels.get(bwd_key), kernels.get("flash_attn_fwd_fraction"),
         kernels.get("flash_attn_bwd_fraction"), kernels.get("sdpa_mem_efficient_fraction")),
        rates.curves(family),
        efficiency,
        (basis.get("sustained_bf16") or basis.get("matmul_bf16", ""), basis.get("mem_bw", ""), basis.get("sm", ""),
         kernel_basis.get("flash_attn_fwd_fraction", ""),
         kernel_basis.get("launch_overhead_eager_us" if eager else "launch_overhead_graph_us", ""),
         kernel_basis.get(t0_key, ""), profile.basis),
        1.0 if synchronous else rates.kernel("mta_split_bandwidth_share"),
        blocking,
        tf32_rate[0] if tf32_rate is not None else 0.0,
        () if synchronous else device.l2_copy,
        cudnn_first(gpu),
        fp8_rate[0] if fp8_rate is not None else 0.0,
    )


def _kernel_fact(value: float | None, key: str) -> float:
    """A kernels.csv value pricing needs (``Rates.kernel``'s error when the file lacks it)."""
    if value is None:
        raise CatalogError(msg("error.rates.missing_key", file=KERNELS_CSV, key=key))
    return value


def gemm_flops_s(gpu: GpuSpec, device: DeviceRates, rates: Rates, m: int, n: int, k: int,
                 dtype: str = "bf16") -> tuple[float, str]:
    """The FLOP/s at which ``price_ops`` prices one ``m x n x k`` GEMM in ``dtype`` on ``gpu`` (the shape model,
    estimate.gemm, under the rate the card holds back to back where measured), and how it got there: the one rule,
    for checks of a kernel timed alone (scripts/gpu_check.py)."""
    kernels = _device_gemm_kernels(gpu, device, rates, dtype)
    choice = gemm_choice(m, n, k, kernels)
    cap = "sustained_tflops" if dtype in device.sustained_flops else "matmul_tflops"
    how = ("memory floor (A, B and C once at the copy rate)" if choice.memory_bound else
           f"tile {choice.tile_m}x{choice.tile_n}, split-K {choice.split_k}, {choice.waves} wave(s) on "
           f"{device.sm_count} SMs")
    return (2.0 * m * n * k / choice.time_s,
            f"GEMM shape model: {how}, under rates.csv {cap} {kernels.achievable_flops / 1e12:.1f} TF")


def attention_flops_s(gpu: GpuSpec, device: DeviceRates, rates: Rates, op: Op) -> tuple[float, str]:
    """The FLOP/s (in the op's FLOPs) at which ``price_ops`` prices the fused attention ``op`` (its pass, dtype,
    length ``m``, head dim ``n``, mask and kernel) on ``gpu``, and where that rate comes from: the one rule, for
    checks of a kernel timed alone (scripts/gpu_check.py)."""
    any_stack = rates.stacks[next(iter(rates.stacks))]  # a stack changes which attention op runs, not its rate
    facts = _facts_of(gpu, device, rates, any_stack, 1.0)
    return _attention_choice(facts, op.attention_pass, op.dtype, (op.m, op.n), op.causal, op.mem_efficient, op.kernel,
                             explain=True)


def _attention_rate(facts: _PriceFacts, attention_pass: str, dtype: str, seq_len: int = 0, head_dim: int = 0,
                    causal: bool = False, mem_efficient: bool = False, kernel: str = "") -> float:
    return _attention_choice(facts, attention_pass, dtype, (seq_len, head_dim), causal, mem_efficient, kernel)[0]


def _attention_choice(facts: _PriceFacts, attention_pass: str, dtype: str, shape: tuple[int, int],
                      causal: bool = False, mem_efficient: bool = False, kernel: str = "",
                      explain: bool = False) -> tuple[float, str]:
    """FLOP/s of a fused attention kernel, in the op's FLOPs, and its basis: the family's measured curve at this
    length and head dim where attention_curves.csv has one (``curve_fraction``), else ``attention_fraction``; x the
    dtype's dense peak. SDPA's memory-efficient kernel (16-bit with a mask) runs at that flash rate x
    sdpa_mem_efficient_fraction / flash_attn_fwd_fraction, the FA2 paper's A100 ratio of a FlashAttention-1-class
    kernel to FlashAttention-2 (kernels.csv; 0.35 / 0.73 = 0.48): on an A100 near 0.35 of the peak, below FA2 on
    every family. Another ``kernel`` (FlashAttention-3, cuDNN) takes its own curve where the family has one, else
    FlashAttention-2's; an SDPA op (``sdpa:<backend>``) the curves of the kernel torch runs on this GPU
    (``sdpa_backend.sdpa_kernels``: cuDNN's as torch ran it, then cuDNN's own, or FlashAttention-2 as torch ships
    it), each before FlashAttention-2's. ``shape``: (sequence length, head dim). The basis is written only when
    ``explain`` (pricing needs the rate alone)."""
    seq_len, head_dim = shape
    kernels, mem_efficient = sdpa_kernels(kernel, facts.cudnn_first, mem_efficient)
    if mem_efficient and dtype != "fp32":
        _, _, fwd16, _, sdpa16 = facts.attention
        ratio16 = _kernel_fact(sdpa16, "sdpa_mem_efficient_fraction") / _kernel_fact(fwd16, "flash_attn_fwd_fraction")
        rate, basis = _attention_choice(facts, attention_pass, dtype, shape, causal, explain=explain)
        return rate * ratio16, f"{basis} x {ratio16:.3f} (memory-efficient kernel)" if explain else ""
    family_fwd, family_bwd, fwd, bwd, sdpa = facts.attention
    bf16_peak, fp16_peak, fp32_peak = facts.peaks
    if dtype == "fp32":
        fraction = _kernel_fact(sdpa, "sdpa_mem_efficient_fraction")
        basis = f"kernels.csv sdpa_mem_efficient_fraction {fraction:.3f} x fp32 peak" if explain else ""
        return fraction * fp32_peak, basis
    peak = fp16_peak if dtype == "fp16" else bf16_peak
    # a family measured forward only: the FA2 paper's A100 backward / forward ratio, as for the single fractions
    ratio = _kernel_fact(bwd, "flash_attn_bwd_fraction") / _kernel_fact(fwd, "flash_attn_fwd_fraction")
    points = facts.attention_curves
    # the kernels in order, those that measured this head dim first (torch's rows, head dim 64 / 128, do not price
    # a head dim 256 that flash-attn's rows measured); FlashAttention-2's last
    order = (*kernels, FA2_KERNEL)
    exact = tuple(k for k in order if any(p.kernel == k and p.attention_pass == attention_pass
                                          and p.head_dim == head_dim for p in points))
    for own_kernel in (*exact, *(k for k in order if k not in exact)):
        measured = curve_fraction(points, attention_pass, causal, head_dim, seq_len,
                                  ratio if own_kernel == FA2_KERNEL else None, own_kernel)
        if measured is not None:
            # the curves count a causal kernel's FLOPs as half the full matrix; the op counts the diagonal blocks
            # too (ops._attention_forward: x (1 + 128 / s)), so the op's FLOPs go through at that much more per second
            scale = 1 + 128 / seq_len if causal and seq_len > 128 else 1.0
            if not explain:
                return measured * peak * scale, ""
            return measured * peak * scale, (f"attention_curves.csv {points[0].family} {own_kernel} {attention_pass}"
                                             f"{' causal' if causal else ''}: {measured:.3f} x dense peak "
                                             f"{peak / 1e12:.0f} TF")
    fwd = _kernel_fact(fwd, "flash_attn_fwd_fraction")
    fraction, key = (family_fwd, "the family's flash_attn_fwd_fraction") if family_fwd is not None else (
        fwd, "flash_attn_fwd_fraction")
    if attention_pass != "fwd":
        if family_bwd is not None:
            fraction, key = family_bwd, "the family's flash_attn_bwd_fraction"
        else:  # no backward measurement for this family: the A100 backward/forward ratio of the FA2 paper
            fraction, key = fraction * (_kernel_fact(bwd, "flash_attn_bwd_fraction") / fwd), f"{key} x bwd/fwd"
    return fraction * peak, f"kernels.csv {key} {fraction:.3f} x dense peak {peak / 1e12:.0f} TF" if explain else ""


# what pricing reads of one op but its count: kind, phase (their values: a row of plain values is no work for the
# garbage collector, which a sweep's thousands of cached rows would otherwise cost), flops, bytes, launches,
# host_sync, attention_pass, dtype, m, n, causal, mem_efficient, kernel, mta_split, strided_share, l2_reads (a plain
# tuple: the pricing loop unpacks it)
_OpRow = tuple[str, str, float, float, int, bool, str, str, int, int, bool, bool, str, bool, float,
               tuple[tuple[float, float], ...]]
_PHASE_VALUES = tuple(_VALUES[p] for p in _PHASES)
_KIND_VALUES = tuple(_VALUES[k] for k in Kind)
_BACKWARD = Phase.BACKWARD.value


class _Rows(HashedTuple):
    """The ``_OpRow`` of each operation that runs: one step's operations without their counts, which plans that
    differ only in gradient accumulation share (the key of the per-row price cache)."""


class _StepRows(NamedTuple):
    """One step's operations as pricing reads them: the rows (``_Rows``), each row's kind, phase and count, and
    the step's kernels, FLOPs and bytes (the same on every GPU)."""

    rows: _Rows
    kinds: tuple[str, ...]
    phases: tuple[str, ...]
    counts: tuple[int, ...]
    launches: int
    flops: float
    bytes: float


@functools.lru_cache(maxsize=1024)
def _op_rows(ops: tuple[Op, ...]) -> _StepRows:
    """What pricing reads of each operation that runs (see ``_StepRows``)."""
    rows: list[_OpRow] = []
    counts: list[int] = []
    launches_total, flops_total, bytes_total = 0, 0.0, 0.0
    attention = Kind.ATTENTION
    for op in ops:
        if op.count <= 0:
            continue
        rows.append((_VALUES[op.kind], _VALUES[op.phase], op.flops, op.bytes, op.launches, op.host_sync,
                     op.attention_pass if op.kind is attention else "", op.dtype, op.m, op.n, op.causal,
                     op.mem_efficient, op.kernel, op.mta_split, op.strided_share, op.l2_reads))
        counts.append(op.count)
        launches_total += op.launches * op.count
        flops_total += op.flops * op.count
        bytes_total += op.bytes * op.count
    return _StepRows(_Rows(rows), tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(counts),
                     launches_total, flops_total, bytes_total)


@functools.lru_cache(maxsize=4096)
def _price(ops: tuple[Op, ...], facts: _PriceFacts) -> StepPrice:
    step = _op_rows(ops)
    gpu_times, times, host_times = _row_prices(step.rows, facts)
    by_kind = dict.fromkeys(_KIND_VALUES, 0.0)
    for kind, count, gpu_s in zip(step.kinds, step.counts, gpu_times, strict=True):
        by_kind[kind] += gpu_s * count
    if facts.synchronous or facts.blocking:  # dispatch and kernel one after the other: the rows add up
        by_phase: dict[str, float] = {}
        for phase, count, one in zip(step.phases, step.counts, times, strict=True):
            by_phase[phase] = by_phase.get(phase, 0.0) + one * count
    else:
        by_phase = _queued(step, gpu_times, times, host_times)
    total_s = sum(by_phase.values())
    by_kind[LAUNCH_OVERHEAD] = max(total_s - sum(by_kind.values()), 0.0)
    return StepPrice(total_s=total_s, by_kind=by_kind, by_phase=by_phase, launches=step.launches,
                     flops=step.flops, bytes=step.bytes, assumptions=dict(zip(_ASSUMPTIONS, facts.assumptions, strict=True)))


# Phases in the order the host issues them; the recompute of gradient checkpointing runs block by block inside the
# backward, so the two share one segment of the queue.
_QUEUE_SEGMENTS = ((_VALUES[Phase.FORWARD],), (_VALUES[Phase.RECOMPUTE], _VALUES[Phase.BACKWARD]),
                   (_VALUES[Phase.OPTIMIZER],))


def _queued(step: _StepRows, gpu_times: tuple[float, ...], times: tuple[float, ...],
            host_times: tuple[float, ...]) -> dict[str, float]:
    """Seconds per phase of an asynchronous step: the host issues kernels into the stream's queue and runs ahead of
    the GPU, which starts each kernel when it is issued and the one before has finished. A segment of H seconds of
    dispatch and G of GPU work, begun with the host at h and the GPU busy until e, ends on the GPU at
    max(e + G, h + H): its kernels repeat layer after layer, so within a segment the lead the host builds on long
    kernels is spent on short ones and the GPU idles only when the host is the slower overall (exact to within one
    layer's worth of kernels). An op that makes the host wait (``Op.host_sync``) drains the queue: its row runs
    serialised (``_row_prices``) after its segment. Each phase is charged the time the GPU's finish advances over it
    (a shared segment's advance split by the phases' own max(H, G))."""
    sums: dict[str, list[float]] = {}
    for row, phase, count, gpu_s, one, host_s in zip(step.rows, step.phases, step.counts, gpu_times, times,
                                                     host_times, strict=True):
        h_g_sync = sums.setdefault(phase, [0.0, 0.0, 0.0])
        if row[5]:  # host_sync
            h_g_sync[2] += one * count
        else:
            h_g_sync[0] += host_s * count
            h_g_sync[1] += gpu_s * count
    host = gpu = 0.0
    by_phase: dict[str, float] = {}
    for segment in _QUEUE_SEGMENTS:
        parts = [(phase, sums[phase]) for phase in segment if phase in sums]
        if not parts:
            continue
        h_s = sum(p[0] for _, p in parts)
        g_s = sum(p[1] for _, p in parts)
        sync_s = sum(p[2] for _, p in parts)
        start = gpu
        host += h_s
        gpu = max(gpu + g_s, host)
        if sync_s:  # drained: the host waits for the GPU, then each sync op runs serialised
            host = gpu = gpu + sync_s
        advance = gpu - start
        weights = [max(p[0], p[1]) + p[2] for _, p in parts]
        total_w = sum(weights)
        for (phase, _), w in zip(parts, weights, strict=True):
            by_phase[phase] = advance * (w / total_w if total_w else 1.0 / len(parts))
    return by_phase


@functools.lru_cache(maxsize=4096)
def _row_prices(rows: _Rows, facts: _PriceFacts) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """Seconds of one run of each row on the GPU, and with the host's share: a step's price is their sum weighted
    by the counts (``_price``), so steps that differ only in their counts price their rows once; and a row met in
    another step on the same facts is priced once (``_row_memo``: a sweep's 180,000 rows hold some 6,500 distinct
    ones)."""
    memo = _row_memo(facts)
    if len(memo) > _ROW_MEMO_ROWS:
        memo.clear()
    host_of = dict(zip(_PHASE_VALUES, facts.host_s, strict=True))
    floor_s, t0_s, bw, efficiency, synchronous = facts.floor_s, facts.t0_s, facts.bw, facts.efficiency, \
        facts.synchronous
    split_share = facts.mta_split_share
    cold_extra_s = facts.t0_cold_s - t0_s  # the kernel after a host sync starts cold, not back to back
    blocking = facts.blocking  # every launch waits for its kernel: each starts cold, after its own dispatch
    t0_launch_s = facts.t0_cold_s if blocking else t0_s
    tf32 = facts.tf32_peak > 0.0  # fp32 GEMMs and bmm on the tensor cores (TrainPlan.tf32)
    strided_fraction = facts.strided_fraction
    l2_steps = facts.l2_steps
    matmul = dict(facts.matmul)
    shaped = bool(facts.gemm.tiles) and not synchronous  # the GEMM shape model (estimate.gemm) prices GEMMs
    gemm_pricers: dict[str, Callable[[int, int, float, int, bool], float]] = {}
    attention_rates: dict[tuple[str, str, int, int, bool, bool, str], float] = {}
    gpu_times: list[float] = []
    times: list[float] = []
    host_times: list[float] = []
    for row in rows:
        priced = memo.get(row)
        if priced is None:
            (_, phase, flops, nbytes, launches, host_sync, attention_pass, dtype, m, n, causal, mem_eff, kernel,
             mta_split, strided, l2_reads) = row
            if tf32 and dtype == "fp32" and not attention_pass:  # the fused fp32 attention kernel is not a GEMM
                dtype = "tf32"
            if flops > 0:
                if attention_pass:
                    key = (attention_pass, dtype, m, n, causal, mem_eff, kernel)
                    rate = attention_rates.get(key)
                    if rate is None:
                        rate = attention_rates[key] = _attention_rate(facts, attention_pass, dtype, m, n, causal,
                                                                      mem_eff, kernel)
                    compute = flops / rate
                elif m and n and shaped:
                    pricer = gemm_pricers.get(dtype)
                    if pricer is None:
                        pricer = gemm_pricers[dtype] = _gemm_pricer(_facts_gemm_kernels(facts, dtype, matmul))
                    compute = pricer(m, n, flops, launches, phase == _BACKWARD)
                else:
                    rate = matmul.get(dtype, matmul["bf16"])
                    if m and n:
                        rate *= wave_efficiency(m, n, facts.sm_count, *facts.wave_tiles)
                    compute = flops / rate
            else:
                compute = 0.0
            if compute > 0.0:
                gpu_s = max(compute, nbytes / bw, launches * floor_s) / efficiency
            else:  # memory-bound: each kernel pays its fixed time, the bytes stream at full bandwidth (a split
                # multi-tensor pass's and a strided kernel's at their measured shares of it)
                stream_s = nbytes / (bw * (split_share if mta_split else 1.0))
                if strided:
                    stream_s *= 1.0 - strided + strided / strided_fraction
                if l2_reads and l2_steps:  # passes of a per-tensor chain that stay in L2 (estimate.l2_reuse)
                    stream_s -= l2_saving_s(l2_reads, l2_steps, bw)
                gpu_s = (launches * t0_launch_s + stream_s) / efficiency
            host_s_per_launch = host_of[phase]
            host_s = launches * host_s_per_launch / efficiency
            if synchronous or blocking:  # dispatch and kernel one after the other (a host sync adds no more)
                one = gpu_s + host_s
            elif host_sync:  # the queue is empty: nothing hides this dispatch, the wait or the next dispatch
                gpu_s += cold_extra_s / efficiency  # and the next kernel starts on an idle GPU
                one = gpu_s + host_s + host_s_per_launch / efficiency
            else:
                one = gpu_s if gpu_s >= host_s else host_s
            priced = memo[row] = (gpu_s, one, host_s)
        gpu_times.append(priced[0])
        times.append(priced[1])
        host_times.append(priced[2])
    return tuple(gpu_times), tuple(times), tuple(host_times)


_ROW_MEMO_ROWS = 200_000  # rows kept per set of facts (a few tens of MB at most)


@functools.lru_cache(maxsize=64)
def _row_memo(facts: _PriceFacts) -> dict[_OpRow, tuple[float, float, float]]:
    """(GPU seconds, seconds with the host's share, host seconds) of every row priced on these facts, by the row
    (its every value: equal rows price alike)."""
    return {}


def _facts_gemm_kernels(facts: _PriceFacts, dtype: str, matmul: dict[str, float]) -> GemmKernels:
    bf16_peak, fp16_peak, fp32_peak = facts.peaks
    peak = {"fp32": fp32_peak, "fp16": fp16_peak, "tf32": facts.tf32_peak, "fp8": facts.fp8_peak}.get(dtype, bf16_peak)
    if not peak:  # an fp8 GEMM on a GPU without FP8 (timing warns): the 16-bit kernels
        dtype, peak = "bf16", bf16_peak
    return _gemm_kernels(dtype, peak, matmul.get(dtype, matmul["bf16"]), facts.sm_count, facts.bw, facts.gemm)


__all__ = ["LAUNCH_OVERHEAD", "StepPrice", "attention_family", "attention_fraction", "kernel_families", "curve_fraction", "gemm_flops_s", "gemm_seconds", "host_us_per_kernel",
           "memory_kernel_s", "memory_kernel_t0_us", "price_ops", "stack_kernels", "fp8_rates", "tf32_rates", "wave_efficiency"]
