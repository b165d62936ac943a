"""The dtypes a plan's activations are saved in, as the memory and time estimators read them: the residual stream,
the linears' outputs, autocast's copies and peft's adapters (each rule's source in its docstring)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpuwork.estimate.model_states import adapter_param_bytes, sharded_qlora
from gpuwork.facts.rates import StackProfile
from gpuwork.plan import Method, Precision, Sharding, TrainPlan


@dataclass(frozen=True)
class Dtypes:
    stream: int  # residual stream and norm outputs
    linear_out: int  # outputs of the block's linears (attention q/k/v/o, MLP)
    autocast: bool  # linears cast their inputs to 16-bit and save the copy
    adapter: int = 4  # LoRA weights, the input copy lora_A saves and its output (peft: fp32)
    # under autocast on an fp32 stream (mixed-precision QLoRA), what the 16-bit ops save instead (0: as above):
    attn_saved: int = 0  # SDPA's q, k, v and output (0: linear_out)
    lora_saved: int = 0  # lora_A's input copy and lora_B's input (0: adapter)


def plan_dtypes(plan: TrainPlan) -> Dtypes:
    p = plan.precision
    if plan.method is Method.QLORA:
        # embeddings/norms are fp32 after prepare_model_for_kbit_training, and bnb Linear4bit casts
        # its output back to the input dtype (bitsandbytes nn/modules.py Linear4bit.forward).
        return Dtypes(stream=4, linear_out=4, autocast=False)
    if p is Precision.FP32:
        return Dtypes(4, 4, False)
    if p.is_mixed:
        if plan.uses_adapters:  # 16-bit frozen base; autocast keeps linears 16-bit
            return Dtypes(2, 2, True)
        return Dtypes(4, 2, True)  # fp32 masters: fp32 embeddings/residual, 16-bit linear outputs
    return Dtypes(2, 2, False)


def memory_dtypes(plan: TrainPlan, profile: StackProfile | None = None) -> Dtypes:
    """``plan_dtypes`` as memory sees them: sharded QLoRA keeps the model and its adapters 16-bit (sharded_qlora),
    and so does a pure 16-bit plan on a stack whose adapters are in the model's dtype (stacks.csv
    ``adapter_weights`` model: lora_A then reads X itself, and dropout and lora_B save 16 bits;
    docs/peft_adapter_dtype.md). The time model (estimate.ops) still prices plan_dtypes."""
    dt = _peft_memory_dtypes(plan, profile)
    if profile is not None and dt.adapter == 4 and adapter_param_bytes(plan, profile.adapter_weights) == 2:
        return dataclasses.replace(dt, adapter=2)
    return dt


def _peft_memory_dtypes(plan: TrainPlan, profile: StackProfile | None) -> Dtypes:
    if sharded_qlora(plan):
        return Dtypes(stream=2, linear_out=2, autocast=False, adapter=2)
    if fsdp_16bit_compute(plan):
        return Dtypes(2, 2, False)
    if plan.method is Method.QLORA and not plan.kbit_upcast:
        # 16-bit norms: a 16-bit stream, and Linear4bit returns its input's dtype; the block is plain LoRA's
        # on a 16-bit base (fp32 adapters; docs/memory_misses.md#the-kbit_upcast-field)
        dt = Dtypes(2, 2, plan.precision.is_mixed)
        return dataclasses.replace(dt, lora_saved=2) if peft_adapters_autocast(plan, profile) else dt
    if peft_qlora_autocast(plan, profile):
        # autocast casts the fp32 q, k, v to 16 bit for SDPA and each adapter's input for F.linear, and those
        # 16-bit copies are what backward keeps (docs/memory_misses.md#qlora-under-autocast)
        return dataclasses.replace(plan_dtypes(plan), attn_saved=2, lora_saved=2)
    if peft_adapters_autocast(plan, profile):
        # peft's fp32 cast of the 16-bit input is transient; lora_A keeps autocast's 16-bit cast of it
        # (docs/memory_misses.md#lora-under-autocast)
        return dataclasses.replace(plan_dtypes(plan), lora_saved=2)
    return plan_dtypes(plan)


def fsdp_param_dtype(plan: TrainPlan) -> bool:
    """torch FSDP/HSDP with a mixed-precision policy: every unit's parameters (adapters too) are gathered in 16 bits."""
    return plan.precision.is_mixed and plan.sharding.per_unit and plan.sharding is not Sharding.ZERO3


def fsdp_16bit_compute(plan: TrainPlan) -> bool:
    """A trained base under torch FSDP with mixed precision: the policy's param_dtype (the mixed precision's 16-bit
    dtype, as accelerate, torchtitan and llama-recipes set it) is the dtype each unit's parameters are gathered in,
    so forward and backward run on 16-bit weights: a 16-bit stream, nothing for autocast to cast or cache. A real
    FSDP2 step saves what the pure 16-bit step saves (docs/memory_misses.md#fsdp-mixed-precision-computes-in-16-bit).
    DeepSpeed ZeRO keeps its own rule."""
    return fsdp_param_dtype(plan) and plan.method in (Method.FULL, Method.SCRATCH, Method.FREEZE)


def peft_adapters_autocast(plan: TrainPlan, profile: StackProfile | None) -> bool:
    """Mixed-precision LoRA or QLoRA through peft's fp32 adapters: F.linear runs under autocast."""
    return (plan.uses_adapters and plan.precision.is_mixed and not sharded_qlora(plan)
            and (profile is None or profile.adapters_fp32))


def peft_qlora_autocast(plan: TrainPlan, profile: StackProfile | None) -> bool:
    """Mixed-precision QLoRA through peft (stacks whose adapters are peft's fp32 ones) on the fp32 model that
    prepare_model_for_kbit_training leaves: the step runs under autocast."""
    return plan.method is Method.QLORA and plan.kbit_upcast and peft_adapters_autocast(plan, profile)


__all__ = ["Dtypes", "fsdp_16bit_compute", "fsdp_param_dtype", "memory_dtypes", "peft_adapters_autocast", "peft_qlora_autocast",
           "plan_dtypes"]
