"""What a software stack's own code keeps in memory beyond the eager Hugging Face step (stacks.csv memory columns).

Pure helpers of ``gpuwork.estimate.memory``: the returned-logits copy of older Unsloth releases and of today's on
micro-batches of at most 1,024 tokens ([M4]), the chunk of
Liger's fused linear cross-entropy ([M2]), a plain loop's loss on the logits' own dtype ([M7]), Lit-GPT 2023's FSDP1
unit gradients and the inputs its bitsandbytes release keeps ([M5]); sources in gpuwork/facts/data/rates_sources.md.
"""

from __future__ import annotations

import math

from gpuwork.facts.rates import StackProfile
from gpuwork.facts.spec import Linear, ModelSpec, ParamCounts, lora_target_linears, quantized_linears
from gpuwork.plan import Attention, Method, Precision, Task, TrainPlan

# transformers 4.x families whose every attention layer builds its own rotary module with cos and sin caches of
# max_position_embeddings x head_dim (read in v4.39.3: LlamaRotaryEmbedding, MistralRotaryEmbedding,
# MixtralRotaryEmbedding, Qwen2RotaryEmbedding) [M11]
_ROPE_CACHE_FAMILIES = ("llama", "mistral", "mixtral", "qwen2")
# models whose attention and MLP read one norm output (Lit-GPT shared_attention_norm: phi-1_5's config) [M5]
_SHARED_ATTENTION_NORM = ("phi",)


def rope_cache_bytes(spec: ModelSpec, plan: TrainPlan, profile: StackProfile | None) -> int:
    """The rotary caches a stack's transformers release keeps on the GPU with the model (stacks.csv rope_cache,
    [M11]): under ``layer`` every attention layer of a Llama-lineage model registers ``cos_cached`` and
    ``sin_cached`` (Llama 4.38-4.40: ``_cos_cached``, ``_sin_cached``) of max_position_embeddings x head_dim as
    non-persistent buffers, built in the default dtype, which ``from_pretrained`` sets to the load dtype while it
    builds the model; ``.to(device)`` and FSDP move buffers whole to every rank (FSDP shards parameters only).
    The load dtype: fp32 for an fp32 plan and for mixed precision on fp32 master weights, else the 16-bit dtype
    (pure 16-bit, adapters on a 16-bit base, QLoRA's compute dtype)."""
    if profile is None or profile.rope_cache != "layer" or spec.model_type not in _ROPE_CACHE_FAMILIES:
        return 0
    fp32_load = plan.precision is Precision.FP32 or (plan.precision.is_mixed and not plan.uses_adapters)
    return 2 * spec.num_layers * spec.max_position * spec.head_dim * (4 if fp32_load else 2)


def masked_sdpa(plan: TrainPlan, hands_mask: bool) -> bool:
    """SDPA gets an attention mask: a stack whose models hand it the batch's padding mask (stacks.csv
    sdpa_padding_mask: transformers drops the mask only when it is all ones) on rows padded to seq_len
    (``lengths="padded"``). The time model's kernel choice (``estimate.ops.sdpa_padding_mask``) and the memory
    model's K and V (``sdpa_kv_repeated``) read this one rule. docs/time_misses.md#sdpa-with-a-padding-mask."""
    return plan.attention is Attention.SDPA and hands_mask and plan.lengths == "padded"


def sdpa_kv_repeated(spec: ModelSpec, plan: TrainPlan, profile: StackProfile | None) -> bool:
    """Whether SDPA keeps K and V repeated to every query head (one copy each, ``repeat_kv``'s expand + reshape)
    rather than at the model's key/value heads: on a grouped-query model under SDPA, always for a stack whose
    transformers release calls ``repeat_kv`` ahead of every SDPA call, and when the model hands SDPA a mask for
    one whose release passes ``enable_gqa`` only without a mask (stacks.csv sdpa_kv, [M10])."""
    if profile is None or spec.num_kv_heads >= spec.num_heads or plan.attention is not Attention.SDPA:
        return False
    return profile.sdpa_kv == "repeat" or (profile.sdpa_kv == "masked"
                                           and masked_sdpa(plan, profile.sdpa_padding_mask))


def loss_logits_bytes(spec: ModelSpec, autocast: bool, loss_kernel: str, logits_bytes: int) -> int:
    """Bytes per logit of the cross-entropy's log_softmax output and its backward buffers. transformers'
    ForCausalLMLoss upcasts causal-LM logits to fp32; encoder heads and a plain loop's F.cross_entropy (loss_kernel
    native, [M7]) take the logits as they are, except under autocast, whose fp32 op list holds log_softmax and
    nll_loss."""
    if spec.task is not Task.CAUSAL_LM:
        return logits_bytes
    return logits_bytes if loss_kernel == "native" and not autocast else 4


# Today's Unsloth returns the full logits for a micro-batch of at most this many tokens: CausalLM_fast_forward sets
# RETURN_LOGITS when bsz * q_len <= 1024 (unsloth/models/llama.py, from commit b9fe2588 of 2024-12-10; release 2025.9.7
# line 1199, mistral.py line 301) and computes the loss from the full 16-bit logits with Fast_CrossEntropyLoss [M4]
UNSLOTH_RETURN_LOGITS_TOKENS = 1024


def micro_batch_loss_kernel(plan: TrainPlan, loss_kernel: str) -> str:
    """The loss kernel the plan's longest micro-batch runs: the stack's (stacks.csv loss_kernel), except that today's
    Unsloth (``inplace``) takes its older releases' path, logits returned beside the loss (``inplace-returned``), when
    that micro-batch holds at most ``UNSLOTH_RETURN_LOGITS_TOKENS`` tokens (docs/memory_misses.md,
    "github-sogrey-chinese-medical-qwen3-unsloth").

    Limitations: the peak is priced at the longest micro-batch only; under a length histogram whose longest batch is
    above the threshold, shorter ones that return their logits are not compared with it."""
    if loss_kernel == "inplace" and plan.batch_size * plan.longest_batch_len <= UNSLOTH_RETURN_LOGITS_TOKENS:
        return "inplace-returned"
    return loss_kernel


def returned_logits_copy(spec: ModelSpec, plan: TrainPlan, loss_kernel: str) -> int:
    """Bytes per token of logits alive only at the forward's end: older Unsloth models return them beside the loss
    (today's on short micro-batches: ``micro_batch_loss_kernel``), and accelerate's mixed-precision wrapper
    (convert_outputs_to_fp32) hands them to the Trainer as fp32, held until compute_loss returns ([M4],
    docs/memory_unsloth_releases.md). A transformers 4.x causal LM under a loop that holds its output (eager-held,
    [M8]) has, beside the previous step's output, this step's fp32 logits and the contiguous fp32 copy of the shifted
    logits the loss reads."""
    if spec.task is not Task.CAUSAL_LM:
        return 0
    if loss_kernel == "eager-held":
        return 2 * 4 * spec.vocab_size
    returned = loss_kernel == "inplace-returned" and plan.precision.is_mixed
    return 4 * spec.vocab_size if returned else 0


def held_logits_bytes(spec: ModelSpec, loss_kernel: str) -> int:
    """Bytes per token of the fp32 logits a transformers 4.x causal LM returns and a loop holds from one forward to
    the next (``output = model(...)`` keeps the previous step's output alive until the new forward returns), so
    through the whole step (eager-held, [M8])."""
    return 4 * spec.vocab_size if spec.task is Task.CAUSAL_LM and loss_kernel == "eager-held" else 0


def chunked_logits_bytes(spec: ModelSpec, tokens: int, dtype_bytes: int) -> int:
    """One chunk of logits in Liger's fused linear cross-entropy: next_power_of_2(ceil(BT / ceil(V / H))) rows
    (at most BT) of V logits in the input dtype, so about BT x H elements whatever the vocabulary
    (liger_kernel/ops/fused_linear_cross_entropy.py)."""
    inc = max(math.ceil(spec.vocab_size / spec.hidden_size), 1)
    rows = min(1 << max(math.ceil(tokens / inc) - 1, 0).bit_length(), tokens)
    return rows * spec.vocab_size * dtype_bytes


def flat_unit_gradients(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts,
                        profile: StackProfile | None) -> tuple[int, int] | None:
    """(gradients kept after the step's sync, gradients alive through the accumulation micro-batches) per GPU where
    a stack's FSDP1 units hold frozen weights and adapters in one flat parameter and accumulate under ``no_sync``
    (stacks.csv fsdp_grads unit-unsharded, [M5]); None elsewhere.

    The flat parameter needs a gradient, so every block's gradient has the whole block's size, in the compute dtype
    (bf16-true: the weights' own). Under no_sync it stays unsharded from the first micro-batch's backward to the
    step's last one, on every rank; the sync reduce-scatters it to a 1/N shard. The all-frozen root unit keeps none.

    Full fine-tuning (and pre-training) in one dtype through the same loop: every unit is trained, the root one too,
    and no_sync keeps each unit's whole gradient the same way ("FSDP will accumulate the full model gradients
    (instead of gradient shards) until the eventual sync", torch's ``FullyShardedDataParallel.no_sync`` docstring,
    [M5]); with one micro-batch per step nothing accumulates and the shards are all there is.
    """
    if profile is None or profile.fsdp_grads != "unit-unsharded" or not plan.sharding.per_unit \
            or plan.shard_ranks < 2:
        return None
    if plan.uses_adapters:
        full = plan.precision.compute_bytes * (spec.params_block * spec.num_layers + counts.adapter)  # + adapters
    elif plan.method in (Method.FULL, Method.SCRATCH) and not plan.precision.is_mixed:
        full = plan.precision.compute_bytes * counts.trainable  # every unit's gradient, the root unit's too
    else:
        return None
    sharded = math.ceil(full / plan.shard_ranks)
    return sharded, (full if plan.grad_accum > 1 else 0)


def kept_4bit_inputs(spec: ModelSpec, plan: TrainPlan, profile: StackProfile | None, groups: dict[str, list[Linear]],
                     widths: tuple[int, int], lora_input: int) -> int:
    """Bytes per token per block that bitsandbytes up to 0.43.1 holds for backward beyond what autograd saves
    (stacks.csv bnb_4bit_input kept, [M5]): ``MatMul4Bit.forward`` keeps its 16-bit input A (``ctx.tensors = (A, B)``)
    whenever it needs a gradient, though the backward uses only the 4-bit weight.

    Each tensor counts once, for a group of linears reading it (``groups``: memory's block_groups) of which one is
    4-bit: the attention input, the attention output (not under SDPA, whose saved output the projection reads as a
    view), the MLP input (the attention input itself where one norm feeds both) and the MLP's hidden tensor.
    ``widths``: bytes per element of the stream and of the linears' outputs. A group with an adapter whose lora_A
    saves that very input adds nothing: no dropout, and the input has ``lora_input`` bytes per element, the dtype
    lora_A saves its input in when that is not a cast copy (0: always a copy; memory's _consumer_saved). The first
    block's attention input needs no gradient (frozen embeddings) and is not kept; it is counted with the others.
    """
    if profile is None or profile.bnb_4bit_input != "kept" or plan.method is not Method.QLORA:
        return 0
    quant = {lin.name for lin in quantized_linears(spec)}
    lora = {lin.name for lin in lora_target_linears(spec, plan.lora_targets)}
    stream, out = widths
    inputs = {"attn_in": (stream, spec.hidden_size), "attn_out": (out, spec.num_heads * spec.head_dim),
              "mlp_in": (stream, spec.hidden_size), "mlp_hidden": (out, spec.intermediate_size)}
    if plan.attention is not Attention.EAGER:
        del inputs["attn_out"]
    if spec.model_type in _SHARED_ATTENTION_NORM and any(lin.name in quant for lin in groups["attn_in"]):
        del inputs["mlp_in"]
    kept = 0
    for name, (x_bytes, elems) in inputs.items():
        group = groups[name]
        lora_keeps_x = plan.lora_dropout == 0 and x_bytes == lora_input
        if any(lin.name in quant for lin in group) and not (lora_keeps_x and any(lin.name in lora for lin in group)):
            kept += x_bytes * elems
    return kept


def whole_unit_gathered(params_bytes: int, grad_bytes: int) -> dict[str, int]:
    """Gathered bytes per moment of the step when torch FSDP's root unit is the whole model (fsdp_wrap 'whole'):
    the root is unsharded before forward and kept to the end of backward, and its unsharded gradient exists until
    the post-backward hook reduce-scatters it after the whole backward (torch FSDP1 _runtime_utils.py
    _pre_forward_unshard / _post_backward_hook; docs/communication.md 'One unit for the whole model'). The
    gradients are counted whole from the first block's backward on: an upper bound on the gradients made so far."""
    return {"forward": params_bytes, "loss backward": params_bytes, "block backward": params_bytes + grad_bytes,
            "backward end": params_bytes + grad_bytes, "optimizer step": 0}
