"""gpuwork: size a fine-tuning run before renting a GPU — memory, time, disk, cost, measured trials."""

from gpuwork.compute import TimeEstimate, estimate_time
from gpuwork.errors import CatalogError, GpuworkError, ModelError, PlanError, TraceError
from gpuwork.memory import GIB, MemoryEstimate, estimate_memory
from gpuwork.model import ModelSpec, ParamCounts, count_params, get_spec, list_presets
from gpuwork.offers import OfferResult, evaluate_offers
from gpuwork.plan import Attention, Method, Optimizer, Precision, Sharding, Task, TrainPlan
from gpuwork.profiles import ProfileMatch, match_profile
from gpuwork.request import RentalRequest, rental_request
from gpuwork.storage import DiskPlan, estimate_disk

__version__ = "0.1.0"


def trace_memory(plan, **kwargs):
    """Exact mode (fake-tensor trace of one step); imports torch on first use. See gpuwork.trace."""
    from gpuwork.trace import trace_memory as _trace

    return _trace(plan, **kwargs)


def run_trial(plan, **kwargs):
    """Measured trial: a real fine-tune on this machine's device. See gpuwork.trial.run_trial."""
    from gpuwork.trial import run_trial as _run

    return _run(plan, **kwargs)


__all__ = [
    "GIB",
    "Attention",
    "CatalogError",
    "GpuworkError",
    "MemoryEstimate",
    "Method",
    "ModelError",
    "ModelSpec",
    "Optimizer",
    "ParamCounts",
    "PlanError",
    "Precision",
    "Sharding",
    "Task",
    "TraceError",
    "TrainPlan",
    "DiskPlan",
    "OfferResult",
    "ProfileMatch",
    "RentalRequest",
    "TimeEstimate",
    "count_params",
    "estimate_disk",
    "estimate_memory",
    "estimate_time",
    "evaluate_offers",
    "match_profile",
    "rental_request",
    "get_spec",
    "list_presets",
    "run_trial",
    "trace_memory",
]
