"""From a trial's measured steps to the whole run: time, and cost per catalog offer.

``extrapolate(record, plan)`` is the one whole-run model of a measured trial: ``gpuwork trial``
prints it and the trial panel shows it. It counts

- steps = ceil(dataset_tokens x epochs / tokens_per_step), tokens_per_step = the trial's tokens per
  GPU and step x the plan's GPUs;
- train_s = steps x the median measured step time (data wait included);
- eval_s = train_s x eval_fraction (validation);
- checkpoint_s = steps // checkpoint_every_steps writes of the checkpoint the round-trip wrote
  (its measured size; estimated when the trial ran none) at a disk write speed;
- margin_s = margin x (train + eval + checkpoints), the estimator's TIME_MARGIN by default, so a
  measured and an estimated total are comparable (``gpuwork.estimate.timing``);
- the same at the ends of the median step's 95 % confidence interval (``gpuwork.measure.stability``):
  ``total_low_s`` / ``total_high_s`` and ``cost_low`` / ``cost_high``, so the whole run comes as a range
  (none when the trial measured too few steps for an interval: a note says so);
- per offer of the catalog GPU the trial ran on (``gpuwork.facts.catalog.match_gpu_name``): the
  billed hours (``gpuwork.estimate.offers.billed_hours``: reserved offers in whole periods, others
  at least the minimum rental), the GPUs billed (whole nodes) and the cost.

Example:
    >>> ext = extrapolate(record, record.plan.replace(dataset_tokens=10**9), price_per_gpu_hour=2.0)
    >>> ext.total_s > ext.train_s
    True

Limitations: every step of the run is assumed to cost the measured median (same shapes, same data
speed); the range covers the uncertainty of that median, not a drift of the step time over a long
run (a note gives the measured drift when the trend across the trial exceeds the interval), nor checkpoint writes
or evaluation slower than assumed; more GPUs than the trial measured scale linearly (communication between them is not
measured); interruptible offers are priced without preemption rework.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuwork.estimate.offers import billed_hours, billed_nodes
from gpuwork.estimate.timing import DISK_WRITE_BYTES_S, TIME_MARGIN, whole_run
from gpuwork.facts.catalog import Mode, Network, match_gpu_name
from gpuwork.measure.coded import to_json
from gpuwork.measure.errors import TrialError
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.units import HOUR_S

if TYPE_CHECKING:
    from gpuwork.measure.record import TrialRecord, TrialSummary

# What must be the trial's for its step time to hold for the plan.
DRIFT_NOTE_SHARE = 0.02  # a drift that moved the step time more than this (or the interval) over the trial: noted
_SHAPE_FIELDS = ("model", "method", "precision", "optimizer", "seq_len", "batch_size", "grad_accum",
                 "grad_checkpointing", "attention", "lora_r", "lora_targets", "sharding")


@dataclass(frozen=True)
class OfferCost:
    """The extrapolated run priced at one catalog offer (``gpuwork.facts.catalog.load_offers``)."""

    offer_id: str
    provider: str
    gpu_id: str
    mode: str  # on-demand | reserved | interruptible
    region: str
    price_per_gpu_hour: float  # USD
    min_rental_hours: float
    gpus_per_node: int
    billed_hours: float  # gpuwork.estimate.offers.billed_hours of the run's hours
    billed_gpus: int  # whole nodes: ceil(run GPUs / gpus_per_node) x gpus_per_node
    cost: float  # USD: billed_hours x billed_gpus x price_per_gpu_hour
    notes: tuple[Msg, ...]  # e.g. extrapolation.offer.interruptible (preemption rework not included)
    cost_low: float | None = None  # at the ends of the step time's interval (billed the same way)
    cost_high: float | None = None


@dataclass(frozen=True)
class Extrapolation:
    """Total time (and cost) of the whole run from a trial's measured steady-state step time.

    total_s = train_s + eval_s + checkpoint_s + margin_s (see the module docstring).
    """

    trial: str  # the record's label
    device_name: str  # as the trial's device reported it
    gpus: int  # GPUs of the run being extrapolated (the plan's)
    measured_gpus: int  # processes the trial ran on
    step_time_s: float  # steady state: median measured step time (data wait included)
    tokens_per_step: int  # all GPUs of the run
    tokens_per_s: float
    dataset_tokens: int
    epochs: float
    steps: int
    train_s: float
    eval_fraction: float
    eval_s: float
    checkpoint_every_steps: int
    checkpoints: int
    checkpoint_bytes: int  # one checkpoint, as measured by the round-trip (or estimated, see notes)
    checkpoint_bytes_measured: bool
    checkpoint_write_bytes_s: float
    checkpoint_s: float
    margin: float
    margin_s: float
    total_s: float
    price_per_gpu_hour: float | None
    cost: float | None  # USD at price_per_gpu_hour: total hours x gpus x price
    catalog_gpu_id: str | None  # the catalog GPU the trial's device matched, if any
    catalog_gpu_name: str | None  # its display name, e.g. "H100 SXM"
    offers: tuple[OfferCost, ...]  # the same GPU model's catalog offers, cheapest first
    notes: tuple[Msg, ...]  # what the total leaves out or assumes (extrapolation.* codes)
    # the whole run at the ends of the median step's confidence interval (None: no interval measured)
    confidence: float | None = None
    step_time_low_s: float | None = None
    step_time_high_s: float | None = None
    total_low_s: float | None = None
    total_high_s: float | None = None
    cost_low: float | None = None
    cost_high: float | None = None
    drift_per_100_steps: float | None = None  # as measured by the trial

    @property
    def total_hours(self) -> float:
        return self.total_s / HOUR_S

    @property
    def gpu_hours(self) -> float:
        return self.total_s / HOUR_S * self.gpus

    def as_dict(self) -> dict[str, Any]:
        return {**to_json(self), "total_hours": self.total_hours, "gpu_hours": self.gpu_hours}


def extrapolate(record: TrialRecord, plan: TrainPlan | None = None, *, eval_fraction: float | None = None,
                checkpoint_write_bytes_s: float = DISK_WRITE_BYTES_S, margin: float = TIME_MARGIN,
                price_per_gpu_hour: float | None = None, offers: Sequence[Any] | None = None) -> Extrapolation:
    """The whole run's time (and cost) from a trial's measured steps. Pure apart from reading the catalog.

    Args:
        record: a trial that fits, with measured steps (``gpuwork.measure.record.TrialRecord``).
        plan: the run to extrapolate to (dataset_tokens, epochs, eval_fraction,
            checkpoint_every_steps, gpus); None = the trial's own plan. Its batch shape (model,
            method, precision, seq_len, batch_size, grad_accum, ...) must be the trial's.
        eval_fraction: share of training time spent on validation; None = plan.eval_fraction.
        checkpoint_write_bytes_s: disk write speed for checkpoints, bytes/s (the estimator's
            DISK_WRITE_BYTES_S by default).
        margin: share added to the total (the estimator's TIME_MARGIN by default).
        price_per_gpu_hour: USD per GPU-hour, for ``cost``.
        offers: catalog offers to price; None = ``gpuwork.facts.catalog.load_offers()`` of the GPU
            model the trial ran on (none when the device matches no catalog GPU, e.g. a CPU).

    Raises TrialError for a trial with no measured step, another batch shape, or bad arguments.
    """
    plan, eval_fraction = _checked(record, plan, eval_fraction, checkpoint_write_bytes_s, margin, price_per_gpu_hour)
    assert record.summary is not None
    notes: list[Msg] = []
    env = record.environment
    measured_gpus = record.world_size
    per_gpu_tokens = record.summary.tokens_per_step // measured_gpus
    tokens_per_step = per_gpu_tokens * plan.gpus
    if env.device == "cpu":
        notes.append(msg("extrapolation.cpu"))
    if plan.gpus != measured_gpus:
        notes.append(msg("extrapolation.linear_scaling", measured=measured_gpus, gpus=plan.gpus))
    step_s = record.summary.median_step_time_s
    if record.checkpoint is not None:
        ckpt_bytes, measured_ckpt = record.checkpoint.bytes_on_disk, True
    else:
        from gpuwork.sizing import checkpoint_bytes

        ckpt_bytes, measured_ckpt = checkpoint_bytes(plan), False
        notes.append(msg("extrapolation.checkpoint_estimated"))
    run = whole_run(plan, step_s, tokens_per_step, checkpoint_bytes=ckpt_bytes, eval_fraction=eval_fraction,
                    disk_write_bytes_s=checkpoint_write_bytes_s, margin=margin)
    steps, train_s, eval_s, checkpoints, ckpt_s, margin_s, total_s = (
        run.steps, run.train_s, run.eval_s, run.checkpoints, run.checkpoint_s, run.margin_s, run.total_s)
    hours = total_s / HOUR_S
    cost = hours * plan.gpus * price_per_gpu_hour if price_per_gpu_hour is not None else None
    summary = record.summary
    low_s, high_s = summary.step_time_low_s, summary.step_time_high_s
    total_low = total_high = cost_low = cost_high = None
    if low_s is not None and high_s is not None:
        total_low, total_high = (whole_run(plan, t, tokens_per_step, checkpoint_bytes=ckpt_bytes,
                                           eval_fraction=eval_fraction, disk_write_bytes_s=checkpoint_write_bytes_s,
                                           margin=margin).total_s for t in (low_s, high_s))
        if price_per_gpu_hour is not None:
            cost_low, cost_high = (t / HOUR_S * plan.gpus * price_per_gpu_hour for t in (total_low, total_high))
    notes[:0] = _range_notes(summary)  # said first, before what the total assumes
    hours_range = ((total_low / HOUR_S, total_high / HOUR_S) if total_low is not None and total_high is not None
                   else None)
    gpu, priced = _priced_offers(record, offers, hours, plan.gpus, hours_range, notes)
    return Extrapolation(
        trial=record.label, device_name=env.device_name, gpus=plan.gpus, measured_gpus=measured_gpus,
        step_time_s=step_s, tokens_per_step=tokens_per_step, tokens_per_s=tokens_per_step / step_s,
        dataset_tokens=plan.dataset_tokens, epochs=plan.epochs, steps=steps, train_s=train_s,
        eval_fraction=eval_fraction, eval_s=eval_s, checkpoint_every_steps=plan.checkpoint_every_steps,
        checkpoints=checkpoints, checkpoint_bytes=ckpt_bytes, checkpoint_bytes_measured=measured_ckpt,
        checkpoint_write_bytes_s=checkpoint_write_bytes_s, checkpoint_s=ckpt_s, margin=margin, margin_s=margin_s,
        total_s=total_s, price_per_gpu_hour=price_per_gpu_hour, cost=cost,
        catalog_gpu_id=gpu.gpu_id if gpu is not None else None,
        catalog_gpu_name=gpu.display_name if gpu is not None else None, offers=tuple(priced), notes=tuple(notes),
        confidence=summary.step_time_confidence if low_s is not None else None, step_time_low_s=low_s,
        step_time_high_s=high_s, total_low_s=total_low, total_high_s=total_high, cost_low=cost_low,
        cost_high=cost_high, drift_per_100_steps=summary.drift_per_100_steps,
    )


def _checked(record: TrialRecord, plan: TrainPlan | None, eval_fraction: float | None,
             checkpoint_write_bytes_s: float, margin: float, price_per_gpu_hour: float | None
             ) -> tuple[TrainPlan, float]:
    """The plan to extrapolate to and its eval share; TrialError for a trial or an argument that cannot be used."""
    if record.summary is None or not record.fits:
        raise TrialError(msg("error.trial.nothing_to_extrapolate", trial=record.label))
    plan = plan if plan is not None else record.plan
    measured_plan = record.plan
    differs = [f for f in _SHAPE_FIELDS if getattr(plan, f) != getattr(measured_plan, f)]
    if differs:
        raise TrialError(msg("error.trial.plan_differs", fields=", ".join(differs)))
    eval_fraction = plan.eval_fraction if eval_fraction is None else eval_fraction
    if not 0 <= eval_fraction < 1:
        raise TrialError(msg("error.trial.eval_fraction", value=repr(eval_fraction)))
    if checkpoint_write_bytes_s <= 0:
        raise TrialError(msg("error.trial.write_speed"))
    if margin < 0:
        raise TrialError(msg("error.trial.margin", value=repr(margin)))
    if price_per_gpu_hour is not None and price_per_gpu_hour < 0:
        raise TrialError(msg("error.trial.price", value=repr(price_per_gpu_hour)))
    return plan, eval_fraction


def _range_notes(summary: TrialSummary) -> list[Msg]:
    """What the range says: no interval (too few steps), or a drift across the steps wider than it."""
    notes: list[Msg] = []
    low_s, high_s = summary.step_time_low_s, summary.step_time_high_s
    if low_s is None or high_s is None:
        notes.append(msg("extrapolation.no_interval", steps=summary.measured_steps))
    drift = summary.drift_per_100_steps
    # said when the trend across the measured steps moved the step more than the interval's half-width (and
    # 2 %); without an interval (under 6 steps) a slope is noise
    across = abs(drift) * (summary.measured_steps - 1) / 100 if drift is not None else 0.0
    if drift is not None and low_s is not None and across > max(DRIFT_NOTE_SHARE,
                                                                 summary.step_time_half_width or 0.0):
        notes.append(msg("extrapolation.drift", drift_pct=drift * 100, steps=summary.measured_steps))
    return notes


def _priced_offers(record: TrialRecord, offers: Sequence[Any] | None, hours: float, gpus: int,
                   hours_range: tuple[float, float] | None, notes: list[Msg]) -> tuple[Any, list[Any]]:
    """The catalog GPU the trial ran on and its offers priced for the run, cheapest first; notes what is left out."""
    env = record.environment
    gpu = match_gpu_name(env.device_name, env.device_total_bytes) if env.device != "cpu" else None
    if env.device != "cpu" and gpu is None:
        notes.append(msg("extrapolation.unknown_gpu", device=env.device_name))
    if offers is None:
        from gpuwork.facts.catalog import load_offers

        offers = [o for o in load_offers() if o.gpu_id == gpu.gpu_id] if gpu is not None else []
    priced = [p for p in (_offer_cost(o, hours, gpus, hours_range) for o in offers) if p is not None]
    if len(priced) < len(offers):
        notes.append(msg("extrapolation.offers_left_out", count=len(offers) - len(priced), gpus=gpus))
    priced.sort(key=lambda o: o.cost)
    return gpu, priced


def _offer_cost(offer: Any, hours: float, gpus: int, hours_range: tuple[float, float] | None = None
                ) -> OfferCost | None:
    """The run of ``hours`` (and of each end of ``hours_range``) on ``gpus`` GPUs billed at ``offer``: None when
    its nodes cannot hold them."""
    nodes, billed_gpus = billed_nodes(gpus, offer)  # nodes are rented whole, as `gpuwork offers` bills them
    if nodes > 1 and offer.network is Network.NONE:
        return None
    billed = billed_hours(hours, offer)
    notes = []
    if offer.mode is Mode.INTERRUPTIBLE:
        notes.append(msg("extrapolation.offer.interruptible"))
    if billed_gpus > gpus:
        notes.append(msg("extrapolation.offer.whole_node", billed_gpus=billed_gpus, gpus=gpus))
    return OfferCost(
        offer_id=offer.offer_id, provider=offer.provider, gpu_id=offer.gpu_id, mode=offer.mode.value,
        region=offer.region.value, price_per_gpu_hour=offer.price_per_gpu_hour,
        min_rental_hours=float(offer.min_rental_hours), gpus_per_node=offer.gpus_per_node, billed_hours=billed,
        billed_gpus=billed_gpus, cost=billed * billed_gpus * offer.price_per_gpu_hour, notes=tuple(notes),
        **({} if hours_range is None else {
            "cost_low": billed_hours(hours_range[0], offer) * billed_gpus * offer.price_per_gpu_hour,
            "cost_high": billed_hours(hours_range[1], offer) * billed_gpus * offer.price_per_gpu_hour}))


__all__ = ["Extrapolation", "OfferCost", "extrapolate"]
