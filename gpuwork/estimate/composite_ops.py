"""Hand-written element-wise ops of a model of one's own: what autograd keeps for them where they differ from the fused
torch ops a Hugging Face model calls (docs/memory_misses.md, "Hand-written softmax and SiLU").

A config.json states them with three keys (read into ``ModelSpec.extras`` by ``gpuwork.facts.model``):

- ``softmax_impl: "composite"``: eager attention takes its softmax as ``x - max``, ``exp``, ``sum`` and a division (the
  Stanford CS336 staff ``nn_utils.softmax``), not ``torch.softmax``. ``exp`` saves its output and the division's output
  is saved by the probabilities-times-V matmul: two s x s tensors per head, where ``torch.softmax`` saves one.
- ``hidden_act_impl: "composite"``: SiLU written as ``x * torch.sigmoid(x)`` (the staff ``model.silu``): ``sigmoid``
  saves its output and the product saves ``x`` and it, one intermediate-sized tensor more than ``F.silu``.
- ``norm_impl: "composite"``: a LayerNorm written as ``scale * (x - mean) / sqrt(var + eps) + shift`` (the from-scratch
  GPT of Raschka's "Build a Large Language Model", copied into many repositories), not ``F.layer_norm``: ``var`` saves
  ``x``, the division its numerator and the row's sqrt, the scale's product the quotient (``layer_norm_saved``); 8
  kernels forward and 21 backward where torch's native LayerNorm runs one each way (``l2_reuse.layer_norm_chains``).
  An RMSNorm is priced op by op already (transformers writes it so), so the key changes LayerNorm models only.

The time model (``estimate.ops``) prices the kernels the composite forms launch, forward and backward
(``softmax_chain_cost``, ``silu_cost``; docs/kernels.md, "Hand-written softmax and SiLU").

Pure: no torch, no I/O.
"""

from __future__ import annotations

from typing import NamedTuple

from gpuwork.facts.spec import COMPOSITE, ModelSpec


def composite_softmax(spec: ModelSpec) -> bool:
    """The model's eager attention computes its softmax op by op (x - max, exp, sum, divide)."""
    return spec.extras.get("softmax_impl") == COMPOSITE


def composite_silu(spec: ModelSpec) -> bool:
    """The model's SiLU is x * sigmoid(x), two saved tensors where F.silu saves one."""
    return spec.extras.get("hidden_act_impl") == COMPOSITE


def composite_layer_norm(spec: ModelSpec) -> bool:
    """The model's LayerNorm is written op by op (mean, var, subtract, divide by the row's sqrt, scale, shift)."""
    return spec.norm != "rms" and spec.extras.get("norm_impl") == COMPOSITE


def layer_norm_saved(stream_bytes: int, hidden: int, weight_trains: bool) -> int:
    """Bytes per token an op-by-op LayerNorm keeps for backward: its input (var's), the centred input (the
    division's numerator), the quotient when the scale trains (the scale's product saves it for the scale's
    gradient), and one sqrt a row (the division's denominator, sqrt's result), all in the stream's dtype. torch's
    native kernel keeps its input and two fp32 values a row."""
    return (2 + int(weight_trains)) * stream_bytes * hidden + stream_bytes


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


class ChainCost(NamedTuple):
    """Bytes per element read plus written and kernel launches of an element-wise chain, each way."""

    forward_bytes: int
    forward_launches: int
    backward_bytes: int
    backward_launches: int


def softmax_chain_cost(scores_bytes: int, autocast: bool) -> ChainCost:
    """The staff attention core between Q·K^T and P·V, per element of the s x s scores: the scaling by sqrt(d_k)
    (a division by a Python number), ``torch.where(mask, scores, -inf)`` (reads the bool mask, 1 byte), then
    ``torch.max`` (a row reduction: reads the scores, writes row values and indices, left out), the broadcast
    subtract, ``exp``, ``sum`` (a row reduction) and the broadcast division. Under CUDA autocast ``exp`` and ``sum``
    are on the fp32 list: one cast of the 16-bit differences up before ``exp`` and, for the P·V einsum, one cast of
    the fp32 quotient down (the division follows its fp32 inputs).

    Backward (tools/autograd/derivatives.yaml): the cast back up; div's gradient for its numerator (grad / sums, one
    kernel) and for the sums (``-grad * ((self / other) / other)``: neg, div, div, mul, then a row sum to the
    (..., 1) shape); sum's expand is a view, its gradient added in place into the numerator's (one add); exp's
    ``grad * result``; the cast back down; sub's gradient for the row max (neg and a row sum); max's
    ``value_selecting_reduction_backward`` (a zero-filled s x s tensor written, a scatter of one value a row); the
    two gradients of the scores added; ``where``'s ``where(mask, grad, 0)``; the scaling's ``grad / c``.
    fp32: 7 kernels and 49 bytes forward, 15 kernels and 113 bytes backward (tests/test_composite_time.py counts the
    kernels with the profiler on the CPU)."""
    e, x = scores_bytes, _exp_bytes(scores_bytes, autocast)
    up, down = (e + x, x + e) if autocast else (0, 0)  # the casts around exp, and P·V's 16-bit copy
    casts = 2 if autocast else 0
    # scale, where (+ mask), max, sub, [cast], exp, sum, div, [cast]
    forward = 2 * e + (2 * e + 1) + e + 2 * e + up + 2 * x + x + 2 * x + down
    # [cast], div self, div other (neg, div, div, mul, row sum), add, exp mul, [cast], sub other (neg, row sum),
    # max (zero fill; the scatter writes a value a row), add, where (+ mask), scale
    backward = (
        down
        + 2 * x
        + (2 * x + 2 * x + 2 * x + 3 * x + x)
        + 2 * x
        + 3 * x
        + up
        + (2 * e + e)
        + e
        + 3 * e
        + (2 * e + 1)
        + 2 * e
    )
    return ChainCost(forward, 7 + casts, backward, 15 + casts)


def silu_cost(act_bytes: int) -> ChainCost:
    """``x * torch.sigmoid(x)`` per element of the gate: sigmoid (reads x, writes s) and the product (reads x and s,
    writes one): 2 kernels, 5 bytes of the activations' width. Backward: the product's two gradients (``grad * s``,
    ``grad * x``), ``sigmoid_backward(grad, s)`` and the add of x's two gradients: 4 kernels, 12 widths, where
    F.silu's ``silu_backward`` is one kernel of 3. Sigmoid is on neither autocast list: no casts."""
    a = act_bytes
    return ChainCost(2 * a + 3 * a, 2, 3 * a + 3 * a + 3 * a + 3 * a, 4)
