"""How fast the step-time estimate is: one ``estimate_time`` once the model's facts are cached, and a sweep.

Prints figures; asserts nothing (the targets, gpuwork issue 19: one estimate under 0.2 ms, a sweep of 10,000
distinct plans under 2 s). The sweep's CPU time is printed beside its wall time: on a shared machine the CPU time
is the steadier of the two.

    python scripts/bench_time.py
"""

from __future__ import annotations

import itertools
import statistics
import time

from gpuwork.estimate.timing import estimate_time
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan


def main() -> None:
    base = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    inputs = resolve(base)
    gpu = inputs.gpu("h100_sxm")
    estimate_time(base, gpu, inputs)  # warm the caches (spec groups, LoRA targets, op list)
    samples = []
    for _ in range(200):
        start = time.perf_counter()
        estimate_time(base, gpu, inputs)
        samples.append(time.perf_counter() - start)
    print(f"one estimate_time, same plan (op list cached): median {statistics.median(samples) * 1e3:.3f} ms, "
          f"p95 {sorted(samples)[189] * 1e3:.3f} ms  (goal < 0.2 ms)")

    methods = ("full", "lora", "qlora")
    seqs = (256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
    batches = (1, 2, 4, 8, 16)
    accums = (1, 2, 4, 8)
    gpus_ids = ("h100_sxm", "a100_80_sxm", "l40s", "rtx4090", "mi300x")
    ckpt = (False, True)
    tokens = (10**8, 10**9)
    plans = [base.replace(method=m, seq_len=s, batch_size=b, grad_accum=a, grad_checkpointing=c, dataset_tokens=d)
             for m, s, b, a, c, d in itertools.product(methods, seqs, batches, accums, ckpt, tokens)]
    grid = list(itertools.product(plans, gpus_ids))[:10_000]
    distinct = len(set(grid))
    start, cpu = time.perf_counter(), time.process_time()
    for plan, gpu_id in grid:
        estimate_time(plan, inputs.gpu(gpu_id), inputs)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"sweep of {len(grid):,} (plan, GPU) estimates ({distinct:,} distinct): {elapsed:.2f} s "
          f"(CPU {cpu:.2f} s), {elapsed / len(grid) * 1e3:.3f} ms each  (goal < 2 s)")


if __name__ == "__main__":
    main()
