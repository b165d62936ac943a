"""Hybrid sharding figures: Llama-3.1-70B full fine-tuning on 16 H100 SXM in 2 nodes of 8, FSDP over all 16 GPUs
against HSDP in shard groups of 4, 8 and 16 GPUs and HSDP-ZeRO2 (_HYBRID_SHARD_ZERO2) in groups of 8 and 16: memory
per GPU and step time over a rail-optimised InfiniBand NDR fabric and over one 100 Gb/s Ethernet port per node.

Run: .venv/bin/python benchmarks/hsdp_groups.py   (prints figures; docs/communication.md 'HSDP' says how each is
priced)
"""

from __future__ import annotations

from gpuwork import TrainPlan, estimate_memory, estimate_time

GIB = 2**30
BASE = TrainPlan(model="llama-3.1-70b", method="full", seq_len=4096, gpus=16, sharding="fsdp",
                 grad_checkpointing=True)
PLANS = {
    "fsdp (16)": BASE,
    "hsdp, groups of 4": BASE.replace(sharding="hsdp", shard_group_gpus=4),
    "hsdp, groups of 8": BASE.replace(sharding="hsdp"),
    "hsdp, groups of 16": BASE.replace(sharding="hsdp", shard_group_gpus=16),
    "hsdp-zero2, groups of 8": BASE.replace(sharding="hsdp-zero2"),
    "hsdp-zero2, groups of 16": BASE.replace(sharding="hsdp-zero2", shard_group_gpus=16),
}


def main() -> None:
    print(f"{'plan':26s} {'GiB/GPU':>8s} {'step IB (s)':>12s} {'step 100GbE (s)':>16s} {'comm GB/GPU/step':>17s}")
    for name, plan in PLANS.items():
        memory = estimate_memory(plan).device_total_bytes / GIB
        ib = estimate_time(plan, "h100_sxm", nodes=2, network="ib-ndr-400g")
        eth = estimate_time(plan, "h100_sxm", nodes=2, network="ethernet-100g")
        print(f"{name:26s} {memory:8.1f} {ib.step_time_s:12.2f} {eth.step_time_s:16.2f} "
              f"{ib.comm.bytes_per_step / 1e9:17.1f}")


if __name__ == "__main__":
    main()
