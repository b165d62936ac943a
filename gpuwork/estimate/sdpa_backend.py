"""Which kernel torch's ``scaled_dot_product_attention`` runs, for the step model (docs/attention_backends.md).

torch picks the first backend of a priority order whose checks pass (aten/src/ATen/native/transformers/cuda/
sdp_utils.cpp, ``select_sdp_backend``). Its releases from 2.11 on (with their cuDNN, newer than 9.15.0) put cuDNN's
attention first on compute capability 9.0, 10.0 and 10.3 (``check_prefer_cudnn_attention``) and FlashAttention-2
first elsewhere; cuDNN refuses a deterministic run (``check_cudnn_deterministic``) and anything but fp16 / bf16,
takes an ``attn_mask`` (FlashAttention-2 does not: a masked call falls to the memory-efficient kernel), and ran every
other case a lent H200 tried (head dim 64-256, with or without gradients, dropout, grouped queries, a length of
1,000; docs/measurements/h200-2026-12-04/sdpa_choice.md). ``TrainPlan.sdpa_backend`` says which order the run's
torch follows ("flash", the default: FlashAttention-2 first; "auto": torch 2.11's); the op list records it in ``Op.kernel`` as ``sdpa:<backend>`` and pricing
resolves it on the GPU (``sdpa_kernels``), since the op list is the same on every GPU.
"""

from __future__ import annotations

from gpuwork.facts.catalog import GpuSpec
from gpuwork.facts.rates import ATTENTION_KERNELS, CUDNN_KERNEL, TORCH_CUDNN_KERNEL, TORCH_FLASH_KERNEL
from gpuwork.plan import Attention, SdpaBackend, TrainPlan

SDPA_PREFIX = "sdpa:"
# compute capabilities on which torch 2.11's dispatch tries cuDNN's attention first (sdp_utils.cpp
# check_prefer_cudnn_attention: major 9 or 10; its CUDA 12 builds also need minor 0 or 3)
CUDNN_FIRST_CAPABILITIES = frozenset({"9.0", "10.0", "10.3"})
# attention_curves.csv kernels tried in order for each backend (FlashAttention-2's rows after them all)
_CURVES = {SdpaBackend.FLASH: (TORCH_FLASH_KERNEL,), SdpaBackend.EFFICIENT: (TORCH_FLASH_KERNEL,),
           SdpaBackend.CUDNN: (TORCH_CUDNN_KERNEL, CUDNN_KERNEL)}


def op_kernel(plan: TrainPlan) -> str:
    """``Op.kernel`` of the plan's fused attention: ``sdpa:<backend>`` under SDPA (a deterministic run never gets
    cuDNN's: torch's check refuses it, so "auto" and "cudnn" fall to FlashAttention-2), else the plan's own kernel
    (attention_curves.csv; "" for FlashAttention-2)."""
    if plan.attention is not Attention.SDPA:
        return ATTENTION_KERNELS.get(plan.attention, "")
    backend = plan.sdpa_backend
    if plan.deterministic and backend in (SdpaBackend.AUTO, SdpaBackend.CUDNN):
        backend = SdpaBackend.FLASH
    return SDPA_PREFIX + backend.value


def cudnn_first(gpu: GpuSpec) -> bool:
    """Whether torch's current dispatch tries cuDNN's attention first on ``gpu`` (an NVIDIA GPU of compute
    capability 9.0, 10.0 or 10.3: H100, H200, GH200, B200, GB200, B300)."""
    return gpu.vendor == "NVIDIA" and gpu.compute_capability in CUDNN_FIRST_CAPABILITIES


def sdpa_kernels(kernel: str, prefers_cudnn: bool, masked: bool) -> tuple[tuple[str, ...], bool]:
    """(the attention_curves.csv kernels to try, in order, before FlashAttention-2's; whether the call runs the
    memory-efficient kernel) for an op's ``kernel`` on a GPU where torch does (not) try cuDNN first.

    Under SDPA: "flash" runs FlashAttention-2 as torch ships it, or the memory-efficient kernel when a mask is
    passed; "cudnn" cuDNN's attention, mask or not; "efficient" the memory-efficient kernel; "auto" is "cudnn" where
    ``prefers_cudnn``, else "flash". Any other kernel keeps its own rows and ``masked`` as given."""
    if not kernel.startswith(SDPA_PREFIX):
        return ((kernel,) if kernel else ()), masked
    backend = SdpaBackend(kernel.removeprefix(SDPA_PREFIX))
    if backend is SdpaBackend.AUTO:
        backend = SdpaBackend.CUDNN if prefers_cudnn else SdpaBackend.FLASH
    efficient = backend is SdpaBackend.EFFICIENT or (backend is SdpaBackend.FLASH and masked)
    return _CURVES[backend], efficient


__all__ = ["CUDNN_FIRST_CAPABILITIES", "SDPA_PREFIX", "cudnn_first", "op_kernel", "sdpa_kernels"]
