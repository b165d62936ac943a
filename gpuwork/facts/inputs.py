"""The facts one plan's estimates need, as one value the pure estimators take."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuwork.facts.catalog import GpuSpec, get_gpu
from gpuwork.facts.network import CommFacts, load_comm_facts
from gpuwork.facts.rates import Rates
from gpuwork.facts.spec import ModelSpec


@dataclass(frozen=True)
class Inputs:
    """The facts one plan's estimates need."""

    spec: ModelSpec  # the plan's model: exact counts and layer shapes
    gpus: Mapping[str, GpuSpec]  # the GPU table (data/gpus.csv), by gpu_id
    rates: Rates  # achievable kernel rates per GPU and the stacks (data/rates.csv, kernels.csv, stacks.csv)
    comm: CommFacts = field(default_factory=load_comm_facts)  # node networks, NCCL curves (networks.csv, nccl_*.csv)

    def gpu(self, gpu_id_or_name: str | GpuSpec) -> GpuSpec:
        """A GPU of the table by id or display name (an explicit error for an unknown one)."""
        return gpu_id_or_name if isinstance(gpu_id_or_name, GpuSpec) else get_gpu(gpu_id_or_name, self.gpus)


__all__ = ["Inputs"]
