"""FLOPs per training token: the one labelled convention the time estimate reports (``estimate.timing``) and MFU
counts.

FLOP convention (one, labelled): per token, a weight costs 2 FLOPs forward, 2 for the gradient of
its input and 2 for its own gradient (Kaplan et al. 2020 §2.1: 6N for training). Frozen weights
skip their own gradient, so adapters (LoRA/QLoRA) cost 4N + 6·N_adapter (NVIDIA NeMo's LoRA
throughput implies ≈ 4N, docs/sources.md#s-flops-lora). Checkpointing reruns each block's forward:
+2N (BigScience 8N, docs/sources.md#s-flops-recompute), less the matmuls torchtitan's op policy keeps
(``estimate.recompute``). Attention scores and values add 12·L·H·Q·T per token
for forward + backward (torchtitan ``get_num_flop_per_token``; causal masking ignored, i.e. the
full T×T product is counted as torchtitan does; T is a packed document's length where attention stays inside
each, ``TrainPlan.packed_document_tokens``) and +4·L·H·Q·T when recomputed. N counts the
weights that multiply activations: active parameters (MoE: routed experts only) minus embedding
tables, plus the output layer when it is tied to the embeddings (torchtitan excludes embeddings).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

from gpuwork.estimate.recompute import attention_kept, kept_weights, selective
from gpuwork.facts.spec import ModelSpec, ParamCounts, count_params
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, TrainPlan

# -- FLOP convention (Kaplan et al. 2020 §2.1; torchtitan; NeMo) ------------------------------------

FWD_FLOPS_PER_WEIGHT = 2  # one multiply-add per weight per token
BWD_INPUT_FLOPS_PER_WEIGHT = 2  # gradient w.r.t. the layer input (needed through every block it crosses)
BWD_WEIGHT_FLOPS_PER_WEIGHT = 2  # gradient w.r.t. the weight (skipped for frozen weights)
ATTN_FWD_FLOPS = 4  # per layer and token, x H·Q·T: Q·K^T (2·H·Q·T) + P·V (2·H·Q·T)
ATTN_TRAIN_FLOPS = 12  # forward + backward = 3 x forward (torchtitan: 12·L·H·Q·T per token)


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


class _FlopsShape(NamedTuple):
    """What ``flops_per_token`` reads of a plan besides its parameter counts (a field it does not hold is an
    AttributeError, not a stale answer): the key of its cache with the spec and the counts."""

    method: Method
    uses_adapters: bool
    seq_len: int  # tokens one attention spans (a packed document's, TrainPlan.attention_span)
    trainable_layers: int
    grad_checkpointing: bool
    input_require_grads: bool  # freeze: the gradient runs down through the frozen blocks too (decided)
    kept_weights: int  # weights whose outputs an op-level policy keeps: not re-run (estimate.recompute)
    attention_recomputed: bool  # the recompute re-runs the attention core (not what an op-level policy keeps)
    policy: str  # what checkpointing recomputes (TrainPlan.recompute; "block" without an op-level policy)
    checkpointed: int  # blocks whose forward runs again (TrainPlan.checkpointed_blocks)


def flops_per_token(plan: TrainPlan, spec: ModelSpec) -> FlopsPerToken:
    """FLOPs per training token for the plan's method (see the module docstring for the convention).

    Worked example (Llama-3.1-8B, full, seq 2048, no checkpointing): N = 8,030,261,248 − 525,336,576
    (embeddings) = 7,504,924,672; 6N = 4.503e10; attention 12·32·32·128·2048 = 3.221e9; total 4.825e10.
    """
    return _flops_per_token(spec, count_params(spec, plan), _FlopsShape(
        plan.method, plan.uses_adapters, plan.attention_span, plan.trainable_layers, plan.grad_checkpointing,
        bool(plan.input_require_grads),  # unset reads as off: callers decide it with the stack first
        kept_weights(spec, plan), attention_kept(plan) is None,
        plan.recompute.value if selective(plan) else "block", plan.checkpointed_blocks(spec.num_layers)))


@functools.lru_cache(maxsize=4096)
def _flops_per_token(spec: ModelSpec, counts: ParamCounts, plan: _FlopsShape) -> FlopsPerToken:
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
    else:  # FREEZE: the last k blocks (+ head) train; autograd stops below them unless the embeddings' output
        # requires grad (input_require_grads): then input gradients run through every block
        grad_layers = layers if plan.input_require_grads else min(plan.trainable_layers, layers)
        fwd = FWD_FLOPS_PER_WEIGHT * n
        bwd_in = BWD_INPUT_FLOPS_PER_WEIGHT * (head + blocks * grad_layers // max(layers, 1))
        bwd_w = BWD_WEIGHT_FLOPS_PER_WEIGHT * counts.trainable
        if plan.input_require_grads:
            convention = "4N + 2 x trainable (freeze, input gradients through every block: enable_input_require_grads)"
            note = msg("flops.freeze_input_grads")
        else:
            convention = ("2N + 2 x (trained blocks + head) + 2 x trainable (freeze: no gradient below the trained "
                          "blocks)")
            note = msg("flops.freeze")
    attention_backward = (ATTN_TRAIN_FLOPS - ATTN_FWD_FLOPS) * grad_layers * hq_t
    attention = ATTN_FWD_FLOPS * layers * hq_t + attention_backward
    recompute = 0.0
    if plan.grad_checkpointing:
        # HF checkpoints each decoder block: its forward runs again in backward (+2N, +attention fwd)
        # (an op-level policy keeps some matmul outputs and the attention kernel's: not re-run)
        recompute_blocks = (blocks + (adapter if plan.uses_adapters else 0) - plan.kept_weights) \
            * plan.checkpointed // max(layers, 1)
        recompute = FWD_FLOPS_PER_WEIGHT * recompute_blocks \
            + (ATTN_FWD_FLOPS * plan.checkpointed * hq_t if plan.attention_recomputed else 0)
        convention += " + recompute (gradient checkpointing" + ("" if plan.policy == "block" else
                                                               f", op-level policy '{plan.policy}'") \
            + ("" if plan.checkpointed == grad_layers else f", {plan.checkpointed} of {layers} blocks") + ")"
    attention_model = attention
    total = fwd + bwd_in + bwd_w + attention + recompute
    model = fwd + bwd_in + bwd_w + attention_model
    return FlopsPerToken(forward=float(fwd), backward_input=float(bwd_in), backward_weight=float(bwd_w),
                         recompute=float(recompute), attention=float(attention),
                         attention_backward=float(attention_backward), total=float(total),
                         model=float(model), weights=n, convention=convention + " + attention 12·L·H·Q·T",
                         note=msg("flops.convention", method=note,
                                  recompute=msg("flops.recompute" if plan.policy == "block" else f"flops.recompute_{plan.policy}")
                                  if plan.grad_checkpointing else None))


__all__ = ["FlopsPerToken", "flops_per_token", "matmul_params"]
