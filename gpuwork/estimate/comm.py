"""Multi-GPU communication of a training step: NCCL bus bandwidth by message size, and what hides behind compute.

Pure: the facts (node networks, fitted nccl-tests curves) arrive as ``gpuwork.facts.network.CommFacts``.
docs/communication.md derives every part and lists the sources.

Bus bandwidth. A collective over ``n`` ranks moves, per rank, ``2(n-1)/n x S`` bytes (all-reduce) or
``(n-1)/n x S`` (all-gather, reduce-scatter; S is the nccl-tests "size": the whole buffer). nccl-tests'
busbw is that volume over the elapsed time. Measured busbw rises with S towards a plateau; the curve
    busbw(S) = link x efficiency / (1 + (half x n / 8 / S) ** exponent)
fitted to published nccl-tests sweeps reproduces them (docs/communication.md); ``half`` grows with the
rank count because a ring takes n-1 latency-bound steps per phase, and it is a latency in seconds: on a link of
another rate than the measured one it scales with the plateau (``half_bytes``; NCCL's model charges a link type's
microseconds whatever its bandwidth).

Hierarchy. Inside a node the link is the GPU's NVLink/NVSwitch, PCIe or xGMI; PCIe takes the measured rows with or
without peer-to-peer by rank count, and a bridge over more cards than it joins rings over PCIe (NVLS all-reduce on
Hopper and newer NVSwitch nodes from 5 GPUs up when the fabric says so; estimate_time rings, see docs/communication.md). Across nodes NCCL rings over every GPU, its channels
leaving each node through different NICs, so a rank's busbw is bounded by the node's NICs together
(``nics_per_node x rate``) and by the intra-node ring, not by one NIC divided among the GPUs. An all-reduce
across nodes may run NCCL's tree instead, whose latency grows with log2 of the nodes (``network_busbw``).

Overlap (per optimizer step, per GPU):
- DDP: gradients are all-reduced in 25 MiB buckets while the last micro-batch's backward runs (no_sync
  on the others); the last bucket waits for the end of backward. A trained input embedding (and a head tied to
  it) gets its gradient from the last op of backward, so its all-reduce follows backward (``last_grad_bytes``;
  docs/communication.md 'DDP').
- ZeRO-1/2 (DeepSpeed defaults, overlap_comm off): gradients reduce-scattered after backward and the
  updated 16-bit parameters all-gathered after the step, in buckets of 5e8 elements: all exposed.
- ZeRO-1 "sliced" (nanotron, TrainPlan.zero_sync): the whole fp32 gradient all-reduced after backward, the 16-bit
  parameters all-gathered after the step, then copied back one eager op per tensor per rank (``sliced_sync``).
- A plan's ``comm_overlap`` switch replaces both rules (``switched_sync``): "off" one collective after backward
  (Megatron-LM's default), "on" Megatron-LM's buckets behind backward and its parameter gathers behind forward.
- ZeRO-3 / FSDP (FULL_SHARD): per unit (one decoder block) an all-gather before its forward and again
  before its backward, prefetched behind the previous unit's compute; the gradients' reduce-scatter
  runs in backward on the same stream, once per optimizer step (no_sync during accumulation). Torch FSDP's root
  unit (embeddings, head) stays gathered from forward to backward: its gather waits at each micro-batch's start,
  its reduce-scatter after backward (``CommTraffic.root_*``; docs/communication.md 'The root unit').
- HSDP (hybrid shard): the same inside each shard group of ``shard_ranks`` GPUs (NVLink when the group fits in a
  node, else the network as FSDP across nodes), and after each unit's reduce-scatter an all-reduce of its gradient
  shard (1/group of the unit's gradients) across the replicas, on its own stream (torch fully_shard
  foreach_reduce): it hides behind the next units' backward; the last one follows it. A node's GPUs that sit in
  different rings share its NICs. HSDP-ZeRO2 (_HYBRID_SHARD_ZERO2) keeps the gathered parameters from forward to
  the end of backward: no gather in backward. docs/communication.md 'HSDP'.
- Blocking launches (CUDA_LAUNCH_BLOCKING=1, TrainPlan.launch_blocking): a collective's launch returns only when
  it has run, and nothing is queued beside it, so every rule above is all exposed (docs/kernels.md 'Blocking
  launches').

Contention: hidden communication is not free. Each NCCL channel is one CTA alone on its SM for the whole collective,
so while a collective hides behind compute that compute runs on the other SMs; the step gains the hidden seconds x
channels / SMs (``nccl_channels``, ``contention_share``; docs/communication.md 'Contention').
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from gpuwork.errors import CatalogError
from gpuwork.facts.catalog import GpuClass, GpuSpec, Link, Network
from gpuwork.facts.hashed import IdentityMemo
from gpuwork.facts.network import BusCurve, CommFacts, NodeNetwork
from gpuwork.facts.rates import Rates
from gpuwork.message import Msg, msg
from gpuwork.plan import HSDP_GROUP_GPUS, CommOverlap, Sharding, TrainPlan, shard_ranks

ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER = "all_reduce", "all_gather", "reduce_scatter"
# torch DistributedDataParallel bucket_cap_mb default (torch.nn.parallel.DistributedDataParallel docs).
DDP_BUCKET_BYTES = 25 * 1024 * 1024
# DeepSpeed ZeRO reduce_bucket_size / allgather_bucket_size defaults, in elements (DeepSpeed config docs).
ZERO_BUCKET_ELEMENTS = 5e8
# Megatron-LM's gradient bucket with --overlap-grad-reduce and no --ddp-bucket-size: max(40 M, 1 M x DP ranks)
# elements (megatron/core/distributed/distributed_data_parallel.py @32ad5c8, core_r0.14.0)
MEGATRON_BUCKET_ELEMENTS, MEGATRON_BUCKET_PER_RANK = 40e6, 1e6
# NCCL picks NVLS for all-reduce on an NVSwitch node from 5 GPUs up (8x H200 sweep, ml-engineering
# network/README.md 'SHARP'); Hopper and newer NVSwitch systems have it.
NVLS_MIN_GPUS = 5
CURVE_RANKS = 8  # nccl_curves.csv half_bytes are for 8 ranks
# NCCL's tuning model (src/graph/tuning.cc, NVIDIA/nccl @5067397), Simple protocol: tree all-reduce latency is
# base + 2((ranks per node - 1) x NVLink hop + floor(log2 nodes) x network hop) microseconds, and its bus
# bandwidth 0.92 of the ring's; NCCL runs whichever its model times faster (docs/communication.md 'Tree').
TREE_BASE_US, TREE_INTRA_US, TREE_NET_US = 8.4, 4.0, 14.0
TREE_BUSBW_SHARE = 0.92
# NCCL's socket transport (no RDMA: every byte through host memory and TCP) with several GPUs per node reaches a
# share of the fitted network curve: the geometric mean of the two published 4-node, 8-GPU-per-node all-reduce
# figures, 0.76 (GCP 32 GbE, nccl_tests.csv nccl209-gcp-32gbe-4x8) and 0.52 (100 GbE, NVIDIA/nccl #450's stated
# 4-6 GB/s over 8-128 MiB); docs/communication.md 'Slower networks'. One GPU per node reaches the curve (0.96-0.97
# of the line rate on 32 GbE).
SOCKET_SHARE = 0.63
# GPUDirect-TCPXO's latency in seconds against the fitted (EFA) network curve: the minimax fit over the published
# 2 x 8 H100 A3 Mega sweep, 1 MiB-8 GiB (nccl_tests.csv mega-a3-2n; docs/communication.md 'Slower networks').
TCPX_LATENCY_SCALE = 2.0
# GPUDirect-TCPX (A3 High) from the published 2 x 8 H100 all-gather sweep, 8 MiB-8 GiB (nccl_tests.csv
# high-a3-2n): its plateau, 49-50 GB/s on 4 x 200 Gb/s, is 0.54 of the fitted curve's, and its latency the
# minimax fit over the sweep at that plateau (docs/communication.md 'Slower networks').
TCPX_HIGH_SHARE, TCPX_HIGH_LATENCY_SCALE = 0.54, 4.0
# Google's GPUDirect-TCPX set-up forces NCCL's ring ("TCPX only supports Ring algorithm", NCCL_ALGO=Ring: apple/axlearn
# axlearn/cloud/gcp/job.py @d47d5ce); TCPXO's A3 Mega sweep passes the line on two nodes, so it runs the tree.
TCPX_RING_ONLY = ("tcpx",)


@dataclass(frozen=True)
class Fabric:
    """The links one estimate's collectives use."""

    intra_bytes_s: float  # the intra-node link per GPU, one direction (its spec)
    intra_efficiency: float | None  # a fixed busbw share of it (xGMI: kernels.csv); None = the curve's
    nvls: bool  # NVLink SHARP all-reduce available (Hopper+ NVSwitch)
    gpus_per_node: int
    network: NodeNetwork | None  # None: one node
    pcie_p2p: bool | None = None  # PCIe on the measured PCIe curves: True peer-to-peer, False through host memory


@dataclass(frozen=True)
class CommTraffic:
    """What the plan moves: bytes and how it is split."""

    gpus: int
    sharding: Sharding
    grad_accum: int
    units: int  # FSDP / ZeRO-3 units (decoder blocks); 0: torch FSDP's root unit holds the whole model
    grad_bytes: float  # trainable gradients, whole model
    gathered_bytes: float  # every sharded weight in its compute dtype (ZeRO-3 / FSDP all-gathers them)
    params16_bytes: float  # trainable weights in 16-bit (ZeRO-1/2 all-gather after the step)
    shard_group: int = HSDP_GROUP_GPUS  # the hybrid shardings' shard group (TrainPlan.shard_group_gpus)
    # torch FSDP's root unit (embeddings, head, final norm; part of the two figures above): kept gathered from
    # forward to backward, so gathered once a micro-batch and reduce-scattered after every block. 0: spread evenly
    root_gathered_bytes: float = 0.0
    root_grad_bytes: float = 0.0
    # DDP: gradients ready only when backward ends (a trained input embedding's, part of grad_bytes); 0: none
    last_grad_bytes: float = 0.0
    # DDP / ZeRO-1/2: when gradients are reduced and parameters gathered (TrainPlan.comm_overlap; switched_sync)
    overlap: CommOverlap = CommOverlap.DEFAULT
    # ZeRO-1 sliced (TrainPlan.zero_sync 'sliced'): the trained parameter tensors, each cut into one slice per
    # rank; 0: the bucketed DeepSpeed sync (sliced_sync)
    sliced_tensors: int = 0
    # CUDA_LAUNCH_BLOCKING=1 (TrainPlan.launch_blocking): each collective's launch returns when it has run, so no
    # compute runs beside it: all of it exposed
    blocking: bool = False


@dataclass(frozen=True)
class CommTime:
    """Communication per optimizer step, per GPU."""

    total_s: float
    exposed_s: float
    bandwidth_bytes_s: float  # busbw of the step's typical message (one bucket / one unit)
    message_bytes: float  # that message


def half_bytes(curve: BusCurve, plateau_bytes_s: float, ranks: int) -> float:
    """The message at which ``curve`` reaches half its plateau over ``ranks`` ranks on a link whose plateau is
    ``plateau_bytes_s``. The latency is carried in seconds (``BusCurve.half_s``): NCCL's model charges a link
    type's microseconds on any link of it, so a link k times faster reaches half its plateau at k times the bytes
    (docs/communication.md 'Latency in seconds'); at the measured link this is the fitted half."""
    half_s = curve.half_s
    base = curve.half_bytes if half_s is None else half_s * plateau_bytes_s
    return base * ranks / CURVE_RANKS


def curve_busbw(curve: BusCurve, link_bytes_s: float, size_bytes: float, ranks: int,
                efficiency: float | None = None) -> float:
    """The fitted nccl-tests curve at ``size_bytes`` over ``ranks`` ranks on a link of ``link_bytes_s`` (bytes/s)."""
    plateau = link_bytes_s * (curve.efficiency if efficiency is None else efficiency)
    if size_bytes <= 0:
        return plateau
    half = half_bytes(curve, plateau, ranks)
    return float(plateau / (1.0 + (half / size_bytes) ** curve.exponent))


def tree_latency_us(ranks: int, nodes: int) -> float:
    """NCCL's modelled latency of a tree all-reduce over ``ranks`` GPUs on ``nodes`` nodes (microseconds)."""
    per_node = max(ranks // max(nodes, 1), 1)
    return TREE_BASE_US + 2 * ((per_node - 1) * TREE_INTRA_US + math.floor(math.log2(max(nodes, 1))) * TREE_NET_US)


def network_busbw(facts: CommFacts, link_bytes_s: float, collective: str, size_bytes: float, ranks: int,
                  nodes: int, latency_scale: float = 1.0, ring_only: bool = False) -> float:
    """Bus bandwidth across nodes on the fitted network curve. A ring's latency term grows with its ranks; an
    all-reduce over several nodes may instead run NCCL's tree, whose latency grows from the curve's measured point
    as NCCL's model of it does (with the ranks per node and log2 of the nodes) at 0.92 of the ring's plateau. On two
    nodes the tree crosses the network with the buffer once each way where the ring moves 2(n-1)/n of it, so its
    busbw may pass the network's by that factor (the intra-node link bounds it in ``busbw``). ``latency_scale``
    stretches the curve's latency in seconds (a transport slower to start than the one measured); ``ring_only``: a
    transport that runs no tree (GPUDirect-TCPX, TCPX_RING_ONLY)."""
    curve = facts.curve_for("network-ring")
    if latency_scale != 1.0:
        curve = replace(curve, half_bytes=curve.half_bytes * latency_scale)
    ring = curve_busbw(curve, link_bytes_s, size_bytes, ranks)
    if collective != ALL_REDUCE or nodes <= 1 or size_bytes <= 0 or ring_only:
        return ring
    ref_ranks, ref_nodes = facts.measured_at(curve.curve)
    plateau = link_bytes_s * curve.efficiency * (2 * (ranks - 1) / ranks if nodes == 2 else 1.0)
    half = half_bytes(curve, plateau, ref_ranks) * tree_latency_us(ranks, nodes) / tree_latency_us(ref_ranks, ref_nodes)
    tree = plateau * TREE_BUSBW_SHARE / (1.0 + (half / size_bytes) ** curve.exponent)
    return max(ring, float(tree))


def network_terms(fabric: Fabric) -> tuple[float, float, bool]:
    """What a node's NICs give the network curve: (bytes/s one direction, latency scale, ring only). Over TCP
    sockets with several GPUs per node SOCKET_SHARE of the line rate; GPUDirect-TCPXO starts TCPX_LATENCY_SCALE times
    slower than the measured curve; GPUDirect-TCPX reaches TCPX_HIGH_SHARE of it, starts TCPX_HIGH_LATENCY_SCALE
    times slower and runs no tree (TCPX_RING_ONLY)."""
    network = fabric.network
    if network is None:
        return 0.0, 1.0, False
    ring_only = network.fabric in TCPX_RING_ONLY
    if network.fabric == "tcpx":
        return network.node_bytes_s * TCPX_HIGH_SHARE, TCPX_HIGH_LATENCY_SCALE, ring_only
    socket = network.fabric == "ethernet" and fabric.gpus_per_node > 1
    scale = TCPX_LATENCY_SCALE if network.fabric == "tcpxo" else 1.0
    return network.node_bytes_s * (SOCKET_SHARE if socket else 1.0), scale, ring_only


def busbw(facts: CommFacts, fabric: Fabric, collective: str, size_bytes: float, ranks: int) -> float:
    """Bus bandwidth of one collective of ``size_bytes`` over ``ranks`` GPUs on ``fabric``."""
    network = fabric.network
    multi = network is not None
    use_nvls = (collective == ALL_REDUCE and fabric.nvls and not multi and ranks >= NVLS_MIN_GPUS
                and fabric.intra_efficiency is None)
    if fabric.pcie_p2p is not None:
        intra = facts.pcie_curve(fabric.pcie_p2p, ranks)
        bandwidth = curve_busbw(intra, fabric.intra_bytes_s, size_bytes, ranks)
    else:
        intra = facts.curve_for("nvls" if use_nvls else "nvlink-ring")
        bandwidth = curve_busbw(intra, fabric.intra_bytes_s, size_bytes, ranks, fabric.intra_efficiency)
    if network is not None:
        # the ring's channels cross each node boundary through different NICs: the node's NICs together
        nodes = math.ceil(ranks / max(fabric.gpus_per_node, 1))
        rate, latency_scale, ring_only = network_terms(fabric)
        bandwidth = min(bandwidth, network_busbw(facts, rate, collective, size_bytes, ranks, nodes, latency_scale,
                                                 ring_only))
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
    """Communication time of one optimizer step and the part compute does not hide (module docstring); under
    blocking launches (``CommTraffic.blocking``) none of it hides."""
    t = _step_comm(facts, fabric, traffic, forward_s, backward_s)
    return replace(t, exposed_s=t.total_s) if traffic.blocking else t


def _step_comm(facts: CommFacts, fabric: Fabric, traffic: CommTraffic, forward_s: float,
               backward_s: float) -> CommTime:
    n = traffic.gpus
    if n <= 1:
        return CommTime(0.0, 0.0, busbw(facts, fabric, ALL_REDUCE, DDP_BUCKET_BYTES, 2), 0.0)
    ga = max(traffic.grad_accum, 1)
    if traffic.sliced_tensors:
        return sliced_sync(facts, fabric, traffic)
    if traffic.overlap is not CommOverlap.DEFAULT and not traffic.sharding.per_unit:
        return switched_sync(facts, fabric, traffic, forward_s / ga, backward_s / ga)
    if traffic.sharding is Sharding.DDP:
        if traffic.grad_bytes <= 0:
            return CommTime(0.0, 0.0, busbw(facts, fabric, ALL_REDUCE, DDP_BUCKET_BYTES, n), 0.0)
        total, exposed, size = _behind_backward(facts, fabric, ALL_REDUCE, traffic, DDP_BUCKET_BYTES,
                                                backward_s / ga)  # the last micro-batch's backward
        return CommTime(total, exposed, busbw(facts, fabric, ALL_REDUCE, size, n), size)
    if traffic.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        grad_elem = traffic.grad_bytes / max(traffic.params16_bytes / 2, 1.0)
        rs_count, rs_size = _bucketed(traffic.grad_bytes, ZERO_BUCKET_ELEMENTS * grad_elem)
        ag_count, ag_size = _bucketed(traffic.params16_bytes, ZERO_BUCKET_ELEMENTS * 2)
        total = rs_count * collective_s(facts, fabric, REDUCE_SCATTER, rs_size, n) \
            + ag_count * collective_s(facts, fabric, ALL_GATHER, ag_size, n)
        return CommTime(total, total, busbw(facts, fabric, REDUCE_SCATTER, rs_size, n), rs_size)
    # ZeRO-3 / FSDP / HSDP: one unit per decoder block, gathered and reduce-scattered inside the shard group
    units = max(traffic.units, 1)
    root_params, root_grads = traffic.root_gathered_bytes, traffic.root_grad_bytes
    unit_params = (traffic.gathered_bytes - root_params) / units
    unit_grads = (traffic.grad_bytes - root_grads) / units
    group, replicas = _groups(traffic)
    inside = fabric if group > fabric.gpus_per_node else replace(fabric, network=None)
    ag = collective_s(facts, inside, ALL_GATHER, unit_params, group)
    ag_bwd = ag if traffic.sharding.shards_params else 0.0  # HSDP-ZeRO2 keeps the forward's gather
    rs = collective_s(facts, inside, REDUCE_SCATTER, unit_grads, group)
    ar = replica_all_reduce_s(facts, fabric, unit_grads / group, replicas, group)
    # the root: its gather opens each micro-batch, its reduction (embedding gradients come last) closes backward
    root_ag = collective_s(facts, inside, ALL_GATHER, root_params, group)
    root_rs = collective_s(facts, inside, REDUCE_SCATTER, root_grads, group) \
        + replica_all_reduce_s(facts, fabric, root_grads / group, replicas, group)
    fwd_unit, bwd_unit = forward_s / (ga * units), backward_s / (ga * units)
    fwd_exposed = root_ag + ag + (units - 1) * max(0.0, ag - fwd_unit)  # the first gather waits; the rest prefetch
    bwd_exposed = units * max(0.0, ag_bwd - bwd_unit)  # micro-batches without gradient sync
    last_bwd_exposed = units * max(0.0, ag_bwd + rs - bwd_unit) + rs  # the last reduce-scatter follows backward
    # HSDP: the all-reduces queue on their own stream as units finish; the last one follows backward
    last_bwd_exposed += ar + (units - 1) * max(0.0, ar - max(bwd_unit, ag_bwd + rs)) + root_rs
    exposed = ga * fwd_exposed + (ga - 1) * bwd_exposed + last_bwd_exposed
    total = ga * (units * (ag + ag_bwd) + root_ag) + units * (rs + ar) + root_rs
    size = unit_params if traffic.units else root_params  # one unit (fsdp_wrap 'whole'): the root's gather
    return CommTime(total, exposed, busbw(facts, inside, ALL_GATHER, size, group), size)


def _behind_backward(facts: CommFacts, fabric: Fabric, collective: str, traffic: CommTraffic, bucket_bytes: float,
                     window: float) -> tuple[float, float, float]:
    """(seconds, exposed seconds, bucket bytes) of the gradients reduced in buckets of ``bucket_bytes`` as the last
    micro-batch's backward (``window`` seconds) makes them ready. A last gradient (``last_grad_bytes``) above the
    bucket fills its own bucket; a smaller one shares the last bucket, exposed anyway."""
    n = traffic.gpus
    last = traffic.last_grad_bytes if traffic.last_grad_bytes > bucket_bytes else 0.0
    rest = traffic.grad_bytes - last
    count, size = _bucketed(rest, bucket_bytes)
    t = collective_s(facts, fabric, collective, size, n) if rest > 0 else 0.0
    t_last = collective_s(facts, fabric, collective, last, n)
    # bucket i is ready at i/count of the window; the stream runs them back to back, then the last gradients
    exposed = max(t, count * t - window * (count - 1) / count) + t_last
    return count * t + t_last, exposed, size


def megatron_bucket_elements(gpus: int) -> float:
    """Elements in one of Megatron-LM's gradient buckets when --overlap-grad-reduce is on and --ddp-bucket-size
    unset: max(40 M, 1 M x data-parallel ranks) (distributed_data_parallel.py; docs/communication.md)."""
    return max(MEGATRON_BUCKET_ELEMENTS, MEGATRON_BUCKET_PER_RANK * gpus)


def switched_sync(facts: CommFacts, fabric: Fabric, traffic: CommTraffic, forward_s: float,
                  backward_s: float) -> CommTime:
    """DDP / ZeRO-1/2 under an overlap switch (``CommTraffic.overlap``; ``forward_s`` / ``backward_s``: one
    micro-batch's). "off": one all-reduce (DDP) or one reduce-scatter and one all-gather (ZeRO) after backward,
    all exposed (Megatron-LM without --overlap-grad-reduce: no buckets, synchronous). "on": Megatron-LM's buckets
    reduced behind the last micro-batch's backward, and ZeRO's 16-bit parameters all-gathered bucket by bucket
    behind the first micro-batch's forward, the first bucket waited for and the next prefetched
    (--overlap-param-gather). docs/communication.md 'Overlap switches'."""
    n = traffic.gpus
    zero = traffic.sharding is not Sharding.DDP
    reduce = REDUCE_SCATTER if zero else ALL_REDUCE
    if n <= 1 or traffic.grad_bytes <= 0:
        return CommTime(0.0, 0.0, busbw(facts, fabric, reduce, DDP_BUCKET_BYTES, max(n, 2)), 0.0)
    params = traffic.params16_bytes if zero else 0.0
    if traffic.overlap is CommOverlap.OFF:
        total = collective_s(facts, fabric, reduce, traffic.grad_bytes, n) \
            + collective_s(facts, fabric, ALL_GATHER, params, n)
        return CommTime(total, total, busbw(facts, fabric, reduce, traffic.grad_bytes, n), traffic.grad_bytes)
    elements = megatron_bucket_elements(n)
    grad_elem = traffic.grad_bytes / max(traffic.params16_bytes / 2, 1.0)  # bytes per gradient element
    total, exposed, size = _behind_backward(facts, fabric, reduce, traffic, elements * grad_elem, backward_s)
    if params > 0:
        count, ag_size = _bucketed(params, elements * 2)
        t = collective_s(facts, fabric, ALL_GATHER, ag_size, n)
        total += count * t
        exposed += t + (count - 1) * max(0.0, t - forward_s / count)
    return CommTime(total, exposed, busbw(facts, fabric, reduce, size, n), size)


def sliced_sync(facts: CommFacts, fabric: Fabric, traffic: CommTraffic) -> CommTime:
    """nanotron's ZeRO-1 (TrainPlan.zero_sync 'sliced'; docs/communication.md 'Sliced ZeRO-1'): with fp32 gradient
    accumulation the model is not wrapped in DDP, so after the last backward the whole fp32 gradient buffer is
    all-reduced in one call (not reduce-scattered: trainer.py 'too memory hungry, instead we run all_reduce'), and
    after the update the 16-bit parameters are all-gathered in one call; both block the step. The copies back
    into every tensor's slice are host work (``sliced_copies``), priced by plan_comm."""
    n = traffic.gpus
    total = collective_s(facts, fabric, ALL_REDUCE, traffic.grad_bytes, n) \
        + collective_s(facts, fabric, ALL_GATHER, traffic.params16_bytes, n)
    return CommTime(total, total, busbw(facts, fabric, ALL_REDUCE, traffic.grad_bytes, n), traffic.grad_bytes)


def sliced_copies(traffic: CommTraffic) -> int:
    """Eager ops on the host after nanotron's parameter all-gather (distributed.py all_gather_coalesced): per rank
    one flatten of its slices into the gather buffer, one copy out of NCCL's flat output, then one copy_ back into
    each tensor's slice (a Python loop); 0 for the other syncs or one GPU."""
    if not traffic.sliced_tensors or traffic.gpus <= 1:
        return 0
    return traffic.gpus * (traffic.sliced_tensors + 2)


def _groups(traffic: CommTraffic) -> tuple[int, int]:
    """(GPUs of one shard group, replica groups): HSDP shards inside a group and replicates across groups."""
    group = shard_ranks(traffic.sharding, traffic.gpus, traffic.shard_group) if traffic.sharding.per_unit \
        else traffic.gpus
    return group, math.ceil(traffic.gpus / group)


def replica_all_reduce_s(facts: CommFacts, fabric: Fabric, size_bytes: float, replicas: int,
                         group: int | None = None) -> float:
    """Seconds of HSDP's all-reduce of one gradient shard across ``replicas`` groups of ``group`` GPUs (default:
    one node's). There is one ring per shard index; a node holds GPUs of min(group, GPUs per node) rings, so over
    the network a ring has the node's NICs divided by that many."""
    if replicas <= 1 or size_bytes <= 0:
        return 0.0
    network = fabric.network
    if network is None:
        return collective_s(facts, fabric, ALL_REDUCE, size_bytes, replicas)
    rings = min(group or fabric.gpus_per_node, fabric.gpus_per_node)
    rate, latency_scale, ring_only = network_terms(fabric)
    nodes = math.ceil(replicas / max(fabric.gpus_per_node // max(rings, 1), 1))  # nodes one ring spans
    bandwidth = network_busbw(facts, rate / max(rings, 1), ALL_REDUCE, size_bytes, replicas, nodes, latency_scale,
                              ring_only)
    if rings < fabric.gpus_per_node:  # several GPUs of a ring in one node: some of its hops are intra-node
        bandwidth = min(bandwidth, busbw(facts, replace(fabric, network=None), ALL_REDUCE, size_bytes, replicas))
    return 2 * (replicas - 1) / replicas * size_bytes / bandwidth


def replica_bytes_per_step(traffic: CommTraffic) -> float:
    """Bytes each GPU sends per optimizer step to the other replica groups (HSDP: the ring all-reduce of its
    gradient shard, 2(r-1)/r x gradients / group; 0 where every GPU is in one group)."""
    group, replicas = _groups(traffic)
    return 2 * (replicas - 1) / replicas * traffic.grad_bytes / group


def comm_bytes_per_step(traffic: CommTraffic) -> tuple[float, str]:
    """Bytes each GPU sends per optimizer step, and the strategy's name.

    Ring all-reduce sends 2(n-1)/n x S, all-gather and reduce-scatter (n-1)/n x S each. DDP all-reduces
    the gradients once per step; ZeRO-1/2 reduce-scatter them and all-gather the 16-bit parameters (the
    same volume, ZeRO paper §7); ZeRO-3/FSDP all-gather the parameters in forward and in backward of
    every micro-batch and reduce-scatter the gradients once (1.5x DDP for a full update, ZeRO §7); HSDP does
    that inside its shard group and all-reduces the gradient shard across the groups.
    """
    n = traffic.gpus
    if n == 1:
        return 0.0, "none"
    share = (n - 1) / n
    if traffic.sharding is Sharding.DDP:
        return 2 * share * traffic.grad_bytes, "DDP ring all-reduce of gradients, once per step"
    if traffic.sliced_tensors:
        return (share * (2 * traffic.grad_bytes + traffic.params16_bytes),
                "ZeRO-1 all-reduce of fp32 gradients + all-gather of sliced parameters (nanotron)")
    if traffic.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        return (share * (traffic.grad_bytes + traffic.params16_bytes),
                "ZeRO reduce-scatter of gradients + all-gather of parameters")
    group, replicas = _groups(traffic)
    gathers = 2 if traffic.sharding.shards_params else 1  # HSDP-ZeRO2: in forward only
    root = traffic.root_gathered_bytes  # gathered once a micro-batch
    gathered = root + gathers * (traffic.gathered_bytes - root)
    inside = (group - 1) / group * (gathered * traffic.grad_accum + traffic.grad_bytes)
    when = "forward + backward" if gathers == 2 else "forward only"
    if replicas > 1:
        name = "HSDP" if gathers == 2 else "HSDP-ZeRO2"
        return (inside + replica_bytes_per_step(traffic),
                f"{name} all-gather of parameters ({when}, each micro-batch) + reduce-scatter inside "
                "each shard group, all-reduce of the gradient shard across groups")
    name = "ZeRO-3/FSDP" if gathers == 2 else "FSDP SHARD_GRAD_OP"
    return inside, f"{name} all-gather of parameters ({when}, each micro-batch) + reduce-scatter"


# -- one plan's communication per step (read by estimate.timing) --------------------------------------

# Verdict threshold: above this share of a step spent communicating over PCIe, NVLink is "needed".
LINK_VERDICT_SHARE = 0.10
# Links whose busbw follows the fitted NVLink curves.
_NVLINKS = (Link.NVLINK_BRIDGE, Link.NVLINK_SWITCH, Link.NVLINK_SWITCH_RACK)


@dataclass(frozen=True)
class CommEstimate:
    """Gradient / parameter traffic per optimizer step and what it costs (per GPU)."""

    strategy: str  # "none" | "ddp all-reduce" | "zero reduce-scatter + all-gather" | "zero3/fsdp ..."
    gpus: int
    nodes: int
    bytes_per_step: float  # bytes each GPU sends per optimizer step
    link: str  # the intra-node link the ring runs over ("pcie", "nvlink_switch", ...)
    network: str | None  # the networks.csv id priced between nodes; None: one node
    bandwidth_bytes_s: float  # effective bottleneck bandwidth per GPU per direction
    comm_s: float  # time to move bytes_per_step
    overlap_window_s: float  # compute time it may hide behind
    exposed_s: float  # what is left on the step's critical path
    scaling_efficiency: float  # compute / (compute + exposed)
    pcie_share: float | None  # exposed share of a step if the same GPUs talked over PCIe
    link_share: float | None  # exposed share of a step over the GPU's best link (NVLink/xGMI)
    verdict: tuple[Msg, ...]  # its parts, shown joined with "; "
    # compute lost to NCCL's channels while hidden communication runs beside it: hidden seconds x channels / SMs
    contention_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {**out, "verdict": [m.as_dict() for m in self.verdict]}


@dataclass(frozen=True)
class CommSetting:
    """Where a plan's GPUs talk: the card, its rates, the NCCL facts, the intra-node link and the network."""

    plan: TrainPlan
    gpu: GpuSpec
    rates: Rates
    facts: CommFacts
    intra: Link
    network: Network | str | None  # between nodes; None: one node
    nodes: int
    sm_count: int = 0  # the GPU's SMs (DeviceRates.sm_count); 0: contention not priced


def coerce_link(value: Link | str | None, gpu: GpuSpec) -> Link:
    """The intra-node link asked for (None: the GPU's best), refused when the GPU cannot have it."""
    if value is None:
        return gpu.link
    try:
        link = Link(value)
    except ValueError:
        raise CatalogError(msg("error.time.link_choice", value=repr(value),
                               choices=", ".join(x.value for x in Link))) from None
    if link is not Link.PCIE and link is not gpu.link:
        raise CatalogError(msg("error.time.link_unavailable", link=link.value, gpu_id=gpu.gpu_id,
                               has=gpu.link.value))
    return link


def bridged_gpus(gpu: GpuSpec) -> int:
    """The cards one NVLink bridge of ``gpu`` joins (gpus.csv ``nvlink_bridge_gpus``: 2, or 4 on H200 NVL); 0 when
    the card has no bridge."""
    if gpu.link is not Link.NVLINK_BRIDGE or gpu.nvlink_bridge_gpus is None:
        return 0
    return gpu.nvlink_bridge_gpus


def pcie_peer_to_peer(gpu: GpuSpec) -> bool:
    """Whether the card's stock driver lets NCCL copy GPU to GPU over PCIe (gpus.csv ``class``): GeForce drivers
    leave peer-to-peer off, so NCCL passes every hop through host memory (its SHM transport; docs/sources.md
    's-p2p-geforce'); workstation and data-centre drivers allow it (docs/communication.md 'PCIe')."""
    return gpu.gpu_class is not GpuClass.CONSUMER


def node_link(gpu: GpuSpec, link: Link, gpus_per_node: int) -> Link:
    """The link a node's ring runs over: a bridge joins only ``bridged_gpus`` cards, so a ring over more GPUs
    crosses PCIe, whose hop sets the ring's rate (docs/communication.md 'PCIe')."""
    if link is Link.NVLINK_BRIDGE and gpus_per_node > max(bridged_gpus(gpu), 1):
        return Link.PCIE
    return link


def link_bytes_s(gpu: GpuSpec, link: Link) -> float:
    """The link's spec bandwidth per GPU and direction."""
    return gpu.pcie_bw_bytes_s if link is Link.PCIE else gpu.link_bw_bytes_s


def _busbw_fraction(rates: Rates, link: Link) -> float:
    key = "nccl_busbw_fraction_xgmi" if link is Link.XGMI else "nccl_busbw_fraction_nvlink"
    return rates.kernel(key)


def nccl_channels(rates: Rates, gpu: GpuSpec, link: Link) -> int:
    """SMs NCCL's channels hold on one GPU while a collective runs over ``link`` (one CTA per channel, alone on
    its SM): the maintainer's 2 on PCIe and 16 on an A100 NVSwitch node, 24 measured on H100; 0 where no source
    gives a count (NVLink bridges, xGMI, other generations). Across nodes the node's count (the ring's channels
    come from the node's graph). docs/communication.md 'Contention'."""
    if link is Link.PCIE:
        return int(rates.kernel("nccl_channels_pcie"))
    if link in (Link.NVLINK_SWITCH, Link.NVLINK_SWITCH_RACK):
        major = gpu.compute_capability.split(".")[0]
        key = {"8": "nccl_channels_nvswitch_sm80", "9": "nccl_channels_nvswitch_sm90"}.get(major)
        return int(rates.kernel(key)) if key else 0
    return 0


def contention_share(channels: int, sm_count: int) -> float:
    """Share of compute lost while a collective runs beside it: its channels' SMs over the GPU's."""
    return min(channels / sm_count, 1.0) if sm_count > 0 and channels > 0 else 0.0


def _verdict(setting: CommSetting, pcie_share: float | None, link_share: float | None, own_intra_share: float,
             network_note: Msg | None) -> tuple[Msg, ...]:
    plan, gpu = setting.plan, setting.gpu
    if plan.gpus == 1:
        return (msg("comm.single_gpu"),)
    parts = []
    per_node = math.ceil(plan.gpus / setting.nodes)
    if node_link(gpu, gpu.link, per_node) is Link.PCIE:
        if gpu.link is Link.PCIE:
            parts.append(msg("comm.no_nvlink", gpu=gpu.display_name, share=own_intra_share))
        elif not bridged_gpus(gpu):  # a user's GPU table without the bridge's card count
            parts.append(msg("comm.no_bridge_count", gpu=gpu.display_name, share=own_intra_share))
        else:
            parts.append(msg("comm.bridge_pairs_only", gpu=gpu.display_name, gpus=per_node,
                             bridged=bridged_gpus(gpu), share=own_intra_share))
        if own_intra_share > LINK_VERDICT_SHARE:
            parts.append(msg("comm.consider_less_traffic"))
        if gpu.gpu_class is GpuClass.CONSUMER:
            parts.append(msg("comm.geforce_no_p2p"))
    elif pcie_share is not None and pcie_share > LINK_VERDICT_SHARE:
        parts.append(msg("comm.nvlink_needed", pcie_share=pcie_share, link_share=link_share, link=gpu.link))
        if setting.intra is Link.PCIE:
            parts.append(msg("comm.setup_uses_pcie"))
    else:
        shown = pcie_share if pcie_share is not None else own_intra_share
        parts.append(msg("comm.pcie_enough", share=shown))
    if network_note is not None:
        parts.append(network_note)
    return tuple(parts)


def plan_comm(setting: CommSetting, traffic: CommTraffic, forward_s: float, backward_s: float,
              base_step: float) -> tuple[CommEstimate, float]:
    """The plan's communication per optimizer step over ``base_step`` seconds of per-GPU work (``forward_s`` and
    ``backward_s`` of it are what gradients and gathers may hide behind), and the exposed share of the step over
    its own links. Only what does not hide adds to the step."""
    if setting.plan.gpus == 1 and math.isfinite(base_step):
        # nothing moves, nothing is exposed (scaling efficiency 1, share 0 at any finite step): the estimate holds
        # only the card's and link's figures, found once for them
        return _ONE_GPU.get((setting.gpu, setting.rates, setting.facts),
                            (setting.intra, setting.network, setting.nodes, setting.sm_count),
                            lambda: _plan_comm(setting, traffic, 0.0, 0.0, 1.0)[0]), 0.0
    return _plan_comm(setting, traffic, forward_s, backward_s, base_step)


_ONE_GPU: IdentityMemo[CommEstimate] = IdentityMemo(256)


def _plan_comm(setting: CommSetting, traffic: CommTraffic, forward_s: float, backward_s: float,
               base_step: float) -> tuple[CommEstimate, float]:
    plan, gpu, net = setting.plan, setting.gpu, setting.network
    comm_bytes, strategy = comm_bytes_per_step(traffic)
    gpus_per_node = math.ceil(plan.gpus / setting.nodes)
    node_net = setting.facts.node_network(net) if net is not None else None

    def fabric_of(link_used: Link, over_network: bool = True) -> Fabric:
        link_used = node_link(gpu, link_used, gpus_per_node)
        link_bytes = link_bytes_s(gpu, link_used)
        pcie = link_used is Link.PCIE
        fixed = None if link_used in _NVLINKS or pcie else _busbw_fraction(setting.rates, link_used)
        return Fabric(intra_bytes_s=link_bytes, intra_efficiency=fixed,
                      nvls=False,  # conservative ring: NVLS would make 8 GPUs' all-reduce beat 4 GPUs' (measured)
                      gpus_per_node=gpus_per_node, network=node_net if over_network else None,
                      pcie_p2p=pcie_peer_to_peer(gpu) if pcie else None)

    def exposed_comm(link_used: Link, over_network: bool = True) -> tuple[float, float, float]:
        """(communication seconds, exposed seconds, bandwidth) per step."""
        t = step_comm(setting.facts, fabric_of(link_used, over_network), traffic, forward_s, backward_s)
        return t.total_s + copies_s, t.exposed_s + copies_s, t.bandwidth_bytes_s

    # host-bound eager copies, under no_grad (the update), that block the step like the gather they follow
    copies_s = sliced_copies(traffic) * setting.rates.kernel("launch_overhead_eager_nograd_us") * 1e-6

    comm_s, exposed_s, bandwidth = exposed_comm(setting.intra)

    def share(link_used: Link) -> float:
        e = exposed_comm(link_used, over_network=False)[1]
        return e / (base_step + e) if base_step + e > 0 else 0.0

    best = node_link(gpu, gpu.link, gpus_per_node)
    pcie_share = share(Link.PCIE) if plan.gpus > 1 else None
    link_share = share(best) if plan.gpus > 1 and best is not Link.PCIE else None
    network_note = None
    own_share = exposed_s / (base_step + exposed_s) if base_step + exposed_s > 0 else 0.0
    if net is not None:
        big = max(comm_bytes, 1.0)
        per_gpu = busbw(setting.facts, fabric_of(setting.intra), REDUCE_SCATTER, big, plan.gpus)
        bottleneck = per_gpu < busbw(setting.facts, fabric_of(setting.intra, over_network=False), REDUCE_SCATTER,
                                     big, plan.gpus) * 0.999
        network_note = msg("comm.network_bottleneck" if bottleneck else "comm.network", nodes=setting.nodes,
                           network=net, bytes_s=per_gpu, share=own_share)
    used = node_link(gpu, setting.intra, gpus_per_node)
    hidden_s = max(comm_s - exposed_s, 0.0) if plan.gpus > 1 else 0.0
    contention_s = hidden_s * contention_share(nccl_channels(setting.rates, gpu, used), setting.sm_count)
    comm = CommEstimate(
        strategy=strategy, gpus=plan.gpus, nodes=setting.nodes, bytes_per_step=comm_bytes,
        link=used.value,
        network=str(net) if net is not None else None,
        bandwidth_bytes_s=bandwidth,
        comm_s=comm_s, overlap_window_s=max(comm_s - exposed_s, 0.0), exposed_s=exposed_s,
        scaling_efficiency=base_step / (base_step + exposed_s) if base_step + exposed_s > 0 else 1.0,
        pcie_share=pcie_share, link_share=link_share,
        verdict=_verdict(setting, pcie_share, link_share, share(setting.intra), network_note),
        contention_s=contention_s,
    )
    return comm, own_share


__all__ = ["ALL_GATHER", "ALL_REDUCE", "DDP_BUCKET_BYTES", "LINK_VERDICT_SHARE", "REDUCE_SCATTER",
           "ZERO_BUCKET_ELEMENTS", "MEGATRON_BUCKET_ELEMENTS", "MEGATRON_BUCKET_PER_RANK", "CommEstimate", "CommSetting", "CommTime", "CommTraffic", "Fabric", "busbw",
           "bridged_gpus", "coerce_link", "collective_s", "comm_bytes_per_step", "contention_share", "curve_busbw", "half_bytes", "link_bytes_s",
           "megatron_bucket_elements", "nccl_channels", "network_busbw", "node_link", "pcie_peer_to_peer", "plan_comm", "replica_all_reduce_s", "replica_bytes_per_step", "sliced_copies", "sliced_sync", "step_comm", "switched_sync", "tree_latency_us"]
