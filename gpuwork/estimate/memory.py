"""Per-GPU memory estimate of one training step: a pure function of (TrainPlan, ModelSpec).

The step is modelled as a timeline — forward, the loss backward, the backward through the blocks,
the optimizer step — and the peak is the largest of those moments. Every byte term below names
where it comes from: a library's source (what is saved for backward, which dtype states use), a
paper, or a measurement with ``gpuwork trace`` (fake-tensor tracing of the real model class).

Three totals, because they answer different questions:
- ``peak_allocated_bytes``: live tensors at the peak (``torch.cuda.max_memory_allocated``).
- ``peak_reserved_bytes``: plus what PyTorch's caching allocator holds but is not using
  (``torch.cuda.max_memory_reserved``).
- ``device_total_bytes``: plus the CUDA context, kernels and library handles (what nvidia-smi shows).

Example:
    >>> plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    >>> est = estimate_memory(plan, resolve(plan).spec)
    >>> est.peak_allocated_bytes < est.peak_reserved_bytes < est.device_total_bytes
    True

Limitations: activation accounting follows Hugging Face's Llama-style blocks (also Mistral, Qwen2,
Mixtral attention, Phi-3, Gemma 2) and GPT-2/BERT blocks op by op; other architectures fall back
to the nearest of those. Tensor/pipeline/context parallelism is not modelled (data parallel only).
Mixed precision follows CUDA autocast (linear outputs 16-bit, fp32 residual stream).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate import allocator_step, composite_ops
from gpuwork.estimate.allocator import StepTensors, padded_mix, replay, reserved_over_orders
from gpuwork.estimate.allocator_emptied import emptied_step_cache
from gpuwork.estimate.deepspeed_memory import gradients_from_start, zero_buffers
from gpuwork.estimate.eval_memory import estimate_eval, with_evaluation
from gpuwork.estimate.linear_groups import block_groups
from gpuwork.estimate.memory_dtypes import (
    Dtypes,
    fsdp_16bit_compute,
    memory_dtypes,
    plan_dtypes,
)
from gpuwork.estimate.memory_stacks import chunked_logits_bytes as _chunked_logits_bytes
from gpuwork.estimate.memory_stacks import (
    flat_unit_gradients,
    kept_4bit_inputs,
    rope_cache_bytes,
    sdpa_kv_repeated,
    whole_unit_gathered,
)
from gpuwork.estimate.memory_stacks import held_logits_bytes as _held_logits_bytes
from gpuwork.estimate.memory_stacks import loss_logits_bytes as _loss_logits_bytes
from gpuwork.estimate.memory_stacks import micro_batch_loss_kernel as _micro_batch_loss_kernel
from gpuwork.estimate.memory_stacks import returned_logits_copy as _returned_logits_copy
from gpuwork.estimate.memory_terms import ALLOCATOR_SLACK, SOURCES, TERM_LABELS
from gpuwork.estimate.model_states import (
    ModelStates,
    adapter_state_bytes,
    model_states,
    optimizer_step_temporary,
    sharded_qlora,
    state_bytes_per_param,
    unsharded_quant_state,
)
from gpuwork.estimate.recompute import check_traced_recompute, policy_kept_bytes
from gpuwork.estimate.weight_copies import autocast_copies, autocast_head_copy
from gpuwork.facts.block_profiles import matching_profile
from gpuwork.facts.rates import MOE_EXPERTS, StackProfile, with_stack_input_grads
from gpuwork.facts.spec import Linear, ModelSpec, ParamCounts, count_params, lora_target_linears
from gpuwork.message import Msg, msg
from gpuwork.plan import Attention, Method, Sharding, Task, TrainPlan
from gpuwork.units import GIB, MIB

# -- named constants (each with its source) ------------------------------------------------------

# CUDA context + loaded kernels + cuBLAS/cuDNN handles after the first training step, outside
# PyTorch's allocator. HF docs measured 1,343 MB on a V100 with eager module loading (CUDA 11);
# CUDA >= 11.7 lazy loading brings it to roughly 0.5-0.8 GiB on A100/H100 (PyTorch CUDA semantics
# docs, "lazy loading"); one public estimator uses 1,000 MiB. We use 1 GiB.
CUDA_CONTEXT_BYTES = 1024 * MIB
# cuBLAS workspace allocated through the caching allocator on Hopper (PyTorch CUDA semantics:
# CUBLAS_WORKSPACE_CONFIG default ":4096:8" + ":16:8" = 4 MiB * 8 + ...; 32 MiB on sm90).
CUBLAS_WORKSPACE_BYTES = 32 * MIB
# Block allocations round up to 512 B and large segments to 2 MiB (c10/cuda/CUDACachingAllocator.cpp);
# covered by ALLOCATOR_SLACK (estimate.memory_terms).

# DDP (gradient_as_bucket_view=False, the default) copies gradients into flat buckets that cover
# every trainable parameter: one more gradient-sized buffer (torch DDP docs, gradient_as_bucket_view).
_DDP_BUCKET_COPIES = 1
# Backward through one block keeps, besides its weight gradients, gradients of its intermediate
# tensors: measured with gpuwork trace on Llama-style blocks (tiny-llama, T = 1-4k tokens) as
# about this many intermediate-sized (I) tensors of the activation dtype.
_BLOCK_BACKWARD_TRANSIENT_I = 1.5


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory of one training step, in bytes.

    ``breakdown`` lists the terms present at the peak; the allocated terms add up to
    ``peak_allocated_bytes``, and with ``allocator_cache`` and ``cuda_context`` to
    ``device_total_bytes``.
    """

    plan: TrainPlan
    params: ParamCounts
    breakdown: dict[str, int]
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    device_total_bytes: int
    peak_phase: str  # "forward", "loss backward", "block backward", "optimizer step"
    phase_peaks: dict[str, int]  # allocated bytes at each candidate moment
    sources: dict[str, str] = field(default_factory=dict)
    warnings: tuple[Msg, ...] = ()  # catalog messages (gpuwork.present.messages renders them)
    host_bytes: int = 0  # CPU RAM used by offloaded states and activations (not on the GPU)
    # bytes copied between GPU and CPU RAM per optimizer step by activation offload (out in forward, back in
    # backward); the time model prices them over the host link
    host_transfer_bytes: int = 0

    @property
    def traceable_bytes(self) -> int:
        """The estimate comparable to a trace: live tensors of the step at the peak, in bytes.

        ``peak_allocated_bytes`` less the cuBLAS workspace: weights, gradients, optimizer states,
        activations, logits, temporaries and sharding buffers — what ``gpuwork trace`` (fake
        tensors) and PyTorch's MemTracker on a real CPU step measure. The workspace is left out
        because it is no tensor of the step: cuBLAS takes it from the CUDA caching allocator at the
        first GEMM and keeps it, so ``max_memory_allocated`` on a GPU counts it but neither a
        traced nor a CPU step ever creates it.
        """
        return self.peak_allocated_bytes - self.breakdown.get("cublas_workspace", 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "peak_allocated_bytes": self.peak_allocated_bytes,
            "peak_reserved_bytes": self.peak_reserved_bytes,
            "device_total_bytes": self.device_total_bytes,
            "breakdown": dict(self.breakdown),
            "peak_phase": self.peak_phase,
            "phase_peaks": dict(self.phase_peaks),
            "host_bytes": self.host_bytes,
            "host_transfer_bytes": self.host_transfer_bytes,
            "warnings": [w.as_dict() for w in self.warnings],
        }


# -- activations -----------------------------------------------------------------------------------


def _trained_layers(spec: ModelSpec, plan: TrainPlan) -> int:
    """Blocks whose own weights train (the last ones for freeze; none for adapters)."""
    if plan.method in (Method.FULL, Method.SCRATCH):
        return spec.num_layers
    if plan.method is Method.FREEZE:
        return min(plan.trainable_layers, spec.num_layers)
    return 0


def _consumer_saved(x_elems: int, x_bytes: int, consumers: list[Linear], trainable: bool,
                    lora: set[str], plan: TrainPlan, dt: Dtypes, already_saved: bool = False) -> int:
    """Bytes per token saved for backward because linears consume X.

    A linear saves its input only to compute its weight gradient (torch addmm/mm backward), so a
    frozen linear saves nothing; peft's LoRA casts X to the adapter dtype (fp32) and lora_A saves
    it — a copy per adapter when X is 16-bit, X itself when it already has that dtype; lora_dropout > 0
    saves its output in the adapter dtype and a 1-byte mask instead (peft lora/layer.py Linear.forward).
    """
    saved = 0
    x_saved = already_saved
    if trainable and consumers and plan.fp8_linear:
        # each FP8 linear keeps its own FP8 (1-byte) transposed input for the weight gradient (docs/fp8.md)
        return x_elems * len(consumers)
    if trainable and consumers and not x_saved:
        if dt.autocast:
            saved += 2 * x_elems * len(consumers)  # each autocast linear saves its own 16-bit cast
        else:
            saved += x_bytes * x_elems
            x_saved = True
    lora_bytes = dt.lora_saved or dt.adapter
    for lin in consumers:
        if lin.name not in lora:
            continue
        if plan.lora_dropout > 0:
            saved += (lora_bytes + 1) * x_elems
        elif dt.lora_saved:
            saved += dt.lora_saved * x_elems  # each lora_A saves its own 16-bit cast
        elif x_bytes == dt.adapter and not dt.autocast:
            if not x_saved:
                saved += dt.adapter * x_elems
                x_saved = True
        else:
            saved += dt.adapter * x_elems
        saved += lora_bytes * plan.lora_r  # lora_A output, saved by lora_B
    return saved


@dataclass(frozen=True)
class _Activations:
    per_layer_trained: int  # bytes per token saved by one block whose weights train
    per_layer_frozen: int  # bytes per token saved by one block whose weights are frozen
    per_layer_quadratic: int  # bytes per token per token of context (eager attention matrices)
    checkpoint_per_layer: int  # bytes per token kept per block with gradient checkpointing
    mlp_saved: int  # bytes per token the MLP half of one trained block saves
    head: int  # bytes per token after the blocks: final norm, logits, loss (fwd end)
    head_logsoftmax: int  # part of head freed once the loss backward ran
    loss_backward: int  # transient bytes per token while the loss backward runs
    rotary: int  # bytes per token of cos/sin shared by all blocks
    inputs: int  # input ids, labels
    chunked_loss: bool = False  # fused linear cross-entropy: one chunk of logits at a time (not per token)
    logits_copy: int = 0  # bytes per token of a copy of the returned logits alive only at the forward's end
    loss_bytes: int = 4  # bytes per logit of an eager cross-entropy (fp32 upcast, or the logits' own: [M7])
    held: int = 0  # bytes per token of returned logits the loop holds through the whole step (eager-held, [M8])
    # of checkpoint_per_layer, the outputs torchtitan's op policy keeps beside the block input, one per tensor
    # (estimate.recompute)
    policy_kept: tuple[int, ...] = ()


def _norm_saved(spec: ModelSpec, dt: Dtypes, weight_trainable: bool, saves_input: bool = False) -> int:
    h = spec.hidden_size
    if spec.norm == "rms" and saves_input:
        # fused RMSNorm kernels (Liger, Unsloth) save their input as it is and one fp32 rstd per row
        return dt.stream * h + 4
    if spec.norm == "rms":
        # HF LlamaRMSNorm: x.to(fp32) saved by pow/mul, rsqrt (1 fp32/token), and x_hat cast back to
        # the input dtype saved by the weight multiply when the weight trains.
        return 4 * h + 4 + (dt.stream * h if weight_trainable else 0)
    if composite_ops.composite_layer_norm(spec):  # written op by op (config norm_impl: "composite")
        return composite_ops.layer_norm_saved(dt.stream, h, weight_trainable)
    # torch native_layer_norm saves its input plus fp32 mean and rstd.
    return dt.stream * h + 8


def _head_activations(spec: ModelSpec, plan: TrainPlan, dt: Dtypes, fused_norm: bool,
                      loss_kernel: str) -> tuple[int, int, int]:
    """Bytes per token after the blocks: (final norm, head and loss saved, of which log_softmax's output, the loss
    backward's vocab-wide gradients), by the stack's loss kernel (stacks.csv loss_kernel)."""
    h, e = spec.hidden_size, dt.linear_out
    decoder_style = spec.norm == "rms"
    head_trainable = plan.method in (Method.FULL, Method.SCRATCH, Method.FREEZE)
    if decoder_style:
        final_norm = _norm_saved(spec, dt, head_trainable, fused_norm)
    else:
        final_norm = _norm_saved(spec, dt, head_trainable) if spec.model_type == "gpt2" else 0
    vocab = spec.vocab_size if spec.task is not Task.SEQ_CLS else max(spec.num_labels, 1)
    head_in = dt.stream * h if head_trainable else 0  # lm_head saves its input when it trains
    head_out_bytes = 4 if dt.linear_out == 4 else 2  # QLoRA: fp32 after prepare_model_for_kbit_training
    loss_bytes = _loss_logits_bytes(spec, plan.precision.is_mixed, loss_kernel, head_out_bytes)
    logsoftmax = loss_bytes * vocab
    logits_extra = 0
    if spec.extras.get("final_logit_softcapping"):
        logits_extra = head_out_bytes * vocab  # tanh saves its output (Gemma 2 soft-capping)
    mlm_head = 0
    if spec.task is Task.MASKED_LM and not decoder_style:
        mlm_head = 4 * e * h + 8  # transform dense in/out, GELU out, LayerNorm in
    head = final_norm + head_in + logsoftmax + logits_extra + mlm_head
    loss_backward = 2 * loss_bytes * vocab  # nll grad + log_softmax grad, vocab-wide
    if spec.task is Task.CAUSAL_LM and loss_kernel == "chunked":
        # Liger fused linear cross-entropy: the forward computes loss and input gradient chunk by chunk and
        # keeps only the (tokens x h) input gradient and fp32 per-token losses; the chunk of logits is a
        # transient counted per step (_chunked_logits_bytes); lm_head's own input is not saved
        head, logsoftmax, loss_backward = final_norm + dt.stream * h + 4, 0, 0
    elif spec.task is Task.CAUSAL_LM and loss_kernel in ("inplace", "inplace-returned"):
        # Unsloth Fast_CrossEntropyLoss: keeps the 16-bit logits and one fp32 logsumexp per row (soft-capping
        # inside the kernel) and writes the gradient into the logits in place: no fp32 copy, no second buffer
        logsoftmax = head_out_bytes * vocab
        head, loss_backward = final_norm + head_in + logsoftmax + 4, 0
    elif spec.task is Task.CAUSAL_LM and loss_kernel == "chunked-fp32":
        # Lit-GPT under Fabric [M5]: Fabric's wrapper casts each 128-token logit chunk to fp32 and the loop keeps
        # them; each chunk's fp32 log_softmax output, saved, is traded chunk by chunk for its gradient in backward
        # (one 128-row chunk transient, not counted); the chunked head skips any final soft-capping
        logsoftmax = 4 * vocab
        head, loss_backward = final_norm + head_in + 2 * logsoftmax, 0
    return head, logsoftmax, loss_backward


def _eager_core(spec: ModelSpec, dt: Dtypes, decoder_style: bool) -> tuple[int, int]:
    """Eager attention's saved bytes per token (q, k, v) and per token per token of context (the s x s ones)."""
    # HF eager_attention_forward: repeat_kv copies K and V to all heads; Llama-style models take the softmax in fp32
    # and save it, then the cast back that the P@V matmul saves (GPT-2/BERT softmax in the compute dtype); dropout
    # saves a 1-byte mask and its output. The out projection saves the output's transpose(1, 2).contiguous() copy.
    a, kv, d, e = spec.num_heads, spec.num_kv_heads, spec.head_dim, dt.linear_out
    core = e * a * d + 2 * e * d * (a if kv < a else kv)  # q, and k and v (repeated to every head when fewer)
    # CUDA autocast runs softmax in fp32 (autocast fp32 op list) and P@V casts P to 16 bit.
    probs = 4 if (decoder_style or dt.autocast) else e
    quadratic = probs * a + (e * a if probs != e else 0)
    if composite_ops.composite_softmax(spec):  # x - max, exp, sum, divide op by op (estimate.composite_ops)
        quadratic = composite_ops.softmax_saved(e, dt.autocast) * a
        core += composite_ops.softmax_row_saved(e, dt.autocast) * a
    if spec.extras.get("attn_logit_softcapping"):
        quadratic += e * a  # tanh soft-capping saves its output (Gemma 2)
    if spec.attention_dropout > 0:
        quadratic += (probs + 1) * a
    return core, quadratic


def _activations(spec: ModelSpec, plan: TrainPlan, dt: Dtypes, stack: StackProfile | None = None) -> _Activations:
    h, a, kv, d = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim
    q_dim, kv_dim = a * d, kv * d
    inter = spec.intermediate_size
    e = dt.linear_out
    groups = block_groups(spec)
    lora = {lin.name for lin in lora_target_linears(spec, plan.lora_targets)} if plan.uses_adapters else set()
    moe = spec.num_experts > 1
    k_exp = spec.experts_per_token if moe else 1
    decoder_style = spec.norm == "rms"
    fused_norm = stack is not None and stack.rmsnorm_saves == "input"
    loss_kernel = _micro_batch_loss_kernel(plan, stack.loss_kernel) if stack is not None else "eager"
    fused = _fused_lora_groups(spec, plan, stack, lora)

    def block(trainable: bool) -> tuple[int, int, int]:
        lin_saved = 0
        norms = 2 * spec.norms_per_sublayer  # attention and MLP (Gemma 2/3: before and after each)
        norm_bytes = norms * _norm_saved(spec, dt, trainable, fused_norm) if decoder_style else 0
        fused_here = fused if not trainable else frozenset()
        # attention input: norm output (decoder) or block input (BERT post-LN: the stream itself)
        if "attn_in" in fused_here:
            lin_saved += dt.stream * h  # LoRA_QKV saves X once for q, k and v; X @ A is recomputed in backward
        else:
            lin_saved += _consumer_saved(h, dt.stream, groups["attn_in"], trainable, lora, plan, dt)
        # attention core (SDPA / flash: q, k, v, output and fp32 logsumexp; torch
        # _scaled_dot_product_flash_attention saves these, no s x s matrix)
        quadratic = 0
        if plan.attention is Attention.EAGER:
            core, quadratic = _eager_core(spec, dt, decoder_style)
            core_out_saved = 0
        else:
            ea = dt.attn_saved or e  # (GPT-2's fused c_attn output: one storage, same bytes)
            sdpa_kv = q_dim if sdpa_kv_repeated(spec, plan, stack) else kv_dim  # repeat_kv's copies or not [M10]
            core = ea * (q_dim + 2 * sdpa_kv) + ea * q_dim + 4 * a
            core_out_saved = ea * q_dim  # the SDPA output, viewed (no copy) by the out projection
        if "attn_out" in fused_here:
            attn_out = 0 if core_out_saved else e * q_dim  # LoRA_W saves its input X, nothing else
        else:
            attn_out = _consumer_saved(q_dim, e, groups["attn_out"], trainable, lora, plan, dt,
                                       already_saved=core_out_saved > 0)
        # MLP
        mlp_in = _consumer_saved(h, dt.stream, groups["mlp_in"], trainable, lora, plan, dt)
        # activation: torch's fused SiLU/GELU save their input; GPT-2's gelu_new is a composite of pow, tanh and
        # muls that saves four intermediate-sized tensors (NewGELUActivation), unless the stack calls F.gelu [M5]
        act_saved = 4 if spec.activation in ("gelu_new", "gelu_fast") and not (stack and stack.torch_gelu) else 1
        composite_silu = composite_ops.composite_silu(spec)
        act_saved = 2 if composite_silu else act_saved  # x * sigmoid(x): x and sigmoid's output
        if spec.mlp_gated:
            # act(gate) saves gate; gate*up saves both operands; a fused SwiGLU kernel saves gate and up
            # only and recomputes act(gate) in backward (stacks.csv swiglu_saved)
            gated = act_saved + 2
            # Inductor recomputes a hand-written x * sigmoid(x) as it does F.silu (the compiled stacks' saved set;
            # docs/memory_misses.md "Held-out memory 16"): the composite form adds nothing there
            if stack is not None and stack.swiglu_saved < 3 and (act_saved == 1 or composite_silu):
                gated = stack.swiglu_saved
            mlp_core = gated * e * inter * k_exp
        else:
            mlp_core = act_saved * e * inter
        if moe:
            # router logits + softmax (fp32) and the top-k routing weights
            mlp_core += 4 * 2 * spec.num_experts + 4 * k_exp
            hidden_consumers = [lin for lin in spec.block_linears if lin.experts > 1 and "down" in lin.name]
            x_b = 1 if plan.fp8_linear else e  # an FP8 expert linear keeps its input in FP8
            mlp_hidden = (x_b * inter * k_exp) if (trainable and hidden_consumers) else 0
        else:
            mlp_hidden = _consumer_saved(inter, e, groups["mlp_hidden"], trainable, lora, plan, dt)
        if "mlp" in fused_here:
            # LoRA_MLP saves X, gate and up only; act(gate) * up, the down projection's input, is recomputed
            mlp_in, mlp_core, mlp_hidden = dt.stream * h, 2 * e * inter, 0
        dropout = 0
        if spec.hidden_dropout > 0:
            dropout += 2 * h  # 1-byte masks of the two residual dropouts
        if not decoder_style:
            # GPT-2 pre-LN and BERT post-LN: two LayerNorms per block save their inputs
            norm_bytes = 2 * _norm_saved(spec, dt, trainable)
        linear = norm_bytes + lin_saved + core + attn_out + mlp_in + mlp_core + mlp_hidden + dropout
        return linear, quadratic, mlp_in + mlp_core + mlp_hidden

    trained, quad, mlp_saved = block(True)
    frozen, _, _ = block(False)

    head, logsoftmax, loss_backward = _head_activations(spec, plan, dt, fused_norm, loss_kernel)
    rotary = 2 * d * dt.stream if spec.extras.get("position_embedding") == "rope" else 0
    inputs = 8 * 3  # input ids, labels, shifted labels (int64)
    if spec.hidden_dropout > 0:
        inputs += h  # embedding dropout mask
    # gradient checkpointing (HF per-block, non-reentrant torch.utils.checkpoint): each block keeps its input only,
    # and under torchtitan's op policy the outputs the policy keeps
    kept = policy_kept_bytes(spec, plan, dt)
    ckpt = dt.stream * h + sum(kept)
    return _Activations(trained, frozen, quad, ckpt, mlp_saved, head, logsoftmax, loss_backward, rotary, inputs,
                        chunked_loss=spec.task is Task.CAUSAL_LM and loss_kernel == "chunked",
                        logits_copy=_returned_logits_copy(spec, plan, loss_kernel),
                        held=_held_logits_bytes(spec, loss_kernel),
                        loss_bytes=_loss_logits_bytes(spec, plan.precision.is_mixed, loss_kernel, 4 if e == 4 else 2),
                        policy_kept=kept)


def _fused_lora_groups(spec: ModelSpec, plan: TrainPlan, stack: StackProfile | None,
                       lora: set[str]) -> frozenset[str]:
    """The block's linear groups a fused-LoRA stack (Unsloth: stacks.csv fused_lora) runs through its own autograd
    functions, which save only their input (and the MLP's gate and up): q/k/v, o and a gated MLP, each where every
    linear of the group carries an adapter and the adapters have no dropout (Unsloth patches only then)
    (docs/memory_misses.md, "Unsloth's fused LoRA functions")."""
    if stack is None or not stack.fused_lora or not plan.uses_adapters or plan.lora_dropout > 0 \
            or spec.num_experts > 1 or spec.norm != "rms":
        return frozenset()
    members = [lin for group in block_groups(spec).values() for lin in group]
    out = set()
    for name, shorts in _FUSED_LORA_GROUPS.items():
        chosen = [lin for lin in members if lin.short_name in shorts]
        if {lin.short_name for lin in chosen} == set(shorts) and all(lin.name in lora for lin in chosen):
            out.add(name)
    if not spec.mlp_gated:
        out.discard("mlp")
    return frozenset(out)


# Unsloth's LoRA_QKV, LoRA_W and LoRA_MLP autograd functions (unsloth/kernels/fast_lora.py)
_FUSED_LORA_GROUPS = {"attn_in": ("q_proj", "k_proj", "v_proj"), "attn_out": ("o_proj",),
                      "mlp": ("gate_proj", "up_proj", "down_proj")}


# -- the estimate ----------------------------------------------------------------------------------


def stack_profile(plan: TrainPlan, spec: ModelSpec, stack: StackProfile | None = None) -> StackProfile | None:
    """What ``plan.stack`` changes in memory: ``stack`` when given, else the profile that
    ``gpuwork.facts.resolve`` put at hand in ``spec.extras["stacks"]`` (None: eager Hugging Face behaviour)."""
    if stack is not None:
        return stack
    stacks = spec.extras.get("stacks") or {}
    return stacks.get(plan.stack)


def _block_activations(spec: ModelSpec, plan: TrainPlan, dt: Dtypes,
                       profile: StackProfile | None) -> _Activations:
    """Bytes per token the blocks save: the hand-written block's, or what autograd saved in a traced block that
    matches the plan (a + b x seq_len bytes per token, or only the block's input under gradient checkpointing)."""
    act = _activations(spec, plan, dt, profile)
    block_profile = matching_profile(spec, plan)
    if block_profile is not None:
        check_traced_recompute(plan, spec)  # so no op-policy outputs to add to the traced input
        per_layer, quadratic = round(block_profile.saved_bytes.a), round(block_profile.saved_bytes.b)
        act = dataclasses.replace(act, per_layer_trained=per_layer, per_layer_frozen=per_layer,
                                  per_layer_quadratic=quadratic, checkpoint_per_layer=round(block_profile.input_bytes))
    kept = kept_4bit_inputs(spec, plan, profile, block_groups(spec), (dt.stream, dt.linear_out),  # older bnb [M5]
                            0 if dt.lora_saved or dt.autocast else dt.adapter)
    return dataclasses.replace(act, per_layer_trained=act.per_layer_trained + kept,
                               per_layer_frozen=act.per_layer_frozen + kept) if kept else act


def _plan_warnings(spec: ModelSpec, plan: TrainPlan, states: ModelStates, counts: ParamCounts,
                   linear_experts: bool = False) -> list[Msg]:
    """What the figures leave out or assume about this plan: a sequence past the model's positions, no SDPA path,
    experts bitsandbytes does not quantize, fp32 master weights."""
    warnings: list[Msg] = []
    if spec.max_position and plan.seq_len > spec.max_position:
        warnings.append(msg("memory.seq_len_above_max", seq_len=plan.seq_len, model=spec.name,
                            max_position_embeddings=spec.max_position))
    if spec.extras.get("attn_logit_softcapping") and plan.attention is Attention.SDPA:
        warnings.append(msg("memory.no_sdpa_path", architecture=spec.architecture))
    expert_params = sum(lin.count * lin.params for lin in spec.linears if lin.experts > 1)
    if plan.method is Method.QLORA and expert_params and not linear_experts:
        # bitsandbytes swaps nn.Linear only; transformers 5 fuses a layer's experts into one Parameter, which
        # prepare_model_for_kbit_training then upcasts to fp32 (counted in weight_bytes' "rest")
        warnings.append(msg("memory.moe_experts_unquantized", model=spec.name, params=expert_params,
                            expert_bytes=4 * expert_params, nf4_bytes=expert_params // 2))
    if plan.fp32_master_weights:  # the precision the named software runs, said where the figures are shown
        per_param = (states.weights + states.gradients + states.optimizer) // max(counts.trainable, 1)
        warnings.append(msg("memory.fp32_master", sharding=plan.sharding.value, precision=plan.precision.value,
                            bytes_per_param=per_param))
    return warnings


def _per_gpu_states(plan: TrainPlan, states: ModelStates) -> tuple[int, int, int, int, int, int]:
    """(weights, gradients, optimizer states, paged optimizer states, host bytes, sharding buffers) per GPU after
    sharding (ZeRO paper §5) and offload."""
    sharding, n_gpus = plan.sharding, plan.shard_ranks  # HSDP: one shard group
    weights, grads, opt = states.weights, states.gradients, states.optimizer
    host = 0
    sharding_buffers = 0
    if sharding is Sharding.DDP and plan.gpus > 1:
        sharding_buffers += _DDP_BUCKET_COPIES * grads
    if sharding.shards_optimizer:
        opt = math.ceil(opt / n_gpus)  # ZeRO paper §5: P_os
    if sharding.shards_gradients:
        grads = math.ceil(grads / n_gpus)  # P_os+g
    if sharding.per_unit:  # hsdp-zero2 too: sharded between steps, gathered unit by unit (_gathered)
        weights = math.ceil(weights / n_gpus)  # P_os+g+p
    if plan.offload_optimizer:
        host += opt
        opt = 0
    if plan.offload_params:
        host += weights
        weights = 0
    paged = states.optimizer_paged
    if sharding.shards_optimizer:
        paged = math.ceil(paged / n_gpus)
    return weights, grads, opt, paged, host, sharding_buffers


@dataclass(frozen=True)
class _Saved:
    """What the step keeps for backward at the longest micro-batch, in bytes per GPU."""

    trained_layers: int
    activations: int  # the blocks' saved tensors (or checkpointed inputs) + rotary tables and inputs
    shared: int  # rotary tables and inputs
    recompute: int  # one block's forward re-run under checkpointing
    logits: int
    logits_chunk: int  # alive only in the forward: one chunk of a fused linear cross-entropy, or the logits' copy
    held: int  # returned logits a loop holds from one forward to the next (eager-held, [M8])
    offloaded: int  # checkpointed block inputs kept in CPU RAM (a stack's offloaded checkpointing)
    head_rows: int  # rows the head and loss run on: every token, or the masked positions BERT's scripts gather
    block_input: int = 0  # one checkpointed block's input (0 without checkpointing)
    saving_blocks: int | None = None  # blocks that keep tensors for backward (None: every block)
    # one block's outputs an op-level policy keeps: its recompute takes them back (torch's selective checkpointing
    # pops its cache), so a block's backward holds them in ``recompute`` or not at all
    policy_kept: int = 0
    # checkpointing one block in n: what a block without it keeps, and how many such blocks lie above the topmost
    # checkpointed one (their tensors are freed before the first recompute)
    plain_block: int = 0
    plain_above: int = 0


def _saved_activations(spec: ModelSpec, plan: TrainPlan, act: _Activations, profile: StackProfile | None,
                       dt: Dtypes) -> _Saved:
    """The activations the step saves for backward at the plan's longest micro-batch."""
    seq_len = plan.longest_batch_len
    tokens = plan.batch_size * seq_len
    quad = act.per_layer_quadratic * seq_len
    trained_layers = _trained_layers(spec, plan)
    trained_bytes = (act.per_layer_trained + quad) * tokens
    # blocks the backward runs through: under freeze only the trained ones, unless the embeddings' output requires
    # grad (input_require_grads, decided as the step's time decides it: the plan's, else its stack's)
    gradient_blocks = spec.num_layers
    if plan.method is Method.FREEZE:
        decided = (plan.with_input_grads(profile.embeddings_hooked) if profile is not None
                   else with_stack_input_grads(plan))  # a spec resolved without its stack profiles
        gradient_blocks = decided.gradient_blocks(spec.num_layers)
    if plan.method is Method.FREEZE and gradient_blocks < spec.num_layers:
        # the frozen blocks sit below the trained ones and no gradient reaches them: autograd saves nothing
        frozen_bytes = 0
    else:  # frozen weights whose inputs need a gradient save what that gradient reads
        frozen_bytes = (act.per_layer_frozen + quad) * tokens
    first_norm_saving = 0
    fused_norm = profile is not None and profile.rmsnorm_saves == "input"
    input_needs_grad = plan.method is Method.FREEZE and gradient_blocks == spec.num_layers
    if (plan.method not in (Method.FULL, Method.SCRATCH) and spec.norm == "rms" and not fused_norm
            and not input_needs_grad):
        # the first saving block reads hidden states that need no gradient (frozen embeddings), so
        # its first RMSNorm keeps neither the fp32 input nor rsqrt
        first_norm_saving = (4 * spec.hidden_size + 4) * tokens
    offloaded = 0
    plain_block = plain_above = 0
    if plan.grad_checkpointing:
        # (under freeze, where only the decided plan knows the blocks the backward reaches, it is every one of them)
        checkpointed = gradient_blocks if plan.recompute_every == 1 else plan.checkpointed_blocks(spec.num_layers)
        blocks_saved = act.checkpoint_per_layer * tokens * checkpointed
        if checkpointed < gradient_blocks:
            # one block in n (recompute_every, never freeze): the others keep what they keep without it; block 0
            # is a checkpointed one, so no block reads hidden states that need no gradient
            plain_block = trained_bytes if trained_layers else frozen_bytes
            blocks_saved += (gradient_blocks - checkpointed) * plain_block
            plain_above = plan.blocks_above_last_checkpointed(spec.num_layers)
        if profile is not None and profile.checkpoint == "offload" and spec.num_layers > 1:
            # Unsloth's offloaded checkpointing copies each block input to CPU RAM as it is made and back
            # for that block's backward: one block input stays on the GPU (unsloth_zoo gradient_checkpointing)
            offloaded = blocks_saved - act.checkpoint_per_layer * tokens
            blocks_saved -= offloaded
        recompute = max(trained_bytes if trained_layers else 0, frozen_bytes)  # one block re-runs forward
    else:
        blocks_saved = (trained_layers * trained_bytes + (spec.num_layers - trained_layers) * frozen_bytes
                        - first_norm_saving)
        recompute = 0
    shared = (act.rotary + act.inputs) * tokens
    activations = blocks_saved + shared
    predicted = plan.mlm_predictions if spec.task is Task.MASKED_LM else None  # BERT scripts: docs/memory_misses.md
    head_rows = plan.batch_size * min(predicted, seq_len) if predicted else tokens
    logits = act.head * head_rows
    # fused linear cross-entropy: one chunk of logits exists at a time, during the forward
    logits_chunk = _chunked_logits_bytes(spec, tokens, dt.stream) if act.chunked_loss else act.logits_copy * tokens
    policy_kept = sum(act.policy_kept) * tokens
    block_input = act.checkpoint_per_layer * tokens - policy_kept if plan.grad_checkpointing else 0
    # under freeze with the backward stopping at the trained blocks, only the blocks it runs through keep tensors
    saving = gradient_blocks if plan.method is Method.FREEZE and gradient_blocks < spec.num_layers else None
    return _Saved(trained_layers, activations, shared, recompute, logits, logits_chunk, act.held * head_rows,
                  offloaded, head_rows, block_input, saving, policy_kept, plain_block, plain_above)


def _per_gpu_optimizer_temporary(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts,
                                 state_b: int | None = None) -> int:
    """The optimizer step's temporaries on one GPU (none when the step runs on the host)."""
    opt_temp = optimizer_step_temporary(spec, plan, counts, state_b)
    if plan.offload_optimizer:
        return 0
    if plan.sharding.shards_optimizer:
        return math.ceil(opt_temp / plan.shard_ranks)
    return opt_temp


def _gathered(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, pb: int, trained_layers: int) -> dict[str, int]:
    """Gathered (unsharded) parameters and gradients of sharded plans, per moment of the step. FSDP2 wraps each
    block and the root (embeddings, head, final norm); the root stays gathered from forward to the end of backward
    (reshard_after_forward=False for the root), one block is gathered and the next prefetched, and a unit's full
    gradient exists until it is reduce-scattered (torch.distributed.fsdp fully_shard docs; checked with
    FSDPMemTracker under a fake process group)."""
    gather = dict.fromkeys(("forward", "loss backward", "block backward", "backward end", "optimizer step"), 0)
    if plan.sharding.per_unit:
        compute_bytes = plan.precision.compute_bytes
        root = spec.params_embedding + spec.params_head + spec.params_other
        if fsdp_16bit_compute(plan):
            pb = compute_bytes  # a unit's full gradient comes in its 16-bit compute dtype, then is reduce-scattered
        block_grad = pb * (spec.params_block if trained_layers else counts.trainable // max(spec.num_layers, 1))
        root_grad = pb * (root if plan.method in (Method.FULL, Method.SCRATCH) else 0)
        block = _gathered_block_bytes(spec, plan, counts)
        if plan.whole_fsdp_unit:  # one unit: the whole model and its gradients (memory_stacks.whole_unit_gathered)
            return whole_unit_gathered(compute_bytes * (root + counts.adapter) + spec.num_layers * block,
                                       pb * counts.trainable)
        gather["forward"] = gather["loss backward"] = compute_bytes * root + block
        gather["block backward"] = compute_bytes * root + 2 * block + block_grad
        gather["backward end"] = compute_bytes * root + root_grad
        if not plan.sharding.shards_params:  # hsdp-zero2: each block stays gathered from its forward to its backward
            kept = compute_bytes * root + spec.num_layers * block
            gather["forward"] = gather["loss backward"] = kept
            gather["block backward"] = kept + block_grad
    return gather


def _gathered_block_bytes(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts) -> int:
    """One decoder block's parameters as a sharded plan gathers them, in bytes (the compute dtype)."""
    compute_bytes = plan.precision.compute_bytes
    if plan.method is Method.QLORA:
        # a block is gathered as stored: bnb_4bit_quant_storage keeps the packed 4-bit data in a 16-bit tensor
        # of the same bytes, which is what FSDP / ZeRO-3 shard (bitsandbytes "FSDP-QLoRA" docs), 0.5 B a weight
        q_block = counts.quantized // max(spec.num_layers, 1)
        return q_block // 2 + compute_bytes * (spec.params_block - q_block)
    return compute_bytes * spec.params_block


# torch FSDP (fully_shard) shardings; DeepSpeed ZeRO-3 allocates on its own streams by its own rules
_FSDP_SHARDINGS = (Sharding.FSDP, Sharding.HSDP, Sharding.HSDP_ZERO2)


def _stream_pools(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, grads: int) -> int:
    """Bytes FSDP2 keeps reserved in the caching allocator's pools of its own CUDA streams, which the default
    stream cannot reuse (a block freed on one stream serves only that stream until the cache is emptied).

    All-gather copy-in stream: the flat all-gather output of a unit, held until the next unit's copy-out, beside
    the next unit's output and its shard cast to the compute dtype; the first pair of the forward is the root
    (embeddings, head, final norm) and the first block. Reduce-scatter stream: each unit's reduce-scatter output,
    which becomes its sharded gradient and lives until the next zero_grad, so all the sharded gradients. The
    reduce-scatter input is allocated on the default stream (pytorch#129721). torch
    distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_all_gather / foreach_reduce
    (docs/memory_misses.md#fsdp2s-stream-pools). 0 outside the FSDP shardings."""
    if plan.sharding not in _FSDP_SHARDINGS:
        return 0
    root = plan.precision.compute_bytes * (spec.params_embedding + spec.params_head + spec.params_other)
    block = _gathered_block_bytes(spec, plan, counts)
    if plan.whole_fsdp_unit:  # fsdp_wrap 'whole': one all-gather output, the whole model
        root, block = root + spec.num_layers * block + plan.precision.compute_bytes * counts.adapter, 0
    return max(root, block) + block + math.ceil(block / plan.shard_ranks) + grads


def _side_stream_pools(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, grads: int,
                       moments: dict[str, dict[str, int]], allocated_total: int) -> tuple[int, int]:
    """(the default stream's allocated peak, what the side streams' pools hold beyond the step's allocated peak),
    in bytes; (``allocated_total``, 0) without side pools. The sharded gradients counted at a moment of the step
    live in the reduce-scatter stream's pool, not the default stream's."""
    pools = _stream_pools(spec, plan, counts, grads)
    if not pools:
        return allocated_total, 0
    default = max(sum(terms.values()) - min(terms.get("gradients", 0), grads) for terms in moments.values())
    default += allocated_total - max(sum(terms.values()) for terms in moments.values())  # the states, cuBLAS
    return default, default + pools - allocated_total


@dataclass(frozen=True)
class _ReservedInputs:
    """What the reserved estimate reads beyond the step's tensors: the side streams' pools beyond the peak
    (``_side_stream_pools``), the card's memory, which bounds the fixed-shape replay's cache (None: unbounded), and
    whether the cache was emptied before the measured step (``estimate_memory``'s ``cache_emptied``)."""

    side_pools: int = 0
    device_bytes: int | None = None
    cache_emptied: bool = False


def _reserved(spec: ModelSpec, plan: TrainPlan, act: _Activations, saved: _Saved, allocated_total: int,
              mlp_transient_per_token: int, breakdown: dict[str, int], inputs: _ReservedInputs) -> int:
    """Bytes the caching allocator reserves for ``allocated_total`` (the default stream's peak): its slack and,
    under batches of varying length, the fragmentation of a replay rule by rule (gpuwork.estimate.allocator), and
    the side streams' pools (``_stream_pools``); the terms go to ``breakdown``."""
    side_pools, device_bytes, cache_emptied = inputs.side_pools, inputs.device_bytes, inputs.cache_emptied
    breakdown["cublas_workspace"] = CUBLAS_WORKSPACE_BYTES
    if not side_pools and allocator_step.replayed(spec, plan):
        # a hand-written model with fixed shapes, every tensor known: the cache from a whole-step replay instead of
        # ALLOCATOR_SLACK, within what the card leaves beyond the allocated peak and the CUDA context; the replay's
        # last step starts from the emptied cache where the run emptied it (gpuwork.estimate.allocator_emptied)
        step = _step_tensors(spec, plan, act, saved, mlp_transient_per_token)
        room = None if device_bytes is None else device_bytes - CUDA_CONTEXT_BYTES - allocated_total
        cache = emptied_step_cache if cache_emptied else allocator_step.fixed_step_cache
        breakdown["allocator_segments"] = cache(spec, plan, step, act.per_layer_quadratic, room)
        return allocated_total + breakdown["allocator_segments"]
    # elsewhere an emptied cache changes nothing: ALLOCATOR_SLACK is a ratio read from runs, not a replay of
    # the step's tensors, so nothing says where they would land (docs/memory_misses.md, "The cache emptied ...")
    reserved = int(allocated_total * (1 + ALLOCATOR_SLACK))
    breakdown["allocator_cache"] = reserved - allocated_total
    if side_pools:  # the side streams' tensors at the peak lie beyond the default stream's peak, in their pools
        breakdown["stream_pools"] = side_pools
        reserved = sum(breakdown.values())  # the step's allocated terms, the default stream's cache, the pools
    hist = plan.length_histogram
    if hist is not None and len(hist) > 1:
        # batches of varying length: blocks cut for one length do not hold the next one's tensors, so the
        # allocator maps more segments; replayed rule by rule, as the excess over the same replay with every
        # batch at the longest length (the fixed-shape cache is ALLOCATOR_SLACK); over ORDERS random orders, the
        # largest (docs/memory_lengths.md, "... and the sizing rule")
        tokens = plan.batch_size * plan.longest_batch_len
        step = _step_tensors(spec, plan, act, saved, mlp_transient_per_token)
        mix = padded_mix(hist, plan.batch_size)
        varied = reserved_over_orders(step, mix, plan.batch_size, plan.expandable_segments)[-1]
        steady, _ = replay(step, (tokens,) * 3, plan.expandable_segments)
        breakdown["allocator_fragmentation"] = max(varied - steady, 0)
        reserved += breakdown["allocator_fragmentation"]
    return reserved


def _backward_gradients(spec: ModelSpec, plan: TrainPlan, pb: int, grads: int) -> tuple[int, int]:
    """(output layer's gradient, one block's gradients) per GPU while backward runs through a block."""
    lm_head_trainable = plan.method in (Method.FULL, Method.SCRATCH, Method.FREEZE)  # params_head: untied part
    g_head = pb * spec.params_head if lm_head_trainable else 0
    if plan.sharding.shards_gradients:
        g_head = math.ceil(g_head / plan.shard_ranks)
    g_block = grads // max(spec.num_layers, 1) if plan.method is not Method.FREEZE else (
        pb * spec.params_block)
    if plan.uses_adapters:
        g_block = grads // max(spec.num_layers, 1)
    return g_head, g_block


def _block_backward_transients(spec: ModelSpec, plan: TrainPlan, act: _Activations, dt: Dtypes) -> tuple[int, int]:
    """(the MLP's, the larger of the MLP's and attention's) temporaries of backward through one block.

    The MLP part runs first (gradients of its intermediates), then attention, whose eager softmax backward
    materialises an fp32 s x s gradient per head (torch _softmax_backward_data; a softmax written op by op holds
    more: estimate.composite_ops); by then the MLP's saved tensors are freed unless the block was just recomputed
    (checkpointing). Measured with gpuwork trace (Llama, BERT, GPT-2 blocks).
    """
    seq_len = plan.longest_batch_len
    tokens = plan.batch_size * seq_len
    mlp_transient = int(_BLOCK_BACKWARD_TRANSIENT_I * dt.linear_out * spec.intermediate_size
                        * max(spec.experts_per_token, 1) * tokens)
    per_pair = 4 if not composite_ops.composite_softmax(spec) else composite_ops.softmax_backward_transient(
        dt.linear_out, dt.autocast)
    attn_transient = per_pair * spec.num_heads * seq_len * tokens if plan.attention is Attention.EAGER else 0
    if not plan.grad_checkpointing:
        attn_transient -= act.mlp_saved * tokens
    return mlp_transient, max(mlp_transient, attn_transient)


def expert_linears(plan: TrainPlan, spec: ModelSpec, profile: StackProfile | None,
                   moe_experts: str | None = None) -> bool:
    """Whether a MoE model's experts are ``nn.Linear`` modules ("loop": transformers 4.x) rather than fused 3-D
    tensors ("fused": transformers 5): ``moe_experts`` when given (the run's software differs from its stack's),
    else the stack's stacks.csv column. QLoRA quantises the former and leaves the latter in 16 bits."""
    layout = checked_moe_experts(moe_experts) or (profile.moe_experts if profile is not None else "fused")
    return layout == "loop" and spec.num_experts > 1


def checked_moe_experts(moe_experts: str | None) -> str | None:
    """A MoE expert layout asked for, checked against stacks.csv's choices (None: the stack's own).

    Raises:
        PlanError: an unknown layout.
    """
    if moe_experts is not None and moe_experts not in MOE_EXPERTS:
        raise PlanError("moe_experts", msg("error.plan.choice", field="moe_experts", value=repr(moe_experts),
                                           allowed=", ".join(MOE_EXPERTS)))
    return moe_experts


def estimate_memory(plan: TrainPlan, spec: ModelSpec, stack: StackProfile | None = None,
                    moe_experts: str | None = None, device_bytes: int | None = None,
                    cache_emptied: bool = False) -> MemoryEstimate:
    """Per-GPU peak of one steady-state training step of ``plan`` (or its in-run evaluation), in bytes.

    Args:
        plan: the run (memory reads everything above ``dataset_tokens``).
        spec: the model's spec (``gpuwork.facts.resolve(plan).spec``). For a family without a hand-written
            block model, a traced profile of its block that matches the plan (``spec.extras["block_profiles"]``)
            gives the bytes the real block saves for backward instead of the nearest family's.
        stack: what ``plan.stack`` changes (stacks.csv memory columns); default ``spec.extras["stacks"]``'s, else HF.
        moe_experts: a MoE model's expert layout when the run's transformers differs from its stack's
            ("loop": nn.Linear experts, quantised by QLoRA; "fused": 3-D tensors, left in 16 bits).
        device_bytes: the card's memory (gpus.csv ``memory_total_bytes``): the fixed-shape replay of a hand-written
            model (gpuwork.estimate.allocator_step) releases its cached segments when a new one would pass the card,
            as PyTorch's allocator does; None: not bounded.
        cache_emptied: a measurement's protocol, not the plan's: ``torch.cuda.empty_cache()`` before the measured
            step; the replay above starts it from the live tensors' segments (estimate.allocator_emptied).

    Raises:
        PlanError: an unknown ``moe_experts``.
    """
    profile = stack_profile(plan, spec, stack)
    linear_experts = expert_linears(plan, spec, profile, moe_experts)
    counts = count_params(spec, plan, linear_experts)
    adapter_weights = profile.adapter_weights if profile is not None else "fp32"  # docs/peft_adapter_dtype.md
    states = model_states(spec, plan, counts, adapter_weights)
    dt = memory_dtypes(plan, profile)
    act = _block_activations(spec, plan, dt, profile)
    warnings = _plan_warnings(spec, plan, states, counts, linear_experts)
    # the peak comes with the longest micro-batch: seq_len, or the longest length of the plan's histogram
    tokens = plan.batch_size * plan.longest_batch_len

    # --- model states per GPU after sharding -----------------------------------------------
    weights, grads, opt, paged, host, sharding_buffers = _per_gpu_states(plan, states)
    weights += unsharded_quant_state(plan, counts) + rope_cache_bytes(spec, plan, profile)  # buffers: unsharded

    # Mixed precision: autocast caches a 16-bit copy of every trained linear weight for the
    # forward and the matmuls keep it for backward (torch autocast weight cache; HF docs count
    # 18 B/param for mixed-precision AdamW).
    weight_copies = autocast_copies(spec, plan, counts)
    head_copy = autocast_head_copy(spec, plan, profile)  # alive until the head's backward
    grads, grads_during_fwd = flat_unit_gradients(spec, plan, counts, profile) or (  # Lit-GPT's FSDP1 units [M5]
        grads, grads if plan.grad_accum > 1 or gradients_from_start(plan) else 0)

    saved = _saved_activations(spec, plan, act, profile, dt)
    trained_layers, offloaded = saved.trained_layers, saved.offloaded

    # --- timeline ---------------------------------------------------------------------------
    pb = states.trainable_param_bytes
    g_head, g_block = _backward_gradients(spec, plan, pb, grads)
    mlp_transient, block_transient = _block_backward_transients(spec, plan, act, dt)

    opt_temp = _per_gpu_optimizer_temporary(spec, plan, counts, adapter_state_bytes(plan, adapter_weights))

    # Each moment of the step as named terms; the peak's terms are the breakdown.
    gather = _gathered(spec, plan, counts, pb, trained_layers)
    base_terms = {"weights": weights, "optimizer_states": opt}
    moments = _moments(act, saved, (grads, grads_during_fwd, g_head, g_block), (weight_copies, head_copy),
                       (block_transient, opt_temp))
    # DeepSpeed ZeRO's reduce bucket, fp32 gradient copies and master clone (gpuwork.estimate.deepspeed_memory)
    zero = zero_buffers(plan, counts.trainable, pb, grads, opt_temp)
    for name, terms in moments.items():
        terms["sharding_buffers"] = sharding_buffers + gather[name] + zero[name]
    phases = {name: sum(base_terms.values()) + sum(terms.values()) for name, terms in moments.items()}
    peak_phase = max(phases, key=lambda k: phases[k])
    breakdown = {**base_terms, **moments[peak_phase]}
    breakdown = {k: int(v) for k, v in breakdown.items()}
    allocated = int(sum(breakdown.values()))

    allocated_total = allocated + CUBLAS_WORKSPACE_BYTES
    default_total, pools = _side_stream_pools(spec, plan, counts, grads, moments, allocated_total)
    reserved = _reserved(spec, plan, act, saved, default_total, mlp_transient // max(tokens, 1), breakdown,
                         _ReservedInputs(pools, device_bytes, cache_emptied))
    allocated_total, reserved, breakdown, peak_phase = _in_run_evaluation(spec, plan, dt, act, saved, {
        **base_terms, **moments["forward"]}, mlp_transient // max(tokens, 1), (allocated_total, reserved, breakdown,
                                                                                 peak_phase, phases))
    breakdown["paged_optimizer_states"] = paged  # unified memory, resident when the GPU has room
    breakdown["cuda_context"] = CUDA_CONTEXT_BYTES
    device_total = reserved + paged + CUDA_CONTEXT_BYTES
    if plan.offload_optimizer or plan.offload_params:
        warnings.append(msg("memory.offload_host", host_bytes=host))
    host_transfer = 0
    if offloaded:
        host += offloaded
        host_transfer = 2 * offloaded * plan.grad_accum  # out in forward, back in backward, per micro-batch
        warnings.append(msg("memory.activation_offload", host_bytes=offloaded, transfer_bytes=host_transfer))
    return MemoryEstimate(
        plan=plan,
        params=counts,
        breakdown=breakdown,
        peak_allocated_bytes=allocated_total, peak_reserved_bytes=reserved,
        device_total_bytes=device_total,
        peak_phase=peak_phase,
        phase_peaks={k: int(v) + CUBLAS_WORKSPACE_BYTES for k, v in phases.items()},
        sources=SOURCES,
        warnings=tuple(warnings),
        host_bytes=host,
        host_transfer_bytes=host_transfer,
    )


def _moments(act: _Activations, saved: _Saved, gradients: tuple[int, int, int, int], copies: tuple[int, int],
             temporaries: tuple[int, int]) -> dict[str, dict[str, int]]:
    """Each moment of the step as named terms (the peak's terms are the breakdown): ``gradients`` = (all, alive
    during the forward, the head's, a block's), ``copies`` = autocast weight copies (blocks, head), ``temporaries`` =
    (a block backward's, the optimizer's)."""
    grads, grads_during_fwd, g_head, g_block = gradients
    autocast_copies, head_copy = copies
    block_transient, opt_temp = temporaries
    logits, logits_chunk, activations, shared, recompute = (saved.logits, saved.logits_chunk, saved.activations,
                                                            saved.shared, saved.recompute)
    held = saved.held  # the previous step's output in the forward, this step's from then on
    logits_after_loss = logits - act.head_logsoftmax * saved.head_rows + held
    moments: dict[str, dict[str, int]] = {
        "forward": {"gradients": grads_during_fwd, "activations": activations,
                    "autocast_weight_copies": autocast_copies + head_copy,
                    "logits_and_loss": logits + logits_chunk + held},
        "loss backward": {"gradients": grads_during_fwd, "activations": activations,
                          "autocast_weight_copies": autocast_copies + head_copy,
                          "logits_and_loss": logits + act.loss_backward * saved.head_rows + held},
        # the first recompute comes at the topmost checkpointed block, once the blocks above it are freed
        "block backward": {"gradients": grads_during_fwd + g_head + g_block,
                           "activations": activations + max(recompute - saved.policy_kept
                                                            - saved.plain_above * saved.plain_block, 0),
                           "autocast_weight_copies": autocast_copies, "logits_and_loss": logits_after_loss,
                           "temporaries": block_transient},
        # end of backward: every gradient exists, the first block's intermediates still transient
        "backward end": {"gradients": grads, "activations": shared, "temporaries": block_transient // 2},
        "optimizer step": {"gradients": grads, "temporaries": opt_temp},
    }
    if recompute and not saved.offloaded:
        # non-reentrant checkpointing re-runs a block's forward inside that block's backward, and autograd reaches the
        # first block last: then every other block's gradient exists beside one block input, its recompute and its
        # backward transient (docs/memory_misses.md, "Per-block checkpointing at 2,048 tokens")
        last_block = {"gradients": grads - g_block, "activations": shared + saved.block_input + recompute,
                      "temporaries": block_transient}
        if sum(last_block.values()) > sum(moments["backward end"].values()):
            moments["backward end"] = last_block
    if held:
        for name in ("backward end", "optimizer step"):
            moments[name]["logits_and_loss"] = held
    return moments


def _in_run_evaluation(spec: ModelSpec, plan: TrainPlan, dt: Dtypes, act: _Activations, saved: _Saved,
                       terms: dict[str, int], transient_per_token: int,
                       step: tuple[int, int, dict[str, int], str, dict[str, int]]) -> tuple[int, int, dict[str, int], str]:
    """The step's (allocated, reserved, breakdown, peak phase) with the plan's in-run evaluation, if any
    (gpuwork.estimate.eval_memory); its allocated peak goes to the step's phases (``step[4]``). Held through it,
    of the forward moment's ``terms``: weights, optimizer states, autocast's weight copies and the sharding buffers
    (gradients are freed)."""
    if plan.eval_batch_size is None:  # none priced: no training step to replay, no evaluation to build
        return step[:4]
    held = sum(terms[k] for k in ("weights", "optimizer_states", "autocast_weight_copies", "sharding_buffers"))
    evaluation = estimate_eval(
        spec, plan, held=held + CUBLAS_WORKSPACE_BYTES, stream=dt.stream, linear_out=dt.linear_out,
        logits_bytes=4 if dt.linear_out == 4 else 2, loss_bytes=act.loss_bytes,
        train_step=_step_tensors(spec, plan, act, saved, transient_per_token))
    if evaluation is None:
        return step[:4]
    allocated, reserved, breakdown = with_evaluation(evaluation, *step[:3], ALLOCATOR_SLACK)
    step[4]["evaluation"] = evaluation.allocated - CUBLAS_WORKSPACE_BYTES
    return allocated, reserved, breakdown, "evaluation" if "eval_forward" in breakdown else step[3]


def _step_tensors(spec: ModelSpec, plan: TrainPlan, act: _Activations, saved: _Saved,
                  mlp_transient_per_token: int) -> StepTensors:
    """The step's large tensors per token, as the allocator sees them: each block's saved bytes cut into
    hidden-sized and intermediate-sized tensors, the logits into vocabulary-wide ones (gpuwork.estimate.allocator)."""
    dt = memory_dtypes(plan)
    hidden = max(dt.linear_out * spec.hidden_size, 1)
    inter = max(dt.linear_out * spec.intermediate_size, 1)
    vocab = max(4 * spec.vocab_size, 1)

    def cut(total: int, unit: int) -> tuple[int, ...]:
        whole, rest = divmod(max(total, 0), unit)
        return (unit,) * whole + ((rest,) if rest else ())

    per_layer = act.per_layer_trained if saved.trained_layers else act.per_layer_frozen
    block = cut(min(act.mlp_saved, per_layer), inter) + cut(per_layer - min(act.mlp_saved, per_layer), hidden)
    share = (saved.head_rows, max(plan.batch_size * plan.longest_batch_len, 1))  # gathered masked rows: fewer
    head = cut(act.head * share[0] // share[1], vocab)
    loss = cut((act.loss_backward + act.logits_copy) * share[0] // share[1], vocab)  # made and freed after the head
    transient = cut(mlp_transient_per_token, inter)
    layers = spec.num_layers if saved.saving_blocks is None else saved.saving_blocks
    if plan.grad_checkpointing:
        # offloaded block inputs leave the GPU; an op-level policy's kept outputs are tensors of their own, taken
        # back by the block's recompute
        if saved.offloaded:
            return StepTensors(layers, (), block, head, loss, block, transient)
        every = plan.recompute_every if saved.plain_block else 1  # one block in n: the others keep ``block``
        return StepTensors(layers, (act.checkpoint_per_layer - sum(act.policy_kept),), block, head, loss, block,
                           transient, act.policy_kept, every, block if every > 1 else ())
    return StepTensors(layers, block, (), head, loss, (), transient)


# Display names of the breakdown terms (CLI, app, reports share them).
__all__ = ["ALLOCATOR_SLACK", "CUDA_CONTEXT_BYTES", "GIB", "MIB", "Dtypes", "MemoryEstimate", "SOURCES", "TERM_LABELS",
           "block_groups", "checked_moe_experts", "estimate_memory", "expert_linears", "memory_dtypes", "plan_dtypes",
           "sharded_qlora", "stack_profile", "state_bytes_per_param"]
