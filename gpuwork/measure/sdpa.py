"""The plan's SDPA backend (``TrainPlan.sdpa_backend``) as a measured trial runs it (docs/attention_backends.md).

A trial whose model runs torch's ``scaled_dot_product_attention`` (attention "sdpa") runs every forward and
backward of its steps, warm-up, measured and the checkpoint round-trip, under ``torch.nn.attention.sdpa_kernel``
(https://docs.pytorch.org/docs/stable/generated/torch.nn.attention.sdpa_kernel.html, the same in torch 2.13's
source) with the backends the plan's value stands for (``restriction``): "auto" forces nothing (torch picks);
"flash" enables FlashAttention-2, the memory-efficient kernel and the math fallback and leaves cuDNN's attention
out, the order torch before 2.11 ran (FlashAttention-2 first; the estimate prices an fp32 or masked call as the
memory-efficient kernel, what that order gives); "cudnn" puts cuDNN's attention first, then that order
(``set_priority=True``: what the estimate prices, FlashAttention-2 for a deterministic run, which cuDNN's check
refuses); "efficient" enables the memory-efficient kernel alone. Forcing FLASH_ATTENTION alone would fail every
fp32 CUDA trial of the default plan.

torch 2.13 (pyproject's floor), read in aten/src/ATen/native/transformers/sdp_utils_cpp.cpp
(https://github.com/pytorch/pytorch/blob/02315a42ce3ea4b67cbecac2696552f95f24fec8/aten/src/ATen/native/transformers/sdp_utils_cpp.cpp)
and tried here: on the CPU the order is fixed (FlashAttention's CPU kernel for fp32/fp64/bf16/fp16 without
dropout, then math) and there is no cuDNN or memory-efficient kernel, so a CPU trial with only those enabled raises
"No viable backend for scaled_dot_product_attention was found"; on CUDA a call no enabled backend takes warns each
backend's reason and raises "No available kernel. Aborting execution." (cuda/sdp_utils.cpp, ``select_sdp_backend``).
So ``check`` refuses a backend that cannot run on this device before any model work (one coded message), asks
torch (``torch._fused_sdp_choice``, the chooser SDPA itself calls) which backend the trial's attention call gets
under the restriction, and the record keeps the answer (``TrialProtocol.sdpa_backend_used``); ``no_kernel`` tells
torch's refusal apart from other errors if a later call still meets it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from gpuwork.measure.errors import TrialError
from gpuwork.message import Msg, msg
from gpuwork.plan import Attention, SdpaBackend, TrainPlan

if TYPE_CHECKING:
    import torch

# torch.nn.attention.SDPBackend member names enabled for each value, in priority order, and whether the order is set
_ENABLED = {
    SdpaBackend.FLASH: (("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"), False),
    SdpaBackend.CUDNN: (("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"), True),
    SdpaBackend.EFFICIENT: (("EFFICIENT_ATTENTION",), False),
}
# SDPBackend member name -> what the record calls it (the plan's values, and "math" for the fallback)
_USED = {"FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "efficient", "CUDNN_ATTENTION": "cudnn", "MATH": "math",
         "OVERRIDEABLE": "overrideable"}
# what torch says when no enabled backend takes a call (CUDA, CPU with a backend left, CPU with none)
_NO_KERNEL = ("No available kernel", "No viable backend for scaled_dot_product_attention")


def restriction(plan: TrainPlan, attention_used: str) -> SdpaBackend | None:
    """The value whose backends the trial enables, or None: nothing forced.

    Only a plan of attention "sdpa" whose model runs SDPA asks for one. A plan of attention "flash" (or "cudnn")
    that the trial runs on SDPA (no CUDA, fp32, no flash-attn package, transformers without a cuDNN choice) asks for
    no SDPA backend: its ``sdpa_backend`` is the default only, and forcing FlashAttention-2 there would refuse the
    very fp32 CUDA call that made the trial fall back, so torch picks, as before (the record says which it got)."""
    if plan.attention is not Attention.SDPA or attention_used != "sdpa" or plan.sdpa_backend is SdpaBackend.AUTO:
        return None
    return plan.sdpa_backend


@contextlib.contextmanager
def restricted(backend: SdpaBackend | None) -> Iterator[None]:
    """``sdpa_kernel`` with ``backend``'s backends while the block runs (None: nothing changed); torch's flags and
    priority order come back afterwards."""
    if backend is None:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names, ordered = _ENABLED[backend]
    with sdpa_kernel([getattr(SDPBackend, n) for n in names], set_priority=ordered):
        yield


def device_problem(backend: SdpaBackend, device: torch.device) -> Msg | None:
    """Why ``backend`` cannot run on ``device`` at all (None: it can, call by call as torch checks)."""
    import torch

    if backend is SdpaBackend.FLASH:  # a CPU kernel, and on CUDA the memory-efficient / math fallbacks
        return None
    if device.type != "cuda":  # sdp_utils_cpp.cpp: FlashAttention's CPU kernel and math only
        return msg("error.trial.sdpa_needs_cuda", backend=backend.value)
    if backend is SdpaBackend.CUDNN:
        if getattr(torch.version, "hip", None):
            return msg("error.trial.sdpa_cudnn_rocm")
        major, minor = torch.cuda.get_device_capability(device)
        if major < 8:  # cuDNN's attention needs sm80+ (sdp_utils.cpp check_cudnn_hardware_support; the plan too)
            return msg("error.trial.sdpa_cudnn_capability", capability=f"{major}.{minor}",
                       gpu=torch.cuda.get_device_name(device))
        if not torch.backends.cudnn.is_available():
            return msg("error.trial.sdpa_cudnn_missing")
    return None


def _shape(config: dict[str, Any]) -> tuple[int, int, int] | None:
    """(query heads, key/value heads, head dim) of a transformers config, or None when it does not say."""
    heads = config.get("num_attention_heads") or config.get("n_head")
    hidden = config.get("hidden_size") or config.get("n_embd")
    if not isinstance(heads, int) or heads <= 0:
        return None
    kv = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or (hidden // heads if isinstance(hidden, int) else None)
    if not isinstance(kv, int) or not isinstance(head_dim, int) or kv <= 0 or head_dim <= 0 or heads % kv:
        return None
    return heads, kv, head_dim


def torch_choice(config: dict[str, Any], seq_len: int, dtype: torch.dtype, device: torch.device,
                 dropout: float = 0.0) -> tuple[str | None, str]:
    """(the backend torch's chooser gives the model's causal attention call under the current flags, or None when
    no backend takes it; torch's reasons when none does, else "").

    The call is what transformers' ``sdpa_attention_forward`` makes in training: (batch, heads, seq_len, head_dim)
    tensors that need gradients, ``is_causal``, no mask (the trial packs rows), grouped-query heads passed with
    ``enable_gqa`` (head dim at most 256). One row and one key/value head keep the tensors small: the checks read the
    dtype, head dim, lengths, the grouping and whether gradients are needed. Raises LookupError when the config does
    not give the heads, or this torch has no chooser."""
    import torch
    from torch.nn.attention import SDPBackend

    shape = _shape(config)
    chooser = getattr(torch, "_fused_sdp_choice", None)
    if shape is None or chooser is None:
        raise LookupError("no heads or no chooser")
    heads, kv, head_dim = shape
    group = heads // kv
    gqa = group > 1 and head_dim <= 256
    q_heads = group if gqa else 1

    def tensor(n: int) -> torch.Tensor:
        return torch.empty(1, n, seq_len, head_dim, dtype=dtype, device=device, requires_grad=True)

    q, k, v = tensor(q_heads), tensor(1), tensor(1)
    kwargs = {"enable_gqa": True} if gqa else {}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                choice = int(chooser(q, k, v, dropout_p=dropout, is_causal=True, **kwargs))
            except RuntimeError as exc:
                if not no_kernel(exc):
                    raise
                reasons = [str(w.message).splitlines()[0] for w in caught if str(w.message).strip()]
                return None, "; ".join(reasons)[:400] or str(exc).splitlines()[0]
    finally:
        del q, k, v
        if device.type == "cuda":  # the trial's memory baseline comes next: nothing of the question left cached
            torch.cuda.empty_cache()
    name = next((n for n, member in SDPBackend.__members__.items() if member.value == choice), "")
    return (_USED.get(name) if choice >= 0 else None), ""


def check(plan: TrainPlan, attention_used: str, device: torch.device, dtype: torch.dtype, config: dict[str, Any],
          substitutions: list[Msg]) -> str:
    """The backend the trial's attention runs ("" when its model does not run SDPA), checked before any model work,
    under the trial's flags (call it inside ``restricted(restriction(...))`` and the plan's execution switches).

    A backend that cannot run on this device, or that no call of this model's shape can get, is one TrialError
    naming it and what to plan instead. One that torch's order passes over for this call (cuDNN's for a deterministic
    or fp32 run, FlashAttention-2's for fp32 on CUDA) is a substitution. When torch cannot be asked (a config without
    heads) the record says what was forced ("auto": nothing)."""
    if attention_used != "sdpa":
        return ""
    backend = restriction(plan, attention_used)
    if backend is not None:
        problem = device_problem(backend, device)
        if problem is not None:
            raise TrialError(problem)
    dropout = float(config.get("attention_dropout") or 0.0)  # what the model passes while training
    try:
        used, reasons = torch_choice(config, plan.seq_len, dtype, device, dropout=dropout)
    except LookupError:
        return backend.value if backend is not None else SdpaBackend.AUTO.value
    if used is None:
        asked = backend.value if backend is not None else SdpaBackend.AUTO.value
        raise TrialError(msg("error.trial.sdpa_no_kernel", backend=asked, device=str(device),
                             dtype=str(dtype).removeprefix("torch."), detail=reasons or "-"))
    if backend is not None and used != backend.value:
        substitutions.append(msg("trial.sub.sdpa_backend", asked=backend.value, used=used))
    return used


def no_kernel(exc: BaseException) -> bool:
    """Whether ``exc`` is torch's refusal of an SDPA call that no enabled backend takes."""
    return isinstance(exc, RuntimeError) and any(text in str(exc) for text in _NO_KERNEL)


def no_kernel_error(exc: BaseException, plan: TrainPlan) -> TrialError:
    """One coded error for torch's refusal met during the steps (inputs the backend refuses mid-run)."""
    asked = plan.sdpa_backend.value if plan.attention is Attention.SDPA else SdpaBackend.AUTO.value
    detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    return TrialError(msg("error.trial.sdpa_no_kernel_run", backend=asked, detail=detail))


def enabled_backend() -> tuple[SdpaBackend | None, str]:
    """(the plan value a run's global SDPA flags restrict it to, the flags read), for the plan of a user's run.

    torch's flags (``torch.backends.cuda.flash_sdp_enabled()`` and its siblings) are what ``sdpa_kernel`` and
    ``torch.backends.cuda.enable_*_sdp`` set, for the whole process. Only cuDNN, FlashAttention-2 and the
    memory-efficient kernel are read: cuDNN on and FlashAttention-2 and the memory-efficient kernel off is "cudnn",
    the memory-efficient kernel alone "efficient", FlashAttention-2 on and cuDNN off "flash"; all on is None
    (nothing forced: which one runs then depends on the torch release, its cuDNN and the GPU, which the flags do not
    say, so the plan keeps its default)."""
    import torch

    b = torch.backends.cuda
    flags = {"cudnn": b.cudnn_sdp_enabled(), "flash": b.flash_sdp_enabled(), "efficient": b.mem_efficient_sdp_enabled()}
    read = ", ".join(f"{k}={'on' if v else 'off'}" for k, v in flags.items())
    if flags["cudnn"] and not flags["flash"] and not flags["efficient"]:
        return SdpaBackend.CUDNN, read
    if flags["efficient"] and not flags["flash"] and not flags["cudnn"]:
        return SdpaBackend.EFFICIENT, read
    if flags["flash"] and not flags["cudnn"]:
        return SdpaBackend.FLASH, read
    return None, read


__all__ = ["check", "device_problem", "enabled_backend", "no_kernel", "no_kernel_error", "restricted", "restriction",
           "torch_choice"]
