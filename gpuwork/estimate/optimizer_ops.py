"""The optimizer's share of a step: gradient accumulation, loss-scale unscaling, clipping and the update, counted as
torch, bitsandbytes, transformers and DeepSpeed run them (docs/kernels.md "Optimizer step: kernels and bytes,
counted from the code"); ``estimate.ops.step_ops`` appends them to the step."""

from __future__ import annotations

from dataclasses import replace

from gpuwork.estimate.adamw_passes import adamw_passes, mta_launches, mta_split
from gpuwork.estimate.l2_reuse import optimizer_l2_reads
from gpuwork.estimate.model_states import state_element_bytes
from gpuwork.estimate.op import Kind, Op, Phase
from gpuwork.facts.spec import ModelSpec, ParamCounts, lora_target_linears
from gpuwork.plan import Method, Optimizer, OptimizerImpl, Precision, TrainPlan

# Element-wise passes of one update, per implementation (torch/optim/adamw.py, sgd.py; bitsandbytes
# optimizer kernels; transformers Adafactor.step), and the bytes each pass moves per parameter
# in units of the state dtype. AdamW foreach: lerp_(m), mul_+addcmul_(v), sqrt, div_, add_(eps),
# addcdiv_(p): 7 passes moving 3+2+3+2+2+2+4 = 18 parameter-sized tensors. The weight-decay pass
# (mul_(p)) runs only when ``plan.weight_decay_in_effect`` != 0 (torch: ``if weight_decay != 0``): _decay_pass.
# Fused: one kernel reads p, g, m, v and writes p, m, v. For-loop: 7 kernels per tensor, the same passes one
# tensor at a time (torch/optim/adam.py _single_tensor_adam: lerp_, mul_, addcmul_, sqrt, div, add_, addcdiv_;
# transformers' 2021 AdamW.step: mul_, add_, mul_, addcmul_, sqrt, add_, addcdiv_; the step count is a CPU
# tensor or a Python int, no kernel). Out-of-place (hand-written loop): estimate.adamw_passes.
_ADAFACTOR_PASSES_PER_TENSOR = 20  # factored second moment: row/col means, rsqrt, update, RMS clip
_ADAFACTOR_TENSORS_MOVED = 14


def _update(name: str, phase: Phase, elements: float, bytes_per_element: float, launches: int, count: int) -> Op:
    """A memory-bound optimizer op over ``elements`` values."""
    return Op(name, Kind.OPTIMIZER, phase, 0.0, float(elements * bytes_per_element), launches, count)


def _decay_pass(plan: TrainPlan, n: float, tensors: int, s_b: int, split: bool) -> Op:
    """torch AdamW's decoupled weight decay, a pass of its own when weight_decay != 0 (torch/optim/adam.py:
    ``_multi_tensor_adam`` ``torch._foreach_mul_(device_params, 1 - lr * weight_decay)``, one depth-1 foreach
    pass; ``_single_tensor_adam`` ``param.mul_(1 - lr * weight_decay)``, one kernel per tensor): it reads and
    writes the weights. The fused kernel folds it in (``_fused_adamw_(..., weight_decay=...)``), as the
    out-of-place loop's counted expressions and bitsandbytes' 8-bit kernel do (docs/kernels.md "Weight decay:
    the extra pass")."""
    if plan.optimizer_impl is OptimizerImpl.FOR_LOOP:
        return _update("AdamW weight decay", Phase.OPTIMIZER, n, 2 * s_b, tensors, 1)
    return replace(_update("AdamW weight decay", Phase.OPTIMIZER, n, 2 * s_b, mta_launches(tensors, n, 1), 1),
                   mta_split=split)


def param_tensors(spec: ModelSpec, plan: TrainPlan, trainable: int) -> int:
    """Trainable parameter tensors (each optimizer kernel of a for-loop step runs once per tensor)."""
    if plan.uses_adapters:  # lora_A and lora_B of every adapted linear, in every block that holds it
        return max(1, 2 * sum(lin.count for lin in lora_target_linears(spec, plan.lora_targets)))
    per_block = sum((2 if lin.bias else 1) for lin in spec.block_linears) + (4 if spec.norm == "layer" else 2)
    blocks = spec.num_layers if plan.method is not Method.FREEZE else min(plan.trainable_layers, spec.num_layers)
    return max(1, per_block * blocks + 3)


def optimizer_ops(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts, mb: int) -> list[Op]:
    """Gradient accumulation, clipping and the update, on this GPU's share of the trainable weights."""
    n = counts.trainable / plan.shard_ranks  # the GPU's shard (DDP: 1, the whole model; HSDP: one group's share)
    tensors = param_tensors(spec, plan, counts.trainable)
    g_b = 4 if plan.uses_adapters else plan.precision.param_bytes
    out: list[Op] = []
    if mb > 1:  # AccumulateGrad: grad += new_grad, one kernel per tensor per later micro-batch
        out.append(_update("gradient accumulation", Phase.BACKWARD, counts.trainable, 3 * g_b, tensors, mb - 1))
    one_list = mta_launches(tensors, n, 1)  # a depth-1 foreach pass over the gradients
    split = mta_split(n)  # foreach and fused passes run as several 320-block launches
    if plan.precision is Precision.FP16_MIXED:
        # GradScaler (torch/amp/grad_scaler.py): unscale_ runs scale.double().reciprocal().float() and a found_inf
        # fill, then one foreach pass checks for inf/NaN and unscales every gradient; update() one
        # _amp_update_scale_. step() reads found_inf with .item() before the update (_maybe_opt_step): the host
        # waits for the GPU
        out.append(replace(_update("gradient unscale (fp16 loss scaling)", Phase.OPTIMIZER, n, 2 * g_b, one_list + 5, 1), host_sync=True, mta_split=split))
    if plan.grad_clip:
        # clip_grad_norm_ (Trainer's max_grad_norm = 1.0): _foreach_norm (its pass and a cleanup kernel), stack,
        # vector_norm, + 1e-6, reciprocal, * max_norm, clamp, then _foreach_mul_ over every gradient
        out.append(replace(_update("gradient clipping", Phase.OPTIMIZER, n, 3 * g_b, 2 * one_list + 7, 1), mta_split=split))
    if plan.offload_optimizer:
        return out  # the update runs on the CPU (estimate.timing prices it)
    s_b = state_element_bytes(plan)  # fp32 masters and states under DeepSpeed ZeRO with 16-bit weights
    if plan.fp32_master_weights:
        # DeepSpeed ZeRO step (runtime/zero/stage_1_and_2.py step, stage3.py _prepare_fp32_grad_for_sub_group):
        # the partition's 16-bit gradients are flattened (torch.cat) and cast to fp32 for the fp32 master partition
        out.append(_update("gradient partition to fp32 (ZeRO masters)", Phase.OPTIMIZER, n, 3 * g_b + 4, 2, 1))
    opt, impl = plan.optimizer, plan.optimizer_impl
    lists = mta_launches(tensors, n, 3)  # SGD's widest foreach pass
    if opt is Optimizer.ADAMW:
        moved, launches = adamw_passes(impl, tensors, n)
        out.append(replace(_update("AdamW update", Phase.OPTIMIZER, n, moved * s_b, launches, 1),
                           mta_split=split and impl in (OptimizerImpl.FOREACH, OptimizerImpl.FUSED),
                           l2_reads=optimizer_l2_reads(spec, plan, impl, s_b)))
        if plan.weight_decay_in_effect != 0 and impl in (OptimizerImpl.FOREACH, OptimizerImpl.FOR_LOOP):
            out.append(_decay_pass(plan, n, tensors, s_b, split))
    elif opt in (Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT):
        # bitsandbytes blockwise 8-bit kernel per tensor: reads p, g, m, v (1 B) and writes p, m, v
        out.append(_update("8-bit AdamW update", Phase.OPTIMIZER, n, 3 * s_b + 4 * 1, tensors, 1))
    elif opt is Optimizer.ADAFACTOR:
        out.append(_update("Adafactor update", Phase.OPTIMIZER, n, _ADAFACTOR_TENSORS_MOVED * s_b,
                        _ADAFACTOR_PASSES_PER_TENSOR * tensors, 1))
    elif opt is Optimizer.LION:
        out.append(_update("Lion update", Phase.OPTIMIZER, n, 5 * s_b, tensors, 1))
    else:  # SGD with momentum: mul_+add_ (momentum), add_ (param)
        passes = 1 if impl is OptimizerImpl.FUSED else 3
        out.append(replace(_update("SGD update", Phase.OPTIMIZER, n, 8 * s_b,
                                passes * (tensors if impl is OptimizerImpl.FOR_LOOP else lists), 1), mta_split=split and impl is not OptimizerImpl.FOR_LOOP))
    if plan.fp32_master_weights:  # bit16_partitions[partition_id].data.copy_(fp32_partition.data)
        out.append(_update("fp32 masters to 16-bit weights (ZeRO)", Phase.OPTIMIZER, n, 4 + g_b, 1, 1))
    return out


__all__ = ["optimizer_ops", "param_tensors"]
