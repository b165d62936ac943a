"""Latency of the analytic estimators: memory (one estimate with the model spec cached, a 10,000-plan sweep) and
time (scripts/bench_time.py: one cached ``estimate_time``, 10,000 distinct plans).

Run: .venv/bin/python benchmarks/estimate_speed.py   (prints figures; goals: memory < 1 ms and < 1 s, time
< 0.2 ms and < 2 s)
"""

from __future__ import annotations

import itertools
import runpy
import statistics
import time
from pathlib import Path

from gpuwork import TrainPlan, estimate_memory, get_spec

BENCH_TIME = Path(__file__).resolve().parents[1] / "scripts" / "bench_time.py"


def main() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048, batch_size=2)
    spec = get_spec(plan.model)  # cached spec (shipped presets need no torch)
    estimate_memory(plan, spec)
    samples = []
    for _ in range(2000):
        t0 = time.perf_counter()
        estimate_memory(plan, spec)
        samples.append(time.perf_counter() - t0)
    print(f"single estimate (spec cached): median {statistics.median(samples) * 1e6:.0f} us, "
          f"p99 {sorted(samples)[int(len(samples) * 0.99)] * 1e6:.0f} us  (goal < 1000 us)")

    grid = itertools.product(
        ("llama-3.1-8b", "qwen2.5-7b", "mistral-7b", "llama-3.2-1b"),
        ("full", "lora", "qlora", "freeze", "scratch"),
        ("bf16", "fp32", "bf16-mixed", "fp16"),
        (512, 1024, 2048, 4096, 8192),
        (1, 2, 4, 8, 16),
        (False, True),
        ("sdpa", "eager"),
        (8, 64),
    )
    plans = [TrainPlan(model=m, method=me, precision=p, seq_len=s, batch_size=b, grad_checkpointing=g, attention=a,
                       lora_r=r) for m, me, p, s, b, g, a, r in itertools.islice(grid, 10_000)]
    specs = {m: get_spec(m) for m in {p.model for p in plans}}
    t0 = time.perf_counter()
    for p in plans:
        estimate_memory(p, specs[p.model])
    elapsed = time.perf_counter() - t0
    print(f"sweep of {len(plans):,} plans: {elapsed:.2f} s  ({elapsed / len(plans) * 1e6:.0f} us per plan; "
          "goal < 1 s)")
    t0 = time.perf_counter()
    built = [TrainPlan(model="llama-3.1-8b", seq_len=s) for s in range(1, 10_001)]
    print(f"constructing 10,000 validated TrainPlans: {time.perf_counter() - t0:.2f} s ({len(built)} plans)")
    runpy.run_path(str(BENCH_TIME))["main"]()  # the step-time estimate


if __name__ == "__main__":
    main()
