#!/usr/bin/env python
"""Does a calibration transfer? Measure gpuwork CPU trials at several shapes, fit the one factor at A, predict B.

For each method (LoRA and full fine-tuning of tiny-llama, fp32) it runs a real gpuwork trial
(``gpuwork.measure.trial.run_trial``, no checkpoint round-trip) at every shape of ``--shapes``,
measures the CPU's kernel rates (``gpuwork.measure.cpu_rates.measure_cpu_rates``), and for every
pair of shapes A -> B that differ in both sequence length and batch prints: measured A, measured B,
the op model's uncalibrated price of B, the price of B with the factor fitted at A
(``calibrate_then_predict``), and both errors. A benchmark: it asserts nothing.

Clock: the thread's CPU time (``time.thread_time``) with one torch thread, so that other processes on
a shared machine do not enter the step times; ``--wall-clock`` uses ``time.perf_counter``.

Usage:
    python scripts/calibration_transfer.py [--steps 12] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHAPES = ("32x2", "64x2", "64x4", "128x2", "256x1", "256x4", "512x2")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--model", default="tiny-llama")
    p.add_argument("--methods", nargs="+", default=["lora", "full"], choices=["lora", "full", "freeze"])
    p.add_argument("--shapes", nargs="+", default=list(SHAPES), help="seq x batch, e.g. 128x2")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    p.add_argument("--wall-clock", action="store_true", help="time with perf_counter instead of thread CPU time")
    p.add_argument("--json", metavar="FILE.json", help="also write the figures as JSON")
    return p.parse_args(argv)


def _shape(text: str) -> tuple[int, int]:
    seq, batch = text.lower().split("x")
    return int(seq), int(batch)


def rates_table(r: Any) -> str:
    d = r.dispatch
    lines = [f"CPU rates ({r.gpu.display_name}), measured in {r.seconds:.1f} s:", "",
             "| quantity | value | used by the op model |", "|---|---:|---|"]
    for g in r.gemm:
        lines.append(f"| torch.mm fp32 {g.m} x {g.n} x {g.k} | {g.flops_s / 1e9:.1f} GFLOP/s | |")
    lines += [f"| GEMM rate (median of the shapes) | {r.matmul_flops_s / 1e9:.1f} GFLOP/s | yes |",
              f"| copy bandwidth, large clone | {r.copy_bytes_s / 1e9:.1f} GB/s | yes |",
              f"| copy bandwidth, cache-resident | {r.cached_copy_bytes_s / 1e9:.1f} GB/s | no |",
              f"| bare op (torch.mul, 1 element) | {d.eager_us:.2f} us | no |",
              f"| autograd op forward / backward | {d.autograd_forward_us:.2f} / {d.autograd_backward_us:.2f} us | no |",
              f"| nn.Linear forward / backward | {d.module_forward_us:.2f} / {d.module_backward_us:.2f} us | |",
              f"| host per kernel ((fwd + bwd) / 3) | {d.per_kernel_us:.2f} us | yes |"]
    if r.sdpa_flops_s:
        from gpuwork.facts.rates import load_rates
        from gpuwork.measure.cpu_rates import CPU_SDPA_SHAPE

        fraction = load_rates().kernel("sdpa_mem_efficient_fraction")
        shape = "b{} h{} s{} d{}".format(*CPU_SDPA_SHAPE)
        lines += [f"| SDPA forward / backward, {shape} | {r.sdpa_flops_s[0] / 1e9:.1f} / {r.sdpa_flops_s[1] / 1e9:.1f} "
                  f"GFLOP/s | no: the op model prices attention at {fraction} x the GEMM rate = "
                  f"{fraction * r.matmul_flops_s / 1e9:.1f} GFLOP/s |"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    from gpuwork.measure.cpu_rates import calibrate_then_predict, measure_cpu_rates, predict_cpu_step
    from gpuwork.measure.trial import run_trial
    from gpuwork.plan import TrainPlan

    torch.set_num_threads(args.threads)
    clock = time.perf_counter if args.wall_clock else time.thread_time
    rates = measure_cpu_rates(clock=clock)
    print(rates_table(rates) + "\n", flush=True)
    shapes = [_shape(s) for s in args.shapes]
    out: dict[str, Any] = {"rates": rates.as_dict(), "clock": clock.__name__, "measured": {}, "pairs": []}
    lines = ["| method | A (seq x batch) | B | measured A (ms) | measured B (ms) | uncalibrated B (ms) | error "
             "| factor | calibrated B (ms) | error |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for method in args.methods:
        measured: dict[tuple[int, int], tuple[Any, float]] = {}
        for seq, batch in shapes:
            plan = TrainPlan(model=args.model, method=method, precision="fp32", seq_len=seq, batch_size=batch)
            record = run_trial(plan, steps=args.steps, warmup=args.warmup, device="cpu", checkpoint=False, clock=clock)
            step = record.summary.median_step_time_s
            measured[(seq, batch)] = (plan, step)
            priced = predict_cpu_step(plan, rates).total_s
            out["measured"][f"{method} {seq}x{batch}"] = {"step_s": step, "priced_s": priced}
            print(f"  {method} {seq} x {batch}: measured {step * 1e3:.1f} ms, priced {priced * 1e3:.1f} ms "
                  f"({priced / step - 1:+.1%})", flush=True)
        for a, b in itertools.permutations(shapes, 2):
            if a[0] == b[0] or a[1] == b[1]:
                continue  # a pair differs in both sequence length and batch
            (plan_a, step_a), (plan_b, step_b) = measured[a], measured[b]
            cal = calibrate_then_predict(plan_a, step_a, plan_b, rates)
            unc = cal.uncalibrated.total_s
            lines.append(f"| {method} | {a[0]} x {a[1]} | {b[0]} x {b[1]} | {step_a * 1e3:.1f} | {step_b * 1e3:.1f} "
                         f"| {unc * 1e3:.1f} | {unc / step_b - 1:+.1%} | {cal.factor:.3f} | {cal.step_s * 1e3:.1f} "
                         f"| {cal.step_s / step_b - 1:+.1%} |")
            out["pairs"].append({"method": method, "a": a, "b": b, "measured_a_s": step_a, "measured_b_s": step_b,
                                 "uncalibrated_b_s": unc, "factor": cal.factor, "calibrated_b_s": cal.step_s})
    print("\n" + "\n".join(lines))
    errors = sorted(abs(p["calibrated_b_s"] / p["measured_b_s"] - 1) for p in out["pairs"])
    if errors:
        print(f"\n{len(errors)} pairs: calibrated |error| median {errors[len(errors) // 2]:.1%}, "
              f"max {errors[-1]:.1%}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=list))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
