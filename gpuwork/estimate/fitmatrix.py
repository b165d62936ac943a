"""The fit matrix: for one plan, every GPU of the table x 1, 2, 4 and 8 GPUs at once.

``fit_matrix(plan, offers, inputs) -> FitMatrix`` answers, per GPU type and count: does the plan fit (with
the sharding it needs: the plan's own, else DDP -> ZeRO-2 -> ZeRO-3 as ``gpuwork.estimate.offers.fit_plan``),
how much of the usable memory is left, the largest micro-batch and the largest sequence length that still
fit (searched with the memory estimator, bounded), and the run's time and cost on the cheapest offer of
that GPU that holds that many GPUs (else at the catalog's typical price of the GPU). Memory per GPU does
not depend on the GPU type, so one estimate serves every row (a memo shared by the whole matrix), except where
the allocator's steps are replayed (a hand-written model): the row's card bounds the replay's cache, as
``estimate_memory(device_bytes=)`` does (``gpuwork.estimate.offers.card_memory_bytes``). The matrix of a plan
is cached: the app redraws it without recomputing.

Example:
    >>> m = fit_matrix(TrainPlan(model="mistral-7b", method="qlora", grad_checkpointing=True), offers, inputs)
    >>> m.cell("rtx4090", 1).fits, m.cell("rtx4090", 1).max_batch_size
    (True, 4)

Limitations: the largest micro-batch and sequence are searched up to MAX_BATCH_SEARCH and the model's
context window (or MAX_SEQ_SEARCH) in steps of SEQ_STEP tokens; time and cost use the cell's own GPU
count (a node's idle GPUs are billed, not used); the typical price is the median on-demand price per
GPU-hour of that GPU in the catalog, for GPUs no offer holds in that count.
"""

from __future__ import annotations

import contextlib
import functools
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate.gpu_checks import gpu_problem
from gpuwork.estimate.offers import (
    DEFAULT_PREEMPTION_RATE_PER_HOUR,
    DEFAULT_SAFETY_MARGIN,
    SHARDING_ORDER,
    MemoryMemo,
    billed_hours,
    billed_nodes,
    card_memory_bytes,
    preemption_cost,
    usable_memory_bytes,
)
from gpuwork.estimate.timing import estimate_time
from gpuwork.facts.catalog import GpuSpec, Link, Mode, Network, Offer
from gpuwork.facts.inputs import Inputs
from gpuwork.message import msg
from gpuwork.plan import MAX_SEQ_LEN, TrainPlan
from gpuwork.units import HOUR_S, is_whole

MATRIX_GPUS = (1, 2, 4, 8)
# The largest micro-batch searched: beyond it the answer is "at least this many" (capped=True).
MAX_BATCH_SEARCH = 1024
# Sequence lengths are searched in multiples of this many tokens (kernels and packing work in such blocks).
SEQ_STEP = 128
# Longest sequence searched when the model's context window is longer (or unknown): 1 M tokens.
MAX_SEQ_SEARCH = 1 << 20
# Matrices kept per (plan, catalog, options): the app redraws without recomputing.
CACHE_SIZE = 32


@dataclass(frozen=True)
class Cell:
    """One GPU type x GPU count. Memory per GPU in bytes, times in seconds, costs in USD."""

    gpu_id: str
    gpu_name: str
    vendor: str
    gpus: int
    plan: TrainPlan  # as it runs in this cell (GPU count, sharding); the last one tried when nothing fits
    fits: bool
    device_total_bytes: int  # per GPU, what nvidia-smi would show
    usable_bytes: int  # per GPU: the driver-reported total minus the safety margin
    max_batch_size: int  # largest micro-batch that fits at the plan's sequence (0: not even 1)
    max_batch_capped: bool  # the search stopped at MAX_BATCH_SEARCH
    max_seq_len: int  # largest sequence (multiple of SEQ_STEP) that fits at the plan's micro-batch (0: none)
    max_seq_capped: bool  # the search stopped at the bound (context window or MAX_SEQ_SEARCH)
    total_s: float | None  # the whole run (None when it does not fit)
    cost_usd: float | None  # on the offer below, expected (preemptions included), as billed
    price_per_gpu_hour: float | None
    price_source: str | None  # "offer" (the cheapest offer holding this many GPUs), "typical" or None (no price)
    offer_id: str | None
    provider: str | None
    mode: Mode | None

    @property
    def headroom_bytes(self) -> int:
        """Usable memory left per GPU (negative: how much is missing)."""
        return self.usable_bytes - self.device_total_bytes

    def as_dict(self) -> dict[str, Any]:
        return {"gpu_id": self.gpu_id, "gpu_name": self.gpu_name, "vendor": self.vendor, "gpus": self.gpus,
                "sharding": self.plan.sharding.value, "fits": self.fits,
                "device_total_bytes": self.device_total_bytes, "usable_bytes": self.usable_bytes,
                "headroom_bytes": self.headroom_bytes, "max_batch_size": self.max_batch_size,
                "max_batch_capped": self.max_batch_capped, "max_seq_len": self.max_seq_len,
                "max_seq_capped": self.max_seq_capped, "total_s": self.total_s, "cost_usd": self.cost_usd,
                "price_per_gpu_hour_usd": self.price_per_gpu_hour, "price_source": self.price_source,
                "offer_id": self.offer_id, "provider": self.provider,
                "mode": self.mode.value if self.mode else None}


@dataclass(frozen=True)
class FitMatrix:
    """The plan across every GPU type (rows, by memory) and count (columns)."""

    plan: TrainPlan
    counts: tuple[int, ...]
    cells: tuple[Cell, ...]  # row by row: GPU types by memory, then name; counts in order inside a row
    memory_estimates: int  # how many memory estimates the matrix took (the memo makes most of them free)

    def cell(self, gpu_id: str, gpus: int) -> Cell:
        for c in self.cells:
            if c.gpu_id == gpu_id and c.gpus == gpus:
                return c
        raise KeyError((gpu_id, gpus))

    @property
    def gpu_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.gpu_id for c in self.cells))

    def cheapest(self) -> Cell | None:
        """The fitting cell with the lowest cost (None when nothing fits at a known price)."""
        priced = [c for c in self.cells if c.fits and c.cost_usd is not None and math.isfinite(c.cost_usd)]
        return min(priced, key=lambda c: (c.cost_usd, c.total_s, c.gpu_id, c.gpus), default=None)

    def as_dict(self) -> dict[str, Any]:
        return {"plan": self.plan.as_dict(), "counts": list(self.counts), "memory_estimates": self.memory_estimates,
                "cells": [c.as_dict() for c in self.cells]}


class _Memory:
    """Device total per GPU of a plan on a row's card, memoised: the same on every card, except where the
    allocator's steps are replayed (a hand-written model), whose cache the card bounds (``card_memory_bytes``)."""

    def __init__(self, inputs: Inputs):
        self.spec = inputs.spec
        self.memo: MemoryMemo = {}

    def __call__(self, plan: TrainPlan, gpu: GpuSpec) -> int:
        return card_memory_bytes(plan, self.spec, gpu, self.memo)


def _largest(fits: Any, start: int, bound: int) -> tuple[int, bool]:
    """The largest n in [start, bound] with fits(n) (monotone: True then False), 0 when fits(start) is False;
    doubling then bisection. Returns (n, capped)."""
    if not fits(start):
        return 0, False
    low, high = start, start
    while True:
        nxt = min(high * 2, bound)
        if nxt == high:
            return high, True
        if not fits(nxt):
            high = nxt
            break
        low = high = nxt
    while high - low > 1:  # fits(low), not fits(high)
        mid = (low + high) // 2
        if fits(mid):
            low = mid
        else:
            high = mid
    return low, False


def _candidates(plan: TrainPlan, gpus: int) -> list[TrainPlan]:
    """The plan on ``gpus`` GPUs: its own sharding first (when it asks for several), then DDP -> ZeRO-2 -> ZeRO-3."""
    if gpus == 1:
        return [plan.single_gpu()]
    out: list[TrainPlan] = []
    order = ((plan.sharding,) if plan.gpus > 1 else ()) + SHARDING_ORDER
    for sharding in dict.fromkeys(order):
        try:
            out.append(plan.replace(gpus=gpus, sharding=sharding))
        except PlanError:  # offload flags that need ZeRO: drop them for DDP
            with contextlib.suppress(PlanError):  # a hybrid plan's shard group that does not divide the count
                out.append(plan.replace(gpus=gpus, sharding=sharding, offload_optimizer=False,
                                        offload_params=False))
    return out


def _typical_price(offers: Iterable[Offer], gpu_id: str) -> float | None:
    prices = [o.price_per_gpu_hour for o in offers if o.gpu_id == gpu_id and o.mode is Mode.ON_DEMAND]
    return statistics.median(prices) if prices else None


def _frozen(value: Any) -> Any:
    """A hashable form of an option's value (mappings and sequences as tuples)."""
    if isinstance(value, Mapping):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


class _Same:
    """Facts or options as a cache key, equal to another when their contents are: ``key`` (hashed) and
    ``unhashed`` (facts that hold dicts, compared only)."""

    def __init__(self, value: Any, key: Any, unhashed: tuple[Any, ...] = ()):
        self.value, self.key, self.unhashed = value, key, unhashed

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and (self.value is other.value
                                             or (self.key == other.key and self.unhashed == other.unhashed))


def _facts(inputs: Inputs) -> _Same:
    """The plan's facts, compared by value: the model (``ModelSpec`` equality covers its extras), the GPU table, the
    rates and the networks."""
    return _Same(inputs, (inputs.spec, tuple(inputs.gpus.items())), (inputs.rates, inputs.comm))


@dataclass(frozen=True)
class _Question:
    """What one matrix is computed from, every field compared: the key of the matrix cache."""

    plan: TrainPlan
    offers: tuple[Offer, ...]
    facts: _Same  # the Inputs (``_facts``)
    rows: tuple[GpuSpec, ...]  # by memory, then name
    counts: tuple[int, ...]
    safety_margin: float
    preemption_rate: float
    time_options: _Same  # the Mapping of estimate_time's options

    @property
    def inputs(self) -> Inputs:
        inputs: Inputs = self.facts.value
        return inputs


def _cell(q: _Question, gpu: GpuSpec, gpus: int, memory: _Memory) -> Cell:
    plan, offers, inputs, preemption_rate, time_options = q.plan, q.offers, q.inputs, q.preemption_rate, \
        q.time_options.value
    usable = usable_memory_bytes(gpu, q.safety_margin)
    tried = _candidates(plan, gpus)
    fitted = next((p for p in tried if memory(p, gpu) <= usable), None)
    run = fitted or min(tried, key=lambda p: memory(p, gpu))
    need = memory(run, gpu)
    seq_bound = min(MAX_SEQ_SEARCH, MAX_SEQ_LEN, max(inputs.spec.max_position or 0, plan.seq_len))
    max_batch, batch_capped = _largest(lambda b: memory(run.replace(batch_size=b), gpu) <= usable, 1, MAX_BATCH_SEARCH)
    steps, seq_capped = _largest(lambda k: memory(run.replace(seq_len=k * SEQ_STEP), gpu) <= usable, 1,
                                 max(1, seq_bound // SEQ_STEP))
    common: dict[str, Any] = dict(gpu_id=gpu.gpu_id, gpu_name=gpu.display_name, vendor=gpu.vendor, gpus=gpus, plan=run,
                  device_total_bytes=need, usable_bytes=usable, max_batch_size=max_batch,
                  max_batch_capped=batch_capped, max_seq_len=steps * SEQ_STEP, max_seq_capped=seq_capped)
    if fitted is None or gpu_problem(run, gpu) is not None:  # no room, or a kernel the card cannot run
        return Cell(fits=False, total_s=None, cost_usd=None, price_per_gpu_hour=None, price_source=None,
                    offer_id=None, provider=None, mode=None, **common)

    times: dict[tuple[Link, Network | None, int], Any] = {}

    def time_on(link: Link, network: Network | None, nodes: int) -> Any:
        key = (link, network, nodes)
        if key not in times:
            times[key] = estimate_time(run, gpu, inputs, link=link if gpus > 1 else Link.PCIE,
                                       network=network if nodes > 1 else None, nodes=nodes, **time_options)
        return times[key]

    best: tuple[float, float, Offer] | None = None
    for offer in offers:
        if offer.gpu_id != gpu.gpu_id or (offer.gpus_per_node < gpus and offer.network is Network.NONE):
            continue
        nodes, billed = billed_nodes(gpus, offer)
        est = time_on(offer.link, offer.network, nodes)
        price_s = offer.price_per_gpu_hour * billed / HOUR_S
        wall = est.total_s
        if offer.mode is Mode.INTERRUPTIBLE:
            wall = preemption_cost(est.total_s, preemption_rate, run.checkpoint_every_steps * est.step_time_s)[2]
            cost = max(wall * price_s, offer.min_rental_hours * HOUR_S * price_s)
        else:
            cost = billed_hours(est.total_s / HOUR_S, offer) * HOUR_S * price_s
        if math.isfinite(cost) and (best is None or (cost, wall, offer.offer_id) < (best[0], best[1],
                                                                                     best[2].offer_id)):
            best = (cost, wall, offer)
    if best is not None:
        cost, wall, offer = best
        return Cell(fits=True, total_s=wall, cost_usd=cost, price_per_gpu_hour=offer.price_per_gpu_hour,
                    price_source="offer", offer_id=offer.offer_id, provider=offer.provider, mode=offer.mode,
                    **common)
    est = time_on(gpu.link, None, 1)  # no offer holds this many: the GPU's best link inside one server
    price = _typical_price(offers, gpu.gpu_id)
    return Cell(fits=True, total_s=est.total_s, cost_usd=None if price is None else price * gpus * est.total_s / HOUR_S,
                price_per_gpu_hour=price, price_source=None if price is None else "typical", offer_id=None,
                provider=None, mode=None, **common)


def fit_matrix(plan: TrainPlan, offers: Iterable[Offer], inputs: Inputs, *, counts: tuple[int, ...] = MATRIX_GPUS,
               safety_margin: float = DEFAULT_SAFETY_MARGIN,
               preemption_rate_per_hour: float = DEFAULT_PREEMPTION_RATE_PER_HOUR,
               time_options: Mapping[str, Any] | None = None, gpu_ids: Iterable[str] | None = None) -> FitMatrix:
    """The plan on every GPU of ``inputs.gpus`` (or ``gpu_ids``) x ``counts`` GPUs, as one table (cached).

    Args:
        plan: the run (its dataset and epochs make time and cost).
        offers: the catalog, for prices (``gpuwork.facts.catalog.load_offers()``).
        inputs: the plan's facts (``gpuwork.facts.resolve(plan)``).
        counts: GPU counts (columns), each at least 1.
        safety_margin, preemption_rate_per_hour, time_options: as ``gpuwork.estimate.offers.evaluate_offers``.
        gpu_ids: only these GPUs (rows); None = every GPU of the table.

    Raises:
        PlanError: a bad count or margin; CatalogError: an unknown GPU id.
    """
    if not counts or any(not is_whole(n, 1) for n in counts):
        raise PlanError("counts", msg("error.fitmatrix.counts", value=repr(counts)))
    if isinstance(safety_margin, bool) or not isinstance(safety_margin, int | float) or not 0 <= safety_margin < 1:
        raise PlanError("safety_margin", msg("error.offers.safety_margin", value=repr(safety_margin)))
    gpus = [inputs.gpu(g) for g in gpu_ids] if gpu_ids is not None else list(inputs.gpus.values())
    options = dict(time_options or {})
    rows = tuple(sorted(gpus, key=lambda g: (g.memory_total_bytes, g.display_name)))
    return _matrix(_Question(plan, tuple(offers), _facts(inputs), rows, tuple(counts), safety_margin,
                             preemption_rate_per_hour, _Same(options, _frozen(options))))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _matrix(q: _Question) -> FitMatrix:
    memory = _Memory(q.inputs)
    cells = tuple(_cell(q, gpu, n, memory) for gpu in q.rows for n in q.counts)
    return FitMatrix(plan=q.plan, counts=q.counts, cells=cells, memory_estimates=len(memory.memo))


def clear_cache() -> None:
    """Forget the cached matrices (tests measure the uncached time)."""
    _matrix.cache_clear()


__all__ = ["CACHE_SIZE", "MATRIX_GPUS", "MAX_BATCH_SEARCH", "MAX_SEQ_SEARCH", "SEQ_STEP", "Cell", "FitMatrix",
           "clear_cache", "fit_matrix"]
