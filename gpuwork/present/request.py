"""The rental request: what to ask a GPU provider for, in Russian or English, plus JSON.

``rental_request(plan) -> RentalRequest`` gathers the estimates (profile, memory, time, disk, an
illustrative offer) and writes the request the product brief asks for: method, model and size,
context and batch (or "in the config"), dataset size, disk with room for checkpoints, rental
period, the step-time trial, start date, budget, and the GPU class and count with the estimates
behind them. The first line is the one-sentence summary, e.g.

    Fine-tuning, LoRA adapters, context and batch size in the config; dataset 200 GB, need room for
    checkpoints; one month; step-time test required

Example:
    >>> req = rental_request(TrainPlan(model="llama-3.1-8b", method="lora"), lang="en")
    >>> req.summary.startswith("Fine-tuning, LoRA adapters")
    True

Every word comes from the message catalog (``gpuwork.present.messages``, entries ``request.*``), so the
English and Russian requests say the same things with numbers in each language's form.

Limitations: prices in the suggestion come from the bundled, illustrative catalog; estimates are
estimates until the trial run measures step time, memory and data speed.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate.disk import DiskPlan
from gpuwork.estimate.offers import OfferResult
from gpuwork.estimate.profiles import ProfileMatch
from gpuwork.facts.model import count_params, spec_for_plan
from gpuwork.facts.paths import models_dir
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, TrainPlan
from gpuwork.present.messages import render, render_all
from gpuwork.sizing import estimate_disk, evaluate_offers, match_profile
from gpuwork.units import HOUR_S, plural_ru

LANGS = ("en", "ru")
DAY_S = 24 * HOUR_S

# Periods said in words (days -> catalog entry); other periods are said in days.
_PERIOD_WORDS = {
    1: msg("request.period.1"), 7: msg("request.period.7"), 14: msg("request.period.14"),
    30: msg("request.period.30"), 31: msg("request.period.30"), 60: msg("request.period.60"),
    90: msg("request.period.90"), 180: msg("request.period.180"), 365: msg("request.period.365"),
}
_METHODS = {
    Method.SCRATCH: msg("request.method.scratch"), Method.FULL: msg("request.method.full"),
    Method.LORA: msg("request.method.lora"), Method.QLORA: msg("request.method.qlora"),
}


@dataclass(frozen=True)
class RentalRequest:
    """The request text and the facts behind it (``as_dict`` is the JSON form)."""

    lang: str
    summary: str  # the one-sentence request
    text: str  # summary + details, ready to send
    fields: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"lang": self.lang, "summary": self.summary, "text": self.text, **self.fields}


# -- wording helpers (every word comes from gpuwork.present.messages) --------------------------------------------


def _period(days: int) -> Msg:
    return _PERIOD_WORDS.get(days) or msg("request.period.days", days=days)


def _method(plan: TrainPlan) -> Msg:
    if plan.method is Method.FREEZE:
        return msg("request.method.freeze", k=plan.trainable_layers)
    return _METHODS[plan.method]


def _context(plan: TrainPlan, in_config: bool) -> Msg:
    if in_config:
        return msg("request.context.in_config")
    accum = msg("request.context.accum", grad_accum=plan.grad_accum) if plan.grad_accum > 1 else None
    return msg("request.context", seq_len=plan.seq_len, batch=plan.batch_size, accum=accum)


def _gpu_class(match: ProfileMatch) -> Msg:
    if match.profile is None:
        return msg("request.gpu_class.none")
    pid = match.profile.profile_id
    if pid == "01":
        return msg("request.gpu_class.01", card_gb=24 if match.gpu_id == "rtx4090" else 48)
    return msg("request.gpu_class.02") if pid == "02" else msg("request.gpu_class.03")


# -- the request ---------------------------------------------------------------------------------------


def rental_request(
    plan: TrainPlan,
    *,
    lang: str = "en",
    start_date: date | str | None = None,
    budget_usd: float | None = None,
    rent_period_days: int | None = None,
    trial_required: bool = True,
    context_in_config: bool = True,
    compression_ratio: float = 1.0,
    include_offer: bool = True,
    match: ProfileMatch | None = None,
    disk: DiskPlan | None = None,
) -> RentalRequest:
    """The rental request for ``plan`` in ``lang`` ("en" or "ru").

    Args:
        plan: the run; dataset_bytes (or dataset_tokens) sizes the dataset and disk.
        start_date: desired start (a date or "YYYY-MM-DD"); None = not stated.
        budget_usd: the budget; None = not stated.
        rent_period_days: rental period; None = the estimated run time rounded up to whole days.
        trial_required: ask for the step-time trial before the rental.
        context_in_config: say "context and batch in the config" instead of the numbers (the
            estimates still use the plan's seq_len and batch).
        compression_ratio: passed to ``estimate_disk`` (1 = dataset_bytes is the unpacked size).
        include_offer: add the cheapest fitting offer of the profile's rental mode from the bundled
            catalog (illustrative prices).
        match, disk: precomputed profile match / disk plan (computed when omitted).

    Raises:
        PlanError: unknown language, bad date, budget or period.
    """
    if lang not in LANGS:
        raise PlanError("lang", msg("error.request.lang", value=repr(lang), choices=", ".join(LANGS)))
    if isinstance(start_date, str):
        try:
            start_date = date.fromisoformat(start_date)
        except ValueError:
            raise PlanError("start_date", msg("error.request.start_date", value=repr(start_date))) from None
    if budget_usd is not None and (isinstance(budget_usd, bool) or not isinstance(budget_usd, int | float)
                                   or budget_usd <= 0):
        raise PlanError("budget_usd", msg("error.request.budget", value=repr(budget_usd)))
    if rent_period_days is not None and (isinstance(rent_period_days, bool) or not isinstance(rent_period_days, int)
                                         or rent_period_days < 1):
        raise PlanError("rent_period_days", msg("error.request.rent_period", value=repr(rent_period_days)))

    spec = spec_for_plan(plan)
    counts = count_params(spec, plan)
    match = match or match_profile(plan, spec=spec)
    disk = disk or estimate_disk(plan, spec, compression_ratio=compression_ratio)
    time = match.time
    period_from_estimate = rent_period_days is None
    if rent_period_days is None:
        rent_period_days = max(1, math.ceil(time.total_s / DAY_S)) if time else 30
    offer = _best_offer(match, rent_period_days) if include_offer else None

    def say(m: Msg) -> str:
        return render(m, lang)

    # -- the one-sentence summary ------------------------------------------------------------------
    dataset_bytes = plan.dataset_bytes if plan.dataset_bytes is not None else disk.line("dataset_raw").bytes
    room = msg("request.dataset.room") if plan.checkpoints_kept > 0 else None
    trial = msg("request.trial.required") if trial_required else msg("request.trial.none")
    summary = say(msg("request.summary", method=_method(plan), context=_context(plan, context_in_config),
                      dataset=msg("request.dataset", size_bytes=dataset_bytes, room=room),
                      period=msg("request.period", period=_period(rent_period_days)), trial=trial))

    # -- details ------------------------------------------------------------------------------------
    lines = [summary, ""]
    lines.append(say(msg("request.model", model=model_display_name(spec.name), params=spec.params_total,
                         trainable=counts.trainable, precision=plan.precision, optimizer=plan.optimizer)))
    accum = msg("request.shape.accum", grad_accum=plan.grad_accum) if plan.grad_accum > 1 else None
    shape = msg("request.shape", seq_len=plan.seq_len, batch=plan.batch_size, accum=accum)
    lines.append(say(msg("request.shape.in_config" if context_in_config else "request.shape.explicit",
                         shape=shape)))
    lines.append(say(msg("request.dataset_line", size_bytes=dataset_bytes, tokens=plan.dataset_tokens,
                         epochs=plan.epochs)))
    lines.append(say(msg("request.disk", total_bytes=disk.recommended_bytes, count=disk.checkpoints_on_disk,
                         each_bytes=disk.checkpoint.total_bytes,
                         margin=round(disk.margin_bytes / max(disk.subtotal_bytes, 1), 2))))
    lines.append(say(msg("request.rental", period=_period(rent_period_days),
                         how=msg("request.rental.estimated") if period_from_estimate else None,
                         start=msg("request.rental.start", day=start_date.isoformat()) if start_date else None)))
    if budget_usd is not None:
        lines.append(say(msg("request.budget", budget_usd=budget_usd)))
    lines.extend(say(m) for m in _suggestion(match, offer, budget_usd))
    if time is not None and time.total_s > rent_period_days * DAY_S:
        lines.append(say(msg("request.too_long", days=math.ceil(time.total_s / DAY_S))))
    if trial_required:
        lines.append(say(msg("request.trial")))
    if match.checks:
        lines.append(say(msg("request.checks", checks=match.checks)))
    text = "\n".join(lines)

    fields = {
        "method": plan.method.value,
        "model": model_display_name(spec.name),
        "model_ref": plan.model,
        "params_total": spec.params_total,
        "params_trainable": counts.trainable,
        "precision": plan.precision.value,
        "optimizer": plan.optimizer.value,
        "context_in_config": context_in_config,
        "seq_len": plan.seq_len,
        "batch_size": plan.batch_size,
        "grad_accum": plan.grad_accum,
        "dataset_bytes": dataset_bytes,
        "dataset_tokens": plan.dataset_tokens,
        "epochs": plan.epochs,
        "disk_recommended_bytes": disk.recommended_bytes,
        "disk": disk.as_dict(),
        "checkpoints_kept": plan.checkpoints_kept,
        "checkpoint_bytes": disk.checkpoint.total_bytes,
        "rent_period_days": rent_period_days,
        "rent_period_from_estimate": period_from_estimate,
        "trial_required": trial_required,
        "start_date": start_date.isoformat() if start_date else None,
        "budget_usd": budget_usd,
        "profile": ({"id": match.profile.profile_id, "name": say(match.profile.name),
                     "mode": match.profile.mode.value} if match.profile else None),
        "suggested": {
            "gpu_class": say(_gpu_class(match)),
            "reference_gpu": match.gpu_id,
            "gpus": match.gpus,
            "nodes": match.nodes,
            "sharding": match.sharding.value,
            "mode": match.profile.mode.value if match.profile else None,
            "changes": render_all(match.changes, lang),
            "offer": _offer_dict(offer),
        },
        "estimates": {
            "memory_per_gpu_bytes": match.memory_per_gpu_bytes,
            "usable_per_gpu_bytes": match.usable_per_gpu_bytes,
            "step_time_s": time.step_time_s if time else None,
            "tokens_per_s": time.tokens_per_s if time else None,
            "total_s": time.total_s if time else None,
            "gpu_hours": time.gpu_hours if time else None,
            "mfu": time.mfu.value if time else None,
            "mfu_source": time.mfu.source if time else None,
        },
        "reasons": render_all(match.reasons, lang),
        "reason_codes": [r.as_dict() for r in match.reasons],
    }
    return RentalRequest(lang=lang, summary=summary, text=text, fields=fields)


@functools.lru_cache(maxsize=1)
def _hub_ids() -> dict[str, str]:
    path = models_dir() / "index.csv"
    if not path.is_file():
        return {}
    with open(path, encoding="utf-8", newline="") as fh:
        return {row["name"]: row["hf_id"] for row in csv.DictReader(fh) if row.get("hf_id")}


def model_display_name(name: str) -> str:
    """The Hugging Face id of a bundled preset (meta-llama/Llama-3.1-8B), else the name as given."""
    return _hub_ids().get(name, name)


def _best_offer(match: ProfileMatch, period_days: int) -> OfferResult | None:
    """Cheapest fitting offer of the profile's rental mode whose minimum rental is not longer than
    the rental period (or the run); on-demand offers when no such offer fits."""
    if match.profile is None:
        return None
    plan = match.fitted_plan or match.plan
    horizon_h = max(period_days * 24, (match.time.total_s / HOUR_S) if match.time else 0)
    for mode in dict.fromkeys((match.profile.mode.value, "on-demand")):
        results = [r for r in evaluate_offers(plan, mode=mode, include_unfit=False)
                   if r.offer.min_rental_hours <= horizon_h]
        if match.profile.profile_id != "01":  # server GPUs of the profile's memory class
            results = [r for r in results if r.offer.gpu.memory_total_bytes >= match.usable_per_gpu_bytes]
        if results:
            return results[0]
    return None


def _offer_dict(offer: OfferResult | None) -> dict[str, Any] | None:
    if offer is None:
        return None
    return {"offer_id": offer.offer.offer_id, "gpu": offer.offer.gpu.display_name, "gpus": offer.fit.plan.gpus,
            "billed_gpus": offer.billed_gpus, "mode": offer.offer.mode.value,
            "price_per_gpu_hour_usd": offer.offer.price_per_gpu_hour, "expected_cost_usd": offer.expected_cost_usd,
            "total_s": offer.time.total_s if offer.time else None, "illustrative": True}


def _suggestion(match: ProfileMatch, offer: OfferResult | None, budget_usd: float | None) -> list[Msg]:
    if match.profile is None:
        return [msg("request.no_configuration", reasons=match.reasons)]
    p = match.profile
    where = msg("request.suggested.nodes", nodes=match.nodes) if match.nodes > 1 else None
    sharding = msg("request.suggested.sharding", sharding=match.sharding) if match.gpus > 1 else None
    out = [msg("request.suggested", gpus=match.gpus, gpu_class=_gpu_class(match), gpu=match.gpu_name, where=where,
               mode=p.mode, profile_id=p.profile_id, name=p.name, sharding=sharding)]
    if match.changes:
        out.append(msg("request.changes", changes=match.changes))
    t = match.time
    if t is not None:
        out.append(msg("request.estimates", memory_bytes=match.memory_per_gpu_bytes,
                       usable_bytes=match.usable_per_gpu_bytes, run_s=t.total_s, gpu=match.gpu_name,
                       step_s=t.step_time_s, tokens_s=t.tokens_per_s))
    if offer is not None and offer.expected_cost_usd is not None:
        verdict = None
        if budget_usd is not None:
            verdict = msg("request.within_budget" if offer.expected_cost_usd <= budget_usd else "request.over_budget")
        out.append(msg("request.example", offer_id=offer.offer.offer_id, price_usd=offer.offer.price_per_gpu_hour,
                       cost_usd=offer.expected_cost_usd, verdict=verdict))
    return out


__all__ = ["LANGS", "RentalRequest", "model_display_name", "plural_ru", "rental_request"]
