"""A traced block profile as operations of the step, and the activation memory it saves.

``gpuwork.facts.block_profiles.BlockProfile`` holds what one block of the real model class ran per
token (traced by ``gpuwork.measure.block_profile``). Here each traced kernel becomes an ``Op`` of
``estimate.ops`` for a plan: its per-token FLOPs and bytes x the plan's tokens per micro-batch
(attention's per-context-token part at the plan's sequence length), token-independent bytes (weights,
weight gradients) once per call, occurrences x blocks x micro-batches — so ``estimate.steptime.price_ops``
prices them like the hand-written block. Pure: no torch, no I/O.

Pricing conventions (the rates the ops are priced with count FLOPs this way, so the traced counts are
brought to them; ``BlockProfile`` keeps PyTorch's counts as traced):
- FlopCounterMode counts a causal fused attention kernel as the full s x s product; the kernel skips
  the blocks above the diagonal: x (1 + 128/s) / 2 for s > 128, as ``estimate.ops`` counts it
  (flash-attention's benchmark counts causal as half; 128-row blocks).
  (FlopCounterMode already counts the fused backward as FlashAttention-2 runs it: the scores
  recomputed, then four matmuls — 2.5x the forward, the convention of FA2's measured throughput.)

Limitations: the traced kernels are the eager Hugging Face block (stack ``hf-trainer``); a stack that
fuses norms, rotary or the MLP activation is not applied to them. The freeze method's frozen lower
blocks run the trained block's forward (the same kernels) and no backward; where the embeddings' output requires
grad (``TrainPlan.input_require_grads``) they run the trained block's backward too, its weight-gradient kernels
included (a traced profile does not tell them apart: an overcount of the frozen blocks' backward).
"""

from __future__ import annotations

from gpuwork.estimate.ops import Kind, Op, Phase
from gpuwork.facts.block_profiles import BlockProfile, ProfileOp
from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import Method, TrainPlan

CAUSAL_BLOCK_ROWS = 128  # flash-attention's row block: causal kernels skip the blocks above the diagonal

# step_ops' operations outside the blocks (embedding, final norm, output layer, loss); with the
# optimizer kind, everything else step_ops returns is a block operation.
OUTSIDE_BLOCKS = frozenset({
    "embedding lookup", "embedding backward", "final norm", "final norm backward", "output layer",
    "output layer (fused with loss)", "output layer input gradient", "output layer weight gradient",
    "logits to fp32", "log_softmax + nll", "loss backward (nll, log_softmax)", "logits gradient cast",
    "loss (chunked softmax)",
})


def is_block_op(op: Op) -> bool:
    """Whether an operation of ``step_ops`` belongs to the blocks."""
    return op.kind is not Kind.OPTIMIZER and op.name not in OUTSIDE_BLOCKS


def _fused_attention(op: ProfileOp) -> bool:
    return op.kind == "attention" and ("scaled_dot_product" in op.name or "flash_attention" in op.name
                                       or "efficient_attention" in op.name)


def _op(p: ProfileOp, profile: BlockProfile, phase: Phase, count: int, tokens: int, seq_len: int,
        masked: bool = False, span: int = 0) -> Op:
    fused = _fused_attention(p)
    span = span or seq_len  # packed documents: the fused kernel attends within each (TrainPlan.attention_span)
    flops = p.flops.at(span if fused else seq_len) * tokens
    attention_pass = ""
    m = n = 0
    if fused:
        attention_pass = "fwd" if p.phase == "forward" else "bwd"
        if profile.causal and span > CAUSAL_BLOCK_ROWS and not masked:  # a masked kernel skips no block
            flops *= 0.5 * (1 + CAUSAL_BLOCK_ROWS / span)
    elif p.kind in ("matmul", "attention"):
        m = round(p.m_per_token * tokens) if p.m_per_token else p.m_fixed
        n = p.n or seq_len
    dtype = p.dtype if p.kind != "memory" else "bf16"
    return Op(f"{p.name} ({p.kind}, traced)", Kind(p.kind), phase, flops, p.bytes_per_call(tokens, seq_len),
              p.launches, count * p.count, dtype, m, n, attention_pass, mem_efficient=masked and bool(attention_pass))


def traced_block_ops(plan: TrainPlan, spec: ModelSpec, profile: BlockProfile, masked: bool = False) -> list[Op]:
    """The blocks' operations of one optimizer step on one GPU, from a traced profile.

    Forward in every block, the recompute of gradient checkpointing, and the backward through the
    blocks the gradient reaches (all of them; the trained top ones for freeze
    unless ``input_require_grads``), x micro-batches.
    """
    t, s, mb, r = plan.tokens_per_micro_batch, plan.seq_len, plan.grad_accum, plan.attention_span
    layers = spec.num_layers
    grad_layers = plan.gradient_blocks(layers)
    ops: list[Op] = []
    for p in profile.ops:
        if p.phase == "forward":
            ops.append(_op(p, profile, Phase.FORWARD, layers * mb, t, s, masked, r))
            if plan.grad_checkpointing:
                ops.append(_op(p, profile, Phase.RECOMPUTE, plan.checkpointed_blocks(layers) * mb, t, s, masked, r))
        else:
            ops.append(_op(p, profile, Phase.BACKWARD, grad_layers * mb, t, s, masked, r))
    return [o for o in ops if o.count > 0]


def with_traced_blocks(ops: tuple[Op, ...], plan: TrainPlan, spec: ModelSpec,
                       profile: BlockProfile) -> tuple[Op, ...]:
    """``step_ops``' operations with the blocks' replaced by the traced ones (embedding, head, loss and
    optimizer kept). The hand-written block's kernel choice carries over: SDPA with a padding mask
    (``ops.sdpa_padding_mask``) runs the memory-efficient kernel over the whole matrix."""
    masked = any(o.mem_efficient for o in ops)
    return tuple(o for o in ops if not is_block_op(o)) + tuple(traced_block_ops(plan, spec, profile, masked))


def check_profile_matches(plan: TrainPlan, profile: BlockProfile) -> list[str]:
    """Which of the plan's fields the profile was not traced for (empty when it fits the plan)."""
    method = "full" if plan.method in (Method.FULL, Method.SCRATCH, Method.FREEZE) else plan.method.value
    wrong = []
    if profile.method != method:
        wrong.append("method")
    if profile.precision != plan.precision.value:
        wrong.append("precision")
    if profile.attention != plan.attention.value:
        wrong.append("attention")
    if method != "full" and (profile.lora_r, tuple(profile.lora_targets)) != (plan.lora_r, tuple(plan.lora_targets)):
        wrong.append("lora")
    return wrong


def traced_activation_bytes_per_token(profile: BlockProfile, seq_len: int, *, checkpointed: bool = False) -> float:
    """Bytes per token one block keeps for backward at ``seq_len``: what autograd saved (parameters left
    out), or only its input hidden states under gradient checkpointing."""
    return profile.input_bytes if checkpointed else profile.saved_bytes.at(seq_len)


def traced_activation_terms(profile: BlockProfile) -> tuple[int, int, int]:
    """(per-layer bytes per token, per-layer bytes per token per token of context, checkpoint bytes per token):
    the three block terms of ``estimate.memory``'s activations (``_Activations.per_layer_trained`` /
    ``per_layer_frozen``, ``per_layer_quadratic``, ``checkpoint_per_layer``)."""
    return round(profile.saved_bytes.a), round(profile.saved_bytes.b), round(profile.input_bytes)


__all__ = [
    "block_totals",
    "CAUSAL_BLOCK_ROWS",
    "OUTSIDE_BLOCKS",
    "check_profile_matches",
    "is_block_op",
    "traced_activation_bytes_per_token",
    "traced_activation_terms",
    "traced_block_ops",
    "with_traced_blocks",
]


def block_totals(ops: tuple[Op, ...] | list[Op], plan: TrainPlan, spec: ModelSpec) -> dict[str, dict[str, dict[str, float]]]:
    """{phase: {kind: {"flops", "bytes", "launches"}}} of one block call (forward and backward), summed over
    the block operations of ``ops`` (hand-written or traced) and divided by the block calls of the step."""
    calls = spec.num_layers * plan.grad_accum
    out: dict[str, dict[str, dict[str, float]]] = {p: {k: {"flops": 0.0, "bytes": 0.0, "launches": 0.0}
                                           for k in ("matmul", "attention", "memory")}
                                       for p in ("forward", "backward")}
    for o in ops:
        if not is_block_op(o) or o.phase not in (Phase.FORWARD, Phase.BACKWARD):
            continue
        cell = out[o.phase.value][o.kind.value]
        cell["flops"] += o.flops * o.count / calls
        cell["bytes"] += o.bytes * o.count / calls
        cell["launches"] += o.launches * o.count / calls
    return out
