"""Model states of one training step, per parameter and before sharding: weights (4-bit packed, quantisation
constants, the non-quantised rest and adapters), gradients and optimizer states, and the optimizer step's
temporaries. Each byte count names its source; ``estimate.memory`` places them on the step's timeline and shards them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwork.facts.spec import ModelSpec, ParamCounts, lora_target_linears
from gpuwork.plan import Method, Optimizer, OptimizerImpl, TrainPlan

BNB_MIN_8BIT_SIZE = 4096  # bitsandbytes optimizers keep fp32 states below this numel (optimizer.py)
BNB_8BIT_BLOCK = 256  # blockwise 8-bit states: one fp32 absmax per 256 values (functional.py)
NF4_BLOCK = 64  # 4-bit quantization block: one absmax per 64 weights (QLoRA paper §3)
DQ_BLOCK = 256  # double quantization: absmax quantized to 8 bit in blocks of 256 (QLoRA §3)


# -- storage of model states -----------------------------------------------------------------------


@dataclass(frozen=True)
class ModelStates:
    weights: int
    gradients: int
    optimizer: int
    optimizer_paged: int  # states in unified memory (bnb paged): not in torch's allocator
    trainable_param_bytes: int  # bytes per trainable parameter (its dtype)


def weight_bytes(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts) -> int:
    p = plan.precision
    if plan.method is Method.QLORA:
        q = counts.quantized
        packed = q // 2  # two 4-bit values per byte (bnb Params4bit)
        absmax = quant_state_bytes(plan, counts)
        # peft prepare_model_for_kbit_training casts every non-quantized 16-bit parameter to fp32; sharded
        # QLoRA skips it and keeps them, and the adapters, in the 16-bit storage dtype (sharded_qlora); so does
        # a framework that skips it or casts them back (kbit_upcast=False)
        rest_bytes = 2 if sharded_qlora(plan) or not plan.kbit_upcast else 4
        rest = rest_bytes * (counts.base - q)
        return packed + absmax + rest + trainable_bytes_per_param(plan) * counts.adapter
    if plan.uses_adapters:
        # Frozen base stored in the compute dtype (fp32 masters are only for trained weights);
        # peft keeps adapters in fp32 (autocast_adapter_dtype=True, peft tuners_utils).
        return p.compute_bytes * counts.base + 4 * counts.adapter
    return p.param_bytes * counts.base


def quant_state_bytes(plan: TrainPlan, counts: ParamCounts) -> int:
    """bitsandbytes' quantisation constants of the 4-bit weights (absmax per block of 64)."""
    blocks = math.ceil(counts.quantized / NF4_BLOCK)
    if plan.double_quant:  # uint8 absmax + one fp32 per 256 blocks (QLoRA §3, 0.127 bit/param)
        return blocks + 4 * math.ceil(blocks / DQ_BLOCK)
    return 4 * blocks  # one fp32 absmax per 64 weights (0.5 bit/param)


def unsharded_quant_state(plan: TrainPlan, counts: ParamCounts) -> int:
    """Bytes per GPU of the quantisation constants that FSDP / ZeRO-3 do not shard: bitsandbytes keeps each
    layer's quant_state on the module, no parameter ("the quant state got lost when the parameter got converted.
    This happens for example for fsdp", bnb nn/modules.py fix_4bit_weight_quant_state_from_module), so every
    rank holds all of it; the sharded weights counted 1/ranks of it."""
    if not sharded_qlora(plan) or plan.offload_params:
        return 0
    whole = quant_state_bytes(plan, counts)
    return whole - math.ceil(whole / plan.shard_ranks)


def sharded_qlora(plan: TrainPlan) -> bool:
    """QLoRA whose parameters FSDP or ZeRO-3 shard. TRL's SFTTrainer then calls neither
    prepare_model_for_kbit_training nor peft_module_casting_to_bf16 ("one should never call ... when doing QLoRA +
    FSDP / DS-Zero3") and creates the adapters with autocast_adapter_dtype=False, so the model, its residual stream
    and the adapters stay in the 16-bit dtype the 4-bit weights are stored in (bnb_4bit_quant_storage, which FSDP
    needs equal to the model's dtype; peft docs accelerate/fsdp.md, deepspeed.md). docs/memory_lengths.md."""
    return plan.method is Method.QLORA and plan.sharding.shards_params


def trainable_bytes_per_param(plan: TrainPlan) -> int:
    if plan.uses_adapters:
        return 2 if sharded_qlora(plan) else 4  # peft upcasts adapters to fp32 unless sharded QLoRA
    return plan.precision.param_bytes


def state_element_bytes(plan: TrainPlan) -> int:
    """Bytes per element of optimizer states: fp32 where the optimizer keeps fp32 master weights."""
    return 4 if plan.fp32_master_weights else trainable_bytes_per_param(plan)


def state_bytes_per_param(plan: TrainPlan) -> int | None:
    """Bytes per trained parameter the plan keeps for weights, gradients and optimizer states (with fp32 master
    weights where its sharding keeps them), before sharding and wherever they sit (GPU, CPU, paged): with AdamW 8 for
    pure bf16 under DDP or FSDP, 16 under DeepSpeed ZeRO or in bf16-mixed. The per-element rules of
    ``optimizer_bytes`` without its per-tensor terms (bitsandbytes' block maxima, 8 bytes per 256 values). None
    where it is not one figure: adapters (a frozen base, fp32 adapters) or Adafactor (factored states)."""
    if plan.uses_adapters or plan.optimizer is Optimizer.ADAFACTOR:
        return None
    weight = trainable_bytes_per_param(plan)  # the trained weight, and its gradient in the same dtype
    state = state_element_bytes(plan)
    master = 4 if plan.fp32_master_weights else 0
    states = {Optimizer.ADAMW: 2 * state, Optimizer.SGD: state, Optimizer.LION: 4,
              Optimizer.ADAMW_8BIT: 2, Optimizer.PAGED_ADAMW_8BIT: 2}[plan.optimizer]  # two uint8 states
    return 2 * weight + master + states


def largest_trainable(spec: ModelSpec, plan: TrainPlan) -> int:
    if plan.uses_adapters:
        targets = lora_target_linears(spec, plan.lora_targets)
        return max((plan.lora_r * max(t.in_features, t.out_features) for t in targets), default=0)
    sizes = [lin.in_features * lin.out_features * lin.experts for lin in spec.linears]
    sizes.append(spec.params_embedding if spec.params_embedding else 0)
    return max(sizes)


def small_tensor_params(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts) -> int:
    """Trainable parameters in tensors below bnb's 8-bit threshold (norms, biases)."""
    if plan.uses_adapters:
        return 0
    linear_in_block = sum(lin.params for lin in spec.block_linears)
    block_small = max(spec.params_block - linear_in_block, 0)
    bias = sum(lin.out_features * lin.count * lin.experts for lin in spec.linears if lin.bias)
    if spec.hidden_size >= BNB_MIN_8BIT_SIZE:
        return 0  # norms and biases are large enough for 8-bit states
    small = block_small * spec.num_layers + spec.params_other + bias
    return min(small, counts.trainable)


def optimizer_bytes(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, state_b: int | None = None) -> int:
    """``state_b``: bytes of a state element when the stack's adapters are not peft's fp32 ones."""
    n = counts.trainable
    pb = state_b or state_element_bytes(plan)
    if plan.fp32_master_weights:
        # DeepSpeed ZeRO in bf16/fp16 mode: an fp32 copy of every trained weight plus fp32 states, all held
        # (and sharded) by the optimizer: ZeRO paper K = 12 for Adam (docs/sources.md#s-mem-fp32-master)
        return 4 * n + states_only_bytes(spec, plan, counts, pb)
    return states_only_bytes(spec, plan, counts, pb)


def states_only_bytes(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, pb: int) -> int:
    n = counts.trainable
    opt = plan.optimizer
    if opt is Optimizer.ADAMW:
        # torch AdamW keeps exp_avg and exp_avg_sq in the parameter's dtype (torch/optim/adamw.py,
        # zeros_like(p)): 8 B/param for fp32, 4 B/param for pure bf16 (docs/sources.md#s-mem-adamw-dtype).
        return 2 * pb * n
    if opt is Optimizer.SGD:
        return pb * n  # one momentum buffer (torch/optim/sgd.py, clone of the grad)
    if opt is Optimizer.LION:
        return 4 * n  # bnb Lion (32-bit): one fp32 state (bitsandbytes Optimizer1State)
    if opt is Optimizer.ADAFACTOR:
        return adafactor_bytes(spec, plan, counts, pb)
    # bnb AdamW8bit / PagedAdamW8bit: two uint8 states + fp32 absmax per 256 values for tensors
    # with >= 4096 values; smaller tensors keep two fp32 states (bitsandbytes Optimizer2State).
    small = small_tensor_params(spec, plan, counts)
    big = n - small
    return 2 * big + 2 * 4 * math.ceil(big / BNB_8BIT_BLOCK) + 8 * small


def adafactor_bytes(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, pb: int) -> int:
    # transformers Adafactor (beta1=None): factored second moment for >= 2-D tensors — a row and a
    # column vector — and a full one for 1-D tensors, in the gradient's dtype (optimization.py).
    if plan.uses_adapters:
        total = 0
        for lin in lora_target_linears(spec, plan.lora_targets):
            total += lin.count * ((plan.lora_r + lin.in_features) + (lin.out_features + plan.lora_r))
        return pb * total
    vectors = 0
    matrix_params = 0
    for lin in spec.linears:
        vectors += lin.count * lin.experts * (lin.in_features + lin.out_features)
        matrix_params += lin.count * lin.params
    vectors += spec.vocab_size + spec.hidden_size  # token embedding matrix
    matrix_params += spec.vocab_size * spec.hidden_size
    one_d = max(counts.trainable - matrix_params, 0)
    scale = counts.trainable / max(counts.base, 1)  # freeze: only the trained share
    return int(pb * (vectors * scale + one_d))


def optimizer_step_temporary(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, state_b: int | None = None) -> int:
    pb = state_b or state_element_bytes(plan)
    largest = largest_trainable(spec, plan)
    opt = plan.optimizer
    if opt is Optimizer.ADAMW:
        if plan.optimizer_impl is OptimizerImpl.FUSED:
            return 0  # torch._fused_adamw_ updates params and states in place, one kernel per group
        if plan.optimizer_impl is OptimizerImpl.FOREACH:
            # _multi_tensor_adamw: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs), one state-sized
            # temporary for every trainable tensor (torch/optim/adamw.py; traced: +1 x params).
            return pb * counts.trainable
        if plan.optimizer_impl is OptimizerImpl.OUT_OF_PLACE:
            # a hand-written loop (estimate.adamw_passes): the new m_t and v_t live beside the old states until
            # the end of the tensor's update, with alpha_t * m_t, sqrt(v_t) + eps and their quotient: five.
            return 5 * pb * largest
        # _single_tensor_adamw: denom = (exp_avg_sq.sqrt() / bc2).add_(eps): two per tensor.
        return 2 * pb * largest
    if opt is Optimizer.ADAFACTOR:
        # per tensor: fp32 copies of grad and param, the grad**2 update and its factored
        # approximation (transformers Adafactor.step); traced: 4 fp32 copies of the largest tensor.
        return 4 * 4 * largest
    return 0  # SGD in place; bitsandbytes optimizers are fused kernels


def adapter_param_bytes(plan: TrainPlan, adapter_weights: str = "fp32") -> int:
    """Bytes of one LoRA adapter parameter, and so of its gradient and (AdamW) states: peft's fp32 rule
    (``trainable_bytes_per_param``), or, where the stack keeps adapters in the model's dtype (stacks.csv
    ``adapter_weights`` model), the 16-bit dtype of a pure 16-bit plan (a mixed plan's model is fp32 there).
    docs/peft_adapter_dtype.md."""
    p = plan.precision
    if adapter_weights == "model" and plan.uses_adapters and not p.is_mixed and p.compute_bytes == 2:
        return 2
    return trainable_bytes_per_param(plan)


def adapter_state_bytes(plan: TrainPlan, adapter_weights: str = "fp32") -> int | None:
    """Bytes of an optimizer state element where the stack's adapters are not peft's fp32 ones (None: the plan's
    own rule, ``state_element_bytes``)."""
    pb = adapter_param_bytes(plan, adapter_weights)
    return None if plan.fp32_master_weights or pb == trainable_bytes_per_param(plan) else pb


def model_states(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, adapter_weights: str = "fp32") -> ModelStates:
    """``adapter_weights``: the stack's stacks.csv column (``adapter_param_bytes``)."""
    pb = adapter_param_bytes(plan, adapter_weights)
    moved = (trainable_bytes_per_param(plan) - pb) * counts.adapter if plan.uses_adapters else 0
    opt = optimizer_bytes(spec, plan, counts, adapter_state_bytes(plan, adapter_weights))
    paged = opt if plan.optimizer is Optimizer.PAGED_ADAMW_8BIT else 0
    return ModelStates(
        weights=weight_bytes(spec, plan, counts) - moved,
        gradients=pb * counts.trainable,  # grads take the parameter's dtype (AccumulateGrad)
        optimizer=opt - paged,
        optimizer_paged=paged,
        trainable_param_bytes=pb,
    )
