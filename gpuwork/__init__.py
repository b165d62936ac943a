"""gpuwork: size a fine-tuning run before renting a GPU — memory, time, disk, cost, measured trials."""

from gpuwork.errors import CatalogError, GpuworkError, ModelError, PlanError, TraceError
from gpuwork.estimate.disk import DiskPlan
from gpuwork.estimate.memory import GIB, MemoryEstimate
from gpuwork.estimate.offers import OfferResult
from gpuwork.estimate.profiles import ProfileMatch
from gpuwork.estimate.timing import TimeEstimate
from gpuwork.facts.model import ModelSpec, ParamCounts, count_params, get_spec, list_presets
from gpuwork.measure import block_profile as _block_tracer  # noqa: F401 - registers the gather step's tracer
from gpuwork.plan import Attention, Method, Optimizer, Precision, Sharding, Task, TrainPlan
from gpuwork.present.request import RentalRequest, rental_request
from gpuwork.present.tables import memory_frame, offers_frame, records_frame  # pandas on first call
from gpuwork.sizing import estimate_disk, estimate_memory, estimate_time, evaluate_offers, match_profile


def _installed_version(distribution: str = "gpuwork") -> str:
    """The installed distribution's version (pyproject.toml's, via its metadata); a source tree that was
    never installed has no metadata and reports ``0+unknown``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "0+unknown"


__version__ = _installed_version()


def trace_memory(plan, **kwargs):
    """Exact mode (fake-tensor trace of one step); imports torch on first use. See gpuwork.measure.trace."""
    from gpuwork.measure.trace import trace_memory as _trace

    return _trace(plan, **kwargs)


def run_trial(plan, **kwargs):
    """Measured trial: a real fine-tune on this machine's device. See gpuwork.measure.trial.run_trial."""
    from gpuwork.measure.trial import run_trial as _run

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
    "memory_frame",
    "offers_frame",
    "records_frame",
    "rental_request",
    "get_spec",
    "list_presets",
    "run_trial",
    "trace_memory",
]
