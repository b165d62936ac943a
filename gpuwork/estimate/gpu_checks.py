"""What a GPU cannot run of a plan as it is stated: its attention kernel (FlashAttention-3 off Hopper, cuDNN's fused
attention off sm80+) or its FP8 linear layers (no FP8 tensor cores). ``estimate_time`` refuses the first and prices
the second in 16 bits with a warning; a ranking of cards (offers, advisor, fit matrix) lists such a card unpriced."""

from __future__ import annotations

from gpuwork.errors import PlanError
from gpuwork.facts.catalog import GpuSpec
from gpuwork.message import Msg, msg
from gpuwork.plan import Attention, SdpaBackend, TrainPlan


def attention_gpu_problem(plan: TrainPlan, gpu: GpuSpec) -> Msg | None:
    """Why ``gpu`` cannot run the plan's attention kernel (None: it can): ``Attention.capability_majors``. A
    capability that is not NVIDIA's major.minor (AMD's gfx names) runs none of them."""
    cc, attention = gpu.compute_capability, plan.attention
    # SDPA told to run cuDNN's attention needs what attention "cudnn" needs (torch's cuDNN check: sm80 on)
    sdpa_cudnn = attention is Attention.SDPA and plan.sdpa_backend is SdpaBackend.CUDNN
    if (needs := (Attention.CUDNN if sdpa_cudnn else attention).capability_majors) is None:
        return None
    major = cc.split(".")[0]
    if major.isdigit() and int(major) in needs:
        return None
    if sdpa_cudnn:
        return msg("error.plan.sdpa_cudnn_gpu", gpu=gpu.display_name, capability=cc)
    # literal codes: the catalog test reads every code a decision module emits
    return msg("error.plan.flash3_gpu" if attention is Attention.FLASH3 else "error.plan.flash4_gpu"
               if attention is Attention.FLASH4 else "error.plan.cudnn_gpu", gpu=gpu.display_name, capability=cc)


def fp8_gpu_problem(plan: TrainPlan, gpu: GpuSpec) -> Msg | None:
    """Why ``gpu`` cannot run the plan's FP8 linear layers (None: it can): it has no FP8 tensor cores, where
    Transformer Engine and torchao's float8 training stop. ``estimate_time`` still prices such a plan there in 16 bits,
    with a warning (``_as_runnable``); a ranking of cards lists the card without pricing it."""
    if plan.fp8_linear and gpu.fp8_dense_flops is None:
        return msg("error.plan.fp8_gpu", gpu=gpu.display_name, capability=gpu.compute_capability)
    return None


def gpu_problem(plan: TrainPlan, gpu: GpuSpec) -> Msg | None:
    """Why ``gpu`` cannot run the plan as it is stated (None: it can): its attention kernel or its FP8 linears."""
    problem = attention_gpu_problem(plan, gpu)
    return problem if problem is not None else fp8_gpu_problem(plan, gpu)


def check_attention_gpu(plan: TrainPlan, gpu: GpuSpec) -> None:
    """``attention_gpu_problem`` as the plan's error."""
    if (problem := attention_gpu_problem(plan, gpu)) is not None:
        raise PlanError("attention", problem)


__all__ = ["attention_gpu_problem", "check_attention_gpu", "fp8_gpu_problem", "gpu_problem"]
