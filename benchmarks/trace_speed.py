"""Time and RAM of exact mode (fake-tensor trace) for a 1B and a 7B configuration.

Each trace runs in its own process so its peak RSS is its own. Prints figures only.
Run: .venv/bin/python benchmarks/trace_speed.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

CASES = [
    {"model": "llama-3.2-1b", "method": "full", "precision": "bf16", "seq_len": 512, "batch_size": 1},
    {"model": "llama-3.2-1b", "method": "lora", "precision": "bf16", "seq_len": 2048, "batch_size": 1},
    {"model": "llama-2-7b", "method": "full", "precision": "bf16", "seq_len": 512, "batch_size": 1},
    {"model": "llama-2-7b", "method": "lora", "precision": "bf16", "seq_len": 512, "batch_size": 1},
]

CHILD = """
import json, sys, time
from gpuwork import TrainPlan, estimate_memory
from gpuwork.measure.trace import trace_memory
plan = TrainPlan(**json.loads(sys.argv[1]))
t0 = time.perf_counter()
r = trace_memory(plan)
est = estimate_memory(plan)
analytic = est.traceable_bytes
import resource
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"s": time.perf_counter() - t0, "traced": r.peak_allocated_bytes, "analytic": analytic,
                  "rss_mib": rss}))
"""


def main() -> None:
    print(f"{'case':46s}{'trace s':>9s}{'RSS MiB':>9s}{'traced GiB':>12s}{'analytic GiB':>14s}{'diff':>8s}")
    for case in CASES:
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(case)], capture_output=True, text=True,
                             check=True)
        wall = time.perf_counter() - t0
        data = json.loads(out.stdout.strip().splitlines()[-1])
        label = f"{case['model']} {case['method']} {case['precision']} b{case['batch_size']} s{case['seq_len']}"
        print(f"{label:46s}{data['s']:9.1f}{data['rss_mib']:9.0f}{data['traced'] / 2**30:12.2f}{data['analytic'] / 2**30:14.2f}"
              f"{data['analytic'] / data['traced'] - 1:+8.1%}   (process wall {wall:.1f} s)")


if __name__ == "__main__":
    main()
