"""What torch's deterministic mode adds to a step: the fills of freshly allocated memory.

With ``torch.use_deterministic_algorithms(True)`` and ``torch.utils.deterministic.fill_uninitialized_memory`` (on by
default), torch's native ``empty`` / ``empty_strided`` (and ``resize_`` growing a storage) fill every new tensor
with NaN (integers: their maximum) before the op writes it: one extra write of the tensor, one kernel. Structured
kernels (matmuls, element-wise and reduction ops, log_softmax, nll_loss) allocate their outputs through
``at::detail::empty_*``, which does not fill. What does fill in a decoder step, measured under the profiler on a
Llama-like model (tests/test_deterministic.py; docs/time_misses.md "Deterministic mode, measured"): the copies
``.to()`` and ``clone`` make (RMSNorm's fp32 copy and the cast back, and their backward; the logits' fp32 copy and
its gradient's cast; the projection-layout clones of the q/k gradients), ``zeros`` (rotary's two
``slice_backward`` per tensor; the embedding's dense gradient), the fused attention kernels' outputs and
gradients, and the embedding lookup's output.

Pure: ``Op``s (``estimate.op``); no import of ``ops`` (no cycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from gpuwork.estimate.op import Backward, Kind, Op, Phase
from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import Attention, Method, Precision, TrainPlan

# the head's casts that ``ops`` prices (16-bit logits to fp32 for the loss, and its gradient back): each writes a
# freshly allocated tensor; bytes an element read + written by the op, and written into the new tensor
_LOGIT_CASTS = {"logits to fp32": ("forward", 6, 4), "logits gradient cast": ("backward", 6, 2)}


class Kernels(Protocol):
    """What is read here of ``ops.StackKernels``: which eager chains a fused kernel or a compiler replaces."""

    @property
    def fused_norm(self) -> bool: ...
    @property
    def fused_rope(self) -> bool: ...
    @property
    def fuse_elementwise(self) -> bool: ...


class FillWidths(NamedTuple):
    """Bytes an element: the residual stream, a linear's output, what the attention kernel reads and writes."""

    s_b: int
    e: int
    attn_b: int


def _fill(name: str, phase: str, nbytes: float, launches: int, count: int) -> Op:
    return Op(f"deterministic fill: {name}", Kind.MEMORY, Phase(phase), flops=0.0, bytes=float(nbytes),
              launches=launches, count=count, backward=Backward.NONE)


def _block_rows(plan: TrainPlan, spec: ModelSpec, w: FillWidths, norm_casts: bool, eager_rope: bool) -> list[Op]:
    """One block's fills, per micro-batch (forward, its recompute, backward)."""
    t = plan.tokens_per_micro_batch
    h, mb = spec.hidden_size, plan.grad_accum
    q_dim, kv_dim = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    layers = spec.num_layers
    grad_layers = plan.gradient_blocks(layers)
    norms = 2 * spec.norms_per_sublayer
    # RMSNorm's x.to(float32) and the cast back (16-bit stream): two new tensors a norm, again in backward
    norm_bytes = norms * t * h * (4 + w.s_b) if norm_casts else 0
    # a fused kernel's output and logsumexp; its backward's dq, dk, dv (eager attention's matmuls and softmax
    # are structured kernels)
    fused = plan.attention is not Attention.EAGER and not (plan.precision is Precision.FP32 and plan.attention.is_flash)
    attn_fwd = (t * q_dim * w.attn_b + t * spec.num_heads * 4) if fused else 0
    attn_bwd = t * (q_dim + 2 * kv_dim) * w.attn_b if fused else 0
    # rotary's backward: slice_backward's zeros twice per q and k, then the clone to the projection layout
    rope_bwd = 3 * t * (q_dim + kv_dim) * w.e if eager_rope else 0
    fwd = norm_bytes + attn_fwd
    fwd_launches = (2 * norms if norm_casts else 0) + (2 if fused else 0)
    bwd_launches = (2 * norms if norm_casts else 0) + (3 if fused else 0) + (6 if eager_rope else 0)
    rows = [_fill("blocks", "forward", fwd, fwd_launches, layers * mb)]
    if plan.grad_checkpointing:
        rows.append(_fill("blocks", "recompute", fwd, fwd_launches, plan.checkpointed_blocks(layers) * mb))
    rows.append(_fill("blocks", "backward", norm_bytes + attn_bwd + rope_bwd, bwd_launches, grad_layers * mb))
    return rows


def fill_rows(plan: TrainPlan, spec: ModelSpec, ops: Sequence[Op], stack: Kernels, widths: FillWidths) -> list[Op]:
    """The fills a deterministic step adds to ``ops`` (the step's other operations), one memory-bound write each;
    none when ``plan.deterministic`` is off."""
    if not plan.deterministic:
        return []
    fuse = stack.fuse_elementwise
    # transformers' eager RMSNorm on a 16-bit stream casts; its eager rotary embedding slices (rotate_half)
    norm_casts = spec.norm == "rms" and not (stack.fused_norm or fuse) and widths.s_b < 4
    eager_rope = spec.extras.get("position_embedding") == "rope" and not (stack.fused_rope or fuse)
    t, h, mb = plan.tokens_per_micro_batch, spec.hidden_size, plan.grad_accum
    final_norm = t * h * (4 + widths.s_b) if norm_casts else 0  # one final norm in every family, as ops prices it
    rows = _block_rows(plan, spec, widths, norm_casts, eager_rope)
    head: dict[str, float] = {"forward": t * h * widths.s_b + final_norm, "backward": final_norm}  # + the lookup's output
    launches = {"forward": 1 + (2 if norm_casts else 0), "backward": 2 if norm_casts else 0}
    for op in ops:
        if op.name in _LOGIT_CASTS and op.count:
            phase, per_element, written = _LOGIT_CASTS[op.name]
            head[phase] += op.bytes / per_element * written
            launches[phase] += 1
    if plan.method in (Method.FULL, Method.SCRATCH):  # embedding_dense_backward's zeros: the whole table
        head["backward"] += spec.vocab_size * h * (4 if plan.precision.is_mixed else widths.s_b)
        launches["backward"] += 1
    rows += [_fill("embedding and head", phase, nbytes, launches[phase], mb) for phase, nbytes in head.items()
             if nbytes > 0]
    return [r for r in rows if r.count > 0 and r.bytes > 0]


__all__ = ["FillWidths", "Kernels", "fill_rows"]
