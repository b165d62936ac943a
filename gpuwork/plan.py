"""TrainPlan: the one description of a training run that every estimator reads.

A plan is frozen and validated on construction; change it with ``dataclasses.replace`` (or
``plan.replace(...)``). Enum fields accept their string values ("lora", "bf16-mixed", ...).

Example:
    >>> plan = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=2048, batch_size=4)
    >>> plan.replace(method="qlora").method
    <Method.QLORA: 'qlora'>
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.message import msg
from gpuwork.plan_lengths import coerce_lengths, is_packed, lengths_text
from gpuwork.units import ABOVE, BELOW, NOT_FINITE, NOT_NUMBER, Range


class Method(StrEnum):
    SCRATCH = "scratch"  # random init, every parameter trained
    FULL = "full"  # pretrained weights, every parameter trained
    FREEZE = "freeze"  # only the last `trainable_layers` blocks (+ final norm and head) trained
    LORA = "lora"  # frozen 16/32-bit base + low-rank adapters (peft)
    QLORA = "qlora"  # frozen 4-bit base (bitsandbytes) + adapters (peft)


class Precision(StrEnum):
    FP32 = "fp32"
    FP16 = "fp16"  # pure 16-bit: weights, grads and optimizer states in fp16
    BF16 = "bf16"  # pure 16-bit: weights, grads and optimizer states in bf16
    FP16_MIXED = "fp16-mixed"  # fp32 master weights, fp16 autocast compute
    BF16_MIXED = "bf16-mixed"  # fp32 master weights, bf16 autocast compute

    @property
    def is_mixed(self) -> bool:
        return self in (Precision.FP16_MIXED, Precision.BF16_MIXED)

    @property
    def compute_bytes(self) -> int:
        """Bytes per element of activations (the autocast / compute dtype)."""
        return 4 if self is Precision.FP32 else 2

    @property
    def param_bytes(self) -> int:
        """Bytes per element of trainable parameters (fp32 masters when mixed)."""
        return 2 if self in (Precision.FP16, Precision.BF16) else 4

    @property
    def torch_dtype_name(self) -> str:
        """Name of the compute dtype in torch ("float32", "bfloat16", "float16")."""
        if self is Precision.FP32:
            return "float32"
        return "bfloat16" if self in (Precision.BF16, Precision.BF16_MIXED) else "float16"


class Optimizer(StrEnum):
    ADAMW = "adamw"  # torch.optim.AdamW
    ADAMW_8BIT = "adamw-8bit"  # bitsandbytes AdamW8bit
    PAGED_ADAMW_8BIT = "paged-adamw-8bit"  # bitsandbytes PagedAdamW8bit (states in unified memory)
    ADAFACTOR = "adafactor"  # transformers Adafactor (factored second moment, no first moment)
    SGD = "sgd"  # torch.optim.SGD with momentum (one state)
    LION = "lion"  # bitsandbytes Lion (one fp32 state)


class Attention(StrEnum):
    EAGER = "eager"  # materialises the s x s score and probability matrices
    SDPA = "sdpa"  # torch scaled_dot_product_attention (flash / memory-efficient kernels)
    FLASH = "flash"  # flash-attention 2 kernels
    FLASH3 = "flash3"  # FlashAttention-3 (flash_attn_interface): Hopper (compute capability 9.0) only
    FLASH4 = "flash4"  # FlashAttention-4 (flash_attn.cute, CuTe-DSL): compute capability 9.x, 10.x, 11.x
    CUDNN = "cudnn"  # cuDNN's fused SDPA (Transformer Engine, JAX/XLA, torch's cuDNN backend): compute capability 8.0+

    @property
    def is_flash(self) -> bool:
        """A flash-attention kernel (FlashAttention-2 / 3 / 4, or cuDNN's, the FlashAttention-2 algorithm): stores
        the output and logsumexp, no s x s matrix."""
        return self in (Attention.FLASH, Attention.FLASH3, Attention.FLASH4, Attention.CUDNN)

    @property
    def capability_majors(self) -> frozenset[int] | None:
        """The NVIDIA compute capability majors the kernel builds for (None: any GPU): FlashAttention-3 Hopper only
        (flash-attention README: H100 / H800), FlashAttention-4 9.x-11.x (flash_attn/cute/interface.py asserts it),
        cuDNN's SDPA 8.0 and newer (cuDNN docs); docs/kernels.md."""
        return _CAPABILITY_MAJORS.get(self)


class SdpaBackend(StrEnum):
    """Which kernel torch's scaled_dot_product_attention runs (attention "sdpa" only; docs/attention_backends.md)."""

    # FlashAttention-2 first, the memory-efficient kernel when a mask is passed: the order of torch 2.0-2.4,
    # 2.5.1-2.10, of a build whose cuDNN is 9.15.0 or older, and of TORCH_CUDNN_SDPA_DEPRIORITIZED=1 (the default:
    # a plan states no torch release, and the published runs read here ran such releases)
    FLASH = "flash"
    # torch's own order as its releases from 2.11 ship it (with their cuDNN, newer than 9.15.0): cuDNN's attention
    # first on compute capability 9.0, 10.0 and 10.3 (H100, H200, GH200, B200, GB200, B300) unless the run is
    # deterministic or not 16-bit, FlashAttention-2 first on every other GPU
    AUTO = "auto"
    CUDNN = "cudnn"  # cuDNN's attention on any GPU of compute capability 8.0+ (sdpa_kernel(CUDNN_ATTENTION))
    EFFICIENT = "efficient"  # the memory-efficient kernel (sdpa_kernel(EFFICIENT_ATTENTION))


_CAPABILITY_MAJORS = {Attention.FLASH3: frozenset({9}), Attention.FLASH4: frozenset({9, 10, 11}),
                      Attention.CUDNN: frozenset(range(8, 100))}


class OptimizerImpl(StrEnum):
    """How torch runs the optimizer update (torch.optim ``foreach=`` / ``fused=``)."""

    FOREACH = "foreach"  # multi-tensor kernels over lists of tensors (the CUDA default)
    FUSED = "fused"  # one fused kernel per parameter group (Trainer's adamw_torch_fused)
    FOR_LOOP = "for-loop"  # one set of element-wise kernels per parameter (foreach=False)
    # a hand-written Python loop of out-of-place tensor ops per parameter, AdamW only (the CS336 staff AdamW;
    # estimate.adamw_passes): no torch.optim keyword selects it
    OUT_OF_PLACE = "out-of-place"

    @property
    def torch_kwargs(self) -> dict[str, bool]:
        """Keyword arguments of torch.optim.AdamW / SGD that select this implementation."""
        if self is OptimizerImpl.OUT_OF_PLACE:
            raise PlanError("optimizer_impl", msg("error.plan.out_of_place_trial"))
        if self is OptimizerImpl.FUSED:
            return {"fused": True}
        return {"foreach": self is OptimizerImpl.FOREACH}


class Stack(StrEnum):
    """The software that runs the step: which kernels, how many launches, what overlaps.

    What each one changes is data with sources (``gpuwork/facts/data/stacks.csv``).
    """

    HF_TRAINER = "hf-trainer"  # Hugging Face Trainer / TRL + PEFT, eager PyTorch kernels (most users)
    # the same with bitsandbytes <= 0.43.1 (QLoRA runs of 2023 to July 2024): each 4-bit matmul's input is kept
    # until backward (stacks.csv bnb_4bit_input; docs/memory_bnb_releases.md)
    HF_TRAINER_2023 = "hf-trainer-2023"
    # the same with peft 0.7.0-0.11.1 (Dec 2023 to July 2024): LoRA adapters in the 16-bit base's dtype, no casts
    # around them (stacks.csv adapters_fp32 0, adapter_weights model; docs/peft_adapter_dtype.md)
    HF_TRAINER_2024 = "hf-trainer-2024"
    # a plain loop over a transformers 4.x model (early 2024) that keeps the returned fp32 logits to the next
    # forward, with peft's adapters in the model's dtype and bitsandbytes <= 0.43.1 (Answer.AI fsdp_qlora, [M8])
    HF_LOOP_2024 = "hf-loop-2024"
    HF_LIGER = "hf-liger"  # the same with Liger kernels (fused RMSNorm, RoPE, SwiGLU, linear cross-entropy)
    TORCH_COMPILE = "torch-compile"  # the same with torch.compile (fused element-wise ops)
    UNSLOTH = "unsloth"  # Unsloth: hand-written Triton kernels, fused LoRA, own checkpointing
    # older Unsloth releases, whose model hands the full logits back to the Trainer (stacks.csv inplace-returned):
    # 2023.12-2024.3 keep each checkpointed block input on the GPU, 2024.4-2024.11.7 offload it as "unsloth" does
    UNSLOTH_2023_12 = "unsloth-2023-12"
    UNSLOTH_2024_04 = "unsloth-2024-04"
    TORCHTUNE = "torchtune"  # torchtune recipes with compile: native PyTorch modules, adapters in the model dtype
    FRAMEWORK = "framework"  # tuned pre-training frameworks (torchtitan, llm-foundry, Megatron, NeMo)
    # NVIDIA DeepLearningExamples BERT fine-tuning in eager PyTorch under apex amp O2 (docs/legacy_stacks.md)
    DLE_PYTORCH = "dle-pytorch"
    # Lit-GPT of late 2023 (commit 8641822, Lightning 2.1): its own GPT modules under Fabric (memory_misses_litgpt.md)
    LITGPT_2023 = "litgpt-2023"
    # a plain PyTorch training loop (own model code, F.cross_entropy on the logits' own dtype [M7]), eager or with
    # torch.compile(model) and the loss outside it
    TORCH_LOOP = "torch-loop"
    TORCH_LOOP_COMPILE = "torch-loop-compile"


# Unsloth of any release: its own model patching and PEFT wrapper
UNSLOTH_STACKS = frozenset({Stack.UNSLOTH, Stack.UNSLOTH_2023_12, Stack.UNSLOTH_2024_04})


class Sharding(StrEnum):
    DDP = "ddp"  # every GPU holds a full replica
    ZERO1 = "zero1"  # optimizer states sharded
    ZERO2 = "zero2"  # + gradients sharded
    ZERO3 = "zero3"  # + parameters sharded
    FSDP = "fsdp"  # PyTorch FSDP full shard (memory like ZeRO-3)
    HSDP = "hsdp"  # FSDP inside a shard group (TrainPlan.shard_group_gpus, one node), replicated across groups
    # PyTorch _HYBRID_SHARD_ZERO2: inside the group gradients and optimizer states sharded, parameters kept
    # gathered from forward to the end of backward (SHARD_GRAD_OP), replicated across groups
    # (docs/sources.md#s-mem-hsdp-zero2)
    HSDP_ZERO2 = "hsdp-zero2"

    @property
    def shards_params(self) -> bool:
        return self in (Sharding.ZERO3, Sharding.FSDP, Sharding.HSDP)

    @property
    def hybrid(self) -> bool:
        """Sharded inside shard groups, replicated across them (PyTorch HYBRID_SHARD, _HYBRID_SHARD_ZERO2)."""
        return self in (Sharding.HSDP, Sharding.HSDP_ZERO2)

    @property
    def per_unit(self) -> bool:
        """Parameters gathered and gradients reduce-scattered unit by unit (decoder block) in the step: ZeRO-3
        and the FSDP shardings (DeepSpeed ZeRO-1/2 reduce and gather in buckets around the step instead)."""
        return self.shards_params or self is Sharding.HSDP_ZERO2

    @property
    def shards_optimizer(self) -> bool:
        return self is not Sharding.DDP

    @property
    def shards_gradients(self) -> bool:
        return self in (Sharding.ZERO2, Sharding.ZERO3, Sharding.FSDP, Sharding.HSDP, Sharding.HSDP_ZERO2)


# torch FSDP's shardings (FullyShardedDataParallel / fully_shard); ZeRO-3 is DeepSpeed's
TORCH_FSDP_SHARDINGS = frozenset({Sharding.FSDP, Sharding.HSDP, Sharding.HSDP_ZERO2})

# The default shard group of the hybrid shardings: the GPUs of one HGX/DGX-style node, whose NVLink fabric carries
# the gathers and reduce-scatters (PyTorch HYBRID_SHARD: "FULL_SHARD within a node"); fewer GPUs are one group.
HSDP_GROUP_GPUS = 8


def shard_ranks(sharding: Sharding, gpus: int, group: int = HSDP_GROUP_GPUS) -> int:
    """GPUs one copy of the sharded model states is divided over: all of them (ZeRO, FSDP), one shard group of
    ``group`` GPUs (the hybrid shardings; all of them when fewer), none (DDP: 1)."""
    if sharding is Sharding.DDP:
        return 1
    return min(gpus, group) if sharding.hybrid else gpus


class CommOverlap(StrEnum):
    """When DDP / ZeRO-1/2 gradients are reduced and ZeRO-1/2 parameters gathered (docs/communication.md 'Overlap
    switches'); the per-unit shardings (ZeRO-3, FSDP, HSDP) always prefetch, so they take only the default."""

    DEFAULT = "default"  # each sharding as its usual library runs it: torch DDP buckets, DeepSpeed overlap_comm off
    OFF = "off"  # one collective after backward (and the gather after the step): Megatron-LM's default
    ON = "on"  # Megatron-LM --overlap-grad-reduce (+ --overlap-param-gather): buckets behind backward / forward


class ZeroSync(StrEnum):
    """How ZeRO-1 reduces the gradients and gathers the updated parameters (docs/communication.md 'Sliced ZeRO-1')."""

    BUCKETS = "buckets"  # DeepSpeed: reduce-scatter and all-gather in buckets of 5e8 elements (comm_overlap rules)
    # nanotron's ZeroDistributedOptimizer: every tensor sliced over the ranks, the whole gradient buffer all-reduced
    # after backward, the updated slices all-gathered and copied back one eager copy per tensor per rank
    SLICED = "sliced"


class FsdpWrap(StrEnum):
    """How torch FSDP splits the model into units (docs/communication.md 'One unit for the whole model')."""

    BLOCKS = "blocks"  # one unit per decoder block plus the root (transformer auto-wrap: accelerate, torchtitan)
    WHOLE = "whole"  # the root unit only: no auto-wrap policy, or one no block reaches (size-based, 100 M default)


class Recompute(StrEnum):
    """What gradient checkpointing re-runs in backward (grad_checkpointing on; docs/recompute.md)."""

    BLOCK = "block"  # each block's whole forward (HF per-layer checkpointing, torchtitan / torchtune mode "full")
    # torchtitan's op-level selective checkpointing (mode "selective", selective_ac_option "op"): a block keeps the
    # outputs of its SDPA kernel and of every second torch.mm it calls, and recomputes everything else
    OPS = "ops"
    # the compute-intensive policy of torch's selective checkpointing examples (PyTorch blog, 2025): a block keeps
    # the output of every mm, addmm and bmm and of its SDPA kernel, and recomputes everything else
    MATMULS = "matmuls"


class Task(StrEnum):
    AUTO = "auto"  # from the config's `architectures` (causal LM unless it names another head)
    CAUSAL_LM = "causal-lm"  # next-token prediction over the whole vocabulary
    SEQ_CLS = "seq-cls"  # sequence classification head (2 labels)
    MASKED_LM = "masked-lm"  # encoder masked-LM head (BERT-style pre-training)


class EvalKeep(StrEnum):
    """What the HF Trainer's evaluation loop keeps on the GPU per evaluation batch until the evaluation ends (or
    until ``eval_accum`` batches, when set): transformers Trainer.evaluation_loop / prediction_step."""

    LOSS = "loss"  # prediction_loss_only (no compute_metrics): only the loss per sample
    LOGITS = "logits"  # the model's logits as returned, and the labels
    IDS = "ids"  # preprocess_logits_for_metrics reduces the logits to token ids (argmax, int64), and the labels


class QuantType(StrEnum):
    NF4 = "nf4"
    FP4 = "fp4"


ALL_LINEAR = "all-linear"

_ENUM_FIELDS: dict[str, type[StrEnum]] = {
    "method": Method,
    "precision": Precision,
    "optimizer": Optimizer,
    "attention": Attention,
    "sharding": Sharding,
    "optimizer_impl": OptimizerImpl,
    "stack": Stack,
    "quant_type": QuantType,
    "task": Task,
    "eval_keep": EvalKeep,
    "comm_overlap": CommOverlap,
    "fsdp_wrap": FsdpWrap,
    "recompute": Recompute,
    "zero_sync": ZeroSync,
    "sdpa_backend": SdpaBackend,
}
# Every number of a plan has a range with both ends (gpuwork.units.Range, the one range mechanism of plans, flags
# and records). The upper ends are physical: beyond them a value is a typo, not a run (and the estimate would print
# nonsense such as 303,576 GiB or "0.0 h"); the catalog entry bound.<name> says why. The lower ends of the float
# fields lie above zero where 1e-300 would be a typo (1e-300 epochs, a LoRA alpha of 1e-300).
MAX_SEQ_LEN = 2**24  # 16.8 M tokens: above any model's context window (the longest are ~10 M)
MAX_GPUS = 65_536  # the largest training clusters
MAX_WEIGHT_DECAY = 1000.0  # decoupled decay multiplies the weights by 1 - lr * wd: beyond it, a typo
PLAN_RANGES: dict[str, Range] = {  # in the order they are checked
    "seq_len": Range(1, MAX_SEQ_LEN, whole=True),
    "batch_size": Range(1, 2**20, whole=True),
    "grad_accum": Range(1, 2**20, whole=True),
    "gpus": Range(1, MAX_GPUS, whole=True),
    "shard_group_gpus": Range(1, MAX_GPUS, whole=True),
    "checkpoint_every_steps": Range(1, 10**9, whole=True),
    "trainable_layers": Range(1, 10_000, whole=True),
    "recompute_every": Range(1, 10_000, whole=True),
    "checkpoints_kept": Range(0, 10_000, whole=True),
    "dataset_tokens": Range(1, 10**15, whole=True),  # a quadrillion; the largest pre-training sets are ~4e13
    "dataset_bytes": Range(1, 10**18, whole=True),  # an exabyte; None: derived from the tokens
    "lora_r": Range(1, 65_536, whole=True),  # its lower end for LoRA and QLoRA only
    "lora_alpha": Range(1e-3, 1_000_000),
    "lora_dropout": Range(0, 1, high_open=True),
    "epochs": Range(1e-4, 10_000),
    "eval_fraction": Range(0, 1, high_open=True),
    "eval_batch_size": Range(1, 2**20, whole=True),  # None: no in-run evaluation priced
    "eval_samples": Range(1, 10**9, whole=True),  # None: one evaluation batch
    "eval_accum": Range(1, 10**9, whole=True),  # None: predictions stay on the GPU to the evaluation's end
    "mlm_predictions": Range(1, MAX_SEQ_LEN, whole=True),  # None: the masked-LM head on every position
    "packed_document_tokens": Range(1, MAX_SEQ_LEN, whole=True),  # None: attention across the whole packed row
    "weight_decay": Range(0, MAX_WEIGHT_DECAY),  # None: the stack's default (torch.optim refuses a negative one)
}
# the ranged fields that may also be None (the share link reads "none" for them)
OPTIONAL_FIELDS = ("dataset_bytes", "eval_batch_size", "eval_samples", "eval_accum", "mlm_predictions",
                   "packed_document_tokens", "weight_decay")
# the switches that may also be None: the plan's stack decides them (the share link reads "none" for them)
OPTIONAL_BOOLS = ("input_require_grads",)
# (field, low, high, low_open, high_open, whole) of each range, for the plain plan's quick pass
_BOUNDS = tuple((name, r.low, r.high, r.low_open, r.high_open, r.whole) for name, r in PLAN_RANGES.items())
_OWN_ABOVE = {"lora_dropout": "error.plan.lora_dropout", "eval_fraction": "error.plan.eval_fraction"}  # below 1
# fields whose every problem (not a number, not finite, below, above) has the field's own message, given the value
# and the range's upper end: where the fix is not only the range (weight_decay: leave it unset for the default)
_OWN_MESSAGE = {"weight_decay": "error.plan.weight_decay"}
UPPER_BOUNDS: dict[str, float] = {name: r.high for name, r in PLAN_RANGES.items() if name not in _OWN_ABOVE}
LOWER_BOUNDS: dict[str, float] = {name: PLAN_RANGES[name].low for name in ("lora_alpha", "epochs")}
# bound.<name> in the catalog, where it is not the field's own name
_BOUND_WHY = {"trainable_layers": "layers", "recompute_every": "layers", "shard_group_gpus": "gpus"}


@dataclass(frozen=True)
class TrainPlan:
    """One training run, as the user describes it. Every estimator takes exactly this.

    Sizes are counts (tokens, sequences, GPUs); bytes only where the name says so.
    Fields read by memory estimation: everything above ``dataset_tokens``.
    Fields below it (data and schedule) are read only by time, disk and cost estimates.
    """

    model: str = "llama-3.2-1b"  # preset name, path to config.json / model folder, or hub id
    method: Method = Method.LORA
    task: Task = Task.AUTO  # which head is trained; "auto" reads the config
    precision: Precision = Precision.BF16
    optimizer: Optimizer = Optimizer.ADAMW
    seq_len: int = 2048  # tokens per sequence (packed or padded)
    batch_size: int = 1  # micro-batch: sequences per GPU per forward/backward
    grad_accum: int = 1  # micro-batches per optimizer step
    grad_checkpointing: bool = False  # recompute each decoder layer in backward (HF per-layer)
    recompute: Recompute = Recompute.BLOCK  # what checkpointing re-runs: the whole block, or the op policy's share
    # checkpointing on one block in n: blocks 0, n, 2n, ... (transformers 5's every_n_layers, the Trainer's
    # gradient_checkpointing_kwargs); the others keep their activations. 1: every block
    recompute_every: int = 1
    attention: Attention = Attention.SDPA
    # attention "sdpa": the kernel torch's dispatch runs ("flash": FlashAttention-2 first, torch before 2.11 or a
    # cuDNN of 9.15.0 or older; "auto": torch 2.11 on, cuDNN's on Hopper and datacenter Blackwell;
    # docs/attention_backends.md). Time only; no memory
    sdpa_backend: SdpaBackend = SdpaBackend.FLASH
    trainable_layers: int = 2  # method="freeze": how many of the last blocks are trained
    # the embeddings' output requires grad (transformers' enable_input_require_grads, which reentrant gradient
    # checkpointing needs for a block whose input would otherwise carry no gradient): under method "freeze" the
    # backward then runs through every frozen block too (their recompute and input gradients, no weight
    # gradient), as LLaMA-Factory 0.5-0.6.2 ran freeze-tuning with checkpointing (docs/time_misses.md). The other
    # methods already send the gradient through every block. None: as the stack does (stacks.csv
    # embeddings_hooked: transformers 5 hooks the embeddings whenever checkpointing is on, ``with_input_grads``).
    # The time estimate's step ops and the memory estimate's saved activations read it
    input_require_grads: bool | None = None
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0  # > 0 keeps a dropped copy of each adapter input
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")  # module names, or ("all-linear",)
    quant_type: QuantType = QuantType.NF4  # method="qlora": 4-bit format
    double_quant: bool = True  # method="qlora": quantize the absmax constants too
    # method="qlora": peft's prepare_model_for_kbit_training fp32 upcast of the non-quantised parameters
    # (embeddings, norms, lm_head) is kept; False: the framework skips it or casts them back to 16 bit
    kbit_upcast: bool = True
    gpus: int = 1  # data-parallel ranks
    sharding: Sharding = Sharding.DDP
    shard_group_gpus: int = HSDP_GROUP_GPUS  # hsdp, hsdp-zero2: GPUs of one shard group (one node); divides gpus
    offload_optimizer: bool = False  # optimizer states (and step) on CPU
    offload_params: bool = False  # parameters on CPU between uses (ZeRO-3 / FSDP only)
    optimizer_impl: OptimizerImpl = OptimizerImpl.FOREACH  # torch optimizer kernels
    stack: Stack = Stack.HF_TRAINER  # the software that runs the step (kernels, launches, overlap)
    # sequence lengths of the data: "fixed" (every batch seq_len tokens), "packed" (rows packed to seq_len),
    # "padded" (every row padded to seq_len, padding='max_length': the attention mask marks the padding), or a
    # histogram ((length, weight), ...) padded per micro-batch to its longest; longer ones are cut to seq_len
    lengths: str | tuple[tuple[int, float], ...] = "fixed"
    # lengths="packed" with attention kept inside each packed document (flash-attn varlen, cu_seqlens): the
    # documents' mean tokens; None: one causal attention over the whole row (docs/packed_documents.md)
    packed_document_tokens: int | None = None
    expandable_segments: bool = False  # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    # in-run evaluation (HF Trainer evaluate between steps; gpuwork.estimate.eval_memory): its micro-batch
    # (per_device_eval_batch_size; None: no evaluation priced), its samples (None: one batch), what it keeps on
    # the GPU per batch, and eval_accumulation_steps (None: kept until the evaluation ends)
    eval_batch_size: int | None = None
    eval_samples: int | None = None
    eval_keep: EvalKeep = EvalKeep.LOSS
    eval_accum: int | None = None
    # masked-LM pre-training that runs its head only on the masked positions (max_predictions_per_seq of BERT's
    # scripts): positions per sequence, at most seq_len; None: on every position (transformers' BertForMaskedLM)
    mlm_predictions: int | None = None
    # clip_grad_norm_ before each update (HF Trainer's max_grad_norm 1.0); False: the run never clips (torchtune's
    # clip_grad_norm unset, max_grad_norm 0, a loop without the call). A step op (the time estimate); no memory
    grad_clip: bool = True
    # torch FSDP's units (fsdp, hsdp, hsdp-zero2 only): one per block, or the whole model as the root unit
    fsdp_wrap: FsdpWrap = FsdpWrap.BLOCKS
    # torch.use_deterministic_algorithms(True) (HF full_determinism): torch fills each natively allocated tensor
    # with NaN first (fill_uninitialized_memory); a step op (estimate.deterministic); no memory
    deterministic: bool = False
    # CUDA_LAUNCH_BLOCKING=1 in the run's environment (set before CUDA starts): each kernel launch returns only once
    # the kernel has run, so the host's dispatch adds to the GPU's time and no collective hides behind compute
    # (estimate.steptime, estimate.comm); no memory
    launch_blocking: bool = False
    # TF32 tensor-core matmuls for fp32 tensors (torch.backends.cuda.matmul.allow_tf32 = True,
    # torch.set_float32_matmul_precision("high"), HF TrainingArguments(tf32=True)): every GEMM and bmm whose operands
    # are fp32 runs on the tensor cores at the TF32 peak (estimate.steptime, docs/gemm_tf32.md). It changes nothing
    # else: 16-bit GEMMs (autocast regions, bf16 / fp16 plans) and the memory-efficient SDPA kernel (tensor cores
    # in fp32 whatever the flag) are priced as before; a GPU without TF32 (gpus.csv tf32_dense_tflops empty) runs
    # FP32 as without it. No memory
    tf32: bool = False
    # the blocks' linear layers run their three GEMMs (forward, input gradient, weight gradient) in FP8 with per-tensor
    # scales (NVIDIA Transformer Engine's te.Linear under fp8_autocast, Accelerate's mixed_precision "fp8", torchao's
    # float8 training): each linear casts its input, its weight and its output gradient to FP8 (one cast-transpose
    # kernel each) and saves its FP8 input for the weight gradient; the head and the attention core stay 16-bit
    # (docs/fp8.md). Full, freeze and from-scratch runs on a 16-bit compute dtype; a GPU without FP8 tensor cores
    # (gpus.csv fp8_dense_tflops empty) cannot run it (a warning; priced as 16-bit linears)
    fp8_linear: bool = False
    # the optimizer's weight decay; None: the stack's default (``weight_decay_in_effect``, ``STACK_WEIGHT_DECAY``).
    # torch AdamW's decoupled decay (``if weight_decay != 0``) runs one more pass over the weights (estimate.
    # optimizer_ops); a fused kernel folds it in. A step op (the time estimate); no memory
    weight_decay: float | None = None
    # --- data and schedule: never read by the memory estimator ---
    dataset_tokens: int = 100_000_000  # tokens in one epoch of the training set
    dataset_bytes: int | None = None  # raw dataset size on disk; None = derived from tokens
    epochs: float = 1.0
    eval_fraction: float = 0.05  # share of training time spent on validation
    checkpoint_every_steps: int = 500  # optimizer steps between checkpoints
    checkpoints_kept: int = 2  # checkpoints kept on disk at once
    # when gradients are reduced and ZeRO-1/2 parameters gathered (ddp, zero1, zero2 only; read by estimate.comm)
    comm_overlap: CommOverlap = CommOverlap.DEFAULT
    # how ZeRO-1 syncs gradients and parameters (zero1 only; read by estimate.comm)
    zero_sync: ZeroSync = ZeroSync.BUCKETS

    def __post_init__(self) -> None:
        for name, enum in _ENUM_FIELDS.items():
            if type(value := getattr(self, name)) is not enum:  # already a member: nothing to coerce
                object.__setattr__(self, name, _coerce_enum(name, value, enum))
        object.__setattr__(self, "lora_targets", _coerce_targets(self.lora_targets))
        if not isinstance(self.model, str) or not self.model.strip():
            raise PlanError("model", msg("error.plan.model", value=repr(self.model)))
        object.__setattr__(self, "model", self.model.strip())
        for name in ("grad_checkpointing", "double_quant", "kbit_upcast", "offload_optimizer", "offload_params",
                     "expandable_segments", "grad_clip", "deterministic", "launch_blocking", "tf32", "fp8_linear",
                     "input_require_grads"):
            value = getattr(self, name)
            if not isinstance(value, bool) and not (value is None and name in OPTIONAL_BOOLS):
                raise PlanError(name, msg("error.plan.bool", field=name, value=repr(value)))
        self._check_numbers()
        if self.weight_decay is not None:  # in its range (PLAN_RANGES); an int is the same decay as a float
            object.__setattr__(self, "weight_decay", float(self.weight_decay))
        object.__setattr__(self, "lengths", coerce_lengths(self.lengths, self.seq_len))
        self._check_combinations()

    # -- validation ---------------------------------------------------------------------------

    def _check_numbers(self) -> None:
        """Each number in its range (PLAN_RANGES): types and lower ends first, then the upper ends, then
        eval_fraction; the first field out of range is named."""
        if self._numbers_plainly_valid():  # nearly every plan: no problem to name
            return
        # each field judged once (every plan copy is validated: a time sweep builds thousands)
        problems = {name: bounds.problem(getattr(self, name)) for name, bounds in PLAN_RANGES.items()}
        skipped = {"eval_fraction"} | {name for name in OPTIONAL_FIELDS if getattr(self, name) is None}
        if self.method not in (Method.LORA, Method.QLORA):
            skipped.add("lora_r")
        for name, problem in problems.items():
            if name not in skipped and problem is not None and (problem != ABOVE or name in _OWN_ABOVE):
                raise _out_of_range(name, getattr(self, name), PLAN_RANGES[name], problem)
        for name, problem in problems.items():
            if name not in _OWN_ABOVE and problem == ABOVE:
                raise _out_of_range(name, getattr(self, name), PLAN_RANGES[name], ABOVE)
        if problems["eval_fraction"] is not None:
            raise _out_of_range("eval_fraction", self.eval_fraction, PLAN_RANGES["eval_fraction"],
                                problems["eval_fraction"])

    @property
    def weight_decay_in_effect(self) -> float:
        """The weight decay the run's optimizer applies: ``weight_decay``, else the stack's default for the plan's
        optimizer (``STACK_WEIGHT_DECAY``)."""
        if self.weight_decay is not None:
            return self.weight_decay
        return stack_weight_decay(self.stack, self.optimizer)

    def _numbers_plainly_valid(self) -> bool:
        """Whether every number is an int, or a finite float where fractions are allowed, inside its range
        (None where a field allows it): what ``_check_numbers`` would pass, found without judging each problem."""
        for name, low, high, low_open, high_open, whole in _BOUNDS:
            kind = type(value := getattr(self, name))
            if kind is not int and (kind is not float or whole or not math.isfinite(value)):
                if value is None and name in OPTIONAL_FIELDS:
                    continue
                return False
            if not low < value < high and (value < low or value > high or (low_open and value == low)
                                           or (high_open and value == high)):
                return False
        return True

    def _check_combinations(self) -> None:
        if self.sharding is not Sharding.DDP and self.gpus < 2:
            raise PlanError("sharding", msg("error.plan.sharding_needs_gpus", sharding=self.sharding.value))
        if self.sharding.hybrid and self.gpus % self.shard_ranks:
            # equal shard groups: every GPU holds the same share, every replica ring has one GPU per group
            raise PlanError("shard_group_gpus", msg(
                "error.plan.shard_group", group=self.shard_group_gpus, gpus=self.gpus, sharding=self.sharding.value,
                divisors=", ".join(str(d) for d in even_groups(self.gpus)[:8])))
        if self.offload_params and not self.sharding.shards_params:
            raise PlanError("offload_params", msg("error.plan.offload_params"))
        if self.offload_optimizer and self.sharding is Sharding.DDP:
            raise PlanError("offload_optimizer", msg("error.plan.offload_optimizer"))
        if self.optimizer_impl is OptimizerImpl.OUT_OF_PLACE and self.optimizer is not Optimizer.ADAMW:
            raise PlanError("optimizer_impl", msg("error.plan.out_of_place_optimizer", optimizer=self.optimizer.value))
        if self.packed_document_tokens is not None:
            self._check_documents(self.packed_document_tokens)
        if self.comm_overlap is not CommOverlap.DEFAULT and self.sharding.per_unit:
            raise PlanError("comm_overlap", msg("error.plan.comm_overlap_sharding", value=self.comm_overlap.value,
                                                sharding=self.sharding.value))
        if self.zero_sync is not ZeroSync.BUCKETS and (self.sharding is not Sharding.ZERO1
                                                        or self.comm_overlap is not CommOverlap.DEFAULT):
            raise PlanError("zero_sync", msg("error.plan.zero_sync_sharding", value=self.zero_sync.value,
                                             sharding=self.sharding.value, overlap=self.comm_overlap.value))
        if self.sdpa_backend is not SdpaBackend.FLASH and self.attention is not Attention.SDPA:
            raise PlanError("sdpa_backend", msg("error.plan.sdpa_backend_attention", value=self.sdpa_backend.value,
                                                attention=self.attention.value))
        if self.recompute is not Recompute.BLOCK and not self.grad_checkpointing:
            raise PlanError("recompute", msg("error.plan.recompute_needs_checkpointing", value=self.recompute.value))
        if self.recompute_every > 1 and not self.grad_checkpointing:
            raise PlanError("recompute_every", msg("error.plan.recompute_every_needs_checkpointing",
                                                   value=self.recompute_every))
        if self.recompute_every > 1 and self.stack in UNSLOTH_STACKS:
            raise PlanError("recompute_every", msg("error.plan.recompute_every_unsloth", value=self.recompute_every,
                                                   stack=self.stack.value))
        if self.recompute_every > 1 and self.method is Method.FREEZE:
            raise PlanError("recompute_every", msg("error.plan.recompute_every_freeze", value=self.recompute_every))
        if self.recompute is not Recompute.BLOCK and self.stack in UNSLOTH_STACKS:
            raise PlanError("recompute", msg("error.plan.recompute_unsloth", value=self.recompute.value,
                                             stack=self.stack.value))
        if self.fp8_linear and self.uses_adapters:
            raise PlanError("fp8_linear", msg("error.plan.fp8_adapters", method=self.method.value))
        if self.fp8_linear and self.precision is Precision.FP32:
            raise PlanError("fp8_linear", msg("error.plan.fp8_fp32"))
        if self.fsdp_wrap is not FsdpWrap.BLOCKS and self.sharding not in TORCH_FSDP_SHARDINGS:
            raise PlanError("fsdp_wrap", msg("error.plan.fsdp_wrap_sharding", value=self.fsdp_wrap.value,
                                             sharding=self.sharding.value))

    @property
    def whole_fsdp_unit(self) -> bool:
        """Torch FSDP with the whole model as its one (root) unit: gathered once, reduce-scattered once."""
        return self.fsdp_wrap is FsdpWrap.WHOLE  # validation allows 'whole' with torch FSDP only

    def _check_documents(self, tokens: int) -> None:
        """Per-document attention: packed rows, documents no longer than a row, a kernel that takes their
        boundaries (eager and SDPA compute the whole row's matrix under a block mask)."""
        if self.lengths != "packed":
            raise PlanError("packed_document_tokens", msg("error.plan.documents_need_packed", lengths=lengths_text(
                self.lengths)))
        if tokens > self.seq_len:
            raise PlanError("packed_document_tokens", msg("error.plan.documents_longer", value=tokens,
                                                          seq_len=self.seq_len))
        if not self.attention.is_flash:
            raise PlanError("packed_document_tokens", msg("error.plan.documents_attention",
                                                          attention=self.attention.value))

    # -- conveniences ---------------------------------------------------------------------------

    @property
    def uses_adapters(self) -> bool:
        return self.method in (Method.LORA, Method.QLORA)

    @property
    def shard_ranks(self) -> int:
        """GPUs the sharded model states are divided over (module function shard_ranks)."""
        return shard_ranks(self.sharding, self.gpus, self.shard_group_gpus)

    @property
    def shard_groups(self) -> int:
        """Copies of the model states across the GPUs: the hybrid shardings' replica groups, else 1 (DDP: gpus)."""
        return self.gpus // self.shard_ranks

    @property
    def several_shard_groups(self) -> bool:
        """A hybrid sharding over more than one shard group, whose size is then what divides the model states
        (one group of every GPU is plain FSDP): the sharding is shown with its group."""
        return self.sharding.hybrid and self.shard_groups > 1

    @property
    def fp32_master_weights(self) -> bool:
        """The optimizer keeps fp32 master weights (and fp32 states) of the 16-bit trained weights.

        DeepSpeed's ZeRO optimizers do for every stage in bf16/fp16 mode (ZeRO paper §3.1: 2 + 2 + 12 bytes per
        parameter for mixed-precision Adam); torch optimizers (DDP, FSDP) update the weights in their own dtype.
        """
        return (self.sharding in (Sharding.ZERO1, Sharding.ZERO2, Sharding.ZERO3)
                and self.precision in (Precision.BF16, Precision.FP16) and not self.uses_adapters)

    @property
    def length_histogram(self) -> tuple[tuple[int, float], ...] | None:
        """The lengths as a histogram, or None when every batch has ``seq_len`` tokens (fixed, packed, padded)."""
        return self.lengths if isinstance(self.lengths, tuple) else None

    @property
    def attention_span(self) -> int:
        """Tokens one attention runs over: a packed document (``packed_document_tokens``), else the sequence."""
        return self.packed_document_tokens or self.seq_len

    @property
    def longest_batch_len(self) -> int:
        """Tokens per sequence of the longest micro-batch: the histogram's longest length, else ``seq_len``."""
        hist = self.length_histogram
        return hist[-1][0] if hist else self.seq_len

    @property
    def tokens_per_micro_batch(self) -> int:
        return self.seq_len * self.batch_size

    def trained_blocks(self, layers: int) -> int:
        """Blocks whose own weights get a gradient: the last ``trainable_layers`` under freeze, none under
        adapters, else all ``layers``."""
        if self.method is Method.FREEZE:
            return min(self.trainable_layers, layers)
        return 0 if self.uses_adapters else layers

    def with_input_grads(self, embeddings_hooked: bool) -> TrainPlan:
        """This plan with ``input_require_grads`` decided where it matters (method "freeze"): as set, or else as the
        stack does (its checkpointing hooks the embeddings' output, ``embeddings_hooked``: on when gradient
        checkpointing is). Other methods send the gradient through every block anyway: the plan as it is (no new
        validated plan in the estimators' hot path)."""
        if self.input_require_grads is not None or self.method is not Method.FREEZE:
            return self
        return self.replace(input_require_grads=embeddings_hooked and self.grad_checkpointing)

    def gradient_blocks(self, layers: int) -> int:
        """Blocks the backward runs through (their recompute under checkpointing and their input gradients): every
        one, but under freeze only the trained top blocks, where autograd stops unless the embeddings' output
        requires grad (``input_require_grads``; unset reads as off: ``with_input_grads`` decides it first)."""
        if self.method is Method.FREEZE and not self.input_require_grads:
            return min(self.trainable_layers, layers)
        return layers

    def checkpointed_blocks(self, layers: int) -> int:
        """Blocks whose forward runs again in backward: none without checkpointing, else one in ``recompute_every``
        of the blocks the backward runs through (transformers counts from block 0: 0, n, 2n, ...)."""
        if not self.grad_checkpointing:
            return 0
        blocks = self.gradient_blocks(layers)
        if self.recompute_every == 1:
            return blocks
        return sum(1 for i in range(layers - blocks, layers) if i % self.recompute_every == 0)

    def blocks_above_last_checkpointed(self, layers: int) -> int:
        """Blocks above the topmost checkpointed one (0 under every-block checkpointing): the backward reaches and
        frees them before the first recompute."""
        if not self.grad_checkpointing or self.recompute_every == 1:
            return 0
        return (layers - 1) % self.recompute_every

    @property
    def tokens_per_step(self) -> int:
        """Tokens consumed by one optimizer step across all GPUs."""
        return self.seq_len * self.batch_size * self.grad_accum * self.gpus

    def replace(self, **changes: Any) -> TrainPlan:
        """A copy with some fields changed (validated like a new plan). Packed documents that ``changes`` leave
        unsaid follow the new row: cut to a shorter seq_len (a document no longer than its row), dropped without
        packed rows or a kernel that takes their boundaries (a sweep over seq_len or attention stays valid)."""
        if self.packed_document_tokens is not None and "packed_document_tokens" not in changes:
            changes["packed_document_tokens"] = _documents_after(self.packed_document_tokens, {
                "seq_len": self.seq_len, "lengths": self.lengths, "attention": self.attention.value, **changes})
        if self.comm_overlap is not CommOverlap.DEFAULT and "comm_overlap" not in changes \
                and "sharding" in changes and _per_unit(changes["sharding"]):
            changes["comm_overlap"] = CommOverlap.DEFAULT  # a sweep into ZeRO-3 / FSDP: their own prefetch
        if self.fsdp_wrap is not FsdpWrap.BLOCKS and "fsdp_wrap" not in changes and "sharding" in changes \
                and not _torch_fsdp(changes["sharding"]):
            changes["fsdp_wrap"] = FsdpWrap.BLOCKS  # a sweep out of torch FSDP: no units to wrap
        if self.zero_sync is not ZeroSync.BUCKETS and "zero_sync" not in changes and "sharding" in changes \
                and _sharding(changes["sharding"]) is not Sharding.ZERO1:
            changes["zero_sync"] = ZeroSync.BUCKETS  # a sweep out of ZeRO-1: the library's own sync
        if self.sdpa_backend is not SdpaBackend.FLASH and "sdpa_backend" not in changes and "attention" in changes \
                and str(changes["attention"]).strip().lower() != Attention.SDPA.value:
            changes["sdpa_backend"] = SdpaBackend.FLASH  # a sweep out of SDPA: no torch dispatch to choose
        # a sweep without checkpointing, or into Unsloth's own, drops what checkpointing recomputes; into freeze, the
        # one-in-n choice too
        plain = changes.get("grad_checkpointing", True) is False or (
            "stack" in changes and str(changes["stack"]).strip().lower() in UNSLOTH_STACKS)
        if self.recompute is not Recompute.BLOCK and "recompute" not in changes and plain:
            changes["recompute"] = Recompute.BLOCK
        if self.recompute_every > 1 and "recompute_every" not in changes and (
                plain or str(changes.get("method", "")).strip().lower() == Method.FREEZE.value):
            changes["recompute_every"] = 1
        if self.fp8_linear and "fp8_linear" not in changes and (
                str(changes.get("method", "")).strip().lower() in (Method.LORA.value, Method.QLORA.value)
                or str(changes.get("precision", "")).strip().lower() == Precision.FP32.value):
            changes["fp8_linear"] = False  # a sweep into adapters or fp32: no FP8 linears to run
        return dataclasses.replace(self, **changes)

    def single_gpu(self) -> TrainPlan:
        """The same run on one GPU: no sharding, nothing offloaded (what a single card must hold)."""
        return dataclasses.replace(self, gpus=1, sharding=Sharding.DDP, offload_optimizer=False,
                                   offload_params=False, fsdp_wrap=FsdpWrap.BLOCKS, zero_sync=ZeroSync.BUCKETS)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict; enum values as strings, targets as a list."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, StrEnum):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainPlan:
        """Build from a dict (e.g. plan.json); an unknown key is an error naming the closest field."""
        if not isinstance(data, dict):
            raise PlanError("plan", msg("error.plan.not_object", kind=type(data).__name__))
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                if close:
                    raise PlanError(key, msg("error.plan.unknown_field_close", field=key, close=close[0]))
                raise PlanError(key, msg("error.plan.unknown_field", field=key, known=", ".join(sorted(known))))
        return cls(**data)


# The weight decay of a plan that states none (docs/kernels.md "Weight decay: the extra pass").
# The HF Trainer (TRL, axolotl, LLaMA-Factory and Unsloth run it) passes TrainingArguments.weight_decay, default 0.0
# (transformers v5.24.0 training_args.py: ``weight_decay: float = field(default=0.0, ...)``), to whatever optimizer
# it builds. A loop that builds the optimizer itself without the argument gets the class's own default:
# torch.optim.AdamW 1e-2 (torch v2.13.0 torch/optim/adamw.py ``weight_decay: float = 1e-2``), bitsandbytes
# AdamW8bit / PagedAdamW8bit 1e-2 (bitsandbytes 0.50.2 optim/adamw.py), torch.optim.SGD 0, transformers
# Adafactor 0.0, bitsandbytes Lion 0. Such loops: the plain torch loop, Answer.AI fsdp_qlora's train.py
# (``torch.optim.AdamW(model.parameters(), lr=args['lr'], betas=(0.9,0.95), eps=1e-5)``) and torchtune, whose recipes
# instantiate the config's ``optimizer._component_`` with only the keys the config gives. Unknown (0.0): the
# pre-training frameworks (torchtitan, Megatron and the others each have their own), DeepLearningExamples BERT and
# Lit-GPT 2023, whose runs state it.
_OWN_LOOP_STACKS = frozenset({Stack.TORCH_LOOP, Stack.TORCH_LOOP_COMPILE, Stack.HF_LOOP_2024, Stack.TORCHTUNE})
TRAINER_WEIGHT_DECAY = 0.0
OPTIMIZER_WEIGHT_DECAY: dict[Optimizer, float] = {
    Optimizer.ADAMW: 1e-2, Optimizer.ADAMW_8BIT: 1e-2, Optimizer.PAGED_ADAMW_8BIT: 1e-2,
    Optimizer.SGD: 0.0, Optimizer.ADAFACTOR: 0.0, Optimizer.LION: 0.0}


def stack_weight_decay(stack: Stack, optimizer: Optimizer) -> float:
    """The weight decay ``stack`` runs ``optimizer`` with when the run states none (see above)."""
    if stack in _OWN_LOOP_STACKS:
        return OPTIMIZER_WEIGHT_DECAY[optimizer]
    return TRAINER_WEIGHT_DECAY  # the Trainer's, and the unknown stacks'


def field_names() -> list[str]:
    return [f.name for f in fields(TrainPlan)]


# The precision of a plan whose maker names its method but no precision (the app, links, the CLI, plan files):
# QLoRA is run with HF Trainer / TRL and bf16=True, autocast over peft's fp32-upcast model, as
# gpuwork.facts.configs reads such configs; a pure-bf16 QLoRA plan is the fp32 program (estimate.ops.fp32_qlora).
# Other methods keep TrainPlan's own default (a full fine-tune's 16-bit weights, no fp32 masters).
METHOD_PRECISION: dict[Method, Precision] = {Method.QLORA: Precision.BF16_MIXED}


def default_precision(method: Method | str) -> Precision:
    """The precision a plan of ``method`` gets when none is stated (``METHOD_PRECISION``)."""
    chosen = _coerce_enum("method", method, Method)
    return METHOD_PRECISION.get(Method(chosen), TrainPlan.precision)


def follow_method(precision: Precision | str, old: Method | str, new: Method | str) -> Precision:
    """The precision once the method changes from ``old`` to ``new``: the new method's default where it was the
    old method's (nobody chose it), else as it was."""
    precision = _coerce_enum("precision", precision, Precision)
    return default_precision(new) if precision == default_precision(old) else Precision(precision)


def plan_from_choices(data: dict[str, Any]) -> TrainPlan:
    """``TrainPlan.from_dict`` for fields a user chose: without a stated precision, the method's
    (``default_precision``)."""
    if isinstance(data, dict) and data.get("precision") is None:
        data = {**data, "precision": default_precision(data.get("method", TrainPlan.method))}
    return TrainPlan.from_dict(data)


def _coerce_enum(name: str, value: Any, enum: type[StrEnum]) -> StrEnum:
    if isinstance(value, enum):
        return value
    allowed = [m.value for m in enum]
    if isinstance(value, str):
        key = value.strip().lower().replace("_", "-")
        if key in allowed:
            return enum(key)
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
        if close:
            raise PlanError(name, msg("error.plan.unknown_choice_close", field=name, value=repr(value),
                                      allowed=", ".join(allowed), close=close[0]))
        raise PlanError(name, msg("error.plan.unknown_choice", field=name, value=repr(value), allowed=", ".join(allowed)))
    raise PlanError(name, msg("error.plan.choice", field=name, value=repr(value), allowed=", ".join(allowed)))


def _coerce_targets(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.replace(" ", ",").split(",")]
    if not isinstance(value, (list, tuple)):
        raise PlanError("lora_targets", msg("error.plan.targets_type", value=repr(value)))
    names = tuple(str(v).strip() for v in value if str(v).strip())
    if not names:
        raise PlanError("lora_targets", msg("error.plan.targets_empty"))
    if ALL_LINEAR in [n.lower().replace("_", "-") for n in names]:
        return (ALL_LINEAR,)
    return names


def _sharding(value: Any) -> Sharding | None:
    """A sharding value (member or text) as its member; None for a bad one (the plan's own validation names it)."""
    try:
        return Sharding(str(getattr(value, "value", value)).strip().lower())
    except ValueError:
        return None


def _per_unit(sharding: Any) -> bool:
    """Whether a sharding value gathers and reduces unit by unit (``Sharding.per_unit``)."""
    member = _sharding(sharding)
    return member is not None and member.per_unit


def _torch_fsdp(sharding: Any) -> bool:
    """Whether a sharding value is one of torch FSDP's (``TORCH_FSDP_SHARDINGS``)."""
    return _sharding(sharding) in TORCH_FSDP_SHARDINGS


_DOCUMENT_KERNELS = tuple(a.value for a in Attention if a.is_flash)  # kernels that take documents' boundaries


def _documents_after(tokens: int, fields: dict[str, Any]) -> int | None:
    """``packed_document_tokens`` of a plan whose seq_len, lengths or attention changed (``TrainPlan.replace``)."""
    lengths, attention, seq_len = fields["lengths"], fields["attention"], fields["seq_len"]
    if not is_packed(lengths):
        return None
    if str(getattr(attention, "value", attention)).strip().lower() not in _DOCUMENT_KERNELS:
        return None
    return min(tokens, seq_len) if isinstance(seq_len, int) and not isinstance(seq_len, bool) and seq_len > 0 \
        else tokens


def even_groups(n: int) -> tuple[int, ...]:
    """The group sizes ``n`` GPUs split into evenly, 2 GPUs and up (``n`` itself last: one group of all)."""
    return tuple(d for d in range(2, n + 1) if n % d == 0)


def _out_of_range(name: str, value: Any, bounds: Range, problem: str) -> PlanError:
    """The plan's words for a number outside its range (``Range.problem``'s answer)."""
    if name in _OWN_MESSAGE:
        return PlanError(name, msg(_OWN_MESSAGE[name], value=repr(value), maximum=f"{bounds.high:g}"))
    if problem == ABOVE:
        if name in _OWN_ABOVE:
            return PlanError(name, msg(_OWN_ABOVE[name], value=repr(value)))
        code = "error.plan.number_too_large" if isinstance(value, float) else "error.plan.too_large"
        return PlanError(name, msg(code, field=name, value=repr(value), maximum=bounds.high,
                                   why=_BOUND_WHY.get(name, name)))
    if name == "lora_r":
        return PlanError(name, msg("error.plan.lora_r", value=repr(value)))
    if bounds.whole:
        if problem == BELOW:
            return PlanError(name, msg("error.plan.too_small", field=name, value=value, minimum=bounds.low))
        return PlanError(name, msg("error.plan.whole_number", field=name, value=repr(value), minimum=bounds.low))
    if problem == NOT_NUMBER:
        return PlanError(name, msg("error.plan.number", field=name, value=repr(value)))
    if problem == NOT_FINITE:
        return PlanError(name, msg("error.plan.not_finite", field=name, value=repr(value)))
    code = "error.plan.above" if bounds.low_open else "error.plan.at_least"
    return PlanError(name, msg(code, field=name, value=repr(value), minimum=repr(bounds.low)))


__all__ = [
    "ALL_LINEAR",
    "HSDP_GROUP_GPUS",
    "MAX_GPUS",
    "MAX_SEQ_LEN",
    "MAX_WEIGHT_DECAY",
    "OPTIMIZER_WEIGHT_DECAY",
    "TRAINER_WEIGHT_DECAY",
    "LOWER_BOUNDS",
    "OPTIONAL_BOOLS",
    "OPTIONAL_FIELDS",
    "PLAN_RANGES",
    "UPPER_BOUNDS",
    "TORCH_FSDP_SHARDINGS",
    "UNSLOTH_STACKS",
    "Attention",
    "CommOverlap",
    "FsdpWrap",
    "Recompute",
    "ZeroSync",
    "Method",
    "Optimizer",
    "OptimizerImpl",
    "Precision",
    "QuantType",
    "SdpaBackend",
    "Sharding",
    "Stack",
    "Task",
    "EvalKeep",
    "METHOD_PRECISION",
    "TrainPlan",
    "default_precision",
    "follow_method",
    "is_packed",
    "plan_from_choices",
    "even_groups",
    "field_names",
    "lengths_text",
    "shard_ranks",
    "stack_weight_decay",
]
