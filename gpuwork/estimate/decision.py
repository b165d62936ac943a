"""One answer for a plan: the card, count, nodes, sharding, rental mode, changes, time, cost and profile.

``decide(plan, inputs, offers, constraints) -> Decision`` is the one place where the profile, the advisor's best
answer, the offers' top row and the request are decided together, so every surface shows the same setup:

1. The advisor (``gpuwork.estimate.advisor.advise``) prices the plan as written on its cheapest fitting offer
   (``gpuwork.estimate.offers.evaluate_offers``) and the standard changes (checkpointing, micro-batch, 8-bit
   optimizer, sharding, offload; across nodes one node or hybrid sharding in a few shard groups) on theirs, under
   the user's constraints (vendor, card classes, rental modes, budget, deadline).
2. The answer is the cheapest of those that keeps the experiment (``best_outcome``: a shorter sequence trains
   something else, so it is never the answer by itself); the plan as written wins ties unless the offer had to
   choose its sharding, where the advisor's tie rule decides (fewer GPUs, less memory per GPU, no package beyond
   PyTorch: FSDP before ZeRO-3 at the same cost and time). When the plan as written
   fits no offer, the answer is the cheapest change that makes it fit; "nothing fits" only when no change does.
3. The rental profile (01-03) follows the answer's setup (``offer_profile``): several GPUs 03; one card 01 or 02
   as ``match_profile`` reasons for the run, else by the card's memory (80 GB or more: 02).

Example:
    >>> d = decide(TrainPlan(model="llama-3.1-8b", method="qlora"), resolve(plan), load_offers())
    >>> d.match.profile.profile_id, d.offer.offer.gpu_id == d.match.gpu_id
    ('01', True)

Limitations: the candidates are the advisor's (single changes and pairs of the best few); prices are the bundled,
illustrative catalog's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate.advisor import (
    Advice,
    Outcome,
    Suggestion,
    advise,
    sharding_words,
    state_bytes_per_param,
    tie_order,
)
from gpuwork.estimate.offers import OfferResult, offer_name
from gpuwork.estimate.profiles import ProfileMatch, get_profile, match_profile, rental_mode
from gpuwork.facts.catalog import GpuSpec, Link, Mode, Network, Offer, Region
from gpuwork.facts.inputs import Inputs
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.units import is_whole


@dataclass(frozen=True)
class Constraints:
    """What the user allows: offer filters of ``evaluate_offers`` (mode, gpu_class, region, ...), a vendor,
    a budget, a deadline and a rental period. None = no condition."""

    filters: dict[str, Any] = dataclasses.field(default_factory=dict)
    vendor: str | None = None  # "NVIDIA", "AMD"
    budget_usd: float | None = None
    deadline_s: float | None = None
    rental_period_s: float | None = None
    # "my hardware": N cards the user owns (count, card); the answer fits to them, reports time and no rental cost
    have: tuple[int, GpuSpec] | None = None

    def offers(self, offers: Iterable[Offer]) -> tuple[Offer, ...]:
        if self.have is not None:
            return (own_offer(*self.have),)
        pool = tuple(offers)
        if self.vendor:
            pool = tuple(o for o in pool if o.gpu.vendor.lower() == self.vendor.lower())
        return pool

    def offer_filters(self) -> dict[str, Any]:
        """Keywords for ``evaluate_offers``/``advise``: the filters, the budget and the deadline (with ``have``:
        the deadline only; the catalog's filters and the budget do not apply to owned cards)."""
        if self.have is not None:
            return {"deadline_s": self.deadline_s} if self.deadline_s is not None else {}
        out = dict(self.filters)
        if self.budget_usd is not None:
            out["budget_usd"] = self.budget_usd
        if self.deadline_s is not None:
            out["deadline_s"] = self.deadline_s
        return out


# The owned cards are priced at a nominal 1 per GPU-hour, so the advisor's ranking by cost is a ranking by GPU-hours
# on those cards (the count is fixed): the fastest setup that fits. No price is shown (Decision.cost_usd is None).
OWN_NOMINAL_PRICE_PER_GPU_HOUR = 1.0
OWN_PROVIDER = "own"


def own_offer(count: int, gpu: GpuSpec) -> Offer:
    """The user's own ``count`` x ``gpu`` as one node the advisor can fit to: PCIe between the cards (no peer link
    is assumed), no network, never preempted, no minimum rental."""
    if not is_whole(count, 1):
        raise PlanError("have", msg("error.decision.have_count", value=repr(count)))
    return Offer(offer_id=f"own-{gpu.gpu_id}-{count}x", provider=OWN_PROVIDER, gpu_id=gpu.gpu_id, gpu=gpu,
                 gpus_per_node=count, link=Link.PCIE, network=Network.NONE, mode=Mode.ON_DEMAND, region=Region.EU,
                 price_per_gpu_hour=OWN_NOMINAL_PRICE_PER_GPU_HOUR, min_rental_hours=0.0, as_of=date.min,
                 note="owned hardware")


@dataclass(frozen=True)
class Decision:
    """The one answer: the plan as it runs, the offer it runs on, the changes it needs and its profile."""

    plan: TrainPlan  # as the user wrote it
    changed_plan: TrainPlan  # with the advisor's change (the plan itself when none is needed)
    suggestion: Suggestion | None  # the advisor's change the answer takes, if any
    offer: OfferResult | None  # None: no offer fits, with or without a change
    match: ProfileMatch  # the profile, card, count, nodes, sharding, time and mode of the answer
    advice: Advice
    reasons: tuple[Msg, ...]
    own: bool = False  # on the user's own cards (Constraints.have): time only, no rental cost or mode

    @property
    def fits(self) -> bool:
        return self.offer is not None

    @property
    def run_plan(self) -> TrainPlan:
        """The plan as it runs on the offer (the count and sharding the offer needed)."""
        return self.offer.fit.plan if self.offer is not None else self.changed_plan

    @property
    def changes(self) -> tuple[Msg, ...]:
        """Every difference from the plan as written: the advisor's change, then the offer's count and sharding."""
        own = self.suggestion.changes if self.suggestion is not None else ()
        return own + (self.offer.fit.changes if self.offer is not None else ())

    @property
    def gpu_id(self) -> str | None:
        return self.offer.offer.gpu_id if self.offer is not None else None

    @property
    def gpus(self) -> int:
        return self.offer.fit.plan.gpus if self.offer is not None else 0

    @property
    def nodes(self) -> int:
        return self.offer.nodes if self.offer is not None else 0

    @property
    def mode(self) -> str | None:
        if self.own:
            return OWN_PROVIDER
        return self.offer.offer.mode.value if self.offer is not None else None

    @property
    def total_s(self) -> float | None:
        return self.offer.expected_total_s if self.offer is not None else None

    @property
    def cost_usd(self) -> float | None:
        if self.own:
            return None  # owned cards: no rental cost
        return self.offer.expected_cost_usd if self.offer is not None else None

    @property
    def key(self) -> tuple[Any, ...]:
        """(card, count, nodes, mode): what every surface must agree on."""
        return (self.gpu_id, self.gpus, self.nodes, self.mode)

    @property
    def summary(self) -> Msg:
        if self.offer is None:
            if self.own:
                return msg("decision.none_own", need_bytes=self.advice.baseline.single_gpu_bytes)
            return msg("decision.none", need_bytes=self.advice.baseline.single_gpu_bytes)
        o = self.offer
        # the sharding the answer was sized with, and what it keeps per trained parameter
        sharding = msg("decision.sharding", sharding=sharding_words(self.run_plan)) if self.gpus > 1 else None
        if self.own:
            return msg("decision.answer_own", gpus=self.gpus, gpu=o.offer.gpu.display_name, sharding=sharding,
                       memory_bytes=o.fit.device_total_bytes, usable_bytes=o.fit.usable_bytes,
                       changes=msg("decision.with", changes=self.changes) if self.changes else None,
                       run_s=self.total_s)
        return msg("decision.answer", gpus=self.gpus, gpu=o.offer.gpu.display_name,
                   where=msg("decision.nodes", nodes=self.nodes) if self.nodes > 1 else None,
                   sharding=sharding, offer=offer_name(o.offer),
                   profile_id=self.match.profile.profile_id if self.match.profile else "",
                   changes=msg("decision.with", changes=self.changes) if self.changes else None,
                   run_s=self.total_s, cost_usd=self.cost_usd)

    def suggestion_line(self, s: Suggestion) -> Msg:
        """One of the advisor's suggestions as this answer says it: on owned cards memory and time only (no price
        or rental mode), else the advisor's own summary."""
        if not self.own:
            return s.summary
        return msg("decision.own_suggestion", changes=s.changes, memory_bytes=s.outcome.memory_per_gpu_bytes,
                   gpus=s.outcome.run_plan.gpus, run_s=s.outcome.total_s)

    def as_dict(self) -> dict[str, Any]:
        return {"fits": self.fits, "gpu_id": self.gpu_id, "gpus": self.gpus, "nodes": self.nodes,
                "sharding": self.run_plan.sharding.value,
                "state_bytes_per_param": state_bytes_per_param(self.run_plan),
                "mode": self.mode, "total_s": self.total_s,
                "cost_usd": self.cost_usd, "offer_id": self.offer.offer.offer_id if self.offer else None,
                "profile_id": self.match.profile.profile_id if self.match.profile else None,
                "suggestion": self.suggestion.key if self.suggestion else None,
                "changes": [c.as_dict() for c in self.changes], "plan": self.changed_plan.as_dict(),
                "run_plan": self.run_plan.as_dict(), "summary": self.summary.as_dict(),
                "reasons": [r.as_dict() for r in self.reasons]}


def best_outcome(advice: Advice, deadline_s: float | None = None) -> Suggestion | None | Outcome:
    """The advisor's best answer: the plan as written (its ``baseline``) or one suggestion, whichever runs
    cheapest and keeps the experiment; with a deadline, those that meet it first. At the same cost the plan as
    written wins when it runs with the sharding the user chose; when the offer chose it (the plan did not fit as
    written), the faster setup wins, then the advisor's tie rule (``tie_order``: fewer GPUs, less memory per GPU,
    no package beyond PyTorch), so FSDP wins over ZeRO-3 when they tie and FSDP needs less memory.
    Returns the Suggestion, the baseline Outcome, or None when nothing fits."""
    candidates: list[tuple[tuple[Any, ...], Suggestion | Outcome]] = []
    base = advice.baseline
    if base.fits:
        as_written = base.run_plan.sharding is advice.plan.sharding
        candidates.append((_order(base, deadline_s, 0, as_written), base))
    for rank, s in enumerate(advice.suggestions, start=1):
        if not s.changes_experiment and s.outcome.fits:
            candidates.append((_order(s.outcome, deadline_s, rank), s))
    if not candidates:
        return None
    return min(candidates, key=lambda c: c[0])[1]


def _order(out: Outcome, deadline_s: float | None, rank: int, as_written: bool = False) -> tuple[Any, ...]:
    cost = out.cost_usd if out.cost_usd is not None else math.inf
    late = deadline_s is not None and (out.total_s is None or out.total_s > deadline_s)
    total = out.total_s if out.total_s is not None else math.inf
    return (late, cost, not as_written, total, *tie_order(out), rank)


def offer_profile(match: ProfileMatch, offer: OfferResult, offers: Iterable[Offer] | None = None,
                  period_s: float | None = None) -> ProfileMatch:
    """``match`` with the setup of ``offer``: its card, GPU count, nodes, sharding, memory, time, changes and the
    offer's rental mode, so the profile names what the offers, the advice and the request name. The profile: several
    GPUs 03; one card the run's 01 or 02 (``match_profile``), else 02 for 80 GB or more, else 01. The rental mode's
    reasoning (``rental_mode``) is kept only when it is the offer's mode."""
    gpu = offer.offer.gpu
    fitted = offer.fit.plan
    if fitted.gpus > 1:
        profile = get_profile("03")
    elif match.profile is not None and match.profile.profile_id in ("01", "02"):
        profile = match.profile
    else:
        profile = get_profile("02" if gpu.memory_gb >= 80 else "01")
    profile = dataclasses.replace(profile, mode=offer.offer.mode)
    rental = None
    if offer.time is not None and offers is not None:
        rental = rental_mode(offer.time.total_s, offer.offer.gpu_id, fitted.gpus, offers, period_s=period_s)
        if rental.mode is not offer.offer.mode:
            rental = None  # the filters chose another mode (e.g. interruptible): the offer's own line says why
    return dataclasses.replace(
        match, profile=profile, gpu_id=offer.offer.gpu_id, gpu_name=gpu.display_name, gpus=fitted.gpus,
        nodes=offer.nodes, sharding=fitted.sharding, memory_per_gpu_bytes=offer.fit.device_total_bytes,
        usable_per_gpu_bytes=offer.fit.usable_bytes, time=offer.time, fitted_plan=fitted, changes=offer.fit.changes,
        checks=profile.checks, rental=rental,
        reasons=offer.reasons if offer.fit.reason in offer.reasons else (offer.fit.reason, *offer.reasons))


def decide(plan: TrainPlan, inputs: Inputs, offers: Iterable[Offer], constraints: Constraints | None = None, *,
           advice: Advice | None = None, time_options: dict[str, Any] | None = None, **advise_options: Any) -> Decision:
    """The one answer for ``plan`` under ``constraints`` (see the module docstring).

    Args:
        plan: the run as the user wrote it.
        inputs: its facts (``gpuwork.facts.resolve(plan)``).
        offers: the catalog (``gpuwork.facts.catalog.load_offers()``).
        constraints: filters, vendor, budget, deadline, rental period (None: none).
        advice: a precomputed ``advise`` of the same plan, offers and constraints (computed when omitted).
        time_options, advise_options: passed to ``advise`` (safety_margin, preemption_rate_per_hour, limit).
    """
    c = constraints or Constraints()
    pool = c.offers(offers)
    if advice is None:
        advice = advise(plan, pool, inputs, time_options=time_options, **advise_options, **c.offer_filters())
    best = best_outcome(advice, c.deadline_s)
    suggestion = best if isinstance(best, Suggestion) else None
    changed = suggestion.plan if suggestion is not None else plan
    outcome = suggestion.outcome if suggestion is not None else advice.baseline
    offer = outcome.offer if best is not None else None
    run_match = match_profile(changed, inputs, time_options=time_options, offers=pool,
                              rental_period_s=c.rental_period_s)
    reasons: list[Msg] = []
    own = c.have is not None
    if offer is None:
        match = dataclasses.replace(run_match, profile=None, gpu_id=None, gpu_name=None, gpus=0, nodes=0,
                                    fitted_plan=None, time=None, rental=None, checks=())
        reasons.append(msg("decision.none_own" if own else "decision.none", need_bytes=advice.baseline.single_gpu_bytes))
    else:
        # owned cards are not rented: no rental mode to reason about
        match = offer_profile(run_match, offer, None if own else pool, c.rental_period_s)
        if suggestion is not None:
            match = dataclasses.replace(match, changes=suggestion.changes + match.changes)
            why = "decision.why_change" if advice.baseline.fits else "decision.why_fit_own" if own else "decision.why_fit"
            reasons.append(msg(why, changes=suggestion.changes))
        if own:
            reasons.append(msg("decision.why_own", run_s=offer.expected_total_s))
        else:
            reasons.append(msg("decision.why_offer", offer=offer_name(offer.offer),
                               cost_usd=offer.expected_cost_usd, run_s=offer.expected_total_s))
        match = dataclasses.replace(match, reasons=(*reasons, *match.reasons))
    return Decision(plan=plan, changed_plan=changed, suggestion=suggestion, offer=offer, match=match,
                    advice=advice, reasons=tuple(reasons), own=own)


__all__ = ["OWN_NOMINAL_PRICE_PER_GPU_HOUR", "Constraints", "Decision", "best_outcome", "decide", "offer_profile",
           "own_offer"]
