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
import dataclasses
import functools
import io
import math
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate.advisor import sharding_words, state_bytes_per_param
from gpuwork.estimate.band import TimeBand
from gpuwork.estimate.decision import offer_profile
from gpuwork.estimate.disk import DiskPlan
from gpuwork.estimate.offers import OfferResult, offer_name
from gpuwork.estimate.profiles import ProfileMatch
from gpuwork.estimate.timing import TimeEstimate
from gpuwork.facts import reading
from gpuwork.facts.catalog import GpuClass, load_offers
from gpuwork.facts.model import count_params, spec_for_plan
from gpuwork.facts.paths import models_dir
from gpuwork.facts.rates import load_rates, with_stack_input_grads
from gpuwork.message import Msg, msg
from gpuwork.plan import (
    UNSLOTH_STACKS,
    CommOverlap,
    Method,
    SdpaBackend,
    Sharding,
    Stack,
    TrainPlan,
    ZeroSync,
)
from gpuwork.present.band import band_request
from gpuwork.present.messages import render, render_all, text
from gpuwork.sizing import estimate_disk, evaluate_offers, match_profile, time_band
from gpuwork.units import DAY_S, HOUR_S, LANGS, is_whole, plural_ru

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


def _gpu_class(match: ProfileMatch, offer: OfferResult | None = None) -> Msg:
    if match.profile is None:
        return msg("request.gpu_class.none")
    if offer is not None:  # the chosen offer's card: its size and kind, whatever the profile's reference
        gpu = offer.offer.gpu
        return msg("request.gpu_class.server" if gpu.gpu_class is GpuClass.SERVER else "request.gpu_class.01",
                   card_gb=round(gpu.memory_gb))
    pid = match.profile.profile_id
    if pid == "01":
        return msg("request.gpu_class.01", card_gb=24 if match.gpu_id == "rtx4090" else 48)
    return msg("request.gpu_class.02") if pid == "02" else msg("request.gpu_class.03")


def offer_match(match: ProfileMatch, offer: OfferResult, period_s: float | None = None) -> ProfileMatch:
    """``match`` with the setup of a chosen offer (the Offers tab's top row), on the bundled catalog: the one rule of
    ``gpuwork.estimate.decision.offer_profile`` (card, count, nodes, sharding, mode and the profile they fall in)."""
    return offer_profile(match, offer, load_offers(), period_s)


# -- the request ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestOptions:
    """What the request states besides the plan (None: not stated).

    start_date: desired start (a date or "YYYY-MM-DD").
    budget_usd: the budget.
    rent_period_days: rental period; None = the estimated run time rounded up to whole days.
    trial_required: ask for the step-time trial before the rental.
    context_in_config: say "context and batch in the config" instead of the numbers (the estimates still use the
        plan's seq_len and batch).
    compression_ratio: passed to ``estimate_disk`` (1 = dataset_bytes is the unpacked size).
    include_offer: add the cheapest fitting offer of the profile's rental mode from the bundled catalog
        (illustrative prices) when no offer was chosen.

    Raises PlanError for a bad date, budget or period.
    """

    start_date: date | str | None = None
    budget_usd: float | None = None
    rent_period_days: int | None = None
    trial_required: bool = True
    context_in_config: bool = True
    compression_ratio: float = 1.0
    include_offer: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.start_date, str):
            try:
                object.__setattr__(self, "start_date", date.fromisoformat(self.start_date))
            except ValueError:
                raise PlanError("start_date", msg("error.request.start_date", value=repr(self.start_date))) from None
        budget = self.budget_usd
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int | float) or budget <= 0):
            raise PlanError("budget_usd", msg("error.request.budget", value=repr(budget)))
        days = self.rent_period_days
        if days is not None and not is_whole(days, 1):
            raise PlanError("rent_period_days", msg("error.request.rent_period", value=repr(days)))

    @property
    def day(self) -> date | None:
        return self.start_date if isinstance(self.start_date, date) else None

    @property
    def period_s(self) -> float | None:
        return self.rent_period_days * DAY_S if self.rent_period_days else None


@dataclass(frozen=True)
class _Facts:
    """Everything one request says: the plan, its model, the answer it asks for and the user's options."""

    plan: TrainPlan
    spec: Any
    counts: Any
    match: ProfileMatch
    disk: DiskPlan
    options: RequestOptions
    period_days: int  # the stated period, else the estimated run in whole days
    chosen: OfferResult | None  # the offer the request asks for, when one was chosen
    example: OfferResult | None  # the offer it quotes: the chosen one, else the catalog's cheapest of the class
    trial: Any | None
    band: TimeBand | None = None  # the held-out track record beside match.time (gpuwork.sizing.time_band)

    @property
    def dataset_bytes(self) -> int:
        p = self.plan
        return p.dataset_bytes if p.dataset_bytes is not None else self.disk.line("dataset_raw").bytes


def rental_request(plan: TrainPlan, *, lang: str = "en", match: ProfileMatch | None = None,
                   offer: OfferResult | None = None, disk: DiskPlan | None = None, trial_record: Any | None = None,
                   options: RequestOptions | None = None, **settings: Any) -> RentalRequest:
    """The rental request for ``plan`` in ``lang`` ("en" or "ru").

    Args:
        plan: the run; dataset_bytes (or dataset_tokens) sizes the dataset and disk.
        match, disk: precomputed profile match / disk plan (computed when omitted).
        offer: a chosen offer for ``plan`` (e.g. the cheapest under the app's offer filters): the request asks for
            its card, count, nodes and mode, with its estimates and as its example (``offer_match``), instead of
            the profile's reference card. The surfaces pass the one answer (``gpuwork.estimate.decision.decide``):
            ``match=decision.match, offer=decision.offer``.
        trial_record: a TrialRecord (``gpuwork.measure.trial``) of this plan: its measured step time, throughput,
            memory, data wait and checkpoint round-trip are quoted, so the provider can reproduce them.
        options: what the request states (``RequestOptions``); its fields may also be given by name
            (``rental_request(plan, lang="ru", budget_usd=500, rent_period_days=30)``).

    Raises:
        PlanError: unknown language, bad date, budget or period.
    """
    if lang not in LANGS:
        raise PlanError("lang", msg("error.request.lang", value=repr(lang), choices=", ".join(LANGS)))
    o = dataclasses.replace(options or RequestOptions(), **settings)
    spec = spec_for_plan(plan)
    match = match or match_profile(plan, spec=spec, rental_period_s=o.period_s)
    disk = disk or estimate_disk(plan, spec, compression_ratio=o.compression_ratio)
    # the offer's setup unless the match is already that offer's (the decision's): the same plan may be priced on
    # another card or network than the profile's
    if offer is not None and (match.time is not offer.time or match.fitted_plan != offer.fit.plan):
        match = offer_match(match, offer, o.period_s)
    days = o.rent_period_days
    if days is None:
        days = max(1, math.ceil(match.time.total_s / DAY_S)) if match.time else 30
    example = offer if offer is not None or not o.include_offer else _best_offer(match, days)
    facts = _Facts(plan, spec, count_params(spec, plan), match, disk, o, days, offer, example, trial_record,
                   time_band(match.time) if match.time else None)
    lines = _request_lines(facts, lang)
    return RentalRequest(lang=lang, summary=lines[0], text="\n".join(lines), fields=_request_fields(facts, lang))


_PROGRAM_WARNINGS = ("time.no_bf16", "time.fp32_qlora")


def _request_lines(f: _Facts, lang: str) -> list[str]:
    """The request as text: the one-sentence summary, then the details, one per line."""
    plan, o, match = f.plan, f.options, f.match

    def say(m: Msg) -> str:
        return render(m, lang)

    room = msg("request.dataset.room") if plan.checkpoints_kept > 0 else None
    trial = msg("request.trial.required") if o.trial_required else msg("request.trial.none")
    summary = say(msg("request.summary", method=_method(plan), context=_context(plan, o.context_in_config),
                      dataset=msg("request.dataset", size_bytes=f.dataset_bytes, room=room),
                      period=msg("request.period", period=_period(f.period_days)), trial=trial))
    lines = [summary, ""]
    lines.append(say(msg("request.model", model=model_display_name(f.spec.name), params=f.spec.params_total,
                         trainable=f.counts.trainable, precision=plan.precision, optimizer=plan.optimizer)))
    lines.append(say(msg("stack.label", stack=plan.stack.value)))  # the stack the estimates below are priced with
    accum = msg("request.shape.accum", grad_accum=plan.grad_accum) if plan.grad_accum > 1 else None
    shape = msg("request.shape", seq_len=plan.seq_len, batch=plan.batch_size, accum=accum)
    if plan.packed_document_tokens:
        shape = msg("request.shape.documents", shape=shape, tokens=plan.packed_document_tokens)
    lines.append(say(msg("request.shape.in_config" if o.context_in_config else "request.shape.explicit",
                         shape=shape)))
    lines.append(say(msg("request.dataset_line", size_bytes=f.dataset_bytes, tokens=plan.dataset_tokens,
                         epochs=plan.epochs)))
    disk = f.disk
    lines.append(say(msg("request.disk", total_bytes=disk.recommended_bytes, count=disk.checkpoints_on_disk,
                         each_bytes=disk.checkpoint.total_bytes,
                         margin=round(disk.margin_bytes / max(disk.subtotal_bytes, 1), 2))))
    lines.append(say(msg("request.rental", period=_period(f.period_days),
                         how=msg("request.rental.estimated") if o.rent_period_days is None else None,
                         start=msg("request.rental.start", day=o.day.isoformat()) if o.day else None)))
    if o.budget_usd is not None:
        lines.append(say(msg("request.budget", budget_usd=o.budget_usd)))
    lines.extend(say(m) for m in _suggestion(match, f.example, o.budget_usd, f.chosen))
    if f.band is not None and match.time is not None:
        lines.append(say(band_request(f.band, match.time, _band_cost(f.band, f.example), o.budget_usd)))
    lines.extend(say(m) for m in _protocol(match, f.trial, lang))
    time = match.time
    # the time warnings about the program that runs (its precision), which the provider's run must match
    lines.extend(say(w) for w in (time.warnings if time else ()) if w.code in _PROGRAM_WARNINGS)
    if time is not None and time.total_s > f.period_days * DAY_S:
        lines.append(say(msg("request.too_long", days=math.ceil(time.total_s / DAY_S))))
    if o.trial_required:
        lines.append(say(msg("request.trial")))
    if match.checks:
        lines.append(say(msg("request.checks", checks=match.checks)))
    return lines


def _request_fields(f: _Facts, lang: str) -> dict[str, Any]:
    """The request's facts for a program (``RentalRequest.fields``, its JSON)."""
    plan, o, match, disk, time = f.plan, f.options, f.match, f.disk, f.match.time
    return {
        "method": plan.method.value,
        "model": model_display_name(f.spec.name),
        "model_ref": plan.model,
        "params_total": f.spec.params_total,
        "params_trainable": f.counts.trainable,
        "precision": plan.precision.value,
        "optimizer": plan.optimizer.value,
        "stack": plan.stack.value,
        "context_in_config": o.context_in_config,
        "seq_len": plan.seq_len,
        "batch_size": plan.batch_size,
        "grad_accum": plan.grad_accum,
        "packed_document_tokens": plan.packed_document_tokens,
        "dataset_bytes": f.dataset_bytes,
        "dataset_tokens": plan.dataset_tokens,
        "epochs": plan.epochs,
        "disk_recommended_bytes": disk.recommended_bytes,
        "disk": disk.as_dict(),
        "checkpoints_kept": plan.checkpoints_kept,
        "checkpoint_bytes": disk.checkpoint.total_bytes,
        "rent_period_days": f.period_days,
        "rent_period_from_estimate": o.rent_period_days is None,
        "trial_required": o.trial_required,
        "start_date": o.day.isoformat() if o.day else None,
        "budget_usd": o.budget_usd,
        "profile": ({"id": match.profile.profile_id, "name": render(match.profile.name, lang),
                     "mode": match.profile.mode.value} if match.profile else None),
        "suggested": _suggested_fields(f, lang),
        "estimates": {
            "memory_per_gpu_bytes": match.memory_per_gpu_bytes,
            "usable_per_gpu_bytes": match.usable_per_gpu_bytes,
            "step_time_s": time.step_time_s if time else None,
            "tokens_per_s": time.tokens_per_s if time else None,
            "total_s": time.total_s if time else None,
            "gpu_hours": time.gpu_hours if time else None,
            "mfu": time.mfu.value if time else None,
            "mfu_source": time.mfu.source if time else None,
            "eval_fraction": plan.eval_fraction,
            "eval_s": time.eval_s if time else None,
            "track_record": _band_fields(f),
        },
        "trial": _trial_dict(f.trial),
        "reasons": render_all(match.reasons, lang),
        "reason_codes": [r.as_dict() for r in match.reasons],
    }


def _band_cost(band: TimeBand, offer: OfferResult | None) -> float | None:
    """The example offer's cost for its run at the record's 90th percentile: its price per second of the run
    times that run's time, at least its minimum rental (preemptions not counted)."""
    if offer is None or offer.time is None or offer.run_cost_usd is None or offer.time.total_s <= 0:
        return None
    per_s = offer.run_cost_usd / offer.time.total_s
    return max(per_s * band.run_times(offer.time)[2], offer.min_rental_cost_usd)


def _band_fields(f: _Facts) -> dict[str, Any] | None:
    """The track record and the run, rental and example cost at its 90th percentile (the request's JSON)."""
    band, time = f.band, f.match.time
    if band is None or time is None:
        return None
    run_s = band.run_times(time)[2]
    return {**band.as_dict(), "run_s_p90": run_s, "rent_period_days_p90": max(1, math.ceil(run_s / DAY_S)),
            "example_cost_usd_p90": _band_cost(band, f.example)}


def _suggested_fields(f: _Facts, lang: str) -> dict[str, Any]:
    """What the request asks for: the card, count, nodes, sharding, mode, software and the example offer."""
    match, time = f.match, f.match.time
    priced = match.fitted_plan or f.plan  # the plan the estimates below were priced with
    vendor = match_vendor(match)
    framework, launcher, backend = _framework(priced, vendor, lang)
    return {
        "gpu_class": render(_gpu_class(match, f.chosen), lang),
        "reference_gpu": match.gpu_id,
        "gpus": match.gpus,
        "nodes": match.nodes,
        "network": time.comm.network if time else None,  # the networks.csv id priced between nodes
        "sharding": match.sharding.value,
        # hybrid sharding: the GPUs of one shard group (what divides the model states); None otherwise
        "shard_group_gpus": match.fitted_plan.shard_ranks if match.fitted_plan and match.sharding.hybrid else None,
        # when gradients are reduced (ddp / zero1 / zero2: TrainPlan.comm_overlap), as the times were priced
        "comm_overlap": priced.comm_overlap.value,
        # how ZeRO-1 syncs (TrainPlan.zero_sync), as the times were priced
        "zero_sync": priced.zero_sync.value,
        # torch FSDP's units: one per block or the whole model (TrainPlan.fsdp_wrap), as the estimate priced them
        "fsdp_wrap": priced.fsdp_wrap.value,
        # gradient checkpointing and what it recomputes (TrainPlan.recompute; None without it), as priced
        "grad_checkpointing": priced.grad_checkpointing,
        "recompute": priced.recompute.value if priced.grad_checkpointing else None,
        # checkpointing on one block in n (TrainPlan.recompute_every; None without checkpointing)
        "recompute_every": priced.recompute_every if priced.grad_checkpointing else None,
        # whether the optimizer step's gradient clipping was priced (TrainPlan.grad_clip)
        "grad_clip": priced.grad_clip,
        # whether torch's deterministic mode's fills were priced (TrainPlan.deterministic)
        "deterministic": priced.deterministic,
        # whether every launch was priced as waiting for its kernel (TrainPlan.launch_blocking)
        "launch_blocking": priced.launch_blocking,
        # whether freeze's backward was priced through the frozen blocks too (TrainPlan.input_require_grads)
        "input_require_grads": _input_grads(priced),
        # whether fp32 GEMMs were priced on the TF32 tensor cores (TrainPlan.tf32)
        "tf32": priced.tf32,
        # whether the blocks' linears were priced in FP8 (TrainPlan.fp8_linear)
        "fp8_linear": priced.fp8_linear,
        # which kernel SDPA was priced with (TrainPlan.sdpa_backend)
        "sdpa_backend": priced.sdpa_backend.value,
        # the optimizer's weight decay as priced (TrainPlan.weight_decay_in_effect: stated, else the stack's default)
        "weight_decay": priced.weight_decay_in_effect,
        "state_bytes_per_param": state_bytes_per_param(match.fitted_plan) if match.fitted_plan else None,
        "mode": match.profile.mode.value if match.profile else None,
        "rental_break_even_s": match.rental.break_even_s if match.rental else None,
        "vendor": vendor,
        "framework": framework,
        "launcher": launcher,
        "backend": backend,
        "comm_bytes_per_step": time.comm.bytes_per_step if time else None,
        "comm_bytes_per_s_per_gpu": _needed_bytes_s(time),
        "changes": render_all(match.changes, lang),
        "offer": _offer_dict(f.example),
    }


@functools.lru_cache(maxsize=1)
def _hub_ids() -> dict[str, str]:
    path = models_dir() / "index.csv"
    if not path.is_file():
        return {}
    text = reading.read_text(path, reading.TABLE)  # GPUWORK_DATA may point anywhere: a bounded, regular file
    return {row["name"]: row["hf_id"] for row in csv.DictReader(io.StringIO(text, newline="")) if row.get("hf_id")}


def model_display_name(name: str) -> str:
    """The Hugging Face id of a bundled preset (meta-llama/Llama-3.1-8B), else the name as given."""
    return _hub_ids().get(name, name)


def match_vendor(match: ProfileMatch) -> str | None:
    """The vendor of the profile's reference card (NVIDIA / AMD): the class, the example and the software agree."""
    if match.gpu_id is None:
        return None
    from gpuwork.facts.catalog import get_gpu

    return get_gpu(match.gpu_id).vendor


def _in_class(match: ProfileMatch, gpu: Any) -> bool:
    """Whether a card belongs to the class the request names: the reference card's vendor, and its memory class
    (24 GB: under 48; 48 GB: under 80; 80 GB server: 80 to under 100; 80 GB or more: server, 80 and up)."""
    if match.profile is None or gpu.vendor != match_vendor(match):
        return False
    gb = gpu.memory_gb
    pid = match.profile.profile_id
    if pid == "01":
        card = 24 if match.gpu_id == "rtx4090" else 48
        return card <= gb < (48 if card == 24 else 80)
    if gpu.gpu_class is not GpuClass.SERVER or gb < 80:
        return False
    return gb < 100 if pid == "02" else True


def _best_offer(match: ProfileMatch, period_days: int) -> OfferResult | None:
    """Cheapest fitting offer of the match's rental mode, of the class the request names (``_in_class``), whose
    minimum rental is not longer than the rental period (or the run); on-demand offers when no such offer fits."""
    if match.profile is None:
        return None
    plan = match.fitted_plan or match.plan
    horizon_h = max(period_days * 24, (match.time.total_s / HOUR_S) if match.time else 0)
    for mode in dict.fromkeys((match.profile.mode.value, "on-demand")):
        results = [r for r in evaluate_offers(plan, mode=mode, include_unfit=False)
                   if r.offer.min_rental_hours <= horizon_h]
        results = [r for r in results if _in_class(match, r.offer.gpu)]
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


_STACK_NAMES = {
    Stack.HF_TRAINER: "PyTorch, Hugging Face Trainer (transformers{peft})",
    Stack.HF_TRAINER_2023: "PyTorch, Hugging Face Trainer (transformers{peft})",
    Stack.HF_TRAINER_2024: "PyTorch, Hugging Face Trainer (transformers{peft})",
    Stack.HF_LOOP_2024: "PyTorch ({loop}, transformers 4.x{peft})",
    Stack.HF_LIGER: "PyTorch, Hugging Face Trainer (transformers{peft}, liger_kernel)",
    Stack.TORCH_COMPILE: "PyTorch, Hugging Face Trainer (transformers{peft}, torch.compile)",
    Stack.UNSLOTH: "unsloth (PyTorch{peft})",
    Stack.UNSLOTH_2023_12: "unsloth (PyTorch{peft})",
    Stack.UNSLOTH_2024_04: "unsloth (PyTorch{peft})",
    Stack.TORCHTUNE: "torchtune (PyTorch)",
    Stack.FRAMEWORK: "torchtitan/Megatron/NeMo (PyTorch)",
    Stack.LITGPT_2023: "Lit-GPT (PyTorch, Lightning Fabric)",  # its own LoRA modules, no peft
    Stack.TORCH_LOOP: "PyTorch ({loop}{peft})",
    Stack.TORCH_LOOP_COMPILE: "PyTorch ({loop}{peft}, torch.compile)",
}


def _framework(plan: TrainPlan, vendor: str | None, lang: str) -> tuple[str, str | None, str | None]:
    """(framework, launcher, collective backend) from the plan's stack and sharding, e.g.
    ("PyTorch, Hugging Face Trainer (transformers/peft), PyTorch FSDP", "accelerate/torchrun", "NCCL"); a plain
    loop is named in ``lang``."""
    peft = "/peft" if plan.uses_adapters and plan.stack not in UNSLOTH_STACKS else (
        ", peft" if plan.uses_adapters else "")
    parts = [_STACK_NAMES[plan.stack].format(peft=peft, loop=text("request.own_loop", lang))]
    if plan.stack is Stack.HF_TRAINER_2024 and plan.uses_adapters:
        parts.append("peft>=0.7,<0.12")  # the releases that keep adapters in the base's dtype (docs/peft_adapter_dtype.md)
    if plan.method is Method.QLORA:
        # the older stack names the releases whose 4-bit matmul keeps its input (docs/memory_bnb_releases.md)
        kept = load_rates().stacks[plan.stack].bnb_4bit_input == "kept"  # the stack's own column, one source of truth
        parts.append("bitsandbytes<=0.43.1" if kept else "bitsandbytes")
    if plan.gpus == 1:
        return ", ".join(parts), None, None
    if plan.sharding is Sharding.DDP:
        parts.append("PyTorch DDP")
        launcher = "accelerate/torchrun"
    elif plan.sharding in (Sharding.FSDP, Sharding.HSDP, Sharding.HSDP_ZERO2):
        hybrid = {Sharding.HSDP: " HYBRID_SHARD", Sharding.HSDP_ZERO2: " HYBRID_SHARD_ZERO2"}.get(plan.sharding, "")
        parts.append("PyTorch FSDP" + hybrid)
        launcher = "accelerate/torchrun"
    else:
        level = plan.sharding.value[-1]
        parts.append(f"ZeRO-{level}" + (" + offload" if plan.offload_optimizer else ""))
        launcher = "deepspeed/accelerate"
    if plan.stack is Stack.TORCHTUNE:
        launcher = "tune/torchrun"
    if plan.stack is Stack.LITGPT_2023:
        launcher = "Lightning Fabric"  # fabric.launch starts the processes
    return ", ".join(parts), launcher, "RCCL" if vendor == "AMD" else "NCCL"


def _needed_bytes_s(time: TimeEstimate | None) -> float | None:
    """Bytes per second each GPU must move on average: the step's traffic over the step time."""
    if time is None or time.comm.bytes_per_step <= 0 or time.step_time_s <= 0:
        return None
    return time.comm.bytes_per_step / time.step_time_s


def _protocol(match: ProfileMatch, trial: Any | None, lang: str) -> list[Msg]:
    """What the provider needs to reproduce the run: rental mode, software and launcher, links, validation, the
    trial's measured figures."""
    out: list[Msg] = []
    if match.rental is not None:
        out.append(msg("request.rental_mode", reason=match.rental.reason))
    plan = match.fitted_plan or match.plan
    framework, launcher, backend = _framework(plan, match_vendor(match), lang)
    launch = (msg("request.launch.multi", gpus=plan.gpus, launcher=launcher, backend=backend)
              if launcher else msg("request.launch.single"))
    out.append(msg("request.framework", framework=framework, launch=launch))
    settings = _settings(plan)
    if settings:
        out.append(msg("request.settings", settings=settings))
    t = match.time
    if t is not None:
        needed = _needed_bytes_s(t)
        if needed is None:
            out.append(msg("request.links.single"))
        else:
            # the network the estimate priced between nodes (the chosen offer's); none on one node
            between = (msg("request.links.between", network=t.comm.network, need_bytes_s=needed)
                       if t.comm.network is not None else None)
            out.append(msg("request.links", bytes_step=t.comm.bytes_per_step, need_bytes_s=needed,
                           step_s=t.step_time_s, link=t.comm.link, verdict=t.comm.verdict, between=between))
        out.append(msg("request.validation", share=plan.eval_fraction, eval_s=t.eval_s, run_s=t.total_s))
    if trial is not None:
        out.append(_trial_line(trial))
    return out


# the non-default values of the plan's time-changing fields, as the request states them
_OVERLAP_SETTINGS = {CommOverlap.OFF: msg("request.setting.comm_overlap.off"),
                     CommOverlap.ON: msg("request.setting.comm_overlap.on")}
_ZERO_SYNC_SETTINGS = {ZeroSync.SLICED: msg("request.setting.zero_sync.sliced")}
_SDPA_SETTINGS = {SdpaBackend.AUTO: msg("request.setting.sdpa_backend.auto"),
                  SdpaBackend.CUDNN: msg("request.setting.sdpa_backend.cudnn"),
                  SdpaBackend.EFFICIENT: msg("request.setting.sdpa_backend.efficient")}


def _input_grads(plan: TrainPlan) -> bool:
    """Whether the estimate ran the backward through the embeddings' output (the plan's, else its stack's)."""
    return bool(with_stack_input_grads(plan).input_require_grads)


def _settings(plan: TrainPlan) -> tuple[Msg, ...]:
    """The plan's fields that change the estimated time, each when it is not the default (the provider's run must
    set them as priced)."""
    out = []
    if plan.comm_overlap in _OVERLAP_SETTINGS:
        out.append(_OVERLAP_SETTINGS[plan.comm_overlap])
    if plan.zero_sync in _ZERO_SYNC_SETTINGS:
        out.append(_ZERO_SYNC_SETTINGS[plan.zero_sync])
    if plan.deterministic:
        out.append(msg("request.setting.deterministic"))
    if plan.launch_blocking:
        out.append(msg("request.setting.launch_blocking"))
    if plan.tf32:
        out.append(msg("request.setting.tf32"))
    if plan.fp8_linear:
        out.append(msg("request.setting.fp8_linear"))
    if _input_grads(plan) and plan.method is Method.FREEZE:
        out.append(msg("request.setting.input_require_grads"))
    if plan.sdpa_backend in _SDPA_SETTINGS:
        out.append(_SDPA_SETTINGS[plan.sdpa_backend])
    if plan.weight_decay is not None:  # stated: the run must pass it to its optimizer as priced
        out.append(msg("request.setting.weight_decay", value=f"{plan.weight_decay:g}"))
    return tuple(out)


def _trial_line(trial: Any) -> Msg:
    env = trial.environment
    s = trial.summary
    if s is None:
        return msg("request.trial_measured.failed", device=env.device_name,
                   error=trial.error or msg("request.gpu_class.none"))
    ck = trial.checkpoint
    checkpoint = (msg("request.trial_measured.checkpoint", size_bytes=ck.bytes_on_disk, save_s=ck.save_s,
                      restore_s=ck.restore_s) if ck is not None else None)
    return msg("request.trial_measured", device=env.device_name, steps=s.measured_steps, step_s=s.median_step_time_s,
               tokens_s=s.tokens_per_s, peak_bytes=s.peak_trial_memory_bytes, wait=s.data_wait_fraction,
               checkpoint=checkpoint)


def _trial_dict(trial: Any | None) -> dict[str, Any] | None:
    if trial is None or trial.summary is None:
        return None
    s = trial.summary
    ck = trial.checkpoint
    return {"device": trial.environment.device_name, "measured_steps": s.measured_steps,
            "median_step_time_s": s.median_step_time_s, "tokens_per_s": s.tokens_per_s,
            "peak_memory_bytes": s.peak_trial_memory_bytes, "data_wait_fraction": s.data_wait_fraction,
            "checkpoint_bytes": ck.bytes_on_disk if ck else None, "checkpoint_save_s": ck.save_s if ck else None,
            "checkpoint_restore_s": ck.restore_s if ck else None, "run_id": trial.run_id}


def _suggestion(match: ProfileMatch, offer: OfferResult | None, budget_usd: float | None,
                chosen: OfferResult | None = None) -> list[Msg]:
    if match.profile is None:
        return [msg("request.no_configuration", reasons=match.reasons)]
    p = match.profile
    where = msg("request.suggested.nodes", nodes=match.nodes) if match.nodes > 1 else None
    # the sharding the answer was sized with, and what it keeps per trained parameter (the same fitted plan)
    sharding = (msg("request.suggested.sharding_state", sharding=sharding_words(match.fitted_plan))
                if match.gpus > 1 and match.fitted_plan is not None else None)
    out = [msg("request.suggested", gpus=match.gpus, gpu_class=_gpu_class(match, chosen), gpu=match.gpu_name,
               where=where,
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
        out.append(msg("request.example", offer=offer_name(offer.offer), price_usd=offer.offer.price_per_gpu_hour,
                       cost_usd=offer.expected_cost_usd, verdict=verdict))
    return out


__all__ = ["LANGS", "RentalRequest", "RequestOptions", "model_display_name", "offer_match", "plural_ru", "rental_request"]
