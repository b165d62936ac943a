"""One optimizer step as a list of operations: FLOPs, bytes moved and kernel launches of each.

``step_ops(plan, spec, stack)`` walks the step the way PyTorch runs it for a Hugging Face model —
embedding, every block's forward (norms, projections, rotary, attention by implementation, MLP,
residuals, dropout, LoRA adapters, 4-bit dequantisation), the loss and its logits, the backward
(input gradients wherever gradients flow, weight gradients only where weights train), the
recompute of gradient checkpointing, gradient accumulation, clipping and the optimizer update —
and returns each operation once with how often it runs per optimizer step on one GPU.

It reuses the memory estimator's reading of the block (``estimate.memory``: which linears read
which tensor, the dtypes of the stream and of linear outputs under each precision, which linears
carry adapters), so time and memory see the same block. Pure: no torch, no I/O.

Kernel counts follow the eager implementations (transformers' LlamaRMSNorm and
apply_rotary_pos_emb, peft's lora.Linear.forward, bitsandbytes' MatMul4Bit, torch.optim's
_multi_tensor_adamw); the stack (``StackKernels``) says which of them a fused library or a compiler
replaces by one kernel. Bytes are what each kernel reads plus writes.

MoE experts: today's fused expert tensors are counted as one GEMM per expert over its share of tokens;
``StackKernels.moe_experts = "loop"``: transformers 4.x's loop over ``nn.Linear`` experts (``_moe_loop_forward``).

Limitations: experts get tokens in equal shares (t x top-k / experts rows each); adapters on expert
linears are not counted; sliding-window attention is counted as full attention.
"""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

from gpuwork.estimate.composite_ops import (
    composite_layer_norm,
    composite_silu,
    composite_softmax,
    silu_cost,
    softmax_chain_cost,
)
from gpuwork.estimate.deterministic import FillWidths, fill_rows
from gpuwork.estimate.l2_reuse import (
    broadcast_bytes,
    chain_bytes,
    layer_norm_chains,
    layer_norm_l2,
    rms_norm_chains,
    rms_norm_l2,
    rotary_l2,
    silu_l2,
    softmax_l2,
)
from gpuwork.estimate.linear_groups import block_groups
from gpuwork.estimate.linear_ops import (
    Elementwise,
    GemmShape,
    LinearPass,
    LinearShape,
    gemm_op,
    linear_forward,
    mem_op,
)
from gpuwork.estimate.memory_dtypes import fsdp_16bit_compute, plan_dtypes
from gpuwork.estimate.memory_stacks import masked_sdpa
from gpuwork.estimate.mlm_head import HeadWidths, mlm_head_rows
from gpuwork.estimate.op import Backward, Kind, MoeExperts, Op, Phase, StackKernels
from gpuwork.estimate.optimizer_ops import optimizer_ops, param_tensors
from gpuwork.estimate.recompute import EAGER_MATMULS, FUSED_KERNEL, fused_attention, kept_op_names
from gpuwork.estimate.sdpa_backend import op_kernel
from gpuwork.facts.hashed import HashedTuple
from gpuwork.facts.spec import (
    Linear,
    ModelSpec,
    count_params,
    lora_target_linears,
    quantized_linears,
)
from gpuwork.plan import Method, Precision, Recompute, Task, TrainPlan


def matmul_dtype(plan: TrainPlan) -> str:
    if plan.precision is Precision.FP32:
        return "fp32"
    return "fp16" if plan.precision in (Precision.FP16, Precision.FP16_MIXED) else "bf16"


class OpList(HashedTuple):
    """The step's operations (``price_ops`` caches prices by them)."""


# the fields of a plan that shape its step (the data and schedule fields below them only scale the run)
_PLAN_FIELDS = [f.name for f in fields(TrainPlan)]
_SHAPE_FIELDS = tuple(_PLAN_FIELDS[:_PLAN_FIELDS.index("dataset_tokens")])
_plan_shape = operator.attrgetter(*_SHAPE_FIELDS)


@dataclass(frozen=True, slots=True)
class _StepKey:
    """What an op list is built from: the plan's shaping fields, the model and the stack."""

    shape: tuple[object, ...]  # _SHAPE_FIELDS of the plan
    spec: ModelSpec  # its extras too (compared and hashed with the other fields)
    stack: StackKernels
    plan: TrainPlan = field(compare=False)  # the plan _build reads, equal to any other on the fields above


def step_ops(plan: TrainPlan, spec: ModelSpec, stack: StackKernels | None = None) -> OpList:
    """The operations of one optimizer step on one GPU (see the module docstring); the same ``OpList``
    for plans that share every field above ``dataset_tokens``.

    Worked example: Llama-3.1-8B LoRA (q, v), bf16, seq 2048, batch 1: the q_proj forward GEMM has
    m = 2048, n = 4096, k = 4096: 2 x 2048 x 4096 x 4096 = 68.7 GFLOPs, 32 per micro-batch.
    """
    stack = stack or StackKernels()
    plan = plan.with_input_grads(stack.embeddings_hooked)
    return _step_ops(_StepKey(_plan_shape(plan), spec, stack, plan))


@functools.lru_cache(maxsize=2048)
def _step_ops(key: _StepKey) -> OpList:
    return OpList(_build(key))


_CHECKPOINTING_AT = _SHAPE_FIELDS.index("grad_checkpointing")
_RECOMPUTE_AT = _SHAPE_FIELDS.index("recompute")
_RECOMPUTE_EVERY_AT = _SHAPE_FIELDS.index("recompute_every")
_OP_FIELDS = tuple(f.name for f in fields(Op))
_op_values = operator.attrgetter(*_OP_FIELDS)
_PHASE_AT, _COUNT_AT = _OP_FIELDS.index("phase"), _OP_FIELDS.index("count")


class _Widths(NamedTuple):
    """Bytes per element and the matmul dtype of a plan's step."""

    e: int  # activations out of a linear
    s_b: int  # the residual stream
    w_b: int  # weights as the GEMM reads them
    mm: str  # matmul dtype
    autocast: bool  # torch.autocast runs the step
    fp32_model: bool = False  # QLoRA on peft's fp32-prepared model without autocast (``fp32_qlora``)


def fp32_qlora(plan: TrainPlan, stack: StackKernels) -> bool:
    """A QLoRA step that runs in fp32 outside its 4-bit GEMMs: peft's prepare_model_for_kbit_training leaves
    embeddings, norms and lm_head fp32 (kbit_upcast), no autocast casts back (a pure 16-bit plan), and the stack
    runs peft's own adapters. The embedding and every RMSNorm (``weight * x.to(input_dtype)``, an fp32 weight)
    give fp32, bnb Linear4bit casts its input to the compute dtype and its output back to the input's, so q, k,
    v, SDPA, the MLP, the fp32 adapters and the fp32 lm_head all run in fp32 (docs/time_misses.md
    #qlora-without-autocast-runs-in-fp32). A sharded plan is priced as it says (the memory model reads sharded QLoRA
    as 16-bit whatever ``kbit_upcast`` says: ``sharded_qlora``; docs/time_misses.md)."""
    return (plan.method is Method.QLORA and plan.kbit_upcast and not plan.precision.is_mixed
            and plan.precision is not Precision.FP32 and stack.adapters_fp32 and not stack.fuse_elementwise)


def upcast_qlora_autocast(plan: TrainPlan, stack: StackKernels) -> bool:
    """Mixed QLoRA on peft's fp32-prepared model, eager: Linear4bit hands back its fp32 input's dtype, so the
    element-wise ops run in fp32 and only SDPA, F.linear and the lm_head in 16 bits, on autocast's copies
    (docs/time_misses.md#what-autocast-does-to-a-qlora-and-a-lora-layer)."""
    return (plan.method is Method.QLORA and plan.kbit_upcast and plan.precision.is_mixed and stack.adapters_fp32
            and not stack.fuse_elementwise)


def _widths(plan: TrainPlan, stack: StackKernels) -> _Widths:
    dt = plan_dtypes(plan)
    if fp32_qlora(plan, stack):
        return _Widths(4, 4, 2 if plan.precision.compute_bytes == 2 else 4, matmul_dtype(plan), False, True)
    if fsdp_16bit_compute(plan):  # parameters gathered in the policy's 16-bit dtype: a pure 16-bit step
        return _Widths(2, 2, 2, matmul_dtype(plan), False)
    if plan.method is Method.QLORA and not plan.kbit_upcast:  # 16-bit norms and lm_head: a 16-bit stream
        return _Widths(2, 2, 2, matmul_dtype(plan), plan.precision.is_mixed)
    if upcast_qlora_autocast(plan, stack):
        return _Widths(4, 4, 2, matmul_dtype(plan), True)
    e = plan.precision.compute_bytes if plan.method is Method.QLORA else dt.linear_out
    return _Widths(e, dt.stream, 2 if plan.precision.compute_bytes == 2 else 4, matmul_dtype(plan), dt.autocast)


@dataclass(frozen=True, slots=True)
class _Step:
    """What every op of one step reads: the model, the plan, the stack, the widths of its tensors and the tokens
    of one micro-batch."""

    spec: ModelSpec
    plan: TrainPlan
    stack: StackKernels
    widths: _Widths
    tokens: int  # per micro-batch: the rows of the block's GEMMs

    @classmethod
    def of(cls, key: _StepKey) -> _Step:
        widths = _widths(key.plan, key.stack)
        if key.stack.model_16bit and widths.autocast and not key.plan.uses_adapters:
            widths = widths._replace(s_b=2, autocast=False)
        return cls(key.spec, key.plan, key.stack, widths, key.plan.tokens_per_micro_batch)

    @property
    def fuse(self) -> bool:
        """A compiler fuses every element-wise chain between matmuls."""
        return self.stack.fuse_elementwise

    @property
    def eager_autocast(self) -> bool:
        """Eager torch.autocast runs the linears (no compiler folds their casts)."""
        return self.widths.autocast and not self.stack.fuse_elementwise


def _gradient_layers(plan: TrainPlan, layers: int) -> tuple[int, int]:
    """(blocks the gradient runs through, blocks whose weights train)."""
    return plan.gradient_blocks(layers), plan.trained_blocks(layers)


def _build(key: _StepKey) -> list[Op]:
    step = _Step.of(key)
    plan, spec = key.plan, key.spec
    s_b = step.widths.s_b
    t = step.tokens
    mb = plan.grad_accum
    layers, h = spec.num_layers, spec.hidden_size
    # the blocks' forward and backward do not depend on whether (or how much of) the forward is recomputed
    unchecked = list(key.shape)
    unchecked[_CHECKPOINTING_AT], unchecked[_RECOMPUTE_AT], unchecked[_RECOMPUTE_EVERY_AT] = False, Recompute.BLOCK, 1
    forward_ops, backward_ops = _blocks(_StepKey(tuple(unchecked), spec, key.stack, plan))

    # -- embedding and forward
    ops = [mem_op("embedding lookup", Phase.FORWARD, t * h, s_b + 8 / h, 1, mb)]
    if mb > 1:  # the Trainer divides each micro-batch's loss by the accumulation steps (and back in backward)
        ops.append(mem_op("loss / grad_accum", Phase.FORWARD, 1, 8, 1, mb))
    ops += forward_ops
    ops += _head_forward_backward(step)

    # -- backward through the blocks, with the recompute of gradient checkpointing first: the blocks' forward
    # again over the checkpointed blocks the gradient reaches (every forward op's count is layers x micro-batches
    # x a factor)
    if plan.grad_checkpointing:
        recomputed = plan.checkpointed_blocks(layers)
        kept = kept_op_names(spec, plan)  # an op-level policy's kept outputs (estimate.recompute); none: every op
        for op in forward_ops:
            if op.name in kept:
                continue
            values = list(_op_values(op))
            values[_PHASE_AT], values[_COUNT_AT] = Phase.RECOMPUTE, op.count // layers * recomputed
            ops.append(Op(*values))
    ops += backward_ops
    ops = [o for o in ops if o.count > 0]
    if plan.method in (Method.FULL, Method.SCRATCH):
        # embedding_dense_backward: zero the table's gradient, scatter-add the token rows
        ops.append(mem_op("embedding backward", Phase.BACKWARD, spec.vocab_size * h + t * h, 4, 3, 1))

    # torch's deterministic mode: a fill of each natively allocated tensor (estimate.deterministic)
    ops += fill_rows(plan, spec, ops, key.stack, FillWidths(s_b, step.widths.e, _attention_bytes(step)))
    ops += optimizer_ops(spec, plan, count_params(spec, plan), mb)
    return ops


@functools.lru_cache(maxsize=1024)
def _blocks(key: _StepKey) -> tuple[tuple[Op, ...], tuple[Op, ...]]:
    """The blocks' forward ops and everything the backward runs through them (``key`` with gradient
    checkpointing off: nothing here reads it)."""
    step = _Step.of(key)
    plan, spec, st = key.plan, key.spec, key.stack
    e, s_b, w_b, mm, autocast = step.widths[:5]
    t = step.tokens
    mb = plan.grad_accum
    layers = spec.num_layers
    grad_layers, trained = _gradient_layers(plan, layers)
    h = spec.hidden_size
    inter = spec.intermediate_size
    fuse = st.fuse_elementwise
    groups = block_groups(spec)
    lora = {lin.name for lin in lora_target_linears(spec, plan.lora_targets)} if plan.uses_adapters else set()
    quant = {lin.name for lin in quantized_linears(spec)} if plan.method is Method.QLORA else set()
    # peft keeps adapters fp32 on a 16-bit base (autocast runs them in 16 bits again); others keep the model dtype
    adapter_mm = "fp32" if st.adapters_fp32 and not autocast and mm != "fp32" else mm
    a_b = 4 if adapter_mm == "fp32" else 2

    def forward(trains: bool) -> tuple[Op, ...]:
        """One block's forward ops (x layers x micro-batches), its weights trained or frozen."""
        phase, c = Phase.FORWARD, layers * mb
        out: list[Op] = []
        sandwich = spec.norms_per_sublayer
        out += _norm_ops(step, "norm (attention input)", phase, c, weight_trains=trains, norms=sandwich)
        linears = LinearPass(plan, phase, c, t, e, w_b, mm, adapter_mm, a_b, st, trains=trains,
                             autocast=step.eager_autocast)
        for group in ("attn_in", "attn_out", "mlp_in", "mlp_hidden"):
            for lin in groups[group]:
                x_b = s_b if group in ("attn_in", "mlp_in") else _attention_bytes(step) if group == "attn_out" else e
                out += linear_forward(linears, LinearShape(lin.name, lin.in_features, lin.out_features, x_b,
                                                            quantized=lin.name in quant, adapted=lin.name in lora,
                                                            bias=lin.bias))
            if group == "attn_in":
                out += _attention_forward(step, phase, c)
            if group == "attn_out":
                if not fuse:  # a compiler folds the residual add into the next norm's kernel
                    out.append(_residual_add(phase, t * h, s_b, c))
                out += _norm_ops(step, "norm (MLP input)", phase, c, weight_trains=trains, norms=sandwich)
            if group == "mlp_in":
                one_gelu = st.torch_gelu and not spec.mlp_gated  # the stack calls F.gelu, one kernel (Lit-GPT [M5])
                out += _activation_forward(spec, phase, c, t, inter, e, st.fused_mlp_activation or fuse or one_gelu)
        if st.moe_experts is MoeExperts.LOOP:
            out += _moe_loop_forward(step, phase, c, trains=trains)
        else:
            out += _moe_forward(step, phase, c, trains=trains)
        if not fuse:
            out.append(_residual_add(phase, t * h, s_b, c))
        if spec.hidden_dropout > 0:  # backward: one multiply by the saved mask per dropout
            out.append(mem_op("dropout (residual)", phase, 2 * t * h, 2 * e + 1, 2, c, backward=Elementwise(1.0)))
        return tuple(o for o in out if o.count > 0 and (o.launches > 0 or o.flops > 0))

    forward_ops = forward(trained > 0)
    backward = [_backward_of(o, layers_grad=trained or grad_layers, layers_fwd=layers) for o in forward_ops]
    if 0 < trained < grad_layers:  # freeze with input_require_grads: the frozen blocks' input gradients too
        backward += [_backward_of(o, layers_grad=grad_layers - trained, layers_fwd=layers) for o in forward(False)]
    # a trained bias's gradient: one reduction kernel over the output gradient (autograd's sum_to)
    backward += [Op(f"{o.name} bias gradient", Kind.MEMORY, Phase.BACKWARD, 0.0, o.bias_bytes, 1, o.count,
                    backward=Backward.NONE) for o in forward_ops if o.bias_bytes > 0]
    backward.append(_gradient_sums(spec, groups, lora, t, s_b, e, grad_layers * mb))
    if not fuse:
        backward.append(_projection_gradient_layout(spec, groups, t, e, st.fused_rope, grad_layers * mb))
    return forward_ops, tuple(backward)


def _norm_ops(step: _Step, name: str, phase: Phase, count: int, weight_trains: bool = True,
              norms: int = 1) -> list[Op]:
    """``norms`` norms per call, ``count`` calls: RMSNorm (transformers LlamaRMSNorm: to fp32, pow, mean, +eps,
    rsqrt, mul, back to the input dtype, x weight; the two casts are no-ops on an fp32 stream), torch's native
    LayerNorm kernel, or a LayerNorm written op by op (config ``norm_impl: "composite"``;
    l2_reuse.layer_norm_chains). A block's sub-layer passes ``spec.norms_per_sublayer`` (Gemma 2/3's sandwich norms); the
    final norm before the head is one module in every family (Gemma2Model.norm), so it keeps the default 1.

    The eager RMSNorm's backward is autograd's chain (torch derivatives.yaml; l2_reuse.rms_norm_chains lists its
    kernels, whose bytes the op takes), bytes per element: the
    weight multiply's input gradient (reads the gradient, writes the stream's), then in fp32: x * rsqrt's
    input gradient (8) and the rsqrt's gradient (a multiply and a row sum, 16; rsqrt's own backward runs
    on one value per row: pow, mul, mul), mean's expand (div, 4), pow's backward (FunctionsManual.cpp
    pow_backward: grad * (2 * x.pow(1)): a copy, a multiply by 2 and a multiply by the gradient, 8 + 8 +
    12), the sum of the two gradients reaching x (12); the weight's own gradient (the gradient times the
    normalised input, then a row reduction) when it trains; the two casts' backward on a 16-bit stream.
    """
    spec, e, s_b = step.spec, step.widths.e, step.widths.s_b
    elements = step.tokens * spec.hidden_size
    if step.stack.fused_norm or step.fuse:
        return [mem_op(name, phase, elements, s_b + e, 1, count * norms)]
    if spec.norm != "rms" and not composite_layer_norm(spec):
        # torch's native LayerNorm (layer_norm_kernel.cu): the forward reads each row twice (its moments, then the
        # output pass) and writes once; the input gradient kernel reads dy and x twice (two sums, then dx) and writes
        # dx; the weight and bias gradients, when they train, read dy and x once more in a second kernel
        forward = 2 * s_b + e
        backward = 2 * e + 3 * s_b + ((e + s_b) if weight_trains else 0)
        return [mem_op(name, phase, elements, forward, 1, count * norms,
                     backward=Elementwise(backward / forward, 2 if weight_trains else 1))]
    # a chain of kernels each way (estimate.l2_reuse): their bytes, launches, broadcast kernels (TensorIterator's
    # unvectorised path, Op.strided_share: x * rsqrt and weight * x, the gradient times the weight and the rsqrt,
    # mean's division of its expanded gradient) and the passes that stay in L2
    if spec.norm == "rms":
        forward_k, backward_k, width, _ = rms_norm_chains(s_b, e, weight_trains)
        l2, l2_back = rms_norm_l2(s_b, e, elements, weight_trains)
    else:  # a LayerNorm written op by op (config norm_impl: "composite")
        forward_k, backward_k, width, _ = layer_norm_chains(s_b, weight_trains)
        l2, l2_back = layer_norm_l2(s_b, elements, weight_trains)
        name = f"{name} (composite)"
    forward_b, backward_b = chain_bytes(forward_k, width), chain_bytes(backward_k, width)
    return [replace(mem_op(name, phase, elements, forward_b, len(forward_k), count * norms,
                         backward=Elementwise(backward_b / forward_b, len(backward_k),
                                               broadcast_bytes(backward_k, width) / backward_b),
                         strided=broadcast_bytes(forward_k, width) / forward_b),
                    l2_reads=l2, backward_l2_reads=l2_back)]


def _attention_forward(step: _Step, phase: Phase, count: int) -> list[Op]:
    """Rotary embedding and the attention core for the plan's implementation."""
    spec, plan, st, fuse = step.spec, step.plan, step.stack, step.fuse
    e, autocast = step.widths.e, step.widths.autocast
    b, s = plan.batch_size, plan.seq_len
    t = b * s
    a, kv, d = spec.num_heads, spec.num_kv_heads, spec.head_dim
    q_dim, kv_dim = a * d, kv * d
    out: list[Op] = []
    if spec.extras.get("position_embedding") == "rope":
        if st.fused_rope or fuse:
            out.append(mem_op("rotary (q, k)", phase, t * (q_dim + kv_dim), 2 * e, 1, count))
        else:
            # q * cos + rotate_half(q) * sin: neg, cat, mul, mul, add for q and for k. Backward per tensor
            # (derivatives.yaml): the gradient times cos and times sin (2 x 2e, each reading cos or sin, d
            # values per token), rotate_half's: neg of one half (e), cat's backward slices into two
            # slice_backward (each writes a zero-filled whole: 2 x 1.5e) summed (3e), and the sum of the
            # two paths to q (3e): 14e per element, 7 kernels
            forward_bytes = 11 * e * t * (q_dim + kv_dim)
            backward_bytes = 14 * e * t * (q_dim + kv_dim) + 4 * e * t * d
            # q and k are transposed views (batch, heads, seq, dim) and cos / sin broadcast over heads: strided kernels
            l2, l2_back = rotary_l2(e, t * q_dim, t * kv_dim)  # each tensor's chain: passes that stay in L2
            out.append(replace(mem_op("rotary (q, k)", phase, t * (q_dim + kv_dim), 11 * e, 10, count,
                                    backward=Elementwise(backward_bytes / forward_bytes, 14), strided=1.0),
                               l2_reads=l2, backward_l2_reads=l2_back))
    causal = not spec.is_encoder
    r = plan.attention_span  # packed documents: s / r attentions of r x r each, priced at length r
    full_flops = 4.0 * b * s * r * a * d  # Q·K^T and P·V over the whole s x r matrix
    dtype = attention_dtype(plan, step.widths.fp32_model)
    if e != (attn_b := _attention_bytes(step)):  # autocast, or transformers' flash path, casts fp32 q, k, v
        out.append(mem_op("attention input cast", phase, t * (q_dim + 2 * kv_dim), e + attn_b, 3, count,
                        backward=Elementwise(1.0)))
        e = attn_b  # the kernel reads the 16-bit copies and writes a 16-bit output
    io = e * t * (2 * q_dim + 2 * kv_dim)  # read q, k, v; write the output
    if not fused_attention(plan):
        # HF eager_attention_forward: repeat_kv copies, Q·K^T, scale, + mask, softmax (fp32 for
        # Llama-style), cast, dropout, P·V, then the output transpose copy
        scores = b * a * s * r
        if kv < a:
            out.append(mem_op("attention repeat_kv", phase, t * 2 * q_dim, 2 * e, 2, count))
        out.append(Op(EAGER_MATMULS[0], Kind.ATTENTION, phase, full_flops / 2, float(e * (2 * t * q_dim + scores)), 1,
                      count, dtype, r, r, backward=Backward.BOTH_GRADS))
        chain = _fused_softmax_chain if fuse else _composite_softmax_chain if composite_softmax(spec) else \
            _eager_softmax_chain
        out.append(chain(spec, scores, e, autocast, phase, count))
        out.append(Op(EAGER_MATMULS[1], Kind.ATTENTION, phase, full_flops / 2, float(e * (scores + 2 * t * q_dim)), 1,
                      count, dtype, r, d, backward=Backward.BOTH_GRADS))
    else:
        # one fused kernel (SDPA's choice, estimate.sdpa_backend, or flash-attn); causal masking skips the blocks
        # above the diagonal: FLOPs x (1 + 1/n_blocks) / 2 with 128-row blocks (flash-attention's
        # benchmark counts causal as half). With a padding mask SDPA runs its memory-efficient kernel, which adds
        # the mask (read once, e bytes an element) over the whole matrix and skips no block
        masked = sdpa_padding_mask(plan, st)
        causal = causal and not masked
        flops = full_flops * (0.5 * (1 + 128 / r) if causal and r > 128 else 1.0)
        out.append(Op(FUSED_KERNEL, Kind.ATTENTION, phase, flops, float(io + (e * b * s * s if masked else 0)), 1,
                      count, dtype, r, d, attention_pass="fwd", causal=causal, mem_efficient=masked,
                      kernel=op_kernel(plan), backward=Backward.FUSED_ATTENTION))
    if not fuse:  # .transpose(1, 2).contiguous(): the clone's and the transpose's backward launch nothing
        out.append(mem_op("attention output transpose", phase, t * q_dim, 2 * e, 1, count, backward=Backward.NONE))
    return out


def sdpa_padding_mask(plan: TrainPlan, stack: StackKernels) -> bool:
    """SDPA gets an attention mask and so never its flash kernel (sdp_utils: flash takes no attn_mask): a stack
    whose models hand it the batch's padding mask (stacks.csv sdpa_padding_mask: transformers drops the mask only
    when it is all ones) on rows padded to seq_len (``lengths="padded"``; estimate.timing prices a histogram's
    micro-batches of unequal lengths so). docs/time_misses.md#sdpa-with-a-padding-mask."""
    return masked_sdpa(plan, stack.sdpa_padding_mask)


def _attention_bytes(step: _Step) -> int:
    """Bytes an element of what the attention kernel reads and writes (its dtype's)."""
    return 4 if attention_dtype(step.plan, step.widths.fp32_model) == "fp32" else 2


def attention_dtype(plan: TrainPlan, fp32_model: bool) -> str:
    """The dtype attention runs in: fp32 q, k, v reach SDPA (whose flash kernel takes 16-bit inputs only, so
    the memory-efficient kernel runs in fp32) and eager attention as they are; transformers' flash-attention path
    casts fp32 inputs back to the model's 16-bit dtype before the kernel (``_flash_attention_forward``)."""
    if fp32_model and not plan.attention.is_flash:
        return "fp32"
    return matmul_dtype(plan)


def _eager_softmax_chain(spec: ModelSpec, scores: int, e: int, autocast: bool, phase: Phase, count: int) -> Op:
    """transformers' eager chain between Q·K^T and P·V: scale, + mask, softmax, cast, dropout, one kernel each."""
    dropout = spec.attention_dropout > 0
    if spec.norm == "rms":
        probs = 4  # Llama-style: softmax(dtype=float32), cast back, dropout on the 16-bit probabilities
        soft = (e + e) + (e + probs) + (probs + probs) + (probs + e) + ((e + e + 1) if dropout else 0)
        launches = 4 + int(dropout)
    else:
        # BERT-style: scores / sqrt(d) + mask, softmax, dropout, then P·V. The additive mask has the
        # parameters' dtype (transformers ModuleUtilsMixin.get_extended_attention_mask: ``.to(dtype=
        # self.dtype)``), fp32 under autocast, so the sum, the softmax and the dropout run in fp32 and
        # autocast casts the probabilities back to 16 bits for P·V; no cast where they share a dtype.
        probs = 4 if autocast else e
        cast = probs != e
        soft = (e + e) + (e + probs) + (probs + probs) + ((probs + probs + 1) if dropout else 0) + (
            (probs + e) if cast else 0)
        launches = 3 + int(dropout) + int(cast)
    return mem_op("attention softmax chain", phase, scores, soft, launches, count)


def _composite_softmax_chain(spec: ModelSpec, scores: int, e: int, autocast: bool, phase: Phase, count: int) -> Op:
    """A softmax written op by op (config ``softmax_impl: "composite"``, the CS336 staff model): scale, mask, max,
    subtract, exp, sum, divide, and under autocast the casts around exp and P·V (``composite_ops.softmax_chain_cost``)."""
    cost, (l2, l2_back) = softmax_chain_cost(e, autocast), softmax_l2(e, autocast, scores)
    return replace(mem_op("attention softmax chain (composite)", phase, scores, cost.forward_bytes,
                        cost.forward_launches, count,
                        backward=Elementwise(cost.backward_bytes / cost.forward_bytes, cost.backward_launches)),
                   l2_reads=l2, backward_l2_reads=l2_back)


def _fused_softmax_chain(spec: ModelSpec, scores: int, e: int, autocast: bool, phase: Phase, count: int) -> Op:
    """The same chain as one kernel each way, as a fusing stack runs it (a compiler's generated reduction kernel,
    Megatron's fused softmax; docs/kernels.md). fp32 internals stay in registers, so ``autocast`` changes nothing.
    Forward: reads the scores, writes the probabilities P·V reads (after dropout) and, with dropout, the 1-byte
    mask. Backward: reads the probabilities (or the saved scores, to recompute them) and their gradient, and the
    mask with dropout; writes the scores' gradient."""
    dropout = spec.attention_dropout > 0
    forward = 2 * e + (1 if dropout else 0)
    backward = 3 * e + (1 if dropout else 0)
    return mem_op("attention softmax chain (fused)", phase, scores, forward, 1, count,
                backward=Elementwise(backward / forward, 1))


def _activation_forward(spec: ModelSpec, phase: Phase, count: int, t: int, inter: int, e: int, fused: bool) -> list[Op]:
    k_exp = spec.experts_per_token if spec.num_experts > 1 else 1
    elems = t * inter * k_exp
    if spec.num_experts > 1:
        return []  # counted with the experts (_moe_forward)
    if spec.mlp_gated:
        if fused:
            return [mem_op("MLP activation (gated, fused)", phase, elems, 3 * e, 1, count)]
        # SiLU backward reads x and the gradient, writes one (1.5x); gate x up backward is two multiplies (2x)
        act = mem_op("MLP activation", phase, elems, 2 * e, 1, count, backward=Elementwise(1.5))
        if composite_silu(spec):  # x * sigmoid(x) (config hidden_act_impl: "composite")
            cost, (l2, l2_back) = silu_cost(e), silu_l2(e, elems)
            act = replace(mem_op("MLP activation (SiLU, composite)", phase, elems, cost.forward_bytes,
                               cost.forward_launches, count,
                               backward=Elementwise(cost.backward_bytes / cost.forward_bytes, cost.backward_launches)),
                          l2_reads=l2, backward_l2_reads=l2_back)
        return [act,
                mem_op("MLP gate x up", phase, elems, 3 * e, 1, count, backward=Elementwise(launches=2))]
    # gelu_pytorch_tanh (GELUTanh) and gelu (GELUActivation) call F.gelu: one kernel each way, as below; gelu_new
    # and gelu_fast write the tanh formula out in Python, one kernel per operator in eager mode (docs/kernels.md)
    if spec.activation in ("gelu_new", "gelu_fast") and not fused:
        # transformers NewGELUActivation: 0.5 x (1 + tanh(c (x + 0.044715 x^3))): pow, mul, add, mul, tanh, add, mul,
        # mul. Backward (derivatives.yaml), bytes per element: the product's two gradients (2 x 3e), tanh_backward (3e),
        # the gradient times c, times 0.044715 and times 0.5 (3 x 2e), pow's backward (x.pow(2), x 3, x gradient:
        # 2e + 2e + 3e), the three gradients reaching x summed (2 x 3e): 28e, 11 kernels (scalar adds pass through)
        forward_b = 8 * 2 * e + e
        return [mem_op("MLP activation (GELU, composite)", phase, elems, forward_b, 8, count,
                     backward=Elementwise(28 * e / forward_b, 11))]
    return [mem_op("MLP activation", phase, elems, 2 * e, 1, count, backward=Elementwise(1.5))]


def _residual_add(phase: Phase, elements: int, s_b: int, count: int) -> Op:
    """x + f(x): one kernel forward; its backward passes the gradient to both inputs without a kernel."""
    return mem_op("residual add", phase, elements, 3 * s_b, 1, count, backward=Backward.NONE)


def _gradient_sums(spec: ModelSpec, groups: dict[str, list[Linear]], lora: set[str], t: int, s_b: int, e: int, count: int) -> Op:
    """Backward-only: a tensor read by several ops gets one gradient from each, and autograd adds them (one
    add kernel per extra consumer): the residual stream at its two branch points, the attention input read by
    q, k and v, the MLP input read by gate and up, and each adapted linear's input read by its LoRA branch.
    Each sum runs in the dtype of the tensor read: an fp32 adapter's input cast returns its gradient in it."""
    h = spec.hidden_size
    adds = [(2, t * h, s_b)]  # the stream feeds the norm and the residual, twice per block
    for group in ("attn_in", "mlp_in", "attn_out", "mlp_hidden"):
        consumers = len(groups[group]) + sum(1 for lin in groups[group] if lin.name in lora)
        width = groups[group][0].in_features if groups[group] else 0
        if consumers > 1:
            adds.append((consumers - 1, t * width, s_b if group in ("attn_in", "mlp_in") else e))
    launches = sum(n for n, _, _ in adds)
    moved = sum(n * elements * 3 * b for n, elements, b in adds)
    return Op("gradient sums (tensors with several consumers)", Kind.MEMORY, Phase.BACKWARD, 0.0, float(moved),
              launches, count, backward=Backward.NONE)


# families whose fused q·k·v projection is cut by slicing (Phi-3: qkv[..., :query_pos]) rather than torch.split
_QKV_SLICED = frozenset({"phi3"})


def _projection_gradient_layout(spec: ModelSpec, groups: dict[str, list[Linear]], t: int, e: int, fused_rope: bool,
                                count: int) -> Op:
    """Backward-only: gradients brought back to the projections' layout. SDPA's backward returns each
    gradient with its input's strides; q and k after an eager rotary are contiguous per head, so the
    transpose back to (tokens, heads x dim) needs a copy of each (view backward: clone). A fused projection
    cut into parts joins their gradients: ``split`` / ``chunk`` by one cat (GPT-2's c_attn, Phi-3's
    gate_up_proj); slices by one slice_backward per part (a zero-filled whole each) and two adds."""
    q_dim, kv_dim = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    moved, launches = 0, 0
    if spec.extras.get("position_embedding") == "rope" and not fused_rope:
        moved, launches = 2 * e * t * (q_dim + kv_dim), 2
    attn_in, mlp_in = groups["attn_in"], groups["mlp_in"]
    if len(attn_in) == 1 and attn_in[0].out_features == q_dim + 2 * kv_dim:
        width = t * (q_dim + 2 * kv_dim)
        if spec.model_type in _QKV_SLICED:
            moved, launches = moved + 4 * e * width + 2 * 3 * e * width, launches + 3 + 2
        else:
            moved, launches = moved + 2 * e * width, launches + 1
    if spec.mlp_gated and len(mlp_in) == 1 and spec.num_experts <= 1:  # gate and up from one GEMM: chunk
        moved, launches = moved + 2 * e * t * mlp_in[0].out_features, launches + 1
    return Op("gradients to the projection layout (clone, cat)", Kind.MEMORY, Phase.BACKWARD, 0.0, float(moved),
              launches, count if launches else 0, backward=Backward.NONE)


def _moe_forward(step: _Step, phase: Phase, count: int, trains: bool) -> list[Op]:
    """Routed experts: each expert runs its GEMMs on its share of the tokens (top-k of E)."""
    spec, plan, t = step.spec, step.plan, step.tokens
    e, w_b, mm = step.widths.e, step.widths.w_b, step.widths.mm
    experts = [lin for lin in spec.linears if lin.in_block and lin.experts > 1]
    if not experts:
        return []
    n_exp, k_exp = spec.num_experts, spec.experts_per_token
    rows = max(1, math.ceil(t * k_exp / n_exp))
    out = [mem_op("router softmax, top-k, gather", phase, t * spec.hidden_size, 4 * e, 8, count)]
    for lin in experts:
        shape = GemmShape(rows, lin.out_features, lin.in_features, mm, e, e,
                          2 if plan.method is Method.QLORA else w_b)
        gemm = gemm_op(f"expert {lin.short_name}", phase, shape, count * n_exp, trains=trains)
        out.append(gemm)
    out.append(mem_op("expert activation, gate x up, index_add", phase, t * k_exp * spec.intermediate_size, 5 * e,
                    4 * n_exp, count))
    return out


# transformers 4.x expert loop, per expert, from PyTorch's CUDA kernels (aten/src/ATen/native/cuda): nonzero
# (torch.where of the routing mask) counts the hits, copies the count to the host and waits for it (torch.nonzero
# docs: "causes host-device synchronization"), then writes the indices; the backward of hidden_states[top_x] is
# index_put_(accumulate=True) into a zero-filled gradient of the whole input (autograd index_backward), which
# sorts the indices first (Indexing.cu index_put_with_sort_kernel: linearise, arange, radix sort, accumulate).
_NONZERO_LAUNCHES = 3
_INDEX_PUT_SORTED_LAUNCHES = 6  # zero fill, linear index, arange, radix sort (2), accumulate


def _moe_loop_forward(step: _Step, phase: Phase, count: int, trains: bool) -> list[Op]:
    """transformers 4.x MixtralSparseMoeBlock.forward (v4.36-4.5x, e.g. 4.48.1): router, then a Python loop
    over every expert, each an ``nn.Linear`` module (so bitsandbytes quantises each one under QLoRA)::

        idx, top_x = torch.where(expert_mask[expert_idx])           # nonzero: the host waits
        current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
        current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
        final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))

    with ``expert_layer`` = w2(act_fn(w1(x)) * w3(x)) (MixtralBlockSparseTop2MLP). Each expert gets
    t x top_k / n_experts rows. Under QLoRA every expert linear is a bnb Linear4bit: input cast to the compute
    dtype, dequantisation, GEMM, output cast back to the input dtype (``linear_forward``), so the activation
    and the product run in the stream's dtype.
    """
    spec, plan, t = step.spec, step.plan, step.tokens
    e, s_b, w_b, mm = step.widths[:4]
    experts = [lin for lin in spec.linears if lin.in_block and lin.experts > 1]
    if not experts:
        return []
    n_exp, k_exp = spec.num_experts, spec.experts_per_token
    h, f = spec.hidden_size, spec.intermediate_size
    rows = max(1, math.ceil(t * k_exp / n_exp))
    c = count * n_exp  # per expert
    quantized = plan.method is Method.QLORA
    y_b = s_b if quantized else e  # dtype of an expert linear's output (Linear4bit casts back to its input's)

    experts_pass = LinearPass(plan, phase, c, rows, e, w_b, mm, mm, w_b, step.stack, trains=trains,
                              autocast=step.eager_autocast)

    def linear(name: str, k: int, n: int, x_b: int) -> list[Op]:
        return linear_forward(experts_pass, LinearShape(name, k, n, x_b, quantized=quantized))

    out = [mem_op("router softmax, top-k, gather", phase, t * h, 4 * e, 8, count),
           mem_op("expert output zeros, one-hot mask", phase, t * h, s_b, 2, count, backward=Backward.NONE)]
    out.append(Op("expert token selection (torch.where, waits for the GPU)", Kind.MEMORY, phase, 0.0,
                  float(t * k_exp * 8 + rows * 16), _NONZERO_LAUNCHES, c, backward=Backward.NONE, host_sync=True))
    # backward: a zero-filled gradient of the whole input, the sorted scatter-add of the rows, and autograd's
    # add of this expert's input gradient to the others' (3 passes over t x h)
    gather_b = 2.0 * rows * h * s_b
    out.append(mem_op("expert input gather", phase, rows * h, 2 * s_b, 1, c,
                    backward=Elementwise((t * h * s_b + 3 * rows * h * s_b + 3 * t * h * s_b) / gather_b,
                                          _INDEX_PUT_SORTED_LAUNCHES + 1)))
    out += linear("expert w1", h, f, s_b)
    out += linear("expert w3", h, f, s_b)
    # SiLU backward reads x and the gradient, writes one; the product's backward is two multiplies
    out.append(mem_op("expert SiLU", phase, rows * f, 2 * y_b, 1, c, backward=Elementwise(1.5)))
    out.append(mem_op("expert SiLU x w3", phase, rows * f, 3 * y_b, 1, c, backward=Elementwise(launches=2)))
    out += linear("expert w2", f, h, y_b)
    # routing_weights[top_x, idx, None] (an index kernel) times the output; backward: the gradient times the
    # weights, the gradient times the output summed per row (the weights' gradient) and its sorted scatter
    out.append(mem_op("expert routing-weight multiply", phase, rows * h, y_b + s_b, 2, c,
                    backward=Elementwise(launches=3 + _INDEX_PUT_SORTED_LAUNCHES)))
    # index_add_ reads the rows and updates the output rows in place; backward: index_select of the gradient
    out.append(mem_op("expert index_add", phase, rows * h, 3 * s_b, 1, c, backward=Elementwise(2 / 3, 1)))
    return out


def _head_forward_backward(step: _Step) -> list[Op]:
    """Final norm, output layer and loss, forward and backward (the loss backward runs first)."""
    spec, plan, st = step.spec, step.plan, step.stack
    e, _, w_b, mm = step.widths[:4]
    t, mb, h = step.tokens, plan.grad_accum, spec.hidden_size
    trains = plan.method in (Method.FULL, Method.SCRATCH, Method.FREEZE)
    final_norm = _norm_ops(step, "final norm", Phase.FORWARD, mb, weight_trains=trains)
    out = list(final_norm)
    if spec.task is Task.SEQ_CLS:
        vocab, rows = max(spec.num_labels, 1), plan.batch_size
        trains = True  # a classification head trains in every method
    elif spec.task is Task.MASKED_LM and plan.mlm_predictions:  # BERT scripts: gather the masked rows first
        vocab, rows = spec.vocab_size, plan.batch_size * min(plan.mlm_predictions, plan.seq_len)
        out.append(mem_op("masked positions gather", Phase.FORWARD, rows * h, 2 * e, 1, mb))
        out.append(mem_op("masked positions gather backward (zeros, scatter)", Phase.BACKWARD, t * h + 2 * rows * h,
                        e, 2, mb))
    else:
        vocab, rows = spec.vocab_size, t
    upcast = plan.method is Method.QLORA and plan.kbit_upcast  # peft's fp32 lm_head
    out_b = 4 if upcast or e == 4 else e
    if step.widths.fp32_model:  # peft's upcast left lm_head fp32 and no autocast casts it: an fp32 GEMM
        mm, w_b = "fp32", 4
    fused_loss = st.fused_cross_entropy and spec.task is Task.CAUSAL_LM
    if step.eager_autocast and not fused_loss:
        out += _head_autocast_casts(step, rows, vocab, trains)
        e, w_b, out_b = 2, 2, 2  # F.linear on 16-bit copies writes 16-bit logits
    elif st.model_16bit and plan.precision.is_mixed and not plan.uses_adapters:
        # apex O2 copies the head's fp32 master to the 16-bit model once per step, as it does every weight
        out += _head_autocast_casts(step, rows, vocab, trains, inputs=False)
    if fused_loss:
        # Liger's fused linear cross-entropy: chunked logits, gradient computed in the forward
        fwd = Phase.FORWARD
        out.append(gemm_op("output layer (fused with loss)", fwd, GemmShape(rows, vocab, h, mm, e, e, w_b), mb, False))
        out.append(gemm_op("output layer input gradient", fwd, GemmShape(rows, h, vocab, mm, e, e, w_b), mb, False))
        if trains:
            out.append(gemm_op("output layer weight gradient", fwd, GemmShape(h, vocab, rows, mm, e, 4, e), mb, False))
        chunks = max(1, math.ceil(rows * vocab / (rows * h)))  # liger chunks rows so a chunk's logits ~ its input
        out.append(mem_op("loss (chunked softmax)", Phase.FORWARD, rows * vocab, 2 * 4, 3 * chunks, mb))
        return out
    out.append(gemm_op("output layer", Phase.FORWARD, GemmShape(rows, vocab, h, mm, e, out_b, w_b), mb, trains=False))
    # autocast: cross_entropy in fp32; causal LMs: ForCausalLMLoss's upcast, unless the loop takes the logits as they are
    native = st.loss_logits_dtype and not plan.precision.is_mixed
    loss_b = 4 if (spec.task is Task.CAUSAL_LM and not native) or step.eager_autocast else out_b
    if loss_b != out_b:
        out.append(mem_op("logits to fp32", Phase.FORWARD, rows * vocab, out_b + loss_b, 1, mb))
    reads = 1 if step.fuse else softmax_row_reads(vocab, loss_b)  # a compiler's or framework's loss reads the row once
    out.append(mem_op("log_softmax + nll", Phase.FORWARD, rows * vocab, (reads + 1) * loss_b, 2, mb))
    # nll_loss backward zero-fills the log-probabilities' gradient; log_softmax backward reads it (twice on the
    # multi-pass path: a row sum, then the epilogue) and the saved output, and writes the logits' gradient
    backward_b = loss_b + (min(reads, 2) + 1 + 1) * loss_b
    out.append(mem_op("loss backward (nll, log_softmax)", Phase.BACKWARD, rows * vocab, backward_b, 3, mb))
    if loss_b != out_b:
        out.append(mem_op("logits gradient cast", Phase.BACKWARD, rows * vocab, out_b + loss_b, 1, mb))
    out.append(gemm_op("output layer input gradient", Phase.BACKWARD, GemmShape(rows, h, vocab, mm, out_b, e, w_b), mb,
                     trains=False))
    if trains:
        out.append(gemm_op("output layer weight gradient", Phase.BACKWARD, GemmShape(h, vocab, rows, mm, e, w_b, out_b),
                         mb, trains=False))
    hw = HeadWidths(e, step.widths.s_b, w_b, out_b, mm, step.eager_autocast, plan.precision.is_mixed and not fsdp_16bit_compute(plan))
    out += mlm_head_rows(spec, rows, vocab, hw, trains, mb)
    # its backward is the norm's own chain (``_norm_ops``), as a block norm's, not a second forward
    out += [_backward_of(o, layers_grad=1, layers_fwd=1) for o in final_norm]
    return out


# torch's softmax kernels (aten/src/ATen/native/cuda/SoftMax.cu, host_softmax) for a row of dim elements: up to 1024
# (16-bit: 2048) a warp per row, held in registers; up to 9 elements per thread of a 1024-thread block in registers
# (cunn_SoftMaxForwardReg); a row under the 48 KiB of shared memory a block gets, dim a multiple of the 16-byte
# vector, staged there (cunn_SoftMaxForwardSmem): all read once. Longer rows (any LLM vocabulary in fp32) take
# cunn_SoftMaxForward: the row's max, its sum of exponentials and the output are three passes over global memory.
_SOFTMAX_REG_ELEMENTS = 9 * 1024
_SOFTMAX_SMEM_BYTES = 48 * 1024


def softmax_row_reads(dim: int, elem_bytes: int) -> int:
    """Times torch's (log_)softmax forward reads a row of ``dim`` elements of ``elem_bytes`` (1 or 3)."""
    if dim <= _SOFTMAX_REG_ELEMENTS:
        return 1
    if dim * elem_bytes < _SOFTMAX_SMEM_BYTES - 128 and dim % (16 // elem_bytes) == 0:
        return 1
    return 3


def _head_autocast_casts(step: _Step, rows: int, vocab: int, trains: bool, inputs: bool = True) -> list[Op]:
    """Autocast's copies for the output layer: with ``inputs``, an LM's fp32 final-norm output (a classifier
    reads its pooler's 16-bit one); an fp32 weight (masters, QLoRA's upcast head); backward casts gradients back."""
    plan, h, mb, s_b = step.plan, step.spec.hidden_size, step.plan.grad_accum, step.widths.s_b
    out: list[Op] = []
    if inputs and s_b != 2 and step.spec.task is not Task.SEQ_CLS:
        out.append(mem_op("output layer input cast (autocast)", Phase.FORWARD, rows * h, s_b + 2, 1, mb))
        out.append(mem_op("output layer input gradient cast", Phase.BACKWARD, rows * h, 2 + s_b, 1, mb))
    if plan.kbit_upcast if plan.method is Method.QLORA else not plan.uses_adapters:
        out.append(mem_op("output layer weight cast (autocast)", Phase.FORWARD, vocab * h, 4 + 2, 1, mb))
        if trains:
            out.append(mem_op("output layer weight gradient cast", Phase.BACKWARD, vocab * h, 2 + 4, 1, mb))
    return out


def _backward_of(op: Op, *, layers_grad: int, layers_fwd: int) -> Op:
    """The backward of a forward block op over the blocks the gradient reaches (``Op.backward`` says how).

    A GEMM's backward computes the input gradient (same FLOPs) and, for a weight that trains, the
    weight gradient (same FLOPs again). Fused attention backward runs its own kernel (5 matmuls for
    the forward's 2, FlashAttention-2 §3.2). Element-wise chains move about twice their forward bytes
    (saved input and incoming gradient read, gradient written) in as many kernels.
    """
    count = op.count * layers_grad // max(layers_fwd, 1)
    kind = op.backward
    # module-level names for the members: an enum member looked up on its class costs ~0.1 us, here per op
    if kind is _INPUT_GRAD or kind is _BOTH_GRADS:
        factor = 2 if kind is _BOTH_GRADS else 1
        return Op(f"{op.name} backward", op.kind, _BACKWARD, op.flops * factor, op.bytes * factor, factor, count,
                  op.dtype, op.m, op.n, backward=_NONE)
    if kind is _NONE:
        return Op(op.name, op.kind, _BACKWARD, 0.0, 0.0, 0, 0, backward=_NONE)
    if kind is _FUSED_ATTENTION:
        return Op("attention backward (fused kernel)", op.kind, _BACKWARD, op.flops * 2.5, op.bytes * 2.0, 2,
                  count, op.dtype, op.m, op.n, attention_pass="bwd", causal=op.causal,
                  mem_efficient=op.mem_efficient, kernel=op.kernel, backward=_NONE)
    if kind is _REPEAT:
        return Op(op.name + " (backward)", op.kind, _BACKWARD, 0.0, op.bytes, op.launches, count, backward=_NONE)
    if kind is _GRAD_CAST:
        return Op(op.name.replace("weight cast", "weight gradient cast"), op.kind, _BACKWARD, 0.0, op.bytes,
                  op.launches, count, backward=_NONE)
    launches = op.launches if op.backward_launches < 0 else op.backward_launches
    return Op(f"{op.name} backward", op.kind, _BACKWARD, 0.0, op.bytes * op.backward_factor, max(1, launches),
              count, backward=_NONE,
              strided_share=op.strided_share if op.backward_strided_share < 0 else op.backward_strided_share,
              l2_reads=op.backward_l2_reads)


_INPUT_GRAD, _BOTH_GRADS, _NONE = Backward.INPUT_GRAD, Backward.BOTH_GRADS, Backward.NONE
_FUSED_ATTENTION, _REPEAT, _GRAD_CAST = Backward.FUSED_ATTENTION, Backward.REPEAT, Backward.GRAD_CAST
_BACKWARD = Phase.BACKWARD


__all__ = ["Backward", "Kind", "MoeExperts", "Op", "OpList", "Phase", "StackKernels", "matmul_dtype",
           "param_tensors", "sdpa_padding_mask", "step_ops"]
