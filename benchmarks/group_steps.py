"""What the per-step gather of a torchrun group's record costs (``recorder.GroupSteps``), and that it does not grow.

Under torchrun the Trainer callback and gpuwork's own ranks hand rank 0 each finished step (one
``all_gather_object``) so that rank 0 appends the merged step to the record as the run goes. This starts two gloo
CPU processes under torchrun (loopback only); each shares ``--steps`` made-up steps with ``GroupSteps.share`` and
merges them with ``row``, and rank 0 also appends each merged step to a ``RecordFile`` in a temporary folder and
rewrites its JSON when due. It prints, per block of steps, the median and 90th percentile of the time one step's
bookkeeping took on rank 0 (gather, merge, append; microseconds), so the first and the last block can be compared.
Nothing is asserted.

Usage:
    python benchmarks/group_steps.py [--steps 5000] [--block 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rank(steps: int, block: int) -> None:
    import torch
    import torch.distributed as dist

    from gpuwork.measure.record import (
        STATUS_RUNNING,
        ParallelInfo,
        StepMeasurement,
        TrialProtocol,
        TrialRecord,
    )
    from gpuwork.measure.recorder import GroupSteps, Ranks, RecordFile
    from gpuwork.measure.trial import environment as trial_environment

    dist.init_process_group("gloo")
    ranks = Ranks()
    group = GroupSteps(ranks, "CPU")
    info = ParallelInfo(world_size=ranks.size, backend="gloo", strategy="ddp", sharding_requested="ddp",
                        wrapping="none", reshard_after_forward=None, launcher="benchmarks/group_steps.py")
    protocol = TrialProtocol(
        model="m", method="full", task="causal-lm", steps=steps, warmup=1, micro_batch=2, grad_accum=1, seq_len=32,
        tokens_per_step=64, seed=0, learning_rate=1e-4, lr_schedule="-", max_grad_norm=None,
        precision_requested="fp32", precision_used="fp32", attention_requested="eager", attention_used="eager",
        optimizer="adamw", optimizer_class="-", grad_checkpointing=False, params_total=1, params_trainable=1,
        weights="-", dataset={}, tokenizer={}, loader_workers=0, memory_cap_bytes=None, substitutions=(), plan={})
    environment = trial_environment(torch.device("cpu"))
    base = TrialRecord(protocol=protocol, environment=environment, summary=None, steps=(), checkpoint=None,
                       fits=True, error=None, peak_trial_memory_bytes=0, created_utc="-", duration_s=0.0,
                       status=STATUS_RUNNING)
    folder = Path(tempfile.mkdtemp(prefix="group-steps-"))
    writer = RecordFile(folder / "r.json") if ranks.rank == 0 else None
    times: list[float] = []
    for n in range(1, steps + 1):
        m = StepMeasurement(step=n, is_warmup=n == 1, loss=2.0 + ranks.rank, step_time_s=0.1 + 0.001 * (n % 7),
                            data_wait_s=0.001, tokens=60 + ranks.rank, tokens_per_s=600.0, grad_norm=1.0,
                            learning_rate=1e-4, trial_memory_bytes=1 << 20,
                            rss_peak_bytes=1 << 24, rss_after_step_bytes=1 << 24)
        start = time.perf_counter()
        group.share(m)
        row, figures = group.row()
        if writer is not None:
            writer.append(row, figures)
            if writer.due():
                writer.write(group.running_record(base, info))
        times.append(time.perf_counter() - start)
    if writer is not None:
        writer.close()
        print(f"{ranks.size} gloo processes, {steps} steps; one step's bookkeeping on rank 0 (gather, merge, append), "
              "microseconds:")
        print(f"{'steps':>13} | {'median us':>9} | {'p90 us':>9}")
        for first in range(0, steps, block):
            part = sorted(times[first:first + block])
            p90 = part[int(0.9 * (len(part) - 1))]
            print(f"{first + 1:>6}-{first + len(part):<6} | {statistics.median(part) * 1e6:9.0f} | {p90 * 1e6:9.0f}")
        print(f"record bytes written: {writer.bytes_written} ({writer.bytes_written / steps:.0f} a step)")
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--block", type=int, default=1000)
    args = parser.parse_args()
    if "RANK" in os.environ:
        rank(args.steps, args.block)
        return
    from gpuwork.measure.launch import free_port

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2",
               "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--max-restarts", "0",
               __file__, "--steps", str(args.steps), "--block", str(args.block)]
    sys.exit(subprocess.run(command, env=env).returncode)


if __name__ == "__main__":
    main()
