"""Memory passes and kernels of one AdamW update, per implementation (``TrainPlan.optimizer_impl``).

torch (torch/optim/adamw.py): foreach runs 7 multi-tensor passes moving 18 parameter-sized tensors (lerp_(m),
mul_+addcmul_(v), sqrt, div_, add_(eps), addcdiv_(p)); the for-loop runs the same passes one tensor at a time
(``_single_tensor_adam``: 7 kernels per tensor); fused reads p, g, m, v and writes p, m, v in one kernel.

``out-of-place``: a Python loop per parameter of out-of-place tensor expressions, new state tensors each step
(the Stanford CS336 staff AdamW, cs336-basics/cs336_basics/optimizer.py; docs/kernels.md "A hand-written
out-of-place AdamW"). Per tensor, in the order the code evaluates it:

- ``state.get("m", torch.zeros_like(grad))`` and the same for v: Python evaluates the default every step, two
  fills (2 writes);
- ``beta_1 * m``, ``(1 - beta_1) * grad``, their sum (3 kernels: 4 reads, 3 writes);
- ``torch.square(grad)``, ``(1 - beta_2) *`` it, ``beta_2 * v``, the sum (4 kernels: 5 reads, 4 writes);
- ``alpha_t * m_t``, ``torch.sqrt(v_t)``, ``+ eps``, the division, ``p.data -=`` (5 kernels: 7 reads, 5 writes);
- ``alpha * weight_decay * p.data`` (a Python float times the tensor) and ``p.data -=`` (2 kernels: 3 reads,
  2 writes).

16 kernels, 19 reads and 16 writes: 35 parameter-sized tensors per update.

Kernels of a foreach or fused pass (``mta_launches``): ATen's ``multi_tensor_apply``
(aten/src/ATen/native/cuda/MultiTensorApply.cuh) gives each block one 65,536-element chunk of one tensor and
launches a kernel whenever it holds 320 blocks or its tensor limit for the pass's depth (tensor lists read or
written: 110, 64, 48, 36, 30 for depths 1 to 5; 96 for depth 1 with a list of scalars). Those are the 4 KB
kernel-argument limits every CUDA 12 build runs; the 32 KB layout (2,240 blocks) is gated to CUDA 13 builds
(pytorch#178641). So a large model launches one kernel per 21 M elements of each pass. docs/kernels.md
"Optimizer step: kernels and bytes, counted from the code".
"""

from __future__ import annotations

import math

from gpuwork.plan import OptimizerImpl

MTA_CHUNK_ELEMENTS = 65_536
MTA_MAX_BLOCKS = 320
MTA_MAX_TENSORS = (110, 64, 48, 36, 30)  # by depth 1..5
MTA_MAX_TENSORS_SCALAR_LIST = (96, 64, 48, 36, 30)
# _multi_tensor_adam's passes at weight_decay=0 (torch/optim/adam.py): (depth, takes a list of scalars).
# lerp_(m, g), mul_(v), addcmul_(v, g, g), sqrt(v) -> new, div_(new, bias corrections), add_(new, eps),
# addcdiv_(p, m, new, step sizes)
FOREACH_ADAMW_DEPTHS = ((2, False), (1, False), (3, False), (2, False), (1, True), (1, False), (3, True))
FUSED_ADAMW_DEPTH = 4  # _fused_adamw_: p, g, m, v in one multi_tensor_apply_for_fused_optimizer


def mta_launches(tensors: int, elements: float, depth: int, scalar_list: bool = False) -> int:
    """Kernels one ``multi_tensor_apply`` pass launches over ``tensors`` tensors of ``elements`` elements in all
    with ``depth`` tensor lists. Chunks are counted whole (at least one per tensor): a tensor's partial last chunk
    is left out, exact for the power-of-two matrices that hold most parameters."""
    limit = (MTA_MAX_TENSORS_SCALAR_LIST if scalar_list else MTA_MAX_TENSORS)[depth - 1]
    chunks = max(math.ceil(elements / MTA_CHUNK_ELEMENTS), tensors)
    return max(1, math.ceil(tensors / limit), math.ceil(chunks / MTA_MAX_BLOCKS))

FOREACH_PASSES = 7
FOREACH_TENSORS_MOVED = 18
FOR_LOOP_KERNELS = 7
FUSED_TENSORS_MOVED = 7
OUT_OF_PLACE_KERNELS = 16
OUT_OF_PLACE_TENSORS_MOVED = 35


def mta_split(elements: float) -> bool:
    """A pass over ``elements`` elements runs as several 320-block launches (more than 320 chunks); each launch
    holds fewer blocks than the GPU can run at once and drains before the next one starts, so its bytes stream
    slower than one kernel's (kernels.csv mta_split_bandwidth_share, measured on the fused AdamW kernel)."""
    return math.ceil(elements / MTA_CHUNK_ELEMENTS) > MTA_MAX_BLOCKS


def adamw_passes(impl: OptimizerImpl, tensors: int, elements: float) -> tuple[int, int]:
    """(parameter-sized tensors moved, kernels launched) of one AdamW update over ``tensors`` parameter tensors
    holding ``elements`` elements."""
    if impl is OptimizerImpl.FUSED:  # fused keeps the step counts on the GPU: a _foreach_add_ over them first
        return FUSED_TENSORS_MOVED, mta_launches(tensors, elements, FUSED_ADAMW_DEPTH) + mta_launches(tensors, tensors, 1)
    if impl is OptimizerImpl.FOREACH:
        return FOREACH_TENSORS_MOVED, sum(mta_launches(tensors, elements, depth, scalars)
                                          for depth, scalars in FOREACH_ADAMW_DEPTHS)
    if impl is OptimizerImpl.OUT_OF_PLACE:
        return OUT_OF_PLACE_TENSORS_MOVED, OUT_OF_PLACE_KERNELS * tensors
    return FOREACH_TENSORS_MOVED, FOR_LOOP_KERNELS * tensors


__all__ = ["FOREACH_ADAMW_DEPTHS", "FOREACH_PASSES", "FOREACH_TENSORS_MOVED", "FOR_LOOP_KERNELS",
           "FUSED_ADAMW_DEPTH", "FUSED_TENSORS_MOVED", "MTA_CHUNK_ELEMENTS", "MTA_MAX_BLOCKS", "MTA_MAX_TENSORS",
           "MTA_MAX_TENSORS_SCALAR_LIST", "OUT_OF_PLACE_KERNELS", "OUT_OF_PLACE_TENSORS_MOVED", "adamw_passes",
           "mta_launches", "mta_split"]
