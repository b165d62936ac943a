"""Per-GPU memory of an in-run evaluation (Hugging Face Trainer ``evaluate`` between training steps).

The Trainer evaluates after an optimizer step (``_maybe_log_save_evaluate``), once the gradients are gone
(``zero_grad`` sets them to None) and while the weights, the optimizer states and autocast's weight cache stay.
Its loop (transformers ``Trainer.evaluation_loop`` and ``prediction_step``, docs/memory_misses.md "Evaluation
memory") runs each batch of ``eval_batch_size`` sequences under ``torch.no_grad``: no tensor is saved for
backward, but the batch's block internals and the head's vocabulary-wide tensors exist at once, and what
``prediction_step`` returns (the logits, or token ids from ``preprocess_logits_for_metrics``, and the labels) is
concatenated on the GPU (``nested_concat``: a new tensor holding the old and the new batch) until the evaluation
ends, or until every ``eval_accumulation_steps`` batches when that is set. Without ``compute_metrics`` the loop
keeps only each sample's loss.

The reserved bytes come from replaying the caching allocator (gpuwork.estimate.allocator): the training
micro-batches leave their segments cached (nothing returns them between training and evaluation), then the
evaluation's batches ask for their own, larger or smaller, tensors; what it maps beyond the training's cache is
added to the training's reserved peak. Pure: no file, torch or clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwork.estimate.allocator import CachingAllocator, Program, StepTensors, step_program
from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import Attention, EvalKeep, Task, TrainPlan

# Bytes per token of what an evaluation batch hands back per kept tensor: token ids and labels are int64
# (torch.argmax and the collator's labels)
ID_BYTES = 8


@dataclass(frozen=True)
class EvalMemory:
    """An evaluation's peak, in bytes: the terms at its peak (besides what training holds), its allocated
    peak with those held bytes, and the segments it maps beyond the training's cache."""

    live: int  # the forward's largest set of tensors at once (block internals or the head's)
    kept: int  # predictions and labels kept on the GPU at the evaluation's peak
    allocated: int  # held + live + kept at the peak (the larger of the forward and the last concatenation)
    extra_reserved: int  # segments mapped beyond the training's cache (allocator replay)
    batches: int  # evaluation batches per evaluation


def eval_tokens(plan: TrainPlan) -> int:
    """Tokens of one evaluation batch: ``eval_batch_size`` rows of the plan's longest length."""
    return (plan.eval_batch_size or 0) * plan.longest_batch_len


def kept_per_batch(spec: ModelSpec, plan: TrainPlan, logits_bytes: int) -> tuple[int, int]:
    """(predictions, labels) bytes one evaluation batch hands back to be kept: the logits as the model returns
    them (``logits_bytes`` per element), int64 token ids, or nothing but the loss; a sequence classifier's per
    row, a language model's per token. Over several GPUs every rank keeps every rank's batch
    (``gather_for_metrics`` before the containers)."""
    if plan.eval_keep is EvalKeep.LOSS:
        return 0, 0
    rows = (plan.eval_batch_size or 0) * plan.gpus
    if spec.task is Task.SEQ_CLS:
        width, positions = max(spec.num_labels, 1), rows
    else:
        width, positions = spec.vocab_size, rows * plan.longest_batch_len
    per = width * logits_bytes if plan.eval_keep is EvalKeep.LOGITS else ID_BYTES
    return per * positions, ID_BYTES * positions


def eval_forward(spec: ModelSpec, plan: TrainPlan, stream: int, linear_out: int, logits_bytes: int,
                 loss_bytes: int | None = None) -> StepTensors:
    """The evaluation forward's large tensors per token, as the allocator sees them: each block's internals made
    and freed inside the block (no_grad: nothing is saved), then the head's. ``stream``: bytes of the residual
    stream; ``linear_out``: of a linear's output; ``logits_bytes``: of the head's output; ``loss_bytes``: of the
    loss's log_softmax (default: fp32 for a causal LM, ForCausalLMLoss; a plain loop's own dtype, [M7])."""
    h, e, s = spec.hidden_size, linear_out, plan.longest_batch_len
    q_dim, kv_dim = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    k_exp = max(spec.experts_per_token, 1)
    # MLP: act(gate), up and their product (gated), or the fc output and its activation, exist at once
    mlp = (3 if spec.mlp_gated else 2) * e * spec.intermediate_size * k_exp
    attn = e * (2 * q_dim + 2 * kv_dim)  # q, k, v and the attention output
    if plan.attention is Attention.EAGER:
        attn += (4 + e) * spec.num_heads * s  # fp32 softmax and its 16-bit cast, per head, per key
    block = (stream * h, stream * h, max(mlp, attn))  # the block input, the normed input, the larger half
    vocab = spec.vocab_size if spec.task is not Task.SEQ_CLS else max(spec.num_labels, 1)
    # the head: final norm output, logits, the loss's upcast (causal LM: ForCausalLMLoss, fp32) and log_softmax
    if loss_bytes is None:
        loss_bytes = 4 if spec.task is Task.CAUSAL_LM else logits_bytes
    upcast = loss_bytes * vocab if loss_bytes > logits_bytes else 0
    head = (stream * h, logits_bytes * vocab, upcast, loss_bytes * vocab)
    return StepTensors(spec.num_layers, (), block, tuple(n for n in head if n), (), (), ())


def estimate_eval(spec: ModelSpec, plan: TrainPlan, *, held: int, stream: int, linear_out: int,
                  logits_bytes: int, train_step: StepTensors, loss_bytes: int | None = None) -> EvalMemory | None:
    """The in-run evaluation's peak per GPU, or None when the plan prices none (``eval_batch_size`` None).

    ``held``: bytes training keeps through the evaluation (weights, optimizer states, autocast copies, sharding
    buffers, the cuBLAS workspace); ``train_step``: the training micro-batch's tensors (the allocator's cache
    before the evaluation)."""
    if plan.eval_batch_size is None:
        return None
    tokens = eval_tokens(plan)
    samples = plan.eval_samples or plan.eval_batch_size
    batches = math.ceil(samples / (plan.eval_batch_size * plan.gpus))  # the sampler splits them over the GPUs
    window = min(batches, plan.eval_accum or batches)  # batches whose outputs are on the GPU at once
    forward = eval_forward(spec, plan, stream, linear_out, logits_bytes, loss_bytes)
    program, live = step_program(forward, tokens)
    pred, label = kept_per_batch(spec, plan, logits_bytes)
    # the last batch of a window: its forward beside the earlier batches' outputs, then each concatenation holds
    # the old tensor, the batch's and the new one
    before = (window - 1) * (pred + label)
    concat = max(2 * window * pred + window * label, window * pred + 2 * window * label) if pred or label else 0
    kept_peak = max(live + before, concat)
    kept = concat if concat > live + before else before
    live_at_peak = kept_peak - kept
    extra = _replayed_extra(plan, train_step, program, batches, window, pred, label)
    return EvalMemory(live=live_at_peak, kept=kept, allocated=held + kept_peak, extra_reserved=extra,
                      batches=batches)


def _replayed_extra(plan: TrainPlan, train_step: StepTensors, program: Program, batches: int, window: int,
                    pred: int, label: int) -> int:
    """Bytes of segments the evaluation maps beyond the cache two training micro-batches leave: its first batch,
    then the last batch of a window beside the outputs kept so far and each concatenation (old, batch, joined).
    The joined tensors of the earlier batches are not replayed one by one: each leaves the segment of the one
    before it wholly free, and the allocator returns wholly free segments to CUDA when a request fails
    (release_cached_blocks), so they never decide whether the evaluation fits."""
    alloc = CachingAllocator(plan.expandable_segments)
    train_program = step_program(train_step, plan.batch_size * plan.longest_batch_len)[0]
    alloc.run(train_program)
    alloc.run(train_program)
    cached = alloc.reserved
    alloc.run(program)
    if batches > 1:
        old = [alloc.malloc((window - 1) * size) if size and window > 1 else None for size in (pred, label)]
        alloc.run(program)
        for size, held in zip((pred, label), old, strict=True):
            if size:
                new = alloc.malloc(size)
                joined = alloc.malloc(window * size) if window > 1 else None
                alloc.release(held)
                alloc.release(new if joined is not None else None)
    return max(alloc.peak_reserved - cached, 0)


def with_evaluation(ev: EvalMemory, allocated: int, reserved: int, breakdown: dict[str, int],
                    slack: float) -> tuple[int, int, dict[str, int]]:
    """The step's (allocated, reserved, breakdown) with an in-run evaluation (gpuwork.estimate.eval_memory): the
    reserved peak is the training's cache plus the segments the evaluation maps beyond it, at least the
    evaluation's own allocated peak with the allocator's ``slack``; where the evaluation's allocated peak is the
    larger, the breakdown holds its terms (gradients freed, the evaluation's forward and kept outputs)."""
    reserved_by = {k: breakdown.get(k, 0) for k in ("allocator_fragmentation", "stream_pools")}
    new_reserved = max(reserved + ev.extra_reserved,
                       int(ev.allocated * (1 + slack)) + sum(reserved_by.values()))
    if ev.allocated <= allocated:
        out = dict(breakdown)
        if new_reserved > reserved:
            out["eval_segments"] = new_reserved - reserved
        return allocated, new_reserved, out
    kept_terms = ("weights", "optimizer_states", "autocast_weight_copies", "sharding_buffers", "cublas_workspace")
    out = {k: breakdown[k] for k in kept_terms if k in breakdown}
    out.update(eval_forward=ev.live, eval_predictions=ev.kept)
    out["sharding_buffers"] = ev.allocated - sum(v for k, v in out.items() if k != "sharding_buffers")
    out["allocator_cache"] = new_reserved - ev.allocated - sum(reserved_by.values())
    out.update({k: v for k, v in reserved_by.items() if v})
    return ev.allocated, new_reserved, out


__all__ = ["EvalMemory", "ID_BYTES", "estimate_eval", "eval_forward", "eval_tokens",
           "kept_per_batch",
           "with_evaluation"]
