"""Estimates straight from a plan: gather the facts (``gpuwork.facts.resolve``), then run the pure estimators.

These are the functions the workbook, the CLI, the trial and the Python API call. Each takes the same
arguments as its pure twin in ``gpuwork.estimate`` but looks up what the plan names (model, GPU, catalog)
itself; pass ``spec=`` to reuse a spec you already have.

    >>> est = estimate_memory(TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048))
    >>> est.device_total_bytes / GIB
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuwork.errors import CatalogError, PlanError
from gpuwork.estimate import advisor as _advisor
from gpuwork.estimate import band as _band
from gpuwork.estimate import decision as _decision
from gpuwork.estimate import disk as _disk
from gpuwork.estimate import fitmatrix as _fitmatrix
from gpuwork.estimate import memory as _memory
from gpuwork.estimate import offers as _offers
from gpuwork.estimate import profiles as _profiles
from gpuwork.estimate import timing as _timing
from gpuwork.facts.catalog import GpuSpec, Offer, get_gpu, load_offers
from gpuwork.facts.model import ModelSpec
from gpuwork.facts.rates import with_stack_input_grads
from gpuwork.facts.resolve import Inputs, resolve
from gpuwork.facts.track_record import load_track_record
from gpuwork.message import msg
from gpuwork.plan import TrainPlan


def estimate_memory(plan: TrainPlan, spec: ModelSpec | None = None,
                    moe_experts: str | None = None, gpu: GpuSpec | str | None = None,
                    cache_emptied: bool = False) -> _memory.MemoryEstimate:
    """Per-GPU memory of one training step (see ``gpuwork.estimate.memory.estimate_memory``); ``gpu``: the card
    it runs on, whose memory bounds the allocator's cache where that is replayed (None: not bounded);
    ``cache_emptied``: the peak is measured after ``torch.cuda.empty_cache()`` (a measurement's protocol)."""
    _check_plan(plan)
    inputs = resolve(plan, spec)
    return _memory.estimate_memory(plan, inputs.spec, moe_experts=moe_experts,
                                   device_bytes=inputs.gpu(gpu).memory_total_bytes if gpu is not None else None,
                                   cache_emptied=cache_emptied)


def estimate_time(plan: TrainPlan, gpu: GpuSpec | str, *, spec: ModelSpec | None = None,
                  **options: Any) -> _timing.TimeEstimate:
    """Step and total time on ``plan.gpus`` GPUs of type ``gpu`` (a GpuSpec, gpu_id or display name)."""
    _check_plan(plan)
    inputs = resolve(plan, spec)
    return _timing.estimate_time(plan, inputs.gpu(gpu), inputs, **options)


def time_band(time: _timing.TimeEstimate, gpu: GpuSpec | None = None) -> _band.TimeBand:
    """The held-out track record beside ``time`` (see ``gpuwork.estimate.band.time_band``; ``gpu``: the card it
    was priced on, looked up by its id when omitted): computed where it is shown, never inside ``estimate_time``."""
    card = gpu if gpu is not None and gpu.gpu_id == time.gpu_id else get_gpu(time.gpu_id)
    return _band.time_band(time.plan, card, time.comm.nodes, load_track_record())


def scaling(plan: TrainPlan, gpu: GpuSpec | str, *, spec: ModelSpec | None = None,
            **options: Any) -> tuple[_timing.ScalingPoint, ...]:
    """Tokens/s per GPU from 1 to 64 GPUs (see ``gpuwork.estimate.timing.scaling``)."""
    _check_plan(plan)
    inputs = resolve(plan, spec)
    return _timing.scaling(plan, inputs.gpu(gpu), inputs, **options)


def flops_per_token(plan: TrainPlan, spec: ModelSpec | None = None) -> _timing.FlopsPerToken:
    _check_plan(plan)
    return _timing.flops_per_token(with_stack_input_grads(plan), spec or resolve(plan).spec)


def estimate_disk(plan: TrainPlan, spec: ModelSpec | None = None, **options: Any) -> _disk.DiskPlan:
    """Disk the run needs (see ``gpuwork.estimate.disk.estimate_disk``)."""
    _check_plan(plan)
    return _disk.estimate_disk(plan, spec or resolve(plan).spec, **options)


def checkpoint_bytes(plan: TrainPlan, spec: ModelSpec | None = None) -> int:
    _check_plan(plan)
    return _disk.checkpoint_bytes(plan, spec or resolve(plan).spec)


def evaluate_offers(plan: TrainPlan, offers: Iterable[Offer] | None = None, *, spec: ModelSpec | None = None,
                    **options: Any) -> list[_offers.OfferResult]:
    """Every offer of the catalog (or ``offers``) evaluated for ``plan`` and ranked."""
    _check_plan(plan)
    return _offers.evaluate_offers(plan, _offer_list(offers), resolve(plan, spec),
                                   **options)


def match_profile(plan: TrainPlan, *, spec: ModelSpec | None = None, **options: Any) -> _profiles.ProfileMatch:
    """Which rental profile suits ``plan``, with the reasons (the rental mode priced on the bundled catalog)."""
    _check_plan(plan)
    options["offers"] = _offer_list(options.get("offers"))
    return _profiles.match_profile(plan, resolve(plan, spec), **options)


def advise(plan: TrainPlan, offers: Iterable[Offer] | None = None, *, spec: ModelSpec | None = None,
           **options: Any) -> _advisor.Advice:
    """Changes that make ``plan`` fit, or fit a cheaper card (see ``gpuwork.estimate.advisor.advise``)."""
    _check_plan(plan)
    return _advisor.advise(plan, _offer_list(offers), resolve(plan, spec), **options)


def decide(plan: TrainPlan, offers: Iterable[Offer] | None = None, *, spec: ModelSpec | None = None,
           constraints: _decision.Constraints | None = None, **options: Any) -> _decision.Decision:
    """The one answer for ``plan`` (see ``gpuwork.estimate.decision.decide``) on the catalog (or ``offers``)."""
    _check_plan(plan)
    return _decision.decide(plan, resolve(plan, spec), _offer_list(offers), constraints,
                            **options)


def _check_plan(plan: Any) -> None:
    """The API's plan argument is a TrainPlan: anything else (None, a dict of fields) is the package's own error
    naming what to pass, not an AttributeError from deep inside an estimator."""
    if not isinstance(plan, TrainPlan):
        raise PlanError("plan", msg("error.api.plan_type", kind=type(plan).__name__))


def _offer_list(offers: Iterable[Offer] | None) -> list[Offer]:
    """The catalog when ``offers`` is None, else the offers given, each checked to be an ``Offer``."""
    if offers is None:
        return load_offers()
    if isinstance(offers, str | bytes | Offer) or not isinstance(offers, Iterable):
        raise CatalogError(msg("error.api.offers_type", kind=type(offers).__name__))
    listed = list(offers)
    for offer in listed:
        if not isinstance(offer, Offer):
            raise CatalogError(msg("error.api.offers_type", kind=type(offer).__name__))
    return listed


def parse_have(value: str | None) -> tuple[int, GpuSpec] | None:
    """'1xrtx4090', '2 x A100 80GB SXM', '1×RTX 4090' -> (count, card): the cards the user owns; '' -> None.

    Raises PlanError (not a count and a card) or CatalogError (an unknown card, with the known ones)."""
    import re

    from gpuwork.facts.catalog import get_gpu

    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise PlanError("have", msg("error.args.have", value=repr(value)))
    found = re.fullmatch(r"\s*(\d+)\s*[x×*]\s*(\S.*?)\s*", value, flags=re.I)
    if found is None or int(found[1]) < 1:
        raise PlanError("have", msg("error.args.have", value=repr(value)))
    return int(found[1]), get_gpu(found[2])


def parse_seq_len(text: Any, field: str = "seq_len") -> int:
    """A sequence length as people write it: "4096", "4k" -> 4,096 and "32k" -> 32,768 (a context's "k" is 1,024,
    as model cards count it), "1.5k" -> 1,536; other suffixes as ``gpuwork.units.parse_count`` ("1.5M" ->
    1,500,000). Raises PlanError naming ``field`` when it is not a whole number of tokens."""
    import contextlib
    import re
    from decimal import Decimal, InvalidOperation

    from gpuwork.units import parse_count

    if isinstance(text, str):
        found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*k\s*(?:tokens?)?\s*", text, flags=re.I)
        if found is not None:
            with contextlib.suppress(InvalidOperation):
                value = Decimal(found[1]) * 1024
                if value == value.to_integral_value():
                    return parse_count(int(value), field, minimum=None)
    return parse_count(text, field, minimum=None)


def fit_matrix(plan: TrainPlan, offers: Iterable[Offer] | None = None, *, spec: ModelSpec | None = None,
               **options: Any) -> _fitmatrix.FitMatrix:
    """Every catalog GPU x 1/2/4/8: fits, headroom, largest batch and sequence, time, cost
    (see ``gpuwork.estimate.fitmatrix.fit_matrix``)."""
    _check_plan(plan)
    return _fitmatrix.fit_matrix(plan, _offer_list(offers), resolve(plan, spec), **options)


def fit_plan(plan: TrainPlan, gpu: GpuSpec, *, spec: ModelSpec | None = None, **options: Any) -> _offers.Fit:
    _check_plan(plan)
    return _offers.fit_plan(plan, gpu, spec=spec or resolve(plan).spec, **options)


__all__ = ["Inputs", "advise", "checkpoint_bytes", "decide", "estimate_disk", "estimate_memory", "estimate_time", "evaluate_offers",
           "fit_matrix", "fit_plan", "flops_per_token", "match_profile", "parse_have", "parse_seq_len", "resolve", "scaling",
           "time_band"]
