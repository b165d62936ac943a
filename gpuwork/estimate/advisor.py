"""The advisor: which standard memory savers make a plan fit, or fit a cheaper card, and what each costs.

``advise(plan, offers, inputs) -> Advice`` tries the usual changes one at a time and in pairs — gradient
checkpointing (or, where it is on, on one block in 2 or 4: spends memory for speed), a smaller micro-batch with more
accumulation (the same tokens per step), an 8-bit or paged
8-bit optimizer, QLoRA instead of LoRA, sharding (DeepSpeed ZeRO-2, ZeRO-3, PyTorch FSDP full shard) or CPU offload
on several GPUs, a larger micro-batch with less accumulation (spends memory for speed), a run across nodes kept inside one
node or sharded hybrid (hsdp, hsdp-zero2 in shard groups of one node, two nodes and the smallest group whose states
fit: ``hybrid_groups``), a shorter sequence (flagged: it changes the experiment) — prices each changed plan on its cheapest
fitting offer of the catalog (``gpuwork.estimate.offers.evaluate_offers``: whole run, billing, preemptions)
and returns the few that make the run cheaper (or run it on a smaller setup for at most a little more),
ranked by that cost (changes that alter the experiment after the others), each with its memory per GPU, time and
cost against the plan as it is, the changed plan (to apply with one click) and which other changes it
combines with, and its own effect on the same card (``SameCard``: memory and time of the plan and the change on one
offer). When too few single changes fit, the ones that free the most memory are paired too. The rental mode comes
from the same ranking: for a run of hours an on-demand or
interruptible offer is cheaper than a reservation billed in whole periods, so it wins.

Example:
    >>> advice = advise(TrainPlan(model="mistral-7b", method="qlora"), load_offers(), resolve(plan))
    >>> advice.suggestions[0].key, advice.suggestions[0].gpu_id
    ('grad_checkpointing', 'rtx3090')

Limitations: the changes are the standard ones listed above, tried singly and in pairs of the best few
(not every combination); costs use the bundled, illustrative catalog; a shorter sequence or a bigger
global batch (more data-parallel GPUs) changes the experiment, and the suggestion says so.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate.memory import estimate_memory, state_bytes_per_param
from gpuwork.estimate.offers import (
    DEFAULT_PREEMPTION_RATE_PER_HOUR,
    DEFAULT_SAFETY_MARGIN,
    OfferResult,
    evaluate_offer,
    evaluate_offers,
    offer_name,
    usable_memory_bytes,
)
from gpuwork.facts.catalog import Offer
from gpuwork.facts.inputs import Inputs
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, Optimizer, Sharding, TrainPlan, even_groups
from gpuwork.units import is_whole

# A change is suggested only when it makes the whole run at least this much cheaper (or makes it fit at all):
# below that the difference is inside the estimate's error and not worth a change to the user's setup.
MIN_SAVING = 0.05
# ... or when it runs on a smaller setup (less GPU memory rented: fewer or smaller cards) for at most this much
# more: one 24 GB card instead of a 4-GPU node is worth a few per cent to most people.
MAX_EXTRA_COST_SMALLER = 0.10
# A change that frees less than this share of one GPU's memory cannot unlock a smaller card: not priced.
MIN_MEMORY_SAVING = 0.02
# How many suggestions to return, and how many of the best single changes are paired with each other.
DEFAULT_LIMIT = 5
PAIR_FROM_BEST = 5
# GPU counts tried for sharding and offload (one node of the usual 8-GPU servers at most).
SHARDING_GPUS = (2, 4, 8)
# The shortest sequence suggested, in tokens (shorter ones rarely hold a useful training example).
MIN_SEQ_LEN = 256


@dataclass(frozen=True)
class Outcome:
    """A plan on its cheapest fitting offer (``offer`` None when no offer of the catalog fits it)."""

    plan: TrainPlan  # the plan as given
    single_gpu_bytes: int  # device total on one GPU, before any sharding an offer adds
    offer: OfferResult | None
    # per GPU as run: the weights, gradients, optimizer states and sharding buffers, the part the sharding decides
    states_per_gpu_bytes: int = 0

    @property
    def fits(self) -> bool:
        return self.offer is not None

    @property
    def run_plan(self) -> TrainPlan:
        """The plan as it runs on the offer (GPU count and sharding the offer needed)."""
        return self.offer.fit.plan if self.offer is not None else self.plan

    @property
    def memory_per_gpu_bytes(self) -> int:
        return self.offer.fit.device_total_bytes if self.offer is not None else self.single_gpu_bytes

    @property
    def total_s(self) -> float | None:
        return self.offer.expected_total_s if self.offer is not None else None

    @property
    def cost_usd(self) -> float | None:
        return self.offer.expected_cost_usd if self.offer is not None else None

    def as_dict(self) -> dict[str, Any]:
        o = self.offer
        return {"fits": self.fits, "plan": self.plan.as_dict(), "run_plan": self.run_plan.as_dict(),
                "single_gpu_bytes": self.single_gpu_bytes, "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
                "total_s": self.total_s, "cost_usd": self.cost_usd,
                "offer_id": o.offer.offer_id if o else None, "provider": o.offer.provider if o else None,
                "gpu_id": o.offer.gpu_id if o else None, "gpu_name": o.offer.gpu.display_name if o else None,
                "gpus": o.fit.plan.gpus if o else None, "billed_gpus": o.billed_gpus if o else None,
                "mode": o.offer.mode.value if o else None}


@dataclass(frozen=True)
class SameCard:
    """A change's own effect on one card: the plan as it is and the changed plan on the same offer (the plan's cheapest,
    or, when the plan fits none, the change's), so the change is not confused with a change of card."""

    gpu: str  # display name
    gpus: int
    memory_change: float  # per GPU, changed vs as it is (−0.4 = 40 % less)
    time_change: float | None  # None when the plan as it is does not fit that card

    @property
    def summary(self) -> Msg:
        time = (msg("advice.same_card.time", time_sign=_sign(self.time_change), time_change=abs(self.time_change))
                if self.time_change is not None else None)
        return msg("advice.same_card", gpus=self.gpus, gpu=self.gpu, memory_sign=_sign(self.memory_change),
                   memory_change=abs(self.memory_change), time=time)

    def as_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "gpus": self.gpus, "memory_change": self.memory_change,
                "time_change": self.time_change}


@dataclass(frozen=True)
class Suggestion:
    """One change (or a pair) to the plan, priced on its cheapest fitting offer, against the plan as it is."""

    key: str  # "grad_checkpointing", "micro_batch_1", "optimizer_adamw-8bit", "zero3_x4", "a+b" for a pair
    group: str  # what it changes: checkpointing, micro_batch, optimizer, method, sharding, sequence (pairs: "a+b")
    changes: tuple[Msg, ...]  # the change in words (advice.change.*)
    plan: TrainPlan  # the changed plan: what a form applies with one click
    outcome: Outcome
    memory_change: float  # per GPU as run, vs the plan as it runs (−0.6 = 60 % less)
    time_change: float | None  # vs the plan on its cheapest offer; None when the plan fits no offer
    cost_change: float | None
    changes_experiment: bool  # a shorter sequence: not the same training any more
    global_batch_grows: bool  # more data-parallel GPUs than the plan: more tokens per optimizer step
    combines_with: tuple[str, ...] = ()  # keys of other suggestions that can be applied on top of this one
    same_card: SameCard | None = None  # the change's own effect on one card (memory, time)

    @property
    def gpu_id(self) -> str | None:
        return self.outcome.offer.offer.gpu_id if self.outcome.offer else None

    @property
    def summary(self) -> Msg:
        """"with gradient checkpointing: 9.6 GiB, fits 1 x GeForce RTX 4090 (...), +30% time, −60% cost"."""
        o = self.outcome.offer
        assert o is not None  # only fitting changes are suggested
        where = msg("advice.where", gpus=o.fit.plan.gpus, gpu=o.offer.gpu.display_name,
                    sharding=_where_sharding(o.fit.plan), offer=offer_name(o.offer))
        flags = tuple(m for m, on in ((msg("advice.note.experiment"), self.changes_experiment),
                                      (msg("advice.note.global_batch"), self.global_batch_grows)) if on)
        notes = msg("advice.notes", notes=flags) if flags else None
        if self.time_change is None or self.cost_change is None:
            line = msg("advice.suggestion.new", changes=self.changes, memory_bytes=self.outcome.memory_per_gpu_bytes,
                       where=where, run_s=self.outcome.total_s, cost_usd=self.outcome.cost_usd, notes=notes)
        else:
            line = msg("advice.suggestion", changes=self.changes, memory_bytes=self.outcome.memory_per_gpu_bytes,
                       where=where, time_sign=_sign(self.time_change), time_change=abs(self.time_change),
                       cost_sign=_sign(self.cost_change), cost_change=abs(self.cost_change),
                       run_s=self.outcome.total_s, cost_usd=self.outcome.cost_usd, notes=notes)
        if self.same_card is None:
            return line
        return msg("advice.with_same_card", line=line, same=self.same_card.summary)

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "group": self.group, "changes": [c.as_dict() for c in self.changes],
                "plan": self.plan.as_dict(), "outcome": self.outcome.as_dict(),
                "memory_change": self.memory_change, "time_change": self.time_change,
                "cost_change": self.cost_change, "changes_experiment": self.changes_experiment,
                "global_batch_grows": self.global_batch_grows, "combines_with": list(self.combines_with),
                "same_card": self.same_card.as_dict() if self.same_card else None,
                "summary": self.summary.as_dict()}


@dataclass(frozen=True)
class Advice:
    """The plan as it is, and the changes that make it fit or make it cheaper, best first."""

    plan: TrainPlan
    baseline: Outcome
    suggestions: tuple[Suggestion, ...]
    tried: int  # changed plans priced

    @property
    def status(self) -> Msg:
        """What the plan as it is does: fits no offer, or its cheapest offer (and whether a change saves)."""
        b = self.baseline
        if b.offer is None:
            return msg("advice.status.no_fit", need_bytes=b.single_gpu_bytes)
        o = b.offer
        return msg("advice.status.fits", memory_bytes=b.memory_per_gpu_bytes, gpus=o.fit.plan.gpus,
                   sharding=_where_sharding(o.fit.plan),
                   gpu=o.offer.gpu.display_name, offer=offer_name(o.offer), run_s=b.total_s, cost_usd=b.cost_usd)

    def get(self, key: str) -> Suggestion:
        for s in self.suggestions:
            if s.key == key:
                return s
        raise KeyError(key)

    def as_dict(self) -> dict[str, Any]:
        return {"plan": self.plan.as_dict(), "baseline": self.baseline.as_dict(), "status": self.status.as_dict(),
                "suggestions": [s.as_dict() for s in self.suggestions], "tried": self.tried}


def _where_sharding(run: TrainPlan) -> Msg | None:
    """" with fsdp (bf16: 8 bytes per trained parameter ...)": the sharding an offer runs, as every surface says it."""
    return msg("advice.where.sharding", sharding=sharding_words(run)) if run.gpus > 1 else None


def _sign(change: float) -> str:
    return "+" if change >= 0 else "\u2212"  # a real minus sign, as the issue writes "−60 % cost"


# -- the changes --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Change:
    key: str
    group: str
    apply: Callable[[TrainPlan], TrainPlan]
    describe: Callable[[TrainPlan, TrainPlan], Msg]  # (before, after) -> words
    experiment: bool = False
    speed: bool = False  # spends memory for speed (a larger micro-batch): priced even though it frees nothing


class _NotApplicable(Exception):
    """A change that does not apply to this plan (nothing to shrink, GPUs already there)."""


def _micro_batch(new: int) -> Callable[[TrainPlan], TrainPlan]:
    def apply(p: TrainPlan) -> TrainPlan:
        if p.batch_size <= new or p.batch_size % new:
            raise _NotApplicable
        return p.replace(batch_size=new, grad_accum=p.grad_accum * (p.batch_size // new))
    return apply


def _micro_batch_up(factor: int) -> Callable[[TrainPlan], TrainPlan]:
    """A larger micro-batch with less accumulation: the same tokens per step, fewer and fuller kernel launches."""
    def apply(p: TrainPlan) -> TrainPlan:
        if p.grad_accum < factor or p.grad_accum % factor:
            raise _NotApplicable
        return p.replace(batch_size=p.batch_size * factor, grad_accum=p.grad_accum // factor)
    return apply


def _set(**fields: Any) -> Callable[[TrainPlan], TrainPlan]:
    return lambda p: p.replace(**fields)


def _both(a: _Change, b: _Change, plan: TrainPlan) -> TrainPlan:
    return b.apply(a.apply(plan))


def _shard(gpus: int, sharding: Sharding, offload: bool) -> Callable[[TrainPlan], TrainPlan]:
    def apply(p: TrainPlan) -> TrainPlan:
        if gpus <= p.gpus:
            raise _NotApplicable
        factor = gpus // p.gpus if gpus % p.gpus == 0 else 1
        accum = p.grad_accum // factor if factor > 1 and p.grad_accum % factor == 0 else p.grad_accum
        # FSDP's CPUOffload moves the parameters with their gradients and the optimizer step (torch
        # FullyShardedDataParallel(cpu_offload=CPUOffload(offload_params=True))); DeepSpeed's offload_optimizer the
        # optimizer states and step only
        return p.replace(gpus=gpus, sharding=sharding, grad_accum=accum, offload_optimizer=offload,
                         offload_params=offload and sharding in (Sharding.FSDP, Sharding.HSDP))
    return apply


# Sharding tried on more GPUs: (sharding, CPU offload). DeepSpeed's ZeRO optimizers keep fp32 master weights and
# states of 16-bit trained weights, PyTorch FSDP's torch optimizer keeps them in the weights' dtype
# (TrainPlan.fp32_master_weights), so a pure-bf16 full fine-tune is much smaller under FSDP.
SHARDINGS = ((Sharding.ZERO2, False), (Sharding.ZERO3, False), (Sharding.ZERO3, True), (Sharding.FSDP, False),
             (Sharding.FSDP, True))


def sharding_words(plan: TrainPlan) -> Msg:
    """The plan's sharding as it is shown, with what it keeps per trained parameter where that is one figure."""
    per_param = state_bytes_per_param(plan)
    offload = plan.offload_optimizer or plan.offload_params
    # hybrid sharding across several groups: the group's size is what divides the model states
    group = msg("advice.sharding.group", group=plan.shard_ranks) if plan.several_shard_groups else None
    if per_param is None:
        return msg("advice.sharding", sharding=plan.sharding, group=group,
                   offload=msg("advice.sharding.offload") if offload else None)
    return msg("advice.sharding.state", sharding=plan.sharding, group=group, precision=plan.precision,
               bytes_per_param=per_param, offload=msg("advice.sharding.offload") if offload else None)


# GPUs in one node of the usual 8-GPU servers: a run on more crosses the network between nodes.
ONE_NODE_GPUS = 8


def _one_node(p: TrainPlan) -> TrainPlan:
    """The run kept inside one node: 8 GPUs with the accumulation that keeps the tokens per step, sharded unit by
    unit (the plan's FSDP, ZeRO-3 or hsdp-zero2 where it has one, hsdp as FSDP, else ZeRO-3)."""
    if p.gpus <= ONE_NODE_GPUS or p.gpus % ONE_NODE_GPUS:
        raise _NotApplicable
    sharding = Sharding.FSDP if p.sharding is Sharding.HSDP else (
        p.sharding if p.sharding.per_unit else Sharding.ZERO3)  # hsdp-zero2 on one node: FSDP SHARD_GRAD_OP
    return p.replace(gpus=ONE_NODE_GPUS, sharding=sharding, grad_accum=p.grad_accum * (p.gpus // ONE_NODE_GPUS))


def hybrid_groups(gpus: int, node_gpus: int, fits: Callable[[int], bool]) -> tuple[int, ...]:
    """Shard groups tried for hybrid sharding on ``gpus`` GPUs in nodes of ``node_gpus``: one node, two nodes and the
    smallest group for which ``fits`` (the states divide by the group, so memory falls as it grows), each dividing
    ``gpus`` and smaller than it (one group of all the GPUs is plain FSDP). A few groups, so the advisor stays fast."""
    divisors = even_groups(gpus)[:-1]
    groups = {g for g in (node_gpus, 2 * node_gpus) if g in divisors}
    groups.update(next(((g,) for g in divisors if fits(g)), ()))
    return tuple(sorted(groups))


def _hybrid(sharding: Sharding, group: int, gpus: int = 0) -> Callable[[TrainPlan], TrainPlan]:
    """Hybrid sharding in groups of ``group`` on at least ``gpus`` GPUs (those the plan's offer already runs)."""
    def apply(p: TrainPlan) -> TrainPlan:
        n = max(p.gpus, gpus)
        if n % group or group >= n or (p.sharding is sharding and p.shard_ranks == group and n == p.gpus):
            raise _NotApplicable
        # parameter offload needs the parameters sharded: hsdp-zero2 keeps them whole in the step
        return p.replace(gpus=n, sharding=sharding, shard_group_gpus=group,
                         offload_params=p.offload_params and sharding.shards_params)
    return apply


def _hybrid_change(sharding: Sharding, group: int, gpus: int) -> _Change:
    """Hybrid sharding in groups of ``group`` GPUs: the gathers stay inside a group, only gradient shards are
    all-reduced between groups; priced even when it frees nothing (speed), as over a slow network it pays."""
    return _Change(f"{sharding.value}_g{group}", "sharding", _hybrid(sharding, group, gpus),
                   lambda a, b: msg("advice.change.hybrid", gpus=b.gpus, sharding=b.sharding, group=b.shard_ranks,
                                    groups=b.shard_groups), speed=True)


def _changes(plan: TrainPlan) -> list[_Change]:
    """The standard memory savers that apply to ``plan`` (each a function of the plan it changes)."""
    out: list[_Change] = []
    if not plan.grad_checkpointing:
        out.append(_Change("grad_checkpointing", "checkpointing", lambda p: p.replace(grad_checkpointing=True),
                           lambda a, b: msg("advice.change.grad_checkpointing")))
    if plan.grad_checkpointing and plan.recompute_every == 1:
        # transformers 5's every_n_layers: less recompute for the memory it keeps (the plan refuses it with Unsloth's
        # stacks and under freeze: not applicable there)
        for every in (2, 4):
            out.append(_Change(f"recompute_every_{every}", "checkpointing", _set(recompute_every=every),
                               lambda a, b: msg("advice.change.recompute_every", every=b.recompute_every),
                               speed=True))
    for new in sorted({plan.batch_size // 2, plan.batch_size // 4, 1}, reverse=True):
        if 1 <= new < plan.batch_size and plan.batch_size % new == 0:
            out.append(_Change(f"micro_batch_{new}", "micro_batch", _micro_batch(new),
                               lambda a, b: msg("advice.change.micro_batch", old=a.batch_size, new=b.batch_size,
                                                accum=b.grad_accum)))
    for factor in sorted({2, plan.grad_accum}):
        if factor > 1 and plan.grad_accum % factor == 0:
            out.append(_Change(f"micro_batch_{plan.batch_size * factor}", "micro_batch", _micro_batch_up(factor),
                               lambda a, b: msg("advice.change.micro_batch", old=a.batch_size, new=b.batch_size,
                                                accum=b.grad_accum), speed=True))
    if plan.optimizer in (Optimizer.ADAMW, Optimizer.LION, Optimizer.SGD, Optimizer.ADAFACTOR):
        for opt in (Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT):
            out.append(_Change(f"optimizer_{opt.value}", "optimizer", _set(optimizer=opt),
                               lambda a, b: msg("advice.change.optimizer", old=a.optimizer, new=b.optimizer)))
    if plan.method is Method.LORA:
        out.append(_Change("qlora", "method", lambda p: p.replace(method=Method.QLORA),
                           lambda a, b: msg("advice.change.qlora")))
    for gpus in SHARDING_GPUS:
        for sharding, offload in SHARDINGS:
            key = f"{sharding.value}{'_offload' if offload else ''}_x{gpus}"
            out.append(_Change(key, "sharding", _shard(gpus, sharding, offload),
                               lambda a, b: msg("advice.change.sharding_offload" if b.offload_optimizer
                                                else "advice.change.sharding", gpus=b.gpus, sharding=b.sharding)))
    if plan.gpus > ONE_NODE_GPUS:  # the link between nodes often dominates: fewer GPUs, no network
        out.append(_Change(f"one_node_x{ONE_NODE_GPUS}", "sharding", _one_node,
                           lambda a, b: msg("advice.change.one_node", gpus=b.gpus, sharding=b.sharding), speed=True))
    for new in (plan.seq_len // 2, plan.seq_len // 4):
        if new >= MIN_SEQ_LEN:
            out.append(_Change(f"seq_len_{new}", "sequence", _set(seq_len=new),
                               lambda a, b: msg("advice.change.seq_len", old=a.seq_len, new=b.seq_len),
                               experiment=True))
    return out


# -- the search ---------------------------------------------------------------------------------------------------


class _Search:
    """One run of ``advise``: the plan, the offers and how they are priced, and the plan on its cheapest offer
    (``base``) that every change is compared with."""

    def __init__(self, plan: TrainPlan, pool: tuple[Offer, ...], inputs: Inputs, pricing: Mapping[str, Any],
                 filters: Mapping[str, Any]):
        self.plan, self.pool, self.inputs = plan, pool, inputs
        self.pricing = dict(pricing)  # safety_margin, preemption_rate_per_hour, time_options
        self.filters = dict(filters)
        self._single: dict[TrainPlan, int] = {}
        self._run: dict[TrainPlan, int] = {}
        self.base = self.outcome(plan)
        self.tried = 1  # changed plans priced, the plan itself included

    def single_bytes(self, p: TrainPlan) -> int:
        one = p.single_gpu()
        if one not in self._single:
            self._single[one] = estimate_memory(one, self.inputs.spec).device_total_bytes
        return self._single[one]

    def outcome(self, p: TrainPlan) -> Outcome:
        """``p`` on its cheapest fitting offer, with the model states per GPU the tie rule compares."""
        ranked = evaluate_offers(p, self.pool, self.inputs, include_unfit=False, **self.pricing, **self.filters)
        best = next((r for r in ranked if r.expected_cost_usd is not None and math.isfinite(r.expected_cost_usd)),
                    None)
        states = 0
        if best is not None:
            breakdown = estimate_memory(best.fit.plan, self.inputs.spec).breakdown
            states = sum(breakdown.get(k, 0) for k in SHARDED_PARTS)
        return Outcome(p, self.single_bytes(p), best, states)

    def hybrid_changes(self) -> list[_Change]:
        """hsdp and hsdp-zero2 in the groups ``hybrid_groups`` picks, for a run across nodes: on the GPUs and nodes of
        the plan's cheapest offer (which may need more GPUs than the plan names; nodes of 8 when it fits none).
        "Fits" is on that offer's card (else the pool's largest)."""
        plan, offer = self.plan, self.base.offer
        node = offer.offer.gpus_per_node if offer is not None else ONE_NODE_GPUS
        gpus = max(plan.gpus, self.base.run_plan.gpus)
        if gpus <= node or not self.pool:
            return []
        card = offer.offer.gpu if offer is not None else max((o.gpu for o in self.pool),
                                                              key=lambda g: g.memory_total_bytes)
        usable = usable_memory_bytes(card, self.pricing["safety_margin"])
        out: list[_Change] = []
        for sharding in (Sharding.HSDP, Sharding.HSDP_ZERO2):
            def fits(group: int, sharding: Sharding = sharding) -> bool:
                try:
                    return self.run_bytes(_hybrid(sharding, group, gpus)(plan)) <= usable
                except (PlanError, _NotApplicable):
                    return False
            out += [_hybrid_change(sharding, g, gpus) for g in hybrid_groups(gpus, node, fits)]
        return out

    def run_bytes(self, p: TrainPlan) -> int:
        """Memory per GPU of ``p`` as written (its GPUs and sharding)."""
        if p not in self._run:
            self._run[p] = estimate_memory(p, self.inputs.spec).device_total_bytes
        return self._run[p]

    def suggestion(self, key: str, group: str, changes: tuple[Msg, ...], changed: TrainPlan, out: Outcome,
                   experiment: bool) -> Suggestion | None:
        """The changed plan on its offer (``out``) as a suggestion when it is worth making (see ``advise``)."""
        base = self.base
        if out.offer is None or _overridden(changed, out):
            return None
        time_change: float | None = None
        cost_change: float | None = None
        if base.fits:
            cost, total = out.cost_usd, out.total_s
            assert base.cost_usd is not None and base.total_s is not None and cost is not None and total is not None
            smaller = _rented_bytes(out) < _rented_bytes(base)
            # another sharding at the same cost and time is kept when it wins the tie rule: the answer may take it
            tie = "sharding" in group.split("+") and wins_tie(out, base)
            if cost > base.cost_usd * (1 - MIN_SAVING) and not tie and not (smaller and cost <= base.cost_usd * (
                    1 + MAX_EXTRA_COST_SMALLER)):
                return None
            time_change, cost_change = total / base.total_s - 1, cost / base.cost_usd - 1
        memory_change = out.memory_per_gpu_bytes / base.memory_per_gpu_bytes - 1
        grows = out.run_plan.tokens_per_step > base.run_plan.tokens_per_step if base.fits else (
            changed.tokens_per_step > self.plan.tokens_per_step)
        return Suggestion(key, group, changes, changed, out, memory_change, time_change, cost_change,
                          experiment, grows)

    def singles(self) -> tuple[list[tuple[_Change, Suggestion]], list[tuple[int, _Change]]]:
        """Each standard change alone: those worth suggesting, best first, and those that fit nothing alone or
        free memory without saving enough alone (with the bytes per GPU they need), to be paired."""
        plan = self.plan
        singles: list[tuple[_Change, Suggestion]] = []
        near: list[tuple[int, _Change]] = []
        for change in _changes(plan) + self.hybrid_changes():
            try:
                changed = change.apply(plan)
            except (PlanError, _NotApplicable):
                continue  # not valid for this plan (e.g. offload on a method that cannot)
            same_gpus = changed.gpus == plan.gpus
            if same_gpus and not change.speed and self.single_bytes(changed) > self.single_bytes(plan) * (
                    1 - MIN_MEMORY_SAVING):
                continue  # frees (almost) nothing: cannot unlock a smaller card
            self.tried += 1
            out = self.outcome(changed)
            s = self.suggestion(change.key, change.group, (change.describe(plan, changed),), changed, out,
                                change.experiment)
            if s is not None:
                singles.append((change, s))
            elif same_gpus and not change.experiment and (not out.fits or _overridden(changed, out)
                                                            or not change.speed):
                # fits nothing alone, or frees memory but saves too little alone: a part to pair (a hybrid
                # sharding that needs a smaller optimizer state, say)
                near.append((self.run_bytes(changed), change))
        singles.sort(key=lambda cs: _rank(cs[1]))  # ties: fewer GPUs first (their keys sort as _x2 < _x4)
        return singles, near

    def pairs(self, parts: list[tuple[_Change, Suggestion | None]],
              combinable: dict[str, set[str]]) -> list[Suggestion]:
        """The pairs of ``parts`` that touch different settings and beat each part (or add a sharding that wins the
        tie rule); ``combinable`` learns which fitting parts go together."""
        plan = self.plan
        pairs: list[Suggestion] = []
        for i, (a, sa) in enumerate(parts):
            for b, sb in parts[i + 1:]:
                if a.group == b.group:
                    continue
                try:
                    middle = a.apply(plan)
                    both = b.apply(middle)
                except (PlanError, _NotApplicable):
                    continue
                if sa is not None and sb is not None:
                    combinable[sa.key].add(sb.key)
                    combinable[sb.key].add(sa.key)
                self.tried += 1
                s = self.suggestion(f"{a.key}+{b.key}", f"{a.group}+{b.group}",
                                    (a.describe(plan, middle), b.describe(middle, both)), both, self.outcome(both),
                                    a.experiment or b.experiment)
                # worth showing only when it beats each of its parts (a part that fits nothing alone: any fit), or
                # adds a sharding that wins the tie rule against the cheaper part
                fitting = [x.outcome for x in (sa, sb) if x is not None and x.outcome.cost_usd is not None]
                cheaper = min(fitting, key=lambda o: o.cost_usd or 0.0) if fitting else None
                if s is not None and (cheaper is None or (s.outcome.cost_usd or 0.0) < (cheaper.cost_usd or 0.0) * (
                        1 - MIN_SAVING) or ("sharding" in (a.group, b.group) and wins_tie(s.outcome, cheaper))):
                    pairs.append(s)
        return pairs

    def same_card(self, s: Suggestion) -> SameCard:
        """The change alone: the plan as it is and the changed plan on one offer (the plan's, else the change's)."""
        base = self.base
        ref = base.offer if base.offer is not None else s.outcome.offer
        assert ref is not None
        before = base.offer if base.offer is not None else evaluate_offer(self.plan, ref.offer, self.inputs,
                                                                           **self.pricing)
        after = evaluate_offer(s.plan, ref.offer, self.inputs, **self.pricing)
        memory = after.fit.device_total_bytes / before.fit.device_total_bytes - 1
        time = (after.expected_total_s / before.expected_total_s - 1
                if before.fits and after.fits and before.expected_total_s and after.expected_total_s else None)
        return SameCard(ref.offer.gpu.display_name, ref.fit.plan.gpus, memory, time)


def advise(plan: TrainPlan, offers: Iterable[Offer], inputs: Inputs, *, limit: int = DEFAULT_LIMIT,
           safety_margin: float = DEFAULT_SAFETY_MARGIN,
           preemption_rate_per_hour: float = DEFAULT_PREEMPTION_RATE_PER_HOUR,
           time_options: Mapping[str, Any] | None = None, **filters: Any) -> Advice:
    """The few changes that make ``plan`` fit the catalog, or run cheaper, best first.

    Args:
        plan: the run as the user set it (dataset size and epochs make the cost).
        offers: the catalog (``gpuwork.facts.catalog.load_offers()``).
        inputs: the plan's facts (``gpuwork.facts.resolve(plan)``).
        limit: how many suggestions to return (at least 1).
        safety_margin, preemption_rate_per_hour, time_options: as ``evaluate_offers``.
        filters: offer filters of ``evaluate_offers`` (mode, region, gpu_class, ...): only those offers count.

    Every suggestion fits an offer, is at least MIN_SAVING cheaper than the plan on its cheapest offer (or the
    plan fits none, or it is another sharding that wins the tie rule), and carries the changed plan;
    ``combines_with`` names the other suggestions whose change touches different settings and still gives a valid
    plan when applied on top. When too few single changes fit, the ones that free the most memory are paired too
    (checkpointing and a smaller micro-batch often fit a card only together).

    Raises:
        PlanError: a limit below 1, or the bad options ``evaluate_offers`` refuses.
    """
    if not is_whole(limit, 1):
        raise PlanError("limit", msg("error.advice.limit", value=repr(limit)))
    search = _Search(plan, tuple(offers), inputs, {"safety_margin": safety_margin,
                                                   "preemption_rate_per_hour": preemption_rate_per_hour,
                                                   "time_options": time_options}, filters)
    singles, near = search.singles()
    best = singles[:PAIR_FROM_BEST]
    combinable: dict[str, set[str]] = {s.key: set() for _, s in singles}
    # parts to pair: the best fitting singles, then (when fewer fit) the non-fitting ones that free the most
    parts: list[tuple[_Change, Suggestion | None]] = list(best)
    parts += [(c, None) for _, c in sorted(near, key=lambda bc: (bc[0], bc[1].key))[:PAIR_FROM_BEST - len(best)]]
    pairs = search.pairs(parts, combinable)
    # the remaining singles combine with a best one when they touch different settings and stay valid
    for a, sa in singles[PAIR_FROM_BEST:]:
        for b, sb in best:
            if a.group != b.group and _valid(functools.partial(_both, a, b), plan):
                combinable[sa.key].add(sb.key)
                combinable[sb.key].add(sa.key)
    ranked = []
    seen: set[tuple[Any, ...]] = set()
    for s in sorted([s for _, s in singles] + pairs, key=_rank):
        offer = s.outcome.offer
        where = (offer.offer.offer_id if offer is not None else None, s.outcome.run_plan)  # 2, 4 or 8 GPUs may all run on one node
        if where not in seen:
            seen.add(where)
            ranked.append(s)
    ranked = ranked[:limit]
    shown = {s.key for s in ranked}
    final = tuple(replace(_with_combines(s, tuple(sorted(combinable.get(s.key, set()) & shown))),
                          same_card=search.same_card(s)) for s in ranked)
    return Advice(plan=plan, baseline=search.base, suggestions=final, tried=search.tried)


# The tie rule. Two setups that cost the same and take the same time are often two shardings of one run: ZeRO-3 and
# FSDP shard the same tensors and their traffic is priced alike, so on one offer they tie. The one with fewer GPUs
# wins, then the one whose sharding leaves less of the model's states on each GPU: that headroom absorbs the
# estimate's error and the allocator's fragmentation, which is what ends a long run hours in with an out-of-memory
# error, so at the same price a careful user takes it (a pure-bf16 FSDP run also keeps no fp32 masters it would not
# use). Then the one that needs no package beyond PyTorch (DDP and FSDP before DeepSpeed's ZeRO): one install and one
# launcher fewer to get right. Only the states count, not the whole memory, so two optimizers that hold the same
# states (AdamW 8-bit, paged or not) are not told apart by where the allocator keeps them.
SHARDED_PARTS = ("weights", "gradients", "optimizer_states", "paged_optimizer_states", "sharding_buffers")
_NEEDS_DEEPSPEED = (Sharding.ZERO1, Sharding.ZERO2, Sharding.ZERO3)


def tie_order(out: Outcome) -> tuple[int, int, bool]:
    """How the tie rule above orders setups of equal cost and time: (GPUs, model states per GPU, needs
    DeepSpeed)."""
    run = out.run_plan
    return (run.gpus, out.states_per_gpu_bytes, run.gpus > 1 and run.sharding in _NEEDS_DEEPSPEED)


def wins_tie(out: Outcome, other: Outcome) -> bool:
    """``out`` costs and takes exactly what ``other`` does and comes first by the tie rule."""
    return (out.fits and other.fits and out.cost_usd == other.cost_usd and out.total_s == other.total_s
            and tie_order(out) < tie_order(other))


def _overridden(changed: TrainPlan, out: Outcome) -> bool:
    """The offer ran a hybrid sharding the change chose as another sharding (it did not fit in its groups): not the
    change any more."""
    return out.fits and changed.sharding.hybrid and out.run_plan.sharding is not changed.sharding


def _rented_bytes(out: Outcome) -> int:
    o = out.offer
    return o.billed_gpus * o.offer.gpu.memory_total_bytes if o is not None else 0


def _rank(s: Suggestion) -> tuple[Any, ...]:
    # changes that keep the experiment first (a shorter sequence trains something else), then the cheapest
    # whole run, then the faster one, then the tie rule (tie_order)
    return (s.changes_experiment, s.outcome.cost_usd, s.outcome.total_s, *tie_order(s.outcome), s.key)


def _valid(apply: Callable[[TrainPlan], TrainPlan], plan: TrainPlan) -> bool:
    try:
        apply(plan)
    except (PlanError, _NotApplicable):
        return False
    return True


def _with_combines(s: Suggestion, keys: tuple[str, ...]) -> Suggestion:
    return replace(s, combines_with=keys)


__all__ = ["DEFAULT_LIMIT", "MIN_MEMORY_SAVING", "MIN_SAVING", "SHARDINGS", "Advice", "Outcome", "SameCard", "Suggestion",
           "advise", "hybrid_groups", "sharding_words", "state_bytes_per_param", "tie_order", "wins_tie"]
