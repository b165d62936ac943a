"""How well one CPU trial calibrates the op model for another shape (gpuwork.measure.cpu_rates).

Prints figures only (nothing is asserted, nothing is written). For each method: measure the CPU's kernel rates, run
real gpuwork trials of tiny-llama at shape A and shape B (interleaved A, B, A, B so that a slow spell of a shared
machine falls on both), fit the calibration factor at A and predict B. The printed error is predicted B / measured B - 1;
on an idle machine it has been within 10 %, under load it drifts (which is why this is a benchmark, not a test).

Usage:
    python benchmarks/cpu_calibration.py [--methods lora full] [--rounds 2] [--steps 20] [--warmup 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

SHAPE_A = (128, 2)  # (sequence length, batch)
SHAPE_B = (256, 4)  # 4x the tokens of A


def run(methods: list[str], rounds: int, steps: int, warmup: int) -> None:
    import torch

    from gpuwork.measure.cpu_rates import calibrate_then_predict, measure_cpu_rates
    from gpuwork.measure.trial import run_trial
    from gpuwork.plan import TrainPlan

    torch.set_num_threads(1)  # thread_time counts the calling thread only
    clock = time.thread_time
    rates = measure_cpu_rates(clock=clock)
    print(f"shape A (seq, batch) {SHAPE_A}, shape B {SHAPE_B}; {rounds} rounds of {steps} steps after {warmup} "
          f"warm-up; clock: thread CPU time, 1 torch thread")
    for method in methods:
        plans = [TrainPlan(model="tiny-llama", method=method, precision="fp32", seq_len=s, batch_size=b)
                 for s, b in (SHAPE_A, SHAPE_B)]
        times: list[list[float]] = [[], []]
        for _ in range(rounds):
            for i, plan in enumerate(plans):
                record = run_trial(plan, steps=steps, warmup=warmup, device="cpu", checkpoint=False, clock=clock)
                times[i] += [s.step_time_s for s in record.steps if not s.is_warmup]
        measured = [statistics.median(t) for t in times]
        cal = calibrate_then_predict(plans[0], measured[0], plans[1], rates)
        error = cal.step_s / measured[1] - 1
        print(f"{method:5s} A measured {measured[0] * 1e3:7.1f} ms (priced {cal.priced_measured_s * 1e3:.1f} ms), "
              f"factor {cal.factor:.3f}; B measured {measured[1] * 1e3:7.1f} ms, uncalibrated "
              f"{cal.uncalibrated.total_s * 1e3:.1f} ms, calibrated {cal.step_s * 1e3:.1f} ms: error {error:+.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--methods", nargs="+", default=["lora", "full"], choices=["lora", "full"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    run(args.methods, args.rounds, args.steps, args.warmup)


if __name__ == "__main__":
    main()
