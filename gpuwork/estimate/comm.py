"""Multi-GPU communication of a training step: NCCL bus bandwidth by message size, and what hides behind compute.

Pure: the facts (node networks, fitted nccl-tests curves) arrive as ``gpuwork.facts.network.CommFacts``.
docs/communication.md derives every part and lists the sources.

Bus bandwidth. A collective over ``n`` ranks moves, per rank, ``2(n-1)/n x S`` bytes (all-reduce) or
``(n-1)/n x S`` (all-gather, reduce-scatter; S is the nccl-tests "size": the whole buffer). nccl-tests'
busbw is that volume over the elapsed time. Measured busbw rises with S towards a plateau; the curve
    busbw(S) = link x efficiency / (1 + (half x n / 8 / S) ** exponent)
fitted to published nccl-tests sweeps reproduces them (docs/communication.md); ``half`` grows with the
rank count because a ring takes n-1 latency-bound steps per phase.

Hierarchy. Inside a node the link is the GPU's NVLink/NVSwitch, PCIe or xGMI (NVLS all-reduce on Hopper and
newer NVSwitch nodes from 5 GPUs up when the fabric says so; estimate_time rings, see docs/communication.md). Across nodes NCCL rings over every GPU, its channels
leaving each node through different NICs, so a rank's busbw is bounded by the node's NICs together
(``nics_per_node x rate``) and by the intra-node ring, not by one NIC divided among the GPUs.

Overlap (per optimizer step, per GPU):
- DDP: gradients are all-reduced in 25 MiB buckets while the last micro-batch's backward runs (no_sync
  on the others); the last bucket waits for the end of backward.
- ZeRO-1/2 (DeepSpeed defaults, overlap_comm off): gradients reduce-scattered after backward and the
  updated 16-bit parameters all-gathered after the step, in buckets of 5e8 elements: all exposed.
- ZeRO-3 / FSDP (FULL_SHARD): per unit (one decoder block) an all-gather before its forward and again
  before its backward, prefetched behind the previous unit's compute; the gradients' reduce-scatter
  runs in backward on the same stream, once per optimizer step (no_sync during accumulation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwork.facts.network import BusCurve, CommFacts, NodeNetwork
from gpuwork.plan import Sharding

ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER = "all_reduce", "all_gather", "reduce_scatter"
# torch DistributedDataParallel bucket_cap_mb default (torch.nn.parallel.DistributedDataParallel docs).
DDP_BUCKET_BYTES = 25 * 1024 * 1024
# DeepSpeed ZeRO reduce_bucket_size / allgather_bucket_size defaults, in elements (DeepSpeed config docs).
ZERO_BUCKET_ELEMENTS = 5e8
# NCCL picks NVLS for all-reduce on an NVSwitch node from 5 GPUs up (8x H200 sweep, ml-engineering
# network/README.md 'SHARP'); Hopper and newer NVSwitch systems have it.
NVLS_MIN_GPUS = 5
CURVE_RANKS = 8  # nccl_curves.csv half_bytes are for 8 ranks


@dataclass(frozen=True)
class Fabric:
    """The links one estimate's collectives use."""

    intra_bytes_s: float  # the intra-node link per GPU, one direction (PCIe already halved without P2P)
    intra_efficiency: float | None  # a fixed busbw share of it (PCIe, xGMI: kernels.csv); None = the curve's
    nvls: bool  # NVLink SHARP all-reduce available (Hopper+ NVSwitch)
    gpus_per_node: int
    network: NodeNetwork | None  # None: one node


@dataclass(frozen=True)
class CommTraffic:
    """What the plan moves: bytes and how it is split."""

    gpus: int
    sharding: Sharding
    grad_accum: int
    units: int  # FSDP / ZeRO-3 units (decoder blocks)
    grad_bytes: float  # trainable gradients, whole model
    gathered_bytes: float  # every sharded weight in its compute dtype (ZeRO-3 / FSDP all-gathers them)
    params16_bytes: float  # trainable weights in 16-bit (ZeRO-1/2 all-gather after the step)


@dataclass(frozen=True)
class CommTime:
    """Communication per optimizer step, per GPU."""

    total_s: float
    exposed_s: float
    bandwidth_bytes_s: float  # busbw of the step's typical message (one bucket / one unit)
    message_bytes: float  # that message


def curve_busbw(curve: BusCurve, link_bytes_s: float, size_bytes: float, ranks: int,
                efficiency: float | None = None) -> float:
    """The fitted nccl-tests curve at ``size_bytes`` over ``ranks`` ranks (bytes/s)."""
    eff = curve.efficiency if efficiency is None else efficiency
    if size_bytes <= 0:
        return link_bytes_s * eff
    half = curve.half_bytes * ranks / CURVE_RANKS
    return link_bytes_s * eff / (1.0 + (half / size_bytes) ** curve.exponent)


def busbw(facts: CommFacts, fabric: Fabric, collective: str, size_bytes: float, ranks: int) -> float:
    """Bus bandwidth of one collective of ``size_bytes`` over ``ranks`` GPUs on ``fabric``."""
    multi = fabric.network is not None
    use_nvls = (collective == ALL_REDUCE and fabric.nvls and not multi and ranks >= NVLS_MIN_GPUS
                and fabric.intra_efficiency is None)
    intra = facts.curve_for("nvls" if use_nvls else "nvlink-ring")
    bandwidth = curve_busbw(intra, fabric.intra_bytes_s, size_bytes, ranks, fabric.intra_efficiency)
    if multi:
        # the ring's channels cross each node boundary through different NICs: the node's NICs together
        net = facts.curve_for("network-ring")
        bandwidth = min(bandwidth, curve_busbw(net, fabric.network.node_bytes_s, size_bytes, ranks))
    return bandwidth


def collective_s(facts: CommFacts, fabric: Fabric, collective: str, size_bytes: float, ranks: int) -> float:
    """Seconds for one collective (nccl-tests size convention: the whole buffer)."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    factor = 2 * (ranks - 1) / ranks if collective == ALL_REDUCE else (ranks - 1) / ranks
    return factor * size_bytes / busbw(facts, fabric, collective, size_bytes, ranks)


def _bucketed(total_bytes: float, bucket_bytes: float) -> tuple[int, float]:
    buckets = max(1, math.ceil(total_bytes / bucket_bytes))
    return buckets, total_bytes / buckets


def step_comm(facts: CommFacts, fabric: Fabric, traffic: CommTraffic, forward_s: float,
              backward_s: float) -> CommTime:
    """Communication time of one optimizer step and the part compute does not hide (module docstring)."""
    n = traffic.gpus
    if n <= 1:
        return CommTime(0.0, 0.0, busbw(facts, fabric, ALL_REDUCE, DDP_BUCKET_BYTES, 2), 0.0)
    ga = max(traffic.grad_accum, 1)
    if traffic.sharding is Sharding.DDP:
        if traffic.grad_bytes <= 0:
            return CommTime(0.0, 0.0, busbw(facts, fabric, ALL_REDUCE, DDP_BUCKET_BYTES, n), 0.0)
        count, size = _bucketed(traffic.grad_bytes, DDP_BUCKET_BYTES)
        t = collective_s(facts, fabric, ALL_REDUCE, size, n)
        window = backward_s / ga  # the last micro-batch's backward
        # bucket i is ready at i/count of the window; the stream runs them back to back
        exposed = max(t, count * t - window * (count - 1) / count)
        return CommTime(count * t, exposed, busbw(facts, fabric, ALL_REDUCE, size, n), size)
    if traffic.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        grad_elem = traffic.grad_bytes / max(traffic.params16_bytes / 2, 1.0)
        rs_count, rs_size = _bucketed(traffic.grad_bytes, ZERO_BUCKET_ELEMENTS * grad_elem)
        ag_count, ag_size = _bucketed(traffic.params16_bytes, ZERO_BUCKET_ELEMENTS * 2)
        total = rs_count * collective_s(facts, fabric, REDUCE_SCATTER, rs_size, n) \
            + ag_count * collective_s(facts, fabric, ALL_GATHER, ag_size, n)
        return CommTime(total, total, busbw(facts, fabric, REDUCE_SCATTER, rs_size, n), rs_size)
    # ZeRO-3 / FSDP: one unit per decoder block
    units = max(traffic.units, 1)
    unit_params = traffic.gathered_bytes / units
    ag = collective_s(facts, fabric, ALL_GATHER, unit_params, n)
    rs = collective_s(facts, fabric, REDUCE_SCATTER, traffic.grad_bytes / units, n)
    fwd_unit, bwd_unit = forward_s / (ga * units), backward_s / (ga * units)
    fwd_exposed = ag + (units - 1) * max(0.0, ag - fwd_unit)  # the first gather waits; the rest prefetch
    bwd_exposed = units * max(0.0, ag - bwd_unit)  # micro-batches without gradient sync
    last_bwd_exposed = units * max(0.0, ag + rs - bwd_unit) + rs  # the last reduce-scatter follows backward
    exposed = ga * fwd_exposed + (ga - 1) * bwd_exposed + last_bwd_exposed
    total = 2 * ga * units * ag + units * rs
    return CommTime(total, exposed, busbw(facts, fabric, ALL_GATHER, unit_params, n), unit_params)


def comm_bytes_per_step(traffic: CommTraffic) -> tuple[float, str]:
    """Bytes each GPU sends per optimizer step, and the strategy's name.

    Ring all-reduce sends 2(n-1)/n x S, all-gather and reduce-scatter (n-1)/n x S each. DDP all-reduces
    the gradients once per step; ZeRO-1/2 reduce-scatter them and all-gather the 16-bit parameters (the
    same volume, ZeRO paper §7); ZeRO-3/FSDP all-gather the parameters in forward and in backward of
    every micro-batch and reduce-scatter the gradients once (1.5x DDP for a full update, ZeRO §7).
    """
    n = traffic.gpus
    if n == 1:
        return 0.0, "none"
    share = (n - 1) / n
    if traffic.sharding is Sharding.DDP:
        return 2 * share * traffic.grad_bytes, "DDP ring all-reduce of gradients, once per step"
    if traffic.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        return (share * (traffic.grad_bytes + traffic.params16_bytes),
                "ZeRO reduce-scatter of gradients + all-gather of parameters")
    return (share * (2 * traffic.gathered_bytes * traffic.grad_accum + traffic.grad_bytes),
            "ZeRO-3/FSDP all-gather of parameters (forward + backward, each micro-batch) + reduce-scatter")


__all__ = ["ALL_GATHER", "ALL_REDUCE", "DDP_BUCKET_BYTES", "REDUCE_SCATTER", "ZERO_BUCKET_ELEMENTS", "CommTime",
           "CommTraffic", "Fabric", "busbw", "collective_s", "comm_bytes_per_step", "curve_busbw", "step_comm"]
