"""The fixed-shape step replay (gpuwork.estimate.allocator_step) with the cache emptied before the measured step.

Why: several harnesses call ``torch.cuda.empty_cache()`` and ``torch.cuda.reset_peak_memory_stats()`` between their
warm-up steps and the one step they measure (the CS336 memory harnesses of held-out memory 13-14). ``emptyCache``
gives every cached segment that is wholly free back to CUDA (``release_cached_blocks`` -> ``release_blocks``: "Frees
all non-split blocks"), and the peak restarts from what is still mapped: the segments that hold the parameters, the
optimizer states and the last warm-up step's gradients. The measured step then maps again what it needs: segments
the warm-up kept only for its own tensors are gone (the peak falls), but a tensor may now land in a block that the
kept cache had left to another and a later one map a segment of its own (the peak rises); the replay tells which
(docs/memory_misses.md, "The cache emptied before the measured step").

How: the replay's program (``allocator_step.step_requests``: the parameters, then ``STEPS`` steps) is run up to the
start of its last step, the wholly free segments are released and the peak reset, then the last step runs; the
reserved peak is that step's. Where the step is (``last_step_start``) comes from the marks ``step_requests`` returns
with its program: the last step begins where the update before it ends.

Pure: no file, torch or clock.
"""

from __future__ import annotations

import functools

from gpuwork.estimate.allocator import CachingAllocator, StepTensors
from gpuwork.estimate.allocator_step import STEPS, ParamLayout, StepBytes, fixed_step_cache, step_requests
from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import TrainPlan


class EmptyingAllocator(CachingAllocator):
    """The large pool with ``torch.cuda.empty_cache()`` and ``reset_peak_memory_stats()`` between two programs."""

    def empty_cache(self) -> None:
        """``emptyCache`` -> ``release_cached_blocks``: every wholly free segment goes back to CUDA (a segment
        with a block in use stays); ``resetPeakStats``: the reserved and allocated peaks restart from now."""
        self._release_cached()
        self.peak_reserved = self.reserved
        self.peak_allocated = self.allocated


def last_step_start(marks: tuple[int, ...]) -> int:
    """Index in ``step_requests``'s program where its last step begins, with the releases of
    ``zero_grad(set_to_none=True)``: the end of the update before it. ``marks`` is ``step_requests``'s third value,
    (first update's start, its end, the second's start, its end, ...), two per step.

    Raises:
        ValueError: marks that are not two per replayed step (``step_requests`` changed).
    """
    if len(marks) != 2 * STEPS or list(marks) != sorted(marks):
        raise ValueError("the replay's program is not parameters then steps, each ending in its update")
    return marks[2 * STEPS - 3]


@functools.lru_cache(maxsize=4096)
def replay_emptied(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int,
                   limit: int | None = None) -> tuple[int, int]:
    """(reserved peak of the last step, allocated peak of the steps after the first) of the large pool, in bytes,
    as ``allocator_step.replay_step`` with the cache emptied and the peaks reset before the last step."""
    program, peak, marks = step_requests(layout, by, step, tokens)
    start = last_step_start(marks)
    alloc = EmptyingAllocator(limit=limit)
    held: list[int] = []
    alloc.run(program[:start], held)
    alloc.empty_cache()
    alloc.run(program[start:], held)
    return alloc.peak_reserved, peak


def emptied_step_cache(spec: ModelSpec, plan: TrainPlan, step: StepTensors, quadratic: int = 0,
                       room: int | None = None) -> int:
    """``allocator_step.fixed_step_cache`` with the cache emptied before the measured step (``replay_emptied``):
    the bytes the allocator holds beyond the large pool's allocated peak in that step; ``room`` bounds it as
    there (the segments limited to the allocated peak plus ``room`` where the unbounded cache would not fit)."""
    return fixed_step_cache(spec, plan, step, quadratic, room, replay=replay_emptied)


__all__ = ["EmptyingAllocator", "emptied_step_cache", "last_step_start", "replay_emptied"]
