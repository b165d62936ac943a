"""The operations of one linear layer in a step (``linear_forward``) and the two op constructors every op list
uses: a GEMM (``gemm_op``) and an element-wise, memory-bound kernel (``mem_op``).

A linear runs as its stack and plan say: a 16-bit GEMM with autocast's copies, a 4-bit base dequantised for it
(QLoRA), FP8 with its cast-transpose kernels (``TrainPlan.fp8_linear``, docs/fp8.md), and peft's LoRA branch beside
it. ``ops`` builds the step from these; kept apart so that the step's list reads as the model's structure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from gpuwork.estimate.memory_dtypes import fsdp_16bit_compute, fsdp_param_dtype
from gpuwork.estimate.op import Backward, Kind, Op, Phase, StackKernels
from gpuwork.estimate.quant import dequant_4bit_chain
from gpuwork.plan import TrainPlan


@dataclass(frozen=True, slots=True)
class GemmShape:
    """One GEMM of a linear layer, ``C[m, n] = A[m, k] @ B[k, n]``: its sizes, the dtype it runs in and the bytes
    per element of A (the input), C (the output) and B (the weight)."""

    m: int
    n: int
    k: int
    dtype: str  # "bf16" | "fp16" | "fp32" | "fp8" (TrainPlan.fp8_linear)
    in_bytes: float
    out_bytes: float
    w_bytes: float


def gemm_op(name: str, phase: Phase, shape: GemmShape, count: int, trains: bool) -> Op:
    """C[m, n] = A[m, k] @ B[k, n]: 2mnk FLOPs; reads A and B, writes C."""
    m, n, k = shape.m, shape.n, shape.k
    return Op(name, Kind.MATMUL, phase, 2.0 * m * n * k,
              float(shape.in_bytes * m * k + shape.w_bytes * k * n + shape.out_bytes * m * n), 1, count, shape.dtype,
              m, n, backward=Backward.BOTH_GRADS if trains else Backward.INPUT_GRAD)


class Elementwise(NamedTuple):
    """The backward of an element-wise op: its bytes as a multiple of the forward's, its kernels (-1: as many as
    the forward) and the share of its bytes that stream strided."""

    factor: float = 2.0
    launches: int = -1
    strided: float = -1.0  # the share of its bytes moved by unvectorised kernels (-1: as the forward's)


ELEMENTWISE = Elementwise()


def mem_op(name: str, phase: Phase, elements: float, bytes_per_element: float, launches: int, count: int,
         backward: Backward | Elementwise = ELEMENTWISE, strided: float = 0.0) -> Op:
    """An element-wise (memory-bound) op; its backward reads the saved input and the incoming gradient and
    writes a gradient (twice the forward's bytes) unless ``backward`` says otherwise. ``strided``: the share of its
    bytes moved by kernels torch cannot vectorise (``Op.strided_share``)."""
    if isinstance(backward, Elementwise):
        return Op(name, Kind.MEMORY, phase, 0.0, float(elements * bytes_per_element), launches, count,
                  backward_factor=backward.factor, backward_launches=backward.launches, strided_share=strided,
                  backward_strided_share=backward.strided)
    return Op(name, Kind.MEMORY, phase, 0.0, float(elements * bytes_per_element), launches, count, backward=backward,
              strided_share=strided)


@dataclass(frozen=True)
class LinearPass:
    """What the linears of one pass over a block share (``linear_forward``)."""

    plan: TrainPlan
    phase: Phase
    count: int  # runs per optimizer step
    rows: int  # tokens per run (the GEMM's m)
    e: int  # bytes of the compute dtype
    w_b: int  # bytes of a base weight as the GEMM reads it
    mm: str  # the base GEMM's dtype
    adapter_mm: str  # the LoRA GEMMs' dtype
    a_b: int  # bytes of an adapter weight
    stack: StackKernels
    trains: bool  # the base weights get a gradient (full / freeze blocks)
    autocast: bool = False  # eager torch.autocast runs the linears (no compiler folds their casts)


@dataclass(frozen=True)
class LinearShape:
    """One linear of the pass: k inputs, n outputs, the bytes of its input activation."""

    name: str
    k: int
    n: int
    x_b: int
    quantized: bool = False  # a 4-bit base weight (QLoRA)
    adapted: bool = False  # carries a LoRA adapter
    bias: bool = False


def linear_forward(lp: LinearPass, lin: LinearShape) -> list[Op]:
    """A linear's forward: the base GEMM (with 4-bit dequantisation or autocast copies) and its LoRA
    adapter.

    Autocast casts per call (torch aten/src/ATen/autocast_mode.cpp ``cached_cast``): the fp32 weight and
    bias are leaves that require grad, so each is cast once per autocast context and cached; an fp32
    activation is not a leaf, so every linear reading it casts it again (q, k and v each cast the norm's
    output), and the cast's backward converts the 16-bit input gradient back to fp32. A trained bias
    gets its gradient from a reduction over the output gradient (autograd's sum_to of the broadcast
    bias), one kernel beside the two GEMMs.
    """
    plan, phase, count, t, e, w_b, mm = lp.plan, lp.phase, lp.count, lp.rows, lp.e, lp.w_b, lp.mm
    adapter_mm, a_b, st, trains, autocast = lp.adapter_mm, lp.a_b, lp.stack, lp.trains, lp.autocast
    name, k, n, x_b, bias = lin.name, lin.k, lin.n, lin.x_b, lin.bias
    casts_weight = trains and plan.precision.is_mixed and not fsdp_16bit_compute(plan)  # FSDP gathers 16-bit weights
    out: list[Op] = []
    if lin.quantized:
        # bnb Linear4bit: cast x to the compute dtype, dequantize the 4-bit weight (absmax first with
        # double quantisation), GEMM, cast the output back to the input dtype (MatMul4Bit.forward);
        # the backward dequantizes again for the input gradient (MatMul4Bit.backward)
        c = plan.precision.compute_bytes  # bnb_4bit_compute_dtype: the plan's 16-bit dtype
        if x_b != c:
            out.append(mem_op(f"{name} cast to compute dtype", phase, t * k, x_b + c, 1, count))
        per_weight, kernels = dequant_4bit_chain(c, plan.double_quant)
        out.append(mem_op(f"{name} dequantize 4-bit", phase, k * n, per_weight, kernels, count, backward=Backward.REPEAT))
        out.append(gemm_op(f"{name}", phase, GemmShape(t, n, k, mm, c, c, c), count, trains=False))
        if x_b != c:
            out.append(mem_op(f"{name} cast back", phase, t * n, c + x_b, 1, count))
    elif plan.fp8_linear:  # the weight read as stored: the fp32 master where autocast would have copied it
        out += _fp8_linear(lp, lin, 4 if casts_weight else w_b)
    else:
        if casts_weight:  # autocast copies each fp32 master weight (and bias) to 16 bits, once per forward
            out.append(mem_op(f"{name} weight cast (autocast)", phase, k * n + (n if bias else 0), 4 + w_b,
                            1 + int(bias), count, backward=Backward.GRAD_CAST))
        in_b = x_b
        if autocast and x_b != e:  # an fp32 activation cast to 16 bits for this linear alone
            out.append(mem_op(f"{name} input cast (autocast)", phase, t * k, x_b + e, 1, count, backward=Elementwise(1.0)))
            in_b = e
        gemm = gemm_op(name, phase, GemmShape(t, n, k, mm, in_b, e, w_b), count, trains=trains)
        if bias and trains:
            gemm = replace(gemm, bias_bytes=float(t * n * e + n * 4))
        out.append(gemm)
    if lin.adapted:
        r = plan.lora_r
        if st.fused_lora:
            out.append(gemm_op(f"{name} LoRA A", phase, GemmShape(t, r, k, adapter_mm, e, e, a_b), count, trains=True))
            out.append(gemm_op(f"{name} LoRA B (+ scale, add)", phase, GemmShape(t, n, r, adapter_mm, e, e, a_b), count,
                             trains=True))
        else:
            out += _peft_lora_branch(lp, lin, x_b if lin.quantized else e)
    return out


# bytes an FP8 cast-transpose writes per element it reads: the FP8 copy and its transpose (Hopper's FP8 GEMMs take
# both operands K-major, so each tensor a backward GEMM reads the other way is kept transposed too; docs/fp8.md)
FP8_CAST_WRITES = 2


def _fp8_linear(lp: LinearPass, lin: LinearShape, stored_w: int) -> list[Op]:
    """A linear under FP8 (TrainPlan.fp8_linear; Transformer Engine's te.Linear, docs/fp8.md): its input and its
    weight each cast to FP8 with the transpose beside it (one fused cast-transpose kernel each; the amax for the next
    scale is taken in the same pass), the GEMM on the FP8 operands writing the compute dtype, and in the backward
    the output gradient cast the same way before the input- and weight-gradient GEMMs, both in FP8. The weight is
    read as stored (an fp32 master weight under mixed precision: no 16-bit autocast copy is made), once per
    forward (``stored_w`` bytes each); the input as it arrives (an fp32 activation is cast to FP8 directly)."""
    phase, count, t, e = lp.phase, lp.count, lp.rows, lp.e
    name, k, n, x_b = lin.name, lin.k, lin.n, lin.x_b
    cast = FP8_CAST_WRITES
    grad_cast = n * (e + cast)  # the output gradient's cast-transpose, per token
    out = [
        mem_op(f"{name} FP8 cast (weight)", phase, k * n, stored_w + cast, 1, count, backward=Backward.NONE),
        mem_op(f"{name} FP8 cast (input; output gradient)", phase, t * k, x_b + cast, 1, count,
             backward=Elementwise(grad_cast / (k * (x_b + cast)), 1)),
    ]
    # a bias is added in the GEMM's epilogue and its gradient summed inside the output gradient's cast
    return [*out, gemm_op(name, phase, GemmShape(t, n, k, "fp8", 1, e, 1), count, trains=lp.trains)]


def _peft_lora_branch(lp: LinearPass, lin: LinearShape, r_b: int) -> list[Op]:
    """peft's LoRA branch beside a base linear with input ``lin.x_b`` and result ``r_b`` bytes an element (peft
    lora/layer.py and bnb.py; docs/time_misses.md#what-autocast-does-to-a-qlora-and-a-lora-layer). Each cast's
    backward converts the gradient back; so does an add's to an operand of another dtype."""
    phase, count, t, st = lp.phase, lp.count, lp.rows, lp.stack
    name, k, n, x_b, r = lin.name, lin.k, lin.n, lin.x_b, lp.plan.lora_r
    g_b = lp.a_b  # the dtype F.linear runs in: autocast's 16 bits, or the adapters' own
    peft = st.adapters_fp32 and not st.fuse_elementwise  # peft's eager layer with its fp32 adapters
    w_b = 4 if peft and not fsdp_param_dtype(lp.plan) else g_b  # the adapters' dtype as the layer sees it
    if not peft:  # a stack's own adapters (or a compiler's kernels) on the compute dtype: casts only between dtypes
        x_b = r_b = lp.e
    out: list[Op] = []
    if lin.quantized and peft:  # "defensively clone" the 4-bit result; the clone's backward launches nothing
        out.append(mem_op(f"{name} LoRA result clone", phase, t * n, 2 * r_b, 1, count, backward=Backward.NONE))
    x1_b = x_b if lin.quantized and lp.autocast else w_b  # peft casts x to the adapters' dtype (4-bit: without autocast)
    if x1_b != x_b:
        out.append(mem_op(f"{name} LoRA input cast", phase, t * k, x_b + x1_b, 1, count, backward=Elementwise(1.0)))
    if lp.plan.lora_dropout > 0:  # backward: one multiply by the saved mask
        out.append(mem_op(f"{name} LoRA dropout", phase, t * k, 2 * x1_b + 1, 1, count, backward=Elementwise(1.0)))
    if x1_b != g_b:  # autocast's 16-bit copy of the fp32 input
        out.append(mem_op(f"{name} LoRA input cast (autocast)", phase, t * k, x1_b + g_b, 1, count,
                        backward=Elementwise(1.0)))
    out.append(gemm_op(f"{name} LoRA A", phase, GemmShape(t, r, k, lp.adapter_mm, g_b, g_b, g_b), count, trains=True))
    out.append(gemm_op(f"{name} LoRA B", phase, GemmShape(t, n, r, lp.adapter_mm, g_b, g_b, g_b), count, trains=True))
    # x scaling (in g_b), then the 4-bit layer without autocast casts the product to r_b before adding; otherwise
    # result + product type-promotes to p and lora.Linear casts the sum back to r_b
    cast_first = lin.quantized and not lp.autocast and g_b != r_b
    a_b = r_b if cast_first else g_b  # the product as the add reads it
    p = max(r_b, a_b)
    cast_after = not lin.quantized and p != r_b
    forward_bytes = 2 * g_b + ((g_b + r_b) if cast_first else 0) + (r_b + a_b + p) + ((p + r_b) if cast_after else 0)
    # backward: the scaling's multiply, each cast's conversion back, the add's gradient to an operand of another dtype
    backward_bytes = (2 * g_b + ((r_b + g_b) if cast_first else 0) + ((p + a_b) if p != a_b else 0)
                      + (2 * (p + r_b) if cast_after else 0))
    casts = int(cast_first) + int(cast_after)
    back_launches = 1 + int(cast_first) + int(p != a_b) + 2 * int(cast_after)
    out.append(mem_op(f"{name} LoRA scale, add, cast", phase, t * n, forward_bytes, 2 + casts, count,
                    backward=Elementwise(backward_bytes / forward_bytes, back_launches)))
    return out


__all__ = ["ELEMENTWISE", "FP8_CAST_WRITES", "Elementwise", "GemmShape", "LinearPass", "LinearShape", "gemm_op",
           "linear_forward", "mem_op"]
