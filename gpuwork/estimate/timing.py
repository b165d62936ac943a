"""Training time of a plan on a GPU: FLOPs per token, step time, communication, data feed, total.

``estimate_time(plan, gpu, inputs) -> TimeEstimate`` is pure (no torch, no I/O: the kernel rates come
in ``inputs``): it lists the step's operations (``estimate.ops``), prices each on one GPU with the
GPU's achievable rates and the plan's stack (``estimate.steptime``), adds the communication that does
not hide behind compute, the offloaded optimizer and the data feed, then scales to the whole run with
evaluation, checkpoint writes and a margin. The FLOPs per token below are the model's FLOPs (what MFU
counts), reported beside the priced step. Seconds internally; hours only on display.

FLOP convention (one, labelled): per token, a weight costs 2 FLOPs forward, 2 for the gradient of
its input and 2 for its own gradient (Kaplan et al. 2020 §2.1: 6N for training). Frozen weights
skip their own gradient, so adapters (LoRA/QLoRA) cost 4N + 6·N_adapter (NVIDIA NeMo's LoRA
throughput implies ≈ 4N, docs/sources.md#s-flops-lora). Checkpointing reruns each block's forward:
+2N (BigScience 8N, docs/sources.md#s-flops-recompute). Attention scores and values add 12·L·H·Q·T per token
for forward + backward (torchtitan ``get_num_flop_per_token``; causal masking ignored, i.e. the
full T×T product is counted as torchtitan does) and +4·L·H·Q·T when recomputed. N counts the
weights that multiply activations: active parameters (MoE: routed experts only) minus embedding
tables, plus the output layer when it is tied to the embeddings (torchtitan excludes embeddings).

Example:
    >>> plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    >>> inputs = resolve(plan)
    >>> est = estimate_time(plan, inputs.gpu("h100_sxm"), inputs)
    >>> 0 < est.step_time_s < est.total_s
    True

Limitations: the rates are kernel-level measurements, not this run's; a measured trial fits one factor
on every operation (``calibration=``); FP32 plans use the non-tensor FP32 rate (PyTorch keeps TF32 off for matmuls
by default, ``torch.backends.cuda.matmul.allow_tf32 = False`` since 1.12), so runs that enable
TF32 will be faster; tensor/pipeline/context parallelism is not modelled; sliding-window attention
is counted as full attention.

Lengths: "fixed" and "packed" price every micro-batch at seq_len. A histogram (``TrainPlan.lengths``) prices the
expected step over micro-batches padded to their longest member (``padded_lengths``) and counts throughput, steps
and the data feed in real tokens. A stack that offloads checkpointed block inputs to CPU RAM (Unsloth) adds the
part of those PCIe copies that its side stream cannot hide behind each block's compute (``CheckpointOffload``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuwork.errors import CatalogError, PlanError
from gpuwork.estimate.comm import REDUCE_SCATTER, CommTraffic, Fabric, busbw, comm_bytes_per_step, step_comm
from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT, checkpoint_bytes, token_id_bytes
from gpuwork.estimate.memory import estimate_memory
from gpuwork.estimate.ops import Kind, MoeExperts, Phase, step_ops
from gpuwork.estimate.steptime import StepPrice, price_ops, stack_kernels
from gpuwork.estimate.traced_ops import with_traced_blocks
from gpuwork.facts.block_profiles import matching_profile
from gpuwork.facts.catalog import GpuClass, GpuSpec, Link, Network
from gpuwork.facts.inputs import Inputs
from gpuwork.facts.rates import DeviceRates, Rates
from gpuwork.facts.spec import ModelSpec, count_params
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, Precision, Sharding, TrainPlan
from gpuwork.units import HOUR_S

# -- FLOP convention (Kaplan et al. 2020 §2.1; torchtitan; NeMo) ------------------------------------

FWD_FLOPS_PER_WEIGHT = 2  # one multiply-add per weight per token
BWD_INPUT_FLOPS_PER_WEIGHT = 2  # gradient w.r.t. the layer input (needed through every block it crosses)
BWD_WEIGHT_FLOPS_PER_WEIGHT = 2  # gradient w.r.t. the weight (skipped for frozen weights)
ATTN_FWD_FLOPS = 4  # per layer and token, x H·Q·T: Q·K^T (2·H·Q·T) + P·V (2·H·Q·T)
ATTN_TRAIN_FLOPS = 12  # forward + backward = 3 x forward (torchtitan: 12·L·H·Q·T per token)

# -- communication ----------------------------------------------------------------------------------

# GPU-to-GPU collectives: gpuwork.estimate.comm (NCCL curves, docs/communication.md). Host links (offloaded optimizer states and parameters) move at this share of the PCIe spec: the
# NCCL share measured on NVLink rings (data/kernels.csv nccl_busbw_fraction_nvlink) taken for DMA too.
LINK_EFFICIENCY = 0.80
# Links whose busbw follows the fitted NVLink curves.
_NVLINKS = (Link.NVLINK_BRIDGE, Link.NVLINK_SWITCH, Link.NVLINK_SWITCH_RACK)
# Verdict threshold: above this share of a step spent communicating over PCIe, NVLink is "needed".
LINK_VERDICT_SHARE = 0.10

# -- data, checkpoints, margin ----------------------------------------------------------------------

# One DataLoader worker (one process, Python collation) tokenizing on the fly. Assumption: HF
# tokenizers' README gives "< 20 s per GB of text on a server's CPU" (≈ 12.5 M tokens/s over all
# cores); one worker with Python overhead is taken as 200 k tokens/s. Pre-tokenized memory-mapped
# data is much faster than this.
LOADER_WORKER_TOKENS_S = 200_000.0
# Checkpoint write speed to the rented disk. Assumption: network block volumes give 0.2-1 GB/s,
# local NVMe 2-3 GB/s; 0.5 GB/s is the conservative middle.
DISK_WRITE_BYTES_S = 0.5e9
# Margin on the total time for what the model leaves out (restarts, slow first steps, stragglers).
TIME_MARGIN = 0.10



# -- results -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlopsPerToken:
    """FLOPs one training token costs on the GPUs, by part (see the module docstring)."""

    forward: float  # 2 x weights that multiply activations (+ adapters)
    backward_input: float  # gradients of activations through the blocks that need them
    backward_weight: float  # gradients of trainable weights
    recompute: float  # forward re-run by gradient checkpointing
    attention: float  # Q·K^T and P·V, forward + backward (+ recompute)
    attention_backward: float  # the backward part of ``attention``
    total: float  # executed FLOPs (recompute included): what the GPU must run
    model: float  # total without recompute: the "model FLOPs" of MFU
    weights: int  # N: weights that multiply activations (active params, no embedding tables)
    convention: str  # the formula with its sources (English: a citation)
    note: Msg  # the same convention as a catalog message, for people

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("forward", "backward_input", "backward_weight", "recompute",
                                             "attention", "attention_backward", "total", "model", "weights",
                                             "convention")}
        return {**out, "note": self.note.as_dict()}

    @property
    def backward(self) -> float:
        """FLOPs of the backward pass per token (recompute included: it runs inside backward)."""
        return self.backward_input + self.backward_weight + self.attention_backward + self.recompute


@dataclass(frozen=True)
class MfuChoice:
    """The efficiency the step amounts to, and where it comes from."""

    value: float  # model FLOPs / (dense peak x compute time): the MFU a trial would measure
    source: str  # "default" (the per-operation model) | "argument" (a given MFU) | "calibration"
    basis: str  # why this number, with its sources (English: a citation)
    note: Msg  # why this number, as a catalog message for people
    scale: float = 1.0  # factor on every GPU-bound time fitted from a measurement (1.0 = rates as measured)

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "basis": self.basis, "note": self.note.as_dict(),
                "scale": self.scale}


@dataclass(frozen=True)
class CommEstimate:
    """Gradient / parameter traffic per optimizer step and what it costs (per GPU)."""

    strategy: str  # "none" | "ddp all-reduce" | "zero reduce-scatter + all-gather" | "zero3/fsdp ..."
    gpus: int
    nodes: int
    bytes_per_step: float  # bytes each GPU sends per optimizer step
    link: str  # the intra-node link used ("pcie", "nvlink_switch", ...), "+ network" when multi-node
    bandwidth_bytes_s: float  # effective bottleneck bandwidth per GPU per direction
    comm_s: float  # time to move bytes_per_step
    overlap_window_s: float  # compute time it may hide behind
    exposed_s: float  # what is left on the step's critical path
    scaling_efficiency: float  # compute / (compute + exposed)
    pcie_share: float | None  # exposed share of a step if the same GPUs talked over PCIe
    link_share: float | None  # exposed share of a step over the GPU's best link (NVLink/xGMI)
    verdict: tuple[Msg, ...]  # its parts, shown joined with "; "

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {**out, "verdict": [m.as_dict() for m in self.verdict]}


@dataclass(frozen=True)
class DataFeed:
    """What the GPUs consume and whether a loader keeps up."""

    tokens_per_s: float  # all GPUs together, at the compute-bound step time
    token_id_bytes_per_s: float  # reading pre-tokenized ids (2 or 4 B per token)
    text_bytes_per_s: float  # tokenizing raw text on the fly (BYTES_PER_TOKEN_TEXT per token)
    loader_tokens_per_s: float | None  # what the given loader delivers (None = not given)
    gpus_wait: bool
    wait_share: float  # share of each step the GPUs idle waiting for data
    workers_needed: int  # DataLoader workers at LOADER_WORKER_TOKENS_S each, tokenizing on the fly
    verdict: Msg

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {**out, "verdict": self.verdict.as_dict()}


@dataclass(frozen=True)
class TimeEstimate:
    """Time of a run: per step, per phase and in total (seconds)."""

    plan: TrainPlan
    gpu_id: str
    gpu_name: str
    peak_label: str  # which peak: "BF16 tensor, dense" / "FP16 tensor, dense" / "FP32 (non-tensor)"
    peak_flops_per_gpu: float
    mfu: MfuChoice
    flops_per_token: FlopsPerToken
    tokens_per_step: int  # all GPUs, one optimizer step; real tokens (a length histogram's padding not counted)
    flops_per_step: float  # executed, all GPUs
    compute_s: float  # per step: FLOPs / (GPUs x peak x MFU)
    optimizer_s: float  # per step: memory-bound optimizer update (or CPU-Adam + PCIe when offloaded)
    offload_s: float  # per step: parameter transfers over PCIe (offload_params) + exposed checkpoint offload
    comm: CommEstimate
    data: DataFeed
    step_time_s: float  # compute + optimizer + offload + exposed communication, or data-bound
    tokens_per_s: float  # all GPUs
    steps: int  # optimizer steps for dataset_tokens x epochs
    train_s: float
    eval_s: float  # train_s x plan.eval_fraction
    checkpoints: int  # checkpoints written during the run
    checkpoint_bytes: int  # one checkpoint
    checkpoint_write_s: float  # one checkpoint at disk_write_bytes_s
    checkpoint_s: float  # all checkpoint writes
    margin_s: float  # TIME_MARGIN x (train + eval + checkpoints)
    total_s: float
    warnings: tuple[Msg, ...] = ()
    sources: dict[str, str] = field(default_factory=dict)
    breakdown: dict[str, float] = field(default_factory=dict)  # seconds per step by kind of work (one GPU)
    launches_per_step: int = 0  # kernels one GPU launches per optimizer step
    stack: str = "hf-trainer"
    checkpoint_offload: CheckpointOffload | None = None  # the stack's offloaded checkpointing (Unsloth), if any

    @property
    def peak(self) -> Msg:
        """Which peak the MFU is on, as a catalog message (``peak_label`` is the same in English)."""
        return peak_kind(self.plan.precision)

    @property
    def total_hours(self) -> float:
        return self.total_s / HOUR_S

    @property
    def gpu_hours(self) -> float:
        return self.total_s / HOUR_S * self.plan.gpus

    @property
    def model_flops_utilization(self) -> float:
        """Achieved model FLOPs / peak over the whole step (what a trial would measure)."""
        return self.flops_per_token.model * self.tokens_per_s / (self.plan.gpus * self.peak_flops_per_gpu)

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu_id": self.gpu_id,
            "gpu_name": self.gpu_name,
            "peak_label": self.peak_label,
            "peak_flops_per_gpu": self.peak_flops_per_gpu,
            "mfu": self.mfu.as_dict(),
            "flops_per_token": self.flops_per_token.as_dict(),
            "tokens_per_step": self.tokens_per_step,
            "flops_per_step": self.flops_per_step,
            "compute_s": self.compute_s,
            "optimizer_s": self.optimizer_s,
            "offload_s": self.offload_s,
            "comm": self.comm.as_dict(),
            "data": self.data.as_dict(),
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "model_flops_utilization": self.model_flops_utilization,
            "steps": self.steps,
            "train_s": self.train_s,
            "eval_s": self.eval_s,
            "checkpoints": self.checkpoints,
            "checkpoint_bytes": self.checkpoint_bytes,
            "checkpoint_write_s": self.checkpoint_write_s,
            "checkpoint_s": self.checkpoint_s,
            "margin_s": self.margin_s,
            "total_s": self.total_s,
            "gpu_hours": self.gpu_hours,
            "breakdown": dict(self.breakdown),
            "launches_per_step": self.launches_per_step,
            "stack": self.stack,
            "checkpoint_offload": (dataclasses.asdict(self.checkpoint_offload)
                                   if self.checkpoint_offload is not None else None),
            "warnings": [w.as_dict() for w in self.warnings],
        }


# -- FLOPs ----------------------------------------------------------------------------------------


def _head_matmul_params(spec: ModelSpec) -> int:
    """Weights of the output layer(s), counting a tied output layer that reuses the embeddings."""
    tied = spec.vocab_size * spec.hidden_size if spec.tie_embeddings else 0
    return spec.params_head + tied


def matmul_params(spec: ModelSpec) -> int:
    """N: weights that multiply activations per token — active params minus embedding tables
    (lookups, not matmuls; torchtitan excludes them) plus a tied output layer (it is a matmul)."""
    return spec.params_active - spec.params_embedding + (spec.vocab_size * spec.hidden_size
                                                         if spec.tie_embeddings else 0)


def flops_per_token(plan: TrainPlan, spec: ModelSpec) -> FlopsPerToken:
    """FLOPs per training token for the plan's method (see the module docstring for the convention).

    Worked example (Llama-3.1-8B, full, seq 2048, no checkpointing): N = 8,030,261,248 − 525,336,576
    (embeddings) = 7,504,924,672; 6N = 4.503e10; attention 12·32·32·128·2048 = 3.221e9; total 4.825e10.
    """
    counts = count_params(spec, plan)
    n = matmul_params(spec)
    head = _head_matmul_params(spec)
    blocks = n - head  # weights inside the blocks (and poolers): what checkpointing recomputes
    hq_t = spec.num_heads * spec.head_dim * plan.seq_len  # H·Q·T
    layers = spec.num_layers
    adapter = counts.adapter
    if plan.method in (Method.FULL, Method.SCRATCH):
        fwd = FWD_FLOPS_PER_WEIGHT * n
        bwd_in = BWD_INPUT_FLOPS_PER_WEIGHT * n
        bwd_w = BWD_WEIGHT_FLOPS_PER_WEIGHT * n
        grad_layers = layers
        convention, note = "6N (full update)", msg("flops.full")
    elif plan.uses_adapters:
        # frozen base: forward + input gradients through every block, weight gradients only for the
        # adapters (NeMo's LoRA figures imply 4N, docs/sources.md#s-flops-lora) and a task head trained in full
        fwd = FWD_FLOPS_PER_WEIGHT * (n + adapter)
        bwd_in = BWD_INPUT_FLOPS_PER_WEIGHT * (n + adapter)
        bwd_w = BWD_WEIGHT_FLOPS_PER_WEIGHT * (adapter + counts.head_trainable)
        grad_layers = layers
        convention, note = "4N + 6 x adapter params (frozen base, NeMo convention)", msg("flops.adapters")
    else:  # FREEZE: the last k blocks (+ head) train; autograd stops below the first trained block
        k = min(plan.trainable_layers, layers)
        path = head + blocks * k // max(layers, 1)
        fwd = FWD_FLOPS_PER_WEIGHT * n
        bwd_in = BWD_INPUT_FLOPS_PER_WEIGHT * path
        bwd_w = BWD_WEIGHT_FLOPS_PER_WEIGHT * counts.trainable
        grad_layers = k
        convention = "2N + 2 x (trained blocks + head) + 2 x trainable (freeze: no gradient below the trained blocks)"
        note = msg("flops.freeze")
    attention_backward = (ATTN_TRAIN_FLOPS - ATTN_FWD_FLOPS) * grad_layers * hq_t
    attention = ATTN_FWD_FLOPS * layers * hq_t + attention_backward
    recompute = 0.0
    if plan.grad_checkpointing:
        # HF checkpoints each decoder block: its forward runs again in backward (+2N, +attention fwd)
        recompute_blocks = blocks * grad_layers // max(layers, 1)
        recompute = FWD_FLOPS_PER_WEIGHT * (recompute_blocks + (adapter if plan.uses_adapters else 0)) \
            + ATTN_FWD_FLOPS * grad_layers * hq_t
        convention += " + recompute (gradient checkpointing)"
    attention_model = attention
    total = fwd + bwd_in + bwd_w + attention + recompute
    model = fwd + bwd_in + bwd_w + attention_model
    return FlopsPerToken(forward=float(fwd), backward_input=float(bwd_in), backward_weight=float(bwd_w),
                         recompute=float(recompute), attention=float(attention),
                         attention_backward=float(attention_backward), total=float(total),
                         model=float(model), weights=n, convention=convention + " + attention 12·L·H·Q·T",
                         note=msg("flops.convention", method=note,
                                  recompute=msg("flops.recompute") if plan.grad_checkpointing else None))


# -- peaks and MFU ----------------------------------------------------------------------------------


def peak_flops(gpu: GpuSpec, precision: Precision) -> tuple[float, str]:
    """Dense peak for the plan's compute dtype, and its label."""
    if precision is Precision.FP32:
        return gpu.fp32_flops, "FP32 (non-tensor; TF32 off, the PyTorch default for matmuls)"
    if precision in (Precision.FP16, Precision.FP16_MIXED):
        return gpu.fp16_dense_flops, "FP16 tensor, dense, FP32 accumulate"
    return gpu.bf16_dense_flops, "BF16 tensor, dense, FP32 accumulate"


def peak_kind(precision: Precision) -> Msg:
    """The peak ``peak_flops`` uses for a precision, as a catalog message."""
    if precision is Precision.FP32:
        return msg("peak.fp32")
    if precision in (Precision.FP16, Precision.FP16_MIXED):
        return msg("peak.fp16")
    return msg("peak.bf16")


def method_group(plan: TrainPlan) -> str:
    """How measurements are grouped: "fp32", "lora" (adapters) or "full". The one grouping: the
    calibration file and the trial's comparisons use it."""
    if plan.precision is Precision.FP32:
        return "fp32"
    return "lora" if plan.uses_adapters else "full"


# -- communication --------------------------------------------------------------------------------


def _coerce_link(value: Link | str | None, gpu: GpuSpec) -> Link:
    if value is None:
        return gpu.link
    try:
        link = Link(value)
    except ValueError:
        raise CatalogError(msg("error.time.link_choice", value=repr(value),
                               choices=", ".join(x.value for x in Link))) from None
    if link is not Link.PCIE and link is not gpu.link:
        raise CatalogError(msg("error.time.link_unavailable", link=link.value, gpu_id=gpu.gpu_id,
                               has=gpu.link.value))
    return link


def _link_bytes_s(gpu: GpuSpec, link: Link) -> float:
    return gpu.pcie_bw_bytes_s if link is Link.PCIE else gpu.link_bw_bytes_s


def _verdict(plan: TrainPlan, gpu: GpuSpec, link: Link, pcie_share: float | None, link_share: float | None,
             own_intra_share: float, network_note: Msg | None) -> tuple[Msg, ...]:
    if plan.gpus == 1:
        return (msg("comm.single_gpu"),)
    parts = []
    if gpu.link is Link.PCIE:
        parts.append(msg("comm.no_nvlink", gpu=gpu.display_name, share=own_intra_share))
        if own_intra_share > LINK_VERDICT_SHARE:
            parts.append(msg("comm.consider_less_traffic"))
        if gpu.gpu_class is GpuClass.CONSUMER:
            parts.append(msg("comm.geforce_no_p2p"))
    elif pcie_share is not None and pcie_share > LINK_VERDICT_SHARE:
        parts.append(msg("comm.nvlink_needed", pcie_share=pcie_share, link_share=link_share, link=gpu.link))
        if link is Link.PCIE:
            parts.append(msg("comm.setup_uses_pcie"))
    else:
        shown = pcie_share if pcie_share is not None else own_intra_share
        parts.append(msg("comm.pcie_enough", share=shown))
    if network_note is not None:
        parts.append(network_note)
    return tuple(parts)


# -- the estimate -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WholeRun:
    """A run's length from its step time: the one formula of the estimate and the trial's extrapolation."""

    steps: int  # optimizer steps over dataset_tokens x epochs
    train_s: float  # steps x step time
    eval_s: float  # train_s x eval_fraction
    checkpoints: int  # steps // checkpoint_every_steps
    checkpoint_s: float  # checkpoints x bytes / write speed
    margin_s: float  # margin x (train + eval + checkpoints)

    @property
    def total_s(self) -> float:
        return self.train_s + self.eval_s + self.checkpoint_s + self.margin_s


def whole_run(plan: TrainPlan, step_s: float, tokens_per_step: int, *, checkpoint_bytes: int,
              eval_fraction: float | None = None, disk_write_bytes_s: float = DISK_WRITE_BYTES_S,
              margin: float = TIME_MARGIN) -> WholeRun:
    """Scale one step to the whole run: dataset_tokens x epochs, evaluation, checkpoint writes and a margin."""
    steps = max(1, math.ceil(plan.dataset_tokens * plan.epochs / tokens_per_step))
    train_s = steps * step_s
    eval_s = train_s * (plan.eval_fraction if eval_fraction is None else eval_fraction)
    checkpoints = steps // plan.checkpoint_every_steps
    checkpoint_s = checkpoints * checkpoint_bytes / disk_write_bytes_s
    return WholeRun(steps=steps, train_s=train_s, eval_s=eval_s, checkpoints=checkpoints, checkpoint_s=checkpoint_s,
                    margin_s=margin * (train_s + eval_s + checkpoint_s))


def derived_device(gpu: GpuSpec, rates: Rates, gpus: Mapping[str, GpuSpec]) -> DeviceRates:
    """Rates for a GPU that rates.csv does not list (a user's own GPU table, an older card): its datasheet
    figures times the median achieved/peak share of the measured GPUs of the same vendor in ``gpus``."""
    measured = [(rates.devices[gid], g) for gid, g in gpus.items() if gid in rates.devices]
    same = [(r, g) for r, g in measured if g.vendor == gpu.vendor] or measured

    def median_share(values: list[float], default: float) -> float:
        values = sorted(values)
        return values[len(values) // 2] if values else default

    bf16 = median_share([r.matmul_flops["bf16"] / g.bf16_dense_flops for r, g in same], 0.7)
    fp16 = median_share([r.matmul_flops["fp16"] / g.fp16_dense_flops for r, g in same], 0.7)
    fp32 = median_share([r.matmul_flops["fp32"] / g.fp32_flops for r, g in same], 0.7)
    bw = median_share([r.mem_bw_bytes_s / g.mem_bw_bytes_s for r, g in same], 0.8)
    basis = f"derived: datasheet x median achieved/peak of the measured {gpu.vendor} GPUs in rates.csv"
    if gpu.sm_count:  # the GPU's own datasheet count (a peak ratio misreads older GPUs: the V100 has no BF16)
        sms, sm_basis = gpu.sm_count, "datasheet SM count"
    else:
        sms = max(1, round(gpu.bf16_dense_flops / 7.5e12))  # ~7.5 dense BF16 TFLOPS per SM (H100 SXM: 989 / 132)
        sm_basis = "derived: dense BF16 peak / 7.5 TFLOPS per SM"
    return DeviceRates(gpu.gpu_id, {"bf16": gpu.bf16_dense_flops * bf16, "fp16": gpu.fp16_dense_flops * fp16,
                                    "fp32": gpu.fp32_flops * fp32}, gpu.mem_bw_bytes_s * bw, sms,
                       {"matmul_bf16": basis, "mem_bw": basis, "sm": sm_basis})


def _device_rates(gpu: GpuSpec, inputs: Inputs, warnings: list[Msg]) -> DeviceRates:
    device = inputs.rates.device(gpu.gpu_id)
    if device is None:
        warnings.append(msg("time.derived_rates", gpu=gpu.display_name))
        key = (gpu, id(inputs.rates), id(inputs.gpus))
        hit = _DERIVED.get(key)
        if hit is None or hit[0] is not inputs.rates or hit[1] is not inputs.gpus:
            hit = _DERIVED[key] = (inputs.rates, inputs.gpus, derived_device(gpu, inputs.rates, inputs.gpus))
        device = hit[2]
    return device


_DERIVED: dict[tuple, tuple[Rates, Mapping[str, GpuSpec], DeviceRates]] = {}


def _busbw_fraction(rates: Rates, link: Link) -> tuple[float, str]:
    key = {Link.PCIE: "nccl_busbw_fraction_pcie", Link.XGMI: "nccl_busbw_fraction_xgmi"}.get(
        link, "nccl_busbw_fraction_nvlink")
    return rates.kernel(key), key


def _plan_ops(plan: TrainPlan, inputs: Inputs, profile, moe_experts: MoeExperts | None = None) -> tuple:
    """The step's operations: the hand-written block, or the traced one for a family without it."""
    ops = step_ops(plan, inputs.spec, stack_kernels(profile, moe_experts))
    traced = matching_profile(inputs.spec, plan)
    if traced is None:
        return ops
    key = (id(ops), id(traced))
    hit = _TRACED_OPS.get(key)
    if hit is None or hit[0] is not ops or hit[1] is not traced:
        if len(_TRACED_OPS) > 1024:
            _TRACED_OPS.clear()
        hit = _TRACED_OPS[key] = (ops, traced, with_traced_blocks(ops, plan, inputs.spec, traced))
    return hit[2]


_TRACED_OPS: dict[tuple, tuple] = {}


def _fit_scale(ops, gpu: GpuSpec, device: DeviceRates, inputs: Inputs, profile, measured_s: float) -> float:
    """The factor on every priced time (GPU and host) that makes the step equal ``measured_s``: each
    operation costs max(GPU, host) / factor, so the factor is the priced step over the measured one."""
    return price_ops(ops, gpu, device, inputs.rates, profile).total_s / measured_s


# -- variable lengths ------------------------------------------------------------------------------

# Most padded lengths priced one by one; a histogram with more is priced on this many lengths at quantiles of the
# padded lengths, each of its lengths sharing its probability between the two nearest (linear interpolation of the
# cost): within 1 % of pricing every length on uniform and long-tailed histograms (tests), and an advisor run on a
# 250-length histogram takes seconds rather than a quarter of a minute.
LENGTH_GRID = 24


def padded_lengths(plan: TrainPlan) -> tuple[tuple[float, int], ...] | None:
    """(probability, length) of a micro-batch's padded length under ``plan.lengths``, or None when every
    micro-batch has ``seq_len`` tokens ("fixed", "packed"). The Hugging Face padding collator pads a batch to its
    longest member, so with ``batch_size`` sequences drawn from the histogram the padded length is their maximum:
    P(max <= l) = F(l) ** batch_size."""
    hist = plan.length_histogram
    if hist is None:
        return None
    total = sum(w for _, w in hist)
    out, acc, below = [], 0.0, 0.0
    for length, weight in hist:
        acc += weight / total
        cdf = min(acc, 1.0) ** plan.batch_size
        if cdf > below:
            out.append((cdf - below, length))
        below = cdf
    return tuple(out)


def real_tokens_per_sequence(plan: TrainPlan) -> float:
    """Mean tokens of one sequence without padding: the histogram's mean, else ``seq_len``."""
    hist = plan.length_histogram
    if hist is None:
        return float(plan.seq_len)
    return sum(n * w for n, w in hist) / sum(w for _, w in hist)


def _length_grid(mix: tuple[tuple[float, int], ...]) -> tuple[tuple[float, int], ...]:
    """The padded-length distribution on at most LENGTH_GRID lengths (each weight split linearly between the
    two grid lengths around it), so that pricing stays a few op lists for any histogram."""
    if len(mix) <= LENGTH_GRID:
        return mix
    # grid lengths at evenly spaced quantiles of the padded lengths (dense where the batches are), the extremes kept
    grid_set, acc, k = {mix[0][1], mix[-1][1]}, 0.0, 1
    for p, length in mix:
        acc += p
        while k < LENGTH_GRID - 1 and acc >= k / (LENGTH_GRID - 1):
            grid_set.add(length)
            k += 1
    grid = sorted(grid_set)
    weights = dict.fromkeys(grid, 0.0)
    j = 0
    for p, length in mix:
        while j + 1 < len(grid) and grid[j + 1] < length:
            j += 1
        a = grid[j]
        b = grid[j + 1] if j + 1 < len(grid) else a
        if b == a or length <= a:
            weights[a] += p
        else:
            t = (length - a) / (b - a)
            weights[a] += p * (1 - t)
            weights[b] += p * t
    return tuple((w, n) for n, w in weights.items() if w > 0)


def _mixed_price(parts: list[tuple[float, StepPrice]]) -> StepPrice:
    """The expected step price over micro-batch shapes: each field weighted by the shape's probability (a step
    is linear in its micro-batches, so the expectation of the whole step is the weighted sum)."""
    def mix(field_name: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for w, p in parts:
            for k, v in getattr(p, field_name).items():
                out[k] = out.get(k, 0.0) + w * v
        return out

    assumptions: dict[str, str] = {}
    for _, p in parts:
        assumptions.update(p.assumptions)
    return StepPrice(total_s=sum(w * p.total_s for w, p in parts), by_kind=mix("by_kind"), by_phase=mix("by_phase"),
                     launches=round(sum(w * p.launches for w, p in parts)), flops=sum(w * p.flops for w, p in parts),
                     bytes=sum(w * p.bytes for w, p in parts), assumptions=assumptions)


# -- checkpoint offload ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointOffload:
    """Block inputs copied to CPU RAM and back by a stack's offloaded checkpointing, per optimizer step."""

    bytes_per_step: float  # both directions, as MemoryEstimate.host_transfer_bytes (the plan's lengths)
    copy_s: float  # all copies at the achieved pinned-copy rates
    exposed_s: float  # what the block compute does not hide
    d2h_bytes_s: float
    h2d_bytes_s: float


def _offloaded_bytes_per_token(plan: TrainPlan, spec: ModelSpec, profile) -> tuple[float, int]:
    """(bytes of one offloaded block input per token, blocks offloaded) as the memory model counts them."""
    fixed = plan.replace(lengths="fixed")
    transfer = estimate_memory(fixed, spec, profile).host_transfer_bytes
    blocks = spec.num_layers - 1  # the last block's input stays on the GPU (estimate.memory, [K15])
    if not transfer or blocks < 1:
        return 0.0, 0
    return transfer / (2 * plan.grad_accum * blocks * fixed.tokens_per_micro_batch), blocks


def _offload_time(price: StepPrice, block_bytes: float, blocks: int, plan: TrainPlan, spec: ModelSpec,
                  gpu: GpuSpec, rates: Rates) -> tuple[float, float]:
    """(copy seconds, exposed seconds) per step of one micro-batch shape. Unsloth copies each block input on a
    side stream while the block runs and waits for the copy at the block's end (forward) or before recomputing
    it (backward), so each copy hides behind one block's compute and only its excess adds ([K15])."""
    d2h = gpu.pcie_bw_bytes_s * rates.kernel("pinned_copy_d2h_fraction")
    h2d = gpu.pcie_bw_bytes_s * rates.kernel("pinned_copy_h2d_fraction")
    per_block = max(plan.grad_accum * max(spec.num_layers, 1), 1)
    fwd_block = price.by_phase.get(Phase.FORWARD.value, 0.0) / per_block
    bwd_block = (price.by_phase.get(Phase.BACKWARD.value, 0.0)
                 + price.by_phase.get(Phase.RECOMPUTE.value, 0.0)) / per_block
    out_s, back_s = block_bytes / d2h, block_bytes / h2d
    copies = plan.grad_accum * blocks
    return (copies * (out_s + back_s),
            copies * (max(out_s - fwd_block, 0.0) + max(back_s - bwd_block, 0.0)))


def estimate_time(
    plan: TrainPlan,
    gpu: GpuSpec,
    inputs: Inputs,
    *,
    mfu: float | None = None,
    calibration: Mapping[str, Any] | None = None,
    link: Link | str | None = None,
    network: Network | str | None = None,
    nodes: int | None = None,
    loader_tokens_per_s: float | None = None,
    disk_write_bytes_s: float = DISK_WRITE_BYTES_S,
    moe_experts: MoeExperts | str | None = None,
) -> TimeEstimate:
    """Step time and total time of ``plan`` on ``plan.gpus`` GPUs of type ``gpu``.

    The step is priced operation by operation (``gpuwork.estimate.ops`` + ``steptime``) with the GPU's
    achievable rates and the plan's stack; the same per-GPU price holds on one GPU or many, and
    several GPUs add only their exposed communication.

    Args:
        plan: the run; reads the batch shape, method, precision, stack, sharding, dataset_tokens,
            epochs, eval_fraction, checkpoint_every_steps.
        gpu: the GPU (``inputs.gpu('h100_sxm')``).
        inputs: the plan's facts (``gpuwork.facts.resolve(plan)``): model spec and rates.
        mfu: a fixed efficiency on the dense peak instead of the per-operation model (compute =
            executed FLOPs / (peak x mfu)).
        calibration: a measurement, e.g. {"tokens_per_s": 2316, "gpu_id": "l40s", "source": "trial"}
            (per GPU, this plan's shape or another's with "tokens_per_micro_batch"), or a fitted
            {"scale": 0.8}; fits the factor on every operation's time, then prices this plan's
            operations with it.
        link: intra-node link ("pcie", "nvlink_switch", ...); None = the GPU's best link.
        network: inter-node fabric (needed when nodes > 1), e.g. "ib-ndr-400g", or a node of networks.csv
            by its id, e.g. "aws-p4d" (docs/communication.md).
        nodes: nodes the GPUs are spread over; None = 1.
        loader_tokens_per_s: what the data pipeline delivers (all GPUs); None = assumed to keep up.
        disk_write_bytes_s: checkpoint write speed, bytes/s.
        moe_experts: how a MoE model's experts run, when the run's software differs from the stack's
            (stacks.csv ``moe_experts``): "loop" for transformers 4.x (a Python loop over ``nn.Linear``
            experts), "fused" for fused expert tensors; None = the stack's.

    Raises:
        PlanError / CatalogError: bad mfu, calibration, link, network, node count or moe_experts.
    """
    spec = inputs.spec
    counts = count_params(spec, plan)
    nodes = 1 if nodes is None else nodes
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1 or nodes > plan.gpus:
        raise PlanError("nodes", msg("error.time.nodes", value=repr(nodes), gpus=plan.gpus))
    net: Network | str | None = None
    if nodes > 1:
        choices = [n.value for n in Network if n is not Network.NONE] + sorted(inputs.comm.networks)
        if network is not None and network != Network.NONE and network not in choices:
            raise PlanError("network", msg("error.time.network_choice", value=repr(network),
                                           choices=", ".join(dict.fromkeys(choices))))
        if network is None or network == Network.NONE:
            raise PlanError("network", msg("error.time.network_needed", nodes=nodes))
        # a Network choice, or a node of networks.csv by its id ("aws-p4d", ...)
        net = Network(network) if network in {n.value for n in Network} else str(network)
    intra = _coerce_link(link, gpu)
    if not (isinstance(disk_write_bytes_s, int | float) and math.isfinite(disk_write_bytes_s)
            and disk_write_bytes_s > 0):
        raise PlanError("disk_write_bytes_s", msg("error.time.disk_write"))
    warnings: list[Msg] = []
    rates = inputs.rates
    profile = rates.stacks[plan.stack]

    # a length histogram: micro-batches padded to their longest member, priced as the expected step over them;
    # FLOPs per real token with attention at the token-weighted length (sum l^2 / sum l)
    mix = padded_lengths(plan)
    hist = plan.length_histogram
    flops_plan = plan if hist is None else plan.replace(
        seq_len=max(1, round(sum(n * n * w for n, w in hist) / sum(n * w for n, w in hist))), lengths="fixed")
    flops = flops_per_token(flops_plan, spec)
    peak, peak_label = peak_flops(gpu, plan.precision)
    if plan.precision in (Precision.BF16, Precision.BF16_MIXED) and gpu.compute_capability.startswith(("6.", "7.")):
        warnings.append(msg("time.no_bf16", gpu=gpu.display_name))
    device = _device_rates(gpu, inputs, warnings)
    if moe_experts is not None and moe_experts not in {m.value for m in MoeExperts}:
        raise PlanError("moe_experts", msg("error.plan.choice", field="moe_experts", value=repr(moe_experts),
                                           allowed=", ".join(m.value for m in MoeExperts)))
    experts = MoeExperts(moe_experts) if moe_experts is not None else None
    ops = _plan_ops(plan, inputs, profile, experts)
    # real (unpadded) tokens: what throughput, steps per epoch and the data feed count
    tokens_per_gpu_step = plan.batch_size * real_tokens_per_sequence(plan) * plan.grad_accum
    tokens_step = tokens_per_gpu_step * plan.gpus

    scale, source = 1.0, "op model"
    label = None
    if mfu is not None:
        if isinstance(mfu, bool) or not isinstance(mfu, int | float) or not 0 < mfu <= 1:
            raise PlanError("mfu", msg("error.time.mfu", value=repr(mfu)))
        source = "argument"
    elif calibration:
        scale, label = _calibration_scale(plan, gpu, device, inputs, profile, calibration, experts)
        source = "calibration"
    if mix is None:
        shapes: list[tuple[float, TrainPlan, tuple]] = [(1.0, plan, ops)]
    else:
        shapes = [(w, shape, _plan_ops(shape, inputs, profile, experts))
                  for w, shape in ((w, plan.replace(seq_len=n, lengths="fixed")) for w, n in _length_grid(mix))]
    priced = [(w, shape, price_ops(o, gpu, device, rates, profile, efficiency=scale)) for w, shape, o in shapes]
    price = priced[0][2] if mix is None else _mixed_price([(w, p) for w, _, p in priced])
    optimizer_s = price.by_phase.get(Phase.OPTIMIZER.value, 0.0)
    compute_s = price.total_s - optimizer_s
    breakdown = dict(price.by_kind)
    if mfu is not None:
        compute_s = flops.total * tokens_per_gpu_step / (peak * mfu)
        breakdown = {"compute (given MFU)": compute_s, Kind.OPTIMIZER.value: optimizer_s}
    if plan.offload_optimizer:
        # gradients down and parameters up over PCIe, DeepSpeed CPU-Adam on the host
        shards = plan.sharding is not Sharding.DDP
        n = counts.trainable / plan.gpus if shards else counts.trainable
        pb = 4 if plan.uses_adapters else plan.precision.param_bytes
        host_update = n / rates.kernel("cpu_adam_params_per_s") + 2 * pb * n / (gpu.pcie_bw_bytes_s * LINK_EFFICIENCY)
        breakdown["optimizer on CPU"] = host_update
        optimizer_s += host_update
    offload_s = 0.0
    if plan.offload_params:
        # ZeRO-3 param offload: each GPU fetches its shard from host memory in forward and backward
        shard = counts.total * plan.precision.compute_bytes / plan.gpus  # 16-bit weights fetched per GPU
        offload_s = 2 * shard * plan.grad_accum / (gpu.pcie_bw_bytes_s * LINK_EFFICIENCY)
        breakdown["parameter offload (PCIe)"] = offload_s
    checkpoint_offload = None
    if plan.grad_checkpointing and profile.checkpoint == "offload":
        per_token, blocks = _offloaded_bytes_per_token(plan, spec, profile)
        if blocks:
            copy_s = exposed_copy_s = moved = 0.0
            for w, shape, p in priced:
                block_bytes = per_token * shape.tokens_per_micro_batch
                c, e = _offload_time(p, block_bytes, blocks, shape, spec, gpu, rates)
                copy_s, exposed_copy_s = copy_s + w * c, exposed_copy_s + w * e
                moved += w * 2 * block_bytes * blocks * plan.grad_accum
            checkpoint_offload = CheckpointOffload(
                bytes_per_step=moved, copy_s=copy_s, exposed_s=exposed_copy_s,
                d2h_bytes_s=gpu.pcie_bw_bytes_s * rates.kernel("pinned_copy_d2h_fraction"),
                h2d_bytes_s=gpu.pcie_bw_bytes_s * rates.kernel("pinned_copy_h2d_fraction"))
            offload_s += exposed_copy_s
            breakdown["checkpoint offload (PCIe)"] = exposed_copy_s

    # communication: the same per-GPU compute; only what does not hide behind it adds (estimate.comm)
    weight_bytes = 0.5 if plan.method is Method.QLORA else plan.precision.compute_bytes
    grad_bytes = 4 if plan.uses_adapters else plan.precision.param_bytes  # grads take the param dtype
    traffic = CommTraffic(gpus=plan.gpus, sharding=plan.sharding, grad_accum=plan.grad_accum,
                          units=max(spec.num_layers, 1), grad_bytes=counts.trainable * grad_bytes,
                          gathered_bytes=counts.total * weight_bytes,
                          params16_bytes=counts.trainable * plan.precision.compute_bytes)
    comm_bytes, strategy = comm_bytes_per_step(traffic)
    gpus_per_node = math.ceil(plan.gpus / nodes)
    forward_s = price.by_phase.get(Phase.FORWARD.value, 0.0)
    backward_s = price.by_phase.get(Phase.BACKWARD.value, 0.0) + price.by_phase.get(Phase.RECOMPUTE.value, 0.0)
    node_net = inputs.comm.node_network(net) if net is not None else None

    def fabric_of(link_used: Link, over_network: bool = True) -> Fabric:
        link_bytes = _link_bytes_s(gpu, link_used)
        if link_used is Link.PCIE and gpu.gpu_class is GpuClass.CONSUMER:
            link_bytes *= rates.kernel("pcie_p2p_disabled_factor")  # no peer-to-peer: through host memory
        fixed = None if link_used in _NVLINKS else _busbw_fraction(rates, link_used)[0]
        return Fabric(intra_bytes_s=link_bytes, intra_efficiency=fixed,
                      nvls=False,  # conservative ring: NVLS would make 8 GPUs' all-reduce beat 4 GPUs' (measured)
                      gpus_per_node=gpus_per_node, network=node_net if over_network else None)

    def exposed_comm(link_used: Link, over_network: bool = True) -> tuple[float, float, float]:
        """(communication seconds, exposed seconds, bandwidth) per step."""
        t = step_comm(inputs.comm, fabric_of(link_used, over_network), traffic, forward_s, backward_s)
        return t.total_s, t.exposed_s, t.bandwidth_bytes_s

    comm_s, exposed_s, bandwidth = exposed_comm(intra)
    base_step = compute_s + optimizer_s + offload_s

    def share(link_used: Link) -> float:
        e = exposed_comm(link_used, over_network=False)[1]
        return e / (base_step + e) if base_step + e > 0 else 0.0

    pcie_share = share(Link.PCIE) if plan.gpus > 1 else None
    link_share = share(gpu.link) if plan.gpus > 1 and gpu.link is not Link.PCIE else None
    network_note = None
    own_share = exposed_s / (base_step + exposed_s) if base_step + exposed_s > 0 else 0.0
    if net is not None:
        big = max(comm_bytes, 1.0)
        per_gpu = busbw(inputs.comm, fabric_of(intra), REDUCE_SCATTER, big, plan.gpus)
        bottleneck = per_gpu < busbw(inputs.comm, fabric_of(intra, over_network=False), REDUCE_SCATTER, big,
                                     plan.gpus) * 0.999
        network_note = msg("comm.network_bottleneck" if bottleneck else "comm.network", nodes=nodes, network=net,
                           bytes_s=per_gpu, share=own_share)
    comm = CommEstimate(
        strategy=strategy, gpus=plan.gpus, nodes=nodes, bytes_per_step=comm_bytes,
        link=intra.value + (f" + {net}" if net is not None else ""), bandwidth_bytes_s=bandwidth,
        comm_s=comm_s, overlap_window_s=max(comm_s - exposed_s, 0.0), exposed_s=exposed_s,
        scaling_efficiency=base_step / (base_step + exposed_s) if base_step + exposed_s > 0 else 1.0,
        pcie_share=pcie_share, link_share=link_share,
        verdict=_verdict(plan, gpu, intra, pcie_share, link_share, share(intra), network_note),
    )
    if exposed_s > 0:
        breakdown["communication (exposed)"] = exposed_s

    # data feed
    step_s = base_step + exposed_s
    consumed = tokens_step / step_s
    id_bytes = token_id_bytes(spec.vocab_size)
    workers = math.ceil(consumed / LOADER_WORKER_TOKENS_S)
    if loader_tokens_per_s is not None:
        if not (isinstance(loader_tokens_per_s, int | float) and math.isfinite(loader_tokens_per_s)
                and loader_tokens_per_s > 0):
            raise PlanError("loader_tokens_per_s", msg("error.time.loader"))
        data_step = tokens_step / loader_tokens_per_s
        waits = data_step > step_s
        wait_share = (data_step - step_s) / data_step if waits else 0.0
        if waits:
            verdict = msg("data.gpus_wait", loader_tokens_s=loader_tokens_per_s, needed_tokens_s=consumed,
                          wait_share=wait_share, workers=workers)
            breakdown["data wait"] = data_step - step_s
            step_s = data_step
        else:
            verdict = msg("data.keeps_up", loader_tokens_s=loader_tokens_per_s, needed_tokens_s=consumed)
    else:
        waits, wait_share = False, 0.0
        verdict = msg("data.needed", needed_tokens_s=consumed, ids_bytes_s=consumed * id_bytes,
                      text_bytes_s=consumed * BYTES_PER_TOKEN_TEXT, workers=workers,
                      worker_tokens_s=LOADER_WORKER_TOKENS_S)
    data = DataFeed(tokens_per_s=consumed, token_id_bytes_per_s=consumed * id_bytes,
                    text_bytes_per_s=consumed * BYTES_PER_TOKEN_TEXT, loader_tokens_per_s=loader_tokens_per_s,
                    gpus_wait=waits, wait_share=wait_share, workers_needed=workers, verdict=verdict)

    # what efficiency the priced step amounts to (the MFU a trial would measure, compute only)
    implied = flops.model * tokens_per_gpu_step / (peak * compute_s) if compute_s > 0 else 0.0
    if source == "argument":
        choice = MfuChoice(value=float(mfu), source="argument", basis="given by the caller", note=msg("mfu.argument"))
    elif source == "calibration":
        choice = MfuChoice(value=implied, source="calibration",
                           basis=f"measured: {label or 'a measured trial'}; every operation x {scale:.3f}",
                           note=msg("mfu.calibrated", label=label or msg("mfu.a_trial"), scale=scale),
                           scale=scale)
    else:
        choice = MfuChoice(value=implied, source="default",
                           basis=f"per-operation model, stack {plan.stack.value}, rates of {gpu.display_name}",
                           note=msg("mfu.op_model", stack=plan.stack.value, gpu=gpu.display_name))

    # the whole run
    ckpt_bytes = checkpoint_bytes(plan, spec)
    run = whole_run(plan, step_s, tokens_step, checkpoint_bytes=ckpt_bytes,
                    disk_write_bytes_s=disk_write_bytes_s)
    ckpt_write_s = ckpt_bytes / disk_write_bytes_s
    if plan.sharding is not Sharding.DDP and plan.method is not Method.FULL and plan.uses_adapters:
        warnings.append(msg("time.adapters_sharded"))
    if comm.pcie_share is not None and intra is Link.PCIE and own_share > LINK_VERDICT_SHARE:
        warnings.extend(comm.verdict)
    if waits:
        warnings.append(verdict)

    sources = {
        "flops_per_token": flops.convention,
        "peak": f"{gpu.display_name} {peak_label}: {peak / 1e12:g} TFLOPS (data/gpus.csv)",
        "mfu": choice.basis,
        **{f"rate: {k}": v for k, v in price.assumptions.items() if v},
        "comm": f"{strategy}; NCCL bus bandwidth by message size (nccl_curves.csv, docs/communication.md); "
                "DDP buckets overlap backward, FSDP gathers prefetch behind the previous block",
        "eval_s": "train time x plan.eval_fraction",
        "checkpoint_s": f"checkpoints x checkpoint bytes / {disk_write_bytes_s / 1e9:g} GB/s",
        "margin_s": f"{TIME_MARGIN:.0%} of the total",
    }
    if checkpoint_offload is not None:
        sources["checkpoint offload"] = (
            f"{checkpoint_offload.bytes_per_step / 1e9:.3g} GB of block inputs per step to CPU RAM and back "
            f"(estimate_memory host_transfer_bytes) at {checkpoint_offload.d2h_bytes_s / 1e9:.3g} GB/s out and "
            f"{checkpoint_offload.h2d_bytes_s / 1e9:.3g} GB/s back (PCIe {gpu.pcie_gen}.0 x16 x pinned-copy shares, "
            "kernels.csv pinned_copy_*_fraction [K14]); copies on a side stream hide behind each block's compute, "
            f"{checkpoint_offload.copy_s * 1e3:.3g} ms of copies leave {checkpoint_offload.exposed_s * 1e3:.3g} ms "
            "exposed (Unsloth gradient_checkpointing.py [K15])")
    if mix is not None:
        sources["lengths"] = (
            f"{len(hist)} lengths, mean {real_tokens_per_sequence(plan):.0f} tokens; each micro-batch of "
            f"{plan.batch_size} padded to its longest (P(max <= l) = F(l)^{plan.batch_size}), the step priced as the "
            f"expected cost over {len(priced)} padded lengths, tokens counted without padding")
    if spec.num_experts > 1:
        layout = experts or MoeExperts(profile.moe_experts)
        sources["moe experts"] = ("transformers 4.x loop over nn.Linear experts, a host wait per expert "
                                  "(rates_sources.md [K10][K11])" if layout is MoeExperts.LOOP
                                  else "fused expert tensors, one GEMM per expert over its share of tokens")
    return TimeEstimate(
        plan=plan, gpu_id=gpu.gpu_id, gpu_name=gpu.display_name, peak_label=peak_label,
        peak_flops_per_gpu=peak, mfu=choice, flops_per_token=flops, tokens_per_step=round(tokens_step),
        flops_per_step=flops.total * tokens_step, compute_s=compute_s, optimizer_s=optimizer_s,
        offload_s=offload_s, comm=comm, data=data, step_time_s=step_s,
        tokens_per_s=tokens_step / step_s, steps=run.steps, train_s=run.train_s, eval_s=run.eval_s,
        checkpoints=run.checkpoints, checkpoint_bytes=ckpt_bytes, checkpoint_write_s=ckpt_write_s,
        checkpoint_s=run.checkpoint_s, margin_s=run.margin_s, total_s=run.total_s, warnings=tuple(warnings),
        sources=sources, breakdown=breakdown, launches_per_step=price.launches, stack=plan.stack.value,
        checkpoint_offload=checkpoint_offload,
    )


def _calibration_scale(plan: TrainPlan, gpu: GpuSpec, device: DeviceRates, inputs: Inputs, profile,
                       cal: Mapping[str, Any], moe_experts: MoeExperts | None = None) -> tuple[float, str | None]:
    """The efficiency factor a measurement implies: {"tokens_per_s": per-GPU tokens/s measured on this GPU
    with this stack}; optional "seq_len" and "batch_size" (the measured shape, re-priced at that shape) or
    just "tokens_per_micro_batch", "gpu_id" (must match) and "source" (a label)."""
    label = str(cal["source"]) if cal.get("source") else None  # None: "a measured trial" in the reader's language
    measured_gpu = cal.get("gpu_id")
    if measured_gpu and str(measured_gpu).lower() not in (gpu.gpu_id, gpu.display_name.lower()):
        raise PlanError("calibration", msg("error.time.calibration_gpu", measured=str(measured_gpu),
                                           gpu_id=gpu.gpu_id))
    if "scale" in cal:
        value = cal["scale"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise PlanError("calibration", msg("error.time.calibration_range", mfu=float("nan")))
        return float(value), label
    if "tokens_per_s" not in cal:
        raise PlanError("calibration", msg("error.time.calibration_empty"))
    tokens_per_s = cal["tokens_per_s"]
    if isinstance(tokens_per_s, bool) or not isinstance(tokens_per_s, int | float) or not math.isfinite(tokens_per_s) \
            or tokens_per_s <= 0:
        raise PlanError("calibration", msg("error.time.calibration_tokens"))
    measured_plan = plan.single_gpu()
    if cal.get("seq_len") or cal.get("batch_size"):  # the measured shape, as the trial ran it
        measured_plan = measured_plan.replace(seq_len=int(cal.get("seq_len") or plan.seq_len),
                                              batch_size=int(cal.get("batch_size") or plan.batch_size))
    elif cal.get("tokens_per_micro_batch") and int(cal["tokens_per_micro_batch"]) != plan.tokens_per_micro_batch:
        # only the tokens are known: same batch, the sequence that gives them
        measured_plan = measured_plan.replace(seq_len=max(1, int(cal["tokens_per_micro_batch"]) // plan.batch_size))
    ops = _plan_ops(measured_plan, inputs, profile, moe_experts)
    measured_s = measured_plan.tokens_per_micro_batch * measured_plan.grad_accum / float(tokens_per_s)
    return _fit_scale(ops, gpu, device, inputs, profile, measured_s), label


@dataclass(frozen=True)
class ScalingPoint:
    """Throughput of the plan on ``gpus`` GPUs (same per-GPU batch), from ``scaling``."""

    gpus: int
    nodes: int
    tokens_per_s_per_gpu: float
    step_time_s: float
    exposed_comm_s: float
    scaling_efficiency: float  # per-GPU compute / (compute + exposed communication)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


SCALING_GPUS = (1, 2, 4, 8, 16, 32, 64)
GPUS_PER_NODE = 8  # HGX/DGX-style servers; more GPUs span several nodes


def scaling(plan: TrainPlan, gpu: GpuSpec, inputs: Inputs, counts: tuple[int, ...] = SCALING_GPUS,
            network: Network | str = Network.IB_NDR_400G, **options: Any) -> tuple[ScalingPoint, ...]:
    """Tokens per second per GPU when the plan runs on 1, 2, ... 64 GPUs (the plan's sharding; one GPU
    runs unsharded), nodes of ``GPUS_PER_NODE`` joined by ``network``. The per-GPU compute is the same
    at every count: what changes is the exposed communication and the sharded optimizer step."""
    points = []
    for n in counts:
        p = plan.single_gpu() if n == 1 else plan.replace(gpus=n)
        nodes = math.ceil(n / GPUS_PER_NODE)
        est = estimate_time(p, gpu, inputs, nodes=nodes, network=network if nodes > 1 else None, **options)
        points.append(ScalingPoint(gpus=n, nodes=nodes, tokens_per_s_per_gpu=est.tokens_per_s / n,
                                   step_time_s=est.step_time_s, exposed_comm_s=est.comm.exposed_s,
                                   scaling_efficiency=est.comm.scaling_efficiency))
    return tuple(points)


__all__ = [
    "DISK_WRITE_BYTES_S",
    "LINK_EFFICIENCY",
    "LOADER_WORKER_TOKENS_S",
    "LENGTH_GRID",
    "TIME_MARGIN",
    "CheckpointOffload",
    "CommEstimate",
    "DataFeed",
    "FlopsPerToken",
    "MfuChoice",
    "TimeEstimate",
    "SCALING_GPUS",
    "ScalingPoint",
    "WholeRun",
    "derived_device",
    "estimate_time",
    "flops_per_token",
    "matmul_params",
    "method_group",
    "peak_flops",
    "padded_lengths",
    "peak_kind",
    "real_tokens_per_sequence",
    "scaling",
    "whole_run",
]
