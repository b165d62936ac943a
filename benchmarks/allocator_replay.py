"""Speed of the caching-allocator replay (gpuwork.estimate.allocator) against the implementation it replaced
(kept as the reference in tests/test_allocator_replay.py), on one large step: Llama-3.1-8B LoRA q/v, gradient
checkpointing, batch 1, seq_len 8,192, lengths from a mean +- sd of 3,234 +- 2,548 tokens (64 bins).

Run: .venv/bin/python benchmarks/allocator_replay.py   (prints figures; CPU seconds, so a loaded machine counts
less against it than wall time would)
"""

from __future__ import annotations

import random
import runpy
import time
from pathlib import Path

from gpuwork import TrainPlan, estimate_memory, get_spec
from gpuwork.estimate import allocator, memory
from gpuwork.estimate.lengths import moments_histogram, padded_lengths

REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "test_allocator_replay.py"
ORDERS, BATCHES = 4, 3_000


def _plan() -> TrainPlan:
    hist = moments_histogram(3234.4, 2547.5, 91, 19548, 8192, longer="drop")
    return TrainPlan(model="llama-3.1-8b", method="lora", seq_len=8192, batch_size=1, grad_checkpointing=True,
                     lengths=hist)


def _step(plan: TrainPlan) -> allocator.StepTensors:
    caught: list[allocator.StepTensors] = []
    real = memory.replay
    memory.replay = lambda step, tokens, expandable: caught.append(step) or real(step, tokens, expandable)
    try:
        estimate_memory(plan, get_spec(plan.model))
    finally:
        memory.replay = real
    return caught[0]


def main() -> None:
    plan = _plan()
    step = _step(plan)
    before = runpy.run_path(str(REFERENCE))["before_replay"]
    mix = padded_lengths(plan) or ()
    lengths, weights = [n for _, n in mix], [p for p, _ in mix]
    orders = [tuple(random.Random(seed).choices(lengths, weights, k=BATCHES)) for seed in range(ORDERS)]
    total_before = total_after = 0.0
    for seed, tokens in enumerate(orders):
        t0 = time.process_time()
        old = before(step, tokens, False)
        t1 = time.process_time()
        allocator._chain.cache_clear()  # each order on its own, as the reference replays it
        new = allocator.replay.__wrapped__(step, tokens, False)
        t2 = time.process_time()
        assert new == old, (seed, new, old)
        total_before, total_after = total_before + t1 - t0, total_after + t2 - t1
        print(f"order {seed}: {BATCHES:,} micro-batches, reserved peak {new[0] / 2**30:.2f} GiB: before "
              f"{t1 - t0:.2f} s, now {t2 - t1:.2f} s (x{(t1 - t0) / (t2 - t1):.1f})")
    print(f"{ORDERS} orders one by one: before {total_before:.2f} s, now {total_after:.2f} s "
          f"(x{total_before / total_after:.1f}; CPU seconds)")
    allocator._chain.cache_clear()
    t0 = time.process_time()
    for tokens in orders:
        allocator.replay.__wrapped__(step, tokens, False)
    shared = time.process_time() - t0
    print(f"{ORDERS} orders on one shared chain of transitions: {shared:.2f} s (x{total_before / shared:.1f})")
    for cached in (allocator._chain, allocator.replay, allocator.reserved_over_orders, allocator.step_program):
        cached.cache_clear()
    t0 = time.process_time()
    est = estimate_memory(plan, get_spec(plan.model))
    print(f"estimate_memory of this histogram plan ({allocator.ORDERS} orders of {allocator.ORDER_BATCHES:,} "
          f"micro-batches), replay caches empty: {time.process_time() - t0:.2f} s; allocator fragmentation "
          f"{est.breakdown['allocator_fragmentation'] / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
