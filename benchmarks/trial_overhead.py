"""How much the trial's measuring costs, and how well a short trial predicts a long run.

Prints figures only (nothing is asserted, nothing is written):

1. Instrumentation overhead: the mean step time of ``run_trial`` (per-step clock reads, the CPU
   RSS sampler thread, memory checks after forward/backward/optimizer) against a bare loop of
   the same training step on the same model, optimizer and data. Runs alternate A/B to spread
   the noise of a shared machine; reported: the ratio of the medians, the median of the per-round
   ratios (neighbours in time share the machine's load), and the ratio of the fastest rounds.
2. Extrapolation error: the time of N steps predicted from a 10-step trial (median step time
   x N, and mean x N) against the measured time of an N-step trial (sum of its step times).

Usage:
    python benchmarks/trial_overhead.py [--model tiny-llama] [--method full] [--seq-len 64]
        [--batch-size 2] [--threads 1] [--rounds 5] [--steps 20] [--short 10] [--long 100]
"""

from __future__ import annotations

import argparse
import statistics
import time


def bare_step_time(plan, steps: int, warmup: int) -> float:
    """Mean seconds per step of the trial's training step with no measuring around it."""
    from gpuwork.measure.options import TrialOptions
    from gpuwork.measure.runtime import build_run, prepare, quiet_libraries, release_memory, train_step
    from gpuwork.measure.textdata import cycle, make_loader

    setup, text = prepare(plan, TrialOptions(seed=0, warmup=warmup, max_grad_norm=1.0))
    with quiet_libraries():
        run = build_run(setup)
        batches = cycle(make_loader(text.dataset(setup.task.value), plan.batch_size))
        for _ in range(warmup):
            train_step(run, setup, lambda: next(batches), time.perf_counter)
        start = time.perf_counter()
        for _ in range(steps):
            train_step(run, setup, lambda: next(batches), time.perf_counter)
        elapsed = time.perf_counter() - start
    del run
    release_memory(setup.device)
    return elapsed / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--model", default="tiny-llama")
    parser.add_argument("--method", default="full")
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 is steadiest when shared)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="steps per overhead round")
    parser.add_argument("--short", type=int, default=10, help="steps of the short trial")
    parser.add_argument("--long", type=int, default=100, help="steps of the long run")
    args = parser.parse_args()

    import torch

    from gpuwork.measure.trial import run_trial
    from gpuwork.plan import TrainPlan

    torch.set_num_threads(args.threads)
    plan = TrainPlan(model=args.model, method=args.method, precision="fp32", seq_len=args.seq_len,
                     batch_size=args.batch_size, lora_r=8)
    print(f"plan: {args.model} {args.method} batch {args.batch_size} x seq {args.seq_len}, "
          f"torch threads {torch.get_num_threads()}")

    bare, measured = [], []
    for _ in range(args.rounds):
        bare.append(bare_step_time(plan, args.steps, warmup=2))
        record = run_trial(plan, steps=args.steps, warmup=2, checkpoint=False)
        measured.append(record.summary.mean_step_time_s)
    b, m = statistics.median(bare), statistics.median(measured)
    print("\n1. instrumentation overhead (mean step time, median of rounds)")
    print(f"   bare loop     {b * 1e3:8.2f} ms/step   rounds: {', '.join(f'{x * 1e3:.1f}' for x in bare)}")
    print(f"   measured      {m * 1e3:8.2f} ms/step   rounds: {', '.join(f'{x * 1e3:.1f}' for x in measured)}")
    paired = statistics.median(x / y for x, y in zip(measured, bare, strict=True))
    print(f"   overhead      {(m / b - 1) * 100:+8.2f} %  (median of paired rounds {(paired - 1) * 100:+.2f} %, "
          f"fastest rounds {(min(measured) / min(bare) - 1) * 100:+.2f} %)")

    short = run_trial(plan, steps=args.short, warmup=2, checkpoint=False)
    long = run_trial(plan, steps=args.long, warmup=2, checkpoint=False)
    actual = sum(s.step_time_s for s in long.measured)
    by_median = short.summary.median_step_time_s * args.long
    by_mean = short.summary.mean_step_time_s * args.long
    print(f"\n2. extrapolation: {args.short}-step trial -> {args.long} steps")
    print(f"   measured {args.long} steps        {actual:8.2f} s  (median step {long.summary.median_step_time_s * 1e3:.1f} ms,"
          f" p90 {long.summary.p90_step_time_s * 1e3:.1f} ms)")
    print(f"   predicted from median     {by_median:8.2f} s  error {(by_median / actual - 1) * 100:+.1f} %")
    print(f"   predicted from mean       {by_mean:8.2f} s  error {(by_mean / actual - 1) * 100:+.1f} %")
    print(f"   short trial: median {short.summary.median_step_time_s * 1e3:.1f} ms, p90 "
          f"{short.summary.p90_step_time_s * 1e3:.1f} ms, warm-up mean "
          f"{(short.summary.warmup_mean_step_time_s or 0) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
