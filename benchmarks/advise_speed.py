"""Latency of the advisor (``gpuwork.estimate.advisor.advise``) on the bundled catalog: a QLoRA 7B run on one card,
an 8B full fine-tune, and Llama-3.1-70B full fine-tuning on 16 and 32 GPUs (several nodes: the hybrid shardings'
groups are tried too), also on the catalog's 8 x H100 SXM nodes joined by 100 Gb/s Ethernet instead, each the median of a few calls after one warm-up, with how many changed plans it priced.

Run: .venv/bin/python benchmarks/advise_speed.py [--repeat N]   (prints figures)
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

from gpuwork import TrainPlan
from gpuwork.estimate.advisor import advise
from gpuwork.facts.catalog import Network, load_offers
from gpuwork.facts.resolve import resolve

FULL_70B = TrainPlan(model="llama-3.1-70b", method="full", seq_len=4096, gpus=16, sharding="fsdp",
                     grad_checkpointing=True)
PLANS = {
    "qlora 7B, 1 GPU": TrainPlan(model="mistral-7b", method="qlora", seq_len=2048),
    "full 8B, 1 GPU": TrainPlan(model="llama-3.1-8b", method="full", seq_len=2048),
    "full 70B, 16 GPUs fsdp": FULL_70B,
    "full 70B, 32 GPUs fsdp": FULL_70B.replace(gpus=32),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per plan (default 5)")
    args = parser.parse_args()
    offers = load_offers()
    # the catalog's H100 nodes over its Ethernet network: where hybrid sharding matters most
    h100_eth = [dataclasses.replace(o, network=Network.ETHERNET_100G) for o in offers
                if o.gpu_id == "h100_sxm" and o.gpus_per_node == 8]
    runs = [(name, plan, offers) for name, plan in PLANS.items()]
    runs += [(f"{name}, H100 100GbE", plan, h100_eth) for name, plan in PLANS.items() if plan.gpus > 8]
    print(f"{'plan':38s} {'first (ms)':>11s} {'median (ms)':>12s} {'max (ms)':>9s} {'plans priced':>13s} "
          f"{'suggestions':>12s}")
    for name, plan, pool in runs:
        inputs = resolve(plan)
        t0 = time.perf_counter()
        advice = advise(plan, pool, inputs)  # fills the step caches
        first = time.perf_counter() - t0
        times = []
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            advice = advise(plan, pool, inputs)
            times.append(time.perf_counter() - t0)
        print(f"{name:38s} {first * 1e3:11.0f} {statistics.median(times) * 1e3:12.0f} {max(times) * 1e3:9.0f} "
              f"{advice.tried:13d} {len(advice.suggestions):12d}")


if __name__ == "__main__":
    main()
