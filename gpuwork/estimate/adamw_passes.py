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
"""

from __future__ import annotations

from gpuwork.plan import OptimizerImpl

FOREACH_PASSES = 7
FOREACH_TENSORS_MOVED = 18
FOR_LOOP_KERNELS = 7
FUSED_TENSORS_MOVED = 7
OUT_OF_PLACE_KERNELS = 16
OUT_OF_PLACE_TENSORS_MOVED = 35


def adamw_passes(impl: OptimizerImpl, tensors: int, lists: int) -> tuple[int, int]:
    """(parameter-sized tensors moved, kernels launched) of one AdamW update over ``tensors`` parameter tensors,
    ``lists`` foreach launches of them."""
    if impl is OptimizerImpl.FUSED:
        return FUSED_TENSORS_MOVED, lists
    if impl is OptimizerImpl.FOREACH:
        return FOREACH_TENSORS_MOVED, FOREACH_PASSES * lists
    if impl is OptimizerImpl.OUT_OF_PLACE:
        return OUT_OF_PLACE_TENSORS_MOVED, OUT_OF_PLACE_KERNELS * tensors
    return FOREACH_TENSORS_MOVED, FOR_LOOP_KERNELS * tensors


__all__ = ["FOREACH_PASSES", "FOREACH_TENSORS_MOVED", "FOR_LOOP_KERNELS", "FUSED_TENSORS_MOVED",
           "OUT_OF_PLACE_KERNELS", "OUT_OF_PLACE_TENSORS_MOVED", "adamw_passes"]
