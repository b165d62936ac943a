"""Achievable kernel rates per GPU and what each software stack fuses: data/rates.csv, kernels.csv, stacks.csv.

The step-time model (``gpuwork.estimate.steptime``) prices every operation of a step with these
numbers. They come from kernel-level measurements and documentation, each row naming its source
(tags resolve in ``data/rates_sources.md``); nothing here is fitted to end-to-end training runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from gpuwork.errors import CatalogError
from gpuwork.facts.hashed import HashedTuple
from gpuwork.facts.l2 import l2_copy_steps
from gpuwork.facts.paths import data_dir
from gpuwork.facts.tables import cell_number, read_rows
from gpuwork.message import msg
from gpuwork.plan import Attention, Stack, TrainPlan

RATES_CSV = "rates.csv"
KERNELS_CSV = "kernels.csv"
STACKS_CSV = "stacks.csv"
GEMM_TILES_CSV = "gemm_tiles.csv"  # the output tiles of the GEMM shape model (estimate.gemm)
ATTENTION_CURVES_CSV = "attention_curves.csv"  # fused attention's measured rate by sequence length (steptime)
FA2_KERNEL, FA3_KERNEL, FA4_KERNEL = "flash-attn 2", "flash-attn 3", "flash-attn 4"  # attention_curves.csv kernels
CUDNN_KERNEL = "cudnn"
# the kernels torch's SDPA ran on a lent H200 with torch 2.11 ([K22]): its FLASH_ATTENTION backend (the
# FlashAttention-2 code torch ships) and its default choice there, cuDNN 9.19's attention (docs/attention_backends.md)
TORCH_FLASH_KERNEL, TORCH_CUDNN_KERNEL = "torch sdpa flash", "torch sdpa cudnn"
# a plan's own rows; else FA2's
ATTENTION_KERNELS = {Attention.FLASH3: FA3_KERNEL, Attention.FLASH4: FA4_KERNEL, Attention.CUDNN: CUDNN_KERNEL}
DTYPES = ("bf16", "fp16", "fp32", "fp8")  # fp8: an optional row, where its rate was measured
MOE_EXPERTS = ("fused", "loop")  # stacks.csv moe_experts (gpuwork.estimate.ops.MoeExperts)
# stacks.csv memory columns: allowed values (integers for swiglu_saved)
MEMORY_CHOICES = {"loss_kernel": ("eager", "eager-held", "chunked", "inplace", "inplace-returned", "chunked-fp32",
                                  "native"),
                  "rmsnorm_saves": ("fp32-copy", "input"), "checkpoint": ("recompute", "offload"),
                  "fsdp_grads": ("sharded", "unit-unsharded"), "bnb_4bit_input": ("freed", "kept"),
                  "adapter_weights": ("fp32", "model"),
                  "sdpa_kv": ("grouped", "masked", "repeat"), "rope_cache": ("none", "layer")}


@dataclass(frozen=True)
class DeviceRates:
    """What one GPU achieves in practice (large GEMMs, large copies), not its datasheet peak."""

    gpu_id: str
    matmul_flops: dict[str, float]  # dtype -> achievable dense matmul FLOP/s
    mem_bw_bytes_s: float  # achievable device-memory bandwidth (copy kernel), bytes/s
    sm_count: int  # streaming multiprocessors (NVIDIA) or compute units (AMD)
    basis: dict[str, str]  # "matmul_<dtype>" / "mem_bw" / "sm" -> source text
    # A CPU runs each kernel on the thread that dispatches it: dispatch adds to the kernel's time instead
    # of hiding behind the previous kernel as on a GPU's asynchronous stream.
    synchronous: bool = False
    host_us_per_kernel: float | None = None  # measured dispatch cost per op on this device (None: kernels.csv)
    # (working set in bytes, bytes/s) of copies measured with their data in L2, smallest working set first
    # (data/l2_measurements.csv, facts.l2); () where none was measured: the step model's L2 rule does not apply
    l2_copy: tuple[tuple[float, float], ...] = ()
    # dtype -> the large-GEMM rate held back to back at training shapes, under the card's power limit (rates.csv
    # sustained_tflops; docs/gemm.md "The sustained rate"); absent where no such measurement exists
    sustained_flops: dict[str, float] = field(default_factory=dict)

    @property
    def gemm_flops(self) -> dict[str, float]:
        """dtype -> the most a step's GEMMs run at: the sustained rate where measured, else the large-GEMM rate."""
        return {**self.matmul_flops, **self.sustained_flops}


@dataclass(frozen=True)
class StackProfile:
    """What one software stack changes in the step (data/stacks.csv)."""

    stack: Stack
    fused_norm: bool
    fused_rope: bool
    fused_mlp_activation: bool
    fused_cross_entropy: bool
    fused_lora: bool
    fuse_elementwise: bool
    adapters_fp32: bool  # LoRA weights kept in fp32 on a 16-bit base (peft's default): casts around them
    launch: str  # "eager" (one host dispatch per kernel) | "graph" (CUDA graph replay)
    basis: str
    moe_experts: str = "fused"  # "fused" expert tensors (one GEMM per expert) | "loop" (transformers 4.x)
    # memory behaviour (read by gpuwork.estimate.memory; see MEMORY_CHOICES)
    loss_kernel: str = "eager"  # "eager" fp32 upcast + log_softmax | "chunked" fused linear CE | "inplace" 16-bit
    # ("inplace-returned": the in-place kernel, and the model returns the logits too; "chunked-fp32": Lit-GPT;
    # "native": F.cross_entropy on the logits' own dtype, a plain PyTorch loop [M7])
    rmsnorm_saves: str = "fp32-copy"  # what RMSNorm saves: "fp32-copy" of its input | "input" (+ fp32 rstd)
    swiglu_saved: int = 3  # intermediate-sized tensors act(gate) * up saves: 3 eager, 2 fused kernels
    checkpoint: str = "recompute"  # checkpointed block inputs stay on the GPU | "offload" to CPU RAM
    # "unit-unsharded": FSDP1 units mix frozen and trained weights and accumulate under no_sync
    # (gpuwork.estimate.memory_stacks.flat_unit_gradients); "sharded": the trained weights' gradient shards
    fsdp_grads: str = "sharded"
    # "kept": bitsandbytes <= 0.43.1's MatMul4Bit holds each 4-bit matmul's input until backward
    # (gpuwork.estimate.memory_stacks.kept_4bit_inputs); "freed": 0.43.2 and later
    bnb_4bit_input: str = "freed"
    # "fp32": LoRA weights, gradients and AdamW states fp32 (peft 0.12+, and peft's uint8 QLoRA in any release);
    # "model": in the model's dtype, 16-bit on a pure 16-bit plan (peft 0.7-0.11 on a 16-bit base, torchtune,
    # Lit-GPT under bf16-true; docs/peft_adapter_dtype.md; an older file without the column: fp32)
    adapter_weights: str = "fp32"
    # K and V that SDPA keeps for backward on a grouped-query model ([M10]; gpuwork.estimate.memory_stacks
    # sdpa_kv_repeated): "grouped" at their own heads (enable_gqa or a kernel that reads grouped K/V), "masked"
    # repeated to every query head when the model hands SDPA a mask (transformers' use_gqa_in_sdpa), "repeat"
    # always repeated (transformers before use_gqa_in_sdpa: repeat_kv ahead of every SDPA call)
    sdpa_kv: str = "grouped"
    # "layer": the transformers 4.x releases whose Llama-lineage attention layers each build a rotary module with
    # cos and sin caches of max_position_embeddings x head_dim in the load dtype, moved to the GPU with the model
    # (gpuwork.estimate.memory_stacks.rope_cache_bytes, [M11]); "none": computed per forward (an older file: none)
    rope_cache: str = "none"
    memory_basis: str = ""
    # apex amp O2: the model itself is cast to 16 bits, so a mixed-precision plan runs without autocast's casts
    # (stacks.csv model_16bit; an older file without the column: 0)
    model_16bit: bool = False
    # transformers' models hand SDPA the batch's padding mask, which keeps it off the flash kernel (stacks.csv
    # sdpa_padding_mask; docs/time_misses.md#sdpa-with-a-padding-mask; an older file without the column: 0)
    sdpa_padding_mask: bool = False
    # the stack's own MLP calls torch's F.gelu for any GELU, tanh approximation included: one kernel that saves its
    # input, where transformers' gelu_new is a composite (stacks.csv torch_gelu; an older file without it: 0); the
    # compiled stacks too, whose partitioner keeps only the GELU's input and recomputes the composite ([M9])
    torch_gelu: bool = False
    # turning gradient checkpointing on also hooks the embeddings' output to require grad, whatever the method
    # (transformers 5: ``_activation_checkpointing_enable`` calls ``enable_input_require_grads`` for every model fed
    # input_ids; 4.x only with PEFT adapters): under method "freeze" the backward then runs through every frozen
    # block (TrainPlan.input_require_grads left unset takes this; stacks.csv embeddings_hooked, an older file: 0)
    embeddings_hooked: bool = False


class AttentionPoint(NamedTuple):
    """One measured rate of a fused attention kernel (data/attention_curves.csv)."""

    family: str  # steptime's attention family (h100, a100, ...)
    attention_pass: str  # "fwd" | "bwd"
    causal: bool
    head_dim: int
    seq_len: int
    fraction: float  # measured TFLOP/s over the measuring GPU's dense 16-bit peak
    kernel: str = FA2_KERNEL  # which kernel measured it (attention_curves.csv kernel)


class AttentionCurves(HashedTuple):
    """One family's AttentionPoints (the step model's price cache keys on them)."""


NO_CURVES = AttentionCurves()


@dataclass(frozen=True)
class Rates:
    """All rate facts: per-GPU rates, global kernel facts and the stacks."""

    devices: dict[str, DeviceRates]
    kernels: dict[str, float]
    kernel_basis: dict[str, str]
    stacks: dict[Stack, StackProfile]
    gemm_tiles: tuple[tuple[int, int, float], ...] = ()  # (tile_m, tile_n, efficiency); () = no file
    # (family, pass, causal, head_dim, seq_len, fraction of the dense peak); () = no file
    attention_curves: tuple[AttentionPoint, ...] = ()
    attention_families: dict[str, AttentionCurves] = field(default_factory=dict)  # attention_curves by family

    def curves(self, family: str) -> AttentionCurves:
        """The family's attention curves (empty when it has none)."""
        return self.attention_families.get(family, NO_CURVES)

    def device(self, gpu_id: str) -> DeviceRates | None:
        return self.devices.get(gpu_id)

    def kernel(self, key: str) -> float:
        try:
            return self.kernels[key]
        except KeyError:
            raise CatalogError(msg("error.rates.missing_key", file=KERNELS_CSV, key=key)) from None


@functools.lru_cache(maxsize=4)
def _load(folder: str) -> Rates:
    base = Path(folder)
    path = base / RATES_CSV
    devices: dict[str, DeviceRates] = {}
    for i, row in enumerate(read_rows(path, ("gpu_id", "dtype", "matmul_tflops", "matmul_basis", "mem_bw_gbs",
                                         "mem_bw_basis", "sm_count", "sm_basis")), start=2):
        gpu_id, dtype = row["gpu_id"].strip(), row["dtype"].strip()
        if dtype not in DTYPES:
            raise CatalogError(msg("error.rates.value", file=path.name, line=i, column="dtype", value=dtype))
        flops = cell_number(path, i, "matmul_tflops", row["matmul_tflops"]) * 1e12
        bw = cell_number(path, i, "mem_bw_gbs", row["mem_bw_gbs"]) * 1e9
        sm = int(cell_number(path, i, "sm_count", row["sm_count"]))
        old = devices.get(gpu_id)
        matmul = dict(old.matmul_flops) if old else {}
        sustained = dict(old.sustained_flops) if old else {}
        basis = dict(old.basis) if old else {}
        matmul[dtype] = flops
        basis[f"matmul_{dtype}"] = row["matmul_basis"]
        basis["mem_bw"], basis["sm"] = row["mem_bw_basis"], row["sm_basis"]
        held = (row.get("sustained_tflops") or "").strip()  # optional column; empty where not measured
        if held:
            sustained[dtype] = cell_number(path, i, "sustained_tflops", held) * 1e12
            if sustained[dtype] > flops:  # a power-limited rate above the card's best large GEMM is a typo
                raise CatalogError(msg("error.rates.value", file=path.name, line=i, column="sustained_tflops",
                                       value=held))
            basis[f"sustained_{dtype}"] = row.get("sustained_basis") or ""
        devices[gpu_id] = DeviceRates(gpu_id, matmul, min(bw, old.mem_bw_bytes_s) if old else bw, sm, basis,
                                      sustained_flops=sustained)
    kpath = base / KERNELS_CSV
    kernels, kbasis = {}, {}
    for i, row in enumerate(read_rows(kpath, ("key", "value", "unit", "basis")), start=2):
        kernels[row["key"].strip()] = cell_number(kpath, i, "value", row["value"], positive=False)
        kbasis[row["key"].strip()] = row["basis"]
    spath = base / STACKS_CSV
    stacks: dict[Stack, StackProfile] = {}
    flags = ("fused_norm", "fused_rope", "fused_mlp_activation", "fused_cross_entropy", "fused_lora",
             "fuse_elementwise", "adapters_fp32")
    # an older file without the column: 0
    optional_flags = ("model_16bit", "sdpa_padding_mask", "torch_gelu", "embeddings_hooked")
    for i, row in enumerate(read_rows(spath, ("stack", *flags, "launch", "moe_experts", "basis")), start=2):
        try:
            stack = Stack(row["stack"].strip())
        except ValueError:
            raise CatalogError(msg("error.rates.value", file=spath.name, line=i, column="stack",
                                   value=row["stack"])) from None
        values: dict[str, bool] = {}
        for flag in (*flags, *optional_flags):
            cell = row[flag] if flag in flags else (row.get(flag) or "0")
            if cell.strip() not in ("0", "1"):
                raise CatalogError(msg("error.rates.value", file=spath.name, line=i, column=flag, value=cell))
            values[flag] = cell.strip() == "1"
        if row["launch"].strip() not in ("eager", "graph"):
            raise CatalogError(msg("error.rates.value", file=spath.name, line=i, column="launch", value=row["launch"]))
        if row["moe_experts"].strip() not in MOE_EXPERTS:
            raise CatalogError(msg("error.rates.value", file=spath.name, line=i, column="moe_experts",
                                   value=row["moe_experts"]))
        memory: dict[str, str] = {}
        for column, allowed in MEMORY_CHOICES.items():
            value = (row.get(column) or allowed[0]).strip()  # an older file without the column: eager behaviour
            if value not in allowed:
                raise CatalogError(msg("error.rates.value", file=spath.name, line=i, column=column, value=value))
            memory[column] = value
        saved = (row.get("swiglu_saved") or "3").strip()
        if saved not in ("1", "2", "3"):
            raise CatalogError(msg("error.rates.value", file=spath.name, line=i, column="swiglu_saved", value=saved))
        columns: dict[str, Any] = {**memory, **values}  # the flag and memory columns by their field names
        stacks[stack] = StackProfile(stack=stack, launch=row["launch"].strip(), basis=row["basis"],
                                     moe_experts=row["moe_experts"].strip(), swiglu_saved=int(saved),
                                     memory_basis=row.get("memory_basis") or "", **columns)
    missing = [s.value for s in Stack if s not in stacks]
    if missing:
        raise CatalogError(msg("error.rates.stack_missing", file=spath.name, stacks=", ".join(missing)))
    for gpu_id, device in list(devices.items()):
        steps = l2_copy_steps(gpu_id, base)
        if steps:
            devices[gpu_id] = replace(device, l2_copy=steps)
    curves = attention_curves(read_attention_rows(base / ATTENTION_CURVES_CSV))
    families = {f: AttentionCurves(p for p in curves if p.family == f) for f in {p.family for p in curves}}
    return Rates(devices, kernels, kbasis, stacks, _gemm_tiles(base / GEMM_TILES_CSV), curves, families)


class AttentionRow(NamedTuple):
    """One row of data/attention_curves.csv: a published rate of a fused attention kernel at one shape."""

    family: str
    attention_pass: str
    causal: bool
    head_dim: int
    seq_len: int
    fraction: float  # tflops / peak_tflops
    source: str
    kernel: str = FA2_KERNEL


def read_attention_rows(path: Path) -> tuple[AttentionRow, ...]:
    """The rows of attention_curves.csv at ``path`` (() when there is no such file)."""
    if not path.exists():
        return ()
    rows = []
    for i, row in enumerate(read_rows(path, ("family", "kernel", "pass", "causal", "head_dim", "seq_len", "tflops",
                                             "peak_tflops", "source")), start=2):
        for column, allowed in (("pass", ("fwd", "bwd")), ("causal", ("0", "1"))):
            if row[column].strip() not in allowed:
                raise CatalogError(msg("error.rates.value", file=path.name, line=i, column=column, value=row[column]))
        tflops = cell_number(path, i, "tflops", row["tflops"])
        peak = cell_number(path, i, "peak_tflops", row["peak_tflops"])
        if tflops > 2 * peak:  # a boosting card may beat its datasheet a little, never twice over
            raise CatalogError(msg("error.rates.value", file=path.name, line=i, column="tflops", value=row["tflops"]))
        rows.append(AttentionRow(row["family"].strip(), row["pass"].strip(), row["causal"].strip() == "1",
                                 int(cell_number(path, i, "head_dim", row["head_dim"])),
                                 int(cell_number(path, i, "seq_len", row["seq_len"])), tflops / peak,
                                 row["source"].strip(), row["kernel"].strip()))
    return tuple(rows)


def attention_curves(rows: tuple[AttentionRow, ...]) -> tuple[AttentionPoint, ...]:
    """The curves the step model reads, from the published rows (docs/kernels.md, "Fused attention by length").

    Per family, kernel, pass, mask and head dim: the shape against sequence length comes from the source that measured
    the most lengths (the sweep); its level is the mean over independent sources where several measured the same
    length (each source's own rows averaged first). A causal pass measured at one length only (or not at all:
    FlashAttention's causal backward) takes the full-matrix sweep of that pass at its own level; a pass measured at
    one length with nothing to borrow is flat. No curve beats the datasheet peak (a card that boosts beyond it is
    capped, as rates.csv caps torch.mm).
    """
    groups: dict[tuple[str, str, str, bool, int], dict[str, dict[int, list[float]]]] = {}
    for r in rows:
        groups.setdefault((r.family, r.kernel, r.attention_pass, r.causal, r.head_dim), {}).setdefault(
            r.source, {}).setdefault(r.seq_len, []).append(r.fraction)

    def sweep_of(key: tuple[str, str, str, bool, int], lengths: int) -> dict[int, float] | None:
        by_source = groups.get(key, {})
        best = max(by_source.values(), key=len, default={})
        return {s: sum(v) / len(v) for s, v in best.items()} if len(best) >= lengths else None

    points: list[AttentionPoint] = []
    for key, by_source in sorted(groups.items()):
        family, kernel, attention_pass, causal, head_dim = key
        full = (family, kernel, attention_pass, False, head_dim)
        own = sweep_of(key, 2)
        sweep = own or (sweep_of(full, 2) or sweep_of(full, 1) if causal else None)
        if sweep is None:
            own = sweep = sweep_of(key, 1)
        if sweep is None:
            continue
        ratios = []
        for seq in sorted({s for per in by_source.values() for s in per} & sweep.keys()):
            means = [sum(v) / len(v) for per in by_source.values() for s, v in per.items() if s == seq]
            if len(means) > 1 or own is None:  # a length several sources measured, or the borrowed sweep's level
                ratios.append(sum(means) / len(means) / sweep[seq])
        factor = sum(ratios) / len(ratios) if ratios else 1.0
        points.extend(AttentionPoint(family, attention_pass, causal, head_dim, seq, min(1.0, fraction * factor),
                                     kernel) for seq, fraction in sorted(sweep.items()))
    return tuple(points)


def _gemm_tiles(path: Path) -> tuple[tuple[int, int, float], ...]:
    """data/gemm_tiles.csv as (tile_m, tile_n, efficiency); a data folder without it prices GEMMs by one rate."""
    if not path.exists():
        return ()
    tiles = []
    for i, row in enumerate(read_rows(path, ("tile_m", "tile_n", "efficiency", "basis")), start=2):
        size = [cell_number(path, i, c, row[c]) for c in ("tile_m", "tile_n")]
        if not all(v.is_integer() for v in size):
            raise CatalogError(msg("error.rates.value", file=path.name, line=i, column="tile_m", value=row["tile_m"]))
        efficiency = cell_number(path, i, "efficiency", row["efficiency"])
        if efficiency > 1:
            raise CatalogError(msg("error.rates.value", file=path.name, line=i, column="efficiency",
                                   value=row["efficiency"]))
        tiles.append((int(size[0]), int(size[1]), efficiency))
    return tuple(tiles)


def load_rates(folder: str | Path | None = None) -> Rates:
    """The rate facts from ``folder`` (default: the data folder in use), cached per folder."""
    return _load(str(Path(folder) if folder is not None else data_dir()))


def with_stack_input_grads(plan: TrainPlan, rates: Rates | None = None) -> TrainPlan:
    """``plan`` with ``input_require_grads`` decided as its stack does where the plan leaves it unset
    (``TrainPlan.with_input_grads`` with stacks.csv ``embeddings_hooked``): what the estimate prices, the trial runs
    and the request states."""
    return plan.with_input_grads((rates or load_rates()).stacks[plan.stack].embeddings_hooked)


__all__ = ["ATTENTION_CURVES_CSV", "ATTENTION_KERNELS", "CUDNN_KERNEL", "TORCH_CUDNN_KERNEL", "TORCH_FLASH_KERNEL", "FA2_KERNEL", "FA3_KERNEL", "FA4_KERNEL", "NO_CURVES", "AttentionCurves", "AttentionPoint", "AttentionRow", "attention_curves", "read_attention_rows", "DTYPES", "MEMORY_CHOICES", "MOE_EXPERTS", "DeviceRates", "Rates", "StackProfile", "load_rates", "read_rows", "with_stack_input_grads"]
