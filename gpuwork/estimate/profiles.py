"""The three rental profiles of the product brief, and which one a plan belongs to.

- 01 "LoRA/QLoRA and a short check": 1 GPU with 24-48 GB, rented on demand.
- 02 "regular fine-tuning": 1 server GPU with 80 GB, reserved; check checkpoints and data feed speed.
- 03 "full weight update": 2+ identical GPUs with 80 GB+ each, reserved; check the sharding strategy
  and the exchange between GPUs and nodes.

``match_profile(plan) -> ProfileMatch`` decides by what the plan needs, not by its method name:
memory per GPU (gpuwork.estimate.memory against the driver-reported memory of a reference card of each
profile, minus the offers' safety margin) and, for the short-check profile, the run time on that
card (gpuwork.estimate.timing). Every decision comes with reasons as catalog messages (codes with their
numbers, rendered in English or Russian by gpuwork.present.messages): why this profile, why not the
others, and what to check before renting.

Example:
    >>> match_profile(TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=2048)).profile.profile_id
    '01'

Limitations: reference cards stand for their class (RTX 4090 for 24 GB, L40S for 48 GB, H100 SXM
for 80 GB); a plan that fits an 80 GB card only with offloading is matched without offloading.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gpuwork.estimate.offers import (
    DEFAULT_SAFETY_MARGIN,
    MemoryMemo,
    billed_hours,
    billed_nodes,
    fit_plan,
    plan_changes,
    usable_memory_bytes,
)
from gpuwork.estimate.timing import TimeEstimate, estimate_time
from gpuwork.facts.catalog import GpuSpec, Mode, Network, Offer
from gpuwork.facts.inputs import Inputs
from gpuwork.facts.spec import ModelSpec
from gpuwork.message import Msg, msg
from gpuwork.plan import Sharding, TrainPlan
from gpuwork.units import HOUR_S

# A "short check" (profile 01) is a run that ends within two days on its card: beyond that the
# brief's "regular fine-tuning" profile (a reserved 80 GB card) applies. A product assumption.
SHORT_RUN_MAX_S = 48 * HOUR_S
# Runs longer than a month's rental on one 80 GB card get a note to consider more GPUs (profile 03).
LONG_RUN_NOTE_S = 30 * 24 * HOUR_S
# Largest multi-GPU setup profile 03 searches: 8 nodes of 8 GPUs.
MAX_GPUS_PROFILE_03 = 64
GPUS_PER_NODE_PROFILE_03 = 8
# Without prices (no offers given), reserving pays off after this much use: a one-month reservation
# (720 h) at the catalog's typical 35 % discount costs what 0.65 x 720 = 468 hours on demand cost
# (data/catalog.csv notes: "on-demand typical minus 35% for a 1-month commitment"). Assumption.
TYPICAL_RESERVED_BREAK_EVEN_S = 0.65 * 720 * HOUR_S


@dataclass(frozen=True)
class RentalMode:
    """How to rent for a run: on demand (by the hour) or reserved, and the hours where reserving starts to pay."""

    mode: Mode
    break_even_s: float | None  # hours of use above which the reservation is cheaper; None = no reserved offer
    reason: Msg


def _node_cost_usd(hours: float, offer: Offer, gpus: int) -> float:
    return billed_hours(hours, offer) * offer.price_per_gpu_hour * billed_nodes(gpus, offer)[1]


def rental_mode(run_s: float, gpu_id: str, gpus: int = 1, offers: Iterable[Offer] | None = None, *,
                period_s: float | None = None) -> RentalMode:
    """On demand or reserved for a run of ``run_s`` on ``gpus`` GPUs of ``gpu_id``: the mode follows the run length.

    Reserved only when the hours used (the run, or the rental period when one is given and longer) cost less
    reserved (whole periods, ``offers.billed_hours``) than on demand; the break-even is the hours at which the
    cheapest reservation's first period costs what the cheapest on-demand node costs. Worked example (bundled
    catalog, one H100 SXM): reserved 2.28 $/h x 720 h = 1,641.60 $; on demand 2.40 $/h -> 684 h. A 2-hour run
    is on demand. Without offers: TYPICAL_RESERVED_BREAK_EVEN_S.
    """
    used_s = max(run_s, period_s or 0.0)
    if offers is None:
        reserved = used_s >= TYPICAL_RESERVED_BREAK_EVEN_S
        return RentalMode(Mode.RESERVED if reserved else Mode.ON_DEMAND, TYPICAL_RESERVED_BREAK_EVEN_S,
                          msg("profile.mode.reserved_typical" if reserved else "profile.mode.on_demand_typical",
                              used_s=used_s, break_even_s=TYPICAL_RESERVED_BREAK_EVEN_S))
    pool = [o for o in offers if o.gpu_id == gpu_id and (o.gpus_per_node >= gpus or o.network is not Network.NONE)]
    hours = used_s / HOUR_S
    on_demand = sorted(((_node_cost_usd(hours, o, gpus), o) for o in pool if o.mode is Mode.ON_DEMAND),
                       key=lambda x: (x[0], x[1].offer_id))
    reserved_offers = sorted(((_node_cost_usd(hours, o, gpus), o) for o in pool if o.mode is Mode.RESERVED),
                             key=lambda x: (x[0], x[1].offer_id))
    if not reserved_offers:
        return RentalMode(Mode.ON_DEMAND, None, msg("profile.mode.no_reserved", used_s=used_s))
    if not on_demand:
        return RentalMode(Mode.RESERVED, None, msg("profile.mode.only_reserved", used_s=used_s))
    od_cost, od = on_demand[0]
    res_cost, res = reserved_offers[0]
    od_per_hour = od.price_per_gpu_hour * billed_nodes(gpus, od)[1]
    break_even_s = _node_cost_usd(0.0, res, gpus) / od_per_hour * HOUR_S
    params = dict(used_s=used_s, break_even_s=break_even_s, reserved_usd=res_cost, on_demand_usd=od_cost,
                  period_s=res.min_rental_hours * HOUR_S)
    if res_cost < od_cost:
        return RentalMode(Mode.RESERVED, break_even_s, msg("profile.mode.reserved", **params))
    return RentalMode(Mode.ON_DEMAND, break_even_s, msg("profile.mode.on_demand", **params))


@dataclass(frozen=True)
class Profile:
    """One rental profile of the product brief (its name, GPU class and checks are catalog messages)."""

    profile_id: str
    name: Msg
    gpus: Msg  # the GPU class, in words
    mode: Mode
    reference_gpu_ids: tuple[str, ...]  # cards that stand for the profile's memory class, smallest first
    checks: tuple[Msg, ...]  # what to check before renting

    def as_dict(self) -> dict[str, Any]:
        return {"profile_id": self.profile_id, "name": self.name.as_dict(), "gpus": self.gpus.as_dict(),
                "mode": self.mode.value, "reference_gpu_ids": list(self.reference_gpu_ids),
                "checks": [c.as_dict() for c in self.checks]}


PROFILES: tuple[Profile, ...] = (
    Profile("01", msg("profile.name.01"), msg("profile.gpus.01"), Mode.ON_DEMAND, ("rtx4090", "l40s"),
            (msg("profile.check.trial"),)),
    Profile("02", msg("profile.name.02"), msg("profile.gpus.02"), Mode.RESERVED, ("h100_sxm",),
            (msg("profile.check.checkpoints"), msg("profile.check.data_feed"))),
    Profile("03", msg("profile.name.03"), msg("profile.gpus.03"), Mode.RESERVED, ("h100_sxm",),
            (msg("profile.check.sharding"), msg("profile.check.interconnect"))),
)


def get_profile(profile_id: str) -> Profile:
    for profile in PROFILES:
        if profile.profile_id == profile_id:
            return profile
    raise KeyError(profile_id)


@dataclass(frozen=True)
class ProfileMatch:
    """The profile a plan belongs to (or None), the setup behind it and the reasons (catalog messages)."""

    plan: TrainPlan
    profile: Profile | None
    gpu_id: str | None  # the reference card the decision used
    gpu_name: str | None
    gpus: int  # GPUs the profile's setup needs
    nodes: int
    sharding: Sharding
    memory_per_gpu_bytes: int  # device total (what nvidia-smi would show) in that setup
    usable_per_gpu_bytes: int
    single_gpu_bytes: int  # what one GPU would need without sharding
    time: TimeEstimate | None  # on the reference card(s)
    reasons: tuple[Msg, ...]
    rejected: dict[str, Msg] = field(default_factory=dict)  # profile id -> why not
    checks: tuple[Msg, ...] = ()
    fitted_plan: TrainPlan | None = None  # the plan as the profile runs it (GPU count, sharding, ...)
    changes: tuple[Msg, ...] = ()  # what differs from the plan (change.gc_on, change.gpus 1 -> 16, ...)
    # how to rent (profile.mode says the same): from the run length, not the profile's name (rental_mode)
    rental: RentalMode | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.as_dict() if self.profile else None,
            "changes": [c.as_dict() for c in self.changes],
            "gpu_id": self.gpu_id, "gpu_name": self.gpu_name, "gpus": self.gpus, "nodes": self.nodes,
            "sharding": self.sharding.value, "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
            "usable_per_gpu_bytes": self.usable_per_gpu_bytes, "single_gpu_bytes": self.single_gpu_bytes,
            "total_s": self.time.total_s if self.time else None,
            "step_time_s": self.time.step_time_s if self.time else None,
            "reasons": [r.as_dict() for r in self.reasons],
            "rejected": {k: v.as_dict() for k, v in self.rejected.items()},
            "checks": [c.as_dict() for c in self.checks],
            "rental": ({"mode": self.rental.mode.value, "break_even_s": self.rental.break_even_s,
                        "reason": self.rental.reason.as_dict()} if self.rental else None),
        }


def _multi_gpu_fit(plan: TrainPlan, gpu: GpuSpec, safety_margin: float, spec: ModelSpec,
                   memo: MemoryMemo) -> tuple[TrainPlan | None, int]:
    """Fewest GPUs (>= 2) of ``gpu`` and the sharding that fit: inside one node first, then whole
    nodes with ZeRO-3. Returns (plan or None, bytes per GPU of the fit or of the closest attempt)."""
    base = plan.replace(offload_optimizer=False, offload_params=False)
    start = base.replace(gpus=max(2, plan.gpus))
    fit = fit_plan(start, gpu, max_gpus=max(GPUS_PER_NODE_PROFILE_03, start.gpus), safety_margin=safety_margin,
                   spec=spec, memo=memo)
    if fit.fits:
        return fit.plan, fit.device_total_bytes
    closest = fit.device_total_bytes
    for n in range(2 * GPUS_PER_NODE_PROFILE_03, MAX_GPUS_PROFILE_03 + 1, GPUS_PER_NODE_PROFILE_03):
        fit = fit_plan(base.replace(gpus=n, sharding=Sharding.ZERO3), gpu, max_gpus=n,
                       safety_margin=safety_margin, spec=spec, memo=memo)
        closest = min(closest, fit.device_total_bytes)
        if fit.fits:
            return fit.plan, fit.device_total_bytes
    return None, closest


class _Cards(NamedTuple):
    """The profiles' reference cards."""

    card24: GpuSpec
    card48: GpuSpec
    card80: GpuSpec


@dataclass
class _Context:
    plan: TrainPlan  # as the user gave it
    inputs: Inputs
    safety_margin: float
    short_run_max_s: float
    opts: dict[str, Any]
    memo: MemoryMemo
    cards: _Cards
    rejected: dict[str, Msg] = field(default_factory=dict)
    offers: tuple[Offer, ...] | None = None  # for the rental mode's break-even (None: typical discount)
    period_s: float | None = None  # the rental period asked for, if any

    def result(self, profile: Profile | None, gpu: GpuSpec | None, fitted: TrainPlan | None, memory: int,
               single: int, time: TimeEstimate | None, reasons: list[Msg], changes: tuple[Msg, ...]) -> ProfileMatch:
        gpus = fitted.gpus if fitted is not None and profile is not None else 0
        if profile is not None:  # an earlier attempt may have rejected the profile that now matches
            self.rejected.pop(profile.profile_id, None)
        rental = None
        if profile is not None and gpu is not None and time is not None:
            rental = rental_mode(time.total_s, gpu.gpu_id, fitted.gpus if fitted else 1, self.offers,
                                 period_s=self.period_s)
            # the profile's usual mode gives way to what the run length makes cheaper (a 2-hour job is never
            # a monthly reservation)
            profile = dataclasses.replace(profile, mode=rental.mode)
        return ProfileMatch(
            plan=self.plan, profile=profile, gpu_id=gpu.gpu_id if gpu else None,
            gpu_name=gpu.display_name if gpu else None, gpus=gpus,
            nodes=-(-gpus // GPUS_PER_NODE_PROFILE_03) if gpus else 0,
            sharding=(fitted or self.plan).sharding, memory_per_gpu_bytes=memory,
            usable_per_gpu_bytes=usable_memory_bytes(gpu, self.safety_margin) if gpu else 0,
            single_gpu_bytes=single, time=time, reasons=tuple(reasons), rejected=dict(self.rejected),
            checks=profile.checks if profile else (), fitted_plan=fitted if profile is not None else None,
            changes=changes, rental=rental)


def _card_gb(gpu: GpuSpec) -> int:
    """The marketed size of a reference card (24, 48, 80 GB), as the profiles name their classes."""
    return round(gpu.memory_gb)


def _one_gpu(ctx: _Context, plan: TrainPlan, need: int, usable80: int, prefix: list[Msg],
             changes: tuple[Msg, ...]) -> ProfileMatch:
    """Profile 01 or 02 for a plan that fits one 80 GB card."""
    card24, card48, card80 = ctx.cards
    p01, p02, _ = PROFILES
    fit24 = fit_plan(plan, card24, max_gpus=1, safety_margin=ctx.safety_margin, spec=ctx.inputs.spec, memo=ctx.memo)
    fit48 = fit_plan(plan, card48, max_gpus=1, safety_margin=ctx.safety_margin, spec=ctx.inputs.spec, memo=ctx.memo)
    # the caller may have said it already, more precisely (several GPUs are not needed once checkpointing is on)
    ctx.rejected.setdefault("03", msg("profile.reject03.one_gpu_enough", need_bytes=need, card_gb=_card_gb(card80)))
    small_fit = fit24 if fit24.fits else fit48 if fit48.fits else None
    if small_fit is not None:
        small = card24 if small_fit is fit24 else card48
        time = estimate_time(plan, small, ctx.inputs, **ctx.opts)
        note = None
        if not plan.uses_adapters:
            note = msg("profile.small_model", method=plan.method, params=ctx.inputs.spec.params_total)
        usable = usable_memory_bytes(small, ctx.safety_margin)
        if time.total_s <= ctx.short_run_max_s:
            reasons = prefix + [
                msg("profile.fits_small_card", card_gb=_card_gb(small), note=note,
                    need_bytes=small_fit.device_total_bytes, usable_bytes=usable, gpu=small.display_name),
                msg("profile.short_run", run_s=time.total_s, gpu=small.display_name, max_s=ctx.short_run_max_s)]
            ctx.rejected["02"] = msg("profile.reject02.oversized", card_gb=_card_gb(card80))
            return ctx.result(p01, small, plan, small_fit.device_total_bytes, need, time, reasons, changes)
        ctx.rejected["01"] = msg("profile.reject01.too_long", card_gb=_card_gb(small), run_s=time.total_s,
                                 gpu=small.display_name, max_s=ctx.short_run_max_s)
    else:
        ctx.rejected["01"] = msg("profile.reject01.too_big_for_card", need_bytes=fit48.device_total_bytes,
                                 usable_bytes=fit48.usable_bytes, card_gb=_card_gb(card48), gpu=card48.display_name)
    time = estimate_time(plan, card80, ctx.inputs, **ctx.opts)
    reasons = prefix + [msg("profile.fits_server_card", card_gb=_card_gb(card80), need_bytes=need,
                            usable_bytes=usable80, gpu=card80.display_name),
                        msg("profile.regular_run", run_s=time.total_s)]
    if time.total_s > LONG_RUN_NOTE_S:
        reasons.append(msg("profile.long_run"))
    return ctx.result(p02, card80, plan, need, need, time, reasons, changes)


def _several_gpus(ctx: _Context, plan: TrainPlan, need: int, why: Msg, prefix: list[Msg],
                  changes: tuple[Msg, ...]) -> ProfileMatch:
    """Profile 03 (or None) for a plan that needs or asks for several 80 GB GPUs."""
    card80 = ctx.cards.card80
    p03 = PROFILES[2]
    fitted, memory = _multi_gpu_fit(plan, card80, ctx.safety_margin, ctx.inputs.spec, ctx.memo)
    ctx.rejected.setdefault("02", why)
    if fitted is None:
        nothing = msg("profile.none_fits", gpus=MAX_GPUS_PROFILE_03, gpu=card80.display_name, best_bytes=memory)
        ctx.rejected["03"] = nothing
        return ctx.result(None, None, None, memory, need, None, [*prefix, why, nothing], changes)
    nodes = -(-fitted.gpus // GPUS_PER_NODE_PROFILE_03)
    network = Network.IB_NDR_400G
    kwargs: dict[str, Any] = {"nodes": nodes, "network": network} if nodes > 1 else {}
    time = estimate_time(fitted, card80, ctx.inputs, **kwargs, **ctx.opts)
    where = (msg("profile.where.one_node") if nodes == 1 else
             msg("profile.where.nodes", nodes=nodes, per_node=GPUS_PER_NODE_PROFILE_03, network=network))
    usable = usable_memory_bytes(card80, ctx.safety_margin)
    reasons = [*prefix, why,
               msg("profile.fits_several", gpus=fitted.gpus, gpu=card80.display_name, where=where,
                   sharding=fitted.sharding, need_bytes=memory, usable_bytes=usable),
               msg("profile.several_time", run_s=time.total_s, efficiency=time.comm.scaling_efficiency,
                   verdict=time.comm.verdict)]
    return ctx.result(p03, card80, fitted, memory, need, time, reasons, changes + plan_changes(plan, fitted))


def match_profile(plan: TrainPlan, inputs: Inputs, *, safety_margin: float = DEFAULT_SAFETY_MARGIN,
                  short_run_max_s: float = SHORT_RUN_MAX_S,
                  time_options: dict[str, Any] | None = None, offers: Iterable[Offer] | None = None,
                  rental_period_s: float | None = None) -> ProfileMatch:
    """Which of the three rental profiles suits ``plan``, with the reasons.

    Rules, in order:
    1. A plan that asks for 2+ GPUs is profile 03 (its GPU count and sharding, raised until it fits).
    2. A plan that fits one 80 GB card is profile 01 when it also fits a 24-48 GB card and runs within
       ``short_run_max_s`` there, else profile 02.
    3. A plan that fits one 80 GB card only with gradient checkpointing: as 2, with that change.
    4. Otherwise profile 03: the fewest 80 GB GPUs and the sharding that fit (up to
       MAX_GPUS_PROFILE_03, with gradient checkpointing if nothing fits without it), or no profile.

    Args:
        plan: the run (dataset_tokens and epochs set the run time).
        safety_margin: fraction of each card's memory kept free (as in gpuwork.estimate.offers).
        short_run_max_s: longest run that still counts as a short check (profile 01).
        inputs: the plan's facts (``gpuwork.facts.resolve(plan)``): model, GPU table, efficiency.
        time_options: passed to ``estimate_time`` (mfu, calibration, ...).
        offers: the catalog, for the rental mode's break-even (``rental_mode``); None = the typical discount.
        rental_period_s: the rental period asked for (a month's rental may make reserving cheaper).

    The match's ``profile.mode`` and ``rental`` follow the run length (``rental_mode``), not the profile's name.
    """
    spec = inputs.spec
    card24, card48 = (inputs.gpu(g) for g in PROFILES[0].reference_gpu_ids)
    card80 = inputs.gpu(PROFILES[1].reference_gpu_ids[0])
    ctx = _Context(plan, inputs, safety_margin, short_run_max_s, dict(time_options or {}), {},
                   _Cards(card24, card48, card80), offers=None if offers is None else tuple(offers),
                   period_s=rental_period_s)
    single = plan.single_gpu()
    fit80 = fit_plan(single, card80, max_gpus=1, safety_margin=safety_margin, spec=spec, memo=ctx.memo)
    need = fit80.device_total_bytes
    usable80 = fit80.usable_bytes
    too_big = msg("profile.too_big_for_one", card_gb=_card_gb(card80), need_bytes=need, usable_bytes=usable80,
                  gpu=card80.display_name)

    if plan.gpus > 1:
        one_card = msg("profile.one_card_would_do", card_gb=_card_gb(card80), need_bytes=need) if fit80.fits else None
        why = msg("profile.plan_uses_gpus", gpus=plan.gpus, one_card=one_card)
        ctx.rejected["01"] = msg("profile.reject01.several_gpus")
        return _several_gpus(ctx, plan, need, why, [], ())
    if fit80.fits:
        return _one_gpu(ctx, single, need, usable80, [], ())

    gc_changes = (msg("change.grad_checkpointing_on"),)
    if not plan.grad_checkpointing:
        single_gc = single.replace(grad_checkpointing=True)
        fit80_gc = fit_plan(single_gc, card80, max_gpus=1, safety_margin=safety_margin, spec=spec, memo=ctx.memo)
        if fit80_gc.fits:
            ctx.rejected["03"] = msg("profile.reject03.checkpointing_enough")
            return _one_gpu(ctx, single_gc, fit80_gc.device_total_bytes, fit80_gc.usable_bytes, [msg("profile.fits_one_with_checkpointing", too_big=too_big)],
                            gc_changes)

    ctx.rejected["01"] = msg("profile.reject01.too_big", need_bytes=need)
    match = _several_gpus(ctx, plan, need, too_big, [], ())
    if match.profile is None and not plan.grad_checkpointing:
        retry = _several_gpus(ctx, plan.replace(grad_checkpointing=True), need, too_big,
                              [msg("profile.fits_several_with_checkpointing")], gc_changes)
        if retry.profile is not None:
            return retry
    return match


__all__ = [
    "LONG_RUN_NOTE_S",
    "MAX_GPUS_PROFILE_03",
    "PROFILES",
    "SHORT_RUN_MAX_S",
    "TYPICAL_RESERVED_BREAK_EVEN_S",
    "Profile",
    "ProfileMatch",
    "RentalMode",
    "get_profile",
    "match_profile",
    "rental_mode",
]
