"""pandas DataFrames of gpuwork's results, for filtering, sorting and plotting in a notebook.

- ``offers_frame(results)``: one row per evaluated offer (``gpuwork.evaluate_offers``), in ranking order;
- ``records_frame(records)``: one row per measured trial (``TrialRecord`` objects or their JSON files);
- ``memory_frame(estimate)``: one row per term of a ``MemoryEstimate``.

Columns keep their unit in the name (``_bytes``, ``_s``, ``_usd``, ``_hours``, ``GiB``); a value that does
not exist (the cost of an offer the run does not fit on) is NA. pandas is imported on the first call, so
the core install (no pandas) can import this module.

Example (the three cheapest offers the run fits on)::

    results = gpuwork.evaluate_offers(gpuwork.TrainPlan(model="llama-3.1-8b", method="lora"))
    offers_frame(results).query("fits").nsmallest(3, "expected_cost_usd")[["offer_id", "expected_cost_usd"]]
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuwork.errors import GpuworkError
from gpuwork.estimate.memory import MemoryEstimate
from gpuwork.estimate.offers import OfferResult
from gpuwork.message import Msg, msg
from gpuwork.present.messages import render
from gpuwork.units import GIB, HOUR_S

if TYPE_CHECKING:
    import pandas as pd

    from gpuwork.measure.record import TrialRecord

OFFER_COLUMNS = ("offer_id", "provider", "gpu_id", "gpu", "mode", "region", "price_per_gpu_hour_usd", "fits",
                 "gpus_used", "gpus_billed", "sharding", "expected_hours", "expected_cost_usd", "reason")
RECORD_COLUMNS = ("label", "model", "method", "precision", "optimizer", "seq_len", "micro_batch", "grad_accum",
                  "processes", "device", "device_name", "switches", "median_step_time_s", "tokens_per_s",
                  "peak_trial_memory_bytes", "cuda_peak_allocated_bytes", "cuda_peak_reserved_bytes",
                  "rss_peak_bytes", "fits", "error", "saved_to")
MEMORY_COLUMNS = ("term", "bytes", "GiB")
# counts that are missing on some rows: pandas' nullable integer keeps them integers (not floats with NaN)
_NULLABLE_INT = "Int64"


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise GpuworkError(msg("error.tables.pandas")) from None
    return pd


def _reason(reason: Msg | str, lang: str) -> str:
    return reason if isinstance(reason, str) else render(reason, lang)


def offers_frame(results: Iterable[OfferResult], lang: str = "en") -> pd.DataFrame:
    """One row per evaluated offer, in the order given (``evaluate_offers`` ranks them).

    Columns: offer_id, provider (NA when the catalog names none), gpu_id, gpu (display name), mode, region,
    price_per_gpu_hour_usd, fits, gpus_used and sharding (as the run fits; NA when it does not), gpus_billed
    (whole nodes are rented), expected_hours and expected_cost_usd (with expected preemptions for
    interruptible offers; NA when it does not fit), reason (every reason in ``lang``, "en" or "ru",
    joined with "; ").
    """
    pd = _pandas()
    rows = []
    for r in results:
        o = r.offer
        rows.append({
            "offer_id": o.offer_id, "provider": o.provider or None, "gpu_id": o.gpu_id, "gpu": o.gpu.display_name,
            "mode": o.mode.value, "region": o.region.value, "price_per_gpu_hour_usd": o.price_per_gpu_hour,
            "fits": r.fits, "gpus_used": r.fit.plan.gpus if r.fits else None, "gpus_billed": r.billed_gpus,
            "sharding": r.fit.plan.sharding.value if r.fits else None,
            "expected_hours": r.expected_total_s / HOUR_S if r.expected_total_s is not None else None,
            "expected_cost_usd": r.expected_cost_usd, "reason": "; ".join(_reason(x, lang) for x in r.reasons),
        })
    frame = pd.DataFrame(rows, columns=list(OFFER_COLUMNS))
    frame = frame.astype({"gpus_used": _NULLABLE_INT, "gpus_billed": _NULLABLE_INT, "fits": bool,
                          "price_per_gpu_hour_usd": float, "expected_hours": float, "expected_cost_usd": float})
    return frame


def sharding_as_run(row: Mapping[str, Any]) -> Msg | None:
    """How a compared record's processes ran (a row of ``gpuwork.measure.record.compare``): DDP, FSDP2 over every
    rank, FSDP2 on a replicas x shard-group mesh, or the wrapper a Trainer's record names; None for one process."""
    strategy, keep = row.get("strategy"), row.get("reshard_after_forward")
    if strategy is None:
        return None
    asked = row.get("sharding") or strategy  # a Trainer's record without a plan names no sharding
    if strategy == "ddp":
        return msg("cli.compare.sharding_ddp", sharding=asked, world=row["gpus"])
    if strategy != "fsdp2" or keep is None:
        return msg("cli.compare.sharding_other", sharding=asked, strategy=strategy, world=row["gpus"])
    reshard = msg("cli.compare.reshard_on" if keep else "cli.compare.reshard_off")
    mesh = tuple(row.get("mesh_shape") or ())
    if len(mesh) == 2:
        return msg("cli.compare.sharding_hsdp", sharding=asked, replicas=mesh[0], shards=mesh[1], reshard=reshard)
    return msg("cli.compare.sharding_fsdp", sharding=asked, world=row["gpus"], reshard=reshard)


# the fields sharding_as_run reads, shown as its one sentence
SHARDING_FIELDS = ("sharding", "strategy", "mesh_shape", "reshard_after_forward")


def _record(item: TrialRecord | str | os.PathLike[str]) -> TrialRecord:
    from gpuwork.measure.record import TrialRecord

    if isinstance(item, TrialRecord):
        return item
    if isinstance(item, str | os.PathLike):
        return TrialRecord.from_json(Path(os.fspath(item)))
    raise TypeError(f"records_frame takes TrialRecord objects or paths of their JSON files, not {type(item).__name__}")


def records_frame(records: Iterable[TrialRecord | str | os.PathLike[str]], lang: str = "en") -> pd.DataFrame:
    """One row per measured trial: plan essentials, device, median step time, tokens/s, peaks, fits.

    "switches" names the plan's execution switches the trial ran under, comma-separated ("" none).
    ``records`` holds TrialRecord objects or paths of trial JSON files (``runs/trial-*.json``). Peak
    memory is in bytes by kind: the trial's own peak (what a memory cap is compared with), CUDA
    allocated / reserved peaks (NA on CPU) and the process RSS peak (NA on CUDA). Step time and
    tokens/s are NA when no measured step completed (the trial did not fit); "error" is in ``lang``.
    """
    pd = _pandas()
    rows = []
    for record in map(_record, records):
        p, env, s = record.protocol, record.environment, record.summary
        rows.append({
            "label": record.label, "model": p.model, "method": p.method, "precision": p.precision_used,
            "optimizer": p.optimizer, "seq_len": p.seq_len, "micro_batch": p.micro_batch, "grad_accum": p.grad_accum,
            "processes": record.world_size, "device": env.device, "device_name": env.device_name,
            "switches": ",".join(env.switches),  # the plan's execution switches the trial ran under ("" none)
            "median_step_time_s": s.median_step_time_s if s else None, "tokens_per_s": s.tokens_per_s if s else None,
            "peak_trial_memory_bytes": record.peak_trial_memory_bytes,
            "cuda_peak_allocated_bytes": s.cuda_peak_allocated_bytes if s else None,
            "cuda_peak_reserved_bytes": s.cuda_peak_reserved_bytes if s else None,
            "rss_peak_bytes": s.rss_peak_bytes if s else None,
            "fits": record.fits, "error": render(record.error, lang) if record.error is not None else None,
            "saved_to": record.saved_to,
        })
    frame = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    return frame.astype({"seq_len": _NULLABLE_INT, "micro_batch": _NULLABLE_INT, "grad_accum": _NULLABLE_INT,
                         "processes": _NULLABLE_INT, "peak_trial_memory_bytes": _NULLABLE_INT,
                         "cuda_peak_allocated_bytes": _NULLABLE_INT, "cuda_peak_reserved_bytes": _NULLABLE_INT,
                         "rss_peak_bytes": _NULLABLE_INT, "median_step_time_s": float, "tokens_per_s": float,
                         "fits": bool})


def memory_frame(estimate: MemoryEstimate) -> pd.DataFrame:
    """One row per term of the estimate's breakdown (bytes per GPU at the peak), in the estimate's order.

    The bytes add up to ``estimate.device_total_bytes``; GiB is bytes / 2**30.
    """
    pd = _pandas()
    terms = list(estimate.breakdown.items())
    frame = pd.DataFrame({"term": [t for t, _ in terms], "bytes": [int(b) for _, b in terms]},
                         columns=["term", "bytes"])
    frame = frame.astype({"bytes": "int64"})
    frame["GiB"] = frame["bytes"] / GIB
    return frame


__all__ = ["MEMORY_COLUMNS", "OFFER_COLUMNS", "RECORD_COLUMNS", "SHARDING_FIELDS", "memory_frame", "offers_frame",
           "records_frame", "sharding_as_run"]
