"""Training time of a plan on a GPU: FLOPs per token, step time, communication, data feed, total.

``estimate_time(plan, gpu, inputs) -> TimeEstimate`` is pure (no torch, no I/O: the kernel rates come
in ``inputs``): it lists the step's operations (``estimate.ops``), prices each on one GPU with the
GPU's achievable rates and the plan's stack (``estimate.steptime``), adds the communication that does
not hide behind compute, the offloaded optimizer and the data feed, then scales to the whole run with
evaluation, checkpoint writes and a margin. The FLOPs per token (``estimate.flops``, its convention) are the
model's FLOPs (what MFU counts), reported beside the priced step. Seconds internally; hours only on display.

Example:
    >>> plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    >>> inputs = resolve(plan)
    >>> est = estimate_time(plan, inputs.gpu("h100_sxm"), inputs)
    >>> 0 < est.step_time_s < est.total_s
    True

Limitations: the rates are kernel-level measurements, not this run's; a measured trial fits one factor
on every operation (``calibration=``); FP32 plans use the non-tensor FP32 rate (PyTorch keeps TF32 off for matmuls
by default, ``torch.backends.cuda.matmul.allow_tf32 = False`` since 1.12) unless the plan says ``tf32`` (its fp32
GEMMs then run at the TF32 tensor-core rate, docs/gemm_tf32.md); ``fp8_linear`` runs the blocks' linears in FP8
with their casts (docs/fp8.md; attention in FP8 is not modelled); tensor/pipeline/context parallelism is not
modelled; sliding-window attention is counted as full attention.

Lengths: "fixed" and "packed" price every micro-batch at seq_len; packed rows whose attention stays inside each
document (``packed_document_tokens``) price attention as seq_len / d attentions of d tokens. A histogram
(``TrainPlan.lengths``) prices the expected step over micro-batches padded to their longest member
(``padded_lengths``) and counts throughput, steps and the data feed in real tokens. A stack that offloads
checkpointed block inputs to CPU RAM (Unsloth) adds the
part of those PCIe copies that its side stream cannot hide behind each block's compute (``CheckpointOffload``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict, Unpack

from gpuwork.errors import PlanError
from gpuwork.estimate.comm import (
    LINK_VERDICT_SHARE,
    CommEstimate,
    CommSetting,
    CommTraffic,
    coerce_link,
    plan_comm,
)
from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT, checkpoint_bytes, token_id_bytes
from gpuwork.estimate.flops import FlopsPerToken, flops_per_token, matmul_params
from gpuwork.estimate.fsdp_costs import FSDP2_SHARDINGS, fsdp_copies_s
from gpuwork.estimate.gpu_checks import check_attention_gpu, fp8_gpu_problem
from gpuwork.estimate.lengths import (
    LENGTH_GRID,
    length_grid,
    mixed_price,
    padded_lengths,
    padding_parts,
    real_tokens_per_sequence,
)
from gpuwork.estimate.memory import checked_moe_experts, estimate_memory
from gpuwork.estimate.ops import Kind, MoeExperts, Op, OpList, Phase, fp32_qlora, param_tensors, step_ops
from gpuwork.estimate.recompute import check_traced_recompute
from gpuwork.estimate.steptime import StepPrice, price_ops, stack_kernels
from gpuwork.estimate.traced_ops import with_traced_blocks
from gpuwork.facts.block_profiles import BlockProfile, matching_profile
from gpuwork.facts.catalog import GpuSpec, Link, Network
from gpuwork.facts.hashed import IdentityMemo
from gpuwork.facts.inputs import Inputs
from gpuwork.facts.rates import DeviceRates, Rates, StackProfile
from gpuwork.facts.spec import ModelSpec, ParamCounts, count_params
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, Precision, Sharding, TrainPlan, ZeroSync
from gpuwork.units import HOUR_S, Range

# -- communication ----------------------------------------------------------------------------------

# GPU-to-GPU collectives: gpuwork.estimate.comm (NCCL curves, docs/communication.md). Host links (offloaded optimizer states and parameters) move at this share of the PCIe spec: the
# NCCL share measured on NVLink rings (data/kernels.csv nccl_busbw_fraction_nvlink) taken for DMA too.
LINK_EFFICIENCY = 0.80

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
# a share of the dense peak that a caller may give (mfu=...): the API and the CLI's --mfu refuse the same ends
MFU_RANGE = Range(1e-3, 1.0)



# -- results -------------------------------------------------------------------------------------


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
        return peak_kind(self.plan.precision, self.peak_label == TF32_PEAK_LABEL, self.peak_label == FP8_PEAK_LABEL)

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


# -- peaks and MFU ----------------------------------------------------------------------------------


TF32_PEAK_LABEL = "TF32 tensor, dense (fp32 matmuls with allow_tf32)"


FP8_PEAK_LABEL = "FP8 tensor, dense (linear layers in FP8)"


def peak_flops(gpu: GpuSpec, precision: Precision, tf32: bool = False, fp8: bool = False) -> tuple[float, str]:
    """Dense peak for the plan's compute dtype, and its label; ``tf32`` (TrainPlan.tf32): an fp32 plan's matmuls run
    on the TF32 tensor cores where the GPU has them; ``fp8`` (TrainPlan.fp8_linear): the linears' GEMMs run on the
    FP8 tensor cores, whose peak the MFU is then a share of (so it stays below 100 %)."""
    if fp8 and gpu.fp8_dense_flops is not None:
        return gpu.fp8_dense_flops, FP8_PEAK_LABEL
    if precision is Precision.FP32 and tf32 and gpu.tf32_dense_flops is not None:
        return gpu.tf32_dense_flops, TF32_PEAK_LABEL
    if precision is Precision.FP32:
        return gpu.fp32_flops, "FP32 (non-tensor; TF32 off, the PyTorch default for matmuls)"
    if precision in (Precision.FP16, Precision.FP16_MIXED):
        return gpu.fp16_dense_flops, "FP16 tensor, dense, FP32 accumulate"
    return gpu.bf16_dense_flops, "BF16 tensor, dense, FP32 accumulate"


def peak_kind(precision: Precision, tf32: bool = False, fp8: bool = False) -> Msg:
    """The peak ``peak_flops`` uses for a precision, as a catalog message (``tf32`` / ``fp8``: it took the TF32 / FP8
    peak)."""
    if fp8:
        return msg("peak.fp8")
    if precision is Precision.FP32 and tf32:
        return msg("peak.tf32")
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


def whole_run(plan: TrainPlan, step_s: float, tokens_per_step: float, *, checkpoint_bytes: int,
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
        device = derived_device(gpu, inputs.rates, inputs.gpus)  # a few medians over the table: not cached
    return device


def _plan_ops(plan: TrainPlan, inputs: Inputs, profile: StackProfile,
              moe_experts: MoeExperts | None = None) -> OpList:
    """The step's operations: the hand-written block, or the traced one for a family without it."""
    ops = step_ops(plan, inputs.spec, stack_kernels(profile, moe_experts))
    traced = matching_profile(inputs.spec, plan)
    if traced is None:
        return ops
    check_traced_recompute(plan, inputs.spec)
    return _traced_ops(ops, plan, inputs.spec, traced)


@functools.lru_cache(maxsize=1024)
def _traced_ops(ops: OpList, plan: TrainPlan, spec: ModelSpec, traced: BlockProfile) -> OpList:
    """``ops`` with the traced block, cached on every fact it reads."""
    return OpList(with_traced_blocks(ops, plan, spec, traced))


def _fit_scale(ops: tuple[Op, ...], gpu: GpuSpec, device: DeviceRates, inputs: Inputs, profile: StackProfile,
               measured_s: float, blocking: bool = False, tf32: bool = False) -> float:
    """The factor on every priced time (GPU and host) that makes the step equal ``measured_s``: each
    operation costs max(GPU, host) / factor, so the factor is the priced step over the measured one."""
    return price_ops(ops, gpu, device, inputs.rates, profile, blocking=blocking, tf32=tf32).total_s / measured_s


# -- checkpoint offload ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointOffload:
    """Block inputs copied to CPU RAM and back by a stack's offloaded checkpointing, per optimizer step."""

    bytes_per_step: float  # both directions, as MemoryEstimate.host_transfer_bytes (the plan's lengths)
    copy_s: float  # all copies at the achieved pinned-copy rates
    exposed_s: float  # what the block compute does not hide
    d2h_bytes_s: float
    h2d_bytes_s: float


def _offloaded_bytes_per_token(plan: TrainPlan, spec: ModelSpec, profile: StackProfile) -> tuple[float, int]:
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


@dataclass(frozen=True)
class _Setting:
    """What every part of one estimate reads: the plan, the card, its facts, the parameter counts, the stack, the
    card's achievable rates and the expert layout asked for (None: the stack's)."""

    plan: TrainPlan
    gpu: GpuSpec
    inputs: Inputs
    counts: ParamCounts
    profile: StackProfile
    device: DeviceRates
    experts: MoeExperts | None

    @property
    def spec(self) -> ModelSpec:
        return self.inputs.spec

    @property
    def rates(self) -> Rates:
        return self.inputs.rates


@dataclass(frozen=True)
class _Efficiency:
    """Where the step's efficiency comes from: the rates as measured, a given MFU or a fitted calibration."""

    scale: float  # factor on every priced time (1.0 = rates as measured)
    source: str  # "op model" | "argument" | "calibration"
    label: str | None  # the calibration's label (None: "a measured trial" in the reader's language)


def _nodes_and_network(plan: TrainPlan, inputs: Inputs, nodes: int | None,
                       network: Network | str | None) -> tuple[int, Network | str | None]:
    """The node count checked and the network between nodes (None on one node)."""
    nodes = 1 if nodes is None else nodes
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1 or nodes > plan.gpus:
        raise PlanError("nodes", msg("error.time.nodes", value=repr(nodes), gpus=plan.gpus))
    if nodes == 1:
        return nodes, None
    choices = [n.value for n in Network if n is not Network.NONE] + sorted(inputs.comm.networks)
    if network is not None and network != Network.NONE and network not in choices:
        raise PlanError("network", msg("error.time.network_choice", value=repr(network),
                                       choices=", ".join(dict.fromkeys(choices))))
    if network is None or network == Network.NONE:
        raise PlanError("network", msg("error.time.network_needed", nodes=nodes))
    # a Network choice, or a node of networks.csv by its id ("aws-p4d", ...)
    return nodes, Network(network) if network in {n.value for n in Network} else str(network)


def _experts(moe_experts: MoeExperts | str | None) -> MoeExperts | None:
    """The expert layout asked for, checked (None: the stack's)."""
    layout = checked_moe_experts(moe_experts)
    return MoeExperts(layout) if layout is not None else None


def _as_runnable(plan: TrainPlan, gpu: GpuSpec) -> tuple[TrainPlan, list[Msg]]:
    """The plan as ``gpu`` can run it, and the warnings that say what changed: FP8 linears on a GPU without FP8 tensor
    cores (Transformer Engine and torchao refuse them there; ``fp8_gpu_problem``) are priced in 16 bits."""
    if fp8_gpu_problem(plan, gpu) is not None:
        return plan.replace(fp8_linear=False), [msg("time.no_fp8", gpu=gpu.display_name)]
    return plan, []


def _precision_warnings(plan: TrainPlan, gpu: GpuSpec, profile: StackProfile) -> list[Msg]:
    """What the plan's precision runs as: bf16 on a card without BF16 tensor cores, a QLoRA step in fp32."""
    found = []
    if plan.precision in (Precision.BF16, Precision.BF16_MIXED) and gpu.compute_capability.startswith(("6.", "7.")):
        found.append(msg("time.no_bf16", gpu=gpu.display_name))
    if plan.tf32 and gpu.tf32_dense_flops is None:
        found.append(msg("time.no_tf32", gpu=gpu.display_name))
    if fp32_qlora(plan, stack_kernels(profile)):  # what runs, and the precision most QLoRA runs use
        fp16 = plan.precision is Precision.FP16
        found.append(msg("time.fp32_qlora", precision=plan.precision, flag="fp16" if fp16 else "bf16",
                         mixed=Precision.FP16_MIXED if fp16 else Precision.BF16_MIXED))
    return found


def _run_warnings(plan: TrainPlan, intra: Link, comm: CommEstimate, own_share: float,
                  data: DataFeed) -> tuple[Msg, ...]:
    """Warnings about the run as a whole: adapters under sharding, a PCIe-bound step, GPUs waiting for data."""
    found: list[Msg] = []
    if plan.sharding is not Sharding.DDP and plan.method is not Method.FULL and plan.uses_adapters:
        found.append(msg("time.adapters_sharded"))
    if comm.pcie_share is not None and intra is Link.PCIE and own_share > LINK_VERDICT_SHARE:
        found.extend(comm.verdict)
    if data.gpus_wait:
        found.append(data.verdict)
    return tuple(found)


def flops_plan(plan: TrainPlan) -> TrainPlan:
    """The plan whose FLOPs per token are the run's: under a length histogram, attention at the token-weighted
    length (sum l^2 / sum l); in packed rows of documents, at the documents' length (``flops_per_token``)."""
    hist = plan.length_histogram
    if hist is None:
        return plan
    return plan.replace(seq_len=max(1, round(sum(n * n * w for n, w in hist) / sum(n * w for n, w in hist))),
                        lengths="fixed")


def _efficiency(s: _Setting, mfu: float | None, calibration: Mapping[str, Any] | None) -> _Efficiency:
    """The factor on every priced time: 1 (the rates as measured, or a given MFU, checked) or a calibration's."""
    if mfu is not None:
        if MFU_RANGE.problem(mfu) is not None:
            raise PlanError("mfu", msg("error.time.mfu", value=repr(mfu)))
        return _Efficiency(1.0, "argument", None)
    if calibration:
        scale, label = _calibration_scale(s.plan, s.gpu, s.device, s.inputs, s.profile, calibration, s.experts)
        return _Efficiency(scale, "calibration", label)
    return _Efficiency(1.0, "op model", None)


class _PlanPart(NamedTuple):
    """What an estimate reads of its plan, model and stack alone, the same on every GPU (``_plan_part``)."""

    counts: ParamCounts
    flops: FlopsPerToken  # of the plan's FLOPs plan (``flops_plan``)
    # (weight, micro-batch shape, its operations) of each shape a step runs: one, or under a length histogram the
    # micro-batches padded to their longest member on ``LENGTH_GRID`` lengths
    shapes: tuple[tuple[float, TrainPlan, OpList], ...]
    mixed: bool  # a length histogram's padded shapes: the step is their expected price
    traffic: CommTraffic
    checkpoint_bytes: int
    tokens_per_gpu_step: float  # real (unpadded) tokens: what throughput, steps per epoch and the data feed count


def _plan_part(plan: TrainPlan, inputs: Inputs, profile: StackProfile, experts: MoeExperts | None) -> _PlanPart:
    """``_PlanPart``, made once per plan object, model and stack object (a sweep or a fit matrix prices one plan on
    many GPUs; the objects are frozen, and a changed one is another object)."""
    return _PLAN_PARTS.get((plan, inputs.spec, profile), experts,
                           lambda: _make_plan_part(plan, inputs, profile, experts))


_PLAN_PARTS: IdentityMemo[_PlanPart] = IdentityMemo(256)


def _make_plan_part(plan: TrainPlan, inputs: Inputs, profile: StackProfile, experts: MoeExperts | None) -> _PlanPart:
    spec = inputs.spec
    counts = count_params(spec, plan)
    mix = padded_lengths(plan)
    if mix is None:
        shapes: tuple[tuple[float, TrainPlan, OpList], ...] = ((1.0, plan, _plan_ops(plan, inputs, profile, experts)),)
    else:  # micro-batches with padding carry the attention mask (ops.sdpa_padding_mask), those of one length not
        shapes = tuple((w, shape, _plan_ops(shape, inputs, profile, experts))
                       for kind, part in padding_parts(plan, stack_kernels(profile, experts))
                       for w, shape in ((w, plan.replace(seq_len=n, lengths=kind)) for w, n in length_grid(part)))
    return _PlanPart(counts, flops_per_token(flops_plan(plan), spec), shapes, mix is not None,
                     _traffic(plan, spec, counts), checkpoint_bytes(plan, spec),
                     plan.batch_size * real_tokens_per_sequence(plan) * plan.grad_accum)


def _priced_shapes(s: _Setting, part: _PlanPart,
                   scale: float) -> tuple[list[tuple[float, TrainPlan, StepPrice]], StepPrice]:
    """(weight, micro-batch shape, price) of each shape a step runs (``_PlanPart.shapes``), and the step's price."""
    priced = [(w, shape, price_ops(o, s.gpu, s.device, s.rates, s.profile, efficiency=scale,
                                   blocking=s.plan.launch_blocking, tf32=s.plan.tf32))
              for w, shape, o in part.shapes]
    price = mixed_price([(w, p) for w, _, p in priced]) if part.mixed else priced[0][2]
    return priced, price


def _host_optimizer_s(s: _Setting, breakdown: dict[str, float], ranks_per_host: int) -> float:
    """Seconds an offloaded optimizer adds per step: gradients down and parameters up over PCIe, DeepSpeed
    CPU-Adam of all ``ranks_per_host`` shards on the host (0 when the optimizer stays on the GPU)."""
    plan = s.plan
    if not plan.offload_optimizer:
        return 0.0
    n = s.counts.trainable / plan.shard_ranks  # the GPU's shard (DDP: 1, the whole model)
    pb = 4 if plan.uses_adapters else plan.precision.param_bytes
    # cpu_adam_params_per_s is one host's memory roofline: the node's ranks step at once and share it
    host_update = (n * ranks_per_host / s.rates.kernel("cpu_adam_params_per_s")
                   + 2 * pb * n / (s.gpu.pcie_bw_bytes_s * LINK_EFFICIENCY))
    breakdown["optimizer on CPU"] = host_update
    return host_update


def _offload_s(s: _Setting, priced: list[tuple[float, TrainPlan, StepPrice]],
               breakdown: dict[str, float]) -> tuple[float, CheckpointOffload | None]:
    """Seconds per step of parameter offload (ZeRO-3 fetches its shard from host memory in forward and backward)
    and of the stack's checkpoint offload that block compute does not hide, with the latter's account."""
    plan, gpu, rates = s.plan, s.gpu, s.rates
    offload_s = 0.0
    if plan.offload_params:
        shard = s.counts.total * plan.precision.compute_bytes / plan.shard_ranks  # 16-bit weights fetched per GPU
        offload_s = 2 * shard * plan.grad_accum / (gpu.pcie_bw_bytes_s * LINK_EFFICIENCY)
        breakdown["parameter offload (PCIe)"] = offload_s
    if not (plan.grad_checkpointing and s.profile.checkpoint == "offload"):
        return offload_s, None
    per_token, blocks = _offloaded_bytes_per_token(plan, s.spec, s.profile)
    if not blocks:
        return offload_s, None
    copy_s = exposed_copy_s = moved = 0.0
    for w, shape, p in priced:
        block_bytes = per_token * shape.tokens_per_micro_batch
        c, e = _offload_time(p, block_bytes, blocks, shape, s.spec, gpu, rates)
        copy_s, exposed_copy_s = copy_s + w * c, exposed_copy_s + w * e
        moved += w * 2 * block_bytes * blocks * plan.grad_accum
    checkpoint_offload = CheckpointOffload(
        bytes_per_step=moved, copy_s=copy_s, exposed_s=exposed_copy_s,
        d2h_bytes_s=gpu.pcie_bw_bytes_s * rates.kernel("pinned_copy_d2h_fraction"),
        h2d_bytes_s=gpu.pcie_bw_bytes_s * rates.kernel("pinned_copy_h2d_fraction"))
    breakdown["checkpoint offload (PCIe)"] = exposed_copy_s
    return offload_s + exposed_copy_s, checkpoint_offload


def _traffic(plan: TrainPlan, spec: ModelSpec, counts: ParamCounts) -> CommTraffic:
    """What the plan's GPUs move per optimizer step (estimate.comm)."""
    weight_bytes = 0.5 if plan.method is Method.QLORA else plan.precision.compute_bytes
    grad_bytes = 4 if plan.uses_adapters else plan.precision.param_bytes  # grads take the param dtype
    root_params, root_trained = _fsdp_root(plan, spec, counts)
    return CommTraffic(gpus=plan.gpus, sharding=plan.sharding, grad_accum=plan.grad_accum,
                       units=0 if plan.whole_fsdp_unit else max(spec.num_layers, 1),
                       grad_bytes=counts.trainable * grad_bytes,
                       gathered_bytes=counts.total * weight_bytes,
                       params16_bytes=counts.trainable * plan.precision.compute_bytes,
                       shard_group=plan.shard_group_gpus,
                       root_gathered_bytes=root_params * weight_bytes, root_grad_bytes=root_trained * grad_bytes,
                       last_grad_bytes=_ddp_last_grads(plan, spec) * grad_bytes, overlap=plan.comm_overlap,
                       blocking=plan.launch_blocking,
                       sliced_tensors=param_tensors(spec, plan, counts.trainable)
                       if plan.zero_sync is ZeroSync.SLICED else 0)


def _ddp_last_grads(plan: TrainPlan, spec: ModelSpec) -> int:
    """Trained parameters whose DDP gradient is ready only when backward ends: the input embeddings (the first op
    of forward is the last of backward; a head tied to them accumulates into the same gradient), when trained.
    docs/communication.md 'DDP'; 0 for the other shardings, adapters and ``freeze``."""
    if plan.sharding is not Sharding.DDP or plan.uses_adapters or plan.method is Method.FREEZE:
        return 0
    return spec.params_embedding


def _fsdp_root(plan: TrainPlan, spec: ModelSpec, counts: ParamCounts) -> tuple[int, int]:
    """(parameters, trained parameters) of torch FSDP's root unit: what no decoder block holds (embeddings, head,
    final norm). Torch FSDP1 and FSDP2 keep the root gathered after forward (docs/communication.md 'The root
    unit'); (0, 0) for DeepSpeed ZeRO-3 and the unsharded strategies, whose units are priced evenly."""
    if plan.sharding not in FSDP2_SHARDINGS:
        return 0, 0
    if plan.whole_fsdp_unit:  # TrainPlan.fsdp_wrap 'whole': the root unit holds every parameter
        return counts.total, counts.trainable
    params = spec.params_embedding + spec.params_head + spec.params_other
    if plan.uses_adapters:
        trained = counts.head_trainable
    elif plan.method is Method.FREEZE:
        trained = spec.params_head + spec.extras.get("params_final_norm", 0)
    else:
        trained = params
    return min(params, counts.total), min(trained, counts.trainable)


def _data_feed(s: _Setting, tokens_step: float, step_s: float, loader_tokens_per_s: float | None,
               breakdown: dict[str, float]) -> tuple[DataFeed, float]:
    """What the GPUs consume at ``step_s`` and whether the given loader keeps up; the step time once it waits."""
    consumed = tokens_step / step_s
    id_bytes = token_id_bytes(s.spec.vocab_size)
    workers = math.ceil(consumed / LOADER_WORKER_TOKENS_S)
    waits, wait_share = False, 0.0
    if loader_tokens_per_s is not None:
        if not (isinstance(loader_tokens_per_s, int | float) and math.isfinite(loader_tokens_per_s)
                and loader_tokens_per_s > 0):
            raise PlanError("loader_tokens_per_s", msg("error.time.loader"))
        data_step = tokens_step / loader_tokens_per_s
        waits = data_step > step_s
        if waits:
            wait_share = (data_step - step_s) / data_step
            verdict = msg("data.gpus_wait", loader_tokens_s=loader_tokens_per_s, needed_tokens_s=consumed,
                          wait_share=wait_share, workers=workers)
            breakdown["data wait"] = data_step - step_s
            step_s = data_step
        else:
            verdict = msg("data.keeps_up", loader_tokens_s=loader_tokens_per_s, needed_tokens_s=consumed)
    else:
        verdict = msg("data.needed", needed_tokens_s=consumed, ids_bytes_s=consumed * id_bytes,
                      text_bytes_s=consumed * BYTES_PER_TOKEN_TEXT, workers=workers,
                      worker_tokens_s=LOADER_WORKER_TOKENS_S)
    data = DataFeed(tokens_per_s=consumed, token_id_bytes_per_s=consumed * id_bytes,
                    text_bytes_per_s=consumed * BYTES_PER_TOKEN_TEXT, loader_tokens_per_s=loader_tokens_per_s,
                    gpus_wait=waits, wait_share=wait_share, workers_needed=workers, verdict=verdict)
    return data, step_s


def _mfu_choice(s: _Setting, efficiency: _Efficiency, implied: float, mfu: float | None) -> MfuChoice:
    """The efficiency the priced step amounts to, and where it comes from."""
    if efficiency.source == "argument" and mfu is not None:
        return MfuChoice(value=float(mfu), source="argument", basis="given by the caller", note=msg("mfu.argument"))
    if efficiency.source == "calibration":
        label, scale = efficiency.label, efficiency.scale
        return MfuChoice(value=implied, source="calibration",
                         basis=f"measured: {label or 'a measured trial'}; every operation x {scale:.3f}",
                         note=msg("mfu.calibrated", label=label or msg("mfu.a_trial"), scale=scale), scale=scale)
    basis, note = _op_model_basis(s.plan.stack.value, s.gpu.display_name)
    return MfuChoice(value=implied, source="default", basis=basis, note=note)


@functools.lru_cache(maxsize=256)
def _op_model_basis(stack: str, gpu: str) -> tuple[str, Msg]:
    """The op model's basis and note for one stack and GPU (the same two values for every plan they run)."""
    return f"per-operation model, stack {stack}, rates of {gpu}", msg("mfu.op_model", stack=stack, gpu=gpu)


def _sources(s: _Setting, est: TimeEstimate, price: StepPrice, disk_write_bytes_s: float,
             shapes: int) -> dict[str, str]:
    """Where each figure of ``est`` comes from (English: citations)."""
    plan, gpu = s.plan, s.gpu
    sources = {
        "flops_per_token": est.flops_per_token.convention,
        "peak": f"{gpu.display_name} {est.peak_label}: {est.peak_flops_per_gpu / 1e12:g} TFLOPS (data/gpus.csv)",
        "mfu": est.mfu.basis,
        **{f"rate: {k}": v for k, v in price.assumptions.items() if v},
        "comm": f"{est.comm.strategy}; NCCL bus bandwidth by message size (nccl_curves.csv, docs/communication.md); "
                "DDP buckets overlap backward, FSDP gathers prefetch behind the previous block",
        "eval_s": "train time x plan.eval_fraction",
        "checkpoint_s": f"checkpoints x checkpoint bytes / {disk_write_bytes_s / 1e9:g} GB/s",
        "margin_s": f"{TIME_MARGIN:.0%} of the total",
    }
    offload = est.checkpoint_offload
    if offload is not None:
        sources["checkpoint offload"] = (
            f"{offload.bytes_per_step / 1e9:.3g} GB of block inputs per step to CPU RAM and back "
            f"(estimate_memory host_transfer_bytes) at {offload.d2h_bytes_s / 1e9:.3g} GB/s out and "
            f"{offload.h2d_bytes_s / 1e9:.3g} GB/s back (PCIe {gpu.pcie_gen}.0 x16 x pinned-copy shares, "
            "kernels.csv pinned_copy_*_fraction [K14]); copies on a side stream hide behind each block's compute, "
            f"{offload.copy_s * 1e3:.3g} ms of copies leave {offload.exposed_s * 1e3:.3g} ms "
            "exposed (Unsloth gradient_checkpointing.py [K15])")
    hist = plan.length_histogram
    if hist is not None:
        sources["lengths"] = (
            f"{len(hist)} lengths, mean {real_tokens_per_sequence(plan):.0f} tokens; each micro-batch of "
            f"{plan.batch_size} padded to its longest (P(max <= l) = F(l)^{plan.batch_size}), the step priced as the "
            f"expected cost over {shapes} padded lengths, tokens counted without padding")
    if s.spec.num_experts > 1:
        layout = s.experts or MoeExperts(s.profile.moe_experts)
        sources["moe experts"] = ("transformers 4.x loop over nn.Linear experts, a host wait per expert "
                                  "(rates_sources.md [K10][K11])" if layout is MoeExperts.LOOP
                                  else "fused expert tensors, one GEMM per expert over its share of tokens")
    return sources


class TimeOptions(TypedDict, total=False):
    """How the run goes beyond its plan: ``estimate_time``'s keyword options (the ``time_options`` the offers,
    the fit matrix and the profiles pass on), each absent or None for its default (see ``estimate_time``)."""

    mfu: float | None
    calibration: Mapping[str, Any] | None
    link: Link | str | None
    network: Network | str | None
    nodes: int | None
    loader_tokens_per_s: float | None
    disk_write_bytes_s: float
    moe_experts: MoeExperts | str | None


def _unknown_option(options: Mapping[str, Any]) -> None:
    """Python's own refusal of a keyword ``estimate_time`` does not take."""
    for name in options:
        if name not in TimeOptions.__annotations__:
            raise TypeError(f"estimate_time() got an unexpected keyword argument {name!r}")


def estimate_time(plan: TrainPlan, gpu: GpuSpec, inputs: Inputs, **options: Unpack[TimeOptions]) -> TimeEstimate:
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
        moe_experts: a MoE model's experts when the run's software differs from the stack's (stacks.csv):
            "loop" (transformers 4.x, a Python loop over ``nn.Linear`` experts) or "fused"; None = the stack's.

    Raises:
        PlanError / CatalogError: bad mfu, calibration, link, network, node count or moe_experts.
    """
    _unknown_option(options)
    check_attention_gpu(plan, gpu)
    mfu, calibration, loader_tokens_per_s = options.get("mfu"), options.get("calibration"), \
        options.get("loader_tokens_per_s")
    disk_write_bytes_s = options.get("disk_write_bytes_s", DISK_WRITE_BYTES_S)
    nodes, net = _nodes_and_network(plan, inputs, options.get("nodes"), options.get("network"))
    intra = coerce_link(options.get("link"), gpu)
    if not (isinstance(disk_write_bytes_s, int | float) and math.isfinite(disk_write_bytes_s)
            and disk_write_bytes_s > 0):
        raise PlanError("disk_write_bytes_s", msg("error.time.disk_write"))
    plan, warnings = _as_runnable(plan, gpu)
    peak, peak_label = peak_flops(gpu, plan.precision, plan.tf32, plan.fp8_linear)
    profile = inputs.rates.stacks[plan.stack]
    plan = plan.with_input_grads(profile.embeddings_hooked)
    warnings.extend(_precision_warnings(plan, gpu, profile))
    device = _device_rates(gpu, inputs, warnings)
    experts = _experts(options.get("moe_experts"))
    part = _plan_part(plan, inputs, profile, experts)
    flops, tokens_per_gpu_step = part.flops, part.tokens_per_gpu_step
    s = _Setting(plan, gpu, inputs, part.counts, profile, device, experts)
    tokens_step = tokens_per_gpu_step * plan.gpus
    efficiency = _efficiency(s, mfu, calibration)
    priced, price = _priced_shapes(s, part, efficiency.scale)
    optimizer_s = price.by_phase.get(Phase.OPTIMIZER.value, 0.0)
    compute_s = price.total_s - optimizer_s
    breakdown = dict(price.by_kind)
    if mfu is not None:
        compute_s = flops.total * tokens_per_gpu_step / (peak * mfu)
        breakdown = {"compute (given MFU)": compute_s, Kind.OPTIMIZER.value: optimizer_s}
    optimizer_s += _host_optimizer_s(s, breakdown, math.ceil(plan.gpus / nodes))
    offload_s, checkpoint_offload = _offload_s(s, priced, breakdown)

    fsdp_s = fsdp_copies_s(plan, s.spec, s.counts, gpu, device, s.rates, efficiency.scale, breakdown)
    # communication: the same per-GPU compute; only what does not hide behind it adds (estimate.comm)
    base_step = compute_s + optimizer_s + offload_s + fsdp_s
    comm, own_share = plan_comm(CommSetting(plan, gpu, s.rates, inputs.comm, intra, net, nodes, device.sm_count),
                                part.traffic,
                                price.by_phase.get(Phase.FORWARD.value, 0.0),
                                price.by_phase.get(Phase.BACKWARD.value, 0.0)
                                + price.by_phase.get(Phase.RECOMPUTE.value, 0.0), base_step)
    if comm.exposed_s > 0:
        breakdown["communication (exposed)"] = comm.exposed_s
    if comm.contention_s > 0:
        breakdown["communication contention"] = comm.contention_s
    data, step_s = _data_feed(s, tokens_step, base_step + comm.exposed_s + comm.contention_s, loader_tokens_per_s,
                              breakdown)

    # what efficiency the priced step amounts to (the MFU a trial would measure, compute only)
    implied = flops.model * tokens_per_gpu_step / (peak * compute_s) if compute_s > 0 else 0.0
    choice = _mfu_choice(s, efficiency, implied, mfu)

    # the whole run
    ckpt_bytes = part.checkpoint_bytes
    run = whole_run(plan, step_s, tokens_step, checkpoint_bytes=ckpt_bytes, disk_write_bytes_s=disk_write_bytes_s)
    warnings.extend(_run_warnings(plan, intra, comm, own_share, data))
    estimate = TimeEstimate(
        plan=plan, gpu_id=gpu.gpu_id, gpu_name=gpu.display_name, peak_label=peak_label,
        peak_flops_per_gpu=peak, mfu=choice, flops_per_token=flops, tokens_per_step=round(tokens_step),
        flops_per_step=flops.total * tokens_step, compute_s=compute_s, optimizer_s=optimizer_s,
        offload_s=offload_s, comm=comm, data=data, step_time_s=step_s,
        tokens_per_s=tokens_step / step_s, steps=run.steps, train_s=run.train_s, eval_s=run.eval_s,
        checkpoints=run.checkpoints, checkpoint_bytes=ckpt_bytes, checkpoint_write_s=ckpt_bytes / disk_write_bytes_s,
        checkpoint_s=run.checkpoint_s, margin_s=run.margin_s, total_s=run.total_s, warnings=tuple(warnings),
        breakdown=breakdown, launches_per_step=price.launches, stack=plan.stack.value,
        checkpoint_offload=checkpoint_offload, sources={},
    )
    # its sources cite its own figures: filled in once it exists, before anyone sees it (a second frozen copy
    # through dataclasses.replace cost about 25 us per estimate)
    estimate.sources.update(_sources(s, estimate, price, disk_write_bytes_s, len(priced)))
    return estimate


def _calibration_scale(plan: TrainPlan, gpu: GpuSpec, device: DeviceRates, inputs: Inputs, profile: StackProfile,
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
    return _fit_scale(ops, gpu, device, inputs, profile, measured_s, measured_plan.launch_blocking,
                      measured_plan.tf32), label


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
        try:
            p = plan.single_gpu() if n == 1 else plan.replace(gpus=n)
        except PlanError:  # a hybrid plan's shard group that does not divide n
            continue
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
    "TimeOptions",
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
    "flops_plan",
    "matmul_params",
    "method_group",
    "peak_flops",
    "padded_lengths",
    "peak_kind",
    "real_tokens_per_sequence",
    "scaling",
    "whole_run",
]
