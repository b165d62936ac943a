"""Hand-written element-wise ops of a model of one's own: what autograd keeps for them where they differ from the fused
torch ops a Hugging Face model calls (docs/memory_misses.md, "Hand-written softmax and SiLU").

A config.json states them with two keys (read into ``ModelSpec.extras`` by ``gpuwork.facts.model``):

- ``softmax_impl: "composite"``: eager attention takes its softmax as ``x - max``, ``exp``, ``sum`` and a division (the
  Stanford CS336 staff ``nn_utils.softmax``), not ``torch.softmax``. ``exp`` saves its output and the division's output
  is saved by the probabilities-times-V matmul: two s x s tensors per head, where ``torch.softmax`` saves one.
- ``hidden_act_impl: "composite"``: SiLU written as ``x * torch.sigmoid(x)`` (the staff ``model.silu``): ``sigmoid``
  saves its output and the product saves ``x`` and it, one intermediate-sized tensor more than ``F.silu``.

Pure: no torch, no I/O.
"""

from __future__ import annotations

from gpuwork.facts.spec import COMPOSITE, ModelSpec


def composite_softmax(spec: ModelSpec) -> bool:
    """The model's eager attention computes its softmax op by op (x - max, exp, sum, divide)."""
    return spec.extras.get("softmax_impl") == COMPOSITE


def composite_silu(spec: ModelSpec) -> bool:
    """The model's SiLU is x * sigmoid(x), two saved tensors where F.silu saves one."""
    return spec.extras.get("hidden_act_impl") == COMPOSITE


def _exp_bytes(scores_bytes: int, autocast: bool) -> int:
    # CUDA autocast lists exp among the ops it runs in fp32; without autocast exp keeps the scores' dtype
    return 4 if autocast else scores_bytes


def softmax_saved(scores_bytes: int, autocast: bool) -> int:
    """Bytes per head per (query, key) pair a hand-written softmax leaves saved for backward: exp's output (ExpBackward
    keeps its result; the division's backward keeps the same numerator and the row sums) and the probabilities the
    P @ V matmul keeps, in the matmul's dtype (under autocast its 16-bit cast copy; the fp32 quotient is not kept).
    fp32: 4 + 4; bf16 autocast: 4 + 2; pure 16-bit: 2 + 2. ``scores_bytes``: the QK^T matmul's output dtype."""
    return _exp_bytes(scores_bytes, autocast) + scores_bytes


def softmax_row_saved(scores_bytes: int, autocast: bool) -> int:
    """Bytes per head per token a hand-written softmax saves besides its s x s tensors: torch.max's int64 indices
    (its backward scatters the gradient through them) and the row sums the division keeps, in exp's dtype."""
    return 8 + _exp_bytes(scores_bytes, autocast)


def softmax_backward_transient(scores_bytes: int, autocast: bool) -> int:
    """Bytes per head per (query, key) pair alive at once, beyond the saved ones, while backward runs through a
    hand-written softmax: four s x s buffers in exp's dtype (the incoming gradient of the quotient, the numerator's
    gradient and the product temporaries of the division's derivative) and, under autocast, the 16-bit gradient of
    the matmul's cast copy. Counted with PyTorch's MemTracker on the CPU over the staff's op sequence (fp32 16, bf16
    8, CUDA autocast's dtypes 18 bytes); autograd runs the same derivative formulas on CUDA."""
    return 4 * _exp_bytes(scores_bytes, autocast) + (scores_bytes if autocast else 0)
