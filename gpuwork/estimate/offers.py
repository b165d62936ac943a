"""Rental offers for a plan: does it fit, on how many GPUs with which sharding, how long, how much.

``evaluate_offers(plan) -> list[OfferResult]`` walks the catalog (data/catalog.csv): per offer it
checks the per-GPU memory against what the driver reports minus a safety margin, finds the GPU
count inside the node and the sharding that make the plan fit (DDP → ZeRO-2 → ZeRO-3), estimates
the run's time, its cost as used and as billed (minimum rental, whole nodes), and for
interruptible offers the expected cost with preemptions and the checkpoint interval that
minimises lost work (Young/Daly). Pure functions over the catalog; prices are illustrative.

Example:
    >>> results = evaluate_offers(TrainPlan(model="llama-3.1-8b", method="qlora"), mode="on-demand")
    >>> results[0].fits
    True

Limitations: an offer's node is rented whole (an 8-GPU offer bills 8 GPUs, and by default the plan
runs on all of them); provider storage,
egress and CPU RAM are not priced; preemptions arrive at a constant rate (Poisson), which real
spot markets do not promise; a preempted run is assumed to restart on the same offer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate.allocator_step import replayed
from gpuwork.estimate.gpu_checks import gpu_problem
from gpuwork.estimate.memory import estimate_memory, state_bytes_per_param
from gpuwork.estimate.timing import TimeEstimate, estimate_time
from gpuwork.facts.catalog import GpuSpec, Link, Mode, Network, Offer, filter_offers
from gpuwork.facts.inputs import Inputs
from gpuwork.facts.spec import ModelSpec
from gpuwork.message import Msg, msg
from gpuwork.plan import Sharding, TrainPlan
from gpuwork.units import HOUR_S

# -- named constants (each with its reason) --------------------------------------------------------

# Fraction of the driver-reported memory kept free. The estimate already includes the CUDA context
# and allocator slack; this covers what it cannot see: fragmentation spikes, NCCL buffers, a
# monitoring agent, a notebook kernel left open. Assumption.
DEFAULT_SAFETY_MARGIN = 0.05
# Preemptions per hour of an interruptible offer. Assumption: no provider publishes an hourly rate
# (AWS's Spot advisor gives monthly interruption-frequency bands, GPU instances often in the top
# ">20 %" band; marketplace bids end whenever outbid). One preemption per ~20 hours; editable.
DEFAULT_PREEMPTION_RATE_PER_HOUR = 0.05
# Time lost to each preemption besides the work since the last checkpoint: find a new machine,
# pull the container, load the checkpoint, warm up. Assumption: 10 minutes.
RESTART_OVERHEAD_S = 600.0
# Sharding tried, in order, when the plan does not fit as it is (least communication first).
SHARDING_ORDER = (Sharding.DDP, Sharding.ZERO2, Sharding.ZERO3)
SORT_KEYS = ("cost", "time", "deadline", "price", "vram")


def offer_name(offer: Offer) -> Msg:
    """An offer as people read it ("marketplace-a: 8 × H100 SXM per node, on-demand"): what the tables, the answer
    line and the request's example say; the catalog id stays in JSON and in the table's tooltip."""
    return msg("offer.name", provider=offer.provider, per_node=offer.gpus_per_node, gpu=offer.gpu.display_name,
               mode=offer.mode)


def usable_memory_bytes(gpu: GpuSpec, safety_margin: float = DEFAULT_SAFETY_MARGIN) -> int:
    """What a plan may use per GPU: the driver-reported total x (1 − safety_margin)."""
    return int(gpu.memory_total_bytes * (1 - safety_margin))


@dataclass(frozen=True)
class Fit:
    """Whether a plan fits a GPU type, and the GPU count / sharding that makes it fit."""

    fits: bool
    plan: TrainPlan  # the plan as it fits (or the last one tried)
    device_total_bytes: int  # per GPU, what nvidia-smi would show
    usable_bytes: int  # per GPU
    changes: tuple[Msg, ...]  # what was changed from the plan (change.gpus 1 -> 2, change.sharding ddp -> zero3)
    reason: Msg

    @property
    def headroom_bytes(self) -> int:
        return self.usable_bytes - self.device_total_bytes

    def as_dict(self) -> dict[str, Any]:
        return {"fits": self.fits, "gpus": self.plan.gpus, "sharding": self.plan.sharding.value,
                "device_total_bytes": self.device_total_bytes, "usable_bytes": self.usable_bytes,
                "headroom_bytes": self.headroom_bytes, "state_bytes_per_param": state_bytes_per_param(self.plan),
                "changes": [c.as_dict() for c in self.changes],
                "reason": self.reason.as_dict()}


# Memory estimates of one table or ranking: by plan, and by the card's memory where the card changes the figure
MemoryMemo = dict[tuple[TrainPlan, int | None], int]


def card_memory_bytes(plan: TrainPlan, spec: ModelSpec, gpu: GpuSpec, memo: MemoryMemo | None = None) -> int:
    """Device total per GPU of ``plan`` on ``gpu`` (what nvidia-smi would show). Where the allocator's steps are
    replayed (a hand-written model, gpuwork.estimate.allocator_step.replayed) the card's memory bounds the replay's
    cached segments, as ``estimate_memory(device_bytes=)`` does: a failed cudaMalloc releases them, so each card
    has its own figure. Elsewhere the figure is the same on every card, and ``memo`` holds it once."""
    device = gpu.memory_total_bytes if replayed(spec, plan) else None
    key = (plan, device)
    if memo is not None and key in memo:
        return memo[key]
    value = estimate_memory(plan, spec, device_bytes=device).device_total_bytes
    if memo is not None:
        memo[key] = value
    return value


def fit_plan(plan: TrainPlan, gpu: GpuSpec, *, max_gpus: int, spec: ModelSpec,
             safety_margin: float = DEFAULT_SAFETY_MARGIN, memo: MemoryMemo | None = None) -> Fit:
    """The plan as it fits ``gpu``: unchanged if it fits, else the fewest GPUs (from plan.gpus up to
    max_gpus) and, for each count, the first of DDP → ZeRO-2 → ZeRO-3 that fits.

    Raises PlanError when safety_margin is not in [0, 1).
    """
    if isinstance(safety_margin, bool) or not isinstance(safety_margin, int | float) or not 0 <= safety_margin < 1:
        raise PlanError("safety_margin", msg("error.offers.safety_margin", value=repr(safety_margin)))
    usable = usable_memory_bytes(gpu, safety_margin)
    need = card_memory_bytes(plan, spec, gpu, memo)
    if need <= usable:
        return Fit(True, plan, need, usable, (), msg("fit.as_planned", need_bytes=need, usable_bytes=usable))
    best = (plan, need)  # the attempt that came closest, for the message
    for n in range(max(plan.gpus, 1), max_gpus + 1):
        for sharding in SHARDING_ORDER if n > 1 else (Sharding.DDP,):
            if n == plan.gpus and sharding is plan.sharding:
                continue
            try:
                candidate = plan.replace(gpus=n, sharding=sharding)
            except PlanError:
                continue  # e.g. offload flags that need ZeRO
            need_n = card_memory_bytes(candidate, spec, gpu, memo)
            if need_n < best[1]:
                best = (candidate, need_n)
            if need_n <= usable:
                return Fit(True, candidate, need_n, usable, plan_changes(plan, candidate),
                           msg("fit.with_gpus", gpus=n, sharding=sharding, need_bytes=need_n, usable_bytes=usable))
    candidate, need_n = best
    return Fit(False, candidate, need_n, usable, (),
               msg("fit.does_not_fit", need_bytes=need_n, gpus=candidate.gpus, sharding=candidate.sharding,
                   usable_bytes=usable))


def plan_changes(plan: TrainPlan, fitted: TrainPlan) -> tuple[Msg, ...]:
    """What fitting changed in the plan (GPU count, sharding), as messages."""
    changes = []
    if fitted.gpus != plan.gpus:
        changes.append(msg("change.gpus", old=plan.gpus, new=fitted.gpus))
    if fitted.sharding is not plan.sharding:
        changes.append(msg("change.sharding", old=plan.sharding, new=fitted.sharding))
    return tuple(changes)


@dataclass(frozen=True)
class OfferResult:
    """One offer evaluated for a plan. Costs in USD, times in seconds."""

    offer: Offer
    fit: Fit
    nodes: int
    billed_gpus: int  # whole nodes are rented
    time: TimeEstimate | None
    run_cost_usd: float | None  # hours of the run x GPUs billed x price
    min_rental_cost_usd: float  # the minimum rental period x GPUs billed x price
    billed_cost_usd: float | None  # what the rental costs: at least the minimum, reserved in whole periods
    expected_preemptions: float  # 0 for on-demand and reserved offers
    expected_lost_s: float  # work redone + restarts, expected
    expected_total_s: float | None  # wall time including expected preemptions
    expected_cost_usd: float | None  # billed cost including expected preemptions
    checkpoint_interval_s: float | None  # plan.checkpoint_every_steps in time
    recommended_checkpoint_interval_s: float | None  # Young/Daly, for interruptible offers
    recommended_checkpoint_every_steps: int | None
    meets_deadline: bool | None
    within_budget: bool | None
    reasons: tuple[Msg, ...] = ()

    @property
    def fits(self) -> bool:
        return self.fit.fits

    def as_dict(self) -> dict[str, Any]:
        o = self.offer
        return {
            "offer_id": o.offer_id, "provider": o.provider, "gpu_id": o.gpu_id, "gpu_name": o.gpu.display_name,
            "gpus_per_node": o.gpus_per_node, "link": o.link.value, "network": o.network.value,
            "mode": o.mode.value, "region": o.region.value, "price_per_gpu_hour_usd": o.price_per_gpu_hour,
            "min_rental_hours": o.min_rental_hours, "as_of": o.as_of.isoformat(),
            "fits": self.fits, "fit": self.fit.as_dict(), "nodes": self.nodes, "billed_gpus": self.billed_gpus,
            "step_time_s": self.time.step_time_s if self.time else None,
            "tokens_per_s": self.time.tokens_per_s if self.time else None,
            "total_s": self.time.total_s if self.time else None,
            "run_cost_usd": self.run_cost_usd, "min_rental_cost_usd": self.min_rental_cost_usd,
            "billed_cost_usd": self.billed_cost_usd, "expected_preemptions": self.expected_preemptions,
            "expected_lost_s": self.expected_lost_s, "expected_total_s": self.expected_total_s,
            "expected_cost_usd": self.expected_cost_usd, "checkpoint_interval_s": self.checkpoint_interval_s,
            "recommended_checkpoint_interval_s": self.recommended_checkpoint_interval_s,
            "recommended_checkpoint_every_steps": self.recommended_checkpoint_every_steps,
            "meets_deadline": self.meets_deadline, "within_budget": self.within_budget,
            "reasons": [r.as_dict() for r in self.reasons],
            "time": self.time.as_dict() if self.time else None,
        }


def young_daly_interval_s(checkpoint_write_s: float, mtbf_s: float) -> float:
    """Checkpoint interval that minimises expected lost time: sqrt(2 x C x MTBF).

    Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974;
    Daly, FGCS 22(3), 2006 (the same first-order term). Worked example: C = 60 s, MTBF = 20 h
    (72,000 s) -> sqrt(2 x 60 x 72,000) = 2,939 s ≈ 49 min.
    """
    return math.sqrt(2 * checkpoint_write_s * mtbf_s)


def preemption_cost(total_s: float, rate_per_hour: float, checkpoint_interval_s: float) -> tuple[float, float, float]:
    """Expected (preemptions, lost seconds, wall seconds) for a run of ``total_s`` seconds of work.

    Each preemption loses half a checkpoint interval of work on average plus RESTART_OVERHEAD_S.
    With λ preemptions per second of wall time, wall = work + λ·wall·loss, so
    wall = work / (1 − λ·loss) (inf when λ·loss ≥ 1: the run never gets ahead).
    """
    if rate_per_hour <= 0:
        return 0.0, 0.0, total_s
    rate_s = rate_per_hour / HOUR_S
    loss = checkpoint_interval_s / 2 + RESTART_OVERHEAD_S
    if rate_s * loss >= 1:
        return math.inf, math.inf, math.inf
    wall = total_s / (1 - rate_s * loss)
    preemptions = rate_s * wall
    return preemptions, preemptions * loss, wall


def billed_hours(hours: float, offer: Offer) -> float:
    """Hours paid for a run of ``hours`` on ``offer``: reserved offers in whole periods, others at least
    the minimum rental. The one billing rule: offers, the trial's extrapolation and the request use it."""
    if offer.mode is Mode.RESERVED:  # committed in whole periods
        return max(1, math.ceil(hours / offer.min_rental_hours - 1e-9)) * offer.min_rental_hours
    return max(hours, offer.min_rental_hours)


def billed_nodes(gpus: int, offer: Offer) -> tuple[int, int]:
    """(nodes, GPUs paid for) to run on ``gpus`` GPUs of ``offer``: a node is rented whole."""
    nodes = math.ceil(gpus / offer.gpus_per_node)
    return nodes, nodes * offer.gpus_per_node


@dataclass(frozen=True)
class OfferOptions:
    """How an offer is priced for a plan: what ``evaluate_offer`` and ``evaluate_offers`` take as keywords.

    safety_margin: fraction of each GPU's driver-reported memory kept free (DEFAULT_SAFETY_MARGIN).
    preemption_rate_per_hour: preemptions per hour on interruptible offers.
    deadline_s: wall-clock limit; sets ``meets_deadline`` and the "deadline" ranking.
    budget_usd: offers whose expected cost exceeds it are dropped (``within_budget`` False).
    use_whole_node: a node is billed whole, so run on all its GPUs when the plan still fits (more data-parallel
        ranks: the global batch grows; ``fit.changes`` says so).
    time_options: passed to ``estimate_time`` (mfu, calibration, loader_tokens_per_s, ...).
    """

    safety_margin: float = DEFAULT_SAFETY_MARGIN
    preemption_rate_per_hour: float = DEFAULT_PREEMPTION_RATE_PER_HOUR
    deadline_s: float | None = None
    budget_usd: float | None = None
    use_whole_node: bool = True
    time_options: Mapping[str, Any] | None = None

    @classmethod
    def with_settings(cls, options: OfferOptions | None, settings: Mapping[str, Any]) -> OfferOptions:
        """``options`` (or the defaults) with the keywords of ``settings`` set; an unknown name is a TypeError."""
        if options is not None and not settings:
            return options  # a ranking prices every offer with the same options: no copy per offer
        return dataclasses.replace(options or cls(), **settings)


_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(OfferOptions))


def _fit_on_offer(plan: TrainPlan, offer: Offer, spec: ModelSpec, o: OfferOptions,
                  memo: MemoryMemo | None) -> tuple[Fit, list[Msg]]:
    """The plan as it fits ``offer``'s node (or nodes), with the reasons: more GPUs and sharding where it needs them,
    and all of a node's GPUs when the node is billed whole (``use_whole_node``)."""
    max_gpus = offer.gpus_per_node
    if (problem := gpu_problem(plan, offer.gpu)) is not None:  # flash3 off Hopper, FP8 before Ada: listed, not priced
        return Fit(False, plan, card_memory_bytes(plan, spec, offer.gpu, memo),
                   usable_memory_bytes(offer.gpu, o.safety_margin), (), problem), []
    if plan.gpus > offer.gpus_per_node:
        if offer.network is Network.NONE:
            fit = Fit(False, plan, card_memory_bytes(plan, spec, offer.gpu, memo),
                      usable_memory_bytes(offer.gpu, o.safety_margin), (), msg("offer.no_network", gpus=plan.gpus, per_node=offer.gpus_per_node))
            return fit, []
        max_gpus = plan.gpus
    fit = fit_plan(plan, offer.gpu, max_gpus=max_gpus, safety_margin=o.safety_margin, spec=spec, memo=memo)
    reasons = [fit.reason]
    if not fit.fits:
        return fit, reasons
    _, billed_gpus = billed_nodes(fit.plan.gpus, offer)
    if billed_gpus > fit.plan.gpus:
        if o.use_whole_node:
            # the node is paid for whole: run on all of its GPUs if the plan still fits that way (a hybrid plan
            # only where its shard group divides them)
            try:
                whole: Fit | None = fit_plan(fit.plan.replace(gpus=billed_gpus), offer.gpu, max_gpus=billed_gpus,
                                             safety_margin=o.safety_margin, spec=spec, memo=memo)
            except PlanError:
                whole = None
            if whole is not None and whole.fits:
                reasons.append(msg("offer.whole_node_used", billed_gpus=billed_gpus, needed_gpus=fit.plan.gpus))
                fit = Fit(True, whole.plan, whole.device_total_bytes, whole.usable_bytes,
                          plan_changes(plan, whole.plan), whole.reason)
        else:
            reasons.append(msg("offer.whole_node_idle", per_node=offer.gpus_per_node, used_gpus=fit.plan.gpus))
    return fit, reasons


# what an offer's node does for a plan depends only on its hardware: the card, GPUs per node, link and network
_Hardware = tuple[str, int, Link, Network]
_HardwareMemo = dict[_Hardware, tuple[Fit, tuple[Msg, ...], TimeEstimate | None]]


def _run_on(plan: TrainPlan, offer: Offer, inputs: Inputs, o: OfferOptions, memo: MemoryMemo | None,
            hardware: _HardwareMemo | None) -> tuple[Fit, tuple[Msg, ...], TimeEstimate | None]:
    """The plan fitted to ``offer``'s node and its time there (None when it does not fit), shared by every offer of
    the same hardware in one ranking: a catalog lists one node at many prices, modes and regions."""
    key = (offer.gpu_id, offer.gpus_per_node, offer.link, offer.network)
    if hardware is not None and key in hardware:
        return hardware[key]
    fit, reasons = _fit_on_offer(plan, offer, inputs.spec, o, memo)
    est = None
    if fit.fits:
        nodes, _ = billed_nodes(fit.plan.gpus, offer)
        est = estimate_time(fit.plan, offer.gpu, inputs, link=offer.link if fit.plan.gpus > 1 else Link.PCIE,
                            network=offer.network if nodes > 1 else None, nodes=nodes,
                            **dict(o.time_options or {}))
    answer = (fit, tuple(reasons), est)
    if hardware is not None:
        hardware[key] = answer
    return answer


def evaluate_offer(plan: TrainPlan, offer: Offer, inputs: Inputs, *, memo: MemoryMemo | None = None,
                   options: OfferOptions | None = None, hardware: _HardwareMemo | None = None,
                   **settings: Any) -> OfferResult:
    """One offer for one plan (see ``evaluate_offers``): ``options`` and the keywords of ``OfferOptions``
    (safety_margin=..., deadline_s=...) say how it is priced."""
    o = OfferOptions.with_settings(options, settings)
    fit, fit_reasons, est = _run_on(plan, offer, inputs, o, memo, hardware)
    reasons = list(fit_reasons)
    if est is None:
        return _unfit(offer, fit, reasons, o.deadline_s, o.budget_usd)
    fitted = fit.plan
    nodes, billed_gpus = billed_nodes(fitted.gpus, offer)
    price_s = offer.price_per_gpu_hour * billed_gpus / HOUR_S
    min_cost = offer.min_rental_hours * HOUR_S * price_s
    billed = billed_hours(est.total_s / HOUR_S, offer) * HOUR_S * price_s
    interval = fitted.checkpoint_every_steps * est.step_time_s
    preemptions, lost, wall = 0.0, 0.0, est.total_s
    recommended = recommended_steps = None
    expected_cost = billed
    rate = o.preemption_rate_per_hour
    if offer.mode is Mode.INTERRUPTIBLE:
        preemptions, lost, wall = preemption_cost(est.total_s, rate, interval)
        expected_cost = max(wall * price_s, min_cost) if math.isfinite(wall) else math.inf
        if rate > 0:
            recommended = young_daly_interval_s(est.checkpoint_write_s, HOUR_S / rate)
            recommended_steps = max(1, round(recommended / est.step_time_s))
            reasons.append(msg("offer.interruptible", preemptions=preemptions, rate_per_hour=rate,
                               lost_s=lost, recommended_s=recommended, recommended_steps=recommended_steps,
                               interval_s=interval))
        if not math.isfinite(wall):
            reasons.append(msg("offer.preemptions_outpace_checkpoints"))
    if offer.mode is Mode.RESERVED and est.total_s / HOUR_S < offer.min_rental_hours:
        reasons.append(msg("offer.reserved_minimum", min_rental_s=offer.min_rental_hours * HOUR_S, run_s=est.total_s))
    reasons.extend(est.warnings)
    return OfferResult(offer=offer, fit=fit, nodes=nodes, billed_gpus=billed_gpus, time=est,
                       run_cost_usd=est.total_s * price_s, min_rental_cost_usd=min_cost, billed_cost_usd=billed,
                       expected_preemptions=preemptions, expected_lost_s=lost, expected_total_s=wall,
                       expected_cost_usd=expected_cost, checkpoint_interval_s=interval,
                       recommended_checkpoint_interval_s=recommended,
                       recommended_checkpoint_every_steps=recommended_steps,
                       meets_deadline=None if o.deadline_s is None else wall <= o.deadline_s,
                       within_budget=None if o.budget_usd is None else expected_cost <= o.budget_usd,
                       reasons=tuple(reasons))


def _unfit(offer: Offer, fit: Fit, reasons: list[Msg], deadline_s: float | None,
           budget_usd: float | None) -> OfferResult:
    if fit.reason not in reasons:
        reasons.append(fit.reason)
    return OfferResult(offer=offer, fit=fit, nodes=0, billed_gpus=0, time=None, run_cost_usd=None,
                       min_rental_cost_usd=offer.min_rental_hours * offer.price_per_node_hour,
                       billed_cost_usd=None, expected_preemptions=0.0, expected_lost_s=0.0, expected_total_s=None,
                       expected_cost_usd=None, checkpoint_interval_s=None, recommended_checkpoint_interval_s=None,
                       recommended_checkpoint_every_steps=None,
                       meets_deadline=None if deadline_s is None else False,
                       within_budget=None if budget_usd is None else False, reasons=tuple(reasons))


def sort_offers(results: Iterable[OfferResult], sort: str = "cost") -> list[OfferResult]:
    """Rank evaluated offers; offers that do not fit always come last (cheapest first among them).

    ``sort``: "cost" (expected cost), "time" (expected wall time), "deadline" (cheapest among those that
    meet the deadline, then the rest by time), "price" (per GPU-hour) or "vram" (most memory per GPU first).
    """
    if sort not in SORT_KEYS:
        raise PlanError("sort", msg("error.offers.sort", value=repr(sort), choices=", ".join(SORT_KEYS)))

    def key(r: OfferResult) -> tuple[Any, ...]:
        if not r.fits:
            return (2, 0, r.offer.price_per_gpu_hour, r.offer.offer_id)
        cost = r.expected_cost_usd if r.expected_cost_usd is not None else math.inf
        wall = r.expected_total_s if r.expected_total_s is not None else math.inf
        if sort == "time":
            return (0, wall, cost, r.offer.offer_id)
        if sort == "deadline":
            return (0, 0, cost, r.offer.offer_id) if r.meets_deadline else (1, wall, cost, r.offer.offer_id)
        if sort == "price":
            return (0, r.offer.price_per_gpu_hour, cost, r.offer.offer_id)
        if sort == "vram":
            return (0, -r.offer.gpu.memory_bytes, r.offer.price_per_gpu_hour, r.offer.offer_id)
        return (0, cost, wall, r.offer.offer_id)

    return sorted(results, key=key)


def evaluate_offers(plan: TrainPlan, offers: Iterable[Offer], inputs: Inputs, *, sort: str = "cost",
                    include_unfit: bool = True, options: OfferOptions | None = None,
                    **settings: Any) -> list[OfferResult]:
    """Every offer that passes the filters, evaluated for ``plan`` and ranked.

    Args:
        plan: the run; its GPU count is a minimum — more GPUs of the node are used when needed.
        offers: offers to consider (``gpuwork.facts.catalog.load_offers()``).
        inputs: the plan's facts (``gpuwork.facts.resolve(plan)``).
        sort: a ranking of ``sort_offers`` ("cost", "time", "deadline", "price", "vram").
        include_unfit: keep offers the plan cannot fit (at the end, with the reason).
        options: how the offers are priced (``OfferOptions``: safety_margin, preemption_rate_per_hour,
            deadline_s, budget_usd, use_whole_node, time_options).
        settings: those options by name, and the conditions of ``gpuwork.facts.catalog.filter_offers``
            (min_vram_gb, gpu_class, mode, region, max_price_per_gpu_hour, gpu_ids, min_gpus_per_node); an unknown
            name is a TypeError.

    Raises:
        PlanError: bad sort, margin, deadline or budget; CatalogError: bad filter values.
    """
    o = OfferOptions.with_settings(options, {k: v for k, v in settings.items() if k in _OPTION_NAMES})
    filters = {k: v for k, v in settings.items() if k not in _OPTION_NAMES}
    if sort not in SORT_KEYS:
        raise PlanError("sort", msg("error.offers.sort", value=repr(sort), choices=", ".join(SORT_KEYS)))
    if sort == "deadline" and o.deadline_s is None:
        raise PlanError("deadline_s", msg("error.offers.deadline_needed"))
    for name, value in (("deadline_s", o.deadline_s), ("budget_usd", o.budget_usd),
                        ("preemption_rate_per_hour", o.preemption_rate_per_hour)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
            raise PlanError(name, msg("error.offers.not_negative", field=name, value=repr(value)))
    pool = filter_offers(offers, **filters)
    memo: MemoryMemo = {}
    hardware: _HardwareMemo = {}
    results = [evaluate_offer(plan, offer, inputs, memo=memo, options=o, hardware=hardware) for offer in pool]
    if o.budget_usd is not None:
        results = [r for r in results if not r.fits or r.within_budget]
    if not include_unfit:
        results = [r for r in results if r.fits]
    return sort_offers(results, sort)


__all__ = [
    "DEFAULT_PREEMPTION_RATE_PER_HOUR",
    "DEFAULT_SAFETY_MARGIN",
    "RESTART_OVERHEAD_S",
    "SORT_KEYS",
    "SHARDING_ORDER",
    "billed_hours",
    "billed_nodes",
    "Fit",
    "OfferOptions",
    "MemoryMemo",
    "OfferResult",
    "card_memory_bytes",
    "evaluate_offer",
    "evaluate_offers",
    "fit_plan",
    "offer_name",
    "plan_changes",
    "preemption_cost",
    "sort_offers",
    "usable_memory_bytes",
    "young_daly_interval_s",
]
