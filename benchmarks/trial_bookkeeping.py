"""What a trial's bookkeeping costs as it runs longer: wall time against start-up, steps and checkpoint.

Runs ``run_trial`` on CPU with a record written to a temporary folder for each step count and prints, per run:

- start-up: from the call until the first step began (model, tokenizer, data, the first record);
- steps: the sum of every step's measured time (warm-up included);
- checkpoint: from the end of the last step until ``run_trial`` returned (the save -> restore -> resume
  round-trip and the last record write);
- wall: the whole call; ratio = wall / (start-up + steps + checkpoint): what the time between steps (the
  record's steps file, its summary, memory readings, callbacks) adds. The target is within 10 % (<= 1.10);
- bytes written to the record per step (steps file and record JSON, divided by the steps) and the record's size.

Every figure is printed, nothing asserted. Defaults: the tiny LoRA preset (tiny-llama, LoRA r=4) at 100 and
1,000 steps with batch 2 x 32 tokens, and 10,000 steps with batch 1 x 8 tokens so that it ends in minutes
on a shared CPU; both are said in the output.

Usage:
    python benchmarks/trial_bookkeeping.py [--counts 100,1000,10000] [--small-from 10000] [--threads 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def one(steps: int, seq_len: int, batch: int, threads: int) -> dict[str, float]:
    import torch

    from gpuwork.measure.trial import run_trial
    from gpuwork.plan import TrainPlan

    torch.set_num_threads(threads)
    plan = TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=seq_len, batch_size=batch,
                     lora_r=4)
    marks: dict[str, float] = {}

    def seen(m) -> None:
        now = time.perf_counter()
        if "first" not in marks:
            marks["first"] = now - m.step_time_s  # the first step's start
        marks["last"] = now

    with tempfile.TemporaryDirectory(prefix="gpuwork-bookkeeping-") as out:
        start = time.perf_counter()
        record = run_trial(plan, steps=steps, warmup=2, out_dir=out, device="cpu", callbacks=[seen])
        end = time.perf_counter()
        files = sorted(Path(out).glob("*.json")) + sorted(Path(out).glob("*.steps.jsonl"))
        record_bytes = sum(p.stat().st_size for p in files)
    step_s = sum(m.step_time_s for m in record.steps)
    startup_s = marks["first"] - start
    checkpoint_s = end - marks["last"]
    wall = end - start
    return {"steps": len(record.steps), "seq_len": seq_len, "batch": batch, "wall_s": wall, "startup_s": startup_s,
            "step_s": step_s, "checkpoint_s": checkpoint_s, "ratio": wall / (startup_s + step_s + checkpoint_s),
            "between_s": wall - startup_s - step_s - checkpoint_s, "record_bytes": record_bytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--counts", default="100,1000,10000", help="measured steps of each run, comma-separated")
    parser.add_argument("--small-from", type=int, default=10_000,
                        help="from this many steps on, batch 1 x 8 tokens (to end in minutes on a CPU)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    print("trial bookkeeping: tiny-llama LoRA r=4, fp32, CPU, warm-up 2 steps, record written to a temporary folder")
    print(f"{'steps':>7} {'batch x seq':>11} {'wall s':>9} {'start-up s':>10} {'steps s':>9} {'checkpoint s':>12} "
          f"{'between s':>9} {'ratio':>6} {'record bytes/step':>17}")
    for count in (int(c) for c in args.counts.split(",")):
        small = count >= args.small_from
        r = one(count, 8 if small else 32, 1 if small else 2, args.threads)
        print(f"{r['steps']:>7} {r['batch']:>5} x {r['seq_len']:<3} {r['wall_s']:>9.1f} {r['startup_s']:>10.1f} "
              f"{r['step_s']:>9.1f} {r['checkpoint_s']:>12.1f} {r['between_s']:>9.2f} {r['ratio']:>6.3f} "
              f"{r['record_bytes'] / r['steps']:>17.0f}", flush=True)


if __name__ == "__main__":
    main()
