"""Disk a training run needs: dataset (raw, unpacked, tokenized), base model, checkpoints, export.

A pure function: ``estimate_disk(plan, spec) -> DiskPlan``, every line in bytes with the
rule behind it, then a margin. Disk is sold in decimal GB, so the display helpers use 1e9.

Example:
    >>> plan = TrainPlan(model="llama-3.1-8b", method="lora", dataset_bytes=200 * 10**9)
    >>> disk = estimate_disk(plan, resolve(plan).spec)
    >>> disk.recommended_bytes > 200 * 10**9
    True

Limitations: one copy of each file per node (multi-node runs need it on every node, or on a shared
volume); logs, W&B/TensorBoard files and the Python environment's caches beyond
``ENVIRONMENT_BYTES`` are left to the margin; optimizer states of bitsandbytes 8-bit optimizers
are saved as they live in memory (uint8 + fp32 absmax).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
from dataclasses import dataclass
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate.memory import estimate_memory
from gpuwork.facts.spec import ModelSpec, count_params
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, Precision, Sharding, TrainPlan
from gpuwork.units import GB

# -- named constants (each with its reason) --------------------------------------------------------

# Bytes of raw text per token for English BPE tokenizers: "one token is roughly 4 characters of
# English text" (OpenAI's tokenizer guide; Llama-3/tiktoken-style vocabularies are close), and
# English text is ~1 byte per character in UTF-8. Other languages need more bytes per token.
BYTES_PER_TOKEN_TEXT = 4.0
# dataset_bytes / dataset_tokens outside this range (bytes per token) is flagged: text is 2-8 B/token
# across languages and tokenizers (4 for English BPE, more for Cyrillic/CJK in UTF-8); records with
# metadata (JSONL fields) add more. A wide band: it catches a default dataset_tokens left unchanged.
DATASET_BYTES_PER_TOKEN_PLAUSIBLE = (1.0, 40.0)
# Token ids fit uint16 when the vocabulary has fewer than 2**16 entries, else uint32 (nanoGPT's
# data/openwebtext/prepare.py writes uint16 because GPT-2's largest id 50256 < 2**16).
UINT16_VOCAB_LIMIT = 2**16
# Base model as downloaded: safetensors in bf16, ≈ 2 B/param (docs/sources.md#s-disk).
BASE_DOWNLOAD_BYTES_PER_PARAM = 2
# Pre-quantized bnb-4bit download: NF4 with double quantization = 4.127 bits per quantized weight
# (QLoRA paper §3, docs/sources.md#s-mem-qlora); embeddings, norms and lm_head stay 16-bit.
NF4_DQ_BYTES_PER_PARAM = 4.127 / 8
# PEFT saves adapters in fp32 by default (autocast_adapter_dtype=True): 4 B/param
# (docs/sources.md#s-disk: 9.18 M params -> 36.7 MB file).
ADAPTER_SAVE_BYTES_PER_PARAM = 4
# Software on the rented disk: a CUDA PyTorch container image or venv plus pip/HF caches.
# Assumption: NGC PyTorch images unpack to roughly 20 GB; a pip venv with CUDA wheels is 5-10 GB.
ENVIRONMENT_BYTES = 20 * GB
# Margin on the total: logs, temporary files while a checkpoint is written, HF datasets cache
# fragments, and files a user forgets to delete. A product assumption, shown as its own line.
DISK_MARGIN = 0.20


@dataclass(frozen=True)
class DiskLine:
    """One thing stored on disk."""

    key: str  # machine name, e.g. "checkpoints"
    label: Msg  # what it is, for people
    bytes: int
    rule: Msg  # how the number was obtained (formula and source)

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label.as_dict(), "bytes": self.bytes, "rule": self.rule.as_dict()}


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes of one training checkpoint (what ``Trainer.save_model`` + ``optimizer.pt`` write)."""

    weights_bytes: int  # model or adapter weights
    master_bytes: int  # fp32 master copy saved next to 16-bit weights (DeepSpeed ZeRO, mixed)
    optimizer_bytes: int  # optimizer states of the trainable parameters
    total_bytes: int

    def as_dict(self) -> dict[str, int]:
        return {"weights_bytes": self.weights_bytes, "master_bytes": self.master_bytes,
                "optimizer_bytes": self.optimizer_bytes, "total_bytes": self.total_bytes}


@dataclass(frozen=True)
class DiskPlan:
    """Disk needed by a plan: each line, the subtotal, the margin and the recommendation (bytes)."""

    plan: TrainPlan
    lines: tuple[DiskLine, ...]
    checkpoint: CheckpointSize
    checkpoints_on_disk: int  # checkpoints_kept + the one being written
    subtotal_bytes: int
    margin_bytes: int
    recommended_bytes: int
    notes: tuple[Msg, ...] = ()

    def line(self, key: str) -> DiskLine:
        for item in self.lines:
            if item.key == key:
                return item
        raise KeyError(key)

    def as_dict(self) -> dict[str, Any]:
        return {
            "lines": [item.as_dict() for item in self.lines],
            "checkpoint": self.checkpoint.as_dict(),
            "checkpoints_on_disk": self.checkpoints_on_disk,
            "subtotal_bytes": self.subtotal_bytes,
            "margin_bytes": self.margin_bytes,
            "margin_fraction": DISK_MARGIN,
            "recommended_bytes": self.recommended_bytes,
            "notes": [n.as_dict() for n in self.notes],
        }


def token_id_bytes(vocab_size: int) -> int:
    """Bytes per stored token id: 2 (uint16) below 65,536 entries, else 4 (uint32)."""
    return 2 if vocab_size < UINT16_VOCAB_LIMIT else 4


def dataset_text_bytes(plan: TrainPlan) -> int:
    """Raw dataset size: ``plan.dataset_bytes`` when given, else tokens x BYTES_PER_TOKEN_TEXT."""
    if plan.dataset_bytes is not None:
        return plan.dataset_bytes
    return round(plan.dataset_tokens * BYTES_PER_TOKEN_TEXT)


def _optimizer_state_bytes(plan: TrainPlan, spec: ModelSpec) -> int:
    """Optimizer states of all trainable parameters, unsharded, as the memory estimator models them
    (torch AdamW in the parameter dtype, bitsandbytes 8-bit blockwise, Adafactor factored). Cached by the plan's
    fields the states may read and the spec: a time sweep asks for the same states at many shapes."""
    return _key_state_bytes(_StatesKey(_states_fields(plan), plan), spec)


# Fields of a plan the optimizer states do not depend on: the batch shape and the run around the step.
_NOT_STATES = ("seq_len", "batch_size", "grad_accum", "grad_checkpointing", "recompute", "recompute_every",
               "attention", "sdpa_backend",
               "lengths", "packed_document_tokens", "expandable_segments", "grad_clip", "deterministic",
               "launch_blocking", "tf32",
               "input_require_grads", "dataset_tokens", "dataset_bytes",
               "epochs", "eval_fraction", "checkpoint_every_steps", "checkpoints_kept")


_states_fields = operator.attrgetter(*(f.name for f in dataclasses.fields(TrainPlan) if f.name not in _NOT_STATES))


@dataclass(frozen=True, slots=True)
class _StatesKey:
    """The plan's fields the states may read (every one but ``_NOT_STATES``), and the plan itself."""

    fields: tuple[object, ...]
    plan: TrainPlan = dataclasses.field(compare=False)  # equal to any other plan on ``fields`` for the states


@functools.lru_cache(maxsize=4096)
def _key_state_bytes(key: _StatesKey, spec: ModelSpec) -> int:
    """``_state_bytes`` of the states' plan: one lookup per estimate, without hashing a whole plan."""
    return _state_bytes(_states_plan(key), spec)


def _states_plan(key: _StatesKey) -> TrainPlan:
    """The plan on one GPU with the fields the states do not read at their defaults: the one key of their cache,
    and the plan they are computed from, so the cache cannot answer for a field it did not see."""
    defaults = _default_plan()
    return dataclasses.replace(key.plan.single_gpu(), **{f: getattr(defaults, f) for f in _NOT_STATES})


@functools.cache
def _default_plan() -> TrainPlan:
    return TrainPlan()


@functools.lru_cache(maxsize=4096)
def _state_bytes(plan: TrainPlan, spec: ModelSpec) -> int:
    est = estimate_memory(plan, spec)
    return est.breakdown.get("optimizer_states", 0) + est.breakdown.get("paged_optimizer_states", 0)


def checkpoint_size(plan: TrainPlan, spec: ModelSpec) -> CheckpointSize:
    """Bytes of one resumable checkpoint (all ranks together).

    Full/scratch/freeze: the whole model in its parameter dtype (fp32 masters when mixed: HF Trainer
    saves the parameters as they are) + the optimizer's real states; DeepSpeed ZeRO with mixed
    precision saves 16-bit weights plus fp32 masters and states (docs/sources.md#s-disk: ≈ 14 B/p with
    AdamW). Adapters: adapter (and trained head) params x 4 B (PEFT fp32) + their optimizer states. Cached like the
    optimizer states, by the plan's fields they may read and the spec (a checkpoint does not depend on the batch
    shape or the run around the step).
    """
    return _checkpoint_size(_StatesKey(_states_fields(plan), plan), spec)


@functools.lru_cache(maxsize=4096)
def _checkpoint_size(key: _StatesKey, spec: ModelSpec) -> CheckpointSize:
    plan = key.plan
    counts = count_params(spec, plan)
    optimizer = _optimizer_state_bytes(plan, spec)
    master = 0
    if plan.uses_adapters:
        weights = ADAPTER_SAVE_BYTES_PER_PARAM * counts.trainable
    elif plan.precision.is_mixed and plan.sharding in (Sharding.ZERO1, Sharding.ZERO2, Sharding.ZERO3):
        weights = 2 * counts.base  # DeepSpeed model states file: 16-bit module weights
        master = 4 * counts.trainable  # + fp32 master partitions in the optimizer states files
    else:
        weights = plan.precision.param_bytes * counts.base
    return CheckpointSize(weights, master, optimizer, weights + master + optimizer)


def checkpoint_bytes(plan: TrainPlan, spec: ModelSpec) -> int:
    """Total bytes of one checkpoint (see ``checkpoint_size``)."""
    return checkpoint_size(plan, spec).total_bytes


def _base_download(plan: TrainPlan, spec: ModelSpec, prequantized: bool) -> tuple[int, Msg]:
    counts = count_params(spec, plan)
    if plan.method is Method.SCRATCH:
        return 0, msg("disk.rule.scratch")
    if prequantized and counts.quantized:
        quant = math.ceil(counts.quantized * NF4_DQ_BYTES_PER_PARAM)
        rest = BASE_DOWNLOAD_BYTES_PER_PARAM * (counts.base - counts.quantized)
        return quant + rest, msg("disk.rule.base_prequantized", quantized=counts.quantized,
                                 others=counts.base - counts.quantized)
    return BASE_DOWNLOAD_BYTES_PER_PARAM * counts.base, msg("disk.rule.base_bf16", params=counts.base)


def estimate_disk(plan: TrainPlan, spec: ModelSpec, *, compression_ratio: float = 1.0,
                  prequantized_base: bool | None = None, merged_export: bool = False,
                  include_environment: bool = True) -> DiskPlan:
    """Disk a plan needs on the training machine, line by line, plus ``DISK_MARGIN``.

    Args:
        plan: reads model, method, precision, optimizer, sharding, dataset_tokens, dataset_bytes and
            checkpoints_kept (never epochs or the batch shape).
        spec: the model spec (``gpuwork.facts.resolve(plan).spec``).
        compression_ratio: unpacked size / downloaded size of the raw dataset. 1.0 (default) means
            ``dataset_bytes`` is already the unpacked size; gzip'd JSONL text is typically 2.5-4.
        prequantized_base: download a 4-bit pre-quantized base (bnb-4bit) instead of bf16 weights;
            None = yes for QLoRA, no otherwise.
        merged_export: adapters only: also export the base merged with the adapters (bf16).
        include_environment: count ``ENVIRONMENT_BYTES`` for the container/venv.

    Example:
        >>> estimate_disk(TrainPlan(model="qwen2.5-0.5b", method="full")).line("tokenized").rule.code
        'disk.rule.tokenized_uint32'
    """
    if isinstance(compression_ratio, bool) or not isinstance(compression_ratio, int | float) \
            or not compression_ratio >= 1:
        raise PlanError("compression_ratio", msg("error.disk.compression_ratio", value=repr(compression_ratio)))
    counts = count_params(spec, plan)
    lines: list[DiskLine] = []
    notes: list[Msg] = []

    # -- dataset ---------------------------------------------------------------------------------
    text = dataset_text_bytes(plan)
    given = plan.dataset_bytes is not None
    if compression_ratio > 1:
        if given:  # the size given is the download; unpacking multiplies it
            raw, unpacked = text, round(text * compression_ratio)
            raw_rule = msg("disk.rule.given_compressed")
        else:  # tokens give the unpacked text; the download is smaller
            raw, unpacked = round(text / compression_ratio), text
            raw_rule = msg("disk.rule.tokens_compressed", tokens=plan.dataset_tokens,
                           bytes_per_token=BYTES_PER_TOKEN_TEXT, ratio=compression_ratio)
        lines.append(DiskLine("dataset_raw", msg("disk.label.dataset_compressed"), raw, raw_rule))
        lines.append(DiskLine("dataset_unpacked", msg("disk.label.dataset_unpacked"), unpacked,
                              msg("disk.rule.unpacked", ratio=compression_ratio)))
    else:
        lines.append(DiskLine("dataset_raw", msg("disk.label.dataset_raw"), text,
                              msg("disk.rule.given") if given else
                              msg("disk.rule.tokens_text", tokens=plan.dataset_tokens,
                                  bytes_per_token=BYTES_PER_TOKEN_TEXT)))
    id_bytes = token_id_bytes(spec.vocab_size)
    rule = msg("disk.rule.tokenized_uint16" if id_bytes == 2 else "disk.rule.tokenized_uint32",
               tokens=plan.dataset_tokens, id_bytes=id_bytes, vocab=spec.vocab_size, limit=UINT16_VOCAB_LIMIT)
    lines.append(DiskLine("tokenized", msg("disk.label.tokenized"), plan.dataset_tokens * id_bytes, rule))

    # -- model -----------------------------------------------------------------------------------
    prequantized = plan.method is Method.QLORA if prequantized_base is None else prequantized_base
    base_bytes, base_rule = _base_download(plan, spec, prequantized)
    if base_bytes:
        lines.append(DiskLine("base_model", msg("disk.label.base_model"), base_bytes, base_rule))

    # -- checkpoints -----------------------------------------------------------------------------
    ckpt = checkpoint_size(plan, spec)
    on_disk = plan.checkpoints_kept + 1 if plan.checkpoints_kept > 0 else 0
    if on_disk:
        what = msg("disk.what.adapter") if plan.uses_adapters else (
            msg("disk.what.weights_masters") if ckpt.master_bytes else msg("disk.what.weights"))
        lines.append(DiskLine(
            "checkpoints", msg("disk.label.checkpoints", kept=plan.checkpoints_kept), on_disk * ckpt.total_bytes,
            msg("disk.rule.checkpoints", count=on_disk, each_bytes=ckpt.total_bytes, what=what)))

    # -- final export ----------------------------------------------------------------------------
    if plan.uses_adapters:
        export = ADAPTER_SAVE_BYTES_PER_PARAM * counts.trainable
        if merged_export:
            export += BASE_DOWNLOAD_BYTES_PER_PARAM * counts.base
            rule = msg("disk.rule.export_adapter_merged", trainable=counts.trainable, params=counts.base)
        else:
            rule = msg("disk.rule.export_adapter", trainable=counts.trainable)
    else:
        export_bytes = 4 if plan.precision is Precision.FP32 else 2
        export = export_bytes * counts.base
        rule = msg("disk.rule.export_full", params=counts.base, param_bytes=export_bytes,
                   dtype="fp32" if export_bytes == 4 else "bf16")
    lines.append(DiskLine("export", msg("disk.label.export"), export, rule))

    if include_environment:
        lines.append(DiskLine("environment", msg("disk.label.environment"), ENVIRONMENT_BYTES,
                              msg("disk.rule.environment", size_bytes=ENVIRONMENT_BYTES)))

    subtotal = sum(item.bytes for item in lines)
    margin = math.ceil(subtotal * DISK_MARGIN)
    if plan.dataset_bytes is not None:
        per_token = plan.dataset_bytes * compression_ratio / plan.dataset_tokens  # unpacked text per token
        low, high = DATASET_BYTES_PER_TOKEN_PLAUSIBLE
        if not low <= per_token <= high:
            notes.append(msg("disk.note.bytes_per_token", bytes_per_token=per_token,
                             expected=BYTES_PER_TOKEN_TEXT))
    if plan.gpus > 1:
        notes.append(msg("disk.note.multi_node"))
    return DiskPlan(plan=plan, lines=tuple(lines), checkpoint=ckpt, checkpoints_on_disk=on_disk,
                    subtotal_bytes=subtotal, margin_bytes=margin, recommended_bytes=subtotal + margin,
                    notes=tuple(notes))


__all__ = [
    "BYTES_PER_TOKEN_TEXT",
    "DISK_MARGIN",
    "ENVIRONMENT_BYTES",
    "CheckpointSize",
    "DiskLine",
    "DiskPlan",
    "checkpoint_bytes",
    "checkpoint_size",
    "dataset_text_bytes",
    "estimate_disk",
    "token_id_bytes",
]
